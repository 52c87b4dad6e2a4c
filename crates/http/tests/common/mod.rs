//! The harness of the raw-socket integration tests: a server on a free port, run on its own
//! thread, and a blocking client that writes exact bytes and reads exact responses back.
//!
//! Every read has a generous timeout, which is a hang guard only: a test that hits it has
//! found a server that never answered, not a slow one.
#![allow(dead_code)] // each test binary uses a different part of the harness

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::thread;
use std::time::{Duration, Instant};

use bytes::Bytes;
use volt_http::{any, Config, Request, Response, Router, Server, ServerHandle, Service};

/// How long a client waits for bytes before the test fails as hung.
pub const HANG_GUARD: Duration = Duration::from_secs(30);

/// A server running on a background thread; shut down and joined by [`TestServer::shutdown`]
/// (or on drop).
pub struct TestServer {
    addr: SocketAddr,
    handle: ServerHandle,
    thread: Option<thread::JoinHandle<io::Result<()>>>,
}

/// One worker, default limits.
pub fn start<S: Service>(service: S) -> TestServer {
    start_with(1, Config::default(), service)
}

/// `workers` workers and `config`.
pub fn start_with<S: Service>(workers: usize, config: Config, service: S) -> TestServer {
    serve(bound(workers, config), service)
}

/// `workers` workers, `config`, and TLS on the port.
pub fn start_tls<S: Service>(
    workers: usize,
    config: Config,
    tls: volt_http::Tls,
    service: S,
) -> TestServer {
    serve(bound(workers, config).tls(tls), service)
}

/// A server on a free loopback port with `workers` workers and `config`, signals left to the
/// test runner: to be given more options, then [`serve`]d.
pub fn bound(workers: usize, config: Config) -> Server {
    Server::bind("127.0.0.1:0")
        .expect("binding a free port")
        .workers(workers)
        .handle_signals(false)
        .config(config)
}

/// Serves `service` with `server` on a thread of its own.
pub fn serve<S: Service>(server: Server, service: S) -> TestServer {
    let addr = server.local_addr();
    let handle = server.handle();
    let thread = thread::Builder::new()
        .name("test-server".into())
        .spawn(move || server.serve(service))
        .expect("spawning the server thread");
    TestServer {
        addr,
        handle,
        thread: Some(thread),
    }
}

impl TestServer {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn handle(&self) -> ServerHandle {
        self.handle.clone()
    }

    /// A new client connection.
    pub fn connect(&self) -> Client {
        Client::connect(self.addr)
    }

    /// Sends one plain `GET /` on a new connection and returns the normalized response: proof
    /// that the server still serves after whatever the test did to another connection.
    pub fn get(&self, path: &str) -> String {
        let mut c = self.connect();
        c.send(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
        c.read_response().text()
    }

    /// Starts a graceful shutdown and waits for `serve` to return, which must be `Ok`.
    pub fn shutdown(mut self) {
        self.handle.shutdown();
        let thread = self.thread.take().expect("not joined yet");
        join_guarded(thread)
            .expect("serve returned within the hang guard")
            .expect("serve returned Ok");
    }

    /// Waits for `serve` to return after someone else called `shutdown`.
    pub fn join(mut self) -> io::Result<()> {
        let thread = self.thread.take().expect("not joined yet");
        join_guarded(thread).expect("serve returned within the hang guard")
    }
}

/// Joins `thread`, or `None` if it did not finish within the hang guard (it is then leaked).
fn join_guarded<T>(thread: thread::JoinHandle<T>) -> Option<T> {
    let start = Instant::now();
    while !thread.is_finished() {
        if start.elapsed() > HANG_GUARD * 2 {
            return None;
        }
        thread::sleep(Duration::from_millis(5));
    }
    Some(thread.join().expect("the server thread did not panic"))
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.handle.shutdown();
        if let Some(thread) = self.thread.take() {
            // A failing test must not hang in its destructor as well.
            if !thread::panicking() {
                let _ = join_guarded(thread);
            }
        }
    }
}

/// `/` echoes the body it reads, so body framing errors surface as the handler's `?` error;
/// `/ignore` reads none.
pub fn echo_app() -> Router {
    Router::new()
        .route(
            "/",
            any(|mut req: Request| async move { req.bytes().await.map(Response::text) }),
        )
        .route("/ignore", any(|_req| async { Response::text("ignored") }))
}

/// A blocking client connection with its own read buffer.
pub struct Client {
    stream: TcpStream,
    buf: Vec<u8>,
    pos: usize,
}

