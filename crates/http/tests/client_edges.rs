//! The client against servers that split, stall, misframe or close: HTTP/1 framing byte by
//! byte, what goes back to the pool and what does not, timeouts, HTTP/2 edges, TLS by address.

mod clientcommon;
mod common;
mod h2common;

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use bytes::Bytes;
use clientcommon::{
    body_error, futures_stream, gets_at_once, raw_server, read_head, scripted, url,
};
use http::{HeaderMap, HeaderValue};
use volt_http::header::HeaderName;
use volt_http::{
    get, post, Body, CertKey, Client, Config, Method, Request, Response, Router, StatusCode,
    TlsConfig, Version,
};

/// Writes `bytes` one at a time, so that the client reads them in many pieces.
fn dribble(stream: &mut TcpStream, bytes: &[u8]) {
    stream.set_nodelay(true).unwrap();
    for byte in bytes {
        stream.write_all(&[*byte]).unwrap();
        thread::sleep(Duration::from_micros(100));
    }
}

#[test]
fn a_response_split_byte_by_byte_is_read_whole_and_pooled() {
    let connections = Arc::new(AtomicUsize::new(0));
    let seen = connections.clone();
    let addr = raw_server(move |mut stream| {
        seen.fetch_add(1, Ordering::SeqCst);
        while !read_head(&mut stream).is_empty() {
            dribble(
                &mut stream,
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
                  5;name=\"a b\";x=y\r\nhello\r\n6\r\n world\r\n0\r\nX-Sum: 42\r\n\r\n",
            );
        }
    });
    volt_rt::block_on(async move {
        let client = Client::new();
        for _ in 0..2 {
            let mut response = client.get(&url(addr, "/")).send().await.unwrap();
            let mut body = Vec::new();
            while let Some(chunk) = response.chunk().await.unwrap() {
                body.extend_from_slice(&chunk);
            }
            assert_eq!(body, b"hello world");
            let trailers = response.trailers().unwrap();
            assert_eq!(trailers.get("x-sum").unwrap(), "42");
            assert_eq!(client.idle_connections(), 1);
        }
    });
    assert_eq!(connections.load(Ordering::SeqCst), 1);
}

#[test]
fn only_cleanly_ended_persistent_responses_are_pooled() {
    let cases: [(&'static [u8], &str, bool); 9] = [
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
            "ok",
            true,
        ),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
            "ok",
            false,
        ),
        (
            b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok",
            "ok",
            true,
        ),
        (
            b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
            "ok",
            false,
        ),
        // Bytes after the response: neither pooled nor read as the next response.
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n\r\n",
            "ok",
            false,
        ),
        // Both framings: chunked wins, and the connection is not trusted further.
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\nTransfer-Encoding: chunked\r\n\r\n\
              2\r\nok\r\n0\r\n\r\n",
            "ok",
            false,
        ),
        // 204 and 304 have no body, whatever their fields say.
        (
            b"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n",
            "",
            true,
        ),
        (
            b"HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n",
            "",
            true,
        ),
        (
            b"HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\n",
            "",
            true,
        ),
    ];
    for (answer, body, pooled) in cases {
        let addr = scripted(answer, false);
        volt_rt::block_on(async move {
            let client = Client::new();
            let response = client.get(&url(addr, "/")).send().await.unwrap();
            assert_eq!(response.bytes().await.unwrap(), body);
            let idle = client.idle_connections();
            assert_eq!(
                idle,
                usize::from(pooled),
                "{}",
                String::from_utf8_lossy(answer)
            );
        });
    }
}

