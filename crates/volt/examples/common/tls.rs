//! `--tls-cert FILE --tls-key FILE [--http3]`, the TLS options the examples share: with both PEM
//! files the server speaks HTTPS (HTTP/2 or HTTP/1.1 by ALPN), with neither plain HTTP; `--http3`
//! adds HTTP/3 over QUIC on the same port number (UDP), which needs the certificate.
//!
//! An example takes this file in with `#[path = "common/tls.rs"] mod tls;`. Cargo builds each
//! file at the top of `examples/` as an example of its own; this one, a folder down, it leaves
//! alone.

use volt::{CertKey, Server, TlsConfig};

/// The certificate and key files named on the command line, if any.
#[derive(Default)]
pub struct TlsFiles {
    cert: Option<String>,
    key: Option<String>,
    http3: bool,
}

impl TlsFiles {
    /// Takes the file that follows `flag` (`--tls-cert` or `--tls-key`) in `args`, or notes
    /// `--http3`.
    pub fn read(&mut self, flag: &str, args: &mut impl Iterator<Item = String>) {
        if flag == "--http3" {
            self.http3 = true;
            return;
        }
        let file = args
            .next()
            .unwrap_or_else(|| panic!("{flag} needs a PEM file"));
        match flag {
            "--tls-cert" => self.cert = Some(file),
            "--tls-key" => self.key = Some(file),
            _ => unreachable!("{flag} is not a TLS option"),
        }
    }

    /// `--addr HOST:PORT` (default `127.0.0.1:8080`) and the TLS options from the command
    /// line of `example`, which takes no others: anything else exits with a usage error.
    #[allow(
        dead_code,
        reason = "not every example that takes this file in parses this way"
    )]
    pub fn parse_args(example: &str) -> (String, TlsFiles) {
        let mut addr = "127.0.0.1:8080".to_string();
        let mut tls = TlsFiles::default();
        let mut args = std::env::args().skip(1);
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--addr" => addr = args.next().expect("--addr needs HOST:PORT"),
                "--tls-cert" | "--tls-key" | "--http3" => tls.read(&arg, &mut args),
                other => {
                    eprintln!("unknown argument `{other}`; usage: {example} [--addr HOST:PORT] [--tls-cert FILE --tls-key FILE [--http3]]");
                    std::process::exit(2);
                }
            }
        }
        (addr, tls)
    }

    /// `server`, serving HTTPS if both files were named (and HTTP/3 with `--http3`), and its
    /// URL scheme. Exits with a usage error if only one was, or `--http3` came without them.
    pub fn apply(self, server: Server) -> std::io::Result<(Server, &'static str)> {
        match (self.cert, self.key) {
            (Some(cert), Some(key)) => {
                let tls = TlsConfig::new(CertKey::from_pem_files(cert, key)?).build()?;
                Ok((server.tls(tls).http3(self.http3), "https"))
            }
            (None, None) if self.http3 => {
                eprintln!("--http3 needs --tls-cert and --tls-key (QUIC is always TLS)");
                std::process::exit(2);
            }
            (None, None) => Ok((server, "http")),
            _ => {
                eprintln!("--tls-cert and --tls-key go together");
                std::process::exit(2);
            }
        }
    }
}
