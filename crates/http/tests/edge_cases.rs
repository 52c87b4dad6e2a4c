//! Combinations of the HTTP/1 rules that the other raw-socket tests take one at a time:
//! panics, streamed bodies, `Expect: 100-continue`, unread bodies and `Connection: close`,
//! each inside a pipelined batch or alongside another of them.

mod common;

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use bytes::Bytes;
use common::{error_close, text_response, PanicAfter};
use http::StatusCode;
use volt_http::{any, get, post, Body, Error, Request, Response, Router};

fn app() -> Router {
    Router::new()
        .route("/", get(|_req| async { Response::text("hi") }))
        .route(
            "/echo",
            post(|mut req: Request| async move { req.bytes().await.map(Response::text) }),
        )
        .route(
            "/first-chunk-then-panic",
            post(|mut req: Request| async move {
                let first = req.body_mut().chunk().await?;
                if first.is_some() {
                    panic!("handler panicked on purpose, mid-body");
                }
                Ok::<_, Error>(Response::text("unreachable"))
            }),
        )
        .route(
            "/first-chunk",
            post(|mut req: Request| async move {
                let first = req.body_mut().chunk().await?.unwrap_or_default();
                Ok::<_, Error>(Response::text(format!("first {}", first.len())))
            }),
        )
        .route(
            "/panicking-stream",
            get(|_req| async { Response::text(Body::stream(PanicAfter(2))) }),
        )
        .route(
            "/panicking-stream-at-once",
            get(|_req| async { Response::text(Body::stream(PanicAfter(0))) }),
        )
        .route(
            "/failing-stream",
            get(|_req| async { Response::text(Body::stream(FailAfter(2))) }),
        )
        .route(
            "/failing-sized-stream",
            get(|_req| async { Response::text(Body::sized_stream(100, FailAfter(1))) }),
        )
        .route(
            "/no-content-stream",
            any(|_req| async {
                Response::new(StatusCode::NO_CONTENT).with_body(Body::stream(PanicAfter(1)))
            }),
        )
        .route(
            "/no-content-sized-stream",
            any(|_req| async {
                Response::new(StatusCode::NO_CONTENT)
                    .with_body(Body::sized_stream(4, PanicAfter(1)))
            }),
        )
        .route(
            // The request body streamed back as the response body, read by the task that
            // feeds the response (a proxy or an echo service).
            "/stream-echo",
            post(|mut req: Request| async move {
                let (mut tx, body) = Body::channel();
                volt_rt::spawn(async move {
                    while let Ok(Some(chunk)) = req.body_mut().chunk().await {
                        if tx.send(chunk).await.is_err() {
                            return;
                        }
                    }
                });
                Response::text(body)
            }),
        )
        .route(
            // A large streamed download while another task reads the request body: both
            // write through the connection (the reader flushes before it waits for bytes).
            "/download-reading-body",
            post(|mut req: Request| async move {
                let (mut tx, body) = Body::channel();
                volt_rt::spawn(async move {
                    let piece: Bytes = (0..PERIOD * 32).map(|i| (i % PERIOD) as u8).collect();
                    for _ in 0..DOWNLOAD_PIECES {
                        if tx.send(piece.clone()).await.is_err() {
                            return;
                        }
                    }
                });
                volt_rt::spawn(
                    async move { while let Ok(Some(_)) = req.body_mut().chunk().await {} },
                );
                Response::bytes(body)
            }),
        )
        .route(
            // Answers at once and leaves the body to a task of its own (202 Accepted).
            "/accept-in-background",
            post(|mut req: Request| async move {
                volt_rt::spawn(async move {
                    volt_rt::time::sleep(std::time::Duration::from_millis(20)).await;
                    while let Ok(Some(chunk)) = req.body_mut().chunk().await {
                        BACKGROUND_READ.fetch_add(chunk.len(), Ordering::Relaxed);
                    }
                });
                Response::new(StatusCode::ACCEPTED)
            }),
        )
}

/// Body bytes read by `/accept-in-background`'s task.
static BACKGROUND_READ: AtomicUsize = AtomicUsize::new(0);

const PERIOD: usize = 251;
const DOWNLOAD_PIECES: usize = 500;

/// Yields `n` chunks, then an error.
struct FailAfter(u32);

impl futures_core::Stream for FailAfter {
    type Item = io::Result<Bytes>;
    fn poll_next(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.0 == 0 {
            return Poll::Ready(Some(Err(io::Error::other("failed on purpose"))));
        }
        self.0 -= 1;
        Poll::Ready(Some(Ok(Bytes::from_static(b"part"))))
    }
}

const GET: &[u8] = b"GET / HTTP/1.1\r\nHost: t\r\n\r\n";

