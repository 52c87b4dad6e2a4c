//! Why a message was rejected.

use std::fmt;

use http::StatusCode;

/// Why a message was rejected. Each variant names one rule of RFC 9110/9112 that the input broke.
///
/// [`status`](ParseError::status) is what a server answers before closing the connection. For
/// errors found while parsing a *response* the status is only a hint (a proxy would answer 502);
/// a client should simply treat the connection as broken.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParseError {
    /// The request line is not `method SP request-target SP HTTP-version CRLF`.
    BadRequestLine,
    /// The method contains a byte that is not a token character.
    InvalidMethod,
    /// The request target contains a control byte, a non-ASCII byte, whitespace or `#`, or has
    /// none of the forms of RFC 9112 §3.2 (`/path`, `scheme:...`, `*`, CONNECT's `host:port`).
    InvalidTarget,
    /// The HTTP version is malformed (not `HTTP/` DIGIT `.` DIGIT).
    InvalidVersion,
    /// A well-formed HTTP version other than 1.0 or 1.1 (e.g. `HTTP/2.0`, `HTTP/3`).
    VersionNotSupported,
    /// The HTTP/2 connection preface (`PRI * HTTP/2.0`) arrived on an HTTP/1 connection.
    Http2Preface,
    /// The status line of a response is malformed.
    InvalidStatusLine,
    /// A line ended with a bare CR or a bare LF instead of CRLF.
    InvalidLineEnding,
    /// A header field name is empty or contains a byte that is not a token character.
    InvalidHeaderName,
    /// A header field value contains a control byte (other than HTAB) or DEL.
    InvalidHeaderValue,
    /// Whitespace between a header field name and the colon.
    WhitespaceBeforeColon,
    /// A header line starts with whitespace (obsolete line folding).
    ObsFold,
    /// Both `Transfer-Encoding` and `Content-Length` in a request.
    TransferEncodingWithContentLength,
    /// Several `Content-Length` values that differ.
    ConflictingContentLength,
    /// A `Content-Length` that is not a plain decimal number fitting in `u64`.
    InvalidContentLength,
    /// An HTTP/1.1 request without `Host`.
    MissingHost,
    /// More than one `Host` field.
    DuplicateHost,
    /// A `Host` value that is not `host [":" port]`.
    InvalidHost,
    /// `Transfer-Encoding` in an HTTP/1.0 message.
    TransferEncodingOnHttp10,
    /// `Transfer-Encoding` is empty or one of its codings is malformed.
    InvalidTransferEncoding,
    /// The final transfer coding of a request is not `chunked`.
    ChunkedNotLast,
    /// `chunked` applied more than once.
    ChunkedTwice,
    /// A transfer coding other than `chunked` (e.g. `gzip`) in a request.
    UnsupportedTransferCoding,
    /// An HTTP/1.1 request's `Expect` lists something other than `100-continue`, the only
    /// expectation defined (RFC 9110 §10.1.1): answered with 417.
    UnsupportedExpectation,
    /// The head grew past [`Limits::max_head_bytes`](crate::Limits::max_head_bytes).
    HeadTooLarge,
    /// More than [`Limits::max_headers`](crate::Limits::max_headers) header fields.
    TooManyHeaders,
    /// The request target is longer than [`Limits::max_uri_len`](crate::Limits::max_uri_len).
    UriTooLong,
    /// A chunk size is not 1*HEXDIG.
    InvalidChunkSize,
    /// A chunk size of more than 16 hex digits.
    ChunkSizeOverflow,
    /// A chunk extension is not `;name[=token|quoted-string]`.
    InvalidChunkExtension,
    /// A chunk-size line is longer than [`MAX_CHUNK_LINE`](crate::MAX_CHUNK_LINE).
    ChunkLineTooLong,
    /// Chunk framing is broken: CRLF missing after chunk data, or a bare CR/LF in a chunk line.
    InvalidChunk,
    /// A trailer field is malformed.
    InvalidTrailer,
    /// The trailer section is larger than the head limits allow.
    TrailersTooLarge,
}

impl ParseError {
    /// What a server answers before closing the connection.
    pub fn status(&self) -> StatusCode {
        use ParseError::*;
        match self {
            UriTooLong => StatusCode::URI_TOO_LONG,
            HeadTooLarge | TooManyHeaders | TrailersTooLarge => {
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE
            }
            UnsupportedTransferCoding => StatusCode::NOT_IMPLEMENTED,
            UnsupportedExpectation => StatusCode::EXPECTATION_FAILED,
            VersionNotSupported | Http2Preface => StatusCode::HTTP_VERSION_NOT_SUPPORTED,
            InvalidStatusLine => StatusCode::BAD_GATEWAY,
            _ => StatusCode::BAD_REQUEST,
        }
    }

    /// The error for a head that `httparse` refused but the strict re-walk found no fault in.
    /// The re-walk accepts a subset of what `httparse` accepts, so this is a fallback that
    /// should not be reached; it still names the closest rule.
    pub(crate) fn from_httparse(err: httparse::Error) -> Self {
        match err {
            httparse::Error::HeaderName => ParseError::InvalidHeaderName,
            httparse::Error::HeaderValue => ParseError::InvalidHeaderValue,
            httparse::Error::NewLine => ParseError::InvalidLineEnding,
            httparse::Error::Status => ParseError::InvalidStatusLine,
            httparse::Error::Token => ParseError::BadRequestLine,
            httparse::Error::TooManyHeaders => ParseError::TooManyHeaders,
            httparse::Error::Version => ParseError::InvalidVersion,
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ParseError::*;
        let msg = match self {
            BadRequestLine => "malformed request line",
            InvalidMethod => "invalid byte in request method",
            InvalidTarget => "invalid request target",
            InvalidVersion => "malformed HTTP version",
            VersionNotSupported => "HTTP version not supported",
            Http2Preface => "HTTP/2 connection preface on an HTTP/1 connection",
            InvalidStatusLine => "malformed status line",
            InvalidLineEnding => "line not terminated by CRLF (bare CR or LF)",
            InvalidHeaderName => "invalid header field name",
            InvalidHeaderValue => "invalid byte in header field value",
            WhitespaceBeforeColon => "whitespace between header field name and colon",
            ObsFold => "header line starts with whitespace (obsolete line folding)",
            TransferEncodingWithContentLength => "both Transfer-Encoding and Content-Length",
            ConflictingContentLength => "conflicting Content-Length values",
            InvalidContentLength => "invalid Content-Length",
            MissingHost => "HTTP/1.1 request without Host",
            DuplicateHost => "more than one Host field",
            InvalidHost => "invalid Host value",
            TransferEncodingOnHttp10 => "Transfer-Encoding in an HTTP/1.0 message",
            InvalidTransferEncoding => "malformed Transfer-Encoding",
            ChunkedNotLast => "final transfer coding is not chunked",
            ChunkedTwice => "chunked transfer coding applied more than once",
            UnsupportedTransferCoding => "unsupported transfer coding",
            UnsupportedExpectation => "unsupported expectation (only 100-continue is)",
            HeadTooLarge => "message head too large",
            TooManyHeaders => "too many header fields",
            UriTooLong => "request target too long",
            InvalidChunkSize => "invalid chunk size",
            ChunkSizeOverflow => "chunk size too large",
            InvalidChunkExtension => "invalid chunk extension",
            ChunkLineTooLong => "chunk-size line too long",
            InvalidChunk => "malformed chunk framing",
            InvalidTrailer => "invalid trailer field",
            TrailersTooLarge => "trailer section too large",
        };
        f.write_str(msg)
    }
}

impl std::error::Error for ParseError {}
