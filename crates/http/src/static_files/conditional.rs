//! Validators (`ETag`, `Last-Modified`), conditional requests (RFC 9110 §13) and byte ranges
//! (RFC 9110 §14): what a request's header fields ask of a file, decided without any I/O.
//! The `Range` field itself is read by `ranges`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::ranges::{self, Span};
use crate::Request;

/// A file's validators, as sent with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Validators {
    /// A strong entity tag, quotes included (`"<mtime ns>-<size>"` in hex).
    pub(super) etag: String,
    /// The modification time, whole seconds (what `Last-Modified` says).
    pub(super) modified: SystemTime,
}

impl Validators {
    /// The validators of a file of `len` bytes last modified at `mtime`, sent at `now`.
    ///
    /// The tag is strong (RFC 9110 §8.8.3): any write through the file system moves the
    /// modification time, so two versions share a tag only if written within one tick of the
    /// file system's clock with the same size, a risk nginx and Apache take too. A weak tag
    /// would be useless to `If-Range` (§13.1.5 compares strongly) and so to resumed downloads.
    ///
    /// `Last-Modified` is never later than `now` (§8.8.2.1: a time in the future is replaced by
    /// the message's date).
    pub(super) fn new(len: u64, mtime: SystemTime, now: SystemTime) -> Validators {
        let since_epoch = mtime.duration_since(UNIX_EPOCH).unwrap_or_default();
        let etag = format!("\"{:x}-{len:x}\"", since_epoch.as_nanos());
        let secs = mtime
            .min(now)
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        Validators {
            etag,
            modified: UNIX_EPOCH + Duration::from_secs(secs.as_secs()),
        }
    }

    pub(super) fn last_modified(&self) -> String {
        // The server's own IMF-fixdate formatter (the one `Date` is written with).
        let date = volt_proto::http_date(self.modified);
        String::from_utf8_lossy(&date).into_owned()
    }
}

/// The conditional and range header fields of a request, copied out of it (they go to the
/// blocking pool with the lookup).
#[derive(Debug, Default, Clone)]
pub(super) struct Conditions {
    if_match: Option<Vec<u8>>,
    if_none_match: Option<Vec<u8>>,
    if_modified_since: Option<Vec<u8>>,
    if_unmodified_since: Option<Vec<u8>>,
    range: Option<Vec<u8>>,
    if_range: Option<Vec<u8>>,
    /// GET, not HEAD: only GET has ranges (§14.2).
    get: bool,
}

impl Conditions {
    pub(super) fn of(req: &Request) -> Conditions {
        let mut c = Conditions {
            get: *req.method() == http::Method::GET,
            ..Conditions::default()
        };
        const NAMES: [&str; 6] = [
            "if-match",
            "if-none-match",
            "if-modified-since",
            "if-unmodified-since",
            "range",
            "if-range",
        ];
        for (name, value) in req.headers() {
            let slot = match NAMES.iter().position(|n| name.eq_ignore_ascii_case(n)) {
                Some(0) => &mut c.if_match,
                Some(1) => &mut c.if_none_match,
                Some(2) => &mut c.if_modified_since,
                Some(3) => &mut c.if_unmodified_since,
                Some(4) => &mut c.range,
                Some(5) => &mut c.if_range,
                _ => continue,
            };
            match slot {
                // Lines of a list field join with commas (RFC 9110 §5.3); a repeated
                // singleton (a date) becomes unparsable, and is then ignored or refused as
                // the field's rules say.
                Some(joined) => {
                    joined.extend_from_slice(b", ");
                    joined.extend_from_slice(value);
                }
                None => *slot = Some(value.to_vec()),
            }
        }
        c
    }
}

/// What to answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Outcome {
    /// 200 with the whole file.
    Full,
    /// 206 with bytes `start..=end`.
    Partial { start: u64, end: u64 },
    /// 206 with multipart/byteranges: two or more disjoint parts, in the order to send them.
    Parts(Vec<Span>),
    /// 304.
    NotModified,
    /// 412.
    PreconditionFailed,
    /// 416.
    Unsatisfiable,
}

