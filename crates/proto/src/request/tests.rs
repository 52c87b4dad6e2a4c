//! Unit tests of the request-head parser: the fast path's scanners and its agreement with
//! the general path on the heads it takes.

use super::*;

/// Heads the fast path must take, and the seeds of the mutations below.
const CLEAN: &[&[u8]] = &[
    b"GET /plaintext HTTP/1.1\r\nHost: tfb-server\r\n\
      Accept: text/plain,text/html;q=0.9,application/xhtml+xml;q=0.9,application/xml;q=0.8,*/*;q=0.7\r\n\
      Connection: keep-alive\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: a\r\n\r\nGET /next HTTP/1.1\r\nHost: a\r\n\r\n",
    b"GET /x?y=1 HTTP/1.0\r\n\r\n",
    b"GET http://a/b HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n",
    b"POST /u HTTP/1.1\r\nHost: a:80\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\nhello",
    b"PUT /u HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    b"OPTIONS * HTTP/1.1\r\nhost:\r\nX-Empty: \t \r\nX-Tab:\ta\tb \t\r\nX-Obs: caf\xc3\xa9\r\n\
      Connection: close, upgrade\r\n\r\n",
    b"DELETE /articles/2024/http-parsing?page=2&sort=new HTTP/1.1\r\nHost: www.example.com\r\n\
      User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0\r\n\
      Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8\r\n\
      Accept-Language: en-US,en;q=0.5\r\nAccept-Encoding: gzip, deflate, br, zstd\r\n\
      Referer: https://www.example.com/articles/2024\r\nCookie: a=1; b=2\r\n\
      Upgrade-Insecure-Requests: 1\r\nSec-Fetch-Dest: document\r\nSec-Fetch-Mode: navigate\r\n\
      Priority: u=0, i\r\nContent-Length: 0\r\n\r\n",
];

/// Bytes that matter to the grammar, put in place of or between the seed's bytes.
const INTERESTING: &[u8] = &[
    b' ', b'\t', b'\r', b'\n', 0, 0x1f, 0x7f, 0x80, 0xff, b':', b',', b';', b'"', b'/', b'?', b'a',
    b'A', b'0', b'.', b'H',
];

/// Whatever the fast path answers (a head or an error) is what the general path answers;
/// on every seed, prefix, and one-byte replacement, deletion and insertion, under default
/// and tight limits.
#[test]
fn fast_path_agrees_with_general_path() {
    let tight = [
        Limits::default(),
        Limits {
            max_head_bytes: 60,
            max_headers: 2,
            max_uri_len: 6,
        },
    ];
    let mut taken = 0usize;
    for limits in &tight {
        let mut check = |input: &[u8]| {
            let mut head = RequestHead::default();
            if let Some(fast) = parse_clean(input, limits, &mut head) {
                taken += 1;
                assert_eq!(
                    fast.map(|()| Some(head)),
                    parse_general(input, limits),
                    "{:?} {limits:?}",
                    String::from_utf8_lossy(input)
                );
            }
        };
        for seed in CLEAN {
            check(seed);
            for cut in 0..seed.len() {
                check(&seed[..cut]);
            }
            for i in 0..seed.len() {
                let mut m = seed.to_vec();
                m.remove(i);
                check(&m);
                for &b in INTERESTING {
                    let mut m = seed.to_vec();
                    m[i] = b;
                    check(&m);
                    m.insert(i, b);
                    check(&m);
                }
            }
        }
    }
    assert!(taken > 10_000, "the fast path was taken only {taken} times");
}

#[test]
fn fast_path_takes_the_clean_seeds() {
    for seed in CLEAN {
        let mut into = RequestHead::default();
        let head = parse_clean(seed, &Limits::default(), &mut into);
        assert!(
            matches!(head, Some(Ok(()))),
            "{:?}: {head:?}",
            String::from_utf8_lossy(seed)
        );
    }
}

