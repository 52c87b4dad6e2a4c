//! `ServeDir` answering several byte ranges with multipart/byteranges (RFC 9110 §14.6), over a
//! real socket: exact bodies for two and three parts, coalescing, the order kept, dropped
//! unsatisfiable ranges, the cap on parts, a body too large to read whole, HEAD, If-Range,
//! precompressed copies, HTTP/2; and `ServeDir::cache_control`.

mod common;
mod h2common;

use std::fs;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::{RawResponse, TestServer, XorShift};
use h2common::get_h2c;
use volt_http::ServeDir;

/// `offsets.txt`: 20 lines of 10 bytes, each its own offset (`000000120\n` at 120), so any
/// range reads as where it comes from.
fn offsets() -> String {
    (0..20).map(|i| format!("{:09}\n", i * 10)).collect()
}

/// `style.css`: as long as `offsets.txt`, which is its `.gz` copy, but other bytes.
fn css() -> String {
    offsets().replace('\n', ";")
}

/// `big.bin`: 300,000 bytes of varied data, more than four reads of 64 KiB.
fn big() -> Vec<u8> {
    let mut rng = XorShift(0xb16);
    (0..300_000).map(|_| rng.next() as u8).collect()
}

/// A directory of files made for the test, removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new() -> Dir {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("volt-ranges-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("sub")).unwrap();
        fs::write(dir.join("offsets.txt"), offsets()).unwrap();
        fs::write(dir.join("big.bin"), big()).unwrap();
        fs::write(dir.join("style.css"), css()).unwrap();
        // Not real gzip: the server never looks inside.
        fs::write(dir.join("style.css.gz"), offsets()).unwrap();
        Dir(dir)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// A server of a fresh [`Dir`], with default options.
fn serve() -> (Dir, TestServer) {
    let dir = Dir::new();
    let server = common::start(ServeDir::new(&dir.0));
    (dir, server)
}

fn get_with(server: &TestServer, path: &str, fields: &str) -> RawResponse {
    let mut c = server.connect();
    c.send(format!("GET {path} HTTP/1.1\r\nHost: t\r\n{fields}\r\n").as_bytes());
    c.read_response()
}

fn ranges(server: &TestServer, path: &str, range: &str) -> RawResponse {
    get_with(server, path, &format!("Range: {range}\r\n"))
}

/// The boundary of a multipart/byteranges answer, checked to be 24 hex digits.
fn boundary(r: &RawResponse) -> String {
    let content_type = r.header("content-type").unwrap_or_default();
    let boundary = content_type
        .strip_prefix("multipart/byteranges; boundary=")
        .unwrap_or_else(|| panic!("not multipart/byteranges: {}", r.text()));
    assert_eq!(boundary.len(), 24, "{boundary}");
    assert!(
        boundary.bytes().all(|b| b.is_ascii_hexdigit()),
        "{boundary}"
    );
    boundary.to_owned()
}

/// Asserts `r` is a 206 whose body is `multipart` of `parts` of `data`.
fn assert_parts(r: &RawResponse, part_type: &str, data: &[u8], parts: &[(usize, usize)]) {
    assert_eq!((r.status, r.header("content-range")), (206, None));
    let expected = multipart(&boundary(r), part_type, data, parts);
    // Not assert_eq: a large body would flood the output.
    assert!(r.body == expected, "{parts:?}: the body differs");
}

