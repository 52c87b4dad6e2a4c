//! One WebSocket frame (RFC 6455 §5.2): its head parsed, its wire form written.

use super::{Error, Role, MAX_CONTROL_PAYLOAD};

/// A frame's opcode. The reserved ones (0x3-0x7, 0xB-0xF) are refused when parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opcode {
    /// 0x0: the next fragment of a message.
    Continuation,
    /// 0x1: the first frame of a text message.
    Text,
    /// 0x2: the first frame of a binary message.
    Binary,
    /// 0x8
    Close,
    /// 0x9
    Ping,
    /// 0xA
    Pong,
}

impl Opcode {
    fn from_bits(bits: u8) -> Result<Opcode, Error> {
        Ok(match bits {
            0x0 => Opcode::Continuation,
            0x1 => Opcode::Text,
            0x2 => Opcode::Binary,
            0x8 => Opcode::Close,
            0x9 => Opcode::Ping,
            0xA => Opcode::Pong,
            // §5.2: an unknown opcode fails the connection.
            _ => return Err(Error::Protocol("reserved opcode")),
        })
    }

    fn bits(self) -> u8 {
        match self {
            Opcode::Continuation => 0x0,
            Opcode::Text => 0x1,
            Opcode::Binary => 0x2,
            Opcode::Close => 0x8,
            Opcode::Ping => 0x9,
            Opcode::Pong => 0xA,
        }
    }

    /// Close, Ping and Pong (§5.5): opcodes with the high bit set.
    pub fn is_control(self) -> bool {
        self.bits() & 0x8 != 0
    }
}

/// A frame's head: everything before the payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameHead {
    /// The last frame of its message.
    pub fin: bool,
    /// RSV1: with permessage-deflate negotiated, the first frame of a compressed message
    /// (RFC 7692 §6). Only ever set if [`parse_head`] was told RSV1 is in use.
    pub rsv1: bool,
    /// What the frame carries.
    pub opcode: Opcode,
    /// The masking key, if the frame is masked.
    pub mask: Option<[u8; 4]>,
    /// The payload's length.
    pub len: u64,
    /// The head's own length on the wire (2 to 14 bytes).
    pub head_len: usize,
}

/// Parses the head of the frame at the front of `buf`, as received by `role`. `Ok(None)`: the
/// head is not all there yet. Every rule that can be checked from the head is: RSV bits (RSV1
/// only if `rsv1_allowed`, that is with permessage-deflate negotiated, and then only on the
/// first frame of a data message), opcode, control frames short and unfragmented, the 64-bit
/// length's high bit, lengths in their shortest form, and masking.
pub fn parse_head(buf: &[u8], role: Role, rsv1_allowed: bool) -> Result<Option<FrameHead>, Error> {
    let [b0, b1, ..] = *buf else {
        return Ok(None);
    };
    // RFC 6455 §5.2: RSV1-3 must be 0 unless an extension defines them. permessage-deflate
    // defines RSV1 (RFC 7692 §6); no extension volt speaks defines RSV2 or RSV3.
    let rsv1 = b0 & 0x40 != 0;
    if b0 & 0x30 != 0 || (rsv1 && !rsv1_allowed) {
        return Err(Error::Protocol("RSV bit set without an extension"));
    }
    let fin = b0 & 0x80 != 0;
    let opcode = Opcode::from_bits(b0 & 0x0F)?;
    // RFC 7692 §6: "MUST NOT set the 'Per-Message Compressed' bit of control frames and
    // non-first fragments of a data message".
    if rsv1 && opcode.is_control() {
        return Err(Error::Protocol("RSV1 set on a control frame"));
    }
    if rsv1 && opcode == Opcode::Continuation {
        return Err(Error::Protocol("RSV1 set on a continuation frame"));
    }
    let masked = b1 & 0x80 != 0;
    // §5.1: a server closes on an unmasked frame, a client on a masked one.
    match (role, masked) {
        (Role::Server, false) => return Err(Error::Protocol("client frame not masked")),
        (Role::Client, true) => return Err(Error::Protocol("server frame masked")),
        _ => {}
    }
    let (len, mut at) = match b1 & 0x7F {
        126 => {
            let Some(b) = buf.get(2..4) else {
                return Ok(None);
            };
            let len = u16::from_be_bytes([b[0], b[1]]) as u64;
            // §5.2: "the minimal number of bytes MUST be used to encode the length".
            if len < 126 {
                return Err(Error::Protocol("16-bit length for a short payload"));
            }
            (len, 4)
        }
        127 => {
            let Some(b) = buf.get(2..10) else {
                return Ok(None);
            };
            let len = u64::from_be_bytes(b.try_into().expect("8 bytes"));
            // §5.2: "the most significant bit MUST be 0".
            if len >> 63 != 0 {
                return Err(Error::Protocol("64-bit length with its high bit set"));
            }
            if len <= u16::MAX as u64 {
                return Err(Error::Protocol("64-bit length for a short payload"));
            }
            (len, 10)
        }
        n => (n as u64, 2),
    };
    // §5.5: control frames carry at most 125 bytes and are never fragmented.
    if opcode.is_control() {
        if len > MAX_CONTROL_PAYLOAD as u64 {
            return Err(Error::Protocol("control frame over 125 bytes"));
        }
        if !fin {
            return Err(Error::Protocol("fragmented control frame"));
        }
    }
    let mask = match masked {
        true => {
            let Some(key) = buf.get(at..at + 4) else {
                return Ok(None);
            };
            at += 4;
            Some(key.try_into().expect("4 bytes"))
        }
        false => None,
    };
    Ok(Some(FrameHead {
        fin,
        rsv1,
        opcode,
        mask,
        len,
        head_len: at,
    }))
}

