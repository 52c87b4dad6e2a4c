//! volt's WebSocket client against volt's own server (`ws` and `wss`) and against scripted
//! raw servers: messages both ways, fragments, ping and pong, the close handshake from either
//! side, and the handshakes that must fail (a wrong accept, an unoffered subprotocol or
//! extension, an answer other than 101).

mod clientcommon;
mod common;
mod h2common;

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use bytes::{Bytes, BytesMut};
use sha1::{Digest, Sha1};
use volt_http::{
    get, CertKey, Client, Config, Error, HandshakeError, HeaderValue, Message, Request, Response,
    Router, StatusCode, TlsConfig,
};
use volt_proto::ws::{encode_close, encode_frame, Decoder, Incoming, Opcode, Role};

use clientcommon::{raw_server, read_head};
use common::start;

/// `/echo` echoes; `/close` closes with 4000 after the first message; `/chat` picks a
/// subprotocol and sends it; `/moved` redirects; `/hi` is no WebSocket.
fn app() -> Router {
    use common::ws_echo as echo;
    Router::new()
        .route(
            "/echo",
            get(|req: Request| async move { Ok::<_, Error>(req.websocket()?.on_upgrade(echo)) }),
        )
        .route(
            "/close",
            get(|req: Request| async move {
                Ok::<_, Error>(req.websocket()?.on_upgrade(|mut ws| async move {
                    ws.recv().await?;
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
                    ws.send(p).await?;
                    while ws.recv().await?.is_some() {}
                    Ok(())
                }))
            }),
        )
        .route(
            "/moved",
            get(|_req| async {
                let mut r = Response::new(StatusCode::MOVED_PERMANENTLY);
                r.append_header(
                    volt_http::header::LOCATION,
                    HeaderValue::from_static("/echo"),
                );
                r
            }),
        )
        .route("/hi", get(|_req| async { "hi" }))
}

fn ws_url(addr: SocketAddr, path: &str) -> String {
    format!("ws://{addr}{path}")
}

fn client() -> Client {
    Client::builder().timeout(Duration::from_secs(10)).build()
}

#[test]
fn text_and_binary_round_trip_and_the_client_closes() {
    let server = start(app());
    volt_rt::block_on(async move {
        let mut ws = client()
            .websocket(&ws_url(server.addr(), "/echo"))
            .connect()
            .await
            .unwrap();
        assert_eq!(ws.protocol(), None);
        // volt's server declines permessage-deflate unless told otherwise.
        assert_eq!(ws.deflate(), None);
        ws.send("hello").await.unwrap();
        assert_eq!(
            ws.recv().await.unwrap(),
            Some(Message::Text("hello".into()))
        );
        let big: Bytes = (0..300_000u32)
            .map(|i| (i * 7) as u8)
            .collect::<Vec<_>>()
            .into();
        for msg in [
            Message::Binary(big),
            Message::Binary(Bytes::new()),
            "é".into(),
        ] {
            ws.send(msg.clone()).await.unwrap();
            assert_eq!(ws.recv().await.unwrap(), Some(msg));
        }
        // A ping the server answers with a pong, which `recv` drops.
        ws.send(Message::Ping(Bytes::from_static(b"p")))
            .await
            .unwrap();
        ws.send("after the ping").await.unwrap();
        let next = ws.recv().await.unwrap();
        assert_eq!(next, Some(Message::Text("after the ping".into())));
        // The client's close: the server echoes its code.
        ws.close(1000, "bye").await.unwrap();
        assert_eq!(ws.close_frame(), Some((1000, String::new())));
        assert_eq!(ws.recv().await.unwrap(), None);
        let err = ws.send("late").await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotConnected);
    });
}

#[test]
fn the_server_closes() {
    let server = start(app());
    volt_rt::block_on(async move {
        let url = ws_url(server.addr(), "/close");
        let mut ws = client().websocket(&url).connect().await.unwrap();
        ws.send("bye?").await.unwrap();
        assert_eq!(ws.recv().await.unwrap(), None);
        assert_eq!(ws.close_frame(), Some((4000, "done".into())));
    });
}