#[test]
fn a_head_response_with_a_length_has_no_body() {
    let addr = scripted(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n", false);
    volt_rt::block_on(async move {
        let client = Client::new();
        for _ in 0..2 {
            let response = client.request(Method::HEAD, &url(addr, "/")).send().await;
            let response = response.unwrap();
            assert_eq!(response.header("content-length"), Some("1000"));
            assert_eq!(response.bytes().await.unwrap(), "");
            assert_eq!(client.idle_connections(), 1);
        }
    });
}

#[test]
fn a_pooled_connection_that_got_unasked_bytes_is_not_used() {
    let connections = Arc::new(AtomicUsize::new(0));
    let seen = connections.clone();
    let addr = raw_server(move |mut stream| {
        read_head(&mut stream);
        if seen.fetch_add(1, Ordering::SeqCst) == 0 {
            let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
            stream.write_all(ok).unwrap();
            thread::sleep(Duration::from_millis(50));
            // Once the client holds the connection as idle: a response to nothing, and the
            // connection stays open.
            let junk = b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\njunk";
            stream.write_all(junk).unwrap();
            std::mem::forget(stream);
        } else {
            let fine = b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nfine";
            stream.write_all(fine).unwrap();
        }
    });
    volt_rt::block_on(async move {
        let client = Client::new();
        let first = client.get(&url(addr, "/")).send().await.unwrap();
        assert_eq!(first.bytes().await.unwrap(), "ok");
        volt_rt::time::sleep(Duration::from_millis(300)).await;
        let second = client.get(&url(addr, "/")).send().await.unwrap();
        assert_eq!(second.bytes().await.unwrap(), "fine");
    });
}

#[test]
fn huge_and_overflowing_chunk_sizes() {
    let addr = scripted(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\nabc",
        true,
    );
    volt_rt::block_on(async move {
        let client = Client::new();
        let mut response = client.get(&url(addr, "/")).send().await.unwrap();
        assert_eq!(response.chunk().await.unwrap().unwrap(), "abc");
        let err = response.chunk().await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof, "{err}");
    });
    let overflow = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000000\r\nabc";
    assert_eq!(body_error(overflow), io::ErrorKind::InvalidData);
}

#[test]
fn trailers_over_the_limits_are_refused() {
    let limits = volt_proto::Limits {
        max_head_bytes: 1024,
        max_headers: 4,
        ..volt_proto::Limits::default()
    };
    let long = format!(
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-Long: {}\r\n\r\n",
        "a".repeat(2000)
    );
    let many = format!(
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n{}\r\n",
        "X-T: 1\r\n".repeat(10)
    );
    for answer in [long, many] {
        let addr = scripted(answer.leak().as_bytes(), true);
        let limits = limits.clone();
        volt_rt::block_on(async move {
            let client = Client::builder().limits(limits).build();
            let response = client.get(&url(addr, "/")).send().await.unwrap();
            let err = response.bytes().await.unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidData, "{err}");
            assert_eq!(client.idle_connections(), 0);
        });
    }
}

fn app() -> Router {
    Router::new()
        .route("/", get(|_req: Request| async { "hello" }))
        .route(
            "/port",
            get(|req: Request| async move { req.remote_addr().unwrap().port().to_string() }),
        )
        .route(
            "/host",
            get(|req: Request| async move { req.header("host").unwrap_or("none").to_owned() }),
        )
        .route(
            "/big",
            get(|_req: Request| async { Response::bytes(vec![b'z'; 10 << 20]) }),
        )
        .route(
            "/slow",
            get(|_req: Request| async {
                volt_rt::time::sleep(Duration::from_millis(20)).await;
                "slow"
            }),
        )
        .route(
            "/broken",
            get(|_req: Request| async {
                let parts = [Ok(Bytes::from("part")), Err(io::Error::other("broken"))];
                Response::bytes(Body::stream(futures_stream(parts.into_iter())))
            }),
        )
        .route(
            "/echo",
            post(|mut req: Request| async move {
                let body = req.bytes().await?;
                Ok::<_, volt_http::Error>(Response::bytes(body))
            }),
        )
        .route(
            "/trailers",
            post(|mut req: Request| async move {
                let body = req.bytes().await?;
                let trailers = req.body_mut().trailers().await?.unwrap_or_default();
                let sum = trailers
                    .get("x-sum")
                    .map(|v| v.to_str().unwrap().to_owned());
                let answer = format!("{} {}", body.len(), sum.as_deref().unwrap_or("none"));
                Ok::<_, volt_http::Error>(answer)
            }),
        )
}

