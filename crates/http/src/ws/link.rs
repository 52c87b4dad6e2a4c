//! What a WebSocket session runs on, at either end: the server's transport (a connection the
//! HTTP/1 side gave up), an HTTP/2 stream of the server's (RFC 8441), an HTTP/3 stream of the
//! server's (RFC 9220), a connection the client opened for it, or a stream of the client's
//! HTTP/2 connection; and the client's masking keys.

use std::cell::RefCell;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::BytesMut;
use tokio::io::AsyncWrite;

use crate::client::conn::Stream;
use crate::client::http2::H2Tunnel;
use crate::transport::Transport;
use crate::{h2, h3};

/// The byte stream under a session. Every borrow of the client's stream lasts one poll.
pub(crate) enum Link {
    Server(Transport),
    /// A stream of the server's HTTP/2 connection: its DATA frames both ways.
    H2(h2::StreamLink),
    /// A stream of the server's HTTP/3 connection: its DATA frames both ways.
    H3(h3::StreamLink),
    Client(RefCell<Stream>),
    /// A stream of the client's HTTP/2 connection (RFC 8441).
    ClientH2(RefCell<H2Tunnel>),
}

impl Link {
    /// Reads into the spare capacity of `buf`; `Ok(0)` at the end of the stream.
    pub(super) fn poll_read_bytes(
        &self,
        cx: &mut Context<'_>,
        buf: &mut BytesMut,
    ) -> Poll<io::Result<usize>> {
        match self {
            Link::Server(t) => t.poll_read_bytes(cx, buf),
            Link::H2(l) => l.poll_read_bytes(cx, buf),
            Link::H3(l) => l.poll_read_bytes(cx, buf),
            Link::Client(s) => {
                tokio_util::io::poll_read_buf(Pin::new(&mut *s.borrow_mut()), cx, buf)
            }
            Link::ClientH2(t) => t.borrow_mut().poll_read_bytes(cx, buf),
        }
    }

    /// Reads what is only to be discarded: past TLS on the server (not worth decrypting).
    pub(super) fn poll_read_raw(
        &self,
        cx: &mut Context<'_>,
        buf: &mut BytesMut,
    ) -> Poll<io::Result<usize>> {
        match self {
            Link::Server(t) => t.poll_read_raw(cx, buf),
            Link::H2(_) | Link::H3(_) | Link::Client(_) | Link::ClientH2(_) => {
                self.poll_read_bytes(cx, buf)
            }
        }
    }

    /// Writes some of `buf`; over TLS, [`Link::poll_flush`] after the last write.
    pub(super) fn poll_write(&self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self {
            Link::Server(t) => t.poll_write(cx, buf),
            Link::H2(l) => l.poll_write(cx, buf),
            Link::H3(l) => l.poll_write(cx, buf),
            Link::Client(s) => Pin::new(&mut *s.borrow_mut()).poll_write(cx, buf),
            Link::ClientH2(t) => t.borrow_mut().poll_write(cx, buf),
        }
    }

    pub(super) fn poll_flush(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self {
            Link::Server(t) => t.poll_flush(cx),
            Link::H2(l) => l.poll_flush(cx),
            Link::H3(l) => l.poll_flush(cx),
            Link::Client(s) => Pin::new(&mut *s.borrow_mut()).poll_flush(cx),
            // Frames go out from the connection's task; nothing waits here.
            Link::ClientH2(_) => Poll::Ready(Ok(())),
        }
    }

    /// Shuts the write side (over TLS after `close_notify`; on an HTTP/2 stream, END_STREAM;
    /// on an HTTP/3 stream, its FIN).
    pub(super) fn poll_shutdown(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self {
            Link::Server(t) => t.poll_shutdown(cx),
            Link::H2(l) => l.poll_shutdown(cx),
            Link::H3(l) => l.poll_shutdown(cx),
            Link::Client(s) => Pin::new(&mut *s.borrow_mut()).poll_shutdown(cx),
            Link::ClientH2(t) => Poll::Ready(t.borrow_mut().shutdown()),
        }
    }
}

/// The error of a read or write on a server's HTTP/2 or HTTP/3 stream that is gone: reset by
/// either side, or its connection lost. The session takes it as a TCP reset (RFC 8441 §6,
/// RFC 9220 §3).
pub(crate) fn stream_reset() -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionReset, "the stream was reset")
}

/// Random bytes from the operating system's CSPRNG (`getrandom`), as RFC 6455 asks of a
/// client's handshake key (§4.1) and masking keys (§5.3: "derived from a strong source of
/// entropy", unpredictable to the application, so that a script cannot choose the bytes a
/// proxy sees).
pub(crate) fn random<const N: usize>() -> [u8; N] {
    let mut bytes = [0; N];
    getrandom::getrandom(&mut bytes).expect("the operating system's random source");
    bytes
}

/// A client's masking keys, a fresh one per frame, drawn from the CSPRNG 64 at a time (one
/// `getrandom` call per 64 frames, not one per frame).
pub(super) struct Masks {
    pool: [u8; 256],
    next: usize,
}

impl Masks {
    pub(super) fn new() -> Masks {
        Masks {
            pool: [0; 256],
            next: 256,
        }
    }

    pub(super) fn next(&mut self) -> [u8; 4] {
        if self.next == self.pool.len() {
            self.pool = random();
            self.next = 0;
        }
        let key = self.pool[self.next..self.next + 4]
            .try_into()
            .expect("4 bytes");
        self.next += 4;
        key
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn masks_are_fresh_for_each_frame() {
        let mut masks = super::Masks::new();
        let keys: Vec<[u8; 4]> = (0..200).map(|_| masks.next()).collect();
        let distinct: std::collections::HashSet<_> = keys.iter().collect();
        // 200 keys of 32 random bits: a repeat has a chance of about 5 in a million.
        assert!(distinct.len() >= 199, "{keys:?}");
        assert_ne!(super::random::<16>(), super::random::<16>());
    }
}
