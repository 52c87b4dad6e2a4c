//! What request and response heads share: byte classes, span arithmetic, the single pass that
//! picks the framing fields out of a parsed head, and the strict re-walk that names the exact
//! rule a rejected head broke.
//!
//! The fast path trusts `httparse` for the grammar and adds the few checks it is lenient about
//! (bare LF line endings, non-ASCII request targets). When anything fails, the head is walked
//! again byte by byte by [`walk_fields`] and the request/response start-line walkers, which
//! implement the strict grammar on their own and report the *first* violation in byte order.
//! That keeps error reporting deterministic however the bytes were split across reads, and
//! keeps the diagnosis off the hot path.

use http::Version;

use crate::{BodyKind, HeaderSpan, HeaderSpans, ParseError, Span};

const fn byte_table(extra: &[u8], alnum: bool) -> [bool; 256] {
    let mut table = [false; 256];
    let mut i = 0;
    while i < 256 {
        table[i] = alnum && (i as u8).is_ascii_alphanumeric();
        i += 1;
    }
    let mut j = 0;
    while j < extra.len() {
        table[extra[j] as usize] = true;
        j += 1;
    }
    table
}

/// `tchar` (RFC 9110 §5.6.2): the bytes of methods, field names and list tokens.
static TCHAR: [bool; 256] = byte_table(b"!#$%&'*+-.^_`|~", true);

/// Bytes of `uri-host [":" port]` (RFC 3986 reg-name, IP literals and the port separator).
static HOST: [bool; 256] = byte_table(b"-._~!$&'()*+,;=%:[]", true);

#[inline]
pub(crate) fn is_tchar(b: u8) -> bool {
    TCHAR[b as usize]
}

/// `field-vchar / SP / HTAB`: anything but control bytes and DEL. obs-text (0x80-0xFF) is
/// allowed, as the RFC requires recipients to.
#[inline]
pub(crate) fn is_field_value_byte(b: u8) -> bool {
    b == b'\t' || (b >= 0x20 && b != 0x7f)
}

