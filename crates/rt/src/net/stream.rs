//! The connected stream TCP and Unix sockets share: [`Stream<P>`], where the protocol `P`
//! ([`Tcp`] or [`Unix`]) only adds its own constructors and addresses.

use std::future::{poll_fn, Future};
use std::io::{self, IoSlice};
use std::marker::PhantomData;
use std::net::Shutdown;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
#[cfg(any(feature = "tokio-io", feature = "futures-io"))]
use std::pin::Pin;
use std::task::{Context, Poll};

use rustix::io::Errno;
use rustix::net::addr::SocketAddrArg;
use rustix::net::{AddressFamily, RecvFlags, SendFlags, SocketFlags, SocketType};

use super::source::{short_of, Source};
use crate::reactor::{Direction, Kind};

/// `recv(2)`, not `read(2)`, as writes are [`send`], not `write(2)`: the socket calls skip the
/// file layer, ~20 and ~55 ns a call here (6% of a loopback round trip's CPU; BENCHMARKS.md).
/// Under Miri `read`: its socketpairs are not sockets to `recv` and `send` (`ENOTSOCK`).
fn recv<B: rustix::buffer::Buffer<u8>>(fd: impl AsFd, buf: B) -> rustix::io::Result<B::Output> {
    #[cfg(miri)]
    return rustix::io::read(fd, buf);
    #[cfg(not(miri))]
    rustix::net::recv(fd, buf, RecvFlags::empty()).map(|(out, _)| out)
}

/// `send(2)` with `MSG_NOSIGNAL` (a closed peer is an `EPIPE`, never a `SIGPIPE`); see [`recv`].
fn send(fd: impl AsFd, buf: &[u8]) -> rustix::io::Result<usize> {
    #[cfg(miri)]
    return rustix::io::write(fd, buf);
    #[cfg(not(miri))]
    rustix::net::send(fd, buf, SendFlags::NOSIGNAL)
}

/// A connected stream socket registered with the current worker: a
/// [`TcpStream`](super::TcpStream) (`Stream<Tcp>`) or a [`UnixStream`](super::UnixStream)
/// (`Stream<Unix>`).
///
/// I/O methods take `&self`, so one task may read while another writes.
pub struct Stream<P> {
    source: Source,
    _protocol: PhantomData<P>,
}

/// The protocol of a [`TcpStream`](super::TcpStream).
#[derive(Debug)]
pub enum Tcp {}

/// The protocol of a [`UnixStream`](super::UnixStream).
#[derive(Debug)]
pub enum Unix {}

impl<P> Stream<P> {
    /// Registers a connected socket; `shared` as in [`Source::new`].
    pub(super) fn new(fd: OwnedFd, shared: bool) -> io::Result<Stream<P>> {
        Ok(Stream::from_source(Source::new(fd, Kind::Stream, shared)?))
    }

    fn from_source(source: Source) -> Stream<P> {
        Stream {
            source,
            _protocol: PhantomData,
        }
    }

    /// Connects `fd`, a fresh socket from [`socket`], to `addr` and waits for the handshake.
    pub(super) async fn connect_fd(fd: OwnedFd, addr: &impl SocketAddrArg) -> io::Result<Self> {
        match rustix::net::connect(&fd, addr) {
            Ok(()) => Stream::new(fd, false),
            // Only `EINPROGRESS` means "wait". A Unix socket answers `EAGAIN` when the backlog
            // is full and leaves the socket unconnected: waiting for it to become writable
            // would hand out a dead stream.
            Err(Errno::INPROGRESS) => Ok(Stream::from_source(Source::connecting(fd).await?)),
            Err(e) => Err(e.into()),
        }
    }

    // `read`, `write` and `write_all` return their `poll_fn` futures instead of being `async fn`s:
    // an async fn's state machine of its own, nested in the caller's, cost 50 Ir an echo.

    /// Reads into `buf`; `Ok(0)` means the peer closed its side.
    pub fn read<'a>(&'a self, buf: &'a mut [u8]) -> impl Future<Output = io::Result<usize>> + 'a {
        poll_fn(move |cx| self.poll_read(cx, buf))
    }

    /// Reads into the spare capacity of `buf`, appending; returns the bytes read.
    /// Reserves 4 KiB first if `buf` is full.
    pub async fn read_buf(&self, buf: &mut Vec<u8>) -> io::Result<usize> {
        poll_fn(|cx| self.poll_read_buf(cx, buf)).await
    }

    /// Reads into the spare capacity of a `BytesMut`, appending; returns the bytes read.
    /// Reserves 4 KiB first if `buf` is full.
    #[cfg(feature = "bytes")]
    pub async fn read_bytes(&self, buf: &mut bytes::BytesMut) -> io::Result<usize> {
        poll_fn(|cx| self.poll_read_bytes(cx, buf)).await
    }

