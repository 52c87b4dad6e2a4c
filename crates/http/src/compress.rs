//! Response compression: [`Compress`] wraps a [`Service`] and encodes its responses with the
//! best content coding the request accepts (RFC 9110 §8.4, §12.5.3).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use futures_core::Stream;
use http::header::{ACCEPT_RANGES, CACHE_CONTROL, CONTENT_ENCODING, ETAG, VARY};
use http::{HeaderValue, Method, StatusCode};

use crate::body::{BodyKind, BodyStream};
use crate::coding::encode::{encode_all, Encoder};
use crate::coding::{compressible, Accepted};
use crate::response::Response;
use crate::service::Service;
use crate::Request;

/// The smallest body compressed by default, set by what compressing costs per byte it saves
/// (callgrind, BENCHMARKS.md "Compression encoder reuse"). The old threshold, 1 KiB, paid 620
/// instructions per byte saved with a new gzip encoder and 500 with a new brotli one. With the
/// encoders' costly parts reused (`coding::gzip`, `coding::br`), 512 bytes of JSON cost 154 k
/// instructions in br to save 384 bytes (400 a byte) and 218 k in gzip to save 344 (635): no
/// dearer than before, so the threshold is 512. Below it the price climbs fast (256 bytes:
/// 960 a byte in br, 1,860 in gzip), and the answer fits a packet either way.
const MIN_SIZE: u64 = 512;

/// A [`Service`] that compresses the responses of another, with `br` or `gzip`.
///
/// ```no_run
/// use volt_http::{get, Compress, Router, ServeDir, Server};
///
/// let app = Router::new()
///     .route("/api/items", get(|_req| async { volt_http::Json(vec![1, 2, 3]) }))
///     .route_service("/static/{*path}", ServeDir::new("public"));
/// Server::bind("127.0.0.1:8080")?.serve(Compress::new(app))?;
/// # Ok::<(), std::io::Error>(())
/// ```
///
/// It wraps a whole app as above, or one route's service (`.route_service("/api/{*path}",
/// Compress::new(api))`). A response is compressed when
///
/// - the request's `Accept-Encoding` prefers `br` or `gzip` to no coding (weights, `*` and
///   `identity;q=0` as RFC 9110 §12.5.3 says; equal weights: br, then gzip; nothing
///   acceptable: the response goes as it is, never 406; no `Accept-Encoding` at all: as it is);
/// - the response has no `Content-Encoding` yet (a precompressed file passes untouched), no
///   `Content-Range` and no `Cache-Control: no-transform` (RFC 9110 §7.7, RFC 9111
///   §5.2.2.6: such a response is left wholly alone, without `Vary` either), and is not a 1xx,
///   204, 206 or 304, nor the answer to a HEAD;
/// - its `Content-Type` is compressible: `text/*`, JSON, JavaScript, XML, any `+json` or `+xml`
///   type (SVG), WebAssembly, uncompressed fonts, icons;
/// - its body is at least [`Compress::min_size`] bytes (512), or a stream of unknown length.
///
/// Encoders are cheap to start: each worker keeps a few idle gzip compressors and brotli
/// hashers (at most 4 of each) for the next response, see `coding::gzip` and `coding::br`.
///
/// A body in memory is compressed whole and keeps a `Content-Length` (the compressed one); a
/// stream is compressed piece by piece, each piece flushed as it comes, so a server-sent event
/// stream stays live, and goes without a length (chunked on HTTP/1.1). Trailers pass.
///
/// Every response whose form depends on `Accept-Encoding` (compressible and large enough,
/// whether compressed this time or not, HEAD included) gets `Vary: Accept-Encoding`, merged
/// into a `Vary` already there. A compressed response's `ETag` is made weak (`W/"…"`): RFC 9110
/// §8.8.3 wants a strong tag to differ between codings, and a weak tag still matches
/// `If-None-Match` (weak comparison), so the wrapped service's own 304s keep working with no
/// rewriting of requests (a suffix such as `"…-gzip"` would need the suffix taken off every
/// conditional field before the service sees it). A compressed response drops
/// `Accept-Ranges`: a range request reaches the service and gets its 206 uncompressed, which
/// is no part of the compressed form. 304s to a request that accepts a coding get the same
/// `Vary` and weakened tag, since they stand for the 200 the client holds.
///
/// Services not wrapped pay nothing: this is all in the wrapper.
#[derive(Clone, Debug)]
pub struct Compress<S> {
    inner: S,
    min_size: u64,
}

