//! The known HTTP/2 floods, sent as raw frames over a socket: each must end with GOAWAY
//! (`ENHANCE_YOUR_CALM`) and a closed connection for the attacker, while a connection opened
//! before the attack and one opened after it are still served.
//!
//! The attacker writes from its own thread and reads on the test thread, so neither side
//! blocks the other however the server paces its answers. Nothing here depends on timing:
//! every flood is far beyond its limit.

mod common;
mod h2common;

use std::io::Write;
use std::net::TcpStream;

use bytes::Bytes;
use h2common::*;
use volt_http::{get as route_get, Config, Router};

fn app() -> Router {
    Router::new()
        .route("/", route_get(|_req| async { "Hello, World!" }))
        .route("/slow", route_get(|_req| std::future::pending::<&str>()))
        .route("/big", route_get(|_req| async { vec![b'x'; BIG] }))
}

/// The body of `/big`: sixteen times the connection's initial window.
const BIG: usize = 1 << 20;

/// Starts a server whose `write_timeout` is 2 s and asks for `/big` on streams 1 and 3 of a
/// connection whose stream windows are 16 MiB (SETTINGS_INITIAL_WINDOW_SIZE) but whose
/// connection window stays at its initial 64 KiB until the client opens it.
fn two_big_responses() -> (common::TestServer, TcpStream) {
    let config = Config {
        write_timeout: std::time::Duration::from_secs(2),
        ..Config::default()
    };
    let server = common::start_with(1, config, app());
    let mut stream = TcpStream::connect(server.addr()).unwrap();
    let mut bytes = PREFACE.to_vec();
    bytes.extend(frame(SETTINGS, 0, 0, &[0, 4, 1, 0, 0, 0]));
    for id in [1, 3] {
        bytes.extend(frame(
            HEADERS,
            END_STREAM | END_HEADERS,
            id,
            &block_for(0x82, b"/big"),
        ));
    }
    stream.write_all(&bytes).unwrap();
    (server, stream)
}

/// Streams that wait their turn for the connection's window are not stalled: a client reading
/// two large responses over a slow link (the connection window opened 64 KiB at a time, every
/// 200 ms) gets both whole, though the second waits several seconds, longer than
/// `write_timeout`, behind the first. (Timed per stream, the wait for the connection's window
/// reset the second stream with CANCEL.)
#[test]
fn streams_waiting_their_turn_for_the_connection_window_are_not_reset() {
    let (_server, mut stream) = two_big_responses();
    stream.set_read_timeout(Some(common::HANG_GUARD)).unwrap();
    let mut writer = stream.try_clone().unwrap();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let opener = std::thread::spawn({
        let done = done.clone();
        move || {
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(std::time::Duration::from_millis(200));
                let update = frame(WINDOW_UPDATE, 0, 0, &(64u32 << 10).to_be_bytes());
                if writer.write_all(&update).is_err() {
                    return;
                }
            }
        }
    });
    let (mut buf, mut got) = (Vec::new(), [0usize; 2]);
    let mut ended = [false; 2];
    while ended != [true; 2] {
        let (kind, flags, id, payload) = next_frame(&mut stream, &mut buf);
        assert_ne!(kind, RST_STREAM, "stream {id} was reset");
        assert_ne!(kind, GOAWAY, "the connection was closed");
        if kind == DATA && (id == 1 || id == 3) {
            got[(id / 2) as usize] += payload.len();
            ended[(id / 2) as usize] |= flags & END_STREAM != 0;
        }
    }
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    opener.join().unwrap();
    assert_eq!(got, [BIG, BIG]);
}

/// A client that never opens the connection's window holds every response of the connection
/// while no stream's own window is shut: after `write_timeout` with nothing sent, the
/// connection is closed, as when the socket takes nothing.
#[test]
fn a_connection_window_that_never_opens_closes_the_connection() {
    let (_server, mut stream) = two_big_responses();
    let started = std::time::Instant::now();
    assert_eq!(
        read_until_reset_or_goaway(&mut stream, 3),
        None,
        "closed, no reset"
    );
    assert!(started.elapsed() >= std::time::Duration::from_secs(2));
}

