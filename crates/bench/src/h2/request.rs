//! Requests as HTTP/2 header blocks, encoded once before the run.
//!
//! A block is HPACK without dynamic-table insertions (every field a static index or a literal
//! "without indexing", RFC 7541 §6.2.2): the decoder's table never changes because of it, so
//! the same bytes are valid on every stream of every connection, and sending a request is a
//! frame header and a copy.

use volt_proto::h2::frame::{flags, write_header, Kind, DEFAULT_MAX_FRAME_SIZE};
use volt_proto::h2::hpack::{Encoder, Indexing};
use volt_proto::Method;

use crate::target::Url;

/// One request of the round robin, ready for any stream.
#[derive(Clone, Debug)]
pub(crate) struct H2Request {
    /// The header block.
    pub block: Vec<u8>,
    /// The body, sent in DATA frames as flow control allows.
    pub body: Vec<u8>,
}

/// Header fields that describe one HTTP/1 connection, which HTTP/2 forbids (RFC 9113
/// §8.2.2), and the ones the pseudo-header fields or the body replace.
fn dropped(name: &str, value: &str) -> bool {
    match name {
        "connection" | "keep-alive" | "proxy-connection" | "transfer-encoding" | "upgrade"
        | "host" | "content-length" => true,
        "te" => !value.eq_ignore_ascii_case("trailers"),
        _ => false,
    }
}

/// Calls `field` with each field of a request's head, as HTTP/2 and HTTP/3 send it:
/// `:method`, `:scheme`, `:authority` (a `Host` header given replaces the URL's), `:path`,
/// the extra headers (lowercase, those about the connection dropped), and `content-length`
/// where HTTP/1 sends one.
pub(crate) fn fields(
    method: &Method,
    url: &Url,
    headers: &[(String, String)],
    body: &[u8],
    mut field: impl FnMut(&[u8], &[u8]),
) {
    let authority = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("host"))
        .map_or(url.authority.as_str(), |(_, v)| v.as_str());
    field(b":method", method.as_str().as_bytes());
    let scheme: &[u8] = if url.tls { b"https" } else { b"http" };
    field(b":scheme", scheme);
    field(b":authority", authority.as_bytes());
    field(b":path", url.target.as_bytes());
    for (name, value) in headers {
        let name = name.to_ascii_lowercase();
        if !dropped(&name, value) {
            field(name.as_bytes(), value.as_bytes());
        }
    }
    if !body.is_empty() || (*method == Method::POST || *method == Method::PUT) {
        field(b"content-length", body.len().to_string().as_bytes());
    }
}

impl H2Request {
    /// The request's [`fields`] as one header block.
    pub(crate) fn encode(
        method: &Method,
        url: &Url,
        headers: &[(String, String)],
        body: &[u8],
    ) -> H2Request {
        let mut encoder = Encoder::new();
        let mut block = Vec::with_capacity(64);
        encoder.begin(&mut block);
        fields(method, url, headers, body, |name, value| {
            let indexing = match Indexing::for_name(name) {
                Indexing::Never => Indexing::Never,
                _ => Indexing::Once,
            };
            encoder.field(name, value, indexing, &mut block);
        });
        H2Request {
            block,
            body: body.to_vec(),
        }
    }

    /// Appends the HEADERS frame (and CONTINUATION frames, for a block larger than the
    /// smallest frame size every peer accepts) opening stream `id`; with END_STREAM when there
    /// is no body.
    pub(crate) fn write_headers(&self, out: &mut Vec<u8>, id: u32) {
        let max = DEFAULT_MAX_FRAME_SIZE as usize;
        let mut kind = Kind::Headers;
        let mut end_stream = if self.body.is_empty() {
            flags::END_STREAM
        } else {
            0
        };
        let mut rest = &self.block[..];
        loop {
            let n = rest.len().min(max);
            let end_headers = if n == rest.len() {
                flags::END_HEADERS
            } else {
                0
            };
            write_header(out, n, kind, end_stream | end_headers, id);
            out.extend_from_slice(&rest[..n]);
            rest = &rest[n..];
            if rest.is_empty() {
                return;
            }
            kind = Kind::Continuation;
            end_stream = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use volt_proto::h2::frame::FrameHeader;
    use volt_proto::h2::hpack::Decoder;

    fn decode(block: &[u8]) -> Vec<(String, String)> {
        let mut fields = Vec::new();
        Decoder::new(4096)
            .decode(block, |n, v| {
                fields.push((
                    String::from_utf8_lossy(n).into_owned(),
                    String::from_utf8_lossy(v).into_owned(),
                ));
                Ok(())
            })
            .unwrap();
        fields
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn blocks_carry_the_pseudo_fields_and_drop_connection_fields() {
        let url = Url::parse("http://127.0.0.1:8080/json?x=1").unwrap();
        let headers: Vec<(String, String)> = [
            ("Accept", "*/*"),
            ("Connection", "keep-alive"),
            ("TE", "gzip"),
            ("Authorization", "secret"),
        ]
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
        let r = H2Request::encode(&Method::GET, &url, &headers, b"");
        assert_eq!(
            decode(&r.block),
            pairs(&[
                (":method", "GET"),
                (":scheme", "http"),
                (":authority", "127.0.0.1:8080"),
                (":path", "/json?x=1"),
                ("accept", "*/*"),
                ("authorization", "secret"),
            ])
        );
        // `:method GET` and `:scheme http` are static indexes; nothing is added to the
        // decoder's table, so the block decodes the same on any connection at any time.
        assert_eq!(&r.block[..2], [0x82, 0x86]);
        let host = [("Host".to_string(), "tfb-server".to_string())];
        let r = H2Request::encode(&Method::POST, &url, &host, b"hi");
        assert_eq!(
            decode(&r.block),
            pairs(&[
                (":method", "POST"),
                (":scheme", "http"),
                (":authority", "tfb-server"),
                (":path", "/json?x=1"),
                ("content-length", "2"),
            ])
        );
        assert_eq!(r.body, b"hi");
    }

    #[test]
    fn headers_frames_end_the_stream_without_a_body_and_split_large_blocks() {
        let url = Url::parse("http://h/").unwrap();
        let r = H2Request::encode(&Method::GET, &url, &[], b"");
        let mut out = Vec::new();
        r.write_headers(&mut out, 7);
        let h = FrameHeader::parse(&out).unwrap();
        assert_eq!(
            (h.kind, h.stream, h.len as usize),
            (Kind::Headers, 7, r.block.len())
        );
        assert!(h.has(flags::END_STREAM) && h.has(flags::END_HEADERS));

        let big = [("x-big".to_string(), "~".repeat(40_000))];
        let r = H2Request::encode(&Method::POST, &url, &big, b"x");
        out.clear();
        r.write_headers(&mut out, 9);
        let mut at = 0;
        let mut frames = Vec::new();
        while at < out.len() {
            let h = FrameHeader::parse(&out[at..]).unwrap();
            frames.push((h.kind, h.flags));
            at += 9 + h.len as usize;
        }
        assert_eq!(
            frames,
            [
                (Kind::Headers, 0),
                (Kind::Continuation, 0),
                (Kind::Continuation, flags::END_HEADERS)
            ]
        );
    }
}
