//! HTTP/3 and QPACK error codes (RFC 9114 §8.1, RFC 9204 §6), and the [`Error`] every
//! decoder here returns: a code, a reason, and whether it ends the connection or one stream.

use std::fmt;

/// An HTTP/3 application error code: what a stream reset (RESET_STREAM, STOP_SENDING) or a
/// connection close (CONNECTION_CLOSE) carries. A newtype over the varint value, not an enum:
/// codes we do not know, such as the reserved `0x1f * N + 0x21` ones (§8.1), must be carried,
/// not refused.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Code(pub u64);

impl Code {
    /// No error: closing the connection or a stream when nothing went wrong.
    pub const H3_NO_ERROR: Code = Code(0x0100);
    /// The peer broke the protocol in a way no more specific code covers.
    pub const H3_GENERAL_PROTOCOL_ERROR: Code = Code(0x0101);
    /// An internal error of the sender.
    pub const H3_INTERNAL_ERROR: Code = Code(0x0102);
    /// The peer created a stream that is not allowed (a second control stream, a push stream
    /// from a client).
    pub const H3_STREAM_CREATION_ERROR: Code = Code(0x0103);
    /// A stream the connection needs (control, QPACK encoder or decoder) was closed or reset.
    pub const H3_CLOSED_CRITICAL_STREAM: Code = Code(0x0104);
    /// A frame not allowed in the current state or on this stream.
    pub const H3_FRAME_UNEXPECTED: Code = Code(0x0105);
    /// A frame whose layout or size is wrong.
    pub const H3_FRAME_ERROR: Code = Code(0x0106);
    /// The peer is generating excessive load.
    pub const H3_EXCESSIVE_LOAD: Code = Code(0x0107);
    /// A stream or push ID used wrongly (a GOAWAY that increases, a MAX_PUSH_ID that shrinks).
    pub const H3_ID_ERROR: Code = Code(0x0108);
    /// A SETTINGS frame with a bad or repeated setting.
    pub const H3_SETTINGS_ERROR: Code = Code(0x0109);
    /// The control stream did not begin with SETTINGS.
    pub const H3_MISSING_SETTINGS: Code = Code(0x010a);
    /// The request was refused before any processing: safe to retry.
    pub const H3_REQUEST_REJECTED: Code = Code(0x010b);
    /// The request or its response is no longer wanted.
    pub const H3_REQUEST_CANCELLED: Code = Code(0x010c);
    /// The client's stream ended without a complete request.
    pub const H3_REQUEST_INCOMPLETE: Code = Code(0x010d);
    /// A malformed request or response (RFC 9114 §4.1.2).
    pub const H3_MESSAGE_ERROR: Code = Code(0x010e);
    /// A CONNECT tunnel's TCP connection was reset or failed.
    pub const H3_CONNECT_ERROR: Code = Code(0x010f);
    /// The request must be retried over HTTP/1.1.
    pub const H3_VERSION_FALLBACK: Code = Code(0x0110);
    /// A field section could not be decoded (RFC 9204 §6).
    pub const QPACK_DECOMPRESSION_FAILED: Code = Code(0x0200);
    /// An instruction on the peer's QPACK encoder stream could not be read or applied.
    pub const QPACK_ENCODER_STREAM_ERROR: Code = Code(0x0201);
    /// An instruction on the peer's QPACK decoder stream could not be read or applied.
    pub const QPACK_DECODER_STREAM_ERROR: Code = Code(0x0202);

