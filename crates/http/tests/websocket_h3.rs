//! WebSocket over HTTP/3 (RFC 9220), through a raw client on quinn (h3 0.0.8's client cannot
//! send `:protocol websocket`, see `h3common::raw`): the SETTINGS, the extended CONNECT
//! handshake (200, subprotocols, permessage-deflate; 400, 426, 501 and 405 as on HTTP/2),
//! malformed ones reset with H3_MESSAGE_ERROR, messages as exact frame bytes in the stream's
//! DATA both ways, the close handshake then our FIN, a client's RESET_STREAM and STOP_SENDING,
//! HEADERS in the tunnel, flow control holding a client back, a write timeout resetting with
//! H3_REQUEST_CANCELLED, panics, and graceful shutdown (1001).

mod common;
mod h2common;
mod h3common;
mod wscommon;

use std::io;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use h3common::raw::{data, field, headers, Next, RawH3, RawStream};
use h3common::*;
use volt_http::Config;
use volt_proto::h3::Frame;
use volt_proto::ws::{encode_frame, Decoder};
use volt_proto::ws::{Incoming, Opcode, Role};

use common::{TestServer, HANG_GUARD};
use wscommon::{app, pattern, sum, Seen, Tunnel, MASK, V13};

/// RFC 9114 §8.1.
const H3_NO_ERROR: u64 = 0x100;
const H3_FRAME_UNEXPECTED: u64 = 0x105;
const H3_REQUEST_CANCELLED: u64 = 0x10c;
const H3_MESSAGE_ERROR: u64 = 0x10e;

/// quinn's default stream receive window, which the server keeps (1,250,000 bytes): the most
/// a client may send on a stream before the server reads.
const STREAM_WINDOW: usize = 1_250_000;

/// Past the client's stream window (quinn's default too, [`STREAM_WINDOW`]): a client that
/// does not read holds `/big`'s send back.
const BIG: usize = 4 << 20;

/// A WebSocket's HTTP/3 stream, as the client sees it: each write one DATA frame, the DATA
/// payloads read in order.
struct H3Tunnel(RawStream);

impl Tunnel for H3Tunnel {
    async fn send(&mut self, bytes: Vec<u8>) {
        self.0.send_data(&bytes).await;
    }

    async fn recv(&mut self) -> Option<Bytes> {
        match self.0.next().await {
            Next::Frame(Frame::Data(piece)) => Some(piece),
            Next::End => None,
            other => panic!("{other:?} in the tunnel"),
        }
    }

    fn end(&mut self) {
        // The server may have stopped our side already (STOP_SENDING after its FIN).
        let _ = self.0.send.finish();
    }
}

type Ws = wscommon::Ws<H3Tunnel>;

/// The pseudo-header fields of an extended CONNECT for `path` with `:protocol` `protocol`.
fn connect(protocol: &str, path: &str) -> Vec<(&'static str, String)> {
    vec![
        (":method", "CONNECT".into()),
        (":protocol", protocol.into()),
        (":scheme", "https".into()),
        (":authority", "h3.test".into()),
        (":path", path.into()),
    ]
}

/// Sends `path`'s extended CONNECT (`:protocol websocket`) with `extra` fields; the head of
/// the answer, and the stream.
async fn open(
    client: &RawH3,
    path: &str,
    extra: &[(&str, &str)],
) -> ((u16, Vec<(String, String)>), Ws) {
    let pseudo = connect("websocket", path);
    let mut fields: Vec<(&str, &str)> = pseudo.iter().map(|(n, v)| (*n, v.as_str())).collect();
    fields.extend_from_slice(extra);
    let mut stream = client.request(&fields).await;
    let head = stream.head().await.expect("a response, not a reset");
    (head, Ws::new(H3Tunnel(stream)))
}

async fn open_ok(client: &RawH3, path: &str) -> Ws {
    let ((status, _), ws) = open(client, path, &[V13]).await;
    assert_eq!(status, 200);
    ws
}

