//! Handlers' futures in boxes reused from request to request (see [`Running`]).

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use crate::response::{IntoResponse, Response};
use crate::Request;
#[cfg(doc)]
use crate::Service;

/// A new handler number: every handler made in the process gets its own, which tags the spare
/// boxes of its futures.
fn new_pool() -> usize {
    static NEXT_POOL: AtomicUsize = AtomicUsize::new(0);
    NEXT_POOL.fetch_add(1, Ordering::Relaxed)
}

/// A handler as the router and [`service_fn`](crate::service_fn) keep it: its number, and
/// how to make a box for its futures.
pub(crate) struct Handler {
    /// The handler's number (see [`new_pool`]).
    pool: usize,
    /// A new, empty box for the handler's futures, holding the handler (shared) to call.
    /// Called only when no spare box of this handler is free.
    new_slot: Box<dyn Fn() -> SlotBox + Send + Sync>,
}

impl Handler {
    /// A new handler, numbered.
    pub(crate) fn new<H, Fut>(handler: H) -> Handler
    where
        H: Fn(Request) -> Fut + Send + Sync + 'static,
        Fut: Future + 'static,
        Fut::Output: IntoResponse,
    {
        Handler::shared(Arc::new(handler))
    }

    /// [`Handler::new`] for a handler its owner keeps a share of too.
    pub(crate) fn shared<H, Fut>(handler: Arc<H>) -> Handler
    where
        H: Fn(Request) -> Fut + Send + Sync + 'static,
        Fut: Future + 'static,
        Fut::Output: IntoResponse,
    {
        Handler {
            pool: new_pool(),
            new_slot: Box::new(move || {
                Box::new(HandlerSlot {
                    handler: handler.clone(),
                    fut: Box::pin(None),
                })
            }),
        }
    }
}

/// A handler's future, in a box that outlives it.
///
/// The router holds handlers of many types, so their futures are boxed, and the server needs
/// a handler's future it can move after polling it (see [`Service::call_unpin`]); but once a
/// future is done its box goes to a pool of this thread's spare boxes, tagged with its
/// handler's number ([`new_pool`]), and the next request to that handler reuses it. A request
/// thus allocates nothing for its handler (a `malloc` and a `free` were ~140 instructions of a
/// keep-alive request's ~4,100), and finds its box by comparing numbers, not by asking each box
/// for its type.
///
/// The box holds the handler too, and calls it itself: the future is made in its box, with one
/// call through the box's vtable, not made outside and then moved in (which took a call to
/// the handler's closure, one to the box, and one more to check the future's type).
/// `slot` is `None` only while `Running` is dropped.
pub(crate) struct Running {
    /// The handler's number (see [`new_pool`]).
    pool: usize,
    slot: Option<SlotBox>,
}

type SlotBox = Box<dyn Slot>;

/// The room for one handler's futures.
trait Slot {
    /// Calls the handler with `req`; its future goes in this slot (which is empty).
    fn start(&mut self, req: Request);
    /// Polls the future; once it is done the slot is emptied.
    fn poll_response(&mut self, cx: &mut Context<'_>) -> Poll<Response>;
    /// Drops the future (a request abandoned before it was answered).
    fn clear(&mut self);
}

/// A handler, and the room for its future, `None` while the box is spare. The future has a box
/// of its own, as it is pinned while the handler is not (safe code cannot reach a pinned
/// field next to one that is not); it is allocated with the slot, so reused with it.
struct HandlerSlot<H, Fut> {
    handler: Arc<H>,
    fut: Pin<Box<Option<Fut>>>,
}

impl<H, Fut> Slot for HandlerSlot<H, Fut>
where
    H: Fn(Request) -> Fut,
    Fut: Future,
    Fut::Output: IntoResponse,
{
    fn start(&mut self, req: Request) {
        self.fut.set(Some((self.handler)(req)));
    }

    fn poll_response(&mut self, cx: &mut Context<'_>) -> Poll<Response> {
        let fut = self
            .fut
            .as_mut()
            .as_pin_mut()
            .expect("polled after it answered");
        let output = std::task::ready!(fut.poll(cx));
        self.fut.set(None);
        Poll::Ready(output.into_response())
    }

    fn clear(&mut self) {
        self.fut.set(None);
    }
}

thread_local! {
    /// The box given back last, kept apart: the next request most likely goes to the same
    /// handler (a keep-alive client asks the same route again, a pipelined batch is often
    /// one route), and finds it here with one comparison, no search and no `RefCell`.
    static LAST: Cell<Option<(usize, SlotBox)>> = const { Cell::new(None) };
    /// The other boxes of finished handler futures, each empty, for the next requests on
    /// this thread, each with the number of the handler it is for.
    static SPARE: RefCell<Vec<(usize, SlotBox)>> = const { RefCell::new(Vec::new()) };
}

/// Most spare boxes a thread keeps besides [`LAST`] (they hold their futures' size each).
const SPARE_MAX: usize = 64;

impl Running {
    /// Calls `handler` with `req`, its future in a spare box of that handler or in a new one.
    #[inline]
    pub(crate) fn start(handler: &Handler, req: Request) -> Running {
        let pool = handler.pool;
        let mut slot = match LAST.take() {
            Some((p, slot)) if p == pool => slot,
            last => Running::spare(handler, last),
        };
        slot.start(req);
        Running {
            pool,
            slot: Some(slot),
        }
    }

    /// A box for `handler` from the spare ones, or a new one; `last` (taken out of [`LAST`],
    /// and not for `handler`) joins the spare ones.
    #[inline(never)]
    fn spare(handler: &Handler, last: Option<(usize, SlotBox)>) -> SlotBox {
        let reused = SPARE.with_borrow_mut(|spare| {
            if let Some(last) = last {
                give_back(spare, last);
            }
            // The last box given back is the likeliest match.
            let i = spare.iter().rposition(|(p, _)| *p == handler.pool)?;
            Some(spare.swap_remove(i).1)
        });
        reused.unwrap_or_else(|| (handler.new_slot)())
    }
}

/// Keeps a spare box, if there are not too many.
fn give_back(spare: &mut Vec<(usize, SlotBox)>, slot: (usize, SlotBox)) {
    if spare.len() < SPARE_MAX {
        spare.push(slot);
    }
}

impl Future for Running {
    type Output = Response;

    #[inline]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Response> {
        let slot = self.slot.as_mut().expect("a running handler has its box");
        slot.poll_response(cx)
    }
}

impl Drop for Running {
    /// Gives the box back, emptied (the future is gone once it answered, but may still be
    /// running if the request was abandoned), as [`LAST`]; the box that was there goes to
    /// the other spare ones.
    ///
    /// Measured and left as it is: skipping `clear` for a future that answered (a flag) was
    /// -5 Ir/request pipelined on epoll but +3 on io_uring and keep-alive; giving the box back
    /// in `poll` as it answers pushed the router's poll out of line (1,466 -> 1,495), and
    /// forced inline, spilled registers in the connection's loop (1,526).
    fn drop(&mut self) {
        let Some(mut slot) = self.slot.take() else {
            return;
        };
        slot.clear();
        if let Some(before) = LAST.replace(Some((self.pool, slot))) {
            SPARE.with_borrow_mut(|spare| give_back(spare, before));
        }
    }
}
