//! A rare branch's future, boxed and polled out of line.
//!
//! `Box::pin(f).await` keeps a rare future's size out of every connection's future, but the
//! box's type is concrete, so LTO may still inline its `poll` into the connection's. That
//! inlined code brings its stack temporaries along: once the WebSocket session was inlined
//! into `serve`, building its inflate state on the stack gave `serve`'s poll a 56 KB frame,
//! and every poll of every connection paid 13 stack probes, each a cache miss (BENCHMARKS.md,
//! "The 56 KB frame"). Polling through [`Cold`] keeps the rare code in a function of its own.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// `future`, boxed, with a `poll` that is never inlined into its caller's.
pub(crate) fn cold<F: Future>(future: F) -> Cold<F> {
    Cold(Box::pin(future))
}

pub(crate) struct Cold<F>(Pin<Box<F>>);

impl<F: Future> Future for Cold<F> {
    type Output = F::Output;

    #[inline(never)]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        self.0.as_mut().poll(cx)
    }
}
