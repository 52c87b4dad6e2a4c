//! Request heads: `parse_request` and the strict request-line walker behind its errors.

use std::mem::MaybeUninit;

use http::{Method, Version};

use crate::headers::{
    classify_version, is_tchar, is_valid_host, offset, only_crlfs, scan_fields, skip_empty_lines,
    span_of, spill_slots, walk_fields, TransferCodings, VersionClass, Walk,
};
use crate::{find_header, BodyKind, HeaderSpans, Limits, ParseError, Span};

/// Header slots on the stack. A head with more fields than this (under a limit that allows
/// them) is parsed a second time into a heap array; typical heads have fewer than ten.
pub(crate) const STACK_HEADERS: usize = 64;

/// A parsed request head. Spans point into the buffer given to [`parse_request`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestHead {
    /// The request method.
    pub method: Method,
    /// `HTTP_10` or `HTTP_11`.
    pub version: Version,
    /// The request target as received (origin, absolute, authority or asterisk form).
    pub target: Span,
    /// The header fields in the order received.
    pub headers: HeaderSpans,
    /// Bytes from the start of the buffer up to and including the blank line: the body, or the
    /// next pipelined request, starts here.
    pub head_len: usize,
    /// How the body is delimited: `Empty`, `Length` or `Chunked` (never `Eof` for requests).
    pub body: BodyKind,
    /// Whether the connection may carry another request after this one: HTTP/1.1 unless
    /// `Connection` lists `close`; HTTP/1.0 only if it lists `keep-alive` (and not `close`).
    pub keep_alive: bool,
    /// `Expect: 100-continue` on an HTTP/1.1 request that has a body: the client waits for a
    /// `100 Continue` before sending it. Ignored on HTTP/1.0 (RFC 9110 §10.1.1) and when
    /// there is no body to wait for.
    pub expect_continue: bool,
}

impl RequestHead {
    /// The value of the first field called `name` (case-insensitive). `buf` is the buffer
    /// that was parsed.
    pub fn header<'b>(&self, buf: &'b [u8], name: &str) -> Option<&'b [u8]> {
        find_header(&self.headers, buf, name)
    }
}

/// Parses one request head at the start of `buf`.
///
/// Returns `Ok(None)` when the head is not complete yet and no limit has been exceeded: read
/// more bytes and call again with the longer buffer. A complete head's
/// [`head_len`](RequestHead::head_len) says where the body (or the next pipelined request)
/// starts.
///
/// Leading empty lines (CRLF) before the request line are skipped, as RFC 9112 §2.2 allows;
/// they count toward `head_len` and the head size limit.
///
/// # Errors
///
/// A [`ParseError`] naming the first rule the head breaks, in byte order. A limit error comes
/// as soon as the limit is passed: [`UriTooLong`](ParseError::UriTooLong) while the request
/// line is still unfinished, [`HeadTooLarge`](ParseError::HeadTooLarge) once `buf` holds
/// `max_head_bytes` without a complete head. [`VersionNotSupported`](ParseError::VersionNotSupported)
/// and [`Http2Preface`](ParseError::Http2Preface) come once the request line is complete.
pub fn parse_request(buf: &[u8], limits: &Limits) -> Result<Option<RequestHead>, ParseError> {
    let window = head_window(buf, limits);
    let mut slots = [const { MaybeUninit::uninit() }; STACK_HEADERS];
    let mut req = httparse::Request::new(&mut []);
    let slot_count = limits.max_headers.min(STACK_HEADERS);
    match req.parse_with_uninit_headers(window, &mut slots[..slot_count]) {
        Ok(httparse::Status::Complete(head_len)) => finish(buf, limits, &req, head_len),
        Ok(httparse::Status::Partial) => unfinished(buf.len(), window, limits, None),
        Err(httparse::Error::TooManyHeaders) if limits.max_headers > STACK_HEADERS => {
            parse_spilled(buf, window, limits)
        }
        Err(err) => unfinished(buf.len(), window, limits, Some(err)),
    }
}

/// The part of `buf` a head may occupy. Parsing only this much bounds the work per call, and
/// makes "too large" the same answer however the bytes were split across reads.
pub(crate) fn head_window<'b>(buf: &'b [u8], limits: &Limits) -> &'b [u8] {
    &buf[..buf.len().min(head_cap(limits))]
}

/// `max_head_bytes`, capped so every offset fits a [`Span`]'s `u32`.
pub(crate) fn head_cap(limits: &Limits) -> usize {
    limits.max_head_bytes.min(u32::MAX as usize)
}

