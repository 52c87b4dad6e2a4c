//! Writing a connection's write buffer (and streamed bodies) out to its socket: one write per
//! pass over the requests, Nagle's algorithm turned off lazily, the last write before a close
//! sent with the FIN, every wait bounded by the write timeout.

use std::cell::Ref;
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use super::close::Ending;
use super::encode::{write_chunk_size, Framing};
use super::{ConnIo, Next, Step, Wait};
use crate::body::Trailers;
#[cfg(doc)]
use crate::transport::Transport;

/// Responses are flushed early once the write buffer holds this much.
pub(super) const FLUSH_AT: usize = 64 * 1024;
/// Stream chunks at least this large are written directly instead of copied.
const DIRECT_WRITE: usize = 16 * 1024;
/// Where a connection stands with Nagle's algorithm.
///
/// Nagle holds back a small segment only while earlier data is unacknowledged, so a
/// connection's first write goes out at once whatever the setting. `TCP_NODELAY` is therefore
/// set just before the second write (or before a first write large enough to span several
/// segments), not on accept: a connection that answers one request and closes (`ab` without
/// `-k`, HTTP/1.0 clients) saves the `setsockopt`, as nginx does.
#[derive(Clone, Copy)]
pub(super) enum Nagle {
    /// Nothing written yet.
    Untouched,
    /// One small write made; Nagle still on.
    FirstWriteDone,
    /// `TCP_NODELAY` set (or setting it failed; it is not retried).
    Off,
}

/// A first write up to this size goes out before `TCP_NODELAY` is set (one segment on any
/// usual path MTU).
const SMALL_FIRST_WRITE: usize = 1200;

impl ConnIo {
    /// Writes the write buffer out; `last`: the connection closes after it, so the bytes go
    /// with the FIN ([`Transport::poll_write_last`]). False if the connection failed or timed
    /// out.
    pub(super) async fn flush(&self, last: bool) -> bool {
        let len = self.write_buf.borrow().len();
        if len == 0 {
            return self.writable.get();
        }
        self.before_write(len);
        self.flush_from(0, last).await
    }

    /// [`ConnIo::flush`] from byte `written` on (the bytes before went already).
    pub(super) async fn flush_from(&self, written: usize, last: bool) -> bool {
        // The buffer is borrowed only inside each poll; nothing appends to it meanwhile (the
        // connection's one task is here).
        let bytes = || Ref::map(self.write_buf.borrow(), Vec::as_slice);
        let ok = self.writable.get() && self.write_from(bytes, written, last).await;
        self.write_buf.borrow_mut().clear();
        ok
    }

    /// Writes the write buffer out for a request body about to wait for more bytes (and for
    /// its `100 Continue`). `wait`: the body is read by a handler the connection's task polls,
    /// which writes nothing else meanwhile, so this waits for the socket as [`ConnIo::flush`]
    /// does. Otherwise the body is read in a task of its own (a spawned one, or a streamed
    /// response's), alongside the connection's: that writes only what the socket takes now,
    /// and nothing while the connection's own write is under way. Two tasks writing the buffer
    /// at once sent bytes twice, and only one of them is woken when the socket drains.
    pub(super) async fn flush_for_body(&self, wait: bool) -> bool {
        if wait {
            return self.flush(false).await;
        }
        if self.writing.get() {
            // The write under way takes what was appended too, before it ends.
            return self.writable.get();
        }
        poll_fn(|cx| Poll::Ready(self.write_what_fits(cx))).await
    }

    /// Writes as much of the write buffer as the socket takes now, and drops it from the
    /// buffer; the rest goes with the connection's next write. False if writing failed.
    fn write_what_fits(&self, cx: &mut Context<'_>) -> bool {
        let len = self.write_buf.borrow().len();
        if len == 0 || !self.writable.get() {
            return self.writable.get();
        }
        self.before_write(len);
        let mut written = 0;
        let done = self.poll_write_out(cx, &self.write_buf.borrow(), &mut written, false);
        let mut w = self.write_buf.borrow_mut();
        match done {
            Poll::Ready(ok) => {
                w.clear();
                ok
            }
            Poll::Pending => {
                w.drain(..written);
                true
            }
        }
    }

