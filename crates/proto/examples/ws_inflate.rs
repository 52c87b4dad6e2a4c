//! What receiving a compressed WebSocket message costs: permessage-deflate's inflating, through
//! `Decoder::with_deflate`, for small chat-like text messages and large binary ones, with the
//! peer's context kept across messages (the usual case) or reset after each.
//!
//! ```text
//! cargo build --release -p volt-proto --example ws_inflate
//! valgrind --tool=callgrind --toggle-collect='*decode_many*' --callgrind-out-file=/dev/null \
//!     target/release/examples/ws_inflate small takeover 1000     # Ir ÷ 1000 per message
//! ```
//!
//! `small` is a 180-byte JSON chat message (a counter in it changes, so each differs);
//! `large` is 64 KiB of log-like text. The messages are compressed beforehand, outside the
//! counted loop, as a server would send them (level 6).

use std::hint::black_box;

use bytes::BytesMut;
use volt_proto::ws::{encode_compressed_frame, Decoder, DeflateParams, Opcode, Role};

fn message(kind: &str, i: usize) -> Vec<u8> {
    match kind {
        "small" => format!(
            r#"{{"type":"message","room":"general","from":"user{}","seq":{i},"text":"hello there, this is message number {i} of the chat","ts":1764201600{:03}}}"#,
            i % 17,
            i % 1000
        )
        .into_bytes(),
        _ => (0..)
            .flat_map(|line: usize| {
                format!("2026-11-26T23:{:02}:{:02} worker {} served GET /api/items/{} in {} us\n",
                    (line / 60) % 60, line % 60, line % 4, (line * 7919 + i) % 100_000, line % 977)
                .into_bytes()
            })
            .take(64 * 1024)
            .collect(),
    }
}

#[inline(never)]
fn decode_many(decoder: &mut Decoder, wire: &[Vec<u8>]) -> usize {
    let mut total = 0;
    for frame in wire {
        let mut buf = BytesMut::from(&frame[..]);
        let message = decoder.decode(&mut buf).unwrap().unwrap();
        total += black_box(message).clone_len();
    }
    total
}

trait Len {
    fn clone_len(&self) -> usize;
}

impl Len for volt_proto::ws::Incoming {
    fn clone_len(&self) -> usize {
        match self {
            volt_proto::ws::Incoming::Text(b) | volt_proto::ws::Incoming::Binary(b) => b.len(),
            _ => 0,
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let kind = args.get(1).map_or("small", |s| s.as_str());
    let reset = args.get(2).is_some_and(|s| s == "reset");
    let count: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(1000);
    let params = DeflateParams {
        server_no_context_takeover: reset,
        client_no_context_takeover: reset,
        server_max_window_bits: 15,
        client_max_window_bits: 15,
    };
    let mut compressor = params.compressor(Role::Server, 6);
    let wire: Vec<Vec<u8>> = (0..count)
        .map(|i| {
            let mut packed = Vec::new();
            compressor.compress(&message(kind, i), &mut packed);
            let mut frame = Vec::new();
            encode_compressed_frame(&mut frame, Opcode::Binary, &packed, None);
            frame
        })
        .collect();
    let mut decoder = Decoder::with_deflate(Role::Client, 1 << 20, params);
    let total = decode_many(&mut decoder, &wire);
    let packed: usize = wire.iter().map(Vec::len).sum();
    println!("{count} messages, {total} bytes inflated from {packed}");
}
