//! Wakeups across threads under stress: plain threads sending to, spawning on, and waking tasks
//! on runtime workers. Every message is counted exactly once.
//!
//! Runs under Miri (`cargo +nightly miri test -p volt-rt --test cross_worker`) with small counts.

mod common;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use common::guard;
use volt_rt::{channel, spawn, spawn_blocking, Handle, Runtime};

/// (threads, items per thread): the stress sizes, much smaller under Miri.
fn sizes(threads: u64, per_thread: u64) -> (u64, u64) {
    if cfg!(miri) {
        (threads.min(3), per_thread.min(30))
    } else {
        (threads, per_thread)
    }
}

/// 8 plain threads each send 20,000 numbered messages to a task on worker 1 of a runtime;
/// the receiver checks each sender's sequence: nothing lost, doubled or reordered.
#[test]
fn plain_threads_flood_a_worker_through_a_channel() {
    let (threads, per_thread) = sizes(8, 20_000);
    guard(move || {
        let rt = Runtime::builder().workers(2).build().unwrap();
        let handle = rt.handle();
        let (tx, rx) = channel::<(u64, u64)>();
        let rx = Mutex::new(Some(rx));
        // The senders start together with the receiver, so it keeps draining and parking while
        // they send: the wakes go through the worker's inbox and eventfd.
        let gate = Arc::new(std::sync::Barrier::new(threads as usize + 1));
        let senders: Vec<_> = (0..threads)
            .map(|t| {
                let tx = tx.clone();
                let gate = gate.clone();
                std::thread::spawn(move || {
                    gate.wait();
                    for seq in 0..per_thread {
                        tx.send((t, seq)).unwrap();
                        if seq % 512 == 0 {
                            std::thread::yield_now();
                        }
                    }
                })
            })
            .collect();
        drop(tx);
        let results = rt.run(|worker| {
            let rx = if worker == 1 {
                rx.lock().unwrap().take()
            } else {
                None
            };
            let handle = handle.clone();
            let gate = gate.clone();
            async move {
                let Some(mut rx) = rx else {
                    handle.stopped().await;
                    return None;
                };
                gate.wait();
                let mut next = vec![0u64; threads as usize];
                let mut sum = 0u64;
                while let Some((t, seq)) = rx.recv().await {
                    assert_eq!(
                        seq, next[t as usize],
                        "sender {t}: lost, doubled or reordered"
                    );
                    next[t as usize] += 1;
                    sum += seq;
                }
                handle.stop();
                Some((next, sum))
            }
        });
        for s in senders {
            s.join().unwrap();
        }
        let (next, sum) = results[1].clone().unwrap();
        assert_eq!(next, vec![per_thread; threads as usize]);
        assert_eq!(sum, threads * per_thread * (per_thread - 1) / 2);
    });
}

/// Plain threads spawn on every worker through `Handle::spawn_on`, many times; each task runs
/// on the worker it was sent to, exactly once.
#[test]
fn spawn_on_from_plain_threads_to_every_worker() {
    let (threads, per_thread) = sizes(8, 2_000);
    guard(move || {
        let rt = Runtime::builder().workers(2).build().unwrap();
        let handle = rt.handle();
        let ran = Arc::new(AtomicUsize::new(0));
        let spawners: Vec<_> = (0..threads)
            .map(|t| {
                let handle = handle.clone();
                let ran = ran.clone();
                std::thread::spawn(move || {
                    let mut handles = Vec::new();
                    for i in 0..per_thread {
                        let target = ((t + i) % 2) as usize;
                        let ran = ran.clone();
                        let h = handle.spawn_on(target, move || async move {
                            ran.fetch_add(1, Ordering::SeqCst);
                            (target, volt_rt::worker_index())
                        });
                        handles.push(h);
                    }
                    handles
                })
            })
            .collect();
        let handles = Mutex::new(Vec::new());
        let spawned: Vec<_> = spawners
            .into_iter()
            .flat_map(|s| s.join().unwrap())
            .collect();
        *handles.lock().unwrap() = spawned;
        let stop = rt.handle();
        let checked = rt.run(|worker| {
            // Worker 0 awaits every handle (half of them are for tasks on worker 1).
            let mine = if worker == 0 {
                std::mem::take(&mut *handles.lock().unwrap())
            } else {
                Vec::new()
            };
            let stop = stop.clone();
            async move {
                if worker != 0 {
                    stop.stopped().await;
                    return 0;
                }
                let mut checked = 0;
                for h in mine {
                    let (target, ran_on) = h.await.unwrap();
                    assert_eq!(target, ran_on);
                    checked += 1;
                }
                stop.stop();
                checked
            }
        });
        assert_eq!(checked[0] as u64, threads * per_thread);
        assert_eq!(ran.load(Ordering::SeqCst) as u64, threads * per_thread);
    });
}

