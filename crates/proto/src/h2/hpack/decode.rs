//! Decoding header blocks (RFC 7541 §3, §6).

use super::huffman;
use super::table::{DynamicTable, EntryName, DYNAMIC_BASE, STATIC};
use super::DecodeError;

/// Decodes header blocks from the peer.
///
/// Holds the peer's dynamic table and a scratch buffer for Huffman-coded strings. Decoding an
/// indexed field or a raw literal copies nothing; a literal with incremental indexing copies
/// its name and value into the table once. Neither allocates once the table's buffer and the
/// scratch buffer have grown to their working size.
#[derive(Debug)]
pub struct Decoder {
    table: DynamicTable,
    /// Our SETTINGS_HEADER_TABLE_SIZE: the most a dynamic table size update may ask for.
    max_table_size: usize,
    /// Huffman-decoded names and values of the field being decoded.
    scratch: Vec<u8>,
}

/// A string literal's bytes: in the block (raw) or in the scratch buffer (Huffman-decoded).
/// QPACK's decoder keeps its literals the same way.
#[derive(Clone, Copy)]
pub(crate) enum Text<'b> {
    Bytes(&'b [u8]),
    /// `scratch[from..to]`.
    Scratch(usize, usize),
}

impl<'b> Text<'b> {
    pub(crate) fn get<'a>(self, scratch: &'a [u8]) -> &'a [u8]
    where
        'b: 'a,
    {
        match self {
            Text::Bytes(bytes) => bytes,
            Text::Scratch(from, to) => &scratch[from..to],
        }
    }
}

/// A literal's name: a string, or the name of a dynamic table entry, kept as its position
/// because the table changes before the name is copied into it.
#[derive(Clone, Copy)]
enum Name<'b> {
    Text(Text<'b>),
    Entry(usize),
}

impl Decoder {
    /// `max_table_size`: our SETTINGS_HEADER_TABLE_SIZE (4096 by default); the peer's dynamic
    /// table size updates may not exceed it.
    pub fn new(max_table_size: usize) -> Decoder {
        Decoder {
            table: DynamicTable::new(max_table_size),
            max_table_size,
            scratch: Vec::new(),
        }
    }

    /// Decodes one complete header block (HEADERS + CONTINUATION payloads, concatenated),
    /// calling `field(name, value)` for each field in order. Names and values borrow from the
    /// block, the table or a scratch buffer.
    ///
    /// `field` returning `Err` stops the calls to `field`, and `decode` returns that error.
    /// The rest of the block is still decoded into the dynamic table, which the peer's encoder
    /// has already updated: a stream can be refused (a field too large, a malformed field)
    /// without breaking the connection's later blocks. An error of the block itself (every
    /// other [`DecodeError`]) takes precedence and ends decoding at once.
    pub fn decode<F>(&mut self, block: &[u8], mut field: F) -> Result<(), DecodeError>
    where
        F: FnMut(&[u8], &[u8]) -> Result<(), DecodeError>,
    {
        let mut src = Reader { block, pos: 0 };
        let mut rejected = None;
        let mut fields_seen = false;
        while let Some(first) = src.peek() {
            if first & 0x80 != 0 {
                // Indexed field (§6.1).
                let index = src.integer(7)?;
                let (name, value) = self.indexed(index)?;
                if rejected.is_none() {
                    rejected = field(name, value).err();
                }
            } else if first & 0xe0 == 0x20 {
                // Dynamic table size update (§6.3): only before the first field (§4.2).
                if fields_seen {
                    return Err(DecodeError::LateTableSizeUpdate);
                }
                let size = src.integer(5)?;
                if size > self.max_table_size {
                    return Err(DecodeError::TableSizeTooLarge);
                }
                self.table.set_max_size(size);
                continue;
            } else {
                // Literal: with incremental indexing (01, §6.2.1), without indexing (0000,
                // §6.2.2) or never indexed (0001, §6.2.3).
                let remember = first & 0x40 != 0;
                let index = src.integer(if remember { 6 } else { 4 })?;
                self.scratch.clear();
                let name = match index {
                    0 => Name::Text(self.string(&mut src)?),
                    _ => self.indexed_name(index)?,
                };
                let value = self.string(&mut src)?;
                if rejected.is_none() {
                    let name = match name {
                        Name::Text(text) => text.get(&self.scratch),
                        Name::Entry(i) => self.table.name(i),
                    };
                    rejected = field(name, value.get(&self.scratch)).err();
                }
                if remember {
                    let name = match name {
                        Name::Text(text) => EntryName::Bytes(text.get(&self.scratch)),
                        Name::Entry(i) => EntryName::Entry(i),
                    };
                    self.table.insert(name, value.get(&self.scratch));
                }
            }
            fields_seen = true;
        }
        rejected.map_or(Ok(()), Err)
    }

