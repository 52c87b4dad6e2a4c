//! The client: HTTP/1.1 and HTTP/2 over TCP or TLS, connections kept per origin, bodies
//! streamed both ways.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! let client = volt_http::Client::new();
//! let response = client.get("http://127.0.0.1:8080/json").send().await?;
//! assert_eq!(response.status(), 200);
//! let body = response.text().await?;
//! # Ok(()) }
//! ```
//!
//! Like everything on volt-rt, a [`Client`] belongs to the worker (thread) that made it: it is
//! `!Send`, its clones share one pool, and each worker makes its own.
//!
//! Opt-in, and free while unused: cookies ([`ClientBuilder::cookies`], a [`CookieJar`] that
//! workers may share) and proxies ([`ClientBuilder::proxy`]: absolute-form requests for
//! `http`, `CONNECT` tunnels for `https` and WebSockets). Connections are pooled by
//! [`Route`]: directly to an origin, to a forward proxy, or through a tunnel to an origin.

use std::cell::{OnceCell, RefCell};
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::future::poll_fn;
use std::io;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{
    AUTHORIZATION, CONTENT_ENCODING, CONTENT_LANGUAGE, CONTENT_LENGTH, CONTENT_LOCATION,
    CONTENT_TYPE, COOKIE, HOST, PROXY_AUTHORIZATION, TRANSFER_ENCODING,
};
use http::{HeaderMap, HeaderName, HeaderValue, Method, Uri, Version};
use serde::Serialize;
use volt_proto::Limits;

use crate::body::{poll_next_caught, BodyKind};
use crate::Body;
use conn::{invalid_input, Conn, Connected, Head, Sent};
use http2::{OnStream, Streams};

mod builder;
pub(crate) mod conn;
mod cookie;
mod decode;
pub(crate) mod http2;
mod proxy;
mod redirect;
mod response;
mod set_cookie;
mod websocket;

pub use builder::ClientBuilder;
use builder::{tls_builder, with_alpn, Http2};
pub use cookie::{Cookie, CookieJar, SameSite};
use proxy::Hop;
pub use proxy::{Proxy, ProxyError};
pub use response::ClientResponse;
pub use websocket::{HandshakeError, WebSocketBuilder};

/// A body in memory up to this size goes out in the same write as the head.
const COALESCE_MAX: usize = 16 * 1024;

/// How long a request with `Expect: 100-continue` waits for the server's 100 before sending
/// its body anyway (RFC 9110 §10.1.1: not indefinitely).
const CONTINUE_WAIT: Duration = Duration::from_secs(1);

/// How many times an HTTP/2 request the server refused (`REFUSED_STREAM`) is sent again.
const H2_REFUSALS: u32 = 3;

/// Makes requests, reusing connections: a handle to one pool, cheap to clone.
#[derive(Clone)]
pub struct Client {
    inner: Rc<Inner>,
}

/// What the clones of a [`Client`] share.
struct Inner {
    connect_timeout: Duration,
    timeout: Duration,
    idle_timeout: Duration,
    max_idle_per_host: usize,
    redirects: usize,
    limits: Limits,
    http2: Http2,
    /// Ask for codings and decode them, within a limit (`decode`).
    decompress: decode::Decompression,
    /// Where cookies are kept, if they are.
    cookies: Option<CookieJar>,
    /// Which requests go through a proxy (`None`: none do).
    proxy: Option<Proxy>,
    /// The TLS settings: the caller's, or Mozilla's roots (webpki-roots), made on first use.
    tls: OnceCell<Arc<rustls::ClientConfig>>,
    /// Idle HTTP/1 connections per route (origin, or proxy), the most recently used last.
    pool: RefCell<HashMap<Route, Vec<Idle>>>,
    /// The HTTP/2 connection along each route that has one (or is making one), shared by every
    /// request to its origin.
    h2: RefCell<HashMap<Route, Shared>>,
    /// Routes whose server chose HTTP/2 by ALPN when last asked.
    alpn_h2: RefCell<HashSet<Route>>,
}

/// An origin's HTTP/2 connection.
enum Shared {
    Ready {
        send: ::h2::client::SendRequest<Bytes>,
        streams: Rc<Streams>,
    },
    /// Being made, by prior knowledge: requests that come meanwhile wait here to share it
    /// rather than each open their own.
    Connecting(Vec<Waker>),
}

