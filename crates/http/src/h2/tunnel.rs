//! WebSocket over HTTP/2 (RFC 8441): once a WebSocket's extended CONNECT is answered 200, its
//! stream carries the session's bytes both ways in DATA frames, beside the connection's other
//! streams.
//!
//! The session is the one HTTP/1 runs (`crate::ws`), on a [`StreamLink`] instead of a socket:
//! it reads the stream's [`Inbox`], and the window comes back to the client as it reads (a
//! session that does not read holds its client back: flow control, as for a request body); it
//! writes into an [`Outbox`] of at most [`OUTBOX_MAX`] bytes, which the connection sends as the
//! windows allow; a full outbox makes the session wait (its write timeout runs). Shutting the
//! link's write side ends the stream (END_STREAM, the TCP close of RFC 6455, RFC 8441 §6). A
//! reset stream fails both directions; a session that ends without having ended its stream
//! resets it with `CANCEL` (RFC 8441 §6: a TCP reset).
//!
//! The session runs in the connection's task, polled as a waiting handler is: when its own
//! waker fires ([`StreamWaker`]). Should the connection end first, the session goes on in a
//! task of its own, where the link fails it at its next read or write.

use std::cell::RefCell;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use bytes::{Buf, BytesMut};
use volt_proto::h2::frame::Reason;

use super::inbox::{BodyEnd, Inbox};
use super::{Driver, StreamWaker, Task};
use crate::response::Response;
use crate::ws::link::{stream_reset, Link};
use crate::ws::PendingUpgrade;
use crate::Request;

/// Most bytes a session's writes may have waiting for the windows: past that, it waits.
const OUTBOX_MAX: usize = 64 * 1024;

/// The byte link a WebSocket session runs on over an HTTP/2 stream.
pub(crate) struct StreamLink {
    inbox: Rc<RefCell<Inbox>>,
    outbox: Rc<RefCell<Outbox>>,
}

/// What a session wrote, on its way to the stream's DATA frames.
pub(super) struct Outbox {
    data: BytesMut,
    state: Sending,
    /// The session waiting for room, or for its bytes (or END_STREAM) to go.
    writer: Option<Waker>,
    /// The connection task, woken to send.
    conn: Waker,
}

/// Where the server's side of a tunnel's stream is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sending {
    Open,
    /// The session shut its side: END_STREAM goes after the data.
    Ending,
    /// END_STREAM sent.
    Ended,
    /// The stream is gone (reset by either side, or the connection lost).
    Reset,
}

impl Outbox {
    fn wake_writer(&mut self) {
        if let Some(w) = self.writer.take() {
            w.wake();
        }
    }

    /// The stream is gone: the session's next write fails.
    pub(super) fn reset(&mut self) {
        if self.state != Sending::Ended {
            self.state = Sending::Reset;
        }
        self.data.clear();
        self.wake_writer();
    }

    /// The error of a write on a stream that no longer takes one.
    fn refusal(&self) -> io::Error {
        match self.state {
            Sending::Reset => stream_reset(),
            _ => io::Error::new(io::ErrorKind::BrokenPipe, "the stream was ended"),
        }
    }
}

impl StreamLink {
    /// Moves every chunk that arrived into `buf`; `Ok(0)` once the client ended the stream.
    pub(crate) fn poll_read_bytes(
        &self,
        cx: &mut Context<'_>,
        buf: &mut BytesMut,
    ) -> Poll<io::Result<usize>> {
        let mut inbox = self.inbox.borrow_mut();
        let mut n = 0;
        while let Some(chunk) = inbox.chunks.pop_front() {
            buf.extend_from_slice(&chunk);
            n += chunk.len();
        }
        if n > 0 {
            // The connection gives the window back.
            inbox.consumed += n;
            inbox.conn.wake_by_ref();
            return Poll::Ready(Ok(n));
        }
        match inbox.end {
            BodyEnd::Open => {
                inbox.reader = Some(cx.waker().clone());
                Poll::Pending
            }
            BodyEnd::Ended | BodyEnd::Trailers(_) => Poll::Ready(Ok(0)),
            BodyEnd::Reset => Poll::Ready(Err(stream_reset())),
        }
    }

    /// Takes what fits of `buf` into the outbox.
    pub(crate) fn poll_write(&self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let mut outbox = self.outbox.borrow_mut();
        if outbox.state != Sending::Open {
            return Poll::Ready(Err(outbox.refusal()));
        }
        let n = buf.len().min(OUTBOX_MAX - outbox.data.len());
        if n == 0 && !buf.is_empty() {
            outbox.writer = Some(cx.waker().clone());
            return Poll::Pending;
        }
        outbox.data.extend_from_slice(&buf[..n]);
        outbox.conn.wake_by_ref();
        Poll::Ready(Ok(n))
    }

