//! Differential test of the fast path ([`parse_clean`]) against the general path
//! ([`parse_general`]) and plain `httparse`, on heads built by a seeded generator from good and
//! nasty pieces plus random byte mutations. Deterministic: the same cases on every run.
//!
//! [`check`] is also the body of the `cargo fuzz` target (`crates/proto/fuzz`), built with
//! `--cfg fuzzing`, where the crate exports it as `fuzz_request_head`.

use super::*;

/// Fuzz entry: the first byte picks the limits (default, or tight ones from the next three
/// bytes), the rest is the head. Panics on any disagreement, as [`check`] does.
#[cfg(fuzzing)]
pub fn fuzz_request_head(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let (limits, input) = match rest {
        [a, b, c, input @ ..] if mode & 1 == 1 => (
            Limits {
                max_head_bytes: usize::from(*a) * 2,
                max_headers: usize::from(*b % 80),
                max_uri_len: usize::from(*c),
            },
            input,
        ),
        _ => (Limits::default(), rest),
    };
    check(input, &limits);
    // A prefix of an accepted head is only ever "need more bytes".
    if let Ok(Some(head)) = parse_request(input, &limits) {
        let cut = usize::from(mode >> 1) % head.head_len.max(1);
        assert_eq!(parse_request(&input[..cut], &limits), Ok(None));
    }
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
    let mut head = RequestHead::default();
    let Some(fast) = parse_clean(input, limits, &mut head) else {
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

    /// A small xorshift generator: deterministic, no dependency.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            let mut x = self.0;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            self.0 = x;
            x
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
        fn chance(&mut self, one_in: usize) -> bool {
            self.below(one_in) == 0
        }
        fn pick<'a>(&mut self, items: &[&'a [u8]]) -> &'a [u8] {
            items[self.below(items.len())]
        }
    }

    const PREFIXES: &[&[u8]] = &[b"\r\n", b"\r\n\r\n", b"\n", b"\r", b" "];
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
    const SEPS: &[&[u8]] = &[b" ", b"  ", b"\t", b""];
    const TARGETS: &[&[u8]] = &[
        b"/",
        b"/plaintext",
        b"/a?b=c&d",
        b"*",
        b"http://a/b",
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
    const LINE_ENDS: &[&[u8]] = &[b"\r\n", b"\n", b"\r", b"\r\r\n", b" \r\n", b"\n\r"];
    const NAMES: &[&[u8]] = &[
        b"Host",
        b"hOsT",
        b"HOST",
        b"host",
        b"Content-Length",
        b"content-LENGTH",
        b"CONTENT-LENGTH",
        b"Transfer-Encoding",
        b"transfer-encoding",
        b"TRANSFER-ENCODING",
        b"Connection",
        b"connection",
        b"CONNECTION",
        b"Expect",
        b"expect",
        b"Accept",
        b"accept",
        b"X-Foo",
        b"User-Agent",
        b"Host ",
        b"Host\t",
        b"Ho st",
        b"H\xc3\xb6st",
        b"(x)",
        b"",
        b"X\x00",
        b" Host",
        b"\tX",
        b"Hostname",
        b"Hos",
        b"Content-Length ",
        b"Transfer-Encoding\t",
        b"Accept-Encoding",
        b"Connectio",
        b"Connections",
        b"Acceptx",
        b"x:y",
        b"Hos\x14",
    ];
    const COLONS: &[&[u8]] = &[b":", b": ", b":\t", b":  \t ", b" :", b"::"];
    const VALUES: &[&[u8]] = &[
        b"a",
        b"example.com:8080",
        b"[::1]:80",
        b"",
        b"a b",
        b"user@h",
        b"5",
        b"0",
        b"+5",
        b"-5",
        b"05",
        b"00000000000000000000005",
        b"5, 5",
        b"5,5",
        b"5, 6",
        b"5,",
        b",5",
        b"5 5",
        b"18446744073709551615",
        b"18446744073709551616",
        b"99999999999999999999999",
        b"0x5",
        b"chunked",
        b"Chunked",
        b"CHUNKED",
        b"chunked, chunked",
        b"gzip, chunked",
        b"chunked, gzip",
        b"gzip",
        b"chunked;x=y",
        b"chunked ;x",
        b", chunked",
        b"identity",
        b"chunked,",
        b"\"chunked\"",
        b"close",
        b"keep-alive",
        b"Keep-Alive",
        b"Keep-Alive, close",
        b"upgrade, close",
        b"CLOSE",
        b"100-continue",
        b"100-Continue",
        b"100-continue, foo",
        b"foo",
        b"100-continuex",
        b"a ",
        b"a\t",
        b" a ",
        b"\ta\t",
        b"a\x00b",
        b"a\x7fb",
        b"caf\xc3\xa9",
        b"a\rb",
        b"a\nb",
        b"a\x0bb",
        b"\x80",
        b"a\tb",
        b"\t",
        b"  ",
        b"\x0d",
        b"100\x0dcontinue",
    ];
    const BYTES: &[u8] = &[
        b' ',
        b'\t',
        b'\r',
        b'\n',
        0,
        0x1f,
        0x7f,
        0x80,
        0xff,
        b':',
        b',',
        b';',
        b'"',
        b'/',
        b'?',
        b'a',
        b'A',
        b'0',
        b'.',
        b'H',
        b'-',
        0x0d ^ 0x20,
        0x10,
    ];

    /// A head from the grammar: mostly good pieces, each sometimes replaced by a nasty one.
    fn generate(rng: &mut Rng, out: &mut Vec<u8>) {
        out.clear();
        // Good pieces are the first few of each list.
        let nasty = |rng: &mut Rng, list: &[&'static [u8]], good: usize| -> &'static [u8] {
            if rng.chance(30) {
                rng.pick(list)
            } else {
                list[rng.below(good)]
            }
        };
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
        // Now and then more fields than the stack slots hold, to reach the spilled httparse path.
        let fields = if rng.chance(200) {
            rng.below(140)
        } else {
            rng.below(8)
        };
        for _ in 0..fields {
            if rng.chance(25) {
                // obs-fold
                out.extend_from_slice(b" folded");
                out.extend_from_slice(nasty(rng, LINE_ENDS, 1));
                continue;
            }
            out.extend_from_slice(nasty(rng, NAMES, 19));
            out.extend_from_slice(nasty(rng, COLONS, 3));
            out.extend_from_slice(if rng.chance(3) {
                rng.pick(VALUES)
            } else {
                nasty(rng, VALUES, 3)
            });
            if rng.chance(8) {
                // A longer value, so the word-at-a-time scans cross several words.
                for _ in 0..rng.below(40) {
                    out.push([b'v', b'v', b'v', b' ', b'\t', 0x80][rng.below(6)]);
                }
            }
            if rng.chance(10) {
                out.extend_from_slice(nasty(rng, &[b" ", b"\t", b" \t "], 3));
            }
            out.extend_from_slice(nasty(rng, LINE_ENDS, 1));
        }
        if !rng.chance(20) {
            out.extend_from_slice(nasty(rng, LINE_ENDS, 1));
        }
        if rng.chance(4) {
            out.extend_from_slice(b"hello\r\nGET / HTTP/1.1\r\n\r\n");
        }
        // Byte mutations.
        let mutations = [0, 0, 0, 0, 0, 0, 1, 1, 2, 3][rng.below(10)];
        for _ in 0..mutations {
            if out.is_empty() {
                break;
            }
            let at = rng.below(out.len());
            let byte = if rng.chance(2) {
                BYTES[rng.below(BYTES.len())]
            } else {
                rng.next() as u8
            };
            match rng.below(3) {
                0 => out[at] = byte,
                1 => out.insert(at, byte),
                _ => {
                    out.remove(at);
                }
            }
        }
        if rng.chance(15) {
            let len = rng.below(out.len() + 1);
            out.truncate(len);
        }
    }

    fn limits_for(rng: &mut Rng, input: &[u8]) -> Limits {
        if !rng.chance(4) {
            return Limits::default();
        }
        // Limits at and around the input's own sizes, to hit every boundary exactly.
        let near = |rng: &mut Rng, n: usize| (n + rng.below(5)).saturating_sub(2);
        let target = input.iter().skip_while(|&&b| b != b' ').skip(1);
        let target_len = target.take_while(|&&b| b != b' ').count();
        let head_len = input
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .map_or(input.len(), |at| at + 4);
        let lines = input[..head_len]
            .windows(2)
            .filter(|w| w == b"\r\n")
            .count();
        Limits {
            max_head_bytes: near(rng, head_len),
            max_headers: near(rng, lines.saturating_sub(2)),
            max_uri_len: near(rng, target_len),
        }
    }

    #[test]
    fn fast_path_agrees_with_general_path_on_generated_heads() {
        const CASES: usize = 500_000;
        let cases = std::env::var("VOLT_DIFF_CASES")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(CASES);
        let seed = std::env::var("VOLT_DIFF_SEED")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0x5eed_cafe_f00d_u64);
        let mut rng = Rng(seed | 1);
        let mut input = Vec::new();
        let mut taken = 0usize;
        for _ in 0..cases {
            generate(&mut rng, &mut input);
            let limits = limits_for(&mut rng, &input);
            taken += usize::from(check(&input, &limits));
            // A prefix of the same head: the fast path must not take it as something else, and
            // a prefix of an accepted head is only ever "need more bytes".
            let cut = rng.below(input.len() + 1);
            check(&input[..cut], &limits);
            if let Ok(Some(head)) = parse_request(&input, &limits) {
                if cut < head.head_len {
                    assert_eq!(
                        parse_request(&input[..cut], &limits),
                        Ok(None),
                        "prefix {cut} of {:?} {limits:?}",
                        String::from_utf8_lossy(&input)
                    );
                }
            }
        }
        assert!(
            taken > cases / 4,
            "the fast path answered only {taken} of {cases}"
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
