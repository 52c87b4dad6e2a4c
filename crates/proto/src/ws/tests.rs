//! Codec tests on byte slices: every rule, and every stream split at every byte.

use bytes::{Bytes, BytesMut};

use super::*;

const KEY: [u8; 4] = [0x37, 0xfa, 0x21, 0x3d];

/// A client's frame: masked with [`KEY`].
fn client(fin: bool, opcode: Opcode, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    encode_frame(&mut out, fin, opcode, payload, Some(KEY));
    out
}

/// Feeds `stream` to a server-side decoder in two reads split at `at`, collecting what it
/// gives until the first error.
fn decode_split(stream: &[u8], at: usize, max: usize) -> (Vec<Incoming>, Option<Error>) {
    let mut decoder = Decoder::new(Role::Server, max);
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    for part in [&stream[..at], &stream[at..]] {
        buf.extend_from_slice(part);
        loop {
            match decoder.decode(&mut buf) {
                Ok(Some(m)) => out.push(m),
                Ok(None) => break,
                Err(e) => return (out, Some(e)),
            }
        }
    }
    assert!(buf.is_empty(), "bytes left over: {buf:?}");
    (out, None)
}

/// `stream` decodes to `expected` (and then `error`), however it is split in two.
fn check(stream: &[u8], max: usize, expected: &[Incoming], error: Option<Error>) {
    for at in 0..=stream.len() {
        let (got, err) = decode_split(stream, at, max);
        // An error may be found before messages that precede it in the stream only if they
        // are after it; here every error is the stream's last frame, so all come first.
        assert_eq!(got, expected, "split at {at}");
        assert_eq!(err, error, "split at {at}");
    }
}

fn text(s: &str) -> Incoming {
    Incoming::Text(Bytes::copy_from_slice(s.as_bytes()))
}

#[test]
fn rfc_examples_decode() {
    // §5.7: a single-frame masked text message "Hello".
    let hello = [
        0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58,
    ];
    check(&hello, 1024, &[text("Hello")], None);
    // Client-side: unmasked "Hello", and "Hel" + "lo" fragmented.
    let mut d = Decoder::new(Role::Client, 1024);
    let mut buf = BytesMut::from(&[0x01, 0x03, 0x48, 0x65, 0x6c, 0x80, 0x02, 0x6c, 0x6f][..]);
    assert_eq!(d.decode(&mut buf), Ok(Some(text("Hello"))));
    // A masked ping "Hello" is refused by a client (§5.1).
    let mut buf = BytesMut::from(
        &[
            0x89, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58,
        ][..],
    );
    assert_eq!(
        d.decode(&mut buf),
        Err(Error::Protocol("server frame masked"))
    );
}

#[test]
fn encodes_the_rfc_examples_and_every_length_form() {
    let mut out = Vec::new();
    encode_frame(&mut out, true, Opcode::Text, b"Hello", Some(KEY));
    assert_eq!(
        out,
        [0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58]
    );
    out.clear();
    encode_frame(&mut out, true, Opcode::Binary, &[0; 256], None);
    assert_eq!(out[..4], [0x82, 0x7E, 0x01, 0x00]);
    assert_eq!(out.len(), 4 + 256);
    out.clear();
    encode_frame(&mut out, true, Opcode::Binary, &[0; 65536], None);
    assert_eq!(out[..10], [0x82, 0x7F, 0, 0, 0, 0, 0, 1, 0, 0]);
    out.clear();
    encode_frame(&mut out, false, Opcode::Text, b"", None);
    assert_eq!(out, [0x01, 0x00]);
    out.clear();
    encode_close(&mut out, Some(1000), "bye", None);
    assert_eq!(out, [0x88, 0x05, 0x03, 0xE8, b'b', b'y', b'e']);
    out.clear();
    encode_close(&mut out, None, "ignored", None);
    assert_eq!(out, [0x88, 0x00]);
    // A long reason is cut at a character boundary within 125 bytes.
    out.clear();
    encode_close(&mut out, Some(1001), &"é".repeat(100), None);
    assert_eq!(out[1], 2 + 122);
    assert!(std::str::from_utf8(&out[4..]).is_ok());
}

#[test]
fn every_length_form_decodes_at_every_split() {
    for len in [0, 1, 125, 126, 127, 65535, 65536, 70000] {
        let payload: Vec<u8> = (0..len).map(|i| i as u8).collect();
        let stream = client(true, Opcode::Binary, &payload);
        let expected = [Incoming::Binary(payload.into())];
        if len <= 300 {
            check(&stream, 1 << 20, &expected, None);
        } else {
            for at in [
                0,
                1,
                2,
                3,
                4,
                9,
                10,
                13,
                14,
                15,
                stream.len() - 1,
                stream.len(),
            ] {
                assert_eq!(
                    decode_split(&stream, at, 1 << 20),
                    (expected.to_vec(), None)
                );
            }
        }
    }
}

