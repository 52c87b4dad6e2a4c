//! A raw-socket HTTP/2 (h2c) test server on std threads: it reads the client's frames and
//! answers every request in the way a test asks for (valid, reset, refused, malformed), and
//! counts what it saw. Its answers are fixed frames (`:status 200` is the one-byte static
//! index 0x88), so it needs no HPACK encoder and allocates nothing per request.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::Acceptor;
use volt_proto::h2::frame::{
    flags, setting, write_data, write_goaway, write_header, write_rst_stream, write_settings,
    write_settings_ack, write_window_update, FrameHeader, Kind, Reason,
};

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const PING_PAYLOAD: [u8; 8] = *b"volt-png";

/// How the server answers.
#[derive(Clone, Copy, Debug)]
pub enum H2Behavior {
    /// `:status 200` and `Hello, World!`.
    Hello,
    /// A body of this many bytes, in 16 KiB DATA frames; the server sends a PING first.
    Big(usize),
    /// RST_STREAM `CANCEL` for every request.
    Reset,
    /// Answers the first request it reads on a connection, then GOAWAY with that stream as the
    /// last, and closes.
    GoAwayAfterOne,
    /// Bytes that are no HTTP/2 frames instead of its SETTINGS.
    GarbagePreface,
    /// A valid SETTINGS, then a DATA frame on stream 0 for the first requests.
    BadFrame,
    /// SETTINGS_MAX_CONCURRENT_STREAMS of this many; answers like `Hello`.
    MaxStreams(u32),
    /// Reads requests and never answers them.
    Silent,
    /// Closes the connection (no GOAWAY) once requests came.
    CloseOnRequest,
}

pub struct H2Server {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Acceptor,
}

#[derive(Default)]
struct Shared {
    requests: AtomicUsize,
    /// The most requests read and not answered yet on one connection.
    max_open: AtomicUsize,
    window_updates: AtomicUsize,
    ping_acks: AtomicUsize,
    /// Request body bytes read.
    data_bytes: AtomicUsize,
    /// Stream ids that were not odd and increasing, SETTINGS without the large window, ...
    violations: Mutex<Vec<String>>,
}

