//! permessage-deflate (RFC 7692) over real sockets: volt's client and server round trip with
//! it, with context kept and reset; the server's negotiation and frames seen as raw bytes; RFC
//! 7692's example bytes read by the client; zip bombs at both ends (1009); RSV1 without the
//! extension (1002).

mod clientcommon;
mod common;

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use bytes::{Bytes, BytesMut};
use sha1::{Digest, Sha1};
use volt_http::{get, Client, Error, Message, Request, Router};
use volt_proto::ws::{
    encode_compressed_frame, encode_frame, Compressor, Decoder, DeflateConfig, DeflateParams,
    Incoming, Opcode, Role,
};

use clientcommon::{raw_server, read_head};
use common::{start, HANG_GUARD};

async fn echo(mut ws: volt_http::WebSocket) -> io::Result<()> {
    while let Some(msg) = ws.recv().await? {
        ws.send(msg).await?;
    }
    Ok(())
}

/// `/plain` echoes without deflate; `/deflate` with it (context kept); `/fresh` with neither
/// side keeping its context; `/small` with deflate and a 1 KiB limit.
fn app() -> Router {
    let with = |config: Option<DeflateConfig>, max: usize| {
        get(move |req: Request| async move {
            let up = req.websocket()?.deflate(config).max_message_size(max);
            Ok::<_, Error>(up.on_upgrade(echo))
        })
    };
    let fresh = DeflateConfig::new()
        .server_no_context_takeover(true)
        .client_no_context_takeover(true);
    Router::new()
        .route("/plain", with(None, 16 << 20))
        .route("/deflate", with(Some(DeflateConfig::new()), 16 << 20))
        .route("/fresh", with(Some(fresh), 16 << 20))
        .route("/small", with(Some(DeflateConfig::new()), 1024))
}

fn client() -> Client {
    Client::builder().timeout(Duration::from_secs(10)).build()
}

fn url(addr: SocketAddr, path: &str) -> String {
    format!("ws://{addr}{path}")
}

/// Messages that compress well, sent again and again: with context kept the later ones refer
/// back to the earlier ones, so both ends must agree on what each keeps.
async fn round_trips(ws: &mut volt_http::WebSocket) {
    let big: Bytes = "compressible ".repeat(50_000).into_bytes().into();
    for i in 0..5 {
        let text = format!("message {i}: the same words again and again");
        for msg in [Message::Text(text), Message::Binary(big.clone()), "".into()] {
            ws.send(msg.clone()).await.unwrap();
            assert_eq!(ws.recv().await.unwrap(), Some(msg));
        }
    }
    ws.close(1000, "").await.unwrap();
    assert_eq!(ws.close_frame(), Some((1000, String::new())));
}

#[test]
fn client_and_server_round_trip_compressed_with_context_kept_and_reset() {
    let server = start(app());
    volt_rt::block_on(async move {
        let kept = DeflateParams {
            server_no_context_takeover: false,
            client_no_context_takeover: false,
            server_max_window_bits: 15,
            client_max_window_bits: 15,
        };
        let mut ws = client()
            .websocket(&url(server.addr(), "/deflate"))
            .connect()
            .await;
        let ws = ws.as_mut().unwrap();
        assert_eq!(ws.deflate(), Some(kept));
        round_trips(ws).await;

        // The server wants neither side to keep its context.
        let mut ws = client()
            .websocket(&url(server.addr(), "/fresh"))
            .connect()
            .await;
        let ws = ws.as_mut().unwrap();
        let reset = DeflateParams {
            server_no_context_takeover: true,
            client_no_context_takeover: true,
            ..kept
        };
        assert_eq!(ws.deflate(), Some(reset));
        round_trips(ws).await;

        // The client asks for the server's reset and says it resets its own.
        let config = DeflateConfig::new()
            .server_no_context_takeover(true)
            .client_no_context_takeover(true)
            .level(1);
        let mut ws = client()
            .websocket(&url(server.addr(), "/deflate"))
            .deflate(Some(config))
            .connect()
            .await;
        let ws = ws.as_mut().unwrap();
        assert_eq!(ws.deflate(), Some(reset));
        round_trips(ws).await;

        // Only the client's half of it: the server keeps its context.
        let config = DeflateConfig::new().client_no_context_takeover(true);
        let mut ws = client()
            .websocket(&url(server.addr(), "/deflate"))
            .deflate(Some(config))
            .connect()
            .await;
        let ws = ws.as_mut().unwrap();
        let half = DeflateParams {
            client_no_context_takeover: true,
            ..kept
        };
        assert_eq!(ws.deflate(), Some(half));
        round_trips(ws).await;

        // A server that does not want it, and a client that does not offer it.
        let mut ws = client()
            .websocket(&url(server.addr(), "/plain"))
            .connect()
            .await;
        assert_eq!(ws.as_ref().unwrap().deflate(), None);
        round_trips(ws.as_mut().unwrap()).await;
        let mut ws = client()
            .websocket(&url(server.addr(), "/deflate"))
            .deflate(None)
            .connect()
            .await;
        assert_eq!(ws.as_ref().unwrap().deflate(), None);
        round_trips(ws.as_mut().unwrap()).await;
    });
}

