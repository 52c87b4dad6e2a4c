//! Differential test of the fast path ([`parse_clean`]) against the general path
//! ([`parse_general`]) and plain `httparse`, on heads built by a seeded generator from good and
//! nasty pieces plus random byte mutations. Deterministic: the same cases on every run.
//!
//! [`check`] is also the body of the `cargo fuzz` target (`crates/proto/fuzz`), built with
//! `--cfg fuzzing`, where the crate exports it as `fuzz_request_head`.

use super::*;

/// Fuzz entry: the first byte picks the limits (see [`fuzz_input`]), the rest is the head.
/// Panics on any disagreement, as [`check`] does.
#[cfg(fuzzing)]
pub fn fuzz_request_head(data: &[u8]) {
    let Some((mode, limits, input)) = fuzz_input(data) else {
        return;
    };
    check(input, &limits);
    // A prefix of an accepted head is only ever "need more bytes".
    if let Ok(Some(head)) = parse_request(input, &limits) {
        let cut = usize::from(mode >> 1) % head.head_len.max(1);
        assert_eq!(parse_request(&input[..cut], &limits), Ok(None));
    }
}

/// A fuzz target's input, for requests and responses alike: the first byte is a mode, the
/// rest the head. Bit 0 of the mode asks for tight limits, taken from the next three bytes
/// (the head follows them); the default limits otherwise. The other bits are the target's.
#[cfg(fuzzing)]
pub(crate) fn fuzz_input(data: &[u8]) -> Option<(u8, Limits, &[u8])> {
    let (&mode, rest) = data.split_first()?;
    Some(match rest {
        [a, b, c, input @ ..] if mode & 1 == 1 => (
            mode,
            Limits {
                max_head_bytes: usize::from(*a) * 2,
                max_headers: usize::from(*b % 80),
                max_uri_len: usize::from(*c),
            },
            input,
        ),
        _ => (mode, Limits::default(), rest),
    })
}

/// What plain httparse says of a head the fast path took.
fn httparse_agrees(input: &[u8], head: &RequestHead) -> Result<(), String> {
    let mut slots = vec![httparse::EMPTY_HEADER; head.headers.len() + 1];
    let mut req = httparse::Request::new(&mut slots);
    match req.parse(input) {
        Ok(httparse::Status::Complete(len)) if len == head.head_len => {}
        other => return Err(format!("httparse: {other:?}")),
    }
    let same =
        req.method == Some(head.method.as_str())
            && req.path.map(str::as_bytes) == Some(head.target.get(input))
            && req.version == Some(u8::from(head.version == Version::HTTP_11))
            && req.headers.len() == head.headers.len()
            && req.headers.iter().zip(&head.headers).all(|(h, s)| {
                h.name.as_bytes() == s.name.get(input) && h.value == s.value.get(input)
            });
    if same {
        Ok(())
    } else {
        Err(format!("httparse parsed {req:?}"))
    }
}

/// One case: whatever the fast path answers is what the general path answers, and a head it
/// accepts is one httparse parses the same way and the strict walk finds clean. Returns
/// whether the fast path answered.
fn check(input: &[u8], limits: &Limits) -> bool {
    check_into(input, limits, &mut RequestHead::default())
}

/// [`check`], the fast path parsing into `head`, which may hold an earlier request's head (a
/// server parses every request of a connection into one): nothing of it may show through.
fn check_into(input: &[u8], limits: &Limits, head: &mut RequestHead) -> bool {
    let Some(fast) = parse_clean(input, limits, head) else {
        // The general path answers alone; it must not panic.
        let _ = parse_general(input, limits);
        return false;
    };
    let fast = fast.map(|()| Some(head.clone()));
    let general = parse_general(input, limits);
    assert_eq!(
        fast,
        general,
        "fast vs general on {:?} {limits:?}",
        String::from_utf8_lossy(input)
    );
    if let Ok(Some(head)) = &fast {
        let window = head_window(input, limits);
        assert_eq!(
            walk_request(&window[..head.head_len], limits),
            Walk::Clean,
            "strict walk on {:?}",
            String::from_utf8_lossy(input)
        );
        if let Err(e) = httparse_agrees(input, head) {
            panic!("{e} on {:?}", String::from_utf8_lossy(input));
        }
    }
    true
}

#[cfg(test)]
mod generated {
    use super::*;
    use crate::generate::{mutate, nasty, push_fields, run, Rng, LINE_ENDS, PREFIXES, SEPS};

