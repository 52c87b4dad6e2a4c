//! Encoding our field sections (RFC 9204 §4.5) from the static table and literals.
//!
//! We never use the peer's dynamic table, so no encoder stream, no acknowledgements and no
//! blocked streams: every section stands alone, and its prefix is two zero bytes. A field
//! equal to a static entry is one or two bytes; a field whose name is there is the name's
//! index and the value; anything else is a literal name and value. Strings are Huffman-coded
//! when that is shorter, as HPACK's encoder decides ([`crate::h2::hpack::Encoder`]): measuring
//! the coded length is one table lookup per byte, and header text usually comes out at about
//! 5/8 of its size.

use super::table::indices_of;
use crate::h2::hpack::huffman;
use crate::h2::hpack::Indexing;

/// Static index of `:status: 103`, the first `:status` entry: the name reference of a status
/// that has no entry of its own.
const STATUS: usize = 24;

/// Static index of `content-length: 0`.
const CONTENT_LENGTH: usize = 4;

/// What RFC 9114 §4.2.2 counts for each field beyond its name and value.
const FIELD_OVERHEAD: u64 = 32;

/// Encodes our field sections. It keeps no dynamic table, only the size of the section being
/// written ([`size`](Encoder::size)); it is a type so that its calls read like HPACK's.
#[derive(Clone, Debug, Default)]
pub struct Encoder {
    /// The section's size as RFC 9114 §4.2.2 counts it, since [`begin`](Encoder::begin).
    size: u64,
}

impl Encoder {
    /// An encoder.
    pub fn new() -> Encoder {
        Encoder { size: 0 }
    }

    /// Starts a section: the prefix (§4.5.1), Required Insert Count 0 and Delta Base 0.
    pub fn begin(&mut self, dst: &mut Vec<u8>) {
        self.size = 0;
        dst.extend_from_slice(&[0x00, 0x00]);
    }

    /// The size of the section written since [`begin`](Encoder::begin), as RFC 9114 §4.2.2
    /// counts it: each field's name and value, uncompressed, and 32 bytes. A peer that sent
    /// SETTINGS_MAX_FIELD_SECTION_SIZE should not be sent a larger head (it would refuse it):
    /// compare this with [`Settings::max_field_section_size`](crate::h3::Settings).
    pub fn size(&self) -> u64 {
        self.size
    }

    /// `:status`: an indexed field line for the 14 statuses in the static table, otherwise a
    /// literal with the static name.
    pub fn status(&mut self, status: u16, dst: &mut Vec<u8>) {
        let index = match status {
            103 => 24,
            200 => 25,
            304 => 26,
            404 => 27,
            503 => 28,
            100 => 63,
            204 => 64,
            206 => 65,
            302 => 66,
            400 => 67,
            403 => 68,
            421 => 69,
            425 => 70,
            500 => 71,
            _ => {
                let mut digits = itoa::Buffer::new();
                let digits = digits.format(status).as_bytes();
                self.size += 7 + digits.len() as u64 + FIELD_OVERHEAD;
                name_reference(dst, false, STATUS);
                string(dst, 0x00, 7, digits);
                return;
            }
        };
        // `:status` and three digits.
        self.size += 7 + 3 + FIELD_OVERHEAD;
        indexed(dst, index);
    }

    /// `content-length`, the field that changes on every response: the static name with
    /// the digits, without looking the name up (`0` is a static entry of its own).
    pub fn content_length(&mut self, len: u64, dst: &mut Vec<u8>) {
        let mut digits = itoa::Buffer::new();
        let digits = digits.format(len).as_bytes();
        self.size += 14 + digits.len() as u64 + FIELD_OVERHEAD;
        if len == 0 {
            indexed(dst, CONTENT_LENGTH);
            return;
        }
        name_reference(dst, false, CONTENT_LENGTH);
        string(dst, 0x00, 7, digits);
    }

    /// One field; `name` is lowercase (HTTP/3 requires it, RFC 9114 §4.2).
    ///
    /// [`Indexing::Never`] sends a literal with the N bit set (RFC 9204 §4.5.4, §4.5.6), so
    /// intermediaries never put the field in a dynamic table, where it could be probed
    /// through compression: use it for credentials and cookies
    /// ([`Indexing::for_name`] says which). `Remember` and `Once` mean the same here, as we
    /// keep no dynamic table: a field equal to a static entry is sent as its index, any other
    /// as a literal, with the name's static index where there is one.
    pub fn field(&mut self, name: &[u8], value: &[u8], indexing: Indexing, dst: &mut Vec<u8>) {
        self.size += (name.len() + value.len()) as u64 + FIELD_OVERHEAD;
        let indices = indices_of(name);
        let never = indexing == Indexing::Never;
        if !never {
            let exact = indices
                .iter()
                .find(|&&i| super::table::STATIC[i as usize].1 == value);
            if let Some(&index) = exact {
                indexed(dst, index as usize);
                return;
            }
        }
        match indices.first() {
            Some(&index) => name_reference(dst, never, index as usize),
            None => {
                // Literal field line with literal name (§4.5.6): 001, N, then the name as a
                // string whose H bit and 3-bit length prefix share the first byte.
                string(dst, 0x20 | if never { 0x10 } else { 0 }, 3, name);
            }
        }
        string(dst, 0x00, 7, value);
    }
}

/// An indexed field line referring to the static table (§4.5.2): 1, T=1, 6-bit index.
#[inline]
fn indexed(dst: &mut Vec<u8>, index: usize) {
    integer(dst, 0xc0, 6, index);
}

/// The first part of a literal field line with a static name reference (§4.5.4): 01, N, T=1,
/// 4-bit index. The value follows.
#[inline]
fn name_reference(dst: &mut Vec<u8>, never: bool, index: usize) {
    integer(dst, 0x50 | if never { 0x20 } else { 0 }, 4, index);
}

/// Appends `value` as an integer with an `n`-bit prefix (RFC 9204 §4.1.1), the first byte's
/// other bits being `pattern`.
#[inline]
pub(super) fn integer(dst: &mut Vec<u8>, pattern: u8, n: u32, value: usize) {
    let max_prefix = (1usize << n) - 1;
    if value < max_prefix {
        dst.push(pattern | value as u8);
        return;
    }
    dst.push(pattern | max_prefix as u8);
    let mut rest = value - max_prefix;
    while rest >= 0x80 {
        dst.push(0x80 | (rest & 0x7f) as u8);
        rest >>= 7;
    }
    dst.push(rest as u8);
}

/// Appends a string literal (RFC 9204 §4.1.2): the H bit just above an `n`-bit length prefix
/// in a first byte whose other bits are `pattern`, then the bytes, Huffman-coded if that is
/// shorter.
fn string(dst: &mut Vec<u8>, pattern: u8, n: u32, s: &[u8]) {
    let coded_len = huffman::encoded_len(s);
    if coded_len < s.len() {
        integer(dst, pattern | (1 << n), n, coded_len);
        huffman::encode(s, dst);
    } else {
        integer(dst, pattern, n, s.len());
        dst.extend_from_slice(s);
    }
}
