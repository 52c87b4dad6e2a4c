//! Pipelined requests: answered in order, with exact bytes, however the bytes are split across
//! writes, with bodies in between, and with a slow handler that must not hold back the answers
//! before it.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{text_response, Client, XorShift};
use volt_http::{get, post, Request, Response, Router};

fn app() -> Router {
    Router::new()
        .route(
            "/r/{n}",
            get(|req: Request| async move {
                Response::text(format!("response {}", req.raw_param("n").unwrap_or("?")))
            }),
        )
        .route(
            "/echo",
            post(|mut req: Request| async move { req.bytes().await.map(Response::text) }),
        )
}

/// 16 GETs, `/r/0` to `/r/15`, and their 16 answers.
fn sixteen() -> (Vec<u8>, Vec<String>) {
    let mut requests = Vec::new();
    let mut expected = Vec::new();
    for i in 0..16 {
        requests.extend_from_slice(format!("GET /r/{i} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
        expected.push(text_response("200 OK", "", &format!("response {i}")));
    }
    (requests, expected)
}

fn read_all(c: &mut Client, expected: &[String]) {
    for (i, want) in expected.iter().enumerate() {
        assert_eq!(&c.read_response().text(), want, "response {i}");
    }
}

#[test]
fn sixteen_requests_in_one_write_get_sixteen_responses_in_order() {
    let server = common::start(app());
    let (requests, expected) = sixteen();
    let mut c = server.connect();
    c.send(&requests);
    read_all(&mut c, &expected);
    // Nothing extra follows, and the connection is still usable.
    c.send(b"GET /r/last HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(
        c.read_response().text(),
        text_response("200 OK", "", "response last")
    );
    server.shutdown();
}

#[test]
fn sixteen_requests_one_byte_per_write() {
    let server = common::start(app());
    let (requests, expected) = sixteen();
    let mut c = server.connect();
    for b in &requests {
        c.send(std::slice::from_ref(b));
    }
    read_all(&mut c, &expected);
    server.shutdown();
}

#[test]
fn sixteen_requests_split_at_random_points() {
    let server = common::start(app());
    let (requests, expected) = sixteen();
    for seed in [1u64, 7, 42, 1234, 0xdead_beef] {
        let mut rng = XorShift(seed);
        let mut c = server.connect();
        let mut rest = &requests[..];
        while !rest.is_empty() {
            let n = rng.range(1, 64).min(rest.len());
            c.send(&rest[..n]);
            rest = &rest[n..];
            if rng.next() % 4 == 0 {
                // Sometimes let the server see a partial request on its own.
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        read_all(&mut c, &expected);
    }
    server.shutdown();
}

/// GETs and POSTs with `Content-Length` and chunked bodies (with extensions and trailers),
/// one after another in one buffer.
fn mixed() -> (Vec<u8>, Vec<String>) {
    let mut requests = Vec::new();
    let mut expected = Vec::new();
    for i in 0..8 {
        match i % 4 {
            0 => {
                requests.extend_from_slice(
                    format!("GET /r/{i} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes(),
                );
                expected.push(text_response("200 OK", "", &format!("response {i}")));
            }
            1 => {
                let body = format!("body number {i}");
                requests.extend_from_slice(
                    format!(
                        "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n{body}",
                        body.len()
                    )
                    .as_bytes(),
                );
                expected.push(text_response("200 OK", "", &body));
            }
            2 => {
                requests.extend_from_slice(
                    format!(
                        "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n\
                         5;ext=1\r\nchunk\r\n4\r\ned {i}\r\n0\r\nX-Trailer: yes\r\n\r\n"
                    )
                    .as_bytes(),
                );
                expected.push(text_response("200 OK", "", &format!("chunked {i}")));
            }
            _ => {
                // A request that has a body its handler does not read: the body is skipped.
                requests.extend_from_slice(
                    format!("GET /r/{i} HTTP/1.1\r\nHost: t\r\nContent-Length: 18\r\n\r\nGET /r/x HTTP/1.1\r")
                        .as_bytes(),
                );
                expected.push(text_response("200 OK", "", &format!("response {i}")));
            }
        }
    }
    (requests, expected)
}

#[test]
fn mixed_methods_and_bodies_in_one_write_are_answered_in_order() {
    let server = common::start(app());
    let (requests, expected) = mixed();
    let mut c = server.connect();
    c.send(&requests);
    read_all(&mut c, &expected);
    server.shutdown();
}

#[test]
fn mixed_methods_and_bodies_one_byte_per_write() {
    let server = common::start(app());
    let (requests, expected) = mixed();
    let mut c = server.connect();
    for b in &requests {
        c.send(std::slice::from_ref(b));
    }
    read_all(&mut c, &expected);
    server.shutdown();
}

#[test]
fn mixed_methods_and_bodies_split_at_random_points() {
    let server = common::start(app());
    let (requests, expected) = mixed();
    for seed in [3u64, 99, 2024, 0x5eed] {
        let mut rng = XorShift(seed);
        let mut c = server.connect();
        let mut rest = &requests[..];
        while !rest.is_empty() {
            let n = rng.range(1, 40).min(rest.len());
            c.send(&rest[..n]);
            rest = &rest[n..];
        }
        read_all(&mut c, &expected);
    }
    server.shutdown();
}

/// `/slow` waits until the test releases it; the answer before it must arrive first.
#[test]
fn slow_handler_does_not_hold_back_earlier_responses() {
    let release = Arc::new(AtomicBool::new(false));
    let entered = Arc::new(AtomicUsize::new(0));
    let app = {
        let release = release.clone();
        let entered = entered.clone();
        app().route(
            "/slow",
            get(move |_req| {
                let release = release.clone();
                let entered = entered.clone();
                async move {
                    entered.fetch_add(1, Ordering::SeqCst);
                    while !release.load(Ordering::SeqCst) {
                        volt_rt::time::sleep(Duration::from_millis(5)).await;
                    }
                    Response::text("slow")
                }
            }),
        )
    };
    let server = common::start(app);
    let mut c = server.connect();
    c.send(
        b"GET /r/1 HTTP/1.1\r\nHost: t\r\n\r\n\
          GET /r/2 HTTP/1.1\r\nHost: t\r\n\r\n\
          GET /slow HTTP/1.1\r\nHost: t\r\n\r\n\
          GET /r/3 HTTP/1.1\r\nHost: t\r\n\r\n",
    );
    // Both earlier answers arrive while the slow handler is still waiting.
    assert_eq!(
        c.read_response().text(),
        text_response("200 OK", "", "response 1")
    );
    assert_eq!(
        c.read_response().text(),
        text_response("200 OK", "", "response 2")
    );
    common::wait_until("the slow handler to start", || {
        entered.load(Ordering::SeqCst) == 1
    });
    assert!(!release.load(Ordering::SeqCst));
    release.store(true, Ordering::SeqCst);
    assert_eq!(
        c.read_response().text(),
        text_response("200 OK", "", "slow")
    );
    assert_eq!(
        c.read_response().text(),
        text_response("200 OK", "", "response 3")
    );
    server.shutdown();
}

/// While one connection's handler waits, the worker serves other connections.
#[test]
fn slow_handler_does_not_block_other_connections_on_the_worker() {
    let release = Arc::new(AtomicBool::new(false));
    let app = {
        let release = release.clone();
        app().route(
            "/slow",
            get(move |_req| {
                let release = release.clone();
                async move {
                    while !release.load(Ordering::SeqCst) {
                        volt_rt::time::sleep(Duration::from_millis(5)).await;
                    }
                    Response::text("slow")
                }
            }),
        )
    };
    let server = common::start(app);
    let mut slow = server.connect();
    slow.send(b"GET /slow HTTP/1.1\r\nHost: t\r\n\r\n");
    let (requests, expected) = sixteen();
    let mut c = server.connect();
    c.send(&requests);
    read_all(&mut c, &expected);
    release.store(true, Ordering::SeqCst);
    assert_eq!(
        slow.read_response().text(),
        text_response("200 OK", "", "slow")
    );
    server.shutdown();
}

/// [`app`] with `/big/{n}`, answering `n:` and then `big`.
fn with_big(big: &str) -> Router {
    let big = big.to_string();
    app().route(
        "/big/{n}",
        get(move |req: Request| {
            let body = format!("{}:{big}", req.raw_param("n").unwrap_or("?"));
            async move { Response::text(body) }
        }),
    )
}

/// Many pipelined requests whose answers overflow the server's write batch.
#[test]
fn long_pipeline_of_large_responses_stays_in_order() {
    let big = "x".repeat(10_000);
    let server = common::start(with_big(&big));
    let mut c = server.connect();
    let mut requests = Vec::new();
    for i in 0..200 {
        requests.extend_from_slice(format!("GET /big/{i} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
    }
    // Written from another thread: the server may stop reading while its answers wait to
    // be taken.
    let mut writer = c.stream().try_clone().unwrap();
    let t = std::thread::spawn(move || {
        use std::io::Write;
        writer.write_all(&requests).unwrap();
    });
    for i in 0..200 {
        let r = c.read_response();
        assert_eq!(r.status, 200);
        assert_eq!(r.body_text(), format!("{i}:{big}"));
    }
    t.join().unwrap();
    server.shutdown();
}

/// Answers written while the client reads nothing fill the socket part way through a write
/// (each answer is under the server's early-flush size, so each pass over the buffer ends
/// with a write the socket takes only in part); the rest must follow in order, whole.
#[test]
fn answers_that_fill_the_socket_mid_write_arrive_whole_and_in_order() {
    let big = "y".repeat(40_000);
    let server = common::start(with_big(&big));
    let mut c = server.connect();
    // One request per write, paced so that the server mostly answers each in a pass of its
    // own (the pace only steers which path the test takes, it decides nothing), and nothing
    // read until all are sent: far more than the socket buffers on both sides hold (loopback
    // grows them to a few MiB at most).
    let mut writer = c.stream().try_clone().unwrap();
    let t = std::thread::spawn(move || {
        use std::io::Write;
        for i in 0..400 {
            let request = format!("GET /big/{i} HTTP/1.1\r\nHost: t\r\n\r\n");
            writer.write_all(request.as_bytes()).unwrap();
            std::thread::sleep(Duration::from_millis(1));
        }
    });
    t.join().unwrap();
    for i in 0..400 {
        let r = c.read_response();
        assert_eq!(r.status, 200);
        assert_eq!(r.body_text(), format!("{i}:{big}"));
    }
    server.shutdown();
}

/// The server parses each request of a connection into one reused head; a handler that keeps
/// its request past the response must not see it overwritten by the next one.
#[test]
fn a_request_kept_past_its_response_is_not_overwritten_by_the_next() {
    use std::cell::RefCell;
    thread_local! {
        static KEPT: RefCell<Vec<Request>> = const { RefCell::new(Vec::new()) };
    }
    let app = Router::new().route(
        "/keep/{n}",
        get(|req: Request| async move {
            // Every request kept so far still reads its own path.
            let seen = KEPT.with(|kept| {
                kept.borrow()
                    .iter()
                    .map(|r| r.path().to_owned())
                    .collect::<Vec<_>>()
                    .join(",")
            });
            let answer = format!("{} after [{seen}]", req.path());
            KEPT.with(|kept| kept.borrow_mut().push(req));
            Response::text(answer)
        }),
    );
    let server = common::start(app);
    let mut c = server.connect();
    c.send(
        b"GET /keep/1 HTTP/1.1\r\nHost: t\r\n\r\nGET /keep/22 HTTP/1.1\r\nHost: t\r\n\r\n\
          GET /keep/333 HTTP/1.1\r\nHost: t\r\nX-Longer-Head: so the spans move\r\n\r\n",
    );
    let expected = [
        "/keep/1 after []",
        "/keep/22 after [/keep/1]",
        "/keep/333 after [/keep/1,/keep/22]",
    ];
    for body in expected {
        assert_eq!(c.read_response().text(), text_response("200 OK", "", body));
    }
}
