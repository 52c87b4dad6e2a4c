//! What the server must answer to a stream of bytes, by the codec, and the check of what it did.

use volt_proto::{parse_request, parse_response, BodyDecoder, BodyKind, Limits};

use crate::common;
use crate::mutate::find;

/// What the oracle says about one request of the stream.
#[derive(Debug)]
pub(crate) enum Expected {
    /// A head the codec accepts; the server answers it.
    Request(Accepted),
    /// A head the codec rejects: this status, `Connection: close`, and nothing after.
    /// `may_be_silent`: what breaks the rules comes after the stream's last LF, and the server
    /// parses an unfinished head again only once a line ends (or a limit is passed), so at
    /// the close it may not have seen it.
    Rejected { status: u16, may_be_silent: bool },
    /// A first line that is not HTTP/1's (a broken HTTP/2 client, say): closed without an
    /// answer, or answered 400 when its bytes came in pieces (the server sees it is not the
    /// HTTP/2 preface before it sees the line, and takes it for HTTP/1 then).
    NotHttp1,
    /// HTTP/2's preface: the connection is HTTP/2's (not checked here beyond that it ends).
    Http2,
}

#[derive(Debug)]
pub(crate) struct Accepted {
    is_head: bool,
    is_options: bool,
    /// Its path is the panicking route's.
    panics: bool,
    expect_continue: bool,
    /// The target as received.
    target: Vec<u8>,
    /// The request body as the oracle decodes it: `Ok(data)` if whole and well-formed.
    body: Result<Vec<u8>, BodyFault>,
    /// Over the body limit by its declared length: answered 413 before any handler.
    too_large: bool,
    /// The connection may go on after it (its own keep-alive, and a body that ended well).
    goes_on: bool,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum BodyFault {
    /// Bytes that break the chunked framing (or its limits): answered with this status.
    Broken(u16),
    /// More than the body limit (413).
    TooLarge,
    /// The stream ended before the body did.
    CutShort,
}

/// Walks the request stream the way the server should: head by head, each body decoded, until
/// a head is rejected, unfinished, or ends the connection.
pub(crate) fn oracle(stream: &[u8], limits: &Limits, max_body: u64) -> Vec<Expected> {
    let mut out = Vec::new();
    let mut pos = 0;
    loop {
        let rest = &stream[pos..];
        if rest.is_empty() {
            return out;
        }
        // The first bytes of a connection may be HTTP/2's preface (or the start of it, which
        // the server waits to see the rest of).
        if pos == 0 {
            let n = rest.len().min(volt_proto::H2_PREFACE.len());
            if rest[..n] == volt_proto::H2_PREFACE[..n] {
                if n == volt_proto::H2_PREFACE.len() {
                    out.push(Expected::Http2);
                }
                return out;
            }
        }
        let head = match parse_request(rest, limits) {
            Ok(Some(head)) => head,
            Ok(None) => return out,
            Err(volt_proto::ParseError::InvalidVersion) if pos == 0 && !looks_like_http1(rest) => {
                out.push(Expected::NotHttp1);
                return out;
            }
            Err(e) => {
                let through_last_lf = match rest.iter().rposition(|&b| b == b'\n') {
                    Some(i) => &rest[..=i],
                    None => &[][..],
                };
                out.push(Expected::Rejected {
                    status: e.status().as_u16(),
                    may_be_silent: matches!(parse_request(through_last_lf, limits), Ok(None)),
                });
                return out;
            }
        };
        let after_head = &rest[head.head_len..];
        let too_large = matches!(head.body, BodyKind::Length(n) if n > max_body);
        let (body, used) = if too_large {
            (Err(BodyFault::TooLarge), 0)
        } else {
            decode_body(head.body, after_head, limits, max_body)
        };
        let target = head.target.get(rest).to_vec();
        let panics = path_of(&target) == b"/panic";
        let goes_on = head.keep_alive && body.is_ok() && !too_large && !panics;
        out.push(Expected::Request(Accepted {
            is_head: head.method == http::Method::HEAD,
            is_options: head.method == http::Method::OPTIONS,
            panics,
            expect_continue: head.expect_continue,
            target,
            body,
            too_large,
            goes_on,
        }));
        if !goes_on {
            return out;
        }
        pos += head.head_len + used;
    }
}

/// The path of an origin-form or absolute-form target.
pub(crate) fn path_of(target: &[u8]) -> &[u8] {
    let path = match find(target, b"://") {
        Some(i) => {
            let after = &target[i + 3..];
            &after[after.iter().position(|&b| b == b'/').unwrap_or(after.len())..]
        }
        None => target,
    };
    &path[..path.iter().position(|&b| b == b'?').unwrap_or(path.len())]
}

/// Whether the server must close after the oracle's last request without waiting for the
/// client: a rejected head, or a last request that ends the connection and whose body (if
/// any) came whole.
pub(crate) fn ends_by_itself(expected: &[Expected]) -> bool {
    match expected.last() {
        Some(Expected::Rejected { may_be_silent, .. }) => !may_be_silent,
        Some(Expected::Request(r)) => !r.goes_on && r.body != Err(BodyFault::CutShort),
        _ => false,
    }
}

/// As the server's `looks_like_http1`: a first line with an HTTP/1 target form.
pub(crate) fn looks_like_http1(buf: &[u8]) -> bool {
    let line = buf.split(|&b| b == b'\n').next().unwrap_or(buf);
    let target = line.split(|&b| b == b' ').nth(1).unwrap_or(b"");
    target.starts_with(b"/") || target == b"*" || target.windows(3).any(|w| w == b"://")
}

pub(crate) fn decode_body(
    kind: BodyKind,
    input: &[u8],
    limits: &Limits,
    max: u64,
) -> (Result<Vec<u8>, BodyFault>, usize) {
    let mut decoder = BodyDecoder::with_limits(kind, limits);
    let mut data = Vec::new();
    let mut pos = 0;
    while !decoder.is_done() {
        match decoder.decode(&input[pos..]) {
            Ok((0, _)) => return (Err(BodyFault::CutShort), pos),
            Ok((n, piece)) => {
                data.extend_from_slice(piece.unwrap_or_default());
                pos += n;
                if data.len() as u64 > max {
                    return (Err(BodyFault::TooLarge), pos);
                }
            }
            Err(e) => return (Err(BodyFault::Broken(e.status().as_u16())), pos),
        }
    }
    (Ok(data), pos)
}

/// One response as read back.
pub(crate) struct Answer {
    pub(crate) status: u16,
    head: String,
    body: Vec<u8>,
    closes: bool,
    /// Delimited by the close (a streamed body to HTTP/1.0): the connection cannot go on.
    until_close: bool,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.head.split("\r\n").skip(1).find_map(|line| {
            let (n, v) = line.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }
}

/// Splits what the server sent into responses, each parsed by `volt_proto::parse_response`
/// (HEAD's taken from the oracle) and its body decoded. `Err` if the bytes are not a sequence
/// of well-formed, complete HTTP/1.1 responses.
pub(crate) fn read_answers(bytes: &[u8], expected: &[Expected]) -> Result<Vec<Answer>, String> {
    if matches!(expected, [Expected::Http2]) {
        return Ok(Vec::new());
    }
    let limits = Limits::default();
    let mut answers = Vec::new();
    let mut pos = 0;
    while pos < bytes.len() {
        let rest = &bytes[pos..];
        let is_head =
            matches!(expected.get(answers.len()), Some(Expected::Request(a)) if a.is_head);
        let head = match parse_response(rest, &limits, is_head) {
            Ok(Some(head)) => head,
            Ok(None) => return Err(format!("response {} is cut short", answers.len())),
            Err(e) => {
                return Err(format!(
                    "the bytes of response {} do not parse as one: {e:?}",
                    answers.len()
                ))
            }
        };
        if !rest.starts_with(b"HTTP/1.1 ") {
            return Err(format!("response {} is not HTTP/1.1", answers.len()));
        }
        let head_text = String::from_utf8_lossy(&rest[..head.head_len]).into_owned();
        let status = head.status.as_u16();
        pos += head.head_len;
        if status == 100 {
            match expected.get(answers.len()) {
                Some(Expected::Request(a)) if a.expect_continue => continue,
                _ => return Err("a 100 Continue to a request that did not ask".into()),
            }
        }
        if (101..200).contains(&status) {
            return Err(format!("an interim {status}"));
        }
        let count = |name: &str| {
            head.headers
                .iter()
                .filter(|h| h.name.get(rest).eq_ignore_ascii_case(name.as_bytes()))
                .count()
        };
        let (lengths, codings) = (count("content-length"), count("transfer-encoding"));
        if lengths > 1 || codings > 1 || lengths + codings > 1 {
            return Err(format!("response {} is framed twice", answers.len()));
        }
        let date = head.header(rest, "date").unwrap_or_default();
        if !common::is_imf_fixdate(&String::from_utf8_lossy(date)) {
            return Err(format!("a bad Date in {head_text:?}"));
        }
        let (body, used) = decode_body(head.body, &bytes[pos..], &limits, u64::MAX);
        let body = match (body, head.body) {
            (Ok(body), _) => body,
            (Err(BodyFault::CutShort), BodyKind::Eof) => bytes[pos..].to_vec(),
            (Err(fault), _) => {
                return Err(format!("response {} body: {fault:?}", answers.len()));
            }
        };
        pos += match head.body {
            BodyKind::Eof => bytes.len() - pos,
            _ => used,
        };
        answers.push(Answer {
            status,
            head: head_text,
            body,
            closes: !head.keep_alive,
            until_close: head.body == BodyKind::Eof,
        });
    }
    Ok(answers)
}

/// Checks the answers against the oracle; `Err` names the first broken rule.
pub(crate) fn check(expected: &[Expected], answers: &[Answer]) -> Result<(), String> {
    if matches!(expected, [Expected::Http2]) {
        return Ok(());
    }
    for (i, answer) in answers.iter().enumerate() {
        if answer.closes && i + 1 < answers.len() {
            return Err(format!("response {i} closes, yet more responses follow it"));
        }
        let Some(exp) = expected.get(i) else {
            return Err(format!(
                "response {i} ({}) to a request the codec does not see (finds {} requests)",
                answer.status,
                expected.len()
            ));
        };
        let last = i + 1 == answers.len();
        match exp {
            Expected::Rejected { status, .. } => {
                if answer.status != *status {
                    return Err(format!(
                        "response {i} is {}, the codec rejects the request with {status}",
                        answer.status
                    ));
                }
                if !answer.closes || !last {
                    return Err(format!("the rejection {i} does not close"));
                }
            }
            Expected::NotHttp1 => {
                if answer.status != 400 || !answer.closes || !last {
                    return Err(format!(
                        "response {i} to a line not HTTP/1's is {}",
                        answer.status
                    ));
                }
            }
            Expected::Request(req) => check_accepted(i, req, answer, last)?,
            Expected::Http2 => unreachable!("HTTP/2 is not checked"),
        }
    }
    // Every request the oracle expects an answer to has one (the server read all of them).
    let silent = matches!(
        expected.last(),
        Some(
            Expected::NotHttp1
                | Expected::Rejected {
                    may_be_silent: true,
                    ..
                }
        )
    );
    // A response delimited by the close ends the connection; so may the answer to a request
    // that asked for `100 Continue` and whose handler left its body unread, even if the body
    // came (the server does not skip a body the client may or may not send).
    let ended_early = answers.last().is_some_and(|a| {
        a.until_close
            || (a.closes
                && matches!(expected.get(answers.len() - 1),
                    Some(Expected::Request(r)) if r.expect_continue))
    });
    if !ended_early && answers.len() + usize::from(silent) < expected.len() {
        // A request after which the connection cannot go on may close it without a response
        // only if its body was cut short by the client (the close is the client's).
        return Err(format!(
            "{} responses for {} requests the codec sees",
            answers.len(),
            expected.len()
        ));
    }
    Ok(())
}

pub(crate) fn check_accepted(
    i: usize,
    req: &Accepted,
    answer: &Answer,
    last: bool,
) -> Result<(), String> {
    let route = answer.header("x-route");
    let status = answer.status;
    if req.too_large {
        if status != 413 || !answer.closes {
            return Err(format!("response {i} to a body over the limit is {status}"));
        }
        return Ok(());
    }
    match (status, route) {
        (200, Some("echo")) => {
            let Ok(body) = &req.body else {
                return Err(format!(
                    "response {i}: echoed a body the codec finds broken"
                ));
            };
            if !req.is_head && answer.body != *body {
                return Err(format!(
                    "response {i}: echoed {:?}, the body is {:?}",
                    String::from_utf8_lossy(&answer.body),
                    String::from_utf8_lossy(body)
                ));
            }
        }
        (200, Some("root" | "stream")) => {}
        // `OPTIONS *` is the server's own.
        (200, None) if req.target == b"*" && req.is_options => {}
        // ... and the asterisk with another method the router's (the framing is sound: the
        // connection goes on).
        (400, None) if req.target == b"*" && !req.is_options => {}
        (500, None) => {
            if !req.panics {
                return Err(format!(
                    "response {i} is a 500 not from the panicking route"
                ));
            }
            if !answer.closes {
                return Err(format!("response {i}: a 500 after a panic does not close"));
            }
        }
        (404, None) => {}
        (_, None) if req.body.is_err() => {
            let fits = match req.body {
                Err(BodyFault::Broken(s)) => status == s,
                Err(BodyFault::TooLarge) => status == 413,
                _ => status == 400,
            };
            if !fits {
                return Err(format!(
                    "response {i} is {status}; the body is {:?}",
                    req.body
                ));
            }
            if !answer.closes {
                return Err(format!(
                    "response {i}: a {status} for a bad body does not close"
                ));
            }
        }
        _ => {
            return Err(format!(
                "response {i} to a request the codec accepts is {status} (route {route:?})"
            ));
        }
    }
    if !req.goes_on && !last {
        return Err(format!("response {i} ends the connection, yet more follow"));
    }
    Ok(())
}