    const METHODS: &[&[u8]] = &[
        b"GET",
        b"POST",
        b"HEAD",
        b"PUT",
        b"DELETE",
        b"PATCH",
        b"OPTIONS",
        b"get",
        b"M-SEARCH",
        b"PRI",
        b"G(T",
        b"G\xc3\xa9T",
        b"",
        b"GET\t",
        b"X~!#$%&'*+-.^_`|",
    ];
    const TARGETS: &[&[u8]] = &[
        b"/",
        b"/plaintext",
        b"/a?b=c&d",
        b"http://a/b",
        b"/x/y?z",
        // Not good for every method: `*` is OPTIONS's only, `a:80` CONNECT's.
        b"*",
        b"a:80",
        b"",
        b"/\x80",
        b"/\xc3\xa9",
        b"/\x7f",
        b"/a\x00b",
        b"/a\x01",
        b"/\"<>{}|\\^`",
        b"/a#f",
    ];
    const VERSIONS: &[&[u8]] = &[
        b"HTTP/1.1",
        b"HTTP/1.0",
        b"HTTP/1.10",
        b"http/1.1",
        b"HTTP/1.1 ",
        b"HTTP/2.0",
        b"HTTP/2",
        b"HTTP/3",
        b"HTTP/1.2",
        b"HTTP/1",
        b"HTTP/1.",
        b"HTTP/01.1",
        b"HTTP/1.1\t",
        b"HTTP/",
    ];
    /// A head from the grammar: mostly good pieces, each sometimes replaced by a nasty one.
    fn generate(rng: &mut Rng, out: &mut Vec<u8>) {
        out.clear();
        if rng.chance(20) {
            out.extend_from_slice(rng.pick(PREFIXES));
        }
        out.extend_from_slice(nasty(rng, METHODS, 7));
        out.extend_from_slice(nasty(rng, SEPS, 1));
        if rng.chance(30) {
            // A long target, to reach the URI limit.
            let len = rng.below(80);
            out.push(b'/');
            out.extend(std::iter::repeat_n(b'a', len));
        } else {
            out.extend_from_slice(nasty(rng, TARGETS, 5));
        }
        out.extend_from_slice(nasty(rng, SEPS, 1));
        out.extend_from_slice(nasty(rng, VERSIONS, 2));
        out.extend_from_slice(nasty(rng, LINE_ENDS, 1));
        push_fields(rng, out);
        if rng.chance(4) {
            out.extend_from_slice(b"hello\r\nGET / HTTP/1.1\r\n\r\n");
        }
        mutate(rng, out);
    }

    #[test]
    fn fast_path_agrees_with_general_path_on_generated_heads() {
        run(
            generate,
            |case| check(case.input, case.limits),
            |case| parse_request(case.input, case.limits).map(|head| head.map(|h| h.head_len)),
        );
    }

