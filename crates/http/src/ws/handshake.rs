//! The opening handshake's server side (RFC 6455 §4.2): checking the client's request, and
//! the 101 that answers it.

use std::future::Future;
use std::io;
use std::time::Duration;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use http::{header, HeaderValue, Method, StatusCode, Version};
use sha1::{Digest, Sha1};
use volt_proto::ws::DeflateConfig;

use super::{PendingUpgrade, WebSocket};
use crate::body::{Body, BodyKind};
use crate::request::ConnectProtocol;
use crate::{Error, Request, Response};

/// §1.3: appended to the client's key before hashing.
const GUID: &[u8] = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// The default of [`WebSocketUpgrade::max_message_size`]: 16 MiB.
const DEFAULT_MAX_MESSAGE: usize = 16 << 20;

/// A checked WebSocket handshake, from [`Request::websocket`]: set its options, then answer
/// it with [`WebSocketUpgrade::on_upgrade`].
#[derive(Debug)]
pub struct WebSocketUpgrade {
    /// `Sec-WebSocket-Accept`, on HTTP/1.1 (HTTP/2 has none).
    accept: Option<HeaderValue>,
    /// The subprotocols the client offered, in its order.
    offered: Vec<String>,
    /// The values of the client's `Sec-WebSocket-Extensions` fields, in order.
    extensions: Vec<Vec<u8>>,
    pub(super) options: Options,
}

/// What the session is set up with.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub(crate) max_message: usize,
    pub(crate) idle_timeout: Option<Duration>,
    pub(crate) protocol: Option<String>,
    /// permessage-deflate, if the server is willing.
    pub(crate) deflate: Option<DeflateConfig>,
}

impl Request {
    /// Checks that this request opens a WebSocket: on HTTP/1.1 (RFC 6455 §4.2.1), a `GET` with
    /// no body, `Upgrade: websocket`, `Connection: upgrade` (each a token, in any case, maybe
    /// in a list), `Sec-WebSocket-Version: 13` and a `Sec-WebSocket-Key` of 16 bytes in
    /// base64; on HTTP/2 (RFC 8441 §5) and HTTP/3 (RFC 9220, the same handshake), an extended
    /// CONNECT with `:protocol websocket`, `:scheme` `http` or `https`, a stream left open for
    /// the messages, and `Sec-WebSocket-Version: 13` (no key: both do without one). A bad
    /// handshake answers 400 naming what is wrong, another version 426 with
    /// `Sec-WebSocket-Version: 13` (§4.4). HTTP/1.0 answers 400.
    ///
    /// ```no_run
    /// use volt_http::{Error, Request, Response};
    ///
    /// async fn echo(req: Request) -> Result<Response, Error> {
    ///     Ok(req.websocket()?.on_upgrade(|mut ws| async move {
    ///         while let Some(msg) = ws.recv().await? {
    ///             ws.send(msg).await?;
    ///         }
    ///         Ok(())
    ///     }))
    /// }
    /// ```
    pub fn websocket(&self) -> Result<WebSocketUpgrade, Error> {
        let accept = match self.version() {
            Version::HTTP_11 => Some(self.http1_handshake()?),
            Version::HTTP_2 | Version::HTTP_3 if self.protocol().is_some() => {
                self.extended_connect_handshake()?;
                None
            }
            Version::HTTP_2 | Version::HTTP_3 => {
                return Err(bad(
                    "on HTTP/2 and HTTP/3, a WebSocket opens with an extended CONNECT",
                ))
            }
            _ => return Err(bad("WebSocket needs HTTP/1.1, HTTP/2 or HTTP/3")),
        };
        let offered = self
            .headers()
            .filter(|(name, _)| name.eq_ignore_ascii_case("sec-websocket-protocol"))
            .flat_map(|(_, value)| volt_proto::list_elements(value))
            .filter_map(|p| std::str::from_utf8(p).ok())
            .map(str::to_owned)
            .collect();
        let extensions = self
            .headers()
            .filter(|(name, _)| name.eq_ignore_ascii_case("sec-websocket-extensions"))
            .map(|(_, value)| value.to_vec())
            .collect();
        Ok(WebSocketUpgrade {
            accept,
            offered,
            extensions,
            options: Options {
                max_message: DEFAULT_MAX_MESSAGE,
                idle_timeout: None,
                protocol: None,
                deflate: None,
            },
        })
    }

