//! The runtime: a set of worker threads, each running its own executor and reactor.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::task::{Context, Poll};

use crate::executor::{run_core, with_core, Core, Shared};
use crate::reactor::IoBackend;
use crate::signal::Latch;
use crate::task::{join_pair, JoinHandle};

/// Configures a [`Runtime`].
#[derive(Debug, Clone)]
pub struct Builder {
    workers: usize,
    pin_to_cores: bool,
    thread_name: String,
    max_blocking_threads: Option<usize>,
    io_backend: Option<IoBackend>,
}

impl Builder {
    /// The number of worker threads (default: the CPUs this process may use).
    pub fn workers(mut self, n: usize) -> Self {
        self.workers = n.max(1);
        self
    }

    /// Pins worker `i` to the `i`-th CPU this process may run on (default: off).
    pub fn pin_to_cores(mut self, on: bool) -> Self {
        self.pin_to_cores = on;
        self
    }

    /// The name prefix of worker threads (default `volt-worker`).
    pub fn thread_name(mut self, name: impl Into<String>) -> Self {
        self.thread_name = name.into();
        self
    }

    /// Caps the threads of the process-wide blocking pool (default 64).
    pub fn max_blocking_threads(mut self, n: usize) -> Self {
        self.max_blocking_threads = Some(n.max(1));
        self
    }

    /// The kernel I/O interface (default: `VOLT_IO` if set, else io_uring where the kernel
    /// allows it, else epoll). See [`IoBackend`] and [`Handle::io_backend`].
    pub fn io_backend(mut self, backend: IoBackend) -> Self {
        self.io_backend = Some(backend);
        self
    }

    /// Creates the runtime. Worker threads start when [`Runtime::run`] is called.
    ///
    /// Fails if io_uring is asked for (by [`Builder::io_backend`] or `VOLT_IO=uring`) and the
    /// kernel does not allow it, or if `VOLT_IO` is neither `epoll`, `uring` nor `auto`.
    pub fn build(self) -> io::Result<Runtime> {
        let io_backend = IoBackend::resolve(self.io_backend)?;
        if let Some(n) = self.max_blocking_threads {
            crate::blocking::MAX_THREADS.store(n, Ordering::Relaxed);
        }
        let workers = (0..self.workers)
            .map(|_| Shared::new())
            .collect::<io::Result<Vec<_>>>()?;
        Ok(Runtime {
            shared: RuntimeShared::new(workers, io_backend),
            pin_to_cores: self.pin_to_cores,
            thread_name: self.thread_name,
        })
    }
}

/// A set of workers, one thread each, that run the same async function: one event loop per core.
///
/// ```
/// let rt = volt_rt::Runtime::builder().workers(2).build().unwrap();
/// let results = rt.run(|worker| async move {
///     let task = volt_rt::spawn(async move { worker * 10 });
///     task.await.unwrap()
/// });
/// assert_eq!(results, vec![0, 10]);
/// ```
#[derive(Debug)]
pub struct Runtime {
    shared: Arc<RuntimeShared>,
    pin_to_cores: bool,
    thread_name: String,
}

/// What every worker of a runtime shares: each worker's inbox, and the stop signal.
#[derive(Debug)]
pub(crate) struct RuntimeShared {
    workers: Vec<Arc<Shared>>,
    /// Set (to 1) by [`Handle::stop`].
    stopped: Latch,
    /// Set while [`Runtime::run`] runs: each worker's inbox and eventfd serve one loop at a time.
    running: AtomicBool,
    pub(crate) io_backend: IoBackend,
}

impl RuntimeShared {
    pub(crate) fn new(workers: Vec<Arc<Shared>>, io_backend: IoBackend) -> Arc<RuntimeShared> {
        Arc::new(RuntimeShared {
            workers,
            io_backend,
            stopped: Latch::new(),
            running: AtomicBool::new(false),
        })
    }
}

impl Runtime {
    /// A builder with the defaults: one worker per CPU, no pinning.
    pub fn builder() -> Builder {
        Builder {
            workers: std::thread::available_parallelism().map_or(1, |n| n.get()),
            pin_to_cores: false,
            thread_name: "volt-worker".into(),
            max_blocking_threads: None,
            io_backend: None,
        }
    }

