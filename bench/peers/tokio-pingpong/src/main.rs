//! The tokio half of the ping-pong runtime comparison: an echo server. Each connection reads up to
//! 100 bytes and writes back what it read, until the peer closes. (`--msg-size N` changes the read
//! size; the client's message size should match.)
//!
//! Runtime shape as in `peer_common::tokio_workers`: by default a `current_thread` runtime per
//! worker with `SO_REUSEPORT`, `--flavor multi` for one work-stealing runtime.

use std::io;

use peer_common::tokio_workers::{self, Flavor};
use peer_common::Args;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn main() -> io::Result<()> {
    let args = Args::parse();
    let msg_size: usize = args.get_or("msg-size", 100);
    peer_common::announce("tokio-pingpong", &args, Flavor::from_args(&args).describe());
    tokio_workers::run(&args, move |stream| async move {
        let _ = echo(stream, msg_size).await;
    })
}

async fn echo(mut stream: TcpStream, msg_size: usize) -> io::Result<()> {
    let mut buf = vec![0u8; msg_size];
    loop {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        stream.write_all(&buf[..n]).await?;
    }
}