#[test]
fn the_pool_honours_its_idle_timeout_and_size() {
    let server = common::start(app());
    let addr = server.addr();
    volt_rt::block_on(async move {
        let client = Client::builder()
            .idle_timeout(Duration::from_millis(100))
            .build();
        let port = |client: Client| async move {
            let response = client.get(&url(addr, "/port")).send().await.unwrap();
            response.text().await.unwrap()
        };
        let first = port(client.clone()).await;
        volt_rt::time::sleep(Duration::from_millis(300)).await;
        assert_ne!(
            port(client.clone()).await,
            first,
            "an expired connection was used"
        );

        for max in [0, 1, 2] {
            let client = Client::builder().max_idle_per_host(max).build();
            let tasks: Vec<_> = (0..4)
                .map(|_| volt_rt::spawn(port(client.clone())))
                .collect();
            for task in tasks {
                task.await.unwrap();
            }
            assert!(client.idle_connections() <= max, "max {max}");
        }
    });
}

#[test]
fn a_body_read_that_times_out_closes_the_connection() {
    let addr = raw_server(|mut stream| {
        read_head(&mut stream);
        let head = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort";
        stream.write_all(head).unwrap();
        thread::sleep(Duration::from_secs(1));
    });
    volt_rt::block_on(async move {
        let client = Client::builder()
            .timeout(Duration::from_millis(200))
            .build();
        let mut response = client.get(&url(addr, "/")).send().await.unwrap();
        assert_eq!(response.chunk().await.unwrap().unwrap(), "short");
        let err = response.chunk().await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        drop(response);
        assert_eq!(client.idle_connections(), 0);
    });
}

#[test]
fn connecting_to_a_full_backlog_times_out() {
    let listener = volt_rt::net::ListenOptions::new()
        .backlog(0)
        .bind_std("127.0.0.1:0")
        .unwrap();
    let addr = listener.local_addr().unwrap();
    // Fill the accept queue: once it is full the kernel drops further SYNs.
    let mut queued = Vec::new();
    while queued.len() < 64 {
        match TcpStream::connect_timeout(&addr, Duration::from_millis(200)) {
            Ok(stream) => queued.push(stream),
            Err(_) => break,
        }
    }
    volt_rt::block_on(async move {
        let client = Client::builder()
            .connect_timeout(Duration::from_millis(300))
            .build();
        let err = client.get(&url(addr, "/")).send().await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut, "{err}");
    });
    drop(listener);
}

#[test]
fn http2_large_bodies_both_ways() {
    let server = common::start(app());
    let addr = server.addr();
    volt_rt::block_on(async move {
        let client = Client::builder().http2_prior_knowledge().build();
        let mut response = client.get(&url(addr, "/big")).send().await.unwrap();
        let mut len = 0;
        while let Some(chunk) = response.chunk().await.unwrap() {
            len += chunk.len();
        }
        assert_eq!(len, 10 << 20);
        let up = vec![b'q'; 3 << 20];
        let echoed = client
            .post(&url(addr, "/echo"))
            .body(up.clone())
            .send()
            .await;
        assert_eq!(echoed.unwrap().bytes().await.unwrap(), up);
    });
}

#[test]
fn http2_stream_reset_mid_body_spares_the_connection() {
    let server = common::start(app());
    let addr = server.addr();
    volt_rt::block_on(async move {
        let client = Client::builder().http2_prior_knowledge().build();
        let port = client.get(&url(addr, "/port")).send().await.unwrap();
        let port = port.text().await.unwrap();
        let mut response = client.get(&url(addr, "/broken")).send().await.unwrap();
        let mut got = Vec::new();
        let err = loop {
            match response.chunk().await {
                Ok(Some(chunk)) => got.extend_from_slice(&chunk),
                Ok(None) => panic!("a broken body ended cleanly"),
                Err(e) => break e,
            }
        };
        assert_eq!(err.kind(), io::ErrorKind::ConnectionReset, "{err}");
        let again = client.get(&url(addr, "/port")).send().await.unwrap();
        assert_eq!(again.text().await.unwrap(), port);
    });
}