    /// Writes some of `buf`, returning how much.
    pub fn write<'a>(&'a self, buf: &'a [u8]) -> impl Future<Output = io::Result<usize>> + 'a {
        poll_fn(move |cx| self.poll_write(cx, buf))
    }

    /// Writes all of `buf`.
    pub fn write_all<'a>(&'a self, mut buf: &'a [u8]) -> impl Future<Output = io::Result<()>> + 'a {
        poll_fn(move |cx| {
            while !buf.is_empty() {
                match std::task::ready!(self.poll_write(cx, buf)) {
                    Ok(0) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                    Ok(n) => buf = &buf[n..],
                    Err(e) => return Poll::Ready(Err(e)),
                }
            }
            Poll::Ready(Ok(()))
        })
    }

    /// Writes from several buffers in one syscall, returning how much was written.
    pub async fn write_vectored(&self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        poll_fn(|cx| self.poll_write_vectored(cx, bufs)).await
    }

    /// Polls a read into `buf`.
    pub fn poll_read(&self, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        if !self.source.uring {
            let len = buf.len();
            let read = |fd: &_| recv(fd, &mut *buf);
            return self
                .source
                .poll_io(cx, Direction::Read, read, short_of(len));
        }
        if buf.is_empty() {
            return Poll::Ready(Ok(0)); // as `read(2)` with no room
        }
        self.source.poll_recv(Some(cx), &mut copy_into(buf))
    }

    /// Polls a read into the spare capacity of `buf` (growing it by 4 KiB when it has none).
    pub fn poll_read_buf(
        &self,
        cx: &mut Context<'_>,
        buf: &mut Vec<u8>,
    ) -> Poll<io::Result<usize>> {
        if buf.capacity() == buf.len() {
            buf.reserve(4096);
        }
        if self.source.uring {
            return self.source.poll_recv(Some(cx), &mut |bytes| {
                let n = bytes.len().min(buf.capacity() - buf.len());
                buf.extend_from_slice(&bytes[..n]);
                n
            });
        }
        let spare = buf.capacity() - buf.len();
        let read = |fd: &_| recv(fd, rustix::buffer::spare_capacity(&mut *buf));
        self.source
            .poll_io(cx, Direction::Read, read, short_of(spare))
    }

    /// Polls a read into the spare capacity of a `BytesMut` (reserving 4 KiB if it is full).
    #[cfg(feature = "bytes")]
    pub fn poll_read_bytes(
        &self,
        cx: &mut Context<'_>,
        buf: &mut bytes::BytesMut,
    ) -> Poll<io::Result<usize>> {
        if buf.capacity() == buf.len() {
            buf.reserve(4096);
        }
        if self.source.uring {
            return self.source.poll_recv(Some(cx), &mut |bytes| {
                let n = bytes.len().min(buf.capacity() - buf.len());
                buf.extend_from_slice(&bytes[..n]);
                n
            });
        }
        let spare = buf.spare_capacity_mut();
        let len = spare.len();
        let read = |fd: &_| recv(fd, &mut *spare).map(|(init, _)| init.len());
        let result = self
            .source
            .poll_io(cx, Direction::Read, read, short_of(len));
        if let Poll::Ready(Ok(n)) = result {
            // SAFETY: `read` initialized the first `n` bytes of the spare capacity (rustix
            // returns exactly the initialized prefix), and `n <= len` is within capacity.
            unsafe { buf.set_len(buf.len() + n) };
        }
        result
    }

    /// Polls until a read may make progress (see [`Self::readable`]).
    pub fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<()> {
        self.source.poll_ready(cx, Direction::Read)
    }

    /// Polls a write of `buf`.
    pub fn poll_write(&self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.poll_write_vectored(cx, &[IoSlice::new(buf)])
    }

    // Into `poll_write`: the call was a tenth of a write's user-space cost. Plain `inline` was
    // not taken.
    #[inline(always)]
    fn poll_write_vectored(
        &self,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if self.source.uring {
            return self.source.poll_send(Some(cx), bufs);
        }
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        let write = |fd: &_| match bufs {
            [buf] => send(fd, buf),
            _ => rustix::io::writev(fd, bufs),
        };
        self.source
            .poll_io(cx, Direction::Write, write, short_of(total))
    }

