//! Every stream and field section one byte-step away from a valid one (and seeded random
//! mutations of them): the decoders never panic, say the same thing whether the bytes come
//! at once or one at a time, and whatever QPACK accepts re-encodes to the same fields.

use bytes::BytesMut;

use super::qpack::{Decoder, Encoder, Indexing};
use super::*;
use crate::generate::{each_mutation, mutate, Rng};

/// Decoded fields: name and value.
type Fields = Vec<(Vec<u8>, Vec<u8>)>;

/// Decoded field lines: name, value and N bit.
type Lines = Vec<(Vec<u8>, Vec<u8>, bool)>;

/// What a request stream said: its events (DATA joined into one body) and how it ended.
#[derive(Debug, PartialEq)]
struct Outcome {
    heads: Vec<bytes::Bytes>,
    body: Vec<u8>,
    end: Result<(), Error>,
    /// Whatever `decode_request` said of each head.
    decoded: Vec<Result<Fields, HeadError>>,
}

/// Feeds `bytes` to a request stream in pieces of `step` bytes (0: all at once), then FIN.
fn request_stream(bytes: &[u8], step: usize) -> Outcome {
    let mut stream = RequestStream::new(256);
    let mut decoder = Decoder::new();
    let mut head = Head::default();
    let mut out = Outcome {
        heads: Vec::new(),
        body: Vec::new(),
        end: Ok(()),
        decoded: Vec::new(),
    };
    let mut buf = BytesMut::new();
    let step = if step == 0 { bytes.len().max(1) } else { step };
    for piece in bytes.chunks(step) {
        buf.extend_from_slice(piece);
        loop {
            match stream.decode(&mut buf) {
                Ok(Some(RequestEvent::Head(s) | RequestEvent::Trailers(s))) => {
                    let trailers = !out.heads.is_empty();
                    let result = if trailers {
                        decode_trailers(&mut decoder, &s, 512, &mut head)
                    } else {
                        decode_request(&mut decoder, &s, 512, &mut head)
                    };
                    out.decoded.push(result.map(|()| {
                        head.fields
                            .iter()
                            .map(|f| (head.get(f.name).to_vec(), head.get(f.value).to_vec()))
                            .collect()
                    }));
                    out.heads.push(s);
                }
                Ok(Some(RequestEvent::Data(d))) => out.body.extend_from_slice(&d),
                Ok(None) => break,
                Err(e) => {
                    out.end = Err(e);
                    return out;
                }
            }
            // Stay bounded: what is held is at most a frame header and a HEADERS frame.
            assert!(buf.len() <= 256 + 16 + step, "{} bytes held", buf.len());
        }
    }
    out.end = stream.finish(&buf);
    out
}

fn sample_request() -> Vec<u8> {
    let mut section = Vec::new();
    let mut encoder = Encoder::new();
    encoder.begin(&mut section);
    for (name, value) in [
        (&b":method"[..], &b"POST"[..]),
        (b":scheme", b"https"),
        (b":authority", b"a.example"),
        (b":path", b"/x?y=1"),
        (b"content-type", b"text/plain"),
        (b"x-id", b"7"),
    ] {
        encoder.field(name, value, Indexing::Once, &mut section);
    }
    let mut out = Vec::new();
    frame::write_headers(&section, &mut out);
    frame::write_frame_header(0x21, 1, &mut out);
    out.push(b'?');
    frame::write_data_header(3, &mut out);
    out.extend_from_slice(b"abc");
    let mut trailers = Vec::new();
    encoder.begin(&mut trailers);
    encoder.field(b"x-sum", b"9", Indexing::Never, &mut trailers);
    frame::write_headers(&trailers, &mut out);
    out
}

