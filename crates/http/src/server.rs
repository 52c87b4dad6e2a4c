//! The server: one worker per core, each with its own `SO_REUSEPORT` listener, accepting and
//! serving connections until shutdown.
//!
//! Shutdown (SIGINT/SIGTERM, or [`ServerHandle::shutdown`]) is graceful: every worker stops
//! accepting, closes its idle keep-alive connections (and TLS ones still in their handshake),
//! lets each busy one finish the request it is on (answering it with `Connection: close`),
//! sends GOAWAY on HTTP/2 and HTTP/3 connections and lets their started streams finish, and
//! returns when none is left or [`Config::shutdown_timeout`] has passed.
//!
//! A plain port serves HTTP/1 and HTTP/2 with prior knowledge (told apart by the preface); a
//! port with [`Server::tls`] serves HTTPS, HTTP/2 or HTTP/1.1 as ALPN chose; with
//! [`Server::http3`] each worker also runs a QUIC endpoint on the same port number over UDP
//! (`crate::h3`).

use std::cell::{Cell, RefCell};
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::rc::{Rc, Weak};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Waker;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::BytesMut;
use http::HeaderValue;
use slab::Slab;
use volt_rt::future::{race, Either};
use volt_rt::net::{set_defer_accept, ListenOptions, TcpListener};
use volt_rt::JoinHandle;

use crate::config::Config;
use crate::conn::ConnIo;
use crate::service::Service;

/// Spare buffers a worker keeps for connections to reuse, of each kind (read, write). Idle
/// HTTP/1 connections over TCP hold none: they give theirs back
/// ([`ConnIo::release_buffers`](crate::conn::ConnIo::release_buffers)); over TLS the wait for
/// the next request is a read, which holds a read buffer.
const POOL_SIZE: usize = 256;
pub(crate) const READ_BUF: usize = 8 * 1024;
/// The largest buffers the pools keep: one that held a large body is freed instead, rather than
/// kept for good and handed to connections that need no such room.
const POOL_READ_MAX: usize = 2 * READ_BUF;
const POOL_WRITE_MAX: usize = 16 * 1024;

/// An HTTP/1.x and HTTP/2 server, over cleartext or TLS.
///
/// ```no_run
/// use volt_http::{get, Router, Server};
///
/// let app = Router::new().route("/", get(|_req| async { "Hello, World!" }));
/// Server::bind("127.0.0.1:8080")?.workers(2).serve(app)?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct Server {
    listener: std::net::TcpListener,
    addr: SocketAddr,
    workers: usize,
    pin_to_cores: bool,
    handle_signals: bool,
    config: Config,
    tls: Option<crate::tls::Tls>,
    http3: bool,
    handle: ServerHandle,
}

/// Stops a running [`Server`] from any thread.
#[derive(Clone, Debug, Default)]
pub struct ServerHandle {
    shared: Arc<HandleShared>,
}

#[derive(Debug, Default)]
struct HandleShared {
    stop: AtomicBool,
    runtime: Mutex<Option<volt_rt::Handle>>,
}

impl ServerHandle {
    /// Starts a graceful shutdown (also before `serve` started: it then returns at once).
    pub fn shutdown(&self) {
        self.shared.stop.store(true, Ordering::Release);
        if let Some(rt) = &*self
            .shared
            .runtime
            .lock()
            .unwrap_or_else(|e| e.into_inner())
        {
            rt.stop();
        }
    }
}

impl Server {
    /// Binds `addr` (port 0 picks a free port; see [`Server::local_addr`]). Defaults: one
    /// worker per CPU, no pinning, SIGINT/SIGTERM handled, [`Config::default`].
    pub fn bind(addr: impl ToSocketAddrs) -> io::Result<Server> {
        let listener = ListenOptions::new()
            .reuse_port(true)
            .backlog(4096)
            .bind_std(addr)?;
        // Set here, not only when serving starts, so that no connection made in between
        // misses it; `config` sets it again when it changes.
        set_defer_accept(&listener, Config::default().defer_accept)?;
        let addr = listener.local_addr()?;
        Ok(Server {
            listener,
            addr,
            workers: std::thread::available_parallelism().map_or(1, |n| n.get()),
            pin_to_cores: false,
            handle_signals: true,
            config: Config::default(),
            tls: None,
            http3: false,
            handle: ServerHandle::default(),
        })
    }

