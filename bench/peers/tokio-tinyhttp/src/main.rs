//! A port of tokio's `examples/tinyhttp.rs`: HTTP/1 by hand on `tokio::net`, with `httparse` for the
//! request head and a `tokio_util` codec around the socket. It is the tokio half of the runtime
//! comparison; volt's half (`crates/rt` example `tinyhttp`) is the same program on volt's runtime,
//! so the difference between the two is the runtime.
//!
//! Kept from the original on purpose, because they are what the example costs on tokio:
//! - each request is decoded into an owned `http::Request<()>` (path and headers copied out);
//! - each response is an `http::Response<String>`, encoded with `Server`, `Content-Length`, `Date`
//!   and its own headers;
//! - each response is sent with `SinkExt::send`, which flushes: one `write` per response, even when
//!   16 requests arrived pipelined in one read.
//!
//! Changed from the original: `--addr`/`--workers` options, and by default a `current_thread`
//! runtime per worker with `SO_REUSEPORT` (`--flavor multi` for the original's multi-thread runtime);
//! the `Date` text comes from `peer_common::date`, which caches it per second as the original does.

use std::fmt::Write as _;
use std::io;

use bytes::BytesMut;
use futures_util::SinkExt;
use http::header::HeaderValue;
use http::{Request, Response, StatusCode};
use peer_common::tokio_workers::{self, Flavor};
use peer_common::{Args, HELLO};
use tokio::net::TcpStream;
use tokio_util::codec::{Decoder, Encoder, Framed};

fn main() -> io::Result<()> {
    let args = Args::parse();
    peer_common::announce("tokio-tinyhttp", &args, Flavor::from_args(&args).describe());
    tokio_workers::run(&args, |stream| async move {
        if let Err(e) = serve(stream).await {
            if e.kind() != io::ErrorKind::ConnectionReset {
                eprintln!("connection failed: {e}");
            }
        }
    })
}

async fn serve(stream: TcpStream) -> io::Result<()> {
    use futures_util::StreamExt as _;
    let mut transport = Framed::new(stream, Http);
    while let Some(request) = transport.next().await {
        let response = respond(&request?);
        transport.send(response).await?;
    }
    Ok(())
}

fn respond(req: &Request<()>) -> Response<String> {
    let (content_type, body) = match req.uri().path() {
        "/plaintext" => ("text/plain", "Hello, World!".to_string()),
        "/json" => (
            "application/json",
            serde_json::to_string(&HELLO).expect("a &str field always serializes"),
        ),
        _ => {
            let mut rsp = Response::new(String::new());
            *rsp.status_mut() = StatusCode::NOT_FOUND;
            return rsp;
        }
    };
    let mut rsp = Response::new(body);
    rsp.headers_mut()
        .insert("content-type", HeaderValue::from_static(content_type));
    rsp
}

/// The codec: requests in, responses out.
struct Http;

/// Most headers one request may carry; more is a parse error, as in the original.
const MAX_HEADERS: usize = 16;

impl Decoder for Http {
    type Item = Request<()>;
    type Error = io::Error;

    fn decode(&mut self, src: &mut BytesMut) -> io::Result<Option<Request<()>>> {
        let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut head = httparse::Request::new(&mut slots);
        let consumed = match head.parse(src).map_err(invalid)? {
            httparse::Status::Complete(n) => n,
            // Need more bytes.
            httparse::Status::Partial => return Ok(None),
        };
        if head.version != Some(1) {
            return Err(invalid("only HTTP/1.1 is served"));
        }
        let method =
            http::Method::from_bytes(head.method.unwrap_or("").as_bytes()).map_err(invalid)?;
        let mut request = Request::builder()
            .method(method)
            .uri(head.path.unwrap_or("/"))
            .version(http::Version::HTTP_11);
        for header in head.headers.iter() {
            request = request.header(
                header.name,
                HeaderValue::from_bytes(header.value).map_err(invalid)?,
            );
        }
        let request = request.body(()).map_err(invalid)?;
        // The request owns copies of what it needs; drop the bytes it was parsed from.
        let _ = src.split_to(consumed);
        Ok(Some(request))
    }
}

impl Encoder<Response<String>> for Http {
    type Error = io::Error;

    fn encode(&mut self, rsp: Response<String>, dst: &mut BytesMut) -> io::Result<()> {
        let mut head = String::with_capacity(128);
        let _ = write!(
            head,
            "HTTP/1.1 {}\r\nServer: tinyhttp\r\nContent-Length: {}\r\nDate: ",
            rsp.status(),
            rsp.body().len()
        );
        dst.extend_from_slice(head.as_bytes());
        peer_common::date::with_now(|date| dst.extend_from_slice(date));
        dst.extend_from_slice(b"\r\n");
        for (name, value) in rsp.headers() {
            dst.extend_from_slice(name.as_str().as_bytes());
            dst.extend_from_slice(b": ");
            dst.extend_from_slice(value.as_bytes());
            dst.extend_from_slice(b"\r\n");
        }
        dst.extend_from_slice(b"\r\n");
        dst.extend_from_slice(rsp.body().as_bytes());
        Ok(())
    }
}

fn invalid(e: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e.to_string())
}
