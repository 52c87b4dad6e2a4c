//! What the tests of every module here share: frame builders and a connection to drive.

pub(super) use bytes::{Bytes, BytesMut};

pub(super) use super::{Connection, Error, Event, Settings};
pub(super) use crate::h2::frame::{self, flags, FrameHeader, Kind, Reason};
pub(super) use crate::h2::hpack::Decoder;
pub(super) use crate::H2_PREFACE;

pub(super) const GET: [u8; 6] = [0x82, 0x86, 0x84, 0x41, 0x01, b't'];
pub(super) const POST: [u8; 6] = [0x83, 0x86, 0x84, 0x41, 0x01, b't'];

pub(super) fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    frame::write_header(&mut f, payload.len(), Kind::from_byte(kind), flags, stream);
    f.extend_from_slice(payload);
    f
}

pub(super) fn headers(stream: u32, flags: u8, block: &[u8]) -> Vec<u8> {
    frame(0x1, flags | flags::END_HEADERS, stream, block)
}

pub(super) fn data(stream: u32, flags: u8, payload: &[u8]) -> Vec<u8> {
    frame(0x0, flags, stream, payload)
}

/// The frames in `out`, as (header, payload).
pub(super) fn frames(out: &[u8]) -> Vec<(FrameHeader, Vec<u8>)> {
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
pub(super) fn open(settings: Settings) -> Connection {
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
pub(super) fn run(conn: &mut Connection, bytes: &[u8]) -> (Vec<Event>, Vec<u8>, Option<Error>) {
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

pub(super) fn goaway_code(out: &[u8]) -> Option<Reason> {
    frames(out)
        .iter()
        .find(|(h, _)| h.kind == Kind::GoAway)
        .map(|(_, p)| Reason(u32::from_be_bytes(p[4..8].try_into().unwrap())))
}

pub(super) fn rst_code(out: &[u8], stream: u32) -> Option<Reason> {
    frames(out)
        .iter()
        .find(|(h, _)| h.kind == Kind::RstStream && h.stream == stream)
        .map(|(_, p)| Reason(u32::from_be_bytes(p[..4].try_into().unwrap())))
}

pub(super) fn decode_block(block: &[u8]) -> Vec<(String, String)> {
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