    /// The number of worker threads.
    pub fn workers(mut self, n: usize) -> Server {
        self.workers = n.max(1);
        self
    }

    /// Pins worker `i` to CPU `i`.
    pub fn pin_to_cores(mut self, on: bool) -> Server {
        self.pin_to_cores = on;
        self
    }

    /// Whether SIGINT/SIGTERM start a graceful shutdown (default: yes).
    pub fn handle_signals(mut self, on: bool) -> Server {
        self.handle_signals = on;
        self
    }

    /// Limits and timeouts.
    pub fn config(mut self, config: Config) -> Server {
        // This listener took the default when it was bound. An error here would come again
        // when serving sets it on every worker's listener, and is reported there.
        let _ = set_defer_accept(&self.listener, config.defer_accept);
        self.config = config;
        self
    }

    /// Serves HTTPS on this port: HTTP/2 or HTTP/1.1 as ALPN chooses (see
    /// [`TlsConfig`](crate::TlsConfig)).
    pub fn tls(mut self, tls: crate::tls::Tls) -> Server {
        self.tls = Some(tls);
        self
    }

    /// Serves HTTP/3 (RFC 9114) as well, over QUIC on the same port number in UDP, with the
    /// certificates of [`Server::tls`] (which it needs: QUIC is TLS 1.3 only, ALPN `h3`).
    /// HTTP/1 and HTTP/2 responses then advertise it (`Alt-Svc: h3=":PORT"; ma=86400`, RFC
    /// 7838), so browsers switch to it for later requests. Handlers do not change.
    ///
    /// Each worker binds its own UDP socket with `SO_REUSEPORT`; a client that moves to
    /// another address mid-connection is not followed (connection migration is refused).
    pub fn http3(mut self, on: bool) -> Server {
        self.http3 = on;
        self
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// A handle to stop the server from another thread.
    pub fn handle(&self) -> ServerHandle {
        self.handle.clone()
    }

    /// Serves `service` until shutdown; blocks the calling thread.
    pub fn serve<S: Service>(self, service: S) -> io::Result<()> {
        let runtime = volt_rt::Runtime::builder()
            .workers(self.workers)
            .pin_to_cores(self.pin_to_cores)
            .thread_name("volt-http")
            .build()?;
        *self
            .handle
            .shared
            .runtime
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(runtime.handle());
        if self.handle.shared.stop.load(Ordering::Acquire) {
            return Ok(());
        }
        let service = Arc::new(service);
        let config = Arc::new(self.config.capped());
        let quic = match (self.http3, &self.tls) {
            (false, _) => None,
            (true, Some(tls)) => Some(Arc::new(crate::h3::server_config(tls, &config)?)),
            (true, None) => {
                let msg = "HTTP/3 needs TLS: call Server::tls before Server::http3";
                return Err(io::Error::new(io::ErrorKind::InvalidInput, msg));
            }
        };
        let first = Mutex::new(Some(self.listener));
        let addr = self.addr;
        let handle_signals = self.handle_signals;
        let tls = self.tls;
        let results = runtime.run(|index| {
            let listener = first.lock().unwrap_or_else(|e| e.into_inner()).take();
            let service = service.clone();
            let config = config.clone();
            let tls = tls.clone();
            let quic = quic.clone();
            async move {
                let listener = match listener {
                    Some(l) => l,
                    None => ListenOptions::new()
                        .reuse_port(true)
                        .backlog(4096)
                        .bind_std(addr)?,
                };
                set_defer_accept(&listener, config.defer_accept)?;
                let listener = TcpListener::from_std(listener)?;
                let h3 = match quic.map(|config| crate::h3::bind(addr).map(|s| (s, config))) {
                    Some(Ok(h3)) => Some(h3),
                    // The UDP port is taken: the whole server stops (gracefully) and `serve`
                    // returns the error, rather than serve without HTTP/3 on this worker.
                    Some(Err(e)) => {
                        volt_rt::Handle::current().stop();
                        return Err(e);
                    }
                    None => None,
                };
                if index == 0 && handle_signals {
                    volt_rt::spawn(async {
                        volt_rt::signal::shutdown_signal().await;
                        volt_rt::Handle::current().stop();
                    });
                }
                crate::request::set_listen_addr(addr);
                run_worker(listener, h3, service, config, tls).await;
                Ok::<(), io::Error>(())
            }
        });
        results.into_iter().collect()
    }
}

async fn run_worker<S: Service>(
    listener: TcpListener,
    h3: Option<(volt_rt::net::UdpSocket, Arc<quinn_proto::ServerConfig>)>,
    service: Arc<S>,
    config: Arc<Config>,
    tls: Option<crate::tls::Tls>,
) {
    let port = listener.local_addr().map_or(0, |a| a.port());
    let alt_svc = h3.is_some().then_some(port);
    let worker = Rc::new(Worker::new(config, alt_svc));
    // HTTP/3 on its own task, on the worker's UDP socket; it shuts down with the worker.
    let h3 = h3.map(|(socket, quic)| {
        volt_rt::spawn(crate::h3::run(
            socket,
            quic,
            worker.clone(),
            service.clone(),
        ))
    });
    let mut stopped = volt_rt::Handle::current().stopped();
    loop {
        if worker.conns.borrow().len() >= worker.config.max_connections_per_worker {
            match race(worker.connection_closed(), &mut stopped).await {
                Either::Left(()) => continue,
                Either::Right(()) => break,
            }
        }
        match race(listener.accept(), &mut stopped).await {
            Either::Left(Ok((stream, remote))) => {
                let slot = worker.conns.borrow_mut().insert(ConnEntry {
                    task: None,
                    conn: Weak::new(),
                });
                let service = service.clone();
                let guard = ConnGuard {
                    worker: worker.clone(),
                    slot,
                };
                let task = match &tls {
                    None => {
                        let io = crate::conn::new_conn(
                            crate::transport::Transport::Tcp(stream),
                            remote,
                            worker.clone(),
                        );
                        worker.track_idle(slot, &io);
                        volt_rt::spawn(crate::conn::serve(io, service, Some(guard)))
                    }
                    Some(tls) => {
                        let serve = crate::tls::serve(
                            stream,
                            remote,
                            tls.clone(),
                            worker.clone(),
                            service,
                            slot,
                        );
                        volt_rt::spawn(async move {
                            let _guard = guard;
                            serve.await;
                        })
                    }
                };
                if let Some(entry) = worker.conns.borrow_mut().get_mut(slot) {
                    entry.task = Some(task);
                }
            }
            // Out of descriptors or a connection reset before accept: keep going, but let
            // the system breathe if it is the former.
            Either::Left(Err(e)) => {
                if e.raw_os_error() == Some(24) || e.raw_os_error() == Some(23) {
                    volt_rt::time::sleep(std::time::Duration::from_millis(10)).await;
                }
            }
            Either::Right(()) => break,
        }
    }
    drop(listener);
    worker.shut_down().await;
    if let Some(h3) = h3 {
        let _ = h3.await;
    }
}

/// Per-worker server state, shared by its connections.
pub(crate) struct Worker {
    pub(crate) config: Arc<Config>,
    pub(crate) limits: volt_proto::Limits,
    /// `Server: <name>\r\n`, or nothing; and `Alt-Svc: h3=":PORT"; ma=86400\r\n` when the
    /// server speaks HTTP/3 (every HTTP/1 response head starts with these lines).
    pub(crate) server_header: Vec<u8>,
    /// The `Alt-Svc` value advertising HTTP/3, for HTTP/2 responses.
    pub(crate) alt_svc: Option<String>,
    /// When the second `ok_prefix` was rendered for ends (`None`: not rendered yet).
    date_until: Cell<Option<Instant>>,
    /// `HTTP/1.1 200 OK`, `Server` and `Date` lines, ready to copy.
    ok_prefix: RefCell<Vec<u8>>,
    /// Where the `Date` value starts in `ok_prefix`.
    date_at: Cell<usize>,
    /// Whole heads of the usual response, per content type; re-rendered with `ok_prefix`.
    ok_heads: RefCell<Vec<OkHead>>,
    shutting_down: Cell<bool>,
    conns: RefCell<Slab<ConnEntry>>,
    /// The accept loop or shutdown, waiting for a connection to close.
    closed_waiter: RefCell<Option<Waker>>,
    read_pool: RefCell<Vec<BytesMut>>,
    write_pool: RefCell<Vec<Vec<u8>>>,
}

/// Content types a worker keeps whole response heads for.
const OK_HEADS: usize = 4;

/// The head of a 200 with one content type and a `Content-Length`, nothing else:
/// `ok_prefix`, `Content-Type`, and `content-length` for the body length last sent with it.
struct OkHead {
    content_type: HeaderValue,
    bytes: Vec<u8>,
    /// Where `content-length` starts in `bytes`.
    len_at: usize,
    /// The body length `bytes` ends with.
    len: u64,
}

impl OkHead {
    fn new(content_type: HeaderValue, prefix: &[u8]) -> OkHead {
        let mut head = OkHead {
            content_type,
            bytes: Vec::new(),
            len_at: 0,
            len: 0,
        };
        head.render(prefix);
        head
    }