#[test]
fn http2_more_requests_than_the_server_allows_at_once() {
    let config = Config {
        h2_max_concurrent_streams: 2,
        ..Config::default()
    };
    let server = common::start_with(1, config, app());
    let addr = server.addr();
    volt_rt::block_on(async move {
        let client = Client::builder().http2_prior_knowledge().build();
        let bodies = gets_at_once(&client, &url(addr, "/slow"), 12).await;
        assert!(bodies.iter().all(|b| b == "slow"), "{bodies:?}");
        let head = client.request(Method::HEAD, &url(addr, "/")).send().await;
        let head = head.unwrap();
        assert_eq!(head.header("content-length"), Some("5"));
        assert_eq!(head.bytes().await.unwrap(), "");
        let host = client.get(&url(addr, "/host")).send().await.unwrap();
        assert_eq!(host.text().await.unwrap(), addr.to_string());
    });
}

#[test]
fn https_to_an_ip_address() {
    let (cert, key, der) = h2common::cert_for(&["127.0.0.1"]);
    let tls = TlsConfig::new(CertKey::from_pem(cert.as_bytes(), key.as_bytes()).unwrap());
    let server = common::start_tls(1, Config::default(), tls.build().unwrap(), app());
    let port = server.addr().port();
    volt_rt::block_on(async move {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(der.into()).unwrap();
        for (builder, version) in [
            (Client::builder(), Version::HTTP_2),
            (Client::builder().http1_only(), Version::HTTP_11),
        ] {
            let client = builder.tls_roots(roots.clone()).build();
            let response = client
                .get(&format!("https://127.0.0.1:{port}/"))
                .send()
                .await
                .unwrap();
            assert_eq!(response.version(), version);
            assert_eq!(response.text().await.unwrap(), "hello");
        }
    });
}

#[test]
fn an_ipv6_literal_url() {
    let Ok(listener) = TcpListener::bind("[::1]:0") else {
        eprintln!("no IPv6 loopback: skipped");
        return;
    };
    let addr = listener.local_addr().unwrap();
    let server = thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let head = read_head(&mut stream);
        let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        stream.write_all(ok).unwrap();
        head
    });
    volt_rt::block_on(async move {
        let response = Client::new().get(&url(addr, "/v6")).send().await.unwrap();
        assert_eq!(response.bytes().await.unwrap(), "ok");
    });
    let head = server.join().unwrap();
    assert!(
        head.contains(&format!("host: [::1]:{}\r\n", addr.port())),
        "{head}"
    );
}

/// A TLS server on its own thread that answers one request with a body delimited by the
/// close, then ends the connection with `close_notify` or by closing the socket alone.
fn tls_close_delimited(close_notify: bool) -> (SocketAddr, Vec<u8>) {
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let der = certified.cert.der().to_vec();
    let key = rustls_pki_types::PrivateKeyDer::Pkcs8(certified.key_pair.serialize_der().into());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![der.clone().into()], key)
        .unwrap();
    let config = Arc::new(config);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    thread::spawn(move || {
        let (tcp, _) = listener.accept().unwrap();
        tcp.set_read_timeout(Some(common::HANG_GUARD)).unwrap();
        let session = rustls::ServerConnection::new(config).unwrap();
        let mut tls = rustls::StreamOwned::new(session, tcp);
        let mut head = Vec::new();
        let mut byte = [0u8];
        while !head.ends_with(b"\r\n\r\n") && tls.read(&mut byte).unwrap_or(0) == 1 {
            head.push(byte[0]);
        }
        tls.write_all(b"HTTP/1.1 200 OK\r\n\r\nuntil the end")
            .unwrap();
        if close_notify {
            tls.conn.send_close_notify();
        }
        tls.flush().unwrap();
    });
    (addr, der)
}

#[test]
fn tls_close_notify_ends_a_body_and_a_bare_close_truncates_it() {
    for close_notify in [true, false] {
        let (addr, der) = tls_close_delimited(close_notify);
        volt_rt::block_on(async move {
            let mut roots = rustls::RootCertStore::empty();
            roots.add(der.into()).unwrap();
            let client = Client::builder().tls_roots(roots).build();
            let url = format!("https://localhost:{}/", addr.port());
            let response = client.get(&url).send().await.unwrap();
            let body = response.bytes().await;
            if close_notify {
                assert_eq!(body.unwrap(), "until the end");
            } else {
                let err = body.unwrap_err();
                assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof, "{err}");
            }
        });
    }
}

