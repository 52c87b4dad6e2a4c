//! The server side of an HTTP/2 connection (RFC 9113), as a state machine over bytes.
//!
//! [`Connection::poll`] takes the bytes read from the client, consumes every whole frame (a
//! partial one stays in the buffer for the next read) and returns the next [`Event`] the
//! server acts on: a request head, body data, trailers, a reset, more send window. Frames that
//! need only a protocol answer (SETTINGS, PING) are answered by appending to the output buffer
//! the caller passes in, as are the errors: a stream error resets that stream, a connection
//! error appends GOAWAY and [`poll`](Connection::poll) returns [`Error`].
//!
//! The send side appends frames to the same kind of buffer: [`Connection::headers`] starts a
//! response head (or trailers), [`Connection::send_data`] sends what the flow-control windows
//! allow and says how much that was, [`Connection::release`] gives window back as the
//! application consumes a request body.
//!
//! Streams live in a small vector, found by a scan of their ids: a connection has tens of open
//! streams at most in practice, and a scan of a few cache lines beats hashing. A request head
//! is decoded into one reusable buffer ([`Head`]), so a request costs no allocation here.
//!
//! Defences: a client gets a budget of frames that cost work without carrying a request
//! (SETTINGS, PING, PRIORITY, RST_STREAM, empty DATA and CONTINUATION frames) and a budget of
//! stream resets (streams it resets while the server still works on them: rapid reset,
//! CVE-2023-44487; and streams the server must reset because the client broke the protocol on
//! them: "MadeYouReset"). Both refill over ten seconds; a client that spends either gets GOAWAY
//! `ENHANCE_YOUR_CALM`. A header block is bounded in bytes and in CONTINUATION frames.

use std::fmt;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes, BytesMut};

use super::frame::{self, flags, setting, FrameHeader, Kind, Reason};
use super::hpack::{Decoder, Encoder, Indexing};
use crate::{HeaderSpan, HeaderSpans, Span, H2_PREFACE};

/// Most CONTINUATION frames one header block may take.
const MAX_CONTINUATIONS: u32 = 64;
/// How many streams the server remembers having reset, to ignore the frames the client sent
/// before it saw the reset (RFC 9113 §5.1, "closed").
const RESET_MEMORY: usize = 32;
/// A budget refills in full over this period.
const BUDGET_REFILL: Duration = Duration::from_secs(10);

/// The server's side of the settings, and its defences.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Streams a client may have open at once.
    pub max_concurrent_streams: u32,
    /// Each request body's window: what a client may send before the server reads.
    pub initial_window_size: u32,
    /// The window all request bodies of the connection share.
    pub connection_window_size: u32,
    /// The largest frame payload the server accepts.
    pub max_frame_size: u32,
    /// The largest decoded header list (names, values and 32 bytes per field); a larger
    /// request is still decoded but marked [`Head::oversized`].
    pub max_header_list_size: u32,
    /// Control frames a client may send in a burst (see the module docs).
    pub max_control_frames: u32,
    /// Stream resets a client may cause in a burst (see the module docs).
    pub max_reset_streams: u32,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            max_concurrent_streams: 256,
            initial_window_size: 256 * 1024,
            connection_window_size: 1024 * 1024,
            max_frame_size: frame::DEFAULT_MAX_FRAME_SIZE,
            max_header_list_size: 16 * 1024,
            max_control_frames: 1000,
            max_reset_streams: 200,
        }
    }
}

/// What the client's bytes asked of the server.
#[derive(Debug, PartialEq, Eq)]
pub enum Event {
    /// A request head, in [`Connection::head`]. `end_stream`: no body follows.
    Request {
        /// The new stream.
        stream: u32,
        /// The request has no body.
        end_stream: bool,
    },
    /// Request body bytes. Give the window back with [`Connection::release`] once consumed.
    Data {
        /// The stream.
        stream: u32,
        /// The bytes (may be empty when only `end_stream` is news).
        data: Bytes,
        /// The last of the body.
        end_stream: bool,
    },
    /// Trailer fields ending the request body, in [`Connection::head`]'s `fields`.
    Trailers {
        /// The stream.
        stream: u32,
    },
    /// The stream is gone: the client reset it, or the server did because the client broke
    /// the protocol on it. Nothing more is sent or received on it.
    Reset {
        /// The stream.
        stream: u32,
        /// Why.
        reason: Reason,
    },
    /// Send window opened on `stream` (0: on the connection or on every stream).
    WindowOpened {
        /// The stream, or 0.
        stream: u32,
    },
    /// The client is going away: streams above `last_stream` were not processed by it.
    GoAway {
        /// The client's last processed stream (it never processes ours: always 0 here).
        last_stream: u32,
        /// Why.
        reason: Reason,
    },
}

/// A connection error: GOAWAY with `reason` was appended to the output and the connection is
/// over.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Error {
    reason: Reason,
    what: &'static str,
}

impl Error {
    /// The GOAWAY code sent.
    pub fn reason(&self) -> Reason {
        self.reason
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.reason, self.what)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HTTP/2 connection error {}: {}", self.reason, self.what)
    }
}

impl std::error::Error for Error {}

/// Where the connection is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Waiting for the client's 24-byte preface.
    Preface,
    /// The preface came; the next frame must be the client's SETTINGS.
    FirstSettings,
    /// Frames flow.
    Open,
    /// A connection error sent GOAWAY; nothing more is read.
    Closed,
}

/// A stream's state (RFC 9113 §5.1) as far as the server tracks it: idle and closed streams
/// are not in the stream list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StreamState {
    Open,
    /// The client ended its side (END_STREAM received).
    HalfClosedRemote,
    /// The server ended its side.
    HalfClosedLocal,
}

#[derive(Debug)]
struct Stream {
    id: u32,
    state: StreamState,
    /// What the server may still send (negative after the client shrank the initial window).
    send_window: i64,
    /// What the client may still send.
    recv_window: i64,
    /// The request's `content-length`, checked against the DATA it sends.
    content_length: Option<u64>,
    received: u64,
}

/// A decoded request head (or trailer section), in one buffer reused for every request: the
/// spans point into `buf`.
#[derive(Debug, Default)]
pub struct Head {
    /// The names and values the spans point into.
    pub buf: Vec<u8>,
    /// `:method`.
    pub method: Span,
    /// `:scheme` (empty for CONNECT).
    pub scheme: Span,
    /// `:authority`, if sent.
    pub authority: Option<Span>,
    /// `:path` (empty for CONNECT).
    pub path: Span,
    /// The regular fields in order; `host` from `:authority` last when no `host` came (RFC
    /// 9113 §8.3.1: they mean the same).
    pub fields: HeaderSpans,
    /// `content-length`, if sent.
    pub content_length: Option<u64>,
    /// The list was over [`Settings::max_header_list_size`]: fields were dropped, the server
    /// should answer 431.
    pub oversized: bool,
}

impl Head {
    fn clear(&mut self) {
        self.buf.clear();
        self.method = Span::default();
        self.scheme = Span::default();
        self.authority = None;
        self.path = Span::default();
        self.fields.clear();
        self.content_length = None;
        self.oversized = false;
    }

    fn push(&mut self, bytes: &[u8]) -> Span {
        let start = self.buf.len() as u32;
        self.buf.extend_from_slice(bytes);
        Span {
            start,
            end: self.buf.len() as u32,
        }
    }

    /// The bytes of `span`.
    pub fn get(&self, span: Span) -> &[u8] {
        span.get(&self.buf)
    }
}

/// What a header block being received is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BlockUse {
    /// A new stream's request head.
    Request,
    /// An open stream's trailers.
    Trailers,
    /// Decoded to keep HPACK in step, then the stream is reset with this reason (or, for
    /// `None`, the block is dropped: a stream the server already reset or refused after GOAWAY).
    Discard(Option<Reason>),
}

/// A header block split over HEADERS and CONTINUATION frames, collected until END_HEADERS.
#[derive(Debug)]
struct Block {
    stream: u32,
    end_stream: bool,
    usage: BlockUse,
    continuations: u32,
}

/// A token bucket: `capacity` events in a burst, refilled in full over [`BUDGET_REFILL`].
#[derive(Debug)]
struct Budget {
    capacity: f64,
    tokens: f64,
    last: Instant,
}

impl Budget {
    fn new(capacity: u32) -> Budget {
        let capacity = f64::from(capacity.max(1));
        Budget {
            capacity,
            tokens: capacity,
            last: Instant::now(),
        }
    }

    /// Takes one token; false when there was none left.
    fn spend(&mut self) -> bool {
        let now = Instant::now();
        let refill = now.duration_since(self.last).as_secs_f64() / BUDGET_REFILL.as_secs_f64();
        self.last = now;
        self.tokens = (self.tokens + refill * self.capacity).min(self.capacity) - 1.0;
        self.tokens >= 0.0
    }
}