/// Decides the answer for a file of `len` bytes with `validators` (`None`: a directory
/// listing, which has none, and no ranges), in the order of RFC 9110 §13.2.2. `Err` is a
/// malformed field, answered 400.
pub(super) fn evaluate(
    c: &Conditions,
    validators: Option<&Validators>,
    len: u64,
) -> Result<Outcome, &'static str> {
    let etag = validators.map(|v| v.etag.as_bytes());
    let modified = validators.map(|v| v.modified);
    // Step 1: If-Match (§13.1.1), else step 2: If-Unmodified-Since (§13.1.4), which is
    // ignored when not a valid date or when there is no modification date.
    if let Some(list) = &c.if_match {
        if !list_matches(list, etag, true)? {
            return Ok(Outcome::PreconditionFailed);
        }
    } else if let (Some(date), Some(modified)) = (date(&c.if_unmodified_since), modified) {
        if modified > date {
            return Ok(Outcome::PreconditionFailed);
        }
    }
    // Step 3: If-None-Match (§13.1.2, weak comparison), else step 4: If-Modified-Since
    // (§13.1.3). Only GET and HEAD get here, so a false condition is 304.
    if let Some(list) = &c.if_none_match {
        if list_matches(list, etag, false)? {
            return Ok(Outcome::NotModified);
        }
    } else if let (Some(date), Some(modified)) = (date(&c.if_modified_since), modified) {
        if modified <= date {
            return Ok(Outcome::NotModified);
        }
    }
    // Step 5: Range, for GET only (§14.2), unless If-Range (§13.1.5) is false.
    let (Some(range), Some(v), true) = (&c.range, validators, c.get) else {
        return Ok(Outcome::Full);
    };
    if let Some(if_range) = &c.if_range {
        if !if_range_holds(if_range, v)? {
            return Ok(Outcome::Full);
        }
    }
    ranges::evaluate(range, len)
}

/// Whether `*` or an entity tag of `list` matches `current` (`None`: nothing to match but
/// `*`... and not even that, as there is no tag), strongly or weakly (§8.8.3.2).
fn list_matches(list: &[u8], current: Option<&[u8]>, strong: bool) -> Result<bool, &'static str> {
    const BAD: &str = "malformed entity-tag list in If-Match or If-None-Match";
    let list = list.trim_ascii();
    if list == b"*" {
        // `*` matches any current representation: a file, or a listing.
        return Ok(true);
    }
    let mut rest = list;
    let mut any = false;
    loop {
        rest = rest.trim_ascii_start();
        if let Some(after) = rest.strip_prefix(b",") {
            // Empty list elements are allowed (§5.6.1.2).
            rest = after;
            continue;
        }
        if rest.is_empty() {
            break;
        }
        let (tag, after) = entity_tag(rest).ok_or(BAD)?;
        any |= current.is_some_and(|cur| tag.matches(cur, strong));
        rest = after.trim_ascii_start();
        if !rest.is_empty() {
            rest = rest.strip_prefix(b",").ok_or(BAD)?;
        }
    }
    Ok(any)
}

/// An entity tag as received.
struct EntityTag<'a> {
    weak: bool,
    /// The opaque tag, quotes included.
    opaque: &'a [u8],
}

impl EntityTag<'_> {
    /// Compares with `current`, a strong tag of ours (§8.8.3.2): a weak tag matches it only
    /// weakly.
    fn matches(&self, current: &[u8], strong: bool) -> bool {
        self.opaque == current && !(strong && self.weak)
    }
}

