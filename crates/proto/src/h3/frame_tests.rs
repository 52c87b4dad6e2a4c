use super::*;

/// Decodes all of `buf` at once: the frames, and what was left over.
fn decode_all(bytes: &[u8], max: usize) -> (Vec<Frame>, Result<(), Error>, usize) {
    let mut dec = FrameDecoder::new(max);
    let mut buf = BytesMut::from(bytes);
    let mut frames = Vec::new();
    loop {
        match dec.decode(&mut buf) {
            Ok(Some(f)) => frames.push(f),
            Ok(None) => return (frames, Ok(()), buf.len()),
            Err(e) => return (frames, Err(e), buf.len()),
        }
    }
}

fn err(bytes: &[u8]) -> Error {
    decode_all(bytes, DEFAULT_MAX_FRAME_SIZE).1.unwrap_err()
}

/// Joins adjacent DATA pieces, so that streams fed in different cuts compare equal.
fn joined(frames: Vec<Frame>) -> Vec<Frame> {
    let mut out: Vec<Frame> = Vec::new();
    for f in frames {
        match (out.last_mut(), f) {
            (Some(Frame::Data(last)), Frame::Data(piece)) => {
                let mut both = BytesMut::from(&last[..]);
                both.extend_from_slice(&piece);
                *last = both.freeze();
            }
            (_, f) => out.push(f),
        }
    }
    out
}

/// A stream with one frame of each kind a server may receive, and frames to skip.
fn sample_stream() -> Vec<u8> {
    let mut out = Vec::new();
    let settings = Settings {
        max_field_section_size: Some(8192),
        qpack_blocked_streams: 3,
        ..Settings::default()
    };
    write_settings(&settings, &mut out);
    // A reserved frame type (0x21 + 0x1f) with a 3-byte payload, to be skipped.
    write_frame_header(0x40, 3, &mut out);
    out.extend_from_slice(b"xyz");
    write_headers(b"\x00\x00\xd1", &mut out);
    write_data_header(5, &mut out);
    out.extend_from_slice(b"hello");
    write_data_header(0, &mut out);
    write_frame_header(kind::CANCEL_PUSH, 1, &mut out);
    out.push(7);
    write_frame_header(kind::PUSH_PROMISE, 3, &mut out);
    out.extend_from_slice(&[2, 0, 0]);
    write_frame_header(kind::MAX_PUSH_ID, 2, &mut out);
    out.extend_from_slice(&[0x40, 0x80]);
    write_goaway(4, &mut out);
    out
}

fn sample_frames() -> Vec<Frame> {
    let settings = Settings {
        max_field_section_size: Some(8192),
        qpack_blocked_streams: 3,
        ..Settings::default()
    };
    vec![
        Frame::Settings(settings),
        Frame::Headers(Bytes::from_static(b"\x00\x00\xd1")),
        Frame::Data(Bytes::from_static(b"hello")),
        Frame::Data(Bytes::new()),
        Frame::CancelPush(7),
        Frame::PushPromise {
            push_id: 2,
            field_section: Bytes::from_static(&[0, 0]),
        },
        Frame::MaxPushId(128),
        Frame::Goaway(4),
    ]
}

#[test]
fn every_frame_decodes_whole() {
    let (frames, result, left) = decode_all(&sample_stream(), 64);
    assert_eq!((result, left), (Ok(()), 0));
    assert_eq!(frames, sample_frames());
}

/// The stream cut in two at every byte boundary, and fed a byte at a time: the same frames,
/// DATA in pieces that join up to the same payload.
#[test]
fn frames_split_at_every_byte_boundary() {
    let bytes = sample_stream();
    for cut in 0..=bytes.len() {
        let mut dec = FrameDecoder::new(64);
        let mut buf = BytesMut::new();
        let mut frames = Vec::new();
        for part in [&bytes[..cut], &bytes[cut..]] {
            buf.extend_from_slice(part);
            while let Some(f) = dec.decode(&mut buf).unwrap() {
                frames.push(f);
            }
        }
        assert!(buf.is_empty() && dec.is_between_frames(), "cut {cut}");
        dec.finish(&buf).unwrap();
        assert_eq!(joined(frames), joined(sample_frames()), "cut at {cut}");
    }
    let mut dec = FrameDecoder::new(64);
    let mut buf = BytesMut::new();
    let mut frames = Vec::new();
    for &b in &bytes {
        buf.extend_from_slice(&[b]);
        while let Some(f) = dec.decode(&mut buf).unwrap() {
            frames.push(f);
        }
    }
    assert_eq!(joined(frames), joined(sample_frames()));
}

