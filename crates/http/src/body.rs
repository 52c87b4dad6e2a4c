//! Response bodies: in memory, or streamed with an optional known length.

use std::cell::RefCell;
use std::fmt;
use std::future::poll_fn;
use std::io;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use bytes::{Buf, Bytes, BytesMut};
use futures_core::Stream;
use http::HeaderMap;

/// A stream of body chunks; an error ends the response (the connection is closed).
pub type BodyStream = Pin<Box<dyn Stream<Item = io::Result<Bytes>>>>;

/// A response body.
///
/// In memory ([`Body::empty`], or from `&'static str`, `String`, `Vec<u8>`, `Bytes`) it is sent
/// with `Content-Length`. Streamed ([`Body::stream`], [`Body::channel`]) it is sent with
/// chunked encoding, or with `Content-Length` when [`Body::sized_stream`] gives the length; the
/// server pulls one chunk at a time and waits for the socket before pulling the next, so a
/// large body never sits in memory.
pub struct Body {
    pub(crate) kind: BodyKind,
    /// Trailer fields sent after the body: HTTP/2, or HTTP/1.1 with chunked coding.
    pub(crate) trailers: Option<Trailers>,
}

/// Where a body's trailer fields come from.
///
/// Boxed, as they are rare: a `HeaderMap` inline would make every [`Body`] and `Response`
/// (moved several times per request) ~100 bytes larger.
pub(crate) enum Trailers {
    Fixed(Box<HeaderMap>),
    /// Set by [`BodySender::send_trailers`] before the body ends.
    Channel(Rc<RefCell<Slot>>),
}

impl Trailers {
    /// The fields, once the body has ended.
    pub(crate) fn take(self) -> Option<HeaderMap> {
        match self {
            Trailers::Fixed(map) => Some(*map),
            Trailers::Channel(slot) => slot.borrow_mut().trailers.take(),
        }
    }
}

pub(crate) enum BodyKind {
    Full(Bytes),
    Stream {
        stream: BodyStream,
        len: Option<u64>,
    },
    /// No body: the 101 of a WebSocket handshake, and what runs on the connection after it
    /// ([`WebSocketUpgrade::on_upgrade`](crate::WebSocketUpgrade::on_upgrade)). Only an
    /// HTTP/1.1 connection acts on it; anywhere else it is an empty body.
    Upgrade(Box<crate::ws::PendingUpgrade>),
}

// The upgrade costs no room in a body.
const _: () = assert!(size_of::<BodyKind>() == 40);

impl Body {
    /// No body.
    pub fn empty() -> Body {
        Body {
            kind: BodyKind::Full(Bytes::new()),
            trailers: None,
        }
    }

    /// A streamed body of unknown length (chunked on HTTP/1.1).
    pub fn stream(stream: impl Stream<Item = io::Result<Bytes>> + 'static) -> Body {
        Body {
            kind: BodyKind::Stream {
                stream: Box::pin(stream),
                len: None,
            },
            trailers: None,
        }
    }

    /// A streamed body of exactly `len` bytes (sent with `Content-Length`). A stream that ends
    /// early or runs long is an error and closes the connection.
    pub fn sized_stream(len: u64, stream: impl Stream<Item = io::Result<Bytes>> + 'static) -> Body {
        Body {
            kind: BodyKind::Stream {
                stream: Box::pin(stream),
                len: Some(len),
            },
            trailers: None,
        }
    }

    /// A body fed through a [`BodySender`] from another task. Each `send` waits until the
    /// previous chunk was taken by the connection: the writer goes at the socket's pace.
    pub fn channel() -> (BodySender, Body) {
        let shared = Rc::new(RefCell::new(Slot::default()));
        let mut body = Body::stream(ChannelStream {
            shared: shared.clone(),
        });
        body.trailers = Some(Trailers::Channel(shared.clone()));
        (BodySender { shared }, body)
    }

    /// Sends `trailers` after the body. HTTP/1.1 then sends the body chunked (trailers follow
    /// the last chunk), whatever its length; an HTTP/1.0 client gets the body without them. A
    /// `Trailer` header naming the fields is the handler's to add. For trailers known only at
    /// the end of a [`Body::channel`], use [`BodySender::send_trailers`].
    pub fn with_trailers(mut self, trailers: HeaderMap) -> Body {
        self.trailers = Some(Trailers::Fixed(Box::new(trailers)));
        self
    }

    /// The length, if known.
    pub fn len(&self) -> Option<u64> {
        match &self.kind {
            BodyKind::Full(b) => Some(b.len() as u64),
            BodyKind::Stream { len, .. } => *len,
            BodyKind::Upgrade(_) => Some(0),
        }
    }

    /// True for an in-memory body of zero bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == Some(0)
    }

    /// The bytes of an in-memory body; `None` for a stream.
    pub fn as_bytes(&self) -> Option<&Bytes> {
        match &self.kind {
            BodyKind::Full(b) => Some(b),
            BodyKind::Stream { .. } | BodyKind::Upgrade(_) => None,
        }
    }
}

impl fmt::Debug for Body {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            BodyKind::Full(b) => f.debug_tuple("Body::Full").field(&b.len()).finish(),
            BodyKind::Stream { len, .. } => {
                f.debug_struct("Body::Stream").field("len", len).finish()
            }
            BodyKind::Upgrade(_) => f.write_str("Body::Upgrade"),
        }
    }
}

impl From<&'static str> for Body {
    fn from(s: &'static str) -> Body {
        Bytes::from_static(s.as_bytes()).into()
    }
}

