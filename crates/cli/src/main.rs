//! `volt`: the command line of the volt HTTP toolkit. `volt bench` is a load generator, a thin
//! layer over the `volt-bench` library; `volt serve` serves a directory's files (`serve.rs`).

mod serve;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use volt_bench::{Config, Protocol, RequestLine, Sweep};

#[derive(Parser, Debug)]
#[command(name = "volt", version, about = "The volt HTTP toolkit")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Load-test an HTTP/1.1, HTTP/2 or HTTP/3 server, over TCP, TLS or QUIC: closed loop
    /// (like wrk, or h2load with --h2), constant rate with latency corrected for coordinated omission (like wrk2), or a
    /// sweep over rates or connections.
    Bench(Box<BenchArgs>),
    /// Serve a directory's files over HTTP/1.1 and HTTP/2 (h2c): conditional requests, byte
    /// ranges, index pages, directory listings.
    Serve(serve::ServeArgs),
}

#[derive(Args, Debug)]
#[command(after_help = "\
Examples:
  volt bench -c 64 -d 10s http://127.0.0.1:8080/plaintext
  volt bench -c 256 --pipeline 16 -t 1 http://127.0.0.1:8080/plaintext
  volt bench -c 32 --rate 20k -d 30s http://127.0.0.1:8080/json
  volt bench -c 64 --sweep rate=10k,20k,40k --html sweep.html http://127.0.0.1:8080/
  volt bench -n 10000 --no-keepalive -c 32 http://127.0.0.1:8080/
  volt bench --h2 -c 16 --streams 32 -d 10s http://127.0.0.1:8080/plaintext
  volt bench --h2 -c 16 --streams 32 -d 10s https://127.0.0.1:8443/plaintext
  volt bench --h3 -c 16 --streams 32 -d 10s https://127.0.0.1:8443/plaintext

https:// URLs are loaded over TLS (the certificate is not verified, as wrk and h2load do not).")]
struct BenchArgs {
    /// URLs to load, in round robin (all on one scheme, host and port)
    #[arg(value_name = "URL", required_unless_present = "request_list")]
    urls: Vec<String>,

    /// Concurrent connections
    #[arg(short = 'c', long, value_name = "N", default_value_t = 64)]
    connections: usize,

    /// Worker threads, one event loop each [default: the CPUs available]
    #[arg(short = 't', long, value_name = "N")]
    threads: Option<usize>,

    /// How long to run (per sweep level): 10s, 500ms, 2m [default: 10s]
    #[arg(short = 'd', long, value_name = "TIME", value_parser = parse_duration)]
    duration: Option<Duration>,

    /// Stop after exactly N requests (per sweep level) instead of after a duration
    #[arg(
        short = 'n',
        long = "requests",
        value_name = "N",
        conflicts_with = "duration"
    )]
    requests: Option<u64>,

    /// Requests written back to back on each connection before reading the responses
    #[arg(long, value_name = "DEPTH", default_value_t = 1)]
    pipeline: usize,

    /// Constant rate in requests/s over all connections (10000, 10k); latency is measured from
    /// each request's scheduled send time
    #[arg(short = 'R', long, value_name = "REQ/S", value_parser = parse_rate)]
    rate: Option<f64>,

    /// Run one level per value: rate=1000,2000,4000 or conns=1,8,64
    #[arg(long, value_name = "SPEC", value_parser = parse_sweep)]
    sweep: Option<Sweep>,

    /// Open a new connection for every request (sent with `Connection: close`), like ab
    #[arg(long)]
    no_keepalive: bool,

    /// HTTP/2, like h2load: with prior knowledge (h2c) on an http:// URL, chosen by ALPN on
    /// an https:// one
    #[arg(long)]
    h2: bool,

    /// HTTP/3 over QUIC (UDP, same port number) to an https:// URL: ALPN h3, TLS 1.3
    #[arg(long, conflicts_with = "h2")]
    h3: bool,

    /// With --h2 or --h3: the most requests in flight on each connection, as concurrent
    /// streams (fewer if the server's SETTINGS_MAX_CONCURRENT_STREAMS, or QUIC's MAX_STREAMS,
    /// says so); h2load's -m
    #[arg(long, value_name = "N", default_value_t = 1)]
    streams: usize,

    /// Request method
    #[arg(short = 'm', long, value_name = "METHOD", default_value = "GET")]
    method: String,

    /// Extra header, repeatable: -H 'Accept: text/plain'
    #[arg(short = 'H', long = "header", value_name = "'NAME: VALUE'", value_parser = parse_header)]
    headers: Vec<(String, String)>,

    /// Request body
    #[arg(long, value_name = "TEXT", conflicts_with = "body_file")]
    body: Option<String>,

    /// Request body from a file
    #[arg(long, value_name = "FILE")]
    body_file: Option<PathBuf>,

    /// Requests from a file, one per line: `URL` or `METHOD URL` (added to any URLs given)
    #[arg(long, value_name = "FILE")]
    request_list: Option<PathBuf>,

    /// A request without a response after this long counts as a timeout
    #[arg(long, value_name = "TIME", default_value = "8s", value_parser = parse_duration)]
    timeout: Duration,

    /// Load sent before measuring starts (per sweep level), not counted
    #[arg(long, value_name = "TIME", value_parser = parse_duration)]
    warmup: Option<Duration>,

    /// Write every result as JSON to FILE
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,

    /// Write an HdrHistogram interval log (V2 compressed, one interval per second) to FILE
    #[arg(long, value_name = "FILE")]
    hdr_log: Option<PathBuf>,

    /// Write an HTML page with charts (latency and throughput against load, latency spectrum)
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,

    /// No live progress line (it is shown only on a terminal anyway)
    #[arg(short = 'q', long)]
    quiet: bool,
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    match cli.command {
        Command::Bench(args) => bench(*args),
        Command::Serve(args) => serve::serve(args),
    }
}

