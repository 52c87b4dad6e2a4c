//! Sans-I/O WebSocket (RFC 6455): frames and messages, no handshake and no socket.
//!
//! - [`Decoder`] takes bytes off the front of a read buffer and gives whole [`Incoming`]
//!   messages: it checks each frame's head (RSV bits, opcode, length, masking), unmasks,
//!   reassembles fragmented messages up to a size limit, validates text as UTF-8 as its bytes
//!   arrive (across fragments, and within a frame still arriving), and checks close frames
//!   (code and reason). `Ok(None)` means "need more bytes".
//! - [`encode_frame`] and [`encode_close`] append a frame's wire form to a `Vec<u8>`.
//! - [`Error`] says which rule a peer broke, and [`Error::close_code`] which close code
//!   answers it (1002, 1007 or 1009).
//!
//! - permessage-deflate (RFC 7692): [`negotiate`] (the server's choice among a client's
//!   offers), [`offer`] and [`accept`] (the client's offer and its check of the answer),
//!   [`DeflateParams`] (what was agreed), [`Compressor`] and [`Decompressor`]; a
//!   [`Decoder::with_deflate`] inflates compressed messages, [`encode_compressed_frame`] sends
//!   one. No other extension is supported: RSV2 and RSV3 must be 0, and RSV1 unless
//!   permessage-deflate was negotiated (RFC 6455 §5.2).
//!
//! # Example
//!
//! ```
//! use bytes::BytesMut;
//! use volt_proto::ws::{encode_frame, Decoder, Incoming, Opcode, Role};
//!
//! // A masked "Hello" from a client (RFC 6455 §5.7).
//! let mut buf = BytesMut::from(&[0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58][..]);
//! let mut decoder = Decoder::new(Role::Server, 1 << 20);
//! assert_eq!(decoder.decode(&mut buf).unwrap(), Some(Incoming::Text("Hello".into())));
//!
//! let mut out = Vec::new();
//! encode_frame(&mut out, true, Opcode::Text, b"Hello", None);
//! assert_eq!(out, [0x81, 0x05, b'H', b'e', b'l', b'l', b'o']);
//! ```

mod deflate;
#[cfg(test)]
mod deflate_tests;
mod extension;
mod frame;
mod message;
#[cfg(test)]
mod tests;

use std::fmt;

pub use deflate::{Compressor, Decompressor};
pub use extension::{accept, negotiate, offer, DeflateConfig, DeflateParams};
pub use frame::{apply_mask, encode_close, encode_compressed_frame, encode_frame};
pub use frame::{parse_head, FrameHead, Opcode};
pub use message::{Decoder, Incoming};

/// Which end of the connection the codec runs at: a server takes masked frames and sends
/// unmasked ones, a client the other way round (RFC 6455 §5.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Frames received must be masked.
    Server,
    /// Frames received must not be masked.
    Client,
}

/// The largest payload of a control frame (RFC 6455 §5.5).
pub const MAX_CONTROL_PAYLOAD: usize = 125;

/// A rule the peer broke; the connection is to be closed with [`Error::close_code`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// A frame that breaks RFC 6455's framing rules (the message names the rule): 1002.
    Protocol(&'static str),
    /// A text message or close reason that is not UTF-8 (RFC 6455 §8.1): 1007.
    InvalidUtf8,
    /// A message larger than the decoder's limit: 1009.
    TooBig {
        /// The limit, in bytes.
        limit: usize,
    },
}

impl Error {
    /// The close code to answer with (RFC 6455 §7.4.1).
    pub fn close_code(&self) -> u16 {
        match self {
            Error::Protocol(_) => 1002,
            Error::InvalidUtf8 => 1007,
            Error::TooBig { .. } => 1009,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Protocol(rule) => write!(f, "WebSocket protocol error: {rule}"),
            Error::InvalidUtf8 => f.write_str("WebSocket text is not valid UTF-8"),
            Error::TooBig { limit } => {
                write!(f, "WebSocket message over the limit of {limit} bytes")
            }
        }
    }
}

impl std::error::Error for Error {}

/// Whether `code` may be sent in a close frame (RFC 6455 §7.4): the codes §7.4.1 defines for
/// use on the wire (1000-1003, 1007-1011), the IANA-registered 1012-1014, and the ranges
/// for libraries and applications (3000-4999). 1004 is reserved, 1005, 1006 and 1015 must
/// never be sent, and the rest of 0-2999 is reserved for the protocol (§7.4.2).
pub fn close_code_is_valid(code: u16) -> bool {
    matches!(code, 1000..=1003 | 1007..=1014 | 3000..=4999)
}
