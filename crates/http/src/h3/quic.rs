//! QUIC on volt-rt: one `quinn_proto::Endpoint` per worker, driven by one task ([`drive`])
//! over the worker's own UDP socket, and the streams of its connections as the request tasks
//! read and write them ([`StreamRef`]).
//!
//! quinn-proto is sans-I/O: datagrams go in through `Endpoint::handle` (which routes them to
//! a connection, or starts one), and each connection is asked for what to send
//! (`poll_transmit`), when to wake it (`poll_timeout` / `handle_timeout`) and what happened
//! (`poll`: handshake done, streams opened, readable, writable, connection lost). The driver
//! does all of that on every wake-up; a stream's reader or writer is woken by the stream
//! events that concern it, and wakes the driver after reading or writing, since either can
//! give quinn-proto something to send (data, or flow-control credit).
//!
//! Each worker binds its own socket on the server's port with `SO_REUSEPORT`: the kernel
//! picks the socket by a hash of the 4-tuple, so one connection's datagrams keep reaching the
//! worker that holds its state. A client whose address changes (NAT rebinding, migration)
//! can hash to another worker, which does not know the connection; migration is therefore
//! refused in the server config (RFC 9000 §9: `disable_active_migration`), and a rebound
//! client times out. Routing by connection ID (eBPF `SO_ATTACH_REUSEPORT_EBPF`) would lift that.

use std::cell::RefCell;
use std::future::{poll_fn, Future};
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use quinn_proto::{
    ConnectionHandle, DatagramEvent, Dir, Event, ReadError, StreamEvent, StreamId, VarInt,
    WriteError,
};
use rustc_hash::FxHashMap;
use volt_rt::net::UdpSocket;
use volt_rt::time::{sleep_until, Sleep};

/// Largest UDP payload read (a datagram is cut to the buffer it is read into).
const RECV_BUF: usize = 64 * 1024;
/// Datagrams taken in, or connections served, before the driver yields to the worker's other
/// tasks (it comes back at once).
const BATCH: usize = 64;

/// The QUIC state of one worker, shared by its driver and its streams' tasks.
pub(crate) struct Quic {
    inner: RefCell<Inner>,
}

struct Inner {
    endpoint: quinn_proto::Endpoint,
    conns: FxHashMap<ConnectionHandle, Conn>,
    /// Tells a connection from a later one with the same (reused) handle.
    next_gen: u64,
    /// New connections are refused (graceful shutdown).
    refusing: bool,
    /// The driver task.
    driver: Option<Waker>,
    /// Streams the peers opened, not yet handed to [`Handler::stream`].
    opened: Vec<StreamRef>,
    /// Connections that completed their handshake, not yet handed to [`Handler::connected`].
    connected: Vec<ConnRef>,
    /// Connections gone, not yet handed to [`Handler::closed`].
    closed: Vec<ConnRef>,
}

/// One connection and the tasks waiting on its streams.
struct Conn {
    conn: quinn_proto::Connection,
    gen: u64,
    readers: FxHashMap<StreamId, Waker>,
    writers: FxHashMap<StreamId, Waker>,
}

/// What the layer above (HTTP/3) does with connections and streams.
pub(crate) trait Handler {
    /// A connection finished its handshake.
    fn connected(&self, conn: ConnRef);
    /// The peer opened a stream.
    fn stream(&self, stream: StreamRef, dir: Dir);
    /// A connection is gone (closed and drained).
    fn closed(&self, conn: ConnRef);
    /// Something may have changed while refusing connections (a stream acknowledged, a
    /// connection gone): what graceful shutdown waits on.
    fn changed(&self);
}

/// A connection, as the tasks serving it name it. Every call is a no-op (or an error) once
/// the connection is gone.
#[derive(Clone)]
pub(crate) struct ConnRef {
    quic: Rc<Quic>,
    handle: ConnectionHandle,
    gen: u64,
}

/// One stream of a connection.
#[derive(Clone)]
pub(crate) struct StreamRef {
    pub(crate) conn: ConnRef,
    pub(crate) id: StreamId,
}

/// Why a stream read or write failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StreamError {
    /// The peer reset the stream (read) or asked us to stop sending (write), with this code.
    Reset(u64),
    /// The connection is gone (closed, lost, timed out), or our side of the stream is: reset,
    /// by us or in answer to the peer's STOP_SENDING ([`on_events`]).
    Closed,
}

