//! TCP and Unix sockets: an echo server on every worker under 2,000 concurrent connections,
//! and the stream API one call at a time. Exact bytes out, exact bytes back.
//!
//! Under Miri only the tests on a Unix socketpair run (Miri emulates socketpairs and epoll,
//! but has no TCP and no `shutdown`).

mod common;

use std::cell::Cell;
use std::io::{self, IoSlice};
use std::net::{Shutdown, SocketAddr};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use common::{connection_payload, ensure_fd_limit, guard, SharedPort};
use volt_rt::future::{race, Either};
use volt_rt::net::{ListenOptions, TcpListener, TcpStream, UnixListener, UnixStream};
use volt_rt::{block_on, spawn, Handle, Runtime};

/// A connected pair on the current worker: (client, server).
async fn tcp_pair() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    // The kernel completes the handshake before `accept`, so the connect finishes first.
    let client = TcpStream::connect(listener.local_addr().unwrap())
        .await
        .unwrap();
    let (server, _) = listener.accept().await.unwrap();
    (client, server)
}

/// Reads until end of stream.
async fn read_to_end(stream: &TcpStream) -> Vec<u8> {
    let mut out = Vec::new();
    while stream.read_buf(&mut out).await.unwrap() > 0 {}
    out
}

/// A path for a Unix socket that no other test (or test run) uses.
fn socket_path(name: &str) -> std::path::PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!("volt-rt-{}-{n}-{name}.sock", std::process::id()))
}

/// Removes a socket file when dropped.
struct RemoveOnDrop(std::path::PathBuf);
impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
#[cfg_attr(miri, ignore)]
fn echo_server_on_every_worker_with_2000_concurrent_connections() {
    const WORKERS: usize = 2;
    const CONNECTIONS: u64 = 2_000;
    // Both ends live in this process, plus epoll and eventfd descriptors.
    if let Err(why) = ensure_fd_limit(2 * CONNECTIONS + 256) {
        eprintln!("skipping echo_server_on_every_worker_with_2000_concurrent_connections: {why}");
        return;
    }
    guard(|| {
        let server = Runtime::builder().workers(WORKERS).build().unwrap();
        let stop = server.handle();
        let (port, bound) = SharedPort::new(WORKERS);
        let server_thread = std::thread::spawn(move || {
            server.run(|worker| {
                let port = &port;
                async move {
                    let listener = port.bind(worker).await;
                    let stopped = Handle::current().stopped();
                    let mut stopped = std::pin::pin!(stopped);
                    let mut accepted = 0u64;
                    loop {
                        match race(stopped.as_mut(), listener.accept()).await {
                            Either::Left(()) => return accepted,
                            Either::Right(conn) => {
                                let (conn, _) = conn.unwrap();
                                accepted += 1;
                                spawn(echo(conn));
                            }
                        }
                    }
                }
            })
        });
        let addr = SharedPort::wait_bound(&bound, WORKERS);

        // The clients: another runtime, each of its workers running half of the connections
        // at once.
        let next_id = AtomicU64::new(0);
        let client = Runtime::builder().workers(WORKERS).build().unwrap();
        let checked = client.run(|_| {
            let next_id = &next_id;
            async move {
                let mut tasks = Vec::new();
                for _ in 0..CONNECTIONS / WORKERS as u64 {
                    let id = next_id.fetch_add(1, Ordering::Relaxed);
                    tasks.push(spawn(echo_client(addr, id)));
                }
                let mut checked = 0u64;
                for t in tasks {
                    t.await.unwrap();
                    checked += 1;
                }
                checked
            }
        });
        assert_eq!(checked.iter().sum::<u64>(), CONNECTIONS);

        stop.stop();
        let accepted = server_thread.join().unwrap();
        assert_eq!(accepted.iter().sum::<u64>(), CONNECTIONS);
        // SO_REUSEPORT spread the connections: every worker served some.
        assert!(accepted.iter().all(|&n| n > 0), "per worker: {accepted:?}");
    });

    async fn echo(conn: TcpStream) {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = conn.read(&mut buf).await.unwrap();
            if n == 0 {
                return; // the client finished sending; dropping `conn` closes our side
            }
            conn.write_all(&buf[..n]).await.unwrap();
        }
    }

    async fn echo_client(addr: SocketAddr, id: u64) {
        let payload = Rc::new(connection_payload(id));
        let conn = Rc::new(TcpStream::connect(addr).await.unwrap());
        // Write and read at once: the echo of a large payload must be drained while sending.
        let writer = {
            let conn = conn.clone();
            let payload = payload.clone();
            spawn(async move {
                conn.write_all(&payload).await.unwrap();
                conn.shutdown(Shutdown::Write).unwrap();
            })
        };
        let back = read_to_end(&conn).await;
        writer.await.unwrap();
        assert_eq!(back.len(), payload.len(), "connection {id}");
        assert!(back == *payload, "connection {id}: bytes differ");
    }
}

