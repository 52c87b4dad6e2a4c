//! HTTP/2 and TLS test helpers: an `h2` client on volt-rt, raw frames, test certificates made
//! with rcgen at test time, and external tools that must exist under CI.
#![allow(dead_code)] // each test binary uses a different part

use std::io::{self, Read};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::sync::Arc;

use bytes::Bytes;
use h2::client::SendRequest;

use crate::common::HANG_GUARD;

/// Opens an h2c (prior knowledge) connection; its driver runs as a task on the current
/// volt-rt runtime.
pub async fn connect_h2c(addr: SocketAddr) -> SendRequest<Bytes> {
    let tcp = volt_rt::net::TcpStream::connect(addr)
        .await
        .expect("connecting to the test server");
    let (client, conn) = h2::client::handshake(tcp).await.expect("HTTP/2 handshake");
    volt_rt::spawn(async move {
        let _ = conn.await;
    });
    client
}

/// A finished response: status, headers, the whole body, trailers.
pub struct H2Response {
    pub status: u16,
    pub headers: http::HeaderMap,
    pub body: Bytes,
    pub trailers: Option<http::HeaderMap>,
}

impl H2Response {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Sends `req` with `body` (none if empty) and reads the whole response.
pub async fn send(
    client: &mut SendRequest<Bytes>,
    req: http::Request<()>,
    body: Bytes,
) -> H2Response {
    let mut client = client.clone().ready().await.expect("connection ready");
    let end = body.is_empty();
    let (response, mut stream) = client.send_request(req, end).expect("sending the request");
    if !end {
        send_body(&mut stream, body).await;
        stream
            .send_data(Bytes::new(), true)
            .expect("ending the body");
    }
    read_response(response).await
}

/// One GET of `path` with the header `fields`, over a new h2c connection.
pub async fn get_h2c(addr: SocketAddr, path: &str, fields: &[(&str, &str)]) -> H2Response {
    let mut client = connect_h2c(addr).await;
    let mut req = http::Request::get(format!("http://t{path}"));
    for &(name, value) in fields {
        req = req.header(name, value);
    }
    send(&mut client, req.body(()).unwrap(), Bytes::new()).await
}

/// Sends `body` within the stream's flow-control window.
pub async fn send_body(stream: &mut h2::SendStream<Bytes>, mut body: Bytes) {
    while !body.is_empty() {
        stream.reserve_capacity(body.len());
        let n = std::future::poll_fn(|cx| stream.poll_capacity(cx))
            .await
            .expect("stream open")
            .expect("capacity");
        let part = body.split_to(n.min(body.len()));
        stream.send_data(part, false).expect("sending data");
    }
}

pub async fn read_response(response: h2::client::ResponseFuture) -> H2Response {
    let response = response.await.expect("a response");
    let (parts, mut body) = response.into_parts();
    let mut all = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.expect("body chunk");
        let _ = body.flow_control().release_capacity(chunk.len());
        all.extend_from_slice(&chunk);
    }
    let trailers = body.trailers().await.expect("trailers");
    H2Response {
        status: parts.status.as_u16(),
        headers: parts.headers,
        body: all.into(),
        trailers,
    }
}

pub fn get(path: &str) -> http::Request<()> {
    http::Request::get(format!("http://t{path}"))
        .body(())
        .unwrap()
}

// ---- raw frames ----

pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
pub const DATA: u8 = 0x0;
pub const HEADERS: u8 = 0x1;
pub const RST_STREAM: u8 = 0x3;
pub const SETTINGS: u8 = 0x4;
pub const PING: u8 = 0x6;
pub const GOAWAY: u8 = 0x7;
pub const WINDOW_UPDATE: u8 = 0x8;
pub const CONTINUATION: u8 = 0x9;
pub const END_STREAM: u8 = 0x1;
pub const END_HEADERS: u8 = 0x4;
pub const ENHANCE_YOUR_CALM: u32 = 0xb;

/// One frame: 9-byte header and payload.
pub fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len();
    let mut f = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// An HPACK block for `GET /` (or `POST /`) with `:authority: t`, from the static table.
pub fn request_block(post: bool) -> Vec<u8> {
    let method = if post { 0x83 } else { 0x82 };
    vec![method, 0x86, 0x84, 0x41, 0x01, b't']
}

/// An HPACK block for `method path` (`GET` 0x82, `POST` 0x83) with `:authority: t`, `:path`
/// a literal.
pub fn block_for(method: u8, path: &[u8]) -> Vec<u8> {
    let mut b = vec![method, 0x86, 0x04, path.len() as u8];
    b.extend_from_slice(path);
    b.extend_from_slice(&[0x41, 0x01, b't']);
    b
}

/// A frame as [`next_frame`] reads it: kind, flags, stream id, payload.
pub type Frame = (u8, u8, u32, Vec<u8>);

/// Sends a PING and returns every frame read until its ACK: every frame the server sent
/// before it handled the PING.
pub fn frames_until_ping_ack(
    tcp: &mut TcpStream,
    buf: &mut Vec<u8>,
    opaque: &[u8; 8],
) -> Vec<Frame> {
    io::Write::write_all(tcp, &frame(PING, 0, 0, opaque)).unwrap();
    let mut seen = Vec::new();
    loop {
        let f = next_frame(tcp, buf);
        if f.0 == PING && f.3 == opaque {
            return seen;
        }
        seen.push(f);
    }
}

