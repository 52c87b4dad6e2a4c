//! One HTTP/1.x connection: the only module that sees both the socket and the codec.
//!
//! The loop, as in STYLE.md: read what the socket has, parse every complete request in the
//! buffer, run each handler and append each response to one write buffer, then write once.
//! All of that happens inside one poll of the connection's task ([`answer_ready`]) as long as
//! nothing has to wait, which is what keep-alive and pipelined requests to ready handlers
//! cost: no future is set up per request or per batch. The first thing that has to wait (a
//! handler that returned `Pending`, a streamed body, a socket that takes no more) goes on in
//! a future of its own ([`ConnIo::resume`]), then the pass over the buffer goes on. A handler
//! that waits first gets the responses before it flushed, so a slow request never holds back
//! the answers to the ones pipelined before it.
//!
//! The connection's I/O state ([`ConnIo`]) is shared through an `Rc` with the request body
//! ([`BodyReader`]), which reads from the same buffer and socket when the handler asks for the
//! body. Everything runs on one worker thread, so `RefCell`s suffice; no borrow is held across
//! an `.await`.

use std::cell::{Cell, RefCell};
use std::future::{poll_fn, Future};
use std::mem::offset_of;
use std::net::SocketAddr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::{Buf, BytesMut};
use http::{Method, StatusCode, Version};
use volt_proto::{BodyKind, ParseError};
use volt_rt::future::{race, Either};
use volt_rt::time::{sleep_until, Sleep};

use crate::request::{give_parts, take_parts, Parts, RequestBody};
use crate::response::{IntoResponse, Response};
use crate::server::{ConnGuard, Worker};
use crate::service::Service;
use crate::transport::Transport;
use crate::{Error, Request};

mod close;
mod encode;
mod first_line;
mod read;
mod reader;
mod upgrade;
mod write;

use crate::cold::cold;
use close::Ending;
use first_line::{first_line, FirstLine};
use read::ReadError;
use write::{Nagle, FLUSH_AT};

pub(crate) use reader::BodyReader;

/// Least free space in the read buffer before a read.
const MIN_READ: usize = 4 * 1024;
/// Least capacity of a write buffer taken for a response.
const MIN_WRITE: usize = 1024;

/// The socket and both buffers of a connection.
///
/// A keep-alive request touches every field (the address goes into the request), and with 64
/// connections in a closed loop each line of this is a cache miss again by the connection's
/// next request. So the fields are laid out by hand to fill three whole lines (192 bytes,
/// asserted below; a smaller `Sleep` made room), and the struct starts on a line of its
/// own: 208 bytes at the allocator's 16-byte alignment spanned four lines (keep-alive, 64
/// connections, io_uring: L1 misses 15.5 + 5.6 -> 14.5 + 5.4 a request, reads + writes; Ir
/// 2,760 -> 2,773 from code generated differently around it). The `Rc` holding it now takes
/// 256 bytes plus the allocator's, not 224.
#[repr(C, align(64))]
pub(crate) struct ConnIo {
    // Line 0
    read_buf: RefCell<BytesMut>,
    stream: Transport,
    // Line 1
    write_buf: RefCell<Vec<u8>>,
    remote: SocketAddr,
    // Line 2
    /// The deadline of whatever the connection waits for (reset, never recreated).
    timer: RefCell<Sleep>,
    worker: Rc<Worker>,
    /// False once a write failed or timed out: the connection is finished.
    writable: Cell<bool>,
    /// A write of the connection's task is under way, and may be waiting for the socket: a
    /// request body read in another task must not write then (see [`ConnIo::flush_for_body`]).
    writing: Cell<bool>,
    /// Whether `TCP_NODELAY` is set yet; set lazily, see [`ConnIo::write_from`].
    nagle: Cell<Nagle>,
    /// Cleartext, and no request yet: an HTTP/2 preface here switches to HTTP/2.
    h2_possible: Cell<bool>,
    /// How the connection ends when it closes.
    ending: Cell<Ending>,
    /// Waiting for a request with nothing started, or lingering with nothing arriving
    /// ([`ConnIo::linger`]): graceful shutdown aborts the task
    /// ([`Worker::shut_down`](crate::server::Worker)). Here, not in the worker's table of
    /// connections, whose entry for the connection was a line of its own set and cleared
    /// twice a request (keep-alive, 64 connections, io_uring: 2,804 -> 2,760 Ir/request, L1
    /// misses 17.3 + 4.7 -> 15.5 + 5.6 reads + writes).
    pub(crate) idle: Cell<bool>,
}