/// Held while a request makes the HTTP/2 connection to an origin: if it ends without one (an
/// error, the request dropped, or HTTP/1 after all), the requests waiting are woken to look
/// again.
struct MakingShared<'a> {
    inner: &'a Inner,
    route: &'a Route,
}

/// A connection for one request.
enum Checkout {
    H1(Conn),
    H2(::h2::client::SendRequest<Bytes>, OnStream),
}

/// Where a request goes: scheme, host and port (RFC 9110 §4.3.1).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Origin {
    https: bool,
    /// The host as in the URL (a name or an address, without brackets); shared, so that a
    /// [`Route`] made from it costs no allocation.
    host: Arc<str>,
    port: u16,
}

/// How a connection reaches an origin, and the key it is pooled under: two requests share a
/// connection only if their routes are equal.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Route {
    Direct(Origin),
    /// To a forward proxy, which takes `http` requests in absolute-form for any origin: one
    /// pool for them all.
    Forward(Arc<Hop>),
    /// Through a `CONNECT` tunnel the proxy opened to this origin, which it alone uses.
    Tunnel(Arc<Hop>, Origin),
}

impl Route {
    /// Whether the connection speaks TLS (end to end with the origin, through any tunnel).
    fn https(&self) -> bool {
        match self {
            Route::Direct(origin) | Route::Tunnel(_, origin) => origin.https,
            Route::Forward(_) => false,
        }
    }
}

struct Idle {
    conn: Conn,
    since: Instant,
}

impl Client {
    /// A client with the defaults of [`ClientBuilder`].
    pub fn new() -> Client {
        ClientBuilder::default().build()
    }

    /// Settings for a client.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }

    /// A `GET` request to `url` (`http://` or `https://`).
    pub fn get(&self, url: &str) -> RequestBuilder {
        self.request(Method::GET, url)
    }

    /// A `POST` request to `url`.
    pub fn post(&self, url: &str) -> RequestBuilder {
        self.request(Method::POST, url)
    }

    /// A `PUT` request to `url`.
    pub fn put(&self, url: &str) -> RequestBuilder {
        self.request(Method::PUT, url)
    }

    /// A `DELETE` request to `url`.
    pub fn delete(&self, url: &str) -> RequestBuilder {
        self.request(Method::DELETE, url)
    }

    /// A request with any method to `url`.
    pub fn request(&self, method: Method, url: &str) -> RequestBuilder {
        RequestBuilder {
            client: self.clone(),
            method,
            target: Target::parse(url).map(|t| self.inner.routed(t)),
            headers: HeaderMap::new(),
            body: Body::empty(),
        }
    }

    /// The jar the client keeps cookies in, if it does ([`ClientBuilder::cookies`],
    /// [`ClientBuilder::cookie_jar`]).
    pub fn cookie_jar(&self) -> Option<&CookieJar> {
        self.inner.cookies.as_ref()
    }

    /// Connections kept for reuse, over all origins: idle HTTP/1 ones and HTTP/2 ones.
    pub fn idle_connections(&self) -> usize {
        let h1: usize = self.inner.pool.borrow().values().map(Vec::len).sum();
        let h2 = self.inner.h2.borrow();
        h1 + h2
            .values()
            .filter(|s| matches!(s, Shared::Ready { .. }))
            .count()
    }
}

impl Default for Client {
    fn default() -> Self {
        Client::new()
    }
}

impl Inner {
    fn tls(&self) -> Arc<rustls::ClientConfig> {
        let config = self.tls.get_or_init(|| {
            let roots = rustls::RootCertStore {
                roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
            };
            let config = tls_builder()
                .with_root_certificates(roots)
                .with_no_client_auth();
            with_alpn(&config, self.http2)
        });
        config.clone()
    }

