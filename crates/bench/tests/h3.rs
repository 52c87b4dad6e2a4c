//! HTTP/3 (`--h3`) against volt's own HTTP/3 server: exact counts in a closed loop with
//! several streams per connection, streams really in flight at once, statuses counted per
//! request, a constant rate within its schedule's bounds, time bounds kept, and a server that
//! is not there reported as unreachable without a hang.

mod common;

use std::time::{Duration, Instant};

use common::guard;
use common::volt_server;
use volt_bench::{Config, ConfigBuilder, Level, Protocol};

fn h3(url: String) -> ConfigBuilder {
    Config::builder()
        .url(url)
        .protocol(Protocol::Http3)
        .timeout(Duration::from_secs(5))
}

fn run(builder: ConfigBuilder) -> Level {
    let report = volt_bench::run(&builder.build().unwrap()).unwrap();
    assert_eq!(report.run.protocol, "h3");
    report.levels.into_iter().next().unwrap()
}

#[test]
fn requests_n_is_exact_with_streams_in_flight() {
    guard(|| {
        let server = volt_server::start_h3(volt_http::Config::default(), Duration::ZERO);
        let level = run(h3(server.url("/"))
            .connections(3)
            .threads(2)
            .streams(8)
            .total_requests(1_000));
        assert_eq!(level.requests, 1_000);
        assert_eq!(server.calls(), 1_000);
        assert_eq!(level.errors.total, 0, "{:?}", level.errors);
        assert_eq!(level.status.get(&200), Some(&1_000));
        assert_eq!(level.latency_us.count, 1_000);
        assert_eq!(level.sent, 1_000);
        assert_eq!(level.connections_opened, 3);
        assert_eq!(level.unanswered, 0);
        // Every response carried `Hello, World!` at least, inside QUIC packets.
        assert!(level.bytes > 13 * 1_000, "{} bytes", level.bytes);
        assert!(level.bytes_written > 0);
    });
}

#[test]
fn statuses_are_counted_per_request() {
    guard(|| {
        let server = volt_server::start_h3(volt_http::Config::default(), Duration::ZERO);
        // One connection walks the round robin in order: / then /503 then /missing (404).
        let level = run(Config::builder()
            .url(server.url("/"))
            .url(server.url("/503"))
            .url(server.url("/missing"))
            .protocol(Protocol::Http3)
            .connections(1)
            .streams(4)
            .total_requests(300));
        assert_eq!(level.requests, 300);
        assert_eq!(level.errors.total, 0, "{:?}", level.errors);
        assert_eq!(level.status.get(&200), Some(&100));
        assert_eq!(level.status.get(&503), Some(&100));
        assert_eq!(level.status.get(&404), Some(&100));
        assert_eq!(level.non_2xx, 200);
        // The handlers of / and /503 ran; the 404s are the router's own.
        assert_eq!(server.calls(), 200);
    });
}

#[test]
fn streams_are_in_flight_at_once() {
    guard(|| {
        // Each request waits 50 ms in its handler: eight of them can only overlap if the
        // connection has eight streams open.
        let server = volt_server::start_h3(volt_http::Config::default(), Duration::from_millis(50));
        let level = run(h3(server.url("/slow"))
            .connections(1)
            .streams(8)
            .total_requests(64));
        assert_eq!((level.requests, level.errors.total), (64, 0));
        assert_eq!(server.max_running(), 8);
    });
}

/// More streams asked for than the server allows at once (its QUIC MAX_STREAMS, from
/// `h2_max_concurrent_streams`): the rest wait for a stream, and nothing is lost.
#[test]
fn the_servers_stream_limit_holds_requests_back_without_losing_them() {
    guard(|| {
        let config = volt_http::Config {
            h2_max_concurrent_streams: 4,
            ..volt_http::Config::default()
        };
        let server = volt_server::start_h3(config, Duration::from_millis(20));
        let level = run(h3(server.url("/slow"))
            .connections(1)
            .streams(16)
            .total_requests(80));
        assert_eq!((level.requests, level.errors.total), (80, 0));
        assert_eq!(server.calls(), 80);
        assert!(server.max_running() <= 4, "{}", server.max_running());
    });
}

/// A timed closed loop stops by itself, close to its duration (a bound a loaded machine keeps:
/// the connects are waited for at most a second before the clock starts).
#[test]
fn a_timed_run_keeps_its_time() {
    guard(|| {
        let server = volt_server::start_h3(volt_http::Config::default(), Duration::ZERO);
        let started = Instant::now();
        let level = run(h3(server.url("/"))
            .connections(2)
            .threads(1)
            .streams(4)
            .duration(Duration::from_millis(700)));
        let took = started.elapsed();
        assert!(took < Duration::from_secs(5), "took {took:?}");
        assert!(
            level.duration_s >= 0.69 && level.duration_s < 3.0,
            "{}",
            level.duration_s
        );
        assert!(level.requests > 0);
        assert_eq!(level.errors.total, 0, "{:?}", level.errors);
        assert_eq!(level.status.get(&200), Some(&level.requests));
    });
}

