//! The receive side: one handler per frame type, each checking the frame against the
//! protocol and the connection's state, and returning the [`Event`] it brings, if any, or the
//! [`Fault`] it is. Header blocks are collected over CONTINUATION frames here before they are
//! decoded.

use bytes::{Buf, Bytes};

use super::stream::{Stream, StreamState};
use super::{conn_err, Connection, Event, Fault, Handled, State};
use crate::h2::frame::{self, flags, setting, FrameHeader, Kind, Reason};

/// Most CONTINUATION frames one header block may take.
const MAX_CONTINUATIONS: u32 = 64;

/// What a header block being received is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BlockUse {
    /// A new stream's request head.
    Request,
    /// An open stream's trailers.
    Trailers,
    /// Decoded to keep HPACK in step, then the stream is reset with this reason (or, for
    /// `None`, the block is dropped: a stream the server already reset or refused after GOAWAY).
    Discard(Option<Reason>),
}

/// A header block split over HEADERS and CONTINUATION frames, collected until END_HEADERS.
#[derive(Debug)]
pub(super) struct Block {
    stream: u32,
    end_stream: bool,
    usage: BlockUse,
    continuations: u32,
}

impl Connection {
    pub(super) fn on_frame(
        &mut self,
        h: FrameHeader,
        payload: &[u8],
        dst: &mut Vec<u8>,
    ) -> Handled {
        if let Some(block) = &self.block {
            if h.kind != Kind::Continuation || h.stream != block.stream {
                return Err(conn_err(Reason::PROTOCOL_ERROR, "header block interrupted"));
            }
        }
        if self.state == State::FirstSettings && (h.kind != Kind::Settings || h.has(flags::ACK)) {
            return Err(conn_err(Reason::PROTOCOL_ERROR, "SETTINGS must come first"));
        }
        match h.kind {
            Kind::Data => unreachable!("DATA is handled apart once the connection is open"),
            Kind::Headers => self.on_headers(h, payload),
            Kind::Continuation => self.on_continuation(h, payload),
            Kind::Priority => self.on_priority(h, payload),
            Kind::RstStream => self.on_rst_stream(h, payload),
            Kind::Settings => self.on_settings(h, payload, dst),
            Kind::Ping => self.on_ping(h, payload, dst),
            Kind::GoAway => {
                self.spend_control()?;
                on_goaway(h, payload)
            }
            Kind::WindowUpdate => self.on_window_update(h, payload),
            Kind::PushPromise => Err(conn_err(
                Reason::PROTOCOL_ERROR,
                "PUSH_PROMISE from a client",
            )),
            Kind::Unknown(_) => {
                self.spend_control()?;
                Ok(None)
            }
        }
    }