/// Why handling a frame failed.
enum Fault {
    /// The stream is reset with this reason; the connection goes on.
    Stream(u32, Reason),
    /// The connection ends with GOAWAY.
    Connection(Reason, &'static str),
}

type Handled = Result<Option<Event>, Fault>;

fn conn_err(reason: Reason, what: &'static str) -> Fault {
    Fault::Connection(reason, what)
}

/// One HTTP/2 server connection's protocol state.
#[derive(Debug)]
pub struct Connection {
    settings: Settings,
    state: State,
    decoder: Decoder,
    encoder: Encoder,
    streams: Vec<Stream>,
    /// The highest stream id the client opened: lower idle ids are closed.
    last_stream: u32,
    /// After the server's graceful GOAWAY: the last stream it will process.
    goaway: Option<u32>,
    /// The client's initial stream window for what the server sends.
    peer_initial_window: u32,
    /// The client's largest frame payload.
    peer_max_frame_size: u32,
    /// The initial window of new request streams: the default until the client acknowledged
    /// the server's SETTINGS, the configured one after.
    recv_initial_window: u32,
    /// The connection's send window.
    send_window: i64,
    /// What the client may still send on the connection.
    recv_window: i64,
    block: Option<Block>,
    /// Header block fragments, when a block spans several frames.
    fragments: Vec<u8>,
    head: Head,
    /// Streams the server reset lately (a ring).
    reset: [u32; RESET_MEMORY],
    reset_next: usize,
    control_budget: Budget,
    reset_budget: Budget,
}

impl Connection {
    /// A connection with the server's `settings`; its SETTINGS frame (and the connection
    /// window's first WINDOW_UPDATE) are appended to `dst`, to send without waiting for the
    /// client's preface.
    pub fn new(settings: Settings, dst: &mut Vec<u8>) -> Connection {
        frame::write_settings(
            dst,
            &[
                (
                    setting::MAX_CONCURRENT_STREAMS,
                    settings.max_concurrent_streams,
                ),
                (setting::INITIAL_WINDOW_SIZE, settings.initial_window_size),
                (setting::MAX_FRAME_SIZE, settings.max_frame_size),
                (setting::MAX_HEADER_LIST_SIZE, settings.max_header_list_size),
            ],
        );
        let window = settings.connection_window_size.max(frame::DEFAULT_WINDOW);
        if window > frame::DEFAULT_WINDOW {
            frame::write_window_update(dst, 0, window - frame::DEFAULT_WINDOW);
        }
        Connection {
            state: State::Preface,
            decoder: Decoder::new(4096),
            encoder: Encoder::new(),
            streams: Vec::new(),
            last_stream: 0,
            goaway: None,
            peer_initial_window: frame::DEFAULT_WINDOW,
            peer_max_frame_size: frame::DEFAULT_MAX_FRAME_SIZE,
            recv_initial_window: frame::DEFAULT_WINDOW,
            send_window: i64::from(frame::DEFAULT_WINDOW),
            recv_window: i64::from(window),
            block: None,
            fragments: Vec::new(),
            head: Head::default(),
            reset: [0; RESET_MEMORY],
            reset_next: 0,
            control_budget: Budget::new(settings.max_control_frames),
            reset_budget: Budget::new(settings.max_reset_streams),
            settings,
        }
    }

    /// The request head (or trailers) of the last [`Event::Request`] ([`Event::Trailers`]).
    pub fn head(&self) -> &Head {
        &self.head
    }

    /// Streams open or half-closed.
    pub fn open_streams(&self) -> usize {
        self.streams.len()
    }

    /// Whether `stream` is open or half-closed.
    pub fn is_open(&self, stream: u32) -> bool {
        self.find(stream).is_some()
    }

    /// Whether the client may still send on `stream` (it is open and not half-closed remote).
    pub fn is_receiving(&self, stream: u32) -> bool {
        self.find(stream)
            .is_some_and(|i| self.streams[i].state != StreamState::HalfClosedRemote)
    }

    /// Whether the client's preface and first SETTINGS have arrived.
    pub fn handshake_done(&self) -> bool {
        self.state == State::Open
    }

    /// Whether a GOAWAY was sent (gracefully or for an error).
    pub fn is_going_away(&self) -> bool {
        self.goaway.is_some() || self.state == State::Closed
    }

    /// Consumes whole frames from the front of `input` until one produces an [`Event`];
    /// `Ok(None)` when `input` holds no whole frame more. Answers (SETTINGS and PING
    /// acknowledgements, resets, GOAWAY) are appended to `dst`. After an `Err` the connection
    /// is over: GOAWAY is in `dst`, and nothing more is read.
    pub fn poll(
        &mut self,
        input: &mut BytesMut,
        dst: &mut Vec<u8>,
    ) -> Result<Option<Event>, Error> {
        loop {
            match self.state {
                State::Closed => return Ok(None),
                State::Preface => {
                    let n = input.len().min(H2_PREFACE.len());
                    if input[..n] != H2_PREFACE[..n] {
                        return Err(self.fail(Reason::PROTOCOL_ERROR, "bad preface", dst));
                    }
                    if n < H2_PREFACE.len() {
                        return Ok(None);
                    }
                    input.advance(n);
                    self.state = State::FirstSettings;
                }
                State::FirstSettings | State::Open => {}
            }
            let Some(h) = FrameHeader::parse(input) else {
                return Ok(None);
            };
            if h.len > self.settings.max_frame_size {
                return Err(self.fail(Reason::FRAME_SIZE_ERROR, "frame too large", dst));
            }
            let end = frame::HEADER_LEN + h.len as usize;
            if input.len() < end {
                return Ok(None);
            }
            let handled = if h.kind == Kind::Data && self.state == State::Open {
                input.advance(frame::HEADER_LEN);
                let payload = input.split_to(h.len as usize).freeze();
                self.on_data(h, payload, dst)
            } else {
                let handled = self.on_frame(h, &input[frame::HEADER_LEN..end], dst);
                input.advance(end);
                handled
            };
            match handled {
                Ok(Some(event)) => return Ok(Some(event)),
                Ok(None) => {}
                Err(Fault::Connection(reason, what)) => return Err(self.fail(reason, what, dst)),
                Err(Fault::Stream(stream, reason)) => {
                    if let Some(event) = self.reset_stream(stream, reason, dst)? {
                        return Ok(Some(event));
                    }
                }
            }
        }
    }

    /// A stream error: RST_STREAM, and [`Event::Reset`] if the application knew the stream.
    fn reset_stream(
        &mut self,
        stream: u32,
        reason: Reason,
        dst: &mut Vec<u8>,
    ) -> Result<Option<Event>, Error> {
        if !self.reset_budget.spend() {
            return Err(self.fail(Reason::ENHANCE_YOUR_CALM, "too many stream errors", dst));
        }
        let known = self.find(stream).is_some();
        self.reset(stream, reason, dst);
        Ok(known.then_some(Event::Reset { stream, reason }))
    }

    /// Sends GOAWAY for a connection error and stops reading.
    fn fail(&mut self, reason: Reason, what: &'static str, dst: &mut Vec<u8>) -> Error {
        frame::write_goaway(dst, self.last_stream, reason);
        self.state = State::Closed;
        Error { reason, what }
    }

    fn on_frame(&mut self, h: FrameHeader, payload: &[u8], dst: &mut Vec<u8>) -> Handled {
        if let Some(block) = &self.block {
            if h.kind != Kind::Continuation || h.stream != block.stream {
                return Err(conn_err(Reason::PROTOCOL_ERROR, "header block interrupted"));
            }
        }
        if self.state == State::FirstSettings && (h.kind != Kind::Settings || h.has(flags::ACK)) {
            return Err(conn_err(Reason::PROTOCOL_ERROR, "SETTINGS must come first"));
        }
        match h.kind {
            Kind::Data => unreachable!("DATA is handled apart once the connection is open"),
            Kind::Headers => self.on_headers(h, payload),
            Kind::Continuation => self.on_continuation(h, payload),
            Kind::Priority => self.on_priority(h, payload),
            Kind::RstStream => self.on_rst_stream(h, payload),
            Kind::Settings => self.on_settings(h, payload, dst),
            Kind::Ping => self.on_ping(h, payload, dst),
            Kind::GoAway => on_goaway(h, payload),
            Kind::WindowUpdate => self.on_window_update(h, payload),
            Kind::PushPromise => Err(conn_err(
                Reason::PROTOCOL_ERROR,
                "PUSH_PROMISE from a client",
            )),
            Kind::Unknown(_) => Ok(None),
        }
    }

