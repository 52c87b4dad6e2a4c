//! The HTTP/2 connection driver: joins a [`Transport`] and the sans-I/O [`Connection`]. It
//! runs the requests of one connection slot, as up to `--streams` concurrent streams on one
//! connection, reconnecting as needed, until the run ends or the budget is spent.
//!
//! One task per slot waits on three things at once: the socket taking queued frames, the
//! socket having bytes, and (in rate mode, with a stream free) the next scheduled send. Each
//! wake-up takes every whole frame read, records the streams that ended, opens streams for the
//! free slots, and queues their frames for one write. Nothing is allocated per request: the
//! header blocks are encoded once, the stream table and the buffers are reused.

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::task::Poll;
use std::time::Instant;

use volt_rt::time::Sleep;

use super::conn::{Connection, Event, ProtocolError, MAX_FRAME_BYTES};
use super::streams::Stream;
use crate::driver::{failure_kind, make_room, CONNECT_BACKOFF};
use crate::stats::ErrorKind;
use crate::transport::{Connect, Transport};
use crate::worker::{micros_between, Slot, WorkerCtx};

/// Read buffer per connection: two of the largest frames we accept.
const READ_BUFFER: usize = 2 * MAX_FRAME_BYTES;

/// A request claimed (from the budget, or a scheduled send) and not yet on a stream.
#[derive(Clone, Copy)]
pub(crate) struct Claim {
    /// Rate mode: its scheduled time.
    pub at: Option<Instant>,
    /// Rate mode: the number of its scheduled send.
    pub send: u64,
    /// When it was claimed: the slot waits from here while it connects.
    pub claimed: Instant,
}

/// What a slot keeps across its connections: buffers and protocol state, reused.
struct SlotState {
    conn: Connection,
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    /// `conn.out[..written]` went out already.
    written: usize,
    /// The last read did not fill the buffer (see the HTTP/1 driver's `short_read`).
    short_read: bool,
    /// No more requests to open: the budget is spent or the run's end passed.
    no_more: bool,
}

/// How a connection ended.
enum End {
    /// The slot has nothing more to send.
    Done,
    /// Open another connection.
    Again,
}

/// What woke the driver.
enum Wake {
    Read(std::io::Result<usize>),
    WriteFailed(std::io::Error),
    Timer,
}

/// Drives `slot` until the run ends for it. `conn` is a connection opened beforehand, if any.
pub(crate) async fn drive<T: Transport>(ctx: &WorkerCtx, slot: &Slot, mut conn: Option<T>) {
    let plan = &*ctx.plan;
    let mut state = SlotState {
        conn: Connection::new(plan.streams),
        buf: vec![0; READ_BUFFER].into_boxed_slice(),
        start: 0,
        end: 0,
        written: 0,
        short_read: false,
        no_more: false,
    };
    let mut sleep = volt_rt::time::sleep_until(ctx.start);
    // Requests of an earlier task of this slot were counted when it was replaced.
    slot.sends.borrow_mut().clear();
    loop {
        // Every connection carries at least one request, claimed before it is opened (as on
        // HTTP/1): a connect or handshake that fails is that request failing.
        let Some(first) = claim(ctx, slot, &mut sleep).await else {
            return;
        };
        let Some(c) = connection(ctx, slot, first, conn.take()).await else {
            continue;
        };
        match run(ctx, slot, &c, &mut state, first, &mut sleep).await {
            End::Done => return,
            End::Again if !state.conn.is_settled() => backoff(ctx).await,
            End::Again => {}
        }
    }
}

/// The connection to send the claimed request `first` on: `conn`, or a new one. `None`: the
/// connect failed, which is `first` failing (after a pause in a closed loop).
pub(crate) async fn connection<T: Connect>(
    ctx: &WorkerCtx,
    slot: &Slot,
    first: Claim,
    conn: Option<T>,
) -> Option<T> {
    slot.in_flight.set(1);
    slot.waiting_since.set(Some(first.claimed));
    if conn.is_some() {
        return conn;
    }
    slot.connecting.set(true);
    let result = T::connect(&ctx.plan).await;
    slot.connecting.set(false);
    match result {
        Ok(c) => {
            ctx.rec.borrow_mut().counts.connections += 1;
            Some(c)
        }
        Err(_) => {
            fail_claim(ctx, slot, first, ErrorKind::Connect);
            backoff(ctx).await;
            None
        }
    }
}

