//! Content codings (RFC 9110 §8.4): which ones a request accepts (`Accept-Encoding`, §12.5.3),
//! which media types are worth compressing, and the codecs themselves: `encode` compresses
//! (a body in memory at once, a stream piece by piece), `decode` decompresses with a bound on
//! what one step gives out.
//!
//! Two codings are spoken both ways: `gzip` (RFC 1952, through flate2 on miniz_oxide, its
//! compressors reused per worker: `gzip`) and `br` (RFC 7932, through the pure-Rust brotli
//! crates), the [`Coding`]s. A third is decoded by the client
//! ([`decode::Decoder::deflate`]) but never chosen by `Compress`: `deflate` (RFC 9110
//! §8.4.1.2: the zlib format of RFC 1950, or raw DEFLATE as some servers send it). It gains
//! nothing over gzip (12 bytes of framing), its zlib-or-raw confusion made it the coding
//! clients handle worst, and every client that accepts it accepts gzip: a server has no
//! reason to prefer it (nginx and Apache do not offer it either). No `zstd` (a C library).

mod br;
pub(crate) mod decode;
pub(crate) mod encode;
mod gzip;

/// Most idle encoder parts (gzip compressors, brotli hashers) a worker keeps, of each kind.
pub(crate) const POOL: usize = 4;

/// Puts `item` back in this worker's `pool`, unless that holds [`POOL`] already: the memory
/// the pools keep stays bounded however many encoders were in use at once.
fn give_back<T>(pool: &'static std::thread::LocalKey<std::cell::RefCell<Vec<T>>>, item: T) {
    pool.with(|idle| {
        let mut idle = idle.borrow_mut();
        if idle.len() < POOL {
            idle.push(item);
        }
    });
}

/// A content coding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Coding {
    Gzip,
    Br,
}

impl Coding {
    /// The token in `Content-Encoding` and `Accept-Encoding`.
    pub(crate) fn token(self) -> &'static str {
        match self {
            Coding::Gzip => "gzip",
            Coding::Br => "br",
        }
    }

    /// The coding a `Content-Encoding` token names, if volt speaks it. `x-gzip` is gzip (RFC
    /// 9110 §8.4.1.3); tokens are case-insensitive (§8.4.1).
    pub(crate) fn from_token(token: &[u8]) -> Option<Coding> {
        if token.eq_ignore_ascii_case(b"gzip") || token.eq_ignore_ascii_case(b"x-gzip") {
            Some(Coding::Gzip)
        } else if token.eq_ignore_ascii_case(b"br") {
            Some(Coding::Br)
        } else {
            None
        }
    }
}

/// The codings a request accepts, best first, among those it prefers to no coding at all.
/// Empty: send the representation as it is (`identity`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Accepted {
    order: [Option<Coding>; 2],
}

