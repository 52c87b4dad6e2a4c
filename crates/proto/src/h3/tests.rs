//! Request heads end to end: QPACK-encoded field sections through [`decode_request`] and
//! [`decode_trailers`] into a [`Head`].

use super::qpack::{Decoder, Encoder, Indexing};
use super::*;

const LIMIT: usize = 16 * 1024;

/// A field section with these fields, each as a literal or static reference.
fn section(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut encoder = Encoder::new();
    encoder.begin(&mut out);
    for (name, value) in fields {
        encoder.field(name.as_bytes(), value.as_bytes(), Indexing::Once, &mut out);
    }
    out
}

fn request(fields: &[(&str, &str)]) -> Result<Head, HeadError> {
    let mut head = Head::default();
    decode_request(&mut Decoder::new(), &section(fields), LIMIT, &mut head)?;
    Ok(head)
}

fn fields(head: &Head) -> Vec<(String, String)> {
    head.fields
        .iter()
        .map(|f| {
            let s = |span| String::from_utf8_lossy(head.get(span)).into_owned();
            (s(f.name), s(f.value))
        })
        .collect()
}

const GET: [(&str, &str); 4] = [
    (":method", "GET"),
    (":scheme", "https"),
    (":authority", "example.com"),
    (":path", "/"),
];

/// A browser's request for a page, as Chrome sends one (fields in its order).
pub(super) const BROWSER: [(&str, &str); 16] = [
    (":method", "GET"),
    (":authority", "www.example.com"),
    (":scheme", "https"),
    (":path", "/articles/2026/11/http3-in-volt?ref=home"),
    (
        "sec-ch-ua",
        "\"Chromium\";v=\"131\", \"Not_A Brand\";v=\"24\"",
    ),
    ("sec-ch-ua-mobile", "?0"),
    ("sec-ch-ua-platform", "\"Linux\""),
    ("upgrade-insecure-requests", "1"),
    (
        "user-agent",
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) \
         Chrome/131.0.0.0 Safari/537.36",
    ),
    (
        "accept",
        "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,\
         image/apng,*/*;q=0.8",
    ),
    ("sec-fetch-site", "same-origin"),
    ("sec-fetch-mode", "navigate"),
    ("sec-fetch-dest", "document"),
    ("accept-encoding", "gzip, deflate, br, zstd"),
    ("accept-language", "en-US,en;q=0.9"),
    ("cookie", "session=4f1c2a9e; theme=dark"),
];

#[test]
fn a_browser_request_decodes() {
    let head = request(&BROWSER).unwrap();
    assert_eq!(head.get(head.method), b"GET");
    assert_eq!(head.get(head.scheme), b"https");
    assert_eq!(head.get(head.path), BROWSER[3].1.as_bytes());
    assert_eq!(head.get(head.authority.unwrap()), b"www.example.com");
    let mut expected: Vec<(String, String)> = BROWSER[4..]
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    expected.push(("host".into(), "www.example.com".into()));
    assert_eq!(fields(&head), expected);
    assert_eq!(head.content_length, None);
    assert!(!head.oversized);
}

#[test]
fn content_length_and_host() {
    let mut fields_in = GET.to_vec();
    fields_in.extend([("host", "example.com"), ("content-length", "12")]);
    fields_in[0] = (":method", "POST");
    let head = request(&fields_in).unwrap();
    assert_eq!(head.content_length, Some(12));
    // `host` as sent, not added a second time.
    assert_eq!(fields(&head).iter().filter(|(n, _)| n == "host").count(), 1);
    // `host` alone names the authority too.
    let head = request(&[
        (":method", "GET"),
        (":scheme", "http"),
        (":path", "/"),
        ("host", "h"),
    ])
    .unwrap();
    assert_eq!(head.authority, None);
}

#[test]
fn connect_takes_authority_only() {
    let head = request(&[(":method", "CONNECT"), (":authority", "proxy.example:443")]).unwrap();
    assert_eq!(head.get(head.authority.unwrap()), b"proxy.example:443");
    let e = request(&[
        (":method", "CONNECT"),
        (":authority", "a:1"),
        (":path", "/"),
    ]);
    assert!(matches!(e, Err(HeadError::Malformed(_))));
}

