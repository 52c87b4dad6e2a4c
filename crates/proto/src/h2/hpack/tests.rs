//! Codec tests on byte slices: RFC 7541 Appendix C, the strictness rules, and encoder to
//! decoder round trips.

use super::{DecodeError, Decoder, Encoder, Indexing};

/// Bytes from hex digits; whitespace is ignored so blocks can be laid out as in the RFC.
pub(super) fn unhex(hex: &str) -> Vec<u8> {
    let digits: Vec<u8> = hex.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    digits
        .chunks(2)
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).unwrap(), 16).unwrap())
        .collect()
}

type Fields = Vec<(Vec<u8>, Vec<u8>)>;

fn decode(decoder: &mut Decoder, block: &[u8]) -> Result<Fields, DecodeError> {
    let mut fields = Vec::new();
    decoder.decode(block, |name, value| {
        fields.push((name.to_vec(), value.to_vec()));
        Ok(())
    })?;
    Ok(fields)
}

fn owned(fields: &[(&str, &str)]) -> Fields {
    fields
        .iter()
        .map(|(n, v)| (n.as_bytes().to_vec(), v.as_bytes().to_vec()))
        .collect()
}

/// Decodes `hex`, checks the fields, then the dynamic table (newest first) and its size.
fn check(
    decoder: &mut Decoder,
    hex: &str,
    fields: &[(&str, &str)],
    table: &[(&str, &str)],
    size: usize,
) {
    assert_eq!(decode(decoder, &unhex(hex)).unwrap(), owned(fields));
    let entries: Fields = (0..decoder.table().len())
        .map(|i| {
            let (n, v) = decoder.table().get(i).unwrap();
            (n.to_vec(), v.to_vec())
        })
        .collect();
    assert_eq!(entries, owned(table));
    assert_eq!(decoder.table().size(), size);
}

#[test]
fn rfc_7541_c2_field_representations() {
    let mut decoder = Decoder::new(4096);
    let field = [("custom-key", "custom-header")];
    check(
        &mut decoder,
        "400a637573746f6d2d6b65790d637573746f6d2d686561646572",
        &field,
        &field,
        55,
    );

    let mut decoder = Decoder::new(4096);
    check(
        &mut decoder,
        "040c2f73616d706c652f70617468",
        &[(":path", "/sample/path")],
        &[],
        0,
    );

    let mut decoder = Decoder::new(4096);
    check(
        &mut decoder,
        "100870617373776f726406736563726574",
        &[("password", "secret")],
        &[],
        0,
    );

    let mut decoder = Decoder::new(4096);
    check(&mut decoder, "82", &[(":method", "GET")], &[], 0);
}

const REQUEST_1: [(&str, &str); 4] = [
    (":method", "GET"),
    (":scheme", "http"),
    (":path", "/"),
    (":authority", "www.example.com"),
];
const REQUEST_2: [(&str, &str); 5] = [
    (":method", "GET"),
    (":scheme", "http"),
    (":path", "/"),
    (":authority", "www.example.com"),
    ("cache-control", "no-cache"),
];
const REQUEST_3: [(&str, &str); 5] = [
    (":method", "GET"),
    (":scheme", "https"),
    (":path", "/index.html"),
    (":authority", "www.example.com"),
    ("custom-key", "custom-value"),
];

/// C.3 (raw) and C.4 (Huffman): three requests sharing one table.
fn check_requests(blocks: [&str; 3]) {
    let mut decoder = Decoder::new(4096);
    let authority = (":authority", "www.example.com");
    let cache_control = ("cache-control", "no-cache");
    check(&mut decoder, blocks[0], &REQUEST_1, &[authority], 57);
    check(
        &mut decoder,
        blocks[1],
        &REQUEST_2,
        &[cache_control, authority],
        110,
    );
    let custom = ("custom-key", "custom-value");
    check(
        &mut decoder,
        blocks[2],
        &REQUEST_3,
        &[custom, cache_control, authority],
        164,
    );
}

