//! The connection's read side, as `write.rs` is its write side: waiting for the socket under
//! the connection's one timer ([`ConnIo::until`]), reads into the read buffer, when a buffer
//! is worth parsing again, and the buffers' trips to and from the worker's pools.

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Instant;

use super::{ConnIo, MIN_READ};
use crate::server::READ_BUF;

pub(super) enum ReadError {
    Io,
    Timeout,
}

/// What [`ConnIo::until`] gives for a read. Inline: left to itself, LTO's inliner chose
/// either way as unrelated code in the crate changed, and a call on every read cost ~17
/// instructions per request (techempower, `bench/callgrind-ir`).
#[inline]
fn read_result(result: Option<std::io::Result<usize>>) -> Result<usize, ReadError> {
    match result {
        Some(Ok(n)) => Ok(n),
        Some(Err(_)) => Err(ReadError::Io),
        None => Err(ReadError::Timeout),
    }
}

impl ConnIo {
    /// Polls `op` until it is ready or `deadline` passes (`None`). The connection's one timer
    /// is reused for every wait, so a wait needs no future of its own (which also keeps an
    /// idle connection small).
    ///
    /// The timer is touched only when `op` has to wait, and moved (a timer-map remove and
    /// insert) only when it would fire too late for `deadline` or once it fires: a timer still
    /// armed for an earlier deadline (the previous request's idle timeout, say) is left alone,
    /// fires early, and is moved on then. A keep-alive request whose write completes at once
    /// thus costs one timer-map lookup instead of two removes and two inserts.
    ///
    /// `op` is given the connection rather than capturing it: 8 bytes less in every such
    /// future.
    pub(super) fn until<'a, T>(
        &'a self,
        deadline: Instant,
        mut op: impl FnMut(&ConnIo, &mut Context<'_>) -> Poll<T> + 'a,
    ) -> impl Future<Output = Option<T>> + 'a {
        poll_fn(move |cx| {
            if let Poll::Ready(v) = op(self, cx) {
                return Poll::Ready(Some(v));
            }
            let mut timer = self.timer.borrow_mut();
            if timer.deadline() > deadline {
                timer.reset(deadline);
            }
            loop {
                match Pin::new(&mut *timer).poll(cx) {
                    Poll::Pending => return Poll::Pending,
                    // Armed for this deadline (it is never later, see above): it passed.
                    Poll::Ready(()) if timer.deadline() == deadline => return Poll::Ready(None),
                    // An earlier deadline fired: arm for this one (polled again just below).
                    Poll::Ready(()) => timer.reset(deadline),
                }
            }
        })
    }

    /// Reads the next bytes of a request into the read buffer. `idle` (no request started):
    /// first gives the buffers back ([`ConnIo::release_buffers`]) and waits, marked idle, until
    /// the socket has something to read, and only then takes a buffer. (Over TLS the transport
    /// reports itself readable at once, as it may hold decrypted bytes: the wait is the read,
    /// with a buffer taken.)
    ///
    /// One future for both waits, so `serve` keeps no deadline of its own between them; with
    /// `until`'s, which holds no `&self` twice, `serve`'s future is 16 bytes narrower (the
    /// connection task's allocation 168 -> 152 bytes), and it stores no deadline twice, nor
    /// sets up a second future (keep-alive, 64 connections, io_uring: 2,770 -> 2,719
    /// Ir/request; L1 misses 15.3 -> 15.1 a request, within callgrind's noise).
    ///
    /// Measured and not kept (when idle connections could keep their buffers): waiting in the
    /// read itself instead of for readiness first (the read polled twice, Pending then Ready,
    /// instead of a readiness check twice and the read once): each poll of the read future
    /// pays its own entry (~15) and its Pending read ~100, so keep-alive went 2,333 -> 2,378
    /// Ir/request, and 2,410 with the readiness check as that read's first poll.
    pub(super) fn read_next(
        &self,
        deadline: Instant,
        idle: bool,
    ) -> impl Future<Output = Result<usize, ReadError>> + '_ {
        let mut waiting = idle;
        if idle {
            self.release_buffers();
            self.idle.set(true);
        } else {
            self.reserve_read(0);
        }
        let mut read = self.until(deadline, move |io, cx| {
            if waiting {
                ready!(io.stream.poll_read_ready(cx));
                waiting = false;
                io.reserve_read(0);
            }
            let read = ready!(io.stream.poll_read_bytes(cx, &mut io.read_buf.borrow_mut()));
            // Idle until the read returns, not only until readiness: over TLS a connection
            // waits in the read (the transport reports itself readable at once, as it may hold
            // decrypted bytes), and graceful shutdown must close it too, not wait out its
            // timeout (test `shutdown_closes_an_idle_tls_connection`).
            io.idle.set(false);
            Poll::Ready(read)
        });
        poll_fn(move |cx| Pin::new(&mut read).poll(cx).map(read_result))
    }

    /// Reads once into the read buffer (reserving `reserve` bytes first, or 4 KiB). The buffer
    /// is borrowed only inside each poll, so the future holds no buffer of its own.
    ///
    /// Not an async fn: the room is reserved at once (the future is awaited where it is made),
    /// and the future is [`ConnIo::until`]'s, mapped.
    pub(super) fn read(
        &self,
        deadline: Instant,
        reserve: usize,
    ) -> impl Future<Output = Result<usize, ReadError>> + '_ {
        self.reserve_read(reserve);
        let mut read = self.until(deadline, |io, cx| {
            io.stream.poll_read_bytes(cx, &mut io.read_buf.borrow_mut())
        });
        poll_fn(move |cx| Pin::new(&mut read).poll(cx).map(read_result))
    }

    /// [`ConnIo::read`] with a timer of its own, for a request body read in a task other than
    /// the connection's. The connection's timer keeps one waker: shared, the other task's wait
    /// took the wake meant for the connection's write timeout, and a client that stopped
    /// reading then held the connection for good.
    pub(super) async fn read_alone(
        &self,
        deadline: Instant,
        reserve: usize,
    ) -> Result<usize, ReadError> {
        self.reserve_read(reserve);
        let read = poll_fn(|cx| {
            self.stream
                .poll_read_bytes(cx, &mut self.read_buf.borrow_mut())
        });
        read_result(volt_rt::time::timeout_at(deadline, read).await.ok())
    }

    /// Makes room for a read of at least `reserve` bytes, or 4 KiB, taking a buffer from the
    /// worker's pool if the connection holds none.
    pub(super) fn reserve_read(&self, reserve: usize) {
        let mut buf = self.read_buf.borrow_mut();
        if buf.capacity() == 0 {
            *buf = self.worker.take_read_buf();
        }
        // At least 4 KiB of room, so a read takes a whole pipelined batch: with less, the
        // tail of a buffer whose front went to earlier requests made reads of a few bytes.
        buf.reserve(reserve.max(MIN_READ));
    }

    /// Whether the read buffer may hold something to act on: anything, unless the last parse
    /// found an unfinished head; then only bytes that may end it or break a rule
    /// ([`volt_proto::UnfinishedHead::may_change`]: a LF, a control byte, a byte that breaks
    /// the method, version or a field name), or enough of them to break a size limit (431, or
    /// 414 while the request line is still open).
    pub(super) fn worth_parsing(&self, unfinished: &mut volt_proto::UnfinishedHead) -> bool {
        let buf = self.read_buf.borrow();
        let seen = unfinished.len();
        if seen == 0 || seen > buf.len() {
            return !buf.is_empty();
        }
        let limits = &self.worker.limits;
        unfinished.may_change(&buf)
            || buf.len() > limits.max_head_bytes
            || (buf.len() > limits.max_uri_len && !buf[..seen].contains(&b'\n'))
    }

    /// Gives both buffers back to the worker's pools: on going idle, and when closed.
    ///
    /// Every time, not only for a quiet connection: the pools hand out the buffer given back
    /// last, still in the CPU's cache, while a busy keep-alive connection that kept its own
    /// found it evicted by the other connections' traffic by its next request. Keeping them
    /// saved ~190 instructions a request (this give and the take in `read` and `start`) and
    /// still cost ~1% more CPU per keep-alive request (BENCHMARKS.md, run N). An idle
    /// connection then holds no buffer at all.
    pub(super) fn release_buffers(&self) {
        if self.read_buf.borrow().capacity() == 0 && self.write_buf.borrow().capacity() == 0 {
            return;
        }
        let mut read = std::mem::take(&mut *self.read_buf.borrow_mut());
        // The buffer was advanced past the requests it held, so what is left reports less
        // capacity than the pool wants; the whole allocation comes back without copying or
        // allocating (without this, every keep-alive request dropped its buffer and the next
        // one allocated a new one). If a handler still holds a body chunk split off this
        // buffer, this fails and the pool turns the buffer away.
        let _ = read.try_reclaim(READ_BUF);
        self.worker.give_read_buf(read);
        let write = std::mem::take(&mut *self.write_buf.borrow_mut());
        self.worker.give_write_buf(write);
    }
}

impl Drop for ConnIo {
    /// A closed connection's buffers go back to the worker's pool too, not only an idle one's:
    /// with a new connection per request, every connection would otherwise allocate and free
    /// both.
    fn drop(&mut self) {
        self.release_buffers();
    }
}
