//! One worker thread of a run: its connection slots, its recorder, and the controller that
//! starts, times out, ticks and stops them.
//!
//! Every connection is a *slot*: the state that outlives any one TCP connection (where the
//! round robin is, how many requests it owes, when its next request is scheduled) and a task
//! that drives connections for it. The worker's main future is the controller. It sleeps until
//! the next of: the one-second tick (interval histograms to the collector), the end of the run,
//! or the next timeout check. A request that waited longer than the timeout gets its task
//! aborted and a fresh task (and connection) started for the slot, so the hot path arms no
//! timer per request.

use std::cell::{Cell, RefCell};
use std::future::{poll_fn, Future};
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Barrier, Mutex};
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

use volt_rt::net::TcpStream;
use volt_rt::JoinHandle;

use crate::collect::{Msg, Tick};
use crate::config::{InspectFn, Protocol, Stop};
use crate::h3::QuicConn;
use crate::request::RequestRing;
use crate::stats::{micros, ErrorKind, Latencies, Recorder};
use crate::tls::{TlsSetup, TlsStream};
use crate::transport::Connect;

/// How often the controller sends interval histograms.
pub(crate) const TICK: Duration = Duration::from_secs(1);

/// How long the connects opened before the clock starts are waited for (or the timeout, if
/// shorter). One still pending then is left to its slot, which waits for it during the run.
const CONNECT_WAIT: Duration = Duration::from_secs(1);
/// How often that wait looks whether another worker has a connection open.
const CONNECT_POLL: Duration = Duration::from_millis(10);

/// What the workers of one level share. Read-only but for the request budget and the start.
pub(crate) struct Plan {
    pub level: usize,
    pub addr: SocketAddr,
    pub ring: RequestRing,
    pub pipeline: usize,
    /// HTTP/2: streams in flight per connection, and the requests as header blocks.
    pub streams: usize,
    pub h2_requests: Vec<crate::h2::H2Request>,
    /// HTTP/3: the requests as request-stream bytes.
    pub h3_requests: Vec<crate::h3::H3Request>,
    pub connections: usize,
    pub workers: usize,
    pub rate: Option<f64>,
    pub keepalive: bool,
    pub timeout: Duration,
    pub stop: Stop,
    pub warmup: Duration,
    pub inspect: Option<InspectFn>,
    pub stop_on_signal: bool,
    pub protocol: Protocol,
    /// `https://` targets: how connections are opened.
    pub tls: Option<TlsSetup>,
    pub budget: Budget,
    pub collector: Option<mpsc::Sender<Msg>>,
    /// Workers connect their slots, then meet here; the last one in fixes the start time.
    pub barrier: Barrier,
    pub start: Mutex<Option<Instant>>,
    /// Connections opened before the start, over all workers.
    pub connected: AtomicUsize,
    /// The first error of those connects.
    pub connect_error: Mutex<Option<std::io::Error>>,
}

/// Requests left to hand out in `--requests` mode.
#[derive(Debug)]
pub(crate) struct Budget(Option<AtomicU64>);

impl Budget {
    pub(crate) fn new(stop: Stop) -> Budget {
        Budget(match stop {
            Stop::Requests(n) => Some(AtomicU64::new(n)),
            Stop::Duration(_) => None,
        })
    }

    /// Takes up to `want` requests; 0 when none are left. Unlimited in timed runs.
    #[inline]
    pub(crate) fn claim(&self, want: usize) -> usize {
        let Some(left) = &self.0 else { return want };
        let mut current = left.load(Ordering::Relaxed);
        loop {
            if current == 0 {
                return 0;
            }
            let take = current.min(want as u64);
            match left.compare_exchange_weak(
                current,
                current - take,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return take as usize,
                Err(now) => current = now,
            }
        }
    }

    pub(crate) fn is_limited(&self) -> bool {
        self.0.is_some()
    }
}

