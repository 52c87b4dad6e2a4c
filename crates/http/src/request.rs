//! Requests, and the typed extractors on them: path parameters, query, headers, body.

use std::any::Any;
use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::fmt;
use std::net::SocketAddr;
use std::rc::Rc;
use std::str::FromStr;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use http::{Method, StatusCode, Version};
use serde::de::DeserializeOwned;
use volt_proto::{RequestHead, Span};

use crate::conn::BodyReader;
use crate::h2::H2Body;
use crate::Error;

/// An HTTP request as a handler sees it.
///
/// The head is parsed once, into a buffer the connection reuses from request to request: the
/// request shares it (reference-counted) and holds byte ranges for the target and header
/// fields, nothing is parsed into owned strings.
/// Accessors return borrowed `&str`/`&[u8]`; extractors ([`Request::param`],
/// [`Request::query`], [`Request::json`], ...) parse into your types and answer 400 with a
/// message naming what was wrong.
pub struct Request {
    /// The head, shared with the connection, which parses every request into the same
    /// allocation and takes it back (`Rc::get_mut`) once the handler has dropped the request:
    /// no allocation and no move of the ~300-byte head per request, and a request that moves
    /// on its way into a handler's future is 56 bytes.
    p: Rc<Parts>,
    params: Option<Params>,
    state: Option<SharedState>,
    /// Values middleware attached for the handler. In an `Rc`, not as a plain
    /// `http::Extensions` or a `Box` of one: dropping those took an out-of-line call wherever
    /// a request may be dropped, ~20 instructions a request (callgrind, keep-alive plaintext),
    /// where `Rc`'s drop is an inlined null test.
    extensions: Option<Rc<http::Extensions>>,
    body: RequestBody,
}

/// What a request reads from the connection: the head's bytes and where things are in them.
#[derive(Default)]
pub(crate) struct Parts {
    /// A copy of the head's bytes (the spans of `parsed` point into them), in a buffer reused
    /// from request to request. Copying ~200 bytes is cheaper than splitting them off the
    /// read buffer as a shared `Bytes` (which also turns the read buffer into a shared one).
    pub(crate) head: Vec<u8>,
    pub(crate) parsed: RequestHead,
    /// Start of the path within the target: the target's start, or past `scheme://authority`
    /// in the absolute form. Found once here, not each time the path is asked for (the router
    /// asks for every request).
    pub(crate) path_start: u32,
    /// End of the path within the target (where `?` is, or the target's end).
    pub(crate) path_end: u32,
    pub(crate) remote_addr: Option<SocketAddr>,
}

thread_local! {
    /// The request head given back last, kept apart: one batch after another takes and gives
    /// back one head, found here without a `RefCell` or a `Vec`. An idle connection holds
    /// none.
    static LAST_PARTS: Cell<Option<Rc<Parts>>> = const { Cell::new(None) };
    /// The other request heads of finished batches, for the next batches on this worker.
    static SPARE_PARTS: RefCell<Vec<Rc<Parts>>> = const { RefCell::new(Vec::new()) };
}

thread_local! {
    /// The address this worker's listener is bound to ([`Request::local_addr`]); set when the
    /// worker starts.
    static LISTEN_ADDR: Cell<Option<SocketAddr>> = const { Cell::new(None) };
}

/// Records the address of the listener the current worker serves (see [`Request::local_addr`]).
pub(crate) fn set_listen_addr(addr: SocketAddr) {
    LISTEN_ADDR.set(Some(addr));
}

/// Most spare heads a worker keeps besides [`LAST_PARTS`].
const SPARE_PARTS_MAX: usize = 64;
/// Largest head buffer a spare head keeps.
const SPARE_HEAD_MAX: usize = 4 * 1024;

/// A head to parse a batch's requests into, from this worker's spares (one batch after another
/// takes and gives back one: still in the cache).
pub(crate) fn take_parts() -> Rc<Parts> {
    LAST_PARTS.take().unwrap_or_else(|| {
        SPARE_PARTS
            .with(|spare| spare.borrow_mut().pop())
            .unwrap_or_default()
    })
}