#[test]
fn subprotocols_are_offered_and_chosen() {
    let server = start(app());
    volt_rt::block_on(async move {
        let url = ws_url(server.addr(), "/chat");
        let mut ws = client()
            .websocket(&url)
            .protocols(&["v1.chat", "v3.chat"])
            .connect()
            .await
            .unwrap();
        assert_eq!(ws.protocol(), Some("v1.chat"));
        assert_eq!(
            ws.recv().await.unwrap(),
            Some(Message::Text("v1.chat".into()))
        );
        ws.close(1000, "").await.unwrap();
        // None in common: the server picks none, and the client goes on without one.
        let mut ws = client()
            .websocket(&url)
            .protocols(&["v9"])
            .connect()
            .await
            .unwrap();
        assert_eq!(ws.protocol(), None);
        assert_eq!(ws.recv().await.unwrap(), Some(Message::Text("none".into())));
        ws.close(1000, "").await.unwrap();
        // Bad input is refused before connecting.
        let bad = client().websocket(&url).protocols(&["a b"]).connect().await;
        assert_eq!(bad.unwrap_err().kind(), io::ErrorKind::InvalidInput);
        let bad = client()
            .websocket(&url)
            .header(
                volt_http::header::SEC_WEBSOCKET_KEY,
                HeaderValue::from_static("x"),
            )
            .connect()
            .await;
        assert_eq!(bad.unwrap_err().kind(), io::ErrorKind::InvalidInput);
        let bad = client().websocket("ftp://example.com/").connect().await;
        assert_eq!(bad.unwrap_err().kind(), io::ErrorKind::InvalidInput);
    });
}

/// The handshake error inside `err`.
fn handshake_error(err: &io::Error) -> &HandshakeError {
    let inner = err.get_ref().expect("an error with a source");
    inner
        .downcast_ref::<HandshakeError>()
        .expect("a HandshakeError")
}

#[test]
fn an_answer_other_than_101_is_an_error_with_its_status() {
    let server = start(app());
    volt_rt::block_on(async move {
        // A route that is no WebSocket answers as it would any GET.
        for (path, status) in [("/hi", StatusCode::OK), ("/nowhere", StatusCode::NOT_FOUND)] {
            let url = ws_url(server.addr(), path);
            let err = client().websocket(&url).connect().await.unwrap_err();
            assert_eq!(handshake_error(&err).status(), status, "{err}");
            assert_eq!(err.kind(), io::ErrorKind::Other);
            assert!(err.to_string().contains(status.as_str()), "{err}");
        }
        // Redirects are not followed: the 301 and its Location come back.
        let err = client()
            .websocket(&ws_url(server.addr(), "/moved"))
            .connect()
            .await
            .unwrap_err();
        let shake = handshake_error(&err);
        assert_eq!(shake.status(), StatusCode::MOVED_PERMANENTLY);
        assert_eq!(shake.headers()["location"], "/echo");
        assert!(err.to_string().contains("301"), "{err}");
    });
}

