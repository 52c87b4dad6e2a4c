//! What a run measured: [`Report`] (one [`Level`] per sweep level), serializable for
//! `--json` and printable as a summary a person reads at a glance.

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};

use hdrhistogram::Histogram;
use serde::{Serialize, Serializer};

pub use crate::collect::Second;

/// The result of [`run`](crate::run).
///
/// As JSON (`serde`), a run without a sweep has its one level's fields at the top level too
/// (`requests`, `duration_s`, `rps`, `errors`, `latency_us`, ...), so scripts need not look
/// into `levels`.
#[derive(Clone, Debug)]
pub struct Report {
    /// What was run.
    pub run: RunInfo,
    /// One entry per level; a run without `--sweep` has one.
    pub levels: Vec<Level>,
    /// The run was ended early by SIGINT/SIGTERM.
    pub interrupted: bool,
}

/// The settings a report was produced with.
#[derive(Clone, Debug, Serialize)]
pub struct RunInfo {
    /// `volt bench`.
    pub tool: String,
    /// The crate version.
    pub version: String,
    /// The URLs of the round robin.
    pub urls: Vec<String>,
    /// `host:port` connected to.
    pub target: String,
    /// The default method.
    pub method: String,
    /// `closed` (closed loop) or `rate` (constant rate).
    pub mode: String,
    /// Connections (the base value when a sweep varies them).
    pub connections: usize,
    /// Worker threads.
    pub threads: usize,
    /// Requests written back to back per connection.
    pub pipeline: usize,
    /// Connections reused.
    pub keepalive: bool,
    /// `http/1.1`, `http/1.1+tls`, `h2c` (HTTP/2 with prior knowledge) or `h2` (over TLS,
    /// chosen by ALPN).
    pub protocol: String,
    /// HTTP/2: the most streams in flight per connection (`--streams`); 1 for HTTP/1.1.
    pub streams: usize,
    /// Target rate in requests per second (the base value when not swept).
    pub rate: Option<f64>,
    /// Timed runs: seconds per level.
    pub duration_s: Option<f64>,
    /// `--requests` runs: requests per level.
    pub requests_per_level: Option<u64>,
    /// Warm-up seconds per level.
    pub warmup_s: f64,
    /// Request timeout in seconds.
    pub timeout_s: f64,
    /// `rate` or `conns` for a sweep.
    pub sweep: Option<String>,
}

/// The results of one level (the whole run without a sweep).
#[derive(Clone, Debug, Serialize)]
pub struct Level {
    /// `rate=1000`, `conns=8`, or empty without a sweep.
    pub label: String,
    /// Connections used.
    pub connections: usize,
    /// Target rate in rate mode.
    pub rate: Option<f64>,
    /// Complete responses counted, any status.
    pub requests: u64,
    /// Length of the measured window in seconds.
    pub duration_s: f64,
    /// Responses per second.
    pub rps: f64,
    /// Bytes read (heads and bodies).
    pub bytes: u64,
    /// Bytes read per second.
    pub bytes_per_s: f64,
    /// Bytes written.
    pub bytes_written: u64,
    /// Requests written in the measured window.
    pub sent: u64,
    /// Rate mode: sends the schedule had in the window (`sent` falls short of it when the
    /// generator or the connections could not keep up).
    pub scheduled: Option<u64>,
    /// Rate mode: requests sent per second.
    pub achieved_rate: Option<f64>,
    /// Requests with neither a response nor an error when the level ended.
    ///
    /// Rate mode, timed runs: requests scheduled in the window (in flight, or not sent yet
    /// because their connection was waiting). Each counts in `latency_us` with the time it had
    /// waited by then, a lower bound of its latency: `requests + errors.total + unanswered` is
    /// `scheduled`.
    ///
    /// Otherwise (closed loop, or a run ended by a signal): requests written in the window and
    /// still in flight at its end, a closed-loop run shorter than the server's answers, for
    /// one. They are in no latency.
    pub unanswered: u64,
    /// Connections opened.
    pub connections_opened: u64,
    /// Failed requests by kind.
    pub errors: Errors,
    /// Responses whose status is not 2xx (counted in `requests` and `status`, not `errors`).
    pub non_2xx: u64,
    /// Responses per status code.
    pub status: BTreeMap<u16, u64>,
    /// Latency in µs: from the scheduled send time in rate mode (coordinated omission
    /// corrected), from the send (or connect, without keep-alive) in closed-loop mode.
    pub latency_us: Percentiles,
    /// Rate mode: latency from the actual send, uncorrected (what closed-loop tools report).
    pub service_time_us: Option<Percentiles>,
    /// Rate mode: how late requests were sent after their scheduled time.
    pub send_lag_us: Option<Percentiles>,
    /// The latency percentile spectrum, for plotting.
    pub spectrum: Vec<SpectrumPoint>,
    /// One entry per second.
    pub timeline: Vec<Second>,
}