    /// A connection along `route` for one request, and whether it was kept from before: the
    /// route's HTTP/2 connection, a pooled HTTP/1 one that is still usable, or a new one.
    async fn checkout(self: &Rc<Self>, route: &Route) -> io::Result<(Checkout, bool)> {
        if let Some((send, claim)) = poll_fn(|cx| self.poll_shared(route, cx)).await {
            return Ok((Checkout::H2(send, claim), true));
        }
        let now = volt_rt::time::now();
        while let Some(mut idle) = self.take_idle(route) {
            if now.duration_since(idle.since) < self.idle_timeout && idle.conn.is_reusable() {
                return Ok((Checkout::H1(idle.conn), true));
            }
        }
        let tls = route.https().then(|| self.tls());
        // A forward proxy is spoken to in HTTP/1.1, whatever the client's settings.
        let forward = matches!(route, Route::Forward(_));
        let prior_knowledge = self.http2 == Http2::PriorKnowledge && !forward;
        // Requests that come while the connection is made wait to share it if it is to be
        // HTTP/2: by prior knowledge, or because the server chose it by ALPN before.
        let sharing = prior_knowledge || self.alpn_h2.borrow().contains(route);
        let _making = sharing.then(|| {
            let waiting = Shared::Connecting(Vec::new());
            self.h2.borrow_mut().insert(route.clone(), waiting);
            MakingShared { inner: self, route }
        });
        let connecting = Conn::connect(
            route.clone(),
            tls,
            prior_knowledge,
            self.connect_timeout,
            &self.limits,
        );
        Ok(match connecting.await? {
            Connected::H1(conn) => {
                self.alpn_h2.borrow_mut().remove(route);
                (Checkout::H1(conn), false)
            }
            Connected::H2(opened) => {
                let (send, connection) = *opened;
                if route.https() && !prior_knowledge {
                    self.alpn_h2.borrow_mut().insert(route.clone());
                }
                let streams = Streams::new();
                let claim = streams.claim();
                self.drive_h2(route, connection, &streams);
                let shared = Shared::Ready {
                    send: send.clone(),
                    streams,
                };
                let before = self.h2.borrow_mut().insert(route.clone(), shared);
                if let Some(Shared::Connecting(waiting)) = before {
                    waiting.into_iter().for_each(Waker::wake);
                }
                (Checkout::H2(send, claim), false)
            }
        })
    }

    /// Runs a new HTTP/2 connection, which the client forgets once it has been idle for
    /// `idle_timeout` (at once with `max_idle_per_host` 0), or has ended.
    fn drive_h2(
        self: &Rc<Self>,
        route: &Route,
        connection: ::h2::client::Connection<conn::Stream, Bytes>,
        streams: &Rc<Streams>,
    ) {
        let idle_timeout = self.h2_idle_timeout();
        let (client, route, this) = (Rc::downgrade(self), route.clone(), streams.clone());
        http2::drive(connection, streams.clone(), idle_timeout, move || {
            let Some(client) = client.upgrade() else {
                return;
            };
            let mut h2 = client.h2.borrow_mut();
            // The origin may have a newer connection by now: that one stays.
            if let Some(Shared::Ready { streams, .. }) = h2.get(&route) {
                if Rc::ptr_eq(streams, &this) {
                    h2.remove(&route);
                }
            }
        });
    }

    /// The origin's HTTP/2 connection (`None` if it has none), once it is made if a request
    /// is making it.
    fn poll_shared(
        &self,
        route: &Route,
        cx: &mut Context<'_>,
    ) -> Poll<Option<(::h2::client::SendRequest<Bytes>, OnStream)>> {
        let mut h2 = self.h2.borrow_mut();
        match h2.get_mut(route) {
            Some(Shared::Ready { streams, .. })
                if streams.idle_for(self.h2_idle_timeout(), volt_rt::time::now()) =>
            {
                // Idle too long, and its driver has not run since (or its timer would have
                // made it forget the connection): not to be used.
                h2.remove(route);
                Poll::Ready(None)
            }
            Some(Shared::Ready { send, streams }) => {
                Poll::Ready(Some((send.clone(), streams.claim())))
            }
            Some(Shared::Connecting(waiting)) => {
                waiting.push(cx.waker().clone());
                Poll::Pending
            }
            None => Poll::Ready(None),
        }
    }

