//! TCP listeners and streams.

use std::fmt;
use std::future::poll_fn;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::time::Duration;

use rustix::net::{sockopt, AddressFamily};

use super::source::Source;
use super::stream::{socket, Stream, Tcp, SOCKET_FLAGS};
use crate::reactor::{Direction, Kind};

/// How a [`TcpListener`] is bound (`SO_REUSEADDR` always on), or a
/// [`UdpSocket`](super::UdpSocket) ([`ListenOptions::bind_udp`]: only `reuse_port` applies).
#[derive(Clone, Debug)]
pub struct ListenOptions {
    pub(super) reuse_port: bool,
    backlog: i32,
}

impl Default for ListenOptions {
    fn default() -> Self {
        ListenOptions {
            reuse_port: false,
            backlog: 1024,
        }
    }
}

impl ListenOptions {
    /// Defaults: no `SO_REUSEPORT`, backlog 1024.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `SO_REUSEPORT`, so every worker can bind its own listener on the same port and the
    /// kernel spreads new connections over them.
    pub fn reuse_port(mut self, on: bool) -> Self {
        self.reuse_port = on;
        self
    }

    /// The accept queue length passed to `listen(2)` (capped by `net.core.somaxconn`).
    pub fn backlog(mut self, backlog: u32) -> Self {
        self.backlog = backlog.min(i32::MAX as u32) as i32;
        self
    }

    /// Binds a listening socket without registering it with a worker, to hand to one later
    /// with [`TcpListener::from_std`] (for example: bind in `main` to learn the port, then move
    /// it to a worker thread).
    pub fn bind_std(&self, addr: impl ToSocketAddrs) -> io::Result<std::net::TcpListener> {
        Ok(std::net::TcpListener::from(self.bind_fd(addr)?))
    }

    /// Binds a listener on the current worker.
    pub fn bind(&self, addr: impl ToSocketAddrs) -> io::Result<TcpListener> {
        Ok(TcpListener {
            source: Source::new(self.bind_fd(addr)?, Kind::Acceptor, false)?,
        })
    }

