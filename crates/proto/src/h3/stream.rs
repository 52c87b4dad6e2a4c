//! The rules of HTTP/3 streams (RFC 9114 §4.1, §6): which unidirectional streams a peer may
//! open, what the control stream must carry and in what order, and which frames a request
//! stream may carry.
//!
//! - [`StreamType`] is the varint that opens every unidirectional stream (§6.2).
//! - [`PeerStreams`] remembers which of the client's unidirectional streams are open, to
//!   refuse a second control, QPACK encoder or decoder stream, and a push stream.
//! - [`ControlStream`] reads the client's control stream: SETTINGS first and only once, no
//!   request frames, GOAWAY IDs that never increase, no CANCEL_PUSH (we never push).
//! - [`RequestStream`] reads one request stream: HEADERS, any number of DATA, optional
//!   trailing HEADERS, and a body as long as `content-length` says.

use bytes::BytesMut;

use super::frame::{Frame, FrameDecoder, Settings};
use super::varint;
use super::{Code, Error};

/// The type of a unidirectional stream: the varint it opens with (§6.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamType {
    /// 0x00: the control stream, one per endpoint (§6.2.1).
    Control,
    /// 0x01: a server push (§6.2.2); only a server opens one.
    Push,
    /// 0x02: QPACK's encoder stream (RFC 9204 §4.2).
    QpackEncoder,
    /// 0x03: QPACK's decoder stream (RFC 9204 §4.2).
    QpackDecoder,
    /// Anything else, reserved `0x1f * N + 0x21` types included ([`StreamType::is_reserved`]):
    /// an extension this crate does not know. The receiver ignores the stream: it stops
    /// reading (STOP_SENDING with H3_STREAM_CREATION_ERROR, §6.2) or drops what arrives.
    Unknown(u64),
}

impl StreamType {
    /// The type with this value.
    pub fn from_value(value: u64) -> StreamType {
        match value {
            0x00 => StreamType::Control,
            0x01 => StreamType::Push,
            0x02 => StreamType::QpackEncoder,
            0x03 => StreamType::QpackDecoder,
            other => StreamType::Unknown(other),
        }
    }

    /// The value sent on the wire.
    pub fn value(self) -> u64 {
        match self {
            StreamType::Control => 0x00,
            StreamType::Push => 0x01,
            StreamType::QpackEncoder => 0x02,
            StreamType::QpackDecoder => 0x03,
            StreamType::Unknown(value) => value,
        }
    }

    /// Whether `value` is one of the reserved types `0x1f * N + 0x21`, which exist so that
    /// receivers are seen to ignore unknown types (§6.2.3).
    pub fn is_reserved(value: u64) -> bool {
        value >= 0x21 && (value - 0x21) % 0x1f == 0
    }

    /// Reads the type from the front of a new stream's bytes, removing it; `None` until the
    /// whole varint is there.
    pub fn decode(buf: &mut BytesMut) -> Option<StreamType> {
        let (value, n) = varint::decode(buf)?;
        let _ = buf.split_to(n);
        Some(StreamType::from_value(value))
    }

    /// Appends the type, which opens a unidirectional stream we create.
    pub fn encode<B: bytes::BufMut>(self, dst: &mut B) {
        varint::encode(self.value(), dst);
    }

    /// Whether the connection cannot go on without this stream: closing or resetting the
    /// control stream or a QPACK stream is a connection error of type
    /// H3_CLOSED_CRITICAL_STREAM (§6.2.1, RFC 9204 §4.2).
    pub fn is_critical(self) -> bool {
        matches!(
            self,
            StreamType::Control | StreamType::QpackEncoder | StreamType::QpackDecoder
        )
    }
}

/// The unidirectional streams the client has opened, as a server sees them.
#[derive(Clone, Debug, Default)]
pub struct PeerStreams {
    control: bool,
    qpack_encoder: bool,
    qpack_decoder: bool,
}

