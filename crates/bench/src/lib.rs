//! An HTTP load generator on volt-rt: closed-loop, constant-rate and sweep runs, with every
//! response parsed and latency measured the way it should be.
//!
//! # Overview
//!
//! - [`Config`] (made by [`Config::builder`]) says what to send and how: URLs (round robin),
//!   method, headers, body; connections and threads; a duration or a request count; pipelining;
//!   a constant [`rate`](ConfigBuilder::rate); a [`Sweep`] over rates or connection counts; the
//!   [`Protocol`]: HTTP/1.1, HTTP/2 with [`streams`](ConfigBuilder::streams) in flight per
//!   connection (with prior knowledge on `http://`, by ALPN on `https://`, which is TLS), or
//!   HTTP/3 over QUIC (`https://` only) with streams in flight the same way.
//! - [`run`] executes it on one volt-rt worker per thread and returns a [`Report`]: requests/s,
//!   bytes, errors by kind, status counts and latency percentiles per [`Level`]. The report is
//!   `serde`-serializable, prints a summary with `Display`, and renders an HTML page with
//!   [`Report::to_html`].
//!
//! What it guarantees about its numbers:
//!
//! - Every response is parsed (`volt_proto`): status line, header fields, body framing
//!   (`Content-Length`, chunked, until close); on HTTP/2 every frame, and every head through
//!   HPACK; on HTTP/3 every frame, and every head through QPACK. Bytes that are not a valid
//!   response count as parse errors; a connection that ends
//!   mid-response counts as an error, never as a success.
//! - In rate mode each request's latency is measured from the time it was *scheduled* to be
//!   sent, so a server stall shows up in every request it delayed (no coordinated omission).
//!   The uncorrected service time is reported beside it.
//! - Latency goes into HdrHistograms with microsecond resolution and 3 significant digits.
//! - The generator stays cheap: requests are encoded once, a pipelined batch is one write, and
//!   responses are parsed straight from the read buffer, with no allocation per request.
//!
//! # Example
//!
//! ```no_run
//! use std::time::Duration;
//!
//! let config = volt_bench::Config::builder()
//!     .url("http://127.0.0.1:8080/plaintext")
//!     .connections(64)
//!     .rate(10_000.0)
//!     .duration(Duration::from_secs(10))
//!     .build()?;
//! let report = volt_bench::run(&config)?;
//! println!("{report}");
//! let p99 = report.levels[0].latency_us.p99;
//! # let _ = p99;
//! # Ok::<(), volt_bench::Error>(())
//! ```
//!
//! # Layout
//!
//! - `config`, `target`, `request`: settings, URLs, requests encoded into a ring of wire bytes.
//! - `h1`: the sans-I/O HTTP/1.1 response reader. `transport`: the byte stream (TCP), `tls`: TLS for `https://`.
//! - `driver`: the one module that joins them: runs a connection slot's exchanges.
//! - `h2`: HTTP/2 with prior knowledge: header blocks, the stream table, the sans-I/O client
//!   connection, and its own driver (concurrent streams per connection).
//! - `h3`: HTTP/3 over QUIC: requests as stream bytes, a QUIC connection on a UDP socket of its
//!   own (quinn-proto on volt-rt), the HTTP/3 client state (volt-proto's codec), its driver.
//! - `worker`: slots, the controller (ticks, timeouts, end), the request budget.
//! - `stats`: per-worker histograms and counters. `collect`: the thread that merges the
//!   workers' seconds into the progress line, the interval log and the timeline.
//! - `report`, `html`: the results and their presentation.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod collect;
mod config;
mod driver;
mod error;
mod h1;
mod h2;
mod h3;
mod html;
mod report;
mod request;
mod stats;
mod target;
mod tls;
mod transport;
mod worker;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Barrier, Mutex};
use std::time::Instant;

pub use config::{Config, ConfigBuilder, InspectFn, Protocol, ResponseView, Stop, Sweep};
pub use error::Error;
pub use report::{Errors, Level, Percentiles, Report, RunInfo, Second, SpectrumPoint};
pub use request::RequestLine;

use collect::{Msg, Outputs};
use request::RequestRing;
use stats::{Counts, Latencies};
use worker::{Budget, Plan, WorkerResult};

