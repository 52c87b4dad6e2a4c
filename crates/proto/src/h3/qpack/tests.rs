use super::table::STATIC;
use super::*;
use crate::h3::{Code, Error};

type Fields = Vec<(Vec<u8>, Vec<u8>, bool)>;

fn decode(section: &[u8]) -> Result<Fields, Error> {
    let mut fields = Vec::new();
    Decoder::new().decode(section, |f| {
        fields.push((f.name.to_vec(), f.value.to_vec(), f.never_indexed));
        Ok(())
    })?;
    Ok(fields)
}

fn field(name: &str, value: &str) -> (Vec<u8>, Vec<u8>, bool) {
    (name.into(), value.into(), false)
}

fn failed(section: &[u8]) -> Error {
    let e = decode(section).unwrap_err();
    assert_eq!(e.code(), Code::QPACK_DECOMPRESSION_FAILED, "{section:02x?}");
    assert!(e.is_connection_error());
    e
}

/// RFC 9204 Appendix B.1: a literal field line with a static name reference, no dynamic
/// table.
#[test]
fn rfc_9204_appendix_b1() {
    let section = [
        0x00, 0x00, 0x51, 0x0b, 0x2f, 0x69, 0x6e, 0x64, 0x65, 0x78, 0x2e, 0x68, 0x74, 0x6d, 0x6c,
    ];
    assert_eq!(decode(&section).unwrap(), [field(":path", "/index.html")]);
    // Our encoder writes the same bytes for that field (the value is no shorter coded:
    // 11 bytes raw, 9 Huffman-coded, so it is Huffman-coded; the name reference is the same).
    let mut out = Vec::new();
    let mut encoder = Encoder::new();
    encoder.begin(&mut out);
    encoder.field(b":path", b"/index.html", Indexing::Once, &mut out);
    assert_eq!(out[..3], [0x00, 0x00, 0x51]);
    assert_eq!(decode(&out).unwrap(), [field(":path", "/index.html")]);
}

#[test]
fn every_static_entry_decodes_by_index() {
    for (i, &(name, value)) in STATIC.iter().enumerate() {
        let mut section = vec![0, 0];
        encode::integer(&mut section, 0xc0, 6, i);
        assert_eq!(
            decode(&section).unwrap(),
            [(name.to_vec(), value.to_vec(), false)]
        );
    }
    failed(&[0x00, 0x00, 0xff, 0x24]); // static index 99: past the end
}

#[test]
fn literals_keep_the_n_bit() {
    // Name reference (`authorization`, static 84), N set, raw value.
    let mut section = vec![0x00, 0x00, 0x7f, 84 - 15, 0x03];
    section.extend_from_slice(b"abc");
    // Literal name, N set, Huffman-coded name and value ("custom-key"/"custom-value",
    // RFC 7541 C.4.3's codes).
    section.extend_from_slice(&[0x3f, 0x01]); // 001 N=1 H=1, length 7 + 1 = 8
    section.extend_from_slice(&[0x25, 0xa8, 0x49, 0xe9, 0x5b, 0xa9, 0x7d, 0x7f]);
    section.extend_from_slice(&[0x89, 0x25, 0xa8, 0x49, 0xe9, 0x5b, 0xb8, 0xe8, 0xb4, 0xbf]);
    // Literal name without N, raw.
    section.extend_from_slice(&[0x21, b'x', 0x01, b'y']);
    assert_eq!(
        decode(&section).unwrap(),
        [
            (b"authorization".to_vec(), b"abc".to_vec(), true),
            (b"custom-key".to_vec(), b"custom-value".to_vec(), true),
            field("x", "y"),
        ]
    );
}

#[test]
fn dynamic_table_references_fail() {
    failed(&[0x01, 0x00]); // Required Insert Count 1
    failed(&[0x00, 0x80]); // sign bit with a count of 0: negative Base
    failed(&[0x00, 0x00, 0x80]); // indexed, dynamic (T = 0)
    failed(&[0x00, 0x00, 0x10]); // indexed, post-base
    failed(&[0x00, 0x00, 0x40, 0x00]); // literal with a dynamic name reference
    failed(&[0x00, 0x00, 0x00, 0x00]); // literal with a post-base name reference
                                       // Delta Base without the sign bit means nothing without a table, and is allowed.
    assert_eq!(
        decode(&[0x00, 0x05, 0xd1]).unwrap(),
        [field(":method", "GET")]
    );
}

