//! The reading side of an HTTP/1 request body: decodes the body's framing from the
//! connection's read buffer, reading more from the socket as the handler asks for it, answers
//! `Expect: 100-continue` on the first read, and after the response skips what the handler
//! left so the connection can go on.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Instant;

use bytes::Bytes;
use http::StatusCode;
use volt_proto::{BodyDecoder, BodyKind};

use super::{ConnIo, ReadError};
use crate::body::take_body_data;
use crate::Error;

/// Read size while reading a request body.
const BODY_READ: usize = 64 * 1024;

/// The reading side of a request body, shared by the [`RequestBody`](crate::request::RequestBody) and the connection.
pub(crate) struct BodyReader {
    io: Rc<ConnIo>,
    state: RefCell<BodyState>,
}

struct BodyState {
    decoder: BodyDecoder,
    received: u64,
    /// `Expect: 100-continue` not yet answered.
    continue_pending: bool,
    /// A framing error, a timeout or a closed connection: the connection cannot continue.
    failed: bool,
    /// The connection's task is polling the handler (or skipping the body) right now; see
    /// [`ConnIo::flush_for_body`].
    polled_by_conn: bool,
}

impl BodyReader {
    /// A reader for a body framed as `kind`; `expect_continue`: the client waits for
    /// `100 Continue` before it sends the body.
    pub(super) fn new(io: Rc<ConnIo>, kind: BodyKind, expect_continue: bool) -> BodyReader {
        let decoder = BodyDecoder::with_limits(kind, &io.worker.limits);
        BodyReader {
            io,
            state: RefCell::new(BodyState {
                decoder,
                received: 0,
                continue_pending: expect_continue,
                failed: false,
                polled_by_conn: false,
            }),
        }
    }

    pub(crate) async fn chunk(&self) -> Result<Option<Bytes>, Error> {
        let config = &self.io.worker.config;
        if self.state.borrow().failed {
            return Err(Error::bad_request("the request body is no longer readable"));
        }
        // Which task reads is known at the first poll, and stays the same.
        let conn_task = self.state.borrow().polled_by_conn;
        if std::mem::take(&mut self.state.borrow_mut().continue_pending) {
            self.io
                .write_buf
                .borrow_mut()
                .extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
            if !self.io.flush_for_body(conn_task).await {
                return Err(self.fail(StatusCode::BAD_REQUEST, "connection closed"));
            }
        }
        let deadline = Instant::now() + config.body_read_timeout;
        loop {
            {
                let mut state = self.state.borrow_mut();
                if state.decoder.is_done() {
                    return Ok(None);
                }
                let mut buf = self.io.read_buf.borrow_mut();
                if !buf.is_empty() {
                    let (consumed, data) = match take_body_data(&mut state.decoder, &mut buf) {
                        Ok(r) => r,
                        Err(e) => {
                            state.failed = true;
                            return Err(e.into());
                        }
                    };
                    if let Some(chunk) = data {
                        state.received += chunk.len() as u64;
                        if state.received > config.max_body_bytes {
                            state.failed = true;
                            return Err(Error::new(
                                StatusCode::PAYLOAD_TOO_LARGE,
                                format!(
                                    "request body is over the limit of {} bytes",
                                    config.max_body_bytes
                                ),
                            ));
                        }
                        return Ok(Some(chunk));
                    }
                    if state.decoder.is_done() {
                        return Ok(None);
                    }
                    if consumed > 0 {
                        continue;
                    }
                }
            }
            // Answers already encoded (earlier pipelined ones, or this request's own while its
            // unread body is skipped) go out before waiting on a client that may wait for them.
            if !self.io.flush_for_body(conn_task).await {
                return Err(self.fail(StatusCode::BAD_REQUEST, "connection closed"));
            }
            let read = if conn_task {
                self.io.read(deadline, BODY_READ).await
            } else {
                self.io.read_alone(deadline, BODY_READ).await
            };
            match read {
                Ok(0) => return Err(self.fail(StatusCode::BAD_REQUEST, "request body ended early")),
                Ok(_) => {}
                Err(ReadError::Io) => {
                    return Err(self.fail(StatusCode::BAD_REQUEST, "connection failed"))
                }
                Err(ReadError::Timeout) => {
                    return Err(self.fail(StatusCode::REQUEST_TIMEOUT, "request body took too long"))
                }
            }
        }
    }

    fn fail(&self, status: StatusCode, message: &str) -> Error {
        self.state.borrow_mut().failed = true;
        Error::new(status, message)
    }

    /// Whether what the handler left of the body can be read and discarded after the response
    /// so the connection goes on: not after a failure, not while the client waits for a
    /// `100 Continue` (it may or may not send the body after the final answer, RFC 9110
    /// §10.1.1), not when more than `max` bytes of a declared length are left. A client that
    /// sent body bytes already does not wait: its body is there to skip.
    pub(super) fn skippable(&self, declared: Option<u64>, max: u64) -> bool {
        let state = self.state.borrow();
        let waiting = state.continue_pending && self.io.read_buf.borrow().is_empty();
        !state.failed
            && (state.decoder.is_done()
                || (!waiting && declared.is_none_or(|n| n - state.received <= max)))
    }

    /// Marks the connection's task as the one polling the handler (`true`), until `false`.
    pub(super) fn polled_by_conn(&self, polled: bool) {
        self.state.borrow_mut().polled_by_conn = polled;
    }

    /// The final response is being written: a `100 Continue` owed is not sent any more, as it
    /// would follow that response (inside its body, if the body is streamed). The client has
    /// its answer, so whether [`BodyReader::skippable`] is was decided before this.
    pub(super) fn answered(&self) {
        self.state.borrow_mut().continue_pending = false;
    }

    /// After the response, what [`BodyReader::finish`] would answer without reading: `None`
    /// if part of the body is still to be read and discarded.
    pub(super) fn finished_now(&self) -> Option<bool> {
        let state = self.state.borrow();
        if state.failed {
            return Some(false);
        }
        if state.decoder.is_done() {
            return Some(true);
        }
        // The client waits for a 100 Continue that never came: it may or may not send the
        // body, so the next bytes cannot be trusted to be a request.
        state.continue_pending.then_some(false)
    }

    /// After the response: reads and discards what the handler left, up to `max` bytes. True if
    /// the connection can go on to the next request.
    pub(super) async fn finish(&self, max: u64) -> bool {
        if let Some(answer) = self.finished_now() {
            return answer;
        }
        let start = self.state.borrow().received;
        // Only the connection's task skips the body.
        self.polled_by_conn(true);
        let skipped = loop {
            match self.chunk().await {
                Ok(None) => break true,
                Ok(Some(_)) if self.state.borrow().received - start <= max => {}
                _ => break false,
            }
        };
        self.polled_by_conn(false);
        skipped
    }
}
