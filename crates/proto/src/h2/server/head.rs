//! Request heads: the decoded head (or trailers) of the latest request, and the checks on
//! each field and on the whole list that make a request well-formed (RFC 9113 §8.1–8.3).

use super::{conn_err, Connection, Fault};
use crate::field_check::FieldCheck;
pub(super) use crate::field_check::Malformed;
use crate::h2::frame::Reason;
use crate::{HeaderSpans, Span};

/// A decoded request head (or trailer section), in one buffer reused for every request: the
/// spans point into `buf`.
#[derive(Debug, Default)]
pub struct Head {
    /// The names and values the spans point into.
    pub buf: Vec<u8>,
    /// `:method`.
    pub method: Span,
    /// `:scheme` (empty for a CONNECT without `:protocol`).
    pub scheme: Span,
    /// `:authority`, if sent.
    pub authority: Option<Span>,
    /// `:path` (empty for a CONNECT without `:protocol`).
    pub path: Span,
    /// `:protocol` (RFC 8441 §4), sent only on an extended CONNECT: the protocol its stream
    /// is to carry (`websocket`), a token.
    pub protocol: Option<Span>,
    /// The regular fields in order; `host` from `:authority` last when no `host` came (RFC
    /// 9113 §8.3.1: they mean the same).
    pub fields: HeaderSpans,
    /// `content-length`, if sent.
    pub content_length: Option<u64>,
    /// The list was over
    /// [`Settings::max_header_list_size`](super::Settings::max_header_list_size) (in HTTP/3,
    /// the limit given to [`h3::decode_request`](crate::h3::decode_request)): fields were
    /// dropped, the server should answer 431.
    pub oversized: bool,
}

impl Head {
    pub(crate) fn clear(&mut self) {
        self.buf.clear();
        self.method = Span::default();
        self.scheme = Span::default();
        self.authority = None;
        self.path = Span::default();
        self.protocol = None;
        self.fields.clear();
        self.content_length = None;
        self.oversized = false;
    }

    pub(crate) fn push(&mut self, bytes: &[u8]) -> Span {
        let start = self.buf.len() as u32;
        self.buf.extend_from_slice(bytes);
        Span {
            start,
            end: self.buf.len() as u32,
        }
    }

    /// The bytes of `span`.
    pub fn get(&self, span: Span) -> &[u8] {
        span.get(&self.buf)
    }
}