    /// The code's name, if it is one of the above.
    pub fn name(self) -> Option<&'static str> {
        const H3: [&str; 17] = [
            "H3_NO_ERROR",
            "H3_GENERAL_PROTOCOL_ERROR",
            "H3_INTERNAL_ERROR",
            "H3_STREAM_CREATION_ERROR",
            "H3_CLOSED_CRITICAL_STREAM",
            "H3_FRAME_UNEXPECTED",
            "H3_FRAME_ERROR",
            "H3_EXCESSIVE_LOAD",
            "H3_ID_ERROR",
            "H3_SETTINGS_ERROR",
            "H3_MISSING_SETTINGS",
            "H3_REQUEST_REJECTED",
            "H3_REQUEST_CANCELLED",
            "H3_REQUEST_INCOMPLETE",
            "H3_MESSAGE_ERROR",
            "H3_CONNECT_ERROR",
            "H3_VERSION_FALLBACK",
        ];
        const QPACK: [&str; 3] = [
            "QPACK_DECOMPRESSION_FAILED",
            "QPACK_ENCODER_STREAM_ERROR",
            "QPACK_DECODER_STREAM_ERROR",
        ];
        match self.0 {
            0x0100..=0x0110 => Some(H3[(self.0 - 0x0100) as usize]),
            0x0200..=0x0202 => Some(QPACK[(self.0 - 0x0200) as usize]),
            _ => None,
        }
    }
}

impl fmt::Debug for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "Code({:#x})", self.0),
        }
    }
}

/// Whether an error ends the whole connection or only the stream it happened on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Close the connection with CONNECTION_CLOSE carrying the code (RFC 9114 §8).
    Connection,
    /// Reset the stream (RESET_STREAM and STOP_SENDING with the code); the connection goes
    /// on.
    Stream,
}

/// Why bytes from the peer were refused: the code to send, whether it is a connection or a
/// stream error, and a reason for logs and the CONNECTION_CLOSE reason phrase.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Error {
    code: Code,
    scope: Scope,
    reason: &'static str,
}

impl Error {
    /// A connection error: a server that finds one of its own (a critical stream the QUIC
    /// layer saw reset, a control stream it could not open) makes it here, so every error
    /// it acts on has one type.
    pub const fn connection(code: Code, reason: &'static str) -> Error {
        Error {
            code,
            scope: Scope::Connection,
            reason,
        }
    }

    /// A stream error (reset the stream with `code`; the connection goes on).
    pub const fn stream(code: Code, reason: &'static str) -> Error {
        Error {
            code,
            scope: Scope::Stream,
            reason,
        }
    }

    /// The code to close the connection or reset the stream with.
    pub fn code(&self) -> Code {
        self.code
    }

    /// Whether the connection or only the stream must end.
    pub fn scope(&self) -> Scope {
        self.scope
    }

    /// Whether this is a connection error.
    pub fn is_connection_error(&self) -> bool {
        self.scope == Scope::Connection
    }

    /// What was wrong, in a few words.
    pub fn reason(&self) -> &'static str {
        self.reason
    }

    /// The same error as a stream error (a frame too large on a request stream is the
    /// request's problem, on the control stream the connection's).
    pub(crate) fn on_stream(self) -> Error {
        Error {
            scope: Scope::Stream,
            ..self
        }
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} ({:?} error): {}",
            self.code, self.scope, self.reason
        )
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {:?}", self.reason, self.code)
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_say_their_scope() {
        let e = Error::stream(Code::H3_REQUEST_CANCELLED, "gone");
        assert_eq!((e.scope(), e.is_connection_error()), (Scope::Stream, false));
        let e = Error::connection(Code::H3_CLOSED_CRITICAL_STREAM, "closed");
        assert_eq!(
            (e.scope(), e.is_connection_error()),
            (Scope::Connection, true)
        );
        assert_eq!(e.on_stream().scope(), Scope::Stream);
        assert_eq!(e.to_string(), "closed: H3_CLOSED_CRITICAL_STREAM");
        assert_eq!(
            format!("{e:?}"),
            "H3_CLOSED_CRITICAL_STREAM (Connection error): closed"
        );
    }

    #[test]
    fn codes_have_their_rfc_values_and_names() {
        assert_eq!(Code::H3_NO_ERROR.0, 0x100);
        assert_eq!(Code::H3_VERSION_FALLBACK.0, 0x110);
        assert_eq!(Code::QPACK_DECODER_STREAM_ERROR.0, 0x202);
        assert_eq!(format!("{:?}", Code::H3_MESSAGE_ERROR), "H3_MESSAGE_ERROR");
        assert_eq!(format!("{:?}", Code(0x21)), "Code(0x21)");
        assert_eq!(Code(0x111).name(), None);
        assert_eq!(Code(0x203).name(), None);
    }
}
