//! A script's process and the threads that move its bytes: the worker never makes a blocking
//! call on a pipe, waits for a process or forks.
//!
//! Each pipe gets a thread of its own rather than a job on volt-rt's blocking pool: a read of
//! a script's stdout or stderr blocks for as long as the script stays silent, and a pool of 64
//! threads shared with DNS lookups and file I/O, 16 scripts a worker with three pipes each,
//! could fill up with reads waiting on scripts that wait on a pipe whose job is queued behind
//! them. A script costs a process anyway; two or three threads are small beside it.
//!
//! - stdout: read in pieces of up to [`STDOUT_PIECE`] bytes, at most [`STDOUT_WINDOW`] pieces
//!   ahead of the response (a credit per piece taken): a slow client stops the reads, the pipe
//!   fills, and the script blocks in its `write`.
//! - stdin: the request body, written piece by piece as it arrives; the handler reads no more
//!   than [`STDIN_WINDOW`] pieces ahead of the writes.
//! - stderr: each line goes to the `log` facade (`warn`), never to the client.

use std::ffi::OsString;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use rustix::process::{kill_process_group, Pid, Signal};
use volt_rt::{channel, Receiver, Sender};

/// The most bytes one read of a script's stdout takes.
pub(super) const STDOUT_PIECE: usize = 32 * 1024;
/// Pieces of stdout read ahead of the response.
pub(super) const STDOUT_WINDOW: usize = 4;
/// Pieces of request body handed to the stdin thread ahead of its writes.
pub(super) const STDIN_WINDOW: usize = 2;
/// The longest stderr line logged as one; a longer one is logged in pieces.
const STDERR_LINE: u64 = 4 * 1024;
/// How long a script that has closed its stdout gets to exit before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// A running script, killed (with its whole process group) and reaped when dropped, unless it
/// finished its output first: then it gets [`EXIT_GRACE`] to exit. Reaping happens on the
/// blocking pool; no path leaves a zombie.
#[derive(Debug)]
pub(super) struct Script {
    child: Option<Child>,
    /// Set once stdout reached its end: the script is done, and may exit in its own time.
    pub(super) finished: bool,
    name: Arc<str>,
}

impl Script {
    /// The script's path under its directory, for logs.
    pub(super) fn name(&self) -> &str {
        &self.name
    }

    /// SIGKILL to the script and everything it started: it runs as the leader of a process
    /// group of its own. Sound while the leader is unreaped: its id cannot be reused until then.
    fn kill(child: &Child) {
        let _ = kill_process_group(Pid::from_child(child), Signal::KILL);
    }
}

impl Drop for Script {
    fn drop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        if let Ok(Some(status)) = child.try_wait() {
            log_exit(&self.name, status);
            return;
        }
        let finished = self.finished;
        if !finished {
            Script::kill(&child);
        }
        let name = self.name.clone();
        // The handle is dropped: the job runs on, detached.
        drop(volt_rt::spawn_blocking(move || {
            if finished {
                let deadline = Instant::now() + EXIT_GRACE;
                while Instant::now() < deadline {
                    if let Ok(Some(status)) = child.try_wait() {
                        return log_exit(&name, status);
                    }
                    thread::sleep(Duration::from_millis(10));
                }
                log::warn!("CGI script {name}: still running after its output ended; killed");
                Script::kill(&child);
            }
            if let Ok(status) = child.wait() {
                log_exit(&name, status);
            }
        }));
    }
}

fn log_exit(name: &str, status: ExitStatus) {
    if !status.success() {
        log::warn!("CGI script {name}: {status}");
    }
}

/// A started script and its pipes' ends on the worker's side.
#[derive(Debug)]
pub(super) struct Running {
    pub(super) script: Script,
    /// Pieces of stdout (`None`: its end, every sender gone).
    pub(super) stdout: Receiver<io::Result<Bytes>>,
    /// One credit per piece of stdout the response took.
    pub(super) credits: mpsc::Sender<()>,
    /// The body's way to stdin, if the request has one.
    pub(super) stdin: Option<Stdin>,
}

/// The request body's way into a script: pieces to write, and a report of each write.
#[derive(Debug)]
pub(super) struct Stdin {
    pub(super) pieces: mpsc::Sender<Bytes>,
    pub(super) written: Receiver<io::Result<()>>,
}

