//! UDP sockets, readiness-driven on both reactors: the caller makes `recvfrom`/`sendto` itself.
//!
//! A datagram is small and whole, so the io_uring driver's stream buffers (which concatenate
//! bytes) do not fit it; a multishot poll reports readiness as for a listener. For a QUIC
//! server at high rates `recvmmsg`, GRO/GSO (`UDP_SEGMENT`) and ECN bits (`IP_RECVTOS`) would
//! cut syscalls per packet by an order of magnitude; none is built yet, one datagram is one
//! syscall.

use std::fmt;
use std::future::poll_fn;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::os::fd::{AsFd, BorrowedFd};
use std::task::{Context, Poll};

use rustix::net::{sockopt, AddressFamily, RecvFlags, SendFlags, SocketType};

use super::source::Source;
use super::stream::SOCKET_FLAGS;
use super::tcp::{to_std_addr, ListenOptions};
use crate::reactor::{Direction, Kind};

/// A UDP socket registered with the current worker.
pub struct UdpSocket {
    source: Source,
}

impl ListenOptions {
    /// Binds a UDP socket on the current worker, on the first address of `addr` that binds.
    /// Only [`ListenOptions::reuse_port`] applies (so each worker can bind the same port and the
    /// kernel spreads datagrams over them by their 4-tuple's hash). Unlike for TCP,
    /// `SO_REUSEADDR` is not set: on UDP it would let a second socket silently share the port.
    pub fn bind_udp(&self, addr: impl ToSocketAddrs) -> io::Result<UdpSocket> {
        let mut last_err = None;
        for addr in addr.to_socket_addrs()? {
            let family = match addr {
                SocketAddr::V4(_) => AddressFamily::INET,
                SocketAddr::V6(_) => AddressFamily::INET6,
            };
            let bound = (|| {
                let fd = rustix::net::socket_with(family, SocketType::DGRAM, SOCKET_FLAGS, None)?;
                if self.reuse_port {
                    sockopt::set_socket_reuseport(&fd, true)?;
                }
                rustix::net::bind(&fd, &addr)?;
                Ok::<_, io::Error>(fd)
            })();
            match bound {
                Ok(fd) => {
                    let source = Source::new(fd, Kind::Readiness, false)?;
                    return Ok(UdpSocket { source });
                }
                Err(e) => last_err = Some(e),
            }
        }
        Err(last_err
            .unwrap_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no addresses to bind")))
    }
}

impl UdpSocket {
    /// Binds with default [`ListenOptions`] (no `SO_REUSEPORT`).
    pub fn bind(addr: impl ToSocketAddrs) -> io::Result<UdpSocket> {
        ListenOptions::new().bind_udp(addr)
    }

    /// The address this socket is bound to.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        to_std_addr(rustix::net::getsockname(self.source.as_fd())?)
    }

    /// Connects the socket to `addr` (`connect(2)`): the kernel then drops datagrams from
    /// anywhere else, and an ICMP error for a datagram sent there (nothing bound on that port,
    /// on loopback) fails the next receive with `ConnectionRefused` instead of going unseen.
    /// `send_to` still works, to `addr`.
    pub fn connect(&self, addr: SocketAddr) -> io::Result<()> {
        rustix::net::connect(self.source.as_fd(), &addr)?;
        Ok(())
    }

    /// Receives one datagram into `buf`: its length and sender. A datagram longer than `buf`
    /// is cut to fit (the rest is lost), so give 65,535 bytes when the size is unknown.
    pub async fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        poll_fn(|cx| self.poll_recv_from(cx, buf)).await
    }

    /// Sends `buf` as one datagram to `target`.
    pub async fn send_to(&self, buf: &[u8], target: SocketAddr) -> io::Result<usize> {
        poll_fn(|cx| self.poll_send_to(cx, buf, target)).await
    }

    /// [`UdpSocket::recv_from`] as a poll: `Pending` (with `cx` woken on the next datagram)
    /// when none is queued.
    pub fn poll_recv_from(
        &self,
        cx: &Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<(usize, SocketAddr)>> {
        // Readiness is cleared only on `EAGAIN`: one datagram read says nothing of the next.
        let recv = |fd: &_| rustix::net::recvfrom(fd, &mut *buf, RecvFlags::empty());
        let received = self.source.poll_io(cx, Direction::Read, recv, |_| false);
        received.map(|r| from_recv(r?))
    }

    /// [`UdpSocket::send_to`] as a poll: `Pending` while the socket's send buffer is full.
    pub fn poll_send_to(
        &self,
        cx: &Context<'_>,
        buf: &[u8],
        target: SocketAddr,
    ) -> Poll<io::Result<usize>> {
        let send = |fd: &_| rustix::net::sendto(fd, buf, SendFlags::empty(), &target);
        self.source.poll_io(cx, Direction::Write, send, |_| false)
    }

    /// One `recvfrom` without waiting: `WouldBlock` when no datagram is queued.
    pub fn try_recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        let recv = |fd: &_| rustix::net::recvfrom(fd, buf, RecvFlags::empty());
        from_recv(self.source.try_io(Direction::Read, recv)?)
    }

    /// One `sendto` without waiting: `WouldBlock` when the send buffer is full.
    pub fn try_send_to(&self, buf: &[u8], target: SocketAddr) -> io::Result<usize> {
        let send = |fd: &_| rustix::net::sendto(fd, buf, SendFlags::empty(), &target);
        self.source.try_io(Direction::Write, send)
    }
}

/// `recvfrom`'s answer as (bytes in the buffer, sender).
fn from_recv(
    (len, _, from): (usize, usize, Option<rustix::net::SocketAddrAny>),
) -> io::Result<(usize, SocketAddr)> {
    let from = from.ok_or_else(|| io::Error::other("datagram without a sender address"))?;
    Ok((len, to_std_addr(from)?))
}

impl AsFd for UdpSocket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.source.as_fd()
    }
}

impl fmt::Debug for UdpSocket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UdpSocket")
            .field("local_addr", &self.local_addr().ok())
            .finish()
    }
}