    /// Spends one control-frame token.
    fn spend_control(&mut self) -> Result<(), Fault> {
        if self.control_budget.spend() {
            Ok(())
        } else {
            Err(conn_err(Reason::ENHANCE_YOUR_CALM, "control frame flood"))
        }
    }

    fn on_data(&mut self, h: FrameHeader, mut payload: Bytes, dst: &mut Vec<u8>) -> Handled {
        if self.block.is_some() {
            return Err(conn_err(Reason::PROTOCOL_ERROR, "header block interrupted"));
        }
        if h.stream == 0 {
            return Err(conn_err(Reason::PROTOCOL_ERROR, "DATA on stream 0"));
        }
        let flow_len = i64::from(h.len);
        self.recv_window -= flow_len;
        if self.recv_window < 0 {
            return Err(conn_err(
                Reason::FLOW_CONTROL_ERROR,
                "connection window exceeded",
            ));
        }
        let pad = strip_padding(h, &mut payload)?;
        let end_stream = h.has(flags::END_STREAM);
        let Some(i) = self.find(h.stream) else {
            if h.stream > self.last_stream {
                return Err(conn_err(Reason::PROTOCOL_ERROR, "DATA on an idle stream"));
            }
            if !self.was_reset(h.stream) {
                return Err(conn_err(Reason::STREAM_CLOSED, "DATA on a closed stream"));
            }
            // Sent before the client saw our reset: ignored, but its window is given back.
            self.release_connection(h.len, dst);
            return Ok(None);
        };
        let s = &mut self.streams[i];
        if s.state == StreamState::HalfClosedRemote {
            self.release_connection(h.len, dst);
            return Err(Fault::Stream(h.stream, Reason::STREAM_CLOSED));
        }
        s.recv_window -= flow_len;
        if s.recv_window < 0 {
            self.release_connection(h.len, dst);
            return Err(Fault::Stream(h.stream, Reason::FLOW_CONTROL_ERROR));
        }
        s.received += payload.len() as u64;
        let length_broken = s
            .content_length
            .is_some_and(|n| s.received > n || (end_stream && s.received != n));
        if length_broken {
            self.release_connection(h.len, dst);
            return Err(Fault::Stream(h.stream, Reason::PROTOCOL_ERROR));
        }
        if payload.is_empty() && !end_stream {
            self.spend_control()?;
        }
        if pad > 0 {
            // The application never sees padding: its window comes back at once.
            self.release(h.stream, pad, dst);
        }
        if end_stream {
            self.end_remote(i);
        }
        if payload.is_empty() && !end_stream {
            return Ok(None);
        }
        Ok(Some(Event::Data {
            stream: h.stream,
            data: payload,
            end_stream,
        }))
    }

    fn on_headers(&mut self, h: FrameHeader, payload: &[u8]) -> Handled {
        let id = h.stream;
        if id == 0 {
            return Err(conn_err(Reason::PROTOCOL_ERROR, "HEADERS on stream 0"));
        }
        let mut fragment = strip_padding_slice(h, payload)?;
        let mut self_dependent = false;
        if h.has(flags::PRIORITY) {
            let Some((priority, rest)) = fragment.split_first_chunk::<5>() else {
                return Err(conn_err(
                    Reason::FRAME_SIZE_ERROR,
                    "HEADERS priority truncated",
                ));
            };
            self_dependent =
                u32::from_be_bytes([priority[0], priority[1], priority[2], priority[3]])
                    & frame::MAX_WINDOW
                    == id;
            fragment = rest;
        }
        let usage = match self.find(id) {
            Some(i) if self.streams[i].state == StreamState::HalfClosedRemote => {
                BlockUse::Discard(Some(Reason::STREAM_CLOSED))
            }
            Some(_) if !h.has(flags::END_STREAM) => BlockUse::Discard(Some(Reason::PROTOCOL_ERROR)),
            Some(_) => BlockUse::Trailers,
            None if id % 2 == 0 => {
                return Err(conn_err(
                    Reason::PROTOCOL_ERROR,
                    "even stream id from a client",
                ));
            }
            None if id <= self.last_stream => {
                if !self.was_reset(id) {
                    return Err(conn_err(
                        Reason::STREAM_CLOSED,
                        "HEADERS on a closed stream",
                    ));
                }
                BlockUse::Discard(None)
            }
            None => {
                self.last_stream = id;
                if self.goaway.is_some_and(|last| id > last) {
                    BlockUse::Discard(None)
                } else if self.streams.len() >= self.settings.max_concurrent_streams as usize {
                    BlockUse::Discard(Some(Reason::REFUSED_STREAM))
                } else {
                    BlockUse::Request
                }
            }
        };
        let usage = match usage {
            BlockUse::Request | BlockUse::Trailers if self_dependent => {
                BlockUse::Discard(Some(Reason::PROTOCOL_ERROR))
            }
            other => other,
        };
        let block = Block {
            stream: id,
            end_stream: h.has(flags::END_STREAM),
            usage,
            continuations: 0,
        };
        if h.has(flags::END_HEADERS) {
            return self.finish_block(&block, fragment);
        }
        self.check_block_size(fragment.len())?;
        self.fragments.clear();
        self.fragments.extend_from_slice(fragment);
        self.block = Some(block);
        Ok(None)
    }

    fn on_continuation(&mut self, h: FrameHeader, payload: &[u8]) -> Handled {
        let Some(block) = &mut self.block else {
            return Err(conn_err(
                Reason::PROTOCOL_ERROR,
                "CONTINUATION without HEADERS",
            ));
        };
        block.continuations += 1;
        if block.continuations > MAX_CONTINUATIONS {
            return Err(conn_err(
                Reason::ENHANCE_YOUR_CALM,
                "too many CONTINUATION frames",
            ));
        }
        if payload.is_empty() && !h.has(flags::END_HEADERS) {
            self.spend_control()?;
        }
        self.check_block_size(self.fragments.len() + payload.len())?;
        self.fragments.extend_from_slice(payload);
        if !h.has(flags::END_HEADERS) {
            return Ok(None);
        }
        let block = self.block.take().expect("checked above");
        let fragments = std::mem::take(&mut self.fragments);
        let handled = self.finish_block(&block, &fragments);
        self.fragments = fragments;
        handled
    }

    /// A header block is bounded before decoding: at twice the header list limit (HPACK's
    /// Huffman code can make a field longer than its text, never twice as long).
    fn check_block_size(&self, len: usize) -> Result<(), Fault> {
        if len > 2 * self.settings.max_header_list_size as usize {
            return Err(conn_err(
                Reason::ENHANCE_YOUR_CALM,
                "header block too large",
            ));
        }
        Ok(())
    }

    /// Decodes a complete header block and acts on it.
    fn finish_block(&mut self, block: &Block, encoded: &[u8]) -> Handled {
        let trailers = block.usage == BlockUse::Trailers;
        let verdict = self.decode(encoded, trailers)?;
        let id = block.stream;
        match block.usage {
            BlockUse::Discard(None) => Ok(None),
            BlockUse::Discard(Some(reason)) => Err(Fault::Stream(id, reason)),
            _ if verdict.is_err() => Err(Fault::Stream(id, Reason::PROTOCOL_ERROR)),
            BlockUse::Trailers => {
                let i = self.find(id).expect("trailers are for an open stream");
                let s = &self.streams[i];
                if s.content_length.is_some_and(|n| s.received != n) {
                    return Err(Fault::Stream(id, Reason::PROTOCOL_ERROR));
                }
                self.end_remote(i);
                Ok(Some(Event::Trailers { stream: id }))
            }
            BlockUse::Request => {
                if block.end_stream && self.head.content_length.is_some_and(|n| n != 0) {
                    return Err(Fault::Stream(id, Reason::PROTOCOL_ERROR));
                }
                self.streams.push(Stream {
                    id,
                    state: if block.end_stream {
                        StreamState::HalfClosedRemote
                    } else {
                        StreamState::Open
                    },
                    send_window: i64::from(self.peer_initial_window),
                    recv_window: i64::from(self.recv_initial_window),
                    content_length: self.head.content_length,
                    received: 0,
                });
                Ok(Some(Event::Request {
                    stream: id,
                    end_stream: block.end_stream,
                }))
            }
        }
    }

    /// Decodes a block into [`Connection::head`], checking the fields (RFC 9113 §8.1–8.3). A
    /// broken HPACK block is a connection error; a malformed request is `Ok(Err(..))`, a
    /// stream error for the caller. The block is always decoded to its end, so the dynamic
    /// table stays in step with the client's.
    fn decode(&mut self, block: &[u8], trailers: bool) -> Result<Result<(), Malformed>, Fault> {
        self.head.clear();
        let mut check = FieldCheck {
            head: &mut self.head,
            trailers,
            regular_seen: false,
            list_size: 0,
            max_list_size: self.settings.max_header_list_size as usize,
            malformed: None,
            host_seen: false,
        };
        let decoded = self.decoder.decode(block, |name, value| {
            check.field(name, value);
            Ok(())
        });
        if decoded.is_err() {
            return Err(conn_err(Reason::COMPRESSION_ERROR, "bad header block"));
        }
        Ok(check.finish())
    }

