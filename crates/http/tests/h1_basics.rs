//! Keep-alive, `Connection: close`, HEAD, bodiless statuses and `Expect: 100-continue`, checked
//! as exact bytes over a real socket.

mod common;

use std::io;

use bytes::Bytes;
use common::{text_response, Iter};
use volt_http::{get, post, Body, HeaderValue, Request, Response, Router, StatusCode};

const HELLO: &str =
    "HTTP/1.1 200 OK\r\nServer: volt\r\nDate: <date>\r\nContent-Type: text/plain\r\n\
                     content-length: 13\r\n\r\nHello, World!";

fn app() -> Router {
    Router::new()
        .route("/", get(|_req| async { Response::text("Hello, World!") }))
        .route(
            "/no-content",
            get(|_req| async { Response::text("dropped").with_status(StatusCode::NO_CONTENT) }),
        )
        .route(
            "/not-modified",
            get(|_req| async { Response::text("dropped").with_status(StatusCode::NOT_MODIFIED) }),
        )
        .route(
            "/early-hints",
            get(|_req| async {
                Response::text("dropped").with_status(StatusCode::from_u16(103).unwrap())
            }),
        )
        .route(
            "/echo",
            post(|mut req: Request| async move { req.bytes().await.map(Response::text) }),
        )
        .route("/ignore", post(|_req| async { Response::text("ignored") }))
        .route(
            "/stream",
            get(|_req| async {
                let parts = ["one", "", "two", "three"].map(|s| Ok::<_, io::Error>(Bytes::from(s)));
                Response::text(Body::stream(Iter(parts.into_iter())))
            }),
        )
        .route(
            "/no-content-stream",
            get(|_req| async {
                let parts = ["dropped"].map(|s| Ok::<_, io::Error>(Bytes::from(s)));
                Response::new(StatusCode::NO_CONTENT)
                    .with_body(Body::stream(Iter(parts.into_iter())))
            }),
        )
        .route(
            "/headers",
            get(|_req| async {
                Response::text("h")
                    .with_status(StatusCode::CREATED)
                    .with_header("x-first", "1")
                    .with_header("cache-control", "no-store")
                    .with_header("x-first", "2")
                    // Framing and connection headers are the server's: these are dropped.
                    .with_header("content-length", "999")
                    .with_header("transfer-encoding", "gzip")
                    .with_header("connection", "upgrade")
            }),
        )
        .route("/unit", get(|_req| async {}))
        .route(
            "/bye",
            get(|_req| async { Response::text("bye").with_header("connection", "Close") }),
        )
        .route(
            "/sized-stream",
            get(|_req| async {
                let parts = ["one", "two"].map(|s| Ok::<_, io::Error>(Bytes::from(s)));
                Response::text(Body::sized_stream(6, Iter(parts.into_iter())))
            }),
        )
}

fn get_req(path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").into_bytes()
}

#[test]
fn http11_keeps_the_connection_alive_by_default() {
    let server = common::start(app());
    let mut c = server.connect();
    for _ in 0..3 {
        c.send(&get_req("/"));
        assert_eq!(c.read_response().text(), HELLO);
    }
    server.shutdown();
}

#[test]
fn date_header_is_an_imf_fixdate() {
    let server = common::start(app());
    let mut c = server.connect();
    c.send(&get_req("/"));
    let r = c.read_response();
    let date = r.header("date").expect("a Date header");
    assert!(common::is_imf_fixdate(date), "{date:?}");
}

#[test]
fn http10_closes_by_default() {
    let server = common::start(app());
    let mut c = server.connect();
    c.send(b"GET / HTTP/1.0\r\n\r\n");
    assert_eq!(
        c.read_response().text(),
        "HTTP/1.1 200 OK\r\nServer: volt\r\nDate: <date>\r\nContent-Type: text/plain\r\n\
         content-length: 13\r\nConnection: close\r\n\r\nHello, World!"
    );
    c.expect_closed();
}