/// Failed requests by kind. Each failed request counts once.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq, Eq)]
pub struct Errors {
    /// No connection could be opened.
    pub connect: u64,
    /// A read or write failed for another reason than the server ending the connection.
    pub io: u64,
    /// The server ended the connection (closed or reset it) before the response was complete,
    /// or before any of it: a request written on a connection the server had just closed
    /// (an idle keep-alive connection, or one closed without `Connection: close`) is one.
    pub closed: u64,
    /// The response was not valid HTTP/1.1, or (HTTP/2) the server broke the protocol: a
    /// malformed frame or header block, which closes the connection.
    pub parse: u64,
    /// No response within the timeout.
    pub timeout: u64,
    /// HTTP/2: the server reset the request's stream (RST_STREAM).
    pub reset: u64,
    /// All of the above.
    pub total: u64,
}

impl Errors {
    pub(crate) fn from_counts(e: &[u64; crate::stats::ERROR_KINDS]) -> Errors {
        use crate::stats::ErrorKind::*;
        Errors {
            connect: e[Connect as usize],
            io: e[Io as usize],
            closed: e[Closed as usize],
            parse: e[Parse as usize],
            timeout: e[Timeout as usize],
            reset: e[Reset as usize],
            total: e.iter().sum(),
        }
    }

    fn kinds(&self) -> [(&'static str, u64); 6] {
        [
            ("connect", self.connect),
            ("io", self.io),
            ("closed early", self.closed),
            ("parse", self.parse),
            ("timeout", self.timeout),
            ("reset", self.reset),
        ]
    }
}

/// Latency percentiles in microseconds.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq)]
pub struct Percentiles {
    /// Values recorded.
    pub count: u64,
    /// Lowest.
    pub min: u64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Standard deviation.
    pub stdev: f64,
    /// Median.
    pub p50: u64,
    /// 75th percentile.
    pub p75: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    #[serde(rename = "p99.9")]
    pub p99_9: u64,
    /// 99.99th percentile.
    #[serde(rename = "p99.99")]
    pub p99_99: u64,
    /// Highest.
    pub max: u64,
}

impl Percentiles {
    pub(crate) fn from_histogram(h: &Histogram<u64>) -> Percentiles {
        if h.is_empty() {
            return Percentiles::default();
        }
        let q = |q: f64| h.value_at_quantile(q);
        Percentiles {
            count: h.len(),
            min: h.min(),
            mean: h.mean(),
            stdev: h.stdev(),
            p50: q(0.5),
            p75: q(0.75),
            p90: q(0.9),
            p99: q(0.99),
            p99_9: q(0.999),
            p99_99: q(0.9999),
            max: h.max(),
        }
    }

    fn row(&self) -> [u64; 7] {
        [
            self.p50,
            self.p75,
            self.p90,
            self.p99,
            self.p99_9,
            self.p99_99,
            self.max,
        ]
    }
}

/// One point of the percentile spectrum: this share of requests took at most `latency_us`.
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct SpectrumPoint {
    /// Percentile, 0 to 100.
    pub percentile: f64,
    /// Latency at that percentile, µs.
    pub latency_us: u64,
}

/// Percentiles from 0 to 99.999 spaced evenly in `log10(1 / (1 - p))`, then 100.
pub(crate) fn spectrum(h: &Histogram<u64>) -> Vec<SpectrumPoint> {
    if h.is_empty() {
        return Vec::new();
    }
    let mut points: Vec<SpectrumPoint> = (0..=50)
        .map(|k| {
            let q = 1.0 - 10f64.powf(-(k as f64) / 10.0);
            SpectrumPoint {
                percentile: q * 100.0,
                latency_us: h.value_at_quantile(q),
            }
        })
        .collect();
    points.push(SpectrumPoint {
        percentile: 100.0,
        latency_us: h.max(),
    });
    points
}

impl Serialize for Report {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Json<'a> {
            #[serde(flatten)]
            run: &'a RunInfo,
            interrupted: bool,
            #[serde(flatten)]
            summary: Option<&'a Level>,
            levels: &'a [Level],
        }
        Json {
            run: &self.run,
            interrupted: self.interrupted,
            summary: match self.levels.as_slice() {
                [only] if self.run.sweep.is_none() => Some(only),
                _ => None,
            },
            levels: &self.levels,
        }
        .serialize(s)
    }
}