    /// Runs `f(worker_index)` on every worker and returns each result, in worker order, once all
    /// have finished. When a worker's future finishes, tasks it spawned and did not await are
    /// dropped (on io_uring, bytes their streams still had queued get up to 2 s to go out). A
    /// panic in a worker's main future is resumed here after all workers finished.
    ///
    /// # Panics
    /// If a worker thread cannot start, or a worker cannot make its reactor (out of
    /// descriptors, say): then no worker runs `f`. If the runtime is running already (`run`
    /// on another thread, or inside one of its workers).
    pub fn run<F, Fut>(&self, f: F) -> Vec<Fut::Output>
    where
        F: Fn(usize) -> Fut + Sync,
        Fut: Future,
        Fut::Output: Send,
    {
        let running = self.shared.running.swap(true, Ordering::AcqRel);
        assert!(!running, "Runtime::run on a runtime already running");
        let cpus: &[usize] = &self.pin_to_cores.then(allowed_cpus).unwrap_or_default();
        let f = &f;
        // Each worker makes its reactor, says whether it could on `ready`, and waits for the
        // verdict in `start`, write-locked by this thread until every worker has answered: if
        // one could not, or its thread did not start, none runs `f`, whose future might wait
        // for the missing worker forever.
        let (start, (ready_tx, ready)) = (RwLock::new(false), std::sync::mpsc::channel());
        let mut verdict = start.write().unwrap_or_else(PoisonError::into_inner);
        let joined: Vec<_> = std::thread::scope(|scope| {
            let workers = self.shared.workers.iter().enumerate();
            let threads: Vec<_> = workers
                .map(|(index, shared)| {
                    let (runtime, start, ready_tx) = (self.shared.clone(), &start, &ready_tx);
                    #[cfg(test)]
                    tests::fail_spawn(index)?;
                    std::thread::Builder::new()
                        .name(format!("{}-{index}", self.thread_name))
                        .spawn_scoped(scope, move || {
                            pin_current_thread(cpus, index);
                            let core = Core::new(index, shared.clone(), runtime);
                            let _ = ready_tx.send(core.is_ok());
                            let go = *start.read().unwrap_or_else(PoisonError::into_inner);
                            let core = core.expect("creating the worker's reactor");
                            go.then(|| run_core(core, f(index)))
                        })
                })
                .collect();
            let mut answers = ready.iter().take(threads.len());
            *verdict = threads.iter().all(Result::is_ok) && answers.all(|ok| ok);
            drop(verdict);
            threads.into_iter().map(|t| t.map(|t| t.join())).collect()
        });
        self.shared.running.store(false, Ordering::Release);
        // The first failure in worker order (a worker that did not run `f` is not one).
        let outputs = joined.into_iter().filter_map(|result| match result {
            Ok(Ok(output)) => output,
            Ok(Err(panic)) => std::panic::resume_unwind(panic),
            Err(e) => panic!("spawning a worker thread: {e}"),
        });
        outputs.collect()
    }

    /// A handle to spawn onto workers and stop them, usable from any thread.
    pub fn handle(&self) -> Handle {
        Handle {
            shared: self.shared.clone(),
        }
    }
}

/// Runs `future` to completion on the current thread, as a runtime of one worker.
///
/// ```
/// let answer = volt_rt::block_on(async {
///     volt_rt::time::sleep(std::time::Duration::from_millis(1)).await;
///     42
/// });
/// assert_eq!(answer, 42);
/// ```
///
/// # Panics
/// If `VOLT_IO` forces io_uring where the kernel does not allow it (or holds a bad value).
pub fn block_on<F: Future>(future: F) -> F::Output {
    let shared = Shared::new().expect("creating an eventfd");
    let backend = IoBackend::resolve(None).unwrap_or_else(|e| panic!("{e}"));
    let runtime = RuntimeShared::new(vec![shared.clone()], backend);
    let core = Core::new(0, shared, runtime).expect("creating the reactor");
    run_core(core, future)
}

fn allowed_cpus() -> Vec<usize> {
    let set = rustix::thread::sched_getaffinity(None).unwrap_or_default(); // none on error
    (0..rustix::thread::CpuSet::MAX_CPU)
        .filter(|&cpu| set.is_set(cpu))
        .collect()
}

/// Pins worker `index` to the `index`-th of `cpus` (modulo their number), if any.
fn pin_current_thread(cpus: &[usize], index: usize) {
    if let Some(&cpu) = cpus.get(index % cpus.len().max(1)) {
        let mut set = rustix::thread::CpuSet::new();
        set.set(cpu);
        // Pinning is an optimisation: if the kernel refuses (a cgroup limit), run unpinned.
        let _ = rustix::thread::sched_setaffinity(None, &set);
    }
}

/// A cloneable, `Send` handle to a runtime's workers.
#[derive(Clone, Debug)]
pub struct Handle {
    shared: Arc<RuntimeShared>,
}

impl Handle {
    /// The handle of the runtime running the current worker.
    ///
    /// # Panics
    /// Outside a volt-rt worker.
    pub fn current() -> Handle {
        with_core(|core| Handle {
            shared: core.runtime.clone(),
        })
    }

