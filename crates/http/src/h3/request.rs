//! One request stream (RFC 9114 §4.1): the head read and checked, the request handed to the
//! service, its response written back; the request body read by the handler as it asks
//! ([`H3Body`]), so QUIC's flow control holds a client back while its handler is slow. A
//! WebSocket's extended CONNECT (RFC 9220) is routed and answered as on HTTP/2; its 200 leaves
//! the stream to the session (`super::tunnel`).
//!
//! Errors follow §4.1.2 and §8: a malformed head or body resets the stream (and asks the
//! client to stop sending) with H3_MESSAGE_ERROR; a frame out of place closes the connection
//! (H3_FRAME_UNEXPECTED); a head over the field-section limit is answered 431, limits of
//! `Config` are answered as on HTTP/1 and HTTP/2 (413, 414, 408); a handler's panic answers 500
//! on that stream only.

use std::cell::RefCell;
use std::future::{poll_fn, Future};
use std::net::SocketAddr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::header::HeaderMap;
use http::{StatusCode, Version};
use volt_proto::h3::frame::{write_data_header, write_headers};
use volt_proto::h3::qpack::{Decoder, Encoder, Indexing};
use volt_proto::h3::{
    decode_extended_request, decode_trailers, Code, Head, HeadError, RequestEvent, RequestStream,
};

use crate::body::{poll_next_caught, BodyKind, Trailers};
use crate::h2::response::{body_len, final_response, is_connection_specific, is_managed};
use crate::h2::{head_parts, header_map, internal_error, note_protocol, RequestKind};
use crate::request::{bounded_piece, give_parts, RequestBody};
use crate::response::{IntoResponse, Response};
use crate::server::Worker;
use crate::service::Service;
use crate::ws::PendingUpgrade;
use crate::{Error, Request};

use super::quic::{StreamError, StreamRef};
use super::Failure;

/// Bodies up to this size are written together with their response head.
const ONE_WRITE: usize = 4096;

/// The receiving side of a request stream, shared by the head's reader and the body's (or a
/// WebSocket's, `super::tunnel`).
pub(super) struct Recv {
    pub(super) stream: StreamRef,
    buf: BytesMut,
    pub(super) frames: RequestStream,
    /// The client finished the stream, and what it sent was checked.
    pub(super) ended: bool,
    /// The stream broke the rules: reset it with this (or close the connection) once the
    /// handler is done, instead of answering.
    pub(super) failed: Option<Failure>,
    trailers: Option<HeaderMap>,
    max_field_section: usize,
    /// The request has `Expect: 100-continue` and no 100 went out yet: one goes when the
    /// handler first waits for the body, unless body bytes came first or the final response
    /// started (RFC 9110 §10.1.1, as on HTTP/1 and HTTP/2).
    expect_continue: bool,
}

/// What the next read of a request stream gave.
pub(super) enum Next {
    Event(RequestEvent),
    End,
}

impl Recv {
    /// The next event of the stream, reading as needed.
    pub(super) fn poll_next(&mut self, cx: &Context<'_>) -> Poll<Result<Next, Option<Failure>>> {
        loop {
            match self.frames.decode(&mut self.buf) {
                Ok(Some(event)) => return Poll::Ready(Ok(Next::Event(event))),
                Ok(None) if self.ended => return Poll::Ready(Ok(Next::End)),
                Ok(None) => {}
                Err(e) => return Poll::Ready(Err(Some(e.into()))),
            }
            let read = self.stream.poll_read(cx);
            if read.is_pending() && std::mem::take(&mut self.expect_continue) {
                // An interim response is a HEADERS frame of its own before the final one
                // (RFC 9114 §4.1).
                let (mut section, mut frame) = (Vec::new(), Vec::new());
                let mut encoder = Encoder::new();
                encoder.begin(&mut section);
                encoder.status(100, &mut section);
                write_headers(&section, &mut frame);
                self.stream.write_now(&frame);
            }
            match ready!(read) {
                Ok(Some(bytes)) => {
                    self.buf.extend_from_slice(&bytes);
                    self.expect_continue = false;
                }
                Ok(None) => {
                    if let Err(e) = self.frames.finish(&self.buf) {
                        return Poll::Ready(Err(Some(e.into())));
                    }
                    self.ended = true;
                }
                // Reset by the client, or the connection is gone: nobody to answer.
                Err(_) => return Poll::Ready(Err(None)),
            }
        }
    }
}

