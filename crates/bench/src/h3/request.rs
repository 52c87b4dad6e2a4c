//! Requests as HTTP/3 request-stream bytes, encoded once before the run.
//!
//! A request stream carries a HEADERS frame (a QPACK field section: static table and
//! literals only, so it needs no encoder stream and means the same on every stream of every
//! connection), a DATA frame with the body if there is one, and the stream's FIN. So sending
//! a request is opening a stream, one write of these bytes, and a finish.

use volt_proto::h3::frame::{write_data_header, write_headers};
use volt_proto::h3::qpack::{Encoder, Indexing};
use volt_proto::Method;

use crate::h2::fields;
use crate::target::Url;

/// One request of the round robin, ready for any stream.
#[derive(Clone, Debug)]
pub(crate) struct H3Request {
    /// HEADERS, then DATA when there is a body.
    pub bytes: Vec<u8>,
}

impl H3Request {
    /// The same fields as HTTP/2 sends (`crate::h2::fields`), with QPACK's static table.
    pub(crate) fn encode(
        method: &Method,
        url: &Url,
        headers: &[(String, String)],
        body: &[u8],
    ) -> H3Request {
        let mut encoder = Encoder::new();
        let mut section = Vec::with_capacity(64);
        encoder.begin(&mut section);
        fields(method, url, headers, body, |name, value| {
            encoder.field(name, value, Indexing::for_name(name), &mut section);
        });
        let mut bytes = Vec::with_capacity(section.len() + body.len() + 16);
        write_headers(&section, &mut bytes);
        if !body.is_empty() {
            write_data_header(body.len() as u64, &mut bytes);
            bytes.extend_from_slice(body);
        }
        H3Request { bytes }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;
    use volt_proto::h3::qpack::Decoder;
    use volt_proto::h3::{Frame, FrameDecoder};

    fn frames(bytes: &[u8]) -> Vec<Frame> {
        let mut buf = BytesMut::from(bytes);
        let mut decoder = FrameDecoder::new(16 * 1024);
        let mut out = Vec::new();
        while let Some(frame) = decoder.decode(&mut buf).unwrap() {
            out.push(frame);
        }
        decoder.finish(&buf).unwrap();
        out
    }

    fn fields_of(section: &[u8]) -> Vec<(String, String)> {
        let mut fields = Vec::new();
        Decoder::new()
            .decode(section, |f| {
                fields.push((
                    String::from_utf8_lossy(f.name).into_owned(),
                    String::from_utf8_lossy(f.value).into_owned(),
                ));
                Ok(())
            })
            .unwrap();
        fields
    }

    #[test]
    fn a_get_is_one_headers_frame_with_the_pseudo_fields() {
        let url = Url::parse("https://127.0.0.1:8443/json?x=1").unwrap();
        let headers = [
            ("Accept".to_string(), "*/*".to_string()),
            ("Connection".to_string(), "keep-alive".to_string()),
        ];
        let r = H3Request::encode(&Method::GET, &url, &headers, b"");
        let frames = frames(&r.bytes);
        assert_eq!(frames.len(), 1);
        let Frame::Headers(section) = &frames[0] else {
            panic!("{frames:?}")
        };
        let expected: Vec<(String, String)> = [
            (":method", "GET"),
            (":scheme", "https"),
            (":authority", "127.0.0.1:8443"),
            (":path", "/json?x=1"),
            ("accept", "*/*"),
        ]
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
        assert_eq!(fields_of(section), expected);
        // The section prefix says "no dynamic table"; `:method GET` and `:scheme https` are
        // static entries 17 and 23, one byte each.
        assert_eq!(&section[..4], [0x00, 0x00, 0xc0 | 17, 0xc0 | 23]);
    }

    #[test]
    fn a_body_follows_in_one_data_frame() {
        let url = Url::parse("https://h/upload").unwrap();
        let r = H3Request::encode(&Method::POST, &url, &[], b"hello");
        let frames = frames(&r.bytes);
        assert_eq!(frames.len(), 2);
        let Frame::Headers(section) = &frames[0] else {
            panic!("{frames:?}")
        };
        assert!(fields_of(section).contains(&("content-length".into(), "5".into())));
        assert_eq!(frames[1], Frame::Data(bytes::Bytes::from_static(b"hello")));
    }
}
