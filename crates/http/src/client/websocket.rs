//! The client's WebSocket: the opening handshake (RFC 6455 §4.1, §4.2.2) on a connection of
//! its own, then the same [`WebSocket`] session the server hands out, in the client's role
//! (every frame masked with a fresh key, masked frames from the server refused).
//!
//! The connection is new, never from the pool nor given back to it (once upgraded it is no
//! longer HTTP), and HTTP/1.1 whatever the client's HTTP/2 settings: over TLS, ALPN offers
//! `http/1.1` alone (WebSocket over HTTP/2, RFC 8441, is not spoken by the client).
//!
//! Redirects are not followed (§4.1 lets a client choose): a 3xx is a [`HandshakeError`] like
//! any answer but 101, and its `Location` is in [`HandshakeError::headers`] for a caller who
//! wants to follow it. Following would have to carry the key, subprotocols and headers to an
//! origin the caller did not name, which is the caller's decision to make.

use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use bytes::{Buf, BytesMut};
use http::header::{
    CONNECTION, CONTENT_LENGTH, HOST, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_EXTENSIONS,
    SEC_WEBSOCKET_KEY, SEC_WEBSOCKET_PROTOCOL, SEC_WEBSOCKET_VERSION, TRANSFER_ENCODING, UPGRADE,
};
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Version};
use volt_proto::ws::{DeflateConfig, DeflateParams, Role};

use super::conn::{invalid_data, invalid_input, timed_out, Conn, Connected};
use super::http2::{self, H2Tunnel};
use super::{Checkout, Client, Target, CONTINUE_WAIT};
use crate::ws::link::{random, Link};
use crate::ws::{Settings, WebSocket};

/// The default of [`WebSocketBuilder::max_message_size`]: 16 MiB, as the server's.
const DEFAULT_MAX_MESSAGE: usize = 16 << 20;

/// How long a client's close waits for the server's part (its close frame, then its TCP
/// close), as the server's `Config::linger_timeout` does by default.
const LINGER: Duration = Duration::from_secs(2);

/// What a client reads and discards at most after it failed the connection.
const MAX_LINGER_BYTES: u64 = 4 << 20;

impl Client {
    /// A WebSocket to `url`: `ws://` or `wss://` (`http://` and `https://` are taken as those,
    /// as browsers do). Set its options, then [`connect`](WebSocketBuilder::connect).
    ///
    /// ```no_run
    /// # async fn demo() -> std::io::Result<()> {
    /// use volt_http::{Client, Message};
    ///
    /// let client = Client::new();
    /// let mut ws = client.websocket("ws://127.0.0.1:8080/echo").connect().await?;
    /// ws.send("hello").await?;
    /// assert_eq!(ws.recv().await?, Some(Message::Text("hello".into())));
    /// ws.close(1000, "done").await?;
    /// # Ok(()) }
    /// ```
    pub fn websocket(&self, url: &str) -> WebSocketBuilder {
        let target = match url.split_once("://") {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("ws") => {
                Target::parse(&format!("http://{rest}"))
            }
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("wss") => {
                Target::parse(&format!("https://{rest}"))
            }
            _ => Target::parse(url),
        };
        WebSocketBuilder {
            client: self.clone(),
            target,
            protocols: Vec::new(),
            headers: HeaderMap::new(),
            max_message: DEFAULT_MAX_MESSAGE,
            idle_timeout: None,
            deflate: Some(DeflateConfig::default()),
            http2: false,
        }
    }
}

/// A WebSocket handshake being put together; [`connect`](WebSocketBuilder::connect) makes it.
#[derive(Debug)]
pub struct WebSocketBuilder {
    client: Client,
    /// Where to connect, or the first mistake made putting the handshake together.
    target: io::Result<Target>,
    protocols: Vec<String>,
    headers: HeaderMap,
    max_message: usize,
    idle_timeout: Option<Duration>,
    deflate: Option<DeflateConfig>,
    /// RFC 8441: on a stream of the client's HTTP/2 connection.
    http2: bool,
}