    fn on_priority(&mut self, h: FrameHeader, payload: &[u8]) -> Handled {
        if h.stream == 0 {
            return Err(conn_err(Reason::PROTOCOL_ERROR, "PRIORITY on stream 0"));
        }
        self.spend_control()?;
        let Ok(p) = <[u8; 5]>::try_from(payload) else {
            return Err(Fault::Stream(h.stream, Reason::FRAME_SIZE_ERROR));
        };
        if u32::from_be_bytes([p[0], p[1], p[2], p[3]]) & frame::MAX_WINDOW == h.stream {
            return Err(Fault::Stream(h.stream, Reason::PROTOCOL_ERROR));
        }
        Ok(None)
    }

    fn on_rst_stream(&mut self, h: FrameHeader, payload: &[u8]) -> Handled {
        if h.stream == 0 {
            return Err(conn_err(Reason::PROTOCOL_ERROR, "RST_STREAM on stream 0"));
        }
        let Ok(code) = <[u8; 4]>::try_from(payload) else {
            return Err(conn_err(Reason::FRAME_SIZE_ERROR, "RST_STREAM not 4 bytes"));
        };
        self.spend_control()?;
        let Some(i) = self.find(h.stream) else {
            if h.stream > self.last_stream {
                return Err(conn_err(
                    Reason::PROTOCOL_ERROR,
                    "RST_STREAM on an idle stream",
                ));
            }
            return Ok(None);
        };
        // A stream the server was still working on: rapid reset counts these.
        if !self.reset_budget.spend() {
            return Err(conn_err(
                Reason::ENHANCE_YOUR_CALM,
                "too many streams reset",
            ));
        }
        self.streams.swap_remove(i);
        Ok(Some(Event::Reset {
            stream: h.stream,
            reason: Reason(u32::from_be_bytes(code)),
        }))
    }

    fn on_settings(&mut self, h: FrameHeader, payload: &[u8], dst: &mut Vec<u8>) -> Handled {
        if h.stream != 0 {
            return Err(conn_err(Reason::PROTOCOL_ERROR, "SETTINGS on a stream"));
        }
        if h.has(flags::ACK) {
            if !payload.is_empty() {
                return Err(conn_err(
                    Reason::FRAME_SIZE_ERROR,
                    "SETTINGS ACK with a payload",
                ));
            }
            return Ok(self.settings_acknowledged());
        }
        if payload.len() % 6 != 0 {
            return Err(conn_err(
                Reason::FRAME_SIZE_ERROR,
                "SETTINGS not a multiple of 6",
            ));
        }
        self.spend_control()?;
        self.state = State::Open;
        let mut window_changed = false;
        for s in payload.chunks_exact(6) {
            let id = u16::from_be_bytes([s[0], s[1]]);
            let value = u32::from_be_bytes([s[2], s[3], s[4], s[5]]);
            match id {
                setting::HEADER_TABLE_SIZE => self.encoder.set_max_table_size(value as usize),
                setting::ENABLE_PUSH if value > 1 => {
                    return Err(conn_err(Reason::PROTOCOL_ERROR, "ENABLE_PUSH not 0 or 1"));
                }
                setting::INITIAL_WINDOW_SIZE => {
                    self.set_peer_initial_window(value)?;
                    window_changed = true;
                }
                setting::MAX_FRAME_SIZE => {
                    if !(frame::DEFAULT_MAX_FRAME_SIZE..=frame::MAX_MAX_FRAME_SIZE).contains(&value)
                    {
                        return Err(conn_err(
                            Reason::PROTOCOL_ERROR,
                            "MAX_FRAME_SIZE out of range",
                        ));
                    }
                    self.peer_max_frame_size = value;
                }
                // The rest only limit what the server would initiate (it pushes nothing) or
                // are advisory; unknown settings are ignored (§6.5.2).
                _ => {}
            }
        }
        frame::write_settings_ack(dst);
        Ok(window_changed.then_some(Event::WindowOpened { stream: 0 }))
    }

    /// The client's new initial window changes every open stream's send window by the
    /// difference (§6.9.2).
    fn set_peer_initial_window(&mut self, value: u32) -> Result<(), Fault> {
        if value > frame::MAX_WINDOW {
            return Err(conn_err(
                Reason::FLOW_CONTROL_ERROR,
                "INITIAL_WINDOW_SIZE too large",
            ));
        }
        let delta = i64::from(value) - i64::from(self.peer_initial_window);
        self.peer_initial_window = value;
        for s in &mut self.streams {
            s.send_window += delta;
            if s.send_window > i64::from(frame::MAX_WINDOW) {
                return Err(conn_err(
                    Reason::FLOW_CONTROL_ERROR,
                    "stream window overflow",
                ));
            }
        }
        Ok(())
    }

    /// The client took the server's settings: request streams get the configured window from
    /// now on, and streams it opened before get the difference.
    fn settings_acknowledged(&mut self) -> Option<Event> {
        let configured = self.settings.initial_window_size;
        let delta = i64::from(configured) - i64::from(self.recv_initial_window);
        self.recv_initial_window = configured;
        for s in &mut self.streams {
            s.recv_window += delta;
        }
        None
    }

    fn on_ping(&mut self, h: FrameHeader, payload: &[u8], dst: &mut Vec<u8>) -> Handled {
        if h.stream != 0 {
            return Err(conn_err(Reason::PROTOCOL_ERROR, "PING on a stream"));
        }
        let Ok(data) = <[u8; 8]>::try_from(payload) else {
            return Err(conn_err(Reason::FRAME_SIZE_ERROR, "PING not 8 bytes"));
        };
        if !h.has(flags::ACK) {
            self.spend_control()?;
            frame::write_ping_ack(dst, data);
        }
        Ok(None)
    }

    fn on_window_update(&mut self, h: FrameHeader, payload: &[u8]) -> Handled {
        let Ok(b) = <[u8; 4]>::try_from(payload) else {
            return Err(conn_err(
                Reason::FRAME_SIZE_ERROR,
                "WINDOW_UPDATE not 4 bytes",
            ));
        };
        let increment = i64::from(u32::from_be_bytes(b) & frame::MAX_WINDOW);
        let max = i64::from(frame::MAX_WINDOW);
        if h.stream == 0 {
            if increment == 0 {
                return Err(conn_err(Reason::PROTOCOL_ERROR, "WINDOW_UPDATE of 0"));
            }
            self.send_window += increment;
            if self.send_window > max {
                return Err(conn_err(
                    Reason::FLOW_CONTROL_ERROR,
                    "connection window overflow",
                ));
            }
            return Ok(Some(Event::WindowOpened { stream: 0 }));
        }
        let Some(i) = self.find(h.stream) else {
            if h.stream > self.last_stream {
                return Err(conn_err(
                    Reason::PROTOCOL_ERROR,
                    "WINDOW_UPDATE on an idle stream",
                ));
            }
            return Ok(None);
        };
        if increment == 0 {
            return Err(Fault::Stream(h.stream, Reason::PROTOCOL_ERROR));
        }
        let s = &mut self.streams[i];
        s.send_window += increment;
        if s.send_window > max {
            return Err(Fault::Stream(h.stream, Reason::FLOW_CONTROL_ERROR));
        }
        Ok(Some(Event::WindowOpened { stream: h.stream }))
    }

    fn find(&self, stream: u32) -> Option<usize> {
        self.streams.iter().position(|s| s.id == stream)
    }

    fn was_reset(&self, stream: u32) -> bool {
        self.reset.contains(&stream)
    }

    /// The client ended its side of stream `i`.
    fn end_remote(&mut self, i: usize) {
        let s = &mut self.streams[i];
        match s.state {
            StreamState::HalfClosedLocal => {
                self.streams.swap_remove(i);
            }
            _ => s.state = StreamState::HalfClosedRemote,
        }
    }

    /// The server ended its side of stream `i`.
    fn end_local(&mut self, i: usize) {
        let s = &mut self.streams[i];
        match s.state {
            StreamState::HalfClosedRemote => {
                self.streams.swap_remove(i);
            }
            _ => s.state = StreamState::HalfClosedLocal,
        }
    }

    fn release_connection(&mut self, n: u32, dst: &mut Vec<u8>) {
        if n > 0 {
            self.recv_window += i64::from(n);
            frame::write_window_update(dst, 0, n);
        }
    }

