//! A CGI/1.1 gateway (RFC 3875): scripts under a directory answer requests.
//!
//! [`Cgi`] is a [`Service`], served alone or mounted with `Router::route_service`. A request
//! is answered in steps: its path is split into the script and `PATH_INFO` (`script`), the
//! meta-variables are made (`env`), the script is started with its pipes on threads of their
//! own (`process`), the body is fed to its stdin while its stdout is read, up to the end of its
//! header block (`head`), and the rest of stdout streams out as the response body ([`Output`]).

mod env;
mod head;
mod process;
mod script;

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ffi::OsString;
use std::fmt;
use std::future::{poll_fn, Future};
use std::io;
use std::path::PathBuf;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures_core::Stream;
use http::StatusCode;
use volt_rt::time::{sleep, Sleep};

use crate::request::percent_decode;
use crate::{Body, Error, IntoResponse, Request, Response, Service};

/// Header fields about one connection (RFC 9110 §7.6.1), passed neither way: not to a script
/// as `HTTP_*`, not from a script's header block to the client (the server frames and keeps its
/// connections itself; a script's `Content-Length` is taken apart).
const CONNECTION_FIELDS: [&str; 7] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// The largest header block a script may write: 502 beyond.
const MAX_HEAD_BYTES: usize = 32 * 1024;

/// Runs CGI scripts from a directory (RFC 3875): each request starts the script its path
/// names, with the request's meta-variables as its environment and its body on stdin, and the
/// script's output is the response.
///
/// Mount it on a catch-all route, whose value is the path under the directory (the part
/// before it is in `SCRIPT_NAME`), or serve it as the whole application (the whole path is):
///
/// ```no_run
/// use volt_http::{Cgi, Router, Server};
///
/// let app = Router::new().route_service("/cgi-bin/{*script}", Cgi::new("/srv/cgi-bin"));
/// Server::bind("127.0.0.1:8080")?.serve(app)?;
/// # Ok::<(), std::io::Error>(())
/// ```
///
/// A request for `/cgi-bin/app.sh/users/7?x=1` runs `/srv/cgi-bin/app.sh` with
/// `SCRIPT_NAME=/cgi-bin/app.sh`, `PATH_INFO=/users/7`, `QUERY_STRING=x=1`. Paths with `.` or
/// `..` segments, encoded slashes or NUL bytes answer 403, and so does a script that is not an
/// executable regular file or resolves (through symbolic links) outside the directory; one
/// that does not exist answers 404. Clones share their settings and their process limit.
#[derive(Clone)]
pub struct Cgi {
    settings: Arc<Settings>,
}

#[derive(Clone, Debug)]
struct Settings {
    root: PathBuf,
    document_root: Option<PathBuf>,
    timeout: Duration,
    max_processes: usize,
    env: Vec<(OsString, OsString)>,
    /// Tells this gateway's process count apart from other gateways' on a worker.
    id: usize,
}

impl Cgi {
    /// Scripts from `root` (a relative path is taken from the server's working directory at
    /// each request). Defaults: a 30 s [`timeout`](Cgi::timeout), 16
    /// [processes](Cgi::max_processes) per worker, `PATH=/usr/local/bin:/usr/bin:/bin`.
    pub fn new(root: impl Into<PathBuf>) -> Cgi {
        static IDS: AtomicUsize = AtomicUsize::new(0);
        Cgi {
            settings: Arc::new(Settings {
                root: root.into(),
                document_root: None,
                timeout: Duration::from_secs(30),
                max_processes: 16,
                env: vec![("PATH".into(), env::DEFAULT_PATH.into())],
                id: IDS.fetch_add(1, Ordering::Relaxed),
            }),
        }
    }

    /// How long a script may keep the server waiting for output: for its header block, and
    /// then for each further piece of its body (time the script spends blocked on a slow
    /// client does not count: neither a response the client reads slowly nor a request body
    /// that keeps arriving, each piece of which starts the wait again). A script past it is killed: 504 if its header block had not
    /// come, else the response is cut short (the connection closes). Default 30 s.
    pub fn timeout(mut self, timeout: Duration) -> Cgi {
        Arc::make_mut(&mut self.settings).timeout = timeout;
        self
    }