impl Report {
    /// Responses counted over all levels.
    pub fn total_requests(&self) -> u64 {
        self.levels.iter().map(|l| l.requests).sum()
    }

    /// A self-contained HTML page with SVG charts of the levels (latency and throughput against
    /// load, and the latency spectrum).
    pub fn to_html(&self) -> String {
        crate::html::render(self)
    }
}

// ---- the summary -----------------------------------------------------------------------------

const PERCENTILE_HEADS: [&str; 7] = ["p50", "p75", "p90", "p99", "p99.9", "p99.99", "max"];

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let run = &self.run;
        writeln!(f, "{}", self.headline())?;
        if run.sweep.is_some() {
            self.fmt_sweep(f)?;
        } else if let Some(level) = self.levels.first() {
            level.fmt_summary(f, run)?;
        }
        if self.interrupted {
            writeln!(f, "\n  (interrupted: the last level ended early)")?;
        }
        Ok(())
    }
}

impl Report {
    fn headline(&self) -> String {
        let run = &self.run;
        let mut line = format!("{} · {}", run.tool, run.urls[0]);
        if run.urls.len() > 1 {
            let _ = write!(line, " (+{} more, round robin)", run.urls.len() - 1);
        }
        let mut parts = Vec::new();
        match &run.sweep {
            Some(kind) => parts.push(format!("sweep over {kind}")),
            None => parts.push(format!("{} connections", run.connections)),
        }
        parts.push(format!(
            "{} thread{}",
            run.threads,
            if run.threads == 1 { "" } else { "s" }
        ));
        match run.mode.as_str() {
            "rate" => match run.rate {
                Some(r) if run.sweep.as_deref() != Some("rate") => {
                    parts.push(format!("constant rate {} req/s", group_f(r)))
                }
                _ => parts.push("constant rate".into()),
            },
            _ if run.pipeline > 1 => parts.push(format!("closed loop, pipeline {}", run.pipeline)),
            _ => parts.push("closed loop".into()),
        }
        if run.protocol == "http/1.1+tls" {
            parts.push("TLS".into());
        }
        if run.protocol.starts_with("h2") {
            parts.push(format!(
                "{}, {} stream{} per connection",
                run.protocol,
                group(run.streams as u64),
                if run.streams == 1 { "" } else { "s" }
            ));
        }
        if !run.keepalive {
            parts.push("new connection per request".into());
        }
        match (run.duration_s, run.requests_per_level) {
            (Some(d), _) => parts.push(format!("{}s", trim_float(d))),
            (_, Some(n)) => parts.push(format!("{} requests", group(n))),
            _ => {}
        }
        if run.warmup_s > 0.0 {
            parts.push(format!("{}s warm-up", trim_float(run.warmup_s)));
        }
        format!("{line}\n  {}", parts.join(" · "))
    }

    fn fmt_sweep(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rate_mode = self.run.mode == "rate";
        writeln!(f)?;
        let label_width = self
            .levels
            .iter()
            .map(|l| l.label.len())
            .max()
            .unwrap_or(5)
            .max(5);
        write!(
            f,
            "  {:<label_width$} {:>12} {:>8}",
            "level", "req/s", "errors"
        )?;
        for h in ["p50", "p90", "p99", "p99.9", "max"] {
            write!(f, " {h:>8}")?;
        }
        if rate_mode {
            write!(f, "  {:>8}", "svc p99")?;
        }
        writeln!(f)?;
        for l in &self.levels {
            let p = &l.latency_us;
            write!(
                f,
                "  {:<label_width$} {:>12} {:>8}",
                l.label,
                group_f(l.rps),
                group(l.errors.total)
            )?;
            for v in [p.p50, p.p90, p.p99, p.p99_9, p.max] {
                write!(f, " {:>8}", fmt_us(v as f64))?;
            }
            if let Some(s) = &l.service_time_us {
                write!(f, "  {:>8}", fmt_us(s.p99 as f64))?;
            }
            writeln!(f)?;
        }
        if rate_mode {
            writeln!(
                f,
                "\n  Latency is measured from each request's scheduled send time; `svc p99` is from \
                 its actual send."
            )?;
        }
        let bad: Vec<&Level> = self.levels.iter().filter(|l| l.non_2xx > 0).collect();
        for l in bad {
            writeln!(f, "  {}: {} non-2xx responses", l.label, group(l.non_2xx))?;
        }
        Ok(())
    }
}

