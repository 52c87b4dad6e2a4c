use bytes::Bytes;

use super::*;
use crate::h3::frame::{self, kind, write_data_header, write_frame_header, write_headers};
use crate::h3::Scope;

fn control(bytes: &[u8]) -> (Vec<ControlEvent>, Result<(), Error>) {
    let mut stream = ControlStream::new(1024);
    let mut buf = BytesMut::from(bytes);
    let mut events = Vec::new();
    loop {
        match stream.decode(&mut buf) {
            Ok(Some(e)) => events.push(e),
            Ok(None) => return (events, Ok(())),
            Err(e) => return (events, Err(e)),
        }
    }
}

fn settings() -> Vec<u8> {
    let mut out = Vec::new();
    frame::write_settings(&Settings::default(), &mut out);
    out
}

fn id_frame(ty: u64, id: u64) -> Vec<u8> {
    let mut out = Vec::new();
    write_frame_header(ty, varint::len(id) as u64, &mut out);
    varint::encode(id, &mut out);
    out
}

#[test]
fn control_stream_begins_with_settings() {
    let mut bytes = settings();
    bytes.extend(id_frame(kind::GOAWAY, 8));
    bytes.extend(id_frame(kind::MAX_PUSH_ID, 3));
    let (events, result) = control(&bytes);
    assert_eq!(result, Ok(()));
    assert_eq!(
        events,
        [
            ControlEvent::Settings(Settings::default()),
            ControlEvent::Goaway(8),
            ControlEvent::MaxPushId(3),
        ]
    );
    // Anything else first: H3_MISSING_SETTINGS; an unknown frame first is skipped, and
    // does not count as the first frame.
    let (_, result) = control(&id_frame(kind::GOAWAY, 0));
    assert_eq!(result.unwrap_err().code(), Code::H3_MISSING_SETTINGS);
    let mut bytes = Vec::new();
    write_frame_header(0x21, 0, &mut bytes);
    bytes.extend(settings());
    assert_eq!(control(&bytes).0.len(), 1);
}

#[test]
fn control_stream_errors() {
    let cases: [(Vec<u8>, Code); 8] = [
        // We never push, so any push ID a client cancels was never promised (§7.2.3).
        (id_frame(kind::CANCEL_PUSH, 1), Code::H3_ID_ERROR),
        (settings(), Code::H3_FRAME_UNEXPECTED), // a second SETTINGS
        (
            {
                let mut b = Vec::new();
                write_data_header(0, &mut b);
                b
            },
            Code::H3_FRAME_UNEXPECTED,
        ),
        (
            {
                let mut b = Vec::new();
                write_headers(&[0, 0], &mut b);
                b
            },
            Code::H3_FRAME_UNEXPECTED,
        ),
        (
            {
                let mut b = Vec::new();
                write_frame_header(kind::PUSH_PROMISE, 3, &mut b);
                b.extend([0, 0, 0]);
                b
            },
            Code::H3_FRAME_UNEXPECTED,
        ),
        (
            [id_frame(kind::GOAWAY, 8), id_frame(kind::GOAWAY, 12)].concat(),
            Code::H3_ID_ERROR,
        ),
        (
            [
                id_frame(kind::MAX_PUSH_ID, 8),
                id_frame(kind::MAX_PUSH_ID, 7),
            ]
            .concat(),
            Code::H3_ID_ERROR,
        ),
        (
            {
                let mut b = Vec::new();
                write_frame_header(0x06, 8, &mut b); // HTTP/2 PING
                b.extend([0; 8]);
                b
            },
            Code::H3_FRAME_UNEXPECTED,
        ),
    ];
    for (i, (after, code)) in cases.into_iter().enumerate() {
        let bytes = [settings(), after].concat();
        let e = control(&bytes).1.unwrap_err();
        assert_eq!(e.code(), code, "case {i}");
        assert!(e.is_connection_error());
    }
    // A GOAWAY that repeats the last ID, or lowers it, is fine.
    let bytes = [
        settings(),
        id_frame(kind::GOAWAY, 8),
        id_frame(kind::GOAWAY, 8),
        id_frame(kind::GOAWAY, 4),
    ]
    .concat();
    assert_eq!(control(&bytes).1, Ok(()));
    assert_eq!(
        ControlStream::new(16).closed().code(),
        Code::H3_CLOSED_CRITICAL_STREAM
    );
}

