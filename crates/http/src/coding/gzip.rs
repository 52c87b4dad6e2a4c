//! gzip (RFC 1952) written here around flate2's raw DEFLATE compressor, so that the
//! compressor can outlive a response: each worker keeps a few idle ones
//! ([`POOL`](super::POOL)) and a response takes one instead of making its own.
//!
//! Why: making a compressor costs more than compressing a small body. miniz_oxide's state is
//! about 320 KiB (its LZ code buffer, output buffer, window and hash chains), all zeroed when
//! made; flate2's `Compress::reset` zeroes all of it again, so a reset costs nearly what a
//! new one does. What a response needs is less: that its DEFLATE data refer to nothing
//! before it. A *full flush* (`FlushCompress::Full`, zlib's `Z_FULL_FLUSH`) gives exactly
//! that, as zlib documents it ("decompression can restart from this point"): miniz_oxide
//! then byte-aligns its output and forgets its window (it clears the hash chains, 128 KiB,
//! and sets the window's size to 0, so no match reaches back past the flush). So a response
//! ends its data with a full flush rather than a finish, then the empty final block `03 00`
//! (BFINAL set, fixed codes, end of block), and its compressor goes back to the pool at a
//! clean point. The price is up to 6 bytes per response (the flush's empty stored block and
//! the final block, against the finish's final bits). Measured with callgrind in BENCHMARKS.md
//! ("Compression encoder reuse"): 1 KiB of JSON costs 250 k instructions instead of 505 k.
//!
//! A compressor is returned only by [`GzipEncoder::finish`], after a full flush that
//! succeeded: one that failed, or whose body was dropped half-way (a client gone), is
//! dropped. The pool never holds more than [`POOL`](super::POOL), so the memory it keeps is
//! bounded (about 1.3 MiB per worker); volt is thread-per-core, so it is thread-local and
//! unlocked.

use std::cell::RefCell;
use std::io;

use flate2::{Compress, Compression, Crc, FlushCompress};

use super::encode::GZIP_LEVEL;
use super::give_back;
#[cfg(test)]
use super::POOL;

/// A gzip member header: magic, deflate, no flags, no time, no extra flags, OS unknown.
const HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];

/// An empty DEFLATE block with BFINAL set (fixed codes: `1`, `01`, then end of block, seven
/// `0` bits), byte-aligned as a full flush leaves the stream.
const FINAL_BLOCK: [u8; 2] = [0x03, 0x00];

thread_local! {
    /// This worker's idle compressors, each at a full-flush point.
    static IDLE: RefCell<Vec<Compress>> = const { RefCell::new(Vec::new()) };
}

/// A compressor from the pool, or a new one.
fn take() -> Compress {
    IDLE.with(|idle| idle.borrow_mut().pop())
        .unwrap_or_else(|| Compress::new(Compression::new(GZIP_LEVEL), false))
}

/// How many idle compressors this worker holds (for the tests).
#[cfg(test)]
pub(crate) fn idle() -> usize {
    IDLE.with(|idle| idle.borrow().len())
}

/// One gzip member being written.
pub(crate) struct GzipEncoder {
    deflate: Compress,
    crc: Crc,
    /// Compressed bytes not yet handed out.
    out: Vec<u8>,
}

impl GzipEncoder {
    pub(crate) fn new() -> GzipEncoder {
        GzipEncoder {
            deflate: take(),
            crc: Crc::new(),
            out: HEADER.to_vec(),
        }
    }

    /// Compresses `data` into the output, flushing as `flush` says.
    fn run(&mut self, data: &[u8], flush: FlushCompress) -> io::Result<()> {
        let start = self.deflate.total_in();
        loop {
            self.out.reserve(data.len() / 2 + 64);
            let used = (self.deflate.total_in() - start) as usize;
            self.deflate
                .compress_vec(&data[used..], &mut self.out, flush)
                .map_err(io::Error::other)?;
            let used = (self.deflate.total_in() - start) as usize;
            // Done once all the input went in and the flush fit in the room given.
            if used == data.len() && self.out.len() < self.out.capacity() {
                return Ok(());
            }
        }
    }

    pub(crate) fn write(&mut self, data: &[u8]) -> io::Result<()> {
        self.crc.update(data);
        self.run(data, FlushCompress::None)
    }

    /// A sync flush: everything written so far can be decoded from what was handed out.
    pub(crate) fn flush(&mut self) -> io::Result<()> {
        self.run(&[], FlushCompress::Sync)
    }

    /// The compressed bytes so far, taken.
    pub(crate) fn take_output(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.out)
    }

    /// Ends the member (full flush, final block, CRC-32 and length) and returns the rest of
    /// its bytes; the compressor goes back to the pool.
    pub(crate) fn finish(mut self) -> io::Result<Vec<u8>> {
        self.run(&[], FlushCompress::Full)?;
        let mut out = std::mem::take(&mut self.out);
        out.extend_from_slice(&FINAL_BLOCK);
        out.extend_from_slice(&self.crc.sum().to_le_bytes());
        out.extend_from_slice(&self.crc.amount().to_le_bytes());
        give_back(&IDLE, self.deflate);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coding::decode::tests::decode_all;
    use crate::coding::Coding;
    use std::io::Read;

    fn whole(data: &[u8]) -> Vec<u8> {
        let mut e = GzipEncoder::new();
        e.write(data).unwrap();
        e.finish().unwrap()
    }

    fn gunzip(data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(data)
            .read_to_end(&mut out)
            .unwrap();
        out
    }

    #[test]
    fn reused_compressors_make_members_that_stand_alone() {
        // Two bodies that share a lot: the second, from the same compressor, must not refer
        // back into the first (a reader that never saw the first decodes it alone).
        let first = "the same words, again and again. ".repeat(200).into_bytes();
        let second = [&b"x"[..], &first[..]].concat();
        let a = whole(&first);
        assert_eq!(idle(), 1, "given back");
        let b = whole(&second);
        assert_eq!(idle(), 1, "taken and given back");
        assert_eq!(gunzip(&a), first);
        assert_eq!(gunzip(&b), second);
        assert_eq!(decode_all(Coding::Gzip, &[&b]).unwrap(), second);
        // The same bytes as a fresh compressor's: nothing of the first body shows.
        let fresh = {
            let _held = GzipEncoder::new(); // the pooled one is out: this one is new
            whole(&second)
        };
        assert_eq!(b, fresh);
        // Header, then the data, then 03 00 before the trailer, whose CRC and length match.
        assert_eq!(b[..10], HEADER);
        let n = b.len();
        assert_eq!(b[n - 10..n - 8], FINAL_BLOCK);
        assert_eq!(b[n - 4..], (second.len() as u32).to_le_bytes());
        // An empty body.
        assert_eq!(gunzip(&whole(b"")), b"");
    }

    #[test]
    fn the_pool_is_bounded_and_keeps_only_finished_compressors() {
        let held: Vec<GzipEncoder> = (0..POOL + 3).map(|_| GzipEncoder::new()).collect();
        assert_eq!(idle(), 0);
        for mut e in held {
            e.write(b"some data").unwrap();
            assert_eq!(gunzip(&e.finish().unwrap()), b"some data");
        }
        assert_eq!(idle(), POOL, "no more than POOL kept");
        // Dropped half-way (a stream whose client left): not given back.
        let mut e = GzipEncoder::new();
        e.write(b"half").unwrap();
        e.flush().unwrap();
        drop(e);
        assert_eq!(idle(), POOL - 1);
    }
}