    /// Ends a pass over the read buffer ([`answer_ready`](super::answer_ready)) that answered everything it could,
    /// then goes on as `next` says: writes the answers out if the socket takes them now, else
    /// leaves the rest to [`ConnIo::resume`].
    pub(super) fn write_now<'a, F>(&self, next: Next, cx: &mut Context<'_>) -> Step<'a, F> {
        let len = self.write_buf.borrow().len();
        let mut ok = self.writable.get();
        if len > 0 && ok {
            self.before_write(len);
            let (mut written, last) = (0, matches!(next, Next::Close));
            match self.poll_write_out(cx, &self.write_buf.borrow(), &mut written, last) {
                Poll::Ready(done) => ok = done,
                Poll::Pending => return Step::Wait(Wait::FlushRest(written, next)),
            }
        }
        self.write_buf.borrow_mut().clear();
        Step::Done(if ok { next } else { Next::Close })
    }

    /// Writes `bytes` out. False if the connection failed or timed out.
    fn write_all<'a>(&'a self, bytes: &'a [u8]) -> impl Future<Output = bool> + 'a {
        self.before_write(bytes.len());
        self.write_from(move || bytes, 0, false)
    }

    /// Before writing `len` bytes: turns Nagle's algorithm off unless this is the first write
    /// and a small one (see [`Nagle`]). Only the check is inlined: past a connection's second
    /// write there is nothing else to do.
    #[inline]
    pub(super) fn before_write(&self, len: usize) {
        if !matches!(self.nagle.get(), Nagle::Off) {
            self.set_nagle(len);
        }
    }

    /// [`ConnIo::before_write`] on the first writes of a connection.
    #[inline(never)]
    fn set_nagle(&self, len: usize) {
        match self.nagle.get() {
            Nagle::Off => {}
            Nagle::Untouched if len <= SMALL_FIRST_WRITE => {
                self.nagle.set(Nagle::FirstWriteDone);
            }
            Nagle::Untouched | Nagle::FirstWriteDone => {
                let _ = self.stream.set_nodelay(true);
                self.nagle.set(Nagle::Off);
            }
        }
    }

    /// Writes `bytes[*written..]` until all of it went (then sends what TLS holds) or the
    /// socket takes no more; `last` as in [`ConnIo::flush`]. `Ready(false)`, and the connection
    /// is finished, if writing failed.
    fn poll_write_out(
        &self,
        cx: &mut Context<'_>,
        bytes: &[u8],
        written: &mut usize,
        last: bool,
    ) -> Poll<bool> {
        let result = loop {
            if *written == bytes.len() {
                break ready!(self.stream.poll_flush(cx)).is_ok();
            }
            let rest = &bytes[*written..];
            let sent = match last && self.ending.get() != Ending::Reset {
                true => self.stream.poll_write_last(cx, rest),
                false => self.stream.poll_write(cx, rest),
            };
            match sent {
                Poll::Ready(Ok(0)) | Poll::Ready(Err(_)) => break false,
                Poll::Ready(Ok(n)) => *written += n,
                Poll::Pending => return Poll::Pending,
            }
        };
        if !result {
            self.write_failed();
        }
        Poll::Ready(result)
    }

    /// Writes out the bytes `bytes` gives (the same each time it is called) from byte
    /// `written` on; `last` as in [`ConnIo::flush`]. False if the connection failed or timed
    /// out. Not an async fn but a future made of [`ConnIo::until`]'s: one state machine less to
    /// set up.
    fn write_from<'a, B: std::ops::Deref<Target = [u8]>>(
        &'a self,
        bytes: impl Fn() -> B + Unpin + 'a,
        mut written: usize,
        last: bool,
    ) -> impl Future<Output = bool> + 'a {
        let deadline = volt_rt::time::now() + self.worker.config.write_timeout;
        self.writing.set(true);
        let mut write = self.until(deadline, move |io, cx| {
            io.poll_write_out(cx, &bytes(), &mut written, last)
        });
        poll_fn(move |cx| {
            let ok = ready!(Pin::new(&mut write).poll(cx)).unwrap_or(false);
            self.writing.set(false);
            if !ok {
                self.write_failed();
            }
            Poll::Ready(ok)
        })
    }

    /// A write failed or timed out: the connection is finished. The socket closes once the last
    /// holder of the connection lets go, and a request body read in a task the handler spawned
    /// is one: its reads end now (they see the end of the stream), or it held the socket open
    /// until its own timeout.
    fn write_failed(&self) {
        self.writable.set(false);
        self.stream.shut_reads();
    }

    /// Streams a response body, ending a chunked one with `trailers`; false if the connection
    /// must close (an error, a length mismatch, or a client that went away).
    pub(super) async fn write_stream(
        &self,
        mut stream: crate::body::BodyStream,
        framing: Framing,
        trailers: Option<Trailers>,
    ) -> bool {
        let mut sent: u64 = 0;
        loop {
            // Flush what is buffered while the body's producer is not ready.
            let item =
                match poll_fn(|cx| Poll::Ready(crate::body::poll_next_caught(&mut stream, cx)))
                    .await
                {
                    Poll::Ready(item) => item,
                    Poll::Pending => {
                        if !self.flush(false).await {
                            return false;
                        }
                        poll_fn(|cx| crate::body::poll_next_caught(&mut stream, cx)).await
                    }
                };
            match item {
                Some(Ok(chunk)) => {
                    sent += chunk.len() as u64;
                    if let Framing::Length(Some(n)) = framing {
                        if sent > n {
                            return false;
                        }
                    }
                    if chunk.is_empty() {
                        continue;
                    }
                    if let Framing::Chunked = framing {
                        write_chunk_size(&mut self.write_buf.borrow_mut(), chunk.len());
                    }
                    if chunk.len() >= DIRECT_WRITE {
                        if !self.flush(false).await || !self.write_all(&chunk).await {
                            return false;
                        }
                    } else {
                        self.write_buf.borrow_mut().extend_from_slice(&chunk);
                    }
                    if let Framing::Chunked = framing {
                        self.write_buf.borrow_mut().extend_from_slice(b"\r\n");
                    }
                    if self.write_buf.borrow().len() >= FLUSH_AT && !self.flush(false).await {
                        return false;
                    }
                }
                Some(Err(_)) => {
                    // Ended by the close, a body cut short would look whole: the close is a
                    // reset instead, and over TLS without `close_notify` (RFC 9112 §9.8).
                    if let Framing::Close = framing {
                        self.ending.set(Ending::Reset);
                        self.stream.reset_on_close();
                    }
                    return false;
                }
                None => {
                    return match framing {
                        Framing::Chunked => {
                            // The producer has ended, so trailers it sets are there now.
                            let trailers = trailers.and_then(Trailers::take);
                            volt_proto::write_last_chunk(
                                &mut self.write_buf.borrow_mut(),
                                trailers.as_ref(),
                            );
                            true
                        }
                        Framing::Length(Some(n)) => sent == n,
                        Framing::Length(None) | Framing::Close => true,
                    };
                }
            }
        }
    }
}
