//! permessage-deflate on byte slices: RFC 7692 §7.2.3's examples, context takeover kept and
//! reset, RSV1's rules, a zip bomb, and the compressor's output read back.

use bytes::{Bytes, BytesMut};

use super::*;

const KEY: [u8; 4] = [0x37, 0xfa, 0x21, 0x3d];

/// Context kept on both sides, windows of 15 bits.
const TAKEOVER: DeflateParams = DeflateParams {
    server_no_context_takeover: false,
    client_no_context_takeover: false,
    server_max_window_bits: 15,
    client_max_window_bits: 15,
};

/// Neither side keeps its context.
const NO_TAKEOVER: DeflateParams = DeflateParams {
    server_no_context_takeover: true,
    client_no_context_takeover: true,
    ..TAKEOVER
};

fn text(s: &str) -> Incoming {
    Incoming::Text(Bytes::copy_from_slice(s.as_bytes()))
}

/// Everything `stream` decodes to, fed in two reads split at `at`, until the first error.
fn decode(
    role: Role,
    params: DeflateParams,
    max: usize,
    stream: &[u8],
    at: usize,
) -> (Vec<Incoming>, Option<Error>) {
    let mut decoder = Decoder::with_deflate(role, max, params);
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
    (out, None)
}

/// `stream`, as a client receives it, decodes to `expected` however it is split in two; and so
/// does its masked form as a server receives it (each frame masked with [`KEY`]).
fn check(params: DeflateParams, frames: &[&[u8]], expected: &[Incoming]) {
    let stream = frames.concat();
    let masked: Vec<u8> = frames.iter().flat_map(|f| mask(f)).collect();
    for at in 0..=stream.len() {
        let got = decode(Role::Client, params, 1 << 20, &stream, at);
        assert_eq!(got, (expected.to_vec(), None), "client, split at {at}");
    }
    for at in 0..=masked.len() {
        let got = decode(Role::Server, params, 1 << 20, &masked, at);
        assert_eq!(got, (expected.to_vec(), None), "server, split at {at}");
    }
}

/// A server's short frame (head of 2 bytes) as a client sends it.
fn mask(frame: &[u8]) -> Vec<u8> {
    let mut out = vec![frame[0], frame[1] | 0x80];
    out.extend_from_slice(&KEY);
    let start = out.len();
    out.extend_from_slice(&frame[2..]);
    apply_mask(&mut out[start..], KEY, 0);
    out
}

#[test]
fn rfc_7692_examples_decode() {
    // §7.2.3.1: "Hello" in one compressed frame, and in two fragments.
    let hello: &[u8] = &[0xc1, 0x07, 0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00];
    check(TAKEOVER, &[hello], &[text("Hello")]);
    check(NO_TAKEOVER, &[hello], &[text("Hello")]);
    let first: &[u8] = &[0x41, 0x03, 0xf2, 0x48, 0xcd];
    let last: &[u8] = &[0x80, 0x04, 0xc9, 0xc9, 0x07, 0x00];
    check(TAKEOVER, &[first, last], &[text("Hello")]);
    // A ping between the fragments is never compressed.
    let ping: &[u8] = &[0x89, 0x01, b'p'];
    check(
        TAKEOVER,
        &[first, ping, last],
        &[Incoming::Ping(Bytes::from_static(b"p")), text("Hello")],
    );
    // §7.2.3.3: a stored block (no compression).
    let stored: &[u8] = &[
        0xc1, 0x0b, 0x00, 0x05, 0x00, 0xfa, 0xff, 0x48, 0x65, 0x6c, 0x6c, 0x6f, 0x00,
    ];
    check(TAKEOVER, &[stored], &[text("Hello")]);
    // §7.2.3.4: a block with BFINAL set ends the stream; the next message starts a new one.
    let bfinal: &[u8] = &[0xc1, 0x08, 0xf3, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00, 0x00];
    check(TAKEOVER, &[bfinal, hello], &[text("Hello"), text("Hello")]);
    // §7.2.3.5: two DEFLATE blocks in one message.
    let two_blocks: &[u8] = &[
        0xc1, 0x0d, 0xf2, 0x48, 0x05, 0x00, 0x00, 0x00, 0xff, 0xff, 0xca, 0xc9, 0xc9, 0x07, 0x00,
    ];
    check(TAKEOVER, &[two_blocks], &[text("Hello")]);
    // §7.2.3.6: an empty message is the single byte 00; and binary messages too.
    check(TAKEOVER, &[&[0xc1, 0x01, 0x00]], &[text("")]);
    check(
        TAKEOVER,
        &[&[0xc2, 0x01, 0x00]],
        &[Incoming::Binary(Bytes::new())],
    );
    // An uncompressed message (RSV1 clear) on a connection with deflate is taken as it is.
    check(TAKEOVER, &[&[0x81, 0x02, b'h', b'i']], &[text("hi")]);
}

