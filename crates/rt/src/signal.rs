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
use slab::Slab;

/// The first shutdown signal received, or 0.
static RECEIVED: AtomicI32 = AtomicI32::new(0);

/// The wakers of pending [`ShutdownSignal`]s, each removed when its future is dropped (a
/// server may race one against every connection).
fn waiters() -> MutexGuard<'static, Slab<Waker>> {
    static WAITERS: Mutex<Slab<Waker>> = Mutex::new(Slab::new());
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
                    let woken: Vec<Waker> = waiters().drain().collect();
                    for w in woken {
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
    ShutdownSignal { key: None }
}

/// See [`shutdown_signal`].
#[derive(Debug)]
pub struct ShutdownSignal {
    /// Where this future's waker is in `waiters()`, once it has waited.
    key: Option<usize>,
}

impl Future for ShutdownSignal {
    type Output = i32;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<i32> {
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
        match self.key {
            // The entry is ours until a signal drains them all, and then we returned above.
            Some(key) => {
                if !waiters[key].will_wake(cx.waker()) {
                    waiters[key] = cx.waker().clone();
                }
            }
            None => {
                let key = waiters.insert(cx.waker().clone());
                drop(waiters);
                self.key = Some(key);
            }
        }
        Poll::Pending
    }
}

impl Drop for ShutdownSignal {
    fn drop(&mut self) {
        if let Some(key) = self.key {
            // Already gone (and the slot maybe reused) if a signal drained the waiters.
            if RECEIVED.load(Ordering::Acquire) == 0 {
                let waker = waiters().try_remove(key);
                drop(waker);
            }
        }
    }
}