#[test]
fn http2_sends_the_trailers_of_a_channel() {
    let server = common::start(app());
    let addr = server.addr();
    volt_rt::block_on(async move {
        let client = Client::builder().http2_prior_knowledge().build();
        {
            let (mut sender, body) = Body::channel();
            volt_rt::spawn(async move {
                sender.send("abc").await.unwrap();
                // The trailers become known only once the request is on its way.
                volt_rt::time::sleep(Duration::from_millis(100)).await;
                sender.send("de").await.unwrap();
                let mut trailers = HeaderMap::new();
                trailers.insert("x-sum", HeaderValue::from_static("42"));
                sender.send_trailers(trailers);
            });
            let response = client.post(&url(addr, "/trailers")).body(body).send().await;
            assert_eq!(response.unwrap().text().await.unwrap(), "5 42");
        }
    });
}

#[test]
fn http2_drops_connection_specific_headers() {
    let server = common::start(app());
    let addr = server.addr();
    volt_rt::block_on(async move {
        let client = Client::builder().http2_prior_knowledge().build();
        for (name, value) in [
            ("connection", "close"),
            ("keep-alive", "timeout=5"),
            ("upgrade", "websocket"),
            ("te", "gzip"),
            ("proxy-connection", "keep-alive"),
            ("te", "trailers"),
        ] {
            let request = client.get(&url(addr, "/")).header(
                HeaderName::from_static(name),
                HeaderValue::from_static(value),
            );
            let response = request.send().await.unwrap();
            assert_eq!(response.text().await.unwrap(), "hello", "{name}");
        }
    });
}

#[test]
fn a_response_that_comes_before_the_whole_upload_is_returned() {
    // Refuses the upload at its head and reads none of the body; then either waits with the
    // connection open or closes it at once (a reset, with the body unread).
    for wait in [true, false] {
        let addr = raw_server(move |mut stream| {
            read_head(&mut stream);
            let refusal = b"HTTP/1.1 413 Content Too Large\r\nContent-Length: 4\r\n\
                            Connection: close\r\n\r\nbig!";
            stream.write_all(refusal).unwrap();
            if wait {
                thread::sleep(Duration::from_secs(2));
            }
        });
        volt_rt::block_on(async move {
            let client = Client::builder().timeout(Duration::from_secs(10)).build();
            let upload = client.post(&url(addr, "/")).body(vec![b'u'; 32 << 20]);
            let response = upload.send().await.unwrap();
            assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
            assert_eq!(response.bytes().await.unwrap(), "big!");
            assert_eq!(client.idle_connections(), 0);
        });
    }
}

#[test]
fn an_interim_response_does_not_stop_an_upload() {
    let addr = raw_server(|mut stream| {
        let head = read_head(&mut stream);
        stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").unwrap();
        let len: usize = head
            .lines()
            .find_map(|line| line.strip_prefix("content-length: "))
            .unwrap()
            .parse()
            .unwrap();
        let mut body = vec![0; len];
        stream.read_exact(&mut body).unwrap();
        let answer = format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{len}",
            len.to_string().len()
        );
        stream.write_all(answer.as_bytes()).unwrap();
    });
    volt_rt::block_on(async move {
        let client = Client::new();
        let upload = client.post(&url(addr, "/")).body(vec![b'u'; 8 << 20]);
        let response = upload.send().await.unwrap();
        assert_eq!(response.text().await.unwrap(), (8 << 20).to_string());
        assert_eq!(client.idle_connections(), 1);
    });
}