#[test]
#[cfg_attr(miri, ignore)]
fn connect_to_a_closed_port_is_refused() {
    guard(|| {
        block_on(async {
            let addr = {
                let listener = TcpListener::bind("127.0.0.1:0").unwrap();
                listener.local_addr().unwrap()
            };
            let err = TcpStream::connect(addr).await.unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::ConnectionRefused, "{err}");
        });
    });
}

#[test]
#[cfg_attr(miri, ignore)]
fn connect_tries_every_address() {
    guard(|| {
        block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let port = listener.local_addr().unwrap().port();
            let closed = {
                let l = TcpListener::bind("127.0.0.1:0").unwrap();
                l.local_addr().unwrap()
            };
            let live: SocketAddr = ([127, 0, 0, 1], port).into();
            // The first address refuses; the second accepts.
            let conn = TcpStream::connect(&[closed, live][..]).await.unwrap();
            assert_eq!(conn.peer_addr().unwrap(), live);
            let none: &[SocketAddr] = &[];
            let err = TcpStream::connect(none).await.unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        });
    });
}

#[test]
#[cfg_attr(miri, ignore)]
fn read_returns_zero_once_the_peer_closes() {
    guard(|| {
        block_on(async {
            let (client, server) = tcp_pair().await;
            server.write_all(b"last words").await.unwrap();
            drop(server);
            let mut buf = [0u8; 64];
            let n = client.read(&mut buf).await.unwrap();
            assert_eq!(&buf[..n], b"last words");
            assert_eq!(client.read(&mut buf).await.unwrap(), 0);
            assert_eq!(
                client.read(&mut buf).await.unwrap(),
                0,
                "end of stream stays"
            );
        });
    });
}

#[test]
#[cfg_attr(miri, ignore)]
fn write_vectored_sends_every_slice_in_order() {
    guard(|| {
        block_on(async {
            let (client, server) = tcp_pair().await;
            let parts: [&[u8]; 3] = [b"GET / HTTP/1.1\r\n", b"Host: x\r\n", b"\r\n"];
            let slices = parts.map(IoSlice::new);
            let n = client.write_vectored(&slices).await.unwrap();
            let total: usize = parts.iter().map(|p| p.len()).sum();
            assert_eq!(n, total, "a short vectored write on an empty socket");
            drop(client);
            assert_eq!(read_to_end(&server).await, parts.concat());
        });
    });
}

#[test]
#[cfg_attr(miri, ignore)]
fn shutdown_write_gives_the_peer_end_of_stream_and_keeps_reading() {
    guard(|| {
        block_on(async {
            let (client, server) = tcp_pair().await;
            client.write_all(b"request").await.unwrap();
            client.shutdown(Shutdown::Write).unwrap();
            // The server sees the whole request, then end of stream...
            assert_eq!(read_to_end(&server).await, b"request");
            // ...and can still answer on the half that is open.
            server.write_all(b"response").await.unwrap();
            server.shutdown(Shutdown::Both).unwrap();
            assert_eq!(read_to_end(&client).await, b"response");
            // A write after our own shutdown fails.
            assert!(client.write_all(b"more").await.is_err());
        });
    });
}

