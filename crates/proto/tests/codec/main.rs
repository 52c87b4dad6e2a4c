//! Codec tests on byte slices: every parsing rule, framing, encoding, and the same inputs fed
//! split at every byte boundary.

mod body;
mod date;
mod encode;
mod h3;
mod limits;
mod mutate;
mod request;
mod response;
mod split;

use volt_proto::{parse_request, parse_response, Limits, ParseError, RequestHead, ResponseHead};

/// Parses a request that must be complete and valid.
#[track_caller]
pub fn req(buf: &[u8]) -> RequestHead {
    match parse_request(buf, &Limits::default()) {
        Ok(Some(head)) => head,
        other => panic!("{:?}: {other:?}", String::from_utf8_lossy(buf)),
    }
}

/// Parses a request that must be rejected, and returns why.
#[track_caller]
pub fn req_err(buf: &[u8]) -> ParseError {
    req_err_with(buf, &Limits::default())
}

#[track_caller]
pub fn req_err_with(buf: &[u8], limits: &Limits) -> ParseError {
    match parse_request(buf, limits) {
        Err(e) => e,
        other => panic!(
            "{:?}: expected an error, got {other:?}",
            String::from_utf8_lossy(buf)
        ),
    }
}

#[track_caller]
pub fn res(buf: &[u8], head_request: bool) -> ResponseHead {
    match parse_response(buf, &Limits::default(), head_request) {
        Ok(Some(head)) => head,
        other => panic!("{:?}: {other:?}", String::from_utf8_lossy(buf)),
    }
}

#[track_caller]
pub fn res_err(buf: &[u8]) -> ParseError {
    match parse_response(buf, &Limits::default(), false) {
        Err(e) => e,
        other => panic!(
            "{:?}: expected an error, got {other:?}",
            String::from_utf8_lossy(buf)
        ),
    }
}

/// `Host` plus `extra` header lines on a GET, for rules about one field.
pub fn get_with(extra: &str) -> Vec<u8> {
    format!("GET / HTTP/1.1\r\nHost: example.com\r\n{extra}\r\n").into_bytes()
}
