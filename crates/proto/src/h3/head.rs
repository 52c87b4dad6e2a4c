//! Request heads and trailers: a field section decoded with QPACK and checked by the rules
//! HTTP/3 shares with HTTP/2 (RFC 9114 §4.1–4.3, RFC 9113 §8.1–8.3), into the same [`Head`]
//! an HTTP/2 connection fills, so one piece of server code turns either into a request.

use std::fmt;

use super::qpack::Decoder;
use super::{Code, Error};
use crate::field_check::FieldCheck;
pub use crate::h2::server::Head;

/// Why a request head or trailer section was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum HeadError {
    /// The section is not valid QPACK, or refers to the dynamic table we do not allow: a
    /// connection error of type QPACK_DECOMPRESSION_FAILED ([`HeadError::error`]).
    Qpack(Error),
    /// The request is malformed (RFC 9114 §4.1.2); the text says which rule it broke. A
    /// stream error of type H3_MESSAGE_ERROR; a server may answer 400 first.
    Malformed(&'static str),
    /// The field section's size (names, values and 32 bytes per field, §4.2.2) is over the
    /// limit given. The stream is fine and the connection too (no QPACK state is lost): the
    /// server should answer **431 Request Header Fields Too Large**, as HTTP/2's does for a
    /// [`Head::oversized`] head (which is set here too). [`HeadError::error`] gives
    /// H3_EXCESSIVE_LOAD for a server that would rather reset the stream.
    TooLarge,
}

impl HeadError {
    /// The error to close the connection (QPACK) or reset the stream with.
    pub fn error(&self) -> Error {
        match *self {
            HeadError::Qpack(e) => e,
            HeadError::Malformed(why) => Error::stream(Code::H3_MESSAGE_ERROR, why),
            HeadError::TooLarge => Error::stream(Code::H3_EXCESSIVE_LOAD, TOO_LARGE.reason()),
        }
    }
}

impl fmt::Display for HeadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.error(), f)
    }
}

impl std::error::Error for HeadError {}

/// What the field callback returns to stop decoding once the section is over the limit.
/// QPACK's own errors never carry this code.
const TOO_LARGE: Error = Error::stream(Code::H3_EXCESSIVE_LOAD, "field section too large");

/// Decodes a request's head (a [`RequestEvent::Head`](super::RequestEvent)) into `head`,
/// which is cleared first: its pseudo-header fields, its regular fields in order (with
/// `host` from `:authority` when no `host` came), its `content-length`.
///
/// `max_field_section_size` is ours, the one we announce as SETTINGS_MAX_FIELD_SECTION_SIZE
/// (or would, if we announced one). Decoding stops as soon as the section goes over it.
pub fn decode_request(
    decoder: &mut Decoder,
    section: &[u8],
    max_field_section_size: usize,
    head: &mut Head,
) -> Result<(), HeadError> {
    decode_head(decoder, section, max_field_section_size, head, false)
}

/// [`decode_request`] for a server that sent SETTINGS_ENABLE_CONNECT_PROTOCOL = 1 (RFC 9220
/// §3): `:protocol` is then a pseudo-header ([`Head::protocol`]), allowed only on a CONNECT,
/// which then needs `:scheme` and `:path` as well (RFC 8441 §4). Without that setting a
/// `:protocol` is an unknown pseudo-header, and the request malformed.
pub fn decode_extended_request(
    decoder: &mut Decoder,
    section: &[u8],
    max_field_section_size: usize,
    head: &mut Head,
) -> Result<(), HeadError> {
    decode_head(decoder, section, max_field_section_size, head, true)
}

fn decode_head(
    decoder: &mut Decoder,
    section: &[u8],
    max_field_section_size: usize,
    head: &mut Head,
    extended_connect: bool,
) -> Result<(), HeadError> {
    let trailers = false;
    decode(
        decoder,
        section,
        max_field_section_size,
        head,
        trailers,
        extended_connect,
    )?;
    // RFC 9114 §4.3.1, stricter than HTTP/2: a request for an `http` or `https` resource
    // names its authority (in `:authority` or `host`, equal if both, which the shared check
    // enforced), and not as an empty string.
    if matches!(head.get(head.scheme), b"http" | b"https") {
        let host = head
            .fields
            .iter()
            .find(|f| head.get(f.name) == b"host")
            .map(|f| f.value);
        match host {
            Some(value) if !value.is_empty() => {}
            _ => return Err(HeadError::Malformed("no authority or an empty one")),
        }
    }
    Ok(())
}

/// Decodes a trailer section (a [`RequestEvent::Trailers`](super::RequestEvent)) into
/// `head`'s fields; a pseudo-header field there is malformed (§4.3).
pub fn decode_trailers(
    decoder: &mut Decoder,
    section: &[u8],
    max_field_section_size: usize,
    head: &mut Head,
) -> Result<(), HeadError> {
    decode(decoder, section, max_field_section_size, head, true, false)
}

fn decode(
    decoder: &mut Decoder,
    section: &[u8],
    max_field_section_size: usize,
    head: &mut Head,
    trailers: bool,
    extended_connect: bool,
) -> Result<(), HeadError> {
    let mut check = FieldCheck::new(head, trailers, max_field_section_size, extended_connect);
    let decoded = decoder.decode(section, |field| {
        check.field(field.name, field.value);
        if check.oversized() {
            return Err(TOO_LARGE);
        }
        Ok(())
    });
    match decoded {
        Err(e) if e == TOO_LARGE => return Err(HeadError::TooLarge),
        Err(e) => return Err(HeadError::Qpack(e)),
        Ok(()) => {}
    }
    check.finish().map_err(|m| HeadError::Malformed(m.0))
}
