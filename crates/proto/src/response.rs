//! Response heads: `parse_response` and the strict status-line walker behind its errors.

use std::mem::MaybeUninit;

use http::{StatusCode, Version};

use crate::headers::{
    classify_version, is_field_value_byte, offset, only_crlfs, scan_fields, skip_empty_lines,
    spill_slots, walk_fields, Framing, TransferCodings, VersionClass, Walk,
};
use crate::request::{head_cap, head_window, STACK_HEADERS};
use crate::scan::{clean_fields, ends_value, find, is_connection, word_at, Known, NameWord};
use crate::{find_header, BodyKind, HeaderSpans, Limits, ParseError, Span};

/// A parsed response head. Spans point into the buffer given to [`parse_response`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResponseHead {
    /// `HTTP_10` or `HTTP_11`.
    pub version: Version,
    /// The status code (100 to 999).
    pub status: StatusCode,
    /// The reason phrase, possibly empty.
    pub reason: Span,
    /// The header fields in the order received.
    pub headers: HeaderSpans,
    /// Bytes from the start of the buffer up to and including the blank line.
    pub head_len: usize,
    /// How the body is delimited (RFC 9112 §6.3).
    pub body: BodyKind,
    /// Whether the connection may carry another request after this response: as for requests
    /// (HTTP/1.1 unless `close`, HTTP/1.0 only with `keep-alive`), and never after an `Eof`
    /// body or a response that carries both `Transfer-Encoding` and `Content-Length`.
    pub keep_alive: bool,
}

impl ResponseHead {
    /// The value of the first field called `name` (case-insensitive). `buf` is the buffer
    /// that was parsed.
    pub fn header<'b>(&self, buf: &'b [u8], name: &str) -> Option<&'b [u8]> {
        find_header(&self.headers, buf, name)
    }
}

/// Parses one response head at the start of `buf`.
///
/// `head_request` says the request was `HEAD`: the response then has no body whatever its
/// headers say. Framing follows RFC 9112 §6.3: `HEAD`, 1xx, 204 and 304 → `Empty`;
/// `Transfer-Encoding` ending in `chunked` → `Chunked`; other `Transfer-Encoding` → `Eof`;
/// `Content-Length` → `Length`; nothing → `Eof`.
///
/// A response with both `Transfer-Encoding` and `Content-Length` is framed by
/// `Transfer-Encoding` (the RFC's rule) and gets `keep_alive = false`, since such a message
/// may be an attempt at response splitting.
///
/// # Errors
///
/// A [`ParseError`] naming the first rule the head breaks. Returns `Ok(None)` while the head
/// is incomplete and within [`Limits::max_head_bytes`].
pub fn parse_response(
    buf: &[u8],
    limits: &Limits,
    head_request: bool,
) -> Result<Option<ResponseHead>, ParseError> {
    let mut head = ResponseHead::default();
    Ok(parse_response_into(buf, limits, head_request, &mut head)?.then_some(head))
}

/// [`parse_response`] into a head the caller keeps: `Ok(true)` when `head` now holds a
/// complete head, `Ok(false)` when more bytes are needed. A client parses every response of
/// a connection into one head this way, so the head is neither returned by value nor moved,
/// and its span array is reused.
///
/// On `Ok(false)` and on errors, `head` holds no meaningful value.
///
/// # Errors
///
/// As [`parse_response`].
pub fn parse_response_into(
    buf: &[u8],
    limits: &Limits,
    head_request: bool,
    head: &mut ResponseHead,
) -> Result<bool, ParseError> {
    match parse_clean(buf, limits, head_request, head) {
        Some(done) => done.map(|()| true),
        None => match parse_general(buf, limits, head_request)? {
            Some(general) => {
                *head = general;
                Ok(true)
            }
            None => Ok(false),
        },
    }
}

impl Default for ResponseHead {
    /// An empty `200` head, to parse into with [`parse_response_into`].
    fn default() -> Self {
        ResponseHead {
            version: Version::HTTP_11,
            status: StatusCode::OK,
            reason: Span::default(),
            headers: HeaderSpans::new(),
            head_len: 0,
            body: BodyKind::Empty,
            keep_alive: false,
        }
    }
}