    /// The strictness rules of the codec (README, issue 3), each on a head the fast path reaches:
    /// the answer of `parse_request`, and the same answer from both paths where the fast path
    /// answers at all.
    #[test]
    fn strictness_rules_hold_on_both_paths() {
        use ParseError::*;
        type Outcome = Result<(BodyKind, bool, bool), ParseError>;
        let ok = |body, keep_alive, expect| Ok((body, keep_alive, expect));
        let h = |fields: &str| format!("GET / HTTP/1.1\r\nHost: a\r\n{fields}\r\n").into_bytes();
        let cases: Vec<(Vec<u8>, Outcome)> = vec![
            (
                h("Transfer-Encoding: chunked\r\nContent-Length: 5\r\n"),
                Err(TransferEncodingWithContentLength),
            ),
            (
                h("Content-Length: 5\r\nContent-Length: 6\r\n"),
                Err(ConflictingContentLength),
            ),
            (
                h("Content-Length: 5\r\ncontent-length: 5\r\n"),
                ok(BodyKind::Length(5), true, false),
            ),
            (
                h("Content-Length: 5, 5\r\n"),
                ok(BodyKind::Length(5), true, false),
            ),
            (h("Content-Length: 5, 6\r\n"), Err(ConflictingContentLength)),
            (h("Content-Length: +5\r\n"), Err(InvalidContentLength)),
            (
                h("Content-Length: 005\r\n"),
                ok(BodyKind::Length(5), true, false),
            ),
            (
                h("Content-Length: 18446744073709551616\r\n"),
                Err(InvalidContentLength),
            ),
            (
                h("content-LENGTH: 5\r\n"),
                ok(BodyKind::Length(5), true, false),
            ),
            (h("X: a\r\n folded\r\n"), Err(ObsFold)),
            (h("X\0: a\r\n"), Err(InvalidHeaderName)),
            (h("X(: a\r\n"), Err(InvalidHeaderName)),
            (h("X: a\0\r\n"), Err(InvalidHeaderValue)),
            (h("X: a\rb\r\n"), Err(InvalidLineEnding)),
            (h("X: a\nb\r\n"), Err(InvalidLineEnding)),
            (h("X: a\n"), Err(InvalidLineEnding)),
            (h("Host : a\r\n"), Err(WhitespaceBeforeColon)),
            (h("Content-Length\t: 5\r\n"), Err(WhitespaceBeforeColon)),
            (h("hOsT: b\r\n"), Err(DuplicateHost)),
            // Host values off the plain-byte scan (`scan::host_value_end`), valid or not.
            (
                b"GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n".to_vec(),
                ok(BodyKind::Empty, true, false),
            ),
            (
                b"GET / HTTP/1.1\r\nHost: a_b~c \r\n\r\n".to_vec(),
                ok(BodyKind::Empty, true, false),
            ),
            (
                b"GET / HTTP/1.1\r\nHost: a/b\r\n\r\n".to_vec(),
                Err(InvalidHost),
            ),
            (
                b"GET / HTTP/1.1\r\nHost: user@a\r\n\r\n".to_vec(),
                Err(InvalidHost),
            ),
            (
                b"GET / HTTP/1.1\r\nHost: a b\r\n\r\n".to_vec(),
                Err(InvalidHost),
            ),
            (b"GET / HTTP/1.1\r\n\r\n".to_vec(), Err(MissingHost)),
            (
                b"GET / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec(),
                Err(TransferEncodingOnHttp10),
            ),
            (h("Transfer-Encoding: gzip\r\n"), Err(ChunkedNotLast)),
            (
                h("Transfer-Encoding: chunked, chunked\r\n"),
                Err(ChunkedTwice),
            ),
            (
                h("Transfer-Encoding: gzip, chunked\r\n"),
                Err(UnsupportedTransferCoding),
            ),
            (
                h("Transfer-Encoding: chunked, gzip\r\n"),
                Err(ChunkedNotLast),
            ),
            (
                h("transfer-ENCODING: chunked\r\n"),
                ok(BodyKind::Chunked, true, false),
            ),
            (
                b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec(),
                Err(Http2Preface),
            ),
            (b"GET / HTTP/2\r\n\r\n".to_vec(), Err(VersionNotSupported)),
            (b"GET / HTTP/3\r\n\r\n".to_vec(), Err(VersionNotSupported)),
            (
                b"GET / HTTP/1.10\r\nHost: a\r\n\r\n".to_vec(),
                Err(InvalidVersion),
            ),
            (
                b"GET / http/1.1\r\nHost: a\r\n\r\n".to_vec(),
                Err(InvalidVersion),
            ),
            (
                b"GET / HTTP/1.1 \r\nHost: a\r\n\r\n".to_vec(),
                Err(BadRequestLine),
            ),
            (
                h("Expect: 100-continue\r\nContent-Length: 1\r\n"),
                ok(BodyKind::Length(1), true, true),
            ),
            (
                h("Expect: 100-continue\r\n"),
                ok(BodyKind::Empty, true, false),
            ),
            (h("Expect: foo\r\n"), Err(UnsupportedExpectation)),
            (h("X: a \t\r\n"), ok(BodyKind::Empty, true, false)),
            (
                b"GET /\xc3\xa9 HTTP/1.1\r\nHost: a\r\n\r\n".to_vec(),
                Err(InvalidTarget),
            ),
            (
                b"GET /\x01 HTTP/1.1\r\nHost: a\r\n\r\n".to_vec(),
                Err(InvalidTarget),
            ),
            (
                b"G@T / HTTP/1.1\r\nHost: a\r\n\r\n".to_vec(),
                Err(InvalidMethod),
            ),
            (
                b"\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n".to_vec(),
                ok(BodyKind::Empty, true, false),
            ),
            // A lone LF ends no line, as on the httparse path (which checks every line end
            // httparse let through): anywhere in the head it is a 400.
            (
                b"\nGET / HTTP/1.1\r\nHost: a\r\n\r\n".to_vec(),
                Err(InvalidLineEnding),
            ),
            (
                b"GET / HTTP/1.1\nHost: a\r\n\r\n".to_vec(),
                Err(InvalidLineEnding),
            ),
            (
                b"GET / HTTP/1.1\r\nHost: a\r\n\n".to_vec(),
                Err(InvalidLineEnding),
            ),
            (
                h("CONNECTION: Keep-Alive, Close\r\n"),
                ok(BodyKind::Empty, false, false),
            ),
            (
                b"GET / HTTP/1.0\r\nconnection: KEEP-ALIVE\r\n\r\n".to_vec(),
                ok(BodyKind::Empty, true, false),
            ),
        ];
        for (input, want) in cases {
            let shown = String::from_utf8_lossy(&input).into_owned();
            let got = parse_request(&input, &Limits::default())
                .map(|head| head.map(|h| (h.body, h.keep_alive, h.expect_continue)));
            assert_eq!(got, want.clone().map(Some), "{shown:?}");
            let mut head = RequestHead::default();
            if let Some(fast) = parse_clean(&input, &Limits::default(), &mut head) {
                let fast = fast.map(|()| (head.body, head.keep_alive, head.expect_continue));
                assert_eq!(fast, want, "fast path on {shown:?}");
            }
        }
    }
}