#[test]
fn stream_types() {
    for (value, ty) in [
        (0x00, StreamType::Control),
        (0x01, StreamType::Push),
        (0x02, StreamType::QpackEncoder),
        (0x03, StreamType::QpackDecoder),
        (0x21, StreamType::Unknown(0x21)),
        (0x54, StreamType::Unknown(0x54)),
    ] {
        assert_eq!(StreamType::from_value(value), ty);
        let mut buf = BytesMut::new();
        ty.encode(&mut buf);
        buf.extend_from_slice(b"rest");
        assert_eq!(StreamType::decode(&mut buf), Some(ty));
        assert_eq!(&buf[..], b"rest");
    }
    assert!(StreamType::is_reserved(0x21));
    assert!(StreamType::is_reserved(0x1f * 1000 + 0x21));
    assert!(!StreamType::is_reserved(0x22));
    assert!(!StreamType::is_reserved(0x02));
    let mut buf = BytesMut::from(&[0x40][..]); // a two-byte varint, cut
    assert_eq!(StreamType::decode(&mut buf), None);
    assert_eq!(buf.len(), 1);
}

#[test]
fn peer_streams_refuse_duplicates_and_pushes() {
    let mut peer = PeerStreams::new();
    for ty in [
        StreamType::Control,
        StreamType::QpackEncoder,
        StreamType::QpackDecoder,
    ] {
        assert_eq!(peer.open(ty), Ok(()));
        assert_eq!(
            peer.open(ty).unwrap_err().code(),
            Code::H3_STREAM_CREATION_ERROR
        );
        assert_eq!(
            peer.closed(ty).unwrap_err().code(),
            Code::H3_CLOSED_CRITICAL_STREAM
        );
    }
    assert_eq!(
        peer.open(StreamType::Push).unwrap_err().code(),
        Code::H3_STREAM_CREATION_ERROR
    );
    // Unknown types, reserved or not, as often as the client likes.
    for _ in 0..3 {
        assert_eq!(peer.open(StreamType::Unknown(0x21)), Ok(()));
        assert_eq!(peer.open(StreamType::Unknown(0x99)), Ok(()));
    }
    assert_eq!(peer.closed(StreamType::Unknown(0x21)), Ok(()));
}

/// Feeds a request stream `bytes`, then its FIN.
fn request(bytes: &[u8], content_length: Option<u64>) -> (Vec<RequestEvent>, Result<(), Error>) {
    let mut stream = RequestStream::new(64);
    stream.set_content_length(content_length);
    let mut buf = BytesMut::from(bytes);
    let mut events = Vec::new();
    loop {
        match stream.decode(&mut buf) {
            Ok(Some(e)) => events.push(e),
            Ok(None) => return (events, stream.finish(&buf)),
            Err(e) => return (events, Err(e)),
        }
    }
}

fn headers(section: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    write_headers(section, &mut out);
    out
}

fn data(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    write_data_header(payload.len() as u64, &mut out);
    out.extend_from_slice(payload);
    out
}

#[test]
fn request_stream_in_order() {
    let mut unknown = Vec::new();
    write_frame_header(0x21, 2, &mut unknown);
    unknown.extend_from_slice(b"??");
    let bytes = [
        headers(b"H"),
        unknown.clone(),
        data(b"ab"),
        data(b""),
        unknown,
        data(b"c"),
        headers(b"T"),
    ]
    .concat();
    let (events, result) = request(&bytes, Some(3));
    assert_eq!(result, Ok(()));
    assert_eq!(
        events,
        [
            RequestEvent::Head(Bytes::from_static(b"H")),
            RequestEvent::Data(Bytes::from_static(b"ab")),
            RequestEvent::Data(Bytes::from_static(b"c")),
            RequestEvent::Trailers(Bytes::from_static(b"T")),
        ]
    );
    // Cut at every byte boundary: the same events, DATA maybe in more pieces.
    for cut in 0..=bytes.len() {
        let mut stream = RequestStream::new(64);
        let mut buf = BytesMut::new();
        let mut body = Vec::new();
        let mut count = 0;
        for part in [&bytes[..cut], &bytes[cut..]] {
            buf.extend_from_slice(part);
            while let Some(e) = stream.decode(&mut buf).unwrap() {
                match e {
                    RequestEvent::Data(piece) => {
                        assert!(!piece.is_empty());
                        body.extend_from_slice(&piece);
                    }
                    _ => count += 1,
                }
            }
        }
        assert_eq!((body.as_slice(), count), (&b"abc"[..], 2), "cut {cut}");
        assert_eq!(stream.finish(&buf), Ok(()));
        assert_eq!(stream.received(), 3);
    }
}

