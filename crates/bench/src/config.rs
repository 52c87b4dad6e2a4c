//! What a run does: [`ConfigBuilder`] collects the settings, [`Config`] is the checked,
//! immutable result that [`run`](crate::run) executes.

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use volt_proto::{Method, ResponseHead};

use crate::h2::H2Request;
use crate::h3::H3Request;
use crate::request::{check_header, encode, EncodedRequest, RequestLine};
use crate::target::Url;
use crate::tls::TlsSetup;
use crate::Error;

/// The wire protocol spoken on each connection, each with its own connection driver. Either
/// runs over TCP or, for `https://` URLs, TLS.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Protocol {
    /// HTTP/1.1 over TCP, with keep-alive and optional pipelining.
    #[default]
    Http1,
    /// HTTP/2: up to [`streams`](ConfigBuilder::streams) requests in flight on each
    /// connection. Over cleartext TCP with prior knowledge (h2c, RFC 9113 §3.3); over TLS the
    /// server must choose `h2` by ALPN (§3.2), or the connect fails.
    Http2,
    /// HTTP/3 (RFC 9114) over QUIC, to an `https://` URL's port in UDP: up to
    /// [`streams`](ConfigBuilder::streams) requests in flight on each connection, each on a
    /// stream of its own; ALPN `h3`, TLS 1.3.
    Http3,
}

/// When a run (or each level of a sweep) ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// After this long (warm-up not included). Requests still in flight then are dropped
    /// uncounted.
    Duration(Duration),
    /// Once exactly this many requests have been answered or have failed.
    Requests(u64),
}

/// What varies from level to level of a sweep.
#[derive(Clone, Debug, PartialEq)]
pub enum Sweep {
    /// Constant-rate levels: requests per second.
    Rate(Vec<f64>),
    /// Connection counts (closed loop, or at the run's rate).
    Connections(Vec<usize>),
}

impl Sweep {
    /// Parses `rate=1000,2000,4000` or `conns=1,8,64` (also `connections=`, `c=`, `r=`).
    ///
    /// ```
    /// use volt_bench::Sweep;
    /// assert_eq!(Sweep::parse("conns=1,8").unwrap(), Sweep::Connections(vec![1, 8]));
    /// assert_eq!(Sweep::parse("rate=1k,2.5k").unwrap(), Sweep::Rate(vec![1000.0, 2500.0]));
    /// ```
    ///
    /// # Errors
    ///
    /// Anything else, an empty list, or a level that is not a positive number.
    pub fn parse(spec: &str) -> Result<Sweep, Error> {
        let bad = |why: &str| {
            Error::config(format!(
                "bad --sweep `{spec}`: {why} (expected e.g. rate=1000,2000 or conns=1,8,64)"
            ))
        };
        let (what, list) = spec.split_once('=').ok_or_else(|| bad("no `=`"))?;
        let items: Vec<&str> = list.split(',').map(str::trim).collect();
        if items.iter().any(|s| s.is_empty()) {
            return Err(bad("empty level"));
        }
        match what.trim() {
            "rate" | "r" | "rps" => {
                let rates = items
                    .iter()
                    .map(|s| parse_count(s).filter(|&r| r > 0.0))
                    .collect::<Option<Vec<f64>>>()
                    .ok_or_else(|| bad("a rate is not a positive number"))?;
                Ok(Sweep::Rate(rates))
            }
            "conns" | "connections" | "c" => {
                let conns = items
                    .iter()
                    .map(|s| {
                        parse_count(s)
                            .filter(|&c| {
                                c >= 1.0 && c.fract() == 0.0 && c <= MAX_CONNECTIONS as f64
                            })
                            .map(|c| c as usize)
                    })
                    .collect::<Option<Vec<usize>>>()
                    .ok_or_else(|| bad("a connection count is not a positive integer"))?;
                Ok(Sweep::Connections(conns))
            }
            _ => Err(bad("unknown parameter")),
        }
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            Sweep::Rate(v) => v.len(),
            Sweep::Connections(v) => v.len(),
        }
    }
}

