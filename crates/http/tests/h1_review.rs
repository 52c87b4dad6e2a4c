//! HTTP/1 defects found by review, each pinned by the exact bytes that showed it: first lines
//! that are and are not HTTP/1, however they are split; head errors found before the line
//! ends; `Expect: 100-continue` with a body the handler ignores.

mod common;

use std::time::Duration;

use common::{error_close, text_response, Client, TestServer};
use volt_http::{any, Config, Request, Response, Router};

fn app() -> Router {
    Router::new()
        .route("/", any(|_req| async { Response::text("hi") }))
        .route(
            "/echo",
            any(|mut req: Request| async move { req.bytes().await.map(Response::text) }),
        )
        .route("/ignore", any(|_req| async { Response::text("ignored") }))
}

/// A server whose header timeout is far longer than any answer below may take.
fn patient_server() -> TestServer {
    let config = Config {
        header_read_timeout: Duration::from_secs(30),
        ..Default::default()
    };
    common::start_with(1, config, app())
}

/// Sends `parts` on a new connection, pausing between them so the server reads them apart
/// (a loaded machine may still join them; the answer must be the same either way), and waits
/// at most 10 s for whatever comes back (the header timeout is 30 s).
fn send_in_parts(server: &TestServer, parts: &[&[u8]]) -> Client {
    let mut c = server.connect();
    c.stream()
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            std::thread::sleep(Duration::from_millis(50));
        }
        c.send(part);
    }
    c
}

/// [`send_in_parts`] with `request` split in two at `at`.
fn send_split(server: &TestServer, request: &[u8], at: usize) -> Client {
    let (a, b) = request.split_at(at);
    send_in_parts(server, &[a, b])
}

/// Sends a GET with `Host: {host}`.
fn get_with_host(server: &TestServer, host: &str) -> Client {
    let request = format!("GET / HTTP/1.1\r\nHost: {host}\r\n\r\n");
    send_in_parts(server, &[request.as_bytes()])
}

fn bad_request(message: &str) -> String {
    error_close("400 Bad Request", message)
}

/// A first line that ends in an HTTP/1 version but breaks the grammar before it is an HTTP/1
/// client's mistake: 400, then close. Sent in one write it was closed without an answer (its
/// "target" `S` has no HTTP/1 form), split after `OPTION ` it got the 400 (the first read had
/// already ruled out HTTP/2, and with it the silent close).
#[test]
fn malformed_http1_first_line_is_400_however_split() {
    let request: &[u8] = b"OPTION S * HTTP/1.1\r\nHost: t\r\n\r\n";
    let server = patient_server();
    for at in [0, 7, 9, 12, request.len() - 1] {
        let mut c = send_split(&server, request, at);
        let got = c.read_response().text();
        assert_eq!(got, bad_request("malformed HTTP version"), "split at {at}");
        c.expect_closed();
    }
    server.shutdown();
}

/// A first line that is not HTTP/1 at all (h2spec's invalid HTTP/2 preface) is closed without
/// an answer (RFC 9113 §3.4), however it is split: split after `INVALID ` it got a 400.
#[test]
fn first_line_that_is_not_http1_is_closed_silently_however_split() {
    let request: &[u8] = b"INVALID CONNECTION PREFACE\r\n\r\n";
    let server = patient_server();
    for at in [0, 3, 8, 15, request.len() - 2] {
        let mut c = send_split(&server, request, at);
        let (got, _) = c.read_to_close();
        assert_eq!(String::from_utf8_lossy(&got), "", "split at {at}");
    }
    // After a request, the same line is an HTTP/1 client's mistake.
    let mut c = send_in_parts(
        &server,
        &[
            b"GET / HTTP/1.1\r\nHost: t\r\n\r\nINVALID ",
            b"CONNECTION PREFACE\r\n\r\n",
        ],
    );
    assert_eq!(c.read_response().text(), text_response("200 OK", "", "hi"));
    assert_eq!(
        c.read_response().text(),
        bad_request("malformed HTTP version")
    );
    c.expect_closed();
    server.shutdown();
}

