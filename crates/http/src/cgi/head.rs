//! The header block a script writes before its body (RFC 3875 §6), parsed into the response
//! the client gets. No I/O: bytes in, a [`Head`] or a reason to answer 502 out.

use http::header::{HeaderName, HeaderValue};
use http::StatusCode;

/// Where the header block ends in `buf`: the length of the block with its blank line, or
/// `None` if it has not ended yet. Lines end with LF or CRLF (§6.3: servers take either).
pub(super) fn end(buf: &[u8]) -> Option<usize> {
    let mut start = 0;
    while let Some(nl) = buf[start..].iter().position(|&b| b == b'\n') {
        let line = &buf[start..start + nl];
        if line.is_empty() || line == b"\r" {
            return Some(start + nl + 1);
        }
        start += nl + 1;
    }
    None
}

/// A script's response head, ready to become a [`Response`](crate::Response)'s.
#[derive(Debug)]
pub(super) struct Head {
    pub(super) status: StatusCode,
    pub(super) content_type: Option<HeaderValue>,
    /// `Content-Length`, if the script gave one: the body is then sent with it, else chunked.
    pub(super) content_length: Option<u64>,
    /// Every other field passed on, in order (`Location` among them).
    pub(super) fields: Vec<(HeaderName, HeaderValue)>,
}

/// Why a script's output is not a CGI response.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Malformed {
    /// Answered 502.
    Bad(String),
    /// A local redirect (§6.2.2: a `Location` that is a path, with no `Status`), which volt
    /// does not follow: answered 500.
    LocalRedirect,
}

fn bad(why: impl Into<String>) -> Malformed {
    Malformed::Bad(why.into())
}

/// Parses `block` (from [`end`], blank line included).
///
/// `Status` (§6.3.3) is three digits, optionally followed by a space and a reason phrase (which
/// is dropped: volt writes the standard one); 1xx is refused. A `Location` (§6.3.2) must be an
/// absolute URI (a client redirect: 302 unless `Status` says otherwise, §6.2.3, §6.2.4) or an
/// absolute path: with a `Status`, passed on as it is; without one it is a local redirect.
/// `Content-Type`, `Location`, `Status` and `Content-Length` may come once each, and at least
/// one of the first three must (§6.2). Field names must be tokens and values free of control
/// bytes; a line without a colon or a folded line is malformed.
pub(super) fn parse(block: &[u8]) -> Result<Head, Malformed> {
    let mut status = None;
    let mut content_type = None;
    let mut content_length = None;
    let mut location: Option<HeaderValue> = None;
    let mut fields = Vec::new();
    for line in block.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            break;
        }
        let colon = line
            .iter()
            .position(|&b| b == b':')
            .ok_or_else(|| bad("a header line without a colon"))?;
        let name = HeaderName::from_bytes(&line[..colon])
            .map_err(|_| bad("a header field name that is not a token"))?;
        let value = HeaderValue::from_bytes(line[colon + 1..].trim_ascii())
            .map_err(|_| bad(format!("control bytes in the value of `{name}`")))?;
        let once = |seen: bool| match seen {
            true => Err(bad(format!("`{name}` twice"))),
            false => Ok(()),
        };
        match name.as_str() {
            "status" => {
                once(status.is_some())?;
                status = Some(parse_status(value.as_bytes())?);
            }
            "content-type" => {
                once(content_type.is_some())?;
                content_type = Some(value);
            }
            "location" => {
                once(location.is_some())?;
                location = Some(value);
            }
            "content-length" => {
                once(content_length.is_some())?;
                let digits = value.as_bytes();
                let length = std::str::from_utf8(digits)
                    .ok()
                    .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
                    .and_then(|d| d.parse().ok())
                    .ok_or_else(|| bad("a bad Content-Length"))?;
                content_length = Some(length);
            }
            n if super::CONNECTION_FIELDS.contains(&n) => {}
            _ => fields.push((name, value)),
        }
    }
    let status = match (&location, status) {
        (Some(location), status) => {
            let target = location.as_bytes();
            if target.starts_with(b"/") {
                // §6.2.2: a local redirect is the `Location` alone; one with a `Status` is a
                // redirect with a relative target, which RFC 9110 §10.2.2 allows.
                status.ok_or(Malformed::LocalRedirect)?
            } else if is_absolute_uri(target) {
                status.unwrap_or(StatusCode::FOUND)
            } else {
                return Err(bad("a Location that is neither a URI nor a path"));
            }
        }
        (None, Some(status)) => status,
        (None, None) if content_type.is_some() => StatusCode::OK,
        (None, None) => return Err(bad("no Content-Type, Location or Status")),
    };
    if let Some(location) = location {
        fields.push((http::header::LOCATION, location));
    }
    Ok(Head {
        status,
        content_type,
        content_length,
        fields,
    })
}