/// A plain GET of `path`, on the same connection: its status and body.
async fn get_page(client: &RawH3, path: &str) -> (u16, String) {
    let mut stream = client
        .request(&[
            (":method", "GET"),
            (":scheme", "https"),
            (":authority", "h3.test"),
            (":path", path),
        ])
        .await;
    stream.send.finish().unwrap();
    let (status, _) = stream.head().await.unwrap();
    (status, String::from_utf8(stream.body().await).unwrap())
}

/// A server with [`app`] and `config`, and a client connected to it.
async fn server_and_client(config: Config) -> (TestServer, RawH3, Arc<Seen>) {
    let certs = certs();
    let seen = Arc::new(Seen::default());
    let server = start_h3(1, config, &certs, app(seen.clone(), BIG));
    let client = RawH3::connect(server.addr(), &certs.2).await;
    (server, client, seen)
}

#[tokio::test]
async fn settings_offer_extended_connect() {
    let (server, client, _) = server_and_client(Config::default()).await;
    // RFC 9220 §3: SETTINGS_ENABLE_CONNECT_PROTOCOL = 1.
    assert!(client.settings.enable_connect_protocol);
    assert_eq!(get_page(&client, "/").await, (200, "HTTP/3.0".into()));
    shut_down(server).await;
}

#[tokio::test]
async fn handshake_answers_200_with_the_chosen_subprotocol_and_no_http1_fields() {
    let (server, client, _) = server_and_client(Config::default()).await;
    let offer = ("sec-websocket-protocol", "superchat, chat");
    let key = ("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==");
    let ((status, fields), mut ws) = open(&client, "/echo", &[V13, offer, key]).await;
    assert_eq!(status, 200);
    let mut names: Vec<&str> = fields.iter().map(|(n, _)| n.as_str()).collect();
    names.sort();
    // No Sec-WebSocket-Accept (RFC 8441 §5 as RFC 9220 applies it), no content-length (RFC
    // 9110 §9.3.6).
    assert_eq!(names, ["date", "sec-websocket-protocol", "server"]);
    assert_eq!(field(&fields, "sec-websocket-protocol"), Some("chat"));
    ws.closes(1000).await;
    shut_down(server).await;
}

/// The refusals HTTP/2's extended CONNECT gets, the same on HTTP/3.
#[tokio::test]
async fn bad_handshakes_answer_as_on_http2() {
    let (server, client, _) = server_and_client(Config::default()).await;
    let ((status, _), _) = open(&client, "/echo", &[]).await;
    assert_eq!(status, 400, "no version");
    let ((status, fields), _) = open(&client, "/echo", &[("sec-websocket-version", "8")]).await;
    assert_eq!(status, 426);
    assert_eq!(field(&fields, "sec-websocket-version"), Some("13"));
    // A GET route that does not take WebSockets: no 200, which would open one.
    let ((status, _), _) = open(&client, "/page", &[V13]).await;
    assert_eq!(status, 501);
    // A route without GET or CONNECT.
    let ((status, _), _) = open(&client, "/post", &[V13]).await;
    assert_eq!(status, 405);
    // Another protocol is a CONNECT to the routes, without the GET fallback.
    let pseudo = connect("connect-udp", "/echo");
    let mut fields: Vec<(&str, &str)> = pseudo.iter().map(|(n, v)| (*n, v.as_str())).collect();
    fields.push(V13);
    let (status, fields) = client.request(&fields).await.head().await.unwrap();
    assert_eq!(status, 405);
    assert_eq!(field(&fields, "allow"), Some("GET, HEAD"));
    // The same route still serves a plain GET.
    assert_eq!(
        get_page(&client, "/page").await,
        (200, "not a WebSocket".into())
    );
    shut_down(server).await;
}