    /// Gives `n` bytes of window back to the client, on `stream` (while it may still send)
    /// and on the connection: call as the application consumes request body bytes.
    pub fn release(&mut self, stream: u32, n: usize, dst: &mut Vec<u8>) {
        let Ok(n) = u32::try_from(n) else { return };
        if n == 0 || self.state == State::Closed {
            return;
        }
        self.release_connection(n, dst);
        if let Some(i) = self.find(stream) {
            let s = &mut self.streams[i];
            if s.state != StreamState::HalfClosedRemote {
                s.recv_window += i64::from(n);
                frame::write_window_update(dst, stream, n);
            }
        }
    }

    /// How many body bytes `stream` may send now (both windows allowing).
    pub fn send_capacity(&self, stream: u32) -> usize {
        match self.find(stream) {
            Some(i) => self.streams[i].send_window.min(self.send_window).max(0) as usize,
            None => 0,
        }
    }

    /// Starts a header block on `stream`: a response head (call [`HeaderBlock::status`]
    /// first) or trailers. `None` if the stream is gone or the server already ended its side:
    /// a block, once encoded, must be sent (the client's HPACK table must see it).
    pub fn headers<'a>(&'a mut self, stream: u32, dst: &'a mut Vec<u8>) -> Option<HeaderBlock<'a>> {
        let i = self.find(stream)?;
        if self.streams[i].state == StreamState::HalfClosedLocal || self.state == State::Closed {
            return None;
        }
        let start = dst.len();
        frame::write_header(dst, 0, Kind::Headers, 0, stream);
        self.encoder.begin(dst);
        Some(HeaderBlock {
            conn: self,
            dst,
            start,
            stream,
        })
    }

    /// Sends as much of `data` as the windows allow, in frames of the client's largest size,
    /// and returns how much that was. `end_stream` ends the stream with the last byte, once
    /// all of `data` fits (an empty `data` with `end_stream` always does).
    pub fn send_data(
        &mut self,
        stream: u32,
        data: &[u8],
        end_stream: bool,
        dst: &mut Vec<u8>,
    ) -> usize {
        let Some(i) = self.find(stream) else { return 0 };
        if self.streams[i].state == StreamState::HalfClosedLocal || self.state == State::Closed {
            return 0;
        }
        let n = data.len().min(self.send_capacity(stream));
        let end = end_stream && n == data.len();
        let max = self.peer_max_frame_size as usize;
        let mut chunks = data[..n].chunks(max).peekable();
        if n == 0 && end {
            frame::write_data(dst, stream, &[], true);
        }
        while let Some(chunk) = chunks.next() {
            frame::write_data(dst, stream, chunk, end && chunks.peek().is_none());
        }
        self.streams[i].send_window -= n as i64;
        self.send_window -= n as i64;
        if end {
            self.end_local(i);
        }
        n
    }

    /// Resets `stream` with `reason` (nothing is sent for a stream already gone). Frames the
    /// client sent before it sees the reset are ignored.
    pub fn reset(&mut self, stream: u32, reason: Reason, dst: &mut Vec<u8>) {
        if self.state == State::Closed {
            return;
        }
        frame::write_rst_stream(dst, stream, reason);
        if let Some(i) = self.find(stream) {
            self.streams.swap_remove(i);
        }
        self.reset[self.reset_next] = stream;
        self.reset_next = (self.reset_next + 1) % RESET_MEMORY;
    }

    /// Graceful shutdown: GOAWAY naming the last stream the server will process; the streams
    /// opened so far go on, new ones are ignored.
    pub fn go_away(&mut self, dst: &mut Vec<u8>) {
        if self.goaway.is_none() && self.state != State::Closed {
            self.goaway = Some(self.last_stream);
            frame::write_goaway(dst, self.last_stream, Reason::NO_ERROR);
        }
    }

    /// Ends the connection with GOAWAY `reason` (for a cause the caller found, such as a
    /// timeout).
    pub fn abort(&mut self, reason: Reason, dst: &mut Vec<u8>) {
        if self.state != State::Closed {
            self.fail(reason, "ended by the server", dst);
        }
    }
}

/// A header block being written (see [`Connection::headers`]): fields go straight into the
/// output buffer; [`HeaderBlock::finish`] fills in the frame header.
#[derive(Debug)]
pub struct HeaderBlock<'a> {
    conn: &'a mut Connection,
    dst: &'a mut Vec<u8>,
    /// Where the HEADERS frame header is in `dst`.
    start: usize,
    stream: u32,
}

impl HeaderBlock<'_> {
    /// `:status`: the first field of a response head.
    pub fn status(&mut self, status: u16) {
        self.conn.encoder.status(status, self.dst);
    }

    /// One field; `name` must be lowercase. Whether the client remembers it follows
    /// [`Indexing::for_name`].
    pub fn field(&mut self, name: &[u8], value: &[u8]) {
        let indexing = Indexing::for_name(name);
        self.conn.encoder.field(name, value, indexing, self.dst);
    }

    /// Completes the block (split into CONTINUATION frames if it is larger than the client's
    /// frame size), ending the stream with it if `end_stream`.
    pub fn finish(self, end_stream: bool) {
        let conn = self.conn;
        let dst = self.dst;
        let i = conn
            .find(self.stream)
            .expect("checked by Connection::headers");
        let flags = if end_stream { flags::END_STREAM } else { 0 };
        let block_len = dst.len() - self.start - frame::HEADER_LEN;
        let max = conn.peer_max_frame_size as usize;
        if block_len <= max {
            let len = (block_len as u32).to_be_bytes();
            dst[self.start..self.start + 3].copy_from_slice(&len[1..]);
            dst[self.start + 4] = flags | flags::END_HEADERS;
        } else {
            let block = dst.split_off(self.start + frame::HEADER_LEN);
            dst.truncate(self.start);
            let mut chunks = block.chunks(max).peekable();
            let mut kind = Kind::Headers;
            let mut first_flags = flags;
            while let Some(chunk) = chunks.next() {
                let last = if chunks.peek().is_none() {
                    flags::END_HEADERS
                } else {
                    0
                };
                frame::write_header(dst, chunk.len(), kind, first_flags | last, self.stream);
                dst.extend_from_slice(chunk);
                kind = Kind::Continuation;
                first_flags = 0;
            }
        }
        if end_stream {
            conn.end_local(i);
        }
    }
}

/// Why a request is malformed (RFC 9113 §8.1.1): a stream error `PROTOCOL_ERROR`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Malformed(&'static str);

/// Checks each decoded field and stores the ones to keep in the [`Head`].
struct FieldCheck<'a> {
    head: &'a mut Head,
    trailers: bool,
    regular_seen: bool,
    list_size: usize,
    max_list_size: usize,
    malformed: Option<Malformed>,
    host_seen: bool,
}

