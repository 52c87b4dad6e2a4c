//! The client side of one HTTP/2 connection, sans-I/O: it writes the frames that open streams
//! into [`Connection::out`] and reads the server's frames from byte slices, reporting each
//! stream that ends as an [`Event`].
//!
//! What it does about the protocol (RFC 9113):
//!
//! - It opens with the preface, a SETTINGS frame (push off, every stream's window at its
//!   largest) and a WINDOW_UPDATE taking the connection's window to its largest too, so a
//!   response is never held up by our windows. The credit is given back in batches, once half
//!   of a window was used, not per DATA frame.
//! - It waits for the server's SETTINGS before opening a stream, and opens no more than the
//!   server's SETTINGS_MAX_CONCURRENT_STREAMS at once.
//! - Request bodies go out in DATA frames as the server's windows and frame size allow.
//! - Response heads (HEADERS and CONTINUATION) go through HPACK for `:status`; 1xx heads are
//!   skipped, trailers decoded and dropped; DATA is counted for flow control and not looked at.
//! - PING and SETTINGS are acknowledged; RST_STREAM ends its stream ([`Event::Reset`]); GOAWAY
//!   gives back the streams the server will not process ([`Event::Refused`]) and opens no more.
//! - Anything malformed is a [`ProtocolError`]: the caller closes the connection.

use volt_proto::h2::frame::{
    flags, setting, write_data, write_goaway, write_ping_ack, write_settings, write_settings_ack,
    write_window_update, FrameHeader, Kind, Reason, DEFAULT_MAX_FRAME_SIZE, DEFAULT_WINDOW,
    HEADER_LEN, MAX_MAX_FRAME_SIZE, MAX_WINDOW,
};
use volt_proto::h2::hpack::{DecodeError, Decoder};

use super::request::H2Request;
use super::streams::{Stream, StreamTable};

/// The client connection preface (RFC 9113 §3.4).
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// Received bytes a window takes before its credit is given back.
const GIVE_BACK: u32 = MAX_WINDOW / 2;
/// The largest frame we accept: the default SETTINGS_MAX_FRAME_SIZE, which we do not raise.
const MAX_FRAME: usize = DEFAULT_MAX_FRAME_SIZE as usize;
/// Room a read buffer needs for one whole frame.
pub(crate) const MAX_FRAME_BYTES: usize = HEADER_LEN + MAX_FRAME;

/// A stream that ended.
#[derive(Debug)]
pub(crate) enum Event {
    /// Its response arrived whole; `stream.status` is its final status.
    Response(Stream),
    /// The server reset it (RST_STREAM).
    Reset(Stream),
    /// A GOAWAY's last stream id is below it: the server did not process it.
    Refused(Stream),
}

/// The server broke the protocol: the connection is done, and the GOAWAY saying so carries
/// `reason` (RFC 9113 §5.4.1).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct ProtocolError {
    pub reason: Reason,
    pub why: &'static str,
}

impl ProtocolError {
    fn new(why: &'static str) -> ProtocolError {
        ProtocolError {
            reason: Reason::PROTOCOL_ERROR,
            why,
        }
    }
}

impl From<DecodeError> for ProtocolError {
    fn from(_: DecodeError) -> ProtocolError {
        ProtocolError {
            reason: Reason::COMPRESSION_ERROR,
            why: "HPACK decoding failed",
        }
    }
}

/// Where a response's head stands, as the header block decoder saw it.
enum HeadStatus {
    None,
    Status(u16),
    Malformed,
}

/// One connection's protocol state. Made once per connection slot and [`reset`](Self::reset)
/// for each new connection, so its buffers are reused.
#[derive(Debug)]
pub(crate) struct Connection {
    pub streams: StreamTable,
    /// Frames to write.
    pub out: Vec<u8>,
    decoder: Decoder,
    /// `--streams`.
    max_streams: usize,
    /// The server's SETTINGS came (streams may be opened).
    settled: bool,
    peer_max_streams: usize,
    peer_initial_window: i64,
    peer_max_frame: usize,
    /// What the server's connection window still lets us send.
    send_window: i64,
    /// Bytes received on the connection since its window was last given back.
    recv_unacked: u32,
    /// The last stream id of the server's GOAWAY.
    goaway: Option<u32>,
    /// A header block still waiting for CONTINUATION frames: its stream and END_STREAM.
    continuation: Option<(u32, bool)>,
    block: Vec<u8>,
    /// Streams with request body bytes still to send.
    bodies: usize,
    /// Streams whose response head came but not their end.
    receiving: usize,
}

