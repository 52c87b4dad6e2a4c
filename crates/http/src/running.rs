//! Handlers' futures in boxes reused from request to request (see [`Running`]).

use std::any::Any;
use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use crate::response::{IntoResponse, Response};
#[cfg(doc)]
use crate::Service;

/// A new handler number: every handler made in the process gets its own, which tags the spare
/// boxes of its futures.
pub(crate) fn new_pool() -> usize {
    static NEXT_POOL: AtomicUsize = AtomicUsize::new(0);
    NEXT_POOL.fetch_add(1, Ordering::Relaxed)
}

/// A handler's future, in a box that outlives it.
///
/// The router holds handlers of many types, so their futures are boxed, and the server needs
/// a handler's future it can move after polling it (see [`Service::call_unpin`]); but once a
/// future is done its box goes to a pool of this thread's spare boxes, tagged with its
/// handler's number ([`new_pool`]), and the next request to that handler reuses it. A request thus allocates nothing
/// for its handler (a `malloc` and a `free` were ~140 instructions of a keep-alive request's
/// ~4,100), and finds its box by comparing numbers, not by asking each box for its type.
/// `slot` is `None` only while `Running` is dropped.
pub(crate) struct Running {
    /// The handler's number (see [`new_pool`]).
    pool: usize,
    slot: Option<SlotBox>,
}

type SlotBox = Pin<Box<dyn Slot>>;

/// The room for one type of future: `Option<Fut>`, `None` while the box is spare.
trait Slot {
    /// Moves `fresh` (an `Option<Fut>` holding a future not yet polled) into this slot if the
    /// slot is for its type; false otherwise.
    fn start(self: Pin<&mut Self>, fresh: &mut dyn Any) -> bool;
    /// Polls the future; once it is done the slot is emptied.
    fn poll_response(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Response>;
    /// Drops the future (a request abandoned before it was answered).
    fn clear(self: Pin<&mut Self>);
}

impl<Fut> Slot for Option<Fut>
where
    Fut: Future + 'static,
    Fut::Output: IntoResponse,
{
    fn start(mut self: Pin<&mut Self>, fresh: &mut dyn Any) -> bool {
        match fresh.downcast_mut::<Option<Fut>>() {
            Some(fut) => {
                self.set(fut.take());
                true
            }
            None => false,
        }
    }

    fn poll_response(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Response> {
        let fut = self
            .as_mut()
            .as_pin_mut()
            .expect("polled after it answered");
        let output = std::task::ready!(fut.poll(cx));
        self.set(None);
        Poll::Ready(output.into_response())
    }

    fn clear(mut self: Pin<&mut Self>) {
        self.set(None);
    }
}

thread_local! {
    /// Boxes of finished handler futures, each empty, for the next requests on this thread,
    /// each with the number of the handler it is for.
    static SPARE: RefCell<Vec<(usize, SlotBox)>> = const { RefCell::new(Vec::new()) };
}

/// Most spare boxes a thread keeps (they hold their futures' size each).
const SPARE_MAX: usize = 64;

impl Running {
    /// Puts `fut` in a spare box of handler `pool`, or in a new one.
    pub(crate) fn start<Fut>(pool: usize, fut: Fut) -> Running
    where
        Fut: Future + 'static,
        Fut::Output: IntoResponse,
    {
        let mut fresh = Some(fut);
        let reused = SPARE.with_borrow_mut(|spare| {
            // The last box given back is the likeliest match: a keep-alive client tends to
            // ask the same route again.
            let i = spare.iter().rposition(|(p, _)| *p == pool)?;
            Some(spare.swap_remove(i).1)
        });
        // A box of handler `pool` is for its future type, so `start` succeeds.
        let slot = reused
            .and_then(|mut slot| slot.as_mut().start(&mut fresh).then_some(slot))
            .unwrap_or_else(|| Box::pin(fresh));
        Running {
            pool,
            slot: Some(slot),
        }
    }
}

impl Future for Running {
    type Output = Response;

    #[inline]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Response> {
        let slot = self.slot.as_mut().expect("a running handler has its box");
        slot.as_mut().poll_response(cx)
    }
}

impl Drop for Running {
    /// Gives the box back to its pool, emptied (the future is gone once it answered, but may
    /// still be running if the request was abandoned).
    fn drop(&mut self) {
        let Some(mut slot) = self.slot.take() else {
            return;
        };
        slot.as_mut().clear();
        SPARE.with_borrow_mut(|spare| {
            if spare.len() < SPARE_MAX {
                spare.push((self.pool, slot));
            }
        });
    }
}
