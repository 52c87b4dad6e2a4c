//! multipart/byteranges (RFC 9110 §14.6): the body of a 206 with several parts, laid out
//! before anything is sent, so that its `Content-Length` is exact.

use super::file_body::Piece;
use super::ranges::Span;
use crate::ws::link::random;

/// A multipart/byteranges body: its boundary and its pieces.
pub(super) struct Multipart {
    boundary: String,
    pub(super) pieces: Vec<Piece>,
}

impl Multipart {
    /// `parts` of a file of `len` bytes, each with its own head naming `part_type` (the file's
    /// `Content-Type`), its `coding` (the `Content-Encoding` of a precompressed copy, whose
    /// bytes the parts are) and its `Content-Range`, between fresh boundaries.
    ///
    /// The layout is RFC 2046 §5.1.1's with no preamble and no epilogue: the first delimiter
    /// opens the body (no CRLF before it), each later one is preceded by the CRLF that ends
    /// the part before, and the close delimiter ends with a CRLF, as Apache and Go send it.
    pub(super) fn new(
        parts: &[Span],
        len: u64,
        part_type: &str,
        coding: Option<&str>,
    ) -> Multipart {
        let boundary = boundary();
        let coding = coding.map_or(String::new(), |c| format!("Content-Encoding: {c}\r\n"));
        let mut pieces = Vec::with_capacity(2 * parts.len() + 1);
        // The CRLF that ends the part before: none before the first delimiter.
        let mut crlf = "";
        for &Span { start, end } in parts {
            let head = format!(
                "{crlf}--{boundary}\r\nContent-Type: {part_type}\r\n{coding}\
                 Content-Range: bytes {start}-{end}/{len}\r\n\r\n"
            );
            pieces.push(Piece::Bytes(head.into()));
            pieces.push(Piece::File(start..end + 1));
            crlf = "\r\n";
        }
        pieces.push(Piece::Bytes(format!("\r\n--{boundary}--\r\n").into()));
        Multipart { boundary, pieces }
    }

    /// The body's `Content-Type`.
    pub(super) fn content_type(&self) -> String {
        format!("multipart/byteranges; boundary={}", self.boundary)
    }
}

/// 24 hex digits from the operating system's CSPRNG, fresh for each answer. The boundary must
/// not occur in the parts (RFC 2046 §5.1.1): 96 random bits make that practically never by
/// chance, and, unpredictable, never by design either (a file whose author could guess the
/// boundary could forge parts of its own).
fn boundary() -> String {
    random::<12>().iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::static_files::file_body::body_len;

    /// The body, with the file's bytes spelled `<start..end>`.
    fn spelled(m: &Multipart) -> String {
        let spell = |piece: &Piece| match piece {
            Piece::Bytes(bytes) => String::from_utf8(bytes.to_vec()).unwrap(),
            Piece::File(range) => format!("<{range:?}>"),
        };
        m.pieces.iter().map(spell).collect()
    }

    #[test]
    fn parts_between_delimiters() {
        let parts = [Span { start: 0, end: 4 }, Span { start: 10, end: 12 }];
        let m = Multipart::new(&parts, 13, "text/plain; charset=utf-8", None);
        let b = &m.boundary;
        assert_eq!(
            spelled(&m),
            format!(
                "--{b}\r\nContent-Type: text/plain; charset=utf-8\r\n\
                 Content-Range: bytes 0-4/13\r\n\r\n<0..5>\r\n\
                 --{b}\r\nContent-Type: text/plain; charset=utf-8\r\n\
                 Content-Range: bytes 10-12/13\r\n\r\n<10..13>\r\n--{b}--\r\n"
            )
        );
        assert_eq!(
            m.content_type(),
            format!("multipart/byteranges; boundary={b}")
        );
        // The length counts every byte: heads, parts, delimiters.
        let text_len = spelled(&m).len() as u64 - "<0..5><10..13>".len() as u64;
        assert_eq!(body_len(&m.pieces), text_len + 5 + 3);
    }

    #[test]
    fn a_copy_names_its_coding_in_each_part() {
        let parts = [Span { start: 0, end: 0 }, Span { start: 90, end: 99 }];
        let m = Multipart::new(&parts, 100, "text/css", Some("gzip"));
        let b = &m.boundary;
        assert_eq!(
            spelled(&m),
            format!(
                "--{b}\r\nContent-Type: text/css\r\nContent-Encoding: gzip\r\n\
                 Content-Range: bytes 0-0/100\r\n\r\n<0..1>\r\n\
                 --{b}\r\nContent-Type: text/css\r\nContent-Encoding: gzip\r\n\
                 Content-Range: bytes 90-99/100\r\n\r\n<90..100>\r\n--{b}--\r\n"
            )
        );
    }

    #[test]
    fn boundaries_are_fresh_hex() {
        let (a, b) = (boundary(), boundary());
        assert_eq!(a.len(), 24);
        assert!(
            a.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')),
            "{a}"
        );
        assert_ne!(a, b);
    }
}