/// RFC 9220 §3 with RFC 8441 §4: an extended CONNECT without `:path` or `:scheme`, or
/// `:protocol` on another method, is malformed: the stream is reset with H3_MESSAGE_ERROR and
/// the connection serves on.
#[tokio::test]
async fn malformed_extended_connects_reset_the_stream() {
    let (server, client, _) = server_and_client(Config::default()).await;
    let full = connect("websocket", "/echo");
    let without = |name: &str| -> Vec<(&str, &str)> {
        let kept = full.iter().filter(|(n, _)| *n != name);
        kept.map(|(n, v)| (*n, v.as_str())).chain([V13]).collect()
    };
    let mut on_get = without(":method");
    on_get.insert(0, (":method", "GET"));
    for fields in [without(":path"), without(":scheme"), on_get] {
        let mut stream = client.request(&fields).await;
        assert_eq!(stream.head().await, Err(H3_MESSAGE_ERROR), "{fields:?}");
    }
    assert!(client.conn.close_reason().is_none());
    open_ok(&client, "/echo").await.echoes("still here").await;
    shut_down(server).await;
}

#[tokio::test]
async fn text_binary_fragments_and_ping_echo_as_exact_frames() {
    let (server, client, _) = server_and_client(Config::default()).await;
    let mut ws = open_ok(&client, "/echo").await;
    ws.echoes_exact_frames().await;
    ws.closes(1000).await;
    shut_down(server).await;
}

/// The client's bytes split across DATA frames anywhere, and frames of unknown types (RFC 9114
/// §9) between them, read as one byte stream.
#[tokio::test]
async fn websocket_bytes_span_data_frames_and_skip_unknown_ones() {
    let (server, client, _) = server_and_client(Config::default()).await;
    let mut ws = open_ok(&client, "/echo").await;
    let mut frame = Vec::new();
    encode_frame(&mut frame, true, Opcode::Text, b"split", Some(MASK));
    // A reserved frame type (0x21), its payload skipped unseen.
    let unknown = [0x21, 3, b'?', b'?', b'?'];
    let bytes = [
        data(&frame[..1]),
        unknown.to_vec(),
        data(&frame[1..5]),
        data(&frame[5..]),
    ];
    ws.tunnel.0.send.write_all(&bytes.concat()).await.unwrap();
    assert_eq!(ws.bytes(7).await.unwrap(), b"\x81\x05split");
    ws.closes(1000).await;
    shut_down(server).await;
}

#[tokio::test]
async fn close_from_the_client_is_echoed_then_the_stream_ends() {
    let (server, client, _) = server_and_client(Config::default()).await;
    let mut ws = open_ok(&client, "/echo").await;
    ws.frame(true, Opcode::Close, b"\x03\xe8bye").await;
    assert_eq!(ws.bytes(4).await.unwrap(), b"\x88\x02\x03\xe8");
    assert!(ws.ended().await, "FIN after the close");
    // The connection goes on.
    open_ok(&client, "/echo").await.echoes("again").await;
    shut_down(server).await;
}

#[tokio::test]
async fn close_from_the_server_waits_for_the_clients_then_ends_the_stream() {
    let (server, client, _) = server_and_client(Config::default()).await;
    open_ok(&client, "/close").await.server_closes_first().await;
    shut_down(server).await;
}

#[tokio::test]
async fn permessage_deflate_both_ways() {
    let (server, client, _) = server_and_client(Config::default()).await;
    let offer = ("sec-websocket-extensions", "permessage-deflate");
    let ((status, fields), mut ws) = open(&client, "/deflate", &[V13, offer]).await;
    assert_eq!(status, 200);
    assert_eq!(
        field(&fields, "sec-websocket-extensions"),
        Some("permessage-deflate")
    );
    ws.deflates_both_ways().await;
    ws.closes(1000).await;
    shut_down(server).await;
}