/// Regression (io_uring): with nothing queued at the shutdown, a later write was taken (queued,
/// `Ok`) and only a flush or the write after it failed, where epoll's fails at once.
#[test]
#[cfg_attr(miri, ignore)]
fn a_write_after_shutdown_write_fails_at_once() {
    guard(|| {
        block_on(async {
            let (client, server) = tcp_pair().await;
            client.shutdown(Shutdown::Write).unwrap();
            let late = client.write(b"late").await;
            assert_eq!(late.unwrap_err().kind(), io::ErrorKind::BrokenPipe);
            assert_eq!(read_to_end(&server).await, b"");
        });
    });
}

#[test]
#[cfg_attr(miri, ignore)]
fn try_read_would_block_then_readable() {
    guard(|| {
        block_on(async {
            let (client, server) = tcp_pair().await;
            let mut buf = [0u8; 16];
            let err = client.try_read(&mut buf).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::WouldBlock);

            let writer = spawn(async move {
                volt_rt::time::sleep(Duration::from_millis(2)).await;
                assert_eq!(server.try_write(b"ping").unwrap(), 4);
                server
            });
            client.readable().await;
            assert_eq!(client.try_read(&mut buf).unwrap(), 4);
            assert_eq!(&buf[..4], b"ping");
            let err = client.try_read(&mut buf).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::WouldBlock);

            // `writable` is ready at once on a fresh connection.
            client.writable().await;
            let server = writer.await.unwrap();
            drop(server);
            client.readable().await; // end of stream is readable too
            assert_eq!(client.try_read(&mut buf).unwrap(), 0);
        });
    });
}

#[test]
#[cfg_attr(miri, ignore)]
fn set_nodelay_reaches_the_socket() {
    guard(|| {
        block_on(async {
            let (client, _server) = tcp_pair().await;
            client.set_nodelay(true).unwrap();
            assert!(rustix::net::sockopt::tcp_nodelay(&client).unwrap());
            client.set_nodelay(false).unwrap();
            assert!(!rustix::net::sockopt::tcp_nodelay(&client).unwrap());
        });
    });
}

#[test]
#[cfg_attr(miri, ignore)]
fn local_and_peer_addresses_match_across_the_connection() {
    guard(|| {
        block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let listen_addr = listener.local_addr().unwrap();
            assert_ne!(listen_addr.port(), 0);
            let client = TcpStream::connect(listen_addr).await.unwrap();
            let (server, accepted_from) = listener.accept().await.unwrap();
            assert_eq!(client.peer_addr().unwrap(), listen_addr);
            assert_eq!(server.local_addr().unwrap(), listen_addr);
            assert_eq!(server.peer_addr().unwrap(), client.local_addr().unwrap());
            assert_eq!(accepted_from, client.local_addr().unwrap());
            let debug = format!("{client:?}");
            assert!(debug.contains(&listen_addr.to_string()), "{debug}");
            assert!(format!("{listener:?}").contains(&listen_addr.to_string()));
        });
    });
}

#[test]
#[cfg_attr(miri, ignore)]
fn reuse_port_listeners_share_a_port_and_plain_ones_do_not() {
    guard(|| {
        block_on(async {
            let options = ListenOptions::new().reuse_port(true);
            let a = options.bind("127.0.0.1:0").unwrap();
            let addr = a.local_addr().unwrap();
            let b = options.bind(addr).unwrap();
            assert_eq!(b.local_addr().unwrap(), addr);
            let err = TcpListener::bind(addr).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::AddrInUse);
        });
    });
}

#[test]
#[cfg_attr(miri, ignore)]
fn from_std_listener_and_stream() {
    guard(|| {
        block_on(async {
            let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = std_listener.local_addr().unwrap();
            let listener = TcpListener::from_std(std_listener).unwrap();
            // A blocking std connect finishes without an accept (the kernel's backlog).
            let std_client = std::net::TcpStream::connect(addr).unwrap();
            let client = TcpStream::from_std(std_client).unwrap();
            let (server, _) = listener.accept().await.unwrap();
            client.write_all(b"adopted").await.unwrap();
            drop(client);
            assert_eq!(read_to_end(&server).await, b"adopted");
        });
    });
}

