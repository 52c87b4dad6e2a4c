//! Sockets dropped, tasks aborted and runtimes stopped while I/O is in flight. On io_uring the
//! kernel may still write into (or read from) the reactor's buffers at those moments: these tests
//! check that nothing breaks, that the bytes written arrive, and that the worker keeps serving.
//! They run on whichever backend `VOLT_IO` selects (CI runs the suite under both), except
//! `io_backend_can_be_forced`, which asks for each.

mod common;

use std::io::{Read, Write};
use std::net::Shutdown;
use std::time::Duration;

use common::{connection_payload, guard};
use volt_rt::net::{TcpListener, TcpStream};
use volt_rt::{block_on, spawn, IoBackend, Runtime};

/// A connected pair on the current worker: (client, server).
async fn tcp_pair() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let client = TcpStream::connect(listener.local_addr().unwrap())
        .await
        .unwrap();
    let (server, _) = listener.accept().await.unwrap();
    (client, server)
}

async fn read_to_end(stream: &TcpStream) -> Vec<u8> {
    let mut out = Vec::new();
    while stream.read_buf(&mut out).await.unwrap() > 0 {}
    out
}

/// `len` bytes of a pattern that shows a lost or reordered stretch.
fn pattern(len: u32) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

/// A listener and a client connected to it whose receive buffer is `size` bytes; see
/// [`accept_small`].
fn connect_small(size: usize) -> (std::net::TcpListener, std::net::TcpStream) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    rustix::net::sockopt::set_socket_recv_buffer_size(&client, size).unwrap();
    (listener, client)
}

/// The server end of [`connect_small`]'s connection on this worker, its send buffer `size`
/// bytes: most of what it writes and the client has not read stays in the worker's reactor
/// (on io_uring).
fn accept_small(listener: std::net::TcpListener, size: usize) -> TcpStream {
    let conn = TcpStream::from_std(listener.accept().unwrap().0).unwrap();
    rustix::net::sockopt::set_socket_send_buffer_size(&conn, size).unwrap();
    conn
}

/// Echo a few bytes over a fresh pair: the worker still works.
async fn echo_still_works() {
    let (client, server) = tcp_pair().await;
    client.write_all(b"still alive").await.unwrap();
    let mut buf = [0u8; 11];
    let mut got = 0;
    while got < buf.len() {
        got += server.read(&mut buf[got..]).await.unwrap();
    }
    assert_eq!(&buf, b"still alive");
}

#[test]
#[cfg_attr(miri, ignore)] // TCP
fn abort_a_task_blocked_in_read() {
    guard(|| {
        block_on(async {
            let (client, server) = tcp_pair().await;
            let reader = spawn(async move {
                let mut buf = [0u8; 64];
                server.read(&mut buf).await.unwrap()
            });
            // Let the reader block (on io_uring: its receive is armed in the kernel).
            for _ in 0..10 {
                volt_rt::yield_now().await;
            }
            reader.abort();
            assert!(reader.await.is_err(), "the aborted read finished");
            // The server stream was dropped with the task: the client sees end of stream.
            assert_eq!(read_to_end(&client).await, b"");
            echo_still_works().await;
        });
    });
}

#[test]
#[cfg_attr(miri, ignore)] // TCP
fn drop_a_stream_with_a_large_send_in_flight() {
    guard(|| {
        block_on(async {
            let (client, server) = tcp_pair().await;
            let payload = pattern(8 << 20);
            let expected = payload.clone();
            // The client does not read yet, so the write stalls with bytes in flight; the
            // writer is aborted there and the stream dropped.
            let writer = spawn(async move {
                server.write_all(&payload).await.unwrap();
                server
            });
            for _ in 0..20 {
                volt_rt::yield_now().await;
            }
            writer.abort();
            let _ = writer.await;
            let got = read_to_end(&client).await;
            assert!(!got.is_empty(), "nothing of the write arrived");
            assert!(
                got.len() <= expected.len() && got == expected[..got.len()],
                "the bytes that arrived are not a prefix of the bytes written"
            );
            echo_still_works().await;
        });
    });
}

#[test]
#[cfg_attr(miri, ignore)] // TCP
fn bytes_written_before_drop_arrive() {
    guard(|| {
        block_on(async {
            let (client, server) = tcp_pair().await;
            let payload = connection_payload(3);
            server.write_all(&payload).await.unwrap();
            drop(server); // queued bytes still go out, then end of stream
            assert!(read_to_end(&client).await == payload);
        });
    });
}

