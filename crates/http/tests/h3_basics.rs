//! HTTP/3 against an independent client (quinn + h3 on tokio): requests and responses with
//! bodies both ways, flow control over a large response, many concurrent streams, and
//! `Alt-Svc` advertising HTTP/3 on the TCP side.

mod common;
mod h2common;
mod h3common;

use std::io::{Read, Write};

use bytes::Bytes;
use h3common::*;
use volt_http::{get, post, Body, Config, Request, Response, Router};

/// 8 MiB: far past quinn's default stream window (1.25 MB) and the server's send window, so
/// the response moves only as the client's flow control lets it.
const BIG: usize = 8 << 20;

fn pattern(i: usize) -> u8 {
    (i % 251) as u8
}

fn app() -> Router {
    Router::new()
        .route(
            "/hello",
            get(|req: Request| async move { format!("hello over {:?}", req.version()) }),
        )
        // Reads the body chunk by chunk, as it streams in, and answers its size and chunks.
        .route(
            "/count",
            post(|mut req: Request| async move {
                let (mut bytes, mut text) = (0, String::new());
                while let Some(chunk) = req.body_mut().chunk().await? {
                    bytes += chunk.len();
                    text.push_str(&String::from_utf8_lossy(&chunk));
                }
                Ok::<_, volt_http::Error>(format!("{bytes} bytes: {text}"))
            }),
        )
        .route(
            "/big",
            get(|_req: Request| async {
                let chunks = (0..BIG / 65536).map(|c| {
                    let v: Vec<u8> = (0..65536).map(|i| pattern(c * 65536 + i)).collect();
                    Ok(Bytes::from(v))
                });
                Response::bytes(Body::sized_stream(BIG as u64, common::Iter(chunks)))
            }),
        )
        .route(
            "/n/{n}",
            get(|req: Request| async move {
                let n: u32 = req.param("n")?;
                volt_rt::time::sleep(std::time::Duration::from_millis(u64::from(n % 7))).await;
                Ok::<_, volt_http::Error>(format!("stream {n}"))
            }),
        )
}

#[tokio::test]
async fn get_answers_with_a_body() {
    let certs = certs();
    let server = start_h3(1, Config::default(), &certs, app());
    let (mut client, _driver) = connect(server.addr(), &certs.2).await;
    let res = send(&mut client, "GET", "/hello", &[]).await.unwrap();
    assert_eq!(res.status, 200);
    assert_eq!(res.text(), "hello over HTTP/3.0");
    assert_eq!(res.headers["content-length"], "19");
    assert_eq!(res.headers["server"], "volt");
    assert!(res.headers.contains_key("date"));
    drop(client);
    shut_down(server).await;
}

#[tokio::test]
async fn post_streams_the_request_body_to_the_handler() {
    let certs = certs();
    let server = start_h3(1, Config::default(), &certs, app());
    let (mut client, _driver) = connect(server.addr(), &certs.2).await;
    let chunks = [
        Bytes::from("one,"),
        Bytes::from("two,"),
        Bytes::from("three"),
    ];
    let res = send(&mut client, "POST", "/count", &chunks).await.unwrap();
    assert_eq!(
        (res.status, res.text().as_str()),
        (200, "13 bytes: one,two,three")
    );
    // A body far over the stream window: it moves as the handler takes it.
    let big: Vec<Bytes> = (0..40)
        .map(|_| Bytes::from(vec![b'x'; 64 * 1024]))
        .collect();
    let res = send(&mut client, "POST", "/count", &big).await.unwrap();
    assert!(
        res.text().starts_with("2621440 bytes: xxx"),
        "{}",
        &res.text()[..40]
    );
    drop(client);
    shut_down(server).await;
}

#[tokio::test]
async fn a_large_response_arrives_whole_under_flow_control() {
    let certs = certs();
    let server = start_h3(1, Config::default(), &certs, app());
    let (mut client, _driver) = connect(server.addr(), &certs.2).await;
    let res = send(&mut client, "GET", "/big", &[]).await.unwrap();
    assert_eq!(res.status, 200);
    assert_eq!(res.headers["content-length"], BIG.to_string().as_str());
    assert_eq!(res.body.len(), BIG);
    assert!(res.body.iter().enumerate().all(|(i, &b)| b == pattern(i)));
    drop(client);
    shut_down(server).await;
}

#[tokio::test]
async fn many_concurrent_streams_on_one_connection() {
    let certs = certs();
    let server = start_h3(2, Config::default(), &certs, app());
    let (client, _driver) = connect(server.addr(), &certs.2).await;
    let mut tasks = tokio::task::JoinSet::new();
    for n in 0..100u32 {
        let mut client = client.clone();
        tasks.spawn(async move {
            let res = send(&mut client, "GET", &format!("/n/{n}"), &[])
                .await
                .unwrap();
            assert_eq!((res.status, res.text()), (200, format!("stream {n}")));
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }
    drop(client);
    shut_down(server).await;
}

/// HTTP/1.1 and HTTP/2 over TLS on the same port advertise HTTP/3 (RFC 7838).
#[test]
fn alt_svc_advertises_h3_on_tcp() {
    let certs = certs();
    let server = start_h3(1, Config::default(), &certs, app());
    let port = server.addr().port();
    let config = h2common::client_config(&[&certs.2], &[b"http/1.1"]);
    let mut tls = h2common::tls_connect(server.addr(), config, "h3.test").unwrap();
    tls.write_all(b"GET /hello HTTP/1.1\r\nHost: h3.test\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut out = Vec::new();
    let _ = tls.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    let expected = format!("\r\nAlt-Svc: h3=\":{port}\"; ma=86400\r\n");
    assert!(text.contains(&expected), "{text}");
    assert!(text.ends_with("hello over HTTP/1.1"), "{text}");

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let headers = rt.block_on(async {
        let config = h2common::client_config(&[&certs.2], &[b"h2"]);
        let tcp = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
        let name = rustls_pki_types::ServerName::try_from("h3.test").unwrap();
        let tls = tokio_rustls::TlsConnector::from(config)
            .connect(name, tcp)
            .await
            .unwrap();
        let (client, conn) = h2::client::handshake(tls).await.unwrap();
        tokio::spawn(conn);
        let mut client = client.ready().await.unwrap();
        let req = http::Request::get("https://h3.test/hello")
            .body(())
            .unwrap();
        let (res, _) = client.send_request(req, true).unwrap();
        res.await.unwrap().headers().clone()
    });
    assert_eq!(
        headers["alt-svc"],
        format!("h3=\":{port}\"; ma=86400").as_str()
    );
    server.shutdown();
}