/// Megabytes each way at once: both directions fill their buffers and wait for readiness edges.
#[test]
#[cfg_attr(miri, ignore)]
fn large_transfer_in_both_directions_at_once() {
    guard(|| {
        block_on(async {
            let (client, server) = tcp_pair().await;
            let up: Rc<Vec<u8>> = Rc::new((0..4_000_000u32).map(|i| (i % 251) as u8).collect());
            let down: Rc<Vec<u8>> = Rc::new((0..3_000_000u32).map(|i| (i % 241) as u8).collect());
            let client = Rc::new(client);
            let server = Rc::new(server);
            let mut tasks = Vec::new();
            for (from, to, data) in [
                (client.clone(), server.clone(), up.clone()),
                (server.clone(), client.clone(), down.clone()),
            ] {
                // One task writes while another reads the same stream.
                tasks.push(spawn(async move {
                    from.write_all(&data).await.unwrap();
                    from.shutdown(Shutdown::Write).unwrap();
                    Vec::new()
                }));
                tasks.push(spawn(async move { read_to_end(&to).await }));
            }
            let mut results = Vec::new();
            for t in tasks {
                results.push(t.await.unwrap());
            }
            assert!(results[1] == *up);
            assert!(results[3] == *down);
        });
    });
}

#[test]
#[cfg_attr(miri, ignore)]
fn read_buf_appends_to_the_vec() {
    guard(|| {
        block_on(async {
            let (client, server) = tcp_pair().await;
            server.write_all(b"abc").await.unwrap();
            let mut buf = b"xy".to_vec();
            let n = client.read_buf(&mut buf).await.unwrap();
            assert_eq!(n, 3);
            assert_eq!(buf, b"xyabc");
        });
    });
}

#[test]
#[cfg_attr(miri, ignore)]
fn read_bytes_appends_to_a_bytes_mut() {
    guard(|| {
        block_on(async {
            let (client, server) = tcp_pair().await;
            let payload: Vec<u8> = (0..100_000u32).map(|i| (i % 253) as u8).collect();
            let sent = payload.clone();
            let writer = spawn(async move {
                server.write_all(&sent).await.unwrap();
            });
            let mut buf = bytes::BytesMut::from(&b"head:"[..]);
            while buf.len() < 5 + payload.len() {
                assert!(client.read_bytes(&mut buf).await.unwrap() > 0);
            }
            writer.await.unwrap();
            assert_eq!(&buf[..5], b"head:");
            assert!(buf[5..] == payload[..]);
            assert_eq!(client.read_bytes(&mut buf).await.unwrap(), 0);
        });
    });
}

#[test]
#[cfg_attr(miri, ignore)]
fn tokio_io_adapters_end_to_end() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    guard(|| {
        block_on(async {
            let (client, server) = tcp_pair().await;
            let payload: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 256) as u8).collect();
            // The server echoes with `tokio::io::copy` over split halves.
            let echo = spawn(async move {
                let (mut r, mut w) = tokio::io::split(server);
                let n = tokio::io::copy(&mut r, &mut w).await.unwrap();
                w.shutdown().await.unwrap();
                n
            });
            let (mut r, mut w) = tokio::io::split(client);
            let sent = payload.clone();
            let writer = spawn(async move {
                // A vectored write first, then the rest.
                let head = [IoSlice::new(&sent[..10]), IoSlice::new(&sent[10..20])];
                let n = w.write_vectored(&head).await.unwrap();
                w.write_all(&sent[n..]).await.unwrap();
                w.flush().await.unwrap();
                w.shutdown().await.unwrap();
            });
            let mut back = Vec::new();
            r.read_to_end(&mut back).await.unwrap();
            writer.await.unwrap();
            assert_eq!(echo.await.unwrap(), payload.len() as u64);
            assert!(back == payload);
        });
    });
}

