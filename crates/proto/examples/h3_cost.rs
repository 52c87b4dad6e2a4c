//! Cost of HTTP/3's head paths: decode a browser's request head (QPACK, then the request
//! checks, into a `Head`), and encode a response head (QPACK field section in a HEADERS
//! frame).
//!
//! ```text
//! cargo build --release -p volt-proto --example h3_cost
//! valgrind --tool=callgrind --toggle-collect='*decode_many*' --callgrind-out-file=/dev/null \
//!     target/release/examples/h3_cost decode 1000
//! valgrind --tool=callgrind --toggle-collect='*encode_many*' --callgrind-out-file=/dev/null \
//!     target/release/examples/h3_cost encode 1000
//! valgrind --tool=callgrind --toggle-collect='*fields_many*' --callgrind-out-file=/dev/null \
//!     target/release/examples/h3_cost qpack 1000     # or hpack
//! ```
//!
//! `qpack` and `hpack` decode the same request's fields alone, without the request checks
//! and without storing them: QPACK's section (static table and literals) against an HPACK
//! block of literals without indexing (what HPACK costs the first time a client sends a
//! head, before its dynamic table holds anything). Most of either is the Huffman code both
//! share.
//!
//! As in `parse_speed`, the callgrind form counts only the instructions inside the loop, so
//! `Collected` divided by the count is the instructions per head. The request is Chrome's for
//! a page (sixteen fields, a cookie), encoded as a client must encode it for a server that
//! allows no dynamic table: static references and literals, Huffman-coded where shorter.
//! The response is the techempower example's plaintext answer: `:status 200`, `server`,
//! `date`, `content-type`, `content-length`.

use std::hint::black_box;

use volt_proto::h2::hpack;
use volt_proto::h3::qpack::{Decoder, Encoder, Indexing};
use volt_proto::h3::{decode_request, frame, Head};

const BROWSER: [(&str, &str); 16] = [
    (":method", "GET"),
    (":authority", "www.example.com"),
    (":scheme", "https"),
    (":path", "/articles/2026/11/http3-in-volt?ref=home"),
    (
        "sec-ch-ua",
        "\"Chromium\";v=\"131\", \"Not_A Brand\";v=\"24\"",
    ),
    ("sec-ch-ua-mobile", "?0"),
    ("sec-ch-ua-platform", "\"Linux\""),
    ("upgrade-insecure-requests", "1"),
    (
        "user-agent",
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) \
         Chrome/131.0.0.0 Safari/537.36",
    ),
    (
        "accept",
        "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,\
         image/apng,*/*;q=0.8",
    ),
    ("sec-fetch-site", "same-origin"),
    ("sec-fetch-mode", "navigate"),
    ("sec-fetch-dest", "document"),
    ("accept-encoding", "gzip, deflate, br, zstd"),
    ("accept-language", "en-US,en;q=0.9"),
    ("cookie", "session=4f1c2a9e; theme=dark"),
];

#[inline(never)]
fn decode_many(section: &[u8], n: usize, decoder: &mut Decoder, head: &mut Head) -> usize {
    let mut fields = 0;
    for _ in 0..n {
        decode_request(decoder, black_box(section), 16 * 1024, head).expect("valid head");
        fields += head.fields.len();
    }
    fields
}

#[inline(never)]
fn encode_many(n: usize, section: &mut Vec<u8>, out: &mut Vec<u8>) -> usize {
    let mut encoder = Encoder::new();
    let mut bytes = 0;
    for _ in 0..n {
        section.clear();
        out.clear();
        encoder.begin(section);
        encoder.status(200, section);
        encoder.field(b"server", b"volt", Indexing::Remember, section);
        let date = black_box(&b"Thu, 26 Nov 2026 21:00:00 GMT"[..]);
        encoder.field(b"date", date, Indexing::Remember, section);
        encoder.field(b"content-type", b"text/plain", Indexing::Remember, section);
        encoder.content_length(black_box(13), section);
        frame::write_headers(section, out);
        frame::write_data_header(13, out);
        bytes += out.len();
    }
    bytes
}

/// Decodes `block` `n` times with `decode`, counting the bytes of names and values.
#[inline(never)]
fn fields_many(block: &[u8], n: usize, mut decode: impl FnMut(&[u8], &mut usize)) -> usize {
    let mut bytes = 0;
    for _ in 0..n {
        decode(black_box(block), &mut bytes);
    }
    bytes
}

/// The browser's request as a QPACK section, as a client encodes it for us.
fn qpack_section() -> Vec<u8> {
    let mut section = Vec::new();
    let mut encoder = Encoder::new();
    encoder.begin(&mut section);
    for (name, value) in BROWSER {
        let indexing = Indexing::for_name(name.as_bytes());
        encoder.field(name.as_bytes(), value.as_bytes(), indexing, &mut section);
    }
    section
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let what = args.get(1).map_or("decode", String::as_str);
    let n: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1000);
    match what {
        "decode" => {
            let section = qpack_section();
            let raw: usize = BROWSER.iter().map(|(n, v)| n.len() + v.len()).sum();
            let mut decoder = Decoder::new();
            let mut head = Head::default();
            let fields = decode_many(&section, n, &mut decoder, &mut head);
            println!(
                "decoded {n} heads of {} bytes ({raw} bytes of names and values), {fields} fields",
                section.len()
            );
        }
        "encode" => {
            let (mut section, mut out) = (Vec::new(), Vec::new());
            let bytes = encode_many(n, &mut section, &mut out);
            println!("encoded {n} response heads, {bytes} bytes in all");
        }
        "qpack" => {
            let section = qpack_section();
            let mut decoder = Decoder::new();
            let bytes = fields_many(&section, n, |s, bytes| {
                let count = |f: volt_proto::h3::qpack::Field<'_>| {
                    *bytes += f.name.len() + f.value.len();
                    Ok(())
                };
                decoder.decode(s, count).expect("valid section");
            });
            println!(
                "QPACK: {n} sections of {} bytes, {bytes} bytes out",
                section.len()
            );
        }
        "hpack" => {
            let mut block = Vec::new();
            let mut encoder = hpack::Encoder::new();
            encoder.begin(&mut block);
            for (name, value) in BROWSER {
                let indexing = match hpack::Indexing::for_name(name.as_bytes()) {
                    hpack::Indexing::Never => hpack::Indexing::Never,
                    _ => hpack::Indexing::Once,
                };
                encoder.field(name.as_bytes(), value.as_bytes(), indexing, &mut block);
            }
            let mut decoder = hpack::Decoder::new(4096);
            let bytes = fields_many(&block, n, |b, bytes| {
                let count = |name: &[u8], value: &[u8]| {
                    *bytes += name.len() + value.len();
                    Ok(())
                };
                decoder.decode(b, count).expect("valid block");
            });
            println!(
                "HPACK: {n} blocks of {} bytes, {bytes} bytes out",
                block.len()
            );
        }
        _ => eprintln!("usage: h3_cost decode|encode|qpack|hpack [count]"),
    }
}