impl<S: Service> Compress<S> {
    /// Compresses `inner`'s responses.
    pub fn new(inner: S) -> Compress<S> {
        Compress {
            inner,
            min_size: MIN_SIZE,
        }
    }

    /// The smallest body, in bytes, worth compressing (default 512). Streams of unknown
    /// length are always compressed.
    pub fn min_size(mut self, bytes: u64) -> Compress<S> {
        self.min_size = bytes;
        self
    }
}

impl<S: Service> Service for Compress<S> {
    fn call(&self, req: Request) -> impl Future<Output = Response> {
        let ask = Ask::of(&req, self.min_size);
        let response = self.inner.call(req);
        async move { ask.apply(response.await) }
    }

    fn call_unpin(&self, req: Request) -> impl Future<Output = Response> + Unpin {
        let ask = Ask::of(&req, self.min_size);
        Compressing {
            inner: self.inner.call_unpin(req),
            ask,
        }
    }
}

/// [`Compress::call_unpin`]'s future: the service's, then the encoding.
struct Compressing<F> {
    inner: F,
    ask: Ask,
}

impl<F: Future<Output = Response> + Unpin> Future for Compressing<F> {
    type Output = Response;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Response> {
        let response = ready!(Pin::new(&mut self.inner).poll(cx));
        Poll::Ready(self.ask.apply(response))
    }
}

/// What the request asked for, read before it goes to the service.
#[derive(Clone, Copy)]
struct Ask {
    accepted: Accepted,
    head: bool,
    min_size: u64,
}

impl Ask {
    fn of(req: &Request, min_size: u64) -> Ask {
        Ask {
            accepted: Accepted::of(req),
            head: *req.method() == Method::HEAD,
            min_size,
        }
    }

    /// `response`, compressed if it should be (see [`Compress`]).
    fn apply(self, mut r: Response) -> Response {
        let status = r.status;
        if status.is_informational()
            || status == StatusCode::NO_CONTENT
            || status == StatusCode::PARTIAL_CONTENT
            || r.header("content-encoding").is_some()
            || r.header("content-range").is_some()
            || no_transform(&r)
        {
            return r;
        }
        let compressible_type = r
            .content_type
            .as_ref()
            .map(|ct| compressible(ct.as_bytes()));
        if status == StatusCode::NOT_MODIFIED {
            // RFC 9110 §15.4.5: a 304 carries the `Vary` and validators the 200 would have.
            // It seldom has a type to go by: then it is taken to stand for a compressible one
            // (a weaker tag and a `Vary` too many cost a cache little; a strong tag on stored
            // compressed bytes would break its range requests).
            if compressible_type != Some(false) {
                add_vary(&mut r);
                if self.accepted.best().is_some() {
                    weaken_etag(&mut r);
                }
            }
            return r;
        }
        // The body's length, `None` for a stream of unknown length.
        let len = match &r.body.kind {
            BodyKind::Full(bytes) => Some(bytes.len() as u64),
            BodyKind::Stream { len, .. } => *len,
            BodyKind::Upgrade(_) => return r,
        };
        let big_enough = len.is_none_or(|n| n >= self.min_size);
        if compressible_type != Some(true) || !big_enough {
            return r;
        }
        // From here on, the response's form depends on the request's `Accept-Encoding`.
        add_vary(&mut r);
        let Some(coding) = self.accepted.best().filter(|_| !self.head) else {
            return r;
        };
        r.body.kind = match std::mem::replace(&mut r.body.kind, BodyKind::Full(Bytes::new())) {
            BodyKind::Full(bytes) => BodyKind::Full(encode_all(coding, &bytes)),
            BodyKind::Stream { stream, .. } => BodyKind::Stream {
                stream: Box::pin(Encoded {
                    inner: stream,
                    encoder: Some(Encoder::new(coding)),
                }),
                len: None,
            },
            BodyKind::Upgrade(_) => unreachable!("returned above"),
        };
        let headers = r.headers.get_or_insert_default();
        headers.retain(|(name, _)| *name != ACCEPT_RANGES);
        headers.push((CONTENT_ENCODING, HeaderValue::from_static(coding.token())));
        weaken_etag(&mut r);
        r
    }
}