    /// A listening socket on the first address of `addr` that binds.
    fn bind_fd(&self, addr: impl ToSocketAddrs) -> io::Result<OwnedFd> {
        let mut last_err = None;
        for addr in addr.to_socket_addrs()? {
            match self.bind_one(addr) {
                Ok(fd) => return Ok(fd),
                Err(e) => last_err = Some(e),
            }
        }
        Err(last_err
            .unwrap_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no addresses to bind")))
    }

    fn bind_one(&self, addr: SocketAddr) -> io::Result<OwnedFd> {
        let fd = new_socket(addr)?;
        sockopt::set_socket_reuseaddr(&fd, true)?;
        if self.reuse_port {
            sockopt::set_socket_reuseport(&fd, true)?;
        }
        rustix::net::bind(&fd, &addr)?;
        rustix::net::listen(&fd, self.backlog)?;
        Ok(fd)
    }
}

fn new_socket(addr: SocketAddr) -> io::Result<OwnedFd> {
    socket(match addr {
        SocketAddr::V4(_) => AddressFamily::INET,
        SocketAddr::V6(_) => AddressFamily::INET6,
    })
}

pub(super) fn to_std_addr(addr: rustix::net::SocketAddrAny) -> io::Result<SocketAddr> {
    SocketAddr::try_from(addr).map_err(|_| io::Error::other("not an IP socket address"))
}

/// Makes a listening socket (a std one, as [`ListenOptions::bind_std`] gives) hand over a
/// connection only once the client has sent something, or about `wait` after the handshake if
/// it sends nothing (`TCP_DEFER_ACCEPT`, Linux); `None` hands over every connection at once.
/// For protocols where the client speaks first, such as HTTP: the accept then finds the
/// request waiting, and the handshake's last ACK wakes nobody.
pub fn set_defer_accept(listener: &impl AsFd, wait: Option<Duration>) -> io::Result<()> {
    // Whole seconds, rounded up (a float cast saturates instead of wrapping).
    let secs = wait.map_or(0, |w| w.as_secs_f64().ceil() as libc::c_int);
    let (fd, len) = (listener.as_fd().as_raw_fd(), size_of::<i32>() as u32);
    let (level, name) = (libc::IPPROTO_TCP, libc::TCP_DEFER_ACCEPT);
    // SAFETY: `setsockopt` reads `len` bytes, the size of `secs`, from a live `c_int` on this
    // stack frame; `fd` is borrowed from `listener`, so it stays open for the call. (rustix,
    // used for every other socket option, has no call for this one.)
    match unsafe { libc::setsockopt(fd, level, name, (&raw const secs).cast(), len) } {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

/// A TCP listener registered with the current worker.
pub struct TcpListener {
    source: Source,
}

impl TcpListener {
    /// Binds with default [`ListenOptions`] (no `SO_REUSEPORT`, backlog 1024).
    pub fn bind(addr: impl ToSocketAddrs) -> io::Result<TcpListener> {
        ListenOptions::new().bind(addr)
    }

    /// Takes over a bound, listening std socket (it is made non-blocking).
    pub fn from_std(listener: std::net::TcpListener) -> io::Result<TcpListener> {
        listener.set_nonblocking(true)?;
        Ok(TcpListener {
            source: Source::new(OwnedFd::from(listener), Kind::Acceptor, true)?,
        })
    }

    /// Waits for a connection.
    pub async fn accept(&self) -> io::Result<(TcpStream, SocketAddr)> {
        let (fd, addr) = poll_fn(|cx| {
            if let Some(accepted) = self.source.poll_accept(cx) {
                return accepted;
            }
            let accept = |fd: &_| rustix::net::acceptfrom_with(fd, SOCKET_FLAGS);
            let accepted = self.source.poll_io(cx, Direction::Read, accept, |_| false);
            accepted.map(|r| match r? {
                (fd, Some(addr)) => Ok((fd, to_std_addr(addr)?)),
                (_, None) => Err(io::Error::other("accepted socket without a peer address")),
            })
        })
        .await?;
        Ok((Stream::new(fd, false)?, addr))
    }

    /// The address this listener is bound to.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        to_std_addr(rustix::net::getsockname(self.source.as_fd())?)
    }
}

impl fmt::Debug for TcpListener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TcpListener")
            .field("local_addr", &self.local_addr().ok())
            .finish()
    }
}

/// A TCP connection registered with the current worker.
pub type TcpStream = Stream<Tcp>;

impl Stream<Tcp> {
    /// Connects to the first address of `addr` that accepts.
    pub async fn connect(addr: impl ToSocketAddrs) -> io::Result<TcpStream> {
        let mut last_err = None;
        for addr in addr.to_socket_addrs()? {
            match async { Stream::connect_fd(new_socket(addr)?, &addr).await }.await {
                Ok(s) => return Ok(s),
                Err(e) => last_err = Some(e),
            }
        }
        Err(last_err.unwrap_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "no addresses to connect to")
        }))
    }

    /// Takes over a connected std socket (it is made non-blocking).
    pub fn from_std(stream: std::net::TcpStream) -> io::Result<TcpStream> {
        stream.set_nonblocking(true)?;
        Stream::new(OwnedFd::from(stream), true)
    }

    /// Sets `TCP_NODELAY` (no Nagle delay for small writes).
    pub fn set_nodelay(&self, on: bool) -> io::Result<()> {
        Ok(sockopt::set_tcp_nodelay(self, on)?)
    }

    /// Sets `SO_LINGER`. `Some(Duration::ZERO)` makes the close a reset (RST), which tells
    /// the peer the stream was cut short rather than ended.
    pub fn set_linger(&self, linger: Option<std::time::Duration>) -> io::Result<()> {
        Ok(sockopt::set_socket_linger(self, linger)?)
    }

    /// The remote address.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        let addr = rustix::net::getpeername(self)?.ok_or(io::ErrorKind::NotConnected)?;
        to_std_addr(addr)
    }

    /// The local address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        to_std_addr(rustix::net::getsockname(self)?)
    }
}

impl fmt::Debug for TcpStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TcpStream")
            .field("local_addr", &self.local_addr().ok())
            .field("peer_addr", &self.peer_addr().ok())
            .finish()
    }
}
