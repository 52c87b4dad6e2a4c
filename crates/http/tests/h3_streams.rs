//! HTTP/3 streams besides requests (RFC 9114 §6.2) and the ends of messages: our control
//! stream's SETTINGS, the client's control stream checked (SETTINGS first, never closed),
//! unknown stream types refused, trailers both ways, HEAD, a response body that fails, and a
//! UDP port already taken.

mod common;
mod h2common;
mod h3common;

use bytes::Bytes;
use h3common::*;
use volt_http::{get, post, Body, Config, Request, Response, Router, Server};

/// RFC 9114 §8.1.
const H3_STREAM_CREATION_ERROR: u64 = 0x103;
const H3_CLOSED_CRITICAL_STREAM: u64 = 0x104;
const H3_MISSING_SETTINGS: u64 = 0x10a;
const H3_INTERNAL_ERROR: u64 = 0x102;

fn app() -> Router {
    Router::new()
        .route("/hello", get(|_req: Request| async { "hello" }))
        // Answers with the request's trailer `x-sum`, and trailers of its own.
        .route(
            "/trailers",
            post(|mut req: Request| async move {
                let trailers = req.body_mut().trailers().await?.unwrap_or_default();
                let sum = trailers
                    .get("x-sum")
                    .map(|v| v.to_str().unwrap().to_string());
                let mut out = http::HeaderMap::new();
                out.insert("x-done", "yes".parse().unwrap());
                let body = Body::from(format!("sum={}", sum.unwrap_or_default()));
                Ok::<_, volt_http::Error>(Response::text(body.with_trailers(out)))
            }),
        )
        .route(
            "/fails",
            get(|_req: Request| async { Response::bytes(Body::stream(common::PanicAfter(3))) }),
        )
}

/// The application error code a connection was closed with.
async fn close_code(conn: &quinn::Connection) -> u64 {
    match conn.closed().await {
        quinn::ConnectionError::ApplicationClosed(close) => close.error_code.into_inner(),
        other => panic!("expected an application close, got {other:?}"),
    }
}

#[tokio::test]
async fn our_control_stream_opens_with_settings() {
    let certs = certs();
    let server = start_h3(1, Config::default(), &certs, app());
    let conn = quic_connect(server.addr(), &certs.2).await;
    let mut control = conn.accept_uni().await.unwrap();
    let mut got = Vec::new();
    // Type 0x00 (control), SETTINGS (0x04) with MAX_FIELD_SECTION_SIZE (0x06) = 16,384 as a
    // 4-byte varint and ENABLE_CONNECT_PROTOCOL (0x08) = 1 (RFC 9220 §3);
    // QPACK_MAX_TABLE_CAPACITY left at its default, 0.
    let expected = [0x00, 0x04, 0x07, 0x06, 0x80, 0x00, 0x40, 0x00, 0x08, 0x01];
    while got.len() < expected.len() {
        let chunk = control.read_chunk(64, true).await.unwrap().unwrap();
        got.extend_from_slice(&chunk.bytes);
    }
    assert_eq!(got, expected);
    drop(control);
    shut_down(server).await;
}

#[tokio::test]
async fn a_control_stream_without_settings_first_closes_the_connection() {
    let certs = certs();
    let server = start_h3(1, Config::default(), &certs, app());
    let conn = quic_connect(server.addr(), &certs.2).await;
    let mut control = conn.open_uni().await.unwrap();
    // Control stream, then GOAWAY (0x07) before any SETTINGS.
    control.write_all(&[0x00, 0x07, 0x01, 0x00]).await.unwrap();
    assert_eq!(close_code(&conn).await, H3_MISSING_SETTINGS);
    shut_down(server).await;
}

#[tokio::test]
async fn closing_the_control_stream_closes_the_connection() {
    let certs = certs();
    let server = start_h3(1, Config::default(), &certs, app());
    let conn = quic_connect(server.addr(), &certs.2).await;
    let mut control = conn.open_uni().await.unwrap();
    control.write_all(&[0x00, 0x04, 0x00]).await.unwrap(); // empty SETTINGS
    control.finish().unwrap();
    assert_eq!(close_code(&conn).await, H3_CLOSED_CRITICAL_STREAM);
    shut_down(server).await;
}