#[test]
fn broken_sections_fail() {
    failed(&[]); // no prefix
    failed(&[0x00]); // half a prefix
    failed(&[0x00, 0x00, 0xff]); // an index cut short
    failed(&[0x00, 0x00, 0x51, 0x03, b'/']); // a value cut short
    failed(&[0x00, 0x00, 0x27, 0x05, b'x']); // a name length cut short (3-bit prefix)
    failed(&[0x00, 0x00, 0x21, b'x']); // a name and no value
                                       // An integer past u32::MAX, and one with endless continuation bytes.
    failed(&[0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]);
    failed(&[0x00, 0x00, 0xff, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00]);
    // Huffman: the EOS code in a string ([0xff, 0xff, 0xff, 0xff] holds EOS's 30 ones), and
    // padding that is not all ones (a lone 0 bit-string of 8 bits).
    failed(&[0x00, 0x00, 0x51, 0x84, 0xff, 0xff, 0xff, 0xff]);
    failed(&[0x00, 0x00, 0x51, 0x81, 0x00]);
}

#[test]
fn the_callback_can_stop_decoding() {
    const STOP: Error = Error::stream(Code::H3_EXCESSIVE_LOAD, "stop");
    let mut seen = 0;
    let section = [0x00, 0x00, 0xd1, 0xd7, 0xff]; // the last line is broken
    let result = Decoder::new().decode(&section, |_| {
        seen += 1;
        if seen == 2 {
            Err(STOP)
        } else {
            Ok(())
        }
    });
    assert_eq!((result, seen), (Err(STOP), 2));
}

fn encoded(f: impl FnOnce(&mut Encoder, &mut Vec<u8>)) -> Vec<u8> {
    let mut out = Vec::new();
    let mut encoder = Encoder::new();
    encoder.begin(&mut out);
    f(&mut encoder, &mut out);
    out
}

#[test]
fn statuses() {
    for (status, bytes) in [
        (200, &[0xd9][..]),
        (404, &[0xdb]),
        (103, &[0xd8]),
        (500, &[0xff, 0x08]), // static 71: 63 + 8
        (100, &[0xff, 0x00]),
    ] {
        let out = encoded(|e, out| e.status(status, out));
        assert_eq!(&out[2..], bytes, "{status}");
        let fields = decode(&out).unwrap();
        assert_eq!(fields, [field(":status", &status.to_string())]);
    }
    // Not in the table: the name (static 24) and the digits, Huffman-coded (3 × 5 bits).
    let out = encoded(|e, out| e.status(201, out));
    assert_eq!(&out[2..5], [0x5f, 0x09, 0x82]);
    assert_eq!(decode(&out).unwrap(), [field(":status", "201")]);
    for status in 100..1000 {
        let out = encoded(|e, out| e.status(status, out));
        assert_eq!(
            decode(&out).unwrap(),
            [field(":status", &status.to_string())]
        );
    }
}

#[test]
fn content_length() {
    assert_eq!(encoded(|e, out| e.content_length(0, out)), [0, 0, 0xc4]);
    for len in [1, 13, 4096, u64::MAX] {
        let out = encoded(|e, out| e.content_length(len, out));
        assert_eq!(out[2], 0x54); // the static name `content-length`
        assert_eq!(
            decode(&out).unwrap(),
            [field("content-length", &len.to_string())]
        );
    }
}

