//! Responses: a status, headers and a [`Body`], and the [`IntoResponse`] conversions handlers use.

use std::cell::RefCell;
use std::io;

use bytes::{Bytes, BytesMut};
use http::header::{HeaderName, HeaderValue};
use http::StatusCode;
use serde::Serialize;

use crate::body::Body;
use crate::json;

/// An HTTP response.
///
/// Building one allocates nothing beyond the body: `Content-Type` is a field, extra headers go
/// in a list that exists only once a header is added, and static bodies are borrowed.
///
/// ```
/// use volt_http::{Response, StatusCode};
/// let r = Response::text("created").with_status(StatusCode::CREATED).with_header("x-id", "7");
/// assert_eq!(r.status(), StatusCode::CREATED);
/// ```
#[derive(Debug)]
pub struct Response {
    pub(crate) status: StatusCode,
    pub(crate) content_type: Option<HeaderValue>,
    /// Headers besides `Content-Type`; boxed, and `None` until there is one, so the usual
    /// response is smaller to move and has no list to drop.
    #[allow(
        clippy::box_collection,
        reason = "the box is the point: 8 bytes in every response instead of a 24-byte Vec"
    )]
    pub(crate) headers: Option<Box<Vec<(HeaderName, HeaderValue)>>>,
    pub(crate) body: Body,
}

const TEXT: HeaderValue = HeaderValue::from_static("text/plain");
const TEXT_UTF8: HeaderValue = HeaderValue::from_static("text/plain; charset=utf-8");
const JSON: HeaderValue = HeaderValue::from_static("application/json");
const OCTETS: HeaderValue = HeaderValue::from_static("application/octet-stream");

impl Response {
    /// An empty response with `status`.
    pub fn new(status: StatusCode) -> Response {
        Response {
            status,
            content_type: None,
            headers: None,
            body: Body::empty(),
        }
    }

    /// 200 with `content_type` and `body`. Built whole, not by replacing the fields of
    /// [`Response::new`]'s: dropping the empty body it would replace is not free.
    fn ok(content_type: HeaderValue, body: Body) -> Response {
        Response {
            status: StatusCode::OK,
            content_type: Some(content_type),
            headers: None,
            body,
        }
    }

    /// 200 with a `text/plain` body. A `&'static str` is sent without copying.
    pub fn text(body: impl Into<Body>) -> Response {
        Response::ok(TEXT, body.into())
    }

    /// 200 with a `text/plain; charset=utf-8` body.
    pub fn text_utf8(body: impl Into<Body>) -> Response {
        Response::ok(TEXT_UTF8, body.into())
    }