/// `Status: 404 Not Found` (or `Status: 404`): the code.
fn parse_status(value: &[u8]) -> Result<StatusCode, Malformed> {
    let (code, rest) = value.split_at(value.len().min(3));
    let well_formed = code.len() == 3
        && code.iter().all(u8::is_ascii_digit)
        && (rest.is_empty() || rest[0] == b' ');
    match StatusCode::from_bytes(code) {
        Ok(status) if well_formed && !status.is_informational() => Ok(status),
        _ => Err(bad("a bad Status")),
    }
}

/// `scheme ":" ...` (RFC 3986 §3.1: a letter, then letters, digits, `+`, `-`, `.`).
fn is_absolute_uri(target: &[u8]) -> bool {
    let Some(colon) = target.iter().position(|&b| b == b':') else {
        return false;
    };
    let scheme = &target[..colon];
    scheme.first().is_some_and(u8::is_ascii_alphabetic)
        && scheme
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
}

#[cfg(test)]
mod tests {
    use super::{end, parse, Malformed};
    use http::StatusCode;

    #[test]
    fn the_block_ends_at_the_first_blank_line_with_either_line_end() {
        assert_eq!(end(b"Content-Type: text/plain\n\nbody"), Some(26));
        assert_eq!(end(b"Content-Type: text/plain\r\n\r\nbody"), Some(28));
        assert_eq!(end(b"A: b\r\n\nbody"), Some(7));
        assert_eq!(end(b"\nbody"), Some(1));
        assert_eq!(end(b"Content-Type: text/plain\r\n"), None);
        assert_eq!(end(b""), None);
    }

    #[test]
    fn fields_status_and_redirects() {
        let head = parse(b"Status: 201 Made\r\nContent-Type: a/b\r\nX-A: 1\r\nConnection: close\r\nContent-Length: 5\r\n\r\n").unwrap();
        assert_eq!(head.status, StatusCode::CREATED);
        assert_eq!(head.content_type.unwrap(), "a/b");
        assert_eq!(head.content_length, Some(5));
        assert_eq!(head.fields.len(), 1);
        assert_eq!(
            (head.fields[0].0.as_str(), head.fields[0].1.as_bytes()),
            ("x-a", &b"1"[..])
        );

        let head = parse(b"Location: https://example.com/x\n\n").unwrap();
        assert_eq!(head.status, StatusCode::FOUND);
        assert_eq!(head.fields[0].1, "https://example.com/x");
        let head = parse(b"Status: 301\nLocation: /moved\n\n").unwrap();
        assert_eq!(head.status, StatusCode::MOVED_PERMANENTLY);
        assert_eq!(
            parse(b"Location: /elsewhere\n\n").unwrap_err(),
            Malformed::LocalRedirect
        );
        assert_eq!(
            parse(b"Status: 204\n\n").unwrap().status,
            StatusCode::NO_CONTENT
        );
    }

    #[test]
    fn malformed_blocks_are_refused() {
        for block in [
            &b"X-Only: 1\n\n"[..],
            b"\n",
            b"Content-Type text/plain\n\n",
            b"Content-Type: a/b\n folded\n\n",
            b"Bad Name: 1\nContent-Type: a/b\n\n",
            b"Content-Type: a/\x01b\n\n",
            b"Content-Type: a/b\nContent-Type: c/d\n\n",
            b"Status: 20\n\n",
            b"Status: 200OK\n\n",
            b"Status: 099\n\n",
            b"Status: 100 Continue\n\n",
            b"Status: abc\n\n",
            b"Content-Type: a/b\nContent-Length: -1\n\n",
            b"Content-Type: a/b\nContent-Length: 1, 1\n\n",
            b"Location: relative/path\n\n",
        ] {
            assert!(
                matches!(parse(block), Err(Malformed::Bad(_))),
                "{:?}",
                String::from_utf8_lossy(block)
            );
        }
    }
}
