//! The Huffman code of RFC 7541 Appendix B, which QPACK reuses unchanged (RFC 9204 §4.1.2):
//! `h3::qpack` calls the same three functions.
//!
//! The code is canonical (codes of one length are consecutive numbers, in symbol order, and
//! each length continues where the shorter one ended), so the code lengths alone define it:
//! [`CODES`] is computed from the transcribed [`CODE_LENGTHS`] at compile time, and so is the
//! decoder's state machine, [`DECODE`].
//!
//! Decoding reads four bits at a time. A state is an inner node of the code tree (there are
//! 256, one fewer than the 257 symbols); each of the 16 nibbles leads to a next state and at
//! most one decoded byte, because the shortest code is 5 bits long.

use super::DecodeError;

/// The symbol that only pads: it must never appear inside a string.
const EOS: usize = 256;

/// Code length in bits of each symbol, 0 to 255 and EOS (RFC 7541 Appendix B).
const CODE_LENGTHS: [u8; 257] = [
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, // 0x00
    28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28, // 0x10
    6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, // 0x20 ' '
    5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10, // 0x30 '0'
    13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, // 0x40 '@'
    7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6, // 0x50 'P'
    15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5, // 0x60 '`'
    6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28, // 0x70 'p'
    20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23, // 0x80
    24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, // 0x90
    22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, // 0xa0
    21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23, // 0xb0
    26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, // 0xc0
    19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27, // 0xd0
    20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23, // 0xe0
    26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, // 0xf0
    30, // EOS
];

/// Each symbol's code, right-aligned in [`CODE_LENGTHS`] bits.
const CODES: [u32; 257] = canonical_codes();

const fn canonical_codes() -> [u32; 257] {
    let mut codes = [0; 257];
    let mut next = 0u32;
    let mut len = 1;
    while len <= 30 {
        let mut sym = 0;
        while sym < 257 {
            if CODE_LENGTHS[sym] == len {
                codes[sym] = next;
                next += 1;
            }
            sym += 1;
        }
        next <<= 1;
        len += 1;
    }
    codes
}

/// A tree link to a leaf carries this bit and the symbol; any other link is an inner node.
const LEAF: u16 = 0x8000;

/// The code tree: `[left, right]` children of each inner node, node 0 the root; and which
/// nodes a string may end on: the root, and the first seven nodes of the all-ones path,
/// since padding is a prefix of EOS (all ones) shorter than a byte (RFC 7541 §5.2).
const fn code_tree() -> ([[u16; 2]; 256], [bool; 256]) {
    let mut children = [[0u16; 2]; 256];
    let mut may_end = [false; 256];
    may_end[0] = true;
    let mut nodes = 1;
    let mut sym = 0;
    while sym < 257 {
        let (code, len) = (CODES[sym], CODE_LENGTHS[sym] as u32);
        let mut node = 0;
        let mut depth = 1;
        while depth < len {
            let bit = ((code >> (len - depth)) & 1) as usize;
            if children[node][bit] == 0 {
                children[node][bit] = nodes as u16;
                may_end[nodes] = may_end[node] && bit == 1 && depth <= 7;
                nodes += 1;
            }
            node = children[node][bit] as usize;
            depth += 1;
        }
        children[node][(code & 1) as usize] = LEAF | sym as u16;
        sym += 1;
    }
    (children, may_end)
}

/// One step of the decoder: the state after a nibble, and what the nibble produced.
#[derive(Clone, Copy)]
struct Step {
    next: u8,
    byte: u8,
    flags: u8,
}

/// The nibble completed a symbol; it is in `byte`.
const EMITS: u8 = 1;
/// The string may end after this nibble (`next` is a valid place to stop, see [`code_tree`]).
const MAY_END: u8 = 2;
/// The nibble completed EOS.
const FAILS: u8 = 4;

/// `DECODE[state][nibble]`.
static DECODE: [[Step; 16]; 256] = decode_table();

const fn decode_table() -> [[Step; 16]; 256] {
    let (children, may_end) = code_tree();
    let mut table = [[Step {
        next: 0,
        byte: 0,
        flags: 0,
    }; 16]; 256];
    let mut state = 0;
    while state < 256 {
        let mut nibble = 0;
        while nibble < 16 {
            let mut node = state;
            let mut step = Step {
                next: 0,
                byte: 0,
                flags: 0,
            };
            let mut bit = 4;
            while bit > 0 {
                bit -= 1;
                let child = children[node][(nibble >> bit) & 1];
                if child & LEAF == 0 {
                    node = child as usize;
                } else {
                    let sym = (child & !LEAF) as usize;
                    if sym == EOS {
                        step.flags |= FAILS;
                    } else {
                        step.flags |= EMITS;
                        step.byte = sym as u8;
                    }
                    node = 0;
                }
            }
            step.next = node as u8;
            if may_end[node] {
                step.flags |= MAY_END;
            }
            table[state][nibble] = step;
            nibble += 1;
        }
        state += 1;
    }
    table
}

