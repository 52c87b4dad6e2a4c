//! Helpers of the client tests: scripted raw servers that answer with exact bytes, a stream of
//! ready chunks, URLs.
#![allow(dead_code)] // each test binary uses a different part

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use bytes::Bytes;
use volt_http::{Client, StatusCode};

use crate::common;

/// A `Stream` of the items of `iter`, each ready at once.
pub fn futures_stream<I: Iterator<Item = io::Result<Bytes>> + Unpin>(
    iter: I,
) -> impl futures_core::Stream<Item = io::Result<Bytes>> {
    struct Iter<I>(I);
    impl<I: Iterator<Item = io::Result<Bytes>> + Unpin> futures_core::Stream for Iter<I> {
        type Item = io::Result<Bytes>;
        fn poll_next(
            mut self: std::pin::Pin<&mut Self>,
            _cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Self::Item>> {
            std::task::Poll::Ready(self.0.next())
        }
    }
    Iter(iter)
}

pub fn url(addr: SocketAddr, path: &str) -> String {
    format!("http://{addr}{path}")
}

/// A server on its own thread that hands each accepted connection to `serve`, in turn.
pub fn raw_server(serve: impl Fn(TcpStream) + Send + 'static) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            stream.set_read_timeout(Some(common::HANG_GUARD)).unwrap();
            serve(stream);
        }
    });
    addr
}

/// What a [`proxy`] saw: connections accepted, and those the client closed.
#[derive(Clone, Default)]
pub struct Seen {
    pub accepted: Arc<AtomicUsize>,
    pub closed: Arc<AtomicUsize>,
}

impl Seen {
    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    pub fn closed(&self) -> usize {
        self.closed.load(Ordering::SeqCst)
    }
}

/// A TCP proxy to `to` on its own threads, counting the connections clients open and close.
pub fn proxy(to: SocketAddr) -> (SocketAddr, Seen) {
    let seen = Seen::default();
    let counts = seen.clone();
    let addr = raw_server(move |client| {
        counts.accepted.fetch_add(1, Ordering::SeqCst);
        let server = TcpStream::connect(to).unwrap();
        let (mut from_server, mut to_client) =
            (server.try_clone().unwrap(), client.try_clone().unwrap());
        thread::spawn(move || {
            let _ = io::copy(&mut from_server, &mut to_client);
            let _ = to_client.shutdown(Shutdown::Write);
        });
        let closed = counts.closed.clone();
        let (mut from_client, mut to_server) = (client, server);
        thread::spawn(move || {
            let _ = io::copy(&mut from_client, &mut to_server);
            closed.fetch_add(1, Ordering::SeqCst);
            let _ = to_server.shutdown(Shutdown::Write);
        });
    });
    (addr, seen)
}

/// The bodies of `n` GETs of `url` sent at once, each from a task of its own.
pub async fn gets_at_once(client: &Client, url: &str, n: usize) -> Vec<String> {
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let (client, url) = (client.clone(), url.to_owned());
            volt_rt::spawn(async move {
                let response = client.get(&url).send().await.unwrap();
                response.text().await.unwrap()
            })
        })
        .collect();
    let mut bodies = Vec::new();
    for task in tasks {
        bodies.push(task.await.unwrap());
    }
    bodies
}

/// Reads one request head (through its blank line) and returns it.
pub fn read_head(stream: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).unwrap_or(0) == 0 {
            break;
        }
        head.push(byte[0]);
    }
    String::from_utf8(head).unwrap()
}

/// Serves every connection: reads a head, answers with `answer`, and closes if `close`.
pub fn scripted(answer: &'static [u8], close: bool) -> SocketAddr {
    raw_server(move |mut stream| loop {
        if read_head(&mut stream).is_empty() {
            return;
        }
        stream.write_all(answer).unwrap();
        if close {
            return;
        }
    })
}

pub fn block_on_get(url: &str) -> io::Result<(StatusCode, io::Result<Bytes>)> {
    volt_rt::block_on(async {
        let client = Client::builder().timeout(Duration::from_secs(5)).build();
        let response = client.get(url).send().await?;
        Ok((response.status(), response.bytes().await))
    })
}

/// The kind of error reading the body of `answer`, which a server that then closes sends to a
/// GET.
pub fn body_error(answer: &'static [u8]) -> io::ErrorKind {
    let addr = scripted(answer, true);
    let (_, body) = block_on_get(&url(addr, "/")).unwrap();
    body.unwrap_err().kind()
}
