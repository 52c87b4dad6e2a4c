//! The reactor: waits for I/O and wakes the tasks waiting on it. Two drivers, chosen once per
//! runtime: [`epoll`] (readiness; the sockets make the syscalls) and [`uring`] (completions; the
//! reactor owns receive and send buffers, so a request costs no syscall of its own).
//!
//! The choice lives here and only here: [`IoBackend::resolve`] picks one, [`Reactor`] dispatches
//! to it. Listeners are readiness-driven on both drivers; streams ([`Kind::Stream`]) go through
//! [`uring::Reactor::poll_recv`] / [`uring::Reactor::poll_send`] on io_uring.

mod epoll;
pub(crate) mod uring;

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::OnceLock;
use std::task::{Context, Poll};
use std::time::Instant;

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
        let requested = match requested {
            Some(backend) => Some(backend),
            None => match std::env::var("VOLT_IO").as_deref() {
                Ok("epoll") => Some(IoBackend::Epoll),
                Ok("uring") | Ok("io_uring") => Some(IoBackend::Uring),
                Ok("") | Ok("auto") | Err(_) => None,
                Ok(other) => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("VOLT_IO={other:?}: expected epoll, uring or auto"),
                    ))
                }
            },
        };
        Ok(match requested {
            Some(IoBackend::Epoll) => IoBackend::Epoll,
            Some(IoBackend::Uring) => match uring_probe() {
                Ok(()) => IoBackend::Uring,
                Err(e) => {
                    return Err(io::Error::new(
                        io::ErrorKind::Unsupported,
                        format!("io_uring was requested but is unavailable: {e}"),
                    ))
                }
            },
            None if uring_probe().is_ok() => IoBackend::Uring,
            None => IoBackend::Epoll,
        })
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

impl Direction {
    fn bit(self) -> u8 {
        match self {
            Direction::Read => READABLE,
            Direction::Write => WRITABLE,
        }
    }

    /// The sticky bit that also makes this direction ready.
    fn closed_bit(self) -> u8 {
        match self {
            Direction::Read => READ_CLOSED,
            Direction::Write => WRITE_CLOSED,
        }
    }
}

pub(crate) const READABLE: u8 = 1;
pub(crate) const WRITABLE: u8 = 2;
/// The peer shut down its side, or the socket failed: reads return at once from now on.
const READ_CLOSED: u8 = 4;
/// The connection is down (`HUP`) or failed: writes return at once (with an error).
const WRITE_CLOSED: u8 = 8;

/// What a registered descriptor is, which decides how io_uring drives it (epoll treats both
/// alike).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Readiness only; the caller makes the syscalls (listeners).
    #[default]
    Readiness,
    /// A connected stream socket: reads and writes go through the reactor's buffers.
    Stream,
    /// A TCP listener: on io_uring, accepts go through the ring with the peer's address.
    Acceptor,
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
            Reactor::Epoll(r) => r.register(fd, ready, shared),
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

    pub(crate) fn poll_ready(&self, token: usize, dir: Direction, cx: &Context<'_>) -> Poll<()> {
        match self {
            Reactor::Epoll(r) => r.poll_ready(token, dir, cx),
            Reactor::Uring(r) => r.poll_ready(token, dir, Some(cx)),
        }
    }

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