#[inline]
fn is_ows(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// Offset of `part` inside `buf`. `part` must be a subslice of `buf` (httparse only hands out
/// subslices of the buffer it parsed), and `buf` is capped below 4 GiB by the head limits.
#[inline]
pub(crate) fn offset(buf: &[u8], part: &[u8]) -> usize {
    let off = (part.as_ptr() as usize).wrapping_sub(buf.as_ptr() as usize);
    debug_assert!(off <= buf.len() && part.len() <= buf.len() - off);
    off
}

#[inline]
pub(crate) fn span_of(buf: &[u8], part: &[u8]) -> Span {
    let start = offset(buf, part);
    Span {
        start: start as u32,
        end: (start + part.len()) as u32,
    }
}

/// Whether the line that ends just before `line_start` was terminated by CRLF.
#[inline]
pub(crate) fn crlf_before(buf: &[u8], line_start: usize) -> bool {
    let line_end = line_start.wrapping_sub(2)..line_start;
    matches!(buf.get(line_end), Some(b"\r\n"))
}

/// Case-insensitive equality with `lower`, a lowercase name made of letters, digits and `-`.
///
/// OR-ing 0x20 into a byte lowercases an ASCII letter and leaves digits and `-` alone. The
/// only other bytes it maps onto those are control bytes (CR to `-`, 0x10-0x19 to digits),
/// which field names and values never hold. So one OR per 8-byte word replaces a case fold
/// per byte; the framing fields are compared on every request.
#[inline(always)]
pub(crate) fn eq_lower(s: &[u8], lower: &[u8]) -> bool {
    const MASK: u64 = 0x2020_2020_2020_2020;
    fn word(s: &[u8], at: usize) -> u64 {
        let mut w = [0u8; 8];
        w.copy_from_slice(&s[at..at + 8]);
        u64::from_le_bytes(w)
    }
    fn half(s: &[u8], at: usize) -> u32 {
        let mut w = [0u8; 4];
        w.copy_from_slice(&s[at..at + 4]);
        u32::from_le_bytes(w)
    }
    let n = s.len();
    if n != lower.len() {
        return false;
    }
    if n < 4 {
        return s.iter().zip(lower).all(|(&a, &b)| a | 0x20 == b);
    }
    if n < 8 {
        // Two 4-byte words, overlapping when n < 8.
        return half(s, 0) | MASK as u32 == half(lower, 0)
            && half(s, n - 4) | MASK as u32 == half(lower, n - 4);
    }
    // Whole words, then one last word that may overlap the previous one.
    let mut at = 0;
    while at + 8 < n {
        if word(s, at) | MASK != word(lower, at) {
            return false;
        }
        at += 8;
    }
    word(s, n - 8) | MASK == word(lower, n - 8)
}

/// Whether `prefix` is only empty lines (`CRLF` pairs), which RFC 9112 §2.2 lets a server skip
/// before the request line.
pub(crate) fn only_crlfs(prefix: &[u8]) -> bool {
    prefix.len() % 2 == 0 && prefix.chunks_exact(2).all(|pair| pair == b"\r\n")
}

fn trim_ows(mut s: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = s {
        if !is_ows(*first) {
            break;
        }
        s = rest;
    }
    while let [rest @ .., last] = s {
        if !is_ows(*last) {
            break;
        }
        s = rest;
    }
    s
}

/// The elements of a `#rule` list (RFC 9110 §5.6.1), trimmed, empty elements skipped:
/// `Connection`, `Transfer-Encoding`, `Sec-WebSocket-Protocol` and the like.
pub fn list_elements(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value
        .split(|&b| b == b',')
        .map(trim_ows)
        .filter(|e| !e.is_empty())
}

/// `1*DIGIT` that fits in a u64.
fn parse_decimal(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0u64, |acc, &b| {
        if !b.is_ascii_digit() {
            return None;
        }
        acc.checked_mul(10)?.checked_add(u64::from(b - b'0'))
    })
}

/// Heap slots for a head (or trailer section) with more fields than the stack holds: as many as the limit allows,
/// but no more than `bytes` can hold (a field line takes at least 3 bytes), so a huge limit
/// does not turn into a huge allocation.
pub(crate) fn spill_slots(max_headers: usize, bytes: &[u8]) -> usize {
    max_headers.min(bytes.len() / 3 + 1)
}

/// `Host` is `uri-host [":" port]`, possibly empty (RFC 9112 §3.2): a name or IPv4 address
/// (RFC 3986's reg-name bytes), or an IP literal in brackets, then a port of digits.
pub(crate) fn is_valid_host(value: &[u8]) -> bool {
    let (host, port) = match value {
        [b'[', rest @ ..] => match rest.iter().position(|&b| b == b']') {
            Some(end) => (&rest[..end], &rest[end + 1..]),
            None => return false,
        },
        _ => value.split_at(value.iter().position(|&b| b == b':').unwrap_or(value.len())),
    };
    // A colon only inside brackets: outside, the split above put the first one in the port.
    let host_ok = host
        .iter()
        .all(|&b| HOST[b as usize] && b != b'[' && b != b']');
    let port_ok = match port {
        [] => true,
        [b':', digits @ ..] => digits.iter().all(u8::is_ascii_digit),
        _ => false,
    };
    host_ok && port_ok
}

/// The transfer codings of every `Transfer-Encoding` line, in order.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct TransferCodings {
    /// Codings seen.
    pub count: u32,
    /// How many of them were `chunked`.
    pub chunked: u32,
    /// Whether the final coding is `chunked`.
    pub chunked_last: bool,
    /// A list element was not `token [OWS ";" ...]`.
    pub malformed: bool,
}