    /// The most scripts this gateway runs at once on one worker: 503 beyond. Default 16.
    pub fn max_processes(mut self, n: usize) -> Cgi {
        Arc::make_mut(&mut self.settings).max_processes = n;
        self
    }

    /// Sets an environment variable for every script, besides the meta-variables (which win
    /// over it). `PATH` is set this way, to `/usr/local/bin:/usr/bin:/bin` unless replaced.
    pub fn env(mut self, name: impl Into<OsString>, value: impl Into<OsString>) -> Cgi {
        let (name, value) = (name.into(), value.into());
        let env = &mut Arc::make_mut(&mut self.settings).env;
        env.retain(|(n, _)| *n != name);
        env.push((name, value));
        self
    }

    /// The directory `PATH_TRANSLATED` maps `PATH_INFO` under (RFC 3875 §4.1.6). Default: the
    /// scripts' directory.
    pub fn document_root(mut self, dir: impl Into<PathBuf>) -> Cgi {
        Arc::make_mut(&mut self.settings).document_root = Some(dir.into());
        self
    }
}

impl fmt::Debug for Cgi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.settings;
        f.debug_struct("Cgi")
            .field("root", &s.root)
            .field("timeout", &s.timeout)
            .field("max_processes", &s.max_processes)
            .finish_non_exhaustive()
    }
}

impl Service for Cgi {
    async fn call(&self, req: Request) -> Response {
        run(self.settings.clone(), req).await
    }
}

thread_local! {
    /// Scripts running on this worker, per gateway.
    static RUNNING: RefCell<HashMap<usize, usize>> = RefCell::new(HashMap::new());
}

/// One of a gateway's process slots on this worker, given back when dropped.
struct Slot {
    id: usize,
}

impl Slot {
    fn take(settings: &Settings) -> Option<Slot> {
        RUNNING.with(|running| {
            let mut running = running.borrow_mut();
            let count = running.entry(settings.id).or_default();
            (*count < settings.max_processes).then(|| {
                *count += 1;
                Slot { id: settings.id }
            })
        })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        RUNNING.with(|running| {
            if let Some(count) = running.borrow_mut().get_mut(&self.id) {
                *count -= 1;
            }
        });
    }
}

fn error(status: StatusCode, message: &str) -> Response {
    Error::new(status, message).into_response()
}

/// Answers one request with a script.
async fn run(settings: Arc<Settings>, mut req: Request) -> Response {
    // The part of the path below the mount point: the catch-all's value, or the whole path.
    let path = req.path();
    let below = match req.catch_all_raw() {
        Some(rest) => rest,
        None => path.strip_prefix('/').unwrap_or(path),
    };
    let mount = path[..path.len() - below.len()].trim_end_matches('/');
    let mount = percent_decode(mount).map_or_else(|| mount.to_owned(), |m| m.into_owned());
    let segments = match script::segments(below) {
        Ok(segments) => segments,
        Err(refusal) => return error(refusal.status, refusal.why),
    };
    let Some(slot) = Slot::take(&settings) else {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "too many CGI scripts running",
        );
    };
    // §4.2: a body of unknown length (chunked, or HTTP/2 without `content-length`) is read
    // whole, within the server's body limit, so that the script gets its `CONTENT_LENGTH`.
    let declared = req.header("content-length").and_then(|v| v.parse().ok());
    let (content_length, body) = match declared {
        Some(n) => (Some(n), Source::Request(n > 0)),
        None => match req.bytes().await {
            Ok(all) => (Some(all.len() as u64), Source::Memory(Some(all))),
            Err(e) => return e.into_response(),
        },
    };
    let mut env = settings.env.clone();
    env.extend(env::request_variables(&req, content_length));
    let with_stdin = content_length.is_some_and(|n| n > 0);
    let job = {
        let settings = settings.clone();
        volt_rt::spawn_blocking(move || {
            let found = script::find(&settings.root, &segments).map_err(NotStarted::Refused)?;
            let document_root = settings.document_root.as_ref().unwrap_or(&settings.root);
            let document_root = std::path::absolute(document_root).unwrap_or_default();
            env::script_variables(&mut env, &mount, &segments, found.depth, &document_root);
            let name = segments[..found.depth].join("/").into();
            let launch = process::Launch {
                path: &found.path,
                env,
                with_stdin,
                name,
            };
            process::start(launch).map_err(NotStarted::Failed)
        })
    };
    let started = job.await.unwrap_or_else(|_| {
        let panicked = io::Error::other("the job starting it panicked");
        Err(NotStarted::Failed(panicked))
    });
    let mut running = match started {
        Ok(running) => running,
        Err(NotStarted::Refused(refusal)) => return error(refusal.status, refusal.why),
        Err(NotStarted::Failed(e)) => {
            let root = settings.root.display();
            log::error!("CGI: starting a script under {root}: {e}");
            let status = StatusCode::INTERNAL_SERVER_ERROR;
            return error(status, "the CGI script could not start");
        }
    };
    let fed = Rc::new(Cell::new(0));
    let feeding: Feeding = Box::pin(feed(req, body, running.stdin.take(), fed.clone()));
    let mut output = Output {
        running,
        feeding: Some(feeding),
        fed,
        fed_seen: 0,
        timeout: settings.timeout,
        deadline: sleep(settings.timeout),
        first: None,
        _slot: slot,
    };
    match output.read_head().await {
        Ok(head) => output.respond(head),
        Err(response) => response,
    }
}

