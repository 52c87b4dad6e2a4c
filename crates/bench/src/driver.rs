//! The HTTP/1.1 connection driver: the one module that joins a [`Transport`] and the response
//! reader. It runs the requests of one connection slot, reconnecting as needed, until the run
//! ends or the budget is spent.
//!
//! One exchange is: write a batch of requests (1, or the pipeline depth) with one write, then
//! read and parse responses straight from the read buffer until all of them are in. In rate
//! mode each exchange is one request, started at its scheduled time. Nothing is allocated per
//! request: the request bytes are a slice of the pre-encoded ring, the read buffer is reused,
//! and the reader keeps its state in place.

use std::time::Instant;

use crate::config::ResponseView;
use crate::h1::{ResponseReader, Step};
use crate::stats::ErrorKind;
use crate::transport::Transport;
use crate::worker::{micros_between, Slot, WorkerCtx};

/// Read buffer per connection: room for 16 pipelined responses many times over, and for the
/// largest head `volt_proto` accepts (16 KiB) plus what follows it.
const READ_BUFFER: usize = 32 * 1024;
/// When less than this is free at the end of the buffer, unread bytes move to its front.
const MIN_READ_ROOM: usize = 4096;
/// Closed loop: pause after a failed connect, so a dead server is not hammered in a spin.
pub(crate) const CONNECT_BACKOFF: std::time::Duration = std::time::Duration::from_millis(10);

/// The per-connection state of the driver: buffer, reader, and what this connection did.
struct ConnState {
    /// Initialized once and reused; `buf[start..end]` holds bytes read and not yet used.
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    reader: ResponseReader,
}

impl ConnState {
    fn new() -> ConnState {
        ConnState {
            buf: vec![0; READ_BUFFER].into_boxed_slice(),
            start: 0,
            end: 0,
            reader: ResponseReader::new(),
        }
    }

    /// Forgets the previous connection's bytes and state; keeps the buffer's memory.
    fn reset(&mut self) {
        self.start = 0;
        self.end = 0;
        self.reader = ResponseReader::new();
    }

    /// Drops the used bytes and makes room at the end for the next read.
    fn make_room(&mut self) {
        make_room(&mut self.buf, &mut self.start, &mut self.end, MIN_READ_ROOM);
    }
}

/// Drops the used bytes of a read buffer (`buf[..start]`; `buf[start..end]` is unread) and,
/// when less than `min_room` is free at its end, moves the unread bytes to its front.
#[inline]
pub(crate) fn make_room(buf: &mut [u8], start: &mut usize, end: &mut usize, min_room: usize) {
    if *start == *end {
        *start = 0;
        *end = 0;
    } else if buf.len() - *end < min_room {
        buf.copy_within(*start..*end, 0);
        *end -= *start;
        *start = 0;
    }
}

/// When the requests of an exchange were started, for the latencies.
#[derive(Clone, Copy)]
struct Timing {
    /// Latency is measured from here: the scheduled time in rate mode, else the actual start.
    from: Instant,
    /// The actual start (connect without keep-alive, else the write), for the service time.
    started: Instant,
    rate_mode: bool,
}

/// How an exchange ended.
enum Outcome {
    /// Every request was answered; the connection can carry more.
    Reusable,
    /// The server ended the connection in order after a response (`Connection: close`, or a
    /// body delimited by the close); `unanswered` requests got no response and are not failed.
    Closed { unanswered: usize },
    /// The connection failed; the first unanswered request counts as an error of `kind`.
    Failed { kind: ErrorKind, unanswered: usize },
}

/// Responses counted but not yet handed to the recorder. Responses completed by one read of
/// one batch share its clock reading and start time, hence one latency: they are recorded
/// together, with one borrow of the recorder and one histogram update per read rather than per
/// response. Statuses are kept as a run of one code (a change flushes the run).
#[derive(Default)]
struct Tally {
    n: u64,
    status: u16,
    status_run: u64,
}

impl Tally {
    #[inline]
    fn add(&mut self, ctx: &WorkerCtx, status: u16, timing: Timing) {
        if status != self.status && self.status_run > 0 {
            if timing.from >= ctx.measure_start {
                ctx.rec.borrow_mut().status(self.status, self.status_run);
            }
            self.status_run = 0;
        }
        self.status = status;
        self.status_run += 1;
        self.n += 1;
    }