impl FieldCheck<'_> {
    fn field(&mut self, name: &[u8], value: &[u8]) {
        if self.malformed.is_some() {
            return;
        }
        if let Err(m) = self.check(name, value) {
            self.malformed = Some(m);
        }
    }

    fn check(&mut self, name: &[u8], value: &[u8]) -> Result<(), Malformed> {
        // A pass with no early exit over the value (it vectorizes) finds the rare control
        // byte; only then are the forbidden ones looked for.
        let controls = value.iter().fold(false, |seen, &b| seen | (b <= b'\r'));
        if controls && value.iter().any(|&b| matches!(b, 0 | b'\n' | b'\r')) {
            return Err(Malformed("forbidden byte in a field value"));
        }
        if matches!(value.first(), Some(b' ' | b'\t')) || matches!(value.last(), Some(b' ' | b'\t'))
        {
            return Err(Malformed("whitespace around a field value"));
        }
        self.list_size += name.len() + value.len() + 32;
        if self.list_size > self.max_list_size {
            self.head.oversized = true;
        }
        if let Some(pseudo) = name.strip_prefix(b":") {
            return self.pseudo(pseudo, value);
        }
        self.regular_seen = true;
        if name.is_empty()
            || !name
                .iter()
                .fold(true, |ok, &b| ok & LOWER_TOKEN[b as usize])
        {
            return Err(Malformed("invalid field name"));
        }
        match name {
            b"connection" | b"keep-alive" | b"proxy-connection" | b"transfer-encoding"
            | b"upgrade" => {
                return Err(Malformed("connection-specific field"));
            }
            b"te" if value != b"trailers" => return Err(Malformed("te other than trailers")),
            b"content-length" => {
                let n = parse_length(value).ok_or(Malformed("invalid content-length"))?;
                if self.head.content_length.is_some_and(|m| m != n) {
                    return Err(Malformed("conflicting content-length"));
                }
                self.head.content_length = Some(n);
            }
            b"host" => self.host_seen = true,
            _ => {}
        }
        if !self.head.oversized {
            let name = self.head.push(name);
            let value = self.head.push(value);
            self.head.fields.push(HeaderSpan { name, value });
        }
        Ok(())
    }

    fn pseudo(&mut self, name: &[u8], value: &[u8]) -> Result<(), Malformed> {
        if self.trailers {
            return Err(Malformed("pseudo-header in trailers"));
        }
        if self.regular_seen {
            return Err(Malformed("pseudo-header after a regular field"));
        }
        let head = &mut *self.head;
        let slot = match name {
            b"method" => &mut head.method,
            b"scheme" => &mut head.scheme,
            b"path" => &mut head.path,
            b"authority" => {
                if head.authority.is_some() {
                    return Err(Malformed("repeated pseudo-header"));
                }
                let span = head.push(value);
                head.authority = Some(span);
                return Ok(());
            }
            _ => return Err(Malformed("unknown pseudo-header")),
        };
        if *slot != Span::default() {
            return Err(Malformed("repeated pseudo-header"));
        }
        if value.is_empty() {
            return Err(Malformed("empty pseudo-header"));
        }
        let start = head.buf.len() as u32;
        head.buf.extend_from_slice(value);
        *slot = Span {
            start,
            end: head.buf.len() as u32,
        };
        Ok(())
    }

    /// The checks on the whole list: the pseudo-headers a request needs (§8.3.1), and `host`
    /// from `:authority`.
    fn finish(self) -> Result<(), Malformed> {
        if let Some(m) = self.malformed {
            return Err(m);
        }
        if self.trailers {
            return Ok(());
        }
        let head = self.head;
        let empty = Span::default();
        if head.method == empty {
            return Err(Malformed("no :method"));
        }
        if head.get(head.method) == b"CONNECT" {
            if head.scheme != empty || head.path != empty || head.authority.is_none() {
                return Err(Malformed("CONNECT needs :authority only"));
            }
        } else if head.scheme == empty || head.path == empty {
            return Err(Malformed("no :scheme or :path"));
        }
        if let (Some(authority), false, false) = (head.authority, self.host_seen, head.oversized) {
            let name = head.push(b"host");
            head.fields.push(HeaderSpan {
                name,
                value: authority,
            });
        }
        Ok(())
    }
}

/// A `content-length` value: digits only.
fn parse_length(value: &[u8]) -> Option<u64> {
    if value.is_empty() || value.len() > 19 || !value.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(value.iter().fold(0, |n, &d| n * 10 + u64::from(d - b'0')))
}

/// Bytes allowed in an HTTP/2 field name: token characters (RFC 9110 §5.6.2) except
/// uppercase letters.
const LOWER_TOKEN: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = c.is_ascii_lowercase()
            || c.is_ascii_digit()
            || matches!(
                c,
                b'!' | b'#'
                    | b'$'
                    | b'%'
                    | b'&'
                    | b'\''
                    | b'*'
                    | b'+'
                    | b'-'
                    | b'.'
                    | b'^'
                    | b'_'
                    | b'`'
                    | b'|'
                    | b'~'
            );
        b += 1;
    }
    t
};

/// Removes the padding of a padded DATA frame; returns how many bytes went (length byte
/// included).
fn strip_padding(h: FrameHeader, payload: &mut Bytes) -> Result<usize, Fault> {
    if !h.has(flags::PADDED) {
        return Ok(0);
    }
    let kept = strip_padding_slice(h, payload)?.len();
    let removed = payload.len() - kept;
    payload.advance(1);
    payload.truncate(kept);
    Ok(removed)
}

/// The payload of a DATA or HEADERS frame without its padding.
fn strip_padding_slice(h: FrameHeader, payload: &[u8]) -> Result<&[u8], Fault> {
    if !h.has(flags::PADDED) {
        return Ok(payload);
    }
    let Some((&pad, rest)) = payload.split_first() else {
        return Err(conn_err(
            Reason::FRAME_SIZE_ERROR,
            "padded frame without pad length",
        ));
    };
    match rest.len().checked_sub(usize::from(pad)) {
        Some(kept) => Ok(&rest[..kept]),
        None => Err(conn_err(
            Reason::PROTOCOL_ERROR,
            "padding longer than the payload",
        )),
    }
}

