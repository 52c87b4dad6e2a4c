//! Tasks and join handles: spawn, join, abort, panics, detaching, wakers.
//!
//! These all run under Miri (`cargo +nightly miri test -p volt-rt --test tasks`); the socket one
//! uses a Unix socketpair, which Miri emulates.

mod common;

use std::cell::{Cell, RefCell};
use std::future::{pending, poll_fn, Future};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use common::{guard, CountingWaker, DropFlag};
use volt_rt::{block_on, spawn, yield_now, JoinHandle, Runtime};

/// Yields until `cond` holds.
async fn yield_until(mut cond: impl FnMut() -> bool) {
    while !cond() {
        yield_now().await;
    }
}

#[test]
fn spawn_and_join() {
    guard(|| {
        let out = block_on(async {
            let a = spawn(async { 1 });
            let b = spawn(async { "two".to_string() });
            (a.await.unwrap(), b.await.unwrap())
        });
        assert_eq!(out, (1, "two".to_string()));
    });
}

#[test]
fn tasks_spawn_tasks_and_run_in_fifo_order() {
    guard(|| {
        let order = block_on(async {
            let order = Rc::new(RefCell::new(Vec::new()));
            let mut handles = Vec::new();
            for i in 0..10 {
                let order = order.clone();
                handles.push(spawn(async move {
                    order.borrow_mut().push(i);
                    let inner = spawn(async move { i * 2 });
                    inner.await.unwrap()
                }));
            }
            let mut doubled = Vec::new();
            for h in handles {
                doubled.push(h.await.unwrap());
            }
            assert_eq!(doubled, (0..10).map(|i| i * 2).collect::<Vec<_>>());
            Rc::try_unwrap(order).unwrap().into_inner()
        });
        // First polls happen in spawn order.
        assert_eq!(order, (0..10).collect::<Vec<_>>());
    });
}

#[test]
fn many_tasks_that_yield() {
    let n: u64 = if cfg!(miri) { 200 } else { 10_000 };
    guard(move || {
        let sum = block_on(async move {
            let handles: Vec<_> = (0..n)
                .map(|i| {
                    spawn(async move {
                        for _ in 0..3 {
                            yield_now().await;
                        }
                        i
                    })
                })
                .collect();
            let mut sum = 0;
            for h in handles {
                sum += h.await.unwrap();
            }
            sum
        });
        assert_eq!(sum, n * (n - 1) / 2);
    });
}

#[test]
fn yield_now_lets_other_tasks_run() {
    guard(|| {
        let log = block_on(async {
            let log = Rc::new(RefCell::new(Vec::new()));
            let a = {
                let log = log.clone();
                spawn(async move {
                    for i in 0..3 {
                        log.borrow_mut().push(format!("a{i}"));
                        yield_now().await;
                    }
                })
            };
            let b = {
                let log = log.clone();
                spawn(async move {
                    for i in 0..3 {
                        log.borrow_mut().push(format!("b{i}"));
                        yield_now().await;
                    }
                })
            };
            a.await.unwrap();
            b.await.unwrap();
            Rc::try_unwrap(log).unwrap().into_inner()
        });
        assert_eq!(log, ["a0", "b0", "a1", "b1", "a2", "b2"]);
    });
}

#[test]
fn abort_before_first_poll() {
    guard(|| {
        let (flag, dropped) = DropFlag::new();
        let ran = Arc::new(AtomicBool::new(false));
        let ran2 = ran.clone();
        let err = block_on(async move {
            let handle = spawn(async move {
                let _flag = flag;
                ran2.store(true, Ordering::SeqCst);
            });
            handle.abort();
            handle.await.unwrap_err()
        });
        assert!(err.is_cancelled());
        assert!(!err.is_panic());
        assert_eq!(err.to_string(), "task was cancelled");
        assert!(!ran.load(Ordering::SeqCst), "an aborted task was polled");
        assert!(dropped.load(Ordering::SeqCst), "the future was not dropped");
    });
}

