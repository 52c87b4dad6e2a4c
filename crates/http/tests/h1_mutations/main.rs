//! A seeded stream of mutated requests against the running HTTP/1 server, over real sockets.
//!
//! Each case takes one of a set of well-formed seed requests (bodies by length and chunked,
//! `Expect`, HTTP/1.0 keep-alive, pipelined pairs, absolute and asterisk targets), mutates it
//! (bytes flipped, inserted, deleted; lines duplicated or dropped; CRLF made LF or CR;
//! NUL, CR and non-ASCII bytes; numbers in `Content-Length` and chunk sizes made huge, negative
//! or junk; header lines added; the request cut short), sends it on a fresh connection in a few
//! writes with short pauses between them, half-closes, and reads everything until the server
//! closes. `volt_proto::parse_request` and `BodyDecoder` on the same bytes are the oracle of
//! what the server must answer:
//!
//! - every byte back is a sequence of well-formed HTTP/1.1 responses (a `100 Continue` only
//!   to a request that asked), then the close: nothing after a `Connection: close` answer;
//! - a request the codec rejects gets the codec's status with `Connection: close`, and is the
//!   last answered; an unfinished head gets no answer; never a 2xx for what the codec refused;
//! - a well-formed request gets its route's answer (the echo route the oracle's decoded body),
//!   a 500 only from the panicking route, a 4xx from reading a body only for a body the
//!   oracle finds broken or cut short, and closes then;
//! - a connection opened before all cases is still served after them, and so is a new one.
//!
//! The stream is deterministic (`SEED`); `H1_MUTATIONS_SEED`, `H1_MUTATIONS_CASES` and
//! `H1_MUTATIONS_DEPTH` (most mutations a case, 3) explore others. Timeouts are hang guards
//! only: nothing here depends on how fast the server is.

#[path = "../common/mod.rs"]
mod common;
mod mutate;
mod oracle;

use std::fmt::Write as _;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::thread;
use std::time::Duration;

use common::{is_reset, text_response, XorShift, HANG_GUARD};
use volt_http::{any, Body, Config, Request, Response, Router};
use volt_proto::Limits;

use mutate::{mutate, SEEDS};
use oracle::{check, ends_by_itself, oracle, read_answers};

const SEED: u64 = 0x5eed_0f4e_110b_0001;
const CASES: usize = 3000;
/// How many failures are listed before the test gives up.
const MAX_REPORTED: usize = 8;

fn config() -> Config {
    Config {
        max_head_bytes: 1024,
        max_headers: 16,
        max_uri_bytes: 256,
        max_body_bytes: 1000,
        // The bystander waits idle through every case, however slow the machine.
        idle_timeout: Duration::from_secs(600),
        // The client half-closes after its bytes (see `exchange`) and expects every answer,
        // `/slow`'s too.
        half_close: true,
        ..Default::default()
    }
}

/// Every handler that answers names itself in `x-route`, so a response says who made it.
fn app() -> Router {
    Router::new()
        .route(
            "/",
            any(|_req| async { Response::text("root").with_header("x-route", "root") }),
        )
        .route(
            "/echo",
            any(|mut req: Request| async move {
                req.bytes()
                    .await
                    .map(|b| Response::bytes(b).with_header("x-route", "echo"))
            }),
        )
        .route(
            "/slow",
            any(|mut req: Request| async move {
                // Answers after a wait (the connection goes on in a future of its own), then
                // reads the body.
                volt_rt::time::sleep(Duration::from_millis(1)).await;
                req.bytes()
                    .await
                    .map(|b| Response::bytes(b).with_header("x-route", "echo"))
            }),
        )
        .route(
            "/stream",
            any(|_req| async {
                let (mut tx, body) = Body::channel();
                volt_rt::spawn(async move {
                    for part in ["one ", "two ", "three"] {
                        if tx.send(part).await.is_err() {
                            return;
                        }
                        volt_rt::time::sleep(Duration::from_millis(1)).await;
                    }
                });
                Response::text(body).with_header("x-route", "stream")
            }),
        )
        .route(
            "/panic",
            any(|_req| async {
                if true {
                    panic!("handler panicked on purpose");
                }
                Response::text("unreachable")
            }),
        )
}

