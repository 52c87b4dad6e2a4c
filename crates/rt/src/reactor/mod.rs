//! The reactor: waits for I/O and wakes the tasks waiting on it. Two drivers, chosen once per
//! runtime: [`epoll`] (readiness; the sockets make the syscalls) and [`uring`] (completions; the
//! reactor owns receive and send buffers, so a request costs no syscall of its own).
//!
//! The choice lives here and only here: [`IoBackend::resolve`] picks one, [`Reactor`] dispatches
//! to it. UDP sockets and Unix listeners are readiness-driven on both drivers; on io_uring, TCP listeners
//! ([`Kind::Acceptor`]) accept through [`uring::Reactor::poll_accept`], and streams
//! ([`Kind::Stream`]) go through [`uring::Reactor::poll_recv`] / [`uring::Reactor::poll_send`].

mod epoll;
pub(crate) mod uring;

use std::io;
use std::net::Shutdown;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::OnceLock;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use rustix::event::epoll::EventFlags;
use rustix::event::{eventfd, EventfdFlags};

/// The kernel interface a runtime's workers wait on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum IoBackend {
    /// `epoll`: readiness, one syscall per read and per write. Works everywhere.
    Epoll,
    /// `io_uring`: multishot receive into a ring of provided buffers, sends queued and submitted
    /// once per loop turn together with the wait.
    Uring,
}

impl IoBackend {
    /// The backend to use: `requested` if set, else `VOLT_IO` (`epoll` or `uring`), else io_uring
    /// when the kernel lets this process set up a ring, else epoll.
    ///
    /// Fails when io_uring is asked for (by the builder or `VOLT_IO=uring`) and unavailable, or
    /// when `VOLT_IO` holds anything else: a forced choice that silently changed would make
    /// benchmarks and CI lie.
    pub(crate) fn resolve(requested: Option<IoBackend>) -> io::Result<IoBackend> {
        let requested = match (requested, std::env::var("VOLT_IO").as_deref()) {
            (Some(backend), _) => Some(backend),
            (None, Ok("epoll")) => Some(IoBackend::Epoll),
            (None, Ok("uring" | "io_uring")) => Some(IoBackend::Uring),
            (None, Ok("" | "auto") | Err(_)) => None,
            (None, Ok(other)) => {
                let msg = format!("VOLT_IO={other:?}: expected epoll, uring or auto");
                return Err(io::Error::new(io::ErrorKind::InvalidInput, msg));
            }
        };
        match requested {
            Some(IoBackend::Epoll) => Ok(IoBackend::Epoll),
            Some(IoBackend::Uring) => uring_probe().map(|()| IoBackend::Uring).map_err(|e| {
                let msg = format!("io_uring was requested but is unavailable: {e}");
                io::Error::new(io::ErrorKind::Unsupported, msg)
            }),
            None if uring_probe().is_ok() => Ok(IoBackend::Uring),
            None => Ok(IoBackend::Epoll),
        }
    }

    /// What a runtime built without [`Builder::io_backend`](crate::Builder::io_backend) uses
    /// (`VOLT_IO`, else the probe), for a start-up line such as `listening on … (io_uring)`.
    /// volt-rt itself prints nothing: a library writing to stderr on its own is noise in its
    /// users' logs, so the binaries say it.
    ///
    /// # Errors
    /// As [`Builder::build`](crate::Builder::build): `VOLT_IO=uring` without io_uring, or
    /// `VOLT_IO` set to something else than `epoll`, `uring` or `auto`.
    pub fn auto() -> io::Result<IoBackend> {
        IoBackend::resolve(None)
    }

    /// `"epoll"` or `"io_uring"`.
    pub fn name(self) -> &'static str {
        match self {
            IoBackend::Epoll => "epoll",
            IoBackend::Uring => "io_uring",
        }
    }
}

impl std::fmt::Display for IoBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether a ring with the features the driver needs can be set up (once per process). Miri
/// cannot run io_uring, so under Miri the answer is no and the tests use epoll.
fn uring_probe() -> Result<(), String> {
    static PROBE: OnceLock<Result<(), String>> = OnceLock::new();
    PROBE
        .get_or_init(|| {
            if cfg!(miri) {
                return Err("not under Miri".into());
            }
            uring::probe().map_err(|e| e.to_string())
        })
        .clone()
}