/// What to run: the script, its environment, and whether it gets a body on stdin.
#[derive(Debug)]
pub(super) struct Launch<'a> {
    pub(super) path: &'a Path,
    pub(super) env: Vec<(OsString, OsString)>,
    pub(super) with_stdin: bool,
    /// For logs: the script's `SCRIPT_NAME`.
    pub(super) name: Arc<str>,
}

/// Starts the script and its pipes' threads. Blocking (fork and exec): call it on the
/// blocking pool.
///
/// The script runs with exactly `env` (nothing of the server's environment), in its own
/// directory (§7.2), with no arguments (§4.4 leaves the search-string command line optional,
/// and it has been a way in for shell-injection bugs), as the leader of a new process group.
pub(super) fn start(launch: Launch<'_>) -> io::Result<Running> {
    let mut command = Command::new(launch.path);
    command
        .env_clear()
        .envs(launch.env)
        .stdin(if launch.with_stdin {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    if let Some(dir) = launch.path.parent() {
        command.current_dir(dir);
    }
    let mut child = spawn(&mut command)?;
    let pipes = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    let script = Script {
        child: Some(child),
        finished: false,
        name: launch.name,
    };
    let (Some(out), Some(err)) = (pipes.1, pipes.2) else {
        return Err(io::Error::other("the script's pipes were not made"));
    };
    let (stdout_tx, stdout) = channel();
    let (credits, credit_rx) = mpsc::channel();
    for _ in 0..STDOUT_WINDOW {
        let _ = credits.send(());
    }
    thread::Builder::new()
        .name("volt-cgi-stdout".into())
        .spawn(move || pump_stdout(out, &stdout_tx, &credit_rx))?;
    let name = script.name.clone();
    thread::Builder::new()
        .name("volt-cgi-stderr".into())
        .spawn(move || log_stderr(err, &name))?;
    let stdin = match pipes.0 {
        Some(input) => {
            let (pieces, piece_rx) = mpsc::channel();
            let (written_tx, written) = channel();
            thread::Builder::new()
                .name("volt-cgi-stdin".into())
                .spawn(move || pump_stdin(input, &piece_rx, &written_tx))?;
            Some(Stdin { pieces, written })
        }
        None => None,
    };
    Ok(Running {
        script,
        stdout,
        credits,
        stdin,
    })
}

/// `command.spawn()`, tried again a few times on `ETXTBSY`: a script written just now may still
/// be open for writing in a process another thread was forking (its descriptor closes at that
/// process's exec), and Linux refuses to execute a file open for writing.
fn spawn(command: &mut Command) -> io::Result<Child> {
    const ETXTBSY: i32 = 26;
    let mut wait = Duration::from_millis(5);
    loop {
        match command.spawn() {
            Err(e) if e.raw_os_error() == Some(ETXTBSY) && wait < Duration::from_millis(200) => {
                thread::sleep(wait);
                wait *= 2;
            }
            result => return result,
        }
    }
}

/// Reads stdout for as long as there are credits and the worker's side listens.
fn pump_stdout(
    mut out: ChildStdout,
    pieces: &Sender<io::Result<Bytes>>,
    credits: &mpsc::Receiver<()>,
) {
    while credits.recv().is_ok() {
        let mut buf = BytesMut::zeroed(STDOUT_PIECE);
        let read = loop {
            match out.read(&mut buf) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => break other,
            }
        };
        let piece = match read {
            Ok(0) => return, // the end: dropping the sender says so
            Ok(n) => {
                buf.truncate(n);
                Ok(buf.freeze())
            }
            Err(e) => Err(e),
        };
        let failed = piece.is_err();
        if pieces.send(piece).is_err() || failed {
            return;
        }
    }
}

/// Writes the pieces of body it is given until their sender is dropped (then stdin closes: the
/// script sees its end) or a write fails (the script closed its stdin, or exited).
fn pump_stdin(
    mut input: ChildStdin,
    pieces: &mpsc::Receiver<Bytes>,
    written: &Sender<io::Result<()>>,
) {
    for piece in pieces {
        let result = input.write_all(&piece);
        let failed = result.is_err();
        if written.send(result).is_err() || failed {
            return;
        }
    }
}

/// Logs each line of stderr until its end.
fn log_stderr(err: ChildStderr, name: &str) {
    let mut err = BufReader::new(err);
    let mut line = Vec::new();
    loop {
        line.clear();
        match err.by_ref().take(STDERR_LINE).read_until(b'\n', &mut line) {
            Ok(0) => return,
            Ok(_) => {
                let text = String::from_utf8_lossy(&line);
                log::warn!("CGI script {name}: {}", text.trim_end());
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}
