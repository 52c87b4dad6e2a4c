//! Pipelining: responses are matched to requests in order, and a `HEAD` response (headers
//! announce a body, none follows) is framed as the request says.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use common::{guard, Behavior, TestServer};
use volt_bench::{Config, RequestLine};

/// Five distinct paths in round robin; the server echoes each one in `X-Id`, and the client
/// checks every response against the request it believes it answers.
#[test]
fn pipelined_responses_match_requests_in_order() {
    guard(|| {
        let server = TestServer::start(Behavior::Echo);
        let paths: Vec<String> = (0..5).map(|i| format!("/id/{i}")).collect();
        let checked = Arc::new(AtomicU64::new(0));
        let mismatched = Arc::new(AtomicU64::new(0));
        let (c, m, p) = (checked.clone(), mismatched.clone(), paths.clone());
        let mut builder = Config::builder()
            .connections(3)
            .threads(2)
            .pipeline(16)
            .total_requests(2_000)
            .inspect(move |response| {
                c.fetch_add(1, Ordering::Relaxed);
                let expected = p[response.request()].as_bytes();
                if response.header("x-id") != Some(expected) {
                    m.fetch_add(1, Ordering::Relaxed);
                }
            });
        for path in &paths {
            builder = builder.url(server.url(path));
        }
        let report = volt_bench::run(&builder.build().unwrap()).unwrap();
        let level = &report.levels[0];
        assert_eq!(level.requests, 2_000);
        assert_eq!(level.errors.total, 0);
        assert_eq!(checked.load(Ordering::Relaxed), 2_000);
        assert_eq!(mismatched.load(Ordering::Relaxed), 0);
    });
}

/// GET and HEAD alternate inside each pipelined batch. The server sends `Content-Length: 13`
/// on both but a body only for GET: reading a body after the HEAD response would swallow the
/// next response's head and break every count below.
#[test]
fn head_responses_in_a_pipeline_have_no_body() {
    guard(|| {
        let server = TestServer::start(Behavior::Echo);
        let list = format!(
            "GET {0}\nHEAD {1}\nHEAD {2}\nGET {3}\n",
            server.url("/get/0"),
            server.url("/head/1"),
            server.url("/head/2"),
            server.url("/get/3")
        );
        let lines = RequestLine::parse_list(&list).unwrap();
        let heads = Arc::new(AtomicU64::new(0));
        let bad = Arc::new(AtomicU64::new(0));
        let (h, b) = (heads.clone(), bad.clone());
        let config = Config::builder()
            .requests(lines)
            .connections(2)
            .threads(1)
            .pipeline(16)
            .total_requests(1_000)
            .inspect(move |response| {
                let is_head_request = matches!(response.request(), 1 | 2);
                let id = response.header("x-id").unwrap_or_default();
                h.fetch_add(u64::from(is_head_request), Ordering::Relaxed);
                if id.starts_with(b"/head") != is_head_request {
                    b.fetch_add(1, Ordering::Relaxed);
                }
            })
            .build()
            .unwrap();
        let report = volt_bench::run(&config).unwrap();
        let level = &report.levels[0];
        assert_eq!((level.requests, level.errors.total), (1_000, 0));
        assert_eq!(heads.load(Ordering::Relaxed), 500);
        assert_eq!(bad.load(Ordering::Relaxed), 0);
        assert_eq!(
            server.accepts(),
            2,
            "HEAD responses must not break the connection"
        );
    });
}

/// A request of a batch failing mid-pipeline: the answered ones count, the rest are re-sent,
/// and the total is still exact.
#[test]
fn pipelined_batches_survive_a_server_that_closes_after_each_response() {
    guard(|| {
        let server = TestServer::start(Behavior::UntilClose);
        let config = Config::builder()
            .url(server.url("/"))
            .connections(2)
            .threads(1)
            .pipeline(8)
            .total_requests(40)
            .build()
            .unwrap();
        let report = volt_bench::run(&config).unwrap();
        let level = &report.levels[0];
        assert_eq!(
            (level.requests, level.errors.total),
            (40, 0),
            "{:?}",
            level.errors
        );
    });
}
