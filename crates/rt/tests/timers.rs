//! Timers: `sleep`, `sleep_until`, `timeout`, `interval`.
//!
//! Assertions are about order and "never early", never about being fast: a late timer on a
//! loaded machine is correct. Runs under Miri with smaller counts (its clock is virtual), except
//! the test that reads thread CPU time.

mod common;

use std::cell::RefCell;
use std::future::{pending, poll_fn, Future};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use common::{guard, CountingWaker, DropFlag, Rng};
use volt_rt::time::{interval, sleep, sleep_until, timeout, timeout_at, Elapsed};
use volt_rt::{block_on, spawn, yield_now};

/// What one sleeping task saw.
#[derive(Clone, Copy, Debug)]
struct Record {
    deadline: Instant,
    /// When its first poll returned `Pending`, i.e. its timer was registered; `None` if the
    /// deadline had already passed at the first poll.
    registered: Option<Instant>,
}

/// Sleeps until `deadline`, checks it did not wake early, and appends its record to `log` (so
/// `log` ends up in completion order).
async fn sleep_and_record(deadline: Instant, log: Rc<RefCell<Vec<Record>>>) {
    let mut sleep = sleep_until(deadline);
    let mut registered = None;
    poll_fn(|cx| match Pin::new(&mut sleep).poll(cx) {
        Poll::Ready(()) => Poll::Ready(()),
        Poll::Pending => {
            registered.get_or_insert_with(Instant::now);
            Poll::Pending
        }
    })
    .await;
    let now = Instant::now();
    assert!(now >= deadline, "woke {:?} early", deadline - now);
    log.borrow_mut().push(Record {
        deadline,
        registered,
    });
}

/// Checks that timers fired in deadline order. `log` is in completion order.
///
/// The guarantee is about timers that were registered: if `a` has an earlier deadline than `b`
/// and `a` was registered before `b`'s deadline (so `a` was in the timer map whenever `b` could
/// fire), `a` completes first. A task registered late on a loaded machine is not held to it.
fn assert_deadline_order(log: &[Record]) {
    for (j, b) in log.iter().enumerate() {
        for a in &log[j + 1..] {
            // `a` completed after `b`.
            let Some(a_registered) = a.registered else {
                continue;
            };
            if b.registered.is_some() && a.deadline < b.deadline && a_registered < b.deadline {
                panic!(
                    "a timer due {:?} before another completed after it (completion index {j})",
                    b.deadline - a.deadline
                );
            }
        }
    }
}

#[test]
#[should_panic(expected = "completed after it")]
fn the_order_check_catches_an_inversion() {
    let t0 = Instant::now();
    let ms = Duration::from_millis;
    let registered = Some(t0);
    // Completed in the order 2 ms, 1 ms although both were registered at t0.
    assert_deadline_order(&[
        Record {
            deadline: t0 + ms(2),
            registered,
        },
        Record {
            deadline: t0 + ms(1),
            registered,
        },
    ]);
}

#[test]
fn timers_fire_in_deadline_order_and_never_early() {
    guard(|| {
        let log = block_on(async {
            let log = Rc::new(RefCell::new(Vec::new()));
            let base = Instant::now() + Duration::from_millis(20);
            // Spawned in a scrambled order: 7 is coprime with 20, so this visits every slot.
            let handles: Vec<_> = (0..20u32)
                .map(|i| {
                    let deadline = base + Duration::from_millis(3) * ((i * 7) % 20);
                    spawn(sleep_and_record(deadline, log.clone()))
                })
                .collect();
            for h in handles {
                h.await.unwrap();
            }
            Rc::try_unwrap(log).unwrap().into_inner()
        });
        assert_eq!(log.len(), 20);
        assert_deadline_order(&log);
    });
}

#[test]
fn ten_thousand_sleeps_with_random_deadlines_on_one_worker() {
    let (n, spread_ms) = if cfg!(miri) { (100, 50) } else { (10_000, 500) };
    guard(move || {
        let log = block_on(async move {
            let log = Rc::new(RefCell::new(Vec::with_capacity(n)));
            let mut rng = Rng::new(0x5eed);
            let base = Instant::now() + Duration::from_millis(50);
            let handles: Vec<_> = (0..n)
                .map(|_| {
                    let offset = Duration::from_micros(rng.below(spread_ms * 1000));
                    spawn(sleep_and_record(base + offset, log.clone()))
                })
                .collect();
            for h in handles {
                h.await.unwrap();
            }
            Rc::try_unwrap(log).unwrap().into_inner()
        });
        assert_eq!(log.len(), n, "every sleep completed once");
        assert_deadline_order(&log);
    });
}

