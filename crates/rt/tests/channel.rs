//! The cross-worker channel: ordering, closing, and many producers on plain threads.
//!
//! Runs under Miri (`cargo +nightly miri test -p volt-rt --test channel`), with smaller counts.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::guard;
use volt_rt::{block_on, channel, spawn, yield_now, SendError, Sender};

#[test]
fn values_arrive_in_order() {
    guard(|| {
        block_on(async {
            let (tx, mut rx) = channel();
            for i in 0..100 {
                tx.send(i).unwrap();
            }
            for i in 0..100 {
                assert_eq!(rx.recv().await, Some(i));
            }
            assert_eq!(rx.try_recv(), None);
        });
    });
}

#[test]
fn recv_returns_none_once_every_sender_is_gone() {
    guard(|| {
        block_on(async {
            let (tx, mut rx) = channel();
            let tx2 = tx.clone();
            tx.send(1).unwrap();
            drop(tx);
            tx2.send(2).unwrap();
            // A receiver waiting when the last sender goes is woken.
            let last = spawn(async move {
                yield_now().await;
                drop(tx2);
            });
            assert_eq!(rx.recv().await, Some(1));
            assert_eq!(rx.recv().await, Some(2));
            assert_eq!(rx.recv().await, None);
            assert_eq!(rx.recv().await, None);
            last.await.unwrap();
        });
    });
}

#[test]
fn send_after_the_receiver_is_gone_returns_the_value() {
    guard(|| {
        let (tx, rx) = channel::<String>();
        drop(rx);
        let err = tx.send("back".to_string()).unwrap_err();
        assert_eq!(err, SendError("back".to_string()));
        assert_eq!(err.0, "back");
        assert_eq!(err.to_string(), "the receiver was dropped");
    });
}

#[test]
fn queued_values_are_dropped_with_the_receiver() {
    guard(|| {
        let value = Arc::new(());
        let (tx, rx) = channel();
        tx.send(value.clone()).unwrap();
        tx.send(value.clone()).unwrap();
        assert_eq!(Arc::strong_count(&value), 3);
        drop(rx);
        assert_eq!(Arc::strong_count(&value), 1);
    });
}

/// A message that carries a sender of its own channel (a reply-to address, a subscription).
struct Msg {
    _reply: Option<Sender<Msg>>,
}

/// Regression: dropping the receiver dropped the queued values while holding the channel's
/// lock; a queued value holding a `Sender` of the same channel then locked it again in
/// `Sender::drop` and deadlocked.
#[test]
fn dropping_the_receiver_with_a_queued_sender_of_the_same_channel() {
    guard(|| {
        let (tx, rx) = channel::<Msg>();
        tx.send(Msg {
            _reply: Some(tx.clone()),
        })
        .unwrap();
        drop(rx);
        assert!(tx.send(Msg { _reply: None }).is_err());
    });
}

#[test]
fn many_threads_send_each_value_exactly_once() {
    let (threads, per_thread): (u64, u64) = if cfg!(miri) { (3, 50) } else { (8, 20_000) };
    guard(move || {
        let (tx, mut rx) = channel::<(u64, u64)>();
        let senders: Vec<_> = (0..threads)
            .map(|t| {
                let tx = tx.clone();
                std::thread::spawn(move || {
                    for seq in 0..per_thread {
                        tx.send((t, seq)).unwrap();
                        if seq % 1024 == 0 {
                            std::thread::yield_now();
                        }
                    }
                })
            })
            .collect();
        drop(tx);
        let next = block_on(async move {
            let mut next = vec![0u64; threads as usize];
            while let Some((t, seq)) = rx.recv().await {
                // Per sender, values come in the order sent, none lost or doubled.
                assert_eq!(seq, next[t as usize], "sender {t}");
                next[t as usize] += 1;
            }
            next
        });
        for s in senders {
            s.join().unwrap();
        }
        assert_eq!(next, vec![per_thread; threads as usize]);
    });
}

#[test]
fn receiver_task_is_woken_by_each_burst() {
    // The receiver parks between bursts, so every burst needs a cross-thread wake.
    let bursts = if cfg!(miri) { 5 } else { 500 };
    guard(move || {
        let (tx, mut rx) = channel::<usize>();
        let (ack_tx, ack_rx) = std::sync::mpsc::channel::<usize>();
        let producer = std::thread::spawn(move || {
            for b in 0..bursts {
                for i in 0..3 {
                    tx.send(b * 3 + i).unwrap();
                }
                // Wait for the consumer to drain the burst before the next one.
                assert_eq!(ack_rx.recv().unwrap(), b);
            }
        });
        let received = Arc::new(AtomicUsize::new(0));
        let received2 = received.clone();
        block_on(async move {
            let consumer = spawn(async move {
                let mut expected = 0;
                while let Some(v) = rx.recv().await {
                    assert_eq!(v, expected);
                    expected += 1;
                    received2.fetch_add(1, Ordering::SeqCst);
                    if expected % 3 == 0 {
                        ack_tx.send(expected / 3 - 1).unwrap();
                    }
                }
            });
            consumer.await.unwrap();
        });
        producer.join().unwrap();
        assert_eq!(received.load(Ordering::SeqCst), bursts * 3);
    });
}

#[test]
fn debug_impls_do_not_need_debug_values() {
    struct Opaque;
    let (tx, rx) = channel::<Opaque>();
    assert_eq!(format!("{tx:?}"), "Sender { .. }");
    assert_eq!(format!("{rx:?}"), "Receiver { .. }");
    assert_eq!(format!("{:?}", SendError(Opaque)), "SendError(..)");
}
