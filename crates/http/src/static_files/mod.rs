//! Static files: [`ServeDir`] serves a directory's files with validators, conditional
//! requests and byte ranges, redirects and index pages for directories, and HTML listings.
//!
//! `path` makes a request path safe to look up, `conditional` decides what the request's
//! header fields ask for and `ranges` which parts its `Range` field gets, `multipart` lays
//! several parts out as multipart/byteranges, `listing` writes directory pages, `mime` names
//! types, `file_body` reads a body off the worker. This module does the lookup (on the
//! blocking pool) and builds the response.

mod conditional;
mod file_body;
mod listing;
mod mime;
mod multipart;
mod path;
mod ranges;

use std::ffi::{OsStr, OsString};
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use http::header::{HeaderName, HeaderValue};
use http::{Method, StatusCode};

use self::conditional::{Conditions, Outcome, Validators};
use self::file_body::{FileChunks, Piece, CHUNK};
use self::listing::Entry;
use self::mime::{ByExtension, Types};
use self::multipart::Multipart;
use crate::body::Body;
use crate::coding::{Accepted, Coding};
use crate::response::{IntoResponse, Response};
use crate::service::Service;
use crate::{Error, Request};

/// A [`Service`] serving the files under a directory, for GET and HEAD.
///
/// Used as the whole app (`Server::bind(addr)?.serve(ServeDir::new("public"))`), or mounted
/// with [`Router::route_service`](crate::Router::route_service) on a route ending in a
/// catch-all, whose value is then the path looked up under the directory:
///
/// ```no_run
/// use volt_http::{get, Router, ServeDir, Server};
///
/// let app = Router::new()
///     .route("/api/hello", get(|_req| async { "hello" }))
///     .route_service("/static/{*path}", ServeDir::new("public"));
/// Server::bind("127.0.0.1:8080")?.serve(app)?;
/// # Ok::<(), std::io::Error>(())
/// ```
///
/// A file is answered with `Content-Type` (by extension), `Content-Length`, `Last-Modified`,
/// a strong `ETag` and `Accept-Ranges: bytes`; conditional requests (RFC 9110 §13) and byte
/// ranges (§14) are honoured, several ranges with multipart/byteranges (§14.6). A directory
/// asked for without its trailing `/` is redirected (301) to it; with it, its index page
/// (`index.html`, or as [`ServeDir::index_names`] says) is served, else a listing (unless
/// [`ServeDir::listing`] turned them off: 404). Paths with `.` or `..` segments, empty
/// segments, encoded slashes, backslashes or NULs are refused (400); dotfiles answer 404
/// unless [`ServeDir::dotfiles`]; so does a symbolic link that leads out of the directory,
/// unless [`ServeDir::follow_links_out`]. Files are read on volt-rt's blocking pool, never on
/// a worker. With [`ServeDir::precompressed`], a `name.br` or `name.gz` beside `name` is
/// served in its place to clients that accept that coding; with [`ServeDir::cache_control`]
/// and [`ServeDir::cache_control_for`], file answers carry a `Cache-Control`. Types come from
/// a built-in table of the common web types, which [`ServeDir::mime_type`] and
/// [`ServeDir::default_type`] change.
#[derive(Clone, Debug)]
pub struct ServeDir {
    root: Arc<Path>,
    options: Options,
    /// What is not a flag: shared with clones and lookups, copied only by a builder method.
    settings: Arc<Settings>,
}

#[derive(Clone, Copy, Debug)]
struct Options {
    listing: bool,
    dotfiles: bool,
    follow_links_out: bool,
    precompressed: bool,
}

#[derive(Clone, Debug)]
struct Settings {
    /// The names a directory's page may have, in the order they are tried: each one checked
    /// by `path::check_segment`, so it names an entry of the directory and nothing else.
    index_names: Vec<OsString>,
    types: Types,
    /// The `Cache-Control` of file answers whose extension `cache_control_by_ext` lacks.
    cache_control: Option<HeaderValue>,
    cache_control_by_ext: ByExtension,
}

