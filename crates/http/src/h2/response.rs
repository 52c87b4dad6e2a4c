//! Responses: the head encoded as a header block, then the body sent as the stream and
//! connection windows allow ([`Outgoing`] is what is left of it), ended by trailers or an empty
//! DATA frame with END_STREAM.

use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::{Buf, Bytes};
use http::header::HeaderName;
use http::StatusCode;
use volt_proto::h2::frame::Reason;

use crate::body::{BodyKind, BodyStream, Trailers};
use crate::response::{IntoResponse, Response};
use crate::Request;

use super::inbox::Continue;
use super::tunnel::Outbox;
use super::{Driver, Phase, RequestKind, Task, FLUSH_AT};
use crate::ws::PendingUpgrade;
use crate::Error;

/// What is left of a response.
pub(super) enum Outgoing {
    /// The handler is still running.
    Waiting,
    /// An in-memory body waiting for window, then the trailers.
    Full {
        data: Bytes,
        trailers: Option<Trailers>,
    },
    /// A streamed body: the chunk in hand, then the rest.
    Stream {
        body: BodyStream,
        len: Option<u64>,
        sent: u64,
        chunk: Bytes,
        trailers: Option<Trailers>,
    },
    /// A WebSocket's 200 encoded: its session is to start (`Driver::start_tunnel`).
    Upgrade(Box<PendingUpgrade>),
    /// A WebSocket's stream: the session's bytes, sent as they come.
    Tunnel(Rc<RefCell<Outbox>>),
    Done,
}

