//! A response as the client hands it over: the head at once, the body as it arrives.

use std::fmt;
use std::io;
use std::rc::Rc;

use bytes::{Bytes, BytesMut};
use http::{HeaderMap, StatusCode, Version};
use serde::de::DeserializeOwned;
use volt_proto::BodyDecoder;

use super::conn::{invalid_data, Conn, Head};
use super::Inner;

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
}

/// The body of a [`ClientResponse`], read from its connection.
pub struct ClientBody {
    /// The connection, until the body has ended (then it is back in the pool, or closed).
    conn: Option<Conn>,
    decoder: BodyDecoder,
    /// The connection may carry another request once this body has ended.
    keep_alive: bool,
    client: Rc<Inner>,
    trailers: Option<HeaderMap>,
}

impl ClientResponse {
    pub(super) fn new(head: Head, conn: Conn, client: Rc<Inner>) -> ClientResponse {
        let decoder = BodyDecoder::with_limits(head.body, &client.limits);
        let mut body = ClientBody {
            conn: Some(conn),
            decoder,
            keep_alive: head.keep_alive,
            client,
            trailers: None,
        };
        if body.decoder.is_done() {
            body.finish(); // no body (HEAD, 204, 304, `Content-Length: 0`)
        }
        ClientResponse {
            status: head.status,
            version: head.version,
            headers: head.headers,
            body,
        }
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

    /// The next piece of the body, `None` at its end.
    ///
    /// # Errors
    ///
    /// The server broke the body's framing (`InvalidData`), closed the connection before its
    /// end (`UnexpectedEof`), or sent nothing for the client's timeout (`TimedOut`).
    pub async fn chunk(&mut self) -> io::Result<Option<Bytes>> {
        self.body.chunk().await
    }

    /// The whole body. It is held in memory: read large or untrusted bodies with
    /// [`chunk`](ClientResponse::chunk).
    ///
    /// # Errors
    ///
    /// As [`chunk`](ClientResponse::chunk).
    pub async fn bytes(mut self) -> io::Result<Bytes> {
        let mut all = BytesMut::new();
        while let Some(chunk) = self.body.chunk().await? {
            if all.is_empty() && self.body.decoder.is_done() {
                return Ok(chunk); // all of it in one piece: no copy
            }
            all.extend_from_slice(&chunk);
        }
        Ok(all.freeze())
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

    /// The trailer fields of a chunked body, once the body has been read to its end.
    pub fn trailers(&self) -> Option<&HeaderMap> {
        self.body.trailers.as_ref()
    }
}

impl ClientBody {
    async fn chunk(&mut self) -> io::Result<Option<Bytes>> {
        loop {
            if self.decoder.is_done() {
                self.finish();
                return Ok(None);
            }
            let Some(conn) = self.conn.as_mut() else {
                return Err(io::Error::other(
                    "the body was cut short by an earlier error",
                ));
            };
            let (consumed, range) = match self.decoder.decode(&conn.buf) {
                Ok((n, data)) => (n, data.map(|d| offset_in(&conn.buf, d))),
                Err(e) => {
                    self.conn = None;
                    return Err(invalid_data(format!("bad response body: {e}")));
                }
            };
            if consumed > 0 {
                let taken = conn.buf.split_to(consumed).freeze();
                match range {
                    Some((start, len)) if len > 0 => {
                        if self.decoder.is_done() {
                            self.finish(); // the connection is free before the caller asks again
                        }
                        return Ok(Some(taken.slice(start..start + len)));
                    }
                    _ => continue, // framing only (a chunk's size line)
                }
            }
            let deadline = volt_rt::time::now() + self.client.timeout;
            let read = conn.read_more(deadline).await;
            match read {
                Ok(0) => {
                    self.decoder.finish_eof();
                    if !self.decoder.is_done() {
                        self.conn = None;
                        return Err(io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            "the server closed the connection before the end of the body",
                        ));
                    }
                    self.keep_alive = false;
                }
                Ok(_) => {}
                Err(e) => {
                    self.conn = None;
                    return Err(e);
                }
            }
        }
    }

    /// The body has ended: the trailers are kept, and the connection goes back to the pool if
    /// it can carry another request (nothing unasked after the body).
    fn finish(&mut self) {
        if self.trailers.is_some() {
            return; // finished already
        }
        self.trailers = Some(self.decoder.take_trailers());
        if let Some(conn) = self.conn.take() {
            if self.keep_alive && conn.buf.is_empty() {
                self.client.give_back(conn);
            }
        }
    }
}

/// Where `part`, a slice of `buf`, starts in it, and its length.
fn offset_in(buf: &[u8], part: &[u8]) -> (usize, usize) {
    (part.as_ptr() as usize - buf.as_ptr() as usize, part.len())
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