/// The fast path: one pass over a head that is complete and follows the strict grammar (no
/// leading empty lines, a status code of 100 to 999), as the request parser's fast path does
/// and with the same scanners. `None` for anything else: [`parse_general`] then decides, so
/// errors and "need more bytes" come from one place. The framing rules after the grammar
/// ([`apply_fields`]) are shared, so their errors come from here directly.
#[inline]
fn parse_clean(
    buf: &[u8],
    limits: &Limits,
    head_request: bool,
    head: &mut ResponseHead,
) -> Option<Result<(), ParseError>> {
    let buf = head_window(buf, limits);
    // Nearly every response a load generator reads starts this way: one compare of two words
    // and a byte for the whole status line.
    const OK_LINE: &[u8; 17] = b"HTTP/1.1 200 OK\r\n";
    let line_end = if buf.get(..17).is_some_and(|line| line == OK_LINE) {
        head.version = Version::HTTP_11;
        head.status = StatusCode::OK;
        head.reason = Span { start: 13, end: 15 };
        15
    } else {
        status_line(buf, head)?
    };
    let mut framing = Framing::default();
    head.head_len = clean_fields!(
        buf,
        line_end + 2,
        limits.max_headers,
        &mut head.headers,
        &mut framing,
        known_name
    );
    Some(apply_fields(head, framing, head_request))
}

/// Any other clean status line, `HTTP-version SP 3DIGIT [SP reason-phrase] CRLF`: fills in
/// `head`'s version, status and reason and returns where the CRLF starts. `None` for anything
/// the strict grammar does not take, or does not take as a status code of 100 to 999.
#[inline]
fn status_line(buf: &[u8], head: &mut ResponseHead) -> Option<usize> {
    let version: &[u8; 9] = buf.get(..9)?.try_into().ok()?;
    head.version = if version == b"HTTP/1.1 " {
        Version::HTTP_11
    } else if version == b"HTTP/1.0 " {
        Version::HTTP_10
    } else {
        return None;
    };
    let &[hundreds @ b'1'..=b'9', tens @ b'0'..=b'9', ones @ b'0'..=b'9'] = buf.get(9..12)? else {
        return None;
    };
    let code = [hundreds, tens, ones]
        .iter()
        .fold(0, |code, &digit| code * 10 + u16::from(digit - b'0'));
    head.status = StatusCode::from_u16(code).ok()?;
    // Some servers leave out the SP before an empty reason.
    let reason_start = match buf.get(12)? {
        b' ' => 13,
        b'\r' => 12,
        _ => return None,
    };
    let line_end = find(buf, reason_start, ends_value)?;
    if buf[line_end..].first_chunk::<2>()? != b"\r\n" {
        return None;
    }
    head.reason = Span {
        start: reason_start as u32,
        end: line_end as u32,
    };
    Some(line_end)
}

/// The fields of nearly every response, matched whole (name, colon and SP) before the general
/// name scan: `Content-Length` and `Connection` go straight to their framing rule, `Server`,
/// `Date` and `Content-Type` to none. Returns the length of the name.
#[inline]
fn known_name(s: &[u8]) -> Option<(usize, Known)> {
    const CONTENT: NameWord = NameWord::new(b"content-");
    const LENGTH: NameWord = NameWord::new(b"length: ");
    const TYPE: NameWord = NameWord::new(b"type: ");
    const SERVER: NameWord = NameWord::new(b"server: ");
    const DATE: NameWord = NameWord::new(b"date: ");
    let word = word_at(s, 0)?;
    match word as u8 | 0x20 {
        b'c' if CONTENT.matches(word) => {
            let rest = word_at(s, 8)?;
            if LENGTH.matches(rest) {
                Some((14, Known::ContentLength))
            } else if TYPE.matches(rest) {
                Some((12, Known::Plain))
            } else {
                None
            }
        }
        b'c' if is_connection(s, word) => Some((10, Known::Connection)),
        b's' if SERVER.matches(word) => Some((6, Known::Plain)),
        b'd' if DATE.matches(word) => Some((4, Known::Plain)),
        _ => None,
    }
}

/// The general path: `httparse`, then the checks it leaves out. It also finds the exact error
/// of a rejected head and says when a head is unfinished, which [`parse_clean`] leaves to it.
#[cold]
fn parse_general(
    buf: &[u8],
    limits: &Limits,
    head_request: bool,
) -> Result<Option<ResponseHead>, ParseError> {
    let window = head_window(buf, limits);
    let mut slots = [const { MaybeUninit::uninit() }; STACK_HEADERS];
    let mut res = httparse::Response::new(&mut []);
    let slot_count = limits.max_headers.min(STACK_HEADERS);
    let parsed = httparse::ParserConfig::default().parse_response_with_uninit_headers(
        &mut res,
        window,
        &mut slots[..slot_count],
    );
    match parsed {
        Ok(httparse::Status::Complete(head_len)) => {
            finish(buf, limits, &res, head_len, head_request)
        }
        Ok(httparse::Status::Partial) => unfinished(buf.len(), window, limits, None),
        Err(httparse::Error::TooManyHeaders) if limits.max_headers > STACK_HEADERS => {
            parse_spilled(buf, window, limits, head_request)
        }
        Err(err) => unfinished(buf.len(), window, limits, Some(err)),
    }
}