/// Gives a batch's head back to this worker's spares.
pub(crate) fn give_parts(mut parts: Rc<Parts>) {
    // Only a head no request holds any more, and not an unusually large one.
    let Some(p) = Rc::get_mut(&mut parts) else {
        return;
    };
    if p.head.capacity() > SPARE_HEAD_MAX {
        p.head = Vec::new();
    }
    if let Some(before) = LAST_PARTS.replace(Some(parts)) {
        SPARE_PARTS.with(|spare| {
            let mut spare = spare.borrow_mut();
            if spare.len() < SPARE_PARTS_MAX {
                spare.push(before);
            }
        });
    }
}

impl Parts {
    /// Completes parts whose `parsed` was just filled in by the codec from `head`.
    ///
    /// Inlined into the loop over the requests: out of line (where the word-wise search of
    /// [`find_query`] left it) it cost a call and the registers it saved, pipelined 1,495 ->
    /// 1,482 Ir/request.
    #[inline(always)]
    pub(crate) fn finish(&mut self, head: &[u8], remote_addr: Option<SocketAddr>) {
        let target = self.parsed.target;
        let bytes = target.get(head);
        let path_len = find_query(bytes).unwrap_or(bytes.len());
        self.path_end = target.start + path_len as u32;
        self.path_start = match bytes.first() {
            Some(b'/') => target.start,
            _ => self.not_origin_form(head, path_len),
        };
        self.head.clear();
        self.head.extend_from_slice(head);
        self.remote_addr = remote_addr;
    }
}

impl Parts {
    /// Where the path starts in a target that is not in the origin form: past
    /// `scheme://authority` in the absolute form, which a server must accept (RFC 9112
    /// §3.2.2), else at the target's start (`*`, CONNECT's authority). An absolute-form
    /// target's authority is the request's host, and the `Host` field is ignored (the same
    /// section): its value is made the authority, so every view of the host a handler has
    /// ([`Request::host`], the `Host` header, the target) says the same.
    #[cold]
    #[inline(never)]
    fn not_origin_form(&mut self, head: &[u8], path_len: usize) -> u32 {
        let target = self.parsed.target;
        // Only the part before the query can be `scheme://authority`: in `foo?to=http://x/y`
        // the `://` is data, and a path found past it would start after the path's end.
        let before_query = &target.get(head)[..path_len];
        let authority = match volt_proto::absolute_authority(before_query) {
            Some(authority) if self.parsed.method != Method::CONNECT => authority,
            _ => return target.start,
        };
        let authority_span = Span {
            start: target.start + authority.start as u32,
            end: target.start + authority.end as u32,
        };
        for field in &mut self.parsed.headers {
            if field.name.get(head).eq_ignore_ascii_case(b"host") {
                field.value = authority_span;
            }
        }
        authority_span.end
    }
}

/// Where the first `?` of a target is: eight bytes at a time (four for a target shorter than
/// eight), each word tested for a `?` with the zero-byte trick, the last one overlapping the
/// one before. A byte-by-byte search cost ~5 instructions a byte: ~50 for `/plaintext`.
#[inline]
fn find_query(target: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    const QUERY: u64 = u64::from_ne_bytes([b'?'; 8]);
    // The index of the first `?` in `word` (bytes in memory order: a little-endian word's
    // low end first), read from `at`. The trick's borrow can flag a byte after a `?` but never
    // one before it, so the lowest flag is exact. A four-byte word's high half is zero, no `?`,
    // so it flags nothing.
    let first = |word: u64, at: usize| {
        let word = word ^ QUERY;
        let flags = word.wrapping_sub(ONES) & !word & HIGH;
        (flags != 0).then(|| at + (flags.trailing_zeros() / 8) as usize)
    };
    let word8 = |at: usize| u64::from_le_bytes(target[at..at + 8].try_into().expect("8 bytes"));
    let word4 = |at: usize| {
        u64::from(u32::from_le_bytes(
            target[at..at + 4].try_into().expect("4 bytes"),
        ))
    };
    let n = target.len();
    match n {
        0..4 => target.iter().position(|&b| b == b'?'),
        4..8 => first(word4(0), 0).or_else(|| first(word4(n - 4), n - 4)),
        _ => {
            let mut at = 0;
            while at + 8 < n {
                if let Some(i) = first(word8(at), at) {
                    return Some(i);
                }
                at += 8;
            }
            first(word8(n - 8), n - 8)
        }
    }
}