    /// Whether this is the head for `content_type`. The usual content type is a `static` that
    /// every response shares, so comparing where its bytes are mostly spares comparing them.
    fn is_for(&self, content_type: &HeaderValue) -> bool {
        let (mine, theirs) = (self.content_type.as_bytes(), content_type.as_bytes());
        std::ptr::eq(mine, theirs) || mine == theirs
    }

    /// Renders the head again after `prefix` (status line, `Server`, `Date`) changed.
    fn render(&mut self, prefix: &[u8]) {
        self.bytes.clear();
        self.bytes.extend_from_slice(prefix);
        volt_proto::write_header(
            &mut self.bytes,
            b"Content-Type",
            self.content_type.as_bytes(),
        );
        self.len_at = self.bytes.len();
        self.write_len();
    }

    /// Makes the head end with `len` as the `Content-Length`.
    #[inline(never)]
    fn set_len(&mut self, len: u64) {
        if len != self.len {
            self.len = len;
            self.bytes.truncate(self.len_at);
            self.write_len();
        }
    }

    fn write_len(&mut self) {
        volt_proto::write_content_length(&mut self.bytes, self.len);
        self.bytes.extend_from_slice(b"\r\n");
    }
}

struct ConnEntry {
    task: Option<JoinHandle<()>>,
    /// The HTTP/1 connection, once there is one (after the handshake on TLS), for its idle
    /// flag. Weak: the `Rc` must stay unique for a switch to HTTP/2 to take the socket.
    conn: Weak<ConnIo>,
}

/// Removes a connection's entry when its task ends, however it ends.
pub(crate) struct ConnGuard {
    worker: Rc<Worker>,
    slot: usize,
}

impl ConnGuard {
    /// The connection is no longer HTTP/1 (it switched to HTTP/2): its entry lets go of the
    /// `ConnIo`, whose allocation its `Weak` would otherwise keep.
    pub(crate) fn untrack(&self) {
        if let Some(entry) = self.worker.conns.borrow_mut().get_mut(self.slot) {
            entry.conn = Weak::new();
        }
    }
}

impl Drop for ConnGuard {
    fn drop(&mut self) {
        let entry = self.worker.conns.borrow_mut().try_remove(self.slot);
        drop(entry);
        if let Some(w) = self.worker.closed_waiter.borrow_mut().take() {
            w.wake();
        }
    }
}

impl Worker {
    /// `h3_port`: the port HTTP/3 is served on, advertised by `Alt-Svc`.
    fn new(config: Arc<Config>, h3_port: Option<u16>) -> Worker {
        let mut server_header = match &config.server_name {
            Some(name) => format!("Server: {name}\r\n").into_bytes(),
            None => Vec::new(),
        };
        // RFC 7838 §3: the alternative is on the same host, this port over UDP; a day's
        // lifetime (`ma`), as common servers send.
        let alt_svc = h3_port.map(|port| format!("h3=\":{port}\"; ma=86400"));
        if let Some(value) = &alt_svc {
            server_header.extend_from_slice(format!("Alt-Svc: {value}\r\n").as_bytes());
        }
        Worker {
            alt_svc,
            limits: config.limits(),
            config,
            server_header,
            date_until: Cell::new(None),
            ok_prefix: RefCell::new(Vec::new()),
            date_at: Cell::new(6),
            ok_heads: RefCell::new(Vec::new()),
            shutting_down: Cell::new(false),
            conns: RefCell::new(Slab::new()),
            closed_waiter: RefCell::new(None),
            read_pool: RefCell::new(Vec::new()),
            write_pool: RefCell::new(Vec::new()),
        }
    }

