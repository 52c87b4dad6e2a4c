//! Shutdown signals: a future that completes on SIGINT or SIGTERM.
//!
//! The first call installs handlers (through `signal-hook`) and starts one small thread that
//! waits for the signals and wakes every waiting future, on any worker. From then on SIGINT and
//! SIGTERM no longer kill the process: the program decides what to do.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::task::{Context, Poll, Waker};

use signal_hook::consts::{SIGINT, SIGTERM};

/// The first shutdown signal received, or 0.
static RECEIVED: AtomicI32 = AtomicI32::new(0);

fn waiters() -> MutexGuard<'static, Vec<Waker>> {
    static WAITERS: Mutex<Vec<Waker>> = Mutex::new(Vec::new());
    WAITERS.lock().unwrap_or_else(|e| e.into_inner())
}

fn install() {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])
            .expect("installing SIGINT/SIGTERM handlers");
        std::thread::Builder::new()
            .name("volt-signals".into())
            .spawn(move || {
                for signal in signals.forever() {
                    let _ =
                        RECEIVED.compare_exchange(0, signal, Ordering::AcqRel, Ordering::Acquire);
                    for w in waiters().drain(..) {
                        w.wake();
                    }
                }
            })
            .expect("spawning the signal thread");
    });
}

/// Completes once SIGINT or SIGTERM has been received (at once if one already was), with the
/// signal number. Call it early: handlers are installed on the first call.
pub fn shutdown_signal() -> ShutdownSignal {
    install();
    ShutdownSignal(())
}

/// See [`shutdown_signal`].
#[derive(Debug)]
pub struct ShutdownSignal(());

impl Future for ShutdownSignal {
    type Output = i32;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<i32> {
        let signal = RECEIVED.load(Ordering::Acquire);
        if signal != 0 {
            return Poll::Ready(signal);
        }
        let mut waiters = waiters();
        // Checked again under the lock: the signal thread stores before it drains.
        let signal = RECEIVED.load(Ordering::Acquire);
        if signal != 0 {
            return Poll::Ready(signal);
        }
        if !waiters.iter().any(|w| w.will_wake(cx.waker())) {
            waiters.push(cx.waker().clone());
        }
        Poll::Pending
    }
}
