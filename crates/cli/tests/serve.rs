//! `volt serve` as a user runs it: it prints where it serves, serves a file, and stops
//! gracefully on Ctrl-C (SIGINT); CGI beside the files; precompressed copies and compression;
//! `Cache-Control`, by extension too; index names; types.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn serves_a_directory_and_stops_on_ctrl_c() {
    let dir = std::env::temp_dir().join(format!("volt-serve-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("hello.txt"), "hello from volt serve\n").unwrap();
    let (mut child, addr) = start(&[dir.as_os_str()]);
    let response = get(&addr, "/hello.txt");
    assert!(response.starts_with("HTTP/1.1 200 OK\r\n"), "{response}");
    assert!(response.contains("\r\nContent-Type: text/plain; charset=utf-8\r\n"));
    assert!(
        response.ends_with("\r\n\r\nhello from volt serve\n"),
        "{response}"
    );

    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "volt serve did not stop"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Starts `volt serve ARGS` on a free port; the child and the address it printed.
fn start(args: &[&std::ffi::OsStr]) -> (std::process::Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_volt"))
        .args(["serve", "--addr", "127.0.0.1:0", "--workers", "1"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("running volt serve");
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_else(|| panic!("no URL in {line:?}"))
        .to_owned();
    (child, addr)
}

fn get(addr: &str, path: &str) -> String {
    String::from_utf8(get_with(addr, path, "")).unwrap()
}

/// The raw response to a GET of `path` with the header lines `fields`.
fn get_with(addr: &str, path: &str, fields: &str) -> Vec<u8> {
    let mut conn = TcpStream::connect(addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: t\r\n{fields}Connection: close\r\n\r\n");
    conn.write_all(request.as_bytes()).unwrap();
    let mut response = Vec::new();
    conn.read_to_end(&mut response).unwrap();
    response
}

#[test]
fn serves_precompressed_copies_and_compresses_the_rest() {
    let dir = std::env::temp_dir().join(format!("volt-serve-gz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let css = "p { margin: 0 }\n".repeat(100);
    std::fs::write(dir.join("a.css"), &css).unwrap();
    std::fs::write(dir.join("a.css.gz"), "MADE-AHEAD").unwrap();
    std::fs::write(dir.join("b.txt"), &css).unwrap();
    let flags = ["--precompressed".as_ref(), "--compress".as_ref()];
    let (mut child, addr) = start(&[dir.as_os_str(), flags[0], flags[1]]);
    let gzip = "Accept-Encoding: gzip\r\n";
    let copy = String::from_utf8(get_with(&addr, "/a.css", gzip)).unwrap();
    assert!(copy.contains("\r\ncontent-encoding: gzip\r\n"), "{copy}");
    assert!(copy.ends_with("\r\n\r\nMADE-AHEAD"), "{copy}");
    // No copy: compressed on the fly (gzip's magic starts the body).
    let made = get_with(&addr, "/b.txt", gzip);
    let body = made.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let head = String::from_utf8_lossy(&made[..body]);
    assert!(head.contains("\r\ncontent-encoding: gzip\r\n"), "{head}");
    assert_eq!(made[body..body + 2], [0x1f, 0x8b]);
    assert!(made.len() - body < css.len() / 4);
    // A client that accepts nothing gets the file.
    assert!(get(&addr, "/a.css").ends_with(&css));
    child.kill().unwrap();
    child.wait().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn serves_cgi_scripts_beside_the_files() {
    use std::os::unix::fs::PermissionsExt;
    let root = std::env::temp_dir().join(format!("volt-serve-cgi-{}", std::process::id()));
    let (site, scripts) = (root.join("site"), root.join("cgi"));
    std::fs::create_dir_all(&site).unwrap();
    std::fs::create_dir_all(&scripts).unwrap();
    std::fs::write(site.join("index.html"), "<h1>home</h1>\n").unwrap();
    let script = scripts.join("hi.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\nhi %s' \"$QUERY_STRING\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (mut child, addr) = start(&[site.as_os_str(), "--cgi-bin".as_ref(), scripts.as_os_str()]);

    let page = get(&addr, "/");
    assert!(page.ends_with("\r\n\r\n<h1>home</h1>\n"), "{page}");
    let ran = get(&addr, "/cgi-bin/hi.sh?there");
    assert!(ran.starts_with("HTTP/1.1 200 OK\r\n"), "{ran}");
    assert!(ran.ends_with("\r\n\r\n8\r\nhi there\r\n0\r\n\r\n"), "{ran}"); // chunked
    assert!(get(&addr, "/cgi-bin/nope.sh").starts_with("HTTP/1.1 404"));

    child.kill().unwrap();
    child.wait().unwrap();
    let _ = std::fs::remove_dir_all(&root);
}

/// Runs `volt serve ARGS`, which must fail as a usage error (exit 2, nothing on stdout);
/// what it wrote to stderr.
fn usage_error(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_volt"))
        .arg("serve")
        .args(args)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_missing_directory_is_a_usage_error() {
    assert_eq!(
        usage_error(&["/nonexistent/volt/dir", "--addr", "127.0.0.1:0"]),
        "error: `/nonexistent/volt/dir` is not a directory\n"
    );
}

#[test]
fn sends_the_cache_control_asked_for_with_files() {
    let dir = std::env::temp_dir().join(format!("volt-serve-cc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("a.txt"), "a\n").unwrap();
    let flags = ["--cache-control".as_ref(), "max-age=60, immutable".as_ref()];
    let (mut child, addr) = start(&[dir.as_os_str(), flags[0], flags[1]]);
    let file = get(&addr, "/a.txt");
    assert!(
        file.contains("\r\ncache-control: max-age=60, immutable\r\n"),
        "{file}"
    );
    let missing = get(&addr, "/missing.txt");
    assert!(missing.starts_with("HTTP/1.1 404"), "{missing}");
    assert!(!missing.contains("cache-control"), "{missing}");
    child.kill().unwrap();
    child.wait().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_invalid_cache_control_is_a_usage_error() {
    let err = usage_error(&["--addr", "127.0.0.1:0", "--cache-control", "a\nb"]);
    assert!(err.contains("not a valid header value"), "{err}");
}

#[test]
fn index_names_types_and_cache_control_by_extension() {
    let dir = std::env::temp_dir().join(format!("volt-serve-opts-{}", std::process::id()));
    for sub in ["a", "b"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
    }
    std::fs::write(dir.join("a/default.htm"), "a: default.htm").unwrap();
    std::fs::write(dir.join("a/index.html"), "a: index.html").unwrap();
    std::fs::write(dir.join("b/index.html"), "b: index.html").unwrap();
    std::fs::write(dir.join("App.vue"), "<template/>").unwrap();
    std::fs::write(dir.join("a.css"), "p {}").unwrap();
    std::fs::write(dir.join("a.txt"), "a").unwrap();
    let flags = [
        "--index",
        "default.htm",
        "--index",
        "index.html",
        "--mime",
        "vue=text/x-vue",
        "--cache-control",
        "max-age=60",
        "--cache-control-for",
        "CSS=max-age=31536000, immutable",
        "--cache-control-for",
        "htm=no-cache",
    ];
    let mut args = vec![dir.as_os_str()];
    args.extend(flags.iter().map(std::ffi::OsStr::new));
    let (mut child, addr) = start(&args);
    for (path, field, body) in [
        ("/a/", "cache-control: no-cache", "a: default.htm"),
        ("/b/", "cache-control: max-age=60", "b: index.html"),
        ("/App.vue", "Content-Type: text/x-vue", "<template/>"),
        (
            "/a.css",
            "cache-control: max-age=31536000, immutable",
            "p {}",
        ),
        ("/a.txt", "cache-control: max-age=60", "a"),
    ] {
        let r = get(&addr, path);
        assert!(r.contains(&format!("\r\n{field}\r\n")), "{r}");
        assert!(r.ends_with(&format!("\r\n\r\n{body}")), "{r}");
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_index_names_types_and_extensions_are_usage_errors() {
    for (flag, value, message) in [
        ("--index", "a/index.html", "not a file name"),
        ("--index", "..", "not a file name"),
        ("--mime", "css", "expected EXT=VALUE"),
        ("--mime", ".css=text/css", "`.css` is not an extension"),
        ("--mime", "css=stylesheet", "TYPE is not a media type"),
        ("--mime", "css=text/css\r\nX: y", "TYPE is not a media type"),
        ("--cache-control-for", "=no-cache", "`` is not an extension"),
        (
            "--cache-control-for",
            "css=a\nb",
            "not a valid header value",
        ),
    ] {
        let err = usage_error(&["--addr", "127.0.0.1:0", flag, value]);
        assert!(err.contains(message), "{flag} {value}: {err}");
    }
}
