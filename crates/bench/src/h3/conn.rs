//! The HTTP/3 client side of one connection, over a `quinn_proto::Connection` (QUIC's state
//! machine, itself sans-I/O: this module never sees a socket). It opens request streams, writes
//! the requests' bytes, reads the server's streams with `volt_proto::h3`, and reports each
//! request that ends as an [`Event`].
//!
//! What it does about the protocol (RFC 9114):
//!
//! - It opens its control stream with SETTINGS first (all defaults: a QPACK table capacity of
//!   0, so the server may not use QPACK's dynamic table, and we need no QPACK streams of our
//!   own). Requests go out at once, without waiting for the server's SETTINGS (§6.2.1 allows
//!   it: until then the defaults hold, and static-only QPACK fits them).
//! - The server's unidirectional streams: one control stream (SETTINGS first, then GOAWAY;
//!   MAX_PUSH_ID or a request frame there is an error), at most one QPACK encoder and one
//!   decoder stream (checked to keep to a table of 0), no push streams (we never send
//!   MAX_PUSH_ID, so any push ID is out of bounds: H3_ID_ERROR); other types are stopped with
//!   H3_STREAM_CREATION_ERROR. Closing a critical stream is H3_CLOSED_CRITICAL_STREAM.
//! - Each response: interim (1xx) heads skipped, then the final head (`:status` through
//!   QPACK), DATA, maybe trailers, the FIN. A frame out of that order is
//!   H3_FRAME_UNEXPECTED (connection); a head without a valid `:status`, or a stream that ends
//!   without one, is a malformed response (H3_MESSAGE_ERROR, that stream only).
//! - A stream the server resets is [`Event::Reset`]; one reset with H3_REQUEST_REJECTED, or
//!   at or above a GOAWAY's stream ID, was not processed ([`Event::Refused`]).
//! - A connection error is a [`ProtocolError`]: the caller closes the connection with its code.

use std::collections::HashMap;
use std::time::Instant;

use bytes::BytesMut;
use quinn_proto::{ConnectionError, Dir, ReadError, StreamEvent, StreamId, VarInt};
use volt_proto::h3::frame::{write_settings, DEFAULT_MAX_FRAME_SIZE};
use volt_proto::h3::qpack::{Decoder, DecoderStream, EncoderStream};
use volt_proto::h3::{
    Code, ControlEvent, ControlStream, Error as H3Error, Frame, FrameDecoder, PeerStreams,
    Settings, StreamType,
};

use super::request::H3Request;
use crate::h2::status_code;

/// A protocol error of the server's: the connection is closed with it.
pub(crate) type ProtocolError = H3Error;

/// A request in flight: what it asked, when, and how far its response came.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Request {
    /// Which request of the round robin it is.
    pub cursor: usize,
    /// Latency counts from here: the scheduled send in rate mode, else the send.
    pub from: Instant,
    /// The actual send.
    pub started: Instant,
    /// Rate mode: the number of its scheduled send.
    pub send: u64,
    /// The final status once its head came (0 before: a 1xx head leaves it 0).
    pub status: u16,
}

/// A request that ended.
#[derive(Debug)]
pub(crate) enum Event {
    /// Its response arrived whole; `status` is its final status.
    Response(Request),
    /// The server reset its stream.
    Reset(Request),
    /// The server did not process it (H3_REQUEST_REJECTED, or past a GOAWAY).
    Refused(Request),
    /// Its response was malformed; the stream was abandoned, the connection goes on.
    Malformed(Request),
}

/// Where a response stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Part {
    /// Before the final head (interim heads may come).
    Head,
    /// After it: DATA, or trailers.
    Body,
    /// After the trailers: only the FIN.
    Done,
}

/// A request stream: the request, the bytes of it still to write, the response's frames.
#[derive(Debug)]
struct Stream {
    request: Request,
    /// Bytes of the request handed to QUIC so far.
    written: usize,
    part: Part,
    frames: FrameDecoder,
    buf: BytesMut,
}

/// What one of the server's unidirectional streams is.
#[derive(Debug)]
enum Uni {
    /// Its type has not arrived yet.
    Untyped,
    Control(ControlStream),
    QpackEncoder(EncoderStream),
    QpackDecoder(DecoderStream),
    /// An unknown type, stopped: what still arrives is dropped.
    Ignored,
}

