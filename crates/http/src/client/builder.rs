//! The client's settings: [`ClientBuilder`], and the TLS configuration it makes.

use std::cell::{OnceCell, RefCell};
use std::collections::{HashMap, HashSet};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use volt_proto::Limits;

use super::{decode, Client, CookieJar, Inner, Proxy};

/// Settings for a [`Client`]; [`Client::builder`] starts one with the defaults.
#[derive(Clone, Debug)]
pub struct ClientBuilder {
    connect_timeout: Duration,
    timeout: Duration,
    idle_timeout: Duration,
    max_idle_per_host: usize,
    redirects: usize,
    limits: Limits,
    tls: Option<Arc<rustls::ClientConfig>>,
    http2: Http2,
    decompress: decode::Decompression,
    cookies: Option<CookieJar>,
    proxy: Option<Proxy>,
}

/// When the client speaks HTTP/2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Http2 {
    /// Over TLS when the server picks it by ALPN.
    Alpn,
    /// Never.
    Never,
    /// Always: h2c on plain ports, and only `h2` offered by ALPN.
    PriorKnowledge,
}

impl Default for ClientBuilder {
    fn default() -> Self {
        ClientBuilder {
            connect_timeout: Duration::from_secs(10),
            timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(30),
            max_idle_per_host: 32,
            redirects: 10,
            limits: Limits::default(),
            tls: None,
            http2: Http2::Alpn,
            decompress: decode::Decompression::default(),
            cookies: None,
            proxy: None,
        }
    }
}

impl ClientBuilder {
    /// Longest wait for a connection: address lookup, TCP connect and TLS handshake. Default
    /// 10 s.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Longest wait for the socket to take more of the request (not for all of it: a large
    /// body that keeps moving is not cut short), then for the response head, then for each
    /// read of the body. Default 30 s.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// How long an idle connection is kept for reuse. Default 30 s.
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// Most idle connections kept per origin (0: none, every request connects). Default 32.
    pub fn max_idle_per_host(mut self, max: usize) -> Self {
        self.max_idle_per_host = max;
        self
    }

    /// Most redirects followed for one request (0: none, a 3xx is returned as it is); one
    /// more is an error. Default 10.
    pub fn redirects(mut self, max: usize) -> Self {
        self.redirects = max;
        self
    }

    /// Limits on response heads (size, field count) and chunked trailers.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Speaks HTTP/1.1 only: over TLS, ALPN offers `http/1.1` alone.
    pub fn http1_only(mut self) -> Self {
        self.http2 = Http2::Never;
        self
    }

    /// Speaks HTTP/2 to every server without asking: h2c (prior knowledge, RFC 9113 §3.3) on
    /// `http` URLs, and only `h2` offered by ALPN over TLS.
    pub fn http2_prior_knowledge(mut self) -> Self {
        self.http2 = Http2::PriorKnowledge;
        self
    }

    /// Whether requests ask for compressed responses (`Accept-Encoding: gzip, deflate, br`,
    /// unless the request sets its own) and their bodies are decompressed as they are read,
    /// with `Content-Encoding` and `Content-Length` taken off the headers. Default: on.
    pub fn decompress(mut self, on: bool) -> Self {
        self.decompress.on = on;
        self
    }

    /// Most bytes a compressed body may decode to when it is read whole:
    /// [`bytes`](super::ClientResponse::bytes), [`text`](super::ClientResponse::text) and
    /// [`json`](super::ClientResponse::json) fail with `InvalidData` ("the decoded body is over
    /// the client's limit") once it would pass this, having held no more than this many
    /// bytes; a decompression bomb (gzip inflates up to 1,032 times, brotli more) costs at
    /// most this much memory. Default 64 MiB. Bodies read
    /// piece by piece with [`chunk`](super::ClientResponse::chunk) are not limited (each piece
    /// is at most 32 KiB, whatever the coding), nor are bodies that came without a coding
    /// (their size is what the server sent).
    pub fn max_decoded_body(mut self, bytes: usize) -> Self {
        self.decompress.max_body = bytes;
        self
    }

