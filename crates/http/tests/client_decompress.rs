//! The client's content decoding: against volt's own `Compress` (HTTP/1.1 and h2c), and
//! against scripted raw servers sending exact gzip, deflate (zlib and raw) and br bytes,
//! corrupt, truncated, or a bomb read piece by piece or whole within `max_decoded_body`.

mod clientcommon;
mod common;
mod h2common;

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use clientcommon::{block_on_get, raw_server, read_head, url};
use volt_http::header::{HeaderName, HeaderValue};
use volt_http::{get, Body, Client, Compress, Method, Request, Response, Router};

fn text() -> String {
    "compressible text for the client, ".repeat(100)
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// `deflate` as RFC 9110 means it (zlib), or raw as some servers send it.
fn deflate(data: &[u8], zlib: bool) -> Vec<u8> {
    let level = flate2::Compression::default();
    if zlib {
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), level);
        e.write_all(data).unwrap();
        e.finish().unwrap()
    } else {
        let mut e = flate2::write::DeflateEncoder::new(Vec::new(), level);
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }
}

fn br(data: &[u8]) -> Vec<u8> {
    let mut e = brotli::CompressorWriter::new(Vec::new(), 4096, 5, 22);
    e.write_all(data).unwrap();
    e.into_inner()
}

fn app(first_seen: Arc<AtomicBool>) -> Compress<Router> {
    Compress::new(
        Router::new()
            .route("/text", get(|_req| async { text() }))
            .route(
                "/corrupt",
                get(|_req| async {
                    Response::text("not gzip at all").with_header("content-encoding", "gzip")
                }),
            )
            .route(
                "/asked",
                get(|req: Request| async move {
                    let asked = req.header("accept-encoding").unwrap_or("none").to_owned();
                    format!("{asked}\n{}", text())
                }),
            )
            .route(
                "/events",
                get(move |_req: Request| {
                    let first_seen = first_seen.clone();
                    async move {
                        let (mut tx, body) = Body::channel();
                        volt_rt::spawn(async move {
                            tx.send("data: first\n\n").await.unwrap();
                            while !first_seen.load(Ordering::SeqCst) {
                                volt_rt::time::sleep(Duration::from_millis(5)).await;
                            }
                            tx.send("data: second\n\n").await.unwrap();
                        });
                        Response::text(body)
                            .with_content_type(HeaderValue::from_static("text/event-stream"))
                    }
                }),
            ),
    )
}

/// The same checks over HTTP/1.1 and h2c.
fn against_compress(builder: fn() -> volt_http::ClientBuilder) {
    let first_seen = Arc::new(AtomicBool::new(false));
    let server = common::start(app(first_seen.clone()));
    let addr = server.addr();
    volt_rt::block_on(async move {
        let client = builder().build();
        // Asks for both, gets br, reads text: the coding's headers are gone.
        let r = client.get(&url(addr, "/asked")).send().await.unwrap();
        assert_eq!(r.header("content-encoding"), None);
        assert_eq!(r.header("content-length"), None);
        assert_eq!(r.header("vary"), Some("Accept-Encoding"));
        assert_eq!(
            r.text().await.unwrap(),
            format!("gzip, deflate, br\n{}", text())
        );
        // A stream is decoded as it comes: the first event before the second is sent.
        let mut r = client.get(&url(addr, "/events")).send().await.unwrap();
        assert_eq!(r.chunk().await.unwrap().unwrap(), "data: first\n\n");
        first_seen.store(true, Ordering::SeqCst);
        let mut rest = Vec::new();
        while let Some(piece) = r.chunk().await.unwrap() {
            rest.extend_from_slice(&piece);
        }
        assert_eq!(rest, b"data: second\n\n");
        // A body that is not what its coding says: an error, not a panic nor garbage.
        let r = client.get(&url(addr, "/corrupt")).send().await.unwrap();
        let e = r.bytes().await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{e}");
        // Its own Accept-Encoding: the bytes as sent, headers as sent.
        let r = client
            .get(&url(addr, "/text"))
            .header(
                HeaderName::from_static("accept-encoding"),
                HeaderValue::from_static("gzip"),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(r.header("content-encoding"), Some("gzip"));
        let packed = r.bytes().await.unwrap();
        let mut plain = Vec::new();
        io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&packed[..]), &mut plain).unwrap();
        assert_eq!(plain, text().as_bytes());
        // HEAD: no body to decode, the headers as sent.
        let r = client
            .request(Method::HEAD, &url(addr, "/text"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.header("vary"), Some("Accept-Encoding"));
        assert_eq!(r.bytes().await.unwrap(), "");
        // Turned off: nothing asked, nothing compressed.
        let plain = builder().decompress(false).build();
        let r = plain.get(&url(addr, "/asked")).send().await.unwrap();
        assert_eq!(r.header("content-encoding"), None);
        assert_eq!(r.text().await.unwrap(), format!("none\n{}", text()));
    });
}

