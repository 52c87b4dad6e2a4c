//! Request heads: spans, framing, keep-alive, and one test per rejection rule.

use volt_proto::{
    parse_request, BodyKind, Limits, Method, ParseError, ParseError::*, StatusCode, Version,
};

use crate::{get_with, req, req_err};

const TECHEMPOWER: &[u8] = b"GET /plaintext HTTP/1.1\r\n\
Host: server\r\n\
Accept: text/plain,text/html;q=0.9,application/xhtml+xml;q=0.9,*/*;q=0.8\r\n\
Connection: keep-alive\r\n\
User-Agent: Mozilla/5.0\r\n\r\n";

#[test]
fn techempower_plaintext_head() {
    let head = req(TECHEMPOWER);
    assert_eq!(head.method, Method::GET);
    assert_eq!(head.version, Version::HTTP_11);
    assert_eq!(head.target.get(TECHEMPOWER), b"/plaintext");
    assert_eq!(head.head_len, TECHEMPOWER.len());
    assert_eq!(head.body, BodyKind::Empty);
    assert!(head.keep_alive);
    assert!(!head.expect_continue);
    let fields: Vec<(&[u8], &[u8])> = head
        .headers
        .iter()
        .map(|h| (h.name.get(TECHEMPOWER), h.value.get(TECHEMPOWER)))
        .collect();
    assert_eq!(
        fields,
        [
            (&b"Host"[..], &b"server"[..]),
            (
                b"Accept",
                b"text/plain,text/html;q=0.9,application/xhtml+xml;q=0.9,*/*;q=0.8"
            ),
            (b"Connection", b"keep-alive"),
            (b"User-Agent", b"Mozilla/5.0"),
        ]
    );
    assert!(!head.headers.spilled());
    assert_eq!(
        head.header(TECHEMPOWER, "user-agent"),
        Some(&b"Mozilla/5.0"[..])
    );
    assert_eq!(head.header(TECHEMPOWER, "cookie"), None);
}

#[test]
fn value_whitespace_is_trimmed_and_empty_values_allowed() {
    let buf = b"GET / HTTP/1.1\r\nHost:example.com\r\nX-A: \t spaced out \t\r\nX-Empty:\r\nX-Blank:   \r\n\r\n";
    let head = req(buf);
    let values: Vec<&[u8]> = head.headers.iter().map(|h| h.value.get(buf)).collect();
    assert_eq!(values, [&b"example.com"[..], b"spaced out", b"", b""]);
    assert!(head.headers[2].value.is_empty());
}

#[test]
fn obs_text_in_values_is_allowed() {
    let buf = b"GET / HTTP/1.1\r\nHost: a\r\nX-Latin: caf\xe9\r\n\r\n";
    assert_eq!(req(buf).headers[1].value.get(buf), b"caf\xe9");
}

#[test]
fn extension_methods_and_target_forms() {
    let head = req(b"PURGE /cache HTTP/1.1\r\nHost: a\r\n\r\n");
    assert_eq!(head.method.as_str(), "PURGE");
    let forms: &[(&str, &str)] = &[
        ("OPTIONS", "*"),
        ("CONNECT", "example.com:443"),
        ("CONNECT", "127.0.0.1:8080"),
        ("GET", "http://example.com/a?b=c"),
        ("GET", "HTTPS://[::1]:8443"),
        ("GET", "/?q=%23"),
    ];
    for (method, target) in forms {
        let buf = format!("{method} {target} HTTP/1.1\r\nHost: a\r\n\r\n");
        assert_eq!(
            req(buf.as_bytes()).target.get(buf.as_bytes()),
            target.as_bytes()
        );
    }
}

