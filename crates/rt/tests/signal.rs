//! `signal::shutdown_signal`. Alone in its binary: the handlers it installs are process-wide,
//! and once a signal was received every later `shutdown_signal()` completes at once.

mod common;

use std::future::Future;
use std::pin::Pin;
use std::sync::{mpsc, Arc, Mutex};
use std::task::Context;

use common::{guard, CountingWaker, HANG_GUARD};
use rustix::process::{getpid, kill_process, Signal};
use volt_rt::signal::shutdown_signal;
use volt_rt::Runtime;

const SIGTERM: i32 = 15;

/// Futures waiting on both workers complete when the process sends itself SIGTERM (which no
/// longer kills it), and later ones complete at once. One test, in this order, because the
/// first signal is remembered for the rest of the process.
#[test]
#[cfg_attr(miri, ignore)] // signals
fn shutdown_signal_completes_on_sigterm() {
    guard(|| {
        // Regression: a dropped `ShutdownSignal` left its waker in a process-wide list until a
        // signal came (one per connection, for a server racing it against each).
        let (counter, waker) = CountingWaker::new();
        for _ in 0..3 {
            let mut pending = shutdown_signal();
            let poll = Pin::new(&mut pending).poll(&mut Context::from_waker(&waker));
            assert!(poll.is_pending());
            assert_eq!(
                Arc::strong_count(&counter),
                3,
                "the waiter list holds the waker"
            );
            drop(pending);
            assert_eq!(
                Arc::strong_count(&counter),
                2,
                "a dropped future left its waker"
            );
        }

        let rt = Runtime::builder().workers(2).build().unwrap();
        let (waiting_tx, waiting_rx) = mpsc::channel::<()>();
        let waiting_tx = Mutex::new(waiting_tx);
        let killer = std::thread::spawn(move || {
            for _ in 0..2 {
                waiting_rx.recv_timeout(HANG_GUARD).unwrap();
            }
            kill_process(getpid(), Signal::TERM).unwrap();
        });
        let received = rt.run(|_| {
            let waiting_tx = waiting_tx.lock().unwrap().clone();
            async move {
                // Created (and the handlers installed) before the signal is sent.
                let signal = shutdown_signal();
                waiting_tx.send(()).unwrap();
                signal.await
            }
        });
        killer.join().unwrap();
        assert_eq!(received, vec![SIGTERM, SIGTERM]);
        assert_eq!(volt_rt::block_on(shutdown_signal()), SIGTERM);
    });
}
