//! TechEmpower's `/plaintext` and `/json` tests, by their rules: `Server`, `Date`,
//! `Content-Type` and `Content-Length` headers; the JSON object is serialized per request.
//!
//! `cargo run --release -p volt --example techempower -- --addr 127.0.0.1:8080 --workers 2`
//!
//! HTTP/2 with prior knowledge works on the plain port as it is; `--tls-cert FILE --tls-key FILE`
//! (PEM) serves HTTPS instead, with HTTP/2 or HTTP/1.1 by ALPN.

use volt::{get, Json, Router, Server};

#[path = "common/tls.rs"]
mod tls;

#[derive(serde::Serialize)]
struct Message {
    message: &'static str,
}

fn main() -> std::io::Result<()> {
    let mut addr = "127.0.0.1:8080".to_string();
    let mut workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut tls = tls::TlsFiles::default();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--addr" => addr = args.next().expect("--addr needs HOST:PORT"),
            "--workers" => {
                workers = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .expect("--workers needs a number")
            }
            "--tls-cert" | "--tls-key" | "--http3" => tls.read(&arg, &mut args),
            other => {
                eprintln!("unknown argument `{other}`; usage: techempower [--addr HOST:PORT] [--workers N] [--tls-cert FILE --tls-key FILE [--http3]]");
                std::process::exit(2);
            }
        }
    }
    let app = Router::new()
        .route(
            "/plaintext",
            get(|_req| async { volt::Response::text("Hello, World!") }),
        )
        .route(
            "/json",
            get(|_req| async {
                Json(Message {
                    message: "Hello, World!",
                })
            }),
        );
    let (server, scheme) = tls.apply(Server::bind(addr.as_str())?.workers(workers))?;
    eprintln!(
        "techempower: {scheme}://{} with {workers} worker(s), on {}",
        server.local_addr(),
        volt::rt::IoBackend::auto()?
    );
    server.serve(app)
}