impl Connection {
    /// Decodes a block into [`Connection::head`], checking the fields (RFC 9113 §8.1–8.3). A
    /// broken HPACK block is a connection error; a malformed request is `Ok(Err(..))`, a
    /// stream error for the caller. The block is always decoded to its end, so the dynamic
    /// table stays in step with the client's.
    pub(super) fn decode(
        &mut self,
        block: &[u8],
        trailers: bool,
    ) -> Result<Result<(), Malformed>, Fault> {
        let max_list_size = self.settings.max_header_list_size as usize;
        let extended_connect = self.settings.enable_connect_protocol;
        let mut check = FieldCheck::new(&mut self.head, trailers, max_list_size, extended_connect);
        let decoded = self.decoder.decode(block, |name, value| {
            check.field(name, value);
            Ok(())
        });
        if decoded.is_err() {
            return Err(conn_err(Reason::COMPRESSION_ERROR, "bad header block"));
        }
        Ok(check.finish())
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use crate::Span;

    #[test]
    fn malformed_requests_reset_the_stream() {
        let cases: [&[u8]; 8] = [
            &[0x82, 0x86, 0x41, 0x01, b't'],                   // no :path
            &[0x82, 0x86, 0x84, 0x41, 1, b't', 0x66, 1, b'u'], // host: u, :authority: t
            &[0x82, 0x86, 0x84, 0x66, 1, b'u', 0x66, 1, b'u'], // two host fields
            &[0x82, 0x86, 0x84, 0x40, 1, b'A', 1, b'b'],       // uppercase name
            &[0x82, 0x86, 0x84, 0x40, 1, b'a', 1, b'b', 0x82], // pseudo after regular
            &[0x82, 0x86, 0x84, 0x40, 2, b't', b'e', 1, b'x'], // te: x
            &[0x82, 0x86, 0x84, 0x40, 3, b':', b'x', b'y', 0], // unknown pseudo
            &[0x82, 0x82, 0x86, 0x84],                         // repeated :method
        ];
        let mut conn = open(Settings::default());
        for (i, block) in cases.iter().enumerate() {
            let id = 1 + 2 * i as u32;
            let (events, out, err) = run(&mut conn, &headers(id, flags::END_STREAM, block));
            assert_eq!((events, err), (vec![], None), "case {i}");
            assert_eq!(rst_code(&out, id), Some(Reason::PROTOCOL_ERROR), "case {i}");
        }
        // The connection still serves.
        let (events, _, _) = run(&mut conn, &headers(99, flags::END_STREAM, &GET));
        assert_eq!(events.len(), 1);
    }

    /// Fields after the list went over the limit were still examined, each as long as the
    /// table entry one byte can name: a block within the size bound made the server scan
    /// thousands of times its size. The scan is not visible here; what is: a request over the
    /// limit is refused as such (431), not reset for a malformed field further on.
    #[test]
    fn fields_past_the_list_limit_are_not_examined() {
        let mut conn = open(Settings {
            max_header_list_size: 200,
            ..Settings::default()
        });
        let mut block = GET.to_vec();
        block.extend([0x40, 1, b'x', 100]); // x: 100 bytes, into the dynamic table
        block.extend([b'v'; 100]);
        block.extend([0xbe, 0xbe]); // the same field twice more (dynamic index 62)
        block.extend([0x00, 1, b'A', 1, b'b']); // an uppercase name: malformed
        let (events, out, err) = run(&mut conn, &headers(1, flags::END_STREAM, &block));
        assert_eq!(err, None);
        assert_eq!(rst_code(&out, 1), None);
        assert_eq!(
            events,
            [Event::Request {
                stream: 1,
                end_stream: true
            }]
        );
        assert!(conn.head().oversized);
    }

    /// `:method CONNECT` (a literal on the static name 2).
    const CONNECT: [u8; 9] = [0x02, 7, b'C', b'O', b'N', b'N', b'E', b'C', b'T'];

    /// A block of `method` then the given pseudo-headers: `:protocol` (a literal name),
    /// `:scheme http`, `:path /chat`, `:authority t`.
    fn block(method: &[u8], protocol: Option<&[u8]>, scheme: bool, path: bool) -> Vec<u8> {
        let mut b = method.to_vec();
        if let Some(p) = protocol {
            b.extend([0x00, 9]);
            b.extend(b":protocol");
            b.push(p.len() as u8);
            b.extend(p);
        }
        if scheme {
            b.push(0x86);
        }
        if path {
            b.extend([0x04, 5, b'/', b'c', b'h', b'a', b't']);
        }
        b.extend([0x01, 1, b't']); // :authority t, not indexed
        b
    }

    /// SETTINGS_ENABLE_CONNECT_PROTOCOL = 1 closes the server's SETTINGS (RFC 8441 §3),
    /// and only when extended CONNECT is on.
    #[test]
    fn settings_announce_extended_connect() {
        let mut out = Vec::new();
        let _ = Connection::new(Settings::default(), &mut out);
        let mut expected = vec![0, 0, 30, 0x4, 0, 0, 0, 0, 0];
        expected.extend([0, 3, 0, 0, 1, 0]); // MAX_CONCURRENT_STREAMS 256
        expected.extend([0, 4, 0, 4, 0, 0]); // INITIAL_WINDOW_SIZE 256 KiB
        expected.extend([0, 5, 0, 0, 0x40, 0]); // MAX_FRAME_SIZE 16 KiB
        expected.extend([0, 6, 0, 0, 0x40, 0]); // MAX_HEADER_LIST_SIZE 16 KiB
        expected.extend([0, 8, 0, 0, 0, 1]); // ENABLE_CONNECT_PROTOCOL 1
        assert_eq!(out[..39], expected[..]);

        let mut out = Vec::new();
        let off = Settings {
            enable_connect_protocol: false,
            ..Settings::default()
        };
        let _ = Connection::new(off, &mut out);
        assert_eq!(out[..9], [0, 0, 24, 0x4, 0, 0, 0, 0, 0]);
        assert!(!out[9..33].chunks(6).any(|s| s[..2] == [0, 8]));
    }

    #[test]
    fn extended_connect_opens_a_stream_with_its_protocol() {
        let mut conn = open(Settings::default());
        let bytes = headers(1, 0, &block(&CONNECT, Some(b"websocket"), true, true));
        let (events, out, err) = run(&mut conn, &bytes);
        assert_eq!((err, out), (None, vec![]));
        assert_eq!(
            events,
            [Event::Request {
                stream: 1,
                end_stream: false
            }]
        );
        let head = conn.head();
        assert_eq!(head.get(head.method), b"CONNECT");
        assert_eq!(head.protocol.map(|p| head.get(p)), Some(&b"websocket"[..]));
        assert_eq!(head.get(head.scheme), b"http");
        assert_eq!(head.get(head.path), b"/chat");
        assert_eq!(head.authority.map(|a| head.get(a)), Some(&b"t"[..]));
        // The tunnel's bytes flow both ways as DATA.
        let (events, _, _) = run(&mut conn, &data(1, 0, b"\x81\x80abcd"));
        assert_eq!(events.len(), 1);
        let mut out = Vec::new();
        let mut block = conn.headers(1, &mut out).unwrap();
        block.status(200);
        block.finish(false);
        assert_eq!(conn.send_data(1, b"\x81\x00", false, &mut out), 2);
        let f = frames(&out);
        assert_eq!(
            (f[0].0.kind, f[0].0.flags),
            (Kind::Headers, flags::END_HEADERS)
        );
        assert_eq!(decode_block(&f[0].1), [(":status".into(), "200".into())]);
        assert_eq!(f[1].1, b"\x81\x00");
        // §8.5: HEADERS after the request's on a CONNECT stream is a stream error.
        let trailers = headers(1, flags::END_STREAM, &[0x40, 1, b'x', 1, b'y']);
        let (events, out, err) = run(&mut conn, &trailers);
        assert_eq!(err, None);
        assert_eq!(rst_code(&out, 1), Some(Reason::PROTOCOL_ERROR));
        assert_eq!(
            events,
            [Event::Reset {
                stream: 1,
                reason: Reason::PROTOCOL_ERROR
            }]
        );
    }

    /// RFC 8441 §4 and RFC 9113 §8.3: `:protocol` on another method, an extended CONNECT
    /// without `:scheme` or `:path`, a repeated, empty or non-token `:protocol`, and (where it
    /// was not offered) any `:protocol` make the request malformed: a stream error, and the
    /// connection goes on.
    #[test]
    fn malformed_extended_connects_reset_the_stream() {
        let get = [0x82];
        let mut twice = block(&CONNECT, Some(b"websocket"), true, true);
        twice.extend([0x00, 9]);
        twice.extend(b":protocol");
        twice.extend([1, b'x']);
        let cases: Vec<Vec<u8>> = vec![
            block(&get, Some(b"websocket"), true, true),
            block(&[0x83], Some(b"websocket"), true, true), // POST
            block(&CONNECT, Some(b"websocket"), false, true),
            block(&CONNECT, Some(b"websocket"), true, false),
            block(&CONNECT, Some(b""), true, true),
            block(&CONNECT, Some(b"web socket"), true, true),
            block(&CONNECT, Some(b"a/b"), true, true),
            twice,
            block(&CONNECT, None, true, true), // plain CONNECT with :scheme and :path
        ];
        let mut conn = open(Settings::default());
        for (i, block) in cases.iter().enumerate() {
            let id = 1 + 2 * i as u32;
            let (events, out, err) = run(&mut conn, &headers(id, 0, block));
            assert_eq!((events, err), (vec![], None), "case {i}");
            assert_eq!(rst_code(&out, id), Some(Reason::PROTOCOL_ERROR), "case {i}");
        }
        // Not offered: `:protocol` is unknown, even on CONNECT.
        let mut conn = open(Settings {
            enable_connect_protocol: false,
            ..Settings::default()
        });
        let bytes = headers(1, 0, &block(&CONNECT, Some(b"websocket"), true, true));
        let (events, out, _) = run(&mut conn, &bytes);
        assert_eq!(events, []);
        assert_eq!(rst_code(&out, 1), Some(Reason::PROTOCOL_ERROR));
    }

    /// A plain CONNECT keeps RFC 9113 §8.5's form: `:authority` alone.
    #[test]
    fn plain_connect_is_unchanged() {
        let mut conn = open(Settings::default());
        let plain = [&CONNECT[..], &[0x01, 5, b'h', b':', b'4', b'4', b'3']].concat();
        let (events, _, err) = run(&mut conn, &headers(1, 0, &plain));
        assert_eq!(err, None);
        assert_eq!(events.len(), 1);
        let head = conn.head();
        assert_eq!(
            (head.protocol, head.path, head.scheme),
            (None, Span::default(), Span::default())
        );
        let no_authority = [&CONNECT[..]].concat();
        let (events, out, _) = run(&mut conn, &headers(3, 0, &no_authority));
        assert_eq!(events, []);
        assert_eq!(rst_code(&out, 3), Some(Reason::PROTOCOL_ERROR));
    }

    /// RFC 8441 §3: the setting's value is 0 or 1; from a client it changes nothing.
    #[test]
    fn enable_connect_protocol_from_a_client() {
        for (value, fails) in [(0u8, false), (1, false), (2, true)] {
            let mut conn = open(Settings::default());
            let settings = frame(0x4, 0, 0, &[0, 8, 0, 0, 0, value]);
            let (_, out, err) = run(&mut conn, &settings);
            assert_eq!(
                err.map(|e| e.reason()),
                fails.then_some(Reason::PROTOCOL_ERROR)
            );
            if !fails {
                assert_eq!(frames(&out)[0].0.kind, Kind::Settings, "ACK");
            }
        }
    }
}
