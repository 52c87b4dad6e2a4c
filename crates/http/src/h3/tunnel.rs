//! WebSocket over HTTP/3 (RFC 9220): once a WebSocket's extended CONNECT is answered 200, its
//! request stream carries the session's bytes both ways in DATA frames, as RFC 8441 has it for
//! HTTP/2 (`crate::h2`'s tunnel).
//!
//! The session is the one HTTP/1 and HTTP/2 run (`crate::ws`), on a [`StreamLink`], in the
//! stream's own task. It reads the stream as a request body is read, on demand: the DATA
//! payloads in order (unknown frame types skipped, HEADERS a connection error, §4.4 of RFC
//! 9114), QUIC's credit going back to the client only as the session takes the bytes, so a
//! session that does not read holds its client back by flow control. Each write becomes one
//! DATA frame, held until the stream takes it all (the session's write timeout runs meanwhile).
//!
//! Ending: the session shutting its side sends the stream's FIN (the TCP close of RFC 6455,
//! RFC 9220 §3). A client's RESET_STREAM fails the session's next read, its STOP_SENDING
//! (answered with RESET_STREAM at once, `super::quic`) the next write, as a TCP reset would; a
//! session that ends without its FIN (failed, timed out, reset) resets the stream with
//! H3_REQUEST_CANCELLED, RFC 9220 §3's mapping of a TCP reset.

use std::cell::{Cell, RefCell};
use std::io;
use std::rc::Rc;
use std::task::{ready, Context, Poll};

use bytes::{Buf, BytesMut};
use volt_proto::h3::frame::write_data_header;
use volt_proto::h3::{Code, RequestEvent};

use super::quic::StreamRef;
use super::request::{finish_failed, Next, Recv};
use crate::server::Worker;
use crate::ws::link::{stream_reset, Link};
use crate::ws::PendingUpgrade;

/// The most of a session's write that goes in one DATA frame: what it holds back from the
/// stream at most, copied once.
const MAX_FRAME: usize = 64 * 1024;

/// The byte link a WebSocket session runs on over an HTTP/3 request stream.
pub(crate) struct StreamLink {
    recv: Rc<RefCell<Recv>>,
    stream: StreamRef,
    /// A DATA frame (header and payload) the stream has not taken all of yet.
    frame: RefCell<BytesMut>,
    /// Our FIN went: the session ended the stream as it should.
    finished: Rc<Cell<bool>>,
}

impl StreamLink {
    /// Moves the DATA payloads that arrived into `buf`; `Ok(0)` once the client ended the
    /// stream.
    pub(crate) fn poll_read_bytes(
        &self,
        cx: &mut Context<'_>,
        buf: &mut BytesMut,
    ) -> Poll<io::Result<usize>> {
        let mut recv = self.recv.borrow_mut();
        if recv.failed.is_some() {
            return Poll::Ready(Err(stream_reset()));
        }
        let mut n = 0;
        loop {
            match recv.poll_next(cx) {
                Poll::Ready(Ok(Next::Event(RequestEvent::Data(piece)))) => {
                    buf.extend_from_slice(&piece);
                    n += piece.len();
                }
                // The tunnel's codec lets nothing else through: HEADERS is an error there.
                Poll::Ready(Ok(Next::Event(_))) => {}
                Poll::Ready(Ok(Next::End)) => return Poll::Ready(Ok(n)),
                Poll::Ready(Err(e)) => {
                    // A rule broken is acted on once the session is over ([`run`]); a reset
                    // (or the connection gone) leaves nothing to do.
                    recv.failed = e;
                    return Poll::Ready(Err(stream_reset()));
                }
                Poll::Pending if n > 0 => return Poll::Ready(Ok(n)),
                Poll::Pending => return Poll::Pending,
            }
        }
    }

    /// Frames up to [`MAX_FRAME`] bytes of `buf` as one DATA frame, once the last one went.
    pub(crate) fn poll_write(&self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        ready!(self.poll_flush(cx))?;
        let n = buf.len().min(MAX_FRAME);
        if n == 0 {
            return Poll::Ready(Ok(0));
        }
        {
            let mut frame = self.frame.borrow_mut();
            write_data_header(n as u64, &mut *frame);
            frame.extend_from_slice(&buf[..n]);
        }
        // What the stream does not take now goes at the next write or flush.
        if let Poll::Ready(Err(e)) = self.poll_flush(cx) {
            return Poll::Ready(Err(e));
        }
        Poll::Ready(Ok(n))
    }

    /// Ready once the stream took the frame in hand (flow control allowing).
    pub(crate) fn poll_flush(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut frame = self.frame.borrow_mut();
        while !frame.is_empty() {
            match ready!(self.stream.poll_write(cx, &frame)) {
                Ok(n) => frame.advance(n),
                Err(_) => {
                    frame.clear();
                    return Poll::Ready(Err(stream_reset()));
                }
            }
        }
        Poll::Ready(Ok(()))
    }

    /// Ends the stream (FIN) after what was written.
    pub(crate) fn poll_shutdown(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_flush(cx))?;
        if !self.finished.replace(true) {
            self.stream.finish();
        }
        Poll::Ready(Ok(()))
    }
}

/// Runs `pending`'s session on the stream `recv` reads, whose 200 went out, then ends the
/// stream: reset (H3_REQUEST_CANCELLED) if the session did not finish it, the connection
/// closed if the client broke the rules of the tunnel.
pub(super) async fn run(
    worker: &Rc<Worker>,
    recv: Rc<RefCell<Recv>>,
    pending: Box<PendingUpgrade>,
) {
    let stream = {
        let mut recv = recv.borrow_mut();
        recv.frames.open_tunnel();
        recv.stream.clone()
    };
    let finished = Rc::new(Cell::new(false));
    let link = Link::H3(StreamLink {
        recv: recv.clone(),
        stream: stream.clone(),
        frame: RefCell::new(BytesMut::new()),
        finished: finished.clone(),
    });
    crate::ws::run(pending, link, BytesMut::new(), worker.clone()).await;
    let (failed, ended) = {
        let mut recv = recv.borrow_mut();
        (recv.failed.take(), recv.ended)
    };
    if failed.is_some() {
        return finish_failed(&stream, failed);
    }
    if !finished.get() {
        stream.stop(Code::H3_REQUEST_CANCELLED.0);
        stream.reset(Code::H3_REQUEST_CANCELLED.0);
    } else if !ended {
        // The close handshake is over: whatever the client still sends is not wanted.
        stream.stop(Code::H3_NO_ERROR.0);
    }
    stream.release();
}