impl WebSocketBuilder {
    /// Offers these subprotocols (`Sec-WebSocket-Protocol`, in this order of preference); the
    /// server may pick one ([`WebSocket::protocol`]) or none. An answer naming one that was
    /// not offered fails the handshake.
    pub fn protocols(mut self, protocols: &[&str]) -> Self {
        let token = |p: &&str| !p.is_empty() && p.bytes().all(is_tchar);
        if !protocols.iter().all(token) {
            self.target = Err(invalid_input(
                "a subprotocol must be a token (RFC 6455 §4.1)",
            ));
        }
        self.protocols = protocols.iter().map(|p| p.to_string()).collect();
        self
    }

    /// Adds a header field to the handshake request (`Origin`, `Authorization`, a cookie).
    /// The fields the handshake is made of (`Host`, `Upgrade`, `Connection`,
    /// `Sec-WebSocket-*`) and body framing fields are the client's to set and are refused.
    pub fn header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        let reserved = [
            HOST,
            UPGRADE,
            CONNECTION,
            SEC_WEBSOCKET_KEY,
            SEC_WEBSOCKET_VERSION,
            SEC_WEBSOCKET_ACCEPT,
            SEC_WEBSOCKET_EXTENSIONS,
            SEC_WEBSOCKET_PROTOCOL,
            CONTENT_LENGTH,
            TRANSFER_ENCODING,
        ];
        if reserved.contains(&name) {
            self.target = Err(invalid_input(format!("`{name}` is set by the client")));
        } else {
            self.headers.append(name, value);
        }
        self
    }

    /// The largest message (all its fragments together, inflated) taken from the server; a
    /// larger one closes the connection with 1009. Default 16 MiB.
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.max_message = bytes;
        self
    }

    /// Closes the connection (1001) when nothing arrives from the server for this long while
    /// [`WebSocket::recv`] waits. Default: no limit.
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = Some(timeout);
        self
    }

    /// Offers permessage-deflate (RFC 7692) as `config` says, or not at all (`None`). On by
    /// default, with the defaults of [`DeflateConfig`], as browsers offer it: a client has
    /// few connections, and the server decides (volt's declines unless told otherwise). Once
    /// agreed it costs the connection about 300 KiB to compress (from the first message sent)
    /// and 60 KiB to inflate (from the first compressed message received), and CPU on every
    /// message. `client_max_window_bits` is never offered: volt compresses with a 32 KiB
    /// window only.
    pub fn deflate(mut self, config: Option<DeflateConfig>) -> Self {
        self.deflate = config;
        self
    }

    /// Runs the WebSocket on a stream of the client's HTTP/2 connection to the server (RFC
    /// 8441), shared with its other requests, instead of on a connection of its own: an
    /// extended `CONNECT` with `:protocol websocket`, answered 200. The connection is the one
    /// the client would use for a request to the URL: over TLS the server must choose h2 by
    /// ALPN, and a `ws:` URL needs
    /// [`ClientBuilder::http2_prior_knowledge`](super::ClientBuilder::http2_prior_knowledge).
    /// The server must have announced
    /// `SETTINGS_ENABLE_CONNECT_PROTOCOL`; a connection that has not within 1 s fails.
    pub fn http2(mut self) -> Self {
        self.http2 = true;
        self
    }

    /// Opens a new connection (within `ClientBuilder::connect_timeout`), sends the handshake
    /// and checks the answer (within `ClientBuilder::timeout`), as RFC 6455 §4.1 asks: a 101,
    /// `Upgrade: websocket`, `Connection: upgrade`, the `Sec-WebSocket-Accept` the key calls
    /// for, a subprotocol only if it was offered, and extensions only as offered.
    ///
    /// # Errors
    ///
    /// `InvalidInput` for a bad URL or header; the connection's errors; `TimedOut`; a
    /// [`HandshakeError`] (find it with `io::Error::get_ref` and `downcast_ref`) of kind
    /// `Other` for an answer other than 101 (its status and header fields kept) and of kind
    /// `InvalidData` for a 101 that breaks §4.1; `InvalidData` for a malformed answer;
    /// `UnexpectedEof` if the server closed without answering.
    pub async fn connect(mut self) -> io::Result<WebSocket> {
        let target = std::mem::replace(&mut self.target, Err(invalid_input("taken")))?;
        if self.http2 {
            return self.connect_h2(target).await;
        }
        let inner = &self.client.inner;
        let key = BASE64.encode(random::<16>());
        let tls = target.origin.https.then(|| {
            // §4.1: the handshake is HTTP/1.1; ALPN must not let the server pick h2.
            let mut config = (*inner.tls()).clone();
            config.alpn_protocols = vec![b"http/1.1".to_vec()];
            Arc::new(config)
        });
        let route = inner.proxied(&target.origin, true);
        let connecting = Conn::connect(
            route.unwrap_or_else(|| target.route.clone()),
            tls,
            false,
            inner.connect_timeout,
            &inner.limits,
        );
        let Connected::H1(mut conn) = connecting.await? else {
            return Err(invalid_data("the server chose HTTP/2 for a WebSocket"));
        };
        let offer = self.deflate.as_ref().map(volt_proto::ws::offer);
        let mut head = Vec::with_capacity(256);
        volt_proto::write_request_line(
            &mut head,
            &Method::GET,
            target.path.as_bytes(),
            Version::HTTP_11,
        );
        volt_proto::write_header(&mut head, b"host", target.authority.as_bytes());
        volt_proto::write_header(&mut head, b"upgrade", b"websocket");
        volt_proto::write_header(&mut head, b"connection", b"Upgrade");
        volt_proto::write_header(&mut head, b"sec-websocket-key", key.as_bytes());
        volt_proto::write_header(&mut head, b"sec-websocket-version", b"13");
        if !self.protocols.is_empty() {
            let list = self.protocols.join(", ");
            volt_proto::write_header(&mut head, b"sec-websocket-protocol", list.as_bytes());
        }
        if let Some(offer) = &offer {
            volt_proto::write_header(&mut head, b"sec-websocket-extensions", offer.as_bytes());
        }
        // With a jar, the handshake carries its cookies as any request does (RFC 6455 §4.1:
        // `Secure` ones only over wss).
        let headers = match &inner.cookies {
            Some(jar) => jar.request_headers(&self.headers, &target),
            None => Cow::Borrowed(&self.headers),
        };
        for (name, value) in headers.iter() {
            volt_proto::write_header(&mut head, name.as_str().as_bytes(), value.as_bytes());
        }
        head.extend_from_slice(b"\r\n");
        // An early answer (a refusal) ends the write: it is read all the same.
        conn.write_all(&head, inner.timeout, &inner.limits).await?;
        let deadline = volt_rt::time::now() + inner.timeout;
        let (status, headers) = read_answer(&mut conn, inner, deadline).await?;
        // The answer's `Set-Cookie`s are stored whatever it is, a 101 or a refusal.
        if let Some(jar) = &inner.cookies {
            jar.store_response(&target, &headers);
        }
        let fail = |why: String| HandshakeError::new(status, headers.clone(), why);
        if status != StatusCode::SWITCHING_PROTOCOLS {
            let reason = status.canonical_reason().unwrap_or("");
            let why = format!("the server answered {} {reason}, not 101", status.as_u16());
            return Err(io::Error::other(fail(why)));
        }
        let checked = check_101(&headers, &key, &self.protocols, self.deflate.as_ref());
        let (protocol, deflate) = checked
            .map_err(|why| io::Error::new(io::ErrorKind::InvalidData, fail(why.to_string())))?;
        let settings = self.settings((protocol, deflate));
        // What came after the 101 (the server's first frames) starts the session's buffer.
        let (stream, read) = conn.into_parts();
        let link = Link::Client(RefCell::new(stream));
        Ok(WebSocket::new(link, read, None, settings))
    }

    /// The session's settings, once the handshake agreed on a subprotocol and deflate.
    fn settings(&self, (protocol, deflate): Agreed) -> Settings {
        let level = self.deflate.map_or(0, |c| c.compression_level());
        Settings {
            role: Role::Client,
            max_message: self.max_message,
            idle_timeout: self.idle_timeout,
            protocol,
            deflate: deflate.map(|params| (params, level)),
            write_timeout: self.client.inner.timeout,
            linger_timeout: LINGER,
            max_linger_bytes: MAX_LINGER_BYTES,
        }
    }

    /// The handshake and session of [`http2`](WebSocketBuilder::http2): RFC 8441 §4–5.
    async fn connect_h2(self, target: Target) -> io::Result<WebSocket> {
        let inner = &self.client.inner;
        let route = inner.proxied(&target.origin, true);
        let (send, claim) = match inner
            .checkout(route.as_ref().unwrap_or(&target.route))
            .await?
        {
            (Checkout::H2(send, claim), _) => (send, claim),
            (Checkout::H1(_), _) => {
                let e = "the server did not choose HTTP/2 (over TLS by ALPN; a ws: URL needs \
                         ClientBuilder::http2_prior_knowledge)";
                return Err(invalid_data(e));
            }
        };
        let mut send = http2::ready(send, inner.timeout).await?;
        // §3: `:protocol` only once the server said it takes it; a new connection's SETTINGS
        // may still be on their way.
        let deadline = volt_rt::time::now() + CONTINUE_WAIT;
        while !send.is_extended_connect_protocol_enabled() {
            if volt_rt::time::now() >= deadline {
                let e = "the server does not take WebSockets over HTTP/2 (no \
                         SETTINGS_ENABLE_CONNECT_PROTOCOL)";
                return Err(invalid_data(e));
            }
            volt_rt::time::sleep(Duration::from_millis(1)).await;
        }
        let scheme = if target.origin.https { "https" } else { "http" };
        let uri: http::Uri = format!("{scheme}://{}{}", target.authority, target.path)
            .parse()
            .map_err(|e| invalid_input(format!("the URL as HTTP/2 sees it: {e}")))?;
        let mut request = http::Request::new(());
        *request.method_mut() = Method::CONNECT;
        *request.uri_mut() = uri;
        *request.version_mut() = Version::HTTP_2;
        request
            .extensions_mut()
            .insert(h2::ext::Protocol::from_static("websocket"));
        let fields = request.headers_mut();
        fields.insert(SEC_WEBSOCKET_VERSION, HeaderValue::from_static("13"));
        if !self.protocols.is_empty() {
            let list = HeaderValue::from_str(&self.protocols.join(", "))
                .map_err(|e| invalid_input(e.to_string()))?;
            fields.insert(SEC_WEBSOCKET_PROTOCOL, list);
        }
        if let Some(offer) = self.deflate.as_ref().map(volt_proto::ws::offer) {
            let offer = HeaderValue::from_str(&offer).map_err(|e| invalid_input(e.to_string()))?;
            fields.insert(SEC_WEBSOCKET_EXTENSIONS, offer);
        }
        let headers = match &inner.cookies {
            Some(jar) => jar.request_headers(&self.headers, &target),
            None => Cow::Borrowed(&self.headers),
        };
        for (name, value) in headers.iter() {
            fields.append(name, value.clone());
        }
        let (response, stream) = send.send_request(request, false).map_err(http2::io_error)?;
        let response = volt_rt::time::timeout(inner.timeout, response).await;
        let response = response
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "waiting for the 200"))?
            .map_err(http2::io_error)?;
        let (parts, recv) = response.into_parts();
        if let Some(jar) = &inner.cookies {
            jar.store_response(&target, &parts.headers);
        }
        let fail = |why: String| HandshakeError::new(parts.status, parts.headers.clone(), why);
        if !parts.status.is_success() {
            let reason = parts.status.canonical_reason().unwrap_or("");
            let why = format!(
                "the server answered {} {reason}, not 200",
                parts.status.as_u16()
            );
            return Err(io::Error::other(fail(why)));
        }
        let agreed = check_agreed(&parts.headers, &self.protocols, self.deflate.as_ref())
            .map_err(|why| io::Error::new(io::ErrorKind::InvalidData, fail(why)))?;
        let settings = self.settings(agreed);
        let link = Link::ClientH2(RefCell::new(H2Tunnel::new(stream, recv, claim)));
        Ok(WebSocket::new(link, BytesMut::new(), None, settings))
    }
}

