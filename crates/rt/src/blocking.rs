//! A bounded thread pool for blocking work: file I/O, DNS, CPU-heavy calls.
//!
//! One pool per process. Threads start on demand up to a cap (64 unless
//! [`Builder::max_blocking_threads`](crate::Builder::max_blocking_threads) says otherwise) and
//! exit after 10 seconds idle. Jobs beyond the cap wait in a FIFO queue.

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::Duration;

use crate::lock;
use crate::task::{join_pair, JoinError, JoinHandle};

const IDLE_TIMEOUT: Duration = Duration::from_secs(10);
/// Set by [`Builder::max_blocking_threads`](crate::Builder::max_blocking_threads).
pub(crate) static MAX_THREADS: AtomicUsize = AtomicUsize::new(64);

type Job = Box<dyn FnOnce() + Send>;

struct Pool {
    /// Jobs run outside the lock, so it is never poisoned mid-update.
    state: Mutex<PoolState>,
    job_ready: Condvar,
}

#[derive(Default)]
struct PoolState {
    queue: VecDeque<Job>,
    threads: usize,
    /// Threads waiting for a job, including those already notified but not yet running.
    idle: usize,
    /// Notifications sent and not yet taken by a waking thread. Only `idle - notified` threads
    /// can take a new job: without this count, jobs submitted back to back would all notify the
    /// same idle thread and queue behind each other instead of starting threads.
    notified: usize,
}

fn pool() -> &'static Pool {
    static POOL: OnceLock<Pool> = OnceLock::new();
    POOL.get_or_init(|| Pool {
        state: Mutex::new(PoolState::default()),
        job_ready: Condvar::new(),
    })
}

impl Pool {
    fn submit(&'static self, job: Job) {
        let mut state = lock(&self.state);
        state.queue.push_back(job);
        if state.idle > state.notified {
            state.notified += 1;
            drop(state);
            self.job_ready.notify_one();
        } else if state.threads < MAX_THREADS.load(Ordering::Relaxed) {
            state.threads += 1;
            drop(state);
            let spawned = std::thread::Builder::new()
                .name("volt-blocking".into())
                .spawn(move || self.work());
            if spawned.is_err() {
                // The queued job will run on an existing thread once one frees up; with none,
                // the queue would wait forever: its jobs are dropped (their handles cancelled).
                let mut state = lock(&self.state);
                state.threads -= 1;
                let stranded = (state.threads == 0).then(|| std::mem::take(&mut state.queue));
                drop(state); // their destructors run outside the lock
                drop(stranded);
            }
        }
    }

    fn work(&self) {
        let mut state = lock(&self.state);
        loop {
            if let Some(job) = state.queue.pop_front() {
                drop(state);
                // A panic in `f` is the handle's to report (`spawn_blocking`); this catches one
                // in a destructor (of an unawaited output, of an aborted job's closure), which
                // would otherwise end this thread while it is still counted in `threads`.
                let _ = catch_unwind(AssertUnwindSafe(job));
                state = lock(&self.state);
                continue;
            }
            state.idle += 1;
            let (next, timeout) = self
                .job_ready
                .wait_timeout(state, IDLE_TIMEOUT)
                .unwrap_or_else(|e| e.into_inner());
            state = next;
            state.idle -= 1;
            if state.notified > 0 {
                // Woken for a job (or spuriously while one is pending: then another thread
                // takes the notification's job first, and finds the queue empty, which is fine).
                state.notified -= 1;
                continue;
            }
            if timeout.timed_out() && state.queue.is_empty() {
                state.threads -= 1;
                return;
            }
        }
    }
}

/// Runs `f` on the blocking pool and returns a handle to its result. A panic in `f` is caught
/// and reported through the handle. `abort` cancels the job only if it has not started.
///
/// Usable from any thread; the handle can be awaited on any worker.
pub fn spawn_blocking<F, T>(f: F) -> JoinHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let (handle, completion) = join_pair();
    pool().submit(Box::new(move || {
        // Aborted before it ran, `completion` is dropped unused: the handle sees a cancellation.
        if !completion.state.is_aborted() {
            let result = catch_unwind(AssertUnwindSafe(f)).map_err(JoinError::panic);
            completion.state.complete(result);
        }
    }));
    handle
}