impl From<&'static [u8]> for Body {
    fn from(s: &'static [u8]) -> Body {
        Bytes::from_static(s).into()
    }
}

impl From<String> for Body {
    fn from(s: String) -> Body {
        Bytes::from(s).into()
    }
}

impl From<Vec<u8>> for Body {
    fn from(v: Vec<u8>) -> Body {
        Bytes::from(v).into()
    }
}

impl From<Bytes> for Body {
    fn from(b: Bytes) -> Body {
        Body {
            kind: BodyKind::Full(b),
            trailers: None,
        }
    }
}

#[derive(Default)]
pub(crate) struct Slot {
    chunk: Option<io::Result<Bytes>>,
    trailers: Option<HeaderMap>,
    closed: bool,
    sender_waiting: Option<Waker>,
    receiver_waiting: Option<Waker>,
}

/// Feeds a [`Body::channel`]. Dropping it ends the body; dropping it in a panic cuts the body
/// short, as [`BodySender::abort`] does.
pub struct BodySender {
    shared: Rc<RefCell<Slot>>,
}

impl BodySender {
    /// Sends one chunk, waiting first until the previous one was taken. Fails when the
    /// connection went away (the client disconnected).
    pub async fn send(&mut self, chunk: impl Into<Bytes>) -> io::Result<()> {
        let mut chunk = Some(Ok(chunk.into()));
        poll_fn(|cx| {
            let mut slot = self.shared.borrow_mut();
            if slot.closed {
                return Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::BrokenPipe,
                    "the response body is no longer read",
                )));
            }
            if slot.chunk.is_some() {
                slot.sender_waiting = Some(cx.waker().clone());
                return Poll::Pending;
            }
            slot.chunk = chunk.take();
            if let Some(w) = slot.receiver_waiting.take() {
                w.wake();
            }
            Poll::Ready(Ok(()))
        })
        .await
    }

    /// Ends the body with trailer fields (after the last chunk on HTTP/1.1; an HTTP/1.0
    /// response ends without them).
    pub fn send_trailers(self, trailers: HeaderMap) {
        self.shared.borrow_mut().trailers = Some(trailers);
    }

    /// Ends the body with an error: the connection is closed without finishing the response, so
    /// the client sees a truncated body rather than a complete one.
    pub fn abort(self) {
        let mut slot = self.shared.borrow_mut();
        slot.chunk = Some(Err(io::Error::other("response body aborted")));
        if let Some(w) = slot.receiver_waiting.take() {
            w.wake();
        }
    }
}

impl Drop for BodySender {
    fn drop(&mut self) {
        let mut slot = self.shared.borrow_mut();
        // Dropped while a panic unwinds the task feeding the body: the body is cut short and
        // must not end as if complete (a final chunk would tell the client it got it all).
        if std::thread::panicking() {
            slot.chunk = Some(Err(io::Error::other("the response body's sender panicked")));
        }
        slot.closed = true;
        if let Some(w) = slot.receiver_waiting.take() {
            w.wake();
        }
    }
}

impl fmt::Debug for BodySender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BodySender").finish_non_exhaustive()
    }
}

struct ChannelStream {
    shared: Rc<RefCell<Slot>>,
}

impl Stream for ChannelStream {
    type Item = io::Result<Bytes>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut slot = self.shared.borrow_mut();
        if let Some(chunk) = slot.chunk.take() {
            if let Some(w) = slot.sender_waiting.take() {
                w.wake();
            }
            return Poll::Ready(Some(chunk));
        }
        if slot.closed {
            return Poll::Ready(None);
        }
        slot.receiver_waiting = Some(cx.waker().clone());
        Poll::Pending
    }
}

impl Drop for ChannelStream {
    fn drop(&mut self) {
        let mut slot = self.shared.borrow_mut();
        slot.closed = true;
        if let Some(w) = slot.sender_waiting.take() {
            w.wake();
        }
    }
}

/// Polls a response body stream for its next chunk. A panic in the stream is its error: the
/// response is cut short (HTTP/1 closes the connection, HTTP/2 resets that stream), but only
/// after what was buffered before it went out (earlier pipelined answers, this response's head
/// and first chunks). Left to unwind, it took the connection's task with it: on HTTP/1 those
/// answers, on HTTP/2 every other stream of the connection.
pub(crate) fn poll_next_caught(
    stream: &mut BodyStream,
    cx: &mut Context<'_>,
) -> Poll<Option<io::Result<Bytes>>> {
    catch_unwind(AssertUnwindSafe(|| stream.as_mut().poll_next(cx)))
        .unwrap_or_else(|_| Poll::Ready(Some(Err(io::Error::other("the body stream panicked")))))
}

/// Decodes from the front of `buf` (an HTTP/1 message's bytes after its head) and takes what
/// was decoded off it: how many bytes that was (0 when more must be read), and the body data
/// among them, if any, as a `Bytes` sharing `buf`'s allocation (the framing around it dropped).
/// The server's request bodies and the client's response bodies both read through this.
pub(crate) fn take_body_data(
    decoder: &mut volt_proto::BodyDecoder,
    buf: &mut BytesMut,
) -> Result<(usize, Option<Bytes>), volt_proto::ParseError> {
    let (consumed, data) = decoder.decode(buf)?;
    let Some(data) = data.filter(|d| !d.is_empty()) else {
        buf.advance(consumed);
        return Ok((consumed, None));
    };
    let (start, len) = (data.as_ptr() as usize - buf.as_ptr() as usize, data.len());
    buf.advance(start);
    let chunk = buf.split_to(len).freeze();
    buf.advance(consumed - start - len);
    Ok((consumed, Some(chunk)))
}
