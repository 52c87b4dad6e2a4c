//! Fetches URLs with volt's client and prints each status, its headers and the body, streamed
//! to stdout as it arrives. Several URLs of one origin share a connection.
//!
//! `cargo run -p volt --example fetch -- http://127.0.0.1:8080/json https://example.com/`

use std::io::Write;

fn main() -> std::io::Result<()> {
    let urls: Vec<String> = std::env::args().skip(1).collect();
    if urls.is_empty() {
        eprintln!("usage: fetch URL...");
        std::process::exit(2);
    }
    volt::rt::block_on(async {
        let client = volt::Client::new();
        for url in &urls {
            let mut response = client.get(url).send().await?;
            println!("{:?} {}", response.version(), response.status());
            for (name, value) in response.headers() {
                println!("{name}: {}", String::from_utf8_lossy(value.as_bytes()));
            }
            println!();
            let mut out = std::io::stdout().lock();
            while let Some(chunk) = response.chunk().await? {
                out.write_all(&chunk)?;
            }
            writeln!(out)?;
        }
        Ok(())
    })
}
