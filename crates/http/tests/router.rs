//! The router and the extractors over a real socket: parameters (percent-decoded, typed),
//! query strings, JSON bodies, 404, 405 with `Allow`, HEAD on GET routes, catch-alls, literal
//! segments before parameters, and shared state.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};

use common::{text_response, Client};
use volt_http::{any, get, post, Error, Json, Request, Router};

#[derive(serde::Deserialize)]
struct Search {
    q: String,
    page: u32,
}

#[derive(serde::Deserialize, serde::Serialize)]
struct Item {
    name: String,
    count: u32,
}

struct Counter(AtomicU64);

async fn user(req: Request) -> Result<String, Error> {
    let id: String = req.param("id")?;
    Ok(format!("user {id}"))
}

async fn numbered(req: Request) -> Result<String, Error> {
    let n: u64 = req.param("n")?;
    Ok(format!("number {n}"))
}

fn app() -> Router {
    Router::new()
        .route("/", get(|_req| async { "home" }))
        .route("/users/{id}", get(user))
        .route("/users/me", get(|_req| async { "the current user" }))
        .route("/numbers/{n}", get(numbered))
        .route(
            "/teams/{team}/members/{member}",
            get(|req: Request| async move {
                let team: String = req.param("team")?;
                let member: u32 = req.param("member")?;
                Ok::<_, Error>(format!("{team}/{member}"))
            }),
        )
        .route(
            "/static/{*path}",
            get(|req: Request| async move {
                let path: String = req.param("path")?;
                Ok::<_, Error>(format!("static [{path}]"))
            }),
        )
        .route(
            "/search",
            get(|req: Request| async move {
                let s: Search = req.query()?;
                Ok::<_, Error>(format!("{} page {}", s.q, s.page))
            }),
        )
        .route(
            "/items",
            post(|mut req: Request| async move {
                let item: Item = req.json().await?;
                Ok::<_, Error>(Json(Item {
                    count: item.count * 2,
                    ..item
                }))
            })
            .get(|_req| async { "all items" }),
        )
        .route(
            "/count",
            get(|req: Request| async move {
                let counter = req.state::<Counter>();
                let n = counter.0.fetch_add(1, Ordering::SeqCst) + 1;
                format!("count {n}")
            }),
        )
        .route(
            "/header",
            get(|req: Request| async move {
                let n: Option<u32> = req.typed_header("x-n")?;
                Ok::<_, Error>(format!("x-n {n:?}"))
            }),
        )
        .route(
            "/anything",
            any(|req: Request| async move { format!("any {}", req.method()) }),
        )
        .state(Counter(AtomicU64::new(0)))
}

/// The normalized answer of a `&str`/`String` handler (`text/plain; charset=utf-8`).
fn utf8(status_line: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status_line}\r\nServer: volt\r\nDate: <date>\r\n\
         Content-Type: text/plain; charset=utf-8\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
}

fn bad_request(message: &str) -> String {
    text_response("400 Bad Request", "", &format!("{message}\n"))
}

