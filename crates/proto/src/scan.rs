//! The fast paths' scanners, shared by request and response heads: 16-bytes-a-step searches
//! for the bytes that end a token or a value, whole-word matches of known field names, and
//! [`clean_fields`], the one pass over the field lines of a head that follows the strict
//! grammar. Anything unusual makes them answer `None`, and the caller falls back to its
//! general path (`httparse` and the strict walk), which names the fault.

use crate::headers::is_tchar;

/// What a fast path's known-name match found (or `Other`, when it found nothing).
#[derive(Clone, Copy)]
pub(crate) enum Known {
    Host,
    Connection,
    ContentLength,
    /// A field that takes no part in framing.
    Plain,
    /// Any other field: its name decides.
    Other,
}

/// The field lines from `$pos` (the start of the first one) through the empty line that ends
/// the head: `field-name ":" OWS field-value OWS CRLF`, at most `$max_headers` of them. Pushes
/// each field's spans onto `$headers` (a `&mut HeaderSpans`) and collects the framing fields
/// into `$framing` (a `&mut Framing`, fresh); evaluates to where the head ends. `$known_name`
/// (`fn(&[u8]) -> Option<(usize, Known)>`) matches the caller's common names whole (name,
/// colon and SP), routing them straight to their framing rule; it returns the name's length.
///
/// Each value is found by one [`find`] for the first byte no value holds (or HTAB, which
/// [`value_end_past_htab`] steps over), which must be the CR of a CRLF; the two bytes after
/// it are read with it, and end the head when they are a CRLF too. OWS is trimmed only when
/// the value's first or last byte is whitespace.
///
/// Anything the strict grammar does not take, an unfinished head or too many fields makes the
/// *caller* return `None` (the macro's `?`): its general path decides those. The caller
/// returns an `Option`.
///
/// A macro, not a function, so the walk is written once and still compiled as part of each
/// caller: as an `#[inline(always)]` generic function it cost 5-10% more instructions per
/// request head (wrk head 830 -> 872 Ir/parse). rustc optimizes a generic function's MIR
/// before it knows the caller (and inlines the scanners into it there), and LLVM then
/// allocated registers worse for the loop (the buffer's pointer went to the stack).
macro_rules! clean_fields {
    ($buf:expr, $pos:expr, $max_headers:expr, $headers:expr, $framing:expr, $known_name:expr) => {{
        use $crate::scan::{ends_value_run, field_name_len, find, Known};
        let (buf, mut pos): (&[u8], usize) = ($buf, $pos);
        let (headers, framing): (&mut $crate::HeaderSpans, &mut $crate::headers::Framing) =
            ($headers, $framing);
        // Cleared and pushed onto, though each push checks whether the array is inline or on
        // the heap: writing over the spans of the head parsed before through a slice taken
        // once (pushing only past its end, truncating after the loop) cost more, as its
        // pointer, its length and the count went to the stack (wrk 645 -> 669, tiny
        // 325 -> 341 Ir/parse).
        headers.clear();
        let mut fields_left: usize = $max_headers;
        if buf.get(pos..pos + 2)? == b"\r\n" {
            pos + 2
        } else {
            loop {
                // `pos` starts a field line.
                let (name_len, known) = match $known_name(&buf[pos..]) {
                    Some(known) => known,
                    None => (field_name_len(&buf[pos..])?, Known::Other),
                };
                fields_left = fields_left.checked_sub(1)?;
                let name = $crate::Span {
                    start: pos as u32,
                    end: (pos + name_len) as u32,
                };
                // A known name was matched with the colon and one SP; after any other, the SP
                // nearly every sender puts there is stepped over here.
                let mut start = pos + name_len + 2;
                if matches!(known, Known::Other) && buf.get(start - 1) != Some(&b' ') {
                    start -= 1;
                }
                // The value runs up to the first byte a value may not hold, which must be the
                // CR of a CRLF. The two bytes after it are read with it: they start the next
                // line, or end the head when they are CRLF too (a complete head has them).
                //
                // A Host value is scanned for the first byte outside the few that nearly every
                // Host value is made of instead: when that is the CR, the value is already
                // known to be a valid `uri-host [":" port]` (RFC 9112 §3.2), with no second
                // pass over it byte by byte (wrk head 748 -> 697, tiny 414 -> 346 Ir/parse).
                //
                // The scan also stops at HTAB, which a value may hold but rarely does: a
                // cheaper step (see `ends_value_run`). Such a value goes on from there, out of
                // line.
                let (mut cr, host_checked) = if matches!(known, Known::Host) {
                    $crate::scan::host_value_end(buf, start)?
                } else {
                    (find(buf, start, ends_value_run)?, false)
                };
                let mut line_end = buf[cr..].first_chunk::<4>()?;
                if line_end[..2] != *b"\r\n" {
                    cr = $crate::scan::value_end_past_htab(buf, cr)?;
                    line_end = buf[cr..].first_chunk::<4>()?;
                }
                // OWS around the value, rare: one test for both ends. The only bytes up to SP
                // the scan let through are SP and HTAB; an empty value has CR at its start,
                // and the SP or colon before it at its end, and is trimmed to nothing.
                let mut end = cr;
                if buf[start].min(buf[cr - 1]) <= b' ' {
                    (start, end) = $crate::scan::trim_ows(buf, start, cr);
                }
                let value = $crate::Span {
                    start: start as u32,
                    end: end as u32,
                };
                headers.push($crate::HeaderSpan { name, value });
                match known {
                    Known::Host => framing.add_host(value, host_checked),
                    Known::Connection => framing.add_connection(value.get(buf)),
                    Known::ContentLength => framing.add_content_length(value.get(buf)),
                    Known::Plain => {}
                    Known::Other => framing.add(name.get(buf), value.get(buf), value),
                }
                if line_end[2..] == *b"\r\n" {
                    break cr + 4;
                }
                pos = cr + 2;
            }
        }
    }};
}
pub(crate) use clean_fields;