/// The longest `--duration`, `--warmup` or `--timeout`: deadlines are `Instant`s, and adding
/// much more than this to one can overflow it.
const MAX_TIME: Duration = Duration::from_secs(365 * 24 * 3600);
/// The most connections (each is a slot with its own read buffer) and the deepest pipeline
/// (the request ring holds that many requests back to back).
const MAX_CONNECTIONS: usize = 1_000_000;
const MAX_PIPELINE: usize = 65_536;
/// The most concurrent HTTP/2 streams per connection (each has an entry in its stream table).
const MAX_STREAMS: usize = 65_536;

/// A number with an optional `k` (×1000) or `m` (×1,000,000) suffix.
pub(crate) fn parse_count(s: &str) -> Option<f64> {
    let s = s.trim();
    let (digits, scale) = match s.as_bytes().last()? {
        b'k' | b'K' => (&s[..s.len() - 1], 1e3),
        b'm' | b'M' => (&s[..s.len() - 1], 1e6),
        _ => (s, 1.0),
    };
    let v: f64 = digits.parse().ok()?;
    (v.is_finite() && v >= 0.0).then_some(v * scale)
}

/// A read-only look at a final response head, handed to an
/// [`inspect`](ConfigBuilder::inspect) hook.
#[derive(Debug)]
pub struct ResponseView<'a> {
    request: usize,
    head: &'a ResponseHead,
    bytes: &'a [u8],
}

impl<'a> ResponseView<'a> {
    pub(crate) fn new(request: usize, head: &'a ResponseHead, bytes: &'a [u8]) -> Self {
        ResponseView {
            request,
            head,
            bytes,
        }
    }

    /// Which request of the round robin this answers (its index in the URL or request list).
    pub fn request(&self) -> usize {
        self.request
    }

    /// The status code.
    pub fn status(&self) -> u16 {
        self.head.status.as_u16()
    }

    /// The first header field called `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&'a [u8]> {
        self.head.header(self.bytes, name)
    }

    /// The raw head: status line, header fields and the blank line.
    pub fn head_bytes(&self) -> &'a [u8] {
        self.bytes
    }
}

/// A hook called with every final response head; see [`ConfigBuilder::inspect`].
pub type InspectFn = Arc<dyn Fn(&ResponseView<'_>) + Send + Sync>;

/// Builds a [`Config`]. Settings are checked together by [`build`](Self::build).
///
/// ```
/// use std::time::Duration;
/// let config = volt_bench::Config::builder()
///     .url("http://127.0.0.1:8080/plaintext")
///     .connections(256)
///     .threads(1)
///     .pipeline(16)
///     .duration(Duration::from_secs(10))
///     .header("Accept", "text/plain")
///     .build()
///     .unwrap();
/// assert_eq!(config.connections(), 256);
/// ```
#[derive(Clone)]
pub struct ConfigBuilder {
    requests: Vec<RequestLine>,
    method: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    connections: usize,
    threads: Option<usize>,
    duration: Option<Duration>,
    requests_total: Option<u64>,
    warmup: Duration,
    pipeline: usize,
    rate: Option<f64>,
    keepalive: bool,
    timeout: Duration,
    sweep: Option<Sweep>,
    hdr_log: Option<PathBuf>,
    progress: bool,
    stop_on_signal: bool,
    inspect: Option<InspectFn>,
    protocol: Protocol,
    streams: usize,
}

impl fmt::Debug for ConfigBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConfigBuilder")
            .field("requests", &self.requests)
            .field("connections", &self.connections)
            .field("rate", &self.rate)
            .field("pipeline", &self.pipeline)
            .field("protocol", &self.protocol)
            .field("streams", &self.streams)
            .finish_non_exhaustive()
    }
}

impl Default for ConfigBuilder {
    fn default() -> Self {
        ConfigBuilder {
            requests: Vec::new(),
            method: "GET".into(),
            headers: Vec::new(),
            body: Vec::new(),
            connections: 64,
            threads: None,
            duration: None,
            requests_total: None,
            warmup: Duration::ZERO,
            pipeline: 1,
            rate: None,
            keepalive: true,
            timeout: Duration::from_secs(8),
            sweep: None,
            hdr_log: None,
            progress: false,
            stop_on_signal: false,
            inspect: None,
            protocol: Protocol::Http1,
            streams: 1,
        }
    }
}

