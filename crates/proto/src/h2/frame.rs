//! HTTP/2 frames (RFC 9113 §4 and §6): the 9-byte header, the frame types and flags, error
//! codes, settings, and the writers that append each frame the server sends to an output
//! buffer.

use std::fmt;

/// Length of a frame header.
pub const HEADER_LEN: usize = 9;
/// The smallest `SETTINGS_MAX_FRAME_SIZE`, and every peer's value until it says otherwise.
pub const DEFAULT_MAX_FRAME_SIZE: u32 = 16_384;
/// The largest `SETTINGS_MAX_FRAME_SIZE` allowed.
pub const MAX_MAX_FRAME_SIZE: u32 = (1 << 24) - 1;
/// The largest flow-control window (and initial window size).
pub const MAX_WINDOW: u32 = (1 << 31) - 1;
/// Every window's size until SETTINGS or WINDOW_UPDATE change it.
pub const DEFAULT_WINDOW: u32 = 65_535;

/// A frame type (RFC 9113 §6). Types this server does not know are carried as `Unknown` so
/// they can be ignored, as §4.1 requires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Request or response body bytes.
    Data,
    /// A header block's first fragment; opens a stream.
    Headers,
    /// Stream priority (deprecated by RFC 9113; parsed and ignored).
    Priority,
    /// Abrupt end of one stream.
    RstStream,
    /// Connection settings, or their acknowledgement.
    Settings,
    /// Server push (never valid from a client).
    PushPromise,
    /// Liveness check; answered with the same payload.
    Ping,
    /// End of the connection.
    GoAway,
    /// Flow-control credit.
    WindowUpdate,
    /// A header block's next fragment.
    Continuation,
    /// An extension frame type.
    Unknown(u8),
}

impl Kind {
    /// The type with code `b`.
    pub fn from_byte(b: u8) -> Kind {
        match b {
            0x0 => Kind::Data,
            0x1 => Kind::Headers,
            0x2 => Kind::Priority,
            0x3 => Kind::RstStream,
            0x4 => Kind::Settings,
            0x5 => Kind::PushPromise,
            0x6 => Kind::Ping,
            0x7 => Kind::GoAway,
            0x8 => Kind::WindowUpdate,
            0x9 => Kind::Continuation,
            other => Kind::Unknown(other),
        }
    }

    /// The code of this type.
    pub fn to_byte(self) -> u8 {
        match self {
            Kind::Data => 0x0,
            Kind::Headers => 0x1,
            Kind::Priority => 0x2,
            Kind::RstStream => 0x3,
            Kind::Settings => 0x4,
            Kind::PushPromise => 0x5,
            Kind::Ping => 0x6,
            Kind::GoAway => 0x7,
            Kind::WindowUpdate => 0x8,
            Kind::Continuation => 0x9,
            Kind::Unknown(b) => b,
        }
    }
}

/// Frame flags (their meaning depends on the type; these are the ones RFC 9113 defines).
pub mod flags {
    /// DATA, HEADERS: the sender's last frame on the stream.
    pub const END_STREAM: u8 = 0x1;
    /// SETTINGS, PING: an acknowledgement.
    pub const ACK: u8 = 0x1;
    /// HEADERS, CONTINUATION: the header block ends in this frame.
    pub const END_HEADERS: u8 = 0x4;
    /// DATA, HEADERS: a pad length byte leads the payload.
    pub const PADDED: u8 = 0x8;
    /// HEADERS: stream dependency and weight lead the header block.
    pub const PRIORITY: u8 = 0x20;
}

/// A frame header: payload length, type, flags and stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameHeader {
    /// Payload length (24 bits).
    pub len: u32,
    /// Frame type.
    pub kind: Kind,
    /// Type-specific flags.
    pub flags: u8,
    /// Stream identifier (the reserved bit cleared); 0 for the connection.
    pub stream: u32,
}

impl FrameHeader {
    /// Reads a header from the first 9 bytes of `b`; `None` if there are fewer.
    pub fn parse(b: &[u8]) -> Option<FrameHeader> {
        let h: &[u8; HEADER_LEN] = b.get(..HEADER_LEN)?.try_into().ok()?;
        Some(FrameHeader {
            len: u32::from_be_bytes([0, h[0], h[1], h[2]]),
            kind: Kind::from_byte(h[3]),
            flags: h[4],
            stream: u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & MAX_WINDOW,
        })
    }