/// Claims the next request: from what the slot owes or the budget; in rate mode the next
/// scheduled send, waited for. `None`: the slot is done.
pub(crate) async fn claim(ctx: &WorkerCtx, slot: &Slot, sleep: &mut Sleep) -> Option<Claim> {
    let plan = &*ctx.plan;
    let now = Instant::now();
    if plan.rate.is_none() {
        if ctx.end.is_some_and(|end| now >= end) || !take_one(ctx, slot) {
            return None;
        }
        return Some(Claim {
            at: None,
            send: 0,
            claimed: now,
        });
    }
    let k = slot.next_send.get();
    let at = ctx.scheduled(slot.index, k);
    if ctx.end.is_some_and(|end| at >= end) || !take_one(ctx, slot) {
        return None;
    }
    slot.next_send.set(k + 1);
    slot.sends.borrow_mut().push(k);
    if now < at {
        sleep.reset(at);
        sleep.await;
    }
    Some(Claim {
        at: Some(at),
        send: k,
        claimed: Instant::now(),
    })
}

/// Takes one request from what the slot owes, else from the budget.
pub(crate) fn take_one(ctx: &WorkerCtx, slot: &Slot) -> bool {
    let owed = slot.owed.get();
    if owed > 0 {
        slot.owed.set(owed - 1);
        return true;
    }
    ctx.plan.budget.claim(1) == 1
}

/// A claimed request failed before it was sent.
pub(crate) fn fail_claim(ctx: &WorkerCtx, slot: &Slot, claim: Claim, kind: ErrorKind) {
    ctx.errors(kind, claim.at.unwrap_or(claim.claimed), 1);
    forget_send(ctx, slot, claim.send);
    slot.in_flight.set(0);
    slot.waiting_since.set(None);
}

/// A claimed request the server will not process (a GOAWAY came first): sent again with
/// `--requests`; in a timed run dropped, as HTTP/1 drops the requests pipelined after a
/// response that closed the connection.
pub(crate) fn give_back(ctx: &WorkerCtx, slot: &Slot, send: u64) {
    if ctx.plan.budget.is_limited() {
        slot.owed.set(slot.owed.get() + 1);
    }
    forget_send(ctx, slot, send);
}

/// Records a response that came whole at `now` to a request sent at `started`, whose latency
/// counts `from` (its scheduled time in rate mode), on one of the slot's streams.
pub(crate) fn record_response(
    ctx: &WorkerCtx,
    slot: &Slot,
    (from, started): (Instant, Instant),
    status: u16,
    send: u64,
    now: Instant,
) {
    if from >= ctx.measure_start {
        let latency = micros_between(from, now);
        let rate = ctx
            .plan
            .rate
            .is_some()
            .then(|| (micros_between(started, now), micros_between(from, started)));
        let mut rec = ctx.rec.borrow_mut();
        rec.responses(latency, 1, rate);
        rec.status(status, 1);
        drop(rec);
        ctx.last_response.set(Some(now));
    }
    forget_send(ctx, slot, send);
}

/// A request on one of the slot's streams failed with `kind` (its stream was reset).
pub(crate) fn fail_stream(ctx: &WorkerCtx, slot: &Slot, kind: ErrorKind, from: Instant, send: u64) {
    ctx.errors(kind, from, 1);
    forget_send(ctx, slot, send);
}

/// The connection failed or closed: every request on it that has no answer failed (each
/// once; `in_flight` gives each one's latency start and scheduled send), and a claimed request
/// not yet sent fails with them.
pub(crate) fn fail_connection(
    ctx: &WorkerCtx,
    slot: &Slot,
    in_flight: impl Iterator<Item = (Instant, u64)>,
    pending: Option<Claim>,
    kind: ErrorKind,
) {
    for (from, send) in in_flight {
        fail_stream(ctx, slot, kind, from, send);
    }
    if let Some(claim) = pending {
        fail_claim(ctx, slot, claim, kind);
    }
    slot.in_flight.set(0);
    slot.waiting_since.set(None);
}