impl TransferCodings {
    fn add(&mut self, value: &[u8]) {
        for coding in list_elements(value) {
            let name_len = coding.iter().take_while(|&&b| is_tchar(b)).count();
            let params = trim_ows(&coding[name_len..]);
            if name_len == 0 || !(params.is_empty() || params[0] == b';') {
                self.malformed = true;
            }
            // `chunked` takes no parameters; "chunked;x=y" is some other, unknown coding.
            let is_chunked = eq_lower(coding, b"chunked");
            self.count += 1;
            self.chunked += u32::from(is_chunked);
            self.chunked_last = is_chunked;
        }
    }

    /// Checks that parse into a valid list and no double chunking, shared by both directions.
    pub(crate) fn check_common(&self) -> Result<(), ParseError> {
        if self.malformed || self.count == 0 {
            Err(ParseError::InvalidTransferEncoding)
        } else if self.chunked > 1 {
            Err(ParseError::ChunkedTwice)
        } else {
            Ok(())
        }
    }
}

/// The fields that decide framing and connection handling, picked out in one pass.
#[derive(Debug, Default)]
pub(crate) struct Framing {
    pub content_length: Option<u64>,
    /// `Some` when at least one `Transfer-Encoding` line was present.
    pub te: Option<TransferCodings>,
    /// `Connection` lists the `close` token.
    pub close: bool,
    /// `Connection` lists the `keep-alive` token.
    pub keep_alive: bool,
    pub hosts: u32,
    pub host: Span,
    pub expect_continue: bool,
    /// `Expect` lists a member other than `100-continue`.
    pub expect_other: bool,
    /// The first malformed `Content-Length`, reported once the syntax is known to be fine.
    pub error: Option<ParseError>,
    /// Something nearly every head is without: a `Transfer-Encoding` or `Expect` field, a
    /// malformed or conflicting `Content-Length`, or a `Host` value the fast path's scan did
    /// not find valid. While it is false, the framing rules come down to a few (see
    /// [`Framing::usual`]), and the heads' `apply_fields` takes them without testing every
    /// field above one by one.
    pub rare: bool,
}

impl Framing {
    #[inline]
    pub(crate) fn add(&mut self, name: &[u8], value: &[u8], value_span: Span) {
        // Length first: most fields are rejected by one integer compare.
        match name.len() {
            4 if eq_lower(name, b"host") => self.add_host(value_span, false),
            6 if eq_lower(name, b"expect") => {
                self.rare = true;
                if eq_lower(value, b"100-continue") {
                    self.expect_continue = true;
                } else {
                    for member in list_elements(value) {
                        let known = eq_lower(member, b"100-continue");
                        self.expect_continue |= known;
                        self.expect_other |= !known;
                    }
                }
            }
            10 if eq_lower(name, b"connection") => self.add_connection(value),
            14 if eq_lower(name, b"content-length") => self.add_content_length(value),
            17 if eq_lower(name, b"transfer-encoding") => {
                self.rare = true;
                self.te.get_or_insert_with(Default::default).add(value);
            }
            _ => {}
        }
    }

    /// A field already known to be `Host` (the fast path matches a few names itself).
    #[inline]
    /// `checked`: the fast path's scan already found the value valid
    /// (`scan::host_value_end`); any other `Host` is rare, and checked with the rules.
    pub(crate) fn add_host(&mut self, value_span: Span, checked: bool) {
        self.hosts += 1;
        self.host = value_span;
        self.rare |= !checked;
    }

    /// Whether nothing [`rare`](Framing::rare) was seen and there is exactly one `Host`: the
    /// head is then framed by its `Content-Length` alone, if any.
    #[inline(always)]
    pub(crate) fn usual(&self) -> bool {
        self.hosts == 1 && !self.rare
    }

    /// `Content-Length` as a body: `Empty` for none or 0.
    #[inline(always)]
    pub(crate) fn length_body(&self) -> BodyKind {
        match self.content_length {
            None | Some(0) => BodyKind::Empty,
            Some(len) => BodyKind::Length(len),
        }
    }