impl ConfigBuilder {
    /// Adds a URL to the round robin, sent with the default [`method`](Self::method).
    pub fn url(mut self, url: impl Into<String>) -> Self {
        self.requests.push(RequestLine {
            method: None,
            url: url.into(),
        });
        self
    }

    /// Adds requests to the round robin (e.g. from [`RequestLine::read_list`]).
    pub fn requests(mut self, lines: impl IntoIterator<Item = RequestLine>) -> Self {
        self.requests.extend(lines);
        self
    }

    /// The method of requests that do not name one (default `GET`).
    pub fn method(mut self, method: impl Into<String>) -> Self {
        self.method = method.into();
        self
    }

    /// Adds a header field to every request. A `Host` given here replaces the URL's.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// The body of every request (`Content-Length` is added).
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = body.into();
        self
    }

    /// Concurrent connections (default 64). In rate mode, at most one request is in flight on
    /// each (HTTP/2: up to [`streams`](Self::streams)), so this bounds the concurrency the
    /// schedule can use.
    pub fn connections(mut self, n: usize) -> Self {
        self.connections = n;
        self
    }

    /// Worker threads, one event loop each (default: the CPUs this process may use). Never more
    /// than the connections.
    pub fn threads(mut self, n: usize) -> Self {
        self.threads = Some(n);
        self
    }

    /// Run for this long (default 10 s unless [`requests`](Self::total_requests) is set).
    pub fn duration(mut self, d: Duration) -> Self {
        self.duration = Some(d);
        self
    }

    /// Stop after exactly this many requests have completed (or failed).
    pub fn total_requests(mut self, n: u64) -> Self {
        self.requests_total = Some(n);
        self
    }

    /// Load sent before measuring starts; its responses are not counted (default none).
    pub fn warmup(mut self, d: Duration) -> Self {
        self.warmup = d;
        self
    }

    /// Requests written back to back on a connection before reading their responses
    /// (default 1). TechEmpower's plaintext test uses 16.
    pub fn pipeline(mut self, depth: usize) -> Self {
        self.pipeline = depth;
        self
    }

    /// Constant-rate mode: requests per second over all connections, each request's latency
    /// measured from the time it was scheduled to be sent.
    pub fn rate(mut self, per_second: f64) -> Self {
        self.rate = Some(per_second);
        self
    }

    /// `false`: a new connection for every request, sent with `Connection: close` (default
    /// `true`: connections are reused).
    pub fn keepalive(mut self, on: bool) -> Self {
        self.keepalive = on;
        self
    }

    /// How long a request may wait for its response before it counts as timed out and its
    /// connection is replaced (default 8 s).
    pub fn timeout(mut self, d: Duration) -> Self {
        self.timeout = d;
        self
    }

    /// Runs one level per rate or connection count, one after the other.
    pub fn sweep(mut self, sweep: Sweep) -> Self {
        self.sweep = Some(sweep);
        self
    }

    /// Writes an HdrHistogram interval log (V2 compressed, one histogram per second) here.
    pub fn hdr_log(mut self, path: impl Into<PathBuf>) -> Self {
        self.hdr_log = Some(path.into());
        self
    }

    /// Shows a live progress line on stderr (default off; the CLI turns it on for terminals).
    pub fn progress(mut self, on: bool) -> Self {
        self.progress = on;
        self
    }

    /// Ends the run early, still reporting, on SIGINT or SIGTERM (default off). Installs
    /// process-wide handlers on the first run.
    pub fn stop_on_signal(mut self, on: bool) -> Self {
        self.stop_on_signal = on;
        self
    }

    /// Calls `f` with every final response head, on the worker thread that read it: to check
    /// responses beyond their status. It runs on the hot path, so keep it cheap.
    pub fn inspect(mut self, f: impl Fn(&ResponseView<'_>) + Send + Sync + 'static) -> Self {
        self.inspect = Some(Arc::new(f));
        self
    }

    /// The wire protocol (default HTTP/1.1).
    pub fn protocol(mut self, protocol: Protocol) -> Self {
        self.protocol = protocol;
        self
    }

    /// [`Protocol::Http2`] and [`Protocol::Http3`]: the most requests in flight on each
    /// connection, as concurrent streams (default 1; fewer if the server's
    /// SETTINGS_MAX_CONCURRENT_STREAMS, or QUIC's MAX_STREAMS, says so). Like h2load's `-m`.
    pub fn streams(mut self, n: usize) -> Self {
        self.streams = n;
        self
    }

    /// Checks the settings together, parses the URLs, resolves the host and encodes every
    /// request.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] for conflicting or out-of-range settings, [`Error::Url`] for a URL
    /// that cannot be used, [`Error::Resolve`] for a host that does not resolve.
    pub fn build(self) -> Result<Config, Error> {
        let b = self;
        if b.requests.is_empty() {
            return Err(Error::config("no URL given"));
        }
        if b.connections == 0 {
            return Err(Error::config("--connections must be at least 1"));
        }
        if b.threads == Some(0) {
            return Err(Error::config("--threads must be at least 1"));
        }
        if b.pipeline == 0 {
            return Err(Error::config("--pipeline must be at least 1"));
        }
        if b.timeout.is_zero() {
            return Err(Error::config("--timeout must be more than 0"));
        }
        if b.connections > MAX_CONNECTIONS {
            return Err(Error::config(format!(
                "--connections must be at most {MAX_CONNECTIONS}"
            )));
        }
        if b.pipeline > MAX_PIPELINE {
            return Err(Error::config(format!(
                "--pipeline must be at most {MAX_PIPELINE}"
            )));
        }
        for (flag, time) in [
            ("--duration", b.duration),
            ("--warmup", Some(b.warmup)),
            ("--timeout", Some(b.timeout)),
        ] {
            if time.is_some_and(|t| t > MAX_TIME) {
                return Err(Error::config(format!(
                    "{flag} must be at most a year ({}s)",
                    MAX_TIME.as_secs()
                )));
            }
        }
        let stop = match (b.duration, b.requests_total) {
            (Some(_), Some(_)) => {
                return Err(Error::config(
                    "--duration and --requests conflict: give one of them",
                ))
            }
            (Some(d), None) if d.is_zero() => {
                return Err(Error::config("--duration must be more than 0"))
            }
            (Some(d), None) => Stop::Duration(d),
            (None, Some(0)) => return Err(Error::config("--requests must be at least 1")),
            (None, Some(n)) => Stop::Requests(n),
            (None, None) => Stop::Duration(Duration::from_secs(10)),
        };
        if matches!(stop, Stop::Requests(_)) && !b.warmup.is_zero() {
            return Err(Error::config(
                "--warmup applies to timed runs; it conflicts with --requests",
            ));
        }
        if let Some(rate) = b.rate {
            if !(rate.is_finite() && rate > 0.0) {
                return Err(Error::config("--rate must be a positive number"));
            }
        }
        let sweeps_rate = matches!(b.sweep, Some(Sweep::Rate(_)));
        if sweeps_rate && b.rate.is_some() {
            return Err(Error::config(
                "--rate conflicts with --sweep rate=...: the sweep sets the rate of each level",
            ));
        }
        let rate_mode = b.rate.is_some() || sweeps_rate;
        if rate_mode && b.pipeline > 1 {
            return Err(Error::config(
                "--rate conflicts with --pipeline > 1: at a constant rate each request is sent \
                 at its own scheduled time",
            ));
        }
        if !b.keepalive && b.pipeline > 1 {
            return Err(Error::config(
                "--no-keepalive conflicts with --pipeline > 1: pipelining needs a reused connection",
            ));
        }
        if b.streams == 0 {
            return Err(Error::config("--streams must be at least 1"));
        }
        if b.streams > MAX_STREAMS {
            return Err(Error::config(format!(
                "--streams must be at most {MAX_STREAMS}"
            )));
        }
        if let Protocol::Http2 | Protocol::Http3 = b.protocol {
            let flag = match b.protocol {
                Protocol::Http2 => "--h2",
                _ => "--h3",
            };
            let conflict = if b.pipeline > 1 {
                Some("--pipeline: it sends concurrent streams instead (--streams)")
            } else if !b.keepalive {
                Some("--no-keepalive: a connection carries many requests")
            } else if b.inspect.is_some() {
                Some("inspect: it sees HTTP/1 response heads")
            } else {
                None
            };
            if let Some(what) = conflict {
                return Err(Error::config(format!("{flag} conflicts with {what}")));
            }
        } else if b.streams > 1 {
            return Err(Error::config(
                "--streams needs --h2 or --h3: an HTTP/1.1 connection has one request in flight (see --pipeline)",
            ));
        }
        if let Some(sweep) = &b.sweep {
            if sweep.len() == 0 {
                return Err(Error::config("--sweep has no levels"));
            }
        }

        let method = parse_method(&b.method)?;
        for (name, value) in &b.headers {
            check_header(name, value)?;
        }
        let mut urls = Vec::with_capacity(b.requests.len());
        let mut encoded = Vec::with_capacity(b.requests.len());
        let mut h2_encoded = Vec::new();
        let mut h3_encoded = Vec::new();
        for line in &b.requests {
            let url = Url::parse(&line.url)?;
            if let Some(first) = urls.first() {
                let first: &Url = first;
                if (first.host.as_str(), first.port, first.tls)
                    != (url.host.as_str(), url.port, url.tls)
                {
                    return Err(Error::config(format!(
                        "all URLs must go to one scheme, host and port: {} and {} differ",
                        first.host_port(),
                        url.host_port()
                    )));
                }
            }
            let method = match &line.method {
                Some(m) => parse_method(m)?,
                None => method.clone(),
            };
            if b.protocol == Protocol::Http3 && !url.tls {
                return Err(Error::url(
                    &line.url,
                    "--h3 needs an https:// URL: QUIC is always TLS",
                ));
            }
            encoded.push(encode(&method, &url, &b.headers, &b.body, !b.keepalive));
            match b.protocol {
                Protocol::Http2 => {
                    h2_encoded.push(H2Request::encode(&method, &url, &b.headers, &b.body))
                }
                Protocol::Http3 => {
                    h3_encoded.push(H3Request::encode(&method, &url, &b.headers, &b.body))
                }
                Protocol::Http1 => {}
            }
            urls.push(url);
        }
        let addrs = urls[0].resolve()?;
        let tls = match urls[0].tls {
            true => Some(
                TlsSetup::new(&urls[0].host, b.protocol)
                    .map_err(|e| Error::url(&b.requests[0].url, format!("TLS: {e}")))?,
            ),
            false => None,
        };

        let threads = b
            .threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        Ok(Config {
            urls: b.requests.iter().map(|r| r.url.clone()).collect(),
            host: urls[0].host_port(),
            addr: addrs[0],
            requests: encoded,
            h2_requests: h2_encoded,
            h3_requests: h3_encoded,
            method: b.method,
            connections: b.connections,
            threads,
            stop,
            warmup: b.warmup,
            pipeline: b.pipeline,
            rate: b.rate,
            keepalive: b.keepalive,
            timeout: b.timeout,
            sweep: b.sweep,
            hdr_log: b.hdr_log,
            progress: b.progress,
            stop_on_signal: b.stop_on_signal,
            inspect: b.inspect,
            protocol: b.protocol,
            streams: b.streams,
            tls,
        })
    }
}