    /// RFC 6455 §4.2.1's checks; the `Sec-WebSocket-Accept` to answer with.
    fn http1_handshake(&self) -> Result<HeaderValue, Error> {
        if self.method() != Method::GET {
            return Err(bad("the method must be GET"));
        }
        if !self.body_is_empty() {
            return Err(bad("the request has a body"));
        }
        if !self.lists_token("upgrade", "websocket") {
            return Err(bad("no `Upgrade: websocket`"));
        }
        if !self.lists_token("connection", "upgrade") {
            return Err(bad("no `Connection: upgrade`"));
        }
        self.check_version()?;
        let key = match self.single("sec-websocket-key") {
            Ok(Some(key)) => key,
            Ok(None) => return Err(bad("no `Sec-WebSocket-Key`")),
            Err(()) => return Err(bad("more than one `Sec-WebSocket-Key`")),
        };
        // §4.1: the key is 16 random bytes, base64-encoded (so 24 characters).
        if !BASE64.decode(key).is_ok_and(|k| k.len() == 16) {
            return Err(bad("`Sec-WebSocket-Key` is not 16 bytes in base64"));
        }
        Ok(accept_key(key))
    }

    /// RFC 8441 §4-5's checks, which RFC 9220 §3 applies to HTTP/3 unchanged. The codec made
    /// sure of the rest: `:protocol` only on CONNECT, with `:scheme` and `:path`; no
    /// `Connection` or `Upgrade` (connection-specific fields make the request malformed). A
    /// `Sec-WebSocket-Key` is not looked at (§5: its work is done by `:protocol`), and no
    /// `Sec-WebSocket-Accept` answers it.
    fn extended_connect_handshake(&self) -> Result<(), Error> {
        if !is_extended_connect(self) {
            return Err(bad("`:protocol` is not `websocket`"));
        }
        let scheme = self.extension::<ConnectProtocol>().map(|p| &*p.scheme);
        if !matches!(scheme, Some("http" | "https")) {
            return Err(bad("`:scheme` is neither `http` nor `https`"));
        }
        // The messages travel in the stream's DATA: a request that ended the stream has no
        // way to send any.
        if self.stream_ended() {
            return Err(bad("the request ended its stream"));
        }
        self.check_version()
    }

    /// `Sec-WebSocket-Version: 13`, once: 426 naming 13 for another version (§4.4).
    fn check_version(&self) -> Result<(), Error> {
        match self.single("sec-websocket-version") {
            Err(()) => Err(bad("more than one `Sec-WebSocket-Version`")),
            Ok(None) => Err(bad("no `Sec-WebSocket-Version`")),
            Ok(Some(b"13")) => Ok(()),
            Ok(Some(_)) => {
                let e = Error::new(
                    StatusCode::UPGRADE_REQUIRED,
                    "unsupported WebSocket version (13 is)",
                );
                let name = header::SEC_WEBSOCKET_VERSION;
                Err(e.with_header(name, HeaderValue::from_static("13")))
            }
        }
    }

    /// Whether any `name` field lists `token` (case-insensitive, comma-separated).
    fn lists_token(&self, name: &str, token: &str) -> bool {
        self.headers()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .flat_map(|(_, value)| volt_proto::list_elements(value))
            .any(|t| t.eq_ignore_ascii_case(token.as_bytes()))
    }

    /// The value of field `name`, which may appear once at most (`Err` if more).
    fn single(&self, name: &str) -> Result<Option<&[u8]>, ()> {
        let mut values = self
            .headers()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim_ascii());
        let first = values.next();
        match values.next() {
            Some(_) => Err(()),
            None => Ok(first),
        }
    }
}

fn bad(why: &str) -> Error {
    Error::bad_request(format!("bad WebSocket handshake: {why}"))
}

/// Whether `req` is the WebSocket handshake of HTTP/2 (RFC 8441 §5) or HTTP/3 (RFC 9220): an
/// extended CONNECT with `:protocol websocket` (a token: any case, as HTTP/1's `Upgrade:
/// websocket`).
pub(crate) fn is_extended_connect(req: &Request) -> bool {
    *req.method() == Method::CONNECT
        && matches!(req.version(), Version::HTTP_2 | Version::HTTP_3)
        && req
            .protocol()
            .is_some_and(|p| p.eq_ignore_ascii_case("websocket"))
}

/// `Sec-WebSocket-Accept` for `key` (§4.2.2): base64 of SHA-1 of the key and the GUID.
pub(crate) fn accept_key(key: &[u8]) -> HeaderValue {
    let digest = Sha1::new().chain_update(key).chain_update(GUID).finalize();
    HeaderValue::from_str(&BASE64.encode(digest)).expect("base64 is a valid header value")
}

