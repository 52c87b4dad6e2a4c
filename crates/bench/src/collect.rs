//! The collector: one thread for the whole run that merges the workers' per-second ticks into
//! the live progress line, the HdrHistogram interval log and each level's timeline.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, IsTerminal, Write};
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime};

use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::Histogram;
use serde::Serialize;

use crate::stats::{new_histogram, Counts};
use crate::Error;

/// What the main thread and the workers tell the collector.
pub(crate) enum Msg {
    LevelStart {
        level: usize,
        label: String,
        workers: usize,
        /// Timed runs: how long the measured window lasts.
        duration: Option<Duration>,
        warmup: Duration,
    },
    Tick(Tick),
    LevelEnd {
        level: usize,
    },
}

/// One worker's second: the latencies recorded in it and its running counts.
pub(crate) struct Tick {
    pub level: usize,
    pub worker: usize,
    /// 0, 1, 2... for whole seconds; `u32::MAX` for the worker's last, partial interval.
    pub seq: u32,
    /// When the interval ended.
    pub at: Instant,
    /// When the worker's measured window began (the same for every worker of a level).
    pub measure_start: Instant,
    pub latency: Histogram<u64>,
    pub counts: Counts,
}

/// One second of a level, merged over the workers.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Second {
    /// End of the interval, seconds since the measured window began.
    pub t_s: f64,
    /// Responses in the interval.
    pub requests: u64,
    /// Errors in the interval.
    pub errors: u64,
    /// Median latency in the interval, µs.
    pub p50_us: u64,
    /// 99th percentile latency in the interval, µs.
    pub p99_us: u64,
    /// Highest latency in the interval, µs.
    pub max_us: u64,
}

/// The merged interval being assembled.
struct Pending {
    latency: Histogram<u64>,
    arrived: usize,
    /// Latest end time among the workers' ticks.
    at: Instant,
    counts: Counts,
}

/// Where the collector writes; opened before the run so a bad path fails early.
pub(crate) struct Outputs {
    pub hdr_log: Option<(PathBuf, File)>,
    pub progress: bool,
}

impl Outputs {
    pub(crate) fn open(hdr_log: Option<&PathBuf>, progress: bool) -> Result<Outputs, Error> {
        let hdr_log = match hdr_log {
            Some(path) => Some((
                path.clone(),
                File::create(path).map_err(|e| Error::file(path, e))?,
            )),
            None => None,
        };
        Ok(Outputs {
            hdr_log,
            progress: progress && std::io::stderr().is_terminal(),
        })
    }
}

