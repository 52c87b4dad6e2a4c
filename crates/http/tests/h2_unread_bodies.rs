//! Request bodies nobody reads, on HTTP/2, in raw frames: their bytes give the connection
//! window back at once (other streams go on), never the stream's own; once the response is out
//! and the client has used that window up, it is told to stop (RST_STREAM NO_ERROR), and the
//! connection serves the next stream.

mod common;
mod h2common;

use std::io::Write;
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use h2common::*;
use volt_http::{get, post, Config, Request, Router};

/// The stream window the server advertises, and the client's frame size.
const WINDOW: usize = 65_535;
const FRAME: usize = 16_384;

fn app(release: Arc<AtomicBool>) -> Router {
    Router::new()
        .route("/", get(|_req| async { "Hello, World!" }))
        .route("/unread", post(|_req| async { "not read" }))
        .route(
            "/one-chunk-when-released",
            post(move |mut req: Request| {
                let release = release.clone();
                async move {
                    while !release.load(Ordering::SeqCst) {
                        volt_rt::time::sleep(Duration::from_millis(5)).await;
                    }
                    let first = req.body_mut().chunk().await?.map_or(0, |c| c.len());
                    drop(req);
                    Ok::<_, volt_http::Error>(format!("read {first}"))
                }
            }),
        )
}

fn start(release: Arc<AtomicBool>) -> (common::TestServer, TcpStream) {
    let config = Config {
        h2_initial_stream_window: WINDOW as u32,
        ..Config::default()
    };
    let server = common::start_with(1, config, app(release));
    let tcp = TcpStream::connect(server.addr()).unwrap();
    tcp.set_read_timeout(Some(common::HANG_GUARD)).unwrap();
    (server, tcp)
}

const POST: u8 = 0x83;
const GET: u8 = 0x82;

/// The window given back on `stream` by the WINDOW_UPDATEs in `frames`.
fn window_back(frames: &[Frame], stream: u32) -> u64 {
    frames
        .iter()
        .filter(|f| f.0 == WINDOW_UPDATE && f.2 == stream)
        .map(|f| u64::from(u32::from_be_bytes(f.3[..4].try_into().unwrap())))
        .sum()
}

/// The body's connection window came back, and stream `id` alone was reset, with NO_ERROR.
fn assert_stopped(seen: &[Frame], id: u32) {
    assert!(
        window_back(seen, 0) >= WINDOW as u64,
        "connection window kept"
    );
    let reset: Vec<_> = seen.iter().filter(|f| f.0 == RST_STREAM).collect();
    assert_eq!(reset.len(), 1, "{reset:?}");
    assert_eq!(
        (reset[0].2, &reset[0].3[..]),
        (id, &[0u8; 4][..]),
        "NO_ERROR"
    );
}

/// Asks for `GET /` on `id` and checks the answer.
fn assert_served(tcp: &mut TcpStream, buf: &mut Vec<u8>, id: u32) {
    tcp.write_all(&frame(
        HEADERS,
        END_STREAM | END_HEADERS,
        id,
        &block_for(GET, b"/"),
    ))
    .unwrap();
    let mut body = Vec::new();
    loop {
        let (kind, flags, on, payload) = next_frame(tcp, buf);
        assert!(kind != GOAWAY, "the connection was closed");
        if kind == DATA && on == id {
            body.extend_from_slice(&payload);
            if flags & END_STREAM != 0 {
                break;
            }
        }
    }
    assert_eq!(body, b"Hello, World!");
}

/// A handler reads one chunk of a body that filled its stream window and drops the rest
/// unread. The chunks still unread at the drop gave their stream window back (only what
/// arrived after the drop was withheld), inviting the client to send more of a body nobody
/// reads. Now only their connection window comes back; the response is complete and the
/// client has no window left, so the stream is reset with NO_ERROR; the next stream is served.
#[test]
fn chunks_unread_when_the_body_is_dropped_get_no_stream_window_back() {
    let release = Arc::new(AtomicBool::new(false));
    let (_server, mut tcp) = start(release.clone());
    let mut bytes = client_start();
    bytes.extend(frame(
        HEADERS,
        END_HEADERS,
        1,
        &block_for(POST, b"/one-chunk-when-released"),
    ));
    for piece in vec![b'x'; WINDOW].chunks(FRAME) {
        bytes.extend(frame(DATA, 0, 1, piece));
    }
    tcp.write_all(&bytes).unwrap();
    let mut buf = Vec::new();
    // Once the PING is answered every DATA frame is in the body: then the handler reads.
    let mut seen = frames_until_ping_ack(&mut tcp, &mut buf, b"all sent");
    release.store(true, Ordering::SeqCst);
    loop {
        let f = next_frame(&mut tcp, &mut buf);
        let end = f.0 == DATA && f.2 == 1 && f.1 & END_STREAM != 0;
        seen.push(f);
        if end {
            break;
        }
    }
    seen.extend(frames_until_ping_ack(&mut tcp, &mut buf, b"answered"));
    assert!(
        window_back(&seen, 1) <= FRAME as u64,
        "stream window given back for unread chunks: {}",
        window_back(&seen, 1)
    );
    assert_stopped(&seen, 1);
    assert_served(&mut tcp, &mut buf, 3);
}