/// The multipart/byteranges body with `parts` (inclusive) of `data`, each typed `part_type`.
fn multipart(boundary: &str, part_type: &str, data: &[u8], parts: &[(usize, usize)]) -> Vec<u8> {
    let mut body = Vec::new();
    for (i, &(start, end)) in parts.iter().enumerate() {
        let crlf = if i == 0 { "" } else { "\r\n" };
        let len = data.len();
        body.extend_from_slice(
            format!(
                "{crlf}--{boundary}\r\nContent-Type: {part_type}\r\n\
                 Content-Range: bytes {start}-{end}/{len}\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend_from_slice(&data[start..=end]);
    }
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    body
}

const TEXT: &str = "text/plain; charset=utf-8";
const OCTETS: &str = "application/octet-stream";

#[test]
fn two_ranges_are_two_parts_in_the_request_order() {
    let (_dir, server) = serve();
    let plain = get_with(&server, "/offsets.txt", "");
    let (etag, modified) = (
        plain.header("etag").unwrap(),
        plain.header("last-modified").unwrap(),
    );
    // An open range, then one before it: sent in that order.
    let r = ranges(&server, "/offsets.txt", "bytes=190-,0-9");
    let b = boundary(&r);
    let body = format!(
        "--{b}\r\nContent-Type: {TEXT}\r\nContent-Range: bytes 190-199/200\r\n\r\n\
         000000190\n\r\n\
         --{b}\r\nContent-Type: {TEXT}\r\nContent-Range: bytes 0-9/200\r\n\r\n\
         000000000\n\r\n\
         --{b}--\r\n"
    );
    assert_eq!(
        r.text(),
        format!(
            "HTTP/1.1 206 Partial Content\r\nServer: volt\r\nDate: <date>\r\n\
             Content-Type: multipart/byteranges; boundary={b}\r\netag: {etag}\r\n\
             last-modified: {modified}\r\naccept-ranges: bytes\r\ncontent-length: {}\r\n\r\n\
             {body}",
            body.len()
        )
    );
    // A fresh boundary for each answer.
    let again = ranges(&server, "/offsets.txt", "bytes=190-,0-9");
    assert_ne!(boundary(&again), b);
}

#[test]
fn three_ranges_with_a_suffix_range_first() {
    let (_dir, server) = serve();
    let r = ranges(&server, "/offsets.txt", "bytes=-5, 0-9 ,100-109");
    assert_eq!(r.status, 206);
    assert_eq!(r.header("content-range"), None);
    let b = boundary(&r);
    assert_eq!(
        r.body_text(),
        format!(
            "--{b}\r\nContent-Type: {TEXT}\r\nContent-Range: bytes 195-199/200\r\n\r\n\
             0190\n\r\n\
             --{b}\r\nContent-Type: {TEXT}\r\nContent-Range: bytes 0-9/200\r\n\r\n\
             000000000\n\r\n\
             --{b}\r\nContent-Type: {TEXT}\r\nContent-Range: bytes 100-109/200\r\n\r\n\
             000000100\n\r\n\
             --{b}--\r\n"
        )
    );
    assert_eq!(
        r.header("content-length"),
        Some(r.body.len().to_string().as_str())
    );
}

#[test]
fn overlapping_and_nearby_ranges_are_coalesced() {
    let (_dir, server) = serve();
    let text = offsets();
    let single = |range: &str| {
        let r = ranges(&server, "/offsets.txt", range);
        assert_eq!(r.status, 206, "{range}");
        assert_eq!(r.header("content-type"), Some(TEXT), "{range}");
        (r.header("content-range").map(str::to_owned), r.body_text())
    };
    let some = |s: &str| Some(s.to_owned());
    // Overlapping and adjacent: one part.
    assert_eq!(
        single("bytes=0-9,5-19,20-29"),
        (some("bytes 0-29/200"), text[..30].to_owned())
    );
    // 79 bytes apart: one part, the bytes between included.
    assert_eq!(
        single("bytes=0-9,89-99"),
        (some("bytes 0-99/200"), text[..100].to_owned())
    );
    // Asked for many times over: once.
    assert_eq!(
        single("bytes=0-,0-,-200,0-199"),
        (some("bytes 0-199/200"), text.clone())
    );
    // 80 bytes apart: two parts.
    let r = ranges(&server, "/offsets.txt", "bytes=0-9,90-99");
    assert_parts(&r, TEXT, text.as_bytes(), &[(0, 9), (90, 99)]);
    // A merged part takes its earliest range's place.
    let r = ranges(&server, "/offsets.txt", "bytes=100-109,0-9,105-120");
    assert_parts(&r, TEXT, text.as_bytes(), &[(100, 120), (0, 9)]);
}

#[test]
fn unsatisfiable_ranges_are_dropped() {
    let (_dir, server) = serve();
    let r = ranges(&server, "/offsets.txt", "bytes=500-600,0-4,200-");
    assert_eq!(r.status, 206);
    assert_eq!(r.header("content-type"), Some(TEXT));
    assert_eq!(r.header("content-range"), Some("bytes 0-4/200"));
    assert_eq!(r.body, b"00000");
    let r = ranges(&server, "/offsets.txt", "bytes=500-600,-0,200-");
    assert_eq!(r.status, 416);
    assert_eq!(r.header("content-range"), Some("bytes */200"));
    // A malformed range among good ones: the field is refused.
    assert_eq!(ranges(&server, "/offsets.txt", "bytes=0-4,9-8").status, 400);
}

#[test]
fn more_than_sixteen_parts_get_the_whole_file() {
    let (_dir, server) = serve();
    let data = big();
    let field = |n: usize| {
        let list: Vec<String> = (0..n)
            .map(|i| format!("{}-{}", i * 1000, i * 1000 + 9))
            .collect();
        format!("bytes={}", list.join(","))
    };
    let r = ranges(&server, "/big.bin", &field(17));
    assert_eq!((r.status, r.header("content-range")), (200, None));
    assert!(r.body == data, "the body differs from the file");
    let r = ranges(&server, "/big.bin", &field(16));
    let parts: Vec<(usize, usize)> = (0..16).map(|i| (i * 1000, i * 1000 + 9)).collect();
    assert_parts(&r, OCTETS, &data, &parts);
}

/// A multipart body larger than one read is streamed from the file; the bytes are the same.
#[test]
fn a_large_multipart_body_arrives_intact() {
    let (_dir, server) = serve();
    let data = big();
    let mut c = server.connect();
    let range = "bytes=70000-199999,0-99,250000-";
    c.send(format!("GET /big.bin HTTP/1.1\r\nHost: t\r\nRange: {range}\r\n\r\n").as_bytes());
    let r = c.read_response();
    // The client reads exactly Content-Length bytes: a wrong length fails the comparison,
    // or the next response on the connection.
    assert_parts(
        &r,
        OCTETS,
        &data,
        &[(70_000, 199_999), (0, 99), (250_000, 299_999)],
    );
    // The connection goes on.
    c.send(b"GET /offsets.txt HTTP/1.1\r\nHost: t\r\nRange: bytes=0-1,-2\r\n\r\n");
    let r = c.read_response();
    assert_parts(&r, TEXT, offsets().as_bytes(), &[(0, 1), (198, 199)]);
}

#[test]
fn head_and_a_false_if_range_get_the_whole_file() {
    let (_dir, server) = serve();
    let mut c = server.connect();
    c.send(b"HEAD /offsets.txt HTTP/1.1\r\nHost: t\r\nRange: bytes=0-1,100-101\r\n\r\n");
    let r = c.read_head_response();
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some(TEXT));
    assert_eq!(r.header("content-length"), Some("200"));
    let etag = get_with(&server, "/offsets.txt", "")
        .header("etag")
        .unwrap()
        .to_owned();
    let if_range = |value: &str| {
        let fields = format!("Range: bytes=0-1,100-101\r\nIf-Range: {value}\r\n");
        get_with(&server, "/offsets.txt", &fields)
    };
    let r = if_range("\"old\"");
    assert_eq!((r.status, r.body_text()), (200, offsets()));
    let r = if_range(&etag);
    assert_parts(&r, TEXT, offsets().as_bytes(), &[(0, 1), (100, 101)]);
}

/// The parts are of the copy's bytes, and name its coding in their heads: the multipart body
/// itself is not encoded, so the answer has no `Content-Encoding`.
#[test]
fn a_precompressed_copy_has_parts_of_its_own_bytes() {
    let dir = Dir::new();
    let server = common::start(ServeDir::new(&dir.0).precompressed(true));
    let fields = "Accept-Encoding: gzip\r\nRange: bytes=0-3,100-109\r\n";
    let r = get_with(&server, "/style.css", fields);
    assert_eq!(r.status, 206);
    assert_eq!(r.header("content-encoding"), None);
    assert_eq!(r.header("vary"), Some("Accept-Encoding"));
    assert!(r.header("etag").unwrap().ends_with(".gz\""));
    let b = boundary(&r);
    let css_type = "text/css; charset=utf-8";
    assert_eq!(
        r.body_text(),
        format!(
            "--{b}\r\nContent-Type: {css_type}\r\nContent-Encoding: gzip\r\n\
             Content-Range: bytes 0-3/200\r\n\r\n0000\r\n\
             --{b}\r\nContent-Type: {css_type}\r\nContent-Encoding: gzip\r\n\
             Content-Range: bytes 100-109/200\r\n\r\n000000100\n\r\n--{b}--\r\n"
        )
    );
    // Without the coding accepted: parts of the file itself.
    let r = get_with(&server, "/style.css", "Range: bytes=0-3,-2\r\n");
    assert_parts(&r, css_type, css().as_bytes(), &[(0, 3), (198, 199)]);
}

#[test]
fn over_http2_too() {
    let (_dir, server) = serve();
    let range = [("range", "bytes=-100000,0-9")];
    let r = volt_rt::block_on(get_h2c(server.addr(), "/big.bin", &range));
    assert_eq!(r.status, 206);
    let content_type = r.headers["content-type"].to_str().unwrap();
    let b = content_type
        .strip_prefix("multipart/byteranges; boundary=")
        .unwrap();
    let expected = multipart(b, OCTETS, &big(), &[(200_000, 299_999), (0, 9)]);
    let length = expected.len().to_string();
    assert_eq!(r.headers["content-length"], length.as_str());
    assert!(r.body == expected, "the body differs");
}

#[test]
fn cache_control_is_sent_with_file_answers_only() {
    let dir = Dir::new();
    let files = ServeDir::new(&dir.0).cache_control("public, max-age=3600");
    let server = common::start(files);
    let cache_control = |r: &RawResponse| r.header("cache-control").map(str::to_owned);
    let expected = Some("public, max-age=3600".to_owned());
    let r = get_with(&server, "/offsets.txt", "");
    assert_eq!((r.status, cache_control(&r)), (200, expected.clone()));
    let etag = r.header("etag").unwrap().to_owned();
    let with = |fields: &str| {
        let r = get_with(&server, "/offsets.txt", fields);
        (r.status, cache_control(&r))
    };
    assert_eq!(with("Range: bytes=0-1\r\n"), (206, expected.clone()));
    assert_eq!(
        with("Range: bytes=0-1,100-101\r\n"),
        (206, expected.clone())
    );
    assert_eq!(
        with(&format!("If-None-Match: {etag}\r\n")),
        (304, expected.clone())
    );
    // Errors, redirects and listings have none.
    assert_eq!(with("Range: bytes=500-\r\n"), (416, None));
    assert_eq!(with("If-Match: \"x\"\r\n"), (412, None));
    assert_eq!(with("Range: bytes=x\r\n"), (400, None));
    for (path, status) in [("/missing.txt", 404), ("/sub", 301), ("/sub/", 200)] {
        let r = get_with(&server, path, "");
        assert_eq!((r.status, cache_control(&r)), (status, None), "{path}");
    }
    // The whole head of a 304: the validators, then Cache-Control.
    let r = get_with(
        &server,
        "/offsets.txt",
        &format!("If-None-Match: {etag}\r\n"),
    );
    let modified = r.header("last-modified").unwrap();
    assert_eq!(
        r.text(),
        format!(
            "HTTP/1.1 304 Not Modified\r\nServer: volt\r\nDate: <date>\r\n\
             etag: {etag}\r\nlast-modified: {modified}\r\ncache-control: public, max-age=3600\r\n\r\n"
        )
    );
    // Off by default.
    drop(server);
    let server = common::start(ServeDir::new(&dir.0));
    assert_eq!(cache_control(&get_with(&server, "/offsets.txt", "")), None);
}

#[test]
#[should_panic(expected = "invalid Cache-Control value")]
fn an_invalid_cache_control_value_panics() {
    let _ = ServeDir::new(".").cache_control("max-age=1\r\nSet-Cookie: x=1");
}
