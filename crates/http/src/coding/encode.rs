//! Compressing: a body in memory at once ([`encode_all`]), a stream piece by piece
//! ([`Encoder`]), each piece flushed so that what was sent so far decodes in full.
//!
//! The levels suit dynamic content, compressed per response on the worker. Measured with
//! callgrind (`cargo build --release -p volt-http --example compress_levels`, then the
//! command in that example's doc) on a 4,609-byte JSON API answer (20 user records) and a
//! 13,339-byte HTML page (a table of 100 orders): instructions per body, compressed from a
//! fresh encoder as `Compress` does, and the output's size.
//!
//! | | JSON Ir | JSON bytes | HTML Ir | HTML bytes |
//! |---|---|---|---|---|
//! | gzip 1 | 449 k | 525 | 700 k | 2,695 |
//! | **gzip 4** | 631 k | 474 | 1,368 k | 1,945 |
//! | gzip 5 | 634 k | 474 | 1,450 k | 1,925 |
//! | gzip 6 | 640 k | 474 | 1,662 k | 1,909 |
//! | gzip 9 | 640 k | 474 | 1,802 k | 1,909 |
//! | br 1 | 276 k | 507 | 772 k | 2,366 |
//! | **br 3** | 615 k | 424 | 1,346 k | 1,628 |
//! | br 4 | 1,002 k | 419 | 2,067 k | 1,490 |
//! | br 5 | 1,655 k | 397 | 3,351 k | 1,362 |
//! | br 6 | 2,642 k | 397 | 4,559 k | 1,362 |
//!
//! gzip 4 is the cheapest level within 2% of level 9's size on both (the same bytes for the
//! JSON, 1.9% more for the HTML), for 18% fewer instructions than the usual default, 6, on
//! the HTML. brotli 3 costs what gzip 4 does (0.98× on both) and is 11–16% smaller; quality 4
//! is another 8% smaller on the HTML (1% on the JSON) for 1.5–1.6× the instructions, and 5
//! costs 2.5–2.7× what 3 does. Much of the cost is fixed: a new encoder's setup and end come
//! to about 403 k instructions for gzip and 300 k for brotli 3 on a 12-byte body (mostly its
//! tables cleared). So the costly parts are reused, a few per worker: gzip's compressors
//! (`gzip`) and brotli's hashers (`br`), which more than halves what a small body costs
//! (1 KiB: gzip 247 k instead of 505 k, brotli 192 k instead of 437 k), and lets `Compress`
//! compress from 512 bytes (BENCHMARKS.md, "Compression encoder reuse"). Brotli's window is
//! 2^18 (256 KiB): dynamic answers are rarely larger, and a stream's encoder holds a
//! window's worth of memory.

use std::io;

use bytes::Bytes;

use super::br::BrEncoder;
use super::gzip::GzipEncoder;
use super::Coding;

/// gzip's level (of 1–9; see the table above).
pub(crate) const GZIP_LEVEL: u32 = 4;
/// brotli's quality (of 0–11; see the table above).
pub(crate) const BR_QUALITY: u32 = 3;
/// brotli's window, log2 of its bytes.
pub(crate) const BR_WINDOW: u32 = 18;

/// `data` compressed whole with `coding`.
pub(crate) fn encode_all(coding: Coding, data: &[u8]) -> Bytes {
    // Writing into a `Vec` cannot fail, nor can the encoders' own work on valid input.
    let mut encoder = Encoder::new(coding);
    encoder.write(data).expect("compressing into memory");
    encoder.finish().expect("compressing into memory")
}

/// A compressor for one body, fed piece by piece.
pub(crate) enum Encoder {
    /// From the worker's pool (`gzip`).
    Gzip(GzipEncoder),
    /// With a hasher from the worker's pool (`br`).
    Br(BrEncoder),
}

impl Encoder {
    pub(crate) fn new(coding: Coding) -> Encoder {
        match coding {
            Coding::Gzip => Encoder::Gzip(GzipEncoder::new()),
            Coding::Br => Encoder::Br(BrEncoder::new()),
        }
    }

    fn write(&mut self, data: &[u8]) -> io::Result<()> {
        match self {
            Encoder::Gzip(e) => e.write(data),
            Encoder::Br(e) => e.write(data),
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
        Ok(Bytes::from(self.output()))
    }

    /// Ends the stream: the last bytes (gzip's trailer, brotli's last meta-block).
    pub(crate) fn finish(self) -> io::Result<Bytes> {
        let out = match self {
            Encoder::Gzip(e) => e.finish()?,
            Encoder::Br(e) => e.finish()?,
        };
        Ok(Bytes::from(out))
    }

    fn output(&mut self) -> Vec<u8> {
        match self {
            Encoder::Gzip(e) => e.take_output(),
            Encoder::Br(e) => e.take_output(),
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
            assert!(
                packed.len() < data.len() / 5,
                "{coding:?}: {}",
                packed.len()
            );
            assert_eq!(decode_all(coding, &[&packed]).unwrap(), data);
        }
        // gzip's fixed header: magic, deflate, no flags, no time, no extra flags, OS unknown.
        let gz = encode_all(Coding::Gzip, b"x");
        assert_eq!(gz[..10], [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]);
    }

    /// JSON records, cut to `len` bytes: a dynamic answer of that size.
    fn records(len: usize) -> Vec<u8> {
        (0..)
            .flat_map(|i| {
                format!(
                    r#"{{"id":{},"name":"User Number {i}","email":"user.{i}@example.com","active":{},"tags":["beta","europe"]}},"#,
                    1_000_000 + i,
                    i % 3 != 0
                )
                .into_bytes()
            })
            .take(len)
            .collect()
    }

    #[inline(never)]
    fn encode_many(coding: Coding, data: &[u8], count: usize) -> usize {
        (0..count)
            .map(|_| encode_all(coding, std::hint::black_box(data)).len())
            .sum()
    }

    /// What `Compress` spends on a body in memory, per response: run under callgrind, as
    /// BENCHMARKS.md ("Compression encoder reuse") says, with `VOLT_ENCODE="gzip 4096 200"`
    /// (coding, body size, responses). The first response (the worker's first encoder) is
    /// made outside the count.
    #[test]
    #[ignore = "a callgrind harness, run by hand"]
    fn callgrind_encode_all() {
        let spec = std::env::var("VOLT_ENCODE").unwrap_or_else(|_| "gzip 4096 10".into());
        let spec: Vec<&str> = spec.split_whitespace().collect();
        let coding = Coding::from_token(spec[0].as_bytes()).expect("gzip or br");
        let data = records(spec[1].parse().expect("a size"));
        let count = spec[2].parse().expect("a count");
        let one = encode_all(coding, &data);
        assert_eq!(decode_all(coding, &[&one]).unwrap(), data);
        let total = encode_many(coding, &data, count);
        println!("{coding:?} {} bytes -> {}", data.len(), total / count);
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
