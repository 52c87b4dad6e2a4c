//! The per-worker executor: a task slab, a local run queue, and the loop that drives them.
//!
//! Every worker thread owns one [`Core`], reachable through a thread-local. Tasks never leave
//! the worker that spawned them, so their futures need not be `Send`. What crosses threads is
//! small and `Send`: a task's [`Header`] (inside its `Waker`) and the worker's [`Shared`] inbox.
//!
//! Waking a task pushes its id onto the local run queue when the waker runs on the owning
//! worker, and onto the worker's mutex-protected inbox plus an eventfd write otherwise. The
//! `scheduled` flag keeps a task from being queued again and again between two polls (a local and
//! a remote wake racing may both queue it: one poll more, for nothing).
//!
//! The loop ([`Core::run`]) fits on a screen: run up to [`BUDGET`] tasks, take the inbox, ask
//! the reactor for I/O (without blocking when tasks are ready), fire due timers, repeat.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Instant;

use slab::Slab;

use crate::lock;
use crate::reactor::Reactor;
use crate::runtime::RuntimeShared;
use crate::task::{join_pair, Completion, JoinHandle, TaskFuture};
use crate::time::Timers;

/// Tasks polled per loop turn before the reactor is checked, so a busy worker still sees I/O.
const BUDGET: usize = 256;

/// Slab index in the low 32 bits, a generation in the high 32: a stale waker of a finished task
/// never polls the task that reused its slot.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct TaskId(u64);

impl TaskId {
    fn index(self) -> usize {
        (self.0 & 0xffff_ffff) as usize
    }
}

/// What other threads may touch of a worker: its inbox and the eventfd that wakes it.
pub(crate) struct Shared {
    /// Unique across all cores ever created; compared with the current core's to tell local
    /// wakes, and by sockets to tell the reactor that registered them.
    pub(crate) uid: u32,
    /// Only pushes and a swap run under the lock; nothing there panics mid-update.
    inbox: Mutex<Inbox>,
    /// True while an eventfd write is pending or the inbox is being taken: later senders skip
    /// the syscall.
    notified: AtomicBool,
    pub(crate) notifier: crate::reactor::Notifier,
}

opaque_debug!(Shared);

#[derive(Default)]
struct Inbox {
    wakes: Vec<TaskId>,
    spawns: Vec<Box<dyn FnOnce() + Send>>,
    /// Set when the worker's main future has returned: spawns sent from then on are dropped at
    /// once (their handles resolve as cancelled) instead of waiting for a worker that is gone.
    /// Cleared when the worker starts (again): spawns sent before `Runtime::run` are kept.
    closed: bool,
}

/// A task's thread-safe identity; it is what a `Waker` holds.
///
/// `repr(C)`, the fields a local wake reads first: with the `Arc`'s two counts they are its
/// first 32 bytes, which malloc's 16-byte-aligned blocks put across two cache lines one time
/// in four; `worker`, read by remote wakes only, comes last. (In rustc's order, with `worker`
/// read for its uid, 40 bytes were read, across two lines half the time.) Measured with 64
/// keep-alive connections: 0.2-0.4 fewer L1 misses a request (io_uring 16.4 -> 16.0-16.4,
/// epoll 7.1 -> 6.7), the wake's misses 1.4 -> 1.2 but the poll's up 0.2.
#[repr(C)]
pub(crate) struct Header {
    scheduled: AtomicBool,
    /// Set by [`JoinHandle::abort`]. Here rather than only in the task's `JoinState`, on the line
    /// the wake and the poll touch anyway: a check there missed L1 on every poll in a closed
    /// loop (64 keep-alive connections, io_uring: 0.6 of 17.3 misses a request).
    aborted: AtomicBool,
    /// `worker.uid`, kept here so a local wake does not load `worker`.
    worker_uid: u32,
    id: TaskId,
    worker: Arc<Shared>,
}

/// A task, inline in the slab: what a poll reads besides the future's own state is on the slab's
/// line (40-byte entries) and the header's, which the wake has just read. An `Rc<TaskSlot>` with
/// the waker and the future in a `RefCell` cost one more line a poll (its counts and borrow
/// flag), missed every time in a closed loop. Measured with 64 keep-alive connections (callgrind,
/// L1 misses a request): io_uring plaintext 11.7-12.0 -> 10.4-10.7, json 12.0 -> 10.9, epoll
/// 3.3 -> 1.7, pingpong (uring) 10.8 -> 10.0 (reads and writes); 12-14 more instructions, for
/// the moves in and out of the slab.
struct Task {
    header: Arc<Header>,
    /// Taken out while polled, so the slab is not borrowed then (the task may spawn).
    future: Option<(Waker, TaskBox)>,
}

type TaskBox = Pin<Box<dyn Future<Output = ()>>>;