/// A large body to a handler that never reads it (405: `/` takes GET only): the client fills
/// the stream window, the response comes, the stream is reset with NO_ERROR, and another
/// stream on the connection is served. A small body that fits the window ends without a
/// reset.
#[test]
fn an_ignored_body_is_stopped_once_its_window_is_used_and_a_small_one_ends_cleanly() {
    let (_server, mut tcp) = start(Arc::new(AtomicBool::new(true)));
    let mut bytes = client_start();
    bytes.extend(frame(HEADERS, END_HEADERS, 1, &block_for(POST, b"/")));
    bytes.extend(frame(DATA, 0, 1, b"small"));
    bytes.extend(frame(DATA, END_STREAM, 1, b""));
    bytes.extend(frame(HEADERS, END_HEADERS, 3, &block_for(POST, b"/")));
    for piece in vec![b'x'; WINDOW].chunks(FRAME) {
        bytes.extend(frame(DATA, 0, 3, piece));
    }
    tcp.write_all(&bytes).unwrap();
    let mut buf = Vec::new();
    let seen = frames_until_ping_ack(&mut tcp, &mut buf, b"all sent");
    let ends = |id| {
        seen.iter()
            .any(|f| f.2 == id && matches!(f.0, HEADERS | DATA) && f.1 & END_STREAM != 0)
    };
    assert!(ends(1) && ends(3), "both answered: {seen:?}");
    assert_stopped(&seen, 3);
    assert_eq!(window_back(&seen, 3), 0);
    assert_served(&mut tcp, &mut buf, 5);
}

/// A server with `config`, and a connection that sent `POST /` on stream 1 (whose handler
/// reads nothing) with `len` bytes of its body, not ended.
fn post_unread(config: Config, len: usize) -> (common::TestServer, TcpStream) {
    let server = common::start_with(1, config, app(Arc::new(AtomicBool::new(true))));
    let mut tcp = TcpStream::connect(server.addr()).unwrap();
    tcp.set_read_timeout(Some(common::HANG_GUARD)).unwrap();
    let mut bytes = client_start();
    bytes.extend(frame(HEADERS, END_HEADERS, 1, &block_for(POST, b"/")));
    bytes.extend(frame(DATA, 0, 1, &vec![b'x'; len]));
    tcp.write_all(&bytes).unwrap();
    (server, tcp)
}

/// A body past `max_drain_bytes` after a complete response was reset with CANCEL, which curl
/// (7.88) reports as a failed transfer (`HTTP/2 stream 1 was not closed cleanly: CANCEL`)
/// though the response was whole. It is NO_ERROR now, as when the window is used up.
#[test]
fn a_body_past_the_drain_limit_is_stopped_with_no_error() {
    let config = Config {
        h2_initial_stream_window: WINDOW as u32,
        max_drain_bytes: 1000,
        ..Config::default()
    };
    let (_server, mut tcp) = post_unread(config, FRAME);
    let mut buf = Vec::new();
    let seen = frames_until_ping_ack(&mut tcp, &mut buf, b"all sent");
    let reset: Vec<_> = seen.iter().filter(|f| f.0 == RST_STREAM).collect();
    assert_eq!(reset.len(), 1, "{seen:?}");
    assert_eq!(
        (reset[0].2, &reset[0].3[..]),
        (1, &[0u8; 4][..]),
        "NO_ERROR"
    );
    assert_served(&mut tcp, &mut buf, 3);
}

/// A body still being drained `body_read_timeout` after a complete response was reset with
/// CANCEL; the response is whole, so the client is asked to stop with NO_ERROR (RFC 9113
/// §8.1), as at the drain limit.
#[test]
fn a_body_drained_past_the_read_timeout_is_stopped_with_no_error() {
    let config = Config {
        h2_initial_stream_window: WINDOW as u32,
        body_read_timeout: Duration::from_secs(1),
        ..Config::default()
    };
    let (_server, mut tcp) = post_unread(config, 100);
    let mut buf = Vec::new();
    let mut answered = false;
    let reset = loop {
        let f = next_frame(&mut tcp, &mut buf);
        answered |= f.2 == 1 && matches!(f.0, HEADERS | DATA) && f.1 & END_STREAM != 0;
        if f.0 == RST_STREAM {
            break f;
        }
    };
    assert!(answered, "the response came whole first");
    assert_eq!((reset.2, &reset.3[..]), (1, &[0u8; 4][..]), "NO_ERROR");
    assert_served(&mut tcp, &mut buf, 3);
}

