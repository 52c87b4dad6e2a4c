//! The `Range` field (RFC 9110 §14.1, §14.2) of a GET for a file: the parts it asks for, with
//! unsatisfiable ranges dropped, overlapping and nearby ones coalesced, and too many refused.
//! No I/O: what to send is decided here, sent elsewhere.

use super::conditional::Outcome;

/// Bytes `start..=end` of a file, inclusive as `Content-Range` writes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Span {
    pub(super) start: u64,
    pub(super) end: u64,
}

/// Ranges with fewer bytes than this between them are sent as one part: the bytes in between
/// cost less than another part's head (a delimiter, `Content-Type` and `Content-Range` come to
/// about 80 bytes), and §14.6 lets a server coalesce such ranges.
const GAP: u64 = 80;

/// The most parts one answer has. A field asking for more, once coalesced, gets the whole file
/// (a 200): §14.2 lets a server ignore `Range`, every client handles a 200, and it costs no
/// more than a plain GET, where a 416 would fail an honest client that asked for many parts.
pub(super) const MAX_PARTS: usize = 16;

/// A `Range` field for a representation of `len` bytes. Ranges in a unit other than `bytes`
/// are ignored (§14.2), and so is any range of an empty file (no `Content-Range` can describe
/// a part of nothing): both are the whole file. A range that starts past the end is dropped
/// (§14.1.1); none left is a 416. The rest are coalesced: one left is a single part, two to
/// [`MAX_PARTS`] are multipart/byteranges, more the whole file. `Err` is a malformed field.
pub(super) fn evaluate(field: &[u8], len: u64) -> Result<Outcome, &'static str> {
    const BAD: &str = "malformed Range";
    let field = field.trim_ascii();
    let Some(eq) = field.iter().position(|&b| b == b'=') else {
        return Err(BAD);
    };
    let unit = &field[..eq];
    if unit.is_empty() || !unit.iter().all(u8::is_ascii_graphic) {
        return Err(BAD);
    }
    if !unit.eq_ignore_ascii_case(b"bytes") {
        return Ok(Outcome::Full);
    }
    let mut specs = volt_proto::list_elements(&field[eq + 1..]).peekable();
    if specs.peek().is_none() {
        return Err(BAD);
    }
    let mut spans = Vec::new();
    for spec in specs {
        spans.extend(span(spec, len).ok_or(BAD)?);
    }
    if len == 0 {
        return Ok(Outcome::Full);
    }
    let parts = coalesce(spans);
    Ok(match parts[..] {
        [] => Outcome::Unsatisfiable,
        [Span { start, end }] => Outcome::Partial { start, end },
        _ if parts.len() > MAX_PARTS => Outcome::Full,
        _ => Outcome::Parts(parts),
    })
}

/// One `range-spec` (§14.1.2) of a file of `len` bytes: `None` if malformed, `Some(None)` if
/// unsatisfiable.
fn span(spec: &[u8], len: u64) -> Option<Option<Span>> {
    let dash = spec.iter().position(|&b| b == b'-')?;
    let (first, last) = (&spec[..dash], &spec[dash + 1..]);
    let last_byte = len.saturating_sub(1);
    let (start, end, satisfiable) = match (number(first), number(last)) {
        // suffix-range: the last N bytes, all of them if the file is shorter.
        (None, Some(n)) if first.is_empty() => (len.saturating_sub(n), last_byte, n > 0 && len > 0),
        (Some(a), None) if last.is_empty() => (a, last_byte, a < len),
        (Some(a), Some(b)) if a <= b => (a, b.min(last_byte), a < len),
        _ => return None,
    };
    Some(satisfiable.then_some(Span { start, end }))
}

/// `1*DIGIT` as a number, saturating (a position past any file is simply past its end).
fn number(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(digits.iter().fold(0u64, |n, &d| {
        n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
    }))
}

