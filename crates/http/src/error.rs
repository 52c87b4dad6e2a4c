//! The error a handler or an extractor returns: a status and a message for the client.

use std::fmt;

use http::StatusCode;

use crate::response::{IntoResponse, Response};

/// An HTTP error: the status to answer and a one-line message sent as the `text/plain` body.
///
/// Extractors on [`Request`](crate::Request) return it (a bad path parameter is a 400 that
/// names the parameter), and handlers can return `Result<T, Error>` and use `?`.
#[derive(Clone, PartialEq, Eq)]
pub struct Error {
    status: StatusCode,
    message: String,
}

impl Error {
    /// An error with `status` and `message`.
    pub fn new(status: StatusCode, message: impl Into<String>) -> Error {
        Error {
            status,
            message: message.into(),
        }
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
        Response::text(body).with_status(self.status)
    }
}

impl From<volt_proto::ParseError> for Error {
    fn from(e: volt_proto::ParseError) -> Error {
        Error::new(e.status(), e.to_string())
    }
}
