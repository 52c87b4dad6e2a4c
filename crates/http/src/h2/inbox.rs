//! Request bodies on their way to the handler: the connection puts each stream's DATA into
//! its [`Inbox`] (`Driver::on_data`, `Driver::end_body`), and the handler takes it out through
//! [`H2Body`], which gives the window back to the client as it takes each chunk.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::{poll_fn, Future};
use std::rc::Rc;
use std::task::{Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use http::header::HeaderMap;

use crate::request::bounded_piece;
use crate::response::Response;
use crate::{Error, Request};

use super::Driver;

/// A request body on its way from the connection to the handler.
pub(crate) struct Inbox {
    pub(super) chunks: VecDeque<Bytes>,
    pub(super) end: BodyEnd,
    /// Bytes the handler took since the connection last gave the window back.
    pub(super) consumed: usize,
    /// The handler waiting for the next chunk.
    pub(super) reader: Option<Waker>,
    /// The connection task, woken to give back window.
    pub(super) conn: Waker,
    /// Where the request's `Expect: 100-continue` stands.
    pub(super) expect: Continue,
}

/// `Expect: 100-continue` on an HTTP/2 request (RFC 9110 §10.1.1): the client may wait for an
/// interim 100 response before it sends the body. As on HTTP/1, the 100 goes out when the
/// handler first waits for the body, and only while the final response has not started: a
/// handler that answers without reading the body sends none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Continue {
    /// Nothing expected, or the 100 already sent (or no longer of use).
    Nothing,
    /// The client expects a 100; nobody has asked for the body yet.
    Expected,
    /// The handler waits for the body: the connection is to send the 100.
    Wanted,
}

impl Continue {
    /// What a request head expects: `Err` if its `Expect` lists anything but `100-continue`,
    /// the only expectation HTTP defines, which the server answers with 417 as on HTTP/1 (RFC
    /// 9110 §10.1.1).
    pub(super) fn of(head: &volt_proto::h2::server::Head) -> Result<Continue, ()> {
        let mut expect = Continue::Nothing;
        for f in head.fields.iter().filter(|f| head.get(f.name) == b"expect") {
            for member in volt_proto::list_elements(head.get(f.value)) {
                match member.eq_ignore_ascii_case(b"100-continue") {
                    true => expect = Continue::Expected,
                    false => return Err(()),
                }
            }
        }
        Ok(expect)
    }
}

/// How a request body ends.
pub(super) enum BodyEnd {
    Open,
    Ended,
    Trailers(HeaderMap),
    /// The stream was reset (or the connection lost) before the end.
    Reset,
}

impl Inbox {
    pub(super) fn wake_reader(&mut self) {
        if let Some(w) = self.reader.take() {
            w.wake();
        }
    }
}

impl<C, F> Driver<C, F>
where
    C: Fn(Request) -> F,
    F: Future<Output = Response>,
{
    /// Request body bytes: to the handler, or drained once it is done.
    pub(super) fn on_data(&mut self, id: u32, data: Bytes, end_stream: bool) {
        let Some(i) = self.task(id) else {
            // Nothing waits for the body: the bytes go, and only their connection window comes
            // back (see below).
            self.conn
                .release_connection_window(data.len(), &mut self.out);
            return;
        };
        let task = &mut self.tasks[i];
        match &task.inbox {
            Some(inbox) if Rc::strong_count(inbox) > 1 => {
                let mut inbox = inbox.borrow_mut();
                if !data.is_empty() {
                    inbox.chunks.push_back(data);
                    // The client sends the body without waiting for a 100: none is needed
                    // (RFC 9110 §10.1.1).
                    inbox.expect = Continue::Nothing;
                }
                if end_stream {
                    inbox.end = BodyEnd::Ended;
                }
                inbox.wake_reader();
            }
            // Nobody reads the body (the handler dropped it, or is done): the bytes go, and
            // their connection window comes back at once (other streams must not stall on
            // them), never the stream's own: flow control holds the client back as HTTP/1
            // reads nothing meanwhile, and once the response is out, the client is told to stop
            // when that window is used up (`task_finished`).
            _ => {
                task.drained += data.len() as u64;
                self.conn
                    .release_connection_window(data.len(), &mut self.out);
            }
        }
        self.settle(id);
    }

    pub(super) fn end_body(&mut self, id: u32, end: BodyEnd) {
        if let Some(i) = self.task(id) {
            if let Some(inbox) = &self.tasks[i].inbox {
                let mut inbox = inbox.borrow_mut();
                inbox.end = end;
                inbox.wake_reader();
            }
            self.settle(id);
        }
    }
}

/// A body dropped with chunks unread wakes the connection, which drains them and gives their
/// connection window back (`Driver::pump`).
impl Drop for H2Body {
    fn drop(&mut self) {
        let inbox = self.inbox.borrow();
        if !inbox.chunks.is_empty() {
            inbox.conn.wake_by_ref();
        }
    }
}

/// A request body arriving on an HTTP/2 stream. Window is given back to the client as the
/// handler takes each chunk: flow control is the backpressure.
pub(crate) struct H2Body {
    pub(super) inbox: Rc<RefCell<Inbox>>,
    pub(super) received: u64,
    pub(super) max: u64,
    pub(super) timeout: Duration,
}

impl H2Body {
    pub(crate) async fn chunk(&mut self) -> Result<Option<Bytes>, Error> {
        let inbox = &*self.inbox;
        let next = poll_fn(|cx| {
            let mut inbox = inbox.borrow_mut();
            if let Some(chunk) = inbox.chunks.pop_front() {
                inbox.consumed += chunk.len();
                inbox.conn.wake_by_ref();
                return Poll::Ready(Ok(Some(chunk)));
            }
            match inbox.end {
                BodyEnd::Open => {
                    inbox.reader = Some(cx.waker().clone());
                    if inbox.expect == Continue::Expected {
                        inbox.expect = Continue::Wanted;
                        inbox.conn.wake_by_ref();
                    }
                    Poll::Pending
                }
                BodyEnd::Ended | BodyEnd::Trailers(_) => Poll::Ready(Ok(None)),
                BodyEnd::Reset => Poll::Ready(Err(Error::bad_request(
                    "request body: the stream was reset",
                ))),
            }
        });
        bounded_piece(next, self.timeout, &mut self.received, self.max).await
    }

    /// The trailer fields, once the body has been read to its end.
    pub(crate) async fn trailers(&mut self) -> Result<Option<HeaderMap>, Error> {
        while self.chunk().await?.is_some() {}
        let mut inbox = self.inbox.borrow_mut();
        match std::mem::replace(&mut inbox.end, BodyEnd::Ended) {
            BodyEnd::Trailers(map) => Ok(Some(map)),
            _ => Ok(None),
        }
    }
}
