//! Constant-rate mode: the schedule holds its rate, and latency measured from each request's
//! scheduled send time shows a server stall that the uncorrected service time hides.

mod common;

use std::sync::Mutex;
use std::time::Duration;

use common::{config, guard, Behavior, TestServer};

/// The tests here measure timing: they run one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

#[test]
fn a_stall_shows_in_corrected_latency_only() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    guard(|| {
        let stall = Duration::from_millis(500);
        let server = TestServer::start(Behavior::Stall {
            at: Duration::from_millis(1_000),
            length: stall,
        });
        let report = volt_bench::run(
            &config(&server, "/")
                .connections(10)
                .threads(2)
                .rate(1_000.0)
                .duration(Duration::from_secs(3))
                .build()
                .unwrap(),
        )
        .unwrap();
        let level = &report.levels[0];
        let corrected = level.latency_us;
        let service = level
            .service_time_us
            .expect("rate mode reports the service time");
        let stall_us = stall.as_micros() as u64;
        eprintln!("corrected {corrected:?}\nservice {service:?}");
        assert_eq!(level.errors.total, 0);
        // ~500 of ~3,000 requests were scheduled during the stall and waited for it: the
        // corrected p99 sits near the stall length, the maximum at it.
        assert!(
            corrected.p99 >= stall_us * 8 / 10,
            "corrected p99 {}µs",
            corrected.p99
        );
        assert!(
            corrected.max >= stall_us * 9 / 10,
            "corrected max {}µs",
            corrected.max
        );
        // Only the ~10 requests in flight when it began saw the stall from their actual send.
        assert!(
            service.p99 < stall_us / 5,
            "service p99 {}µs hides the stall",
            service.p99
        );
        assert!(
            service.max >= stall_us * 9 / 10,
            "service max {}µs",
            service.max
        );
        assert!(
            corrected.p50 < stall_us / 5,
            "corrected p50 {}µs",
            corrected.p50
        );
        // Nothing scheduled was dropped: the backlog was sent once the server answered again.
        let scheduled = level.scheduled.unwrap();
        assert!(
            level.sent + 10 >= scheduled,
            "sent {} of {scheduled}",
            level.sent
        );
    });
}

/// The schedule is exact and never overrun; what is sent follows it. How closely depends on the
/// machine: a sender stalled by other load catches up (that is the point of a schedule), but
/// what is still due when the run's time is up is not sent. So the bounds below hold on a
/// loaded machine (a 300 ms stall at the end) and still catch a pacer that is off: unpaced,
/// 20 connections to a local server send tens of thousands of requests in 3 s; at half or
/// twice the rate, 3,000 or 12,000. BENCHMARKS.md measures the rate itself on a quiet machine.
#[test]
fn the_rate_is_kept_and_never_overrun() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    guard(|| {
        let server = TestServer::start(Behavior::Hello);
        let rate = 2_000.0;
        let report = volt_bench::run(
            &config(&server, "/")
                .connections(20)
                .threads(2)
                .rate(rate)
                .duration(Duration::from_secs(3))
                .build()
                .unwrap(),
        )
        .unwrap();
        let level = &report.levels[0];
        let scheduled = level.scheduled.unwrap() as f64;
        let sent = level.sent as f64;
        let achieved = level.achieved_rate.unwrap();
        eprintln!(
            "scheduled {scheduled} sent {sent} in {:.4}s → {achieved:.1} req/s, server saw {}",
            level.duration_s,
            server.requests()
        );
        // The schedule itself: rate × duration sends, to within one per connection.
        assert!(
            (scheduled - rate * 3.0).abs() <= 20.0,
            "scheduled {scheduled}"
        );
        // Never ahead of the schedule, and not far behind it.
        assert!(sent <= scheduled, "sent {sent} of {scheduled}");
        assert!(sent >= scheduled * 0.9, "sent {sent} of {scheduled}");
        assert!(
            achieved <= rate * 1.01 && achieved >= rate * 0.9,
            "achieved {achieved} req/s"
        );
        // Sent requests really reached the server, and were answered.
        assert!(server.requests() as f64 >= sent * 0.99);
        assert!((level.requests as f64 - sent).abs() / sent < 0.01);
    });
}