#[test]
fn context_takeover_is_kept_or_reset_as_agreed() {
    // §7.2.3.2: the second "Hello" refers back to the first (a distance of 5).
    let first: &[u8] = &[0xc1, 0x07, 0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00];
    let second: &[u8] = &[0xc1, 0x05, 0xf2, 0x00, 0x11, 0x00, 0x00];
    check(TAKEOVER, &[first, second], &[text("Hello"), text("Hello")]);
    // With the sender's no_context_takeover agreed the receiver forgets the first message:
    // the reference back finds no "Hello" (miniz_oxide reads a window of zeros there where
    // zlib would refuse the distance), and a message compressed alone reads as it should.
    for (role, stream) in [
        (Role::Client, [first, second, first].concat()),
        (
            Role::Server,
            [mask(first), mask(second), mask(first)].concat(),
        ),
    ] {
        let (got, err) = decode(role, NO_TAKEOVER, 1 << 20, &stream, stream.len());
        assert_eq!(err, None);
        assert_eq!(got[0], text("Hello"));
        assert_ne!(got[1], text("Hello"));
        assert_eq!(got[2], text("Hello"));
    }
    // Only the receiver's peer's parameter counts: a client keeps its context for a server
    // that keeps its own, whatever the client does.
    let server_keeps = DeflateParams {
        client_no_context_takeover: true,
        ..TAKEOVER
    };
    let stream = [first, second].concat();
    let (got, err) = decode(Role::Client, server_keeps, 1024, &stream, stream.len());
    assert_eq!((got, err), (vec![text("Hello"), text("Hello")], None));
    let stream = [mask(first), mask(second)].concat();
    let (got, _) = decode(Role::Server, server_keeps, 1024, &stream, stream.len());
    assert_ne!(got[1], text("Hello"));

    // The compressor: with its context, the second of two equal messages is smaller; without,
    // they come out the same. Either way a decoder agreeing on it reads them back.
    for (params, shrinks) in [(TAKEOVER, true), (NO_TAKEOVER, false)] {
        let mut compressor = params.compressor(Role::Server, 6);
        let message = b"a message that repeats, a message that repeats";
        let (mut one, mut two) = (Vec::new(), Vec::new());
        compressor.compress(message, &mut one);
        compressor.compress(message, &mut two);
        assert_eq!(two.len() < one.len(), shrinks, "{one:?} {two:?}");
        let mut stream = Vec::new();
        encode_compressed_frame(&mut stream, Opcode::Binary, &one, None);
        encode_compressed_frame(&mut stream, Opcode::Binary, &two, None);
        let message = Incoming::Binary(Bytes::from_static(message));
        let (got, err) = decode(Role::Client, params, 1024, &stream, stream.len());
        assert_eq!((got, err), (vec![message.clone(), message], None));
    }
}

#[test]
fn the_compressor_drops_the_flush_tail() {
    let mut compressor = Compressor::new(6, false);
    let mut out = Vec::new();
    compressor.compress(b"", &mut out);
    // §7.2.3.6: the empty message.
    assert_eq!(out, [0x00]);
    out.clear();
    compressor.compress(b"Hello", &mut out);
    assert!(!out.ends_with(&[0x00, 0x00, 0xff, 0xff]), "{out:x?}");
    // Masked as a client sends it, read back by a server; a large message too.
    let big: Vec<u8> = (0..200_000u32)
        .map(|i| (i % 251) as u8 ^ (i / 1000) as u8)
        .collect();
    let mut big_out = Vec::new();
    compressor.compress(&big, &mut big_out);
    let mut stream = Vec::new();
    encode_compressed_frame(&mut stream, Opcode::Text, &out, Some(KEY));
    encode_compressed_frame(&mut stream, Opcode::Binary, &big_out, Some(KEY));
    let (got, err) = decode(Role::Server, TAKEOVER, 1 << 20, &stream, stream.len());
    assert_eq!(err, None);
    assert_eq!(got, [text("Hello"), Incoming::Binary(big.into())]);
}