    /// The kernel I/O interface the workers use, chosen when the runtime was built. Servers
    /// print it at start-up; the library itself does not write to stderr.
    pub fn io_backend(&self) -> IoBackend {
        self.shared.io_backend
    }

    /// The number of workers.
    pub fn workers(&self) -> usize {
        self.shared.workers.len()
    }

    /// Spawns a task on worker `worker` (modulo the worker count) from any thread. `make` runs
    /// on that worker and builds the future there, so the future itself need not be `Send`.
    /// A panic in `make` fails the task like a panic in the future. If the worker's main future
    /// has already returned, the task is cancelled.
    pub fn spawn_on<F, Fut>(&self, worker: usize, make: F) -> JoinHandle<Fut::Output>
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future + 'static,
        Fut::Output: Send + 'static,
    {
        // `completion`, dropped unrun (the worker exited), cancels the task.
        let (handle, completion) = join_pair();
        let target = &self.shared.workers[worker % self.shared.workers.len()];
        target.send_spawn(Box::new(move || {
            // `make` runs inside the task, under its panic capture, not in the worker loop.
            with_core(|core| core.spawn_task(async move { make().await }, completion));
        }));
        handle
    }

    /// Asks every worker to stop: every [`Stopped`] future of this runtime completes. Workers
    /// finish when their main futures return; this is cooperative, nothing is cancelled.
    pub fn stop(&self) {
        self.shared.stopped.set(1);
    }

    /// True once [`Handle::stop`] was called.
    pub fn is_stopped(&self) -> bool {
        self.shared.stopped.get() != 0
    }

    /// Completes when [`Handle::stop`] is called (at once if it was).
    pub fn stopped(&self) -> Stopped {
        Stopped {
            shared: self.shared.clone(),
            key: None,
        }
    }
}

/// The index of the current worker (0 in `block_on`).
///
/// # Panics
/// Outside a volt-rt worker.
pub fn worker_index() -> usize {
    with_core(|core| core.index)
}

/// Spawns on worker `worker` of the current runtime; see [`Handle::spawn_on`].
///
/// # Panics
/// Outside a volt-rt worker.
pub fn spawn_on<F, Fut>(worker: usize, make: F) -> JoinHandle<Fut::Output>
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future + 'static,
    Fut::Output: Send + 'static,
{
    Handle::current().spawn_on(worker, make)
}

/// Completes when the runtime is asked to stop. See [`Handle::stopped`].
#[derive(Debug)]
pub struct Stopped {
    shared: Arc<RuntimeShared>,
    key: Option<usize>,
}

impl Future for Stopped {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let Stopped { shared, key } = &mut *self;
        shared.stopped.poll(key, cx).map(drop)
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        self.shared.stopped.forget(self.key);
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::panic::{catch_unwind, AssertUnwindSafe};
    use std::time::Duration;

    use super::*;

    thread_local! {
        /// The worker whose thread a `Runtime::run` on this thread is told did not start.
        static FAIL_SPAWN: Cell<Option<usize>> = const { Cell::new(None) };
    }

    /// Fails for the worker [`FAIL_SPAWN`] names, as if its thread could not start.
    pub(super) fn fail_spawn(index: usize) -> io::Result<()> {
        match FAIL_SPAWN.get() == Some(index) {
            true => Err(io::Error::other("injected by the test")),
            false => Ok(()),
        }
    }

    /// Regression: worker 0 ran its future, which here waits for a stop nobody sends, and
    /// `run` waited for it forever instead of reporting that worker 1's thread did not start.
    #[test]
    fn a_worker_thread_that_does_not_start_fails_the_run_instead_of_hanging_it() {
        let (done_tx, done) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let rt = Runtime::builder().workers(2).build().unwrap();
            let handle = rt.handle();
            FAIL_SPAWN.set(Some(1));
            let ran = catch_unwind(AssertUnwindSafe(|| rt.run(|_| handle.stopped())));
            FAIL_SPAWN.set(None);
            let panic = ran.expect_err("the run went on without worker 1");
            let _ = done_tx.send(panic.downcast_ref::<String>().cloned());
            // The same runtime runs once its threads start.
            assert_eq!(rt.run(|i| async move { i }), [0, 1]);
            let _ = done_tx.send(None);
        });
        let msg = done
            .recv_timeout(Duration::from_secs(120))
            .expect("run hung");
        assert!(msg.unwrap().contains("spawning a worker thread"));
        assert_eq!(done.recv_timeout(Duration::from_secs(120)), Ok(None));
    }
}
