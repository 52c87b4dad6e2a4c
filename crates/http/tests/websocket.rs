//! WebSocket (RFC 6455) over real sockets, with raw bytes: the handshake and its refusals,
//! echo, fragments, the failures that close with 1002, 1007 and 1009, both close handshakes,
//! graceful shutdown (1001), many connections, and wss.

mod common;
mod h2common;

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::{normalize, start, start_with, HANG_GUARD};
use volt_http::{any, get, Config, Error, Message, Request, Response, Router, StatusCode};

const TEXT: u8 = 0x1;
const BINARY: u8 = 0x2;
const CONT: u8 = 0x0;
const CLOSE: u8 = 0x8;
const PING: u8 = 0x9;
const PONG: u8 = 0xA;

/// §1.3's example key.
const KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";

fn handshake(path: &str, extra: &str) -> String {
    format!(
        "GET {path} HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: {KEY}\r\nSec-WebSocket-Version: 13\r\n{extra}\r\n"
    )
}

/// `/echo` echoes every message; `/small` too, with a 1 KiB limit; `/close` closes with 4000
/// after the first message; `/chat` picks a subprotocol; `/fail` returns an error, `/panic`
/// panics.
fn app() -> Router {
    use common::ws_echo as echo;
    Router::new()
        .route(
            "/echo",
            any(|req: Request| async move { Ok::<_, Error>(req.websocket()?.on_upgrade(echo)) }),
        )
        .route(
            "/small",
            get(|req: Request| async move {
                Ok::<_, Error>(req.websocket()?.max_message_size(1024).on_upgrade(echo))
            }),
        )
        .route(
            "/close",
            get(|req: Request| async move {
                Ok::<_, Error>(req.websocket()?.on_upgrade(|mut ws| async move {
                    let first = ws.recv().await?;
                    assert_eq!(first, Some(Message::Text("bye?".into())));
                    ws.close(4000, "done").await
                }))
            }),
        )
        .route(
            "/chat",
            get(|req: Request| async move {
                let up = req.websocket()?.protocols(&["v2.chat", "v1.chat"]);
                Ok::<_, Error>(up.on_upgrade(|mut ws| async move {
                    let p = ws.protocol().unwrap_or("none").to_owned();
                    ws.send(p).await
                }))
            }),
        )
        .route(
            "/fail",
            get(|req: Request| async move {
                Ok::<_, Error>(
                    req.websocket()?.on_upgrade(|_ws| async move {
                        Err(io::Error::other("the session failed"))
                    }),
                )
            }),
        )
        .route("/hi", get(|_req| async { "hi" }))
        .route(
            "/later",
            get(|req: Request| async move {
                // Answered after a wait: the 101 leaves from the connection's slow path.
                volt_rt::time::sleep(Duration::from_millis(20)).await;
                Ok::<_, Error>(req.websocket()?.on_upgrade(echo))
            }),
        )
        .route(
            "/panic",
            get(|req: Request| async move {
                Ok::<_, Error>(req.websocket()?.on_upgrade(|mut ws| async move {
                    ws.recv().await?;
                    panic!("the session panics");
                }))
            }),
        )
        .route(
            "/plain101",
            get(|_req| async { Response::new(StatusCode::SWITCHING_PROTOCOLS) }),
        )
}

/// A tiny blocking WebSocket client: masks what it sends, reads frames unmasked.
struct Ws<S> {
    s: S,
    buf: Vec<u8>,
}

impl Ws<TcpStream> {
    fn connect(addr: std::net::SocketAddr) -> Ws<TcpStream> {
        let s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(HANG_GUARD)).unwrap();
        s.set_nodelay(true).unwrap();
        Ws { s, buf: Vec::new() }
    }
}

