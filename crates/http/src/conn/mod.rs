//! One HTTP/1.x connection: the only module that sees both the socket and the codec.
//!
//! The loop, as in STYLE.md: read what the socket has, parse every complete request in the
//! buffer, run each handler and append each response to one write buffer, then write once.
//! A handler that has to wait (it returned `Pending`) first gets the responses before it
//! flushed, so a slow request never holds back the answers to the ones pipelined before it.
//!
//! The connection's I/O state ([`ConnIo`]) is shared through an `Rc` with the request body
//! ([`BodyReader`]), which reads from the same buffer and socket when the handler asks for the
//! body. Everything runs on one worker thread, so `RefCell`s suffice; no borrow is held across
//! an `.await`.

use std::cell::{Cell, Ref, RefCell};
use std::future::{poll_fn, Future};
use std::net::SocketAddr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::{pin, Pin};
use std::rc::Rc;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Instant;

use bytes::{Buf, BytesMut};
use http::{Method, StatusCode};
use volt_proto::{BodyKind, ParseError};
use volt_rt::time::{sleep_until, Sleep};

use crate::body::Trailers;
use crate::request::{Parts, RequestBody};
use crate::response::{IntoResponse, Response};
use crate::server::{Worker, READ_BUF};
use crate::service::Service;
use crate::transport::Transport;
use crate::{Error, Request};

mod encode;
mod reader;

use encode::{write_chunk_size, Framing};

pub(crate) use reader::BodyReader;

/// Responses are flushed early once the write buffer holds this much.
const FLUSH_AT: usize = 64 * 1024;
/// Stream chunks at least this large are written directly instead of copied.
const DIRECT_WRITE: usize = 16 * 1024;
/// Least free space in the read buffer before a read.
const MIN_READ: usize = 4 * 1024;
/// Least capacity of a write buffer taken for a response.
const MIN_WRITE: usize = 1024;
/// Largest read buffer an idle connection may keep (see [`ConnIo::park_buffers`]): about the
/// pool's size.
const IDLE_READ_MAX: usize = 2 * READ_BUF;
/// Largest write buffer an idle connection may keep: one that held no large response.
const IDLE_WRITE_MAX: usize = 16 * 1024;

/// The socket and both buffers of a connection.
pub(crate) struct ConnIo {
    stream: Transport,
    read_buf: RefCell<BytesMut>,
    write_buf: RefCell<Vec<u8>>,
    worker: Rc<Worker>,
    /// False once a write failed or timed out: the connection is finished.
    writable: Cell<bool>,
    /// Whether `TCP_NODELAY` is set yet; set lazily, see [`ConnIo::write_from`].
    nagle: Cell<Nagle>,
    /// The deadline of whatever the connection waits for (reset, never recreated).
    timer: RefCell<Sleep>,
    remote: SocketAddr,
    /// Cleartext, and no request yet: an HTTP/2 preface here switches to HTTP/2.
    h2_possible: Cell<bool>,
    /// Idle with its buffers, counted by [`Worker::keep_idle_buffers`].
    kept_buffers: Cell<bool>,
}

/// Where a connection stands with Nagle's algorithm.
///
/// Nagle holds back a small segment only while earlier data is unacknowledged, so a
/// connection's first write goes out at once whatever the setting. `TCP_NODELAY` is therefore
/// set just before the second write (or before a first write large enough to span several
/// segments), not on accept: a connection that answers one request and closes (`ab` without
/// `-k`, HTTP/1.0 clients) saves the `setsockopt`, as nginx does.
#[derive(Clone, Copy)]
enum Nagle {
    /// Nothing written yet.
    Untouched,
    /// One small write made; Nagle still on.
    FirstWriteDone,
    /// `TCP_NODELAY` set (or setting it failed; it is not retried).
    Off,
}

/// A first write up to this size goes out before `TCP_NODELAY` is set (one segment on any
/// usual path MTU).
const SMALL_FIRST_WRITE: usize = 1200;

/// What the connection does after a response.
enum Next {
    KeepAlive,
    Close,
    /// The client opened with the HTTP/2 preface (prior knowledge).
    Http2,
}

