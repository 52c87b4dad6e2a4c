//! Response heads: status line, body framing per RFC 9112 §6.3, keep-alive, rejections.

use volt_proto::{parse_response, BodyKind, Limits, ParseError::*, StatusCode, Version};

use crate::{res, res_err};

#[test]
fn status_line_and_fields() {
    let buf =
        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n\r\nHello, World!";
    let head = res(buf, false);
    assert_eq!(head.version, Version::HTTP_11);
    assert_eq!(head.status, StatusCode::OK);
    assert_eq!(head.reason.get(buf), b"OK");
    assert_eq!(head.head_len, buf.len() - 13);
    assert_eq!(head.body, BodyKind::Length(13));
    assert!(head.keep_alive);
    assert_eq!(head.headers.len(), 2);
    assert_eq!(head.headers[0].name.get(buf), b"Content-Type");
    assert_eq!(head.headers[0].value.get(buf), b"text/plain");
    assert_eq!(head.header(buf, "content-length"), Some(&b"13"[..]));
}

#[test]
fn reason_phrases() {
    let buf = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
    assert_eq!(res(buf, false).reason.get(buf), b"Not Found");
    let buf = b"HTTP/1.1 200 \r\nContent-Length: 0\r\n\r\n";
    let head = res(buf, false);
    assert!(head.reason.is_empty());
    assert_eq!(head.reason.start, 13);
    // Some servers leave out the SP before an empty reason.
    let buf = b"HTTP/1.1 204\r\n\r\n";
    let head = res(buf, false);
    assert!(head.reason.is_empty());
    assert_eq!(head.status, StatusCode::NO_CONTENT);
    let buf = b"HTTP/1.0 200 Fine\tand caf\xe9\r\n\r\n";
    assert_eq!(res(buf, false).reason.get(buf), b"Fine\tand caf\xe9");
}

#[test]
fn bodiless_responses() {
    for status in [
        "100 Continue",
        "101 Switching Protocols",
        "103 Early Hints",
        "204 No Content",
        "304 Not Modified",
    ] {
        let buf = format!("HTTP/1.1 {status}\r\nContent-Length: 10\r\n\r\n");
        let head = res(buf.as_bytes(), false);
        assert_eq!(head.body, BodyKind::Empty, "{status}");
        assert!(head.keep_alive, "{status}");
    }
    let head_response = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n";
    assert_eq!(res(head_response, true).body, BodyKind::Empty);
    let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    assert_eq!(res(chunked, true).body, BodyKind::Empty);
    let neither = b"HTTP/1.1 200 OK\r\n\r\n";
    let head = res(neither, true);
    assert_eq!(head.body, BodyKind::Empty);
    assert!(head.keep_alive);
}

#[test]
fn framing() {
    let cases: &[(&str, BodyKind, bool)] = &[
        ("Content-Length: 5\r\n", BodyKind::Length(5), true),
        ("Content-Length: 0\r\n", BodyKind::Empty, true),
        (
            "Content-Length: 5\r\nContent-Length: 5\r\n",
            BodyKind::Length(5),
            true,
        ),
        ("Transfer-Encoding: chunked\r\n", BodyKind::Chunked, true),
        (
            "Transfer-Encoding: gzip, chunked\r\n",
            BodyKind::Chunked,
            true,
        ),
        ("Transfer-Encoding: gzip\r\n", BodyKind::Eof, false),
        ("Transfer-Encoding: chunked, gzip\r\n", BodyKind::Eof, false),
        // TE wins over CL, and the connection is not reused after such a response.
        (
            "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n",
            BodyKind::Chunked,
            false,
        ),
        ("", BodyKind::Eof, false),
        (
            "Connection: close\r\nContent-Length: 5\r\n",
            BodyKind::Length(5),
            false,
        ),
    ];
    for (fields, body, keep_alive) in cases {
        let buf = format!("HTTP/1.1 200 OK\r\n{fields}\r\n");
        let head = res(buf.as_bytes(), false);
        assert_eq!(
            (head.body, head.keep_alive),
            (*body, *keep_alive),
            "{fields:?}"
        );
    }
}

