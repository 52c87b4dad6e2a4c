//! The static table (RFC 7541 Appendix A) and the dynamic table (§2.3.2, §4).

use std::collections::VecDeque;

/// What an entry costs in the dynamic table beyond its name and value (RFC 7541 §4.1).
pub(super) const ENTRY_OVERHEAD: usize = 32;

/// Index 1 of the combined address space is `STATIC[0]`; index 62 is the newest dynamic entry.
pub(super) const DYNAMIC_BASE: usize = STATIC.len() + 1;

/// RFC 7541 Appendix A, in index order starting at 1.
pub(super) const STATIC: [(&[u8], &[u8]); 61] = [
    (b":authority", b""),
    (b":method", b"GET"),
    (b":method", b"POST"),
    (b":path", b"/"),
    (b":path", b"/index.html"),
    (b":scheme", b"http"),
    (b":scheme", b"https"),
    (b":status", b"200"),
    (b":status", b"204"),
    (b":status", b"206"),
    (b":status", b"304"),
    (b":status", b"400"),
    (b":status", b"404"),
    (b":status", b"500"),
    (b"accept-charset", b""),
    (b"accept-encoding", b"gzip, deflate"),
    (b"accept-language", b""),
    (b"accept-ranges", b""),
    (b"accept", b""),
    (b"access-control-allow-origin", b""),
    (b"age", b""),
    (b"allow", b""),
    (b"authorization", b""),
    (b"cache-control", b""),
    (b"content-disposition", b""),
    (b"content-encoding", b""),
    (b"content-language", b""),
    (b"content-length", b""),
    (b"content-location", b""),
    (b"content-range", b""),
    (b"content-type", b""),
    (b"cookie", b""),
    (b"date", b""),
    (b"etag", b""),
    (b"expect", b""),
    (b"expires", b""),
    (b"from", b""),
    (b"host", b""),
    (b"if-match", b""),
    (b"if-modified-since", b""),
    (b"if-none-match", b""),
    (b"if-range", b""),
    (b"if-unmodified-since", b""),
    (b"last-modified", b""),
    (b"link", b""),
    (b"location", b""),
    (b"max-forwards", b""),
    (b"proxy-authenticate", b""),
    (b"proxy-authorization", b""),
    (b"range", b""),
    (b"referer", b""),
    (b"refresh", b""),
    (b"retry-after", b""),
    (b"server", b""),
    (b"set-cookie", b""),
    (b"strict-transport-security", b""),
    (b"transfer-encoding", b""),
    (b"user-agent", b""),
    (b"vary", b""),
    (b"via", b""),
    (b"www-authenticate", b""),
];

/// The first static index whose name is `name` (lowercase), by a `match` the compiler turns
/// into a switch on length and a few compares rather than a scan of the table.
pub(super) fn static_name_index(name: &[u8]) -> Option<usize> {
    let index = match name {
        b":authority" => 1,
        b":method" => 2,
        b":path" => 4,
        b":scheme" => 6,
        b":status" => 8,
        b"accept-charset" => 15,
        b"accept-encoding" => 16,
        b"accept-language" => 17,
        b"accept-ranges" => 18,
        b"accept" => 19,
        b"access-control-allow-origin" => 20,
        b"age" => 21,
        b"allow" => 22,
        b"authorization" => 23,
        b"cache-control" => 24,
        b"content-disposition" => 25,
        b"content-encoding" => 26,
        b"content-language" => 27,
        b"content-length" => 28,
        b"content-location" => 29,
        b"content-range" => 30,
        b"content-type" => 31,
        b"cookie" => 32,
        b"date" => 33,
        b"etag" => 34,
        b"expect" => 35,
        b"expires" => 36,
        b"from" => 37,
        b"host" => 38,
        b"if-match" => 39,
        b"if-modified-since" => 40,
        b"if-none-match" => 41,
        b"if-range" => 42,
        b"if-unmodified-since" => 43,
        b"last-modified" => 44,
        b"link" => 45,
        b"location" => 46,
        b"max-forwards" => 47,
        b"proxy-authenticate" => 48,
        b"proxy-authorization" => 49,
        b"range" => 50,
        b"referer" => 51,
        b"refresh" => 52,
        b"retry-after" => 53,
        b"server" => 54,
        b"set-cookie" => 55,
        b"strict-transport-security" => 56,
        b"transfer-encoding" => 57,
        b"user-agent" => 58,
        b"vary" => 59,
        b"via" => 60,
        b"www-authenticate" => 61,
        _ => return None,
    };
    Some(index)
}