    /// Whether the connection persists after this message, as far as `Connection` says
    /// (RFC 9112 §9.3): HTTP/1.1 unless `close`, HTTP/1.0 only with `keep-alive`.
    #[inline(always)]
    pub(crate) fn persistent(&self, version: Version) -> bool {
        if version == Version::HTTP_11 {
            !self.close
        } else {
            self.keep_alive && !self.close
        }
    }

    /// A `Connection` field's value.
    #[inline]
    pub(crate) fn add_connection(&mut self, value: &[u8]) {
        // The usual values first; the list walk is for everything else.
        if eq_lower(value, b"keep-alive") {
            self.keep_alive = true;
        } else if eq_lower(value, b"close") {
            self.close = true;
        } else {
            for token in list_elements(value) {
                self.close |= eq_lower(token, b"close");
                self.keep_alive |= eq_lower(token, b"keep-alive");
            }
        }
    }

    /// Several `Content-Length` lines, or a comma list in one, are fine while every value is
    /// the same number (RFC 9112 §6.3 item 5); anything else is an error. Empty list elements
    /// are not tolerated here: `Content-Length` is a number, not a list.
    pub(crate) fn add_content_length(&mut self, value: &[u8]) {
        if self.error.is_some() {
            return;
        }
        // The usual value, one plain number, needs no list split and no OWS trim.
        if let Some(n) = parse_decimal(value) {
            self.add_length(n);
            return;
        }
        for element in value.split(|&b| b == b',') {
            let Some(n) = parse_decimal(trim_ows(element)) else {
                self.fail(ParseError::InvalidContentLength);
                return;
            };
            if !self.add_length(n) {
                return;
            }
        }
    }

    /// Records the error a `Content-Length` field makes, which the head then reports.
    #[cold]
    fn fail(&mut self, err: ParseError) {
        self.error = Some(err);
        self.rare = true;
    }

    /// Takes one `Content-Length` number: false (and the error set) if an earlier one differs.
    fn add_length(&mut self, n: u64) -> bool {
        match self.content_length {
            Some(previous) if previous != n => {
                self.fail(ParseError::ConflictingContentLength);
                false
            }
            _ => {
                self.content_length = Some(n);
                true
            }
        }
    }
}

/// The result of [`scan_fields`].
#[derive(Debug)]
pub(crate) struct FieldScan {
    pub framing: Framing,
    /// Every line of the head, start line included, ended with CRLF (httparse also takes a
    /// bare LF, which RFC 9112 §2.2 allows but this crate rejects).
    pub crlf_lines: bool,
}

/// The single pass over a head that `httparse` accepted: records each field's spans, checks
/// each line ending, and collects the framing fields. `head_len` is where the blank line ends.
///
/// Spans are pushed onto `headers`, which the caller places in the head it returns, so the
/// (large) span array is written once, where it ends up.
pub(crate) fn scan_fields(
    buf: &[u8],
    fields: &[httparse::Header<'_>],
    head_len: usize,
    headers: &mut HeaderSpans,
) -> FieldScan {
    headers.reserve(fields.len());
    let mut framing = Framing::default();
    let mut crlf_lines = true;
    for field in fields {
        let name = span_of(buf, field.name.as_bytes());
        let value = span_of(buf, field.value);
        // A field name starts its line, so the two bytes before it end the previous line.
        crlf_lines &= crlf_before(buf, name.start as usize);
        headers.push(HeaderSpan { name, value });
        framing.add(field.name.as_bytes(), field.value, value);
    }
    // The blank line, and the line before it.
    crlf_lines &= head_len >= 4 && crlf_before(buf, head_len) && crlf_before(buf, head_len - 2);
    FieldScan {
        framing,
        crlf_lines,
    }
}

/// Outcome of a strict re-walk of a head.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Walk {
    /// The first rule broken, in byte order.
    Violation(ParseError),
    /// Nothing wrong so far, but the head is not complete.
    NeedMore,
    /// A complete head with nothing wrong.
    Clean,
}

