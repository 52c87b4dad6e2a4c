//! Destructors that fail or spawn: a panic in the drop of a task's future or output, at any
//! point of its life or at the worker's exit, fails that task only; tasks spawned by
//! destructors at exit are dropped while the worker is still there.

mod common;

use std::future::{pending, Future};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use common::guard;
use volt_rt::{block_on, spawn, yield_now};

/// Panics when dropped: a future (or an output) whose destructor fails.
struct PanicOnDrop;

impl Drop for PanicOnDrop {
    fn drop(&mut self) {
        panic!("PanicOnDrop dropped");
    }
}

/// Regression: a panic in the destructor of an aborted task's future escaped the worker loop,
/// so `block_on` (or the worker thread) died instead of only that task failing.
#[test]
fn a_panic_in_the_drop_of_an_aborted_future_fails_only_that_task() {
    guard(|| {
        block_on(async {
            let handle = spawn(async {
                let _bomb = PanicOnDrop;
                pending::<()>().await;
            });
            yield_now().await; // polled once: `_bomb` lives in the future now
            handle.abort();
            assert!(handle.await.unwrap_err().is_cancelled());
            // The worker goes on.
            assert_eq!(spawn(async { 5 }).await.unwrap(), 5);
        });
    });
}

/// The same for a finished task: its future's own destructor, and its output's when nobody
/// holds the handle, run on the worker after the last poll.
#[test]
fn a_panic_in_the_drop_of_a_finished_future_or_its_output_fails_only_that_task() {
    struct ReadyThenPanicOnDrop;
    impl Future for ReadyThenPanicOnDrop {
        type Output = u32;
        fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<u32> {
            Poll::Ready(1)
        }
    }
    impl Drop for ReadyThenPanicOnDrop {
        fn drop(&mut self) {
            panic!("ReadyThenPanicOnDrop dropped");
        }
    }
    guard(|| {
        block_on(async {
            assert_eq!(spawn(ReadyThenPanicOnDrop).await.unwrap(), 1);
            drop(spawn(async { PanicOnDrop })); // detached: its output is dropped by the worker
            for _ in 0..3 {
                yield_now().await;
            }
            assert_eq!(spawn(async { 5 }).await.unwrap(), 5);
        });
    });
}

/// Regression: a task whose future panics when dropped, left at the end of `block_on`, made the
/// panic escape while the worker was being torn down, which left the thread's worker pointer
/// set to the freed worker: the next `block_on` on that thread refused to start ("block_on
/// inside a volt-rt worker"), and a destructor touching the runtime read freed memory.
#[test]
fn a_panic_in_the_drop_of_a_task_left_at_exit_is_contained() {
    guard(|| {
        let out = block_on(async {
            spawn(async {
                let _bomb = PanicOnDrop;
                pending::<()>().await;
            });
            yield_now().await;
            3
        });
        assert_eq!(out, 3);
        assert_eq!(block_on(async { 4 }), 4);
    });
}

/// Regression: tasks spawned by the destructors of the tasks dropped at worker exit were
/// dropped only after the worker was uninstalled, so their own destructors ran outside any
/// worker: one that spawned (or deregistered a socket, or removed a timer) panicked there or
/// did nothing, and the panic ended `block_on`.
#[test]
fn tasks_spawned_by_destructors_at_exit_are_dropped_on_the_worker() {
    guard(|| {
        let dropped = Arc::new(AtomicUsize::new(0));
        let first = SpawnOnDrop(3, dropped.clone());
        block_on(async move {
            spawn(async move {
                let _first = first;
                pending::<()>().await;
            });
            yield_now().await;
        });
        assert_eq!(dropped.load(Ordering::SeqCst), 4, "every level was dropped");
    });
}

/// Counts its drop and spawns a task holding a `SpawnOnDrop` one level lower, down to 0.
struct SpawnOnDrop(u32, Arc<AtomicUsize>);

impl Drop for SpawnOnDrop {
    fn drop(&mut self) {
        self.1.fetch_add(1, Ordering::SeqCst);
        if self.0 > 0 {
            let next = SpawnOnDrop(self.0 - 1, self.1.clone());
            spawn(async move {
                let _next = next;
                pending::<()>().await;
            });
        }
    }
}

/// Regression (the same as the one above, reached another way): a spawn sent to a worker that
/// exits before running it is dropped at exit, and a task its destructor spawns was left in the
/// slab (dropped after the drain), so that task's own destructor ran outside any worker.
#[test]
fn tasks_spawned_by_unrun_spawns_at_exit_are_dropped_on_the_worker() {
    guard(|| {
        let dropped = Arc::new(AtomicUsize::new(0));
        let first = SpawnOnDrop(3, dropped.clone());
        block_on(async move {
            // Sent to this worker's inbox, and left there: the main future returns first.
            drop(volt_rt::spawn_on(0, move || async move {
                let _first = first;
            }));
        });
        assert_eq!(dropped.load(Ordering::SeqCst), 4, "every level was dropped");
    });
}