#[test]
fn malformed_requests() {
    let with = |extra: (&'static str, &'static str)| {
        let mut f = GET.to_vec();
        f.push(extra);
        f
    };
    let cases: Vec<Vec<(&str, &str)>> = vec![
        GET[1..].to_vec(),                                // no :method
        vec![GET[0], GET[1], GET[2]],                     // no :path
        vec![GET[0], GET[2], GET[3]],                     // no :scheme
        vec![GET[0], GET[1], GET[3]],                     // https and no authority
        vec![GET[0], GET[1], (":authority", ""), GET[3]], // an empty authority
        with(("connection", "close")),                    // connection-specific
        with(("keep-alive", "5")),
        with(("proxy-connection", "x")),
        with(("transfer-encoding", "chunked")),
        with(("upgrade", "h2c")),
        with(("te", "gzip")),             // te other than trailers
        with(("X-Upper", "1")),           // an uppercase name
        with(("content-length", "1x")),   // not a number
        with((":path", "/again")),        // a repeated pseudo-header
        with((":protocol", "websocket")), // unknown pseudo-header
        with(("host", "other.example")),  // host differs
        with(("x", "a\r\nb")),            // CR LF in a value
        with(("x", " padded")),           // whitespace around a value
        vec![GET[0], GET[1], ("accept", "*/*"), GET[2], GET[3]], // pseudo after regular
    ];
    for (i, case) in cases.iter().enumerate() {
        match request(case) {
            Err(HeadError::Malformed(why)) => {
                let e = HeadError::Malformed(why).error();
                assert_eq!(
                    (e.code(), e.scope()),
                    (Code::H3_MESSAGE_ERROR, Scope::Stream)
                );
            }
            other => panic!("case {i} {case:?}: {other:?}"),
        }
    }
    // `te: trailers` is the one allowed.
    assert!(request(&with(("te", "trailers"))).is_ok());
}

#[test]
fn trailers() {
    let mut head = Head::default();
    let t = section(&[("x-checksum", "abc"), ("x-more", "1")]);
    decode_trailers(&mut Decoder::new(), &t, LIMIT, &mut head).unwrap();
    assert_eq!(
        fields(&head),
        [
            ("x-checksum".into(), "abc".into()),
            ("x-more".into(), "1".into())
        ]
    );
    let t = section(&[("x-checksum", "abc"), (":path", "/")]);
    let e = decode_trailers(&mut Decoder::new(), &t, LIMIT, &mut head);
    assert!(matches!(e, Err(HeadError::Malformed(_))));
}

#[test]
fn field_section_size_limit() {
    // GET's four fields: 7+3, 7+5, 10+11, 5+1 bytes, and 32 each: 177.
    let size = 177;
    let mut head = Head::default();
    let s = section(&GET);
    decode_request(&mut Decoder::new(), &s, size, &mut head).unwrap();
    let e = decode_request(&mut Decoder::new(), &s, size - 1, &mut head).unwrap_err();
    assert_eq!(e, HeadError::TooLarge);
    assert!(head.oversized);
    assert_eq!(
        (e.error().code(), e.error().scope()),
        (Code::H3_EXCESSIVE_LOAD, Scope::Stream)
    );
    // Decoding stops at the limit: a broken field line after it is not reached.
    let mut s = section(&GET);
    s.push(0xff);
    let e = decode_request(&mut Decoder::new(), &s, 100, &mut head).unwrap_err();
    assert_eq!(e, HeadError::TooLarge);
    // Reused, the head holds the next request only.
    decode_request(&mut Decoder::new(), &section(&GET), LIMIT, &mut head).unwrap();
    assert!(!head.oversized);
    assert_eq!(fields(&head), [("host".into(), "example.com".into())]);
}

#[test]
fn qpack_errors_are_connection_errors() {
    let mut head = Head::default();
    let e = decode_request(&mut Decoder::new(), &[0x00, 0x00, 0x80], LIMIT, &mut head);
    let Err(HeadError::Qpack(e)) = e else {
        panic!("{e:?}")
    };
    assert_eq!(e.code(), Code::QPACK_DECOMPRESSION_FAILED);
    assert!(e.is_connection_error());
}