/// A blocking raw client: the handshake with `extra` header lines, then frames.
struct Raw {
    s: TcpStream,
    buf: BytesMut,
}

impl Raw {
    /// Connects and sends the handshake for `path`; returns the 101's head.
    fn open(addr: SocketAddr, path: &str, extra: &str) -> (Raw, String) {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(HANG_GUARD)).unwrap();
        let request = format!(
            "GET {path} HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n{extra}\r\n"
        );
        s.write_all(request.as_bytes()).unwrap();
        let head = read_head(&mut s);
        assert!(head.starts_with("HTTP/1.1 101"), "{head}");
        let buf = BytesMut::new();
        (Raw { s, buf }, head)
    }

    /// The server's next frame, undecoded: its first byte and the rest.
    fn raw_frame(&mut self) -> Vec<u8> {
        loop {
            if let Ok(Some(head)) = volt_proto::ws::parse_head(&self.buf, Role::Client, true) {
                let end = head.head_len + head.len as usize;
                if self.buf.len() >= end {
                    return self.buf.split_to(end).to_vec();
                }
            }
            let mut chunk = [0u8; 16 * 1024];
            let n = self.s.read(&mut chunk).unwrap();
            assert!(n > 0, "closed before a whole frame");
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    fn send(&mut self, frame: &[u8]) {
        self.s.write_all(frame).unwrap();
    }

    /// The close frame's code the server sends next.
    fn close_code(&mut self) -> u16 {
        let frame = self.raw_frame();
        assert_eq!(frame[0], 0x88, "{frame:x?}");
        u16::from_be_bytes([frame[2], frame[3]])
    }
}

const MASK: [u8; 4] = [0x37, 0xfa, 0x21, 0x3d];

fn masked(opcode: Opcode, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    encode_frame(&mut out, true, opcode, payload, Some(MASK));
    out
}

#[test]
fn the_server_negotiates_and_compresses_on_the_wire() {
    let server = start(app());
    // Chrome's offer: the server answers without limits of its own.
    let offer = "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n";
    let (mut raw, head) = Raw::open(server.addr(), "/deflate", offer);
    assert!(
        head.contains("\r\nsec-websocket-extensions: permessage-deflate\r\n"),
        "{head}"
    );
    // RFC 7692 §7.2.3.1's "Hello", masked as a client sends it.
    let mut hello = vec![0xc1, 0x87];
    hello.extend_from_slice(&MASK);
    hello.extend(
        [0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00]
            .iter()
            .enumerate()
            .map(|(i, b)| b ^ MASK[i % 4]),
    );
    raw.send(&hello);
    // The echo comes back compressed: FIN and RSV1 set, and it inflates to "Hello".
    let frame = raw.raw_frame();
    assert_eq!(frame[0], 0xc1, "{frame:x?}");
    let params = volt_proto::ws::accept([&b"permessage-deflate"[..]], Some(&DeflateConfig::new()));
    let mut decoder = Decoder::with_deflate(Role::Client, 1024, params.unwrap().unwrap());
    let mut buf = BytesMut::from(&frame[..]);
    assert_eq!(
        decoder.decode(&mut buf).unwrap(),
        Some(Incoming::Text(Bytes::from_static(b"Hello")))
    );
    // Control frames are never compressed: a ping's pong has RSV1 clear.
    raw.send(&masked(Opcode::Ping, b"ping"));
    assert_eq!(raw.raw_frame(), [0x8a, 0x04, b'p', b'i', b'n', b'g']);

    // An offer asking for a server window under 15 bits is declined (miniz_oxide has no
    // smaller window): the 101 has no extension, and RSV1 is then a protocol error, 1002.
    let offer = "Sec-WebSocket-Extensions: permessage-deflate; server_max_window_bits=10\r\n";
    let (mut raw, head) = Raw::open(server.addr(), "/deflate", offer);
    assert!(!head.contains("extensions"), "{head}");
    raw.send(&hello);
    assert_eq!(raw.close_code(), 1002);
    drop(raw);
    // So on a server that does not want it at all.
    let offer = "Sec-WebSocket-Extensions: permessage-deflate\r\n";
    let (mut raw, head) = Raw::open(server.addr(), "/plain", offer);
    assert!(!head.contains("extensions"), "{head}");
    raw.send(&hello);
    assert_eq!(raw.close_code(), 1002);
}

#[test]
fn a_zip_bomb_closes_with_1009_at_either_end() {
    let server = start(app());
    // At the server: 8 MiB of zeros, about 8 KiB compressed, to a route taking 1 KiB.
    let (mut raw, _) = Raw::open(
        server.addr(),
        "/small",
        "Sec-WebSocket-Extensions: permessage-deflate\r\n",
    );
    let mut bomb = Vec::new();
    Compressor::new(9, false).compress(&vec![0u8; 8 << 20], &mut bomb);
    let mut frame = Vec::new();
    encode_compressed_frame(&mut frame, Opcode::Binary, &bomb, Some(MASK));
    raw.send(&frame);
    assert_eq!(raw.close_code(), 1009);
    drop(raw);

    volt_rt::block_on(async move {
        // The same through volt's client.
        let mut ws = client()
            .websocket(&url(server.addr(), "/small"))
            .connect()
            .await
            .unwrap();
        ws.send(vec![0u8; 8 << 20]).await.unwrap();
        assert_eq!(ws.recv().await.unwrap(), None);
        assert_eq!(ws.close_frame(), Some((1009, String::new())));

        // At the client: the server echoes what inflates past the client's limit.
        let mut ws = client()
            .websocket(&url(server.addr(), "/deflate"))
            .max_message_size(64 * 1024)
            .connect()
            .await
            .unwrap();
        ws.send(vec![0u8; 8 << 20]).await.unwrap();
        let err = ws.recv().await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(err.to_string().contains("over the limit"), "{err}");
    });
}

fn accept_for(key: &str) -> String {
    let digest = Sha1::new()
        .chain_update(key.as_bytes())
        .chain_update(b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11")
        .finalize();
    BASE64.encode(digest)
}

/// A raw server that accepts the handshake with `extensions` (if any) in its 101, sends
/// `frames`, then hands the connection to `then`.
fn raw_ws_server(
    extensions: Option<&'static str>,
    frames: &'static [u8],
    then: fn(TcpStream),
) -> SocketAddr {
    raw_server(move |mut s| {
        let head = read_head(&mut s);
        let Some(key) = head.lines().find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case("sec-websocket-key")
                .then(|| v.trim().to_owned())
        }) else {
            return;
        };
        let mut reply = format!(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Accept: {}\r\n",
            accept_for(&key)
        );
        if let Some(e) = extensions {
            reply.push_str(&format!("Sec-WebSocket-Extensions: {e}\r\n"));
        }
        reply.push_str("\r\n");
        s.write_all(reply.as_bytes()).unwrap();
        s.write_all(frames).unwrap();
        then(s);
    })
}

