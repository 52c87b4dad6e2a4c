//! WebSocket (RFC 6455) on the server's HTTP/1.1 connections, HTTP/2 streams (RFC 8441) and
//! HTTP/3 streams (RFC 9220): the handshake ([`Request::websocket`](crate::Request::websocket),
//! [`WebSocketUpgrade`]) and the session ([`WebSocket`], which the client's WebSockets are
//! too), over volt-proto's sans-I/O frame codec (`volt_proto::ws`), with permessage-deflate
//! (RFC 7692) if both ends agree.
//!
//! On HTTP/1.1 the connection writes the 101, then hands its transport (plain TCP or TLS) and
//! the bytes it read past the request head to [`run`], which runs the handler's session on
//! them in the connection's own task, then closes. On HTTP/2 the 200 leaves the stream open,
//! and [`run`] runs the session on a link over that stream's DATA frames (`crate::h2`), in the
//! connection's task too. On HTTP/3 likewise (`crate::h3`), in the stream's own task.

mod handshake;
pub(crate) mod link;
mod socket;

use std::future::{poll_fn, Future};
use std::io;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::rc::Rc;
use std::task::Poll;

use bytes::{Bytes, BytesMut};

pub use handshake::WebSocketUpgrade;
pub(crate) use handshake::{accept_key, is_extended_connect};
pub(crate) use socket::Settings;
pub use socket::WebSocket;

use crate::server::Worker;

/// A WebSocket message.
///
/// [`WebSocket::recv`] gives `Text` and `Binary` only: pings are answered with pongs by
/// themselves, pongs are dropped, and the client's close ends `recv` with `None` (its code and
/// reason are then [`WebSocket::close_frame`]). All five can be sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message {
    /// A text message.
    Text(String),
    /// A binary message.
    Binary(Bytes),
    /// A ping (at most 125 bytes); the client answers with a pong.
    Ping(Bytes),
    /// A pong (at most 125 bytes), unasked for (a heartbeat).
    Pong(Bytes),
    /// Starts the close handshake with a code and reason (`None`: an empty close frame), as
    /// [`WebSocket::close`] does.
    Close(Option<(u16, String)>),
}

impl From<String> for Message {
    fn from(s: String) -> Message {
        Message::Text(s)
    }
}

impl From<&str> for Message {
    fn from(s: &str) -> Message {
        Message::Text(s.to_owned())
    }
}

impl From<Bytes> for Message {
    fn from(b: Bytes) -> Message {
        Message::Binary(b)
    }
}

impl From<Vec<u8>> for Message {
    fn from(b: Vec<u8>) -> Message {
        Message::Binary(b.into())
    }
}

/// The handler's session type, boxed.
type Session = Pin<Box<dyn Future<Output = io::Result<()>>>>;

/// What the 101 carries to the connection: the session to run and its options.
pub(crate) struct PendingUpgrade {
    options: handshake::Options,
    /// permessage-deflate as agreed in the 101, and the level to compress at.
    deflate: Option<(volt_proto::ws::DeflateParams, u32)>,
    start: Box<dyn FnOnce(WebSocket) -> Session>,
}

/// Runs the session of `upgrade` on `link`: a connection the HTTP/1 side gave up (with
/// what it had read past the 101's request in `read`), or an HTTP/2 or HTTP/3 stream.
pub(crate) async fn run(
    upgrade: Box<PendingUpgrade>,
    link: link::Link,
    read: BytesMut,
    worker: Rc<Worker>,
) {
    let PendingUpgrade {
        options,
        deflate,
        start,
    } = *upgrade;
    let config = &worker.config;
    let settings = Settings {
        role: volt_proto::ws::Role::Server,
        max_message: options.max_message,
        idle_timeout: options.idle_timeout,
        protocol: options.protocol,
        deflate,
        write_timeout: config.write_timeout,
        linger_timeout: config.linger_timeout,
        max_linger_bytes: config.max_linger_bytes,
    };
    let ws = WebSocket::new(link, read, Some(worker), settings);
    // The session owns the socket while it runs; it is shared with this function so that
    // the close handshake can finish after the session's future is gone.
    let shared = ws.share();
    let mut session = (start)(ws);
    // A panic ends the session as an error does (1011); the worker goes on.
    let ended = poll_fn(|cx| {
        catch_unwind(AssertUnwindSafe(|| session.as_mut().poll(cx))).unwrap_or_else(|_| {
            let e = io::Error::other("the WebSocket session panicked");
            Poll::Ready(Err(e))
        })
    })
    .await;
    drop(session);
    socket::finish(&shared, ended.is_ok()).await;
}
