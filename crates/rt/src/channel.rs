//! An unbounded multi-producer, single-consumer channel that works across workers.
//!
//! Senders are `Send + Clone` and may live on any thread; the receiver awaits on one worker. A
//! send from another thread wakes the receiving worker through its eventfd.

use std::collections::VecDeque;
use std::fmt;
use std::future::poll_fn;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use crate::lock;

/// What both halves share, behind a mutex. No user code runs under the lock: values are moved
/// in and out, never dropped there.
struct Chan<T> {
    queue: VecDeque<T>,
    receiver: Option<Waker>,
    senders: usize,
    receiver_alive: bool,
}

/// Creates a channel.
pub fn channel<T>() -> (Sender<T>, Receiver<T>) {
    let chan = Arc::new(Mutex::new(Chan {
        queue: VecDeque::new(),
        receiver: None,
        senders: 1,
        receiver_alive: true,
    }));
    (Sender { chan: chan.clone() }, Receiver { chan })
}

/// The sending half; clone it for more producers.
pub struct Sender<T> {
    chan: Arc<Mutex<Chan<T>>>,
}

/// The receiving half.
pub struct Receiver<T> {
    chan: Arc<Mutex<Chan<T>>>,
}

/// The value could not be sent: the receiver is gone. The value is handed back.
#[derive(PartialEq, Eq)]
pub struct SendError<T>(pub T);

impl<T> Sender<T> {
    /// Queues `value` for the receiver; never blocks.
    pub fn send(&self, value: T) -> Result<(), SendError<T>> {
        let waker = {
            let mut state = lock(&self.chan);
            if !state.receiver_alive {
                return Err(SendError(value));
            }
            state.queue.push_back(value);
            state.receiver.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
        Ok(())
    }
}

impl<T> Receiver<T> {
    /// The next value; `None` once every sender is dropped and the queue is empty.
    pub async fn recv(&mut self) -> Option<T> {
        poll_fn(|cx| self.poll_recv(cx)).await
    }

    /// Polls for the next value.
    pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let mut state = lock(&self.chan);
        if let Some(v) = state.queue.pop_front() {
            return Poll::Ready(Some(v));
        }
        if state.senders == 0 {
            return Poll::Ready(None);
        }
        crate::future::keep_waker(&mut state.receiver, cx.waker());
        Poll::Pending
    }

    /// The next value if one is queued.
    pub fn try_recv(&mut self) -> Option<T> {
        lock(&self.chan).queue.pop_front()
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        lock(&self.chan).senders += 1;
        Sender {
            chan: self.chan.clone(),
        }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let mut state = lock(&self.chan);
        state.senders -= 1;
        let last = state.senders == 0;
        let waker = state.receiver.take_if(|_| last);
        drop(state);
        if let Some(w) = waker {
            w.wake();
        }
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        let queue = {
            let mut state = lock(&self.chan);
            state.receiver_alive = false;
            std::mem::take(&mut state.queue)
        };
        // Dropped outside the lock: a queued value may hold a `Sender` of this very channel,
        // whose `Drop` locks it.
        drop(queue);
    }
}

opaque_debug!(Sender<T>, Receiver<T>);

impl<T> fmt::Debug for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SendError(..)")
    }
}

impl<T> fmt::Display for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the receiver was dropped")
    }
}

impl<T> std::error::Error for SendError<T> {}
