//! Negotiating permessage-deflate (RFC 7692 §5, §7.1) in `Sec-WebSocket-Extensions` (RFC 6455
//! §9.1): the client's offer, the server's choice among the offers, and the client's check of
//! that choice.
//!
//! What volt can honour: it compresses with a 32 KiB window only (flate2's miniz_oxide
//! backend has no smaller one), so an offer that asks the server to use fewer than 15
//! `server_max_window_bits` is declined, and a client never offers `client_max_window_bits`
//! (which would let the server limit the client's window). Inflating works with any window,
//! so a peer's limits on its own window are always accepted.

use super::deflate::{Compressor, Decompressor};
use super::Role;

/// The extension's name (RFC 7692 §7).
const NAME: &str = "permessage-deflate";

/// How an endpoint wants permessage-deflate: which side is to forget its window after each
/// message, and how hard to compress.
///
/// `*_no_context_takeover` trades ratio for memory and CPU: without context takeover each
/// message is compressed alone (a stream of small similar messages compresses much worse),
/// but nothing of the last message has to be kept or searched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeflateConfig {
    server_no_context_takeover: bool,
    client_no_context_takeover: bool,
    level: u32,
}

impl Default for DeflateConfig {
    /// Context kept on both sides, level 6 (zlib's default).
    fn default() -> DeflateConfig {
        DeflateConfig {
            server_no_context_takeover: false,
            client_no_context_takeover: false,
            level: 6,
        }
    }
}

impl DeflateConfig {
    /// The defaults: context kept on both sides, level 6.
    pub fn new() -> DeflateConfig {
        DeflateConfig::default()
    }

    /// The server forgets its window after each message it sends: a client asks for it in
    /// its offer, a server agrees to it whatever the offer says.
    pub fn server_no_context_takeover(mut self, on: bool) -> DeflateConfig {
        self.server_no_context_takeover = on;
        self
    }

    /// The client forgets its window after each message it sends: a client says so in its
    /// offer (and does it), a server requires it in its answer.
    pub fn client_no_context_takeover(mut self, on: bool) -> DeflateConfig {
        self.client_no_context_takeover = on;
        self
    }

    /// Compression level, 0 (stored, no compression) to 9 (smallest, slowest). Default 6.
    pub fn level(mut self, level: u32) -> DeflateConfig {
        self.level = level.min(9);
        self
    }

    /// The compression level.
    pub fn compression_level(&self) -> u32 {
        self.level
    }
}

/// The parameters both ends agreed on: what each side does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeflateParams {
    /// The server resets its compressor after each message.
    pub server_no_context_takeover: bool,
    /// The client resets its compressor after each message.
    pub client_no_context_takeover: bool,
    /// The server's window is at most 2^this bytes (15 unless the answer said less).
    pub server_max_window_bits: u8,
    /// The client's window: always 15 with volt (see the module docs).
    pub client_max_window_bits: u8,
}

impl DeflateParams {
    /// The compressor for what `role` sends, at `level`.
    pub fn compressor(&self, role: Role, level: u32) -> Compressor {
        let reset = match role {
            Role::Server => self.server_no_context_takeover,
            Role::Client => self.client_no_context_takeover,
        };
        Compressor::new(level, reset)
    }

    /// The decompressor for what `role` receives.
    pub fn decompressor(&self, role: Role) -> Decompressor {
        let reset = match role {
            Role::Server => self.client_no_context_takeover,
            Role::Client => self.server_no_context_takeover,
        };
        Decompressor::new(reset)
    }
}

/// The client's `Sec-WebSocket-Extensions` value offering permessage-deflate as `config` says.
pub fn offer(config: &DeflateConfig) -> String {
    let mut offer = String::from(NAME);
    if config.server_no_context_takeover {
        offer.push_str("; server_no_context_takeover");
    }
    if config.client_no_context_takeover {
        offer.push_str("; client_no_context_takeover");
    }
    offer
}

