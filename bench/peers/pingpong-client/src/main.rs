//! Closed-loop ping-pong client for the runtime comparison.
//!
//! ```text
//! pingpong-client --addr 127.0.0.1:8080 [-c 64] [-s 100] [-d 10] [-t 1]
//! ```
//!
//! Opens `-c` connections, and on each one, over and over: writes one `-s`-byte message, waits until
//! the whole `-s`-byte echo is back, counts one op. Stops by itself after `-d` seconds, prints a
//! human line to stderr and one JSON line to stdout:
//!
//! ```text
//! {"connections":64,"msg_size":100,"duration_s":10.000,"ops":1234567,"ops_per_s":123456.7,"errors":0}
//! ```
//!
//! The client's own cost is kept low and the same for every server: `-t` threads (default 1), each
//! a single mio (epoll) loop over its share of the connections, with no allocation per op.

use std::io::{self, ErrorKind, Read, Write};
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::{Duration, Instant};

use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};

struct Options {
    addr: SocketAddr,
    connections: usize,
    msg_size: usize,
    duration: Duration,
    threads: usize,
}

fn parse_options() -> Options {
    let mut addr = "127.0.0.1:8080".to_string();
    let (mut connections, mut msg_size, mut secs, mut threads) = (64usize, 100usize, 10f64, 1usize);
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .unwrap_or_else(|| usage(&format!("{flag} needs a value")));
        match flag.as_str() {
            "--addr" | "-a" => addr = value.clone(),
            "-c" | "--connections" => connections = number(&flag, &value),
            "-s" | "--msg-size" => msg_size = number(&flag, &value),
            "-d" | "--duration" => secs = number(&flag, &value),
            "-t" | "--threads" => threads = number(&flag, &value),
            _ => usage(&format!("unknown option {flag}")),
        }
    }
    let addr = addr
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .unwrap_or_else(|| usage(&format!("bad --addr {addr:?}")));
    if connections == 0 || msg_size == 0 || threads == 0 || secs.is_nan() || secs <= 0.0 {
        usage("-c, -s, -t and -d must be positive");
    }
    Options {
        addr,
        connections,
        msg_size,
        duration: Duration::from_secs_f64(secs),
        threads: threads.min(connections),
    }
}

fn number<T: std::str::FromStr>(flag: &str, value: &str) -> T {
    value
        .parse()
        .unwrap_or_else(|_| usage(&format!("bad value for {flag}: {value:?}")))
}

fn usage(problem: &str) -> ! {
    eprintln!("pingpong-client: {problem}\nusage: pingpong-client --addr HOST:PORT [-c 64] [-s 100] [-d 10] [-t 1]");
    std::process::exit(2)
}

/// One connection's place in the exchange.
enum Phase {
    /// Writing the message; `n` bytes of it are out.
    Sending(usize),
    /// Message sent; `n` bytes of the echo are back.
    Receiving(usize),
}

struct Connection {
    stream: TcpStream,
    phase: Phase,
}

#[derive(Default)]
struct Tally {
    ops: u64,
    errors: u64,
}

fn main() {
    let opts = parse_options();
    let started = Instant::now();
    let deadline = started + opts.duration;
    let per_thread = split(opts.connections, opts.threads);
    let handles: Vec<_> = per_thread
        .into_iter()
        .map(|n| {
            let (addr, msg_size) = (opts.addr, opts.msg_size);
            std::thread::spawn(move || run(addr, n, msg_size, deadline))
        })
        .collect();
    let mut total = Tally::default();
    for handle in handles {
        match handle.join().expect("client thread panicked") {
            Ok(t) => {
                total.ops += t.ops;
                total.errors += t.errors;
            }
            Err(e) => {
                eprintln!("pingpong-client: {e}");
                std::process::exit(1);
            }
        }
    }
    let secs = started.elapsed().as_secs_f64();
    let rate = total.ops as f64 / secs;
    eprintln!(
        "pingpong-client: {} connections, {}-byte messages: {} ops in {secs:.3} s = {rate:.1} ops/s, {} errors",
        opts.connections, opts.msg_size, total.ops, total.errors
    );
    println!(
        "{{\"connections\":{},\"msg_size\":{},\"duration_s\":{secs:.3},\"ops\":{},\"ops_per_s\":{rate:.1},\"errors\":{}}}",
        opts.connections, opts.msg_size, total.ops, total.errors
    );
}

/// `total` connections over `threads` threads, as evenly as possible.
fn split(total: usize, threads: usize) -> Vec<usize> {
    (0..threads)
        .map(|i| total / threads + usize::from(i < total % threads))
        .collect()
}

/// One thread's loop over `count` connections until `deadline`.
fn run(addr: SocketAddr, count: usize, msg_size: usize, deadline: Instant) -> io::Result<Tally> {
    let message = vec![b'x'; msg_size];
    let mut echo = vec![0u8; msg_size];
    let mut poll = Poll::new()?;
    let mut conns = Vec::with_capacity(count);
    for i in 0..count {
        // Connect blocking, so every connection is established before the clock matters.
        let std_stream = std::net::TcpStream::connect(addr)?;
        std_stream.set_nodelay(true)?;
        std_stream.set_nonblocking(true)?;
        let mut stream = TcpStream::from_std(std_stream);
        poll.registry().register(
            &mut stream,
            Token(i),
            Interest::READABLE | Interest::WRITABLE,
        )?;
        conns.push(Some(Connection {
            stream,
            phase: Phase::Sending(0),
        }));
    }

    let mut tally = Tally::default();
    // Start every connection's first message, then serve readiness events.
    for conn in &mut conns {
        advance(conn, &message, &mut echo, &mut tally);
    }
    let mut events = Events::with_capacity(1024);
    loop {
        let now = Instant::now();
        if now >= deadline || conns.iter().all(Option::is_none) {
            break;
        }
        match poll.poll(&mut events, Some(deadline - now)) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        for event in events.iter() {
            advance(&mut conns[event.token().0], &message, &mut echo, &mut tally);
        }
    }
    Ok(tally)
}

/// Moves one connection as far as its socket allows without blocking (mio is edge-triggered, so
/// each readiness event must be drained to `WouldBlock`). A failed connection is dropped and counted.
fn advance(slot: &mut Option<Connection>, message: &[u8], echo: &mut [u8], tally: &mut Tally) {
    let Some(conn) = slot else { return };
    let result = loop {
        match conn.phase {
            Phase::Sending(sent) => match conn.stream.write(&message[sent..]) {
                Ok(n) if sent + n == message.len() => conn.phase = Phase::Receiving(0),
                Ok(n) => conn.phase = Phase::Sending(sent + n),
                Err(e) if e.kind() == ErrorKind::WouldBlock => break Ok(()),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            },
            Phase::Receiving(got) => match conn.stream.read(&mut echo[got..]) {
                Ok(0) => break Err(ErrorKind::UnexpectedEof.into()),
                Ok(n) if got + n == echo.len() => {
                    tally.ops += 1;
                    conn.phase = Phase::Sending(0);
                }
                Ok(n) => conn.phase = Phase::Receiving(got + n),
                Err(e) if e.kind() == ErrorKind::WouldBlock => break Ok(()),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            },
        }
    };
    if result.is_err() {
        tally.errors += 1;
        *slot = None;
    }
}
