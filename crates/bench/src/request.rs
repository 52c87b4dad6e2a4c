//! The requests a run sends, encoded once before the run starts.
//!
//! Every request is turned into its exact wire bytes up front. The hot path then only picks a
//! byte range: [`RequestRing`] lays the requests out so that any `depth` consecutive requests of
//! the round robin (a pipelined batch) are one contiguous slice, written with one syscall.

use std::path::Path;

use volt_proto::{write_header, write_request_line, Method, Version};

use crate::target::Url;
use crate::Error;

/// One request to send: a method and a URL. Headers and body are shared by all requests of a
/// run (see [`ConfigBuilder::header`](crate::ConfigBuilder::header)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestLine {
    /// `GET`, `POST`, ... ; `None` uses the run's default method.
    pub method: Option<String>,
    /// An `http://` URL.
    pub url: String,
}

impl RequestLine {
    /// Parses a request list: one request per line, `URL` or `METHOD URL`. Blank lines and lines
    /// starting with `#` are skipped.
    ///
    /// ```
    /// let lines = volt_bench::RequestLine::parse_list("# warm\nGET http://h/a\nhttp://h/b\n").unwrap();
    /// assert_eq!(lines.len(), 2);
    /// assert_eq!(lines[0].method.as_deref(), Some("GET"));
    /// assert_eq!(lines[1].method, None);
    /// ```
    ///
    /// # Errors
    ///
    /// A line with more than two fields, or a list without any request.
    pub fn parse_list(text: &str) -> Result<Vec<RequestLine>, Error> {
        let mut out = Vec::new();
        for (number, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let fields: Vec<&str> = line.split_whitespace().collect();
            let request = match fields[..] {
                [url] => RequestLine {
                    method: None,
                    url: url.to_string(),
                },
                [method, url] => RequestLine {
                    method: Some(method.to_string()),
                    url: url.to_string(),
                },
                _ => {
                    return Err(Error::config(format!(
                        "request list line {}: expected `URL` or `METHOD URL`, got `{line}`",
                        number + 1
                    )))
                }
            };
            out.push(request);
        }
        if out.is_empty() {
            return Err(Error::config("the request list has no requests"));
        }
        Ok(out)
    }

    /// Reads and parses a request list file; see [`parse_list`](Self::parse_list).
    ///
    /// # Errors
    ///
    /// The file cannot be read, or its contents do not parse.
    pub fn read_list(path: &Path) -> Result<Vec<RequestLine>, Error> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::file(path, e))?;
        Self::parse_list(&text)
    }
}

/// What a request looks like on the wire, and what the response reader must know about it.
#[derive(Clone, Debug)]
pub(crate) struct EncodedRequest {
    pub bytes: Vec<u8>,
    /// A `HEAD` request: its response has no body whatever its headers say.
    pub head: bool,
}

