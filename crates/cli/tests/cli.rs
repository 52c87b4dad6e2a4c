//! `volt bench` as a user runs it: exit codes, one-line usage errors, output files.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn volt(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_volt"))
        .args(args)
        .output()
        .expect("running volt")
}

/// Asserts a usage error: exit code 2 and exactly one line on stderr mentioning `needle`.
fn assert_usage_error(args: &[&str], needle: &str) {
    let out = volt(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
    assert!(stderr.contains(needle), "{args:?}: {stderr}");
    assert!(out.stdout.is_empty());
}

#[test]
fn conflicting_flags_are_one_line_errors() {
    let url = "http://127.0.0.1:9/";
    assert_usage_error(
        &["bench", "-d", "1s", "-n", "5", url],
        "cannot be used with",
    );
    assert_usage_error(
        &["bench", "--rate", "100", "--pipeline", "16", url],
        "--rate conflicts with --pipeline",
    );
    assert_usage_error(
        &["bench", "--no-keepalive", "--pipeline", "4", url],
        "--no-keepalive conflicts with --pipeline",
    );
    assert_usage_error(
        &["bench", "--sweep", "rate=1,2", "--rate", "5", url],
        "--rate conflicts with --sweep",
    );
    assert_usage_error(
        &["bench", "--body", "x", "--body-file", "f", url],
        "cannot be used with",
    );
    assert_usage_error(&["bench", "--sweep", "speed=1", url], "bad --sweep");
    assert_usage_error(&["bench", "-d", "ten", url], "not a duration");
    assert_usage_error(&["bench", "-H", "nocolon", url], "Name: value");
    assert_usage_error(&["bench"], "URL");
}

#[test]
fn h2_flags_that_mean_nothing_together_are_one_line_errors() {
    let url = "http://127.0.0.1:9/";
    assert_usage_error(
        &["bench", "--h2", "--pipeline", "4", url],
        "--h2 conflicts with --pipeline",
    );
    assert_usage_error(
        &["bench", "--h2", "--no-keepalive", url],
        "--h2 conflicts with --no-keepalive",
    );
    assert_usage_error(&["bench", "--streams", "8", url], "--streams needs --h2");
    assert_usage_error(
        &["bench", "--h2", "--streams", "0", url],
        "--streams must be at least 1",
    );
    assert_usage_error(
        &["bench", "--h2", "--streams", "1000000", url],
        "--streams must be at most",
    );
}

#[test]
fn h3_flags_that_mean_nothing_together_are_one_line_errors() {
    let https = "https://127.0.0.1:9/";
    assert_usage_error(
        &["bench", "--h3", "http://127.0.0.1:9/"],
        "--h3 needs an https:// URL",
    );
    assert_usage_error(&["bench", "--h3", "--h2", https], "cannot be used with");
    assert_usage_error(
        &["bench", "--h3", "--pipeline", "4", https],
        "--h3 conflicts with --pipeline",
    );
    assert_usage_error(
        &["bench", "--h3", "--no-keepalive", https],
        "--h3 conflicts with --no-keepalive",
    );
}

/// Values that parse but that no run can use: one line, not a panic (`-d`, `--timeout` and
/// `--warmup` past what `Instant` can add overflowed it; a huge `--pipeline` or `-c` aborted
/// on a failed allocation).
#[test]
fn out_of_range_values_are_one_line_errors() {
    let url = "http://127.0.0.1:9/";
    let huge = "10000000000000000000s";
    assert_usage_error(&["bench", "-d", huge, url], "--duration must be at most");
    assert_usage_error(
        &["bench", "-d", "1s", "--timeout", huge, url],
        "--timeout must be at most",
    );
    assert_usage_error(
        &["bench", "-d", "1s", "--warmup", huge, url],
        "--warmup must be at most",
    );
    assert_usage_error(
        &["bench", "--pipeline", "1000000000000", url],
        "--pipeline must be at most",
    );
    assert_usage_error(
        &["bench", "-c", "1000000000000", url],
        "--connections must be at most",
    );
}

#[test]
fn bad_urls_and_unreachable_hosts_are_one_line_errors() {
    assert_usage_error(&["bench", "127.0.0.1:8080/"], "must start with http://");
    assert_usage_error(&["bench", "ftp://127.0.0.1/"], "unsupported scheme `ftp`");
    assert_usage_error(&["bench", "http://no-such-host.invalid/"], "cannot resolve");
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    assert_usage_error(
        &["bench", "-d", "1s", &format!("http://127.0.0.1:{port}/")],
        "cannot connect",
    );
    assert_usage_error(
        &[
            "bench",
            "--h2",
            "-d",
            "1s",
            &format!("https://127.0.0.1:{port}/"),
        ],
        "cannot connect",
    );
}

#[test]
fn help_and_version_exit_zero() {
    let out = volt(&["bench", "--help"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("--pipeline"));
    let out = volt(&["--version"]);
    assert_eq!(out.status.code(), Some(0));
}

/// A keep-alive server answering every request with `Hello, World!`.
struct Hello {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
}

impl Hello {
    fn start() -> Hello {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.load(Ordering::Acquire) {
                    return;
                }
                let Ok(mut conn) = conn else { continue };
                std::thread::spawn(move || {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 4096];
                    while let Ok(n) = conn.read(&mut chunk) {
                        if n == 0 {
                            return;
                        }
                        buf.extend_from_slice(&chunk[..n]);
                        let mut out = Vec::new();
                        while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            buf.drain(..end + 4);
                            out.extend_from_slice(
                                b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\nHello, World!",
                            );
                        }
                        if conn.write_all(&out).is_err() {
                            return;
                        }
                    }
                });
            }
        });
        Hello { addr, stop }
    }
}

impl Drop for Hello {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        let _ = std::net::TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
    }
}

#[test]
fn a_run_prints_a_summary_and_writes_json_and_html() {
    let server = Hello::start();
    let dir = std::env::temp_dir();
    let json = dir.join(format!("volt-cli-test-{}.json", std::process::id()));
    let html = dir.join(format!("volt-cli-test-{}.html", std::process::id()));
    let url = format!("http://{}/plaintext", server.addr);
    let out = volt(&[
        "bench",
        "-c",
        "4",
        "-t",
        "1",
        "-n",
        "500",
        "--pipeline",
        "4",
        "-H",
        "Accept: text/plain",
        "--json",
        json.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
        &url,
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("Requests") && stdout.contains("200 ×500"),
        "{stdout}"
    );
    // Not a terminal: no progress line.
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(value["requests"], 500);
    assert_eq!(value["pipeline"], 4);
    assert_eq!(value["errors"]["total"], 0);
    assert!(value["latency_us"]["p99.9"].is_u64());
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<svg"));
    let _ = std::fs::remove_file(json);
    let _ = std::fs::remove_file(html);
}