/// An extended CONNECT's `:protocol`, kept with the request's extensions: the requests without
/// one (all others) pay nothing for it.
#[derive(Clone, Debug)]
pub(crate) struct ConnectProtocol {
    pub(crate) protocol: Box<str>,
    /// Its `:scheme` (which plain CONNECT has not).
    pub(crate) scheme: Box<str>,
}

/// The path parameters of the route a request matched.
pub(crate) type Params = Arc<[Param]>;

/// A router's state: an `Arc<T>` in a box, behind an `Arc` of its own so that the request
/// holds one thin pointer to it (an `Arc<dyn Any>` is two words). That keeps a request at 56
/// bytes with its extensions: at 64, moving it into the handler's future cost ~20
/// instructions more a request (callgrind, keep-alive plaintext).
pub(crate) type SharedState = Arc<Box<dyn Any + Send + Sync>>;

/// A path parameter of a route: its name and which segment of the path is its value (counted
/// from 0 after the leading `/`), or starts it for a catch-all, whose value is the rest of the
/// path. A route's segments match a path's one to one, so the values are found in the path
/// when asked for, and the router records nothing per request.
pub(crate) struct Param {
    name: Box<str>,
    segment: usize,
    rest: bool,
}

impl Param {
    pub(crate) fn new(name: &str, segment: usize, rest: bool) -> Param {
        Param {
            name: name.into(),
            segment,
            rest,
        }
    }

    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The value of this parameter in `path` (a path its route matched).
    fn value<'p>(&self, path: &'p str) -> &'p str {
        let start = path
            .match_indices('/')
            .nth(self.segment)
            .map_or(path.len(), |(i, _)| i + 1);
        let value = &path[start..];
        match value.split_once('/') {
            Some((segment, _)) if !self.rest => segment,
            _ => value,
        }
    }
}

impl Request {
    /// A request whose head the connection filled into `p` (HTTP/1 parses into it, HTTP/2
    /// copies its decoded fields in).
    pub(crate) fn from_parts(p: Rc<Parts>, body: RequestBody) -> Request {
        Request {
            p,
            params: None,
            state: None,
            extensions: None,
            body,
        }
    }

    /// Gives the request what the router knows of it: the parameters of the route it
    /// matched, and the router's state. A request gets them once, fresh from the connection
    /// with neither, so there is nothing to drop first, and a route with no parameters (the
    /// usual one) and a router without state cost a test each.
    #[inline]
    pub(crate) fn set_route(&mut self, params: &Option<Params>, state: &Option<SharedState>) {
        debug_assert!(self.params.is_none() && self.state.is_none());
        if let Some(params) = params {
            self.params = Some(params.clone());
        }
        if let Some(state) = state {
            self.state = Some(state.clone());
        }
    }

    /// The method.
    pub fn method(&self) -> &Method {
        &self.p.parsed.method
    }

    /// The protocol version.
    pub fn version(&self) -> Version {
        self.p.parsed.version
    }

    /// The `:protocol` of an extended CONNECT (HTTP/2's RFC 8441 §4, HTTP/3's RFC 9220):
    /// `Some("websocket")` for a WebSocket opened over HTTP/2 or HTTP/3; `None` for every
    /// other request.
    pub fn protocol(&self) -> Option<&str> {
        self.extension::<ConnectProtocol>().map(|p| &*p.protocol)
    }

    /// The request target as sent (path and query, undecoded).
    pub fn target(&self) -> &str {
        // The parser accepts only visible ASCII in the target.
        std::str::from_utf8(self.p.parsed.target.get(&self.p.head)).unwrap_or("")
    }

    /// The path, without the query (undecoded). An absolute-form target without a path
    /// (`http://host` or `http://host?q`) has the path `/` (RFC 9110 §4.2.3).
    pub fn path(&self) -> &str {
        std::str::from_utf8(self.path_bytes()).unwrap_or("")
    }

    /// The path's bytes (`/` for an empty path). The router matches on these, without a UTF-8
    /// check.
    pub(crate) fn path_bytes(&self) -> &[u8] {
        match &self.p.head[self.p.path_start as usize..self.p.path_end as usize] {
            b"" => b"/",
            path => path,
        }
    }