/// Decodes a Huffman-coded string, appending the bytes to `dst`.
pub(crate) fn decode(src: &[u8], dst: &mut Vec<u8>) -> Result<(), DecodeError> {
    // At most 8/5 bytes per byte: every code is at least 5 bits long.
    dst.reserve(src.len() * 8 / 5 + 1);
    let mut state = 0;
    let mut flags = MAY_END;
    for &b in src {
        for nibble in [b >> 4, b & 0x0f] {
            let step = DECODE[state][nibble as usize];
            if step.flags & FAILS != 0 {
                return Err(DecodeError::HuffmanEos);
            }
            if step.flags & EMITS != 0 {
                dst.push(step.byte);
            }
            state = step.next as usize;
            flags = step.flags;
        }
    }
    if flags & MAY_END == 0 {
        return Err(DecodeError::HuffmanPadding);
    }
    Ok(())
}

/// Length in bytes of `src` Huffman-coded, padding included.
pub(crate) fn encoded_len(src: &[u8]) -> usize {
    let bits: usize = src.iter().map(|&b| CODE_LENGTHS[b as usize] as usize).sum();
    bits.div_ceil(8)
}

/// Appends `src` Huffman-coded, padded with the high bits of EOS (all ones).
pub(crate) fn encode(src: &[u8], dst: &mut Vec<u8>) {
    // Bits not yet written sit at the bottom of `pending`; fewer than 8 remain after each
    // byte, and a code is at most 30 bits, so 64 bits never overflow what matters.
    let mut pending: u64 = 0;
    let mut bits = 0;
    for &b in src {
        let len = CODE_LENGTHS[b as usize] as u32;
        pending = (pending << len) | CODES[b as usize] as u64;
        bits += len;
        while bits >= 8 {
            bits -= 8;
            dst.push((pending >> bits) as u8);
        }
    }
    if bits > 0 {
        dst.push(((pending << (8 - bits)) | (0xff >> bits)) as u8);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(src: &[u8]) -> Result<Vec<u8>, DecodeError> {
        let mut out = Vec::new();
        decode(src, &mut out).map(|()| out)
    }

    fn encoded(src: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        encode(src, &mut out);
        assert_eq!(out.len(), encoded_len(src));
        out
    }

    #[test]
    fn codes_match_rfc_7541_appendix_b_samples() {
        assert_eq!(CODES[b' ' as usize], 0x14);
        assert_eq!(CODES[b'0' as usize], 0x0);
        assert_eq!(CODES[b'a' as usize], 0x3);
        assert_eq!(CODES[0], 0x1ff8);
        assert_eq!(CODES[255], 0x3ffffee);
        assert_eq!(CODES[EOS], 0x3fff_ffff);
    }

    #[test]
    fn rfc_7541_appendix_c_strings() {
        let cases: [(&[u8], &str); 4] = [
            (b"www.example.com", "f1e3c2e5f23a6ba0ab90f4ff"),
            (b"no-cache", "a8eb10649cbf"),
            (b"custom-key", "25a849e95ba97d7f"),
            (
                b"Mon, 21 Oct 2013 20:13:21 GMT",
                "d07abe941054d444a8200595040b8166e082a62d1bff",
            ),
        ];
        for (plain, hex) in cases {
            let coded = super::super::tests::unhex(hex);
            assert_eq!(encoded(plain), coded);
            assert_eq!(decoded(&coded).unwrap(), plain);
        }
    }

    #[test]
    fn every_symbol_round_trips() {
        for b in 0..=255u8 {
            for text in [vec![b], vec![b; 3], vec![b'a', b, b'/', b]] {
                assert_eq!(decoded(&encoded(&text)).unwrap(), text, "byte {b:#04x}");
            }
        }
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(decoded(&encoded(&all)).unwrap(), all);
    }

    #[test]
    fn eos_inside_a_string_is_an_error() {
        // EOS (30 ones) then padding: 0xff 0xff 0xff 0xff.
        assert_eq!(decoded(&[0xff; 4]), Err(DecodeError::HuffmanEos));
        // 'a' (00011) then EOS.
        assert_eq!(
            decoded(&[0x1f, 0xff, 0xff, 0xff, 0xfe]),
            Err(DecodeError::HuffmanEos)
        );
    }

    #[test]
    fn padding_longer_than_seven_bits_is_an_error() {
        // 'a' is 00011, then 3 ones of padding: fine. A whole extra byte of ones: too long.
        assert_eq!(decoded(&[0x1f]).unwrap(), b"a");
        assert_eq!(decoded(&[0x1f, 0xff]), Err(DecodeError::HuffmanPadding));
        assert_eq!(decoded(&[0xff]), Err(DecodeError::HuffmanPadding));
    }

    #[test]
    fn padding_that_is_not_all_ones_is_an_error() {
        // 'a' (00011) then 110: not a prefix of EOS.
        assert_eq!(decoded(&[0x1e]), Err(DecodeError::HuffmanPadding));
        // 'a' then 000, which is a whole prefix of '0' (00000), not padding.
        assert_eq!(decoded(&[0x18]), Err(DecodeError::HuffmanPadding));
    }

    #[test]
    fn empty_string_decodes_to_nothing() {
        assert_eq!(decoded(&[]).unwrap(), b"");
    }
}
