//! HTTPS: ALPN chooses HTTP/2 or HTTP/1.1, SNI chooses the certificate, sessions resume, and a
//! bad client hello or plaintext on the TLS port closes that connection only. Certificates are
//! made with rcgen when the tests run; none is committed.

mod common;
mod h2common;

use std::io::{Read, Write};
use std::net::SocketAddr;

use bytes::Bytes;
use h2common::*;
use volt_http::{get as route_get, CertKey, Config, Request, Router, TlsConfig};

struct Certs {
    a: (String, String, Vec<u8>),
    b: (String, String, Vec<u8>),
}

fn certs() -> Certs {
    Certs {
        a: cert_for(&["a.test"]),
        b: cert_for(&["b.test"]),
    }
}

/// A TLS server: `a.test`'s certificate by default, `b.test`'s by SNI.
fn start(certs: &Certs) -> common::TestServer {
    let tls =
        TlsConfig::new(CertKey::from_pem(certs.a.0.as_bytes(), certs.a.1.as_bytes()).unwrap())
            .with_sni(
                "b.test",
                CertKey::from_pem(certs.b.0.as_bytes(), certs.b.1.as_bytes()).unwrap(),
            )
            .build()
            .unwrap();
    let app = Router::new().route(
        "/",
        route_get(|req: Request| async move { format!("hello over {:?}", req.version()) }),
    );
    common::start_tls(1, Config::default(), tls, app)
}

/// One worker serving `hi` at `/` with `config`, over TLS with `a.test`'s certificate only.
fn start_hi(certs: &Certs, config: Config) -> common::TestServer {
    let tls =
        TlsConfig::new(CertKey::from_pem(certs.a.0.as_bytes(), certs.a.1.as_bytes()).unwrap())
            .build()
            .unwrap();
    let app = Router::new().route("/", route_get(|_req: Request| async { "hi" }));
    common::start_tls(1, config, tls, app)
}