/// Rate mode: send `k` is no longer in flight.
pub(crate) fn forget_send(ctx: &WorkerCtx, slot: &Slot, k: u64) {
    if ctx.plan.rate.is_some() {
        let mut sends = slot.sends.borrow_mut();
        if let Some(i) = sends.iter().position(|&s| s == k) {
            sends.swap_remove(i);
        }
    }
}

/// Closed loop: a pause after a connection that failed before its SETTINGS, so a dead or
/// broken server is not hammered in a spin. (In rate mode the schedule paces the retries.)
pub(crate) async fn backoff(ctx: &WorkerCtx) {
    if ctx.plan.rate.is_none() {
        volt_rt::time::sleep(CONNECT_BACKOFF).await;
    }
}

/// Runs one connection until it ends, starting with the claimed request `first`.
async fn run<T: Transport>(
    ctx: &WorkerCtx,
    slot: &Slot,
    c: &T,
    state: &mut SlotState,
    first: Claim,
    sleep: &mut Sleep,
) -> End {
    state.conn.reset();
    state.start = 0;
    state.end = 0;
    state.written = 0;
    state.short_read = false;
    state.no_more = false;
    let mut first = Some(first);
    loop {
        let mut timer = false;
        if let Some(claim) = first {
            if state.conn.is_ending() {
                give_back(ctx, slot, claim.send);
                first = None;
            } else if state.conn.free() > 0 {
                open(ctx, slot, &mut state.conn, claim, Instant::now());
                first = None;
            }
        }
        if first.is_none() && state.conn.free() > 0 {
            timer = fill(ctx, slot, state, sleep);
        }
        let open = state.conn.streams.open();
        slot.in_flight.set(open + usize::from(first.is_some()));
        slot.waiting_since
            .set(match (state.conn.streams.oldest(), first) {
                (Some(s), _) => Some(s.started),
                (None, Some(claim)) => Some(claim.claimed),
                (None, None) => None,
            });
        if open == 0 && first.is_none() {
            if state.no_more && slot.owed.get() == 0 {
                return End::Done;
            }
            // A server whose SETTINGS_MAX_CONCURRENT_STREAMS fell to 0 takes nothing more on
            // this connection either.
            if state.conn.is_ending() || state.conn.is_settled() && state.conn.free() == 0 {
                return End::Again;
            }
        }

        let look_first = state.short_read
            && (state.start < state.end || state.conn.is_mid_response() || state.conn.is_ending());
        let mut wrote = 0;
        let wake = {
            let out = &state.conn.out;
            let written = &mut state.written;
            let room = &mut state.buf[state.end..];
            let mut look_first = look_first;
            poll_fn(|cx| {
                while *written < out.len() {
                    match c.poll_write(cx, &out[*written..]) {
                        Poll::Ready(Ok(0)) => {
                            return Poll::Ready(Wake::WriteFailed(
                                std::io::ErrorKind::WriteZero.into(),
                            ))
                        }
                        Poll::Ready(Ok(n)) => {
                            *written += n;
                            wrote += n;
                        }
                        Poll::Ready(Err(e)) => return Poll::Ready(Wake::WriteFailed(e)),
                        Poll::Pending => break,
                    }
                }
                if look_first {
                    look_first = false;
                    match c.try_read(room) {
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                        other => return Poll::Ready(Wake::Read(other)),
                    }
                }
                if let Poll::Ready(read) = c.poll_read(cx, room) {
                    return Poll::Ready(Wake::Read(read));
                }
                if timer && Pin::new(&mut *sleep).poll(cx).is_ready() {
                    return Poll::Ready(Wake::Timer);
                }
                Poll::Pending
            })
            .await
        };
        if wrote > 0 {
            ctx.rec.borrow_mut().counts.bytes_written += wrote as u64;
        }
        if state.written == state.conn.out.len() {
            state.conn.out.clear();
            state.written = 0;
        }
        let room = state.buf.len() - state.end;
        let kind = match wake {
            Wake::Timer => continue,
            Wake::Read(Ok(0)) => ErrorKind::Closed,
            Wake::Read(Ok(n)) => {
                state.end += n;
                state.short_read = n < room;
                ctx.rec.borrow_mut().counts.bytes_read += n as u64;
                match take_frames(ctx, slot, state) {
                    Ok(()) => continue,
                    Err(error) => {
                        // Said once, without waiting for the socket: the connection is done.
                        state.conn.go_away(&error);
                        let rest = &state.conn.out[state.written..];
                        let _ = poll_fn(|cx| Poll::Ready(c.poll_write(cx, rest))).await;
                        ErrorKind::Parse
                    }
                }
            }
            Wake::Read(Err(e)) | Wake::WriteFailed(e) => failure_kind(&e),
        };
        let streams = std::iter::from_fn(|| state.conn.streams.take_where(|_| true));
        fail_connection(ctx, slot, streams.map(|s| (s.from, s.send)), first, kind);
        return End::Again;
    }
}

