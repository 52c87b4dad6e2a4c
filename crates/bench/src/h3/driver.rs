//! The HTTP/3 connection driver: the one module that joins a QUIC connection ([`QuicConn`]) and
//! the HTTP/3 client state ([`H3Conn`]). It runs the requests of one connection slot, up to
//! `--streams` at once, each on a QUIC stream of its own, reconnecting as needed, until the run
//! ends or the budget is spent.
//!
//! It counts the way the HTTP/2 driver does (and shares its claims): each request once, a
//! stream the server resets as `reset`, one it refused (H3_REQUEST_REJECTED, or past a
//! GOAWAY) sent again with `--requests` and dropped uncounted in a timed run, a malformed
//! response as `parse`; a connection that breaks fails each request on it once (`closed`,
//! `timeout` for QUIC's idle timeout, `io`), and one the server broke the protocol on is
//! closed with the error's code, its requests failing as `parse`. Bytes are UDP payloads.

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::task::Poll;
use std::time::Instant;

use quinn_proto::ConnectionError;
use volt_rt::time::Sleep;

use super::conn::{Event, H3Conn, Request};
use super::quic::{Pumped, QuicConn};
use crate::driver::failure_kind;
use crate::h2::{
    backoff, claim, connection, fail_claim, fail_connection, fail_stream, give_back,
    record_response, Claim,
};
use crate::stats::ErrorKind;
use crate::worker::{Slot, WorkerCtx};

/// How a connection ended.
enum End {
    /// The slot has nothing more to send.
    Done,
    /// Open another connection (after a GOAWAY).
    Again,
    /// The connection failed: open another after a pause (closed loop).
    Failed,
}

/// Drives `slot` until the run ends for it. `conn` is a connection opened beforehand, if any.
pub(crate) async fn drive(ctx: &WorkerCtx, slot: &Slot, mut conn: Option<QuicConn>) {
    let plan = &*ctx.plan;
    let mut h3 = H3Conn::new(plan.streams);
    let mut sleep = volt_rt::time::sleep_until(ctx.start);
    // Requests of an earlier task of this slot were counted when it was replaced.
    slot.sends.borrow_mut().clear();
    loop {
        // Every connection carries at least one request, claimed before it is opened: a
        // handshake that fails is that request failing.
        let Some(first) = claim(ctx, slot, &mut sleep).await else {
            return;
        };
        let Some(mut c) = connection(ctx, slot, first, conn.take()).await else {
            continue;
        };
        match run(ctx, slot, &mut c, &mut h3, first, &mut sleep).await {
            End::Done => return,
            End::Again => {}
            End::Failed => {
                drop(c);
                backoff(ctx).await;
            }
        }
    }
}

/// Runs one connection until it ends, starting with the claimed request `first`.
async fn run(
    ctx: &WorkerCtx,
    slot: &Slot,
    c: &mut QuicConn,
    h3: &mut H3Conn,
    first: Claim,
    sleep: &mut Sleep,
) -> End {
    let plan = &*ctx.plan;
    if let Err(e) = h3.reset(&mut c.conn) {
        c.close(e.code(), e.reason());
        fail_claim(ctx, slot, first, ErrorKind::Parse);
        return End::Failed;
    }
    // A claimed request not on a stream yet: QUIC's stream limit holds it back.
    let mut pending = Some(first);
    let mut no_more = false;
    loop {
        let now = Instant::now();
        if let Some(claim) = pending.take() {
            if h3.is_ending() {
                give_back(ctx, slot, claim.send);
            } else if h3.free() > 0 {
                pending = open(ctx, slot, c, h3, claim, now).err();
            } else {
                pending = Some(claim);
            }
        }
        let timer = pending.is_none() && fill(ctx, slot, c, h3, &mut pending, &mut no_more);
        if timer {
            sleep.reset(ctx.scheduled(slot.index, slot.next_send.get()));
        }
        let open = h3.open_streams();
        slot.in_flight.set(open + usize::from(pending.is_some()));
        slot.waiting_since.set(match (h3.oldest(), pending) {
            (Some(r), _) => Some(r.started),
            (None, Some(claim)) => Some(claim.claimed),
            (None, None) => None,
        });
        if open == 0 && pending.is_none() {
            if no_more && slot.owed.get() == 0 {
                return End::Done;
            }
            if h3.is_ending() {
                return End::Again;
            }
        }

        // Send what was written, then wait for datagrams, QUIC's timer or the next send.
        let woke = poll_fn(|cx| {
            let pumped = match c.pump(cx) {
                Ok(pumped) => pumped,
                Err(e) => return Poll::Ready(Err(e)),
            };
            record_bytes(ctx, &pumped);
            let due = timer && Pin::new(&mut *sleep).poll(cx).is_ready();
            if pumped.progress || pumped.more || due {
                return Poll::Ready(Ok(pumped.more));
            }
            Poll::Pending
        })
        .await;
        let more = match woke {
            Ok(more) => more,
            Err(e) => {
                fail_all(ctx, slot, h3, pending, failure_kind(&e));
                return End::Failed;
            }
        };
        let now = Instant::now();
        let handled = h3.handle(&mut c.conn, &plan.h3_requests, &mut |event| {
            record(ctx, slot, event, now)
        });
        h3.take_refused(&mut |event| record(ctx, slot, event, now));
        match handled {
            Ok(None) => {}
            Ok(Some(reason)) => {
                fail_all(ctx, slot, h3, pending, lost_kind(&reason));
                return End::Failed;
            }
            Err(error) => {
                // Said once, without waiting: the connection is done.
                c.close(error.code(), error.reason());
                fail_all(ctx, slot, h3, pending, ErrorKind::Parse);
                return End::Failed;
            }
        }
        if more {
            // A full batch of datagrams: let the worker's other connections run too.
            volt_rt::yield_now().await;
        }
    }
}