impl<C, F> Driver<C, F>
where
    C: Fn(Request) -> F,
    F: Future<Output = Response>,
{
    /// Sends what it can of `response` now; a task keeps what is left.
    pub(super) fn respond(&mut self, mut task: Task<F>, response: Response) {
        let mut response = final_response(task.kind, response);
        // `Connection: close` is not sent on HTTP/2 (§8.2.2), but it still ends the
        // connection: with a graceful GOAWAY once this response is out.
        let close = response.asks_to_close();
        task.out = self.start_response(task.id, task.kind, &mut response);
        if let Outgoing::Upgrade(_) = task.out {
            let Outgoing::Upgrade(pending) = std::mem::replace(&mut task.out, Outgoing::Done)
            else {
                unreachable!("matched above")
            };
            self.start_tunnel(&mut task, pending);
        }
        self.pump_task(&mut task, None);
        if close && self.phase == Phase::Serving {
            self.go_away();
        }
        if self.task_finished(&mut task) {
            self.retire(task);
        } else {
            self.idle_since = None;
            self.tasks.push(task);
        }
    }

    /// Encodes the response head; returns what is left to send.
    fn start_response(&mut self, id: u32, kind: RequestKind, response: &mut Response) -> Outgoing {
        let body = response.take_body();
        let status = response.status;
        let bodiless_status = status.is_informational()
            || status == StatusCode::NO_CONTENT
            || status == StatusCode::NOT_MODIFIED;
        let no_body = kind == RequestKind::Head || bodiless_status;
        // Trailers follow content: a response without any gets none, as on HTTP/1.
        let trailers = body.trailers.filter(|_| !no_body);
        let length = body_len(&body.kind).filter(|_| !bodiless_status && !kind.tunnels(status));
        let (out, end_now) = match body.kind {
            BodyKind::Full(data) => {
                let data = if no_body { Bytes::new() } else { data };
                let end = data.is_empty() && trailers.is_none();
                (Outgoing::Full { data, trailers }, end)
            }
            // An upgrade anywhere else (a 101 is answered 500 before this): an empty body.
            BodyKind::Stream { .. } | BodyKind::Upgrade(_) if no_body => (
                Outgoing::Full {
                    data: Bytes::new(),
                    trailers: None,
                },
                true,
            ),
            // A WebSocket's 200 (RFC 8441 §5): the stream stays open for its session.
            BodyKind::Upgrade(pending)
                if kind == RequestKind::WebSocket && status == StatusCode::OK =>
            {
                (Outgoing::Upgrade(pending), false)
            }
            BodyKind::Upgrade(_) => (
                Outgoing::Full {
                    data: Bytes::new(),
                    trailers: None,
                },
                true,
            ),
            BodyKind::Stream { stream, len } => (
                Outgoing::Stream {
                    body: stream,
                    len,
                    sent: 0,
                    chunk: Bytes::new(),
                    trailers,
                },
                false,
            ),
        };
        let worker = &*self.worker;
        let Some(mut block) = self.conn.headers(id, &mut self.out) else {
            return Outgoing::Done;
        };
        block.status(status.as_u16());
        if let Some(ct) = &response.content_type {
            block.field(b"content-type", ct.as_bytes());
        }
        for (name, value) in response.headers() {
            if !is_managed(name) {
                block.field(name.as_str().as_bytes(), value.as_bytes());
            }
        }
        if let Some(name) = &worker.config.server_name {
            block.field(b"server", name.as_bytes());
        }
        if let Some(alt_svc) = &worker.alt_svc {
            block.field(b"alt-svc", alt_svc.as_bytes());
        }
        worker.with_date(|date| block.field(b"date", date));
        if let Some(n) = length {
            block.field(b"content-length", itoa::Buffer::new().format(n).as_bytes());
        }
        block.finish(end_now);
        if end_now {
            Outgoing::Done
        } else {
            out
        }
    }

    /// Sends pending response data as the windows allow and gives request-body window back.
    /// True if the output filled up while there was more to send (write, then come back).
    pub(super) fn pump(&mut self, cx: &mut Context<'_>) -> bool {
        let mut i = 0;
        while i < self.tasks.len() {
            if self.out.len() >= FLUSH_AT {
                return true;
            }
            let mut task = std::mem::replace(&mut self.tasks[i], Task::placeholder());
            if let Some(inbox) = &task.inbox {
                let dropped = Rc::strong_count(inbox) == 1;
                let mut inbox = inbox.borrow_mut();
                if dropped {
                    // The handler dropped the body with chunks unread: they are drained, as
                    // what arrives after the drop is (`on_data`).
                    let unread: usize = inbox.chunks.drain(..).map(|c| c.len()).sum();
                    task.drained += unread as u64;
                    self.conn.release_connection_window(unread, &mut self.out);
                }
                let consumed = std::mem::take(&mut inbox.consumed);
                self.conn.release(task.id, consumed, &mut self.out);
                if inbox.expect == Continue::Wanted {
                    inbox.expect = Continue::Nothing;
                    // Never after the final response started (RFC 9110 §15.2: a 1xx comes
                    // before the final response).
                    if matches!(task.out, Outgoing::Waiting) {
                        if let Some(mut block) = self.conn.headers(task.id, &mut self.out) {
                            block.status(100);
                            block.finish(false);
                        }
                    }
                }
            }
            self.pump_task(&mut task, Some(cx));
            if self.task_finished(&mut task) {
                self.tasks.swap_remove(i);
                self.retire(task);
            } else {
                self.tasks[i] = task;
                i += 1;
            }
        }
        self.window_since = stalled(
            self.window_since,
            std::mem::take(&mut self.window_sent),
            std::mem::take(&mut self.window_waits),
        );
        // A streamed body stops at the mark without polling for more: the next pass, once
        // the output is written, must come back to it.
        self.out.len() >= FLUSH_AT
    }

    /// Sends what the windows allow of `task`'s response. A streamed body is polled for more
    /// only with `cx` (from the connection loop).
    fn pump_task(&mut self, task: &mut Task<F>, cx: Option<&mut Context<'_>>) {
        let id = task.id;
        if !self.conn.is_open(id) && !matches!(task.out, Outgoing::Waiting) {
            if let Outgoing::Tunnel(outbox) = &task.out {
                outbox.borrow_mut().reset();
            }
            task.out = Outgoing::Done;
            return;
        }
        if let Outgoing::Tunnel(outbox) = &task.out {
            let outbox = outbox.clone();
            if self.pump_tunnel(task, &outbox) {
                task.out = Outgoing::Done;
            }
            return;
        }
        match &mut task.out {
            Outgoing::Waiting | Outgoing::Done | Outgoing::Tunnel(_) => {}
            Outgoing::Upgrade(_) => unreachable!("the session starts as it is encoded"),
            Outgoing::Full { data, trailers } => {
                let n = self.send_some(id, data, trailers.is_none());
                data.advance(n);
                self.note_sent(id, &mut task.stalled_since, n, !data.is_empty());
                if data.is_empty() {
                    let trailers = trailers.take();
                    self.finish_body(id, trailers);
                    task.out = Outgoing::Done;
                }
            }
            Outgoing::Stream {
                body,
                len,
                sent,
                chunk,
                trailers,
            } => {
                let Some(cx) = cx else { return };
                loop {
                    if !chunk.is_empty() {
                        let n = self.send_some(id, chunk, false);
                        chunk.advance(n);
                        self.note_sent(id, &mut task.stalled_since, n, !chunk.is_empty());
                        if !chunk.is_empty() || self.out.len() >= FLUSH_AT {
                            return;
                        }
                    }
                    match crate::body::poll_next_caught(body, cx) {
                        Poll::Pending => return,
                        Poll::Ready(Some(Ok(next))) => {
                            *sent += next.len() as u64;
                            if len.is_some_and(|n| *sent > n) {
                                break;
                            }
                            *chunk = next;
                        }
                        Poll::Ready(None) if len.is_none_or(|n| *sent == n) => {
                            let trailers = trailers.take();
                            self.finish_body(id, trailers);
                            task.out = Outgoing::Done;
                            return;
                        }
                        Poll::Ready(_) => break,
                    }
                }
                // The stream failed or its length was wrong: the client must not take a
                // truncated body for a whole one.
                self.conn.reset(id, Reason::INTERNAL_ERROR, &mut self.out);
                task.out = Outgoing::Done;
            }
        }
    }

    /// After `n` bytes of stream `id`'s response went out, with more `left` to send: the
    /// stream's stall clock (`stalled_since`) runs while its own window is shut, the
    /// connection's (`window_since`) while the connection's is. A stream that only waits its
    /// turn for the connection's window is not stalled: a client reading several large
    /// responses at once keeps them all.
    pub(super) fn note_sent(
        &mut self,
        id: u32,
        stalled_since: &mut Option<Instant>,
        n: usize,
        left: bool,
    ) {
        let shut = left && self.conn.stream_window_shut(id);
        *stalled_since = stalled(*stalled_since, n, shut);
        self.window_sent += n;
        self.window_waits |= left && self.conn.connection_window_shut();
    }

    /// Sends what the windows allow of `data`, but no more than fills the output to its mark:
    /// a large body is not copied whole into the output under a large client window. `end`
    /// ends the stream with the last byte of `data`.
    pub(super) fn send_some(&mut self, id: u32, data: &[u8], end: bool) -> usize {
        let room = FLUSH_AT.saturating_sub(self.out.len());
        let part = &data[..data.len().min(room)];
        self.conn
            .send_data(id, part, end && part.len() == data.len(), &mut self.out)
    }

    /// Ends a response body: with the trailers, or an empty DATA frame with END_STREAM.
    fn finish_body(&mut self, id: u32, trailers: Option<Trailers>) {
        let Some(fields) = trailers.and_then(Trailers::take) else {
            self.conn.send_data(id, &[], true, &mut self.out);
            return;
        };
        if let Some(mut block) = self.conn.headers(id, &mut self.out) {
            for (name, value) in &fields {
                if !is_connection_specific(name) {
                    block.field(name.as_str().as_bytes(), value.as_bytes());
                }
            }
            block.finish(true);
        }
    }
}