/// Encodes one request: request line, `Host` (unless given), the extra headers,
/// `Content-Length` for a body, `Connection: close` when connections are not reused.
pub(crate) fn encode(
    method: &Method,
    url: &Url,
    headers: &[(String, String)],
    body: &[u8],
    close: bool,
) -> EncodedRequest {
    let mut out = Vec::with_capacity(128 + body.len());
    write_request_line(&mut out, method, url.target.as_bytes(), Version::HTTP_11);
    let has = |name: &str| headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
    if !has("host") {
        write_header(&mut out, b"Host", url.authority.as_bytes());
    }
    for (name, value) in headers {
        // The length is computed from the body; a given one could only disagree with it.
        if name.eq_ignore_ascii_case("content-length") {
            continue;
        }
        if close && name.eq_ignore_ascii_case("connection") {
            continue;
        }
        write_header(&mut out, name.as_bytes(), value.as_bytes());
    }
    if !body.is_empty() || (*method == Method::POST || *method == Method::PUT) {
        write_header(
            &mut out,
            b"Content-Length",
            body.len().to_string().as_bytes(),
        );
    }
    if close {
        write_header(&mut out, b"Connection", b"close");
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
    EncodedRequest {
        bytes: out,
        head: *method == Method::HEAD,
    }
}

/// Checks a header given by the user: a token name, a value without control bytes.
pub(crate) fn check_header(name: &str, value: &str) -> Result<(), Error> {
    let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    if name.is_empty() || !name.bytes().all(token) {
        return Err(Error::config(format!("bad header name `{name}`")));
    }
    if value.bytes().any(|b| (b < 0x20 && b != b'\t') || b == 0x7f) {
        return Err(Error::config(format!(
            "header `{name}` has a control character in its value"
        )));
    }
    Ok(())
}

/// The encoded requests of a run, laid out for the round robin.
///
/// `bytes` holds request `k % n` for `k` in `0..n + depth - 1`: every window of up to `depth`
/// consecutive requests starting at any `cursor < n` is one slice.
#[derive(Debug)]
pub(crate) struct RequestRing {
    bytes: Vec<u8>,
    /// `offsets[k]` is where entry `k` starts; one extra entry marks the end.
    offsets: Vec<usize>,
    head: Vec<bool>,
    depth: usize,
}

impl RequestRing {
    pub(crate) fn new(requests: &[EncodedRequest], depth: usize) -> RequestRing {
        assert!(!requests.is_empty() && depth >= 1);
        let n = requests.len();
        let entries = n + depth - 1;
        let mut bytes = Vec::new();
        let mut offsets = Vec::with_capacity(entries + 1);
        for k in 0..entries {
            offsets.push(bytes.len());
            bytes.extend_from_slice(&requests[k % n].bytes);
        }
        offsets.push(bytes.len());
        RequestRing {
            bytes,
            offsets,
            head: requests.iter().map(|r| r.head).collect(),
            depth,
        }
    }

    /// How many distinct requests the round robin cycles through.
    pub(crate) fn len(&self) -> usize {
        self.head.len()
    }

    /// The wire bytes of `count` requests starting at `cursor`.
    #[inline]
    pub(crate) fn window(&self, cursor: usize, count: usize) -> &[u8] {
        debug_assert!(cursor < self.len() && count <= self.depth);
        &self.bytes[self.offsets[cursor]..self.offsets[cursor + count]]
    }

    /// Whether request `cursor` is a `HEAD` request.
    #[inline]
    pub(crate) fn is_head(&self, cursor: usize) -> bool {
        self.head[cursor]
    }

    /// The cursor after `cursor` in the round robin.
    #[inline]
    pub(crate) fn advance(&self, cursor: usize, by: usize) -> usize {
        let next = cursor + by;
        if next >= self.len() {
            next % self.len()
        } else {
            next
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn encodes_exact_bytes() {
        let r = encode(
            &Method::GET,
            &url("http://127.0.0.1:8080/plaintext"),
            &[("Accept".into(), "*/*".into())],
            b"",
            false,
        );
        assert_eq!(
            r.bytes,
            b"GET /plaintext HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nAccept: */*\r\n\r\n"
        );
        assert!(!r.head);

        let r = encode(
            &Method::POST,
            &url("http://h/p"),
            &[("host".into(), "tfb".into())],
            b"hi",
            true,
        );
        assert_eq!(
            r.bytes,
            b"POST /p HTTP/1.1\r\nhost: tfb\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi"
        );
        assert!(encode(&Method::HEAD, &url("http://h/"), &[], b"", false).head);
    }

    #[test]
    fn ring_windows_are_contiguous_and_wrap() {
        let reqs: Vec<EncodedRequest> = ["a", "bb", "ccc"]
            .iter()
            .map(|s| EncodedRequest {
                bytes: s.as_bytes().to_vec(),
                head: *s == "bb",
            })
            .collect();
        let ring = RequestRing::new(&reqs, 4);
        assert_eq!(ring.window(0, 1), b"a");
        assert_eq!(ring.window(0, 3), b"abbccc");
        assert_eq!(ring.window(2, 4), b"cccabbccc");
        assert_eq!(ring.window(1, 4), b"bbcccabb");
        assert!(ring.is_head(1) && !ring.is_head(2));
        assert_eq!(ring.advance(2, 4), 0);
        assert_eq!(ring.advance(0, 1), 1);

        let one = RequestRing::new(&reqs[..1], 16);
        assert_eq!(one.window(0, 16), "a".repeat(16).as_bytes());
    }

    #[test]
    fn request_lists() {
        assert!(RequestLine::parse_list("# nothing\n\n").is_err());
        assert!(RequestLine::parse_list("GET http://h/ extra").is_err());
    }

    #[test]
    fn header_checks() {
        assert!(check_header("X-Id", "1").is_ok());
        assert!(check_header("Bad Name", "1").is_err());
        assert!(check_header("X", "a\r\nInjected: 1").is_err());
    }
}
