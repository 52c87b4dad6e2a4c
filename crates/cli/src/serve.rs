//! `volt serve`: a directory's files over HTTP, on volt-http's `ServeDir`, and CGI scripts
//! under `/cgi-bin/` with `Cgi` if asked.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use volt_http::{Cgi, Compress, Router, ServeDir, Server, Service};

#[derive(Args, Debug)]
#[command(after_help = "\
Examples:
  volt serve                      # the current directory at http://127.0.0.1:8000/
  volt serve public --addr 0.0.0.0:8080 --workers 4
  volt serve site --no-listing    # directories without index.html answer 404
  volt serve site --cgi-bin cgi   # and the scripts in ./cgi at /cgi-bin/NAME (RFC 3875)
  volt serve dist --precompressed --compress   # app.js.br/.gz if there, else compress
  volt serve dist --cache-control 'public, max-age=3600'")]
pub(crate) struct ServeArgs {
    /// The directory to serve
    #[arg(value_name = "DIR", default_value = ".")]
    dir: PathBuf,

    /// Address to listen on (port 0 picks a free port)
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:8000")]
    addr: String,

    /// Worker threads, one event loop each [default: the CPUs available]
    #[arg(short = 'w', long, value_name = "N")]
    workers: Option<usize>,

    /// Answer 404 for a directory without index.html instead of listing its entries
    #[arg(long)]
    no_listing: bool,

    /// Run the executables in this directory as CGI scripts at /cgi-bin/NAME (RFC 3875)
    #[arg(long, value_name = "DIR")]
    cgi_bin: Option<PathBuf>,

    /// Serve NAME.br or NAME.gz in NAME's place to clients that accept that coding
    #[arg(long)]
    precompressed: bool,

    /// Compress text answers (gzip or br, as the client accepts) on the fly
    #[arg(long)]
    compress: bool,

    /// Send this Cache-Control with files (200, 206, 304), not with errors or listings
    #[arg(long, value_name = "VALUE", value_parser = header_value)]
    cache_control: Option<String>,
}

/// A value `ServeDir::cache_control` takes: refused here, as a usage error, rather than
/// panicking there.
fn header_value(value: &str) -> Result<String, String> {
    match volt_http::HeaderValue::from_str(value) {
        Ok(_) => Ok(value.to_owned()),
        Err(_) => Err("not a valid header value (control characters?)".to_owned()),
    }
}

/// Serves until Ctrl-C (or SIGTERM), then shuts down gracefully. A directory that is not one
/// is a usage error (exit code 2); an address that cannot be bound, or a failure while
/// serving, exits with 1.
pub(crate) fn serve(args: ServeArgs) -> ExitCode {
    for dir in std::iter::once(&args.dir).chain(&args.cgi_bin) {
        if !dir.is_dir() {
            eprintln!("error: `{}` is not a directory", dir.display());
            return ExitCode::from(2);
        }
    }
    let backend = match volt_rt::IoBackend::auto() {
        Ok(backend) => backend,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let mut server = match Server::bind(args.addr.as_str()) {
        Ok(server) => server,
        Err(e) => {
            eprintln!("error: binding {}: {e}", args.addr);
            return ExitCode::from(1);
        }
    };
    if let Some(n) = args.workers {
        server = server.workers(n);
    }
    let workers = args
        .workers
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    let cgi = match &args.cgi_bin {
        Some(scripts) => format!("; CGI scripts of {} at /cgi-bin/", scripts.display()),
        None => String::new(),
    };
    // Written, not printed: a reader that went away (`volt serve | head -1`) must not stop
    // the server.
    let mut out = std::io::stdout();
    let _ = writeln!(
        out,
        "volt serve: {} at http://{}/ with {workers} worker(s), on {backend}{cgi} (Ctrl-C stops)",
        args.dir.display(),
        server.local_addr()
    );
    let _ = out.flush();
    let mut files = ServeDir::new(args.dir)
        .listing(!args.no_listing)
        .precompressed(args.precompressed);
    if let Some(value) = &args.cache_control {
        files = files.cache_control(value);
    }
    let served = match args.cgi_bin {
        Some(scripts) => {
            let app = Router::new()
                .route_service("/cgi-bin/{*script}", Cgi::new(scripts))
                .route_service("/{*path}", files.clone())
                .route_service("/", files);
            serve_app(server, app, args.compress)
        }
        None => serve_app(server, files, args.compress),
    };
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

/// Serves `app`, its answers compressed if `compress`.
fn serve_app(server: Server, app: impl Service, compress: bool) -> std::io::Result<()> {
    match compress {
        true => server.serve(Compress::new(app)),
        false => server.serve(app),
    }
}