/// Wraps an accepted socket. Done before the connection's task is spawned, so the task's
/// future holds one `Rc` instead of the socket, address and worker (an async block keeps its
/// captures for its whole life, and every idle connection pays for them).
pub(crate) fn new_conn(stream: Transport, remote: SocketAddr, worker: Rc<Worker>) -> Rc<ConnIo> {
    let h2_possible = Cell::new(matches!(stream, Transport::Tcp(_)));
    Rc::new(ConnIo {
        stream,
        read_buf: RefCell::new(BytesMut::new()),
        write_buf: RefCell::new(Vec::new()),
        worker,
        writable: Cell::new(true),
        nagle: Cell::new(Nagle::Untouched),
        timer: RefCell::new(sleep_until(Instant::now())),
        remote,
        h2_possible,
        kept_buffers: Cell::new(false),
    })
}

pub(crate) async fn serve<S: Service>(io: Rc<ConnIo>, service: Arc<S>, slot: usize) {
    // No `let worker = &io.worker` and the like: a reference kept across the `.await`s below
    // is a field of this future, which every idle connection holds.
    // When the first byte of an unfinished head arrived; bounds a slowloris.
    let mut head_started: Option<Instant> = None;
    // Length of the unfinished head the last parse gave up on. A head can only end at a LF, so
    // bytes that bring none are not worth parsing again from the start (a head dripped in
    // byte by byte would otherwise cost time quadratic in its size).
    let mut unfinished = 0;
    let spare = SpareBatches::of(&io.worker, process::<S>);
    loop {
        // Everything that holds a request lives in this boxed future, one per batch of reads:
        // a connection waiting for its next request keeps only the small state of this loop
        // (measured: the whole connection future went from 2 KiB to a few hundred bytes, which
        // is most of the idle-connection memory).
        if io.worth_parsing(unfinished) {
            let mut batch = spare.boxed(process(io.clone(), service.clone(), head_started));
            let next;
            (next, head_started) = batch.as_mut().await;
            spare.give(batch);
            match next {
                Next::KeepAlive => {}
                Next::Close => return,
                // Boxed: the hand-over's state would otherwise widen every HTTP/1
                // connection's future, idle ones included.
                Next::Http2 => return Box::pin(switch_to_h2(io, service)).await,
            }
            unfinished = match head_started {
                Some(_) => io.read_buf.borrow().len(),
                None => 0,
            };
        }
        let idle = io.read_buf.borrow().is_empty();
        if idle && io.worker.is_shutting_down() {
            return;
        }
        let deadline = match head_started {
            Some(t) => t + io.worker.config.header_read_timeout,
            None => volt_rt::time::now() + io.worker.config.idle_timeout,
        };
        if idle {
            io.park_buffers();
            io.worker.set_idle(slot, true);
            let ready = io.readable(deadline).await;
            io.worker.set_idle(slot, false);
            io.unpark_buffers();
            if !ready {
                return; // idle timeout: close quietly
            }
        }
        match io.read(deadline, 0).await {
            Ok(0) => return,
            Ok(_) => {}
            Err(ReadError::Io) => return,
            Err(ReadError::Timeout) => {
                if !idle {
                    let e = Error::new(StatusCode::REQUEST_TIMEOUT, "request head took too long");
                    io.worker.refresh_date();
                    io.respond_error(e);
                    // Boxed: this rare path would otherwise add a write future's size to
                    // every idle connection.
                    Box::pin(io.flush()).await;
                }
                return;
            }
        }
    }
}

/// Hands a cleartext connection that opened with the HTTP/2 preface to the HTTP/2 driver,
/// with the bytes read so far.
async fn switch_to_h2<S: Service>(io: Rc<ConnIo>, service: Arc<S>) {
    // No request was started, so nothing else holds the connection.
    let Ok(mut io) = Rc::try_unwrap(io) else {
        return;
    };
    let Some(stream) = io.stream.hand_over_tcp() else {
        return;
    };
    let read = io.read_buf.take();
    let (remote, worker) = (io.remote, io.worker.clone());
    drop(io); // the write buffer goes back to the worker's pool
              // Boxed: an HTTP/2 connection's state is large, and HTTP/1 connections should not carry
              // its size in their futures.
    Box::pin(crate::h2::serve(
        Transport::Tcp(stream),
        read,
        remote,
        worker,
        service,
    ))
    .await;
}

/// Boxes of finished batches, for the next ones: the worker's connections pass them on, so a
/// keep-alive request costs no `malloc` and `free` of its batch's state (~140 instructions),
/// and an idle connection still holds no box. A spare box holds a finished future, which owns
/// nothing any more (an async fn drops its locals and arguments when it returns).
struct SpareBatches<F>(RefCell<Vec<Pin<Box<F>>>>);

