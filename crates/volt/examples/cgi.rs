//! CGI scripts (RFC 3875) served from a directory, beside ordinary routes.
//!
//! `cargo run -p volt --example cgi -- --dir DIR` serves the executables in `DIR` under
//! `/cgi-bin/`; without `--dir` it writes a demo script to a fresh directory first. Then:
//!
//! ```sh
//! curl 'localhost:8080/cgi-bin/hello.sh/some/path?name=you'
//! curl --data-binary 'echo me' localhost:8080/cgi-bin/hello.sh
//! ```

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;

use volt::{get, Cgi, Router, Server};

/// The demo script: its meta-variables, then the request body back.
const HELLO: &str = r#"#!/bin/sh
printf 'Content-Type: text/plain\n\n'
echo "Hello from $SCRIPT_NAME (CGI: $GATEWAY_INTERFACE, $SERVER_PROTOCOL)"
echo "PATH_INFO=$PATH_INFO QUERY_STRING=$QUERY_STRING"
echo "REMOTE_ADDR=$REMOTE_ADDR:$REMOTE_PORT SERVER=$SERVER_NAME:$SERVER_PORT"
if [ -n "$CONTENT_LENGTH" ]; then
    echo "your $CONTENT_LENGTH-byte body:"
    cat
    echo
fi
"#;

fn demo_dir() -> std::io::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("volt-cgi-example-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let script = dir.join("hello.sh");
    std::fs::write(&script, HELLO)?;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755))?;
    Ok(dir)
}

fn main() -> std::io::Result<()> {
    let mut addr = "127.0.0.1:8080".to_string();
    let mut dir = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--addr" => addr = args.next().expect("--addr needs HOST:PORT"),
            "--dir" => dir = Some(PathBuf::from(args.next().expect("--dir needs a directory"))),
            other => {
                eprintln!("unknown argument `{other}`; usage: cgi [--addr HOST:PORT] [--dir DIR]");
                std::process::exit(2);
            }
        }
    }
    let dir = match dir {
        Some(dir) => dir,
        None => demo_dir()?,
    };
    let cgi = Cgi::new(&dir)
        .timeout(Duration::from_secs(10))
        .max_processes(32);
    let app = Router::new()
        .route("/", get(|_req| async { "try /cgi-bin/hello.sh\n" }))
        .route_service("/cgi-bin/{*script}", cgi);
    let server = Server::bind(addr.as_str())?;
    println!(
        "serving {} on http://{}/cgi-bin/ (I/O: {})",
        dir.display(),
        server.local_addr(),
        volt::rt::IoBackend::auto()?
    );
    server.serve(app)
}
