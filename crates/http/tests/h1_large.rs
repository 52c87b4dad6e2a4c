//! Bodies of 100 MiB both ways, streamed: the exact byte count and content arrive, and the
//! process's memory (server and client share it) does not grow with the size.
//!
//! The tests take turns (one lock) so that each one's memory reading is its own.

mod common;

use std::io;
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context, Poll};

use bytes::Bytes;
use common::{text_response, vm_rss, Client};
use volt_http::{get, post, Body, Config, Error, Request, Response, Router};

/// Bytes go `0, 1, ..., 250, 0, 1, ...`: a piece of any length that is a multiple of 251
/// continues the pattern, and a lost, repeated or reordered piece shows.
const PERIOD: usize = 251;
const PIECE: usize = PERIOD * 256; // 64,256 bytes
const PIECES: usize = 1632;
const TOTAL: u64 = (PIECE * PIECES) as u64; // just over 100 MiB

/// Allowed growth of resident memory over a whole transfer.
const MAX_GROWTH: u64 = 64 << 20;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn piece() -> Bytes {
    (0..PIECE)
        .map(|i| (i % PERIOD) as u8)
        .collect::<Vec<u8>>()
        .into()
}

/// Checks bytes against the pattern as they arrive, from any split.
#[derive(Default)]
struct PatternCheck {
    offset: u64,
    first_bad: Option<u64>,
}

impl PatternCheck {
    fn feed(&mut self, data: &[u8]) {
        if self.first_bad.is_none() {
            let start = (self.offset % PERIOD as u64) as usize;
            if let Some(i) = data
                .iter()
                .enumerate()
                .position(|(i, &b)| b != ((start + i) % PERIOD) as u8)
            {
                self.first_bad = Some(self.offset + i as u64);
            }
        }
        self.offset += data.len() as u64;
    }
}

/// `PIECES` clones of one piece.
struct Pieces {
    left: usize,
    piece: Bytes,
}

impl futures_core::Stream for Pieces {
    type Item = io::Result<Bytes>;
    fn poll_next(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.left == 0 {
            return Poll::Ready(None);
        }
        self.left -= 1;
        Poll::Ready(Some(Ok(self.piece.clone())))
    }
}

fn app() -> Router {
    Router::new()
        .route(
            "/upload",
            post(|mut req: Request| async move {
                let mut check = PatternCheck::default();
                while let Some(chunk) = req.body_mut().chunk().await? {
                    check.feed(&chunk);
                }
                Ok::<_, Error>(Response::text(format!(
                    "{} bytes, first bad {:?}",
                    check.offset, check.first_bad
                )))
            }),
        )
        .route(
            "/download/chunked",
            get(|_req| async {
                Response::bytes(Body::stream(Pieces {
                    left: PIECES,
                    piece: piece(),
                }))
            }),
        )
        .route(
            "/download/sized",
            get(|_req| async {
                Response::bytes(Body::sized_stream(
                    TOTAL,
                    Pieces {
                        left: PIECES,
                        piece: piece(),
                    },
                ))
            }),
        )
        .route(
            "/download/channel",
            get(|_req| async {
                let (mut tx, body) = Body::channel();
                volt_rt::spawn(async move {
                    let piece = piece();
                    for _ in 0..PIECES {
                        if tx.send(piece.clone()).await.is_err() {
                            return;
                        }
                    }
                });
                Response::bytes(body)
            }),
        )
}

fn big_bodies() -> Config {
    Config {
        max_body_bytes: 1 << 30,
        ..Default::default()
    }
}

/// Runs `transfer` between two memory readings (plus the ones it takes itself through
/// `sample`) and asserts the peak stayed within `MAX_GROWTH` of the start.
fn assert_flat_memory(transfer: impl FnOnce(&mut dyn FnMut())) {
    let before = vm_rss();
    let mut peak = before;
    let mut sample = || peak = peak.max(vm_rss());
    transfer(&mut sample);
    sample();
    let growth = peak.saturating_sub(before);
    eprintln!(
        "resident memory: {} KiB before, {} KiB peak",
        before >> 10,
        peak >> 10
    );
    assert!(
        growth < MAX_GROWTH,
        "resident memory grew by {} MiB (from {} MiB) over a {} MiB transfer",
        growth >> 20,
        before >> 20,
        TOTAL >> 20
    );
}