/// Runs the benchmark described by `config` and reports what it measured.
///
/// Blocks until the run (every level of a sweep) is over. Failed requests do not make this
/// fail: they are counted in the report.
///
/// # Errors
///
/// [`Error::Unreachable`] when no connection could be opened at the start of a level,
/// [`Error::File`] when the interval log cannot be written, [`Error::Runtime`] when the worker
/// threads cannot be started.
pub fn run(config: &Config) -> Result<Report, Error> {
    let levels = level_specs(config);
    let outputs = Outputs::open(config.hdr_log.as_ref(), config.progress)?;
    let run_start = Instant::now();
    let comment = format!(
        "volt bench {} {}",
        env!("CARGO_PKG_VERSION"),
        config.urls.join(" ")
    );
    let (tx, rx) = mpsc::channel::<Msg>();

    std::thread::scope(|scope| {
        let collector = scope.spawn(move || collect::collect(rx, outputs, run_start, &comment));
        let mut results = Vec::with_capacity(levels.len());
        let mut interrupted = false;
        let mut failure = None;
        for (index, spec) in levels.iter().enumerate() {
            let _ = tx.send(Msg::LevelStart {
                level: index,
                label: spec.label.clone(),
                workers: config.threads.min(spec.connections),
                duration: match config.stop {
                    Stop::Duration(d) => Some(d),
                    Stop::Requests(_) => None,
                },
                warmup: config.warmup,
            });
            // The collector always runs: it assembles the timeline every report has, besides
            // the progress line and the log when asked for (one message a second per worker).
            let result = run_level(config, index, spec, Some(tx.clone()));
            let _ = tx.send(Msg::LevelEnd { level: index });
            match result {
                Ok(level) => {
                    interrupted = level.interrupted;
                    results.push(level);
                    if interrupted {
                        break;
                    }
                }
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        drop(tx);
        let timelines = collector
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))?;
        if let Some(e) = failure {
            return Err(e);
        }
        let levels = results
            .into_iter()
            .zip(levels.iter())
            .enumerate()
            .map(|(i, (r, spec))| r.into_level(spec, timelines.get(i).cloned().unwrap_or_default()))
            .collect();
        Ok(Report {
            run: run_info(config),
            levels,
            interrupted,
        })
    })
}

/// One level of a run: its label and the connections and rate it uses.
struct LevelSpec {
    label: String,
    connections: usize,
    rate: Option<f64>,
}

fn level_specs(config: &Config) -> Vec<LevelSpec> {
    match &config.sweep {
        None => vec![LevelSpec {
            label: String::new(),
            connections: config.connections,
            rate: config.rate,
        }],
        Some(Sweep::Rate(rates)) => rates
            .iter()
            .map(|&r| LevelSpec {
                label: format!("rate={}", trim_rate(r)),
                connections: config.connections,
                rate: Some(r),
            })
            .collect(),
        Some(Sweep::Connections(conns)) => conns
            .iter()
            .map(|&c| LevelSpec {
                label: format!("conns={c}"),
                connections: c,
                rate: config.rate,
            })
            .collect(),
    }
}

fn trim_rate(r: f64) -> String {
    if r.fract() == 0.0 {
        format!("{r:.0}")
    } else {
        format!("{r}")
    }
}

/// The merged results of one level's workers.
struct LevelResult {
    latencies: Latencies,
    counts: Counts,
    status: Vec<u64>,
    duration_s: f64,
    scheduled: u64,
    interrupted: bool,
}

