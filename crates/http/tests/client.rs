//! The HTTP/1.1 client against volt's own server (plain and TLS) and against scripted raw
//! servers that answer with exact bytes: pooling, bodies both ways, framing, errors, retries.

mod clientcommon;
mod common;
mod h2common;

use std::io::{self, Write};
use std::net::TcpListener;
use std::thread;
use std::time::Duration;

use bytes::Bytes;
use clientcommon::{
    block_on_get, body_error, futures_stream, gets_at_once, proxy, raw_server, read_head, scripted,
    url,
};
use volt_http::header::{HeaderName, HeaderValue};
use volt_http::{
    get, post, Body, CertKey, Client, Config, Method, Request, Response, Router, StatusCode,
    TlsConfig, Version,
};

fn app() -> Router {
    Router::new()
        .route("/", get(|_req: Request| async { "hello" }))
        .route(
            // The client's address: the same port twice means the connection was reused.
            "/port",
            get(|req: Request| async move { req.remote_addr().unwrap().port().to_string() }),
        )
        .route(
            "/echo",
            post(|mut req: Request| async move {
                let kind = req.header("content-type").unwrap_or("none").to_owned();
                let body = req.bytes().await?;
                Ok::<_, volt_http::Error>(Response::bytes(body).with_header("x-type", &kind))
            }),
        )
        .route(
            "/stream",
            get(|_req: Request| async {
                let parts = ["one ", "two ", "three"].map(|p| Ok(Bytes::from(p)));
                Response::text(Body::stream(futures_stream(parts.into_iter())))
            }),
        )
}

#[test]
fn gets_and_reuses_the_connection() {
    let server = common::start(app());
    let addr = server.addr();
    volt_rt::block_on(async move {
        let client = Client::new();
        let response = client.get(&url(addr, "/")).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.header("content-length"), Some("5"));
        assert_eq!(response.text().await.unwrap(), "hello");
        assert_eq!(client.idle_connections(), 1);

        let first = client.get(&url(addr, "/port")).send().await.unwrap();
        let first = first.text().await.unwrap();
        let second = client.get(&url(addr, "/port")).send().await.unwrap();
        assert_eq!(
            second.text().await.unwrap(),
            first,
            "a second connection was opened"
        );
        assert_eq!(client.idle_connections(), 1);
    });
}

#[test]
fn a_response_dropped_unread_closes_its_connection() {
    let server = common::start(app());
    let addr = server.addr();
    volt_rt::block_on(async move {
        let client = Client::new();
        let response = client.get(&url(addr, "/stream")).send().await.unwrap();
        drop(response);
        assert_eq!(client.idle_connections(), 0);
        // The next request connects anew and works.
        let body = client.get(&url(addr, "/")).send().await.unwrap().bytes();
        assert_eq!(body.await.unwrap(), "hello");
    });
}

#[test]
fn posts_json_and_in_memory_bodies() {
    let server = common::start(app());
    let addr = server.addr();
    volt_rt::block_on(async move {
        let client = Client::new();
        let value = serde_json::json!({"name": "volt", "n": [1, 2, 3]});
        let response = client.post(&url(addr, "/echo")).json(&value).send().await;
        let response = response.unwrap();
        assert_eq!(response.header("x-type"), Some("application/json"));
        let back: serde_json::Value = response.json().await.unwrap();
        assert_eq!(back, value);

        // Larger than what goes out in one write with the head.
        let big = vec![b'x'; 100_000];
        let response = client.post(&url(addr, "/echo")).body(big.clone());
        let body = response.send().await.unwrap().bytes().await.unwrap();
        assert_eq!(body, big);
    });
}

#[test]
fn streams_a_request_body_chunked_and_sized() {
    let server = common::start(app());
    let addr = server.addr();
    volt_rt::block_on(async move {
        let client = Client::new();
        let (mut sender, body) = Body::channel();
        volt_rt::spawn(async move {
            for part in ["a", "bb", "ccc"] {
                sender.send(part).await.unwrap();
            }
        });
        let response = client.post(&url(addr, "/echo")).body(body).send().await;
        assert_eq!(response.unwrap().bytes().await.unwrap(), "abbccc");

        let parts = ["12", "345"].map(|p| Ok(Bytes::from(p)));
        let sized = Body::sized_stream(5, futures_stream(parts.into_iter()));
        let response = client.post(&url(addr, "/echo")).body(sized).send().await;
        assert_eq!(response.unwrap().bytes().await.unwrap(), "12345");

        // A sized stream that runs short is refused, not sent as a truncated body.
        let parts = ["12"].map(|p| Ok(Bytes::from(p)));
        let short = Body::sized_stream(5, futures_stream(parts.into_iter()));
        let err = client.post(&url(addr, "/echo")).body(short).send().await;
        assert_eq!(err.unwrap_err().kind(), io::ErrorKind::InvalidInput);
    });
}