/// The rare head with more than [`STACK_HEADERS`] fields.
#[cold]
fn parse_spilled(
    buf: &[u8],
    window: &[u8],
    limits: &Limits,
) -> Result<Option<RequestHead>, ParseError> {
    let mut slots = vec![httparse::EMPTY_HEADER; spill_slots(limits.max_headers, window)];
    let mut req = httparse::Request::new(&mut slots);
    match req.parse(window) {
        Ok(httparse::Status::Complete(head_len)) => finish(buf, limits, &req, head_len),
        Ok(httparse::Status::Partial) => unfinished(buf.len(), window, limits, None),
        Err(err) => unfinished(buf.len(), window, limits, Some(err)),
    }
}

/// No complete head yet (`err` is `None`), or httparse refused it. Either way the strict walk
/// decides, but on the partial path only once a limit could have been passed, so a short
/// unfinished head costs nothing extra.
fn unfinished(
    buf_len: usize,
    window: &[u8],
    limits: &Limits,
    err: Option<httparse::Error>,
) -> Result<Option<RequestHead>, ParseError> {
    let head_full = buf_len >= head_cap(limits);
    if err.is_some() || head_full || buf_len > limits.max_uri_len {
        match walk_request(window, limits) {
            Walk::Violation(e) => return Err(e),
            Walk::NeedMore => {}
            Walk::Clean => {
                return Err(err.map_or(ParseError::BadRequestLine, ParseError::from_httparse))
            }
        }
    }
    if head_full {
        Err(ParseError::HeadTooLarge)
    } else {
        Ok(None)
    }
}

/// Builds the head from a complete httparse result: one pass over the fields, then the
/// framing rules of RFC 9112 §6 and the Host rules of §3.2.
fn finish(
    buf: &[u8],
    limits: &Limits,
    req: &httparse::Request<'_, '_>,
    head_len: usize,
) -> Result<Option<RequestHead>, ParseError> {
    let window = &buf[..head_len];
    let (Some(method), Some(target), Some(minor)) = (req.method, req.path, req.version) else {
        return Err(strict_error(window, limits));
    };
    let method_at = offset(buf, method.as_bytes());
    let target_str = target;
    let target = span_of(buf, target.as_bytes());
    // Built first and filled in as the checks pass, so the span array (most of the head's
    // 300-odd bytes) is written once, where it is returned from, not copied into place.
    let mut head = RequestHead {
        method: Method::GET,
        version: if minor == 0 {
            Version::HTTP_10
        } else {
            Version::HTTP_11
        },
        target,
        headers: HeaderSpans::new(),
        head_len,
        body: BodyKind::Empty,
        keep_alive: false,
        expect_continue: false,
    };
    let scan = scan_fields(buf, req.headers, head_len, &mut head.headers);
    // What httparse lets through and RFC 9112 does not: bare LF line endings (also among the
    // leading empty lines), and raw non-ASCII bytes in the target. Plus the target limit.
    let strict = (method_at == 0 || only_crlfs(&buf[..method_at]))
        && target.len() <= limits.max_uri_len
        && target_str.is_ascii()
        && scan.crlf_lines;
    if !strict {
        return Err(strict_error(window, limits));
    }

    let version = head.version;
    head.method = method_of(method.as_bytes())?;
    let framing = scan.framing;
    if let Some(err) = framing.error {
        return Err(err);
    }

    match framing.hosts {
        0 if version == Version::HTTP_11 => return Err(ParseError::MissingHost),
        0 => {}
        1 if !is_valid_host(framing.host.get(buf)) => return Err(ParseError::InvalidHost),
        1 => {}
        _ => return Err(ParseError::DuplicateHost),
    }

    let body = match (framing.te, framing.content_length) {
        (Some(_), _) if version == Version::HTTP_10 => {
            return Err(ParseError::TransferEncodingOnHttp10)
        }
        (Some(_), Some(_)) => return Err(ParseError::TransferEncodingWithContentLength),
        (Some(codings), None) => request_coding(codings)?,
        (None, None | Some(0)) => BodyKind::Empty,
        (None, Some(len)) => BodyKind::Length(len),
    };

    // Only 1.1 defines `Expect`; an HTTP/1.0 server ignores it (RFC 9110 §10.1.1).
    if framing.expect_other && version == Version::HTTP_11 {
        return Err(ParseError::UnsupportedExpectation);
    }

    head.keep_alive = if version == Version::HTTP_11 {
        !framing.close
    } else {
        framing.keep_alive && !framing.close
    };
    head.expect_continue =
        framing.expect_continue && version == Version::HTTP_11 && body != BodyKind::Empty;
    head.body = body;
    Ok(Some(head))
}

