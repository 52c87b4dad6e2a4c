use super::*;

/// The size of the futures `f` returns.
fn future_size<A, B, C, F>(f: fn(A, B, C) -> F) -> usize {
    let _ = f;
    std::mem::size_of::<F>()
}

/// Every idle connection holds its `serve` future (what waits is boxed apart): it must
/// stay small, and at most 256 bytes with the task's own state besides, where moving it
/// (`memcpy`) still takes the short path.
#[test]
fn idle_connection_future_is_small() {
    let size = future_size(serve::<crate::Router>);
    assert!(size <= 200, "the connection future is {size} bytes");
}