impl PeerStreams {
    /// None open yet.
    pub fn new() -> PeerStreams {
        PeerStreams::default()
    }

    /// The client opened a stream of type `ty`. A second control, QPACK encoder or QPACK
    /// decoder stream, or a push stream (only servers push), is a connection error of type
    /// H3_STREAM_CREATION_ERROR (§6.2.1, §6.2.2, RFC 9204 §4.2). An unknown type is fine:
    /// the caller ignores the stream.
    pub fn open(&mut self, ty: StreamType) -> Result<(), Error> {
        let seen = match ty {
            StreamType::Control => &mut self.control,
            StreamType::QpackEncoder => &mut self.qpack_encoder,
            StreamType::QpackDecoder => &mut self.qpack_decoder,
            StreamType::Push => {
                return Err(Error::connection(
                    Code::H3_STREAM_CREATION_ERROR,
                    "push stream from a client",
                ))
            }
            StreamType::Unknown(_) => return Ok(()),
        };
        if std::mem::replace(seen, true) {
            return Err(Error::connection(
                Code::H3_STREAM_CREATION_ERROR,
                "second stream of a type allowed once",
            ));
        }
        Ok(())
    }

    /// A stream of type `ty` ended (FIN or reset): an error if the connection needs it
    /// ([`StreamType::is_critical`]).
    pub fn closed(&self, ty: StreamType) -> Result<(), Error> {
        if ty.is_critical() {
            Err(Error::connection(
                Code::H3_CLOSED_CRITICAL_STREAM,
                "critical stream closed",
            ))
        } else {
            Ok(())
        }
    }
}

/// What the peer's control stream said.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ControlEvent {
    /// The peer's settings (once, first).
    Settings(Settings),
    /// GOAWAY: from a client, the push ID past which it will not accept pushes.
    Goaway(u64),
    /// MAX_PUSH_ID: the most push IDs the client allows.
    MaxPushId(u64),
    /// CANCEL_PUSH: a push ID to give up on. Not produced by [`ControlStream`], which reads
    /// a client's control stream for a server that never pushes: there every CANCEL_PUSH
    /// names a push never promised, an error (§7.2.3). Kept for a reader that pushes.
    CancelPush(u64),
}

/// Where a control stream is (§6.2.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ControlState {
    /// Nothing read yet: the first frame must be SETTINGS.
    AwaitingSettings,
    /// SETTINGS came; any other control frame may follow.
    Open,
}

/// Reads the peer's control stream (after its [`StreamType`]) and enforces its rules.
///
/// Every error here is a connection error: the control stream is the connection's.
///
/// "The first frame must be SETTINGS" (§6.2.1) is read as the first frame this codec knows:
/// a reserved or unknown frame type before SETTINGS is skipped like any other (§9: unknown
/// types "MUST be ignored"), since a client greasing its control stream (§7.2.8) must not be
/// taken for one that forgot its settings. Any known frame first is H3_MISSING_SETTINGS.
#[derive(Clone, Debug)]
pub struct ControlStream {
    frames: FrameDecoder,
    state: ControlState,
    /// The ID of the last GOAWAY: a later one may not be larger (§5.2).
    goaway: Option<u64>,
    /// The last MAX_PUSH_ID: a later one may not be smaller (§7.2.7).
    max_push_id: Option<u64>,
}

impl ControlStream {
    /// A control stream whose frames may be up to `max_frame_size` bytes long.
    pub fn new(max_frame_size: usize) -> ControlStream {
        ControlStream {
            frames: FrameDecoder::new(max_frame_size),
            state: ControlState::AwaitingSettings,
            goaway: None,
            max_push_id: None,
        }
    }

