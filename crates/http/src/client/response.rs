//! A response as the client hands it over: the head at once, the body as it arrives.

use std::fmt;
use std::io;
use std::rc::Rc;

use bytes::Bytes;
use http::{HeaderMap, StatusCode, Version};
use serde::de::DeserializeOwned;
use volt_proto::BodyDecoder;

use super::conn::{invalid_data, Conn, Head};
use super::decode::{self, Decoding};
use super::http2::OnStream;
use super::Inner;
use crate::body::take_body_data;

/// A response to [`RequestBuilder::send`](super::RequestBuilder::send).
///
/// The body is read on demand: [`chunk`](ClientResponse::chunk) for each piece as it comes,
/// or [`bytes`](ClientResponse::bytes), [`text`](ClientResponse::text),
/// [`json`](ClientResponse::json) for all of it. The connection goes back to the client's
/// pool once the body has been read to its end; dropping a response before that closes it.
pub struct ClientResponse {
    status: StatusCode,
    version: Version,
    headers: HeaderMap,
    body: ClientBody,
    /// The body's content coding, decoded as it is read (`decode`).
    decoding: Option<Box<Decoding>>,
}

/// The body of a [`ClientResponse`], read from its connection.
pub(super) struct ClientBody {
    source: Source,
    client: Rc<Inner>,
    /// Set once the body has ended.
    trailers: Option<HeaderMap>,
}

// Not boxed: the HTTP/1 variant is the usual one, and boxing it would allocate per response.
#[allow(clippy::large_enum_variant)]
enum Source {
    H1 {
        /// The connection, until the body has ended (then it is back in the pool, or closed).
        conn: Option<Conn>,
        decoder: BodyDecoder,
        /// The connection may carry another request once this body has ended.
        keep_alive: bool,
    },
    /// The stream's half of the response; the connection is shared and stays in the pool,
    /// busy until the body has ended (then `claim` is `None`).
    H2 {
        recv: h2::RecvStream,
        claim: Option<OnStream>,
    },
}

impl ClientResponse {
    pub(super) fn new(head: Head, conn: Conn, client: Rc<Inner>) -> ClientResponse {
        let mut decoder = BodyDecoder::with_limits(head.body, &client.limits);
        let (mut slot, mut trailers) = (Some(conn), None);
        if decoder.is_done() {
            // No body (HEAD, 204, 304, `Content-Length: 0`): the connection is free at once.
            finish_h1(
                &mut slot,
                &mut decoder,
                head.keep_alive,
                &mut trailers,
                &client,
            );
        }
        let source = Source::H1 {
            conn: slot,
            decoder,
            keep_alive: head.keep_alive,
        };
        ClientResponse {
            status: head.status,
            version: head.version,
            headers: head.headers,
            body: ClientBody {
                source,
                client,
                trailers,
            },
            decoding: None,
        }
    }

    pub(super) fn from_h2(
        response: http::Response<h2::RecvStream>,
        claim: OnStream,
        client: Rc<Inner>,
    ) -> Self {
        let (parts, recv) = response.into_parts();
        let claim = (!recv.is_end_stream()).then_some(claim);
        ClientResponse {
            status: parts.status,
            version: parts.version,
            headers: parts.headers,
            body: ClientBody {
                source: Source::H2 { recv, claim },
                client,
                trailers: None,
            },
            decoding: None,
        }
    }

    /// The response with its content coding decoded as the body is read, if `on` (the
    /// client asked for codings) and it has one the client knows (`decode::start`).
    pub(super) fn decoded(mut self, on: bool, head_request: bool) -> ClientResponse {
        if on {
            let settings = &self.body.client.decompress;
            self.decoding = decode::start(&mut self.headers, self.status, head_request, settings);
        }
        self
    }

    /// The status code.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The HTTP version the server answered with.
    pub fn version(&self) -> Version {
        self.version
    }

    /// The header fields.
    pub fn headers(&self) -> &HeaderMap {
        &self.headers
    }

    /// The value of the header field `name`, if present and visible ASCII.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The next piece of the body, `None` at its end. A body the client decompresses comes
    /// in pieces of at most 32 KiB, however much a compressed piece inflates to.
    ///
    /// # Errors
    ///
    /// The server broke the body's framing (`InvalidData`), or its content coding (a corrupt
    /// or truncated gzip or br body: `InvalidData`), closed the connection before its end
    /// (`UnexpectedEof`), or sent nothing for the client's timeout (`TimedOut`).
    pub async fn chunk(&mut self) -> io::Result<Option<Bytes>> {
        match &mut self.decoding {
            Some(decoding) => decoding.chunk(&mut self.body).await,
            None => self.body.chunk().await,
        }
    }

    /// Whether the body has been read to its end (and decoded to its end).
    fn ended(&self) -> bool {
        self.body.trailers.is_some() && self.decoding.as_ref().is_none_or(|d| d.ended())
    }