impl ServeDir {
    /// Serves the files under `root` (looked up on each request: it need not exist yet).
    pub fn new(root: impl Into<PathBuf>) -> ServeDir {
        ServeDir {
            root: root.into().into(),
            options: Options {
                listing: true,
                dotfiles: false,
                follow_links_out: false,
                precompressed: false,
            },
            settings: Arc::new(Settings {
                index_names: vec!["index.html".into()],
                types: Types::default(),
                cache_control: None,
                cache_control_by_ext: ByExtension::default(),
            }),
        }
    }

    /// The settings to change, copied first if a clone shares them.
    fn settings(&mut self) -> &mut Settings {
        Arc::make_mut(&mut self.settings)
    }

    /// Whether a directory without an index page is answered with a listing of its entries
    /// (default: yes). Off, it answers 404: there is nothing to show at that address.
    pub fn listing(mut self, on: bool) -> ServeDir {
        self.options.listing = on;
        self
    }

    /// Whether files and directories whose name starts with `.` are served and listed
    /// (default: no, they answer 404, as if absent: `.git`, `.env` and the like are rarely
    /// meant to be published).
    pub fn dotfiles(mut self, on: bool) -> ServeDir {
        self.options.dotfiles = on;
        self
    }

    /// Whether a symbolic link may lead out of the directory (default: no). Off, each path is
    /// resolved (`canonicalize`) and must stay under the directory's own resolved path, or
    /// it answers 404. The check is made at lookup time: a tree that others can change while
    /// it is served (swapping a directory for a link between the check and the open) is not
    /// defended against.
    pub fn follow_links_out(mut self, on: bool) -> ServeDir {
        self.options.follow_links_out = on;
        self
    }

    /// Whether compressed copies made ahead of time are served (default: no). On, a request
    /// for `name` whose `Accept-Encoding` takes `br` or `gzip` (weights as RFC 9110 §12.5.3
    /// says, br first on a tie) gets `name.br` or `name.gz` if such a regular file is beside
    /// it (links checked as for `name`), with `Content-Encoding`, `name`'s `Content-Type`, and
    /// the copy's own length, `Last-Modified` and `ETag` (the copy's tag, with `.br` or `.gz`
    /// added, so it never equals another coding's). Conditional requests and ranges apply to
    /// the copy: a range is a range of the compressed bytes. Every file answer then carries
    /// `Vary: Accept-Encoding`. `name` itself must exist; a copy that cannot be opened is
    /// passed over. Off by default: it costs a look-up per accepted coding, and a copy left
    /// stale beside a changed `name` would be served.
    pub fn precompressed(mut self, on: bool) -> ServeDir {
        self.options.precompressed = on;
        self
    }

    /// A `Cache-Control` value for file answers (default: none, and caches guess a lifetime
    /// from `Last-Modified`, RFC 9111 §4.2.2). It is sent with every 200, 206 and 304 of a
    /// file (a 304 carries what the 200 would, RFC 9110 §15.4.5), not with errors, redirects
    /// or listings (a listing changes whenever the directory does).
    ///
    /// # Panics
    /// If `value` is not a valid header value (a control character, a line break), as
    /// [`Response::with_header`] does.
    pub fn cache_control(mut self, value: &str) -> ServeDir {
        self.settings().cache_control = Some(cache_control(value));
        self
    }