/// The next event of `recv`'s stream.
async fn next(recv: &RefCell<Recv>) -> Result<Next, Option<Failure>> {
    poll_fn(|cx| recv.borrow_mut().poll_next(cx)).await
}

/// Serves one request stream to its end.
pub(super) async fn serve<S: Service>(worker: &Rc<Worker>, service: &S, stream: StreamRef) {
    let config = &worker.config;
    let recv = Rc::new(RefCell::new(Recv {
        stream: stream.clone(),
        buf: BytesMut::new(),
        frames: RequestStream::new(config.max_head_bytes.max(1024)),
        ended: false,
        failed: None,
        trailers: None,
        max_field_section: config.max_head_bytes,
        expect_continue: false,
    }));
    let head = async {
        match next(&recv).await {
            Ok(Next::Event(RequestEvent::Head(section))) => Ok(section),
            Ok(_) => Err(Some(Failure::stream(
                Code::H3_REQUEST_INCOMPLETE,
                "no head",
            ))),
            Err(e) => Err(e),
        }
    };
    let section = match volt_rt::time::timeout(config.header_read_timeout, head).await {
        Ok(Ok(section)) => section,
        Ok(Err(e)) => return finish_failed(&stream, e),
        Err(_) => {
            let e = Failure::stream(Code::H3_REQUEST_INCOMPLETE, "head too slow");
            return finish_failed(&stream, Some(e));
        }
    };
    let mut head = Head::default();
    // We announce SETTINGS_ENABLE_CONNECT_PROTOCOL (`super::App::connected`): `:protocol` is
    // known.
    let decoded = decode_extended_request(
        &mut Decoder::new(),
        &section,
        config.max_head_bytes,
        &mut head,
    );
    let remote = stream
        .conn
        .remote()
        .unwrap_or(SocketAddr::from(([0; 4], 0)));
    let response = match decoded {
        // §4.2.2: over our limit, answered as HTTP/2 does an oversized header list.
        Err(HeadError::TooLarge) => Error::new(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            "request header fields too large",
        )
        .into_response(),
        // A malformed head is a stream error (§4.1.2); QPACK errors end the connection.
        Err(e) => return finish_failed(&stream, Some(e.error().into())),
        Ok(()) => {
            recv.borrow_mut()
                .frames
                .set_content_length(head.content_length);
            recv.borrow_mut().expect_continue = head.fields.iter().any(|f| {
                head.get(f.name) == b"expect"
                    && head.get(f.value).eq_ignore_ascii_case(b"100-continue")
            });
            match head_parts(&head, Version::HTTP_3, remote, config) {
                Err(e) => e.into_response(),
                Ok(parts) => {
                    let body = RequestBody::h3(H3Body {
                        recv: recv.clone(),
                        received: 0,
                        max: config.max_body_bytes,
                        timeout: config.body_read_timeout,
                    });
                    let mut req = Request::from_parts(parts.clone(), body);
                    note_protocol(&head, &mut req);
                    let response = call(service, req).await;
                    give_parts(parts);
                    response
                }
            }
        }
    };
    let kind = RequestKind::of(&head);
    let (failed, ended) = {
        let mut recv = recv.borrow_mut();
        // The final response starts: no 100 after it, even if a streamed body reads on.
        recv.expect_continue = false;
        (recv.failed.take(), recv.ended)
    };
    if failed.is_some() {
        return finish_failed(&stream, failed);
    }
    match respond(worker, &stream, final_response(kind, response), kind).await {
        Ok(Some(pending)) => return super::tunnel::run(worker, recv, pending).await,
        Ok(None) => {
            stream.finish();
            // A complete response before the whole request: the client may stop sending
            // (§4.1.1).
            if !ended {
                stream.stop(Code::H3_NO_ERROR.0);
            }
        }
        Err(_) => {}
    }
    stream.release();
}

