//! HTTP/2 with prior knowledge on the plain port, through the `h2` crate's client: the same
//! router as HTTP/1, bodies of many megabytes both ways under flow control, many concurrent
//! streams, trailers both ways, a handler panic confined to its stream, graceful shutdown.

mod common;
mod h2common;

use std::future::Future;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use h2::client::SendRequest;
use h2common::{
    client_start, connect_h2c, frame, get, next_frame, read_response, send, send_body, DATA,
    END_HEADERS, END_STREAM, GOAWAY, HEADERS, PING, RST_STREAM,
};
use volt_http::{get as route_get, post, Body, Config, Request, Response, Router};

const BIG: usize = 12 * 1024 * 1024;

/// The byte at `i` of a generated body.
fn pattern(i: usize) -> u8 {
    (i % 251) as u8
}

/// Length and a position-weighted checksum, so a lost, repeated or reordered piece shows.
fn checksum(bytes: &[u8], offset: usize) -> u64 {
    bytes
        .iter()
        .enumerate()
        .map(|(i, &b)| (offset + i) as u64 * u64::from(b))
        .fold(0u64, u64::wrapping_add)
}

#[derive(Default)]
struct Gate {
    started: AtomicBool,
    release: AtomicBool,
}

/// The length and checksum of the request body, read chunk by chunk: `"{len} {sum}"`.
async fn count(req: &mut Request) -> Result<String, volt_http::Error> {
    let (mut len, mut sum) = (0usize, 0u64);
    while let Some(chunk) = req.body_mut().chunk().await? {
        sum = sum.wrapping_add(checksum(&chunk, len));
        len += chunk.len();
    }
    Ok(format!("{len} {sum}"))
}

fn app(gate: Arc<Gate>) -> Router {
    let drop_gate = gate.clone();
    let count_gate = gate.clone();
    Router::new()
        .route("/", route_get(|_req| async { "Hello, World!" }))
        .route(
            "/stream-panics",
            route_get(|_req| async { Response::text(Body::stream(common::PanicAfter(1))) }),
        )
        .route(
            "/hello/{name}",
            route_get(|req: Request| async move {
                let name: String = req.param("name")?;
                Ok::<_, volt_http::Error>(format!("Hello, {name}! ({:?})", req.version()))
            }),
        )
        .route(
            "/count",
            post(|mut req: Request| async move { count(&mut req).await }),
        )
        .route(
            "/count-when-released",
            post(move |mut req: Request| {
                let gate = count_gate.clone();
                async move {
                    while !gate.release.load(Ordering::SeqCst) {
                        volt_rt::time::sleep(std::time::Duration::from_millis(5)).await;
                    }
                    count(&mut req).await
                }
            }),
        )
        .route(
            "/first-chunk",
            post(|mut req: Request| async move {
                let first = req.body_mut().chunk().await?.map_or(0, |c| c.len());
                Ok::<_, volt_http::Error>(format!("{}", first > 0))
            }),
        )
        .route(
            "/hop-by-hop",
            route_get(|_req| async {
                let mut trailers = http::HeaderMap::new();
                trailers.insert("x-sum", "1".parse().unwrap());
                trailers.insert("connection", "close".parse().unwrap());
                trailers.insert("te", "gzip".parse().unwrap());
                Response::text(Body::from("ok").with_trailers(trailers))
                    // Not `close`: that ends the connection (see
                    // `connection_close_from_a_handler_sends_goaway`).
                    .with_header("connection", "keep-alive")
                    .with_header("keep-alive", "timeout=5")
                    .with_header("proxy-connection", "keep-alive")
                    .with_header("transfer-encoding", "chunked")
                    .with_header("upgrade", "h2c")
                    .with_header("te", "gzip")
                    .with_header("x-kept", "yes")
            }),
        )
        .route(
            "/no-content",
            route_get(|_req| async {
                Response::new(http::StatusCode::NO_CONTENT).with_body(Body::from("dropped"))
            }),
        )
        .route(
            "/drop-body-then-wait",
            post(move |mut req: Request| {
                let gate = drop_gate.clone();
                async move {
                    let _ = req.body_mut().chunk().await;
                    drop(req);
                    gate.started.store(true, Ordering::SeqCst);
                    while !gate.release.load(Ordering::SeqCst) {
                        volt_rt::time::sleep(std::time::Duration::from_millis(5)).await;
                    }
                    "finished"
                }
            }),
        )
        .route(
            "/big",
            route_get(|_req| async {
                let (mut tx, body) = Body::channel();
                volt_rt::spawn(async move {
                    let mut sent = 0;
                    while sent < BIG {
                        let n = (64 * 1024).min(BIG - sent);
                        let chunk: Vec<u8> = (sent..sent + n).map(pattern).collect();
                        if tx.send(chunk).await.is_err() {
                            return;
                        }
                        sent += n;
                    }
                    let mut trailers = http::HeaderMap::new();
                    trailers.insert("x-sent", sent.to_string().parse().unwrap());
                    tx.send_trailers(trailers);
                });
                Response::bytes(body)
            }),
        )
        .route(
            "/trailers",
            post(|mut req: Request| async move {
                let body = req.body_mut().collect().await?;
                let trailers = req.body_mut().trailers().await?.unwrap_or_default();
                let checksum = trailers
                    .get("x-checksum")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("none")
                    .to_string();
                let mut out = http::HeaderMap::new();
                out.insert("x-done", "yes".parse().unwrap());
                let reply = format!("{} bytes, checksum {checksum}", body.len());
                Ok::<_, volt_http::Error>(Response::text(Body::from(reply).with_trailers(out)))
            }),
        )
        .route(
            "/panic",
            route_get(|_req| async {
                if true {
                    panic!("handler panic (expected by the test)");
                }
                "unreachable"
            }),
        )
        .route(
            "/close-after",
            route_get(|_req| async { Response::text("bye").with_header("connection", "close") }),
        )
        .route(
            "/status/{code}",
            route_get(|req: Request| async move {
                let code: u16 = req.param("code")?;
                let status = http::StatusCode::from_u16(code).expect("a valid status");
                Ok::<_, volt_http::Error>(Response::new(status).with_body("from the handler"))
            }),
        )
        .route(
            "/wait",
            route_get(move |_req| {
                let gate = gate.clone();
                async move {
                    gate.started.store(true, Ordering::SeqCst);
                    while !gate.release.load(Ordering::SeqCst) {
                        volt_rt::time::sleep(std::time::Duration::from_millis(5)).await;
                    }
                    "finished"
                }
            }),
        )
}