    /// The query string after `?`, if any (undecoded).
    pub fn query_string(&self) -> Option<&str> {
        if self.p.path_end == self.p.parsed.target.end {
            return None;
        }
        let span = Span {
            start: self.p.path_end + 1,
            end: self.p.parsed.target.end,
        };
        std::str::from_utf8(span.get(&self.p.head)).ok()
    }

    /// The request's host (`host[:port]`, as sent): on HTTP/1 an absolute-form target's
    /// authority (`GET http://example.com/x`; the `Host` field is then ignored, RFC 9112
    /// §3.2.2, and [`Request::header`]`("host")` says the authority too), else the `Host`
    /// field; on HTTP/2 `:authority` (or `host`). `None` if the request names none (HTTP/1.0
    /// without `Host`).
    pub fn host(&self) -> Option<&str> {
        let host = self.p.parsed.host(&self.p.head)?;
        std::str::from_utf8(host).ok()
    }

    /// The peer's address.
    pub fn remote_addr(&self) -> Option<SocketAddr> {
        self.p.remote_addr
    }

    /// The address the server took this request's connection on, as its listener is bound: the
    /// port is the one the client connected to; the IP is the bound one, so a server bound to
    /// `0.0.0.0` gives `0.0.0.0`. `None` outside a [`Server`](crate::Server)'s worker.
    ///
    /// Kept per worker thread, not per connection: the HTTP/1 loop fills the request head in
    /// its hot path, which this costs nothing (a request never leaves its worker's thread).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        LISTEN_ADDR.get()
    }

    /// The raw value of header `name` (case-insensitive; the first if repeated).
    pub fn header_bytes(&self, name: &str) -> Option<&[u8]> {
        self.p
            .parsed
            .headers
            .iter()
            .find(|h| {
                h.name
                    .get(&self.p.head)
                    .eq_ignore_ascii_case(name.as_bytes())
            })
            .map(|h| h.value.get(&self.p.head))
    }

    /// The value of header `name` as text; `None` if absent or not valid UTF-8.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.header_bytes(name)
            .and_then(|v| std::str::from_utf8(v).ok())
    }

    /// Header `name` parsed as `T`: `Ok(None)` if absent, 400 if it does not parse.
    pub fn typed_header<T: FromStr>(&self, name: &str) -> Result<Option<T>, Error>
    where
        T::Err: fmt::Display,
    {
        match self.header_bytes(name) {
            None => Ok(None),
            Some(raw) => std::str::from_utf8(raw)
                .map_err(|e| e.to_string())
                .and_then(|s| s.trim().parse::<T>().map_err(|e| e.to_string()))
                .map(Some)
                .map_err(|e| Error::bad_request(format!("invalid header `{name}`: {e}"))),
        }
    }

    /// Every header field in order, as `(name, value)`.
    pub fn headers(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.p.parsed.headers.iter().map(|h| {
            (
                std::str::from_utf8(h.name.get(&self.p.head)).unwrap_or(""),
                h.value.get(&self.p.head),
            )
        })
    }

    /// The path parameter `name` (from a route such as `/users/{id}`), percent-decoded and
    /// parsed as `T`. A value that does not parse answers 400 naming the parameter.
    ///
    /// A `{name}` parameter is one segment of the path as sent, so an encoded slash (`%2F`)
    /// is in its value, a `/`. A catch-all's value is a relative path, ready to join onto a
    /// directory: one with a `..` segment or a leading `/`, after decoding, answers 400
    /// ([`Request::raw_param`] still has it as sent).
    ///
    /// # Panics
    /// If the matched route has no parameter `name` (a programming error: the route and the
    /// handler disagree).
    pub fn param<T: FromStr>(&self, name: &str) -> Result<T, Error>
    where
        T::Err: fmt::Display,
    {
        let param = self
            .find_param(name)
            .unwrap_or_else(|| panic!("the matched route has no path parameter `{name}`"));
        let invalid = |why: &dyn fmt::Display| {
            Error::bad_request(format!("invalid path parameter `{name}`: {why}"))
        };
        let decoded = percent_decode(param.value(self.path()))
            .ok_or_else(|| invalid(&"bad percent-encoding"))?;
        // RFC 3986 §5.2.4 removes dot segments when a client resolves a reference; a server
        // may do as it likes with the ones a client sends anyway. Refusing them here keeps a
        // file server built on a catch-all inside its directory.
        if param.rest {
            if decoded.split('/').any(|s| s == "..") {
                return Err(invalid(&"`..` segment"));
            }
            if decoded.starts_with('/') {
                return Err(invalid(&"absolute path"));
            }
        }
        decoded.parse::<T>().map_err(|e| invalid(&e))
    }

    /// The path parameter `name` as sent (not decoded), if the route has it.
    pub fn raw_param(&self, name: &str) -> Option<&str> {
        Some(self.find_param(name)?.value(self.path()))
    }

    /// The value of the matched route's catch-all parameter as sent (not decoded), if the
    /// route ends in one: what a service mounted on it serves, whatever the parameter's name.
    pub(crate) fn catch_all_raw(&self) -> Option<&str> {
        let param = self.params.as_ref()?.iter().find(|p| p.rest)?;
        Some(param.value(self.path()))
    }

    fn find_param(&self, name: &str) -> Option<&Param> {
        self.params.as_ref()?.iter().find(|p| &*p.name == name)
    }

    /// The query string deserialized into `T` (`application/x-www-form-urlencoded` rules). A
    /// missing or malformed field answers 400 with serde's message.
    pub fn query<T: DeserializeOwned>(&self) -> Result<T, Error> {
        serde_urlencoded::from_str(self.query_string().unwrap_or(""))
            .map_err(|e| Error::bad_request(format!("invalid query string: {e}")))
    }

    /// The shared state registered with [`Router::state`](crate::Router::state).
    ///
    /// # Panics
    /// If no state of type `T` was registered (a programming error).
    pub fn state<T: Send + Sync + 'static>(&self) -> Arc<T> {
        self.state
            .as_ref()
            .and_then(|s| s.downcast_ref::<Arc<T>>())
            .cloned()
            .unwrap_or_else(|| {
                panic!(
                    "no router state of type {}: register it with Router::state",
                    std::any::type_name::<T>()
                )
            })
    }

    /// The value of type `T` attached to this request on its way in with
    /// [`insert_extension`](Self::insert_extension): what a [`wrap`](crate::wrap) function
    /// found out (the authenticated user, a request id) for the handler.
    pub fn extension<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.extensions.as_ref()?.get::<T>()
    }

    /// Attaches `value` to this request, replacing (and returning) one of the same type, for
    /// the handler to read with [`extension`](Self::extension).
    pub fn insert_extension<T: Clone + Send + Sync + 'static>(&mut self, value: T) -> Option<T> {
        Rc::make_mut(self.extensions.get_or_insert_default()).insert(value)
    }

    /// The body, to read as a stream of chunks.
    pub fn body_mut(&mut self) -> &mut RequestBody {
        &mut self.body
    }

    /// Whether the request came without a body (no `Content-Length`, no `Transfer-Encoding`).
    pub(crate) fn body_is_empty(&self) -> bool {
        matches!(self.body.kind, RequestBodyKind::Empty)
    }

    /// Whether the client ended its stream with the head, as far as is known yet (an HTTP/3
    /// stream's FIN comes apart from its HEADERS): nothing more can come on it.
    pub(crate) fn stream_ended(&self) -> bool {
        match &self.body.kind {
            RequestBodyKind::Empty => true,
            RequestBodyKind::H3(body) => body.ended(),
            _ => false,
        }
    }

    /// The whole body. Bodies over the server's limit answer 413.
    pub async fn bytes(&mut self) -> Result<Bytes, Error> {
        self.body.collect().await
    }

    /// The whole body as UTF-8 text; 400 if it is not UTF-8.
    pub async fn text(&mut self) -> Result<String, Error> {
        let bytes = self.bytes().await?;
        String::from_utf8(bytes.to_vec())
            .map_err(|_| Error::bad_request("request body is not valid UTF-8"))
    }

    /// The body deserialized from JSON; 400 with serde's message if it does not fit `T`, 415
    /// if `Content-Type` is present and not JSON.
    pub async fn json<T: DeserializeOwned>(&mut self) -> Result<T, Error> {
        if let Some(ct) = self.header_bytes("content-type") {
            // A value that is not UTF-8 is no JSON media type either: a 415 like any other,
            // not taken for an absent header.
            let ct = String::from_utf8_lossy(ct);
            let essence = ct.split(';').next().unwrap_or("").trim();
            // Media types are case-insensitive (RFC 9110 §8.3.1), the `+json` suffix too.
            let suffixed = essence.len() > 5
                && essence.as_bytes()[essence.len() - 5..].eq_ignore_ascii_case(b"+json");
            if !essence.eq_ignore_ascii_case("application/json") && !suffixed {
                return Err(Error::new(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    format!("expected an application/json body, got `{essence}`"),
                ));
            }
        }
        let bytes = self.bytes().await?;
        serde_json::from_slice(&bytes)
            .map_err(|e| Error::bad_request(format!("invalid JSON body: {e}")))
    }
}