impl Quic {
    pub(crate) fn new(server_config: Arc<quinn_proto::ServerConfig>) -> Rc<Quic> {
        let endpoint = quinn_proto::Endpoint::new(
            Arc::new(quinn_proto::EndpointConfig::default()),
            Some(server_config),
            true,
            None,
        );
        Rc::new(Quic {
            inner: RefCell::new(Inner {
                endpoint,
                conns: FxHashMap::default(),
                next_gen: 0,
                refusing: false,
                driver: None,
                opened: Vec::new(),
                connected: Vec::new(),
                closed: Vec::new(),
            }),
        })
    }

    /// Refuses new connections from now on (graceful shutdown).
    pub(crate) fn refuse_new(&self) {
        let mut inner = self.inner.borrow_mut();
        inner.refusing = true;
        // The driver ends once no connection is left, which may be now.
        Quic::wake_driver(&mut inner);
    }

    /// The connections still open.
    pub(crate) fn conns(self: &Rc<Self>) -> Vec<ConnRef> {
        let inner = self.inner.borrow();
        let conns = inner.conns.iter().map(|(&handle, c)| ConnRef {
            quic: self.clone(),
            handle,
            gen: c.gen,
        });
        conns.collect()
    }

    fn wake_driver(inner: &mut Inner) {
        if let Some(w) = &inner.driver {
            w.wake_by_ref();
        }
    }
}

impl ConnRef {
    /// Names the connection among all of this worker's, past and present.
    pub(crate) fn key(&self) -> (ConnectionHandle, u64) {
        (self.handle, self.gen)
    }

    /// Our streams that may hold data the peer has not acknowledged (0 once gone).
    pub(crate) fn unacknowledged_streams(&self) -> usize {
        self.peek(|c| c.conn.streams().send_streams()).unwrap_or(0)
    }

    /// Runs `f` on the connection, if it is still there, and wakes the driver after: what `f`
    /// did may have given the connection something to send.
    fn with<R>(&self, f: impl FnOnce(&mut Conn) -> R) -> Option<R> {
        let mut inner = self.quic.inner.borrow_mut();
        let r = self.look(&mut inner, f);
        Quic::wake_driver(&mut inner);
        r
    }

    /// Runs `f` on the connection, if it is still there, without waking the driver: for what
    /// only looks (waking there would have graceful shutdown, which looks on every driver
    /// turn, and the driver wake each other in a loop).
    fn peek<R>(&self, f: impl FnOnce(&mut Conn) -> R) -> Option<R> {
        self.look(&mut self.quic.inner.borrow_mut(), f)
    }

    fn look<R>(&self, inner: &mut Inner, f: impl FnOnce(&mut Conn) -> R) -> Option<R> {
        let conn = inner
            .conns
            .get_mut(&self.handle)
            .filter(|c| c.gen == self.gen)?;
        Some(f(conn))
    }

    /// Opens a unidirectional stream of ours, if the peer allows one now.
    pub(crate) fn open_uni(&self) -> Option<StreamRef> {
        let id = self.with(|c| c.conn.streams().open(Dir::Uni)).flatten()?;
        Some(StreamRef {
            conn: self.clone(),
            id,
        })
    }

    /// Closes the connection with an application error code (RFC 9000 §10.2).
    pub(crate) fn close(&self, code: u64, reason: &'static str) {
        let code = VarInt::from_u64(code).unwrap_or(VarInt::MAX);
        let reason = Bytes::from_static(reason.as_bytes());
        self.with(|c| c.conn.close(Instant::now(), code, reason));
    }

    /// Whether the connection is closing (or gone).
    pub(crate) fn is_closed(&self) -> bool {
        self.peek(|c| c.conn.is_closed()).unwrap_or(true)
    }

    /// The peer's address.
    pub(crate) fn remote(&self) -> Option<SocketAddr> {
        self.peek(|c| c.conn.remote_address())
    }
}