#[test]
fn requests_n_at_a_rate_is_exact_and_paced() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    guard(|| {
        let server = TestServer::start(Behavior::Hello);
        let report = volt_bench::run(
            &config(&server, "/")
                .connections(5)
                .threads(1)
                .rate(500.0)
                .total_requests(250)
                .build()
                .unwrap(),
        )
        .unwrap();
        let level = &report.levels[0];
        assert_eq!((level.requests, server.requests()), (250, 250));
        // 250 requests at 500/s: the last one is scheduled at 0.498 s.
        assert!(
            (0.45..0.8).contains(&level.duration_s),
            "{}",
            level.duration_s
        );
    });
}

#[test]
fn no_keepalive_at_a_rate() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    guard(|| {
        let server = TestServer::start(Behavior::Hello);
        let report = volt_bench::run(
            &config(&server, "/")
                .connections(4)
                .threads(1)
                .rate(200.0)
                .keepalive(false)
                .total_requests(60)
                .build()
                .unwrap(),
        )
        .unwrap();
        let level = &report.levels[0];
        assert_eq!((level.requests, level.errors.total), (60, 0));
        assert_eq!(server.accepts(), 60);
    });
}

/// At a low rate the last send comes well before the end of the run: the measured window is
/// still the whole duration, so the achieved rate is not overstated (it was 11.1 req/s for a
/// 10 req/s target: the window ended at the last response, 0.9 s in).
#[test]
fn a_low_rate_is_measured_over_the_whole_duration() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    guard(|| {
        let server = TestServer::start(Behavior::Hello);
        let report = volt_bench::run(
            &config(&server, "/")
                .connections(2)
                .threads(1)
                .rate(10.0)
                .duration(Duration::from_secs(1))
                .build()
                .unwrap(),
        )
        .unwrap();
        let level = &report.levels[0];
        let achieved = level.achieved_rate.unwrap();
        eprintln!(
            "sent {} of {:?} in {:.3}s → {achieved:.2} req/s",
            level.sent, level.scheduled, level.duration_s
        );
        assert_eq!((level.scheduled, level.sent), (Some(10), 10));
        assert_eq!((level.requests, level.errors.total), (10, 0));
        assert!(level.duration_s >= 1.0, "window {}s", level.duration_s);
        assert!(achieved <= 10.0, "achieved {achieved} req/s of 10");
        assert!(level.rps <= 10.0, "{} req/s", level.rps);
    });
}

/// A stall that lasts past the end of the run: the requests scheduled during it get no
/// response before the end (most are never even sent, the connections being busy). They were
/// left out of the latency, whose percentiles then showed none of the stall (p99 12 ms, max
/// 18 ms, with half the schedule unanswered); each now counts with the time it had waited.
#[test]
fn a_stall_until_the_end_shows_in_corrected_latency() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    guard(|| {
        let server = TestServer::start(Behavior::Stall {
            at: Duration::from_millis(700),
            length: Duration::from_millis(2_000),
        });
        let report = volt_bench::run(
            &config(&server, "/")
                .connections(10)
                .threads(2)
                .rate(500.0)
                .duration(Duration::from_millis(1_500))
                .build()
                .unwrap(),
        )
        .unwrap();
        let level = &report.levels[0];
        let corrected = level.latency_us;
        let unanswered = level.unanswered;
        let scheduled = level.scheduled.unwrap();
        eprintln!(
            "{} responses, {unanswered} unanswered of {scheduled} scheduled\n{corrected:?}",
            level.requests
        );
        assert_eq!(level.errors.total, 0);
        // ~400 of the 750 were scheduled after the stall began.
        assert!(unanswered >= 250, "{unanswered} unanswered");
        // Every scheduled request is a response, an error or unanswered; each response and
        // each unanswered request is one latency.
        assert_eq!(level.requests + unanswered, scheduled);
        assert_eq!(corrected.count, scheduled);
        // The oldest unanswered request was scheduled ~0.7 s in and had waited ~0.8 s; the
        // top tenth of the schedule waited more than half a second.
        assert!(
            corrected.max >= 600_000,
            "corrected max {}µs",
            corrected.max
        );
        assert!(
            corrected.p90 >= 400_000,
            "corrected p90 {}µs",
            corrected.p90
        );
        let text = report.to_string();
        assert!(text.contains("unanswered"), "{text}");
    });
}

