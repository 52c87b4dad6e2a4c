//! The router: method + path → handler, with `{name}` parameters, `{*rest}` catch-alls, and
//! automatic 404, 405 (with `Allow`) and HEAD-for-GET.
//!
//! Routes live in a trie of path segments. Matching walks the request path once, trying a
//! literal segment before a parameter before a catch-all, so `/users/me` wins over
//! `/users/{id}` whatever order they were added in.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::{HeaderValue, Method, StatusCode};
use smallvec::SmallVec;

use crate::request::{Param, Params, SharedState};
use crate::response::{IntoResponse, Response};
use crate::running::{Handler, Running};
use crate::service::Service;
use crate::Request;

fn boxed<H, Fut, R>(handler: H) -> Handler
where
    H: Fn(Request) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = R> + 'static,
    R: IntoResponse,
{
    Handler::new(handler)
}

/// Routes requests to handlers by method and path.
///
/// A handler is any `async fn(Request) -> impl IntoResponse` (or closure returning a future),
/// and needs not be `Send`: each worker runs it on its own thread.
///
/// ```
/// use volt_http::{get, Request, Router};
///
/// async fn user(req: Request) -> Result<String, volt_http::Error> {
///     let id: u64 = req.param("id")?; // "/users/abc" answers 400
///     Ok(format!("user {id}"))
/// }
///
/// let app = Router::new()
///     .route("/", get(|_req| async { "home" }))
///     .route("/users/{id}", get(user));
/// ```
pub struct Router {
    /// Routes without parameters, matched by a plain comparison before the trie is walked:
    /// most requests of most apps end here.
    exact: Vec<(Box<str>, Endpoint)>,
    root: Node,
    state: Option<SharedState>,
}

#[derive(Default)]
struct Node {
    literals: Vec<(Box<str>, Node)>,
    param: Option<Box<Node>>,
    catch_all: Option<Endpoint>,
    endpoint: Option<Endpoint>,
}

struct Endpoint {
    pattern: Box<str>,
    params: Option<Params>,
    methods: MethodRouter,
    allow: HeaderValue,
}

/// The handlers of one path, by method. Made with [`get`], [`post`], ... and chained:
/// `get(show).post(update)`.
#[derive(Default)]
pub struct MethodRouter {
    by_method: Vec<(Method, Handler)>,
    any: Option<Handler>,
}

macro_rules! method_fns {
    ($($name:ident => $method:ident),*) => {
        $(
            #[doc = concat!("Routes `", stringify!($method), "` requests to `handler`.")]
            pub fn $name<H, Fut, R>(handler: H) -> MethodRouter
            where
                H: Fn(Request) -> Fut + Send + Sync + 'static,
                Fut: Future<Output = R> + 'static,
                R: IntoResponse,
            {
                MethodRouter::default().on(Method::$method, handler)
            }
        )*

        impl MethodRouter {
            $(
                #[doc = concat!("Adds a `", stringify!($method), "` handler.")]
                pub fn $name<H, Fut, R>(self, handler: H) -> MethodRouter
                where
                    H: Fn(Request) -> Fut + Send + Sync + 'static,
                    Fut: Future<Output = R> + 'static,
                    R: IntoResponse,
                {
                    self.on(Method::$method, handler)
                }
            )*
        }
    };
}

method_fns!(get => GET, post => POST, put => PUT, delete => DELETE, patch => PATCH, options => OPTIONS);

/// Routes every method to `handler`.
pub fn any<H, Fut, R>(handler: H) -> MethodRouter
where
    H: Fn(Request) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = R> + 'static,
    R: IntoResponse,
{
    MethodRouter {
        by_method: Vec::new(),
        any: Some(boxed(handler)),
    }
}

