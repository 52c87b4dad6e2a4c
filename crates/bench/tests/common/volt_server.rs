//! volt's own server (volt-http, which speaks h2c with prior knowledge on any plain port) on
//! a thread of its own, with handlers that count what they saw.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use volt_http::{get, Config, Request, Router, Server, ServerHandle, StatusCode};

/// What the handlers counted.
#[derive(Default)]
pub struct Calls {
    /// Handler calls.
    pub calls: AtomicUsize,
    /// Calls under way right now, and the most at once.
    pub running: AtomicUsize,
    pub max_running: AtomicUsize,
}

pub struct VoltServer {
    pub addr: SocketAddr,
    scheme: &'static str,
    pub calls: Arc<Calls>,
    handle: ServerHandle,
    thread: Option<std::thread::JoinHandle<std::io::Result<()>>>,
}

/// Serves `/` (200, `Hello, World!`), `/slow` (the same after `delay`, counting how many run at
/// once), `/503`; anything else is the router's 404.
pub fn start(config: Config, delay: Duration) -> VoltServer {
    start_with(config, delay, None, false)
}

/// [`start`] over TLS, with a self-signed certificate for `localhost` made now; HTTP/2 or
/// HTTP/1.1 by ALPN.
pub fn start_tls(config: Config, delay: Duration) -> VoltServer {
    start_with(config, delay, Some(test_tls()), false)
}

/// [`start_tls`], serving HTTP/3 too (QUIC on the same port number in UDP). Returns once the
/// UDP port is bound: the workers bind it as they start, after the TCP listener.
#[allow(dead_code)] // Used by the HTTP/3 tests only.
pub fn start_h3(config: Config, delay: Duration) -> VoltServer {
    let server = start_with(config, delay, Some(test_tls()), true);
    // A byte to the port from a connected socket: loopback answers a port with nothing bound
    // with ICMP, which the next receive reports as refused; a QUIC endpoint drops the byte.
    let probe = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    probe.connect(server.addr).unwrap();
    probe
        .set_read_timeout(Some(Duration::from_millis(20)))
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let _ = probe.send(&[0]);
        match probe.recv(&mut [0; 64]) {
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {}
            _ => return server,
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the QUIC port never opened"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn test_tls() -> volt_http::Tls {
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_string()])
        .expect("generating a test certificate");
    let (cert, key) = (made.cert.pem(), made.key_pair.serialize_pem());
    let key = volt_http::CertKey::from_pem(cert.as_bytes(), key.as_bytes()).unwrap();
    volt_http::TlsConfig::new(key).build().unwrap()
}

fn start_with(
    config: Config,
    delay: Duration,
    tls: Option<volt_http::Tls>,
    http3: bool,
) -> VoltServer {
    let calls = Arc::new(Calls::default());
    let (c1, c2, c3) = (calls.clone(), calls.clone(), calls.clone());
    let app = Router::new()
        .route(
            "/",
            get(move |_req: Request| {
                c1.calls.fetch_add(1, Ordering::AcqRel);
                async { "Hello, World!" }
            }),
        )
        .route(
            "/slow",
            get(move |_req: Request| {
                let calls = c2.clone();
                async move {
                    calls.calls.fetch_add(1, Ordering::AcqRel);
                    let now = calls.running.fetch_add(1, Ordering::AcqRel) + 1;
                    calls.max_running.fetch_max(now, Ordering::AcqRel);
                    volt_rt::time::sleep(delay).await;
                    calls.running.fetch_sub(1, Ordering::AcqRel);
                    "Hello, World!"
                }
            }),
        )
        .route(
            "/503",
            get(move |_req: Request| {
                c3.calls.fetch_add(1, Ordering::AcqRel);
                async { StatusCode::SERVICE_UNAVAILABLE }
            }),
        );
    let server = Server::bind("127.0.0.1:0")
        .expect("binding a free port")
        .workers(1)
        .handle_signals(false)
        .config(config);
    let scheme = if tls.is_some() { "https" } else { "http" };
    let server = match tls {
        Some(tls) => server.tls(tls).http3(http3),
        None => server,
    };
    let addr = server.local_addr();
    let handle = server.handle();
    let thread = std::thread::spawn(move || server.serve(app));
    VoltServer {
        addr,
        scheme,
        calls,
        handle,
        thread: Some(thread),
    }
}

impl VoltServer {
    pub fn url(&self, path: &str) -> String {
        format!("{}://{}{path}", self.scheme, self.addr)
    }

    pub fn calls(&self) -> usize {
        self.calls.calls.load(Ordering::Acquire)
    }

    /// Starts the server's graceful shutdown (GOAWAY on HTTP/2 and HTTP/3) and returns.
    #[allow(dead_code)] // Used by the HTTP/3 tests only.
    pub fn begin_shutdown(&self) {
        self.handle.shutdown();
    }

    pub fn max_running(&self) -> usize {
        self.calls.max_running.load(Ordering::Acquire)
    }
}

impl Drop for VoltServer {
    fn drop(&mut self) {
        self.handle.shutdown();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
