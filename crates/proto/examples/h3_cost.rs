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
//! ```
//!
//! As in `parse_speed`, the callgrind form counts only the instructions inside the loop, so
//! `Collected` divided by the count is the instructions per head. The request is Chrome's for
//! a page (sixteen fields, a cookie), encoded as a client must encode it for a server that
//! allows no dynamic table: static references and literals, Huffman-coded where shorter.
//! The response is the techempower example's plaintext answer: `:status 200`, `server`,
//! `date`, `content-type`, `content-length`.

use std::hint::black_box;

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

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let what = args.get(1).map_or("decode", String::as_str);
    let n: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1000);
    match what {
        "decode" => {
            let mut section = Vec::new();
            let mut encoder = Encoder::new();
            encoder.begin(&mut section);
            for (name, value) in BROWSER {
                let indexing = Indexing::for_name(name.as_bytes());
                encoder.field(name.as_bytes(), value.as_bytes(), indexing, &mut section);
            }
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
        _ => eprintln!("usage: h3_cost decode|encode [count]"),
    }
}