    pub(super) fn on_data(
        &mut self,
        h: FrameHeader,
        mut payload: Bytes,
        dst: &mut Vec<u8>,
    ) -> Handled {
        if self.block.is_some() {
            return Err(conn_err(Reason::PROTOCOL_ERROR, "header block interrupted"));
        }
        if h.stream == 0 {
            return Err(conn_err(Reason::PROTOCOL_ERROR, "DATA on stream 0"));
        }
        let flow_len = i64::from(h.len);
        self.recv_window -= flow_len;
        if self.recv_window < 0 {
            return Err(conn_err(
                Reason::FLOW_CONTROL_ERROR,
                "connection window exceeded",
            ));
        }
        let pad = strip_padding(h, &mut payload)?;
        let end_stream = h.has(flags::END_STREAM);
        let Some(i) = self.find(h.stream) else {
            if h.stream > self.last_stream {
                return Err(conn_err(Reason::PROTOCOL_ERROR, "DATA on an idle stream"));
            }
            if !self.ignores(h.stream) {
                return Err(conn_err(Reason::STREAM_CLOSED, "DATA on a closed stream"));
            }
            // Sent before the client saw our reset or GOAWAY: ignored, but its window is
            // given back. That WINDOW_UPDATE is work the frame costs and no request pays
            // for, so the frame counts in the control-frame budget: a client that keeps
            // sending on a stream it was told is reset floods (an honest one has at most its
            // stream window in flight when the reset arrives: a few frames).
            self.spend_control()?;
            self.release_connection(h.len, dst);
            return Ok(None);
        };
        let s = &mut self.streams[i];
        if s.state == StreamState::HalfClosedRemote {
            self.release_connection(h.len, dst);
            return Err(Fault::Stream(h.stream, Reason::STREAM_CLOSED));
        }
        s.recv_window -= flow_len;
        if s.recv_window < 0 {
            self.release_connection(h.len, dst);
            return Err(Fault::Stream(h.stream, Reason::FLOW_CONTROL_ERROR));
        }
        s.received += payload.len() as u64;
        let length_broken = s
            .content_length
            .is_some_and(|n| s.received > n || (end_stream && s.received != n));
        if length_broken {
            self.release_connection(h.len, dst);
            return Err(Fault::Stream(h.stream, Reason::PROTOCOL_ERROR));
        }
        if payload.is_empty() && !end_stream {
            self.spend_control()?;
        }
        if pad > 0 {
            // The application never sees padding: its window comes back at once.
            self.release(h.stream, pad, dst);
        }
        if end_stream {
            self.end_remote(i);
        }
        if payload.is_empty() && !end_stream {
            return Ok(None);
        }
        Ok(Some(Event::Data {
            stream: h.stream,
            data: payload,
            end_stream,
        }))
    }

    fn on_headers(&mut self, h: FrameHeader, payload: &[u8]) -> Handled {
        let id = h.stream;
        if id == 0 {
            return Err(conn_err(Reason::PROTOCOL_ERROR, "HEADERS on stream 0"));
        }
        let mut fragment = strip_padding_slice(h, payload)?;
        let mut self_dependent = false;
        if h.has(flags::PRIORITY) {
            let Some((priority, rest)) = fragment.split_first_chunk::<5>() else {
                return Err(conn_err(
                    Reason::FRAME_SIZE_ERROR,
                    "HEADERS priority truncated",
                ));
            };
            self_dependent =
                u32::from_be_bytes([priority[0], priority[1], priority[2], priority[3]])
                    & frame::MAX_WINDOW
                    == id;
            fragment = rest;
        }
        let usage = match self.find(id) {
            Some(i) if self.streams[i].state == StreamState::HalfClosedRemote => {
                BlockUse::Discard(Some(Reason::STREAM_CLOSED))
            }
            Some(_) if !h.has(flags::END_STREAM) => BlockUse::Discard(Some(Reason::PROTOCOL_ERROR)),
            // §8.5: a CONNECT stream takes DATA and stream management frames only.
            Some(i) if self.streams[i].tunnel => BlockUse::Discard(Some(Reason::PROTOCOL_ERROR)),
            Some(_) => BlockUse::Trailers,
            None if id % 2 == 0 => {
                return Err(conn_err(
                    Reason::PROTOCOL_ERROR,
                    "even stream id from a client",
                ));
            }
            None if id <= self.last_stream => {
                if !self.ignores(id) {
                    return Err(conn_err(
                        Reason::STREAM_CLOSED,
                        "HEADERS on a closed stream",
                    ));
                }
                BlockUse::Discard(None)
            }
            None => {
                self.last_stream = id;
                if self.goaway.is_some_and(|last| id > last) {
                    BlockUse::Discard(None)
                } else if self.streams.len() >= self.settings.max_concurrent_streams as usize {
                    BlockUse::Discard(Some(Reason::REFUSED_STREAM))
                } else {
                    self.refused_in_a_row = 0;
                    BlockUse::Request
                }
            }
        };
        let usage = match usage {
            BlockUse::Request | BlockUse::Trailers if self_dependent => {
                BlockUse::Discard(Some(Reason::PROTOCOL_ERROR))
            }
            other => other,
        };
        let block = Block {
            stream: id,
            end_stream: h.has(flags::END_STREAM),
            usage,
            continuations: 0,
        };
        if h.has(flags::END_HEADERS) {
            return self.finish_block(&block, fragment);
        }
        self.check_block_size(fragment.len())?;
        self.fragments.clear();
        self.fragments.extend_from_slice(fragment);
        self.block = Some(block);
        Ok(None)
    }

