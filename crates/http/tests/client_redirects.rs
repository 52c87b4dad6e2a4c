//! The client following redirects against volt's own server: what each 3xx does to the
//! method and body, relative `Location`s, limits, and credentials across origins.

mod clientcommon;
mod common;

use std::io;
use std::net::SocketAddr;

use bytes::Bytes;
use clientcommon::{futures_stream, url};
use volt_http::header::{HeaderName, HeaderValue};
use volt_http::{any, get, Body, Client, Error, Method, Request, Response, Router, StatusCode};

fn redirect(status: u16, location: &str) -> Response {
    Response::text("moved")
        .with_status(StatusCode::from_u16(status).unwrap())
        .with_header("location", location)
}

/// `far` is another server's address: a redirect there changes the origin.
fn app(far: Option<SocketAddr>) -> Router {
    let far = far.map(|a| format!("http://{a}/dest"));
    Router::new()
        .route(
            "/dest",
            any(|mut req: Request| async move {
                let (method, query) = (req.method().clone(), req.query_string().unwrap_or("-"));
                let query = query.to_owned();
                let seen = |name: &str| req.header(name).unwrap_or("-").to_owned();
                let (ctype, auth, cookie) =
                    (seen("content-type"), seen("authorization"), seen("cookie"));
                let body = req.text().await?;
                Ok::<_, Error>(format!("{method}|{body}|{ctype}|{auth}|{cookie}|{query}"))
            }),
        )
        .route(
            "/301",
            any(|_req: Request| async { redirect(301, "/dest") }),
        )
        .route("/302", any(|_req: Request| async { redirect(302, "dest") }))
        .route(
            "/303",
            any(|_req: Request| async { redirect(303, "/dest") }),
        )
        .route(
            "/307",
            any(|_req: Request| async { redirect(307, "/dest") }),
        )
        .route(
            "/308",
            any(|_req: Request| async { redirect(308, "./dest?x=1") }),
        )
        .route(
            "/loop",
            get(|_req: Request| async { redirect(302, "/loop") }),
        )
        .route(
            "/noloc",
            get(|_req: Request| async { Response::new(StatusCode::FOUND) }),
        )
        .route(
            "/big",
            get(|_req: Request| async { redirect(302, "/dest").with_body(vec![b'z'; 300_000]) }),
        )
        .route(
            "/chain/{n}",
            get(|req: Request| async move {
                let n: u32 = req.param("n")?;
                Ok::<_, Error>(match n {
                    0 => Response::text("end"),
                    n => redirect(302, &format!("/chain/{}", n - 1)),
                })
            }),
        )
        .route(
            "/far",
            get(move |_req: Request| {
                let far = far.clone().unwrap_or_default();
                async move { redirect(302, &far) }
            }),
        )
}

fn header(name: &'static str, value: &'static str) -> (HeaderName, HeaderValue) {
    (
        HeaderName::from_static(name),
        HeaderValue::from_static(value),
    )
}

#[test]
fn each_status_treats_method_and_body_as_rfc_9110_says() {
    let server = common::start(app(None));
    let addr = server.addr();
    volt_rt::block_on(async move {
        let client = Client::new();
        let (auth, value) = header("authorization", "Bearer t");
        let cases = [
            (Method::POST, "/301", "GET||-|Bearer t|-|-"),
            (Method::PUT, "/301", "PUT|x|text/plain|Bearer t|-|-"),
            (Method::POST, "/302", "GET||-|Bearer t|-|-"),
            (Method::PATCH, "/302", "PATCH|x|text/plain|Bearer t|-|-"),
            (Method::POST, "/303", "GET||-|Bearer t|-|-"),
            (Method::PUT, "/303", "GET||-|Bearer t|-|-"),
            (Method::POST, "/307", "POST|x|text/plain|Bearer t|-|-"),
            (Method::DELETE, "/308", "DELETE|x|text/plain|Bearer t|-|x=1"),
        ];
        for (method, path, want) in cases {
            let response = client
                .request(method.clone(), &url(addr, path))
                .header(auth.clone(), value.clone())
                .header(
                    HeaderName::from_static("content-type"),
                    HeaderValue::from_static("text/plain"),
                )
                .body("x")
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), StatusCode::OK, "{method} {path}");
            assert_eq!(response.text().await.unwrap(), want, "{method} {path}");
        }
        // HEAD stays HEAD through a 303.
        let response = client
            .request(Method::HEAD, &url(addr, "/303"))
            .send()
            .await;
        let response = response.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.text().await.unwrap(), "");
    });
}

#[test]
fn what_is_not_followed_is_returned_as_it_is() {
    let server = common::start(app(None));
    let addr = server.addr();
    volt_rt::block_on(async move {
        // A streamed body cannot go again: the 307 is the answer.
        let parts = ["a", "b"].map(|p| Ok(Bytes::from(p)));
        let body = Body::stream(futures_stream(parts.into_iter()));
        let response = Client::new()
            .post(&url(addr, "/307"))
            .body(body)
            .send()
            .await;
        let response = response.unwrap();
        assert_eq!(response.status(), StatusCode::TEMPORARY_REDIRECT);
        assert_eq!(response.header("location"), Some("/dest"));

        // Following turned off.
        let client = Client::builder().redirects(0).build();
        let response = client.get(&url(addr, "/301")).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::MOVED_PERMANENTLY);
        assert_eq!(response.text().await.unwrap(), "moved");

        // No Location.
        let response = Client::new()
            .get(&url(addr, "/noloc"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::FOUND);
    });
}

#[test]
fn redirects_are_counted() {
    let server = common::start(app(None));
    let addr = server.addr();
    volt_rt::block_on(async move {
        let client = Client::new();
        let response = client.get(&url(addr, "/chain/10")).send().await.unwrap();
        assert_eq!(response.text().await.unwrap(), "end");
        for path in ["/chain/11", "/loop"] {
            let err = client.get(&url(addr, path)).send().await.unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::Other, "{path}");
            assert_eq!(err.to_string(), "more than 10 redirects", "{path}");
        }
        let client = Client::builder().redirects(2).build();
        let response = client.get(&url(addr, "/chain/2")).send().await.unwrap();
        assert_eq!(response.text().await.unwrap(), "end");
        assert!(client.get(&url(addr, "/chain/3")).send().await.is_err());

        // A redirect with a large body: dropped unread, followed all the same.
        let response = client.get(&url(addr, "/big")).send().await.unwrap();
        assert_eq!(response.text().await.unwrap(), "GET||-|-|-|-");
        // A small one is read, and its connection kept: one connection for the whole chain.
        let client = Client::new();
        let response = client.get(&url(addr, "/chain/3")).send().await.unwrap();
        assert_eq!(response.text().await.unwrap(), "end");
        assert_eq!(client.idle_connections(), 1);
    });
}

#[test]
fn credentials_stay_with_their_origin() {
    let far = common::start(app(None));
    let server = common::start(app(Some(far.addr())));
    let addr = server.addr();
    volt_rt::block_on(async move {
        let (auth, token) = header("authorization", "Bearer t");
        let (cookie, jar) = header("cookie", "s=1");
        let (other, value) = header("x-kept", "yes");
        let response = Client::new()
            .get(&url(addr, "/far"))
            .header(auth, token)
            .header(cookie, jar)
            .header(other, value)
            .send()
            .await
            .unwrap();
        assert_eq!(response.text().await.unwrap(), "GET||-|-|-|-");
    });
}
