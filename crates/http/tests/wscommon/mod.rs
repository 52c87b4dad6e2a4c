//! What the tests of WebSocket over HTTP/2 (RFC 8441) and HTTP/3 (RFC 9220) share: the
//! routes their sessions run on ([`app`]), what those sessions saw ([`Seen`]), and the
//! client's end of a WebSocket on a stream ([`Ws`]), over either protocol's stream
//! ([`Tunnel`]).
#![allow(dead_code)] // each test binary uses a different part

use std::io;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use volt_http::{get, post, Error, Message, Request, Router, WebSocketUpgrade};
use volt_proto::ws::{encode_compressed_frame, encode_frame, Compressor, Decoder, Incoming};
use volt_proto::ws::{Opcode, Role};

pub async fn echo(mut ws: volt_http::WebSocket) -> io::Result<()> {
    while let Some(msg) = ws.recv().await? {
        ws.send(msg).await?;
    }
    Ok(())
}

/// What the tests' sessions saw, by name.
#[derive(Default)]
pub struct Seen {
    /// `/record`'s `recv` result after the client's reset.
    pub reset: Mutex<Option<io::ErrorKind>>,
    /// `/slow-reader`: let the session read.
    pub read_now: AtomicBool,
    /// `/big`: the session's send of its big message returned.
    pub sent_big: AtomicBool,
    /// Sessions started.
    pub sessions: AtomicUsize,
}

/// The routes; `/big` sends a binary message of `big` bytes, then echoes.
pub fn app(seen: Arc<Seen>, big: usize) -> Router {
    let ws = |f: fn(WebSocketUpgrade) -> WebSocketUpgrade| {
        let seen = seen.clone();
        get(move |req: Request| {
            let seen = seen.clone();
            async move {
                seen.sessions.fetch_add(1, Ordering::Relaxed);
                Ok::<_, Error>(f(req.websocket()?).on_upgrade(echo))
            }
        })
    };
    let record = seen.clone();
    let slow = seen.clone();
    let big_seen = seen.clone();
    Router::new()
        .route(
            "/",
            get(|req: Request| async move { format!("{:?}", req.version()) }),
        )
        .route("/echo", ws(|up| up.protocols(&["chat", "superchat"])))
        .route(
            "/deflate",
            ws(|up| up.deflate(Some(volt_proto::ws::DeflateConfig::new()))),
        )
        .route("/page", get(|_req: Request| async { "not a WebSocket" }))
        .route("/post", post(|_req: Request| async { "posted" }))
        .route(
            "/close",
            get(|req: Request| async move {
                Ok::<_, Error>(req.websocket()?.on_upgrade(|mut ws| async move {
                    ws.send("bye soon").await?;
                    ws.close(4000, "done").await
                }))
            }),
        )
        .route(
            "/handler-panics",
            get(|_req: Request| async move {
                if true {
                    panic!("the handler panics");
                }
                "unreachable"
            }),
        )
        .route(
            "/session-panics",
            get(|req: Request| async move {
                Ok::<_, Error>(req.websocket()?.on_upgrade(|mut ws| async move {
                    ws.recv().await?;
                    panic!("the session panics");
                }))
            }),
        )
        .route(
            "/record",
            get(move |req: Request| {
                let seen = record.clone();
                async move {
                    Ok::<_, Error>(req.websocket()?.on_upgrade(move |mut ws| async move {
                        ws.send("ready").await?;
                        let got = ws.recv().await;
                        *seen.reset.lock().unwrap() = Some(match &got {
                            Ok(_) => io::ErrorKind::Other,
                            Err(e) => e.kind(),
                        });
                        got.map(drop)
                    }))
                }
            }),
        )
        .route(
            "/slow-reader",
            get(move |req: Request| {
                let seen = slow.clone();
                async move {
                    Ok::<_, Error>(req.websocket()?.on_upgrade(move |mut ws| async move {
                        while !seen.read_now.load(Ordering::Acquire) {
                            volt_rt::time::sleep(Duration::from_millis(5)).await;
                        }
                        while let Some(msg) = ws.recv().await? {
                            let Message::Binary(b) = msg else { continue };
                            ws.send(format!("{} {}", b.len(), sum(&b))).await?;
                        }
                        Ok(())
                    }))
                }
            }),
        )
        .route(
            "/big",
            get(move |req: Request| {
                let seen = big_seen.clone();
                async move {
                    Ok::<_, Error>(req.websocket()?.on_upgrade(move |mut ws| async move {
                        ws.send(pattern(big)).await?;
                        seen.sent_big.store(true, Ordering::Release);
                        echo(ws).await
                    }))
                }
            }),
        )
}

