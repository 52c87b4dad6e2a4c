//! The body decoder: one state machine for `Content-Length`, `chunked` and read-until-close
//! bodies.
//!
//! The decoder consumes whatever it is given: framing bytes (chunk-size lines, CRLFs,
//! trailers) are eaten as they arrive, one byte at a time if need be, and body data is handed
//! back as a slice of the caller's input. Nothing is buffered except a non-empty trailer
//! section, which is bounded by the head limits.

use http::{HeaderMap, HeaderName, HeaderValue};

use crate::headers::{is_tchar, spill_slots};
use crate::{BodyKind, Limits, ParseError};

/// The longest chunk-size line accepted, CRLF and extensions included. Extensions carry no
/// meaning here, so anything longer is a peer trying to make us read forever.
pub const MAX_CHUNK_LINE: usize = 4096;

/// Trailer fields a recipient must not merge into the message (RFC 9110 §6.5.1): framing,
/// routing, connection control and the fields that change how content is interpreted. They
/// are dropped; the rest are kept.
const FORBIDDEN_TRAILERS: &[&str] = &[
    "authorization",
    "connection",
    "content-encoding",
    "content-length",
    "content-range",
    "content-type",
    "expect",
    "host",
    "keep-alive",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// Incremental body decoder: `Content-Length`, `chunked` (extensions accepted and validated,
/// trailers parsed) and read-until-close.
///
/// ```
/// use volt_proto::{BodyDecoder, BodyKind};
///
/// let mut decoder = BodyDecoder::new(BodyKind::Chunked);
/// let mut input: &[u8] = b"5\r\nhello\r\n6;lang=en\r\n world\r\n0\r\n\r\nNEXT";
/// let mut body = Vec::new();
/// while !decoder.is_done() {
///     let (consumed, data) = decoder.decode(input).unwrap();
///     body.extend_from_slice(data.unwrap_or_default());
///     input = &input[consumed..];
///     if consumed == 0 {
///         break; // a real caller reads more bytes here
///     }
/// }
/// assert_eq!(body, b"hello world");
/// assert_eq!(input, b"NEXT"); // the next message
/// ```
#[derive(Debug)]
pub struct BodyDecoder {
    state: State,
    /// Bytes of the trailer section so far (each field line with its CRLF).
    trailer_bytes: Vec<u8>,
    trailers: HeaderMap,
    max_trailer_bytes: usize,
    max_trailers: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Length { remaining: u64 },
    Chunked(ChunkState),
    Eof,
    Done,
}

/// Where the decoder is in `chunked-body` (RFC 9112 §7.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ChunkState {
    /// In a chunk-size line. `len` counts its bytes so far, against [`MAX_CHUNK_LINE`].
    SizeLine {
        size: u64,
        len: u16,
        at: LinePos,
    },
    /// Inside chunk data.
    Data {
        remaining: u64,
    },
    /// After chunk data: the CR, then the LF.
    DataCr,
    DataLf,
    /// At the start of a trailer field line, or of the blank line that ends the body.
    TrailerStart,
    /// Inside a trailer field line.
    TrailerLine,
    /// A trailer field line's CR was seen; its LF comes next.
    TrailerLf,
    /// The final blank line's CR was seen; its LF ends the body.
    EndLf,
}

/// Position in `chunk-size [ chunk-ext ] CRLF`, where
/// `chunk-ext = *( BWS ";" BWS name [ BWS "=" BWS ( token / quoted-string ) ] )`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LinePos {
    /// In the hex digits; `digits` seen so far.
    Size { digits: u8 },
    /// Whitespace after the size or a value: only more whitespace or `;` may follow.
    SpaceBeforeSemi,
    /// After `;`: whitespace, then an extension name.
    BeforeName,
    /// In an extension name.
    Name,
    /// Whitespace after a name: `=`, `;` or more whitespace.
    AfterName,
    /// After `=`: whitespace, then a token or a quoted string.
    BeforeValue,
    /// In a token value.
    Token,
    /// In a quoted-string value; `escaped` after a backslash.
    Quoted { escaped: bool },
    /// After the closing quote: `;`, whitespace or the CR.
    AfterQuoted,
    /// The CR was seen; the LF ends the line.
    Lf,
}

