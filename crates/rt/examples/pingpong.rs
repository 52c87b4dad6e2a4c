//! Echo server for the TCP ping-pong benchmark (as monoio's): every connection reads what
//! arrives and writes it back. One listener per worker with `SO_REUSEPORT`.
//!
//! `cargo run --release -p volt-rt --example pingpong -- --addr 127.0.0.1:9000 --workers 1`

use volt_rt::net::{ListenOptions, TcpStream};

fn main() {
    let (addr, workers) = args();
    let rt = volt_rt::Runtime::builder()
        .workers(workers)
        .build()
        .unwrap();
    eprintln!(
        "pingpong: listening on {addr} with {workers} worker(s), on {}",
        rt.handle().io_backend()
    );
    rt.run(|_| {
        let addr = addr.clone();
        async move {
            let listener = ListenOptions::new()
                .reuse_port(true)
                .bind(addr.as_str())
                .unwrap();
            loop {
                let (conn, _) = listener.accept().await.unwrap();
                volt_rt::spawn(echo(conn));
            }
        }
    });
}

async fn echo(conn: TcpStream) {
    let _ = conn.set_nodelay(true);
    let mut buf = vec![0u8; 4096];
    loop {
        match conn.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if conn.write_all(&buf[..n]).await.is_err() {
                    return;
                }
            }
        }
    }
}

fn args() -> (String, usize) {
    let mut addr = "127.0.0.1:9000".to_string();
    let mut workers = 1;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--addr" => addr = args.next().expect("--addr needs a value"),
            "--workers" => {
                workers = args
                    .next()
                    .expect("--workers needs a value")
                    .parse()
                    .unwrap()
            }
            other => panic!("unknown argument {other}; use --addr HOST:PORT --workers N"),
        }
    }
    (addr, workers)
}
