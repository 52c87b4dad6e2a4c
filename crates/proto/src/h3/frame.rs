//! HTTP/3 frames (RFC 9114 §7): an incremental [`FrameDecoder`] over one stream's bytes, and
//! the encoders a server needs.
//!
//! Every frame is a varint type, a varint payload length and the payload (§7.1). Unlike
//! HTTP/2 there is no stream ID (QUIC streams carry that) and no flags, padding or
//! CONTINUATION. Frame types this crate does not know, the reserved `0x1f * N + 0x21` ones
//! among them, are skipped unseen (§7.2.8, §9); the HTTP/2 frame types without an HTTP/3
//! meaning are a connection error.

use bytes::{Buf, BufMut, Bytes, BytesMut};

use super::varint;
use super::{Code, Error};

/// Frame type values (RFC 9114 §7.2, §11.2.1).
pub mod kind {
    /// A piece of a message body.
    pub const DATA: u64 = 0x00;
    /// An encoded field section: a request or response head, or trailers.
    pub const HEADERS: u64 = 0x01;
    /// Cancels a server push.
    pub const CANCEL_PUSH: u64 = 0x03;
    /// The sender's settings: the first frame of a control stream.
    pub const SETTINGS: u64 = 0x04;
    /// Promises a server push.
    pub const PUSH_PROMISE: u64 = 0x05;
    /// Graceful shutdown: the ID past which nothing will be processed.
    pub const GOAWAY: u64 = 0x07;
    /// The most push IDs the client allows.
    pub const MAX_PUSH_ID: u64 = 0x0d;
}

/// Setting identifiers (RFC 9114 §7.2.4.1, RFC 9204 §5, RFC 9220 §3, RFC 9297 §2.1.1).
pub mod setting {
    /// QPACK's dynamic table capacity the sender's decoder allows (default 0).
    pub const QPACK_MAX_TABLE_CAPACITY: u64 = 0x01;
    /// The largest field section the sender accepts (default unlimited).
    pub const MAX_FIELD_SECTION_SIZE: u64 = 0x06;
    /// How many streams may be blocked on QPACK's dynamic table (default 0).
    pub const QPACK_BLOCKED_STREAMS: u64 = 0x07;
    /// Extended CONNECT, for WebSocket over HTTP/3 (RFC 9220).
    pub const ENABLE_CONNECT_PROTOCOL: u64 = 0x08;
    /// HTTP datagrams (RFC 9297).
    pub const H3_DATAGRAM: u64 = 0x33;
}

/// The sizes of the frames a decoder refuses by default: 16 KiB, the HTTP/1 head limit.
pub const DEFAULT_MAX_FRAME_SIZE: usize = 16 * 1024;

/// A decoded frame. DATA comes in pieces as its bytes arrive; every other frame whole.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Frame {
    /// A piece of a DATA frame's payload, in the order received. The piece reported when the
    /// frame's header is read holds whatever of the payload was already there, possibly
    /// nothing (so a zero-length DATA frame is seen too); every later piece holds at least
    /// one byte.
    Data(Bytes),
    /// A HEADERS frame's encoded field section (QPACK, [`super::qpack`]).
    Headers(Bytes),
    /// CANCEL_PUSH: the push ID.
    CancelPush(u64),
    /// SETTINGS, checked (no HTTP/2 settings, no duplicates, known values in range).
    Settings(Settings),
    /// PUSH_PROMISE: the push ID and the promised request's encoded field section.
    PushPromise {
        /// The push ID.
        push_id: u64,
        /// The promised request head, QPACK-encoded.
        field_section: Bytes,
    },
    /// GOAWAY: a stream ID (from a server) or push ID (from a client).
    Goaway(u64),
    /// MAX_PUSH_ID: the largest push ID the client allows.
    MaxPushId(u64),
}