impl Connection {
    pub(crate) fn new(max_streams: usize) -> Connection {
        Connection {
            streams: StreamTable::new(max_streams),
            out: Vec::with_capacity(16 * 1024),
            decoder: Decoder::new(4096),
            max_streams,
            settled: false,
            peer_max_streams: usize::MAX,
            peer_initial_window: i64::from(DEFAULT_WINDOW),
            peer_max_frame: MAX_FRAME,
            send_window: i64::from(DEFAULT_WINDOW),
            recv_unacked: 0,
            goaway: None,
            continuation: None,
            block: Vec::new(),
            bodies: 0,
            receiving: 0,
        }
    }

    /// Starts a new connection: forgets the last one and queues the preface, our SETTINGS and
    /// the connection's WINDOW_UPDATE.
    pub(crate) fn reset(&mut self) {
        self.streams.reset();
        self.out.clear();
        // The peer's encoder starts over with an empty table.
        self.decoder = Decoder::new(4096);
        self.settled = false;
        self.peer_max_streams = usize::MAX;
        self.peer_initial_window = i64::from(DEFAULT_WINDOW);
        self.peer_max_frame = MAX_FRAME;
        self.send_window = i64::from(DEFAULT_WINDOW);
        self.recv_unacked = 0;
        self.goaway = None;
        self.continuation = None;
        self.block.clear();
        self.bodies = 0;
        self.receiving = 0;
        self.out.extend_from_slice(PREFACE);
        write_settings(
            &mut self.out,
            &[
                (setting::ENABLE_PUSH, 0),
                (setting::INITIAL_WINDOW_SIZE, MAX_WINDOW),
            ],
        );
        write_window_update(&mut self.out, 0, MAX_WINDOW - DEFAULT_WINDOW);
    }

    /// How many more streams may be opened now: none before the server's SETTINGS, after a
    /// GOAWAY or once the ids run out.
    pub(crate) fn free(&self) -> usize {
        if !self.settled || self.is_ending() {
            return 0;
        }
        self.max_streams
            .min(self.peer_max_streams)
            .saturating_sub(self.streams.open())
    }

    /// Whether the server's SETTINGS came.
    pub(crate) fn is_settled(&self) -> bool {
        self.settled
    }

    /// No stream will be opened here any more: the server sent GOAWAY or the ids ran out. The
    /// connection is replaced once its open streams end.
    pub(crate) fn is_ending(&self) -> bool {
        self.goaway.is_some() || !self.streams.ids_left()
    }

    /// Queues the GOAWAY that ends the connection after `error`.
    pub(crate) fn go_away(&mut self, error: &ProtocolError) {
        write_goaway(&mut self.out, 0, error.reason);
    }

    /// Whether a response is under way or a frame is incomplete: a close now would cut one.
    pub(crate) fn is_mid_response(&self) -> bool {
        self.receiving > 0 || self.continuation.is_some()
    }

    /// Opens a stream for `request` (check [`free`](Self::free) first) and queues its frames.
    pub(crate) fn open(&mut self, request: &H2Request, mut stream: Stream) -> u32 {
        stream.body_left = request.body.len();
        stream.send_window = self.peer_initial_window;
        let id = self.streams.insert(stream);
        request.write_headers(&mut self.out, id);
        if !request.body.is_empty() {
            self.bodies += 1;
            self.send_body(id, request);
        }
        id
    }