    fn on_continuation(&mut self, h: FrameHeader, payload: &[u8]) -> Handled {
        let Some(block) = &mut self.block else {
            return Err(conn_err(
                Reason::PROTOCOL_ERROR,
                "CONTINUATION without HEADERS",
            ));
        };
        block.continuations += 1;
        if block.continuations > MAX_CONTINUATIONS {
            return Err(conn_err(
                Reason::ENHANCE_YOUR_CALM,
                "too many CONTINUATION frames",
            ));
        }
        if payload.is_empty() && !h.has(flags::END_HEADERS) {
            self.spend_control()?;
        }
        self.check_block_size(self.fragments.len() + payload.len())?;
        self.fragments.extend_from_slice(payload);
        if !h.has(flags::END_HEADERS) {
            return Ok(None);
        }
        let block = self.block.take().expect("checked above");
        let fragments = std::mem::take(&mut self.fragments);
        let handled = self.finish_block(&block, &fragments);
        self.fragments = fragments;
        handled
    }

    /// A header block is bounded before decoding: at twice the header list limit (HPACK's
    /// Huffman code can make a field longer than its text, never twice as long).
    fn check_block_size(&self, len: usize) -> Result<(), Fault> {
        if len > 2 * self.settings.max_header_list_size as usize {
            return Err(conn_err(
                Reason::ENHANCE_YOUR_CALM,
                "header block too large",
            ));
        }
        Ok(())
    }

    /// Decodes a complete header block and acts on it.
    fn finish_block(&mut self, block: &Block, encoded: &[u8]) -> Handled {
        let trailers = block.usage == BlockUse::Trailers;
        let verdict = self.decode(encoded, trailers)?;
        let id = block.stream;
        match block.usage {
            // Decoded for nothing (no stream is served for it): a flood of these costs work.
            BlockUse::Discard(None) => {
                self.spend_control()?;
                Ok(None)
            }
            BlockUse::Discard(Some(Reason::REFUSED_STREAM)) => {
                self.refuse()?;
                Err(Fault::Stream(id, Reason::REFUSED_STREAM))
            }
            BlockUse::Discard(Some(reason)) => Err(Fault::Stream(id, reason)),
            _ if verdict.is_err() => Err(Fault::Stream(id, Reason::PROTOCOL_ERROR)),
            BlockUse::Trailers => {
                let i = self.find(id).expect("trailers are for an open stream");
                let s = &self.streams[i];
                if s.content_length.is_some_and(|n| s.received != n) {
                    return Err(Fault::Stream(id, Reason::PROTOCOL_ERROR));
                }
                self.end_remote(i);
                Ok(Some(Event::Trailers { stream: id }))
            }
            BlockUse::Request => {
                if block.end_stream && self.head.content_length.is_some_and(|n| n != 0) {
                    return Err(Fault::Stream(id, Reason::PROTOCOL_ERROR));
                }
                self.streams.push(Stream {
                    id,
                    state: if block.end_stream {
                        StreamState::HalfClosedRemote
                    } else {
                        StreamState::Open
                    },
                    send_window: i64::from(self.peer_initial_window),
                    recv_window: i64::from(self.recv_initial_window),
                    content_length: self.head.content_length,
                    received: 0,
                    tunnel: self.head.get(self.head.method) == b"CONNECT",
                });
                Ok(Some(Event::Request {
                    stream: id,
                    end_stream: block.end_stream,
                }))
            }
        }
    }