impl BodyDecoder {
    /// A decoder for a body of `kind`, with the default [`Limits`] on trailers.
    pub fn new(kind: BodyKind) -> Self {
        Self::with_limits(kind, &Limits::default())
    }

    /// A decoder whose trailer section may hold at most `limits.max_head_bytes` bytes and
    /// `limits.max_headers` fields.
    pub fn with_limits(kind: BodyKind, limits: &Limits) -> Self {
        let state = match kind {
            BodyKind::Empty | BodyKind::Length(0) => State::Done,
            BodyKind::Length(remaining) => State::Length { remaining },
            BodyKind::Chunked => State::Chunked(ChunkState::SizeLine {
                size: 0,
                len: 0,
                at: LinePos::Size { digits: 0 },
            }),
            BodyKind::Eof => State::Eof,
        };
        BodyDecoder {
            state,
            trailer_bytes: Vec::new(),
            trailers: HeaderMap::new(),
            max_trailer_bytes: limits.max_head_bytes,
            max_trailers: limits.max_headers,
        }
    }

    /// Decodes from the front of `input`. Returns the bytes of `input` consumed and the body
    /// data found, which borrows from `input`.
    ///
    /// At most one contiguous slice of data comes back per call, so callers loop while
    /// `consumed > 0 && !is_done()`. Once the body is done, nothing more is consumed: the
    /// rest of the input belongs to the next message.
    ///
    /// # Errors
    ///
    /// A chunked body that breaks the framing rules. The decoder must not be used after an
    /// error.
    pub fn decode<'a>(&mut self, input: &'a [u8]) -> Result<(usize, Option<&'a [u8]>), ParseError> {
        match self.state {
            State::Length { remaining } => {
                let n = clamp(remaining, input.len());
                if n == 0 {
                    return Ok((0, None));
                }
                self.state = if remaining == n as u64 {
                    State::Done
                } else {
                    State::Length {
                        remaining: remaining - n as u64,
                    }
                };
                Ok((n, Some(&input[..n])))
            }
            State::Eof if !input.is_empty() => Ok((input.len(), Some(input))),
            State::Eof | State::Done => Ok((0, None)),
            State::Chunked(_) => self.decode_chunked(input),
        }
    }

    /// Whether the whole body has been decoded.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// For `Eof` bodies: the peer closed, so the body is complete. Other kinds are not
    /// affected: a close before their end is a truncated body, which
    /// [`is_done`](Self::is_done) keeps reporting.
    pub fn finish_eof(&mut self) {
        if self.state == State::Eof {
            self.state = State::Done;
        }
    }

    /// The trailer fields of a finished chunked body (empty otherwise), minus the ones a
    /// recipient must not use (see RFC 9110 §6.5.1), such as `Content-Length`,
    /// `Transfer-Encoding` and `Host`.
    pub fn take_trailers(&mut self) -> HeaderMap {
        std::mem::take(&mut self.trailers)
    }

    fn decode_chunked<'a>(
        &mut self,
        input: &'a [u8],
    ) -> Result<(usize, Option<&'a [u8]>), ParseError> {
        let mut pos = 0;
        while pos < input.len() {
            let State::Chunked(chunk) = self.state else {
                break;
            };
            let b = input[pos];
            let next = match chunk {
                ChunkState::Data { remaining } => {
                    let n = clamp(remaining, input.len() - pos);
                    let data = &input[pos..pos + n];
                    self.state = State::Chunked(if remaining == n as u64 {
                        ChunkState::DataCr
                    } else {
                        ChunkState::Data {
                            remaining: remaining - n as u64,
                        }
                    });
                    return Ok((pos + n, Some(data)));
                }
                ChunkState::SizeLine { size, len, at } => size_line(size, len, at, b)?,
                ChunkState::DataCr if b == b'\r' => State::Chunked(ChunkState::DataLf),
                ChunkState::DataLf if b == b'\n' => State::Chunked(first_size_line()),
                ChunkState::DataCr | ChunkState::DataLf => return Err(ParseError::InvalidChunk),
                ChunkState::TrailerStart => match b {
                    b'\r' => State::Chunked(ChunkState::EndLf),
                    // A bare LF, or a line folded onto nothing.
                    b'\n' | b' ' | b'\t' => return Err(ParseError::InvalidTrailer),
                    _ => {
                        pos += self.push_trailer_line(&input[pos..])?;
                        continue;
                    }
                },
                ChunkState::TrailerLine => {
                    pos += self.push_trailer_line(&input[pos..])?;
                    continue;
                }
                ChunkState::TrailerLf if b == b'\n' => {
                    self.push_trailer_bytes(b"\n")?;
                    State::Chunked(ChunkState::TrailerStart)
                }
                ChunkState::TrailerLf => return Err(ParseError::InvalidTrailer),
                ChunkState::EndLf if b == b'\n' => {
                    self.parse_trailers()?;
                    State::Done
                }
                ChunkState::EndLf => return Err(ParseError::InvalidTrailer),
            };
            self.state = next;
            pos += 1;
        }
        Ok((pos, None))
    }

    /// Copies trailer bytes up to and including the next CR. Returns how many were taken.
    fn push_trailer_line(&mut self, input: &[u8]) -> Result<usize, ParseError> {
        let end = input.iter().position(|&b| b == b'\r' || b == b'\n');
        let taken = match end {
            Some(i) if input[i] == b'\n' => return Err(ParseError::InvalidTrailer),
            Some(i) => {
                self.state = State::Chunked(ChunkState::TrailerLf);
                i + 1
            }
            None => {
                self.state = State::Chunked(ChunkState::TrailerLine);
                input.len()
            }
        };
        self.push_trailer_bytes(&input[..taken])?;
        Ok(taken)
    }

    fn push_trailer_bytes(&mut self, bytes: &[u8]) -> Result<(), ParseError> {
        if self.trailer_bytes.len() + bytes.len() > self.max_trailer_bytes {
            return Err(ParseError::TrailersTooLarge);
        }
        self.trailer_bytes.extend_from_slice(bytes);
        Ok(())
    }

    /// Turns the collected trailer section into [`HeaderMap`] entries. Line endings were
    /// checked while collecting; the field grammar is httparse's (the same as for heads).
    fn parse_trailers(&mut self) -> Result<(), ParseError> {
        if self.trailer_bytes.is_empty() {
            return Ok(());
        }
        self.push_trailer_bytes(b"\r\n")?;
        let slot_count = spill_slots(self.max_trailers, &self.trailer_bytes);
        let mut slots = vec![httparse::EMPTY_HEADER; slot_count];
        let fields = match httparse::parse_headers(&self.trailer_bytes, &mut slots) {
            Ok(httparse::Status::Complete((_, fields))) => fields,
            Err(httparse::Error::TooManyHeaders) => return Err(ParseError::TrailersTooLarge),
            Ok(httparse::Status::Partial) | Err(_) => return Err(ParseError::InvalidTrailer),
        };
        for field in fields {
            if FORBIDDEN_TRAILERS
                .iter()
                .any(|f| f.eq_ignore_ascii_case(field.name))
            {
                continue;
            }
            let name = HeaderName::from_bytes(field.name.as_bytes())
                .map_err(|_| ParseError::InvalidTrailer)?;
            let value =
                HeaderValue::from_bytes(field.value).map_err(|_| ParseError::InvalidTrailer)?;
            self.trailers.append(name, value);
        }
        self.trailer_bytes = Vec::new();
        Ok(())
    }
}

