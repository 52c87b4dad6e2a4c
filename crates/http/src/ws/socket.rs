//! A WebSocket session at either end: receiving, sending, and the closing handshake (RFC 6455
//! §5.5, §7). The role decides the masking (§5.1, §5.3: a client masks every frame with a
//! fresh key and takes only unmasked ones; a server the other way round) and who closes the
//! TCP connection first (§7.1.1: the server).

use std::cell::{Cell, RefCell};
use std::future::{poll_fn, Future};
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{ready, Poll};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use volt_proto::ws::{close_code_is_valid, Compressor, DeflateParams, MAX_CONTROL_PAYLOAD};
use volt_proto::ws::{encode_close, encode_compressed_frame, encode_frame};
use volt_proto::ws::{Decoder, Incoming, Opcode, Role};
use volt_rt::Stopped;

use super::link::{Link, Masks};
use super::Message;
use crate::server::Worker;

/// Least free space in the read buffer before a read.
const MIN_READ: usize = 4 * 1024;

/// An open WebSocket: [`recv`](WebSocket::recv) messages, [`send`](WebSocket::send) them,
/// [`close`](WebSocket::close) it. A server's session gets one from
/// [`WebSocketUpgrade::on_upgrade`](crate::WebSocketUpgrade::on_upgrade), a client from
/// [`WebSocketBuilder::connect`](crate::WebSocketBuilder::connect): the same type at both
/// ends, which differ only where RFC 6455 makes them (masking, who closes the TCP connection).
///
/// Errors are `io::Error`s: `InvalidData` for a peer that broke the protocol (the
/// connection was closed with 1002, 1007 or 1009), `TimedOut` (the idle timeout, or a send
/// the peer did not take within the write timeout), `UnexpectedEof` (the peer left without a
/// close frame), `NotConnected` (a send after the close), `InvalidInput` (a bad close code, a
/// control frame over 125 bytes) and the socket's own.
pub struct WebSocket {
    inner: Rc<Inner>,
    /// The server's graceful shutdown, which closes its WebSockets with 1001 (none for a
    /// client's).
    stopped: Option<Stopped>,
}

/// What a session is set up with, at either end.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) role: Role,
    pub(crate) max_message: usize,
    pub(crate) idle_timeout: Option<Duration>,
    pub(crate) protocol: Option<String>,
    /// permessage-deflate as agreed, and the level this end compresses at.
    pub(crate) deflate: Option<(DeflateParams, u32)>,
    /// Longest wait for the socket to take a frame.
    pub(crate) write_timeout: Duration,
    /// Longest wait for the peer's part of the close (its close frame; a server's TCP close).
    pub(crate) linger_timeout: Duration,
    /// Most bytes read and discarded after a failure.
    pub(crate) max_linger_bytes: u64,
}

/// The connection, shared between the session's [`WebSocket`] and the task that closes it
/// once the session is over ([`finish`]). Borrows last one poll each.
pub(super) struct Inner {
    stream: Link,
    read: RefCell<BytesMut>,
    write: RefCell<Vec<u8>>,
    decoder: RefCell<Decoder>,
    /// The server's worker, which says when graceful shutdown starts (none for a client).
    worker: Option<Rc<Worker>>,
    settings: Settings,
    state: Cell<State>,
    /// The peer's close frame, once it came.
    close_frame: RefCell<Option<(u16, String)>>,
    /// A client's masking keys.
    masks: RefCell<Masks>,
    /// Made at the first message sent with permessage-deflate (its window is 32 KiB and
    /// its tables more: a session that only receives never pays for it).
    compressor: RefCell<Option<Compressor>>,
    /// A message's compressed bytes, before they are framed.
    compressed: RefCell<Vec<u8>>,
}

/// Where the connection is in its life (§7).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Open,
    /// The close handshake is done, or the connection failed: nothing more is sent.
    Closed,
}

/// What a wait for more bytes came to.
enum Read {
    Data,
    Eof,
    Failed(io::Error),
    TimedOut,
    ShuttingDown,
}

impl WebSocket {
    /// A session on `stream`, with `read` the bytes that came after the handshake. A server's
    /// (with its `worker`) closes with 1001 when graceful shutdown starts.
    pub(crate) fn new(
        stream: Link,
        read: BytesMut,
        worker: Option<Rc<Worker>>,
        settings: Settings,
    ) -> WebSocket {
        let decoder = match settings.deflate {
            Some((params, _)) => Decoder::with_deflate(settings.role, settings.max_message, params),
            None => Decoder::new(settings.role, settings.max_message),
        };
        let stopped = worker
            .as_ref()
            .map(|_| volt_rt::Handle::current().stopped());
        let inner = Inner {
            stream,
            read: RefCell::new(read),
            write: RefCell::new(Vec::new()),
            decoder: RefCell::new(decoder),
            worker,
            settings,
            state: Cell::new(State::Open),
            close_frame: RefCell::new(None),
            masks: RefCell::new(Masks::new()),
            compressor: RefCell::new(None),
            compressed: RefCell::new(Vec::new()),
        };
        WebSocket {
            inner: Rc::new(inner),
            stopped,
        }
    }