/// `Sec-WebSocket-Accept` for `key`, as RFC 6455 §4.2.2 computes it.
fn accept_for(key: &str) -> String {
    let digest = Sha1::new()
        .chain_update(key.as_bytes())
        .chain_update(b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11")
        .finalize();
    BASE64.encode(digest)
}

fn field<'h>(head: &'h str, name: &str) -> Option<&'h str> {
    head.lines().find_map(|line| {
        let (n, v) = line.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

/// The extra lines of a 101 for a key and the request head.
type Answer = fn(&str, &str) -> String;

/// A raw server that answers each handshake with `answer(key, head)` as its 101's extra
/// lines (after `HTTP/1.1 101 ...` and before the blank line), then hands the connection to
/// `then`.
fn scripted_ws(answer: fn(&str, &str) -> String, then: fn(TcpStream, &str)) -> SocketAddr {
    raw_server(move |mut s| {
        let head = read_head(&mut s);
        if head.is_empty() {
            return;
        }
        let key = field(&head, "sec-websocket-key").unwrap().to_owned();
        let extra = answer(&key, &head);
        let reply = format!("HTTP/1.1 101 Switching Protocols\r\n{extra}\r\n");
        s.write_all(reply.as_bytes()).unwrap();
        then(s, &head);
    })
}

fn good_101(key: &str) -> String {
    format!(
        "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {}\r\n",
        accept_for(key)
    )
}

fn nothing(_: TcpStream, _: &str) {}

#[test]
fn a_bad_101_is_an_error() {
    let cases: [(Answer, &str); 6] = [
        (
            |_, _| {
                "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: bm9wZQ==\r\n"
                    .into()
            },
            "Sec-WebSocket-Accept does not match",
        ),
        (
            |_, _| "Upgrade: websocket\r\nConnection: Upgrade\r\n".into(),
            "no Sec-WebSocket-Accept",
        ),
        (
            |key, _| good_101(key).replace("Upgrade: websocket\r\n", "Upgrade: h2c\r\n"),
            "no `Upgrade: websocket`",
        ),
        (
            |key, _| good_101(key).replace("Connection: Upgrade", "Connection: keep-alive"),
            "no `Connection: upgrade`",
        ),
        (
            |key, _| format!("{}Sec-WebSocket-Protocol: evil\r\n", good_101(key)),
            "subprotocol `evil`, not offered",
        ),
        (
            |key, _| format!("{}Sec-WebSocket-Extensions: x-unknown\r\n", good_101(key)),
            "extension `x-unknown`, not offered",
        ),
    ];
    for (answer, why) in cases {
        let addr = scripted_ws(answer, nothing);
        volt_rt::block_on(async move {
            let err = client()
                .websocket(&ws_url(addr, "/"))
                .protocols(&["good"])
                .connect()
                .await
                .unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidData, "{err}");
            assert_eq!(
                handshake_error(&err).status(),
                StatusCode::SWITCHING_PROTOCOLS
            );
            assert!(err.to_string().contains(why), "{err} (wanted: {why})");
        });
    }
    // permessage-deflate accepted by a server the client did not offer it to.
    let addr = scripted_ws(
        |key, _| {
            format!(
                "{}Sec-WebSocket-Extensions: permessage-deflate\r\n",
                good_101(key)
            )
        },
        nothing,
    );
    volt_rt::block_on(async move {
        let err = client()
            .websocket(&ws_url(addr, "/"))
            .deflate(None)
            .connect()
            .await
            .unwrap_err();
        assert!(err.to_string().contains("not offered"), "{err}");
    });
}

/// Reads the client's frames off `s` with a server's decoder (masking checked).
struct Peer {
    s: TcpStream,
    buf: BytesMut,
    decoder: Decoder,
}

impl Peer {
    fn new(s: TcpStream) -> Peer {
        Peer {
            s,
            buf: BytesMut::new(),
            decoder: Decoder::new(Role::Server, 1 << 20),
        }
    }

    fn next(&mut self) -> Incoming {
        loop {
            if let Some(m) = self
                .decoder
                .decode(&mut self.buf)
                .expect("a valid client frame")
            {
                return m;
            }
            let mut chunk = [0u8; 4096];
            let n = self.s.read(&mut chunk).unwrap();
            assert!(n > 0, "the client closed");
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    fn send(&mut self, fin: bool, opcode: Opcode, payload: &[u8]) {
        let mut out = Vec::new();
        encode_frame(&mut out, fin, opcode, payload, None);
        self.s.write_all(&out).unwrap();
    }
}

#[test]
fn fragments_pings_and_masking_against_a_raw_server() {
    let addr = scripted_ws(
        |key, _| good_101(key),
        |s, head| {
            assert!(field(head, "sec-websocket-version") == Some("13"));
            let key = BASE64
                .decode(field(head, "sec-websocket-key").unwrap())
                .unwrap();
            assert_eq!(key.len(), 16);
            // The offer a client makes by default.
            assert_eq!(
                field(head, "sec-websocket-extensions"),
                Some("permessage-deflate")
            );
            let mut peer = Peer::new(s);
            // A fragmented text message with a ping between its fragments, sent in one write
            // with the 101 already out.
            peer.send(false, Opcode::Text, b"frag");
            peer.send(false, Opcode::Continuation, b"men");
            peer.send(true, Opcode::Ping, b"are you there");
            peer.send(true, Opcode::Continuation, b"ted");
            // The client answers the ping with a pong carrying its data, masked (the decoder
            // refuses unmasked frames).
            assert_eq!(
                peer.next(),
                Incoming::Pong(Bytes::from_static(b"are you there"))
            );
            // Then echoes the message, and pings.
            let Incoming::Text(echo) = peer.next() else {
                panic!("not text")
            };
            assert_eq!(&echo[..], b"fragmented");
            assert_eq!(peer.next(), Incoming::Ping(Bytes::from_static(b"ping")));
            // Its close, then the server's answer; the server closes the TCP connection.
            assert_eq!(peer.next(), Incoming::Close(Some((1000, "bye".into()))));
            let mut out = Vec::new();
            encode_close(&mut out, Some(1000), "", None);
            peer.s.write_all(&out).unwrap();
        },
    );
    volt_rt::block_on(async move {
        let mut ws = client()
            .websocket(&ws_url(addr, "/"))
            .connect()
            .await
            .unwrap();
        let msg = ws.recv().await.unwrap().unwrap();
        assert_eq!(msg, Message::Text("fragmented".into()));
        ws.send(msg).await.unwrap();
        ws.send(Message::Ping(Bytes::from_static(b"ping")))
            .await
            .unwrap();
        ws.close(1000, "bye").await.unwrap();
        assert_eq!(ws.close_frame(), Some((1000, String::new())));
    });
}

#[test]
fn a_masked_frame_from_the_server_fails_with_1002() {
    let addr = scripted_ws(
        |key, _| good_101(key),
        |s, _| {
            let mut peer = Peer::new(s);
            let mut out = Vec::new();
            encode_frame(&mut out, true, Opcode::Text, b"masked", Some([1, 2, 3, 4]));
            peer.s.write_all(&out).unwrap();
            assert_eq!(peer.next(), Incoming::Close(Some((1002, String::new()))));
        },
    );
    volt_rt::block_on(async move {
        let mut ws = client()
            .websocket(&ws_url(addr, "/"))
            .connect()
            .await
            .unwrap();
        let err = ws.recv().await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(err.to_string().contains("server frame masked"), "{err}");
    });
}

#[test]
fn wss_round_trip_with_http1_by_alpn() {
    let (cert, key, der) = h2common::cert_for(&["localhost"]);
    let tls = TlsConfig::new(CertKey::from_pem(cert.as_bytes(), key.as_bytes()).unwrap());
    // The server offers h2 too: the client's ALPN must keep the handshake on HTTP/1.1.
    let server = common::start_tls(1, Config::default(), tls.build().unwrap(), app());
    let port = server.addr().port();
    volt_rt::block_on(async move {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(der.into()).unwrap();
        let client = Client::builder().tls_roots(roots).build();
        let url = format!("wss://localhost:{port}/echo");
        let mut ws = client.websocket(&url).connect().await.unwrap();
        ws.send("secure").await.unwrap();
        assert_eq!(
            ws.recv().await.unwrap(),
            Some(Message::Text("secure".into()))
        );
        ws.close(1000, "").await.unwrap();
        // The close handshake: the server's echo came back before the TLS session ended.
        assert_eq!(ws.close_frame(), Some((1000, String::new())));
        // Each WebSocket has a connection of its own, never the pool's.
        assert_eq!(client.idle_connections(), 0);
        let url = format!("wss://localhost:{port}/close");
        let mut ws = client.websocket(&url).connect().await.unwrap();
        ws.send("x").await.unwrap();
        assert_eq!(ws.recv().await.unwrap(), None);
        assert_eq!(ws.close_frame(), Some((4000, "done".into())));
    });
}
