//! The checks that make a request head (or trailer section) well-formed, shared by HTTP/2
//! (RFC 9113 §8.1–8.3) and HTTP/3 (RFC 9114 §4.1–4.3), whose rules are the same: lowercase
//! names, pseudo-header fields first and only in the head, no connection-specific fields,
//! `te` only `trailers`, a parsable `content-length`, and the pseudo-headers a request needs;
//! and, where the server offered extended CONNECT (RFC 8441 §4), its `:protocol`.
//! Both decoders call [`FieldCheck::field`] with each decoded field and
//! [`FieldCheck::finish`] at the end; the fields kept land in a [`Head`].

use crate::h2::server::Head;
use crate::{HeaderSpan, Span};

/// Why a request is malformed (RFC 9113 §8.1.1, RFC 9114 §4.1.2): a stream error,
/// `PROTOCOL_ERROR` in HTTP/2, `H3_MESSAGE_ERROR` in HTTP/3.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Malformed(pub(crate) &'static str);

/// Checks each decoded field and stores the ones to keep in the [`Head`].
pub(crate) struct FieldCheck<'a> {
    head: &'a mut Head,
    trailers: bool,
    regular_seen: bool,
    list_size: usize,
    max_list_size: usize,
    malformed: Option<Malformed>,
    /// The `host` field's value.
    host: Option<Span>,
    /// `:protocol` is known (the server sent `SETTINGS_ENABLE_CONNECT_PROTOCOL = 1`).
    extended_connect: bool,
}

impl<'a> FieldCheck<'a> {
    /// Starts checking a head (`trailers` false) or a trailer section into `head`, which is
    /// cleared first. Past `max_list_size` (names, values and 32 bytes per field, RFC 9113
    /// §6.5.2 and RFC 9114 §4.2.2) the head is marked [`Head::oversized`]. With
    /// `extended_connect`, `:protocol` is a pseudo-header like the others (RFC 8441 §4);
    /// without, an unknown one.
    pub(crate) fn new(
        head: &'a mut Head,
        trailers: bool,
        max_list_size: usize,
        extended_connect: bool,
    ) -> Self {
        head.clear();
        FieldCheck {
            head,
            trailers,
            regular_seen: false,
            list_size: 0,
            max_list_size,
            malformed: None,
            host: None,
            extended_connect,
        }
    }

    /// Whether the list went over the limit: the fields that follow need not be decoded
    /// unless the decoder must keep a table in step (HPACK must, QPACK without a dynamic
    /// table need not).
    pub(crate) fn oversized(&self) -> bool {
        self.head.oversized
    }

    /// Checks one decoded field and keeps it; the first rule broken is what
    /// [`finish`](FieldCheck::finish) reports.
    pub(crate) fn field(&mut self, name: &[u8], value: &[u8]) {
        // Past the limit the request is refused (431) whatever follows: HTTP/2 still decodes
        // the rest to keep HPACK's table in step, but it is not examined. (One byte of a block
        // can name a table entry of 4 KiB: examined, a 32 KiB block would cost a scan of
        // 128 MiB.) HTTP/3 stops decoding there.
        if self.malformed.is_some() || self.head.oversized {
            return;
        }
        if let Err(m) = self.check(name, value) {
            self.malformed = Some(m);
        }
    }

    fn check(&mut self, name: &[u8], value: &[u8]) -> Result<(), Malformed> {
        // A pass with no early exit over the value (it vectorizes) finds the rare control
        // byte; only then are the forbidden ones looked for.
        let controls = value.iter().fold(false, |seen, &b| seen | (b <= b'\r'));
        if controls && value.iter().any(|&b| matches!(b, 0 | b'\n' | b'\r')) {
            return Err(Malformed("forbidden byte in a field value"));
        }
        if matches!(value.first(), Some(b' ' | b'\t')) || matches!(value.last(), Some(b' ' | b'\t'))
        {
            return Err(Malformed("whitespace around a field value"));
        }
        self.list_size += name.len() + value.len() + 32;
        if self.list_size > self.max_list_size {
            self.head.oversized = true;
        }
        if let Some(pseudo) = name.strip_prefix(b":") {
            return self.pseudo(pseudo, value);
        }
        self.regular_seen = true;
        if name.is_empty()
            || !name
                .iter()
                .fold(true, |ok, &b| ok & LOWER_TOKEN[b as usize])
        {
            return Err(Malformed("invalid field name"));
        }
        match name {
            b"connection" | b"keep-alive" | b"proxy-connection" | b"transfer-encoding"
            | b"upgrade" => {
                return Err(Malformed("connection-specific field"));
            }
            b"te" if value != b"trailers" => return Err(Malformed("te other than trailers")),
            b"content-length" => {
                let n = parse_length(value).ok_or(Malformed("invalid content-length"))?;
                if self.head.content_length.is_some_and(|m| m != n) {
                    return Err(Malformed("conflicting content-length"));
                }
                self.head.content_length = Some(n);
            }
            b"host" if self.host.is_some() => return Err(Malformed("repeated host")),
            _ => {}
        }
        if !self.head.oversized {
            let name_span = self.head.push(name);
            let value = self.head.push(value);
            if name == b"host" {
                self.host = Some(value);
            }
            self.head.fields.push(HeaderSpan {
                name: name_span,
                value,
            });
        }
        Ok(())
    }