impl Level {
    fn fmt_summary(&self, f: &mut fmt::Formatter<'_>, run: &RunInfo) -> fmt::Result {
        writeln!(f)?;
        writeln!(
            f,
            "  {:<11} {:<26} {} req/s",
            "Requests",
            format!("{} in {:.2}s", group(self.requests), self.duration_s),
            group_f(self.rps)
        )?;
        writeln!(
            f,
            "  {:<11} {:<26} {}/s",
            "Transfer",
            fmt_bytes(self.bytes as f64),
            fmt_bytes(self.bytes_per_s)
        )?;
        if let (Some(rate), Some(scheduled), Some(achieved)) =
            (self.rate, self.scheduled, self.achieved_rate)
        {
            let share = if scheduled > 0 {
                self.sent as f64 / scheduled as f64 * 100.0
            } else {
                100.0
            };
            writeln!(
                f,
                "  {:<11} target {} req/s · sent {} req/s ({} of {} scheduled, {share:.1}%)",
                "Rate",
                group_f(rate),
                group_f(achieved),
                group(self.sent),
                group(scheduled),
            )?;
        }
        match (self.unanswered, self.scheduled) {
            (0, _) => {}
            (n, Some(_)) if run.duration_s.is_some() => writeln!(
                f,
                "  {:<11} {} scheduled requests unanswered at the end, counted in `corrected` \
                 with the time they had waited",
                "",
                group(n)
            )?,
            (n, _) => writeln!(
                f,
                "  {:<11} {} requests sent and unanswered at the end (in flight when the run \
                 stopped)",
                "Unanswered",
                group(n)
            )?,
        }
        if !run.keepalive || self.connections_opened > self.connections as u64 {
            writeln!(
                f,
                "  {:<11} {} opened",
                "Connections",
                group(self.connections_opened)
            )?;
        }

        writeln!(f)?;
        write!(f, "  {:<11}", "Latency")?;
        for h in PERCENTILE_HEADS {
            write!(f, " {h:>8}")?;
        }
        writeln!(f)?;
        let row = |f: &mut fmt::Formatter<'_>, name: &str, p: &Percentiles| -> fmt::Result {
            write!(f, "  {name:<11}")?;
            for v in p.row() {
                write!(f, " {:>8}", fmt_us(v as f64))?;
            }
            writeln!(f)
        };
        match &self.service_time_us {
            Some(service) => {
                row(f, "  corrected", &self.latency_us)?;
                row(f, "  service", service)?;
                if let Some(lag) = &self.send_lag_us {
                    row(f, "  send lag", lag)?;
                }
                writeln!(
                    f,
                    "  corrected: from each request's scheduled send time (coordinated omission \
                     corrected)\n  service: from its actual send, as a closed-loop tool measures"
                )?;
            }
            None => row(f, "", &self.latency_us)?,
        }

        writeln!(f)?;
        let status: Vec<String> = self
            .status
            .iter()
            .map(|(code, n)| format!("{code} ×{}", group(*n)))
            .collect();
        let status = if status.is_empty() {
            "no responses".to_string()
        } else {
            status.join(" · ")
        };
        writeln!(f, "  {:<11} {status}", "Status")?;
        if self.non_2xx > 0 {
            writeln!(f, "  {:<11} {}", "Non-2xx", group(self.non_2xx))?;
        }
        let errors: Vec<String> = self
            .errors
            .kinds()
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(k, n)| format!("{k} {}", group(*n)))
            .collect();
        if errors.is_empty() {
            writeln!(f, "  {:<11} none", "Errors")?;
        } else {
            writeln!(
                f,
                "  {:<11} {} ({})",
                "Errors",
                group(self.errors.total),
                errors.join(" · ")
            )?;
        }
        if self.requests == 0 && self.errors.total > 0 {
            writeln!(
                f,
                "\n  warning: no valid response was received; every request failed"
            )?;
        } else if self.requests == 0 && self.unanswered > 0 {
            writeln!(
                f,
                "\n  warning: no response was received; the requests sent were still waiting at \
                 the end (timeout {}s)",
                trim_float(run.timeout_s)
            )?;
        }
        Ok(())
    }
}

