//! A raw-socket HTTP/1.1 test server on std threads: it answers with exactly the bytes a test
//! asks for (valid, malformed, stalled), and counts what it saw.
#![allow(dead_code)] // each test binary uses part of this module

pub mod h2server;
pub mod volt_server;

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How the server answers each request.
#[derive(Clone, Debug)]
pub enum Behavior {
    /// `200 OK`, `Content-Length: 13`, `Hello, World!` (no body for HEAD).
    Hello,
    /// `200 OK` with `X-Id: <path>` and the path as the body: tells which request was answered.
    Echo,
    /// This status with an empty body.
    Status(u16),
    /// A chunked body in two chunks, with a trailer.
    Chunked,
    /// A chunked body in two chunks, no trailer.
    ChunkedPlain,
    /// A body delimited by closing the connection.
    UntilClose,
    /// Like `Hello`, but the connection is closed after each response without saying so (no
    /// `Connection: close`), as a server with a very short keep-alive idle timeout does.
    OnePerConnection,
    /// Bytes that are no HTTP response at all.
    Garbage,
    /// A malformed status line.
    BadStatusLine,
    /// `Content-Length: 100`, 10 bytes of body, then close.
    TruncatedBody,
    /// Reads requests but never answers.
    Silent,
    /// Like `Hello`, but once, `at` after the first request, no response is written for
    /// `length` (every connection waits until the stall is over).
    Stall { at: Duration, length: Duration },
    /// Like `Hello`, but every answer is written this long after its request was read: a
    /// round trip takes at least this, however idle the host.
    Delay(Duration),
}

pub struct TestServer {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Acceptor,
}

struct Shared {
    behavior: Behavior,
    requests: AtomicUsize,
    first_request: Mutex<Option<Instant>>,
}

impl TestServer {
    pub fn start(behavior: Behavior) -> TestServer {
        let shared = Arc::new(Shared {
            behavior,
            requests: AtomicUsize::new(0),
            first_request: Mutex::new(None),
        });
        let s = shared.clone();
        let acceptor = Acceptor::start(move |conn, stop| serve(conn, &s, stop));
        TestServer {
            addr: acceptor.addr,
            shared,
            acceptor,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Connections accepted.
    pub fn accepts(&self) -> usize {
        self.acceptor.accepts()
    }

    /// Complete requests read.
    pub fn requests(&self) -> usize {
        self.shared.requests.load(Ordering::Acquire)
    }
}

/// A listener on a free port whose connections are each served on a thread of their own;
/// dropping it stops and joins them all.
pub struct Acceptor {
    pub addr: SocketAddr,
    accepts: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    connections: Arc<Mutex<Vec<JoinHandle<()>>>>,
    thread: Option<JoinHandle<()>>,
}

impl Acceptor {
    /// `serve` gets each connection and the flag that tells it to stop.
    pub fn start(serve: impl Fn(TcpStream, &AtomicBool) + Send + Sync + 'static) -> Acceptor {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a test port");
        let addr = listener.local_addr().unwrap();
        let accepts = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let connections = Arc::new(Mutex::new(Vec::new()));
        let serve = Arc::new(serve);
        let (a, s, c) = (accepts.clone(), stop.clone(), connections.clone());
        let thread = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.load(Ordering::Acquire) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                a.fetch_add(1, Ordering::AcqRel);
                let (serve, stop) = (serve.clone(), s.clone());
                let handle = std::thread::spawn(move || serve(conn, &stop));
                c.lock().unwrap().push(handle);
            }
        });
        Acceptor {
            addr,
            accepts,
            stop,
            connections,
            thread: Some(thread),
        }
    }

    /// Connections accepted.
    pub fn accepts(&self) -> usize {
        self.accepts.load(Ordering::Acquire)
    }
}

impl Drop for Acceptor {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        let _ = TcpStream::connect(self.addr); // wakes the accept loop
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let handles = std::mem::take(&mut *self.connections.lock().unwrap());
        for h in handles {
            let _ = h.join();
        }
    }
}