/// A direction of readiness.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Direction {
    Read,
    Write,
}

pub(crate) const READABLE: u8 = 1;
pub(crate) const WRITABLE: u8 = 2;
/// The peer shut down its side, or the socket failed: reads return at once from now on.
const READ_CLOSED: u8 = 4;
/// The connection is down (`HUP`) or failed: writes return at once (with an error).
const WRITE_CLOSED: u8 = 8;

/// A registration's readiness bits and the tasks waiting on them, as both drivers keep them.
///
/// End of stream and errors are kept apart, in "closed" bits that are never cleared: a short
/// read can return the last data before a FIN whose one edge has already been reported, and
/// clearing that would leave the reader waiting for an edge that never comes.
#[derive(Default)]
struct Readiness {
    ready: u8,
    reader: Option<Waker>,
    writer: Option<Waker>,
}

impl Readiness {
    fn new(ready: u8) -> Readiness {
        Readiness {
            ready,
            ..Readiness::default()
        }
    }

    /// Whether `dir` is ready or closed.
    fn is_ready(&self, dir: Direction) -> bool {
        let bits = match dir {
            Direction::Read => READABLE | READ_CLOSED,
            Direction::Write => WRITABLE | WRITE_CLOSED,
        };
        self.ready & bits != 0
    }

    /// Ready now, or the waker is kept for the next edge in `dir`.
    fn poll(&mut self, dir: Direction, cx: &Context<'_>) -> Poll<()> {
        if self.is_ready(dir) {
            return Poll::Ready(());
        }
        self.wait(dir, cx);
        Poll::Pending
    }

    /// Keeps `cx`'s waker for `dir` (once: a task polled again does not clone it again).
    fn wait(&mut self, dir: Direction, cx: &Context<'_>) {
        let slot = match dir {
            Direction::Read => &mut self.reader,
            Direction::Write => &mut self.writer,
        };
        // `future::keep_waker` does the same, but called here it cost 4 Ir an echo (pingpong,
        // epoll) and ~8 a request (plaintext, io_uring).
        if slot.as_ref().is_none_or(|w| !w.will_wake(cx.waker())) {
            *slot = Some(cx.waker().clone());
        }
    }

    /// Clears `dir`'s readiness, but not its closed bit, which is final.
    fn clear(&mut self, dir: Direction) {
        self.ready &= !match dir {
            Direction::Read => READABLE,
            Direction::Write => WRITABLE,
        };
    }

    /// Records an event (epoll's and poll's flags have the same values) and queues the wakers
    /// of the directions it makes ready.
    // Into the drivers' event loops: it runs once per event. Plain `inline` was not taken.
    #[inline(always)]
    fn set(&mut self, flags: EventFlags, to_wake: &mut Vec<Waker>) {
        let error = EventFlags::ERR | EventFlags::HUP;
        if flags.intersects(EventFlags::RDHUP | error) {
            self.ready |= READ_CLOSED;
        }
        if flags.intersects(error) {
            self.ready |= WRITE_CLOSED;
        }
        if flags.intersects(EventFlags::IN | EventFlags::RDHUP | error) {
            self.ready |= READABLE;
            queue_waker(&mut self.reader, to_wake);
        }
        if flags.intersects(EventFlags::OUT | error) {
            self.ready |= WRITABLE;
            queue_waker(&mut self.writer, to_wake);
        }
    }
}

/// Moves the waker in `waiting`, if any, to `to_wake`: a push, not `Vec::extend`, whose reserve
/// costs more (io_uring's `State::complete`: 167 -> 162 Ir per keep-alive request, two
/// completions).
fn queue_waker(waiting: &mut Option<Waker>, to_wake: &mut Vec<Waker>) {
    if let Some(w) = waiting.take() {
        to_wake.push(w);
    }
}

