//! What a slot connects with: the byte stream under HTTP/1 and HTTP/2 (TCP here, TLS in
//! `tls.rs`; either driver runs over either unchanged), and, behind the same [`Connect`], the
//! QUIC connection HTTP/3 runs on (`h3::QuicConn`).

use std::future::Future;
use std::io;
use std::task::{Context, Poll};

use std::rc::Rc;

use volt_rt::net::TcpStream;
use volt_rt::JoinHandle;

use crate::config::Protocol;
use crate::h3::QuicConn;
use crate::worker::{LiveGuard, Plan, Slot, WorkerCtx};

/// What a worker opens for a connection slot (before the clock starts, and whenever a slot
/// starts over), and the task that drives the slot on it: a byte stream ([`Transport`]) with
/// the HTTP/1 or HTTP/2 driver, or a QUIC connection with the HTTP/3 one.
pub(crate) trait Connect: Sized + 'static {
    /// Opens a connection to the run's server.
    async fn connect(plan: &Plan) -> io::Result<Self>;

    /// Starts the task that drives `slot`, with a connection opened beforehand if any. The
    /// task holds `guard` while it runs. One task per protocol, so that each driver's future
    /// is inlined into its task's poll.
    fn spawn_driver(
        ctx: Rc<WorkerCtx>,
        slot: Rc<Slot>,
        conn: Option<Self>,
        guard: LiveGuard,
    ) -> JoinHandle<()>;
}

/// A connected byte stream on the current worker.
///
/// Crate-private: the futures are not `Send`, which is right for a thread-per-core runtime.
///
/// `read` and `write_all` return the stream's own futures rather than being `async fn`s: an
/// `async fn` wrapper is one more state machine to build and poll on every read (twice: once
/// to wait, once to copy), about 60 instructions a response.
pub(crate) trait Transport: Sized + 'static {
    /// Opens a stream to the run's server.
    async fn open(plan: &Plan) -> io::Result<Self>;

    /// Reads into `buf`, waiting for data; `Ok(0)` means the peer closed.
    fn read<'a>(&'a self, buf: &'a mut [u8]) -> impl Future<Output = io::Result<usize>> + 'a;

    /// Reads into `buf` without waiting: `WouldBlock` when nothing is there.
    fn try_read(&self, buf: &mut [u8]) -> io::Result<usize>;

    /// Writes all of `bytes`.
    fn write_all<'a>(&'a self, bytes: &'a [u8]) -> impl Future<Output = io::Result<()>> + 'a;

    /// Polls a read into `buf`, for a driver that waits on reads and writes at once.
    fn poll_read(&self, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>>;

    /// Polls a write of some of `bytes`.
    fn poll_write(&self, cx: &mut Context<'_>, bytes: &[u8]) -> Poll<io::Result<usize>>;
}

/// Every byte stream runs the HTTP/1 or the HTTP/2 driver, as the run's protocol says.
impl<T: Transport> Connect for T {
    async fn connect(plan: &Plan) -> io::Result<Self> {
        T::open(plan).await
    }

    fn spawn_driver(
        ctx: Rc<WorkerCtx>,
        slot: Rc<Slot>,
        conn: Option<T>,
        guard: LiveGuard,
    ) -> JoinHandle<()> {
        match ctx.plan.protocol {
            Protocol::Http1 => volt_rt::spawn(async move {
                let _guard = guard;
                crate::driver::drive::<T>(&ctx, &slot, conn).await;
            }),
            Protocol::Http2 => volt_rt::spawn(async move {
                let _guard = guard;
                crate::h2::drive::<T>(&ctx, &slot, conn).await;
            }),
            Protocol::Http3 => unreachable!("HTTP/3 runs over QUIC, not a byte stream"),
        }
    }
}

impl Connect for QuicConn {
    async fn connect(plan: &Plan) -> io::Result<Self> {
        QuicConn::open(plan).await
    }

    fn spawn_driver(
        ctx: Rc<WorkerCtx>,
        slot: Rc<Slot>,
        conn: Option<Self>,
        guard: LiveGuard,
    ) -> JoinHandle<()> {
        volt_rt::spawn(async move {
            let _guard = guard;
            crate::h3::drive(&ctx, &slot, conn).await;
        })
    }
}

impl Transport for TcpStream {
    async fn open(plan: &Plan) -> io::Result<Self> {
        let stream = TcpStream::connect(plan.addr).await?;
        // Requests are written whole; Nagle would only delay a request written after a short
        // write.
        stream.set_nodelay(true)?;
        Ok(stream)
    }

    #[inline]
    fn read<'a>(&'a self, buf: &'a mut [u8]) -> impl Future<Output = io::Result<usize>> + 'a {
        TcpStream::read(self, buf)
    }

    #[inline]
    fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        TcpStream::try_read(self, buf)
    }

    #[inline]
    fn write_all<'a>(&'a self, bytes: &'a [u8]) -> impl Future<Output = io::Result<()>> + 'a {
        TcpStream::write_all(self, bytes)
    }

    #[inline]
    fn poll_read(&self, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        TcpStream::poll_read(self, cx, buf)
    }

    #[inline]
    fn poll_write(&self, cx: &mut Context<'_>, bytes: &[u8]) -> Poll<io::Result<usize>> {
        TcpStream::poll_write(self, cx, bytes)
    }
}