/// Where a new entry's name comes from: bytes the caller holds, or an entry already in the
/// table (which the insertion itself may evict, RFC 7541 §4.4).
#[derive(Clone, Copy, Debug)]
pub(super) enum EntryName<'a> {
    Bytes(&'a [u8]),
    Entry(usize),
}

/// The dynamic table: a FIFO of name-value pairs bounded by [`max_size`](Self::max_size).
///
/// Names and values live back to back in one byte buffer, oldest first, so inserting an entry
/// copies bytes but allocates nothing once the buffer has grown to its working size. Evicting
/// only forgets the oldest slots; their bytes are dropped in one move when they outweigh the
/// live ones, so each byte is moved at most once per time it is inserted.
#[derive(Debug)]
pub(super) struct DynamicTable {
    bytes: Vec<u8>,
    /// Stream offset of `bytes[0]`: slots hold offsets that survive dropping evicted bytes.
    base: usize,
    /// Newest first, so HPACK index `DYNAMIC_BASE + i` is `slots[i]`.
    slots: VecDeque<Slot>,
    /// Sum of the entries' sizes as RFC 7541 §4.1 counts them.
    size: usize,
    max_size: usize,
    /// Entries inserted so far: the encoder names entries by this count to find them again.
    inserted: usize,
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    start: usize,
    name_len: usize,
    value_len: usize,
}

impl Slot {
    fn size(&self) -> usize {
        self.name_len + self.value_len + ENTRY_OVERHEAD
    }
}