#[test]
#[cfg_attr(miri, ignore)] // TCP
fn drop_many_connections_mid_transfer() {
    const CONNECTIONS: usize = 200;
    guard(|| {
        block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            let server = spawn(async move {
                let mut tasks = Vec::new();
                for _ in 0..CONNECTIONS {
                    let (conn, _) = listener.accept().await.unwrap();
                    tasks.push(spawn(async move {
                        // Write until the client goes away.
                        let chunk = vec![b'x'; 64 * 1024];
                        while conn.write_all(&chunk).await.is_ok() {}
                    }));
                }
                tasks
            });
            let mut clients = Vec::new();
            for i in 0..CONNECTIONS {
                let client = TcpStream::connect(addr).await.unwrap();
                client.write_all(&[i as u8; 1000]).await.unwrap();
                let mut buf = vec![0u8; 10_000];
                client.read(&mut buf).await.unwrap();
                clients.push(client);
            }
            // Every client drops its end mid-transfer; every server task ends with an error.
            drop(clients);
            for task in server.await.unwrap() {
                task.await.unwrap();
            }
            echo_still_works().await;
        });
    });
}

#[test]
#[cfg_attr(miri, ignore)] // TCP
fn receive_buffers_running_out_recover() {
    // More bytes in flight than the io_uring driver's receive buffers (4 MiB, at most 64 KiB held
    // per stream, so more than 64 streams holding theirs exhaust them): receives run out
    // of buffers (`ENOBUFS`) while the readers hold theirs, and must resume when they return.
    const CONNECTIONS: u64 = 96;
    guard(|| {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let clients = std::thread::spawn(move || {
            let senders: Vec<_> = (0..CONNECTIONS)
                .map(|id| {
                    std::thread::spawn(move || {
                        let mut c = std::net::TcpStream::connect(addr).unwrap();
                        c.write_all(&connection_payload(id).repeat(2 + (id % 3) as usize))
                            .unwrap();
                        c.shutdown(Shutdown::Write).unwrap();
                    })
                })
                .collect();
            for s in senders {
                s.join().unwrap();
            }
        });
        block_on(async move {
            let listener = TcpListener::from_std(listener).unwrap();
            let mut conns = Vec::new();
            for _ in 0..CONNECTIONS {
                conns.push(listener.accept().await.unwrap().0);
            }
            // The first bytes of each (the id is in them), then a pause with every receive armed.
            let mut firsts = Vec::new();
            for conn in &conns {
                let mut buf = Vec::new();
                conn.read_buf(&mut buf).await.unwrap();
                firsts.push(buf);
            }
            volt_rt::time::sleep(Duration::from_millis(100)).await;
            let mut total = 0;
            for (conn, mut got) in conns.iter().zip(firsts) {
                got.extend(read_to_end(conn).await);
                let id = (0..CONNECTIONS)
                    .find(|&id| {
                        let want = connection_payload(id).repeat(2 + (id % 3) as usize);
                        got == want
                    })
                    .expect("a connection received bytes no client sent");
                total += id + 1;
            }
            assert_eq!(total, CONNECTIONS * (CONNECTIONS + 1) / 2, "some id twice");
        });
        clients.join().unwrap();
    });
}

#[test]
#[cfg_attr(miri, ignore)] // TCP
fn runtime_shutdown_with_operations_in_flight() {
    guard(|| {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let mut readers: Vec<_> = (0..4)
            .map(|_| std::net::TcpStream::connect(addr).unwrap())
            .collect();
        let payload = connection_payload(1);
        let rt = Runtime::builder().workers(1).build().unwrap();
        let sent = payload.clone();
        rt.run(move |_| {
            let listener = listener.try_clone().unwrap();
            let payload = sent.clone();
            async move {
                let listener = TcpListener::from_std(listener).unwrap();
                for i in 0..4 {
                    let (conn, _) = listener.accept().await.unwrap();
                    let payload = payload.clone();
                    // Half the tasks wait in a read that never completes, half in a send the
                    // peer does not drain yet: the main future returns with all of them pending.
                    spawn(async move {
                        if i % 2 == 0 {
                            let mut buf = [0u8; 16];
                            let _ = conn.read(&mut buf).await;
                        } else {
                            conn.write_all(&payload).await.unwrap();
                            std::future::pending::<()>().await;
                        }
                    });
                }
                for _ in 0..20 {
                    volt_rt::yield_now().await;
                }
            }
        });
        // `run` returned: every socket is closed, and the sends' bytes arrived before the end.
        for (i, r) in readers.iter_mut().enumerate() {
            let mut got = Vec::new();
            r.read_to_end(&mut got).unwrap();
            if i % 2 == 1 {
                assert!(got == payload, "connection {i}: the queued bytes were lost");
            } else {
                assert!(got.is_empty());
            }
        }
    });
}

