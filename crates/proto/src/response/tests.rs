//! Unit tests of the response-head parser's fast path.

use super::*;

#[test]
fn known_names_match_only_themselves() {
    let known = |s: &[u8]| known_name(s).map(|(n, _)| n);
    assert_eq!(known(b"Content-Length: 13"), Some(14));
    assert_eq!(known(b"content-length: "), Some(14));
    assert_eq!(known(b"CONTENT-TYPE: text/plain"), Some(12));
    assert_eq!(known(b"Connection: close"), Some(10));
    assert_eq!(known(b"Server: volt"), Some(6));
    assert_eq!(known(b"date: x\r\n"), Some(4));
    for other in [
        // Known names without the SP: the general scan takes them.
        &b"Content-Length:13"[..],
        b"Content-Type:\ta",
        b"Server:",
        b"Date:",
        b"Content-Length : 1",
        b"Content-Lengths: 1",
        b"Content-Encoding: gzip",
        b"Content-",
        b"Content_Length: 1",
        b"Content-Lengt\x08: 1",
        b"Serve\x12: a",
        b"Dat\x05: a",
        b"Transfer-Encoding: chunked",
        b"X-Server: a",
        b"",
    ] {
        // Also with the end of a head after them, so whole words are there to compare.
        let ended = [other, b"\r\n\r\n"].concat();
        for s in [other, &ended] {
            assert_eq!(known(s), None, "{:?}", String::from_utf8_lossy(s));
        }
    }
}

/// The heads `volt bench` reads most: volt's and nginx's plaintext responses, whole and
/// split anywhere.
#[test]
fn issue_5_common_responses_take_the_fast_path() {
    let heads: [&[u8]; 2] = [
        b"HTTP/1.1 200 OK\r\nServer: volt\r\nDate: Tue, 24 Nov 2026 03:45:54 GMT\r\n\
Content-Type: text/plain\r\ncontent-length: 13\r\n\r\nHello, World!",
        b"HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Tue, 24 Nov 2026 03:45:54 GMT\r\n\
Content-Type: text/plain\r\nContent-Length: 13\r\nConnection: keep-alive\r\n\r\nHello, World!",
    ];
    let limits = Limits::default();
    for input in heads {
        let mut head = ResponseHead::default();
        assert_eq!(parse_clean(input, &limits, false, &mut head), Some(Ok(())));
        assert_eq!(head.status, StatusCode::OK);
        assert_eq!(head.reason.get(input), b"OK");
        assert_eq!(head.body, BodyKind::Length(13));
        assert!(head.keep_alive);
        assert_eq!(head.head_len, input.len() - 13);
        let date = head.header(input, "date");
        assert_eq!(date, Some(&b"Tue, 24 Nov 2026 03:45:54 GMT"[..]));
        for cut in 0..head.head_len {
            assert_eq!(parse_clean(&input[..cut], &limits, false, &mut head), None);
            assert_eq!(parse_response(&input[..cut], &limits, false), Ok(None));
        }
    }
}
