//! A non-blocking descriptor registered with the current worker's reactor, and the stream I/O
//! every socket type shares.

use std::future::poll_fn;
use std::io::{self, IoSlice};
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::net::Shutdown;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::task::{Context, Poll};

use crate::executor::{try_with_core, with_core};
use crate::reactor::{uring, Direction, Kind, Reactor, READABLE, WRITABLE};

/// An fd plus its reactor token. `!Send`: the registration belongs to this worker.
///
/// On epoll the stream methods make the syscalls themselves; on io_uring a stream's reads and
/// writes go through the reactor's buffers (`uring`), and only listeners use readiness.
pub(crate) struct Source {
    /// Handed to the reactor on drop (io_uring closes it once nothing is in flight on it).
    fd: ManuallyDrop<OwnedFd>,
    token: usize,
    /// A stream on an io_uring reactor.
    uring: bool,
    /// The uid of the worker whose reactor issued `token`. `!Send` keeps a source on its
    /// thread, but not inside the `block_on` that created it: in a later one on the same thread
    /// the token would name another socket's registration.
    worker: usize,
    _local: PhantomData<*const ()>,
}

impl Source {
    /// Registers a connected stream (already non-blocking), assuming it is ready both ways
    /// until told otherwise.
    /// `shared`: the fd came from the user (`from_std`), who may hold a duplicate of it.
    pub(crate) fn new(fd: OwnedFd, shared: bool) -> io::Result<Source> {
        Self::register(fd, READABLE | WRITABLE, Kind::Stream, shared)
    }

    /// Registers a stream whose non-blocking `connect` is in progress, and waits for the
    /// handshake to end: `Err` if it failed.
    pub(crate) async fn connecting(fd: OwnedFd) -> io::Result<Source> {
        // Not writable until the handshake completes; readable is fine to assume.
        let source = Self::register(fd, READABLE, Kind::Stream, false)?;
        source.ready(Direction::Write).await;
        match rustix::net::sockopt::socket_error(&source)? {
            Ok(()) => Ok(source),
            Err(e) => Err(e.into()),
        }
    }

    /// Registers a listener: readiness only, on either driver.
    pub(crate) fn listener(fd: OwnedFd) -> io::Result<Source> {
        Self::register(fd, READABLE | WRITABLE, Kind::Readiness, false)
    }