impl fmt::Debug for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Request")
            .field("method", &self.p.parsed.method)
            .field("target", &self.target())
            .field("version", &self.p.parsed.version)
            .finish_non_exhaustive()
    }
}

/// A request body's next piece on HTTP/2 and HTTP/3, where the body comes in frames the
/// connection queues: `next` must give it within `timeout` (else 408), and the body may come
/// to at most `max` bytes in all, counted in `received` (else 413).
pub(crate) async fn bounded_piece(
    next: impl std::future::Future<Output = Result<Option<Bytes>, Error>>,
    timeout: std::time::Duration,
    received: &mut u64,
    max: u64,
) -> Result<Option<Bytes>, Error> {
    match volt_rt::time::timeout(timeout, next).await {
        Err(_) => Err(Error::new(
            StatusCode::REQUEST_TIMEOUT,
            "request body took too long",
        )),
        Ok(Ok(Some(data))) => {
            *received += data.len() as u64;
            if *received > max {
                return Err(Error::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!("request body is over the limit of {max} bytes"),
                ));
            }
            Ok(Some(data))
        }
        Ok(other) => other,
    }
}

/// A request body, read chunk by chunk as it arrives from the client.
///
/// Nothing is read from the socket until the handler asks, so a slow handler slows the client
/// down (TCP backpressure) instead of buffering. `Expect: 100-continue` is answered on the first
/// read, unless the response went first (a streamed response reading the body: the final
/// status tells the client to send it). A body the handler leaves unread is drained after the response (or the connection is
/// closed if it is large), never mistaken for the next request.
pub struct RequestBody {
    kind: RequestBodyKind,
}

