//! Sans-I/O HTTP codec: HTTP/1.0 and HTTP/1.1 message heads, body framing and encoding, the
//! HTTP/2 server connection (frames, HPACK, streams) in [`h2`], and HTTP/3's frames, stream
//! rules and QPACK in [`h3`].
//!
//! Nothing here touches a socket. The caller owns the buffers; this crate only looks at bytes
//! and says what they mean:
//!
//! - [`parse_request`] and [`parse_response`] read one message head from the front of a buffer
//!   and return a [`RequestHead`] or [`ResponseHead`]. `Ok(None)` means "need more bytes". The
//!   heads hold [`Span`]s (byte ranges into the parsed buffer) instead of copies, so parsing a
//!   request allocates nothing on the common path.
//! - [`BodyKind`] says how the body that follows a head is delimited, and a [`BodyDecoder`] walks
//!   it: `Content-Length`, `chunked` (with extensions and trailers) or read-until-close.
//! - The `write_*` functions append the wire form of status lines, header fields and chunks to a
//!   `Vec<u8>`, and [`http_date`] formats the `Date` header.
//!
//! Parsing is strict (RFC 9110 and RFC 9112): anything ambiguous is rejected with a
//! [`ParseError`] whose [`status`](ParseError::status) is what a server answers before closing.
//!
//! # Example
//!
//! ```
//! use volt_proto::{parse_request, write_content_length, write_header, write_status_line};
//! use volt_proto::{BodyKind, Limits, Method, StatusCode, Version};
//!
//! let buf = b"GET /plaintext HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n\r\n";
//! let head = parse_request(buf, &Limits::default()).unwrap().expect("complete head");
//!
//! assert_eq!(head.method, Method::GET);
//! assert_eq!(head.target.get(buf), b"/plaintext");
//! assert_eq!(head.header(buf, "accept"), Some(&b"*/*"[..]));
//! assert_eq!(head.body, BodyKind::Empty);
//! assert!(head.keep_alive);
//! assert_eq!(head.head_len, buf.len()); // the next pipelined request starts here
//!
//! let body = b"Hello, World!";
//! let mut out = Vec::new();
//! write_status_line(&mut out, Version::HTTP_11, StatusCode::OK);
//! write_header(&mut out, b"content-type", b"text/plain");
//! write_content_length(&mut out, body.len() as u64);
//! out.extend_from_slice(b"\r\n");
//! out.extend_from_slice(body);
//! assert_eq!(
//!     out,
//!     b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 13\r\n\r\nHello, World!"
//! );
//! ```
//!
//! # Layout
//!
//! - `request`: request head parsing. A clean, complete head is walked once by a hand-written
//!   parser; anything else (unfinished, rejected, unusual) goes through `httparse` and the
//!   strict re-walk, which say "need more bytes" or name the rule broken.
//! - `response`: response head parsing, the same way: a hand-written walk of clean heads,
//!   `httparse` and the strict re-walk for the rest.
//! - `scan`: what the two hand-written walks share: word-at-a-time scanners, whole-word
//!   matches of known field names, and the walk over the field lines.
//! - `headers`: what both heads share: framing fields, span arithmetic, and the strict re-walk
//!   that names the exact rule a rejected head broke.
//! - `body`: the [`BodyDecoder`] state machine.
//! - `encode`, `date`: the write side.
//! - `error`: [`ParseError`].
//! - [`h2`]: sans-I/O HTTP/2: frames, HPACK header compression, and the server side of a
//!   connection ([`h2::server::Connection`]).
//! - [`h3`]: sans-I/O HTTP/3 (RFC 9114): QUIC varints, frames, the control and request
//!   stream rules, QPACK (RFC 9204) without a dynamic table, request heads.
//! - `field_check`: the request head rules HTTP/2 and HTTP/3 share.
//! - [`ws`]: sans-I/O WebSocket (RFC 6455): frame heads, masking, message reassembly with a
//!   size limit, UTF-8 and close-code checks, encoding.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod body;
mod date;
mod encode;
mod error;
mod field_check;
#[cfg(test)]
mod generate;
pub mod h2;
pub mod h3;
mod headers;
mod request;
mod response;
mod scan;
pub mod ws;