/// Sends as many requests as the connection has room for: in a closed loop as many as the
/// budget gives; in rate mode every scheduled send that is due. Returns whether it stopped at
/// a send still ahead (the timer is to be set for it).
fn fill(
    ctx: &WorkerCtx,
    slot: &Slot,
    c: &mut QuicConn,
    h3: &mut H3Conn,
    pending: &mut Option<Claim>,
    no_more: &mut bool,
) -> bool {
    let plan = &*ctx.plan;
    let now = Instant::now();
    while pending.is_none() && h3.free() > 0 {
        let claim = if plan.rate.is_none() {
            if ctx.end.is_some_and(|end| now >= end) {
                *no_more = true;
                return false;
            }
            let owed = slot.owed.get();
            if owed > 0 {
                slot.owed.set(owed - 1);
            } else if *no_more || plan.budget.claim(1) == 0 {
                *no_more = true;
                return false;
            }
            Claim {
                at: None,
                send: 0,
                claimed: now,
            }
        } else {
            let k = slot.next_send.get();
            let at = ctx.scheduled(slot.index, k);
            if ctx.end.is_some_and(|end| at >= end) {
                *no_more = true;
                return false;
            }
            if at > now {
                return true;
            }
            if !crate::h2::take_one(ctx, slot) {
                *no_more = true;
                return false;
            }
            slot.next_send.set(k + 1);
            slot.sends.borrow_mut().push(k);
            Claim {
                at: Some(at),
                send: k,
                claimed: now,
            }
        };
        *pending = open(ctx, slot, c, h3, claim, now).err();
    }
    false
}

/// Sends a claimed request on a new stream: the next request of the slot's round robin.
/// Gives the claim back when QUIC's stream limit holds it.
fn open(
    ctx: &WorkerCtx,
    slot: &Slot,
    c: &mut QuicConn,
    h3: &mut H3Conn,
    claim: Claim,
    now: Instant,
) -> Result<(), Claim> {
    let plan = &*ctx.plan;
    let cursor = slot.cursor.get();
    let from = claim.at.unwrap_or(now);
    let request = Request {
        cursor,
        from,
        started: now,
        send: claim.send,
        status: 0,
    };
    h3.open(&mut c.conn, &plan.h3_requests[cursor], request)
        .map_err(|_| claim)?;
    slot.cursor.set(plan.ring.advance(cursor, 1));
    if from >= ctx.measure_start {
        ctx.rec.borrow_mut().counts.sent += 1;
    }
    Ok(())
}

/// Counts a request that ended.
fn record(ctx: &WorkerCtx, slot: &Slot, event: Event, now: Instant) {
    match event {
        Event::Response(r) => {
            record_response(ctx, slot, (r.from, r.started), r.status, r.send, now)
        }
        Event::Reset(r) => fail_stream(ctx, slot, ErrorKind::Reset, r.from, r.send),
        Event::Malformed(r) => fail_stream(ctx, slot, ErrorKind::Parse, r.from, r.send),
        Event::Refused(r) => give_back(ctx, slot, r.send),
    }
}

/// The connection failed or closed: its requests fail with `kind` (`fail_connection`).
fn fail_all(
    ctx: &WorkerCtx,
    slot: &Slot,
    h3: &mut H3Conn,
    pending: Option<Claim>,
    kind: ErrorKind,
) {
    let in_flight = h3.take_all().map(|r| (r.from, r.send));
    fail_connection(ctx, slot, in_flight, pending, kind);
}

fn record_bytes(ctx: &WorkerCtx, pumped: &Pumped) {
    if pumped.bytes_read > 0 || pumped.bytes_written > 0 {
        let mut rec = ctx.rec.borrow_mut();
        rec.counts.bytes_read += pumped.bytes_read;
        rec.counts.bytes_written += pumped.bytes_written;
    }
}

/// How a lost connection counts: QUIC's idle timeout as a timeout, the server closing it (or
/// resetting it) as `closed`, anything else (a QUIC protocol violation) as `io`.
fn lost_kind(reason: &ConnectionError) -> ErrorKind {
    match reason {
        ConnectionError::TimedOut => ErrorKind::Timeout,
        ConnectionError::ApplicationClosed(_)
        | ConnectionError::ConnectionClosed(_)
        | ConnectionError::Reset => ErrorKind::Closed,
        _ => ErrorKind::Io,
    }
}
