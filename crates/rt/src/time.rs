//! Timers: `sleep`, `sleep_until`, `timeout` and `interval`.
//!
//! Each worker keeps one ordered map from `(deadline, id)` to the waker of the task waiting on
//! it. The map's first key bounds how long the reactor may block; after each reactor turn every
//! entry that is due is removed and woken. Insert and remove are O(log n), so thousands of
//! pending timers per worker (one per keep-alive connection, say) stay cheap, and a dropped timer
//! removes its entry at once rather than leaving garbage to sift later.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::fmt;
use std::future::{poll_fn, Future};
use std::num::NonZeroU64;
use std::pin::Pin;
use std::task::{Context, Poll, RawWakerVTable, Waker};
use std::time::{Duration, Instant};

use crate::executor::{try_with_core, with_core, TIMER_IDS as IDS, WOKE_AT};
use crate::future::{race, Either};

type Key = (Instant, u64);

#[derive(Default)]
pub(crate) struct Timers {
    entries: RefCell<BTreeMap<Key, Waker>>,
}

impl Timers {
    /// Enters `waker` for `deadline`; the entry's key is `(deadline, id)` with the id returned.
    fn insert(&self, deadline: Instant, waker: Waker) -> NonZeroU64 {
        let id = IDS.with(|ids| ids.replace((ids.get().0.saturating_add(1), ids.get().1)).0);
        self.entries
            .borrow_mut()
            .insert((deadline, id.get()), waker);
        id
    }

    /// Refreshes the waker of a pending entry; false if the entry already fired.
    fn update(&self, key: &Key, waker: &Waker) -> bool {
        // `clone_from` clones only if `waker` would not wake the same task.
        let mut entries = self.entries.borrow_mut();
        entries.get_mut(key).map(|w| w.clone_from(waker)).is_some()
    }

    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        self.entries.borrow().first_key_value().map(|(k, _)| k.0)
    }

    /// Records `now` as the time the worker woke at and wakes every entry due by then.
    pub(crate) fn fire_due(&self, now: Instant) {
        WOKE_AT.with(|t| t.set(Some(now)));
        loop {
            let mut entries = self.entries.borrow_mut();
            let Some(entry) = entries.first_entry().filter(|e| e.key().0 <= now) else {
                return;
            };
            let waker = entry.remove();
            drop(entries);
            waker.wake();
        }
    }
}

/// The time the current worker last woke from the reactor ([`Instant::now`] outside a worker,
/// or before its first wake): never later than `Instant::now()`, at most one loop turn behind
/// it, and without a clock read. Meant for the deadlines and timestamps a task takes on every
/// request, where being a turn early costs nothing; a [`Sleep`] checks its deadline against it
/// too, so it completes in the turn after it is due, never before.
pub fn now() -> Instant {
    WOKE_AT.with(Cell::get).unwrap_or_else(Instant::now)
}

/// A future that completes at a deadline. Created by [`sleep`] and [`sleep_until`].
#[derive(Debug)]
pub struct Sleep {
    deadline: Instant,
    /// The timer-map entry while registered (its id; the key is `(deadline, id)`, as the
    /// deadline moves only with the entry), with the identity of the waker it holds: a poll by
    /// the same task (the usual case: a connection waiting again) then needs no map lookup.
    /// Without the key's copy of the deadline a `Sleep` is 40 bytes instead of 56, which an
    /// HTTP connection's state needs to fit in three cache lines.
    entry: Option<(NonZeroU64, WakerId)>,
    /// Registered with this worker's timers: must stay on it.
    _local: std::marker::PhantomData<*const ()>,
}

/// Completes after `duration` (`Duration::MAX`: never, in practice).
pub fn sleep(duration: Duration) -> Sleep {
    sleep_until(after(Instant::now(), duration))
}

/// `start + duration`, with durations past ~30 years (a wait that never ends in practice)
/// taken as that: `Duration::MAX` is a natural "no limit", and adding it to an `Instant` panics.
fn after(start: Instant, duration: Duration) -> Instant {
    start + duration.min(Duration::from_secs(30 * 365 * 86_400))
}

/// Completes at `deadline` (at once if it passed).
pub fn sleep_until(deadline: Instant) -> Sleep {
    Sleep {
        deadline,
        entry: None,
        _local: std::marker::PhantomData,
    }
}