impl MethodRouter {
    /// Adds a handler for `method`.
    ///
    /// # Panics
    /// If `method` already has a handler here.
    pub fn on<H, Fut, R>(mut self, method: Method, handler: H) -> MethodRouter
    where
        H: Fn(Request) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + 'static,
        R: IntoResponse,
    {
        assert!(
            !self.by_method.iter().any(|(m, _)| *m == method),
            "a {method} handler is already registered for this route"
        );
        self.by_method.push((method, boxed(handler)));
        self
    }

    /// Inline: with a second caller (the WebSocket route), LTO took it out of line, a call on
    /// every request (keep-alive: +38 Ir/request, `bench/callgrind-ir`).
    #[inline]
    fn handler(&self, method: &Method) -> Option<&Handler> {
        let find = |m: &Method| self.by_method.iter().find(|(k, _)| k == m).map(|(_, h)| h);
        find(method)
            .or_else(|| {
                (*method == Method::HEAD)
                    .then(|| find(&Method::GET))
                    .flatten()
            })
            .or(self.any.as_ref())
    }

    fn allow(&self) -> HeaderValue {
        let mut names: Vec<&str> = self.by_method.iter().map(|(m, _)| m.as_str()).collect();
        if names.contains(&"GET") && !names.contains(&"HEAD") {
            names.push("HEAD");
        }
        HeaderValue::from_str(&names.join(", ")).expect("method names are valid header text")
    }
}

impl Router {
    /// An empty router: every request answers 404.
    pub fn new() -> Router {
        Router {
            exact: Vec::new(),
            root: Node::default(),
            state: None,
        }
    }