    /// Registers a TCP listener: see [`Source::poll_accept`]. `shared` as in [`Source::new`].
    pub(crate) fn tcp_listener(fd: OwnedFd, shared: bool) -> io::Result<Source> {
        Self::register(fd, READABLE | WRITABLE, Kind::Acceptor, shared)
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
    fn poll_recv(
        &self,
        cx: Option<&Context<'_>>,
        sink: &mut dyn FnMut(&[u8]) -> usize,
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
        self.with_reactor(|reactor| reactor.poll_ready(self.token, dir, cx))
    }

    pub(crate) fn clear_ready(&self, dir: Direction) {
        self.with_reactor(|reactor| reactor.clear_ready(self.token, dir));
    }

    /// Runs `op` once the fd is ready in `dir`, retrying after each `EAGAIN` edge.
    pub(crate) fn poll_io<R>(
        &self,
        cx: &Context<'_>,
        dir: Direction,
        mut op: impl FnMut(&OwnedFd) -> rustix::io::Result<R>,
    ) -> Poll<io::Result<R>> {
        loop {
            if self.poll_ready(cx, dir).is_pending() {
                return Poll::Pending;
            }
            match op(&self.fd) {
                Err(rustix::io::Errno::AGAIN) => self.clear_ready(dir),
                Err(rustix::io::Errno::INTR) => {}
                result => return Poll::Ready(result.map_err(io::Error::from)),
            }
        }
    }

    /// [`Source::poll_io`] for a stream read or write of up to `len` bytes. A short transfer on
    /// a stream socket means its receive queue is empty (or its send buffer full): readiness is
    /// cleared to skip the `EAGAIN` syscall the next call would make. The edge-triggered
    /// registration reports new data (or room).
    fn poll_stream_io(
        &self,
        cx: &Context<'_>,
        dir: Direction,
        len: usize,
        op: impl FnMut(&OwnedFd) -> rustix::io::Result<usize>,
    ) -> Poll<io::Result<usize>> {
        let result = self.poll_io(cx, dir, op);
        if let Poll::Ready(Ok(n)) = result {
            if n > 0 && n < len {
                self.clear_ready(dir);
            }
        }
        result
    }

    /// Tries `op` once without waiting: `WouldBlock` when the fd is not ready.
    pub(crate) fn try_io<R>(
        &self,
        dir: Direction,
        op: impl FnOnce(&OwnedFd) -> rustix::io::Result<R>,
    ) -> io::Result<R> {
        match op(&self.fd) {
            Err(rustix::io::Errno::AGAIN) => {
                self.clear_ready(dir);
                Err(io::ErrorKind::WouldBlock.into())
            }
            result => result.map_err(io::Error::from),
        }
    }

    pub(crate) async fn ready(&self, dir: Direction) {
        poll_fn(|cx| self.poll_ready(cx, dir)).await
    }

    // Stream I/O shared by TCP and Unix streams.

    pub(crate) fn poll_read(&self, cx: &Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        if self.uring && buf.is_empty() {
            return Poll::Ready(Ok(0)); // as `read(2)` with no room
        }
        if self.uring {
            return self.poll_recv(Some(cx), &mut copy_into(buf));
        }
        let len = buf.len();
        self.poll_stream_io(cx, Direction::Read, len, |fd| {
            rustix::io::read(fd, &mut *buf)
        })
    }

    /// Reads into the spare capacity of `buf` (growing it by 4 KiB when it has none), appending.
    pub(crate) fn poll_read_buf(
        &self,
        cx: &Context<'_>,
        buf: &mut Vec<u8>,
    ) -> Poll<io::Result<usize>> {
        if buf.capacity() == buf.len() {
            buf.reserve(4096);
        }
        let spare = buf.capacity() - buf.len();
        if self.uring {
            return self.poll_recv(Some(cx), &mut |bytes| {
                let n = bytes.len().min(buf.capacity() - buf.len());
                buf.extend_from_slice(&bytes[..n]);
                n
            });
        }
        self.poll_stream_io(cx, Direction::Read, spare, |fd| {
            rustix::io::read(fd, rustix::buffer::spare_capacity(&mut *buf))
        })
    }

    /// Reads into the spare capacity of a `BytesMut`, appending (reserving 4 KiB if it is full).
    #[cfg(feature = "bytes")]
    pub(crate) fn poll_read_bytes(
        &self,
        cx: &Context<'_>,
        buf: &mut bytes::BytesMut,
    ) -> Poll<io::Result<usize>> {
        if buf.capacity() == buf.len() {
            buf.reserve(4096);
        }
        if self.uring {
            return self.poll_recv(Some(cx), &mut |bytes| {
                let n = bytes.len().min(buf.capacity() - buf.len());
                buf.extend_from_slice(&bytes[..n]);
                n
            });
        }
        let spare = buf.spare_capacity_mut();
        let len = spare.len();
        let result = self.poll_stream_io(cx, Direction::Read, len, |fd| {
            rustix::io::read(fd, &mut *spare).map(|(init, _)| init.len())
        });
        if let Poll::Ready(Ok(n)) = result {
            // SAFETY: `read` initialized the first `n` bytes of the spare capacity (rustix
            // returns exactly the initialized prefix), and `n <= len` is within capacity.
            unsafe { buf.set_len(buf.len() + n) };
        }
        result
    }

    pub(crate) fn poll_write(&self, cx: &Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        if self.uring {
            return self.with_uring(|r| r.poll_send(self.token, Some(cx), &[IoSlice::new(buf)]));
        }
        self.poll_stream_io(cx, Direction::Write, buf.len(), |fd| {
            rustix::io::write(fd, buf)
        })
    }

    pub(crate) fn poll_write_vectored(
        &self,
        cx: &Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if self.uring {
            return self.with_uring(|r| r.poll_send(self.token, Some(cx), bufs));
        }
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        self.poll_stream_io(cx, Direction::Write, total, |fd| {
            rustix::io::writev(fd, bufs)
        })
    }

    /// Reads now if data is there: `WouldBlock` otherwise.
    pub(crate) fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        if !self.uring {
            return self.try_io(Direction::Read, |fd| rustix::io::read(fd, buf));
        }
        match self.poll_recv(None, &mut copy_into(buf)) {
            Poll::Ready(result) => result,
            Poll::Pending => Err(io::ErrorKind::WouldBlock.into()),
        }
    }