/// The client's next frame, raw (its first byte and payload, unmasked) and decoded by a
/// server-side decoder with permessage-deflate as agreed with context kept.
fn next_from_client(
    s: &mut TcpStream,
    buf: &mut BytesMut,
    decoder: &mut Decoder,
) -> (u8, Incoming) {
    loop {
        let first = buf.first().copied();
        if let Some(m) = decoder.decode(buf).unwrap() {
            return (first.unwrap(), m);
        }
        let mut chunk = [0u8; 4096];
        let n = s.read(&mut chunk).unwrap();
        assert!(n > 0);
        buf.extend_from_slice(&chunk[..n]);
    }
}

#[test]
fn the_client_reads_rfc_7692_bytes_and_sends_rsv1() {
    // §7.2.3.2: "Hello" twice, the second referring back to the first (context kept).
    const FRAMES: &[u8] = &[
        0xc1, 0x07, 0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00, //
        0xc1, 0x05, 0xf2, 0x00, 0x11, 0x00, 0x00,
    ];
    let addr = raw_ws_server(Some("permessage-deflate"), FRAMES, |mut s| {
        let params = DeflateParams {
            server_no_context_takeover: false,
            client_no_context_takeover: false,
            server_max_window_bits: 15,
            client_max_window_bits: 15,
        };
        let mut decoder = Decoder::with_deflate(Role::Server, 1 << 20, params);
        let mut buf = BytesMut::new();
        for _ in 0..2 {
            let (first, m) = next_from_client(&mut s, &mut buf, &mut decoder);
            assert_eq!(first, 0xc1, "FIN, RSV1, text");
            assert_eq!(m, Incoming::Text(Bytes::from_static(b"Hello")));
        }
        let (first, m) = next_from_client(&mut s, &mut buf, &mut decoder);
        assert_eq!(
            (first, m),
            (0x88, Incoming::Close(Some((1000, String::new()))))
        );
        s.write_all(&[0x88, 0x02, 0x03, 0xe8]).unwrap();
    });
    volt_rt::block_on(async move {
        let mut ws = client().websocket(&url(addr, "/")).connect().await.unwrap();
        for _ in 0..2 {
            let msg = ws.recv().await.unwrap().unwrap();
            assert_eq!(msg, Message::Text("Hello".into()));
            ws.send(msg).await.unwrap();
        }
        ws.close(1000, "").await.unwrap();
    });
}