    /// Adds `methods` at `pattern`. Segments are literal, `{name}` (one segment, captured), or a
    /// final `{*name}` (the rest of the path, captured). A [`Service`] such as
    /// [`ServeDir`](crate::ServeDir) or [`Cgi`](crate::Cgi) is mounted with
    /// [`route_service`](Router::route_service).
    ///
    /// # Panics
    /// If the pattern is malformed (no leading `/`, a catch-all that is not last, an unclosed
    /// brace, an empty or repeated parameter name) or already registered.
    pub fn route(mut self, pattern: &str, methods: MethodRouter) -> Router {
        assert!(
            pattern.starts_with('/'),
            "route `{pattern}` must start with `/`"
        );
        if !pattern.contains(['{', '}']) {
            assert!(
                !self.exact.iter().any(|(p, _)| &**p == pattern),
                "route `{pattern}` is already registered"
            );
            let allow = methods.allow();
            let endpoint = Endpoint::new(pattern, Vec::new(), methods, allow);
            self.exact.push((pattern.into(), endpoint));
            return self;
        }
        let mut node = &mut self.root;
        let mut params: Vec<Param> = Vec::new();
        let segments: Vec<&str> = split_path(pattern).collect();
        let allow = methods.allow();
        for (i, segment) in segments.iter().enumerate() {
            if let Some(name) = segment.strip_prefix("{*").and_then(|s| s.strip_suffix('}')) {
                assert!(
                    i + 1 == segments.len(),
                    "catch-all `{segment}` must be the last segment of `{pattern}`"
                );
                assert!(!name.is_empty(), "empty catch-all name in `{pattern}`");
                assert_unique(&params, name, pattern);
                params.push(Param::new(name, i, true));
                assert!(
                    node.catch_all.is_none(),
                    "route `{pattern}` is already registered"
                );
                node.catch_all = Some(Endpoint::new(pattern, params, methods, allow));
                return self;
            }
            if let Some(name) = segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                assert!(!name.is_empty(), "empty parameter name in `{pattern}`");
                assert_unique(&params, name, pattern);
                params.push(Param::new(name, i, false));
                node = node.param.get_or_insert_with(Box::default);
            } else {
                assert!(
                    !segment.contains(['{', '}']),
                    "malformed segment `{segment}` in `{pattern}`"
                );
                let at = match node.literals.iter().position(|(s, _)| &**s == *segment) {
                    Some(at) => at,
                    None => {
                        node.literals.push(((*segment).into(), Node::default()));
                        node.literals.len() - 1
                    }
                };
                node = &mut node.literals[at].1;
            }
        }
        assert!(
            node.endpoint.is_none(),
            "route `{pattern}` is already registered"
        );
        node.endpoint = Some(Endpoint::new(pattern, params, methods, allow));
        self
    }

    /// Hands every request for `pattern`, whatever its method, to `service` (which answers
    /// methods it does not take itself, as [`ServeDir`](crate::ServeDir) does with 405). A
    /// pattern ending in a catch-all mounts the service under a prefix, and the catch-all's
    /// value is the path it sees: `.route_service("/static/{*path}", ServeDir::new("public"))`,
    /// `.route_service("/cgi-bin/{*script}", Cgi::new("cgi-bin"))`; `/{*path}` makes it the
    /// fallback for every path no other route takes.
    ///
    /// # Panics
    /// As [`Router::route`].
    pub fn route_service<S: Service>(self, pattern: &str, service: S) -> Router {
        let service = Arc::new(service);
        let call = move |req| {
            let service = service.clone();
            async move { service.call(req).await }
        };
        self.route(pattern, any(call))
    }

    /// Shares `state` with every handler, read back with [`Request::state`].
    pub fn state<T: Send + Sync + 'static>(mut self, state: T) -> Router {
        self.state = Some(Arc::new(Box::new(Arc::new(state))));
        self
    }

    /// The first endpoint for `path`, in matching order (exact routes, then the trie: literal
    /// before parameter before catch-all), for which `pick` gives something. Its parameters'
    /// values are not recorded: each is the path segment at its place in the pattern, which
    /// the request finds when asked for it.
    ///
    /// `pick` sees the method too, so a route that does not take the request's method lets a
    /// later one that does have it: with GET-only `/users/me` and POST `/users/{id}`, a POST to
    /// `/users/me` reaches the second, not a 405 from the first.
    fn find<'r, T>(
        &'r self,
        path: &[u8],
        mut pick: impl FnMut(&'r Endpoint) -> Option<T>,
    ) -> Option<T> {
        // Exact routes are unique: at most one matches.
        if let Some((_, e)) = self
            .exact
            .iter()
            .find(|(p, _)| same_path(p.as_bytes(), path))
        {
            if let Some(found) = pick(e) {
                return Some(found);
            }
        }
        // The parser admits only ASCII in a target, so this check fails only for requests
        // made some other way.
        let path = std::str::from_utf8(path).ok()?;
        let segs = segments(path)?;
        find_in(&self.root, &segs, &mut pick)
    }

    fn dispatch(&self, mut req: Request) -> Dispatch<'_> {
        let method = req.method();
        let found = self.find(req.path_bytes(), |e| Some((e, e.methods.handler(method)?)));
        let Some((endpoint, handler)) = found.or_else(|| self.websocket_route(&req)) else {
            return self.unrouted(&req);
        };
        req.set_route(&endpoint.params, &self.state);
        Dispatch::Handler(Running::start(handler, req))
    }

    /// Where a WebSocket's extended CONNECT (RFC 8441 and RFC 9220, HTTP/2's and HTTP/3's form
    /// of HTTP/1's `GET` handshake) goes when no route takes CONNECT: to the GET handler of its path, so that
    /// one route takes both.
    #[cold]
    #[inline(never)]
    fn websocket_route(&self, req: &Request) -> Option<(&Endpoint, &Handler)> {
        if !crate::ws::is_extended_connect(req) {
            return None;
        }
        self.find(req.path_bytes(), |e| {
            Some((e, e.methods.handler(&Method::GET)?))
        })
    }

    /// The answer when no route takes the request: 405 with the methods the routes for its
    /// path take, 404 when there is none, and the asterisk-form's own answers.
    #[cold]
    fn unrouted(&self, req: &Request) -> Dispatch<'_> {
        let mut allow: SmallVec<[&HeaderValue; 2]> = SmallVec::new();
        self.find(req.path_bytes(), |e| {
            allow.push(&e.allow);
            None::<()>
        });
        match allow[..] {
            [] if req.path_bytes() == b"*" => Dispatch::Asterisk {
                options: *req.method() == Method::OPTIONS,
            },
            [] => Dispatch::Status(StatusCode::NOT_FOUND, None),
            [one] => Dispatch::Status(StatusCode::METHOD_NOT_ALLOWED, Some(one)),
            ref several => {
                // The union, in the order the routes and their methods were given.
                let mut names: Vec<&str> = Vec::new();
                for name in several
                    .iter()
                    .flat_map(|v| v.to_str().unwrap_or("").split(", "))
                {
                    if !names.contains(&name) {
                        names.push(name);
                    }
                }
                let allow = HeaderValue::from_str(&names.join(", ")).expect("from valid values");
                let answer = status_response(StatusCode::METHOD_NOT_ALLOWED, Some(&allow));
                Dispatch::Answer(Box::new(answer))
            }
        }
    }
}

