//! A decoded request head made into volt's [`Request`] (HTTP/2's, and HTTP/3's, which share
//! [`Head`]), the limits of [`Config`] checked on the way; and the state machine's settings.

use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;

use http::header::{HeaderMap, HeaderName, HeaderValue};
use http::{Method, StatusCode, Version};
use volt_proto::h2::server::{Head, Settings};
use volt_proto::RequestHead;

use super::inbox::{H2Body, Inbox};
use crate::config::Config;
use crate::request::{take_parts, ConnectProtocol, Parts, RequestBody};
use crate::{Error, Request};

/// The state machine's settings from [`Config`].
pub(super) fn settings(config: &Config) -> Settings {
    Settings {
        max_concurrent_streams: config.h2_max_concurrent_streams,
        initial_window_size: config.h2_initial_stream_window,
        connection_window_size: config.h2_initial_connection_window,
        max_header_list_size: config.h2_max_header_list_size,
        max_frame_size: config.h2_max_frame_size,
        max_control_frames: config.h2_max_control_frames,
        max_reset_streams: config.h2_max_reset_streams,
        // WebSocket over HTTP/2 (RFC 8441) opens with an extended CONNECT.
        enable_connect_protocol: true,
    }
}

/// Builds volt's [`Request`] from a decoded head: the head's buffer is copied into a pooled
/// [`Parts`] as an HTTP/1 head would be, the target being `:path` (`:authority` for a plain
/// CONNECT). An extended CONNECT's `:protocol` goes with it ([`Request::protocol`]).
pub(super) fn to_request(
    head: &Head,
    inbox: Option<Rc<RefCell<Inbox>>>,
    remote: SocketAddr,
    config: &Config,
) -> Result<(Request, Rc<Parts>), Error> {
    let parts = head_parts(head, Version::HTTP_2, remote, config)?;
    let body = match inbox {
        None => RequestBody::empty(),
        Some(inbox) => RequestBody::h2(H2Body {
            inbox,
            received: 0,
            max: config.max_body_bytes,
            timeout: config.body_read_timeout,
        }),
    };
    let mut req = Request::from_parts(parts.clone(), body);
    note_protocol(head, &mut req);
    Ok((req, parts))
}

/// Gives `req` its extended CONNECT's `:protocol` and `:scheme` (RFC 8441 §4, RFC 9220 §3),
/// if `head` has one: what [`Request::protocol`] and the WebSocket handshake look at.
pub(crate) fn note_protocol(head: &Head, req: &mut Request) {
    if let Some(protocol) = head.protocol {
        // The codec let only a token through: ASCII.
        let text = |span| String::from_utf8_lossy(head.get(span)).into();
        req.insert_extension(ConnectProtocol {
            protocol: text(protocol),
            scheme: text(head.scheme),
        });
    }
}

/// What a request's method makes of its response, on HTTP/2 and HTTP/3 alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RequestKind {
    Other,
    /// No body in the response.
    Head,
    /// A CONNECT (plain, or extended for another protocol): no `content-length` in a 2xx.
    Connect,
    /// A WebSocket's extended CONNECT (RFC 8441, RFC 9220): its 200 opens the stream to its
    /// session.
    WebSocket,
}

impl RequestKind {
    pub(crate) fn of(head: &Head) -> RequestKind {
        match head.get(head.method) {
            b"HEAD" => RequestKind::Head,
            b"CONNECT" => match head.protocol {
                Some(p) if head.get(p).eq_ignore_ascii_case(b"websocket") => RequestKind::WebSocket,
                _ => RequestKind::Connect,
            },
            _ => RequestKind::Other,
        }
    }

    /// Whether a response with `status` makes the stream a tunnel: a 2xx to CONNECT, which
    /// has no `content-length` (RFC 9110 §9.3.6).
    pub(crate) fn tunnels(self, status: StatusCode) -> bool {
        status.is_success() && matches!(self, RequestKind::Connect | RequestKind::WebSocket)
    }
}

/// A request's head from a decoded HTTP/2 or HTTP/3 head (the two share [`Head`]), checked
/// against `config`'s limits (431, 414, 413 for a declared length) and HTTP/1's rules for
/// the target (400).
pub(crate) fn head_parts(
    head: &Head,
    version: Version,
    remote: SocketAddr,
    config: &Config,
) -> Result<Rc<Parts>, Error> {
    if head.oversized || head.fields.len() > config.max_headers {
        return Err(Error::new(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            "request header fields too large",
        ));
    }
    let method = Method::from_bytes(head.get(head.method))
        .map_err(|_| Error::bad_request("invalid method"))?;
    // An extended CONNECT (RFC 8441 §4) has a `:path`, its target as any request's.
    let plain_connect = method == Method::CONNECT && head.protocol.is_none();
    let target = match head.authority {
        Some(authority) if plain_connect => authority,
        _ => head.path,
    };
    if !target_ok(&method, plain_connect, head.get(target)) {
        return Err(Error::bad_request("invalid request target"));
    }
    if (target.end - target.start) as usize > config.max_uri_bytes {
        return Err(Error::new(
            StatusCode::URI_TOO_LONG,
            format!("request target over {} bytes", config.max_uri_bytes),
        ));
    }
    if let Some(n) = head.content_length.filter(|&n| n > config.max_body_bytes) {
        return Err(Error::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "request body of {n} bytes is over the limit of {}",
                config.max_body_bytes
            ),
        ));
    }
    let mut parts = take_parts();
    let p = Rc::get_mut(&mut parts).expect("a pooled head is unique");
    p.parsed = RequestHead {
        method,
        version,
        target,
        headers: head.fields.clone(),
        head_len: head.buf.len(),
        body: volt_proto::BodyKind::Empty,
        keep_alive: true,
        expect_continue: false,
    };
    p.finish(&head.buf, Some(remote));
    Ok(parts)
}

/// Whether `target` (`:path`, `:authority` for a plain CONNECT) is one HTTP/1's parser would admit:
/// visible ASCII without a `#` (HPACK carries any byte), and a `:path` in the origin form, or
/// `*` for OPTIONS (RFC 9113 §8.3.1). The router and [`Request`] rely on that.
fn target_ok(method: &Method, plain_connect: bool, target: &[u8]) -> bool {
    let form =
        plain_connect || target.starts_with(b"/") || (target == b"*" && *method == Method::OPTIONS);
    form && target.iter().all(|&b| b.is_ascii_graphic() && b != b'#')
}

/// Trailer fields as a [`HeaderMap`] (fields that are not valid there are left out).
pub(crate) fn header_map(head: &Head) -> HeaderMap {
    let mut map = HeaderMap::new();
    for f in &head.fields {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(head.get(f.name)),
            HeaderValue::from_bytes(head.get(f.value)),
        ) {
            map.append(name, value);
        }
    }
    map
}
