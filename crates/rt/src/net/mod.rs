//! Sockets on the worker's reactor: TCP and Unix-domain streams and listeners, UDP sockets.
//!
//! Streams are `!Send`: each is registered with the worker that created it. To hand a connection
//! to another worker, pass the std socket (`into_std` is not offered yet; accept there instead
//! with a `SO_REUSEPORT` listener per worker, which is the intended design).

mod source;
mod stream;
mod tcp;
mod udp;
mod unix;

pub use stream::{Stream, Tcp, Unix};
pub use tcp::{set_defer_accept, ListenOptions, TcpListener, TcpStream};
pub use udp::UdpSocket;
pub use unix::{UnixListener, UnixStream};