    /// A `Cache-Control` value for files named `*.ext` (case-insensitive, without the dot),
    /// in place of [`ServeDir::cache_control`]'s, on the same answers: `html` → `no-cache`
    /// (revalidated each time), `css`, `js`, `woff2` → `max-age=31536000, immutable` (names
    /// that change with their content). The extension is the name asked for's (an index
    /// page's own), so a precompressed `app.js.br` goes as `app.js` does. With neither this
    /// nor a default, an answer has none. A later call for the same extension replaces the
    /// value.
    ///
    /// # Panics
    /// If `ext` is empty or holds a `.` or `/` (no extension does), or `value` is not a valid
    /// header value.
    pub fn cache_control_for(mut self, ext: &str, value: &str) -> ServeDir {
        let value = cache_control(value);
        self.settings().cache_control_by_ext.set(ext, value);
        self
    }

    /// The names a directory's page may have, tried in this order (default: `index.html`);
    /// the first that is a regular file is served for `/dir/`, as any file is (links,
    /// dotfiles and permissions as for a file asked for by name; precompressed copies,
    /// conditions, ranges and `Cache-Control` by its name). None, and directories are only
    /// ever listed, or 404 without listings.
    ///
    /// # Panics
    /// If a name is not a single path segment: empty, `.`, `..`, or holding a `/`, `\` or NUL.
    pub fn index_names(mut self, names: &[&str]) -> ServeDir {
        let mut checked = Vec::with_capacity(names.len());
        for name in names {
            if path::check_segment(name.as_bytes()).is_err() {
                panic!("invalid index name {name:?} (one file name, as `index.htm`)");
            }
            checked.push(OsString::from(name));
        }
        self.settings().index_names = checked;
        self
    }

    /// The `Content-Type` of files named `*.ext` (case-insensitive, without the dot), in place
    /// of the built-in table's, if it has one: `.mime_type("ts", "text/plain; charset=utf-8")`
    /// for TypeScript sources rather than video segments. A later call for the same extension
    /// replaces the type.
    ///
    /// # Panics
    /// If `ext` is empty or holds a `.` or `/` (no extension does), or `content_type` is not a
    /// media type (`type/subtype`, parameters allowed) in visible ASCII.
    pub fn mime_type(mut self, ext: &str, content_type: &str) -> ServeDir {
        let content_type = media_type(content_type);
        self.settings().types.added.set(ext, content_type);
        self
    }

    /// The `Content-Type` of files whose extension has none, in the table or set with
    /// [`ServeDir::mime_type`], and of files without one (default:
    /// `application/octet-stream`: a browser saves rather than shows what it cannot tell).
    ///
    /// # Panics
    /// As [`ServeDir::mime_type`], if `content_type` is not a media type.
    pub fn default_type(mut self, content_type: &str) -> ServeDir {
        self.settings().types.unknown = media_type(content_type);
        self
    }

    async fn serve(&self, req: Request) -> Response {
        let method = req.method();
        if *method != Method::GET && *method != Method::HEAD {
            let mut r =
                Error::new(StatusCode::METHOD_NOT_ALLOWED, "method not allowed").into_response();
            r.append_header(http::header::ALLOW, HeaderValue::from_static("GET, HEAD"));
            return r;
        }
        let rel = match path::parse(under_root(&req)) {
            Ok(rel) => rel,
            Err(e) => return Error::bad_request(e.message()).into_response(),
        };
        if rel.hidden && !self.options.dotfiles {
            return Error::not_found().into_response();
        }
        let lookup = Lookup {
            root: self.root.clone(),
            settings: self.settings.clone(),
            segments: rel.segments,
            as_dir: req.path().ends_with('/'),
            options: self.options,
            conditions: Conditions::of(&req),
            accepted: match self.options.precompressed {
                true => Accepted::of(&req),
                false => Accepted::default(),
            },
            head: *method == Method::HEAD,
            jail: None,
        };
        let found = match volt_rt::spawn_blocking(move || lookup.run()).await {
            Ok(found) => found,
            Err(_) => Answer::Failed(io::Error::other("the file lookup panicked")),
        };
        found.into_response(&req)
    }
}

/// `value` as a `Cache-Control` field value.
fn cache_control(value: &str) -> HeaderValue {
    HeaderValue::from_str(value).expect("invalid Cache-Control value")
}

