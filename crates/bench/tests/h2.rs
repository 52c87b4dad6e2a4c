//! HTTP/2 with prior knowledge (`--h2`): exact counts against volt's own server, `--streams`
//! really in flight and capped by the server's SETTINGS_MAX_CONCURRENT_STREAMS, and a scripted
//! server's resets, GOAWAYs and malformed frames counted once each.

mod common;

use std::time::Duration;

use common::guard;
use common::h2server::{H2Behavior, H2Server};
use common::volt_server;
use volt_bench::{Config, ConfigBuilder, Level, Protocol};

fn h2(url: String) -> ConfigBuilder {
    Config::builder()
        .url(url)
        .protocol(Protocol::Http2)
        .timeout(Duration::from_secs(5))
}

fn run(builder: ConfigBuilder) -> Level {
    let report = volt_bench::run(&builder.build().unwrap()).unwrap();
    assert_eq!(report.run.protocol, "h2c");
    report.levels.into_iter().next().unwrap()
}

#[test]
fn requests_n_is_exact_against_volt() {
    guard(|| {
        let server = volt_server::start(volt_http::Config::default(), Duration::ZERO);
        let level = run(h2(server.url("/"))
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
    });
}

#[test]
fn statuses_are_counted_per_request() {
    guard(|| {
        let server = volt_server::start(volt_http::Config::default(), Duration::ZERO);
        // One connection walks the round robin in order: / then /503 then /missing.
        let level = run(Config::builder()
            .url(server.url("/"))
            .url(server.url("/503"))
            .url(server.url("/missing"))
            .protocol(Protocol::Http2)
            .connections(1)
            .streams(4)
            .total_requests(300));
        assert_eq!(level.requests, 300);
        assert_eq!(level.errors.total, 0);
        assert_eq!(level.status.get(&200), Some(&100));
        assert_eq!(level.status.get(&503), Some(&100));
        assert_eq!(level.status.get(&404), Some(&100));
        assert_eq!(level.non_2xx, 200);
    });
}

#[test]
fn streams_are_in_flight_at_once() {
    guard(|| {
        // Each request waits 50 ms in its handler: eight of them can only overlap if the
        // connection has eight streams open.
        let server = volt_server::start(volt_http::Config::default(), Duration::from_millis(50));
        let level = run(h2(server.url("/slow"))
            .connections(1)
            .streams(8)
            .total_requests(64));
        assert_eq!((level.requests, level.errors.total), (64, 0));
        assert_eq!(server.max_running(), 8);
        assert_eq!(level.connections_opened, 1);
    });
}

#[test]
fn the_servers_max_concurrent_streams_is_honoured() {
    guard(|| {
        let config = volt_http::Config {
            h2_max_concurrent_streams: 3,
            ..volt_http::Config::default()
        };
        let server = volt_server::start(config, Duration::from_millis(30));
        // More streams than the server allows would be refused (RST_STREAM): `reset` errors.
        let level = run(h2(server.url("/slow"))
            .connections(1)
            .streams(10)
            .total_requests(30));
        assert_eq!((level.requests, level.errors.total), (30, 0));
        assert_eq!(server.max_running(), 3);

        let raw = H2Server::start(H2Behavior::MaxStreams(2));
        let level = run(h2(raw.url("/"))
            .connections(2)
            .streams(16)
            .total_requests(200));
        assert_eq!((level.requests, level.errors.total), (200, 0));
        assert_eq!(raw.max_open(), 2);
        assert_eq!(raw.violations(), Vec::<String>::new());
    });
}

#[test]
fn a_timed_run_and_a_warmup_work_as_on_http1() {
    guard(|| {
        let server = volt_server::start(volt_http::Config::default(), Duration::ZERO);
        let level = run(h2(server.url("/"))
            .connections(2)
            .threads(1)
            .streams(4)
            .duration(Duration::from_millis(800))
            .warmup(Duration::from_millis(200)));
        assert!(level.requests > 0);
        assert_eq!(level.errors.total, 0);
        assert!(
            (0.79..1.5).contains(&level.duration_s),
            "{}",
            level.duration_s
        );
        // Warm-up requests reached the server but are not counted.
        assert!(server.calls() as u64 > level.requests);
    });
}

#[test]
fn rate_mode_sends_on_free_streams() {
    guard(|| {
        // Every request takes 40 ms: at 200/s on one connection about 8 are in flight, which
        // one request per connection could not carry.
        let server = volt_server::start(volt_http::Config::default(), Duration::from_millis(40));
        let level = run(h2(server.url("/slow"))
            .connections(1)
            .threads(1)
            .streams(32)
            .rate(200.0)
            .duration(Duration::from_secs(2)));
        assert_eq!(level.errors.total, 0, "{:?}", level.errors);
        assert_eq!(level.scheduled, Some(400));
        // Every scheduled request is answered, or counted as unanswered at the end.
        assert_eq!(level.requests + level.unanswered, 400);
        assert!(level.service_time_us.unwrap().p50 >= 40_000);
        assert!(server.max_running() >= 2, "{}", server.max_running());
    });
}

#[test]
fn resets_are_errors_of_their_own_kind() {
    guard(|| {
        let server = H2Server::start(H2Behavior::Reset);
        let config = h2(server.url("/"))
            .connections(2)
            .streams(4)
            .total_requests(20)
            .build()
            .unwrap();
        let report = volt_bench::run(&config).unwrap();
        // The summary and the JSON say what was run and name the kind.
        let text = report.to_string();
        assert!(text.contains("h2c, 4 streams per connection"), "{text}");
        assert!(text.contains("reset"), "{text}");
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["protocol"], "h2c");
        assert_eq!(json["streams"], 4);
        assert_eq!(json["levels"][0]["errors"]["reset"], 20);
        let level = report.levels.into_iter().next().unwrap();
        assert_eq!(level.requests, 0);
        assert_eq!(level.errors.reset, 20);
        assert_eq!(level.errors.total, 20);
        assert_eq!(server.requests(), 20);
        // A reset ends a stream, not the connection.
        assert_eq!(server.accepts(), 2);
    });
}

