//! What each compression level costs and saves on typical dynamic answers: the table in
//! `crates/http/src/coding/encode.rs`, which chose `Compress`'s levels.
//!
//! ```text
//! cargo build --release -p volt-http --example compress_levels
//! target/release/examples/compress_levels sizes                  # compressed sizes
//! valgrind --tool=callgrind --toggle-collect='*compress_many*' --callgrind-out-file=/dev/null \
//!     target/release/examples/compress_levels gzip 5 json 100    # instructions (÷ 100 ÷ bytes)
//! ```
//!
//! Three payloads: `tiny` (`{"ok":true}`: what the encoder's setup costs), `json` (20 user records of 8 fields, 4.6 KB: `json_speed`'s `api`) and `html`
//! (a 12 KB page: a header, a table of 100 rows with links, a footer). Each body is
//! compressed whole by a fresh encoder, as `Compress` does a body in memory: gzip through
//! flate2 (miniz_oxide), brotli with `Compress`'s window (2^18) and buffer (4 KiB).

use std::hint::black_box;
use std::io::Write;

fn json() -> Vec<u8> {
    let users: Vec<String> = (0..20)
        .map(|i| {
            format!(
                r#"{{"id":{},"name":"User Number {i}","email":"user.{i}@example.com","active":{},"score":{},"bio":"Writes Rust at work and at home; likes long walks, short builds and clear logs.","tags":["admin","beta","europe"],"manager":{}}}"#,
                1_000_000 + i,
                i % 3 != 0,
                i as f64 * 1.375,
                if i % 2 == 0 { "7" } else { "null" }
            )
        })
        .collect();
    format!("[{}]", users.join(",")).into_bytes()
}

fn html() -> Vec<u8> {
    let mut page = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Orders</title>\
         <link rel=\"stylesheet\" href=\"/static/site.css\"></head><body><header><nav>\
         <a href=\"/\">Home</a> <a href=\"/orders\">Orders</a> <a href=\"/account\">Account</a>\
         </nav></header><main><h1>Your orders</h1><table class=\"orders\"><thead><tr><th>Order</th>\
         <th>Date</th><th>Status</th><th>Total</th></tr></thead><tbody>\n",
    );
    for i in 0..100 {
        let status = ["shipped", "pending", "delivered", "cancelled"][i % 4];
        page.push_str(&format!(
            "<tr class=\"row-{status}\"><td><a href=\"/orders/{}\">#{}</a></td><td>2026-{:02}-{:02}</td>\
             <td>{status}</td><td>{}.{:02} EUR</td></tr>\n",
            40_000 + i * 7,
            40_000 + i * 7,
            1 + i % 12,
            1 + i % 28,
            10 + (i * 37) % 400,
            (i * 13) % 100
        ));
    }
    page.push_str(
        "</tbody></table></main><footer>&copy; 2026 Example Shop</footer></body></html>\n",
    );
    page.into_bytes()
}

fn compress(coding: &str, level: u32, data: &[u8]) -> Vec<u8> {
    match coding {
        "gzip" => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(level));
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
        "br" => {
            let mut e = brotli::CompressorWriter::new(Vec::new(), 4096, level, 18);
            e.write_all(data).unwrap();
            e.into_inner()
        }
        other => panic!("unknown coding {other}"),
    }
}

#[inline(never)]
fn compress_many(coding: &str, level: u32, data: &[u8], count: usize) -> usize {
    (0..count)
        .map(|_| compress(coding, level, black_box(data)).len())
        .sum()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let payload = |name: &str| match name {
        "json" => json(),
        "html" => html(),
        // What any body costs: the encoder's setup and end.
        "tiny" => b"{\"ok\":true}".to_vec(),
        other => panic!("unknown payload {other}"),
    };
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["sizes"] | [] => {
            let (j, h) = (json(), html());
            println!("json {} bytes, html {} bytes", j.len(), h.len());
            for (coding, levels) in [("gzip", &[1, 4, 5, 6, 9][..]), ("br", &[1, 3, 4, 5, 6][..])] {
                for &level in levels {
                    let (cj, ch) = (compress(coding, level, &j), compress(coding, level, &h));
                    println!("{coding} {level}: json {} html {}", cj.len(), ch.len());
                }
            }
        }
        [coding, level, name, count] => {
            let data = payload(name);
            let n: usize = count.parse().expect("a count");
            let total = compress_many(coding, level.parse().expect("a level"), &data, n);
            println!(
                "{coding} {level} {name}: {} -> {} bytes",
                data.len(),
                total / n
            );
        }
        _ => eprintln!("usage: compress_levels [sizes | CODING LEVEL tiny|json|html COUNT]"),
    }
}
