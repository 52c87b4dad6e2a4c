//! QUIC on volt-rt for one client connection: a UDP socket of its own, connected to the
//! server, and a `quinn_proto::Endpoint` holding that one connection. [`QuicConn::pump`] moves
//! datagrams between them and serves QUIC's timers; what the connection means (streams,
//! HTTP/3) is `conn.rs`'s.
//!
//! A socket per connection, not per worker: a server that spreads QUIC over workers with
//! `SO_REUSEPORT` (volt does) picks the worker by the 4-tuple's hash, so connections from one
//! socket would all land on one server worker, whatever `-c` says. One socket each gives each
//! connection its own source port, as a TCP connection has. It also lets the socket be
//! connected (`connect(2)`): the kernel filters stray datagrams, and a port with nothing bound
//! answers at once with `ConnectionRefused` (loopback's ICMP) rather than a handshake timeout.
//!
//! One `recvfrom` or `sendto` per datagram: `recvmmsg`/`sendmmsg`, or GSO/GRO
//! (`UDP_SEGMENT`), would take many datagrams per syscall.

use std::future::{poll_fn, Future};
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use quinn_proto::{ConnectionError, ConnectionHandle, DatagramEvent, EndpointConfig, VarInt};
use volt_proto::h3::Code;
use volt_rt::net::UdpSocket;
use volt_rt::time::Sleep;

use crate::worker::Plan;

/// Datagrams taken in before the driver lets the worker's other tasks run.
const BATCH: usize = 64;

/// One QUIC connection and its socket.
pub(crate) struct QuicConn {
    socket: UdpSocket,
    remote: SocketAddr,
    endpoint: quinn_proto::Endpoint,
    handle: ConnectionHandle,
    pub conn: quinn_proto::Connection,
    recv: Box<[u8]>,
    /// `send[..n]` is a datagram the socket would not take yet (`pending = Some(n)`).
    send: Vec<u8>,
    pending: Option<usize>,
    /// Where the endpoint writes a datagram it answers by itself (a stateless reset).
    scratch: Vec<u8>,
    /// QUIC's next timeout (loss detection, ACK delay, idle).
    timer: Sleep,
}

/// What a [`QuicConn::pump`] moved.
#[derive(Default)]
pub(crate) struct Pumped {
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// Something came in or a timer fired: the connection may have events.
    pub progress: bool,
    /// More datagrams may be waiting: pump again soon.
    pub more: bool,
}

impl QuicConn {
    /// Opens a connection to the run's server and completes its handshake.
    pub(crate) async fn open(plan: &Plan) -> io::Result<QuicConn> {
        let setup = plan.tls.as_ref().expect("an HTTP/3 run has a TLS setup");
        let config = setup
            .quic()
            .expect("an HTTP/3 run has a QUIC setup")
            .clone();
        let local: SocketAddr = match plan.addr {
            SocketAddr::V4(_) => (Ipv4Addr::UNSPECIFIED, 0).into(),
            SocketAddr::V6(_) => (Ipv6Addr::UNSPECIFIED, 0).into(),
        };
        let socket = UdpSocket::bind(local)?;
        socket.connect(plan.addr)?;
        let endpoint_config = EndpointConfig::default();
        // The server may send no larger datagram than our transport parameters announce
        // (RFC 9000 §18.2, quinn's default 1,472 bytes); a larger one is cut and fails QUIC's
        // authentication. So a connection's receive buffer is that, not 64 KiB.
        let recv_buf = endpoint_config.get_max_udp_payload_size() as usize;
        let mut endpoint = quinn_proto::Endpoint::new(Arc::new(endpoint_config), None, true, None);
        let now = Instant::now();
        let (handle, conn) = endpoint
            .connect(now, config, plan.addr, &setup.server_name())
            .map_err(|e| io::Error::other(format!("QUIC: {e}")))?;
        let mut quic = QuicConn {
            socket,
            remote: plan.addr,
            endpoint,
            handle,
            conn,
            recv: vec![0; recv_buf].into_boxed_slice(),
            send: Vec::with_capacity(1500),
            pending: None,
            scratch: Vec::new(),
            timer: volt_rt::time::sleep_until(now),
        };
        // The handshake: pumped until the connection says it is up (or lost). Its other
        // events (the server's first streams) stay queued for the driver.
        poll_fn(|cx| loop {
            let pumped = quic.pump(cx)?;
            while let Some(event) = quic.conn.poll() {
                match event {
                    quinn_proto::Event::Connected => return Poll::Ready(Ok(())),
                    quinn_proto::Event::ConnectionLost { reason } => {
                        return Poll::Ready(Err(handshake_error(reason)))
                    }
                    _ => {}
                }
            }
            if !pumped.more {
                return Poll::Pending;
            }
        })
        .await?;
        Ok(quic)
    }

