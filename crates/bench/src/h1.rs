//! The HTTP/1.1 response reader: finds where each response ends in the bytes a connection
//! received. Sans-I/O: it is handed slices and says how much of them it used.
//!
//! Heads are parsed by `volt_proto::parse_response_into`, into one head kept for the
//! connection; a head byte for byte the same as the last one is compared with it instead of
//! scanned again (identical bytes have the identical parse); bodies are skipped according to their
//! framing (`Content-Length`, `chunked` through `volt_proto::BodyDecoder`, or until close).
//! Interim `1xx` responses are skipped: the request they precede is still waiting for its
//! final response.

use volt_proto::{parse_response_into, BodyDecoder, BodyKind, Limits, ParseError, ResponseHead};

/// A response that ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Response {
    pub status: u16,
    /// False when the server will not read another request on this connection.
    pub keep_alive: bool,
}

/// What [`ResponseReader::step`] did with its input.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// A response ended after this many bytes of the input.
    Done(usize, Response),
    /// This many bytes were used (possibly all) and the response is not over yet.
    NeedMore(usize),
}

#[derive(Debug)]
enum State {
    /// Waiting for (the rest of) a status line and header section.
    Head,
    /// Inside the body of a response whose head was parsed.
    Body { response: Response, body: Body },
}

#[derive(Debug)]
enum Body {
    Length(u64),
    /// Walked by the reader's `chunked` decoder.
    Chunked,
    UntilClose,
}

/// Reads consecutive responses on one connection, one [`step`](Self::step) at a time.
#[derive(Debug)]
pub(crate) struct ResponseReader {
    state: State,
    /// The decoder of the current chunked body. Kept here rather than in `Body::Chunked` so
    /// the state stays small; a fresh one is assigned per body (that allocates nothing).
    chunked: BodyDecoder,
    limits: Limits,
    /// Every head of the connection is parsed into this one, so its span array is reused and
    /// no head is moved.
    head: ResponseHead,
    /// The bytes `head` was parsed from (empty when it holds no parse), and whether they
    /// answered a `HEAD` request. A head byte for byte the same is not scanned again.
    last: Vec<u8>,
    last_head_request: bool,
}

impl ResponseReader {
    pub(crate) fn new() -> ResponseReader {
        ResponseReader {
            state: State::Head,
            chunked: BodyDecoder::new(BodyKind::Empty),
            limits: Limits::default(),
            head: ResponseHead::default(),
            last: Vec::new(),
            last_head_request: false,
        }
    }

    /// True between responses: no byte of the next one has been used yet.
    pub(crate) fn is_between_responses(&self) -> bool {
        matches!(self.state, State::Head)
    }

