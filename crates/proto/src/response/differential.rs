//! Differential test of the response fast path ([`parse_clean`]) against the general path
//! ([`parse_general`]) and plain `httparse`, on heads built by the seeded generator of the
//! request test (`crate::generate`) with response status lines. Deterministic: the same cases
//! on every run.
//!
//! [`check`] is also the body of the `cargo fuzz` target `response_head` (`crates/proto/fuzz`),
//! built with `--cfg fuzzing`, where the crate exports it as `fuzz_response_head`.

use super::*;
#[cfg(fuzzing)]
use crate::request::fuzz_input;

/// Fuzz entry: the first byte picks the limits (see [`fuzz_input`]) and, in bit 1, whether the
/// response answers a `HEAD`; the rest is the head. Panics on any disagreement, as [`check`]
/// does.
#[cfg(fuzzing)]
pub fn fuzz_response_head(data: &[u8]) {
    let Some((mode, limits, input)) = fuzz_input(data) else {
        return;
    };
    let head_request = mode & 2 == 2;
    check(input, &limits, head_request);
    // A prefix of an accepted head is only ever "need more bytes".
    if let Ok(Some(head)) = parse_response(input, &limits, head_request) {
        let cut = usize::from(mode >> 2) % head.head_len.max(1);
        assert_eq!(
            parse_response(&input[..cut], &limits, head_request),
            Ok(None)
        );
    }
}

/// What plain httparse says of a head the fast path took.
fn httparse_agrees(input: &[u8], head: &ResponseHead) -> Result<(), String> {
    let mut slots = vec![httparse::EMPTY_HEADER; head.headers.len() + 1];
    let mut res = httparse::Response::new(&mut slots);
    match res.parse(input) {
        Ok(httparse::Status::Complete(len)) if len == head.head_len => {}
        other => return Err(format!("httparse: {other:?}")),
    }
    // httparse gives an empty reason where the phrase holds obs-text.
    let reason = head.reason.get(input);
    let reason = if reason.is_ascii() {
        std::str::from_utf8(reason).unwrap_or_default()
    } else {
        ""
    };
    let same =
        res.code == Some(head.status.as_u16())
            && res.version == Some(u8::from(head.version == Version::HTTP_11))
            && res.reason == Some(reason)
            && res.headers.len() == head.headers.len()
            && res.headers.iter().zip(&head.headers).all(|(h, s)| {
                h.name.as_bytes() == s.name.get(input) && h.value == s.value.get(input)
            });
    if same {
        Ok(())
    } else {
        Err(format!("httparse parsed {res:?}"))
    }
}

/// One case: whatever the fast path answers is what the general path answers, and a head it
/// accepts is one httparse parses the same way and the strict walk finds clean. Returns
/// whether the fast path answered.
fn check(input: &[u8], limits: &Limits, head_request: bool) -> bool {
    check_into(input, limits, head_request, &mut ResponseHead::default())
}

/// [`check`], the fast path parsing into `head`, which may hold an earlier response's head (a
/// client parses every response of a connection into one): nothing of it may show through.
fn check_into(input: &[u8], limits: &Limits, head_request: bool, head: &mut ResponseHead) -> bool {
    let Some(fast) = parse_clean(input, limits, head_request, head) else {
        // The general path answers alone; it must not panic.
        let _ = parse_general(input, limits, head_request);
        return false;
    };
    let fast = fast.map(|()| Some(head.clone()));
    let general = parse_general(input, limits, head_request);
    let shown = String::from_utf8_lossy(input);
    assert_eq!(
        fast, general,
        "fast vs general on {shown:?} {limits:?} HEAD {head_request}"
    );
    if let Ok(Some(head)) = &fast {
        let window = head_window(input, limits);
        assert_eq!(
            walk_response(&window[..head.head_len], limits.max_headers),
            Walk::Clean,
            "strict walk on {shown:?}"
        );
        if let Err(e) = httparse_agrees(input, head) {
            panic!("{e} on {shown:?}");
        }
    }
    true
}

#[cfg(test)]
mod mutated {
    use super::*;
    use crate::generate::each_mutation;