fn first_size_line() -> ChunkState {
    ChunkState::SizeLine {
        size: 0,
        len: 0,
        at: LinePos::Size { digits: 0 },
    }
}

/// `min(remaining, available)` as a usize.
fn clamp(remaining: u64, available: usize) -> usize {
    usize::try_from(remaining).map_or(available, |r| r.min(available))
}

/// One byte of a chunk-size line.
fn size_line(size: u64, len: u16, at: LinePos, b: u8) -> Result<State, ParseError> {
    use LinePos::*;
    use ParseError::{InvalidChunk, InvalidChunkExtension, InvalidChunkSize};

    let len = len + 1;
    if usize::from(len) > MAX_CHUNK_LINE {
        return Err(ParseError::ChunkLineTooLong);
    }
    // A bare LF anywhere in the line, or a CR not followed by LF, breaks the framing.
    if b == b'\n' && at != Lf {
        return Err(InvalidChunk);
    }
    let line = |at| Ok(State::Chunked(ChunkState::SizeLine { size, len, at }));
    let ows = b == b' ' || b == b'\t';
    match at {
        Size { digits } => {
            if let Some(d) = (b as char).to_digit(16) {
                // 16 hex digits fill a u64, so the value itself cannot overflow.
                if digits == 16 {
                    return Err(ParseError::ChunkSizeOverflow);
                }
                let size = size << 4 | u64::from(d);
                return Ok(State::Chunked(ChunkState::SizeLine {
                    size,
                    len,
                    at: Size { digits: digits + 1 },
                }));
            }
            match b {
                _ if digits == 0 => Err(InvalidChunkSize),
                b'\r' => line(Lf),
                b';' => line(BeforeName),
                _ if ows => line(SpaceBeforeSemi),
                _ => Err(InvalidChunkSize),
            }
        }
        SpaceBeforeSemi => match b {
            b';' => line(BeforeName),
            _ if ows => line(SpaceBeforeSemi),
            _ => Err(InvalidChunkExtension),
        },
        BeforeName => match b {
            _ if ows => line(BeforeName),
            _ if is_tchar(b) => line(Name),
            _ => Err(InvalidChunkExtension),
        },
        Name => match b {
            _ if is_tchar(b) => line(Name),
            b'=' => line(BeforeValue),
            b';' => line(BeforeName),
            b'\r' => line(Lf),
            _ if ows => line(AfterName),
            _ => Err(InvalidChunkExtension),
        },
        AfterName => match b {
            b'=' => line(BeforeValue),
            b';' => line(BeforeName),
            _ if ows => line(AfterName),
            _ => Err(InvalidChunkExtension),
        },
        BeforeValue => match b {
            b'"' => line(Quoted { escaped: false }),
            _ if ows => line(BeforeValue),
            _ if is_tchar(b) => line(Token),
            _ => Err(InvalidChunkExtension),
        },
        Token => match b {
            _ if is_tchar(b) => line(Token),
            b';' => line(BeforeName),
            b'\r' => line(Lf),
            _ if ows => line(SpaceBeforeSemi),
            _ => Err(InvalidChunkExtension),
        },
        // quoted-string = DQUOTE *( qdtext / quoted-pair ) DQUOTE (RFC 9110 §5.6.4): any byte
        // but controls (HTAB aside) and DEL; a backslash escapes the next such byte.
        Quoted { escaped } => {
            if !(b == b'\t' || (b >= 0x20 && b != 0x7f)) {
                Err(InvalidChunkExtension)
            } else if escaped {
                line(Quoted { escaped: false })
            } else if b == b'\\' {
                line(Quoted { escaped: true })
            } else if b == b'"' {
                line(AfterQuoted)
            } else {
                line(Quoted { escaped: false })
            }
        }
        AfterQuoted => match b {
            b';' => line(BeforeName),
            b'\r' => line(Lf),
            _ if ows => line(SpaceBeforeSemi),
            _ => Err(InvalidChunkExtension),
        },
        Lf if b == b'\n' => Ok(State::Chunked(if size == 0 {
            ChunkState::TrailerStart
        } else {
            ChunkState::Data { remaining: size }
        })),
        Lf => Err(InvalidChunk),
    }
}
