//! Answering a request allocates nothing: 2N pipelined requests to a router cost about as many
//! allocations as N. (Pipelined, as a connection may allocate per batch of requests it reads;
//! that is not per request.)
//!
//! Counted for the whole process by `stats_alloc`'s instrumented allocator. The raw client of
//! the server tests reads into one buffer it allocated beforehand, so it allocates nothing per
//! request either. volt's own client is counted too: its allocations per request are bounded,
//! and cookies and proxies add none while unused.

mod common;

use std::alloc::System;
use std::io::{Read, Write};
use std::net::TcpStream;

use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};
use volt_http::{get, Request, Response, Router};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

async fn text(_req: Request) -> Response {
    Response::text("from a")
}

/// Allocations in the process while `batch` is sent `rounds` times and its responses are read
/// (`buf` holds them exactly).
fn allocations(stream: &mut TcpStream, batch: &[u8], buf: &mut [u8], rounds: usize) -> u64 {
    let region = Region::new(GLOBAL);
    for _ in 0..rounds {
        stream.write_all(batch).unwrap();
        stream.read_exact(buf).unwrap();
    }
    let change = region.change();
    (change.allocations + change.reallocations) as u64
}

/// Two handlers of different types, so their futures' boxes are told apart.
fn app() -> Router {
    Router::new()
        .route("/a", get(text))
        .route("/b", get(|_req| async { Response::text("from b") }))
}

/// The count is the whole process's: tests take turns.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn router_answers_without_allocating_per_request() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    assert_no_allocation_per_request(common::start(app()));
}

/// A router behind two `wrap` functions (one looks at the router's answer, one answers
/// itself or passes on) allocates nothing per request either: their futures are in reused
/// boxes too.
#[test]
fn wrapped_router_answers_without_allocating_per_request() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // (A header added to the response would allocate: the header map and the value's bytes.)
    let app = volt_http::wrap(app(), |req: Request, next| async move {
        let response = next.run(req).await;
        match response.status().is_success() {
            true => response,
            false => Response::new(volt_http::StatusCode::BAD_GATEWAY),
        }
    });
    let app = volt_http::wrap(app, |req: Request, next| async move {
        match req.header("x-refuse") {
            Some(_) => Response::new(volt_http::StatusCode::FORBIDDEN),
            None => next.run(req).await,
        }
    });
    assert_no_allocation_per_request(common::start(app));
}

fn assert_no_allocation_per_request(server: common::TestServer) {
    let mut stream = TcpStream::connect(server.addr()).unwrap();
    stream.set_read_timeout(Some(common::HANG_GUARD)).unwrap();
    let (a, b) = (
        b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /b HTTP/1.1\r\nHost: x\r\n\r\n",
    );
    // Both responses have the same length (a fixed-width `Date`, bodies of equal length):
    // learn it from the first.
    stream.write_all(a).unwrap();
    let mut first = vec![0; 4096];
    let mut len = 0;
    while !first[..len].ends_with(b"from a") {
        len += stream.read(&mut first[len..]).unwrap();
    }
    let per_batch = 16;
    let batch = [a.as_slice(), b.as_slice()].repeat(per_batch / 2).concat();
    let mut buf = vec![0; len * per_batch];
    allocations(&mut stream, &batch, &mut buf, 10); // warm up the pools
    assert!(
        buf.ends_with(b"from b"),
        "{}",
        String::from_utf8_lossy(&buf)
    );
    let rounds = 100;
    let small = allocations(&mut stream, &batch, &mut buf, rounds);
    let large = allocations(&mut stream, &batch, &mut buf, 2 * rounds);
    let requests = (rounds * per_batch) as u64;
    // An allocation per request would add `requests`; one per batch, a 16th of that.
    assert!(
        large.saturating_sub(small) < requests / 4,
        "{small} allocations for {requests} requests, {large} for {}",
        2 * requests
    );
}

/// Allocations per request of volt's client (no cookies, no proxy) on a kept HTTP/1
/// connection, measured over `rounds` and twice as many requests.
fn client_allocations_per_request(client: &volt_http::Client, url: &str) -> u64 {
    volt_rt::block_on(async {
        let round = |n: usize| async move {
            let region = Region::new(GLOBAL);
            for _ in 0..n {
                let response = client.get(url).send().await.unwrap();
                assert_eq!(&response.bytes().await.unwrap()[..], b"from a");
            }
            let change = region.change();
            (change.allocations + change.reallocations) as u64
        };
        round(10).await; // warm up the pools
        let small = round(100).await;
        let large = round(200).await;
        (large - small) / 100
    })
}

/// What volt's client allocates per request on a kept HTTP/1 connection: 15 with the
/// defaults (16 before cookies and proxies came, when each connection given back to the pool
/// cloned its origin's host), 13 without decompression's `Accept-Encoding`. A client with an
/// empty cookie jar and a proxy its host is exempt from (`NO_PROXY`) pays nothing more.
#[test]
fn client_allocates_the_same_per_request_without_cookies_or_proxies() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let server = common::start(app());
    let url = format!("http://{}/a", server.addr());
    let plain = volt_http::Client::new();
    let per_request = client_allocations_per_request(&plain, &url);
    assert!(per_request <= 15, "{per_request} allocations per request");
    let proxy = volt_http::Proxy::all("http://127.0.0.1:9")
        .unwrap()
        .no_proxy("127.0.0.1");
    let idle = volt_http::Client::builder()
        .cookies(true)
        .proxy(proxy)
        .build();
    assert_eq!(client_allocations_per_request(&idle, &url), per_request);
}
