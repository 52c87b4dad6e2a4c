//! `wrap`: functions around a service see requests in order from the outside in and responses
//! from the inside out, may answer alone, hand values to the handler through the request's
//! extensions, wait, and stay out of the way of pipelining, panics and HTTP/2.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::Client;
use volt_http::{get, wrap, IntoResponse, Request, Response, Router, StatusCode, Version};

/// Who the gate let in, for the handler.
#[derive(Clone)]
struct User(String);

/// `/` says who asked; `/panic` panics; every call is counted and logged.
fn app(calls: Arc<AtomicUsize>, log: Arc<Mutex<Vec<String>>>) -> Router {
    let log2 = log.clone();
    Router::new()
        .route(
            "/",
            get(move |req: Request| {
                calls.fetch_add(1, Ordering::SeqCst);
                log.lock().unwrap().push("handler".into());
                let user = req.extension::<User>().map(|u| u.0.clone());
                async move { format!("hello {}", user.as_deref().unwrap_or("nobody")) }
            }),
        )
        .route(
            "/panic",
            get(move |_req: Request| {
                log2.lock().unwrap().push("handler".into());
                async { panic!("handler bug") as &'static str }
            }),
        )
}

/// The app behind two wrappers: `inner` logs and stamps the response; `outer` refuses
/// requests without `authorization`, waits a little (a future that really pends), attaches
/// the user, and stamps the response after `inner` did.
fn wrapped(calls: Arc<AtomicUsize>, log: Arc<Mutex<Vec<String>>>) -> impl volt_http::Service {
    let (l1, l2) = (log.clone(), log.clone());
    let inner = wrap(app(calls, log), move |req: Request, next| {
        let log = l1.clone();
        async move {
            log.lock().unwrap().push("inner in".into());
            let response = next.run(req).await;
            log.lock().unwrap().push("inner out".into());
            response.with_header("x-inner", "1")
        }
    });
    wrap(inner, move |mut req: Request, next| {
        let log = l2.clone();
        async move {
            let Some(who) = req.header("authorization").map(str::to_owned) else {
                log.lock().unwrap().push("refused".into());
                return StatusCode::UNAUTHORIZED.into_response();
            };
            log.lock().unwrap().push("outer in".into());
            volt_rt::time::sleep(Duration::from_millis(5)).await;
            req.insert_extension(User(who));
            let response = next.run(req).await;
            log.lock().unwrap().push("outer out".into());
            let inner_first = response.header("x-inner").is_some();
            response.with_header("x-outer", if inner_first { "after-inner" } else { "alone" })
        }
    })
}

fn get_with(client: &mut Client, path: &str, auth: Option<&str>) -> common::RawResponse {
    let auth = auth.map_or(String::new(), |a| format!("Authorization: {a}\r\n"));
    client.send(format!("GET {path} HTTP/1.1\r\nHost: t\r\n{auth}\r\n").as_bytes());
    client.read_response()
}

#[test]
fn requests_go_outside_in_and_responses_inside_out() {
    let (calls, log) = (Arc::default(), Arc::default());
    let server = common::start(wrapped(Arc::clone(&calls), Arc::clone(&log)));
    let mut client = Client::connect(server.addr());
    let response = get_with(&mut client, "/", Some("ada"));
    assert_eq!(response.status, 200);
    assert_eq!(response.body_text(), "hello ada");
    assert_eq!(response.header("x-inner"), Some("1"));
    assert_eq!(response.header("x-outer"), Some("after-inner"));
    assert_eq!(
        *log.lock().unwrap(),
        ["outer in", "inner in", "handler", "inner out", "outer out"]
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[test]
fn a_wrapper_may_answer_alone() {
    let (calls, log) = (Arc::new(AtomicUsize::new(0)), Arc::default());
    let server = common::start(wrapped(calls.clone(), Arc::clone(&log)));
    let mut client = Client::connect(server.addr());
    let response = get_with(&mut client, "/", None);
    assert_eq!(response.status, 401);
    assert_eq!(response.header("x-inner"), None);
    assert_eq!(*log.lock().unwrap(), ["refused"]);
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    // The connection goes on.
    assert_eq!(
        get_with(&mut client, "/", Some("bo")).body_text(),
        "hello bo"
    );
}

/// Pipelined requests through waiting wrappers are answered in order, each with its own user.
#[test]
fn pipelined_requests_keep_their_order_through_waiting_wrappers() {
    let (calls, log) = (Arc::new(AtomicUsize::new(0)), Arc::default());
    let server = common::start(wrapped(calls.clone(), log));
    let mut client = Client::connect(server.addr());
    let mut batch = Vec::new();
    for i in 0..8 {
        let auth = if i == 3 {
            String::new()
        } else {
            format!("Authorization: u{i}\r\n")
        };
        batch.extend_from_slice(format!("GET / HTTP/1.1\r\nHost: t\r\n{auth}\r\n").as_bytes());
    }
    client.send(&batch);
    for i in 0..8 {
        let response = client.read_response();
        match i {
            3 => assert_eq!(response.status, 401),
            _ => assert_eq!(response.body_text(), format!("hello u{i}")),
        }
    }
    assert_eq!(calls.load(Ordering::SeqCst), 7);
}

/// A handler that panics behind wrappers gets its 500 like one that is not wrapped: the
/// panic unwinds through the wrappers' futures, and the worker goes on.
#[test]
fn a_panic_behind_wrappers_answers_500() {
    let (calls, log) = (Arc::new(AtomicUsize::new(0)), Arc::default());
    let server = common::start(wrapped(calls, log));
    let mut client = Client::connect(server.addr());
    assert_eq!(get_with(&mut client, "/panic", Some("ada")).status, 500);
    let mut client = Client::connect(server.addr());
    assert_eq!(
        get_with(&mut client, "/", Some("ada")).body_text(),
        "hello ada"
    );
}

#[test]
fn wrappers_work_over_http2() {
    let (calls, log) = (Arc::new(AtomicUsize::new(0)), Arc::default());
    let server = common::start(wrapped(calls.clone(), log));
    let url = format!("http://{}/", server.addr());
    volt_rt::block_on(async move {
        let client = volt_http::Client::builder().http2_prior_knowledge().build();
        let refused = client.get(&url).send().await.unwrap();
        assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
        let response = client
            .get(&url)
            .header(
                volt_http::header::AUTHORIZATION,
                volt_http::HeaderValue::from_static("h2"),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(response.version(), Version::HTTP_2);
        assert_eq!(response.headers().get("x-outer").unwrap(), "after-inner");
        assert_eq!(response.text().await.unwrap(), "hello h2");
    });
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

/// `wrap` around something that is not a router: a single function.
#[test]
fn wrap_takes_any_service() {
    let app = volt_http::service_fn(|req: Request| async move { req.path().to_owned() });
    let app = wrap(app, |req: Request, next| async move {
        let response: Response = next.run(req).await;
        response.with_header("x-wrapped", "yes")
    });
    let server = common::start(app);
    let mut client = Client::connect(server.addr());
    let response = get_with(&mut client, "/any/path", None);
    assert_eq!(response.body_text(), "/any/path");
    assert_eq!(response.header("x-wrapped"), Some("yes"));
}