#[test]
fn http10_keep_alive() {
    let plain = b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n";
    assert!(!res(plain, false).keep_alive);
    let kept = b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\n";
    assert!(res(kept, false).keep_alive);
    let eof = b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n\r\n";
    let head = res(eof, false);
    assert_eq!((head.body, head.keep_alive), (BodyKind::Eof, false));
}

#[test]
fn rejections() {
    let cases: &[(&[u8], volt_proto::ParseError)] = &[
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
            ConflictingContentLength,
        ),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
            InvalidContentLength,
        ),
        (
            b"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            TransferEncodingOnHttp10,
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n",
            ChunkedTwice,
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: ,\r\n\r\n",
            InvalidTransferEncoding,
        ),
        (b"HTTP/2.0 200 OK\r\n\r\n", VersionNotSupported),
        (b"HTTP/2 200\r\n\r\n", VersionNotSupported),
        (b"HTTX/1.1 200 OK\r\n\r\n", InvalidStatusLine),
        (b"HTTP/1.1 20 OK\r\n\r\n", InvalidStatusLine),
        (b"HTTP/1.1 2000 OK\r\n\r\n", InvalidStatusLine),
        (b"HTTP/1.1 099 Odd\r\n\r\n", InvalidStatusLine),
        (b"HTTP/1.1  200 OK\r\n\r\n", InvalidStatusLine),
        (b"HTTP/1.1 200 O\x01K\r\n\r\n", InvalidStatusLine),
        (b"HTTP/1.1 200 OK\n\r\n", InvalidLineEnding),
        (b"HTTP/1.1 200 OK\r\nX: 1\n\r\n", InvalidLineEnding),
        (b"HTTP/1.1 200 OK\r\n\n", InvalidLineEnding),
        (b"HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\r\n", ObsFold),
        (b"HTTP/1.1 200 OK\r\nX : a\r\n\r\n", WhitespaceBeforeColon),
        (b"HTTP/1.1 200 OK\r\nX: a\x00\r\n\r\n", InvalidHeaderValue),
        (b"HTTP/1.1 200 OK\r\nX[]: a\r\n\r\n", InvalidHeaderName),
    ];
    for (buf, want) in cases {
        assert_eq!(&res_err(buf), want, "{:?}", String::from_utf8_lossy(buf));
    }
    assert_eq!(InvalidStatusLine.status(), StatusCode::BAD_GATEWAY);
}

#[test]
fn limits_apply_to_responses() {
    let limits = Limits {
        max_head_bytes: 40,
        max_headers: 2,
        ..Limits::default()
    };
    let big = format!("HTTP/1.1 200 OK\r\nX: {}\r\n\r\n", "v".repeat(40));
    assert_eq!(
        parse_response(big.as_bytes(), &limits, false),
        Err(HeadTooLarge)
    );
    let many = b"HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n";
    assert_eq!(parse_response(many, &limits, false), Err(TooManyHeaders));
}

#[test]
fn every_strict_prefix_needs_more() {
    let heads: &[&[u8]] = &[
        b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\n",
        b"HTTP/1.1 204\r\n\r\n",
        b"HTTP/1.1 404 Not Found\r\nServer: volt\r\nTransfer-Encoding: chunked\r\n\r\n",
    ];
    for head in heads {
        let limits = Limits::default();
        assert!(parse_response(head, &limits, false).unwrap().is_some());
        for end in 0..head.len() {
            let got = parse_response(&head[..end], &limits, false);
            assert_eq!(
                got,
                Ok(None),
                "prefix {:?}",
                String::from_utf8_lossy(&head[..end])
            );
        }
    }
}

#[test]
fn pipelined_responses() {
    let buf = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhiHTTP/1.1 204 No Content\r\n\r\n";
    let first = res(buf, false);
    assert_eq!(first.status, StatusCode::CONTINUE);
    let rest = &buf[first.head_len..];
    let second = res(rest, false);
    assert_eq!(
        (second.status, second.body),
        (StatusCode::OK, BodyKind::Length(2))
    );
    let rest = &rest[second.head_len + 2..];
    let third = res(rest, false);
    assert_eq!(third.status, StatusCode::NO_CONTENT);
    assert_eq!(third.head_len, rest.len());
}
