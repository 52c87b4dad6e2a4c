//! HTTP/2 connections: volt-proto's sans-I/O [`Connection`] driven on volt-rt, and the
//! conversions between its requests and volt's [`Request`] and [`Response`].
//!
//! A connection reaches this module after TLS chose `h2` by ALPN, or when a cleartext
//! connection opened with the HTTP/2 preface (prior knowledge; the bytes the HTTP/1 loop
//! already read come along). `Upgrade: h2c` is not supported: RFC 9113 deprecated it.
//!
//! The loop is HTTP/1's: read what the socket has, hand it to the state machine, act on every
//! event, write everything once. A request's handler is polled right where its head is
//! decoded; when it is ready at once (the common case) its response is encoded straight into
//! the output buffer: no task and no allocation per stream beyond the request itself. A
//! handler that has to wait is kept with its stream ([`Task`]) and polled again when its own
//! waker fires ([`StreamWaker`]: a flag and the connection task's waker), so one busy stream
//! does not make every other pending handler run.
//!
//! Request bodies go to the handler through an [`Inbox`]; the window is given back to the
//! client as the handler takes each chunk, so a slow handler slows its client down. Response
//! bodies go out as the stream and connection windows allow. A body nobody reads gives back
//! its connection window, never its stream's: after the response, what the client may still
//! send is drained (up to [`Config::max_drain_bytes`], within [`Config::body_read_timeout`]),
//! and the stream is reset with `NO_ERROR` once the client used its window up or a limit
//! passed (the response is complete: RFC 9113 §8.1).
//!
//! Defences live in the state machine (floods of control frames, empty frames, CONTINUATION,
//! rapid reset, provoked resets: see `volt_proto::h2::server`); a client that trips one gets
//! GOAWAY and its connection is closed once that is written.
//!
//! A WebSocket opens with an extended CONNECT (RFC 8441); its 200 leaves the stream open, and
//! the WebSocket session runs on the stream's DATA frames in this connection's task ([`tunnel`]).
//!
//! This module holds the connection loop ([`Driver`]), the streams' tasks and timers.
//! [`request`] makes a decoded head into a [`Request`]; [`inbox`] carries request bodies from
//! the connection to the handlers; [`response`] encodes response heads and pumps bodies out;
//! [`tunnel`] runs WebSocket sessions on streams.

mod inbox;
mod request;
pub(crate) mod response;
mod tunnel;

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::{poll_fn, Future};
use std::net::SocketAddr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use http::StatusCode;
use volt_proto::h2::frame::Reason;
use volt_proto::h2::server::{Connection, Event};
use volt_rt::time::{sleep_until, Sleep};

use crate::request::{give_parts, Parts};
use crate::response::{IntoResponse, Response};
use crate::server::Worker;
use crate::service::Service;
use crate::transport::Transport;
use crate::{Error, Request};

pub(crate) use inbox::H2Body;
use inbox::{BodyEnd, Continue, Inbox};
pub(crate) use request::{head_parts, header_map, note_protocol, RequestKind};
use request::{settings, to_request};
use response::Outgoing;
use tunnel::Session;
pub(crate) use tunnel::StreamLink;

/// Reading stops while this much output waits for the socket.
const FLUSH_AT: usize = 64 * 1024;
/// Least free space in the read buffer before a read.
const MIN_READ: usize = 16 * 1024;
/// Passes of the loop before the connection yields to other tasks.
const MAX_PASSES: usize = 32;
/// After a connection error, how long writing the GOAWAY may take.
const CALM_DOWN: Duration = Duration::from_secs(1);

/// Serves one HTTP/2 connection on `io`, after `read` (bytes already read from it, starting
/// with the preface, or nothing). Returns when the connection is closed.
pub(crate) async fn serve<S: Service>(
    io: Transport,
    read: BytesMut,
    remote: SocketAddr,
    worker: Rc<Worker>,
    service: Arc<S>,
) {
    let service = &*service;
    let mut driver = Driver::new(io, read, remote, worker, move |req| service.call(req));
    poll_fn(|cx| driver.poll(cx)).await;
}

