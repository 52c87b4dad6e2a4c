//! HTTP/2 for the client, on the `h2` crate: one connection per origin carries every request
//! to it at once, each on a stream of its own.

use std::cell::Cell;
use std::future::{poll_fn, Future};
use std::io;
use std::pin::{pin, Pin};
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use bytes::Bytes;
use h2::client::{Connection, SendRequest};
use http::header::TE;
use http::{HeaderMap, HeaderValue, Method, Request, Uri, Version};
use volt_proto::Limits;
use volt_rt::time::{sleep_until, timeout};

use super::conn::{invalid_input, timed_out, Stream};
use super::{Target, CONTINUE_WAIT};
use crate::body::{poll_next_caught, BodyKind};
use crate::Body;

/// Most bytes asked of the flow-control window at a time for a streamed body.
const MAX_PIECE: usize = 64 * 1024;

/// Fields about one HTTP/1 hop that HTTP/2 forbids (RFC 9113 §8.2.2), besides `te` other
/// than `trailers`. A caller may set them (`connection: close` means something on HTTP/1,
/// and which protocol a request goes out on is ALPN's choice), so they are dropped here.
const CONNECTION_FIELDS: [&str; 4] = ["connection", "keep-alive", "proxy-connection", "upgrade"];

/// A new HTTP/2 connection: the handle requests go through, and the connection itself, for
/// [`drive`] to run.
pub(super) type Opened = (SendRequest<Bytes>, Connection<Stream, Bytes>);

/// Opens HTTP/2 on `stream`. A response head (its header list, as HPACK counts it: RFC 9113
/// §6.5.2) may be as large as `limits` lets an HTTP/1 head be.
pub(super) async fn handshake(stream: Stream, limits: &Limits) -> io::Result<Opened> {
    let most = u32::try_from(limits.max_head_bytes).unwrap_or(u32::MAX);
    let mut builder = h2::client::Builder::new();
    builder.max_header_list_size(most);
    builder.handshake(stream).await.map_err(io_error)
}

/// How busy a connection is: the streams open on it, and since when none is.
pub(super) struct Streams {
    open: Cell<usize>,
    idle_since: Cell<Instant>,
    /// The task running the connection, while it waits for the streams to end.
    driver: Cell<Option<Waker>>,
}

/// One request's claim on its connection, held until its response body ended or it was
/// dropped: a connection with none is idle.
pub(super) struct OnStream(Rc<Streams>);

impl Streams {
    pub(super) fn new() -> Rc<Streams> {
        Rc::new(Streams {
            open: Cell::new(0),
            idle_since: Cell::new(volt_rt::time::now()),
            driver: Cell::new(None),
        })
    }

    /// Whether the connection had no stream open for `idle_timeout` (by `now`).
    pub(super) fn idle_for(&self, idle_timeout: Duration, now: Instant) -> bool {
        self.open.get() == 0 && now.duration_since(self.idle_since.get()) >= idle_timeout
    }

    pub(super) fn claim(self: &Rc<Self>) -> OnStream {
        self.open.set(self.open.get() + 1);
        OnStream(self.clone())
    }
}

impl Drop for OnStream {
    fn drop(&mut self) {
        let streams = &self.0;
        streams.open.set(streams.open.get() - 1);
        if streams.open.get() == 0 {
            streams.idle_since.set(volt_rt::time::now());
            if let Some(driver) = streams.driver.take() {
                driver.wake();
            }
        }
    }
}

/// Runs the connection in a task of its own. Once no stream has been open on it for
/// `idle_timeout`, `forget` drops the client's handle to it, and it closes (with a GOAWAY)
/// when its last handle is gone. `forget` runs too if the connection ends first.
pub(super) fn drive(
    connection: Connection<Stream, Bytes>,
    streams: Rc<Streams>,
    idle_timeout: Duration,
    forget: impl FnOnce() + 'static,
) {
    volt_rt::spawn(async move {
        let mut connection = pin!(connection);
        let mut timer = pin!(sleep_until(streams.idle_since.get() + idle_timeout));
        let ended = poll_fn(|cx| {
            if connection.as_mut().poll(cx).is_ready() {
                return Poll::Ready(true);
            }
            if streams.open.get() > 0 {
                streams.driver.set(Some(cx.waker().clone()));
                return Poll::Pending;
            }
            // Set for when the connection has been idle long enough, counted from its last
            // stream's end: a claim since the timer was set moved `idle_since`.
            let at = streams.idle_since.get() + idle_timeout;
            if timer.deadline() != at {
                timer.as_mut().reset(at);
            }
            timer.as_mut().poll(cx).map(|()| false)
        });
        let ended = ended.await;
        forget();
        if !ended {
            let _ = connection.await; // its errors reach the streams, and through them the callers
        }
    });
}

