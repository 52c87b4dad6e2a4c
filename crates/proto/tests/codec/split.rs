//! The same bytes, however they are split across reads, must decode to the same messages (or
//! the same error). A small connection loop plays the caller: it appends each read to a
//! buffer, parses heads, decodes bodies, and drops what was consumed.

use std::fmt::Debug;

use http::HeaderMap;
use volt_proto::{
    parse_request, parse_response, BodyDecoder, BodyKind, Limits, ParseError, RequestHead,
    ResponseHead,
};

trait Head: Debug + PartialEq {
    fn head_len(&self) -> usize;
    fn body(&self) -> BodyKind;
}

impl Head for RequestHead {
    fn head_len(&self) -> usize {
        self.head_len
    }
    fn body(&self) -> BodyKind {
        self.body
    }
}

impl Head for ResponseHead {
    fn head_len(&self) -> usize {
        self.head_len
    }
    fn body(&self) -> BodyKind {
        self.body
    }
}

#[derive(Debug, PartialEq)]
struct Message<H> {
    head: H,
    body: Vec<u8>,
    trailers: HeaderMap,
}

#[derive(Debug, PartialEq)]
struct Outcome<H> {
    messages: Vec<Message<H>>,
    error: Option<ParseError>,
}

/// Feeds `reads` one after another through head parsing and body decoding.
fn connection<'a, H: Head>(
    reads: impl IntoIterator<Item = &'a [u8]>,
    parse: impl Fn(&[u8]) -> Result<Option<H>, ParseError>,
) -> Outcome<H> {
    let mut buf: Vec<u8> = Vec::new();
    let mut messages = Vec::new();
    let mut current: Option<(H, BodyDecoder, Vec<u8>)> = None;
    let fail = |messages, error| Outcome {
        messages,
        error: Some(error),
    };

    for read in reads {
        buf.extend_from_slice(read);
        loop {
            match current.take() {
                None => match parse(&buf) {
                    Ok(Some(head)) => {
                        buf.drain(..head.head_len());
                        let decoder = BodyDecoder::new(head.body());
                        current = Some((head, decoder, Vec::new()));
                    }
                    Ok(None) => break,
                    Err(e) => return fail(messages, e),
                },
                Some((head, mut decoder, mut body)) => {
                    if decoder.is_done() {
                        let trailers = decoder.take_trailers();
                        messages.push(Message {
                            head,
                            body,
                            trailers,
                        });
                        continue;
                    }
                    let consumed = match decoder.decode(&buf) {
                        Ok((consumed, data)) => {
                            body.extend_from_slice(data.unwrap_or_default());
                            consumed
                        }
                        Err(e) => return fail(messages, e),
                    };
                    buf.drain(..consumed);
                    current = Some((head, decoder, body));
                    if consumed == 0 {
                        break;
                    }
                }
            }
        }
    }

    // The peer closes: a read-until-close body ends here; anything else unfinished is lost.
    if let Some((head, mut decoder, body)) = current {
        decoder.finish_eof();
        assert!(decoder.is_done(), "input ends inside a body: {head:?}");
        let trailers = decoder.take_trailers();
        messages.push(Message {
            head,
            body,
            trailers,
        });
    }
    assert!(buf.is_empty(), "input ends inside a head: {buf:?}");
    Outcome {
        messages,
        error: None,
    }
}

/// Runs `input` in one read, split in two at every boundary, split in three at a spread of
/// boundaries, and byte by byte; all must agree. Returns the one-read outcome.
fn check_splits<H: Head>(
    input: &[u8],
    parse: impl Fn(&[u8]) -> Result<Option<H>, ParseError> + Copy,
) -> Outcome<H> {
    let whole = connection([input], parse);
    for at in 0..=input.len() {
        let (a, b) = input.split_at(at);
        assert_eq!(connection([a, b], parse), whole, "split at {at}");
    }
    let step = (input.len() / 24).max(1);
    for i in (0..=input.len()).step_by(step) {
        for j in (i..=input.len()).step_by(step) {
            let pieces = [&input[..i], &input[i..j], &input[j..]];
            assert_eq!(connection(pieces, parse), whole, "split at {i} and {j}");
        }
    }
    assert_eq!(connection(input.chunks(1), parse), whole, "byte by byte");
    whole
}

fn requests(input: &[u8]) -> Outcome<RequestHead> {
    requests_with(input, &Limits::default())
}

fn requests_with(input: &[u8], limits: &Limits) -> Outcome<RequestHead> {
    check_splits(input, |buf: &[u8]| parse_request(buf, limits))
}

fn responses(input: &[u8]) -> Outcome<ResponseHead> {
    check_splits(input, |buf: &[u8]| {
        parse_response(buf, &Limits::default(), false)
    })
}

fn bodies<H>(outcome: &Outcome<H>) -> Vec<&[u8]> {
    outcome.messages.iter().map(|m| &m.body[..]).collect()
}

#[test]
fn pipelined_techempower_requests() {
    let one = "GET /plaintext HTTP/1.1\r\nHost: server\r\nAccept: text/plain\r\nConnection: keep-alive\r\n\r\n";
    let input = one.repeat(3);
    let out = requests(input.as_bytes());
    assert_eq!(out.error, None);
    assert_eq!(out.messages.len(), 3);
    assert_eq!(out.messages[0].head.head_len, one.len());
}

