//! Decompressing, sans I/O: [`Decoder::feed`] takes compressed bytes as they arrive,
//! [`Decoder::step`] gives decoded bytes, at most [`STEP_OUT`] a step, and
//! [`Decoder::finish`] says whether the stream ended where the body did.
//!
//! The bound per step is the defence against a decompression bomb (a few KiB of deflate
//! that inflate to gigabytes, 1,032 to 1 at most; brotli's ratio has no such ceiling): the
//! decoder never holds more than one step's output and the input it was fed, so memory stays
//! bounded for as long as the reader takes the output piece by piece. Reading it all into
//! memory is the reader's choice.
//!
//! gzip (RFC 1952) is parsed here: the member header with its optional fields, the raw deflate
//! data (flate2's `Decompress`), then the CRC-32 and length trailer, which are checked.
//! Members may follow each other (§2.2: the result is their concatenation). brotli (RFC 7932)
//! is the brotli-decompressor's streaming state machine, with its large-window extension
//! (windows of up to 1 GiB, not RFC 7932) turned off: a stream may claim a window of 16 MiB
//! at most, which bounds the decoder's own memory.

use std::fmt;
use std::io;

use brotli::{BrotliDecompressStream, BrotliResult, BrotliState, HeapAlloc, HuffmanCode};
use bytes::{Buf, Bytes};
use flate2::{Crc, Decompress, FlushDecompress, Status};

use super::Coding;

/// Most bytes one [`Decoder::step`] gives out.
pub(crate) const STEP_OUT: usize = 32 * 1024;

/// The most a gzip header's optional fields (extra field, file name, comment) may take.
const MAX_GZIP_HEADER: usize = 64 * 1024;

/// A decompressor for one body.
pub(crate) struct Decoder {
    codec: Codec,
    /// Fed and not yet consumed.
    input: Bytes,
    /// Bytes ever fed: an empty body is an empty body, whatever its coding says.
    fed_any: bool,
}

enum Codec {
    Gzip(Box<Gzip>),
    Deflate(Box<Deflate>),
    Br(
        Box<BrotliState<HeapAlloc<u8>, HeapAlloc<u32>, HeapAlloc<HuffmanCode>>>,
        BrState,
    ),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum BrState {
    Running,
    /// The last step filled its output: the decoder holds more, whatever the input.
    OutputFull,
    Ended,
}

/// Where a gzip stream stands.
enum Gzip {
    /// Reading a member's header: the bytes of it seen so far.
    Header(Vec<u8>),
    /// Inflating a member's data.
    Data { inflate: Decompress, crc: Crc },
    /// Reading a member's trailer: its CRC and length, and the trailer's bytes so far.
    Trailer { crc: u32, len: u32, seen: Vec<u8> },
    /// A member ended; another may follow.
    Between,
}

/// Where a `deflate` stream stands (RFC 9110 §8.4.1.2).
enum Deflate {
    /// Its first two bytes, as they come: a zlib header (RFC 1950 §2.2) or raw DEFLATE.
    Sniff(Vec<u8>),
    /// Inflating, with the zlib wrapper (its Adler-32 checked by miniz_oxide) or without.
    Data(Decompress),
    Ended,
}

/// A malformed compressed body.
#[derive(Debug)]
pub(crate) struct DecodeError(&'static str);

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl From<DecodeError> for io::Error {
    fn from(e: DecodeError) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidData, e.0)
    }
}

impl Decoder {
    pub(crate) fn new(coding: Coding) -> Decoder {
        let codec = match coding {
            Coding::Gzip => Codec::Gzip(Box::new(Gzip::Header(Vec::new()))),
            Coding::Br => {
                let mut state = BrotliState::new(
                    HeapAlloc::new(0),
                    HeapAlloc::new(0),
                    HeapAlloc::new(HuffmanCode::default()),
                );
                state.large_window = false;
                Codec::Br(Box::new(state), BrState::Running)
            }
        };
        Decoder {
            codec,
            input: Bytes::new(),
            fed_any: false,
        }
    }

    /// A decoder for the `deflate` coding: the zlib format RFC 9110 §8.4.1.2 names, or raw
    /// DEFLATE without it, as some servers send and browsers read. The first two bytes tell
    /// which: a zlib header is method 8 with a window of at most 32 KiB, no preset
    /// dictionary, and a check that makes the pair a multiple of 31; raw DEFLATE starting
    /// with such a pair would be a stored block that its own LEN/NLEN check then refuses,
    /// almost always.
    pub(crate) fn deflate() -> Decoder {
        Decoder {
            codec: Codec::Deflate(Box::new(Deflate::Sniff(Vec::with_capacity(2)))),
            input: Bytes::new(),
            fed_any: false,
        }
    }