#[test]
fn abort_while_pending_on_a_timer_drops_the_future() {
    guard(|| {
        block_on(async {
            let (flag, dropped) = DropFlag::new();
            let started = Rc::new(Cell::new(false));
            let started2 = started.clone();
            let handle = spawn(async move {
                let _flag = flag;
                started2.set(true);
                volt_rt::time::sleep(Duration::from_secs(3600)).await;
                unreachable!("the sleep is aborted long before it ends");
            });
            yield_until(|| started.get()).await;
            assert!(!handle.is_finished());
            handle.abort();
            let err = handle.await.unwrap_err();
            assert!(err.is_cancelled());
            // The destructor ran before the handle resolved.
            assert!(dropped.load(Ordering::SeqCst));
            // Its hour-long timer went with it: the worker does not wait for it on exit or
            // now (this sleep would be preceded by the hour otherwise only if the map were
            // broken; the real check is in timers.rs).
            volt_rt::time::sleep(Duration::from_millis(1)).await;
        });
    });
}

#[test]
fn abort_while_pending_on_a_socket_read_drops_the_future() {
    guard(|| {
        block_on(async {
            let (a, b) = volt_rt::net::UnixStream::pair().unwrap();
            let (flag, dropped) = DropFlag::new();
            let started = Rc::new(Cell::new(false));
            let started2 = started.clone();
            let handle = spawn(async move {
                let _flag = flag;
                started2.set(true);
                let mut buf = [0u8; 16];
                let _ = a.read(&mut buf).await;
                unreachable!("nothing is ever written to the socket");
            });
            yield_until(|| started.get()).await;
            handle.abort();
            assert!(handle.await.unwrap_err().is_cancelled());
            assert!(dropped.load(Ordering::SeqCst));
            // The stream `a` was dropped with the task: its peer sees end of stream.
            let mut buf = [0u8; 16];
            assert_eq!(b.read(&mut buf).await.unwrap(), 0);
        });
    });
}

#[test]
fn abort_after_completion_keeps_the_output() {
    guard(|| {
        let out = block_on(async {
            let handle = spawn(async { 7 });
            let check = &handle;
            yield_until(|| check.is_finished()).await;
            handle.abort();
            handle.await
        });
        assert_eq!(out.unwrap(), 7);
    });
}

#[test]
fn abort_from_inside_the_task_itself() {
    guard(|| {
        block_on(async {
            let slot: Rc<RefCell<Option<JoinHandle<()>>>> = Rc::new(RefCell::new(None));
            let slot2 = slot.clone();
            let reached = Rc::new(Cell::new(false));
            let reached2 = reached.clone();
            let (flag, dropped) = DropFlag::new();
            let handle = spawn(async move {
                let _flag = flag;
                yield_now().await; // by now the handle is in the slot
                slot2.borrow_mut().take().unwrap().abort();
                yield_now().await; // the abort takes effect here
                reached2.set(true);
            });
            *slot.borrow_mut() = Some(handle);
            yield_until(|| dropped.load(Ordering::SeqCst)).await;
            assert!(!reached.get(), "the task ran past its own abort");
        });
    });
}

#[test]
fn panic_in_a_task_is_reported_by_its_handle() {
    guard(|| {
        block_on(async {
            let str_panic = spawn(async {
                panic!("static message");
            });
            let err = str_panic.await.unwrap_err();
            assert!(err.is_panic());
            assert!(!err.is_cancelled());
            assert_eq!(err.to_string(), "task panicked: static message");

            let n = 42;
            let string_panic = spawn(async move {
                yield_now().await;
                panic!("formatted {n}");
            });
            let err = string_panic.await.unwrap_err();
            assert_eq!(err.to_string(), "task panicked: formatted 42");
            let payload = err.into_panic();
            assert_eq!(payload.downcast_ref::<String>().unwrap(), "formatted 42");

            // A payload that is not a string has no message to show.
            let other_panic = spawn(async {
                std::panic::panic_any(42_u32);
            });
            let err = other_panic.await.unwrap_err();
            assert_eq!(err.to_string(), "task panicked");

            // The worker keeps running other tasks, timers included.
            let after = spawn(async {
                volt_rt::time::sleep(Duration::from_millis(1)).await;
                yield_now().await;
                "still alive"
            });
            assert_eq!(after.await.unwrap(), "still alive");
        });
    });
}