/// The settings of one endpoint (RFC 9114 §7.2.4). A setting the peer did not send has its
/// default. Settings this crate does not know are ignored (§7.2.4.1).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Settings {
    /// SETTINGS_QPACK_MAX_TABLE_CAPACITY (RFC 9204 §5): the dynamic table the sender's
    /// decoder allows. Ours is 0: a peer may not use the dynamic table.
    pub qpack_max_table_capacity: u64,
    /// SETTINGS_MAX_FIELD_SECTION_SIZE: the largest field section (names, values and 32
    /// bytes per field, §4.2.2) the sender accepts; `None` is unlimited.
    pub max_field_section_size: Option<u64>,
    /// SETTINGS_QPACK_BLOCKED_STREAMS (RFC 9204 §5).
    pub qpack_blocked_streams: u64,
    /// SETTINGS_ENABLE_CONNECT_PROTOCOL (RFC 9220): 0 or 1.
    pub enable_connect_protocol: bool,
    /// SETTINGS_H3_DATAGRAM (RFC 9297): 0 or 1.
    pub h3_datagram: bool,
}

impl Settings {
    /// Parses a SETTINGS payload (§7.2.4): pairs of varints.
    fn parse(mut payload: &[u8]) -> Result<Settings, Error> {
        let mut settings = Settings::default();
        // Identifiers seen, sorted afterwards to find a repeated one in n log n (a payload of
        // 16 KiB holds up to 8,192 pairs; comparing each with each would be 33 million steps).
        let mut seen = Vec::new();
        while !payload.is_empty() {
            let (id, n) = varint::decode(payload).ok_or(TRUNCATED_SETTING)?;
            payload = &payload[n..];
            let (value, n) = varint::decode(payload).ok_or(TRUNCATED_SETTING)?;
            payload = &payload[n..];
            let flag = || match value {
                0 | 1 => Ok(value == 1),
                _ => Err(Error::connection(
                    Code::H3_SETTINGS_ERROR,
                    "boolean setting other than 0 or 1",
                )),
            };
            match id {
                // HTTP/2's SETTINGS_ENABLE_PUSH, MAX_CONCURRENT_STREAMS, INITIAL_WINDOW_SIZE
                // and MAX_FRAME_SIZE have no HTTP/3 meaning and are reserved so that a peer
                // mixing the two up is caught (§7.2.4.1, §11.2.2).
                0x02..=0x05 => {
                    return Err(Error::connection(
                        Code::H3_SETTINGS_ERROR,
                        "HTTP/2 setting in SETTINGS",
                    ))
                }
                setting::QPACK_MAX_TABLE_CAPACITY => settings.qpack_max_table_capacity = value,
                setting::MAX_FIELD_SECTION_SIZE => settings.max_field_section_size = Some(value),
                setting::QPACK_BLOCKED_STREAMS => settings.qpack_blocked_streams = value,
                setting::ENABLE_CONNECT_PROTOCOL => settings.enable_connect_protocol = flag()?,
                setting::H3_DATAGRAM => settings.h3_datagram = flag()?,
                _ => {}
            }
            seen.push(id);
        }
        seen.sort_unstable();
        if seen.windows(2).any(|w| w[0] == w[1]) {
            return Err(Error::connection(
                Code::H3_SETTINGS_ERROR,
                "setting repeated in SETTINGS",
            ));
        }
        Ok(settings)
    }
}

const TRUNCATED_SETTING: Error = Error::connection(
    Code::H3_FRAME_ERROR,
    "SETTINGS payload ends inside a setting",
);

/// Where the decoder is within the stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Between frames: the next bytes are a frame header.
    Header,
    /// Inside a DATA frame, this many payload bytes still to hand out.
    Data(u64),
    /// Inside a frame being skipped (unknown type), this many bytes still to drop.
    Skip(u64),
}

/// Cuts one stream's bytes into [`Frame`]s.
///
/// DATA payloads are handed out as they arrive, never gathered: a 1 GiB body costs no more
/// memory than its pieces. Any other frame must fit in the `max_frame_size` given to
/// [`new`](FrameDecoder::new) before it is decoded whole; a larger one is an error
/// (H3_EXCESSIVE_LOAD), so a peer cannot make the buffer grow without bound. Unknown frame
/// types are dropped as their bytes arrive, whatever their length.
#[derive(Clone, Debug)]
pub struct FrameDecoder {
    state: State,
    max_frame_size: usize,
}