/// Why a script did not start.
enum NotStarted {
    /// The path names no script to run (403, 404, 400).
    Refused(script::Refusal),
    /// The fork, the exec or a pipe's thread failed (500).
    Failed(io::Error),
}

/// Where the request body comes from: the request (`true` if it has one) or memory.
enum Source {
    Request(bool),
    Memory(Option<Bytes>),
}

/// Feeds the body to the script's stdin, [`process::STDIN_WINDOW`] pieces ahead of the writes
/// at most, then closes stdin. Reading stops early, with no error, when the script stops
/// reading (a write failed): the server then drains or closes as for any unread body. `fed`
/// counts the pieces handed on: while they keep coming, the script is waiting on the client,
/// and its timeout starts again with each.
async fn feed(
    mut req: Request,
    mut source: Source,
    stdin: Option<process::Stdin>,
    fed: Rc<Cell<u64>>,
) -> Result<(), Error> {
    let Some(process::Stdin {
        pieces,
        mut written,
    }) = stdin
    else {
        return Ok(());
    };
    let mut unwritten = 0;
    loop {
        let piece = match &mut source {
            Source::Request(false) => None,
            Source::Request(true) => req.body_mut().chunk().await?,
            Source::Memory(all) => all.take(),
        };
        let Some(piece) = piece else {
            return Ok(()); // dropping `pieces` closes stdin once the last one is written
        };
        if pieces.send(piece).is_err() {
            return Ok(());
        }
        unwritten += 1;
        fed.set(fed.get() + 1);
        while unwritten >= process::STDIN_WINDOW {
            match written.recv().await {
                Some(Ok(())) => unwritten -= 1,
                _ => return Ok(()),
            }
        }
    }
}

/// Why the script's output stopped.
enum Stop {
    TimedOut,
    /// Reading the request body failed (413, 408, 400): its status.
    Body(Error),
    Read(io::Error),
}

type Feeding = Pin<Box<dyn Future<Output = Result<(), Error>>>>;

/// A running script's stdout, with what keeps it going: the body being fed to its stdin, the
/// timeout, the process slot. As the response body, it streams the script's output; dropped
/// before the end (the client went away), it kills the script.
struct Output {
    running: process::Running,
    feeding: Option<Feeding>,
    /// Pieces of body handed to stdin so far, and as of the last look.
    fed: Rc<Cell<u64>>,
    fed_seen: u64,
    timeout: Duration,
    deadline: Sleep,
    /// Body bytes read along with the header block.
    first: Option<Bytes>,
    _slot: Slot,
}