#[test]
fn a_panicking_task_does_not_disturb_the_other_tasks_of_its_worker() {
    guard(|| {
        let rt = Runtime::builder().workers(1).build().unwrap();
        let results = rt.run(|_| async {
            let steady = spawn(async {
                let mut n = 0;
                for _ in 0..100 {
                    yield_now().await;
                    n += 1;
                }
                n
            });
            let panics: Vec<_> = (0..10)
                .map(|i| {
                    spawn(async move {
                        for _ in 0..i {
                            yield_now().await;
                        }
                        panic!("task {i}");
                    })
                })
                .collect();
            for (i, p) in panics.into_iter().enumerate() {
                assert_eq!(
                    p.await.unwrap_err().to_string(),
                    format!("task panicked: task {i}")
                );
            }
            steady.await.unwrap()
        });
        assert_eq!(results, vec![100]);
    });
}

#[test]
fn detached_tasks_keep_running() {
    guard(|| {
        let got = block_on(async {
            let (tx, mut rx) = volt_rt::channel();
            for i in 0..5 {
                let tx = tx.clone();
                // The handle is dropped at once: the task is detached, not cancelled.
                drop(spawn(async move {
                    for _ in 0..i {
                        yield_now().await;
                    }
                    volt_rt::time::sleep(Duration::from_millis(1)).await;
                    tx.send(i).unwrap();
                }));
            }
            drop(tx);
            let mut got = Vec::new();
            while let Some(i) = rx.recv().await {
                got.push(i);
            }
            got.sort();
            got
        });
        assert_eq!(got, vec![0, 1, 2, 3, 4]);
    });
}

#[test]
fn join_handle_awaited_on_another_worker() {
    guard(|| {
        let rt = Runtime::builder().workers(2).build().unwrap();
        let results = rt.run(|worker| async move {
            if worker != 0 {
                // Keep serving spawns until worker 0 is done.
                volt_rt::Handle::current().stopped().await;
                return Vec::new();
            }
            // Spawned on worker 1, awaited on worker 0.
            let remote = volt_rt::spawn_on(1, || async {
                yield_now().await;
                volt_rt::worker_index()
            });
            // Spawned on worker 1, which spawns back on worker 0 and awaits that there.
            let nested = volt_rt::spawn_on(1, || async {
                let back = volt_rt::spawn_on(0, || async { volt_rt::worker_index() * 10 + 7 });
                (volt_rt::worker_index(), back.await.unwrap())
            });
            let (nested_worker, back) = nested.await.unwrap();
            let out = vec![remote.await.unwrap(), nested_worker, back];
            volt_rt::Handle::current().stop();
            out
        });
        assert_eq!(results[0], vec![1, 1, 7]);
    });
}

#[test]
fn join_handle_of_a_local_task_sent_to_another_worker() {
    guard(|| {
        let rt = Runtime::builder().workers(2).build().unwrap();
        let (handle_tx, handle_rx) = volt_rt::channel::<JoinHandle<usize>>();
        let (done_tx, done_rx) = volt_rt::channel::<()>();
        let worker0 = Mutex::new(Some((handle_tx, done_rx)));
        let worker1 = Mutex::new(Some((handle_rx, done_tx)));
        let results = rt.run(|worker| {
            let mine0 = if worker == 0 {
                worker0.lock().unwrap().take()
            } else {
                None
            };
            let mine1 = if worker == 1 {
                worker1.lock().unwrap().take()
            } else {
                None
            };
            async move {
                if let Some((handle_tx, mut done_rx)) = mine0 {
                    let handle = spawn(async {
                        volt_rt::time::sleep(Duration::from_millis(5)).await;
                        volt_rt::worker_index() + 100
                    });
                    handle_tx.send(handle).unwrap();
                    // Stay alive until worker 1 has the output: returning would drop the task.
                    done_rx.recv().await;
                    0
                } else {
                    let (mut handle_rx, done_tx) = mine1.unwrap();
                    let handle = handle_rx.recv().await.unwrap();
                    let out = handle.await.unwrap();
                    done_tx.send(()).unwrap();
                    out
                }
            }
        });
        assert_eq!(results, vec![0, 100]);
    });
}