    /// Writes the last bytes before the stream is dropped, and shuts its write half down once
    /// all of them went. They are held back (`MSG_MORE`) for that shutdown, so they leave with
    /// the FIN in one segment: a packet less each way, and ~2 us less server CPU per
    /// connection, for a connection that answers once and closes.
    pub fn poll_write_last(&self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let n = std::task::ready!(match self.source.uring {
            // The shutdown below marks the queued bytes' send `MSG_MORE`.
            true => self.poll_write(cx, buf),
            false => {
                let send =
                    |fd: &_| rustix::net::send(fd, buf, SendFlags::NOSIGNAL | SendFlags::MORE);
                self.source
                    .poll_io(cx, Direction::Write, send, short_of(buf.len()))
            }
        })?;
        if n == buf.len() {
            self.shutdown(Shutdown::Write)?;
        }
        Poll::Ready(Ok(n))
    }

    /// Reads now if data is there: `WouldBlock` otherwise (then await [`Self::readable`]).
    pub fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        if !self.source.uring {
            return self.source.try_io(Direction::Read, |fd| recv(fd, buf));
        }
        would_block(self.source.poll_recv(None, &mut copy_into(buf)))
    }

    /// Writes now if there is room: `WouldBlock` otherwise (then await [`Self::writable`]).
    pub fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        if !self.source.uring {
            return self.source.try_io(Direction::Write, |fd| send(fd, buf));
        }
        would_block(self.source.poll_send(None, &[IoSlice::new(buf)]))
    }

    /// Waits until every byte written has been handed to the socket. A no-op on epoll; on
    /// io_uring writes are queued and sent at the end of the loop turn, and a send error
    /// surfaces here or in the next write.
    pub async fn flush(&self) -> io::Result<()> {
        poll_fn(|cx| self.source.poll_flush(cx)).await
    }

    /// Waits until a read may make progress (data, end of stream, or an error).
    pub async fn readable(&self) {
        self.source.ready(Direction::Read).await
    }

    /// Waits until a write may make progress.
    pub async fn writable(&self) {
        self.source.ready(Direction::Write).await
    }

    /// Shuts down the read, write or both halves.
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.source.shutdown(how)
    }

    /// Flushes, then shuts down the write half.
    #[cfg(any(feature = "tokio-io", feature = "futures-io"))]
    fn poll_shutdown_write(&self, cx: &Context<'_>) -> Poll<io::Result<()>> {
        std::task::ready!(self.source.poll_flush(cx))?;
        Poll::Ready(self.shutdown(Shutdown::Write))
    }
}

/// The flags of every socket volt-rt makes or accepts: non-blocking, close-on-exec.
pub(super) const SOCKET_FLAGS: SocketFlags = SocketFlags::NONBLOCK.union(SocketFlags::CLOEXEC);

/// A new non-blocking, close-on-exec stream socket of `family`.
pub(super) fn socket(family: AddressFamily) -> io::Result<OwnedFd> {
    let kind = SocketType::STREAM;
    Ok(rustix::net::socket_with(family, kind, SOCKET_FLAGS, None)?)
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

/// A `try_` call's answer: `WouldBlock` where a poll would wait.
fn would_block(poll: Poll<io::Result<usize>>) -> io::Result<usize> {
    match poll {
        Poll::Ready(result) => result,
        Poll::Pending => Err(io::ErrorKind::WouldBlock.into()),
    }
}

impl<P> AsFd for Stream<P> {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.source.as_fd()
    }
}

#[cfg(feature = "tokio-io")]
impl<P> tokio::io::AsyncRead for Stream<P> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        // `initialize_unfilled` zeroes only the part never initialized before, once per
        // buffer, which keeps this adapter free of unsafe code.
        let n = std::task::ready!(Stream::poll_read(&self, cx, buf.initialize_unfilled()))?;
        buf.advance(n);
        Poll::Ready(Ok(()))
    }
}

/// The methods `tokio::io::AsyncWrite` and `futures_io::AsyncWrite` share, forwarded to the
/// stream's own; `$close` is the one that flushes and shuts down the write half.
#[cfg(any(feature = "tokio-io", feature = "futures-io"))]
macro_rules! forward_async_write {
    ($close:ident) => {
        fn poll_write(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            Stream::poll_write(&self, cx, buf)
        }

        fn poll_write_vectored(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            bufs: &[IoSlice<'_>],
        ) -> Poll<io::Result<usize>> {
            Stream::poll_write_vectored(&self, cx, bufs)
        }

        fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            self.source.poll_flush(cx)
        }

        fn $close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            self.poll_shutdown_write(cx)
        }
    };
}

#[cfg(feature = "tokio-io")]
impl<P> tokio::io::AsyncWrite for Stream<P> {
    forward_async_write!(poll_shutdown);

    fn is_write_vectored(&self) -> bool {
        true
    }
}

#[cfg(feature = "futures-io")]
impl<P> futures_io::AsyncRead for Stream<P> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        Stream::poll_read(&self, cx, buf)
    }
}

#[cfg(feature = "futures-io")]
impl<P> futures_io::AsyncWrite for Stream<P> {
    forward_async_write!(poll_close);
}
