//! may_minihttp serving the TechEmpower `/plaintext` and `/json` tests.
//!
//! may_minihttp writes `Server: M`, `Date` (its own per-second cache) and `Content-Length` itself.
//! `--workers N` sets may's worker-thread count (may pins its workers to CPUs 0..N by default).
//! Coroutine stack size and pool capacity are may's defaults.

use std::io;

use bytes::BufMut;
use may_minihttp::{HttpServer, HttpService, Request, Response};
use peer_common::{Args, HELLO};

#[derive(Clone)]
struct Techempower;

impl HttpService for Techempower {
    fn call(&mut self, req: Request, rsp: &mut Response) -> io::Result<()> {
        match req.path() {
            "/plaintext" => {
                rsp.header("Content-Type: text/plain").body("Hello, World!");
            }
            "/json" => {
                rsp.header("Content-Type: application/json");
                // `&mut BytesMut` is a `BufMut`; its writer lets serde_json append to the body.
                serde_json::to_writer(rsp.body_mut().writer(), &HELLO)?;
            }
            _ => {
                rsp.status_code(404, "Not Found");
            }
        }
        Ok(())
    }
}

fn main() {
    let args = Args::parse();
    may::config().set_workers(args.workers);
    peer_common::announce("may-minihttp", &args, "may coroutines");
    let server = HttpServer(Techempower)
        .start(args.addr)
        .unwrap_or_else(|e| panic!("bind {}: {e}", args.addr));
    server.join().expect("server coroutine panicked");
}
