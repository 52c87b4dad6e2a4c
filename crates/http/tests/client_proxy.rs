//! The client through a forward proxy written here (std threads and sockets) that records the
//! exact heads it receives: `http://` in absolute-form on shared connections, `https://` and
//! `ws://` through `CONNECT` tunnels to volt's own server (TLS and HTTP/2 end to end), proxy
//! credentials, a 407, `NO_PROXY`, and which connections the pool keeps apart.

mod clientcommon;
mod common;
mod h2common;

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use clientcommon::{read_head, url};
use volt_http::{
    get, Client, ClientBuilder, Error, Message, Proxy, ProxyError, Request, Router, Version,
};

fn app() -> Router {
    Router::new()
        .route("/", get(|_req: Request| async { "hello" }))
        .route(
            "/where",
            get(|req: Request| async move { req.header("host").unwrap_or("-").to_owned() }),
        )
        .route(
            "/echo",
            get(|req: Request| async move {
                Ok::<_, Error>(req.websocket()?.on_upgrade(|mut ws| async move {
                    while let Some(msg) = ws.recv().await? {
                        ws.send(msg).await?;
                    }
                    Ok(())
                }))
            }),
        )
}

/// What the proxy received: each request head, after the number of the client connection it
/// came on (`#0 `, `#1 `, in accept order).
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    fn heads(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }

    /// The request line of each head, after its connection's number.
    fn lines(&self) -> Vec<String> {
        let heads = self.heads();
        heads
            .iter()
            .map(|h| h.lines().next().unwrap().to_owned())
            .collect()
    }

    fn push(&self, head: String) {
        self.0.lock().unwrap().push(head);
    }
}

/// A forward proxy on its own threads: absolute-form requests are sent on to their origin
/// (one upstream connection each, the response relayed by its `Content-Length`), the client's
/// connection kept; `CONNECT` opens a tunnel. With `credentials`, a request without
/// `proxy-authorization: {credentials}` gets a 407.
fn forward_proxy(credentials: Option<&'static str>) -> (SocketAddr, Log) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let log = Log::default();
    let seen = log.clone();
    thread::spawn(move || {
        for (id, stream) in listener.incoming().enumerate() {
            let Ok(stream) = stream else { return };
            stream.set_read_timeout(Some(common::HANG_GUARD)).unwrap();
            let log = seen.clone();
            thread::spawn(move || serve_client(id, stream, credentials, &log));
        }
    });
    (addr, log)
}

fn serve_client(id: usize, mut client: TcpStream, credentials: Option<&str>, log: &Log) {
    loop {
        let head = read_head(&mut client);
        if head.is_empty() {
            return;
        }
        log.push(format!("#{id} {head}"));
        let line = head.lines().next().unwrap().to_owned();
        let mut parts = line.split(' ');
        let (method, target) = (parts.next().unwrap(), parts.next().unwrap());
        if let Some(want) = credentials {
            if !head.contains(&format!("\r\nproxy-authorization: {want}\r\n")) {
                let refusal = "HTTP/1.1 407 Proxy Authentication Required\r\n\
                               proxy-authenticate: Basic realm=\"test\"\r\ncontent-length: 0\r\n\r\n";
                client.write_all(refusal.as_bytes()).unwrap();
                continue;
            }
        }
        if method == "CONNECT" {
            let upstream = TcpStream::connect(target).unwrap();
            client
                .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                .unwrap();
            return splice(client, upstream);
        }
        // Absolute-form: on to the origin in origin-form, without the proxy's field.
        let rest = target.strip_prefix("http://").unwrap();
        let (authority, path) = rest.split_at(rest.find('/').unwrap());
        let mut upstream = TcpStream::connect(authority).unwrap();
        upstream.set_read_timeout(Some(common::HANG_GUARD)).unwrap();
        let fields: Vec<&str> = head
            .split("\r\n")
            .skip(1)
            .filter(|f| !f.starts_with("proxy-authorization"))
            .collect();
        let forwarded = format!("{method} {path} HTTP/1.1\r\n{}", fields.join("\r\n"));
        upstream.write_all(forwarded.as_bytes()).unwrap();
        let response = read_head(&mut upstream);
        let length = response
            .lines()
            .find_map(|l| l.strip_prefix("content-length: "))
            .map_or(0, |n| n.parse().unwrap());
        let mut body = vec![0; length];
        upstream.read_exact(&mut body).unwrap();
        client.write_all(response.as_bytes()).unwrap();
        client.write_all(&body).unwrap();
    }
}

