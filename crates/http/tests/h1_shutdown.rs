//! Graceful shutdown: requests in flight get their whole answer (with `Connection: close`),
//! idle connections are closed, new connections are refused, and `serve` returns.

mod common;

use std::io;
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{text_response, wait_until, Client, TestServer};
use volt_http::{get, post, Config, Request, Response, Router};

/// `/slow` waits until released; `/upload` reads its whole body, however slowly it comes.
struct Gate {
    entered: AtomicUsize,
    release: AtomicBool,
}

fn app(gate: Arc<Gate>) -> Router {
    let slow_gate = gate.clone();
    Router::new()
        .route("/", get(|_req| async { Response::text("hi") }))
        .route(
            "/slow",
            get(move |_req| {
                let gate = slow_gate.clone();
                async move {
                    gate.entered.fetch_add(1, Ordering::SeqCst);
                    while !gate.release.load(Ordering::SeqCst) {
                        volt_rt::time::sleep(Duration::from_millis(5)).await;
                    }
                    Response::text("done")
                }
            }),
        )
        .route(
            "/upload",
            post(move |mut req: Request| {
                let gate = gate.clone();
                async move {
                    gate.entered.fetch_add(1, Ordering::SeqCst);
                    req.bytes()
                        .await
                        .map(|b| Response::text(format!("got {} bytes", b.len())))
                }
            }),
        )
}

fn gate() -> Arc<Gate> {
    Arc::new(Gate {
        entered: AtomicUsize::new(0),
        release: AtomicBool::new(false),
    })
}

const DONE_CLOSE: &str =
    "HTTP/1.1 200 OK\r\nServer: volt\r\nDate: <date>\r\nContent-Type: text/plain\r\n\
                          content-length: 4\r\nConnection: close\r\n\r\ndone";

/// Waits until connecting fails with "refused": the listeners are gone. A connection that
/// still gets through (queued before the listener closed) is dropped and the check repeated.
fn wait_refused(server: &TestServer) {
    let addr = server.addr();
    wait_until(
        "new connections to be refused",
        || match TcpStream::connect(addr) {
            Ok(_) => false,
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => true,
            Err(e) => {
                eprintln!("connecting after shutdown: {e} ({:?})", e.kind());
                false
            }
        },
    );
}