/// Wakes the tasks a loop turn made ready and hands back the emptied list to reuse. Called with
/// no reactor borrow held: waking a task (or dropping the last reference to one, and with it its
/// sockets) can reach the reactor again.
fn wake_all(mut wakers: Vec<Waker>) -> Vec<Waker> {
    wakers.drain(..).for_each(Waker::wake);
    wakers
}

/// What a registered descriptor is, which decides how io_uring drives it (epoll treats both
/// alike).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Readiness only; the caller makes the syscalls (UDP sockets, Unix listeners).
    #[default]
    Readiness,
    /// A connected stream socket: reads and writes go through the reactor's buffers.
    Stream,
    /// A TCP listener: on io_uring, accepts go through the ring with the peer's address.
    Acceptor,
}

/// `shutdown(2)`; a socket that is not connected (any more) has nothing to shut down.
pub(crate) fn shutdown(fd: BorrowedFd<'_>, how: Shutdown) -> io::Result<()> {
    let how = match how {
        Shutdown::Read => rustix::net::Shutdown::Read,
        Shutdown::Write => rustix::net::Shutdown::Write,
        Shutdown::Both => rustix::net::Shutdown::Both,
    };
    match rustix::net::shutdown(fd, how) {
        Ok(()) | Err(rustix::io::Errno::NOTCONN) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Wakes a worker blocked in the reactor from any thread (an eventfd).
pub(crate) struct Notifier {
    fd: OwnedFd,
}

impl Notifier {
    pub(crate) fn new() -> io::Result<Notifier> {
        let fd = eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)?;
        Ok(Notifier { fd })
    }

    pub(crate) fn wake(&self) {
        // EAGAIN means the counter is saturated: the worker is woken anyway.
        let _ = rustix::io::write(&self.fd, &1u64.to_ne_bytes());
    }

    pub(crate) fn reset(&self) {
        let mut buf = [0u8; 8];
        let _ = rustix::io::read(&self.fd, &mut buf);
    }
}

impl AsFd for Notifier {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// A worker's reactor, on one of the two drivers.
// One per worker, built once and never moved after: the size difference costs nothing.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Reactor {
    Epoll(epoll::Reactor),
    Uring(uring::Reactor),
}

impl Reactor {
    /// # Panics
    /// If io_uring was chosen but this worker cannot set up its ring (the probe passed, so this
    /// is a resource limit such as `RLIMIT_MEMLOCK` on old kernels).
    pub(crate) fn new(backend: IoBackend, notifier: &Notifier) -> io::Result<Reactor> {
        Ok(match backend {
            IoBackend::Epoll => Reactor::Epoll(epoll::Reactor::new(notifier)?),
            IoBackend::Uring => Reactor::Uring(uring::Reactor::new(notifier)?),
        })
    }

    /// Registers `fd`, assuming `ready` until told otherwise (see [`epoll::Reactor::register`]).
    pub(crate) fn register(
        &self,
        fd: BorrowedFd<'_>,
        ready: u8,
        kind: Kind,
        shared: bool,
    ) -> io::Result<usize> {
        match self {
            Reactor::Epoll(r) => Ok(r.register(ready, shared)),
            Reactor::Uring(r) => r.register(fd, ready, kind),
        }
    }

    /// Forgets `token`. The reactor closes `fd`: at once on epoll, once no operation on it is in
    /// flight on io_uring.
    pub(crate) fn deregister(&self, token: usize, fd: OwnedFd) {
        match self {
            Reactor::Epoll(r) => r.deregister(token, fd),
            Reactor::Uring(r) => r.deregister(token, fd),
        }
    }

    #[inline] // into `Source::poll_io`, as `poll_ready`
    pub(crate) fn clear_ready(&self, token: usize, dir: Direction) {
        match self {
            Reactor::Epoll(r) => r.clear_ready(token, dir),
            Reactor::Uring(r) => r.clear_ready(token, dir),
        }
    }

    /// Waits for I/O until `deadline` (`None`: until something happens) and wakes its tasks.
    /// Returns true if the worker's [`Notifier`] fired (the caller then resets it).
    pub(crate) fn poll(&self, deadline: Option<Instant>) -> bool {
        match self {
            Reactor::Epoll(r) => r.poll(deadline),
            Reactor::Uring(r) => r.poll(deadline),
        }
    }
}