    pub(crate) fn is_shutting_down(&self) -> bool {
        self.shutting_down.get()
    }

    /// Lets graceful shutdown see when the connection in `slot` is idle ([`ConnIo::idle`]).
    pub(crate) fn track_idle(&self, slot: usize, conn: &Rc<ConnIo>) {
        if let Some(entry) = self.conns.borrow_mut().get_mut(slot) {
            entry.conn = Rc::downgrade(conn);
        }
    }

    /// Re-formats the cached `Date` once its second is over. That is checked against the time
    /// the worker woke at ([`volt_rt::time::now`]), so a request costs no clock read; the
    /// header may lag the second by one loop turn.
    ///
    /// The check is inlined, the re-formatting out of line: called once per batch of requests,
    /// the check alone no longer pays for saving and restoring the registers the re-formatting
    /// needs (~20 instructions a keep-alive request).
    #[inline]
    pub(crate) fn refresh_date(&self) {
        let until = self.date_until.get();
        if until.is_some_and(|until| volt_rt::time::now() < until) {
            return;
        }
        self.render_date();
    }

    /// Formats the cached `Date` for the current second (see [`Worker::refresh_date`]).
    #[inline(never)]
    fn render_date(&self) {
        let now = SystemTime::now();
        let into_second = now
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .subsec_nanos();
        let left = Duration::from_secs(1) - Duration::from_nanos(into_second.into());
        self.date_until.set(Some(Instant::now() + left));
        let mut prefix = self.ok_prefix.borrow_mut();
        prefix.clear();
        volt_proto::write_status_line(&mut prefix, http::Version::HTTP_11, http::StatusCode::OK);
        prefix.extend_from_slice(&self.server_header);
        self.date_at.set(prefix.len() + 6);
        prefix.extend_from_slice(b"Date: ");
        prefix.extend_from_slice(&volt_proto::http_date(now));
        prefix.extend_from_slice(b"\r\n");
        for head in self.ok_heads.borrow_mut().iter_mut() {
            head.render(&prefix);
        }
    }

