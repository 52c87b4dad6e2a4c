//! Rough cost of the hot path: parse a TechEmpower-style request head, encode a response.
//!
//! ```text
//! cargo run --release -p volt-proto --example parse_speed            # wall-clock timings
//! valgrind --tool=callgrind target/release/examples/parse_speed proto 1000
//! valgrind --tool=callgrind target/release/examples/parse_speed httparse 1000
//! ```
//!
//! On a shared machine wall-clock numbers wander; instruction counts do not. Run the
//! callgrind form with two counts (say 1000 and 2000) and divide the difference by 1000 for
//! the instructions per parse, with start-up cost cancelled out. `httparse` alone is the floor
//! this crate builds on.

use std::hint::black_box;
use std::time::Instant;

use volt_proto::{
    parse_request, write_content_length, write_header, write_status_line, Limits, StatusCode,
    Version,
};

const HEAD: &[u8] = b"GET /plaintext HTTP/1.1\r\n\
Host: tfb-server\r\n\
Accept: text/plain,text/html;q=0.9,application/xhtml+xml;q=0.9,*/*;q=0.8\r\n\
Connection: keep-alive\r\n\
User-Agent: Mozilla/5.0\r\n\r\n";

fn parse_with_volt(limits: &Limits) {
    black_box(parse_request(black_box(HEAD), limits).unwrap().unwrap());
}

fn parse_with_httparse() {
    let mut headers = [httparse::EMPTY_HEADER; 16];
    let mut req = httparse::Request::new(&mut headers);
    black_box(req.parse(black_box(HEAD)).unwrap());
    black_box(&req);
}

/// Best of several batches, in ns per call: on a shared machine the minimum is the least
/// disturbed figure.
fn time(mut f: impl FnMut()) -> f64 {
    let rounds = 300_000u32;
    (0..15)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..rounds {
                f();
            }
            start.elapsed().as_nanos() as f64 / f64::from(rounds)
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let limits = Limits::default();
    let args: Vec<String> = std::env::args().collect();
    if let [_, which, count] = &args[..] {
        let count: u32 = count.parse().expect("a parse count");
        for _ in 0..count {
            match which.as_str() {
                "proto" => parse_with_volt(&limits),
                "httparse" => parse_with_httparse(),
                other => panic!("unknown parser {other:?}: use proto or httparse"),
            }
        }
        return;
    }

    let ns = time(|| parse_with_volt(&limits));
    println!("parse_request ({} bytes, 4 fields): {ns:.1} ns", HEAD.len());
    let ns = time(parse_with_httparse);
    println!("httparse alone: {ns:.1} ns");

    let mut out = Vec::with_capacity(4096);
    let ns = time(|| {
        out.clear();
        write_status_line(&mut out, Version::HTTP_11, StatusCode::OK);
        write_header(&mut out, b"server", b"volt");
        write_header(&mut out, b"content-type", b"text/plain");
        write_content_length(&mut out, 13);
        out.extend_from_slice(b"\r\nHello, World!");
        black_box(&out);
    });
    println!("encode plaintext response: {ns:.1} ns");
}