fn parse_method(m: &str) -> Result<Method, Error> {
    Method::from_bytes(m.as_bytes()).map_err(|_| Error::config(format!("bad method `{m}`")))
}

/// A checked benchmark configuration. Made by [`Config::builder`]; run with
/// [`run`](crate::run).
#[derive(Clone)]
pub struct Config {
    pub(crate) urls: Vec<String>,
    pub(crate) host: String,
    pub(crate) addr: SocketAddr,
    pub(crate) requests: Vec<EncodedRequest>,
    /// [`Protocol::Http2`]: the same requests as header blocks (else empty).
    pub(crate) h2_requests: Vec<H2Request>,
    /// [`Protocol::Http3`]: the same requests as request-stream bytes (else empty).
    pub(crate) h3_requests: Vec<H3Request>,
    pub(crate) method: String,
    pub(crate) connections: usize,
    pub(crate) threads: usize,
    pub(crate) stop: Stop,
    pub(crate) warmup: Duration,
    pub(crate) pipeline: usize,
    pub(crate) rate: Option<f64>,
    pub(crate) keepalive: bool,
    pub(crate) timeout: Duration,
    pub(crate) sweep: Option<Sweep>,
    pub(crate) hdr_log: Option<PathBuf>,
    pub(crate) progress: bool,
    pub(crate) stop_on_signal: bool,
    pub(crate) inspect: Option<InspectFn>,
    pub(crate) protocol: Protocol,
    pub(crate) streams: usize,
    /// `https://` targets.
    pub(crate) tls: Option<TlsSetup>,
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("urls", &self.urls)
            .field("addr", &self.addr)
            .field("connections", &self.connections)
            .field("threads", &self.threads)
            .field("stop", &self.stop)
            .field("pipeline", &self.pipeline)
            .field("rate", &self.rate)
            .field("keepalive", &self.keepalive)
            .field("sweep", &self.sweep)
            .field("protocol", &self.protocol)
            .field("streams", &self.streams)
            .finish_non_exhaustive()
    }
}

