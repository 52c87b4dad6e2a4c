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
    /// Opened by a CONNECT (plain or extended): DATA carries the tunnel's bytes, and no
    /// HEADERS may follow the request's (RFC 9113 §8.5).
    pub(super) tunnel: bool,
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
        let memory = self
            .settings
            .max_concurrent_streams
            .clamp(*RESET_MEMORY.start(), *RESET_MEMORY.end()) as usize;
        if self.reset.len() < memory {
            self.reset.push(stream);
        } else {
            self.reset[self.reset_next] = stream;
            self.reset_next = (self.reset_next + 1) % memory;
        }
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

    /// A client that opens more streams than the limit before it has the server's SETTINGS
    /// (it may) has the extra ones refused, and the bodies it sends on them are ignored. Only
    /// the last 32 resets were remembered: DATA on an older refused stream was taken for
    /// DATA on a closed stream, a connection error (STREAM_CLOSED) for every stream.
    #[test]
    fn data_on_many_refused_streams_is_ignored() {
        let mut conn = open(Settings {
            max_concurrent_streams: 1,
            ..Settings::default()
        });
        let ids: Vec<u32> = (0..101).map(|i| 1 + 2 * i).collect();
        let opened: Vec<u8> = ids.iter().flat_map(|&id| headers(id, 0, &POST)).collect();
        let (events, out, err) = run(&mut conn, &opened);
        assert_eq!((events.len(), err), (1, None));
        assert_eq!(rst_code(&out, 3), Some(Reason::REFUSED_STREAM));
        let bodies: Vec<u8> = ids[1..].iter().flat_map(|&id| data(id, 0, b"x")).collect();
        let (events, _, err) = run(&mut conn, &bodies);
        assert_eq!((events, err), (vec![], None));
    }
}