    pub(super) fn share(&self) -> Rc<Inner> {
        self.inner.clone()
    }

    /// The next text or binary message; `None` once the connection is closed (by the
    /// peer's close frame, answered here; or by the server's graceful shutdown, which sends
    /// 1001). Pings are answered while waiting. A message that breaks the protocol closes the
    /// connection (1002; 1007 for text that is not UTF-8; 1009 over the size limit) and is an
    /// `InvalidData` error.
    pub async fn recv(&mut self) -> io::Result<Option<Message>> {
        let inner = &*self.inner;
        loop {
            if inner.state.get() == State::Closed {
                return Ok(None);
            }
            let decoded = inner.decode();
            let incoming = match decoded {
                Ok(Some(incoming)) => incoming,
                Err(e) => {
                    inner.fail(e.close_code()).await;
                    return Err(io::Error::new(io::ErrorKind::InvalidData, e));
                }
                Ok(None) => {
                    let deadline = inner.settings.idle_timeout.map(|t| Instant::now() + t);
                    match inner.read_more(deadline, self.stopped.as_mut()).await {
                        Read::Data => continue,
                        Read::Eof => return Err(inner.gone()),
                        Read::Failed(e) => {
                            inner.state.set(State::Closed);
                            return Err(e);
                        }
                        Read::TimedOut => {
                            inner.close(Some((1001, "idle timeout"))).await;
                            let e = "the WebSocket was idle too long";
                            return Err(io::Error::new(io::ErrorKind::TimedOut, e));
                        }
                        Read::ShuttingDown => {
                            inner.close(Some((1001, "server shutting down"))).await;
                            return Ok(None);
                        }
                    }
                }
            };
            match incoming {
                Incoming::Text(text) => {
                    let text = String::from_utf8(text.into()).expect("the decoder checked it");
                    return Ok(Some(Message::Text(text)));
                }
                Incoming::Binary(data) => return Ok(Some(Message::Binary(data))),
                // §5.5.2: a ping is answered with a pong carrying its data, as soon as can be.
                Incoming::Ping(data) => inner.send_frame(Opcode::Pong, &data).await?,
                Incoming::Pong(_) => {}
                Incoming::Close(frame) => {
                    // §5.5.1: answer with a close frame, echoing the code, then (§7.1.1: the
                    // server first) close the TCP connection.
                    let code = frame.as_ref().map(|(code, _)| *code);
                    *inner.close_frame.borrow_mut() = frame;
                    let mask = inner.mask();
                    encode_close(&mut inner.write.borrow_mut(), code, "", mask);
                    let _ = inner.write_out().await;
                    inner.state.set(State::Closed);
                    inner.end_tcp().await;
                    return Ok(None);
                }
            }
        }
    }

    /// Sends `message` and waits until the socket took it (backpressure: a peer that reads
    /// slowly slows the sender down), for at most the write timeout (the server's
    /// `Config::write_timeout`, the client's `ClientBuilder::timeout`). `Message::Close`
    /// closes as [`WebSocket::close`] does. Text and binary messages go as one frame each,
    /// compressed if permessage-deflate was agreed.
    pub async fn send(&mut self, message: impl Into<Message>) -> io::Result<()> {
        let inner = &*self.inner;
        if inner.state.get() == State::Closed {
            return Err(closed());
        }
        if inner.worker.as_ref().is_some_and(|w| w.is_shutting_down()) {
            inner.close(Some((1001, "server shutting down"))).await;
            return Err(closed());
        }
        let (opcode, data) = match message.into() {
            Message::Text(text) => return inner.send_message(Opcode::Text, text.as_bytes()).await,
            Message::Binary(data) => return inner.send_message(Opcode::Binary, &data).await,
            Message::Ping(data) => (Opcode::Ping, data),
            Message::Pong(data) => (Opcode::Pong, data),
            Message::Close(None) => {
                inner.close(None).await;
                return Ok(());
            }
            Message::Close(Some((code, reason))) => return self.close(code, &reason).await,
        };
        if data.len() > MAX_CONTROL_PAYLOAD {
            let e = "a ping or pong carries at most 125 bytes";
            return Err(io::Error::new(io::ErrorKind::InvalidInput, e));
        }
        inner.send_frame(opcode, &data).await
    }

