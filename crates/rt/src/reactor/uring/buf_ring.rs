//! The provided-buffer ring the io_uring driver's multishot receives pick buffers from.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU16, Ordering};

use super::{BUF_ENTRIES, BUF_SIZE};

/// The provided-buffer ring: [`BUF_ENTRIES`] buffers of [`BUF_SIZE`] bytes the kernel picks from
/// for multishot receives, and the page-aligned descriptor ring that lends them.
pub(super) struct BufRing {
    /// `BUF_ENTRIES` descriptors; the kernel reads those between its head and our tail.
    pub(super) ring: NonNull<RingEntry>,
    /// The buffers. Only reached through raw pointers: the kernel writes into the ones it holds
    /// while we read the ones it handed back.
    bufs: NonNull<u8>,
    tail: u16,
    /// Buffers handed back by completions and not yet returned to the ring.
    pub(super) lent: usize,
    /// Per buffer, while it is queued on a stream: what is left to read, and the queue's link.
    chunks: Box<[Chunk]>,
}

/// The unread bytes `start..end` of a received buffer, and the next buffer of its queue.
#[derive(Clone, Copy, Default)]
struct Chunk {
    start: u16,
    end: u16,
    next: u16,
}

/// A stream's received buffers, oldest first: a queue linked through [`BufRing::chunks`], so a
/// stream holds no memory of its own for it.
#[derive(Default)]
pub(super) struct Received {
    head: u16,
    tail: u16,
    pub(super) len: u16,
}

/// `struct io_uring_buf`. The first entry's `resv` is the ring's tail.
#[repr(C)]
pub(super) struct RingEntry {
    addr: u64,
    len: u32,
    bid: u16,
    resv: u16,
}

const RING_LAYOUT: Layout = page_aligned(BUF_ENTRIES as usize * size_of::<RingEntry>());
const BUFS_LAYOUT: Layout = page_aligned(BUF_ENTRIES as usize * BUF_SIZE);

const fn page_aligned(size: usize) -> Layout {
    match Layout::from_size_align(size, 4096) {
        Ok(layout) => layout,
        Err(_) => panic!("bad layout"),
    }
}

impl BufRing {
    pub(super) fn new() -> BufRing {
        // SAFETY: both layouts have a non-zero size.
        let (ring, bufs) = unsafe { (alloc_zeroed(RING_LAYOUT), alloc_zeroed(BUFS_LAYOUT)) };
        let (Some(ring), Some(bufs)) = (NonNull::new(ring.cast()), NonNull::new(bufs)) else {
            std::alloc::handle_alloc_error(BUFS_LAYOUT);
        };
        let mut this = BufRing {
            ring,
            bufs,
            tail: 0,
            lent: BUF_ENTRIES as usize,
            chunks: vec![Chunk::default(); BUF_ENTRIES as usize].into_boxed_slice(),
        };
        for bid in 0..BUF_ENTRIES {
            this.give_back(bid);
        }
        this
    }

    /// Queues buffer `bid` on `queue`, to be read.
    ///
    /// # Safety
    /// A completion handed `bid` to us with `len` bytes written into it, and it has been neither
    /// given back nor queued since.
    pub(super) unsafe fn push(&mut self, queue: &mut Received, bid: u16, len: u32) {
        let chunk = &mut self.chunks[bid as usize];
        (chunk.start, chunk.end) = (0, len as u16); // len <= BUF_SIZE
        if queue.len > 0 {
            self.chunks[queue.tail as usize].next = bid;
        } else {
            queue.head = bid;
        }
        queue.tail = bid;
        queue.len += 1;
    }

    /// The unread bytes of `queue`'s oldest buffer.
    pub(super) fn front(&self, queue: &Received) -> Option<&[u8]> {
        let head = (queue.len > 0).then_some(queue.head as usize)?;
        let chunk = &self.chunks[head];
        let start = head * BUF_SIZE + chunk.start as usize;
        let len = (chunk.end - chunk.start) as usize;
        // SAFETY: the head is queued, so a completion handed it to us with `..end` written
        // (`push`), and the kernel does not write it until `give_back`; in bounds of the
        // allocation (head < BUF_ENTRIES, end <= BUF_SIZE).
        Some(unsafe { std::slice::from_raw_parts(self.bufs.as_ptr().add(start), len) })
    }

    /// Marks `n` bytes of `queue`'s oldest buffer read, giving it back once all of it is.
    pub(super) fn consume(&mut self, queue: &mut Received, n: usize) {
        let chunk = &mut self.chunks[queue.head as usize];
        chunk.start += n as u16;
        if chunk.start == chunk.end {
            let bid = std::mem::replace(&mut queue.head, chunk.next);
            queue.len -= 1;
            self.give_back(bid);
        }
    }

    /// Lends buffer `bid` to the kernel again. The caller no longer reads it.
    pub(super) fn give_back(&mut self, bid: u16) {
        debug_assert!(bid < BUF_ENTRIES && self.lent > 0);
        let index = (self.tail & (BUF_ENTRIES - 1)) as usize;
        let addr = self.bufs.as_ptr() as u64 + bid as u64 * BUF_SIZE as u64;
        // SAFETY: `index < BUF_ENTRIES`, in the ring allocation. The entry at the unpublished
        // tail is not read by the kernel (it reads head..tail). Fields are written through raw
        // places so entry 0's `resv` (the tail the kernel reads) is left alone.
        unsafe {
            let slot = self.ring.as_ptr().add(index);
            (&raw mut (*slot).addr).write(addr);
            (&raw mut (*slot).len).write(BUF_SIZE as u32);
            (&raw mut (*slot).bid).write(bid);
        }
        self.tail = self.tail.wrapping_add(1);
        self.lent -= 1;
        // SAFETY: entry 0's `resv` is the ring tail, a naturally aligned u16 shared with the
        // kernel, which reads it with acquire semantics; it is only accessed atomically here.
        let tail = unsafe { AtomicU16::from_ptr(&raw mut (*self.ring.as_ptr()).resv) };
        tail.store(self.tail, Ordering::Release);
    }
}

impl Drop for BufRing {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with these layouts. The ring that could use them was dropped
        // first (field order in `State`) after every operation completed (`Reactor::drop`).
        unsafe {
            dealloc(self.ring.as_ptr().cast(), RING_LAYOUT);
            dealloc(self.bufs.as_ptr(), BUFS_LAYOUT);
        }
    }
}
