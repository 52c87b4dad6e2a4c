//! HTTP/3 limits and timeouts from `Config`, against an independent client (quinn, h3): 431
//! for a head over `max_head_bytes`, a head that never completes, a body that stalls (408), a
//! client that takes no response (its stream reset), an idle connection closed by QUIC's idle
//! timeout. Each timeout is 1 s and each test waits for it with no upper bound but the hang
//! guard: none depends on timing.

mod common;
mod h2common;
mod h3common;

use std::time::Duration;

use bytes::Bytes;
use h3common::*;
use volt_http::{get, post, Body, Config, Request, Response, Router};

/// H3_REQUEST_CANCELLED, H3_REQUEST_INCOMPLETE (RFC 9114 §8.1).
const H3_REQUEST_CANCELLED: u64 = 0x10c;
const H3_REQUEST_INCOMPLETE: u64 = 0x10d;

fn app() -> Router {
    Router::new()
        .route("/hello", get(|_req: Request| async { "hello" }))
        .route(
            "/count",
            post(|mut req: Request| async move {
                let body = req.bytes().await?;
                Ok::<_, volt_http::Error>(format!("{} bytes", body.len()))
            }),
        )
        .route(
            "/big",
            get(|_req: Request| async {
                let chunks = (0..256).map(|_| Ok(Bytes::from(vec![b'b'; 64 * 1024])));
                Response::bytes(Body::stream(common::Iter(chunks)))
            }),
        )
}

fn quick(config: Config) -> Config {
    Config {
        header_read_timeout: Duration::from_secs(1),
        body_read_timeout: Duration::from_secs(1),
        write_timeout: Duration::from_secs(1),
        ..config
    }
}

#[tokio::test]
async fn a_head_over_the_limit_answers_431() {
    let certs = certs();
    let config = Config {
        max_head_bytes: 4096,
        ..Config::default()
    };
    let server = start_h3(1, config, &certs, app());
    let (mut client, _driver) = connect(server.addr(), &certs.2).await;
    let req = http::Request::get("https://h3.test/hello")
        .header("x-big", "a".repeat(5000))
        .body(())
        .unwrap();
    let mut stream = client.send_request(req).await.unwrap();
    stream.finish().await.unwrap();
    assert_eq!(read(&mut stream).await.unwrap().status, 431);
    let res = send(&mut client, "GET", "/hello", &[]).await.unwrap();
    assert_eq!(res.status, 200);
    drop(client);
    shut_down(server).await;
}

#[tokio::test]
async fn a_head_that_never_completes_is_reset() {
    let certs = certs();
    let server = start_h3(1, quick(Config::default()), &certs, app());
    let conn = quic_connect(server.addr(), &certs.2).await;
    let (mut send, mut recv) = conn.open_bi().await.unwrap();
    // A HEADERS frame announcing 50 bytes, of which 2 come.
    send.write_all(&[0x01, 50, 0x00, 0x00]).await.unwrap();
    match recv.read_to_end(1024).await {
        Err(quinn::ReadToEndError::Read(quinn::ReadError::Reset(code))) => {
            assert_eq!(code.into_inner(), H3_REQUEST_INCOMPLETE)
        }
        other => panic!("expected a reset, got {other:?}"),
    }
    drop(send);
    shut_down(server).await;
}

#[tokio::test]
async fn a_stalled_body_answers_408() {
    let certs = certs();
    let server = start_h3(1, quick(Config::default()), &certs, app());
    let (mut client, _driver) = connect(server.addr(), &certs.2).await;
    let req = http::Request::post("https://h3.test/count")
        .body(())
        .unwrap();
    let mut stream = client.send_request(req).await.unwrap();
    stream.send_data(Bytes::from("part of it")).await.unwrap();
    // Nothing more, and no end: the handler's read times out.
    let res = read(&mut stream).await.unwrap();
    assert_eq!(res.status, 408);
    drop(client);
    shut_down(server).await;
}

#[tokio::test]
async fn a_client_that_takes_nothing_has_its_response_reset() {
    let certs = certs();
    let server = start_h3(1, quick(Config::default()), &certs, app());
    let conn = quic_connect(server.addr(), &certs.2).await;
    let (mut send, mut recv) = conn.open_bi().await.unwrap();
    // GET /big (16 MiB): :method GET, :scheme https, :authority, :path /big.
    let mut lines = vec![0x00, 0x00, 0xd1, 0xd7, 0x50, 0x07];
    lines.extend_from_slice(b"h3.test");
    lines.extend_from_slice(b"\x51\x04/big");
    let mut frame = vec![0x01, lines.len() as u8];
    frame.extend_from_slice(&lines);
    send.write_all(&frame).await.unwrap();
    send.finish().unwrap();
    // The client reads nothing while its windows fill and the server's send buffer fills
    // behind them; the server gives up after `write_timeout`.
    tokio::time::sleep(Duration::from_secs(3)).await;
    match recv.read_to_end(64 << 20).await {
        Err(quinn::ReadToEndError::Read(quinn::ReadError::Reset(code))) => {
            assert_eq!(code.into_inner(), H3_REQUEST_CANCELLED)
        }
        other => panic!("expected a reset, got {:?}", other.map(|b| b.len())),
    }
    shut_down(server).await;
}

#[tokio::test]
async fn an_idle_connection_is_closed_by_the_idle_timeout() {
    let certs = certs();
    let config = Config {
        idle_timeout: Duration::from_secs(1),
        ..Config::default()
    };
    let server = start_h3(1, config, &certs, app());
    let conn = quic_connect(server.addr(), &certs.2).await;
    // QUIC uses the smaller of the two sides' idle timeouts (RFC 9000 §10.1): the server's.
    assert_eq!(conn.closed().await, quinn::ConnectionError::TimedOut);
    shut_down(server).await;
}
