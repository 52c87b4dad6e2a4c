//! What a run leaves behind: sweeps with one level each, the JSON form, the HdrHistogram
//! interval log and the HTML page.

mod common;

use std::time::Duration;

use common::{config, guard, Behavior, TestServer};
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use hdrhistogram::serialization::Deserializer;
use volt_bench::Sweep;

fn temp_path(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("volt-bench-test-{}-{name}", std::process::id()))
}

#[test]
fn rate_sweep_json_hdr_log_and_html() {
    guard(|| {
        let server = TestServer::start(Behavior::Hello);
        let log_path = temp_path("sweep.hlog");
        let report = volt_bench::run(
            &config(&server, "/plaintext")
                .connections(4)
                .threads(2)
                .sweep(Sweep::parse("rate=200,400").unwrap())
                .duration(Duration::from_millis(1_500))
                .hdr_log(&log_path)
                .build()
                .unwrap(),
        )
        .unwrap();

        assert_eq!(report.levels.len(), 2);
        for (level, rate) in report.levels.iter().zip([200.0, 400.0]) {
            assert_eq!(level.rate, Some(rate));
            assert_eq!(level.errors.total, 0);
            // What a level must show however loaded the host. Not how close to its rate it
            // came: with one request in flight per connection, 4 connections keep up with 400
            // a second only while round trips take under 10 ms, and a starved 2-core host once
            // gave 52.7 (`rate.rs` shows both ways to it: a server that answers slowly, a worker held up).
            // The schedule is arithmetic: rate × 1.5 s.
            let scheduled = level.scheduled.unwrap();
            assert_eq!(scheduled, (rate * 1.5) as u64);
            // Never ahead of it...
            assert!(
                level.sent <= scheduled,
                "sent {} of {scheduled}",
                level.sent
            );
            let achieved = level.achieved_rate.unwrap();
            assert!(achieved <= rate, "{achieved} vs {rate}");
            assert!(level.requests > 0 && level.requests <= level.sent);
            // ...and nothing of it lost: every scheduled request is a response, an error or
            // unanswered at the end, and each response and unanswered request is one latency
            // (from its scheduled time).
            assert_eq!(
                level.requests + level.errors.total + level.unanswered,
                scheduled,
                "{} responses, {} errors, {} unanswered, {} sent",
                level.requests,
                level.errors.total,
                level.unanswered,
                level.sent
            );
            assert_eq!(level.latency_us.count, level.requests + level.unanswered);
            assert!(level.service_time_us.is_some() && level.send_lag_us.is_some());
            assert!(!level.spectrum.is_empty());
            // A whole second, then whole seconds while a worker woke late, then the rest: the
            // last entry ends the level's window, and the entries count every response.
            let times: Vec<f64> = level.timeline.iter().map(|s| s.t_s).collect();
            assert!(times.len() >= 2, "{:?}", level.timeline);
            assert_eq!(times[0], 1.0, "{times:?}");
            assert_eq!(*times.last().unwrap(), level.duration_s, "{times:?}");
            assert!(level.duration_s >= 1.5, "{}", level.duration_s);
            assert!(times.windows(2).all(|w| w[0] < w[1]), "{times:?}");
            let counted: u64 = level.timeline.iter().map(|s| s.requests).sum();
            assert_eq!(counted, level.requests);
        }
        assert_eq!(report.levels[0].label, "rate=200");

        // JSON: per-level results under `levels`, no top-level summary for a sweep.
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["mode"], "rate");
        assert_eq!(json["sweep"], "rate");
        assert_eq!(json["levels"].as_array().unwrap().len(), 2);
        assert!(json.get("rps").is_none());
        let level = &json["levels"][1];
        for key in [
            "requests",
            "duration_s",
            "rps",
            "bytes",
            "errors",
            "status",
            "latency_us",
        ] {
            assert!(level.get(key).is_some(), "missing {key}");
        }
        for key in ["p50", "p75", "p90", "p99", "p99.9", "p99.99", "max"] {
            assert!(
                level["latency_us"][key].is_u64(),
                "missing latency_us.{key}"
            );
        }
        assert!(level["service_time_us"]["p99"].is_u64());
        assert!(level["status"]["200"].as_u64().unwrap() > 0);
        for kind in ["connect", "io", "closed", "parse", "timeout", "total"] {
            assert_eq!(level["errors"][kind], 0);
        }

        // The interval log: per level, the intervals of its timeline, back to back, whole
        // seconds but for the last; their histograms hold the level's latencies, which in rate
        // mode count the requests unanswered at the end besides the responses.
        let log = std::fs::read(&log_path).unwrap();
        let _ = std::fs::remove_file(&log_path);
        let mut per_tag =
            std::collections::BTreeMap::<String, Vec<(Duration, Duration, u64)>>::new();
        let mut deserializer = Deserializer::new();
        for entry in IntervalLogIterator::new(&log) {
            if let LogEntry::Interval(h) = entry.expect("a valid log line") {
                let bytes = base64_decode(h.encoded_histogram());
                let hist: hdrhistogram::Histogram<u64> =
                    deserializer.deserialize(&mut &bytes[..]).unwrap();
                per_tag
                    .entry(h.tag().unwrap().as_str().to_string())
                    .or_default()
                    .push((h.start_timestamp(), h.duration(), hist.len()));
            }
        }
        assert_eq!(per_tag.len(), 2, "{per_tag:?}");
        // The log has millisecond resolution: a start and a length are each rounded.
        let close = |a: Duration, b: Duration| a.abs_diff(b) <= Duration::from_millis(2);
        let mut previous_end = Duration::ZERO;
        for level in &report.levels {
            let intervals = &per_tag[&level.label];
            assert_eq!(intervals.len(), level.timeline.len(), "{intervals:?}");
            assert!(intervals[0].0 >= previous_end, "{per_tag:?}");
            for (i, &(start, length, _)) in intervals.iter().enumerate() {
                if i + 1 < intervals.len() {
                    assert!(close(length, Duration::from_secs(1)), "{intervals:?}");
                    assert!(close(start + length, intervals[i + 1].0), "{intervals:?}");
                }
            }
            let (start, length, _) = *intervals.last().unwrap();
            previous_end = start + length;
            let covered = previous_end - intervals[0].0;
            assert!(
                close(covered, Duration::from_secs_f64(level.duration_s)),
                "{covered:?} vs {}s",
                level.duration_s
            );
            let counted: u64 = intervals.iter().map(|i| i.2).sum();
            assert_eq!(counted, level.requests + level.unanswered, "{intervals:?}");
        }
        assert!(String::from_utf8_lossy(&log).contains("#[BaseTime:"));

        // The page: self-contained, three charts, no scripts.
        let html = report.to_html();
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert_eq!(html.matches("<svg").count(), 3);
        assert!(html.contains("Latency percentiles against load"));
        assert!(html.contains("Throughput against load"));
        assert!(html.contains("percentile spectrum"));
        assert!(!html.contains("<script"));
        assert!(!html.contains("src=\"http"));

        // The summary: one row per level.
        let text = report.to_string();
        assert!(
            text.contains("rate=200") && text.contains("rate=400"),
            "{text}"
        );
    });
}

