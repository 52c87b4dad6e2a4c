//! Decoding field sections (RFC 9204 §4.5) without a dynamic table.
//!
//! We announce SETTINGS_QPACK_MAX_TABLE_CAPACITY 0 (the default), so the peer's encoder may
//! not insert anything (RFC 9204 §3.2.3): every section must have a Required Insert Count of
//! 0, and any reference to the dynamic table, relative or post-base, can only be an error.
//! With no table there is no state between sections either, so a section can be decoded (or
//! abandoned half-way) on its own, in any order.

use super::table::STATIC;
use crate::h2::hpack::huffman;
use crate::h3::{Code, Error};

/// Decodes field sections.
///
/// Holds only a scratch buffer for Huffman-coded strings, reused from one field to the next,
/// so decoding allocates nothing once it has grown to the longest coded string seen.
#[derive(Debug, Default)]
pub struct Decoder {
    scratch: Vec<u8>,
}

/// One decoded field line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field<'a> {
    /// The name, as sent (QPACK does not check it: the request's rules do).
    pub name: &'a [u8],
    /// The value.
    pub value: &'a [u8],
    /// The N bit (RFC 9204 §4.5.4–4.5.6): the field must never go into a dynamic table, and
    /// an intermediary that forwards it must send it as a literal with N set too. Indexed
    /// field lines have no N bit and report `false`.
    pub never_indexed: bool,
}

impl Decoder {
    /// A decoder; there is nothing to configure.
    pub fn new() -> Decoder {
        Decoder::default()
    }

    /// Decodes one complete field section (a HEADERS frame's payload), calling `field` for
    /// each field line in order. `field` returning `Err` stops decoding, and `decode` returns
    /// that error: nothing needs the rest of the section, as no table must be kept in step.
    ///
    /// Errors of the section itself are connection errors of type QPACK_DECOMPRESSION_FAILED
    /// (RFC 9204 §2.2.3, §4.5).
    pub fn decode<F>(&mut self, section: &[u8], mut field: F) -> Result<(), Error>
    where
        F: FnMut(Field<'_>) -> Result<(), Error>,
    {
        let mut src = Reader { src: section };
        // The prefix (§4.5.1): Required Insert Count, then the sign bit and Delta Base.
        if src.integer(8)? != 0 {
            return Err(failed("field section refers to the dynamic table"));
        }
        let sign = src.peek().ok_or(TRUNCATED)? & 0x80 != 0;
        let _delta_base = src.integer(7)?;
        // Base = Required Insert Count - Delta Base - 1 with the sign bit: negative when the
        // count is 0, which §4.5.1.2 makes an error. With the sign bit clear, Base is only
        // used to resolve dynamic references, of which there may be none.
        if sign {
            return Err(failed("negative Base"));
        }
        while let Some(first) = src.peek() {
            if first & 0x80 != 0 {
                // Indexed field line (§4.5.2): 1, T, 6-bit index.
                let is_static = first & 0x40 != 0;
                let index = src.integer(6)?;
                let (name, value) = static_entry(is_static, index)?;
                field(Field {
                    name,
                    value,
                    never_indexed: false,
                })?;
            } else if first & 0x40 != 0 {
                // Literal field line with name reference (§4.5.4): 01, N, T, 4-bit index.
                let never_indexed = first & 0x20 != 0;
                let is_static = first & 0x10 != 0;
                let index = src.integer(4)?;
                let (name, _) = static_entry(is_static, index)?;
                self.scratch.clear();
                let value = self.string(&mut src, 7)?;
                field(Field {
                    name,
                    value: value.get(&self.scratch),
                    never_indexed,
                })?;
            } else if first & 0x20 != 0 {
                // Literal field line with literal name (§4.5.6): 001, N, H, 3-bit length.
                let never_indexed = first & 0x10 != 0;
                self.scratch.clear();
                let name = self.string(&mut src, 3)?;
                let value = self.string(&mut src, 7)?;
                field(Field {
                    name: name.get(&self.scratch),
                    value: value.get(&self.scratch),
                    never_indexed,
                })?;
            } else {
                // 0001: indexed field line with post-base index (§4.5.3); 0000: literal with
                // post-base name reference (§4.5.5). Both name entries after Base, which
                // only a dynamic table has.
                return Err(failed("post-base reference to the dynamic table"));
            }
        }
        Ok(())
    }

    /// Reads a string literal (§4.1.2) whose H bit sits just above an `n`-bit length prefix;
    /// a Huffman-coded one is decoded onto the end of the scratch buffer.
    fn string<'s>(&mut self, src: &mut Reader<'s>, n: u32) -> Result<Text<'s>, Error> {
        let huffman_coded = src.peek().ok_or(TRUNCATED)? & (1 << n) != 0;
        let len = src.integer(n)?;
        let bytes = src.take(len)?;
        if !huffman_coded {
            return Ok(Text::Bytes(bytes));
        }
        let from = self.scratch.len();
        huffman::decode(bytes, &mut self.scratch).map_err(|_| failed("bad Huffman code"))?;
        Ok(Text::Scratch(from, self.scratch.len()))
    }
}