#[test]
fn sleep_zero_and_past_deadlines_complete_at_once() {
    guard(|| {
        block_on(async {
            sleep(Duration::ZERO).await;
            let past = Instant::now();
            sleep_until(past).await;
            let s = sleep_until(past);
            assert!(s.is_elapsed());
            s.await;
            // A ready sleep never touches the timer map, so it works in a tight loop.
            for _ in 0..1000 {
                sleep(Duration::ZERO).await;
            }
        });
    });
}

#[test]
fn sleep_accessors_and_reset() {
    guard(|| {
        block_on(async {
            let start = Instant::now();
            let mut s = sleep(Duration::from_secs(3600));
            assert!(s.deadline() >= start + Duration::from_secs(3600));
            assert!(!s.is_elapsed());
            // Registered with a far deadline, then moved close: it completes at the new one.
            let (counter, waker) = CountingWaker::new();
            assert!(Pin::new(&mut s)
                .poll(&mut Context::from_waker(&waker))
                .is_pending());
            assert_eq!(
                Arc::strong_count(&counter),
                3,
                "the timer map holds the waker"
            );
            let soon = Instant::now() + Duration::from_millis(5);
            s.reset(soon);
            assert_eq!(
                Arc::strong_count(&counter),
                2,
                "reset removed the old entry"
            );
            assert_eq!(s.deadline(), soon);
            s.await;
            assert!(Instant::now() >= soon);
            assert_eq!(counter.wakes.load(Ordering::SeqCst), 0);
        });
    });
}

#[test]
fn timeout_elapses_on_a_pending_future_and_drops_it() {
    guard(|| {
        block_on(async {
            let (flag, dropped) = DropFlag::new();
            let start = Instant::now();
            let result = timeout(Duration::from_millis(10), async move {
                let _flag = flag;
                pending::<u8>().await
            })
            .await;
            let elapsed: Elapsed = result.unwrap_err();
            assert!(
                start.elapsed() >= Duration::from_millis(10),
                "elapsed early"
            );
            assert!(
                dropped.load(Ordering::SeqCst),
                "the inner future was not dropped"
            );
            assert_eq!(elapsed.to_string(), "deadline has elapsed");
            let err: std::io::Error = elapsed.into();
            assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);

            // `timeout_at` with a deadline already passed: a pending future loses at once.
            let at = timeout_at(Instant::now(), pending::<()>()).await;
            assert!(at.is_err());
        });
    });
}

#[test]
fn timeout_returns_the_output_of_a_ready_future() {
    guard(|| {
        block_on(async {
            let (flag, dropped) = DropFlag::new();
            let out = timeout(Duration::from_secs(3600), async move {
                let _flag = flag;
                5
            })
            .await;
            assert_eq!(out, Ok(5));
            assert!(dropped.load(Ordering::SeqCst));
            // A future that finishes before the deadline, after waiting.
            let out = timeout(Duration::from_secs(3600), async {
                sleep(Duration::from_millis(2)).await;
                yield_now().await;
                "done"
            })
            .await;
            assert_eq!(out, Ok("done"));
            // Even a zero timeout lets a ready future win: the future is polled first.
            assert_eq!(timeout(Duration::ZERO, async { 1 }).await, Ok(1));
        });
    });
}

#[test]
fn interval_ticks_are_spaced_by_at_least_the_period() {
    guard(|| {
        block_on(async {
            let period = Duration::from_millis(10);
            let created = Instant::now();
            let mut iv = interval(period);
            assert_eq!(iv.period(), period);
            let first = iv.tick().await;
            assert!(
                first >= created && first <= Instant::now(),
                "the first tick is at once"
            );
            let mut previous = first;
            for _ in 0..5 {
                let scheduled = iv.tick().await;
                assert!(Instant::now() >= scheduled, "ticked early");
                assert!(
                    scheduled - previous >= period,
                    "ticks closer than the period"
                );
                previous = scheduled;
            }
            // A busy task misses ticks: no burst to catch up afterwards.
            std::thread::sleep(period * 3);
            let before_late = Instant::now();
            let late = iv.tick().await;
            assert!(late - previous >= period);
            let next = iv.tick().await;
            assert!(
                next >= before_late + period,
                "a missed tick was made up with a burst"
            );
            assert!(Instant::now() >= next);
        });
    });
}

#[test]
#[should_panic(expected = "interval period must be non-zero")]
fn interval_of_zero_panics() {
    let _ = interval(Duration::ZERO);
}

