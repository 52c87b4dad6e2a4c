//! Writing responses into a connection's write buffer: the head (the worker's cached head for
//! the usual response, field by field otherwise), the framing, in-memory bodies, error answers.

use std::future::Future;
use std::pin::Pin;

use http::{StatusCode, Version};
use volt_proto::ParseError;

use super::ConnIo;
use crate::body::{Body, BodyKind as OutBody};
use crate::response::{IntoResponse, Response};
use crate::server::Worker;
use crate::Error;

/// Room reserved before encoding a response head.
const HEAD_RESERVE: usize = 256;

#[derive(Clone, Copy)]
pub(super) enum Framing {
    /// `Content-Length` (omitted when `None`: 1xx and 204 have none).
    Length(Option<u64>),
    Chunked,
    /// Delimited by closing the connection (HTTP/1.0 streams of unknown length).
    Close,
}

/// Appends the head of `response`: the status line, `Server`, `Date`, its headers, the framing
/// header and `Connection` as needed.
fn encode_head(
    w: &mut Vec<u8>,
    worker: &Worker,
    version: Version,
    response: &Response,
    framing: Framing,
    keep_alive: bool,
) {
    // The usual response, whose head the worker keeps whole.
    if let (StatusCode::OK, Some(ct), [], Framing::Length(Some(n)), true) = (
        response.status,
        &response.content_type,
        response.headers(),
        framing,
        keep_alive && version != Version::HTTP_10,
    ) {
        if worker.write_ok_head(w, ct, n) {
            return;
        }
    }
    encode_fields(w, worker, version, response, framing, keep_alive);
}

/// Writes a response head field by field. Out of line, so that the usual response's path
/// in [`encode_head`] does not save and restore the registers this one needs.
#[inline(never)]
fn encode_fields(
    w: &mut Vec<u8>,
    worker: &Worker,
    version: Version,
    response: &Response,
    framing: Framing,
    keep_alive: bool,
) {
    // One capacity check up front for a usual head, so the copies below only copy.
    w.reserve(HEAD_RESERVE);
    // We speak HTTP/1.1; a 1.0 client reads the same status line (RFC 9110 §6.2).
    worker.write_head_start(w, response.status);
    if let Some(ct) = &response.content_type {
        w.extend_from_slice(b"Content-Type: ");
        w.extend_from_slice(ct.as_bytes());
        w.extend_from_slice(b"\r\n");
    }
    for (name, value) in response.headers() {
        if is_managed(name) {
            continue;
        }
        volt_proto::write_header(w, name.as_str().as_bytes(), value.as_bytes());
    }
    match framing {
        Framing::Length(Some(n)) => volt_proto::write_content_length(w, n),
        Framing::Length(None) | Framing::Close => {}
        Framing::Chunked => w.extend_from_slice(b"Transfer-Encoding: chunked\r\n"),
    }
    if !keep_alive {
        w.extend_from_slice(b"Connection: close\r\n");
    } else if version == Version::HTTP_10 {
        w.extend_from_slice(b"Connection: keep-alive\r\n");
    }
    w.extend_from_slice(b"\r\n");
}

/// The `size CRLF` line before a chunk's data.
pub(super) fn write_chunk_size(w: &mut Vec<u8>, len: usize) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digits = (usize::BITS - len.leading_zeros()).div_ceil(4).max(1);
    for i in (0..digits).rev() {
        w.push(HEX[(len >> (i * 4)) & 0xf]);
    }
    w.extend_from_slice(b"\r\n");
}

/// Headers the connection writes itself; a handler's copies would contradict the framing.
fn is_managed(name: &http::HeaderName) -> bool {
    use http::header::{CONNECTION, CONTENT_LENGTH, DATE, SERVER, TRANSFER_ENCODING};
    *name == CONTENT_LENGTH
        || *name == TRANSFER_ENCODING
        || *name == CONNECTION
        || *name == DATE
        || *name == SERVER
}

