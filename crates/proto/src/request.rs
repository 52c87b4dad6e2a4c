//! Request heads: `parse_request` and the strict request-line walker behind its errors.

use std::mem::MaybeUninit;

use http::{Method, Version};

use crate::headers::{
    classify_version, is_tchar, is_valid_host, offset, only_crlfs, scan_fields, skip_empty_lines,
    span_of, spill_slots, walk_fields, Framing, TransferCodings, VersionClass, Walk,
};
use crate::scan::{clean_fields, find, is_connection, word_at, Known, NameWord};
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

    /// The request's host: an absolute-form target's authority, whatever the `Host` field
    /// says (RFC 9112 §3.2.2: the server ignores it then), else the `Host` field's value.
    /// `buf` is the buffer that was parsed.
    pub fn host<'b>(&self, buf: &'b [u8]) -> Option<&'b [u8]> {
        let target = self.target.get(buf);
        match target.first() {
            Some(b'/' | b'*') | None => self.header(buf, "host"),
            _ if self.method == Method::CONNECT => self.header(buf, "host"),
            _ => match absolute_authority(target) {
                Some(authority) => Some(&target[authority]),
                None => self.header(buf, "host"),
            },
        }
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
    let mut head = RequestHead::default();
    Ok(parse_request_into(buf, limits, &mut head)?.then_some(head))
}

/// [`parse_request`] into a head the caller keeps: `Ok(true)` when `head` now holds a complete
/// head, `Ok(false)` when more bytes are needed. A server parses every request of a
/// connection into one head this way, so the head (about 200 bytes) is neither returned by
/// value nor moved, and its span array is reused.
///
/// On `Ok(false)` and on errors, `head` holds no meaningful value.
///
/// # Errors
///
/// As [`parse_request`].
pub fn parse_request_into(
    buf: &[u8],
    limits: &Limits,
    head: &mut RequestHead,
) -> Result<bool, ParseError> {
    match parse_clean(buf, limits, head) {
        Some(done) => done.map(|()| true),
        None => match parse_general(buf, limits)? {
            Some(general) => {
                *head = general;
                Ok(true)
            }
            None => Ok(false),
        },
    }
}

impl Default for RequestHead {
    /// An empty `GET` head, to parse into with [`parse_request_into`].
    fn default() -> Self {
        RequestHead {
            method: Method::GET,
            version: Version::HTTP_11,
            target: Span::default(),
            headers: HeaderSpans::new(),
            head_len: 0,
            body: BodyKind::Empty,
            keep_alive: false,
            expect_continue: false,
        }
    }
}

/// The general path: `httparse`, then the checks it leaves out. It also finds the exact error
/// of a rejected head and says when a head is unfinished, which [`parse_clean`] leaves to it.
#[cold]
fn parse_general(buf: &[u8], limits: &Limits) -> Result<Option<RequestHead>, ParseError> {
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
    // leading empty lines), raw non-ASCII bytes in the target, a target in none of the
    // request-target forms or with a fragment. Plus the target limit.
    let strict = (method_at == 0 || only_crlfs(&buf[..method_at]))
        && target.len() <= limits.max_uri_len
        && target_str.is_ascii()
        && target_form_ok(method.as_bytes(), target_str.as_bytes())
        && scan.crlf_lines;
    if !strict {
        return Err(strict_error(window, limits));
    }

    head.method = method_of(method.as_bytes())?;
    apply_fields(&mut head, buf, scan.framing)?;
    Ok(Some(head))
}

