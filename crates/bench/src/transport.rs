//! The byte stream under a protocol: TCP here, TLS in `tls.rs`. The HTTP/1 and HTTP/2 drivers
//! run over either unchanged.

use std::future::Future;
use std::io;
use std::task::{Context, Poll};

use volt_rt::net::TcpStream;

use crate::worker::Plan;

/// A connected byte stream on the current worker.
///
/// Crate-private: the futures are not `Send`, which is right for a thread-per-core runtime.
///
/// `read` and `write_all` return the stream's own futures rather than being `async fn`s: an
/// `async fn` wrapper is one more state machine to build and poll on every read (twice: once
/// to wait, once to copy), about 60 instructions a response.
pub(crate) trait Transport: Sized {
    /// Opens a stream to the run's server.
    async fn connect(plan: &Plan) -> io::Result<Self>;

    /// Reads into `buf`, waiting for data; `Ok(0)` means the peer closed.
    fn read<'a>(&'a self, buf: &'a mut [u8]) -> impl Future<Output = io::Result<usize>> + 'a;

    /// Reads into `buf` without waiting: `WouldBlock` when nothing is there.
    fn try_read(&self, buf: &mut [u8]) -> io::Result<usize>;

    /// Writes all of `bytes`.
    fn write_all<'a>(&'a self, bytes: &'a [u8]) -> impl Future<Output = io::Result<()>> + 'a;

    /// Polls a read into `buf`, for a driver that waits on reads and writes at once.
    fn poll_read(&self, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>>;

    /// Polls a write of some of `bytes`.
    fn poll_write(&self, cx: &mut Context<'_>, bytes: &[u8]) -> Poll<io::Result<usize>>;
}

impl Transport for TcpStream {
    async fn connect(plan: &Plan) -> io::Result<Self> {
        let stream = TcpStream::connect(plan.addr).await?;
        // Requests are written whole; Nagle would only delay a request written after a short
        // write.
        stream.set_nodelay(true)?;
        Ok(stream)
    }

    #[inline]
    fn read<'a>(&'a self, buf: &'a mut [u8]) -> impl Future<Output = io::Result<usize>> + 'a {
        TcpStream::read(self, buf)
    }

    #[inline]
    fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        TcpStream::try_read(self, buf)
    }

    #[inline]
    fn write_all<'a>(&'a self, bytes: &'a [u8]) -> impl Future<Output = io::Result<()>> + 'a {
        TcpStream::write_all(self, bytes)
    }

    #[inline]
    fn poll_read(&self, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        TcpStream::poll_read(self, cx, buf)
    }

    #[inline]
    fn poll_write(&self, cx: &mut Context<'_>, bytes: &[u8]) -> Poll<io::Result<usize>> {
        TcpStream::poll_write(self, cx, bytes)
    }
}