    /// Records what was counted, with latency up to `now`. Warm-up responses are dropped.
    ///
    /// The check for nothing counted stays inline (the loop flushes before its first read,
    /// when nothing can be counted yet); the recording is one call.
    #[inline(always)]
    fn flush(&mut self, ctx: &WorkerCtx, now: Instant, timing: Timing) {
        if self.n > 0 {
            self.record(ctx, now, timing);
        }
    }

    #[inline(never)]
    fn record(&mut self, ctx: &WorkerCtx, now: Instant, timing: Timing) {
        if timing.from >= ctx.measure_start {
            let latency = micros_between(timing.from, now);
            let rate = timing.rate_mode.then(|| {
                (
                    micros_between(timing.started, now),
                    micros_between(timing.from, timing.started),
                )
            });
            let mut rec = ctx.rec.borrow_mut();
            rec.responses(latency, self.n, rate);
            rec.status(self.status, self.status_run);
            drop(rec);
            ctx.last_response.set(Some(now));
        }
        self.n = 0;
        self.status_run = 0;
    }
}

/// Drives `slot` until the run ends for it. `conn` is a connection opened beforehand, if any.
pub(crate) async fn drive<T: Transport>(ctx: &WorkerCtx, slot: &Slot, mut conn: Option<T>) {
    let plan = &*ctx.plan;
    let mut state = ConnState::new();
    let mut sleep = plan.rate.map(|_| volt_rt::time::sleep_until(ctx.start));
    loop {
        // What to send, and from when its latency counts. `clock` is read once here and
        // serves as the start of a closed-loop batch (clock reads are a visible share of the
        // client's own CPU time).
        let (count, scheduled, clock) = match &mut sleep {
            None => {
                let clock = Instant::now();
                if ctx.end.is_some_and(|end| clock >= end) {
                    return;
                }
                let owed = slot.owed.get();
                let count = if owed > 0 {
                    let n = owed.min(plan.pipeline);
                    slot.owed.set(owed - n);
                    n
                } else {
                    plan.budget.claim(plan.pipeline)
                };
                if count == 0 {
                    return;
                }
                (count, None, clock)
            }
            Some(sleep) => {
                let k = slot.next_send.get();
                let at = ctx.scheduled(slot.index, k);
                if ctx.end.is_some_and(|end| at >= end) {
                    return;
                }
                let owed = slot.owed.get();
                if owed > 0 {
                    slot.owed.set(owed - 1);
                } else if plan.budget.claim(1) == 0 {
                    return;
                }
                if Instant::now() < at {
                    sleep.reset(at);
                    sleep.await;
                }
                // Counted as made only once it is due: the window can end during the sleep
                // (the controller may read the clock past the end before this timer fires),
                // and a send still ahead then is one of the requests unanswered at the end.
                slot.next_send.set(k + 1);
                (1, Some(at), Instant::now())
            }
        };

        let mut started = clock;
        if conn.is_none() {
            slot.connecting.set(true);
            slot.waiting_since.set(Some(started));
            let result = T::open(plan).await;
            slot.connecting.set(false);
            slot.waiting_since.set(None);
            match result {
                Ok(c) => {
                    conn = Some(c);
                    state.reset();
                    ctx.rec.borrow_mut().counts.connections += 1;
                }
                Err(_) => {
                    ctx.errors(ErrorKind::Connect, scheduled.unwrap_or(started), 1);
                    // In `--requests` mode the request that could not be sent is finished (as
                    // an error); the rest of the batch is still owed.
                    if plan.budget.is_limited() {
                        slot.owed.set(slot.owed.get() + count - 1);
                    }
                    if scheduled.is_none() {
                        volt_rt::time::sleep(CONNECT_BACKOFF).await;
                    }
                    continue;
                }
            }
            // With keep-alive, a reconnect is not part of the next request's latency;
            // without it, opening the connection is (as with `ab`).
            if plan.keepalive {
                started = Instant::now();
            }
        }
        let Some(c) = conn.as_ref() else {
            unreachable!("connected above")
        };
        let timing = Timing {
            from: scheduled.unwrap_or(started),
            started,
            rate_mode: scheduled.is_some(),
        };
        // Write the batch, then read and take responses until all of them are in.
        let (mut exchange, bytes) = Exchange::start(ctx, slot, count, timing);
        let outcome = if let Err(kind) = c.write_all(bytes).await.map_err(|e| failure_kind(&e)) {
            exchange.write_failed(kind)
        } else {
            loop {
                if let Some(outcome) = exchange.take_responses(ctx, slot, &mut state) {
                    break outcome;
                }
                let look_first = exchange.check_for_close(&state);
                let room = &mut state.buf[state.end..];
                let room_len = room.len();
                let read = if look_first {
                    match c.try_read(room) {
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => c.read(room).await,
                        other => other,
                    }
                } else {
                    c.read(room).await
                };
                if let Some(outcome) = exchange.read_done(ctx, &mut state, read, room_len) {
                    break outcome;
                }
            }
        };
        slot.waiting_since.set(None);
        slot.in_flight.set(0);
        match outcome {
            Outcome::Reusable if plan.keepalive => continue,
            Outcome::Reusable => {}
            Outcome::Closed { unanswered } => {
                if plan.budget.is_limited() {
                    slot.owed.set(slot.owed.get() + unanswered);
                }
            }
            Outcome::Failed { kind, unanswered } => {
                // With `--requests`, the request that failed is finished and the rest of the
                // batch is sent again; in a timed run every unanswered request of it failed.
                if plan.budget.is_limited() {
                    ctx.errors(kind, timing.from, 1);
                    slot.owed.set(slot.owed.get() + unanswered - 1);
                } else {
                    ctx.errors(kind, timing.from, unanswered as u64);
                }
            }
        }
        conn = None;
    }
}

