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
//!
//! `--style batched` swaps the Framed loop for the loop volt's port (`crates/rt/examples/tinyhttp.rs`)
//! uses: read into a buffer, parse every complete request with `httparse` (no `http::Request`),
//! append every response to one buffer, one `write_all` per read. Same responses, byte for byte
//! apart from `Server`. bench/run runs it as `tokio-tinyhttp-batched`, so the runtime comparison
//! can hold the application code fixed.

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
    let batched = match args.get("style").unwrap_or("framed") {
        "framed" => false,
        "batched" => true,
        other => {
            eprintln!("--style must be framed or batched, not {other:?}");
            std::process::exit(2)
        }
    };
    tokio_workers::run(&args, move |stream| async move {
        let result = if batched {
            serve_batched(stream).await
        } else {
            serve(stream).await
        };
        if let Err(e) = result {
            if e.kind() != io::ErrorKind::ConnectionReset {
                eprintln!("connection failed: {e}");
            }
        }
    })
}

/// `--style batched`: drain what arrived, answer every complete request, write once.
async fn serve_batched(mut stream: TcpStream) -> io::Result<()> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut input = BytesMut::with_capacity(4096);
    let mut out = BytesMut::with_capacity(4096);
    loop {
        if stream.read_buf(&mut input).await? == 0 {
            return Ok(());
        }
        let mut consumed = 0;
        loop {
            let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
            let mut head = httparse::Request::new(&mut slots);
            match head.parse(&input[consumed..]).map_err(invalid)? {
                httparse::Status::Complete(n) => {
                    let (status, content_type, body) = route(head.path.unwrap_or("/"));
                    encode_head(status, body.len(), &mut out);
                    if let Some(content_type) = content_type {
                        out.extend_from_slice(b"content-type: ");
                        out.extend_from_slice(content_type.as_bytes());
                        out.extend_from_slice(b"\r\n");
                    }
                    out.extend_from_slice(b"\r\n");
                    out.extend_from_slice(body.as_bytes());
                    consumed += n;
                }
                httparse::Status::Partial => break,
            }
        }
        let _ = input.split_to(consumed);
        stream.write_all(&out).await?;
        out.clear();
    }
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

/// The application: status, content type and body for a path.
fn route(path: &str) -> (StatusCode, Option<&'static str>, String) {
    match path {
        "/plaintext" => (
            StatusCode::OK,
            Some("text/plain"),
            "Hello, World!".to_string(),
        ),
        "/json" => (
            StatusCode::OK,
            Some("application/json"),
            serde_json::to_string(&HELLO).expect("a &str field always serializes"),
        ),
        _ => (StatusCode::NOT_FOUND, None, String::new()),
    }
}

fn respond(req: &Request<()>) -> Response<String> {
    let (status, content_type, body) = route(req.uri().path());
    let mut rsp = Response::new(body);
    *rsp.status_mut() = status;
    if let Some(content_type) = content_type {
        rsp.headers_mut()
            .insert("content-type", HeaderValue::from_static(content_type));
    }
    rsp
}

/// Status line, `Server`, `Content-Length` and `Date`: the head every response starts with.
fn encode_head(status: StatusCode, body_len: usize, dst: &mut BytesMut) {
    let mut head = String::with_capacity(128);
    let _ = write!(
        head,
        "HTTP/1.1 {status}\r\nServer: tinyhttp\r\nContent-Length: {body_len}\r\nDate: "
    );
    dst.extend_from_slice(head.as_bytes());
    peer_common::date::with_now(|date| dst.extend_from_slice(date));
    dst.extend_from_slice(b"\r\n");
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
        encode_head(rsp.status(), rsp.body().len(), dst);
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
