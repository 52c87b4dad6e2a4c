//! HTTP/3 errors and limits against an independent client (quinn, h3): a malformed request is
//! a stream error (RFC 9114 §4.1.2) that leaves the connection up, a handler's panic answers
//! 500 on its stream only, a body over the limit answers 413, and graceful shutdown sends
//! GOAWAY and lets a running request finish.

mod common;
mod h2common;
mod h3common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use h3common::*;
use volt_http::{get, post, Config, Request, Router};

/// RFC 9114 §8.1.
const H3_MESSAGE_ERROR: u32 = 0x10e;
const H3_NO_ERROR: u64 = 0x100;
const H3_REQUEST_REJECTED: u64 = 0x10b;

/// [`app`] and `/slow`, which answers "slow but whole" after 2 s; the flag is set once it
/// has started.
fn app_with_slow() -> (Router, Arc<AtomicBool>) {
    let started = Arc::new(AtomicBool::new(false));
    let flag = started.clone();
    let app = app().route(
        "/slow",
        get(move |_req: Request| {
            let flag = flag.clone();
            async move {
                flag.store(true, Ordering::SeqCst);
                volt_rt::time::sleep(Duration::from_secs(2)).await;
                "slow but whole"
            }
        }),
    );
    (app, started)
}

fn app() -> Router {
    Router::new()
        .route("/hello", get(|_req: Request| async { "hello" }))
        .route(
            "/panic",
            get(|_req: Request| async {
                if true {
                    panic!("handler panicked on purpose");
                }
                "unreachable"
            }),
        )
        .route(
            "/count",
            post(|mut req: Request| async move {
                let body = req.bytes().await?;
                Ok::<_, volt_http::Error>(format!("{} bytes", body.len()))
            }),
        )
}

/// A HEADERS frame around a QPACK field section (RFC 9114 §7.2.2) whose prefix says no
/// dynamic table (two zero bytes, RFC 9204 §4.5.1).
fn headers_frame(lines: &[u8]) -> Vec<u8> {
    let mut frame = vec![0x01, (lines.len() + 2) as u8, 0x00, 0x00];
    frame.extend_from_slice(lines);
    frame
}

/// `:authority: h3.test` (a literal with the static name, index 0).
const AUTHORITY: &[u8] = b"\x50\x07h3.test";

/// Sends `bytes` on a new request stream and finishes it; the code of the reset the server
/// answers with, if it does.
async fn reset_code(conn: &quinn::Connection, bytes: &[u8]) -> Option<u32> {
    let (mut send, mut recv) = conn.open_bi().await.unwrap();
    send.write_all(bytes).await.unwrap();
    let _ = send.finish();
    match recv.read_to_end(1 << 16).await {
        Err(quinn::ReadToEndError::Read(quinn::ReadError::Reset(code))) => {
            Some(u32::try_from(code.into_inner()).unwrap())
        }
        other => panic!("expected a reset, got {other:?}"),
    }
}

#[tokio::test]
async fn a_malformed_request_is_a_stream_error_and_the_connection_stays() {
    let certs = certs();
    let server = start_h3(1, Config::default(), &certs, app());
    let conn = quic_connect(server.addr(), &certs.2).await;
    // No `:method` (indexed `:path: /`, `:scheme: https`).
    let mut lines = vec![0xc1, 0xd7];
    lines.extend_from_slice(AUTHORITY);
    assert_eq!(
        reset_code(&conn, &headers_frame(&lines)).await,
        Some(H3_MESSAGE_ERROR)
    );
    // An uppercase field name (§4.2): `X-A: b`, a literal name.
    let mut lines = vec![0xd1, 0xc1, 0xd7]; // :method GET, :path /, :scheme https
    lines.extend_from_slice(AUTHORITY);
    lines.extend_from_slice(b"\x23X-A\x01b");
    assert_eq!(
        reset_code(&conn, &headers_frame(&lines)).await,
        Some(H3_MESSAGE_ERROR)
    );
    // A body shorter than its `content-length` (§4.1.2): POST /count, content-length 10,
    // three bytes of DATA.
    let mut lines = vec![0xd4, 0x51, 0x06];
    lines.extend_from_slice(b"/count");
    lines.push(0xd7);
    lines.extend_from_slice(AUTHORITY);
    lines.extend_from_slice(b"\x54\x0210");
    let mut bytes = headers_frame(&lines);
    bytes.extend_from_slice(b"\x00\x03abc");
    assert_eq!(reset_code(&conn, &bytes).await, Some(H3_MESSAGE_ERROR));
    // The connection is still up and serving.
    assert!(conn.close_reason().is_none());
    let (mut client, _driver) = {
        let h3 = h3_quinn::Connection::new(conn.clone());
        let (mut driver, send) = h3::client::new(h3).await.unwrap();
        let driver =
            tokio::spawn(async move { std::future::poll_fn(|cx| driver.poll_close(cx)).await });
        (send, driver)
    };
    let res = send(&mut client, "GET", "/hello", &[]).await.unwrap();
    assert_eq!((res.status, res.text().as_str()), (200, "hello"));
    drop(client);
    shut_down(server).await;
}

#[tokio::test]
async fn a_handler_panic_answers_500_and_the_connection_goes_on() {
    let certs = certs();
    let server = start_h3(1, Config::default(), &certs, app());
    let (mut client, _driver) = connect(server.addr(), &certs.2).await;
    let res = send(&mut client, "GET", "/panic", &[]).await.unwrap();
    assert_eq!(res.status, 500);
    let res = send(&mut client, "GET", "/hello", &[]).await.unwrap();
    assert_eq!((res.status, res.text().as_str()), (200, "hello"));
    drop(client);
    shut_down(server).await;
}