/// Whether the response's `Cache-Control` says `no-transform` (RFC 9111 §5.2.2.6): no
/// intermediary, nor a wrapper such as this, may change its content coding (RFC 9110 §7.7).
/// Directive names are case-insensitive; the lines are one list.
fn no_transform(r: &Response) -> bool {
    r.headers
        .iter()
        .flat_map(|h| h.iter())
        .filter(|(name, _)| *name == CACHE_CONTROL)
        .flat_map(|(_, value)| volt_proto::list_elements(value.as_bytes()))
        .any(|directive| directive.eq_ignore_ascii_case(b"no-transform"))
}

/// Adds `Accept-Encoding` to the response's `Vary`, unless it is there already or `Vary` is
/// `*` (which says it all).
fn add_vary(r: &mut Response) {
    let headers = r.headers.get_or_insert_default();
    let listed = headers
        .iter()
        .filter(|(name, _)| *name == VARY)
        .flat_map(|(_, value)| volt_proto::list_elements(value.as_bytes()))
        .any(|field| field == b"*" || field.eq_ignore_ascii_case(b"accept-encoding"));
    if listed {
        return;
    }
    match headers.iter_mut().find(|(name, _)| *name == VARY) {
        Some((_, value)) => {
            let merged = [value.as_bytes(), b", Accept-Encoding"].concat();
            *value = HeaderValue::from_bytes(&merged).expect("a valid value, extended");
        }
        None => headers.push((VARY, HeaderValue::from_static("Accept-Encoding"))),
    }
}

/// Makes a strong `ETag` weak (`"x"` → `W/"x"`).
fn weaken_etag(r: &mut Response) {
    for (name, value) in r.headers.iter_mut().flat_map(|h| h.iter_mut()) {
        if *name == ETAG && value.as_bytes().starts_with(b"\"") {
            let weak = [b"W/", value.as_bytes()].concat();
            *value = HeaderValue::from_bytes(&weak).expect("a valid value, prefixed");
        }
    }
}

/// A streamed body, compressed as it goes: each piece of the service's stream is compressed
/// and flushed, and the end of the stream ends the coding.
struct Encoded {
    inner: BodyStream,
    /// `None` once the coding has ended (or the stream failed).
    encoder: Option<Encoder>,
}

impl Stream for Encoded {
    type Item = io::Result<Bytes>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            let Some(encoder) = this.encoder.as_mut() else {
                return Poll::Ready(None);
            };
            let next = match ready!(this.inner.as_mut().poll_next(cx)) {
                Some(Ok(piece)) if piece.is_empty() => continue,
                Some(Ok(piece)) => encoder.push(&piece),
                Some(Err(e)) => {
                    this.encoder = None;
                    Err(e)
                }
                None => this.encoder.take().expect("present").finish(),
            };
            match next {
                Ok(out) if out.is_empty() => continue,
                next => return Poll::Ready(Some(next)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_headers(fields: &[(&'static str, &str)]) -> Response {
        let mut r = Response::new(StatusCode::OK);
        for (name, value) in fields {
            r = r.with_header(name, value);
        }
        r
    }

    fn values(r: &Response, name: &str) -> Vec<String> {
        r.headers()
            .iter()
            .filter(|(n, _)| n.as_str() == name)
            .map(|(_, v)| v.to_str().unwrap().to_owned())
            .collect()
    }

    #[test]
    fn vary_is_merged_once() {
        let mut r = with_headers(&[]);
        add_vary(&mut r);
        add_vary(&mut r);
        assert_eq!(values(&r, "vary"), ["Accept-Encoding"]);
        let mut r = with_headers(&[("vary", "Origin")]);
        add_vary(&mut r);
        assert_eq!(values(&r, "vary"), ["Origin, Accept-Encoding"]);
        let mut r = with_headers(&[("vary", "origin"), ("vary", "accept-encoding")]);
        add_vary(&mut r);
        assert_eq!(values(&r, "vary"), ["origin", "accept-encoding"]);
        let mut r = with_headers(&[("vary", "*")]);
        add_vary(&mut r);
        assert_eq!(values(&r, "vary"), ["*"]);
    }

    #[test]
    fn etags_are_weakened_once() {
        let mut r = with_headers(&[("etag", "\"abc\"")]);
        weaken_etag(&mut r);
        weaken_etag(&mut r);
        assert_eq!(values(&r, "etag"), ["W/\"abc\""]);
    }
}
