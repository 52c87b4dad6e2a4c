//! The hot path allocates nothing per request: a run of 2N requests allocates (on the worker
//! threads) about as often as a run of N, the difference being fixed per-second work.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use common::{config, guard, Behavior, TestServer};

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// Set on the benchmark's worker threads (by the inspect hook, on their first response).
    static COUNTED: Cell<bool> = const { Cell::new(false) };
}

// SAFETY: every call is forwarded unchanged to the system allocator; the counter is a side
// effect that neither allocates nor touches the memory handed out.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTED.with(Cell::get) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: the caller's contract for `alloc` is passed on as is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` with `layout` (see `alloc`).
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTED.with(Cell::get) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: as for `dealloc`; `new_size` comes from the caller's contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// One measurement at a time: the counter is global.
static SERIAL: Mutex<()> = Mutex::new(());

/// Allocations on the worker threads during a run of `requests`.
fn allocations(builder: impl Fn() -> volt_bench::ConfigBuilder, requests: u64) -> u64 {
    let config = builder()
        .total_requests(requests)
        .inspect(|_| COUNTED.with(|c| c.set(true)))
        .build()
        .unwrap();
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    let report = volt_bench::run(&config).unwrap();
    assert_eq!(report.levels[0].requests, requests);
    assert_eq!(report.levels[0].errors.total, 0);
    ALLOCATIONS.load(Ordering::Relaxed) - before
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
