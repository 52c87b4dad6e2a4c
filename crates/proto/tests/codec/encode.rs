//! Exact wire bytes from the encoders.

use http::{HeaderMap, HeaderValue};
use volt_proto::{
    is_h2_preface, write_chunk, write_content_length, write_header, write_last_chunk,
    write_request_line, write_status_line, Method, StatusCode, Version, H2_PREFACE,
};

fn status_line(version: Version, code: u16) -> String {
    let mut out = Vec::new();
    write_status_line(&mut out, version, StatusCode::from_u16(code).unwrap());
    String::from_utf8(out).unwrap()
}

#[test]
fn status_lines() {
    assert_eq!(status_line(Version::HTTP_11, 200), "HTTP/1.1 200 OK\r\n");
    assert_eq!(
        status_line(Version::HTTP_11, 404),
        "HTTP/1.1 404 Not Found\r\n"
    );
    assert_eq!(status_line(Version::HTTP_10, 200), "HTTP/1.0 200 OK\r\n");
    assert_eq!(
        status_line(Version::HTTP_10, 503),
        "HTTP/1.0 503 Service Unavailable\r\n"
    );
    assert_eq!(
        status_line(Version::HTTP_11, 418),
        "HTTP/1.1 418 I'm a teapot\r\n"
    );
    assert_eq!(status_line(Version::HTTP_11, 599), "HTTP/1.1 599 \r\n");
    assert_eq!(status_line(Version::HTTP_2, 200), "HTTP/1.1 200 OK\r\n");
}

#[test]
fn every_status_line_parses_back() {
    for code in 100..=999u16 {
        let line = status_line(Version::HTTP_11, code);
        let mut out = line.clone().into_bytes();
        out.extend_from_slice(b"\r\n");
        let head = volt_proto::parse_response(&out, &Default::default(), true)
            .unwrap()
            .unwrap();
        assert_eq!(head.status.as_u16(), code, "{line:?}");
    }
}

#[test]
fn header_fields() {
    let mut out = Vec::new();
    write_header(&mut out, b"content-type", b"text/plain");
    write_content_length(&mut out, 0);
    write_content_length(&mut out, u64::MAX);
    assert_eq!(
        out,
        b"content-type: text/plain\r\ncontent-length: 0\r\ncontent-length: 18446744073709551615\r\n"
    );
}

#[test]
fn request_lines() {
    let mut out = Vec::new();
    write_request_line(&mut out, &Method::GET, b"/plaintext", Version::HTTP_11);
    write_request_line(
        &mut out,
        &Method::from_bytes(b"PURGE").unwrap(),
        b"*",
        Version::HTTP_10,
    );
    assert_eq!(out, b"GET /plaintext HTTP/1.1\r\nPURGE * HTTP/1.0\r\n");
}

#[test]
fn chunks() {
    let mut out = Vec::new();
    write_chunk(&mut out, b"hello");
    write_chunk(&mut out, b"");
    assert_eq!(out, b"5\r\nhello\r\n");

    let mut out = Vec::new();
    let data = vec![b'z'; 4096];
    write_chunk(&mut out, &data);
    assert_eq!(&out[..6], b"1000\r\n");
    assert_eq!(&out[6..4102], &data[..]);
    assert_eq!(&out[4102..], b"\r\n");
}

#[test]
fn last_chunk() {
    let mut out = Vec::new();
    write_last_chunk(&mut out, None);
    assert_eq!(out, b"0\r\n\r\n");

    let mut trailers = HeaderMap::new();
    trailers.insert("x-checksum", HeaderValue::from_static("abc"));
    trailers.append("x-multi", HeaderValue::from_static("1"));
    trailers.append("x-multi", HeaderValue::from_static("2"));
    let mut out = Vec::new();
    write_last_chunk(&mut out, Some(&trailers));
    assert_eq!(
        out,
        b"0\r\nx-checksum: abc\r\nx-multi: 1\r\nx-multi: 2\r\n\r\n"
    );
    let mut out = Vec::new();
    write_last_chunk(&mut out, Some(&HeaderMap::new()));
    assert_eq!(out, b"0\r\n\r\n");
}

#[test]
fn h2_preface_detection() {
    assert!(is_h2_preface(b"PRI"));
    assert!(is_h2_preface(b"PRI * HTTP/2.0\r\n"));
    assert!(is_h2_preface(H2_PREFACE));
    assert!(is_h2_preface(
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x12\x04"
    ));
    assert!(!is_h2_preface(b""));
    assert!(!is_h2_preface(b"PR"));
    assert!(!is_h2_preface(b"PRX"));
    assert!(!is_h2_preface(b"PRIVATE / HTTP/1.1"));
    assert!(!is_h2_preface(b"GET / HTTP/1.1\r\n"));
}