#[test]
fn streams_a_chunked_response() {
    let server = common::start(app());
    let addr = server.addr();
    volt_rt::block_on(async move {
        let client = Client::new();
        let mut response = client.get(&url(addr, "/stream")).send().await.unwrap();
        assert_eq!(response.header("transfer-encoding"), Some("chunked"));
        let mut all = Vec::new();
        while let Some(chunk) = response.chunk().await.unwrap() {
            all.extend_from_slice(&chunk);
        }
        assert_eq!(all, b"one two three");
        assert_eq!(response.trailers().map(|t| t.len()), Some(0));
        assert_eq!(client.idle_connections(), 1);
    });
}

#[test]
fn head_requests_read_no_body() {
    let server = common::start(app());
    let addr = server.addr();
    volt_rt::block_on(async move {
        let client = Client::new();
        let response = client.request(Method::HEAD, &url(addr, "/")).send().await;
        let response = response.unwrap();
        assert_eq!(response.header("content-length"), Some("5"));
        assert_eq!(
            client.idle_connections(),
            1,
            "the connection is free at once"
        );
        assert_eq!(response.bytes().await.unwrap(), "");
        let body = client.get(&url(addr, "/")).send().await.unwrap().text();
        assert_eq!(body.await.unwrap(), "hello");
    });
}

#[test]
fn https_with_the_callers_roots_http2_by_alpn() {
    let (cert, key, der) = h2common::cert_for(&["localhost"]);
    let tls = TlsConfig::new(CertKey::from_pem(cert.as_bytes(), key.as_bytes()).unwrap());
    let server = common::start_tls(1, Config::default(), tls.build().unwrap(), app());
    let port = server.addr().port();
    volt_rt::block_on(async move {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(der.into()).unwrap();
        let url = format!("https://localhost:{port}/");
        for (builder, version) in [
            (Client::builder(), Version::HTTP_2),
            (Client::builder().http1_only(), Version::HTTP_11),
        ] {
            let client = builder.tls_roots(roots.clone()).build();
            for _ in 0..2 {
                let response = client.get(&url).send().await.unwrap();
                assert_eq!(response.version(), version);
                assert_eq!(response.text().await.unwrap(), "hello");
            }
            assert_eq!(client.idle_connections(), 1);
        }

        // Mozilla's roots do not include a self-signed certificate.
        let err = Client::new().get(&url).send().await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData, "{err}");
    });
}

#[test]
fn http2_prior_knowledge_multiplexes_one_connection() {
    let server = common::start(app());
    let addr = server.addr();
    volt_rt::block_on(async move {
        let client = Client::builder().http2_prior_knowledge().build();
        let response = client.get(&url(addr, "/")).send().await.unwrap();
        assert_eq!(response.version(), Version::HTTP_2);
        assert_eq!(response.text().await.unwrap(), "hello");

        // Three requests at once: all on the one connection (one client port).
        let seen = gets_at_once(&client, &url(addr, "/port"), 3).await;
        assert!(seen.iter().all(|p| *p == seen[0]), "{seen:?}");
        assert_eq!(client.idle_connections(), 1);

        let value = serde_json::json!({"over": "h2"});
        let response = client.post(&url(addr, "/echo")).json(&value).send().await;
        let response = response.unwrap();
        assert_eq!(response.header("x-type"), Some("application/json"));
        assert_eq!(response.json::<serde_json::Value>().await.unwrap(), value);

        let big = vec![b'y'; 300_000]; // past the initial 64 KiB flow-control windows
        let response = client
            .post(&url(addr, "/echo"))
            .body(big.clone())
            .send()
            .await;
        assert_eq!(response.unwrap().bytes().await.unwrap(), big);

        let (mut sender, body) = Body::channel();
        volt_rt::spawn(async move {
            for part in ["x", "yy", "zzz"] {
                sender.send(part).await.unwrap();
            }
        });
        let response = client.post(&url(addr, "/echo")).body(body).send().await;
        assert_eq!(response.unwrap().bytes().await.unwrap(), "xyyzzz");

        let mut response = client.get(&url(addr, "/stream")).send().await.unwrap();
        let mut all = Vec::new();
        while let Some(chunk) = response.chunk().await.unwrap() {
            all.extend_from_slice(&chunk);
        }
        assert_eq!(all, b"one two three");
        assert!(response.trailers().is_some());
    });
}