/// Most spare batch boxes a worker keeps: as many as batches ever ran at once, up to this.
const SPARE_BATCHES_MAX: usize = 64;

impl<F: Future + 'static> SpareBatches<F> {
    /// The worker's boxes for the futures `batch` makes (`batch` only names their type).
    /// Shared through an `Rc` fetched once per connection, so a batch needs no downcast.
    fn of<A, B, C>(worker: &Worker, batch: fn(A, B, C) -> F) -> Rc<SpareBatches<F>> {
        let _ = batch;
        let mut erased = worker.spare_batches.borrow_mut();
        if let Some(spare) = erased.clone().and_then(|any| any.downcast().ok()) {
            return spare;
        }
        let spare = Rc::new(SpareBatches(RefCell::new(Vec::new())));
        *erased = Some(spare.clone());
        spare
    }

    /// `batch` in a spare box, or in a new one.
    fn boxed(&self, batch: F) -> Pin<Box<F>> {
        let spare = self.0.borrow_mut().pop();
        match spare {
            Some(mut slot) => {
                slot.set(batch);
                slot
            }
            None => Box::pin(batch),
        }
    }

    /// Keeps the box of a finished batch.
    fn give(&self, slot: Pin<Box<F>>) {
        let mut spare = self.0.borrow_mut();
        if spare.len() < SPARE_BATCHES_MAX {
            spare.push(slot);
        }
    }
}

/// Parses and answers every complete request in the read buffer, then writes the responses.
/// Owns what it uses, so that its future's box can wait among the worker's [`SpareBatches`];
/// gives back when the unfinished head left in the buffer started.
async fn process<S: Service>(
    io: Rc<ConnIo>,
    service: Arc<S>,
    mut head_started: Option<Instant>,
) -> (Next, Option<Instant>) {
    io.worker.refresh_date();
    // Every request of the batch is parsed into this one head.
    let mut parts = take_parts();
    let next = process_batch(&io, &*service, &mut head_started, &mut parts).await;
    give_parts(parts);
    (next, head_started)
}

/// The loop of [`process`], with the head every request of the batch is parsed into.
async fn process_batch<S: Service>(
    io: &Rc<ConnIo>,
    service: &S,
    head_started: &mut Option<Instant>,
    parts: &mut Rc<Parts>,
) -> Next {
    loop {
        let parsed = {
            let buf = io.read_buf.borrow();
            if buf.is_empty() {
                break;
            }
            let n = buf.len().min(volt_proto::H2_PREFACE.len());
            let fresh = io.h2_possible.get();
            if fresh && buf[..n] == volt_proto::H2_PREFACE[..n] {
                if n < volt_proto::H2_PREFACE.len() {
                    break; // the rest of the preface (or of an HTTP/1 `P...`) is on its way
                }
                return Next::Http2;
            }
            io.h2_possible.set(false);
            let parsed = &mut unique(parts).parsed;
            let parsed = volt_proto::parse_request_into(&buf, &io.worker.limits, parsed);
            // Neither HTTP/1 nor the HTTP/2 preface (say, a broken HTTP/2 client): an HTTP/1
            // error response would only be garbage to it, so just close (RFC 9113 §3.4).
            if fresh && matches!(parsed, Err(ParseError::InvalidVersion)) && !looks_like_http1(&buf)
            {
                return Next::Close;
            }
            parsed
        };
        match parsed {
            Ok(false) => {
                head_started.get_or_insert_with(volt_rt::time::now);
                break;
            }
            Ok(true) => {
                *head_started = None;
                if let Next::Close = handle(io, parts, service).await {
                    io.flush().await;
                    return Next::Close;
                }
            }
            Err(e) => {
                io.reject(&e);
                io.flush().await;
                return Next::Close;
            }
        }
    }
    if io.flush().await {
        Next::KeepAlive
    } else {
        Next::Close
    }
}

thread_local! {
    /// Request heads of finished batches, for the next batch on this worker. An idle
    /// connection holds none.
    static SPARE_PARTS: RefCell<Vec<Rc<Parts>>> = const { RefCell::new(Vec::new()) };
}

/// Most spare heads a worker keeps.
const SPARE_PARTS_MAX: usize = 64;
/// Largest head buffer a spare head keeps.
const SPARE_HEAD_MAX: usize = 4 * 1024;