#[cold]
fn parse_spilled(
    buf: &[u8],
    window: &[u8],
    limits: &Limits,
    head_request: bool,
) -> Result<Option<ResponseHead>, ParseError> {
    let mut slots = vec![httparse::EMPTY_HEADER; spill_slots(limits.max_headers, window)];
    let mut res = httparse::Response::new(&mut slots);
    match res.parse(window) {
        Ok(httparse::Status::Complete(head_len)) => {
            finish(buf, limits, &res, head_len, head_request)
        }
        Ok(httparse::Status::Partial) => unfinished(buf.len(), window, limits, None),
        Err(err) => unfinished(buf.len(), window, limits, Some(err)),
    }
}

fn unfinished(
    buf_len: usize,
    window: &[u8],
    limits: &Limits,
    err: Option<httparse::Error>,
) -> Result<Option<ResponseHead>, ParseError> {
    let head_full = buf_len >= head_cap(limits);
    if err.is_some() || head_full {
        match walk_response(window, limits.max_headers) {
            Walk::Violation(e) => return Err(e),
            Walk::NeedMore => {}
            Walk::Clean => {
                return Err(err.map_or(ParseError::InvalidStatusLine, ParseError::from_httparse))
            }
        }
    }
    if head_full {
        Err(ParseError::HeadTooLarge)
    } else {
        Ok(None)
    }
}

/// Builds the head from a complete httparse result: the strict checks httparse skips, then
/// the framing rules of RFC 9112 §6.3.
fn finish(
    buf: &[u8],
    limits: &Limits,
    res: &httparse::Response<'_, '_>,
    head_len: usize,
    head_request: bool,
) -> Result<Option<ResponseHead>, ParseError> {
    let window = &buf[..head_len];
    let (Some(minor), Some(code)) = (res.version, res.code) else {
        return Err(strict_error(window, limits));
    };
    // httparse skipped any empty lines before the status line; find where it starts.
    let mut line = 0;
    while buf[line..].starts_with(b"\r\n") {
        line += 2;
    }
    let mut head = ResponseHead {
        version: if minor == 0 {
            Version::HTTP_10
        } else {
            Version::HTTP_11
        },
        status: StatusCode::OK,
        reason: Span::default(),
        headers: HeaderSpans::new(),
        head_len,
        body: BodyKind::Empty,
        keep_alive: false,
    };
    let scan = scan_fields(buf, res.headers, head_len, &mut head.headers);
    // A bare LF among the leading empty lines leaves something other than "HTTP/" here.
    if !(scan.crlf_lines && buf[line..].starts_with(b"HTTP/")) {
        return Err(strict_error(window, limits));
    }
    debug_assert!(only_crlfs(&buf[..line]));

    // "HTTP/1.1 200" is 12 bytes; a SP and the reason may follow, up to the CRLF.
    let line_end = match res.headers.first() {
        Some(first) => offset(buf, first.name.as_bytes()) - 2,
        None => head_len - 4,
    };
    let code_end = line + 12;
    let reason_start = if buf[code_end] == b' ' {
        code_end + 1
    } else {
        code_end
    };
    head.reason = Span {
        start: reason_start as u32,
        end: line_end as u32,
    };

    head.status = StatusCode::from_u16(code).map_err(|_| ParseError::InvalidStatusLine)?;
    apply_fields(&mut head, scan.framing, head_request)?;
    Ok(Some(head))
}