fn on_goaway(h: FrameHeader, payload: &[u8]) -> Handled {
    if h.stream != 0 {
        return Err(conn_err(Reason::PROTOCOL_ERROR, "GOAWAY on a stream"));
    }
    let Some((last, rest)) = payload.split_first_chunk::<4>() else {
        return Err(conn_err(Reason::FRAME_SIZE_ERROR, "GOAWAY too short"));
    };
    let Some(code) = rest.first_chunk::<4>() else {
        return Err(conn_err(Reason::FRAME_SIZE_ERROR, "GOAWAY too short"));
    };
    Ok(Some(Event::GoAway {
        last_stream: u32::from_be_bytes(*last) & frame::MAX_WINDOW,
        reason: Reason(u32::from_be_bytes(*code)),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    const GET: [u8; 6] = [0x82, 0x86, 0x84, 0x41, 0x01, b't'];
    const POST: [u8; 6] = [0x83, 0x86, 0x84, 0x41, 0x01, b't'];

    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let mut f = Vec::new();
        frame::write_header(&mut f, payload.len(), Kind::from_byte(kind), flags, stream);
        f.extend_from_slice(payload);
        f
    }

    fn headers(stream: u32, flags: u8, block: &[u8]) -> Vec<u8> {
        frame(0x1, flags | flags::END_HEADERS, stream, block)
    }

    fn data(stream: u32, flags: u8, payload: &[u8]) -> Vec<u8> {
        frame(0x0, flags, stream, payload)
    }

    /// The frames in `out`, as (header, payload).
    fn frames(out: &[u8]) -> Vec<(FrameHeader, Vec<u8>)> {
        let mut rest = out;
        let mut all = Vec::new();
        while let Some(h) = FrameHeader::parse(rest) {
            let end = frame::HEADER_LEN + h.len as usize;
            all.push((h, rest[frame::HEADER_LEN..end].to_vec()));
            rest = &rest[end..];
        }
        assert!(rest.is_empty(), "a partial frame in the output");
        all
    }

    /// A connection past the preface and SETTINGS exchange, its output cleared.
    fn open(settings: Settings) -> Connection {
        let mut out = Vec::new();
        let mut conn = Connection::new(settings, &mut out);
        let mut input = BytesMut::from(&H2_PREFACE[..]);
        input.extend_from_slice(&frame(0x4, 0, 0, &[]));
        input.extend_from_slice(&frame(0x4, flags::ACK, 0, &[]));
        out.clear();
        assert_eq!(conn.poll(&mut input, &mut out), Ok(None));
        assert_eq!(frames(&out)[0].0.kind, Kind::Settings, "SETTINGS ACK");
        assert!(input.is_empty());
        conn
    }

    /// Feeds `bytes`, collecting every event and the output until the input runs dry or the
    /// connection fails.
    fn run(conn: &mut Connection, bytes: &[u8]) -> (Vec<Event>, Vec<u8>, Option<Error>) {
        let mut input = BytesMut::from(bytes);
        let mut out = Vec::new();
        let mut events = Vec::new();
        loop {
            match conn.poll(&mut input, &mut out) {
                Ok(Some(e)) => events.push(e),
                Ok(None) => return (events, out, None),
                Err(e) => return (events, out, Some(e)),
            }
        }
    }

    fn goaway_code(out: &[u8]) -> Option<Reason> {
        frames(out)
            .iter()
            .find(|(h, _)| h.kind == Kind::GoAway)
            .map(|(_, p)| Reason(u32::from_be_bytes(p[4..8].try_into().unwrap())))
    }

    fn rst_code(out: &[u8], stream: u32) -> Option<Reason> {
        frames(out)
            .iter()
            .find(|(h, _)| h.kind == Kind::RstStream && h.stream == stream)
            .map(|(_, p)| Reason(u32::from_be_bytes(p[..4].try_into().unwrap())))
    }

    fn decode_block(block: &[u8]) -> Vec<(String, String)> {
        let mut fields = Vec::new();
        Decoder::new(4096)
            .decode(block, |n, v| {
                let s = |b: &[u8]| String::from_utf8(b.to_vec()).unwrap();
                fields.push((s(n), s(v)));
                Ok(())
            })
            .unwrap();
        fields
    }

    #[test]
    fn new_connection_announces_its_settings_and_window() {
        let mut out = Vec::new();
        let _ = Connection::new(Settings::default(), &mut out);
        let f = frames(&out);
        assert_eq!(f[0].0.kind, Kind::Settings);
        assert_eq!(f[0].1.len(), 24);
        assert_eq!(f[1].0.kind, Kind::WindowUpdate);
        assert_eq!(f[1].1, (1024 * 1024 - 65_535u32).to_be_bytes());
    }

    #[test]
    fn get_request_and_response() {
        let mut conn = open(Settings::default());
        let (events, _, err) = run(&mut conn, &headers(1, flags::END_STREAM, &GET));
        assert_eq!(err, None);
        assert_eq!(
            events,
            [Event::Request {
                stream: 1,
                end_stream: true
            }]
        );
        let head = conn.head();
        assert_eq!(head.get(head.method), b"GET");
        assert_eq!(head.get(head.scheme), b"http");
        assert_eq!(head.get(head.path), b"/");
        assert_eq!(head.fields.len(), 1);
        assert_eq!(head.get(head.fields[0].name), b"host");
        assert_eq!(head.get(head.fields[0].value), b"t");

        let mut out = Vec::new();
        let mut block = conn.headers(1, &mut out).unwrap();
        block.status(200);
        block.field(b"content-type", b"text/plain");
        block.finish(false);
        assert_eq!(conn.send_data(1, b"Hello", true, &mut out), 5);
        assert_eq!(conn.open_streams(), 0, "both sides ended");
        let f = frames(&out);
        assert_eq!(f[0].0.kind, Kind::Headers);
        assert_eq!(f[0].0.flags, flags::END_HEADERS);
        assert_eq!(
            decode_block(&f[0].1),
            [
                (":status".into(), "200".into()),
                ("content-type".into(), "text/plain".into())
            ]
        );
        assert_eq!((f[1].0.kind, f[1].0.flags), (Kind::Data, flags::END_STREAM));
        assert_eq!(f[1].1, b"Hello");
    }

    /// The same small exchange, whole and split at every byte boundary, gives the same
    /// events and output.
    #[test]
    fn input_split_at_every_byte() {
        let mut bytes = H2_PREFACE.to_vec();
        bytes.extend(frame(0x4, 0, 0, &[0, 4, 0, 0, 0, 10]));
        bytes.extend(frame(0x6, 0, 0, &[1; 8]));
        bytes.extend(frame(0x1, flags::PADDED, 1, &[2, 0x83, 0x86, 0, 0]));
        bytes.extend(frame(0x9, flags::END_HEADERS, 1, &[0x84, 0x41, 0x01, b't']));
        bytes.extend(data(1, 0, b"abc"));
        bytes.extend(data(1, flags::END_STREAM | flags::PADDED, &[1, b'd', 0]));
        let whole = {
            let mut out = Vec::new();
            let mut conn = Connection::new(Settings::default(), &mut out);
            let (events, out, err) = run(&mut conn, &bytes);
            assert_eq!(err, None);
            (events, out)
        };
        assert_eq!(whole.0.len(), 4, "{:?}", whole.0);
        assert_eq!(
            whole.0[3],
            Event::Data {
                stream: 1,
                data: Bytes::from_static(b"d"),
                end_stream: true
            }
        );
        for split in 1..bytes.len() {
            let mut out = Vec::new();
            let mut conn = Connection::new(Settings::default(), &mut out);
            out.clear();
            let mut input = BytesMut::new();
            let mut events = Vec::new();
            for part in [&bytes[..split], &bytes[split..]] {
                input.extend_from_slice(part);
                while let Some(e) = conn.poll(&mut input, &mut out).unwrap() {
                    events.push(e);
                }
            }
            assert_eq!(events, whole.0, "split at {split}");
            assert_eq!(out, whole.1, "split at {split}");
        }
    }

    #[test]
    fn request_body_flow_control() {
        let mut conn = open(Settings {
            initial_window_size: 10,
            ..Settings::default()
        });
        let mut bytes = headers(1, 0, &POST);
        bytes.extend(data(1, 0, b"0123456789"));
        let (events, _, err) = run(&mut conn, &bytes);
        assert_eq!((events.len(), err), (2, None));
        let (_, out, err) = run(&mut conn, &data(1, 0, b"x"));
        assert_eq!(err, None);
        assert_eq!(rst_code(&out, 1), Some(Reason::FLOW_CONTROL_ERROR));

        let mut bytes = headers(3, 0, &POST);
        bytes.extend(data(3, 0, b"0123456789"));
        run(&mut conn, &bytes);
        let mut out = Vec::new();
        conn.release(3, 10, &mut out);
        let f = frames(&out);
        assert_eq!((f[0].0.stream, f[1].0.stream), (0, 3));
        let (events, _, err) = run(&mut conn, &data(3, flags::END_STREAM, b"0123456789"));
        assert_eq!((events.len(), err), (1, None));
    }

    #[test]
    fn response_body_waits_for_window() {
        let mut conn = open(Settings::default());
        // The client's initial window: 3 bytes per stream.
        run(&mut conn, &frame(0x4, 0, 0, &[0, 4, 0, 0, 0, 3]));
        run(&mut conn, &headers(1, flags::END_STREAM, &GET));
        let mut out = Vec::new();
        assert_eq!(conn.send_capacity(1), 3);
        assert_eq!(conn.send_data(1, b"Hello", true, &mut out), 3);
        assert_eq!(frames(&out)[0].0.flags, 0, "not the end yet");
        // SETTINGS shrinks the window below zero, WINDOW_UPDATE brings it back.
        let (events, _, _) = run(&mut conn, &frame(0x4, 0, 0, &[0, 4, 0, 0, 0, 1]));
        assert_eq!(events, [Event::WindowOpened { stream: 0 }]);
        assert_eq!(conn.send_capacity(1), 0);
        let (events, _, _) = run(&mut conn, &frame(0x8, 0, 1, &4u32.to_be_bytes()));
        assert_eq!(events, [Event::WindowOpened { stream: 1 }]);
        out.clear();
        assert_eq!(conn.send_data(1, b"lo", true, &mut out), 2);
        assert_eq!(frames(&out)[0].0.flags, flags::END_STREAM);
        assert!(!conn.is_open(1));
    }

    #[test]
    fn large_header_blocks_go_out_in_continuations() {
        let mut conn = open(Settings::default());
        run(&mut conn, &headers(1, flags::END_STREAM, &GET));
        let mut out = Vec::new();
        // `~` takes 13 bits in HPACK's Huffman code: the block stays over 32 KiB.
        let long = vec![b'~'; 40_000];
        let mut block = conn.headers(1, &mut out).unwrap();
        block.status(200);
        block.field(b"x-long", &long);
        block.finish(true);
        let f = frames(&out);
        let kinds: Vec<_> = f.iter().map(|(h, _)| (h.kind, h.flags)).collect();
        assert_eq!(
            kinds,
            [
                (Kind::Headers, flags::END_STREAM),
                (Kind::Continuation, 0),
                (Kind::Continuation, flags::END_HEADERS)
            ]
        );
        let block: Vec<u8> = f.iter().flat_map(|(_, p)| p.clone()).collect();
        assert_eq!(decode_block(&block)[1].1.len(), 40_000);
    }

    #[test]
    fn malformed_requests_reset_the_stream() {
        let cases: [&[u8]; 6] = [
            &[0x82, 0x86, 0x41, 0x01, b't'],                   // no :path
            &[0x82, 0x86, 0x84, 0x40, 1, b'A', 1, b'b'],       // uppercase name
            &[0x82, 0x86, 0x84, 0x40, 1, b'a', 1, b'b', 0x82], // pseudo after regular
            &[0x82, 0x86, 0x84, 0x40, 2, b't', b'e', 1, b'x'], // te: x
            &[0x82, 0x86, 0x84, 0x40, 3, b':', b'x', b'y', 0], // unknown pseudo
            &[0x82, 0x82, 0x86, 0x84],                         // repeated :method
        ];
        let mut conn = open(Settings::default());
        for (i, block) in cases.iter().enumerate() {
            let id = 1 + 2 * i as u32;
            let (events, out, err) = run(&mut conn, &headers(id, flags::END_STREAM, block));
            assert_eq!((events, err), (vec![], None), "case {i}");
            assert_eq!(rst_code(&out, id), Some(Reason::PROTOCOL_ERROR), "case {i}");
        }
        // The connection still serves.
        let (events, _, _) = run(&mut conn, &headers(99, flags::END_STREAM, &GET));
        assert_eq!(events.len(), 1);
    }

    #[test]
    fn content_length_must_match_the_data() {
        let mut conn = open(Settings::default());
        let mut block = POST.to_vec();
        block.extend([0x5c, 1, b'3']); // content-length: 3 (static name 28)
        let mut bytes = headers(1, 0, &block);
        bytes.extend(data(1, flags::END_STREAM, b"ab"));
        let (events, out, err) = run(&mut conn, &bytes);
        assert_eq!(err, None);
        assert_eq!(
            events[1],
            Event::Reset {
                stream: 1,
                reason: Reason::PROTOCOL_ERROR
            }
        );
        assert_eq!(rst_code(&out, 1), Some(Reason::PROTOCOL_ERROR));
        assert_eq!(conn.open_streams(), 0);
    }

    #[test]
    fn trailers_end_the_body() {
        let mut conn = open(Settings::default());
        let mut bytes = headers(1, 0, &POST);
        bytes.extend(data(1, 0, b"ab"));
        bytes.extend(headers(1, flags::END_STREAM, &[0x40, 1, b'x', 1, b'y']));
        let (events, _, err) = run(&mut conn, &bytes);
        assert_eq!(err, None);
        assert_eq!(events[2], Event::Trailers { stream: 1 });
        assert_eq!(conn.head().get(conn.head().fields[0].name), b"x");
        // Trailers without END_STREAM are malformed.
        let mut bytes = headers(3, 0, &POST);
        bytes.extend(headers(3, 0, &[0x40, 1, b'x', 1, b'y']));
        let (_, out, _) = run(&mut conn, &bytes);
        assert_eq!(rst_code(&out, 3), Some(Reason::PROTOCOL_ERROR));
    }

    #[test]
    fn connection_errors_send_goaway() {
        let cases: Vec<(Vec<u8>, Reason)> = vec![
            (data(1, 0, b"x"), Reason::PROTOCOL_ERROR), // idle stream
            (headers(2, 0, &GET), Reason::PROTOCOL_ERROR), // even id
            (frame(0x9, 0, 1, &[]), Reason::PROTOCOL_ERROR), // lone CONTINUATION
            (frame(0x6, 0, 0, &[0; 7]), Reason::FRAME_SIZE_ERROR),
            (frame(0x4, 0, 0, &[0; 5]), Reason::FRAME_SIZE_ERROR),
            (
                frame(0x4, 0, 0, &[0, 2, 0, 0, 0, 2]),
                Reason::PROTOCOL_ERROR,
            ),
            (
                frame(0x4, 0, 0, &[0, 4, 0x80, 0, 0, 0]),
                Reason::FLOW_CONTROL_ERROR,
            ),
            (frame(0x8, 0, 0, &[0; 4]), Reason::PROTOCOL_ERROR),
            (
                frame(0x8, 0, 0, &0x7fff_ffffu32.to_be_bytes()),
                Reason::FLOW_CONTROL_ERROR,
            ),
            (frame(0x5, 0, 1, &[0; 4]), Reason::PROTOCOL_ERROR),
            (frame(0x3, 0, 1, &[0; 4]), Reason::PROTOCOL_ERROR), // RST on idle
            (
                frame(0x1, flags::END_HEADERS, 1, &[0xff; 3]),
                Reason::COMPRESSION_ERROR,
            ),
            (data(0, 0, &[0; 20_000]), Reason::FRAME_SIZE_ERROR),
        ];
        for (i, (bytes, reason)) in cases.into_iter().enumerate() {
            let mut conn = open(Settings::default());
            let (_, out, err) = run(&mut conn, &bytes);
            assert_eq!(err.map(|e| e.reason()), Some(reason), "case {i}");
            assert_eq!(goaway_code(&out), Some(reason), "case {i}");
            assert_eq!(
                conn.poll(&mut BytesMut::from(&bytes[..]), &mut Vec::new()),
                Ok(None)
            );
        }
    }

    #[test]
    fn header_block_must_not_be_interrupted() {
        let mut conn = open(Settings::default());
        let mut bytes = frame(0x1, flags::END_STREAM, 1, &GET[..3]);
        bytes.extend(frame(0x6, 0, 0, &[0; 8]));
        let (_, out, _) = run(&mut conn, &bytes);
        assert_eq!(goaway_code(&out), Some(Reason::PROTOCOL_ERROR));
    }

    #[test]
    fn a_bad_preface_and_a_missing_settings_are_connection_errors() {
        let mut out = Vec::new();
        let mut conn = Connection::new(Settings::default(), &mut out);
        let (_, out, err) = run(&mut conn, b"GET / HTTP/1.1\r\n");
        assert_eq!(err.map(|e| e.reason()), Some(Reason::PROTOCOL_ERROR));
        assert_eq!(goaway_code(&out), Some(Reason::PROTOCOL_ERROR));

        let mut out = Vec::new();
        let mut conn = Connection::new(Settings::default(), &mut out);
        let mut bytes = H2_PREFACE.to_vec();
        bytes.extend(frame(0x6, 0, 0, &[0; 8]));
        let (_, _, err) = run(&mut conn, &bytes);
        assert_eq!(err.map(|e| e.reason()), Some(Reason::PROTOCOL_ERROR));
    }

    #[test]
    fn closed_and_reset_streams() {
        let mut conn = open(Settings::default());
        run(&mut conn, &headers(1, flags::END_STREAM, &GET));
        let mut out = Vec::new();
        conn.headers(1, &mut out).unwrap().status(204);
        let mut block = conn.headers(1, &mut out).unwrap();
        block.status(204);
        block.finish(true);
        // Frames after both sides ended: STREAM_CLOSED.
        let (_, out, _) = run(&mut conn, &data(1, 0, b"x"));
        assert_eq!(goaway_code(&out), Some(Reason::STREAM_CLOSED));

        // Frames on a stream the server reset are ignored (their window comes back).
        let mut conn = open(Settings::default());
        run(&mut conn, &headers(1, 0, &POST));
        conn.reset(1, Reason::CANCEL, &mut Vec::new());
        let (events, out, err) = run(&mut conn, &data(1, 0, b"xyz"));
        assert_eq!((events, err), (vec![], None));
        assert_eq!(frames(&out)[0].0.kind, Kind::WindowUpdate);
    }

    #[test]
    fn concurrent_stream_limit_refuses_streams() {
        let mut conn = open(Settings {
            max_concurrent_streams: 1,
            ..Settings::default()
        });
        let mut bytes = headers(1, 0, &POST);
        bytes.extend(headers(3, 0, &POST));
        let (events, out, err) = run(&mut conn, &bytes);
        assert_eq!((events.len(), err), (1, None));
        assert_eq!(rst_code(&out, 3), Some(Reason::REFUSED_STREAM));
    }

    #[test]
    fn graceful_goaway_ignores_later_streams() {
        let mut conn = open(Settings::default());
        run(&mut conn, &headers(1, 0, &POST));
        let mut out = Vec::new();
        conn.go_away(&mut out);
        assert_eq!(goaway_code(&out), Some(Reason::NO_ERROR));
        assert_eq!(&frames(&out)[0].1[..4], &1u32.to_be_bytes());
        let (events, _, err) = run(&mut conn, &headers(3, flags::END_STREAM, &GET));
        assert_eq!((events, err), (vec![], None));
        let (events, _, _) = run(&mut conn, &data(1, flags::END_STREAM, b""));
        assert_eq!(events.len(), 1, "stream 1 goes on");
    }

    #[test]
    fn ping_is_answered_and_floods_are_stopped() {
        let mut conn = open(Settings {
            max_control_frames: 3,
            ..Settings::default()
        });
        let (_, out, _) = run(&mut conn, &frame(0x6, 0, 0, &[7; 8]));
        assert_eq!(
            frames(&out)[0],
            (FrameHeader::parse(&out).unwrap(), vec![7; 8])
        );
        assert_eq!(frames(&out)[0].0.flags, flags::ACK);
        let pings: Vec<u8> = (0..3).flat_map(|_| frame(0x6, 0, 0, &[0; 8])).collect();
        let (_, out, err) = run(&mut conn, &pings);
        assert_eq!(err.map(|e| e.reason()), Some(Reason::ENHANCE_YOUR_CALM));
        assert_eq!(goaway_code(&out), Some(Reason::ENHANCE_YOUR_CALM));
    }

    #[test]
    fn rapid_reset_and_continuation_floods_are_stopped() {
        let mut conn = open(Settings {
            max_reset_streams: 5,
            ..Settings::default()
        });
        let bytes: Vec<u8> = (0..10u32)
            .flat_map(|i| {
                let mut f = headers(1 + 2 * i, 0, &POST);
                f.extend(frame(0x3, 0, 1 + 2 * i, &8u32.to_be_bytes()));
                f
            })
            .collect();
        let (_, _, err) = run(&mut conn, &bytes);
        assert_eq!(err.map(|e| e.reason()), Some(Reason::ENHANCE_YOUR_CALM));

        let mut conn = open(Settings::default());
        let mut bytes = frame(0x1, 0, 1, &GET);
        bytes.extend((0..100).flat_map(|_| frame(0x9, 0, 1, &[])));
        let (_, _, err) = run(&mut conn, &bytes);
        assert_eq!(err.map(|e| e.reason()), Some(Reason::ENHANCE_YOUR_CALM));
    }
}