    /// Calls `f` with the current `Date` value (HTTP/2 sends it as a field of its own).
    pub(crate) fn with_date<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        self.refresh_date();
        let prefix = self.ok_prefix.borrow();
        f(&prefix[self.date_at.get()..prefix.len() - 2])
    }

    /// Starts a response head: status line, `Server` and `Date`. A 200 (most responses) is
    /// one copy of a prefix re-rendered once a second.
    pub(crate) fn write_head_start(&self, w: &mut Vec<u8>, status: http::StatusCode) {
        let prefix = self.ok_prefix.borrow();
        if status == http::StatusCode::OK {
            w.extend_from_slice(&prefix);
            return;
        }
        volt_proto::write_status_line(w, http::Version::HTTP_11, status);
        w.extend_from_slice(&self.server_header);
        let date_at = self.date_at.get();
        w.extend_from_slice(&prefix[date_at - 6..]);
    }

    /// Writes the whole head of the usual response: 200 with `content_type`, a body of `len`
    /// bytes, no other header, kept alive on HTTP/1.1. One copy of a cached head when the
    /// content type was seen before, and the body length with it; false when the cache is
    /// full of other content types (the caller writes the head field by field).
    ///
    /// Inlined, with what is rare out of line (a content type not seen yet, a body length
    /// other than the last one): the usual answer then costs no call, and no saving and
    /// restoring of the registers the rare paths need (~40 instructions a request).
    #[inline]
    pub(crate) fn write_ok_head(
        &self,
        w: &mut Vec<u8>,
        content_type: &HeaderValue,
        len: u64,
    ) -> bool {
        let mut heads = self.ok_heads.borrow_mut();
        let Some(head) = heads.iter_mut().find(|h| h.is_for(content_type)) else {
            drop(heads);
            return self.add_ok_head(w, content_type, len);
        };
        if head.len != len {
            head.set_len(len);
        }
        w.extend_from_slice(&head.bytes);
        true
    }

