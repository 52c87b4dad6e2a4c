//! Request bodies: read whole or chunk by chunk (`Content-Length` and chunked, with extensions
//! and trailers), skipped when the handler ignores them, and never mistaken for the next
//! request. Response trailers: sent after a chunked body to HTTP/1.1 clients.

mod common;

use common::{text_response, XorShift};
use http::{HeaderMap, HeaderValue};
use volt_http::{any, get, post, Body, Error, Json, Request, Response, Router};

#[derive(serde::Deserialize, serde::Serialize)]
struct Item {
    name: String,
    count: u32,
}

fn app() -> Router {
    Router::new()
        .route(
            "/bytes",
            post(|mut req: Request| async move { req.bytes().await.map(Response::text) }),
        )
        .route(
            "/text",
            post(|mut req: Request| async move {
                req.text()
                    .await
                    .map(|t| format!("{} chars: {t}", t.chars().count()))
            }),
        )
        .route(
            "/json",
            post(|mut req: Request| async move {
                let item: Item = req.json().await?;
                Ok::<_, Error>(Json(Item {
                    name: item.name.to_uppercase(),
                    count: item.count + 1,
                }))
            }),
        )
        .route(
            "/chunks",
            post(|mut req: Request| async move {
                let mut total = 0;
                let mut sum = 0u64;
                while let Some(chunk) = req.body_mut().chunk().await? {
                    total += chunk.len();
                    sum += chunk.iter().map(|&b| u64::from(b)).sum::<u64>();
                }
                Ok::<_, Error>(Response::text(format!("{total} bytes, sum {sum}")))
            }),
        )
        .route(
            "/first-chunk",
            post(|mut req: Request| async move {
                let first = req.body_mut().chunk().await?.unwrap_or_default();
                Ok::<_, Error>(Response::text(format!(
                    "first chunk has {} bytes",
                    first.len()
                )))
            }),
        )
        .route("/ignore", any(|_req| async { Response::text("ignored") }))
}

#[test]
fn content_length_body_is_read_whole() {
    let server = common::start(app());
    let mut c = server.connect();
    c.send(b"POST /bytes HTTP/1.1\r\nHost: t\r\nContent-Length: 11\r\n\r\nhello world");
    assert_eq!(
        c.read_response().text(),
        text_response("200 OK", "", "hello world")
    );
    server.shutdown();
}

#[test]
fn chunked_body_with_extensions_and_trailers_is_read_whole() {
    let server = common::start(app());
    let mut c = server.connect();
    c.send(
        b"POST /bytes HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n\
          5;name=value;flag\r\nhello\r\n\
          1 ; quoted=\"a b\"\r\n \r\n\
          5\r\nworld\r\n\
          0;last\r\nX-Checksum: abc\r\nX-Other: 1\r\n\r\n",
    );
    assert_eq!(
        c.read_response().text(),
        text_response("200 OK", "", "hello world")
    );
    // The trailers were consumed with the body.
    c.send(b"POST /bytes HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\n\r\nnext");
    assert_eq!(
        c.read_response().text(),
        text_response("200 OK", "", "next")
    );
    server.shutdown();
}

#[test]
fn empty_chunked_body() {
    let server = common::start(app());
    let mut c = server.connect();
    c.send(b"POST /bytes HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n");
    assert_eq!(c.read_response().text(), text_response("200 OK", "", ""));
    c.send(b"POST /bytes HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n");
    assert_eq!(c.read_response().text(), text_response("200 OK", "", ""));
}