#[test]
fn rfc_7541_c3_requests_without_huffman() {
    check_requests([
        "828684410f7777772e6578616d706c652e636f6d",
        "828684be58086e6f2d6361636865",
        "828785bf400a637573746f6d2d6b65790c637573746f6d2d76616c7565",
    ]);
}

#[test]
fn rfc_7541_c4_requests_with_huffman() {
    check_requests([
        "828684418cf1e3c2e5f23a6ba0ab90f4ff",
        "828684be5886a8eb10649cbf",
        "828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf",
    ]);
}

/// C.5 (raw) and C.6 (Huffman): three responses in a 256-byte table, with evictions.
fn check_responses(blocks: [&str; 3]) {
    let mut decoder = Decoder::new(256);
    let private = ("cache-control", "private");
    let date_21 = ("date", "Mon, 21 Oct 2013 20:13:21 GMT");
    let date_22 = ("date", "Mon, 21 Oct 2013 20:13:22 GMT");
    let location = ("location", "https://www.example.com");
    let cookie = (
        "set-cookie",
        "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1",
    );
    let gzip = ("content-encoding", "gzip");

    let fields = [(":status", "302"), private, date_21, location];
    check(
        &mut decoder,
        blocks[0],
        &fields,
        &[location, date_21, private, (":status", "302")],
        222,
    );
    let fields = [(":status", "307"), private, date_21, location];
    check(
        &mut decoder,
        blocks[1],
        &fields,
        &[(":status", "307"), location, date_21, private],
        222,
    );
    let fields = [(":status", "200"), private, date_22, location, gzip, cookie];
    check(
        &mut decoder,
        blocks[2],
        &fields,
        &[cookie, gzip, date_22],
        215,
    );
}

#[test]
fn rfc_7541_c5_responses_without_huffman() {
    check_responses([
        "4803333032580770726976617465611d4d6f6e2c203231204f637420323031332032303a31333a3231
         20474d546e1768747470733a2f2f7777772e6578616d706c652e636f6d",
        "4803333037c1c0bf",
        "88c1611d4d6f6e2c203231204f637420323031332032303a31333a323220474d54c05a04677a697077
         38666f6f3d4153444a4b48514b425a584f5157454f50495541585157454f49553b206d61782d616765
         3d333630303b2076657273696f6e3d31",
    ]);
}

#[test]
fn rfc_7541_c6_responses_with_huffman() {
    check_responses([
        "488264025885aec3771a4b6196d07abe941054d444a8200595040b8166e082a62d1bff6e919d29ad17
         1863c78f0b97c8e9ae82ae43d3",
        "4883640effc1c0bf",
        "88c16196d07abe941054d444a8200595040b8166e084a62d1bffc05a839bd9ab77ad94e7821dd7f2e6
         c7b335dfdfcd5b3960d5af27087f3672c1ab270fb5291f9587316065c003ed4ee5b1063d5007",
    ]);
}

fn decode_error(max_table_size: usize, block: &[u8]) -> DecodeError {
    decode(&mut Decoder::new(max_table_size), block).unwrap_err()
}

#[test]
fn index_zero_is_an_error() {
    assert_eq!(decode_error(4096, &[0x80]), DecodeError::InvalidIndex);
}

#[test]
fn index_past_the_tables_is_an_error() {
    assert_eq!(decode_error(4096, &[0xbe]), DecodeError::InvalidIndex);
    // A literal whose name index (15 + 48 = 63) is past the tables.
    assert_eq!(
        decode_error(4096, &[0x0f, 0x30, 0x01, b'a']),
        DecodeError::InvalidIndex
    );
    // One entry in the table: 62 is valid, 63 is not.
    let mut decoder = Decoder::new(4096);
    decode(&mut decoder, &unhex("400161 0162 be")).unwrap();
    assert_eq!(
        decode(&mut decoder, &[0xbf]).unwrap_err(),
        DecodeError::InvalidIndex
    );
}

#[test]
fn integer_overflow_is_an_error() {
    let too_large = [0xff, 0xff, 0xff, 0xff, 0xff, 0x0f];
    assert_eq!(decode_error(4096, &too_large), DecodeError::IntegerOverflow);
    let zero_padded = [0xff, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00];
    assert_eq!(
        decode_error(4096, &zero_padded),
        DecodeError::IntegerOverflow
    );
}