/// With one request in flight per connection, a level can send no faster than its connections
/// get answers: 4 connections whose every round trip takes at least 100 ms send at most about
/// 40 of the 400 requests a second the schedule asks for. The rest are not lost: each scheduled
/// request is a response, an error or unanswered at the end, and each response and unanswered
/// request is one latency. This is what the rate sweep in `outputs.rs` met on a loaded 2-core
/// host (52.7 of 400 req/s: its round trips averaged some 75 ms), so the report told the truth.
#[test]
fn a_server_slower_than_the_schedule_holds_the_achieved_rate_down() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    guard(|| {
        let delay = Duration::from_millis(100);
        let server = TestServer::start(Behavior::Delay(delay));
        let (connections, rate) = (4, 400.0);
        let report = volt_bench::run(
            &config(&server, "/")
                .connections(connections)
                .threads(2)
                .rate(rate)
                .duration(Duration::from_millis(1_500))
                .build()
                .unwrap(),
        )
        .unwrap();
        let level = &report.levels[0];
        let scheduled = level.scheduled.unwrap();
        let achieved = level.achieved_rate.unwrap();
        eprintln!(
            "sent {} of {scheduled} in {:.3}s ({achieved:.1} req/s), {} responses, {} unanswered",
            level.sent, level.duration_s, level.requests, level.unanswered
        );
        assert_eq!(scheduled, 600);
        assert_eq!(level.errors.total, 0);
        // Each connection's sends are at least `delay` apart (a slower host only spaces them
        // more), over a window that lasts `duration_s` however late it ended.
        let per_connection = (level.duration_s / delay.as_secs_f64()).floor() as u64 + 1;
        assert!(
            level.sent <= connections as u64 * per_connection,
            "sent {} in {}s",
            level.sent,
            level.duration_s
        );
        assert!(achieved < rate / 8.0, "achieved {achieved} req/s");
        assert!(level.requests > 0);
        assert_eq!(level.requests + level.unanswered, scheduled);
        assert_eq!(level.latency_us.count, scheduled);
        let text = report.to_string();
        assert!(text.contains("of 600 scheduled"), "{text}");
    });
}

/// The same sweep level's numbers from a generator held up: its one worker thread is blocked
/// (by an `inspect` callback, as a starved or paused host would hold it) from 0.2 s after the
/// first response for 1.3 s, to past the end of the 1.5 s window. The sends it had due then
/// were never made: the window ends at the first wake after its end, so the achieved rate
/// comes out near 400 × 0.2 / 1.5 = 53 req/s, as the sweep in `outputs.rs` once reported
/// (52.7). They are not lost either: each is unanswered, with the time it had waited. (Once
/// in some fifty runs on a loaded host this came out 2 short of the schedule: a slot asleep
/// toward a send due before the end, when the window ended, had counted that send as made;
/// `worker::tests::a_send_slept_toward_when_the_window_ends_is_unanswered` pins it down.)
#[test]
fn a_generator_held_up_to_the_end_reports_the_sends_it_missed() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    guard(|| {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;
        use std::time::Instant;
        let server = TestServer::start(Behavior::Hello);
        let first: Arc<Mutex<Option<Instant>>> = Arc::default();
        let held = Arc::new(AtomicBool::new(false));
        let held_in = held.clone();
        let rate = 400.0;
        let report = volt_bench::run(
            &config(&server, "/")
                .connections(4)
                .threads(1)
                .rate(rate)
                .duration(Duration::from_millis(1_500))
                .inspect(move |_| {
                    let first = *first.lock().unwrap().get_or_insert_with(Instant::now);
                    if first.elapsed() >= Duration::from_millis(200)
                        && !held_in.swap(true, Ordering::Relaxed)
                    {
                        std::thread::sleep(Duration::from_millis(1_300));
                    }
                })
                .build()
                .unwrap(),
        )
        .unwrap();
        assert!(held.load(Ordering::Relaxed), "the worker was never held up");
        let level = &report.levels[0];
        let scheduled = level.scheduled.unwrap();
        let achieved = level.achieved_rate.unwrap();
        eprintln!(
            "sent {} of {scheduled} in {:.3}s ({achieved:.1} req/s), {} responses, {} unanswered",
            level.sent, level.duration_s, level.requests, level.unanswered
        );
        assert_eq!(scheduled, 600);
        assert_eq!(level.errors.total, 0);
        // Held up from `f` ≤ 1.5 s to `f` + 1.3 s: at most 400 × f sends in a window at least
        // `f` + 1.3 s long.
        assert!(achieved < rate * 0.6, "achieved {achieved} req/s");
        assert!(level.duration_s >= 1.5);
        assert_eq!(level.requests + level.unanswered, scheduled);
        assert_eq!(level.latency_us.count, scheduled);
        // The oldest unanswered request had waited most of the hold-up.
        assert!(level.latency_us.max >= 1_000_000, "{:?}", level.latency_us);
    });
}