/// One connection's HTTP/3 state. Made once per connection slot and [`reset`](Self::reset)
/// for each new connection, so its maps and buffers are reused.
#[derive(Debug)]
pub(crate) struct H3Conn {
    /// The requests in flight by their stream's index (the ID's upper bits: ID = 4 × index
    /// for a client's bidirectional stream).
    streams: HashMap<u64, Stream>,
    /// The lowest index in flight: the oldest request, since streams open in send order.
    oldest: Option<u64>,
    /// One past the highest index opened.
    next: u64,
    /// Response buffers of streams that ended, for the next ones.
    spare: Vec<BytesMut>,
    uni: Vec<(StreamId, StreamType, Uni, BytesMut)>,
    peer: PeerStreams,
    qpack: Decoder,
    /// `--streams`.
    max_streams: usize,
    /// QUIC's MAX_STREAMS stopped the last open; cleared when the server allows more.
    blocked: bool,
    /// The stream ID of the server's GOAWAY: no stream at or above it is processed.
    goaway: Option<u64>,
    /// A request stream's response head or body is under way.
    pub receiving: usize,
}

/// A response head's `:status`, as QPACK decoding found it.
enum Status {
    None,
    Code(u16),
    Malformed,
}

impl H3Conn {
    pub(crate) fn new(max_streams: usize) -> H3Conn {
        H3Conn {
            streams: HashMap::with_capacity(max_streams.min(1024)),
            oldest: None,
            next: 0,
            spare: Vec::new(),
            uni: Vec::with_capacity(4),
            peer: PeerStreams::new(),
            qpack: Decoder::new(),
            max_streams,
            blocked: false,
            goaway: None,
            receiving: 0,
        }
    }

    /// Starts a new connection: forgets the last one (keeping its buffers) and opens our
    /// control stream with SETTINGS.
    pub(crate) fn reset(&mut self, quic: &mut quinn_proto::Connection) -> Result<(), H3Error> {
        for (_, s) in self.streams.drain() {
            self.spare.push(s.buf);
        }
        self.oldest = None;
        self.next = 0;
        self.uni.clear();
        self.peer = PeerStreams::new();
        self.blocked = false;
        self.goaway = None;
        self.receiving = 0;
        // RFC 9114 §6.2: a server must let us open our control stream.
        let id = quic.streams().open(Dir::Uni).ok_or(H3Error::connection(
            Code::H3_STREAM_CREATION_ERROR,
            "the server allows no unidirectional stream for our control stream",
        ))?;
        let mut out = Vec::with_capacity(8);
        StreamType::Control.encode(&mut out);
        write_settings(&Settings::default(), &mut out);
        // A new stream takes a few bytes whatever the windows: the server's initial
        // MAX_STREAM_DATA for it is at least that in any sane configuration, and a control
        // stream it starves is its own loss.
        let _ = quic.send_stream(id).write(&out);
        Ok(())
    }

    /// Requests in flight.
    pub(crate) fn open_streams(&self) -> usize {
        self.streams.len()
    }

    /// The oldest request in flight (the lowest stream ID: IDs are given in send order).
    pub(crate) fn oldest(&self) -> Option<&Request> {
        self.streams.get(&self.oldest?).map(|s| &s.request)
    }

    /// Removes the stream at `index`, keeping `oldest` and `receiving` right; its buffer goes
    /// back to the spares.
    fn remove(&mut self, index: u64) -> Option<Request> {
        let s = self.streams.remove(&index)?;
        if s.part != Part::Head {
            self.receiving -= 1;
        }
        self.spare.push(s.buf);
        if self.oldest == Some(index) {
            // The next oldest has the next higher index still open: each index is walked
            // over once in the connection's life, so this is O(1) amortized.
            self.oldest = (index + 1..self.next).find(|i| self.streams.contains_key(i));
        }
        Some(s.request)
    }

    /// How many more requests may be sent now: none after a GOAWAY or while QUIC's stream
    /// limit holds them back.
    pub(crate) fn free(&self) -> usize {
        if self.goaway.is_some() || self.blocked {
            return 0;
        }
        self.max_streams.saturating_sub(self.streams.len())
    }

    /// No request will be sent here any more: the server sent GOAWAY.
    pub(crate) fn is_ending(&self) -> bool {
        self.goaway.is_some()
    }