/// `buf[start..end]` without the OWS (SP, HTAB) at either end, as `(start, end)`.
#[cold]
pub(crate) fn trim_ows(buf: &[u8], mut start: usize, mut end: usize) -> (usize, usize) {
    while start < end && matches!(buf[start], b' ' | b'\t') {
        start += 1;
    }
    while end > start && matches!(buf[end - 1], b' ' | b'\t') {
        end -= 1;
    }
    (start, end)
}

/// Where a Host value that starts at `start` ends (the first byte a field value may not hold,
/// or HTAB, as [`find`] with [`ends_value_run`] answers), and whether the value is made only of letters,
/// digits, `-`, `.` and `:`, so that it needs no check against the full `uri-host` table.
#[inline(always)]
pub(crate) fn host_value_end(buf: &[u8], start: usize) -> Option<(usize, bool)> {
    let mut end = find(buf, start, ends_plain_host)?;
    if buf[end] == b':' {
        end = find(buf, end + 1, |b| !b.is_ascii_digit())?;
    }
    if buf[end] == b'\r' {
        return Some((end, true));
    }
    // Anything else (an IP literal's `[`, OWS, a byte Host may not hold): the general search
    // from here, and the table check later.
    Some((find(buf, end, ends_value_run)?, false))
}

/// Whether `b` is not a letter, digit, `-` or `.`: the bytes of nearly every host name or
/// IPv4 address, all of them bytes a host name allows. CR and the colon before a port are
/// among the bytes this holds for.
#[inline(always)]
pub(crate) fn ends_plain_host(b: u8) -> bool {
    // OR-ing 0x20 maps uppercase letters, and nothing else, onto lowercase ones. `-` to `9`
    // is one range, with `/` in it. (Written as `ends_plain_name(b)` and the like instead,
    // it cost wrk head 571 -> 886 Ir/parse: measure before sharing them.)
    let letter = (b | 0x20).wrapping_sub(b'a') < 26;
    let digit_dot = b.wrapping_sub(b'-') <= b'9' - b'-' && b != b'/';
    !(letter || digit_dot)
}

/// Whether a field value (or a reason phrase) may not hold `b`: a control byte other than
/// HTAB, or DEL. CR, which ends every clean line, is one.
#[inline(always)]
pub(crate) fn ends_value(b: u8) -> bool {
    (b < 0x20 && b != b'\t') || b == 0x7f
}