/// Waits (for at most [`HANG_GUARD`]) until `/record`'s session saw its `recv` end.
async fn recorded(seen: &Seen) -> Option<io::ErrorKind> {
    let deadline = Instant::now() + HANG_GUARD;
    while seen.reset.lock().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the session never learned");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    *seen.reset.lock().unwrap()
}

/// A client's RESET_STREAM fails the session's read as a TCP reset would; the server resets
/// its side with H3_REQUEST_CANCELLED (RFC 9220 §3) and the connection serves on.
#[tokio::test]
async fn a_client_reset_ends_the_session_with_an_error() {
    let (server, client, seen) = server_and_client(Config::default()).await;
    let mut ws = open_ok(&client, "/record").await;
    assert_eq!(ws.bytes(7).await.unwrap(), b"\x81\x05ready");
    let cancelled = quinn::VarInt::from_u64(H3_REQUEST_CANCELLED).unwrap();
    ws.tunnel.0.send.reset(cancelled).unwrap();
    assert_eq!(recorded(&seen).await, Some(io::ErrorKind::ConnectionReset));
    assert_eq!(ws.tunnel.0.next().await, Next::Reset(H3_REQUEST_CANCELLED));
    open_ok(&client, "/echo").await.echoes("x").await;
    shut_down(server).await;
}