/// RFC 9112 §3.2.2: with an absolute-form target the server takes the host from the target
/// and ignores the `Host` field (which HTTP/1.1 must still send, §3.2).
#[test]
fn absolute_form_target_names_the_host() {
    let buf = b"GET http://example.com:8080/x?y HTTP/1.1\r\nHost: other.org\r\n\r\n";
    let head = req(buf);
    assert_eq!(head.host(buf), Some(&b"example.com:8080"[..]));
    assert_eq!(head.header(buf, "host"), Some(&b"other.org"[..]));
    let buf = b"GET /x HTTP/1.1\r\nHost: other.org\r\n\r\n";
    assert_eq!(req(buf).host(buf), Some(&b"other.org"[..]));
    let buf = b"GET https://[::1]?q HTTP/1.0\r\n\r\n";
    assert_eq!(req(buf).host(buf), Some(&b"[::1]"[..]));
    let buf = b"CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n";
    assert_eq!(req(buf).host(buf), Some(&b"a:443"[..]));
    assert_eq!(volt_proto::absolute_authority(b"http://a/b"), Some(7..8));
    assert_eq!(volt_proto::absolute_authority(b"hTTpS://a:1"), Some(8..11));
    assert_eq!(volt_proto::absolute_authority(b"http://a@b/"), None);
    // Still one Host for HTTP/1.1, and a valid one (§3.2: 400 otherwise).
    assert_eq!(
        req_err(b"GET http://a/ HTTP/1.1\r\n\r\n"),
        volt_proto::ParseError::MissingHost
    );
}

#[test]
fn http10_may_omit_host() {
    let head = req(b"GET / HTTP/1.0\r\n\r\n");
    assert_eq!(head.version, Version::HTTP_10);
    assert!(head.headers.is_empty());
    assert!(!head.keep_alive);
}

#[test]
fn leading_empty_lines_are_skipped() {
    let buf = b"\r\n\r\nGET /x HTTP/1.1\r\nHost: a\r\n\r\n";
    let head = req(buf);
    assert_eq!(head.target.get(buf), b"/x");
    assert_eq!(head.head_len, buf.len());
    assert_eq!(parse_request(b"\r\n", &Limits::default()), Ok(None));
    assert_eq!(parse_request(b"\r\n\r", &Limits::default()), Ok(None));
    assert_eq!(
        req_err(b"\nGET / HTTP/1.1\r\nHost: a\r\n\r\n"),
        InvalidLineEnding
    );
    assert_eq!(
        req_err(b"\r\n\nGET / HTTP/1.1\r\nHost: a\r\n\r\n"),
        InvalidLineEnding
    );
    assert_eq!(
        req_err(b"\rGET / HTTP/1.1\r\nHost: a\r\n\r\n"),
        InvalidLineEnding
    );
    assert_eq!(
        req_err(b" GET / HTTP/1.1\r\nHost: a\r\n\r\n"),
        BadRequestLine
    );
}

#[test]
fn content_length_framing() {
    assert_eq!(
        req(&get_with("Content-Length: 42\r\n")).body,
        BodyKind::Length(42)
    );
    assert_eq!(
        req(&get_with("content-length: 0\r\n")).body,
        BodyKind::Empty
    );
    assert_eq!(
        req(&get_with("Content-Length: 007\r\n")).body,
        BodyKind::Length(7)
    );
    let max = get_with("Content-Length: 18446744073709551615\r\n");
    assert_eq!(req(&max).body, BodyKind::Length(u64::MAX));
}

#[test]
fn identical_content_lengths_are_accepted() {
    let twice = get_with("Content-Length: 5\r\nContent-Length: 5\r\n");
    assert_eq!(req(&twice).body, BodyKind::Length(5));
    assert_eq!(
        req(&get_with("Content-Length: 5, 5 ,5\r\n")).body,
        BodyKind::Length(5)
    );
}

#[test]
fn differing_content_lengths_are_rejected() {
    let twice = get_with("Content-Length: 5\r\nContent-Length: 6\r\n");
    assert_eq!(req_err(&twice), ConflictingContentLength);
    assert_eq!(
        req_err(&get_with("Content-Length: 5, 6\r\n")),
        ConflictingContentLength
    );
    assert_eq!(ConflictingContentLength.status(), StatusCode::BAD_REQUEST);
}

#[test]
fn malformed_content_length_is_rejected() {
    for bad in [
        "",
        "+5",
        "-5",
        "5 5",
        "5a",
        "0x10",
        "1_000",
        "5,",
        ",5",
        "5,,5",
        "1.0",
        "18446744073709551616",
        "99999999999999999999999",
    ] {
        let buf = get_with(&format!("Content-Length: {bad}\r\n"));
        assert_eq!(req_err(&buf), InvalidContentLength, "{bad:?}");
    }
    assert_eq!(InvalidContentLength.status(), StatusCode::BAD_REQUEST);
}

