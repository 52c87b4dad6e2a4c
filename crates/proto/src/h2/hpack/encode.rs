//! Encoding our header blocks (RFC 7541 §6).

use super::huffman;
use super::table::{
    static_name_index, DynamicTable, EntryName, DYNAMIC_BASE, ENTRY_OVERHEAD, STATIC,
};

/// The largest dynamic table the encoder keeps, whatever the peer allows: the default
/// SETTINGS_HEADER_TABLE_SIZE, which holds a response's recurring fields many times over.
const MAX_TABLE_SIZE: usize = 4096;

/// The largest entry (name + value + 32) worth remembering: a longer field would evict
/// several short recurring ones to save bytes on one that rarely recurs.
const MAX_REMEMBERED: usize = 512;

/// Buckets of [`Encoder::recent`]: a power of two, well above the number of distinct
/// remembered fields a server sends, so collisions are rare (and cost only compression).
const RECENT_BUCKETS: usize = 64;

/// Static index of `content-length`.
const CONTENT_LENGTH: usize = 28;

/// How a field may be remembered by the peer's decoder (RFC 7541 §6.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Indexing {
    /// The same name and value recur (`server`, `content-type`, `date`): the first time it is
    /// sent literally and added to the dynamic table, afterwards as a one- or two-byte index.
    /// A field whose entry (name + value + 32 bytes) is over 512 bytes or over the peer's
    /// table size is sent as [`Once`](Indexing::Once) instead.
    Remember,
    /// The value changes every time (`content-length`, `etag`): a literal without indexing,
    /// so it does not push recurring fields out of the table.
    Once,
    /// Sensitive (`authorization`, `set-cookie`): a never-indexed literal, which proxies must
    /// forward the same way (§7.1.3), so the value cannot be probed through compression.
    Never,
}

impl Indexing {
    /// The policy for a lowercase field name: [`Never`](Indexing::Never) for credentials and
    /// cookies, [`Once`](Indexing::Once) for fields whose value is usually unique to the
    /// response, [`Remember`](Indexing::Remember) for the rest.
    pub fn for_name(name: &[u8]) -> Indexing {
        match name {
            b"authorization" | b"proxy-authorization" | b"cookie" | b"set-cookie" => {
                Indexing::Never
            }
            b"content-length" | b"content-range" | b"etag" | b"last-modified" | b"location"
            | b"age" => Indexing::Once,
            _ => Indexing::Remember,
        }
    }
}

/// Encodes our header blocks.
///
/// Literal strings are Huffman-coded when that is shorter, which is the common case for
/// header text (about 5/8 of the raw size); measuring the coded length is one table lookup
/// per byte, and a remembered field pays it only the first time.
#[derive(Debug)]
pub struct Encoder {
    /// A copy of the peer's decoder table: what we added, evicted as the peer evicts.
    table: DynamicTable,
    /// Entry numbers ([`DynamicTable::inserted`]) of remembered fields, by a hash of name and
    /// value: finding a field again is one hash, one lookup and one compare. A bucket holds the
    /// latest field that hashed to it; an older one it displaced is simply sent again.
    recent: [usize; RECENT_BUCKETS],
    size_update: SizeUpdate,
}

/// Whether the next block must start with dynamic table size updates (RFC 7541 §4.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SizeUpdate {
    None,
    /// The size changed since the last block: the smallest it went to (if lower than the
    /// final size, the peer must evict down to it first), then the final size.
    Pending {
        lowest: usize,
        last: usize,
    },
}

impl Default for Encoder {
    fn default() -> Self {
        Encoder::new()
    }
}

impl Encoder {
    /// An encoder for a peer with the default SETTINGS_HEADER_TABLE_SIZE (4096).
    pub fn new() -> Encoder {
        Encoder {
            table: DynamicTable::new(MAX_TABLE_SIZE),
            recent: [0; RECENT_BUCKETS],
            size_update: SizeUpdate::None,
        }
    }