/// Copies bytes both ways until each side closes.
fn splice(client: TcpStream, upstream: TcpStream) {
    let (mut from_up, mut to_client) = (upstream.try_clone().unwrap(), client.try_clone().unwrap());
    thread::spawn(move || {
        let _ = io::copy(&mut from_up, &mut to_client);
        let _ = to_client.shutdown(Shutdown::Write);
    });
    let (mut from_client, mut to_up) = (client, upstream);
    let _ = io::copy(&mut from_client, &mut to_up);
    let _ = to_up.shutdown(Shutdown::Write);
}

fn proxied(proxy: Proxy) -> ClientBuilder {
    Client::builder()
        .proxy(proxy)
        .timeout(Duration::from_secs(10))
}

/// A TLS server for `localhost`, and the roots that trust it.
fn tls_server() -> (common::TestServer, rustls::RootCertStore) {
    h2common::start_tls_localhost(app())
}

async fn text(client: &Client, url: &str) -> (Version, String) {
    let response = client.get(url).send().await.unwrap();
    assert_eq!(response.status(), 200, "{url}");
    (response.version(), response.text().await.unwrap())
}

#[test]
fn http_goes_to_the_proxy_in_absolute_form_with_basic_credentials() {
    let server = common::start(app());
    let (proxy_addr, log) = forward_proxy(Some("Basic dXNlcjpwYSBzcw=="));
    volt_rt::block_on(async {
        let proxy = Proxy::http(&format!("http://user:pa%20ss@{proxy_addr}")).unwrap();
        // (No `Accept-Encoding`: the head is the client's fields alone.)
        let client = proxied(proxy).decompress(false).build();
        let (_, body) = text(&client, &url(server.addr(), "/where?q=1")).await;
        assert_eq!(body, server.addr().to_string());
    });
    let want = format!(
        "#0 GET http://{0}/where?q=1 HTTP/1.1\r\nproxy-authorization: Basic dXNlcjpwYSBzcw==\r\n\
         host: {0}\r\n\r\n",
        server.addr()
    );
    assert_eq!(log.heads(), [want]);

    // Without the credentials, the proxy's 407 is the answer (no tunnel to fail here).
    volt_rt::block_on(async {
        let client = proxied(Proxy::http(&proxy_addr.to_string()).unwrap()).build();
        let response = client.get(&url(server.addr(), "/")).send().await.unwrap();
        assert_eq!(response.status(), 407);
        assert_eq!(
            response.header("proxy-authenticate"),
            Some("Basic realm=\"test\"")
        );
    });
    assert_eq!(log.heads().len(), 2);
}

#[test]
fn http_origins_share_the_connections_to_the_proxy() {
    let (a, b) = (common::start(app()), common::start(app()));
    let (proxy, log) = forward_proxy(None);
    volt_rt::block_on(async {
        let client = proxied(Proxy::all(&proxy.to_string()).unwrap()).build();
        for server in [&a, &b, &a] {
            let (version, body) = text(&client, &url(server.addr(), "/where")).await;
            assert_eq!(
                (version, body),
                (Version::HTTP_11, server.addr().to_string())
            );
        }
        assert_eq!(client.idle_connections(), 1);
    });
    let lines = log.lines();
    let line = |s: &common::TestServer| format!("#0 GET http://{}/where HTTP/1.1", s.addr());
    assert_eq!(lines, [line(&a), line(&b), line(&a)]);
}

#[test]
fn https_goes_through_a_connect_tunnel_with_tls_and_h2_end_to_end() {
    let (server, roots) = tls_server();
    let port = server.addr().port();
    let (proxy, log) = forward_proxy(Some("Basic dTpw"));
    volt_rt::block_on(async {
        let proxy = Proxy::all(&format!("http://u:p@{proxy}")).unwrap();
        for (builder, version) in [
            (proxied(proxy.clone()), Version::HTTP_2),
            (proxied(proxy.clone()).http1_only(), Version::HTTP_11),
        ] {
            let client = builder.tls_roots(roots.clone()).build();
            for _ in 0..2 {
                let got = text(&client, &format!("https://localhost:{port}/")).await;
                assert_eq!(got, (version, "hello".to_owned()));
            }
            assert_eq!(client.idle_connections(), 1);
        }
    });
    // One tunnel for each client, however many requests: the bytes inside are TLS.
    let connect = |id| {
        format!(
            "#{id} CONNECT localhost:{port} HTTP/1.1\r\nhost: localhost:{port}\r\n\
             proxy-authorization: Basic dTpw\r\n\r\n"
        )
    };
    assert_eq!(log.heads(), [connect(0), connect(1)]);
}

