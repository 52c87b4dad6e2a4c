//! Waits the io_uring reactor must not stretch: a flush alone on a worker, a write to a full
//! socket beside other work, and the first read of an accepted stream (a `read` syscall on
//! io_uring) with bytes already waiting. Each runs on both backends, as the whole suite does.

mod common;

use std::io;
use std::net::Shutdown;
use std::time::Duration;

use common::guard;
use volt_rt::net::{TcpListener, TcpStream};
use volt_rt::{block_on, spawn};

/// A flush waits for the send of what was written; nothing else happens on the worker (the
/// reader is a thread of its own). On io_uring the enter that submits a small send waits for
/// one completion more than the sends nobody waits for, so a send someone awaits must not be
/// counted among those: each flush would then sleep until the reactor's safety limit on that
/// wait (1 ms when this test was written, 50 ms now), and the thousand flushes here would take
/// seconds instead of milliseconds.
#[test]
#[cfg_attr(miri, ignore)]
fn a_flush_alone_on_the_worker_returns_without_waiting_for_a_timer() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let reader = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut received = Vec::new();
        std::io::Read::read_to_end(&mut stream, &mut received).unwrap();
        received
    });
    let data: Vec<u8> = (0..512_000u32).map(|i| (i % 233) as u8).collect();
    let elapsed = guard({
        let data = data.clone();
        move || {
            block_on(async move {
                let stream = TcpStream::connect(addr).await.unwrap();
                let started = std::time::Instant::now();
                for chunk in data.chunks(512) {
                    stream.write_all(chunk).await.unwrap();
                    stream.flush().await.unwrap();
                }
                let elapsed = started.elapsed();
                stream.shutdown(Shutdown::Write).unwrap();
                elapsed
            })
        }
    });
    assert!(reader.join().unwrap() == data);
    // 1,000 flushes: ~10 ms here; a second or more if each waited for the limit.
    assert!(
        elapsed < Duration::from_millis(800),
        "1,000 flushes took {elapsed:?}"
    );
}

/// A write that finds its socket's buffer full holds up nothing else on the worker. On
/// io_uring the reactor's wait counts on a small send nobody awaits to complete in the enter
/// that submits it. Made with `MSG_DONTWAIT`, such a send does, with `EAGAIN`, and goes again
/// waiting for room. If it waited for room at once, the enter would sleep until the reactor's
/// 50 ms safety limit. Here 40 streams each meet a full socket once, while a ping-pong on
/// another connection waits in the same enter: the ping-pongs take a few milliseconds in all,
/// and took ~0.9 s when the send waited for room (in some rounds the kernel found room after
/// all). On epoll each write waits for writability in a task of its own, dropped at the end.
#[test]
#[cfg_attr(miri, ignore)]
fn a_write_to_a_full_socket_holds_up_nothing_else() {
    use std::io::{Read, Write};
    let sink = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let sink_addr = sink.local_addr().unwrap();
    let echo = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let echo_addr = echo.local_addr().unwrap();
    std::thread::spawn(move || {
        let (mut stream, _) = echo.accept().unwrap();
        let mut buf = [0; 64];
        while let Ok(n @ 1..) = stream.read(&mut buf) {
            stream.write_all(&buf[..n]).unwrap();
        }
    });
    // The sink's ends, kept open (and never read) until the end.
    let mut peers = Vec::new();
    let waited = guard(move || {
        block_on(async move {
            let ping = TcpStream::connect(echo_addr).await.unwrap();
            let mut waited = Duration::ZERO;
            for _ in 0..40 {
                let full = std::net::TcpStream::connect(sink_addr).unwrap();
                peers.push(sink.accept().unwrap().0);
                rustix::net::sockopt::set_socket_send_buffer_size(&full, 4096).unwrap();
                full.set_nonblocking(true).unwrap();
                fill(&full);
                let full = TcpStream::from_std(full).unwrap();
                spawn(async move { full.write_all(b"more").await });
                let started = std::time::Instant::now();
                ping.write_all(b"p").await.unwrap();
                let mut pong = [0; 1];
                assert_eq!(ping.read(&mut pong).await.unwrap(), 1);
                waited += started.elapsed();
            }
            waited
        })
    });
    assert!(
        waited < Duration::from_millis(300),
        "40 ping-pongs took {waited:?}"
    );
}

/// Writes to a non-blocking socket until its buffer takes nothing more, even after a moment in
/// which the kernel may move bytes on to the peer's buffer.
fn fill(stream: &std::net::TcpStream) {
    use std::io::Write;
    loop {
        let mut took = 0;
        loop {
            match (&*stream).write(&[0; 4096]) {
                Ok(n) => took += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => panic!("filling the socket: {e}"),
            }
        }
        if took == 0 {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Bytes that arrived before the connection was accepted come out whole and in order through
/// small reads. (On io_uring an accepted stream's first read is a `read` syscall through the
/// reactor's 16 KiB scratch buffer, which keeps what a small read has no room for; later reads
/// come from the receive it then arms.)
#[test]
#[cfg_attr(miri, ignore)]
fn bytes_waiting_at_accept_come_out_whole_through_small_reads() {
    let payload: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    let received = guard({
        let payload = payload.clone();
        move || {
            block_on(async move {
                let listener = TcpListener::bind("127.0.0.1:0").unwrap();
                let mut client =
                    std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
                // The kernel's buffers take all of it before the accept.
                std::io::Write::write_all(&mut client, &payload).unwrap();
                drop(client);
                let (server, _) = listener.accept().await.unwrap();
                let mut received = Vec::new();
                let mut buf = [0; 1000];
                loop {
                    let n = server.read(&mut buf).await.unwrap();
                    if n == 0 {
                        break;
                    }
                    received.extend_from_slice(&buf[..n]);
                }
                received
            })
        }
    });
    assert!(received == payload);
}