#[test]
fn text_body_is_utf8() {
    let server = common::start(app());
    let mut c = server.connect();
    let body = "grüße ✓";
    c.send(
        format!(
            "POST /text HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    );
    let r = c.read_response();
    assert_eq!(r.status, 200);
    assert_eq!(r.body_text(), "7 chars: grüße ✓");
}

#[test]
fn text_body_that_is_not_utf8_is_400() {
    let server = common::start(app());
    let mut c = server.connect();
    c.send(b"POST /text HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\n\xff\xfe");
    assert_eq!(
        c.read_response().text(),
        text_response("400 Bad Request", "", "request body is not valid UTF-8\n")
    );
    // The body was read whole: the connection goes on.
    c.send(b"POST /bytes HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nok");
    assert_eq!(c.read_response().text(), text_response("200 OK", "", "ok"));
}

#[test]
fn json_body_content_length_and_chunked() {
    let server = common::start(app());
    let mut c = server.connect();
    let json = r#"{"name":"volt","count":41}"#;
    c.send(
        format!(
            "POST /json HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{json}",
            json.len()
        )
        .as_bytes(),
    );
    let expected =
        "HTTP/1.1 200 OK\r\nServer: volt\r\nDate: <date>\r\nContent-Type: application/json\r\n\
                    content-length: 26\r\n\r\n{\"name\":\"VOLT\",\"count\":42}";
    assert_eq!(c.read_response().text(), expected);
    let (a, b) = json.split_at(10);
    c.send(
        format!(
            "POST /json HTTP/1.1\r\nHost: t\r\nContent-Type: application/json; charset=utf-8\r\n\
             Transfer-Encoding: chunked\r\n\r\n{:x};x=y\r\n{a}\r\n{:x}\r\n{b}\r\n0\r\nT: 1\r\n\r\n",
            a.len(),
            b.len()
        )
        .as_bytes(),
    );
    assert_eq!(c.read_response().text(), expected);
}

#[test]
fn body_read_chunk_by_chunk_as_it_arrives() {
    let server = common::start(app());
    let mut c = server.connect();
    let mut rng = XorShift(77);
    let body: Vec<u8> = (0..200_000).map(|_| rng.next() as u8).collect();
    let sum: u64 = body.iter().map(|&b| u64::from(b)).sum();
    c.send(
        format!(
            "POST /chunks HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .as_bytes(),
    );
    let mut rest = &body[..];
    while !rest.is_empty() {
        let n = rng.range(1, 30_000).min(rest.len());
        c.send(&rest[..n]);
        rest = &rest[n..];
    }
    assert_eq!(
        c.read_response().body_text(),
        format!("200000 bytes, sum {sum}")
    );
    // The same body, chunked, in pieces that cut through the framing.
    let mut framed = Vec::new();
    let mut rest = &body[..];
    while !rest.is_empty() {
        let n = rng.range(1, 9_000).min(rest.len());
        framed.extend_from_slice(format!("{n:X}\r\n").as_bytes());
        framed.extend_from_slice(&rest[..n]);
        framed.extend_from_slice(b"\r\n");
        rest = &rest[n..];
    }
    framed.extend_from_slice(b"0\r\n\r\n");
    c.send(b"POST /chunks HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n");
    let mut rest = &framed[..];
    while !rest.is_empty() {
        let n = rng.range(1, 5_000).min(rest.len());
        c.send(&rest[..n]);
        rest = &rest[n..];
    }
    assert_eq!(
        c.read_response().body_text(),
        format!("200000 bytes, sum {sum}")
    );
    server.shutdown();
}

#[test]
fn ignored_small_content_length_body_is_skipped_not_parsed_as_a_request() {
    let server = common::start(app());
    let mut c = server.connect();
    // The body looks like a request; it must not be answered as one.
    let body = "GET /bytes HTTP/1.1\r\nHost: t\r\n\r\n";
    c.send(
        format!(
            "POST /ignore HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    );
    assert_eq!(
        c.read_response().text(),
        text_response("200 OK", "", "ignored")
    );
    c.send(b"POST /bytes HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\n\r\nnext");
    assert_eq!(
        c.read_response().text(),
        text_response("200 OK", "", "next")
    );
    server.shutdown();
}

#[test]
fn ignored_small_chunked_body_is_skipped_not_parsed_as_a_request() {
    let server = common::start(app());
    let mut c = server.connect();
    c.send(
        b"POST /ignore HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n\
          20\r\nGET /bytes HTTP/1.1\r\nHost: t\r\n\r\n\r\n0\r\nX-T: 1\r\n\r\n\
          POST /bytes HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\n\r\nnext",
    );
    assert_eq!(
        c.read_response().text(),
        text_response("200 OK", "", "ignored")
    );
    assert_eq!(
        c.read_response().text(),
        text_response("200 OK", "", "next")
    );
    server.shutdown();
}

/// The ignored body has not arrived yet when the handler answers: the server waits for it
/// (rather than reading it as the next request).
#[test]
fn ignored_body_arriving_after_the_response_is_skipped() {
    let server = common::start(app());
    let mut c = server.connect();
    c.send(b"POST /ignore HTTP/1.1\r\nHost: t\r\nContent-Length: 32\r\n\r\n");
    assert_eq!(
        c.read_response().text(),
        text_response("200 OK", "", "ignored")
    );
    c.send(b"GET /bytes HTTP/1.1\r\nHost: t\r\n\r\n");
    c.send(b"POST /bytes HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\n\r\nnext");
    assert_eq!(
        c.read_response().text(),
        text_response("200 OK", "", "next")
    );
    server.shutdown();
}

#[test]
fn partly_read_body_rest_is_skipped() {
    let server = common::start(app());
    let mut c = server.connect();
    let body = "x".repeat(30_000);
    c.send(
        format!(
            "POST /first-chunk HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .as_bytes(),
    );
    c.send(&body.as_bytes()[..100]);
    let r = c.read_response();
    assert_eq!(
        r.text(),
        text_response("200 OK", "", "first chunk has 100 bytes")
    );
    c.send(&body.as_bytes()[100..]);
    c.send(b"POST /bytes HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\n\r\nnext");
    assert_eq!(
        c.read_response().text(),
        text_response("200 OK", "", "next")
    );
    server.shutdown();
}

#[test]
fn unread_body_up_to_the_drain_limit_keeps_the_connection() {
    let config = volt_http::Config {
        max_drain_bytes: 10_000,
        ..Default::default()
    };
    let server = common::start_with(1, config, app());
    let mut c = server.connect();
    c.send(b"POST /ignore HTTP/1.1\r\nHost: t\r\nContent-Length: 10000\r\n\r\n");
    c.send(&[b'x'; 10_000]);
    assert_eq!(
        c.read_response().text(),
        text_response("200 OK", "", "ignored")
    );
    c.send(b"POST /bytes HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\n\r\nnext");
    assert_eq!(
        c.read_response().text(),
        text_response("200 OK", "", "next")
    );
    server.shutdown();
}

#[test]
fn large_unread_body_closes_the_connection() {
    let config = volt_http::Config {
        max_drain_bytes: 10_000,
        ..Default::default()
    };
    let server = common::start_with(1, config, app());
    let mut c = server.connect();
    c.send(b"POST /ignore HTTP/1.1\r\nHost: t\r\nContent-Length: 1000000\r\n\r\n");
    // The body is sent from another thread: the server stops reading it, and then the write
    // fails.
    let mut writer = c.stream().try_clone().unwrap();
    let t = std::thread::spawn(move || {
        use std::io::Write;
        let _ = writer.write_all(&vec![b'x'; 1_000_000]);
    });
    let r = c.read_response();
    assert_eq!(
        r.text(),
        "HTTP/1.1 200 OK\r\nServer: volt\r\nDate: <date>\r\nContent-Type: text/plain\r\n\
         content-length: 7\r\nConnection: close\r\n\r\nignored"
    );
    let _ = c.read_to_end();
    t.join().unwrap();
    assert_eq!(
        server.get("/nope").lines().next(),
        Some("HTTP/1.1 404 Not Found")
    );
    server.shutdown();
}

#[test]
fn client_closing_mid_body_does_not_disturb_the_server() {
    let server = common::start(app());
    let mut c = server.connect();
    c.send(b"POST /bytes HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\nonly part");
    c.shutdown_write();
    // The handler's read fails; whatever it answers, the connection then closes.
    let rest = c.read_to_end();
    let text = String::from_utf8_lossy(&rest);
    assert!(
        rest.is_empty() || text.contains("Connection: close"),
        "{text:?}"
    );
    drop(c);
    let mut other = server.connect();
    other.send(b"POST /bytes HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nok");
    assert_eq!(
        other.read_response().text(),
        text_response("200 OK", "", "ok")
    );
    server.shutdown();
}

fn checksum(value: &'static str) -> HeaderMap {
    let mut trailers = HeaderMap::new();
    trailers.insert("x-checksum", HeaderValue::from_static(value));
    trailers
}

fn trailers_app() -> Router {
    Router::new()
        .route(
            "/full",
            get(|_req| async { Response::text(Body::from("hello").with_trailers(checksum("42"))) }),
        )
        .route(
            "/channel",
            get(|_req| async {
                let (mut tx, body) = Body::channel();
                volt_rt::spawn(async move {
                    for piece in ["ab", "cde"] {
                        if tx
                            .send(bytes::Bytes::from_static(piece.as_bytes()))
                            .await
                            .is_err()
                        {
                            return;
                        }
                    }
                    tx.send_trailers(checksum("7"));
                });
                Response::text(body)
            }),
        )
}

#[test]
fn trailers_turn_a_full_body_chunked_on_http_1_1() {
    let server = common::start(trailers_app());
    let mut c = server.connect();
    // Twice on one connection: the framing ends exactly where the trailer section does.
    for _ in 0..2 {
        c.send(b"GET /full HTTP/1.1\r\nHost: t\r\n\r\n");
        assert_eq!(
            c.read_response().text(),
            "HTTP/1.1 200 OK\r\nServer: volt\r\nDate: <date>\r\nContent-Type: text/plain\r\n\
             Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nx-checksum: 42\r\n\r\n"
        );
    }
    server.shutdown();
}

#[test]
fn trailers_set_by_a_channel_follow_its_last_chunk() {
    let server = common::start(trailers_app());
    let mut c = server.connect();
    c.send(b"GET /channel HTTP/1.1\r\nHost: t\r\n\r\n");
    let response = c.read_response();
    assert_eq!(response.body_text(), "abcde");
    assert!(
        response.text().ends_with("\r\n0\r\nx-checksum: 7\r\n\r\n"),
        "{}",
        response.text()
    );
    c.send(b"GET /full HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(c.read_response().body_text(), "hello");
    server.shutdown();
}

#[test]
fn http_1_0_and_head_get_no_trailers() {
    let server = common::start(trailers_app());
    let mut c = server.connect();
    c.send(b"GET /full HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    assert_eq!(
        c.read_response().text(),
        text_response("200 OK", "", "hello")
            .replace("\r\n\r\n", "\r\nConnection: keep-alive\r\n\r\n")
    );
    c.send(b"HEAD /full HTTP/1.1\r\nHost: t\r\n\r\n");
    let head = c.read_head_response();
    assert_eq!(head.header("content-length"), Some("5"));
    assert_eq!(head.header("transfer-encoding"), None);
    c.send(b"GET /full HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(c.read_response().body_text(), "hello");
    server.shutdown();
}
