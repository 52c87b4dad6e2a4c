//! `Compress` over real sockets: exact heads for what is compressed and what is not
//! (Accept-Encoding weights, types, sizes, statuses, HEAD), `Vary` and `ETag` handling,
//! 304s through a wrapped `ServeDir`, streamed bodies compressed piece by piece while the
//! stream is live, on HTTP/1.1 and HTTP/2. Bodies are checked with flate2's and brotli's own
//! decoders, not volt's.

mod common;
mod h2common;

use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use common::{RawResponse, TestServer};
use h2common::{connect_h2c, send};
use volt_http::{get, Body, Compress, HeaderValue, Request, Response, Router, StatusCode};

/// 2,000+ bytes of JSON.
fn json() -> String {
    let items: Vec<String> = (0..60)
        .map(|i| format!(r#"{{"id":{i},"name":"item number {i}"}}"#))
        .collect();
    format!("[{}]", items.join(","))
}

fn gunzip(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(data)
        .read_to_end(&mut out)
        .expect("valid gzip");
    out
}

fn unbrotli(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    brotli::Decompressor::new(data, 4096)
        .read_to_end(&mut out)
        .expect("valid brotli");
    out
}

fn app() -> Router {
    let big_text = "plain text, over and over. ".repeat(100);
    Router::new()
        .route(
            "/json",
            get(|_req| async {
                Response::json(&serde_json::from_str::<serde_json::Value>(&json()).unwrap())
            }),
        )
        .route("/small", get(|_req| async { "tiny" }))
        .route(
            "/png",
            get(|_req| async {
                Response::bytes(vec![7u8; 4096])
                    .with_content_type(HeaderValue::from_static("image/png"))
            }),
        )
        .route(
            "/encoded",
            get(move |_req| {
                let body = vec![b'x'; 4096];
                async move { Response::text(body).with_header("content-encoding", "identity") }
            }),
        )
        .route(
            "/partial",
            get(move |_req| {
                let body = vec![b'x'; 4096];
                async move { Response::text(body).with_status(StatusCode::PARTIAL_CONTENT) }
            }),
        )
        .route(
            "/sized/{n}",
            get(|req: Request| async move {
                let n: usize = req.param("n").unwrap();
                Response::text(vec![b'a'; n])
            }),
        )
        .route(
            "/no-transform",
            get(|_req| async {
                Response::text("a body to leave alone. ".repeat(100))
                    .with_header("cache-control", "max-age=60, No-Transform")
            }),
        )
        .route(
            "/no-transform-lines",
            get(|_req| async {
                Response::text("a body to leave alone. ".repeat(100))
                    .with_header("cache-control", "public")
                    .with_header("cache-control", "no-transform")
            }),
        )
        .route(
            "/transformable",
            get(|_req| async {
                Response::text("a body to compress. ".repeat(100))
                    .with_header("cache-control", "no-cache, max-age=0")
            }),
        )
        .route(
            "/no-content",
            get(|_req| async {
                Response::text("x".repeat(4096)).with_status(StatusCode::NO_CONTENT)
            }),
        )
        .route(
            "/tagged",
            get(move |_req| {
                let body = big_text.clone();
                async move {
                    Response::text(body)
                        .with_header("vary", "Origin")
                        .with_header("etag", "\"v1\"")
                        .with_header("accept-ranges", "bytes")
                }
            }),
        )
        .route(
            "/trailed",
            get(|_req| async {
                let mut trailers = http::HeaderMap::new();
                trailers.insert("x-sum", HeaderValue::from_static("42"));
                let parts = [Ok(Bytes::from("x".repeat(2000)))];
                let body = Body::stream(common::Iter(parts.into_iter())).with_trailers(trailers);
                Response::text(body)
            }),
        )
        .route(
            "/stream",
            get(|_req| async {
                let parts = ["event: one\n\n", "event: two\n\n"].map(|p| Ok(Bytes::from(p)));
                Response::text(Body::stream(common::Iter(parts.into_iter())))
            }),
        )
}

fn serve() -> TestServer {
    common::start(Compress::new(app()))
}

fn get_with(server: &TestServer, path: &str, fields: &str) -> RawResponse {
    let mut c = server.connect();
    c.send(format!("GET {path} HTTP/1.1\r\nHost: t\r\n{fields}\r\n").as_bytes());
    c.read_response()
}

#[test]
fn gzip_on_the_wire() {
    let server = serve();
    let r = get_with(&server, "/json", "Accept-Encoding: gzip\r\n");
    let packed_len = r.body.len();
    let head = format!(
        "HTTP/1.1 200 OK\r\nServer: volt\r\nDate: <date>\r\nContent-Type: application/json\r\n\
         vary: Accept-Encoding\r\ncontent-encoding: gzip\r\ncontent-length: {packed_len}\r\n\r\n"
    );
    assert!(r.text().starts_with(&head), "{}", r.head);
    assert!(packed_len < json().len() / 3, "{packed_len}");
    assert_eq!(gunzip(&r.body), json().as_bytes());
}

#[test]
fn weights_and_ties_choose_the_coding() {
    let server = serve();
    let coding = |fields: &str| {
        let r = get_with(&server, "/json", fields);
        assert_eq!(r.status, 200, "never 406");
        assert_eq!(r.header("vary"), Some("Accept-Encoding"), "{fields}");
        let body = match r.header("content-encoding") {
            Some("gzip") => gunzip(&r.body),
            Some("br") => unbrotli(&r.body),
            None => r.body.clone(),
            Some(other) => panic!("{other}"),
        };
        assert_eq!(body, json().as_bytes());
        r.header("content-encoding").map(str::to_owned)
    };
    let some = |s: &str| Some(s.to_owned());
    assert_eq!(coding("Accept-Encoding: gzip, deflate, br\r\n"), some("br"));
    assert_eq!(coding("Accept-Encoding: br;q=0.5, gzip\r\n"), some("gzip"));
    assert_eq!(
        coding("Accept-Encoding: gzip\r\nAccept-Encoding: br\r\n"),
        some("br")
    );
    assert_eq!(coding("Accept-Encoding: *\r\n"), some("br"));
    assert_eq!(coding("Accept-Encoding: gzip;q=0.5, identity\r\n"), None);
    assert_eq!(coding("Accept-Encoding: identity;q=0, *;q=0\r\n"), None);
    assert_eq!(coding("Accept-Encoding: deflate\r\n"), None);
    assert_eq!(coding(""), None);
}

#[test]
fn what_is_left_alone() {
    let server = serve();
    let gzip = "Accept-Encoding: gzip, br\r\n";
    // Too small, an incompressible type, a coding already there, a part: untouched, and
    // nothing varies.
    for path in ["/small", "/png", "/encoded", "/partial"] {
        let r = get_with(&server, path, gzip);
        assert_eq!(r.header("vary"), None, "{path}");
        assert_ne!(r.header("content-encoding"), Some("gzip"), "{path}");
        assert_ne!(r.header("content-encoding"), Some("br"), "{path}");
    }
    // A lower threshold takes the small one too.
    let low = common::start(Compress::new(app()).min_size(4));
    let r = get_with(&low, "/small", gzip);
    assert_eq!(r.header("content-encoding"), Some("br"));
    assert_eq!(unbrotli(&r.body), b"tiny");
    let r = get_with(&low, "/small", "Accept-Encoding: gzip\r\n");
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    assert_eq!(gunzip(&r.body), b"tiny");
    // HEAD: the identity head (its length), but it says that the answer varies.
    let mut c = server.connect();
    c.send(format!("HEAD /json HTTP/1.1\r\nHost: t\r\n{gzip}\r\n").as_bytes());
    let r = c.read_head_response();
    assert_eq!(r.header("content-encoding"), None);
    assert_eq!(r.header("vary"), Some("Accept-Encoding"));
    assert_eq!(
        r.header("content-length"),
        Some(json().len().to_string().as_str())
    );
}

#[test]
fn the_default_threshold_is_512_bytes() {
    let server = serve();
    let both = "Accept-Encoding: gzip, br\r\n";
    // 511 bytes: left alone, nothing varies; 512 on: compressed, by the encoders the worker
    // keeps (each response decodes alone, whatever came before on the same worker).
    let r = get_with(&server, "/sized/511", both);
    assert_eq!(
        (r.header("content-encoding"), r.header("vary")),
        (None, None)
    );
    assert_eq!(r.body, vec![b'a'; 511]);
    for n in [512, 600, 1024, 5000, 512] {
        for (fields, coding) in [(both, "br"), ("Accept-Encoding: gzip\r\n", "gzip")] {
            let r = get_with(&server, &format!("/sized/{n}"), fields);
            assert_eq!(r.header("content-encoding"), Some(coding), "{n}");
            assert_eq!(r.header("vary"), Some("Accept-Encoding"), "{n}");
            let body = match coding {
                "gzip" => gunzip(&r.body),
                _ => unbrotli(&r.body),
            };
            assert_eq!(body, vec![b'a'; n], "{n}");
        }
    }
}

#[test]
fn no_transform_and_bodiless_statuses_are_left_alone() {
    let server = serve();
    let gzip = "Accept-Encoding: gzip, br\r\n";
    // `Cache-Control: no-transform` (any case, on any of its lines): as the service sent it,
    // without `Vary` (its form never depends on Accept-Encoding).
    for path in ["/no-transform", "/no-transform-lines"] {
        let r = get_with(&server, path, gzip);
        assert_eq!(r.status, 200);
        assert_eq!(r.header("content-encoding"), None, "{path}");
        assert_eq!(r.header("vary"), None, "{path}");
        assert_eq!(r.header("content-length"), Some("2300"), "{path}");
        assert_eq!(r.body, "a body to leave alone. ".repeat(100).as_bytes());
    }
    // Other directives do not stop it.
    let r = get_with(&server, "/transformable", gzip);
    assert_eq!(r.header("content-encoding"), Some("br"));
    assert_eq!(
        unbrotli(&r.body),
        "a body to compress. ".repeat(100).as_bytes()
    );
    // A 204 has no body to compress (the server drops the one given).
    let r = get_with(&server, "/no-content", gzip);
    assert_eq!(r.status, 204);
    assert_eq!(r.header("content-encoding"), None);
    assert_eq!(r.header("vary"), None);
    assert!(r.body.is_empty());
}

#[test]
fn vary_is_merged_and_the_etag_weakened() {
    let server = serve();
    let r = get_with(&server, "/tagged", "Accept-Encoding: gzip\r\n");
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    assert_eq!(r.header("vary"), Some("Origin, Accept-Encoding"));
    assert_eq!(r.header("etag"), Some("W/\"v1\""));
    assert_eq!(
        r.header("accept-ranges"),
        None,
        "ranges are of the identity form"
    );
    // Not compressed: the strong tag stays, and the answer still varies.
    let r = get_with(&server, "/tagged", "");
    assert_eq!(r.header("content-encoding"), None);
    assert_eq!(r.header("vary"), Some("Origin, Accept-Encoding"));
    assert_eq!(r.header("etag"), Some("\"v1\""));
    assert_eq!(r.header("accept-ranges"), Some("bytes"));
}

#[test]
fn a_wrapped_serve_dir_keeps_its_304s_and_ranges() {
    let dir = std::env::temp_dir().join(format!("volt-compress-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = "static text, compressible. ".repeat(200);
    std::fs::write(dir.join("a.txt"), &text).unwrap();
    // 200 KiB: streamed from the file in 64 KiB reads, compressed as it goes.
    let large: String = (0..200 * 1024 / 16).map(|i| format!("{i:>15}\n")).collect();
    std::fs::write(dir.join("large.txt"), &large).unwrap();
    let server = common::start(Compress::new(volt_http::ServeDir::new(&dir)));
    let r = get_with(&server, "/a.txt", "Accept-Encoding: gzip\r\n");
    assert_eq!(gunzip(&r.body), text.as_bytes());
    let etag = r.header("etag").unwrap().to_owned();
    assert!(etag.starts_with("W/\""), "{etag}");
    // The weak tag matches If-None-Match (weak comparison) in ServeDir itself.
    let r = get_with(
        &server,
        "/a.txt",
        &format!("Accept-Encoding: gzip\r\nIf-None-Match: {etag}\r\n"),
    );
    assert_eq!(r.status, 304);
    assert_eq!(r.header("etag"), Some(etag.as_str()));
    assert_eq!(r.header("vary"), Some("Accept-Encoding"));
    // A range is of the identity bytes, and goes uncompressed.
    let r = get_with(
        &server,
        "/a.txt",
        "Accept-Encoding: gzip\r\nRange: bytes=0-5\r\n",
    );
    assert_eq!((r.status, &r.body[..]), (206, &b"static"[..]));
    assert_eq!(r.header("content-encoding"), None);
    // A streamed file: chunked, no length, whole once decoded.
    let r = get_with(&server, "/large.txt", "Accept-Encoding: gzip\r\n");
    assert_eq!(r.header("transfer-encoding"), Some("chunked"));
    assert_eq!(r.header("content-length"), None);
    assert_eq!(gunzip(&r.body), large.as_bytes());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A stream that sends its first event, then waits (off the test's clock) until the client
/// has decoded it before sending the second: it is compressed and flushed piece by piece.
fn live_app(first_seen: Arc<AtomicBool>) -> Router {
    Router::new().route(
        "/events",
        get(move |_req: Request| {
            let first_seen = first_seen.clone();
            async move {
                let (mut tx, body) = Body::channel();
                volt_rt::spawn(async move {
                    tx.send("data: first\n\n").await.unwrap();
                    while !first_seen.load(Ordering::SeqCst) {
                        volt_rt::time::sleep(Duration::from_millis(5)).await;
                    }
                    tx.send("data: second\n\n").await.unwrap();
                });
                Response::text(body)
                    .with_content_type(HeaderValue::from_static("text/event-stream"))
            }
        }),
    )
}

#[test]
fn a_stream_is_flushed_event_by_event_on_http1() {
    let first_seen = Arc::new(AtomicBool::new(false));
    let server = common::start(Compress::new(live_app(first_seen.clone())));
    let mut c = server.connect();
    c.send(b"GET /events HTTP/1.1\r\nHost: t\r\nAccept-Encoding: gzip\r\n\r\n");
    let mut decoder = flate2::write::GzDecoder::new(Vec::new());
    let (status, head) = c.read_response_streaming(&mut |piece| {
        use std::io::Write;
        decoder.write_all(piece).unwrap();
        decoder.flush().unwrap();
        if decoder.get_ref().as_slice() == b"data: first\n\n" {
            first_seen.store(true, Ordering::SeqCst);
        }
    });
    assert_eq!(status, 200);
    assert!(head.contains("content-encoding: gzip\r\n"), "{head}");
    assert!(head.contains("Transfer-Encoding: chunked\r\n"), "{head}");
    assert!(
        first_seen.load(Ordering::SeqCst),
        "the first event came alone"
    );
    let all = decoder.finish().unwrap();
    assert_eq!(all, b"data: first\n\ndata: second\n\n");
}

#[test]
fn http2_compresses_fixed_and_streamed_bodies() {
    let server = serve();
    let addr = server.addr();
    volt_rt::block_on(async move {
        let mut h2 = connect_h2c(addr).await;
        let ask = |path: &str, coding: &str| {
            http::Request::get(format!("http://t{path}"))
                .header("accept-encoding", coding)
                .body(())
                .unwrap()
        };
        let r = send(&mut h2, ask("/json", "gzip"), Bytes::new()).await;
        assert_eq!(r.headers["content-encoding"], "gzip");
        assert_eq!(r.headers["vary"], "Accept-Encoding");
        assert_eq!(
            r.headers["content-length"],
            r.body.len().to_string().as_str()
        );
        assert_eq!(gunzip(&r.body), json().as_bytes());
        let r = send(&mut h2, ask("/stream", "br"), Bytes::new()).await;
        assert_eq!(r.headers["content-encoding"], "br");
        assert!(r.headers.get("content-length").is_none());
        assert_eq!(unbrotli(&r.body), b"event: one\n\nevent: two\n\n");
        // Trailers pass after the compressed body.
        let r = send(&mut h2, ask("/trailed", "gzip"), Bytes::new()).await;
        assert_eq!(r.headers["content-encoding"], "gzip");
        assert_eq!(gunzip(&r.body), "x".repeat(2000).as_bytes());
        assert_eq!(r.trailers.unwrap()["x-sum"], "42");
        let r = send(&mut h2, ask("/json", "identity"), Bytes::new()).await;
        assert!(r.headers.get("content-encoding").is_none());
        assert_eq!(r.body, json().as_bytes());
    });
}
