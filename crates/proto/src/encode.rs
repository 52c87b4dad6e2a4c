//! The write side: start lines, header fields and chunks appended to a `Vec<u8>`.
//!
//! No `fmt` machinery: numbers go through `itoa` or a small hex writer, and the status lines
//! of common responses are whole static byte strings.
//!
//! These functions trust their input. Names and values must already be valid field bytes
//! (`HeaderName::as_str` and `HeaderValue::as_bytes` are); a CR or LF in a value written here
//! would let the value end the line and inject fields.

use http::{HeaderMap, Method, StatusCode, Version};

/// The HTTP/2 connection preface (RFC 9113 §3.4).
pub const H2_PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Whether `buf` starts with at least three bytes of the HTTP/2 connection preface (or all of
/// it): enough to tell an h2 client from an HTTP/1 one before the whole preface arrives.
pub fn is_h2_preface(buf: &[u8]) -> bool {
    let n = buf.len().min(H2_PREFACE.len());
    n >= 3 && buf[..n] == H2_PREFACE[..n]
}

/// `"HTTP/1.1 "` or `"HTTP/1.0 "`. HTTP/1 can only carry these two versions on the wire, so
/// any version other than 1.0 is written as 1.1.
fn version_prefix(version: Version) -> &'static [u8] {
    if version == Version::HTTP_10 {
        b"HTTP/1.0 "
    } else {
        b"HTTP/1.1 "
    }
}

fn version_str(version: Version) -> &'static [u8] {
    if version == Version::HTTP_10 {
        b"HTTP/1.0"
    } else {
        b"HTTP/1.1"
    }
}

/// Expands to a `match` from status code to the whole HTTP/1.1 status line.
macro_rules! status_lines {
    ($code:expr; $($n:literal => $reason:literal,)*) => {
        match $code {
            $($n => Some(concat!("HTTP/1.1 ", $n, " ", $reason, "\r\n").as_bytes()),)*
            _ => None,
        }
    };
}

/// The precomputed HTTP/1.1 status line for common codes.
fn http11_status_line(code: u16) -> Option<&'static [u8]> {
    status_lines! { code;
        100 => "Continue",
        101 => "Switching Protocols",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        206 => "Partial Content",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        411 => "Length Required",
        413 => "Payload Too Large",
        414 => "URI Too Long",
        415 => "Unsupported Media Type",
        417 => "Expectation Failed",
        422 => "Unprocessable Entity",
        426 => "Upgrade Required",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
    }
}

/// Appends `HTTP/1.x SP code SP reason CRLF`. The reason is the canonical one, or empty for
/// codes without one (the SP before it stays, as the grammar requires).
pub fn write_status_line(dst: &mut Vec<u8>, version: Version, status: StatusCode) {
    if version != Version::HTTP_10 {
        if let Some(line) = http11_status_line(status.as_u16()) {
            dst.extend_from_slice(line);
            return;
        }
    }
    dst.extend_from_slice(version_prefix(version));
    dst.extend_from_slice(status.as_str().as_bytes());
    dst.push(b' ');
    dst.extend_from_slice(status.canonical_reason().unwrap_or("").as_bytes());
    dst.extend_from_slice(b"\r\n");
}

/// Appends `name: value CRLF`.
#[inline]
pub fn write_header(dst: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    debug_assert!(!value.contains(&b'\r') && !value.contains(&b'\n'));
    dst.reserve(name.len() + value.len() + 4);
    dst.extend_from_slice(name);
    dst.extend_from_slice(b": ");
    dst.extend_from_slice(value);
    dst.extend_from_slice(b"\r\n");
}

/// Appends `content-length: N CRLF`.
#[inline]
pub fn write_content_length(dst: &mut Vec<u8>, len: u64) {
    let mut digits = itoa::Buffer::new();
    dst.extend_from_slice(b"content-length: ");
    dst.extend_from_slice(digits.format(len).as_bytes());
    dst.extend_from_slice(b"\r\n");
}

/// Appends `method SP target SP HTTP/1.x CRLF`.
pub fn write_request_line(dst: &mut Vec<u8>, method: &Method, target: &[u8], version: Version) {
    dst.extend_from_slice(method.as_str().as_bytes());
    dst.push(b' ');
    dst.extend_from_slice(target);
    dst.push(b' ');
    dst.extend_from_slice(version_str(version));
    dst.extend_from_slice(b"\r\n");
}

/// Appends one chunk: `size-in-hex CRLF data CRLF`. Empty data writes nothing, since a
/// zero-size chunk would end the body.
pub fn write_chunk(dst: &mut Vec<u8>, data: &[u8]) {
    if data.is_empty() {
        return;
    }
    dst.reserve(data.len() + 20);
    write_hex(dst, data.len() as u64);
    dst.extend_from_slice(b"\r\n");
    dst.extend_from_slice(data);
    dst.extend_from_slice(b"\r\n");
}

/// Appends the last chunk and the trailer section: `0 CRLF [trailer fields] CRLF`.
pub fn write_last_chunk(dst: &mut Vec<u8>, trailers: Option<&HeaderMap>) {
    dst.extend_from_slice(b"0\r\n");
    for (name, value) in trailers.into_iter().flatten() {
        write_header(dst, name.as_str().as_bytes(), value.as_bytes());
    }
    dst.extend_from_slice(b"\r\n");
}

/// Appends `n` in lowercase hex without leading zeros.
fn write_hex(dst: &mut Vec<u8>, n: u64) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digits = (64 - (n | 1).leading_zeros()).div_ceil(4) as usize;
    let mut buf = [0u8; 16];
    for (i, slot) in buf[..digits].iter_mut().rev().enumerate() {
        *slot = HEX[((n >> (4 * i)) & 0xf) as usize];
    }
    dst.extend_from_slice(&buf[..digits]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex() {
        for (n, want) in [
            (0u64, "0"),
            (1, "1"),
            (0xf, "f"),
            (0x10, "10"),
            (0xabc, "abc"),
            (u64::MAX, "ffffffffffffffff"),
        ] {
            let mut out = Vec::new();
            write_hex(&mut out, n);
            assert_eq!(out, want.as_bytes(), "{n:#x}");
        }
    }

    #[test]
    fn precomputed_lines_match_the_generic_path() {
        for code in 100..=599u16 {
            let status = StatusCode::from_u16(code).unwrap();
            if let Some(line) = http11_status_line(code) {
                let reason = status.canonical_reason().unwrap();
                assert_eq!(line, format!("HTTP/1.1 {code} {reason}\r\n").as_bytes());
            }
        }
    }
}