pub fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i % 251) as u8).collect()
}

pub fn sum(b: &[u8]) -> u64 {
    b.iter().map(|&x| u64::from(x)).sum()
}

/// A mask that makes tests readable: every frame's is the same (any key is allowed).
pub const MASK: [u8; 4] = [1, 2, 3, 4];

pub const V13: (&str, &str) = ("sec-websocket-version", "13");

/// A stream carrying a WebSocket's bytes, as the client sees it.
pub trait Tunnel {
    /// Sends `bytes` on the stream.
    async fn send(&mut self, bytes: Vec<u8>);
    /// The next piece of what the server sent (maybe empty); `None` once it ended the stream
    /// cleanly. A reset panics.
    async fn recv(&mut self) -> Option<Bytes>;
    /// Ends our side of the stream.
    fn end(&mut self);
}

/// The client's end of a WebSocket on a stream: masked frames out, the server's bytes in.
pub struct Ws<T> {
    pub tunnel: T,
    pub buf: BytesMut,
}

impl<T: Tunnel> Ws<T> {
    pub fn new(tunnel: T) -> Ws<T> {
        let buf = BytesMut::new();
        Ws { tunnel, buf }
    }

    pub async fn frame(&mut self, fin: bool, opcode: Opcode, data: &[u8]) {
        let mut out = Vec::new();
        encode_frame(&mut out, fin, opcode, data, Some(MASK));
        self.tunnel.send(out).await;
    }

    /// Reads until `n` bytes are in `buf`; false if the stream ended first.
    pub async fn fill(&mut self, n: usize) -> bool {
        while self.buf.len() < n {
            match self.tunnel.recv().await {
                Some(chunk) => self.buf.extend_from_slice(&chunk),
                None => return false,
            }
        }
        true
    }

    /// The next `n` bytes; `None` if the stream ended first.
    pub async fn bytes(&mut self, n: usize) -> Option<Vec<u8>> {
        self.fill(n).await.then(|| self.buf.split_to(n).to_vec())
    }

    /// The next whole message or control frame the server sent, decoded.
    pub async fn next(&mut self, decoder: &mut Decoder) -> Incoming {
        loop {
            if let Some(m) = decoder.decode(&mut self.buf).expect("a valid frame") {
                return m;
            }
            let n = self.buf.len() + 1;
            assert!(self.fill(n).await, "the stream ended inside a message");
        }
    }

    /// Whether the server ended the stream with nothing more sent.
    pub async fn ended(&mut self) -> bool {
        loop {
            match self.tunnel.recv().await {
                // HTTP/2's END_STREAM in an empty DATA frame.
                Some(chunk) if chunk.is_empty() => continue,
                Some(_) => return false,
                None => return self.buf.is_empty(),
            }
        }
    }

    /// Sends `text` and checks its echo, byte for byte: an unmasked frame, FIN and text.
    pub async fn echoes(&mut self, text: &str) {
        assert!(text.len() < 126, "a one-byte length");
        self.frame(true, Opcode::Text, text.as_bytes()).await;
        let mut expected = vec![0x81, text.len() as u8];
        expected.extend(text.as_bytes());
        assert_eq!(self.bytes(expected.len()).await.unwrap(), expected);
    }

    /// Closes with `code` and checks the close frame echoing it, then the end of the stream.
    pub async fn closes(&mut self, code: u16) {
        self.frame(true, Opcode::Close, &code.to_be_bytes()).await;
        let [hi, lo] = code.to_be_bytes();
        assert_eq!(self.bytes(4).await.unwrap(), [0x88, 2, hi, lo]);
        assert!(self.ended().await, "the stream ends after the close");
        self.tunnel.end();
    }
}