/// Whether `b` ends a run of value bytes without HTAB: any control byte, or DEL. Leaving
/// HTAB, which values rarely hold, to [`value_end_past_htab`] takes a vector compare and an
/// and-not out of each 16-byte step (wrk head 665 -> 645, browser 2,786 -> 2,724 Ir/parse).
#[inline(always)]
pub(crate) fn ends_value_run(b: u8) -> bool {
    b < 0x20 || b == 0x7f
}

/// Where the value goes on to after the stop at `at`, which [`find`] with [`ends_value_run`]
/// found and which did not start a CRLF: past each HTAB, the next byte a value may not
/// hold, if that is the CR of a CRLF with two bytes after it. `None` for anything else.
#[cold]
pub(crate) fn value_end_past_htab(buf: &[u8], mut at: usize) -> Option<usize> {
    while buf[at] == b'\t' {
        at = find(buf, at + 1, ends_value_run)?;
    }
    (buf.get(at..at + 4)?[..2] == *b"\r\n").then_some(at)
}

/// Whether `s` (whose first word is `word`, from [`word_at`]) starts with `connection: ` in any
/// case: 12 bytes, so two words, overlapping. Requests and responses both carry it.
#[inline(always)]
pub(crate) fn is_connection(s: &[u8], word: u64) -> bool {
    const CONNECTI: NameWord = NameWord::new(b"connecti");
    const NECTION: NameWord = NameWord::new(b"ection: ");
    CONNECTI.matches(word) && word_at(s, 4).is_some_and(|w| NECTION.matches(w))
}

/// Up to eight bytes of a lowercase field name (and the colon and SP after it) as the low
/// bytes of a little-endian word, to compare a word of input with, letters in either case.
///
/// OR-ing 0x20 into a byte lowercases an ASCII letter, and maps nothing else onto a
/// lowercase letter; it is OR-ed into the letters' places only, so the other bytes (the
/// colon, the SP) match only themselves.
#[derive(Clone, Copy)]
pub(crate) struct NameWord {
    /// The bytes, lowercase.
    bytes: u64,
    /// 0xFF in the places of the bytes.
    mask: u64,
    /// 0x20 in the places of the letters.
    fold: u64,
}

impl NameWord {
    pub(crate) const fn new(name: &[u8]) -> NameWord {
        let mut word = NameWord {
            bytes: 0,
            mask: 0,
            fold: 0,
        };
        let mut i = 0;
        while i < name.len() {
            let shift = 8 * i;
            word.bytes |= (name[i] as u64) << shift;
            word.mask |= 0xff << shift;
            if name[i].is_ascii_lowercase() {
                word.fold |= 0x20 << shift;
            }
            i += 1;
        }
        word
    }

    #[inline(always)]
    pub(crate) fn matches(self, word: u64) -> bool {
        (word | self.fold) & self.mask == self.bytes
    }
}

/// The eight bytes of `s` from `at` as a little-endian word, if `s` has them.
///
/// A known name is only looked for where a whole word of the head is there (a complete head
/// has one: a name, colon and SP end with at least CRLF CRLF after them); elsewhere the
/// general name scan decides. Padding a short tail with zero bytes instead cost a store and a
/// branch per field line (wrk 688 -> 680, nginx-res 863 -> 852 Ir/parse).
#[inline(always)]
pub(crate) fn word_at(s: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(*s.get(at..)?.first_chunk::<8>()?))
}

/// 0xFF in the place of each byte of `chunk` that `stop` holds for, 0 elsewhere.
#[inline(always)]
fn stop_marks(chunk: &[u8; 16], stop: &impl Fn(u8) -> bool) -> [u8; 16] {
    let mut marks = [0u8; 16];
    for (mark, &b) in marks.iter_mut().zip(chunk) {
        *mark = if stop(b) { 0xff } else { 0 };
    }
    marks
}

/// A bit for each byte of `chunk` that `stop` holds for, the first byte's the lowest.
#[inline(always)]
fn stop_bits(chunk: &[u8; 16], stop: &impl Fn(u8) -> bool) -> u32 {
    mark_bits(&stop_marks(chunk, stop))
}