    /// Uses bytes from the front of `input` toward the response to a request (a `HEAD` request
    /// if `head_request`). `inspect` sees each final response head and the bytes it was parsed
    /// from.
    ///
    /// A head is only parsed once it is complete in `input`, so on `NeedMore(n)` with the reader
    /// still before a head, `n` is 0 and the caller keeps the bytes for the next call.
    pub(crate) fn step(
        &mut self,
        input: &[u8],
        head_request: bool,
        inspect: &mut impl FnMut(&ResponseHead, &[u8]),
    ) -> Result<Step, ParseError> {
        let mut used = 0;
        loop {
            match &mut self.state {
                State::Head => {
                    let rest = &input[used..];
                    let head = &mut self.head;
                    // The same bytes parse the same: a server's answers to one request usually
                    // differ only in `Date`, once a second, so most heads are compared to the
                    // last one (a memcmp) instead of scanned. Where they differ, they are parsed.
                    let same = !self.last.is_empty()
                        && head_request == self.last_head_request
                        && rest.starts_with(&self.last);
                    if !same {
                        self.last.clear();
                        if !parse_response_into(rest, &self.limits, head_request, head)? {
                            return Ok(Step::NeedMore(used));
                        }
                        self.last.extend_from_slice(&rest[..head.head_len]);
                        self.last_head_request = head_request;
                    }
                    used += head.head_len;
                    let status = head.status.as_u16();
                    if (100..200).contains(&status) && status != 101 {
                        continue; // interim: the final response follows
                    }
                    inspect(head, &rest[..head.head_len]);
                    let response = Response {
                        status,
                        keep_alive: head.keep_alive,
                    };
                    let body = match head.body {
                        BodyKind::Empty => return Ok(Step::Done(used, response)),
                        // The common case: the whole body is already here.
                        BodyKind::Length(n) if n <= (rest.len() - head.head_len) as u64 => {
                            return Ok(Step::Done(used + n as usize, response));
                        }
                        BodyKind::Length(n) => Body::Length(n),
                        BodyKind::Chunked => {
                            self.chunked =
                                BodyDecoder::with_limits(BodyKind::Chunked, &self.limits);
                            Body::Chunked
                        }
                        BodyKind::Eof => Body::UntilClose,
                    };
                    self.state = State::Body { response, body };
                }
                State::Body { response, body } => {
                    let response = *response;
                    let rest = &input[used..];
                    match body {
                        Body::Length(remaining) => {
                            let take = (*remaining).min(rest.len() as u64);
                            *remaining -= take;
                            used += take as usize;
                            if *remaining > 0 {
                                return Ok(Step::NeedMore(used));
                            }
                        }
                        Body::Chunked => {
                            let mut rest = rest;
                            while !self.chunked.is_done() {
                                let (n, _) = self.chunked.decode(rest)?;
                                if n == 0 {
                                    return Ok(Step::NeedMore(used));
                                }
                                used += n;
                                rest = &rest[n..];
                            }
                        }
                        Body::UntilClose => return Ok(Step::NeedMore(input.len())),
                    }
                    self.state = State::Head;
                    return Ok(Step::Done(used, response));
                }
            }
        }
    }