pub(crate) fn take_parts() -> Rc<Parts> {
    SPARE_PARTS
        .with(|spare| spare.borrow_mut().pop())
        .unwrap_or_default()
}

pub(crate) fn give_parts(mut parts: Rc<Parts>) {
    // Only a head no request holds any more, and not an unusually large one.
    if let Some(p) = Rc::get_mut(&mut parts) {
        if p.head.capacity() > SPARE_HEAD_MAX {
            p.head = Vec::new();
        }
        SPARE_PARTS.with(|spare| {
            let mut spare = spare.borrow_mut();
            if spare.len() < SPARE_PARTS_MAX {
                spare.push(parts);
            }
        });
    }
}

/// The head to parse the next request into: `parts` itself once the previous request is
/// gone, a new one if a handler still holds that request (kept it past its response).
fn unique(parts: &mut Rc<Parts>) -> &mut Parts {
    if Rc::get_mut(parts).is_none() {
        *parts = Rc::default();
    }
    Rc::get_mut(parts).expect("a new Rc is unique")
}

/// Runs the handler for the request just parsed into `parts` and encodes its response.
async fn handle<S: Service>(io: &Rc<ConnIo>, parts: &mut Rc<Parts>, service: &S) -> Next {
    let worker = &io.worker;
    let head = &parts.parsed;
    let version = head.version;
    let is_head = head.method == Method::HEAD;
    let mut keep_alive = head.keep_alive;
    let head_len = head.head_len;
    let expect_continue = head.expect_continue;
    let body_kind = head.body;
    let declared = match body_kind {
        BodyKind::Length(n) => Some(n),
        _ => None,
    };
    let reader = match body_kind {
        BodyKind::Empty => None,
        BodyKind::Length(n) if n > worker.config.max_body_bytes => {
            io.read_buf.borrow_mut().advance(head_len);
            io.respond_error(Error::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "request body of {n} bytes is over the limit of {}",
                    worker.config.max_body_bytes
                ),
            ));
            return Next::Close;
        }
        kind => Some(Rc::new(BodyReader::new(io.clone(), kind, expect_continue))),
    };
    let body = match &reader {
        Some(r) => RequestBody::h1(r.clone()),
        None => RequestBody::empty(),
    };
    {
        let mut buf = io.read_buf.borrow_mut();
        unique(parts).finish(&buf[..head_len], Some(io.remote));
        buf.advance(head_len);
    }
    if io.write_buf.borrow().capacity() == 0 {
        let mut w = worker.take_write_buf();
        // Room for a typical response head at once, not a chain of doubling reallocations.
        w.reserve(MIN_WRITE);
        *io.write_buf.borrow_mut() = w;
    }
    let req = Request::from_parts(parts.clone(), body);

    let mut panicked = false;
    let response = {
        let mut fut = pin!(service.call(req));
        let mut poll = |cx: &mut Context<'_>| poll_caught(fut.as_mut(), cx, &mut panicked);
        // Most handlers answer at the first poll. One that has to wait first gets the
        // responses before it flushed, so it does not hold them back. One future does both,
        // with that flush boxed: a `match` on the first poll kept its result (a whole
        // `Response`) and the flush's state in every batch's future.
        let mut waited = false;
        let mut flush = None;
        poll_fn(|cx| {
            if !waited {
                let first = poll(cx);
                if first.is_ready() {
                    return first;
                }
                waited = true;
                flush = Some(Box::pin(io.flush()));
            }
            if let Some(f) = &mut flush {
                ready!(f.as_mut().poll(cx));
                flush = None;
            }
            poll(cx)
        })
        .await
    };
    if panicked {
        keep_alive = false;
    }
    // What the handler left of the body is skipped after the response is written (below), as
    // the client may hold the rest back until it has the answer. Here only whether skipping
    // can work decides `Connection`.
    let max_drain = worker.config.max_drain_bytes;
    if reader
        .as_ref()
        .is_some_and(|r| !r.skippable(declared, max_drain))
    {
        keep_alive = false;
    }
    if worker.is_shutting_down() || !io.writable.get() || response.asks_to_close() {
        keep_alive = false;
    }
    // Encoded by a plain function, so the response is not held across the `.await`s below.
    let (keep_alive, streamed) = io.encode_response(response, version, is_head, keep_alive);
    if let Some(streamed) = streamed {
        if !streamed.await {
            return Next::Close;
        }
    }
    if let Some(reader) = reader.filter(|_| keep_alive) {
        // Boxed, and only when part of the body is left to drain: a rare path's state
        // would otherwise widen every batch's future.
        let go_on = match reader.finished_now() {
            Some(go_on) => go_on,
            None => Box::pin(reader.finish(max_drain)).await,
        };
        if !go_on {
            return Next::Close;
        }
    }
    if io.write_buf.borrow().len() >= FLUSH_AT && !io.flush().await {
        return Next::Close;
    }
    if keep_alive {
        Next::KeepAlive
    } else {
        Next::Close
    }
}