    /// Takes in the datagrams waiting (a batch), serves QUIC's timers, sends what the
    /// connection has to send, and sets the timer. `Err`: the socket failed (the server's
    /// port refused).
    pub(crate) fn pump(&mut self, cx: &mut Context<'_>) -> io::Result<Pumped> {
        let mut pumped = Pumped::default();
        for i in 0..=BATCH {
            if i == BATCH {
                pumped.more = true;
                break;
            }
            let (len, from) = match self.socket.poll_recv_from(cx, &mut self.recv) {
                Poll::Pending => break,
                Poll::Ready(result) => result?,
            };
            pumped.bytes_read += len as u64;
            pumped.progress = true;
            let now = Instant::now();
            // quinn-proto takes each datagram as a `BytesMut` of its own.
            let data = BytesMut::from(&self.recv[..len]);
            self.scratch.clear();
            match self
                .endpoint
                .handle(now, from, None, None, data, &mut self.scratch)
            {
                Some(DatagramEvent::ConnectionEvent(_, event)) => self.conn.handle_event(event),
                Some(DatagramEvent::Response(t)) => {
                    let _ = self
                        .socket
                        .try_send_to(&self.scratch[..t.size], self.remote);
                }
                _ => {}
            }
        }
        let now = Instant::now();
        if self.conn.poll_timeout().is_some_and(|t| t <= now) {
            self.conn.handle_timeout(now);
            pumped.progress = true;
        }
        self.endpoint_events();
        pumped.bytes_written += self.transmit(cx)?;
        if let Some(t) = self.conn.poll_timeout() {
            self.timer.reset(t);
            if Pin::new(&mut self.timer).poll(cx).is_ready() {
                pumped.more = true;
            }
        }
        Ok(pumped)
    }

    /// Sends what the connection has to send (after the driver wrote requests), until the
    /// socket is full; returns the bytes sent.
    pub(crate) fn transmit(&mut self, cx: &mut Context<'_>) -> io::Result<u64> {
        let mut sent = 0;
        loop {
            let n = match self.pending {
                Some(n) => n,
                None => {
                    self.send.clear();
                    match self.conn.poll_transmit(Instant::now(), 1, &mut self.send) {
                        Some(t) => t.size,
                        None => return Ok(sent),
                    }
                }
            };
            match self.socket.poll_send_to(cx, &self.send[..n], self.remote) {
                Poll::Pending => {
                    self.pending = Some(n);
                    return Ok(sent);
                }
                Poll::Ready(Ok(_)) => sent += n as u64,
                Poll::Ready(Err(e)) if e.kind() == io::ErrorKind::ConnectionRefused => {
                    return Err(e)
                }
                // Lost on the way, as a datagram may be: QUIC's loss recovery sends it again.
                Poll::Ready(Err(_)) => {}
            }
            self.pending = None;
        }
    }

    fn endpoint_events(&mut self) {
        while let Some(event) = self.conn.poll_endpoint_events() {
            if let Some(back) = self.endpoint.handle_event(self.handle, event) {
                self.conn.handle_event(back);
            }
        }
    }

    /// Closes the connection with `code` (CONNECTION_CLOSE), sent once now without waiting.
    pub(crate) fn close(&mut self, code: Code, reason: &'static str) {
        if !self.conn.is_closed() {
            let code = VarInt::from_u64(code.0).unwrap_or(VarInt::MAX);
            let reason = Bytes::from_static(reason.as_bytes());
            self.conn.close(Instant::now(), code, reason);
        }
        self.send.clear();
        if let Some(t) = self.conn.poll_transmit(Instant::now(), 1, &mut self.send) {
            let _ = self.socket.try_send_to(&self.send[..t.size], self.remote);
        }
    }
}

impl Drop for QuicConn {
    /// A connection dropped (the run ended, its slot timed out, a new one replaces it) says so
    /// to the server, which otherwise holds its state until its idle timeout.
    fn drop(&mut self) {
        self.close(Code::H3_NO_ERROR, "");
    }
}

/// A handshake that failed, as an I/O error for the connect error count and the report.
fn handshake_error(reason: ConnectionError) -> io::Error {
    let kind = match reason {
        ConnectionError::TimedOut => io::ErrorKind::TimedOut,
        ConnectionError::Reset | ConnectionError::ConnectionClosed(_) => {
            io::ErrorKind::ConnectionRefused
        }
        _ => io::ErrorKind::Other,
    };
    io::Error::new(kind, format!("QUIC handshake failed: {reason}"))
}