#[test]
fn fields_use_the_static_table() {
    // An exact match is its index; a known name, its index and the value; else a literal.
    let out = encoded(|e, out| {
        e.field(b"content-type", b"text/plain", Indexing::Remember, out);
        e.field(b"x-frame-options", b"sameorigin", Indexing::Once, out);
        e.field(b"content-type", b"text/x-volt", Indexing::Remember, out);
        e.field(b"x-volt", b"1", Indexing::Remember, out);
    });
    assert_eq!(out[2..5], [0xf5, 0xff, 0x23]); // 53; 98 = 63 + 35
    assert_eq!(out[5], 0x5f); // name reference to 44, the first content-type
    assert_eq!(out[6], 44 - 15);
    // `x-volt` is 36 bits Huffman-coded: 5 bytes (001, N=0, H=1, length 5); `1` is no
    // shorter coded and goes raw.
    let x_volt = encoded(|e, out| e.field(b"x-volt", b"1", Indexing::Remember, out));
    assert_eq!(x_volt[2], 0x2d);
    assert_eq!(x_volt[8..], [0x01, b'1']);
    assert!(out.ends_with(&x_volt[2..]));
    assert_eq!(
        decode(&out).unwrap(),
        [
            field("content-type", "text/plain"),
            field("x-frame-options", "sameorigin"),
            field("content-type", "text/x-volt"),
            field("x-volt", "1"),
        ]
    );
}

#[test]
fn never_indexed_fields_are_literals_with_n() {
    // `cookie: ""` is a static entry, but a never-indexed field is always a literal.
    let out = encoded(|e, out| {
        e.field(b"cookie", b"", Indexing::Never, out);
        e.field(b"x-secret", b"k", Indexing::Never, out);
    });
    assert_eq!(out[2..4], [0x75, 0x00]); // 01 N=1 T=1 index 5, empty value
    assert_eq!(out[4] & 0xf0, 0x30); // 001 N=1
    let fields = decode(&out).unwrap();
    assert_eq!(
        fields,
        [
            (b"cookie".to_vec(), b"".to_vec(), true),
            (b"x-secret".to_vec(), b"k".to_vec(), true),
        ]
    );
}

/// A response head, encoded and decoded back, with strings Huffman-coded where shorter.
#[test]
fn response_head_round_trips() {
    let head: [(&[u8], &[u8]); 6] = [
        (b"content-type", b"application/json"),
        (b"server", b"volt"),
        (b"date", b"Thu, 26 Nov 2026 21:00:00 GMT"),
        (b"cache-control", b"private, max-age=60"),
        (b"set-cookie", b"id=42; Secure"),
        (b"x-request-id", b"\x01\xff odd bytes"),
    ];
    let out = encoded(|e, out| {
        e.status(200, out);
        for (name, value) in head {
            e.field(name, value, Indexing::for_name(name), out);
        }
        e.content_length(27, out);
    });
    let fields = decode(&out).unwrap();
    assert_eq!(fields[0], field(":status", "200"));
    for (i, (name, value)) in head.iter().enumerate() {
        let never = *name == b"set-cookie";
        assert_eq!(fields[i + 1], (name.to_vec(), value.to_vec(), never));
    }
    assert_eq!(fields[7], field("content-length", "27"));
}

/// The encoder's running size is RFC 9114 §4.2.2's: the sum over the decoded fields of name,
/// value and 32; `begin` starts it again.
#[test]
fn encoder_counts_the_section_size() {
    let mut encoder = Encoder::new();
    let mut out = Vec::new();
    encoder.begin(&mut out);
    encoder.field(b"x", b"1", Indexing::Once, &mut out);
    encoder.begin(&mut out);
    out.clear();
    encoder.begin(&mut out);
    for status in [200, 299, 1000] {
        encoder.status(status, &mut out);
    }
    for len in [0, 13, u64::MAX] {
        encoder.content_length(len, &mut out);
    }
    encoder.field(b"content-type", b"text/plain", Indexing::Remember, &mut out);
    encoder.field(b"cookie", b"", Indexing::Never, &mut out);
    encoder.field(b"x-volt", b"a b c", Indexing::Once, &mut out);
    let expected: usize = decode(&out)
        .unwrap()
        .iter()
        .map(|(name, value, _)| name.len() + value.len() + 32)
        .sum();
    assert_eq!(encoder.size(), expected as u64);
}
