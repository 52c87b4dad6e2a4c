//! permessage-deflate's codec (RFC 7692 §7.2): a message's payload compressed with DEFLATE
//! (RFC 1951) and flushed to a byte boundary, the flush's last four bytes taken off.
//!
//! flate2 runs on its pure-Rust backend (miniz_oxide), which compresses with a 32 KiB window
//! (15 window bits) only: what that means for the negotiation is in
//! [`negotiate`](super::negotiate)'s docs. Inflating is not limited that way: a 32 KiB window
//! reads streams made with any smaller one.

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

use super::Error;

/// What a sync flush ends with (an empty stored block's LEN and NLEN): taken off every
/// compressed message on send, put back on receive (§7.2.1, §7.2.2).
const TAIL: [u8; 4] = [0x00, 0x00, 0xff, 0xff];

/// Inflated bytes are produced this many at a time, each step checked against the limit
/// before it is kept: a message never holds more than its limit, however well it compresses.
const STEP: usize = 16 * 1024;

/// Compresses the messages one endpoint sends (RFC 7692 §7.2.1).
pub struct Compressor {
    deflate: Compress,
    /// `*_no_context_takeover` for this side: start each message with an empty window.
    reset: bool,
}

impl Compressor {
    /// A compressor at `level` (0-9), which forgets each message's data once it is sent if
    /// `no_context_takeover`.
    pub fn new(level: u32, no_context_takeover: bool) -> Compressor {
        Compressor {
            deflate: Compress::new(Compression::new(level.min(9)), false),
            reset: no_context_takeover,
        }
    }

    /// Appends the compressed form of the message `data` to `out`: DEFLATE blocks ending in a
    /// sync flush, whose trailing `00 00 ff ff` is removed (§7.2.1). An empty message comes out
    /// as the single byte `00` (§7.2.3.6).
    pub fn compress(&mut self, data: &[u8], out: &mut Vec<u8>) {
        let start = out.len();
        let in_before = self.deflate.total_in();
        loop {
            out.reserve(data.len() / 2 + 64);
            let consumed = (self.deflate.total_in() - in_before) as usize;
            self.deflate
                .compress_vec(&data[consumed..], out, FlushCompress::Sync)
                .expect("compressing into memory does not fail");
            let consumed = (self.deflate.total_in() - in_before) as usize;
            // Done once all the input went in and the flush fit in the room given.
            if consumed == data.len() && out.len() < out.capacity() {
                break;
            }
        }
        debug_assert!(
            out[start..].ends_with(&TAIL),
            "a sync flush ends the output"
        );
        out.truncate(out.len() - TAIL.len());
        if self.reset {
            self.deflate.reset();
        }
    }
}

/// Inflates the messages one endpoint receives (RFC 7692 §7.2.2).
pub struct Decompressor {
    inflate: Decompress,
    /// The peer's `*_no_context_takeover`: each message starts with an empty window.
    reset: bool,
    /// The peer ended its DEFLATE stream (a block with BFINAL set, §7.2.3.4): the rest of
    /// this message is ignored, and the next starts a new stream.
    ended: bool,
    scratch: Box<[u8; STEP]>,
}

impl Decompressor {
    /// A decompressor for a peer that resets its window after each message if
    /// `no_context_takeover`.
    pub fn new(no_context_takeover: bool) -> Decompressor {
        Decompressor {
            inflate: Decompress::new(false),
            reset: no_context_takeover,
            ended: false,
            scratch: Box::new([0; STEP]),
        }
    }

    /// Inflates `data`, the payload of one frame of a compressed message, onto `out`; `out`
    /// never grows past `limit` bytes, nor does its capacity: the step that would take it
    /// there is [`Error::TooBig`] instead (a zip bomb costs at most `limit` bytes of memory).
    pub fn inflate(&mut self, data: &[u8], out: &mut Vec<u8>, limit: usize) -> Result<(), Error> {
        let mut data = data;
        while !self.ended {
            let (in_before, out_before) = (self.inflate.total_in(), self.inflate.total_out());
            let status = self
                .inflate
                .decompress(data, &mut self.scratch[..], FlushDecompress::Sync)
                .map_err(|_| Error::Protocol("compressed data that does not inflate"))?;
            let used = (self.inflate.total_in() - in_before) as usize;
            let made = (self.inflate.total_out() - out_before) as usize;
            data = &data[used..];
            if made > limit - out.len() {
                return Err(Error::TooBig { limit });
            }
            if out.capacity() - out.len() < made {
                // Doubling, as `Vec` would, but never past the limit.
                let want = (out.len() + made).max(out.capacity() * 2).min(limit);
                out.reserve_exact(want - out.len());
            }
            out.extend_from_slice(&self.scratch[..made]);
            if status == Status::StreamEnd {
                self.ended = true;
            }
            // More may come out only if the input is not used up or the scratch was filled.
            if (data.is_empty() && made < STEP) || (used == 0 && made == 0) {
                break;
            }
        }
        Ok(())
    }

    /// Ends a message: inflates the flush's tail the sender took off, and resets the window
    /// if the peer does not keep its context (or ended its stream).
    pub fn finish(&mut self, out: &mut Vec<u8>, limit: usize) -> Result<(), Error> {
        self.inflate(&TAIL, out, limit)?;
        if self.reset || self.ended {
            self.inflate.reset(false);
            self.ended = false;
        }
        Ok(())
    }
}

impl std::fmt::Debug for Compressor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compressor")
            .field("no_context_takeover", &self.reset)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Decompressor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decompressor")
            .field("no_context_takeover", &self.reset)
            .finish_non_exhaustive()
    }
}