/// A raw server's end of a connection the client fails: its close frame says 1002.
fn client_closes_with_1002(mut s: TcpStream) {
    let mut decoder = Decoder::new(Role::Server, 1024);
    let mut buf = BytesMut::new();
    let (_, m) = next_from_client(&mut s, &mut buf, &mut decoder);
    assert_eq!(m, Incoming::Close(Some((1002, String::new()))));
}

#[test]
fn rsv1_from_a_server_that_did_not_agree_fails_with_1002() {
    const FRAMES: &[u8] = &[0xc1, 0x07, 0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00];
    let addr = raw_ws_server(None, FRAMES, client_closes_with_1002);
    volt_rt::block_on(async move {
        let mut ws = client().websocket(&url(addr, "/")).connect().await.unwrap();
        assert_eq!(ws.deflate(), None);
        let err = ws.recv().await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(err.to_string().contains("RSV bit"), "{err}");
    });
}

/// Two compressed text frames, unmasked, built by hand (fixed Huffman codes): "abcdefgh",
/// then "xy" and 8 bytes copied from 10 back, which reaches into the first message ("xyabcdefgh"
/// with context kept; a reference outside the window without).
const REFERS_BACK: &[u8] = &[
    0xc1, 0x0a, 0x4a, 0x4c, 0x4a, 0x4e, 0x49, 0x4d, 0x4b, 0xcf, 0x00, 0x00, //
    0xc1, 0x06, 0xaa, 0xa8, 0x84, 0xb1, 0x00, 0x00,
];

#[test]
fn issue_no_context_takeover_broken_by_the_peer_fails_with_1002() {
    // At the server: a client that offered client_no_context_takeover, then refers back.
    let server = start(app());
    let offer = "Sec-WebSocket-Extensions: permessage-deflate; client_no_context_takeover\r\n";
    let (mut raw, head) = Raw::open(server.addr(), "/fresh", offer);
    assert!(head.contains("client_no_context_takeover"), "{head}");
    let (first, second) = REFERS_BACK.split_at(12);
    let compressed = |frame: &[u8]| {
        let mut out = Vec::new();
        encode_compressed_frame(&mut out, Opcode::Text, &frame[2..], Some(MASK));
        out
    };
    raw.send(&compressed(first));
    // The first is echoed (compressed by the server, which keeps no context either).
    let echo = raw.raw_frame();
    let params = DeflateParams {
        server_no_context_takeover: true,
        client_no_context_takeover: true,
        server_max_window_bits: 15,
        client_max_window_bits: 15,
    };
    let mut decoder = Decoder::with_deflate(Role::Client, 1024, params);
    let got = decoder.decode(&mut BytesMut::from(&echo[..])).unwrap();
    assert_eq!(got, Some(Incoming::Text(Bytes::from_static(b"abcdefgh"))));
    raw.send(&compressed(second));
    assert_eq!(raw.close_code(), 1002);

    // At the client: a server that agreed to server_no_context_takeover, then refers back.
    let addr = raw_ws_server(
        Some("permessage-deflate; server_no_context_takeover"),
        REFERS_BACK,
        client_closes_with_1002,
    );
    volt_rt::block_on(async move {
        let mut ws = client().websocket(&url(addr, "/")).connect().await.unwrap();
        assert_eq!(
            ws.recv().await.unwrap(),
            Some(Message::Text("abcdefgh".into()))
        );
        let err = ws.recv().await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(err.to_string().contains("does not inflate"), "{err}");
    });
}