impl Output {
    /// The next piece of stdout (`None` at its end), feeding the body meanwhile.
    fn poll_piece(&mut self, cx: &mut Context<'_>) -> Poll<Result<Option<Bytes>, Stop>> {
        if let Some(feeding) = &mut self.feeding {
            if let Poll::Ready(fed) = feeding.as_mut().poll(cx) {
                self.feeding = None;
                fed.map_err(Stop::Body)?;
            }
            if self.fed.get() != self.fed_seen {
                self.fed_seen = self.fed.get();
                self.deadline.reset(volt_rt::time::now() + self.timeout);
            }
        }
        match self.running.stdout.poll_recv(cx) {
            Poll::Ready(Some(Ok(piece))) => {
                let _ = self.running.credits.send(());
                self.deadline.reset(volt_rt::time::now() + self.timeout);
                Poll::Ready(Ok(Some(piece)))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Err(Stop::Read(e))),
            Poll::Ready(None) => {
                self.running.script.finished = true;
                Poll::Ready(Ok(None))
            }
            Poll::Pending => match Pin::new(&mut self.deadline).poll(cx) {
                Poll::Ready(()) => Poll::Ready(Err(Stop::TimedOut)),
                Poll::Pending => Poll::Pending,
            },
        }
    }

    /// Reads up to the end of the header block and parses it; what came after it is kept as
    /// the body's first piece. The error is the response to give instead.
    async fn read_head(&mut self) -> Result<head::Head, Response> {
        let mut buf = BytesMut::new();
        let end = loop {
            if let Some(end) = head::end(&buf) {
                break end;
            }
            if buf.len() > MAX_HEAD_BYTES {
                return Err(self.bad_output("a header block over 32 KiB"));
            }
            match poll_fn(|cx| self.poll_piece(cx)).await {
                Ok(Some(piece)) => buf.extend_from_slice(&piece),
                Ok(None) => return Err(self.bad_output("no header block")),
                Err(stop) => return Err(self.stopped(stop)),
            }
        };
        if end > MAX_HEAD_BYTES {
            return Err(self.bad_output("a header block over 32 KiB"));
        }
        let head = head::parse(&buf[..end]);
        let rest = buf.split_off(end);
        self.first = (!rest.is_empty()).then(|| rest.freeze());
        head.map_err(|malformed| match malformed {
            head::Malformed::Bad(why) => self.bad_output(&why),
            head::Malformed::LocalRedirect => {
                log::error!(
                    "CGI script {}: a local redirect (Location without Status), which volt does not follow",
                    self.running.script.name()
                );
                error(StatusCode::INTERNAL_SERVER_ERROR, "CGI local redirects are not supported")
            }
        })
    }

    fn bad_output(&self, why: &str) -> Response {
        log::error!(
            "CGI script {}: malformed output: {why}",
            self.running.script.name()
        );
        error(
            StatusCode::BAD_GATEWAY,
            "the CGI script's output is malformed",
        )
    }

    /// The answer for output that stopped before the header block ended.
    fn stopped(&self, stop: Stop) -> Response {
        let name = self.running.script.name();
        match stop {
            Stop::TimedOut => {
                log::error!(
                    "CGI script {name}: no header block within {:?}; killed",
                    self.timeout
                );
                error(StatusCode::GATEWAY_TIMEOUT, "the CGI script timed out")
            }
            Stop::Body(e) => e.into_response(),
            Stop::Read(e) => {
                log::error!("CGI script {name}: reading its output: {e}");
                error(
                    StatusCode::BAD_GATEWAY,
                    "the CGI script's output could not be read",
                )
            }
        }
    }

    /// The response: `head`, and the rest of stdout as the body.
    fn respond(self, head: head::Head) -> Response {
        let mut response = Response::new(head.status);
        if let Some(content_type) = head.content_type {
            response = response.with_content_type(content_type);
        }
        for (name, value) in head.fields {
            response.append_header(name, value);
        }
        let body = match head.content_length {
            Some(length) => Body::sized_stream(length, self),
            None => Body::stream(self),
        };
        response.with_body(body)
    }
}

impl Stream for Output {
    type Item = io::Result<Bytes>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<io::Result<Bytes>>> {
        let this = self.get_mut();
        if let Some(first) = this.first.take() {
            return Poll::Ready(Some(Ok(first)));
        }
        this.poll_piece(cx).map(|piece| match piece {
            Ok(piece) => piece.map(Ok),
            Err(stop) => {
                let name = this.running.script.name();
                let why = match stop {
                    Stop::TimedOut => format!("no output for {:?}; killed", this.timeout),
                    Stop::Body(e) => format!("reading the request body: {e}"),
                    Stop::Read(e) => format!("reading its output: {e}"),
                };
                log::error!("CGI script {name}: {why}; the response is cut short");
                Some(Err(io::Error::other(why)))
            }
        })
    }
}