/// XORs `data` with `key` (§5.3), `data` starting `offset` bytes into the masked payload.
/// Masking and unmasking are the same operation.
pub fn apply_mask(data: &mut [u8], key: [u8; 4], offset: usize) {
    let mut key = key;
    key.rotate_left(offset % 4);
    let word = u32::from_ne_bytes(key);
    let mut chunks = data.chunks_exact_mut(4);
    for chunk in &mut chunks {
        let x = u32::from_ne_bytes(chunk.try_into().expect("4 bytes")) ^ word;
        chunk.copy_from_slice(&x.to_ne_bytes());
    }
    for (b, k) in chunks.into_remainder().iter_mut().zip(key) {
        *b ^= k;
    }
}

/// Appends a frame to `out`: masked with `mask` if given (a client's frames, §5.3), else as a
/// server sends it. The caller keeps control frames to 125 bytes and unfragmented.
pub fn encode_frame(
    out: &mut Vec<u8>,
    fin: bool,
    opcode: Opcode,
    payload: &[u8],
    mask: Option<[u8; 4]>,
) {
    encode(out, (fin as u8) << 7, opcode, payload, mask);
}

/// Appends a whole compressed message as one frame: FIN and RSV1 set (RFC 7692 §6), `payload`
/// the output of a [`Compressor`](super::Compressor).
pub fn encode_compressed_frame(
    out: &mut Vec<u8>,
    opcode: Opcode,
    payload: &[u8],
    mask: Option<[u8; 4]>,
) {
    encode(out, 0x80 | 0x40, opcode, payload, mask);
}

/// A frame with the FIN and RSV bits `flags`.
fn encode(out: &mut Vec<u8>, flags: u8, opcode: Opcode, payload: &[u8], mask: Option<[u8; 4]>) {
    out.push(flags | opcode.bits());
    let mask_bit = if mask.is_some() { 0x80 } else { 0 };
    // §5.2: the shortest of the three length forms.
    match payload.len() {
        n @ 0..=125 => out.push(mask_bit | n as u8),
        n @ 126..=0xFFFF => {
            out.push(mask_bit | 126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            out.push(mask_bit | 127);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    match mask {
        None => out.extend_from_slice(payload),
        Some(key) => {
            out.extend_from_slice(&key);
            let start = out.len();
            out.extend_from_slice(payload);
            apply_mask(&mut out[start..], key, 0);
        }
    }
}

/// Appends a close frame (§5.5.1): no body if `code` is `None`, else the code and `reason`
/// (cut at a character boundary to fit the 125 bytes of a control frame).
pub fn encode_close(out: &mut Vec<u8>, code: Option<u16>, reason: &str, mask: Option<[u8; 4]>) {
    let mut payload = [0u8; MAX_CONTROL_PAYLOAD];
    let len = match code {
        None => 0,
        Some(code) => {
            payload[..2].copy_from_slice(&code.to_be_bytes());
            let mut end = reason.len().min(MAX_CONTROL_PAYLOAD - 2);
            while !reason.is_char_boundary(end) {
                end -= 1;
            }
            payload[2..2 + end].copy_from_slice(&reason.as_bytes()[..end]);
            2 + end
        }
    };
    encode_frame(out, true, Opcode::Close, &payload[..len], mask);
}
