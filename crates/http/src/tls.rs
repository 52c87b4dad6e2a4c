//! HTTPS: certificates, SNI, ALPN and session resumption with rustls, and the accept path of a
//! TLS port.
//!
//! [`TlsConfig`] is built once from PEM files ([`CertKey`]); each accepted connection runs the
//! handshake (bounded by [`Config::header_read_timeout`](crate::Config), cut short by graceful
//! shutdown) and then goes to the protocol ALPN chose: `h2` to the HTTP/2 driver, `http/1.1` or
//! none to the HTTP/1 loop. A failed handshake, or plaintext on the TLS port, ends that
//! connection only.

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;

use rustls::server::{ClientHello, ResolvesServerCert, ServerSessionMemoryCache};
use rustls::sign::CertifiedKey;
use rustls::ServerConfig;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use volt_rt::future::{race, Either};
use volt_rt::net::TcpStream;

use crate::cold::cold;
use crate::server::Worker;
use crate::service::Service;
use crate::transport::Transport;

/// TLS sessions the server remembers per process for stateful resumption (TLS 1.2 session IDs,
/// TLS 1.3 when tickets are off). Tickets resume without server memory.
const SESSION_CACHE: usize = 4096;

/// A certificate chain and its private key.
#[derive(Clone)]
pub struct CertKey {
    key: Arc<CertifiedKey>,
}

impl CertKey {
    /// Reads a PEM certificate chain (leaf first) and a PEM private key (PKCS#8, PKCS#1 or
    /// SEC1).
    pub fn from_pem_files(cert: impl AsRef<Path>, key: impl AsRef<Path>) -> io::Result<CertKey> {
        let cert_path = cert.as_ref();
        let key_path = key.as_ref();
        let chain = CertificateDer::pem_file_iter(cert_path)
            .and_then(|it| it.collect::<Result<Vec<_>, _>>())
            .map_err(|e| invalid(format!("{}: {e}", cert_path.display())))?;
        let key = PrivateKeyDer::from_pem_file(key_path)
            .map_err(|e| invalid(format!("{}: {e}", key_path.display())))?;
        CertKey::from_der(chain, key)
    }

    /// The same from PEM text in memory.
    pub fn from_pem(cert: &[u8], key: &[u8]) -> io::Result<CertKey> {
        let chain = CertificateDer::pem_slice_iter(cert)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| invalid(format!("certificate: {e}")))?;
        let key = PrivateKeyDer::from_pem_slice(key).map_err(|e| invalid(format!("key: {e}")))?;
        CertKey::from_der(chain, key)
    }

    fn from_der(
        chain: Vec<CertificateDer<'static>>,
        key: PrivateKeyDer<'static>,
    ) -> io::Result<CertKey> {
        if chain.is_empty() {
            return Err(invalid("no certificate in the PEM input".into()));
        }
        let signer = rustls::crypto::ring::sign::any_supported_type(&key)
            .map_err(|e| invalid(format!("unsupported private key: {e}")))?;
        let key = CertifiedKey::new(chain, signer);
        // Catches a key that does not belong to the certificate now, not at the first client.
        key.keys_match()
            .map_err(|e| invalid(format!("certificate and key: {e}")))?;
        Ok(CertKey { key: Arc::new(key) })
    }
}

impl fmt::Debug for CertKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CertKey")
            .field("chain_len", &self.key.cert.len())
            .finish_non_exhaustive()
    }
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}

/// The TLS settings of a port: a default certificate, more chosen by SNI, ALPN offering `h2`
/// and `http/1.1`, TLS 1.2 and 1.3 with rustls' default cipher suites (the `ring` provider),
/// and session resumption (an in-memory session cache and rotating, encrypted tickets).
///
/// ```no_run
/// use volt_http::{CertKey, Server, TlsConfig};
/// let tls = TlsConfig::new(CertKey::from_pem_files("cert.pem", "key.pem")?)
///     .with_sni("api.example.com", CertKey::from_pem_files("api.pem", "api-key.pem")?)
///     .build()?;
/// # let app = volt_http::service_fn(|_req| async { "hi" });
/// Server::bind("0.0.0.0:443")?.tls(tls).serve(app)?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct TlsConfig {
    default: CertKey,
    by_name: HashMap<String, CertKey>,
}

