//! The client's QPACK encoder and decoder streams (RFC 9204 §4.2–4.4), read by a server
//! whose table capacity is 0.
//!
//! The encoder stream carries the client's dynamic table updates. With a capacity of 0 the
//! only instruction that can be valid is Set Dynamic Table Capacity to 0 (§4.3.1); any insert
//! or duplicate could only name an entry larger than the table, an error (§3.2.2, §4.3).
//!
//! The decoder stream carries the client's acknowledgements of our sections. We never refer
//! to the dynamic table, so there is nothing to acknowledge and no insert to count: a Section
//! Acknowledgment or an Insert Count Increment is an error (§4.4.1, §4.4.3). Stream
//! Cancellation (§4.4.2) stays legal: a decoder may send one for any reset stream.

use bytes::{Buf, BytesMut};

use crate::h3::{Code, Error};

/// Reads the client's QPACK encoder stream (after its stream type).
#[derive(Clone, Debug, Default)]
pub struct EncoderStream {}

impl EncoderStream {
    /// A stream with nothing read yet.
    pub fn new() -> EncoderStream {
        EncoderStream {}
    }

    /// Reads every complete instruction at the front of `buf`, removing it. An incomplete
    /// one is left for the next call. Errors are connection errors of type
    /// QPACK_ENCODER_STREAM_ERROR.
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<(), Error> {
        const ERR: Code = Code::QPACK_ENCODER_STREAM_ERROR;
        while let Some(&first) = buf.first() {
            if first & 0xe0 != 0x20 {
                // 1xxxxxxx Insert with Name Reference, 01xxxxxx Insert with Literal Name,
                // 000xxxxx Duplicate: each adds an entry to a table of capacity 0.
                return Err(Error::connection(ERR, "insert into a table of capacity 0"));
            }
            // 001xxxxx Set Dynamic Table Capacity: above our maximum of 0 is an error.
            let Some((capacity, n)) = integer(buf, 5, ERR)? else {
                return Ok(());
            };
            if capacity != 0 {
                return Err(Error::connection(
                    ERR,
                    "dynamic table capacity above SETTINGS_QPACK_MAX_TABLE_CAPACITY",
                ));
            }
            buf.advance(n);
        }
        Ok(())
    }
}

/// Reads the client's QPACK decoder stream (after its stream type).
#[derive(Clone, Debug, Default)]
pub struct DecoderStream {}

impl DecoderStream {
    /// A stream with nothing read yet.
    pub fn new() -> DecoderStream {
        DecoderStream {}
    }

    /// Reads every complete instruction at the front of `buf`, removing it. Stream
    /// Cancellations (§4.4.2: the client reset a stream or stopped reading it) are dropped:
    /// with no dynamic table they ask nothing of us. Errors are connection errors of type
    /// QPACK_DECODER_STREAM_ERROR.
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<(), Error> {
        const ERR: Code = Code::QPACK_DECODER_STREAM_ERROR;
        while let Some(&first) = buf.first() {
            if first & 0x80 != 0 {
                return Err(Error::connection(
                    ERR,
                    "Section Acknowledgment with no section to acknowledge",
                ));
            }
            if first & 0x40 == 0 {
                return Err(Error::connection(
                    ERR,
                    "Insert Count Increment with no insert",
                ));
            }
            // 01xxxxxx Stream Cancellation: the stream ID, which we need not act on.
            let Some((_stream_id, n)) = integer(buf, 6, ERR)? else {
                return Ok(());
            };
            buf.advance(n);
        }
        Ok(())
    }
}

/// A prefixed integer with an `n`-bit prefix at the front of `buf`, and how many bytes it
/// took; `None` if it is not all there. Values past 62 bits (RFC 9204 §4.1.1) are an error
/// with `code`, which also bounds how many bytes an unfinished integer can hold back.
fn integer(buf: &[u8], n: u32, code: Code) -> Result<Option<(u64, usize)>, Error> {
    let max_prefix = (1u8 << n) - 1;
    let first = buf[0] & max_prefix;
    if first < max_prefix {
        return Ok(Some((u64::from(first), 1)));
    }
    let mut value = u64::from(max_prefix);
    for (i, &b) in buf[1..].iter().enumerate() {
        if i >= 9 {
            break;
        }
        value += u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            if value > crate::h3::varint::MAX {
                break;
            }
            return Ok(Some((value, i + 2)));
        }
    }
    if buf.len() < 11 && value <= crate::h3::varint::MAX {
        return Ok(None);
    }
    Err(Error::connection(code, "integer too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoder(bytes: &[u8]) -> Result<usize, Error> {
        let mut buf = BytesMut::from(bytes);
        EncoderStream::new().decode(&mut buf)?;
        Ok(buf.len())
    }

    fn decoder(bytes: &[u8]) -> Result<usize, Error> {
        let mut buf = BytesMut::from(bytes);
        DecoderStream::new().decode(&mut buf)?;
        Ok(buf.len())
    }

    #[test]
    fn encoder_stream_allows_only_capacity_zero() {
        assert_eq!(encoder(&[0x20, 0x20]), Ok(0));
        // Capacity 0 sent in two bytes (31 + ...), cut: waits.
        assert_eq!(encoder(&[0x3f]), Ok(1));
        for bad in [&[0x21][..], &[0x3f, 0xe1, 0x1f], &[0x3f, 0x00]] {
            let err = encoder(bad).unwrap_err();
            assert_eq!(err.code(), Code::QPACK_ENCODER_STREAM_ERROR, "{bad:?}");
        }
        // Insert with name reference, with literal name, duplicate.
        for bad in [0xc0, 0x40, 0x00] {
            let err = encoder(&[bad, 0]).unwrap_err();
            assert_eq!(err.code(), Code::QPACK_ENCODER_STREAM_ERROR);
        }
    }

    #[test]
    fn decoder_stream_allows_only_stream_cancellation() {
        assert_eq!(decoder(&[0x44, 0x7f, 0x00]), Ok(0));
        assert_eq!(decoder(&[0x7f, 0x80]), Ok(2));
        for bad in [0x84, 0x01, 0x00] {
            let err = decoder(&[bad]).unwrap_err();
            assert_eq!(err.code(), Code::QPACK_DECODER_STREAM_ERROR);
            assert!(err.is_connection_error());
        }
    }

    #[test]
    fn endless_integers_are_refused_not_buffered() {
        let mut bytes = vec![0x3f];
        bytes.extend([0x80; 10]);
        assert_eq!(
            encoder(&bytes).unwrap_err().code(),
            Code::QPACK_ENCODER_STREAM_ERROR
        );
        let mut bytes = vec![0x7f];
        bytes.extend([0xff; 8]);
        bytes.push(0x7f); // 10 bytes, past 62 bits
        assert_eq!(
            decoder(&bytes).unwrap_err().code(),
            Code::QPACK_DECODER_STREAM_ERROR
        );
    }
}