#[tokio::test]
async fn a_second_control_stream_closes_the_connection() {
    let certs = certs();
    let server = start_h3(1, Config::default(), &certs, app());
    let conn = quic_connect(server.addr(), &certs.2).await;
    let mut first = conn.open_uni().await.unwrap();
    first.write_all(&[0x00, 0x04, 0x00]).await.unwrap();
    let mut second = conn.open_uni().await.unwrap();
    second.write_all(&[0x00, 0x04, 0x00]).await.unwrap();
    assert_eq!(close_code(&conn).await, H3_STREAM_CREATION_ERROR);
    shut_down(server).await;
}

#[tokio::test]
async fn an_unknown_stream_type_is_stopped_and_the_connection_goes_on() {
    let certs = certs();
    let server = start_h3(1, Config::default(), &certs, app());
    let conn = quic_connect(server.addr(), &certs.2).await;
    let mut odd = conn.open_uni().await.unwrap();
    // 0x21: a reserved type (0x1f * N + 0x21), as clients send to grease (§6.2.3).
    odd.write_all(&[0x21, b'x']).await.unwrap();
    let stopped = odd.stopped().await.unwrap();
    assert_eq!(
        stopped.map(|c| c.into_inner()),
        Some(H3_STREAM_CREATION_ERROR)
    );
    let (mut client, _driver) = {
        let (mut driver, send) = h3::client::new(h3_quinn::Connection::new(conn.clone()))
            .await
            .unwrap();
        let driver =
            tokio::spawn(async move { std::future::poll_fn(|cx| driver.poll_close(cx)).await });
        (send, driver)
    };
    let res = send(&mut client, "GET", "/hello", &[]).await.unwrap();
    assert_eq!(res.text(), "hello");
    drop(client);
    shut_down(server).await;
}

#[tokio::test]
async fn trailers_go_both_ways_and_head_has_no_body() {
    let certs = certs();
    let server = start_h3(1, Config::default(), &certs, app());
    let (mut client, _driver) = connect(server.addr(), &certs.2).await;
    let req = http::Request::post("https://h3.test/trailers")
        .body(())
        .unwrap();
    let mut stream = client.send_request(req).await.unwrap();
    stream.send_data(Bytes::from("numbers")).await.unwrap();
    let mut trailers = http::HeaderMap::new();
    trailers.insert("x-sum", "42".parse().unwrap());
    stream.send_trailers(trailers).await.unwrap();
    // (h3's docs say `send_trailers` finishes the stream; 0.0.8 does not.)
    stream.finish().await.unwrap();
    let res = read(&mut stream).await.unwrap();
    assert_eq!(res.text(), "sum=42");
    let theirs = stream
        .recv_trailers()
        .await
        .unwrap()
        .expect("response trailers");
    assert_eq!(theirs["x-done"], "yes");

    let res = send(&mut client, "HEAD", "/hello", &[]).await.unwrap();
    assert_eq!((res.status, res.body.len()), (200, 0));
    assert_eq!(res.headers["content-length"], "5");
    drop(client);
    shut_down(server).await;
}

#[tokio::test]
async fn a_failing_response_body_resets_its_stream_only() {
    let certs = certs();
    let server = start_h3(1, Config::default(), &certs, app());
    let conn = quic_connect(server.addr(), &certs.2).await;
    let (mut send_half, mut recv) = conn.open_bi().await.unwrap();
    // GET /fails: :method GET, :scheme https, :authority h3.test, :path /fails.
    let mut lines = vec![0x00, 0x00, 0xd1, 0xd7, 0x50, 0x07];
    lines.extend_from_slice(b"h3.test");
    lines.extend_from_slice(b"\x51\x06/fails");
    let mut frame = vec![0x01, lines.len() as u8];
    frame.extend_from_slice(&lines);
    send_half.write_all(&frame).await.unwrap();
    send_half.finish().unwrap();
    match recv.read_to_end(1 << 20).await {
        Err(quinn::ReadToEndError::Read(quinn::ReadError::Reset(code))) => {
            assert_eq!(code.into_inner(), H3_INTERNAL_ERROR)
        }
        other => panic!("expected a reset, got {other:?}"),
    }
    assert!(conn.close_reason().is_none());
    shut_down(server).await;
}