#[test]
fn truncated_integers_and_strings_are_errors() {
    assert_eq!(decode_error(4096, &[0xff]), DecodeError::Truncated);
    assert_eq!(decode_error(4096, &[0xff, 0x80]), DecodeError::Truncated);
    assert_eq!(
        decode_error(4096, &[0x40, 0x05, b'a', b'b']),
        DecodeError::Truncated
    );
    assert_eq!(
        decode_error(4096, &[0x40, 0x01, b'a']),
        DecodeError::Truncated
    );
    assert_eq!(decode_error(4096, &[0x40, 0x7f]), DecodeError::Truncated);
}

#[test]
fn huffman_errors_are_reported_through_the_decoder() {
    let eos = [0x00, 0x01, b'a', 0x84, 0xff, 0xff, 0xff, 0xff];
    assert_eq!(decode_error(4096, &eos), DecodeError::HuffmanEos);
    let long_padding = [0x00, 0x01, b'a', 0x82, 0x1f, 0xff];
    assert_eq!(
        decode_error(4096, &long_padding),
        DecodeError::HuffmanPadding
    );
    let zero_padding = [0x00, 0x01, b'a', 0x81, 0x1e];
    assert_eq!(
        decode_error(4096, &zero_padding),
        DecodeError::HuffmanPadding
    );
}

#[test]
fn table_size_update_above_our_setting_is_an_error() {
    // 31 + 0x61 + (0x1f << 7) = 4096: allowed. One more is not.
    decode(&mut Decoder::new(4096), &[0x3f, 0xe1, 0x1f]).unwrap();
    assert_eq!(
        decode_error(4096, &[0x3f, 0xe2, 0x1f]),
        DecodeError::TableSizeTooLarge
    );
    assert_eq!(
        decode_error(100, &[0x3f, 0x46]),
        DecodeError::TableSizeTooLarge
    );
}

#[test]
fn table_size_update_after_a_field_is_an_error() {
    // Two updates before the first field are fine (RFC 7541 §4.2).
    decode(&mut Decoder::new(4096), &[0x20, 0x3f, 0xe1, 0x1f, 0x82]).unwrap();
    assert_eq!(
        decode_error(4096, &[0x82, 0x20]),
        DecodeError::LateTableSizeUpdate
    );
}

#[test]
fn table_size_update_evicts() {
    let mut decoder = Decoder::new(4096);
    decode(&mut decoder, &unhex("400161 0162 400163 0164")).unwrap();
    assert_eq!(decoder.table().len(), 2);
    // Down to 40 bytes: only the newest 34-byte entry fits.
    decode(&mut decoder, &[0x3f, 0x09]).unwrap();
    assert_eq!(decoder.table().len(), 1);
    assert_eq!(decoder.table().get(0), Some((&b"c"[..], &b"d"[..])));
    decode(&mut decoder, &[0x20]).unwrap();
    assert_eq!(decoder.table().len(), 0);
}

#[test]
fn entry_larger_than_the_table_empties_it() {
    let mut decoder = Decoder::new(4096);
    // Table size 64, "a: b" (34 bytes), then a 33-byte value under "x" (66 bytes).
    let mut block = unhex("3f21 400161 0162 400178 21");
    block.extend_from_slice(&[b'v'; 33]);
    let fields = decode(&mut decoder, &block).unwrap();
    assert_eq!(fields.len(), 2);
    assert_eq!(decoder.table().len(), 0);
    assert_eq!(decoder.table().size(), 0);
}

#[test]
fn a_rejected_field_still_updates_the_table() {
    let mut decoder = Decoder::new(4096);
    let block = unhex("400161 0162 400163 0164");
    let mut calls = 0;
    let result = decoder.decode(&block, |_, _| {
        calls += 1;
        Err(DecodeError::Rejected("too large"))
    });
    assert_eq!(result, Err(DecodeError::Rejected("too large")));
    assert!(!result.unwrap_err().is_compression_error());
    assert_eq!(calls, 1);
    assert_eq!(decoder.table().len(), 2);
    // A compression error in the rest of the block still wins.
    let result = decoder.decode(&[0x82, 0x80], |_, _| Err(DecodeError::Rejected("no")));
    assert_eq!(result, Err(DecodeError::InvalidIndex));
}