/// The state of one connection slot that survives reconnects and task restarts.
#[derive(Debug)]
pub(crate) struct Slot {
    /// Index among all connections of the level (sets its phase in rate mode).
    pub index: usize,
    /// When the oldest unanswered request was sent (or the connect began): the controller
    /// times the slot out from here. `None` while idle.
    pub waiting_since: Cell<Option<Instant>>,
    /// The slot is waiting for a connect, not a response.
    pub connecting: Cell<bool>,
    /// Requests written and not answered yet.
    pub in_flight: Cell<usize>,
    /// `--requests` mode: requests claimed from the budget and still to be sent (they were
    /// lost with a connection that closed).
    pub owed: Cell<usize>,
    /// The round-robin position of the next request to send.
    pub cursor: Cell<usize>,
    /// Rate mode: the number of the next scheduled send.
    pub next_send: Cell<u64>,
    /// HTTP/2 rate mode: the numbers of the scheduled sends in flight (claimed, not answered),
    /// for the requests unanswered at the end. (HTTP/1 has at most one: `next_send - 1`,
    /// while `waiting_since` is set.)
    pub sends: RefCell<Vec<u64>>,
    task: RefCell<Option<JoinHandle<()>>>,
}

/// What a worker's tasks share: the plan, the clock marks, the recorder.
pub(crate) struct WorkerCtx {
    pub plan: Arc<Plan>,
    pub worker: usize,
    /// Rate mode: sends are scheduled from here. Closed loop: load starts here.
    pub start: Instant,
    /// Responses to requests sent (scheduled) before this are warm-up, not recorded.
    pub measure_start: Instant,
    /// Timed runs: no request is sent (scheduled) at or after this.
    pub end: Option<Instant>,
    pub rec: RefCell<Recorder>,
    pub last_response: Cell<Option<Instant>>,
    /// Slot tasks alive; the controller is woken when it drops to 0.
    live: Cell<usize>,
    controller: RefCell<Option<Waker>>,
}

impl WorkerCtx {
    /// When send `k` of slot `index` is scheduled: slots take turns, so the whole level sends
    /// one request every `1 / rate` seconds. Computed from `k` each time, so no error builds up.
    #[inline]
    pub(crate) fn scheduled(&self, index: usize, k: u64) -> Instant {
        let rate = self.plan.rate.unwrap_or(1.0);
        let slot_turn = index as f64 + k as f64 * self.plan.connections as f64;
        self.start + Duration::from_nanos((slot_turn / rate * 1e9) as u64)
    }

    /// Records `requests` errors of `kind`, unless they belong to the warm-up.
    pub(crate) fn errors(&self, kind: ErrorKind, started: Instant, requests: u64) {
        if started >= self.measure_start {
            self.rec.borrow_mut().errors(kind, requests);
        }
    }
}

/// What a worker hands back at the end of a level.
#[derive(Debug)]
pub(crate) struct WorkerResult {
    pub latencies: Latencies,
    pub counts: crate::stats::Counts,
    pub status: Vec<u64>,
    /// When the measured window ended for this worker.
    pub stopped_at: Instant,
    pub measure_start: Instant,
    /// Rate mode: sends the schedule had in the measured window.
    pub scheduled: u64,
    /// Stopped early by SIGINT/SIGTERM.
    pub interrupted: bool,
}

impl WorkerResult {
    fn empty(rate_mode: bool, start: Instant) -> WorkerResult {
        WorkerResult {
            latencies: Latencies::new(rate_mode),
            counts: crate::stats::Counts::default(),
            status: vec![0; 1000],
            stopped_at: start,
            measure_start: start,
            scheduled: 0,
            interrupted: false,
        }
    }
}

/// Runs worker `worker` of a level to its end.
pub(crate) async fn run(plan: Arc<Plan>, worker: usize) -> WorkerResult {
    match (plan.protocol, &plan.tls) {
        (Protocol::Http3, _) => run_with::<QuicConn>(plan, worker).await,
        (Protocol::Http1 | Protocol::Http2, None) => run_with::<TcpStream>(plan, worker).await,
        (Protocol::Http1 | Protocol::Http2, Some(_)) => run_with::<TlsStream>(plan, worker).await,
    }
}

/// The slots of `worker`: connections are dealt round robin, connection `i` to worker
/// `i % workers`.
fn slot_indexes(plan: &Plan, worker: usize) -> impl Iterator<Item = usize> {
    (worker..plan.connections).step_by(plan.workers)
}

