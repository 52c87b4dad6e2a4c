//! HTTP/2 connections: the `h2` crate driven on volt-rt, and the conversions between its
//! messages and volt's [`Request`] and [`Response`].
//!
//! A connection reaches this module after TLS chose `h2` by ALPN, or when a cleartext
//! connection opened with the HTTP/2 preface (prior knowledge; the bytes the HTTP/1 loop
//! already read are replayed). `Upgrade: h2c` is not supported: RFC 9113 deprecated it.
//!
//! The connection task polls `h2`'s connection (which reads, writes, and does HPACK, flow
//! control and stream state), and spawns one local task per request stream. That task runs the
//! service, catching a panic (500 for that stream only) and dropping the handler if the client
//! resets the stream; then it sends the response, a streamed body going out only as fast as
//! the stream's flow-control window opens. Request bodies release window as the handler reads
//! them, so a slow handler slows its client down.
//!
//! Defences: `h2` itself bounds rapid resets of unaccepted streams, CONTINUATION floods,
//! empty and small DATA frame floods and locally-caused resets. [`FrameGuard`] adds what it
//! lacks: it reads each frame's 9-byte header as the bytes pass (frames are otherwise opaque
//! to us) and gives the client a budget of PING, SETTINGS and RST_STREAM frames, refilled
//! over time; a client that exhausts it gets GOAWAY `ENHANCE_YOUR_CALM` and is closed.

use std::cell::{Cell, RefCell};
use std::future::{poll_fn, Future};
use std::io;
use std::net::SocketAddr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::{pin, Pin};
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use h2::server::SendResponse;
use h2::{Reason, RecvStream, SendStream};
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Method, StatusCode, Version};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use volt_proto::{HeaderSpan, HeaderSpans, Span};
use volt_rt::time::sleep_until;

use crate::body::BodyKind;
use crate::config::Config;
use crate::request::RequestBody;
use crate::response::{IntoResponse, Response};
use crate::server::Worker;
use crate::service::Service;
use crate::{Error, Request};

/// The client connection preface (RFC 9113 §3.4).
const PREFACE_LEN: usize = 24;
/// After GOAWAY for a flood, how long the connection may take to send it before it is cut.
const CALM_DOWN: Duration = Duration::from_secs(1);
/// The control-frame budget refills entirely over this period.
const BUDGET_REFILL: Duration = Duration::from_secs(10);

/// What the connection task shares with its stream tasks.
struct Shared<S> {
    worker: Rc<Worker>,
    service: Arc<S>,
    remote: SocketAddr,
    /// Streams whose task is running: the idle timeout starts when it drops to zero.
    active: Cell<usize>,
}

/// Serves one HTTP/2 connection on `io`, after `prefix` (bytes already read from it, starting
/// with the preface). Returns when the connection is closed.
pub(crate) async fn serve<T, S>(
    io: T,
    prefix: Bytes,
    remote: SocketAddr,
    worker: Rc<Worker>,
    service: Arc<S>,
) where
    T: AsyncRead + AsyncWrite + Unpin + 'static,
    S: Service,
{
    let config = worker.config.clone();
    let guard = Rc::new(FloodGuard::new(&config));
    let io = GuardedIo {
        prefix,
        inner: io,
        scanner: FrameScanner::default(),
        guard: guard.clone(),
        staging: Vec::new(),
    };
    let handshake = builder(&config).handshake::<_, Bytes>(io);
    let mut conn = match volt_rt::time::timeout(config.header_read_timeout, handshake).await {
        Ok(Ok(conn)) => conn,
        _ => return,
    };
    let shared = Rc::new(Shared {
        worker,
        service,
        remote,
        active: Cell::new(0),
    });
    let mut stopped = pin!(volt_rt::Handle::current().stopped());
    let mut timer = sleep_until(Instant::now() + config.idle_timeout);
    // When the connection last had no stream running: the idle timeout counts from there.
    let mut idle_since: Option<Instant> = Some(Instant::now());
    let mut draining = false;
    let mut calm_deadline: Option<Instant> = None;
    poll_fn(|cx| loop {
        if guard.flooded() && calm_deadline.is_none() {
            conn.abrupt_shutdown(Reason::ENHANCE_YOUR_CALM);
            let at = Instant::now() + CALM_DOWN;
            calm_deadline = Some(at);
            timer.reset(at);
        }
        if !draining && calm_deadline.is_none() {
            if stopped.as_mut().poll(cx).is_ready() {
                // GOAWAY; streams already started run to the end.
                conn.graceful_shutdown();
                draining = true;
            } else if shared.active.get() == 0 {
                let since = *idle_since.get_or_insert_with(Instant::now);
                let deadline = since + config.idle_timeout;
                if timer.deadline() != deadline {
                    timer.reset(deadline);
                }
                if Pin::new(&mut timer).poll(cx).is_ready() {
                    conn.graceful_shutdown();
                    draining = true;
                }
            } else {
                idle_since = None;
            }
        }
        if calm_deadline.is_some() && Pin::new(&mut timer).poll(cx).is_ready() {
            return Poll::Ready(());
        }
        match conn.poll_accept(cx) {
            Poll::Ready(Some(Ok((req, respond)))) => {
                shared.active.set(shared.active.get() + 1);
                idle_since = None;
                volt_rt::spawn(serve_stream(req, respond, shared.clone()));
            }
            Poll::Ready(Some(Err(_))) | Poll::Ready(None) => return Poll::Ready(()),
            Poll::Pending if guard.flooded() && calm_deadline.is_none() => {}
            Poll::Pending => return Poll::Pending,
        }
    })
    .await;
}

