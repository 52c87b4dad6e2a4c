//! Whole messages out of frames: reassembly, UTF-8 validation, close frames.

use bytes::{Buf, Bytes, BytesMut};

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
    partial: Option<Partial>,
}

/// A fragmented message whose last frame has not arrived.
#[derive(Debug)]
struct Partial {
    text: bool,
    data: BytesMut,
    /// How much of `data` is known to be whole, valid UTF-8 (text only): what follows is at
    /// most the first 3 bytes of a character cut by the fragment's end.
    checked: usize,
}

impl Decoder {
    /// A decoder for frames received by `role`, refusing messages over `max_message` bytes.
    pub fn new(role: Role, max_message: usize) -> Decoder {
        Decoder {
            role,
            max_message,
            partial: None,
        }
    }

    /// Takes frames off the front of `buf` until a message or control frame is whole, and
    /// returns it; `Ok(None)` when `buf` holds no more whole frames (the rest of an unfinished
    /// one stays in `buf`). A message over the limit is refused as soon as a frame's head says
    /// so, before its payload arrives; invalid text is refused at the fragment that breaks it.
    /// After an error the connection is to be failed: the decoder is not to be used again.
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Incoming>, Error> {
        loop {
            let Some(head) = parse_head(buf, self.role)? else {
                return Ok(None);
            };
            // §5.4: a message's fragments come in order, and only control frames may come
            // between them.
            let held = match (head.opcode, &self.partial) {
                (Opcode::Continuation, None) => {
                    return Err(Error::Protocol("continuation frame outside a message"))
                }
                (Opcode::Continuation, Some(p)) => p.data.len(),
                (Opcode::Text | Opcode::Binary, Some(_)) => {
                    return Err(Error::Protocol("new message before the last one ended"))
                }
                _ => 0,
            };
            if !head.opcode.is_control() && head.len > (self.max_message - held) as u64 {
                return Err(Error::TooBig {
                    limit: self.max_message,
                });
            }
            // At most `max_message`, or 125 for a control frame: it fits a usize.
            let len = head.len as usize;
            if buf.len() - head.head_len < len {
                return Ok(None);
            }
            buf.advance(head.head_len);
            let mut payload = buf.split_to(len);
            if let Some(key) = head.mask {
                apply_mask(&mut payload, key, 0);
            }
            let text = match head.opcode {
                Opcode::Ping => return Ok(Some(Incoming::Ping(payload.freeze()))),
                Opcode::Pong => return Ok(Some(Incoming::Pong(payload.freeze()))),
                Opcode::Close => return close_frame(&payload).map(Some),
                Opcode::Text => true,
                Opcode::Binary => false,
                Opcode::Continuation => {
                    let partial = self.partial.as_mut().expect("checked above");
                    partial.data.extend_from_slice(&payload);
                    partial.check()?;
                    if !head.fin {
                        continue;
                    }
                    let partial = self.partial.take().expect("checked above");
                    return partial.finish().map(Some);
                }
            };
            let mut partial = Partial {
                text,
                data: payload,
                checked: 0,
            };
            partial.check()?;
            match head.fin {
                true => return partial.finish().map(Some),
                false => self.partial = Some(partial),
            }
        }
    }
}

impl Partial {
    /// Validates the text received since the last check (§8.1: invalid UTF-8 fails the
    /// connection, and may be found before the message is whole).
    fn check(&mut self) -> Result<(), Error> {
        if !self.text {
            return Ok(());
        }
        match std::str::from_utf8(&self.data[self.checked..]) {
            Ok(_) => self.checked = self.data.len(),
            // A character cut by the fragment's end: the next fragment may finish it.
            Err(e) if e.error_len().is_none() => self.checked += e.valid_up_to(),
            Err(_) => return Err(Error::InvalidUtf8),
        }
        Ok(())
    }

    fn finish(self) -> Result<Incoming, Error> {
        if !self.text {
            return Ok(Incoming::Binary(self.data.freeze()));
        }
        // A character still cut at the message's end.
        if self.checked != self.data.len() {
            return Err(Error::InvalidUtf8);
        }
        Ok(Incoming::Text(self.data.freeze()))
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