/// The preface and an empty SETTINGS frame: what a client sends first.
pub fn client_start() -> Vec<u8> {
    let mut b = PREFACE.to_vec();
    b.extend(frame(SETTINGS, 0, 0, &[]));
    b
}

/// Reads frames from `stream` until the server's GOAWAY; returns its error code, then checks
/// the server closes the connection. `None` if the connection closed with no GOAWAY.
pub fn read_until_goaway(stream: &mut TcpStream) -> Option<u32> {
    stream.set_read_timeout(Some(HANG_GUARD)).unwrap();
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    let mut pos = 0;
    let mut goaway = None;
    loop {
        // Whole frames in the buffer.
        while goaway.is_none() && buf.len() - pos >= 9 {
            let h = &buf[pos..pos + 9];
            let len = (usize::from(h[0]) << 16) | (usize::from(h[1]) << 8) | usize::from(h[2]);
            if buf.len() - pos < 9 + len {
                break;
            }
            if h[3] == GOAWAY {
                let p = &buf[pos + 9..pos + 9 + len];
                goaway = Some(u32::from_be_bytes([p[4], p[5], p[6], p[7]]));
            }
            pos += 9 + len;
        }
        if pos > 1 << 20 {
            buf.drain(..pos);
            pos = 0;
        }
        match stream.read(&mut chunk) {
            Ok(0) => return goaway,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if crate::common::is_reset(&e) => return goaway,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {} // see `Client::fill`
            Err(e) => panic!("reading frames (hung?): {e}"),
        }
    }
}

/// The next whole frame from `stream` (`buf` keeps what was read beyond it): kind, flags,
/// stream id, payload.
pub fn next_frame(stream: &mut TcpStream, buf: &mut Vec<u8>) -> (u8, u8, u32, Vec<u8>) {
    loop {
        if buf.len() >= 9 {
            let len =
                (usize::from(buf[0]) << 16) | (usize::from(buf[1]) << 8) | usize::from(buf[2]);
            if buf.len() >= 9 + len {
                let id = u32::from_be_bytes([buf[5], buf[6], buf[7], buf[8]]) & 0x7fff_ffff;
                let f = (buf[3], buf[4], id, buf[9..9 + len].to_vec());
                buf.drain(..9 + len);
                return f;
            }
        }
        let mut chunk = [0u8; 16 * 1024];
        let n = stream.read(&mut chunk).expect("reading frames (hung?)");
        assert!(n > 0, "the server closed the connection");
        buf.extend_from_slice(&chunk[..n]);
    }
}

// ---- TLS ----

/// A self-signed certificate for `names`, made now: (certificate PEM, key PEM, DER).
pub fn cert_for(names: &[&str]) -> (String, String, Vec<u8>) {
    let ck =
        rcgen::generate_simple_self_signed(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
            .expect("generating a test certificate");
    (
        ck.cert.pem(),
        ck.key_pair.serialize_pem(),
        ck.cert.der().to_vec(),
    )
}

/// A TLS server (one worker, default config) for `localhost` with a certificate made now,
/// serving `service`, and the roots a client needs to trust it.
pub fn start_tls_localhost<S: volt_http::Service>(
    service: S,
) -> (crate::common::TestServer, rustls::RootCertStore) {
    let (cert, key, der) = cert_for(&["localhost"]);
    let cert_key = volt_http::CertKey::from_pem(cert.as_bytes(), key.as_bytes()).unwrap();
    let tls = volt_http::TlsConfig::new(cert_key).build().unwrap();
    let server = crate::common::start_tls(1, volt_http::Config::default(), tls, service);
    let mut roots = rustls::RootCertStore::empty();
    roots.add(der.into()).unwrap();
    (server, roots)
}

/// A rustls client trusting exactly `roots` (DER), offering `alpn`.
pub fn client_config(roots: &[&[u8]], alpn: &[&[u8]]) -> Arc<rustls::ClientConfig> {
    let mut store = rustls::RootCertStore::empty();
    for der in roots {
        store
            .add(rustls_pki_types::CertificateDer::from(der.to_vec()))
            .expect("adding a test root");
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(store)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Arc::new(config)
}

/// A blocking TLS connection.
pub type TlsClient = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;

/// Connects and completes the handshake as `name`.
pub fn tls_connect(
    addr: SocketAddr,
    config: Arc<rustls::ClientConfig>,
    name: &str,
) -> io::Result<TlsClient> {
    let tcp = TcpStream::connect(addr)?;
    tcp.set_read_timeout(Some(HANG_GUARD))?;
    let server_name = rustls_pki_types::ServerName::try_from(name.to_string()).unwrap();
    let conn = rustls::ClientConnection::new(config, server_name).map_err(io::Error::other)?;
    let mut tls = rustls::StreamOwned::new(conn, tcp);
    while tls.conn.is_handshaking() {
        tls.conn.complete_io(&mut tls.sock)?;
    }
    Ok(tls)
}

// ---- external tools ----

/// Whether `tool` can run. Missing under CI (`CI=true`) is a failure; elsewhere the test says
/// loudly that it did not run.
pub fn tool_available(tool: &str) -> bool {
    let found = Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success() || !o.stdout.is_empty() || !o.stderr.is_empty());
    if !found {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "`{tool}` is required under CI (.ci/run installs it)"
        );
        eprintln!("SKIPPED: `{tool}` is not installed; this test did not run");
    }
    found
}