/// Regression: a panic in the `make` closure of `spawn_on` ran in the worker loop itself and
/// killed the worker (and with it `Runtime::run`/`block_on`) instead of failing the task.
#[test]
fn spawn_on_make_panic_fails_only_that_task() {
    guard(|| {
        block_on(async {
            let handle = volt_rt::spawn_on(0, || -> std::future::Ready<u8> {
                panic!("make failed");
            });
            let err = handle.await.unwrap_err();
            assert!(err.is_panic());
            assert_eq!(err.to_string(), "task panicked: make failed");
            assert_eq!(spawn(async { 5 }).await.unwrap(), 5);
        });
    });
}

/// `spawn_on` to a worker that has exited cancels the task instead of queueing it forever.
#[test]
fn spawn_on_an_exited_worker_is_cancelled() {
    guard(|| {
        let rt = Runtime::builder().workers(2).build().unwrap();
        let results = rt.run(|worker| async move {
            if worker == 1 {
                return None;
            }
            // Worker 1 returns at once; wait until it has (its spawns then come back).
            loop {
                let ran = Arc::new(AtomicBool::new(false));
                let ran2 = ran.clone();
                let handle = volt_rt::spawn_on(1, move || async move {
                    ran2.store(true, Ordering::SeqCst);
                });
                match handle.await {
                    Ok(()) => volt_rt::time::sleep(Duration::from_millis(1)).await,
                    Err(e) => {
                        assert!(!ran.load(Ordering::SeqCst));
                        return Some(e.is_cancelled());
                    }
                }
            }
        });
        assert_eq!(results, vec![Some(true), None]);
    });
}

/// Regression: a task dropped unfinished because its worker's main future returned left its
/// `JoinHandle` pending forever. It now resolves to a cancellation, after the destructor ran.
#[test]
fn handle_of_a_task_dropped_at_worker_exit_resolves_cancelled() {
    guard(|| {
        let (flag, dropped) = DropFlag::new();
        // The handle is returned out of the worker; its task is dropped as `block_on` ends.
        #[allow(clippy::async_yields_async)]
        let handle = block_on(async move {
            spawn(async move {
                let _flag = flag;
                pending::<()>().await;
            })
        });
        assert!(dropped.load(Ordering::SeqCst));
        assert!(handle.is_finished());
        let err = block_on(handle).unwrap_err();
        assert!(err.is_cancelled());
    });
}

/// The same across workers: worker 1 exits while worker 0 awaits a task that lived on worker 1.
#[test]
fn remote_handle_resolves_when_its_worker_exits() {
    guard(|| {
        let rt = Runtime::builder().workers(2).build().unwrap();
        let (started_tx, started_rx) = volt_rt::channel::<()>();
        let (quit_tx, quit_rx) = volt_rt::channel::<()>();
        let worker0 = Mutex::new(Some((started_tx, started_rx, quit_tx)));
        let worker1 = Mutex::new(Some(quit_rx));
        let results = rt.run(|worker| {
            let mine0 = if worker == 0 {
                worker0.lock().unwrap().take()
            } else {
                None
            };
            let mine1 = if worker == 1 {
                worker1.lock().unwrap().take()
            } else {
                None
            };
            async move {
                if let Some((started_tx, mut started_rx, quit_tx)) = mine0 {
                    let (flag, dropped) = DropFlag::new();
                    let handle = volt_rt::spawn_on(1, move || async move {
                        let _flag = flag;
                        started_tx.send(()).unwrap();
                        pending::<()>().await;
                    });
                    started_rx.recv().await.unwrap();
                    // Worker 1's main future returns; the task it runs is dropped unfinished.
                    quit_tx.send(()).unwrap();
                    let err = handle.await.unwrap_err();
                    assert!(err.is_cancelled());
                    assert!(
                        dropped.load(Ordering::SeqCst),
                        "handle resolved before drop"
                    );
                    true
                } else {
                    mine1.unwrap().recv().await;
                    false
                }
            }
        });
        assert_eq!(results, vec![true, false]);
    });
}