#[test]
fn http2_reconnects_after_the_server_closes_the_connection() {
    let config = Config {
        idle_timeout: Duration::from_millis(100),
        ..Config::default()
    };
    let server = common::start_with(1, config, app());
    let addr = server.addr();
    volt_rt::block_on(async move {
        let client = Client::builder().http2_prior_knowledge().build();
        let mut ports = Vec::new();
        for _ in 0..3 {
            let response = client.get(&url(addr, "/port")).send().await.unwrap();
            ports.push(response.text().await.unwrap());
            // The server closes the idle connection (GOAWAY) meanwhile.
            volt_rt::time::sleep(Duration::from_millis(400)).await;
        }
        ports.dedup();
        assert_eq!(
            ports.len(),
            3,
            "each request on a new connection: {ports:?}"
        );
    });
}

/// Waits (on the runtime, so the client's tasks run) until `done`, for at most 10 s.
async fn until(mut done: impl FnMut() -> bool) -> bool {
    for _ in 0..200 {
        if done() {
            return true;
        }
        volt_rt::time::sleep(Duration::from_millis(50)).await;
    }
    done()
}

#[test]
fn http2_connections_close_after_the_idle_timeout_not_while_busy() {
    let server = common::start(app());
    let (addr, seen) = proxy(server.addr());
    volt_rt::block_on(async move {
        let client = Client::builder()
            .http2_prior_knowledge()
            .idle_timeout(Duration::from_millis(300))
            .build();
        // A response whose body is still unread keeps its connection busy past the timeout.
        let response = client.get(&url(addr, "/stream")).send().await.unwrap();
        volt_rt::time::sleep(Duration::from_millis(900)).await;
        assert_eq!((client.idle_connections(), seen.closed()), (1, 0));
        assert_eq!(response.text().await.unwrap(), "one two three");

        // Read to its end, it leaves the connection idle: closed once the timeout passed.
        assert!(until(|| seen.closed() == 1).await, "never closed");
        assert_eq!(client.idle_connections(), 0);
        let response = client.get(&url(addr, "/")).send().await.unwrap();
        assert_eq!(response.text().await.unwrap(), "hello");
        assert_eq!(seen.accepted(), 2);
    });
}

#[test]
fn concurrent_requests_share_an_alpn_h2_connection_once_the_origin_is_known() {
    let (cert, key, der) = h2common::cert_for(&["localhost"]);
    let tls = TlsConfig::new(CertKey::from_pem(cert.as_bytes(), key.as_bytes()).unwrap());
    let server = common::start_tls(1, Config::default(), tls.build().unwrap(), app());
    let (addr, seen) = proxy(server.addr());
    volt_rt::block_on(async move {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(der.into()).unwrap();
        let client = Client::builder()
            .tls_roots(roots)
            .idle_timeout(Duration::from_millis(200))
            .build();
        let url = format!("https://localhost:{}/port", addr.port());
        let response = client.get(&url).send().await.unwrap();
        assert_eq!(response.version(), Version::HTTP_2);
        response.text().await.unwrap();
        assert!(until(|| seen.closed() == 1).await, "never closed");

        // No connection now, but the origin is known to pick h2: one connection for all.
        let seen_ports = gets_at_once(&client, &url, 3).await;
        assert!(
            seen_ports.iter().all(|p| *p == seen_ports[0]),
            "{seen_ports:?}"
        );
        assert_eq!(seen.accepted(), 2);
    });
}

#[test]
fn http2_keeps_no_connection_when_the_pool_keeps_none() {
    let server = common::start(app());
    let (addr, seen) = proxy(server.addr());
    volt_rt::block_on(async move {
        let client = Client::builder()
            .http2_prior_knowledge()
            .max_idle_per_host(0)
            .build();
        for n in 1..=2 {
            let response = client.get(&url(addr, "/")).send().await.unwrap();
            assert_eq!(response.text().await.unwrap(), "hello");
            assert!(until(|| seen.closed() == n).await, "connection {n} stayed");
            assert_eq!(client.idle_connections(), 0);
        }
        assert_eq!(seen.accepted(), 2);
    });
}

#[test]
fn http2_response_heads_are_bounded_by_the_limits() {
    let big = "v".repeat(20_000);
    let app = Router::new().route(
        "/big",
        get(move |_req: Request| {
            let big = big.clone();
            async move { Response::text("ok").with_header("x-big", &big) }
        }),
    );
    let server = common::start(app);
    let addr = server.addr();
    volt_rt::block_on(async move {
        // The default limit, 16 KiB, is smaller than the head.
        let client = Client::builder().http2_prior_knowledge().build();
        let refused = client.get(&url(addr, "/big")).send().await;
        assert!(refused.is_err(), "a 20 KB head passed a 16 KiB limit");

        let limits = volt_proto::Limits {
            max_head_bytes: 64 * 1024,
            ..volt_proto::Limits::default()
        };
        let client = Client::builder()
            .http2_prior_knowledge()
            .limits(limits)
            .build();
        let response = client.get(&url(addr, "/big")).send().await.unwrap();
        assert_eq!(response.header("x-big").map(str::len), Some(20_000));
    });
}