impl WebSocketUpgrade {
    /// Picks the subprotocol: the first of `supported` (in the server's order of preference)
    /// that the client offered in `Sec-WebSocket-Protocol`, sent back in the 101 and given by
    /// [`WebSocket::protocol`]. If the client offered none of them, the handshake goes on
    /// without one (the client then decides whether that will do, §4.2.2).
    pub fn protocols(mut self, supported: &[&str]) -> WebSocketUpgrade {
        self.options.protocol = supported
            .iter()
            .find(|s| self.offered.iter().any(|o| o == *s))
            .map(|s| s.to_string());
        self
    }

    /// The subprotocols the client offered, in its order.
    pub fn offered_protocols(&self) -> impl Iterator<Item = &str> {
        self.offered.iter().map(String::as_str)
    }

    /// The largest message (all its fragments together) taken from the client; a larger one
    /// closes the connection with 1009. Default 16 MiB.
    pub fn max_message_size(mut self, bytes: usize) -> WebSocketUpgrade {
        self.options.max_message = bytes;
        self
    }

    /// Agrees to permessage-deflate (RFC 7692) if the client offers it in a form volt can
    /// honour (`volt_proto::ws::negotiate`: not with a server window under 15 bits),
    /// compressing as `config` says (`None`: declined, the default). Browsers offer it.
    ///
    /// Off by default for its cost: a connection that compresses holds about 300 KiB of
    /// compressor state (miniz_oxide's window, hash chains and buffers) from its first message
    /// sent, and one that inflates about 60 KiB from its first compressed message received;
    /// compressing costs CPU on every message. `server_no_context_takeover` does not save
    /// that memory (the compressor is reset, not freed), only the ratio across messages.
    pub fn deflate(mut self, config: Option<DeflateConfig>) -> WebSocketUpgrade {
        self.options.deflate = config;
        self
    }

    /// Closes the connection (1001) when nothing arrives from the client for this long while
    /// [`WebSocket::recv`] waits. Default: no limit.
    pub fn idle_timeout(mut self, timeout: Duration) -> WebSocketUpgrade {
        self.options.idle_timeout = Some(timeout);
        self
    }

    /// The answer that accepts the handshake: on HTTP/1.1 a 101, once written the connection
    /// stops being HTTP and `session` runs on it; on HTTP/2 and HTTP/3 a 200 (RFC 8441 §5,
    /// RFC 9220 §3), then `session` runs on the stream's DATA frames, beside the connection's
    /// other streams. When
    /// `session` returns, the WebSocket is closed (close code 1000 for `Ok`, 1011 for `Err` or
    /// a panic) if it is not already, and so is its connection or stream.
    pub fn on_upgrade<F, Fut>(self, session: F) -> Response
    where
        F: FnOnce(WebSocket) -> Fut + 'static,
        Fut: Future<Output = io::Result<()>> + 'static,
    {
        let mut response = match self.accept {
            Some(accept) => {
                let mut response = Response::new(StatusCode::SWITCHING_PROTOCOLS);
                let upgrade = HeaderValue::from_static("websocket");
                response.append_header(header::UPGRADE, upgrade);
                let connection = HeaderValue::from_static("Upgrade");
                response.append_header(header::CONNECTION, connection);
                response.append_header(header::SEC_WEBSOCKET_ACCEPT, accept);
                response
            }
            None => Response::new(StatusCode::OK),
        };
        if let Some(p) = &self.options.protocol {
            let value = HeaderValue::from_str(p).expect("a subprotocol the client sent");
            response.append_header(header::SEC_WEBSOCKET_PROTOCOL, value);
        }
        let offers = self.extensions.iter().map(Vec::as_slice);
        let deflate = self.options.deflate.and_then(|config| {
            let (params, answer) = volt_proto::ws::negotiate(offers, &config)?;
            let value = HeaderValue::from_str(&answer).expect("tokens");
            response.append_header(header::SEC_WEBSOCKET_EXTENSIONS, value);
            Some((params, config.compression_level()))
        });
        let start = Box::new(move |ws| Box::pin(session(ws)) as _);
        let pending = PendingUpgrade {
            options: self.options,
            deflate,
            start,
        };
        response.body = Body {
            kind: BodyKind::Upgrade(Box::new(pending)),
            trailers: None,
        };
        response
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn accept_key_of_rfc_6455_example() {
        // §1.3's example.
        let accept = super::accept_key(b"dGhlIHNhbXBsZSBub25jZQ==");
        assert_eq!(accept, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    }
}