    /// Sends what the windows allow of every unfinished request body.
    pub(crate) fn send_bodies(&mut self, requests: &[H2Request]) {
        if self.bodies == 0 || self.send_window <= 0 {
            return;
        }
        let mut waiting = [0u32; 16];
        loop {
            // Collected a few at a time: `send_body` needs the table mutably.
            let mut n = 0;
            for s in self.streams.iter_mut() {
                if s.body_left > 0 && s.send_window > 0 && n < waiting.len() {
                    waiting[n] = s.id;
                    n += 1;
                }
            }
            let before = self.bodies;
            for &id in &waiting[..n] {
                if let Some(cursor) = self.streams.get_mut(id).map(|s| s.cursor) {
                    self.send_body(id, &requests[cursor]);
                }
            }
            if n < waiting.len() || self.send_window <= 0 || self.bodies == before {
                return;
            }
        }
    }

    fn send_body(&mut self, id: u32, request: &H2Request) {
        let Some(s) = self.streams.get_mut(id) else {
            return;
        };
        while s.body_left > 0 {
            let n = (s.body_left as i64)
                .min(s.send_window)
                .min(self.send_window)
                .min(self.peer_max_frame as i64);
            if n <= 0 {
                return;
            }
            let n = n as usize;
            let from = request.body.len() - s.body_left;
            s.body_left -= n;
            s.send_window -= n as i64;
            self.send_window -= n as i64;
            write_data(
                &mut self.out,
                id,
                &request.body[from..from + n],
                s.body_left == 0,
            );
        }
        self.bodies -= 1;
    }

    /// Takes every whole frame at the front of `input`, reporting streams that end to `event`.
    /// Returns the bytes used; the rest (part of a frame) is for the next call.
    pub(crate) fn receive(
        &mut self,
        input: &[u8],
        event: &mut impl FnMut(Event),
    ) -> Result<usize, ProtocolError> {
        let mut used = 0;
        while let Some(h) = FrameHeader::parse(&input[used..]) {
            let len = h.len as usize;
            if len > MAX_FRAME {
                return Err(ProtocolError::new(
                    "a frame is larger than SETTINGS_MAX_FRAME_SIZE",
                ));
            }
            let Some(payload) = input.get(used + HEADER_LEN..used + HEADER_LEN + len) else {
                break;
            };
            if self.continuation.is_some() && h.kind != Kind::Continuation {
                return Err(ProtocolError::new("a header block is interrupted"));
            }
            self.frame(h, payload, event)?;
            used += HEADER_LEN + len;
        }
        Ok(used)
    }