    /// The peer's SETTINGS_HEADER_TABLE_SIZE: the encoder shrinks its table (never grows
    /// beyond 4096 even if allowed) and emits the required dynamic table size update at the
    /// start of the next block.
    pub fn set_max_table_size(&mut self, size: usize) {
        let size = size.min(MAX_TABLE_SIZE);
        if size == self.table.max_size() && self.size_update == SizeUpdate::None {
            return;
        }
        self.table.set_max_size(size);
        self.size_update = match self.size_update {
            SizeUpdate::None => SizeUpdate::Pending {
                lowest: size,
                last: size,
            },
            SizeUpdate::Pending { lowest, .. } => SizeUpdate::Pending {
                lowest: lowest.min(size),
                last: size,
            },
        };
    }

    /// Starts a block (emits a pending size update if any).
    pub fn begin(&mut self, dst: &mut Vec<u8>) {
        if let SizeUpdate::Pending { lowest, last } = self.size_update {
            if lowest < last {
                integer(dst, 0x20, 5, lowest);
            }
            integer(dst, 0x20, 5, last);
            self.size_update = SizeUpdate::None;
        }
    }

    /// `:status`: indexed for the 7 statuses in the static table, otherwise a literal
    /// without indexing under the static name.
    pub fn status(&mut self, status: u16, dst: &mut Vec<u8>) {
        let index = match status {
            200 => 8,
            204 => 9,
            206 => 10,
            304 => 11,
            400 => 12,
            404 => 13,
            500 => 14,
            _ => {
                integer(dst, 0x00, 4, 8);
                string(dst, itoa::Buffer::new().format(status).as_bytes());
                return;
            }
        };
        dst.push(0x80 | index);
    }

    /// `content-length`, the field that changes on every response: a literal without
    /// indexing under the static name, without looking the name up.
    pub fn content_length(&mut self, len: u64, dst: &mut Vec<u8>) {
        integer(dst, 0x00, 4, CONTENT_LENGTH);
        string(dst, itoa::Buffer::new().format(len).as_bytes());
    }

    /// One field. `name` is lowercase.
    ///
    /// `indexing` says whether the peer should remember it (see [`Indexing`]). A field equal
    /// to a static table entry is sent as its index whatever `indexing` says; a literal takes
    /// its name from the static table where it is there.
    pub fn field(&mut self, name: &[u8], value: &[u8], indexing: Indexing, dst: &mut Vec<u8>) {
        match indexing {
            Indexing::Remember => self.remembered(name, value, dst),
            Indexing::Once => unremembered(dst, 0x00, name, value),
            Indexing::Never => unremembered(dst, 0x10, name, value),
        }
    }

    /// Our copy of the peer's table, for tests that compare it with the decoder's.
    #[cfg(test)]
    pub(super) fn table(&self) -> &DynamicTable {
        &self.table
    }

    /// Sends a field as an index if the table holds it, else as a literal that adds it.
    /// The table is looked at first: it is where a recurring field is found from the
    /// second time on, and the static name lookup is only needed on a miss.
    fn remembered(&mut self, name: &[u8], value: &[u8], dst: &mut Vec<u8>) {
        let bucket = bucket(name, value);
        if let Some(pos) = self.table.position(self.recent[bucket]) {
            if self.table.get(pos) == Some((name, value)) {
                integer(dst, 0x80, 7, DYNAMIC_BASE + pos);
                return;
            }
        }
        let name_index = static_name_index(name);
        if let Some(index) = static_field_index(name_index, name, value) {
            integer(dst, 0x80, 7, index);
            return;
        }
        let entry_size = name.len() + value.len() + ENTRY_OVERHEAD;
        if entry_size > MAX_REMEMBERED.min(self.table.max_size()) {
            literal(dst, 0x00, 4, name_index, name, value);
            return;
        }
        literal(dst, 0x40, 6, name_index, name, value);
        self.table.insert(EntryName::Bytes(name), value);
        self.recent[bucket] = self.table.inserted();
    }
}