    /// Closes the connection: sends a close frame with `code` (RFC 6455 §7.4: 1000-1003,
    /// 1007-1014, 3000-4999) and `reason` (cut to fit 123 bytes), waits for the peer's close
    /// frame (discarding messages that arrive meanwhile) for at most the linger timeout (the
    /// server's `Config::linger_timeout`, 2 s for a client), then closes the TCP connection: a
    /// server at once, a client once the server has closed it (§7.1.1), or after that timeout
    /// again.
    pub async fn close(&mut self, code: u16, reason: &str) -> io::Result<()> {
        if !close_code_is_valid(code) {
            let e = format!("{code} is not a close code to send (RFC 6455 §7.4)");
            return Err(io::Error::new(io::ErrorKind::InvalidInput, e));
        }
        self.inner.close(Some((code, reason))).await;
        Ok(())
    }

    /// The subprotocol chosen at the handshake
    /// ([`WebSocketUpgrade::protocols`](crate::WebSocketUpgrade::protocols), or the one the
    /// server picked from [`WebSocketBuilder::protocols`](crate::WebSocketBuilder::protocols)).
    pub fn protocol(&self) -> Option<&str> {
        self.inner.settings.protocol.as_deref()
    }

    /// permessage-deflate's parameters, if the handshake agreed on it.
    pub fn deflate(&self) -> Option<DeflateParams> {
        self.inner.settings.deflate.map(|(params, _)| params)
    }

    /// The code and reason of the peer's close frame, once it came (`None` before, and for
    /// a close frame without a code).
    pub fn close_frame(&self) -> Option<(u16, String)> {
        self.inner.close_frame.borrow().clone()
    }
}

impl std::fmt::Debug for WebSocket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebSocket")
            .field("role", &self.inner.settings.role)
            .field("state", &self.inner.state.get())
            .field("protocol", &self.inner.settings.protocol)
            .field("deflate", &self.deflate())
            .finish()
    }
}

/// After the session: closes the connection if it still is open, with 1000 for a session
/// that ended well and 1011 for one that failed.
pub(super) async fn finish(inner: &Inner, ok: bool) {
    if inner.state.get() == State::Open {
        let code = if ok { 1000 } else { 1011 };
        inner.close(Some((code, ""))).await;
    }
}

fn closed() -> io::Error {
    io::Error::new(io::ErrorKind::NotConnected, "the WebSocket is closed")
}

impl Inner {
    fn decode(&self) -> Result<Option<Incoming>, volt_proto::ws::Error> {
        self.decoder
            .borrow_mut()
            .decode(&mut self.read.borrow_mut())
    }

    /// A fresh masking key for a client's frame (§5.3); none for a server's.
    fn mask(&self) -> Option<[u8; 4]> {
        match self.settings.role {
            Role::Client => Some(self.masks.borrow_mut().next()),
            Role::Server => None,
        }
    }

    /// Sends one whole frame, never compressed (control frames, RFC 7692 §6.1).
    async fn send_frame(&self, opcode: Opcode, data: &[u8]) -> io::Result<()> {
        let mask = self.mask();
        encode_frame(&mut self.write.borrow_mut(), true, opcode, data, mask);
        self.write_out().await
    }

    /// Sends a text or binary message as one frame: compressed, with RSV1, if
    /// permessage-deflate was agreed (RFC 7692 §6).
    async fn send_message(&self, opcode: Opcode, data: &[u8]) -> io::Result<()> {
        let Some((params, level)) = self.settings.deflate else {
            return self.send_frame(opcode, data).await;
        };
        let mask = self.mask();
        {
            let mut compressor = self.compressor.borrow_mut();
            let compressor =
                compressor.get_or_insert_with(|| params.compressor(self.settings.role, level));
            let mut compressed = self.compressed.borrow_mut();
            compressed.clear();
            compressor.compress(data, &mut compressed);
            encode_compressed_frame(&mut self.write.borrow_mut(), opcode, &compressed, mask);
            // A large message's buffer is not kept for the small ones after it.
            if compressed.capacity() > 64 * 1024 {
                *compressed = Vec::new();
            }
        }
        self.write_out().await
    }