async fn run_with<T: Connect>(plan: Arc<Plan>, worker: usize) -> WorkerResult {
    let indexes: Vec<usize> = slot_indexes(&plan, worker).collect();
    let rate_mode = plan.rate.is_some();

    // Connect before the clock starts, so the first requests do not pay for it: every slot
    // with keep-alive, only the very first slot without (its connection carries one request).
    // Whether anything connected at all tells an unreachable server from a failing one.
    let connect_start = Instant::now();
    let mut firsts: Vec<FirstConn<T>> = indexes
        .iter()
        .map(|&index| {
            if !(plan.keepalive || index == 0) {
                return FirstConn::None;
            }
            let plan = plan.clone();
            FirstConn::Opening(Opening(volt_rt::spawn(async move {
                match volt_rt::time::timeout(plan.timeout, T::connect(&plan)).await {
                    Ok(result) => result,
                    Err(elapsed) => Err(elapsed.into()),
                }
            })))
        })
        .collect();
    // The wait is bounded so that it cannot stretch a timed run: every connect is waited for
    // up to `CONNECT_WAIT`; past that only while no worker has a connection open, and no
    // longer than the run's duration. A connect left pending goes on in its slot.
    let wait_all = connect_start + plan.timeout.min(CONNECT_WAIT);
    let wait_any = connect_start
        + match plan.stop {
            Stop::Duration(d) => plan.timeout.min(d),
            Stop::Requests(_) => plan.timeout,
        };
    let mut early_errors = 0;
    for first in &mut firsts {
        let FirstConn::Opening(opening) = first else {
            continue;
        };
        let result = loop {
            if opening.0.is_finished() {
                break Some((&mut opening.0).await);
            }
            let now = Instant::now();
            let until = if plan.connected.load(Ordering::Relaxed) > 0 {
                wait_all
            } else {
                wait_any
            };
            if now >= until {
                break None;
            }
            // Looked at again every `CONNECT_POLL`: another worker's connection moves the
            // deadline up.
            let step = (until - now).min(CONNECT_POLL);
            if let Ok(result) = volt_rt::time::timeout(step, &mut opening.0).await {
                break Some(result);
            }
        };
        match result {
            None => {}
            Some(Ok(Ok(conn))) => {
                plan.connected.fetch_add(1, Ordering::Relaxed);
                *first = FirstConn::Open(conn);
            }
            Some(Ok(Err(e))) => {
                early_errors += 1;
                let mut error = plan.connect_error.lock().unwrap_or_else(|e| e.into_inner());
                error.get_or_insert(e);
                *first = FirstConn::None;
            }
            Some(Err(_)) => {
                early_errors += 1;
                *first = FirstConn::None;
            }
        }
    }
    let connected = firsts
        .iter()
        .filter(|c| matches!(c, FirstConn::Open(_)))
        .count() as u64;

    // Every worker blocks here until all have connected: nothing else runs on this thread yet.
    if plan.barrier.wait().is_leader() {
        *plan.start.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
    }
    plan.barrier.wait();
    let start = plan
        .start
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .expect("the barrier leader set the start");
    let measure_start = start + plan.warmup;
    if plan.connected.load(Ordering::Relaxed) == 0 {
        // Nothing accepted a connection: `run` reports the target as unreachable. (Connects
        // still pending are aborted as `firsts` is dropped.)
        if plan
            .connect_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_none()
            && firsts.iter().any(|c| matches!(c, FirstConn::Opening(_)))
        {
            let mut error = plan.connect_error.lock().unwrap_or_else(|e| e.into_inner());
            error.get_or_insert(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "connect not answered",
            ));
        }
        return WorkerResult::empty(rate_mode, start);
    }
    let end = match plan.stop {
        Stop::Duration(d) => Some(measure_start + d),
        Stop::Requests(_) => None,
    };

    let mut recorder = Recorder::new(rate_mode);
    recorder.counts.errors[ErrorKind::Connect as usize] = early_errors;
    recorder.counts.connections = connected;
    let ctx = Rc::new(WorkerCtx {
        plan: plan.clone(),
        worker,
        start,
        measure_start,
        end,
        rec: RefCell::new(recorder),
        last_response: Cell::new(None),
        live: Cell::new(0),
        controller: RefCell::new(None),
    });
    let ring_len = plan.ring.len();
    let slots: Vec<Rc<Slot>> = indexes
        .iter()
        .map(|&index| {
            Rc::new(Slot {
                index,
                waiting_since: Cell::new(None),
                connecting: Cell::new(false),
                in_flight: Cell::new(0),
                owed: Cell::new(0),
                // Connections start at different requests of the round robin.
                cursor: Cell::new(index % ring_len),
                next_send: Cell::new(0),
                sends: RefCell::new(Vec::with_capacity(if rate_mode { plan.streams } else { 0 })),
                task: RefCell::new(None),
            })
        })
        .collect();
    for (slot, first) in slots.iter().zip(firsts) {
        spawn_slot::<T>(&ctx, slot, first);
    }

    let (stopped_at, interrupted) = control::<T>(&ctx, &slots).await;
    for slot in &slots {
        if let Some(task) = slot.task.borrow_mut().take() {
            task.abort();
        }
    }

    if rate_mode && ctx.end.is_some() {
        record_unanswered(&ctx, &slots, stopped_at);
    } else {
        count_in_flight(&ctx, &slots);
    }
    let mut rec = ctx.rec.borrow_mut();
    let last = rec.take_interval();
    send_tick(&ctx, u32::MAX, stopped_at, last, rec.counts);
    let scheduled = if rate_mode {
        scheduled_in_window(&ctx, &slots, stopped_at)
    } else {
        0
    };
    WorkerResult {
        latencies: rec.total.clone(),
        counts: rec.counts,
        status: std::mem::take(&mut rec.status),
        stopped_at,
        measure_start,
        scheduled,
        interrupted,
    }
}