/// One worker's executor state. Lives on its thread only.
pub(crate) struct Core {
    /// First, so dropped first: the io_uring reactor's drop cancels the poll on `shared`'s
    /// eventfd, which `shared` or `runtime` (the last owner of `shared` in `block_on`) may
    /// close. (Dropped after them, a poll not yet submitted failed with `EBADF` and was
    /// re-armed until the drop gave up and leaked the ring with its sockets.)
    pub(crate) reactor: Reactor,
    pub(crate) index: usize,
    pub(crate) shared: Arc<Shared>,
    pub(crate) runtime: Arc<RuntimeShared>,
    run_queue: RefCell<VecDeque<TaskId>>,
    tasks: RefCell<Slab<Task>>,
    next_generation: Cell<u32>,
    pub(crate) timers: Timers,
}

static NEXT_UID: AtomicU32 = AtomicU32::new(1);

thread_local! {
    /// The core [`run_core`] runs on this thread, null outside it. A pointer in a `Cell`, not an
    /// `Rc` in a `RefCell`: every read, write and wake looks it up, and this costs one load, with
    /// no borrow flag to count and no destructor state to check.
    static CORE: Cell<*const Core> = const { Cell::new(std::ptr::null()) };
    /// When this thread's worker last woke from the reactor (see [`crate::time::now`]); a
    /// thread-local of its own, not a field of the core, as it is read several times a request.
    pub(crate) static WOKE_AT: Cell<Option<Instant>> = const { Cell::new(None) };
    /// This thread's timer ids (see [`crate::time`]): the next one, and the first that is not a
    /// gone worker's. They never restart, so a `Sleep` registered with a worker that has ended
    /// (a `block_on` that returned) neither counts on its lost entry nor takes a later worker's.
    pub(crate) static TIMER_IDS: Cell<(std::num::NonZeroU64, std::num::NonZeroU64)> =
        const { Cell::new((std::num::NonZeroU64::MIN, std::num::NonZeroU64::MIN)) };
}

impl Shared {
    pub(crate) fn new() -> std::io::Result<Arc<Shared>> {
        Ok(Arc::new(Shared {
            uid: NEXT_UID
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |uid| {
                    uid.checked_add(1)
                })
                .expect("more than 4 billion volt-rt workers created"),
            inbox: Mutex::new(Inbox::default()),
            notified: AtomicBool::new(false),
            notifier: crate::reactor::Notifier::new()?,
        }))
    }

    /// Queues a task woken from another thread; out of line, so that a local wake (the common
    /// case: every I/O event) saves no registers for the inbox's lock.
    #[cold]
    fn schedule_remote(&self, id: TaskId) {
        // If the worker has exited, the task was dropped with it.
        self.post(|inbox| inbox.wakes.push(id));
    }

    /// Runs `f` on this worker (it spawns the task there). If the worker has exited, `f` is
    /// dropped instead, which cancels the task it would have spawned.
    pub(crate) fn send_spawn(&self, f: Box<dyn FnOnce() + Send>) {
        self.post(|inbox| inbox.spawns.push(f));
    }

    /// Adds to the inbox with `put` and wakes the worker, unless the worker has exited: then
    /// `put` is dropped unrun, outside the lock (a parameter, it is dropped after the guard), as
    /// what it holds may wake whoever awaits a task.
    fn post(&self, put: impl FnOnce(&mut Inbox)) {
        let mut inbox = lock(&self.inbox);
        if inbox.closed {
            return;
        }
        put(&mut inbox);
        drop(inbox);
        self.notify();
    }

    /// Opens or closes the inbox (see [`Inbox::closed`]); returns the spawns left unrun.
    fn set_closed(&self, closed: bool) -> Vec<Box<dyn FnOnce() + Send>> {
        let mut inbox = lock(&self.inbox);
        inbox.closed = closed;
        if closed {
            inbox.wakes.clear();
            std::mem::take(&mut inbox.spawns)
        } else {
            Vec::new()
        }
    }

    fn notify(&self) {
        if !self.notified.swap(true, Ordering::AcqRel) {
            self.notifier.wake();
        }
    }
}

impl Header {
    /// Marks the task aborted and wakes it: its next poll drops it instead. From another thread
    /// the task is queued even if `scheduled` says it is: a poll starting on its worker may have
    /// read `aborted` before this store (nothing orders its clear of `scheduled` before that
    /// read against this thread), and the poll after the inbox's lock surely sees it.
    pub(crate) fn abort(self: &Arc<Self>) {
        self.aborted.store(true, Ordering::Release);
        if try_with_core(|core| core.shared.uid) == Some(self.worker_uid) {
            self.wake_by_ref();
        } else {
            self.scheduled.store(true, Ordering::Release);
            self.worker.schedule_remote(self.id);
        }
    }
}

