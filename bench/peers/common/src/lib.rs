//! What every comparison peer shares: command-line parsing, `SO_REUSEPORT` listeners and the
//! per-second `Date` cache.
//!
//! Every peer binary takes the same two options, so `bench/run` can start any of them the same way:
//!
//! ```text
//! PEER --addr 127.0.0.1:8080 --workers 1
//! ```
//!
//! - [`Args`]: `--addr HOST:PORT`, `--workers N`, and any extra `--name value` a peer wants.
//! - [`reuseport_listener`]: one listener per worker thread on the same port; the kernel spreads
//!   incoming connections between them.
//! - [`date`]: an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`) rendered at most once a second per
//!   thread.
//! - [`Message`]: the TechEmpower `/json` object.
//! - `tokio_workers` (feature `tokio`): `--workers N` accept loops on tokio, thread-per-core or
//!   work-stealing (`--flavor current|multi`).

use std::collections::HashMap;
use std::io;
use std::net::{SocketAddr, TcpListener};

use serde::Serialize;

pub mod date;
#[cfg(feature = "tokio")]
pub mod tokio_workers;

/// The TechEmpower `/json` body, `{"message":"Hello, World!"}`, serialized anew for every request.
#[derive(Debug, Serialize)]
pub struct Message {
    pub message: &'static str,
}

/// The `/json` object every peer serializes.
pub const HELLO: Message = Message {
    message: "Hello, World!",
};

/// The `/plaintext` body.
pub const PLAINTEXT: &[u8] = b"Hello, World!";

/// Parsed command line: `--addr HOST:PORT --workers N [--other value]...`.
#[derive(Debug)]
pub struct Args {
    pub addr: SocketAddr,
    pub workers: usize,
    extra: HashMap<String, String>,
}

impl Args {
    /// Parses `std::env::args()`. `--addr` defaults to `127.0.0.1:8080`, `--workers` to 1.
    /// Exits with a usage message on anything malformed: these are benchmark binaries, started by a
    /// script, and a loud early exit is the most useful failure.
    pub fn parse() -> Args {
        let mut addr = "127.0.0.1:8080".to_string();
        let mut workers = "1".to_string();
        let mut extra = HashMap::new();
        let mut args = std::env::args().skip(1);
        while let Some(flag) = args.next() {
            let Some(name) = flag.strip_prefix("--") else {
                usage(&format!("unexpected argument {flag:?}"));
            };
            // Accept both `--name value` and `--name=value`.
            let (name, value) = match name.split_once('=') {
                Some((n, v)) => (n.to_string(), v.to_string()),
                None => match args.next() {
                    Some(v) => (name.to_string(), v),
                    None => usage(&format!("--{name} needs a value")),
                },
            };
            match name.as_str() {
                "addr" => addr = value,
                "workers" => workers = value,
                _ => {
                    extra.insert(name, value);
                }
            }
        }
        let addr = addr
            .parse()
            .unwrap_or_else(|e| usage(&format!("bad --addr {addr:?}: {e}")));
        let workers = match workers.parse::<usize>() {
            Ok(n) if n > 0 => n,
            _ => usage(&format!("bad --workers {workers:?}")),
        };
        Args {
            addr,
            workers,
            extra,
        }
    }

    /// An extra option `--name value`, if given.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.extra.get(name).map(String::as_str)
    }

    /// An extra option parsed as `T`, or `default` when absent.
    pub fn get_or<T: std::str::FromStr>(&self, name: &str, default: T) -> T {
        match self.get(name) {
            None => default,
            Some(v) => v
                .parse()
                .unwrap_or_else(|_| usage(&format!("bad --{name} {v:?}"))),
        }
    }
}

fn usage(problem: &str) -> ! {
    let me = std::env::args().next().unwrap_or_default();
    eprintln!("{me}: {problem}\nusage: {me} --addr HOST:PORT --workers N");
    std::process::exit(2)
}

/// A nonblocking listener with `SO_REUSEADDR` and `SO_REUSEPORT` set, so each worker thread can
/// bind its own on the same address. Backlog 4096: the idle-memory scenario opens 5,000
/// connections in bursts.
pub fn reuseport_listener(addr: SocketAddr) -> io::Result<TcpListener> {
    use socket2::{Domain, Protocol, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    socket.set_reuse_port(true)?;
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    socket.listen(4096)?;
    Ok(socket.into())
}

/// Prints the one line `bench/run` does not need but a person starting a peer by hand wants.
pub fn announce(name: &str, args: &Args, how: &str) {
    eprintln!(
        "{name}: listening on {} with {} worker(s) ({how})",
        args.addr, args.workers
    );
}