    /// The connection reached its end. Returns the response this completes (a body delimited
    /// by the close), or `None` when a response was cut short or none was under way; tell the
    /// two apart with [`is_between_responses`](Self::is_between_responses) beforehand.
    pub(crate) fn finish_at_close(&mut self) -> Option<Response> {
        match std::mem::replace(&mut self.state, State::Head) {
            State::Body {
                response,
                body: Body::UntilClose,
            } => Some(response),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_inspect() -> impl FnMut(&ResponseHead, &[u8]) {
        |_, _| {}
    }

    /// Feeds `input` split at every position and collects the responses.
    fn read_all(input: &[u8], head: bool) -> Result<Vec<Response>, ParseError> {
        let mut out = Vec::new();
        for split in 0..=input.len() {
            let mut reader = ResponseReader::new();
            let mut got = Vec::new();
            let mut buf: Vec<u8> = Vec::new();
            for part in [&input[..split], &input[split..]] {
                buf.extend_from_slice(part);
                loop {
                    match reader.step(&buf, head, &mut no_inspect())? {
                        Step::Done(n, r) => {
                            buf.drain(..n);
                            got.push(r);
                        }
                        Step::NeedMore(n) => {
                            buf.drain(..n);
                            break;
                        }
                    }
                }
            }
            if split == 0 {
                out = got;
            } else {
                assert_eq!(got, out, "split at {split}");
            }
        }
        Ok(out)
    }

    const OK: Response = Response {
        status: 200,
        keep_alive: true,
    };

    #[test]
    fn content_length_responses_back_to_back() {
        let two = b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\nHello, World!\
HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n";
        let got = read_all(two, false).unwrap();
        assert_eq!(
            got,
            [
                OK,
                Response {
                    status: 404,
                    keep_alive: true
                }
            ]
        );
    }

    #[test]
    fn chunked_with_trailers() {
        let input = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
5\r\nhello\r\n0\r\nX-T: 1\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n";
        let got = read_all(input, false).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[1].status, 204);
    }

    #[test]
    fn head_response_has_no_body() {
        let input = b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\n";
        assert_eq!(read_all(input, true).unwrap(), [OK]);
        // As a GET it would wait for 13 more bytes.
        let mut reader = ResponseReader::new();
        let step = reader.step(input, false, &mut no_inspect()).unwrap();
        assert_eq!(step, Step::NeedMore(input.len()));
        assert!(!reader.is_between_responses());
    }

    #[test]
    fn interim_responses_are_skipped() {
        let input = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx";
        assert_eq!(read_all(input, false).unwrap(), [OK]);
    }

    #[test]
    fn body_until_close() {
        let input = b"HTTP/1.1 200 OK\r\n\r\nsome bytes";
        let mut reader = ResponseReader::new();
        assert_eq!(
            reader.step(input, false, &mut no_inspect()).unwrap(),
            Step::NeedMore(input.len())
        );
        assert_eq!(
            reader.finish_at_close(),
            Some(Response {
                status: 200,
                keep_alive: false
            })
        );
        assert!(reader.is_between_responses());
    }

    #[test]
    fn truncated_length_body_is_not_a_response() {
        let mut reader = ResponseReader::new();
        let input = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort";
        reader.step(input, false, &mut no_inspect()).unwrap();
        assert!(!reader.is_between_responses());
        assert_eq!(reader.finish_at_close(), None);
    }

    #[test]
    fn garbage_is_a_parse_error() {
        for bad in [
            &b"garbage garbage garbage\r\n\r\n"[..],
            b"HTTP/1.1 2x0 OK\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        ] {
            let mut reader = ResponseReader::new();
            let mut buf = bad;
            let result = loop {
                match reader.step(buf, false, &mut no_inspect()) {
                    Ok(Step::Done(n, _)) => buf = &buf[n..],
                    other => break other,
                }
            };
            assert!(
                result.is_err(),
                "{:?}: {result:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    /// A head the same as the last one is compared, not scanned: a byte that differs is parsed
    /// (and caught), and the same bytes answering a `HEAD` request are framed as such.
    #[test]
    fn a_repeated_head_is_reused_only_when_every_byte_matches() {
        let good = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        let mut reader = ResponseReader::new();
        for _ in 0..3 {
            let step = reader.step(good, false, &mut no_inspect()).unwrap();
            assert_eq!(step, Step::Done(good.len(), OK));
        }
        // The head's bytes without the body, now for a HEAD request: no body follows.
        let head_only = &good[..good.len() - 2];
        let step = reader.step(head_only, true, &mut no_inspect()).unwrap();
        assert_eq!(step, Step::Done(head_only.len(), OK));
        // The same again as a GET waits for its body.
        let step = reader.step(head_only, false, &mut no_inspect()).unwrap();
        assert_eq!(step, Step::NeedMore(head_only.len()));
        let step = reader.step(b"ok", false, &mut no_inspect()).unwrap();
        assert_eq!(step, Step::Done(2, OK));
        // One byte changed into one the grammar refuses.
        let bad = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\x0b\r\nok";
        assert!(reader.step(bad, false, &mut no_inspect()).is_err());
        let other = b"HTTP/1.1 503 OK\r\nContent-Length: 2\r\n\r\nok";
        let mut reader = ResponseReader::new();
        reader.step(good, false, &mut no_inspect()).unwrap();
        let step = reader.step(other, false, &mut no_inspect()).unwrap();
        assert_eq!(
            step,
            Step::Done(
                other.len(),
                Response {
                    status: 503,
                    keep_alive: true
                }
            )
        );
    }

    #[test]
    fn inspect_sees_final_heads_only() {
        let input =
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nX-Id: 7\r\nContent-Length: 0\r\n\r\n";
        let mut seen = Vec::new();
        let mut reader = ResponseReader::new();
        let step = reader
            .step(input, false, &mut |head: &ResponseHead, bytes: &[u8]| {
                seen.push(head.header(bytes, "x-id").map(<[u8]>::to_vec));
            })
            .unwrap();
        assert_eq!(step, Step::Done(input.len(), OK));
        assert_eq!(seen, [Some(b"7".to_vec())]);
    }
}
