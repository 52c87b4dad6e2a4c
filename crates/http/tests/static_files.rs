//! `ServeDir` over a real socket, on a directory made at test time: exact heads and bodies for
//! files, HEAD, 405, validators, conditional requests (RFC 9110 §13), byte ranges (§14),
//! directory redirects, index pages and listings, dotfiles, traversal attempts sent as raw
//! bytes, links out of the root, a file larger than one read, and a client that stops
//! reading.

mod common;
mod h2common;

use std::fs;
use std::os::unix::fs::{symlink, MetadataExt};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use common::{RawResponse, TestServer, XorShift};
use h2common::{connect_h2c, send};
use volt_http::{get, Router, ServeDir};

const HELLO: &str = "hello, world\n";

/// A directory tree under the system's temporary directory, removed on drop; `outside` is
/// a sibling the tree's links point into.
struct Tree {
    base: PathBuf,
}

impl Tree {
    fn new() -> Tree {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let base = std::env::temp_dir().join(format!(
            "volt-static-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = fs::remove_dir_all(&base);
        let root = base.join("root");
        let write = |name: &str, data: &[u8]| fs::write(root.join(name), data).unwrap();
        fs::create_dir_all(root.join("dir/sub")).unwrap();
        fs::create_dir_all(root.join("site")).unwrap();
        fs::create_dir_all(root.join(".git")).unwrap();
        fs::create_dir_all(base.join("outside")).unwrap();
        write("hello.txt", HELLO.as_bytes());
        write("page.html", b"<p>hi</p>\n");
        write("data.bin", b"\x00\x01\x02");
        write("empty.txt", b"");
        write(".secret", b"password\n");
        write(".git/config", b"[core]\n");
        write("dir/a b.txt", b"a b\n");
        write("dir/<x>&.txt", b"x\n");
        write("dir/.hidden", b"hidden\n");
        write("dir/sub/c.txt", b"c\n");
        write("site/index.html", b"<h1>site</h1>\n");
        write("big.bin", &big());
        fs::write(base.join("outside/secret.txt"), b"outside\n").unwrap();
        symlink(base.join("outside/secret.txt"), root.join("escape.txt")).unwrap();
        symlink(base.join("outside"), root.join("escape_dir")).unwrap();
        symlink("hello.txt", root.join("inside_link.md")).unwrap();
        Tree { base }
    }

    fn root(&self) -> PathBuf {
        self.base.join("root")
    }

    /// The `ETag` and `Last-Modified` ServeDir sends for `name`.
    fn validators(&self, name: &str) -> (String, String) {
        let meta = fs::metadata(self.root().join(name)).unwrap();
        let mtime = meta.modified().unwrap();
        let nanos = mtime.duration_since(UNIX_EPOCH).unwrap().as_nanos();
        let etag = format!("\"{nanos:x}-{:x}\"", meta.size());
        let secs = Duration::from_secs(mtime.duration_since(UNIX_EPOCH).unwrap().as_secs());
        (etag, httpdate::fmt_http_date(UNIX_EPOCH + secs))
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.base);
    }
}

/// 1 MiB and 123 bytes of varied data: 17 reads of 64 KiB, the last one short.
fn big() -> Vec<u8> {
    let mut rng = XorShift(0x5eed);
    (0..(1 << 20) + 123).map(|_| rng.next() as u8).collect()
}

fn request(server: &TestServer, head: &str) -> RawResponse {
    let mut c = server.connect();
    c.send(head.as_bytes());
    if head.starts_with("HEAD ") {
        c.read_head_response()
    } else {
        c.read_response()
    }
}

fn get_with(server: &TestServer, path: &str, fields: &str) -> RawResponse {
    request(
        server,
        &format!("GET {path} HTTP/1.1\r\nHost: t\r\n{fields}\r\n"),
    )
}

fn status(server: &TestServer, path: &str) -> u16 {
    get_with(server, path, "").status
}

fn serve(tree: &Tree) -> TestServer {
    common::start(ServeDir::new(tree.root()))
}

#[test]
fn a_file_has_its_type_length_and_validators() {
    let tree = Tree::new();
    let server = serve(&tree);
    let (etag, modified) = tree.validators("hello.txt");
    let head = format!(
        "HTTP/1.1 200 OK\r\nServer: volt\r\nDate: <date>\r\n\
         Content-Type: text/plain; charset=utf-8\r\netag: {etag}\r\nlast-modified: {modified}\r\n\
         accept-ranges: bytes\r\ncontent-length: 13\r\n\r\n"
    );
    let r = get_with(&server, "/hello.txt", "");
    assert_eq!(r.text(), format!("{head}{HELLO}"));
    // HEAD: the same head, no body; the connection goes on with the next request.
    let mut c = server.connect();
    c.send(b"HEAD /hello.txt HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(c.read_head_response().text(), head);
    c.send(b"GET /hello.txt HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(c.read_response().body, HELLO.as_bytes());
    // Types by extension, octet-stream when unknown; an empty file.
    let r = get_with(&server, "/page.html", "");
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    assert_eq!(r.body, b"<p>hi</p>\n");
    let r = get_with(&server, "/data.bin", "");
    assert_eq!(r.header("content-type"), Some("application/octet-stream"));
    assert_eq!(r.body, b"\x00\x01\x02");
    let r = get_with(&server, "/empty.txt", "Range: bytes=0-0\r\n");
    assert_eq!((r.status, r.header("content-length")), (200, Some("0")));
    assert_eq!(status(&server, "/missing.txt"), 404);
    // Names and paths longer than Linux allows are 404 too, not a file system error.
    assert_eq!(status(&server, &format!("/{}", "n".repeat(300))), 404);
    assert_eq!(status(&server, &format!("/{}", "dir/".repeat(1100))), 404);
    assert_eq!(status(&server, "/dir/missing/x"), 404);
}

#[test]
fn other_methods_are_405_with_allow() {
    let tree = Tree::new();
    let server = serve(&tree);
    for method in ["POST", "PUT", "DELETE", "OPTIONS"] {
        let r = request(
            &server,
            &format!("{method} /hello.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n"),
        );
        assert_eq!(r.status, 405, "{method}");
        assert_eq!(r.header("allow"), Some("GET, HEAD"), "{method}");
    }
}

#[test]
fn conditional_requests() {
    let tree = Tree::new();
    let server = serve(&tree);
    let (etag, modified) = tree.validators("hello.txt");
    let not_modified = format!(
        "HTTP/1.1 304 Not Modified\r\nServer: volt\r\nDate: <date>\r\n\
         etag: {etag}\r\nlast-modified: {modified}\r\n\r\n"
    );
    let ask = |fields: &str| get_with(&server, "/hello.txt", fields);
    assert_eq!(
        ask(&format!("If-None-Match: {etag}\r\n")).text(),
        not_modified
    );
    assert_eq!(
        ask(&format!("If-None-Match: \"x\", W/{etag}\r\n")).text(),
        not_modified
    );
    assert_eq!(
        ask(&format!("If-Modified-Since: {modified}\r\n")).text(),
        not_modified
    );
    assert_eq!(ask("If-None-Match: *\r\n").status, 304);
    let old = "Sat, 01 Jan 2000 00:00:00 GMT";
    assert_eq!(
        ask(&format!("If-Modified-Since: {old}\r\n")).body,
        HELLO.as_bytes()
    );
    // If-None-Match takes precedence over If-Modified-Since.
    let r = ask(&format!(
        "If-None-Match: \"x\"\r\nIf-Modified-Since: {modified}\r\n"
    ));
    assert_eq!((r.status, r.body.as_slice()), (200, HELLO.as_bytes()));
    // If-Match and If-Unmodified-Since.
    let failed = "HTTP/1.1 412 Precondition Failed\r\nServer: volt\r\nDate: <date>\r\n\
                  Content-Type: text/plain\r\ncontent-length: 20\r\n\r\nprecondition failed\n";
    assert_eq!(ask("If-Match: \"x\"\r\n").text(), failed);
    assert_eq!(ask(&format!("If-Match: W/{etag}\r\n")).text(), failed);
    assert_eq!(
        ask(&format!("If-Unmodified-Since: {old}\r\n")).text(),
        failed
    );
    assert_eq!(ask(&format!("If-Match: {etag}\r\n")).status, 200);
    assert_eq!(ask("If-Match: *\r\n").status, 200);
    assert_eq!(
        ask(&format!("If-Unmodified-Since: {modified}\r\n")).status,
        200
    );
    // §13.2.2: If-Match first (a passing one makes If-Unmodified-Since ignored), and a failed
    // precondition before a 304.
    let r = ask(&format!(
        "If-Match: {etag}\r\nIf-Unmodified-Since: {old}\r\n"
    ));
    assert_eq!(r.status, 200);
    let r = ask(&format!("If-Match: \"x\"\r\nIf-None-Match: {etag}\r\n"));
    assert_eq!(r.status, 412);
    // The 304 to HEAD too; malformed tags are refused.
    let r = request(
        &server,
        &format!("HEAD /hello.txt HTTP/1.1\r\nHost: t\r\nIf-None-Match: {etag}\r\n\r\n"),
    );
    assert_eq!(r.text(), not_modified);
    assert_eq!(ask("If-None-Match: unquoted\r\n").status, 400);
}

#[test]
fn single_ranges_and_unsatisfiable_ones() {
    let tree = Tree::new();
    let server = serve(&tree);
    let (etag, modified) = tree.validators("hello.txt");
    let r = get_with(&server, "/hello.txt", "Range: bytes=0-4\r\n");
    assert_eq!(
        r.text(),
        format!(
            "HTTP/1.1 206 Partial Content\r\nServer: volt\r\nDate: <date>\r\n\
             Content-Type: text/plain; charset=utf-8\r\ncontent-range: bytes 0-4/13\r\n\
             etag: {etag}\r\nlast-modified: {modified}\r\naccept-ranges: bytes\r\n\
             content-length: 5\r\n\r\nhello"
        )
    );
    let part = |range: &str| {
        let r = get_with(&server, "/hello.txt", &format!("Range: {range}\r\n"));
        (
            r.status,
            r.header("content-range").map(str::to_owned),
            r.body_text(),
        )
    };
    let some = |s: &str| Some(s.to_owned());
    assert_eq!(
        part("bytes=7-"),
        (206, some("bytes 7-12/13"), "world\n".into())
    );
    assert_eq!(
        part("bytes=-6"),
        (206, some("bytes 7-12/13"), "world\n".into())
    );
    assert_eq!(
        part("bytes=-100"),
        (206, some("bytes 0-12/13"), HELLO.into())
    );
    assert_eq!(part("bytes=5-5"), (206, some("bytes 5-5/13"), ",".into()));
    assert_eq!(
        part("bytes=10-99"),
        (206, some("bytes 10-12/13"), "ld\n".into())
    );
    // Ranges close together are sent as one part (tests/byteranges.rs has the rest); other
    // units are ignored.
    assert_eq!(
        part("bytes=0-1,3-4"),
        (206, some("bytes 0-4/13"), "hello".into())
    );
    assert_eq!(part("lines=1-2"), (200, None, HELLO.into()));
    let r = get_with(&server, "/hello.txt", "Range: bytes=13-\r\n");
    assert_eq!(
        r.text(),
        "HTTP/1.1 416 Range Not Satisfiable\r\nServer: volt\r\nDate: <date>\r\n\
         Content-Type: text/plain\r\ncontent-range: bytes */13\r\naccept-ranges: bytes\r\n\
         content-length: 22\r\n\r\nrange not satisfiable\n"
    );
    assert_eq!(part("bytes=-0").0, 416);
    assert_eq!(part("bytes=5-1").0, 400);
    // HEAD ignores Range (only GET has ranges).
    let r = request(
        &server,
        "HEAD /hello.txt HTTP/1.1\r\nHost: t\r\nRange: bytes=0-4\r\n\r\n",
    );
    assert_eq!((r.status, r.header("content-length")), (200, Some("13")));
    // If-Range: the current tag or date gives the part, anything else the whole file.
    let if_range = |value: &str| {
        let fields = format!("Range: bytes=0-4\r\nIf-Range: {value}\r\n");
        let r = get_with(&server, "/hello.txt", &fields);
        (r.status, r.body_text())
    };
    assert_eq!(if_range(&etag), (206, "hello".into()));
    assert_eq!(if_range(&modified), (206, "hello".into()));
    assert_eq!(if_range("\"old\""), (200, HELLO.into()));
    assert_eq!(if_range(&format!("W/{etag}")), (200, HELLO.into()));
    assert_eq!(
        if_range("Sat, 01 Jan 2000 00:00:00 GMT"),
        (200, HELLO.into())
    );
}

#[test]
fn a_file_larger_than_one_read_arrives_intact() {
    let tree = Tree::new();
    let server = serve(&tree);
    let data = big();
    let mut c = server.connect();
    c.send(b"GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\n");
    let r = c.read_response();
    assert_eq!(r.header("content-length"), Some("1048699"));
    assert!(r.body == data, "the body differs from the file");
    // A range across read boundaries, on the same connection.
    c.send(b"GET /big.bin HTTP/1.1\r\nHost: t\r\nRange: bytes=65530-200000\r\n\r\n");
    let r = c.read_response();
    assert_eq!(r.status, 206);
    assert_eq!(
        r.header("content-range"),
        Some("bytes 65530-200000/1048699")
    );
    assert!(
        r.body == data[65530..=200000],
        "the part differs from the file"
    );
    c.send(b"HEAD /big.bin HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(
        c.read_head_response().header("content-length"),
        Some("1048699")
    );
}

#[test]
fn a_client_that_stops_reading_holds_up_no_one_else() {
    let tree = Tree::new();
    // 32 MiB (sparse): far more than the socket buffers hold.
    let huge = fs::File::create(tree.root().join("huge.bin")).unwrap();
    huge.set_len(32 << 20).unwrap();
    let server = serve(&tree);
    let mut stalled = server.connect();
    stalled.send(b"GET /huge.bin HTTP/1.1\r\nHost: t\r\n\r\n");
    let first = stalled.poll_bytes(Duration::from_secs(10)).expect("open");
    assert!(first.starts_with(b"HTTP/1.1 200 OK\r\n"));
    // The same worker serves others in full while that one reads nothing.
    let data = big();
    for _ in 0..3 {
        let r = get_with(&server, "/big.bin", "");
        assert!(r.body == data, "the body differs from the file");
    }
    drop(stalled);
    assert_eq!(get_with(&server, "/hello.txt", "").body, HELLO.as_bytes());
}

#[test]
fn directories_redirect_then_show_their_index_or_a_listing() {
    let tree = Tree::new();
    let server = serve(&tree);
    let r = get_with(&server, "/dir", "");
    assert_eq!(
        r.text(),
        "HTTP/1.1 301 Moved Permanently\r\nServer: volt\r\nDate: <date>\r\n\
         location: /dir/\r\ncontent-length: 0\r\n\r\n"
    );
    let r = get_with(&server, "/dir/sub?x=1&y", "");
    assert_eq!(
        (r.status, r.header("location")),
        (301, Some("/dir/sub/?x=1&y"))
    );
    let r = get_with(&server, "/site/", "");
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    assert_eq!(r.body, b"<h1>site</h1>\n");
    assert_eq!(
        get_with(&server, "/site", "").header("location"),
        Some("/site/")
    );
    // A file is no directory.
    assert_eq!(status(&server, "/hello.txt/"), 404);
    let r = get_with(&server, "/dir/", "");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    let items: Vec<&str> = std::str::from_utf8(&r.body)
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("<li>"))
        .collect();
    assert_eq!(
        items,
        [
            "<li><a href=\"../\">../</a></li>",
            "<li><a href=\"sub/\">sub/</a></li>",
            "<li><a href=\"%3Cx%3E%26.txt\">&lt;x&gt;&amp;.txt</a></li>",
            "<li><a href=\"a%20b.txt\">a b.txt</a></li>",
        ]
    );
    assert!(r.body_text().contains("<title>Index of /dir/</title>"));
    assert_eq!(r.header("etag"), None);
    // A listing has no tag: `*` matches it, a named tag does not.
    assert_eq!(
        get_with(&server, "/dir/", "If-None-Match: *\r\n").status,
        304
    );
    assert_eq!(
        get_with(&server, "/dir/", "If-None-Match: \"x\"\r\n").status,
        200
    );
    assert_eq!(
        get_with(&server, "/dir/", "If-Match: \"x\"\r\n").status,
        412
    );
    assert_eq!(get_with(&server, "/dir/", "If-Match: *\r\n").status, 200);
    // The links work.
    assert_eq!(get_with(&server, "/dir/a%20b.txt", "").body, b"a b\n");
    assert_eq!(get_with(&server, "/dir/%3Cx%3E%26.txt", "").body, b"x\n");
    // The root's listing has no parent link, and shows directories first.
    let root = get_with(&server, "/", "").body_text();
    assert!(!root.contains("../"));
    let dir_at = root.find("href=\"site/\"").unwrap();
    assert!(dir_at < root.find("href=\"big.bin\"").unwrap());
    assert!(!root.contains(".secret") && !root.contains(".git"));
}

#[test]
fn listings_off_answer_404_but_index_pages_stay() {
    let tree = Tree::new();
    let server = common::start(ServeDir::new(tree.root()).listing(false));
    assert_eq!(status(&server, "/dir/"), 404);
    assert_eq!(status(&server, "/"), 404);
    assert_eq!(get_with(&server, "/site/", "").body, b"<h1>site</h1>\n");
    assert_eq!(status(&server, "/dir"), 301);
}

#[test]
fn dotfiles_are_hidden_unless_asked_for() {
    let tree = Tree::new();
    let server = serve(&tree);
    for path in [
        "/.secret",
        "/.git/config",
        "/%2egit/config",
        "/dir/.hidden",
        "/.git/",
    ] {
        assert_eq!(status(&server, path), 404, "{path}");
    }
    drop(server);
    let server = common::start(ServeDir::new(tree.root()).dotfiles(true));
    assert_eq!(get_with(&server, "/.secret", "").body, b"password\n");
    assert!(get_with(&server, "/dir/", "")
        .body_text()
        .contains(".hidden"));
}

#[test]
fn traversal_attempts_are_refused() {
    let tree = Tree::new();
    let server = serve(&tree);
    for target in [
        "/../../etc/passwd",
        "/%2e%2e/%2e%2e/etc/passwd",
        "/%2E%2E/root/secret.txt",
        "/a%2f..%2f..",
        "/a/../../x",
        "/dir/..%2f..%2foutside/secret.txt",
        "/dir/%2e%2e/hello.txt",
        "/./hello.txt",
        "//etc/passwd",
        "/dir//a%20b.txt",
        "/..%5c..%5cetc/passwd",
        "/hello.txt%00.html",
        "/%zz",
    ] {
        let mut c = server.connect();
        c.send(format!("GET {target} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
        let r = c.read_response();
        assert_eq!(r.status, 400, "{target}: {}", r.text());
        assert!(!r.body_text().contains("root:"), "{target}");
    }
}

#[test]
fn links_out_of_the_root_are_refused_by_default() {
    let tree = Tree::new();
    let server = serve(&tree);
    assert_eq!(status(&server, "/escape.txt"), 404);
    assert_eq!(status(&server, "/escape_dir/secret.txt"), 404);
    assert_eq!(status(&server, "/escape_dir/"), 404);
    // A link that stays inside is followed, and typed by its own name.
    let r = get_with(&server, "/inside_link.md", "");
    assert_eq!(r.body, HELLO.as_bytes());
    assert_eq!(
        r.header("content-type"),
        Some("text/markdown; charset=utf-8")
    );
    // Listings show only the links that may be followed.
    let root = get_with(&server, "/", "").body_text();
    assert!(root.contains("href=\"inside_link.md\""));
    assert!(!root.contains("escape"), "{root}");
    // A loop of links leads nowhere: 404, as a missing file.
    std::os::unix::fs::symlink("loop_b", tree.root().join("loop_a")).unwrap();
    std::os::unix::fs::symlink("loop_a", tree.root().join("loop_b")).unwrap();
    assert_eq!(status(&server, "/loop_a"), 404);
    drop(server);
    let server = common::start(ServeDir::new(tree.root()).follow_links_out(true));
    assert_eq!(get_with(&server, "/escape.txt", "").body, b"outside\n");
    assert_eq!(
        get_with(&server, "/escape_dir/secret.txt", "").body,
        b"outside\n"
    );
    assert!(get_with(&server, "/", "")
        .body_text()
        .contains("escape_dir/"));
}

#[test]
fn mounted_under_a_prefix_next_to_other_routes() {
    let tree = Tree::new();
    let app = Router::new()
        .route("/api/hello", get(|_req| async { "from the api" }))
        .route_service("/static/{*path}", ServeDir::new(tree.root()));
    let server = common::start(app);
    assert_eq!(get_with(&server, "/api/hello", "").body, b"from the api");
    assert_eq!(
        get_with(&server, "/static/hello.txt", "").body,
        HELLO.as_bytes()
    );
    let r = get_with(&server, "/static", "");
    assert_eq!((r.status, r.header("location")), (301, Some("/static/")));
    let r = get_with(&server, "/static/dir", "");
    assert_eq!(r.header("location"), Some("/static/dir/"));
    let listing = get_with(&server, "/static/", "").body_text();
    assert!(listing.contains("<title>Index of /static/</title>"));
    assert!(!listing.contains("../"));
    assert!(get_with(&server, "/static/dir/", "")
        .body_text()
        .contains("../"));
    assert_eq!(status(&server, "/static/%2e%2e/x"), 400);
    assert_eq!(status(&server, "/static//etc/passwd"), 400);
    assert_eq!(status(&server, "/elsewhere"), 404);
    let r = request(
        &server,
        "DELETE /static/hello.txt HTTP/1.1\r\nHost: t\r\n\r\n",
    );
    assert_eq!((r.status, r.header("allow")), (405, Some("GET, HEAD")));
    // As the fallback of every path no other route takes.
    drop(server);
    let app = Router::new()
        .route("/api/hello", get(|_req| async { "from the api" }))
        .route_service("/{*path}", ServeDir::new(tree.root()));
    let server = common::start(app);
    assert_eq!(get_with(&server, "/api/hello", "").body, b"from the api");
    assert_eq!(get_with(&server, "/hello.txt", "").body, HELLO.as_bytes());
    assert_eq!(get_with(&server, "/site/", "").body, b"<h1>site</h1>\n");
    assert_eq!(status(&server, "/api/other"), 404);
}

/// A file changed between two requests gets new validators: the old tag no longer matches.
#[test]
fn a_changed_file_is_not_304() {
    let tree = Tree::new();
    let server = serve(&tree);
    let (etag, _) = tree.validators("hello.txt");
    let path = tree.root().join("hello.txt");
    fs::write(&path, "changed\n").unwrap();
    let later = SystemTime::now() + Duration::from_secs(1);
    fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(later)
        .unwrap();
    let r = get_with(&server, "/hello.txt", &format!("If-None-Match: {etag}\r\n"));
    assert_eq!(
        (r.status, r.body.as_slice()),
        (200, b"changed\n".as_slice())
    );
    assert_ne!(r.header("etag"), Some(etag.as_str()));
}

/// The same answers over HTTP/2 (prior knowledge): a large file through flow control, a
/// 304 and a HEAD with no DATA, a part, a redirect.
#[test]
fn over_http2_too() {
    let tree = Tree::new();
    let server = serve(&tree);
    let addr = server.addr();
    let (etag, _) = tree.validators("big.bin");
    let request = |method: &str, path: &str, field: Option<(&str, &str)>| {
        let mut r = http::Request::builder()
            .method(method)
            .uri(format!("http://t{path}"));
        if let Some((name, value)) = field {
            r = r.header(name, value);
        }
        r.body(()).unwrap()
    };
    volt_rt::block_on(async move {
        let mut client = connect_h2c(addr).await;
        let r = send(&mut client, request("GET", "/big.bin", None), Bytes::new()).await;
        assert_eq!(r.status, 200);
        assert_eq!(r.headers["content-length"], "1048699");
        assert_eq!(r.headers["etag"], etag.as_str());
        assert!(r.body == big(), "the body differs from the file");
        let r = send(
            &mut client,
            request("GET", "/big.bin", Some(("if-none-match", &etag))),
            Bytes::new(),
        )
        .await;
        assert_eq!((r.status, r.body.len()), (304, 0));
        assert_eq!(r.headers["etag"], etag.as_str());
        let r = send(&mut client, request("HEAD", "/big.bin", None), Bytes::new()).await;
        assert_eq!((r.status, r.body.len()), (200, 0));
        assert_eq!(r.headers["content-length"], "1048699");
        let range = Some(("range", "bytes=-3"));
        let r = send(
            &mut client,
            request("GET", "/hello.txt", range),
            Bytes::new(),
        )
        .await;
        assert_eq!((r.status, &r.body[..]), (206, &b"ld\n"[..]));
        assert_eq!(r.headers["content-range"], "bytes 10-12/13");
        let r = send(&mut client, request("GET", "/dir?q", None), Bytes::new()).await;
        assert_eq!(r.status, 301);
        assert_eq!(r.headers["location"], "/dir/?q");
    });
}