/// Reads the answer's head by `deadline` (interim responses other than 101 skipped), and
/// takes it off the connection's buffer.
async fn read_answer(
    conn: &mut Conn,
    inner: &super::Inner,
    deadline: std::time::Instant,
) -> io::Result<(StatusCode, HeaderMap)> {
    loop {
        let parsed = volt_proto::parse_response(&conn.buf, &inner.limits, false)
            .map_err(|e| invalid_data(format!("bad response head: {e}")))?;
        if let Some(head) = parsed {
            let status = head.status;
            if status.is_informational() && status != StatusCode::SWITCHING_PROTOCOLS {
                conn.buf.advance(head.head_len);
                continue;
            }
            if head.version != Version::HTTP_11 {
                return Err(invalid_data("a WebSocket handshake answered in HTTP/1.0"));
            }
            let mut headers = HeaderMap::with_capacity(head.headers.len());
            for field in &head.headers {
                let name = HeaderName::from_bytes(field.name.get(&conn.buf));
                let value = HeaderValue::from_bytes(field.value.get(&conn.buf));
                let (Ok(name), Ok(value)) = (name, value) else {
                    return Err(invalid_data("bad response header field"));
                };
                headers.append(name, value);
            }
            conn.buf.advance(head.head_len);
            return Ok((status, headers));
        }
        let read = conn.read_more(deadline).await;
        match read.map_err(|_| timed_out("waiting for the WebSocket handshake"))? {
            0 => {
                let e = "the server closed the connection before answering the handshake";
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, e));
            }
            _ => continue,
        }
    }
}