#[test]
fn known_names_match_only_themselves() {
    let known = |s: &[u8]| known_name(s).map(|(n, _)| n);
    assert_eq!(known(b"Host: a\r\n"), Some(4));
    assert_eq!(known(b"hOsT: a\r\n"), Some(4));
    assert_eq!(known(b"ACCEPT: */*"), Some(6));
    assert_eq!(known(b"Connection: close"), Some(10));
    // Words are compared only where the whole word is there: shorter, the general name
    // scan decides (and a complete head always has the bytes).
    assert_eq!(known(b"host: \r\n"), Some(4));
    assert_eq!(known(b"host: "), None);
    assert_eq!(known(b"connection: "), Some(10));
    assert_eq!(known(b"connection:"), None);
    for other in [
        // Known names without the SP: the general scan takes them.
        &b"hOsT:a"[..],
        b"Host:\ta",
        b"host:",
        b"accept:",
        b"connection:",
        b"Connection:\tclose",
        b"Host:\x00a",
        b"Accept:\x00a",
        b"Host : a",
        b"Hostname: a",
        b"Hos: a",
        b"Host",
        b"host",
        b"connection",
        b"Connect:",
        b"",
        b"Host\x1a a",
        b"Accept\x1a a",
        b"Connection\x1a",
        b"Connecti\x0fn: a",
        b"Acce\x10t: a",
        b"Connectio\x0e: a",
        b"Connection\x1a a",
        b"Content-Length: 1",
        b"X-Host: a",
    ] {
        // Also with the end of a head after them, so whole words are there to compare.
        let ended = [other, b"\r\n\r\n"].concat();
        for s in [other, &ended] {
            assert_eq!(known(s), None, "{:?}", String::from_utf8_lossy(s));
        }
    }
}

#[test]
fn targets_end_where_the_grammar_says() {
    for len in 0..20 {
        let mut s = vec![b'a'; len];
        s.extend_from_slice(b" HTTP/1.1\r\n");
        assert_eq!(target_len(&s), Some(len));
        for stop in [0u8, b'\t', b' ', 0x7f, 0x80, 0xff] {
            let mut s = vec![b'~'; 24];
            s[len] = stop;
            assert_eq!(target_len(&s), Some(len), "{stop:#x}");
        }
    }
    assert_eq!(target_len(b"/abc"), None);
}

#[test]
fn method_fast_path_matches_from_bytes() {
    for token in [
        &b"GET"[..],
        b"POST",
        b"HEAD",
        b"PUT",
        b"DELETE",
        b"OPTIONS",
        b"PATCH",
        b"get",
        b"GETS",
        b"PURGE",
    ] {
        assert_eq!(
            method_of(token).ok(),
            Method::from_bytes(token).ok(),
            "{token:?}"
        );
    }
}

/// The fast path stores a `GET` only when the reused head holds another method: a head that
/// held any method (an inline or a heap-held extension one too) gets the one parsed.
#[test]
fn reused_head_gets_each_method() {
    let methods: [&[u8]; 7] = [
        b"GET",
        b"POST",
        b"GET",
        b"PURGE",
        b"GET",
        b"A-VERY-LONG-EXTENSION-METHOD",
        b"GET",
    ];
    let mut head = RequestHead::default();
    for method in methods.iter().chain(methods.iter().rev()) {
        let mut input = method.to_vec();
        input.extend_from_slice(b" / HTTP/1.1\r\nHost: a\r\n\r\n");
        assert_eq!(
            parse_request_into(&input, &Limits::default(), &mut head),
            Ok(true)
        );
        assert_eq!(head.method, Method::from_bytes(method).unwrap());
        assert_eq!(
            Some(head.clone()),
            parse_request(&input, &Limits::default()).unwrap()
        );
    }
}

/// Field values with HTAB (which stops the fast path's value scan) or any other byte at every
/// place, at every length up to three chunks, as the only field and before another one: the
/// fast path takes the HTABs, and answers as the general path does.
#[test]
fn values_with_htabs_agree_with_general_path() {
    let limits = Limits::default();
    for len in 1..50 {
        for at in 0..len {
            for b in [b'\t', b' ', 0, b'\n', b'\r', 0x1f, 0x7f, 0x80, 0xff] {
                let mut value = vec![b'v'; len];
                value[at] = b;
                for after in [&b""[..], b"X-Next: 1\r\n"] {
                    let input = [
                        &b"GET / HTTP/1.1\r\nHost: a\r\nX-Value: "[..],
                        &value,
                        b"\r\n",
                        after,
                        b"\r\n",
                    ]
                    .concat();
                    let mut head = RequestHead::default();
                    let fast = parse_clean(&input, &limits, &mut head);
                    if b == b'\t' {
                        assert!(fast.is_some(), "{b:#x} at {at} of {len}");
                    }
                    if let Some(fast) = fast {
                        assert_eq!(
                            fast.map(|()| Some(head)),
                            parse_general(&input, &limits),
                            "{b:#x} at {at} of {len}"
                        );
                    }
                }
            }
        }
    }
}

