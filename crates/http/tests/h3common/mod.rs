//! HTTP/3 test helpers: a volt server with HTTP/3 on (test certificates made with rcgen at
//! test time), and an independent client: quinn + h3 on a tokio runtime; for extended CONNECT,
//! which h3's client cannot send, a raw one on quinn ([`raw`]).
#![allow(dead_code)] // each test binary uses a different part

pub mod raw;

use std::future::poll_fn;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::{Buf, Bytes, BytesMut};
use volt_http::{CertKey, Config, Service, TlsConfig};

use crate::common::TestServer;
use crate::h2common::cert_for;

/// A certificate for `h3.test`: (PEM certificate, PEM key, DER certificate).
pub fn certs() -> (String, String, Vec<u8>) {
    cert_for(&["h3.test"])
}

/// One worker (or `workers`), `config`, TLS with `certs`, HTTP/3 on.
pub fn start_h3<S: Service>(
    workers: usize,
    config: Config,
    certs: &(String, String, Vec<u8>),
    service: S,
) -> TestServer {
    let tls = TlsConfig::new(CertKey::from_pem(certs.0.as_bytes(), certs.1.as_bytes()).unwrap())
        .build()
        .unwrap();
    crate::common::serve(
        crate::common::bound(workers, config).tls(tls).http3(true),
        service,
    )
}

/// A QUIC client trusting `der` only, offering ALPN `h3`.
pub fn quic_client(der: &[u8]) -> quinn::Endpoint {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(rustls_pki_types::CertificateDer::from(der.to_vec()))
        .unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"h3".to_vec()];
    let quic = quinn::crypto::rustls::QuicClientConfig::try_from(tls).unwrap();
    let mut endpoint = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    endpoint.set_default_client_config(quinn::ClientConfig::new(Arc::new(quic)));
    endpoint
}

/// A QUIC connection to `addr`, as `h3.test`.
pub async fn quic_connect(addr: SocketAddr, der: &[u8]) -> quinn::Connection {
    let endpoint = quic_client(der);
    endpoint
        .connect(addr, "h3.test")
        .unwrap()
        .await
        .expect("QUIC handshake with the server")
}

pub type SendRequest = h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>;

/// An HTTP/3 connection; its driver runs as a tokio task, whose result (the connection's
/// end) the handle gives.
pub async fn connect(
    addr: SocketAddr,
    der: &[u8],
) -> (
    SendRequest,
    tokio::task::JoinHandle<h3::error::ConnectionError>,
) {
    let conn = quic_connect(addr, der).await;
    let (mut driver, send) = h3::client::new(h3_quinn::Connection::new(conn))
        .await
        .expect("HTTP/3 connection setup");
    let driver = tokio::spawn(async move { poll_fn(|cx| driver.poll_close(cx)).await });
    (send, driver)
}

/// A finished response.
pub struct H3Response {
    pub status: u16,
    pub headers: http::HeaderMap,
    pub body: Bytes,
}

impl H3Response {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Sends `method path` with `chunks` as the body (each its own DATA frame) and reads the
/// whole response.
pub async fn send(
    client: &mut SendRequest,
    method: &str,
    path: &str,
    chunks: &[Bytes],
) -> Result<H3Response, h3::error::StreamError> {
    let req = http::Request::builder()
        .method(method)
        .uri(format!("https://h3.test{path}"))
        .body(())
        .unwrap();
    let mut stream = client.send_request(req).await?;
    for chunk in chunks {
        stream.send_data(chunk.clone()).await?;
    }
    stream.finish().await?;
    read(&mut stream).await
}

/// Reads a response and its whole body.
pub async fn read<S: h3::quic::RecvStream>(
    stream: &mut h3::client::RequestStream<S, Bytes>,
) -> Result<H3Response, h3::error::StreamError> {
    let head = stream.recv_response().await?;
    let mut body = BytesMut::new();
    while let Some(mut data) = stream.recv_data().await? {
        while data.has_remaining() {
            let chunk = data.chunk();
            body.extend_from_slice(chunk);
            let n = chunk.len();
            data.advance(n);
        }
    }
    Ok(H3Response {
        status: head.status().as_u16(),
        headers: head.headers().clone(),
        body: body.freeze(),
    })
}

/// Shuts `server` down gracefully from an async test, whose runtime keeps the client's
/// connections running meanwhile (they acknowledge the last responses, which the server
/// waits for before it closes them).
pub async fn shut_down(server: TestServer) {
    tokio::task::spawn_blocking(move || server.shutdown())
        .await
        .unwrap();
}