    fn on_priority(&mut self, h: FrameHeader, payload: &[u8]) -> Handled {
        if h.stream == 0 {
            return Err(conn_err(Reason::PROTOCOL_ERROR, "PRIORITY on stream 0"));
        }
        self.spend_control()?;
        let Ok(p) = <[u8; 5]>::try_from(payload) else {
            return Err(Fault::Stream(h.stream, Reason::FRAME_SIZE_ERROR));
        };
        if u32::from_be_bytes([p[0], p[1], p[2], p[3]]) & frame::MAX_WINDOW == h.stream {
            return Err(Fault::Stream(h.stream, Reason::PROTOCOL_ERROR));
        }
        Ok(None)
    }

    fn on_rst_stream(&mut self, h: FrameHeader, payload: &[u8]) -> Handled {
        if h.stream == 0 {
            return Err(conn_err(Reason::PROTOCOL_ERROR, "RST_STREAM on stream 0"));
        }
        let Ok(code) = <[u8; 4]>::try_from(payload) else {
            return Err(conn_err(Reason::FRAME_SIZE_ERROR, "RST_STREAM not 4 bytes"));
        };
        self.spend_control()?;
        let Some(i) = self.find(h.stream) else {
            if h.stream > self.last_stream {
                return Err(conn_err(
                    Reason::PROTOCOL_ERROR,
                    "RST_STREAM on an idle stream",
                ));
            }
            return Ok(None);
        };
        // A stream the server was still working on: rapid reset counts these.
        if !self.reset_budget.spend() {
            return Err(conn_err(
                Reason::ENHANCE_YOUR_CALM,
                "too many streams reset",
            ));
        }
        self.streams.swap_remove(i);
        Ok(Some(Event::Reset {
            stream: h.stream,
            reason: Reason(u32::from_be_bytes(code)),
        }))
    }

    fn on_settings(&mut self, h: FrameHeader, payload: &[u8], dst: &mut Vec<u8>) -> Handled {
        if h.stream != 0 {
            return Err(conn_err(Reason::PROTOCOL_ERROR, "SETTINGS on a stream"));
        }
        if h.has(flags::ACK) {
            if !payload.is_empty() {
                return Err(conn_err(
                    Reason::FRAME_SIZE_ERROR,
                    "SETTINGS ACK with a payload",
                ));
            }
            // The server sent one SETTINGS: more ACKs are a flood (each walks the streams).
            self.spend_control()?;
            return Ok(self.settings_acknowledged());
        }
        if payload.len() % 6 != 0 {
            return Err(conn_err(
                Reason::FRAME_SIZE_ERROR,
                "SETTINGS not a multiple of 6",
            ));
        }
        self.spend_control()?;
        self.state = State::Open;
        let mut window_changed = false;
        for s in payload.chunks_exact(6) {
            let id = u16::from_be_bytes([s[0], s[1]]);
            let value = u32::from_be_bytes([s[2], s[3], s[4], s[5]]);
            match id {
                setting::HEADER_TABLE_SIZE => self.encoder.set_max_table_size(value as usize),
                setting::ENABLE_PUSH if value > 1 => {
                    return Err(conn_err(Reason::PROTOCOL_ERROR, "ENABLE_PUSH not 0 or 1"));
                }
                // RFC 8441 §3: "MUST be 0 or 1"; it names no error, so it is read as
                // ENABLE_PUSH's rule (RFC 9113 §6.5.2). From a client it means nothing else.
                setting::ENABLE_CONNECT_PROTOCOL if value > 1 => {
                    return Err(conn_err(
                        Reason::PROTOCOL_ERROR,
                        "ENABLE_CONNECT_PROTOCOL not 0 or 1",
                    ));
                }
                setting::INITIAL_WINDOW_SIZE => {
                    self.set_peer_initial_window(value)?;
                    window_changed = true;
                }
                setting::MAX_FRAME_SIZE => {
                    if !(frame::DEFAULT_MAX_FRAME_SIZE..=frame::MAX_MAX_FRAME_SIZE).contains(&value)
                    {
                        return Err(conn_err(
                            Reason::PROTOCOL_ERROR,
                            "MAX_FRAME_SIZE out of range",
                        ));
                    }
                    self.peer_max_frame_size = value;
                }
                // The rest only limit what the server would initiate (it pushes nothing) or
                // are advisory; unknown settings are ignored (§6.5.2).
                _ => {}
            }
        }
        frame::write_settings_ack(dst);
        Ok(window_changed.then_some(Event::WindowOpened { stream: 0 }))
    }