/// Waits until the connection can open a stream; an error means it is gone (closed, or
/// going away), and nothing was sent on it.
pub(super) async fn ready(
    send: SendRequest<Bytes>,
    wait: Duration,
) -> io::Result<SendRequest<Bytes>> {
    let ready = timeout(wait, send.ready()).await;
    ready
        .map_err(|_| timed_out("for an HTTP/2 stream"))?
        .map_err(io_error)
}

/// Sends a request on a stream of `send`, body and all, and waits for the response head.
/// `expects` (the caller set `Expect: 100-continue`): the body waits, as on HTTP/1, for the
/// server's 100, or [`CONTINUE_WAIT`] without a word; a final answer first is returned, and
/// the body is never sent.
pub(super) async fn exchange(
    mut send: SendRequest<Bytes>,
    method: Method,
    target: &Target,
    mut headers: HeaderMap,
    body: Body,
    expects: bool,
    wait: Duration,
) -> io::Result<http::Response<h2::RecvStream>> {
    let scheme = if target.origin.https { "https" } else { "http" };
    let uri: Uri = format!("{scheme}://{}{}", target.authority, target.path)
        .parse()
        .map_err(|e| invalid_input(format!("the URL as HTTP/2 sees it: {e}")))?;
    for name in CONNECTION_FIELDS {
        headers.remove(name);
    }
    if headers.get_all(TE).iter().any(|te| te != "trailers") {
        headers.remove(TE);
    }
    if let Some(len) = body.len().filter(|&n| n > 0) {
        headers.insert(http::header::CONTENT_LENGTH, HeaderValue::from(len));
    }
    let mut request = Request::new(());
    *request.method_mut() = method;
    *request.uri_mut() = uri;
    *request.version_mut() = Version::HTTP_2;
    *request.headers_mut() = headers;
    let end = body.is_empty() && body.trailers.is_none();
    let (mut response, stream) = send.send_request(request, end).map_err(io_error)?;
    if !end && expects {
        if let Ok(Some(answer)) = timeout(CONTINUE_WAIT, continue_or_answer(&mut response)).await {
            // The stream's send side is dropped unfinished: once the caller drops the
            // response too, h2 resets the stream (CANCEL), telling the server no body comes.
            return answer.map_err(io_error);
        }
    }
    if !end {
        let mut sending = Box::pin(send_body(stream, body, wait));
        let first = poll_fn(|cx| match sending.as_mut().poll(cx) {
            Poll::Ready(sent) => Poll::Ready(First::Sent(sent)),
            Poll::Pending => Pin::new(&mut response).poll(cx).map(First::Answered),
        });
        match first.await {
            First::Sent(Ok(())) => {}
            // The server may answer and then reset the stream, taking no more of the body (RFC
            // 9113 §8.1): its answer is what the caller wants.
            First::Sent(Err(e)) => {
                let mut cx = Context::from_waker(Waker::noop());
                return match Pin::new(&mut response).poll(&mut cx) {
                    Poll::Ready(Ok(answer)) => Ok(answer),
                    _ => Err(e),
                };
            }
            // Answered before the whole body went out: the rest goes on in a task of its own,
            // for as long as the server takes it.
            First::Answered(answer) => {
                volt_rt::spawn(async move {
                    let _ = sending.await;
                });
                return answer.map_err(io_error);
            }
        }
    }
    let response = timeout(wait, response).await;
    response
        .map_err(|_| timed_out("waiting for the response"))?
        .map_err(io_error)
}