/// Help and version go out as clap prints them; anything else is one line and exit code 2.
fn usage_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind::*;
    if matches!(
        e.kind(),
        DisplayHelp | DisplayVersion | DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = e.print();
        return if e.use_stderr() {
            ExitCode::from(2)
        } else {
            ExitCode::SUCCESS
        };
    }
    // clap's message is a paragraph, then usage: keep the paragraph, on one line.
    let text = e.to_string();
    let message: Vec<&str> = text
        .lines()
        .map(str::trim)
        .take_while(|line| !line.is_empty())
        .collect();
    let command = match std::env::args().nth(1).as_deref() {
        Some("serve") => "serve",
        _ => "bench",
    };
    eprintln!("{} (see `volt {command} --help`)", message.join(" "));
    ExitCode::from(2)
}

fn bench(args: BenchArgs) -> ExitCode {
    let config = match build_config(&args) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let report = match volt_bench::run(&config) {
        Ok(report) => report,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(if e.is_usage() { 2 } else { 1 });
        }
    };
    let mut stdout = std::io::stdout().lock();
    let _ = write!(stdout, "{report}");
    let _ = stdout.flush();
    match write_outputs(&args, &report) {
        // Stopped by Ctrl-C: the report is out, and the shell's convention tells scripts.
        Ok(()) if report.interrupted => ExitCode::from(130),
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn build_config(args: &BenchArgs) -> Result<Config, volt_bench::Error> {
    let mut b = Config::builder()
        .connections(args.connections)
        .pipeline(args.pipeline)
        .method(args.method.clone())
        .keepalive(!args.no_keepalive)
        .streams(args.streams)
        .timeout(args.timeout)
        .progress(!args.quiet)
        .stop_on_signal(true);
    for url in &args.urls {
        b = b.url(url.clone());
    }
    if let Some(path) = &args.request_list {
        b = b.requests(RequestLine::read_list(path)?);
    }
    if args.h2 {
        b = b.protocol(Protocol::Http2);
    }
    if args.h3 {
        b = b.protocol(Protocol::Http3);
    }
    if let Some(t) = args.threads {
        b = b.threads(t);
    }
    if let Some(d) = args.duration {
        b = b.duration(d);
    }
    if let Some(n) = args.requests {
        b = b.total_requests(n);
    }
    if let Some(r) = args.rate {
        b = b.rate(r);
    }
    if let Some(s) = &args.sweep {
        b = b.sweep(s.clone());
    }
    if let Some(w) = args.warmup {
        b = b.warmup(w);
    }
    for (name, value) in &args.headers {
        b = b.header(name.clone(), value.clone());
    }
    if let Some(body) = &args.body {
        b = b.body(body.clone().into_bytes());
    }
    if let Some(path) = &args.body_file {
        let body = std::fs::read(path).map_err(|e| volt_bench::Error::File {
            path: path.clone(),
            source: e,
        })?;
        b = b.body(body);
    }
    if let Some(path) = &args.hdr_log {
        b = b.hdr_log(path.clone());
    }
    b.build()
}

fn write_outputs(args: &BenchArgs, report: &volt_bench::Report) -> anyhow::Result<()> {
    if let Some(path) = &args.json {
        let mut text = serde_json::to_string_pretty(report)?;
        text.push('\n');
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &args.html {
        std::fs::write(path, report.to_html())
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// `10s`, `500ms`, `2m`, `1h`, `1.5s`, `250us`, or a bare number of seconds.
fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, unit) = s.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("`{s}` is not a duration (e.g. 10s, 500ms, 2m)"))?;
    let seconds = match unit.trim() {
        "" | "s" => value,
        "ms" => value / 1e3,
        "us" | "µs" => value / 1e6,
        "m" | "min" => value * 60.0,
        "h" => value * 3600.0,
        other => {
            return Err(format!(
                "unknown unit `{other}` in `{s}` (use s, ms, m or h)"
            ))
        }
    };
    Duration::try_from_secs_f64(seconds).map_err(|_| format!("`{s}` is out of range"))
}

/// `20000`, `20k`, `1.5m`.
fn parse_rate(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (digits, scale) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 1e3),
        Some('m' | 'M') => (&t[..t.len() - 1], 1e6),
        _ => (t, 1.0),
    };
    match digits.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v * scale),
        _ => Err(format!("`{s}` is not a positive rate (e.g. 5000 or 5k)")),
    }
}

fn parse_sweep(s: &str) -> Result<Sweep, String> {
    Sweep::parse(s).map_err(|e| e.to_string())
}

/// `Name: value`.
fn parse_header(s: &str) -> Result<(String, String), String> {
    match s.split_once(':') {
        Some((name, value)) if !name.trim().is_empty() => {
            Ok((name.trim().to_string(), value.trim().to_string()))
        }
        _ => Err(format!("`{s}` is not `Name: value`")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert!(parse_duration("ten").is_err());
        assert!(parse_duration("5 parsecs").is_err());
    }

    #[test]
    fn rates_and_headers() {
        assert_eq!(parse_rate("20k"), Ok(20_000.0));
        assert_eq!(parse_rate("150"), Ok(150.0));
        assert!(parse_rate("0").is_err());
        assert_eq!(
            parse_header("Accept: text/plain"),
            Ok(("Accept".into(), "text/plain".into()))
        );
        assert!(parse_header("no colon").is_err());
    }

    #[test]
    fn cli_shape_is_valid() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