impl Accepted {
    /// Reads the request's `Accept-Encoding` lines (RFC 9110 §12.5.3; several lines are one
    /// list, §5.3) for br and gzip:
    ///
    /// - No field at all: RFC 9110 lets the server pick any coding, but a client that did not
    ///   ask (curl without `--compressed`, scripts) would get bytes it cannot read, so it gets
    ///   `identity`, as from every common server.
    /// - A coding's weight is its own `q`, else that of `*` (any coding not listed), else 0: not
    ///   acceptable. A malformed `q` drops its element.
    /// - `identity` is acceptable unless `identity;q=0`, or `*;q=0` without `identity`, says
    ///   otherwise; not listed, it counts as the least preferred of the acceptable codings
    ///   (`gzip;q=0.5` still means "gzip, please").
    /// - Equal weights go by the server's preference: br (smaller than gzip at a like cost,
    ///   measured in `encode`), gzip, then identity.
    /// - Nothing acceptable (`identity;q=0` alone): `identity` anyway, never 406, which the
    ///   RFC allows and every browser copes with better.
    pub(crate) fn from_fields<'a>(lines: impl Iterator<Item = &'a [u8]>) -> Accepted {
        // Weights in thousandths; `None`: not mentioned.
        let (mut br, mut gzip, mut identity, mut star) = (None, None, None, None);
        let mut present = false;
        for line in lines {
            present = true;
            for element in volt_proto::list_elements(line) {
                let mut parts = element.split(|&b| b == b';');
                let coding = parts.next().unwrap_or_default().trim_ascii();
                let Some(q) = weight(parts) else {
                    continue;
                };
                let slot = match coding {
                    c if c.eq_ignore_ascii_case(b"br") => &mut br,
                    c if c.eq_ignore_ascii_case(b"gzip") || c.eq_ignore_ascii_case(b"x-gzip") => {
                        &mut gzip
                    }
                    c if c.eq_ignore_ascii_case(b"identity") => &mut identity,
                    b"*" => &mut star,
                    _ => continue,
                };
                // Listed twice: the better weight (the RFC does not say; this never refuses).
                *slot = Some(slot.map_or(q, |old: u16| old.max(q)));
            }
        }
        let mut accepted = Accepted::default();
        if !present {
            return accepted;
        }
        // Unlisted identity: acceptable (unless `*;q=0`), below anything listed.
        let identity = identity.or(star).unwrap_or(0);
        let mut candidates: [(Coding, u16); 2] = [
            (Coding::Br, br.or(star).unwrap_or(0)),
            (Coding::Gzip, gzip.or(star).unwrap_or(0)),
        ];
        // Stable: equal weights keep the server's order.
        candidates.sort_by_key(|&(_, q)| std::cmp::Reverse(q));
        let mut n = 0;
        for (coding, q) in candidates {
            if q > 0 && q >= identity {
                accepted.order[n] = Some(coding);
                n += 1;
            }
        }
        accepted
    }

    /// The request's codings (see [`Accepted::from_fields`]).
    pub(crate) fn of(req: &crate::Request) -> Accepted {
        let lines = req
            .headers()
            .filter(|(name, _)| name.eq_ignore_ascii_case("accept-encoding"))
            .map(|(_, value)| value);
        Accepted::from_fields(lines)
    }

    /// The codings, best first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = Coding> + '_ {
        self.order.iter().map_while(|c| *c)
    }

    /// The best coding, if any beats identity.
    pub(crate) fn best(&self) -> Option<Coding> {
        self.order[0]
    }
}

/// The weight of a list element from its parameters (§12.4.2: `q=` with at most three
/// decimals, 0 to 1), in thousandths: 1000 when absent, `None` when malformed.
fn weight<'a>(params: impl Iterator<Item = &'a [u8]>) -> Option<u16> {
    let mut q = 1000;
    for param in params {
        let param = param.trim_ascii();
        let Some(value) = param
            .strip_prefix(b"q=")
            .or_else(|| param.strip_prefix(b"Q="))
        else {
            continue; // no other parameter means anything here
        };
        q = qvalue(value)?;
    }
    Some(q)
}

/// `qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] )`, in thousandths.
fn qvalue(value: &[u8]) -> Option<u16> {
    let (&first, rest) = value.split_first()?;
    let decimals = match rest {
        [] => &[][..],
        [b'.', digits @ ..] if digits.len() <= 3 => digits,
        _ => return None,
    };
    if !decimals.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut thousandths = 0u16;
    for i in 0..3 {
        thousandths = thousandths * 10 + decimals.get(i).map_or(0, |d| u16::from(d - b'0'));
    }
    match first {
        b'0' => Some(thousandths),
        b'1' if thousandths == 0 => Some(1000),
        _ => None,
    }
}