    /// Heads that reach each of the fast path's shortcuts: the usual `200 OK` line and other
    /// status lines (no reason, no SP before it, HTTP/1.0, no body by status), the names
    /// matched whole in either case and names only just shorter or longer, a name that
    /// crosses a 16-byte step, HTAB in values, every framing field, a body after the head.
    const SEEDS: &[&[u8]] = &[
        b"HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Tue, 24 Nov 2026 03:45:54 GMT\r\n\
          Content-Type: text/plain\r\nContent-Length: 13\r\nConnection: keep-alive\r\n\r\n\
          Hello, World!",
        b"HTTP/1.1 200 OK\r\nSERVER: volt\r\nDATE: x\r\nCONTENT-TYPE: a\r\ncontent-length: 2\r\n\r\nhi",
        b"HTTP/1.1 204 No Content\r\nConnection: close\r\nServers: a\r\nDates: b\r\n\r\n",
        b"HTTP/1.0 200 OK\r\nContent-Length: 5\r\nCONNECTION: Keep-Alive\r\n\r\nhello",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\nX-Tab:\ta\t\r\n\r\n0\r\n\r\n",
        b"HTTP/1.1 404\r\nContent-Types: text/html\r\nContent-Lengths: 1\r\nContent-Length:0\r\n\r\n",
        b"HTTP/1.1 304 \r\nX.Dotted_Name~1: v\r\nAccess-Control-Allow-Origin: *\r\n\r\n",
        b"HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n",
    ];

    /// Earlier responses, each unlike the seeds in every part of the head: another version,
    /// status and reason, more fields than the span array holds inline, a chunked body with a
    /// length too (keep-alive off), a body read to the close.
    const EARLIER: &[&[u8]] = &[
        b"HTTP/1.1 599 A Much Longer Reason Phrase Than Any Seed Has\r\n\
          Transfer-Encoding: chunked\r\nContent-Length: 3\r\nX-1: 1\r\nX-2: 2\r\nX-3: 3\r\n\
          X-4: 4\r\nX-5: 5\r\nX-6: 6\r\nX-7: 7\r\nX-8: 8\r\n\r\n",
        b"HTTP/1.0 500 Internal Server Error\r\n\r\n",
    ];

    /// Each seed and every mutation of it (see [`each_mutation`]), as the answer to a `HEAD`
    /// and to any other request: where the fast path answers, it answers as the general path
    /// does, parsed into a fresh head, into the head of each earlier response, and into one
    /// head reused for every case in turn (left as whatever the case before made of it).
    #[test]
    fn fast_path_agrees_on_every_one_byte_mutation() {
        let limits = Limits::default();
        let earlier: Vec<ResponseHead> = EARLIER
            .iter()
            .map(|input| parse_response(input, &limits, false).unwrap().unwrap())
            .collect();
        let mut running = earlier[0].clone();
        let (mut cases, mut taken) = (0usize, 0usize);
        for seed in SEEDS {
            assert!(
                check(seed, &limits, false),
                "{:?}",
                String::from_utf8_lossy(seed)
            );
            each_mutation(seed, |input| {
                for head_request in [false, true] {
                    cases += 1;
                    if check(input, &limits, head_request) {
                        taken += 1;
                        for stale in &earlier {
                            check_into(input, &limits, head_request, &mut stale.clone());
                        }
                    }
                    check_into(input, &limits, head_request, &mut running);
                }
            });
        }
        assert!(
            taken > cases / 4,
            "the fast path took only {taken} of {cases}"
        );
    }
}

#[cfg(test)]
mod generated {
    use super::*;
    use crate::generate::{mutate, nasty, push_fields, run, Rng, LINE_ENDS, PREFIXES, SEPS};

    const VERSIONS: &[&[u8]] = &[
        b"HTTP/1.1",
        b"HTTP/1.0",
        b"HTTP/1.10",
        b"http/1.1",
        b"HTTP/2.0",
        b"HTTP/2",
        b"HTTP/1.2",
        b"HTTP/1",
        b"HTTP/1.",
        b"",
    ];
    const CODES: &[&[u8]] = &[
        b"200", b"404", b"204", b"304", b"100", b"101", b"103", b"500", b"999", b"099", b"000",
        b"20", b"2000", b"2x0", b"-20", b"+20", b"",
    ];
    const REASONS: &[&[u8]] = &[
        b" OK",
        b" Not Found",
        b"",
        b" ",
        b" OK ",
        b"  OK",
        b" a\tb",
        b"\tOK",
        b" caf\xc3\xa9",
        b" \x80\xff",
        b" a\x7f",
        b" a\x00",
        b" a\rb",
        b" a\nb",
        b"OK",
    ];

    /// A response head from the grammar: mostly good pieces, each sometimes replaced by a nasty
    /// one, sometimes followed by a body and the next response.
    fn generate(rng: &mut Rng, out: &mut Vec<u8>) {
        out.clear();
        if rng.chance(20) {
            out.extend_from_slice(rng.pick(PREFIXES));
        }
        out.extend_from_slice(nasty(rng, VERSIONS, 2));
        out.extend_from_slice(nasty(rng, SEPS, 1));
        out.extend_from_slice(nasty(rng, CODES, 8));
        out.extend_from_slice(nasty(rng, REASONS, 4));
        out.extend_from_slice(nasty(rng, LINE_ENDS, 1));
        push_fields(rng, out);
        if rng.chance(4) {
            out.extend_from_slice(b"hello\r\nHTTP/1.1 200 OK\r\n\r\n");
        }
        mutate(rng, out);
    }