/// Runs the collector until every sender is dropped. Returns each level's timeline.
pub(crate) fn collect(
    rx: mpsc::Receiver<Msg>,
    outputs: Outputs,
    run_start: Instant,
    comment: &str,
) -> Result<Vec<Vec<Second>>, Error> {
    let wall_start = SystemTime::now();
    let mut serializer = V2DeflateSerializer::new();
    let mut log_file = outputs
        .hdr_log
        .map(|(path, file)| (path, BufWriter::new(file)));
    let mut log = match &mut log_file {
        Some((path, file)) => {
            let path = path.clone();
            let writer = IntervalLogWriterBuilder::new()
                .add_comment(comment)
                .add_comment("Latencies in microseconds; interval max values in milliseconds")
                .with_start_time(wall_start)
                .with_base_time(wall_start)
                .with_max_value_divisor(1000.0)
                .begin_log_with(file, &mut serializer)
                .map_err(|e| Error::file(&path, e))?;
            Some((path, writer))
        }
        None => None,
    };

    let mut timelines: Vec<Vec<Second>> = Vec::new();
    let mut pending: BTreeMap<u32, Pending> = BTreeMap::new();
    let mut last_counts: Vec<Counts> = Vec::new();
    let mut level_label = String::new();
    let mut level_workers = 0;
    let mut level_duration = None;
    let mut measure_start = run_start;
    let mut interval_start = run_start;
    let mut log_error = None;
    let mut level_errors = 0;
    let mut fresh_level = true;

    for msg in rx {
        match msg {
            Msg::LevelStart {
                level,
                label,
                workers,
                duration,
                warmup,
            } => {
                timelines.resize_with(level + 1, Vec::new);
                level_label = label;
                level_workers = workers;
                level_duration = duration;
                last_counts = vec![Counts::default(); workers];
                pending.clear();
                level_errors = 0;
                fresh_level = true;
                if outputs.progress && !warmup.is_zero() {
                    eprint!("\r\x1b[2K  {level_label} warming up for {warmup:.1?}");
                }
            }
            Msg::Tick(tick) => {
                let delta = {
                    let last = &mut last_counts[tick.worker];
                    let mut d = tick.counts;
                    d.responses -= last.responses;
                    d.errors = std::array::from_fn(|i| d.errors[i] - last.errors[i]);
                    *last = tick.counts;
                    d
                };
                if fresh_level {
                    // The workers fix the start once they are connected.
                    measure_start = tick.measure_start;
                    interval_start = measure_start;
                    fresh_level = false;
                }
                let entry = pending.entry(tick.seq).or_insert_with(|| Pending {
                    latency: new_histogram(),
                    arrived: 0,
                    at: tick.at,
                    counts: Counts::default(),
                });
                let _ = entry.latency.add(&tick.latency);
                entry.arrived += 1;
                entry.at = entry.at.max(tick.at);
                entry.counts.add(&delta);
                // Whole seconds are complete once every worker sent theirs.
                while let Some(first) = pending.first_entry() {
                    if *first.key() == u32::MAX || first.get().arrived < level_workers {
                        break;
                    }
                    let done = first.remove();
                    let second = emit(
                        &done,
                        &mut interval_start,
                        measure_start,
                        run_start,
                        &level_label,
                        &mut log,
                        &mut log_error,
                    );
                    level_errors += second.errors;
                    if outputs.progress {
                        progress(&level_label, &second, level_duration, level_errors);
                    }
                    timelines[tick.level].push(second);
                }
            }
            Msg::LevelEnd { level } => {
                // The last partial intervals, merged into one.
                let mut rest: Option<Pending> = None;
                for (_, p) in std::mem::take(&mut pending) {
                    match &mut rest {
                        None => rest = Some(p),
                        Some(r) => {
                            let _ = r.latency.add(&p.latency);
                            r.at = r.at.max(p.at);
                            r.counts.add(&p.counts);
                        }
                    }
                }
                if let Some(rest) = rest {
                    if rest.at > interval_start {
                        let second = emit(
                            &rest,
                            &mut interval_start,
                            measure_start,
                            run_start,
                            &level_label,
                            &mut log,
                            &mut log_error,
                        );
                        timelines[level].push(second);
                    }
                }
                if outputs.progress {
                    eprint!("\r\x1b[2K");
                }
            }
        }
    }
    drop(log);
    if let Some((path, mut file)) = log_file {
        if log_error.is_none() {
            if let Err(e) = file.flush() {
                log_error = Some((path, e));
            }
        }
    }
    match log_error {
        Some((path, e)) => Err(Error::file(path, e)),
        None => Ok(timelines),
    }
}

type LogWriter<'a, 'b> = hdrhistogram::serialization::interval_log::IntervalLogWriter<
    'a,
    'b,
    BufWriter<File>,
    V2DeflateSerializer,
>;

/// Writes one merged interval to the log and turns it into a timeline entry.
fn emit(
    p: &Pending,
    interval_start: &mut Instant,
    measure_start: Instant,
    run_start: Instant,
    label: &str,
    log: &mut Option<(PathBuf, LogWriter<'_, '_>)>,
    log_error: &mut Option<(PathBuf, std::io::Error)>,
) -> Second {
    let start = *interval_start;
    let length = p.at.saturating_duration_since(start);
    *interval_start = p.at;
    if let Some((path, writer)) = log {
        if log_error.is_none() {
            // A run without a sweep has no label: its intervals go untagged.
            let tag = if label.is_empty() {
                None
            } else {
                Tag::new(label)
            };
            let result = writer.write_histogram(
                &p.latency,
                start.saturating_duration_since(run_start),
                length,
                tag,
            );
            if let Err(e) = result {
                *log_error = Some((path.clone(), std::io::Error::other(e.to_string())));
            }
        }
    }
    let quantile = |q| {
        if p.latency.is_empty() {
            0
        } else {
            p.latency.value_at_quantile(q)
        }
    };
    Second {
        t_s: p.at.saturating_duration_since(measure_start).as_secs_f64(),
        requests: p.counts.responses,
        errors: p.counts.error_total(),
        p50_us: quantile(0.5),
        p99_us: quantile(0.99),
        max_us: p.latency.max(),
    }
}

fn progress(label: &str, s: &Second, duration: Option<Duration>, errors: u64) {
    let of = match duration {
        Some(d) => format!("/{:.0}s", d.as_secs_f64()),
        None => String::new(),
    };
    let mut err = std::io::stderr().lock();
    let _ = write!(
        err,
        "\r\x1b[2K  {label}{sep}{t:.0}s{of}  {rps} req/s  p99 {p99}  errors {errors}",
        sep = if label.is_empty() { "" } else { "  " },
        t = s.t_s,
        rps = crate::report::group(s.requests),
        p99 = crate::report::fmt_us(s.p99_us as f64),
        errors = crate::report::group(errors),
    );
    let _ = err.flush();
}