/// RFC 9000 §3.5: a client's STOP_SENDING is answered with RESET_STREAM at once, while the
/// session waits in `recv` and writes nothing (without it, a session that then only ended the
/// stream, with a FIN quinn-proto refuses once stopped, left it open, and graceful shutdown
/// waited out `shutdown_timeout` for it). The session's next send (the echo of a message
/// sent once the reset came, so that the two cannot cross) fails, as after a TCP reset: the
/// session ends, and the server stops the client's side with H3_REQUEST_CANCELLED.
#[tokio::test]
async fn stop_sending_is_answered_with_reset_stream_and_fails_the_next_send() {
    let (server, client, _) = server_and_client(Config::default()).await;
    let mut ws = open_ok(&client, "/echo").await;
    ws.echoes("before").await;
    let resets = || client.conn.stats().frame_rx.reset_stream;
    let before = resets();
    let cancelled = quinn::VarInt::from_u64(H3_REQUEST_CANCELLED).unwrap();
    ws.tunnel.0.recv.stop(cancelled).unwrap();
    let deadline = Instant::now() + HANG_GUARD;
    while resets() == before {
        assert!(Instant::now() < deadline, "no RESET_STREAM");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    ws.frame(true, Opcode::Text, b"echo this if you can").await;
    let stopped = ws.tunnel.0.send.stopped().await.unwrap();
    assert_eq!(stopped.map(|c| c.into_inner()), Some(H3_REQUEST_CANCELLED));
    open_ok(&client, "/echo").await.echoes("still here").await;
    shut_down(server).await;
}

/// HEADERS on a stream whose tunnel is open is a connection error of type
/// H3_FRAME_UNEXPECTED (RFC 9114 §4.4: only DATA follows a CONNECT's 2xx).
#[tokio::test]
async fn headers_in_the_tunnel_close_the_connection() {
    let (server, client, seen) = server_and_client(Config::default()).await;
    let mut ws = open_ok(&client, "/record").await;
    assert_eq!(ws.bytes(7).await.unwrap(), b"\x81\x05ready");
    let trailers = headers(&[("x-trailer", "no")]);
    ws.tunnel.0.send.write_all(&trailers).await.unwrap();
    match client.conn.closed().await {
        quinn::ConnectionError::ApplicationClosed(close) => {
            assert_eq!(close.error_code.into_inner(), H3_FRAME_UNEXPECTED);
        }
        other => panic!("expected an application close, got {other:?}"),
    }
    assert_eq!(recorded(&seen).await, Some(io::ErrorKind::ConnectionReset));
    shut_down(server).await;
}

/// A session that does not read holds the client back by QUIC's flow control: the client can
/// send no more than the stream's window of a 4 MiB message until the session reads, then
/// the rest goes through.
#[tokio::test]
async fn a_slow_reader_holds_the_client_back() {
    let (server, client, seen) = server_and_client(Config::default()).await;
    let mut ws = open_ok(&client, "/slow-reader").await;
    let stream = &mut ws.tunnel.0;
    let big = pattern(4 << 20);
    let mut frame = Vec::new();
    encode_frame(&mut frame, true, Opcode::Binary, &big, Some(MASK));
    let frame = data(&frame);
    // Whatever the wait, the window stops the client: the wait only ends the test sooner.
    let mut sent = 0;
    while sent < frame.len() {
        let write = stream.send.write(&frame[sent..]);
        match tokio::time::timeout(Duration::from_millis(300), write).await {
            Ok(n) => sent += n.unwrap(),
            Err(_) => break,
        }
    }
    assert!(sent <= STREAM_WINDOW, "{sent} bytes taken unread");
    assert!(sent > 0);
    seen.read_now.store(true, Ordering::Release);
    stream.send.write_all(&frame[sent..]).await.unwrap();
    let answer = format!("{} {}", big.len(), sum(&big));
    let mut decoder = Decoder::new(Role::Client, 1 << 20);
    assert_eq!(ws.next(&mut decoder).await, Incoming::Text(answer.into()));
    ws.closes(1000).await;
    shut_down(server).await;
}

/// A client that does not read: the session's send of 4 MiB times out (the client's stream
/// window holds it back) and the stream is reset with H3_REQUEST_CANCELLED, a TCP reset's
/// code (RFC 9220 §3).
#[tokio::test]
async fn a_write_timeout_resets_the_stream_with_request_cancelled() {
    let config = Config {
        write_timeout: Duration::from_millis(200),
        ..Config::default()
    };
    let (server, client, seen) = server_and_client(config).await;
    let mut ws = open_ok(&client, "/big").await;
    // Nothing is read: the reset is waited for as such.
    let reset = ws.tunnel.0.recv.received_reset().await.unwrap();
    assert_eq!(reset.map(|c| c.into_inner()), Some(H3_REQUEST_CANCELLED));
    assert!(!seen.sent_big.load(Ordering::Acquire));
    open_ok(&client, "/echo").await.echoes("still here").await;
    shut_down(server).await;
}

/// A handler's panic answers 500 on its stream only; a session's panic closes its WebSocket
/// with 1011; the WebSocket open beside them carries on.
#[tokio::test]
async fn panics_stay_on_their_stream() {
    let (server, client, _) = server_and_client(Config::default()).await;
    let mut echo = open_ok(&client, "/echo").await;
    let ((status, _), _) = open(&client, "/handler-panics", &[V13]).await;
    assert_eq!(status, 500);
    let mut ws = open_ok(&client, "/session-panics").await;
    ws.session_panics_with_1011().await;
    echo.echoes("alive").await;
    assert_eq!(get_page(&client, "/page").await.0, 200);
    echo.closes(1000).await;
    shut_down(server).await;
}

#[tokio::test]
async fn graceful_shutdown_closes_websockets_with_1001() {
    let (server, client, _) = server_and_client(Config::default()).await;
    let mut ws = open_ok(&client, "/echo").await;
    ws.echoes("before").await;
    server.handle().shutdown();
    ws.shutdown_closes_with_1001().await;
    let _ = ws.tunnel.0.send.finish();
    // Then the connection is closed, with no error.
    match client.conn.closed().await {
        quinn::ConnectionError::ApplicationClosed(close) => {
            assert_eq!(close.error_code.into_inner(), H3_NO_ERROR);
        }
        other => panic!("expected an application close, got {other:?}"),
    }
    tokio::task::spawn_blocking(move || server.join())
        .await
        .unwrap()
        .expect("serve returned Ok");
}