// Three whole cache lines, each starting where [`ConnIo`] says.
const _: () = assert!(size_of::<ConnIo>() == 192 && align_of::<ConnIo>() == 64);
const _: () = assert!(offset_of!(ConnIo, write_buf) == 64 && offset_of!(ConnIo, timer) == 128);

/// What the connection does after a response.
enum Next {
    KeepAlive,
    Close,
    /// The client opened with the HTTP/2 preface (prior knowledge).
    Http2,
    /// A WebSocket handshake was answered with 101: the connection switches.
    Upgrade(Box<crate::ws::PendingUpgrade>),
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
        writing: Cell::new(false),
        nagle: Cell::new(Nagle::Untouched),
        timer: RefCell::new(sleep_until(Instant::now())),
        remote,
        h2_possible,
        ending: Cell::new(Ending::Fin),
        idle: Cell::new(false),
    })
}

/// Serves an HTTP/1 connection until it closes. `guard`, the connection's entry in its
/// worker's table (`None` on TLS, whose task holds it around the handshake too), goes with the
/// future.
///
/// Not an async fn but a function returning an `async move` block: an async fn copies its
/// arguments into locals of its state and keeps the argument slots too, unused (16 bytes
/// here); the block uses what it captured in place. And the guard is captured here rather
/// than by a wrapping block in the task (`async move { let _guard = guard; serve(..).await }`):
/// that wrapper's state tag lay on a cache line of its own in the task, one L1 miss more a
/// keep-alive request.
#[allow(clippy::manual_async_fn)] // an async fn keeps copies of its arguments, see above
pub(crate) fn serve<S: Service>(
    io: Rc<ConnIo>,
    service: Arc<S>,
    guard: Option<ConnGuard>,
) -> impl Future<Output = ()> {
    async move {
        // Captured, and dropped with the future: however the connection ends.
        let _ = &guard;
        // No `let worker = &io.worker` and the like: a reference kept across the `.await`s below
        // is a field of this future, which every idle connection holds.
        // When the first byte of an unfinished head arrived; bounds a slowloris.
        let mut head_started: Option<Instant> = None;
        // The unfinished head the last parse gave up on: bytes that cannot end it or break it
        // are not worth parsing again from the start (a head dripped in byte by byte would
        // otherwise cost time quadratic in its size).
        let mut unfinished = volt_proto::UnfinishedHead::default();
        loop {
            if io.worth_parsing(&mut unfinished) {
                let next = loop {
                    // Every request in the buffer whose answer is ready at once is answered, and
                    // the answers written, within this one poll ...
                    let step = poll_fn(|cx| {
                        Poll::Ready(answer_ready(&io, &*service, &mut head_started, cx))
                    });
                    // ... and what has to wait goes on in a future of its own, boxed: its state
                    // would otherwise widen every connection's future, idle ones included.
                    let waiting = match step.await {
                        Step::Done(next) => break next,
                        Step::Wait(wait) => Box::pin(io.resume(wait)),
                    };
                    match waiting.await {
                        Next::KeepAlive => {} // on with the requests after it
                        next => break next,
                    }
                };
                match next {
                    Next::KeepAlive => {}
                    Next::Close => {
                        // Bytes past the last request answered: the client is sending more.
                        if !io.read_buf.borrow().is_empty() {
                            io.linger_on_close();
                        }
                        break;
                    }
                    // Boxed for the same reason.
                    Next::Http2 => {
                        if let Some(guard) = &guard {
                            guard.untrack();
                        }
                        return cold(switch_to_h2(io, service)).await;
                    }
                    Next::Upgrade(pending) => {
                        if let Some(guard) = &guard {
                            guard.untrack();
                        }
                        return cold(upgrade::switch_to_websocket(io, pending)).await;
                    }
                }
                unfinished = match head_started {
                    Some(_) => volt_proto::UnfinishedHead::new(&io.read_buf.borrow()),
                    None => volt_proto::UnfinishedHead::default(),
                };
            }
            let idle = io.read_buf.borrow().is_empty();
            if idle && io.worker.is_shutting_down() {
                break;
            }
            let deadline = match head_started {
                Some(t) => t + io.worker.config.header_read_timeout,
                None => volt_rt::time::now() + io.worker.config.idle_timeout,
            };
            match io.read_next(deadline, idle).await {
                Ok(0) | Err(ReadError::Io) => break,
                Ok(_) => {}
                Err(ReadError::Timeout) => {
                    // Not idle any more: a graceful shutdown must not abort what follows (over
                    // TLS, the close_notify).
                    io.idle.set(false);
                    // Idle: close quietly.
                    if !idle {
                        let e =
                            Error::new(StatusCode::REQUEST_TIMEOUT, "request head took too long");
                        io.worker.refresh_date();
                        io.respond_error(e, false);
                        // Boxed: this rare path would otherwise add a write future's size to
                        // every idle connection.
                        cold(io.flush(true)).await;
                    }
                    break;
                }
            }
        }
        // Plain TCP with nothing left to do just drops the socket, whose close sends the FIN
        // (if the last write did not). Not a lingering close while a task the handler spawned
        // still holds the request body: that task reads the socket.
        let linger = io.lingers() && Rc::strong_count(&io) == 1;
        if linger || matches!(io.stream, Transport::Tls(_)) {
            // Boxed: rare, and it would widen every connection's future.
            cold(io.close(linger)).await;
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

/// How far a pass over the read buffer got: done, or stopped at something that has to wait
/// (`F` is the type of the handlers' futures).
enum Step<'a, F> {
    /// Every complete request answered and the answers written; what the connection does next.
    Done(Next),
    Wait(Wait<'a, F>),
}

/// What a pass over the read buffer stopped at; [`ConnIo::resume`] waits for it.
enum Wait<'a, F> {
    /// A handler that did not answer at its first poll.
    Handler(F, Answering),
    /// A response body being streamed, then what follows the response.
    Stream(Pin<Box<dyn Future<Output = bool> + 'a>>, After),
    /// The rest of a request body to skip before the next request.
    Drain(Rc<BodyReader>),
    /// The write buffer to write out, then `.0`.
    Flush(Next),
    /// The rest of a write of the write buffer that went `.0` bytes far, then `.1`.
    FlushRest(usize, Next),
}

/// What the response to a request needs to know about the request.
struct Answering {
    version: Version,
    is_head: bool,
    keep_alive: bool,
    /// The body's declared length.
    declared: Option<u64>,
    reader: Option<Rc<BodyReader>>,
}

/// What follows a response's body.
struct After {
    reader: Option<Rc<BodyReader>>,
    keep_alive: bool,
}

/// Parses and answers every complete request in the read buffer whose answer is ready at
/// once, then writes the answers out, all within one poll of the connection's task: a
/// keep-alive or pipelined request costs no future of its own. Stops at the first thing that
/// has to wait and hands it back.
fn answer_ready<'a, S: Service>(
    io: &'a Rc<ConnIo>,
    service: &'a S,
    head_started: &mut Option<Instant>,
    cx: &mut Context<'_>,
) -> Step<'a, impl Future<Output = Response> + Unpin + 'a> {
    io.worker.refresh_date();
    // Every request of the pass is parsed into this one head.
    let mut parts = take_parts();
    let step = answer_each(io, service, head_started, &mut parts, cx);
    give_parts(parts);
    match step {
        Step::Done(next) => io.write_now(next, cx),
        wait => wait,
    }
}

/// The loop of [`answer_ready`], with the head every request is parsed into.
fn answer_each<'a, S: Service>(
    io: &'a Rc<ConnIo>,
    service: &'a S,
    head_started: &mut Option<Instant>,
    parts: &mut Rc<Parts>,
    cx: &mut Context<'_>,
) -> Step<'a, impl Future<Output = Response> + Unpin + 'a> {
    loop {
        let parsed = {
            let buf = io.read_buf.borrow();
            if buf.is_empty() {
                return Step::Done(Next::KeepAlive);
            }
            let n = buf.len().min(volt_proto::H2_PREFACE.len());
            let fresh = io.h2_possible.get();
            if fresh && buf[..n] == volt_proto::H2_PREFACE[..n] {
                return Step::Done(match n < volt_proto::H2_PREFACE.len() {
                    // The rest of the preface (or of an HTTP/1 `P...`) is on its way.
                    true => Next::KeepAlive,
                    false => Next::Http2,
                });
            }
            let limits = &io.worker.limits;
            let mut parsed =
                volt_proto::parse_request_into(&buf, limits, &mut unique(parts).parsed);
            // Until the first request is complete, the connection may still turn out to be a
            // client that is not HTTP/1 at all (reads split its first line anywhere).
            if fresh {
                match parsed {
                    Ok(true) => io.h2_possible.set(false),
                    Err(ParseError::InvalidVersion) => match first_line(&buf, limits) {
                        FirstLine::Http1 => {}
                        // An HTTP/1 error response would only be garbage to it (say, a broken
                        // HTTP/2 client), so just close (RFC 9113 §3.4).
                        FirstLine::Other => return Step::Done(Next::Close),
                        FirstLine::Unfinished => parsed = Ok(false),
                    },
                    _ => {}
                }
            }
            parsed
        };
        match parsed {
            Ok(false) => {
                head_started.get_or_insert_with(volt_rt::time::now);
                return Step::Done(Next::KeepAlive);
            }
            Ok(true) => {
                *head_started = None;
                let (req, answering) = match start(io, parts) {
                    Ok(started) => started,
                    Err(next) => return Step::Done(next),
                };
                let mut fut = service.call_unpin(req);
                let mut panicked = false;
                // The response is encoded where the poll left it: bound first to a variable
                // of its own, it was copied there (~14 instructions a request).
                let polled = poll_by_conn(&answering, || {
                    poll_caught(Pin::new(&mut fut), cx, &mut panicked)
                });
                let step = match polled {
                    Poll::Ready(response) => io.respond(answering, response, panicked),
                    Poll::Pending => return Step::Wait(Wait::Handler(fut, answering)),
                };
                drop(fut);
                match step {
                    Step::Done(Next::KeepAlive) => {}
                    step => return step,
                }
            }
            Err(e) => {
                io.reject(&e);
                return Step::Done(Next::Close);
            }
        }
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

/// Sets up the request just parsed into `parts`: its body, if it has one, and what its
/// response will need. `Err` when the request is refused outright (413, then close).
fn start(io: &Rc<ConnIo>, parts: &mut Rc<Parts>) -> Result<(Request, Answering), Next> {
    let worker = &io.worker;
    let head = &parts.parsed;
    let version = head.version;
    let is_head = head.method == Method::HEAD;
    let keep_alive = head.keep_alive;
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
            let e = Error::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "request body of {n} bytes is over the limit of {}",
                    worker.config.max_body_bytes
                ),
            );
            io.respond_error(e, is_head);
            return Err(Next::Close);
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
        // Per request, not once per pass: parsing at an offset into the buffer and advancing
        // at the end of the pass saved 3 Ir/request pipelined but cost 27 keep-alive.
        buf.advance(head_len);
    }
    if io.write_buf.borrow().capacity() == 0 {
        let mut w = worker.take_write_buf();
        // Room for a typical response head at once, not a chain of doubling reallocations.
        w.reserve(MIN_WRITE);
        *io.write_buf.borrow_mut() = w;
    }
    let answering = Answering {
        version,
        is_head,
        keep_alive,
        declared,
        reader,
    };
    Ok((Request::from_parts(parts.clone(), body), answering))
}

