//! HTTP/3 (RFC 9114) over QUIC: volt-proto's HTTP/3 codec (`volt_proto::h3`: frames, QPACK
//! without a dynamic table, stream rules) on quinn-proto's QUIC state machine, driven by
//! volt-rt ([`quic`]).
//!
//! Each worker runs one endpoint on its own `SO_REUSEPORT` UDP socket, bound to the server's
//! port ([`run`]). For each connection:
//!
//! - once the handshake is done, we open our control stream and send SETTINGS
//!   (QPACK_MAX_TABLE_CAPACITY 0, so the client's encoder may not use a dynamic table,
//!   MAX_FIELD_SECTION_SIZE from [`Config::max_head_bytes`], and ENABLE_CONNECT_PROTOCOL for
//!   WebSockets, RFC 9220). We open no QPACK streams: with no dynamic table either way they
//!   would carry nothing (RFC 9204 §4.2 allows that);
//! - the client's unidirectional streams are read and checked ([`serve_uni`]): one control
//!   stream opening with SETTINGS, at most one QPACK encoder and one decoder stream, no push
//!   streams; closing any of them is a connection error (RFC 9114 §6.2);
//! - each bidirectional stream is a request ([`request`]): a task of its own reads the head,
//!   calls the same [`Service`] HTTP/1 and HTTP/2 call, and writes the response, with the
//!   request and response bodies streamed under QUIC flow control. A WebSocket's extended
//!   CONNECT, once answered 200, carries the session in its stream's DATA frames ([`tunnel`]).
//!
//! Graceful shutdown: new connections are refused, each connection gets GOAWAY naming the
//! first request stream it will not serve (§5.2), requests already started finish (open
//! WebSockets close with 1001, as on HTTP/1 and HTTP/2), and each
//! connection is closed with H3_NO_ERROR once its responses are acknowledged (or
//! [`Config::shutdown_timeout`] passed).

mod quic;
mod request;
mod tunnel;

pub(crate) use request::H3Body;
pub(crate) use tunnel::StreamLink;

use std::cell::{Cell, RefCell};
use std::future::poll_fn;
use std::io;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Poll, Waker};

use bytes::BytesMut;
use quinn_proto::{ConnectionHandle, Dir};
use rustc_hash::FxHashMap;
use volt_proto::h3::frame::{write_goaway, write_settings, Settings};
use volt_proto::h3::qpack::{DecoderStream, EncoderStream};
use volt_proto::h3::{Code, ControlStream, Error as H3Error, PeerStreams, StreamType};
use volt_rt::net::{ListenOptions, UdpSocket};

use crate::config::Config;
use crate::server::Worker;
use crate::service::Service;
use crate::tls::Tls;

use quic::{ConnRef, Quic, StreamRef};

/// The QUIC server configuration for a TLS setup: the same certificates and session
/// resumption, ALPN `h3` only, TLS 1.3 (QUIC has no other); migration refused (see
/// [`quic`]); the idle timeout is [`Config::idle_timeout`], enforced by QUIC itself (RFC 9000
/// §10.1: an idle connection is closed without a packet); at most
/// [`Config::h2_max_concurrent_streams`] requests at once per connection.
pub(crate) fn server_config(tls: &Tls, config: &Config) -> io::Result<quinn_proto::ServerConfig> {
    let mut rustls = (**tls.rustls_config()).clone();
    rustls.alpn_protocols = vec![b"h3".to_vec()];
    // QUIC takes early data all or nothing (RFC 9001 §4.6.1); we take none (0-RTT requests
    // can be replayed).
    rustls.max_early_data_size = 0;
    let crypto = quinn_proto::crypto::rustls::QuicServerConfig::try_from(rustls)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("QUIC TLS: {e}")))?;
    let mut transport = quinn_proto::TransportConfig::default();
    // Past ~2^62 ms quinn refuses the value; `Duration::MAX` means no limit.
    let idle = quinn_proto::IdleTimeout::try_from(config.idle_timeout).ok();
    transport.max_idle_timeout(idle);
    transport.max_concurrent_bidi_streams(config.h2_max_concurrent_streams.into());
    // The client's control and QPACK streams, and room for the reserved ones it may grease.
    transport.max_concurrent_uni_streams(8u32.into());
    // What a connection may hold unacknowledged, for all its streams: quinn's default (10 MB)
    // would let each slow client of thousands hold that much memory. 2 MiB still allows
    // 40 MiB/s a connection at 50 ms round trips; a response writer waits (up to
    // `write_timeout`) while it is full.
    transport.send_window(2 << 20);
    let mut server = quinn_proto::ServerConfig::with_crypto(Arc::new(crypto));
    server.transport_config(Arc::new(transport));
    server.migration(false);
    Ok(server)
}

/// Binds this worker's UDP socket on `addr` (shared with the other workers' by `SO_REUSEPORT`).
pub(crate) fn bind(addr: SocketAddr) -> io::Result<UdpSocket> {
    ListenOptions::new().reuse_port(true).bind_udp(addr)
}