    /// Ready once the outbox went out in DATA frames (the windows allowing).
    pub(crate) fn poll_flush(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut outbox = self.outbox.borrow_mut();
        if outbox.state == Sending::Reset {
            return Poll::Ready(Err(stream_reset()));
        }
        if outbox.data.is_empty() {
            return Poll::Ready(Ok(()));
        }
        outbox.writer = Some(cx.waker().clone());
        Poll::Pending
    }

    /// Ends the stream after what was written: ready once END_STREAM went (or the stream is
    /// gone: nothing is left to end).
    pub(crate) fn poll_shutdown(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut outbox = self.outbox.borrow_mut();
        match outbox.state {
            Sending::Ended | Sending::Reset => return Poll::Ready(Ok(())),
            Sending::Open => {
                outbox.state = Sending::Ending;
                outbox.conn.wake_by_ref();
            }
            Sending::Ending => {}
        }
        outbox.writer = Some(cx.waker().clone());
        Poll::Pending
    }
}

/// A WebSocket session running on a stream, polled when its waker fired.
pub(super) struct Session {
    future: Pin<Box<dyn Future<Output = ()>>>,
    waker: Arc<StreamWaker>,
}

impl Session {
    /// Polls the session if its waker fired; true once it is over.
    pub(super) fn poll(&mut self) -> bool {
        if !self.waker.woken.swap(false, Ordering::AcqRel) {
            return false;
        }
        let waker = Waker::from(self.waker.clone());
        let mut cx = Context::from_waker(&waker);
        self.future.as_mut().poll(&mut cx).is_ready()
    }

    /// The connection is ending with the session still running: it goes on in a task of its
    /// own, where the link (reset) fails its next read or write.
    pub(super) fn detach(self) {
        volt_rt::spawn(self.future);
    }
}

impl<C, F> Driver<C, F>
where
    C: Fn(Request) -> F,
    F: Future<Output = Response>,
{
    /// Starts `pending`'s session on `task`'s stream, whose 200 was just encoded.
    pub(super) fn start_tunnel(&mut self, task: &mut Task<F>, pending: Box<PendingUpgrade>) {
        let Some(inbox) = task.inbox.clone() else {
            // `Request::websocket` refuses a request that ended its stream.
            self.conn
                .reset(task.id, Reason::INTERNAL_ERROR, &mut self.out);
            return;
        };
        let conn = inbox.borrow().conn.clone();
        let outbox = Rc::new(RefCell::new(Outbox {
            data: BytesMut::new(),
            state: Sending::Open,
            writer: None,
            conn: conn.clone(),
        }));
        let link = Link::H2(StreamLink {
            inbox,
            outbox: outbox.clone(),
        });
        let future = crate::ws::run(pending, link, BytesMut::new(), self.worker.clone());
        task.session = Some(Session {
            future: Box::pin(future),
            waker: Arc::new(StreamWaker {
                woken: AtomicBool::new(true),
                conn,
            }),
        });
        task.out = super::response::Outgoing::Tunnel(outbox);
        self.idle_since = None;
    }

    /// Sends what the session wrote as the windows allow, then END_STREAM once it shut its
    /// side. True once nothing is left to do for the stream's sending side: ended, or the
    /// session is over (a session that ended without ending its stream resets it: `CANCEL`).
    pub(super) fn pump_tunnel(&mut self, task: &mut Task<F>, outbox: &RefCell<Outbox>) -> bool {
        let id = task.id;
        let mut outbox = outbox.borrow_mut();
        let mut moved = false;
        if !outbox.data.is_empty() {
            let n = self.send_some(id, &outbox.data, false);
            outbox.data.advance(n);
            // The stream's own stall is the session's write timeout; the connection's window
            // is watched as for any response.
            let left = !outbox.data.is_empty();
            self.note_sent(id, &mut None, n, left);
            moved = n > 0;
        }
        if outbox.data.is_empty() && outbox.state == Sending::Ending {
            self.conn.send_data(id, &[], true, &mut self.out);
            outbox.state = Sending::Ended;
            moved = true;
        }
        if moved {
            outbox.wake_writer();
        }
        if task.session.is_some() {
            return false;
        }
        if outbox.state != Sending::Ended {
            self.conn.reset(id, Reason::CANCEL, &mut self.out);
            outbox.reset();
        }
        true
    }

    /// The client reset a tunnel's stream: the session learns it at its next read or write,
    /// and its task stays until the session is over.
    pub(super) fn reset_tunnel(&mut self, task: &mut Task<F>) {
        if let Some(inbox) = &task.inbox {
            let mut inbox = inbox.borrow_mut();
            inbox.end = BodyEnd::Reset;
            inbox.wake_reader();
        }
        if let super::response::Outgoing::Tunnel(outbox) = &task.out {
            outbox.borrow_mut().reset();
        }
        task.out = super::response::Outgoing::Done;
    }
}