fn run_level(
    config: &Config,
    index: usize,
    spec: &LevelSpec,
    collector: Option<mpsc::Sender<Msg>>,
) -> Result<LevelResult, Error> {
    let workers = config.threads.min(spec.connections).max(1);
    let plan = Arc::new(Plan {
        level: index,
        addr: config.addr,
        ring: RequestRing::new(&config.requests, config.pipeline),
        pipeline: config.pipeline,
        streams: config.streams,
        h2_requests: config.h2_requests.clone(),
        h3_requests: config.h3_requests.clone(),
        connections: spec.connections,
        workers,
        rate: spec.rate,
        keepalive: config.keepalive,
        timeout: config.timeout,
        stop: config.stop,
        warmup: config.warmup,
        inspect: config.inspect.clone(),
        stop_on_signal: config.stop_on_signal,
        protocol: config.protocol,
        tls: config.tls.clone(),
        budget: Budget::new(config.stop),
        collector,
        barrier: Barrier::new(workers),
        start: Mutex::new(None),
        connected: AtomicUsize::new(0),
        connect_error: Mutex::new(None),
    });
    let runtime = volt_rt::Runtime::builder()
        .workers(workers)
        .thread_name("volt-bench")
        .build()
        .map_err(Error::Runtime)?;
    let results: Vec<WorkerResult> = runtime.run(|i| worker::run(plan.clone(), i));

    if plan.connected.load(Ordering::Relaxed) == 0 {
        let source = plan
            .connect_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .unwrap_or_else(|| std::io::Error::other("no connection could be opened"));
        return Err(Error::Unreachable {
            addr: config.addr,
            source,
        });
    }
    let rate_mode = spec.rate.is_some();
    let mut merged = LevelResult {
        latencies: Latencies::new(rate_mode),
        counts: Counts::default(),
        status: vec![0; 1000],
        duration_s: 0.0,
        scheduled: 0,
        interrupted: false,
    };
    let measure_start = results.iter().map(|r| r.measure_start).min();
    let stopped_at = results.iter().map(|r| r.stopped_at).max();
    if let (Some(from), Some(to)) = (measure_start, stopped_at) {
        merged.duration_s = to.saturating_duration_since(from).as_secs_f64();
    }
    for r in &results {
        merged.latencies.add(&r.latencies);
        merged.counts.add(&r.counts);
        for (a, b) in merged.status.iter_mut().zip(&r.status) {
            *a += b;
        }
        merged.scheduled += r.scheduled;
        merged.interrupted |= r.interrupted;
    }
    Ok(merged)
}

impl LevelResult {
    fn into_level(self, spec: &LevelSpec, timeline: Vec<Second>) -> Level {
        let per_s = |v: f64| {
            if self.duration_s > 0.0 {
                v / self.duration_s
            } else {
                0.0
            }
        };
        let c = &self.counts;
        let rate_mode = spec.rate.is_some();
        Level {
            label: spec.label.clone(),
            connections: spec.connections,
            rate: spec.rate,
            requests: c.responses,
            duration_s: self.duration_s,
            rps: per_s(c.responses as f64),
            bytes: c.bytes_read,
            bytes_per_s: per_s(c.bytes_read as f64),
            bytes_written: c.bytes_written,
            sent: c.sent,
            scheduled: rate_mode.then_some(self.scheduled),
            achieved_rate: rate_mode.then(|| per_s(c.sent as f64)),
            unanswered: c.unanswered,
            connections_opened: c.connections,
            errors: Errors::from_counts(&c.errors),
            non_2xx: c.non_2xx,
            status: self
                .status
                .iter()
                .enumerate()
                .filter(|(_, n)| **n > 0)
                .map(|(code, n)| (code as u16, *n))
                .collect::<BTreeMap<u16, u64>>(),
            latency_us: Percentiles::from_histogram(&self.latencies.latency),
            service_time_us: self
                .latencies
                .service
                .as_ref()
                .map(Percentiles::from_histogram),
            send_lag_us: self.latencies.lag.as_ref().map(Percentiles::from_histogram),
            spectrum: report::spectrum(&self.latencies.latency),
            timeline,
        }
    }
}

fn run_info(config: &Config) -> RunInfo {
    let rate_mode = config.rate.is_some() || matches!(config.sweep, Some(Sweep::Rate(_)));
    RunInfo {
        tool: "volt bench".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        urls: config.urls.clone(),
        target: config.host.clone(),
        method: config.method.clone(),
        mode: if rate_mode { "rate" } else { "closed" }.into(),
        connections: config.connections,
        threads: config.threads.min(config.connections),
        pipeline: config.pipeline,
        keepalive: config.keepalive,
        protocol: match (config.protocol, config.tls.is_some()) {
            (Protocol::Http1, false) => "http/1.1",
            (Protocol::Http1, true) => "http/1.1+tls",
            (Protocol::Http2, false) => "h2c",
            (Protocol::Http2, true) => "h2",
            (Protocol::Http3, _) => "h3",
        }
        .into(),
        streams: config.streams,
        rate: config.rate,
        duration_s: match config.stop {
            Stop::Duration(d) => Some(d.as_secs_f64()),
            Stop::Requests(_) => None,
        },
        requests_per_level: match config.stop {
            Stop::Requests(n) => Some(n),
            Stop::Duration(_) => None,
        },
        warmup_s: config.warmup.as_secs_f64(),
        timeout_s: config.timeout.as_secs_f64(),
        sweep: config.sweep.as_ref().map(|s| {
            match s {
                Sweep::Rate(_) => "rate",
                Sweep::Connections(_) => "conns",
            }
            .to_string()
        }),
    }
}
