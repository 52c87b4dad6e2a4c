//! The CGI gateway (RFC 3875): `/bin/sh` scripts written to a fresh directory at test time,
//! run through a real server, their answers checked byte for byte; and the processes checked
//! in `/proc` afterwards (killed, reaped: no zombie left).

mod common;

use std::collections::HashMap;
use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use common::{start, Client, RawResponse, TestServer, XorShift};
use volt_http::{Cgi, Router};

/// A directory of scripts, removed when dropped.
struct Scripts {
    dir: PathBuf,
}

impl Scripts {
    fn new(test: &str) -> Scripts {
        let dir = std::env::temp_dir().join(format!("volt-cgi-{}-{test}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        Scripts { dir }
    }

    /// Writes `name` (under the directory) as a `/bin/sh` script running `body`, executable.
    fn add(&self, name: &str, body: &str) -> PathBuf {
        let path = self.dir.join(name);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    fn serve(&self, cgi: impl FnOnce(Cgi) -> Cgi) -> TestServer {
        let cgi = cgi(Cgi::new(&self.dir));
        start(Router::new().route_service("/cgi-bin/{*script}", cgi))
    }
}

impl Drop for Scripts {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// Sends `request` on a new connection and reads the response.
fn exchange(server: &TestServer, request: &[u8]) -> RawResponse {
    let mut c = server.connect();
    c.send(request);
    c.read_response()
}

fn get(server: &TestServer, target: &str) -> RawResponse {
    exchange(
        server,
        format!("GET {target} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes(),
    )
}

/// `KEY=value` lines into a map.
fn env_of(body: &[u8]) -> HashMap<String, String> {
    String::from_utf8_lossy(body)
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

const PRINT_ENV: &str = "printf 'Content-Type: text/plain\\n\\n'\nenv";

/// Waits (up to 20 s, a hang guard) until process `pid` is gone from `/proc`: killed, and
/// reaped by its parent (a zombie still has its entry).
fn wait_gone(pid: u32) -> bool {
    let start = Instant::now();
    while Path::new(&format!("/proc/{pid}")).exists() {
        if start.elapsed() > Duration::from_secs(20) {
            return false;
        }
        thread::sleep(Duration::from_millis(20));
    }
    true
}

/// A process id a script wrote to `file`, waiting for the file to be written.
fn pid_in(file: &Path) -> u32 {
    let start = Instant::now();
    loop {
        if let Some(pid) = fs::read_to_string(file)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            return pid;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no pid in {file:?}"
        );
        thread::sleep(Duration::from_millis(20));
    }
}

/// Children of this process in `/proc` that are zombies and ran one of `names`.
fn zombie_children(names: &[&str]) -> Vec<String> {
    let me = std::process::id().to_string();
    let mut found = Vec::new();
    for entry in fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid ...`; comm may hold spaces, so split after its `)`.
        let Some((comm, rest)) = stat.split_once('(').and_then(|(_, r)| r.rsplit_once(')')) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.first() == Some(&"Z")
            && fields.get(1) == Some(&me.as_str())
            && names.contains(&comm)
        {
            found.push(stat);
        }
    }
    found
}

#[test]
fn meta_variables_are_set_and_the_environment_is_clean() {
    let scripts = Scripts::new("env");
    scripts.add("env.sh", PRINT_ENV);
    let server = scripts.serve(|c| c.env("EXTRA", "yes"));
    let mut c = server.connect();
    let client_port = c.stream().local_addr().unwrap().port();
    c.send(
        b"POST /cgi-bin/env.sh/a%20b/c?x=1&y=%2F HTTP/1.1\r\nHost: example.com:8080\r\n\
          Content-Type: text/x-test\r\nContent-Length: 3\r\nAuthorization: Basic c2VjcmV0\r\n\
          Proxy-Authorization: Basic c2VjcmV0\r\nProxy: http://evil.example:3128\r\n\
          X-Custom: one\r\nX-Custom: two\r\nCookie: a=1\r\nCookie: b=2\r\nX_Sneaky: 1\r\n\
          Connection: keep-alive, X-Hop\r\nX-Hop: h\r\n\r\nabc",
    );
    let r = c.read_response();
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/plain"));
    let env = env_of(&r.body);
    let dir = fs::canonicalize(&scripts.dir).unwrap();
    let expected = [
        ("GATEWAY_INTERFACE", "CGI/1.1".to_owned()),
        ("SERVER_PROTOCOL", "HTTP/1.1".into()),
        (
            "SERVER_SOFTWARE",
            format!("volt/{}", env!("CARGO_PKG_VERSION")),
        ),
        ("SERVER_NAME", "example.com".into()),
        ("SERVER_PORT", server.addr().port().to_string()),
        ("REQUEST_METHOD", "POST".into()),
        ("QUERY_STRING", "x=1&y=%2F".into()),
        ("SCRIPT_NAME", "/cgi-bin/env.sh".into()),
        ("PATH_INFO", "/a b/c".into()),
        (
            "PATH_TRANSLATED",
            format!("{}/a b/c", scripts.dir.display()),
        ),
        ("REMOTE_ADDR", "127.0.0.1".into()),
        ("REMOTE_HOST", "127.0.0.1".into()),
        ("REMOTE_PORT", client_port.to_string()),
        ("CONTENT_LENGTH", "3".into()),
        ("CONTENT_TYPE", "text/x-test".into()),
        ("AUTH_TYPE", "Basic".into()),
        ("HTTP_HOST", "example.com:8080".into()),
        ("HTTP_X_CUSTOM", "one, two".into()),
        ("HTTP_COOKIE", "a=1; b=2".into()),
        ("PATH", "/usr/local/bin:/usr/bin:/bin".into()),
        ("EXTRA", "yes".into()),
        ("PWD", dir.display().to_string()),
    ];
    for (name, value) in expected {
        assert_eq!(env.get(name), Some(&value), "{name} in {env:#?}");
    }
    // Credentials, the framing fields, connection-specific ones, an `_` name, and `Proxy`
    // (httpoxy) are not passed; nor is anything of the server's own environment.
    for name in [
        "HTTP_AUTHORIZATION",
        "HTTP_PROXY_AUTHORIZATION",
        "HTTP_PROXY",
        "HTTP_CONTENT_LENGTH",
        "HTTP_CONTENT_TYPE",
        "HTTP_CONNECTION",
        "HTTP_X_HOP",
        "HTTP_X_SNEAKY",
        "REMOTE_USER",
        "CARGO_MANIFEST_DIR",
        "HOME",
    ] {
        assert!(!env.contains_key(name), "{name} in {env:#?}");
    }
    let unexpected: Vec<&String> = env
        .keys()
        .filter(|k| !k.starts_with("HTTP_"))
        .filter(|k| !["SHLVL", "OLDPWD", "_"].contains(&k.as_str()))
        .filter(|k| !expected_names().contains(&k.as_str()))
        .collect();
    assert!(unexpected.is_empty(), "{unexpected:?}");
}

fn expected_names() -> [&'static str; 22] {
    [
        "GATEWAY_INTERFACE",
        "SERVER_PROTOCOL",
        "SERVER_SOFTWARE",
        "SERVER_NAME",
        "SERVER_PORT",
        "REQUEST_METHOD",
        "QUERY_STRING",
        "SCRIPT_NAME",
        "PATH_INFO",
        "PATH_TRANSLATED",
        "REMOTE_ADDR",
        "REMOTE_HOST",
        "REMOTE_PORT",
        "CONTENT_LENGTH",
        "CONTENT_TYPE",
        "AUTH_TYPE",
        "PATH",
        "EXTRA",
        "PWD",
        "HTTP_HOST",
        "HTTP_X_CUSTOM",
        "HTTP_COOKIE",
    ]
}

#[test]
fn a_bodiless_get_has_no_content_length_and_an_empty_query() {
    let scripts = Scripts::new("get");
    scripts.add("env.sh", PRINT_ENV);
    let server = scripts.serve(|c| c);
    let r = exchange(&server, b"GET /cgi-bin/env.sh HTTP/1.0\r\n\r\n");
    assert_eq!(r.status, 200);
    let env = env_of(&r.body);
    assert_eq!(env.get("QUERY_STRING").map(String::as_str), Some(""));
    assert_eq!(
        env.get("SERVER_PROTOCOL").map(String::as_str),
        Some("HTTP/1.0")
    );
    assert_eq!(
        env.get("SERVER_NAME").map(String::as_str),
        Some("127.0.0.1")
    );
    for name in [
        "CONTENT_LENGTH",
        "CONTENT_TYPE",
        "PATH_INFO",
        "PATH_TRANSLATED",
        "AUTH_TYPE",
    ] {
        assert!(!env.contains_key(name), "{name} in {env:#?}");
    }
}

#[test]
fn path_info_is_what_follows_the_shortest_prefix_naming_a_script() {
    let scripts = Scripts::new("split");
    scripts.add("sub/app.sh", PRINT_ENV);
    // A directory named like a script further down: the first executable file wins.
    scripts.add("sub/app.sh.d/inner.sh", PRINT_ENV);
    let server = scripts.serve(|c| c.document_root("/srv/docs"));
    let r = get(&server, "/cgi-bin/sub/app.sh/x/y.txt/");
    assert_eq!(r.status, 200, "{}", r.body_text());
    let env = env_of(&r.body);
    assert_eq!(env["SCRIPT_NAME"], "/cgi-bin/sub/app.sh");
    assert_eq!(env["PATH_INFO"], "/x/y.txt/");
    assert_eq!(env["PATH_TRANSLATED"], "/srv/docs/x/y.txt/");
    let r = get(&server, "/cgi-bin/sub/app.sh.d/inner.sh");
    assert_eq!(
        env_of(&r.body)["SCRIPT_NAME"],
        "/cgi-bin/sub/app.sh.d/inner.sh"
    );
    // Served alone, the whole path is under the directory.
    let alone = start(Cgi::new(&scripts.dir));
    let r = get(&alone, "/sub/app.sh/more");
    assert_eq!(r.status, 200);
    let env = env_of(&r.body);
    assert_eq!(
        (env["SCRIPT_NAME"].as_str(), env["PATH_INFO"].as_str()),
        ("/sub/app.sh", "/more")
    );
}

#[test]
fn paths_out_of_the_directory_or_to_no_script_are_refused() {
    let scripts = Scripts::new("safety");
    scripts.add("ok.sh", "printf 'Content-Type: text/plain\\n\\nok'");
    let plain = scripts.dir.join("plain.sh");
    fs::write(&plain, "#!/bin/sh\necho no\n").unwrap();
    fs::create_dir_all(scripts.dir.join("dir")).unwrap();
    let outside = Scripts::new("safety-outside");
    let target = outside.add("evil.sh", "printf 'Content-Type: text/plain\\n\\nevil'");
    symlink(&target, scripts.dir.join("link-out.sh")).unwrap();
    symlink(&outside.dir, scripts.dir.join("dir-out")).unwrap();
    symlink(scripts.dir.join("ok.sh"), scripts.dir.join("link-in.sh")).unwrap();
    let server = scripts.serve(|c| c);
    for (target, status) in [
        ("/cgi-bin/ok.sh", 200),
        ("/cgi-bin/link-in.sh", 200),
        ("/cgi-bin/missing.sh", 404),
        ("/cgi-bin/dir/missing.sh", 404),
        ("/cgi-bin/plain.sh", 403),
        ("/cgi-bin/dir", 403),
        ("/cgi-bin/dir/", 403),
        ("/cgi-bin/", 403),
        ("/cgi-bin/link-out.sh", 403),
        ("/cgi-bin/dir-out/evil.sh", 403),
        ("/cgi-bin/dir/../ok.sh", 403),
        ("/cgi-bin/dir/%2e%2e/ok.sh", 403),
        ("/cgi-bin/..%2Fsafety-outside/evil.sh", 403),
        ("/cgi-bin/dir%2F..%2Fok.sh", 403),
        ("/cgi-bin/ok.sh%00", 403),
        ("/cgi-bin//ok.sh", 403),
        ("/cgi-bin/ok.sh/../../x", 403),
        ("/cgi-bin/%FF", 400),
    ] {
        let r = get(&server, target);
        assert_eq!(r.status, status, "{target}: {}", r.body_text());
        if status == 200 {
            assert_eq!(r.body, b"ok");
        } else {
            assert!(!r.body_text().contains("evil"), "{target}");
        }
    }
}

#[test]
fn large_bodies_stream_both_ways_byte_for_byte() {
    let scripts = Scripts::new("large");
    let pid_file = scripts.dir.join("pid");
    let cat = "printf 'Content-Type: application/octet-stream\\n\\n'\nexec cat";
    scripts.add(
        "cat.sh",
        &format!("echo $$ > {}\n{cat}", pid_file.display()),
    );
    let server = scripts.serve(|c| c);
    let mut rng = XorShift(48);
    let body: Vec<u8> = (0..3 * 1024 * 1024 + 17)
        .map(|_| rng.next() as u8)
        .collect();
    let mut c = server.connect();
    let head = format!(
        "POST /cgi-bin/cat.sh HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    c.send(head.as_bytes());
    // Written from another thread while this one reads: the script echoes as it reads, and
    // neither side may wait for the other to finish.
    let mut writer = c.stream().try_clone().unwrap();
    let sent = body.clone();
    let writing = thread::spawn(move || std::io::Write::write_all(&mut writer, &sent));
    let r = c.read_response();
    writing.join().unwrap().unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.header("transfer-encoding"), Some("chunked"));
    assert_eq!(r.header("content-type"), Some("application/octet-stream"));
    assert_eq!(r.body.len(), body.len());
    assert!(r.body == body, "the echoed body differs");
    // A script that ended on its own is reaped too.
    assert!(wait_gone(pid_in(&pid_file)), "the script was not reaped");
}

#[test]
fn a_chunked_request_is_read_whole_and_given_a_content_length() {
    let scripts = Scripts::new("chunked");
    scripts.add(
        "len.sh",
        "printf 'Content-Type: text/plain\\nContent-Length: 20\\n\\n'\nprintf 'len=%s;' \"$CONTENT_LENGTH\"\nhead -c 13",
    );
    let server = scripts.serve(|c| c);
    let r = exchange(
        &server,
        b"POST /cgi-bin/len.sh HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n\
          5\r\nhello\r\n8\r\n, world!\r\n0\r\n\r\n",
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-length"), Some("20"));
    assert_eq!(r.header("transfer-encoding"), None);
    assert_eq!(r.body_text(), "len=13;hello, world!");
}

#[test]
fn status_location_and_header_fields() {
    let scripts = Scripts::new("status");
    scripts.add(
        "created.sh",
        "printf 'Status: 201 Made Here\\r\\nContent-Type: text/plain\\r\\nX-Thing: a b\\r\\nConnection: close\\r\\nTransfer-Encoding: gzip\\r\\n\\r\\nmade'",
    );
    scripts.add(
        "away.sh",
        "printf 'Location: https://example.com/new?x=1\\n\\n'",
    );
    scripts.add(
        "moved.sh",
        "printf 'Status: 301 Moved\\nLocation: /there\\nContent-Type: text/html\\n\\n<a>there</a>'",
    );
    scripts.add("local.sh", "printf 'Location: /cgi-bin/other.sh\\n\\n'");
    scripts.add("nocontent.sh", "printf 'Status: 204\\n\\n'");
    let server = scripts.serve(|c| c);

    let mut c = server.connect();
    c.send(b"GET /cgi-bin/created.sh HTTP/1.1\r\nHost: t\r\n\r\n");
    let r = c.read_response();
    assert_eq!(r.status, 201);
    assert!(r.head.starts_with("HTTP/1.1 201 Created\r\n"), "{}", r.head);
    assert_eq!(r.header("x-thing"), Some("a b"));
    assert_eq!(r.header("connection"), None);
    assert_eq!(r.header("transfer-encoding"), Some("chunked"));
    assert_eq!(r.body, b"made");
    // The script's `Connection: close` is not the server's: the connection is kept.
    c.send(b"GET /cgi-bin/nocontent.sh HTTP/1.1\r\nHost: t\r\n\r\n");
    let r = c.read_response();
    assert_eq!(r.status, 204);
    assert!(r.body.is_empty());

    let r = get(&server, "/cgi-bin/away.sh");
    assert_eq!(r.status, 302);
    assert_eq!(r.header("location"), Some("https://example.com/new?x=1"));
    let r = get(&server, "/cgi-bin/moved.sh");
    assert_eq!(r.status, 301);
    assert_eq!(r.header("location"), Some("/there"));
    assert_eq!(r.header("content-type"), Some("text/html"));
    assert_eq!(r.body, b"<a>there</a>");
    // A local redirect (§6.2.2) is not followed: 500.
    let r = get(&server, "/cgi-bin/local.sh");
    assert_eq!(r.status, 500);
    assert_eq!(r.header("location"), None);
}

#[test]
fn malformed_output_is_a_bad_gateway() {
    let scripts = Scripts::new("malformed");
    scripts.add("nothing.sh", "exit 0");
    scripts.add("fields-only.sh", "printf 'X-A: 1\\n\\nbody'");
    scripts.add("no-colon.sh", "printf 'Content-Type text/plain\\n\\nbody'");
    scripts.add(
        "bad-status.sh",
        "printf 'Status: 2000 Big\\nContent-Type: text/plain\\n\\n'",
    );
    scripts.add(
        "bad-byte.sh",
        "printf 'Content-Type: text/pl\\001ain\\n\\n'",
    );
    scripts.add("unended.sh", "printf 'Content-Type: text/plain\\n'");
    scripts.add(
        "huge.sh",
        "while :; do printf 'X-Padding: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\\n'; done",
    );
    scripts.add("crash.sh", "echo oops >&2\nkill -9 $$");
    let server = scripts.serve(|c| c);
    for name in [
        "nothing",
        "fields-only",
        "no-colon",
        "bad-status",
        "bad-byte",
        "unended",
        "huge",
        "crash",
    ] {
        let r = get(&server, &format!("/cgi-bin/{name}.sh"));
        assert_eq!(r.status, 502, "{name}: {}", r.body_text());
        assert!(!r.body_text().contains("oops"), "stderr reached the client");
    }
    // The script that wrote headers forever was killed and reaped.
    let start = Instant::now();
    while !zombie_children(&["huge.sh"]).is_empty() {
        assert!(start.elapsed() < Duration::from_secs(20), "zombies left");
        thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_script_past_its_timeout_is_killed_and_answered_504() {
    let scripts = Scripts::new("timeout");
    let pid_file = scripts.dir.join("pid");
    scripts.add(
        "slow.sh",
        &format!("echo $$ > {}\nexec sleep 60", pid_file.display()),
    );
    let server = scripts.serve(|c| c.timeout(Duration::from_secs(3)));
    let r = get(&server, "/cgi-bin/slow.sh");
    assert_eq!(r.status, 504);
    assert!(
        wait_gone(pid_in(&pid_file)),
        "the script outlived its timeout"
    );
}

#[test]
fn a_script_silent_mid_body_is_cut_off() {
    let scripts = Scripts::new("timeout-body");
    scripts.add(
        "stall.sh",
        "printf 'Content-Type: text/plain\\n\\nstart'\nexec sleep 60",
    );
    let server = scripts.serve(|c| c.timeout(Duration::from_secs(3)));
    let mut c = server.connect();
    c.send(b"GET /cgi-bin/stall.sh HTTP/1.1\r\nHost: t\r\n\r\n");
    let mut all = Vec::new();
    let _ = std::io::Read::read_to_end(&mut c.stream(), &mut all);
    let text = String::from_utf8_lossy(&all);
    assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
    assert!(
        text.ends_with("5\r\nstart\r\n"),
        "the body must end cut short: {text}"
    );
}

#[test]
fn a_client_that_goes_away_kills_the_script() {
    let scripts = Scripts::new("abort");
    let (pid_file, child_file) = (scripts.dir.join("pid"), scripts.dir.join("child"));
    scripts.add(
        "ticker.sh",
        &format!(
            "echo $$ > {}\nsleep 60 &\necho $! > {}\nprintf 'Content-Type: text/plain\\n\\n'\nwhile :; do echo tick; sleep 0.05; done",
            pid_file.display(),
            child_file.display()
        ),
    );
    let server = scripts.serve(|c| c);
    let mut c = server.connect();
    c.send(b"GET /cgi-bin/ticker.sh HTTP/1.1\r\nHost: t\r\n\r\n");
    let mut first = [0u8; 64];
    let n = std::io::Read::read(&mut c.stream(), &mut first).unwrap();
    assert!(first[..n].starts_with(b"HTTP/1.1 200 OK\r\n"));
    let (pid, child) = (pid_in(&pid_file), pid_in(&child_file));
    drop(c);
    assert!(wait_gone(pid), "the script outlived its client");
    // Its own child was in its process group, and was killed with it (reaped by whoever
    // adopted it, or a zombie that is not ours).
    let start = Instant::now();
    loop {
        let state = fs::read_to_string(format!("/proc/{child}/stat")).unwrap_or_default();
        if state.is_empty() || state.contains(") Z ") {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the script's child survived: {state}"
        );
        thread::sleep(Duration::from_millis(20));
    }
    assert!(zombie_children(&["ticker.sh"]).is_empty());
}

/// A client that leaves before the script has written its header block: before, over
/// HTTP/1 nothing noticed until the CGI timeout (the connection did not watch the socket while
/// a handler worked); now the script is killed as soon as the client's end of stream arrives.
#[test]
fn a_client_that_leaves_before_the_header_block_kills_the_script() {
    let scripts = Scripts::new("abort-early");
    let pid_file = scripts.dir.join("pid");
    scripts.add(
        "silent.sh",
        &format!("echo $$ > {}\nexec sleep 60", pid_file.display()),
    );
    // A timeout far past the hang guard: only the client's leaving can end the script in time.
    let server = scripts.serve(|c| c.timeout(Duration::from_secs(600)));
    let mut c = server.connect();
    c.send(b"GET /cgi-bin/silent.sh HTTP/1.1\r\nHost: t\r\n\r\n");
    let pid = pid_in(&pid_file);
    drop(c);
    assert!(wait_gone(pid), "the script outlived its client");
    assert!(zombie_children(&["silent.sh"]).is_empty());
    // The worker goes on.
    scripts.add("hi.sh", "printf 'Content-Type: text/plain\\n\\nhi'");
    assert_eq!(get(&server, "/cgi-bin/hi.sh").body_text(), "hi");
}

#[test]
fn scripts_beyond_the_limit_are_answered_503() {
    let scripts = Scripts::new("limit");
    scripts.add(
        "echo.sh",
        "printf 'Content-Type: text/plain\\n\\n'\nexec cat",
    );
    let server = scripts.serve(|c| c.max_processes(1));
    // The first script runs until its body is whole: half of it is held back.
    let mut first = server.connect();
    first.send(b"POST /cgi-bin/echo.sh HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nhello");
    let mut head = [0u8; 17];
    std::io::Read::read_exact(&mut first.stream(), &mut head).unwrap();
    assert_eq!(&head, b"HTTP/1.1 200 OK\r\n");
    let r = get(&server, "/cgi-bin/echo.sh");
    assert_eq!(r.status, 503);
    first.send(b"world");
    let rest = read_rest_of_response(&mut first);
    let (_, body) = rest.split_once("\r\n\r\n").expect("the head's end");
    assert_eq!(dechunk(body), "helloworld", "{rest}");
    // The slot was given back.
    assert_eq!(get(&server, "/cgi-bin/echo.sh").status, 200);
}

/// The rest of a chunked response whose status line was read already.
fn read_rest_of_response(c: &mut Client) -> String {
    let mut all = Vec::new();
    let mut buf = [0u8; 4096];
    while !all.ends_with(b"0\r\n\r\n") {
        let n = std::io::Read::read(&mut c.stream(), &mut buf).unwrap();
        assert!(
            n > 0,
            "closed before the end: {}",
            String::from_utf8_lossy(&all)
        );
        all.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&all).into_owned()
}

/// A chunked body's data (no extensions, no trailers).
fn dechunk(mut body: &str) -> String {
    let mut data = String::new();
    loop {
        let (size, rest) = body.split_once("\r\n").expect("a chunk size line");
        let size = usize::from_str_radix(size, 16).expect("a hex chunk size");
        if size == 0 {
            assert_eq!(rest, "\r\n");
            return data;
        }
        data.push_str(&rest[..size]);
        body = rest[size..]
            .strip_prefix("\r\n")
            .expect("CRLF after a chunk");
    }
}

#[test]
fn over_http2_a_body_of_unknown_length_is_read_whole_and_a_reset_kills_the_script() {
    let scripts = Scripts::new("h2");
    scripts.add(
        "echo.sh",
        "printf 'Content-Type: text/plain\\n\\n%s %s;' \"$SERVER_PROTOCOL\" \"$CONTENT_LENGTH\"\nexec cat",
    );
    let pid_file = scripts.dir.join("pid");
    scripts.add(
        "silent.sh",
        &format!("echo $$ > {}\nexec sleep 60", pid_file.display()),
    );
    let server = scripts.serve(|c| c);
    let addr = server.addr();
    volt_rt::block_on(async move {
        let client = volt_http::Client::builder().http2_prior_knowledge().build();
        let (mut sender, body) = volt_http::Body::channel();
        volt_rt::spawn(async move {
            for part in ["one ", "two ", "three"] {
                sender.send(part).await.unwrap();
            }
        });
        let url = format!("http://{addr}/cgi-bin/echo.sh");
        let response = client.post(&url).body(body).send().await.unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(response.text().await.unwrap(), "HTTP/2.0 13;one two three");

        // The client gives up before the script wrote anything: the stream is reset, the
        // handler dropped, and the script killed.
        let url = format!("http://{addr}/cgi-bin/silent.sh");
        let send = client.get(&url).send();
        let gave_up = volt_rt::time::timeout(Duration::from_secs(1), send).await;
        assert!(gave_up.is_err(), "the silent script answered");
    });
    assert!(
        wait_gone(pid_in(&pid_file)),
        "the script outlived its request"
    );
}

#[test]
fn a_slow_upload_does_not_count_against_the_script() {
    let scripts = Scripts::new("slow-upload");
    // Reads all of stdin before it writes anything.
    scripts.add(
        "whole.sh",
        "body=$(cat)\nprintf 'Content-Type: text/plain\\n\\n%s' \"$body\"",
    );
    let server = scripts.serve(|c| c.timeout(Duration::from_secs(4)));
    let mut c = server.connect();
    c.send(b"POST /cgi-bin/whole.sh HTTP/1.1\r\nHost: t\r\nContent-Length: 12\r\n\r\n");
    // 6 s of upload, a piece every second: longer than the timeout, never silent as long.
    for piece in ["ab", "cd", "ef", "gh", "ij", "kl"] {
        thread::sleep(Duration::from_secs(1));
        c.send(piece.as_bytes());
    }
    let r = c.read_response();
    assert_eq!(r.status, 200, "{}", r.body_text());
    assert_eq!(r.body, b"abcdefghijkl");
}

#[test]
fn the_server_body_limit_applies_to_scripts() {
    let scripts = Scripts::new("limit-body");
    scripts.add(
        "whole.sh",
        "body=$(cat)\nprintf 'Content-Type: text/plain\\n\\n%s' \"$body\"",
    );
    let config = volt_http::Config {
        max_body_bytes: 10,
        ..Default::default()
    };
    let cgi = Cgi::new(&scripts.dir);
    let server = common::start_with(
        1,
        config,
        Router::new().route_service("/cgi-bin/{*script}", cgi),
    );
    let r = exchange(
        &server,
        b"POST /cgi-bin/whole.sh HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\n0123456789",
    );
    assert_eq!((r.status, r.body.as_slice()), (200, &b"0123456789"[..]));
    let r = exchange(
        &server,
        b"POST /cgi-bin/whole.sh HTTP/1.1\r\nHost: t\r\nContent-Length: 11\r\n\r\n0123456789a",
    );
    assert_eq!(r.status, 413);
    let r = exchange(
        &server,
        b"POST /cgi-bin/whole.sh HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n\
          6\r\n012345\r\n6\r\n6789ab\r\n0\r\n\r\n",
    );
    assert_eq!(r.status, 413);
}

#[test]
fn a_script_that_cannot_start_answers_500() {
    let scripts = Scripts::new("no-start");
    let path = scripts.dir.join("orphan.sh");
    fs::write(&path, "#!/nonexistent/interpreter\n").unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    let server = scripts.serve(|c| c);
    let r = get(&server, "/cgi-bin/orphan.sh");
    assert_eq!(r.status, 500);
    assert_eq!(r.body_text(), "the CGI script could not start\n");
}

/// Every log record of this test binary, as `level message`.
static LOGGED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

struct Capture;

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }
    fn log(&self, record: &log::Record<'_>) {
        let line = format!("{} {}", record.level(), record.args());
        LOGGED.lock().unwrap().push(line);
    }
    fn flush(&self) {}
}

#[test]
fn stderr_goes_to_the_log_not_to_the_client() {
    let _ = log::set_logger(&Capture);
    log::set_max_level(log::LevelFilter::Warn);
    let scripts = Scripts::new("stderr");
    scripts.add(
        "noisy.sh",
        "echo 'first complaint' >&2\nprintf 'Content-Type: text/plain\\n\\nok'\necho 'second complaint' >&2",
    );
    let server = scripts.serve(|c| c);
    let r = get(&server, "/cgi-bin/noisy.sh");
    assert_eq!((r.status, r.body.as_slice()), (200, &b"ok"[..]));
    let start = Instant::now();
    let expected = [
        "WARN CGI script noisy.sh: first complaint",
        "WARN CGI script noisy.sh: second complaint",
    ];
    while !expected
        .iter()
        .all(|line| LOGGED.lock().unwrap().iter().any(|l| l == line))
    {
        let logged = LOGGED.lock().unwrap().clone();
        assert!(start.elapsed() < Duration::from_secs(20), "{logged:#?}");
        thread::sleep(Duration::from_millis(20));
    }
}
