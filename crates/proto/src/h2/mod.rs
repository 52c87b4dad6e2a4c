//! Sans-I/O HTTP/2 (RFC 9113): the pieces of a connection that only look at bytes. Like the
//! HTTP/1 codec, nothing here touches a socket: the caller hands in what it read and gets
//! back what to write. [`hpack`] compresses and decompresses header blocks (RFC 7541),
//! [`frame`] reads and writes frame headers and control frames, and [`server`] is the server
//! side of a connection: streams, flow control, request validation and defences.

pub mod frame;
pub mod hpack;
pub mod server;