#[test]
fn sends_the_request_as_written() {
    let (tx, rx) = std::sync::mpsc::channel();
    let addr = raw_server(move |mut stream| {
        tx.send(read_head(&mut stream)).unwrap();
        stream
            .write_all(b"HTTP/1.1 204 No Content\r\n\r\n")
            .unwrap();
    });
    volt_rt::block_on(async move {
        let client = Client::new();
        let response = client
            .get(&format!("http://{addr}/a/b?c=d"))
            .header(
                HeaderName::from_static("x-one"),
                HeaderValue::from_static("1"),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::NO_CONTENT);
    });
    let head = rx.recv().unwrap();
    assert_eq!(
        head,
        // `accept-encoding` is the client's own, after the caller's fields (decompression).
        format!("GET /a/b?c=d HTTP/1.1\r\nhost: {addr}\r\nx-one: 1\r\naccept-encoding: gzip, deflate, br\r\n\r\n")
    );
}

#[test]
fn skips_interim_responses() {
    let addr = scripted(
        b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
        false,
    );
    let (status, body) = block_on_get(&url(addr, "/")).unwrap();
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body.unwrap(), "ok");
}

#[test]
fn reads_a_body_delimited_by_the_close() {
    let addr = scripted(b"HTTP/1.0 200 OK\r\n\r\nuntil the end", true);
    let (status, body) = block_on_get(&url(addr, "/")).unwrap();
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body.unwrap(), "until the end");
}

#[test]
fn a_body_cut_short_is_an_error() {
    let short = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort";
    assert_eq!(body_error(short), io::ErrorKind::UnexpectedEof);
    let short = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab";
    assert_eq!(body_error(short), io::ErrorKind::UnexpectedEof);
}

#[test]
fn malformed_responses_are_refused() {
    let bad: [&'static [u8]; 4] = [
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok",
        b"HTTP/1.1 200 OK\r\nFolded: a\r\n b\r\n\r\n",
        b"HTTQ/1.1 200 OK\r\n\r\n",
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n",
    ];
    for answer in bad {
        let addr = scripted(answer, true);
        let err = block_on_get(&url(addr, "/")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData, "{answer:?}: {err}");
    }
    let bad_size = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n";
    assert_eq!(body_error(bad_size), io::ErrorKind::InvalidData);
}

#[test]
fn a_server_that_closes_idle_connections_costs_no_request() {
    // Answers one request per connection, keep-alive by its headers, then closes.
    let addr = scripted(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", true);
    volt_rt::block_on(async move {
        let client = Client::new();
        for _ in 0..5 {
            let response = client.get(&url(addr, "/")).send().await.unwrap();
            assert_eq!(response.bytes().await.unwrap(), "ok");
        }
    });
}

#[test]
fn a_stale_connection_is_retried_only_when_safe() {
    // Each connection: answers its first request, then reads the second and closes unanswered.
    let addr = raw_server(|mut stream| {
        read_head(&mut stream);
        stream
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            .unwrap();
        read_head(&mut stream);
    });
    volt_rt::block_on(async move {
        let client = Client::new();
        let first = client.get(&url(addr, "/")).send().await.unwrap();
        assert_eq!(first.bytes().await.unwrap(), "ok");
        // GET is idempotent: sent again on a new connection, which answers it.
        let again = client.get(&url(addr, "/")).send().await.unwrap();
        assert_eq!(again.bytes().await.unwrap(), "ok");
        // POST is not: the server may have acted on it, so the caller hears of the close.
        let err = client
            .post(&url(addr, "/"))
            .body("x")
            .send()
            .await
            .unwrap_err();
        let closed = [io::ErrorKind::UnexpectedEof, io::ErrorKind::ConnectionReset];
        assert!(closed.contains(&err.kind()), "{err}");
    });
}

#[test]
fn times_out_and_refuses_bad_input() {
    // Accepts, reads, never answers.
    let silent = raw_server(|mut stream| {
        read_head(&mut stream);
        thread::sleep(Duration::from_secs(10));
    });
    volt_rt::block_on(async move {
        let client = Client::builder()
            .timeout(Duration::from_millis(200))
            .build();
        let err = client.get(&url(silent, "/")).send().await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut, "{err}");

        for bad in ["ftp://a/", "not a url", "http://user@host/", "/relative"] {
            let err = client.get(bad).send().await.unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{bad}: {err}");
        }
        let host = client.get(&url(silent, "/")).header(
            HeaderName::from_static("host"),
            HeaderValue::from_static("x"),
        );
        assert_eq!(
            host.send().await.unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );

        // Nothing listens on a port just freed.
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let err = client.get(&url(port, "/")).send().await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::ConnectionRefused, "{err}");
    });
}