    /// Sends `request` on a new stream; gives it back when QUIC's stream limit is reached.
    pub(crate) fn open(
        &mut self,
        quic: &mut quinn_proto::Connection,
        bytes: &H3Request,
        request: Request,
    ) -> Result<(), Request> {
        let Some(id) = quic.streams().open(Dir::Bi) else {
            self.blocked = true;
            return Err(request);
        };
        let mut stream = Stream {
            request,
            written: 0,
            part: Part::Head,
            frames: FrameDecoder::new(DEFAULT_MAX_FRAME_SIZE),
            buf: self.spare.pop().unwrap_or_default(),
        };
        stream.buf.clear();
        write_request(quic, id, &mut stream, bytes);
        let index = id.index();
        self.streams.insert(index, stream);
        self.next = index + 1;
        self.oldest.get_or_insert(index);
        Ok(())
    }

    /// Every request in flight, taken out (the connection failed).
    pub(crate) fn take_all(&mut self) -> impl Iterator<Item = Request> + '_ {
        let spare = &mut self.spare;
        self.oldest = None;
        self.receiving = 0;
        self.streams.drain().map(move |(_, s)| {
            spare.push(s.buf);
            s.request
        })
    }

    /// Acts on QUIC's events for the connection: streams opened, readable, writable, more
    /// streams allowed. `Ok(Some(why))`: the connection is lost.
    pub(crate) fn handle(
        &mut self,
        quic: &mut quinn_proto::Connection,
        requests: &[H3Request],
        event: &mut impl FnMut(Event),
    ) -> Result<Option<ConnectionError>, ProtocolError> {
        while let Some(e) = quic.poll() {
            match e {
                quinn_proto::Event::ConnectionLost { reason } => return Ok(Some(reason)),
                quinn_proto::Event::Stream(StreamEvent::Opened { dir: Dir::Uni }) => {
                    while let Some(id) = quic.streams().accept(Dir::Uni) {
                        let ty = StreamType::Unknown(u64::MAX);
                        self.uni.push((id, ty, Uni::Untyped, BytesMut::new()));
                        self.read_uni(quic, id)?;
                    }
                }
                quinn_proto::Event::Stream(StreamEvent::Readable { id }) => {
                    if id.dir() == Dir::Bi {
                        self.read_response(quic, id, event)?;
                    } else {
                        self.read_uni(quic, id)?;
                    }
                }
                quinn_proto::Event::Stream(StreamEvent::Writable { id }) => {
                    if let Some(s) = self
                        .streams
                        .get_mut(&id.index())
                        .filter(|_| id.dir() == Dir::Bi)
                    {
                        write_request(quic, id, s, &requests[s.request.cursor]);
                    }
                }
                quinn_proto::Event::Stream(StreamEvent::Available { dir: Dir::Bi }) => {
                    self.blocked = false;
                }
                quinn_proto::Event::Stream(StreamEvent::Stopped { id, .. }) => {
                    // The server wants no more of the request (it answered early): its
                    // response still comes. Our control stream is never stopped lawfully.
                    match self
                        .streams
                        .get_mut(&id.index())
                        .filter(|_| id.dir() == Dir::Bi)
                    {
                        Some(s) => s.written = usize::MAX,
                        None if id.dir() == Dir::Uni => {
                            return Err(H3Error::connection(
                                Code::H3_CLOSED_CRITICAL_STREAM,
                                "the server stopped our control stream",
                            ))
                        }
                        None => {}
                    }
                }
                _ => {}
            }
        }
        Ok(None)
    }

    /// Reads what arrived on request stream `id` and takes its frames.
    fn read_response(
        &mut self,
        quic: &mut quinn_proto::Connection,
        id: StreamId,
        event: &mut impl FnMut(Event),
    ) -> Result<(), ProtocolError> {
        let index = id.index();
        let Some(s) = self.streams.get_mut(&index) else {
            return Ok(());
        };
        let end = read_into(quic, id, &mut s.buf);
        let taken = take_frames(s, &mut self.qpack, &mut self.receiving);
        let outcome = match (taken, end) {
            (Err(e), _) if e.is_connection_error() => return Err(e),
            (Err(e), _) => Err(e),
            (Ok(()), End::Open) => return Ok(()),
            (Ok(()), End::Reset(code)) => Ok(Some(code)),
            (Ok(()), End::Fin) => {
                s.frames.finish(&s.buf)?;
                match s.part {
                    Part::Head => Err(H3Error::stream(
                        Code::H3_MESSAGE_ERROR,
                        "a response stream ends without a final head",
                    )),
                    Part::Body | Part::Done => Ok(None),
                }
            }
        };
        let request = self.remove(index).expect("found above");
        match outcome {
            Ok(None) => event(Event::Response(request)),
            Ok(Some(code)) if code == Code::H3_REQUEST_REJECTED.0 => event(Event::Refused(request)),
            Ok(Some(_)) => event(Event::Reset(request)),
            Err(e) => {
                // Malformed: abandon the stream both ways (§4.1.2).
                let code = VarInt::from_u64(e.code().0).unwrap_or(VarInt::MAX);
                let _ = quic.recv_stream(id).stop(code);
                let _ = quic.send_stream(id).reset(code);
                event(Event::Malformed(request));
            }
        }
        Ok(())
    }

    /// Reads what arrived on the server's unidirectional stream `id`.
    fn read_uni(
        &mut self,
        quic: &mut quinn_proto::Connection,
        id: StreamId,
    ) -> Result<(), ProtocolError> {
        let Some(at) = self.uni.iter().position(|u| u.0 == id) else {
            return Ok(());
        };
        let (_, ty, uni, buf) = &mut self.uni[at];
        let end = read_into(quic, id, buf);
        if let Uni::Untyped = uni {
            if let Some(t) = StreamType::decode(buf) {
                *ty = t;
                *uni = match t {
                    // §4.6: a push ID above our MAX_PUSH_ID (we sent none) is H3_ID_ERROR.
                    StreamType::Push => {
                        return Err(H3Error::connection(
                            Code::H3_ID_ERROR,
                            "a push stream, though we allowed no push",
                        ))
                    }
                    StreamType::Unknown(_) => {
                        let code = VarInt::from_u64(Code::H3_STREAM_CREATION_ERROR.0)
                            .expect("a small code");
                        let _ = quic.recv_stream(id).stop(code);
                        Uni::Ignored
                    }
                    StreamType::Control => Uni::Control(ControlStream::new(DEFAULT_MAX_FRAME_SIZE)),
                    StreamType::QpackEncoder => Uni::QpackEncoder(EncoderStream::new()),
                    StreamType::QpackDecoder => Uni::QpackDecoder(DecoderStream::new()),
                };
                self.peer.open(t)?;
            }
        }
        match uni {
            Uni::Untyped | Uni::Ignored => buf.clear(),
            Uni::QpackEncoder(s) => s.decode(buf)?,
            Uni::QpackDecoder(s) => s.decode(buf)?,
            Uni::Control(control) => {
                while let Some(e) = control.decode(buf)? {
                    match e {
                        ControlEvent::Goaway(last) => {
                            // §5.2: a client-initiated bidirectional stream ID, never rising.
                            if last % 4 != 0 || self.goaway.is_some_and(|g| last > g) {
                                return Err(H3Error::connection(
                                    Code::H3_ID_ERROR,
                                    "a GOAWAY whose ID is no request stream's, or rose",
                                ));
                            }
                            self.goaway = Some(last);
                        }
                        ControlEvent::MaxPushId(_) => {
                            return Err(H3Error::connection(
                                Code::H3_FRAME_UNEXPECTED,
                                "MAX_PUSH_ID from a server",
                            ))
                        }
                        _ => {}
                    }
                }
            }
        }
        match end {
            End::Open => Ok(()),
            End::Fin | End::Reset(_) => {
                let ty = *ty;
                self.uni.swap_remove(at);
                self.peer.closed(ty)
            }
        }
    }

    /// After a GOAWAY: takes out the requests at or above its stream ID, which the server
    /// will not process.
    pub(crate) fn take_refused(&mut self, event: &mut impl FnMut(Event)) {
        let Some(last) = self.goaway else { return };
        // Walked from the top: the refused are the newest, and `remove` keeps `oldest` right.
        for index in (last / 4..self.next).rev() {
            if let Some(request) = self.remove(index) {
                event(Event::Refused(request));
            }
        }
    }
}