#[test]
fn transfer_encoding_with_content_length_is_rejected() {
    let buf = get_with("Transfer-Encoding: chunked\r\nContent-Length: 5\r\n");
    assert_eq!(req_err(&buf), TransferEncodingWithContentLength);
    let buf = get_with("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n");
    assert_eq!(req_err(&buf), TransferEncodingWithContentLength);
    assert_eq!(
        TransferEncodingWithContentLength.status(),
        StatusCode::BAD_REQUEST
    );
}

#[test]
fn chunked_framing() {
    for te in ["chunked", "Chunked", "CHUNKED", ", chunked ,", "chunked\t"] {
        let buf = get_with(&format!("Transfer-Encoding: {te}\r\n"));
        assert_eq!(req(&buf).body, BodyKind::Chunked, "{te:?}");
    }
}

#[test]
fn transfer_coding_rules() {
    let cases: &[(&str, ParseError)] = &[
        ("Transfer-Encoding: gzip\r\n", ChunkedNotLast),
        ("Transfer-Encoding: chunked, gzip\r\n", ChunkedNotLast),
        (
            "Transfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n",
            ChunkedNotLast,
        ),
        ("Transfer-Encoding: chunked;x=1\r\n", ChunkedNotLast),
        (
            "Transfer-Encoding: gzip, chunked\r\n",
            UnsupportedTransferCoding,
        ),
        (
            "Transfer-Encoding: GZIP\r\nTransfer-Encoding: Chunked\r\n",
            UnsupportedTransferCoding,
        ),
        ("Transfer-Encoding: chunked, chunked\r\n", ChunkedTwice),
        (
            "Transfer-Encoding: chunked\r\nTransfer-Encoding: CHUNKED\r\n",
            ChunkedTwice,
        ),
        ("Transfer-Encoding:\r\n", InvalidTransferEncoding),
        ("Transfer-Encoding: , \r\n", InvalidTransferEncoding),
        (
            "Transfer-Encoding: \"chunked\"\r\n",
            InvalidTransferEncoding,
        ),
        ("Transfer-Encoding: chunked x\r\n", InvalidTransferEncoding),
    ];
    for (fields, want) in cases {
        assert_eq!(&req_err(&get_with(fields)), want, "{fields:?}");
    }
    assert_eq!(ChunkedNotLast.status(), StatusCode::BAD_REQUEST);
    assert_eq!(ChunkedTwice.status(), StatusCode::BAD_REQUEST);
    assert_eq!(
        UnsupportedTransferCoding.status(),
        StatusCode::NOT_IMPLEMENTED
    );
}

#[test]
fn transfer_encoding_on_http10_is_rejected() {
    let buf = b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n";
    assert_eq!(req_err(buf), TransferEncodingOnHttp10);
    assert_eq!(TransferEncodingOnHttp10.status(), StatusCode::BAD_REQUEST);
}

#[test]
fn host_rules() {
    assert_eq!(
        req_err(b"GET / HTTP/1.1\r\nAccept: */*\r\n\r\n"),
        MissingHost
    );
    assert_eq!(req_err(b"GET / HTTP/1.1\r\n\r\n"), MissingHost);
    assert_eq!(req_err(&get_with("Host: example.com\r\n")), DuplicateHost);
    assert_eq!(req_err(&get_with("HOST: other\r\n")), DuplicateHost);
    assert_eq!(
        req_err(b"GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n"),
        DuplicateHost
    );
    assert_eq!(req_err(b"GET / HTTP/1.1\r\nHost: a b\r\n\r\n"), InvalidHost);
    assert_eq!(
        req_err(b"GET / HTTP/1.1\r\nHost: user@a\r\n\r\n"),
        InvalidHost
    );
    assert_eq!(req(b"GET / HTTP/1.1\r\nHost:\r\n\r\n").headers.len(), 1);
    assert_eq!(
        req(b"GET / HTTP/1.1\r\nhost: [::1]:8080\r\n\r\n")
            .headers
            .len(),
        1
    );
    assert_eq!(MissingHost.status(), StatusCode::BAD_REQUEST);
    assert_eq!(DuplicateHost.status(), StatusCode::BAD_REQUEST);
}

