//! Small future combinators the runtime's users need most.

use std::future::{poll_fn, Future};
use std::pin::pin;
use std::task::{Poll, Waker};

/// The output of [`race`]: which future finished first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Either<A, B> {
    /// The first future won.
    Left(A),
    /// The second future won.
    Right(B),
}

/// Polls both futures and returns the output of the first to finish, dropping the other.
/// `a` is polled first on each wake, so it wins a tie.
pub async fn race<A: Future, B: Future>(a: A, b: B) -> Either<A::Output, B::Output> {
    let (mut a, mut b) = (pin!(a), pin!(b));
    poll_fn(|cx| {
        if let Poll::Ready(out) = a.as_mut().poll(cx) {
            return Poll::Ready(Either::Left(out));
        }
        if let Poll::Ready(out) = b.as_mut().poll(cx) {
            return Poll::Ready(Either::Right(out));
        }
        Poll::Pending
    })
    .await
}

/// Keeps `waker` in `slot`, unless the one there already wakes the same task (no clone then).
#[inline]
pub(crate) fn keep_waker(slot: &mut Option<Waker>, waker: &Waker) {
    if slot.as_ref().is_none_or(|w| !w.will_wake(waker)) {
        *slot = Some(waker.clone());
    }
}