/// A future pending until a plain thread sets its flag and wakes it.
struct Signal {
    waker: Arc<Mutex<Option<Waker>>>,
    fired: Arc<AtomicBool>,
}

impl Future for Signal {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut slot = self.waker.lock().unwrap();
        if self.fired.load(Ordering::SeqCst) {
            return Poll::Ready(());
        }
        *slot = Some(cx.waker().clone());
        Poll::Pending
    }
}

/// Many tasks on one worker, each woken (once, or several times) by a different plain thread,
/// while the worker is also busy with its own work: every task finishes.
#[test]
fn plain_threads_wake_tasks_on_a_worker() {
    let (tasks, wakes) = sizes(2_000, 5);
    guard(move || {
        let rt = Runtime::builder().workers(2).build().unwrap();
        let slots: Vec<_> = (0..tasks)
            .map(|_| {
                (
                    Arc::new(Mutex::new(None::<Waker>)),
                    Arc::new(AtomicBool::new(false)),
                )
            })
            .collect();
        let for_workers = Mutex::new(Some(slots.clone()));
        let woken = Arc::new(AtomicUsize::new(0));
        let stop = rt.handle();
        std::thread::scope(|scope| {
            let (registered_tx, registered_rx) = std::sync::mpsc::channel::<()>();
            let waker_thread = scope.spawn(move || {
                registered_rx.recv().unwrap();
                // Several threads wake disjoint tasks; spurious extra wakes first.
                let chunks: Vec<_> = slots
                    .chunks(slots.len().div_ceil(8))
                    .map(<[_]>::to_vec)
                    .collect();
                let threads: Vec<_> = chunks
                    .into_iter()
                    .map(|chunk| {
                        std::thread::spawn(move || {
                            for _ in 0..wakes {
                                for (waker, _) in &chunk {
                                    if let Some(w) = waker.lock().unwrap().clone() {
                                        w.wake();
                                    }
                                }
                            }
                            for (waker, fired) in &chunk {
                                let w = {
                                    let slot = waker.lock().unwrap();
                                    fired.store(true, Ordering::SeqCst);
                                    slot.clone()
                                };
                                if let Some(w) = w {
                                    w.wake();
                                }
                            }
                        })
                    })
                    .collect();
                for t in threads {
                    t.join().unwrap();
                }
            });
            let registered_tx = Mutex::new(Some(registered_tx));
            let results = rt.run(|worker| {
                let mine = if worker == 1 {
                    for_workers.lock().unwrap().take()
                } else {
                    None
                };
                let registered_tx = if worker == 1 {
                    registered_tx.lock().unwrap().take()
                } else {
                    None
                };
                let woken = woken.clone();
                let stop = stop.clone();
                async move {
                    let Some(slots) = mine else {
                        stop.stopped().await;
                        return 0;
                    };
                    let handles: Vec<_> = slots
                        .into_iter()
                        .map(|(waker, fired)| {
                            let woken = woken.clone();
                            spawn(async move {
                                Signal { waker, fired }.await;
                                woken.fetch_add(1, Ordering::SeqCst);
                            })
                        })
                        .collect();
                    // Let every task park its waker, then release the wakers.
                    volt_rt::yield_now().await;
                    if let Some(tx) = registered_tx {
                        tx.send(()).unwrap();
                    }
                    // Keep the worker busy meanwhile.
                    let busy = spawn(async {
                        for _ in 0..1_000 {
                            volt_rt::yield_now().await;
                        }
                    });
                    let n = handles.len();
                    for h in handles {
                        h.await.unwrap();
                    }
                    busy.await.unwrap();
                    stop.stop();
                    n
                }
            });
            waker_thread.join().unwrap();
            assert_eq!(results[1] as u64, tasks);
        });
        assert_eq!(woken.load(Ordering::SeqCst) as u64, tasks);
    });
}

/// Blocking jobs complete on pool threads; their wakes reach the right task on the right worker.
#[test]
fn spawn_blocking_completions_wake_tasks_on_each_worker() {
    let (per_worker, _) = sizes(300, 0);
    guard(move || {
        let rt = Runtime::builder().workers(2).build().unwrap();
        let results = rt.run(|worker| async move {
            let tasks: Vec<_> = (0..per_worker)
                .map(|i| {
                    spawn(async move {
                        let job = spawn_blocking(move || (worker as u64) * 1_000_000 + i);
                        let out = job.await.unwrap();
                        // Resumed on its own worker, with its own result.
                        assert_eq!(volt_rt::worker_index(), worker);
                        out
                    })
                })
                .collect();
            let mut outs = Vec::new();
            for t in tasks {
                outs.push(t.await.unwrap());
            }
            outs
        });
        for (worker, outs) in results.into_iter().enumerate() {
            let expected: Vec<u64> = (0..per_worker)
                .map(|i| worker as u64 * 1_000_000 + i)
                .collect();
            assert_eq!(outs, expected);
        }
    });
}