impl FrameDecoder {
    /// A decoder refusing non-DATA frames with a payload over `max_frame_size` bytes.
    pub fn new(max_frame_size: usize) -> FrameDecoder {
        FrameDecoder {
            state: State::Header,
            max_frame_size,
        }
    }

    /// Decodes the next frame (or DATA piece) from the front of `buf`, removing the bytes it
    /// used. `Ok(None)` means "need more bytes": everything complete has been taken and what
    /// is left is the start of a frame.
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, Error> {
        loop {
            match self.state {
                State::Data(remaining) => {
                    if buf.is_empty() {
                        return Ok(None);
                    }
                    return Ok(Some(Frame::Data(self.data_piece(buf, remaining))));
                }
                State::Skip(remaining) => {
                    let n = remaining.min(buf.len() as u64);
                    buf.advance(n as usize);
                    if n < remaining {
                        self.state = State::Skip(remaining - n);
                        return Ok(None);
                    }
                    self.state = State::Header;
                }
                State::Header => {
                    let Some((ty, len, header_len)) = frame_header(buf) else {
                        return Ok(None);
                    };
                    match ty {
                        kind::DATA => {
                            buf.advance(header_len);
                            return Ok(Some(Frame::Data(self.data_piece(buf, len))));
                        }
                        // HTTP/2's PRIORITY, PING, WINDOW_UPDATE and CONTINUATION: QUIC does
                        // their work, and receiving one is an error (§7.2.8).
                        0x02 | 0x06 | 0x08 | 0x09 => {
                            return Err(Error::connection(
                                Code::H3_FRAME_UNEXPECTED,
                                "HTTP/2 frame type",
                            ))
                        }
                        kind::HEADERS
                        | kind::CANCEL_PUSH
                        | kind::SETTINGS
                        | kind::PUSH_PROMISE
                        | kind::GOAWAY
                        | kind::MAX_PUSH_ID => {
                            if len > self.max_frame_size as u64 {
                                return Err(Error::connection(
                                    Code::H3_EXCESSIVE_LOAD,
                                    "frame larger than the limit",
                                ));
                            }
                            let total = header_len + len as usize;
                            if buf.len() < total {
                                // Room for the rest, once: the frame is bounded.
                                buf.reserve(total - buf.len());
                                return Ok(None);
                            }
                            buf.advance(header_len);
                            let payload = buf.split_to(len as usize).freeze();
                            return parse(ty, payload).map(Some);
                        }
                        // Unknown and reserved types carry nothing for us (§9).
                        _ => {
                            buf.advance(header_len);
                            self.state = State::Skip(len);
                        }
                    }
                }
            }
        }
    }

    /// Whether the decoder is between frames, where a stream may end cleanly.
    pub fn is_between_frames(&self) -> bool {
        self.state == State::Header
    }

    /// The stream ended (its FIN arrived) and `buf`, what is left of it, can grow no more: an
    /// error if a frame was cut short (§7.1: a connection error of type H3_FRAME_ERROR).
    pub fn finish(&self, buf: &[u8]) -> Result<(), Error> {
        if self.state == State::Header && buf.is_empty() {
            Ok(())
        } else {
            Err(Error::connection(
                Code::H3_FRAME_ERROR,
                "stream ends inside a frame",
            ))
        }
    }

    /// The next piece of a DATA frame with `remaining` payload bytes to go.
    fn data_piece(&mut self, buf: &mut BytesMut, remaining: u64) -> Bytes {
        let n = remaining.min(buf.len() as u64);
        self.state = match remaining - n {
            0 => State::Header,
            left => State::Data(left),
        };
        buf.split_to(n as usize).freeze()
    }
}

/// A frame header at the front of `buf`: type, payload length and the header's own length.
fn frame_header(buf: &[u8]) -> Option<(u64, u64, usize)> {
    let (ty, a) = varint::decode(buf)?;
    let (len, b) = varint::decode(&buf[a..])?;
    Some((ty, len, a + b))
}