    /// Writes the write buffer out, within the write timeout. A failure leaves the connection
    /// closed.
    async fn write_out(&self) -> io::Result<()> {
        let deadline = Instant::now() + self.settings.write_timeout;
        let mut written = 0;
        let write = poll_fn(|cx| {
            let buf = self.write.borrow();
            while written < buf.len() {
                match ready!(self.stream.poll_write(cx, &buf[written..])) {
                    Ok(0) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                    Ok(n) => written += n,
                    Err(e) => return Poll::Ready(Err(e)),
                }
            }
            self.stream.poll_flush(cx)
        });
        let result = match volt_rt::time::timeout_at(deadline, write).await {
            Ok(result) => result,
            Err(_) => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the peer took no WebSocket data within the write timeout",
            )),
        };
        self.write.borrow_mut().clear();
        if result.is_err() {
            self.state.set(State::Closed);
        }
        result
    }

    /// Reads more of what the peer sends, until `deadline`, or until graceful shutdown
    /// starts (if `stopped` is given).
    async fn read_more(
        &self,
        deadline: Option<Instant>,
        mut stopped: Option<&mut Stopped>,
    ) -> Read {
        {
            let mut buf = self.read.borrow_mut();
            buf.reserve(MIN_READ);
        }
        let read = poll_fn(|cx| {
            if let Some(stopped) = stopped.as_deref_mut() {
                if Pin::new(stopped).poll(cx).is_ready() {
                    return Poll::Ready(Read::ShuttingDown);
                }
            }
            let read = ready!(self.stream.poll_read_bytes(cx, &mut self.read.borrow_mut()));
            Poll::Ready(match read {
                Ok(0) => Read::Eof,
                Ok(_) => Read::Data,
                Err(e) => Read::Failed(e),
            })
        });
        match deadline {
            None => read.await,
            Some(deadline) => volt_rt::time::timeout_at(deadline, read)
                .await
                .unwrap_or(Read::TimedOut),
        }
    }

    /// The peer closed the TCP connection without the close handshake (§7.1.5: 1006).
    fn gone(&self) -> io::Error {
        self.state.set(State::Closed);
        let e = match self.settings.role {
            Role::Server => "the client closed the connection without a WebSocket close frame",
            Role::Client => "the server closed the connection without a WebSocket close frame",
        };
        io::Error::new(io::ErrorKind::UnexpectedEof, e)
    }

    /// This end's close (§7.1.2): a close frame, then the peer's close frame awaited (what
    /// else arrives is discarded) for at most the linger timeout, then the TCP close.
    async fn close(&self, frame: Option<(u16, &str)>) {
        if self.state.get() == State::Closed {
            return;
        }
        let (code, reason) = frame.unzip();
        let mask = self.mask();
        encode_close(
            &mut self.write.borrow_mut(),
            code,
            reason.unwrap_or(""),
            mask,
        );
        self.state.set(State::Closed);
        if self.write_out().await.is_err() {
            return;
        }
        let deadline = Instant::now() + self.settings.linger_timeout;
        loop {
            match self.decode() {
                Ok(Some(Incoming::Close(frame))) => {
                    *self.close_frame.borrow_mut() = frame;
                    break;
                }
                Ok(Some(_)) => continue,
                Ok(None) => match self.read_more(Some(deadline), None).await {
                    Read::Data => continue,
                    _ => break,
                },
                // A broken frame now: no need to say so, the close is on its way.
                Err(_) => break,
            }
        }
        self.end_tcp().await;
    }

    /// Ends the TCP connection once the close handshake is over. §7.1.1: the server closes it
    /// first, so that it (not the client) holds TIME_WAIT; a client waits for that close (for
    /// at most the linger timeout, discarding what still comes) before it shuts its side.
    async fn end_tcp(&self) {
        if self.settings.role == Role::Client {
            let deadline = Instant::now() + self.settings.linger_timeout;
            loop {
                self.read.borrow_mut().clear();
                if !matches!(self.read_more(Some(deadline), None).await, Read::Data) {
                    break;
                }
            }
        }
        self.shut_down().await;
    }

    /// Fails the connection (§7.1.7) with `code`: a close frame, the write side shut, and what
    /// the peer still sends read and discarded until it closes (bounded as a lingering
    /// close is): closing with bytes unread would send a reset, which may destroy the close
    /// frame before the peer reads it.
    async fn fail(&self, code: u16) {
        if self.state.get() == State::Closed {
            return;
        }
        self.state.set(State::Closed);
        let mask = self.mask();
        encode_close(&mut self.write.borrow_mut(), Some(code), "", mask);
        if self.write_out().await.is_err() {
            return;
        }
        self.shut_down().await;
        let deadline = Instant::now() + self.settings.linger_timeout;
        let mut discarded = 0u64;
        while discarded < self.settings.max_linger_bytes {
            {
                let mut buf = self.read.borrow_mut();
                buf.clear();
                buf.reserve(MIN_READ);
            }
            let read = poll_fn(|cx| self.stream.poll_read_raw(cx, &mut self.read.borrow_mut()));
            match volt_rt::time::timeout_at(deadline, read).await {
                Ok(Ok(n)) if n > 0 => discarded += n as u64,
                _ => break,
            }
        }
    }

    /// Shuts the write side (over TLS after `close_notify`), within the write timeout.
    async fn shut_down(&self) {
        let deadline = Instant::now() + self.settings.write_timeout;
        let shutdown = poll_fn(|cx| self.stream.poll_shutdown(cx));
        let _ = volt_rt::time::timeout_at(deadline, shutdown).await;
    }
}