enum RequestBodyKind {
    Empty,
    /// Boxed, as it is rare (tests and adapters): the usual request is smaller to move.
    Full(Box<Option<Bytes>>),
    H1(Rc<BodyReader>),
    H2(Box<H2Body>),
    H3(Box<crate::h3::H3Body>),
}

impl RequestBody {
    pub(crate) fn empty() -> RequestBody {
        RequestBody {
            kind: RequestBodyKind::Empty,
        }
    }

    pub(crate) fn h1(reader: Rc<BodyReader>) -> RequestBody {
        RequestBody {
            kind: RequestBodyKind::H1(reader),
        }
    }

    pub(crate) fn h2(body: H2Body) -> RequestBody {
        RequestBody {
            kind: RequestBodyKind::H2(Box::new(body)),
        }
    }

    pub(crate) fn h3(body: crate::h3::H3Body) -> RequestBody {
        RequestBody {
            kind: RequestBodyKind::H3(Box::new(body)),
        }
    }

    /// A body already in memory (for tests and adapters).
    pub fn full(bytes: Bytes) -> RequestBody {
        RequestBody {
            kind: RequestBodyKind::Full(Box::new(Some(bytes))),
        }
    }

    /// The next chunk, or `None` at the end. Errors: 413 past the size limit, 400 for bad
    /// framing, 408 when the client stalls past the body timeout.
    pub async fn chunk(&mut self) -> Result<Option<Bytes>, Error> {
        match &mut self.kind {
            RequestBodyKind::Empty => Ok(None),
            RequestBodyKind::Full(b) => Ok(b.take()),
            RequestBodyKind::H1(reader) => reader.chunk().await,
            RequestBodyKind::H2(body) => body.chunk().await,
            RequestBodyKind::H3(body) => body.chunk().await,
        }
    }

