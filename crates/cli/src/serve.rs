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
  volt serve site --no-listing    # directories without an index page answer 404
  volt serve site --index index.htm --index default.html   # index pages, tried in order
  volt serve site --cgi-bin cgi   # and the scripts in ./cgi at /cgi-bin/NAME (RFC 3875)
  volt serve dist --precompressed --compress   # app.js.br/.gz if there, else compress
  volt serve dist --cache-control 'public, max-age=3600'
  volt serve dist --cache-control-for html=no-cache --cache-control-for 'js=max-age=31536000'
  volt serve hls --mime ts=video/mp2t --mime m3u8=application/vnd.apple.mpegurl")]
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

    /// Answer 404 for a directory without an index page instead of listing its entries
    #[arg(long)]
    no_listing: bool,

    /// A directory's index page, in place of index.html (repeatable: tried in order)
    #[arg(long = "index", value_name = "NAME", value_parser = index_name)]
    index_names: Vec<String>,

    /// Serve files named *.EXT with this Content-Type (repeatable)
    #[arg(long = "mime", value_name = "EXT=TYPE", value_parser = mime_type)]
    mime_types: Vec<(String, String)>,

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

    /// Send this Cache-Control with files named *.EXT instead (repeatable)
    #[arg(long = "cache-control-for", value_name = "EXT=VALUE", value_parser = cache_control_for)]
    cache_control_by_ext: Vec<(String, String)>,
}

// The checks below refuse, as usage errors, the values `ServeDir`'s builder methods would
// panic on.

/// A value `ServeDir::cache_control` takes.
fn header_value(value: &str) -> Result<String, String> {
    match volt_http::HeaderValue::from_str(value) {
        Ok(_) => Ok(value.to_owned()),
        Err(_) => Err("not a valid header value (control characters?)".to_owned()),
    }
}

/// A name `ServeDir::index_names` takes: one file name.
fn index_name(name: &str) -> Result<String, String> {
    let one_segment = !matches!(name, "" | "." | "..") && !name.contains(['/', '\\']);
    match one_segment {
        true => Ok(name.to_owned()),
        false => Err("not a file name (no `/`, `\\`, `.` or `..`)".to_owned()),
    }
}

/// `EXT=TYPE`, as `ServeDir::mime_type` takes them.
fn mime_type(pair: &str) -> Result<(String, String), String> {
    let (ext, content_type) = by_extension(pair)?;
    let header = volt_http::HeaderValue::from_str(&content_type).ok();
    match header.is_some_and(|h| h.to_str().is_ok()) && content_type.contains('/') {
        true => Ok((ext, content_type)),
        false => Err("TYPE is not a media type (`type/subtype`, visible ASCII)".to_owned()),
    }
}

/// `EXT=VALUE`, as `ServeDir::cache_control_for` takes them.
fn cache_control_for(pair: &str) -> Result<(String, String), String> {
    let (ext, value) = by_extension(pair)?;
    Ok((ext, header_value(&value)?))
}

/// `EXT=VALUE` split at its first `=` (a value may hold more), the extension checked.
fn by_extension(pair: &str) -> Result<(String, String), String> {
    let Some((ext, value)) = pair.split_once('=') else {
        return Err("expected EXT=VALUE".to_owned());
    };
    if ext.is_empty() || ext.contains(['.', '/']) {
        return Err(format!(
            "`{ext}` is not an extension (without the dot: `css`)"
        ));
    }
    Ok((ext.to_owned(), value.to_owned()))
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
    if !args.index_names.is_empty() {
        let names: Vec<&str> = args.index_names.iter().map(String::as_str).collect();
        files = files.index_names(&names);
    }
    for (ext, content_type) in &args.mime_types {
        files = files.mime_type(ext, content_type);
    }
    if let Some(value) = &args.cache_control {
        files = files.cache_control(value);
    }
    for (ext, value) in &args.cache_control_by_ext {
        files = files.cache_control_for(ext, value);
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