impl Sleep {
    /// When this sleep completes.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Moves the deadline, as if the sleep had been created anew (cheaper than a new one).
    pub fn reset(&mut self, deadline: Instant) {
        self.unregister();
        self.deadline = deadline;
    }

    /// True if the deadline has passed.
    pub fn is_elapsed(&self) -> bool {
        Instant::now() >= self.deadline
    }

    /// Enters the deadline in the worker's timers, or hands its entry `waker`.
    #[inline(never)] // out of `poll`'s usual path, which then saves no registers for it
    fn register(&mut self, waker: &Waker) {
        let deadline = self.deadline;
        let id = with_core(|core| match self.entry {
            Some((id, _)) if core.timers.update(&(deadline, id.get()), waker) => id,
            _ => core.timers.insert(deadline, waker.clone()),
        });
        self.entry = Some((id, WakerId::of(waker)));
    }

    fn unregister(&mut self) {
        if let Some((id, _)) = self.entry.take() {
            let key = (self.deadline, id.get());
            try_with_core(|core| core.timers.entries.borrow_mut().remove(&key));
        }
    }
}

/// What [`Waker::will_wake`] compares: the data pointer and the vtable. Comparing a
/// registered entry's id is sound because the map holds a clone of that waker, so its task
/// cannot be freed and its address reused while the entry exists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct WakerId(*const (), *const RawWakerVTable);

impl WakerId {
    fn of(waker: &Waker) -> WakerId {
        WakerId(waker.data(), waker.vtable())
    }
}

impl Future for Sleep {
    type Output = ();

    // Into the tasks that wait with a deadline (a connection, every request): the usual poll is
    // two comparisons, and a call would cost more.
    #[inline]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if now() >= self.deadline {
            self.unregister();
            return Poll::Ready(());
        }
        // An entry leaves the map only once its deadline passed (checked just above) or its
        // worker ended, so a registered entry is still there and only its waker may need a refresh.
        if self.entry.is_none_or(|(id, waker)| {
            waker != WakerId::of(cx.waker()) || id < IDS.with(|ids| ids.get().1)
        }) {
            self.register(cx.waker());
        }
        Poll::Pending
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        self.unregister();
    }
}

/// The error of [`timeout`]: the deadline passed first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Elapsed(());

impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("deadline has elapsed")
    }
}

impl std::error::Error for Elapsed {}

impl From<Elapsed> for std::io::Error {
    fn from(_: Elapsed) -> std::io::Error {
        std::io::ErrorKind::TimedOut.into()
    }
}

/// Runs `future` for at most `duration`; `Err(Elapsed)` if it did not finish in time (the
/// future is then dropped).
pub async fn timeout<F: Future>(duration: Duration, future: F) -> Result<F::Output, Elapsed> {
    timeout_at(after(Instant::now(), duration), future).await
}

/// Runs `future` until `deadline`; `Err(Elapsed)` if it did not finish by then.
pub async fn timeout_at<F: Future>(deadline: Instant, future: F) -> Result<F::Output, Elapsed> {
    match race(future, sleep_until(deadline)).await {
        Either::Left(out) => Ok(out),
        Either::Right(()) => Err(Elapsed(())),
    }
}

/// Ticks every `period`; the first tick completes at once. A tick that is late (the task was
/// busy) is not made up with a burst: the next one is scheduled a whole period after it.
pub fn interval(period: Duration) -> Interval {
    assert!(!period.is_zero(), "interval period must be non-zero");
    Interval {
        period,
        sleep: sleep_until(Instant::now()),
    }
}

/// A periodic timer; see [`interval`].
#[derive(Debug)]
pub struct Interval {
    period: Duration,
    sleep: Sleep,
}

impl Interval {
    /// Waits for the next tick and returns the instant it was scheduled for.
    pub async fn tick(&mut self) -> Instant {
        poll_fn(|cx| self.poll_tick(cx)).await
    }

    /// Polls for the next tick.
    pub fn poll_tick(&mut self, cx: &mut Context<'_>) -> Poll<Instant> {
        let scheduled = self.sleep.deadline();
        if Pin::new(&mut self.sleep).poll(cx).is_pending() {
            return Poll::Pending;
        }
        let now = Instant::now();
        let mut next = after(scheduled, self.period);
        if next <= now {
            next = after(now, self.period);
        }
        self.sleep.reset(next);
        Poll::Ready(scheduled)
    }

    /// The tick period.
    pub fn period(&self) -> Duration {
        self.period
    }
}