#[tokio::test]
async fn a_body_over_the_limit_answers_413() {
    let certs = certs();
    let config = Config {
        max_body_bytes: 1000,
        ..Config::default()
    };
    let server = start_h3(1, config, &certs, app());
    let (mut client, _driver) = connect(server.addr(), &certs.2).await;
    // Streamed, no length: 413 once the limit is crossed.
    let req = http::Request::post("https://h3.test/count")
        .body(())
        .unwrap();
    let mut stream = client.send_request(req).await.unwrap();
    for _ in 0..4 {
        // The server may ask to stop sending once it answered (§4.1.1).
        let _ = stream.send_data(Bytes::from(vec![b'x'; 600])).await;
    }
    let _ = stream.finish().await;
    let res = read(&mut stream).await.unwrap();
    assert_eq!(res.status, 413);
    // A declared length over the limit: 413 before the handler runs.
    let req = http::Request::post("https://h3.test/count")
        .header("content-length", "5000")
        .body(())
        .unwrap();
    let mut stream = client.send_request(req).await.unwrap();
    let res = read(&mut stream).await.unwrap();
    assert_eq!(res.status, 413);
    // Within the limit, on the same connection.
    let res = send(
        &mut client,
        "POST",
        "/count",
        &[Bytes::from(vec![b'x'; 900])],
    )
    .await;
    assert_eq!(res.unwrap().text(), "900 bytes");
    drop(client);
    shut_down(server).await;
}

#[tokio::test]
async fn graceful_shutdown_sends_goaway_and_finishes_the_running_request() {
    let certs = certs();
    let (app, started) = app_with_slow();
    let server = start_h3(1, Config::default(), &certs, app);
    let (mut client, driver) = connect(server.addr(), &certs.2).await;
    let mut slow_client = client.clone();
    let slow = tokio::spawn(async move { send(&mut slow_client, "GET", "/slow", &[]).await });
    while !started.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let handle = server.handle();
    handle.shutdown();
    // GOAWAY reaches the client while the slow request runs: a new request is refused
    // (by the client, which has seen GOAWAY, or by the server, past the GOAWAY's ID).
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(send(&mut client, "GET", "/hello", &[]).await.is_err());
    let res = slow.await.unwrap().expect("the running request finishes");
    assert_eq!((res.status, res.text().as_str()), (200, "slow but whole"));
    // Then the server closes the connection, without error.
    let end = driver.await.unwrap();
    assert!(end.is_h3_no_error(), "{end:?}");
    drop(client);
    tokio::task::spawn_blocking(move || server.join())
        .await
        .unwrap()
        .unwrap();
}

/// The same, on the wire: after SETTINGS our control stream carries GOAWAY naming stream 4
/// (one past the request running on stream 0, §5.2); a request the client opens after it is
/// reset with H3_REQUEST_REJECTED; the running one finishes; the close is H3_NO_ERROR.
#[tokio::test]
async fn goaway_on_the_wire_names_the_first_stream_not_served() {
    let certs = certs();
    let (app, started) = app_with_slow();
    let server = start_h3(1, Config::default(), &certs, app);
    let conn = quic_connect(server.addr(), &certs.2).await;
    let mut control = conn.accept_uni().await.unwrap();
    let mut got = Vec::new();
    // Type, SETTINGS with MAX_FIELD_SECTION_SIZE and ENABLE_CONNECT_PROTOCOL (h3_streams.rs).
    let settings_len = 10;
    while got.len() < settings_len {
        got.extend_from_slice(&control.read_chunk(64, true).await.unwrap().unwrap().bytes);
    }
    // GET /slow on stream 0.
    let mut lines = vec![0xd1, 0xd7];
    lines.extend_from_slice(AUTHORITY);
    lines.extend_from_slice(b"\x51\x05/slow");
    let (mut send0, mut recv0) = conn.open_bi().await.unwrap();
    send0.write_all(&headers_frame(&lines)).await.unwrap();
    send0.finish().unwrap();
    while !started.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    server.handle().shutdown();
    while got.len() < settings_len + 3 {
        got.extend_from_slice(&control.read_chunk(64, true).await.unwrap().unwrap().bytes);
    }
    assert_eq!(&got[settings_len..], &[0x07, 0x01, 0x04]); // GOAWAY, length 1, stream 4
                                                           // Stream 4, opened after the GOAWAY: refused.
    let (mut send4, mut recv4) = conn.open_bi().await.unwrap();
    send4.write_all(&[0x01, 0x02, 0x00, 0x00]).await.unwrap();
    let _ = send4.finish();
    match recv4.read_to_end(1024).await {
        Err(quinn::ReadToEndError::Read(quinn::ReadError::Reset(code))) => {
            assert_eq!(code.into_inner(), H3_REQUEST_REJECTED)
        }
        other => panic!("expected a reset, got {other:?}"),
    }
    // The running request finishes: HEADERS, then a DATA frame with the body.
    let answer = recv0.read_to_end(1 << 16).await.unwrap();
    assert!(answer.ends_with(b"slow but whole"), "{answer:?}");
    match conn.closed().await {
        quinn::ConnectionError::ApplicationClosed(close) => {
            assert_eq!(close.error_code.into_inner(), H3_NO_ERROR)
        }
        other => panic!("expected an application close, got {other:?}"),
    }
    tokio::task::spawn_blocking(move || server.join())
        .await
        .unwrap()
        .unwrap();
}