/// The scenarios both protocols run the same way, once the handshake is done.
impl<T: Tunnel> Ws<T> {
    /// On `/echo`: text, binary, a fragmented message with a ping between its fragments, and
    /// a message over 64 KiB (its 8-byte length form, in many DATA frames), each echoed as the
    /// exact frame bytes.
    pub async fn echoes_exact_frames(&mut self) {
        self.echoes("hello").await;
        self.frame(true, Opcode::Binary, &[0, 1, 2, 255]).await;
        assert_eq!(self.bytes(6).await.unwrap(), [0x82, 4, 0, 1, 2, 255]);
        self.frame(false, Opcode::Text, b"frag").await;
        self.frame(true, Opcode::Ping, b"p!").await;
        self.frame(false, Opcode::Continuation, b"men").await;
        self.frame(true, Opcode::Continuation, b"ted").await;
        let pong = self.bytes(4).await.unwrap();
        assert_eq!(pong, b"\x8a\x02p!", "the pong at once");
        assert_eq!(self.bytes(12).await.unwrap(), b"\x81\x0afragmented");
        let big = pattern(100_000);
        self.frame(true, Opcode::Binary, &big).await;
        let head = self.bytes(10).await.unwrap();
        assert_eq!(head, [0x82, 127, 0, 0, 0, 0, 0, 1, 0x86, 0xa0]);
        assert_eq!(self.bytes(big.len()).await.unwrap(), big);
    }

    /// On `/close`: the session's message and close frame (4000), then, once the client
    /// answered, the end of the stream.
    pub async fn server_closes_first(&mut self) {
        assert_eq!(self.bytes(10).await.unwrap(), b"\x81\x08bye soon");
        assert_eq!(self.bytes(8).await.unwrap(), b"\x88\x06\x0f\xa0done");
        self.frame(true, Opcode::Close, b"\x0f\xa0").await;
        assert!(self.ended().await, "the stream ends after the close");
        self.tunnel.end();
    }

    /// On `/deflate`, permessage-deflate agreed with the defaults: a message compressed back
    /// (RSV1) whether the client's was or not, the contexts kept across messages both ways.
    pub async fn deflates_both_ways(&mut self) {
        let params = volt_proto::ws::DeflateParams {
            server_no_context_takeover: false,
            client_no_context_takeover: false,
            server_max_window_bits: 15,
            client_max_window_bits: 15,
        };
        let mut decoder = Decoder::with_deflate(Role::Client, 1 << 20, params);
        // Uncompressed from the client (a sender may).
        self.frame(true, Opcode::Text, b"Hello").await;
        assert!(self.fill(1).await);
        assert_eq!(self.buf[0], 0xc1, "FIN, RSV1, text");
        assert_eq!(
            self.next(&mut decoder).await,
            Incoming::Text("Hello".into())
        );
        let mut compressor = Compressor::new(6, false);
        for text in ["compress me, compress me", "compress me, compress me again"] {
            let mut deflated = Vec::new();
            compressor.compress(text.as_bytes(), &mut deflated);
            let mut out = Vec::new();
            encode_compressed_frame(&mut out, Opcode::Text, &deflated, Some(MASK));
            self.tunnel.send(out).await;
            assert_eq!(self.next(&mut decoder).await, Incoming::Text(text.into()));
        }
    }

    /// On `/session-panics`: a message makes the session panic, which closes with 1011, and
    /// the stream ends once the client answered.
    pub async fn session_panics_with_1011(&mut self) {
        self.frame(true, Opcode::Text, b"boom").await;
        assert_eq!(self.bytes(4).await.unwrap(), b"\x88\x02\x03\xf3", "1011");
        self.frame(true, Opcode::Close, b"\x03\xf3").await;
        assert!(self.ended().await);
    }

    /// After graceful shutdown started: the session's close (1001), answered, then the end of
    /// the stream.
    pub async fn shutdown_closes_with_1001(&mut self) {
        let reason = b"server shutting down";
        let mut expected = vec![0x88, 2 + reason.len() as u8, 0x03, 0xe9];
        expected.extend(reason);
        assert_eq!(self.bytes(expected.len()).await.unwrap(), expected);
        self.frame(true, Opcode::Close, b"\x03\xe9").await;
        assert!(self.ended().await, "the stream ends after the close");
    }
}
