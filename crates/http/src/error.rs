//! The error a handler or an extractor returns: a status and a message for the client.

use std::fmt;

use http::{HeaderName, HeaderValue, StatusCode};

use crate::response::{IntoResponse, Response};

/// An HTTP error: the status to answer and a one-line message sent as the `text/plain` body.
///
/// Extractors on [`Request`](crate::Request) return it (a bad path parameter is a 400 that
/// names the parameter), and handlers can return `Result<T, Error>` and use `?`.
#[derive(Clone, PartialEq, Eq)]
pub struct Error {
    status: StatusCode,
    message: String,
    /// A header field the answer must carry (426's `Sec-WebSocket-Version`); boxed, as it is
    /// rare.
    header: Option<Box<(HeaderName, HeaderValue)>>,
}

impl Error {
    /// An error with `status` and `message`.
    pub fn new(status: StatusCode, message: impl Into<String>) -> Error {
        Error {
            status,
            message: message.into(),
            header: None,
        }
    }

    /// The same error, answered with `name: value` too.
    pub(crate) fn with_header(mut self, name: HeaderName, value: HeaderValue) -> Error {
        self.header = Some(Box::new((name, value)));
        self
    }

    /// 400 Bad Request with `message`.
    pub fn bad_request(message: impl Into<String>) -> Error {
        Error::new(StatusCode::BAD_REQUEST, message)
    }

    /// 404 Not Found.
    pub fn not_found() -> Error {
        Error::new(StatusCode::NOT_FOUND, "not found")
    }

    /// The status this error answers.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The message sent to the client.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.status, self.message)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Error({} {:?})", self.status.as_u16(), self.message)
    }
}

impl std::error::Error for Error {}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let mut body = self.message;
        body.push('\n');
        let mut response = Response::text(body).with_status(self.status);
        if let Some(h) = self.header {
            let (name, value) = *h;
            response.append_header(name, value);
        }
        response
    }
}

impl From<volt_proto::ParseError> for Error {
    fn from(e: volt_proto::ParseError) -> Error {
        Error::new(e.status(), e.to_string())
    }
}