/// Sends `bytes` on a new connection in `pieces`, half-closes, and reads until the close.
/// `Err` if the connection was reset before the server's answers were all read back
/// (a reset after them is how a close with unread request bytes looks).
/// `half_close`: the client closes its side after the request; else the server has to close
/// the connection by itself.
fn exchange(
    addr: SocketAddr,
    bytes: &[u8],
    splits: &[usize],
    pause: Duration,
    half_close: bool,
) -> Vec<u8> {
    let mut stream = TcpStream::connect(addr).expect("connecting to the test server");
    stream.set_nodelay(true).unwrap();
    stream.set_read_timeout(Some(HANG_GUARD)).unwrap();
    stream.set_write_timeout(Some(HANG_GUARD)).unwrap();
    let mut from = 0;
    for &to in splits.iter().chain(std::iter::once(&bytes.len())) {
        if stream.write_all(&bytes[from..to]).is_err() {
            break; // the server closed; what it said is still to be read
        }
        from = to;
        if to < bytes.len() && !pause.is_zero() {
            thread::sleep(pause);
        }
    }
    if half_close {
        let _ = stream.shutdown(Shutdown::Write);
    }
    let mut got = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if is_reset(&e) => break,
            Err(e) => panic!(
                "reading the answers: {e} (a hang?); have {:?}",
                escape(&got)
            ),
        }
    }
    got
}

fn escape(bytes: &[u8]) -> String {
    bytes.escape_ascii().to_string()
}

#[test]
fn mutated_requests_get_a_clear_answer_or_a_close() {
    let seed = std::env::var("H1_MUTATIONS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(SEED);
    let cases = std::env::var("H1_MUTATIONS_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(CASES);
    // Most mutations a case applies.
    let depth = std::env::var("H1_MUTATIONS_DEPTH")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let config = config();
    let limits = Limits {
        max_head_bytes: config.max_head_bytes,
        max_headers: config.max_headers,
        max_uri_len: config.max_uri_bytes,
    };
    let max_body = config.max_body_bytes;
    let server = common::start_with(1, config, app());
    let mut bystander = server.connect();
    bystander.send(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(bystander.read_response().status, 200);

    let mut rng = XorShift(seed | 1);
    let mut failures = Vec::new();
    // How often each status came back, printed for `--nocapture`: a change in the mix says the
    // mutations now reach other paths.
    let mut statuses = std::collections::BTreeMap::new();
    for case in 0..cases {
        let mut req = SEEDS[rng.range(0, SEEDS.len() - 1)].to_vec();
        // One case in twenty is a seed unchanged.
        let mutations = match rng.range(0, 19) {
            0 => 0,
            n => 1 + n % depth,
        };
        for _ in 0..mutations {
            mutate(&mut rng, &mut req);
        }
        let mut splits: Vec<usize> = (0..rng.range(0, 6))
            .filter(|_| req.len() > 1)
            .map(|_| rng.range(1, req.len() - 1))
            .collect();
        splits.sort_unstable();
        splits.dedup();
        let pause = match rng.range(0, 99) {
            0 => Duration::from_millis(rng.range(5, 20) as u64),
            1..=30 => Duration::from_micros(rng.range(100, 1000) as u64),
            _ => Duration::ZERO,
        };

        let expected = oracle(&req, &limits, max_body);
        // Where the server must end the connection by itself, half the time the client does
        // not end it.
        let half_close = !ends_by_itself(&expected) || rng.range(0, 1) == 0;
        let got = exchange(server.addr(), &req, &splits, pause, half_close);
        let verdict = read_answers(&got, &expected).and_then(|answers| {
            for a in &answers {
                *statuses.entry(a.status).or_insert(0) += 1;
            }
            check(&expected, &answers)
        });
        if let Err(why) = verdict {
            let mut report = String::new();
            let _ = write!(
                report,
                "case {case} (seed {seed:#x}): {why}\n  request {:?}\n  split at {splits:?}, \
                 pause {pause:?}\n  oracle {expected:?}\n  answers {:?}",
                escape(&req),
                escape(&got)
            );
            failures.push(report);
            if failures.len() == MAX_REPORTED {
                break;
            }
        }
    }

    eprintln!("{cases} cases, statuses answered: {statuses:?}");
    bystander.send(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nok");
    let after = bystander.read_response();
    assert_eq!(
        after.status, 200,
        "the bystander connection is still served"
    );
    assert_eq!(after.body, b"ok");
    assert_eq!(
        server.get("/"),
        text_response("200 OK", "x-route: root\r\n", "root"),
        "a new connection is served"
    );
    assert!(
        failures.is_empty(),
        "{} failing case(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
    server.shutdown();
}