/// How a read left a stream.
enum End {
    Open,
    Fin,
    Reset(u64),
}

/// Appends what stream `id` holds to `buf`, giving the flow-control credit back.
fn read_into(quic: &mut quinn_proto::Connection, id: StreamId, buf: &mut BytesMut) -> End {
    let mut recv = quic.recv_stream(id);
    let Ok(mut chunks) = recv.read(true) else {
        return End::Fin;
    };
    let end = loop {
        match chunks.next(usize::MAX) {
            Ok(Some(chunk)) => buf.extend_from_slice(&chunk.bytes),
            Ok(None) => break End::Fin,
            Err(ReadError::Blocked) => break End::Open,
            Err(ReadError::Reset(code)) => break End::Reset(code.into()),
        }
    };
    let _ = chunks.finalize();
    end
}

/// Hands QUIC what it takes of the request's bytes; finishes the stream once all are in.
fn write_request(
    quic: &mut quinn_proto::Connection,
    id: StreamId,
    s: &mut Stream,
    request: &H3Request,
) {
    let total = request.bytes.len();
    if s.written >= total {
        return;
    }
    let mut send = quic.send_stream(id);
    match send.write(&request.bytes[s.written..]) {
        Ok(n) => s.written += n,
        // Blocked by flow control: `Writable` comes. Stopped or closed: nothing to write.
        Err(quinn_proto::WriteError::Blocked) => return,
        Err(_) => s.written = usize::MAX,
    }
    if s.written == total {
        let _ = send.finish();
    }
}