/// Rate mode, timed runs: records every request scheduled in `[measure_start, stopped_at)`
/// (and before the end) that got neither a response nor an error, with the time it had waited.
/// That is the one the slot was waiting on (for its connect or its response) and every send
/// after it that the schedule had due. The slots' tasks are aborted: their state is final.
fn record_unanswered(ctx: &WorkerCtx, slots: &[Rc<Slot>], stopped_at: Instant) {
    let Some(end) = ctx.end else { return };
    let window_end = stopped_at.min(end);
    let mut rec = ctx.rec.borrow_mut();
    for slot in slots {
        let next = slot.next_send.get();
        // HTTP/2: the sends in flight are listed; every later one the schedule had due is
        // unanswered too.
        for &k in slot.sends.borrow().iter() {
            let at = ctx.scheduled(slot.index, k);
            if at >= ctx.measure_start && at < window_end {
                rec.unanswered(micros_between(at, stopped_at));
            }
        }
        // HTTP/1: `waiting_since` is set exactly while send `next - 1` has no answer.
        let mut k = match slot.waiting_since.get() {
            Some(_) if ctx.plan.protocol == Protocol::Http1 => next.saturating_sub(1),
            _ => next,
        };
        loop {
            let at = ctx.scheduled(slot.index, k);
            if at >= window_end {
                break;
            }
            if at >= ctx.measure_start {
                rec.unanswered(micros_between(at, stopped_at));
            }
            k += 1;
        }
    }
}

/// Closed loop, and any run without a duration: counts the requests written in the measured
/// window and still unanswered when the level ended (a timed run ends with requests in
/// flight; a signal can end any run). They are in no latency: when they would have been
/// answered is unknown, and a closed loop times only what completed. The slots' tasks are
/// aborted: their state is final.
fn count_in_flight(ctx: &WorkerCtx, slots: &[Rc<Slot>]) {
    let in_flight: usize = slots
        .iter()
        .filter(|slot| {
            // `waiting_since` is when the exchange of the requests in flight started.
            slot.waiting_since
                .get()
                .is_some_and(|since| since >= ctx.measure_start)
        })
        .map(|slot| slot.in_flight.get())
        .sum();
    ctx.rec.borrow_mut().counts.unanswered += in_flight as u64;
}

/// How many sends the schedule of these slots had in `[measure_start, stopped_at)`.
fn scheduled_in_window(ctx: &WorkerCtx, slots: &[Rc<Slot>], stopped_at: Instant) -> u64 {
    let Some(rate) = ctx.plan.rate else { return 0 };
    let from = (ctx.measure_start - ctx.start).as_secs_f64();
    let to = (stopped_at.min(ctx.end.unwrap_or(stopped_at)) - ctx.start).as_secs_f64();
    let period = ctx.plan.connections as f64 / rate;
    slots
        .iter()
        .map(|slot| {
            let phase = slot.index as f64 / rate;
            // Sends k with from <= phase + k * period < to.
            let first = ((from - phase) / period).ceil().max(0.0);
            let end = ((to - phase) / period).ceil().max(0.0);
            (end - first).max(0.0) as u64
        })
        .sum()
}