/// `value` as a `Content-Type`: a header value that can be written as text (multipart heads
/// name it too) and has the `/` of `type/subtype`.
fn media_type(value: &str) -> HeaderValue {
    let header = HeaderValue::from_str(value).ok();
    let header = header.filter(|h| h.to_str().is_ok() && value.contains('/'));
    header.unwrap_or_else(|| panic!("invalid Content-Type {value:?}"))
}

impl Service for ServeDir {
    async fn call(&self, req: Request) -> Response {
        self.serve(req).await
    }
}

/// A lookup to run on the blocking pool: everything it needs, owned.
struct Lookup {
    root: Arc<Path>,
    settings: Arc<Settings>,
    segments: Vec<OsString>,
    /// The request's path ends with `/`.
    as_dir: bool,
    options: Options,
    conditions: Conditions,
    /// The codings of precompressed copies the request accepts, best first.
    accepted: Accepted,
    head: bool,
    /// The root with its links resolved, which every path must stay under (`None` when
    /// links may lead out).
    jail: Option<PathBuf>,
}

/// What the lookup found: what to answer.
enum Answer {
    NotFound,
    Forbidden,
    Failed(io::Error),
    /// A directory asked for without its trailing `/`.
    Redirect,
    /// A malformed conditional or range field.
    BadField(&'static str),
    File(FileAnswer),
    Listing(Vec<Entry>, Outcome),
}

struct FileAnswer {
    file: File,
    /// The body's type: the file's, or multipart/byteranges with its boundary.
    content_type: HeaderValue,
    len: u64,
    validators: Validators,
    outcome: Outcome,
    /// What a 200 or 206 sends (nothing for other answers).
    pieces: Vec<Piece>,
    /// The body, read with the lookup when it is at most one chunk.
    data: Option<bytes::Bytes>,
    /// The coding of the precompressed copy served, if one is.
    coding: Option<Coding>,
    /// Answers depend on `Accept-Encoding` (precompressed copies are served).
    vary: bool,
    /// Sent with a 200, 206 or 304.
    cache_control: Option<HeaderValue>,
}

impl Lookup {
    fn run(mut self) -> Answer {
        if !self.options.follow_links_out {
            match self.root.canonicalize() {
                Ok(root) => self.jail = Some(root),
                Err(e) => return failed(e),
            }
        }
        let mut path = self.root.to_path_buf();
        path.extend(&self.segments);
        // Linux's NAME_MAX and PATH_MAX: no file has a longer name or path. Looked up, it
        // would fail with ENAMETOOLONG, which std's stable error kinds do not tell apart
        // from a failing disk.
        if self.segments.iter().any(|s| s.len() > 255) || path.as_os_str().len() >= 4096 {
            return Answer::NotFound;
        }
        let path = match self.resolve(path) {
            Ok(path) => path,
            Err(e) => return failed(e),
        };
        let meta = match fs::metadata(&path) {
            Ok(meta) => meta,
            Err(e) => return failed(e),
        };
        if meta.is_dir() {
            return self.directory(path);
        }
        if self.as_dir {
            // A file asked for as a directory (`/a.txt/`).
            return Answer::NotFound;
        }
        // The type is the requested name's (a link's target may be named otherwise).
        let name = self.segments.last().map_or(Path::new(""), Path::new);
        self.file(&path, name)
    }

    /// `path` with every link resolved, if it stays under the root; as it is when links
    /// may lead out.
    fn resolve(&self, path: PathBuf) -> io::Result<PathBuf> {
        let Some(jail) = &self.jail else {
            return Ok(path);
        };
        let resolved = path.canonicalize()?;
        if !resolved.starts_with(jail) {
            return Err(io::ErrorKind::NotFound.into());
        }
        Ok(resolved)
    }

