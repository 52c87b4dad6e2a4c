//! HTTP/2 and HTTPS as real clients speak them: curl (h2c prior knowledge, h2 over TLS with
//! ALPN) and nghttp (many concurrent streams, a large upload). A missing tool fails under
//! `CI=true` (.ci/run installs them) and says loudly that the test did not run elsewhere.

mod common;
mod h2common;

use std::path::PathBuf;
use std::process::Command;

use h2common::{cert_for, tool_available};
use volt_http::{get, post, CertKey, Config, Request, Router, TlsConfig};

fn app() -> Router {
    Router::new()
        .route(
            "/hello/{name}",
            get(|req: Request| async move {
                let name: String = req.param("name")?;
                Ok::<_, volt_http::Error>(format!("Hello, {name}! ({:?})\n", req.version()))
            }),
        )
        .route(
            "/count",
            post(|mut req: Request| async move {
                let mut n = 0usize;
                while let Some(chunk) = req.body_mut().chunk().await? {
                    n += chunk.len();
                }
                Ok::<_, volt_http::Error>(format!("{n}\n"))
            }),
        )
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().expect("running the tool");
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A scratch directory for this test's files.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("volt-h2-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn curl_http2_prior_knowledge() {
    if !tool_available("curl") {
        return;
    }
    let server = common::start(app());
    let url = format!("http://{}/hello/curl", server.addr());
    let out = run(Command::new("curl").args([
        "-sS",
        "--http2-prior-knowledge",
        "-w",
        "%{http_version}",
        &url,
    ]));
    assert_eq!(out, "Hello, curl! (HTTP/2.0)\n2");
}

#[test]
fn curl_http2_over_tls_and_a_large_upload() {
    if !tool_available("curl") {
        return;
    }
    let (cert, key, _) = cert_for(&["localhost"]);
    let tls = TlsConfig::new(CertKey::from_pem(cert.as_bytes(), key.as_bytes()).unwrap())
        .build()
        .unwrap();
    let config = Config {
        max_body_bytes: 64 * 1024 * 1024,
        ..Config::default()
    };
    let server = common::start_tls(1, config, tls, app());
    let port = server.addr().port();
    let url = format!("https://localhost:{port}/hello/tls");
    let out = run(Command::new("curl").args(["-sSk", "--http2", "-w", "%{http_version}", &url]));
    assert_eq!(out, "Hello, tls! (HTTP/2.0)\n2");

    let dir = scratch("upload");
    let file = dir.join("body");
    std::fs::write(&file, vec![b'x'; 11 * 1024 * 1024]).unwrap();
    let url = format!("https://localhost:{port}/count");
    let data = format!("@{}", file.display());
    let out = run(Command::new("curl").args(["-sSk", "--http2", "--data-binary", &data, &url]));
    assert_eq!(out, format!("{}\n", 11 * 1024 * 1024));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn nghttp_many_concurrent_streams() {
    if !tool_available("nghttp") {
        return;
    }
    let server = common::start(app());
    let url = format!("http://{}/hello/ng", server.addr());
    // 120 copies of the request at once on one connection (`-m`), statistics printed (`-s`).
    let out = run(Command::new("nghttp").args(["-n", "-s", "-m", "120", &url]));
    let completed = out
        .lines()
        .filter(|l| l.trim_end().ends_with("/hello/ng"))
        .count();
    assert_eq!(completed, 120, "{out}");
}

#[test]
fn nghttp_large_upload_h2c() {
    if !tool_available("nghttp") {
        return;
    }
    let config = Config {
        max_body_bytes: 64 * 1024 * 1024,
        ..Config::default()
    };
    let server = common::start_with(1, config, app());
    let dir = scratch("nghttp");
    let file = dir.join("body");
    std::fs::write(&file, vec![b'y'; 10 * 1024 * 1024 + 7]).unwrap();
    let url = format!("http://{}/count", server.addr());
    let data = file.display().to_string();
    let out = run(Command::new("nghttp").args(["-d", &data, &url]));
    assert_eq!(out, format!("{}\n", 10 * 1024 * 1024 + 7));
    let _ = std::fs::remove_dir_all(dir);
}