impl Config {
    /// A builder with the defaults: 64 connections, one thread per CPU, 10 s, closed loop.
    pub fn builder() -> ConfigBuilder {
        ConfigBuilder::default()
    }

    /// The address connections go to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Concurrent connections.
    pub fn connections(&self) -> usize {
        self.connections
    }

    /// When the run ends.
    pub fn stop(&self) -> Stop {
        self.stop
    }

    /// The wire protocol.
    pub fn protocol(&self) -> Protocol {
        self.protocol
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> ConfigBuilder {
        Config::builder().url("http://127.0.0.1:1/")
    }

    #[test]
    fn conflicts_are_usage_errors() {
        let cases = [
            base().duration(Duration::from_secs(1)).total_requests(5),
            base().rate(100.0).pipeline(16),
            base().keepalive(false).pipeline(2),
            base().rate(10.0).sweep(Sweep::parse("rate=1,2").unwrap()),
            base().total_requests(5).warmup(Duration::from_secs(1)),
            base().connections(0),
            base().url("http://other:2/"),
            Config::builder(),
            base().header("bad name", "x"),
            base().method("G ET"),
            base().connections(MAX_CONNECTIONS + 1),
            base().pipeline(MAX_PIPELINE + 1),
            base().duration(MAX_TIME + Duration::from_secs(1)),
            base().warmup(MAX_TIME + Duration::from_secs(1)),
            base().timeout(MAX_TIME + Duration::from_secs(1)),
            base().streams(4),
            base().protocol(Protocol::Http2).pipeline(2),
            base().protocol(Protocol::Http2).keepalive(false),
            base().protocol(Protocol::Http2).streams(0),
            base().protocol(Protocol::Http2).streams(MAX_STREAMS + 1),
            base().protocol(Protocol::Http2).inspect(|_| {}),
            base().protocol(Protocol::Http3),
            Config::builder()
                .url("https://127.0.0.1:1/")
                .protocol(Protocol::Http3)
                .pipeline(2),
            Config::builder()
                .url("https://127.0.0.1:1/")
                .protocol(Protocol::Http3)
                .keepalive(false),
        ];
        for case in cases {
            let dbg = format!("{case:?}");
            let err = case.build().unwrap_err();
            assert!(err.is_usage(), "{dbg}: {err}");
        }
    }

    #[test]
    fn defaults() {
        let c = base().build().unwrap();
        assert_eq!(c.stop, Stop::Duration(Duration::from_secs(10)));
        assert_eq!(c.connections, 64);
        assert_eq!(c.requests.len(), 1);
    }

    #[test]
    fn sweep_specs() {
        assert_eq!(
            Sweep::parse("rate=1000, 2000").unwrap(),
            Sweep::Rate(vec![1000.0, 2000.0])
        );
        assert_eq!(
            Sweep::parse("c=1,8,64").unwrap(),
            Sweep::Connections(vec![1, 8, 64])
        );
        for bad in [
            "rate",
            "rate=",
            "rate=1,,2",
            "conns=1.5",
            "conns=0",
            "speed=1",
            "rate=-1",
        ] {
            assert!(Sweep::parse(bad).is_err(), "{bad}");
        }
    }
}