/// The rules of RFC 9112 §6 (framing), §3.2 (Host), §9.3 (persistence) and RFC 9110 §10.1.1
/// (Expect) on a head whose grammar is clean: fills in `body`, `keep_alive` and
/// `expect_continue`.
#[inline]
fn apply_fields(head: &mut RequestHead, buf: &[u8], framing: Framing) -> Result<(), ParseError> {
    let version = head.version;
    // One checked Host and nothing rare: no rule below can fail, and the body is the
    // `Content-Length`'s, with no `Expect` to honour. One test for all of them instead of
    // one each (wrk head 645 -> 630, tiny 325 -> 310, browser 2,724 -> 2,709 Ir/parse).
    if framing.usual() {
        head.keep_alive = framing.persistent(version);
        head.expect_continue = false;
        head.body = framing.length_body();
        return Ok(());
    }
    if let Some(err) = framing.error {
        return Err(err);
    }

    match framing.hosts {
        0 if version == Version::HTTP_11 => return Err(ParseError::MissingHost),
        0 => {}
        // Checked again even if the fast path's scan found it valid: this path is rare.
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

    head.keep_alive = framing.persistent(version);
    head.expect_continue =
        framing.expect_continue && version == Version::HTTP_11 && body != BodyKind::Empty;
    head.body = body;
    Ok(())
}

/// The fast path: one pass over a head that is complete and follows the strict grammar
/// (RFC 9112 §3 and §5, no leading empty lines), recording spans and framing fields as it
/// goes. It is a hand-written walk rather than `httparse` plus a second pass of checks: about
/// a third of the instructions for a typical head (see BENCHMARKS.md).
///
/// `None` for anything else (an unfinished head, a limit passed, a grammar violation, a
/// rarely used form such as leading empty lines): [`parse_general`] then decides, so errors
/// and "need more bytes" come from one place. The field rules after the grammar
/// ([`apply_fields`]) are shared, so their errors come from here directly.
#[inline]
fn parse_clean(
    buf: &[u8],
    limits: &Limits,
    head: &mut RequestHead,
) -> Option<Result<(), ParseError>> {
    let buf = head_window(buf, limits);
    // Request line: method SP request-target SP HTTP-version CRLF.
    // The method is stored as soon as it is known, while little else is live (carried to
    // the store after the version, it cost the field loop registers), and only when it
    // differs from the one there: a server parses every request of a connection into one
    // head, and a store of a `Method` first checks whether the old one owns a heap copy,
    // then writes all 24 bytes (wrk 680 -> 665, tiny 339 -> 326 Ir/parse). A `None` below
    // leaves the head to the general path, which overwrites all of it.
    let mut pos = if buf.starts_with(b"GET ") {
        if head.method != Method::GET {
            head.method = Method::GET;
        }
        4
    } else {
        let n = buf.iter().position(|&b| !is_tchar(b))?;
        if n == 0 || buf[n] != b' ' {
            return None;
        }
        head.method = method_of(&buf[..n]).ok()?;
        n + 1
    };
    let target_len = target_len(&buf[pos..])?;
    // An origin-form target starts with `/`, so it is not empty; any other form (or none, or an
    // empty target) is checked out of line.
    if buf[pos] != b'/' && !target_form_ok(&buf[..pos - 1], &buf[pos..pos + target_len]) {
        return None;
    }
    if target_len > limits.max_uri_len {
        return None;
    }
    let target = Span {
        start: pos as u32,
        end: (pos + target_len) as u32,
    };
    pos += target_len;
    // The rest of the line, SP included, compared as arrays: two word compares, where a match
    // on slice patterns compares byte by byte.
    let line_end: &[u8; 11] = buf.get(pos..pos + 11)?.try_into().ok()?;
    let version = if line_end == b" HTTP/1.1\r\n" {
        Version::HTTP_11
    } else if line_end == b" HTTP/1.0\r\n" {
        Version::HTTP_10
    } else {
        return None;
    };
    pos += 11;

    head.version = version;
    head.target = target;
    let mut framing = Framing::default();
    head.head_len = clean_fields!(
        buf,
        pos,
        limits.max_headers,
        &mut head.headers,
        &mut framing,
        known_name
    );
    Some(apply_fields(head, buf, framing))
}

/// The fields of nearly every request, matched whole (name, colon and the SP every client
/// sends after it) before the general name scan, and routed straight to their framing rule:
/// one or two word compares each. Returns the length of the name. Without the SP (`Host:a`,
/// `Host:\ta`) a field takes the general name scan, which ends up at the same rule.
#[inline]
fn known_name(s: &[u8]) -> Option<(usize, Known)> {
    const HOST: NameWord = NameWord::new(b"host: ");
    const ACCEPT: NameWord = NameWord::new(b"accept: ");
    let word = word_at(s, 0)?;
    match word as u8 | 0x20 {
        b'h' if HOST.matches(word) => Some((4, Known::Host)),
        b'a' if ACCEPT.matches(word) => Some((6, Known::Plain)),
        b'c' if is_connection(s, word) => Some((10, Known::Connection)),
        _ => None,
    }
}

/// Length of the request target at the start of `s`: visible ASCII (0x21-0x7E) but `#` up to
/// the first byte that is not. (A `#` ends it early, and the line then fails the version
/// check: the general path names the fault.)
#[inline]
fn target_len(s: &[u8]) -> Option<usize> {
    find(s, 0, |b| !b.is_ascii_graphic() || b == b'#')
}

/// Whether `target` has one of the forms of RFC 9112 §3.2: origin (`/path?query`), absolute
/// (`http://authority...` or `https://`, see [`absolute_authority`]), asterisk (`*`, for
/// OPTIONS only), or for CONNECT the authority form (`host:port`). None of them holds a `#`:
/// a fragment stays with the client. `?x=1` or `users/1` is none of them, and is refused
/// rather than guessed at.
#[cold]
#[inline(never)]
fn target_form_ok(method: &[u8], target: &[u8]) -> bool {
    if target.is_empty() || target.contains(&b'#') {
        return false;
    }
    match target {
        _ if method == b"CONNECT" => true,
        [b'/', ..] => true,
        b"*" => method == b"OPTIONS",
        _ => absolute_authority(target).is_some(),
    }
}

/// Where the authority (`host[:port]`) of an absolute-form request target is in it (RFC 9112
/// §3.2.2), or `None` if `target` is not one a server takes: the scheme must be `http` or
/// `https` (any case, RFC 3986 §3.1; this server serves no other), with `//` and a host that
/// is not empty (RFC 9110 §4.2.1, §4.2.2) and the grammar of a `Host` field, so no userinfo
/// (`user@`: RFC 9110 §4.2.4 has a recipient treat it as an error). A server given such a
/// target uses this authority as the request's host and ignores the `Host` field.
pub fn absolute_authority(target: &[u8]) -> Option<std::ops::Range<usize>> {
    let colon = target.iter().position(|&b| b == b':')?;
    let scheme = &target[..colon];
    if !(scheme.eq_ignore_ascii_case(b"http") || scheme.eq_ignore_ascii_case(b"https")) {
        return None;
    }
    let start = colon + 3;
    let rest = target[colon + 1..].strip_prefix(b"//")?;
    let len = rest
        .iter()
        .position(|&b| b == b'/' || b == b'?')
        .unwrap_or(rest.len());
    let authority = &rest[..len];
    let host_given = !authority.is_empty() && authority[0] != b':';
    (host_given && is_valid_host(authority)).then_some(start..start + len)
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
    while buf
        .get(pos)
        .is_some_and(|&b| b.is_ascii_graphic() && b != b'#')
    {
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
        VersionClass::Http10 | VersionClass::Http11 if !target_form_ok(method, target) => {
            return Walk::Violation(InvalidTarget);
        }
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

mod unfinished;
pub use unfinished::UnfinishedHead;

#[cfg(test)]
mod tests;

#[cfg(any(test, fuzzing))]
mod differential;
#[cfg(fuzzing)]
pub(crate) use differential::fuzz_input;
#[cfg(fuzzing)]
pub use differential::fuzz_request_head;