/// The server's side: the first of the client's offers (the values of its
/// `Sec-WebSocket-Extensions` fields, in order) that volt can honour, as the agreed parameters
/// and the value of the answer's `Sec-WebSocket-Extensions`; `None` to decline them all.
///
/// An offer is declined if it is malformed (an unknown or repeated parameter, a bad value:
/// §7.1) or asks the server for a window under 15 bits. The answer keeps the server's window
/// at 15 bits, says `server_no_context_takeover` if the client asked for it or `config` wants
/// it, and `client_no_context_takeover` if the client offered it or `config` wants it; it
/// never limits the client's window. Fields that do not parse are ignored (no extension).
pub fn negotiate<'a>(
    offers: impl IntoIterator<Item = &'a [u8]>,
    config: &DeflateConfig,
) -> Option<(DeflateParams, String)> {
    for value in offers {
        let Ok(extensions) = parse(value) else {
            continue;
        };
        for (name, params) in extensions {
            if !name.eq_ignore_ascii_case(NAME) {
                continue;
            }
            let Ok(offer) = Params::from_list(&params, Side::Offer) else {
                continue;
            };
            // §7.1.2.1: the server would have to use a window this small; miniz cannot.
            if offer.server_max_window_bits.is_some_and(|bits| bits < 15) {
                continue;
            }
            let agreed = DeflateParams {
                server_no_context_takeover: offer.server_no_context_takeover
                    || config.server_no_context_takeover,
                client_no_context_takeover: offer.client_no_context_takeover
                    || config.client_no_context_takeover,
                server_max_window_bits: 15,
                client_max_window_bits: 15,
            };
            let mut answer = String::from(NAME);
            if agreed.server_no_context_takeover {
                answer.push_str("; server_no_context_takeover");
            }
            if agreed.client_no_context_takeover {
                answer.push_str("; client_no_context_takeover");
            }
            // §7.1.2.1: accepting the parameter means answering with it.
            if offer.server_max_window_bits.is_some() {
                answer.push_str("; server_max_window_bits=15");
            }
            return Some((agreed, answer));
        }
    }
    None
}

/// The client's side: checks the server's `Sec-WebSocket-Extensions` values against what was
/// offered (`offered`: permessage-deflate with that config, or nothing), and gives the agreed
/// parameters (`None`: the server declined). An extension not offered, permessage-deflate
/// twice, a malformed or unknown parameter, or `client_max_window_bits` (never offered) is an
/// error naming the fault: the client must fail the connection (RFC 6455 §4.1, RFC 7692 §5).
pub fn accept<'a>(
    answers: impl IntoIterator<Item = &'a [u8]>,
    offered: Option<&DeflateConfig>,
) -> Result<Option<DeflateParams>, String> {
    let mut agreed = None;
    for value in answers {
        let extensions = parse(value).map_err(|()| "a malformed Sec-WebSocket-Extensions")?;
        for (name, params) in extensions {
            let Some(config) = offered.filter(|_| name.eq_ignore_ascii_case(NAME)) else {
                return Err(format!("the server chose extension `{name}`, not offered"));
            };
            if agreed.is_some() {
                return Err("the server chose permessage-deflate twice".into());
            }
            let answer = Params::from_list(&params, Side::Answer)
                .map_err(|e| format!("permessage-deflate in the answer: {e}"))?;
            if answer.client_max_window_bits.is_some() {
                return Err("the server limited client_max_window_bits, not offered".into());
            }
            agreed = Some(DeflateParams {
                server_no_context_takeover: answer.server_no_context_takeover,
                // A sender may always forget its window: a client that said it would, does.
                client_no_context_takeover: answer.client_no_context_takeover
                    || config.client_no_context_takeover,
                server_max_window_bits: answer.server_max_window_bits.unwrap_or(15),
                client_max_window_bits: 15,
            });
        }
    }
    Ok(agreed)
}

/// Which message the parameters come in: their rules differ for `client_max_window_bits`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Offer,
    Answer,
}

/// permessage-deflate's parameters as one offer or answer has them.
#[derive(Default)]
struct Params {
    server_no_context_takeover: bool,
    client_no_context_takeover: bool,
    server_max_window_bits: Option<u8>,
    /// `Some(None)`: offered without a value ("I can take a limit").
    client_max_window_bits: Option<Option<u8>>,
}

impl Params {
    /// §7.1: each parameter at most once, none unknown, values as each one's rule says.
    fn from_list(list: &[(String, Option<String>)], side: Side) -> Result<Params, &'static str> {
        let mut p = Params::default();
        for (name, value) in list {
            let value = value.as_deref();
            match name.to_ascii_lowercase().as_str() {
                "server_no_context_takeover" => {
                    no_value(value)?;
                    once(p.server_no_context_takeover)?;
                    p.server_no_context_takeover = true;
                }
                "client_no_context_takeover" => {
                    no_value(value)?;
                    once(p.client_no_context_takeover)?;
                    p.client_no_context_takeover = true;
                }
                "server_max_window_bits" => {
                    once(p.server_max_window_bits.is_some())?;
                    let bits = value.ok_or("server_max_window_bits without a value")?;
                    p.server_max_window_bits = Some(window_bits(bits)?);
                }
                "client_max_window_bits" => {
                    once(p.client_max_window_bits.is_some())?;
                    // §7.1.2.2: an offer may leave the value out; an answer may not.
                    let bits = match (value, side) {
                        (None, Side::Offer) => None,
                        (None, Side::Answer) => {
                            return Err("client_max_window_bits without a value")
                        }
                        (Some(bits), _) => Some(window_bits(bits)?),
                    };
                    p.client_max_window_bits = Some(bits);
                }
                _ => return Err("an unknown parameter"),
            }
        }
        Ok(p)
    }
}