    #[test]
    fn fast_path_agrees_with_general_path_on_generated_heads() {
        run(
            generate,
            |case| check(case.input, case.limits, case.head_request),
            |case| {
                parse_response(case.input, case.limits, case.head_request)
                    .map(|head| head.map(|h| h.head_len))
            },
        );
    }

    /// The framing and persistence rules of RFC 9112 §6.3 and §9.3, status lines and reason
    /// phrases, each on a head the fast path reaches: the answer of `parse_response`, and the
    /// same answer from both paths where the fast path answers at all.
    #[test]
    fn framing_rules_hold_on_both_paths() {
        use BodyKind::*;
        use ParseError::*;
        type Outcome = Result<(u16, &'static str, BodyKind, bool), ParseError>;
        let ok = |status, reason, body, keep_alive| Ok((status, reason, body, keep_alive));
        let cases: Vec<(&[u8], bool, Outcome)> = vec![
            (
                b"HTTP/1.1 200 OK\r\nServer: volt\r\nDate: Tue, 24 Nov 2026 03:45:54 GMT\r\n\
    Content-Type: text/plain\r\ncontent-length: 13\r\n\r\nHello, World!",
                false,
                ok(200, "OK", Length(13), true),
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\nConnection: keep-alive\r\n\r\n",
                true,
                ok(200, "OK", Empty, true),
            ),
            (b"HTTP/1.1 200\r\n\r\n", false, ok(200, "", Eof, false)),
            (
                b"HTTP/1.1 404 Not  Found \r\nContent-Length: 0\r\n\r\n",
                false,
                ok(404, "Not  Found ", Empty, true),
            ),
            (
                b"HTTP/1.1 200 \tcaf\xc3\xa9\r\nContent-Length: 1\r\n\r\n",
                false,
                ok(200, "\tcaf\u{e9}", Length(1), true),
            ),
            (
                b"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n",
                false,
                ok(204, "No Content", Empty, true),
            ),
            (
                b"HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n",
                false,
                ok(304, "Not Modified", Empty, true),
            ),
            (
                b"HTTP/1.1 100 Continue\r\n\r\n",
                false,
                ok(100, "Continue", Empty, true),
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
                false,
                ok(200, "OK", Chunked, true),
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
                false,
                ok(200, "OK", Eof, false),
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
                false,
                ok(200, "OK", Chunked, false),
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\n",
                false,
                ok(200, "OK", Length(5), false),
            ),
            (
                b"HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\n",
                false,
                ok(200, "OK", Length(5), false),
            ),
            (
                b"HTTP/1.0 200 OK\r\nContent-Length: 5\r\nConnection: Keep-Alive\r\n\r\n",
                false,
                ok(200, "OK", Length(5), true),
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
                false,
                Err(ConflictingContentLength),
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\n",
                false,
                Err(InvalidContentLength),
            ),
            (
                b"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
                false,
                Err(TransferEncodingOnHttp10),
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n",
                false,
                Err(ChunkedTwice),
            ),
            (b"HTTP/1.1 099 OK\r\n\r\n", false, Err(InvalidStatusLine)),
            (b"HTTP/1.1 2x0 OK\r\n\r\n", false, Err(InvalidStatusLine)),
            (
                b"HTTP/1.1 200 O\x00K\r\n\r\n",
                false,
                Err(InvalidStatusLine),
            ),
            (b"HTTP/1.1 200 OK\n\r\n", false, Err(InvalidLineEnding)),
            (b"HTTP/2.0 200 OK\r\n\r\n", false, Err(VersionNotSupported)),
            (
                b"HTTP/1.1 200 OK\r\nX: a\r\n folded\r\n\r\n",
                false,
                Err(ObsFold),
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length : 5\r\n\r\n",
                false,
                Err(WhitespaceBeforeColon),
            ),
        ];
        let limits = Limits::default();
        for (input, head_request, want) in cases {
            let shown = String::from_utf8_lossy(input).into_owned();
            let outcome = |head: &ResponseHead| {
                let reason = std::str::from_utf8(head.reason.get(input)).unwrap();
                let reason: &'static str = Box::leak(reason.into());
                (head.status.as_u16(), reason, head.body, head.keep_alive)
            };
            let got = parse_response(input, &limits, head_request).map(|h| h.as_ref().map(outcome));
            assert_eq!(got, want.clone().map(Some), "{shown:?}");
            let mut head = ResponseHead::default();
            if let Some(fast) = parse_clean(input, &limits, head_request, &mut head) {
                assert_eq!(
                    fast.map(|()| outcome(&head)),
                    want,
                    "fast path on {shown:?}"
                );
            }
        }
    }
}
