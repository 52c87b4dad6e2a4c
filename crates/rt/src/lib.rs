//! A small thread-per-core async runtime: one executor and one reactor (io_uring or epoll) per
//! worker thread.
//!
//! # Overview
//!
//! - [`Runtime`] starts `n` worker threads (optionally pinned to cores) and runs the same async
//!   function on each: [`Runtime::run`]. [`block_on`] runs one future on the current thread.
//! - [`spawn`] starts a task on the current worker. Tasks never migrate, so they may be `!Send`.
//!   The [`JoinHandle`] is awaitable, can [`abort`](JoinHandle::abort), and reports a panic as
//!   a [`JoinError`] while the worker keeps running.
//! - [`spawn_on`] / [`Handle::spawn_on`] start a task on another worker; [`channel`] carries
//!   messages between workers. Wakeups across threads go through each worker's eventfd.
//! - [`spawn_blocking`] runs blocking code on a bounded thread pool.
//! - [`time`]: `sleep`, `sleep_until`, `timeout`, `interval`, one timer map per worker.
//! - [`net`]: TCP and Unix sockets. Streams expose readiness ([`net::TcpStream::try_read`],
//!   [`net::TcpStream::readable`]) so protocol code can read until it would block and write
//!   once; with the default features they implement `tokio::io` and `futures_io`'s
//!   `AsyncRead`/`AsyncWrite`, so crates such as `h2` and `tokio-rustls` run on them.
//!   [`net::UdpSocket`] sends and receives datagrams (`recv_from`/`send_to`, with `poll_*` and
//!   `try_*` forms), for a sans-I/O QUIC stack to run on.
//! - [`signal::shutdown_signal`] completes on SIGINT/SIGTERM; [`Handle::stop`] asks every
//!   worker's main future to wind down through [`Handle::stopped`].
//! - [`IoBackend`]: io_uring where the kernel allows it, else epoll; forced with
//!   [`Builder::io_backend`] or `VOLT_IO=epoll|uring`, reported by [`Handle::io_backend`].
//!
//! # Example
//!
//! An echo server with a listener per worker (`SO_REUSEPORT`), talked to by a client task:
//!
//! ```
//! use volt_rt::net::{ListenOptions, TcpStream};
//!
//! volt_rt::block_on(async {
//!     let listener = ListenOptions::new().reuse_port(true).bind("127.0.0.1:0").unwrap();
//!     let addr = listener.local_addr().unwrap();
//!     volt_rt::spawn(async move {
//!         let (conn, _) = listener.accept().await.unwrap();
//!         let mut buf = vec![0; 1024];
//!         loop {
//!             let n = conn.read(&mut buf).await.unwrap();
//!             if n == 0 { break; }
//!             conn.write_all(&buf[..n]).await.unwrap();
//!         }
//!     });
//!     let client = TcpStream::connect(addr).await.unwrap();
//!     client.write_all(b"ping").await.unwrap();
//!     let mut buf = [0; 4];
//!     let n = client.read(&mut buf).await.unwrap();
//!     assert_eq!(&buf[..n], b"ping");
//! });
//! ```
//!
//! # Layout
//!
//! `executor` (tasks, run queue, the loop), `task` (join handles), `reactor` (the backend
//! choice; `reactor/epoll.rs`, `reactor/uring.rs`),
//! `time`, `net`, `blocking`, `channel`, `signal`, `runtime` (workers and the builder).
//! `unsafe` is the pin projection in `task.rs`, the `set_len` after a read into a `BytesMut`'s
//! spare capacity and the fd hand-over on drop in `net/source.rs`, and the io_uring driver
//! (`reactor/uring.rs`: SQEs, the provided-buffer ring). Syscalls go through `rustix` and the
//! `io-uring` crate.

/// `Debug` for types with nothing worth showing (a socket, a channel end): `Name { .. }`.
macro_rules! opaque_debug {
    ($($ty:ident $(<$param:ident>)?),+) => {$(
        impl$(<$param>)? std::fmt::Debug for $ty$(<$param>)? {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($ty)).finish_non_exhaustive()
            }
        }
    )+};
}

mod blocking;
mod channel;
mod executor;
pub mod future;
pub mod net;
mod reactor;
mod runtime;
pub mod signal;
mod task;
pub mod time;

pub use blocking::spawn_blocking;
pub use channel::{channel, Receiver, SendError, Sender};
pub use executor::{spawn, yield_now};
pub use reactor::IoBackend;
pub use runtime::{block_on, spawn_on, worker_index, Builder, Handle, Runtime, Stopped};
pub use task::{JoinError, JoinHandle};

/// Locks `mutex`, poisoned or not. A panic under one of volt-rt's locks cannot leave its data
/// half-updated (each lock's field says why), so the runtime keeps working after a panic
/// elsewhere.
fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