    fn on_ping(&mut self, h: FrameHeader, payload: &[u8], dst: &mut Vec<u8>) -> Handled {
        if h.stream != 0 {
            return Err(conn_err(Reason::PROTOCOL_ERROR, "PING on a stream"));
        }
        let Ok(data) = <[u8; 8]>::try_from(payload) else {
            return Err(conn_err(Reason::FRAME_SIZE_ERROR, "PING not 8 bytes"));
        };
        // An ACK answers no PING (the server sends none) and costs work all the same.
        self.spend_control()?;
        if !h.has(flags::ACK) {
            frame::write_ping_ack(dst, data);
        }
        Ok(None)
    }
}

/// Removes the padding of a padded DATA frame; returns how many bytes went (length byte
/// included).
fn strip_padding(h: FrameHeader, payload: &mut Bytes) -> Result<usize, Fault> {
    if !h.has(flags::PADDED) {
        return Ok(0);
    }
    let kept = strip_padding_slice(h, payload)?.len();
    let removed = payload.len() - kept;
    payload.advance(1);
    payload.truncate(kept);
    Ok(removed)
}

/// The payload of a DATA or HEADERS frame without its padding.
fn strip_padding_slice(h: FrameHeader, payload: &[u8]) -> Result<&[u8], Fault> {
    if !h.has(flags::PADDED) {
        return Ok(payload);
    }
    let Some((&pad, rest)) = payload.split_first() else {
        return Err(conn_err(
            Reason::FRAME_SIZE_ERROR,
            "padded frame without pad length",
        ));
    };
    match rest.len().checked_sub(usize::from(pad)) {
        Some(kept) => Ok(&rest[..kept]),
        None => Err(conn_err(
            Reason::PROTOCOL_ERROR,
            "padding longer than the payload",
        )),
    }
}