/// How a response was read back.
#[derive(Debug, Clone)]
pub struct RawResponse {
    /// The whole response as received: head, framing and body.
    pub raw: Vec<u8>,
    pub status: u16,
    /// The head, up to and including the blank line.
    pub head: String,
    /// The body with any chunked framing removed.
    pub body: Vec<u8>,
}

impl RawResponse {
    /// The response as text with the `Date` value replaced by `<date>` (after checking it is
    /// an IMF-fixdate).
    pub fn text(&self) -> String {
        normalize(&self.raw)
    }

    /// The value of header `name` (case-insensitive), if present.
    pub fn header(&self, name: &str) -> Option<&str> {
        header_in(&self.head, name)
    }

    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

fn header_in<'h>(head: &'h str, name: &str) -> Option<&'h str> {
    head.split("\r\n").skip(1).find_map(|line| {
        let (n, v) = line.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

impl Client {
    pub fn connect(addr: SocketAddr) -> Client {
        let stream = TcpStream::connect(addr).expect("connecting to the test server");
        stream.set_nodelay(true).unwrap();
        stream.set_read_timeout(Some(HANG_GUARD)).unwrap();
        stream.set_write_timeout(Some(HANG_GUARD)).unwrap();
        Client {
            stream,
            buf: Vec::new(),
            pos: 0,
        }
    }

    pub fn stream(&self) -> &TcpStream {
        &self.stream
    }

    /// Writes all of `bytes`; panics if the server is gone.
    pub fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("writing to the server");
    }

    /// Writes all of `bytes`, reporting a failure instead of panicking (for peers the server
    /// may already have closed).
    pub fn try_send(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.stream.write_all(bytes)
    }

    /// Half-closes the write side.
    pub fn shutdown_write(&self) {
        let _ = self.stream.shutdown(Shutdown::Write);
    }

    /// Reads more bytes into the buffer; `Ok(0)` at EOF.
    fn fill(&mut self) -> io::Result<usize> {
        if self.pos > 0 && self.pos == self.buf.len() {
            self.buf.clear();
            self.pos = 0;
        } else if self.pos > 64 * 1024 {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        let mut chunk = [0u8; 64 * 1024];
        let n = loop {
            // A read with a timeout returns EINTR when the thread is interrupted, and a test
            // thread that ran `volt_rt::block_on` on io_uring is (the ring's task work).
            match self.stream.read(&mut chunk) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => break other?,
            }
        };
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(n)
    }

    fn fill_or_panic(&mut self, what: &str) {
        match self.fill() {
            Ok(0) => panic!(
                "connection closed while reading {what}; have {:?}",
                String::from_utf8_lossy(&self.buf[self.pos..])
            ),
            Ok(_) => {}
            Err(e) => panic!(
                "reading {what}: {e}; have {:?}",
                String::from_utf8_lossy(&self.buf[self.pos..])
            ),
        }
    }

    fn pending(&self) -> &[u8] {
        &self.buf[self.pos..]
    }

    /// Takes bytes up to and including the next CRLF.
    fn take_line(&mut self, raw: &mut Vec<u8>, what: &str) -> Vec<u8> {
        loop {
            if let Some(i) = find(self.pending(), b"\r\n") {
                let line = self.pending()[..i].to_vec();
                raw.extend_from_slice(&self.pending()[..i + 2]);
                self.pos += i + 2;
                return line;
            }
            self.fill_or_panic(what);
        }
    }

    /// Hands `n` body bytes to `sink`, also appending them to `raw` if given.
    fn take_exact(
        &mut self,
        mut n: u64,
        mut raw: Option<&mut Vec<u8>>,
        sink: &mut dyn FnMut(&[u8]),
    ) {
        while n > 0 {
            if self.pending().is_empty() {
                self.fill_or_panic("a response body");
            }
            let take = (self.pending().len() as u64).min(n) as usize;
            let data = &self.buf[self.pos..self.pos + take];
            sink(data);
            if let Some(raw) = raw.as_deref_mut() {
                raw.extend_from_slice(data);
            }
            self.pos += take;
            n -= take as u64;
        }
    }

    /// Reads one response to a request that may have a body (not HEAD).
    pub fn read_response(&mut self) -> RawResponse {
        self.read_response_to(false)
    }

    /// Reads one response to a HEAD request: the head only.
    pub fn read_head_response(&mut self) -> RawResponse {
        self.read_response_to(true)
    }

    fn read_response_to(&mut self, head_request: bool) -> RawResponse {
        let mut raw = Vec::new();
        let mut body = Vec::new();
        let (status, head) = self.read_message(head_request, Some(&mut raw), &mut |d| {
            body.extend_from_slice(d)
        });
        RawResponse {
            raw,
            status,
            head,
            body,
        }
    }

    /// Reads one response, handing its body to `sink` piece by piece (nothing is kept), and
    /// returns the status and head.
    pub fn read_response_streaming(&mut self, sink: &mut dyn FnMut(&[u8])) -> (u16, String) {
        self.read_message(false, None, sink)
    }

    fn read_message(
        &mut self,
        head_request: bool,
        mut raw: Option<&mut Vec<u8>>,
        sink: &mut dyn FnMut(&[u8]),
    ) -> (u16, String) {
        let head_len = loop {
            if let Some(i) = find(self.pending(), b"\r\n\r\n") {
                break i + 4;
            }
            self.fill_or_panic("a response head");
        };
        let head = String::from_utf8(self.pending()[..head_len].to_vec()).expect("ASCII head");
        self.pos += head_len;
        if let Some(raw) = raw.as_deref_mut() {
            raw.extend_from_slice(head.as_bytes());
        }
        let status: u16 = head
            .get(9..12)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("bad status line in {head:?}"));
        let no_body =
            head_request || (100..200).contains(&status) || status == 204 || status == 304;
        let chunked = header_in(&head, "transfer-encoding")
            .is_some_and(|v| v.eq_ignore_ascii_case("chunked"));
        let length = header_in(&head, "content-length").map(|v| {
            v.parse::<u64>()
                .unwrap_or_else(|_| panic!("bad content-length in {head:?}"))
        });
        if no_body {
        } else if chunked {
            let mut scratch = Vec::new();
            loop {
                let raw_line = raw.as_deref_mut().unwrap_or(&mut scratch);
                let line = self.take_line(raw_line, "a chunk size");
                let line = String::from_utf8(line).expect("ASCII chunk line");
                let size_hex = line.split(';').next().unwrap().trim();
                let size = u64::from_str_radix(size_hex, 16)
                    .unwrap_or_else(|_| panic!("bad chunk size line {line:?}"));
                if size == 0 {
                    // Trailers, then the blank line.
                    loop {
                        let raw_line = raw.as_deref_mut().unwrap_or(&mut scratch);
                        if self.take_line(raw_line, "trailers").is_empty() {
                            break;
                        }
                    }
                    break;
                }
                self.take_exact(size, raw.as_deref_mut(), sink);
                let raw_line = raw.as_deref_mut().unwrap_or(&mut scratch);
                let crlf = self.take_line(raw_line, "a chunk's CRLF");
                assert!(crlf.is_empty(), "chunk data longer than its size");
                scratch.clear();
            }
        } else if let Some(n) = length {
            self.take_exact(n, raw, sink);
        } else {
            // Delimited by the close.
            loop {
                if !self.pending().is_empty() {
                    let data = self.buf[self.pos..].to_vec();
                    sink(&data);
                    if let Some(raw) = raw.as_deref_mut() {
                        raw.extend_from_slice(&data);
                    }
                    self.pos = self.buf.len();
                }
                match self.fill() {
                    Ok(0) => break,
                    Ok(_) => {}
                    Err(e) => panic!("reading a close-delimited body: {e}"),
                }
            }
        }
        (status, head)
    }

    /// Asserts the server closed the connection: nothing more is buffered and the next read
    /// sees EOF (or a reset, which is how a close with unread request bytes looks).
    pub fn expect_closed(&mut self) {
        assert!(
            self.pending().is_empty(),
            "unexpected bytes before the close: {:?}",
            String::from_utf8_lossy(self.pending())
        );
        match self.fill() {
            Ok(0) => {}
            Ok(_) => panic!(
                "expected the connection to be closed, got {:?}",
                String::from_utf8_lossy(self.pending())
            ),
            Err(e) if is_reset(&e) => {}
            Err(e) => panic!("expected the connection to be closed, got the error {e}"),
        }
    }

    /// Reads everything until the server closes (a reset also ends it).
    pub fn read_to_end(&mut self) -> Vec<u8> {
        self.read_to_close().0
    }

    /// [`Client::read_to_end`], and whether the close was a reset (else a clean end).
    pub fn read_to_close(&mut self) -> (Vec<u8>, bool) {
        let reset = loop {
            match self.fill() {
                Ok(0) => break false,
                Ok(_) => {}
                Err(e) if is_reset(&e) => break true,
                Err(e) => panic!("reading until close: {e}"),
            }
        };
        let rest = self.pending().to_vec();
        self.pos = self.buf.len();
        (rest, reset)
    }

    /// Waits up to `wait` for bytes, returning (and consuming) whatever arrived: empty if
    /// nothing did, `None` if the connection was closed instead.
    pub fn poll_bytes(&mut self, wait: Duration) -> Option<Vec<u8>> {
        self.stream.set_read_timeout(Some(wait)).unwrap();
        let r = self.fill();
        self.stream.set_read_timeout(Some(HANG_GUARD)).unwrap();
        match r {
            Ok(0) => None,
            Ok(_) => {
                let got = self.pending().to_vec();
                self.pos = self.buf.len();
                Some(got)
            }
            Err(e)
                if e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::TimedOut =>
            {
                Some(Vec::new())
            }
            Err(e) if is_reset(&e) => None,
            Err(e) => panic!("polling for bytes: {e}"),
        }
    }
}