#[test]
fn a_tunnel_to_one_origin_is_never_used_for_another() {
    let ((a, roots_a), (b, roots_b)) = (tls_server(), tls_server());
    let (proxy, log) = forward_proxy(None);
    volt_rt::block_on(async {
        let mut roots = roots_a;
        roots.roots.extend(roots_b.roots);
        for builder in [
            proxied(Proxy::https(&proxy.to_string()).unwrap()),
            proxied(Proxy::https(&proxy.to_string()).unwrap()).http1_only(),
        ] {
            let client = builder.tls_roots(roots.clone()).build();
            for server in [&a, &b, &a, &b] {
                let url = format!("https://localhost:{}/where", server.addr().port());
                let (_, host) = text(&client, &url).await;
                assert_eq!(host, format!("localhost:{}", server.addr().port()));
            }
            assert_eq!(client.idle_connections(), 2);
        }
    });
    let lines = log.lines();
    let connect = |id, s: &common::TestServer| {
        format!("#{id} CONNECT localhost:{} HTTP/1.1", s.addr().port())
    };
    let want = [
        connect(0, &a),
        connect(1, &b),
        connect(2, &a),
        connect(3, &b),
    ];
    assert_eq!(lines, want);
}

#[test]
fn a_407_to_connect_is_an_error_carrying_the_status() {
    let (server, roots) = tls_server();
    let port = server.addr().port();
    let (proxy, log) = forward_proxy(Some("Basic dTpw"));
    volt_rt::block_on(async {
        let client = proxied(Proxy::all(&proxy.to_string()).unwrap())
            .tls_roots(roots)
            .build();
        let err = client
            .get(&format!("https://localhost:{port}/"))
            .send()
            .await
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::Other);
        let refused = err.get_ref().unwrap().downcast_ref::<ProxyError>().unwrap();
        assert_eq!(refused.status(), 407);
        assert_eq!(
            err.to_string(),
            format!(
                "the proxy refused a tunnel to localhost:{port}: 407 Proxy Authentication Required"
            )
        );
        assert_eq!(client.idle_connections(), 0);
    });
    let want = format!("#0 CONNECT localhost:{port} HTTP/1.1\r\nhost: localhost:{port}\r\n\r\n");
    assert_eq!(log.heads(), [want]);
}

#[test]
fn no_proxy_hosts_are_reached_directly() {
    let server = common::start(app());
    let port = server.addr().port();
    let (proxy, log) = forward_proxy(None);
    // The environment as a lookup: no variable of the process is touched.
    let env = move |name: &str| match name {
        "http_proxy" => Some(format!("http://{proxy}")),
        "NO_PROXY" => Some("example.test, 127.0.0.1".to_owned()),
        _ => None,
    };
    volt_rt::block_on(async {
        let client = proxied(Proxy::from_lookup(env).unwrap()).build();
        let direct = format!("http://127.0.0.1:{port}/where");
        assert_eq!(text(&client, &direct).await.1, format!("127.0.0.1:{port}"));
        // `localhost` is not on the list: through the proxy.
        let via = format!("http://localhost:{port}/where");
        assert_eq!(text(&client, &via).await.1, format!("localhost:{port}"));
    });
    let lines = log.lines();
    assert_eq!(
        lines,
        [format!("#0 GET http://localhost:{port}/where HTTP/1.1")]
    );
}

#[test]
fn a_websocket_goes_through_a_tunnel_too() {
    let server = common::start(app());
    let port = server.addr().port();
    let (proxy, log) = forward_proxy(None);
    volt_rt::block_on(async {
        let client = proxied(Proxy::all(&proxy.to_string()).unwrap()).build();
        let url = format!("ws://localhost:{port}/echo");
        let mut ws = client.websocket(&url).connect().await.unwrap();
        ws.send("through").await.unwrap();
        assert_eq!(
            ws.recv().await.unwrap(),
            Some(Message::Text("through".into()))
        );
        ws.close(1000, "done").await.unwrap();
    });
    let want = format!("#0 CONNECT localhost:{port} HTTP/1.1\r\nhost: localhost:{port}\r\n\r\n");
    assert_eq!(log.heads(), [want]);
}
