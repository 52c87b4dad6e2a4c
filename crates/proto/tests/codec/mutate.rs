//! Seeded random mutations of valid messages. Whatever the bytes, parsing must not panic
//! (the strict re-walk and the fast path must agree on what is wrong), and the answer must
//! not depend on how the bytes arrived.

use volt_proto::{parse_request, parse_response, BodyDecoder, BodyKind, Limits, ParseError};

/// xorshift64*: small, seeded, good enough to pick mutations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Bytes that sit on the grammar's edges.
const INTERESTING: &[u8] = b"\r\n \t:;,=\"\\\x00\x01\x7f\x80\xff0aA/-";

fn mutate(rng: &mut Rng, input: &[u8]) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..1 + rng.below(3) {
        let at = rng.below(out.len() + 1);
        let byte = INTERESTING[rng.below(INTERESTING.len())];
        match rng.below(3) {
            0 if at < out.len() => out[at] = byte,
            1 if at < out.len() => {
                out.remove(at);
            }
            _ => out.insert(at, byte),
        }
    }
    out
}

/// Feeds growing prefixes the way a server's read loop would and returns the first answer
/// that is not "need more", or `Ok(None)` if the input never completes a head.
fn incremental<T>(
    input: &[u8],
    parse: impl Fn(&[u8]) -> Result<Option<T>, ParseError>,
) -> Result<Option<T>, ParseError> {
    for end in 0..=input.len() {
        match parse(&input[..end]) {
            Ok(None) => continue,
            answer => return answer,
        }
    }
    Ok(None)
}

const REQUESTS: &[&[u8]] = &[
    b"GET /plaintext HTTP/1.1\r\nHost: server\r\nAccept: */*\r\nConnection: keep-alive\r\n\r\n",
    b"POST /a?b=c HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n",
    b"PUT /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
    b"\r\nGET / HTTP/1.0\r\nConnection: close, keep-alive\r\n\r\n",
];

const RESPONSES: &[&[u8]] = &[
    b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\nContent-Type: text/plain\r\n\r\n",
    b"HTTP/1.1 204\r\nTransfer-Encoding: chunked\r\n\r\n",
    b"HTTP/1.0 301 Moved Permanently\r\nLocation: /x\r\nConnection: keep-alive\r\n\r\n",
];

const CHUNKED: &[&[u8]] = &[
    b"5\r\nhello\r\n6;a=b;c=\"d\\\"e\"\r\n world\r\n0\r\nX-T: 1\r\n\r\n",
    b"00a\r\n0123456789\r\n0;last\r\n\r\n",
];

#[test]
fn mutated_requests_parse_the_same_however_they_arrive() {
    let limits = Limits {
        max_uri_len: 24,
        max_head_bytes: 128,
        max_headers: 4,
    };
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    for round in 0..4000 {
        let base = REQUESTS[round % REQUESTS.len()];
        let input = mutate(&mut rng, base);
        let whole = parse_request(&input, &limits);
        let grown = incremental(&input, |b| parse_request(b, &limits));
        // One read of everything may hold a complete head that a prefix also completes;
        // either way the answers match once a head or an error is found.
        if !matches!(whole, Ok(None)) {
            assert_eq!(whole, grown, "{:?}", String::from_utf8_lossy(&input));
        }
    }
}

#[test]
fn mutated_responses_parse_the_same_however_they_arrive() {
    let limits = Limits {
        max_head_bytes: 128,
        max_headers: 4,
        ..Limits::default()
    };
    let mut rng = Rng(0x5eed_1234_abcd_0002);
    for round in 0..3000 {
        let base = RESPONSES[round % RESPONSES.len()];
        let input = mutate(&mut rng, base);
        let whole = parse_response(&input, &limits, false);
        let grown = incremental(&input, |b| parse_response(b, &limits, false));
        if !matches!(whole, Ok(None)) {
            assert_eq!(whole, grown, "{:?}", String::from_utf8_lossy(&input));
        }
    }
}

/// Decodes in one call sequence over the whole input, or byte by byte.
fn decode(input: &[u8], byte_by_byte: bool) -> Result<(Vec<u8>, usize, bool), ParseError> {
    let mut decoder = BodyDecoder::new(BodyKind::Chunked);
    let mut data = Vec::new();
    let mut pos = 0;
    while pos < input.len() && !decoder.is_done() {
        let end = if byte_by_byte { pos + 1 } else { input.len() };
        let (consumed, chunk) = decoder.decode(&input[pos..end])?;
        data.extend_from_slice(chunk.unwrap_or_default());
        pos += consumed;
        if consumed == 0 {
            break;
        }
    }
    Ok((data, pos, decoder.is_done()))
}

#[test]
fn mutated_chunked_bodies_decode_the_same_however_they_arrive() {
    let mut rng = Rng(0x5eed_1234_abcd_0003);
    for round in 0..4000 {
        let base = CHUNKED[round % CHUNKED.len()];
        let input = mutate(&mut rng, base);
        let whole = decode(&input, false);
        assert_eq!(
            whole,
            decode(&input, true),
            "{:?}",
            String::from_utf8_lossy(&input)
        );
    }
}
