//! `ServeDir`'s settings beyond flags, over a real socket: index names (their order, what is
//! passed over, none at all), the type table (new entries, case, overrides, the default type)
//! and `Cache-Control` by extension; and two mounts with different settings.

mod common;

use std::fs;
use std::os::unix::fs::symlink;
use std::panic::{catch_unwind, UnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::{RawResponse, TestServer};
use volt_http::{Router, ServeDir};

/// A directory tree made for the test from `(name, contents)` pairs (a name ending in `/` is
/// a directory), removed on drop; `outside` is a sibling of its root.
struct Tree(PathBuf);

impl Tree {
    fn new(entries: &[(&str, &str)]) -> Tree {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let base = std::env::temp_dir().join(format!("volt-options-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&base);
        fs::create_dir_all(base.join("root")).unwrap();
        fs::create_dir_all(base.join("outside")).unwrap();
        let tree = Tree(base);
        for (name, contents) in entries {
            let path = tree.root().join(name);
            fs::create_dir_all(if name.ends_with('/') {
                &path
            } else {
                path.parent().unwrap()
            })
            .unwrap();
            if !name.ends_with('/') {
                fs::write(path, contents).unwrap();
            }
        }
        tree
    }

    fn root(&self) -> PathBuf {
        self.0.join("root")
    }

    fn outside(&self) -> PathBuf {
        self.0.join("outside")
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn get_with(server: &TestServer, path: &str, fields: &str) -> RawResponse {
    let mut c = server.connect();
    c.send(format!("GET {path} HTTP/1.1\r\nHost: t\r\n{fields}\r\n").as_bytes());
    c.read_response()
}

fn get(server: &TestServer, path: &str) -> RawResponse {
    get_with(server, path, "")
}

/// The status and `Content-Type` of a GET of `path`.
fn typed(server: &TestServer, path: &str) -> (u16, Option<String>) {
    let r = get(server, path);
    (r.status, r.header("content-type").map(str::to_owned))
}

/// The status and `Cache-Control` of a GET of `path` with the header lines `fields`.
fn cached(server: &TestServer, path: &str, fields: &str) -> (u16, Option<String>) {
    let r = get_with(server, path, fields);
    (r.status, r.header("cache-control").map(str::to_owned))
}

/// The message `f` panics with.
fn panic_message(f: impl FnOnce() + UnwindSafe) -> String {
    let payload = catch_unwind(f).expect_err("no panic");
    match payload.downcast::<String>() {
        Ok(message) => *message,
        Err(payload) => payload.downcast_ref::<&str>().unwrap().to_string(),
    }
}

#[test]
fn index_names_are_tried_in_order() {
    let tree = Tree::new(&[
        ("a/index.htm", "a: index.htm"),
        ("a/default.html", "a: default.html"),
        ("b/default.html", "b: default.html"),
        // A directory by an index name is passed over.
        ("c/index.html/", ""),
        ("c/default.html", "c: default.html"),
        ("d/index.html", "d: index.html"),
    ]);
    let names = ["index.html", "index.htm", "default.html"];
    let server = common::start(ServeDir::new(tree.root()).index_names(&names));
    let r = get(&server, "/a/");
    assert_eq!(r.body_text(), "a: index.htm");
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    assert_eq!(get(&server, "/b/").body_text(), "b: default.html");
    assert_eq!(get(&server, "/c/").body_text(), "c: default.html");
    assert_eq!(get(&server, "/d/").body_text(), "d: index.html");
    // A directory with none of them is listed.
    assert!(get(&server, "/")
        .body_text()
        .contains("<title>Index of /</title>"));
    drop(server);
    let names = ["default.html", "index.htm"];
    let server = common::start(ServeDir::new(tree.root()).index_names(&names));
    assert_eq!(get(&server, "/a/").body_text(), "a: default.html");
    // `index.html` is no longer one of them.
    assert!(get(&server, "/d/").body_text().contains("Index of /d/"));
}

#[test]
fn an_index_page_is_served_as_any_file() {
    let tree = Tree::new(&[("a/home.htm", "<p>home</p>\n"), ("a/home.htm.gz", "GZ")]);
    let files = ServeDir::new(tree.root())
        .index_names(&["home.htm"])
        .precompressed(true)
        .cache_control_for("htm", "no-cache");
    let server = common::start(files);
    let r = get(&server, "/a/");
    assert_eq!((r.status, r.body_text().as_str()), (200, "<p>home</p>\n"));
    assert_eq!(r.header("cache-control"), Some("no-cache"));
    let etag = r.header("etag").unwrap().to_owned();
    let r = get_with(&server, "/a/", &format!("If-None-Match: {etag}\r\n"));
    assert_eq!(
        (r.status, r.header("cache-control")),
        (304, Some("no-cache"))
    );
    let r = get_with(&server, "/a/", "Range: bytes=3-6\r\n");
    assert_eq!((r.status, r.body_text().as_str()), (206, "home"));
    assert_eq!(r.header("content-range"), Some("bytes 3-6/12"));
    let r = get_with(&server, "/a/", "Accept-Encoding: gzip\r\n");
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    assert_eq!(r.body_text(), "GZ");
    // `/a` is still redirected first.
    assert_eq!(get(&server, "/a").header("location"), Some("/a/"));
}

#[test]
fn dotfiles_and_links_out_are_passed_over_as_index_pages() {
    let tree = Tree::new(&[
        ("a/.index.html", "a: .index.html"),
        ("a/index.html", "a: index.html"),
        ("b/index.html", "b: index.html"),
    ]);
    fs::write(tree.outside().join("index.html"), "outside").unwrap();
    let link = tree.root().join("c");
    fs::create_dir(&link).unwrap();
    symlink(tree.outside().join("index.html"), link.join("index.html")).unwrap();
    let names = [".index.html", "index.html"];
    let server = common::start(ServeDir::new(tree.root()).index_names(&names));
    assert_eq!(get(&server, "/a/").body_text(), "a: index.html");
    assert_eq!(get(&server, "/b/").body_text(), "b: index.html");
    // The link out is neither served nor listed.
    let r = get(&server, "/c/");
    assert_eq!(r.status, 200);
    assert!(r.body_text().contains("Index of /c/"));
    assert!(!r.body_text().contains("outside") && !r.body_text().contains("index.html"));
    drop(server);
    let files = ServeDir::new(tree.root())
        .index_names(&names)
        .dotfiles(true);
    let server = common::start(files.follow_links_out(true));
    assert_eq!(get(&server, "/a/").body_text(), "a: .index.html");
    assert_eq!(get(&server, "/c/").body_text(), "outside");
}

#[test]
fn no_index_names_lists_every_directory() {
    let tree = Tree::new(&[("site/index.html", "<h1>site</h1>")]);
    let server = common::start(ServeDir::new(tree.root()).index_names(&[]));
    let r = get(&server, "/site/");
    assert_eq!(r.status, 200);
    assert!(r
        .body_text()
        .contains("<a href=\"index.html\">index.html</a>"));
    // The file itself is still served by its name.
    assert_eq!(
        get(&server, "/site/index.html").body_text(),
        "<h1>site</h1>"
    );
    drop(server);
    let files = ServeDir::new(tree.root()).index_names(&[]).listing(false);
    let server = common::start(files);
    assert_eq!(get(&server, "/site/").status, 404);
    assert_eq!(get(&server, "/site/index.html").status, 200);
}

#[test]
fn index_names_that_are_not_one_segment_panic() {
    for name in [
        "",
        ".",
        "..",
        "../index.html",
        "a/index.html",
        "a\\b",
        "a\0b",
    ] {
        let message = panic_message(|| drop(ServeDir::new(".").index_names(&["ok.html", name])));
        assert_eq!(
            message,
            format!("invalid index name {name:?} (one file name, as `index.htm`)")
        );
    }
}

#[test]
fn the_built_in_table_knows_the_common_types() {
    let names = [
        ("feed.rss", "application/rss+xml"),
        ("feed.atom", "application/atom+xml"),
        ("data.jsonld", "application/ld+json"),
        ("conf.yml", "application/yaml"),
        ("cal.ics", "text/calendar; charset=utf-8"),
        ("subs.vtt", "text/vtt; charset=utf-8"),
        ("clip.mov", "video/quicktime"),
        ("song.flac", "audio/flac"),
        ("voice.opus", "audio/ogg"),
        ("list.m3u8", "application/vnd.apple.mpegurl"),
        ("seg0.ts", "video/mp2t"),
        ("book.epub", "application/epub+zip"),
        ("data.zst", "application/zstd"),
        ("pic.jxl", "image/jxl"),
        ("font.eot", "application/vnd.ms-fontobject"),
        // Any case.
        ("STYLE.CSS", "text/css; charset=utf-8"),
        ("Photo.JpG", "image/jpeg"),
        ("data.bin", "application/octet-stream"),
        ("README", "application/octet-stream"),
    ];
    let tree = Tree::new(&names.map(|(name, _)| (name, "x")));
    let server = common::start(ServeDir::new(tree.root()));
    for (name, expected) in names {
        let path = format!("/{name}");
        assert_eq!(
            typed(&server, &path),
            (200, Some(expected.into())),
            "{name}"
        );
    }
}

#[test]
fn types_can_be_added_changed_and_defaulted() {
    let css = "p{}\n".repeat(50);
    let tree = Tree::new(&[
        ("app.ts", "let x: number = 1;\n"),
        ("App.Vue", "<template/>"),
        ("a.css", &css),
        ("notes", "plain"),
        ("x.unknown", "?"),
        ("a.png", "png"),
    ]);
    let files = ServeDir::new(tree.root())
        .mime_type("ts", "text/plain; charset=utf-8")
        .mime_type("VUE", "text/x-vue")
        .mime_type("css", "text/x-first")
        .mime_type("Css", "text/x-styles")
        .default_type("text/plain; charset=utf-8");
    let server = common::start(files);
    let text = Some("text/plain; charset=utf-8".to_owned());
    assert_eq!(typed(&server, "/app.ts"), (200, text.clone()));
    assert_eq!(typed(&server, "/App.Vue"), (200, Some("text/x-vue".into())));
    assert_eq!(
        typed(&server, "/a.css"),
        (200, Some("text/x-styles".into()))
    );
    assert_eq!(typed(&server, "/notes"), (200, text.clone()));
    assert_eq!(typed(&server, "/x.unknown"), (200, text));
    assert_eq!(typed(&server, "/a.png"), (200, Some("image/png".into())));
    // The parts of a multipart answer name the type too.
    let r = get_with(&server, "/a.css", "Range: bytes=0-0,199-199\r\n");
    assert_eq!(r.status, 206);
    assert_eq!(
        r.body_text()
            .matches("\r\nContent-Type: text/x-styles\r\n")
            .count(),
        2
    );
}

#[test]
fn bad_extensions_and_types_panic() {
    for (ext, content_type, expected) in [
        (".css", "text/css", "invalid extension \".css\""),
        ("", "text/css", "invalid extension \"\""),
        ("a/b", "text/css", "invalid extension \"a/b\""),
        ("css", "css", "invalid Content-Type \"css\""),
        (
            "css",
            "text/css\r\nX: y",
            "invalid Content-Type \"text/css\\r\\nX: y\"",
        ),
        ("css", "tëxt/css", "invalid Content-Type \"tëxt/css\""),
    ] {
        let message = panic_message(|| drop(ServeDir::new(".").mime_type(ext, content_type)));
        assert!(message.starts_with(expected), "{message}");
    }
    let message = panic_message(|| drop(ServeDir::new(".").default_type("text")));
    assert_eq!(message, "invalid Content-Type \"text\"");
}

#[test]
fn cache_control_by_extension_overrides_the_default() {
    let tree = Tree::new(&[
        ("page.html", "<p>page</p>"),
        ("app.css", "0123456789"),
        ("APP2.CSS", "x"),
        ("notes.txt", "notes"),
        ("site/index.html", "<h1>site</h1>"),
        ("dir/a.txt", "a"),
    ]);
    let immutable = Some("max-age=31536000, immutable".to_owned());
    let files = ServeDir::new(tree.root())
        .cache_control("max-age=60")
        .cache_control_for("html", "no-cache")
        .cache_control_for("css", "max-age=1")
        .cache_control_for("CSS", "max-age=31536000, immutable");
    let server = common::start(files);
    assert_eq!(
        cached(&server, "/page.html", ""),
        (200, Some("no-cache".into()))
    );
    assert_eq!(
        cached(&server, "/site/", ""),
        (200, Some("no-cache".into()))
    );
    assert_eq!(cached(&server, "/app.css", ""), (200, immutable.clone()));
    assert_eq!(cached(&server, "/APP2.CSS", ""), (200, immutable.clone()));
    assert_eq!(
        cached(&server, "/notes.txt", ""),
        (200, Some("max-age=60".into()))
    );
    let ranged = cached(&server, "/app.css", "Range: bytes=0-1\r\n");
    assert_eq!(ranged, (206, immutable.clone()));
    let etag = get(&server, "/app.css").header("etag").unwrap().to_owned();
    let fields = format!("If-None-Match: {etag}\r\n");
    assert_eq!(cached(&server, "/app.css", &fields), (304, immutable));
    // Not on errors, redirects or listings.
    assert_eq!(cached(&server, "/missing.css", ""), (404, None));
    assert_eq!(
        cached(&server, "/app.css", "Range: bytes=50-\r\n"),
        (416, None)
    );
    assert_eq!(cached(&server, "/site", ""), (301, None));
    assert_eq!(cached(&server, "/dir/", ""), (200, None));
    drop(server);
    // Without a default, only the extensions named have one.
    let files = ServeDir::new(tree.root()).cache_control_for("css", "max-age=5");
    let server = common::start(files);
    assert_eq!(
        cached(&server, "/app.css", ""),
        (200, Some("max-age=5".into()))
    );
    assert_eq!(cached(&server, "/notes.txt", ""), (200, None));
}

#[test]
fn a_bad_cache_control_for_an_extension_panics() {
    let message = panic_message(|| drop(ServeDir::new(".").cache_control_for("css", "a\nb")));
    assert!(
        message.starts_with("invalid Cache-Control value"),
        "{message}"
    );
    let message = panic_message(|| drop(ServeDir::new(".").cache_control_for(".css", "no-cache")));
    assert!(
        message.starts_with("invalid extension \".css\""),
        "{message}"
    );
}

/// The README's answer to `Cache-Control` by path: a mount per policy.
#[test]
fn two_mounts_with_their_own_settings() {
    let tree = Tree::new(&[
        ("index.html", "<h1>home</h1>"),
        ("assets/app.3f2a.js", "js"),
    ]);
    let root = tree.root();
    let assets = ServeDir::new(root.join("assets")).cache_control("max-age=31536000, immutable");
    let pages = ServeDir::new(&root).cache_control("no-cache");
    let app = Router::new()
        .route_service("/assets/{*path}", assets)
        .route_service("/{*path}", pages);
    let server = common::start(app);
    let r = get(&server, "/assets/app.3f2a.js");
    assert_eq!(r.body_text(), "js");
    assert_eq!(
        r.header("cache-control"),
        Some("max-age=31536000, immutable")
    );
    let r = get(&server, "/");
    assert_eq!(r.body_text(), "<h1>home</h1>");
    assert_eq!(r.header("cache-control"), Some("no-cache"));
    assert_eq!(
        cached(&server, "/index.html", ""),
        (200, Some("no-cache".into()))
    );
}