/// The connection's state machine with its socket, buffers, streams and timer.
struct Driver<C, F> {
    io: Transport,
    conn: Connection,
    read: BytesMut,
    /// `read` holds bytes from before the hand-over, not handled yet.
    prefix: bool,
    out: Vec<u8>,
    /// How many bytes of `out` are written.
    written: usize,
    worker: Rc<Worker>,
    remote: SocketAddr,
    call: C,
    /// Streams with something left to do: a handler running, a body to send or drain.
    tasks: Vec<Task<F>>,
    /// Handler futures whose allocation can be reused (`Pin::set`) for the next request.
    spare: Vec<Pin<Box<F>>>,
    timer: Pin<Box<Sleep>>,
    stopped: Pin<Box<volt_rt::Stopped>>,
    phase: Phase,
    started: Instant,
    /// Since when the connection has had no stream: the idle timeout counts from there.
    idle_since: Option<Instant>,
    /// Since when output has been waiting for the socket.
    write_since: Option<Instant>,
    /// Since when response data has waited for the connection's flow-control window with no
    /// byte sent: the client takes nothing, as when the socket takes nothing (`write_since`).
    window_since: Option<Instant>,
    /// Body bytes sent, and whether some wait for the connection's window, since the last
    /// [`Driver::pump`] ended (see `note_sent`).
    window_sent: usize,
    window_waits: bool,
    /// Since when a header block has been arriving: it must be whole within
    /// `header_read_timeout`, as an HTTP/1 head must.
    block_since: Option<Instant>,
    /// The write side is shut (closing, after the last GOAWAY).
    shut_down: bool,
}

/// Where the connection is in its life.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    Serving,
    /// GOAWAY sent (shutdown, idle, or the client's GOAWAY): streams already open finish.
    Draining,
    /// Closing since the instant: the last GOAWAY is being written, then the write side shuts
    /// and input is discarded until the client closes (see [`Driver::poll_close`]).
    Closing(Instant),
    /// The client went away or the socket failed.
    Gone,
}

/// What the connection still does for one stream.
struct Task<F> {
    id: u32,
    handler: Option<(Pin<Box<F>>, Arc<StreamWaker>)>,
    /// The request body, shared with the handler's [`RequestBody`].
    inbox: Option<Rc<RefCell<Inbox>>>,
    /// The request's head, to reuse once the handler is done with it.
    parts: Option<Rc<Parts>>,
    kind: RequestKind,
    out: Outgoing,
    /// A WebSocket's session, once its 200 went (`tunnel`).
    session: Option<Session>,
    /// Request body bytes discarded (nobody read them): their stream window is not given
    /// back.
    drained: u64,
    /// Draining gives up (resetting the stream) at this time.
    drain_deadline: Option<Instant>,
    /// Since when response data has been waiting for flow-control window the client does not
    /// give: the write timeout counts from there, as for bytes the socket does not take.
    stalled_since: Option<Instant>,
}

/// Wakes the connection task and marks its stream's handler as worth polling.
struct StreamWaker {
    woken: AtomicBool,
    conn: Waker,
}

impl Wake for StreamWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        self.conn.wake_by_ref();
    }
}