#[test]
fn a_url_with_a_query_and_no_path() {
    let (tx, rx) = std::sync::mpsc::channel();
    let addr = raw_server(move |mut stream| {
        tx.send(read_head(&mut stream)).unwrap();
        stream
            .write_all(b"HTTP/1.1 204 No Content\r\n\r\n")
            .unwrap();
    });
    volt_rt::block_on(async move {
        let response = Client::new().get(&format!("http://{addr}?q=1#frag")).send();
        assert_eq!(response.await.unwrap().status(), StatusCode::NO_CONTENT);
    });
    let head = rx.recv().unwrap();
    assert!(head.starts_with("GET /?q=1 HTTP/1.1\r\n"), "{head}");
}

#[test]
fn http2_responses_dropped_mid_body_give_their_window_back() {
    let server = common::start(app());
    let addr = server.addr();
    volt_rt::block_on(async move {
        let client = Client::builder().http2_prior_knowledge().build();
        for _ in 0..3 {
            let mut response = client.get(&url(addr, "/big")).send().await.unwrap();
            response.chunk().await.unwrap();
            volt_rt::time::sleep(Duration::from_millis(50)).await;
            drop(response);
        }
        let body = client.get(&url(addr, "/big")).send().await.unwrap().bytes();
        assert_eq!(body.await.unwrap().len(), 10 << 20);
    });
}
#[test]
fn http2_a_response_before_the_whole_upload_is_returned() {
    let server = common::start(app());
    let addr = server.addr();
    volt_rt::block_on(async move {
        let client = Client::builder()
            .http2_prior_knowledge()
            .timeout(Duration::from_secs(5))
            .build();
        // `/` takes GET only: answered 405 without reading the body.
        let upload = client.post(&url(addr, "/")).body(vec![b'u'; 4 << 20]);
        let response = upload.send().await.unwrap();
        assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
        let again = client.get(&url(addr, "/")).send().await.unwrap();
        assert_eq!(again.text().await.unwrap(), "hello");
    });
}

#[test]
fn a_slow_upload_that_keeps_moving_does_not_time_out() {
    // Reads 64 KiB every 10 ms: a 24 MB body takes seconds, each write far less than the
    // client's timeout.
    let addr = raw_server(|mut stream| {
        read_head(&mut stream);
        let mut piece = vec![0; 64 * 1024];
        let mut left = 24 << 20;
        while left > 0 {
            let n = stream.read(&mut piece).unwrap();
            assert!(n > 0, "the client stopped sending");
            left -= n;
            thread::sleep(Duration::from_millis(10));
        }
        stream
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            .unwrap();
    });
    volt_rt::block_on(async move {
        let client = Client::builder().timeout(Duration::from_secs(1)).build();
        let upload = client.post(&url(addr, "/")).body(vec![b'u'; 24 << 20]);
        let response = upload.send().await.unwrap();
        assert_eq!(response.bytes().await.unwrap(), "ok");
    });
}

#[test]
fn http2_requests_that_start_together_share_one_connection() {
    let server = common::start(app());
    let addr = server.addr();
    volt_rt::block_on(async move {
        let client = Client::builder().http2_prior_knowledge().build();
        let mut ports = gets_at_once(&client, &url(addr, "/port"), 8).await;
        ports.dedup();
        assert_eq!(ports.len(), 1, "more than one connection: {ports:?}");
    });
}

/// A server that reads a head with `Expect: 100-continue`, checks that no body byte came
/// within 300 ms, then does `then` with the stream and sends back what it says.
fn expecting(then: fn(&mut TcpStream) -> Vec<u8>) -> SocketAddr {
    raw_server(move |mut stream| {
        let head = read_head(&mut stream);
        assert!(head.contains("expect: 100-continue\r\n"), "{head}");
        stream
            .set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        let mut byte = [0u8];
        let early = stream.read(&mut byte);
        assert!(early.is_err(), "the body came before the 100: {early:?}");
        stream.set_read_timeout(Some(common::HANG_GUARD)).unwrap();
        let answer = then(&mut stream);
        stream.write_all(&answer).unwrap();
    })
}

fn post_expecting(addr: SocketAddr) -> io::Result<(StatusCode, String)> {
    volt_rt::block_on(async move {
        let response = Client::new()
            .post(&url(addr, "/up"))
            .header(
                HeaderName::from_static("expect"),
                HeaderValue::from_static("100-continue"),
            )
            .body("hello")
            .send()
            .await?;
        Ok((response.status(), response.text().await?))
    })
}