/// Every head one byte away from a seed, parsed fresh and into heads that held other requests.
#[cfg(test)]
mod mutated {
    use super::*;
    use crate::generate::each_mutation;

    /// Heads that reach each of the fast path's shortcuts: a plain Host and others (an IP
    /// literal, a port, none, an empty one), the names matched whole in either case and names
    /// only just shorter or longer, names of plain bytes and of other `tchar`s, long names
    /// that cross a 16-byte step, HTAB in values, every framing field, HTTP/1.0, another
    /// method than `GET`, a body and a next request after the head, a head whose last field
    /// is too near its end for a whole word.
    const SEEDS: &[&[u8]] = &[
        b"GET /plaintext HTTP/1.1\r\nHost: localhost:8080\r\nAccept: text/plain\r\n\
          Connection: keep-alive\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: a\r\n\r\nGET /b HTTP/1.1\r\nHost: b\r\n\r\n",
        b"POST /submit?x=1 HTTP/1.1\r\nHost: [::1]:8080\r\nContent-Length: 5\r\n\
          Expect: 100-continue\r\n\r\nhello",
        b"PUT /u HTTP/1.1\r\nhost: a.b-c\r\nTransfer-Encoding: chunked\r\nX-Tab:\ta\tb \t\r\n\r\n\
          0\r\n\r\n",
        b"GET http://a/b HTTP/1.0\r\nConnection: Keep-Alive\r\nX.Dotted_Name~1: v\r\n\r\n",
        b"GET /articles/2024?page=2 HTTP/1.1\r\nHOST: www.example.com\r\n\
          User-Agent: Mozilla/5.0 (X11; Linux x86_64)\r\nACCEPT: text/html,*/*;q=0.8\r\n\
          Accept-Encoding: gzip, br\r\nUpgrade-Insecure-Requests: 1\r\nCookie: a=1; b=2\r\n\
          Sec-Fetch-Dest: document\r\nContent-Length: 0\r\n\r\n",
        b"OPTIONS * HTTP/1.1\r\nHost:\r\nCONNECTION: close, upgrade\r\nHosts: x\r\nAccepts: y\r\n\
          Connections: z\r\nX: \r\n\r\n",
        b"DELETE /x HTTP/1.1\r\nConnection: close\r\nHost: a_b\r\n\r\n",
        b"GET / HTTP/1.1\r\nX-Value: 1\r\nhost: 10.0.0.1\r\n\r\n",
    ];

    /// Earlier requests, each unlike the seeds in every part of the head: an extension method
    /// held on the heap, HTTP/1.0, more fields than the span array holds inline, a chunked or
    /// sized body, `expect_continue` set, keep-alive either way.
    const EARLIER: &[&[u8]] = &[
        b"A-VERY-LONG-EXTENSION-METHOD /an/earlier/and/much/longer/target HTTP/1.1\r\n\
          Host: earlier.example\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\
          X-1: 1\r\nX-2: 2\r\nX-3: 3\r\nX-4: 4\r\nX-5: 5\r\nX-6: 6\r\nX-7: 7\r\n\r\n",
        b"POST /e HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: 7\r\n\r\n",
        b"GET /c HTTP/1.1\r\nHost: c\r\nConnection: close\r\n\r\n",
    ];

    /// Each seed and every mutation of it (see [`each_mutation`]): where the fast path answers,
    /// it answers as the general path does, parsed into a fresh head, into the head of each
    /// earlier request, and into one head reused for every case in turn (left as whatever the
    /// case before made of it, an unfinished or refused parse too).
    #[test]
    fn fast_path_agrees_on_every_one_byte_mutation() {
        let limits = Limits::default();
        let earlier: Vec<RequestHead> = EARLIER
            .iter()
            .map(|input| parse_request(input, &limits).unwrap().unwrap())
            .collect();
        let mut running = earlier[0].clone();
        let (mut cases, mut taken) = (0usize, 0usize);
        for seed in SEEDS {
            assert!(check(seed, &limits), "{:?}", String::from_utf8_lossy(seed));
            each_mutation(seed, |input| {
                cases += 1;
                if check(input, &limits) {
                    taken += 1;
                    for stale in &earlier {
                        check_into(input, &limits, &mut stale.clone());
                    }
                }
                check_into(input, &limits, &mut running);
            });
        }
        assert!(
            taken > cases / 4,
            "the fast path took only {taken} of {cases}"
        );
    }
}