/// `h2`'s server settings from [`Config`].
fn builder(config: &Config) -> h2::server::Builder {
    let mut b = h2::server::Builder::new();
    b.max_concurrent_streams(config.h2_max_concurrent_streams)
        .initial_window_size(config.h2_initial_stream_window)
        .initial_connection_window_size(config.h2_initial_connection_window)
        .max_header_list_size(config.h2_max_header_list_size)
        .max_frame_size(config.h2_max_frame_size)
        // Rapid reset (CVE-2023-44487): streams reset before the server accepted them.
        .max_pending_accept_reset_streams(config.h2_max_pending_accept_reset_streams)
        // Resets the client provokes by breaking the protocol on purpose ("MadeYouReset").
        .max_local_error_reset_streams(Some(config.h2_max_local_error_reset_streams));
    b
}

/// Decrements the connection's running-stream count however the stream task ends.
struct ActiveStream<S>(Rc<Shared<S>>);

impl<S> Drop for ActiveStream<S> {
    fn drop(&mut self) {
        self.0.active.set(self.0.active.get() - 1);
    }
}

/// One request stream: convert, call the service, send the response.
async fn serve_stream<S: Service>(
    req: http::Request<RecvStream>,
    mut respond: SendResponse<Bytes>,
    shared: Rc<Shared<S>>,
) {
    let shared = ActiveStream(shared);
    let config = &shared.0.worker.config;
    let (parts, body) = req.into_parts();
    let is_head = parts.method == Method::HEAD;
    // Shared with the request's body, so what the handler leaves unread can be drained after
    // the response.
    let recv = (!body.is_end_stream()).then(|| Rc::new(RefCell::new(body)));
    let response = match to_request(parts, recv.clone(), shared.0.remote, config) {
        Err(e) => Some(e.into_response()),
        Ok(request) => {
            let mut fut = pin!(shared.0.service.call(request));
            poll_fn(|cx| {
                // The client gave up on this stream (or the connection failed): drop the
                // handler rather than finish work nobody will read.
                if respond.poll_reset(cx).is_ready() {
                    return Poll::Ready(None);
                }
                match catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(cx))) {
                    Ok(Poll::Ready(r)) => Poll::Ready(Some(r)),
                    Ok(Poll::Pending) => Poll::Pending,
                    Err(_) => Poll::Ready(Some(
                        Error::new(StatusCode::INTERNAL_SERVER_ERROR, "internal server error")
                            .into_response(),
                    )),
                }
            })
            .await
        }
    };
    let Some(response) = response else { return };
    // A client still sending its request gets the end of the response only once its side is
    // done too (or the drain below gave up): ending ours first would close the stream's send
    // side, after which h2 no longer checks what the client sends on it (h2spec 6.9.1/3 sends
    // an overflowing WINDOW_UPDATE there).
    let hold_end = recv.as_ref().is_some_and(|r| !r.borrow().is_end_stream());
    let ending = send_response(&mut respond, response, is_head, hold_end, config).await;
    if let Some(recv) = recv {
        drain(&recv, config.max_drain_bytes, config.body_read_timeout).await;
    }
    if let Some(ending) = ending {
        ending.send();
    }
}