#[test]
fn expect_100_continue_sends_the_body_after_the_100() {
    let addr = expecting(|stream| {
        stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").unwrap();
        let mut body = [0u8; 5];
        stream.read_exact(&mut body).unwrap();
        let mut answer = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n".to_vec();
        answer.extend_from_slice(&body);
        answer
    });
    let (status, body) = post_expecting(addr).unwrap();
    assert_eq!((status, body.as_str()), (StatusCode::OK, "hello"));
}

#[test]
fn expect_100_continue_keeps_the_body_when_refused() {
    // `expecting` checked that no body byte came before this answer.
    let addr = expecting(|_stream| {
        b"HTTP/1.1 413 Content Too Large\r\ncontent-length: 3\r\nconnection: close\r\n\r\nbig"
            .to_vec()
    });
    let (status, body) = post_expecting(addr).unwrap();
    assert_eq!(
        (status, body.as_str()),
        (StatusCode::PAYLOAD_TOO_LARGE, "big")
    );
}

#[test]
fn expect_100_continue_sends_the_body_anyway_after_a_second() {
    // A server that does not know the expectation: it waits for the body.
    let addr = raw_server(|mut stream| {
        read_head(&mut stream);
        let mut body = [0u8; 5];
        stream.read_exact(&mut body).unwrap();
        let mut answer = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n".to_vec();
        answer.extend_from_slice(&body);
        stream.write_all(&answer).unwrap();
    });
    let (status, body) = post_expecting(addr).unwrap();
    assert_eq!((status, body.as_str()), (StatusCode::OK, "hello"));
}

/// `/up` reads the body (volt answers 100 then), `/no` answers 403 without reading it.
fn expect_app() -> Router {
    Router::new()
        .route(
            "/up",
            post(|mut req: Request| async move { req.text().await }),
        )
        .route(
            "/no",
            post(|_req: Request| async { Response::new(StatusCode::FORBIDDEN) }),
        )
}

#[test]
fn expect_100_continue_against_volt() {
    let app = expect_app();
    let server = common::start(app);
    let addr = server.addr();
    volt_rt::block_on(async move {
        let client = Client::new();
        for (path, status, body) in [("/up", 200, "hello"), ("/no", 403, "")] {
            let response = client
                .post(&url(addr, path))
                .header(
                    HeaderName::from_static("expect"),
                    HeaderValue::from_static("100-continue"),
                )
                .body("hello")
                .send()
                .await
                .unwrap();
            assert_eq!(response.status().as_u16(), status, "{path}");
            assert_eq!(response.text().await.unwrap(), body, "{path}");
        }
    });
}

/// On HTTP/2 as on HTTP/1: the body waits for volt's 100 (sent when the handler reads it), and
/// a handler that answers without reading it gets no body at all: the stream that would carry
/// it is never polled.
#[test]
fn expect_100_continue_over_http2_against_volt() {
    let app = expect_app();
    let server = common::start(app);
    let addr = server.addr();
    volt_rt::block_on(async move {
        let client = Client::builder().http2_prior_knowledge().build();
        for (path, status, body) in [("/up", 200, "hello"), ("/no", 403, "")] {
            let polled = std::rc::Rc::new(std::cell::Cell::new(false));
            let flag = polled.clone();
            let chunks = std::iter::once_with(move || {
                flag.set(true);
                Ok(Bytes::from_static(b"hello"))
            });
            let response = client
                .post(&url(addr, path))
                .header(
                    HeaderName::from_static("expect"),
                    HeaderValue::from_static("100-continue"),
                )
                .body(Body::stream(futures_stream(chunks)))
                .send()
                .await
                .unwrap();
            assert_eq!(response.version(), Version::HTTP_2, "{path}");
            assert_eq!(response.status().as_u16(), status, "{path}");
            assert_eq!(response.text().await.unwrap(), body, "{path}");
            assert_eq!(polled.get(), path == "/up", "{path}: was the body sent?");
        }
    });
}