    /// The peer's dynamic table, for tests that check its state.
    #[cfg(test)]
    pub(super) fn table(&self) -> &DynamicTable {
        &self.table
    }

    #[inline]
    fn indexed(&self, index: usize) -> Result<(&[u8], &[u8]), DecodeError> {
        match index {
            0 => Err(DecodeError::InvalidIndex),
            1..DYNAMIC_BASE => Ok(STATIC[index - 1]),
            _ => self
                .table
                .get(index - DYNAMIC_BASE)
                .ok_or(DecodeError::InvalidIndex),
        }
    }

    /// The name at `index` (not 0).
    fn indexed_name(&self, index: usize) -> Result<Name<'static>, DecodeError> {
        if index < DYNAMIC_BASE {
            return Ok(Name::Text(Text::Bytes(STATIC[index - 1].0)));
        }
        let i = index - DYNAMIC_BASE;
        if i < self.table.len() {
            Ok(Name::Entry(i))
        } else {
            Err(DecodeError::InvalidIndex)
        }
    }

    /// Reads a string literal (§5.2); a Huffman-coded one is decoded into the scratch buffer.
    fn string<'b>(&mut self, src: &mut Reader<'b>) -> Result<Text<'b>, DecodeError> {
        let huffman_coded = src.peek().ok_or(DecodeError::Truncated)? & 0x80 != 0;
        let len = src.integer(7)?;
        let bytes = src.take(len)?;
        if !huffman_coded {
            return Ok(Text::Bytes(bytes));
        }
        let from = self.scratch.len();
        huffman::decode(bytes, &mut self.scratch)?;
        Ok(Text::Scratch(from, self.scratch.len()))
    }
}

/// A cursor over a header block.
struct Reader<'b> {
    block: &'b [u8],
    pos: usize,
}

impl<'b> Reader<'b> {
    #[inline]
    fn peek(&self) -> Option<u8> {
        self.block.get(self.pos).copied()
    }

    /// Reads an integer with an `n`-bit prefix (§5.1), the rest of the first byte being the
    /// representation's pattern. Values above `u32::MAX` are refused: no index, length or
    /// table size can be that large.
    #[inline]
    fn integer(&mut self, n: u32) -> Result<usize, DecodeError> {
        let max_prefix = (1u8 << n) - 1;
        let first = self.peek().ok_or(DecodeError::Truncated)? & max_prefix;
        self.pos += 1;
        if first < max_prefix {
            return Ok(first as usize);
        }
        let mut value = max_prefix as u64;
        let mut shift = 0;
        loop {
            let b = self.peek().ok_or(DecodeError::Truncated)?;
            self.pos += 1;
            value += ((b & 0x7f) as u64) << shift;
            if value > u32::MAX as u64 {
                return Err(DecodeError::IntegerOverflow);
            }
            if b & 0x80 == 0 {
                return Ok(value as usize);
            }
            shift += 7;
            if shift > 28 {
                // Five continuation bytes and still going: zero-padded, or too large.
                return Err(DecodeError::IntegerOverflow);
            }
        }
    }

    #[inline]
    fn take(&mut self, len: usize) -> Result<&'b [u8], DecodeError> {
        let bytes = self
            .block
            .get(self.pos..self.pos + len)
            .ok_or(DecodeError::Truncated)?;
        self.pos += len;
        Ok(bytes)
    }
}