// ---- number formatting -----------------------------------------------------------------------

/// `1234567` → `1,234,567`.
pub(crate) fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A rate: grouped whole numbers from 100 up, one decimal below.
pub(crate) fn group_f(v: f64) -> String {
    if v >= 100.0 {
        group(v.round() as u64)
    } else {
        format!("{v:.1}")
    }
}

/// Microseconds in the unit that keeps 3 significant digits: `812µs`, `1.23ms`, `2.50s`.
///
/// The unit and the decimals are chosen for the value as printed, after rounding: 99.95 ms is
/// `100ms`, not `100.0ms`, and 999.6 µs is `1.00ms`, not `1000µs`.
pub(crate) fn fmt_us(us: f64) -> String {
    const UNITS: [(&str, f64); 3] = [("µs", 1.0), ("ms", 1e3), ("s", 1e6)];
    let decimals = |unit: &str, v: f64| match v {
        _ if unit == "µs" => 0,
        100.0.. => 0,
        10.0.. => 1,
        _ => 2,
    };
    let mut text = String::new();
    for (i, (unit, scale)) in UNITS.into_iter().enumerate() {
        let v = us / scale;
        text = format!("{v:.*}", decimals(unit, v));
        // What the text says, rounding included: it may have reached the next threshold.
        let shown: f64 = text.parse().unwrap_or(v);
        if shown >= 1_000.0 && i + 1 < UNITS.len() {
            continue;
        }
        let d = decimals(unit, shown);
        if d != decimals(unit, v) {
            text = format!("{v:.d$}");
        }
        text.push_str(unit);
        break;
    }
    text
}

/// Bytes in binary units: `160.2 MiB`.
pub(crate) fn fmt_bytes(b: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{v:.0} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

fn trim_float(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_formats() {
        assert_eq!(group(0), "0");
        assert_eq!(group(999), "999");
        assert_eq!(group(1000), "1,000");
        assert_eq!(group(1234567), "1,234,567");
        assert_eq!(fmt_us(812.0), "812µs");
        assert_eq!(fmt_us(1234.0), "1.23ms");
        assert_eq!(fmt_us(12_345.0), "12.3ms");
        assert_eq!(fmt_us(512_000.0), "512ms");
        assert_eq!(fmt_us(2_500_000.0), "2.50s");
    }

    #[test]
    fn fmt_us_switches_unit_after_rounding() {
        // Rounding to 3 significant digits can reach the next precision or unit: it is
        // printed as that one, never as `100.0ms` or `1000µs`.
        assert_eq!(fmt_us(99_950.0), "100ms");
        assert_eq!(fmt_us(99_949.0), "99.9ms");
        assert_eq!(fmt_us(9_996.0), "10.0ms");
        assert_eq!(fmt_us(999.6), "1.00ms");
        assert_eq!(fmt_us(999.4), "999µs");
        assert_eq!(fmt_us(999_600.0), "1.00s");
        assert_eq!(fmt_us(9_999_000.0), "10.0s");
        assert_eq!(fmt_us(99_960_000.0), "100s");
        assert_eq!(fmt_us(0.0), "0µs");
        assert_eq!(fmt_bytes(512.0), "512 B");
        assert_eq!(fmt_bytes(1536.0), "1.5 KiB");
        assert_eq!(group_f(12.345), "12.3");
        assert_eq!(group_f(123456.7), "123,457");
        assert_eq!(trim_float(10.0), "10");
        assert_eq!(trim_float(0.5), "0.5");
    }

    #[test]
    fn percentiles_and_spectrum() {
        let mut h = crate::stats::new_histogram();
        for v in 1..=1000u64 {
            h.record(v).unwrap();
        }
        let p = Percentiles::from_histogram(&h);
        assert_eq!(p.count, 1000);
        assert_eq!((p.p50, p.p99, p.max), (500, 990, 1000));
        let s = spectrum(&h);
        assert_eq!(s.first().unwrap().percentile, 0.0);
        assert_eq!(s.last().unwrap().latency_us, 1000);
        assert!(s.windows(2).all(|w| w[0].latency_us <= w[1].latency_us));
        assert_eq!(
            Percentiles::from_histogram(&crate::stats::new_histogram()).count,
            0
        );
    }
}