fn start(config: Config) -> (common::TestServer, Arc<Gate>) {
    let gate = Arc::new(Gate::default());
    (common::start_with(1, config, app(gate.clone())), gate)
}

#[test]
fn h2c_prior_knowledge_serves_the_router() {
    let (server, _) = start(Config::default());
    let addr = server.addr();
    volt_rt::block_on(async move {
        let mut client = connect_h2c(addr).await;
        let r = send(&mut client, get("/"), Bytes::new()).await;
        assert_eq!(r.status, 200);
        assert_eq!(r.text(), "Hello, World!");
        assert_eq!(r.headers["content-length"], "13");
        assert_eq!(r.headers["server"], "volt");
        assert!(r.headers.contains_key("date"));
        let r = send(&mut client, get("/hello/h%C3%A9l%C3%A8ne"), Bytes::new()).await;
        assert_eq!(r.text(), "Hello, hélène! (HTTP/2.0)");
        let r = send(&mut client, get("/nope"), Bytes::new()).await;
        assert_eq!(r.status, 404);
    });
    // The same port still speaks HTTP/1.
    assert!(server.get("/").starts_with("HTTP/1.1 200 OK"));
    // `Upgrade: h2c` is not supported: the request is answered over HTTP/1.1, not with 101,
    // and the connection stays HTTP/1.
    let mut c = server.connect();
    let upgrade = "GET / HTTP/1.1\r\nHost: t\r\nConnection: Upgrade, HTTP2-Settings\r\n\
                   Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n";
    for _ in 0..2 {
        c.send(upgrade.as_bytes());
        let r = c.read_response();
        assert_eq!(
            (r.status, r.body_text()),
            (200, "Hello, World!".to_string())
        );
        assert_eq!(r.header("upgrade"), None);
    }
}

