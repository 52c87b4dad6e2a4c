//! Whole messages out of frames: reassembly, UTF-8 validation, close frames.

use bytes::{Buf, Bytes, BytesMut};

use super::deflate::Decompressor;
use super::extension::DeflateParams;
use super::frame::{apply_mask, parse_head, Opcode};
use super::{close_code_is_valid, Error, Role};

/// A whole message, or a control frame, as received.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Incoming {
    /// A text message; the bytes are valid UTF-8.
    Text(Bytes),
    /// A binary message.
    Binary(Bytes),
    /// A ping, with its application data.
    Ping(Bytes),
    /// A pong, with its application data.
    Pong(Bytes),
    /// A close frame: its code and reason, or `None` for an empty one.
    Close(Option<(u16, String)>),
}

/// Decodes frames into [`Incoming`] messages (see the [module](super) docs).
#[derive(Debug)]
pub struct Decoder {
    role: Role,
    max_message: usize,
    /// A fragmented message whose last frame has not arrived.
    partial: Option<Partial>,
    /// Of the frame at the front of the buffer, whose payload is not all there yet: how many
    /// payload bytes are unmasked (in place) and, for text, checked already.
    seen: usize,
    /// The text message under way (in `partial` or in the frame at the front).
    utf8: Utf8,
    /// permessage-deflate, if negotiated: RSV1 marks compressed messages (RFC 7692 §6).
    deflate: Option<DeflateParams>,
    /// Made at the first compressed message (its window is 32 KiB and more).
    inflater: Option<Decompressor>,
}

#[derive(Debug)]
struct Partial {
    text: bool,
    /// Inflated frame by frame into `inflated`; else the frames' payloads go to `data`.
    compressed: bool,
    data: BytesMut,
    inflated: Vec<u8>,
}

impl Partial {
    /// The message's size so far, as the limit counts it.
    fn len(&self) -> usize {
        match self.compressed {
            true => self.inflated.len(),
            false => self.data.len(),
        }
    }
}

/// A UTF-8 check fed piece by piece: the pieces may cut a character anywhere.
#[derive(Debug, Default)]
struct Utf8 {
    /// The start of a character cut by the end of the last piece.
    carry: [u8; 4],
    carried: usize,
}

impl Utf8 {
    fn feed(&mut self, mut data: &[u8]) -> Result<(), Error> {
        if self.carried > 0 {
            // The lead byte says how long the character is (a valid prefix starts with one).
            let width = match self.carry[0] {
                0xC0..=0xDF => 2,
                0xE0..=0xEF => 3,
                _ => 4,
            };
            let take = (width - self.carried).min(data.len());
            self.carry[self.carried..self.carried + take].copy_from_slice(&data[..take]);
            self.carried += take;
            data = &data[take..];
            match std::str::from_utf8(&self.carry[..self.carried]) {
                Ok(_) => self.carried = 0,
                // Still cut: `data` is used up.
                Err(e) if e.error_len().is_none() => return Ok(()),
                Err(_) => return Err(Error::InvalidUtf8),
            }
        }
        match std::str::from_utf8(data) {
            Ok(_) => Ok(()),
            Err(e) if e.error_len().is_none() => {
                let cut = &data[e.valid_up_to()..];
                self.carry[..cut.len()].copy_from_slice(cut);
                self.carried = cut.len();
                Ok(())
            }
            Err(_) => Err(Error::InvalidUtf8),
        }
    }

    /// At the end of the message: no character may be left cut.
    fn finish(&mut self) -> Result<(), Error> {
        match std::mem::take(&mut self.carried) {
            0 => Ok(()),
            _ => Err(Error::InvalidUtf8),
        }
    }
}

impl Decoder {
    /// A decoder for frames received by `role`, refusing messages over `max_message` bytes.
    pub fn new(role: Role, max_message: usize) -> Decoder {
        Decoder {
            role,
            max_message,
            partial: None,
            seen: 0,
            utf8: Utf8::default(),
            deflate: None,
            inflater: None,
        }
    }

    /// A decoder for a connection with permessage-deflate negotiated as `params`: RSV1 on a
    /// message's first frame says it is compressed; its payload is inflated frame by frame
    /// (each frame whole first), and the inflated size is what `max_message` bounds, checked
    /// as it grows (a zip bomb fails with [`Error::TooBig`] before it takes more memory).
    /// Compressed text is checked as UTF-8 as it is inflated.
    pub fn with_deflate(role: Role, max_message: usize, params: DeflateParams) -> Decoder {
        Decoder {
            deflate: Some(params),
            ..Decoder::new(role, max_message)
        }
    }

