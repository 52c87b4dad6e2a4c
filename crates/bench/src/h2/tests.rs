//! The client connection on byte slices: frames in, events and frames out, every input split
//! at every byte where it matters.

use std::time::Instant;

use volt_proto::h2::frame::{
    flags, setting, write_data, write_goaway, write_header, write_rst_stream, write_settings,
    write_window_update, FrameHeader, Kind, Reason,
};
use volt_proto::h2::hpack::{Encoder, Indexing};
use volt_proto::Method;

use super::conn::{Connection, Event, ProtocolError};
use super::request::H2Request;
use super::streams::Stream;
use crate::target::Url;

fn get() -> H2Request {
    H2Request::encode(&Method::GET, &Url::parse("http://h/").unwrap(), &[], b"")
}

fn stream() -> Stream {
    let now = Instant::now();
    Stream::new(0, now, now, 0)
}

/// A connection past its handshake: the server's SETTINGS taken, our frames dropped.
fn settled(max_streams: usize, server_settings: &[(u16, u32)]) -> Connection {
    let mut c = Connection::new(max_streams);
    c.reset();
    let mut input = Vec::new();
    write_settings(&mut input, server_settings);
    assert_eq!(c.free(), 0, "nothing opens before the server's SETTINGS");
    assert_eq!(
        c.receive(&input, &mut |_| panic!("no event")),
        Ok(input.len())
    );
    c.out.clear();
    c
}

/// What `input` makes the connection report, fed whole.
fn events(
    c: &mut Connection,
    input: &[u8],
) -> Result<Vec<(&'static str, u32, u16)>, ProtocolError> {
    let mut got = Vec::new();
    let used = c.receive(input, &mut |e| {
        got.push(match e {
            Event::Response(s) => ("response", s.id, s.status),
            Event::Reset(s) => ("reset", s.id, s.status),
            Event::Refused(s) => ("refused", s.id, s.status),
        })
    })?;
    assert_eq!(used, input.len());
    Ok(got)
}

fn head(status: u16, fields: &[(&[u8], &[u8])]) -> Vec<u8> {
    let mut encoder = Encoder::new();
    let mut block = Vec::new();
    encoder.begin(&mut block);
    encoder.status(status, &mut block);
    for (name, value) in fields {
        encoder.field(name, value, Indexing::Remember, &mut block);
    }
    block
}