/// One exchange in progress: a batch written, its responses being read.
///
/// Its steps are plain functions and [`drive`] does the awaiting between them: an `async fn`
/// per exchange would build a future (and move it into `drive`'s) for every request, and add
/// one more level to resume on every read.
struct Exchange {
    timing: Timing,
    /// Requests of the batch not answered yet.
    remaining: usize,
    /// The ring position of the next request to be answered.
    cursor: usize,
    /// The clock reading that times the responses parsed next. Responses already buffered
    /// cannot answer requests only just written, so this is the batch's start until the first
    /// read sets it.
    now: Instant,
    /// Set after a read that did not fill the buffer. volt-rt then treats the socket as drained
    /// and waits for the next epoll edge, but a FIN that arrived together with that data brings
    /// no further edge. So when such a read left part of a response (a body delimited by the
    /// close, a truncated body), one non-blocking read checks for the end first. Between whole
    /// responses it does not: servers that send pipelined responses one by one would pay an
    /// EAGAIN per segment, and a close there without `Connection: close` is caught by the
    /// timeout instead.
    short_read: bool,
    tally: Tally,
}

impl Exchange {
    /// Starts an exchange of `count` requests from the slot's cursor: counts them as sent and
    /// returns the bytes to write.
    fn start<'p>(
        ctx: &'p WorkerCtx,
        slot: &Slot,
        count: usize,
        timing: Timing,
    ) -> (Exchange, &'p [u8]) {
        let plan = &*ctx.plan;
        let cursor = slot.cursor.get();
        let bytes = plan.ring.window(cursor, count);
        slot.in_flight.set(count);
        slot.waiting_since.set(Some(timing.started));
        {
            let mut rec = ctx.rec.borrow_mut();
            rec.counts.bytes_written += bytes.len() as u64;
            if timing.from >= ctx.measure_start {
                rec.counts.sent += count as u64;
            }
        }
        let exchange = Exchange {
            timing,
            remaining: count,
            cursor,
            now: timing.started,
            short_read: false,
            tally: Tally::default(),
        };
        (exchange, bytes)
    }

    /// The write of the batch failed.
    fn write_failed(&self, kind: ErrorKind) -> Outcome {
        Outcome::Failed {
            kind,
            unanswered: self.remaining,
        }
    }

    /// Takes every complete response in the buffer and records them; `Some` when the exchange
    /// is over, else the buffer has room for the next read.
    fn take_responses(
        &mut self,
        ctx: &WorkerCtx,
        slot: &Slot,
        state: &mut ConnState,
    ) -> Option<Outcome> {
        let plan = &*ctx.plan;
        let timing = self.timing;
        while self.remaining > 0 && state.start < state.end {
            let cursor = self.cursor;
            let input = &state.buf[state.start..state.end];
            let head_request = plan.ring.is_head(cursor);
            let step = match &plan.inspect {
                None => state.reader.step(input, head_request, &mut |_, _| {}),
                Some(f) => state.reader.step(input, head_request, &mut |head, bytes| {
                    f(&ResponseView::new(cursor, head, bytes))
                }),
            };
            match step {
                Ok(Step::Done(used, response)) => {
                    state.start += used;
                    self.remaining -= 1;
                    self.cursor = plan.ring.advance(cursor, 1);
                    slot.cursor.set(self.cursor);
                    slot.in_flight.set(self.remaining);
                    self.tally.add(ctx, response.status, timing);
                    if !response.keep_alive {
                        self.tally.flush(ctx, self.now, timing);
                        return Some(Outcome::Closed {
                            unanswered: self.remaining,
                        });
                    }
                }
                Ok(Step::NeedMore(used)) => {
                    state.start += used;
                    break;
                }
                Err(_) => {
                    self.tally.flush(ctx, self.now, timing);
                    return Some(Outcome::Failed {
                        kind: ErrorKind::Parse,
                        unanswered: self.remaining,
                    });
                }
            }
        }
        self.tally.flush(ctx, self.now, timing);
        state.make_room();
        if self.remaining == 0 {
            return Some(Outcome::Reusable);
        }
        if state.end == state.buf.len() {
            // A head longer than the buffer: `parse_response` rejects it before this, so this
            // only guards the arithmetic.
            return Some(Outcome::Failed {
                kind: ErrorKind::Parse,
                unanswered: self.remaining,
            });
        }
        None
    }

    /// Whether the next read should first look without waiting (see `short_read`).
    fn check_for_close(&self, state: &ConnState) -> bool {
        self.short_read && (state.start < state.end || !state.reader.is_between_responses())
    }

    /// Takes the result of a read into the buffer's free room (`room` bytes of it); `Some`
    /// when the exchange is over.
    fn read_done(
        &mut self,
        ctx: &WorkerCtx,
        state: &mut ConnState,
        read: std::io::Result<usize>,
        room: usize,
    ) -> Option<Outcome> {
        match read {
            Ok(0) => Some(at_close(ctx, state, self.remaining, self.timing)),
            Ok(n) => {
                state.end += n;
                self.short_read = n < room;
                ctx.rec.borrow_mut().counts.bytes_read += n as u64;
                self.now = Instant::now();
                None
            }
            Err(e) => Some(Outcome::Failed {
                kind: failure_kind(&e),
                unanswered: self.remaining,
            }),
        }
    }
}