    /// The whole body. It is held in memory: read large or untrusted bodies with
    /// [`chunk`](ClientResponse::chunk). A body the client decompresses may decode to at
    /// most [`ClientBuilder::max_decoded_body`](super::ClientBuilder::max_decoded_body)
    /// bytes (64 MiB by default), and never holds more.
    ///
    /// # Errors
    ///
    /// As [`chunk`](ClientResponse::chunk), and `InvalidData` for a decoded body over the
    /// client's limit.
    pub async fn bytes(mut self) -> io::Result<Bytes> {
        let limit = self.decoding.as_ref().map_or(usize::MAX, |d| d.max_body());
        let mut all = Vec::new();
        while let Some(chunk) = self.chunk().await? {
            if all.is_empty() && self.ended() && chunk.len() <= limit {
                return Ok(chunk); // all of it in one piece: no copy
            }
            decode::append_within(&mut all, &chunk, limit)?;
        }
        Ok(all.into())
    }

    /// The whole body as UTF-8 text.
    ///
    /// # Errors
    ///
    /// As [`bytes`](ClientResponse::bytes), and `InvalidData` if the body is not UTF-8.
    pub async fn text(self) -> io::Result<String> {
        let bytes = self.bytes().await?;
        String::from_utf8(bytes.into()).map_err(|_| invalid_data("the body is not UTF-8"))
    }

    /// The whole body, deserialized from JSON.
    ///
    /// # Errors
    ///
    /// As [`bytes`](ClientResponse::bytes), and `InvalidData` if the body is not a `T` in JSON.
    pub async fn json<T: DeserializeOwned>(self) -> io::Result<T> {
        let bytes = self.bytes().await?;
        serde_json::from_slice(&bytes).map_err(|e| invalid_data(format!("JSON body: {e}")))
    }

    /// Reads and drops a small body to its end, so that its HTTP/1 connection is kept; a
    /// larger one is dropped unread (closing that connection), as is a body that fails.
    pub(super) async fn discard(mut self) {
        let mut left: usize = 64 * 1024;
        while let Ok(Some(chunk)) = self.body.chunk().await {
            match left.checked_sub(chunk.len()) {
                Some(rest) => left = rest,
                None => return,
            }
        }
    }

    /// The trailer fields of a chunked body, once the body has been read to its end.
    pub fn trailers(&self) -> Option<&HeaderMap> {
        self.body.trailers.as_ref()
    }
}

impl ClientBody {
    pub(super) async fn chunk(&mut self) -> io::Result<Option<Bytes>> {
        if self.trailers.is_some() {
            return Ok(None);
        }
        let wait = self.client.timeout;
        match &mut self.source {
            Source::H1 { .. } => self.chunk_h1().await,
            Source::H2 { recv, claim } => match super::http2::next_chunk(recv, wait).await? {
                Some(chunk) => Ok(Some(chunk)),
                None => {
                    self.trailers = Some(super::http2::trailers(recv, wait).await?);
                    *claim = None;
                    Ok(None)
                }
            },
        }
    }

    async fn chunk_h1(&mut self) -> io::Result<Option<Bytes>> {
        let ClientBody {
            source,
            client,
            trailers,
        } = self;
        let Source::H1 {
            conn: slot,
            decoder,
            keep_alive,
        } = source
        else {
            unreachable!("an HTTP/1 body");
        };
        loop {
            if decoder.is_done() {
                finish_h1(slot, decoder, *keep_alive, trailers, client);
                return Ok(None);
            }
            let Some(conn) = slot.as_mut() else {
                return Err(io::Error::other(
                    "the body was cut short by an earlier error",
                ));
            };
            let (consumed, data) = match take_body_data(decoder, &mut conn.buf) {
                Ok(taken) => taken,
                Err(e) => {
                    *slot = None;
                    return Err(invalid_data(format!("bad response body: {e}")));
                }
            };
            if let Some(chunk) = data {
                if decoder.is_done() {
                    // The connection is free before the caller asks again.
                    finish_h1(slot, decoder, *keep_alive, trailers, client);
                }
                return Ok(Some(chunk));
            }
            if consumed > 0 {
                continue; // framing only (a chunk's size line)
            }
            let deadline = volt_rt::time::now() + client.timeout;
            match conn.read_more(deadline).await {
                Ok(0) => {
                    decoder.finish_eof();
                    if !decoder.is_done() {
                        *slot = None;
                        return Err(io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            "the server closed the connection before the end of the body",
                        ));
                    }
                    *keep_alive = false;
                }
                Ok(_) => {}
                Err(e) => {
                    *slot = None;
                    return Err(e);
                }
            }
        }
    }
}

/// An HTTP/1 body has ended: its trailers are kept, and the connection goes back to the pool
/// if it can carry another request (nothing unasked after the body).
fn finish_h1(
    slot: &mut Option<Conn>,
    decoder: &mut BodyDecoder,
    keep_alive: bool,
    trailers: &mut Option<HeaderMap>,
    client: &Inner,
) {
    *trailers = Some(decoder.take_trailers());
    if let Some(conn) = slot.take() {
        if keep_alive && conn.buf.is_empty() {
            client.give_back(conn);
        }
    }
}

impl fmt::Debug for ClientResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientResponse")
            .field("status", &self.status)
            .field("version", &self.version)
            .field("headers", &self.headers)
            .finish_non_exhaustive()
    }
}
