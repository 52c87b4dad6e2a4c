//! The byte stream under a protocol. TCP now; a TLS stream is meant to implement the same trait
//! (wrapping a `TcpStream`), so the HTTP/1 driver runs over it unchanged.

use std::io;
use std::net::SocketAddr;

use volt_rt::net::TcpStream;

/// A connected byte stream on the current worker.
///
/// Crate-private: the futures are not `Send`, which is right for a thread-per-core runtime.
pub(crate) trait Transport: Sized {
    /// Opens a stream to `addr`.
    async fn connect(addr: SocketAddr) -> io::Result<Self>;

    /// Reads into `buf`, waiting for data; `Ok(0)` means the peer closed.
    async fn read(&self, buf: &mut [u8]) -> io::Result<usize>;

    /// Reads into `buf` without waiting: `WouldBlock` when nothing is there.
    fn try_read(&self, buf: &mut [u8]) -> io::Result<usize>;

    /// Writes all of `bytes`.
    async fn write_all(&self, bytes: &[u8]) -> io::Result<()>;
}

impl Transport for TcpStream {
    async fn connect(addr: SocketAddr) -> io::Result<Self> {
        let stream = TcpStream::connect(addr).await?;
        // Requests are written whole; Nagle would only delay a request written after a short
        // write.
        stream.set_nodelay(true)?;
        Ok(stream)
    }

    #[inline]
    async fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        TcpStream::read(self, buf).await
    }

    #[inline]
    fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        TcpStream::try_read(self, buf)
    }

    #[inline]
    async fn write_all(&self, bytes: &[u8]) -> io::Result<()> {
        TcpStream::write_all(self, bytes).await
    }
}