    /// 200 with `value` serialized as `application/json`. A value that fails to serialize
    /// answers 500.
    pub fn json<T: Serialize + ?Sized>(value: &T) -> Response {
        thread_local! {
            /// Serializer output. Each body is split off its front as a `Bytes` that shares the
            /// allocation; once the bodies before it are dropped (HTTP/1 copies a body out as
            /// soon as the handler returns) the room is reused, so a JSON response allocates
            /// nothing. While a body is kept, its block (4 KiB) stays allocated, and the next
            /// bodies go to a new one.
            static SCRATCH: RefCell<BytesMut> = RefCell::new(BytesMut::with_capacity(SCRATCH_SIZE));
        }
        /// The scratch buffer's usual size.
        const SCRATCH_SIZE: usize = 4 * 1024;
        /// A larger body keeps its allocation to itself, instead of leaving it as scratch.
        const SCRATCH_MAX: usize = 64 * 1024;
        let serialized = SCRATCH.with(|scratch| {
            // Busy only if a `Serialize` impl itself makes a JSON response.
            let Ok(mut scratch) = scratch.try_borrow_mut() else {
                let mut body = BytesMut::new();
                return write_json(&mut body, value).map(|()| body.freeze());
            };
            // Empty, unless a `Serialize` impl panicked halfway through the last body on this
            // thread (a handler's panic is caught, and the thread serves on).
            scratch.clear();
            let written = write_json(&mut scratch, value);
            let body = scratch.split().freeze();
            if body.len() > SCRATCH_MAX {
                *scratch = BytesMut::with_capacity(SCRATCH_SIZE);
            }
            written.map(|()| body)
        });
        match serialized {
            Ok(bytes) => Response::ok(JSON, bytes.into()),
            Err(e) => crate::Error::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("serializing the response: {e}"),
            )
            .into_response(),
        }
    }

    /// 200 with an `application/octet-stream` body.
    pub fn bytes(body: impl Into<Body>) -> Response {
        Response::ok(OCTETS, body.into())
    }

    /// Replaces the status.
    pub fn with_status(mut self, status: StatusCode) -> Response {
        self.status = status;
        self
    }

    /// Replaces the body.
    pub fn with_body(mut self, body: impl Into<Body>) -> Response {
        self.body = body.into();
        self
    }

    /// Sets `Content-Type`.
    pub fn with_content_type(mut self, value: HeaderValue) -> Response {
        self.content_type = Some(value);
        self
    }

    /// Adds a header.
    ///
    /// # Panics
    /// If `name` or `value` is not a valid header name or value; use [`Response::append_header`]
    /// with checked types for untrusted input.
    pub fn with_header(mut self, name: &'static str, value: &str) -> Response {
        let name = HeaderName::from_static(name);
        let value = HeaderValue::from_str(value).expect("invalid header value");
        self.append_header(name, value);
        self
    }

    /// Adds a header. `Content-Length`, `Transfer-Encoding`, `Date` and `Connection` are managed
    /// by the server and not sent as given, with one exception: a `Connection` that lists
    /// `close` makes the server send `Connection: close` and close the connection after this
    /// response. Use [`Response::with_content_type`] for the content type.
    pub fn append_header(&mut self, name: HeaderName, value: HeaderValue) {
        if name == http::header::CONTENT_TYPE {
            self.content_type = Some(value);
        } else {
            self.headers.get_or_insert_default().push((name, value));
        }
    }

    /// Whether a `Connection` header the handler set lists `close`.
    pub(crate) fn asks_to_close(&self) -> bool {
        self.headers()
            .iter()
            .filter(|(name, _)| *name == http::header::CONNECTION)
            .flat_map(|(_, value)| volt_proto::list_elements(value.as_bytes()))
            .any(|token| token.eq_ignore_ascii_case(b"close"))
    }

    /// The headers besides `Content-Type`, in the order they were added.
    pub(crate) fn headers(&self) -> &[(HeaderName, HeaderValue)] {
        self.headers.as_deref().map_or(&[], Vec::as_slice)
    }

    /// The status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The value of header `name` (the first if repeated).
    pub fn header(&self, name: &str) -> Option<&HeaderValue> {
        if name.eq_ignore_ascii_case("content-type") {
            return self.content_type.as_ref();
        }
        self.headers()
            .iter()
            .find(|(n, _)| n.as_str().eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    }

    /// The body.
    pub fn body(&self) -> &Body {
        &self.body
    }

    /// Takes the body, leaving an empty one.
    pub fn take_body(&mut self) -> Body {
        std::mem::replace(&mut self.body, Body::empty())
    }

    /// What answers a handler that returned this response, whose status is 1xx, as its final
    /// one. That is a bug in the handler: a 1xx is informational, never the end of an exchange
    /// (RFC 9110 §15.2; on HTTP/2 a 1xx ending its stream is malformed, RFC 9113 §8.1), and
    /// volt has no upgrade a 101 could switch to. Sent as it is, an HTTP/1 client would wait for
    /// a final response that never comes. It is logged and answered 500, as a panic is.
    pub(crate) fn informational_as_final(&self) -> Response {
        log::error!(
            "a handler returned {} as its final response (a 1xx status is informational \
             only); answering 500",
            self.status
        );
        crate::Error::new(StatusCode::INTERNAL_SERVER_ERROR, "internal server error")
            .into_response()
    }
}

/// Appends `value` as JSON to `out`: by volt's own serializer, or by serde_json for the
/// serde_json types only it can write (the value is then serialized a second time, from the
/// start, and what volt's serializer wrote of it is dropped).
fn write_json<T: Serialize + ?Sized>(out: &mut BytesMut, value: &T) -> Result<(), String> {
    let start = out.len();
    match json::write(out, value) {
        Err(json::Error::SerdeJsonType) => {
            out.truncate(start);
            serde_json::to_writer(Append(out), value).map_err(|e| e.to_string())
        }
        written => written.map_err(|e| e.to_string()),
    }
}

/// Writes into a `BytesMut` by appending (`bytes::buf::Writer` goes through `BufMut`, and
/// measured slower for the serializer's many small writes).
struct Append<'a>(&'a mut BytesMut);

impl io::Write for Append<'_> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.0.extend_from_slice(bytes);
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Converts a handler's return value into a [`Response`].
pub trait IntoResponse {
    /// Makes the response.
    fn into_response(self) -> Response;
}

impl IntoResponse for Response {
    fn into_response(self) -> Response {
        self
    }
}

impl IntoResponse for &'static str {
    fn into_response(self) -> Response {
        Response::text_utf8(self)
    }
}

impl IntoResponse for String {
    fn into_response(self) -> Response {
        Response::text_utf8(self)
    }
}