/// Calls the service, a panic answering 500.
async fn call<S: Service>(service: &S, req: Request) -> Response {
    let mut fut = Box::pin(service.call(req));
    poll_fn(
        |cx| match catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(cx))) {
            Ok(poll) => poll,
            Err(_) => Poll::Ready(internal_error()),
        },
    )
    .await
}

/// Ends a stream that broke the rules: a stream error resets it both ways, a connection
/// error closes the connection (§8); `None` (the client reset it, or the connection is gone)
/// leaves nothing to do.
pub(super) fn finish_failed(stream: &StreamRef, e: Option<Failure>) {
    match e {
        Some(e) if e.connection => stream.conn.close(e.code.0, e.reason),
        Some(e) => {
            stream.stop(e.code.0);
            stream.reset(e.code.0);
        }
        None => {}
    }
    stream.release();
}

/// Writes the response: HEADERS, DATA frames, trailers. A WebSocket's 200 is written alone,
/// and its session returned, to run on the stream.
async fn respond(
    worker: &Worker,
    stream: &StreamRef,
    mut response: Response,
    kind: RequestKind,
) -> Result<Option<Box<PendingUpgrade>>, StreamError> {
    let body = response.take_body();
    let status = response.status;
    let bodiless = status == StatusCode::NO_CONTENT || status == StatusCode::NOT_MODIFIED;
    let length = body_len(&body.kind).filter(|_| !bodiless && !kind.tunnels(status));
    let mut encoder = Encoder::new();
    // Room for a usual head: grown a byte at a time by the Huffman coder, an empty section
    // reallocated five or six times a response (~1,000 instructions).
    let mut section = Vec::with_capacity(128);
    encoder.begin(&mut section);
    encoder.status(status.as_u16(), &mut section);
    let mut field = |name: &[u8], value: &[u8], section: &mut Vec<u8>| {
        encoder.field(name, value, Indexing::for_name(name), section);
    };
    if let Some(ct) = &response.content_type {
        field(b"content-type", ct.as_bytes(), &mut section);
    }
    for (name, value) in response.headers() {
        if !is_managed(name) {
            field(name.as_str().as_bytes(), value.as_bytes(), &mut section);
        }
    }
    if let Some(name) = &worker.config.server_name {
        field(b"server", name.as_bytes(), &mut section);
    }
    worker.with_date(|date| field(b"date", date, &mut section));
    if let Some(n) = length {
        encoder.content_length(n, &mut section);
    }
    let mut out = Vec::with_capacity(section.len() + 16);
    write_headers(&section, &mut out);
    let timeout = worker.config.write_timeout;
    let no_body = kind == RequestKind::Head || bodiless;
    let trailers = body.trailers.filter(|_| !no_body);
    match body.kind {
        BodyKind::Full(data) if !no_body && !data.is_empty() => {
            write_data_header(data.len() as u64, &mut out);
            // A small body goes with its head in one write: each write is a copy and an
            // allocation inside quinn's stream.
            if data.len() <= ONE_WRITE {
                out.extend_from_slice(&data);
                write(stream, &out, timeout).await?;
            } else {
                write(stream, &out, timeout).await?;
                write(stream, &data, timeout).await?;
            }
        }
        // A WebSocket's 200 (RFC 9220 §3): the stream stays open for its session.
        BodyKind::Upgrade(pending)
            if kind == RequestKind::WebSocket && status == StatusCode::OK =>
        {
            write(stream, &out, timeout).await?;
            return Ok(Some(pending));
        }
        BodyKind::Stream {
            stream: mut chunks, ..
        } if !no_body => {
            write(stream, &out, timeout).await?;
            loop {
                let next = poll_fn(|cx| poll_next_caught(&mut chunks, cx)).await;
                let chunk: Bytes = match next {
                    None => break,
                    Some(Ok(chunk)) if chunk.is_empty() => continue,
                    Some(Ok(chunk)) => chunk,
                    // The body failed: the response is cut short (§4.1.1: reset, not finished).
                    Some(Err(_)) => {
                        stream.reset(Code::H3_INTERNAL_ERROR.0);
                        return Err(StreamError::Closed);
                    }
                };
                let mut header = Vec::with_capacity(9);
                write_data_header(chunk.len() as u64, &mut header);
                write(stream, &header, timeout).await?;
                write(stream, &chunk, timeout).await?;
            }
        }
        _ => write(stream, &out, timeout).await?,
    }
    if let Some(fields) = trailers.and_then(Trailers::take) {
        let mut section = Vec::new();
        encoder.begin(&mut section);
        for (name, value) in &fields {
            if !is_connection_specific(name) {
                let name = name.as_str().as_bytes();
                encoder.field(
                    name,
                    value.as_bytes(),
                    Indexing::for_name(name),
                    &mut section,
                );
            }
        }
        let mut out = Vec::new();
        write_headers(&section, &mut out);
        write(stream, &out, timeout).await?;
    }
    Ok(None)
}