/// A client frame, masked with a fixed key.
fn frame(fin: bool, opcode: u8, payload: &[u8]) -> Vec<u8> {
    let key = [0x12, 0x34, 0x56, 0x78];
    let mut out = vec![(fin as u8) << 7 | opcode];
    match payload.len() {
        n @ 0..=125 => out.push(0x80 | n as u8),
        n @ 126..=65535 => {
            out.push(0x80 | 126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            out.push(0x80 | 127);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    out.extend_from_slice(&key);
    out.extend(payload.iter().enumerate().map(|(i, b)| b ^ key[i % 4]));
    out
}

impl<S: Read + Write> Ws<S> {
    fn send(&mut self, bytes: &[u8]) {
        self.s.write_all(bytes).unwrap();
        self.s.flush().unwrap();
    }

    fn fill(&mut self) -> usize {
        let mut chunk = [0u8; 16 * 1024];
        let n = self.s.read(&mut chunk).unwrap();
        self.buf.extend_from_slice(&chunk[..n]);
        n
    }

    /// The response head, normalized (`Date` replaced).
    fn head(&mut self) -> String {
        loop {
            if let Some(end) = common::find(&self.buf, b"\r\n\r\n") {
                let head: Vec<u8> = self.buf.drain(..end + 4).collect();
                return normalize(&head);
            }
            assert!(self.fill() > 0, "closed before the head");
        }
    }

    /// Sends the handshake for `path` and checks the 101.
    fn open(&mut self, path: &str) {
        self.send(handshake(path, "").as_bytes());
        assert!(self
            .head()
            .starts_with("HTTP/1.1 101 Switching Protocols\r\n"));
    }

    /// The next server frame: (fin, opcode, payload). Server frames must not be masked.
    fn frame(&mut self) -> (bool, u8, Vec<u8>) {
        loop {
            if self.buf.len() >= 2 {
                assert_eq!(self.buf[1] & 0x80, 0, "a server frame is masked");
                let (len, at) = match self.buf[1] & 0x7F {
                    126 if self.buf.len() >= 4 => {
                        (u16::from_be_bytes([self.buf[2], self.buf[3]]) as usize, 4)
                    }
                    127 if self.buf.len() >= 10 => {
                        let b: [u8; 8] = self.buf[2..10].try_into().unwrap();
                        (u64::from_be_bytes(b) as usize, 10)
                    }
                    126 | 127 => (usize::MAX, 0),
                    n => (n as usize, 2),
                };
                if len != usize::MAX && self.buf.len() >= at + len {
                    let b0 = self.buf[0];
                    let payload = self.buf[at..at + len].to_vec();
                    self.buf.drain(..at + len);
                    return (b0 & 0x80 != 0, b0 & 0x0F, payload);
                }
            }
            assert!(
                self.fill() > 0,
                "closed before a whole frame: {:?}",
                self.buf
            );
        }
    }

    /// The next frame must be a close with `code`; returns its reason.
    fn expect_close(&mut self, code: u16) -> String {
        let (fin, opcode, payload) = self.frame();
        assert!(fin);
        assert_eq!(opcode, CLOSE, "expected a close frame, got {payload:?}");
        assert_eq!(u16::from_be_bytes([payload[0], payload[1]]), code);
        String::from_utf8(payload[2..].to_vec()).unwrap()
    }

    /// The server closed the TCP connection, with nothing more sent.
    fn expect_eof(&mut self) {
        assert!(self.buf.is_empty(), "more bytes: {:?}", self.buf);
        let mut rest = Vec::new();
        match self.s.read_to_end(&mut rest) {
            Ok(_) => assert!(rest.is_empty(), "more bytes: {rest:?}"),
            Err(e) => assert!(common::is_reset(&e), "{e}"),
        }
    }
}

#[test]
fn handshake_answers_101_with_the_accept_of_the_rfc_example() {
    let server = start(app());
    let mut ws = Ws::connect(server.addr());
    ws.send(handshake("/echo", "").as_bytes());
    assert_eq!(
        ws.head(),
        "HTTP/1.1 101 Switching Protocols\r\nServer: volt\r\nDate: <date>\r\n\
         upgrade: websocket\r\nconnection: Upgrade\r\n\
         sec-websocket-accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n"
    );
    ws.send(&frame(true, TEXT, b"hi"));
    assert_eq!(ws.frame(), (true, TEXT, b"hi".to_vec()));
}

#[test]
fn bad_handshakes_are_refused() {
    let server = start(app());
    let ok =
        "Host: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n";
    let cases = [
        // No Upgrade, no Connection, wrong tokens.
        format!("GET /echo HTTP/1.1\r\nHost: t\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {KEY}\r\nSec-WebSocket-Version: 13\r\n\r\n"),
        format!("GET /echo HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nSec-WebSocket-Key: {KEY}\r\nSec-WebSocket-Version: 13\r\n\r\n"),
        format!("GET /echo HTTP/1.1\r\nHost: t\r\nUpgrade: h2c\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {KEY}\r\nSec-WebSocket-Version: 13\r\n\r\n"),
        // Key missing, not base64, not 16 bytes, twice.
        format!("GET /echo HTTP/1.1\r\n{ok}\r\n"),
        format!("GET /echo HTTP/1.1\r\n{ok}Sec-WebSocket-Key: not*base64*at*all*xxxx\r\n\r\n"),
        format!("GET /echo HTTP/1.1\r\n{ok}Sec-WebSocket-Key: AAAAAAAAAAAAAAAAAAAAAAAAAAAA\r\n\r\n"),
        format!("GET /echo HTTP/1.1\r\n{ok}Sec-WebSocket-Key: {KEY}\r\nSec-WebSocket-Key: {KEY}\r\n\r\n"),
        // Not GET, HTTP/1.0, a body, no version.
        format!("POST /echo HTTP/1.1\r\n{ok}Sec-WebSocket-Key: {KEY}\r\n\r\n"),
        format!("GET /echo HTTP/1.0\r\n{ok}Sec-WebSocket-Key: {KEY}\r\n\r\n"),
        format!("GET /echo HTTP/1.1\r\n{ok}Sec-WebSocket-Key: {KEY}\r\nContent-Length: 2\r\n\r\nxx"),
        format!("GET /echo HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {KEY}\r\n\r\n"),
    ];
    for request in cases {
        let mut c = server.connect();
        c.send(request.as_bytes());
        let response = c.read_response();
        assert_eq!(response.status, 400, "{request}: {}", response.text());
        assert!(
            response.text().contains("bad WebSocket handshake"),
            "{}",
            response.text()
        );
    }
    // Another version: 426, naming the one supported (§4.4).
    let mut c = server.connect();
    c.send(
        handshake("/echo", "")
            .replace("Version: 13", "Version: 8")
            .as_bytes(),
    );
    let response = c.read_response().text();
    assert!(
        response.starts_with("HTTP/1.1 426 Upgrade Required\r\n"),
        "{response}"
    );
    assert!(
        response.contains("\r\nsec-websocket-version: 13\r\n"),
        "{response}"
    );
    // Tokens in lists and in any case are fine.
    let mut ws = Ws::connect(server.addr());
    let request = handshake("/echo", "")
        .replace("Upgrade: websocket", "Upgrade: foo/1, WebSocket")
        .replace("Connection: Upgrade", "Connection: keep-alive, UPGRADE");
    ws.send(request.as_bytes());
    assert!(ws.head().starts_with("HTTP/1.1 101 "));
    // A plain handler's 101 is still a handler bug: 500.
    let mut c = server.connect();
    c.send(b"GET /plain101 HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(c.read_response().status, 500);
}

#[test]
fn subprotocol_is_the_servers_first_choice_the_client_offered() {
    let server = start(app());
    let mut ws = Ws::connect(server.addr());
    ws.send(handshake("/chat", "Sec-WebSocket-Protocol: v1.chat, v2.chat\r\n").as_bytes());
    let head = ws.head();
    assert!(
        head.contains("\r\nsec-websocket-protocol: v2.chat\r\n"),
        "{head}"
    );
    assert_eq!(ws.frame(), (true, TEXT, b"v2.chat".to_vec()));
    ws.expect_close(1000);
    // None offered: no header, no protocol.
    let mut ws = Ws::connect(server.addr());
    ws.send(handshake("/chat", "").as_bytes());
    assert!(!ws.head().contains("sec-websocket-protocol"));
    assert_eq!(ws.frame(), (true, TEXT, b"none".to_vec()));
}

#[test]
fn echoes_text_and_binary_of_every_length_form() {
    let server = start(app());
    let mut ws = Ws::connect(server.addr());
    ws.open("/echo");
    ws.send(&frame(true, TEXT, "héllo".as_bytes()));
    assert_eq!(ws.frame(), (true, TEXT, "héllo".as_bytes().to_vec()));
    for len in [0, 125, 126, 65535, 65536, 200_000] {
        let payload: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
        ws.send(&frame(true, BINARY, &payload));
        assert_eq!(ws.frame(), (true, BINARY, payload), "length {len}");
    }
    // The client's close, answered, then the TCP close.
    ws.send(&frame(true, CLOSE, b"\x03\xe8bye"));
    assert_eq!(ws.expect_close(1000), "");
    ws.expect_eof();
}

#[test]
fn fragments_reassemble_and_pings_between_them_are_answered() {
    let server = start(app());
    let mut ws = Ws::connect(server.addr());
    ws.open("/echo");
    let mut bytes = frame(false, TEXT, b"Hel");
    bytes.extend(frame(true, PING, b"are you there"));
    bytes.extend(frame(false, CONT, b"lo, w"));
    bytes.extend(frame(true, PONG, b"unasked"));
    bytes.extend(frame(true, CONT, "örld".as_bytes()));
    ws.send(&bytes);
    assert_eq!(ws.frame(), (true, PONG, b"are you there".to_vec()));
    assert_eq!(ws.frame(), (true, TEXT, "Hello, wörld".as_bytes().to_vec()));
}

#[test]
fn frames_in_the_handshakes_packet_are_not_lost() {
    let server = start(app());
    let mut ws = Ws::connect(server.addr());
    let mut bytes = handshake("/echo", "").into_bytes();
    bytes.extend(frame(true, TEXT, b"first"));
    bytes.extend(frame(true, BINARY, b"second"));
    ws.send(&bytes);
    assert!(ws.head().starts_with("HTTP/1.1 101 "));
    assert_eq!(ws.frame(), (true, TEXT, b"first".to_vec()));
    assert_eq!(ws.frame(), (true, BINARY, b"second".to_vec()));
}

#[test]
fn upgrade_after_a_handler_wait_and_after_pipelined_requests() {
    let server = start(app());
    let mut ws = Ws::connect(server.addr());
    let mut bytes = handshake("/later", "").into_bytes();
    bytes.extend(frame(true, TEXT, b"early"));
    ws.send(&bytes);
    assert!(ws.head().starts_with("HTTP/1.1 101 "));
    assert_eq!(ws.frame(), (true, TEXT, b"early".to_vec()));
    // A plain request, the handshake and a frame in one packet: answered in order.
    let mut ws = Ws::connect(server.addr());
    let mut bytes = b"GET /hi HTTP/1.1\r\nHost: t\r\n\r\n".to_vec();
    bytes.extend(handshake("/echo", "").into_bytes());
    bytes.extend(frame(true, BINARY, b"after"));
    ws.send(&bytes);
    assert!(ws.head().starts_with("HTTP/1.1 200 OK\r\n"));
    while ws.buf.len() < 2 {
        assert!(ws.fill() > 0);
    }
    assert_eq!(ws.buf.drain(..2).collect::<Vec<u8>>(), b"hi");
    assert!(ws.head().starts_with("HTTP/1.1 101 "));
    assert_eq!(ws.frame(), (true, BINARY, b"after".to_vec()));
}

/// Sends `bytes` on a fresh `/path` WebSocket; expects a close with `code`, then the end.
fn fails_with(path: &str, bytes: &[u8], code: u16) {
    let server = start(app());
    let mut ws = Ws::connect(server.addr());
    ws.open(path);
    ws.send(bytes);
    ws.expect_close(code);
    ws.expect_eof();
}

#[test]
fn unmasked_client_frame_closes_with_1002() {
    fails_with("/echo", &[0x81, 0x02, b'h', b'i'], 1002);
}

#[test]
fn rsv_bits_close_with_1002() {
    let mut f = frame(true, TEXT, b"hi");
    f[0] |= 0x40; // RSV1, as permessage-deflate would set it
    fails_with("/echo", &f, 1002);
}

#[test]
fn reserved_opcode_and_long_ping_close_with_1002() {
    fails_with("/echo", &frame(true, 0x3, b""), 1002);
    fails_with("/echo", &frame(true, PING, &[0; 126]), 1002);
    fails_with("/echo", &frame(true, CLOSE, b"\x03\xed"), 1002); // 1005 is never sent
}

#[test]
fn message_over_the_limit_closes_with_1009() {
    // Refused at the frame's head: the rest of the 2 MB is discarded, not answered with RST.
    fails_with("/small", &frame(true, BINARY, &vec![7; 2 << 20]), 1009);
    let mut bytes = frame(false, TEXT, &[b'a'; 600]);
    bytes.extend(frame(true, CONT, &[b'a'; 600]));
    fails_with("/small", &bytes, 1009);
}

#[test]
fn invalid_utf8_closes_with_1007() {
    fails_with("/echo", &frame(true, TEXT, b"ok \xc3\x28"), 1007);
    // Found in the first fragment, before the message is whole.
    fails_with("/echo", &frame(false, TEXT, b"\xff"), 1007);
    // Found in the first bytes of a 100 KB frame, the rest of which is never sent.
    let mut big = vec![b'a'; 100_000];
    big[10] = 0xff;
    fails_with("/echo", &frame(true, TEXT, &big)[..4096], 1007);
}

#[test]
fn server_initiated_close_waits_for_the_clients_close() {
    let server = start(app());
    let mut ws = Ws::connect(server.addr());
    ws.open("/close");
    ws.send(&frame(true, TEXT, b"bye?"));
    assert_eq!(ws.expect_close(4000), "done");
    // The server waits for the client's close before closing TCP.
    ws.send(&frame(true, CLOSE, b"\x0f\xa0"));
    ws.expect_eof();
    // A session that fails closes with 1011.
    let mut ws = Ws::connect(server.addr());
    ws.open("/fail");
    ws.expect_close(1011);
    ws.send(&frame(true, CLOSE, b""));
    ws.expect_eof();
    // So does one that panics; the worker serves on.
    let mut ws = Ws::connect(server.addr());
    ws.open("/panic");
    ws.send(&frame(true, TEXT, b"boom"));
    ws.expect_close(1011);
    ws.send(&frame(true, CLOSE, b""));
    ws.expect_eof();
    assert!(server.get("/plain101").starts_with("HTTP/1.1 500"));
}

#[test]
fn many_concurrent_websockets() {
    let server = start_with(2, Config::default(), app());
    let mut all: Vec<_> = (0..200).map(|_| Ws::connect(server.addr())).collect();
    for ws in &mut all {
        ws.send(handshake("/echo", "").as_bytes());
    }
    for ws in &mut all {
        assert!(ws.head().starts_with("HTTP/1.1 101 "));
    }
    for round in 0..3 {
        for (i, ws) in all.iter_mut().enumerate() {
            ws.send(&frame(true, TEXT, format!("{i}/{round}").as_bytes()));
        }
        for (i, ws) in all.iter_mut().enumerate() {
            assert_eq!(
                ws.frame(),
                (true, TEXT, format!("{i}/{round}").into_bytes())
            );
        }
    }
    // Plain HTTP still served beside them.
    assert!(server.get("/plain101").starts_with("HTTP/1.1 500"));
}

#[test]
fn graceful_shutdown_closes_websockets_with_1001() {
    let server = start(app());
    let mut ws = Ws::connect(server.addr());
    ws.open("/echo");
    ws.send(&frame(true, TEXT, b"x"));
    assert_eq!(ws.frame(), (true, TEXT, b"x".to_vec()));
    let handle = server.handle();
    handle.shutdown();
    assert_eq!(ws.expect_close(1001), "server shutting down");
    ws.send(&frame(true, CLOSE, b"\x03\xe9"));
    ws.expect_eof();
    server.join().unwrap();
}

#[test]
fn idle_timeout_closes_with_1001() {
    let app = Router::new().route(
        "/",
        get(|req: Request| async move {
            Ok::<_, Error>(
                req.websocket()?
                    .idle_timeout(Duration::from_millis(300))
                    .on_upgrade(|mut ws| async move {
                        let e = ws.recv().await.unwrap_err();
                        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
                        Ok(())
                    }),
            )
        }),
    );
    let server = start(app);
    let mut ws = Ws::connect(server.addr());
    ws.open("/");
    assert_eq!(ws.expect_close(1001), "idle timeout");
}

#[test]
fn wss_echoes_over_tls() {
    use volt_http::{CertKey, TlsConfig};
    let (cert, key, der) = h2common::cert_for(&["a.test"]);
    let tls = TlsConfig::new(CertKey::from_pem(cert.as_bytes(), key.as_bytes()).unwrap())
        .build()
        .unwrap();
    let server = common::start_tls(1, Config::default(), tls, app());
    let config = h2common::client_config(&[&der], &[b"http/1.1"]);
    let s = h2common::tls_connect(server.addr(), config, "a.test").unwrap();
    let mut ws = Ws { s, buf: Vec::new() };
    ws.open("/echo");
    ws.send(&frame(true, TEXT, b"secure"));
    assert_eq!(ws.frame(), (true, TEXT, b"secure".to_vec()));
    ws.send(&frame(true, CLOSE, b"\x03\xe8"));
    ws.expect_close(1000);
    // The server ends the TLS session with close_notify: a clean end, not a truncation.
    let mut rest = Vec::new();
    ws.s.read_to_end(&mut rest).expect("close_notify");
    assert!(rest.is_empty());
}