impl IntoResponse for Bytes {
    fn into_response(self) -> Response {
        Response::bytes(self)
    }
}

impl IntoResponse for Vec<u8> {
    fn into_response(self) -> Response {
        Response::bytes(self)
    }
}

impl IntoResponse for StatusCode {
    fn into_response(self) -> Response {
        Response::new(self)
    }
}

impl IntoResponse for () {
    fn into_response(self) -> Response {
        Response::new(StatusCode::OK)
    }
}

impl<T: IntoResponse> IntoResponse for (StatusCode, T) {
    fn into_response(self) -> Response {
        self.1.into_response().with_status(self.0)
    }
}

impl<T: IntoResponse, E: IntoResponse> IntoResponse for Result<T, E> {
    fn into_response(self) -> Response {
        match self {
            Ok(v) => v.into_response(),
            Err(e) => e.into_response(),
        }
    }
}

/// A JSON response: `Json(value)` serializes `value` as `application/json`, byte for byte what
/// `serde_json::to_writer` would write (by volt's own serializer, which checks strings for
/// characters to escape eight bytes at a time). A value that fails to serialize answers 500.
#[derive(Debug, Clone)]
pub struct Json<T>(pub T);

impl<T: Serialize> IntoResponse for Json<T> {
    fn into_response(self) -> Response {
        Response::json(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(r: &Response) -> &[u8] {
        r.body().as_bytes().expect("a full body")
    }

    /// Serializes by making a JSON response itself (the scratch buffer is then in use).
    struct Nested;

    impl Serialize for Nested {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let inner = Response::json(&[1, 2]);
            s.serialize_str(std::str::from_utf8(body(&inner)).unwrap())
        }
    }

    #[test]
    fn json_bodies_are_exactly_the_serialized_value() {
        let long = "x".repeat(100_000);
        assert_eq!(body(&Response::json(&long)).len(), 100_002);
        assert_eq!(body(&Response::json(&("a", 1))), br#"["a",1]"#);
        assert_eq!(body(&Response::json(&Nested)), br#""[1,2]""#);
        let r = Response::json(&serde_json::json!({"message": "Hello, World!"}));
        assert_eq!(body(&r), br#"{"message":"Hello, World!"}"#);
        assert_eq!(r.header("content-type").unwrap(), "application/json");
    }

    /// Serializes as a string the JSON response it makes of a `RawValue`, which goes to
    /// serde_json.
    struct NestedRaw;

    impl Serialize for NestedRaw {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let raw = serde_json::value::RawValue::from_string("[ 2 ]".into()).unwrap();
            let inner = Response::json(&[&raw]);
            s.serialize_str(std::str::from_utf8(body(&inner)).unwrap())
        }
    }

    #[test]
    fn json_bodies_made_while_another_is_being_made() {
        let raw = serde_json::value::RawValue::from_string("{ }".into()).unwrap();
        // The inner body goes to serde_json, the outer to volt's serializer, and the other way.
        assert_eq!(body(&Response::json(&(NestedRaw, 1))), br#"["[[ 2 ]]",1]"#);
        assert_eq!(body(&Response::json(&(Nested, &raw))), br#"["[1,2]",{ }]"#);
        assert_eq!(
            body(&Response::json(&(NestedRaw, &raw))),
            br#"["[[ 2 ]]",{ }]"#
        );
    }

    /// Fails after writing part of itself.
    struct FailsHalfway {
        panics: bool,
    }

    impl Serialize for FailsHalfway {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            use serde::ser::SerializeSeq;
            let mut seq = s.serialize_seq(None)?;
            seq.serialize_element("written before failing")?;
            if self.panics {
                panic!("a Serialize impl panics");
            }
            Err(serde::ser::Error::custom("a Serialize impl fails"))
        }
    }

    #[test]
    fn a_failed_json_body_leaves_nothing_for_the_next() {
        let r = Response::json(&FailsHalfway { panics: false });
        assert_eq!(r.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(body(&Response::json(&1)), b"1");
        // A handler's panic is caught by the connection, and the thread serves on.
        let caught = std::panic::catch_unwind(|| Response::json(&FailsHalfway { panics: true }));
        assert!(caught.is_err());
        assert_eq!(body(&Response::json(&1)), b"1");
        // serde_json's RawValue, handed to serde_json after a panic.
        let raw = serde_json::value::RawValue::from_string("[ 2 ]".into()).unwrap();
        let caught = std::panic::catch_unwind(|| Response::json(&FailsHalfway { panics: true }));
        assert!(caught.is_err());
        assert_eq!(body(&Response::json(&(1, &raw))), b"[1,[ 2 ]]");
    }
}