#[test]
#[cfg_attr(miri, ignore)] // io_uring, TCP
fn io_backend_can_be_forced() {
    guard(|| {
        for backend in [IoBackend::Epoll, IoBackend::Uring] {
            let built = Runtime::builder().workers(1).io_backend(backend).build();
            let rt = match built {
                Ok(rt) => rt,
                Err(e) => {
                    // Only io_uring may be missing, and it says so.
                    assert_eq!(backend, IoBackend::Uring);
                    assert!(e.to_string().contains("io_uring was requested"), "{e}");
                    continue;
                }
            };
            assert_eq!(rt.handle().io_backend(), backend);
            rt.run(|_| echo_still_works());
        }
    });
}

#[test]
#[cfg_attr(miri, ignore)] // TCP
fn accept_reports_the_peer_address() {
    // On io_uring the accept writes the address into the reactor's buffer: IPv4 and IPv6 both.
    guard(|| {
        block_on(async {
            for host in ["127.0.0.1:0", "[::1]:0"] {
                let Ok(listener) = TcpListener::bind(host) else {
                    continue; // no IPv6 loopback here
                };
                let client = TcpStream::connect(listener.local_addr().unwrap())
                    .await
                    .unwrap();
                let (server, peer) = listener.accept().await.unwrap();
                assert_eq!(peer, client.local_addr().unwrap());
                assert_eq!(server.peer_addr().unwrap(), peer);
            }
        });
    });
}

#[test]
#[cfg_attr(miri, ignore)] // TCP
fn reads_smaller_than_what_arrived_keep_its_order() {
    // On io_uring each send below is flushed before the next, so the reader finds several
    // received buffers queued, and reads each in pieces that straddle their boundaries.
    guard(|| {
        block_on(async {
            let (client, server) = tcp_pair().await;
            let messages: Vec<Vec<u8>> = (0..8u8)
                .map(|i| vec![b'a' + i; 5 + 3 * i as usize])
                .collect();
            for message in &messages {
                client.write_all(message).await.unwrap();
                client.flush().await.unwrap();
            }
            client.shutdown(Shutdown::Write).unwrap();
            let (mut got, mut buf) = (Vec::new(), [0u8; 7]);
            loop {
                match server.read(&mut buf).await.unwrap() {
                    0 => break,
                    n => got.extend_from_slice(&buf[..n]),
                }
            }
            assert_eq!(got, messages.concat());
        });
    });
}

/// Regression (io_uring): a `block_on` whose future never waited in the reactor (it wrote its
/// answer and returned) leaked its ring, with every socket it still held: the worker's eventfd
/// was closed before the reactor, whose drop then submitted the eventfd's poll for the first
/// time, got `EBADF`, re-armed it, 1,000 times over, and gave up without freeing anything. The
/// peer never saw the end of the stream (nor the bytes, which were still queued).
#[test]
#[cfg_attr(miri, ignore)] // TCP
fn a_block_on_that_never_waits_still_closes_and_sends() {
    guard(|| {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        client
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        block_on(async move {
            let (conn, _) = listener.accept().unwrap(); // connected already: does not block
            let conn = TcpStream::from_std(conn).unwrap();
            conn.write_all(b"goodbye").await.unwrap();
        });
        let mut got = Vec::new();
        client
            .read_to_end(&mut got)
            .expect("no end of stream: the socket was never closed");
        assert_eq!(got, b"goodbye");
    });
}

/// A task spawned by the destructor of a task dropped at worker exit (a connection handing its
/// stream to a "close it gracefully" task, say) gets the stream's queued bytes out too.
#[test]
#[cfg_attr(miri, ignore)] // TCP
fn a_stream_handed_to_a_task_spawned_at_exit_still_sends_its_bytes() {
    /// Hands its stream to a new task when dropped.
    struct HandOver(Option<TcpStream>);
    impl Drop for HandOver {
        fn drop(&mut self) {
            let stream = self.0.take();
            spawn(async move {
                let _stream = stream;
                std::future::pending::<()>().await;
            });
        }
    }
    guard(|| {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let payload = connection_payload(3);
        let sent = payload.clone();
        block_on(async move {
            let (conn, _) = listener.accept().unwrap(); // connected already: does not block
            let conn = TcpStream::from_std(conn).unwrap();
            spawn(async move {
                let holder = HandOver(Some(conn));
                let conn = holder.0.as_ref().unwrap();
                conn.write_all(&sent).await.unwrap();
                std::future::pending::<()>().await;
            });
            // The task writes, and `block_on` ends in the same loop turn (on io_uring the bytes
            // are still queued then).
            volt_rt::yield_now().await;
        });
        let mut got = Vec::new();
        client.read_to_end(&mut got).unwrap();
        assert!(
            got == payload,
            "the queued bytes were lost ({} of {})",
            got.len(),
            payload.len()
        );
    });
}

