//! tokio's `examples/tinyhttp.rs` ported to volt-rt: a hand-rolled HTTP/1.1 server with
//! `httparse`, answering `/plaintext` and `/json`. It is the runtime comparison app (the same
//! app on tokio lives in bench/peers), not volt's HTTP server.
//!
//! `cargo run --release -p volt-rt --example tinyhttp -- --addr 127.0.0.1:8080 --workers 1`

use std::fmt::Write as _;
use std::time::SystemTime;

use volt_rt::net::{ListenOptions, TcpStream};

fn main() {
    let (addr, workers) = args();
    let rt = volt_rt::Runtime::builder()
        .workers(workers)
        .build()
        .unwrap();
    eprintln!(
        "tinyhttp: listening on {addr} with {workers} worker(s), on {}",
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
                volt_rt::spawn(serve(conn));
            }
        }
    });
}

/// Reads requests, answers each complete one into `out`, writes `out` once per read.
async fn serve(conn: TcpStream) {
    let _ = conn.set_nodelay(true);
    let mut input: Vec<u8> = Vec::with_capacity(4096);
    let mut out: Vec<u8> = Vec::with_capacity(4096);
    loop {
        match conn.read_buf(&mut input).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let mut consumed = 0;
        loop {
            let mut headers = [httparse::EMPTY_HEADER; 16];
            let mut req = httparse::Request::new(&mut headers);
            match req.parse(&input[consumed..]) {
                Ok(httparse::Status::Complete(n)) => {
                    respond(req.path.unwrap_or("/"), &mut out);
                    consumed += n;
                }
                Ok(httparse::Status::Partial) => break,
                Err(_) => return,
            }
        }
        input.drain(..consumed);
        if conn.write_all(&out).await.is_err() {
            return;
        }
        out.clear();
    }
}

fn respond(path: &str, out: &mut Vec<u8>) {
    let (status, content_type, body) = match path {
        "/plaintext" => ("200 OK", "text/plain", "Hello, World!".to_string()),
        "/json" => (
            "200 OK",
            "application/json",
            format!("{{\"message\":\"{}\"}}", "Hello, World!"),
        ),
        _ => ("404 Not Found", "text/plain", String::new()),
    };
    let mut head = String::with_capacity(160);
    let _ = write!(
        head,
        "HTTP/1.1 {status}\r\nServer: volt-tinyhttp\r\nContent-Type: {content_type}\r\n\
         Content-Length: {}\r\nDate: {}\r\n\r\n",
        body.len(),
        http_date(SystemTime::now())
    );
    out.extend_from_slice(head.as_bytes());
    out.extend_from_slice(body.as_bytes());
}

/// IMF-fixdate, computed per response as tokio's tinyhttp does (it caches per second; so do we).
fn http_date(now: SystemTime) -> String {
    thread_local! {
        static CACHE: std::cell::RefCell<(u64, String)> = const { std::cell::RefCell::new((0, String::new())) };
    }
    let secs = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if c.0 != secs || c.1.is_empty() {
            *c = (secs, format_date(secs));
        }
        c.1.clone()
    })
}

fn format_date(secs: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = secs / 86400;
    let rem = secs % 86400;
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{}, {:02} {} {} {:02}:{:02}:{:02} GMT",
        DAYS[(days % 7) as usize],
        day,
        MONTHS[(month - 1) as usize],
        year,
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

fn args() -> (String, usize) {
    let mut addr = "127.0.0.1:8080".to_string();
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