/// The server's whole path for one request: the stream's bytes, cut at every boundary, into
/// a head and body; and a response encoded and read back.
#[test]
fn request_stream_to_head_and_response_back() {
    let mut bytes = Vec::new();
    let mut post = GET.to_vec();
    post[0] = (":method", "POST");
    post.push(("content-length", "5"));
    frame::write_headers(&section(&post), &mut bytes);
    frame::write_data_header(5, &mut bytes);
    bytes.extend_from_slice(b"hello");
    for cut in 0..=bytes.len() {
        let mut stream = RequestStream::new(LIMIT);
        let mut decoder = Decoder::new();
        let mut head = Head::default();
        let mut body = Vec::new();
        let mut buf = bytes::BytesMut::new();
        for part in [&bytes[..cut], &bytes[cut..]] {
            buf.extend_from_slice(part);
            while let Some(event) = stream.decode(&mut buf).unwrap() {
                match event {
                    RequestEvent::Head(s) => {
                        decode_request(&mut decoder, &s, LIMIT, &mut head).unwrap();
                        stream.set_content_length(head.content_length);
                    }
                    RequestEvent::Data(piece) => body.extend_from_slice(&piece),
                    RequestEvent::Trailers(_) => unreachable!(),
                }
            }
        }
        stream.finish(&buf).unwrap();
        assert_eq!(
            (head.get(head.method), &body[..]),
            (&b"POST"[..], &b"hello"[..])
        );
    }

    let mut s = Vec::new();
    let mut encoder = Encoder::new();
    encoder.begin(&mut s);
    encoder.status(201, &mut s);
    encoder.field(b"location", b"/items/7", Indexing::Once, &mut s);
    encoder.content_length(0, &mut s);
    let mut out = bytes::BytesMut::new();
    frame::write_headers(&s, &mut out);
    let Some(Frame::Headers(back)) = FrameDecoder::new(LIMIT).decode(&mut out).unwrap() else {
        panic!("no HEADERS")
    };
    let mut got = Vec::new();
    Decoder::new()
        .decode(&back, |f| {
            got.push((f.name.to_vec(), f.value.to_vec()));
            Ok(())
        })
        .unwrap();
    assert_eq!(
        got,
        [
            (b":status".to_vec(), b"201".to_vec()),
            (b"location".to_vec(), b"/items/7".to_vec()),
            (b"content-length".to_vec(), b"0".to_vec()),
        ]
    );
}

fn extended(fields: &[(&str, &str)]) -> Result<Head, HeadError> {
    let mut head = Head::default();
    decode_extended_request(&mut Decoder::new(), &section(fields), LIMIT, &mut head)?;
    Ok(head)
}

/// RFC 9220 §3 with RFC 8441 §4: where the server offered extended CONNECT, `:protocol` is
/// known on a CONNECT with `:scheme` and `:path`; on another method, or on a CONNECT without
/// either, the request is malformed (H3_MESSAGE_ERROR).
#[test]
fn extended_connect_takes_protocol_scheme_and_path() {
    let ws = [
        (":method", "CONNECT"),
        (":protocol", "websocket"),
        (":scheme", "https"),
        (":authority", "h3.test"),
        (":path", "/chat?x=1"),
        ("sec-websocket-version", "13"),
    ];
    let head = extended(&ws).unwrap();
    assert_eq!(head.protocol.map(|p| head.get(p)), Some(&b"websocket"[..]));
    assert_eq!(head.get(head.path), b"/chat?x=1");
    assert_eq!(head.get(head.scheme), b"https");
    // Not offered: the same head is malformed.
    assert!(matches!(request(&ws), Err(HeadError::Malformed(_))));
    let without = |name: &str| -> Vec<(&str, &str)> {
        ws.iter().copied().filter(|(n, _)| *n != name).collect()
    };
    let mut on_get = ws.to_vec();
    on_get[0] = (":method", "GET");
    let mut twice = ws.to_vec();
    twice.insert(2, (":protocol", "websocket"));
    for case in [without(":path"), without(":scheme"), on_get, twice] {
        match extended(&case) {
            Err(e @ HeadError::Malformed(_)) => {
                assert_eq!(e.error().code(), Code::H3_MESSAGE_ERROR, "{case:?}");
            }
            other => panic!("{case:?}: {other:?}"),
        }
    }
    // A plain CONNECT is as before.
    let head = extended(&[(":method", "CONNECT"), (":authority", "a:1")]).unwrap();
    assert_eq!(head.protocol, None);
}
