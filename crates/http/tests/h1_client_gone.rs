//! A client that leaves while its handler waits: the handler's future is dropped at once
//! (before, it ran to its end for nobody, and a CGI script lived until its timeout), unless
//! `Config::half_close` says an end of stream is a half-close, which still gets its answer.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::Client;
use volt_http::{get, Config, Request, Router};

/// Sets its flag when dropped: the handler's future was dropped before its end.
struct Dropped(Arc<AtomicBool>);

impl Drop for Dropped {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// `/wait` answers after `wait`, holding a [`Dropped`] on `dropped` meanwhile; `/` at once.
fn app(wait: Duration, dropped: Arc<AtomicBool>) -> Router {
    Router::new()
        .route("/", get(|_req: Request| async { "now" }))
        .route(
            "/wait",
            get(move |_req: Request| {
                let guard = Dropped(dropped.clone());
                async move {
                    volt_rt::time::sleep(wait).await;
                    std::mem::forget(guard);
                    "late"
                }
            }),
        )
}

fn eventually(flag: &AtomicBool) -> bool {
    let start = Instant::now();
    while !flag.load(Ordering::SeqCst) {
        if start.elapsed() > Duration::from_secs(10) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

#[test]
fn a_client_that_leaves_drops_its_waiting_handler() {
    let dropped = Arc::new(AtomicBool::new(false));
    let server = common::start(app(Duration::from_secs(600), dropped.clone()));
    let mut c = Client::connect(server.addr());
    c.send(b"GET /wait HTTP/1.1\r\nHost: t\r\n\r\n");
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        !dropped.load(Ordering::SeqCst),
        "dropped before the client left"
    );
    drop(c);
    assert!(eventually(&dropped), "the handler outlived its client");
    // The worker goes on.
    let mut c = Client::connect(server.addr());
    c.send(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(c.read_response().body_text(), "now");
}

/// Requests pipelined behind a waiting one are kept while it waits, and answered after it.
#[test]
fn requests_pipelined_behind_a_waiting_handler_are_kept() {
    let dropped = Arc::new(AtomicBool::new(false));
    let server = common::start(app(Duration::from_millis(300), dropped.clone()));
    let mut c = Client::connect(server.addr());
    c.send(b"GET /wait HTTP/1.1\r\nHost: t\r\n\r\n");
    std::thread::sleep(Duration::from_millis(100));
    c.send(b"GET / HTTP/1.1\r\nHost: t\r\n\r\nGET / HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(c.read_response().body_text(), "late");
    assert_eq!(c.read_response().body_text(), "now");
    assert_eq!(c.read_response().body_text(), "now");
    assert!(!dropped.load(Ordering::SeqCst));
}

/// By default a half-close looks like leaving: the waiting handler is dropped, no answer.
/// With `half_close`, the client gets its answer after its end of stream.
#[test]
fn a_half_close_is_an_end_unless_half_close_is_on() {
    let dropped = Arc::new(AtomicBool::new(false));
    let server = common::start(app(Duration::from_millis(300), dropped.clone()));
    let mut c = Client::connect(server.addr());
    c.send(b"GET /wait HTTP/1.1\r\nHost: t\r\n\r\n");
    c.shutdown_write();
    let (bytes, _) = c.read_to_close();
    assert!(bytes.is_empty(), "{}", String::from_utf8_lossy(&bytes));
    assert!(eventually(&dropped));

    let dropped = Arc::new(AtomicBool::new(false));
    let config = Config {
        half_close: true,
        ..Config::default()
    };
    let server = common::start_with(1, config, app(Duration::from_millis(300), dropped.clone()));
    let mut c = Client::connect(server.addr());
    c.send(b"GET /wait HTTP/1.1\r\nHost: t\r\n\r\n");
    c.shutdown_write();
    assert_eq!(c.read_response().body_text(), "late");
    assert!(!dropped.load(Ordering::SeqCst));
}