    /// Writes now if there is room: `WouldBlock` otherwise.
    pub(crate) fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        if !self.uring {
            return self.try_io(Direction::Write, |fd| rustix::io::write(fd, buf));
        }
        match self.with_uring(|r| r.poll_send(self.token, None, &[IoSlice::new(buf)])) {
            Poll::Ready(result) => result,
            Poll::Pending => Err(io::ErrorKind::WouldBlock.into()),
        }
    }

    /// Ready once every byte written has been handed to the kernel's socket (immediately on
    /// epoll, where a write is a syscall).
    pub(crate) fn poll_flush(&self, cx: &Context<'_>) -> Poll<io::Result<()>> {
        if !self.uring {
            return Poll::Ready(Ok(()));
        }
        self.with_uring(|r| r.poll_flush(self.token, cx))
    }

    /// Flushes, then shuts down the write half.
    pub(crate) fn poll_shutdown_write(&self, cx: &Context<'_>) -> Poll<io::Result<()>> {
        match self.poll_flush(cx) {
            Poll::Ready(Ok(())) => Poll::Ready(self.shutdown(Shutdown::Write)),
            other => other,
        }
    }

    pub(crate) fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        if self.uring {
            return self.with_uring(|r| r.shutdown(self.token, how));
        }
        let how = match how {
            Shutdown::Read => rustix::net::Shutdown::Read,
            Shutdown::Write => rustix::net::Shutdown::Write,
            Shutdown::Both => rustix::net::Shutdown::Both,
        };
        match rustix::net::shutdown(&*self.fd, how) {
            Ok(()) | Err(rustix::io::Errno::NOTCONN) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

/// A receive sink (io_uring) that copies into `buf` from its start, as much as fits.
fn copy_into(buf: &mut [u8]) -> impl FnMut(&[u8]) -> usize + '_ {
    let mut filled = 0;
    move |bytes| {
        let n = bytes.len().min(buf.len() - filled);
        buf[filled..filled + n].copy_from_slice(&bytes[..n]);
        filled += n;
        n
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

/// Implements the public stream methods (inherent, `tokio::io` and `futures_io` traits) on a
/// stream type with a `source: Source` field. TCP and Unix streams share all of it.
macro_rules! stream_io {
    ($ty:ty) => {
        impl $ty {
            /// Reads into `buf`; `Ok(0)` means the peer closed its side.
            pub async fn read(&self, buf: &mut [u8]) -> std::io::Result<usize> {
                std::future::poll_fn(|cx| self.source.poll_read(cx, buf)).await
            }

            /// Reads into the spare capacity of `buf`, appending; returns the bytes read.
            /// Reserves 4 KiB first if `buf` is full.
            pub async fn read_buf(&self, buf: &mut Vec<u8>) -> std::io::Result<usize> {
                std::future::poll_fn(|cx| self.source.poll_read_buf(cx, buf)).await
            }

            /// Reads into the spare capacity of a `BytesMut`, appending; returns the bytes read.
            /// Reserves 4 KiB first if `buf` is full.
            #[cfg(feature = "bytes")]
            pub async fn read_bytes(&self, buf: &mut bytes::BytesMut) -> std::io::Result<usize> {
                std::future::poll_fn(|cx| self.source.poll_read_bytes(cx, buf)).await
            }

            /// Writes some of `buf`, returning how much.
            pub async fn write(&self, buf: &[u8]) -> std::io::Result<usize> {
                std::future::poll_fn(|cx| self.source.poll_write(cx, buf)).await
            }

            /// Writes all of `buf`.
            pub async fn write_all(&self, mut buf: &[u8]) -> std::io::Result<()> {
                while !buf.is_empty() {
                    let n = self.write(buf).await?;
                    if n == 0 {
                        return Err(std::io::ErrorKind::WriteZero.into());
                    }
                    buf = &buf[n..];
                }
                Ok(())
            }

            /// Writes from several buffers in one syscall, returning how much was written.
            pub async fn write_vectored(
                &self,
                bufs: &[std::io::IoSlice<'_>],
            ) -> std::io::Result<usize> {
                std::future::poll_fn(|cx| self.source.poll_write_vectored(cx, bufs)).await
            }

            /// Polls a read into `buf`.
            pub fn poll_read(
                &self,
                cx: &mut std::task::Context<'_>,
                buf: &mut [u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                self.source.poll_read(cx, buf)
            }

            /// Polls a read into the spare capacity of `buf`.
            pub fn poll_read_buf(
                &self,
                cx: &mut std::task::Context<'_>,
                buf: &mut Vec<u8>,
            ) -> std::task::Poll<std::io::Result<usize>> {
                self.source.poll_read_buf(cx, buf)
            }

            /// Polls a read into the spare capacity of a `BytesMut`.
            #[cfg(feature = "bytes")]
            pub fn poll_read_bytes(
                &self,
                cx: &mut std::task::Context<'_>,
                buf: &mut bytes::BytesMut,
            ) -> std::task::Poll<std::io::Result<usize>> {
                self.source.poll_read_bytes(cx, buf)
            }

            /// Polls until a read may make progress (see [`Self::readable`]).
            pub fn poll_read_ready(&self, cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
                self.source.poll_ready(cx, $crate::reactor::Direction::Read)
            }

            /// Polls until a write may make progress (see [`Self::writable`]).
            pub fn poll_write_ready(&self, cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
                self.source
                    .poll_ready(cx, $crate::reactor::Direction::Write)
            }

            /// Polls a write of `buf`.
            pub fn poll_write(
                &self,
                cx: &mut std::task::Context<'_>,
                buf: &[u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                self.source.poll_write(cx, buf)
            }

            /// Reads now if data is there: `WouldBlock` otherwise (then await [`Self::readable`]).
            pub fn try_read(&self, buf: &mut [u8]) -> std::io::Result<usize> {
                self.source.try_read(buf)
            }

            /// Writes now if there is room: `WouldBlock` otherwise (then await
            /// [`Self::writable`]).
            pub fn try_write(&self, buf: &[u8]) -> std::io::Result<usize> {
                self.source.try_write(buf)
            }

            /// Waits until every byte written has been handed to the socket. A no-op on epoll;
            /// on io_uring writes are queued and sent at the end of the loop turn, and a send
            /// error surfaces here or in the next write.
            pub async fn flush(&self) -> std::io::Result<()> {
                std::future::poll_fn(|cx| self.source.poll_flush(cx)).await
            }

            /// Waits until a read may make progress (data, end of stream, or an error).
            pub async fn readable(&self) {
                self.source.ready($crate::reactor::Direction::Read).await
            }

            /// Waits until a write may make progress.
            pub async fn writable(&self) {
                self.source.ready($crate::reactor::Direction::Write).await
            }

            /// Shuts down the read, write or both halves.
            pub fn shutdown(&self, how: std::net::Shutdown) -> std::io::Result<()> {
                self.source.shutdown(how)
            }
        }

        impl std::os::fd::AsFd for $ty {
            fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
                self.source.as_fd()
            }
        }

        #[cfg(feature = "tokio-io")]
        impl tokio::io::AsyncRead for $ty {
            fn poll_read(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &mut tokio::io::ReadBuf<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                // `initialize_unfilled` zeroes only the part never initialized before, once per
                // buffer, which keeps this adapter free of unsafe code.
                let unfilled = buf.initialize_unfilled();
                match self.source.poll_read(cx, unfilled) {
                    std::task::Poll::Ready(Ok(n)) => {
                        buf.advance(n);
                        std::task::Poll::Ready(Ok(()))
                    }
                    std::task::Poll::Ready(Err(e)) => std::task::Poll::Ready(Err(e)),
                    std::task::Poll::Pending => std::task::Poll::Pending,
                }
            }
        }

        #[cfg(feature = "tokio-io")]
        impl tokio::io::AsyncWrite for $ty {
            fn poll_write(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &[u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                self.source.poll_write(cx, buf)
            }

            fn poll_write_vectored(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                bufs: &[std::io::IoSlice<'_>],
            ) -> std::task::Poll<std::io::Result<usize>> {
                self.source.poll_write_vectored(cx, bufs)
            }

            fn is_write_vectored(&self) -> bool {
                true
            }

            fn poll_flush(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                self.source.poll_flush(cx)
            }

            fn poll_shutdown(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                self.source.poll_shutdown_write(cx)
            }
        }

        #[cfg(feature = "futures-io")]
        impl futures_io::AsyncRead for $ty {
            fn poll_read(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &mut [u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                self.source.poll_read(cx, buf)
            }
        }

        #[cfg(feature = "futures-io")]
        impl futures_io::AsyncWrite for $ty {
            fn poll_write(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &[u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                self.source.poll_write(cx, buf)
            }

            fn poll_write_vectored(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                bufs: &[std::io::IoSlice<'_>],
            ) -> std::task::Poll<std::io::Result<usize>> {
                self.source.poll_write_vectored(cx, bufs)
            }

            fn poll_flush(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                self.source.poll_flush(cx)
            }

            fn poll_close(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                self.source.poll_shutdown_write(cx)
            }
        }
    };
}

pub(crate) use stream_io;
