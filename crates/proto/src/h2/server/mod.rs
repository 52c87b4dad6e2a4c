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
//! (SETTINGS, PING, PRIORITY, RST_STREAM, GOAWAY, empty DATA and CONTINUATION frames, frames
//! of unknown types, header blocks for streams that are not served, DATA on streams the server
//! reset (each costs a WINDOW_UPDATE for its connection window), and WINDOW_UPDATEs beyond
//! those the server's DATA earned: two per frame sent and one per KiB) and a budget of
//! stream resets (streams it resets while the server still works on them: rapid reset,
//! CVE-2023-44487; and streams the server must reset because the client broke the protocol on
//! them: "MadeYouReset"; a stream refused over `max_concurrent_streams` counts there only
//! past a run of that many refusals with no stream taken between them, an honest client's race
//! with the limit, and in the control budget always). Both refill over ten seconds; a client that spends either gets GOAWAY
//! `ENHANCE_YOUR_CALM`. A header block is bounded in bytes and in CONTINUATION frames.
//!
//! # Layout
//!
//! This module holds the [`Connection`] itself, its [`Settings`], [`Event`]s and [`Error`], and
//! [`poll`](Connection::poll), which cuts the input into frames. The rest is split by concern:
//! `receive` has a handler per frame type, `head` checks and stores a decoded request head,
//! `flow` does the flow-control windows, `send` writes response heads and bodies, `stream`
//! keeps the stream table and `budget` the token buckets behind the defences.

mod budget;
mod flow;
mod head;
mod receive;
mod send;
mod stream;
#[cfg(test)]
mod testing;

use std::fmt;

use bytes::{Buf, Bytes, BytesMut};

use super::frame::{self, setting, FrameHeader, Kind, Reason};
use super::hpack::{Decoder, Encoder};
use crate::H2_PREFACE;
use budget::Budget;
pub use head::Head;
use receive::Block;
pub use send::HeaderBlock;
use stream::{Stream, StreamState};

/// How many streams the server remembers having reset, to ignore the frames the client sent
/// before it saw the reset (RFC 9113 §5.1, "closed"), rather than take them for frames on a
/// closed stream (a connection error): the most streams a client may have open, but at least
/// as many as a client opens at once before it knows that limit (the RFC suggests 100).
const RESET_MEMORY: std::ops::RangeInclusive<u32> = 128..=1024;

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
    /// Take extended CONNECT (RFC 8441: a `:protocol` on a CONNECT, as WebSocket over HTTP/2
    /// opens with) and say so in SETTINGS (`SETTINGS_ENABLE_CONNECT_PROTOCOL = 1`). Off, a
    /// `:protocol` is an unknown pseudo-header: the request is malformed.
    pub enable_connect_protocol: bool,
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
            enable_connect_protocol: true,
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
    /// The initial window of new request streams: until the client acknowledged the server's
    /// SETTINGS, the larger of the default and the configured one (the client may use the
    /// advertised window as soon as it read the SETTINGS, and the old one until then); the
    /// configured one after.
    recv_initial_window: u32,
    /// The connection's send window.
    send_window: i64,
    /// What the client may still send on the connection.
    recv_window: i64,
    block: Option<Block>,
    /// Header block fragments, when a block spans several frames.
    fragments: Vec<u8>,
    head: Head,
    /// Streams the server reset lately: a ring of up to `RESET_MEMORY` ids, grown as needed.
    reset: Vec<u32>,
    reset_next: usize,
    control_budget: Budget,
    reset_budget: Budget,
    /// WINDOW_UPDATE frames the client may send before they count as control frames: earned
    /// by the DATA the server sends (see `budget`).
    updates_earned: u64,
    /// Streams refused (over `max_concurrent_streams`) since the server last took one: only
    /// refusals past a run of `max_concurrent_streams` spend the reset budget (see `budget`).
    refused_in_a_row: u32,
}

