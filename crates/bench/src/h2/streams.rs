//! The streams in flight on one HTTP/2 connection, found by id in O(1).
//!
//! Entries live in a ring of at least twice as many positions as streams may be open; stream
//! `id` sits at position `(id / 2) % len`. A new stream takes the next odd id whose position is
//! free, skipping ids whose position a slow older stream still holds: a client may skip ids
//! (RFC 9113 §5.1.1, an unused lower id is simply closed). So opening, finding and removing a
//! stream are one index each, and nothing is allocated after the ring is made.

use std::time::Instant;

/// The largest stream id (31 bits).
pub(crate) const MAX_STREAM_ID: u32 = (1 << 31) - 1;

/// A request in flight: what it asked, when, and how far its response came.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Stream {
    /// 0 marks a free position.
    pub id: u32,
    /// Which request of the round robin it is.
    pub cursor: usize,
    /// Latency counts from here: the scheduled send in rate mode, else the send.
    pub from: Instant,
    /// The actual send.
    pub started: Instant,
    /// Rate mode: the number of its scheduled send.
    pub send: u64,
    /// The final status once its head came (0 before: a 1xx head leaves it 0).
    pub status: u16,
    /// Request body bytes not sent yet (flow control holds them back).
    pub body_left: usize,
    /// What the server's window for this stream still lets us send.
    pub send_window: i64,
    /// Response bytes taken since this stream's window was last given back.
    pub recv_unacked: u32,
}

impl Stream {
    pub(crate) fn new(cursor: usize, from: Instant, started: Instant, send: u64) -> Stream {
        Stream {
            id: 0,
            cursor,
            from,
            started,
            send,
            status: 0,
            body_left: 0,
            send_window: 0,
            recv_unacked: 0,
        }
    }
}

/// The open streams of a connection.
#[derive(Debug)]
pub(crate) struct StreamTable {
    ring: Box<[Option<Stream>]>,
    mask: usize,
    next_id: u32,
    open: usize,
    /// The lowest id still open, if any: the oldest stream, since ids are taken in send order.
    oldest: Option<u32>,
}

impl StreamTable {
    /// A table for up to `streams` open at once.
    pub(crate) fn new(streams: usize) -> StreamTable {
        let len = (2 * streams).next_power_of_two().max(2);
        StreamTable {
            ring: vec![None; len].into_boxed_slice(),
            mask: len - 1,
            next_id: 1,
            open: 0,
            oldest: None,
        }
    }

    /// Forgets every stream (a new connection), keeping the ring's memory.
    pub(crate) fn reset(&mut self) {
        self.ring.fill(None);
        self.next_id = 1;
        self.open = 0;
        self.oldest = None;
    }

    #[cfg(test)]
    pub(crate) fn set_next_id(&mut self, id: u32) {
        self.next_id = id;
    }

    fn position(&self, id: u32) -> usize {
        (id as usize >> 1) & self.mask
    }

    /// Streams open.
    pub(crate) fn open(&self) -> usize {
        self.open
    }

    /// Whether ids are left for another stream (a connection whose ids ran out is replaced).
    /// Conservative by the ring's length: an id may be skipped per occupied position.
    pub(crate) fn ids_left(&self) -> bool {
        u64::from(self.next_id) + 2 * self.ring.len() as u64 <= u64::from(MAX_STREAM_ID)
    }

    /// The highest id given out so far (0: none).
    pub(crate) fn last_id(&self) -> u32 {
        self.next_id.saturating_sub(2)
    }

    /// Opens `stream` under the next free id and returns the id. The caller keeps the number of
    /// open streams below half the ring and checks [`ids_left`](Self::ids_left) first.
    pub(crate) fn insert(&mut self, mut stream: Stream) -> u32 {
        debug_assert!(self.open < self.ring.len() / 2 + 1 && self.ids_left());
        let mut id = self.next_id;
        while self.ring[self.position(id)].is_some() {
            id += 2;
        }
        self.next_id = id + 2;
        stream.id = id;
        let at = self.position(id);
        self.ring[at] = Some(stream);
        self.open += 1;
        self.oldest.get_or_insert(id);
        id
    }

