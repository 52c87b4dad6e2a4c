//! Shutdown signals: a future that completes on SIGINT or SIGTERM.
//!
//! The first call installs handlers (through `signal-hook`) and starts one small thread that
//! waits for the signals and wakes every waiting future, on any worker. From then on SIGINT and
//! SIGTERM no longer kill the process: the program decides what to do.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Mutex, OnceLock};
use std::task::{Context, Poll, Waker};

use signal_hook::consts::{SIGINT, SIGTERM};
use slab::Slab;

use crate::lock;

/// A value set once (non-zero) that futures on any thread wait for: the shutdown signal, and a
/// runtime's stop. Each waiting future's waker has an entry, removed when the future is dropped
/// (a server may race one against every connection).
#[derive(Debug)]
pub(crate) struct Latch {
    value: AtomicI32,
    /// Only wakers are inserted, refreshed and taken out under the lock.
    waiters: Mutex<Slab<Waker>>,
}

impl Latch {
    pub(crate) const fn new() -> Latch {
        Latch {
            value: AtomicI32::new(0),
            waiters: Mutex::new(Slab::new()),
        }
    }

    /// The value, or 0 while unset.
    pub(crate) fn get(&self) -> i32 {
        self.value.load(Ordering::Acquire)
    }

    /// Sets the value (the first one set stays) and wakes every waiting future.
    pub(crate) fn set(&self, value: i32) {
        let _ = self
            .value
            .compare_exchange(0, value, Ordering::AcqRel, Ordering::Acquire);
        // Woken after the lock is released: a wake may take locks of its own.
        let woken: Vec<Waker> = lock(&self.waiters).drain().collect();
        woken.into_iter().for_each(Waker::wake);
    }

    /// Ready with the value once set; else `cx`'s waker is kept in the entry `key` names (made
    /// on the first wait).
    pub(crate) fn poll(&self, key: &mut Option<usize>, cx: &Context<'_>) -> Poll<i32> {
        // Checked under the lock: `set` stores before it drains, so no wake is missed.
        let mut waiters = lock(&self.waiters);
        if self.get() != 0 {
            return Poll::Ready(self.get());
        }
        match *key {
            // The entry is ours until `set` drains them all, and then we returned above.
            Some(key) => waiters[key].clone_from(cx.waker()),
            None => *key = Some(waiters.insert(cx.waker().clone())),
        }
        Poll::Pending
    }

    /// Removes a dropped future's entry, unless `set` drained it (and the slot may be reused).
    pub(crate) fn forget(&self, key: Option<usize>) {
        let Some(key) = key else { return };
        let mut waiters = lock(&self.waiters);
        if self.get() == 0 {
            // The waker is dropped after the lock is released.
            let _waker = waiters.try_remove(key);
            drop(waiters);
        }
    }
}

/// The first shutdown signal received.
static RECEIVED: Latch = Latch::new();

fn install() {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])
            .expect("installing SIGINT/SIGTERM handlers");
        std::thread::Builder::new()
            .name("volt-signals".into())
            .spawn(move || signals.forever().for_each(|signal| RECEIVED.set(signal)))
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
    /// This future's entry in `RECEIVED`, once it has waited.
    key: Option<usize>,
}

impl Future for ShutdownSignal {
    type Output = i32;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<i32> {
        RECEIVED.poll(&mut self.key, cx)
    }
}

impl Drop for ShutdownSignal {
    fn drop(&mut self) {
        RECEIVED.forget(self.key);
    }
}
