//! brotli (RFC 7932) driven here through the brotli crate's encoder state, so that its most
//! costly part, the hasher, can outlive a response: each worker keeps a few idle hashers
//! ([`POOL`](super::POOL)) and a response's encoder takes one instead of allocating its
//! own.
//!
//! brotli 8 has no reset for a whole encoder, but its state's fields are public, and the
//! hasher (at quality 3, a table of 2^16 buckets: 256 KiB, allocated zeroed) is what a new
//! encoder mostly costs. A hasher handed to a new state is marked unprepared, so the encoder
//! prepares it as brotli's C original prepares the memory it allocates (unzeroed): for a body
//! it compresses in one go of at most 2 KiB (`one_shot`), only the buckets that body's bytes
//! hash to are cleared, and for anything larger the whole table. Nothing of an earlier body
//! is reached either way: a bucket is looked up only by a key of the body's own bytes, and
//! those buckets were cleared. The rest of the state (ring buffer, command and output
//! buffers) is made per response, sized to the body.
//!
//! A hasher goes back only from a stream that finished; the pool never holds more than
//! [`POOL`](super::POOL) (about 1 MiB per worker).

use std::cell::RefCell;
use std::io;

use brotli::enc::backward_references::{AnyHasher, UnionHasher};
use brotli::enc::encode::{BrotliEncoderOperation, BrotliEncoderStateStruct};
use brotli::enc::StandardAlloc;

use super::encode::{BR_QUALITY, BR_WINDOW};
use super::give_back;
#[cfg(test)]
use super::POOL;

/// Output is taken from the encoder this many bytes at a time.
const OUT_STEP: usize = 4096;

thread_local! {
    /// This worker's idle hashers.
    static IDLE: RefCell<Vec<UnionHasher<StandardAlloc>>> = const { RefCell::new(Vec::new()) };
}

/// How many idle hashers this worker holds (for the tests).
#[cfg(test)]
pub(crate) fn idle() -> usize {
    IDLE.with(|idle| idle.borrow().len())
}

/// One brotli stream being written.
pub(crate) struct BrEncoder {
    // Boxed: the state holds a few KiB of tables inline.
    state: Box<BrotliEncoderStateStruct<StandardAlloc>>,
    /// Compressed bytes not yet handed out.
    out: Vec<u8>,
}

impl BrEncoder {
    pub(crate) fn new() -> BrEncoder {
        let mut state = Box::new(BrotliEncoderStateStruct::new(StandardAlloc::default()));
        state.params.quality = BR_QUALITY as i32;
        state.params.lgwin = BR_WINDOW as i32;
        if let Some(mut hasher) = IDLE.with(|idle| idle.borrow_mut().pop()) {
            hasher.GetHasherCommon().is_prepared_ = 0;
            state.hasher_ = hasher;
        }
        BrEncoder {
            state,
            out: Vec::new(),
        }
    }

    /// Runs the encoder on `data` with `op` until it has taken all of it and, for a flush or
    /// the finish, given out all it owes.
    fn run(&mut self, data: &[u8], op: BrotliEncoderOperation) -> io::Result<()> {
        let (mut available_in, mut in_offset) = (data.len(), 0);
        let mut buf = [0u8; OUT_STEP];
        loop {
            let (mut available_out, mut out_offset) = (buf.len(), 0);
            let ok = self.state.compress_stream(
                op,
                &mut available_in,
                data,
                &mut in_offset,
                &mut available_out,
                &mut buf,
                &mut out_offset,
                &mut None,
                &mut |_, _, _, _| (),
            );
            self.out.extend_from_slice(&buf[..out_offset]);
            if !ok {
                return Err(io::Error::other("the brotli encoder failed"));
            }
            let done = match op {
                BrotliEncoderOperation::BROTLI_OPERATION_FINISH => self.state.is_finished(),
                _ => available_in == 0 && !self.state.has_more_output(),
            };
            if done {
                return Ok(());
            }
        }
    }

    pub(crate) fn write(&mut self, data: &[u8]) -> io::Result<()> {
        self.run(data, BrotliEncoderOperation::BROTLI_OPERATION_PROCESS)
    }

    /// brotli's flush: everything written so far can be decoded from what was handed out.
    pub(crate) fn flush(&mut self) -> io::Result<()> {
        self.run(&[], BrotliEncoderOperation::BROTLI_OPERATION_FLUSH)
    }

    /// The compressed bytes so far, taken.
    pub(crate) fn take_output(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.out)
    }

    /// Ends the stream and returns the rest of its bytes; the hasher goes back to the pool.
    pub(crate) fn finish(mut self) -> io::Result<Vec<u8>> {
        self.run(&[], BrotliEncoderOperation::BROTLI_OPERATION_FINISH)?;
        let hasher = std::mem::take(&mut self.state.hasher_);
        if !matches!(hasher, UnionHasher::Uninit) {
            give_back(&IDLE, hasher);
        }
        Ok(std::mem::take(&mut self.out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coding::decode::tests::decode_all;
    use crate::coding::Coding;

    fn whole(data: &[u8]) -> Vec<u8> {
        let mut e = BrEncoder::new();
        e.write(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn reused_hashers_give_the_bytes_a_new_one_gives() {
        // Bodies that share a lot, small (one-shot, partly cleared table) and large (all of it
        // cleared), one after the other on the same hasher: each decodes to itself, and comes
        // out as it does from a brand-new encoder.
        let words = "the same words, again and again. ".repeat(400).into_bytes();
        let bodies = [
            &words[..1500],
            &words[3..1800],
            &words[..],
            &words[7..700],
            &b""[..],
        ];
        let fresh: Vec<Vec<u8>> = bodies
            .iter()
            .map(|body| {
                let _held: Vec<BrEncoder> = (0..POOL + 1).map(|_| BrEncoder::new()).collect();
                whole(body) // with every pooled hasher taken: a new one
            })
            .collect();
        for (body, fresh) in bodies.iter().zip(&fresh) {
            let packed = whole(body);
            assert_eq!(idle(), 1);
            assert_eq!(&packed, fresh);
            assert_eq!(decode_all(Coding::Br, &[&packed]).unwrap(), *body);
        }
    }

    #[test]
    fn the_pool_is_bounded_and_keeps_only_finished_hashers() {
        let held: Vec<BrEncoder> = (0..POOL + 2).map(|_| BrEncoder::new()).collect();
        for mut e in held {
            e.write(b"some data, some data").unwrap();
            let packed = e.finish().unwrap();
            assert_eq!(
                decode_all(Coding::Br, &[&packed]).unwrap(),
                b"some data, some data"
            );
        }
        assert_eq!(idle(), POOL);
        // Dropped half-way: not given back.
        let mut e = BrEncoder::new();
        e.write(b"half").unwrap();
        e.flush().unwrap();
        drop(e);
        assert_eq!(idle(), POOL - 1);
    }
}