impl StreamRef {
    /// The next piece of the stream, `Ok(None)` at its end.
    pub(crate) fn poll_read(&self, cx: &Context<'_>) -> Poll<Result<Option<Bytes>, StreamError>> {
        let id = self.id;
        let read = self.conn.with(|c| {
            let mut recv = c.conn.recv_stream(id);
            let mut chunks = match recv.read(true) {
                Ok(chunks) => chunks,
                // Read to its end (or reset) before: nothing more comes.
                Err(_) => return Poll::Ready(Ok(None)),
            };
            let result = match chunks.next(usize::MAX) {
                Ok(Some(chunk)) => Poll::Ready(Ok(Some(chunk.bytes))),
                Ok(None) => Poll::Ready(Ok(None)),
                Err(ReadError::Blocked) => Poll::Pending,
                Err(ReadError::Reset(code)) => Poll::Ready(Err(StreamError::Reset(code.into()))),
            };
            // Gives credit back to the peer (MAX_STREAM_DATA) as the data is taken.
            let _ = chunks.finalize();
            if result.is_pending() && !c.conn.is_closed() {
                c.readers.insert(id, cx.waker().clone());
            }
            match result {
                Poll::Pending if c.conn.is_closed() => Poll::Ready(Err(StreamError::Closed)),
                other => other,
            }
        });
        read.unwrap_or(Poll::Ready(Err(StreamError::Closed)))
    }

    /// The next piece of the stream, `Ok(None)` at its end.
    pub(crate) async fn read(&self) -> Result<Option<Bytes>, StreamError> {
        poll_fn(|cx| self.poll_read(cx)).await
    }

    /// Writes what the stream's and connection's windows take of `data` (at least a byte).
    pub(crate) fn poll_write(
        &self,
        cx: &Context<'_>,
        data: &[u8],
    ) -> Poll<Result<usize, StreamError>> {
        let id = self.id;
        let written = self
            .conn
            .with(|c| match c.conn.send_stream(id).write(data) {
                Ok(n) => Poll::Ready(Ok(n)),
                Err(WriteError::Blocked) if !c.conn.is_closed() => {
                    c.writers.insert(id, cx.waker().clone());
                    Poll::Pending
                }
                Err(WriteError::Stopped(code)) => Poll::Ready(Err(StreamError::Reset(code.into()))),
                Err(_) => Poll::Ready(Err(StreamError::Closed)),
            });
        written.unwrap_or(Poll::Ready(Err(StreamError::Closed)))
    }

    /// Writes all of `data`.
    pub(crate) async fn write_all(&self, mut data: &[u8]) -> Result<(), StreamError> {
        while !data.is_empty() {
            let n = poll_fn(|cx| self.poll_write(cx, data)).await?;
            data = &data[n..];
        }
        Ok(())
    }

    /// Writes `data` without waiting, for the few bytes of a control stream (SETTINGS,
    /// GOAWAY), which quinn's send buffer (the connection's send window, 10 MB by default)
    /// always takes; what it would not take is dropped.
    pub(crate) fn write_now(&self, data: &[u8]) {
        let id = self.id;
        self.conn.with(|c| c.conn.send_stream(id).write(data));
    }

    /// Ends our side of the stream (FIN).
    pub(crate) fn finish(&self) {
        let id = self.id;
        self.conn.with(|c| c.conn.send_stream(id).finish());
    }

    /// Abandons our side of the stream (RESET_STREAM with `code`).
    pub(crate) fn reset(&self, code: u64) {
        let (id, code) = (self.id, VarInt::from_u64(code).unwrap_or(VarInt::MAX));
        self.conn.with(|c| c.conn.send_stream(id).reset(code));
    }

    /// Asks the peer to stop sending on the stream (STOP_SENDING with `code`).
    pub(crate) fn stop(&self, code: u64) {
        let (id, code) = (self.id, VarInt::from_u64(code).unwrap_or(VarInt::MAX));
        self.conn.with(|c| c.conn.recv_stream(id).stop(code));
    }

    /// Forgets the wakers this stream's task left (its task is over).
    pub(crate) fn release(&self) {
        let id = self.id;
        self.conn.peek(|c| {
            c.readers.remove(&id);
            c.writers.remove(&id);
        });
    }
}

/// Runs the endpoint on `socket`, handing connections and streams to `handler`, until it
/// refuses new connections ([`Quic::refuse_new`]) and every connection is gone.
pub(crate) async fn drive(quic: Rc<Quic>, socket: UdpSocket, handler: &impl Handler) {
    let mut driver = Driver {
        quic,
        socket,
        recv: vec![0; RECV_BUF],
        send: Vec::new(),
        blocked: None,
        timer: Box::pin(sleep_until(Instant::now())),
    };
    poll_fn(|cx| {
        driver.poll(cx);
        let (opened, connected, closed, refusing, finished) = {
            let inner = &mut *driver.quic.inner.borrow_mut();
            (
                std::mem::take(&mut inner.opened),
                std::mem::take(&mut inner.connected),
                std::mem::take(&mut inner.closed),
                inner.refusing,
                inner.refusing && inner.conns.is_empty(),
            )
        };
        for conn in connected {
            handler.connected(conn);
        }
        for stream in opened {
            let dir = stream.id.dir();
            handler.stream(stream, dir);
        }
        for conn in closed {
            handler.closed(conn);
        }
        if refusing {
            handler.changed();
        }
        match finished {
            true => Poll::Ready(()),
            false => Poll::Pending,
        }
    })
    .await
}

