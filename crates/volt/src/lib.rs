//! volt: the fastest HTTP server we know how to build, on a thread-per-core runtime.
//!
//! This crate re-exports the parts:
//!
//! - [`rt`] (`volt-rt`): the runtime — workers, tasks, timers, sockets.
//! - [`proto`] (`volt-proto`): the sans-I/O HTTP/1 codec.
//! - [`http`] (`volt-http`): the server — [`Server`], [`Router`], [`Request`], [`Response`].
//!
//! ```no_run
//! use volt::{get, Router, Server};
//!
//! let app = Router::new().route("/", get(|_req| async { "Hello, World!" }));
//! Server::bind("127.0.0.1:8080")?.serve(app)?;
//! # Ok::<(), std::io::Error>(())
//! ```
#![forbid(unsafe_code)]

pub use volt_http as http;
pub use volt_proto as proto;
pub use volt_rt as rt;

pub use volt_http::{
    any, delete, get, patch, post, put, service_fn, Body, CertKey, Cgi, Client, Config,
    DeflateConfig, Error, IntoResponse, Json, Message, Request, Response, Router, ServeDir, Server,
    ServerHandle, Service, StatusCode, Tls, TlsConfig, WebSocket, WebSocketUpgrade,
};