/// Polls a handler's future. A panic answers 500 and sets `panicked`.
///
/// Inlined: out of line it cost a call, and a copy of the response (112 bytes) into its
/// return value; ~16 instructions a request. The closure returns the poll itself: storing a
/// ready response into an `Option` outside it instead, to spare `catch_unwind` moving the
/// result, cost more (pipelined 1,482 -> 1,535 Ir/request).
#[inline(always)]
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

/// Polls a handler (`poll`) from the connection's own task: a request body it reads may then
/// wait for the socket to take the answers before it (see [`ConnIo::flush_for_body`]).
#[inline(always)]
fn poll_by_conn<T>(answering: &Answering, poll: impl FnOnce() -> T) -> T {
    let Some(reader) = &answering.reader else {
        return poll();
    };
    reader.polled_by_conn(true);
    let polled = poll();
    reader.polled_by_conn(false);
    polled
}

impl ConnIo {
    /// Waits for what stopped a pass over the read buffer, and finishes that request; what it
    /// gives back is what the connection does next (another pass, on `KeepAlive`).
    async fn resume<F: Future<Output = Response> + Unpin>(&self, mut wait: Wait<'_, F>) -> Next {
        loop {
            let step = match wait {
                Wait::Handler(mut fut, answering) => {
                    // The answers before this one go out first: a handler that waits does not
                    // hold them back. (If that fails, the response below closes.)
                    self.flush(false).await;
                    let mut panicked = false;
                    let handler = poll_fn(|cx| {
                        poll_by_conn(&answering, || {
                            poll_caught(Pin::new(&mut fut), cx, &mut panicked)
                        })
                    });
                    // A handler that reads the request body sees a client that left itself.
                    let watch = answering.reader.is_none() && !self.worker.config.half_close;
                    let response = match watch {
                        false => Some(handler.await),
                        true => match race(handler, self.client_gone()).await {
                            Either::Left(response) => Some(response),
                            Either::Right(()) => None,
                        },
                    };
                    drop(fut);
                    let Some(response) = response else {
                        return Next::Close;
                    };
                    self.respond(answering, response, panicked)
                }
                Wait::Stream(streamed, after) => match streamed.await {
                    true => self.after_body(after),
                    false => Step::Done(Next::Close),
                },
                Wait::Drain(reader) => {
                    // Graceful shutdown ends the drain: the response is out, and the
                    // connection will not take another request, so a client slow with the
                    // rest of a body must not hold the shutdown up (`body_read_timeout`).
                    let drain = reader.finish(self.worker.config.max_drain_bytes);
                    let stopped = volt_rt::Handle::current().stopped();
                    match race(drain, stopped).await {
                        Either::Left(true) => self.after_request(true),
                        _ => {
                            self.linger_on_close();
                            Step::Done(Next::Close)
                        }
                    }
                }
                Wait::Flush(next) => {
                    return match self.flush(matches!(next, Next::Close)).await {
                        true => next,
                        false => Next::Close,
                    };
                }
                Wait::FlushRest(written, next) => {
                    let last = matches!(next, Next::Close);
                    return match self.flush_from(written, last).await {
                        true => next,
                        false => Next::Close,
                    };
                }
            };
            wait = match step {
                Step::Wait(wait) => wait,
                Step::Done(Next::KeepAlive) => return Next::KeepAlive,
                // Whatever is written goes out before the connection closes.
                Step::Done(next) => Wait::Flush(next),
            };
        }
    }