#[test]
fn http10_keep_alive_is_answered_with_keep_alive() {
    let server = common::start(app());
    let mut c = server.connect();
    for _ in 0..2 {
        c.send(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
        assert_eq!(
            c.read_response().text(),
            "HTTP/1.1 200 OK\r\nServer: volt\r\nDate: <date>\r\nContent-Type: text/plain\r\n\
             content-length: 13\r\nConnection: keep-alive\r\n\r\nHello, World!"
        );
    }
    c.send(b"GET / HTTP/1.0\r\n\r\n");
    assert!(c
        .read_response()
        .text()
        .contains("\r\nConnection: close\r\n"));
    c.expect_closed();
}

#[test]
fn connection_close_is_answered_and_the_server_closes() {
    let server = common::start(app());
    let mut c = server.connect();
    c.send(b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    assert_eq!(
        c.read_response().text(),
        "HTTP/1.1 200 OK\r\nServer: volt\r\nDate: <date>\r\nContent-Type: text/plain\r\n\
         content-length: 13\r\nConnection: close\r\n\r\nHello, World!"
    );
    c.expect_closed();
}

#[test]
fn requests_pipelined_after_connection_close_are_not_answered() {
    let server = common::start(app());
    let mut c = server.connect();
    c.send(
        b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\nGET / HTTP/1.1\r\nHost: t\r\n\r\n",
    );
    assert!(c
        .read_response()
        .text()
        .ends_with("Connection: close\r\n\r\nHello, World!"));
    c.expect_closed();
}

#[test]
fn head_sends_content_length_but_no_body() {
    let server = common::start(app());
    let mut c = server.connect();
    c.send(b"HEAD / HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(
        c.read_head_response().text(),
        "HTTP/1.1 200 OK\r\nServer: volt\r\nDate: <date>\r\nContent-Type: text/plain\r\n\
         content-length: 13\r\n\r\n"
    );
    // Had a body been sent, it would show up in front of this response.
    c.send(&get_req("/"));
    assert_eq!(c.read_response().text(), HELLO);
}

#[test]
fn head_of_a_sized_stream_sends_its_length_and_no_body() {
    let server = common::start(app());
    let mut c = server.connect();
    c.send(b"HEAD /sized-stream HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(
        c.read_head_response().text(),
        "HTTP/1.1 200 OK\r\nServer: volt\r\nDate: <date>\r\nContent-Type: text/plain\r\n\
         content-length: 6\r\n\r\n"
    );
    c.send(&get_req("/"));
    assert_eq!(c.read_response().text(), HELLO);
}

#[test]
fn no_content_has_neither_body_nor_content_length() {
    let server = common::start(app());
    let mut c = server.connect();
    c.send(&get_req("/no-content"));
    assert_eq!(
        c.read_response().text(),
        "HTTP/1.1 204 No Content\r\nServer: volt\r\nDate: <date>\r\nContent-Type: text/plain\r\n\r\n"
    );
    c.send(&get_req("/"));
    assert_eq!(c.read_response().text(), HELLO);
}

/// RFC 9110 §8.6: a 304 may carry `Content-Length` only with the length a 200 would have had,
/// which the server does not know; so it sends none, and never a body.
#[test]
fn not_modified_has_neither_body_nor_content_length() {
    let server = common::start(app());
    let mut c = server.connect();
    c.send(&get_req("/not-modified"));
    assert_eq!(
        c.read_response().text(),
        "HTTP/1.1 304 Not Modified\r\nServer: volt\r\nDate: <date>\r\nContent-Type: text/plain\r\n\r\n"
    );
    c.send(&get_req("/"));
    assert_eq!(c.read_response().text(), HELLO);
}

/// A 103 a handler returned as its final response was sent (with no body) and the connection
/// went on, as this test used to check. But a client reads any 1xx as interim: it took the
/// next request's response for this one's, and every answer after it was one off. A 1xx as the
/// final response is a handler bug, answered 500 as a panic is (see `h1_panics`).
#[test]
fn informational_status_is_not_sent_as_a_final_response() {
    let server = common::start(app());
    let mut c = server.connect();
    c.send(&get_req("/early-hints"));
    let r = c.read_response();
    assert_eq!(
        (r.status, r.body_text()),
        (500, "internal server error\n".into())
    );
    c.expect_closed();
}

#[test]
fn chunked_stream_response_exact_bytes() {
    let server = common::start(app());
    let mut c = server.connect();
    c.send(&get_req("/stream"));
    assert_eq!(
        c.read_response().text(),
        "HTTP/1.1 200 OK\r\nServer: volt\r\nDate: <date>\r\nContent-Type: text/plain\r\n\
         Transfer-Encoding: chunked\r\n\r\n3\r\none\r\n3\r\ntwo\r\n5\r\nthree\r\n0\r\n\r\n"
    );
    c.send(&get_req("/"));
    assert_eq!(c.read_response().text(), HELLO);
}

#[test]
fn sized_stream_response_exact_bytes() {
    let server = common::start(app());
    let mut c = server.connect();
    c.send(&get_req("/sized-stream"));
    assert_eq!(
        c.read_response().text(),
        "HTTP/1.1 200 OK\r\nServer: volt\r\nDate: <date>\r\nContent-Type: text/plain\r\n\
         content-length: 6\r\n\r\nonetwo"
    );
}

#[test]
fn http10_stream_of_unknown_length_is_delimited_by_close() {
    let server = common::start(app());
    let mut c = server.connect();
    c.send(b"GET /stream HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    let r = c.read_response();
    assert_eq!(
        r.text(),
        "HTTP/1.1 200 OK\r\nServer: volt\r\nDate: <date>\r\nContent-Type: text/plain\r\n\
         Connection: close\r\n\r\nonetwothree"
    );
}

#[test]
fn expect_continue_is_answered_when_the_handler_reads_the_body() {
    let server = common::start(app());
    let mut c = server.connect();
    c.send(b"POST /echo HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n");
    let interim = c.read_response();
    assert_eq!(interim.raw, b"HTTP/1.1 100 Continue\r\n\r\n");
    c.send(b"hello");
    assert_eq!(
        c.read_response().text(),
        text_response("200 OK", "", "hello")
    );
    // The connection goes on.
    c.send(&get_req("/"));
    assert_eq!(c.read_response().text(), HELLO);
}

#[test]
fn expect_continue_is_not_sent_when_the_handler_ignores_the_body() {
    let server = common::start(app());
    let mut c = server.connect();
    c.send(
        b"POST /ignore HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n",
    );
    assert_eq!(
        c.read_response().text(),
        "HTTP/1.1 200 OK\r\nServer: volt\r\nDate: <date>\r\nContent-Type: text/plain\r\n\
         content-length: 7\r\nConnection: close\r\n\r\nignored"
    );
    c.expect_closed();
}

#[test]
fn expect_continue_is_ignored_on_http10() {
    let server = common::start(app());
    let mut c = server.connect();
    c.send(b"POST /echo HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\nhello");
    assert_eq!(
        c.read_response().text(),
        "HTTP/1.1 200 OK\r\nServer: volt\r\nDate: <date>\r\nContent-Type: text/plain\r\n\
         content-length: 5\r\nConnection: close\r\n\r\nhello"
    );
    c.expect_closed();
}

#[test]
fn unknown_route_is_404_and_keeps_the_connection() {
    let server = common::start(app());
    let mut c = server.connect();
    c.send(&get_req("/nope"));
    assert_eq!(
        c.read_response().text(),
        text_response("404 Not Found", "", "not found\n")
    );
    c.send(&get_req("/"));
    assert_eq!(c.read_response().text(), HELLO);
}

#[test]
fn server_name_can_be_changed_or_removed() {
    let config = volt_http::Config {
        server_name: None,
        ..Default::default()
    };
    let server = common::start_with(1, config, app());
    let mut c = server.connect();
    c.send(&get_req("/"));
    assert_eq!(
        c.read_response().text(),
        "HTTP/1.1 200 OK\r\nDate: <date>\r\nContent-Type: text/plain\r\n\
         content-length: 13\r\n\r\nHello, World!"
    );
}

#[test]
fn client_half_close_after_a_request_still_gets_the_response() {
    let server = common::start(app());
    let mut c = server.connect();
    c.send(&get_req("/"));
    c.shutdown_write();
    assert_eq!(c.read_response().text(), HELLO);
    c.expect_closed();
}

/// RFC 9112 §6.1: no `Transfer-Encoding` in a 204, even when the handler gave a stream.
#[test]
fn no_content_with_a_stream_body_has_no_framing_headers() {
    let server = common::start(app());
    let mut c = server.connect();
    c.send(&get_req("/no-content-stream"));
    assert_eq!(
        c.read_response().text(),
        "HTTP/1.1 204 No Content\r\nServer: volt\r\nDate: <date>\r\n\r\n"
    );
    c.send(&get_req("/"));
    assert_eq!(c.read_response().text(), HELLO);
}

#[test]
fn head_of_a_chunked_stream_sends_no_body() {
    let server = common::start(app());
    let mut c = server.connect();
    c.send(b"HEAD /stream HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(
        c.read_head_response().text(),
        "HTTP/1.1 200 OK\r\nServer: volt\r\nDate: <date>\r\nContent-Type: text/plain\r\n\
         Transfer-Encoding: chunked\r\n\r\n"
    );
    c.send(&get_req("/"));
    assert_eq!(c.read_response().text(), HELLO);
}

#[test]
fn handler_headers_are_sent_in_order_and_framing_headers_are_the_servers() {
    let server = common::start(app());
    let mut c = server.connect();
    c.send(&get_req("/headers"));
    assert_eq!(
        c.read_response().text(),
        "HTTP/1.1 201 Created\r\nServer: volt\r\nDate: <date>\r\nContent-Type: text/plain\r\n\
         x-first: 1\r\ncache-control: no-store\r\nx-first: 2\r\ncontent-length: 1\r\n\r\nh"
    );
    c.send(&get_req("/"));
    assert_eq!(c.read_response().text(), HELLO);
}

#[test]
fn connection_tokens_are_case_insensitive() {
    let server = common::start(app());
    let mut c = server.connect();
    c.send(b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n");
    assert!(c
        .read_response()
        .text()
        .contains("\r\nConnection: keep-alive\r\n"));
    c.send(b"GET / HTTP/1.1\r\nHost: t\r\nConnection: TE, CLOSE\r\n\r\n");
    assert!(c
        .read_response()
        .text()
        .contains("\r\nConnection: close\r\n"));
    c.expect_closed();
}

/// A body refused for its declared size is refused before the client is told to send it.
#[test]
fn expect_continue_with_a_body_over_the_limit_gets_413_without_100() {
    let config = volt_http::Config {
        max_body_bytes: 10,
        ..Default::default()
    };
    let server = common::start_with(1, config, app());
    let mut c = server.connect();
    c.send(b"POST /echo HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 11\r\n\r\n");
    assert_eq!(
        c.read_response().text(),
        common::error_close(
            "413 Payload Too Large",
            "request body of 11 bytes is over the limit of 10"
        )
    );
    c.expect_closed();
}

/// The `100 Continue` of a pipelined request comes after the answers to the ones before it.
#[test]
fn expect_continue_behind_a_pipelined_request_keeps_the_order() {
    let server = common::start(app());
    let mut c = server.connect();
    c.send(
        b"GET / HTTP/1.1\r\nHost: t\r\n\r\n\
          POST /echo HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n",
    );
    assert_eq!(c.read_response().text(), HELLO);
    assert_eq!(c.read_response().raw, b"HTTP/1.1 100 Continue\r\n\r\n");
    c.send(b"hello");
    assert_eq!(
        c.read_response().text(),
        text_response("200 OK", "", "hello")
    );
}

#[test]
fn empty_response_without_content_type() {
    let server = common::start(app());
    let mut c = server.connect();
    c.send(&get_req("/unit"));
    assert_eq!(
        c.read_response().text(),
        "HTTP/1.1 200 OK\r\nServer: volt\r\nDate: <date>\r\ncontent-length: 0\r\n\r\n"
    );
    let config = volt_http::Config {
        server_name: Some("custom/1.0".into()),
        ..Default::default()
    };
    let server = common::start_with(1, config, app());
    let mut c = server.connect();
    c.send(&get_req("/"));
    assert_eq!(
        c.read_response().text(),
        HELLO.replace("Server: volt", "Server: custom/1.0")
    );
}

/// A worker keeps the whole head of a plain 200 per content type, with the last body length:
/// it follows the length and the type, also with more types than it keeps heads for.
#[test]
fn cached_heads_follow_the_body_length_and_the_content_type() {
    let app = Router::new().route(
        "/typed",
        post(|mut req: Request| async move {
            let ct = HeaderValue::from_str(req.header("x-type").unwrap_or("")).unwrap();
            req.bytes()
                .await
                .map(|body| Response::text(body).with_content_type(ct))
        }),
    );
    let server = common::start(app);
    let mut c = server.connect();
    for (ct, body) in [
        ("a/1", "x"),
        ("a/1", "yy"),
        ("a/1", "Hello, World!"),
        ("a/2", ""),
        ("a/3", "z"),
        ("a/4", "z"),
        ("a/5", "zz"),
        ("a/6", "z"),
        ("a/2", "zzz"),
        ("a/1", "x"),
    ] {
        let len = body.len();
        c.send(
            format!("POST /typed HTTP/1.1\r\nHost: t\r\nx-type: {ct}\r\nContent-Length: {len}\r\n\r\n{body}")
                .as_bytes(),
        );
        assert_eq!(
            c.read_response().text(),
            text_response("200 OK", "", body).replace("text/plain", ct)
        );
    }
}

/// The cached `Date` follows the clock on a connection that stays open.
#[test]
fn date_is_refreshed_on_a_keep_alive_connection() {
    let server = common::start(app());
    let mut c = server.connect();
    c.send(&get_req("/"));
    let first = c.read_response().header("date").unwrap().to_owned();
    std::thread::sleep(std::time::Duration::from_millis(1100));
    c.send(&get_req("/"));
    let second = c.read_response().header("date").unwrap().to_owned();
    assert!(common::is_imf_fixdate(&second), "{second:?}");
    assert_ne!(first, second);
}

#[test]
fn connection_close_from_the_handler_is_sent_and_the_server_closes() {
    let server = common::start(app());
    let mut c = server.connect();
    // The request pipelined behind it is not answered.
    c.send(b"GET /bye HTTP/1.1\r\nHost: t\r\n\r\nGET / HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(
        c.read_response().text(),
        "HTTP/1.1 200 OK\r\nServer: volt\r\nDate: <date>\r\nContent-Type: text/plain\r\n\
         content-length: 3\r\nConnection: close\r\n\r\nbye"
    );
    c.expect_closed();
}

/// RFC 9110 §10.1.1: an expectation other than `100-continue` answers 417, before the body.
#[test]
fn expect_other_than_100_continue_gets_417_and_close() {
    let server = common::start(app());
    let mut c = server.connect();
    c.send(b"POST /echo HTTP/1.1\r\nHost: t\r\nExpect: 200-ok\r\nContent-Length: 5\r\n\r\n");
    assert_eq!(
        c.read_response().text(),
        common::error_close(
            "417 Expectation Failed",
            "unsupported expectation (only 100-continue is)"
        )
    );
    c.expect_closed();
}
