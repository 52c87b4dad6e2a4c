//! Decompressing responses as their bodies are read (RFC 9110 §8.4).
//!
//! A request whose caller set no `Accept-Encoding` goes out with `Accept-Encoding: gzip,
//! deflate, br` (unless [`ClientBuilder::decompress`](super::ClientBuilder::decompress)
//! turned that off), and a response in one of those codings is decoded piece by piece as the
//! caller reads it: its `Content-Encoding` and `Content-Length` (the compressed length) are
//! taken out of the headers the caller sees, which then describe the body as read. A caller
//! that sets `Accept-Encoding` itself asked for codings by hand, and gets the body as sent. A
//! request with a `Range` asks for no coding: a part of a compressed form cannot be decoded
//! alone. A body read whole (`bytes()`) decodes to at most `max_decoded_body` bytes.

use std::io;

use bytes::Bytes;
use http::header::{ACCEPT_ENCODING, CONTENT_ENCODING, CONTENT_LENGTH, RANGE};
use http::{HeaderMap, HeaderValue, StatusCode};

use super::response::ClientBody;
use crate::coding::decode::Decoder;
use crate::coding::Coding;

/// What the client asks for when the caller did not: every coding it decodes, as browsers
/// list them.
const ACCEPTED: HeaderValue = HeaderValue::from_static("gzip, deflate, br");

/// The default of [`ClientBuilder::max_decoded_body`](super::ClientBuilder::max_decoded_body).
const DEFAULT_MAX_DECODED_BODY: usize = 64 << 20;

/// The client's decompression settings.
#[derive(Clone, Copy, Debug)]
pub(super) struct Decompression {
    /// Ask for codings and decode them.
    pub(super) on: bool,
    /// Most bytes `bytes()`, `text()` and `json()` decode a compressed body to.
    pub(super) max_body: usize,
}

impl Default for Decompression {
    fn default() -> Self {
        Decompression {
            on: true,
            max_body: DEFAULT_MAX_DECODED_BODY,
        }
    }
}

/// Adds `Accept-Encoding` to a request, unless decoding is off, the caller set one, or the
/// request asks for a range: whether the responses are then to be decoded.
pub(super) fn ask(headers: &mut HeaderMap, on: bool) -> bool {
    if !on || headers.contains_key(ACCEPT_ENCODING) || headers.contains_key(RANGE) {
        return false;
    }
    headers.insert(ACCEPT_ENCODING, ACCEPTED);
    true
}

/// Decoding one response's body.
pub(super) struct Decoding {
    decoder: Decoder,
    /// [`ClientBuilder::max_decoded_body`](super::ClientBuilder::max_decoded_body).
    max_body: usize,
    /// The compressed body has ended, and the coded stream with it.
    ended: bool,
    /// Decoding failed: every later read fails too, never looks like the end.
    failed: bool,
}

/// The decoding a response's body needs, if it has a body in a coding the client asked for;
/// then its `Content-Encoding` and `Content-Length` are removed from `headers`. A response
/// to HEAD, a 1xx, 204 or 304 has no body: its headers stay as sent (they tell what a GET
/// would get). Nor is a 206 decoded: a part of a coded form is no coded stream of its own.
/// Several codings stacked (`gzip, br`), or one the client does not know, are left alone
/// too: the caller gets the body and the header as they came.
pub(super) fn start(
    headers: &mut HeaderMap,
    status: StatusCode,
    head_request: bool,
    settings: &Decompression,
) -> Option<Box<Decoding>> {
    let undecodable = status.is_informational()
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED
        || status == StatusCode::PARTIAL_CONTENT;
    if head_request || undecodable {
        return None;
    }
    let decoder = {
        let mut lines = headers.get_all(CONTENT_ENCODING).iter();
        let (line, None) = (lines.next()?, lines.next()) else {
            return None;
        };
        let mut tokens = volt_proto::list_elements(line.as_bytes());
        let (token, None) = (tokens.next()?, tokens.next()) else {
            return None;
        };
        match token {
            t if t.eq_ignore_ascii_case(b"deflate") => Decoder::deflate(),
            t => Decoder::new(Coding::from_token(t)?),
        }
    };
    headers.remove(CONTENT_ENCODING);
    headers.remove(CONTENT_LENGTH);
    Some(Box::new(Decoding {
        decoder,
        max_body: settings.max_body,
        ended: false,
        failed: false,
    }))
}

impl Decoding {
    /// The most a whole decoded body may hold.
    pub(super) fn max_body(&self) -> usize {
        self.max_body
    }

    /// Whether every decoded byte has been given out.
    pub(super) fn ended(&self) -> bool {
        self.ended
    }

    /// The next decoded piece (at most 32 KiB), reading compressed pieces off `body` as they
    /// are needed; `None` at the end. A body that is not valid in its coding, or ends before
    /// its coded stream does, is an `InvalidData` error.
    pub(super) async fn chunk(&mut self, body: &mut ClientBody) -> io::Result<Option<Bytes>> {
        if self.failed {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "the body failed to decode",
            ));
        }
        let next = self.next(body).await;
        self.failed = next.is_err();
        next
    }

    async fn next(&mut self, body: &mut ClientBody) -> io::Result<Option<Bytes>> {
        loop {
            if self.ended {
                return Ok(None);
            }
            if let Some(out) = self.decoder.step()? {
                return Ok(Some(out));
            }
            match body.chunk().await? {
                Some(compressed) => self.decoder.feed(compressed),
                None => {
                    self.decoder.finish()?;
                    self.ended = true;
                }
            }
        }
    }
}

/// Appends `piece` to the body read so far, `all`, unless that takes it past `limit` bytes
/// (an `InvalidData` error then); `all`'s capacity grows by doubling, as a `Vec`'s would,
/// but never past `limit`.
pub(super) fn append_within(all: &mut Vec<u8>, piece: &[u8], limit: usize) -> io::Result<()> {
    if piece.len() > limit - all.len() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "the decoded body is over the client's limit of {limit} bytes \
                 (ClientBuilder::max_decoded_body)"
            ),
        ));
    }
    if all.capacity() - all.len() < piece.len() {
        let want = (all.len() + piece.len())
            .max(all.capacity().saturating_mul(2))
            .min(limit);
        all.reserve_exact(want - all.len());
    }
    all.extend_from_slice(piece);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_body_never_holds_more_than_its_limit() {
        let mut all = Vec::new();
        for _ in 0..3 {
            append_within(&mut all, &[7; 300], 1000).unwrap();
            assert!(all.capacity() <= 1000, "{}", all.capacity());
        }
        // 900 + 100 is the limit exactly; one more byte is over it.
        append_within(&mut all, &[7; 100], 1000).unwrap();
        assert_eq!((all.len(), all.capacity()), (1000, 1000));
        let e = append_within(&mut all, &[7], 1000).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(e.to_string().contains("limit of 1000 bytes"), "{e}");
        assert_eq!(all.len(), 1000, "nothing of the piece over the limit kept");
        // No limit: as a `Vec`.
        let mut all = Vec::new();
        append_within(&mut all, b"ab", usize::MAX).unwrap();
        append_within(&mut all, b"cd", usize::MAX).unwrap();
        assert_eq!(all, b"abcd");
    }
}