    fn directory(&self, dir: PathBuf) -> Answer {
        if !self.as_dir {
            return Answer::Redirect;
        }
        if let Some((index, name)) = self.index(&dir) {
            return self.file(&index, Path::new(name));
        }
        if !self.options.listing {
            return Answer::NotFound;
        }
        let entries = match self.entries(&dir) {
            Ok(entries) => entries,
            Err(e) => return failed(e),
        };
        match conditional::evaluate(&self.conditions, None, 0) {
            Ok(outcome) => Answer::Listing(entries, outcome),
            Err(message) => Answer::BadField(message),
        }
    }

    /// The first of the index names that is a regular file in `dir` (a dotfile only if they
    /// are served, a link only if it may be followed): its path, and its name.
    fn index<'a>(&'a self, dir: &Path) -> Option<(PathBuf, &'a OsString)> {
        let names = self.settings.index_names.iter();
        let mut served = names.filter(|n| self.options.dotfiles || !is_dotfile(n));
        served.find_map(|name| {
            let path = self.resolve(dir.join(name)).ok()?;
            path.is_file().then_some((path, name))
        })
    }

    /// The entries a listing shows: files and directories (links followed), dotfiles only if
    /// they are served.
    fn entries(&self, dir: &Path) -> io::Result<Vec<Entry>> {
        let mut entries = Vec::new();
        for entry in fs::read_dir(dir)? {
            let entry = entry?;
            let name = entry.file_name();
            if is_dotfile(&name) && !self.options.dotfiles {
                continue;
            }
            // A link is listed only if it may be followed.
            if entry.file_type()?.is_symlink() && self.resolve(entry.path()).is_err() {
                continue;
            }
            // A broken link, or one that cannot be followed, is left out.
            let Ok(meta) = fs::metadata(entry.path()) else {
                continue;
            };
            if meta.is_dir() || meta.is_file() {
                let is_dir = meta.is_dir();
                entries.push(Entry { name, is_dir });
            }
        }
        Ok(entries)
    }

    /// The answer for the file at `path`, whose type is `name`'s.
    fn file(&self, path: &Path, name: &Path) -> Answer {
        let (file, coding) = match self.precompressed(path) {
            Some((file, coding)) => (file, Some(coding)),
            None => match File::open(path) {
                Ok(file) => (file, None),
                Err(e) => return failed(e),
            },
        };
        // What the open file is, not what the path was a moment ago.
        let meta = match file.metadata() {
            Ok(meta) if meta.is_file() => meta,
            Ok(_) => return Answer::NotFound,
            Err(e) => return failed(e),
        };
        let len = meta.len();
        let mtime = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
        let mut validators = Validators::new(len, mtime, SystemTime::now());
        if let Some(coding) = coding {
            // `"…-…"` → `"…-….gz"`: the copy's own tag, never another coding's (§8.8.3).
            validators
                .etag
                .insert_str(validators.etag.len() - 1, extension(coding));
        }
        let outcome = match conditional::evaluate(&self.conditions, Some(&validators), len) {
            Ok(outcome) => outcome,
            Err(message) => return Answer::BadField(message),
        };
        let mut content_type = self.settings.types.of(name);
        let pieces = match &outcome {
            Outcome::Full => vec![Piece::File(0..len)],
            Outcome::Partial { start, end } => vec![Piece::File(*start..end + 1)],
            Outcome::Parts(parts) => {
                let file_type = content_type.to_str().expect("types are visible ASCII");
                let multipart = Multipart::new(parts, len, file_type, coding.map(Coding::token));
                content_type = HeaderValue::from_str(&multipart.content_type()).expect("ASCII");
                multipart.pieces
            }
            _ => Vec::new(),
        };
        let mut data = None;
        if !self.head && !pieces.is_empty() && file_body::body_len(&pieces) <= CHUNK {
            match file_body::read_whole(&file, &pieces) {
                Ok(bytes) => data = Some(bytes),
                Err(e) => return failed(e),
            }
        }
        Answer::File(FileAnswer {
            file,
            content_type,
            len,
            validators,
            outcome,
            pieces,
            data,
            coding,
            vary: self.options.precompressed,
            cache_control: self.cache_control(name),
        })
    }

