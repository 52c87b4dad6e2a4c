//! QPACK, the field compression of HTTP/3 (RFC 9204), without a dynamic table.
//!
//! QPACK is HPACK reworked for streams that arrive out of order: the dynamic table's updates
//! travel on their own encoder stream, and a section may have to wait for them. All of that
//! machinery is for the dynamic table, and we use none: we announce
//! SETTINGS_QPACK_MAX_TABLE_CAPACITY 0 (so a client may not insert anything) and our encoder
//! never inserts. What is left is the static table (99 entries, Appendix A), literals,
//! HPACK's prefixed integers and Huffman code (the same code, shared with
//! [`crate::h2::hpack`]), and a two-byte prefix per section that must say "no dynamic table".
//!
//! - [`Decoder::decode`] takes one field section (a HEADERS frame's payload) and calls back
//!   with each [`Field`], borrowing its bytes; a reference to the dynamic table is
//!   QPACK_DECOMPRESSION_FAILED.
//! - [`Encoder`] writes a section field by field into a `Vec<u8>`:
//!   [`begin`](Encoder::begin), [`status`](Encoder::status), then
//!   [`field`](Encoder::field) with an [`Indexing`] policy (only
//!   [`Never`](Indexing::Never) changes anything: it sets the N bit).
//! - [`EncoderStream`] and [`DecoderStream`] read the client's two QPACK streams, where with
//!   a table capacity of 0 almost every instruction is an error.
//!
//! # Example
//!
//! ```
//! use volt_proto::h3::qpack::{Decoder, Encoder, Indexing};
//!
//! let mut section = Vec::new();
//! let mut encoder = Encoder::new();
//! encoder.begin(&mut section);
//! encoder.status(200, &mut section);
//! encoder.field(b"content-type", b"text/plain", Indexing::Remember, &mut section);
//! encoder.field(b"server", b"volt", Indexing::Remember, &mut section);
//! // Prefix, `:status: 200` (static 25), `content-type: text/plain` (static 53), then
//! // `server` by its static name (92) with a 3-byte Huffman-coded value.
//! assert_eq!(&section[..4], [0x00, 0x00, 0xd9, 0xf5]);
//!
//! let mut fields = Vec::new();
//! Decoder::new()
//!     .decode(&section, |f| {
//!         fields.push((f.name.to_vec(), f.value.to_vec()));
//!         Ok(())
//!     })
//!     .unwrap();
//! assert_eq!(fields[0], (b":status".to_vec(), b"200".to_vec()));
//! assert_eq!(fields[2], (b"server".to_vec(), b"volt".to_vec()));
//! ```
//!
//! # Layout
//!
//! - `decode`, `encode`: the two directions of field sections.
//! - `instruction`: the encoder and decoder streams' instructions.
//! - `table`: the static table.

mod decode;
mod encode;
mod instruction;
mod table;
#[cfg(test)]
mod tests;

pub use crate::h2::hpack::Indexing;
pub use decode::{Decoder, Field};
pub use encode::Encoder;
pub use instruction::{DecoderStream, EncoderStream};