/// Parses one `entity-tag` (§8.8.3: `[ W/ ] DQUOTE *etagc DQUOTE`) off the front of `s`.
fn entity_tag(s: &[u8]) -> Option<(EntityTag<'_>, &[u8])> {
    let (weak, s) = match s.strip_prefix(b"W/") {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let body = s.strip_prefix(b"\"")?;
    // etagc = %x21 / %x23-7E / obs-text
    let close = body
        .iter()
        .position(|&b| !(b == 0x21 || (0x23..=0x7e).contains(&b) || b >= 0x80))?;
    (body[close] == b'"').then(|| {
        let opaque = &s[..close + 2];
        (EntityTag { weak, opaque }, &s[close + 2..])
    })
}

/// An HTTP-date (any of the three forms, §5.6.7), or `None` (absent or invalid: ignored).
fn date(value: &Option<Vec<u8>>) -> Option<SystemTime> {
    let text = std::str::from_utf8(value.as_deref()?).ok()?;
    httpdate::parse_http_date(text.trim()).ok()
}

/// If-Range (§13.1.5): an entity tag must match strongly, a date must be exactly the
/// `Last-Modified` sent. Anything else is malformed.
fn if_range_holds(value: &[u8], v: &Validators) -> Result<bool, &'static str> {
    let value = value.trim_ascii();
    if value.starts_with(b"\"") || value.starts_with(b"W/") {
        return match entity_tag(value) {
            Some((tag, b"")) => Ok(tag.matches(v.etag.as_bytes(), true)),
            _ => Err("malformed If-Range"),
        };
    }
    match date(&Some(value.to_vec())) {
        Some(date) => Ok(date == v.modified),
        None => Err("malformed If-Range"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn validators() -> Validators {
        let mtime = UNIX_EPOCH + Duration::new(784_111_777, 500);
        Validators::new(1000, mtime, SystemTime::now())
    }

    fn ask(fields: &[(&str, &str)]) -> Result<Outcome, &'static str> {
        let mut c = Conditions {
            get: true,
            ..Conditions::default()
        };
        for (name, value) in fields {
            let value = Some(value.as_bytes().to_vec());
            match *name {
                "if-match" => c.if_match = value,
                "if-none-match" => c.if_none_match = value,
                "if-modified-since" => c.if_modified_since = value,
                "if-unmodified-since" => c.if_unmodified_since = value,
                "range" => c.range = value,
                "if-range" => c.if_range = value,
                _ => unreachable!(),
            }
        }
        evaluate(&c, Some(&validators()), 1000)
    }

    const LAST_MODIFIED: &str = "Sun, 06 Nov 1994 08:49:37 GMT";

    #[test]
    fn validators_are_hex_and_whole_seconds() {
        let v = validators();
        assert_eq!(v.etag, format!("\"{:x}-3e8\"", 784_111_777_000_000_500u128));
        assert_eq!(v.last_modified(), LAST_MODIFIED);
        // A time in the future is sent as now.
        let now = UNIX_EPOCH + Duration::from_secs(1_000);
        let later = Validators::new(1, now + Duration::from_secs(50), now);
        assert_eq!(later.modified, now);
    }

    #[test]
    fn preconditions_in_rfc_order() {
        let tag = validators().etag;
        let tag = tag.as_str();
        let weak = format!("W/{tag}");
        use Outcome::*;
        assert_eq!(ask(&[]), Ok(Full));
        assert_eq!(ask(&[("if-match", tag)]), Ok(Full));
        assert_eq!(ask(&[("if-match", "*")]), Ok(Full));
        assert_eq!(ask(&[("if-match", "\"other\", ,")]), Ok(PreconditionFailed));
        assert_eq!(ask(&[("if-match", &format!("\"x\",{tag}"))]), Ok(Full));
        // If-Match compares strongly: a weak tag never matches.
        assert_eq!(ask(&[("if-match", &weak)]), Ok(PreconditionFailed));
        assert_eq!(ask(&[("if-none-match", &weak)]), Ok(NotModified));
        assert_eq!(ask(&[("if-none-match", "*")]), Ok(NotModified));
        assert_eq!(ask(&[("if-none-match", "\"x\"")]), Ok(Full));
        // If-None-Match wins over If-Modified-Since, either way.
        let old = "Sat, 01 Jan 1994 00:00:00 GMT";
        assert_eq!(
            ask(&[
                ("if-none-match", "\"x\""),
                ("if-modified-since", LAST_MODIFIED)
            ]),
            Ok(Full)
        );
        assert_eq!(
            ask(&[("if-none-match", tag), ("if-modified-since", old)]),
            Ok(NotModified)
        );
        assert_eq!(
            ask(&[("if-modified-since", LAST_MODIFIED)]),
            Ok(NotModified)
        );
        // The three date forms of §5.6.7.
        assert_eq!(
            ask(&[("if-modified-since", "Sunday, 06-Nov-94 08:49:37 GMT")]),
            Ok(NotModified)
        );
        assert_eq!(
            ask(&[("if-modified-since", "Sun Nov  6 08:49:37 1994")]),
            Ok(NotModified)
        );
        assert_eq!(ask(&[("if-modified-since", old)]), Ok(Full));
        assert_eq!(ask(&[("if-modified-since", "yesterday")]), Ok(Full));
        assert_eq!(ask(&[("if-unmodified-since", old)]), Ok(PreconditionFailed));
        assert_eq!(ask(&[("if-unmodified-since", LAST_MODIFIED)]), Ok(Full));
        assert_eq!(ask(&[("if-unmodified-since", "garbage")]), Ok(Full));
        // If-Match wins over If-Unmodified-Since; a failed If-Match wins over If-None-Match.
        assert_eq!(
            ask(&[("if-match", tag), ("if-unmodified-since", old)]),
            Ok(Full)
        );
        assert_eq!(
            ask(&[("if-match", "\"x\""), ("if-none-match", tag)]),
            Ok(PreconditionFailed)
        );
        assert!(ask(&[("if-match", "unquoted")]).is_err());
        assert!(ask(&[("if-none-match", "\"a\" \"b\"")]).is_err());
        assert!(ask(&[("if-none-match", "\"open")]).is_err());
    }

    #[test]
    fn ranges() {
        use Outcome::*;
        let part = |start, end| Ok(Partial { start, end });
        assert_eq!(ask(&[("range", "bytes=0-499")]), part(0, 499));
        assert_eq!(ask(&[("range", "bytes=500-")]), part(500, 999));
        assert_eq!(ask(&[("range", "bytes=-200")]), part(800, 999));
        assert_eq!(ask(&[("range", "bytes=-5000")]), part(0, 999));
        assert_eq!(ask(&[("range", "bytes=990-5000")]), part(990, 999));
        assert_eq!(ask(&[("range", "BYTES = 1-1")]), Err("malformed Range"));
        assert_eq!(ask(&[("range", "Bytes=1-1, ")]), part(1, 1));
        assert_eq!(ask(&[("range", "bytes=1000-")]), Ok(Unsatisfiable));
        assert_eq!(ask(&[("range", "bytes=-0")]), Ok(Unsatisfiable));
        assert_eq!(
            ask(&[("range", "bytes=99999999999999999999999-")]),
            Ok(Unsatisfiable)
        );
        let span = |start, end| Span { start, end };
        assert_eq!(
            ask(&[("range", "bytes=0-1,500-509")]),
            Ok(Parts(vec![span(0, 1), span(500, 509)]))
        );
        assert_eq!(ask(&[("range", "lines=1-2")]), Ok(Full));
        for bad in [
            "bytes=5-1",
            "bytes=",
            "bytes=a-b",
            "bytes=1",
            "bytes",
            "bytes=--1",
        ] {
            assert_eq!(ask(&[("range", bad)]), Err("malformed Range"), "{bad}");
        }
        // HEAD has no ranges.
        let c = Conditions {
            range: Some(b"bytes=0-1".to_vec()),
            ..Conditions::default()
        };
        assert_eq!(evaluate(&c, Some(&validators()), 1000), Ok(Full));
        // An empty file is sent whole.
        let c = Conditions { get: true, ..c };
        assert_eq!(evaluate(&c, Some(&validators()), 0), Ok(Full));
    }

    #[test]
    fn if_range() {
        use Outcome::*;
        let tag = validators().etag;
        let part = Ok(Partial { start: 0, end: 0 });
        let range = ("range", "bytes=0-0");
        assert_eq!(ask(&[range, ("if-range", &tag)]), part);
        assert_eq!(ask(&[range, ("if-range", LAST_MODIFIED)]), part);
        assert_eq!(ask(&[range, ("if-range", "\"old\"")]), Ok(Full));
        assert_eq!(ask(&[range, ("if-range", &format!("W/{tag}"))]), Ok(Full));
        let other_date = "Sun, 06 Nov 1994 08:49:38 GMT";
        assert_eq!(ask(&[range, ("if-range", other_date)]), Ok(Full));
        assert!(ask(&[range, ("if-range", "soon")]).is_err());
        // Several ranges too: a false If-Range is the whole file.
        let several = ("range", "bytes=0-0,500-509");
        assert_eq!(ask(&[several, ("if-range", "\"old\"")]), Ok(Full));
        assert!(matches!(ask(&[several, ("if-range", &tag)]), Ok(Parts(_))));
        // Without Range, If-Range is ignored (§13.1.5), even malformed.
        assert_eq!(ask(&[("if-range", "soon")]), Ok(Full));
    }
}