    /// Whether `flag` is set.
    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }

    /// Appends the 9 header bytes to `dst`.
    pub fn encode(&self, dst: &mut Vec<u8>) {
        let len = self.len.to_be_bytes();
        dst.extend_from_slice(&[len[1], len[2], len[3], self.kind.to_byte(), self.flags]);
        dst.extend_from_slice(&self.stream.to_be_bytes());
    }
}

/// An error code of RST_STREAM and GOAWAY (RFC 9113 §7). Codes this server does not know are
/// kept as they came (they mean `INTERNAL_ERROR` to it).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Reason(pub u32);

impl Reason {
    /// Graceful end.
    pub const NO_ERROR: Reason = Reason(0x0);
    /// The peer broke the protocol.
    pub const PROTOCOL_ERROR: Reason = Reason(0x1);
    /// An unexpected failure of the sender.
    pub const INTERNAL_ERROR: Reason = Reason(0x2);
    /// The peer broke flow control.
    pub const FLOW_CONTROL_ERROR: Reason = Reason(0x3);
    /// SETTINGS not acknowledged in time.
    pub const SETTINGS_TIMEOUT: Reason = Reason(0x4);
    /// A frame came on a stream already half-closed or closed.
    pub const STREAM_CLOSED: Reason = Reason(0x5);
    /// A frame had an invalid size.
    pub const FRAME_SIZE_ERROR: Reason = Reason(0x6);
    /// The stream was refused before any processing.
    pub const REFUSED_STREAM: Reason = Reason(0x7);
    /// The stream is no longer needed.
    pub const CANCEL: Reason = Reason(0x8);
    /// The header compression state cannot be maintained.
    pub const COMPRESSION_ERROR: Reason = Reason(0x9);
    /// A CONNECT tunnel failed.
    pub const CONNECT_ERROR: Reason = Reason(0xa);
    /// The peer is generating excessive load.
    pub const ENHANCE_YOUR_CALM: Reason = Reason(0xb);
    /// The transport's security is not good enough.
    pub const INADEQUATE_SECURITY: Reason = Reason(0xc);
    /// HTTP/1.1 is required for the request.
    pub const HTTP_1_1_REQUIRED: Reason = Reason(0xd);

    fn name(self) -> Option<&'static str> {
        const NAMES: [&str; 14] = [
            "NO_ERROR",
            "PROTOCOL_ERROR",
            "INTERNAL_ERROR",
            "FLOW_CONTROL_ERROR",
            "SETTINGS_TIMEOUT",
            "STREAM_CLOSED",
            "FRAME_SIZE_ERROR",
            "REFUSED_STREAM",
            "CANCEL",
            "COMPRESSION_ERROR",
            "CONNECT_ERROR",
            "ENHANCE_YOUR_CALM",
            "INADEQUATE_SECURITY",
            "HTTP_1_1_REQUIRED",
        ];
        NAMES.get(self.0 as usize).copied()
    }
}

impl fmt::Debug for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "Reason({:#x})", self.0),
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// Setting identifiers (RFC 9113 §6.5.2).
pub mod setting {
    /// The peer's HPACK dynamic table size limit for our encoder.
    pub const HEADER_TABLE_SIZE: u16 = 0x1;
    /// Whether server push is allowed (0 or 1).
    pub const ENABLE_PUSH: u16 = 0x2;
    /// Streams the sender lets the receiver open at once.
    pub const MAX_CONCURRENT_STREAMS: u16 = 0x3;
    /// The initial window of every stream, for data the sender receives.
    pub const INITIAL_WINDOW_SIZE: u16 = 0x4;
    /// The largest frame payload the sender accepts.
    pub const MAX_FRAME_SIZE: u16 = 0x5;
    /// The largest header list the sender accepts (advisory).
    pub const MAX_HEADER_LIST_SIZE: u16 = 0x6;
    /// Whether the sender (a server) takes extended CONNECT (0 or 1, RFC 8441 §3).
    pub const ENABLE_CONNECT_PROTOCOL: u16 = 0x8;
}

/// Appends a frame header for a payload of `len` bytes.
pub fn write_header(dst: &mut Vec<u8>, len: usize, kind: Kind, flags: u8, stream: u32) {
    FrameHeader {
        len: len as u32,
        kind,
        flags,
        stream,
    }
    .encode(dst);
}

/// Appends a SETTINGS frame carrying `settings` (identifier, value).
pub fn write_settings(dst: &mut Vec<u8>, settings: &[(u16, u32)]) {
    write_header(dst, settings.len() * 6, Kind::Settings, 0, 0);
    for &(id, value) in settings {
        dst.extend_from_slice(&id.to_be_bytes());
        dst.extend_from_slice(&value.to_be_bytes());
    }
}

