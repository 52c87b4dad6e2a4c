//! hyper 1.x serving the TechEmpower `/plaintext` and `/json` tests.
//!
//! Runtime: by default one tokio `current_thread` runtime per worker, each with its own
//! `SO_REUSEPORT` listener (`--flavor multi` for one work-stealing runtime instead; see
//! `peer_common::tokio_workers`). hyper-util's auto connection: HTTP/1 with `pipeline_flush`, which
//! writes the responses to a pipelined batch together, or HTTP/2 when the client opens with the
//! preface (h2c prior knowledge, for the h2load scenarios). hyper adds `Date` (its own per-second cache) and
//! `Content-Length` (from the `Full` body's exact size); we add `Server` and `Content-Type`.

use std::convert::Infallible;

use bytes::Bytes;
use http::header::{HeaderValue, CONTENT_TYPE, SERVER};
use http::{Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use peer_common::tokio_workers::{self, Flavor};
use peer_common::{Args, HELLO, PLAINTEXT};

fn respond(req: Request<Incoming>) -> Response<Full<Bytes>> {
    let (content_type, body) = match req.uri().path() {
        "/plaintext" => ("text/plain", Bytes::from_static(PLAINTEXT)),
        "/json" => {
            let json = serde_json::to_vec(&HELLO).expect("a &str field always serializes");
            ("application/json", Bytes::from(json))
        }
        _ => {
            let mut rsp = Response::new(Full::new(Bytes::new()));
            *rsp.status_mut() = StatusCode::NOT_FOUND;
            return rsp;
        }
    };
    let mut rsp = Response::new(Full::new(body));
    let headers = rsp.headers_mut();
    headers.insert(SERVER, HeaderValue::from_static("hyper"));
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    rsp
}

fn main() -> std::io::Result<()> {
    let args = Args::parse();
    peer_common::announce("hyper", &args, Flavor::from_args(&args).describe());
    let mut http = auto::Builder::new(TokioExecutor::new());
    http.http1().pipeline_flush(true);
    tokio_workers::run(&args, move |stream| {
        let http = http.clone();
        async move {
            let connection = http.serve_connection(
                TokioIo::new(stream),
                service_fn(|req| async move { Ok::<_, Infallible>(respond(req)) }),
            );
            // A client that resets the connection is no error worth printing in a benchmark.
            let _ = connection.await;
        }
    })
}
