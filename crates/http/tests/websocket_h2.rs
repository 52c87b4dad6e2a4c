//! WebSocket over HTTP/2 (RFC 8441), through the `h2` crate's client: the extended CONNECT
//! handshake (200, subprotocols, permessage-deflate, 400 and 426), messages as exact frame
//! bytes in the stream's DATA both ways, the close handshake from either side (END_STREAM
//! after it), a client reset, flow control holding a slow reader's and a slow session's data
//! back, many WebSockets and plain requests on one connection, panics, graceful shutdown
//! (1001), over h2c and TLS; raw frames for the SETTINGS and `:protocol` on a GET.

mod common;
mod h2common;
mod wscommon;

use std::future::poll_fn;
use std::io::{self, Write};
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use h2::client::SendRequest;
use h2common::*;
use volt_http::{CertKey, Config, TlsConfig};
use volt_proto::ws::{encode_frame, Decoder};
use volt_proto::ws::{Incoming, Opcode, Role};

use common::{start, start_with, TestServer, HANG_GUARD};
use wscommon::{app, pattern, sum, Seen, Tunnel, MASK, V13};

/// Big enough to outlast the client's window (64 KiB).
const BIG: usize = 1 << 20;

/// A WebSocket's HTTP/2 stream, as the client sees it: the server's bytes in as they come
/// (window given back as they are read).
struct H2Tunnel {
    send: h2::SendStream<Bytes>,
    recv: h2::RecvStream,
}

impl Tunnel for H2Tunnel {
    async fn send(&mut self, bytes: Vec<u8>) {
        self.send.send_data(bytes.into(), false).unwrap();
    }

    async fn recv(&mut self) -> Option<Bytes> {
        let chunk = self.recv.data().await?.expect("stream data");
        let _ = self.recv.flow_control().release_capacity(chunk.len());
        Some(chunk)
    }

    fn end(&mut self) {
        self.send.send_data(Bytes::new(), true).unwrap();
    }
}

type Ws = wscommon::Ws<H2Tunnel>;

/// Opens an h2c connection whose server said it takes extended CONNECT (its SETTINGS are in
/// before the first response).
async fn connect(addr: std::net::SocketAddr) -> SendRequest<Bytes> {
    let mut client = connect_h2c(addr).await;
    assert_eq!(
        send(&mut client, get_req("/"), Bytes::new()).await.text(),
        "HTTP/2.0"
    );
    assert!(client.is_extended_connect_protocol_enabled());
    client
}

fn get_req(path: &str) -> http::Request<()> {
    h2common::get(path)
}

/// Sends `path`'s extended CONNECT with `:protocol websocket` and `headers`.
async fn open(
    client: &SendRequest<Bytes>,
    path: &str,
    headers: &[(&str, &str)],
) -> (http::response::Parts, Ws) {
    let mut req = http::Request::builder()
        .method(http::Method::CONNECT)
        .uri(format!("http://t{path}"));
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    let mut req = req.body(()).unwrap();
    req.extensions_mut()
        .insert(h2::ext::Protocol::from_static("websocket"));
    let mut client = client.clone().ready().await.unwrap();
    let (response, send) = client.send_request(req, false).unwrap();
    let (parts, recv) = response.await.expect("a response").into_parts();
    (parts, Ws::new(H2Tunnel { send, recv }))
}

async fn open_ok(client: &SendRequest<Bytes>, path: &str) -> Ws {
    let (head, ws) = open(client, path, &[V13]).await;
    assert_eq!(head.status, 200);
    ws
}

/// `f` against a fresh server, on one h2c connection.
fn with_server(f: impl AsyncFnOnce(&TestServer, SendRequest<Bytes>, Arc<Seen>)) {
    let seen = Arc::new(Seen::default());
    let server = start(app(seen.clone(), BIG));
    volt_rt::block_on(async {
        let client = connect(server.addr()).await;
        f(&server, client, seen).await;
    });
    server.shutdown();
}