impl Wake for Header {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    /// On the task's own worker, a load and a store of `scheduled` instead of an atomic swap
    /// (a locked instruction, ~20 cycles, once a request). Racing a wake from another thread,
    /// both may queue the task: it is then polled once more for nothing, which futures allow.
    #[inline] // into `wake`: every I/O event wakes a task through it
    fn wake_by_ref(self: &Arc<Self>) {
        let local = try_with_core(|core| {
            if core.shared.uid != self.worker_uid {
                return false;
            }
            if !self.scheduled.load(Ordering::Relaxed) {
                self.scheduled.store(true, Ordering::Relaxed);
                core.run_queue.borrow_mut().push_back(self.id);
            }
            true
        });
        if local != Some(true) && !self.scheduled.swap(true, Ordering::AcqRel) {
            self.worker.schedule_remote(self.id);
        }
    }
}

/// Runs `f` with the current worker's core.
///
/// # Panics
/// Outside a volt-rt worker (neither inside `Runtime::run` nor `block_on`).
pub(crate) fn with_core<R>(f: impl FnOnce(&Core) -> R) -> R {
    try_with_core(f)
        .expect("must be called from a volt-rt worker (inside Runtime::run or block_on)")
}

/// Like [`with_core`], but `None` outside a worker (used by destructors, which may run anywhere).
pub(crate) fn try_with_core<R>(f: impl FnOnce(&Core) -> R) -> Option<R> {
    // SAFETY: a non-null `CORE` points to the core `run_core` keeps in place (never moved, only
    // shared) until its `Uninstall` guard nulls the pointer again.
    unsafe { CORE.get().as_ref() }.map(f)
}

/// Spawns a task on the current worker. The future need not be `Send`.
///
/// # Panics
/// Outside a volt-rt worker.
pub fn spawn<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
{
    let (handle, completion) = join_pair();
    with_core(|core| core.spawn_task(future, completion));
    handle
}

impl Core {
    pub(crate) fn new(
        index: usize,
        shared: Arc<Shared>,
        runtime: Arc<RuntimeShared>,
    ) -> std::io::Result<Core> {
        let reactor = Reactor::new(runtime.io_backend, &shared.notifier)?;
        Ok(Core {
            index,
            shared,
            runtime,
            run_queue: RefCell::new(VecDeque::with_capacity(256)),
            tasks: RefCell::new(Slab::with_capacity(256)),
            next_generation: Cell::new(0),
            reactor,
            timers: Timers::default(),
        })
    }

    pub(crate) fn spawn_task<F>(&self, future: F, completion: Completion<F::Output>)
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        let mut tasks = self.tasks.borrow_mut();
        let entry = tasks.vacant_entry();
        let generation = self.next_generation.get().wrapping_add(1);
        self.next_generation.set(generation);
        let id = TaskId(u64::from(generation) << 32 | entry.key() as u64);
        let header = Arc::new(Header {
            scheduled: AtomicBool::new(true),
            aborted: AtomicBool::new(false),
            worker_uid: self.shared.uid,
            id,
            worker: self.shared.clone(),
        });
        if completion.set_task(header.clone()) {
            // Aborted before it got here (`spawn_on`): its first poll drops it.
            header.aborted.store(true, Ordering::Relaxed);
        }
        let waker = Waker::from(header.clone());
        entry.insert(Task {
            header,
            future: Some((waker, Box::pin(TaskFuture::new(future, completion)))),
        });
        drop(tasks);
        self.run_queue.borrow_mut().push_back(id);
    }

    fn poll_task(&self, id: TaskId) {
        let mut tasks = self.tasks.borrow_mut();
        let Some(task) = tasks.get_mut(id.index()).filter(|t| t.header.id == id) else {
            return; // finished already; a stale wake
        };
        task.header.scheduled.store(false, Ordering::Release);
        // An aborted task is dropped unpolled: dropping its future reports the cancellation (see
        // `Completion`'s `Drop`). (`future` is `None` only if a panic escaped its last poll.)
        let aborted = task.header.aborted.load(Ordering::Acquire);
        let mut running = if aborted { None } else { task.future.take() };
        drop(tasks);
        if let Some((waker, future)) = &mut running {
            let mut cx = Context::from_waker(waker);
            if future.as_mut().poll(&mut cx).is_pending() {
                self.tasks.borrow_mut()[id.index()].future = running;
                return;
            }
        }
        // Dropped outside the slab borrow: its destructor may spawn or touch the reactor.
        let task = self.tasks.borrow_mut().remove(id.index());
        drop_contained((running, task));
    }

    /// Takes what other threads sent: task wakes and spawns.
    fn drain_inbox(&self) {
        if !self.shared.notified.load(Ordering::Acquire) {
            return;
        }
        // Cleared before taking the inbox: a sender that pushes after the take sees `false` and
        // writes the eventfd again, so no wake is lost.
        self.shared.notified.store(false, Ordering::Release);
        let inbox = std::mem::take(&mut *lock(&self.shared.inbox));
        self.run_queue.borrow_mut().extend(inbox.wakes);
        inbox.spawns.into_iter().for_each(|spawn| spawn());
    }

    /// Drives tasks, I/O and timers until `done` says the main task finished.
    fn run(&self, done: impl Fn() -> bool) {
        loop {
            for _ in 0..BUDGET {
                let Some(id) = self.run_queue.borrow_mut().pop_front() else {
                    break;
                };
                self.poll_task(id);
            }
            if done() {
                return;
            }
            self.drain_inbox();
            let timeout = if self.run_queue.borrow().is_empty() && !done() {
                self.timers.next_deadline()
            } else {
                Some(Instant::now())
            };
            if self.reactor.poll(timeout) {
                // Read the eventfd each time epoll reports it, and only then: its counter is
                // zero whenever the worker may block, so the next write is a fresh edge.
                // (Reading it only with `notified` set could leave it non-zero after a write
                // that raced the read; Linux still reports each later write, Miri does not.)
                self.shared.notifier.reset();
            }
            self.timers.fire_due(Instant::now());
            self.drain_inbox();
        }
    }
}