    /// How long an HTTP/2 connection with no stream open is kept: as an idle HTTP/1 one, and
    /// not at all if the pool keeps none.
    fn h2_idle_timeout(&self) -> Duration {
        match self.max_idle_per_host {
            0 => Duration::ZERO,
            _ => self.idle_timeout,
        }
    }

    /// Forgets the origin's HTTP/2 connection, found gone; one being made stays.
    fn forget_shared(&self, route: &Route) {
        let mut h2 = self.h2.borrow_mut();
        if let Some(Shared::Ready { .. }) = h2.get(route) {
            h2.remove(route);
        }
    }

    /// `target` going through the proxy set for it, if any (with none set, as it is).
    fn routed(&self, mut target: Target) -> Target {
        if let Some(route) = self.proxied(&target.origin, false) {
            target.route = route;
        }
        target
    }

    /// The route through the proxy set for `origin`, if any: a tunnel for `https` (and
    /// whenever `tunnel` asks, as for WebSockets), absolute-form requests for `http`.
    fn proxied(&self, origin: &Origin, tunnel: bool) -> Option<Route> {
        let hop = self.proxy.as_ref()?.for_origin(origin)?.clone();
        Some(match origin.https || tunnel {
            true => Route::Tunnel(hop, origin.clone()),
            false => Route::Forward(hop),
        })
    }

    fn take_idle(&self, route: &Route) -> Option<Idle> {
        self.pool.borrow_mut().get_mut(route)?.pop()
    }

    /// Keeps a connection whose exchange ended cleanly, if the pool has room for it.
    fn give_back(&self, conn: Conn) {
        let mut pool = self.pool.borrow_mut();
        let idle = pool.entry(conn.route.clone()).or_default();
        let now = volt_rt::time::now();
        // Connections idle too long are dropped here too, not only when next asked for.
        idle.retain(|i| now.duration_since(i.since) < self.idle_timeout);
        if idle.len() < self.max_idle_per_host {
            idle.push(Idle { conn, since: now });
        }
    }
}

impl Drop for MakingShared<'_> {
    fn drop(&mut self) {
        let mut h2 = self.inner.h2.borrow_mut();
        if let Some(Shared::Connecting(_)) = h2.get(self.route) {
            if let Some(Shared::Connecting(waiting)) = h2.remove(self.route) {
                waiting.into_iter().for_each(Waker::wake);
            }
        }
    }
}

/// A request being put together; [`send`](RequestBuilder::send) sends it.
#[derive(Debug)]
pub struct RequestBuilder {
    client: Client,
    method: Method,
    /// The request's target, or the first mistake made putting the request together.
    target: io::Result<Target>,
    headers: HeaderMap,
    body: Body,
}

/// A parsed URL: where to connect, and what to ask for.
#[derive(Debug)]
struct Target {
    origin: Origin,
    /// How requests to it go: directly unless a proxy is set ([`Inner::routed`]).
    route: Route,
    /// The `Host` field: the URL's authority.
    authority: String,
    /// The origin-form request target: path and query.
    path: String,
}

impl Target {
    fn parse(url: &str) -> io::Result<Target> {
        let uri: Uri = url
            .parse()
            .map_err(|e| invalid_input(format!("bad URL `{url}`: {e}")))?;
        let https = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            _ => return Err(invalid_input(format!("`{url}`: not an http or https URL"))),
        };
        let authority = uri
            .authority()
            .ok_or_else(|| invalid_input("the URL has no host"))?;
        if authority.as_str().contains('@') {
            return Err(invalid_input("user information in a URL is not supported"));
        }
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']');
        let port = authority.port_u16().unwrap_or(if https { 443 } else { 80 });
        // `uri.path()` is `/` when empty: `http://host?q` asks for `/?q` (RFC 9112 §3.2.1).
        let path = match uri.query() {
            Some(query) => format!("{}?{query}", uri.path()),
            None => uri.path().to_owned(),
        };
        let origin = Origin {
            https,
            host: host.into(),
            port,
        };
        Ok(Target {
            route: Route::Direct(origin.clone()),
            origin,
            authority: authority.as_str().to_owned(),
            path,
        })
    }
}