fn get_on(c: &mut Client, target: &str) -> String {
    c.send(format!("GET {target} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
    c.read_response().text()
}

#[test]
fn path_parameter_is_percent_decoded() {
    let server = common::start(app());
    let mut c = server.connect();
    assert_eq!(get_on(&mut c, "/users/42"), utf8("200 OK", "user 42"));
    assert_eq!(
        get_on(&mut c, "/users/J%C3%BCrgen%20M%2FB"),
        utf8("200 OK", "user Jürgen M/B")
    );
    server.shutdown();
}

#[test]
fn bad_percent_encoding_in_a_parameter_is_400_naming_it() {
    let server = common::start(app());
    let mut c = server.connect();
    assert_eq!(
        get_on(&mut c, "/users/a%zz"),
        bad_request("invalid path parameter `id`: bad percent-encoding")
    );
    assert_eq!(
        get_on(&mut c, "/users/%FF"),
        bad_request("invalid path parameter `id`: bad percent-encoding")
    );
    // A 400 from a handler keeps the connection.
    assert_eq!(get_on(&mut c, "/users/1"), utf8("200 OK", "user 1"));
}

#[test]
fn typed_parameter_that_does_not_parse_is_400_naming_it() {
    let server = common::start(app());
    let mut c = server.connect();
    assert_eq!(get_on(&mut c, "/numbers/7"), utf8("200 OK", "number 7"));
    assert_eq!(
        get_on(&mut c, "/numbers/seven"),
        bad_request("invalid path parameter `n`: invalid digit found in string")
    );
    assert_eq!(
        get_on(&mut c, "/numbers/-1"),
        bad_request("invalid path parameter `n`: invalid digit found in string")
    );
    assert_eq!(
        get_on(&mut c, "/teams/core/members/x1"),
        bad_request("invalid path parameter `member`: invalid digit found in string")
    );
    assert_eq!(
        get_on(&mut c, "/teams/core/members/12"),
        utf8("200 OK", "core/12")
    );
}

#[test]
fn query_string_into_a_struct() {
    let server = common::start(app());
    let mut c = server.connect();
    assert_eq!(
        get_on(&mut c, "/search?q=fast+http%21&page=2"),
        utf8("200 OK", "fast http! page 2")
    );
    assert_eq!(
        get_on(&mut c, "/search?page=x&q=a"),
        bad_request("invalid query string: invalid digit found in string")
    );
    assert_eq!(
        get_on(&mut c, "/search?q=a"),
        bad_request("invalid query string: missing field `page`")
    );
    assert_eq!(
        get_on(&mut c, "/search"),
        bad_request("invalid query string: missing field `q`")
    );
}

#[test]
fn json_body_good_bad_and_wrong_content_type() {
    let server = common::start(app());
    let mut c = server.connect();
    let post = |c: &mut Client, content_type: &str, body: &str| {
        c.send(
            format!(
                "POST /items HTTP/1.1\r\nHost: t\r\n{content_type}Content-Length: {}\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        );
        c.read_response().text()
    };
    assert_eq!(
        post(
            &mut c,
            "Content-Type: application/json\r\n",
            r#"{"name":"bolt","count":21}"#
        ),
        "HTTP/1.1 200 OK\r\nServer: volt\r\nDate: <date>\r\nContent-Type: application/json\r\n\
         content-length: 26\r\n\r\n{\"name\":\"bolt\",\"count\":42}"
    );
    // No content type at all is taken as JSON.
    assert_eq!(
        post(&mut c, "", r#"{"name":"x","count":1}"#),
        "HTTP/1.1 200 OK\r\nServer: volt\r\nDate: <date>\r\nContent-Type: application/json\r\n\
         content-length: 22\r\n\r\n{\"name\":\"x\",\"count\":2}"
    );
    assert_eq!(
        post(
            &mut c,
            "Content-Type: application/json\r\n",
            r#"{"name":"x"}"#
        ),
        bad_request("invalid JSON body: missing field `count` at line 1 column 12")
    );
    assert_eq!(
        post(&mut c, "Content-Type: application/json\r\n", "{not json"),
        bad_request("invalid JSON body: key must be a string at line 1 column 2")
    );
    assert_eq!(
        post(
            &mut c,
            "Content-Type: text/plain\r\n",
            r#"{"name":"x","count":1}"#
        ),
        text_response(
            "415 Unsupported Media Type",
            "",
            "expected an application/json body, got `text/plain`\n"
        )
    );
    // The refused body was skipped, not read as a request.
    assert_eq!(get_on(&mut c, "/items"), utf8("200 OK", "all items"));
}

#[test]
fn unknown_path_is_404() {
    let server = common::start(app());
    let mut c = server.connect();
    for path in [
        "/nope",
        "/users",
        "/users/1/extra",
        "/numbers/",
        "/static-ish",
    ] {
        assert_eq!(
            get_on(&mut c, path),
            text_response("404 Not Found", "", "not found\n"),
            "{path}"
        );
    }
}

#[test]
fn wrong_method_is_405_with_allow() {
    let server = common::start(app());
    let mut c = server.connect();
    c.send(b"DELETE /users/1 HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(
        c.read_response().text(),
        text_response(
            "405 Method Not Allowed",
            "allow: GET, HEAD\r\n",
            "method not allowed\n"
        )
    );
    c.send(b"PUT /items HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\n{}");
    assert_eq!(
        c.read_response().text(),
        text_response(
            "405 Method Not Allowed",
            "allow: POST, GET, HEAD\r\n",
            "method not allowed\n"
        )
    );
    c.send(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n");
    assert_eq!(
        c.read_response().text(),
        text_response(
            "405 Method Not Allowed",
            "allow: GET, HEAD\r\n",
            "method not allowed\n"
        )
    );
}

#[test]
fn head_on_a_get_route_has_the_get_length_and_no_body() {
    let server = common::start(app());
    let mut c = server.connect();
    c.send(b"HEAD /users/42 HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(
        c.read_head_response().text(),
        "HTTP/1.1 200 OK\r\nServer: volt\r\nDate: <date>\r\n\
         Content-Type: text/plain; charset=utf-8\r\ncontent-length: 7\r\n\r\n"
    );
    c.send(b"HEAD / HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(
        c.read_head_response().text(),
        "HTTP/1.1 200 OK\r\nServer: volt\r\nDate: <date>\r\n\
         Content-Type: text/plain; charset=utf-8\r\ncontent-length: 4\r\n\r\n"
    );
    assert_eq!(get_on(&mut c, "/"), utf8("200 OK", "home"));
}

#[test]
fn catch_all_takes_the_rest_of_the_path() {
    let server = common::start(app());
    let mut c = server.connect();
    assert_eq!(
        get_on(&mut c, "/static/css/site.css"),
        utf8("200 OK", "static [css/site.css]")
    );
    assert_eq!(
        get_on(&mut c, "/static/a%20b/c?v=1"),
        utf8("200 OK", "static [a b/c]")
    );
    assert_eq!(get_on(&mut c, "/static/x"), utf8("200 OK", "static [x]"));
    assert_eq!(get_on(&mut c, "/static/"), utf8("200 OK", "static []"));
}

#[test]
fn literal_segment_beats_a_parameter_whatever_the_order() {
    let server = common::start(app());
    let mut c = server.connect();
    assert_eq!(
        get_on(&mut c, "/users/me"),
        utf8("200 OK", "the current user")
    );
    assert_eq!(get_on(&mut c, "/users/mee"), utf8("200 OK", "user mee"));

    let reversed = Router::new()
        .route("/users/me", get(|_req| async { "the current user" }))
        .route("/users/{id}", get(user));
    let server = common::start(reversed);
    let mut c = server.connect();
    assert_eq!(
        get_on(&mut c, "/users/me"),
        utf8("200 OK", "the current user")
    );
    assert_eq!(get_on(&mut c, "/users/you"), utf8("200 OK", "user you"));
}

#[test]
fn literal_route_beats_a_catch_all() {
    let app = Router::new()
        .route("/files/{*rest}", get(|_req| async { "catch-all" }))
        .route("/files/index", get(|_req| async { "index" }))
        .route("/{*anything}", get(|_req| async { "fallback" }));
    let server = common::start(app);
    let mut c = server.connect();
    assert_eq!(get_on(&mut c, "/files/index"), utf8("200 OK", "index"));
    assert_eq!(get_on(&mut c, "/files/other"), utf8("200 OK", "catch-all"));
    assert_eq!(
        get_on(&mut c, "/elsewhere/deep"),
        utf8("200 OK", "fallback")
    );
    assert_eq!(get_on(&mut c, "/"), utf8("200 OK", "fallback"));
}

#[test]
fn shared_state_is_seen_by_every_handler_on_every_worker() {
    let server = common::start_with(2, volt_http::Config::default(), app());
    let mut seen = Vec::new();
    for _ in 0..10 {
        let mut c = server.connect();
        let r = get_on(&mut c, "/count");
        let n: u64 = r.rsplit(' ').next().unwrap().parse().unwrap();
        seen.push(n);
    }
    assert_eq!(seen, (1..=10).collect::<Vec<_>>());
    server.shutdown();
}

#[test]
fn typed_header_extraction() {
    let server = common::start(app());
    let mut c = server.connect();
    c.send(b"GET /header HTTP/1.1\r\nHost: t\r\nX-N: 12\r\n\r\n");
    assert_eq!(c.read_response().text(), utf8("200 OK", "x-n Some(12)"));
    c.send(b"GET /header HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(c.read_response().text(), utf8("200 OK", "x-n None"));
    c.send(b"GET /header HTTP/1.1\r\nHost: t\r\nX-N: twelve\r\n\r\n");
    assert_eq!(
        c.read_response().text(),
        bad_request("invalid header `x-n`: invalid digit found in string")
    );
}

#[test]
fn any_route_takes_every_method() {
    let server = common::start(app());
    let mut c = server.connect();
    for method in ["GET", "POST", "DELETE", "PATCH", "OPTIONS", "PURGE"] {
        c.send(format!("{method} /anything HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
        let body = format!("any {method}");
        assert_eq!(c.read_response().text(), utf8("200 OK", &body));
    }
}

#[test]
fn query_string_does_not_take_part_in_routing() {
    let server = common::start(app());
    let mut c = server.connect();
    assert_eq!(get_on(&mut c, "/?a=1"), utf8("200 OK", "home"));
    assert_eq!(get_on(&mut c, "/users/5?x=/y"), utf8("200 OK", "user 5"));
}

/// RFC 9112 §3.2.2: a server must accept the absolute form of the request target.
#[test]
fn absolute_form_target_is_routed_by_its_path() {
    let server = common::start(app());
    let mut c = server.connect();
    assert_eq!(
        get_on(&mut c, "http://t/users/9?x=1"),
        utf8("200 OK", "user 9")
    );
}

/// RFC 9112 §3.2.2: with an absolute-form target the server ignores `Host` and takes the
/// host from the target. Every view a handler has agrees: `host()`, the `Host` header (by
/// name and in the list) and the target. They said `t` (the `Host` field) beside a target
/// naming `example.com`.
#[test]
fn absolute_form_target_is_the_host_every_view_sees() {
    let views = |req: Request| async move {
        let listed: Vec<String> = req
            .headers()
            .filter(|(name, _)| name.eq_ignore_ascii_case("host"))
            .map(|(_, value)| String::from_utf8_lossy(value).into_owned())
            .collect();
        format!(
            "{:?} {:?} {listed:?} {} {}",
            req.host(),
            req.header("host"),
            req.target(),
            req.path()
        )
    };
    let server = common::start(Router::new().route("/{*rest}", get(views)));
    let mut c = server.connect();
    assert_eq!(
        get_on(&mut c, "http://example.com:8080/a/b?x=1"),
        utf8(
            "200 OK",
            r#"Some("example.com:8080") Some("example.com:8080") ["example.com:8080"] http://example.com:8080/a/b?x=1 /a/b"#
        )
    );
    assert_eq!(
        get_on(&mut c, "/a"),
        utf8("200 OK", r#"Some("t") Some("t") ["t"] /a /a"#)
    );
    // HTTP/1.0 may send no Host: the target still names the host.
    c.send(b"GET HTTPS://[::1]/a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    let response = c.read_response().text();
    assert!(
        response.ends_with(r#"Some("[::1]") None [] HTTPS://[::1]/a /a"#),
        "{response}"
    );
}

/// An absolute-form target with an empty path means `/` (RFC 9110 §4.2.3), not "".
#[test]
fn absolute_form_target_with_an_empty_path_routes_as_slash() {
    let server = common::start(app());
    let mut c = server.connect();
    assert_eq!(get_on(&mut c, "http://t"), utf8("200 OK", "home"));
    assert_eq!(get_on(&mut c, "http://t?a=1"), utf8("200 OK", "home"));
}