/// After the response (all but its end, when the client was still sending): reads and
/// discards what the client still sends of the request body, up to `max` bytes, as HTTP/1
/// does. Waiting for the client to end (or reset) its side keeps the
/// stream's state exact: a frame the client sends on it afterwards is the protocol error it
/// is, not something ignored on a stream we reset. Beyond `max` or `timeout` the stream is
/// reset (dropping the last handle sends `RST_STREAM`).
async fn drain(recv: &RefCell<RecvStream>, max: u64, timeout: Duration) {
    let mut left = max;
    let read_rest = poll_fn(|cx| loop {
        let mut recv = recv.borrow_mut();
        match recv.poll_data(cx) {
            Poll::Ready(Some(Ok(data))) => {
                let _ = recv.flow_control().release_capacity(data.len());
                match left.checked_sub(data.len() as u64) {
                    Some(l) => left = l,
                    None => return Poll::Ready(()),
                }
            }
            Poll::Ready(_) => return Poll::Ready(()),
            Poll::Pending => return Poll::Pending,
        }
    });
    let _ = volt_rt::time::timeout(timeout, read_rest).await;
}

/// Builds volt's [`Request`] from an h2 request: the target and header fields are copied into
/// one buffer that the request's spans point into, as an HTTP/1 head would be.
fn to_request(
    parts: http::request::Parts,
    body: Option<Rc<RefCell<RecvStream>>>,
    remote: SocketAddr,
    config: &Config,
) -> Result<Request, Error> {
    if parts.headers.len() > config.max_headers {
        return Err(Error::new(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            format!("more than {} header fields", config.max_headers),
        ));
    }
    let target = match parts.uri.path_and_query() {
        Some(pq) => pq.as_str(),
        // CONNECT names an authority only.
        None => parts.uri.authority().map_or("/", |a| a.as_str()),
    };
    if target.len() > config.max_uri_bytes {
        return Err(Error::new(
            StatusCode::URI_TOO_LONG,
            format!("request target over {} bytes", config.max_uri_bytes),
        ));
    }
    let declared: Option<u64> = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok());
    if let Some(n) = declared.filter(|&n| n > config.max_body_bytes) {
        return Err(Error::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "request body of {n} bytes is over the limit of {}",
                config.max_body_bytes
            ),
        ));
    }
    let mut head = Vec::with_capacity(target.len() + 64 * (parts.headers.len() + 1));
    let target_span = push(&mut head, target.as_bytes());
    let mut headers = HeaderSpans::new();
    // `:authority` stands for `Host` in HTTP/2 (RFC 9113 §8.3.1).
    if let Some(authority) = parts.uri.authority() {
        if !parts.headers.contains_key(header::HOST) {
            let name = push(&mut head, b"host");
            let value = push(&mut head, authority.as_str().as_bytes());
            headers.push(HeaderSpan { name, value });
        }
    }
    for (name, value) in &parts.headers {
        let name = push(&mut head, name.as_str().as_bytes());
        let value = push(&mut head, value.as_bytes());
        headers.push(HeaderSpan { name, value });
    }
    let body = match body {
        None => RequestBody::empty(),
        Some(recv) => RequestBody::h2(H2Body {
            recv,
            received: 0,
            max: config.max_body_bytes,
            timeout: config.body_read_timeout,
        }),
    };
    Ok(Request::from_parts(
        head,
        parts.method,
        Version::HTTP_2,
        target_span,
        headers,
        Some(remote),
        body,
    ))
}

fn push(head: &mut Vec<u8>, bytes: &[u8]) -> Span {
    let start = head.len() as u32;
    head.extend_from_slice(bytes);
    Span {
        start,
        end: head.len() as u32,
    }
}

/// A request body arriving on an HTTP/2 stream. Window is given back to the client as the
/// handler takes each chunk: flow control is the backpressure.
pub(crate) struct H2Body {
    recv: Rc<RefCell<RecvStream>>,
    received: u64,
    max: u64,
    timeout: Duration,
}