#[test]
fn recurring_fields_are_one_byte_the_second_time() {
    let mut encoder = Encoder::new();
    let mut decoder = Decoder::new(4096);
    for round in 0..3 {
        let mut block = Vec::new();
        encoder.begin(&mut block);
        encoder.status(200, &mut block);
        let mut sizes = Vec::new();
        for (name, value) in [
            (&b"server"[..], &b"volt"[..]),
            (b"content-type", b"text/plain"),
        ] {
            let before = block.len();
            encoder.field(name, value, Indexing::Remember, &mut block);
            sizes.push(block.len() - before);
        }
        if round > 0 {
            assert_eq!(sizes, [1, 1]);
        }
        let before = block.len();
        encoder.content_length(13, &mut block);
        assert_eq!(block[before..], [0x0f, 0x0d, 0x02, b'1', b'3']);
        let fields = decode(&mut decoder, &block).unwrap();
        assert_eq!(
            fields,
            owned(&[
                (":status", "200"),
                ("server", "volt"),
                ("content-type", "text/plain"),
                ("content-length", "13"),
            ])
        );
    }
}

#[test]
fn static_fields_are_indexed_whatever_the_policy() {
    let mut encoder = Encoder::new();
    let mut block = Vec::new();
    encoder.field(
        b"accept-encoding",
        b"gzip, deflate",
        Indexing::Never,
        &mut block,
    );
    encoder.field(b":path", b"/index.html", Indexing::Once, &mut block);
    assert_eq!(block, [0x90, 0x85]);
}

#[test]
fn encoder_announces_table_size_changes() {
    let mut encoder = Encoder::new();
    let mut decoder = Decoder::new(4096);
    let mut block = Vec::new();
    encoder.field(b"server", b"volt", Indexing::Remember, &mut block);
    decode(&mut decoder, &block).unwrap();

    // Down to 0 and back up before the next block: both sizes are sent, the smallest first.
    encoder.set_max_table_size(0);
    encoder.set_max_table_size(1 << 20);
    let mut block = Vec::new();
    encoder.begin(&mut block);
    assert_eq!(block, [0x20, 0x3f, 0xe1, 0x1f]);
    encoder.field(b"server", b"volt", Indexing::Remember, &mut block);
    assert_eq!(
        block[4],
        0x40 | 54,
        "re-sent as a literal: the table was emptied"
    );
    decode(&mut decoder, &block).unwrap();

    // An unchanged size sends nothing.
    encoder.set_max_table_size(4096);
    let mut block = Vec::new();
    encoder.begin(&mut block);
    assert!(block.is_empty());
}

/// xorshift64*: deterministic, dependency-free randomness for the round trips.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn bytes(&mut self, max_len: usize) -> Vec<u8> {
        let len = self.below(max_len + 1);
        // Mostly text, sometimes any octet, so every Huffman code length is exercised.
        (0..len)
            .map(|_| match self.below(4) {
                0 => self.next() as u8,
                _ => b' ' + self.below(95) as u8,
            })
            .collect()
    }
}