#[test]
fn connection_sweep_closed_loop() {
    guard(|| {
        let server = TestServer::start(Behavior::Hello);
        let report = volt_bench::run(
            &config(&server, "/")
                .threads(2)
                .sweep(Sweep::parse("conns=1,4").unwrap())
                .total_requests(300)
                .build()
                .unwrap(),
        )
        .unwrap();
        let conns: Vec<usize> = report.levels.iter().map(|l| l.connections).collect();
        assert_eq!(conns, [1, 4]);
        assert!(report.levels.iter().all(|l| l.requests == 300));
        assert_eq!(server.requests(), 600);
        assert_eq!(server.accepts(), 5);
    });
}

#[test]
fn single_run_json_has_the_summary_at_the_top() {
    guard(|| {
        let server = TestServer::start(Behavior::Hello);
        let log_path = temp_path("single.hlog");
        let report = volt_bench::run(
            &config(&server, "/")
                .connections(2)
                .threads(1)
                .total_requests(100)
                .hdr_log(&log_path)
                .build()
                .unwrap(),
        )
        .unwrap();
        let json = serde_json::to_value(&report).unwrap();
        let log = std::fs::read_to_string(&log_path).unwrap();
        let _ = std::fs::remove_file(&log_path);
        assert!(
            log.lines().any(|l| l.starts_with("0.")) && !log.contains("Tag="),
            "untagged intervals: {log}"
        );
        assert_eq!(json["requests"], 100);
        assert_eq!(json["mode"], "closed");
        assert!(json["rps"].as_f64().unwrap() > 0.0);
        assert_eq!(json["levels"][0]["requests"], 100);
        assert!(json["service_time_us"].is_null());
        let text = report.to_string();
        assert!(
            text.contains("Requests") && text.contains("200 ×100"),
            "{text}"
        );
    });
}