/// A warmed-up server: one request served, so lazily built state is not counted as growth.
fn warm_server() -> (common::TestServer, Client) {
    let server = common::start_with(1, big_bodies(), app());
    let mut c = server.connect();
    c.send(b"POST /upload HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\n\x00\x01\x02");
    assert_eq!(
        c.read_response().text(),
        text_response("200 OK", "", "3 bytes, first bad None")
    );
    (server, c)
}

#[test]
fn upload_100_mib_content_length_streamed() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (server, mut c) = warm_server();
    let piece = piece();
    assert_flat_memory(|sample| {
        c.send(
            format!("POST /upload HTTP/1.1\r\nHost: t\r\nContent-Length: {TOTAL}\r\n\r\n")
                .as_bytes(),
        );
        for i in 0..PIECES {
            c.send(&piece);
            if i % 64 == 0 {
                sample();
            }
        }
        assert_eq!(
            c.read_response().text(),
            text_response("200 OK", "", &format!("{TOTAL} bytes, first bad None"))
        );
    });
    server.shutdown();
}

#[test]
fn upload_100_mib_chunked_streamed() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (server, mut c) = warm_server();
    let mut framed = format!("{PIECE:x};piece\r\n").into_bytes();
    framed.extend_from_slice(&piece());
    framed.extend_from_slice(b"\r\n");
    assert_flat_memory(|sample| {
        c.send(b"POST /upload HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n");
        for i in 0..PIECES {
            c.send(&framed);
            if i % 64 == 0 {
                sample();
            }
        }
        c.send(b"0\r\nX-Done: yes\r\n\r\n");
        assert_eq!(
            c.read_response().text(),
            text_response("200 OK", "", &format!("{TOTAL} bytes, first bad None"))
        );
    });
    server.shutdown();
}

fn download(path: &str, framing_header: &str) {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (server, mut c) = warm_server();
    assert_flat_memory(|sample| {
        c.send(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
        let mut check = PatternCheck::default();
        let mut pieces = 0u64;
        let (status, head) = c.read_response_streaming(&mut |data| {
            check.feed(data);
            pieces += 1;
            if pieces % 256 == 0 {
                sample();
            }
        });
        assert_eq!(status, 200);
        assert!(head.contains(framing_header), "{head:?}");
        assert_eq!(check.offset, TOTAL);
        assert_eq!(check.first_bad, None);
    });
    // The connection is still usable after the body.
    c.send(b"POST /upload HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\n\r\n\x00");
    assert_eq!(
        c.read_response().text(),
        text_response("200 OK", "", "1 bytes, first bad None")
    );
    server.shutdown();
}

#[test]
fn download_100_mib_chunked_stream() {
    download("/download/chunked", "\r\nTransfer-Encoding: chunked\r\n");
}

#[test]
fn download_100_mib_sized_stream() {
    download(
        "/download/sized",
        &format!("\r\ncontent-length: {TOTAL}\r\n"),
    );
}

#[test]
fn download_100_mib_through_a_channel() {
    download("/download/channel", "\r\nTransfer-Encoding: chunked\r\n");
}

/// The client reads slowly: the server must wait for the socket instead of buffering the rest.
#[test]
fn slow_reader_of_a_large_download_gets_everything() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (server, mut c) = warm_server();
    c.send(b"GET /download/channel HTTP/1.1\r\nHost: t\r\n\r\n");
    let mut check = PatternCheck::default();
    let mut reads = 0u32;
    c.read_response_streaming(&mut |data| {
        check.feed(data);
        reads += 1;
        if reads < 20 {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    });
    assert_eq!(check.offset, TOTAL);
    assert_eq!(check.first_bad, None);
    server.shutdown();
}