/// The high bit of each byte of `marks`, the first byte's the lowest: SSE2's `pmovmskb` on
/// x86-64, so the step's test and the place of the first stop come from one mask already in a
/// register. (`safe_arch` wraps the intrinsic: calling it directly needs an unchecked block, which this
/// crate forbids, even with SSE2 always on.) Taking the place from the marks as a `u128`
/// instead sent them through the stack, ~13 instructions a scan: wrk head 630 -> 571, tiny 310
/// -> 281, browser 2,709 -> 2,434, nginx response 836 -> 768 Ir/parse.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
fn mark_bits(marks: &[u8; 16]) -> u32 {
    safe_arch::move_mask_i8_m128i(safe_arch::load_unaligned_m128i(marks)) as u32
}

#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
#[inline(always)]
fn mark_bits(marks: &[u8; 16]) -> u32 {
    portable_mark_bits(marks)
}

/// [`mark_bits`] elsewhere (and its reference in the tests).
#[cfg(any(test, not(all(target_arch = "x86_64", target_feature = "sse2"))))]
#[inline(always)]
fn portable_mark_bits(marks: &[u8; 16]) -> u32 {
    marks
        .iter()
        .rev()
        .fold(0, |bits, &m| bits << 1 | u32::from(m >> 7))
}

/// Index of the first byte of `chunk` that `stop` holds for (see [`find`]).
#[inline(always)]
fn first_stop(chunk: &[u8; 16], stop: &impl Fn(u8) -> bool) -> Option<usize> {
    let bits = stop_bits(chunk, stop);
    (bits != 0).then(|| bits.trailing_zeros() as usize)
}

/// Index of the first byte of `buf` from `from` on that `stop` holds for, 16 bytes a step;
/// `None` if none does.
///
/// Each step maps a 16-byte chunk through `stop` to marks (0xFF for a stop byte, 0 for any
/// other), written so that LLVM compiles `stop`'s compares to a few byte-wise SSE2 compares,
/// and takes one bit a byte from them ([`mark_bits`], one `pmovmskb`): the step's test, and
/// the place of the first stop (about ten instructions a step). The bytes after the last whole
/// chunk are looked at as the last 16 bytes of `buf`, their bits shifted down past the bytes
/// before where the step stopped: every step looks at a whole chunk, so every step is
/// vectorized. Only a `buf` shorter than a chunk is walked byte by byte.
///
/// The shapes LLVM vectorizes are narrow, and a scalar step costs several times the
/// instructions (wrk head 806 -> 1,535 Ir/parse once): the chunk as a whole `[u8; 16]`, the
/// marks written in a loop (`array::map` was left out of line for the name scan). Portable
/// code gets no usable mask out of LLVM (two `u64` halves, a `u16` built from the marks,
/// word-at-a-time arithmetic: all cost more than the `u128` this used before `mark_bits`).
/// Check `parse_speed` under callgrind after changing any of it.
#[inline(always)]
pub(crate) fn find(buf: &[u8], from: usize, stop: impl Fn(u8) -> bool) -> Option<usize> {
    let mut at = from;
    let mut rest = buf.get(from..)?;
    while let Some(chunk) = rest.first_chunk::<16>() {
        if let Some(i) = first_stop(chunk, &stop) {
            return Some(at + i);
        }
        at += 16;
        rest = &rest[16..];
    }
    let Some(last) = buf.len().checked_sub(16) else {
        return rest.iter().position(|&b| stop(b)).map(|i| at + i);
    };
    let tail = buf[last..].first_chunk::<16>()?;
    // `at - last` is 1 to 16: all of the tail's bits shift out when `at` is the end.
    let bits = stop_bits(tail, &stop) >> (at - last);
    (bits != 0).then(|| at + bits.trailing_zeros() as usize)
}

/// Length of the field name at the start of `s`, if it is a token ended by `:`. `None` for
/// anything else (the general path names the fault).
#[inline(always)]
pub(crate) fn field_name_len(s: &[u8]) -> Option<usize> {
    // Nearly every name is letters, digits and `-`: when the first other byte is the colon,
    // the name is a token with no check of its bytes against the `tchar` table (browser head
    // 3,448 -> 2,840 Ir/parse: nine of its twelve names are not matched whole).
    let n = find(s, 0, ends_plain_name)?;
    if n > 0 && s[n] == b':' {
        return Some(n);
    }
    token_name_len(s)
}