#[test]
#[cfg_attr(miri, ignore)]
fn futures_io_adapters_end_to_end() {
    use futures_util::io::{AsyncReadExt, AsyncWriteExt};
    guard(|| {
        block_on(async {
            let (client, server) = tcp_pair().await;
            let payload: Vec<u8> = (0..300_000u32).map(|i| (i * 13 % 256) as u8).collect();
            let echo = spawn(async move {
                let (r, mut w) = server.split();
                let n = futures_util::io::copy(r, &mut w).await.unwrap();
                w.close().await.unwrap();
                n
            });
            let (mut r, mut w) = client.split();
            let sent = payload.clone();
            let writer = spawn(async move {
                w.write_all(&sent).await.unwrap();
                w.flush().await.unwrap();
                w.close().await.unwrap();
            });
            let mut back = Vec::new();
            r.read_to_end(&mut back).await.unwrap();
            writer.await.unwrap();
            assert_eq!(echo.await.unwrap(), payload.len() as u64);
            assert!(back == payload);
        });
    });
}

#[test]
#[cfg_attr(miri, ignore)]
fn unix_pair_both_ways() {
    guard(|| {
        block_on(async {
            let (a, b) = UnixStream::pair().unwrap();
            a.write_all(b"to b").await.unwrap();
            b.write_all(b"to a").await.unwrap();
            let mut buf = [0u8; 4];
            assert_eq!(b.read(&mut buf).await.unwrap(), 4);
            assert_eq!(&buf, b"to b");
            assert_eq!(a.read(&mut buf).await.unwrap(), 4);
            assert_eq!(&buf, b"to a");
            a.shutdown(Shutdown::Write).unwrap();
            assert_eq!(b.read(&mut buf).await.unwrap(), 0);
            b.write_all(b"late").await.unwrap();
            assert_eq!(a.read(&mut buf).await.unwrap(), 4);
        });
    });
}

#[test]
#[cfg_attr(miri, ignore)]
fn unix_bind_and_connect_in_a_temp_dir() {
    guard(|| {
        block_on(async {
            let path = socket_path("echo");
            let _cleanup = RemoveOnDrop(path.clone());
            let listener = UnixListener::bind(&path).unwrap();
            let err = UnixListener::bind(&path).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::AddrInUse);
            let server = spawn(async move {
                for _ in 0..3 {
                    let conn = listener.accept().await.unwrap();
                    spawn(async move {
                        let mut buf = vec![0u8; 1024];
                        loop {
                            let n = conn.read(&mut buf).await.unwrap();
                            if n == 0 {
                                return;
                            }
                            conn.write_all(&buf[..n]).await.unwrap();
                        }
                    });
                }
            });
            for i in 0..3u8 {
                let conn = UnixStream::connect(&path).await.unwrap();
                let msg = [b'u', i, 0xff];
                conn.write_all(&msg).await.unwrap();
                conn.shutdown(Shutdown::Write).unwrap();
                let mut back = Vec::new();
                while conn.read_buf(&mut back).await.unwrap() > 0 {}
                assert_eq!(back, msg);
            }
            server.await.unwrap();
            let missing = socket_path("missing");
            assert!(UnixStream::connect(&missing).await.is_err());
        });
    });
}

/// A path with a NUL byte (a leading one would make a Linux abstract name) is refused as invalid
/// input, as `std`'s `UnixListener::bind` does, rather than bound or connected under another name.
#[test]
#[cfg_attr(miri, ignore)]
fn unix_paths_with_a_nul_byte_are_invalid_input() {
    guard(|| {
        block_on(async {
            for name in ["\0volt-rt-abstract", "volt-rt\0nul"] {
                let err = UnixListener::bind(name).unwrap_err();
                assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{name:?}");
                let err = UnixStream::connect(name).await.unwrap_err();
                assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{name:?}");
            }
        });
    });
}

