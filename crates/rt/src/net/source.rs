//! A non-blocking descriptor registered with the current worker's reactor.

use std::future::poll_fn;
use std::io::{self, IoSlice};
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::net::Shutdown;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::task::{Context, Poll};

use crate::executor::{try_with_core, with_core};
use crate::reactor::{self, uring, Direction, Kind, Reactor, READABLE, WRITABLE};

/// An fd plus its reactor token. `!Send`: the registration belongs to this worker.
///
/// On epoll the stream methods make the syscalls themselves; on io_uring a stream's reads and
/// writes go through the reactor's buffers (`uring`), TCP listeners accept through the ring,
/// and only UDP sockets and Unix listeners use readiness.
pub(crate) struct Source {
    /// Handed to the reactor on drop (io_uring closes it once nothing is in flight on it).
    fd: ManuallyDrop<OwnedFd>,
    token: usize,
    /// A stream on an io_uring reactor.
    pub(super) uring: bool,
    /// The uid of the worker whose reactor issued `token`. `!Send` keeps a source on its
    /// thread, but not inside the `block_on` that created it: in a later one on the same thread
    /// the token would name another socket's registration.
    worker: u32,
    _local: PhantomData<*const ()>,
}

impl Source {
    /// Registers a socket (already non-blocking) of `kind`, assuming it is ready both ways
    /// until told otherwise: a connected stream, a listener (readiness only, on either driver),
    /// or a TCP listener (see [`Source::poll_accept`]).
    /// `shared`: the fd came from the user (`from_std`), who may hold a duplicate of it.
    pub(crate) fn new(fd: OwnedFd, kind: Kind, shared: bool) -> io::Result<Source> {
        Self::register(fd, READABLE | WRITABLE, kind, shared)
    }

    /// Registers a stream whose non-blocking `connect` is in progress, and waits for the
    /// handshake to end: `Err` if it failed.
    pub(crate) async fn connecting(fd: OwnedFd) -> io::Result<Source> {
        // Not writable until the handshake completes; readable is fine to assume.
        let source = Self::register(fd, READABLE, Kind::Stream, false)?;
        source.ready(Direction::Write).await;
        rustix::net::sockopt::socket_error(&source)??;
        Ok(source)
    }

    /// Accepts through the ring (a TCP listener on io_uring); `None` on epoll, where the caller
    /// accepts on readiness.
    pub(crate) fn poll_accept(
        &self,
        cx: &Context<'_>,
    ) -> Option<Poll<io::Result<(OwnedFd, std::net::SocketAddr)>>> {
        self.uring
            .then(|| self.with_uring(|r| r.poll_accept(self.token, cx)))
    }

    fn register(fd: OwnedFd, ready: u8, kind: Kind, shared: bool) -> io::Result<Source> {
        let (token, worker, uring) = with_core(|core| {
            let token = core.reactor.register(fd.as_fd(), ready, kind, shared)?;
            let uring = kind != Kind::Readiness && matches!(core.reactor, Reactor::Uring(_));
            Ok::<_, io::Error>((token, core.shared.uid, uring))
        })?;
        Ok(Source {
            fd: ManuallyDrop::new(fd),
            token,
            uring,
            worker,
            _local: PhantomData,
        })
    }

    /// Runs `f` with the io_uring reactor; only for `self.uring` sources.
    fn with_uring<R>(&self, f: impl FnOnce(&uring::Reactor) -> R) -> R {
        self.with_reactor(|reactor| match reactor {
            Reactor::Uring(r) => f(r),
            Reactor::Epoll(_) => unreachable!("an io_uring stream on an epoll reactor"),
        })
    }

    /// Copies what has been received into `sink` (io_uring streams).
    pub(super) fn poll_recv(
        &self,
        cx: Option<&Context<'_>>,
        sink: &mut impl FnMut(&[u8]) -> usize,
    ) -> Poll<io::Result<usize>> {
        self.with_uring(|r| r.poll_recv(self.token, cx, sink))
    }

    /// Runs `f` with the reactor this source is registered with.
    ///
    /// # Panics
    /// On another worker (a socket kept from an earlier `block_on`), or outside one.
    fn with_reactor<R>(&self, f: impl FnOnce(&Reactor) -> R) -> R {
        with_core(|core| {
            assert!(
                core.shared.uid == self.worker,
                "a volt-rt socket was used outside the worker (or block_on) that created it"
            );
            f(&core.reactor)
        })
    }