/// Whether `b` is not a letter, digit, `-` or `.`: the bytes of nearly every field name, all
/// of them `tchar`. The colon is one of the bytes this holds for.
#[inline(always)]
pub(crate) fn ends_plain_name(b: u8) -> bool {
    // As in `ends_plain_host`: `-` to `9` is one range, with `/` in it.
    let letter = (b | 0x20).wrapping_sub(b'a') < 26;
    let digit_dash_dot = b.wrapping_sub(b'-') <= b'9' - b'-' && b != b'/';
    !(letter || digit_dash_dot)
}

/// [`field_name_len`] for a name with other bytes in it: any `tchar`. Out of line: inlined,
/// or marked cold, the field loop of both heads cost more (wrk 688 -> 696, 690 Ir/parse).
#[inline(never)]
fn token_name_len(s: &[u8]) -> Option<usize> {
    // Every byte that ends a token in a well-formed line is `:`, a control byte, SP, DEL or
    // non-ASCII; the few other delimiters (`(`, `/`, ...) are caught by the table walk. (All
    // of them as vector compares cost more: LLVM then no longer tests the chunk's marks
    // with one `pmovmskb`.)
    let n = find(s, 0, |b| b == b':' || b <= b' ' || b >= 0x7f)?;
    let name = &s[..n];
    let token = name.iter().fold(true, |ok, &b| ok & is_tchar(b));
    (token && n > 0 && s[n] == b':').then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_end_where_the_grammar_says() {
        for len in 0..20 {
            let mut s = vec![b'x'; len];
            s.extend_from_slice(b": value\r\n");
            assert_eq!(field_name_len(&s), (len > 0).then_some(len));
            for bad in [b' ', b'(', b'/', 0x80, b'\r'] {
                let mut s = vec![b'x'; 24];
                s[len] = bad;
                s[22] = b':';
                assert_eq!(field_name_len(&s), None, "{bad:#x} at {len}");
            }
        }
        assert_eq!(field_name_len(b"Host"), None);
    }

    /// The plain-name path and the `tchar` table walk take the same names: every length,
    /// every byte at every place, the colon found or not.
    #[test]
    fn plain_names_are_tokens() {
        for b in 0..=255u8 {
            let plain = b.is_ascii_alphanumeric() || b == b'-' || b == b'.';
            assert_eq!(ends_plain_name(b), !plain, "{b:#x}");
            assert!(!plain || is_tchar(b), "{b:#x}");
        }
        for len in 1..40 {
            for at in 0..len {
                for b in 0..=255u8 {
                    let mut s = vec![b'a'; len];
                    s[at] = b;
                    s.extend_from_slice(b": v\r\n");
                    assert_eq!(
                        field_name_len(&s),
                        token_name_len(&s),
                        "{b:#x} at {at} of {len}"
                    );
                }
            }
        }
    }

    #[test]
    fn plain_host_bytes_are_host_bytes() {
        for b in 0..=255u8 {
            let plain = b.is_ascii_alphanumeric() || b == b'-' || b == b'.';
            assert_eq!(ends_plain_host(b), !plain, "{b:#x}");
            assert!(!plain || crate::headers::is_valid_host(&[b]), "{b:#x}");
        }
    }

    /// A Host value ends where any value ends, whatever its length and wherever a byte other
    /// than a plain one sits in it; it is taken as checked only when it has none.
    #[test]
    fn host_values_end_at_the_cr() {
        for len in 0..40 {
            let mut s = b"host: ".to_vec();
            s.extend(std::iter::repeat_n(b'a', len));
            s.extend_from_slice(b"\r\n\r\n");
            assert_eq!(host_value_end(&s, 6), Some((6 + len, true)), "{len}");
            for at in 6..6 + len {
                for b in [
                    b'[', b'_', b'~', b'/', b'@', b' ', b'\t', 0x80, 0xff, b'A', b'0', b':',
                ] {
                    let mut s = s.clone();
                    s[at] = b;
                    // A colon starts a port, which only digits may follow.
                    let plain = !ends_plain_host(b) || (b == b':' && at == 6 + len - 1);
                    // The field loop goes on past an HTAB (`value_end_past_htab`).
                    let end = if b == b'\t' { at } else { 6 + len };
                    assert_eq!(
                        host_value_end(&s, 6),
                        Some((end, plain)),
                        "{b:#x} at {at} of {len}"
                    );
                }
            }
        }
        assert_eq!(host_value_end(b"host: abc", 6), None);
        assert_eq!(host_value_end(b"host: a:80\r\n", 6), Some((10, true)));
        assert_eq!(host_value_end(b"host: a:8a\r\n", 6), Some((10, false)));
        assert_eq!(host_value_end(b"host: a:80", 6), None);
    }

    #[test]
    fn value_ends_are_control_bytes_but_htab_and_del() {
        for b in 0..=255u8 {
            let allowed = b == b'\t' || (b' '..=b'~').contains(&b) || b >= 0x80;
            assert_eq!(ends_value(b), !allowed, "{b:#x}");
        }
    }

    #[test]
    fn value_runs_end_at_control_bytes_and_del() {
        for b in 0..=255u8 {
            assert_eq!(ends_value_run(b), ends_value(b) || b == b'\t', "{b:#x}");
        }
    }

    /// A value with HTABs in it ends at its CR wherever they are, one or two of them, at any
    /// length up to three chunks; any other byte a value may not hold after an HTAB, or a
    /// line end without two bytes after it, is `None`.
    #[test]
    fn values_go_on_past_htabs() {
        for len in 1..50 {
            let mut s = b"x: ".to_vec();
            s.extend(std::iter::repeat_n(b'a', len));
            s.extend_from_slice(b"\r\n\r\n");
            let cr = 3 + len;
            for at in 3..cr {
                let mut s = s.clone();
                s[at] = b'\t';
                let stop = find(&s, 3, ends_value_run).unwrap();
                assert_eq!(stop, at, "{at} of {len}");
                assert_eq!(value_end_past_htab(&s, stop), Some(cr), "{at} of {len}");
                for second in at + 1..cr {
                    let mut s = s.clone();
                    s[second] = b'\t';
                    assert_eq!(value_end_past_htab(&s, at), Some(cr), "{at}, {second}");
                    for bad in [0, b'\n', 0x1f, 0x7f] {
                        s[second] = bad;
                        assert_eq!(value_end_past_htab(&s, at), None, "{bad:#x} at {second}");
                    }
                }
                assert_eq!(value_end_past_htab(&s[..cr + 3], at), None, "{at} of {len}");
                assert_eq!(value_end_past_htab(&s[..cr], at), None, "{at} of {len}");
            }
        }
    }

    #[test]
    fn mark_bits_are_each_bytes_high_bit_in_order() {
        let mut marks = [0u8; 16];
        assert_eq!(mark_bits(&marks), 0);
        for i in 0..16 {
            marks[i] = 0xff;
            assert_eq!(mark_bits(&marks), (1 << (i + 1)) - 1, "first {}", i + 1);
            assert_eq!(mark_bits(&marks), portable_mark_bits(&marks));
        }
        for i in 0..16 {
            let mut one = [0u8; 16];
            one[i] = 0xff;
            assert_eq!(mark_bits(&one), 1 << i);
            assert_eq!(portable_mark_bits(&one), 1 << i);
        }
    }

    /// Every length up to three chunks, every place to start from, every place for the first
    /// stop byte: shorter than a chunk, whole chunks and the tail that overlaps the chunk
    /// before it. Stop bytes before `from` are not looked at.
    #[test]
    fn find_looks_at_every_byte_from_where_it_starts() {
        let stop = |b: u8| b == b'!';
        for len in 0..50 {
            for from in 0..=len {
                let mut s = vec![b'a'; len];
                s[..from].fill(b'!');
                assert_eq!(find(&s, from, stop), None, "{from} of {len}");
                for at in from..len {
                    let mut s = s.clone();
                    s[at] = b'!';
                    assert_eq!(find(&s, from, stop), Some(at), "{at}, {from} of {len}");
                    s[len - 1] = b'!';
                    assert_eq!(find(&s, from, stop), Some(at), "{at}, {from}, {len}");
                }
            }
        }
        assert_eq!(find(b"abc", 4, stop), None);
    }
}
