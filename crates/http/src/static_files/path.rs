//! A request path made safe to look up under a directory: decoded once, checked segment by
//! segment, never joined as a string (so nothing in it can name the root or a parent).

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

use crate::request::percent_decode_bytes;

/// A request path as segments to push under the root, one by one.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct RelPath {
    /// Decoded segments, none empty, `.`, `..`, or holding `/`, `\` or NUL.
    pub(super) segments: Vec<OsString>,
    /// Whether a segment starts with `.` (a dotfile, or a file under a dot directory).
    pub(super) hidden: bool,
}

/// Why a path cannot be served.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum BadPath {
    /// `%` not followed by two hex digits.
    Encoding,
    /// An empty segment (`a//b`, or a leading `/` in a catch-all's value).
    Empty,
    /// `.` or `..`.
    Dots,
    /// `/` (as `%2F`), `\` or NUL, decoded.
    Byte,
}

impl BadPath {
    pub(super) fn message(&self) -> &'static str {
        match self {
            BadPath::Encoding => "bad percent-encoding in the path",
            BadPath::Empty => "empty segment in the path",
            BadPath::Dots => "`.` or `..` segment in the path",
            BadPath::Byte => "an encoded `/`, a `\\` or a NUL in the path",
        }
    }
}

/// Splits `raw` (a path relative to the served directory, as sent: no leading `/`, still
/// percent-encoded) at `/` and decodes each segment once. A trailing `/` gives no segment (the
/// caller knows it from the path). Every rule is checked after decoding, so `%2e%2e` is `..`
/// and `%2f` is refused rather than splitting a segment in two.
///
/// RFC 3986 §5.2.4 has clients remove dot segments before sending; one that still sends them
/// (or encodes them) is not a browser, and is refused rather than resolved.
pub(super) fn parse(raw: &str) -> Result<RelPath, BadPath> {
    let mut rel = RelPath {
        segments: Vec::new(),
        hidden: false,
    };
    if raw.is_empty() {
        return Ok(rel);
    }
    let pieces: Vec<&str> = raw.split('/').collect();
    let last = pieces.len() - 1;
    for (i, piece) in pieces.into_iter().enumerate() {
        if piece.is_empty() {
            if i == last {
                break;
            }
            return Err(BadPath::Empty);
        }
        // A file name is bytes on Linux, UTF-8 or not.
        let decoded = percent_decode_bytes(piece).ok_or(BadPath::Encoding)?;
        check_segment(&decoded)?;
        rel.hidden |= decoded[0] == b'.';
        rel.segments.push(OsString::from_vec(decoded));
    }
    Ok(rel)
}

/// Refuses a `name` (decoded) that cannot be pushed under a directory as one entry's name:
/// empty, `.`, `..`, or holding `/`, `\` or NUL. Request paths and index names both pass here, so
/// neither can name the directory itself, its parent, or anything below another entry.
pub(super) fn check_segment(name: &[u8]) -> Result<(), BadPath> {
    if name.is_empty() {
        return Err(BadPath::Empty);
    }
    if name == b"." || name == b".." {
        return Err(BadPath::Dots);
    }
    if name.iter().any(|&b| b == b'/' || b == b'\\' || b == 0) {
        return Err(BadPath::Byte);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segments(raw: &str) -> Vec<String> {
        let rel = parse(raw).unwrap();
        rel.segments
            .iter()
            .map(|s| s.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn good_paths_split_and_decode_once() {
        assert_eq!(segments(""), Vec::<String>::new());
        assert_eq!(segments("a/b.txt"), ["a", "b.txt"]);
        assert_eq!(segments("dir/"), ["dir"]);
        assert_eq!(segments("a%20b/%25zz"), ["a b", "%zz"]);
        // Decoded once: `%252e%252e` is the name `%2e%2e`, not `..`.
        assert_eq!(segments("%252e%252e"), ["%2e%2e"]);
        assert_eq!(segments("..."), ["..."]);
        assert_eq!(segments("caf%C3%A9"), ["café"]);
        let not_utf8 = parse("%FF").unwrap();
        assert_eq!(not_utf8.segments[0].as_encoded_bytes(), b"\xff");
    }

    #[test]
    fn hidden_segments_are_flagged() {
        assert!(!parse("a/b").unwrap().hidden);
        assert!(parse(".env").unwrap().hidden);
        assert!(parse(".git/config").unwrap().hidden);
        assert!(parse("%2egit/config").unwrap().hidden);
    }

    #[test]
    fn traversal_and_odd_bytes_are_refused() {
        assert_eq!(parse(".."), Err(BadPath::Dots));
        assert_eq!(parse("../../etc/passwd"), Err(BadPath::Dots));
        assert_eq!(parse("a/../../x"), Err(BadPath::Dots));
        assert_eq!(parse("%2e%2e/%2E%2E/etc/passwd"), Err(BadPath::Dots));
        assert_eq!(parse("a/./b"), Err(BadPath::Dots));
        assert_eq!(parse("a%2f..%2f.."), Err(BadPath::Byte));
        assert_eq!(parse("a%2F"), Err(BadPath::Byte));
        assert_eq!(parse("a%5c..%5cb"), Err(BadPath::Byte));
        assert_eq!(parse("a\\b"), Err(BadPath::Byte));
        assert_eq!(parse("a%00.txt"), Err(BadPath::Byte));
        assert_eq!(parse("/etc/passwd"), Err(BadPath::Empty));
        assert_eq!(parse("a//b"), Err(BadPath::Empty));
        assert_eq!(parse("a%2"), Err(BadPath::Encoding));
        assert_eq!(parse("a%g0"), Err(BadPath::Encoding));
    }
}