    /// Adds compressed bytes. Call only once [`Decoder::step`] has given `None` (everything
    /// fed before is consumed).
    pub(crate) fn feed(&mut self, input: Bytes) {
        debug_assert!(
            self.input.is_empty(),
            "fed before the last input was consumed"
        );
        self.fed_any |= !input.is_empty();
        self.input = input;
    }

    /// Decodes some of the input: `Some` with up to [`STEP_OUT`] bytes, or `None` once the
    /// input is used up (feed more, or [`finish`](Decoder::finish)).
    pub(crate) fn step(&mut self) -> Result<Option<Bytes>, DecodeError> {
        loop {
            if self.input.is_empty() && !self.has_pending_output() {
                return Ok(None);
            }
            let out = match &mut self.codec {
                Codec::Gzip(gzip) => gzip.step(&mut self.input)?,
                Codec::Deflate(deflate) => deflate.step(&mut self.input)?,
                Codec::Br(state, at) => br_step(state, at, &mut self.input)?,
            };
            if !out.is_empty() {
                return Ok(Some(out));
            }
        }
    }

    /// Whether the decoder holds decoded bytes it has not given out yet, though all input is
    /// consumed (brotli keeps some when a step's output filled up).
    fn has_pending_output(&self) -> bool {
        match &self.codec {
            Codec::Gzip(_) | Codec::Deflate(_) => false,
            Codec::Br(_, at) => *at == BrState::OutputFull,
        }
    }

    /// The compressed body ended: an error unless the coded stream ended too (a truncated
    /// body must not pass for whole).
    pub(crate) fn finish(&self) -> Result<(), DecodeError> {
        let whole = !self.fed_any
            || match &self.codec {
                Codec::Gzip(gzip) => matches!(**gzip, Gzip::Between),
                Codec::Deflate(deflate) => matches!(**deflate, Deflate::Ended),
                Codec::Br(_, at) => *at == BrState::Ended,
            };
        if whole {
            Ok(())
        } else {
            Err(DecodeError("the compressed body is cut short"))
        }
    }
}

impl Gzip {
    /// One step: consumes some of `input`, gives out what it decoded (maybe nothing).
    fn step(&mut self, input: &mut Bytes) -> Result<Bytes, DecodeError> {
        match self {
            Gzip::Between | Gzip::Header(_) => {
                let Gzip::Header(seen) = self else {
                    *self = Gzip::Header(Vec::new());
                    return Ok(Bytes::new());
                };
                // The header is taken a byte at a time into `seen` until it parses: it is short
                // (10 bytes without options), and its fields end at NULs that may be anywhere.
                let take = input.len().min(MAX_GZIP_HEADER + 1 - seen.len());
                let before = seen.len();
                seen.extend_from_slice(&input[..take]);
                match header_len(seen)? {
                    Some(len) => {
                        input.advance(len - before);
                        *self = Gzip::Data {
                            inflate: Decompress::new(false),
                            crc: Crc::new(),
                        };
                    }
                    None if seen.len() > MAX_GZIP_HEADER => {
                        return Err(DecodeError("the gzip header is too long"))
                    }
                    None => input.advance(take),
                }
                Ok(Bytes::new())
            }
            Gzip::Data { inflate, crc } => {
                let (out, ended) = inflate_step(inflate, input, "corrupt gzip data")?;
                crc.update(&out);
                if ended {
                    *self = Gzip::Trailer {
                        crc: crc.sum(),
                        len: crc.amount(),
                        seen: Vec::with_capacity(8),
                    };
                }
                Ok(out)
            }
            Gzip::Trailer { crc, len, seen } => {
                let take = input.len().min(8 - seen.len());
                seen.extend_from_slice(&input[..take]);
                input.advance(take);
                if seen.len() == 8 {
                    let word = |at: usize| u32::from_le_bytes(seen[at..at + 4].try_into().unwrap());
                    // RFC 1952 §2.3.1: CRC-32 of the data, then its length modulo 2^32.
                    if word(0) != *crc || word(4) != *len {
                        return Err(DecodeError("the gzip data fails its CRC or length check"));
                    }
                    *self = Gzip::Between;
                }
                Ok(Bytes::new())
            }
        }
    }
}

