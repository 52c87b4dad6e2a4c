//! The switch from HTTP/1.1 to WebSocket: the 101 written, then the transport and the bytes
//! read past the request head handed to the WebSocket session (`crate::ws`). Out of line and
//! cold: a plain request never comes here.

use std::rc::Rc;

use http::{StatusCode, Version};

use super::write::Nagle;
use super::{ConnIo, Next};
use crate::body::BodyKind;
use crate::response::Response;
use crate::ws::link::Link;
use crate::ws::PendingUpgrade;

impl ConnIo {
    /// Writes the 101 of a WebSocket handshake; the connection then switches
    /// ([`Next::Upgrade`]). Any other 1xx, or an upgrade the connection cannot make (not
    /// HTTP/1.1, or a request body: `Request::websocket` refuses both), is handed back, to be
    /// answered 500 as a 1xx final response is.
    #[cold]
    #[inline(never)]
    pub(super) fn upgrade(
        &self,
        response: Response,
        version: Version,
        has_body: bool,
    ) -> Result<Next, Response> {
        let switchable = response.status == StatusCode::SWITCHING_PROTOCOLS
            && matches!(response.body.kind, BodyKind::Upgrade(_))
            && version == Version::HTTP_11
            && !has_body
            && self.writable.get();
        if !switchable {
            return Err(response);
        }
        let mut w = self.write_buf.borrow_mut();
        // No framing fields: a 1xx has no body (RFC 9110 §15.2). `Connection: Upgrade` is the
        // handshake's own, not the server's keep-alive management.
        self.worker.write_head_start(&mut w, response.status);
        for (name, value) in response.headers() {
            volt_proto::write_header(&mut w, name.as_str().as_bytes(), value.as_bytes());
        }
        w.extend_from_slice(b"\r\n");
        match response.body.kind {
            BodyKind::Upgrade(pending) => Ok(Next::Upgrade(pending)),
            _ => unreachable!("checked above"),
        }
    }
}

/// Runs the WebSocket session on the connection once its 101 is written: the HTTP/1
/// connection gives up its transport and what it read past the request (a client may send
/// its first frames in the same packet as the handshake).
pub(super) async fn switch_to_websocket(io: Rc<ConnIo>, pending: Box<PendingUpgrade>) {
    // The request had no body, so nothing else holds the connection (only a request body's
    // reader does; the request itself does not); were it held, the connection would close.
    let Ok(mut io) = Rc::try_unwrap(io) else {
        return;
    };
    // Messages are small writes that must go at once: Nagle's algorithm, which the HTTP side
    // leaves on after a small first write (the 101, here), would hold them back.
    if !matches!(io.nagle.get(), Nagle::Off) {
        let _ = io.stream.set_nodelay(true);
    }
    let stream = io.stream.hand_over();
    let read = io.read_buf.take();
    let worker = io.worker.clone();
    drop(io); // the write buffer goes back to the worker's pool
    crate::ws::run(pending, Link::Server(stream), read, worker).await;
}
