//! Bodiless responses on HTTP/2 (HEAD, 204, 304), in raw frames: the response head ends the
//! stream, with no DATA and no trailers.

mod common;
mod h2common;

use std::io::Write;
use std::net::TcpStream;

use h2common::*;
use volt_http::{get, Body, Response, Router};

/// A response with a body and trailers, with the status in the path.
fn app() -> Router {
    Router::new().route(
        "/{status}",
        get(|req: volt_http::Request| async move {
            let status: u16 = req.param("status")?;
            let mut trailers = http::HeaderMap::new();
            trailers.insert("x-sum", "1".parse().unwrap());
            let status = http::StatusCode::from_u16(status).expect("a valid status");
            Ok::<_, volt_http::Error>(
                Response::new(status).with_body(Body::from("content").with_trailers(trailers)),
            )
        }),
    )
}

/// An HPACK block for `HEAD path` with `:authority: t`: `:method` a literal without indexing
/// (name index 2), then `GET`'s block without its method.
fn head_block(path: &[u8]) -> Vec<u8> {
    let mut b = vec![0x02, 4];
    b.extend_from_slice(b"HEAD");
    b.extend(&block_for(0x82, path)[1..]);
    b
}

/// A response with trailers to HEAD, or with a 204 or 304 status, sent its trailers as a
/// second header block after a HEADERS frame without END_STREAM: trailers after no content,
/// which HTTP/1 leaves out (and must: a bodiless response has no last chunk). Now the head
/// ends the stream, and nothing more is sent on it.
#[test]
fn bodiless_responses_send_no_trailers() {
    let server = common::start_with(1, volt_http::Config::default(), app());
    let mut tcp = TcpStream::connect(server.addr()).unwrap();
    tcp.set_read_timeout(Some(common::HANG_GUARD)).unwrap();
    let mut bytes = client_start();
    let requests = [
        (1, head_block(b"/200")),
        (3, block_for(0x82, b"/204")),
        (5, block_for(0x82, b"/304")),
    ];
    for (id, block) in &requests {
        bytes.extend(frame(HEADERS, END_STREAM | END_HEADERS, *id, block));
    }
    tcp.write_all(&bytes).unwrap();
    let mut buf = Vec::new();
    let seen = frames_until_ping_ack(&mut tcp, &mut buf, b"answered");
    for (id, _) in requests {
        let on: Vec<_> = seen
            .iter()
            .filter(|f| f.2 == id)
            .map(|f| (f.0, f.1 & END_STREAM))
            .collect();
        assert_eq!(on, [(HEADERS, END_STREAM)], "stream {id}");
    }
}