    fn pseudo(&mut self, name: &[u8], value: &[u8]) -> Result<(), Malformed> {
        if self.trailers {
            return Err(Malformed("pseudo-header in trailers"));
        }
        if self.regular_seen {
            return Err(Malformed("pseudo-header after a regular field"));
        }
        let head = &mut *self.head;
        let slot = match name {
            b"method" => &mut head.method,
            b"scheme" => &mut head.scheme,
            b"path" => &mut head.path,
            b"authority" => {
                if head.authority.is_some() {
                    return Err(Malformed("repeated pseudo-header"));
                }
                let span = head.push(value);
                head.authority = Some(span);
                return Ok(());
            }
            b"protocol" if self.extended_connect => {
                if head.protocol.is_some() {
                    return Err(Malformed("repeated pseudo-header"));
                }
                // RFC 8441 §4: a value from the Upgrade Token Registry, so a token (RFC 9110
                // §7.8).
                if value.is_empty() || !value.iter().all(|&b| is_tchar(b)) {
                    return Err(Malformed(":protocol not a token"));
                }
                let span = head.push(value);
                head.protocol = Some(span);
                return Ok(());
            }
            _ => return Err(Malformed("unknown pseudo-header")),
        };
        if *slot != Span::default() {
            return Err(Malformed("repeated pseudo-header"));
        }
        if value.is_empty() {
            return Err(Malformed("empty pseudo-header"));
        }
        let start = head.buf.len() as u32;
        head.buf.extend_from_slice(value);
        *slot = Span {
            start,
            end: head.buf.len() as u32,
        };
        Ok(())
    }

    /// The checks on the whole list: the pseudo-headers a request needs (§8.3.1), and `host`
    /// from `:authority`.
    pub(crate) fn finish(self) -> Result<(), Malformed> {
        if let Some(m) = self.malformed {
            return Err(m);
        }
        if self.trailers {
            return Ok(());
        }
        let head = self.head;
        let empty = Span::default();
        if head.method == empty {
            return Err(Malformed("no :method"));
        }
        let connect = head.get(head.method) == b"CONNECT";
        if head.protocol.is_some() {
            // RFC 8441 §4: `:protocol` belongs to CONNECT, which then takes `:scheme` and
            // `:path` (the target, as any request's), and `:authority` as other requests do.
            if !connect {
                return Err(Malformed(":protocol on a method other than CONNECT"));
            }
            if head.scheme == empty || head.path == empty {
                return Err(Malformed("extended CONNECT needs :scheme and :path"));
            }
        } else if connect {
            if head.scheme != empty || head.path != empty || head.authority.is_none() {
                return Err(Malformed("CONNECT needs :authority only"));
            }
        } else if head.scheme == empty || head.path == empty {
            return Err(Malformed("no :scheme or :path"));
        }
        match (head.authority, self.host) {
            // RFC 9113 §8.3.1: a `host` naming another server than `:authority` is malformed
            // (which one would the request be for?).
            (Some(authority), Some(host))
                if !head.get(authority).eq_ignore_ascii_case(head.get(host)) =>
            {
                return Err(Malformed("host differs from :authority"));
            }
            (Some(authority), None) if !head.oversized => {
                let name = head.push(b"host");
                head.fields.push(HeaderSpan {
                    name,
                    value: authority,
                });
            }
            _ => {}
        }
        Ok(())
    }
}

/// A `content-length` value: digits only.
fn parse_length(value: &[u8]) -> Option<u64> {
    if value.is_empty() || value.len() > 19 || !value.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(value.iter().fold(0, |n, &d| n * 10 + u64::from(d - b'0')))
}

/// A token character (RFC 9110 §5.6.2), either case.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_uppercase() || LOWER_TOKEN[b as usize]
}

/// Bytes allowed in an HTTP/2 field name: token characters (RFC 9110 §5.6.2) except
/// uppercase letters.
const LOWER_TOKEN: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = c.is_ascii_lowercase()
            || c.is_ascii_digit()
            || matches!(
                c,
                b'!' | b'#'
                    | b'$'
                    | b'%'
                    | b'&'
                    | b'\''
                    | b'*'
                    | b'+'
                    | b'-'
                    | b'.'
                    | b'^'
                    | b'_'
                    | b'`'
                    | b'|'
                    | b'~'
            );
        b += 1;
    }
    t
};