/// Sends a field as a static index or a literal without indexing (`pattern` 0x00) or never
/// indexed (0x10).
fn unremembered(dst: &mut Vec<u8>, pattern: u8, name: &[u8], value: &[u8]) {
    let name_index = static_name_index(name);
    match static_field_index(name_index, name, value) {
        Some(index) => integer(dst, 0x80, 7, index),
        None => literal(dst, pattern, 4, name_index, name, value),
    }
}

/// The static index of the field `name: value`, given the first static index of `name`.
fn static_field_index(name_index: Option<usize>, name: &[u8], value: &[u8]) -> Option<usize> {
    let first = name_index?;
    let mut same_name = STATIC[first - 1..].iter().take_while(|(n, _)| *n == name);
    same_name.position(|(_, v)| *v == value).map(|i| first + i)
}

/// Appends a literal field: the representation's `pattern` with the name's static index in
/// an `n`-bit prefix (or 0 and the name as a string), then the value.
fn literal(
    dst: &mut Vec<u8>,
    pattern: u8,
    n: u32,
    name_index: Option<usize>,
    name: &[u8],
    value: &[u8],
) {
    match name_index {
        Some(index) => integer(dst, pattern, n, index),
        None => {
            dst.push(pattern);
            string(dst, name);
        }
    }
    string(dst, value);
}

/// Appends `value` as an integer with an `n`-bit prefix (RFC 7541 §5.1), the first byte's
/// other bits being `pattern`. QPACK's integers are the same (RFC 9204 §4.1.1).
#[inline]
pub(crate) fn integer(dst: &mut Vec<u8>, pattern: u8, n: u32, value: usize) {
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

/// Appends a string literal (RFC 7541 §5.2), Huffman-coded if that is shorter.
fn string(dst: &mut Vec<u8>, s: &[u8]) {
    let coded_len = huffman::encoded_len(s);
    if coded_len < s.len() {
        integer(dst, 0x80, 7, coded_len);
        huffman::encode(s, dst);
    } else {
        integer(dst, 0x00, 7, s.len());
        dst.extend_from_slice(s);
    }
}

/// A bucket of [`Encoder::recent`] for a field: a multiply-xor hash of both lengths, the
/// name's first 8 bytes and the value's first and last 8 (where a `date` changes). Fields
/// that differ only elsewhere share a bucket; the exact compare that follows tells them apart.
fn bucket(name: &[u8], value: &[u8]) -> usize {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut hash = ((name.len() as u64) << 32) | value.len() as u64;
    for word in [first_word(name), first_word(value), last_word(value)] {
        hash = (hash ^ word).wrapping_mul(K).rotate_left(29);
    }
    (hash >> (64 - RECENT_BUCKETS.trailing_zeros())) as usize
}

fn first_word(bytes: &[u8]) -> u64 {
    match bytes.first_chunk() {
        Some(word) => u64::from_le_bytes(*word),
        None => bytes.iter().fold(0, |word, &b| (word << 8) | b as u64),
    }
}

fn last_word(bytes: &[u8]) -> u64 {
    match bytes.last_chunk() {
        Some(word) => u64::from_le_bytes(*word),
        None => first_word(bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_match_rfc_7541_appendix_c1() {
        let mut out = Vec::new();
        integer(&mut out, 0, 5, 10);
        assert_eq!(out, [0x0a]);
        out.clear();
        integer(&mut out, 0, 5, 1337);
        assert_eq!(out, [0x1f, 0x9a, 0x0a]);
        out.clear();
        integer(&mut out, 0, 8, 42);
        assert_eq!(out, [0x2a]);
    }

    #[test]
    fn statuses_in_the_static_table_are_one_byte() {
        let mut encoder = Encoder::new();
        for (status, byte) in [
            (200, 0x88),
            (204, 0x89),
            (206, 0x8a),
            (304, 0x8b),
            (400, 0x8c),
        ] {
            let mut out = Vec::new();
            encoder.status(status, &mut out);
            assert_eq!(out, [byte]);
        }
        let mut out = Vec::new();
        encoder.status(302, &mut out);
        // Literal without indexing, name index 8, Huffman "302" (RFC 7541 C.6.1).
        assert_eq!(out, [0x08, 0x82, 0x64, 0x02]);
    }
}