#[test]
fn large_bodies_both_ways_under_flow_control() {
    // Small windows: the 12 MiB go through hundreds of WINDOW_UPDATEs each way.
    let config = Config {
        max_body_bytes: 64 * 1024 * 1024,
        h2_initial_stream_window: 65_535,
        h2_initial_connection_window: 128 * 1024,
        ..Config::default()
    };
    let (server, _) = start(config);
    let addr = server.addr();
    volt_rt::block_on(async move {
        let mut client = connect_h2c(addr).await;
        let upload: Vec<u8> = (0..BIG).map(pattern).collect();
        let expected = format!("{BIG} {}", checksum(&upload, 0));
        let req = http::Request::post("http://t/count").body(()).unwrap();
        let r = send(&mut client, req, Bytes::from(upload)).await;
        assert_eq!((r.status, r.text()), (200, expected));

        let r = send(&mut client, get("/big"), Bytes::new()).await;
        assert_eq!(r.status, 200);
        assert_eq!(r.body.len(), BIG);
        assert!(r.body.iter().enumerate().all(|(i, &b)| b == pattern(i)));
        let trailers = r.trailers.expect("trailers after the streamed body");
        assert_eq!(trailers["x-sent"], BIG.to_string().as_str());
    });
}

/// Connection-specific fields a handler sets are not sent (RFC 9113 §8.2.2: a client must
/// treat a response with them as malformed), in the head or in trailers; nor is a body on HEAD
/// or on 204.
#[test]
fn connection_specific_fields_and_bodiless_responses() {
    let (server, _) = start(Config::default());
    let addr = server.addr();
    volt_rt::block_on(async move {
        let mut client = connect_h2c(addr).await;
        let r = send(&mut client, get("/hop-by-hop"), Bytes::new()).await;
        assert_eq!((r.status, r.text()), (200, "ok".to_string()));
        assert_eq!(r.headers["x-kept"], "yes");
        for name in [
            "connection",
            "keep-alive",
            "proxy-connection",
            "upgrade",
            "te",
        ] {
            assert!(!r.headers.contains_key(name), "{name} sent");
        }
        let trailers = r.trailers.expect("trailers");
        assert_eq!(trailers["x-sum"], "1");
        assert!(!trailers.contains_key("connection") && !trailers.contains_key("te"));

        let head = http::Request::head("http://t/").body(()).unwrap();
        let r = send(&mut client, head, Bytes::new()).await;
        assert_eq!((r.status, r.body.len()), (200, 0));
        assert_eq!(r.headers["content-length"], "13");
        let r = send(&mut client, get("/no-content"), Bytes::new()).await;
        assert_eq!((r.status, r.body.len()), (204, 0));
        assert!(!r.headers.contains_key("content-length"));
    });
}

/// A request body over `max_body_bytes` is answered 413, whether its `content-length` says
/// so at once or the DATA only shows it; a body that disagrees with its `content-length` is a
/// stream error (RFC 9113 §8.1.1). The connection goes on serving.
#[test]
fn body_limits_and_content_length_on_http2() {
    let config = Config {
        max_body_bytes: 1000,
        ..Config::default()
    };
    let (server, _) = start(config);
    let addr = server.addr();
    volt_rt::block_on(async move {
        let mut client = connect_h2c(addr).await;
        let big = Bytes::from(vec![1u8; 5000]);
        let declared = http::Request::post("http://t/count")
            .header("content-length", "5000")
            .body(())
            .unwrap();
        let r = send(&mut client, declared, big.clone()).await;
        assert_eq!(r.status, 413, "{}", r.text());
        let undeclared = http::Request::post("http://t/count").body(()).unwrap();
        let r = send(&mut client, undeclared, big).await;
        assert_eq!(r.status, 413, "{}", r.text());

        // content-length 10, 20 bytes sent.
        let mut ready = client.clone().ready().await.unwrap();
        let wrong = http::Request::post("http://t/count")
            .header("content-length", "10")
            .body(())
            .unwrap();
        let (response, mut stream) = ready.send_request(wrong, false).unwrap();
        stream.send_data(Bytes::from(vec![2u8; 20]), true).unwrap();
        let err = response.await.expect_err("a stream error, not a response");
        assert_eq!(err.reason(), Some(h2::Reason::PROTOCOL_ERROR), "{err}");

        let r = send(&mut client, get("/"), Bytes::new()).await;
        assert_eq!(r.text(), "Hello, World!");
    });
}

