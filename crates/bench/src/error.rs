//! Why a benchmark could not start or finish.

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;

/// Why a benchmark could not start or finish.
///
/// Errors about the request itself ([`is_usage`](Error::is_usage)) are found before any load
/// is sent: a bad URL, conflicting settings, a host that does not resolve or does not accept
/// connections. Failures of individual requests during a run are not errors: they are counted
/// in the [`Report`](crate::Report).
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// A setting is invalid or conflicts with another one. The message names them.
    Config(String),
    /// A URL could not be parsed or uses something unsupported.
    Url {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The host name did not resolve.
    Resolve {
        /// `host:port` as given.
        authority: String,
        /// The resolver's error.
        source: io::Error,
    },
    /// Nothing accepted a connection at the target address.
    Unreachable {
        /// The address tried.
        addr: SocketAddr,
        /// The connect error.
        source: io::Error,
    },
    /// A file named in the configuration could not be read or written.
    File {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
    /// The runtime could not be started (threads, epoll instances).
    Runtime(io::Error),
}

impl Error {
    /// True for errors in what was asked (settings, URL, target), as opposed to failures of the
    /// machine running the benchmark. A command line answers these with exit code 2.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            Error::Config(_)
                | Error::Url { .. }
                | Error::Resolve { .. }
                | Error::Unreachable { .. }
                | Error::File { .. }
        )
    }

    pub(crate) fn config(msg: impl Into<String>) -> Error {
        Error::Config(msg.into())
    }

    pub(crate) fn url(url: &str, reason: impl Into<String>) -> Error {
        Error::Url {
            url: url.to_string(),
            reason: reason.into(),
        }
    }

    pub(crate) fn file(path: impl Into<PathBuf>, source: io::Error) -> Error {
        Error::File {
            path: path.into(),
            source,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Config(msg) => f.write_str(msg),
            Error::Url { url, reason } => write!(f, "bad URL `{url}`: {reason}"),
            Error::Resolve { authority, source } => {
                write!(f, "cannot resolve `{authority}`: {source}")
            }
            Error::Unreachable { addr, source } => write!(f, "cannot connect to {addr}: {source}"),
            Error::File { path, source } => write!(f, "{}: {source}", path.display()),
            Error::Runtime(e) => write!(f, "cannot start the runtime: {e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Resolve { source, .. }
            | Error::Unreachable { source, .. }
            | Error::File { source, .. }
            | Error::Runtime(source) => Some(source),
            Error::Config(_) | Error::Url { .. } => None,
        }
    }
}
