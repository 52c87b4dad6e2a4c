//! Regression test for the blocking pool's wakeups, alone in its binary so the pool starts
//! fresh: one idle thread, nothing else.
//!
//! The bug: jobs submitted back to back while one pool thread was idle all "woke" that one
//! thread, so the pool started no more threads although it was far below its cap; the jobs
//! queued behind each other. Jobs that wait for one another then deadlocked.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{guard, HANG_GUARD};
use volt_rt::{block_on, spawn_blocking};

#[test]
fn jobs_that_wait_for_each_other_get_their_own_threads() {
    guard(|| {
        block_on(async {
            const JOBS: usize = 4;
            // One pool thread, which goes idle after this job. The pause only makes the old bug
            // show reliably (the thread is waiting by the time the next jobs arrive); the test
            // passes whatever the timing.
            spawn_blocking(|| ()).await.unwrap();
            std::thread::sleep(Duration::from_millis(50));

            let arrived = Arc::new(AtomicUsize::new(0));
            let handles: Vec<_> = (0..JOBS)
                .map(|_| {
                    let arrived = arrived.clone();
                    spawn_blocking(move || {
                        // A rendezvous: returns true once every job is running at the same time.
                        arrived.fetch_add(1, Ordering::SeqCst);
                        let start = Instant::now();
                        while arrived.load(Ordering::SeqCst) < JOBS {
                            if start.elapsed() > HANG_GUARD / 2 {
                                return false;
                            }
                            std::thread::sleep(Duration::from_millis(1));
                        }
                        true
                    })
                })
                .collect();
            for h in handles {
                assert!(h.await.unwrap(), "the jobs never ran at the same time");
            }
        });
    });
}