/// Drops a task (or a spawn that will not run) with a panic in its destructor caught: it is
/// that task's failure, not its worker's. The handle of a task dropped unfinished reports it
/// cancelled all the same (its `Completion` is dropped as the panic unwinds), and a finished
/// task's output is already stored. (Uncaught, the panic ended the worker's loop, or, at exit,
/// left this thread's `CORE` pointing at the freed core.)
fn drop_contained<T>(value: T) {
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(value)));
}

/// Installs `core` on this thread, runs `future` as its main task until it finishes, then drops
/// every task left (with the core still installed, so their destructors can deregister).
pub(crate) fn run_core<F: Future>(core: Core, future: F) -> F::Output {
    // Checked before anything is changed, so the worker this panics on keeps working.
    assert!(
        CORE.get().is_null(),
        "block_on inside a volt-rt worker would deadlock it"
    );
    // `core` stays in this frame, unmoved, and outlives `_uninstall`, which nulls the pointer.
    CORE.set(&core);
    core.shared.set_closed(false);
    struct Uninstall;
    impl Drop for Uninstall {
        fn drop(&mut self) {
            // Remaining tasks go first, while the core is still reachable. Closing the inbox
            // first means spawns sent meanwhile (by those tasks' destructors, or other workers)
            // are cancelled too, rather than left waiting for a worker that is gone.
            let unrun = try_with_core(|core| core.shared.set_closed(true)).unwrap_or_default();
            unrun.into_iter().for_each(drop_contained);
            // Until none is left: a destructor (of a task, or of a spawn above) may spawn a task
            // (handing it a socket, say), and one dropped after this would find no core.
            let drain = |core: &Core| core.tasks.borrow_mut().drain().collect::<Vec<_>>();
            while let Some(tasks) = try_with_core(drain).filter(|t| !t.is_empty()) {
                tasks.into_iter().for_each(drop_contained);
            }
            CORE.set(std::ptr::null());
            WOKE_AT.with(|t| t.set(None)); // a later worker on this thread starts afresh
            TIMER_IDS.with(|ids| ids.set((ids.get().0, ids.get().0))); // these timers are gone
        }
    }
    let _uninstall = Uninstall;

    // The main future is not `'static`, so it is polled here rather than spawned.
    let mut future = std::pin::pin!(future);
    let main_woken = Arc::new(MainWaker {
        woken: AtomicBool::new(true),
        worker: core.shared.clone(),
    });
    let waker = Waker::from(main_woken.clone());
    let mut cx = Context::from_waker(&waker);
    loop {
        if main_woken.woken.swap(false, Ordering::AcqRel) {
            if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
                return out;
            }
        }
        core.run(|| main_woken.woken.load(Ordering::Acquire));
    }
}

/// Wakes the main future of `block_on`/`Runtime::run`: a flag the loop checks each turn.
struct MainWaker {
    woken: AtomicBool,
    worker: Arc<Shared>,
}

impl Wake for MainWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if !self.woken.swap(true, Ordering::AcqRel)
            && try_with_core(|core| core.shared.uid) != Some(self.worker.uid)
        {
            self.worker.notify();
        }
    }
}

/// Yields once to the executor, letting other ready tasks run.
pub async fn yield_now() {
    let mut yielded = false;
    std::future::poll_fn(|cx| {
        if yielded {
            return Poll::Ready(());
        }
        yielded = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    })
    .await
}
