//! Stopping a runtime: `Handle::stop`, `Handle::stopped`, and what happens to the tasks left.
//!
//! The graceful-stop test drives a real server and is not run under Miri; the rest are.

mod common;

use std::future::Future;
use std::io::{Read, Write};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::task::Context;

use common::{guard, wait_until, CountingWaker, DropFlag, SharedPort, HANG_GUARD};
use volt_rt::future::{race, Either};
use volt_rt::net::TcpStream;
use volt_rt::{spawn, Handle, Runtime};

/// The response to request `id`: a status line and a body no other request gets.
fn response_for(id: u64) -> Vec<u8> {
    let mut out = format!("RESP {id} ").into_bytes();
    out.extend((0..20_000u64).map(|i| b'a' + ((i * 7 + id) % 26) as u8));
    out.push(b'\n');
    out
}

/// Serves one request that arrives in two parts ("REQ <id>\n", later "END\n"): after the first
/// part the request is in flight (`ready` counts it), the response goes after the second.
async fn serve_one(conn: TcpStream, ready: Arc<AtomicUsize>) {
    let mut buf = Vec::new();
    while !buf.contains(&b'\n') {
        assert!(
            conn.read_buf(&mut buf).await.unwrap() > 0,
            "closed mid-request"
        );
    }
    ready.fetch_add(1, Ordering::SeqCst);
    while !buf.ends_with(b"END\n") {
        assert!(
            conn.read_buf(&mut buf).await.unwrap() > 0,
            "closed mid-request"
        );
    }
    let line = std::str::from_utf8(&buf[..buf.iter().position(|&b| b == b'\n').unwrap()]).unwrap();
    let id: u64 = line.strip_prefix("REQ ").unwrap().parse().unwrap();
    conn.write_all(&response_for(id)).await.unwrap();
}

/// A server loop on every worker races `stopped()` with `accept`. When stopped it closes its
/// listener and waits for its in-flight requests. The test stops the runtime from another thread
/// while every request is half received: every request still gets its full response, and
/// `Runtime::run` returns.
#[test]
#[cfg_attr(miri, ignore)] // sockets
fn graceful_stop_finishes_requests_in_flight() {
    const WORKERS: usize = 2;
    const REQUESTS: u64 = 40;
    guard(|| {
        let server = Runtime::builder().workers(WORKERS).build().unwrap();
        let handle = server.handle();
        let (port, bound) = SharedPort::new(WORKERS);
        let ready = Arc::new(AtomicUsize::new(0));
        let ready_in_server = ready.clone();
        let server_thread = std::thread::spawn(move || {
            server.run(|worker| {
                let port = &port;
                let ready = ready_in_server.clone();
                async move {
                    let listener = port.bind(worker).await;
                    let handle = Handle::current();
                    let mut in_flight = Vec::new();
                    loop {
                        match race(handle.stopped(), listener.accept()).await {
                            Either::Left(()) => break,
                            Either::Right(conn) => {
                                let (conn, _) = conn.unwrap();
                                in_flight.push(spawn(serve_one(conn, ready.clone())));
                            }
                        }
                    }
                    drop(listener); // no new connections from here on
                    let served = in_flight.len();
                    for request in in_flight {
                        request.await.unwrap();
                    }
                    served
                }
            })
        });
        let addr = SharedPort::wait_bound(&bound, WORKERS);

        let mut clients: Vec<_> = (0..REQUESTS)
            .map(|id| {
                let mut c = std::net::TcpStream::connect(addr).unwrap();
                c.set_read_timeout(Some(HANG_GUARD)).unwrap();
                c.write_all(format!("REQ {id}\n").as_bytes()).unwrap();
                (id, c)
            })
            .collect();
        wait_until("every request to be in flight", || {
            ready.load(Ordering::SeqCst) == REQUESTS as usize
        });

        // Stop from another thread, with every request half received.
        std::thread::spawn(move || handle.stop()).join().unwrap();

        // The listeners close (new connections are refused) while the requests are pending.
        wait_until("the listeners to close", || {
            std::net::TcpStream::connect(addr).is_err()
        });
        assert!(
            !server_thread.is_finished(),
            "Runtime::run returned with requests in flight"
        );

        for (id, c) in &mut clients {
            c.write_all(b"END\n").unwrap();
            let mut response = Vec::new();
            c.read_to_end(&mut response).unwrap();
            assert!(
                response == response_for(*id),
                "request {id}: wrong response"
            );
        }
        let served = server_thread.join().unwrap();
        assert_eq!(served.iter().sum::<usize>() as u64, REQUESTS, "{served:?}");
    });
}

#[test]
fn stop_before_run_completes_stopped_at_once() {
    guard(|| {
        let rt = Runtime::builder().workers(2).build().unwrap();
        let handle = rt.handle();
        assert!(!handle.is_stopped());
        handle.stop();
        assert!(handle.is_stopped());
        let out = rt.run(|worker| {
            let handle = handle.clone();
            async move {
                handle.stopped().await;
                Handle::current().stopped().await;
                worker
            }
        });
        assert_eq!(out, vec![0, 1]);
    });
}