    fn frame(
        &mut self,
        h: FrameHeader,
        payload: &[u8],
        event: &mut impl FnMut(Event),
    ) -> Result<(), ProtocolError> {
        let on_stream = h.stream != 0;
        match h.kind {
            Kind::Data if on_stream => self.data(h, payload, event),
            Kind::Headers if on_stream => {
                let block = strip_headers_padding(h, payload)?;
                let end_stream = h.has(flags::END_STREAM);
                if h.has(flags::END_HEADERS) {
                    return self.head(h.stream, block, end_stream, event);
                }
                self.block.clear();
                self.block.extend_from_slice(block);
                self.continuation = Some((h.stream, end_stream));
                Ok(())
            }
            Kind::Continuation => {
                let Some((stream, end_stream)) = self.continuation else {
                    return Err(ProtocolError::new("CONTINUATION without a header block"));
                };
                if stream != h.stream {
                    return Err(ProtocolError::new("CONTINUATION on another stream"));
                }
                self.block.extend_from_slice(payload);
                if h.has(flags::END_HEADERS) {
                    self.continuation = None;
                    let block = std::mem::take(&mut self.block);
                    let result = self.head(stream, &block, end_stream, event);
                    self.block = block;
                    return result;
                }
                Ok(())
            }
            Kind::RstStream if on_stream && payload.len() == 4 => {
                match self.streams.remove(h.stream) {
                    Some(s) => {
                        self.stream_ended(&s);
                        event(Event::Reset(s));
                        Ok(())
                    }
                    None => self.check_closed(h.stream),
                }
            }
            Kind::Settings if !on_stream => self.settings(h, payload),
            Kind::Ping if !on_stream && payload.len() == 8 => {
                if !h.has(flags::ACK) {
                    let mut data = [0; 8];
                    data.copy_from_slice(payload);
                    write_ping_ack(&mut self.out, data);
                }
                Ok(())
            }
            Kind::GoAway if !on_stream && payload.len() >= 8 => {
                let last = u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]])
                    & MAX_WINDOW;
                let last = self.goaway.map_or(last, |before| before.min(last));
                self.goaway = Some(last);
                while let Some(s) = self.streams.take_where(|s| s.id > last) {
                    self.stream_ended(&s);
                    event(Event::Refused(s));
                }
                Ok(())
            }
            Kind::WindowUpdate if payload.len() == 4 => {
                let increment =
                    u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]])
                        & MAX_WINDOW;
                if increment == 0 {
                    return Err(ProtocolError::new("a WINDOW_UPDATE of 0"));
                }
                let window = if on_stream {
                    match self.streams.get_mut(h.stream) {
                        Some(s) => &mut s.send_window,
                        None => return self.check_closed(h.stream),
                    }
                } else {
                    &mut self.send_window
                };
                *window += i64::from(increment);
                if *window > i64::from(MAX_WINDOW) {
                    return Err(ProtocolError::new("a window grew past 2^31-1"));
                }
                Ok(())
            }
            Kind::Priority | Kind::Unknown(_) => Ok(()),
            Kind::PushPromise => Err(ProtocolError::new("PUSH_PROMISE with push disabled")),
            _ => Err(ProtocolError::new(
                "a frame on the wrong stream or of the wrong size",
            )),
        }
    }

    fn data(
        &mut self,
        h: FrameHeader,
        payload: &[u8],
        event: &mut impl FnMut(Event),
    ) -> Result<(), ProtocolError> {
        if h.has(flags::PADDED)
            && payload
                .first()
                .is_none_or(|&pad| pad as usize >= payload.len())
        {
            return Err(ProtocolError::new("DATA padding longer than the frame"));
        }
        // The whole payload counts against the windows, padding too (RFC 9113 §6.9.1).
        let len = payload.len() as u32;
        self.recv_unacked += len;
        if self.recv_unacked >= GIVE_BACK {
            write_window_update(&mut self.out, 0, self.recv_unacked);
            self.recv_unacked = 0;
        }
        let end_stream = h.has(flags::END_STREAM);
        let Some(s) = self.streams.get_mut(h.stream) else {
            return self.check_closed(h.stream);
        };
        if s.status == 0 {
            return Err(ProtocolError::new("DATA before the response head"));
        }
        if end_stream {
            let s = self.streams.remove(h.stream).expect("found above");
            self.stream_ended(&s);
            event(Event::Response(s));
            return Ok(());
        }
        s.recv_unacked += len;
        if s.recv_unacked >= GIVE_BACK {
            write_window_update(&mut self.out, h.stream, s.recv_unacked);
            s.recv_unacked = 0;
        }
        Ok(())
    }

    /// A whole header block for `stream`: a response head (interim or final) or trailers.
    fn head(
        &mut self,
        stream: u32,
        block: &[u8],
        end_stream: bool,
        event: &mut impl FnMut(Event),
    ) -> Result<(), ProtocolError> {
        // Decoded even for a stream no longer open: the table must stay in step.
        let mut status = HeadStatus::None;
        self.decoder.decode(block, |name, value| {
            if name == b":status" {
                status = match (&status, status_code(value)) {
                    (HeadStatus::None, Some(code)) => HeadStatus::Status(code),
                    _ => HeadStatus::Malformed,
                };
            }
            Ok(())
        })?;
        let Some(s) = self.streams.get_mut(stream) else {
            return self.check_closed(stream);
        };
        if s.status == 0 {
            match status {
                HeadStatus::Status(code) if (100..200).contains(&code) => {
                    if end_stream || code == 101 {
                        return Err(ProtocolError::new("an interim head ends the stream"));
                    }
                    return Ok(());
                }
                HeadStatus::Status(code) => {
                    s.status = code;
                    self.receiving += 1;
                    if !end_stream {
                        return Ok(());
                    }
                }
                HeadStatus::None | HeadStatus::Malformed => {
                    return Err(ProtocolError::new(
                        "a response head without a valid :status",
                    ))
                }
            }
        } else if !end_stream {
            return Err(ProtocolError::new("trailers that do not end the stream"));
        }
        let s = self.streams.remove(stream).expect("found above");
        self.stream_ended(&s);
        event(Event::Response(s));
        Ok(())
    }

    fn settings(&mut self, h: FrameHeader, payload: &[u8]) -> Result<(), ProtocolError> {
        if h.has(flags::ACK) {
            return match payload.len() {
                0 => Ok(()),
                _ => Err(ProtocolError::new("a SETTINGS ACK with a payload")),
            };
        }
        if payload.len() % 6 != 0 {
            return Err(ProtocolError::new("a SETTINGS payload not a multiple of 6"));
        }
        for s in payload.chunks_exact(6) {
            let id = u16::from_be_bytes([s[0], s[1]]);
            let value = u32::from_be_bytes([s[2], s[3], s[4], s[5]]);
            match id {
                setting::MAX_CONCURRENT_STREAMS => self.peer_max_streams = value as usize,
                setting::INITIAL_WINDOW_SIZE => {
                    if value > MAX_WINDOW {
                        return Err(ProtocolError::new(
                            "SETTINGS_INITIAL_WINDOW_SIZE over 2^31-1",
                        ));
                    }
                    // Applies to the open streams' windows too (RFC 9113 §6.9.2).
                    let delta = i64::from(value) - self.peer_initial_window;
                    self.peer_initial_window = i64::from(value);
                    for s in self.streams.iter_mut() {
                        s.send_window += delta;
                    }
                }
                setting::MAX_FRAME_SIZE => {
                    if !(DEFAULT_MAX_FRAME_SIZE..=MAX_MAX_FRAME_SIZE).contains(&value) {
                        return Err(ProtocolError::new("SETTINGS_MAX_FRAME_SIZE out of range"));
                    }
                    self.peer_max_frame = value as usize;
                }
                setting::ENABLE_PUSH if value > 1 => {
                    return Err(ProtocolError::new("SETTINGS_ENABLE_PUSH not 0 or 1"))
                }
                _ => {}
            }
        }
        write_settings_ack(&mut self.out);
        self.settled = true;
        Ok(())
    }

    /// A frame for a stream that is not open: fine for one we opened and that ended (or was
    /// refused), an error for one we never opened.
    fn check_closed(&self, stream: u32) -> Result<(), ProtocolError> {
        if stream % 2 == 1 && stream <= self.streams.last_id() {
            Ok(())
        } else {
            Err(ProtocolError::new("a frame for a stream never opened"))
        }
    }

    fn stream_ended(&mut self, s: &Stream) {
        if s.status != 0 {
            self.receiving -= 1;
        }
        if s.body_left > 0 {
            self.bodies -= 1;
        }
    }
}

/// A `:status` value's code: three digits, the first not 0 (HTTP/2 and HTTP/3 alike).
pub(crate) fn status_code(value: &[u8]) -> Option<u16> {
    match value {
        [a @ b'1'..=b'9', b @ b'0'..=b'9', c @ b'0'..=b'9'] => {
            Some(u16::from(*a - b'0') * 100 + u16::from(*b - b'0') * 10 + u16::from(*c - b'0'))
        }
        _ => None,
    }
}

/// The header block fragment of a HEADERS frame: without padding and priority fields.
fn strip_headers_padding(h: FrameHeader, payload: &[u8]) -> Result<&[u8], ProtocolError> {
    let mut p = payload;
    if h.has(flags::PADDED) {
        let Some((&pad, rest)) = p.split_first() else {
            return Err(ProtocolError::new("HEADERS padding longer than the frame"));
        };
        let Some(end) = rest.len().checked_sub(pad as usize) else {
            return Err(ProtocolError::new("HEADERS padding longer than the frame"));
        };
        p = &rest[..end];
    }
    if h.has(flags::PRIORITY) {
        p = p
            .get(5..)
            .ok_or_else(|| ProtocolError::new("HEADERS too short for its priority"))?;
    }
    Ok(p)
}
