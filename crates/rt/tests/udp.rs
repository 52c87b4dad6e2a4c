//! UDP sockets: exact datagrams out, exact datagrams back, on whichever backend `VOLT_IO` picks.

mod common;

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use common::guard;
use volt_rt::net::{ListenOptions, UdpSocket};
use volt_rt::{block_on, spawn};

/// An echo server on one socket, a client on another: each datagram comes back whole.
#[test]
fn echo_round_trips_each_datagram() {
    guard(|| {
        block_on(async {
            let server = UdpSocket::bind("127.0.0.1:0").unwrap();
            let server_addr = server.local_addr().unwrap();
            let echo = spawn(async move {
                let mut buf = vec![0; 65_535];
                for _ in 0..3 {
                    let (n, from) = server.recv_from(&mut buf).await.unwrap();
                    server.send_to(&buf[..n], from).await.unwrap();
                }
            });
            let client = UdpSocket::bind("127.0.0.1:0").unwrap();
            let mut buf = vec![0; 65_535];
            for msg in [&b"ping"[..], &[7u8; 1200][..], b""] {
                assert_eq!(client.send_to(msg, server_addr).await.unwrap(), msg.len());
                let (n, from) = client.recv_from(&mut buf).await.unwrap();
                assert_eq!((&buf[..n], from), (msg, server_addr));
            }
            echo.await.unwrap();
        })
    });
}

/// Many datagrams sent before the reader runs are all read, in order (loopback loses none
/// within the default receive buffer), through `try_recv_from` until `WouldBlock`.
#[test]
fn many_datagrams_are_drained_until_would_block() {
    guard(|| {
        block_on(async {
            let a = UdpSocket::bind("127.0.0.1:0").unwrap();
            let b = UdpSocket::bind("127.0.0.1:0").unwrap();
            let b_addr = b.local_addr().unwrap();
            for i in 0..200u32 {
                a.try_send_to(&i.to_be_bytes(), b_addr).unwrap();
            }
            let mut buf = [0; 16];
            for i in 0..200u32 {
                let (n, from) = b.try_recv_from(&mut buf).unwrap();
                assert_eq!(
                    (&buf[..n], from),
                    (&i.to_be_bytes()[..], a.local_addr().unwrap())
                );
            }
            let err = b.try_recv_from(&mut buf).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
        })
    });
}

/// A reader that found nothing (`WouldBlock`, then `Pending`) is woken by the next datagram,
/// sent by another task after a delay: the readiness edge is not lost on either backend.
#[test]
fn a_waiting_reader_wakes_on_the_next_datagram() {
    guard(|| {
        block_on(async {
            let reader = UdpSocket::bind("127.0.0.1:0").unwrap();
            let addr = reader.local_addr().unwrap();
            let mut buf = [0; 16];
            let err = reader.try_recv_from(&mut buf).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
            let sender = spawn(async move {
                let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
                for round in 0..3u8 {
                    volt_rt::time::sleep(Duration::from_millis(20)).await;
                    sender.send_to(&[round], addr).await.unwrap();
                }
            });
            for round in 0..3u8 {
                let (n, _) = reader.recv_from(&mut buf).await.unwrap();
                assert_eq!(&buf[..n], &[round]);
            }
            sender.await.unwrap();
        })
    });
}

/// With `SO_REUSEPORT` two sockets bind the same port; without it the second bind fails.
#[test]
fn reuse_port_lets_two_sockets_share_a_port() {
    guard(|| {
        block_on(async {
            let opts = ListenOptions::new().reuse_port(true);
            let first = opts.bind_udp("127.0.0.1:0").unwrap();
            let addr: SocketAddr = first.local_addr().unwrap();
            let second = opts.bind_udp(addr).unwrap();
            assert_eq!(second.local_addr().unwrap(), addr);
            let err = UdpSocket::bind(addr).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::AddrInUse);
        })
    });
}

/// A connected socket hears of a port with nothing bound (loopback answers with ICMP port
/// unreachable): its next receive fails with `ConnectionRefused` rather than waiting forever.
#[test]
fn a_connected_socket_sees_a_closed_port_refuse() {
    guard(|| {
        block_on(async {
            // A port that was free a moment ago: bound, read, released.
            let gone = UdpSocket::bind("127.0.0.1:0").unwrap();
            let addr = gone.local_addr().unwrap();
            drop(gone);
            let client = UdpSocket::bind("127.0.0.1:0").unwrap();
            client.connect(addr).unwrap();
            client.send_to(b"anyone?", addr).await.unwrap();
            let mut buf = [0; 64];
            let read = volt_rt::time::timeout(Duration::from_secs(5), client.recv_from(&mut buf))
                .await
                .expect("the refusal arrives at once on loopback");
            assert_eq!(read.unwrap_err().kind(), io::ErrorKind::ConnectionRefused);
        })
    });
}