fn http1_get(tls: &mut TlsClient) -> String {
    tls.write_all(b"GET / HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut out = Vec::new();
    // rustls reports a close without close_notify as an error (a possible truncation).
    tls.read_to_end(&mut out)
        .expect("the server ends the session with close_notify");
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn http2_over_tls_ends_with_close_notify() {
    let certs = certs();
    let server = start(&certs);
    let config = client_config(&[&certs.a.2], &[b"h2"]);
    let mut tls = tls_connect(server.addr(), config, "a.test").unwrap();
    // The client says goodbye at once; the server answers with its own GOAWAY and closes.
    let mut hello = client_start();
    hello.extend(frame(GOAWAY, 0, 0, &[0; 8]));
    tls.write_all(&hello).unwrap();
    let mut out = Vec::new();
    tls.read_to_end(&mut out)
        .expect("the server ends the session with close_notify");
    let goaway = out.windows(4).any(|w| w == [0, 0, 8, GOAWAY]);
    assert!(goaway, "a GOAWAY frame in {out:?}");
}

#[test]
fn alpn_h2_serves_http2() {
    let certs = certs();
    let server = start(&certs);
    let addr = server.addr();
    let config = client_config(&[&certs.a.2], &[b"h2", b"http/1.1"]);
    let tls = tls_connect(addr, config.clone(), "a.test").unwrap();
    assert_eq!(tls.conn.alpn_protocol(), Some(&b"h2"[..]));
    drop(tls);
    // And HTTP/2 works over it (tokio-rustls on volt-rt, then the h2 client).
    let text = volt_rt::block_on(async move {
        let tcp = volt_rt::net::TcpStream::connect(addr).await.unwrap();
        let name = rustls_pki_types::ServerName::try_from("a.test").unwrap();
        let tls = tokio_rustls::TlsConnector::from(config)
            .connect(name, tcp)
            .await
            .unwrap();
        let (client, conn) = h2::client::handshake(tls).await.unwrap();
        volt_rt::spawn(async move {
            let _ = conn.await;
        });
        let mut client = client;
        let req = http::Request::get("https://a.test/").body(()).unwrap();
        send(&mut client, req, Bytes::new()).await.text()
    });
    assert_eq!(text, "hello over HTTP/2.0");
}

#[test]
fn alpn_http11_or_none_serves_http1() {
    let certs = certs();
    let server = start(&certs);
    for alpn in [&[&b"http/1.1"[..]][..], &[]] {
        let config = client_config(&[&certs.a.2], alpn);
        let mut tls = tls_connect(server.addr(), config, "a.test").unwrap();
        let expected = if alpn.is_empty() {
            None
        } else {
            Some(&b"http/1.1"[..])
        };
        assert_eq!(tls.conn.alpn_protocol(), expected);
        let response = http1_get(&mut tls);
        assert!(response.starts_with("HTTP/1.1 200 OK\r\n"), "{response}");
        assert!(response.ends_with("hello over HTTP/1.1"), "{response}");
    }
}

#[test]
fn sni_picks_the_certificate() {
    let certs = certs();
    let server = start(&certs);
    let addr = server.addr();
    // Trusting both roots: a handshake as `b.test` succeeds only with b's certificate, which
    // is then the one presented.
    let config = client_config(&[&certs.a.2, &certs.b.2], &[b"http/1.1"]);
    let b = tls_connect(addr, config.clone(), "b.test").unwrap();
    assert_eq!(
        b.conn.peer_certificates().unwrap()[0].as_ref(),
        &certs.b.2[..]
    );
    let a = tls_connect(addr, config.clone(), "a.test").unwrap();
    assert_eq!(
        a.conn.peer_certificates().unwrap()[0].as_ref(),
        &certs.a.2[..]
    );
    // An unknown name gets the default (a), which a client expecting b refuses.
    let only_b = client_config(&[&certs.b.2], &[b"http/1.1"]);
    assert!(tls_connect(addr, only_b, "c.test").is_err());
}

#[test]
fn sessions_resume() {
    let certs = certs();
    let server = start(&certs);
    // One client config: its session store keeps the ticket between connections.
    let config = client_config(&[&certs.a.2], &[b"http/1.1"]);
    let mut first = tls_connect(server.addr(), config.clone(), "a.test").unwrap();
    assert_eq!(
        first.conn.handshake_kind(),
        Some(rustls::HandshakeKind::Full)
    );
    // TLS 1.3 tickets arrive after the handshake: a request and its response bring them in.
    assert!(http1_get(&mut first).starts_with("HTTP/1.1 200 OK"));
    let second = tls_connect(server.addr(), config, "a.test").unwrap();
    assert_eq!(
        second.conn.handshake_kind(),
        Some(rustls::HandshakeKind::Resumed)
    );
}

/// Bytes that are not a TLS client hello close that connection only: one opened before it and
/// one opened after it still work.
fn assert_closed_alone(garbage: &[u8]) {
    let certs = certs();
    let server = start(&certs);
    let addr = server.addr();
    let config = client_config(&[&certs.a.2], &[b"http/1.1"]);
    let mut before = tls_connect(addr, config.clone(), "a.test").unwrap();

    let mut c = server_raw(addr);
    c.send(garbage);
    let rest = c.read_to_end(); // an alert record at most, then the close
    assert!(rest.len() < 64, "expected a close, got {rest:?}");

    assert!(http1_get(&mut before).ends_with("hello over HTTP/1.1"));
    let mut after = tls_connect(addr, config, "a.test").unwrap();
    assert!(http1_get(&mut after).ends_with("hello over HTTP/1.1"));
}

fn server_raw(addr: SocketAddr) -> common::Client {
    common::Client::connect(addr)
}

#[test]
fn plaintext_on_the_tls_port_closes_that_connection() {
    assert_closed_alone(b"GET / HTTP/1.1\r\nHost: a.test\r\n\r\n");
}

#[test]
fn bad_client_hello_closes_that_connection() {
    // A handshake record whose body is not a client hello.
    assert_closed_alone(&[
        0x16, 0x03, 0x01, 0x00, 0x08, 0x01, 0x00, 0x00, 0x04, 0xde, 0xad, 0xbe, 0xef,
    ]);
}

#[test]
fn certificate_and_key_must_match() {
    let certs = certs();
    let err = CertKey::from_pem(certs.a.0.as_bytes(), certs.b.1.as_bytes()).unwrap_err();
    assert!(err.to_string().contains("certificate and key"), "{err}");
}

/// Graceful shutdown closes an idle keep-alive connection over TLS at once, as over TCP (it
/// once waited out the shutdown timeout: the TLS transport waits for a request inside its read,
/// where the connection did not count as idle).
#[test]
fn shutdown_closes_an_idle_tls_connection() {
    let certs = certs();
    // Longer than the client's read timeout: a server waiting it out fails the read below.
    let config = Config {
        shutdown_timeout: std::time::Duration::from_secs(600),
        ..Config::default()
    };
    let server = start_hi(&certs, config);
    let config = client_config(&[&certs.a.2], &[b"http/1.1"]);
    let mut tls = tls_connect(server.addr(), config, "a.test").unwrap();
    tls.write_all(b"GET / HTTP/1.1\r\nHost: a.test\r\n\r\n")
        .unwrap();
    let mut response = Vec::new();
    while !response.ends_with(b"\r\n\r\nhi") {
        let mut buf = [0; 512];
        let n = tls.read(&mut buf).unwrap();
        assert!(n > 0, "closed before the answer: {response:?}");
        response.extend_from_slice(&buf[..n]);
    }
    server.handle().shutdown();
    // Closed (with or without close_notify), not left open until the shutdown timeout.
    let mut rest = Vec::new();
    match tls.read_to_end(&mut rest) {
        Ok(_) => {}
        Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof, "{e}"),
    }
    server.join().expect("serve returned Ok");
}

/// HTTP/1 over TLS keeps the connection and answers pipelined requests in order: three
/// requests in one write (one TLS record), then one more on the same session.
#[test]
fn http1_over_tls_keep_alive_and_pipelining() {
    let certs = certs();
    let server = start(&certs);
    let config = client_config(&[&certs.a.2], &[b"http/1.1"]);
    let mut tls = tls_connect(server.addr(), config, "a.test").unwrap();
    let one = "GET / HTTP/1.1\r\nHost: a.test\r\n\r\n";
    tls.write_all(one.repeat(3).as_bytes()).unwrap();
    let body = "hello over HTTP/1.1";
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while got
        .windows(body.len())
        .filter(|w| *w == body.as_bytes())
        .count()
        < 3
    {
        let n = tls
            .read(&mut buf)
            .expect("three answers on the kept connection");
        assert!(n > 0, "closed after {:?}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&got);
    assert_eq!(text.matches("HTTP/1.1 200 OK\r\n").count(), 3, "{text}");
    assert!(text.ends_with(body), "{text}");
    assert!(http1_get(&mut tls).ends_with(body));
}

/// Starts the `hi` server with `config`, opens a connection that stops in the middle of its
/// handshake (a handshake record announcing 512 bytes, of which 5 arrive), and serves a whole
/// exchange on a second connection made after it: the stalled one has been accepted (one
/// worker, accepted in order) and is in its handshake. Returns the server and the stalled one.
fn stalled_in_a_handshake(certs: &Certs, config: Config) -> (common::TestServer, common::Client) {
    let server = start_hi(certs, config);
    let addr = server.addr();
    let mut stalled = server_raw(addr);
    stalled.send(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03]);
    let config = client_config(&[&certs.a.2], &[b"http/1.1"]);
    let mut other = tls_connect(addr, config, "a.test").unwrap();
    assert!(http1_get(&mut other).ends_with("hi"));
    (server, stalled)
}

/// A client that stops in the middle of its handshake (half a client hello, then silence) is
/// closed once `header_read_timeout` passed, and meanwhile others are served.
#[test]
fn a_handshake_that_stops_midway_times_out() {
    let certs = certs();
    let config = Config {
        header_read_timeout: std::time::Duration::from_secs(1),
        ..Config::default()
    };
    let (_server, mut stalled) = stalled_in_a_handshake(&certs, config);
    // Closed by the server (the client's read guard is far longer than the timeout).
    let rest = stalled.read_to_end();
    assert!(rest.len() < 64, "expected a close, got {rest:?}");
}

/// Graceful shutdown closes a connection still in its handshake at once, as it does an idle
/// one, instead of waiting out `header_read_timeout` (it once did: the handshake did not watch
/// for shutdown, and a connection in it was not counted idle).
#[test]
fn shutdown_closes_a_connection_in_its_handshake() {
    let certs = certs();
    // Both far longer than the client's read guard: a server waiting either out fails the read.
    let config = Config {
        header_read_timeout: std::time::Duration::from_secs(600),
        shutdown_timeout: std::time::Duration::from_secs(600),
        ..Config::default()
    };
    let (server, mut stalled) = stalled_in_a_handshake(&certs, config);
    server.handle().shutdown();
    let rest = stalled.read_to_end();
    assert!(rest.len() < 64, "expected a close, got {rest:?}");
    server.join().expect("serve returned Ok");
}

/// A 413 over TLS to a client uploading 16 MiB behind the head: the server ends the session
/// with `close_notify`, then reads and discards the upload (lingering close), so the upload
/// goes through and the answer is read whole. Before lingering, the close with the upload
/// unread was a reset, and the client's writes failed.
#[test]
fn a_413_over_tls_reaches_a_client_still_uploading() {
    let certs = certs();
    let config = Config {
        max_body_bytes: 1024,
        linger_timeout: std::time::Duration::from_secs(600),
        max_linger_bytes: 64 << 20,
        ..Config::default()
    };
    let server = start_hi(&certs, config);
    let config = client_config(&[&certs.a.2], &[b"http/1.1"]);
    let mut tls = tls_connect(server.addr(), config, "a.test").unwrap();
    let mut upload =
        b"POST / HTTP/1.1\r\nHost: a.test\r\nContent-Length: 100000000\r\n\r\n".to_vec();
    upload.resize(upload.len() + (16 << 20), b'x');
    tls.write_all(&upload).expect("the upload goes through");
    let mut out = Vec::new();
    tls.read_to_end(&mut out)
        .expect("the server ends the session with close_notify");
    let text = String::from_utf8_lossy(&out);
    assert!(
        text.starts_with("HTTP/1.1 413 Payload Too Large\r\n"),
        "{text}"
    );
    assert!(text.ends_with("over the limit of 1024\n"), "{text}");
}