/// Waits for the server's word on a request that expects 100 (Continue): `None` once a 100
/// came, the final answer if it came first (RFC 9110 §10.1.1). Other interim answers are
/// passed over.
async fn continue_or_answer(
    response: &mut h2::client::ResponseFuture,
) -> Option<Result<http::Response<h2::RecvStream>, h2::Error>> {
    poll_fn(|cx| {
        while let Poll::Ready(Some(interim)) = response.poll_informational(cx) {
            match interim {
                Ok(interim) if interim.status() == http::StatusCode::CONTINUE => {
                    return Poll::Ready(None)
                }
                Ok(_) => {}
                Err(e) => return Poll::Ready(Some(Err(e))),
            }
        }
        Pin::new(&mut *response).poll(cx).map(Some)
    })
    .await
}

/// What happened first while a request body was going out.
enum First {
    Sent(io::Result<()>),
    Answered(Result<http::Response<h2::RecvStream>, h2::Error>),
}

/// Sends the body and then its trailers, or an empty DATA frame that ends the stream.
async fn send_body(
    mut stream: h2::SendStream<Bytes>,
    mut body: Body,
    wait: Duration,
) -> io::Result<()> {
    match body.kind {
        BodyKind::Full(bytes) => send_data(&mut stream, bytes, wait).await?,
        BodyKind::Upgrade(_) => {
            let e = "a WebSocket upgrade is no request body";
            return Err(io::Error::new(io::ErrorKind::InvalidInput, e));
        }
        BodyKind::Stream {
            stream: mut chunks,
            len,
        } => {
            let mut sent = 0u64;
            while let Some(chunk) = poll_fn(|cx| poll_next_caught(&mut chunks, cx)).await {
                let chunk = chunk?;
                sent += chunk.len() as u64;
                if len.is_some_and(|len| sent > len) {
                    stream.send_reset(h2::Reason::CANCEL);
                    return Err(invalid_input("the body stream ran past its length"));
                }
                send_data(&mut stream, chunk, wait).await?;
            }
            if len.is_some_and(|len| sent < len) {
                stream.send_reset(h2::Reason::CANCEL);
                return Err(invalid_input("the body stream ended before its length"));
            }
        }
    }
    // Taken only now: a channel's trailers are known once its body has ended.
    match body.trailers.take().and_then(|t| t.take()) {
        Some(trailers) => stream.send_trailers(trailers).map_err(io_error),
        None => stream.send_data(Bytes::new(), true).map_err(io_error),
    }
}

/// Sends `bytes` as the flow-control windows allow, waiting at most `wait` for each opening.
async fn send_data(
    stream: &mut h2::SendStream<Bytes>,
    mut bytes: Bytes,
    wait: Duration,
) -> io::Result<()> {
    while !bytes.is_empty() {
        stream.reserve_capacity(bytes.len().min(MAX_PIECE));
        let capacity = timeout(wait, poll_fn(|cx| stream.poll_capacity(cx))).await;
        let capacity = capacity.map_err(|_| timed_out("sending the request body"))?;
        let Some(capacity) = capacity else {
            return Err(io::Error::new(
                io::ErrorKind::ConnectionReset,
                "the server closed the stream while the request body was being sent",
            ));
        };
        let n = capacity.map_err(io_error)?.min(bytes.len());
        stream
            .send_data(bytes.split_to(n), false)
            .map_err(io_error)?;
    }
    Ok(())
}

/// The next piece of a response body, `Ok(None)` at its end; each piece is given back to the
/// flow-control window as it is taken.
pub(super) async fn next_chunk(
    body: &mut h2::RecvStream,
    wait: Duration,
) -> io::Result<Option<Bytes>> {
    let data = timeout(wait, body.data()).await;
    match data.map_err(|_| timed_out("waiting for the response body"))? {
        Some(Ok(chunk)) => {
            let _ = body.flow_control().release_capacity(chunk.len());
            Ok(Some(chunk))
        }
        Some(Err(e)) => Err(io_error(e)),
        None => Ok(None),
    }
}