#[test]
fn the_preface_settings_and_window_go_out_first() {
    let mut c = Connection::new(4);
    c.reset();
    let out = c.out.clone();
    assert!(out.starts_with(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"));
    let settings = FrameHeader::parse(&out[24..]).unwrap();
    assert_eq!((settings.kind, settings.len), (Kind::Settings, 12));
    let window_update = FrameHeader::parse(&out[24 + 9 + 12..]).unwrap();
    assert_eq!(window_update.kind, Kind::WindowUpdate);
    assert_eq!(out.len(), 24 + 9 + 12 + 9 + 4);
}

#[test]
fn streams_open_up_to_the_smaller_of_both_limits() {
    let mut c = settled(8, &[(setting::MAX_CONCURRENT_STREAMS, 3)]);
    assert_eq!(c.free(), 3);
    for expected in [1, 3, 5] {
        assert_eq!(c.open(&get(), stream()), expected);
    }
    assert_eq!(c.free(), 0);
    let c = settled(2, &[]);
    assert_eq!(c.free(), 2);
}

#[test]
fn a_response_split_at_every_byte_ends_its_stream_once() {
    let mut c = settled(4, &[]);
    c.open(&get(), stream());
    // An interim 103, then a head in HEADERS + CONTINUATION, DATA, and trailers.
    let mut input = Vec::new();
    let interim = head(103, &[]);
    write_header(
        &mut input,
        interim.len(),
        Kind::Headers,
        flags::END_HEADERS,
        1,
    );
    input.extend_from_slice(&interim);
    let block = head(
        200,
        &[(b"server", b"volt"), (b"content-type", b"text/plain")],
    );
    let (a, b) = block.split_at(3);
    write_header(&mut input, a.len(), Kind::Headers, 0, 1);
    input.extend_from_slice(a);
    write_header(
        &mut input,
        b.len(),
        Kind::Continuation,
        flags::END_HEADERS,
        1,
    );
    input.extend_from_slice(b);
    write_data(&mut input, 1, b"Hello, ", false);
    write_data(&mut input, 1, b"World!", false);
    let trailers = head(200, &[]);
    // Trailers carry no :status; any block will do for the test as long as it decodes.
    write_header(
        &mut input,
        trailers.len() - 1,
        Kind::Headers,
        flags::END_HEADERS | flags::END_STREAM,
        1,
    );
    input.extend_from_slice(&trailers[1..]);
    for split in 0..=input.len() {
        let mut c = settled(4, &[]);
        c.open(&get(), stream());
        let mut got = Vec::new();
        let mut sink = |e: Event| match e {
            Event::Response(s) => got.push(s.status),
            other => panic!("{other:?}"),
        };
        let used = c.receive(&input[..split], &mut sink).unwrap();
        let mut rest = input[used..split].to_vec();
        rest.extend_from_slice(&input[split..]);
        assert_eq!(
            c.receive(&rest, &mut sink),
            Ok(rest.len()),
            "split at {split}"
        );
        assert_eq!(got, [200], "split at {split}");
        assert_eq!(c.streams.open(), 0);
        assert!(!c.is_mid_response());
    }
}

#[test]
fn resets_and_goaways_end_streams_as_their_own_events() {
    let mut c = settled(4, &[]);
    for _ in 0..4 {
        c.open(&get(), stream());
    }
    let mut input = Vec::new();
    write_rst_stream(&mut input, 3, Reason::INTERNAL_ERROR);
    let block = head(204, &[]);
    write_header(
        &mut input,
        block.len(),
        Kind::Headers,
        flags::END_HEADERS | flags::END_STREAM,
        1,
    );
    input.extend_from_slice(&block);
    write_goaway(&mut input, 5, Reason::NO_ERROR);
    let got = events(&mut c, &input).unwrap();
    assert_eq!(
        got,
        [("reset", 3, 0), ("response", 1, 204), ("refused", 7, 0)]
    );
    assert!(c.is_ending());
    assert_eq!(c.free(), 0);
    assert_eq!(c.streams.open(), 1);
    // Late frames for streams that ended are ignored.
    let mut late = Vec::new();
    write_data(&mut late, 3, b"late", true);
    write_rst_stream(&mut late, 7, Reason::CANCEL);
    assert_eq!(events(&mut c, &late).unwrap(), []);
}

#[test]
fn credit_is_given_back_in_batches_and_pings_and_settings_are_answered() {
    let mut c = settled(1, &[]);
    c.open(&get(), stream());
    c.out.clear();
    let block = head(200, &[]);
    let mut input = Vec::new();
    write_header(
        &mut input,
        block.len(),
        Kind::Headers,
        flags::END_HEADERS,
        1,
    );
    input.extend_from_slice(&block);
    let frame = vec![0u8; 16_384];
    for _ in 0..64 {
        write_data(&mut input, 1, &frame, false);
    }
    write_header(&mut input, 8, Kind::Ping, 0, 0);
    input.extend_from_slice(b"12345678");
    write_settings(&mut input, &[(setting::MAX_FRAME_SIZE, 32_768)]);
    assert_eq!(events(&mut c, &input).unwrap(), []);
    // 1 MiB of DATA took no WINDOW_UPDATE: only the PING's and the SETTINGS' answers.
    let mut kinds = Vec::new();
    let mut at = 0;
    while let Some(h) = FrameHeader::parse(&c.out[at..]) {
        kinds.push((h.kind, h.flags));
        at += 9 + h.len as usize;
    }
    assert_eq!(
        kinds,
        [(Kind::Ping, flags::ACK), (Kind::Settings, flags::ACK)]
    );
    assert!(c.is_mid_response());
}

#[test]
fn bodies_wait_for_window_updates() {
    let mut c = settled(2, &[(setting::INITIAL_WINDOW_SIZE, 10)]);
    let post = H2Request::encode(
        &Method::POST,
        &Url::parse("http://h/").unwrap(),
        &[],
        b"0123456789abcdefghij",
    );
    let requests = [post];
    c.open(&requests[0], stream());
    let data_len = |out: &[u8]| {
        let mut total = 0;
        let mut at = 0;
        while let Some(h) = FrameHeader::parse(&out[at..]) {
            if h.kind == Kind::Data {
                total += h.len;
            }
            at += 9 + h.len as usize;
        }
        total
    };
    assert_eq!(
        data_len(&c.out),
        10,
        "the stream's window holds the rest back"
    );
    c.out.clear();
    let mut input = Vec::new();
    write_window_update(&mut input, 1, 4);
    events(&mut c, &input).unwrap();
    c.send_bodies(&requests);
    assert_eq!(data_len(&c.out), 4);
    c.out.clear();
    // A larger initial window applies to the open stream too.
    let mut input = Vec::new();
    write_settings(&mut input, &[(setting::INITIAL_WINDOW_SIZE, 100)]);
    events(&mut c, &input).unwrap();
    c.send_bodies(&requests);
    assert_eq!(data_len(&c.out), 6);
    let last = FrameHeader::parse(&c.out[c.out.len() - 9 - 6..]).unwrap();
    assert!(last.has(flags::END_STREAM));
}

#[test]
fn malformed_frames_are_protocol_errors() {
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("too large", {
            let mut b = Vec::new();
            write_header(&mut b, 20_000, Kind::Data, 0, 1);
            b
        }),
        ("DATA on stream 0", {
            let mut b = Vec::new();
            write_data(&mut b, 0, b"x", false);
            b
        }),
        ("DATA before the head", {
            let mut b = Vec::new();
            write_data(&mut b, 1, b"x", true);
            b
        }),
        ("a stream never opened", {
            let mut b = Vec::new();
            let block = head(200, &[]);
            write_header(&mut b, block.len(), Kind::Headers, flags::END_HEADERS, 9);
            b.extend_from_slice(&block);
            b
        }),
        ("no :status", {
            let mut b = Vec::new();
            write_header(&mut b, 1, Kind::Headers, flags::END_HEADERS, 1);
            b.push(0x82); // :method GET
            b
        }),
        ("bad HPACK", {
            let mut b = Vec::new();
            write_header(&mut b, 1, Kind::Headers, flags::END_HEADERS, 1);
            b.push(0xff); // an index with its continuation missing
            b
        }),
        ("interrupted block", {
            let mut b = Vec::new();
            write_header(&mut b, 1, Kind::Headers, 0, 1);
            b.push(0x88);
            write_header(&mut b, 8, Kind::Ping, 0, 0);
            b.extend_from_slice(b"12345678");
            b
        }),
        ("PUSH_PROMISE", {
            let mut b = Vec::new();
            write_header(&mut b, 4, Kind::PushPromise, flags::END_HEADERS, 1);
            b.extend_from_slice(&[0, 0, 0, 2]);
            b
        }),
        ("SETTINGS of 5 bytes", {
            let mut b = Vec::new();
            write_header(&mut b, 5, Kind::Settings, 0, 0);
            b.extend_from_slice(&[0; 5]);
            b
        }),
        ("a window of 0", {
            let mut b = Vec::new();
            write_window_update(&mut b, 0, 0);
            b
        }),
        ("an interim head ending the stream", {
            let mut b = Vec::new();
            let block = head(100, &[]);
            write_header(
                &mut b,
                block.len(),
                Kind::Headers,
                flags::END_HEADERS | flags::END_STREAM,
                1,
            );
            b.extend_from_slice(&block);
            b
        }),
        ("padding past the end", {
            let mut b = Vec::new();
            write_header(&mut b, 2, Kind::Data, flags::PADDED, 1);
            b.extend_from_slice(&[5, 0]);
            b
        }),
    ];
    for (what, input) in cases {
        let mut c = settled(2, &[]);
        c.open(&get(), stream());
        if what == "padding past the end" {
            // The head first, so the DATA is expected.
            let block = head(200, &[]);
            let mut h = Vec::new();
            write_header(&mut h, block.len(), Kind::Headers, flags::END_HEADERS, 1);
            h.extend_from_slice(&block);
            events(&mut c, &h).unwrap();
        }
        assert!(events(&mut c, &input).is_err(), "{what}");
    }
}
