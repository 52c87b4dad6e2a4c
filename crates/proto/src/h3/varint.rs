//! QUIC variable-length integers (RFC 9000 §16), which HTTP/3 uses for frame types and
//! lengths, stream types, settings and IDs.
//!
//! The two high bits of the first byte give the length: 1, 2, 4 or 8 bytes, holding 6, 14, 30
//! or 62 bits, big-endian. A value may be sent in more bytes than it needs: RFC 9000 §16 allows
//! it (only frame types in QUIC itself must be minimal, and HTTP/3 asks nothing of the kind),
//! so [`decode`] accepts it; [`encode`] always writes the shortest form.

use bytes::BufMut;

/// The largest value a varint holds: 2^62 − 1.
pub const MAX: u64 = (1 << 62) - 1;

/// How many bytes [`encode`] writes for `value`.
///
/// # Panics
///
/// If `value` is over [`MAX`].
#[inline]
pub fn len(value: u64) -> usize {
    match value {
        0..=0x3f => 1,
        0x40..=0x3fff => 2,
        0x4000..=0x3fff_ffff => 4,
        0x4000_0000..=MAX => 8,
        _ => panic!("varint over 2^62 - 1: {value}"),
    }
}

/// Appends `value` in its shortest form.
///
/// # Panics
///
/// If `value` is over [`MAX`]: every value the codec writes is a length, an ID or a code that
/// fits, so a larger one is a bug of the caller.
#[inline]
pub fn encode<B: BufMut>(value: u64, dst: &mut B) {
    match len(value) {
        1 => dst.put_u8(value as u8),
        2 => dst.put_u16(0x4000 | value as u16),
        4 => dst.put_u32(0x8000_0000 | value as u32),
        _ => dst.put_u64(0xc000_0000_0000_0000 | value),
    }
}

/// Reads a varint from the front of `src`: the value and how many bytes it took, or `None` if
/// `src` holds only part of one (or nothing). Every bit pattern is a valid varint, so there is
/// no error.
#[inline]
pub fn decode(src: &[u8]) -> Option<(u64, usize)> {
    let first = *src.first()?;
    let len = 1 << (first >> 6);
    let bytes = src.get(..len)?;
    let value = bytes[1..]
        .iter()
        .fold(u64::from(first & 0x3f), |v, &b| (v << 8) | u64::from(b));
    Some((value, len))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 9000 Appendix A.1's examples.
    #[test]
    fn rfc_9000_samples() {
        let samples: [(&[u8], u64); 4] = [
            (
                &[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c],
                151_288_809_941_952_652,
            ),
            (&[0x9d, 0x7f, 0x3e, 0x7d], 494_878_333),
            (&[0x7b, 0xbd], 15_293),
            (&[0x25], 37),
        ];
        for (bytes, value) in samples {
            assert_eq!(decode(bytes), Some((value, bytes.len())));
            let mut out = Vec::new();
            encode(value, &mut out);
            assert_eq!(out, bytes);
        }
    }

    #[test]
    fn non_minimal_encodings_decode() {
        // 37 in two bytes (RFC 9000 A.1 shows this one too) and in eight.
        assert_eq!(decode(&[0x40, 0x25]), Some((37, 2)));
        assert_eq!(decode(&[0xc0, 0, 0, 0, 0, 0, 0, 0x25]), Some((37, 8)));
    }

    #[test]
    fn every_length_boundary_round_trips() {
        for value in [0, 63, 64, 16_383, 16_384, (1 << 30) - 1, 1 << 30, MAX] {
            let mut out = Vec::new();
            encode(value, &mut out);
            assert_eq!(out.len(), len(value));
            assert_eq!(decode(&out), Some((value, out.len())));
            // Any strict prefix is "need more bytes".
            for cut in 0..out.len() {
                assert_eq!(decode(&out[..cut]), None, "{value} cut at {cut}");
            }
        }
    }

    #[test]
    #[should_panic(expected = "varint over")]
    fn encoding_past_the_maximum_panics() {
        encode(MAX + 1, &mut Vec::new());
    }
}