    /// The `Cache-Control` of a file named `name`: its extension's, else the default.
    fn cache_control(&self, name: &Path) -> Option<HeaderValue> {
        let settings = &self.settings;
        let by_ext = mime::extension(name).and_then(|e| settings.cache_control_by_ext.get(e));
        by_ext.or(settings.cache_control.as_ref()).cloned()
    }

    /// The first precompressed copy of the file at `path` the request accepts, opened.
    fn precompressed(&self, path: &Path) -> Option<(File, Coding)> {
        if !self.options.precompressed {
            return None;
        }
        self.accepted.iter().find_map(|coding| {
            let mut copy = path.as_os_str().to_owned();
            copy.push(extension(coding));
            let copy = self.resolve(PathBuf::from(copy)).ok()?;
            let file = File::open(copy).ok()?;
            file.metadata().ok()?.is_file().then_some((file, coding))
        })
    }
}

/// Whether `name` starts with `.`.
fn is_dotfile(name: &OsStr) -> bool {
    name.as_encoded_bytes().starts_with(b".")
}

/// The file name extension of a precompressed copy.
fn extension(coding: Coding) -> &'static str {
    match coding {
        Coding::Gzip => ".gz",
        Coding::Br => ".br",
    }
}

/// The answer to a failed file system call.
fn failed(e: io::Error) -> Answer {
    // A loop of symbolic links (ELOOP) names no file either.
    let is_loop = e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error());
    match e.kind() {
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory => Answer::NotFound,
        _ if is_loop => Answer::NotFound,
        io::ErrorKind::PermissionDenied => Answer::Forbidden,
        _ => Answer::Failed(e),
    }
}

impl Answer {
    fn into_response(self, req: &Request) -> Response {
        match self {
            Answer::NotFound => Error::not_found().into_response(),
            Answer::Forbidden => Error::new(StatusCode::FORBIDDEN, "forbidden").into_response(),
            Answer::Failed(e) => {
                log::error!("serving {}: {e}", req.path());
                Error::new(StatusCode::INTERNAL_SERVER_ERROR, "internal server error")
                    .into_response()
            }
            Answer::BadField(message) => Error::bad_request(message).into_response(),
            Answer::Redirect => redirect(req),
            Answer::File(file) => file.into_response(),
            Answer::Listing(entries, outcome) => match outcome {
                Outcome::NotModified => Response::new(StatusCode::NOT_MODIFIED),
                Outcome::PreconditionFailed => precondition_failed(),
                _ => Response::new(StatusCode::OK)
                    .with_content_type(HeaderValue::from_static("text/html; charset=utf-8"))
                    .with_body(listing::page(
                        req.path(),
                        entries,
                        under_root(req).is_empty(),
                    )),
            },
        }
    }
}

/// The path to look up under the root, as sent: the value of the catch-all the service is
/// mounted on, else the whole path without its `/`.
fn under_root(req: &Request) -> &str {
    let path = req.path();
    req.catch_all_raw()
        .unwrap_or_else(|| path.strip_prefix('/').unwrap_or(path))
}

/// 301 to the path with a `/` added, the query kept. Permanent, so browsers and caches
/// remember it, and understood by every client (308 is not known to HTTP/1.0 ones); only GET
/// and HEAD get here, which a 301 keeps as they are.
fn redirect(req: &Request) -> Response {
    let mut location = format!("{}/", req.path());
    if let Some(query) = req.query_string() {
        location.push('?');
        location.push_str(query);
    }
    // The path is visible ASCII (both protocols check the target), and starts with a single
    // `/` (an empty segment was refused): a path, not `//host`.
    let Ok(location) = HeaderValue::from_str(&location) else {
        return Error::bad_request("the path cannot be redirected").into_response();
    };
    let mut r = Response::new(StatusCode::MOVED_PERMANENTLY);
    r.append_header(http::header::LOCATION, location);
    r
}