/// Since when a response has waited for window, after `sent` bytes went out and with
/// `blocked` saying whether some are still waiting.
fn stalled(since: Option<Instant>, sent: usize, blocked: bool) -> Option<Instant> {
    match (blocked, since) {
        (false, _) => None,
        (true, Some(t)) if sent == 0 => Some(t),
        (true, _) => Some(Instant::now()),
    }
}

/// The handler's response as HTTP/2 and HTTP/3 answer it: a 1xx (a handler bug) as a panic is
/// (500 on this stream); a 2xx to a WebSocket's extended CONNECT that is not the WebSocket's
/// own answer as 501, since any 2xx tells the client its WebSocket is open (RFC 8441 §5): a
/// handler that did not take it (a GET route's, say, which the router lets answer) must not.
pub(crate) fn final_response(kind: RequestKind, mut response: Response) -> Response {
    if response.status.is_informational() {
        response = response.informational_as_final();
    }
    let upgrade = matches!(response.body.kind, BodyKind::Upgrade(_));
    if kind == RequestKind::WebSocket && response.status.is_success() && !upgrade {
        response =
            Error::new(StatusCode::NOT_IMPLEMENTED, "no WebSocket is served here").into_response();
    }
    response
}

pub(crate) fn body_len(kind: &BodyKind) -> Option<u64> {
    match kind {
        BodyKind::Full(b) => Some(b.len() as u64),
        BodyKind::Stream { len, .. } => *len,
        BodyKind::Upgrade(_) => Some(0),
    }
}

/// Headers HTTP/2 forbids (connection-specific) or the server sets itself.
pub(crate) fn is_managed(name: &HeaderName) -> bool {
    use http::header::{CONTENT_LENGTH, DATE, SERVER};
    is_connection_specific(name) || *name == CONTENT_LENGTH || *name == DATE || *name == SERVER
}

/// Connection-specific fields, which a client must treat as malformed in a response or its
/// trailers (RFC 9113 §8.2.2; `te` is for requests only).
pub(crate) fn is_connection_specific(name: &HeaderName) -> bool {
    use http::header::{CONNECTION, TE, TRANSFER_ENCODING, UPGRADE};
    *name == CONNECTION
        || *name == TRANSFER_ENCODING
        || *name == UPGRADE
        || *name == TE
        || name.as_str() == "keep-alive"
        || name.as_str() == "proxy-connection"
}