#[test]
fn requests_a_goaway_refused_are_sent_again() {
    guard(|| {
        let server = H2Server::start(H2Behavior::GoAwayAfterOne);
        let level = run(h2(server.url("/"))
            .connections(1)
            .streams(4)
            .total_requests(20));
        assert_eq!(level.requests, 20);
        assert_eq!(level.errors.total, 0, "{:?}", level.errors);
        // Each connection answered one request; the streams above its GOAWAY's last stream
        // id were opened again on the next.
        assert_eq!(server.accepts(), 20);
        assert_eq!(server.violations(), Vec::<String>::new());
    });
}

#[test]
fn garbage_instead_of_settings_is_a_parse_error_per_connection() {
    guard(|| {
        let server = H2Server::start(H2Behavior::GarbagePreface);
        let level = run(h2(server.url("/"))
            .connections(2)
            .streams(4)
            .total_requests(15));
        assert_eq!(level.requests, 0);
        assert_eq!(level.errors.parse, 15);
        assert_eq!(level.errors.total, 15);
        // Each attempt carried one request.
        assert_eq!(server.accepts(), 15);
    });
}

#[test]
fn a_malformed_frame_fails_every_stream_of_its_connection_once() {
    guard(|| {
        let server = H2Server::start(H2Behavior::BadFrame);
        let level = run(h2(server.url("/"))
            .connections(1)
            .streams(4)
            .total_requests(20));
        assert_eq!(level.requests, 0);
        assert_eq!(level.errors.parse, 20, "{:?}", level.errors);
        assert_eq!(level.errors.total, 20);
        assert_eq!(server.requests(), 20);
    });
}

/// Streams on a connection the server closes without a GOAWAY: each is one `closed` error.
#[test]
fn a_close_fails_every_stream_in_flight_once() {
    guard(|| {
        let server = H2Server::start(H2Behavior::CloseOnRequest);
        let level = run(h2(server.url("/"))
            .connections(1)
            .streams(4)
            .total_requests(20));
        assert_eq!(level.requests, 0);
        assert_eq!(level.errors.closed, 20, "{:?}", level.errors);
        assert_eq!(level.errors.total, 20);
        assert_eq!(level.errors.timeout, 0, "the close is seen at once");
    });
}

/// A server that never answers: as on HTTP/1, with `--requests` the request that timed out
/// is finished as an error and the others in flight are sent again on a new connection, so
/// each request ends as one timeout.
#[test]
fn unanswered_streams_time_out_once_each() {
    guard(|| {
        let server = H2Server::start(H2Behavior::Silent);
        let level = run(h2(server.url("/"))
            .connections(1)
            .streams(4)
            .total_requests(6)
            .timeout(Duration::from_millis(300)));
        assert_eq!(level.requests, 0);
        assert_eq!(level.errors.timeout, 6, "{:?}", level.errors);
        assert_eq!(level.errors.total, 6);
    });
}

#[test]
fn windows_are_large_credit_is_batched_and_pings_are_answered() {
    guard(|| {
        // 16 responses of 256 KiB: 4 MiB, far past the default 64 KiB windows, on 256 DATA
        // frames. Only the WINDOW_UPDATE sent up front is needed.
        let server = H2Server::start(H2Behavior::Big(256 * 1024));
        let level = run(h2(server.url("/"))
            .connections(1)
            .streams(4)
            .total_requests(16));
        assert_eq!((level.requests, level.errors.total), (16, 0));
        assert!(level.bytes > 16 * 256 * 1024);
        assert_eq!(server.window_updates(), 1);
        assert_eq!(server.ping_acks(), 1);
        assert_eq!(server.violations(), Vec::<String>::new());
    });
}

#[test]
fn a_body_goes_out_within_the_servers_windows() {
    guard(|| {
        // 200 KB bodies: more than the 64 KiB every window starts with. The server gives back
        // what it read after each read, and checks that no byte came past its window.
        let server = H2Server::start(H2Behavior::Hello);
        let level = run(h2(server.url("/"))
            .method("POST")
            .body(vec![b'b'; 200_000])
            .connections(1)
            .streams(2)
            .total_requests(6));
        assert_eq!((level.requests, level.errors.total), (6, 0));
        assert_eq!(server.data_bytes(), 6 * 200_000);
        assert_eq!(server.violations(), Vec::<String>::new());
    });
}
