//! A minimal HTTP/3 client of the tests' own, on quinn, for what h3 0.0.8's cannot do: its
//! `h3::ext::Protocol` knows only `webtransport` and `connect-udp` (no `:protocol
//! websocket`), and the server's SETTINGS are out of reach without an opt-in feature. Frames
//! and QPACK sections are written and read with volt-proto's codec; the streams are quinn's.

use std::net::SocketAddr;

use bytes::BytesMut;
use volt_proto::h3::frame::{write_data_header, write_headers, write_settings, Frame};
use volt_proto::h3::qpack::{Decoder, Encoder, Indexing};
use volt_proto::h3::{ControlEvent, ControlStream, FrameDecoder, Settings, StreamType};

use super::quic_connect;

/// A connection whose control streams are set up both ways.
pub struct RawH3 {
    pub conn: quinn::Connection,
    /// The server's SETTINGS.
    pub settings: Settings,
    /// Ours: kept open, as closing a control stream is a connection error.
    _control: quinn::SendStream,
    _server_control: quinn::RecvStream,
}

/// How a request stream's receiving side went on.
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    Frame(Frame),
    /// The server's FIN.
    End,
    /// The server reset the stream with this code.
    Reset(u64),
}

/// A request stream: HEADERS sent, frames read back.
pub struct RawStream {
    pub send: quinn::SendStream,
    pub recv: quinn::RecvStream,
    frames: FrameDecoder,
    buf: BytesMut,
}

impl RawH3 {
    /// Connects, sends our SETTINGS (all defaults) and reads the server's.
    pub async fn connect(addr: SocketAddr, der: &[u8]) -> RawH3 {
        let conn = quic_connect(addr, der).await;
        let mut control = conn.open_uni().await.unwrap();
        let mut out = Vec::new();
        StreamType::Control.encode(&mut out);
        write_settings(&Settings::default(), &mut out);
        control.write_all(&out).await.unwrap();
        let mut server_control = conn.accept_uni().await.unwrap();
        let mut buf = BytesMut::new();
        let mut ty = None;
        let mut decoder = ControlStream::new(1 << 16);
        let settings = loop {
            if ty.is_none() {
                ty = StreamType::decode(&mut buf);
            }
            if ty.is_some() {
                assert_eq!(ty, Some(StreamType::Control));
                if let Some(ControlEvent::Settings(s)) = decoder.decode(&mut buf).unwrap() {
                    break s;
                }
            }
            let chunk = server_control.read_chunk(1 << 16, true).await.unwrap();
            buf.extend_from_slice(&chunk.expect("the server's SETTINGS").bytes);
        };
        RawH3 {
            conn,
            settings,
            _control: control,
            _server_control: server_control,
        }
    }

    /// Opens a request stream and sends a HEADERS frame of `fields`, in their order.
    pub async fn request(&self, fields: &[(&str, &str)]) -> RawStream {
        let (mut send, recv) = self.conn.open_bi().await.unwrap();
        send.write_all(&headers(fields)).await.unwrap();
        RawStream {
            send,
            recv,
            frames: FrameDecoder::new(1 << 16),
            buf: BytesMut::new(),
        }
    }
}

/// A HEADERS frame of `fields`, QPACK-encoded with the static table only.
pub fn headers(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut section = Vec::new();
    let mut encoder = Encoder::new();
    encoder.begin(&mut section);
    for (name, value) in fields {
        encoder.field(
            name.as_bytes(),
            value.as_bytes(),
            Indexing::Once,
            &mut section,
        );
    }
    let mut frame = Vec::new();
    write_headers(&section, &mut frame);
    frame
}

/// A DATA frame around `payload`.
pub fn data(payload: &[u8]) -> Vec<u8> {
    let mut frame = Vec::new();
    write_data_header(payload.len() as u64, &mut frame);
    frame.extend_from_slice(payload);
    frame
}

impl RawStream {
    /// The next frame (a DATA piece as it arrives), the stream's end, or its reset.
    pub async fn next(&mut self) -> Next {
        loop {
            if let Some(frame) = self.frames.decode(&mut self.buf).expect("a valid frame") {
                return Next::Frame(frame);
            }
            match self.recv.read_chunk(1 << 16, true).await {
                Ok(Some(chunk)) => self.buf.extend_from_slice(&chunk.bytes),
                Ok(None) => {
                    assert!(self.buf.is_empty(), "the stream ends inside a frame");
                    return Next::End;
                }
                Err(quinn::ReadError::Reset(code)) => return Next::Reset(code.into_inner()),
                Err(e) => panic!("reading the stream: {e}"),
            }
        }
    }

    /// The response head: its status and its other fields, in order; `Err` with the code of
    /// the reset if the server reset the stream instead.
    pub async fn head(&mut self) -> Result<(u16, Vec<(String, String)>), u64> {
        let section = match self.next().await {
            Next::Frame(Frame::Headers(section)) => section,
            Next::Frame(other) => panic!("{other:?} before the response head"),
            Next::End => panic!("the stream ended without a response"),
            Next::Reset(code) => return Err(code),
        };
        let mut status = None;
        let mut fields = Vec::new();
        Decoder::new()
            .decode(&section, |f| {
                let text = |b: &[u8]| String::from_utf8(b.to_vec()).unwrap();
                match f.name {
                    b":status" => status = Some(text(f.value).parse().unwrap()),
                    name => fields.push((text(name), text(f.value))),
                }
                Ok(())
            })
            .expect("a valid QPACK section");
        Ok((status.expect(":status"), fields))
    }

    /// The rest of the response body, to the stream's end.
    pub async fn body(&mut self) -> Vec<u8> {
        let mut body = Vec::new();
        loop {
            match self.next().await {
                Next::Frame(Frame::Data(piece)) => body.extend_from_slice(&piece),
                Next::End => return body,
                other => panic!("{other:?} in a response body"),
            }
        }
    }

    /// Sends `payload` as one DATA frame.
    pub async fn send_data(&mut self, payload: &[u8]) {
        self.send.write_all(&data(payload)).await.unwrap();
    }
}

/// The value of field `name` in `fields`.
pub fn field<'a>(fields: &'a [(String, String)], name: &str) -> Option<&'a str> {
    fields
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}
