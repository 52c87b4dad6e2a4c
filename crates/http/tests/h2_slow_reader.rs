//! An HTTP/2 client that opens a large window and then stops reading: the server must wait
//! for the socket, not spin, nor copy a whole body into its output. Its own test binary, so
//! that the CPU time of the one server worker thread (`volt-http-0`) is this test's alone.

mod common;
mod h2common;

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use bytes::Bytes;
use h2common::*;
use volt_http::{get as route_get, Body, Config, Router};

const WINDOW_UPDATE: u8 = 0x8;

/// User and system CPU time of this process's thread named `name`, in clock ticks.
fn thread_cpu_ticks(name: &str) -> u64 {
    for task in std::fs::read_dir("/proc/self/task").unwrap() {
        let dir = task.unwrap().path();
        let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        if comm.trim_end() != name {
            continue;
        }
        let stat = std::fs::read_to_string(dir.join("stat")).unwrap();
        // Fields after the parenthesised command: state is field 3, utime 14, stime 15.
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let utime: u64 = fields[11].parse().unwrap();
        let stime: u64 = fields[12].parse().unwrap();
        return utime + stime;
    }
    panic!("no thread named {name}");
}

/// The output filled up while the socket took no more: every pass of the connection's loop
/// said "again" (the output was still over its flush mark), and after 32 passes the task woke
/// itself, so a client with a large window that stopped reading kept a worker at 100% CPU
/// until the write timeout.
#[test]
fn a_client_that_stops_reading_costs_neither_cpu_nor_memory() {
    // 32 MiB streamed in 64 KiB chunks, always ready; and 32 MiB in memory.
    let full = Bytes::from(vec![b'y'; 32 << 20]);
    let app = Router::new()
        .route(
            "/big",
            route_get(|_req| async {
                let chunk = Bytes::from(vec![b'x'; 64 << 10]);
                let chunks = std::iter::repeat_n(chunk, 512).map(Ok::<_, std::io::Error>);
                volt_http::Response::bytes(Body::stream(common::Iter(chunks)))
            }),
        )
        .route(
            "/full",
            route_get(move |_req| {
                let full = full.clone();
                async move { volt_http::Response::bytes(full) }
            }),
        );
    let config = Config {
        write_timeout: Duration::from_secs(600),
        ..Config::default()
    };
    let server = common::start_with(1, config, app);
    let mut stream = TcpStream::connect(server.addr()).unwrap();
    // Two streams: the second finds the output already over its flush mark.
    stream.write_all(&large_window_requests("/big", 2)).unwrap();
    // The client reads nothing: the socket buffers fill and the server must wait.
    std::thread::sleep(Duration::from_secs(2));
    let before = thread_cpu_ticks("volt-http-0");
    std::thread::sleep(Duration::from_secs(3));
    let spent = thread_cpu_ticks("volt-http-0") - before;
    // An idle worker spends next to nothing; a spinning one most of the 300 ticks (even on a
    // loaded machine, far more than this).
    assert!(
        spent < 60,
        "the worker spent {spent} ticks waiting for a client that does not read"
    );
    // And when the client reads again, both bodies arrive whole.
    assert_eq!(read_bodies(&mut stream, 2), [32 << 20, 32 << 20]);
    drop(stream);

    // A 32 MiB in-memory body under a window as large went whole into the connection's
    // output: a copy of the body, held while the client did not read. It goes to the output
    // a flush mark at a time.
    let before = common::vm_rss();
    let mut stream = TcpStream::connect(server.addr()).unwrap();
    stream
        .write_all(&large_window_requests("/full", 1))
        .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    let grown = common::vm_rss().saturating_sub(before);
    assert!(
        grown < 16 << 20,
        "resident memory grew by {} KiB",
        grown >> 10
    );
    assert_eq!(read_bodies(&mut stream, 1), [32 << 20]);
}

/// The preface with windows of 2^31-1 (SETTINGS_INITIAL_WINDOW_SIZE and the connection's),
/// then `n` GET requests for `path` on streams 1, 3, ...
fn large_window_requests(path: &str, n: u32) -> Vec<u8> {
    let mut bytes = PREFACE.to_vec();
    bytes.extend(frame(SETTINGS, 0, 0, &[0, 4, 0x7f, 0xff, 0xff, 0xff]));
    let rest = 0x7fff_ffffu32 - 65_535;
    bytes.extend(frame(WINDOW_UPDATE, 0, 0, &rest.to_be_bytes()));
    let mut block = vec![0x82, 0x86, 0x04, path.len() as u8];
    block.extend_from_slice(path.as_bytes());
    block.extend([0x41, 0x01, b't']);
    for i in 0..n {
        bytes.extend(frame(HEADERS, END_STREAM | END_HEADERS, 1 + 2 * i, &block));
    }
    bytes
}

/// Reads frames until `n` streams ended; the DATA bytes of each (streams 1, 3, ...).
fn read_bodies(stream: &mut TcpStream, n: usize) -> Vec<usize> {
    use std::io::Read;
    stream.set_read_timeout(Some(common::HANG_GUARD)).unwrap();
    let mut got = vec![0; n];
    let mut ended = 0;
    let mut buf = Vec::new();
    let mut pos = 0;
    let mut chunk = vec![0u8; 256 * 1024];
    loop {
        while buf.len() - pos >= 9 {
            let h = &buf[pos..pos + 9];
            let len = (usize::from(h[0]) << 16) | (usize::from(h[1]) << 8) | usize::from(h[2]);
            if buf.len() - pos < 9 + len {
                break;
            }
            let id = u32::from_be_bytes([h[5], h[6], h[7], h[8]]) as usize;
            if h[3] == DATA {
                got[(id - 1) / 2] += len;
            }
            if (h[3] == DATA || h[3] == HEADERS) && h[4] & END_STREAM != 0 {
                ended += 1;
            }
            pos += 9 + len;
        }
        if ended == n {
            return got;
        }
        buf.drain(..pos);
        pos = 0;
        let k = stream
            .read(&mut chunk)
            .unwrap_or_else(|e| panic!("reading the bodies (hung?) {got:?} {ended}: {e}"));
        assert!(k > 0, "closed before the bodies ended: {got:?}");
        buf.extend_from_slice(&chunk[..k]);
    }
}