    pub(crate) fn poll_ready(&self, cx: &Context<'_>, dir: Direction) -> Poll<()> {
        self.with_reactor(|reactor| self.poll_ready_on(reactor, cx, dir))
    }

    // Into `poll_io`: it runs before every read and write. Plain `inline` was not always taken
    // (in the HTTP server it stayed a call, 2 a request).
    #[inline(always)]
    fn poll_ready_on(&self, reactor: &Reactor, cx: &Context<'_>, dir: Direction) -> Poll<()> {
        match reactor {
            // epoll adds the fd to its set the first time it has to wait.
            Reactor::Epoll(r) => r.poll_ready(self.token, self.fd.as_fd(), dir, cx),
            Reactor::Uring(r) => r.poll_ready(self.token, dir, cx),
        }
    }

    /// Runs `op` once the fd is ready in `dir`, retrying after each `EAGAIN` edge; readiness is
    /// also cleared after a result that `drained` says left the fd with nothing more to give
    /// (or no more room). The readiness check, the syscall and the clearing take one reactor
    /// access: this runs for every read and write.
    pub(crate) fn poll_io<R>(
        &self,
        cx: &Context<'_>,
        dir: Direction,
        mut op: impl FnMut(&OwnedFd) -> rustix::io::Result<R>,
        drained: impl Fn(&R) -> bool,
    ) -> Poll<io::Result<R>> {
        self.with_reactor(|reactor| loop {
            if self.poll_ready_on(reactor, cx, dir).is_pending() {
                return Poll::Pending;
            }
            match op(&self.fd) {
                Err(rustix::io::Errno::AGAIN) => reactor.clear_ready(self.token, dir),
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Poll::Ready(Err(e.into())),
                Ok(r) => {
                    if drained(&r) {
                        reactor.clear_ready(self.token, dir);
                    }
                    return Poll::Ready(Ok(r));
                }
            }
        })
    }

    /// Tries `op` once without waiting: `WouldBlock` when the fd is not ready.
    pub(crate) fn try_io<R>(
        &self,
        dir: Direction,
        op: impl FnOnce(&OwnedFd) -> rustix::io::Result<R>,
    ) -> io::Result<R> {
        match op(&self.fd) {
            Err(rustix::io::Errno::AGAIN) => {
                self.with_reactor(|reactor| reactor.clear_ready(self.token, dir));
                Err(io::ErrorKind::WouldBlock.into())
            }
            result => result.map_err(io::Error::from),
        }
    }

    pub(crate) async fn ready(&self, dir: Direction) {
        poll_fn(|cx| self.poll_ready(cx, dir)).await
    }

    /// Queues `bufs` for sending (io_uring streams).
    pub(super) fn poll_send(
        &self,
        cx: Option<&Context<'_>>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.with_uring(|r| r.poll_send(self.token, cx, bufs))
    }

    /// Ready once every byte written has been handed to the kernel's socket (immediately on
    /// epoll, where a write is a syscall).
    pub(super) fn poll_flush(&self, cx: &Context<'_>) -> Poll<io::Result<()>> {
        if !self.uring {
            return Poll::Ready(Ok(()));
        }
        self.with_uring(|r| r.poll_flush(self.token, cx))
    }

    pub(super) fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        if self.uring {
            return self.with_uring(|r| r.shutdown(self.token, how));
        }
        reactor::shutdown(self.fd.as_fd(), how)
    }
}

impl AsFd for Source {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl Drop for Source {
    fn drop(&mut self) {
        // SAFETY: `self.fd` is taken once, here, and not used after.
        let fd = unsafe { ManuallyDrop::take(&mut self.fd) };
        // Only on the worker that registered it: elsewhere the token is another socket's. (If
        // that worker is gone, so is its reactor, and closing the fd is all there is: the
        // closure and the fd in it are dropped.)
        try_with_core(move |core| {
            if core.shared.uid == self.worker {
                core.reactor.deregister(self.token, fd);
            }
        });
    }
}

/// When a stream's [`Source::poll_io`] clears readiness: after a short transfer of a `len`-byte
/// read or write. On a stream socket that means the receive queue is empty (or the send buffer
/// full), so clearing skips the `EAGAIN` syscall the next call would make; the edge-triggered
/// registration reports new data (or room).
pub(super) fn short_of(len: usize) -> impl Fn(&usize) -> bool {
    move |&n| n > 0 && n < len
}