#[test]
fn decodes_volts_own_compression_on_http1() {
    against_compress(Client::builder);
}

#[test]
fn decodes_volts_own_compression_on_http2() {
    against_compress(|| Client::builder().http2_prior_knowledge());
}

/// A server answering every request with a body in `coding`, with a `Content-Length`.
fn serving(coding: &'static str, body: Vec<u8>) -> std::net::SocketAddr {
    raw_server(move |mut stream| {
        let head = read_head(&mut stream);
        assert!(
            head.contains("accept-encoding: gzip, deflate, br\r\n"),
            "{head}"
        );
        let answer = format!(
            "HTTP/1.1 200 OK\r\nContent-Encoding: {coding}\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        let _ = stream.write_all(&[answer.as_bytes(), &body].concat());
    })
}

#[test]
fn exact_gzip_and_br_bytes_decode() {
    let plain = text();
    let plain = plain.as_str();
    for (coding, body, expected) in [
        ("gzip", gzip(plain.as_bytes()), plain),
        ("x-gzip", gzip(plain.as_bytes()), plain),
        ("BR", br(plain.as_bytes()), plain),
        ("deflate", deflate(plain.as_bytes(), true), plain),
        ("Deflate", deflate(plain.as_bytes(), false), plain),
        // Two gzip members are their concatenation (RFC 1952 §2.2).
        ("gzip", [gzip(b"one "), gzip(b"two")].concat(), "one two"),
    ] {
        let (status, got) = block_on_get(&url(serving(coding, body), "/")).unwrap();
        assert_eq!(status, 200);
        assert_eq!(got.unwrap(), expected.as_bytes(), "{coding}");
    }
    // An unknown coding, or two stacked: left alone.
    let body = gzip(b"stacked");
    let addr = serving("gzip, identity", body.clone());
    volt_rt::block_on(async move {
        let r = Client::new().get(&url(addr, "/")).send().await.unwrap();
        assert_eq!(r.header("content-encoding"), Some("gzip, identity"));
        assert_eq!(r.bytes().await.unwrap(), body);
    });
}

#[test]
fn corrupt_or_truncated_bodies_are_errors() {
    let plain = text();
    let mut flipped = gzip(plain.as_bytes());
    let at = flipped.len() - 5;
    flipped[at] ^= 0xff; // the stored CRC-32
    let packed = gzip(plain.as_bytes());
    let cut = packed[..packed.len() - 4].to_vec();
    let bad_br = br(plain.as_bytes())[..20].to_vec();
    let mut bad_adler = deflate(plain.as_bytes(), true);
    *bad_adler.last_mut().unwrap() ^= 1;
    let zlib = deflate(plain.as_bytes(), true);
    let cut_zlib = zlib[..zlib.len() - 2].to_vec();
    for (coding, body) in [
        ("gzip", b"not gzip at all".to_vec()),
        ("gzip", flipped),
        ("gzip", cut),
        ("br", bad_br),
        ("br", b"\xff\xff\xff garbage".to_vec()),
        ("deflate", bad_adler),
        ("deflate", cut_zlib),
        ("deflate", b"\xff not deflate".to_vec()),
    ] {
        let (_, got) = block_on_get(&url(serving(coding, body), "/")).unwrap();
        let e = got.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{coding}: {e}");
    }
}

#[test]
fn a_bomb_is_read_piece_by_piece() {
    // 64 MiB of zeros in about 64 KiB of gzip.
    let zeros = vec![0u8; 64 << 20];
    let bomb = gzip(&zeros);
    drop(zeros);
    assert!(bomb.len() < 100 * 1024);
    let addr = serving("gzip", bomb);
    volt_rt::block_on(async move {
        let mut r = Client::new().get(&url(addr, "/")).send().await.unwrap();
        let (mut total, mut largest) = (0usize, 0usize);
        while let Some(piece) = r.chunk().await.unwrap() {
            assert!(piece.iter().all(|&b| b == 0));
            total += piece.len();
            largest = largest.max(piece.len());
        }
        assert_eq!(total, 64 << 20);
        assert!(largest <= 32 * 1024, "{largest}");
    });
}

#[test]
fn a_bomb_read_whole_stops_at_max_decoded_body() {
    // 8 MiB of zeros in about 8 KiB of gzip, and in raw deflate.
    let zeros = vec![0u8; 8 << 20];
    for (coding, bomb) in [("gzip", gzip(&zeros)), ("deflate", deflate(&zeros, false))] {
        assert!(bomb.len() < 16 * 1024);
        let addr = serving(coding, bomb);
        volt_rt::block_on(async move {
            let client = Client::builder().max_decoded_body(1 << 20).build();
            for whole in 0..2 {
                let r = client.get(&url(addr, "/")).send().await.unwrap();
                let e = match whole {
                    0 => r.bytes().await.unwrap_err(),
                    _ => r.text().await.unwrap_err(),
                };
                assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{coding}: {e}");
                assert!(
                    e.to_string().contains("limit of 1048576 bytes"),
                    "{coding}: {e}"
                );
            }
            // Piece by piece it is not limited: all 8 MiB come, at most 32 KiB at a time.
            let mut r = client.get(&url(addr, "/")).send().await.unwrap();
            let mut total = 0;
            while let Some(piece) = r.chunk().await.unwrap() {
                assert!(piece.len() <= 32 * 1024);
                total += piece.len();
            }
            assert_eq!(total, 8 << 20);
            // A limit of exactly the decoded size passes; one byte less does not.
            let exact = Client::builder().max_decoded_body(8 << 20).build();
            let got = exact.get(&url(addr, "/")).send().await.unwrap().bytes();
            assert_eq!(got.await.unwrap().len(), 8 << 20);
            let under = Client::builder().max_decoded_body((8 << 20) - 1).build();
            let got = under.get(&url(addr, "/")).send().await.unwrap().bytes();
            assert_eq!(got.await.unwrap_err().kind(), io::ErrorKind::InvalidData);
        });
    }
    // A body that came without a coding is not the limit's business.
    let plain = vec![b'x'; 4096];
    let addr = raw_server(move |mut stream| {
        read_head(&mut stream);
        let head = "HTTP/1.1 200 OK\r\nContent-Length: 4096\r\n\r\n";
        let _ = stream.write_all(&[head.as_bytes(), &plain].concat());
    });
    volt_rt::block_on(async move {
        let client = Client::builder().max_decoded_body(100).build();
        let got = client.get(&url(addr, "/")).send().await.unwrap().bytes();
        assert_eq!(got.await.unwrap(), vec![b'x'; 4096]);
    });
}

#[test]
fn an_empty_body_with_a_coding_is_empty() {
    let addr = serving("gzip", Vec::new());
    let (status, got) = block_on_get(&url(addr, "/")).unwrap();
    assert_eq!((status.as_u16(), got.unwrap()), (200, Bytes::new()));
}

#[test]
fn a_range_asks_for_no_coding_and_a_part_is_not_decoded() {
    let part = gzip(text().as_bytes())[..10].to_vec();
    let sent = part.clone();
    let addr = raw_server(move |mut stream| loop {
        let head = read_head(&mut stream);
        if head.is_empty() {
            return;
        }
        let asked = head.contains("accept-encoding");
        let answer = format!(
            "HTTP/1.1 206 Partial Content\r\nContent-Encoding: gzip\r\nX-Asked: {asked}\r\n\
             Content-Range: bytes 0-9/100\r\nContent-Length: 10\r\n\r\n"
        );
        let _ = stream.write_all(&[answer.as_bytes(), &sent].concat());
    });
    volt_rt::block_on(async move {
        let client = Client::new();
        let r = client
            .get(&url(addr, "/"))
            .header(
                HeaderName::from_static("range"),
                HeaderValue::from_static("bytes=0-9"),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(r.header("x-asked"), Some("false"));
        assert_eq!(r.header("content-encoding"), Some("gzip"));
        assert_eq!(r.bytes().await.unwrap(), part);
        // A 206 to a request that asked for codings: a part, passed as it is.
        let r = client.get(&url(addr, "/")).send().await.unwrap();
        assert_eq!(r.header("x-asked"), Some("true"));
        assert_eq!(r.header("content-encoding"), Some("gzip"));
        assert_eq!(r.bytes().await.unwrap(), part);
    });
}
