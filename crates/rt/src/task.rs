//! Join handles: how a spawned task hands its result (or its panic) back.
//!
//! A task and its [`JoinHandle`] share one [`JoinState`]. The state is behind an `Arc` and a
//! `Mutex` because the two ends may live on different threads: `spawn_on` runs the task on
//! another worker and `spawn_blocking` on a pool thread. The mutex is uncontended in the common
//! case (one writer, once), so it costs about as much as two atomic operations.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use crate::executor::Header;
use crate::lock;

/// Awaits the output of a spawned task.
///
/// Dropping the handle detaches the task: it keeps running and its output is dropped.
pub struct JoinHandle<T> {
    state: Arc<JoinState<T>>,
}

/// Why a task did not produce its output.
pub struct JoinError {
    kind: JoinErrorKind,
}

enum JoinErrorKind {
    Cancelled,
    Panic(Box<dyn Any + Send + 'static>),
}

pub(crate) struct JoinState<T> {
    aborted: AtomicBool,
    /// No user code runs under the lock (and nothing there panics), so a poisoned lock still
    /// holds consistent data.
    inner: Mutex<JoinInner<T>>,
}

struct JoinInner<T> {
    result: Option<Result<T, JoinError>>,
    /// Set once the result was stored (it may already have been taken by the handle).
    finished: bool,
    /// The task awaiting the handle.
    waiter: Option<Waker>,
    /// The task itself, flagged and woken by `abort`.
    task: Option<Arc<Header>>,
}

/// A new task's two ends: the handle for its spawner, the completion for the task.
pub(crate) fn join_pair<T>() -> (JoinHandle<T>, Completion<T>) {
    let state = Arc::new(JoinState {
        aborted: AtomicBool::new(false),
        inner: Mutex::new(JoinInner {
            result: None,
            finished: false,
            waiter: None,
            task: None,
        }),
    });
    let handle = JoinHandle {
        state: state.clone(),
    };
    (handle, Completion { state })
}

impl<T> JoinState<T> {
    pub(crate) fn is_aborted(&self) -> bool {
        self.aborted.load(Ordering::Acquire)
    }

    /// Stores the result and wakes the awaiting task. Only the first call counts.
    pub(crate) fn complete(&self, result: Result<T, JoinError>) {
        let waiter = {
            let mut inner = lock(&self.inner);
            if inner.finished {
                return;
            }
            inner.result = Some(result);
            inner.finished = true;
            inner.task = None;
            inner.waiter.take()
        };
        if let Some(w) = waiter {
            w.wake();
        }
    }
}

impl<T> JoinHandle<T> {
    /// Asks the task to stop. It is dropped the next time its worker would poll it, and the
    /// handle then resolves to an error for which [`JoinError::is_cancelled`] is true. A task that
    /// already finished keeps its output. A blocking task that already started runs to the end.
    pub fn abort(&self) {
        self.state.aborted.store(true, Ordering::Release);
        let task = lock(&self.state.inner).task.clone();
        if let Some(task) = task {
            task.abort();
        }
    }

    /// True once the task has finished (with output, panic or cancellation).
    pub fn is_finished(&self) -> bool {
        lock(&self.state.inner).finished
    }
}

impl<T> Future for JoinHandle<T> {
    type Output = Result<T, JoinError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut inner = lock(&self.state.inner);
        if let Some(result) = inner.result.take() {
            return Poll::Ready(result);
        }
        assert!(!inner.finished, "JoinHandle polled after it completed");
        crate::future::keep_waker(&mut inner.waiter, cx.waker());
        Poll::Pending
    }
}

impl<T> fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinHandle")
            .field("finished", &self.is_finished())
            .finish()
    }
}

/// The task's end of a [`JoinState`]: it stores the result. Dropped before it did (the task was
/// aborted, dropped with its worker, or never started), it reports a cancellation, so a
/// `JoinHandle` always resolves.
pub(crate) struct Completion<T> {
    pub(crate) state: Arc<JoinState<T>>,
}

