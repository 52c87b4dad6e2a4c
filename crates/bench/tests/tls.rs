//! `https://` targets: HTTP/1.1 (keep-alive, pipelined, a connection per request) and HTTP/2
//! chosen by ALPN, each counted exactly against volt's own server over TLS; a server that
//! speaks no TLS is unreachable, not a source of parse errors.

mod common;

use std::time::Duration;

use common::guard;
use common::volt_server;
use volt_bench::{Config, ConfigBuilder, Level, Protocol};

fn run(builder: ConfigBuilder, protocol: &str) -> Level {
    let report =
        volt_bench::run(&builder.timeout(Duration::from_secs(5)).build().unwrap()).unwrap();
    assert_eq!(report.run.protocol, protocol);
    report.levels.into_iter().next().unwrap()
}

fn assert_all_ok(level: &Level, n: u64) {
    assert_eq!(level.requests, n);
    assert_eq!(level.errors.total, 0, "{:?}", level.errors);
    assert_eq!(level.status.get(&200), Some(&n));
    assert_eq!(level.unanswered, 0);
}

#[test]
fn http1_keepalive_over_tls_is_exact() {
    guard(|| {
        let server = volt_server::start_tls(volt_http::Config::default(), Duration::ZERO);
        let level = run(
            Config::builder()
                .url(server.url("/"))
                .connections(3)
                .threads(2)
                .total_requests(600),
            "http/1.1+tls",
        );
        assert_all_ok(&level, 600);
        assert_eq!(server.calls(), 600);
        assert_eq!(level.connections_opened, 3);
    });
}

#[test]
fn http1_pipelined_over_tls_is_exact() {
    guard(|| {
        let server = volt_server::start_tls(volt_http::Config::default(), Duration::ZERO);
        let level = run(
            Config::builder()
                .url(server.url("/"))
                .connections(2)
                .threads(1)
                .pipeline(8)
                .total_requests(800),
            "http/1.1+tls",
        );
        assert_all_ok(&level, 800);
        assert_eq!(server.calls(), 800);
    });
}

#[test]
fn a_connection_per_request_over_tls() {
    guard(|| {
        let server = volt_server::start_tls(volt_http::Config::default(), Duration::ZERO);
        let level = run(
            Config::builder()
                .url(server.url("/"))
                .connections(2)
                .threads(1)
                .keepalive(false)
                .total_requests(40),
            "http/1.1+tls",
        );
        assert_all_ok(&level, 40);
        assert_eq!(level.connections_opened, 40);
    });
}

#[test]
fn h2_by_alpn_is_exact_with_streams_in_flight() {
    guard(|| {
        let server = volt_server::start_tls(volt_http::Config::default(), Duration::ZERO);
        let level = run(
            Config::builder()
                .url(server.url("/"))
                .url(server.url("/503"))
                .protocol(Protocol::Http2)
                .connections(2)
                .threads(2)
                .streams(8)
                .total_requests(1_000),
            "h2",
        );
        assert_eq!(level.requests, 1_000);
        assert_eq!(level.errors.total, 0, "{:?}", level.errors);
        assert_eq!(level.status.get(&200), Some(&500));
        assert_eq!(level.status.get(&503), Some(&500));
        assert_eq!(server.calls(), 1_000);
        assert_eq!(level.connections_opened, 2);
    });
}

#[test]
fn h2_streams_really_run_at_once_over_tls() {
    guard(|| {
        let delay = Duration::from_millis(50);
        let server = volt_server::start_tls(volt_http::Config::default(), delay);
        let level = run(
            Config::builder()
                .url(server.url("/slow"))
                .protocol(Protocol::Http2)
                .connections(1)
                .threads(1)
                .streams(16)
                .total_requests(64),
            "h2",
        );
        assert_all_ok(&level, 64);
        assert!(server.max_running() > 1, "streams ran one at a time");
    });
}

#[test]
fn https_to_a_plain_server_is_unreachable() {
    guard(|| {
        let server = volt_server::start(volt_http::Config::default(), Duration::ZERO);
        let url = server.url("/").replacen("http://", "https://", 1);
        let config = Config::builder()
            .url(url)
            .connections(1)
            .total_requests(10)
            .timeout(Duration::from_secs(2))
            .build()
            .unwrap();
        let err = volt_bench::run(&config).unwrap_err().to_string();
        assert!(err.contains("connect") || err.contains("reach"), "{err}");
        assert_eq!(server.calls(), 0);
    });
}