/// The framing rules of RFC 9112 §6.3 and the persistence rules of §9.3 on a head whose
/// grammar is clean: fills in `body` and `keep_alive`.
#[inline]
fn apply_fields(
    head: &mut ResponseHead,
    framing: Framing,
    head_request: bool,
) -> Result<(), ParseError> {
    let (version, status) = (head.version, head.status);
    let no_body = head_request
        || status.is_informational()
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED;
    let mut keep_alive = framing.persistent(version);
    // Nothing rare (see `Framing::rare`): no rule below can fail, and no Transfer-Encoding
    // frames the body (Host counts for requests only). The flag costs a response head a
    // store and gains little here (nginx-res 833 -> 836, volt-res 684 -> 687 Ir/parse; 839
    // and 690 without this shortcut); it is for requests.
    if !framing.rare {
        let body = match framing.content_length {
            _ if no_body => BodyKind::Empty,
            None => BodyKind::Eof,
            Some(_) => framing.length_body(),
        };
        head.keep_alive = keep_alive && body != BodyKind::Eof;
        head.body = body;
        return Ok(());
    }
    if let Some(err) = framing.error {
        return Err(err);
    }

    if let Some(codings) = framing.te {
        // RFC 9112 §6.1: an HTTP/1.0 message with Transfer-Encoding has faulty framing.
        if version == Version::HTTP_10 {
            return Err(ParseError::TransferEncodingOnHttp10);
        }
        codings.check_common()?;
        if framing.content_length.is_some() {
            keep_alive = false;
        }
    }

    let body = match (framing.te, framing.content_length) {
        _ if no_body => BodyKind::Empty,
        (Some(codings), _) => response_coding(codings),
        (None, Some(0)) => BodyKind::Empty,
        (None, Some(len)) => BodyKind::Length(len),
        (None, None) => BodyKind::Eof,
    };
    if body == BodyKind::Eof {
        keep_alive = false;
    }

    head.body = body;
    head.keep_alive = keep_alive;
    Ok(())
}

/// RFC 9112 §6.3 item 4: chunked last → chunked; any other coding list → read until close.
fn response_coding(codings: TransferCodings) -> BodyKind {
    if codings.chunked_last {
        BodyKind::Chunked
    } else {
        BodyKind::Eof
    }
}

#[cold]
fn strict_error(window: &[u8], limits: &Limits) -> ParseError {
    match walk_response(window, limits.max_headers) {
        Walk::Violation(err) => err,
        other => {
            debug_assert!(false, "strict walk disagrees with fast path: {other:?}");
            ParseError::InvalidStatusLine
        }
    }
}

/// The strict grammar of a response head: `HTTP-version SP 3DIGIT [SP reason] CRLF` then the
/// field lines. The SP before an empty reason may be missing, as some servers omit it.
#[cold]
fn walk_response(buf: &[u8], max_headers: usize) -> Walk {
    use ParseError::*;
    let mut pos = match skip_empty_lines(buf) {
        Ok(pos) => pos,
        Err(walk) => return walk,
    };

    let version_start = pos;
    while pos - version_start <= 8 && buf.get(pos).is_some_and(|&b| b != b' ') {
        pos += 1;
    }
    let delimited = buf.get(pos) == Some(&b' ');
    match classify_version(&buf[version_start..pos], delimited) {
        VersionClass::Http10 | VersionClass::Http11 if delimited => pos += 1,
        VersionClass::Http10 | VersionClass::Http11 | VersionClass::Partial => {
            return Walk::NeedMore
        }
        VersionClass::Unsupported => return Walk::Violation(VersionNotSupported),
        VersionClass::Invalid => return Walk::Violation(InvalidStatusLine),
    }

    for _ in 0..3 {
        match buf.get(pos) {
            None => return Walk::NeedMore,
            Some(b) if b.is_ascii_digit() => pos += 1,
            Some(_) => return Walk::Violation(InvalidStatusLine),
        }
    }
    match buf.get(pos) {
        None => return Walk::NeedMore,
        Some(b' ') => pos += 1,
        Some(b'\r' | b'\n') => {}
        Some(_) => return Walk::Violation(InvalidStatusLine),
    }
    loop {
        match buf.get(pos) {
            None => return Walk::NeedMore,
            Some(b'\r') => match buf.get(pos + 1) {
                None => return Walk::NeedMore,
                Some(b'\n') => break,
                Some(_) => return Walk::Violation(InvalidLineEnding),
            },
            Some(b'\n') => return Walk::Violation(InvalidLineEnding),
            Some(&b) if is_field_value_byte(b) => pos += 1,
            Some(_) => return Walk::Violation(InvalidStatusLine),
        }
    }
    walk_fields(buf, pos + 2, max_headers)
}

#[cfg(any(test, fuzzing))]
mod differential;
#[cfg(fuzzing)]
pub use differential::fuzz_response_head;

#[cfg(test)]
mod tests;