/// Regression: a non-blocking Unix `connect` fails with `EAGAIN` when the listener's backlog is
/// full; that was taken for "in progress", and `connect` returned a stream that was never
/// connected (its first write failed with `ENOTCONN`). Now it is an error (`WouldBlock`).
#[test]
#[cfg_attr(miri, ignore)]
fn unix_connect_to_a_full_backlog_is_an_error() {
    // `UnixListener::bind` listens with a backlog of 1024; a few more than that are needed.
    const ATTEMPTS: u64 = 1_200;
    if let Err(why) = ensure_fd_limit(ATTEMPTS + 256) {
        eprintln!("skipping unix_connect_to_a_full_backlog_is_an_error: {why}");
        return;
    }
    guard(|| {
        block_on(async {
            let path = socket_path("backlog");
            let _cleanup = RemoveOnDrop(path.clone());
            let _listener = UnixListener::bind(&path).unwrap(); // never accepts
            let mut open = Vec::new();
            let mut refused = None;
            for i in 0..ATTEMPTS {
                match UnixStream::connect(&path).await {
                    Ok(conn) => {
                        // A stream `connect` returns is connected: writing to it works.
                        conn.write_all(b"x").await.unwrap_or_else(|e| {
                            panic!("connect #{i} returned an unconnected stream: {e}")
                        });
                        open.push(conn);
                    }
                    Err(e) => {
                        refused = Some(e);
                        break;
                    }
                }
            }
            let err = refused.expect("the backlog never filled");
            assert_eq!(err.kind(), io::ErrorKind::WouldBlock, "{err}");
            assert!(open.len() >= 1024, "only {} connections queued", open.len());
        });
    });
}

/// A socket read raced against a timer: the losing read is dropped and its waker goes with it.
#[test]
#[cfg_attr(miri, ignore)]
fn read_raced_against_a_timer_then_read_again() {
    guard(|| {
        block_on(async {
            let (client, server) = tcp_pair().await;
            let mut buf = [0u8; 8];
            let timed_out = volt_rt::time::timeout(Duration::from_millis(5), client.read(&mut buf))
                .await
                .is_err();
            assert!(timed_out);
            let done = Rc::new(Cell::new(false));
            let done2 = done.clone();
            let writer = spawn(async move {
                server.write_all(b"after").await.unwrap();
                done2.set(true);
                server
            });
            let n = client.read(&mut buf).await.unwrap();
            assert_eq!(&buf[..n], b"after");
            assert!(done.get());
            drop(writer.await.unwrap());
        });
    });
}

/// Regression: the reactor took a short read to mean "nothing left" and cleared readiness. When
/// the last data and the FIN arrived in one edge that the reactor had already seen, the short
/// read of that data cleared the only readiness the FIN would ever produce, and the next read
/// (which should return 0) waited forever. End of stream is now a sticky readiness bit.
/// Writes the tail of a stream and closes it; the reader must get the tail, then end of stream.
async fn tail_then_end_of_stream(
    kind: &str,
    mut reader: impl tokio::io::AsyncRead + Unpin,
    mut writer: impl tokio::io::AsyncWrite + Unpin,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    writer.write_all(b"tail").await.unwrap();
    drop(writer);
    // Give the reactor a turn to see the data-and-FIN edge before the read (the test passes
    // whatever the timing; this makes the old bug show).
    volt_rt::time::sleep(Duration::from_millis(20)).await;
    let mut buf = [0u8; 64];
    assert_eq!(reader.read(&mut buf).await.unwrap(), 4, "{kind}");
    assert_eq!(
        reader.read(&mut buf).await.unwrap(),
        0,
        "{kind}: no end of stream"
    );
}

#[test]
#[cfg_attr(miri, ignore)]
fn end_of_stream_after_a_short_read_is_not_lost() {
    guard(|| {
        block_on(async {
            let (a, b) = tcp_pair().await;
            tail_then_end_of_stream("tcp", a, b).await;
        });
    });
}

#[test]
fn end_of_stream_after_a_short_read_is_not_lost_unix() {
    guard(|| {
        block_on(async {
            let (a, b) = UnixStream::pair().unwrap();
            tail_then_end_of_stream("unix", a, b).await;
        });
    });
}

/// A reader and a writer task on the two ends of a socketpair, with more data than the socket
/// buffers hold: both wait for readiness edges many times. Then end of stream.
#[test]
fn unix_pair_transfer_then_end_of_stream() {
    let len: u32 = if cfg!(miri) { 250_000 } else { 3_000_000 };
    guard(move || {
        block_on(async move {
            let (a, b) = UnixStream::pair().unwrap();
            let data: Rc<Vec<u8>> = Rc::new((0..len).map(|i| (i % 249) as u8).collect());
            let sent = data.clone();
            let writer = spawn(async move {
                a.write_all(&sent).await.unwrap();
                // `a` is dropped here: the reader sees end of stream after the data.
            });
            let mut back = Vec::new();
            while b.read_buf(&mut back).await.unwrap() > 0 {}
            writer.await.unwrap();
            assert!(back == *data);
        });
    });
}