    /// Whether the client keeps cookies: stores what responses set (`Set-Cookie`, redirects'
    /// too) in a [`CookieJar`] of its own and sends them back on later requests (`Cookie`),
    /// as RFC 6265bis says. Default: off (no jar, nothing stored or sent).
    pub fn cookies(mut self, on: bool) -> Self {
        self.cookies = on.then(CookieJar::new);
        self
    }

    /// Keeps cookies in `jar`, which may be filled beforehand, looked into, and shared with
    /// other clients (on other workers too: a jar is `Send` and `Sync`).
    pub fn cookie_jar(mut self, jar: CookieJar) -> Self {
        self.cookies = Some(jar);
        self
    }

    /// Sends requests through a proxy as `proxy` says ([`Proxy::from_env`] for the usual
    /// environment variables): `http://` ones in absolute-form to the proxy, on connections
    /// shared by every `http` origin; `https://` ones (and WebSockets) through a `CONNECT`
    /// tunnel per origin, TLS end to end with the origin inside it (where ALPN may pick h2).
    /// Called again, the schemes the new `proxy` has a proxy for take it, the others keep
    /// theirs, and the `NO_PROXY` hosts add up (`proxy(Proxy::http(a)?).proxy(Proxy::https(b)?)`
    /// sends each scheme its own way). Default: none (the environment is not read unless
    /// asked).
    pub fn proxy(mut self, proxy: Proxy) -> Self {
        let proxy = match self.proxy.take() {
            Some(before) => before.merged(proxy),
            None => proxy,
        };
        self.proxy = Some(proxy);
        self
    }

    /// TLS settings for `https` (roots to trust, client certificates). Without this, the
    /// server must present a certificate chained to one of Mozilla's roots (webpki-roots).
    /// Its ALPN list is replaced by the protocols the client speaks (`h2` and `http/1.1`
    /// unless [`http1_only`](ClientBuilder::http1_only) or
    /// [`http2_prior_knowledge`](ClientBuilder::http2_prior_knowledge)).
    pub fn tls_config(mut self, config: Arc<rustls::ClientConfig>) -> Self {
        self.tls = Some(config);
        self
    }

    /// Trusts these roots for `https` instead of Mozilla's.
    pub fn tls_roots(self, roots: rustls::RootCertStore) -> Self {
        let config = tls_builder()
            .with_root_certificates(roots)
            .with_no_client_auth();
        self.tls_config(Arc::new(config))
    }

    /// The client.
    pub fn build(self) -> Client {
        let tls = OnceCell::new();
        if let Some(config) = self.tls {
            let _ = tls.set(with_alpn(&config, self.http2));
        }
        Client {
            inner: Rc::new(Inner {
                connect_timeout: self.connect_timeout,
                timeout: self.timeout,
                idle_timeout: self.idle_timeout,
                max_idle_per_host: self.max_idle_per_host,
                redirects: self.redirects,
                limits: self.limits,
                http2: self.http2,
                decompress: self.decompress,
                cookies: self.cookies,
                // A proxy for no scheme is none: requests then pay nothing for it.
                proxy: self.proxy.filter(|p| !p.is_empty()),
                tls,
                pool: RefCell::new(HashMap::new()),
                h2: RefCell::new(HashMap::new()),
                alpn_h2: RefCell::new(HashSet::new()),
            }),
        }
    }
}

pub(super) fn tls_builder() -> rustls::ConfigBuilder<rustls::ClientConfig, rustls::WantsVerifier> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("ring supports the default TLS versions")
}

/// `config` offering by ALPN the protocols `http2` allows.
pub(super) fn with_alpn(config: &rustls::ClientConfig, http2: Http2) -> Arc<rustls::ClientConfig> {
    let mut config = config.clone();
    config.alpn_protocols = match http2 {
        Http2::Alpn => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
        Http2::Never => vec![b"http/1.1".to_vec()],
        Http2::PriorKnowledge => vec![b"h2".to_vec()],
    };
    Arc::new(config)
}