/// Serves HTTP/3 on `socket` until the worker stops, then shuts down gracefully.
pub(crate) async fn run<S: Service>(
    socket: UdpSocket,
    server_config: Arc<quinn_proto::ServerConfig>,
    worker: Rc<Worker>,
    service: Arc<S>,
) {
    let quic = Quic::new(server_config);
    let app = Rc::new(App {
        worker,
        service,
        conns: RefCell::new(FxHashMap::default()),
        idle_waiter: RefCell::new(None),
        going_away: Cell::new(false),
    });
    let shutdown = volt_rt::spawn(shut_down(quic.clone(), app.clone()));
    quic::drive(quic, socket, &app).await;
    let _ = shutdown.await;
}

/// Graceful shutdown, once the worker stops: GOAWAY everywhere, then each connection closed
/// when its requests are done and acknowledged.
async fn shut_down<S: Service>(quic: Rc<Quic>, app: Rc<App<S>>) {
    volt_rt::Handle::current().stopped().await;
    quic.refuse_new();
    app.going_away.set(true);
    for conn in quic.conns() {
        app.go_away(&conn);
    }
    let deadline = std::time::Instant::now() + app.worker.config.shutdown_timeout;
    let all_done = poll_fn(|cx| {
        *app.idle_waiter.borrow_mut() = Some(cx.waker().clone());
        let mut open = 0;
        for conn in quic.conns() {
            // Closed already (here, or by the client): only its draining period is left.
            if conn.is_closed() {
                continue;
            }
            let requests = app.state(&conn, |s| s.active).unwrap_or(0);
            // The control stream never ends; any other stream of ours still open holds a
            // response not yet acknowledged, which closing now would throw away.
            if requests == 0 && conn.unacknowledged_streams() <= 1 {
                conn.close(Code::H3_NO_ERROR.0, "shutting down");
            } else {
                open += 1;
            }
        }
        match open {
            0 => Poll::Ready(()),
            _ => Poll::Pending,
        }
    });
    // Responses acknowledged wake nobody here: the driver wakes this task on every stream
    // event (see `Handler::changed`).
    let _ = volt_rt::time::timeout_at(deadline, all_done).await;
    for conn in quic.conns() {
        conn.close(Code::H3_NO_ERROR.0, "shutting down");
    }
}

/// The HTTP/3 side of one worker's endpoint.
struct App<S> {
    worker: Rc<Worker>,
    service: Arc<S>,
    conns: RefCell<FxHashMap<(ConnectionHandle, u64), ConnState>>,
    /// The shutdown task, waiting for requests to end.
    idle_waiter: RefCell<Option<Waker>>,
    going_away: Cell<bool>,
}

/// What HTTP/3 keeps per connection.
#[derive(Default)]
struct ConnState {
    /// Which of the client's unidirectional streams are open.
    peer: PeerStreams,
    /// Our control stream, once open.
    control: Option<StreamRef>,
    /// One past the largest request stream ID seen: what GOAWAY names (§5.2).
    next_request: u64,
    /// Sent GOAWAY with this stream ID: requests from there on are refused.
    goaway: Option<u64>,
    /// Requests being served.
    active: usize,
}

impl<S: Service> App<S> {
    fn state<R>(&self, conn: &ConnRef, f: impl FnOnce(&mut ConnState) -> R) -> Option<R> {
        self.conns.borrow_mut().get_mut(&conn.key()).map(f)
    }

    /// Sends GOAWAY on `conn` (once), naming the first request it will not serve.
    fn go_away(&self, conn: &ConnRef) {
        let sent = self.state(conn, |s| {
            let id = s.next_request;
            match (s.goaway.is_some(), &s.control) {
                (false, Some(control)) => {
                    s.goaway = Some(id);
                    Some((control.clone(), id))
                }
                _ => None,
            }
        });
        if let Some(Some((control, id))) = sent {
            let mut frame = Vec::new();
            write_goaway(id, &mut frame);
            control.write_now(&frame);
        }
    }

    fn fail(&self, conn: &ConnRef, e: Failure) {
        conn.close(e.code.0, e.reason);
    }
}

impl<S: Service> quic::Handler for Rc<App<S>> {
    fn connected(&self, conn: ConnRef) {
        let mut state = ConnState::default();
        // SETTINGS first on our control stream (§6.2.1). The client allows a few
        // unidirectional streams from the start (RFC 9114 §6.2: at least 3), so the stream
        // opens now; its few bytes fit any send window.
        if let Some(control) = conn.open_uni() {
            let mut bytes = Vec::new();
            StreamType::Control.encode(&mut bytes);
            // QPACK_MAX_TABLE_CAPACITY stays at its default, 0.
            let mut settings = Settings::default();
            settings.max_field_section_size = Some(self.worker.config.max_head_bytes as u64);
            // WebSocket over HTTP/3 (RFC 9220) opens with an extended CONNECT.
            settings.enable_connect_protocol = true;
            write_settings(&settings, &mut bytes);
            control.write_now(&bytes);
            state.control = Some(control);
        } else {
            let e = Failure::connection(Code::H3_STREAM_CREATION_ERROR, "no control stream");
            self.fail(&conn, e);
        }
        self.conns.borrow_mut().insert(conn.key(), state);
        if self.going_away.get() {
            self.go_away(&conn);
        }
    }

