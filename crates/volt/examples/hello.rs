//! The smallest useful volt app: a router with a path parameter, a JSON body, and shared state.
//!
//! `cargo run --release -p volt --example hello` then `curl localhost:8080/hello/you` (or
//! `curl --http2-prior-knowledge ...` for HTTP/2). With `-- --tls-cert FILE --tls-key FILE`
//! (PEM) it serves HTTPS instead: `curl -k https://localhost:8080/hello/you`; add `--http3` for
//! HTTP/3 on the same port over UDP too (`curl -k --http3-only https://localhost:8080/`, with a
//! curl built with HTTP/3).

use std::sync::atomic::{AtomicU64, Ordering};

use volt::{get, post, Error, Json, Request, Router, Server};

#[path = "common/tls.rs"]
mod tls;

#[derive(Default)]
struct Stats {
    greetings: AtomicU64,
}

#[derive(serde::Deserialize, serde::Serialize)]
struct Message {
    text: String,
}

async fn hello(req: Request) -> Result<String, Error> {
    let name: String = req.param("name")?;
    let n = req
        .state::<Stats>()
        .greetings
        .fetch_add(1, Ordering::Relaxed)
        + 1;
    Ok(format!("Hello, {name}! (greeting #{n})\n"))
}

async fn echo(mut req: Request) -> Result<Json<Message>, Error> {
    let msg: Message = req.json().await?;
    Ok(Json(msg))
}

fn main() -> std::io::Result<()> {
    let app = Router::new()
        .route("/", get(|_req| async { "Hello, World!\n" }))
        .route("/hello/{name}", get(hello))
        .route("/echo", post(echo))
        .state(Stats::default());
    let (addr, tls) = tls::TlsFiles::parse_args("hello");
    let (server, scheme) = tls.apply(Server::bind(addr.as_str())?)?;
    println!(
        "listening on {scheme}://{} (I/O: {})",
        server.local_addr(),
        volt::rt::IoBackend::auto()?
    );
    server.serve(app)
}