#[test]
fn obs_fold_is_rejected() {
    let buf = b"GET / HTTP/1.1\r\nHost: a\r\nX-Long: one\r\n two\r\n\r\n";
    assert_eq!(req_err(buf), ObsFold);
    let buf = b"GET / HTTP/1.1\r\nHost: a\r\nX-Long: one\r\n\ttwo\r\n\r\n";
    assert_eq!(req_err(buf), ObsFold);
    // Whitespace before the first field line is not folding but is rejected the same way.
    assert_eq!(req_err(b"GET / HTTP/1.1\r\n Host: a\r\n\r\n"), ObsFold);
    assert_eq!(ObsFold.status(), StatusCode::BAD_REQUEST);
}

#[test]
fn invalid_header_names_are_rejected() {
    for line in [
        "X(y): 1",
        ": empty name",
        "No-Colon",
        "X\"q: 1",
        "Caf\u{e9}: 1",
        "X/Y: 1",
    ] {
        assert_eq!(
            req_err(&get_with(&format!("{line}\r\n"))),
            InvalidHeaderName,
            "{line:?}"
        );
    }
    assert_eq!(req_err(&get_with("X y: 1\r\n")), InvalidHeaderName);
    assert_eq!(InvalidHeaderName.status(), StatusCode::BAD_REQUEST);
}

#[test]
fn whitespace_before_colon_is_rejected() {
    assert_eq!(req_err(&get_with("X-A : 1\r\n")), WhitespaceBeforeColon);
    assert_eq!(req_err(&get_with("X-A\t: 1\r\n")), WhitespaceBeforeColon);
    assert_eq!(
        req_err(b"GET / HTTP/1.1\r\nHost : a\r\n\r\n"),
        WhitespaceBeforeColon
    );
}

#[test]
fn control_bytes_in_values_are_rejected() {
    for byte in (0u8..0x20)
        .filter(|&b| b != b'\t' && b != b'\r' && b != b'\n')
        .chain([0x7f])
    {
        let mut buf = b"GET / HTTP/1.1\r\nHost: a\r\nX: a".to_vec();
        buf.push(byte);
        buf.extend_from_slice(b"b\r\n\r\n");
        assert_eq!(req_err(&buf), InvalidHeaderValue, "byte {byte:#x}");
    }
    assert_eq!(
        req(b"GET / HTTP/1.1\r\nHost: a\r\nX: a\tb\r\n\r\n")
            .headers
            .len(),
        2
    );
}

#[test]
fn bare_cr_and_lf_are_rejected() {
    let cases: &[&[u8]] = &[
        b"GET / HTTP/1.1\r\nHost: a\r\nX: a\rb\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: a\nX: b\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: a\r\n\n",
        b"GET / HTTP/1.1\nHost: a\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: a\n\n",
        b"GET / HTTP/1.0\n\n",
        b"GET / HTTP/1.1\r\nHost: a\r\n\rX",
        b"GET / HTTP/1.1\rX",
    ];
    for buf in cases {
        assert_eq!(
            req_err(buf),
            InvalidLineEnding,
            "{:?}",
            String::from_utf8_lossy(buf)
        );
    }
    assert_eq!(InvalidLineEnding.status(), StatusCode::BAD_REQUEST);
}