impl Deflate {
    /// One step: consumes some of `input`, gives out what it decoded (maybe nothing).
    fn step(&mut self, input: &mut Bytes) -> Result<Bytes, DecodeError> {
        match self {
            Deflate::Sniff(seen) => {
                let take = input.len().min(2 - seen.len());
                seen.extend_from_slice(&input[..take]);
                input.advance(take);
                if seen.len() < 2 {
                    return Ok(Bytes::new());
                }
                let (cmf, flg) = (seen[0], seen[1]);
                let zlib = cmf & 0x0f == 8
                    && cmf >> 4 <= 7
                    && flg & 0x20 == 0
                    && (u16::from(cmf) << 8 | u16::from(flg)) % 31 == 0;
                let mut inflate = Decompress::new(zlib);
                // The two bytes go to the inflater first (a zlib header, or raw data).
                let mut head = Bytes::from(std::mem::take(seen));
                let (out, ended) = inflate_step(&mut inflate, &mut head, "corrupt deflate data")?;
                *self = match ended {
                    true => Deflate::Ended,
                    false => Deflate::Data(inflate),
                };
                Ok(out)
            }
            Deflate::Data(inflate) => {
                let (out, ended) = inflate_step(inflate, input, "corrupt deflate data")?;
                if ended {
                    *self = Deflate::Ended;
                }
                Ok(out)
            }
            Deflate::Ended => Err(DecodeError("data after the end of the deflate stream")),
        }
    }
}

/// Inflates some of `input` (consumed as far as it went): up to [`STEP_OUT`] bytes, and
/// whether the DEFLATE stream (with its zlib trailer, if any) ended; `corrupt` is the error
/// for bad data.
fn inflate_step(
    inflate: &mut Decompress,
    input: &mut Bytes,
    corrupt: &'static str,
) -> Result<(Bytes, bool), DecodeError> {
    let mut out = Vec::with_capacity(STEP_OUT);
    let before = inflate.total_in();
    let status = inflate
        .decompress_vec(input, &mut out, FlushDecompress::None)
        .map_err(|_| DecodeError(corrupt))?;
    let consumed = (inflate.total_in() - before) as usize;
    input.advance(consumed);
    let ended = status == Status::StreamEnd;
    if !ended && consumed == 0 && out.is_empty() && !input.is_empty() {
        // No progress with input to take and room to write: cannot happen, but a stuck
        // decoder must not spin.
        return Err(DecodeError(corrupt));
    }
    if out.len() < out.capacity() / 2 {
        out.shrink_to_fit();
    }
    Ok((Bytes::from(out), ended))
}

/// The length of the gzip member header at the front of `seen`, once all of it is there
/// (RFC 1952 §2.3): magic, method 8 (deflate), flags, time, extra flags, OS, then the fields
/// the flags announce: FEXTRA (a length, then that many bytes), FNAME and FCOMMENT (each up to
/// a NUL), FHCRC (two bytes, not checked: no client checks it, and some writers got it wrong).
fn header_len(seen: &[u8]) -> Result<Option<usize>, DecodeError> {
    const FHCRC: u8 = 2;
    const FEXTRA: u8 = 4;
    const FNAME: u8 = 8;
    const FCOMMENT: u8 = 16;
    const RESERVED: u8 = 0xe0;
    for (i, expected) in [0x1f, 0x8b, 8].into_iter().enumerate() {
        match seen.get(i) {
            Some(&b) if b != expected => return Err(DecodeError("not gzip data")),
            None => return Ok(None),
            Some(_) => {}
        }
    }
    let Some(&flags) = seen.get(3) else {
        return Ok(None);
    };
    if flags & RESERVED != 0 {
        return Err(DecodeError("reserved gzip header flags are set"));
    }
    let mut at = 10;
    if flags & FEXTRA != 0 {
        let Some(xlen) = seen.get(at..at + 2) else {
            return Ok(None);
        };
        at += 2 + usize::from(u16::from_le_bytes([xlen[0], xlen[1]]));
    }
    for flag in [FNAME, FCOMMENT] {
        if flags & flag != 0 {
            let Some(nul) = seen.get(at..).and_then(|s| s.iter().position(|&b| b == 0)) else {
                return Ok(None);
            };
            at += nul + 1;
        }
    }
    if flags & FHCRC != 0 {
        at += 2;
    }
    Ok((seen.len() >= at).then_some(at))
}

