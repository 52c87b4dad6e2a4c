//! The send side: response heads and trailers as HPACK-encoded header blocks (split into
//! CONTINUATION frames when large), and body data as the windows allow.

use super::stream::StreamState;
use super::{Connection, State};
use crate::h2::frame::{self, flags, Kind};
use crate::h2::hpack::Indexing;

impl Connection {
    /// Starts a header block on `stream`: a response head (call [`HeaderBlock::status`]
    /// first) or trailers. `None` if the stream is gone or the server already ended its side:
    /// a block, once encoded, must be sent (the client's HPACK table must see it).
    pub fn headers<'a>(&'a mut self, stream: u32, dst: &'a mut Vec<u8>) -> Option<HeaderBlock<'a>> {
        let i = self.find(stream)?;
        if self.streams[i].state == StreamState::HalfClosedLocal || self.state == State::Closed {
            return None;
        }
        let start = dst.len();
        frame::write_header(dst, 0, Kind::Headers, 0, stream);
        self.encoder.begin(dst);
        Some(HeaderBlock {
            conn: self,
            dst,
            start,
            stream,
        })
    }

    /// Sends as much of `data` as the windows allow, in frames of the client's largest size,
    /// and returns how much that was. `end_stream` ends the stream with the last byte, once
    /// all of `data` fits (an empty `data` with `end_stream` always does).
    pub fn send_data(
        &mut self,
        stream: u32,
        data: &[u8],
        end_stream: bool,
        dst: &mut Vec<u8>,
    ) -> usize {
        let Some(i) = self.find(stream) else { return 0 };
        if self.streams[i].state == StreamState::HalfClosedLocal || self.state == State::Closed {
            return 0;
        }
        let n = data.len().min(self.send_capacity(stream));
        let end = end_stream && n == data.len();
        let max = self.peer_max_frame_size as usize;
        let mut chunks = data[..n].chunks(max).peekable();
        if n == 0 && end {
            frame::write_data(dst, stream, &[], true);
        }
        while let Some(chunk) = chunks.next() {
            frame::write_data(dst, stream, chunk, end && chunks.peek().is_none());
            self.earn_window_updates(chunk.len());
        }
        self.streams[i].send_window -= n as i64;
        self.send_window -= n as i64;
        if end {
            self.end_local(i);
        }
        n
    }
}

/// A header block being written (see [`Connection::headers`]): fields go straight into the
/// output buffer; [`HeaderBlock::finish`] fills in the frame header.
#[derive(Debug)]
pub struct HeaderBlock<'a> {
    conn: &'a mut Connection,
    dst: &'a mut Vec<u8>,
    /// Where the HEADERS frame header is in `dst`.
    start: usize,
    stream: u32,
}

impl HeaderBlock<'_> {
    /// `:status`: the first field of a response head.
    pub fn status(&mut self, status: u16) {
        self.conn.encoder.status(status, self.dst);
    }

    /// One field; `name` must be lowercase. Whether the client remembers it follows
    /// [`Indexing::for_name`].
    pub fn field(&mut self, name: &[u8], value: &[u8]) {
        let indexing = Indexing::for_name(name);
        self.conn.encoder.field(name, value, indexing, self.dst);
    }

    /// Completes the block (split into CONTINUATION frames if it is larger than the client's
    /// frame size), ending the stream with it if `end_stream`.
    pub fn finish(self, end_stream: bool) {
        let conn = self.conn;
        let dst = self.dst;
        let i = conn
            .find(self.stream)
            .expect("checked by Connection::headers");
        let flags = if end_stream { flags::END_STREAM } else { 0 };
        let block_len = dst.len() - self.start - frame::HEADER_LEN;
        let max = conn.peer_max_frame_size as usize;
        if block_len <= max {
            let len = (block_len as u32).to_be_bytes();
            dst[self.start..self.start + 3].copy_from_slice(&len[1..]);
            dst[self.start + 4] = flags | flags::END_HEADERS;
        } else {
            let block = dst.split_off(self.start + frame::HEADER_LEN);
            dst.truncate(self.start);
            let mut chunks = block.chunks(max).peekable();
            let mut kind = Kind::Headers;
            let mut first_flags = flags;
            while let Some(chunk) = chunks.next() {
                let last = if chunks.peek().is_none() {
                    flags::END_HEADERS
                } else {
                    0
                };
                frame::write_header(dst, chunk.len(), kind, first_flags | last, self.stream);
                dst.extend_from_slice(chunk);
                kind = Kind::Continuation;
                first_flags = 0;
            }
        }
        if end_stream {
            conn.end_local(i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;

    #[test]
    fn large_header_blocks_go_out_in_continuations() {
        let mut conn = open(Settings::default());
        run(&mut conn, &headers(1, flags::END_STREAM, &GET));
        let mut out = Vec::new();
        // `~` takes 13 bits in HPACK's Huffman code: the block stays over 32 KiB.
        let long = vec![b'~'; 40_000];
        let mut block = conn.headers(1, &mut out).unwrap();
        block.status(200);
        block.field(b"x-long", &long);
        block.finish(true);
        let f = frames(&out);
        let kinds: Vec<_> = f.iter().map(|(h, _)| (h.kind, h.flags)).collect();
        assert_eq!(
            kinds,
            [
                (Kind::Headers, flags::END_STREAM),
                (Kind::Continuation, 0),
                (Kind::Continuation, flags::END_HEADERS)
            ]
        );
        let block: Vec<u8> = f.iter().flat_map(|(_, p)| p.clone()).collect();
        assert_eq!(decode_block(&block)[1].1.len(), 40_000);
    }
}