/// Regression (io_uring): the bytes a stream still had queued when its worker ended were lost
/// (all but what the socket buffer took at once), where epoll's writes would have left them in
/// the kernel, which sends them after the close. Here the server's last write is queued and its
/// worker ends while the client is reading slowly; the client must get every byte.
#[test]
#[cfg_attr(miri, ignore)] // TCP
fn bytes_queued_when_the_worker_ends_reach_a_slow_reader() {
    use std::sync::atomic::{AtomicBool, Ordering};
    guard(|| {
        let (listener, mut client) = connect_small(64 * 1024);
        let payload = pattern(8 << 20);
        let returned = std::sync::Arc::new(AtomicBool::new(false));
        let server_returned = returned.clone();
        let reader = std::thread::spawn(move || {
            let (mut got, mut buf) = (Vec::new(), vec![0u8; 64 * 1024]);
            loop {
                if !returned.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(1)); // slow until the server ends
                }
                match client.read(&mut buf).unwrap() {
                    0 => return got,
                    n => got.extend_from_slice(&buf[..n]),
                }
            }
        });
        let sent = payload.clone();
        block_on(async move {
            let conn = accept_small(listener, 64 * 1024);
            conn.write_all(&sent).await.unwrap();
            server_returned.store(true, Ordering::SeqCst);
        });
        let got = reader.join().unwrap();
        assert!(
            got == payload,
            "{} of {} bytes arrived",
            got.len(),
            payload.len()
        );
    });
}

/// The bound on the above: bytes a peer does not take are given up on (after 2 s, on io_uring)
/// rather than holding up the end of the worker. What arrives is a prefix of what was written.
#[test]
#[cfg_attr(miri, ignore)] // TCP
fn a_peer_that_never_reads_does_not_hold_up_the_end_of_a_worker() {
    guard(|| {
        let (listener, mut client) = connect_small(16 * 1024);
        let payload = pattern(1 << 20);
        let sent = payload.clone();
        let written = block_on(async move {
            let conn = accept_small(listener, 16 * 1024);
            // Until the socket (on io_uring: the stream's queue) takes no more.
            let mut written = 0;
            while let Ok(n) = conn.try_write(&sent[written..]) {
                written += n;
            }
            written
        });
        let mut got = Vec::new();
        client.read_to_end(&mut got).unwrap();
        assert!(
            !got.is_empty() && got.len() <= written,
            "{} of {written}",
            got.len()
        );
        assert!(
            got == payload[..got.len()],
            "not a prefix of the bytes written"
        );
    });
}

/// Regression (io_uring): a dropped listener shut its socket down (its accept in flight kept the
/// socket open a loop turn longer, and a dropped listener must refuse connections at once), and
/// with it every other listener on that socket: one worker's clone of a std listener, dropped,
/// stopped the others accepting. The last one dropped still closes the socket at once.
#[test]
#[cfg_attr(miri, ignore)] // TCP
fn dropping_one_of_two_listeners_on_one_socket_leaves_the_other_accepting() {
    use volt_rt::time::timeout;
    guard(|| {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let clone = listener.try_clone().unwrap();
        block_on(async move {
            let first = TcpListener::from_std(listener).unwrap();
            let second = TcpListener::from_std(clone).unwrap();
            for listener in [&first, &second] {
                // Leaves an accept in flight (on io_uring).
                let accepted = timeout(Duration::from_millis(1), listener.accept()).await;
                assert!(accepted.is_err(), "accepted a connection nobody made");
            }
            drop(first);
            let client = TcpStream::connect(addr).await.unwrap();
            let (_, peer) = second.accept().await.unwrap();
            assert_eq!(peer, client.local_addr().unwrap());
            drop(second);
            let refused = TcpStream::connect(addr).await.map(drop).unwrap_err();
            assert_eq!(refused.kind(), std::io::ErrorKind::ConnectionRefused);
        });
    });
}