/// How an `HTTP-version` token classifies.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum VersionClass {
    Http10,
    Http11,
    /// Well formed but not 1.0 or 1.1: `HTTP/2.0`, `HTTP/1.2`, and the minor-less `HTTP/2` and
    /// `HTTP/3` that HTTP/2 and HTTP/3 use to name themselves.
    Unsupported,
    Invalid,
    /// An undelimited prefix that may still become a well-formed version.
    Partial,
}

/// Classifies the version token `v`; `delimited` says whether a byte after it ended it.
pub(crate) fn classify_version(v: &[u8], delimited: bool) -> VersionClass {
    const PATTERN: &[u8] = b"HTTP/d.d";
    let shape_ok = v.len() <= PATTERN.len()
        && v.iter().zip(PATTERN).all(|(&b, &p)| match p {
            b'd' => b.is_ascii_digit(),
            _ => b == p,
        });
    if !shape_ok {
        return VersionClass::Invalid;
    }
    match (v, delimited) {
        (b"HTTP/1.0", _) => VersionClass::Http10,
        (b"HTTP/1.1", _) => VersionClass::Http11,
        (_, false) => VersionClass::Partial,
        (_, true) if v.len() == 8 => VersionClass::Unsupported,
        // "HTTP/2", "HTTP/3": a major version alone. "HTTP/1" is a broken 1.x version.
        (_, true) if v.len() == 6 && v[5] != b'1' => VersionClass::Unsupported,
        _ => VersionClass::Invalid,
    }
}

/// Walks header field lines from `pos` (the start of the first field line) to the blank line,
/// checking the strict field grammar of RFC 9112 §5 and the field count limit.
pub(crate) fn walk_fields(buf: &[u8], mut pos: usize, max_fields: usize) -> Walk {
    use ParseError::*;
    let mut fields = 0usize;
    loop {
        let Some(&first) = buf.get(pos) else {
            return Walk::NeedMore;
        };
        match first {
            b'\r' => {
                return match buf.get(pos + 1) {
                    None => Walk::NeedMore,
                    Some(b'\n') => Walk::Clean,
                    Some(_) => Walk::Violation(InvalidLineEnding),
                }
            }
            b'\n' => return Walk::Violation(InvalidLineEnding),
            b' ' | b'\t' => return Walk::Violation(ObsFold),
            _ => {}
        }

        let name_start = pos;
        while buf.get(pos).is_some_and(|&b| is_tchar(b)) {
            pos += 1;
        }
        let Some(&after_name) = buf.get(pos) else {
            return Walk::NeedMore;
        };
        if after_name != b':' {
            if pos > name_start && is_ows(after_name) {
                while buf.get(pos).is_some_and(|&b| is_ows(b)) {
                    pos += 1;
                }
                return match buf.get(pos) {
                    None => Walk::NeedMore,
                    Some(b':') => Walk::Violation(WhitespaceBeforeColon),
                    Some(_) => Walk::Violation(InvalidHeaderName),
                };
            }
            return Walk::Violation(InvalidHeaderName);
        }
        pos += 1;

        loop {
            let Some(&b) = buf.get(pos) else {
                return Walk::NeedMore;
            };
            match b {
                b'\r' => match buf.get(pos + 1) {
                    None => return Walk::NeedMore,
                    Some(b'\n') => {
                        pos += 2;
                        break;
                    }
                    Some(_) => return Walk::Violation(InvalidLineEnding),
                },
                b'\n' => return Walk::Violation(InvalidLineEnding),
                b if is_field_value_byte(b) => pos += 1,
                _ => return Walk::Violation(InvalidHeaderValue),
            }
        }

        fields += 1;
        if fields > max_fields {
            return Walk::Violation(TooManyHeaders);
        }
    }
}