#[test]
fn fragments_reassemble_around_control_frames() {
    let mut stream = client(false, Opcode::Text, "héllo ".as_bytes());
    stream.extend(client(true, Opcode::Ping, b"p1"));
    // "wörld" cut inside the two bytes of "ö".
    let world = "wörld".as_bytes();
    stream.extend(client(false, Opcode::Continuation, &world[..2]));
    stream.extend(client(true, Opcode::Pong, b""));
    stream.extend(client(true, Opcode::Continuation, &world[2..]));
    stream.extend(client(true, Opcode::Binary, b"\x00\xff"));
    stream.extend(client(true, Opcode::Close, b"\x03\xe8done"));
    let expected = [
        Incoming::Ping(Bytes::from_static(b"p1")),
        Incoming::Pong(Bytes::new()),
        text("héllo wörld"),
        Incoming::Binary(Bytes::from_static(b"\x00\xff")),
        Incoming::Close(Some((1000, "done".into()))),
    ];
    check(&stream, 1024, &expected, None);
    // Empty fragments are fine, and an empty close.
    let mut stream = client(false, Opcode::Binary, b"");
    stream.extend(client(true, Opcode::Continuation, b""));
    stream.extend(client(true, Opcode::Close, b""));
    check(
        &stream,
        1024,
        &[Incoming::Binary(Bytes::new()), Incoming::Close(None)],
        None,
    );
}

#[test]
fn framing_errors() {
    let proto = |rule| Some(Error::Protocol(rule));
    let hello = client(true, Opcode::Text, b"hi");
    let cases: Vec<(Vec<u8>, Option<Error>)> = vec![
        // RSV1, RSV2, RSV3.
        (
            vec![0xC1, 0x80, 1, 2, 3, 4],
            proto("RSV bit set without an extension"),
        ),
        (
            vec![0xA1, 0x80, 1, 2, 3, 4],
            proto("RSV bit set without an extension"),
        ),
        (
            vec![0x91, 0x80, 1, 2, 3, 4],
            proto("RSV bit set without an extension"),
        ),
        // Reserved opcodes, data and control.
        (vec![0x83, 0x80, 1, 2, 3, 4], proto("reserved opcode")),
        (vec![0x87, 0x80, 1, 2, 3, 4], proto("reserved opcode")),
        (vec![0x8B, 0x80, 1, 2, 3, 4], proto("reserved opcode")),
        (vec![0x8F, 0x80, 1, 2, 3, 4], proto("reserved opcode")),
        // Unmasked from a client.
        (
            vec![0x81, 0x02, b'h', b'i'],
            proto("client frame not masked"),
        ),
        // Length forms: not the shortest; the 64-bit one's high bit.
        (
            vec![0x82, 0xFE, 0x00, 0x7D],
            proto("16-bit length for a short payload"),
        ),
        (
            vec![0x82, 0xFF, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF],
            proto("64-bit length for a short payload"),
        ),
        (
            vec![0x82, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 0],
            proto("64-bit length with its high bit set"),
        ),
        // Control frames: over 125 bytes, fragmented.
        (
            client(true, Opcode::Ping, &[0; 126]),
            proto("control frame over 125 bytes"),
        ),
        (
            client(false, Opcode::Ping, b""),
            proto("fragmented control frame"),
        ),
        (
            client(false, Opcode::Close, b""),
            proto("fragmented control frame"),
        ),
        // Fragment order.
        (
            client(true, Opcode::Continuation, b"x"),
            proto("continuation frame outside a message"),
        ),
        (
            [client(false, Opcode::Text, b"a"), hello.clone()].concat(),
            proto("new message before the last one ended"),
        ),
        // Close bodies.
        (
            client(true, Opcode::Close, b"\x03"),
            proto("close frame body of 1 byte"),
        ),
        (
            client(true, Opcode::Close, b"\x03\xed"),
            proto("invalid close code"),
        ),
        (
            client(true, Opcode::Close, b"\x03\xe8\xff"),
            Some(Error::InvalidUtf8),
        ),
    ];
    for (stream, error) in cases {
        check(&stream, 1 << 20, &[], error);
    }
    // Errors after whole messages: those come out first.
    check(
        &[hello.clone(), vec![0xC1, 0x80, 1, 2, 3, 4]].concat(),
        1024,
        &[text("hi")],
        proto("RSV bit set without an extension"),
    );
}

#[test]
fn close_codes_follow_section_7_4() {
    for code in [
        1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014, 3000, 4999,
    ] {
        assert!(close_code_is_valid(code), "{code}");
        let mut body = code.to_be_bytes().to_vec();
        body.extend_from_slice(b"why");
        check(
            &client(true, Opcode::Close, &body),
            64,
            &[Incoming::Close(Some((code, "why".into())))],
            None,
        );
    }
    for code in [
        0, 999, 1004, 1005, 1006, 1015, 1016, 2000, 2999, 5000, 65535,
    ] {
        assert!(!close_code_is_valid(code), "{code}");
        check(
            &client(true, Opcode::Close, &code.to_be_bytes()),
            64,
            &[],
            Some(Error::Protocol("invalid close code")),
        );
    }
}