#[test]
fn a_zip_bomb_fails_with_1009_within_its_limit() {
    // 64 MiB of zeros compress to about 64 KiB; the limit is 1 MiB.
    let limit = 1 << 20;
    let zeros = vec![0u8; 64 << 20];
    let mut bomb = Vec::new();
    Compressor::new(9, false).compress(&zeros, &mut bomb);
    assert!(bomb.len() < 128 << 10, "{}", bomb.len());
    let mut stream = Vec::new();
    encode_compressed_frame(&mut stream, Opcode::Binary, &bomb, Some(KEY));
    let mut decoder = Decoder::with_deflate(Role::Server, limit, TAKEOVER);
    let mut buf = BytesMut::from(&stream[..]);
    let err = decoder.decode(&mut buf).unwrap_err();
    assert_eq!(err, Error::TooBig { limit });
    assert_eq!(err.close_code(), 1009);
    // The message buffer never held, nor had room for, more than the limit.
    let held = decoder.held_capacity();
    assert!(held <= limit, "{held}");

    // The same in fragments: the limit counts the inflated bytes of all of them.
    let (a, b) = bomb.split_at(bomb.len() / 2);
    let mut stream = Vec::new();
    encode_compressed_frame(&mut stream, Opcode::Binary, a, Some(KEY));
    stream[0] &= 0x7f; // not FIN: the first fragment
    encode_frame(&mut stream, true, Opcode::Continuation, b, Some(KEY));
    let (got, err) = decode(Role::Server, TAKEOVER, limit, &stream, stream.len());
    assert!(got.is_empty());
    assert_eq!(err, Some(Error::TooBig { limit }));
}

#[test]
fn compressed_text_is_checked_as_utf8() {
    let mut compressor = Compressor::new(6, false);
    let mut bad = Vec::new();
    compressor.compress(b"ok \xff not", &mut bad);
    let mut stream = Vec::new();
    encode_compressed_frame(&mut stream, Opcode::Text, &bad, None);
    let (got, err) = decode(Role::Client, TAKEOVER, 1024, &stream, stream.len());
    assert!(got.is_empty());
    assert_eq!(err, Some(Error::InvalidUtf8));
}

#[test]
fn rsv1_rules() {
    let proto = |rule| Some(Error::Protocol(rule));
    // Not negotiated: RSV1 is a protocol error (1002), as RSV2 and RSV3 always are.
    let hello = mask(&[0xc1, 0x07, 0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00]);
    let mut plain = Decoder::new(Role::Server, 1024);
    let err = plain.decode(&mut BytesMut::from(&hello[..])).unwrap_err();
    assert_eq!(err, Error::Protocol("RSV bit set without an extension"));
    assert_eq!(err.close_code(), 1002);
    for (frames, error) in [
        (
            vec![mask(&[0xa1, 0x00])],
            proto("RSV bit set without an extension"),
        ),
        (
            vec![mask(&[0x91, 0x00])],
            proto("RSV bit set without an extension"),
        ),
        // Negotiated, but on a control frame or a continuation.
        (
            vec![mask(&[0xc9, 0x00])],
            proto("RSV1 set on a control frame"),
        ),
        (
            vec![mask(&[0x41, 0x03, 0xf2, 0x48, 0xcd]), mask(&[0xc0, 0x00])],
            proto("RSV1 set on a continuation frame"),
        ),
        // Bytes that are no DEFLATE stream (a reserved block type).
        (
            vec![mask(&[0xc1, 0x01, 0xff])],
            proto("compressed data that does not inflate"),
        ),
    ] {
        let stream = frames.concat();
        let (_, err) = decode(Role::Server, TAKEOVER, 1024, &stream, stream.len());
        assert_eq!(err, error, "{stream:x?}");
    }
}