enum Dispatch<'a> {
    Handler(Running),
    /// 404, or 405 with the `Allow` of the one route for the path.
    Status(StatusCode, Option<&'a HeaderValue>),
    /// A 405 for a path several routes take, with all their methods (boxed: the future stays
    /// as small as `Running`, and inline).
    Answer(Box<Response>),
    /// The asterisk-form target `*`, which names the server, not a resource: `OPTIONS *`
    /// (RFC 9110 §9.3.7) is answered here with 200. The form is for OPTIONS only (RFC 9112
    /// §3.2.4): both protocols refuse it with another method before routing (400), and so
    /// does this, should such a request come another way.
    Asterisk {
        options: bool,
    },
}

/// Whether two paths are the same. Most paths are 4 to 16 bytes long, and compare as two
/// 8-byte (or 4-byte) words that overlap in the middle: a few instructions inline, where a
/// slice comparison calls `memcmp` (~20 instructions for `/plaintext`).
#[inline]
fn same_path(a: &[u8], b: &[u8]) -> bool {
    fn word<const N: usize>(s: &[u8], at: usize) -> [u8; N] {
        s[at..at + N].try_into().expect("N bytes")
    }
    let n = a.len();
    if n != b.len() {
        return false;
    }
    match n {
        8..=16 => word::<8>(a, 0) == word::<8>(b, 0) && word::<8>(a, n - 8) == word::<8>(b, n - 8),
        4..=7 => word::<4>(a, 0) == word::<4>(b, 0) && word::<4>(a, n - 4) == word::<4>(b, n - 4),
        _ => a == b,
    }
}

/// A path split at `/`.
type Segments<'p> = SmallVec<[&'p str; 8]>;

fn segments(path: &str) -> Option<Segments<'_>> {
    Some(path.strip_prefix('/')?.split('/').collect())
}

fn find_in<'n, T>(
    node: &'n Node,
    segs: &[&str],
    pick: &mut impl FnMut(&'n Endpoint) -> Option<T>,
) -> Option<T> {
    let Some((&segment, rest)) = segs.split_first() else {
        return (node.endpoint.as_ref().and_then(&mut *pick))
            .or_else(|| node.catch_all.as_ref().and_then(pick));
    };
    if let Some((_, child)) = node.literals.iter().find(|(s, _)| &**s == segment) {
        if let Some(found) = find_in(child, rest, pick) {
            return Some(found);
        }
    }
    if let Some(child) = node.param.as_deref().filter(|_| !segment.is_empty()) {
        if let Some(found) = find_in(child, rest, pick) {
            return Some(found);
        }
    }
    node.catch_all.as_ref().and_then(pick)
}