/// Parses the whole payload of a known frame other than DATA.
fn parse(ty: u64, payload: Bytes) -> Result<Frame, Error> {
    Ok(match ty {
        kind::HEADERS => Frame::Headers(payload),
        kind::SETTINGS => Frame::Settings(Settings::parse(&payload)?),
        kind::PUSH_PROMISE => {
            let (push_id, n) = varint::decode(&payload).ok_or(Error::connection(
                Code::H3_FRAME_ERROR,
                "PUSH_PROMISE without a push ID",
            ))?;
            Frame::PushPromise {
                push_id,
                field_section: payload.slice(n..),
            }
        }
        _ => {
            // CANCEL_PUSH, GOAWAY, MAX_PUSH_ID: one varint that fills the payload exactly
            // (§7.1: a payload longer or shorter than its fields is H3_FRAME_ERROR).
            let id = match varint::decode(&payload) {
                Some((id, n)) if n == payload.len() => id,
                _ => {
                    return Err(Error::connection(
                        Code::H3_FRAME_ERROR,
                        "frame payload is not exactly one varint",
                    ))
                }
            };
            match ty {
                kind::CANCEL_PUSH => Frame::CancelPush(id),
                kind::GOAWAY => Frame::Goaway(id),
                _ => Frame::MaxPushId(id),
            }
        }
    })
}

/// Appends a frame header: `ty` and the payload length `len`. The payload follows.
pub fn write_frame_header<B: BufMut>(ty: u64, len: u64, dst: &mut B) {
    varint::encode(ty, dst);
    varint::encode(len, dst);
}

/// Appends a DATA frame's header for a payload of `len` bytes, which the caller then writes
/// (or hands to the transport as its own buffer, without copying it here).
pub fn write_data_header<B: BufMut>(len: u64, dst: &mut B) {
    write_frame_header(kind::DATA, len, dst);
}

/// Appends a HEADERS frame carrying `field_section` (from [`super::qpack::Encoder`]).
pub fn write_headers<B: BufMut>(field_section: &[u8], dst: &mut B) {
    write_frame_header(kind::HEADERS, field_section.len() as u64, dst);
    dst.put_slice(field_section);
}

/// Appends a SETTINGS frame with every setting of `settings` that differs from its default
/// (a setting not sent has its default, §7.2.4.1), so `Settings::default()` writes an empty
/// SETTINGS frame: QPACK table capacity 0, no blocked streams, unlimited field sections.
pub fn write_settings<B: BufMut>(settings: &Settings, dst: &mut B) {
    let mut pairs = [(0u64, 0u64); 5];
    let mut n = 0;
    let mut put = |id, value| {
        pairs[n] = (id, value);
        n += 1;
    };
    if settings.qpack_max_table_capacity != 0 {
        put(
            setting::QPACK_MAX_TABLE_CAPACITY,
            settings.qpack_max_table_capacity,
        );
    }
    if let Some(size) = settings.max_field_section_size {
        put(setting::MAX_FIELD_SECTION_SIZE, size);
    }
    if settings.qpack_blocked_streams != 0 {
        put(
            setting::QPACK_BLOCKED_STREAMS,
            settings.qpack_blocked_streams,
        );
    }
    if settings.enable_connect_protocol {
        put(setting::ENABLE_CONNECT_PROTOCOL, 1);
    }
    if settings.h3_datagram {
        put(setting::H3_DATAGRAM, 1);
    }
    let pairs = &pairs[..n];
    let len = pairs
        .iter()
        .map(|&(id, value)| varint::len(id) + varint::len(value))
        .sum::<usize>();
    write_frame_header(kind::SETTINGS, len as u64, dst);
    for &(id, value) in pairs {
        varint::encode(id, dst);
        varint::encode(value, dst);
    }
}

/// Appends a GOAWAY frame. A server sends the ID of the first request stream it will not
/// process (client-initiated bidirectional, so a multiple of 4); every later GOAWAY must
/// carry an ID no larger (§5.2).
pub fn write_goaway<B: BufMut>(id: u64, dst: &mut B) {
    write_frame_header(kind::GOAWAY, varint::len(id) as u64, dst);
    varint::encode(id, dst);
}

#[cfg(test)]
#[path = "frame_tests.rs"]
mod tests;