impl ConnIo {
    /// Appends the head of `response` for a request of `version` (`is_head`: to a HEAD
    /// request), and its body if it is in memory; gives back whether the connection stays
    /// open, and the writing of a streamed body. That one is boxed: its state would otherwise
    /// widen every batch's future.
    pub(super) fn encode_response<'a>(
        &'a self,
        mut response: Response,
        version: Version,
        is_head: bool,
        mut keep_alive: bool,
    ) -> (bool, Option<Pin<Box<impl Future<Output = bool> + 'a>>>) {
        let status = response.status;
        // No framing headers on 1xx and 204 (RFC 9112 §6.1), nor on 304, where
        // `Content-Length` would have to be that of the 200 the server does not know (RFC 9110
        // §8.6).
        let bodiless_status = status.is_informational()
            || status == StatusCode::NO_CONTENT
            || status == StatusCode::NOT_MODIFIED;
        let no_body = is_head || bodiless_status;
        // Trailer fields follow a chunked body (RFC 9112 §7.1.2): a response that has them
        // goes chunked. An HTTP/1.0 client knows no chunked coding, and a bodiless response has
        // no last chunk, so they get none.
        let trailers = response
            .body
            .trailers
            .take()
            .filter(|_| !no_body && version != Version::HTTP_10);
        // HEAD keeps the framing headers GET would have had, but a bodiless status has none
        // to HEAD either: not even a streamed body's length or chunking.
        let framing = match &response.body.kind {
            _ if bodiless_status => Framing::Length(None),
            _ if trailers.is_some() => Framing::Chunked,
            OutBody::Full(bytes) => Framing::Length(Some(bytes.len() as u64)),
            OutBody::Stream { len: Some(n), .. } => Framing::Length(Some(*n)),
            OutBody::Stream { len: None, .. } if version == Version::HTTP_10 => {
                keep_alive = false;
                Framing::Close
            }
            OutBody::Stream { len: None, .. } => Framing::Chunked,
            // Answered by `ConnIo::upgrade` before this: any other response with it is empty.
            OutBody::Upgrade(_) => Framing::Length(Some(0)),
        };
        encode_head(
            &mut self.write_buf.borrow_mut(),
            &self.worker,
            version,
            &response,
            framing,
            keep_alive,
        );
        // The body is moved out of the response, not taken (which would leave an empty one to
        // drop).
        let streamed = match response.body.kind {
            OutBody::Full(bytes) => {
                let mut w = self.write_buf.borrow_mut();
                if let Some(trailers) = trailers {
                    volt_proto::write_chunk(&mut w, &bytes);
                    volt_proto::write_last_chunk(&mut w, trailers.take().as_ref());
                } else if !no_body {
                    w.extend_from_slice(&bytes);
                }
                None
            }
            OutBody::Stream { stream, .. } if !no_body => {
                Some(Box::pin(self.write_stream(stream, framing, trailers)))
            }
            OutBody::Stream { .. } | OutBody::Upgrade(_) => None,
        };
        // Usually absent: dropped here, where the field is moved out, they cost a test rather
        // than a call to their drop glue.
        if let Some(headers) = response.headers {
            drop(headers);
        }
        (keep_alive, streamed)
    }

    /// Appends the usual response to a GET on a connection that stays open: a 200 with a
    /// `Content-Type`, a body in memory and nothing else, as the worker's cached head and the
    /// body. Any other response is handed back.
    #[inline]
    pub(super) fn encode_usual(&self, response: Response) -> Result<(), Response> {
        // Taken apart whole, so that what is left to drop of the usual response is known to
        // be two `Bytes`, not a response whose every optional part has to be looked at.
        let Response {
            status,
            content_type,
            headers,
            body: Body { kind, trailers },
        } = response;
        if let (StatusCode::OK, Some(ct), None, OutBody::Full(body), None) =
            (status, &content_type, &headers, &kind, &trailers)
        {
            let mut w = self.write_buf.borrow_mut();
            if self.worker.write_ok_head(&mut w, ct, body.len() as u64) {
                // A `memcpy` call even for a short body: two fixed-size copies overlapping in
                // the middle, inline, came to more instructions with their two capacity checks
                // (pipelined 1,477 -> 1,489 Ir/request for a 13-byte body).
                w.extend_from_slice(body);
                return Ok(());
            }
        }
        let body = Body { kind, trailers };
        Err(Response {
            status,
            content_type,
            headers,
            body,
        })
    }

    /// Answers a head the codec rejected, then the connection closes.
    pub(super) fn reject(&self, e: &ParseError) {
        self.respond_error(Error::new(e.status(), e.to_string()), false);
    }

    /// Answers with `e`, then the connection closes, lingering: the client may still be sending
    /// the request the answer refused. `is_head`: the answer is to a HEAD request, so it has
    /// no body (RFC 9110 §9.3.2), though `Content-Length` says what it would have been.
    pub(super) fn respond_error(&self, e: Error, is_head: bool) {
        self.linger_on_close();
        let response = e.into_response();
        let body = response.body.as_bytes().cloned().unwrap_or_default();
        let mut w = self.write_buf.borrow_mut();
        encode_head(
            &mut w,
            &self.worker,
            Version::HTTP_11,
            &response,
            Framing::Length(Some(body.len() as u64)),
            false,
        );
        if !is_head {
            w.extend_from_slice(&body);
        }
    }
}