/// A slot's first connection, as the connect phase left it.
enum FirstConn<T> {
    Open(T),
    /// Still connecting when the wait before the start ended.
    Opening(Opening<T>),
    /// None yet: the slot connects when it starts (or its connect failed).
    None,
}

/// A connect task that is aborted when its handle is dropped: at the end of a level, and when
/// `expire` replaces the slot task waiting for it.
struct Opening<T>(JoinHandle<std::io::Result<T>>);

impl<T> Drop for Opening<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Starts the task that drives `slot`, with its first connection if there is one.
fn spawn_slot<T: Connect>(ctx: &Rc<WorkerCtx>, slot: &Rc<Slot>, first: FirstConn<T>) {
    let conn = match first {
        FirstConn::Open(conn) => Some(conn),
        FirstConn::Opening(opening) => return spawn_connecting(ctx, slot, opening),
        FirstConn::None => None,
    };
    ctx.live.set(ctx.live.get() + 1);
    let guard = LiveGuard(ctx.clone());
    let task = T::spawn_driver(ctx.clone(), slot.clone(), conn, guard);
    *slot.task.borrow_mut() = Some(task);
}

/// Starts a task that waits for the slot's pending connect, then hands the slot to a driver
/// task of its own. (The driver's future awaited in this one would not be inlined into its
/// task's poll any more: callgrind counts 10 to 50 instructions a request more, depending on
/// how it is nested.)
fn spawn_connecting<T: Connect>(ctx: &Rc<WorkerCtx>, slot: &Rc<Slot>, opening: Opening<T>) {
    ctx.live.set(ctx.live.get() + 1);
    let guard = LiveGuard(ctx.clone());
    let (ctx, slot_ref) = (ctx.clone(), slot.clone());
    let task = volt_rt::spawn(async move {
        let _guard = guard;
        let conn = finish_connect(&ctx, &slot_ref, opening).await;
        // Replaces this task's handle in the slot; this task ends right after (its guard
        // drops once the new task is counted live).
        spawn_slot::<T>(
            &ctx,
            &slot_ref,
            conn.map_or(FirstConn::None, FirstConn::Open),
        );
    });
    *slot.task.borrow_mut() = Some(task);
}

/// Waits for a connect begun before the start. The slot is connecting meanwhile, so `expire`
/// times it out like any connect (counting from the start); a connect that fails is a connect
/// error, and the driver then connects again.
async fn finish_connect<T: Connect>(
    ctx: &WorkerCtx,
    slot: &Slot,
    mut opening: Opening<T>,
) -> Option<T> {
    slot.connecting.set(true);
    slot.waiting_since.set(Some(ctx.start));
    let result = (&mut opening.0).await;
    slot.connecting.set(false);
    slot.waiting_since.set(None);
    match result {
        Ok(Ok(conn)) => {
            ctx.rec.borrow_mut().counts.connections += 1;
            Some(conn)
        }
        Ok(Err(_)) | Err(_) => {
            ctx.errors(ErrorKind::Connect, ctx.start, 1);
            None
        }
    }
}

/// Counts a slot task as finished when it ends or is dropped (aborted).
pub(crate) struct LiveGuard(Rc<WorkerCtx>);

impl Drop for LiveGuard {
    fn drop(&mut self) {
        let live = self.0.live.get() - 1;
        self.0.live.set(live);
        if live == 0 {
            if let Some(w) = self.0.controller.borrow_mut().take() {
                w.wake();
            }
        }
    }
}

enum Wake {
    AllDone,
    Signal,
    Timer,
}

