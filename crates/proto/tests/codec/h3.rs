//! HTTP/3 through the public API only, as a server built on a QUIC stack uses it: every stream
//! of one connection, each fed split at every byte boundary.

use bytes::BytesMut;
use volt_proto::h3::qpack::{self, Indexing};
use volt_proto::h3::{
    self, frame, Code, ControlEvent, ControlStream, Head, PeerStreams, RequestEvent, RequestStream,
    Settings, StreamType,
};

const LIMIT: usize = 16 * 1024;

/// Our settings, configured from outside the crate (the struct is `#[non_exhaustive]`).
fn our_settings() -> Settings {
    let mut settings = Settings::default();
    settings.max_field_section_size = Some(LIMIT as u64);
    settings
}

/// The client's control stream: its type, a reserved frame, SETTINGS, GOAWAY.
fn client_control() -> Vec<u8> {
    let mut out = Vec::new();
    StreamType::Control.encode(&mut out);
    frame::write_frame_header(0x21 + 0x1f * 3, 2, &mut out);
    out.extend_from_slice(b"..");
    let mut settings = Settings::default();
    settings.max_field_section_size = Some(8192);
    settings.h3_datagram = true;
    frame::write_settings(&settings, &mut out);
    frame::write_goaway(0, &mut out);
    out
}

fn client_request() -> Vec<u8> {
    let mut section = Vec::new();
    let mut encoder = qpack::Encoder::new();
    encoder.begin(&mut section);
    for (name, value) in [
        (&b":method"[..], &b"POST"[..]),
        (b":scheme", b"https"),
        (b":authority", b"example.com"),
        (b":path", b"/upload"),
        (b"content-length", b"11"),
        (b"te", b"trailers"),
    ] {
        encoder.field(name, value, Indexing::Once, &mut section);
    }
    let mut out = Vec::new();
    frame::write_headers(&section, &mut out);
    for piece in [&b"hello "[..], b"world"] {
        frame::write_data_header(piece.len() as u64, &mut out);
        out.extend_from_slice(piece);
    }
    let mut trailers = Vec::new();
    encoder.begin(&mut trailers);
    encoder.field(b"x-sum", b"42", Indexing::Once, &mut trailers);
    frame::write_headers(&trailers, &mut out);
    out
}

/// Feeds `bytes` in two parts cut at `cut`, as QUIC might deliver them.
fn parts(bytes: &[u8], cut: usize) -> [&[u8]; 2] {
    [&bytes[..cut], &bytes[cut..]]
}

#[test]
fn our_control_stream() {
    let mut out = BytesMut::new();
    StreamType::Control.encode(&mut out);
    frame::write_settings(&our_settings(), &mut out);
    // Type 0x00, SETTINGS (0x04) of 4 bytes: MAX_FIELD_SECTION_SIZE (0x06) = 16384.
    assert_eq!(&out[..], [0x00, 0x04, 0x05, 0x06, 0x80, 0x00, 0x40, 0x00]);
}

#[test]
fn client_control_stream_split_everywhere() {
    let bytes = client_control();
    for cut in 0..=bytes.len() {
        let mut peer = PeerStreams::new();
        let mut buf = BytesMut::new();
        let mut ty = None;
        let mut control = ControlStream::new(LIMIT);
        let mut events = Vec::new();
        for part in parts(&bytes, cut) {
            buf.extend_from_slice(part);
            if ty.is_none() {
                ty = StreamType::decode(&mut buf);
                if let Some(ty) = ty {
                    peer.open(ty).unwrap();
                }
            }
            if ty.is_some() {
                while let Some(e) = control.decode(&mut buf).unwrap() {
                    events.push(e);
                }
            }
        }
        assert_eq!(ty, Some(StreamType::Control));
        let ControlEvent::Settings(settings) = &events[0] else {
            panic!("{events:?}")
        };
        assert_eq!(settings.max_field_section_size, Some(8192));
        assert!(settings.h3_datagram);
        assert_eq!(events[1], ControlEvent::Goaway(0));
        assert_eq!(control.closed().code(), Code::H3_CLOSED_CRITICAL_STREAM);
    }
}

#[test]
fn client_qpack_streams() {
    let mut peer = PeerStreams::new();
    let mut enc = BytesMut::from(&[0x02, 0x20][..]); // encoder stream: capacity 0
    let mut dec = BytesMut::from(&[0x03, 0x41][..]); // decoder stream: cancel stream 1
    for (buf, ty) in [
        (&mut enc, StreamType::QpackEncoder),
        (&mut dec, StreamType::QpackDecoder),
    ] {
        assert_eq!(StreamType::decode(buf), Some(ty));
        peer.open(ty).unwrap();
    }
    qpack::EncoderStream::new().decode(&mut enc).unwrap();
    qpack::DecoderStream::new().decode(&mut dec).unwrap();
    assert!(enc.is_empty() && dec.is_empty());
    // A reserved stream type: ignored.
    let mut grease = BytesMut::from(&[0x40, 0x21, 1, 2, 3][..]);
    let ty = StreamType::decode(&mut grease).unwrap();
    assert_eq!(ty, StreamType::Unknown(0x21));
    assert!(StreamType::is_reserved(ty.value()));
    peer.open(ty).unwrap();
}

#[test]
fn request_stream_split_everywhere() {
    let bytes = client_request();
    for cut in 0..=bytes.len() {
        let mut stream = RequestStream::new(LIMIT);
        let mut decoder = qpack::Decoder::new();
        let (mut head, mut trailers) = (Head::default(), Head::default());
        let mut body = Vec::new();
        let mut buf = BytesMut::new();
        for part in parts(&bytes, cut) {
            buf.extend_from_slice(part);
            while let Some(event) = stream.decode(&mut buf).unwrap() {
                match event {
                    RequestEvent::Head(s) => {
                        h3::decode_request(&mut decoder, &s, LIMIT, &mut head).unwrap();
                        stream.set_content_length(head.content_length);
                    }
                    RequestEvent::Data(piece) => body.extend_from_slice(&piece),
                    RequestEvent::Trailers(s) => {
                        h3::decode_trailers(&mut decoder, &s, LIMIT, &mut trailers).unwrap();
                    }
                    _ => unreachable!(),
                }
            }
        }
        stream.finish(&buf).unwrap();
        assert_eq!(head.get(head.method), b"POST");
        assert_eq!(head.content_length, Some(11));
        assert_eq!(body, b"hello world");
        assert_eq!(trailers.get(trailers.fields[0].value), b"42");
    }
}
