//! volt's HTTP server (HTTP/1.0, 1.1 and 2 on volt-rt, cleartext or TLS, and HTTP/3 over QUIC;
//! one worker per core) and client.
//!
//! # Overview
//!
//! - [`Server`] binds a port, starts one worker per core (each with its own `SO_REUSEPORT`
//!   listener) and serves a [`Service`] until SIGINT/SIGTERM or [`ServerHandle::shutdown`],
//!   then shuts down gracefully.
//! - [`Router`] is the usual service: routes by method and path (`/users/{id}`,
//!   `/static/{*path}`), shares state, answers 404 and 405 (with `Allow`) by itself.
//!   [`service_fn`] turns one async function into a service with no routing and no allocation.
//! - A handler is an async function from [`Request`] to anything [`IntoResponse`]. The request
//!   has typed extractors — [`Request::param`], [`Request::query`], [`Request::typed_header`],
//!   [`Request::json`], [`Request::bytes`], [`Request::text`] — that answer 400 (or 413, 415)
//!   with a clear message when the value does not fit; return `Result<_, Error>` and use `?`.
//! - Bodies stream both ways: [`RequestBody::chunk`] reads an upload piece by piece with TCP
//!   backpressure; [`Body::stream`] and [`Body::channel`] send a response of any size.
//! - [`Config`] holds every limit and timeout (header size 431, URI 414, body 413, slow
//!   clients 408, idle keep-alive, connections per worker) and the HTTP/2 settings.
//! - HTTP/2: a plain port answers the HTTP/2 preface (prior knowledge) as well as HTTP/1; with
//!   [`Server::tls`] and a [`TlsConfig`] (PEM certificates, SNI) the port serves HTTPS, HTTP/2
//!   or HTTP/1.1 as ALPN chooses. Handlers do not change.
//! - HTTP/3: [`Server::http3`] adds it on the same port number over UDP (QUIC, with the TLS
//!   certificates), advertised to TCP clients by `Alt-Svc`.
//! - WebSocket (RFC 6455) on HTTP/1.1, plain or TLS, and on HTTP/2 and HTTP/3 streams (RFC
//!   8441, RFC 9220): [`Request::websocket`] checks the handshake,
//!   [`WebSocketUpgrade::on_upgrade`] answers 101 (200 on HTTP/2 and HTTP/3) and runs a
//!   session on the connection (the stream), where a
//!   [`WebSocket`] receives and sends [`Message`]s; the client's
//!   [`Client::websocket`] opens the same [`WebSocket`], in the client's role. Both ends speak
//!   permessage-deflate (RFC 7692) when configured with a [`DeflateConfig`].
//! - [`ServeDir`] serves a directory's files (validators, conditional requests, byte ranges,
//!   index pages and listings), as the whole app or mounted with [`Router::route_service`].
//! - [`Client`] makes HTTP/1.1 and HTTP/2 requests over TCP or TLS from a worker, keeps
//!   connections per origin, and streams bodies both ways ([`ClientResponse::chunk`]).
//! - [`Cgi`] runs CGI/1.1 scripts (RFC 3875) from a directory, on a route or as the service.
//! - [`Compress`] wraps a service and compresses its responses (gzip or br, as the request's
//!   `Accept-Encoding` prefers); the client decompresses them as it reads them.
//!
//! # Example
//!
//! ```no_run
//! use volt_http::{get, post, Error, Json, Request, Router, Server};
//!
//! #[derive(serde::Deserialize, serde::Serialize)]
//! struct Greeting { name: String }
//!
//! async fn hello(req: Request) -> Result<String, Error> {
//!     let name: String = req.param("name")?;
//!     Ok(format!("Hello, {name}!"))
//! }
//!
//! async fn echo(mut req: Request) -> Result<Json<Greeting>, Error> {
//!     let g: Greeting = req.json().await?;
//!     Ok(Json(g))
//! }
//!
//! let app = Router::new()
//!     .route("/hello/{name}", get(hello))
//!     .route("/echo", post(echo));
//! Server::bind("127.0.0.1:8080")?.serve(app)?;
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! # Layout
//!
//! `server` (workers, accept loop, shutdown), `conn` (the HTTP/1 connection loop: the only
//! module touching both socket and codec), `transport` (plain TCP or TLS under `conn`), `tls`
//! (rustls configuration and the TLS accept path), `h2` (volt-proto's HTTP/2 connection driven
//! on the same transport: handlers polled inline, request and response bodies under flow
//! control), `h3` (HTTP/3: quinn-proto's QUIC driven on volt-rt's UDP sockets, one endpoint
//! per worker, and volt-proto's HTTP/3 codec on its streams, a task per request), `ws`
//! (WebSocket: the server's handshake, and the session at either end on the transport the
//! HTTP/1 connection hands over or the client opened; frames and permessage-deflate are
//! `volt_proto::ws`'s), `client` (the client; `client::websocket` is its WebSocket
//! handshake, `client::cookie` its cookie jar, `client::proxy` its proxy settings), `request` / `response` / `body`, `router`, `service`, `middleware` (`wrap`: an
//! async function around a service), `static_files` (`ServeDir`), `coding` (content codings:
//! negotiation, the compressors, a bounded sans-I/O decompressor), `compress` (the `Compress`
//! wrapper), `cgi` (the CGI gateway: script lookup,
//! meta-variables, the process and its pipes, the script's header block), `config`, `error`.
//! HTTP/1 parsing and encoding live in `volt-proto`.
#![forbid(unsafe_code)]

mod body;
mod cgi;
mod client;
mod coding;
mod cold;
mod compress;
mod config;
mod conn;
mod error;
mod h2;
mod h3;
mod json;
mod middleware;
mod request;
mod response;
mod router;
mod running;
mod server;
mod service;
mod static_files;
mod tls;
mod transport;
mod ws;

pub use body::{Body, BodySender, BodyStream};
pub use cgi::Cgi;
pub use client::{
    Client, ClientBuilder, ClientResponse, Cookie, CookieJar, HandshakeError, Proxy, ProxyError,
    RequestBuilder, SameSite, WebSocketBuilder,
};
pub use compress::Compress;
pub use config::Config;
pub use error::Error;
pub use http::{header, HeaderName, HeaderValue, Method, StatusCode, Version};
pub use middleware::{wrap, Next, Wrap};
pub use request::{Request, RequestBody};
pub use response::{IntoResponse, Json, Response};
pub use router::{any, delete, get, options, patch, post, put, MethodRouter, Router};
pub use server::{Server, ServerHandle};
pub use service::{service_fn, Service, ServiceFn};
pub use static_files::ServeDir;
pub use tls::{CertKey, Tls, TlsConfig};
pub use volt_proto::ws::{DeflateConfig, DeflateParams};
pub use ws::{Message, WebSocket, WebSocketUpgrade};
