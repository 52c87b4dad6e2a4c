//! Server limits and timeouts, HTTP/1, HTTP/2 and HTTP/3.

use std::time::Duration;

/// Limits and timeouts of a [`Server`](crate::Server). Every field has a sensible default;
/// change the ones you need (a timeout of `Duration::MAX` means no limit):
///
/// ```
/// let config = volt_http::Config { max_body_bytes: 1 << 20, ..Default::default() };
/// # let _ = config;
/// ```
#[derive(Clone, Debug)]
pub struct Config {
    /// Largest request head (request line and header fields): 431 beyond. Default 16 KiB.
    pub max_head_bytes: usize,
    /// Most header fields in a request: 431 beyond. Default 100.
    pub max_headers: usize,
    /// Longest request target: 414 beyond. Default 8 KiB.
    pub max_uri_bytes: usize,
    /// Largest request body: 413 beyond (at once for a declared `Content-Length`, when the
    /// limit is crossed for chunked bodies). Default 16 MiB.
    pub max_body_bytes: u64,
    /// A request head must arrive within this time of its first byte: 408 otherwise (on
    /// HTTP/2, a header block not whole by then closes the connection with GOAWAY; the TLS
    /// handshake and the HTTP/2 preface are bounded by it too). Stops slowloris clients from
    /// holding a connection. Default 10 s.
    pub header_read_timeout: Duration,
    /// An idle keep-alive connection is closed after this long (on HTTP/3, QUIC's idle
    /// timeout: a connection with no packet for this long is gone). Default 60 s.
    pub idle_timeout: Duration,
    /// Longest wait for the next piece of a request body: 408 otherwise. Default 30 s.
    pub body_read_timeout: Duration,
    /// Longest wait for the client to take response bytes; the connection is closed
    /// otherwise (on HTTP/2, a response whose stream window stays shut this long resets its
    /// stream, and a connection window shut this long with nothing sent closes the
    /// connection). Default 30 s.
    pub write_timeout: Duration,
    /// Open connections per worker; accepting pauses at the limit. Default 10,000.
    pub max_connections_per_worker: usize,
    /// A new connection is handed to a worker once its first bytes arrived, or this long
    /// after the handshake if none do (`TCP_DEFER_ACCEPT`); `None` hands each over at once.
    /// HTTP clients speak first, so the worker then accepts and reads the request in one go
    /// instead of waking twice: a quarter less server CPU per new connection here (see
    /// BENCHMARKS.md). Rounded up to whole seconds. Default 1 s.
    pub defer_accept: Option<Duration>,
    /// Unread request body the server will read and discard after a response to keep the
    /// connection; a larger remainder closes it. Default 64 KiB.
    pub max_drain_bytes: u64,
    /// A connection that closes while the client may still be sending (after an error answer
    /// such as 400 or 413, or with a request body left unread) shuts its write side after the
    /// answer, then reads and discards what arrives for up to this long before it closes, or
    /// until the client closes: closing with bytes unread would send a reset, which fails a
    /// client's upload and can destroy the answer before the client reads it (RFC 9112 §9.6).
    /// Default 2 s.
    pub linger_timeout: Duration,
    /// The most a lingering close (see [`Config::linger_timeout`]) reads and discards before
    /// it closes anyway. Default 4 MiB.
    pub max_linger_bytes: u64,
    /// How long graceful shutdown waits for in-flight requests. Default 30 s.
    pub shutdown_timeout: Duration,
    /// HTTP/1: whether a client that ends its sending side (a TCP half-close, as `nc -N`
    /// does after its request) still gets the answer of a handler that has to wait. Off (the
    /// default), that end of stream means the client left, as hyper and nginx take it: the
    /// handler's future is dropped (a CGI script is killed, a long poll stops) and the
    /// connection closes. A handler that answers at once, or reads a request body, is
    /// answered either way.
    pub half_close: bool,
    /// The `Server` header value; `None` sends no `Server` header. Default `volt`.
    pub server_name: Option<String>,
    /// HTTP/2: streams one client may have open at once (`SETTINGS_MAX_CONCURRENT_STREAMS`);
    /// on HTTP/3, the requests a QUIC connection may have open at once. Default 256.
    pub h2_max_concurrent_streams: u32,
    /// HTTP/2: the flow-control window of each request body, in bytes: how much a client may
    /// send before the handler reads. Default 256 KiB.
    pub h2_initial_stream_window: u32,
    /// HTTP/2: the window shared by all request bodies of a connection. Default 1 MiB.
    pub h2_initial_connection_window: u32,
    /// HTTP/2: the largest decoded header list (`SETTINGS_MAX_HEADER_LIST_SIZE`); larger ones
    /// are refused. Default 16 KiB, as [`Config::max_head_bytes`].
    pub h2_max_header_list_size: u32,
    /// HTTP/2: the largest frame payload the server accepts (`SETTINGS_MAX_FRAME_SIZE`,
    /// 16 KiB to 16 MiB). Default 16 KiB.
    pub h2_max_frame_size: u32,
    /// HTTP/2 flood defence: frames that cost work without carrying a request (PING,
    /// SETTINGS and their ACKs, PRIORITY, RST_STREAM, GOAWAY, empty DATA and CONTINUATION
    /// frames, frames of unknown types, header blocks of streams not served, and
    /// WINDOW_UPDATEs beyond two per DATA frame the server sent and one per KiB of it) a
    /// client may send in a burst; the allowance refills in full every ten seconds. A client past it gets GOAWAY
    /// (`ENHANCE_YOUR_CALM`) and is closed. Default 1,000.
    pub h2_max_control_frames: u32,
    /// HTTP/2 reset defence: stream resets a client may cause in a burst, refilled in full
    /// every ten seconds. Counted: streams the client resets while the server still works on
    /// them (rapid reset, CVE-2023-44487) and streams the server must reset because the client
    /// broke the protocol on them ("MadeYouReset"). A client past it gets GOAWAY
    /// (`ENHANCE_YOUR_CALM`) and is closed. Default 200.
    pub h2_max_reset_streams: u32,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_head_bytes: 16 * 1024,
            max_headers: 100,
            max_uri_bytes: 8 * 1024,
            max_body_bytes: 16 * 1024 * 1024,
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            body_read_timeout: Duration::from_secs(30),
            write_timeout: Duration::from_secs(30),
            max_connections_per_worker: 10_000,
            defer_accept: Some(Duration::from_secs(1)),
            max_drain_bytes: 64 * 1024,
            linger_timeout: Duration::from_secs(2),
            max_linger_bytes: 4 * 1024 * 1024,
            shutdown_timeout: Duration::from_secs(30),
            half_close: false,
            server_name: Some("volt".into()),
            h2_max_concurrent_streams: 256,
            h2_initial_stream_window: 256 * 1024,
            h2_initial_connection_window: 1024 * 1024,
            h2_max_header_list_size: 16 * 1024,
            h2_max_frame_size: 16 * 1024,
            h2_max_control_frames: 1000,
            h2_max_reset_streams: 200,
        }
    }
}

impl Config {
    /// The timeouts capped at ~30 years, so that `Duration::MAX` means "no limit" rather than
    /// a panic when it is added to the time a wait starts.
    pub(crate) fn capped(mut self) -> Config {
        const NEVER: Duration = Duration::from_secs(30 * 365 * 86_400);
        for t in [
            &mut self.header_read_timeout,
            &mut self.idle_timeout,
            &mut self.body_read_timeout,
            &mut self.write_timeout,
            &mut self.linger_timeout,
            &mut self.shutdown_timeout,
        ] {
            *t = (*t).min(NEVER);
        }
        self
    }

    pub(crate) fn limits(&self) -> volt_proto::Limits {
        volt_proto::Limits {
            max_head_bytes: self.max_head_bytes,
            max_headers: self.max_headers,
            max_uri_len: self.max_uri_bytes,
        }
    }
}