    /// [`Worker::write_ok_head`] for a content type without a cached head: caches one if
    /// there is room.
    #[cold]
    #[inline(never)]
    fn add_ok_head(&self, w: &mut Vec<u8>, content_type: &HeaderValue, len: u64) -> bool {
        let mut heads = self.ok_heads.borrow_mut();
        if heads.len() >= OK_HEADS {
            return false;
        }
        let mut head = OkHead::new(content_type.clone(), &self.ok_prefix.borrow());
        head.set_len(len);
        w.extend_from_slice(&head.bytes);
        heads.push(head);
        true
    }

    pub(crate) fn take_read_buf(&self) -> BytesMut {
        let mut buf = self.read_pool.borrow_mut().pop().unwrap_or_default();
        buf.reserve(READ_BUF);
        buf
    }

    pub(crate) fn give_read_buf(&self, buf: BytesMut) {
        let mut pool = self.read_pool.borrow_mut();
        let fits = (READ_BUF..=POOL_READ_MAX).contains(&buf.capacity());
        if buf.is_empty() && fits && pool.len() < POOL_SIZE {
            pool.push(buf);
        }
    }

    /// Inline: called once per keep-alive request (an idle connection gives its buffer
    /// back), and LTO left it out of line once the crate grew.
    #[inline]
    pub(crate) fn give_write_buf(&self, mut buf: Vec<u8>) {
        let mut pool = self.write_pool.borrow_mut();
        if (1..=POOL_WRITE_MAX).contains(&buf.capacity()) && pool.len() < POOL_SIZE {
            buf.clear();
            pool.push(buf);
        }
    }

    pub(crate) fn take_write_buf(&self) -> Vec<u8> {
        self.write_pool.borrow_mut().pop().unwrap_or_default()
    }

    async fn connection_closed(&self) {
        let mut waited = false;
        std::future::poll_fn(|cx| {
            if std::mem::replace(&mut waited, true) {
                return std::task::Poll::Ready(());
            }
            *self.closed_waiter.borrow_mut() = Some(cx.waker().clone());
            std::task::Poll::Pending
        })
        .await
    }

    /// Closes idle connections, then waits (bounded) for busy ones to finish their request.
    async fn shut_down(&self) {
        self.shutting_down.set(true);
        let deadline = Instant::now() + self.config.shutdown_timeout;
        let idle: Vec<JoinHandle<()>> = self
            .conns
            .borrow_mut()
            .iter_mut()
            .filter(|(_, e)| e.conn.upgrade().is_some_and(|c| c.idle.get()))
            .filter_map(|(_, e)| e.task.take())
            .collect();
        for task in &idle {
            task.abort();
        }
        drop(idle);
        while !self.conns.borrow().is_empty() {
            if volt_rt::time::timeout_at(deadline, self.connection_closed())
                .await
                .is_err()
            {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pools keep the usual buffers and free large ones (a body's worth of room is not
    /// kept for good).
    #[test]
    fn pools_turn_large_buffers_away() {
        let worker = Worker::new(Arc::new(Config::default()), None);
        worker.give_read_buf(BytesMut::with_capacity(READ_BUF));
        worker.give_read_buf(BytesMut::with_capacity(1 << 20));
        worker.give_write_buf(Vec::with_capacity(1024));
        worker.give_write_buf(Vec::with_capacity(1 << 20));
        assert_eq!(worker.read_pool.borrow().len(), 1);
        assert_eq!(worker.write_pool.borrow().len(), 1);
        assert!(worker.take_read_buf().capacity() <= POOL_READ_MAX);
        assert!(worker.take_write_buf().capacity() <= POOL_WRITE_MAX);
    }
}