#[test]
fn invalid_utf8_fails_at_the_fragment_that_breaks_it() {
    // Whole message.
    check(
        &client(true, Opcode::Text, b"ok \xc3\x28"),
        1024,
        &[],
        Some(Error::InvalidUtf8),
    );
    // A frame whose payload is still arriving: refused at its first bad byte.
    let mut d = Decoder::new(Role::Server, 1024);
    let whole = client(
        true,
        Opcode::Text,
        &[b"good \xff".as_slice(), &[b'x'; 100]].concat(),
    );
    let mut buf = BytesMut::from(&whole[..6 + 4]);
    assert_eq!(d.decode(&mut buf), Ok(None));
    buf.extend_from_slice(&whole[10..12]);
    assert_eq!(d.decode(&mut buf), Err(Error::InvalidUtf8));
    // Characters cut at every point of a frame's arrival, and across fragments, are fine.
    let mut stream = client(false, Opcode::Text, "a€😀".as_bytes());
    stream.extend(client(true, Opcode::Continuation, "é€😀b".as_bytes()));
    check(&stream, 1024, &[text("a€😀é€😀b")], None);
    let mut stream = client(false, Opcode::Text, b"a\xF0\x9F");
    stream.extend(client(true, Opcode::Ping, b""));
    stream.extend(client(false, Opcode::Continuation, b"\x98"));
    stream.extend(client(true, Opcode::Continuation, b"\x80"));
    let expected = [Incoming::Ping(Bytes::new()), text("a😀")];
    check(&stream, 1024, &expected, None);
    // The first fragment is already invalid: refused before the rest arrives.
    let mut d = Decoder::new(Role::Server, 1024);
    let mut buf = BytesMut::from(&client(false, Opcode::Text, b"\xff")[..]);
    assert_eq!(d.decode(&mut buf), Err(Error::InvalidUtf8));
    // A sequence cut across fragments whose second half is wrong.
    let mut stream = client(false, Opcode::Text, b"\xe2\x82");
    stream.extend(client(true, Opcode::Continuation, b"x"));
    check(&stream, 1024, &[], Some(Error::InvalidUtf8));
    // A message that ends inside a character.
    let mut stream = client(false, Opcode::Text, b"a");
    stream.extend(client(true, Opcode::Continuation, b"\xe2\x82"));
    check(&stream, 1024, &[], Some(Error::InvalidUtf8));
    // Surrogates (CESU) and overlong forms are invalid UTF-8 too.
    check(
        &client(true, Opcode::Text, b"\xed\xa0\x80"),
        1024,
        &[],
        Some(Error::InvalidUtf8),
    );
    check(
        &client(true, Opcode::Text, b"\xc0\xaf"),
        1024,
        &[],
        Some(Error::InvalidUtf8),
    );
    // Binary messages are not checked.
    check(
        &client(true, Opcode::Binary, b"\xff"),
        1024,
        &[Incoming::Binary(Bytes::from_static(b"\xff"))],
        None,
    );
}

#[test]
fn messages_over_the_limit_are_refused_at_the_head() {
    let too_big = Some(Error::TooBig { limit: 10 });
    check(
        &client(true, Opcode::Binary, &[0; 10]),
        10,
        &[Incoming::Binary(vec![0; 10].into())],
        None,
    );
    // Only the head is needed: the payload never arrives.
    let mut d = Decoder::new(Role::Server, 10);
    let mut buf = BytesMut::from(&client(true, Opcode::Binary, &[0; 11])[..6]);
    assert_eq!(d.decode(&mut buf), Err(Error::TooBig { limit: 10 }));
    // Across fragments.
    let mut stream = client(false, Opcode::Text, b"123456");
    stream.extend(client(true, Opcode::Continuation, b"12345"));
    check(&stream, 10, &[], too_big.clone());
    // Control frames do not count against it.
    check(
        &client(true, Opcode::Ping, &[1; 100]),
        10,
        &[Incoming::Ping(vec![1; 100].into())],
        None,
    );
    assert_eq!(Error::TooBig { limit: 1 }.close_code(), 1009);
    assert_eq!(Error::InvalidUtf8.close_code(), 1007);
    assert_eq!(Error::Protocol("x").close_code(), 1002);
}

#[test]
fn masking_is_its_own_inverse_at_any_offset() {
    let data: Vec<u8> = (0..37).collect();
    for offset in 0..8 {
        let mut masked = data.clone();
        apply_mask(&mut masked, KEY, offset);
        for (i, (m, d)) in masked.iter().zip(&data).enumerate() {
            assert_eq!(*m, d ^ KEY[(i + offset) % 4]);
        }
        // In two pieces, the second continuing the first's offset.
        let mut again = masked.clone();
        apply_mask(&mut again[..5], KEY, offset);
        apply_mask(&mut again[5..], KEY, offset + 5);
        assert_eq!(again, data);
    }
}