/// Starts the server, opens a bystander h2c connection, runs `attack` (the frames after the
/// client preface) on another, and checks the attacker's GOAWAY code and that the bystander
/// and a new connection are still served.
fn assert_flood_stopped(config: Config, attack: impl FnOnce() -> Vec<u8> + Send + 'static) {
    let server = common::start_with(1, config, app());
    let addr = server.addr();
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_nodelay(true).unwrap();
    let mut writer = stream.try_clone().unwrap();
    let attacker = std::thread::spawn(move || {
        let mut bytes = client_start();
        bytes.extend(attack());
        // The server may close before taking it all: a write error is the expected end.
        let _ = writer.write_all(&bytes);
    });
    let code = read_until_goaway(&mut stream);
    attacker.join().unwrap();
    assert_eq!(
        code,
        Some(ENHANCE_YOUR_CALM),
        "GOAWAY ENHANCE_YOUR_CALM, then close"
    );

    volt_rt::block_on(async move {
        let mut fresh = connect_h2c(addr).await;
        let r = send(&mut fresh, get("/"), Bytes::new()).await;
        assert_eq!((r.status, r.text()), (200, "Hello, World!".to_string()));
    });
    assert!(server.get("/").starts_with("HTTP/1.1 200 OK"));
}

/// A bystander on the same worker, connected before the attack, answered after it.
fn with_bystander(config: Config, attack: impl FnOnce() -> Vec<u8> + Send + 'static) {
    let server = common::start_with(1, config.clone(), app());
    let addr = server.addr();
    volt_rt::block_on(async move {
        let mut bystander = connect_h2c(addr).await;
        assert_eq!(
            send(&mut bystander, get("/"), Bytes::new()).await.status,
            200
        );
        let attack_thread = std::thread::spawn(move || {
            let mut stream = TcpStream::connect(addr).unwrap();
            let mut writer = stream.try_clone().unwrap();
            let w = std::thread::spawn(move || {
                let mut bytes = client_start();
                bytes.extend(attack());
                let _ = writer.write_all(&bytes);
            });
            let code = read_until_goaway(&mut stream);
            w.join().unwrap();
            code
        });
        while !attack_thread.is_finished() {
            volt_rt::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        assert_eq!(attack_thread.join().unwrap(), Some(ENHANCE_YOUR_CALM));
        let r = send(&mut bystander, get("/"), Bytes::new()).await;
        assert_eq!((r.status, r.text()), (200, "Hello, World!".to_string()));
    });
}

fn repeat(n: usize, one: impl Fn(usize) -> Vec<u8>) -> Vec<u8> {
    (0..n).flat_map(one).collect()
}

/// CVE-2023-44487: open a stream and reset it at once, over and over.
fn rapid_reset() -> Vec<u8> {
    repeat(20_000, |i| {
        let id = 1 + 2 * i as u32;
        let mut f = frame(HEADERS, END_STREAM | END_HEADERS, id, &request_block(false));
        f.extend(frame(RST_STREAM, 0, id, &8u32.to_be_bytes())); // CANCEL
        f
    })
}

#[test]
fn rapid_reset_gets_goaway() {
    assert_flood_stopped(Config::default(), rapid_reset);
}

#[test]
fn rapid_reset_leaves_other_connections_alone() {
    with_bystander(Config::default(), rapid_reset);
}

#[test]
fn continuation_flood_gets_goaway() {
    // A header block that never ends: HEADERS without END_HEADERS, then empty CONTINUATIONs.
    assert_flood_stopped(Config::default(), || {
        let mut b = frame(HEADERS, END_STREAM, 1, &request_block(false));
        b.extend(repeat(100_000, |_| frame(CONTINUATION, 0, 1, &[])));
        b
    });
}

#[test]
fn ping_flood_gets_goaway() {
    assert_flood_stopped(Config::default(), || {
        repeat(200_000, |i| frame(PING, 0, 0, &(i as u64).to_be_bytes()))
    });
}

#[test]
fn ping_flood_leaves_other_connections_alone() {
    with_bystander(Config::default(), || {
        repeat(200_000, |i| frame(PING, 0, 0, &(i as u64).to_be_bytes()))
    });
}

#[test]
fn settings_flood_gets_goaway() {
    assert_flood_stopped(Config::default(), || {
        // SETTINGS_MAX_CONCURRENT_STREAMS = 100, over and over.
        repeat(200_000, |_| frame(SETTINGS, 0, 0, &[0, 3, 0, 0, 0, 100]))
    });
}

/// One-byte WINDOW_UPDATEs while the server sends nothing: counted in no budget, they kept
/// the server busy for as long as the client liked.
#[test]
fn window_update_flood_gets_goaway() {
    assert_flood_stopped(Config::default(), || {
        let mut b = frame(HEADERS, END_STREAM | END_HEADERS, 1, &slow_block());
        b.extend(repeat(200_000, |_| {
            let mut f = frame(WINDOW_UPDATE, 0, 0, &1u32.to_be_bytes());
            f.extend(frame(WINDOW_UPDATE, 0, 1, &1u32.to_be_bytes()));
            f
        }));
        b
    });
}

#[test]
fn empty_data_flood_gets_goaway() {
    assert_flood_stopped(Config::default(), || {
        let mut b = frame(HEADERS, END_HEADERS, 1, &request_block(true));
        b.extend(repeat(200_000, |_| frame(DATA, 0, 1, &[])));
        b
    });
}

/// A `GET /slow` block: its handler never finishes.
fn slow_block() -> Vec<u8> {
    block_for(0x82, b"/slow")
}

#[test]
fn rapid_reset_of_streams_still_in_their_handlers_gets_goaway() {
    // The CVE-2023-44487 shape that costs a server most: every stream reset while its
    // handler is still running.
    assert_flood_stopped(Config::default(), || {
        repeat(5_000, |i| {
            let id = 1 + 2 * i as u32;
            let mut f = frame(HEADERS, END_STREAM | END_HEADERS, id, &slow_block());
            f.extend(frame(RST_STREAM, 0, id, &8u32.to_be_bytes()));
            f
        })
    });
}

#[test]
fn provoked_resets_get_goaway() {
    // "MadeYouReset": every request is malformed (an uppercase field name), so the server
    // must reset each stream itself.
    assert_flood_stopped(Config::default(), || {
        repeat(5_000, |i| {
            let mut block = request_block(false);
            block.extend([0x00, 1, b'A', 1, b'b']);
            frame(HEADERS, END_STREAM | END_HEADERS, 1 + 2 * i as u32, &block)
        })
    });
}

/// Reads frames until RST_STREAM on `stream` or GOAWAY (its frame type and code), or `None`
/// if the connection closed without either. Panics (hang guard) if the server never acts.
fn read_until_reset_or_goaway(stream: &mut TcpStream, id: u32) -> Option<(u8, u32)> {
    use std::io::Read;
    stream.set_read_timeout(Some(common::HANG_GUARD)).unwrap();
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        while buf.len() >= 9 {
            let len =
                (usize::from(buf[0]) << 16) | (usize::from(buf[1]) << 8) | usize::from(buf[2]);
            if buf.len() < 9 + len {
                break;
            }
            let kind = buf[3];
            let on = u32::from_be_bytes([buf[5], buf[6], buf[7], buf[8]]) & 0x7fff_ffff;
            let p = &buf[9..9 + len];
            if kind == RST_STREAM && on == id {
                return Some((kind, u32::from_be_bytes([p[0], p[1], p[2], p[3]])));
            }
            if kind == GOAWAY {
                return Some((kind, u32::from_be_bytes([p[4], p[5], p[6], p[7]])));
            }
            buf.drain(..9 + len);
        }
        match stream.read(&mut chunk) {
            Ok(0) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if common::is_reset(&e) => return None,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => panic!("reading frames (the server never gave up on the stream?): {e}"),
        }
    }
}