/// Appends the acknowledgement of the peer's SETTINGS.
pub fn write_settings_ack(dst: &mut Vec<u8>) {
    write_header(dst, 0, Kind::Settings, flags::ACK, 0);
}

/// Appends the answer to a PING carrying `payload`.
pub fn write_ping_ack(dst: &mut Vec<u8>, payload: [u8; 8]) {
    write_header(dst, 8, Kind::Ping, flags::ACK, 0);
    dst.extend_from_slice(&payload);
}

/// Appends a WINDOW_UPDATE granting `increment` bytes on `stream` (0: the connection).
pub fn write_window_update(dst: &mut Vec<u8>, stream: u32, increment: u32) {
    write_header(dst, 4, Kind::WindowUpdate, 0, stream);
    dst.extend_from_slice(&increment.to_be_bytes());
}

/// Appends an RST_STREAM ending `stream` with `reason`.
pub fn write_rst_stream(dst: &mut Vec<u8>, stream: u32, reason: Reason) {
    write_header(dst, 4, Kind::RstStream, 0, stream);
    dst.extend_from_slice(&reason.0.to_be_bytes());
}

/// Appends a GOAWAY: streams up to `last_stream` were or will be processed.
pub fn write_goaway(dst: &mut Vec<u8>, last_stream: u32, reason: Reason) {
    write_header(dst, 8, Kind::GoAway, 0, 0);
    dst.extend_from_slice(&last_stream.to_be_bytes());
    dst.extend_from_slice(&reason.0.to_be_bytes());
}

/// Appends one DATA frame carrying `data` (at most the peer's frame size: the caller splits).
pub fn write_data(dst: &mut Vec<u8>, stream: u32, data: &[u8], end_stream: bool) {
    let flags = if end_stream { flags::END_STREAM } else { 0 };
    write_header(dst, data.len(), Kind::Data, flags, stream);
    dst.extend_from_slice(data);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip() {
        let h = FrameHeader {
            len: 0x01_02_03,
            kind: Kind::Headers,
            flags: flags::END_HEADERS | flags::END_STREAM,
            stream: 0x7fff_fffe,
        };
        let mut b = Vec::new();
        h.encode(&mut b);
        assert_eq!(b, [1, 2, 3, 1, 5, 0x7f, 0xff, 0xff, 0xfe]);
        assert_eq!(FrameHeader::parse(&b), Some(h));
        assert!(FrameHeader::parse(&b[..8]).is_none());
    }

    #[test]
    fn reserved_bit_is_ignored_and_unknown_types_kept() {
        let h = FrameHeader::parse(&[0, 0, 0, 0xfa, 0, 0x80, 0, 0, 1]).unwrap();
        assert_eq!(h.stream, 1);
        assert_eq!(h.kind, Kind::Unknown(0xfa));
        for b in 0..=255u8 {
            assert_eq!(Kind::from_byte(b).to_byte(), b);
        }
    }

    #[test]
    fn control_frames_encode_exactly() {
        let mut b = Vec::new();
        write_settings(&mut b, &[(setting::MAX_CONCURRENT_STREAMS, 100)]);
        assert_eq!(b, [0, 0, 6, 4, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 100]);
        b.clear();
        write_settings_ack(&mut b);
        assert_eq!(b, [0, 0, 0, 4, 1, 0, 0, 0, 0]);
        b.clear();
        write_ping_ack(&mut b, [1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(b, [0, 0, 8, 6, 1, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8]);
        b.clear();
        write_window_update(&mut b, 3, 1000);
        assert_eq!(b, [0, 0, 4, 8, 0, 0, 0, 0, 3, 0, 0, 3, 0xe8]);
        b.clear();
        write_rst_stream(&mut b, 5, Reason::CANCEL);
        assert_eq!(b, [0, 0, 4, 3, 0, 0, 0, 0, 5, 0, 0, 0, 8]);
        b.clear();
        write_goaway(&mut b, 7, Reason::ENHANCE_YOUR_CALM);
        assert_eq!(b, [0, 0, 8, 7, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0xb]);
        b.clear();
        write_data(&mut b, 1, b"hi", true);
        assert_eq!(b, [0, 0, 2, 0, 1, 0, 0, 0, 1, b'h', b'i']);
    }

    #[test]
    fn reasons_print_their_names() {
        assert_eq!(Reason::ENHANCE_YOUR_CALM.to_string(), "ENHANCE_YOUR_CALM");
        assert_eq!(format!("{:?}", Reason(0x42)), "Reason(0x42)");
    }
}