struct Driver {
    quic: Rc<Quic>,
    socket: UdpSocket,
    recv: Vec<u8>,
    send: Vec<u8>,
    /// A datagram the socket would not take (its send buffer was full), sent first next time.
    blocked: Option<(Vec<u8>, SocketAddr)>,
    timer: Pin<Box<Sleep>>,
}

impl Driver {
    fn poll(&mut self, cx: &mut Context<'_>) {
        self.quic.inner.borrow_mut().driver = Some(cx.waker().clone());
        let mut busy = self.receive(cx);
        let now = Instant::now();
        let mut guard = self.quic.inner.borrow_mut();
        let inner = &mut *guard;
        let handles: Vec<ConnectionHandle> = inner.conns.keys().copied().collect();
        let mut next_timeout: Option<Instant> = None;
        for handle in handles {
            let gone = {
                let conn = inner.conns.get_mut(&handle).expect("listed above");
                if conn.conn.poll_timeout().is_some_and(|t| t <= now) {
                    conn.conn.handle_timeout(now);
                }
                while let Some(event) = conn.conn.poll_endpoint_events() {
                    if let Some(back) = inner.endpoint.handle_event(handle, event) {
                        conn.conn.handle_event(back);
                    }
                }
                let conn_ref = ConnRef {
                    quic: self.quic.clone(),
                    handle,
                    gen: conn.gen,
                };
                on_events(conn, &conn_ref, &mut inner.opened, &mut inner.connected);
                if self.blocked.is_none() {
                    busy |= transmit(conn, &self.socket, &mut self.send, &mut self.blocked, cx);
                }
                if let Some(t) = conn.conn.poll_timeout() {
                    next_timeout = Some(next_timeout.map_or(t, |n| n.min(t)));
                }
                conn.conn.is_drained()
            };
            if gone {
                let conn = inner.conns.remove(&handle).expect("listed above");
                inner.closed.push(ConnRef {
                    quic: self.quic.clone(),
                    handle,
                    gen: conn.gen,
                });
                conn.readers
                    .into_values()
                    .chain(conn.writers.into_values())
                    .for_each(Waker::wake);
            }
        }
        drop(guard);
        if busy {
            cx.waker().wake_by_ref();
        } else if let Some(t) = next_timeout {
            self.timer.as_mut().reset(t);
            if self.timer.as_mut().poll(cx).is_ready() {
                cx.waker().wake_by_ref();
            }
        }
    }

    /// Takes in what the socket holds (a batch); true if there may be more.
    fn receive(&mut self, cx: &mut Context<'_>) -> bool {
        // Sent, or failed for good (an unreachable address): either way it is done. While it
        // waits, datagrams are still taken in (they bring the ACKs that let sending go on).
        if let Some((data, to)) = &self.blocked {
            if self.socket.poll_send_to(cx, data, *to).is_ready() {
                self.blocked = None;
            }
        }
        for _ in 0..BATCH {
            let (len, from) = match self.socket.poll_recv_from(cx, &mut self.recv) {
                Poll::Pending => return false,
                Poll::Ready(Ok(got)) => got,
                // An ICMP error from an earlier send surfaces here: nothing to do.
                Poll::Ready(Err(_)) => continue,
            };
            self.datagram(BytesMut::from(&self.recv[..len]), from);
        }
        true
    }

    fn datagram(&mut self, data: BytesMut, from: SocketAddr) {
        let now = Instant::now();
        let inner = &mut *self.quic.inner.borrow_mut();
        self.send.clear();
        let event = inner
            .endpoint
            .handle(now, from, None, None, data, &mut self.send);
        match event {
            Some(DatagramEvent::ConnectionEvent(handle, event)) => {
                if let Some(conn) = inner.conns.get_mut(&handle) {
                    conn.conn.handle_event(event);
                }
            }
            Some(DatagramEvent::NewConnection(incoming)) if inner.refusing => {
                let t = inner.endpoint.refuse(incoming, &mut self.send);
                let _ = self.socket.try_send_to(&self.send[..t.size], t.destination);
            }
            Some(DatagramEvent::NewConnection(incoming)) => {
                accept(inner, incoming, now, &mut self.send, &self.socket)
            }
            // A stateless reset or version negotiation.
            Some(DatagramEvent::Response(t)) => {
                let _ = self.socket.try_send_to(&self.send[..t.size], t.destination);
            }
            None => {}
        }
    }
}