pub use body::{BodyDecoder, MAX_CHUNK_LINE};
pub use date::http_date;
pub use encode::{
    is_h2_preface, write_chunk, write_content_length, write_header, write_last_chunk,
    write_request_line, write_status_line, H2_PREFACE,
};
pub use error::ParseError;
pub use headers::list_elements;
pub use http::{HeaderName, HeaderValue, Method, StatusCode, Version};
#[cfg(fuzzing)]
#[doc(hidden)]
pub use request::fuzz_request_head;
pub use request::{
    absolute_authority, parse_request, parse_request_into, RequestHead, UnfinishedHead,
};
#[cfg(fuzzing)]
#[doc(hidden)]
pub use response::fuzz_response_head;
pub use response::{parse_response, parse_response_into, ResponseHead};

/// Size limits for parsing a message head.
///
/// They bound how much memory and work a peer can cause before a head is rejected: a server
/// keeps at most `max_head_bytes` of an unfinished head in its buffer.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Longest head (start line, header fields and the blank line) accepted. Default 16 KiB.
    /// Also bounds the trailer section of a chunked body.
    pub max_head_bytes: usize,
    /// Most header fields accepted in one head (and trailer fields in one body). Default 100.
    pub max_headers: usize,
    /// Longest request target accepted. Default 8 KiB.
    pub max_uri_len: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_head_bytes: 16 * 1024,
            max_headers: 100,
            max_uri_len: 8 * 1024,
        }
    }
}

/// A byte range into the buffer that was parsed. `u32` offsets keep heads small.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Span {
    /// Offset of the first byte.
    pub start: u32,
    /// Offset one past the last byte.
    pub end: u32,
}

impl Span {
    /// The bytes this span covers in `buf`, which must be the buffer that was parsed.
    ///
    /// # Panics
    ///
    /// If the span lies outside `buf`.
    #[inline]
    pub fn get(self, buf: &[u8]) -> &[u8] {
        &buf[self.start as usize..self.end as usize]
    }

    /// Length in bytes.
    #[inline]
    pub fn len(self) -> usize {
        (self.end - self.start) as usize
    }

    /// Whether the span covers no bytes.
    #[inline]
    pub fn is_empty(self) -> bool {
        self.start == self.end
    }
}

/// Where one header field's name and value lie in the parsed buffer.
///
/// The name is as received (not lowercased); the value excludes the whitespace around it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeaderSpan {
    /// The field name.
    pub name: Span,
    /// The field value, without leading or trailing whitespace.
    pub value: Span,
}

/// The header fields of a head, in the order received. Eight fit without allocating: heads
/// are moved a few times on their way to a handler, so a smaller inline size is cheaper than
/// the rare allocation for a head with more fields.
pub type HeaderSpans = smallvec::SmallVec<[HeaderSpan; 8]>;

/// Finds the first field called `name` (compared case-insensitively) and returns its value.
pub(crate) fn find_header<'b>(
    headers: &[HeaderSpan],
    buf: &'b [u8],
    name: &str,
) -> Option<&'b [u8]> {
    headers
        .iter()
        .find(|h| {
            h.name.len() == name.len() && h.name.get(buf).eq_ignore_ascii_case(name.as_bytes())
        })
        .map(|h| h.value.get(buf))
}

/// How a message body is delimited (RFC 9112 §6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyKind {
    /// No body follows the head. A `Content-Length: 0` is reported as `Empty` too, so
    /// `Length(n)` always has `n > 0`.
    Empty,
    /// Exactly this many bytes follow.
    Length(u64),
    /// A `chunked` body follows.
    Chunked,
    /// The body runs until the peer closes the connection (responses only).
    Eof,
}