/// Skips the empty lines a head may start with. Returns the position of the start line, or
/// the walk outcome if the prefix is unfinished or holds a bare CR/LF.
pub(crate) fn skip_empty_lines(buf: &[u8]) -> Result<usize, Walk> {
    let mut pos = 0;
    while buf[pos..].starts_with(b"\r\n") {
        pos += 2;
    }
    match &buf[pos..] {
        [] | [b'\r'] => Err(Walk::NeedMore),
        [b'\r' | b'\n', ..] => Err(Walk::Violation(ParseError::InvalidLineEnding)),
        _ => Ok(pos),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_classes() {
        use VersionClass::*;
        assert_eq!(classify_version(b"HTTP/1.1", true), Http11);
        assert_eq!(classify_version(b"HTTP/1.0", false), Http10);
        assert_eq!(classify_version(b"HTTP/2.0", true), Unsupported);
        assert_eq!(classify_version(b"HTTP/1.2", true), Unsupported);
        assert_eq!(classify_version(b"HTTP/3", true), Unsupported);
        assert_eq!(classify_version(b"HTTP/1", true), Invalid);
        assert_eq!(classify_version(b"HTTP/2", false), Partial);
        assert_eq!(classify_version(b"HTT", false), Partial);
        assert_eq!(classify_version(b"HTTX", false), Invalid);
        assert_eq!(classify_version(b"HTTP/2.0x", true), Invalid);
        assert_eq!(classify_version(b"http/1.1", true), Invalid);
        assert_eq!(classify_version(b"HTTP/", true), Invalid);
    }

    #[test]
    fn decimal() {
        assert_eq!(parse_decimal(b"0"), Some(0));
        assert_eq!(parse_decimal(b"007"), Some(7));
        assert_eq!(parse_decimal(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_decimal(b"18446744073709551616"), None);
        assert_eq!(parse_decimal(b""), None);
        assert_eq!(parse_decimal(b"+1"), None);
        assert_eq!(parse_decimal(b"1 2"), None);
    }

    #[test]
    fn list_elements_trim_and_skip_empty() {
        let got: Vec<&[u8]> = list_elements(b" a ,, b\t,c ,").collect();
        assert_eq!(got, [&b"a"[..], b"b", b"c"]);
    }

    #[test]
    fn lowercase_compare() {
        for name in [
            "host",
            "expect",
            "connection",
            "content-length",
            "transfer-encoding",
            "100-continue",
            "close",
        ] {
            assert!(eq_lower(name.as_bytes(), name.as_bytes()));
            assert!(eq_lower(name.to_uppercase().as_bytes(), name.as_bytes()));
            for i in 0..name.len() {
                let mut other = name.as_bytes().to_vec();
                other[i] ^= 0x01;
                assert!(!eq_lower(&other, name.as_bytes()), "{other:?}");
                other[i] = b'_';
                assert!(!eq_lower(&other, name.as_bytes()), "{other:?}");
            }
            assert!(!eq_lower(&name.as_bytes()[1..], name.as_bytes()));
        }
        assert!(eq_lower(b"Content-Length", b"content-length"));
        assert!(eq_lower(b"TRANSFER-ENCODING", b"transfer-encoding"));
        assert!(!eq_lower(b"transfer-encodinG_", b"transfer-encoding"));
    }

    #[test]
    fn host_values() {
        assert!(is_valid_host(b"example.com:8080"));
        assert!(is_valid_host(b"[::1]:80"));
        assert!(is_valid_host(b""));
        assert!(!is_valid_host(b"a b"));
        assert!(!is_valid_host(b"user@host"));
        assert!(!is_valid_host(b"host/path"));
        // The port is digits, after a name or after an IP literal.
        assert!(is_valid_host(b"example.com:"));
        assert!(is_valid_host(b"[v1.x]"));
        for bad in [
            &b"a:b"[..],
            b"a:1:2",
            b"[::1]x",
            b"[::1",
            b"::1",
            b"a]:80",
            b"[[::1]",
        ] {
            assert!(!is_valid_host(bad), "{:?}", bad.escape_ascii());
        }
    }
}