#[test]
fn request_stream_mutations_agree_whole_and_bytewise() {
    let seed = sample_request();
    let whole = request_stream(&seed, 0);
    assert_eq!(whole.end, Ok(()));
    assert_eq!(whole.body, b"abc");
    let mut cases = 0;
    each_mutation(&seed, |m| {
        let at_once = request_stream(m, 0);
        assert_eq!(at_once, request_stream(m, 1), "{m:02x?}");
        assert_eq!(at_once, request_stream(m, 7), "{m:02x?}");
        cases += 1;
    });
    assert!(cases > 1000);
    let mut rng = Rng::from_env();
    for _ in 0..5_000 {
        let mut m = seed.clone();
        mutate(&mut rng, &mut m);
        mutate(&mut rng, &mut m);
        assert_eq!(request_stream(&m, 0), request_stream(&m, 1), "{m:02x?}");
    }
}

/// What a control stream said, fed in pieces of `step` bytes (0: at once).
fn control_stream(bytes: &[u8], step: usize) -> (Vec<ControlEvent>, Option<Error>) {
    let mut stream = ControlStream::new(64);
    let mut buf = BytesMut::new();
    let mut events = Vec::new();
    let step = if step == 0 { bytes.len().max(1) } else { step };
    for piece in bytes.chunks(step) {
        buf.extend_from_slice(piece);
        loop {
            match stream.decode(&mut buf) {
                Ok(Some(e)) => events.push(e),
                Ok(None) => break,
                Err(e) => return (events, Some(e)),
            }
        }
    }
    (events, None)
}

#[test]
fn control_stream_mutations_agree_whole_and_bytewise() {
    let mut seed = Vec::new();
    let settings = Settings {
        max_field_section_size: Some(1000),
        enable_connect_protocol: true,
        ..Settings::default()
    };
    frame::write_settings(&settings, &mut seed);
    frame::write_frame_header(0x5f, 2, &mut seed);
    seed.extend_from_slice(b"..");
    frame::write_goaway(100, &mut seed);
    frame::write_frame_header(frame::kind::MAX_PUSH_ID, 1, &mut seed);
    seed.push(3);
    assert_eq!(control_stream(&seed, 0).0.len(), 3);
    each_mutation(&seed, |m| {
        let at_once = control_stream(m, 0);
        assert_eq!(at_once, control_stream(m, 1), "{m:02x?}");
        if let Some(e) = at_once.1 {
            assert!(e.is_connection_error());
        }
    });
}

fn fields_of(section: &[u8]) -> Result<Lines, Error> {
    let mut fields = Vec::new();
    Decoder::new().decode(section, |f| {
        fields.push((f.name.to_vec(), f.value.to_vec(), f.never_indexed));
        Ok(())
    })?;
    Ok(fields)
}

/// Whatever the decoder accepts, our encoder writes back as a section that decodes to the
/// same fields, N bits included.
#[test]
fn qpack_mutations_decode_or_fail_and_round_trip() {
    let mut seed = Vec::new();
    let mut encoder = Encoder::new();
    encoder.begin(&mut seed);
    encoder.status(200, &mut seed);
    encoder.status(299, &mut seed);
    encoder.field(
        b"content-type",
        b"application/json",
        Indexing::Remember,
        &mut seed,
    );
    encoder.field(b"cookie", b"a=b", Indexing::Never, &mut seed);
    encoder.field(
        b"x-long-header-name",
        b"value value",
        Indexing::Once,
        &mut seed,
    );
    encoder.field(b"x-secret", b"s", Indexing::Never, &mut seed);
    let check = |m: &[u8]| {
        let Ok(fields) = fields_of(m) else { return };
        let mut again = Vec::new();
        let mut encoder = Encoder::new();
        encoder.begin(&mut again);
        for (name, value, never) in &fields {
            let indexing = if *never {
                Indexing::Never
            } else {
                Indexing::Once
            };
            encoder.field(name, value, indexing, &mut again);
        }
        assert_eq!(fields_of(&again).as_ref(), Ok(&fields), "{m:02x?}");
    };
    each_mutation(&seed, check);
    let mut rng = Rng::from_env();
    for _ in 0..20_000 {
        let mut m = seed.clone();
        mutate(&mut rng, &mut m);
        check(&m);
    }
}