#[test]
fn requests_with_bodies() {
    let input = b"\r\nPOST /form HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\n\r\nhello world\
POST /upload HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n\
4;ext=\"a;b\"\r\nabcd\r\n10\r\n0123456789abcdef\r\n0\r\nX-Sum: 20\r\nHost: dropped\r\n\r\n\
PUT /x HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: 3\r\n\r\nxyz\
GET /last HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";
    let out = requests(input);
    assert_eq!(out.error, None);
    assert_eq!(
        bodies(&out),
        [&b"hello world"[..], b"abcd0123456789abcdef", b"xyz", b""]
    );
    let chunked = &out.messages[1];
    assert!(chunked.head.expect_continue);
    assert_eq!(chunked.trailers.len(), 1);
    assert_eq!(chunked.trailers["x-sum"], "20");
    assert!(out.messages[2].head.keep_alive);
    assert!(!out.messages[3].head.keep_alive);
}

#[test]
fn responses_of_every_framing() {
    let input = b"HTTP/1.1 100 Continue\r\n\r\n\
HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello\
HTTP/1.1 204 No Content\r\nContent-Length: 99\r\n\r\n\
HTTP/1.1 304 Not Modified\r\n\r\n\
HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-T: 1\r\n\r\n\
HTTP/1.0 200 OK\r\n\r\nuntil the connection closes\r\n\r\n";
    let out = responses(input);
    assert_eq!(out.error, None);
    assert_eq!(
        bodies(&out),
        [
            &b""[..],
            b"hello",
            b"",
            b"",
            b"abc",
            b"until the connection closes\r\n\r\n"
        ]
    );
    assert_eq!(out.messages[4].trailers["x-t"], "1");
    assert_eq!(out.messages[5].head.body, BodyKind::Eof);
}

#[test]
fn rejected_requests_fail_the_same_way_however_split() {
    let cases: &[(&[u8], usize, ParseError)] = &[
        (b"GET / HTTP/1.1\r\nHost: a\r\nX: 1\nY: 2\r\n\r\n", 0, ParseError::InvalidLineEnding),
        (b"GET / HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n b\r\n\r\n", 1, ParseError::ObsFold),
        (
            b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\nabc",
            0,
            ParseError::TransferEncodingWithContentLength,
        ),
        (
            b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\nz\r\n",
            0,
            ParseError::InvalidChunkSize,
        ),
        (b"GET / HTTP/2.0\r\nHost: a\r\n\r\n", 0, ParseError::VersionNotSupported),
        (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 0, ParseError::Http2Preface),
        (b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1, 2\r\n\r\n", 0, ParseError::ConflictingContentLength),
    ];
    for (input, complete, error) in cases {
        let out = requests(input);
        assert_eq!(
            out.messages.len(),
            *complete,
            "{:?}",
            String::from_utf8_lossy(input)
        );
        assert_eq!(
            out.error.as_ref(),
            Some(error),
            "{:?}",
            String::from_utf8_lossy(input)
        );
    }
}

#[test]
fn limits_fail_the_same_way_however_split() {
    let limits = Limits {
        max_head_bytes: 256,
        max_headers: 4,
        max_uri_len: 64,
    };
    let long_target = format!("GET /{} HTTP/1.1\r\nHost: a\r\n\r\n", "t".repeat(80));
    let big_head = format!(
        "GET / HTTP/1.1\r\nHost: a\r\nX: {}\r\n\r\n",
        "v".repeat(300)
    );
    let many = "GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n";
    let cases = [
        (long_target, ParseError::UriTooLong),
        (big_head, ParseError::HeadTooLarge),
        (many.to_string(), ParseError::TooManyHeaders),
    ];
    for (input, error) in cases {
        let out = requests_with(input.as_bytes(), &limits);
        assert_eq!(out.error, Some(error), "{input:?}");
        assert!(out.messages.is_empty());
    }
}

/// A body alone: decoded data, trailers and leftover bytes, fed in the given reads.
fn chunked_body<'a>(
    reads: impl IntoIterator<Item = &'a [u8]>,
) -> Result<(Vec<u8>, HeaderMap, Vec<u8>), ParseError> {
    let mut decoder = BodyDecoder::new(BodyKind::Chunked);
    let mut pending = Vec::new();
    let mut data = Vec::new();
    for read in reads {
        pending.extend_from_slice(read);
        while !decoder.is_done() {
            let (consumed, chunk) = decoder.decode(&pending)?;
            data.extend_from_slice(chunk.unwrap_or_default());
            pending.drain(..consumed);
            if consumed == 0 {
                break;
            }
        }
    }
    assert!(decoder.is_done());
    Ok((data, decoder.take_trailers(), pending))
}

#[test]
fn chunked_bodies_split_anywhere() {
    let bodies: &[&[u8]] = &[
        b"1\r\na\r\n0\r\n\r\n",
        b"5\r\nhello\r\n1a; name = \"v\\\\al\" ;flag\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\n\r\nrest",
        b"3\r\nabc\r\n0;end=yes\r\nX-One: 1\r\nX-Two: two words\r\n\r\n",
    ];
    for body in bodies {
        let whole = chunked_body([*body]).unwrap();
        for at in 0..=body.len() {
            let (a, b) = body.split_at(at);
            assert_eq!(chunked_body([a, b]).unwrap(), whole, "split at {at}");
        }
        assert_eq!(chunked_body(body.chunks(1)).unwrap(), whole, "byte by byte");
    }
    let (data, trailers, rest) = chunked_body([bodies[1]]).unwrap();
    assert_eq!(data, b"helloabcdefghijklmnopqrstuvwxyz");
    assert!(trailers.is_empty());
    assert_eq!(rest, b"rest");
    let (_, trailers, _) = chunked_body([bodies[2]]).unwrap();
    assert_eq!(trailers["x-two"], "two words");
}
