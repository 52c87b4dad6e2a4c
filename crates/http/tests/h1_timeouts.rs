//! Timeouts: slow heads (408), idle keep-alive connections, stalled bodies (408) and clients
//! that stop reading. The timeouts are short; the tests assert only that each one eventually
//! acts, never how fast.

mod common;

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::{error_close, text_response};
use volt_http::{get, post, Body, Config, Request, Response, Router};

const SHORT: Duration = Duration::from_millis(200);

fn app() -> Router {
    Router::new()
        .route("/", get(|_req| async { Response::text("hi") }))
        .route(
            "/bytes",
            post(|mut req: Request| async move { req.bytes().await.map(Response::text) }),
        )
        .route(
            "/endless",
            get(|_req| async {
                Response::bytes(Body::stream(Endless(Bytes::from(vec![b'z'; 65536]))))
            }),
        )
        .route(
            // The same, while a task of its own waits for the request body.
            "/endless-reading-body",
            post(|mut req: Request| async move {
                volt_rt::spawn(
                    async move { while let Ok(Some(_)) = req.body_mut().chunk().await {} },
                );
                Response::bytes(Body::stream(Endless(Bytes::from(vec![b'z'; 65536]))))
            }),
        )
}

/// A body that never ends.
struct Endless(Bytes);

impl futures_core::Stream for Endless {
    type Item = io::Result<Bytes>;
    fn poll_next(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Poll::Ready(Some(Ok(self.0.clone())))
    }
}

fn short(config: Config) -> Config {
    Config {
        header_read_timeout: SHORT,
        idle_timeout: SHORT,
        body_read_timeout: SHORT,
        write_timeout: SHORT,
        ..config
    }
}

#[test]
fn slowloris_head_gets_408_and_is_closed() {
    let server = common::start_with(1, short(Config::default()), app());
    let mut c = server.connect();
    c.send(b"GET / HTTP/1.1\r\nHost: t\r\nX-Slow: ");
    // One byte every 100 ms, for far longer than the head timeout; the head never ends.
    let mut got = Vec::new();
    let mut closed = false;
    for _ in 0..300 {
        if c.try_send(b"a").is_err() {
            break;
        }
        match c.poll_bytes(Duration::from_millis(100)) {
            Some(bytes) if bytes.is_empty() => {}
            Some(bytes) => {
                got = bytes;
                break;
            }
            None => {
                closed = true;
                break;
            }
        }
    }
    assert!(!closed, "closed without an answer");
    assert!(
        !got.is_empty(),
        "no answer while the client trickled for 30 s"
    );
    let rest = c.read_to_end();
    got.extend_from_slice(&rest);
    assert_eq!(
        common::normalize(&got),
        error_close("408 Request Timeout", "request head took too long")
    );
    assert_eq!(server.get("/"), text_response("200 OK", "", "hi"));
}

#[test]
fn partial_head_after_a_request_gets_408() {
    let server = common::start_with(1, short(Config::default()), app());
    let mut c = server.connect();
    c.send(b"GET / HTTP/1.1\r\nHost: t\r\n\r\nGET / HTTP/1.1\r\nHo");
    assert_eq!(c.read_response().text(), text_response("200 OK", "", "hi"));
    assert_eq!(
        c.read_response().text(),
        error_close("408 Request Timeout", "request head took too long")
    );
    c.expect_closed();
}