impl RequestBuilder {
    /// Adds a header field. `Host`, `Content-Length` and `Transfer-Encoding` are the client's
    /// to set (from the URL and the body) and are refused here.
    pub fn header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        if [HOST, CONTENT_LENGTH, TRANSFER_ENCODING].contains(&name) {
            self.target = Err(invalid_input(format!("`{name}` is set by the client")));
        } else {
            self.headers.append(name, value);
        }
        self
    }

    /// The body: in memory (sent with `Content-Length`), or a [`Body::stream`] or
    /// [`Body::channel`] (sent chunked, or with `Content-Length` for [`Body::sized_stream`]).
    pub fn body(mut self, body: impl Into<Body>) -> Self {
        self.body = body.into();
        self
    }

    /// `value` serialized as the JSON body, with `Content-Type: application/json`.
    pub fn json<T: Serialize + ?Sized>(mut self, value: &T) -> Self {
        match serde_json::to_vec(value) {
            Ok(json) => {
                let json_type = HeaderValue::from_static("application/json");
                self.headers.insert(CONTENT_TYPE, json_type);
                self.body = Body::from(json);
            }
            Err(e) => self.target = Err(invalid_input(format!("serializing the body: {e}"))),
        }
        self
    }

    /// Sends the request and waits for the response head; the body is read from the
    /// [`ClientResponse`].
    ///
    /// A request that went out on a pooled connection the server had meanwhile closed, and got
    /// no byte of answer, is sent again on a new connection, if its method is idempotent and
    /// its body in memory (RFC 9110 §9.2.2).
    ///
    /// Redirects are followed (up to [`ClientBuilder::redirects`], 10 by default) as RFC
    /// 9110 §15.4 says: 301 and 302 turn a POST into a GET without its body, 303 asks for a GET
    /// (HEAD stays HEAD), 307 and 308 send the same request again; a request whose body is a
    /// stream cannot go again, so its 307/308 (or 301/302 for methods other than POST) is
    /// returned as it is. `Authorization`, `Proxy-Authorization` and `Cookie` are dropped when
    /// a redirect leads to another origin. With a cookie jar, every response's `Set-Cookie`
    /// (a redirect's too) is stored, and each request, every hop of a redirect included,
    /// carries the jar's cookies for its URL.
    ///
    /// # Errors
    ///
    /// `InvalidInput` for a bad URL or header, the connection's errors, `TimedOut` after the
    /// builder's timeouts, `InvalidData` for a malformed response head, `UnexpectedEof` when
    /// the server closed without answering, `Other` after too many redirects.
    pub async fn send(self) -> io::Result<ClientResponse> {
        let RequestBuilder {
            client,
            mut method,
            target,
            mut headers,
            mut body,
        } = self;
        let mut target = target?;
        let decode = decode::ask(&mut headers, client.inner.decompress.on);
        let mut redirects = 0;
        loop {
            let again = body.as_bytes().filter(|_| body.trailers.is_none()).cloned();
            let sent_body = !body.is_empty();
            let inner = &client.inner;
            let response = match &inner.cookies {
                None => send_once(inner, &method, &target, &headers, body).await?,
                Some(jar) => {
                    let with_cookies = jar.request_headers(&headers, &target);
                    let response = send_once(inner, &method, &target, &with_cookies, body).await?;
                    // Before a redirect is followed: it may set what the next request sends.
                    jar.store_response(&target, response.headers());
                    response
                }
            };
            let location = response.header("location");
            let status = response.status();
            let head_request = method == Method::HEAD;
            let Some(next) = redirect::next(status, &method, &target, location) else {
                return Ok(response.decoded(decode, head_request));
            };
            let limit = client.inner.redirects;
            if limit == 0 || (next.keeps_body && sent_body && again.is_none()) {
                return Ok(response.decoded(decode, head_request));
            }
            if redirects == limit {
                return Err(io::Error::other(format!("more than {limit} redirects")));
            }
            redirects += 1;
            response.discard().await;
            if next.target.origin != target.origin {
                for name in [AUTHORIZATION, PROXY_AUTHORIZATION, COOKIE] {
                    headers.remove(name);
                }
            }
            body = match (next.keeps_body, again) {
                (true, Some(bytes)) => Body::from(bytes),
                _ => {
                    for name in [
                        CONTENT_TYPE,
                        CONTENT_ENCODING,
                        CONTENT_LANGUAGE,
                        CONTENT_LOCATION,
                    ] {
                        headers.remove(name);
                    }
                    Body::empty()
                }
            };
            (method, target) = (next.method, inner.routed(next.target));
        }
    }
}