/// A handler that drops its request body and goes on working must not keep the body's
/// connection window: DATA the client sends meanwhile went into the dropped body's inbox and
/// its window stayed taken until the handler finished, stalling every other stream.
#[test]
fn a_body_dropped_by_a_running_handler_leaves_the_connection_window() {
    let config = Config {
        h2_initial_stream_window: 65_535,
        h2_initial_connection_window: 65_535,
        ..Config::default()
    };
    let (server, gate) = start(config);
    let addr = server.addr();
    volt_rt::block_on(async move {
        let client = connect_h2c(addr).await;
        let mut ready = client.clone().ready().await.unwrap();
        let req = http::Request::post("http://t/drop-body-then-wait")
            .body(())
            .unwrap();
        let (waiting, mut stream) = ready.send_request(req, false).unwrap();
        send_body(&mut stream, Bytes::from(vec![1u8; 1024])).await;
        while !gate.started.load(Ordering::SeqCst) {
            volt_rt::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        // The handler dropped the body: the client fills the stream's window all the same.
        send_body(&mut stream, Bytes::from(vec![1u8; 65_535])).await;
        // Another stream needs connection window the dropped body took.
        let mut other = client.clone();
        let req = http::Request::post("http://t/count").body(()).unwrap();
        let body = Bytes::from(vec![7u8; 32 * 1024]);
        let r = volt_rt::time::timeout(common::HANG_GUARD, send(&mut other, req, body))
            .await
            .expect("the other stream stalled: the dropped body kept the connection window");
        assert_eq!(r.status, 200);
        gate.release.store(true, Ordering::SeqCst);
        stream.send_data(Bytes::new(), true).unwrap();
        assert_eq!(read_response(waiting).await.text(), "finished");
    });
}

/// A request body that stops arriving is answered 408 after `body_read_timeout`, on its
/// stream only.
#[test]
fn a_stalled_request_body_times_out() {
    let config = Config {
        body_read_timeout: std::time::Duration::from_secs(1),
        ..Config::default()
    };
    let (server, _) = start(config);
    let addr = server.addr();
    volt_rt::block_on(async move {
        let client = connect_h2c(addr).await;
        let mut ready = client.clone().ready().await.unwrap();
        let req = http::Request::post("http://t/count").body(()).unwrap();
        let (response, mut stream) = ready.send_request(req, false).unwrap();
        send_body(&mut stream, Bytes::from_static(b"a start")).await;
        let r = read_response(response).await;
        assert_eq!(r.status, 408, "{}", r.text());
        let mut other = client.clone();
        let r = send(&mut other, get("/"), Bytes::new()).await;
        assert_eq!(r.text(), "Hello, World!");
    });
}

/// A streamed response to a client whose window is larger than the server's output mark: the
/// pump stopped at the mark with the chunk sent and the body not polled again, and said
/// nothing, so once the socket took the output nothing woke the connection and the response
/// stalled after its first 64 KiB (until the client happened to send a frame).
#[test]
fn a_streamed_response_under_a_large_client_window_does_not_stall() {
    let (server, _) = start(Config::default());
    let addr = server.addr();
    volt_rt::block_on(async move {
        let tcp = volt_rt::net::TcpStream::connect(addr).await.unwrap();
        let (client, conn) = h2::client::Builder::new()
            .initial_window_size(32 << 20)
            .initial_connection_window_size(32 << 20)
            .handshake::<_, Bytes>(tcp)
            .await
            .expect("HTTP/2 handshake");
        volt_rt::spawn(async move {
            let _ = conn.await;
        });
        let mut client = client;
        let r = volt_rt::time::timeout(
            common::HANG_GUARD,
            send(&mut client, get("/big"), Bytes::new()),
        )
        .await
        .expect("the streamed response stalled");
        assert_eq!(r.body.len(), BIG);
    });
}

/// Every request body byte the client sent comes back as connection window, whether the
/// handler read the body to its end or stopped after a chunk: the window the last chunks took
/// was lost when the stream ended with its response, so after a few uploads the connection
/// window was gone and every stream on the connection stalled.
#[test]
fn request_bodies_give_back_the_connection_window() {
    let config = Config {
        h2_initial_stream_window: 65_535,
        h2_initial_connection_window: 65_535,
        ..Config::default()
    };
    let (server, _) = start(config);
    let addr = server.addr();
    volt_rt::block_on(async move {
        let mut client = connect_h2c(addr).await;
        let body = Bytes::from(vec![7u8; 16 * 1024]);
        // 40 bodies of 16 KiB: ten times the connection window.
        for i in 0..40 {
            let path = if i % 2 == 0 { "/count" } else { "/first-chunk" };
            let req = http::Request::post(format!("http://t{path}"))
                .body(())
                .unwrap();
            let r = volt_rt::time::timeout(common::HANG_GUARD, send_ended(&mut client, req, &body))
                .await
                .unwrap_or_else(|_| panic!("request {i} stalled: the connection window is gone"));
            assert_eq!(r.status, 200, "request {i}");
        }
    });
}

/// The server advertises a stream window (256 KiB by default) larger than the default
/// (64 KiB) in its first SETTINGS, and a client may use it as soon as it has read that frame
/// (RFC 9113 §6.9.2), which may be before the server has its SETTINGS ACK. The server counted
/// such a stream against the default window until the ACK and reset it with
/// FLOW_CONTROL_ERROR. Raw frames: a 100 KiB body sent before any ACK, to a handler that reads
/// nothing until all of it arrived (a PING after the body tells when), is taken whole.
#[test]
fn request_data_within_the_advertised_window_before_the_settings_ack() {
    let (server, gate) = start(Config::default());
    let mut stream = std::net::TcpStream::connect(server.addr()).unwrap();
    stream.set_read_timeout(Some(common::HANG_GUARD)).unwrap();
    // POST /count-when-released, `:authority: t`.
    let path = b"/count-when-released";
    let mut block = vec![0x83, 0x86, 0x04, path.len() as u8];
    block.extend_from_slice(path);
    block.extend_from_slice(&[0x41, 0x01, b't']);
    let body: Vec<u8> = (0..100 * 1024).map(pattern).collect();
    // The client's SETTINGS, never an ACK of the server's.
    let mut bytes = client_start();
    bytes.extend(frame(HEADERS, END_HEADERS, 1, &block));
    let pieces: Vec<&[u8]> = body.chunks(16 * 1024).collect();
    for (i, piece) in pieces.iter().enumerate() {
        let flags = if i + 1 == pieces.len() { END_STREAM } else { 0 };
        bytes.extend(frame(DATA, flags, 1, piece));
    }
    bytes.extend(frame(PING, 0, 0, b"bodydone"));
    std::io::Write::write_all(&mut stream, &bytes).unwrap();
    let mut buf = Vec::new();
    let mut answer = Vec::new();
    loop {
        let (kind, flags, id, payload) = next_frame(&mut stream, &mut buf);
        assert!(
            kind != RST_STREAM && kind != GOAWAY,
            "frame {kind} on stream {id}: {payload:?}"
        );
        if kind == PING {
            // Every DATA frame before it was taken: the handler may read now.
            gate.release.store(true, Ordering::SeqCst);
        }
        if kind == DATA && id == 1 {
            answer.extend_from_slice(&payload);
            if flags & END_STREAM != 0 {
                break;
            }
        }
    }
    let expected = format!("{} {}", body.len(), checksum(&body, 0));
    assert_eq!(String::from_utf8_lossy(&answer), expected);
}

/// A handler's `Connection: close` closed an HTTP/1 connection after its response, but on
/// HTTP/2 it was only dropped (a connection-specific field, RFC 9113 §8.2.2) and the
/// connection went on. It now maps to a graceful GOAWAY after that response: a stream already
/// running finishes, no new stream is taken, and the connection closes.
#[test]
fn connection_close_from_a_handler_sends_goaway() {
    let (server, gate) = start(Config::default());
    let addr = server.addr();
    volt_rt::block_on(async move {
        let mut client = connect_h2c(addr).await;
        let mut a = client.clone();
        let slow = volt_rt::spawn(async move { send(&mut a, get("/wait"), Bytes::new()).await });
        while !gate.started.load(Ordering::SeqCst) {
            volt_rt::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        let r = send(&mut client, get("/close-after"), Bytes::new()).await;
        assert_eq!((r.status, r.text()), (200, "bye".to_string()));
        assert!(!r.headers.contains_key("connection"));
        gate.release.store(true, Ordering::SeqCst);
        let r = slow.await.unwrap();
        assert_eq!((r.status, r.text()), (200, "finished".to_string()));
        let refused = match client.clone().ready().await {
            Err(_) => true,
            Ok(mut c) => match c.send_request(get("/"), true) {
                Err(_) => true,
                Ok((response, _)) => response.await.is_err(),
            },
        };
        assert!(refused, "a new stream after GOAWAY must be refused");
    });
    // Other connections are served as before.
    assert!(server.get("/").starts_with("HTTP/1.1 200 OK"));
}

/// Sends `req` with `body` in DATA frames the last of which ends the stream (once the window
/// allows the whole body), and reads the response.
async fn send_ended(
    client: &mut SendRequest<Bytes>,
    req: http::Request<()>,
    body: &Bytes,
) -> h2common::H2Response {
    let mut client = client.clone().ready().await.expect("connection ready");
    let (response, mut stream) = client
        .send_request(req, false)
        .expect("sending the request");
    stream.reserve_capacity(body.len());
    while stream.capacity() < body.len() {
        std::future::poll_fn(|cx| stream.poll_capacity(cx))
            .await
            .expect("stream open")
            .expect("capacity");
    }
    stream.send_data(body.clone(), true).expect("sending data");
    read_response(response).await
}

#[test]
fn many_concurrent_streams_on_one_connection() {
    // More requests than the stream limit: the client queues the rest as streams finish.
    let config = Config {
        h2_max_concurrent_streams: 100,
        ..Config::default()
    };
    let (server, _) = start(config);
    let addr = server.addr();
    volt_rt::block_on(async move {
        let mut client = connect_h2c(addr).await;
        // One round trip first, so the client knows the server's stream limit (a client that
        // opens streams before the SETTINGS arrive gets the excess refused, as it should).
        assert_eq!(send(&mut client, get("/"), Bytes::new()).await.status, 200);
        let tasks: Vec<_> = (0..250)
            .map(|i| {
                let mut client = client.clone();
                volt_rt::spawn(async move {
                    let r = send(&mut client, get(&format!("/hello/n{i}")), Bytes::new()).await;
                    (r.status, r.text())
                })
            })
            .collect();
        for (i, task) in tasks.into_iter().enumerate() {
            let (status, text) = task.await.expect("request task");
            assert_eq!(status, 200);
            assert_eq!(text, format!("Hello, n{i}! (HTTP/2.0)"));
        }
    });
}

#[test]
fn trailers_both_ways() {
    let (server, _) = start(Config::default());
    let addr = server.addr();
    volt_rt::block_on(async move {
        let client = connect_h2c(addr).await;
        let mut client = client.ready().await.unwrap();
        let req = http::Request::post("http://t/trailers").body(()).unwrap();
        let (response, mut stream) = client.send_request(req, false).unwrap();
        send_body(&mut stream, Bytes::from_static(b"some body")).await;
        let mut trailers = http::HeaderMap::new();
        trailers.insert("x-checksum", "abc123".parse().unwrap());
        stream.send_trailers(trailers).unwrap();
        let r = read_response(response).await;
        assert_eq!(r.text(), "9 bytes, checksum abc123");
        assert_eq!(r.trailers.expect("response trailers")["x-done"], "yes");
    });
}

/// Runs `confined` on a stream of `client` while another stream waits on `/wait`, then checks
/// that the other stream finished and the connection still serves: what `confined` provoked
/// stayed in its own stream.
async fn stays_in_its_stream<F: Future<Output = ()>>(
    client: &SendRequest<Bytes>,
    confined: impl FnOnce(SendRequest<Bytes>) -> F,
) {
    let mut a = client.clone();
    let slow = volt_rt::spawn(async move { send(&mut a, get("/wait"), Bytes::new()).await.text() });
    confined(client.clone()).await;
    assert_eq!(slow.await.unwrap(), "finished");
    let mut c = client.clone();
    assert_eq!(
        send(&mut c, get("/"), Bytes::new()).await.text(),
        "Hello, World!"
    );
}

#[test]
fn a_handler_panic_is_500_for_its_stream_only() {
    let (server, gate) = start(Config::default());
    let addr = server.addr();
    gate.release.store(true, Ordering::SeqCst);
    volt_rt::block_on(async move {
        let client = connect_h2c(addr).await;
        stays_in_its_stream(&client, |mut b| async move {
            let panicked = send(&mut b, get("/panic"), Bytes::new()).await;
            assert_eq!(panicked.status, 500);
            assert_eq!(panicked.text(), "internal server error\n");
        })
        .await;
    });
}

/// A handler that returns a 1xx status as its final response was sent as a HEADERS frame with
/// END_STREAM and `:status` 1xx, which RFC 9113 §8.1 makes malformed (a 1xx is informational,
/// never the end of a response): the client reset the stream. It is a handler bug, answered as
/// a panic is: 500 on that stream only.
#[test]
fn a_1xx_final_response_is_500_for_its_stream_only() {
    let (server, gate) = start(Config::default());
    let addr = server.addr();
    gate.release.store(true, Ordering::SeqCst);
    volt_rt::block_on(async move {
        let client = connect_h2c(addr).await;
        for code in [100, 101, 103] {
            stays_in_its_stream(&client, |mut b| async move {
                let r = send(&mut b, get(&format!("/status/{code}")), Bytes::new()).await;
                assert_eq!(
                    (r.status, r.text()),
                    (500, "internal server error\n".into())
                );
            })
            .await;
        }
    });
}

#[test]
fn a_panicking_body_stream_resets_its_stream_only() {
    let (server, gate) = start(Config::default());
    let addr = server.addr();
    gate.release.store(true, Ordering::SeqCst);
    volt_rt::block_on(async move {
        let client = connect_h2c(addr).await;
        stays_in_its_stream(&client, |b| async move {
            let mut ready = b.ready().await.unwrap();
            let (response, _) = ready.send_request(get("/stream-panics"), true).unwrap();
            let response = response
                .await
                .expect("the head went out before the body failed");
            assert_eq!(response.status(), 200);
            let mut body = response.into_body();
            let mut got = Vec::new();
            let reset = loop {
                match body.data().await {
                    Some(Ok(chunk)) => got.extend_from_slice(&chunk),
                    Some(Err(e)) => break e,
                    None => panic!("a cut-short body ended like a whole one: {got:?}"),
                }
            };
            assert_eq!(got, b"part");
            assert_eq!(reset.reason(), Some(h2::Reason::INTERNAL_ERROR), "{reset}");
        })
        .await;
    });
}

#[test]
fn graceful_shutdown_sends_goaway_and_finishes_streams() {
    let (server, gate) = start(Config::default());
    let addr = server.addr();
    let handle = server.handle();
    let shutter = {
        let gate = gate.clone();
        std::thread::spawn(move || {
            common::wait_until("the handler to start", || {
                gate.started.load(Ordering::SeqCst)
            });
            handle.shutdown();
            // The in-flight stream finishes only after the shutdown started.
            gate.release.store(true, Ordering::SeqCst);
        })
    };
    volt_rt::block_on(async move {
        let mut client = connect_h2c(addr).await;
        let r = send(&mut client, get("/wait"), Bytes::new()).await;
        assert_eq!((r.status, r.text()), (200, "finished".to_string()));
        // The GOAWAY came first: no new stream may start on this connection.
        let refused = match client.clone().ready().await {
            Err(_) => true,
            Ok(mut c) => match c.send_request(get("/"), true) {
                Err(_) => true,
                Ok((response, _)) => response.await.is_err(),
            },
        };
        assert!(refused, "a new stream after GOAWAY must be refused");
    });
    shutter.join().unwrap();
    server.join().expect("serve returned Ok after the shutdown");
}

/// A stream whose response is out while the client still sends a body nobody reads is reset
/// with NO_ERROR once GOAWAY went out, and the connection closes: it once waited for the rest
/// of that body (`body_read_timeout`, bounded only by `shutdown_timeout`).
#[test]
fn graceful_shutdown_ends_the_drain_of_an_unread_body() {
    // Far longer than the client's read guard: a server waiting either out fails the read.
    let (server, _) = start(Config {
        body_read_timeout: std::time::Duration::from_secs(600),
        shutdown_timeout: std::time::Duration::from_secs(600),
        ..Config::default()
    });
    let mut tcp = std::net::TcpStream::connect(server.addr()).unwrap();
    tcp.set_read_timeout(Some(common::HANG_GUARD)).unwrap();
    // POST / (GET only: 405, the body unread), without END_STREAM, and 3 bytes of body.
    let mut hello = client_start();
    hello.extend(frame(
        HEADERS,
        END_HEADERS,
        1,
        &h2common::request_block(true),
    ));
    hello.extend(frame(DATA, 0, 1, b"abc"));
    tcp.write_all(&hello).unwrap();
    let mut buf = Vec::new();
    loop {
        let (kind, flags, stream, _) = next_frame(&mut tcp, &mut buf);
        if stream == 1 && matches!(kind, HEADERS | DATA) && flags & END_STREAM != 0 {
            break;
        }
    }
    server.handle().shutdown();
    let (mut goaway, mut reset) = (false, None);
    loop {
        let (kind, _, stream, payload) = next_frame(&mut tcp, &mut buf);
        match kind {
            GOAWAY => goaway = true,
            RST_STREAM if stream == 1 => reset = Some(payload),
            _ => {}
        }
        if goaway && reset.is_some() {
            break;
        }
    }
    assert_eq!(reset.unwrap(), [0; 4], "RST_STREAM with NO_ERROR");
    let mut rest = Vec::new();
    tcp.read_to_end(&mut rest).expect("closed, not left open");
    server.join().expect("serve returned Ok");
}

/// A `:path` in neither of the forms HTTP/2 allows (origin-form, or `*`; RFC 9113 §8.3.1),
/// or with a fragment or a byte no request target holds (HPACK carries any byte), is answered
/// 400 as the same target is over HTTP/1; it was routed (`users/1` a 404, `/hello/a#b` a 200).
#[test]
fn a_path_in_no_request_target_form_is_400() {
    let (server, _) = start(Config::default());
    let mut stream = std::net::TcpStream::connect(server.addr()).unwrap();
    stream.set_read_timeout(Some(common::HANG_GUARD)).unwrap();
    let paths: [&[u8]; 7] = [
        b"users/1",
        b"?x=1",
        b"/hello/a#b",
        b"/hello/a b",
        b"/hello/caf\xc3\xa9",
        b"*",
        b"/hello/ok",
    ];
    let mut bytes = client_start();
    for (i, path) in (0u32..).zip(paths) {
        // GET, http, `:path` as a literal, `:authority: t`.
        let mut block = vec![0x82, 0x86, 0x04, path.len() as u8];
        block.extend_from_slice(path);
        block.extend([0x41, 0x01, b't']);
        bytes.extend(frame(HEADERS, END_STREAM | END_HEADERS, 1 + 2 * i, &block));
    }
    std::io::Write::write_all(&mut stream, &bytes).unwrap();
    let mut statuses = vec![0u8; paths.len()];
    let mut buf = Vec::new();
    while statuses.contains(&0) {
        let (kind, _, id, payload) = next_frame(&mut stream, &mut buf);
        if kind == HEADERS {
            // The status is the block's first byte, indexed from the static table.
            statuses[(id as usize - 1) / 2] = payload[0];
        }
    }
    // 0x8c is `:status: 400`, 0x88 `:status: 200`.
    assert_eq!(
        statuses,
        [0x8c, 0x8c, 0x8c, 0x8c, 0x8c, 0x8c, 0x88],
        "{paths:?}"
    );
}
