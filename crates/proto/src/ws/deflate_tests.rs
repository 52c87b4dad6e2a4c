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
    // With the sender's no_context_takeover agreed the receiver forgets the first message,
    // and a reference back into it fails the connection (see
    // `issue_no_context_takeover_reference_back_fails_1002`).
    for (role, stream) in [
        (Role::Client, [first, second].concat()),
        (Role::Server, [mask(first), mask(second)].concat()),
    ] {
        let (got, err) = decode(role, NO_TAKEOVER, 1 << 20, &stream, stream.len());
        assert_eq!(got, [text("Hello")]);
        assert_eq!(
            err,
            Some(Error::Protocol("compressed data that does not inflate"))
        );
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
    let (got, err) = decode(Role::Server, server_keeps, 1024, &stream, stream.len());
    assert_eq!(got, [text("Hello")]);
    assert_eq!(err.map(|e| e.close_code()), Some(1002));

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

/// A DEFLATE block with fixed Huffman codes (RFC 1951 §3.2.6), written bit by bit: what a
/// peer that breaks the agreement could send, built by hand so that no compressor's choices
/// come into it.
#[derive(Default)]
struct Bits {
    out: Vec<u8>,
    acc: u32,
    n: u32,
}

impl Bits {
    /// `len` bits of `value`, least significant first (header fields, extra bits).
    fn put(&mut self, value: u32, len: u32) {
        self.acc |= value << self.n;
        self.n += len;
        while self.n >= 8 {
            self.out.push(self.acc as u8);
            self.acc >>= 8;
            self.n -= 8;
        }
    }

    /// A Huffman code of `len` bits, most significant first.
    fn code(&mut self, code: u32, len: u32) {
        for i in (0..len).rev() {
            self.put((code >> i) & 1, 1);
        }
    }

    /// A literal byte (codes 0-143: 8 bits from 0x30).
    fn literal(&mut self, b: u8) {
        assert!(b < 144);
        self.code(0x30 + u32::from(b), 8);
    }

    /// A match of length 3-10 (codes 257-264: 7 bits) at `distance` 1-32768 (5-bit code, then
    /// its extra bits).
    fn matched(&mut self, len: u32, distance: u32) {
        assert!((3..=10).contains(&len));
        self.code(len - 2, 7);
        let (code, extra, base) = (0..30u32)
            .map(|c| {
                let extra = c.saturating_sub(2) / 2;
                let base = if c < 4 {
                    c + 1
                } else {
                    ((2 + (c & 1)) << extra) + 1
                };
                (c, extra, base)
            })
            .rfind(|&(_, _, base)| base <= distance)
            .unwrap();
        self.code(code, 5);
        self.put(distance - base, extra);
    }

    /// Ends the block (code 256: seven 0 bits), then a sync flush (an empty stored block)
    /// with its `00 00 ff ff` taken off, as permessage-deflate sends it.
    fn finish(mut self) -> Vec<u8> {
        self.code(0, 7);
        self.put(0, 3); // BFINAL 0, stored
        if self.n > 0 {
            self.put(0, 8 - self.n);
        }
        self.out
    }
}

/// One compressed text message whose data is `body` in a fixed-Huffman block.
fn fixed_block(body: impl FnOnce(&mut Bits)) -> Vec<u8> {
    let mut bits = Bits::default();
    bits.put(0, 1); // BFINAL 0
    bits.put(1, 2); // fixed Huffman codes
    body(&mut bits);
    let data = bits.finish();
    let mut frame = Vec::new();
    encode_compressed_frame(&mut frame, Opcode::Text, &data, None);
    frame
}

#[test]
fn issue_no_context_takeover_reference_back_fails_1002() {
    // "abcdefgh", then a message of "xy" and 8 bytes copied from 10 back: with the context
    // kept that is the first message again ("xyabcdefgh"); without, it reaches 8 bytes before
    // the second message began.
    let first = fixed_block(|b| b"abcdefgh".iter().for_each(|&c| b.literal(c)));
    let second = fixed_block(|b| {
        b.literal(b'x');
        b.literal(b'y');
        b.matched(8, 10);
    });
    let both = [&first[..], &second[..]].concat();
    for at in [0, first.len(), first.len() + 3, both.len()] {
        let got = decode(Role::Client, TAKEOVER, 1024, &both, at);
        assert_eq!(got, (vec![text("abcdefgh"), text("xyabcdefgh")], None));
        // The server's no_context_takeover, broken by the server: the client fails it.
        let (got, err) = decode(Role::Client, NO_TAKEOVER, 1024, &both, at);
        assert_eq!(got, [text("abcdefgh")]);
        let err = err.expect("a reference into the last message");
        assert_eq!(err.close_code(), 1002, "{err}");
    }
    // The client's, broken by the client: the server fails it.
    let masked = [mask(&first), mask(&second)].concat();
    let (got, err) = decode(Role::Server, NO_TAKEOVER, 1024, &masked, masked.len());
    assert_eq!(got, [text("abcdefgh")]);
    assert_eq!(err.map(|e| e.close_code()), Some(1002));
    // Reaching back exactly to the start of the message is fine; one byte further is not.
    let to_start = fixed_block(|b| {
        b"xyz".iter().for_each(|&c| b.literal(c));
        b.matched(3, 3);
    });
    let past_start = fixed_block(|b| {
        b"xyz".iter().for_each(|&c| b.literal(c));
        b.matched(3, 4);
    });
    let stream = [&first[..], &to_start[..]].concat();
    let got = decode(Role::Client, NO_TAKEOVER, 1024, &stream, stream.len());
    assert_eq!(got, (vec![text("abcdefgh"), text("xyzxyz")], None));
    let stream = [&first[..], &past_start[..]].concat();
    let (_, err) = decode(Role::Client, NO_TAKEOVER, 1024, &stream, stream.len());
    assert_eq!(err.map(|e| e.close_code()), Some(1002));
    // With context kept, a reference before the stream's very start fails as well (flate2's
    // wrapping window read zeros there), and so does one past a BFINAL block (§7.2.3.4: the
    // next message starts a new stream).
    let (_, err) = decode(Role::Client, TAKEOVER, 1024, &second, second.len());
    assert_eq!(err.map(|e| e.close_code()), Some(1002));
    let bfinal: &[u8] = &[0xc1, 0x08, 0xf3, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00, 0x00];
    let stream = [bfinal, &second].concat();
    let (got, err) = decode(Role::Client, TAKEOVER, 1024, &stream, stream.len());
    assert_eq!(got, [text("Hello")]);
    assert_eq!(err.map(|e| e.close_code()), Some(1002));
}

#[test]
fn long_messages_keep_32_kib_of_history_across_the_window_slide() {
    // Messages longer than the inflater's buffer, each referring 32 KiB back (the farthest
    // DEFLATE reaches) into itself and, with context kept, into the one before.
    let piece: Vec<u8> = (0..32 * 1024u32).map(|i| (i * 7 % 251) as u8).collect();
    let message = [&piece[..], &piece[..], &piece[..], &piece[..50]].concat();
    for params in [TAKEOVER, NO_TAKEOVER] {
        let mut compressor = params.compressor(Role::Server, 9);
        let mut stream = Vec::new();
        for _ in 0..3 {
            let mut packed = Vec::new();
            compressor.compress(&message, &mut packed);
            encode_compressed_frame(&mut stream, Opcode::Binary, &packed, None);
        }
        let (got, err) = decode(Role::Client, params, 1 << 20, &stream, stream.len() / 3);
        assert_eq!(err, None);
        let expected = Incoming::Binary(message.clone().into());
        assert_eq!(got, [expected.clone(), expected.clone(), expected]);
    }
}

/// A small xorshift generator: the same cases on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[test]
fn random_and_mutated_deflate_never_panics_nor_passes_the_limit() {
    // Valid messages to mutate: a short text, a long repetitive one, and a hand-built
    // reference back.
    let mut compressor = Compressor::new(6, false);
    let mut seeds = Vec::new();
    for data in [
        b"Hello, permessage-deflate".to_vec(),
        "zeros and words ".repeat(4000).into_bytes(),
        vec![0; 100_000],
    ] {
        let mut packed = Vec::new();
        compressor.compress(&data, &mut packed);
        seeds.push(packed);
    }
    let limit = 4096;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for case in 0..3000 {
        let data: Vec<u8> = match case % 3 {
            // Random bytes: mostly invalid block types and codes.
            0 => (0..rng.below(300)).map(|_| rng.next() as u8).collect(),
            // A valid stream with a few bytes flipped, cut or extended.
            _ => {
                let mut d = seeds[rng.below(seeds.len())].clone();
                for _ in 0..1 + rng.below(4) {
                    let at = rng.below(d.len());
                    d[at] ^= 1 << rng.below(8);
                }
                if rng.below(4) == 0 {
                    d.truncate(rng.below(d.len() + 1));
                }
                d
            }
        };
        for params in [TAKEOVER, NO_TAKEOVER] {
            let mut decoder = Decoder::with_deflate(Role::Client, limit, params);
            // Two messages: the second may refer back into the first.
            let mut stream = Vec::new();
            encode_compressed_frame(&mut stream, Opcode::Binary, &data, None);
            encode_compressed_frame(&mut stream, Opcode::Binary, &data, None);
            let mut buf = BytesMut::from(&stream[..]);
            loop {
                match decoder.decode(&mut buf) {
                    Ok(Some(Incoming::Binary(m))) => assert!(m.len() <= limit),
                    Ok(Some(other)) => panic!("{other:?}"),
                    Ok(None) => break,
                    Err(e) => {
                        assert!([1002, 1009].contains(&e.close_code()), "{e}");
                        break;
                    }
                }
                assert!(decoder.held_capacity() <= limit);
            }
            assert!(decoder.held_capacity() <= limit);
        }
    }
}