/// A head error found before its line ends is answered at once. An unfinished head is parsed
/// again only when a line ends (so a head dripped in byte by byte is not parsed from its start
/// at every byte), so a bad byte that came with no line end waited for the header timeout.
#[test]
fn bad_byte_in_an_unfinished_method_is_400_at_once() {
    let server = patient_server();
    for (parts, message) in [
        (
            [&b"G"[..], b"(ET / HTTP/1.1"],
            "invalid byte in request method",
        ),
        ([b"GE", b"\x01T / HTTP/1.1"], "malformed request line"),
        ([b"GET", b"\x7f"], "malformed request line"),
    ] {
        let mut c = send_in_parts(&server, &parts);
        assert_eq!(c.read_response().text(), bad_request(message), "{parts:?}");
        c.expect_closed();
    }
    // A control byte breaks any line, a target or a field too.
    for (parts, message) in [
        ([&b"GET /"[..], b"a\x01"], "invalid request target"),
        (
            [b"GET / HTTP/1.1\r\nHost: t\r\nX-A: b", b"c\x00"],
            "invalid byte in header field value",
        ),
    ] {
        let mut c = send_in_parts(&server, &parts);
        assert_eq!(c.read_response().text(), bad_request(message), "{parts:?}");
        c.expect_closed();
    }
    server.shutdown();
}

/// A version, a field name or a space that breaks the head before its line ends is answered
/// at once, as a bad method byte is: it waited for the line end (or the 30 s header timeout),
/// since only a line end, a control byte or a bad method byte made the server parse an
/// unfinished head again.
#[test]
fn broken_version_or_field_name_before_the_line_ends_is_400_at_once() {
    let server = patient_server();
    for (parts, message) in [
        ([&b"GET / "[..], b"XTTP/1.1"], "malformed HTTP version"),
        ([b"GET / HTTP/1.1", b"x"], "malformed HTTP version"),
        ([b"GET /", b" HTTP/1.1 "], "malformed request line"),
        (
            [b"GET / HTTP/1.1\r\nHo", b" st: t"],
            "invalid header field name",
        ),
        (
            [b"GET / HTTP/1.1\r\nHost", b"\x7f"],
            "invalid header field name",
        ),
        (
            [b"GET / HTTP/1.1\r\nHost: t\r\n", b" folded"],
            "header line starts with whitespace (obsolete line folding)",
        ),
    ] {
        let mut c = send_in_parts(&server, &parts);
        assert_eq!(c.read_response().text(), bad_request(message), "{parts:?}");
        c.expect_closed();
    }
    // A second request on a connection (not its first line) too.
    let mut c = send_in_parts(
        &server,
        &[b"GET / HTTP/1.1\r\nHost: t\r\n\r\nGET / HTTP/1.1\r\nX y"],
    );
    assert_eq!(c.read_response().text(), text_response("200 OK", "", "hi"));
    assert_eq!(
        c.read_response().text(),
        bad_request("invalid header field name")
    );
    c.expect_closed();
    server.shutdown();
}

/// `Expect: 100-continue` whose body came anyway, with the head: the client did not wait for
/// the 100, so the body is there to skip and the connection goes on (it was closed, as if the
/// client were still waiting for the 100 and might never send the body). With no body sent
/// yet, it still closes: `expect_continue_is_not_sent_when_the_handler_ignores_the_body`.
#[test]
fn expect_continue_with_the_body_already_sent_keeps_the_connection() {
    let server = patient_server();
    let mut c = send_in_parts(
        &server,
        &[b"POST /ignore HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\nhello\
            GET / HTTP/1.1\r\nHost: t\r\n\r\n"],
    );
    assert_eq!(
        c.read_response().text(),
        text_response("200 OK", "", "ignored")
    );
    assert_eq!(c.read_response().text(), text_response("200 OK", "", "hi"));
    // The same with a chunked body, part of it sent with the head and the rest after.
    c.send(b"POST /ignore HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel");
    assert_eq!(
        c.read_response().text(),
        text_response("200 OK", "", "ignored")
    );
    c.send(b"lo\r\n0\r\n\r\nGET / HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(c.read_response().text(), text_response("200 OK", "", "hi"));
    server.shutdown();
}

/// RFC 9112 §3.2: a `Host` value that is not `uri-host [":" port]` gets a 400. A port that is
/// not digits (`t:abc`), a second colon or stray brackets were taken: only the value's bytes
/// were checked, not its form.
#[test]
fn host_with_a_malformed_port_is_400() {
    let server = patient_server();
    for host in ["t:abc", "t:80:80", "[::1]x", "t]", "::1"] {
        let mut c = get_with_host(&server, host);
        assert_eq!(
            c.read_response().text(),
            bad_request("invalid Host value"),
            "{host}"
        );
        c.expect_closed();
    }
    for host in [
        "t",
        "t:",
        "t:8080",
        "127.0.0.1:80",
        "[::1]:80",
        "T-1.example",
    ] {
        let mut c = get_with_host(&server, host);
        assert_eq!(
            c.read_response().text(),
            text_response("200 OK", "", "hi"),
            "{host}"
        );
    }
    server.shutdown();
}
