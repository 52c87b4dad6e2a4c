//! How an HTTP/1 connection ends: a FIN after its last bytes, a lingering close when the
//! client may still be sending, or a reset when a response ended by the close was cut short;
//! and how it notices a client that left while a handler was still working.

use std::task::Poll;

use super::{ConnIo, MIN_READ};
#[cfg(doc)]
use crate::transport::Transport;

/// How the connection ends once it closes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Ending {
    /// The FIN after the last bytes (over TLS, after `close_notify`).
    Fin,
    /// The client may still be sending: the rest of a request the server answered without
    /// reading it (an error, a body left unread). The write side shuts after the answer, and
    /// what arrives is read and discarded for a while ([`ConnIo::linger`]).
    Linger,
    /// A response delimited by the close was cut short: what is buffered is still written, but
    /// the close is a reset, with no FIN or TLS `close_notify` before it (see
    /// [`Transport::reset_on_close`]). The reset drops what the kernel has not sent yet: a
    /// client may get less of the body, never a body that looks whole.
    Reset,
}

impl ConnIo {
    /// The client may still be sending when the connection closes: the close lingers, unless
    /// it is a reset.
    pub(super) fn linger_on_close(&self) {
        if self.ending.get() == Ending::Fin {
            self.ending.set(Ending::Linger);
        }
    }

    /// Whether the close lingers ([`ConnIo::close`]).
    pub(super) fn lingers(&self) -> bool {
        self.ending.get() == Ending::Linger
    }

    /// Ends the connection after its last write: shuts the write side, over TLS after
    /// `close_notify` (see [`Transport::poll_shutdown`]), bounded by the write timeout; then
    /// lingers if `linger`. Nothing when writing failed, or when the close is a reset.
    pub(super) async fn close(&self, linger: bool) {
        if !self.writable.get() || self.ending.get() == Ending::Reset {
            return;
        }
        let deadline = volt_rt::time::now() + self.worker.config.write_timeout;
        let shut = self.until(deadline, |io, cx| io.stream.poll_shutdown(cx));
        if matches!(shut.await, Some(Ok(()))) && linger {
            self.linger().await;
        }
    }

    /// Reads and discards what the client still sends after the write side was shut, until
    /// the client closes (or the socket fails), `max_linger_bytes` came, or `linger_timeout`
    /// passed (RFC 9112 §9.6). Closing with bytes unread would send a reset: a client still
    /// uploading would fail its write, and might lose the answer it has not read yet.
    ///
    /// It reads into the connection's read buffer, emptied each time. While nothing arrives
    /// the connection counts as idle, so a graceful shutdown closes it as it closes idle ones,
    /// and a linger during a shutdown ends as soon as nothing more has arrived.
    async fn linger(&self) {
        let config = &self.worker.config;
        let deadline = volt_rt::time::now() + config.linger_timeout;
        let mut left = config.max_linger_bytes;
        self.reserve_read(0);
        let discard = self.until(deadline, move |io, cx| {
            io.idle.set(false);
            let mut buf = io.read_buf.borrow_mut();
            loop {
                buf.clear();
                buf.reserve(MIN_READ);
                match io.stream.poll_read_raw(cx, &mut buf) {
                    Poll::Ready(Ok(n)) if n > 0 && (n as u64) < left => left -= n as u64,
                    // The client closed, the socket failed, or the bound is reached.
                    Poll::Ready(_) => return Poll::Ready(()),
                    Poll::Pending if io.worker.is_shutting_down() => return Poll::Ready(()),
                    Poll::Pending => {
                        io.idle.set(true);
                        return Poll::Pending;
                    }
                }
            }
        });
        discard.await;
        self.read_buf.borrow_mut().clear();
    }

    /// Resolves once the client is gone (the end of its stream, a reset, a broken TLS
    /// session) while a handler that reads no request body works on, so the connection drops
    /// the handler's future instead of finishing it for nobody: a CGI script is killed, a
    /// long poll stops waiting, a proxied request is abandoned. What arrives meanwhile
    /// (pipelined requests) is kept in the read buffer for later; once it holds more than a
    /// head may, the watch stops reading (the client waits, as it would have before).
    ///
    /// A client that shuts only its sending side after a request (`nc -N`) looks the same as
    /// one that left: not watched with [`Config::half_close`](crate::Config::half_close).
    pub(super) async fn client_gone(&self) {
        loop {
            if self.read_buf.borrow().len() > self.worker.limits.max_head_bytes {
                return std::future::pending().await;
            }
            self.reserve_read(0);
            let read = std::future::poll_fn(|cx| {
                self.stream
                    .poll_read_bytes(cx, &mut self.read_buf.borrow_mut())
            });
            if !matches!(read.await, Ok(n) if n > 0) {
                return;
            }
        }
    }
}
