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
    /// `:scheme` (empty for CONNECT).
    pub scheme: Span,
    /// `:authority`, if sent.
    pub authority: Option<Span>,
    /// `:path` (empty for CONNECT).
    pub path: Span,
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
        let mut check = FieldCheck::new(&mut self.head, trailers, max_list_size);
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
}
