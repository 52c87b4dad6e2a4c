//! `https://` targets: a TLS stream (rustls, through tokio-rustls on volt-rt's `tokio::io`
//! traits) as a [`Transport`], so the HTTP/1 and HTTP/2 drivers run over it unchanged.
//!
//! The server's certificate is not verified, as wrk and h2load do not verify it: `volt bench`
//! measures a server, usually one on loopback with a self-signed certificate, and does not
//! authenticate it. The handshake's signatures are still checked, so the TLS work measured is
//! the real work. One client configuration is shared by every connection of a run, so
//! connections after the first resume sessions (TLS 1.3 tickets) as browsers and other clients
//! do; with `--no-keepalive` each request pays for a resumed handshake.

use std::cell::RefCell;
use std::future::{poll_fn, Future};
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use volt_rt::net::TcpStream;

use crate::config::Protocol;
use crate::transport::Transport;
use crate::worker::Plan;

/// What every TLS connection of a run is opened with.
#[derive(Clone, Debug)]
pub(crate) struct TlsSetup {
    config: Arc<rustls::ClientConfig>,
    name: ServerName<'static>,
    /// HTTP/2 needs the server to choose `h2` by ALPN (RFC 9113 §3.2).
    require_h2: bool,
    /// HTTP/3: the QUIC client configuration (TLS 1.3 only, ALPN `h3`, the same verifier).
    quic: Option<quinn_proto::ClientConfig>,
}

impl TlsSetup {
    /// The setup for `host`, offering by ALPN what `protocol` speaks.
    pub(crate) fn new(host: &str, protocol: Protocol) -> Result<TlsSetup, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Unverified(provider.clone())))
            .with_no_client_auth();
        let require_h2 = protocol == Protocol::Http2;
        config.alpn_protocols = vec![if require_h2 { &b"h2"[..] } else { b"http/1.1" }.to_vec()];
        let name = ServerName::try_from(host.to_string()).map_err(|e| e.to_string())?;
        let quic = match protocol {
            Protocol::Http3 => Some(quic_config(provider)?),
            _ => None,
        };
        Ok(TlsSetup {
            config: Arc::new(config),
            name,
            require_h2,
            quic,
        })
    }

    /// HTTP/3's QUIC client configuration, if this run speaks HTTP/3.
    pub(crate) fn quic(&self) -> Option<&quinn_proto::ClientConfig> {
        self.quic.as_ref()
    }

    /// The server's name, for SNI.
    pub(crate) fn server_name(&self) -> String {
        self.name.to_str().into_owned()
    }
}

/// QUIC's TLS: 1.3 only (RFC 9001 §4.2), ALPN `h3` (RFC 9114 §3.1; a server that chooses
/// nothing fails the handshake, as QUIC requires ALPN), the same unverified certificates. The
/// transport lets the server open a few unidirectional streams (its control stream, QPACK's,
/// some it may grease with) and no bidirectional ones (HTTP/3 servers open none).
fn quic_config(provider: Arc<CryptoProvider>) -> Result<quinn_proto::ClientConfig, String> {
    let mut tls = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(Unverified(provider)))
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"h3".to_vec()];
    let crypto =
        quinn_proto::crypto::rustls::QuicClientConfig::try_from(tls).map_err(|e| e.to_string())?;
    let mut transport = quinn_proto::TransportConfig::default();
    transport.max_concurrent_bidi_streams(0u32.into());
    transport.max_concurrent_uni_streams(8u32.into());
    let mut config = quinn_proto::ClientConfig::new(Arc::new(crypto));
    config.transport_config(Arc::new(transport));
    Ok(config)
}

/// A TLS connection. The drivers call it through `&self`, one task per connection, so the
/// stream sits in a `RefCell` borrowed only inside each poll.
pub(crate) struct TlsStream(RefCell<tokio_rustls::client::TlsStream<TcpStream>>);

impl Transport for TlsStream {
    async fn open(plan: &Plan) -> io::Result<Self> {
        let setup = plan.tls.as_ref().expect("a TLS run has a TLS setup");
        let tcp = TcpStream::connect(plan.addr).await?;
        tcp.set_nodelay(true)?;
        let connector = tokio_rustls::TlsConnector::from(setup.config.clone());
        let tls = connector.connect(setup.name.clone(), tcp).await?;
        if setup.require_h2 && tls.get_ref().1.alpn_protocol() != Some(b"h2") {
            return Err(io::Error::other("the server did not choose h2 by ALPN"));
        }
        Ok(TlsStream(RefCell::new(tls)))
    }

    fn read<'a>(&'a self, buf: &'a mut [u8]) -> impl Future<Output = io::Result<usize>> + 'a {
        poll_fn(move |cx| self.poll_read(cx, buf))
    }

    fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        // A poll with a waker that does nothing: a `Pending` leaves it registered, but the
        // drivers always poll again with their own (`read`) before they wait.
        match self.poll_read(&mut Context::from_waker(Waker::noop()), buf) {
            Poll::Ready(result) => result,
            Poll::Pending => Err(io::ErrorKind::WouldBlock.into()),
        }
    }

    fn write_all<'a>(&'a self, mut bytes: &'a [u8]) -> impl Future<Output = io::Result<()>> + 'a {
        poll_fn(move |cx| {
            while !bytes.is_empty() {
                let n = std::task::ready!(self.poll_write(cx, bytes))?;
                bytes = &bytes[n..];
            }
            Pin::new(&mut *self.0.borrow_mut()).poll_flush(cx)
        })
    }

    fn poll_read(&self, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        let mut stream = self.0.borrow_mut();
        // rustls may hold records a write left behind when the socket was full (its
        // `poll_write` takes the plaintext and keeps the records). A driver waiting for the
        // answer to them reads, so reading pushes them out too; this task is woken when the
        // socket takes more.
        if let Poll::Ready(Err(e)) = Pin::new(&mut *stream).poll_flush(cx) {
            return Poll::Ready(Err(e));
        }
        let mut buf = ReadBuf::new(buf);
        std::task::ready!(Pin::new(&mut *stream).poll_read(cx, &mut buf))?;
        Poll::Ready(Ok(buf.filled().len()))
    }

    fn poll_write(&self, cx: &mut Context<'_>, bytes: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut *self.0.borrow_mut()).poll_write(cx, bytes)
    }
}

/// Accepts any certificate (see the module docs) but checks the handshake's signatures with
/// the provider's algorithms.
#[derive(Debug)]
struct Unverified(Arc<CryptoProvider>);

impl ServerCertVerifier for Unverified {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