/// The trailer fields after the end of a response body (empty if none came).
pub(super) async fn trailers(body: &mut h2::RecvStream, wait: Duration) -> io::Result<HeaderMap> {
    let trailers = timeout(wait, body.trailers()).await;
    let trailers = trailers.map_err(|_| timed_out("waiting for the trailers"))?;
    Ok(trailers.map_err(io_error)?.unwrap_or_default())
}

/// Whether the server refused the request's stream (`REFUSED_STREAM`), having processed
/// nothing of it.
pub(super) fn is_refused(e: &io::Error) -> bool {
    let h2 = e.get_ref().and_then(|e| e.downcast_ref::<h2::Error>());
    h2.and_then(h2::Error::reason) == Some(h2::Reason::REFUSED_STREAM)
}

/// An `h2` error as an `io::Error`: the socket's own error if it is one, else `InvalidData`
/// for a protocol error and `ConnectionReset` for a stream or connection the server ended.
pub(super) fn io_error(e: h2::Error) -> io::Error {
    if e.is_io() {
        return e.into_io().expect("an I/O error");
    }
    let kind = match e.reason() {
        Some(h2::Reason::PROTOCOL_ERROR | h2::Reason::COMPRESSION_ERROR) => {
            io::ErrorKind::InvalidData
        }
        Some(_) if e.is_remote() || e.is_go_away() || e.is_reset() => {
            io::ErrorKind::ConnectionReset
        }
        _ => io::ErrorKind::Other,
    };
    io::Error::new(kind, e)
}

/// A WebSocket's stream at the client over HTTP/2 (RFC 8441): its DATA frames both ways. The
/// server's window is given back as the session reads, so a session that stops reading stops
/// the server at one stream window; writes go out as the server's windows allow, so a server
/// that stops reading stops the session's writes. Shutting the write side ends the stream.
pub(crate) struct H2Tunnel {
    send: h2::SendStream<Bytes>,
    recv: h2::RecvStream,
    /// The stream's place in its connection's count, given back when the session ends.
    _claim: OnStream,
}

impl H2Tunnel {
    pub(super) fn new(send: h2::SendStream<Bytes>, recv: h2::RecvStream, claim: OnStream) -> Self {
        H2Tunnel {
            send,
            recv,
            _claim: claim,
        }
    }

    /// Appends the next DATA frame's bytes to `buf`; `Ok(0)` once the server ended the stream.
    pub(crate) fn poll_read_bytes(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut bytes::BytesMut,
    ) -> Poll<io::Result<usize>> {
        loop {
            return match std::task::ready!(self.recv.poll_data(cx)) {
                // An empty DATA frame is no end of stream.
                Some(Ok(data)) if data.is_empty() => continue,
                Some(Ok(data)) => {
                    let _ = self.recv.flow_control().release_capacity(data.len());
                    buf.extend_from_slice(&data);
                    Poll::Ready(Ok(data.len()))
                }
                Some(Err(e)) => Poll::Ready(Err(io_error(e))),
                None => Poll::Ready(Ok(0)),
            };
        }
    }

    /// Sends as much of `buf` as the windows allow now, waiting for room if there is none.
    pub(crate) fn poll_write(
        &mut self,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if buf.is_empty() {
            return Poll::Ready(Ok(0));
        }
        self.send.reserve_capacity(buf.len().min(MAX_PIECE));
        loop {
            let room = self.send.capacity().min(buf.len());
            if room > 0 {
                let data = Bytes::copy_from_slice(&buf[..room]);
                self.send.send_data(data, false).map_err(io_error)?;
                return Poll::Ready(Ok(room));
            }
            match std::task::ready!(self.send.poll_capacity(cx)) {
                Some(Ok(_)) => {}
                Some(Err(e)) => return Poll::Ready(Err(io_error(e))),
                None => {
                    let e = "the server closed the WebSocket's stream";
                    return Poll::Ready(Err(io::Error::new(io::ErrorKind::ConnectionReset, e)));
                }
            }
        }
    }

    /// Ends the stream (END_STREAM): the session sent its last frame.
    pub(crate) fn shutdown(&mut self) -> io::Result<()> {
        self.send.send_data(Bytes::new(), true).map_err(io_error)
    }
}