#[test]
fn request_line_rules() {
    let cases: &[(&[u8], ParseError)] = &[
        (b"G(T / HTTP/1.1\r\n", InvalidMethod),
        (b"GE\xc3\xa9 / HTTP/1.1\r\n", InvalidMethod),
        (b"GET\t/ HTTP/1.1\r\n", BadRequestLine),
        (b"GET  / HTTP/1.1\r\n", BadRequestLine),
        (b" / HTTP/1.1\r\n", BadRequestLine),
        (b"GET /\r\n", BadRequestLine),
        (b"GET / HTTP/1.1 \r\n", BadRequestLine),
        (b"GET / HTTP/1.1 extra\r\n", BadRequestLine),
        (b"GET /a\x01b HTTP/1.1\r\n", InvalidTarget),
        (b"GET /a\tb HTTP/1.1\r\n", InvalidTarget),
        (b"GET /a\x7fb HTTP/1.1\r\n", InvalidTarget),
        (b"GET /caf\xc3\xa9 HTTP/1.1\r\n", InvalidTarget),
        (b"GET /a#b HTTP/1.1\r\n", InvalidTarget),
        (b"GET # HTTP/1.1\r\n", InvalidTarget),
        (b"GET ?x=1 HTTP/1.1\r\n", InvalidTarget),
        (b"GET users/1 HTTP/1.1\r\n", InvalidTarget),
        (b"GET 1http://a/ HTTP/1.1\r\n", InvalidTarget),
        (b"GET foo?x=http://a/b HTTP/1.1\r\n", InvalidTarget),
        (b"GET http://a/b#c HTTP/1.1\r\n", InvalidTarget),
        // Absolute form: http or https, `//`, a host (RFC 9110 §4.2.1), no userinfo (§4.2.4).
        (b"GET http://user@a/b HTTP/1.1\r\n", InvalidTarget),
        (b"GET http://u:p@a/ HTTP/1.1\r\n", InvalidTarget),
        (b"GET ftp://a/b HTTP/1.1\r\n", InvalidTarget),
        (b"GET svn+ssh.x-y://h/p HTTP/1.1\r\n", InvalidTarget),
        (b"GET http:/a/b HTTP/1.1\r\n", InvalidTarget),
        (b"GET http:a HTTP/1.1\r\n", InvalidTarget),
        (b"GET http:///b HTTP/1.1\r\n", InvalidTarget),
        (b"GET http://:80/b HTTP/1.1\r\n", InvalidTarget),
        (b"GET http://a:8x/b HTTP/1.1\r\n", InvalidTarget),
        (b"GET * HTTP/1.1\r\n", InvalidTarget),
        (b"POST * HTTP/1.1\r\n", InvalidTarget),
        (b"GET / http/1.1\r\n", InvalidVersion),
        (b"GET / HTTP/1.x\r\n", InvalidVersion),
        (b"GET / HTTP/1\r\n", InvalidVersion),
        (b"GET / HTTP/11.0\r\n", InvalidVersion),
        (b"GET / HTTP/1.10\r\n", InvalidVersion),
        (b"GET / HTTPS/1.1\r\n", InvalidVersion),
        (b"GET / HTTP/2.0\r\n", VersionNotSupported),
        (b"GET / HTTP/2\r\n", VersionNotSupported),
        (b"GET / HTTP/3\r\n", VersionNotSupported),
        (b"GET / HTTP/1.2\r\n", VersionNotSupported),
        (b"GET / HTTP/0.9\r\n", VersionNotSupported),
        (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", Http2Preface),
        (b"PRI * HTTP/2.0\r\n", Http2Preface),
        (b"PRI / HTTP/2.0\r\n", VersionNotSupported),
    ];
    for (line, want) in cases {
        let buf = [line, &b"Host: a\r\n\r\n"[..]].concat();
        assert_eq!(&req_err(&buf), want, "{:?}", String::from_utf8_lossy(line));
    }
    assert_eq!(BadRequestLine.status(), StatusCode::BAD_REQUEST);
    assert_eq!(InvalidVersion.status(), StatusCode::BAD_REQUEST);
    assert_eq!(
        VersionNotSupported.status(),
        StatusCode::HTTP_VERSION_NOT_SUPPORTED
    );
    assert_eq!(
        Http2Preface.status(),
        StatusCode::HTTP_VERSION_NOT_SUPPORTED
    );
}

#[test]
fn unsupported_version_waits_for_the_end_of_the_request_line() {
    let limits = Limits::default();
    assert_eq!(parse_request(b"GET / HTTP/2", &limits), Ok(None));
    assert_eq!(parse_request(b"GET / HTTP/2.0", &limits), Ok(None));
    assert_eq!(
        parse_request(b"GET / HTTP/2.0\r", &limits),
        Err(VersionNotSupported)
    );
    assert_eq!(
        parse_request(b"GET / HTTP/3\r\n", &limits),
        Err(VersionNotSupported)
    );
    assert_eq!(parse_request(b"PRI * HTTP/2.0", &limits), Ok(None));
    assert_eq!(
        parse_request(b"PRI * HTTP/2.0\r\n", &limits),
        Err(Http2Preface)
    );
    // Garbage is refused as soon as it cannot become a version.
    assert_eq!(parse_request(b"GET / HTTX", &limits), Err(InvalidVersion));
}

#[test]
fn keep_alive_rules() {
    let cases: &[(&str, bool)] = &[
        ("GET / HTTP/1.1\r\nHost: a\r\n\r\n", true),
        (
            "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
            false,
        ),
        (
            "GET / HTTP/1.1\r\nHost: a\r\nConnection: CLOSE\r\n\r\n",
            false,
        ),
        (
            "GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, Close\r\n\r\n",
            false,
        ),
        (
            "GET / HTTP/1.1\r\nHost: a\r\nConnection: upgrade\r\nConnection: close\r\n\r\n",
            false,
        ),
        (
            "GET / HTTP/1.1\r\nHost: a\r\nConnection: closed\r\n\r\n",
            true,
        ),
        (
            "GET / HTTP/1.1\r\nHost: a\r\nX-Connection: close\r\n\r\n",
            true,
        ),
        ("GET / HTTP/1.0\r\n\r\n", false),
        ("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", true),
        ("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", true),
        (
            "GET / HTTP/1.0\r\nConnection: foo,  keep-alive \r\n\r\n",
            true,
        ),
        (
            "GET / HTTP/1.0\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n",
            false,
        ),
        ("GET / HTTP/1.0\r\nConnection: keep-alives\r\n\r\n", false),
    ];
    for (buf, want) in cases {
        assert_eq!(req(buf.as_bytes()).keep_alive, *want, "{buf:?}");
    }
}

#[test]
fn expect_continue_rules() {
    let post = |version: &str, fields: &str| {
        format!("POST / {version}\r\nHost: a\r\n{fields}\r\n").into_bytes()
    };
    let expect = "Expect: 100-continue\r\n";
    assert!(req(&post("HTTP/1.1", &format!("{expect}Content-Length: 3\r\n"))).expect_continue);
    assert!(
        req(&post(
            "HTTP/1.1",
            "Expect: 100-Continue\r\nTransfer-Encoding: chunked\r\n"
        ))
        .expect_continue
    );
    // Ignored on HTTP/1.0 and without a body.
    assert!(!req(&post("HTTP/1.0", &format!("{expect}Content-Length: 3\r\n"))).expect_continue);
    assert!(!req(&post("HTTP/1.1", expect)).expect_continue);
    assert!(!req(&post("HTTP/1.1", "Content-Length: 3\r\n")).expect_continue);
    // As a list, and an empty list (no expectation at all).
    assert!(
        req(&post(
            "HTTP/1.1",
            "Expect: , 100-continue\r\nContent-Length: 3\r\n"
        ))
        .expect_continue
    );
    assert!(!req(&post("HTTP/1.1", "Expect: \r\nContent-Length: 3\r\n")).expect_continue);
}

#[test]
fn other_expectations_are_refused_with_417() {
    let post = |version: &str, fields: &str| {
        format!("POST / {version}\r\nHost: a\r\n{fields}\r\n").into_bytes()
    };
    for fields in [
        "Expect: 200-ok\r\nContent-Length: 3\r\n",
        "Expect: 100-continue, x-other\r\nContent-Length: 3\r\n",
        "Expect: 100-continue\r\nExpect: x\r\n",
        "Expect: 100-continue;x=1\r\n",
    ] {
        let err = req_err(&post("HTTP/1.1", fields));
        assert_eq!(err, ParseError::UnsupportedExpectation, "{fields:?}");
        assert_eq!(err.status(), StatusCode::EXPECTATION_FAILED);
    }
    // HTTP/1.0 did not define `Expect`: ignored there.
    assert!(!req(&post("HTTP/1.0", "Expect: 200-ok\r\nContent-Length: 3\r\n")).expect_continue);
}

#[test]
fn pipelined_requests_parse_one_after_another() {
    let first = "POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello";
    let second = "GET /b HTTP/1.1\r\nHost: a\r\n\r\n";
    let third = "GET /c HTTP/1.0\r\n\r\n";
    let buf = format!("{first}{second}{third}").into_bytes();

    let mut rest = &buf[..];
    let mut seen = Vec::new();
    while !rest.is_empty() {
        let head = req(rest);
        seen.push((head.target.get(rest).to_vec(), head.body));
        let body_len = match head.body {
            BodyKind::Length(n) => n as usize,
            _ => 0,
        };
        rest = &rest[head.head_len + body_len..];
    }
    assert_eq!(
        seen,
        [
            (b"/a".to_vec(), BodyKind::Length(5)),
            (b"/b".to_vec(), BodyKind::Empty),
            (b"/c".to_vec(), BodyKind::Empty),
        ]
    );
}

#[test]
fn every_strict_prefix_needs_more() {
    let heads: &[&[u8]] = &[
        TECHEMPOWER,
        b"GET / HTTP/1.0\r\n\r\n",
        b"\r\nPOST /upload?x=1 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nX-Empty:\r\n\r\n",
        b"DELETE /x HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\nConnection: close\r\n\r\n",
    ];
    for head in heads {
        let full = req(head);
        assert_eq!(full.head_len, head.len());
        for end in 0..head.len() {
            assert_eq!(
                parse_request(&head[..end], &Limits::default()),
                Ok(None),
                "prefix {:?}",
                String::from_utf8_lossy(&head[..end])
            );
        }
    }
}

#[test]
fn errors_display_one_line() {
    let all = [
        BadRequestLine,
        InvalidMethod,
        InvalidTarget,
        InvalidVersion,
        VersionNotSupported,
        Http2Preface,
        InvalidStatusLine,
        InvalidLineEnding,
        InvalidHeaderName,
        InvalidHeaderValue,
        WhitespaceBeforeColon,
        ObsFold,
        TransferEncodingWithContentLength,
        ConflictingContentLength,
        InvalidContentLength,
        MissingHost,
        DuplicateHost,
        InvalidHost,
        TransferEncodingOnHttp10,
        InvalidTransferEncoding,
        ChunkedNotLast,
        ChunkedTwice,
        UnsupportedTransferCoding,
        HeadTooLarge,
        TooManyHeaders,
        UriTooLong,
        InvalidChunkSize,
        ChunkSizeOverflow,
        InvalidChunkExtension,
        ChunkLineTooLong,
        InvalidChunk,
        InvalidTrailer,
        TrailersTooLarge,
    ];
    let mut messages = std::collections::HashSet::new();
    for err in all {
        let msg = err.to_string();
        assert!(!msg.is_empty() && !msg.contains('\n'), "{err:?}");
        assert!(messages.insert(msg), "{err:?} repeats a message");
        let _: &dyn std::error::Error = &err;
    }
}

/// One head reused for a connection's requests ends up the same as a fresh head each time,
/// whatever the previous request left in it (more fields, a body, the general path's output).
#[test]
fn parsing_into_a_reused_head_matches_parsing_afresh() {
    let many: String = (0..12).map(|i| format!("X-{i}: {i}\r\n")).collect();
    let heads = [
        format!("GET /a HTTP/1.1\r\nHost: a\r\n{many}\r\n"),
        "POST /b HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n".into(),
        "\r\nGET /leading-empty-line HTTP/1.1\r\nHost: a\r\n\r\n".into(),
        "GET /c HTTP/1.0\r\n\r\n".into(),
        "GET /d HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n".into(),
    ];
    let limits = Limits::default();
    let mut reused = volt_proto::RequestHead::default();
    for _ in 0..2 {
        for head in &heads {
            let fresh = parse_request(head.as_bytes(), &limits).unwrap().unwrap();
            assert!(volt_proto::parse_request_into(head.as_bytes(), &limits, &mut reused).unwrap());
            assert_eq!(reused, fresh, "{head:?}");
        }
    }
    // Unfinished: false, and the error of a rejected head.
    assert!(
        !volt_proto::parse_request_into(b"GET / HTTP/1.1\r\nHo", &limits, &mut reused).unwrap()
    );
    assert_eq!(
        volt_proto::parse_request_into(b"GET / HTTP/1.1\r\n\r\n", &limits, &mut reused),
        Err(MissingHost)
    );
}