impl H2Body {
    pub(crate) async fn chunk(&mut self) -> Result<Option<Bytes>, Error> {
        let recv = &*self.recv;
        let next =
            volt_rt::time::timeout(self.timeout, poll_fn(|cx| recv.borrow_mut().poll_data(cx)));
        match next.await {
            Err(_) => Err(Error::new(
                StatusCode::REQUEST_TIMEOUT,
                "request body took too long",
            )),
            Ok(None) => Ok(None),
            Ok(Some(Err(e))) => Err(Error::bad_request(format!("request body: {e}"))),
            Ok(Some(Ok(data))) => {
                // Fails only if the stream is already gone; the next read reports that.
                let _ = recv
                    .borrow_mut()
                    .flow_control()
                    .release_capacity(data.len());
                self.received += data.len() as u64;
                if self.received > self.max {
                    return Err(Error::new(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        format!("request body is over the limit of {} bytes", self.max),
                    ));
                }
                Ok(Some(data))
            }
        }
    }

    /// The trailer fields, once the body has been read to its end.
    pub(crate) async fn trailers(&mut self) -> Result<Option<HeaderMap>, Error> {
        while self.chunk().await?.is_some() {}
        let recv = &*self.recv;
        poll_fn(|cx| recv.borrow_mut().poll_trailers(cx))
            .await
            .map_err(|e| Error::bad_request(format!("request trailers: {e}")))
    }
}

/// Sends volt's response on the stream: head, body (within flow control), trailers. With
/// `hold_end` (the client is still sending its request), or when the body was streamed, the
/// end of the stream is returned to be sent by the caller.
async fn send_response(
    respond: &mut SendResponse<Bytes>,
    mut response: Response,
    is_head: bool,
    hold_end: bool,
    config: &Config,
) -> Option<Ending> {
    let body = response.take_body();
    let status = response.status;
    let bodiless_status = status.is_informational()
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED;
    let no_body = is_head || bodiless_status;
    let mut head = http::Response::new(());
    *head.status_mut() = status;
    let headers = head.headers_mut();
    if let Some(ct) = response.content_type.take() {
        headers.insert(header::CONTENT_TYPE, ct);
    }
    for (name, value) in response.headers.drain(..) {
        if !is_managed(&name) {
            headers.append(name, value);
        }
    }
    if let Some(name) = &config.server_name {
        if let Ok(v) = HeaderValue::from_str(name) {
            headers.insert(header::SERVER, v);
        }
    }
    headers.insert(header::DATE, date());
    if let (Some(n), false) = (body.len(), bodiless_status) {
        headers.insert(header::CONTENT_LENGTH, HeaderValue::from(n));
    }
    let trailers = body.trailers;
    let take_trailers = || trailers.and_then(|t| t.take());
    match body.kind {
        BodyKind::Full(bytes) => {
            let trailers = take_trailers();
            let bytes = if no_body { Bytes::new() } else { bytes };
            if bytes.is_empty() && trailers.is_none() && !hold_end {
                let _ = respond.send_response(head, true);
                return None;
            }
            let mut send = respond.send_response(head, false).ok()?;
            if !bytes.is_empty() {
                // Already in memory: h2 queues it and sends it as the window allows.
                let end = trailers.is_none() && !hold_end;
                let _ = send.send_data(bytes, end);
                if end {
                    return None;
                }
            }
            Some(Ending { send, trailers })
        }
        BodyKind::Stream { mut stream, len } => {
            if no_body && !hold_end {
                let _ = respond.send_response(head, true);
                return None;
            }
            let mut send = respond.send_response(head, false).ok()?;
            if no_body {
                return Some(Ending {
                    send,
                    trailers: None,
                });
            }
            let mut sent: u64 = 0;
            loop {
                match poll_fn(|cx| stream.as_mut().poll_next(cx)).await {
                    Some(Ok(chunk)) => {
                        sent += chunk.len() as u64;
                        if len.is_some_and(|n| sent > n)
                            || send_chunk(&mut send, chunk).await.is_err()
                        {
                            send.send_reset(Reason::INTERNAL_ERROR);
                            return None;
                        }
                    }
                    Some(Err(_)) => {
                        send.send_reset(Reason::INTERNAL_ERROR);
                        return None;
                    }
                    None => break,
                }
            }
            if len.is_some_and(|n| sent != n) {
                send.send_reset(Reason::INTERNAL_ERROR);
                return None;
            }
            Some(Ending {
                send,
                trailers: take_trailers(),
            })
        }
    }
}