impl Connection {
    /// A connection with the server's `settings`; its SETTINGS frame (and the connection
    /// window's first WINDOW_UPDATE) are appended to `dst`, to send without waiting for the
    /// client's preface.
    pub fn new(settings: Settings, dst: &mut Vec<u8>) -> Connection {
        let ours = [
            (
                setting::MAX_CONCURRENT_STREAMS,
                settings.max_concurrent_streams,
            ),
            (setting::INITIAL_WINDOW_SIZE, settings.initial_window_size),
            (setting::MAX_FRAME_SIZE, settings.max_frame_size),
            (setting::MAX_HEADER_LIST_SIZE, settings.max_header_list_size),
            (setting::ENABLE_CONNECT_PROTOCOL, 1),
        ];
        // The last one only if extended CONNECT is taken (RFC 8441 §3: 0 is the default).
        let n = ours.len() - usize::from(!settings.enable_connect_protocol);
        frame::write_settings(dst, &ours[..n]);
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
            recv_initial_window: settings.initial_window_size.max(frame::DEFAULT_WINDOW),
            send_window: i64::from(frame::DEFAULT_WINDOW),
            recv_window: i64::from(window),
            block: None,
            fragments: Vec::new(),
            head: Head::default(),
            reset: Vec::new(),
            reset_next: 0,
            control_budget: Budget::new(settings.max_control_frames),
            reset_budget: Budget::new(settings.max_reset_streams),
            updates_earned: 0,
            refused_in_a_row: 0,
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

    /// Whether a request head (or trailers) is arriving: a header block waits for its
    /// CONTINUATION frames, or `input` (the bytes not consumed yet) starts a HEADERS or
    /// CONTINUATION frame that is not whole.
    pub fn receiving_header_block(&self, input: &[u8]) -> bool {
        self.block.is_some()
            || (self.state == State::Open
                && input.len() >= 4
                && matches!(
                    Kind::from_byte(input[3]),
                    Kind::Headers | Kind::Continuation
                ))
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
        if self.reset_costs(reason) && !self.reset_budget.spend() {
            return Err(self.fail(Reason::ENHANCE_YOUR_CALM, "too many stream errors", dst));
        }
        let known = self.find(stream).is_some();
        self.reset(stream, reason, dst);
        Ok(known.then_some(Event::Reset { stream, reason }))
    }

    /// Sends GOAWAY for a connection error and stops reading.
    fn fail(&mut self, reason: Reason, what: &'static str, dst: &mut Vec<u8>) -> Error {
        // After a graceful GOAWAY the streams above its last one were not processed.
        frame::write_goaway(dst, self.goaway.unwrap_or(self.last_stream), reason);
        self.state = State::Closed;
        Error { reason, what }
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

#[cfg(test)]
mod tests {
    use super::testing::*;

    #[test]
    fn new_connection_announces_its_settings_and_window() {
        let mut out = Vec::new();
        let _ = Connection::new(Settings::default(), &mut out);
        let f = frames(&out);
        assert_eq!(f[0].0.kind, Kind::Settings);
        assert_eq!(f[0].1.len(), 30);
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

    /// A client that opened a stream with a body before it saw the server's graceful GOAWAY:
    /// the HEADERS were ignored, but its DATA (and trailers) were taken for frames on a
    /// closed stream, a connection error (STREAM_CLOSED) that ended the streams the GOAWAY
    /// meant to let finish. A later connection error's GOAWAY named the ignored stream as
    /// the last one processed.
    #[test]
    fn frames_on_streams_ignored_after_goaway_are_ignored() {
        let mut conn = open(Settings::default());
        run(&mut conn, &headers(1, 0, &POST));
        conn.go_away(&mut Vec::new());
        let mut bytes = headers(3, 0, &POST);
        bytes.extend(data(3, 0, b"xyz"));
        bytes.extend(headers(3, flags::END_STREAM, &[0x40, 1, b'x', 1, b'y']));
        let (events, out, err) = run(&mut conn, &bytes);
        assert_eq!((events, err), (vec![], None));
        assert_eq!(
            frames(&out)[0].0.kind,
            Kind::WindowUpdate,
            "window given back"
        );
        let (events, _, _) = run(&mut conn, &data(1, flags::END_STREAM, b"ab"));
        assert_eq!(events.len(), 1, "stream 1 goes on");
        let (_, out, err) = run(&mut conn, &frame(0x6, 0, 0, &[0; 7]));
        assert!(err.is_some());
        assert_eq!(
            &frames(&out)[0].1[..4],
            &1u32.to_be_bytes(),
            "stream 3 not processed"
        );
    }
}
