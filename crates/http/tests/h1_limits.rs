//! Connection limits: past `max_connections_per_worker`, new connections wait unserved until
//! one closes. And many connections over two workers are all served.

mod common;

use std::time::Duration;

use common::text_response;
use volt_http::{get, Config, Response, Router};

fn app() -> Router {
    Router::new().route("/", get(|_req| async { Response::text("hi") }))
}

const HI: &str = "GET / HTTP/1.1\r\nHost: t\r\n\r\n";

fn limited(n: usize) -> Config {
    Config {
        max_connections_per_worker: n,
        ..Default::default()
    }
}

#[test]
fn connection_past_the_limit_waits_until_one_closes() {
    let server = common::start_with(1, limited(2), app());
    let mut a = server.connect();
    let mut b = server.connect();
    for c in [&mut a, &mut b] {
        c.send(HI.as_bytes());
        assert_eq!(c.read_response().text(), text_response("200 OK", "", "hi"));
    }
    let mut waiting = server.connect();
    waiting.send(HI.as_bytes());
    // Not served while both slots are taken (a loaded machine can only make this pass more
    // easily, never fail it wrongly).
    assert_eq!(
        waiting.poll_bytes(Duration::from_millis(300)),
        Some(Vec::new()),
        "served past the connection limit"
    );
    // The open ones keep working.
    b.send(HI.as_bytes());
    assert_eq!(b.read_response().text(), text_response("200 OK", "", "hi"));
    drop(a);
    assert_eq!(
        waiting.read_response().text(),
        text_response("200 OK", "", "hi")
    );
    server.shutdown();
}

#[test]
fn server_side_close_frees_a_slot_too() {
    let server = common::start_with(1, limited(1), app());
    let mut a = server.connect();
    a.send(HI.as_bytes());
    assert_eq!(a.read_response().status, 200);
    let mut waiting = server.connect();
    waiting.send(HI.as_bytes());
    assert_eq!(
        waiting.poll_bytes(Duration::from_millis(200)),
        Some(Vec::new())
    );
    // `a` asks the server to close it.
    a.send(b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    assert_eq!(a.read_response().status, 200);
    a.expect_closed();
    assert_eq!(
        waiting.read_response().text(),
        text_response("200 OK", "", "hi")
    );
}

#[test]
fn many_connections_on_two_workers_are_all_served() {
    let server = common::start_with(2, Config::default(), app());
    let mut clients: Vec<_> = (0..64).map(|_| server.connect()).collect();
    for round in 0..3 {
        for c in &mut clients {
            c.send(HI.as_bytes());
        }
        for (i, c) in clients.iter_mut().enumerate() {
            assert_eq!(
                c.read_response().text(),
                text_response("200 OK", "", "hi"),
                "client {i}, round {round}"
            );
        }
    }
    drop(clients);
    server.shutdown();
}

#[test]
fn connections_from_many_threads_at_once() {
    let server = common::start_with(2, Config::default(), app());
    let addr = server.addr();
    let threads: Vec<_> = (0..8)
        .map(|_| {
            std::thread::spawn(move || {
                for _ in 0..25 {
                    let mut c = common::Client::connect(addr);
                    c.send(HI.as_bytes());
                    assert_eq!(c.read_response().text(), text_response("200 OK", "", "hi"));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    server.shutdown();
}

/// With `defer_accept` (the default) a connection that has sent nothing is not handed to a
/// worker yet, so it takes no connection slot: a client that only connects cannot keep a
/// later client from being served.
#[test]
fn silent_connection_takes_no_slot_with_defer_accept() {
    let config = Config {
        // Long enough that the silent client is certainly still held by the kernel when the
        // second one asks, however loaded the machine.
        defer_accept: Some(Duration::from_secs(30)),
        ..limited(1)
    };
    let server = common::start_with(1, config, app());
    let silent = server.connect();
    let mut next = server.connect();
    next.send(HI.as_bytes());
    assert_eq!(
        next.read_response().text(),
        text_response("200 OK", "", "hi")
    );
    drop(silent);
    server.shutdown();
}

/// The control for the test above: without `defer_accept` the silent connection is accepted
/// at once and holds the only slot until it closes.
#[test]
fn silent_connection_takes_the_slot_without_defer_accept() {
    let config = Config {
        defer_accept: None,
        ..limited(1)
    };
    let server = common::start_with(1, config, app());
    let silent = server.connect();
    // Accepted first: it is first in the accept queue (give the worker time to take it).
    std::thread::sleep(Duration::from_millis(100));
    let mut next = server.connect();
    next.send(HI.as_bytes());
    assert_eq!(
        next.poll_bytes(Duration::from_millis(300)),
        Some(Vec::new()),
        "served while the silent connection held the only slot"
    );
    drop(silent);
    assert_eq!(
        next.read_response().text(),
        text_response("200 OK", "", "hi")
    );
    server.shutdown();
}