#[test]
fn data_is_handed_out_as_it_arrives() {
    let mut dec = FrameDecoder::new(16);
    let mut buf = BytesMut::new();
    write_data_header(1 << 20, &mut buf); // 1 MiB, far over the frame limit: DATA is not bound
    buf.extend_from_slice(b"abc");
    assert_eq!(
        dec.decode(&mut buf).unwrap(),
        Some(Frame::Data(Bytes::from_static(b"abc")))
    );
    assert_eq!(dec.decode(&mut buf).unwrap(), None);
    assert!(!dec.is_between_frames());
    buf.extend_from_slice(b"de");
    assert_eq!(
        dec.decode(&mut buf).unwrap(),
        Some(Frame::Data(Bytes::from_static(b"de")))
    );
    assert!(buf.is_empty());
    // A FIN now cuts the frame short.
    assert_eq!(dec.finish(&buf).unwrap_err().code(), Code::H3_FRAME_ERROR);
}

#[test]
fn a_data_header_alone_reports_an_empty_piece() {
    let mut dec = FrameDecoder::new(16);
    let mut buf = BytesMut::new();
    write_data_header(3, &mut buf);
    assert_eq!(
        dec.decode(&mut buf).unwrap(),
        Some(Frame::Data(Bytes::new()))
    );
    assert_eq!(dec.decode(&mut buf).unwrap(), None);
}

#[test]
fn frames_over_the_limit_are_refused_before_they_are_buffered() {
    for ty in [
        kind::HEADERS,
        kind::SETTINGS,
        kind::PUSH_PROMISE,
        kind::GOAWAY,
    ] {
        let mut buf = BytesMut::new();
        write_frame_header(ty, 17, &mut buf); // only the header has arrived
        let e = FrameDecoder::new(16).decode(&mut buf).unwrap_err();
        assert_eq!(e.code(), Code::H3_EXCESSIVE_LOAD);
        assert!(e.is_connection_error());
    }
    // At the limit: fine.
    let mut bytes = Vec::new();
    write_headers(&[0; 16], &mut bytes);
    let (frames, result, _) = decode_all(&bytes, 16);
    assert_eq!(result, Ok(()));
    assert_eq!(frames.len(), 1);
}

#[test]
fn unknown_frames_are_skipped_without_buffering() {
    let mut dec = FrameDecoder::new(16);
    let mut buf = BytesMut::new();
    write_frame_header(0x21, 1 << 30, &mut buf); // reserved type, 1 GiB
    for _ in 0..4 {
        buf.extend_from_slice(&[0; 4096]);
        assert_eq!(dec.decode(&mut buf).unwrap(), None);
        assert!(buf.is_empty());
    }
    // Unknown, non-reserved types too, and the frame after them is read.
    let mut bytes = Vec::new();
    write_frame_header(0x1234, 2, &mut bytes);
    bytes.extend_from_slice(b"??");
    write_goaway(8, &mut bytes);
    assert_eq!(decode_all(&bytes, 16).0, [Frame::Goaway(8)]);
}

#[test]
fn http2_frame_types_are_unexpected() {
    for ty in [0x02, 0x06, 0x08, 0x09] {
        let mut bytes = Vec::new();
        write_frame_header(ty, 0, &mut bytes);
        let e = err(&bytes);
        assert_eq!(e.code(), Code::H3_FRAME_UNEXPECTED, "type {ty}");
        assert!(e.is_connection_error());
    }
}

#[test]
fn one_varint_frames_must_be_exactly_one_varint() {
    for ty in [kind::CANCEL_PUSH, kind::GOAWAY, kind::MAX_PUSH_ID] {
        // Empty, a varint cut short (0x40 needs two bytes), a varint and a byte more.
        for payload in [&[][..], &[0x40], &[1, 2]] {
            let mut bytes = Vec::new();
            write_frame_header(ty, payload.len() as u64, &mut bytes);
            bytes.extend_from_slice(payload);
            assert_eq!(err(&bytes).code(), Code::H3_FRAME_ERROR, "{ty} {payload:?}");
        }
    }
    let mut bytes = Vec::new();
    write_frame_header(kind::PUSH_PROMISE, 0, &mut bytes);
    assert_eq!(err(&bytes).code(), Code::H3_FRAME_ERROR);
}