/// Takes every frame in the stream's buffer. `Err`: a stream error (malformed response) or a
/// connection error (a frame out of place, QPACK).
fn take_frames(s: &mut Stream, qpack: &mut Decoder, receiving: &mut usize) -> Result<(), H3Error> {
    while let Some(frame) = s.frames.decode(&mut s.buf)? {
        let unexpected = |why| Err(H3Error::connection(Code::H3_FRAME_UNEXPECTED, why));
        match (s.part, frame) {
            (Part::Head, Frame::Headers(section)) => match status(qpack, &section)? {
                Status::Code(101) => {
                    return Err(H3Error::stream(
                        Code::H3_MESSAGE_ERROR,
                        "101 Switching Protocols over HTTP/3",
                    ))
                }
                Status::Code(100..=199) => {}
                Status::Code(code) => {
                    s.request.status = code;
                    s.part = Part::Body;
                    *receiving += 1;
                }
                Status::None | Status::Malformed => {
                    return Err(H3Error::stream(
                        Code::H3_MESSAGE_ERROR,
                        "a response head without a valid :status",
                    ))
                }
            },
            (Part::Head, Frame::Data(_)) => return unexpected("DATA before the response head"),
            (Part::Body, Frame::Data(piece)) => drop(piece),
            (Part::Body, Frame::Headers(section)) => {
                // Trailers: decoded (the section must be valid QPACK), then dropped.
                qpack.decode(&section, |_| Ok(()))?;
                s.part = Part::Done;
            }
            (Part::Done, Frame::Data(_) | Frame::Headers(_)) => {
                return unexpected("a frame after the trailers")
            }
            (_, Frame::PushPromise { .. }) => {
                return Err(H3Error::connection(
                    Code::H3_ID_ERROR,
                    "PUSH_PROMISE, though we allowed no push",
                ))
            }
            _ => return unexpected("a control frame on a request stream"),
        }
    }
    Ok(())
}

/// The `:status` of a response head.
fn status(qpack: &mut Decoder, section: &[u8]) -> Result<Status, H3Error> {
    let mut status = Status::None;
    qpack.decode(section, |f| {
        if f.name == b":status" {
            status = match (&status, status_code(f.value)) {
                (Status::None, Some(code)) => Status::Code(code),
                _ => Status::Malformed,
            };
        }
        Ok(())
    })?;
    Ok(status)
}

#[cfg(test)]
mod tests {
    use super::*;
    use volt_proto::h3::frame::{write_data_header, write_frame_header, write_headers};
    use volt_proto::h3::qpack::{Encoder, Indexing};

    fn stream() -> Stream {
        let now = Instant::now();
        Stream {
            request: Request {
                cursor: 0,
                from: now,
                started: now,
                send: 0,
                status: 0,
            },
            written: 0,
            part: Part::Head,
            frames: FrameDecoder::new(DEFAULT_MAX_FRAME_SIZE),
            buf: BytesMut::new(),
        }
    }

    /// A HEADERS frame with `:status` (or `raw` fields when `status` is `None`).
    fn head(status: Option<u16>, raw: &[(&[u8], &[u8])], out: &mut Vec<u8>) {
        let mut section = Vec::new();
        let mut encoder = Encoder::new();
        encoder.begin(&mut section);
        if let Some(status) = status {
            encoder.status(status, &mut section);
        }
        for (name, value) in raw {
            encoder.field(name, value, Indexing::Remember, &mut section);
        }
        write_headers(&section, out);
    }

