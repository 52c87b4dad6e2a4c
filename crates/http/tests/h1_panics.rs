//! A handler that panics costs its own request (500) and its own connection (closed), nothing
//! else: other connections on the same worker, and later ones, are served.

mod common;

use std::time::Duration;

use common::{error_close, text_response, PanicAfter};
use http::StatusCode;
use volt_http::{get, Body, Request, Response, Router};

fn app() -> Router {
    Router::new()
        .route("/", get(|_req| async { Response::text("hi") }))
        .route(
            "/panic",
            get(|_req| async {
                if true {
                    panic!("handler panicked on purpose");
                }
                Response::text("unreachable")
            }),
        )
        .route(
            "/panic-later",
            get(|_req| async {
                volt_rt::time::sleep(Duration::from_millis(10)).await;
                if true {
                    panic!("handler panicked on purpose, after waiting");
                }
                Response::text("unreachable")
            }),
        )
        .route(
            "/panicking-producer",
            get(|_req| async {
                let (mut tx, body) = Body::channel();
                volt_rt::spawn(async move {
                    tx.send("part").await.unwrap();
                    tx.send("part").await.unwrap();
                    if true {
                        panic!("body producer panicked on purpose");
                    }
                    drop(tx);
                });
                Response::text(body)
            }),
        )
        .route(
            "/panicking-stream",
            get(|_req| async { Response::text(Body::stream(PanicAfter(2))) }),
        )
        .route(
            "/status/{code}",
            get(|req: Request| async move {
                let code: u16 = req.param("code")?;
                let status = StatusCode::from_u16(code).expect("a valid status");
                Ok::<_, volt_http::Error>(Response::new(status).with_body("from the handler"))
            }),
        )
}

fn internal_error() -> String {
    error_close("500 Internal Server Error", "internal server error")
}

fn assert_panic_is_contained(path: &str) {
    let server = common::start(app());
    // A connection on the same (only) worker, open across the panic.
    let mut bystander = server.connect();
    bystander.send(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(
        bystander.read_response().text(),
        text_response("200 OK", "", "hi")
    );

    let mut c = server.connect();
    c.send(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
    assert_eq!(c.read_response().text(), internal_error());
    c.expect_closed();

    bystander.send(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(
        bystander.read_response().text(),
        text_response("200 OK", "", "hi")
    );
    assert_eq!(server.get("/"), text_response("200 OK", "", "hi"));
    server.shutdown();
}

#[test]
fn handler_panic_on_first_poll_is_500_and_closes() {
    assert_panic_is_contained("/panic");
}

#[test]
fn handler_panic_after_awaiting_is_500_and_closes() {
    assert_panic_is_contained("/panic-later");
}

/// A handler that returns a 1xx status as its final response (100, 101 with no upgrade behind
/// it, 103): the client got the 1xx and then waited for a final response that never came
/// (or, after a 101, took the connection for switched). That is a handler bug, answered as a
/// panic is: 500, and the connection closes.
#[test]
fn a_1xx_final_response_is_500_and_closes() {
    for code in [100, 101, 103] {
        assert_panic_is_contained(&format!("/status/{code}"));
    }
}

#[test]
fn panic_in_a_pipeline_answers_the_earlier_requests_first() {
    let server = common::start(app());
    let mut c = server.connect();
    c.send(
        b"GET / HTTP/1.1\r\nHost: t\r\n\r\n\
          GET /panic HTTP/1.1\r\nHost: t\r\n\r\n\
          GET / HTTP/1.1\r\nHost: t\r\n\r\n",
    );
    assert_eq!(c.read_response().text(), text_response("200 OK", "", "hi"));
    assert_eq!(c.read_response().text(), internal_error());
    c.expect_closed();
    server.shutdown();
}

#[test]
fn many_panics_do_not_wear_the_worker_down() {
    let server = common::start(app());
    for _ in 0..20 {
        let mut c = server.connect();
        c.send(b"GET /panic HTTP/1.1\r\nHost: t\r\n\r\n");
        assert_eq!(c.read_response().status, 500);
    }
    assert_eq!(server.get("/"), text_response("200 OK", "", "hi"));
    server.shutdown();
}

/// The head is out before the body panics: the client must see a truncated body (no final
/// chunk), never a complete-looking one; other connections are unaffected.
#[test]
fn panic_in_a_response_body_stream_truncates_and_closes() {
    let server = common::start(app());
    let mut bystander = server.connect();
    bystander.send(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(bystander.read_response().status, 200);

    let mut c = server.connect();
    c.send(b"GET /panicking-stream HTTP/1.1\r\nHost: t\r\n\r\n");
    let got = c.read_to_end();
    assert!(
        !got.ends_with(b"0\r\n\r\n"),
        "a panicking body was ended as if complete: {:?}",
        String::from_utf8_lossy(&got)
    );

    bystander.send(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(
        bystander.read_response().text(),
        text_response("200 OK", "", "hi")
    );
    assert_eq!(server.get("/"), text_response("200 OK", "", "hi"));
    server.shutdown();
}

/// The task feeding a `Body::channel` panics: its `BodySender` is dropped while the task is
/// torn down, and that must not read as the normal end of the body.
#[test]
fn panic_in_a_channel_body_producer_truncates_and_closes() {
    let server = common::start(app());
    let mut c = server.connect();
    c.send(b"GET /panicking-producer HTTP/1.1\r\nHost: t\r\n\r\n");
    let got = c.read_to_end();
    assert!(
        !got.ends_with(b"0\r\n\r\n"),
        "a body whose producer panicked was ended as if complete: {:?}",
        String::from_utf8_lossy(&got)
    );
    assert_eq!(server.get("/"), text_response("200 OK", "", "hi"));
    server.shutdown();
}