    /// Encodes the response to a request and does what follows it as far as it can without
    /// waiting. `panicked`: the handler panicked (the response is its 500).
    ///
    /// The usual exchange (a request without a body, answered by a 200 whose body is in
    /// memory, and the connection stays open) has no framing to work out and no request body
    /// to skip. It is tried first, inlined into the loop over the requests; everything else
    /// is out of line in [`ConnIo::respond_other`], so the usual answer saves and restores
    /// none of the registers that one needs.
    #[inline(always)]
    fn respond<'a, F>(
        &'a self,
        answering: Answering,
        mut response: Response,
        panicked: bool,
    ) -> Step<'a, F> {
        // The response's own `Connection: close` needs no check here: it is a header, and a
        // response with any header besides `Content-Type` is not the usual one.
        if !panicked
            && answering.reader.is_none()
            && answering.keep_alive
            && !answering.is_head
            && answering.version != Version::HTTP_10
            && !self.worker.is_shutting_down()
            && self.writable.get()
        {
            match self.encode_usual(response) {
                Ok(()) => return self.after_request(true),
                Err(other) => response = other,
            }
        }
        self.respond_other(answering, response, panicked)
    }

    /// [`ConnIo::respond`] for any response but the usual one.
    #[inline(never)]
    fn respond_other<'a, F>(
        &'a self,
        answering: Answering,
        response: Response,
        panicked: bool,
    ) -> Step<'a, F> {
        let Answering {
            version,
            is_head,
            mut keep_alive,
            declared,
            reader,
        } = answering;
        // A 1xx as the final response is a handler bug, answered as a panic is; but for the
        // 101 of a WebSocket handshake.
        let (response, panicked) = match response.status.is_informational() {
            true if !panicked => match self.upgrade(response, version, reader.is_some()) {
                Ok(next) => return Step::Done(next),
                Err(response) => (response.informational_as_final(), true),
            },
            true => (response.informational_as_final(), true),
            false => (response, panicked),
        };
        // What the handler left of the body is skipped after the response is written (see
        // `after_body`), as the client may hold the rest back until it has the answer. Here
        // only whether skipping can work decides `Connection`.
        let max_drain = self.worker.config.max_drain_bytes;
        if panicked
            || reader
                .as_ref()
                .is_some_and(|r| !r.skippable(declared, max_drain))
            || self.worker.is_shutting_down()
            || !self.writable.get()
            || response.asks_to_close()
        {
            keep_alive = false;
        }
        if let Some(reader) = &reader {
            reader.answered();
        }
        let (keep_alive, streamed) = self.encode_response(response, version, is_head, keep_alive);
        let after = After { reader, keep_alive };
        match streamed {
            Some(streamed) => Step::Wait(Wait::Stream(streamed, after)),
            None => self.after_body(after),
        }
    }

    /// After a response's body: what the handler left of the request's body is to be skipped
    /// (read and discarded) if the connection goes on. If it closes instead, the client may
    /// still be sending that body: the close lingers.
    fn after_body<'a, F>(&self, after: After) -> Step<'a, F> {
        if let Some(reader) = after.reader {
            match reader.finished_now() {
                Some(true) => {}
                // The request lives on past its response (a task the handler spawned reads the
                // body): skipping the body would wait on the socket alongside that task, and
                // the socket wakes only one of them. Closing leaves the body to it.
                None if Rc::strong_count(&reader) > 1 => return Step::Done(Next::Close),
                None if after.keep_alive => return Step::Wait(Wait::Drain(reader)),
                // Failed, or not to be skipped.
                _ => {
                    self.linger_on_close();
                    return Step::Done(Next::Close);
                }
            }
        }
        self.after_request(after.keep_alive)
    }

    /// After a request: a write buffer that grew large is written out before the next one.
    fn after_request<'a, F>(&self, keep_alive: bool) -> Step<'a, F> {
        let next = if keep_alive {
            Next::KeepAlive
        } else {
            Next::Close
        };
        if self.write_buf.borrow().len() >= FLUSH_AT {
            return Step::Wait(Wait::Flush(next));
        }
        Step::Done(next)
    }
}

#[cfg(test)]
mod tests;