/// One brotli step: consumes some of `input`, gives out up to [`STEP_OUT`] bytes.
fn br_step(
    state: &mut BrotliState<HeapAlloc<u8>, HeapAlloc<u32>, HeapAlloc<HuffmanCode>>,
    at: &mut BrState,
    input: &mut Bytes,
) -> Result<Bytes, DecodeError> {
    if *at == BrState::Ended {
        // Bytes after the end of the stream.
        return Err(DecodeError("data after the end of the brotli stream"));
    }
    let mut out = vec![0; STEP_OUT];
    let (mut available_in, mut in_offset) = (input.len(), 0);
    let (mut available_out, mut out_offset, mut total) = (out.len(), 0, 0);
    let result = BrotliDecompressStream(
        &mut available_in,
        &mut in_offset,
        &input[..],
        &mut available_out,
        &mut out_offset,
        &mut out,
        &mut total,
        state,
    );
    input.advance(in_offset);
    out.truncate(out_offset);
    match result {
        BrotliResult::ResultFailure => return Err(DecodeError("corrupt brotli data")),
        BrotliResult::ResultSuccess => {
            *at = BrState::Ended;
            if !input.is_empty() {
                return Err(DecodeError("data after the end of the brotli stream"));
            }
        }
        BrotliResult::NeedsMoreInput => *at = BrState::Running,
        BrotliResult::NeedsMoreOutput => *at = BrState::OutputFull,
    }
    if out.len() < out.capacity() / 2 {
        out.shrink_to_fit();
    }
    Ok(Bytes::from(out))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::coding::encode::encode_all;

    /// Decodes `pieces` fed one after the other, checking the bound on each step.
    pub(crate) fn decode_all(coding: Coding, pieces: &[&[u8]]) -> Result<Vec<u8>, DecodeError> {
        decode_with(Decoder::new(coding), pieces)
    }

    fn decode_with(mut decoder: Decoder, pieces: &[&[u8]]) -> Result<Vec<u8>, DecodeError> {
        let mut got = Vec::new();
        for piece in pieces {
            decoder.feed(Bytes::copy_from_slice(piece));
            while let Some(out) = decoder.step()? {
                assert!(out.len() <= STEP_OUT);
                got.extend_from_slice(&out);
            }
        }
        decoder.finish()?;
        Ok(got)
    }

    fn text(n: usize) -> Vec<u8> {
        (0..n).map(|i| b"volt content coding "[i % 20]).collect()
    }

    #[test]
    fn input_split_at_every_byte() {
        let data = text(3000);
        for coding in [Coding::Gzip, Coding::Br] {
            let packed = encode_all(coding, &data);
            for at in 0..=packed.len() {
                let got = decode_all(coding, &[&packed[..at], &packed[at..]]);
                assert_eq!(got.unwrap(), data, "{coding:?} split at {at}");
            }
            let bytes: Vec<&[u8]> = packed.chunks(1).collect();
            assert_eq!(decode_all(coding, &bytes).unwrap(), data);
        }
    }

    #[test]
    fn gzip_header_fields_and_members() {
        // FEXTRA, FNAME, FCOMMENT and FHCRC, as `GzBuilder` writes them.
        let mut with_fields = Vec::new();
        {
            use std::io::Write;
            let mut e = flate2::GzBuilder::new()
                .extra(vec![1, 2, 3])
                .filename("name.txt")
                .comment("a comment")
                .write(&mut with_fields, flate2::Compression::default());
            e.write_all(b"hello ").unwrap();
            e.finish().unwrap();
        }
        with_fields[3] |= 2; // FHCRC, with two bytes after the comment
        let comment_end = (with_fields.windows(10).position(|w| w == b"a comment\0")).unwrap() + 9;
        with_fields.splice(comment_end + 1..comment_end + 1, [0xab, 0xcd]);
        let second = encode_all(Coding::Gzip, b"world");
        let both = [&with_fields[..], &second[..]].concat();
        for at in 0..=both.len() {
            let got = decode_all(Coding::Gzip, &[&both[..at], &both[at..]]).unwrap();
            assert_eq!(got, b"hello world");
        }
    }

    #[test]
    fn corrupt_and_truncated_bodies_are_errors() {
        let data = text(5000);
        for coding in [Coding::Gzip, Coding::Br] {
            let packed = encode_all(coding, &data);
            // Cut short anywhere: never whole.
            for at in [1, 5, 10, packed.len() / 2, packed.len() - 1] {
                assert!(
                    decode_all(coding, &[&packed[..at]]).is_err(),
                    "{coding:?} {at}"
                );
            }
            // Trailing garbage.
            let extra = [&packed[..], b"junk"].concat();
            assert!(decode_all(coding, &[&extra]).is_err(), "{coding:?}");
            // Not compressed at all.
            assert!(decode_all(coding, &[b"plain text, not compressed"]).is_err());
        }
        // A flipped bit in the data or the trailer fails the CRC, or inflation.
        let packed = encode_all(Coding::Gzip, &data);
        for at in [12, packed.len() - 6, packed.len() - 2] {
            let mut bad = packed.to_vec();
            bad[at] ^= 0x10;
            assert!(decode_all(Coding::Gzip, &[&bad]).is_err(), "bit at {at}");
        }
        assert!(decode_all(Coding::Gzip, &[&[0x1f, 0x8b, 8, 0x20]]).is_err());
        // An empty body is empty, whatever it claims.
        assert_eq!(decode_all(Coding::Gzip, &[]).unwrap(), b"");
        assert_eq!(decode_all(Coding::Br, &[b""]).unwrap(), b"");
    }

    #[test]
    fn deflate_is_zlib_or_raw() {
        use std::io::Write;
        let data = text(5000);
        let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(6));
        zlib.write_all(&data).unwrap();
        let zlib = zlib.finish().unwrap();
        assert_eq!(zlib[..2], [0x78, 0x9c], "a zlib header");
        let mut raw = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::new(1));
        raw.write_all(&data).unwrap();
        let raw = raw.finish().unwrap();
        let deflate = |pieces: &[&[u8]]| decode_with(Decoder::deflate(), pieces);
        for packed in [&zlib, &raw] {
            for at in 0..=packed.len().min(40) {
                let got = deflate(&[&packed[..at], &packed[at..]]).unwrap();
                assert_eq!(got, data, "split at {at}");
            }
            let bytes: Vec<&[u8]> = packed.chunks(1).collect();
            assert_eq!(deflate(&bytes).unwrap(), data);
            // Cut short, or followed by anything: errors.
            assert!(deflate(&[&packed[..packed.len() - 1]]).is_err());
            assert!(deflate(&[&packed[..1]]).is_err());
            let extra = [&packed[..], b"x"].concat();
            assert!(deflate(&[&extra]).is_err());
        }
        // The zlib trailer's Adler-32 is checked.
        let mut bad = zlib.clone();
        *bad.last_mut().unwrap() ^= 1;
        assert!(deflate(&[&bad]).is_err());
        // RFC 1950's example header with RFC 1951's smallest streams: an empty final fixed
        // block, raw (`03 00`) and wrapped (with the Adler-32 of nothing, 1).
        assert_eq!(deflate(&[&[0x03, 0x00]]).unwrap(), b"");
        assert_eq!(
            deflate(&[&[0x78, 0x01, 0x03, 0x00, 0, 0, 0, 1]]).unwrap(),
            b""
        );
        // "hi" as a stored block, raw: its first byte (01) is no zlib method.
        let stored = [0x01, 0x02, 0x00, 0xfd, 0xff, b'h', b'i'];
        assert_eq!(deflate(&[&stored]).unwrap(), b"hi");
        // A zlib header asking for a preset dictionary is no zlib header: taken as raw, it
        // does not inflate.
        assert!(deflate(&[&[0x78, 0xbb, 0x03, 0x00]]).is_err());
        assert_eq!(deflate(&[]).unwrap(), b"");
    }

    #[test]
    fn large_window_brotli_is_refused() {
        use std::io::Write;
        // The large-window extension (a 2^25 window here, past RFC 7932's 2^24): a stream a
        // standard decoder cannot read, and one that could claim up to 1 GiB of window.
        let params = brotli::enc::BrotliEncoderParams {
            large_window: true,
            lgwin: 25,
            quality: 3,
            ..Default::default()
        };
        let mut e = brotli::CompressorWriter::with_params(Vec::new(), 4096, &params);
        e.write_all(&text(1000)).unwrap();
        let large = e.into_inner();
        assert!(decode_all(Coding::Br, &[&large]).is_err());
        // The same data with the standard window decodes.
        let standard = encode_all(Coding::Br, &text(1000));
        assert_eq!(decode_all(Coding::Br, &[&standard]).unwrap(), text(1000));
    }

    #[test]
    fn a_bomb_comes_out_a_step_at_a_time() {
        // 8 MiB of zeros, about 8 KiB compressed: each step gives at most STEP_OUT.
        let zeros = vec![0u8; 8 << 20];
        for coding in [Coding::Gzip, Coding::Br] {
            let packed = encode_all(coding, &zeros);
            assert!(packed.len() < 16 * 1024, "{coding:?} {}", packed.len());
            let mut decoder = Decoder::new(coding);
            decoder.feed(packed);
            let (mut steps, mut total) = (0, 0);
            while let Some(out) = decoder.step().unwrap() {
                assert!(out.len() <= STEP_OUT);
                total += out.len();
                steps += 1;
            }
            decoder.finish().unwrap();
            assert_eq!(total, zeros.len());
            assert!(steps >= zeros.len() / STEP_OUT, "{coding:?}: {steps} steps");
        }
    }
}