fn settings_frame(pairs: &[(u64, u64)]) -> Vec<u8> {
    let mut payload = Vec::new();
    for &(id, value) in pairs {
        varint::encode(id, &mut payload);
        varint::encode(value, &mut payload);
    }
    let mut bytes = Vec::new();
    write_frame_header(kind::SETTINGS, payload.len() as u64, &mut bytes);
    bytes.extend_from_slice(&payload);
    bytes
}

#[test]
fn settings_are_checked() {
    for id in 0x02..=0x05 {
        let e = err(&settings_frame(&[(id, 0)]));
        assert_eq!(e.code(), Code::H3_SETTINGS_ERROR, "HTTP/2 setting {id}");
    }
    let e = err(&settings_frame(&[(0x06, 1), (0x01, 0), (0x06, 2)]));
    assert_eq!(e.code(), Code::H3_SETTINGS_ERROR);
    // A repeated unknown setting is as wrong as a known one.
    let e = err(&settings_frame(&[(0x21, 1), (0x21, 1)]));
    assert_eq!(e.code(), Code::H3_SETTINGS_ERROR);
    for id in [setting::ENABLE_CONNECT_PROTOCOL, setting::H3_DATAGRAM] {
        let e = err(&settings_frame(&[(id, 2)]));
        assert_eq!(e.code(), Code::H3_SETTINGS_ERROR);
    }
    // A payload ending inside a pair.
    let mut bytes = Vec::new();
    write_frame_header(kind::SETTINGS, 1, &mut bytes);
    bytes.push(0x06);
    assert_eq!(err(&bytes).code(), Code::H3_FRAME_ERROR);
}

#[test]
fn unknown_settings_are_ignored_and_known_ones_read() {
    let bytes = settings_frame(&[
        (0x21, 99), // reserved
        (0x1f * 7 + 0x21, 1),
        (0x4242, 0), // unknown
        (setting::QPACK_MAX_TABLE_CAPACITY, 4096),
        (setting::ENABLE_CONNECT_PROTOCOL, 1),
        (setting::H3_DATAGRAM, 1),
    ]);
    let (frames, result, _) = decode_all(&bytes, 64);
    assert_eq!(result, Ok(()));
    let expected = Settings {
        qpack_max_table_capacity: 4096,
        enable_connect_protocol: true,
        h3_datagram: true,
        ..Settings::default()
    };
    assert_eq!(frames, [Frame::Settings(expected.clone())]);
    // And written back, only what differs from the defaults.
    let mut out = Vec::new();
    write_settings(&expected, &mut out);
    assert_eq!(decode_all(&out, 64).0, [Frame::Settings(expected)]);
}

#[test]
fn encoders_write_rfc_9114_layouts() {
    let mut out = Vec::new();
    write_settings(&Settings::default(), &mut out);
    assert_eq!(out, [0x04, 0x00]); // SETTINGS, empty: every setting at its default
    out.clear();
    write_data_header(300, &mut out);
    assert_eq!(out, [0x00, 0x41, 0x2c]); // DATA, length 300 in two bytes
    out.clear();
    write_goaway(1 << 20, &mut out);
    assert_eq!(out, [0x07, 0x04, 0x80, 0x10, 0x00, 0x00]);
    let mut out = BytesMut::new(); // the encoders write into a BytesMut as well
    write_headers(b"ab", &mut out);
    assert_eq!(&out[..], [0x01, 0x02, b'a', b'b']);
}

#[test]
fn a_stream_may_end_only_between_frames() {
    let mut dec = FrameDecoder::new(16);
    let mut buf = BytesMut::from(&[0x01, 0x05, 0x00][..]); // HEADERS of 5, 1 byte there
    assert_eq!(dec.decode(&mut buf).unwrap(), None);
    assert_eq!(dec.finish(&buf).unwrap_err().code(), Code::H3_FRAME_ERROR);
    let mut buf = BytesMut::from(&[0x21][..]); // a frame type alone
    assert_eq!(dec.decode(&mut buf).unwrap(), None);
    assert!(dec.finish(&buf).is_err());
    assert_eq!(FrameDecoder::new(16).finish(&[]), Ok(()));
}