/// Sets up the connection a client's first datagram opens. Out of line: a new connection is
/// rare next to the datagrams of open ones, and quinn's `Connection`, built here by value, is
/// large enough that inlined it gave every poll of the driver a 27 KB frame, whose pages each
/// poll probed.
#[inline(never)]
fn accept(
    inner: &mut Inner,
    incoming: quinn_proto::Incoming,
    now: Instant,
    send: &mut Vec<u8>,
    socket: &UdpSocket,
) {
    match inner.endpoint.accept(incoming, now, send, None) {
        Ok((handle, conn)) => {
            let gen = inner.next_gen;
            inner.next_gen += 1;
            let (readers, writers) = (FxHashMap::default(), FxHashMap::default());
            let conn = Conn {
                conn,
                gen,
                readers,
                writers,
            };
            inner.conns.insert(handle, conn);
        }
        Err(e) => {
            if let Some(t) = e.response {
                let _ = socket.try_send_to(&send[..t.size], t.destination);
            }
        }
    }
}

/// Acts on a connection's events: streams opened are queued for the handler, the tasks of
/// streams that became readable or writable are woken, and every task when it is lost.
fn on_events(
    c: &mut Conn,
    conn_ref: &ConnRef,
    opened: &mut Vec<StreamRef>,
    connected: &mut Vec<ConnRef>,
) {
    while let Some(event) = c.conn.poll() {
        match event {
            Event::Connected => connected.push(conn_ref.clone()),
            Event::Stream(StreamEvent::Opened { dir }) => {
                while let Some(id) = c.conn.streams().accept(dir) {
                    let conn = conn_ref.clone();
                    opened.push(StreamRef { conn, id });
                }
            }
            Event::Stream(StreamEvent::Readable { id }) => wake(&mut c.readers, id),
            Event::Stream(StreamEvent::Stopped { id, error_code }) => {
                // RFC 9000 §3.5: STOP_SENDING is answered with RESET_STREAM, its code copied.
                // quinn-proto leaves that to us; without it a stream whose writer then only
                // finishes (a FIN refused once stopped) would stay open, unacknowledged. The
                // writer learns at its next write.
                let _ = c.conn.send_stream(id).reset(error_code);
                wake(&mut c.writers, id);
            }
            Event::Stream(StreamEvent::Writable { id } | StreamEvent::Finished { id }) => {
                wake(&mut c.writers, id)
            }
            Event::ConnectionLost { .. } => {
                c.readers
                    .drain()
                    .chain(c.writers.drain())
                    .for_each(|(_, w)| w.wake());
            }
            Event::Stream(StreamEvent::Available { .. })
            | Event::HandshakeDataReady
            | Event::DatagramReceived
            | Event::DatagramsUnblocked => {}
        }
    }
}

fn wake(wakers: &mut FxHashMap<StreamId, Waker>, id: StreamId) {
    if let Some(w) = wakers.remove(&id) {
        w.wake();
    }
}

/// Sends what the connection has to send, until the socket is full (the datagram it refused is
/// kept) or a batch is out; true if there may be more.
fn transmit(
    c: &mut Conn,
    socket: &UdpSocket,
    buf: &mut Vec<u8>,
    blocked: &mut Option<(Vec<u8>, SocketAddr)>,
    cx: &mut Context<'_>,
) -> bool {
    for _ in 0..BATCH {
        buf.clear();
        let Some(t) = c.conn.poll_transmit(Instant::now(), 1, buf) else {
            return false;
        };
        match socket.poll_send_to(cx, &buf[..t.size], t.destination) {
            Poll::Pending => {
                *blocked = Some((buf[..t.size].to_vec(), t.destination));
                return false;
            }
            // Lost on the way, as a datagram may be: QUIC's loss recovery sends it again.
            Poll::Ready(_) => {}
        }
    }
    true
}

#[cfg(test)]
#[path = "quic_tests.rs"]
mod tests;