/// Every worker binds the UDP port; one that cannot stops the server, and `serve` says why.
#[test]
fn a_taken_udp_port_fails_serve() {
    let certs = certs();
    let taken = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let tls = volt_http::TlsConfig::new(
        volt_http::CertKey::from_pem(certs.0.as_bytes(), certs.1.as_bytes()).unwrap(),
    )
    .build()
    .unwrap();
    let Ok(server) = Server::bind(("127.0.0.1", port)) else {
        eprintln!("SKIPPED: the TCP port of the same number is taken too");
        return;
    };
    let server = server.handle_signals(false).workers(1).tls(tls).http3(true);
    let err = server.serve(app()).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse);
}

/// A request stream with `lines` (a field section's lines, after its prefix) as its head.
fn head_frame(lines: &[u8]) -> Vec<u8> {
    let mut frame = vec![0x01, (lines.len() + 2) as u8, 0x00, 0x00];
    frame.extend_from_slice(lines);
    frame
}

/// `:scheme https`, `:authority h3.test`, `expect: 100-continue` (a literal name).
fn expecting(method_and_path: &[u8]) -> Vec<u8> {
    let mut lines = method_and_path.to_vec();
    lines.extend_from_slice(b"\xd7\x50\x07h3.test\x26expect\x0c100-continue");
    lines
}

/// `Expect: 100-continue` (RFC 9110 §10.1.1): the interim 100 goes out as its own HEADERS
/// frame when the handler waits for the body, and not at all when it answers without it.
#[tokio::test]
async fn expect_100_continue_is_answered_when_the_body_is_wanted() {
    let certs = certs();
    let app = app().route(
        "/count",
        post(|mut req: Request| async move {
            let body = req.bytes().await?;
            Ok::<_, volt_http::Error>(format!("{} bytes", body.len()))
        }),
    );
    let server = start_h3(1, Config::default(), &certs, app);
    let conn = quic_connect(server.addr(), &certs.2).await;
    // POST (static 20) /count, content-length 5 (static name 4), no body yet.
    let mut lines = expecting(b"\xd4\x51\x06/count");
    lines.extend_from_slice(b"\x54\x015");
    let (mut send, mut recv) = conn.open_bi().await.unwrap();
    send.write_all(&head_frame(&lines)).await.unwrap();
    // HEADERS, 4 bytes: no dynamic table, `:status 100` (static 63: 0xff 0x00).
    let mut interim = [0u8; 6];
    recv.read_exact(&mut interim).await.unwrap();
    assert_eq!(interim, [0x01, 0x04, 0x00, 0x00, 0xff, 0x00]);
    send.write_all(b"\x00\x05hello").await.unwrap();
    send.finish().unwrap();
    let rest = recv.read_to_end(1 << 16).await.unwrap();
    assert!(rest.ends_with(b"5 bytes"), "{rest:?}");

    // GET /hello answers without reading: its first frame is the final head (`:status
    // 200`, static 25: 0xd9).
    let (mut send, mut recv) = conn.open_bi().await.unwrap();
    let get_hello = expecting(b"\xd1\x51\x06/hello"); // GET (static 17), :path /hello
    send.write_all(&head_frame(&get_hello)).await.unwrap();
    let _ = send.finish();
    let answer = recv.read_to_end(1 << 16).await.unwrap();
    assert_eq!(&answer[2..5], &[0x00, 0x00, 0xd9], "{answer:?}");
    shut_down(server).await;
}