    fn stream(&self, stream: StreamRef, dir: Dir) {
        match dir {
            Dir::Uni => {
                volt_rt::spawn(serve_uni(self.clone(), stream));
            }
            Dir::Bi => {
                let id = stream.id.index() * 4; // client-initiated bidirectional: 4n
                let refused = self.state(&stream.conn, |s| {
                    s.next_request = s.next_request.max(id + 4);
                    let refused = s.goaway.is_some_and(|g| id >= g);
                    s.active += usize::from(!refused);
                    refused
                });
                if refused != Some(false) {
                    // After GOAWAY (§5.2): refused, the client may retry elsewhere.
                    stream.stop(Code::H3_REQUEST_REJECTED.0);
                    stream.reset(Code::H3_REQUEST_REJECTED.0);
                    return;
                }
                let app = self.clone();
                volt_rt::spawn(async move {
                    let conn = stream.conn.clone();
                    request::serve(&app.worker, &*app.service, stream).await;
                    app.state(&conn, |s| s.active -= 1);
                    app.changed();
                });
            }
        }
    }

    fn closed(&self, conn: ConnRef) {
        self.conns.borrow_mut().remove(&conn.key());
        self.changed();
    }

    fn changed(&self) {
        if let Some(w) = &*self.idle_waiter.borrow() {
            w.wake_by_ref();
        }
    }
}

/// Reads one of the client's unidirectional streams (§6.2): its type, then what that type
/// carries, checked.
async fn serve_uni<S: Service>(app: Rc<App<S>>, stream: StreamRef) {
    let conn = stream.conn.clone();
    let mut buf = BytesMut::new();
    let ty = loop {
        if let Some(ty) = StreamType::decode(&mut buf) {
            break ty;
        }
        match stream.read().await {
            Ok(Some(bytes)) => buf.extend_from_slice(&bytes),
            // Ended before its type: nothing to act on.
            _ => return stream.release(),
        }
    };
    if let Some(Err(e)) = app.state(&conn, |s| s.peer.open(ty)) {
        stream.release();
        return app.fail(&conn, e.into());
    }
    let max_frame = app.worker.config.max_head_bytes.max(16 * 1024);
    let mut reader = match ty {
        StreamType::Control => UniReader::Control(ControlStream::new(max_frame)),
        StreamType::QpackEncoder => UniReader::Encoder(EncoderStream::new()),
        StreamType::QpackDecoder => UniReader::Decoder(DecoderStream::new()),
        // Unknown and reserved types are not read (§6.2, §9).
        _ => {
            stream.stop(Code::H3_STREAM_CREATION_ERROR.0);
            return stream.release();
        }
    };
    loop {
        let checked = match &mut reader {
            UniReader::Control(control) => loop {
                // SETTINGS (whose values we need not act on: we send no dynamic-table
                // references and no pushes), GOAWAY, MAX_PUSH_ID, CANCEL_PUSH: checked by the
                // codec, nothing else to do.
                match control.decode(&mut buf) {
                    Ok(Some(_event)) => continue,
                    Ok(None) => break Ok(()),
                    Err(e) => break Err(e),
                }
            },
            UniReader::Encoder(encoder) => encoder.decode(&mut buf),
            UniReader::Decoder(decoder) => decoder.decode(&mut buf),
        };
        if let Err(e) = checked {
            stream.release();
            return app.fail(&conn, e.into());
        }
        match stream.read().await {
            Ok(Some(bytes)) => buf.extend_from_slice(&bytes),
            Ok(None) | Err(quic::StreamError::Reset(_)) => {
                // A critical stream closed (§6.2.1, RFC 9204 §4.2).
                stream.release();
                let e =
                    Failure::connection(Code::H3_CLOSED_CRITICAL_STREAM, "critical stream closed");
                return app.fail(&conn, e);
            }
            Err(quic::StreamError::Closed) => return stream.release(),
        }
    }
}

/// An HTTP/3 error this server acts on: reset a stream or close the connection with `code`
/// (RFC 9114 §8). volt-proto's [`H3Error`] becomes one; the server makes its own too.
#[derive(Clone, Copy, Debug)]
struct Failure {
    code: Code,
    connection: bool,
    reason: &'static str,
}

impl Failure {
    fn stream(code: Code, reason: &'static str) -> Failure {
        let connection = false;
        Failure {
            code,
            connection,
            reason,
        }
    }

    fn connection(code: Code, reason: &'static str) -> Failure {
        let connection = true;
        Failure {
            code,
            connection,
            reason,
        }
    }
}

impl From<H3Error> for Failure {
    fn from(e: H3Error) -> Failure {
        Failure {
            code: e.code(),
            connection: e.is_connection_error(),
            reason: e.reason(),
        }
    }
}

/// What a client's unidirectional stream is read with.
enum UniReader {
    Control(ControlStream),
    Encoder(EncoderStream),
    Decoder(DecoderStream),
}