/// Sends one request and waits for its response head, on a connection the client keeps or a
/// new one, retrying where that is safe (see [`RequestBuilder::send`]).
async fn send_once(
    inner: &Rc<Inner>,
    method: &Method,
    target: &Target,
    headers: &HeaderMap,
    mut body: Body,
) -> io::Result<ClientResponse> {
    let mut head = Vec::with_capacity(256);
    encode_head(&mut head, method, target, headers, &body);
    let expects = !body.is_empty() && expects_continue(headers);
    let replayable = method.is_idempotent() && body.as_bytes().is_some() && body.trailers.is_none();
    let mut refusals = H2_REFUSALS;
    loop {
        let (mut conn, reused) = match inner.checkout(&target.route).await? {
            (Checkout::H1(conn), reused) => (conn, reused),
            (Checkout::H2(send, claim), reused) => {
                let send = match http2::ready(send, inner.timeout).await {
                    Ok(send) => send,
                    Err(_) if reused => {
                        // Gone (closed, or going away) since its last request, and nothing
                        // was sent on it: any request may go on a new connection.
                        inner.forget_shared(&target.route);
                        continue;
                    }
                    Err(e) => return Err(e),
                };
                // A body in memory can go again if the server refuses the stream.
                let in_memory = body.as_bytes().filter(|_| body.trailers.is_none()).cloned();
                let this_body = match in_memory.clone() {
                    Some(bytes) => Body::from(bytes),
                    None => std::mem::replace(&mut body, Body::empty()),
                };
                let (method, headers) = (method.clone(), headers.clone());
                let exchange = http2::exchange(
                    send,
                    method,
                    target,
                    headers,
                    this_body,
                    expects,
                    inner.timeout,
                );
                match exchange.await {
                    Ok(response) => {
                        return Ok(ClientResponse::from_h2(response, claim, inner.clone()))
                    }
                    // The server processed nothing (RFC 9113 §8.7): as when the first
                    // requests on a connection go out before its SETTINGS limit them.
                    Err(e) if http2::is_refused(&e) && in_memory.is_some() && refusals > 0 => {
                        refusals -= 1;
                        continue;
                    }
                    Err(e) => return Err(e),
                }
            }
        };
        let mut received = false;
        let exchanged = async {
            let sent = write_request(&mut conn, &head, expects, &mut body, inner).await;
            let deadline = volt_rt::time::now() + inner.timeout;
            let head_request = *method == Method::HEAD;
            let read = conn.read_head(&inner.limits, head_request, deadline, &mut received);
            match sent {
                Ok(Sent::Whole) => read.await,
                // The request is unfinished on the wire: the connection ends with this
                // response.
                Ok(Sent::Answered) => read.await.map(Head::last),
                // A server that answers early may close before it reads the rest (the
                // write then fails): its answer is read all the same, if it came.
                Err(e) if is_closed(&e) => read.await.map(Head::last).map_err(|_| e),
                Err(e) => Err(e),
            }
        };
        match exchanged.await {
            Ok(head) => return Ok(ClientResponse::new(head, conn, inner.clone())),
            Err(e) if reused && replayable && !received && e.kind() != io::ErrorKind::TimedOut => {
                continue;
            }
            Err(e) => return Err(e),
        }
    }
}

/// The request line and header fields, and the body's framing fields.
fn encode_head(
    out: &mut Vec<u8>,
    method: &Method,
    target: &Target,
    headers: &HeaderMap,
    body: &Body,
) {
    match &target.route {
        // RFC 9112 §3.2.2: a proxy is asked for the absolute URL.
        Route::Forward(hop) => {
            let url = format!("http://{}{}", target.authority, target.path);
            volt_proto::write_request_line(out, method, url.as_bytes(), Version::HTTP_11);
            if let Some(auth) = &hop.auth {
                volt_proto::write_header(out, b"proxy-authorization", auth.as_bytes());
            }
        }
        _ => volt_proto::write_request_line(out, method, target.path.as_bytes(), Version::HTTP_11),
    }
    volt_proto::write_header(out, b"host", target.authority.as_bytes());
    for (name, value) in headers {
        volt_proto::write_header(out, name.as_str().as_bytes(), value.as_bytes());
    }
    match body.len() {
        // RFC 9110 §8.6: no `Content-Length: 0` where no body is expected.
        Some(0) if !matches!(*method, Method::POST | Method::PUT | Method::PATCH) => {}
        Some(len) if body.trailers.is_none() => volt_proto::write_content_length(out, len),
        _ => volt_proto::write_header(out, b"transfer-encoding", b"chunked"),
    }
    out.extend_from_slice(b"\r\n");
}