/// A string literal's bytes: in the section (raw) or in the scratch buffer (Huffman-decoded).
#[derive(Clone, Copy)]
enum Text<'s> {
    Bytes(&'s [u8]),
    /// `scratch[from..to]`.
    Scratch(usize, usize),
}

impl<'s> Text<'s> {
    fn get<'a>(self, scratch: &'a [u8]) -> &'a [u8]
    where
        's: 'a,
    {
        match self {
            Text::Bytes(bytes) => bytes,
            Text::Scratch(from, to) => &scratch[from..to],
        }
    }
}

/// The static entry at `index`, if the reference is to the static table (T set).
fn static_entry(is_static: bool, index: usize) -> Result<(&'static [u8], &'static [u8]), Error> {
    if !is_static {
        return Err(failed("reference to the dynamic table"));
    }
    STATIC
        .get(index)
        .copied()
        .ok_or(failed("static table index past its end"))
}

const fn failed(why: &'static str) -> Error {
    Error::connection(Code::QPACK_DECOMPRESSION_FAILED, why)
}

const TRUNCATED: Error = failed("field section ends inside a field line");

/// A cursor over a field section.
struct Reader<'s> {
    src: &'s [u8],
}

impl<'s> Reader<'s> {
    #[inline]
    fn peek(&self) -> Option<u8> {
        self.src.first().copied()
    }

    /// Reads a prefixed integer with an `n`-bit prefix (RFC 9204 §4.1.1, the same as RFC 7541
    /// §5.1). Values over `u32::MAX` are refused (QPACK_DECOMPRESSION_FAILED): RFC 9204
    /// §4.1.1 lets values run to 62 bits, but here every integer is a Required Insert Count
    /// that must be 0, an index into a table of 99, or the length of bytes inside a section
    /// already in memory, so no larger value could be accepted anyway.
    #[inline]
    fn integer(&mut self, n: u32) -> Result<usize, Error> {
        let max_prefix = ((1u16 << n) - 1) as u8;
        let (&first, rest) = self.src.split_first().ok_or(TRUNCATED)?;
        self.src = rest;
        let first = first & max_prefix;
        if first < max_prefix {
            return Ok(first as usize);
        }
        let mut value = u64::from(max_prefix);
        let mut shift = 0;
        loop {
            let (&b, rest) = self.src.split_first().ok_or(TRUNCATED)?;
            self.src = rest;
            value += u64::from(b & 0x7f) << shift;
            if value > u64::from(u32::MAX) {
                return Err(failed("integer too large"));
            }
            if b & 0x80 == 0 {
                return Ok(value as usize);
            }
            shift += 7;
            if shift > 28 {
                // Five continuation bytes and still going: zero-padded, or too large.
                return Err(failed("integer too large"));
            }
        }
    }

    #[inline]
    fn take(&mut self, len: usize) -> Result<&'s [u8], Error> {
        if len > self.src.len() {
            return Err(TRUNCATED);
        }
        let (bytes, rest) = self.src.split_at(len);
        self.src = rest;
        Ok(bytes)
    }
}