/// The end of a response not sent yet: `END_STREAM` on an empty DATA frame, or the trailers
/// that carry it.
struct Ending {
    send: SendStream<Bytes>,
    trailers: Option<HeaderMap>,
}

impl Ending {
    fn send(mut self) {
        let _ = match self.trailers {
            Some(t) => self.send.send_trailers(t),
            None => self.send.send_data(Bytes::new(), true),
        };
    }
}

/// Sends `data` as the stream's window allows, waiting for window as needed.
async fn send_chunk(send: &mut SendStream<Bytes>, mut data: Bytes) -> Result<(), h2::Error> {
    while !data.is_empty() {
        send.reserve_capacity(data.len());
        let granted = match poll_fn(|cx| send.poll_capacity(cx)).await {
            Some(r) => r?,
            None => return Err(h2::Error::from(Reason::STREAM_CLOSED)),
        };
        if granted == 0 {
            continue;
        }
        let part = data.split_to(granted.min(data.len()));
        send.send_data(part, false)?;
    }
    Ok(())
}

/// Headers HTTP/2 forbids (connection-specific, RFC 9113 §8.2.2) or the server sets itself.
fn is_managed(name: &HeaderName) -> bool {
    use http::header::{CONNECTION, CONTENT_LENGTH, DATE, SERVER, TRANSFER_ENCODING, UPGRADE};
    *name == CONNECTION
        || *name == TRANSFER_ENCODING
        || *name == UPGRADE
        || *name == CONTENT_LENGTH
        || *name == DATE
        || *name == SERVER
        || name.as_str() == "keep-alive"
        || name.as_str() == "proxy-connection"
}

thread_local! {
    /// The `Date` value, re-rendered once a second per worker.
    static DATE: RefCell<(u64, HeaderValue)> =
        const { RefCell::new((u64::MAX, HeaderValue::from_static(""))) };
}

fn date() -> HeaderValue {
    let now = SystemTime::now();
    let secs = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    DATE.with(|d| {
        let mut d = d.borrow_mut();
        if d.0 != secs {
            let text = volt_proto::http_date(now);
            if let Ok(v) = HeaderValue::from_bytes(&text) {
                *d = (secs, v);
            }
        }
        d.1.clone()
    })
}

/// Counts the frames a client sends that cost the server work but carry no request: PING,
/// SETTINGS and RST_STREAM. The client has a budget of [`Config::h2_max_control_frames`],
/// refilled in full over ten seconds; a connection that spends it is flooding.
struct FloodGuard {
    capacity: f64,
    tokens: Cell<f64>,
    last: Cell<Instant>,
    flooded: Cell<bool>,
}

impl FloodGuard {
    fn new(config: &Config) -> FloodGuard {
        let capacity = f64::from(config.h2_max_control_frames.max(1));
        FloodGuard {
            capacity,
            tokens: Cell::new(capacity),
            last: Cell::new(Instant::now()),
            flooded: Cell::new(false),
        }
    }

    fn flooded(&self) -> bool {
        self.flooded.get()
    }

    /// One frame of type `kind` with `flags` arrived.
    fn frame(&self, kind: u8, flags: u8) {
        const RST_STREAM: u8 = 0x3;
        const SETTINGS: u8 = 0x4;
        const PING: u8 = 0x6;
        const ACK: u8 = 0x1;
        let costly = match kind {
            RST_STREAM => true,
            SETTINGS | PING => flags & ACK == 0,
            _ => false,
        };
        if !costly {
            return;
        }
        let now = Instant::now();
        let refill =
            now.duration_since(self.last.get()).as_secs_f64() / BUDGET_REFILL.as_secs_f64();
        self.last.set(now);
        let tokens = (self.tokens.get() + refill * self.capacity).min(self.capacity) - 1.0;
        self.tokens.set(tokens);
        if tokens < 0.0 {
            self.flooded.set(true);
        }
    }
}

/// Where the reader is in the client's byte stream: the preface, a frame header, a payload.
#[derive(Default)]
struct FrameScanner {
    /// Preface bytes seen so far.
    preface: usize,
    header: [u8; 9],
    header_len: usize,
    payload_left: usize,
}

