//! Size limits: request target, head size, field count. Each is refused as soon as it is
//! passed, even before the head is complete.

use volt_proto::{parse_request, Limits, ParseError::*, StatusCode};

use crate::{req, req_err, req_err_with};

#[test]
fn uri_too_long() {
    let limits = Limits {
        max_uri_len: 100,
        ..Limits::default()
    };
    let target = format!("/{}", "a".repeat(99));
    let ok = format!("GET {target} HTTP/1.1\r\nHost: a\r\n\r\n");
    let head = parse_request(ok.as_bytes(), &limits).unwrap().unwrap();
    assert_eq!(head.target.len(), 100);

    let long = format!("GET {target}b HTTP/1.1\r\nHost: a\r\n\r\n");
    assert_eq!(req_err_with(long.as_bytes(), &limits), UriTooLong);
    // Still inside the request line: no space or CRLF after the target yet.
    let streaming = format!("GET {target}b");
    assert_eq!(req_err_with(streaming.as_bytes(), &limits), UriTooLong);
    assert_eq!(
        parse_request(format!("GET {target}").as_bytes(), &limits),
        Ok(None)
    );
    assert_eq!(UriTooLong.status(), StatusCode::URI_TOO_LONG);

    // The default limit, on a target far past it.
    let endless = format!("GET /{}", "x".repeat(9000));
    assert_eq!(req_err(endless.as_bytes()), UriTooLong);
}

#[test]
fn head_too_large() {
    let limits = Limits {
        max_head_bytes: 64,
        ..Limits::default()
    };
    let exact = format!("GET / HTTP/1.1\r\nHost: a\r\nX: {}\r\n\r\n", "v".repeat(32));
    assert_eq!(exact.len(), 64);
    assert!(parse_request(exact.as_bytes(), &limits).unwrap().is_some());

    let over = format!("GET / HTTP/1.1\r\nHost: a\r\nX: {}\r\n\r\n", "v".repeat(33));
    assert_eq!(req_err_with(over.as_bytes(), &limits), HeadTooLarge);
    // Unfinished: refused once the buffer holds the limit without a complete head.
    assert_eq!(parse_request(&over.as_bytes()[..63], &limits), Ok(None));
    assert_eq!(req_err_with(&over.as_bytes()[..64], &limits), HeadTooLarge);
    assert_eq!(
        HeadTooLarge.status(),
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE
    );

    let endless = format!("GET / HTTP/1.1\r\nHost: a\r\nX: {}", "v".repeat(20_000));
    assert_eq!(req_err(endless.as_bytes()), HeadTooLarge);
    let blank_lines = "\r\n".repeat(10_000);
    assert_eq!(req_err(blank_lines.as_bytes()), HeadTooLarge);
}

fn with_fields(n: usize) -> Vec<u8> {
    let mut buf = b"GET / HTTP/1.1\r\nHost: a\r\n".to_vec();
    for i in 1..n {
        buf.extend_from_slice(format!("X-{i}: {i}\r\n").as_bytes());
    }
    buf.extend_from_slice(b"\r\n");
    buf
}

#[test]
fn too_many_headers() {
    let limits = Limits {
        max_headers: 10,
        ..Limits::default()
    };
    assert_eq!(
        parse_request(&with_fields(10), &limits)
            .unwrap()
            .unwrap()
            .headers
            .len(),
        10
    );
    assert_eq!(req_err_with(&with_fields(11), &limits), TooManyHeaders);
    assert_eq!(
        TooManyHeaders.status(),
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE
    );

    // Defaults: 100 fields, more than the stack array holds.
    let buf = with_fields(100);
    let head = req(&buf);
    assert_eq!(head.headers.len(), 100);
    assert_eq!(head.headers[99].name.get(&buf), b"X-99");
    assert_eq!(head.headers[99].value.get(&buf), b"99");
    assert_eq!(req_err(&with_fields(101)), TooManyHeaders);
    // An unfinished head is refused as soon as the extra field line is complete.
    let mut partial = with_fields(101);
    partial.truncate(partial.len() - 2);
    assert_eq!(req_err(&partial), TooManyHeaders);

    let limits = Limits {
        max_headers: 64,
        ..Limits::default()
    };
    assert_eq!(
        parse_request(&with_fields(64), &limits)
            .unwrap()
            .unwrap()
            .headers
            .len(),
        64
    );
    assert_eq!(req_err_with(&with_fields(65), &limits), TooManyHeaders);
}

#[test]
fn a_huge_field_limit_does_not_allocate_a_huge_array() {
    let limits = Limits {
        max_headers: usize::MAX,
        ..Limits::default()
    };
    let buf = with_fields(150);
    assert_eq!(
        parse_request(&buf, &limits).unwrap().unwrap().headers.len(),
        150
    );
    let mut decoder = volt_proto::BodyDecoder::with_limits(volt_proto::BodyKind::Chunked, &limits);
    assert_eq!(decoder.decode(b"0\r\nA: 1\r\n\r\n"), Ok((11, None)));
    assert_eq!(decoder.take_trailers().len(), 1);
}