    fn data(body: &[u8], out: &mut Vec<u8>) {
        write_data_header(body.len() as u64, out);
        out.extend_from_slice(body);
    }

    /// Feeds `bytes` one at a time (frames cut anywhere), then the FIN.
    fn take(bytes: &[u8]) -> (Stream, Result<(), H3Error>) {
        let mut s = stream();
        let mut qpack = Decoder::new();
        let mut receiving = 0;
        for &b in bytes {
            s.buf.extend_from_slice(&[b]);
            if let Err(e) = take_frames(&mut s, &mut qpack, &mut receiving) {
                return (s, Err(e));
            }
        }
        let fin = s.frames.finish(&s.buf);
        assert_eq!(receiving, usize::from(s.part != Part::Head));
        (s, fin)
    }

    #[test]
    fn interim_heads_are_skipped_and_trailers_taken() {
        let mut out = Vec::new();
        head(Some(103), &[(b"link", b"</a.css>")], &mut out);
        head(Some(200), &[(b"content-type", b"text/plain")], &mut out);
        data(b"Hello, ", &mut out);
        data(b"World!", &mut out);
        head(None, &[(b"x-checksum", b"1")], &mut out);
        let (s, end) = take(&out);
        end.unwrap();
        assert_eq!((s.request.status, s.part), (200, Part::Done));
    }

    #[test]
    fn a_response_without_a_body_ends_at_its_head() {
        let mut out = Vec::new();
        head(Some(404), &[], &mut out);
        let (s, end) = take(&out);
        end.unwrap();
        assert_eq!((s.request.status, s.part), (404, Part::Body));
    }

    #[test]
    fn frames_out_of_place_are_connection_errors() {
        /// What the case is, the bytes it writes, the code it must close with.
        type Case = (&'static str, fn(&mut Vec<u8>), Code);
        let cases: [Case; 4] = [
            ("DATA first", |o| data(b"x", o), Code::H3_FRAME_UNEXPECTED),
            (
                "after trailers",
                |o| {
                    head(Some(200), &[], o);
                    head(None, &[(b"x-t", b"1")], o);
                    data(b"late", o);
                },
                Code::H3_FRAME_UNEXPECTED,
            ),
            (
                "SETTINGS on a request stream",
                |o| {
                    head(Some(200), &[], o);
                    write_settings(&Settings::default(), o);
                },
                Code::H3_FRAME_UNEXPECTED,
            ),
            (
                "PUSH_PROMISE",
                |o| {
                    write_frame_header(0x05, 2, o);
                    o.extend_from_slice(&[0x00, 0x00]);
                },
                Code::H3_ID_ERROR,
            ),
        ];
        for (name, write, code) in cases {
            let mut out = Vec::new();
            write(&mut out);
            let err = take(&out).1.unwrap_err();
            assert_eq!(err.code(), code, "{name}: {err:?}");
            assert!(err.is_connection_error(), "{name}");
        }
    }

    #[test]
    fn a_head_without_a_valid_status_is_a_malformed_response() {
        for raw in [
            &[(&b"content-type"[..], &b"text/plain"[..])][..],
            &[(b":status", b"2000")],
            &[(b":status", b"abc")],
        ] {
            let mut out = Vec::new();
            head(None, raw, &mut out);
            let err = take(&out).1.unwrap_err();
            assert_eq!(err.code(), Code::H3_MESSAGE_ERROR, "{raw:?}");
            assert!(!err.is_connection_error());
        }
        let mut out = Vec::new();
        head(Some(101), &[], &mut out);
        assert_eq!(take(&out).1.unwrap_err().code(), Code::H3_MESSAGE_ERROR);
    }

    #[test]
    fn a_qpack_section_that_needs_the_dynamic_table_closes_the_connection() {
        // Required Insert Count 1: the server used a table we never allowed.
        let mut out = Vec::new();
        write_headers(&[0x01, 0x00, 0xd9], &mut out);
        let err = take(&out).1.unwrap_err();
        assert_eq!(err.code(), Code::QPACK_DECOMPRESSION_FAILED);
    }

    #[test]
    fn a_stream_cut_inside_a_frame_is_a_frame_error() {
        let mut out = Vec::new();
        head(Some(200), &[], &mut out);
        data(b"Hello", &mut out);
        let (s, end) = take(&out[..out.len() - 2]);
        assert_eq!(s.request.status, 200);
        assert_eq!(end.unwrap_err().code(), Code::H3_FRAME_ERROR);
    }
}