#[test]
fn encoder_to_decoder_round_trips() {
    let names: [&[u8]; 8] = [
        b"server",
        b"content-type",
        b"date",
        b"content-length",
        b"set-cookie",
        b"x-request-id",
        b"cache-control",
        b"vary",
    ];
    let values: [&[u8]; 4] = [b"volt", b"text/plain", b"no-cache", b""];
    let policies = [Indexing::Remember, Indexing::Once, Indexing::Never];
    let sizes = [0, 64, 100, 256, 1024, 4096, 1 << 16];
    for seed in 1..=20 {
        let mut rng = Rng(seed);
        let mut encoder = Encoder::new();
        let mut decoder = Decoder::new(4096);
        for _ in 0..50 {
            if rng.below(5) == 0 {
                encoder.set_max_table_size(sizes[rng.below(sizes.len())]);
            }
            let mut block = Vec::new();
            encoder.begin(&mut block);
            let status = [200, 302, 404, 503][rng.below(4)];
            encoder.status(status, &mut block);
            let mut expected = vec![(b":status".to_vec(), status.to_string().into_bytes())];
            for _ in 0..rng.below(12) {
                let name = match rng.below(4) {
                    0 => rng.bytes(20).to_ascii_lowercase(),
                    _ => names[rng.below(names.len())].to_vec(),
                };
                let value = match rng.below(3) {
                    0 => rng.bytes(600),
                    _ => values[rng.below(values.len())].to_vec(),
                };
                let policy = policies[rng.below(policies.len())];
                encoder.field(&name, &value, policy, &mut block);
                expected.push((name, value));
            }
            assert_eq!(
                decode(&mut decoder, &block).unwrap(),
                expected,
                "seed {seed}"
            );
            assert_eq!(
                encoder.table().size(),
                decoder.table().size(),
                "seed {seed}"
            );
            assert_eq!(encoder.table().len(), decoder.table().len(), "seed {seed}");
        }
    }
}

#[test]
fn random_blocks_never_panic() {
    let mut rng = Rng(0x5eed);
    let mut decoder = Decoder::new(256);
    let mut decoded = 0;
    for _ in 0..20_000 {
        let len = rng.below(24);
        // Biased towards small representations so some blocks decode and fill the table.
        let block: Vec<u8> = (0..len)
            .map(|_| match rng.below(3) {
                0 => 0x40 | rng.below(4) as u8,
                1 => rng.below(8) as u8,
                _ => rng.next() as u8,
            })
            .collect();
        if decoder.decode(&block, |_, _| Ok(())).is_ok() {
            decoded += 1;
        } else {
            decoder = Decoder::new(256);
        }
    }
    assert!(decoded > 100, "only {decoded} random blocks decoded");
}

/// Instruction counts, not time: run under callgrind, e.g.
/// `valgrind --tool=callgrind <test binary> --ignored --exact h2::hpack::tests::cost_decode_request`
/// and subtract a run with `ROUNDS=0`; see the HPACK commit message for numbers.
#[test]
#[ignore]
fn cost_decode_request() {
    // What h2load sends: the first request adds :authority and user-agent to the table (as
    // literals with incremental indexing); every later one is five indexed fields.
    let mut first = vec![0x82, 0x84, 0x87, 0x41, 15];
    first.extend_from_slice(b"localhost:19100");
    first.extend_from_slice(&[0x7a, 21]);
    first.extend_from_slice(b"h2load nghttp2/1.59.0");
    let steady = [0x82, 0x84, 0x87, 0xbf, 0xbe];
    let mut decoder = Decoder::new(4096);
    let mut total = 0;
    let count = |name: &[u8], value: &[u8]| {
        total += name.len() + value.len();
        Ok(())
    };
    decoder.decode(&first, count).unwrap();
    for _ in 0..rounds() {
        decoder
            .decode(std::hint::black_box(&steady), |name, value| {
                total += name.len() + value.len();
                Ok(())
            })
            .unwrap();
    }
    println!("decoded {total} bytes");
}

#[test]
#[ignore]
fn cost_encode_response() {
    let mut encoder = Encoder::new();
    let mut block = Vec::with_capacity(64);
    for _ in 0..=rounds() {
        block.clear();
        encoder.begin(&mut block);
        encoder.status(200, &mut block);
        encoder.field(b"server", b"volt", Indexing::Remember, &mut block);
        encoder.field(
            b"content-type",
            b"text/plain",
            Indexing::Remember,
            &mut block,
        );
        let date = std::hint::black_box(b"Mon, 23 Nov 2026 09:45:00 GMT");
        encoder.field(b"date", date, Indexing::Remember, &mut block);
        encoder.content_length(std::hint::black_box(13), &mut block);
        std::hint::black_box(&block);
    }
    println!("steady block: {block:02x?}");
}

fn rounds() -> usize {
    std::env::var("ROUNDS").map_or(100_000, |r| r.parse().unwrap())
}
