//! The stream table: the streams open or half-closed, found by a scan of their ids, how each
//! side ends its half, and the ring of streams the server reset lately.

use super::{Connection, State, RESET_MEMORY};
use crate::h2::frame::{self, Reason};

/// A stream's state (RFC 9113 §5.1) as far as the server tracks it: idle and closed streams
/// are not in the stream list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum StreamState {
    Open,
    /// The client ended its side (END_STREAM received).
    HalfClosedRemote,
    /// The server ended its side.
    HalfClosedLocal,
}

#[derive(Debug)]
pub(super) struct Stream {
    pub(super) id: u32,
    pub(super) state: StreamState,
    /// What the server may still send (negative after the client shrank the initial window).
    pub(super) send_window: i64,
    /// What the client may still send.
    pub(super) recv_window: i64,
    /// The request's `content-length`, checked against the DATA it sends.
    pub(super) content_length: Option<u64>,
    pub(super) received: u64,
}

impl Connection {
    pub(super) fn find(&self, stream: u32) -> Option<usize> {
        self.streams.iter().position(|s| s.id == stream)
    }

    /// Whether frames on the closed `stream` are ignored: the server reset it lately, or the
    /// client opened it after the server's GOAWAY (it is not served). The client may have
    /// sent them before it saw either (RFC 9113 §5.1, §6.8).
    pub(super) fn ignores(&self, stream: u32) -> bool {
        self.reset.contains(&stream) || self.goaway.is_some_and(|last| stream > last)
    }

    /// The client ended its side of stream `i`.
    pub(super) fn end_remote(&mut self, i: usize) {
        let s = &mut self.streams[i];
        match s.state {
            StreamState::HalfClosedLocal => {
                self.streams.swap_remove(i);
            }
            _ => s.state = StreamState::HalfClosedRemote,
        }
    }

    /// The server ended its side of stream `i`.
    pub(super) fn end_local(&mut self, i: usize) {
        let s = &mut self.streams[i];
        match s.state {
            StreamState::HalfClosedRemote => {
                self.streams.swap_remove(i);
            }
            _ => s.state = StreamState::HalfClosedLocal,
        }
    }

    /// Resets `stream` with `reason` (nothing is sent for a stream already gone). Frames the
    /// client sent before it sees the reset are ignored.
    pub fn reset(&mut self, stream: u32, reason: Reason, dst: &mut Vec<u8>) {
        if self.state == State::Closed {
            return;
        }
        frame::write_rst_stream(dst, stream, reason);
        if let Some(i) = self.find(stream) {
            self.streams.swap_remove(i);
        }
        self.reset[self.reset_next] = stream;
        self.reset_next = (self.reset_next + 1) % RESET_MEMORY;
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;

    #[test]
    fn closed_and_reset_streams() {
        let mut conn = open(Settings::default());
        run(&mut conn, &headers(1, flags::END_STREAM, &GET));
        let mut out = Vec::new();
        conn.headers(1, &mut out).unwrap().status(204);
        let mut block = conn.headers(1, &mut out).unwrap();
        block.status(204);
        block.finish(true);
        // Frames after both sides ended: STREAM_CLOSED.
        let (_, out, _) = run(&mut conn, &data(1, 0, b"x"));
        assert_eq!(goaway_code(&out), Some(Reason::STREAM_CLOSED));

        // Frames on a stream the server reset are ignored (their window comes back).
        let mut conn = open(Settings::default());
        run(&mut conn, &headers(1, 0, &POST));
        conn.reset(1, Reason::CANCEL, &mut Vec::new());
        let (events, out, err) = run(&mut conn, &data(1, 0, b"xyz"));
        assert_eq!((events, err), (vec![], None));
        assert_eq!(frames(&out)[0].0.kind, Kind::WindowUpdate);
    }
}
