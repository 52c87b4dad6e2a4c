//! Counting: `--requests N` sends exactly N, every response is counted once, connections are
//! reused or not as asked, and statuses and body framings are told apart.

mod common;

use common::{config, guard, Behavior, TestServer};

#[test]
fn requests_n_is_exact() {
    guard(|| {
        let server = TestServer::start(Behavior::Hello);
        let report = volt_bench::run(
            &config(&server, "/")
                .connections(7)
                .threads(2)
                .total_requests(1_000)
                .build()
                .unwrap(),
        )
        .unwrap();
        let level = &report.levels[0];
        assert_eq!(level.requests, 1_000);
        assert_eq!(server.requests(), 1_000);
        assert_eq!(level.errors.total, 0);
        assert_eq!(level.status.get(&200), Some(&1_000));
        assert_eq!(level.latency_us.count, 1_000);
        assert_eq!(level.sent, 1_000);
        assert_eq!(level.bytes, 1_000 * (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n\r\nHello, World!".len() as u64));
        // Keep-alive: one connection per slot.
        assert_eq!(server.accepts(), 7);
        assert_eq!(level.connections_opened, 7);
    });
}

#[test]
fn requests_n_is_exact_when_pipelined() {
    guard(|| {
        let server = TestServer::start(Behavior::Hello);
        // 1,001 is not a multiple of the depth: the last batches are partial.
        let report = volt_bench::run(
            &config(&server, "/")
                .connections(8)
                .threads(2)
                .pipeline(16)
                .total_requests(1_001)
                .build()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(report.levels[0].requests, 1_001);
        assert_eq!(server.requests(), 1_001);
        assert_eq!(report.levels[0].errors.total, 0);
    });
}

#[test]
fn no_keepalive_opens_one_connection_per_request() {
    guard(|| {
        let server = TestServer::start(Behavior::Hello);
        let report = volt_bench::run(
            &config(&server, "/")
                .connections(4)
                .threads(1)
                .keepalive(false)
                .total_requests(50)
                .build()
                .unwrap(),
        )
        .unwrap();
        let level = &report.levels[0];
        assert_eq!(level.requests, 50);
        assert_eq!(server.requests(), 50);
        assert_eq!(server.accepts(), 50);
        assert_eq!(level.connections_opened, 50);
        assert_eq!(level.errors.total, 0);
    });
}

#[test]
fn non_2xx_are_responses_not_errors() {
    guard(|| {
        let server = TestServer::start(Behavior::Status(503));
        let report = volt_bench::run(
            &config(&server, "/")
                .connections(2)
                .threads(1)
                .total_requests(40)
                .build()
                .unwrap(),
        )
        .unwrap();
        let level = &report.levels[0];
        assert_eq!(level.requests, 40);
        assert_eq!(level.non_2xx, 40);
        assert_eq!(level.status.get(&503), Some(&40));
        assert_eq!(level.errors.total, 0);
    });
}

#[test]
fn chunked_bodies_are_framed() {
    guard(|| {
        let server = TestServer::start(Behavior::Chunked);
        let report = volt_bench::run(
            &config(&server, "/")
                .connections(3)
                .threads(1)
                .pipeline(4)
                .total_requests(120)
                .build()
                .unwrap(),
        )
        .unwrap();
        let level = &report.levels[0];
        assert_eq!((level.requests, level.errors.total), (120, 0));
        assert_eq!(server.accepts(), 3, "chunked responses keep the connection");
    });
}

#[test]
fn bodies_delimited_by_close_are_responses() {
    guard(|| {
        let server = TestServer::start(Behavior::UntilClose);
        let report = volt_bench::run(
            &config(&server, "/")
                .connections(2)
                .threads(1)
                .total_requests(30)
                .build()
                .unwrap(),
        )
        .unwrap();
        let level = &report.levels[0];
        assert_eq!(
            (level.requests, level.errors.total),
            (30, 0),
            "{:?}",
            level.errors
        );
        assert_eq!(server.requests(), 30);
        assert_eq!(server.accepts(), 30);
    });
}

#[test]
fn timed_run_reports_a_sane_duration_and_rate() {
    guard(|| {
        let server = TestServer::start(Behavior::Hello);
        let report = volt_bench::run(
            &config(&server, "/")
                .connections(4)
                .threads(2)
                .duration(std::time::Duration::from_millis(800))
                .warmup(std::time::Duration::from_millis(200))
                .build()
                .unwrap(),
        )
        .unwrap();
        let level = &report.levels[0];
        assert!(level.requests > 0);
        assert!(
            (0.79..1.0).contains(&level.duration_s),
            "{}",
            level.duration_s
        );
        let rps = level.requests as f64 / level.duration_s;
        assert!((rps - level.rps).abs() < 1e-6);
        // Warm-up requests reached the server but are not counted.
        assert!(server.requests() as u64 > level.requests);
        assert_eq!(level.errors.total, 0);
    });
}
