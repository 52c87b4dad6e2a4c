//! Sans-I/O HTTP/3 (RFC 9114) with QPACK (RFC 9204): the parts of an HTTP/3 server that only
//! look at bytes. QUIC (streams, flow control, TLS) is the caller's; this module is handed
//! the bytes of one stream at a time and says what they mean, or which error code to close
//! the connection or reset the stream with.
//!
//! # How a server uses this
//!
//! An HTTP/3 connection is a set of QUIC streams, each read on its own:
//!
//! - **Our control stream.** The server opens a unidirectional stream and writes
//!   [`StreamType::Control`] then SETTINGS ([`frame::write_settings`]), and later, to shut
//!   down, GOAWAY ([`frame::write_goaway`]). `Settings::default()` announces a QPACK table
//!   capacity of 0, which is what this codec needs: the client may then never use the
//!   dynamic table, and no QPACK encoder or decoder stream is needed on our side.
//! - **The client's unidirectional streams.** Each begins with a [`StreamType`]
//!   ([`StreamType::decode`]); [`PeerStreams::open`] refuses a second control stream and
//!   the like. The control stream goes to a [`ControlStream`] (SETTINGS first, then GOAWAY
//!   and MAX_PUSH_ID; CANCEL_PUSH is an error, as we never push), the QPACK streams to
//!   [`qpack::EncoderStream`] and [`qpack::DecoderStream`] (which only check that the
//!   client keeps to a table of 0), and unknown types are ignored. A critical stream that ends is an error
//!   ([`PeerStreams::closed`]).
//! - **Request streams** (client-initiated bidirectional): a [`RequestStream`] each, which
//!   yields [`RequestEvent`]s in the only order allowed: the head's encoded field section,
//!   body pieces as they arrive, maybe trailers. [`decode_request`] turns the head into a
//!   [`Head`] (the same type HTTP/2's connection fills, so the code that builds a request
//!   from one serves both). At the stream's FIN, [`RequestStream::finish`] says whether the
//!   request was complete.
//! - **The response**: a QPACK field section from a [`qpack::Encoder`] in a HEADERS frame
//!   ([`frame::write_headers`]), then DATA frames, whose header
//!   ([`frame::write_data_header`]) is written apart from the body so the body need not be
//!   copied, then the FIN.
//!
//! Every decoder follows volt-proto's style: `decode(&mut BytesMut) -> Result<Option<_>, _>`
//! takes what it used from the front of the buffer, and `Ok(None)` means "need more bytes".
//! An [`Error`] carries the [`Code`] to send and whether it is a connection or a stream
//! error.
//!
//! # Example
//!
//! ```
//! use bytes::BytesMut;
//! use volt_proto::h3::qpack::{self, Indexing};
//! use volt_proto::h3::{self, frame, Head, RequestEvent, RequestStream};
//!
//! const MAX_HEAD: usize = 16 * 1024;
//!
//! // What a client sends on a request stream: HEADERS for GET https://example.com/hello,
//! // then its FIN.
//! let mut section = Vec::new();
//! let mut encoder = qpack::Encoder::new();
//! encoder.begin(&mut section);
//! for (name, value) in [
//!     (&b":method"[..], &b"GET"[..]),
//!     (b":scheme", b"https"),
//!     (b":authority", b"example.com"),
//!     (b":path", b"/hello"),
//!     (b"user-agent", b"demo"),
//! ] {
//!     encoder.field(name, value, Indexing::Remember, &mut section);
//! }
//! let mut buf = BytesMut::new();
//! frame::write_headers(&section, &mut buf);
//!
//! // The server's side of that stream.
//! let mut stream = RequestStream::new(MAX_HEAD);
//! let mut decoder = qpack::Decoder::new();
//! let mut head = Head::default();
//! while let Some(event) = stream.decode(&mut buf).unwrap() {
//!     match event {
//!         RequestEvent::Head(section) => {
//!             h3::decode_request(&mut decoder, &section, MAX_HEAD, &mut head).unwrap();
//!             stream.set_content_length(head.content_length);
//!         }
//!         RequestEvent::Data(_piece) => { /* the body, as it arrives */ }
//!         RequestEvent::Trailers(_section) => { /* h3::decode_trailers */ }
//!         _ => {}
//!     }
//! }
//! stream.finish(&buf).unwrap(); // the FIN came: a complete request
//! assert_eq!(head.get(head.method), b"GET");
//! assert_eq!(head.get(head.path), b"/hello");
//! // `host` comes from `:authority`, as in HTTP/2.
//! let host = head.fields.iter().find(|f| head.get(f.name) == b"host").unwrap();
//! assert_eq!(head.get(host.value), b"example.com");
//!
//! // The response: HEADERS, then a DATA frame whose header is written apart from the body.
//! let body = b"Hello, World!";
//! let mut section = Vec::new();
//! let mut encoder = qpack::Encoder::new();
//! encoder.begin(&mut section);
//! encoder.status(200, &mut section);
//! encoder.field(b"content-type", b"text/plain", Indexing::Remember, &mut section);
//! encoder.content_length(body.len() as u64, &mut section);
//! let mut out = Vec::new();
//! frame::write_headers(&section, &mut out);
//! frame::write_data_header(body.len() as u64, &mut out);
//! out.extend_from_slice(body);
//! assert_eq!(out[..2], [0x01, section.len() as u8]); // HEADERS, its length
//! ```
//!
//! # Layout
//!
//! - [`varint`]: QUIC's variable-length integers (RFC 9000 §16).
//! - [`frame`]: frame types, the incremental [`FrameDecoder`], [`Settings`], the encoders.
//! - `stream`: [`StreamType`], [`PeerStreams`], [`ControlStream`], [`RequestStream`]: which
//!   frames may come on which stream, in what order.
//! - [`qpack`]: field sections, static table only.
//! - `head`: [`decode_request`] (and [`decode_extended_request`], with RFC 9220's `:protocol`),
//!   [`decode_trailers`]: QPACK plus the request rules HTTP/3
//!   shares with HTTP/2 (the same checks, in volt-proto's `field_check`).
//! - `error`: [`Code`] (the §8.1 and RFC 9204 §6 values) and [`Error`].

mod error;
pub mod frame;
mod head;
#[cfg(test)]
mod mutation_tests;
pub mod qpack;
mod stream;
#[cfg(test)]
mod tests;
pub mod varint;

pub use error::{Code, Error, Scope};
pub use frame::{Frame, FrameDecoder, Settings};
pub use head::{decode_extended_request, decode_request, decode_trailers, Head, HeadError};
pub use stream::{
    ControlEvent, ControlStream, PeerStreams, RequestEvent, RequestStream, StreamType,
};
