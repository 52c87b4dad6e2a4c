//! The blocking pool: results, panics, more jobs than threads, cancellation.
//!
//! The pool is process-wide and `Builder::max_blocking_threads` sets its cap for the whole
//! process, so every test here sets the same cap ([`CAP`]) and holds [`serial`] while it runs:
//! one test filling the pool must not starve another.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex, MutexGuard};
use std::time::Duration;

use common::{guard, HANG_GUARD};
use volt_rt::{block_on, spawn, spawn_blocking, Runtime};

const CAP: usize = 4;

/// Sets the pool's cap to [`CAP`] and keeps the other tests of this file from running meanwhile.
fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    let guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // Building a runtime is the public way to set the cap; the runtime itself is not run.
    Runtime::builder()
        .workers(1)
        .max_blocking_threads(CAP)
        .build()
        .unwrap();
    guard
}

#[test]
fn result_is_returned() {
    let _serial = serial();
    guard(|| {
        let out = block_on(async {
            let thread = std::thread::current().id();
            let handle = spawn_blocking(move || {
                assert_ne!(std::thread::current().id(), thread, "ran on the worker");
                std::thread::current().name().map(str::to_owned)
            });
            handle.await.unwrap()
        });
        assert_eq!(out.as_deref(), Some("volt-blocking"));
    });
}

#[test]
fn panic_is_captured() {
    let _serial = serial();
    guard(|| {
        block_on(async {
            let err = spawn_blocking(|| -> u32 { panic!("blocking boom") })
                .await
                .unwrap_err();
            assert!(err.is_panic());
            assert_eq!(err.to_string(), "task panicked: blocking boom");
            // The pool keeps working.
            assert_eq!(spawn_blocking(|| 2 + 2).await.unwrap(), 4);
        });
    });
}

#[test]
fn many_jobs_beyond_the_thread_cap_all_complete() {
    let _serial = serial();
    let jobs = 300;
    guard(move || {
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let sum = block_on(async move {
            let handles: Vec<_> = (0..jobs)
                .map(|i| {
                    let running = running.clone();
                    let most = most.clone();
                    spawn_blocking(move || {
                        let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        std::thread::sleep(Duration::from_micros(200));
                        running.fetch_sub(1, Ordering::SeqCst);
                        i
                    })
                })
                .collect();
            let mut sum = 0;
            for h in handles {
                sum += h.await.unwrap();
            }
            // Never more of these jobs at once than the pool has threads.
            let most = most.load(Ordering::SeqCst);
            assert!(
                (1..=CAP).contains(&most),
                "{most} jobs ran at once, cap {CAP}"
            );
            sum
        });
        assert_eq!(sum, jobs * (jobs - 1) / 2);
    });
}

#[test]
fn wakes_from_pool_threads_reach_the_right_tasks() {
    let _serial = serial();
    guard(|| {
        block_on(async {
            // Each task awaits its own job; completions arrive from pool threads in any order.
            let tasks: Vec<_> = (0..200u64)
                .map(|i| {
                    spawn(async move {
                        let job = spawn_blocking(move || {
                            if i % 7 == 0 {
                                std::thread::sleep(Duration::from_micros(300));
                            }
                            i * i
                        });
                        (i, job.await.unwrap())
                    })
                })
                .collect();
            for (i, t) in tasks.into_iter().enumerate() {
                let i = i as u64;
                assert_eq!(t.await.unwrap(), (i, i * i));
            }
        });
    });
}

#[test]
fn handle_awaited_on_a_worker_of_a_runtime() {
    let _serial = serial();
    guard(|| {
        // Started from a plain thread, awaited on a worker.
        let handle = spawn_blocking(|| "from the pool");
        let rt = Runtime::builder().workers(2).build().unwrap();
        let handle = std::sync::Mutex::new(Some(handle));
        let out = rt.run(|_| {
            let mine = handle.lock().unwrap().take();
            async move {
                match mine {
                    Some(h) => Some(h.await.unwrap()),
                    None => None,
                }
            }
        });
        assert_eq!(
            out.into_iter().flatten().collect::<Vec<_>>(),
            ["from the pool"]
        );
    });
}

/// Regression: two jobs submitted back to back while one pool thread was idle both "woke" that
/// one thread, so the second waited in the queue behind the first even though the pool was
/// below its cap. A job that waits for a later job then deadlocked the pair.
#[test]
fn a_job_waiting_for_the_next_job_does_not_deadlock() {
    let _serial = serial();
    guard(|| {
        block_on(async {
            for round in 0..20 {
                // Leave at least one idle thread behind.
                spawn_blocking(|| ()).await.unwrap();
                let (tx, rx) = std::sync::mpsc::channel::<u32>();
                let first = spawn_blocking(move || rx.recv_timeout(HANG_GUARD / 2));
                let second = spawn_blocking(move || tx.send(round).unwrap());
                assert_eq!(first.await.unwrap(), Ok(round), "round {round}");
                second.await.unwrap();
            }
        });
    });
}

#[test]
fn abort_before_the_job_starts_cancels_it() {
    let _serial = serial();
    guard(|| {
        block_on(async {
            // Occupy every pool thread, all provably running at once. (Blocking this worker
            // on the barriers is fine: the jobs run on pool threads.)
            let started = Arc::new(Barrier::new(CAP + 1));
            let release = Arc::new(Barrier::new(CAP + 1));
            let blockers: Vec<_> = (0..CAP)
                .map(|_| {
                    let started = started.clone();
                    let release = release.clone();
                    spawn_blocking(move || {
                        started.wait();
                        release.wait();
                    })
                })
                .collect();
            started.wait();
            let ran = Arc::new(AtomicUsize::new(0));
            let ran2 = ran.clone();
            let queued = spawn_blocking(move || {
                ran2.fetch_add(1, Ordering::SeqCst);
            });
            queued.abort();
            release.wait();
            assert!(queued.await.unwrap_err().is_cancelled());
            assert_eq!(ran.load(Ordering::SeqCst), 0);
            for b in blockers {
                b.await.unwrap();
            }
        });
    });
}

/// Regression: a panic in the destructor of a job's output (its handle dropped, so the pool
/// thread drops it) or of a job's closure dropped unrun (aborted) unwound out of the pool
/// thread, which died still counted as a pool thread: after `CAP` of them no job ever ran again.
#[test]
fn panics_in_the_drops_of_a_job_do_not_use_up_the_pool() {
    struct PanicOnDrop(Arc<AtomicUsize>);
    impl Drop for PanicOnDrop {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
            panic!("PanicOnDrop dropped");
        }
    }
    let _serial = serial();
    guard(|| {
        block_on(async {
            let dropped = Arc::new(AtomicUsize::new(0));
            // The jobs wait until every handle is dropped, so their outputs are dropped on the
            // pool threads, not by a handle outliving its job.
            let released = Arc::new(AtomicBool::new(false));
            for _ in 0..2 * CAP {
                let bomb = PanicOnDrop(dropped.clone());
                let released = released.clone();
                drop(spawn_blocking(move || {
                    while !released.load(Ordering::SeqCst) {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    bomb
                }));
            }
            released.store(true, Ordering::SeqCst);
            while dropped.load(Ordering::SeqCst) < 2 * CAP {
                volt_rt::time::sleep(Duration::from_millis(1)).await;
            }
            let out = volt_rt::time::timeout(HANG_GUARD / 4, spawn_blocking(|| 6)).await;
            assert_eq!(out.expect("no pool thread ran the job").unwrap(), 6);
        });
    });
}