/// A server with a `write_timeout` of 1 s, and a connection to it whose client asked for `/`
/// on stream 1 with an initial stream window of 0 (SETTINGS_INITIAL_WINDOW_SIZE): no byte of
/// the response body may go out until a WINDOW_UPDATE, which the client never sends.
fn stalled_on_a_zero_window(max_control_frames: u32) -> (common::TestServer, TcpStream) {
    let config = Config {
        write_timeout: std::time::Duration::from_secs(1),
        h2_max_control_frames: max_control_frames,
        ..Config::default()
    };
    let server = common::start_with(1, config, app());
    let mut stream = TcpStream::connect(server.addr()).unwrap();
    let mut bytes = PREFACE.to_vec();
    bytes.extend(frame(SETTINGS, 0, 0, &[0, 4, 0, 0, 0, 0]));
    bytes.extend(frame(
        HEADERS,
        END_STREAM | END_HEADERS,
        1,
        &request_block(false),
    ));
    stream.write_all(&bytes).unwrap();
    (server, stream)
}

/// A client that opens a stream and never gives the server window to answer on it (slow
/// read with flow control, CVE-2019-9517's shape) held the stream, its response and the
/// connection for ever: no byte waited for the socket, so the write timeout never ran. A
/// response that waits for window longer than `write_timeout` now resets its stream.
#[test]
fn a_response_stalled_on_a_zero_window_is_reset() {
    let (_server, mut stream) = stalled_on_a_zero_window(Config::default().h2_max_control_frames);
    // The client keeps the connection open and never sends WINDOW_UPDATE.
    let got = read_until_reset_or_goaway(&mut stream, 1);
    assert_eq!(
        got,
        Some((RST_STREAM, 0x8)),
        "RST_STREAM CANCEL on stream 1"
    );
}