/// Workers ping-pong messages through two channels: every hop is a cross-thread wake.
#[test]
fn ping_pong_between_workers() {
    let (rounds, _) = sizes(10_000, 0);
    guard(move || {
        let rt = Runtime::builder().workers(2).build().unwrap();
        let (to_1, from_0) = channel::<u64>();
        let (to_0, from_1) = channel::<u64>();
        let ends = Mutex::new(vec![Some((to_1, from_1)), Some((to_0, from_0))]);
        let results = rt.run(|worker| {
            let (tx, mut rx) = ends.lock().unwrap()[worker].take().unwrap();
            async move {
                if worker == 0 {
                    tx.send(0).unwrap();
                }
                let mut last = 0;
                while let Some(n) = rx.recv().await {
                    last = n;
                    if n >= rounds {
                        break;
                    }
                    if tx.send(n + 1).is_err() {
                        break;
                    }
                }
                last
            }
        });
        // One worker saw `rounds` and stopped; the other saw `rounds - 1` and then the close.
        let mut results = results;
        results.sort();
        assert_eq!(results, vec![rounds - 1, rounds]);
    });
}

/// `Handle` is usable after the runtime has run: a spawn before the run waits for it.
#[test]
fn spawn_on_before_the_runtime_runs_waits_for_it() {
    guard(|| {
        let rt = Runtime::builder().workers(2).build().unwrap();
        let handle: Handle = rt.handle();
        let early = handle.spawn_on(1, || async { volt_rt::worker_index() });
        let early = Mutex::new(Some(early));
        let results = rt.run(|worker| {
            let early = if worker == 0 {
                early.lock().unwrap().take()
            } else {
                None
            };
            let handle = handle.clone();
            async move {
                match early {
                    Some(h) => {
                        let out = h.await.unwrap();
                        handle.stop();
                        Some(out)
                    }
                    None => {
                        handle.stopped().await;
                        None
                    }
                }
            }
        });
        assert_eq!(results, vec![Some(1), None]);
    });
}

/// Two workers each send 10,000 messages to the other at once (a task sends, yielding now and
/// then, while the main future receives): every message arrives, in order.
#[test]
fn two_workers_flood_each_other() {
    let (count, _) = sizes(10_000, 0);
    guard(move || {
        let rt = Runtime::builder().workers(2).build().unwrap();
        let (to_1, from_0) = channel::<u64>();
        let (to_0, from_1) = channel::<u64>();
        let ends = Mutex::new(vec![Some((to_1, from_1)), Some((to_0, from_0))]);
        let received = rt.run(|worker| {
            let (tx, mut rx) = ends.lock().unwrap()[worker].take().unwrap();
            async move {
                let sending = spawn(async move {
                    for n in 0..count {
                        tx.send(n).unwrap();
                        if n % 64 == 0 {
                            volt_rt::yield_now().await;
                        }
                    }
                });
                for expected in 0..count {
                    assert_eq!(rx.recv().await, Some(expected));
                }
                sending.await.unwrap();
                // Both received everything before either drops its receiver.
                count
            }
        });
        assert_eq!(received, vec![count, count]);
    });
}

/// A worker whose main future returns drops its channel's receiver: a sender on another worker
/// then gets its value back as an error instead of queueing it for nobody.
#[test]
fn a_send_to_a_worker_that_exited_is_an_error() {
    guard(|| {
        let rt = Runtime::builder().workers(2).build().unwrap();
        let (tx, rx) = channel::<u64>();
        let ends = Mutex::new((Some(tx), Some(rx)));
        let sent = rt.run(|worker| {
            let tx = (worker == 0).then(|| ends.lock().unwrap().0.take().unwrap());
            let rx = (worker == 1).then(|| ends.lock().unwrap().1.take().unwrap());
            async move {
                if let Some(mut rx) = rx {
                    assert_eq!(rx.recv().await, Some(0));
                    return None; // worker 1 exits, dropping the receiver
                }
                let tx = tx.unwrap();
                let mut n = 0;
                while tx.send(n).is_ok() {
                    n += 1;
                    volt_rt::yield_now().await;
                }
                Some(tx.send(u64::MAX).unwrap_err().0)
            }
        });
        assert_eq!(sent, vec![Some(u64::MAX), None]);
    });
}