/// Writes `data`, giving up (and resetting the stream) when the client takes nothing for
/// `timeout`.
async fn write(stream: &StreamRef, data: &[u8], timeout: Duration) -> Result<(), StreamError> {
    match volt_rt::time::timeout(timeout, stream.write_all(data)).await {
        Ok(written) => written,
        Err(_) => {
            stream.reset(Code::H3_REQUEST_CANCELLED.0);
            Err(StreamError::Closed)
        }
    }
}

/// A request body arriving on an HTTP/3 stream: DATA frames as the handler asks for them.
pub(crate) struct H3Body {
    recv: Rc<RefCell<Recv>>,
    received: u64,
    max: u64,
    timeout: Duration,
}

impl H3Body {
    pub(crate) async fn chunk(&mut self) -> Result<Option<Bytes>, Error> {
        let recv = &*self.recv;
        let next = async {
            loop {
                if recv.borrow().failed.is_some() {
                    return Err(Error::bad_request("malformed request body"));
                }
                let event = next(recv).await;
                let mut recv = recv.borrow_mut();
                match event {
                    Ok(Next::Event(RequestEvent::Data(data))) => return Ok(Some(data)),
                    Ok(Next::Event(RequestEvent::Trailers(section))) => {
                        let mut head = Head::default();
                        let max = recv.max_field_section;
                        match decode_trailers(&mut Decoder::new(), &section, max, &mut head) {
                            Ok(()) => recv.trailers = Some(header_map(&head)),
                            Err(e) => recv.failed = Some(e.error().into()),
                        }
                    }
                    Ok(Next::Event(_)) => {}
                    Ok(Next::End) => return Ok(None),
                    Err(e) => {
                        recv.failed = Some(e.unwrap_or(Failure::stream(
                            Code::H3_REQUEST_CANCELLED,
                            "request stream reset",
                        )));
                    }
                }
            }
        };
        bounded_piece(next, self.timeout, &mut self.received, self.max).await
    }

    /// Whether the client ended the stream, as far as read.
    pub(crate) fn ended(&self) -> bool {
        self.recv.borrow().ended
    }

    /// The trailer fields, once the body has been read to its end.
    pub(crate) async fn trailers(&mut self) -> Result<Option<HeaderMap>, Error> {
        while self.chunk().await?.is_some() {}
        Ok(self.recv.borrow_mut().trailers.take())
    }
}