/// The method named by `token`. The common ones are matched on their bytes: `Method::from_bytes`
/// reaches the same constants, but through a longer path.
#[inline]
fn method_of(token: &[u8]) -> Result<Method, ParseError> {
    match token {
        b"GET" => Ok(Method::GET),
        b"POST" => Ok(Method::POST),
        b"HEAD" => Ok(Method::HEAD),
        b"PUT" => Ok(Method::PUT),
        b"DELETE" => Ok(Method::DELETE),
        _ => Method::from_bytes(token).map_err(|_| ParseError::InvalidMethod),
    }
}

/// A request's codings must end in exactly one `chunked`, and this codec decodes nothing
/// else (RFC 9112 §6.3 item 4, §6.1).
fn request_coding(codings: TransferCodings) -> Result<BodyKind, ParseError> {
    codings.check_common()?;
    if !codings.chunked_last {
        Err(ParseError::ChunkedNotLast)
    } else if codings.count > 1 {
        Err(ParseError::UnsupportedTransferCoding)
    } else {
        Ok(BodyKind::Chunked)
    }
}

/// The error for a head the fast path refused. The walk finds it unless the two disagree,
/// which would be a bug in this crate.
#[cold]
fn strict_error(window: &[u8], limits: &Limits) -> ParseError {
    match walk_request(window, limits) {
        Walk::Violation(err) => err,
        other => {
            debug_assert!(false, "strict walk disagrees with fast path: {other:?}");
            ParseError::BadRequestLine
        }
    }
}

/// The strict grammar of a request head, byte by byte: RFC 9112 §3 for the request line,
/// then [`walk_fields`] for the field lines.
#[cold]
fn walk_request(buf: &[u8], limits: &Limits) -> Walk {
    use ParseError::*;
    let mut pos = match skip_empty_lines(buf) {
        Ok(pos) => pos,
        Err(walk) => return walk,
    };

    let method_start = pos;
    while buf.get(pos).is_some_and(|&b| is_tchar(b)) {
        pos += 1;
    }
    let Some(&b) = buf.get(pos) else {
        return Walk::NeedMore;
    };
    if b != b' ' || pos == method_start {
        // A delimiter or non-ASCII byte inside the method, or no method at all.
        let in_method = pos > method_start && (b.is_ascii_graphic() || !b.is_ascii());
        return Walk::Violation(if in_method {
            InvalidMethod
        } else {
            BadRequestLine
        });
    }
    let method = &buf[method_start..pos];
    pos += 1;

    let target_start = pos;
    while buf.get(pos).is_some_and(u8::is_ascii_graphic) {
        pos += 1;
    }
    // Checked before looking for the end of the target, so an endless target is refused as
    // soon as it is too long.
    if pos - target_start > limits.max_uri_len {
        return Walk::Violation(UriTooLong);
    }
    let Some(&b) = buf.get(pos) else {
        return Walk::NeedMore;
    };
    match b {
        b' ' if pos > target_start => {}
        // An empty target, two spaces, or an HTTP/0.9-style line without a version.
        b' ' | b'\r' | b'\n' => return Walk::Violation(BadRequestLine),
        _ => return Walk::Violation(InvalidTarget),
    }
    let target = &buf[target_start..pos];
    pos += 1;

    let version_start = pos;
    while pos - version_start <= 8 && buf.get(pos).is_some_and(|b| !b"\r\n ".contains(b)) {
        pos += 1;
    }
    let version = &buf[version_start..pos];
    let delimited = buf.get(pos).is_some_and(|b| b"\r\n ".contains(b));
    match classify_version(version, delimited) {
        VersionClass::Http10 | VersionClass::Http11 => {}
        VersionClass::Partial => return Walk::NeedMore,
        VersionClass::Invalid => return Walk::Violation(InvalidVersion),
        VersionClass::Unsupported => {
            let preface = method == b"PRI" && target == b"*" && version == b"HTTP/2.0";
            return Walk::Violation(if preface {
                Http2Preface
            } else {
                VersionNotSupported
            });
        }
    }

    match buf.get(pos) {
        None => return Walk::NeedMore,
        Some(b'\r') => match buf.get(pos + 1) {
            None => return Walk::NeedMore,
            Some(b'\n') => pos += 2,
            Some(_) => return Walk::Violation(InvalidLineEnding),
        },
        Some(b'\n') => return Walk::Violation(InvalidLineEnding),
        Some(_) => return Walk::Violation(BadRequestLine),
    }
    walk_fields(buf, pos, limits.max_headers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn method_fast_path_matches_from_bytes() {
        for token in [
            &b"GET"[..],
            b"POST",
            b"HEAD",
            b"PUT",
            b"DELETE",
            b"OPTIONS",
            b"PATCH",
            b"get",
            b"GETS",
            b"PURGE",
        ] {
            assert_eq!(
                method_of(token).ok(),
                Method::from_bytes(token).ok(),
                "{token:?}"
            );
        }
    }
}