#[test]
fn idle_keep_alive_connection_is_closed_after_idle_timeout() {
    let server = common::start_with(1, short(Config::default()), app());
    let mut c = server.connect();
    // The server's idle time starts after it wrote the answer, so after this instant.
    let sent = Instant::now();
    c.send(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(c.read_response().text(), text_response("200 OK", "", "hi"));
    // Quietly: no 408 for a connection that was between requests.
    c.expect_closed();
    // Not closed right after the answer (half the timeout leaves room for coarse timers).
    assert!(
        sent.elapsed() >= SHORT / 2,
        "closed before the idle timeout"
    );
    assert_eq!(server.get("/"), text_response("200 OK", "", "hi"));
}

#[test]
fn connection_that_never_sends_is_closed() {
    let server = common::start_with(1, short(Config::default()), app());
    let mut c = server.connect();
    c.expect_closed();
}

#[test]
fn idle_timeout_does_not_close_a_busy_connection() {
    // The idle timer restarts with each request: a connection used 10 times, each time well
    // within an idle timeout that is shorter than the whole exchange, stays open.
    let config = Config {
        idle_timeout: Duration::from_secs(5),
        ..Default::default()
    };
    let server = common::start_with(1, config, app());
    let mut c = server.connect();
    for _ in 0..10 {
        c.send(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n");
        assert_eq!(c.read_response().text(), text_response("200 OK", "", "hi"));
    }
}

#[test]
fn stalled_content_length_body_gets_408() {
    let server = common::start_with(1, short(Config::default()), app());
    let mut c = server.connect();
    c.send(b"POST /bytes HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc");
    assert_eq!(
        c.read_response().text(),
        error_close("408 Request Timeout", "request body took too long")
    );
    c.expect_closed();
    assert_eq!(server.get("/"), text_response("200 OK", "", "hi"));
}

#[test]
fn stalled_chunked_body_gets_408() {
    let server = common::start_with(1, short(Config::default()), app());
    let mut c = server.connect();
    c.send(b"POST /bytes HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel");
    assert_eq!(
        c.read_response().text(),
        error_close("408 Request Timeout", "request body took too long")
    );
    c.expect_closed();
}

/// A body that keeps coming, however slowly, is not cut off: the timeout is per wait.
#[test]
fn slow_but_steady_body_is_read() {
    let config = Config {
        body_read_timeout: Duration::from_secs(10),
        ..Default::default()
    };
    let server = common::start_with(1, config, app());
    let mut c = server.connect();
    c.send(b"POST /bytes HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\n");
    for b in b"hello" {
        std::thread::sleep(Duration::from_millis(30));
        c.send(std::slice::from_ref(b));
    }
    assert_eq!(
        c.read_response().text(),
        text_response("200 OK", "", "hello")
    );
}

/// A client that stops reading a response is dropped after the write timeout. With room for
/// one connection only, a second client is served exactly when that happens.
#[test]
fn client_that_stops_reading_is_dropped_after_write_timeout() {
    let config = short(Config {
        max_connections_per_worker: 1,
        ..Default::default()
    });
    let server = common::start_with(1, config, app());
    let mut stuck = server.connect();
    stuck.send(b"GET /endless HTTP/1.1\r\nHost: t\r\n\r\n");
    // Never read `stuck` until the other client was served.
    let mut next = server.connect();
    next.send(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(
        next.read_response().text(),
        text_response("200 OK", "", "hi")
    );
    // What `stuck` gets is cut short by the close.
    let got = stuck.read_to_end();
    assert!(common::find(&got, b"\r\n\r\n").is_some());
}

/// The same while a task the handler spawned waits for the request body (which never comes,
/// under a long body timeout): that wait must not take the connection's write timeout away.
/// (They shared one timer, which wakes one task: the reader's wait took the wake, and the
/// connection waited for the stuck client for good.) The socket closes at the write timeout
/// too: it stayed open until the reader gave up (its own body timeout, a minute here), as the
/// reader holds the connection.
#[test]
fn write_timeout_fires_while_another_task_waits_for_the_body() {
    let config = short(Config {
        max_connections_per_worker: 1,
        ..Default::default()
    });
    let config = Config {
        body_read_timeout: Duration::from_secs(60),
        ..config
    };
    let server = common::start_with(1, config, app());
    let mut stuck = server.connect();
    stuck.send(b"POST /endless-reading-body HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\n");
    let mut next = server.connect();
    next.send(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(
        next.read_response().text(),
        text_response("200 OK", "", "hi")
    );
    // Well before the reader's timeout: reading what the server sent ends at its close.
    stuck
        .stream()
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let got = stuck.read_to_end();
    assert!(common::find(&got, b"\r\n\r\n").is_some());
}

/// `Duration::MAX` is a natural "no limit" for a timeout; added to the time a wait starts it
/// panicked (in the connection's task: the request got no answer).
#[test]
fn timeouts_of_duration_max_mean_no_limit() {
    let config = Config {
        header_read_timeout: Duration::MAX,
        idle_timeout: Duration::MAX,
        body_read_timeout: Duration::MAX,
        write_timeout: Duration::MAX,
        shutdown_timeout: Duration::MAX,
        ..Default::default()
    };
    let server = common::start_with(1, config, app());
    let mut c = server.connect();
    c.send(b"GET / HTTP/1.1\r\nHost: t\r\n\r\nGET / HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(c.read_response().text(), text_response("200 OK", "", "hi"));
    assert_eq!(c.read_response().text(), text_response("200 OK", "", "hi"));
    drop(c);
    server.shutdown();
}
