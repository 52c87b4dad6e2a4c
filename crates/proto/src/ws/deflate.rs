//! permessage-deflate's codec (RFC 7692 §7.2): a message's payload compressed with DEFLATE
//! (RFC 1951) and flushed to a byte boundary, the flush's last four bytes taken off.
//!
//! flate2 runs on its pure-Rust backend (miniz_oxide), which compresses with a 32 KiB window
//! (15 window bits) only: what that means for the negotiation is in
//! [`negotiate`](super::negotiate)'s docs. Inflating is not limited that way: a 32 KiB window
//! reads streams made with any smaller one. Inflating goes through miniz_oxide's core
//! directly, on a buffer that does not wrap, so that a distance reaching before what the
//! stream (or, without context takeover, the message) has produced is refused: see
//! [`Decompressor`].

use flate2::{Compress, Compression, FlushCompress};
use miniz_oxide::inflate::core::{decompress, inflate_flags, DecompressorOxide};
use miniz_oxide::inflate::TINFLStatus;

use super::Error;

/// What a sync flush ends with (an empty stored block's LEN and NLEN): taken off every
/// compressed message on send, put back on receive (§7.2.1, §7.2.2).
const TAIL: [u8; 4] = [0x00, 0x00, 0xff, 0xff];

/// Inflated bytes are produced at most this many at a time (the room after the window's
/// history), each step checked against the limit before it is kept: a message never holds
/// more than its limit, however well it compresses.
const STEP: usize = 32 * 1024;

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
///
/// miniz_oxide's core inflater runs here on a buffer of our own, `window`, used without
/// wrapping: it holds the stream's output, from the start of the stream (a new one after the
/// peer's BFINAL, or at each message when the peer does not keep its context) or the last
/// 32 KiB of it, whichever is shorter. A DEFLATE distance that reaches before the start of
/// that buffer is refused by the inflater (`DistanceOutOfBounds`), so a peer that agreed to
/// `*_no_context_takeover` and still refers back into an earlier message fails the
/// connection rather than inflating to the wrong bytes: with a wrapping window (flate2's
/// `Decompress`) miniz_oxide reads whatever the window holds there.
pub struct Decompressor {
    inflate: Box<DecompressorOxide>,
    /// The peer's `*_no_context_takeover`: each message starts a new window.
    reset: bool,
    /// The peer ended its DEFLATE stream (a block with BFINAL set, §7.2.3.4): the rest of
    /// this message is ignored, and the next starts a new stream.
    ended: bool,
    /// The history distances may reach (`window[..filled]`), then room to inflate into:
    /// [`WINDOW`] + [`STEP`] bytes, allocated at the first compressed message.
    window: Vec<u8>,
    filled: usize,
}

/// The farthest a DEFLATE distance reaches back (RFC 1951 §3.2.5).
const WINDOW: usize = 32 * 1024;

/// How the inflater is driven: the output buffer does not wrap (distances are checked against
/// what it holds), and a message's data comes frame by frame (more input may follow).
const FLAGS: u32 = inflate_flags::TINFL_FLAG_USING_NON_WRAPPING_OUTPUT_BUF
    | inflate_flags::TINFL_FLAG_HAS_MORE_INPUT;

impl Decompressor {
    /// A decompressor for a peer that resets its window after each message if
    /// `no_context_takeover`.
    pub fn new(no_context_takeover: bool) -> Decompressor {
        Decompressor {
            inflate: Box::default(),
            reset: no_context_takeover,
            ended: false,
            window: vec![0; WINDOW + STEP],
            filled: 0,
        }
    }

    /// Inflates `data`, the payload of one frame of a compressed message, onto `out`; `out`
    /// never grows past `limit` bytes, nor does its capacity: the step that would take it
    /// there is [`Error::TooBig`] instead (a zip bomb costs at most `limit` bytes of memory).
    /// A distance reaching before the start of the stream, or before this message when the
    /// peer does not keep its context, is [`Error::Protocol`] (1002).
    pub fn inflate(&mut self, data: &[u8], out: &mut Vec<u8>, limit: usize) -> Result<(), Error> {
        let mut data = data;
        while !self.ended {
            if self.filled == self.window.len() {
                // Full: keep the last 32 KiB, all a distance may reach.
                self.window.copy_within(self.filled - WINDOW.., 0);
                self.filled = WINDOW;
            }
            let (status, used, made) = decompress(
                &mut self.inflate,
                data,
                &mut self.window,
                self.filled,
                FLAGS,
            );
            data = &data[used..];
            let new = &self.window[self.filled..self.filled + made];
            self.filled += made;
            if made > limit - out.len() {
                return Err(Error::TooBig { limit });
            }
            if out.capacity() - out.len() < made {
                // Doubling, as `Vec` would, but never past the limit.
                let want = (out.len() + made).max(out.capacity() * 2).min(limit);
                out.reserve_exact(want - out.len());
            }
            out.extend_from_slice(new);
            match status {
                // The input is used up (the output may go on with the next frame's).
                TINFLStatus::NeedsMoreInput => break,
                // The window filled up: slide it, and go on.
                TINFLStatus::HasMoreOutput => {}
                TINFLStatus::Done => self.ended = true,
                _ => return Err(Error::Protocol("compressed data that does not inflate")),
            }
        }
        Ok(())
    }

    /// Ends a message: inflates the flush's tail the sender took off, and starts a new window
    /// if the peer does not keep its context (or ended its stream).
    pub fn finish(&mut self, out: &mut Vec<u8>, limit: usize) -> Result<(), Error> {
        self.inflate(&TAIL, out, limit)?;
        if self.reset || self.ended {
            self.inflate.init();
            self.filled = 0;
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