/// What a 101 settled: the subprotocol, and permessage-deflate's parameters.
type Agreed = (Option<String>, Option<DeflateParams>);

/// RFC 6455 §4.1's checks of a 101 (points 2 to 6 of "the client MUST validate"): the chosen
/// subprotocol, and permessage-deflate's parameters if it was agreed.
fn check_101(
    headers: &HeaderMap,
    key: &str,
    offered: &[String],
    deflate: Option<&DeflateConfig>,
) -> Result<Agreed, String> {
    let tokens = |name| {
        headers
            .get_all(name)
            .iter()
            .flat_map(|v| volt_proto::list_elements(v.as_bytes()))
            .collect::<Vec<_>>()
    };
    let upgrade = tokens(UPGRADE);
    if upgrade.is_empty() || !upgrade.iter().all(|t| t.eq_ignore_ascii_case(b"websocket")) {
        return Err("no `Upgrade: websocket` in the 101".into());
    }
    if !tokens(CONNECTION)
        .iter()
        .any(|t| t.eq_ignore_ascii_case(b"upgrade"))
    {
        return Err("no `Connection: upgrade` in the 101".into());
    }
    let expected = crate::ws::accept_key(key.as_bytes());
    let mut accept = headers.get_all(SEC_WEBSOCKET_ACCEPT).iter();
    match (accept.next(), accept.next()) {
        (Some(got), None) if got.as_bytes().trim_ascii() == expected.as_bytes() => {}
        (None, _) => return Err("no Sec-WebSocket-Accept in the 101".into()),
        _ => return Err("Sec-WebSocket-Accept does not match the key".into()),
    }
    check_agreed(headers, offered, deflate)
}

