//! actix-web 4 serving the TechEmpower `/plaintext` and `/json` tests, written the way an actix-web
//! user would (an `App` with two routes), not with actix-http's lower-level service API.
//!
//! `--workers N` is actix's worker count: N threads, each a single-threaded actix (tokio) runtime,
//! sharing one listener. actix adds `Date` and `Content-Length`; we add `Server`.

use std::time::Duration;

use actix_web::http::header::{CONTENT_TYPE, SERVER};
use actix_web::{web, App, HttpResponse, HttpServer};
use peer_common::{Args, HELLO};

async fn plaintext() -> HttpResponse {
    HttpResponse::Ok()
        .insert_header((SERVER, "actix"))
        .insert_header((CONTENT_TYPE, "text/plain"))
        .body("Hello, World!")
}

async fn json() -> HttpResponse {
    let body = serde_json::to_vec(&HELLO).expect("a &str field always serializes");
    HttpResponse::Ok()
        .insert_header((SERVER, "actix"))
        .insert_header((CONTENT_TYPE, "application/json"))
        .body(body)
}

fn main() -> std::io::Result<()> {
    let args = Args::parse();
    peer_common::announce("actix", &args, "actix-web workers");
    actix_web::rt::System::new().block_on(
        HttpServer::new(|| {
            App::new()
                .route("/plaintext", web::get().to(plaintext))
                .route("/json", web::get().to(json))
        })
        .workers(args.workers)
        .backlog(4096)
        // The idle-memory scenario holds 5,000 connections open after one request each; actix's
        // default 5 s keep-alive would close them before the measurement.
        .keep_alive(Duration::from_secs(75))
        .shutdown_timeout(1)
        // HTTP/1, and HTTP/2 with prior knowledge (h2c) for the h2load scenarios.
        .bind_auto_h2c(args.addr)?
        .run(),
    )
}