/// The `:status` of each response head (HEADERS) on stream `id` in `frames`, in order.
fn statuses(frames: &[Frame], id: u32) -> Vec<String> {
    let mut decoder = volt_proto::h2::hpack::Decoder::new(4096);
    let mut statuses = Vec::new();
    for f in frames.iter().filter(|f| f.0 == HEADERS) {
        let mut status = String::new();
        decoder
            .decode(&f.3, |name, value| {
                if name == b":status" {
                    status = String::from_utf8_lossy(value).into_owned();
                }
                Ok(())
            })
            .unwrap();
        if f.2 == id {
            statuses.push(status);
        }
    }
    statuses
}

/// `POST /path` on stream 1 with `Expect: 100-continue` (a literal field), no body yet.
fn expect_continue_request(path: &[u8]) -> Vec<u8> {
    expect_request(path, b"100-continue")
}

/// `POST /path` on stream 1 with `Expect: value` (a literal field), no body yet.
fn expect_request(path: &[u8], value: &[u8]) -> Vec<u8> {
    let mut block = block_for(POST, path);
    block.extend_from_slice(&[0x00, 6]);
    block.extend_from_slice(b"expect");
    block.push(value.len() as u8);
    block.extend_from_slice(value);
    let mut bytes = client_start();
    bytes.extend(frame(HEADERS, END_HEADERS, 1, &block));
    bytes
}

/// An expectation other than 100-continue got no 417 on HTTP/2 (HTTP/1 answers it so): the
/// handler ran as if the field were not there. RFC 9110 §10.1.1: a server that receives an
/// Expect it cannot meet answers 417. A list naming 100-continue twice is still met.
#[test]
fn other_expectations_are_answered_with_417() {
    for (value, status) in [
        (&b"something-else"[..], "417"),
        (b"100-continue, foo", "417"),
        // Met: the handler answers without reading the body, so no 100, only the answer.
        (b"100-Continue, 100-continue", "200"),
    ] {
        let (_server, mut tcp) = start(Arc::new(AtomicBool::new(true)));
        tcp.write_all(&expect_request(b"/unread", value)).unwrap();
        let mut buf = Vec::new();
        let first = loop {
            let f = next_frame(&mut tcp, &mut buf);
            if f.2 == 1 {
                break f;
            }
        };
        assert_eq!(
            statuses(&[first], 1),
            [status],
            "{}",
            String::from_utf8_lossy(value)
        );
    }
}

/// `Expect: 100-continue` on HTTP/2 got no 100: a client that waits for it before sending
/// the body waited for its own timeout. Now the 100 (HEADERS without END_STREAM) comes when
/// the handler first waits for the body, before the final response; a handler that answers
/// without reading the body sends none.
#[test]
fn expect_continue_is_answered_when_the_handler_reads_the_body() {
    let (server, mut tcp) = start(Arc::new(AtomicBool::new(true)));
    tcp.write_all(&expect_continue_request(b"/one-chunk-when-released"))
        .unwrap();
    let mut buf = Vec::new();
    let interim = loop {
        let f = next_frame(&mut tcp, &mut buf);
        if f.2 == 1 {
            break f;
        }
    };
    let seen = [interim.clone()];
    assert_eq!(
        (interim.0, interim.1 & END_STREAM, interim.2),
        (HEADERS, 0, 1)
    );
    assert_eq!(statuses(&seen, 1), ["100"]);
    // Only now the body: the final answer follows.
    tcp.write_all(&frame(DATA, END_STREAM, 1, b"hello"))
        .unwrap();
    let mut seen = seen.to_vec();
    loop {
        let f = next_frame(&mut tcp, &mut buf);
        let end = f.2 == 1 && f.1 & END_STREAM != 0;
        seen.push(f);
        if end {
            break;
        }
    }
    assert_eq!(statuses(&seen, 1), ["100", "200"]);
    assert_eq!(seen.last().unwrap().3, b"read 5");
    drop(server);

    // A handler that answers without reading: the final response, no 100.
    let (_server, mut tcp) = start(Arc::new(AtomicBool::new(true)));
    tcp.write_all(&expect_continue_request(b"/unread")).unwrap();
    let mut buf = Vec::new();
    let seen = frames_until_ping_ack(&mut tcp, &mut buf, b"answered");
    assert_eq!(statuses(&seen, 1), ["200"], "{seen:?}");
}
