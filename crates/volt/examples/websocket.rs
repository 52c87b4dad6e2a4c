//! A WebSocket echo server: every text or binary message comes back as it was sent.
//!
//! `cargo run --release -p volt --example websocket` then, with any WebSocket client,
//! `websocat ws://127.0.0.1:8080/echo` (or `wss://` with `-- --tls-cert FILE --tls-key FILE`).
//! `/chat` shows the options: a subprotocol, a message size limit, an idle timeout and
//! permessage-deflate (which browsers offer).

use std::time::Duration;

use volt::{get, DeflateConfig, Error, Message, Request, Response, Router, Server, WebSocket};

#[path = "common/tls.rs"]
mod tls;

async fn echo(req: Request) -> Result<Response, Error> {
    Ok(req.websocket()?.on_upgrade(|mut ws| async move {
        while let Some(msg) = ws.recv().await? {
            ws.send(msg).await?;
        }
        Ok(())
    }))
}

async fn chat(req: Request) -> Result<Response, Error> {
    let upgrade = req
        .websocket()?
        .protocols(&["echo.v1"])
        .max_message_size(64 * 1024)
        .idle_timeout(Duration::from_secs(60))
        .deflate(Some(DeflateConfig::new()));
    Ok(upgrade.on_upgrade(session))
}

async fn session(mut ws: WebSocket) -> std::io::Result<()> {
    let protocol = ws.protocol().unwrap_or("none").to_owned();
    ws.send(format!("hello; subprotocol {protocol}")).await?;
    while let Some(msg) = ws.recv().await? {
        if msg == Message::Text("bye".into()) {
            return ws.close(1000, "bye").await;
        }
        ws.send(msg).await?;
    }
    Ok(())
}

fn main() -> std::io::Result<()> {
    let app = Router::new()
        .route("/echo", get(echo))
        .route("/chat", get(chat));
    let (addr, tls) = tls::TlsFiles::parse_args("websocket");
    let (server, scheme) = tls.apply(Server::bind(addr.as_str())?)?;
    let ws = if scheme == "https" { "wss" } else { "ws" };
    println!(
        "echo on {ws}://{}/echo (I/O: {})",
        server.local_addr(),
        volt::rt::IoBackend::auto()?
    );
    server.serve(app)
}
