//! The hot path allocates nothing per request: a run of 2N requests allocates about as often
//! as a run of N, the difference being fixed per-second work.
//!
//! Counted for the whole process by `stats_alloc`'s instrumented allocator (no allocator code
//! of our own). The test server allocates nothing per request either (see `common::serve`), so what
//! grows with the requests is the load generator's.

mod common;

use std::alloc::System;
use std::sync::Mutex;

use common::{config, guard, Behavior, TestServer};
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// One measurement at a time: the counter is global.
static SERIAL: Mutex<()> = Mutex::new(());

/// Allocations (and reallocations) in the process during a run of `requests`.
fn allocations(builder: impl Fn() -> volt_bench::ConfigBuilder, requests: u64) -> u64 {
    let config = builder().total_requests(requests).build().unwrap();
    let region = Region::new(GLOBAL);
    let report = volt_bench::run(&config).unwrap();
    let change = region.change();
    assert_eq!(report.levels[0].requests, requests);
    assert_eq!(report.levels[0].errors.total, 0);
    (change.allocations + change.reallocations) as u64
}

fn assert_flat(name: &str, builder: impl Fn() -> volt_bench::ConfigBuilder + Copy, n: u64) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _ = allocations(builder, n / 4); // warm up whatever is lazily initialised
    let small = allocations(builder, n);
    let large = allocations(builder, 2 * n);
    eprintln!(
        "{name}: {small} allocations for {n} requests, {large} for {}",
        2 * n
    );
    // Per-second ticks and connection set-up allocate a little; per-request work would add
    // `n` more.
    assert!(
        large.saturating_sub(small) < n / 100,
        "{name}: {small} allocations for {n} requests but {large} for {}",
        2 * n
    );
}

#[test]
fn closed_loop_allocates_nothing_per_request() {
    guard(|| {
        let server = TestServer::start(Behavior::Hello);
        let url = server.url("/");
        let make = || {
            volt_bench::Config::builder()
                .url(url.clone())
                .connections(4)
                .threads(1)
        };
        assert_flat("keep-alive", make, 10_000);
    });
}

#[test]
fn pipelined_closed_loop_allocates_nothing_per_request() {
    guard(|| {
        let server = TestServer::start(Behavior::Hello);
        let base = config(&server, "/");
        let make = || base.clone().connections(4).threads(1).pipeline(16);
        assert_flat("pipelined", make, 20_000);
    });
}

/// Chunked bodies without trailers. (A trailer section is collected into a `HeaderMap` by
/// `volt_proto::BodyDecoder`, which allocates; trailers are rare in responses.)
#[test]
fn chunked_responses_allocate_nothing_per_request() {
    guard(|| {
        let server = TestServer::start(Behavior::ChunkedPlain);
        let base = config(&server, "/");
        let make = || base.clone().connections(2).threads(1).pipeline(8);
        assert_flat("chunked", make, 10_000);
    });
}

#[test]
fn rate_mode_allocates_nothing_per_request() {
    guard(|| {
        let server = TestServer::start(Behavior::Hello);
        let base = config(&server, "/");
        let make = || base.clone().connections(8).threads(1).rate(20_000.0);
        assert_flat("rate", make, 4_000);
    });
}

/// HTTP/2: streams opened from header blocks encoded once, responses decoded in place, the
/// stream table and buffers reused. (The scripted server allocates nothing per request.)
fn assert_h2_flat(name: &str, connections: usize, rate: Option<f64>, n: u64) {
    let server = common::h2server::H2Server::start(common::h2server::H2Behavior::Hello);
    let url = server.url("/");
    let make = || {
        let b = volt_bench::Config::builder()
            .url(url.clone())
            .protocol(volt_bench::Protocol::Http2)
            .connections(connections)
            .streams(8)
            .threads(1);
        match rate {
            Some(r) => b.rate(r),
            None => b,
        }
    };
    assert_flat(name, make, n);
}

#[test]
fn h2_closed_loop_allocates_nothing_per_request() {
    guard(|| assert_h2_flat("h2", 4, None, 20_000));
}

#[test]
fn h2_rate_mode_allocates_nothing_per_request() {
    guard(|| assert_h2_flat("h2 rate", 2, Some(20_000.0), 4_000));
}
