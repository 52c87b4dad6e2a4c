//! The client's cookies against volt's own server (plain, and TLS with HTTP/2): what
//! `Set-Cookie` stores, the exact `Cookie` field later requests carry, paths and domains,
//! expiry, `Secure`, redirects, a shared jar, and the caps.

mod clientcommon;
mod common;
mod h2common;

use std::net::SocketAddr;
use std::time::Duration;

use clientcommon::url;
use volt_http::{get, Client, CookieJar, Request, Response, Router, StatusCode, Version};

/// `/set?a=1;%20Path=/x` answers with one `Set-Cookie` per `&`-separated part of its query
/// (percent-decoded); every other path answers with the `Cookie` field it got (`-`: none).
fn app() -> Router {
    let set = |req: Request| async move {
        let query = req.query_string().unwrap_or_default().to_owned();
        let mut response = Response::text("set");
        for line in query.split('&').filter(|l| !l.is_empty()) {
            let line = percent_decode(line);
            let value = volt_http::HeaderValue::from_str(&line).unwrap();
            response.append_header(volt_http::header::SET_COOKIE, value);
        }
        response
    };
    let echo = |req: Request| async move { req.header("cookie").unwrap_or("-").to_owned() };
    Router::new()
        .route("/set", get(set))
        .route(
            "/redirect",
            get(|_req: Request| async {
                Response::text("moved")
                    .with_status(StatusCode::FOUND)
                    .with_header("set-cookie", "hop=1; Path=/")
                    .with_header("location", "/app/after")
            }),
        )
        .route(
            "/ws",
            get(|req: Request| async move {
                // The session's first message is the handshake's `Cookie`; its 101 sets one.
                let cookie = req.header("cookie").unwrap_or("-").to_owned();
                let upgrade = req.websocket()?.on_upgrade(|mut ws| async move {
                    ws.send(cookie).await?;
                    while ws.recv().await?.is_some() {}
                    Ok(())
                });
                Ok::<_, volt_http::Error>(upgrade.with_header("set-cookie", "ws=1; Path=/"))
            }),
        )
        .route("/", get(echo))
        .route("/{*rest}", get(echo))
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap();
            out.push(u8::from_str_radix(hex, 16).unwrap());
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

/// A query that sets `lines`, percent-encoding what a query cannot carry.
fn set_query(lines: &[&str]) -> String {
    let encoded: Vec<String> = lines
        .iter()
        .map(|l| {
            l.bytes()
                .map(|b| match b {
                    b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'/' | b'-' | b'.' | b'_' => {
                        (b as char).to_string()
                    }
                    _ => format!("%{b:02X}"),
                })
                .collect()
        })
        .collect();
    format!("/set?{}", encoded.join("&"))
}

async fn get_text(client: &Client, url: &str) -> String {
    let response = client.get(url).send().await.unwrap();
    assert_eq!(response.status(), 200, "{url}");
    response.text().await.unwrap()
}

fn cookies_client() -> Client {
    Client::builder()
        .cookies(true)
        .timeout(Duration::from_secs(10))
        .build()
}

fn names(jar: &CookieJar) -> Vec<String> {
    let cookies = jar.cookies();
    cookies
        .iter()
        .map(|c| format!("{}={}@{}{}", c.name(), c.value(), c.domain(), c.path()))
        .collect()
}

#[test]
fn cookies_set_are_sent_back_longest_path_first() {
    let server = common::start(app());
    let base = |path: &str| url(server.addr(), path);
    volt_rt::block_on(async {
        let client = cookies_client();
        let set = set_query(&["session=abc; Path=/; HttpOnly", "theme=dark; Path=/app"]);
        assert_eq!(get_text(&client, &base(&set)).await, "set");
        assert_eq!(get_text(&client, &base("/")).await, "session=abc");
        assert_eq!(
            get_text(&client, &base("/app/page")).await,
            "theme=dark; session=abc"
        );
        // `/apple` is not under `/app`.
        assert_eq!(get_text(&client, &base("/apple")).await, "session=abc");
        // The default path of `/set` is `/`; of `/dir/set`, `/dir` (a cookie set from a
        // deeper path than the handler's is simulated through the jar).
        let jar = client.cookie_jar().unwrap();
        jar.set(&base("/docs/page"), "d=1").unwrap();
        assert_eq!(
            get_text(&client, &base("/docs/x")).await,
            "d=1; session=abc"
        );
        // A `Cookie` the caller sets comes first, in the same field.
        let own = volt_http::HeaderValue::from_static("own=1");
        let request = client
            .get(&base("/"))
            .header(volt_http::header::COOKIE, own);
        let response = request.send().await.unwrap();
        assert_eq!(response.text().await.unwrap(), "own=1; session=abc");
        let c = jar
            .cookies()
            .into_iter()
            .find(|c| c.name() == "session")
            .unwrap();
        assert!(c.http_only() && c.host_only() && !c.secure() && c.expires().is_none());
        assert_eq!(c.domain(), "127.0.0.1");

        // A client without cookies sends none and keeps none.
        let plain = Client::new();
        assert!(plain.cookie_jar().is_none());
        assert_eq!(get_text(&plain, &base(&set)).await, "set");
        assert_eq!(get_text(&plain, &base("/")).await, "-");
    });
}

#[test]
fn a_cookie_replaced_keeps_its_place_and_max_age_0_removes_it() {
    let server = common::start(app());
    let base = |path: &str| url(server.addr(), path);
    volt_rt::block_on(async {
        let client = cookies_client();
        let set = set_query(&["a=1", "b=2", "c=3; Max-Age=3600"]);
        get_text(&client, &base(&set)).await;
        assert_eq!(get_text(&client, &base("/")).await, "a=1; b=2; c=3");
        // Same name, domain and path: replaced in place (creation order kept).
        get_text(&client, &base(&set_query(&["a=one"]))).await;
        assert_eq!(get_text(&client, &base("/")).await, "a=one; b=2; c=3");
        // Max-Age=0 wins over a future Expires and removes it; a past Expires removes too.
        let gone = set_query(&[
            "a=x; Max-Age=0; Expires=Fri, 01 Jan 2100 00:00:00 GMT",
            "b=x; Expires=Thu, 01 Jan 1970 00:00:00 GMT",
        ]);
        get_text(&client, &base(&gone)).await;
        assert_eq!(get_text(&client, &base("/")).await, "c=3");
        let jar = client.cookie_jar().unwrap();
        assert_eq!(names(jar), ["c=3@127.0.0.1/"]);
        assert!(jar.cookies()[0].expires().is_some());
    });
}

#[test]
fn domains_are_checked_against_the_request_host() {
    let server = common::start(app());
    let port = server.addr().port();
    volt_rt::block_on(async {
        let client = cookies_client();
        let ip = |path: &str| format!("http://127.0.0.1:{port}{path}");
        let name = |path: &str| format!("http://localhost:{port}{path}");
        // From an address: only the address itself as Domain; never a name or a suffix.
        let set = set_query(&[
            "ip=1; Domain=127.0.0.1",
            "other=2; Domain=example.com",
            "suffix=3; Domain=0.0.1",
        ]);
        get_text(&client, &ip(&set)).await;
        // From a single-label name: Domain=localhost is host-only; Domain=com-like labels and
        // names that do not domain-match are refused.
        let set = set_query(&[
            "lh=1; Domain=localhost",
            "tld=2; Domain=test",
            "up=3; Domain=sub.localhost",
        ]);
        get_text(&client, &name(&set)).await;
        let jar = client.cookie_jar().unwrap();
        assert_eq!(names(jar), ["ip=1@127.0.0.1/", "lh=1@localhost/"]);
        // Each host gets its own, whatever the port (cookies do not see ports).
        assert_eq!(get_text(&client, &ip("/")).await, "ip=1");
        assert_eq!(get_text(&client, &name("/")).await, "lh=1");
        let lh = jar
            .cookies()
            .into_iter()
            .find(|c| c.name() == "lh")
            .unwrap();
        assert!(lh.host_only());
        // A domain cookie goes to the hosts below its domain; a host-only one does not.
        jar.set("http://www.example.test/", "dom=1; Domain=example.test")
            .unwrap();
        jar.set("http://www.example.test/", "host=2").unwrap();
        let header = |url: &str| jar.header_for(url).unwrap();
        assert_eq!(
            header("http://www.example.test/").as_deref(),
            Some("dom=1; host=2")
        );
        assert_eq!(header("http://api.example.test/").as_deref(), Some("dom=1"));
        assert_eq!(header("http://example.test/").as_deref(), Some("dom=1"));
        assert_eq!(header("http://badexample.test/"), None);
    });
}

#[test]
fn secure_cookies_are_not_sent_over_http_nor_set_from_it() {
    let server = common::start(app());
    let base = |path: &str| url(server.addr(), path);
    volt_rt::block_on(async {
        let client = cookies_client();
        let jar = client.cookie_jar().unwrap();
        // Set from https (by hand: this server is plain), so it is kept.
        assert!(jar.set("https://127.0.0.1/", "s=secret; Secure").unwrap());
        assert!(jar.set("https://127.0.0.1/", "p=plain").unwrap());
        get_text(&client, &base(&set_query(&["t=1; Secure", "u=2"]))).await;
        assert_eq!(get_text(&client, &base("/")).await, "p=plain; u=2");
        assert_eq!(
            jar.header_for("https://127.0.0.1/").unwrap().as_deref(),
            Some("s=secret; p=plain; u=2")
        );
        assert!(!names(jar).iter().any(|n| n.starts_with("t=")));
    });
}

#[test]
fn cookies_go_across_redirects_and_a_redirect_sets_them() {
    let server = common::start(app());
    let other = common::start(app());
    let base = |path: &str| url(server.addr(), path);
    volt_rt::block_on(async {
        let client = cookies_client();
        get_text(&client, &base(&set_query(&["before=1; Path=/app"]))).await;
        // The 302 sets `hop`; the request it leads to carries it, and `before`.
        let response = client.get(&base("/redirect")).send().await.unwrap();
        assert_eq!(response.text().await.unwrap(), "before=1; hop=1");
        // To another host (the same address by another name): none of them.
        let far = format!("http://localhost:{}/", other.addr().port());
        assert_eq!(get_text(&client, &far).await, "-");
    });
}

#[test]
fn a_jar_is_shared_between_clients_and_prefilled() {
    let server = common::start(app());
    let base = |path: &str| url(server.addr(), path);
    let jar = CookieJar::new();
    jar.set(&base("/"), "pre=filled").unwrap();
    let from_worker = jar.clone();
    let addr: SocketAddr = server.addr();
    // A client on another thread (another worker) stores into the same jar.
    std::thread::spawn(move || {
        volt_rt::block_on(async move {
            let client = Client::builder().cookie_jar(from_worker).build();
            let set = url(addr, &set_query(&["login=yes"]));
            get_text(&client, &set).await;
        })
    })
    .join()
    .unwrap();
    volt_rt::block_on(async {
        let client = Client::builder().cookie_jar(jar.clone()).build();
        assert_eq!(get_text(&client, &base("/")).await, "pre=filled; login=yes");
    });
    jar.clear();
    assert!(jar.cookies().is_empty());
}

#[test]
fn the_jar_keeps_at_most_50_cookies_a_domain_and_4096_bytes_a_cookie() {
    let server = common::start(app());
    let base = |path: &str| url(server.addr(), path);
    volt_rt::block_on(async {
        let client = cookies_client();
        let lines: Vec<String> = (0..60).map(|i| format!("c{i}=v")).collect();
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        get_text(&client, &base(&set_query(&lines))).await;
        let jar = client.cookie_jar().unwrap();
        assert_eq!(jar.cookies().len(), CookieJar::MAX_PER_DOMAIN);
        // The least recently used went first: the first ten.
        let sent = get_text(&client, &base("/")).await;
        let want: Vec<String> = (10..60).map(|i| format!("c{i}=v")).collect();
        assert_eq!(sent, want.join("; "));

        jar.clear();
        let fits = format!("big={}", "x".repeat(CookieJar::MAX_COOKIE_SIZE - 3));
        let over = format!("huge={}", "x".repeat(CookieJar::MAX_COOKIE_SIZE - 3));
        assert!(jar.set(&base("/"), &fits).unwrap());
        assert!(!jar.set(&base("/"), &over).unwrap());
        assert_eq!(get_text(&client, &base("/")).await, fits);
    });
}

#[test]
fn cookies_over_https_and_http2_in_one_field() {
    let (server, roots) = h2common::start_tls_localhost(app());
    let port = server.addr().port();
    volt_rt::block_on(async move {
        let client = Client::builder().cookies(true).tls_roots(roots).build();
        let base = |path: &str| format!("https://localhost:{port}{path}");
        let set = set_query(&[
            "s=1; Secure; SameSite=Strict",
            "a=2; Path=/app",
            "__Host-h=3; Secure; Path=/",
        ]);
        let response = client.get(&base(&set)).send().await.unwrap();
        assert_eq!(response.version(), Version::HTTP_2);
        response.text().await.unwrap();
        let response = client.get(&base("/app/x")).send().await.unwrap();
        assert_eq!(response.version(), Version::HTTP_2);
        assert_eq!(response.text().await.unwrap(), "a=2; s=1; __Host-h=3");
        let jar = client.cookie_jar().unwrap();
        let s = jar.cookies().into_iter().find(|c| c.name() == "s").unwrap();
        assert!(s.secure());
        assert_eq!(s.same_site(), Some(volt_http::SameSite::Strict));
    });
}

/// A WebSocket handshake is a request like any other: it carries the jar's cookies (not the
/// `Secure` ones over `ws:`), and its 101's `Set-Cookie` is stored.
#[test]
fn a_websocket_handshake_sends_and_stores_cookies() {
    let server = common::start(app());
    let base = |path: &str| url(server.addr(), path);
    volt_rt::block_on(async {
        let client = cookies_client();
        let set = set_query(&["session=abc; Path=/", "secret=1; Path=/; Secure"]);
        assert_eq!(get_text(&client, &base(&set)).await, "set");
        let jar = client.cookie_jar().unwrap();
        // Over plain http the Secure one is refused outright; put it in as if over https.
        let https = format!("https://{}/", server.addr());
        assert!(jar.set(&https, "secret=1; Path=/; Secure").unwrap());
        let ws_url = format!("ws://{}/ws", server.addr());
        let mut ws = client.websocket(&ws_url).connect().await.unwrap();
        match ws.recv().await.unwrap() {
            Some(volt_http::Message::Text(cookie)) => assert_eq!(cookie, "session=abc"),
            other => panic!("{other:?}"),
        }
        ws.close(1000, "").await.unwrap();
        // The 101's cookie comes back on the next request.
        assert_eq!(get_text(&client, &base("/")).await, "session=abc; ws=1");
    });
}