/// The controller loop. Returns when the measured window ended, and whether a signal ended it.
async fn control<T: Connect>(ctx: &Rc<WorkerCtx>, slots: &[Rc<Slot>]) -> (Instant, bool) {
    let plan = &ctx.plan;
    let check_every = (plan.timeout / 4).clamp(Duration::from_millis(5), Duration::from_millis(50));
    let mut next_tick = ctx.measure_start + TICK;
    let mut tick_seq = 0u32;
    let mut next_check = ctx.start + check_every;
    let mut signal = plan.stop_on_signal.then(volt_rt::signal::shutdown_signal);
    let mut sleep = volt_rt::time::sleep_until(next_check);
    loop {
        let mut wake_at = next_tick.min(next_check);
        if let Some(end) = ctx.end {
            wake_at = wake_at.min(end);
        }
        sleep.reset(wake_at);
        let woke = poll_fn(|cx| {
            // A timed run's window is its whole duration: at a low rate every slot may have
            // made its last send (and be done) well before the end, and ending the window at
            // the last response would overstate the rate.
            if ctx.live.get() == 0 && ctx.end.is_none() {
                return Poll::Ready(Wake::AllDone);
            }
            let mut waker = ctx.controller.borrow_mut();
            if !waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                *waker = Some(cx.waker().clone());
            }
            if let Some(signal) = &mut signal {
                if Pin::new(signal).poll(cx).is_ready() {
                    return Poll::Ready(Wake::Signal);
                }
            }
            match Pin::new(&mut sleep).poll(cx) {
                Poll::Ready(()) => Poll::Ready(Wake::Timer),
                Poll::Pending => Poll::Pending,
            }
        })
        .await;
        let now = Instant::now();
        match woke {
            Wake::AllDone => return (ctx.last_response.get().unwrap_or(now).max(ctx.start), false),
            Wake::Signal => return (now, true),
            Wake::Timer => {}
        }
        // Every second due, if this wake came more than a second late (the thread was held
        // up): the end check below would otherwise fold the seconds not sent yet into the
        // last interval. What was recorded while late goes with the first of them.
        while now >= next_tick {
            let mut rec = ctx.rec.borrow_mut();
            let interval = rec.take_interval();
            send_tick(ctx, tick_seq, next_tick, interval, rec.counts);
            tick_seq += 1;
            next_tick += TICK;
        }
        if ctx.end.is_some_and(|end| now >= end) {
            return (now, false);
        }
        if now >= next_check {
            expire::<T>(ctx, slots, now);
            next_check = now + check_every;
        }
    }
}

/// Replaces the task of every slot whose request (or connect) waited past the timeout.
fn expire<T: Connect>(ctx: &Rc<WorkerCtx>, slots: &[Rc<Slot>], now: Instant) {
    let timeout = ctx.plan.timeout;
    for slot in slots {
        let Some(since) = slot.waiting_since.get() else {
            continue;
        };
        if now.saturating_duration_since(since) < timeout {
            continue;
        }
        let Some(task) = slot.task.borrow_mut().take() else {
            continue;
        };
        task.abort();
        let kind = if slot.connecting.get() {
            ErrorKind::Connect
        } else {
            ErrorKind::Timeout
        };
        if ctx.plan.budget.is_limited() {
            // The request that timed out is finished (as an error); the others are resent.
            ctx.errors(kind, since, 1);
            let lost = slot.in_flight.get().max(1) - 1;
            slot.owed.set(slot.owed.get() + lost);
        } else {
            // In a timed run every request of the batch timed out.
            ctx.errors(kind, since, slot.in_flight.get().max(1) as u64);
        }
        slot.in_flight.set(0);
        slot.waiting_since.set(None);
        slot.connecting.set(false);
        spawn_slot::<T>(ctx, slot, FirstConn::None);
    }
}

fn send_tick(
    ctx: &WorkerCtx,
    seq: u32,
    at: Instant,
    interval: Latencies,
    counts: crate::stats::Counts,
) {
    if let Some(tx) = &ctx.plan.collector {
        let _ = tx.send(Msg::Tick(Tick {
            level: ctx.plan.level,
            worker: ctx.worker,
            seq,
            at,
            measure_start: ctx.measure_start,
            latency: interval.latency,
            counts,
        }));
    }
}