/// The checks an answer's extensions and subprotocol pass, on HTTP/1 and HTTP/2 alike.
fn check_agreed(
    headers: &HeaderMap,
    offered: &[String],
    deflate: Option<&DeflateConfig>,
) -> Result<Agreed, String> {
    let extensions = headers.get_all(SEC_WEBSOCKET_EXTENSIONS).iter();
    let deflate = volt_proto::ws::accept(extensions.map(|v| v.as_bytes()), deflate)?;
    let mut chosen = headers.get_all(SEC_WEBSOCKET_PROTOCOL).iter();
    let protocol = match (chosen.next(), chosen.next()) {
        (None, _) => None,
        (Some(p), None) => {
            let p = p.to_str().unwrap_or("").trim();
            if !offered.iter().any(|o| o == p) {
                return Err(format!("the server chose subprotocol `{p}`, not offered"));
            }
            Some(p.to_owned())
        }
        _ => return Err("the server chose more than one subprotocol".into()),
    };
    Ok((protocol, deflate))
}

/// RFC 9110 §5.6.2.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// A WebSocket handshake that failed after the server answered: an answer other than 101 (a
/// redirect, a refusal), or a 101 that breaks RFC 6455 §4.1. Carried in the `io::Error` that
/// [`WebSocketBuilder::connect`] returns.
#[derive(Debug)]
pub struct HandshakeError {
    status: StatusCode,
    headers: HeaderMap,
    why: String,
}

impl HandshakeError {
    fn new(status: StatusCode, headers: HeaderMap, why: String) -> HandshakeError {
        HandshakeError {
            status,
            headers,
            why,
        }
    }

    /// The answer's status: anything but 101, or a 101 that was wrong.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The answer's header fields (a redirect's `Location`, a refusal's reasons).
    pub fn headers(&self) -> &HeaderMap {
        &self.headers
    }
}

impl fmt::Display for HandshakeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "WebSocket handshake failed: {}", self.why)
    }
}

impl std::error::Error for HandshakeError {}