/// Heads the fast path takes that each need one of the rules `Framing::usual` lets the usual
/// head skip: every one is still enforced, with the answer the general path gives, whether
/// the head is parsed fresh or into one that held a usual head before.
#[test]
fn rare_fields_take_every_rule() {
    use ParseError::*;
    let limits = Limits::default();
    // The head, and its body, keep_alive and expect_continue, or the error.
    type Case = (&'static [u8], Result<(BodyKind, bool, bool), ParseError>);
    let cases: &[Case] = &[
        (
            b"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
            Ok((BodyKind::Empty, true, false)),
        ),
        (b"GET / HTTP/1.1\r\n\r\n", Err(MissingHost)),
        (
            b"GET / HTTP/1.0\r\n\r\n",
            Ok((BodyKind::Empty, false, false)),
        ),
        (
            b"GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n",
            Err(DuplicateHost),
        ),
        (b"GET / HTTP/1.1\r\nHost: a b\r\n\r\n", Err(InvalidHost)),
        (b"GET / HTTP/1.1\r\nHost:a b\r\n\r\n", Err(InvalidHost)),
        (
            b"GET / HTTP/1.1\r\nHost: [::1]:80\r\n\r\n",
            Ok((BodyKind::Empty, true, false)),
        ),
        (
            b"GET / HTTP/1.1\r\nhost:a\r\n\r\n",
            Ok((BodyKind::Empty, true, false)),
        ),
        (
            b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n",
            Ok((BodyKind::Length(5), true, false)),
        ),
        (
            b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n",
            Ok((BodyKind::Empty, true, false)),
        ),
        (
            b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: x\r\n\r\n",
            Err(InvalidContentLength),
        ),
        (
            b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            Err(ConflictingContentLength),
        ),
        (
            b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 2, 2\r\n\r\n",
            Ok((BodyKind::Length(2), true, false)),
        ),
        (
            b"GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n",
            Err(TransferEncodingWithContentLength),
        ),
        (
            b"GET / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
            Err(TransferEncodingOnHttp10),
        ),
        (
            b"GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n",
            Err(ChunkedNotLast),
        ),
        (
            b"GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n",
            Ok((BodyKind::Chunked, true, false)),
        ),
        (
            b"GET / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\n",
            Ok((BodyKind::Length(1), true, true)),
        ),
        (
            b"GET / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n\r\n",
            Ok((BodyKind::Empty, true, false)),
        ),
        (
            b"GET / HTTP/1.1\r\nHost: a\r\nExpect: other\r\n\r\n",
            Err(UnsupportedExpectation),
        ),
        (
            b"GET / HTTP/1.0\r\nExpect: other\r\nConnection: keep-alive\r\n\r\n",
            Ok((BodyKind::Empty, true, false)),
        ),
        (
            b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
            Ok((BodyKind::Empty, false, false)),
        ),
    ];
    for (input, want) in cases {
        let text = String::from_utf8_lossy(input);
        for mut head in [
            RequestHead::default(),
            parse_request(CLEAN[0], &limits).unwrap().unwrap(),
        ] {
            let fast = parse_clean(input, &limits, &mut head).expect(&text);
            let got = fast.map(|()| (head.body, head.keep_alive, head.expect_continue));
            assert_eq!(&got, want, "{text}");
            let general = parse_general(input, &limits)
                .map(|head| head.map(|h| (h.body, h.keep_alive, h.expect_continue)));
            assert_eq!(general, want.clone().map(Some), "{text}");
        }
    }
}

/// What may change the answer for an unfinished head, and what may not (see
/// `UnfinishedHead`): each pair is a head found unfinished and the bytes that came next.
#[test]
fn new_bytes_that_may_change_an_unfinished_head() {
    let may_change = |old: &[u8], new: &[u8]| {
        assert_eq!(parse_request(old, &Limits::default()), Ok(None));
        UnfinishedHead::new(old).may_change(&[old, new].concat())
    };
    // A line ends (or may): the head may be complete.
    assert!(may_change(b"GET / HTTP/1.1", b"\r\n"));
    assert!(may_change(b"GET / HTTP/1.1\r", b"\n"));
    // Within the version every byte may decide (here: not yet).
    assert!(may_change(b"GET / ", b"HTTP/1."));
    assert_eq!(
        parse_request(b"GET / HTTP/1.", &Limits::default()),
        Ok(None)
    );
    // A rule is broken: the answer is an error already.
    for (old, new) in [
        (&b"GET / HTTP/1.1\r"[..], &b"X"[..]),
        (b"GET / HTTP/1.1\r\nX-A: ", b"a\x00"),
        (b"GET /a", b"\x7f"),
        (b"G", b"(ET / HTTP/1.1"),
        (b"GE", b"T\xc3 /"),
        (b"GET / ", b" HTTP/1.1"),
        (b"GET", b"  /"),
        (b"GET / ", b"XTTP/1.1"),
        (b"GET / HTTP/1.1", b"x"),
        (b"GET / HTTP/1.1", b" "),
        (b"\r\nGET / H", b"TTP/1.1x"),
        (b"GET / HTTP/1.1\r\nHo", b" st: t"),
        (b"GET / HTTP/1.1\r\nHost", b"\x7f"),
        (b"GET / HTTP/1.1\r\nHost", b" : t"),
        (b"GET / HTTP/1.1\r\nHost: t\r\n", b" folded"),
        (b"GET / HTTP/1.1\r\nHost: t\r\nX-", b"A\"B: c"),
    ] {
        let text = format!("{} then {}", old.escape_ascii(), new.escape_ascii());
        assert!(may_change(old, new), "{text}");
        let whole = [old, new].concat();
        assert!(parse_request(&whole, &Limits::default()).is_err(), "{text}");
    }
    for (old, new) in [
        (&b""[..], &b"GET /x"[..]),
        (b"\r\n", b"GET /"),
        (b"G", b"ET /"),
        (b"GET", b" /a(b)?c=\xc3\xa9"),
        (b"GET /a", b"(b)"),
        (b"GET / HTTP/1.1\r\nHost: t\r\nX-A: ", b"a\tb (c) \xff"),
        (b"GET / HTTP/1.1\r\nHost: t\r\nX-", b"A: b c"),
        (b"GET / HTTP/1.1\r\n", b"Host: a b"),
    ] {
        let text = format!("{} then {}", old.escape_ascii(), new.escape_ascii());
        assert!(!may_change(old, new), "{text}");
        let whole = [old, new].concat();
        assert_eq!(
            parse_request(&whole, &Limits::default()),
            Ok(None),
            "{text}"
        );
    }
}

/// Watching a head byte by byte says "may change" wherever the parse's answer changes (a
/// complete head or an error), and otherwise only at line ends and within the version, so
/// a dripped head is parsed again a bounded number of times per line.
#[test]
fn watching_a_dripped_head_finds_every_change() {
    let limits = Limits::default();
    for (head, answer) in [
        (
            &b"GET /a?b=c HTTP/1.1\r\nHost: t\r\nX-A: b c\r\n\r\n"[..],
            Ok(true),
        ),
        (
            b"GET / HTTP/1.1\r\nHo st: t\r\n\r\n",
            Err(ParseError::InvalidHeaderName),
        ),
        (b"GET / XTTP/1.1\r\n\r\n", Err(ParseError::InvalidVersion)),
        (b"GET / HTTP/1.1x\r\n\r\n", Err(ParseError::InvalidVersion)),
        (
            b"\r\nPOST /x HTTP/1.0\r\nHost\x7f: t\r\n",
            Err(ParseError::InvalidHeaderName),
        ),
    ] {
        let text = head.escape_ascii().to_string();
        let mut watch = UnfinishedHead::default();
        let mut parses = 0;
        let got = (1..=head.len()).find_map(|end| {
            let changed = watch.may_change(&head[..end]);
            let now = parse_request(&head[..end], &limits).map(|h| h.is_some());
            if now != Ok(false) {
                assert!(changed, "{text} at {end}");
                return Some(now);
            }
            if changed {
                parses += 1;
                watch = UnfinishedHead::new(&head[..end]);
            }
            None
        });
        assert_eq!(got, Some(answer), "{text}");
        assert!(parses <= 2 * 3 + 9, "{text}: parsed {parses} times");
    }
}