    /// Decodes the next control frame from `buf`; `Ok(None)` means "need more bytes".
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<ControlEvent>, Error> {
        let Some(frame) = self.frames.decode(buf)? else {
            return Ok(None);
        };
        if self.state == ControlState::AwaitingSettings {
            let Frame::Settings(settings) = frame else {
                return Err(Error::connection(
                    Code::H3_MISSING_SETTINGS,
                    "control stream does not begin with SETTINGS",
                ));
            };
            self.state = ControlState::Open;
            return Ok(Some(ControlEvent::Settings(settings)));
        }
        let unexpected = |why| Err(Error::connection(Code::H3_FRAME_UNEXPECTED, why));
        match frame {
            Frame::Settings(_) => unexpected("second SETTINGS"),
            Frame::Data(_) | Frame::Headers(_) | Frame::PushPromise { .. } => {
                unexpected("request frame on the control stream")
            }
            Frame::Goaway(id) => {
                if self.goaway.is_some_and(|last| id > last) {
                    return Err(Error::connection(Code::H3_ID_ERROR, "GOAWAY ID increased"));
                }
                self.goaway = Some(id);
                Ok(Some(ControlEvent::Goaway(id)))
            }
            Frame::MaxPushId(id) => {
                if self.max_push_id.is_some_and(|last| id < last) {
                    return Err(Error::connection(
                        Code::H3_ID_ERROR,
                        "MAX_PUSH_ID decreased",
                    ));
                }
                self.max_push_id = Some(id);
                Ok(Some(ControlEvent::MaxPushId(id)))
            }
            // §7.2.3: "If a server receives a CANCEL_PUSH frame for a push ID that has not
            // yet been mentioned by a PUSH_PROMISE frame, this MUST be treated as a
            // connection error of type H3_ID_ERROR." We never send PUSH_PROMISE, so every
            // push ID is one not yet mentioned.
            Frame::CancelPush(_) => Err(Error::connection(
                Code::H3_ID_ERROR,
                "CANCEL_PUSH for a push never promised",
            )),
        }
    }

    /// The control stream ended or was reset: always a connection error of type
    /// H3_CLOSED_CRITICAL_STREAM (§6.2.1).
    pub fn closed(&self) -> Error {
        Error::connection(Code::H3_CLOSED_CRITICAL_STREAM, "control stream closed")
    }
}

/// What a request stream carried.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RequestEvent {
    /// The request head's encoded field section: decode it with
    /// [`decode_request`](super::decode_request).
    Head(bytes::Bytes),
    /// A piece of the body (never empty).
    Data(bytes::Bytes),
    /// The trailer section, encoded: decode it with
    /// [`decode_trailers`](super::decode_trailers). Nothing but the stream's end may follow.
    Trailers(bytes::Bytes),
}

/// Where a request stream is (§4.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RequestState {
    /// Nothing yet: HEADERS must come first.
    Head,
    /// After the head: DATA, or trailing HEADERS.
    Body,
    /// After the trailers: only the stream's end.
    Done,
    /// A CONNECT's tunnel (§4.4): DATA only, to the stream's end.
    Tunnel,
}

/// Reads one request stream and enforces the order of its frames (§4.1): HEADERS, DATA*,
/// optional trailing HEADERS. A frame out of that order, or a frame that has no place on a
/// request stream (SETTINGS, GOAWAY, MAX_PUSH_ID, CANCEL_PUSH, and PUSH_PROMISE from a
/// client) is a connection error of type H3_FRAME_UNEXPECTED.
#[derive(Clone, Debug)]
pub struct RequestStream {
    frames: FrameDecoder,
    state: RequestState,
    /// The head's `content-length`, once the caller said it (§4.1.2).
    content_length: Option<u64>,
    /// Body bytes received.
    received: u64,
}

impl RequestStream {
    /// A request stream whose HEADERS frames may be up to `max_frame_size` bytes long; a
    /// larger one is a stream error of type H3_EXCESSIVE_LOAD (the request's problem, not the
    /// connection's).
    ///
    /// This bounds the encoded head held in memory; [`decode_request`](super::decode_request)'s
    /// limit bounds the decoded one, and answers 431. An ordinary encoder's section is smaller
    /// than its decoded size (RFC 9114 §4.2.2 counts 32 bytes per field, a field line costs a
    /// few), so the same number for both lets every head the decoded limit admits through the
    /// frame limit; only a perverse encoder (Huffman codes up to 30 bits a byte) meets the
    /// frame limit first.
    pub fn new(max_frame_size: usize) -> RequestStream {
        RequestStream {
            frames: FrameDecoder::new(max_frame_size),
            state: RequestState::Head,
            content_length: None,
            received: 0,
        }
    }