/// Takes every whole frame in the buffer and records the streams that ended. `Err`: the
/// server broke the protocol.
fn take_frames(ctx: &WorkerCtx, slot: &Slot, state: &mut SlotState) -> Result<(), ProtocolError> {
    let now = Instant::now();
    let input = &state.buf[state.start..state.end];
    let used = state.conn.receive(input, &mut |event| match event {
        Event::Response(s) => {
            record_response(ctx, slot, (s.from, s.started), s.status, s.send, now)
        }
        Event::Reset(s) => fail_stream(ctx, slot, ErrorKind::Reset, s.from, s.send),
        Event::Refused(s) => give_back(ctx, slot, s.send),
    })?;
    state.start += used;
    state.conn.send_bodies(&ctx.plan.h2_requests);
    // Room for a whole frame after what is left of one.
    make_room(
        &mut state.buf,
        &mut state.start,
        &mut state.end,
        MAX_FRAME_BYTES,
    );
    Ok(())
}

/// Opens streams for the free slots of the connection: as many requests as the budget gives
/// in a closed loop; in rate mode every scheduled send that is due. Returns whether the timer
/// is set for the next one.
fn fill(ctx: &WorkerCtx, slot: &Slot, state: &mut SlotState, sleep: &mut Sleep) -> bool {
    let plan = &*ctx.plan;
    let now = Instant::now();
    let conn = &mut state.conn;
    if plan.rate.is_none() {
        if ctx.end.is_some_and(|end| now >= end) {
            state.no_more = true;
            return false;
        }
        let free = conn.free();
        let owed = slot.owed.get();
        let mut n = owed.min(free);
        slot.owed.set(owed - n);
        if n < free && !state.no_more {
            let got = plan.budget.claim(free - n);
            state.no_more = got < free - n;
            n += got;
        }
        let claim = Claim {
            at: None,
            send: 0,
            claimed: now,
        };
        for _ in 0..n {
            open(ctx, slot, conn, claim, now);
        }
        return false;
    }
    while conn.free() > 0 {
        let k = slot.next_send.get();
        let at = ctx.scheduled(slot.index, k);
        if ctx.end.is_some_and(|end| at >= end) {
            state.no_more = true;
            return false;
        }
        if at > now {
            sleep.reset(at);
            return true;
        }
        if !take_one(ctx, slot) {
            state.no_more = true;
            return false;
        }
        slot.next_send.set(k + 1);
        slot.sends.borrow_mut().push(k);
        let claim = Claim {
            at: Some(at),
            send: k,
            claimed: now,
        };
        open(ctx, slot, conn, claim, now);
    }
    false
}

/// Sends a claimed request on a new stream: the next request of the slot's round robin.
fn open(ctx: &WorkerCtx, slot: &Slot, conn: &mut Connection, claim: Claim, now: Instant) {
    let plan = &*ctx.plan;
    let cursor = slot.cursor.get();
    slot.cursor.set(plan.ring.advance(cursor, 1));
    let from = claim.at.unwrap_or(now);
    conn.open(
        &plan.h2_requests[cursor],
        Stream::new(cursor, from, now, claim.send),
    );
    if from >= ctx.measure_start {
        ctx.rec.borrow_mut().counts.sent += 1;
    }
}
