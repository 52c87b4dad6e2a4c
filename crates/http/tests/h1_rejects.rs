//! Every request the server must refuse: the exact answer, the close after it, and that other
//! connections — one already open on the same worker and a new one — keep being served.

mod common;

use common::{echo_app as app, error_close, text_response, TestServer};
use volt_http::Config;

fn small_limits() -> Config {
    Config {
        max_head_bytes: 1024,
        max_headers: 10,
        max_uri_bytes: 256,
        max_body_bytes: 1000,
        ..Default::default()
    }
}

/// Sends `request` on a fresh connection while another connection stays open, and checks the
/// exact answer, that the connection is then closed, and that the server still serves both the
/// open connection and new ones.
fn assert_rejected_with(config: Config, request: &[u8], expected: &str) {
    let server = common::start_with(1, config, app());
    let mut bystander = server.connect();
    bystander.send(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(bystander.read_response().status, 200);

    let mut c = server.connect();
    c.send(request);
    assert_eq!(c.read_response().text(), expected);
    c.expect_closed();

    bystander.send(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nok");
    assert_eq!(
        bystander.read_response().text(),
        text_response("200 OK", "", "ok")
    );
    assert_eq!(server.get("/"), text_response("200 OK", "", ""));
    server.shutdown();
}

fn assert_rejected(request: &[u8], expected: &str) {
    assert_rejected_with(small_limits(), request, expected);
}

fn bad_request(message: &str) -> String {
    error_close("400 Bad Request", message)
}

#[test]
fn transfer_encoding_with_content_length_is_400() {
    assert_rejected(
        b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n",
        &bad_request("both Transfer-Encoding and Content-Length"),
    );
}

#[test]
fn content_length_with_transfer_encoding_is_400() {
    assert_rejected(
        b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\nhello",
        &bad_request("both Transfer-Encoding and Content-Length"),
    );
}

#[test]
fn differing_duplicate_content_length_is_400() {
    assert_rejected(
        b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
        &bad_request("conflicting Content-Length values"),
    );
}

#[test]
fn differing_content_length_list_is_400() {
    assert_rejected(
        b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 5, 6\r\n\r\nhello!",
        &bad_request("conflicting Content-Length values"),
    );
}

#[test]
fn identical_duplicate_content_length_is_accepted() {
    let server = common::start(app());
    let mut c = server.connect();
    c.send(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello");
    assert_eq!(
        c.read_response().text(),
        text_response("200 OK", "", "hello")
    );
}

#[test]
fn non_numeric_content_length_is_400() {
    assert_rejected(
        b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: +5\r\n\r\nhello",
        &bad_request("invalid Content-Length"),
    );
}

#[test]
fn content_length_overflowing_u64_is_400() {
    assert_rejected(
        b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 99999999999999999999\r\n\r\n",
        &bad_request("invalid Content-Length"),
    );
}

#[test]
fn bad_chunk_size_is_400() {
    assert_rejected(
        b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
        &bad_request("invalid chunk size"),
    );
}

#[test]
fn overflowing_chunk_size_is_400() {
    assert_rejected(
        b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000000\r\nx\r\n0\r\n\r\n",
        &bad_request("chunk size too large"),
    );
}

#[test]
fn chunk_without_crlf_after_data_is_400() {
    assert_rejected(
        b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n",
        &bad_request("malformed chunk framing"),
    );
}

/// A handler that never reads the body still must not let a broken chunked body pass as the
/// end of the message: the bytes after it cannot be trusted to be a request. The handler's
/// answer goes out (the fault is found while skipping the body after it), then the connection
/// closes without answering the "request" hidden behind the bad chunk.
#[test]
fn bad_chunk_size_in_an_unread_body_closes_the_connection() {
    let server = common::start(app());
    let mut c = server.connect();
    c.send(b"POST /ignore HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nGET / HTTP/1.1\r\nHost: t\r\n\r\n");
    let r = c.read_response();
    assert_eq!(r.status, 200);
    assert_eq!(r.body_text(), "ignored");
    c.expect_closed();
    assert_eq!(server.get("/"), text_response("200 OK", "", ""));
}

#[test]
fn obs_fold_is_400() {
    assert_rejected(
        b"GET / HTTP/1.1\r\nHost: t\r\nX-Folded: a\r\n b\r\n\r\n",
        &bad_request("header line starts with whitespace (obsolete line folding)"),
    );
}

#[test]
fn control_byte_in_header_name_is_400() {
    assert_rejected(
        b"GET / HTTP/1.1\r\nHost: t\r\nX-\x01Name: v\r\n\r\n",
        &bad_request("invalid header field name"),
    );
}

#[test]
fn delimiter_in_header_name_is_400() {
    assert_rejected(
        b"GET / HTTP/1.1\r\nHost: t\r\nX(Name): v\r\n\r\n",
        &bad_request("invalid header field name"),
    );
}

#[test]
fn whitespace_before_colon_is_400() {
    assert_rejected(
        b"GET / HTTP/1.1\r\nHost: t\r\nX-Name : v\r\n\r\n",
        &bad_request("whitespace between header field name and colon"),
    );
}

#[test]
fn control_byte_in_header_value_is_400() {
    assert_rejected(
        b"GET / HTTP/1.1\r\nHost: t\r\nX-Name: a\x01b\r\n\r\n",
        &bad_request("invalid byte in header field value"),
    );
}

#[test]
fn del_in_header_value_is_400() {
    assert_rejected(
        b"GET / HTTP/1.1\r\nHost: t\r\nX-Name: a\x7fb\r\n\r\n",
        &bad_request("invalid byte in header field value"),
    );
}

#[test]
fn bare_lf_line_ending_is_400() {
    assert_rejected(
        b"GET / HTTP/1.1\nHost: t\n\n",
        &bad_request("line not terminated by CRLF (bare CR or LF)"),
    );
}

#[test]
fn missing_host_on_http11_is_400() {
    assert_rejected(
        b"GET / HTTP/1.1\r\nAccept: */*\r\n\r\n",
        &bad_request("HTTP/1.1 request without Host"),
    );
}

#[test]
fn duplicate_host_is_400() {
    assert_rejected(
        b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
        &bad_request("more than one Host field"),
    );
}

#[test]
fn missing_host_on_http10_is_accepted() {
    let server = common::start(app());
    let mut c = server.connect();
    c.send(b"GET / HTTP/1.0\r\n\r\n");
    assert_eq!(c.read_response().status, 200);
}

#[test]
fn transfer_encoding_on_http10_is_400() {
    assert_rejected(
        b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        &bad_request("Transfer-Encoding in an HTTP/1.0 message"),
    );
}

#[test]
fn unknown_transfer_coding_is_501() {
    assert_rejected(
        b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
        &error_close("501 Not Implemented", "unsupported transfer coding"),
    );
}

#[test]
fn final_transfer_coding_not_chunked_is_400() {
    assert_rejected(
        b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked, identity\r\n\r\n",
        &bad_request("final transfer coding is not chunked"),
    );
}

/// Prior knowledge means the preface opens the connection (tests/h2_*.rs): after an HTTP/1
/// request it is an HTTP/1 request line with version 2.0.
#[test]
fn http2_preface_after_a_request_is_505() {
    let server = common::start(app());
    let mut c = server.connect();
    c.send(b"GET /ignore HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(c.read_response().status, 200);
    c.send(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
    assert_eq!(
        c.read_response().text(),
        error_close(
            "505 HTTP Version Not Supported",
            "HTTP/2 connection preface on an HTTP/1 connection",
        )
    );
    c.expect_closed();
    assert_eq!(
        server.get("/ignore").lines().next(),
        Some("HTTP/1.1 200 OK")
    );
}

#[test]
fn http20_version_is_505() {
    assert_rejected(
        b"GET / HTTP/2.0\r\nHost: t\r\n\r\n",
        &error_close(
            "505 HTTP Version Not Supported",
            "HTTP version not supported",
        ),
    );
}

#[test]
fn http3_version_is_505() {
    assert_rejected(
        b"GET / HTTP/3\r\nHost: t\r\n\r\n",
        &error_close(
            "505 HTTP Version Not Supported",
            "HTTP version not supported",
        ),
    );
}

#[test]
fn malformed_version_is_400() {
    assert_rejected(
        b"GET / HTTX/1.1\r\nHost: t\r\n\r\n",
        &bad_request("malformed HTTP version"),
    );
}

#[test]
fn invalid_method_is_400() {
    assert_rejected(
        b"GE(T / HTTP/1.1\r\nHost: t\r\n\r\n",
        &bad_request("invalid byte in request method"),
    );
}

#[test]
fn invalid_target_is_400() {
    assert_rejected(
        b"GET /a\x01b HTTP/1.1\r\nHost: t\r\n\r\n",
        &bad_request("invalid request target"),
    );
}

/// A target in none of the forms of RFC 9112 §3.2, or with a fragment, is refused rather than
/// routed as a guess (`?x=1` went to `/`, `/users/1#x` gave the parameter `1#x`).
#[test]
fn target_without_a_form_or_with_a_fragment_is_400() {
    for target in [
        "?x=1",
        "users/1",
        "/users/1#x",
        "#",
        "foo?x=http://a/b",
        "1a://b/",
    ] {
        assert_rejected(
            format!("GET {target} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes(),
            &bad_request("invalid request target"),
        );
    }
}

#[test]
fn header_section_over_the_limit_is_431() {
    let mut req = b"GET / HTTP/1.1\r\nHost: t\r\nX-Big: ".to_vec();
    req.extend(std::iter::repeat_n(b'a', 2000));
    req.extend_from_slice(b"\r\n\r\n");
    assert_rejected(
        &req,
        &error_close(
            "431 Request Header Fields Too Large",
            "message head too large",
        ),
    );
}

/// The limit is on the head, however it arrives: an unfinished head that reaches it is refused
/// without waiting for the rest.
#[test]
fn unfinished_head_over_the_limit_is_431() {
    let mut req = b"GET / HTTP/1.1\r\nHost: t\r\nX-Big: ".to_vec();
    req.extend(std::iter::repeat_n(b'a', 2000));
    assert_rejected(
        &req,
        &error_close(
            "431 Request Header Fields Too Large",
            "message head too large",
        ),
    );
}

#[test]
fn head_over_the_default_limit_is_431() {
    let mut req = b"GET / HTTP/1.1\r\nHost: t\r\nX-Big: ".to_vec();
    req.extend(std::iter::repeat_n(b'a', 17 * 1024));
    req.extend_from_slice(b"\r\n\r\n");
    assert_rejected_with(
        Config::default(),
        &req,
        &error_close(
            "431 Request Header Fields Too Large",
            "message head too large",
        ),
    );
}

#[test]
fn too_many_headers_is_431() {
    let mut req = b"GET / HTTP/1.1\r\nHost: t\r\n".to_vec();
    for i in 0..10 {
        req.extend_from_slice(format!("X-H{i}: v\r\n").as_bytes());
    }
    req.extend_from_slice(b"\r\n");
    assert_rejected(
        &req,
        &error_close(
            "431 Request Header Fields Too Large",
            "too many header fields",
        ),
    );
}

#[test]
fn headers_at_the_limit_are_accepted() {
    let server = common::start_with(1, small_limits(), app());
    let mut c = server.connect();
    let mut req = b"GET / HTTP/1.1\r\nHost: t\r\n".to_vec();
    for i in 0..9 {
        req.extend_from_slice(format!("X-H{i}: v\r\n").as_bytes());
    }
    req.extend_from_slice(b"\r\n");
    c.send(&req);
    assert_eq!(c.read_response().status, 200);
}

#[test]
fn too_many_headers_over_the_default_limit_is_431() {
    let mut req = b"GET / HTTP/1.1\r\nHost: t\r\n".to_vec();
    for i in 0..100 {
        req.extend_from_slice(format!("X-H{i}: v\r\n").as_bytes());
    }
    req.extend_from_slice(b"\r\n");
    assert_rejected_with(
        Config::default(),
        &req,
        &error_close(
            "431 Request Header Fields Too Large",
            "too many header fields",
        ),
    );
}

#[test]
fn uri_over_the_limit_is_414() {
    let mut req = b"GET /".to_vec();
    req.extend(std::iter::repeat_n(b'a', 300));
    req.extend_from_slice(b" HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_rejected(
        &req,
        &error_close("414 URI Too Long", "request target too long"),
    );
}

#[test]
fn unfinished_uri_over_the_limit_is_414() {
    let mut req = b"GET /".to_vec();
    req.extend(std::iter::repeat_n(b'a', 300));
    assert_rejected(
        &req,
        &error_close("414 URI Too Long", "request target too long"),
    );
}

#[test]
fn declared_body_over_the_limit_is_413_at_once() {
    // The body is never sent: the answer must not wait for it.
    assert_rejected(
        b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 1001\r\n\r\n",
        &error_close(
            "413 Payload Too Large",
            "request body of 1001 bytes is over the limit of 1000",
        ),
    );
}

/// A response to HEAD has no body (RFC 9110 §9.3.2), the 413 before any handler included:
/// its text followed the head, where a client looks for the next response (found by
/// `h1_mutations`).
#[test]
fn head_with_a_declared_body_over_the_limit_gets_a_413_without_a_body() {
    let server = common::start_with(1, small_limits(), app());
    let mut c = server.connect();
    c.send(b"HEAD / HTTP/1.1\r\nHost: t\r\nContent-Length: 1001\r\n\r\n");
    assert_eq!(
        c.read_head_response().text(),
        "HTTP/1.1 413 Payload Too Large\r\nServer: volt\r\nDate: <date>\r\n\
         Content-Type: text/plain\r\ncontent-length: 53\r\nConnection: close\r\n\r\n"
    );
    c.expect_closed();
    assert_server_alive(&server);
}

#[test]
fn chunked_body_crossing_the_limit_is_413() {
    let mut req = b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    for _ in 0..3 {
        req.extend_from_slice(b"190\r\n");
        req.extend(std::iter::repeat_n(b'x', 400));
        req.extend_from_slice(b"\r\n");
    }
    req.extend_from_slice(b"0\r\n\r\n");
    assert_rejected(
        &req,
        &error_close(
            "413 Payload Too Large",
            "request body is over the limit of 1000 bytes",
        ),
    );
}

#[test]
fn chunked_body_at_the_limit_is_accepted() {
    let server = common::start_with(1, small_limits(), app());
    let mut c = server.connect();
    let mut req = b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    req.extend_from_slice(b"3e8\r\n");
    req.extend(std::iter::repeat_n(b'x', 1000));
    req.extend_from_slice(b"\r\n0\r\n\r\n");
    c.send(&req);
    let r = c.read_response();
    assert_eq!(r.status, 200);
    assert_eq!(r.body.len(), 1000);
}

/// A client that keeps the rest of a refused body coming must still see the answer.
#[test]
fn declared_body_over_the_limit_answers_while_the_client_sends() {
    let server = common::start_with(1, small_limits(), app());
    let mut c = server.connect();
    c.send(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n");
    // Some of the body follows; the server may close (and reset) while it does.
    let _ = c.try_send(&[b'x'; 4096]);
    let r = c.read_response();
    assert_eq!(r.status, 413);
    assert_eq!(r.header("connection"), Some("close"));
    let _ = c.read_to_end();
    assert_server_alive(&server);
}

fn assert_server_alive(server: &TestServer) {
    assert_eq!(server.get("/"), text_response("200 OK", "", ""));
}

#[test]
fn garbage_instead_of_a_request_is_400() {
    assert_rejected(
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",
        &bad_request("malformed request line"),
    );
}

#[test]
fn chunked_applied_twice_is_400() {
    assert_rejected(
        b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        &bad_request("chunked transfer coding applied more than once"),
    );
}

/// RFC 9112 §6.3: a request whose final coding is not chunked has no knowable length: 400
/// (the MUST there wins over the SHOULD of 501 for an unknown coding).
#[test]
fn unknown_transfer_coding_alone_is_400() {
    assert_rejected(
        b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\n",
        &bad_request("final transfer coding is not chunked"),
    );
}

#[test]
fn invalid_host_is_400() {
    assert_rejected(
        b"GET / HTTP/1.1\r\nHost: a b\r\n\r\n",
        &bad_request("invalid Host value"),
    );
}

#[test]
fn invalid_chunk_extension_is_400() {
    assert_rejected(
        b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5;=x\r\nhello\r\n0\r\n\r\n",
        &bad_request("invalid chunk extension"),
    );
}

#[test]
fn chunk_size_line_too_long_is_400() {
    let mut req = b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5;a=".to_vec();
    req.extend(std::iter::repeat_n(b'b', 5000));
    req.extend_from_slice(b"\r\nhello\r\n0\r\n\r\n");
    assert_rejected(&req, &bad_request("chunk-size line too long"));
}

#[test]
fn trailers_over_the_head_limit_are_431() {
    let mut req =
        b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-Big: "
            .to_vec();
    req.extend(std::iter::repeat_n(b'a', 2000));
    req.extend_from_slice(b"\r\n\r\n");
    assert_rejected(
        &req,
        &error_close(
            "431 Request Header Fields Too Large",
            "trailer section too large",
        ),
    );
}

/// Sends `request` one byte per write, as a slow client would, and checks the exact answer.
/// An unfinished head is parsed again only when a line ends or a size limit may be broken (a
/// head dripped byte by byte used to be re-parsed from its start on every read, quadratic in
/// its size), so these pin that the limits still fire at the byte that breaks them. The pause
/// between bytes makes the server see them one read at a time (a loaded machine may still
/// batch some; the answer must be the same either way).
fn assert_dripped(request: &[u8], expected: &str) {
    let server = common::start_with(1, small_limits(), app());
    let mut c = server.connect();
    for byte in request {
        c.send(std::slice::from_ref(byte));
        std::thread::sleep(std::time::Duration::from_micros(500));
    }
    assert_eq!(c.read_response().text(), expected);
    server.shutdown();
}

#[test]
fn dripped_head_is_answered() {
    let mut req = b"GET / HTTP/1.1\r\nHost: t\r\n".to_vec();
    for i in 0..8 {
        req.extend_from_slice(format!("X-H{i}: value {i}\r\n").as_bytes());
    }
    req.extend_from_slice(b"\r\n");
    assert_dripped(&req, &text_response("200 OK", "", ""));
}

#[test]
fn dripped_uri_over_the_limit_is_414_at_the_byte_that_breaks_it() {
    // The target "/aaa…" reaches 257 bytes (over the limit of 256) with the last byte sent.
    let mut req = b"GET /".to_vec();
    req.extend(std::iter::repeat_n(b'a', 256));
    assert_dripped(
        &req,
        &error_close("414 URI Too Long", "request target too long"),
    );
}

#[test]
fn dripped_head_over_the_limit_is_431_at_the_byte_that_breaks_it() {
    // 1,025 bytes, one over the head limit, with no line end after the first two lines.
    let mut req = b"GET / HTTP/1.1\r\nHost: t\r\nX-Big: ".to_vec();
    req.resize(1025, b'a');
    assert_dripped(
        &req,
        &error_close(
            "431 Request Header Fields Too Large",
            "message head too large",
        ),
    );
}