impl<T> Completion<T> {
    /// Tells `abort` which task to flag; true if the handle was aborted already (the task is
    /// spawned on another worker, and the handle may be aborted before that happens). Checked
    /// under the lock that `abort` takes after setting its flag, so one of the two sees the other.
    pub(crate) fn set_task(&self, task: Arc<Header>) -> bool {
        let mut inner = lock(&self.state.inner);
        inner.task = Some(task);
        self.state.is_aborted()
    }
}

impl<T> Drop for Completion<T> {
    fn drop(&mut self) {
        // A no-op if the task finished.
        let kind = JoinErrorKind::Cancelled;
        self.state.complete(Err(JoinError { kind }));
    }
}

/// The future a spawned task really runs: the user's future, plus panic capture. (Aborts are the
/// executor's: it checks the task's `Header` before each poll.)
pub(crate) struct TaskFuture<F: Future> {
    /// Declared before `completion`, so it is dropped first: whoever awaits the handle of an
    /// aborted or dropped task sees the cancellation only after the future's destructor ran.
    future: F,
    completion: Completion<F::Output>,
}

impl<F: Future> TaskFuture<F> {
    pub(crate) fn new(future: F, completion: Completion<F::Output>) -> Self {
        TaskFuture { future, completion }
    }
}

impl<F: Future> Future for TaskFuture<F> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // Both fields are projected at once: a `&TaskFuture` (from `self.completion`) would
        // also cover `future`, and an async block's borrows of its own locals do not survive
        // that (Miri's Stacked Borrows reports it).
        // SAFETY: `future` is structurally pinned: it is never moved out of `TaskFuture`, and
        // `TaskFuture` has no `Drop` impl or `Unpin` impl that could move it (the `Drop` impl of
        // the `completion` field does not touch `future`). `completion` is not pinned.
        let (future, completion) = unsafe {
            let this = self.get_unchecked_mut();
            (Pin::new_unchecked(&mut this.future), &this.completion)
        };
        let result = match catch_unwind(AssertUnwindSafe(|| future.poll(cx))) {
            Ok(Poll::Pending) => return Poll::Pending,
            Ok(Poll::Ready(out)) => Ok(out),
            Err(payload) => Err(JoinError::panic(payload)),
        };
        completion.state.complete(result);
        Poll::Ready(())
    }
}

impl JoinError {
    pub(crate) fn panic(payload: Box<dyn Any + Send + 'static>) -> Self {
        let kind = JoinErrorKind::Panic(payload);
        JoinError { kind }
    }

    /// The task was aborted before it finished.
    pub fn is_cancelled(&self) -> bool {
        matches!(self.kind, JoinErrorKind::Cancelled)
    }

    /// The task panicked.
    pub fn is_panic(&self) -> bool {
        matches!(self.kind, JoinErrorKind::Panic(_))
    }

    /// The panic payload, to resume the panic with `std::panic::resume_unwind`.
    ///
    /// # Panics
    /// If the task did not panic.
    pub fn into_panic(self) -> Box<dyn Any + Send + 'static> {
        match self.kind {
            JoinErrorKind::Panic(p) => p,
            JoinErrorKind::Cancelled => panic!("JoinError::into_panic on a cancelled task"),
        }
    }
}

impl fmt::Display for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let JoinErrorKind::Panic(p) = &self.kind else {
            return f.write_str("task was cancelled");
        };
        // `panic!` with a literal gives a `&str` payload, with formatting a `String`.
        let msg = p.downcast_ref::<&str>().copied();
        match msg.or_else(|| p.downcast_ref::<String>().map(String::as_str)) {
            Some(msg) => write!(f, "task panicked: {msg}"),
            None => f.write_str("task panicked"),
        }
    }
}

impl fmt::Debug for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "JoinError({self})")
    }
}

impl std::error::Error for JoinError {}