fn no_value(value: Option<&str>) -> Result<(), &'static str> {
    match value {
        None => Ok(()),
        Some(_) => Err("a value on a parameter that takes none"),
    }
}

fn once(seen: bool) -> Result<(), &'static str> {
    match seen {
        false => Ok(()),
        true => Err("a parameter given twice"),
    }
}

/// §7.1.2: a decimal 8 to 15, no leading zero.
fn window_bits(value: &str) -> Result<u8, &'static str> {
    match value {
        "8" | "9" | "10" | "11" | "12" | "13" | "14" | "15" => Ok(value.parse().expect("digits")),
        _ => Err("window bits not in 8-15"),
    }
}

/// One extension of a list: its name, and its parameters with their values (unquoted).
type Extension = (String, Vec<(String, Option<String>)>);

/// Parses one `Sec-WebSocket-Extensions` value (RFC 6455 §9.1):
/// `1#( token *( ";" token [ "=" ( token / quoted-string ) ] ) )`, with optional white space
/// around the separators and empty list elements allowed (RFC 9110 §5.6.1). A quoted value
/// must be a token once unquoted (§9.1).
fn parse(value: &[u8]) -> Result<Vec<Extension>, ()> {
    let mut p = Parser { s: value, at: 0 };
    let mut list = Vec::new();
    loop {
        p.ows();
        if p.eat(b',') {
            continue;
        }
        if p.done() {
            return Ok(list);
        }
        let name = p.token()?;
        let mut params = Vec::new();
        loop {
            p.ows();
            if p.done() || p.eat(b',') {
                break;
            }
            if !p.eat(b';') {
                return Err(());
            }
            p.ows();
            let param = p.token()?;
            p.ows();
            let value = match p.eat(b'=') {
                false => None,
                true => {
                    p.ows();
                    let v = match p.peek() == Some(b'"') {
                        true => p.quoted()?,
                        false => p.token()?,
                    };
                    Some(v)
                }
            };
            params.push((param, value));
        }
        list.push((name, params));
    }
}

struct Parser<'a> {
    s: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn done(&self) -> bool {
        self.at == self.s.len()
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.at).copied()
    }

    fn eat(&mut self, b: u8) -> bool {
        let here = self.peek() == Some(b);
        self.at += here as usize;
        here
    }

    fn ows(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.at += 1;
        }
    }

    /// RFC 9110 §5.6.2's token: one or more tchars.
    fn token(&mut self) -> Result<String, ()> {
        let start = self.at;
        while self.peek().is_some_and(is_tchar) {
            self.at += 1;
        }
        match self.at > start {
            true => Ok(String::from_utf8(self.s[start..self.at].to_vec()).expect("ASCII")),
            false => Err(()),
        }
    }

    /// A quoted-string (RFC 9110 §5.6.4), unquoted, which must then be a token (§9.1).
    fn quoted(&mut self) -> Result<String, ()> {
        self.at += 1;
        let mut out = Vec::new();
        loop {
            match self.peek().ok_or(())? {
                b'"' => break,
                b'\\' => {
                    self.at += 1;
                    out.push(self.peek().ok_or(())?);
                }
                b => out.push(b),
            }
            self.at += 1;
        }
        self.at += 1;
        match !out.is_empty() && out.iter().copied().all(is_tchar) {
            true => Ok(String::from_utf8(out).expect("ASCII")),
            false => Err(()),
        }
    }
}

