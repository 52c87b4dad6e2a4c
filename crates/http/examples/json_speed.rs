//! Cost of a JSON response body: [`Response::json`] (volt's serializer) against
//! `serde_json::to_writer` into a reused `Vec`, the fastest way to use serde_json.
//!
//! ```text
//! cargo build --release -p volt-http --example json_speed
//! valgrind --tool=callgrind --toggle-collect='*serialize_many*' --callgrind-out-file=/dev/null \
//!     target/release/examples/json_speed volt api 1000
//! cargo run --release -p volt-http --example json_speed                  # wall-clock timings
//! ```
//!
//! Two payloads: `techempower` (`{"message":"Hello, World!"}`) and `api` (20 user records
//! of 8 fields: numbers, a bool, short strings, an 80-character one, a list of tags; 4.6 KB).
//! The callgrind form counts only the instructions inside `serialize_many`, so `Collected`
//! divided by the count is the instructions per body.

use std::hint::black_box;
use std::time::Instant;

use serde::Serialize;
use volt_http::Response;

#[derive(Serialize)]
struct Message {
    message: &'static str,
}

#[derive(Serialize)]
struct User {
    id: u64,
    name: String,
    email: String,
    active: bool,
    score: f64,
    bio: String,
    tags: Vec<&'static str>,
    manager: Option<u64>,
}

fn users() -> Vec<User> {
    (0..20)
        .map(|i| User {
            id: 1_000_000 + i,
            name: format!("User Number {i}"),
            email: format!("user.{i}@example.com"),
            active: i % 3 != 0,
            score: i as f64 * 1.375,
            bio: "Writes Rust at work and at home; likes long walks, short builds and clear logs."
                .into(),
            tags: vec!["admin", "beta", "europe"],
            manager: (i % 2 == 0).then_some(7),
        })
        .collect()
}

#[inline(never)]
fn serialize_many<T: Serialize>(how: &str, value: &T, count: usize) -> usize {
    let mut out = Vec::new();
    let mut bytes = 0;
    for _ in 0..count {
        if how == "volt" {
            let r = Response::json(black_box(value));
            bytes += r.body().as_bytes().map_or(0, |b| b.len());
        } else {
            out.clear();
            serde_json::to_writer(&mut out, black_box(value)).expect("serializes");
            bytes += out.len();
        }
    }
    bytes
}

fn run<T: Serialize>(how: &str, payload: &str, value: &T, count: usize) {
    let start = Instant::now();
    let bytes = black_box(serialize_many(how, value, count));
    let each = start.elapsed().as_nanos() as f64 / count as f64;
    println!(
        "{how:>10} {payload:>11}: {each:8.1} ns per body ({} bytes)",
        bytes / count
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let message = Message {
        message: "Hello, World!",
    };
    let users = users();
    if let [how, payload, count] = &args[..] {
        let count = count.parse().expect("a count");
        match payload.as_str() {
            "techempower" => run(how, payload, &message, count),
            "api" => run(how, payload, &users, count),
            other => panic!("unknown payload {other}"),
        }
        return;
    }
    for how in ["volt", "serde_json"] {
        run(how, "techempower", &message, 2_000_000);
        run(how, "api", &users, 20_000);
    }
}
