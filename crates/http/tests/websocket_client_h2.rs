//! volt's WebSocket client over HTTP/2 (RFC 8441, `WebSocketBuilder::http2`) against volt's
//! server: sessions on streams of one connection, h2c and TLS, what the handshake agrees on,
//! and the refusals.

mod common;
mod h2common;

use std::io;
use std::time::Duration;

use bytes::Bytes;
use volt_http::{get, Client, Error, Message, Request, Router, StatusCode, Version};

/// `/echo` echoes; `/hello` sends the request's HTTP version and `:protocol` first, then
/// echoes; `/chat` picks a subprotocol and sends it.
fn app() -> Router {
    use common::ws_echo as echo;
    Router::new()
        .route(
            "/echo",
            get(|req: Request| async move { Ok::<_, Error>(req.websocket()?.on_upgrade(echo)) }),
        )
        .route(
            "/hello",
            get(|req: Request| async move {
                let hello = format!("{:?} {}", req.version(), req.protocol().unwrap_or("-"));
                Ok::<_, Error>(req.websocket()?.on_upgrade(|mut ws| async move {
                    ws.send(hello).await?;
                    echo(ws).await
                }))
            }),
        )
        .route(
            "/chat",
            get(|req: Request| async move {
                let up = req.websocket()?.protocols(&["v2.chat", "v1.chat"]);
                Ok::<_, Error>(up.on_upgrade(|mut ws| async move {
                    let p = ws.protocol().unwrap_or("none").to_owned();
                    ws.send(p).await?;
                    echo(ws).await
                }))
            }),
        )
        .route("/plain", get(|_req| async { "plain" }))
}

fn h2c_client() -> Client {
    Client::builder()
        .http2_prior_knowledge()
        .timeout(Duration::from_secs(10))
        .build()
}

async fn text(ws: &mut volt_http::WebSocket) -> String {
    match ws.recv().await.unwrap() {
        Some(Message::Text(text)) => text,
        other => panic!("expected text, got {other:?}"),
    }
}

#[test]
fn h2c_sessions_echo_and_close_on_streams_of_one_connection() {
    let server = common::start(app());
    let addr = server.addr();
    volt_rt::block_on(async move {
        let client = h2c_client();
        let url = |path: &str| format!("ws://{addr}{path}");
        let mut first = client
            .websocket(&url("/hello"))
            .http2()
            .connect()
            .await
            .unwrap();
        assert_eq!(text(&mut first).await, "HTTP/2.0 websocket");
        // A second session and a plain request share the connection with the first.
        let mut second = client
            .websocket(&url("/echo"))
            .http2()
            .connect()
            .await
            .unwrap();
        let plain = client
            .get(&format!("http://{addr}/plain"))
            .send()
            .await
            .unwrap();
        assert_eq!(plain.version(), Version::HTTP_2);
        assert_eq!(plain.text().await.unwrap(), "plain");
        first.send("one").await.unwrap();
        second
            .send(Bytes::from_static(b"\x00\x01two"))
            .await
            .unwrap();
        assert_eq!(text(&mut first).await, "one");
        match second.recv().await.unwrap() {
            Some(Message::Binary(b)) => assert_eq!(&b[..], b"\x00\x01two"),
            other => panic!("{other:?}"),
        }
        // A message larger than a stream's first window (64 KiB) goes through whole.
        let big = "x".repeat(300_000);
        second.send(big.as_str()).await.unwrap();
        assert_eq!(text(&mut second).await.len(), big.len());
        first.close(1000, "bye").await.unwrap();
        second.close(1000, "bye").await.unwrap();
    });
}

#[test]
fn a_subprotocol_is_agreed_as_on_http1() {
    let server = common::start(app());
    let addr = server.addr();
    volt_rt::block_on(async move {
        let mut ws = h2c_client()
            .websocket(&format!("ws://{addr}/chat"))
            .protocols(&["v1.chat"])
            .http2()
            .connect()
            .await
            .unwrap();
        assert_eq!(ws.protocol(), Some("v1.chat"));
        assert_eq!(text(&mut ws).await, "v1.chat");
        ws.close(1000, "").await.unwrap();
    });
}

#[test]
fn wss_over_http2_chosen_by_alpn() {
    let (server, roots) = h2common::start_tls_localhost(app());
    let port = server.addr().port();
    volt_rt::block_on(async move {
        let client = Client::builder().tls_roots(roots).build();
        let url = format!("wss://localhost:{port}/hello");
        let mut ws = client.websocket(&url).http2().connect().await.unwrap();
        assert_eq!(text(&mut ws).await, "HTTP/2.0 websocket");
        ws.send("over tls").await.unwrap();
        assert_eq!(text(&mut ws).await, "over tls");
        ws.close(1000, "").await.unwrap();
    });
}

#[test]
fn refusals_are_errors_naming_them() {
    let server = common::start(app());
    let addr = server.addr();
    volt_rt::block_on(async move {
        // Without prior knowledge a ws: URL gets HTTP/1.1.
        let plain = Client::new();
        let err = plain
            .websocket(&format!("ws://{addr}/echo"))
            .http2()
            .connect()
            .await
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData, "{err}");
        assert!(err.to_string().contains("did not choose HTTP/2"), "{err}");
        // A path whose handler is no WebSocket: the server answers 501, not 200.
        let err = h2c_client()
            .websocket(&format!("ws://{addr}/plain"))
            .http2()
            .connect()
            .await
            .unwrap_err();
        let refusal = err
            .get_ref()
            .and_then(|e| e.downcast_ref::<volt_http::HandshakeError>())
            .unwrap_or_else(|| panic!("{err}"));
        assert_eq!(refusal.status(), StatusCode::NOT_IMPLEMENTED);
    });
}