/// RFC 9110 §5.6.2.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(offers: &[&str], config: DeflateConfig) -> Option<(DeflateParams, String)> {
        negotiate(offers.iter().map(|o| o.as_bytes()), &config)
    }

    fn answer(value: &str) -> Option<String> {
        server(&[value], DeflateConfig::new()).map(|(_, a)| a)
    }

    #[test]
    fn parses_lists_params_and_quoted_values() {
        let list =
            parse(b"foo, permessage-deflate ; client_max_window_bits=\"10\";x ,, bar").unwrap();
        let names: Vec<_> = list.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["foo", "permessage-deflate", "bar"]);
        let params = &list[1].1;
        assert_eq!(
            params[0],
            ("client_max_window_bits".into(), Some("10".into()))
        );
        assert_eq!(params[1], ("x".into(), None));
        for bad in [
            "a;",
            "a;=1",
            "a; b=\"c d\"",
            "a; b=\"unterminated",
            "a b",
            "a;b=",
            "\"a\"",
        ] {
            assert!(parse(bad.as_bytes()).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_server_takes_the_first_offer_it_can_honour() {
        // A plain offer: nothing limited.
        assert_eq!(answer("permessage-deflate").unwrap(), "permessage-deflate");
        // Chrome's and Firefox's offer.
        let (params, a) = server(
            &["permessage-deflate; client_max_window_bits"],
            DeflateConfig::new(),
        )
        .unwrap();
        assert_eq!(a, "permessage-deflate");
        assert_eq!(params.client_max_window_bits, 15);
        // The client's wishes are granted; a window of 15 is agreed to by name.
        assert_eq!(
            answer("permessage-deflate; server_no_context_takeover; client_no_context_takeover; server_max_window_bits=15").unwrap(),
            "permessage-deflate; server_no_context_takeover; client_no_context_takeover; server_max_window_bits=15"
        );
        // A smaller server window cannot be honoured: the next offer is taken.
        let (params, a) = server(
            &["permessage-deflate; server_max_window_bits=10, permessage-deflate; client_max_window_bits=12"],
            DeflateConfig::new(),
        )
        .unwrap();
        assert_eq!(a, "permessage-deflate");
        assert!(!params.server_no_context_takeover);
        assert_eq!(answer("permessage-deflate; server_max_window_bits=9"), None);
        // Malformed offers are declined.
        for bad in [
            "permessage-deflate; server_no_context_takeover; server_no_context_takeover",
            "permessage-deflate; server_no_context_takeover=1",
            "permessage-deflate; server_max_window_bits",
            "permessage-deflate; server_max_window_bits=16",
            "permessage-deflate; client_max_window_bits=7",
            "permessage-deflate; client_max_window_bits=010",
            "permessage-deflate; mystery",
            "x-webkit-deflate-frame",
            "permessage-deflate;",
        ] {
            assert_eq!(answer(bad), None, "{bad}");
        }
        // The server's own wishes are added.
        let config = DeflateConfig::new()
            .server_no_context_takeover(true)
            .client_no_context_takeover(true);
        let (params, a) = server(&["permessage-deflate"], config).unwrap();
        assert_eq!(
            a,
            "permessage-deflate; server_no_context_takeover; client_no_context_takeover"
        );
        assert!(params.server_no_context_takeover && params.client_no_context_takeover);
    }

    #[test]
    fn the_client_checks_the_answer() {
        let config = DeflateConfig::new();
        let check = |a: &str| accept([a.as_bytes()], Some(&config));
        assert_eq!(offer(&config), "permessage-deflate");
        let p = check("permessage-deflate; server_max_window_bits=10; server_no_context_takeover")
            .unwrap()
            .unwrap();
        assert_eq!(p.server_max_window_bits, 10);
        assert!(p.server_no_context_takeover && !p.client_no_context_takeover);
        assert!(
            check("permessage-deflate; client_no_context_takeover")
                .unwrap()
                .unwrap()
                .client_no_context_takeover
        );
        assert_eq!(accept([], Some(&config)), Ok(None));
        for bad in [
            "permessage-deflate; client_max_window_bits=10",
            "permessage-deflate; client_max_window_bits",
            "permessage-deflate, permessage-deflate",
            "permessage-deflate; x=1",
            "x-other",
            "permessage-deflate; server_max_window_bits=20",
        ] {
            assert!(check(bad).is_err(), "{bad}");
        }
        // Nothing offered: any extension is an error.
        assert!(accept([&b"permessage-deflate"[..]], None).is_err());
        // A client that said it would forget its window does, whatever the answer.
        let hint = DeflateConfig::new().client_no_context_takeover(true);
        assert_eq!(
            offer(&hint),
            "permessage-deflate; client_no_context_takeover"
        );
        let p = accept([&b"permessage-deflate"[..]], Some(&hint))
            .unwrap()
            .unwrap();
        assert!(p.client_no_context_takeover);
    }
}
