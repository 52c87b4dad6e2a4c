//! HPACK, the header compression of HTTP/2 (RFC 7541).
//!
//! Each direction of a connection has its own compression state: a [`Decoder`] for the
//! header blocks the peer sends, an [`Encoder`] for ours. Both keep a dynamic table that
//! must stay in step with the peer's, so every block must pass through them in the order it
//! is sent or received, even the blocks of streams that are then refused.
//!
//! - [`Decoder::decode`] takes one complete header block and calls back with each field,
//!   borrowing the bytes instead of copying them out.
//! - [`Encoder`] writes a block field by field into a `Vec<u8>`: [`begin`](Encoder::begin),
//!   [`status`](Encoder::status), then [`field`](Encoder::field) with an [`Indexing`]
//!   policy saying whether the peer should remember it.
//!
//! # Example
//!
//! ```
//! use volt_proto::h2::hpack::{Decoder, Encoder, Indexing};
//!
//! let mut encoder = Encoder::new();
//! let mut decoder = Decoder::new(4096);
//! for _ in 0..2 {
//!     let mut block = Vec::new();
//!     encoder.begin(&mut block);
//!     encoder.status(200, &mut block);
//!     encoder.field(b"server", b"volt", Indexing::Remember, &mut block);
//!     encoder.field(b"content-length", b"13", Indexing::Once, &mut block);
//!
//!     let mut fields = Vec::new();
//!     decoder
//!         .decode(&block, |name, value| {
//!             fields.push((name.to_vec(), value.to_vec()));
//!             Ok(())
//!         })
//!         .unwrap();
//!     assert_eq!(fields[0], (b":status".to_vec(), b"200".to_vec()));
//!     assert_eq!(fields[1], (b"server".to_vec(), b"volt".to_vec()));
//!     assert_eq!(fields[2], (b"content-length".to_vec(), b"13".to_vec()));
//! }
//! ```
//!
//! # Layout
//!
//! - `decode`, `encode`: the two directions.
//! - `table`: the static table and the dynamic table both directions keep.
//! - `huffman`: the string code, with its decoding state machine built at compile time.

mod decode;
mod encode;
// Shared with QPACK (`h3::qpack`), which uses the same code (RFC 9204 §4.1.2).
pub(crate) mod huffman;
mod table;
#[cfg(test)]
mod tests;

use std::fmt;

pub use decode::Decoder;
pub use encode::{Encoder, Indexing};

/// Why a header block could not be decoded.
///
/// Every variant but [`Rejected`](DecodeError::Rejected) means the block broke RFC 7541: the
/// connection's compression state is lost, which is a connection error of type
/// COMPRESSION_ERROR ([`is_compression_error`](DecodeError::is_compression_error)).
/// `Rejected` is what the `field` callback of [`Decoder::decode`] returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeError {
    /// An index of 0, or past the end of the static and dynamic tables.
    InvalidIndex,
    /// An integer larger than `u32::MAX`, or encoded with too many bytes.
    IntegerOverflow,
    /// The block ends inside an integer or a string.
    Truncated,
    /// A Huffman-coded string contains the EOS symbol.
    HuffmanEos,
    /// A Huffman-coded string ends with padding longer than 7 bits or not all ones.
    HuffmanPadding,
    /// A dynamic table size update above our SETTINGS_HEADER_TABLE_SIZE.
    TableSizeTooLarge,
    /// A dynamic table size update after the first field of a block.
    LateTableSizeUpdate,
    /// The caller refused a field; the text says why.
    Rejected(&'static str),
}

impl DecodeError {
    /// Whether this is a COMPRESSION_ERROR for the connection (everything but
    /// [`Rejected`](DecodeError::Rejected)).
    pub fn is_compression_error(&self) -> bool {
        !matches!(self, DecodeError::Rejected(_))
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let why = match self {
            DecodeError::InvalidIndex => "header field index is 0 or past the end of the tables",
            DecodeError::IntegerOverflow => "HPACK integer overflows",
            DecodeError::Truncated => "header block ends inside an integer or string",
            DecodeError::HuffmanEos => "Huffman-coded string contains EOS",
            DecodeError::HuffmanPadding => "Huffman padding is longer than 7 bits or not all ones",
            DecodeError::TableSizeTooLarge => {
                "dynamic table size update exceeds SETTINGS_HEADER_TABLE_SIZE"
            }
            DecodeError::LateTableSizeUpdate => {
                "dynamic table size update after the first header field"
            }
            DecodeError::Rejected(why) => why,
        };
        f.write_str(why)
    }
}

impl std::error::Error for DecodeError {}