/// Pending sleeps that are dropped leave nothing behind in the worker's timer map.
#[test]
fn dropped_sleeps_remove_their_timers() {
    let n = if cfg!(miri) { 100 } else { 5_000 };
    guard(move || {
        block_on(async move {
            let (counter, waker) = CountingWaker::new();
            let mut cx = Context::from_waker(&waker);
            // Far deadlines: each first poll is certainly pending and registers a timer.
            let mut far: Vec<_> = (0..n)
                .map(|i| sleep(Duration::from_secs(3600 + i as u64)))
                .collect();
            for s in &mut far {
                assert!(Pin::new(s).poll(&mut cx).is_pending());
            }
            assert_eq!(Arc::strong_count(&counter), n + 2, "one waker per timer");
            drop(far);
            assert_eq!(
                Arc::strong_count(&counter),
                2,
                "dropped sleeps left timers behind"
            );

            // Near deadlines, dropped before they are due: none of them fires later.
            let mut near: Vec<_> = (0..n)
                .map(|i| sleep(Duration::from_millis(1 + (i % 20) as u64)))
                .collect();
            for s in &mut near {
                let _ = Pin::new(s).poll(&mut cx);
            }
            drop(near);
            assert_eq!(Arc::strong_count(&counter), 2);
            sleep(Duration::from_millis(30)).await;
            assert_eq!(
                counter.wakes.load(Ordering::SeqCst),
                0,
                "a dropped timer fired"
            );

            // The worker still parks and wakes on time for the timers that remain.
            let start = Instant::now();
            sleep(Duration::from_millis(5)).await;
            assert!(start.elapsed() >= Duration::from_millis(5));
        });
    });
}

/// A worker with only a far-off timer parks in the kernel: it burns (almost) no CPU while it
/// waits. CPU time, unlike wall time, does not grow on a loaded machine, so the bound (half the
/// wait) only fails if the worker spins.
#[test]
#[cfg_attr(miri, ignore)] // Miri has no per-thread CPU clock
fn a_waiting_worker_does_not_spin() {
    use rustix::time::{clock_gettime, ClockId};
    fn cpu_time() -> Duration {
        let t = clock_gettime(ClockId::ThreadCPUTime);
        Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
    }
    guard(|| {
        block_on(async {
            // Churn the timer map first: thousands of timers registered and dropped.
            let (_counter, waker) = CountingWaker::new();
            let mut cx = Context::from_waker(&waker);
            for i in 0..5_000u64 {
                let mut s = sleep(Duration::from_micros(500 + i));
                let _ = Pin::new(&mut s).poll(&mut cx);
            }
            let _far = spawn(sleep(Duration::from_secs(3600)));
            let wait = Duration::from_millis(300);
            let cpu_before = cpu_time();
            let wall_before = Instant::now();
            sleep(wait).await;
            let cpu = cpu_time() - cpu_before;
            assert!(wall_before.elapsed() >= wait);
            assert!(
                cpu < wait / 2,
                "the worker used {cpu:?} of CPU in a {wait:?} sleep"
            );
        });
    });
}

/// Timers fire even when the run queue never empties.
#[test]
fn timers_fire_on_a_busy_worker() {
    guard(|| {
        block_on(async {
            let stop = Rc::new(std::cell::Cell::new(false));
            let stop2 = stop.clone();
            let spinner = spawn(async move {
                let mut turns = 0u64;
                while !stop2.get() {
                    yield_now().await;
                    turns += 1;
                }
                turns
            });
            let start = Instant::now();
            sleep(Duration::from_millis(5)).await;
            assert!(start.elapsed() >= Duration::from_millis(5));
            stop.set(true);
            assert!(spinner.await.unwrap() > 0);
        });
    });
}

/// A sleep polled by one task and then awaited by another wakes the one that polled it last.
#[test]
fn sleep_polled_from_two_tasks_wakes_the_latest() {
    guard(|| {
        block_on(async {
            let shared = Rc::new(RefCell::new(Box::pin(sleep(Duration::from_millis(5)))));
            let deadline = shared.borrow().deadline();
            let first = {
                let shared = shared.clone();
                spawn(async move {
                    // Poll once from this task, then give up on it.
                    poll_fn(|cx| {
                        let _ = shared.borrow_mut().as_mut().poll(cx);
                        Poll::Ready(())
                    })
                    .await
                })
            };
            first.await.unwrap();
            let second = spawn(async move {
                poll_fn(|cx| shared.borrow_mut().as_mut().poll(cx)).await;
                Instant::now()
            });
            let done = second.await.unwrap();
            assert!(done >= deadline);
        });
    });
}

