//! Body decoding on byte slices: Content-Length, read-until-close, chunked with extensions
//! and trailers, and one test per chunked rejection rule.

use volt_proto::{
    write_chunk, write_last_chunk, BodyDecoder, BodyKind, HeaderValue, Limits, ParseError,
    ParseError::*, MAX_CHUNK_LINE,
};

/// What decoding a whole input in one go produced.
#[derive(Debug, PartialEq)]
pub struct Decoded {
    pub data: Vec<u8>,
    /// Input bytes left over after the body (the next message).
    pub rest: Vec<u8>,
    pub done: bool,
    pub trailers: http::HeaderMap,
}

/// Decodes `input` as a caller with everything already buffered would.
pub fn decode_all(kind: BodyKind, input: &[u8]) -> Result<Decoded, ParseError> {
    let mut decoder = BodyDecoder::new(kind);
    let mut rest = input;
    let mut data = Vec::new();
    while !decoder.is_done() {
        let (consumed, chunk) = decoder.decode(rest)?;
        if let Some(chunk) = chunk {
            data.extend_from_slice(chunk);
        }
        rest = &rest[consumed..];
        if consumed == 0 {
            break;
        }
    }
    Ok(Decoded {
        data,
        rest: rest.to_vec(),
        done: decoder.is_done(),
        trailers: decoder.take_trailers(),
    })
}

#[track_caller]
fn chunked(input: &[u8]) -> Decoded {
    decode_all(BodyKind::Chunked, input).unwrap()
}

#[track_caller]
fn chunked_err(input: &[u8]) -> ParseError {
    decode_all(BodyKind::Chunked, input).unwrap_err()
}

#[test]
fn content_length_body() {
    let mut decoder = BodyDecoder::new(BodyKind::Length(5));
    assert_eq!(decoder.decode(b""), Ok((0, None)));
    assert_eq!(decoder.decode(b"he"), Ok((2, Some(&b"he"[..]))));
    assert!(!decoder.is_done());
    assert_eq!(decoder.decode(b"lloNEXT"), Ok((3, Some(&b"llo"[..]))));
    assert!(decoder.is_done());
    assert_eq!(decoder.decode(b"NEXT"), Ok((0, None)));
}

#[test]
fn empty_body_is_done_at_once() {
    for kind in [BodyKind::Empty, BodyKind::Length(0)] {
        let mut decoder = BodyDecoder::new(kind);
        assert!(decoder.is_done());
        assert_eq!(decoder.decode(b"GET"), Ok((0, None)));
    }
}

#[test]
fn eof_body_runs_until_close() {
    let mut decoder = BodyDecoder::new(BodyKind::Eof);
    assert_eq!(decoder.decode(b"abc"), Ok((3, Some(&b"abc"[..]))));
    assert_eq!(decoder.decode(b""), Ok((0, None)));
    assert!(!decoder.is_done());
    decoder.finish_eof();
    assert!(decoder.is_done());
    assert_eq!(decoder.decode(b"x"), Ok((0, None)));

    // A close before the end of a sized body leaves it unfinished.
    let mut sized = BodyDecoder::new(BodyKind::Length(3));
    sized.finish_eof();
    assert!(!sized.is_done());
}

#[test]
fn chunked_body() {
    let out = chunked(b"5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\nGET / HTTP/1.1\r\n");
    assert_eq!(out.data, b"hello, world");
    assert_eq!(out.rest, b"GET / HTTP/1.1\r\n");
    assert!(out.done);
    assert!(out.trailers.is_empty());
}

#[test]
fn chunk_data_borrows_from_the_input() {
    let input = b"a\r\n0123456789\r\n0\r\n\r\n";
    let mut decoder = BodyDecoder::new(BodyKind::Chunked);
    let (consumed, data) = decoder.decode(input).unwrap();
    assert_eq!(consumed, 13);
    let data = data.unwrap();
    assert_eq!(data, b"0123456789");
    assert_eq!(data.as_ptr(), input[3..].as_ptr());
    assert_eq!(decoder.decode(&input[13..]), Ok((7, None)));
    assert!(decoder.is_done());
}