impl H2Server {
    pub fn start(behavior: H2Behavior) -> H2Server {
        let shared = Arc::new(Shared::default());
        let s = shared.clone();
        let acceptor = Acceptor::start(move |conn, stop| serve(conn, behavior, &s, stop));
        H2Server {
            addr: acceptor.addr,
            shared,
            acceptor,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn accepts(&self) -> usize {
        self.acceptor.accepts()
    }

    /// Requests (HEADERS frames opening a stream) read.
    pub fn requests(&self) -> usize {
        self.shared.requests.load(Ordering::Acquire)
    }

    pub fn max_open(&self) -> usize {
        self.shared.max_open.load(Ordering::Acquire)
    }

    pub fn window_updates(&self) -> usize {
        self.shared.window_updates.load(Ordering::Acquire)
    }

    pub fn data_bytes(&self) -> usize {
        self.shared.data_bytes.load(Ordering::Acquire)
    }

    pub fn ping_acks(&self) -> usize {
        self.shared.ping_acks.load(Ordering::Acquire)
    }

    pub fn violations(&self) -> Vec<String> {
        self.shared.violations.lock().unwrap().clone()
    }
}

fn violation(s: &Shared, what: String) {
    s.violations.lock().unwrap().push(what);
}

fn serve(mut conn: TcpStream, behavior: H2Behavior, s: &Shared, stop: &AtomicBool) {
    let _ = conn.set_nodelay(true);
    let _ = conn.set_read_timeout(Some(Duration::from_millis(50)));
    let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024);
    let mut chunk = vec![0u8; 64 * 1024];
    let mut out: Vec<u8> = Vec::with_capacity(64 * 1024);
    let mut pending: Vec<u32> = Vec::with_capacity(1024);
    let big_body = match behavior {
        H2Behavior::Big(n) => vec![b'x'; n],
        _ => Vec::new(),
    };
    let mut preface_seen = false;
    let mut last_id = 0;
    // Request body bytes the client may still send on the connection: 64 KiB, and what each
    // WINDOW_UPDATE below gives back (stream windows are given back alike, so the connection's
    // is the one that binds).
    let mut window: i64 = 65_535;
    match behavior {
        H2Behavior::GarbagePreface => {
            let _ = conn.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
            return linger(conn, stop);
        }
        H2Behavior::MaxStreams(m) => {
            write_settings(&mut out, &[(setting::MAX_CONCURRENT_STREAMS, m)])
        }
        _ => write_settings(&mut out, &[]),
    }
    if let H2Behavior::Big(_) = behavior {
        write_header(&mut out, 8, Kind::Ping, 0, 0);
        out.extend_from_slice(&PING_PAYLOAD);
    }
    if conn.write_all(&out).is_err() {
        return;
    }
    loop {
        if stop.load(Ordering::Acquire) {
            return;
        }
        match conn.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => continue,
            Err(_) => return,
        }
        if !preface_seen {
            if buf.len() < PREFACE.len() {
                continue;
            }
            if &buf[..PREFACE.len()] != PREFACE {
                violation(s, "no preface".into());
                return;
            }
            buf.drain(..PREFACE.len());
            preface_seen = true;
        }
        out.clear();
        let mut at = 0;
        while let Some(h) = FrameHeader::parse(&buf[at..]) {
            let len = h.len as usize;
            if buf.len() < at + 9 + len {
                break;
            }
            let payload = &buf[at + 9..at + 9 + len];
            match h.kind {
                Kind::Settings if !h.has(flags::ACK) => {
                    let window = payload.chunks_exact(6).find_map(|p| {
                        (u16::from_be_bytes([p[0], p[1]]) == setting::INITIAL_WINDOW_SIZE)
                            .then(|| u32::from_be_bytes([p[2], p[3], p[4], p[5]]))
                    });
                    if window != Some((1 << 31) - 1) {
                        violation(s, format!("client SETTINGS window {window:?}"));
                    }
                    write_settings_ack(&mut out);
                }
                Kind::WindowUpdate => {
                    s.window_updates.fetch_add(1, Ordering::AcqRel);
                }
                Kind::Ping if h.has(flags::ACK) => {
                    if payload != PING_PAYLOAD {
                        violation(s, "PING ACK with another payload".into());
                    }
                    s.ping_acks.fetch_add(1, Ordering::AcqRel);
                }
                Kind::Headers => {
                    s.requests.fetch_add(1, Ordering::AcqRel);
                    if h.stream % 2 == 0 || h.stream <= last_id {
                        violation(s, format!("stream id {} after {last_id}", h.stream));
                    }
                    last_id = h.stream;
                    if h.has(flags::END_STREAM) {
                        pending.push(h.stream);
                    }
                }
                Kind::Data => {
                    s.data_bytes.fetch_add(len, Ordering::AcqRel);
                    window -= len as i64;
                    if window < 0 {
                        violation(s, format!("DATA past the window by {}", -window));
                    }
                    if len > 0 {
                        // Given back at once, for the connection and the stream.
                        write_window_update(&mut out, 0, len as u32);
                        write_window_update(&mut out, h.stream, len as u32);
                        window += len as i64;
                    }
                    if h.has(flags::END_STREAM) {
                        pending.push(h.stream);
                    }
                }
                _ => {}
            }
            at += 9 + len;
        }
        buf.drain(..at);
        s.max_open.fetch_max(pending.len(), Ordering::AcqRel);
        if let H2Behavior::MaxStreams(m) = behavior {
            if pending.len() > m as usize {
                violation(s, format!("{} streams open, {m} allowed", pending.len()));
            }
        }
        let mut close = false;
        for &id in &pending {
            match behavior {
                H2Behavior::Hello | H2Behavior::MaxStreams(_) => hello(&mut out, id),
                H2Behavior::Big(_) => {
                    write_header(&mut out, 1, Kind::Headers, flags::END_HEADERS, id);
                    out.push(0x88);
                    let mut chunks = big_body.chunks(16_384).peekable();
                    while let Some(part) = chunks.next() {
                        write_data(&mut out, id, part, chunks.peek().is_none());
                    }
                }
                H2Behavior::Reset => write_rst_stream(&mut out, id, Reason::CANCEL),
                H2Behavior::GoAwayAfterOne => {
                    hello(&mut out, id);
                    write_goaway(&mut out, id, Reason::NO_ERROR);
                    close = true;
                    break;
                }
                H2Behavior::BadFrame => {
                    write_data(&mut out, 0, b"nonsense", false);
                    close = true;
                    break;
                }
                H2Behavior::Silent => {}
                H2Behavior::CloseOnRequest => {
                    close = true;
                    break;
                }
                H2Behavior::GarbagePreface => unreachable!(),
            }
        }
        pending.clear();
        if !out.is_empty() && conn.write_all(&out).is_err() {
            return;
        }
        if close {
            return linger(conn, stop);
        }
    }
}

fn hello(out: &mut Vec<u8>, id: u32) {
    write_header(out, 1, Kind::Headers, flags::END_HEADERS, id);
    out.push(0x88);
    write_data(out, id, b"Hello, World!", true);
}

/// Ends a connection gracefully: no more writes, then what the client still sends is read
/// until it closes (closing with unread bytes would send a reset, which may destroy the last
/// frames before the client reads them).
fn linger(mut conn: TcpStream, stop: &AtomicBool) {
    let _ = conn.shutdown(Shutdown::Write);
    let until = Instant::now() + Duration::from_secs(5);
    let mut sink = [0u8; 4096];
    while Instant::now() < until && !stop.load(Ordering::Acquire) {
        match conn.read(&mut sink) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return,
        }
    }
}