/// Polls a handler's future. A panic answers 500 and sets `panicked`.
fn poll_caught(
    fut: Pin<&mut impl Future<Output = Response>>,
    cx: &mut Context<'_>,
    panicked: &mut bool,
) -> Poll<Response> {
    catch_unwind(AssertUnwindSafe(|| fut.poll(cx))).unwrap_or_else(|_| {
        *panicked = true;
        let e = Error::new(StatusCode::INTERNAL_SERVER_ERROR, "internal server error");
        Poll::Ready(e.into_response())
    })
}

/// Whether a first line whose version did not parse still reads as an HTTP/1 request line:
/// its target has an HTTP/1 form (origin `/...`, asterisk, absolute `scheme://...`).
fn looks_like_http1(buf: &[u8]) -> bool {
    let line = buf.split(|&b| b == b'\n').next().unwrap_or(buf);
    let target = line.split(|&b| b == b' ').nth(1).unwrap_or(b"");
    target.starts_with(b"/") || target == b"*" || target.windows(3).any(|w| w == b"://")
}

enum ReadError {
    Io,
    Timeout,
}

impl ConnIo {
    /// Polls `op` until it is ready or `deadline` passes (`None`). The connection's one timer
    /// is reused for every wait, so a wait needs no future of its own (which also keeps an
    /// idle connection small).
    ///
    /// The timer is touched only when `op` has to wait, and moved (a timer-map remove and
    /// insert) only when it would fire too late for `deadline` or once it fires: a timer still
    /// armed for an earlier deadline (the previous request's idle timeout, say) is left alone,
    /// fires early, and is moved on then. A keep-alive request whose write completes at once
    /// thus costs one timer-map lookup instead of two removes and two inserts.
    fn until<'a, T>(
        &'a self,
        deadline: Instant,
        mut op: impl FnMut(&mut Context<'_>) -> Poll<T> + 'a,
    ) -> impl Future<Output = Option<T>> + 'a {
        poll_fn(move |cx| {
            if let Poll::Ready(v) = op(cx) {
                return Poll::Ready(Some(v));
            }
            let mut timer = self.timer.borrow_mut();
            if timer.deadline() > deadline {
                timer.reset(deadline);
            }
            loop {
                match Pin::new(&mut *timer).poll(cx) {
                    Poll::Pending => return Poll::Pending,
                    // Armed for this deadline (it is never later, see above): it passed.
                    Poll::Ready(()) if timer.deadline() == deadline => return Poll::Ready(None),
                    // An earlier deadline fired: arm for this one (polled again just below).
                    Poll::Ready(()) => timer.reset(deadline),
                }
            }
        })
    }

    /// Waits until the socket has something to read; false at `deadline`.
    async fn readable(&self, deadline: Instant) -> bool {
        self.until(deadline, |cx| self.stream.poll_read_ready(cx))
            .await
            .is_some()
    }

    /// Reads once into the read buffer (reserving `reserve` bytes first, or 4 KiB). The buffer
    /// is borrowed only inside each poll, so the future holds no buffer of its own.
    async fn read(&self, deadline: Instant, reserve: usize) -> Result<usize, ReadError> {
        {
            let mut buf = self.read_buf.borrow_mut();
            if buf.capacity() == 0 {
                *buf = self.worker.take_read_buf();
            }
            // At least 4 KiB of room, so a read takes a whole pipelined batch: with less, the
            // tail of a buffer whose front went to earlier requests made reads of a few bytes.
            buf.reserve(reserve.max(MIN_READ));
        }
        let result = self
            .until(deadline, |cx| {
                self.stream
                    .poll_read_bytes(cx, &mut self.read_buf.borrow_mut())
            })
            .await;
        match result {
            Some(Ok(n)) => Ok(n),
            Some(Err(_)) => Err(ReadError::Io),
            None => Err(ReadError::Timeout),
        }
    }

    /// Writes the write buffer out. False if the connection failed or timed out.
    async fn flush(&self) -> bool {
        if self.write_buf.borrow().is_empty() {
            return self.writable.get();
        }
        // The buffer is borrowed only inside each poll; nothing appends to it meanwhile (the
        // connection's one task is here).
        let ok = self.writable.get()
            && self
                .write_from(|| Ref::map(self.write_buf.borrow(), Vec::as_slice))
                .await;
        self.write_buf.borrow_mut().clear();
        ok
    }

    /// Closes a TLS session cleanly (see [`Transport::poll_close`]), unless writing already
    /// failed; bounded by the write timeout.
    pub(crate) async fn close(&self) {
        if self.writable.get() {
            let deadline = Instant::now() + self.worker.config.write_timeout;
            self.until(deadline, |cx| self.stream.poll_close(cx)).await;
        }
    }

    /// Writes `bytes` out. False if the connection failed or timed out.
    fn write_all<'a>(&'a self, bytes: &'a [u8]) -> impl Future<Output = bool> + 'a {
        self.write_from(move || bytes)
    }

    /// Writes out the bytes `bytes` gives (the same each time it is called). Not an async fn
    /// but a future made of [`ConnIo::until`]'s: one state machine less to set up for every
    /// response.
    fn write_from<'a, B: std::ops::Deref<Target = [u8]>>(
        &'a self,
        bytes: impl Fn() -> B + Unpin + 'a,
    ) -> impl Future<Output = bool> + 'a {
        let len = bytes().len();
        match self.nagle.get() {
            Nagle::Off => {}
            Nagle::Untouched if len <= SMALL_FIRST_WRITE => {
                self.nagle.set(Nagle::FirstWriteDone);
            }
            Nagle::Untouched | Nagle::FirstWriteDone => {
                let _ = self.stream.set_nodelay(true);
                self.nagle.set(Nagle::Off);
            }
        }
        let deadline = volt_rt::time::now() + self.worker.config.write_timeout;
        let mut written = 0;
        let mut write = self.until(deadline, move |cx| loop {
            if written == len {
                // TLS may still hold the last record.
                return self.stream.poll_flush(cx).map_err(|_| ());
            }
            match self.stream.poll_write(cx, &bytes()[written..]) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(())),
                Poll::Ready(Ok(n)) => written += n,
                Poll::Ready(Err(_)) => return Poll::Ready(Err(())),
                Poll::Pending => return Poll::Pending,
            }
        });
        poll_fn(move |cx| {
            let result = ready!(Pin::new(&mut write).poll(cx));
            let ok = matches!(result, Some(Ok(())));
            if !ok {
                self.writable.set(false);
            }
            Poll::Ready(ok)
        })
    }

    /// Streams a response body, ending a chunked one with `trailers`; false if the connection
    /// must close (an error, a length mismatch, or a client that went away).
    async fn write_stream(
        &self,
        mut stream: crate::body::BodyStream,
        framing: Framing,
        trailers: Option<Trailers>,
    ) -> bool {
        let mut sent: u64 = 0;
        loop {
            // Flush what is buffered while the body's producer is not ready.
            let item = match poll_fn(|cx| Poll::Ready(stream.as_mut().poll_next(cx))).await {
                Poll::Ready(item) => item,
                Poll::Pending => {
                    if !self.flush().await {
                        return false;
                    }
                    poll_fn(|cx| stream.as_mut().poll_next(cx)).await
                }
            };
            match item {
                Some(Ok(chunk)) => {
                    sent += chunk.len() as u64;
                    if let Framing::Length(Some(n)) = framing {
                        if sent > n {
                            return false;
                        }
                    }
                    if chunk.is_empty() {
                        continue;
                    }
                    if let Framing::Chunked = framing {
                        write_chunk_size(&mut self.write_buf.borrow_mut(), chunk.len());
                    }
                    if chunk.len() >= DIRECT_WRITE {
                        if !self.flush().await || !self.write_all(&chunk).await {
                            return false;
                        }
                    } else {
                        self.write_buf.borrow_mut().extend_from_slice(&chunk);
                    }
                    if let Framing::Chunked = framing {
                        self.write_buf.borrow_mut().extend_from_slice(b"\r\n");
                    }
                    if self.write_buf.borrow().len() >= FLUSH_AT && !self.flush().await {
                        return false;
                    }
                }
                Some(Err(_)) => return false,
                None => {
                    return match framing {
                        Framing::Chunked => {
                            // The producer has ended, so trailers it sets are there now.
                            let trailers = trailers.and_then(Trailers::take);
                            volt_proto::write_last_chunk(
                                &mut self.write_buf.borrow_mut(),
                                trailers.as_ref(),
                            );
                            true
                        }
                        Framing::Length(Some(n)) => sent == n,
                        Framing::Length(None) | Framing::Close => true,
                    };
                }
            }
        }
    }

    /// Whether the read buffer may hold something to act on: anything, unless the last parse
    /// found an unfinished head of `unfinished` bytes; then only bytes with a LF (a line, maybe
    /// the head, ended), or enough of them to break a size limit (431, or 414 while the request
    /// line is still open).
    fn worth_parsing(&self, unfinished: usize) -> bool {
        let buf = self.read_buf.borrow();
        if unfinished == 0 || unfinished > buf.len() {
            return !buf.is_empty();
        }
        let limits = &self.worker.limits;
        buf[unfinished..].contains(&b'\n')
            || buf.len() > limits.max_head_bytes
            || (buf.len() > limits.max_uri_len && !buf[..unfinished].contains(&b'\n'))
    }

    /// Going idle: the buffers go back to the worker's pool, unless the worker lets this
    /// connection keep them ([`Worker::keep_idle_buffers`]: while the worker's spare-buffer
    /// budget, shared with its pools, has room, and only small buffers). A keep-alive client's next request then finds them in
    /// place: giving them back and taking them again cost ~145 instructions a request.
    fn park_buffers(&self) {
        let (read, write) = (self.read_buf.borrow(), self.write_buf.borrow());
        // A connection that has read nothing yet (every new one, once) holds nothing to give.
        if read.capacity() == 0 && write.capacity() == 0 {
            return;
        }
        let small = read.capacity() <= IDLE_READ_MAX && write.capacity() <= IDLE_WRITE_MAX;
        drop((read, write));
        if small && self.worker.keep_idle_buffers() {
            self.kept_buffers.set(true);
        } else {
            self.release_buffers();
        }
    }

    /// No longer idle: buffers kept by [`ConnIo::park_buffers`] no longer count as idle.
    fn unpark_buffers(&self) {
        if self.kept_buffers.replace(false) {
            self.worker.idle_buffers_back();
        }
    }

    /// Gives both buffers back to the worker's pool.
    fn release_buffers(&self) {
        if self.read_buf.borrow().capacity() == 0 && self.write_buf.borrow().capacity() == 0 {
            return;
        }
        let mut read = std::mem::take(&mut *self.read_buf.borrow_mut());
        // The front of the buffer went to the requests' heads (`split_to`), so what is left
        // reports less capacity than the pool wants. Those heads are dropped by now, and the
        // whole allocation comes back without copying or allocating; without this, every
        // keep-alive request dropped its buffer and the next one allocated a new one.
        // (If a handler still holds a head, this fails and the pool turns the buffer away.)
        let _ = read.try_reclaim(READ_BUF);
        self.worker.give_read_buf(read);
        let write = std::mem::take(&mut *self.write_buf.borrow_mut());
        self.worker.give_write_buf(write);
    }
}

impl Drop for ConnIo {
    /// A closed connection's buffers go back to the worker's pool too, not only an idle one's:
    /// with a new connection per request, every connection would otherwise allocate and free
    /// both.
    fn drop(&mut self) {
        self.unpark_buffers();
        self.release_buffers();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size of the futures `f` returns.
    fn future_size<A, B, C, F>(f: fn(A, B, C) -> F) -> usize {
        let _ = f;
        std::mem::size_of::<F>()
    }

    /// Every idle connection holds its `serve` future (its batches are boxed apart): it must
    /// stay small, and at most 256 bytes with the task's own state besides, where moving it
    /// (`memcpy`) still takes the short path.
    #[test]
    fn idle_connection_future_is_small() {
        let size = future_size(serve::<crate::Router>);
        assert!(size <= 200, "the connection future is {size} bytes");
    }

    /// A batch's future is moved into its box once per batch (a `memcpy` of its whole size
    /// for every keep-alive request): what only rare paths need must not widen it.
    #[test]
    fn batch_future_is_small() {
        let size = future_size(process::<crate::Router>);
        assert!(size <= 512, "the batch future is {size} bytes");
    }
}
