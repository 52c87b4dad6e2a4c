//! Unix-domain stream sockets.

use std::future::poll_fn;
use std::io;
use std::path::Path;

use rustix::net::{AddressFamily, SocketAddrUnix, SocketType};

use super::source::Source;
use super::stream::{socket, Stream, Unix, SOCKET_FLAGS};
use crate::reactor::{Direction, Kind};

/// A Unix-domain stream listener registered with the current worker.
pub struct UnixListener {
    source: Source,
}

impl UnixListener {
    /// Binds to `path` (which must not exist) and listens.
    pub fn bind(path: impl AsRef<Path>) -> io::Result<UnixListener> {
        let fd = socket(AddressFamily::UNIX)?;
        rustix::net::bind(&fd, &SocketAddrUnix::new(path.as_ref())?)?;
        rustix::net::listen(&fd, 1024)?;
        Ok(UnixListener {
            source: Source::new(fd, Kind::Readiness, false)?,
        })
    }

    /// Waits for a connection.
    pub async fn accept(&self) -> io::Result<UnixStream> {
        let fd = poll_fn(|cx| {
            let accept = |fd: &_| rustix::net::accept_with(fd, SOCKET_FLAGS);
            self.source.poll_io(cx, Direction::Read, accept, |_| false)
        })
        .await?;
        Stream::new(fd, false)
    }
}

/// A Unix-domain stream socket registered with the current worker.
pub type UnixStream = Stream<Unix>;

impl Stream<Unix> {
    /// Connects to the listener at `path`.
    ///
    /// Fails with [`io::ErrorKind::WouldBlock`] if the listener's backlog is full (Linux
    /// answers a non-blocking Unix `connect` so instead of queueing it).
    pub async fn connect(path: impl AsRef<Path>) -> io::Result<UnixStream> {
        let addr = SocketAddrUnix::new(path.as_ref())?;
        Stream::connect_fd(socket(AddressFamily::UNIX)?, &addr).await
    }

    /// A connected pair, both ends on the current worker.
    pub fn pair() -> io::Result<(UnixStream, UnixStream)> {
        let (family, kind) = (AddressFamily::UNIX, SocketType::STREAM);
        let (a, b) = rustix::net::socketpair(family, kind, SOCKET_FLAGS, None)?;
        Ok((Stream::new(a, false)?, Stream::new(b, false)?))
    }
}

opaque_debug!(UnixListener, UnixStream);