/// Microseconds between two instants, 0 if `to` is earlier.
#[inline]
pub(crate) fn micros_between(from: Instant, to: Instant) -> u64 {
    micros(to.saturating_duration_since(from))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver;
    use std::io::{Read, Write};

    /// A server for one connection that answers every read with one empty `200`.
    fn answering_server() -> SocketAddr {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut conn, _) = listener.accept().unwrap();
            let mut buf = [0u8; 4096];
            while matches!(conn.read(&mut buf), Ok(n) if n > 0) {
                let _ = conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
            }
        });
        addr
    }

    /// A level of one connection at `rate`, for `duration`.
    fn plan(addr: SocketAddr, rate: f64, duration: Duration) -> Plan {
        let config = crate::Config::builder()
            .url(format!("http://{addr}/"))
            .connections(1)
            .threads(1)
            .rate(rate)
            .duration(duration)
            .build()
            .unwrap();
        Plan {
            level: 0,
            addr,
            ring: RequestRing::new(&config.requests, 1),
            pipeline: 1,
            streams: 1,
            h2_requests: Vec::new(),
            h3_requests: Vec::new(),
            connections: 1,
            workers: 1,
            rate: Some(rate),
            keepalive: true,
            timeout: config.timeout,
            stop: config.stop,
            warmup: Duration::ZERO,
            inspect: None,
            stop_on_signal: false,
            protocol: Protocol::Http1,
            tls: None,
            budget: Budget::new(config.stop),
            collector: None,
            barrier: Barrier::new(1),
            start: Mutex::new(None),
            connected: AtomicUsize::new(0),
            connect_error: Mutex::new(None),
        }
    }

    /// A window can end while a slot sleeps toward a send scheduled before the end: the
    /// controller reads the clock after the turn that woke it, and a task that held the thread
    /// in between (an `inspect` hook, a starved host) can take that reading past the end while
    /// the sleep is not fired yet. That send was neither sent nor unanswered: the HTTP/1
    /// driver counted it as made before it slept, so the requests unanswered at the end began
    /// after it (the rate sweep in `tests/outputs.rs`, with a worker held up, had responses and
    /// unanswered requests 2 short of the schedule). Here the slot gets its first send (at the
    /// start) answered and sleeps toward its second (10 s in); the window is then ended at
    /// 15 s, as that controller would.
    #[test]
    fn a_send_slept_toward_when_the_window_ends_is_unanswered() {
        let addr = answering_server();
        let plan = Arc::new(plan(addr, 0.1, Duration::from_secs(100)));
        let runtime = volt_rt::Runtime::builder().workers(1).build().unwrap();
        let counts = runtime.run(|_| {
            let plan = plan.clone();
            async move {
                let start = Instant::now();
                let conn = TcpStream::connect(addr).await.unwrap();
                let ctx = Rc::new(WorkerCtx {
                    plan,
                    worker: 0,
                    start,
                    measure_start: start,
                    end: Some(start + Duration::from_secs(100)),
                    rec: RefCell::new(Recorder::new(true)),
                    last_response: Cell::new(None),
                    live: Cell::new(0),
                    controller: RefCell::new(None),
                });
                let slot = Rc::new(Slot {
                    index: 0,
                    waiting_since: Cell::new(None),
                    connecting: Cell::new(false),
                    in_flight: Cell::new(0),
                    owed: Cell::new(0),
                    cursor: Cell::new(0),
                    next_send: Cell::new(0),
                    sends: RefCell::new(Vec::new()),
                    task: RefCell::new(None),
                });
                let (c, s) = (ctx.clone(), slot.clone());
                let task = volt_rt::spawn(async move { driver::drive(&c, &s, Some(conn)).await });
                while ctx.rec.borrow().counts.responses == 0 {
                    volt_rt::time::sleep(Duration::from_millis(1)).await;
                }
                // The slot's task now sleeps until its second send, 10 s after the start.
                task.abort();
                let stopped_at = start + Duration::from_secs(15);
                let slots = [slot];
                record_unanswered(&ctx, &slots, stopped_at);
                let scheduled = scheduled_in_window(&ctx, &slots, stopped_at);
                let counts = ctx.rec.borrow().counts;
                (counts, scheduled)
            }
        });
        let (counts, scheduled) = counts[0];
        assert_eq!(scheduled, 2);
        assert_eq!((counts.sent, counts.responses), (1, 1));
        assert_eq!(counts.unanswered, 1, "{counts:?}");
    }
}
