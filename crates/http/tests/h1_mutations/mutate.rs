//! The seed requests and how a case mutates them.

use std::fmt::Write as _;

use crate::common::XorShift;

pub(crate) const SEEDS: &[&[u8]] = &[
    b"GET /echo?x=1&y=two HTTP/1.1\r\nHost: t\r\nAccept: */*\r\n\r\n",
    b"HEAD /stream HTTP/1.1\r\nHost: t\r\n\r\n",
    b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 11\r\nContent-Type: text/plain\r\n\r\nhello world",
    b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6;a=\"q\"\r\n world\r\n0\r\nX-Trailer: yes\r\n\r\n",
    b"POST /echo HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\nbody",
    b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /echo HTTP/1.0\r\n\r\n",
    b"GET /stream HTTP/1.1\r\nHost: t\r\n\r\nPOST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc",
    b"GET http://t/echo?q=1 HTTP/1.1\r\nHost: t\r\n\r\n",
    b"OPTIONS * HTTP/1.1\r\nHost: t\r\n\r\n",
    b"GET /panic HTTP/1.1\r\nHost: t\r\n\r\n",
    b"PUT / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\nGET / HTTP/1.1\r\nHost: t\r\n\r\n",
    b"GET /stream HTTP/1.0\r\n\r\n",
    b"POST /echo HTTP/1.0\r\nContent-Length: 5\r\nConnection: keep-alive\r\n\r\nhelloGET / HTTP/1.0\r\n\r\n",
    b"POST /echo?big HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n1f4\r\n\
      0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789\
      0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789\
      0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789\
      0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789\
      0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789\
      \r\n10\r\n0123456789abcdef\r\n0\r\nA: 1\r\nB: 2\r\n\r\n",
    b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
    b"POST /echo HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Length: 3\r\n\r\nabcGET / HTTP/1.1\r\nHost: t\r\n\r\n",
    b"HEAD /stream HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n",
    b"POST /slow HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nslow\r\n0\r\n\r\nPOST /slow HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nokGET / HTTP/1.1\r\nHost: t\r\n\r\n",
    b"POST /slow HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\nwait",
    b"GET / HTTP/1.1\r\nHost: t\r\n\r\nHEAD /echo HTTP/1.1\r\nHost: t\r\n\r\nPOST /stream HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi",
];

/// Header lines a mutation may add.
pub(crate) const EXTRA_LINES: &[&[u8]] = &[
    b"Transfer-Encoding: chunked",
    b"Transfer-Encoding: gzip, chunked",
    b"Transfer-Encoding: chunked, chunked",
    b"Content-Length: 5",
    b"Content-Length: 3, 3",
    b"Content-Length: 2000",
    b"Host: u",
    b"Host: a b",
    b"Expect: 100-continue",
    b"Expect: nothing",
    b"Connection: close",
    b"Connection: keep-alive",
    b" folded",
    b"\tfolded",
    b"X-Ctl: a\x01b",
    b"X-High: \xff\xfe",
    b"X-Nul: \x00",
    b"Bad Name: x",
    b"Name : x",
    b": empty",
    b"X-Empty:",
];

/// What a number in the request may become.
pub(crate) const NUMBERS: &[&[u8]] = &[
    b"0",
    b"1",
    b"-1",
    b"+5",
    b"0x10",
    b"99999999999999999999",
    b"ffffffffffffffffff",
    b"10000000000000000",
    b"fffffff",
    b"1e3",
    b"",
    b" 7",
    b"5 6",
    b"5, 6",
    b"3;",
    b"G",
    b"1001",
    b"999",
];