#[test]
fn request_stream_errors() {
    let mut settings_frame = Vec::new();
    frame::write_settings(&Settings::default(), &mut settings_frame);
    let cases: [(Vec<u8>, Code, Scope); 9] = [
        (data(b"x"), Code::H3_FRAME_UNEXPECTED, Scope::Connection),
        (data(b""), Code::H3_FRAME_UNEXPECTED, Scope::Connection),
        (
            [headers(b"H"), headers(b"T"), data(b"x")].concat(),
            Code::H3_FRAME_UNEXPECTED,
            Scope::Connection,
        ),
        (
            [headers(b"H"), headers(b"T"), headers(b"U")].concat(),
            Code::H3_FRAME_UNEXPECTED,
            Scope::Connection,
        ),
        (
            [headers(b"H"), settings_frame].concat(),
            Code::H3_FRAME_UNEXPECTED,
            Scope::Connection,
        ),
        (
            [headers(b"H"), id_frame(kind::GOAWAY, 0)].concat(),
            Code::H3_FRAME_UNEXPECTED,
            Scope::Connection,
        ),
        (
            {
                let mut b = Vec::new();
                write_frame_header(kind::PUSH_PROMISE, 3, &mut b);
                b.extend([0, 0, 0]);
                b
            },
            Code::H3_FRAME_UNEXPECTED,
            Scope::Connection,
        ),
        // A head over the frame limit (64): the request's problem only.
        (headers(&[0; 65]), Code::H3_EXCESSIVE_LOAD, Scope::Stream),
        // The stream ends with no head.
        (Vec::new(), Code::H3_REQUEST_INCOMPLETE, Scope::Stream),
    ];
    for (i, (bytes, code, scope)) in cases.into_iter().enumerate() {
        let e = request(&bytes, None).1.unwrap_err();
        assert_eq!((e.code(), e.scope()), (code, scope), "case {i}");
    }
    // The stream ends inside a frame.
    let bytes = [headers(b"H"), data(b"abc")[..3].to_vec()].concat();
    let e = request(&bytes, None).1.unwrap_err();
    assert_eq!(e.code(), Code::H3_FRAME_ERROR);
    assert!(e.is_connection_error());
}

#[test]
fn body_must_match_content_length() {
    let bytes = [headers(b"H"), data(b"abc")].concat();
    assert_eq!(request(&bytes, Some(3)).1, Ok(()));
    assert_eq!(request(&bytes, None).1, Ok(()));
    for wrong in [2, 4] {
        let e = request(&bytes, Some(wrong)).1.unwrap_err();
        assert_eq!(
            (e.code(), e.scope()),
            (Code::H3_MESSAGE_ERROR, Scope::Stream)
        );
    }
    // Longer is caught as the DATA arrives, not at the end.
    let mut stream = RequestStream::new(64);
    let mut buf = BytesMut::from(&headers(b"H")[..]);
    assert!(matches!(
        stream.decode(&mut buf),
        Ok(Some(RequestEvent::Head(_)))
    ));
    stream.set_content_length(Some(1));
    let mut buf = BytesMut::new();
    write_data_header(100, &mut buf);
    buf.extend_from_slice(b"ab");
    assert_eq!(
        stream.decode(&mut buf).unwrap_err().code(),
        Code::H3_MESSAGE_ERROR
    );
}

/// Once a CONNECT's tunnel is open (RFC 9114 §4.4), DATA flows to the stream's end, unknown
/// frames are still skipped, and HEADERS is a connection error (H3_FRAME_UNEXPECTED).
#[test]
fn a_tunnel_takes_data_only() {
    let mut unknown = Vec::new();
    write_frame_header(0x21, 1, &mut unknown);
    unknown.push(b'?');
    let mut stream = RequestStream::new(64);
    let mut buf = BytesMut::from(&headers(b"H")[..]);
    assert_eq!(
        stream.decode(&mut buf),
        Ok(Some(RequestEvent::Head(Bytes::from_static(b"H"))))
    );
    stream.open_tunnel();
    buf.extend_from_slice(&[data(b"ws"), unknown, data(b"!")].concat());
    let mut got = Vec::new();
    while let Some(RequestEvent::Data(piece)) = stream.decode(&mut buf).unwrap() {
        got.extend_from_slice(&piece);
    }
    assert_eq!(got, b"ws!");
    assert_eq!(stream.finish(&buf), Ok(()));
    buf.extend_from_slice(&headers(b"T"));
    let e = stream.decode(&mut buf).unwrap_err();
    assert_eq!(
        (e.code(), e.scope()),
        (Code::H3_FRAME_UNEXPECTED, Scope::Connection)
    );
}