/// Constant rate: what was sent is what the schedule had due (no more: the rate is not
/// exceeded; no fewer, but for what a starved machine can fall behind), every response or
/// unanswered request counted once, and latency has its corrected and service parts.
#[test]
fn rate_mode_keeps_to_its_schedule() {
    guard(|| {
        let server = volt_server::start_h3(volt_http::Config::default(), Duration::ZERO);
        let level = run(h3(server.url("/"))
            .connections(4)
            .threads(1)
            .streams(2)
            .rate(400.0)
            .duration(Duration::from_secs(1)));
        let scheduled = level.scheduled.expect("a rate run reports its schedule");
        // 400 a second for a second, give or take the window's edges.
        assert!((390..=410).contains(&scheduled), "{scheduled} scheduled");
        assert!(
            level.sent <= scheduled,
            "{} sent of {scheduled}",
            level.sent
        );
        assert_eq!(level.errors.total, 0, "{:?}", level.errors);
        assert!(
            level.requests >= scheduled / 2,
            "{} answered",
            level.requests
        );
        assert_eq!(level.requests + level.unanswered, scheduled, "{level:?}");
        assert_eq!(level.latency_us.count, scheduled);
        assert!(level.service_time_us.is_some() && level.send_lag_us.is_some());
    });
}

#[test]
fn requests_with_a_body_are_exact() {
    guard(|| {
        let server = volt_server::start_h3(volt_http::Config::default(), Duration::ZERO);
        // `/` answers GET only: a POST with a body is the router's 405, after the body.
        let level = run(h3(server.url("/"))
            .method("POST")
            .body(vec![b'x'; 3_000])
            .connections(2)
            .streams(4)
            .total_requests(200));
        assert_eq!((level.requests, level.errors.total), (200, 0));
        assert_eq!(level.status.get(&405), Some(&200));
        assert!(level.bytes_written > 200 * 3_000);
    });
}

/// The server shuts down gracefully in the middle of a `-n` run: it sends GOAWAY, finishes the
/// requests it took, and refuses new connections. Each request counts once: the ones answered
/// were served once each, a request past the GOAWAY is sent again rather than counted, and
/// what could not be sent after that fails as a connect error, so the run ends with exactly
/// `-n` requests accounted for.
#[test]
fn a_goaway_mid_run_counts_every_request_once() {
    guard(|| {
        let server =
            volt_server::start_h3(volt_http::Config::default(), Duration::from_millis(100));
        let config = h3(server.url("/slow"))
            .connections(1)
            .threads(1)
            .streams(4)
            .total_requests(40)
            .build()
            .unwrap();
        let run = std::thread::spawn(move || volt_bench::run(&config));
        std::thread::sleep(Duration::from_millis(350));
        server.begin_shutdown();
        let level = run.join().unwrap().unwrap().levels.remove(0);
        assert_eq!(level.requests + level.errors.total, 40, "{level:?}");
        assert!(level.requests >= 4, "{level:?}");
        assert!(level.errors.connect > 0, "{:?}", level.errors);
        assert_eq!(level.status.get(&200), Some(&level.requests));
        assert_eq!(server.calls() as u64, level.requests);
    });
}

/// Nothing listens on the UDP port: the connected socket hears ICMP's refusal, so the run
/// ends at once with the target unreachable, not after a handshake timeout.
#[test]
fn a_server_that_is_not_there_is_unreachable_at_once() {
    guard(|| {
        let port = std::net::UdpSocket::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let started = Instant::now();
        let config = h3(format!("https://127.0.0.1:{port}/"))
            .connections(2)
            .duration(Duration::from_secs(30))
            .build()
            .unwrap();
        let err = volt_bench::run(&config).unwrap_err();
        assert!(err.is_usage(), "{err}");
        let text = err.to_string();
        assert!(text.contains("cannot connect"), "{text}");
        assert!(text.to_lowercase().contains("refused"), "{text}");
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "{:?}",
            started.elapsed()
        );
    });
}

/// A TLS server without HTTP/3 (TCP only): the QUIC handshake is refused too, and the run ends
/// as unreachable.
#[test]
fn a_tls_server_without_http3_is_unreachable() {
    guard(|| {
        let server = volt_server::start_tls(volt_http::Config::default(), Duration::ZERO);
        let config = h3(server.url("/"))
            .connections(1)
            .total_requests(10)
            .timeout(Duration::from_secs(2))
            .build()
            .unwrap();
        let started = Instant::now();
        let err = volt_bench::run(&config).unwrap_err().to_string();
        assert!(err.contains("cannot connect"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(4));
        assert_eq!(server.calls(), 0);
    });
}
