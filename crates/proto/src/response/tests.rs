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

/// Responses the fast path takes that each need a rule `Framing::rare` lets the usual head
/// skip (Transfer-Encoding, a bad Content-Length), and usual ones around them: the same
/// answer as the general path.
#[test]
fn rare_fields_take_every_rule() {
    use ParseError::*;
    let limits = Limits::default();
    // The head, whether it answers HEAD, and its body and keep_alive, or the error.
    type Case = (&'static [u8], bool, Result<(BodyKind, bool), ParseError>);
    let cases: &[Case] = &[
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n",
            false,
            Ok((BodyKind::Length(3), true)),
        ),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n",
            true,
            Ok((BodyKind::Empty, true)),
        ),
        (
            b"HTTP/1.1 204 No\r\nContent-Length: 3\r\n\r\n",
            false,
            Ok((BodyKind::Empty, true)),
        ),
        (
            b"HTTP/1.1 200 OK\r\n\r\n",
            false,
            Ok((BodyKind::Eof, false)),
        ),
        (
            b"HTTP/1.1 200 OK\r\nHost: a b\r\n\r\n",
            false,
            Ok((BodyKind::Eof, false)),
        ),
        (
            b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n",
            false,
            Ok((BodyKind::Empty, false)),
        ),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
            false,
            Err(InvalidContentLength),
        ),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            false,
            Err(ConflictingContentLength),
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n",
            false,
            Ok((BodyKind::Chunked, false)),
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
            false,
            Ok((BodyKind::Eof, false)),
        ),
        (
            b"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            false,
            Err(TransferEncodingOnHttp10),
        ),
    ];
    for &(input, head_request, ref want) in cases {
        let text = String::from_utf8_lossy(input);
        let mut head = ResponseHead::default();
        let fast = parse_clean(input, &limits, head_request, &mut head).expect(&text);
        assert_eq!(&fast.map(|()| (head.body, head.keep_alive)), want, "{text}");
        let general = parse_general(input, &limits, head_request)
            .map(|head| head.map(|h| (h.body, h.keep_alive)));
        assert_eq!(general, want.clone().map(Some), "{text}");
    }
}