/// Writes the head and the body: an in-memory body with the head when small, a stream chunk
/// by chunk as the stream yields them. Stops early if the server answers before the end.
async fn write_request(
    conn: &mut Conn,
    mut head: &[u8],
    expects_continue: bool,
    body: &mut Body,
    inner: &Inner,
) -> io::Result<Sent> {
    let (wait, limits) = (inner.timeout, &inner.limits);
    if expects_continue {
        // RFC 9110 §10.1.1: the head alone; the body once the server says 100 (Continue), or
        // after a while without a word (it may not know the expectation). A final answer
        // first means the server does not want the body.
        if let Sent::Answered = conn.write_all(head, wait, limits).await? {
            return Ok(Sent::Answered);
        }
        if let Sent::Answered = conn.await_continue(CONTINUE_WAIT, limits).await? {
            return Ok(Sent::Answered);
        }
        head = &[];
    }
    let chunked = body.len().is_none() || body.trailers.is_some();
    let mut out = Vec::new();
    let pieces = match &mut body.kind {
        BodyKind::Full(bytes) if !chunked => {
            if bytes.len() <= COALESCE_MAX {
                out.reserve(head.len() + bytes.len());
                out.extend_from_slice(head);
                out.extend_from_slice(bytes);
                return conn.write_all(&out, wait, limits).await;
            }
            if let Sent::Answered = conn.write_all(head, wait, limits).await? {
                return Ok(Sent::Answered);
            }
            return conn.write_all(bytes, wait, limits).await;
        }
        BodyKind::Full(bytes) => {
            out.extend_from_slice(head);
            volt_proto::write_chunk(&mut out, bytes);
            None
        }
        BodyKind::Upgrade(_) => {
            return Err(invalid_input("a WebSocket upgrade is no request body"))
        }
        BodyKind::Stream { stream, len } => {
            if let Sent::Answered = conn.write_all(head, wait, limits).await? {
                return Ok(Sent::Answered);
            }
            Some((stream, *len))
        }
    };
    if let Some((stream, len)) = pieces {
        let mut sent = 0u64;
        while let Some(chunk) = poll_fn(|cx| poll_next_caught(stream, cx)).await {
            let chunk: Bytes = chunk?;
            sent += chunk.len() as u64;
            if len.is_some_and(|len| sent > len) {
                return Err(invalid_input("the body stream ran past its length"));
            }
            let piece = if chunked {
                out.clear();
                volt_proto::write_chunk(&mut out, &chunk);
                &out[..]
            } else {
                &chunk[..]
            };
            if let Sent::Answered = conn.write_all(piece, wait, limits).await? {
                return Ok(Sent::Answered);
            }
        }
        if !chunked && len.is_some_and(|len| sent < len) {
            return Err(invalid_input("the body stream ended before its length"));
        }
        out.clear();
    }
    if !chunked {
        return Ok(Sent::Whole);
    }
    let trailers = body.trailers.take().and_then(|t| t.take());
    volt_proto::write_last_chunk(&mut out, trailers.as_ref());
    conn.write_all(&out, wait, limits).await
}

/// Whether the caller asked for `Expect: 100-continue`.
fn expects_continue(headers: &HeaderMap) -> bool {
    let expect = headers.get_all(http::header::EXPECT).iter();
    expect
        .into_iter()
        .any(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"))
}

/// Whether a write failed because the server closed the connection.
fn is_closed(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset
    )
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("idle_connections", &self.idle_connections())
            .finish_non_exhaustive()
    }
}
