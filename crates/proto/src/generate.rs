//! Seeded generators of message heads for the differential tests of the request and response
//! parsers (`request/differential.rs`, `response/differential.rs`): heads built from good and
//! nasty pieces, random byte mutations, and limits at and around each head's own sizes.
//! Deterministic: the same cases on every run.

use crate::Limits;

/// A small xorshift generator: deterministic, no dependency.
pub(crate) struct Rng(u64);

impl Rng {
    /// A generator seeded with `VOLT_DIFF_SEED`, or a fixed seed.
    pub(crate) fn from_env() -> Rng {
        let seed = std::env::var("VOLT_DIFF_SEED")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0x5eed_cafe_f00d_u64);
        Rng(seed | 1)
    }
    pub(crate) fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub(crate) fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }
    pub(crate) fn pick<'a>(&mut self, items: &[&'a [u8]]) -> &'a [u8] {
        items[self.below(items.len())]
    }
}

/// Empty lines and stray bytes before the start line.
pub(crate) const PREFIXES: &[&[u8]] = &[b"\r\n", b"\r\n\r\n", b"\n", b"\r", b" "];
/// What separates the words of a start line: good is one SP.
pub(crate) const SEPS: &[&[u8]] = &[b" ", b"  ", b"\t", b""];
pub(crate) const LINE_ENDS: &[&[u8]] = &[b"\r\n", b"\n", b"\r", b"\r\r\n", b" \r\n", b"\n\r"];
pub(crate) const NAMES: &[&[u8]] = &[
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
    b"Server",
    b"Date",
    b"Content-Type",
    b"content-type",
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
    b"Content-Typ",
    b"Content-Types",
    b"Content-Lengt",
    b"Serve",
    b"Dates",
    b"Content-\x00ength",
];
pub(crate) const COLONS: &[&[u8]] = &[b":", b": ", b":\t", b":  \t ", b" :", b"::"];
pub(crate) const VALUES: &[&[u8]] = &[
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
pub(crate) const BYTES: &[u8] = &[
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

/// The bytes the exhaustive mutation tests put in place of, or before, each byte of a seed
/// head: the ones the grammar and the fast path's scanners stop at or treat specially (line
/// ends, OWS, the colon, list and host delimiters, `_` and `@` that no plain name or host
/// holds, DEL, obs-text), and ordinary ones.
pub(crate) const INTERESTING: &[u8] = &[
    0x00, b'\t', b'\n', b'\r', b' ', b':', b',', b'/', b'@', b'[', b']', b'_', 0x7f, 0x80, 0xff,
    b'A', b'0', b'?', b';',
];

/// Calls `f` on `seed` and on every head one step away from it: each byte replaced by each of
/// [`INTERESTING`], each of them inserted at every place (the end too), each byte deleted.
/// Every mutation is made in one buffer and undone after, so no case allocates.
pub(crate) fn each_mutation(seed: &[u8], mut f: impl FnMut(&[u8])) {
    let mut m = seed.to_vec();
    f(&m);
    for at in 0..=seed.len() {
        for &b in INTERESTING {
            m.insert(at, b);
            f(&m);
            m.remove(at);
            if at < seed.len() && seed[at] != b {
                m[at] = b;
                f(&m);
                m[at] = seed[at];
            }
        }
        if at < seed.len() {
            m.remove(at);
            f(&m);
            m.insert(at, seed[at]);
        }
    }
}

/// Usually one of the first `good` pieces of `list`, now and then any of them.
pub(crate) fn nasty(rng: &mut Rng, list: &[&'static [u8]], good: usize) -> &'static [u8] {
    if rng.chance(30) {
        rng.pick(list)
    } else {
        list[rng.below(good)]
    }
}

/// Field lines and the blank line that ends the head (sometimes missing), from mostly good
/// pieces: names, colons, values, obs-folds, longer values, trailing whitespace.
pub(crate) fn push_fields(rng: &mut Rng, out: &mut Vec<u8>) {
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
        out.extend_from_slice(nasty(rng, NAMES, 23));
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
}

/// Up to three random byte changes (replace, insert, remove), and now and then a cut.
pub(crate) fn mutate(rng: &mut Rng, out: &mut Vec<u8>) {
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

/// Usually the default limits; now and then limits at and around the input's own sizes, to
/// hit every boundary exactly (the URI limit at the start line's second word).
fn limits_for(rng: &mut Rng, input: &[u8]) -> Limits {
    if !rng.chance(4) {
        return Limits::default();
    }
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

/// One generated case: the head, the limits to parse it under, and whether it answers a
/// `HEAD` request (which only responses look at).
pub(crate) struct Case<'a> {
    pub input: &'a [u8],
    pub limits: &'a Limits,
    pub head_request: bool,
}

/// The differential test's loop: `VOLT_DIFF_CASES` (default 500,000) heads from `generate`,
/// each checked whole and cut short at a random place. `check` asserts that the fast and
/// general paths agree on a case and says whether the fast path answered; `parse` is the
/// public parser, giving the head length of a complete head, so a prefix of an accepted head
/// is checked to be only ever "need more bytes". Panics unless the fast path answered more
/// than a quarter of the whole heads.
pub(crate) fn run(
    generate: impl Fn(&mut Rng, &mut Vec<u8>),
    check: impl Fn(&Case<'_>) -> bool,
    parse: impl Fn(&Case<'_>) -> Result<Option<usize>, crate::ParseError>,
) {
    const CASES: usize = 500_000;
    let cases = std::env::var("VOLT_DIFF_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(CASES);
    let mut rng = Rng::from_env();
    let mut input = Vec::new();
    let mut taken = 0usize;
    for _ in 0..cases {
        generate(&mut rng, &mut input);
        let limits = limits_for(&mut rng, &input);
        let head_request = rng.chance(4);
        let case = |input| Case {
            input,
            limits: &limits,
            head_request,
        };
        taken += usize::from(check(&case(&input)));
        // A prefix of the same head: the fast path must not take it as something else, and
        // a prefix of an accepted head is only ever "need more bytes".
        let cut = rng.below(input.len() + 1);
        check(&case(&input[..cut]));
        if let Ok(Some(head_len)) = parse(&case(&input)) {
            if cut < head_len {
                assert_eq!(
                    parse(&case(&input[..cut])),
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