    /// Takes frames off the front of `buf` until a message or control frame is whole, and
    /// returns it; `Ok(None)` when `buf` holds no more whole frames (the rest of an unfinished
    /// one stays in `buf`, unmasked as far as it came). A message over the limit is refused as
    /// soon as a frame's head says so, before its payload arrives; text that is not UTF-8 as
    /// soon as the bytes that break it arrive (§8.1: "as soon as", not at the message's end).
    /// After an error the connection is to be failed: the decoder is not to be used again.
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Incoming>, Error> {
        loop {
            let Some(head) = parse_head(buf, self.role, self.deflate.is_some())? else {
                return Ok(None);
            };
            // §5.4: a message's fragments come in order, and only control frames may come
            // between them.
            let (held, text, compressed) = match (head.opcode, &self.partial) {
                (Opcode::Continuation, None) => {
                    return Err(Error::Protocol("continuation frame outside a message"))
                }
                (Opcode::Continuation, Some(p)) => (p.len(), p.text, p.compressed),
                (Opcode::Text | Opcode::Binary, Some(_)) => {
                    return Err(Error::Protocol("new message before the last one ended"))
                }
                (opcode, _) => (0, opcode == Opcode::Text, head.rsv1),
            };
            // For a compressed message this bounds the compressed bytes of the frame; the
            // inflated ones are bounded as they come out.
            if !head.opcode.is_control() && head.len > (self.max_message - held) as u64 {
                return Err(Error::TooBig {
                    limit: self.max_message,
                });
            }
            // At most `max_message`, or 125 for a control frame: it fits a usize.
            let len = head.len as usize;
            if self.seen == 0 && head.opcode == Opcode::Text {
                self.utf8 = Utf8::default();
            }
            // What arrived of the payload since the last call: unmasked in place, and checked.
            let arrived = (buf.len() - head.head_len).min(len);
            if arrived > self.seen {
                let new = &mut buf[head.head_len + self.seen..head.head_len + arrived];
                if let Some(key) = head.mask {
                    apply_mask(new, key, self.seen);
                }
                // Compressed text is checked once inflated.
                if text && !compressed {
                    self.utf8.feed(new)?;
                }
                self.seen = arrived;
            }
            if arrived < len {
                return Ok(None);
            }
            self.seen = 0;
            buf.advance(head.head_len);
            let payload = buf.split_to(len);
            if compressed {
                let partial = self.partial.get_or_insert_with(|| Partial {
                    text,
                    compressed,
                    data: BytesMut::new(),
                    inflated: Vec::new(),
                });
                let params = self.deflate.expect("RSV1 is allowed only with deflate");
                let inflater = self
                    .inflater
                    .get_or_insert_with(|| params.decompressor(self.role));
                let before = partial.inflated.len();
                inflater.inflate(&payload, &mut partial.inflated, self.max_message)?;
                if head.fin {
                    inflater.finish(&mut partial.inflated, self.max_message)?;
                }
                if text {
                    self.utf8.feed(&partial.inflated[before..])?;
                }
                if !head.fin {
                    continue;
                }
                let message = self.partial.take().expect("made above").inflated;
                return self.whole(text, message.into()).map(Some);
            }
            let message = match head.opcode {
                Opcode::Ping => return Ok(Some(Incoming::Ping(payload.freeze()))),
                Opcode::Pong => return Ok(Some(Incoming::Pong(payload.freeze()))),
                Opcode::Close => return close_frame(&payload).map(Some),
                Opcode::Text | Opcode::Binary if head.fin => payload,
                Opcode::Text | Opcode::Binary => {
                    self.partial = Some(Partial {
                        text,
                        compressed,
                        data: payload,
                        inflated: Vec::new(),
                    });
                    continue;
                }
                Opcode::Continuation => {
                    let partial = self.partial.as_mut().expect("checked above");
                    partial.data.extend_from_slice(&payload);
                    if !head.fin {
                        continue;
                    }
                    self.partial.take().expect("checked above").data
                }
            };
            return self.whole(text, message.freeze()).map(Some);
        }
    }

    /// The memory the message under way holds (for the zip bomb test).
    #[cfg(test)]
    pub(super) fn held_capacity(&self) -> usize {
        self.partial
            .as_ref()
            .map_or(0, |p| p.data.capacity() + p.inflated.capacity())
    }

    /// A data message whose last frame came.
    fn whole(&mut self, text: bool, message: Bytes) -> Result<Incoming, Error> {
        if !text {
            return Ok(Incoming::Binary(message));
        }
        self.utf8.finish()?;
        Ok(Incoming::Text(message))
    }
}

/// A close frame's body (§5.5.1): empty, or a valid code (§7.4) and a UTF-8 reason.
fn close_frame(payload: &[u8]) -> Result<Incoming, Error> {
    let (code, reason) = match payload {
        [] => return Ok(Incoming::Close(None)),
        [_] => return Err(Error::Protocol("close frame body of 1 byte")),
        [a, b, reason @ ..] => (u16::from_be_bytes([*a, *b]), reason),
    };
    if !close_code_is_valid(code) {
        return Err(Error::Protocol("invalid close code"));
    }
    let reason = std::str::from_utf8(reason).map_err(|_| Error::InvalidUtf8)?;
    Ok(Incoming::Close(Some((code, reason.to_owned()))))
}