fn idle_client(server: &TestServer) -> Client {
    let mut c = server.connect();
    c.send(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(c.read_response().text(), text_response("200 OK", "", "hi"));
    c
}

fn in_flight_requests_finish(workers: usize) {
    let gate = gate();
    let server = common::start_with(workers, Config::default(), app(gate.clone()));
    let mut idle: Vec<Client> = (0..3).map(|_| idle_client(&server)).collect();
    let mut busy: Vec<Client> = (0..4)
        .map(|_| {
            let mut c = server.connect();
            c.send(b"GET /slow HTTP/1.1\r\nHost: t\r\n\r\n");
            c
        })
        .collect();
    wait_until("every slow handler to start", || {
        gate.entered.load(Ordering::SeqCst) == busy.len()
    });

    let handle = server.handle();
    handle.shutdown();

    // Idle connections are closed at once, while the busy ones are still busy.
    for c in &mut idle {
        c.expect_closed();
    }
    wait_refused(&server);
    assert!(!gate.release.load(Ordering::SeqCst));

    gate.release.store(true, Ordering::SeqCst);
    for c in &mut busy {
        assert_eq!(c.read_response().text(), DONE_CLOSE);
        c.expect_closed();
    }
    server.join().expect("serve returned Ok");
}

#[test]
fn in_flight_requests_finish_on_one_worker() {
    in_flight_requests_finish(1);
}

#[test]
fn in_flight_requests_finish_on_two_workers() {
    in_flight_requests_finish(2);
}

/// A handler still reading its body when shutdown starts gets the rest and answers.
#[test]
fn request_body_in_flight_is_read_to_the_end() {
    let gate = gate();
    let server = common::start(app(gate.clone()));
    let mut c = server.connect();
    c.send(b"POST /upload HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nhello");
    wait_until("the upload handler to start", || {
        gate.entered.load(Ordering::SeqCst) == 1
    });
    server.handle().shutdown();
    wait_refused(&server);
    c.send(b"world");
    assert_eq!(
        c.read_response().text(),
        "HTTP/1.1 200 OK\r\nServer: volt\r\nDate: <date>\r\nContent-Type: text/plain\r\n\
         content-length: 12\r\nConnection: close\r\n\r\ngot 10 bytes"
    );
    c.expect_closed();
    server.join().expect("serve returned Ok");
}

/// Requests pipelined behind the one in flight are not started once shutdown began.
#[test]
fn pipelined_requests_behind_the_one_in_flight_are_not_started() {
    let gate = gate();
    let server = common::start(app(gate.clone()));
    let mut c = server.connect();
    c.send(
        b"GET /slow HTTP/1.1\r\nHost: t\r\n\r\n\
          GET /slow HTTP/1.1\r\nHost: t\r\n\r\n",
    );
    wait_until("the first slow handler to start", || {
        gate.entered.load(Ordering::SeqCst) == 1
    });
    server.handle().shutdown();
    wait_refused(&server);
    gate.release.store(true, Ordering::SeqCst);
    assert_eq!(c.read_response().text(), DONE_CLOSE);
    c.expect_closed();
    assert_eq!(gate.entered.load(Ordering::SeqCst), 1);
    server.join().expect("serve returned Ok");
}

/// A handler that never finishes holds shutdown up only for `shutdown_timeout`.
#[test]
fn shutdown_timeout_bounds_a_stuck_handler() {
    let gate = gate();
    let config = Config {
        shutdown_timeout: Duration::from_millis(200),
        ..Default::default()
    };
    let server = common::start_with(1, config, app(gate.clone()));
    let mut c = server.connect();
    c.send(b"GET /slow HTTP/1.1\r\nHost: t\r\n\r\n");
    wait_until("the slow handler to start", || {
        gate.entered.load(Ordering::SeqCst) == 1
    });
    server.handle().shutdown();
    server.join().expect("serve returned Ok");
    // The stuck connection was dropped with the server.
    assert!(c.read_to_end().is_empty());
}

#[test]
fn shutdown_before_serve_returns_at_once() {
    let server = volt_http::Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .handle_signals(false);
    server.handle().shutdown();
    server.serve(app(gate())).expect("serve returned Ok");
}

#[test]
fn shutdown_of_an_idle_server() {
    let server = common::start_with(2, Config::default(), app(gate()));
    assert_eq!(server.get("/"), text_response("200 OK", "", "hi"));
    server.shutdown();
}

/// A connection that sent part of a head when shutdown began is not idle: it may finish its
/// request, which is answered with `Connection: close`.
#[test]
fn request_head_arriving_during_shutdown_is_answered() {
    let gate = gate();
    let server = common::start(app(gate.clone()));
    let mut busy = server.connect();
    busy.send(b"GET /slow HTTP/1.1\r\nHost: t\r\n\r\n");
    // The partial head rides along with a whole request: once that one is answered, the
    // server holds the partial head (bytes merely in flight could race the shutdown, and a
    // server cannot tell those from none).
    let mut partial = server.connect();
    partial.send(b"GET / HTTP/1.1\r\nHost: t\r\n\r\nGET / HTTP/1.1\r\nHo");
    assert_eq!(
        partial.read_response().text(),
        text_response("200 OK", "", "hi")
    );
    wait_until("the slow handler to start", || {
        gate.entered.load(Ordering::SeqCst) == 1
    });
    server.handle().shutdown();
    wait_refused(&server);
    partial.send(b"st: t\r\n\r\n");
    let r = partial.read_response();
    assert_eq!(r.status, 200);
    assert_eq!(r.header("connection"), Some("close"));
    partial.expect_closed();
    gate.release.store(true, Ordering::SeqCst);
    assert_eq!(busy.read_response().text(), DONE_CLOSE);
    server.join().expect("serve returned Ok");
}

/// A connection skipping the rest of a body its handler did not read (after a keep-alive
/// answer) is closed by shutdown, not kept until the client sends the rest: it once waited out
/// `body_read_timeout` (bounded only by `shutdown_timeout`), neither idle nor in flight.
#[test]
fn shutdown_ends_the_drain_of_an_unread_body() {
    // Both far longer than the client's read guard: a server waiting either out fails the read.
    let config = Config {
        body_read_timeout: Duration::from_secs(600),
        shutdown_timeout: Duration::from_secs(600),
        ..Default::default()
    };
    let server = common::start_with(1, config, app(gate()));
    let mut c = server.connect();
    // `/` reads no body: 3 of the 100 bytes come, the rest never does.
    c.send(b"GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\nabc");
    assert_eq!(c.read_response().text(), text_response("200 OK", "", "hi"));
    server.handle().shutdown();
    c.expect_closed();
    server.join().expect("serve returned Ok");
}