#[test]
fn handshake_answers_200_with_the_chosen_subprotocol_and_no_http1_fields() {
    with_server(async |_, client, _| {
        let offer = ("sec-websocket-protocol", "superchat, chat");
        let key = ("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==");
        let (head, _ws) = open(&client, "/echo", &[V13, offer, key]).await;
        assert_eq!(head.status, 200);
        let mut names: Vec<&str> = head.headers.keys().map(|n| n.as_str()).collect();
        names.sort();
        // No Sec-WebSocket-Accept (RFC 8441 §5: the key is not processed), no Upgrade or
        // Connection, no content-length (RFC 9110 §9.3.6).
        assert_eq!(names, ["date", "sec-websocket-protocol", "server"]);
        // The server's first choice among those offered.
        assert_eq!(head.headers["sec-websocket-protocol"], "chat");
    });
}

#[test]
fn bad_handshakes_answer_400_and_426() {
    with_server(async |_, client, _| {
        let (head, _) = open(&client, "/echo", &[]).await;
        assert_eq!(head.status, 400, "no version");
        let (head, _) = open(&client, "/echo", &[("sec-websocket-version", "8")]).await;
        assert_eq!(head.status, 426);
        assert_eq!(head.headers["sec-websocket-version"], "13");
        // A GET route that does not take WebSockets: no 200, which would open one.
        let (head, _) = open(&client, "/page", &[V13]).await;
        assert_eq!(head.status, 501);
        // A route without GET or CONNECT.
        let (head, _) = open(&client, "/post", &[V13]).await;
        assert_eq!(head.status, 405);
        // The same route still serves a plain GET.
        let page = send(&mut client.clone(), get_req("/page"), Bytes::new()).await;
        assert_eq!(
            (page.status, page.text().as_str()),
            (200, "not a WebSocket")
        );
    });
}

#[test]
fn text_binary_fragments_and_ping_echo_as_exact_frames() {
    with_server(async |_, client, _| {
        let mut ws = open_ok(&client, "/echo").await;
        ws.echoes_exact_frames().await;
    });
}

#[test]
fn close_from_the_client_is_echoed_then_the_stream_ends() {
    with_server(async |_, client, _| {
        let mut ws = open_ok(&client, "/echo").await;
        ws.frame(true, Opcode::Close, b"\x03\xe8bye").await;
        assert_eq!(ws.bytes(4).await.unwrap(), b"\x88\x02\x03\xe8");
        assert!(ws.ended().await, "END_STREAM after the close");
        ws.tunnel.end();
        // The connection goes on.
        let mut ws = open_ok(&client, "/echo").await;
        ws.echoes("again").await;
    });
}

#[test]
fn close_from_the_server_waits_for_the_clients_then_ends_the_stream() {
    with_server(async |_, client, _| {
        open_ok(&client, "/close").await.server_closes_first().await;
    });
}

#[test]
fn permessage_deflate_both_ways() {
    with_server(async |_, client, _| {
        let offer = ("sec-websocket-extensions", "permessage-deflate");
        let (head, mut ws) = open(&client, "/deflate", &[V13, offer]).await;
        assert_eq!(head.status, 200);
        assert_eq!(
            head.headers["sec-websocket-extensions"],
            "permessage-deflate"
        );
        ws.deflates_both_ways().await;
    });
}