impl DynamicTable {
    pub(super) fn new(max_size: usize) -> DynamicTable {
        DynamicTable {
            bytes: Vec::new(),
            base: 0,
            slots: VecDeque::new(),
            size: 0,
            max_size,
            inserted: 0,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.slots.len()
    }

    #[cfg(test)]
    pub(super) fn size(&self) -> usize {
        self.size
    }

    pub(super) fn max_size(&self) -> usize {
        self.max_size
    }

    /// Entries inserted so far; the newest entry is number `inserted()`.
    pub(super) fn inserted(&self) -> usize {
        self.inserted
    }

    /// Where the entry numbered `number` (see [`inserted`](Self::inserted)) sits now, counting
    /// from the newest, or `None` once it has been evicted.
    pub(super) fn position(&self, number: usize) -> Option<usize> {
        let age = self.inserted.checked_sub(number)?;
        (age < self.slots.len()).then_some(age)
    }

    /// The `i`th entry, newest first.
    #[inline]
    pub(super) fn get(&self, i: usize) -> Option<(&[u8], &[u8])> {
        let slot = self.slots.get(i)?;
        let start = slot.start - self.base;
        let mid = start + slot.name_len;
        Some((
            &self.bytes[start..mid],
            &self.bytes[mid..mid + slot.value_len],
        ))
    }

    /// The name of the `i`th entry, newest first.
    ///
    /// # Panics
    ///
    /// If there is no such entry.
    pub(super) fn name(&self, i: usize) -> &[u8] {
        let slot = &self.slots[i];
        let start = slot.start - self.base;
        &self.bytes[start..start + slot.name_len]
    }

    /// Changes the size bound, evicting the oldest entries until the table fits.
    pub(super) fn set_max_size(&mut self, max_size: usize) {
        self.max_size = max_size;
        self.evict_to(max_size);
    }

    /// Adds an entry as the newest, evicting the oldest ones to make room. An entry larger
    /// than the whole table empties it and is not added (RFC 7541 §4.4).
    pub(super) fn insert(&mut self, name: EntryName<'_>, value: &[u8]) {
        let name_len = match name {
            EntryName::Bytes(name) => name.len(),
            EntryName::Entry(i) => self.slots[i].name_len,
        };
        let slot_size = name_len + value.len() + ENTRY_OVERHEAD;
        if slot_size > self.max_size {
            self.slots.clear();
            self.size = 0;
            self.drop_evicted_bytes();
            return;
        }
        // Copy the name before evicting: eviction only forgets slots, so a name that belongs
        // to an entry about to be evicted is still readable here.
        self.drop_evicted_bytes();
        let start = self.base + self.bytes.len();
        match name {
            EntryName::Bytes(name) => self.bytes.extend_from_slice(name),
            EntryName::Entry(i) => {
                let from = self.slots[i].start - self.base;
                self.bytes.extend_from_within(from..from + name_len);
            }
        }
        self.bytes.extend_from_slice(value);
        self.evict_to(self.max_size - slot_size);
        self.slots.push_front(Slot {
            start,
            name_len,
            value_len: value.len(),
        });
        self.size += slot_size;
        self.inserted += 1;
    }

    fn evict_to(&mut self, limit: usize) {
        while self.size > limit {
            let Some(oldest) = self.slots.pop_back() else {
                break;
            };
            self.size -= oldest.size();
        }
    }

    /// Drops the bytes of evicted entries once they are at least half the buffer.
    fn drop_evicted_bytes(&mut self) {
        let live_start = match self.slots.back() {
            Some(oldest) => oldest.start - self.base,
            None => self.bytes.len(),
        };
        if live_start > 0 && live_start >= self.bytes.len() - live_start {
            self.bytes.drain(..live_start);
            self.base += live_start;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_name_index_finds_the_first_entry_of_each_name() {
        for (i, (name, _)) in STATIC.iter().enumerate() {
            let first = STATIC.iter().position(|(n, _)| n == name).unwrap() + 1;
            assert_eq!(static_name_index(name), Some(first), "index {}", i + 1);
        }
        assert_eq!(static_name_index(b"x-custom"), None);
    }

    #[test]
    fn insert_evicts_oldest_and_keeps_a_name_it_evicts() {
        // Room for exactly one 40-byte entry: inserting a second with the name of the
        // first evicts the first while copying its name.
        let mut table = DynamicTable::new(70);
        table.insert(EntryName::Bytes(b"abcd"), b"1234");
        table.insert(EntryName::Entry(0), b"5678");
        assert_eq!(table.len(), 1);
        assert_eq!(table.size(), 40);
        assert_eq!(table.get(0), Some((&b"abcd"[..], &b"5678"[..])));
    }

    #[test]
    fn an_entry_larger_than_the_table_empties_it() {
        let mut table = DynamicTable::new(64);
        table.insert(EntryName::Bytes(b"a"), b"b");
        table.insert(EntryName::Bytes(b"name"), &[b'v'; 40]);
        assert_eq!(table.len(), 0);
        assert_eq!(table.size(), 0);
    }

    #[test]
    fn many_inserts_keep_the_buffer_bounded() {
        let mut table = DynamicTable::new(256);
        for i in 0..10_000u32 {
            let value = i.to_string();
            table.insert(EntryName::Bytes(b"key"), value.as_bytes());
            assert_eq!(table.get(0).unwrap().1, value.as_bytes());
        }
        assert!(table.bytes.len() <= 2 * 256);
        assert_eq!(table.position(table.inserted()), Some(0));
        assert_eq!(table.position(1), None);
    }
}
