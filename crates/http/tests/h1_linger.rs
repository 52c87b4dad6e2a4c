//! Lingering close (RFC 9112 §9.6): a connection that closes while the client may still be
//! sending (an error answer to a request the server did not read, a body left unread) shuts
//! its write side, then reads and discards what arrives until the client closes or a bound
//! is reached. Closing with those bytes unread would be a reset, and a client still uploading
//! then fails its write, and may lose the answer.

mod common;

use std::io::{self, Write};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use common::{echo_app as app, error_close, text_response, Client, RawResponse};
use volt_http::Config;

/// A body limit of 1 KiB; the linger bounds far above what a test needs, so that only the
/// client ends a lingering close, however slow the machine.
fn config() -> Config {
    Config {
        max_body_bytes: 1024,
        linger_timeout: Duration::from_secs(600),
        max_linger_bytes: 64 << 20,
        ..Default::default()
    }
}

/// Sends `head` and `len` bytes of filler after it in one write, from another thread, as a
/// client uploading a large body does while it waits for the answer. One write: the server
/// then finds far more than the head waiting when it reads the head.
fn upload(c: &Client, head: &[u8], len: usize) -> thread::JoinHandle<io::Result<()>> {
    let mut writer = c.stream().try_clone().unwrap();
    let mut bytes = head.to_vec();
    bytes.resize(head.len() + len, b'x');
    thread::spawn(move || writer.write_all(&bytes))
}

/// Sends `head` and 16 MiB behind it (see [`upload`]), checks that all of it went through, and
/// reads the answer.
fn answer_to_upload(c: &mut Client, head: &[u8]) -> RawResponse {
    let uploaded = upload(c, head, 16 << 20).join().unwrap();
    assert!(uploaded.is_ok(), "the upload failed: {uploaded:?}");
    c.read_response()
}

/// Reads until the server's end of the connection: it must be a clean end (FIN), with nothing
/// more before it.
fn expect_clean_end(c: &mut Client) {
    let (rest, reset) = c.read_to_close();
    assert!(rest.is_empty(), "{:?}", String::from_utf8_lossy(&rest));
    assert!(!reset, "the connection was reset, not closed");
}

/// The body is refused by its declared length (413) while 2 MiB of it are on their way: the
/// upload goes through (the server reads and discards it), the answer arrives whole, and the
/// connection ends cleanly. Before lingering, the close with the body unread was a reset: the
/// upload failed with `EPIPE` or `ECONNRESET`, and the client's read after it with a reset.
#[test]
fn a_413_reaches_a_client_still_uploading() {
    let server = common::start_with(1, config(), app());
    let mut c = server.connect();
    let head = b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 100000000\r\n\r\n";
    assert_eq!(
        answer_to_upload(&mut c, head).text(),
        error_close(
            "413 Payload Too Large",
            "request body of 100000000 bytes is over the limit of 1024"
        )
    );
    expect_clean_end(&mut c);
    drop(c);
    assert_eq!(server.get("/"), text_response("200 OK", "", ""));
    server.shutdown();
}

/// A chunk size that does not parse, with 2 MiB more on their way behind it: the 400 arrives
/// whole and the connection ends cleanly.
#[test]
fn a_400_for_a_bad_chunk_reaches_a_client_still_uploading() {
    let server = common::start_with(1, config(), app());
    let mut c = server.connect();
    let head =
        b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nzz\r\n";
    assert_eq!(
        answer_to_upload(&mut c, head).text(),
        error_close("400 Bad Request", "invalid chunk size")
    );
    expect_clean_end(&mut c);
    server.shutdown();
}

/// A body the handler ignored, too large to skip for the next request (over
/// `max_drain_bytes`): the answer says `Connection: close`, the rest of the body is read and
/// discarded, and the connection ends cleanly.
#[test]
fn an_ignored_body_too_large_to_skip_is_lingered_over() {
    let config = Config {
        max_body_bytes: Config::default().max_body_bytes,
        ..config()
    };
    let server = common::start_with(1, config, app());
    let mut c = server.connect();
    let head = b"POST /ignore HTTP/1.1\r\nHost: t\r\nContent-Length: 10000000\r\n\r\n";
    assert_eq!(
        answer_to_upload(&mut c, head).text(),
        "HTTP/1.1 200 OK\r\nServer: volt\r\nDate: <date>\r\nContent-Type: text/plain\r\n\
         content-length: 7\r\nConnection: close\r\n\r\nignored"
    );
    expect_clean_end(&mut c);
    server.shutdown();
}