#[test]
fn a_client_reset_ends_the_session_with_an_error() {
    with_server(async |_, client, seen| {
        let mut ws = open_ok(&client, "/record").await;
        assert_eq!(ws.bytes(7).await.unwrap(), b"\x81\x05ready");
        ws.tunnel.send.send_reset(h2::Reason::CANCEL);
        let deadline = Instant::now() + HANG_GUARD;
        while seen.reset.lock().unwrap().is_none() {
            assert!(
                Instant::now() < deadline,
                "the session never learned of the reset"
            );
            volt_rt::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(
            *seen.reset.lock().unwrap(),
            Some(io::ErrorKind::ConnectionReset)
        );
        // The connection serves on.
        let mut ws = open_ok(&client, "/echo").await;
        ws.echoes("x").await;
    });
}

/// A session that does not read holds the client back by flow control: the server takes no
/// more than the stream's window (256 KiB by default) of a 4 MiB message until it reads.
#[test]
fn a_slow_reader_holds_the_client_back() {
    with_server(async |_, client, seen| {
        let mut ws = open_ok(&client, "/slow-reader").await;
        let big = pattern(4 << 20);
        let mut frame = Vec::new();
        encode_frame(&mut frame, true, Opcode::Binary, &big, Some(MASK));
        let mut frame = Bytes::from(frame);
        // Send what the window takes; then nothing more moves while the session sleeps.
        let mut sent = 0;
        let stalled_at = loop {
            ws.tunnel.send.reserve_capacity(frame.len());
            let wait = volt_rt::time::timeout(
                Duration::from_millis(300),
                poll_fn(|cx| ws.tunnel.send.poll_capacity(cx)),
            );
            match wait.await {
                Ok(Some(Ok(n))) => {
                    let part = frame.split_to(n.min(frame.len()));
                    sent += part.len();
                    ws.tunnel.send.send_data(part, false).unwrap();
                }
                Ok(other) => panic!("capacity: {other:?}"),
                Err(_) => break sent,
            }
        };
        assert!(stalled_at <= 256 * 1024, "{stalled_at} bytes taken unread");
        assert!(stalled_at > 0);
        seen.read_now.store(true, Ordering::Release);
        while !frame.is_empty() {
            ws.tunnel.send.reserve_capacity(frame.len());
            let n = poll_fn(|cx| ws.tunnel.send.poll_capacity(cx))
                .await
                .unwrap()
                .unwrap();
            ws.tunnel
                .send
                .send_data(frame.split_to(n.min(frame.len())), false)
                .unwrap();
        }
        let answer = format!("{} {}", big.len(), sum(&big));
        let mut decoder = Decoder::new(Role::Client, 1 << 20);
        assert_eq!(ws.next(&mut decoder).await, Incoming::Text(answer.into()));
    });
}

/// A client that does not read holds the session's send back: the server sends no more than
/// the client's window, and `send` returns once the client read the message.
#[test]
fn a_slow_client_holds_the_sessions_send_back() {
    with_server(async |_, client, seen| {
        let mut ws = open_ok(&client, "/big").await;
        volt_rt::time::sleep(Duration::from_millis(300)).await;
        assert!(
            !seen.sent_big.load(Ordering::Acquire),
            "1 MiB sent into a 64 KiB window"
        );
        let head = ws.bytes(10).await.unwrap();
        assert_eq!(head, [0x82, 127, 0, 0, 0, 0, 0, 0x10, 0, 0]);
        assert_eq!(ws.bytes(1 << 20).await.unwrap(), pattern(BIG));
        let deadline = Instant::now() + HANG_GUARD;
        while !seen.sent_big.load(Ordering::Acquire) {
            assert!(Instant::now() < deadline);
            volt_rt::time::sleep(Duration::from_millis(5)).await;
        }
    });
}

/// Eight WebSockets at once on one connection, their messages interleaved, and plain
/// requests between them.
#[test]
fn many_websockets_and_requests_share_a_connection() {
    with_server(async |_, client, seen| {
        let mut sockets = Vec::new();
        for _ in 0..8 {
            sockets.push(open_ok(&client, "/echo").await);
        }
        assert_eq!(seen.sessions.load(Ordering::Relaxed), 8);
        for round in 0..3 {
            for (i, ws) in sockets.iter_mut().enumerate() {
                ws.frame(true, Opcode::Text, format!("{i}:{round}").as_bytes())
                    .await;
            }
            let page = send(&mut client.clone(), get_req("/page"), Bytes::new()).await;
            assert_eq!(page.text(), "not a WebSocket");
            for (i, ws) in sockets.iter_mut().enumerate() {
                let text = format!("{i}:{round}");
                let mut expected = vec![0x81, text.len() as u8];
                expected.extend(text.as_bytes());
                assert_eq!(ws.bytes(expected.len()).await.unwrap(), expected, "{text}");
            }
        }
        for ws in &mut sockets {
            ws.closes(1000).await;
        }
    });
}

#[test]
fn panics_stay_on_their_stream() {
    with_server(async |_, client, _| {
        let mut echo = open_ok(&client, "/echo").await;
        let (head, _) = open(&client, "/handler-panics", &[V13]).await;
        assert_eq!(head.status, 500);
        let mut ws = open_ok(&client, "/session-panics").await;
        ws.session_panics_with_1011().await;
        echo.echoes("alive").await;
    });
}

#[test]
fn graceful_shutdown_closes_websockets_with_1001() {
    let server = start_with(1, Config::default(), app(Arc::default(), BIG));
    volt_rt::block_on(async {
        let client = connect(server.addr()).await;
        let mut ws = open_ok(&client, "/echo").await;
        ws.echoes("before").await;
        server.handle().shutdown();
        ws.shutdown_closes_with_1001().await;
    });
    server.join().expect("serve returned Ok");
}

#[test]
fn websocket_over_tls_with_alpn_h2() {
    let (cert, key, der) = cert_for(&["a.test"]);
    let tls = TlsConfig::new(CertKey::from_pem(cert.as_bytes(), key.as_bytes()).unwrap())
        .build()
        .unwrap();
    let server = common::start_tls(1, Config::default(), tls, app(Arc::default(), BIG));
    let addr = server.addr();
    volt_rt::block_on(async move {
        let tcp = volt_rt::net::TcpStream::connect(addr).await.unwrap();
        let name = rustls_pki_types::ServerName::try_from("a.test").unwrap();
        let config = client_config(&[&der], &[b"h2"]);
        let tls = tokio_rustls::TlsConnector::from(config)
            .connect(name, tcp)
            .await
            .unwrap();
        let (mut client, conn) = h2::client::handshake(tls).await.unwrap();
        volt_rt::spawn(async move {
            let _ = conn.await;
        });
        let req = http::Request::get("https://a.test/").body(()).unwrap();
        assert_eq!(
            send(&mut client, req, Bytes::new()).await.text(),
            "HTTP/2.0"
        );
        assert!(client.is_extended_connect_protocol_enabled());
        let mut req = http::Request::builder()
            .method(http::Method::CONNECT)
            .uri("https://a.test/echo")
            .header("sec-websocket-version", "13")
            .body(())
            .unwrap();
        req.extensions_mut()
            .insert(h2::ext::Protocol::from_static("websocket"));
        let (response, send) = client.send_request(req, false).unwrap();
        let (parts, recv) = response.await.unwrap().into_parts();
        assert_eq!(parts.status, 200);
        let mut ws = Ws::new(H2Tunnel { send, recv });
        ws.echoes("secret").await;
        ws.closes(1000).await;
    });
    server.shutdown();
}

// ---- raw frames ----

/// The server's SETTINGS, as sent, say it takes extended CONNECT (RFC 8441 §3); a `:protocol`
/// on a GET is a stream error (PROTOCOL_ERROR) and the connection goes on.
#[test]
fn settings_and_a_protocol_on_get_as_raw_frames() {
    let server = start(app(Arc::default(), BIG));
    let mut tcp = TcpStream::connect(server.addr()).unwrap();
    tcp.set_read_timeout(Some(HANG_GUARD)).unwrap();
    let mut hello = client_start();
    // GET /echo with `:protocol websocket` (literal name), stream 1.
    let mut block = block_for(0x82, b"/echo");
    block.extend([0x00, 9]);
    block.extend(b":protocol");
    block.extend([9]);
    block.extend(b"websocket");
    hello.extend(frame(HEADERS, END_HEADERS | END_STREAM, 1, &block));
    hello.extend(frame(
        HEADERS,
        END_HEADERS | END_STREAM,
        3,
        &request_block(false),
    ));
    tcp.write_all(&hello).unwrap();
    let mut buf = Vec::new();
    let settings = next_frame(&mut tcp, &mut buf);
    assert_eq!((settings.0, settings.1, settings.2), (SETTINGS, 0, 0));
    let pairs: Vec<&[u8]> = settings.3.chunks(6).collect();
    assert!(pairs.contains(&&[0, 8, 0, 0, 0, 1][..]), "{pairs:?}");
    let mut rst = None;
    let mut answered = false;
    while rst.is_none() || !answered {
        let f = next_frame(&mut tcp, &mut buf);
        match (f.0, f.2) {
            (RST_STREAM, 1) => rst = Some(f.3),
            (HEADERS, 1) => panic!("a :protocol on GET was answered"),
            (DATA, 3) if f.1 & END_STREAM != 0 => answered = true,
            _ => {}
        }
    }
    assert_eq!(rst.unwrap(), [0, 0, 0, 1], "PROTOCOL_ERROR");
}

/// A session that fails without ending its stream (here its send times out: the client does
/// not read) resets the stream with CANCEL (RFC 8441 §6: a TCP reset).
#[test]
fn a_session_that_fails_resets_its_stream_with_cancel() {
    let config = Config {
        write_timeout: Duration::from_millis(200),
        ..Config::default()
    };
    let seen = Arc::new(Seen::default());
    let server = start_with(1, config, app(seen.clone(), BIG));
    volt_rt::block_on(async {
        let client = connect(server.addr()).await;
        let mut ws = open_ok(&client, "/big").await;
        volt_rt::time::sleep(Duration::from_millis(600)).await;
        let mut got = 0;
        let reason = loop {
            match ws.tunnel.recv.data().await {
                Some(Ok(chunk)) => {
                    // The connection's window back, for the next WebSocket's sake.
                    let _ = ws.tunnel.recv.flow_control().release_capacity(chunk.len());
                    got += chunk.len();
                }
                Some(Err(e)) => break e.reason(),
                None => panic!("the stream ended cleanly"),
            }
        };
        assert_eq!(reason, Some(h2::Reason::CANCEL));
        assert!(
            got < 1 << 20,
            "{got} bytes: the 1 MiB message did not all go"
        );
        assert!(!seen.sent_big.load(Ordering::Acquire));
        // Another WebSocket on the same connection is served.
        open_ok(&client, "/echo").await.echoes("still here").await;
    });
    server.shutdown();
}

/// An extended CONNECT for another protocol is a CONNECT to the routes (no GET fallback),
/// and `websocket()` refuses it.
#[test]
fn another_protocol_is_not_a_websocket() {
    with_server(async |_, client, _| {
        let mut req = http::Request::builder()
            .method(http::Method::CONNECT)
            .uri("http://t/echo")
            .header("sec-websocket-version", "13")
            .body(())
            .unwrap();
        req.extensions_mut()
            .insert(h2::ext::Protocol::from_static("connect-udp"));
        let mut client = client.clone().ready().await.unwrap();
        let (response, _send) = client.send_request(req, false).unwrap();
        let response = read_response(response).await;
        assert_eq!(response.status, 405);
        assert_eq!(response.headers["allow"], "GET, HEAD");
    });
}

/// The client's connection is lost (no RST_STREAM, no GOAWAY: the socket closes) with a
/// WebSocket open: its session, waiting in `recv`, gets an error, in a task of its own once
/// the connection is over.
#[test]
fn a_connection_lost_ends_its_sessions_with_an_error() {
    let seen = Arc::new(Seen::default());
    let server = start(app(seen.clone(), BIG));
    let mut tcp = TcpStream::connect(server.addr()).unwrap();
    tcp.set_read_timeout(Some(HANG_GUARD)).unwrap();
    let mut hello = client_start();
    let mut block = vec![0x02, 7];
    block.extend(b"CONNECT");
    block.extend([0x00, 9]);
    block.extend(b":protocol");
    block.push(9);
    block.extend(b"websocket");
    block.extend([0x86, 0x04, 7]);
    block.extend(b"/record");
    block.extend([0x01, 1, b't', 0x00, 21]);
    block.extend(b"sec-websocket-version");
    block.extend([2, b'1', b'3']);
    hello.extend(frame(HEADERS, END_HEADERS, 1, &block));
    tcp.write_all(&hello).unwrap();
    let mut buf = Vec::new();
    loop {
        let f = next_frame(&mut tcp, &mut buf);
        if (f.0, f.2) == (DATA, 1) {
            assert_eq!(f.3, b"\x81\x05ready");
            break;
        }
    }
    drop(tcp);
    let deadline = Instant::now() + HANG_GUARD;
    while seen.reset.lock().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the session never learned");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(
        *seen.reset.lock().unwrap(),
        Some(io::ErrorKind::ConnectionReset)
    );
    assert!(server.get("/").contains("HTTP/1.1"), "the server serves on");
    server.shutdown();
}