    /// The decoded head's `content-length` ([`Head::content_length`](super::Head)): from
    /// now on a body longer than that, or a stream that ends with a shorter one, is a
    /// malformed request (§4.1.2), a stream error of type H3_MESSAGE_ERROR.
    pub fn set_content_length(&mut self, content_length: Option<u64>) {
        self.content_length = content_length;
    }

    /// The request is a CONNECT that succeeded (RFC 9114 §4.4, RFC 9220 §3): from now on
    /// the stream carries DATA only, and HEADERS is a connection error of type
    /// H3_FRAME_UNEXPECTED (a CONNECT has no trailers).
    pub fn open_tunnel(&mut self) {
        self.state = RequestState::Tunnel;
    }

    /// Body bytes received so far.
    pub fn received(&self) -> u64 {
        self.received
    }

    /// Decodes the next event from `buf`; `Ok(None)` means "need more bytes". After an
    /// error the stream is over: reset it (or close the connection) and read no more.
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<RequestEvent>, Error> {
        loop {
            let frame = match self.frames.decode(buf) {
                Ok(Some(frame)) => frame,
                Ok(None) => return Ok(None),
                Err(e) if e.code() == Code::H3_EXCESSIVE_LOAD => return Err(e.on_stream()),
                Err(e) => return Err(e),
            };
            let unexpected = |why| Err(Error::connection(Code::H3_FRAME_UNEXPECTED, why));
            return match (self.state, frame) {
                (RequestState::Head, Frame::Headers(section)) => {
                    self.state = RequestState::Body;
                    Ok(Some(RequestEvent::Head(section)))
                }
                (RequestState::Head, Frame::Data(_)) => unexpected("DATA before HEADERS"),
                (RequestState::Body | RequestState::Tunnel, Frame::Data(piece)) => {
                    self.received += piece.len() as u64;
                    if self.content_length.is_some_and(|n| self.received > n) {
                        return Err(Error::stream(
                            Code::H3_MESSAGE_ERROR,
                            "body longer than content-length",
                        ));
                    }
                    if piece.is_empty() {
                        continue;
                    }
                    Ok(Some(RequestEvent::Data(piece)))
                }
                (RequestState::Body, Frame::Headers(section)) => {
                    self.state = RequestState::Done;
                    Ok(Some(RequestEvent::Trailers(section)))
                }
                (RequestState::Done, Frame::Data(_) | Frame::Headers(_)) => {
                    unexpected("frame after the trailers")
                }
                (RequestState::Tunnel, Frame::Headers(_)) => unexpected("HEADERS in a tunnel"),
                (_, Frame::PushPromise { .. }) => unexpected("PUSH_PROMISE from a client"),
                _ => unexpected("control frame on a request stream"),
            };
        }
    }

    /// The client finished the stream (FIN) and `buf` holds what is left of it. Errors: a
    /// frame cut short (H3_FRAME_ERROR, connection), no head at all (H3_REQUEST_INCOMPLETE,
    /// stream), a body shorter than `content-length` (H3_MESSAGE_ERROR, stream).
    pub fn finish(&self, buf: &[u8]) -> Result<(), Error> {
        self.frames.finish(buf)?;
        if self.state == RequestState::Head {
            return Err(Error::stream(
                Code::H3_REQUEST_INCOMPLETE,
                "request stream ends without a head",
            ));
        }
        if self.content_length.is_some_and(|n| n != self.received) {
            return Err(Error::stream(
                Code::H3_MESSAGE_ERROR,
                "body shorter than content-length",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "stream_tests.rs"]
mod tests;