/// Regression: `sleep`, `timeout` and `interval` added the duration to `Instant::now()`, which
/// panics on overflow, so "no limit" spelled `Duration::MAX` (a config value, say) panicked the
/// task. A deadline too far to represent now means "never" (in practice).
#[test]
fn huge_durations_mean_never_instead_of_panicking() {
    guard(|| {
        block_on(async {
            let s = sleep(Duration::MAX);
            assert!(!s.is_elapsed());
            let s = std::pin::pin!(s);
            let raced = volt_rt::future::race(s, sleep(Duration::from_millis(1))).await;
            assert!(matches!(raced, volt_rt::future::Either::Right(())));
            assert_eq!(timeout(Duration::MAX, async { 7 }).await, Ok(7));
            let waited = timeout(Duration::MAX, sleep(Duration::from_millis(1))).await;
            assert_eq!(waited, Ok(()));
            let mut ticks = interval(Duration::MAX);
            ticks.tick().await; // the first tick is at once
            let second = timeout(Duration::from_millis(1), ticks.tick()).await;
            assert!(second.is_err());
        });
    });
}

/// Many sleeps with one and the same deadline all complete (their map keys differ by id), and
/// a registered sleep reset to a deadline already past completes at once.
#[test]
fn same_instant_sleeps_and_a_reset_into_the_past() {
    guard(|| {
        block_on(async {
            let deadline = Instant::now() + Duration::from_millis(5);
            let count = if cfg!(miri) { 50 } else { 1000 };
            let done = Rc::new(std::cell::Cell::new(0));
            let handles: Vec<_> = (0..count)
                .map(|_| {
                    let done = done.clone();
                    spawn(async move {
                        sleep_until(deadline).await;
                        done.set(done.get() + 1);
                    })
                })
                .collect();
            for h in handles {
                h.await.unwrap();
            }
            assert_eq!(done.get(), count);
            assert!(Instant::now() >= deadline);

            let mut s = Box::pin(sleep(Duration::from_secs(3600)));
            let polled = timeout(Duration::from_millis(1), s.as_mut()).await;
            assert!(polled.is_err(), "registered with its far deadline");
            s.as_mut().reset(Instant::now() - Duration::from_millis(1));
            let reset = timeout(Duration::from_secs(60), s).await;
            assert!(
                reset.is_ok(),
                "a sleep reset into the past did not complete"
            );
        });
    });
}

/// A deadline still ahead when a `block_on` started right after polls it: 20 ms had passed by
/// then under Miri (seeds 0, 9 and 42), and could on a loaded machine.
const NOT_YET: Duration = Duration::from_millis(500);

/// Polls `sleep` once in a `block_on` of its own: it registers with that runtime's timers, which
/// are gone when `block_on` returns.
fn register_in_a_block_on_now_gone(sleep: &mut Pin<Box<volt_rt::time::Sleep>>) {
    block_on(poll_fn(|cx| {
        assert!(sleep.as_mut().poll(cx).is_pending());
        Poll::Ready(())
    }));
}

/// Polls `sleep` from the main future only (whose waker may have the address of the previous
/// `block_on`'s), until it fires or 30 s have passed; true if it fired.
async fn fires_within_30s(mut sleep: Pin<Box<volt_rt::time::Sleep>>) -> bool {
    let main_waker = Rc::new(RefCell::new(None::<std::task::Waker>));
    let timed_out = Rc::new(std::cell::Cell::new(false));
    let (w, t) = (main_waker.clone(), timed_out.clone());
    let _watchdog = spawn(async move {
        sleep_until(Instant::now() + Duration::from_secs(30)).await;
        t.set(true);
        if let Some(w) = w.borrow_mut().take() {
            w.wake();
        }
    });
    poll_fn(|cx| {
        if timed_out.get() {
            return Poll::Ready(false);
        }
        *main_waker.borrow_mut() = Some(cx.waker().clone());
        sleep.as_mut().poll(cx).map(|()| true)
    })
    .await
}

#[test]
fn a_sleep_registered_in_an_earlier_block_on_fires_in_a_later_one() {
    guard(|| {
        let mut s = Box::pin(sleep(NOT_YET));
        register_in_a_block_on_now_gone(&mut s);
        let fired = block_on(fires_within_30s(s));
        assert!(fired, "the sleep never fired in the later block_on");
    });
}

#[test]
fn a_sleep_from_an_earlier_block_on_leaves_another_sleeps_timer_alone() {
    guard(|| {
        let deadline = Instant::now() + NOT_YET;
        let mut old = Box::pin(sleep_until(deadline));
        register_in_a_block_on_now_gone(&mut old);
        let fired = block_on(async move {
            // Same deadline, and (timer ids restarting with each runtime) possibly the same id.
            let new = Box::pin(sleep_until(deadline));
            let waiting = spawn(async move { fires_within_30s(new).await });
            yield_now().await; // `new` registers
            drop(old);
            waiting.await.unwrap()
        });
        assert!(fired, "dropping the old sleep removed the new one's timer");
    });
}