impl<C, F> Driver<C, F>
where
    C: Fn(Request) -> F,
    F: Future<Output = Response>,
{
    fn new(io: Transport, read: BytesMut, remote: SocketAddr, worker: Rc<Worker>, call: C) -> Self {
        let mut out = worker.take_write_buf();
        let conn = Connection::new(settings(&worker.config), &mut out);
        let now = Instant::now();
        Driver {
            io,
            conn,
            prefix: !read.is_empty(),
            read,
            out,
            written: 0,
            remote,
            call,
            tasks: Vec::new(),
            spare: Vec::new(),
            timer: Box::pin(sleep_until(now + worker.config.header_read_timeout)),
            stopped: Box::pin(volt_rt::Handle::current().stopped()),
            phase: Phase::Serving,
            started: now,
            idle_since: Some(now),
            write_since: None,
            window_since: None,
            window_sent: 0,
            window_waits: false,
            block_since: None,
            shut_down: false,
            worker,
        }
    }

    /// One wake-up of the connection: passes of read, act, send, write until nothing moves.
    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        for _ in 0..MAX_PASSES {
            let mut again = false;
            if self.phase == Phase::Serving || self.phase == Phase::Draining {
                again |= self.poll_read(cx);
            }
            again |= self.poll_handlers();
            let full = self.pump(cx);
            self.poll_write(cx);
            // Output left over its mark: another pass only once the socket took it all (else
            // the write's waker brings the connection back; looping would spin).
            again |= full && self.out.is_empty();
            if self.phase == Phase::Draining && self.drained() {
                self.phase = Phase::Closing(Instant::now());
            }
            if let Phase::Closing(at) = self.phase {
                self.poll_close(at, cx);
            }
            if self.phase == Phase::Gone {
                self.close();
                return Poll::Ready(());
            }
            if !again && self.poll_timers(cx) {
                continue;
            }
            if !again {
                return Poll::Pending;
            }
        }
        // Still busy. The deadlines are looked at all the same: a client that keeps the loop
        // busy (a stream of tiny WINDOW_UPDATEs, say) must not hold them off. Then the
        // worker's other connections run, and this one comes back (what expired is acted on
        // in the next pass).
        self.poll_timers(cx);
        cx.waker().wake_by_ref();
        Poll::Pending
    }

    /// Reads once and handles every event the bytes bring. True if anything was read.
    fn poll_read(&mut self, cx: &mut Context<'_>) -> bool {
        if self.out.len() - self.written >= FLUSH_AT {
            return false; // the client is not reading: stop reading from it too
        }
        if std::mem::take(&mut self.prefix) {
            // Bytes the HTTP/1 loop read before the hand-over.
            self.process(cx);
            return true;
        }
        self.read.reserve(MIN_READ);
        match self.io.poll_read_bytes(cx, &mut self.read) {
            Poll::Ready(Ok(0)) | Poll::Ready(Err(_)) => {
                self.phase = Phase::Gone;
                false
            }
            Poll::Ready(Ok(_)) => {
                self.process(cx);
                true
            }
            Poll::Pending => false,
        }
    }

    /// Acts on every event in the bytes read.
    fn process(&mut self, cx: &mut Context<'_>) {
        self.worker.refresh_date();
        loop {
            match self.conn.poll(&mut self.read, &mut self.out) {
                Ok(Some(event)) => self.on_event(event, cx),
                Ok(None) => {
                    if !self.conn.receiving_header_block(&self.read) {
                        self.block_since = None;
                    } else if self.block_since.is_none() {
                        self.block_since = Some(Instant::now());
                    }
                    return;
                }
                Err(_) => {
                    self.phase = Phase::Closing(Instant::now());
                    self.drop_tasks();
                    return;
                }
            }
        }
    }

    fn on_event(&mut self, event: Event, cx: &mut Context<'_>) {
        match event {
            Event::Request { stream, end_stream } => self.on_request(stream, end_stream, cx),
            Event::Data {
                stream,
                data,
                end_stream,
            } => self.on_data(stream, data, end_stream),
            Event::Trailers { stream } => {
                let trailers = header_map(self.conn.head());
                self.end_body(stream, BodyEnd::Trailers(trailers));
            }
            Event::Reset { stream, .. } => {
                let Some(i) = self.task(stream) else { return };
                if self.tasks[i].session.is_some() {
                    // A WebSocket's session learns it from its link, and ends with an error.
                    let mut task = std::mem::replace(&mut self.tasks[i], Task::placeholder());
                    self.reset_tunnel(&mut task);
                    self.tasks[i] = task;
                } else {
                    let task = self.tasks.swap_remove(i);
                    self.retire(task);
                }
            }
            // Every pass sends what the windows allow (`pump`).
            Event::WindowOpened { .. } => {}
            Event::GoAway { .. } => {
                self.conn.go_away(&mut self.out);
                if self.phase == Phase::Serving {
                    self.phase = Phase::Draining;
                }
            }
        }
    }

    fn task(&self, stream: u32) -> Option<usize> {
        self.tasks.iter().position(|t| t.id == stream)
    }

    /// A new request: build it, run its handler once, answer at once if it is ready.
    fn on_request(&mut self, id: u32, end_stream: bool, cx: &mut Context<'_>) {
        let config = &self.worker.config;
        let head = self.conn.head();
        let expect = Continue::of(head);
        let inbox = (!end_stream).then(|| {
            Rc::new(RefCell::new(Inbox {
                chunks: VecDeque::new(),
                end: BodyEnd::Open,
                consumed: 0,
                reader: None,
                conn: cx.waker().clone(),
                expect: expect.unwrap_or(Continue::Nothing),
            }))
        });
        let mut task = Task {
            id,
            handler: None,
            inbox: inbox.clone(),
            parts: None,
            kind: RequestKind::of(head),
            out: Outgoing::Waiting,
            session: None,
            drained: 0,
            drain_deadline: None,
            stalled_since: None,
        };
        let request = match expect {
            Ok(_) => to_request(head, inbox, self.remote, config),
            Err(()) => Err(Error::new(
                StatusCode::EXPECTATION_FAILED,
                "unsupported expectation (only 100-continue is)",
            )),
        };
        let response = match request {
            Err(e) => e.into_response(),
            Ok((req, parts)) => {
                task.parts = Some(parts);
                let mut fut = match self.spare.pop() {
                    Some(mut boxed) => {
                        boxed.set((self.call)(req));
                        boxed
                    }
                    None => Box::pin((self.call)(req)),
                };
                match poll_handler(&mut fut, cx) {
                    Poll::Ready(Some(r)) => {
                        self.spare.push(fut);
                        r
                    }
                    Poll::Ready(None) => internal_error(),
                    Poll::Pending => {
                        let waker = Arc::new(StreamWaker {
                            woken: AtomicBool::new(true),
                            conn: cx.waker().clone(),
                        });
                        task.handler = Some((fut, waker));
                        self.idle_since = None;
                        self.tasks.push(task);
                        return;
                    }
                }
            }
        };
        self.respond(task, response);
    }

    /// Removes stream `id`'s task if nothing is left to do for it.
    fn settle(&mut self, id: u32) {
        if let Some(i) = self.task(id) {
            if self.task_finished_at(i) {
                let task = self.tasks.swap_remove(i);
                self.retire(task);
            }
        }
    }

    fn task_finished_at(&mut self, i: usize) -> bool {
        let mut task = std::mem::replace(&mut self.tasks[i], Task::placeholder());
        let done = self.task_finished(&mut task);
        self.tasks[i] = task;
        done
    }

    /// Whether `task` is over: its handler and response are done, and the client's side of
    /// the stream too (or there is nothing to wait for: draining).
    fn task_finished(&mut self, task: &mut Task<F>) -> bool {
        if task.handler.is_some() || task.session.is_some() || !matches!(task.out, Outgoing::Done) {
            return false;
        }
        if !self.conn.is_receiving(task.id) {
            return true;
        }
        // After a GOAWAY no stream follows, so a body whose response is out is not drained (as
        // over HTTP/1 once the connection is to close): a client slow with the rest must not
        // hold a graceful shutdown up. It is told it may stop (RFC 9113 §8.1).
        if self.phase != Phase::Serving {
            self.conn.reset(task.id, Reason::NO_ERROR, &mut self.out);
            return true;
        }
        // The client is still sending a body nobody reads. Its stream window is not reopened:
        // what the window still lets the client send is drained (for `body_read_timeout`, up
        // to `max_drain_bytes`); once that window or that limit is used up, the client is told
        // to stop (RST_STREAM NO_ERROR: the response is complete, RFC 9113 §8.1; clients such
        // as curl take CANCEL for a failed transfer).
        let config = &self.worker.config;
        if task.drain_deadline.is_none() {
            // A WebSocket's client, its close handshake done, ends its side soon: it gets the
            // linger timeout of HTTP/1's close.
            let wait = match task.kind {
                RequestKind::WebSocket => config.linger_timeout,
                _ => config.body_read_timeout,
            };
            task.drain_deadline = Some(Instant::now() + wait);
            if let Some(inbox) = &task.inbox {
                let unread: usize = inbox.borrow_mut().chunks.drain(..).map(|c| c.len()).sum();
                task.drained += unread as u64;
                self.conn.release_connection_window(unread, &mut self.out);
            }
        }
        if self.conn.recv_capacity(task.id) == 0 || task.drained > config.max_drain_bytes {
            self.conn.reset(task.id, Reason::NO_ERROR, &mut self.out);
            return true;
        }
        false
    }

    /// Lets go of a finished (or reset) stream: its body reader learns it ended, its head
    /// returns to the pool.
    fn retire(&mut self, mut task: Task<F>) {
        if let Some(inbox) = task.inbox.take() {
            let mut inbox = inbox.borrow_mut();
            // The stream is over: the connection window of every byte the client sent on it
            // comes back, read or not (unread chunks stay for a reader that still holds the
            // body, as memory the stream's window bounded).
            let unread: usize = inbox.chunks.iter().map(|c| c.len()).sum();
            let taken = std::mem::take(&mut inbox.consumed);
            self.conn.release(task.id, taken + unread, &mut self.out);
            if matches!(inbox.end, BodyEnd::Open) {
                inbox.end = BodyEnd::Reset;
            }
            inbox.wake_reader();
        }
        if let Outgoing::Tunnel(outbox) = &task.out {
            outbox.borrow_mut().reset();
        }
        if let Some(session) = task.session.take() {
            session.detach();
        }
        // The handler first: it may hold the request, and so the head.
        task.handler = None;
        if let Some(parts) = task.parts.take() {
            give_parts(parts);
        }
    }

    /// Polls the handlers whose wakers fired. True if one finished.
    fn poll_handlers(&mut self) -> bool {
        let mut finished = false;
        let mut i = 0;
        while i < self.tasks.len() {
            let task = &mut self.tasks[i];
            if let Some(session) = &mut task.session {
                if session.poll() {
                    // Over: `pump` ends or resets its stream.
                    task.session = None;
                    finished = true;
                }
                i += 1;
                continue;
            }
            let Some((fut, waker)) = &mut task.handler else {
                i += 1;
                continue;
            };
            if !waker.woken.swap(false, Ordering::AcqRel) {
                i += 1;
                continue;
            }
            let stream_waker = Waker::from(waker.clone());
            let mut stream_cx = Context::from_waker(&stream_waker);
            let response = match poll_handler(fut, &mut stream_cx) {
                Poll::Pending => {
                    i += 1;
                    continue;
                }
                Poll::Ready(Some(r)) => {
                    let (fut, _) = task.handler.take().expect("polled above");
                    self.spare.push(fut);
                    r
                }
                Poll::Ready(None) => {
                    task.handler = None;
                    internal_error()
                }
            };
            let task = self.tasks.swap_remove(i);
            self.respond(task, response);
            finished = true;
        }
        finished
    }

    /// Writes the output. On failure or timeout the connection is gone.
    fn poll_write(&mut self, cx: &mut Context<'_>) {
        while self.written < self.out.len() {
            match self.io.poll_write(cx, &self.out[self.written..]) {
                Poll::Ready(Ok(0)) | Poll::Ready(Err(_)) => {
                    self.phase = Phase::Gone;
                    return;
                }
                Poll::Ready(Ok(n)) => self.written += n,
                Poll::Pending => {
                    self.write_since.get_or_insert_with(Instant::now);
                    return;
                }
            }
        }
        if self.io.poll_flush(cx).is_pending() {
            self.write_since.get_or_insert_with(Instant::now);
            return;
        }
        self.out.clear();
        self.written = 0;
        self.write_since = None;
    }

    /// Once the last GOAWAY is written (after a connection error, or when a draining
    /// connection is done): shuts the write side (over TLS: `close_notify`), then reads and
    /// discards what the client still sends until it closes too (or [`CALM_DOWN`] passes).
    /// Closing with its bytes unread would reset the connection, and a reset can destroy the
    /// GOAWAY before the client reads it.
    fn poll_close(&mut self, at: Instant, cx: &mut Context<'_>) {
        if !self.out.is_empty() {
            return;
        }
        if !self.shut_down {
            if self.io.poll_shutdown(cx).is_pending() {
                return;
            }
            self.shut_down = true;
        }
        loop {
            self.read.clear();
            self.read.reserve(MIN_READ);
            match self.io.poll_read_bytes(cx, &mut self.read) {
                Poll::Ready(Ok(n)) if n > 0 => {}
                Poll::Ready(_) => {
                    self.phase = Phase::Gone;
                    return;
                }
                Poll::Pending => break,
            }
        }
        if at.elapsed() >= CALM_DOWN {
            self.phase = Phase::Gone;
        }
    }

    /// Whether a draining connection is done: every stream answered, the output written.
    fn drained(&self) -> bool {
        self.out.is_empty() && self.tasks.is_empty() && self.conn.open_streams() == 0
    }

    /// Deadlines: the handshake, idleness, a stalled write, draining a body, the GOAWAY
    /// after an error; and graceful shutdown. True if something changed and the loop should
    /// run again.
    fn poll_timers(&mut self, cx: &mut Context<'_>) -> bool {
        let config = &self.worker.config;
        if self.phase == Phase::Serving && self.stopped.as_mut().poll(cx).is_ready() {
            self.go_away();
            return true;
        }
        let idle = self.tasks.is_empty() && self.conn.open_streams() == 0;
        if !idle {
            self.idle_since = None;
        } else if self.idle_since.is_none() {
            self.idle_since = Some(Instant::now());
        }
        let mut next = None;
        let mut consider = |d: Option<Instant>| {
            if let Some(d) = d {
                next = Some(next.map_or(d, |n: Instant| n.min(d)));
            }
        };
        if !self.conn.handshake_done() {
            consider(Some(self.started + config.header_read_timeout));
        }
        if self.phase == Phase::Serving {
            consider(self.idle_since.map(|t| t + config.idle_timeout));
        }
        consider(self.write_since.map(|t| t + config.write_timeout));
        consider(self.window_since.map(|t| t + config.write_timeout));
        consider(self.block_since.map(|t| t + config.header_read_timeout));
        if let Phase::Closing(at) = self.phase {
            consider(Some(at + CALM_DOWN));
        }
        for task in &self.tasks {
            consider(task.drain_deadline);
            consider(task.stalled_since.map(|t| t + config.write_timeout));
        }
        let Some(next) = next else { return false };
        if self.timer.deadline() > next {
            self.timer.as_mut().reset(next);
        }
        loop {
            match self.timer.as_mut().poll(cx) {
                Poll::Pending => return false,
                Poll::Ready(()) if self.timer.deadline() >= next => break,
                // Armed for an earlier deadline that no longer applies: move it on.
                Poll::Ready(()) => self.timer.as_mut().reset(next),
            }
        }
        self.expire(Instant::now());
        true
    }

    /// Acts on every deadline that passed by `now`.
    fn expire(&mut self, now: Instant) {
        let config = self.worker.config.clone();
        let passed =
            |since: Option<Instant>, limit: Duration| since.is_some_and(|t| now >= t + limit);
        if passed(self.write_since, config.write_timeout)
            || passed(self.window_since, config.write_timeout)
        {
            self.phase = Phase::Gone;
            return;
        }
        if let Phase::Closing(at) = self.phase {
            if now >= at + CALM_DOWN {
                self.phase = Phase::Gone;
            }
            return;
        }
        if !self.conn.handshake_done() && now >= self.started + config.header_read_timeout {
            self.phase = Phase::Gone;
            return;
        }
        if passed(self.block_since, config.header_read_timeout) {
            // A head that never ends holds the whole connection (no other frame may come
            // between its pieces): close it.
            self.conn.abort(Reason::NO_ERROR, &mut self.out);
            self.phase = Phase::Closing(now);
            self.drop_tasks();
            return;
        }
        if self.phase == Phase::Serving && passed(self.idle_since, config.idle_timeout) {
            self.go_away();
        }
        let mut i = 0;
        while i < self.tasks.len() {
            let task = &self.tasks[i];
            // A body drained past `body_read_timeout` follows a complete response: the client
            // is asked to stop with NO_ERROR (RFC 9113 §8.1; CANCEL reads as a failed
            // transfer). A response the client's window held up is not complete: CANCEL.
            let reason = if task.drain_deadline.is_some_and(|d| now >= d) {
                Reason::NO_ERROR
            } else if passed(task.stalled_since, config.write_timeout) {
                Reason::CANCEL
            } else {
                i += 1;
                continue;
            };
            let task = self.tasks.swap_remove(i);
            self.conn.reset(task.id, reason, &mut self.out);
            self.retire(task);
        }
    }

    /// Graceful GOAWAY: the streams already open finish, then the connection closes.
    fn go_away(&mut self) {
        self.conn.go_away(&mut self.out);
        self.phase = Phase::Draining;
        // Bodies being drained end now (see `task_finished`).
        let mut i = 0;
        while i < self.tasks.len() {
            if self.tasks[i].drain_deadline.is_some() {
                let task = self.tasks.swap_remove(i);
                self.conn.reset(task.id, Reason::NO_ERROR, &mut self.out);
                self.retire(task);
            } else {
                i += 1;
            }
        }
    }

    /// Ends every stream's work at once (the connection is failing).
    fn drop_tasks(&mut self) {
        for task in std::mem::take(&mut self.tasks) {
            self.retire(task);
        }
    }

    /// Returns the buffers to the worker's pools.
    fn close(&mut self) {
        self.drop_tasks();
        self.worker.give_write_buf(std::mem::take(&mut self.out));
    }
}

impl<F> Task<F> {
    /// Stands in for a task taken out of the list for a moment.
    fn placeholder() -> Task<F> {
        Task {
            id: 0,
            handler: None,
            inbox: None,
            parts: None,
            kind: RequestKind::Other,
            out: Outgoing::Done,
            session: None,
            drained: 0,
            drain_deadline: None,
            stalled_since: None,
        }
    }
}

/// Polls a handler, catching a panic (`Ready(None)`: 500 for that stream only).
pub(crate) fn poll_handler<F: Future<Output = Response>>(
    fut: &mut Pin<Box<F>>,
    cx: &mut Context<'_>,
) -> Poll<Option<Response>> {
    match catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(cx))) {
        Ok(Poll::Ready(r)) => Poll::Ready(Some(r)),
        Ok(Poll::Pending) => Poll::Pending,
        Err(_) => Poll::Ready(None),
    }
}

pub(crate) fn internal_error() -> Response {
    Error::new(StatusCode::INTERNAL_SERVER_ERROR, "internal server error").into_response()
}
