//! Compressing: a body in memory at once ([`encode_all`]), a stream piece by piece
//! ([`Encoder`]), each piece flushed so that what was sent so far decodes in full.
//!
//! The levels suit dynamic content, compressed per response on the worker. Measured with
//! callgrind on a 4.6 KB JSON API answer (20 records) and a 12 KB HTML page
//! (`cargo run --release -p volt-http --example compress_levels`; instructions per byte of
//! input, then the output's size):
//!
//! | | JSON Ir/B | JSON bytes | HTML Ir/B | HTML bytes |
//! |---|---|---|---|---|
//! | gzip 1 | 62 | 1,104 | 42 | 2,985 |
//! | gzip 4 | 101 | 1,049 | 75 | 2,727 |
//! | **gzip 5** | 129 | 1,026 | 93 | 2,631 |
//! | gzip 6 | 146 | 1,022 | 109 | 2,611 |
//! | gzip 9 | 177 | 1,019 | 148 | 2,600 |
//! | br 1 | 93 | 1,044 | 58 | 2,731 |
//! | **br 4** | 148 | 887 | 112 | 2,305 |
//! | br 5 | 474 | 840 | 318 | 2,204 |
//! | br 6 | 546 | 838 | 357 | 2,193 |
//!
//! gzip 5 is within 0.5% of gzip 6's size for 11–15% fewer instructions (and of 9's for
//! 27%); brotli 4 is the last quality before the encoder switches to its slower block
//! splitting (5 costs three times as much for 5% less), and is already 14% smaller than gzip 6.
//! Brotli's window is 2^18 (256 KiB): dynamic answers are rarely larger, and a stream's
//! encoder holds a window's worth of memory.

use std::io::{self, Write};

use bytes::Bytes;
use flate2::write::GzEncoder;
use flate2::Compression;

use super::Coding;

/// gzip's level (of 1–9; see the table above).
pub(crate) const GZIP_LEVEL: u32 = 5;
/// brotli's quality (of 0–11; see the table above).
pub(crate) const BR_QUALITY: u32 = 4;
/// brotli's window, log2 of its bytes.
pub(crate) const BR_WINDOW: u32 = 18;
/// brotli's internal buffer between calls.
const BR_BUFFER: usize = 4096;

/// `data` compressed whole with `coding`.
pub(crate) fn encode_all(coding: Coding, data: &[u8]) -> Bytes {
    // Writing into a `Vec` cannot fail, nor can the encoders' own work on valid input.
    let mut encoder = Encoder::new(coding);
    encoder.write(data).expect("compressing into memory");
    encoder.finish().expect("compressing into memory")
}

/// A compressor for one body, fed piece by piece.
pub(crate) enum Encoder {
    Gzip(GzEncoder<Vec<u8>>),
    // Boxed: brotli's state is a few KiB.
    Br(Box<brotli::CompressorWriter<Vec<u8>>>),
}

impl Encoder {
    pub(crate) fn new(coding: Coding) -> Encoder {
        match coding {
            Coding::Gzip => Encoder::Gzip(GzEncoder::new(Vec::new(), Compression::new(GZIP_LEVEL))),
            Coding::Br => Encoder::Br(Box::new(brotli::CompressorWriter::new(
                Vec::new(),
                BR_BUFFER,
                BR_QUALITY,
                BR_WINDOW,
            ))),
        }
    }

    fn write(&mut self, data: &[u8]) -> io::Result<()> {
        match self {
            Encoder::Gzip(e) => e.write_all(data),
            Encoder::Br(e) => e.write_all(data),
        }
    }

    /// Compresses `data` and flushes (deflate's sync flush, brotli's flush operation): the
    /// bytes returned, after those returned before, decode to every byte given so far. A
    /// server-sent event goes out when it is sent, not when a compressor's block fills up.
    /// The price is a few bytes per piece (5 for gzip's empty stored block).
    pub(crate) fn push(&mut self, data: &[u8]) -> io::Result<Bytes> {
        self.write(data)?;
        match self {
            Encoder::Gzip(e) => e.flush()?,
            Encoder::Br(e) => e.flush()?,
        }
        Ok(Bytes::from(std::mem::take(self.output())))
    }

    /// Ends the stream: the last bytes (gzip's trailer, brotli's last meta-block).
    pub(crate) fn finish(self) -> io::Result<Bytes> {
        let out = match self {
            Encoder::Gzip(e) => e.finish()?,
            Encoder::Br(e) => e.into_inner(),
        };
        Ok(Bytes::from(out))
    }

    fn output(&mut self) -> &mut Vec<u8> {
        match self {
            Encoder::Gzip(e) => e.get_mut(),
            Encoder::Br(e) => e.get_mut(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coding::decode::tests::decode_all;

    fn sample() -> Vec<u8> {
        (0..2000)
            .flat_map(|i| format!("{{\"id\":{i},\"name\":\"record {}\"}},", i % 7).into_bytes())
            .collect()
    }

    #[test]
    fn whole_bodies_round_trip_and_shrink() {
        let data = sample();
        for coding in [Coding::Gzip, Coding::Br] {
            let packed = encode_all(coding, &data);
            assert!(packed.len() < data.len() / 5, "{coding:?}: {}", packed.len());
            assert_eq!(decode_all(coding, &[&packed]).unwrap(), data);
        }
        // gzip's fixed header: magic, deflate, no flags, no time, no extra flags, OS unknown.
        let gz = encode_all(Coding::Gzip, b"x");
        assert_eq!(gz[..10], [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]);
    }

    #[test]
    fn each_piece_decodes_on_its_own_prefix() {
        for coding in [Coding::Gzip, Coding::Br] {
            let mut encoder = Encoder::new(coding);
            let mut sent: Vec<Bytes> = Vec::new();
            let mut plain = Vec::new();
            for event in ["data: one\n\n", "data: two\n\n", "data: three\n\n"] {
                sent.push(encoder.push(event.as_bytes()).unwrap());
                plain.extend_from_slice(event.as_bytes());
                // What went out so far decodes to everything pushed so far, though the stream
                // has not ended.
                let pieces: Vec<&[u8]> = sent.iter().map(|b| &b[..]).collect();
                let mut decoder = crate::coding::decode::Decoder::new(coding);
                let mut got = Vec::new();
                for piece in pieces {
                    decoder.feed(Bytes::copy_from_slice(piece));
                    while let Some(out) = decoder.step().unwrap() {
                        got.extend_from_slice(&out);
                    }
                }
                assert_eq!(got, plain, "{coding:?}");
            }
            sent.push(encoder.finish().unwrap());
            let pieces: Vec<&[u8]> = sent.iter().map(|b| &b[..]).collect();
            assert_eq!(decode_all(coding, &pieces).unwrap(), plain);
        }
    }
}