impl FrameScanner {
    /// Walks `bytes`, the next bytes from the client, reporting each frame header to `guard`.
    fn scan(&mut self, mut bytes: &[u8], guard: &FloodGuard) {
        if self.preface < PREFACE_LEN {
            let n = (PREFACE_LEN - self.preface).min(bytes.len());
            self.preface += n;
            bytes = &bytes[n..];
        }
        while !bytes.is_empty() {
            if self.payload_left > 0 {
                let n = self.payload_left.min(bytes.len());
                self.payload_left -= n;
                bytes = &bytes[n..];
                continue;
            }
            let n = (9 - self.header_len).min(bytes.len());
            self.header[self.header_len..self.header_len + n].copy_from_slice(&bytes[..n]);
            self.header_len += n;
            bytes = &bytes[n..];
            if self.header_len == 9 {
                let h = self.header;
                self.payload_left =
                    usize::from(h[0]) << 16 | usize::from(h[1]) << 8 | usize::from(h[2]);
                self.header_len = 0;
                guard.frame(h[3], h[4]);
            }
        }
    }
}

/// The connection's I/O as `h2` sees it: replays the bytes read before the switch to HTTP/2,
/// shows every byte read to the [`FrameScanner`], and reads nothing more once the client
/// flooded (the connection is then only sending its GOAWAY).
struct GuardedIo<T> {
    prefix: Bytes,
    inner: T,
    scanner: FrameScanner,
    guard: Rc<FloodGuard>,
    /// Reads land here first. `h2` hands over a fresh, uninitialized buffer for every read, which
    /// volt-rt's safe `tokio::io` adapter would zero in full each time (measured with callgrind:
    /// 15% of all instructions at 32 streams per connection); reading into this initialized
    /// buffer and copying out only the bytes read costs a small `memcpy` instead.
    staging: Vec<u8>,
}

/// Size of [`GuardedIo`]'s staging buffer: one maximum-size frame of the default settings.
const STAGING: usize = 16 * 1024 + 9;

impl<T: AsyncRead + Unpin> AsyncRead for GuardedIo<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.guard.flooded() {
            // Woken by the write side or the connection's deadline, never by this.
            return Poll::Pending;
        }
        let before = buf.filled().len();
        if !this.prefix.is_empty() {
            let n = this.prefix.len().min(buf.remaining());
            buf.put_slice(&this.prefix.split_to(n));
        } else {
            if this.staging.is_empty() {
                this.staging = vec![0; STAGING];
            }
            let n = buf.remaining().min(STAGING);
            let mut staged = ReadBuf::new(&mut this.staging[..n]);
            match Pin::new(&mut this.inner).poll_read(cx, &mut staged) {
                Poll::Ready(Ok(())) => buf.put_slice(staged.filled()),
                other => return other,
            }
        }
        this.scanner.scan(&buf.filled()[before..], &this.guard);
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for GuardedIo<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: u8, flags: u8, len: usize) -> Vec<u8> {
        let mut f = vec![
            (len >> 16) as u8,
            (len >> 8) as u8,
            len as u8,
            kind,
            flags,
            0,
            0,
            0,
            0,
        ];
        f.resize(9 + len, 0);
        f
    }

    #[test]
    fn scanner_counts_control_frames_split_anywhere() {
        let config = Config {
            h2_max_control_frames: 3,
            ..Config::default()
        };
        let guard = FloodGuard::new(&config);
        let mut bytes = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        bytes.extend(frame(0x4, 0, 6)); // SETTINGS: 1
        bytes.extend(frame(0x0, 0, 100)); // DATA: free
        bytes.extend(frame(0x6, 0x1, 8)); // PING ACK: free
        bytes.extend(frame(0x6, 0, 8)); // PING: 2
        bytes.extend(frame(0x3, 0, 4)); // RST_STREAM: 3
        let mut scanner = FrameScanner::default();
        // One byte at a time: headers and payloads split across reads.
        for b in &bytes {
            scanner.scan(std::slice::from_ref(b), &guard);
        }
        assert!(!guard.flooded(), "three frames fit a budget of three");
        scanner.scan(&frame(0x6, 0, 8), &guard);
        assert!(guard.flooded(), "the fourth PING is over the budget");
    }
}