pub fn is_reset(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe
    )
}

pub fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// `raw` as text with every `Date:` value replaced by `<date>`; panics if a value is not an
/// IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`).
pub fn normalize(raw: &[u8]) -> String {
    let text = String::from_utf8_lossy(raw).into_owned();
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(i) = rest.find("\r\nDate: ") {
        let value_at = i + "\r\nDate: ".len();
        out.push_str(&rest[..value_at]);
        let value_end = rest[value_at..]
            .find("\r\n")
            .map_or(rest.len(), |e| value_at + e);
        let value = &rest[value_at..value_end];
        assert!(
            is_imf_fixdate(value),
            "Date is not an IMF-fixdate: {value:?}"
        );
        out.push_str("<date>");
        rest = &rest[value_end..];
    }
    out.push_str(rest);
    out
}

/// Whether `s` is an IMF-fixdate (RFC 9110 §5.6.7).
pub fn is_imf_fixdate(s: &str) -> bool {
    const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    let num = |r: std::ops::Range<usize>| s[r].parse::<u32>().unwrap_or(99);
    b.len() == 29
        && DAYS.contains(&&s[0..3])
        && &s[3..5] == ", "
        && digits(5..7)
        && (1..=31).contains(&num(5..7))
        && b[7] == b' '
        && MONTHS.contains(&&s[8..11])
        && b[11] == b' '
        && digits(12..16)
        && b[16] == b' '
        && digits(17..19)
        && num(17..19) < 24
        && b[19] == b':'
        && digits(20..22)
        && num(20..22) < 60
        && b[22] == b':'
        && digits(23..25)
        && num(23..25) < 61
        && &s[25..] == " GMT"
}