/// Panics if `params` already has one called `name`: `param(name)` could give only one of them.
fn assert_unique(params: &[Param], name: &str, pattern: &str) {
    assert!(
        !params.iter().any(|p| p.name() == name),
        "parameter `{name}` appears twice in `{pattern}`"
    );
}

fn split_path(pattern: &str) -> impl Iterator<Item = &str> {
    pattern[1..].split('/')
}

impl Endpoint {
    fn new(pattern: &str, params: Vec<Param>, methods: MethodRouter, allow: HeaderValue) -> Self {
        Endpoint {
            pattern: pattern.into(),
            params: (!params.is_empty()).then(|| params.into()),
            methods,
            allow,
        }
    }
}

impl Default for Router {
    fn default() -> Self {
        Router::new()
    }
}

impl Service for Router {
    // The dispatch is itself the future: the request moves once, into the handler's boxed
    // future, and an answer passes through no extra state machine on its way out.
    #[inline]
    fn call(&self, req: Request) -> impl Future<Output = Response> {
        self.dispatch(req)
    }

    #[inline]
    fn call_unpin(&self, req: Request) -> impl Future<Output = Response> + Unpin {
        self.dispatch(req)
    }
}

impl Future for Dispatch<'_> {
    type Output = Response;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Response> {
        match self.get_mut() {
            Dispatch::Handler(running) => Pin::new(running).poll(cx),
            unrouted => Poll::Ready(unrouted.answer()),
        }
    }
}

impl Dispatch<'_> {
    /// The answer of a request no handler takes.
    #[cold]
    #[inline(never)]
    fn answer(&mut self) -> Response {
        match self {
            Dispatch::Handler(_) => unreachable!("a handler answers for itself"),
            Dispatch::Status(status, allow) => status_response(*status, *allow),
            // Polled once: ready at once.
            Dispatch::Answer(answer) => std::mem::replace(answer, Response::new(StatusCode::OK)),
            Dispatch::Asterisk { options: true } => Response::new(StatusCode::OK),
            Dispatch::Asterisk { options: false } => {
                crate::Error::bad_request("the asterisk-form target is for OPTIONS only")
                    .into_response()
            }
        }
    }
}

fn status_response(status: StatusCode, allow: Option<&HeaderValue>) -> Response {
    let reason = status.canonical_reason().unwrap_or("error").to_lowercase();
    let mut r = crate::Error::new(status, reason).into_response();
    if let Some(allow) = allow {
        r.append_header(http::header::ALLOW, allow.clone());
    }
    r
}

impl fmt::Debug for Router {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut patterns: Vec<&str> = self.exact.iter().map(|(p, _)| &**p).collect();
        collect_patterns(&self.root, &mut patterns);
        f.debug_struct("Router").field("routes", &patterns).finish()
    }
}

fn collect_patterns<'a>(node: &'a Node, out: &mut Vec<&'a str>) {
    out.extend(node.endpoint.iter().map(|e| &*e.pattern));
    out.extend(node.catch_all.iter().map(|e| &*e.pattern));
    for (_, child) in &node.literals {
        collect_patterns(child, out);
    }
    if let Some(child) = &node.param {
        collect_patterns(child, out);
    }
}

impl fmt::Debug for MethodRouter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let methods: Vec<_> = self.by_method.iter().map(|(m, _)| m.as_str()).collect();
        f.debug_struct("MethodRouter")
            .field("methods", &methods)
            .field("any", &self.any.is_some())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::same_path;

    #[test]
    fn paths_compare_whole_at_every_length() {
        let long = b"/a/rather/long/path/indeed";
        for n in 0..=long.len() {
            let a = &long[..n];
            assert!(same_path(a, a));
            for i in 0..n {
                let mut b = a.to_vec();
                b[i] ^= 1;
                assert!(!same_path(a, &b), "{n} bytes, byte {i} differs");
            }
            assert!(!same_path(a, &long[..n.saturating_sub(1)]) || n == 0);
        }
    }
}