/// `spawn_on`'s handle aborted before the target worker even spawned the task: the task is
/// never polled (the executor learns of the abort when it spawns it, not from a later wake).
#[test]
fn abort_of_a_remote_task_before_its_worker_spawns_it() {
    guard(|| {
        let rt = Runtime::builder().workers(2).build().unwrap();
        let go = Arc::new(AtomicBool::new(false));
        let ran = Arc::new(AtomicBool::new(false));
        rt.run(move |worker| {
            let (go, ran) = (go.clone(), ran.clone());
            async move {
                if worker != 0 {
                    // Busy without yielding, so the spawn waits in this worker's inbox.
                    while !go.load(Ordering::SeqCst) {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    volt_rt::Handle::current().stopped().await;
                    return;
                }
                let ran2 = ran.clone();
                let handle = volt_rt::spawn_on(1, move || async move {
                    ran2.store(true, Ordering::SeqCst);
                });
                handle.abort();
                go.store(true, Ordering::SeqCst);
                assert!(handle.await.unwrap_err().is_cancelled());
                assert!(!ran.load(Ordering::SeqCst), "an aborted task was polled");
                volt_rt::Handle::current().stop();
            }
        });
    });
}

/// The future's destructor runs before a remote awaiter sees the cancellation.
#[test]
fn abort_of_a_remote_task_drops_its_future_before_the_handle_resolves() {
    guard(|| {
        let rt = Runtime::builder().workers(2).build().unwrap();
        let rounds = if cfg!(miri) { 5 } else { 50 };
        rt.run(|worker| async move {
            if worker != 0 {
                volt_rt::Handle::current().stopped().await;
                return;
            }
            for _ in 0..rounds {
                let (flag, dropped) = DropFlag::new();
                let started = Arc::new(AtomicBool::new(false));
                let started2 = started.clone();
                let handle = volt_rt::spawn_on(1, move || async move {
                    let _flag = SlowDrop(flag);
                    started2.store(true, Ordering::SeqCst);
                    pending::<()>().await;
                });
                while !started.load(Ordering::SeqCst) {
                    volt_rt::time::sleep(Duration::from_millis(1)).await;
                }
                handle.abort();
                assert!(handle.await.unwrap_err().is_cancelled());
                assert!(
                    dropped.load(Ordering::SeqCst),
                    "handle resolved before drop"
                );
            }
            volt_rt::Handle::current().stop();
        });
    });

    /// Widens the window in which a handle could resolve before the destructor finished.
    struct SlowDrop(#[allow(dead_code)] DropFlag);
    impl Drop for SlowDrop {
        fn drop(&mut self) {
            // Work, not sleep or yield: on a loaded machine each yield can cost a time slice.
            let mut x = 1u64;
            for i in 0..20_000u64 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
            }
            std::hint::black_box(x);
        }
    }
}

#[test]
#[should_panic(expected = "block_on inside a volt-rt worker")]
fn nested_block_on_panics() {
    guard(|| {
        block_on(async {
            block_on(async {});
        })
    });
}

#[test]
fn nested_block_on_in_a_task_fails_that_task_only() {
    guard(|| {
        block_on(async {
            let err = spawn(async { block_on(async { 1 }) }).await.unwrap_err();
            assert!(err.is_panic());
            assert!(
                err.to_string().contains("block_on inside a volt-rt worker"),
                "{err}"
            );
            // The worker still works, local wakes and timers included.
            let t = spawn(async {
                yield_now().await;
                volt_rt::time::sleep(Duration::from_millis(1)).await;
                3
            });
            assert_eq!(t.await.unwrap(), 3);
        });
    });
}

#[test]
#[should_panic(expected = "must be called from a volt-rt worker")]
fn spawn_outside_a_worker_panics() {
    drop(spawn(async {}));
}

/// A future that parks its waker where a plain thread can take and wake it.
struct Parked {
    slot: Arc<Mutex<Option<Waker>>>,
    fired: Arc<AtomicBool>,
}

impl Future for Parked {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.fired.load(Ordering::SeqCst) {
            return Poll::Ready(());
        }
        *self.slot.lock().unwrap() = Some(cx.waker().clone());
        if self.fired.load(Ordering::SeqCst) {
            return Poll::Ready(());
        }
        Poll::Pending
    }
}

