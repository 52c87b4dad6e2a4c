//! The byte stream under an HTTP/1 connection: plain TCP, or TLS over TCP.
//!
//! The HTTP/1 loop (`conn`) reads and writes through the four methods here and does not know
//! which one it has. Plain TCP calls volt-rt's socket directly (no change on the hot path); TLS
//! goes through `tokio-rustls` on volt-rt's `tokio::io` traits.

use std::cell::RefCell;
use std::io;
use std::net::Shutdown;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::BytesMut;
use tokio::io::AsyncWrite;
use volt_rt::net::TcpStream;

/// A TLS session over a volt-rt socket.
pub(crate) type TlsStream = tokio_rustls::server::TlsStream<TcpStream>;

/// An accepted connection's byte stream.
pub(crate) enum Transport {
    Tcp(TcpStream),
    /// Boxed: the session state is a few KiB and plain connections should not pay for it. In a
    /// `RefCell` because `tokio::io`'s traits take `&mut` while the connection shares `&self`;
    /// every borrow lasts one poll.
    Tls(RefCell<Box<TlsStream>>),
    /// The socket went to the HTTP/2 driver ([`Transport::hand_over_tcp`]); what is left of the
    /// HTTP/1 connection only returns its buffers to the pool.
    HandedOver,
}

impl Transport {
    pub(crate) fn tls(stream: TlsStream) -> Transport {
        Transport::Tls(RefCell::new(Box::new(stream)))
    }

    /// `TCP_NODELAY` on the socket underneath.
    pub(crate) fn set_nodelay(&self, on: bool) -> io::Result<()> {
        match self {
            Transport::Tcp(s) => s.set_nodelay(on),
            Transport::Tls(s) => s.borrow().get_ref().0.set_nodelay(on),
            Transport::HandedOver => Ok(()),
        }
    }

    /// Makes the coming close a reset (`SO_LINGER` 0), for a response whose end the client
    /// could not otherwise tell from a truncation.
    pub(crate) fn reset_on_close(&self) {
        let reset = Some(std::time::Duration::ZERO);
        let _ = match self {
            Transport::Tcp(s) => s.set_linger(reset),
            Transport::Tls(s) => s.borrow().get_ref().0.set_linger(reset),
            Transport::HandedOver => Ok(()),
        };
    }

    /// Shuts the read side: every read from now on sees the end of the stream.
    pub(crate) fn shut_reads(&self) {
        let _ = match self {
            Transport::Tcp(s) => s.shutdown(Shutdown::Read),
            Transport::Tls(s) => s.borrow().get_ref().0.shutdown(Shutdown::Read),
            Transport::HandedOver => Ok(()),
        };
    }

    /// Ready when a read may make progress. Always ready for TLS: the session may hold
    /// decrypted bytes the socket no longer signals, and the read that follows waits with the
    /// same deadline anyway.
    #[inline]
    pub(crate) fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<()> {
        match self {
            Transport::Tcp(s) => s.poll_read_ready(cx),
            Transport::Tls(_) | Transport::HandedOver => Poll::Ready(()),
        }
    }

    /// Reads into the spare capacity of `buf`; `Ok(0)` at the end of the stream.
    #[inline]
    pub(crate) fn poll_read_bytes(
        &self,
        cx: &mut Context<'_>,
        buf: &mut BytesMut,
    ) -> Poll<io::Result<usize>> {
        match self {
            Transport::Tcp(s) => s.poll_read_bytes(cx, buf),
            Transport::Tls(s) => {
                let mut s = s.borrow_mut();
                tokio_util::io::poll_read_buf(Pin::new(&mut **s), cx, buf)
            }
            Transport::HandedOver => Poll::Ready(Ok(0)),
        }
    }

    /// Writes some of `buf`. Over TLS the bytes may wait in the session: call
    /// [`Transport::poll_flush`] after the last write.
    #[inline]
    pub(crate) fn poll_write(&self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self {
            Transport::Tcp(s) => s.poll_write(cx, buf),
            Transport::Tls(s) => Pin::new(&mut **s.borrow_mut()).poll_write(cx, buf),
            Transport::HandedOver => Poll::Ready(Err(io::ErrorKind::NotConnected.into())),
        }
    }

    /// [`Transport::poll_write`] for the last bytes before the connection closes (see
    /// `Stream::poll_write_last`: on plain TCP the FIN then goes in the same segment).
    pub(crate) fn poll_write_last(
        &self,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self {
            Transport::Tcp(s) => s.poll_write_last(cx, buf),
            _ => self.poll_write(cx, buf),
        }
    }

    /// Sends what the TLS session still holds (nothing to do for plain TCP). The TLS flush
    /// is out of line, so that plain TCP's answer is one inlined test: with it inline the whole
    /// function went out of line (a call on every response, ~19 Ir/request, once the crate
    /// grew).
    #[inline(always)]
    pub(crate) fn poll_flush(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self {
            Transport::Tcp(_) | Transport::HandedOver => Poll::Ready(Ok(())),
            Transport::Tls(s) => flush_tls(s, cx),
        }
    }

    /// Shuts the write side, over TLS after ending the session with its `close_notify` alert,
    /// so the client can tell the end of the connection from a truncation (RFC 8446 §6.1). On
    /// io_uring the shutdown waits for the bytes still queued.
    pub(crate) fn poll_shutdown(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self {
            Transport::Tcp(s) => Poll::Ready(s.shutdown(Shutdown::Write)),
            Transport::Tls(s) => Pin::new(&mut **s.borrow_mut()).poll_shutdown(cx),
            Transport::HandedOver => Poll::Ready(Ok(())),
        }
    }

    /// Reads into the spare capacity of `buf` from the socket itself, past TLS: for what a
    /// client sends after the close, which is only discarded (and not worth decrypting).
    pub(crate) fn poll_read_raw(
        &self,
        cx: &mut Context<'_>,
        buf: &mut BytesMut,
    ) -> Poll<io::Result<usize>> {
        match self {
            Transport::Tcp(s) => s.poll_read_bytes(cx, buf),
            Transport::Tls(s) => s.borrow().get_ref().0.poll_read_bytes(cx, buf),
            Transport::HandedOver => Poll::Ready(Ok(0)),
        }
    }

    /// The whole transport, for handing the connection over to WebSocket; `self` is left
    /// [`Transport::HandedOver`].
    pub(crate) fn hand_over(&mut self) -> Transport {
        std::mem::replace(self, Transport::HandedOver)
    }

    /// The plain socket, for handing a cleartext connection over to HTTP/2; `self` is left
    /// [`Transport::HandedOver`]. `None` (and `self` unchanged) over TLS.
    pub(crate) fn hand_over_tcp(&mut self) -> Option<TcpStream> {
        match std::mem::replace(self, Transport::HandedOver) {
            Transport::Tcp(s) => Some(s),
            other => {
                *self = other;
                None
            }
        }
    }
}

/// [`Transport::poll_flush`] over TLS.
#[inline(never)]
fn flush_tls(s: &RefCell<Box<TlsStream>>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
    Pin::new(&mut **s.borrow_mut()).poll_flush(cx)
}
