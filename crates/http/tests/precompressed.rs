//! `ServeDir::precompressed`: `name.br` and `name.gz` served in `name`'s place, exact heads
//! (type, coding, own length and tag, `Vary`), ranges and conditionals on the copy, links
//! out of the root refused, HEAD, HTTP/2, and the default (off).

mod common;
mod h2common;

use std::fs;
use std::os::unix::fs::{symlink, MetadataExt};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::UNIX_EPOCH;

use bytes::Bytes;
use common::{RawResponse, TestServer};
use h2common::{connect_h2c, send};
use volt_http::ServeDir;

const CSS: &str = "body { color: black; }\n";

struct Tree {
    base: PathBuf,
}

impl Tree {
    /// `style.css` with `.gz` and `.br` copies (their bytes need not be real gzip: the server
    /// never looks inside), `app.js` with a `.gz` only, `plain.txt` with none, and
    /// `leak.txt` whose `.gz` is a link out of the root.
    fn new() -> Tree {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let base = std::env::temp_dir().join(format!(
            "volt-precompressed-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = fs::remove_dir_all(&base);
        let root = base.join("root");
        fs::create_dir_all(&root).unwrap();
        fs::create_dir_all(base.join("outside")).unwrap();
        let write = |name: &str, data: &[u8]| fs::write(root.join(name), data).unwrap();
        write("style.css", CSS.as_bytes());
        write("style.css.gz", b"GZIP-BYTES-OF-STYLE");
        write("style.css.br", b"BR-BYTES");
        write("app.js", b"let x = 1;\n");
        write("app.js.gz", b"GZIP-BYTES-OF-APP");
        write("plain.txt", b"plain\n");
        write("leak.txt", b"leak\n");
        fs::write(base.join("outside/secret.gz"), b"SECRET").unwrap();
        symlink(base.join("outside/secret.gz"), root.join("leak.txt.gz")).unwrap();
        Tree { base }
    }

    fn root(&self) -> PathBuf {
        self.base.join("root")
    }

    /// ServeDir's tag for `name`, with `suffix` inside the quotes.
    fn etag(&self, name: &str, suffix: &str) -> String {
        let meta = fs::metadata(self.root().join(name)).unwrap();
        let nanos = meta.modified().unwrap().duration_since(UNIX_EPOCH).unwrap();
        format!("\"{:x}-{:x}{suffix}\"", nanos.as_nanos(), meta.size())
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.base);
    }
}

fn get_with(server: &TestServer, path: &str, fields: &str) -> RawResponse {
    let mut c = server.connect();
    c.send(format!("GET {path} HTTP/1.1\r\nHost: t\r\n{fields}\r\n").as_bytes());
    c.read_response()
}

fn serve(tree: &Tree) -> TestServer {
    common::start(ServeDir::new(tree.root()).precompressed(true))
}

#[test]
fn the_accepted_copy_is_served_with_its_own_validators() {
    let tree = Tree::new();
    let server = serve(&tree);
    let r = get_with(&server, "/style.css", "Accept-Encoding: gzip, br\r\n");
    assert_eq!(r.body, b"BR-BYTES");
    let text = r.text();
    let etag = tree.etag("style.css.br", ".br");
    assert!(
        text.contains(&format!(
            "Content-Type: text/css; charset=utf-8\r\netag: {etag}\r\n"
        )),
        "{text}"
    );
    assert!(
        text.contains("accept-ranges: bytes\r\ncontent-encoding: br\r\nvary: Accept-Encoding\r\ncontent-length: 8\r\n\r\n"),
        "{text}"
    );
    // Weights: gzip preferred, or br refused.
    let r = get_with(&server, "/style.css", "Accept-Encoding: br;q=0.5, gzip\r\n");
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    assert_eq!(r.body, b"GZIP-BYTES-OF-STYLE");
    assert_eq!(
        r.header("etag"),
        Some(tree.etag("style.css.gz", ".gz").as_str())
    );
    // Only a .gz beside app.js: br is passed over.
    let r = get_with(&server, "/app.js", "Accept-Encoding: br, gzip\r\n");
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    assert_eq!(
        r.header("content-type"),
        Some("text/javascript; charset=utf-8")
    );
    assert_eq!(r.body, b"GZIP-BYTES-OF-APP");
    // Nothing accepted: the file itself, its own tag, and the answer varies.
    let r = get_with(&server, "/style.css", "");
    assert_eq!(r.body, CSS.as_bytes());
    assert_eq!(r.header("content-encoding"), None);
    assert_eq!(r.header("vary"), Some("Accept-Encoding"));
    assert_eq!(r.header("etag"), Some(tree.etag("style.css", "").as_str()));
    // No copies: the file.
    let r = get_with(&server, "/plain.txt", "Accept-Encoding: gzip\r\n");
    assert_eq!(
        (r.header("content-encoding"), &r.body[..]),
        (None, &b"plain\n"[..])
    );
    // A copy that is a link out of the root is not served.
    let r = get_with(&server, "/leak.txt", "Accept-Encoding: gzip\r\n");
    assert_eq!(
        (r.header("content-encoding"), &r.body[..]),
        (None, &b"leak\n"[..])
    );
    // HEAD: the copy's head.
    let mut c = server.connect();
    c.send(b"HEAD /style.css HTTP/1.1\r\nHost: t\r\nAccept-Encoding: gzip\r\n\r\n");
    let r = c.read_head_response();
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    assert_eq!(r.header("content-length"), Some("19"));
}

#[test]
fn ranges_and_conditionals_apply_to_the_copy() {
    let tree = Tree::new();
    let server = serve(&tree);
    let gzip = "Accept-Encoding: gzip\r\n";
    let r = get_with(
        &server,
        "/style.css",
        &format!("{gzip}Range: bytes=0-3\r\n"),
    );
    assert_eq!(r.status, 206);
    assert_eq!(r.body, b"GZIP");
    assert_eq!(r.header("content-range"), Some("bytes 0-3/19"));
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    let etag = tree.etag("style.css.gz", ".gz");
    let r = get_with(
        &server,
        "/style.css",
        &format!("{gzip}If-None-Match: {etag}\r\n"),
    );
    assert_eq!(r.status, 304);
    assert_eq!(r.header("etag"), Some(etag.as_str()));
    assert_eq!(r.header("vary"), Some("Accept-Encoding"));
    assert_eq!(r.header("content-encoding"), None);
    // The identity file's tag does not match the copy, nor the copy's the file.
    let plain = tree.etag("style.css", "");
    let r = get_with(
        &server,
        "/style.css",
        &format!("{gzip}If-None-Match: {plain}\r\n"),
    );
    assert_eq!(r.status, 200);
    let r = get_with(&server, "/style.css", &format!("If-None-Match: {etag}\r\n"));
    assert_eq!(r.status, 200);
    assert_eq!(r.body, CSS.as_bytes());
    // If-Range with the copy's tag gives the part of the copy.
    let fields = format!("{gzip}Range: bytes=4-5\r\nIf-Range: {etag}\r\n");
    let r = get_with(&server, "/style.css", &fields);
    assert_eq!((r.status, &r.body[..]), (206, &b"-B"[..]));
}

#[test]
fn off_by_default() {
    let tree = Tree::new();
    let server = common::start(ServeDir::new(tree.root()));
    let r = get_with(&server, "/style.css", "Accept-Encoding: gzip, br\r\n");
    assert_eq!(r.body, CSS.as_bytes());
    assert_eq!(r.header("content-encoding"), None);
    assert_eq!(r.header("vary"), None);
}

#[test]
fn http2_gets_the_copy() {
    let tree = Tree::new();
    let server = serve(&tree);
    let addr = server.addr();
    volt_rt::block_on(async move {
        let mut h2 = connect_h2c(addr).await;
        let req = http::Request::get("http://t/style.css")
            .header("accept-encoding", "gzip")
            .body(())
            .unwrap();
        let r = send(&mut h2, req, Bytes::new()).await;
        assert_eq!(r.status, 200);
        assert_eq!(r.headers["content-encoding"], "gzip");
        assert_eq!(r.headers["vary"], "Accept-Encoding");
        assert_eq!(r.headers["content-type"], "text/css; charset=utf-8");
        assert_eq!(r.body, "GZIP-BYTES-OF-STYLE");
    });
}