#[test]
fn wakers_called_from_plain_threads_wake_the_right_tasks() {
    let n = if cfg!(miri) { 4 } else { 64 };
    guard(move || {
        block_on(async move {
            let mut handles = Vec::new();
            let mut remotes = Vec::new();
            for i in 0..n {
                let slot = Arc::new(Mutex::new(None));
                let fired = Arc::new(AtomicBool::new(false));
                remotes.push((slot.clone(), fired.clone()));
                handles.push(spawn(async move {
                    Parked { slot, fired }.await;
                    i
                }));
            }
            // Let every task park its waker.
            for _ in 0..3 {
                yield_now().await;
            }
            let threads: Vec<_> = remotes
                .into_iter()
                .rev()
                .map(|(slot, fired)| {
                    std::thread::spawn(move || {
                        fired.store(true, Ordering::SeqCst);
                        if let Some(w) = slot.lock().unwrap().take() {
                            w.wake();
                        }
                    })
                })
                .collect();
            for (i, h) in handles.into_iter().enumerate() {
                assert_eq!(h.await.unwrap(), i);
            }
            for t in threads {
                t.join().unwrap();
            }
        });
    });
}

#[test]
fn stale_wakers_of_finished_tasks_are_harmless() {
    guard(|| {
        block_on(async {
            let stash: Rc<RefCell<Vec<Waker>>> = Rc::new(RefCell::new(Vec::new()));
            for _ in 0..10 {
                let stash = stash.clone();
                spawn(async move {
                    poll_fn(|cx| {
                        stash.borrow_mut().push(cx.waker().clone());
                        Poll::Ready(())
                    })
                    .await
                })
                .await
                .unwrap();
            }
            // New tasks reuse the finished tasks' slots; the old wakers must not disturb them.
            let polls = Rc::new(Cell::new(0));
            let polls2 = polls.clone();
            let t = spawn(async move {
                poll_fn(|_| {
                    polls2.set(polls2.get() + 1);
                    if polls2.get() < 3 {
                        Poll::Pending
                    } else {
                        Poll::Ready(())
                    }
                })
                .await
            });
            yield_now().await;
            let from_thread = stash.borrow_mut().pop().unwrap();
            std::thread::spawn(move || from_thread.wake())
                .join()
                .unwrap();
            for w in stash.borrow_mut().drain(..) {
                w.wake();
            }
            yield_now().await;
            yield_now().await;
            // The slots were reused, but the generation in each task id tells the old wakers
            // apart: the new task was polled only once, when it was spawned.
            assert_eq!(polls.get(), 1);
            assert!(!t.is_finished());
            drop(t);
        });
    });
}

#[test]
fn join_handle_polled_with_changing_wakers() {
    guard(|| {
        block_on(async {
            let handle = spawn(async {
                volt_rt::time::sleep(Duration::from_millis(2)).await;
                9
            });
            let mut handle = Box::pin(handle);
            // Poll once with a foreign waker, then await with the task's own.
            let (counter, waker) = CountingWaker::new();
            let mut cx = Context::from_waker(&waker);
            assert!(handle.as_mut().poll(&mut cx).is_pending());
            assert_eq!(handle.await.unwrap(), 9);
            // The foreign waker was replaced, not woken, and not leaked.
            assert_eq!(counter.wakes.load(Ordering::SeqCst), 0);
            assert_eq!(Arc::strong_count(&counter), 2); // `counter` and `waker`
        });
    });
}

#[test]
fn handle_current_and_worker_index_in_block_on() {
    guard(|| {
        block_on(async {
            assert_eq!(volt_rt::worker_index(), 0);
            let handle = volt_rt::Handle::current();
            assert_eq!(handle.workers(), 1);
            let counter = Arc::new(AtomicUsize::new(0));
            let c = counter.clone();
            let h = handle.spawn_on(5, move || async move {
                c.fetch_add(1, Ordering::SeqCst);
                volt_rt::worker_index()
            });
            assert_eq!(h.await.unwrap(), 0);
            assert_eq!(counter.load(Ordering::SeqCst), 1);
        });
    });
}