#[test]
fn chunk_sizes() {
    assert_eq!(chunked(b"A\r\n0123456789\r\n0\r\n\r\n").data, b"0123456789");
    assert_eq!(
        chunked(b"00000a\r\n0123456789\r\n000\r\n\r\n").data,
        b"0123456789"
    );
    assert_eq!(chunked(b"0000000000000001\r\nx\r\n0\r\n\r\n").data, b"x");
    // Sixteen hex digits are the most a u64 holds; the line is accepted.
    let mut decoder = BodyDecoder::new(BodyKind::Chunked);
    assert_eq!(decoder.decode(b"ffffffffffffffff\r\n"), Ok((18, None)));
    assert_eq!(decoder.decode(b"ab"), Ok((2, Some(&b"ab"[..]))));
}

#[test]
fn chunk_extensions_are_accepted_and_ignored() {
    for line in [
        "5;name",
        "5;name=value",
        "5;a=1;b=2;c",
        "5 ; a = 1 ; b",
        "5\t;\ta\t=\t1",
        "5;q=\"quoted value\"",
        "5;q=\"with \\\"escaped\\\" quotes;and=semicolons\"",
        "5;q=\"\";r=\"caf\u{e9}\"",
    ] {
        let input = format!("{line}\r\nhello\r\n0;last=1\r\n\r\n");
        assert_eq!(chunked(input.as_bytes()).data, b"hello", "{line:?}");
    }
}

#[test]
fn invalid_chunk_sizes() {
    let cases: &[(&[u8], ParseError)] = &[
        (b"\r\n", InvalidChunkSize),
        (b"g\r\n", InvalidChunkSize),
        (b"-5\r\n", InvalidChunkSize),
        (b"+5\r\n", InvalidChunkSize),
        (b"0x5\r\n", InvalidChunkSize),
        (b"5g\r\n", InvalidChunkSize),
        (b" 5\r\n", InvalidChunkSize),
        (b";a\r\n", InvalidChunkSize),
        (b"00000000000000001\r\n", ChunkSizeOverflow),
        (b"10000000000000000\r\n", ChunkSizeOverflow),
        (b"fffffffffffffffff\r\n", ChunkSizeOverflow),
    ];
    for (input, want) in cases {
        assert_eq!(
            &chunked_err(input),
            want,
            "{:?}",
            String::from_utf8_lossy(input)
        );
    }
    assert_eq!(InvalidChunkSize.status().as_u16(), 400);
    assert_eq!(ChunkSizeOverflow.status().as_u16(), 400);
}

#[test]
fn invalid_chunk_extensions() {
    for line in [
        "5 ",
        "5;",
        "5; ",
        "5;=1",
        "5;a=",
        "5;a= ",
        "5;a=\"open",
        "5;a b",
        "5;a=b c",
        "5;a=\"x\"y",
        "5;a=b ",
        "5;a ",
        "5;a=\"x\" ",
        "5;a=\"\x01\"",
        "5;a=\"\\\x01\"",
        "5;a=@",
        "5;(a)",
    ] {
        let input = format!("{line}\r\nhello\r\n0\r\n\r\n");
        assert_eq!(
            chunked_err(input.as_bytes()),
            InvalidChunkExtension,
            "{line:?}"
        );
    }
}

#[test]
fn broken_chunk_framing() {
    let cases: &[&[u8]] = &[
        b"5\nhello\r\n0\r\n\r\n",
        b"5;a=1\nhello\r\n0\r\n\r\n",
        b"5\rhello\r\n0\r\n\r\n",
        b"5\r\nhelloX\r\n0\r\n\r\n",
        b"5\r\nhello\n0\r\n\r\n",
        b"5\r\nhello\rX0\r\n\r\n",
        b"5\r\nhello\r\n0\n\r\n",
        b"5;a=\"x\ny\"\r\nhello\r\n0\r\n\r\n",
    ];
    for input in cases {
        assert_eq!(
            chunked_err(input),
            InvalidChunk,
            "{:?}",
            String::from_utf8_lossy(input)
        );
    }
}