/// Writes filler to the server from another thread until a write fails (the server is gone),
/// a `piece` at a time with `pause` between; the outcome comes on the channel.
fn upload_forever(c: &Client, piece: usize, pause: Duration) -> mpsc::Receiver<io::Error> {
    let mut writer = c.stream().try_clone().unwrap();
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let piece = vec![b'x'; piece];
        let e = loop {
            if let Err(e) = writer.write_all(&piece) {
                break e;
            }
            thread::sleep(pause);
        };
        let _ = tx.send(e);
    });
    rx
}

/// Sends a head whose body is over the limit, reads the 413, then keeps sending for good:
/// `upload_forever` with `piece` and `pause`.
fn refused_then_sending_forever(
    server: &common::TestServer,
    piece: usize,
    pause: Duration,
) -> mpsc::Receiver<io::Error> {
    let mut c = server.connect();
    c.send(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 100000000\r\n\r\n");
    let failed = upload_forever(&c, piece, pause);
    assert_eq!(c.read_response().status, 413);
    failed
}

/// A client that never stops sending is cut off once `max_linger_bytes` came: its writes then
/// fail. (The bound is checked loosely, as a close within the hang guard.)
#[test]
fn a_linger_ends_at_its_byte_bound() {
    let config = Config {
        max_linger_bytes: 1 << 20,
        ..config()
    };
    let server = common::start_with(1, config, app());
    let failed = refused_then_sending_forever(&server, 64 * 1024, Duration::ZERO);
    let e = failed
        .recv_timeout(common::HANG_GUARD)
        .expect("the server closed");
    assert!(common::is_reset(&e), "{e}");
    assert_eq!(server.get("/"), text_response("200 OK", "", ""));
    server.shutdown();
}

/// A client that sends a little now and then, for good, is cut off once `linger_timeout`
/// passed.
#[test]
fn a_linger_ends_at_its_time_bound() {
    let config = Config {
        linger_timeout: Duration::from_millis(500),
        ..config()
    };
    let server = common::start_with(1, config, app());
    let failed = refused_then_sending_forever(&server, 1024, Duration::from_millis(20));
    let e = failed
        .recv_timeout(common::HANG_GUARD)
        .expect("the server closed");
    assert!(common::is_reset(&e), "{e}");
    server.shutdown();
}

/// Graceful shutdown does not wait on lingering connections longer than their bounds: here
/// far longer than the test's guard, so a shutdown that waited them out would fail it. A
/// client that has gone quiet is closed at once, as an idle one is; a client still sending is
/// closed as soon as nothing more has arrived.
#[test]
fn shutdown_ends_lingering_connections() {
    let server = common::start_with(1, config(), app());
    let failed = refused_then_sending_forever(&server, 1024, Duration::from_millis(20));
    let mut quiet = server.connect();
    quiet.send(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 100000000\r\n\r\n");
    assert_eq!(quiet.read_response().status, 413);
    server.shutdown();
    let e = failed
        .recv_timeout(common::HANG_GUARD)
        .expect("the server closed");
    assert!(common::is_reset(&e), "{e}");
    expect_clean_end(&mut quiet);
}

/// A response that closes the connection after a request read whole (`Connection: close`) has
/// nothing to linger over: the connection is gone at once (its slot is free for the next,
/// with one connection a worker), even though its client stays open.
#[test]
fn a_close_with_nothing_unread_does_not_linger() {
    let config = Config {
        max_connections_per_worker: 1,
        ..config()
    };
    let server = common::start_with(1, config, app());
    let mut c = server.connect();
    c.send(b"POST / HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok");
    assert_eq!(c.read_response().status, 200);
    expect_clean_end(&mut c);
    assert_eq!(server.get("/"), text_response("200 OK", "", ""));
    drop(c);
    server.shutdown();
}