fn on_goaway(h: FrameHeader, payload: &[u8]) -> Handled {
    if h.stream != 0 {
        return Err(conn_err(Reason::PROTOCOL_ERROR, "GOAWAY on a stream"));
    }
    let Some((last, rest)) = payload.split_first_chunk::<4>() else {
        return Err(conn_err(Reason::FRAME_SIZE_ERROR, "GOAWAY too short"));
    };
    let Some(code) = rest.first_chunk::<4>() else {
        return Err(conn_err(Reason::FRAME_SIZE_ERROR, "GOAWAY too short"));
    };
    Ok(Some(Event::GoAway {
        last_stream: u32::from_be_bytes(*last) & frame::MAX_WINDOW,
        reason: Reason(u32::from_be_bytes(*code)),
    }))
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;

    #[test]
    fn content_length_must_match_the_data() {
        let mut conn = open(Settings::default());
        let mut block = POST.to_vec();
        block.extend([0x5c, 1, b'3']); // content-length: 3 (static name 28)
        let mut bytes = headers(1, 0, &block);
        bytes.extend(data(1, flags::END_STREAM, b"ab"));
        let (events, out, err) = run(&mut conn, &bytes);
        assert_eq!(err, None);
        assert_eq!(
            events[1],
            Event::Reset {
                stream: 1,
                reason: Reason::PROTOCOL_ERROR
            }
        );
        assert_eq!(rst_code(&out, 1), Some(Reason::PROTOCOL_ERROR));
        assert_eq!(conn.open_streams(), 0);
    }

    #[test]
    fn trailers_end_the_body() {
        let mut conn = open(Settings::default());
        let mut bytes = headers(1, 0, &POST);
        bytes.extend(data(1, 0, b"ab"));
        bytes.extend(headers(1, flags::END_STREAM, &[0x40, 1, b'x', 1, b'y']));
        let (events, _, err) = run(&mut conn, &bytes);
        assert_eq!(err, None);
        assert_eq!(events[2], Event::Trailers { stream: 1 });
        assert_eq!(conn.head().get(conn.head().fields[0].name), b"x");
        // Trailers without END_STREAM are malformed.
        let mut bytes = headers(3, 0, &POST);
        bytes.extend(headers(3, 0, &[0x40, 1, b'x', 1, b'y']));
        let (_, out, _) = run(&mut conn, &bytes);
        assert_eq!(rst_code(&out, 3), Some(Reason::PROTOCOL_ERROR));
    }

    #[test]
    fn connection_errors_send_goaway() {
        let cases: Vec<(Vec<u8>, Reason)> = vec![
            (data(1, 0, b"x"), Reason::PROTOCOL_ERROR), // idle stream
            (headers(2, 0, &GET), Reason::PROTOCOL_ERROR), // even id
            (frame(0x9, 0, 1, &[]), Reason::PROTOCOL_ERROR), // lone CONTINUATION
            (frame(0x6, 0, 0, &[0; 7]), Reason::FRAME_SIZE_ERROR),
            (frame(0x4, 0, 0, &[0; 5]), Reason::FRAME_SIZE_ERROR),
            (
                frame(0x4, 0, 0, &[0, 2, 0, 0, 0, 2]),
                Reason::PROTOCOL_ERROR,
            ),
            (
                frame(0x4, 0, 0, &[0, 4, 0x80, 0, 0, 0]),
                Reason::FLOW_CONTROL_ERROR,
            ),
            (frame(0x8, 0, 0, &[0; 4]), Reason::PROTOCOL_ERROR),
            (
                frame(0x8, 0, 0, &0x7fff_ffffu32.to_be_bytes()),
                Reason::FLOW_CONTROL_ERROR,
            ),
            (frame(0x5, 0, 1, &[0; 4]), Reason::PROTOCOL_ERROR),
            (frame(0x3, 0, 1, &[0; 4]), Reason::PROTOCOL_ERROR), // RST on idle
            (
                frame(0x1, flags::END_HEADERS, 1, &[0xff; 3]),
                Reason::COMPRESSION_ERROR,
            ),
            (data(0, 0, &[0; 20_000]), Reason::FRAME_SIZE_ERROR),
        ];
        for (i, (bytes, reason)) in cases.into_iter().enumerate() {
            let mut conn = open(Settings::default());
            let (_, out, err) = run(&mut conn, &bytes);
            assert_eq!(err.map(|e| e.reason()), Some(reason), "case {i}");
            assert_eq!(goaway_code(&out), Some(reason), "case {i}");
            assert_eq!(
                conn.poll(&mut BytesMut::from(&bytes[..]), &mut Vec::new()),
                Ok(None)
            );
        }
    }

    #[test]
    fn header_block_must_not_be_interrupted() {
        let mut conn = open(Settings::default());
        let mut bytes = frame(0x1, flags::END_STREAM, 1, &GET[..3]);
        bytes.extend(frame(0x6, 0, 0, &[0; 8]));
        let (_, out, _) = run(&mut conn, &bytes);
        assert_eq!(goaway_code(&out), Some(Reason::PROTOCOL_ERROR));
    }

    #[test]
    fn concurrent_stream_limit_refuses_streams() {
        let mut conn = open(Settings {
            max_concurrent_streams: 1,
            ..Settings::default()
        });
        let mut bytes = headers(1, 0, &POST);
        bytes.extend(headers(3, 0, &POST));
        let (events, out, err) = run(&mut conn, &bytes);
        assert_eq!((events.len(), err), (1, None));
        assert_eq!(rst_code(&out, 3), Some(Reason::REFUSED_STREAM));
    }
}
