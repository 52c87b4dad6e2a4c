//! The QUIC transport alone, below HTTP/3: raw bidirectional streams echoed by a handler on
//! volt-rt, against quinn's own client on tokio.

use std::rc::Rc;
use std::sync::mpsc;

use super::*;
use crate::tls::{CertKey, TlsConfig};

/// Echoes every bidirectional stream: reads it to its end, writes it back, finishes.
struct Echo;

impl Handler for Echo {
    fn connected(&self, _conn: ConnRef) {}

    fn stream(&self, stream: StreamRef, dir: Dir) {
        assert_eq!(dir, Dir::Bi);
        volt_rt::spawn(async move {
            let mut all = Vec::new();
            while let Ok(Some(bytes)) = stream.read().await {
                all.extend_from_slice(&bytes);
            }
            stream.write_all(&all).await.unwrap();
            stream.finish();
            stream.release();
        });
    }

    fn closed(&self, _conn: ConnRef) {}

    fn changed(&self) {}
}

#[test]
fn raw_streams_echo_through_the_endpoint() {
    let ck = rcgen::generate_simple_self_signed(vec!["quic.test".to_string()]).unwrap();
    let der = ck.cert.der().to_vec();
    let key = CertKey::from_pem(
        ck.cert.pem().as_bytes(),
        ck.key_pair.serialize_pem().as_bytes(),
    );
    let tls = TlsConfig::new(key.unwrap()).build().unwrap();
    let config = Arc::new(super::super::server_config(&tls, &crate::Config::default()).unwrap());
    let runtime = volt_rt::Runtime::builder().workers(1).build().unwrap();
    let stop = runtime.handle();
    let (addr_tx, addr_rx) = mpsc::channel();
    let server = std::thread::spawn(move || {
        runtime.run(move |_| {
            let (config, addr_tx) = (config.clone(), addr_tx.clone());
            async move {
                let socket = super::super::bind("127.0.0.1:0".parse().unwrap()).unwrap();
                addr_tx.send(socket.local_addr().unwrap()).unwrap();
                let quic = Quic::new(config);
                let closer = quic.clone();
                volt_rt::spawn(async move {
                    volt_rt::Handle::current().stopped().await;
                    closer.refuse_new();
                    for conn in closer.conns() {
                        conn.close(0, "done");
                    }
                });
                drive(Rc::clone(&quic), socket, &Echo).await;
            }
        })
    });
    let addr = addr_rx.recv().unwrap();

    let client = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    client.block_on(async {
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(rustls_pki_types::CertificateDer::from(der))
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
        let conn = endpoint.connect(addr, "quic.test").unwrap().await.unwrap();
        // Streams at once, one of them far past the initial stream window (flow control
        // both ways).
        let mut tasks = tokio::task::JoinSet::new();
        for n in 0..20usize {
            let conn = conn.clone();
            tasks.spawn(async move {
                let len = if n == 0 { 3 << 20 } else { n * 1000 };
                let data: Vec<u8> = (0..len).map(|i| (i * 7 + n) as u8).collect();
                let (mut send, mut recv) = conn.open_bi().await.unwrap();
                let writer = {
                    let data = data.clone();
                    tokio::spawn(async move {
                        send.write_all(&data).await.unwrap();
                        send.finish().unwrap();
                    })
                };
                let back = recv.read_to_end(4 << 20).await.unwrap();
                writer.await.unwrap();
                assert!(back == data, "stream {n} came back different");
            });
        }
        while let Some(done) = tasks.join_next().await {
            done.unwrap();
        }
        stop.stop();
        // The server closes the connection as it stops.
        let reason = conn.closed().await;
        assert!(
            matches!(reason, quinn::ConnectionError::ApplicationClosed(_)),
            "{reason:?}"
        );
    });
    server.join().unwrap();
}