/// The server closed the connection while `remaining` requests were unanswered.
fn at_close(ctx: &WorkerCtx, state: &mut ConnState, remaining: usize, timing: Timing) -> Outcome {
    if !state.reader.is_between_responses() {
        // A body delimited by the close ends here; any other body was cut short.
        return match state.reader.finish_at_close() {
            Some(response) => {
                let mut tally = Tally::default();
                tally.add(ctx, response.status, timing);
                tally.flush(ctx, Instant::now(), timing);
                Outcome::Closed {
                    unanswered: remaining - 1,
                }
            }
            None => Outcome::Failed {
                kind: ErrorKind::Closed,
                unanswered: remaining,
            },
        };
    }
    // No response, or part of its head: the request was written on a connection the server
    // had closed, or the server closed it before answering. It failed, like one cut off by a reset (which of the
    // two a client sees is a race between the server's FIN and its RST, see `failure_kind`).
    Outcome::Failed {
        kind: ErrorKind::Closed,
        unanswered: remaining,
    }
}

/// The kind of error a failed read or write counts as. A reset or a broken pipe is the server
/// ending the connection, as a close is: all three are `Closed`, so the same server behaviour
/// gives the same count whichever of them won the race. (A server that answers and closes
/// without `Connection: close` sends a FIN; a request already on its way then meets a reset,
/// and the client's next read sees either.)
#[cold]
pub(crate) fn failure_kind(e: &std::io::Error) -> ErrorKind {
    use std::io::ErrorKind as Io;
    match e.kind() {
        Io::ConnectionReset | Io::ConnectionAborted | Io::BrokenPipe => ErrorKind::Closed,
        _ => ErrorKind::Io,
    }
}