fn hi() -> String {
    text_response("200 OK", "", "hi")
}

/// A streamed body that panics cuts its own response short and closes, but the answers to the
/// requests pipelined before it were complete and must still arrive whole.
#[test]
fn panicking_stream_in_a_pipeline_still_delivers_the_earlier_answers() {
    for path in ["/panicking-stream", "/panicking-stream-at-once"] {
        let server = common::start(app());
        let mut c = server.connect();
        let mut batch = GET.to_vec();
        batch.extend_from_slice(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
        batch.extend_from_slice(GET);
        c.send(&batch);
        let got = c.read_to_end();
        let text = String::from_utf8_lossy(&got);
        assert!(
            common::normalize(&got).starts_with(&hi()),
            "{path}: the answer before the panicking stream was lost: {text:?}"
        );
        assert!(
            !got.ends_with(b"0\r\n\r\n") && !text.ends_with("hi"),
            "{path}: the panicking body ended as if complete, or a later request was answered: \
             {text:?}"
        );
        assert_eq!(server.get("/"), hi());
        server.shutdown();
    }
}

/// An HTTP/1.0 response of unknown length ends with the close: one cut short by a failing or
/// panicking stream ends with a reset, not a clean close that would make it look whole. A
/// complete one still ends cleanly.
#[test]
fn http10_stream_cut_short_ends_with_a_reset() {
    let server = common::start(app());
    for path in ["/failing-stream", "/panicking-stream"] {
        let mut c = server.connect();
        c.send(format!("GET {path} HTTP/1.0\r\n\r\n").as_bytes());
        let (got, reset) = c.read_to_close();
        let text = String::from_utf8_lossy(&got);
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{path}: {text:?}");
        assert!(
            reset,
            "{path}: a clean close after a body cut short: {text:?}"
        );
        if path == "/failing-stream" {
            assert!(
                text.ends_with("\r\n\r\npartpart"),
                "what came before is lost: {text:?}"
            );
        }
    }
    let mut c = server.connect();
    c.send(b"GET / HTTP/1.0\r\n\r\n");
    let (got, reset) = c.read_to_close();
    assert!(!reset, "{:?}", String::from_utf8_lossy(&got));
    assert_eq!(server.get("/"), hi());
}

/// A sized stream that fails midway: the client gets fewer bytes than announced and a close,
/// never the next pipelined answer.
#[test]
fn failing_sized_stream_in_a_pipeline_closes_after_the_earlier_answers() {
    let server = common::start(app());
    let mut c = server.connect();
    let mut batch = GET.to_vec();
    batch.extend_from_slice(b"GET /failing-sized-stream HTTP/1.1\r\nHost: t\r\n\r\n");
    batch.extend_from_slice(GET);
    c.send(&batch);
    assert_eq!(c.read_response().text(), hi());
    let rest = c.read_to_end();
    let rest = String::from_utf8_lossy(&rest);
    assert!(
        rest.contains("content-length: 100\r\n") && rest.ends_with("\r\n\r\npart"),
        "{rest:?}"
    );
    server.shutdown();
}

/// The handler panics after it read part of a chunked body: 500 and close, after the answer
/// to the request before it; the rest of the body is never parsed as a request.
#[test]
fn panic_after_reading_part_of_a_chunked_body_in_a_pipeline() {
    let server = common::start(app());
    let mut c = server.connect();
    let mut batch = GET.to_vec();
    batch.extend_from_slice(
        b"POST /first-chunk-then-panic HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n\
          5\r\nhello\r\n1b\r\nGET / HTTP/1.1\r\nHost: t\r\n\r\n\r\n0\r\n\r\n",
    );
    batch.extend_from_slice(GET);
    c.send(&batch);
    assert_eq!(c.read_response().text(), hi());
    assert_eq!(
        c.read_response().text(),
        error_close("500 Internal Server Error", "internal server error")
    );
    c.expect_closed();
    assert_eq!(server.get("/"), hi());
    server.shutdown();
}

/// A body the handler read only in part, whose rest holds what looks like a request: skipped,
/// and the real request pipelined after it is answered.
#[test]
fn rest_of_a_partly_read_chunked_body_is_not_a_request() {
    let server = common::start(app());
    let mut c = server.connect();
    c.send(
        b"POST /first-chunk HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n\
          5\r\nhello\r\n1b\r\nGET / HTTP/1.1\r\nHost: t\r\n\r\n\r\n0\r\nX-Trailer: 1\r\n\r\n\
          POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\n\r\nnext",
    );
    assert_eq!(
        c.read_response().text(),
        text_response("200 OK", "", "first 5")
    );
    assert_eq!(
        c.read_response().text(),
        text_response("200 OK", "", "next")
    );
    server.shutdown();
}

/// RFC 9110 §8.6, RFC 9112 §6.1: a 204 carries neither `Content-Length` nor
/// `Transfer-Encoding`, to HEAD as to GET, whatever body the handler gave.
#[test]
fn no_content_to_head_has_no_framing_headers() {
    let server = common::start(app());
    let mut c = server.connect();
    for path in ["/no-content-stream", "/no-content-sized-stream"] {
        for method in ["GET", "HEAD"] {
            c.send(format!("{method} {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
            assert_eq!(
                c.read_head_response().text(),
                "HTTP/1.1 204 No Content\r\nServer: volt\r\nDate: <date>\r\n\r\n",
                "{method} {path}"
            );
        }
    }
    c.send(GET);
    assert_eq!(c.read_response().text(), hi());
    server.shutdown();
}

/// The request body is read by the task feeding a streamed response, so the response head is
/// out before the body is asked for. A `100 Continue` then would land inside the response's
/// body: the final response already tells the client to go on.
#[test]
fn expect_continue_after_the_response_started_is_not_sent() {
    let server = common::start(app());
    let mut c = server.connect();
    c.send(
        b"POST /stream-echo HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\n\
          Content-Length: 5\r\n\r\nhello",
    );
    // The body came with the head (the client did not wait for the 100): the connection goes
    // on. (Without the body there yet, it would close: the client may or may not send it.)
    assert_eq!(
        c.read_response().text(),
        "HTTP/1.1 200 OK\r\nServer: volt\r\nDate: <date>\r\nContent-Type: text/plain\r\n\
         Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
    );
    c.send(GET);
    assert_eq!(c.read_response().text(), hi());
    server.shutdown();
}

/// `Connection: close` on the second of three pipelined requests: it is answered with
/// `Connection: close`, and the third is not.
#[test]
fn connection_close_mid_pipeline_with_bodies() {
    let server = common::start(app());
    let mut c = server.connect();
    c.send(
        b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\none\
          POST /echo HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Length: 3\r\n\r\ntwo\
          POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nthree",
    );
    assert_eq!(c.read_response().text(), text_response("200 OK", "", "one"));
    assert_eq!(
        c.read_response().text(),
        text_response("200 OK", "", "two").replace("\r\n\r\n", "\r\nConnection: close\r\n\r\n")
    );
    c.expect_closed();
    server.shutdown();
}

/// HTTP/1.0 with `keep-alive`, pipelined: both answered with `Connection: keep-alive`; then a
/// plain HTTP/1.0 request is answered and closes.
#[test]
fn http10_keep_alive_pipeline_then_plain_http10_closes() {
    let server = common::start(app());
    let mut c = server.connect();
    c.send(
        b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n\
          POST /echo HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nab\
          GET / HTTP/1.0\r\n\r\n\
          GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
    );
    let ka = |body: &str| {
        text_response("200 OK", "", body).replace("\r\n\r\n", "\r\nConnection: keep-alive\r\n\r\n")
    };
    assert_eq!(c.read_response().text(), ka("hi"));
    assert_eq!(c.read_response().text(), ka("ab"));
    assert_eq!(
        c.read_response().text(),
        text_response("200 OK", "", "hi").replace("\r\n\r\n", "\r\nConnection: close\r\n\r\n")
    );
    c.expect_closed();
    server.shutdown();
}

/// Many tiny pipelined requests, some with bodies, sent split at every byte boundary in
/// turn (two writes each): every one answered, in order.
#[test]
fn pipeline_split_at_every_byte() {
    let server = common::start(app());
    let mut batch = Vec::new();
    let mut expected = Vec::new();
    for i in 0..12 {
        if i % 3 == 1 {
            let body = format!("b{i}");
            batch.extend_from_slice(
                format!(
                    "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n\
                     {:x}\r\n{body}\r\n0\r\n\r\n",
                    body.len()
                )
                .as_bytes(),
            );
            expected.push(text_response("200 OK", "", &body));
        } else {
            batch.extend_from_slice(GET);
            expected.push(hi());
        }
    }
    let mut c = server.connect();
    for split in 1..batch.len() {
        c.send(&batch[..split]);
        std::thread::yield_now();
        c.send(&batch[split..]);
        for want in &expected {
            assert_eq!(&c.read_response().text(), want, "split at {split}");
        }
    }
    server.shutdown();
}

/// The task reading a request body flushes the connection's buffered answers before it waits
/// for more of the body, while the connection itself is in the middle of writing a streamed
/// response that filled the socket: the bytes must go out once each, in order.
#[test]
fn body_read_during_a_blocked_streamed_write_keeps_the_response_intact() {
    let server = common::start(app());
    let mut c = server.connect();
    c.send(b"POST /download-reading-body HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\n");
    // The download fills the socket while the client reads nothing.
    std::thread::sleep(std::time::Duration::from_millis(100));
    c.send(b"01234");
    // The reader takes these and waits for more, flushing first.
    std::thread::sleep(std::time::Duration::from_millis(100));
    c.send(b"56789");
    let mut offset = 0usize;
    let mut first_bad = None;
    let (status, _) = c.read_response_streaming(&mut |data| {
        if first_bad.is_none() {
            if let Some(i) = (0..data.len()).find(|&i| data[i] != ((offset + i) % PERIOD) as u8) {
                first_bad = Some(offset + i);
            }
        }
        offset += data.len();
    });
    assert_eq!(
        (status, offset, first_bad),
        (200, PERIOD * 32 * DOWNLOAD_PIECES, None)
    );
    // Whether the connection goes on depends on whether the reading task was done when the
    // download ended (see `body_read_in_the_background_after_the_response_closes_the_connection`).
    assert_eq!(server.get("/"), hi());
    server.shutdown();
}

/// Chunked request bodies whose framing is wrong in ways the codec tests do not reach through
/// a socket: the handler reading the body gets a 400 and the connection closes, without the
/// next pipelined request being answered.
#[test]
fn bad_chunked_framing_in_a_read_body_is_400_and_closes() {
    let server = common::start(app());
    let cases: &[&[u8]] = &[
        b"5 \r\nhello\r\n0\r\n\r\n",
        b" 5\r\nhello\r\n0\r\n\r\n",
        b"+5\r\nhello\r\n0\r\n\r\n",
        b"0x5\r\nhello\r\n0\r\n\r\n",
        b"5\nhello\r\n0\r\n\r\n",
        b"5\r\nhello\r\n0\r\nX-T: a\r\n folded\r\n\r\n",
        b"5\r\nhello\r\n0\r\nX-T: a\x01b\r\n\r\n",
        b"5\r\nhello\r\n0\r\nX T: a\r\n\r\n",
        b"5;ext=\x01\r\nhello\r\n0\r\n\r\n",
        b"5\r\nhelloXX0\r\n\r\n",
    ];
    for body in cases {
        let mut c = server.connect();
        let mut req =
            b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        req.extend_from_slice(body);
        req.extend_from_slice(GET);
        c.send(&req);
        let r = c.read_response();
        assert_eq!(
            (r.status, r.header("connection")),
            (400, Some("close")),
            "{:?}: {}",
            String::from_utf8_lossy(body),
            r.text()
        );
        c.expect_closed();
    }
    assert_eq!(server.get("/"), hi());
    server.shutdown();
}

/// Thousands of tiny pipelined requests, GET and HEAD mixed, in one write: the answers cross
/// the early-flush threshold many times and still come back whole and in order.
#[test]
fn thousands_of_tiny_pipelined_requests_in_one_write() {
    let server = common::start(app());
    let mut c = server.connect();
    let mut batch = Vec::new();
    for i in 0..5000 {
        batch.extend_from_slice(match i % 3 {
            2 => b"HEAD / HTTP/1.1\r\nHost: t\r\n\r\n".as_slice(),
            _ => GET,
        });
    }
    let mut writer = c.stream().try_clone().unwrap();
    let sender = std::thread::spawn(move || {
        use std::io::Write;
        writer.write_all(&batch).unwrap();
    });
    for i in 0..5000 {
        let r = match i % 3 {
            2 => c.read_head_response(),
            _ => c.read_response(),
        };
        assert_eq!(
            (r.status, r.header("content-length")),
            (200, Some("2")),
            "{i}"
        );
    }
    sender.join().unwrap();
    c.send(GET);
    assert_eq!(c.read_response().text(), hi());
    server.shutdown();
}

/// The handler answers at once and hands the body to a task of its own (202 Accepted). The
/// connection cannot skip the rest of the body while that task reads it (two tasks waiting on
/// one socket: one of them was never woken, and the connection hung for good), so it closes
/// after the response; the task still reads the whole body.
#[test]
fn body_read_in_the_background_after_the_response_closes_the_connection() {
    let server = common::start(app());
    let mut c = server.connect();
    c.send(b"POST /accept-in-background HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\n");
    assert_eq!(c.read_response().status, 202);
    // The background task waits for the body by now.
    std::thread::sleep(std::time::Duration::from_millis(50));
    c.send(b"0123456789");
    let _ = c.try_send(GET);
    c.expect_closed();
    common::wait_until("the background task's read", || {
        BACKGROUND_READ.load(Ordering::Relaxed) == 10
    });
    assert_eq!(server.get("/"), hi());
    server.shutdown();
}
