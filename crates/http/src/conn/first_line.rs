//! The first line of a connection whose version did not parse: a malformed HTTP/1 request
//! line (answered 400), or not HTTP/1 at all (closed without an answer, RFC 9113 §3.4).

/// What a connection's first line, whose version did not parse, is.
pub(super) enum FirstLine {
    /// An HTTP/1 request line, malformed: its target has an HTTP/1 form (origin `/...`,
    /// asterisk, absolute `scheme://...`) or it ends in an HTTP/1 version.
    Http1,
    /// Not HTTP/1.
    Other,
    /// Not ended yet (and not longer than a request target may be): the rest decides.
    Unfinished,
}

pub(super) fn first_line(buf: &[u8], limits: &volt_proto::Limits) -> FirstLine {
    let end = buf.iter().position(|&b| b == b'\n');
    let line = &buf[..end.unwrap_or(buf.len())];
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let mut words = line.split(|&b| b == b' ');
    let target = words.nth(1).unwrap_or(b"");
    // The target is whole once a space follows it: its form alone may decide.
    let target_whole = words.next().is_some();
    let http1_target =
        target.starts_with(b"/") || target == b"*" || target.windows(3).any(|w| w == b"://");
    if end.is_none() && buf.len() <= limits.max_uri_len && !(target_whole && http1_target) {
        return FirstLine::Unfinished;
    }
    let version = line.rsplit(|&b| b == b' ').next().unwrap_or(b"");
    match http1_target || version.starts_with(b"HTTP/1.") {
        true => FirstLine::Http1,
        false => FirstLine::Other,
    }
}