/// The per-second timeline is part of every report (`--json` has it), not only of runs that
/// show a progress line or write a log: `--quiet --json` and the library's defaults had an
/// empty one.
#[test]
fn a_run_without_progress_or_log_has_its_timeline() {
    guard(|| {
        let server = TestServer::start(Behavior::Hello);
        let report = volt_bench::run(
            &config(&server, "/")
                .connections(2)
                .threads(1)
                .duration(Duration::from_millis(1_500))
                .build()
                .unwrap(),
        )
        .unwrap();
        let level = &report.levels[0];
        let timeline = &level.timeline;
        // One whole second, then the last half second.
        assert_eq!(timeline.len(), 2, "{timeline:?}");
        let counted: u64 = timeline.iter().map(|s| s.requests).sum();
        assert_eq!(counted, level.requests);
    });
}

/// A worker held up past the end of the run (here by an `inspect` callback that blocks its
/// thread for 2.5 s): its controller wakes up late, with two whole seconds due. Each still gets
/// its entry in the timeline, at its own time, before the last partial one; it used to send
/// one and stop, folding the other second into the last interval.
#[test]
fn a_controller_woken_late_at_the_end_sends_every_second_due() {
    guard(|| {
        use std::sync::{Arc, Mutex};
        use std::time::Instant;
        let server = TestServer::start(Behavior::Hello);
        let first: Arc<Mutex<Option<Instant>>> = Arc::default();
        let blocked = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let report = volt_bench::run(
            &config(&server, "/")
                .connections(1)
                .threads(1)
                .duration(Duration::from_secs(2))
                .inspect(move |_| {
                    let first = *first.lock().unwrap().get_or_insert_with(Instant::now);
                    if first.elapsed() >= Duration::from_millis(300)
                        && !blocked.swap(true, std::sync::atomic::Ordering::Relaxed)
                    {
                        std::thread::sleep(Duration::from_millis(2_500));
                    }
                })
                .build()
                .unwrap(),
        )
        .unwrap();
        let timeline = &report.levels[0].timeline;
        let times: Vec<f64> = timeline.iter().map(|s| s.t_s).collect();
        for second in [1.0, 2.0] {
            assert!(
                times.iter().any(|t| (t - second).abs() < 0.01),
                "no entry for second {second}: {times:?}"
            );
        }
        assert!(times.windows(2).all(|w| w[0] < w[1]), "{times:?}");
    });
}

/// Standard base64, enough for the interval log's histograms.
fn base64_decode(s: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("not base64: {c}"),
    };
    let mut out = Vec::new();
    let mut acc = 0u32;
    let mut bits = 0;
    for &c in s.as_bytes().iter().filter(|&&c| c != b'=') {
        acc = acc << 6 | u32::from(value(c));
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}