/// Whether a body of this `Content-Type` is worth compressing: text, and the structured text
/// formats served as `application/…` (JSON, JavaScript, XML and any `+json`/`+xml` type, SVG
/// among them), WebAssembly and the uncompressed font formats. Images, audio, video,
/// archives, WOFF fonts and PDFs are compressed already, or nearly as small as they get.
pub(crate) fn compressible(content_type: &[u8]) -> bool {
    let essence = content_type
        .split(|&b| b == b';')
        .next()
        .unwrap_or_default()
        .trim_ascii();
    let Some(slash) = essence.iter().position(|&b| b == b'/') else {
        return false;
    };
    let (kind, subtype) = (&essence[..slash], &essence[slash + 1..]);
    let lower = subtype.to_ascii_lowercase();
    if kind.eq_ignore_ascii_case(b"text") {
        return true;
    }
    if lower.ends_with(b"+json") || lower.ends_with(b"+xml") {
        return true;
    }
    const APPLICATION: [&[u8]; 10] = [
        b"json",
        b"javascript",
        b"x-javascript",
        b"ecmascript",
        b"xml",
        b"wasm",
        b"x-ndjson",
        b"yaml",
        b"toml",
        b"vnd.ms-fontobject",
    ];
    if kind.eq_ignore_ascii_case(b"application") {
        return APPLICATION.contains(&&lower[..]);
    }
    if kind.eq_ignore_ascii_case(b"font") {
        return [&b"ttf"[..], b"otf", b"collection"].contains(&&lower[..]);
    }
    kind.eq_ignore_ascii_case(b"image") && (lower == b"x-icon" || lower == b"vnd.microsoft.icon")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accepted(fields: &[&str]) -> Vec<Coding> {
        Accepted::from_fields(fields.iter().map(|f| f.as_bytes()))
            .iter()
            .collect()
    }

    use Coding::{Br, Gzip};

    #[test]
    fn negotiation_by_weight_then_server_preference() {
        assert_eq!(accepted(&[]), []); // no field: identity
        assert_eq!(accepted(&[""]), []); // empty: identity only (§12.5.3)
        assert_eq!(accepted(&["gzip"]), [Gzip]);
        assert_eq!(accepted(&["gzip, deflate, br"]), [Br, Gzip]);
        assert_eq!(accepted(&["GZIP;Q=0.8, br;q=0.9"]), [Br, Gzip]);
        assert_eq!(accepted(&["gzip;q=1.0, br;q=0.999"]), [Gzip, Br]);
        assert_eq!(accepted(&["gzip", "br"]), [Br, Gzip]); // lines are one list
        assert_eq!(accepted(&["x-gzip"]), [Gzip]);
        assert_eq!(accepted(&["*"]), [Br, Gzip]);
        assert_eq!(accepted(&["*;q=0.5, gzip"]), [Gzip, Br]);
        assert_eq!(accepted(&["*, br;q=0"]), [Gzip]);
        assert_eq!(accepted(&["deflate"]), []);
        assert_eq!(accepted(&["gzip;q=0"]), []);
        // Identity listed above a coding wins; unlisted, it comes last.
        assert_eq!(accepted(&["gzip;q=0.5, identity"]), []);
        assert_eq!(accepted(&["gzip;q=0.5, identity;q=0.5"]), [Gzip]);
        assert_eq!(accepted(&["gzip;q=0.5"]), [Gzip]);
        assert_eq!(accepted(&["identity;q=0, *;q=0"]), []); // nothing: identity anyway
        assert_eq!(accepted(&["identity;q=0, gzip;q=0.1"]), [Gzip]);
        // Malformed weights drop their element only.
        assert_eq!(accepted(&["gzip;q=2, br"]), [Br]);
        assert_eq!(accepted(&["gzip;q=0.1234, br;q=1.001"]), []);
        assert_eq!(accepted(&["gzip ; q=0.3 , ,br;q=0.2"]), [Gzip, Br]);
    }

    #[test]
    fn qvalues() {
        assert_eq!(qvalue(b"0"), Some(0));
        assert_eq!(qvalue(b"0."), Some(0));
        assert_eq!(qvalue(b"0.5"), Some(500));
        assert_eq!(qvalue(b"0.005"), Some(5));
        assert_eq!(qvalue(b"1.000"), Some(1000));
        for bad in [&b""[..], b"1.5", b"2", b".5", b"0.0000", b"0,5", b"0.a"] {
            assert_eq!(qvalue(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn compressible_types() {
        for yes in [
            "text/html; charset=utf-8",
            "text/event-stream",
            "application/json",
            "Application/JSON",
            "application/problem+json",
            "application/javascript",
            "image/svg+xml",
            "application/wasm",
            "font/ttf",
        ] {
            assert!(compressible(yes.as_bytes()), "{yes}");
        }
        for no in [
            "image/png",
            "application/octet-stream",
            "font/woff2",
            "application/zip",
            "video/mp4",
            "json",
            "",
        ] {
            assert!(!compressible(no.as_bytes()), "{no}");
        }
    }
}