/// `spans` with those that overlap or lie less than [`GAP`] apart merged, whatever their order
/// in the request (§14.6 allows it). A merged part takes the place of its earliest range;
/// parts otherwise keep the request's order (§15.3.7.2). The parts are disjoint, so together
/// they are never longer than the file, however the request piles its ranges up.
fn coalesce(spans: Vec<Span>) -> Vec<Span> {
    let mut by_start: Vec<(usize, Span)> = spans.into_iter().enumerate().collect();
    by_start.sort_unstable_by_key(|&(i, span)| (span.start, i));
    let mut parts: Vec<(usize, Span)> = Vec::with_capacity(by_start.len());
    for (i, span) in by_start {
        match parts.last_mut() {
            // `end` is below the file's length, so adding the gap cannot overflow.
            Some((first, part)) if span.start <= part.end + GAP => {
                part.end = part.end.max(span.end);
                *first = (*first).min(i);
            }
            _ => parts.push((i, span)),
        }
    }
    parts.sort_unstable_by_key(|&(first, _)| first);
    parts.into_iter().map(|(_, span)| span).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use Outcome::*;

    fn parts(field: &str, len: u64) -> Result<Outcome, &'static str> {
        evaluate(field.as_bytes(), len)
    }

    fn spans(list: &[(u64, u64)]) -> Outcome {
        let span = |&(start, end): &(u64, u64)| Span { start, end };
        Parts(list.iter().map(span).collect())
    }

    /// Each field, for a file of 1000 bytes, against the parts it must get (one: `Partial`).
    fn check(cases: &[(&str, &[(u64, u64)])]) {
        for &(field, expected) in cases {
            let expected = match expected {
                [] => Unsatisfiable,
                &[(start, end)] => Partial { start, end },
                several => spans(several),
            };
            assert_eq!(parts(field, 1000), Ok(expected), "{field}");
        }
    }

    #[test]
    fn several_ranges_are_parts_in_the_request_order() {
        check(&[
            ("bytes=0-1,500-599", &[(0, 1), (500, 599)]),
            ("bytes=-10, 500-599,0-4", &[(990, 999), (500, 599), (0, 4)]),
            ("bytes=900-,0-0", &[(900, 999), (0, 0)]),
            // A last position past the end is cut at it.
            ("bytes=0-0,950-5000", &[(0, 0), (950, 999)]),
        ]);
    }

    #[test]
    fn unsatisfiable_ranges_are_dropped() {
        check(&[
            ("bytes=0-4,1000-1001", &[(0, 4)]),
            ("bytes=1000-,-0,0-1,5000-", &[(0, 1)]),
            ("bytes=1000-,-0", &[]),
        ]);
    }

    #[test]
    fn overlapping_and_nearby_ranges_are_coalesced() {
        check(&[
            // Overlapping, adjacent, and 79 bytes apart: one part each time.
            ("bytes=0-9,5-19", &[(0, 19)]),
            ("bytes=10-19,0-9", &[(0, 19)]),
            ("bytes=0-9,89-99", &[(0, 99)]),
            // 80 bytes apart: two parts.
            ("bytes=0-9,90-99", &[(0, 9), (90, 99)]),
            // A merged part takes its earliest range's place; the others keep theirs.
            (
                "bytes=500-509,900-909,0-9,505-520",
                &[(500, 520), (900, 909), (0, 9)],
            ),
            (
                "bytes=900-909,0-9,500-509,200-299,290-300,495-499",
                &[(900, 909), (0, 9), (495, 509), (200, 300)],
            ),
            // A range inside another vanishes into it.
            ("bytes=800-999,0-0,850-860", &[(800, 999), (0, 0)]),
        ]);
    }

    #[test]
    fn piled_up_ranges_come_to_no_more_than_the_file() {
        // The whole file asked for a thousand times over is sent once.
        let field = format!("bytes={}", vec!["0-"; 1000].join(","));
        assert_eq!(parts(&field, 1000), Ok(Partial { start: 0, end: 999 }));
        let field = format!("bytes={}", vec!["-1000,0-998"; 500].join(","));
        assert_eq!(parts(&field, 1000), Ok(Partial { start: 0, end: 999 }));
    }

    #[test]
    fn more_than_sixteen_parts_are_the_whole_file() {
        let field = |n: u64| {
            let ranges: Vec<String> = (0..n).map(|i| format!("{0}-{0}", i * 100)).collect();
            format!("bytes={}", ranges.join(","))
        };
        let sixteen: Vec<(u64, u64)> = (0..16).map(|i| (i * 100, i * 100)).collect();
        assert_eq!(parts(&field(16), 10_000), Ok(spans(&sixteen)));
        assert_eq!(parts(&field(17), 10_000), Ok(Full));
        // Counted once coalesced: 17 ranges that merge into 16 parts are sent.
        let seventeen = format!("{},1500-1500", field(16));
        assert_eq!(parts(&seventeen, 10_000), Ok(spans(&sixteen)));
    }

    #[test]
    fn a_malformed_range_anywhere_is_refused() {
        for bad in [
            "bytes=0-1,5-1",
            "bytes=0-1,x",
            "bytes=0-1,--2",
            "bytes=,",
            "bytes=0-1,-",
        ] {
            assert_eq!(parts(bad, 1000), Err("malformed Range"), "{bad}");
        }
        // An empty file: any valid range gets the whole of it, a malformed one still a 400.
        assert_eq!(parts("bytes=0-1,3-4", 0), Ok(Full));
        assert_eq!(parts("bytes=0-1,4-3", 0), Err("malformed Range"));
    }
}