/// Regression: a socket outlives the `block_on` that created it (it is `!Send`, not bound to
/// the call). Dropping it inside a later `block_on` on the same thread deregistered whatever
/// socket of the new worker had the same reactor token, which then failed ("invalid key") or
/// shared another socket's readiness. Now only the worker that registered it deregisters it.
#[test]
#[cfg_attr(miri, ignore)]
fn a_socket_from_an_earlier_block_on_does_not_disturb_the_next() {
    guard(|| {
        let stale = block_on(async { TcpListener::bind("127.0.0.1:0").unwrap() });
        block_on(async move {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            drop(stale);
            let _client = std::net::TcpStream::connect(addr).unwrap();
            let (conn, _) = listener.accept().await.unwrap();
            assert_eq!(conn.local_addr().unwrap(), addr);
        });
    });
}

#[test]
#[cfg_attr(miri, ignore)]
#[should_panic(expected = "used outside the worker (or block_on) that created it")]
fn using_a_socket_in_another_block_on_panics_clearly() {
    let stale = block_on(async { TcpListener::bind("127.0.0.1:0").unwrap() });
    block_on(async move {
        let _ = stale.accept().await;
    });
}

/// Writes until a write or flush fails, sleeping a little between rounds so the peer's RST can
/// arrive, and checks the failure is a broken pipe or a reset; panics if none has failed after
/// many rounds.
async fn writes_fail_as_closed(stream: &TcpStream) {
    let chunk = vec![7u8; 16 * 1024];
    for _ in 0..2000 {
        let result = match stream.write_all(&chunk).await {
            Ok(()) => stream.flush().await,
            Err(e) => Err(e),
        };
        if let Err(e) = result {
            let closed = matches!(
                e.kind(),
                io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset
            );
            assert!(closed, "{e}");
            return;
        }
        volt_rt::time::sleep(Duration::from_millis(1)).await;
    }
    panic!("writing to a closed peer never failed");
}

/// A peer that resets the connection (`SO_LINGER` 0): a read fails with `ConnectionReset` or
/// ends the stream (never hangs), and writes fail (as an error, not a `SIGPIPE`).
#[test]
#[cfg_attr(miri, ignore)]
fn peer_reset_fails_reads_and_writes() {
    guard(|| {
        block_on(async {
            let (client, server) = tcp_pair().await;
            rustix::net::sockopt::set_socket_linger(&client, Some(Duration::ZERO)).unwrap();
            drop(client); // sends RST
            let mut buf = [0u8; 16];
            let read = volt_rt::time::timeout(Duration::from_secs(60), server.read(&mut buf))
                .await
                .expect("a read on a reset connection hung");
            match read {
                Err(e) => assert_eq!(e.kind(), io::ErrorKind::ConnectionReset, "{e}"),
                Ok(n) => assert_eq!(n, 0),
            }
            // Later reads return at once too.
            let again = volt_rt::time::timeout(Duration::from_secs(60), server.read(&mut buf));
            assert!(
                again.await.is_ok(),
                "a second read on a reset connection hung"
            );
            writes_fail_as_closed(&server).await;
        });
    });
}

/// Writing to a peer that closed (FIN, then RST for the data that came after): a write or
/// flush fails soon, and reading still reports the end of stream.
#[test]
#[cfg_attr(miri, ignore)]
fn write_to_a_closed_peer_fails() {
    guard(|| {
        block_on(async {
            let (client, server) = tcp_pair().await;
            drop(client);
            let mut buf = [0u8; 16];
            assert_eq!(server.read(&mut buf).await.unwrap(), 0);
            writes_fail_as_closed(&server).await;
            // A stream whose send failed still answers reads at once.
            let read = volt_rt::time::timeout(Duration::from_secs(60), server.read(&mut buf));
            assert!(read.await.is_ok(), "a read after a failed write hung");
        });
    });
}