pub(crate) fn mutate(rng: &mut XorShift, req: &mut Vec<u8>) {
    let len = req.len();
    match rng.range(0, 16) {
        // Flip a bit.
        0 if len > 0 => {
            let i = rng.range(0, len - 1);
            req[i] ^= 1 << rng.range(0, 7);
        }
        // Insert a byte, often a troublesome one.
        1 => {
            const SPECIAL: &[u8] = b"\x00\r\n \t:;\x7f\x80\xff\"%#?/\\";
            let b = match rng.range(0, 2) {
                0 => rng.next() as u8,
                _ => SPECIAL[rng.range(0, SPECIAL.len() - 1)],
            };
            req.insert(rng.range(0, len), b);
        }
        // Delete a few bytes.
        2 if len > 0 => {
            let i = rng.range(0, len - 1);
            let n = rng.range(1, 3).min(len - i);
            req.drain(i..i + n);
        }
        // Duplicate a line.
        3 => {
            let lines = line_ranges(req);
            let (s, e) = lines[rng.range(0, lines.len() - 1)];
            let line = req[s..e].to_vec();
            req.splice(e..e, line);
        }
        // Drop a line.
        4 => {
            let lines = line_ranges(req);
            let (s, e) = lines[rng.range(0, lines.len() - 1)];
            req.drain(s..e);
        }
        // One CRLF (or every one) becomes LF, or a bare CR.
        5 => {
            let crlfs: Vec<usize> = positions(req, b"\r\n");
            if crlfs.is_empty() {
                return;
            }
            match rng.range(0, 3) {
                0 => {
                    for &i in crlfs.iter().rev() {
                        req.remove(i);
                    }
                }
                1 => {
                    let i = crlfs[rng.range(0, crlfs.len() - 1)];
                    req.remove(i + 1);
                }
                _ => {
                    let i = crlfs[rng.range(0, crlfs.len() - 1)];
                    req.remove(i);
                }
            }
        }
        // A number (a length, a chunk size) becomes another.
        6 | 7 => {
            let runs = number_runs(req);
            if runs.is_empty() {
                return;
            }
            let (s, e) = runs[rng.range(0, runs.len() - 1)];
            let with: Vec<u8> = match rng.range(0, 2) {
                0 => rng.range(0, 1100).to_string().into_bytes(),
                1 => format!("{:x}", rng.range(0, 0x500)).into_bytes(),
                _ => NUMBERS[rng.range(0, NUMBERS.len() - 1)].to_vec(),
            };
            req.splice(s..e, with);
        }
        // Add a header line after the request line (or after any line).
        8 | 9 => {
            let lines = line_ranges(req);
            let at = match rng.range(0, 2) {
                0 => lines[0].1,
                _ => lines[rng.range(0, lines.len() - 1)].1,
            };
            let mut line = EXTRA_LINES[rng.range(0, EXTRA_LINES.len() - 1)].to_vec();
            line.extend_from_slice(b"\r\n");
            req.splice(at..at, line);
        }
        // Something over a limit: a long target, a long field, many fields, a large body.
        10 => {
            let lines = line_ranges(req);
            match rng.range(0, 3) {
                0 => {
                    let at = find(req, b"/").map_or(0, |i| i + 1);
                    let n = rng.range(200, 400);
                    req.splice(at..at, std::iter::repeat_n(b'a', n));
                }
                1 => {
                    let mut line = b"X-Long: ".to_vec();
                    line.extend(std::iter::repeat_n(b'v', rng.range(700, 1100)));
                    line.extend_from_slice(b"\r\n");
                    req.splice(lines[0].1..lines[0].1, line);
                }
                2 => {
                    let mut many = Vec::new();
                    for i in 0..rng.range(12, 20) {
                        write!(WriteBytes(&mut many), "X-{i}: {i}\r\n").unwrap();
                    }
                    req.splice(lines[0].1..lines[0].1, many);
                }
                _ => {
                    // A body of 1,001 to 1,200 bytes, by length.
                    let n = rng.range(1001, 1200);
                    if let Some(head_end) = find(req, b"\r\n\r\n") {
                        let mut head = req[..head_end + 2].to_vec();
                        write!(WriteBytes(&mut head), "Content-Length: {n}\r\n\r\n").unwrap();
                        head.extend(std::iter::repeat_n(b'b', n));
                        *req = head;
                    }
                }
            }
        }
        // Cut the request short.
        11 if len > 1 => req.truncate(rng.range(1, len - 1)),
        // Change a byte's case, or swap two neighbours.
        12 if len > 1 => {
            let i = rng.range(0, len - 2);
            match rng.range(0, 1) {
                0 => req[i] ^= 0x20,
                _ => req.swap(i, i + 1),
            }
        }
        // Non-ASCII or control bytes in a run.
        13 => {
            let at = rng.range(0, len);
            let n = rng.range(1, 4);
            let bytes: Vec<u8> = (0..n).map(|_| 0x80 | rng.next() as u8).collect();
            req.splice(at..at, bytes);
        }
        // Whitespace somewhere it may not be.
        14 => {
            let at = rng.range(0, len);
            let ws: &[u8] = [&b" "[..], b"\t", b"  ", b"\r\n ", b" \r\n"][rng.range(0, 4)];
            req.splice(at..at, ws.iter().copied());
        }
        // The request twice, leading empty lines, or a trailer section that grows.
        15 => match rng.range(0, 2) {
            0 => req.extend_from_within(..),
            1 => {
                let n = rng.range(1, 3);
                req.splice(0..0, b"\r\n".repeat(n));
            }
            _ => {
                if let Some(i) = find(req, b"\r\n0\r\n") {
                    let mut trailers = Vec::new();
                    for t in 0..rng.range(1, 20) {
                        write!(
                            WriteBytes(&mut trailers),
                            "T-{t}: {}\r\n",
                            "t".repeat(t * 10)
                        )
                        .unwrap();
                    }
                    let at = i + 5;
                    req.splice(at..at, trailers);
                }
            }
        },
        // Overwrite one byte with anything.
        _ if len > 0 => {
            let i = rng.range(0, len - 1);
            req[i] = rng.next() as u8;
        }
        _ => {}
    }
}

pub(crate) struct WriteBytes<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for WriteBytes<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

/// Each line as `start..end` including its LF (the last may have none).
pub(crate) fn line_ranges(buf: &[u8]) -> Vec<(usize, usize)> {
    let mut lines = Vec::new();
    let mut start = 0;
    for (i, &b) in buf.iter().enumerate() {
        if b == b'\n' {
            lines.push((start, i + 1));
            start = i + 1;
        }
    }
    if start < buf.len() || lines.is_empty() {
        lines.push((start, buf.len()));
    }
    lines
}

/// Runs of hex digits that stand alone (a length, a chunk size; not inside a word).
pub(crate) fn number_runs(buf: &[u8]) -> Vec<(usize, usize)> {
    let mut runs = Vec::new();
    let mut i = 0;
    while i < buf.len() {
        if buf[i].is_ascii_hexdigit() && (i == 0 || matches!(buf[i - 1], b' ' | b'\n' | b':')) {
            let s = i;
            while i < buf.len() && buf[i].is_ascii_hexdigit() {
                i += 1;
            }
            if i == buf.len() || matches!(buf[i], b'\r' | b'\n' | b';' | b',') {
                runs.push((s, i));
            }
        } else {
            i += 1;
        }
    }
    runs
}

pub(crate) fn positions(haystack: &[u8], needle: &[u8]) -> Vec<usize> {
    haystack
        .windows(needle.len())
        .enumerate()
        .filter(|(_, w)| *w == needle)
        .map(|(i, _)| i)
        .collect()
}

pub(crate) fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}