/// The normalized bytes of a response from `Response::text`/`Error` (`text/plain`).
pub fn text_response(status_line: &str, extra_headers: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status_line}\r\nServer: volt\r\nDate: <date>\r\nContent-Type: text/plain\r\n\
         {extra_headers}content-length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// The normalized bytes of an error answer that closes the connection: `message` plus a
/// newline as the body, `Connection: close`.
pub fn error_close(status_line: &str, message: &str) -> String {
    let body = format!("{message}\n");
    format!(
        "HTTP/1.1 {status_line}\r\nServer: volt\r\nDate: <date>\r\nContent-Type: text/plain\r\n\
         content-length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// Resident memory of this process in bytes, from `/proc/self/status`.
pub fn vm_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("reading /proc/self/status");
    let line = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .expect("VmRSS in /proc/self/status");
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .expect("a number of kB");
    kib * 1024
}

/// Polls `cond` every few milliseconds until it holds; panics after the hang guard.
pub fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < HANG_GUARD, "timed out waiting for {what}");
        thread::sleep(Duration::from_millis(5));
    }
}

/// A small deterministic generator for split points and test data.
pub struct XorShift(pub u64);

impl XorShift {
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// A value in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next() % (hi - lo + 1) as u64) as usize
    }
}

/// A response body stream that yields `n` chunks (`part`), then panics.
pub struct PanicAfter(pub u32);

impl futures_core::Stream for PanicAfter {
    type Item = io::Result<Bytes>;
    fn poll_next(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.0 == 0 {
            panic!("body stream panicked on purpose");
        }
        self.0 -= 1;
        Poll::Ready(Some(Ok(Bytes::from_static(b"part"))))
    }
}

/// A response body stream over an iterator, always ready.
pub struct Iter<I>(pub I);

impl<I: Iterator + Unpin> futures_core::Stream for Iter<I> {
    type Item = I::Item;
    fn poll_next(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<I::Item>> {
        Poll::Ready(self.0.next())
    }
}

/// A WebSocket session that sends every message back until the client closes.
pub async fn ws_echo(mut ws: volt_http::WebSocket) -> io::Result<()> {
    while let Some(msg) = ws.recv().await? {
        ws.send(msg).await?;
    }
    Ok(())
}