#[test]
fn chunk_line_is_bounded() {
    let ok = format!(
        "5;x={}\r\nhello\r\n0\r\n\r\n",
        "a".repeat(MAX_CHUNK_LINE - 6)
    );
    assert_eq!(chunked(ok.as_bytes()).data, b"hello");
    let long = format!(
        "5;x={}\r\nhello\r\n0\r\n\r\n",
        "a".repeat(MAX_CHUNK_LINE - 5)
    );
    assert_eq!(chunked_err(long.as_bytes()), ChunkLineTooLong);
    // Refused without ever seeing the end of the line.
    let endless = format!("5;x={}", "a".repeat(10_000));
    assert_eq!(chunked_err(endless.as_bytes()), ChunkLineTooLong);
}

#[test]
fn trailers_are_parsed_and_forbidden_ones_dropped() {
    let input = b"5\r\nhello\r\n0\r\n\
X-Checksum: abc123\r\n\
Content-Length: 5\r\n\
Transfer-Encoding: chunked\r\n\
Host: evil\r\n\
x-multi: 1\r\n\
X-Multi:  2 \r\n\
\r\nNEXT";
    let out = chunked(input);
    assert_eq!(out.data, b"hello");
    assert_eq!(out.rest, b"NEXT");
    let t = &out.trailers;
    assert_eq!(t.len(), 3);
    assert_eq!(
        t.get("x-checksum"),
        Some(&HeaderValue::from_static("abc123"))
    );
    let multi: Vec<_> = t.get_all("x-multi").iter().collect();
    assert_eq!(
        multi,
        [
            &HeaderValue::from_static("1"),
            &HeaderValue::from_static("2")
        ]
    );
    assert!(t.get("content-length").is_none() && t.get("host").is_none());
}

#[test]
fn take_trailers_empties_them() {
    let mut decoder = BodyDecoder::new(BodyKind::Chunked);
    assert_eq!(decoder.decode(b"0\r\nA: 1\r\n\r\n"), Ok((11, None)));
    assert!(decoder.is_done());
    assert_eq!(decoder.take_trailers().len(), 1);
    assert!(decoder.take_trailers().is_empty());
}

#[test]
fn invalid_trailers() {
    let cases: &[&[u8]] = &[
        b"0\r\nA: 1\n\r\n",
        b"0\r\nA: 1\r\n\n",
        b"0\r\n\n",
        b"0\r\nA: 1\rX\r\n\r\n",
        b"0\r\n\rX",
        b"0\r\nA: 1\r\n folded\r\n\r\n",
        b"0\r\n folded\r\n\r\n",
        b"0\r\nBad Name: 1\r\n\r\n",
        b"0\r\nA : 1\r\n\r\n",
        b"0\r\nA: \x01\r\n\r\n",
        b"0\r\nNoColon\r\n\r\n",
    ];
    for input in cases {
        assert_eq!(
            chunked_err(input),
            InvalidTrailer,
            "{:?}",
            String::from_utf8_lossy(input)
        );
    }
}

#[test]
fn trailers_are_bounded() {
    let limits = Limits {
        max_head_bytes: 32,
        max_headers: 2,
        ..Limits::default()
    };
    let decode = |input: &[u8]| {
        let mut decoder = BodyDecoder::with_limits(BodyKind::Chunked, &limits);
        decoder.decode(input).map(|(n, _)| (n, decoder.is_done()))
    };
    let fits = b"0\r\nA: 1\r\nB: 2\r\n\r\n";
    assert_eq!(decode(fits), Ok((fits.len(), true)));
    let big = format!("0\r\nA: {}\r\n\r\n", "v".repeat(40));
    assert_eq!(decode(big.as_bytes()), Err(TrailersTooLarge));
    assert_eq!(
        decode(b"0\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n"),
        Err(TrailersTooLarge)
    );
    assert_eq!(TrailersTooLarge.status().as_u16(), 431);
}

#[test]
fn encoded_chunks_decode_back() {
    let mut wire = Vec::new();
    write_chunk(&mut wire, b"hello");
    write_chunk(&mut wire, b"");
    write_chunk(&mut wire, &[b'x'; 300]);
    let mut trailers = http::HeaderMap::new();
    trailers.insert("x-sum", HeaderValue::from_static("42"));
    write_last_chunk(&mut wire, Some(&trailers));
    let out = chunked(&wire);
    let mut want = b"hello".to_vec();
    want.extend_from_slice(&[b'x'; 300]);
    assert_eq!(out.data, want);
    assert_eq!(out.trailers, trailers);
    assert!(out.rest.is_empty());
}