/// The connection's deadlines were looked at only when its loop ran out of work: a client
/// that kept the loop busy held them off for as long as it liked. Here a response is stalled
/// on a zero stream window while the client sends connection-level WINDOW_UPDATEs (one byte
/// each: they open nothing for the stalled stream) as fast as the server reads them, with
/// the control-frame budget (which would stop them) out of the way. The stall must still
/// reset the stream after `write_timeout`.
#[test]
fn a_busy_connection_still_resets_a_stalled_stream() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    let (_server, mut stream) = stalled_on_a_zero_window(u32::MAX);
    let done = Arc::new(AtomicBool::new(false));
    let mut writer = stream.try_clone().unwrap();
    let flooder = {
        let done = done.clone();
        std::thread::spawn(move || {
            let updates: Vec<u8> = (0..80_000)
                .flat_map(|_| frame(WINDOW_UPDATE, 0, 0, &1u32.to_be_bytes()))
                .collect();
            // Until the test has its answer (or the server closes).
            while !done.load(Ordering::SeqCst) && writer.write_all(&updates).is_ok() {}
        })
    };
    let got = read_until_reset_or_goaway(&mut stream, 1);
    done.store(true, Ordering::SeqCst);
    let _ = stream.shutdown(std::net::Shutdown::Both);
    flooder.join().unwrap();
    assert_eq!(
        got,
        Some((RST_STREAM, 0x8)),
        "RST_STREAM CANCEL on stream 1"
    );
}

/// A client that goes silent holds its connection no longer than the timeouts: one that sends
/// nothing after its preface is closed by `idle_timeout`; one that stops in the middle of a
/// header block (HEADERS without END_HEADERS) by `header_read_timeout`, as a partial HTTP/1
/// head is (it waited for the idle timeout, six times longer by default). Each gets GOAWAY
/// and a close.
#[test]
fn a_silent_client_is_closed_by_the_timeouts() {
    let long = std::time::Duration::from_secs(600);
    let short = std::time::Duration::from_secs(1);
    let cases = [
        (short, long, vec![]),
        (
            long,
            short,
            frame(HEADERS, END_STREAM, 1, &request_block(false)),
        ),
        // A HEADERS frame cut short.
        (
            long,
            short,
            frame(HEADERS, END_STREAM | END_HEADERS, 1, &request_block(false))[..12].to_vec(),
        ),
    ];
    for (idle_timeout, header_read_timeout, tail) in cases {
        let config = Config {
            idle_timeout,
            header_read_timeout,
            ..Config::default()
        };
        let server = common::start_with(1, config, app());
        let mut stream = TcpStream::connect(server.addr()).unwrap();
        let mut bytes = client_start();
        bytes.extend(tail);
        stream.write_all(&bytes).unwrap();
        assert!(
            read_until_goaway(&mut stream).is_some(),
            "GOAWAY, then close"
        );
    }
}

/// Streams beyond the advertised `SETTINGS_MAX_CONCURRENT_STREAMS` are refused
/// (RST_STREAM REFUSED_STREAM) while the ones within it keep running; once one ends, a new
/// stream is taken again.
#[test]
fn streams_over_the_advertised_limit_are_refused() {
    let config = Config {
        h2_max_concurrent_streams: 10,
        ..Config::default()
    };
    let server = common::start_with(1, config, app());
    let mut stream = TcpStream::connect(server.addr()).unwrap();
    stream.set_read_timeout(Some(common::HANG_GUARD)).unwrap();
    let mut bytes = client_start();
    for i in 0..15u32 {
        bytes.extend(frame(
            HEADERS,
            END_STREAM | END_HEADERS,
            1 + 2 * i,
            &slow_block(),
        ));
    }
    stream.write_all(&bytes).unwrap();
    // Streams 21..=29 are refused; 1..=19 still run.
    let mut buf = Vec::new();
    let mut refused = Vec::new();
    while refused.len() < 5 {
        let (kind, _, id, payload) = next_frame(&mut stream, &mut buf);
        assert_ne!(kind, GOAWAY);
        if kind == RST_STREAM {
            assert_eq!(payload, 7u32.to_be_bytes(), "REFUSED_STREAM");
            refused.push(id);
        }
    }
    assert_eq!(refused, [21, 23, 25, 27, 29]);
    // The client resets one running stream: a new one fits, and is answered.
    let mut bytes = frame(RST_STREAM, 0, 1, &8u32.to_be_bytes());
    bytes.extend(frame(
        HEADERS,
        END_STREAM | END_HEADERS,
        31,
        &request_block(false),
    ));
    stream.write_all(&bytes).unwrap();
    let mut body = Vec::new();
    loop {
        let (kind, flags, id, payload) = next_frame(&mut stream, &mut buf);
        assert!(kind != RST_STREAM && kind != GOAWAY, "frame {kind} on {id}");
        if kind == DATA && id == 31 {
            body.extend_from_slice(&payload);
            if flags & END_STREAM != 0 {
                break;
            }
        }
    }
    assert_eq!(body, b"Hello, World!");
}