    /// The trailer fields sent after the body, reading what is left of the body first.
    /// HTTP/2 only: over HTTP/1 a chunked trailer section is parsed and dropped, so this is
    /// `Ok(None)` there.
    pub async fn trailers(&mut self) -> Result<Option<http::HeaderMap>, Error> {
        match &mut self.kind {
            RequestBodyKind::H2(body) => body.trailers().await,
            RequestBodyKind::H3(body) => body.trailers().await,
            _ => {
                while self.chunk().await?.is_some() {}
                Ok(None)
            }
        }
    }

    /// Reads the rest of the body into one buffer.
    pub async fn collect(&mut self) -> Result<Bytes, Error> {
        let Some(first) = self.chunk().await? else {
            return Ok(Bytes::new());
        };
        let Some(second) = self.chunk().await? else {
            return Ok(first);
        };
        let mut all = BytesMut::with_capacity(first.len() + second.len());
        all.extend_from_slice(&first);
        all.extend_from_slice(&second);
        while let Some(chunk) = self.chunk().await? {
            all.extend_from_slice(&chunk);
        }
        Ok(all.freeze())
    }
}

impl fmt::Debug for RequestBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestBody").finish_non_exhaustive()
    }
}

/// Decodes `%XX` escapes; `None` if an escape is malformed or the result is not UTF-8.
pub(crate) fn percent_decode(s: &str) -> Option<Cow<'_, str>> {
    if !s.contains('%') {
        return Some(Cow::Borrowed(s));
    }
    String::from_utf8(percent_decode_bytes(s)?)
        .ok()
        .map(Cow::Owned)
}

/// Decodes `%XX` escapes (RFC 3986 §2.1) into bytes, UTF-8 or not; `None` if an escape is
/// malformed. Path parameters and static file paths both decode through this.
pub(crate) fn percent_decode_bytes(s: &str) -> Option<Vec<u8>> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            let hi = (hex[0] as char).to_digit(16)?;
            let lo = (hex[1] as char).to_digit(16)?;
            out.push((hi * 16 + lo) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::{find_query, percent_decode, Param};

    #[test]
    fn the_query_is_found_at_every_place_and_length() {
        for n in 0..40 {
            let plain = vec![b'a'; n];
            assert_eq!(find_query(&plain), None, "{n} bytes");
            for at in 0..n {
                let mut target = plain.clone();
                target[at] = b'?';
                // A second `?` later, and bytes that differ from `?` by one bit, change nothing.
                if at + 2 < n {
                    target[at + 2] = b'?';
                }
                if at > 0 {
                    target[at - 1] = b'?' ^ 0x80;
                }
                assert_eq!(find_query(&target), Some(at), "{n} bytes, `?` at {at}");
            }
        }
        for byte in (0..=255).filter(|&b| b != b'?') {
            assert_eq!(find_query(&[byte; 17]), None, "byte {byte}");
        }
    }

    #[test]
    fn param_values_are_found_in_the_path() {
        // `/users/{id}/posts/{post}`
        let (id, post) = (Param::new("id", 1, false), Param::new("post", 3, false));
        assert_eq!(id.value("/users/42/posts/7"), "42");
        assert_eq!(post.value("/users/42/posts/7"), "7");
        // `/files/{*rest}`: the rest of the path, slashes and all; empty at the path's end.
        let rest = Param::new("rest", 1, true);
        assert_eq!(rest.value("/files/a/b/c.txt"), "a/b/c.txt");
        assert_eq!(rest.value("/files/"), "");
        assert_eq!(rest.value("/files"), "");
        // `/{*all}`
        assert_eq!(Param::new("all", 0, true).value("/x/y"), "x/y");
    }

    #[test]
    fn percent_decoding() {
        assert_eq!(percent_decode("abc").unwrap(), "abc");
        assert_eq!(percent_decode("a%20b%2Fc").unwrap(), "a b/c");
        assert_eq!(percent_decode("%E2%9C%93").unwrap(), "✓");
        assert!(percent_decode("%2").is_none());
        assert!(percent_decode("%zz").is_none());
        assert!(percent_decode("%FF").is_none());
    }
}
