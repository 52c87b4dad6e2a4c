//! Cost of the hot paths: parse a request head, parse a response head (as `volt bench` does),
//! encode a response.
//!
//! ```text
//! cargo build --release -p volt-proto --example parse_speed
//! valgrind --tool=callgrind --toggle-collect='*parse_many*' --callgrind-out-file=/dev/null \
//!     target/release/examples/parse_speed proto wrk 1000
//! cargo run --release -p volt-proto --example parse_speed                # wall-clock timings
//! ```
//!
//! Four heads: `tiny` (request line and Host only, as a pipelined benchmark client sends),
//! `wrk` (the TechEmpower plaintext request: Host, a long Accept, Connection), `json` (the
//! same headers on `GET /json`, the TechEmpower keep-alive JSON request) and `browser`
//! (twelve fields, as a browser sends). Two response heads: `volt-res` (the techempower
//! example's plaintext response: Server, Date, Content-Type, Content-Length) and `nginx-res`
//! (nginx's, which adds `Connection: keep-alive`), parsed as a load generator parses them.
//!
//! On a shared machine wall-clock numbers wander; instruction counts do not. The callgrind
//! form counts only the instructions inside `parse_many` (the `--toggle-collect`), so the
//! `Collected` figure divided by the count is the exact instructions per parse, with
//! start-up left out: with 1000 parses, `Collected : 830021` is 830 per parse (the 21 are
//! the call of `parse_many` itself). `httparse` alone (into 16 slots) is the floor this
//! crate builds on.

use std::hint::black_box;
use std::time::Instant;

use volt_proto::{
    parse_request_into, parse_response_into, write_content_length, write_header, write_status_line,
    Limits, RequestHead, ResponseHead, StatusCode, Version,
};

const TINY: &[u8] = b"GET /plaintext HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n";

const WRK: &[u8] = b"GET /plaintext HTTP/1.1\r\n\
Host: tfb-server\r\n\
Accept: text/plain,text/html;q=0.9,application/xhtml+xml;q=0.9,application/xml;q=0.8,*/*;q=0.7\r\n\
Connection: keep-alive\r\n\r\n";

const JSON: &[u8] = b"GET /json HTTP/1.1\r\n\
Host: tfb-server\r\n\
Accept: text/plain,text/html;q=0.9,application/xhtml+xml;q=0.9,application/xml;q=0.8,*/*;q=0.7\r\n\
Connection: keep-alive\r\n\r\n";

const BROWSER: &[u8] = b"GET /articles/2024/http-parsing?page=2&sort=new HTTP/1.1\r\n\
Host: www.example.com\r\n\
User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0\r\n\
Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8\r\n\
Accept-Language: en-US,en;q=0.5\r\n\
Accept-Encoding: gzip, deflate, br, zstd\r\n\
Referer: https://www.example.com/articles/2024\r\n\
Connection: keep-alive\r\n\
Cookie: session=3f2a9c1e7b4d4e0f9a8b; theme=dark; lang=en\r\n\
Upgrade-Insecure-Requests: 1\r\n\
Sec-Fetch-Dest: document\r\n\
Sec-Fetch-Mode: navigate\r\n\
Sec-Fetch-Site: same-origin\r\n\r\n";

const VOLT_RES: &[u8] = b"HTTP/1.1 200 OK\r\n\
Server: volt\r\n\
Date: Tue, 24 Nov 2026 03:45:54 GMT\r\n\
Content-Type: text/plain\r\n\
content-length: 13\r\n\r\n";

const NGINX_RES: &[u8] = b"HTTP/1.1 200 OK\r\n\
Server: nginx/1.22.1\r\n\
Date: Tue, 24 Nov 2026 03:45:54 GMT\r\n\
Content-Type: text/plain\r\n\
Content-Length: 13\r\n\
Connection: keep-alive\r\n\r\n";

const RESPONSES: [(&str, &[u8]); 2] = [("volt-res", VOLT_RES), ("nginx-res", NGINX_RES)];

const HEADS: [(&str, &[u8]); 4] = [
    ("tiny", TINY),
    ("wrk", WRK),
    ("json", JSON),
    ("browser", BROWSER),
];

fn parse_with_volt(head: &[u8], limits: &Limits, into: &mut RequestHead) {
    // Into a reused head, as the server parses: the count is the parse, not moves of a
    // returned head.
    let parsed = parse_request_into(black_box(head), limits, into);
    assert!(matches!(parsed, Ok(true)));
    black_box(&into);
}

fn parse_response_with_volt(head: &[u8], limits: &Limits, into: &mut ResponseHead) {
    let parsed = parse_response_into(black_box(head), limits, false, into);
    assert!(matches!(parsed, Ok(true)));
    black_box(&into);
}

fn parse_response_with_httparse(head: &[u8]) {
    let mut headers = [httparse::EMPTY_HEADER; 16];
    let mut res = httparse::Response::new(&mut headers);
    black_box(res.parse(black_box(head)).unwrap());
    black_box(&res);
}

fn parse_with_httparse(head: &[u8]) {
    let mut headers = [httparse::EMPTY_HEADER; 16];
    let mut req = httparse::Request::new(&mut headers);
    black_box(req.parse(black_box(head)).unwrap());
    black_box(&req);
}

/// Calls `parse` `count` times. Kept out of line so callgrind can count it alone
/// (`--toggle-collect='*parse_many*'`).
#[inline(never)]
fn parse_many(count: u32, mut parse: impl FnMut()) {
    for _ in 0..count {
        parse();
    }
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
    let mut into = RequestHead::default();
    let mut into_response = ResponseHead::default();
    let args: Vec<String> = std::env::args().collect();
    if let [_, which, head, count] = &args[..] {
        let count: u32 = count.parse().expect("a parse count");
        let find = |heads: &[(&str, &'static [u8])]| {
            heads.iter().find(|(name, _)| name == head).map(|&(_, h)| h)
        };
        match (which.as_str(), find(&HEADS), find(&RESPONSES)) {
            ("proto", Some(head), _) => {
                parse_many(count, || parse_with_volt(head, &limits, &mut into))
            }
            ("httparse", Some(head), _) => parse_many(count, || parse_with_httparse(head)),
            ("proto", _, Some(res)) => parse_many(count, || {
                parse_response_with_volt(res, &limits, &mut into_response)
            }),
            ("httparse", _, Some(res)) => parse_many(count, || parse_response_with_httparse(res)),
            (_, None, None) => {
                panic!("unknown head {head:?}: use tiny, wrk, json, browser, volt-res or nginx-res")
            }
            (other, ..) => panic!("unknown parser {other:?}: use proto or httparse"),
        }
        return;
    }

    for (name, head) in HEADS {
        let ns = time(|| parse_with_volt(head, &limits, &mut into));
        println!("parse_request {name} ({} bytes): {ns:.1} ns", head.len());
        let ns = time(|| parse_with_httparse(head));
        println!("httparse alone {name}: {ns:.1} ns");
    }
    for (name, res) in RESPONSES {
        let ns = time(|| parse_response_with_volt(res, &limits, &mut into_response));
        println!("parse_response {name} ({} bytes): {ns:.1} ns", res.len());
        let ns = time(|| parse_response_with_httparse(res));
        println!("httparse alone {name}: {ns:.1} ns");
    }

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