impl TlsConfig {
    /// TLS with `default` as the certificate for every name not added with
    /// [`TlsConfig::with_sni`] (and for clients that send no SNI).
    pub fn new(default: CertKey) -> TlsConfig {
        TlsConfig {
            default,
            by_name: HashMap::new(),
        }
    }

    /// Serves `cert` to clients asking for `name` (exact, case-insensitive).
    pub fn with_sni(mut self, name: &str, cert: CertKey) -> TlsConfig {
        self.by_name.insert(name.to_ascii_lowercase(), cert);
        self
    }

    /// The rustls configuration for the server.
    pub fn build(self) -> io::Result<Tls> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .map_err(|e| invalid(format!("TLS versions: {e}")))?
            .with_no_client_auth()
            .with_cert_resolver(Arc::new(SniResolver {
                default: self.default.key,
                by_name: self
                    .by_name
                    .into_iter()
                    .map(|(name, ck)| (name, ck.key))
                    .collect(),
            }));
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        config.session_storage = ServerSessionMemoryCache::new(SESSION_CACHE);
        config.ticketer = rustls::crypto::ring::Ticketer::new()
            .map_err(|e| io::Error::other(format!("TLS session tickets: {e}")))?;
        // TLS 1.3 clients may resume with either; a few tickets let one client open several
        // connections that all resume.
        config.send_tls13_tickets = 2;
        Ok(Tls::from_rustls(Arc::new(config)))
    }
}

/// A built TLS configuration, ready for [`Server::tls`](crate::Server::tls).
#[derive(Clone)]
pub struct Tls {
    acceptor: tokio_rustls::TlsAcceptor,
}

impl Tls {
    /// Uses a rustls configuration built elsewhere (client certificates, other providers). Its
    /// `alpn_protocols` decide which protocols are offered: include `h2` for HTTP/2.
    pub fn from_rustls(config: Arc<ServerConfig>) -> Tls {
        Tls {
            acceptor: tokio_rustls::TlsAcceptor::from(config),
        }
    }

    /// The rustls configuration in use.
    pub fn rustls_config(&self) -> &Arc<ServerConfig> {
        self.acceptor.config()
    }
}

impl fmt::Debug for Tls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tls")
            .field("alpn", &self.acceptor.config().alpn_protocols)
            .finish_non_exhaustive()
    }
}

/// Chooses the certificate by SNI, falling back to the default.
#[derive(Debug)]
struct SniResolver {
    default: Arc<CertifiedKey>,
    by_name: HashMap<String, Arc<CertifiedKey>>,
}

impl ResolvesServerCert for SniResolver {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        // rustls hands the name over already lower-cased and validated as a DNS name.
        let chosen = hello
            .server_name()
            .and_then(|name| self.by_name.get(name))
            .unwrap_or(&self.default);
        Some(chosen.clone())
    }
}

/// Serves one connection on a TLS port: handshake, then HTTP/2 or HTTP/1 as ALPN chose.
pub(crate) async fn serve<S: Service>(
    stream: TcpStream,
    remote: SocketAddr,
    tls: Tls,
    worker: Rc<Worker>,
    service: Arc<S>,
    slot: usize,
) {
    let _ = stream.set_nodelay(true);
    let timeout = worker.config.header_read_timeout;
    // Polled out of line (`Cold`): inlined, rustls's handshake put its stack temporaries in
    // every poll of the connection's task, a 24 KB frame whose pages each poll probed, request
    // after request.
    let handshake = cold(volt_rt::time::timeout(timeout, tls.acceptor.accept(stream)));
    // Graceful shutdown closes a connection still in its handshake, as it does an idle one: it
    // has no request in flight, and would otherwise hold the shutdown up for as long as the
    // client keeps its handshake unfinished (`header_read_timeout`).
    let stopped = volt_rt::Handle::current().stopped();
    let stream = match race(handshake, stopped).await {
        Either::Left(Ok(Ok(s))) => s,
        // A bad client hello, plaintext, a certificate the client refused, a timeout: rustls
        // has already queued an alert where one applies; dropping the socket closes it.
        _ => return,
    };
    let is_h2 = stream.get_ref().1.alpn_protocol() == Some(b"h2");
    if is_h2 {
        cold(crate::h2::serve(
            Transport::tls(stream),
            bytes::BytesMut::new(),
            remote,
            worker,
            service,
        ))
        .await;
    } else {
        let io = crate::conn::new_conn(Transport::tls(stream), remote, worker.clone());
        worker.track_idle(slot, &io);
        crate::conn::serve(io, service, None).await;
    }
}
