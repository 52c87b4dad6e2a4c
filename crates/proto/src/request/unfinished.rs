//! [`UnfinishedHead`]: which new bytes may change what [`parse_request`](crate::parse_request)
//! says of a head it found unfinished, so a server parses it again only then.

use crate::headers::is_tchar;

/// A request head [`parse_request`](crate::parse_request) found unfinished, and where in its
/// grammar its last byte left it: enough to tell, from the bytes that come after it alone,
/// whether parsing again may give another answer (a complete head or an error), size limits
/// aside.
///
/// A head ends only at a LF, and before its line ends a rule is broken by a control byte (a
/// bare CR included), a method byte that is not a token byte, a second space after the
/// method or after the target, a version that cannot become `HTTP/1.0` or `HTTP/1.1`
/// (`XTTP/1.1`, `HTTP/1.1x`: RFC 9112 §2.3), a field name byte that is not a token byte
/// (`Ho st:`, `Host\x7f`; RFC 9110 §5.1, and whitespace before the colon or at a line's
/// start: RFC 9112 §5.1, §5.2). [`may_change`](Self::may_change) looks only at the new bytes,
/// carrying the position from one call to the next, so watching a head dripped in byte by
/// byte costs time linear in its size (parsing it again from the start at every byte cost
/// time quadratic). Bytes whose meaning depends on more than the position (a target's form,
/// a field's value) are checked when their line ends.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UnfinishedHead {
    /// Bytes already looked at: the head's length when last parsed or watched.
    seen: usize,
    at: Position,
}

/// Where the byte after the last one seen falls in the head's grammar.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Position {
    /// Empty lines before the request line, or none yet (RFC 9112 §2.2).
    #[default]
    Start,
    /// Within the method.
    Method,
    /// Just past the space after the method.
    TargetStart,
    /// Within the target.
    Target,
    /// Within the version (the request line's third word): every byte there may decide it.
    Version,
    /// At the start of a field line.
    LineStart,
    /// Within a field name.
    Name,
    /// Past a field's colon.
    Value,
    /// After a CR: whatever comes next decides.
    LineEnd,
    /// After a control byte other than a line end's.
    Decided,
}

impl UnfinishedHead {
    /// Where the unfinished head `buf` (starting at its first byte) left off: one pass over it,
    /// as long as the parse that found it unfinished. Out of line: a server's loop over
    /// whole requests calls it only for a head that is not.
    #[inline(never)]
    pub fn new(buf: &[u8]) -> Self {
        let mut head = UnfinishedHead {
            seen: 0,
            at: Position::Start,
        };
        for &b in buf {
            head.at = match (head.at, b) {
                (Position::Decided, _) => Position::Decided,
                (Position::Start, b'\n' | b'\r') => Position::Start,
                (_, b'\r') => Position::LineEnd,
                // A line ends (the request line, or a field line; the empty line that ends a
                // head does not come in an unfinished one).
                (_, b'\n') => Position::LineStart,
                // The parse found the version unfinished, not broken.
                (Position::Version, b) if !b.is_ascii_control() => Position::Version,
                (at, b) => at.after(b).unwrap_or(Position::Decided),
            };
        }
        head.seen = buf.len();
        head
    }

    /// The head's length when last parsed or watched.
    pub fn len(&self) -> usize {
        self.seen
    }

    /// Whether no byte of a head was seen.
    pub fn is_empty(&self) -> bool {
        self.seen == 0
    }

    /// Whether the bytes of `buf` past those seen may change what parsing `buf` gives: a
    /// control byte (a line may end, or a rule is broken), or a byte that breaks a rule of the
    /// line it falls in (see the type's docs) or falls in the version. Looks only at the new
    /// bytes, up to the first one that may, and remembers where they left off. `buf` is the
    /// head seen before with bytes appended.
    #[inline(never)]
    pub fn may_change(&mut self, buf: &[u8]) -> bool {
        let new = buf.get(self.seen..).unwrap_or_default();
        self.seen = buf.len();
        for &b in new {
            if b.is_ascii_control() && b != b'\t' {
                self.at = Position::Decided;
                return true;
            }
            match self.at.after(b) {
                Some(at) => self.at = at,
                None => {
                    self.at = Position::Decided;
                    return true;
                }
            }
        }
        false
    }
}

impl Position {
    /// The position after byte `b` (not a LF), or `None` if `b` may change the answer.
    fn after(self, b: u8) -> Option<Position> {
        use Position::*;
        let control = b.is_ascii_control() && b != b'\t';
        match self {
            _ if control => None,
            Start | Method if is_tchar(b) => Some(Method),
            Method if b == b' ' => Some(TargetStart),
            // A space at the start (no method), or a byte that is not a token byte in it.
            Start | Method => None,
            // An empty target (two spaces).
            TargetStart if b == b' ' => None,
            TargetStart | Target if b == b' ' => Some(Version),
            TargetStart | Target => Some(Target),
            // The version is at most 8 bytes (then a CR, a control byte): each one may decide.
            Version | LineEnd | Decided => None,
            LineStart | Name if is_tchar(b) => Some(Name),
            Name if b == b':' => Some(Value),
            // Whitespace at a line's start (obs-fold) or before the colon, an empty name, a
            // byte that is not a token byte.
            LineStart | Name => None,
            Value => Some(Value),
        }
    }
}