#[test]
fn stop_from_a_plain_thread_wakes_every_worker() {
    guard(|| {
        let rt = Runtime::builder().workers(2).build().unwrap();
        let handle = rt.handle();
        let (waiting_tx, waiting_rx) = mpsc::channel::<usize>();
        let waiting_tx = Mutex::new(waiting_tx);
        let stopper = std::thread::spawn(move || {
            // Stop once both workers are about to wait (stopping earlier would work too).
            for _ in 0..2 {
                waiting_rx.recv_timeout(HANG_GUARD).unwrap();
            }
            handle.stop();
        });
        let out = rt.run(|worker| {
            let waiting_tx = waiting_tx.lock().unwrap().clone();
            async move {
                let stopped = Handle::current().stopped();
                waiting_tx.send(worker).unwrap();
                stopped.await;
                assert!(Handle::current().is_stopped());
                volt_rt::worker_index()
            }
        });
        stopper.join().unwrap();
        assert_eq!(out, vec![0, 1]);
    });
}

#[test]
fn a_dropped_stopped_future_leaves_no_waker_behind() {
    guard(|| {
        volt_rt::block_on(async {
            let (counter, waker) = CountingWaker::new();
            let mut stopped = Handle::current().stopped();
            let mut cx = Context::from_waker(&waker);
            assert!(Pin::new(&mut stopped).poll(&mut cx).is_pending());
            assert_eq!(
                Arc::strong_count(&counter),
                3,
                "the runtime holds the waker"
            );
            drop(stopped);
            assert_eq!(Arc::strong_count(&counter), 2);
            Handle::current().stop();
            assert_eq!(counter.wakes.load(Ordering::SeqCst), 0);
        });
    });
}

#[test]
fn tasks_left_at_exit_are_dropped() {
    guard(|| {
        let rt = Runtime::builder().workers(2).build().unwrap();
        let flags = Mutex::new(Vec::new());
        let out = rt.run(|_| {
            let (flag, dropped) = DropFlag::new();
            flags.lock().unwrap().push(dropped);
            async move {
                // Detached, never finishes: dropped when the main future returns.
                spawn(async move {
                    let _flag = flag;
                    std::future::pending::<()>().await;
                });
                volt_rt::yield_now().await;
                7
            }
        });
        assert_eq!(out, vec![7, 7]);
        for dropped in flags.into_inner().unwrap() {
            assert!(dropped.load(Ordering::SeqCst));
        }
    });
}

#[test]
fn a_panic_in_a_main_future_is_resumed_after_every_worker_finished() {
    guard(|| {
        let rt = Runtime::builder().workers(2).build().unwrap();
        let finished = AtomicUsize::new(0);
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            rt.run(|worker| {
                let finished = &finished;
                async move {
                    if worker == 0 {
                        panic!("main future 0 failed");
                    }
                    volt_rt::time::sleep(std::time::Duration::from_millis(5)).await;
                    finished.fetch_add(1, Ordering::SeqCst);
                }
            })
        }));
        let payload = result.unwrap_err();
        assert_eq!(
            *payload.downcast_ref::<&str>().unwrap(),
            "main future 0 failed"
        );
        assert_eq!(
            finished.load(Ordering::SeqCst),
            1,
            "worker 1 was not waited for"
        );
    });
}

#[test]
fn run_returns_results_in_worker_order_with_thread_names() {
    guard(|| {
        let rt = Runtime::builder()
            .workers(3)
            .thread_name("test-worker")
            .build()
            .unwrap();
        let out = rt.run(|worker| async move {
            let name = std::thread::current().name().unwrap().to_owned();
            (worker, volt_rt::worker_index(), name)
        });
        let expected: Vec<_> = (0..3).map(|i| (i, i, format!("test-worker-{i}"))).collect();
        assert_eq!(out, expected);
    });
}

/// Regression: a second `run` of a runtime that was running (from another thread, or inside one
/// of its workers) gave each worker a second event loop on the same inbox and eventfd, each
/// taking the other's wakes for its own: here the second loop's send to the first one's main
/// future woke nothing, and the first `run` hung. Now the second `run` panics.
#[test]
fn a_runtime_runs_once_at_a_time() {
    guard(|| {
        let rt = Runtime::builder().workers(1).build().unwrap();
        let (tx, rx) = volt_rt::channel::<u32>();
        let (rx, (running_tx, running)) = (Mutex::new(Some(rx)), mpsc::channel());
        let running_tx = Mutex::new(running_tx);
        std::thread::scope(|s| {
            let first = s.spawn(|| {
                rt.run(|_| {
                    let mut rx = rx.lock().unwrap().take().unwrap();
                    let running_tx = running_tx.lock().unwrap().clone();
                    async move {
                        let mut recv = std::pin::pin!(rx.recv());
                        std::future::poll_fn(|cx| {
                            let poll = recv.as_mut().poll(cx);
                            let _ = running_tx.send(()); // waiting now
                            poll
                        })
                        .await
                    }
                })
            });
            running.recv().unwrap();
            let second = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                rt.run(|_| async { tx.send(7).unwrap() })
            }));
            let panic = second.expect_err("a second run ran beside the first");
            let msg = panic.downcast_ref::<&str>().copied().unwrap_or_default();
            assert!(msg.contains("already running"), "{msg:?}");
            tx.send(8).unwrap(); // from a plain thread
            assert_eq!(first.join().unwrap(), [Some(8)]);
        });
    });
}