/// One connection: read requests, answer every complete one, in order, with one write.
fn serve(mut conn: TcpStream, s: &Shared, stop: &AtomicBool) {
    let _ = conn.set_nodelay(true);
    let _ = conn.set_read_timeout(Some(Duration::from_millis(50)));
    let mut buf = Vec::with_capacity(8192);
    let mut chunk = [0u8; 8192];
    // Reused, and answers written straight into it: the server allocates nothing per request,
    // so the allocation tests (which count every thread) see the load generator's alone.
    let mut out = Vec::with_capacity(8192);
    loop {
        if stop.load(Ordering::Acquire) {
            return;
        }
        match conn.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => continue,
            Err(_) => return,
        }
        out.clear();
        let mut close = false;
        loop {
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut req = httparse::Request::new(&mut headers);
            let Ok(httparse::Status::Complete(head_len)) = req.parse(&buf) else {
                break;
            };
            let body_len = req
                .headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                .and_then(|h| std::str::from_utf8(h.value).ok()?.parse::<usize>().ok())
                .unwrap_or(0);
            if buf.len() < head_len + body_len {
                break;
            }
            let path = req.path.unwrap_or("/");
            let head = req.method == Some("HEAD");
            let wants_close = req.headers.iter().any(|h| {
                h.name.eq_ignore_ascii_case("connection") && h.value.eq_ignore_ascii_case(b"close")
            });
            s.requests.fetch_add(1, Ordering::AcqRel);
            s.first_request
                .lock()
                .unwrap()
                .get_or_insert_with(Instant::now);
            close |= respond(&mut out, &s.behavior, path, head, wants_close);
            buf.drain(..head_len + body_len);
            if close {
                break;
            }
        }
        if out.is_empty() && !close {
            continue;
        }
        if let Behavior::Stall { at, length } = s.behavior {
            let first = s.first_request.lock().unwrap().expect("a request was read");
            let (from, until) = (first + at, first + at + length);
            let now = Instant::now();
            if now >= from && now < until {
                std::thread::sleep(until - now);
            }
        }
        if let Behavior::Delay(delay) = s.behavior {
            std::thread::sleep(delay);
        }
        if conn.write_all(&out).is_err() || close {
            return;
        }
    }
}

/// Appends the answer to one request; true when the connection is to be closed after it.
fn respond(out: &mut Vec<u8>, behavior: &Behavior, path: &str, head: bool, close: bool) -> bool {
    let connection = if close { "Connection: close\r\n" } else { "" };
    match behavior {
        Behavior::OnePerConnection => {
            respond(out, &Behavior::Hello, path, head, close);
            return true;
        }
        Behavior::Hello | Behavior::Stall { .. } | Behavior::Delay(_) => {
            let _ = write!(
                out,
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n{connection}Content-Length: 13\r\n\r\n"
            );
            if !head {
                out.extend_from_slice(b"Hello, World!");
            }
        }
        Behavior::Echo => {
            let _ = write!(
                out,
                "HTTP/1.1 200 OK\r\nX-Id: {path}\r\n{connection}Content-Length: {}\r\n\r\n",
                path.len()
            );
            if !head {
                out.extend_from_slice(path.as_bytes());
            }
        }
        Behavior::Status(code) => {
            let _ = write!(
                out,
                "HTTP/1.1 {code} Whatever\r\n{connection}Content-Length: 0\r\n\r\n"
            );
        }
        Behavior::Chunked => {
            let _ = write!(
                out,
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n{connection}\r\n\
                 5\r\nHello\r\n8;ext=1\r\n, World!\r\n0\r\nX-Trailer: yes\r\n\r\n"
            );
        }
        Behavior::ChunkedPlain => {
            let _ = write!(
                out,
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n{connection}\r\n\
                 5\r\nHello\r\n8;ext=1\r\n, World!\r\n0\r\n\r\n"
            );
        }
        Behavior::UntilClose => {
            out.extend_from_slice(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nHello, World!",
            );
            return true;
        }
        Behavior::Garbage => {
            out.extend_from_slice(b"this is not http at all\r\n\r\n");
        }
        Behavior::BadStatusLine => {
            out.extend_from_slice(b"HTTP/1.1 2OO OK\r\nContent-Length: 0\r\n\r\n");
        }
        Behavior::TruncatedBody => {
            out.extend_from_slice(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b");
            return true;
        }
        Behavior::Silent => {}
    }
    close
}

/// The base of a test configuration: one URL on `server`.
pub fn config(server: &TestServer, path: &str) -> volt_bench::ConfigBuilder {
    volt_bench::Config::builder()
        .url(server.url(path))
        .timeout(Duration::from_secs(5))
}

/// Runs the test body on its own thread and fails it if it hangs.
pub fn guard<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    let t = std::thread::spawn(move || {
        let out = f();
        let _ = tx.send(());
        out
    });
    match rx.recv_timeout(Duration::from_secs(120)) {
        Ok(()) | Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => match t.join() {
            Ok(out) => out,
            Err(panic) => std::panic::resume_unwind(panic),
        },
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => panic!("test hung"),
    }
}