    pub(crate) fn get_mut(&mut self, id: u32) -> Option<&mut Stream> {
        let at = self.position(id);
        self.ring[at].as_mut().filter(|s| s.id == id)
    }

    /// Removes stream `id`, if open.
    pub(crate) fn remove(&mut self, id: u32) -> Option<Stream> {
        let at = self.position(id);
        if self.ring[at].is_none_or(|s| s.id != id) {
            return None;
        }
        let stream = self.ring[at].take();
        self.open -= 1;
        if self.oldest == Some(id) {
            // The next oldest has the next higher id still open: walk the ids up from here.
            // Each id is walked over once in the connection's life, so this is O(1) amortized.
            self.oldest = None;
            let mut next = id + 2;
            while self.open > 0 && next < self.next_id {
                if self.get_mut(next).is_some() {
                    self.oldest = Some(next);
                    break;
                }
                next += 2;
            }
        }
        stream
    }

    /// The oldest open stream.
    pub(crate) fn oldest(&self) -> Option<&Stream> {
        let id = self.oldest?;
        self.ring[self.position(id)].as_ref()
    }

    /// Removes and returns, one by one, every open stream for which `pick` says so.
    pub(crate) fn take_where(&mut self, mut pick: impl FnMut(&Stream) -> bool) -> Option<Stream> {
        if self.open == 0 {
            return None;
        }
        let id = self.ring.iter().flatten().find(|s| pick(s))?.id;
        self.remove(id)
    }

    /// Every open stream, in no particular order.
    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = &mut Stream> {
        self.ring.iter_mut().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream() -> Stream {
        let now = Instant::now();
        Stream::new(0, now, now, 0)
    }

    #[test]
    fn ids_are_odd_and_increasing_and_found_again() {
        let mut t = StreamTable::new(2);
        assert_eq!(t.insert(stream()), 1);
        assert_eq!(t.insert(stream()), 3);
        assert_eq!(t.open(), 2);
        assert_eq!(t.oldest().unwrap().id, 1);
        assert!(t.get_mut(5).is_none());
        assert_eq!(t.remove(1).unwrap().id, 1);
        assert!(t.remove(1).is_none());
        assert_eq!(t.oldest().unwrap().id, 3);
        assert_eq!(t.insert(stream()), 5);
        assert_eq!(t.remove(3).unwrap().id, 3);
        assert_eq!(t.oldest().unwrap().id, 5);
        assert_eq!(t.last_id(), 5);
    }

    /// A stream that stays open while later ones come and go: ids whose position it holds
    /// are skipped, and it stays the oldest.
    #[test]
    fn a_slow_stream_makes_later_ids_skip_its_position() {
        let mut t = StreamTable::new(2); // a ring of 4 positions
        assert_eq!(t.insert(stream()), 1); // position 0
        let mut ids = Vec::new();
        for _ in 0..6 {
            let id = t.insert(stream());
            ids.push(id);
            t.remove(id).unwrap();
        }
        // 9 and 17 would take position 0 again.
        assert_eq!(ids, [3, 5, 7, 11, 13, 15]);
        assert_eq!(t.oldest().unwrap().id, 1);
        t.remove(1).unwrap();
        assert!(t.oldest().is_none());
        assert_eq!(t.insert(stream()), 17);
        assert_eq!(t.oldest().unwrap().id, 17);
    }

    #[test]
    fn ids_run_out_near_two_to_the_31() {
        let mut t = StreamTable::new(1);
        t.set_next_id(MAX_STREAM_ID - 4);
        assert!(t.ids_left());
        assert_eq!(t.insert(stream()), MAX_STREAM_ID - 4);
        assert!(!t.ids_left());
        t.reset();
        assert!(t.ids_left());
        assert_eq!(t.insert(stream()), 1);
    }

    #[test]
    fn take_where_removes_the_picked_streams() {
        let mut t = StreamTable::new(4);
        for _ in 0..4 {
            t.insert(stream());
        }
        let mut above = Vec::new();
        while let Some(s) = t.take_where(|s| s.id > 3) {
            above.push(s.id);
        }
        above.sort();
        assert_eq!(above, [5, 7]);
        assert_eq!(t.open(), 2);
        assert_eq!(t.oldest().unwrap().id, 1);
    }
}