fn precondition_failed() -> Response {
    Error::new(StatusCode::PRECONDITION_FAILED, "precondition failed").into_response()
}

impl FileAnswer {
    fn into_response(self) -> Response {
        let FileAnswer {
            file,
            content_type,
            len,
            validators,
            outcome,
            pieces,
            data,
            coding,
            vary,
            cache_control,
        } = self;
        // The parts of a multipart answer name their coding in their own heads: the
        // multipart body itself is not encoded.
        let multipart = matches!(outcome, Outcome::Parts(_));
        let header = |v: String| HeaderValue::from_str(&v).expect("ASCII");
        let etag = (http::header::ETAG, header(validators.etag.clone()));
        let modified = (
            http::header::LAST_MODIFIED,
            header(validators.last_modified()),
        );
        let ranges = (
            http::header::ACCEPT_RANGES,
            HeaderValue::from_static("bytes"),
        );
        let with = |mut r: Response, fields: Vec<(HeaderName, HeaderValue)>| {
            for (name, value) in fields {
                r.append_header(name, value);
            }
            // On the copy's bytes, whole or a part; not on a 304 (no body) or a 416 (an
            // error text).
            let content = matches!(r.status(), StatusCode::OK | StatusCode::PARTIAL_CONTENT);
            if let Some(coding) = coding.filter(|_| content && !multipart) {
                let token = HeaderValue::from_static(coding.token());
                r.append_header(http::header::CONTENT_ENCODING, token);
            }
            if vary {
                let accept_encoding = HeaderValue::from_static("Accept-Encoding");
                r.append_header(http::header::VARY, accept_encoding);
            }
            // RFC 9110 §15.3.7 and §15.4.5: a 206 and a 304 carry what the 200 would.
            let cached = content || r.status() == StatusCode::NOT_MODIFIED;
            if let Some(value) = cache_control.filter(|_| cached) {
                r.append_header(http::header::CACHE_CONTROL, value);
            }
            r
        };
        let body = || match data {
            Some(bytes) => Body::from(bytes),
            None => Body::sized_stream(file_body::body_len(&pieces), FileChunks::new(file, pieces)),
        };
        let content = Response::new(StatusCode::OK).with_content_type(content_type);
        match outcome {
            Outcome::Full => with(content.with_body(body()), vec![etag, modified, ranges]),
            Outcome::Partial { start, end } => {
                let range = header(format!("bytes {start}-{end}/{len}"));
                let r = content
                    .with_status(StatusCode::PARTIAL_CONTENT)
                    .with_body(body());
                let content_range = (http::header::CONTENT_RANGE, range);
                with(r, vec![content_range, etag, modified, ranges])
            }
            // §15.3.7.2: no `Content-Range` in the head, each part has its own.
            Outcome::Parts(_) => {
                let r = content
                    .with_status(StatusCode::PARTIAL_CONTENT)
                    .with_body(body());
                with(r, vec![etag, modified, ranges])
            }
            // RFC 9110 §15.4.5: a 304 carries the validators a 200 would have.
            Outcome::NotModified => with(
                Response::new(StatusCode::NOT_MODIFIED),
                vec![etag, modified],
            ),
            Outcome::PreconditionFailed => precondition_failed(),
            // RFC 9110 §15.5.17: the current length, in an unsatisfied-range.
            Outcome::Unsatisfiable => {
                let r = Error::new(StatusCode::RANGE_NOT_SATISFIABLE, "range not satisfiable")
                    .into_response();
                let content_range = header(format!("bytes */{len}"));
                with(
                    r,
                    vec![(http::header::CONTENT_RANGE, content_range), ranges],
                )
            }
        }
    }
}
