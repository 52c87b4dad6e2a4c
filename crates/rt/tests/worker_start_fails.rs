//! A worker that cannot make its reactor (no descriptor left for its epoll instance or ring):
//! `Runtime::run` panics with the reason, and no worker runs its future, which might wait for
//! the missing worker forever. A test binary of its own: it lowers the process's
//! `RLIMIT_NOFILE`.

mod common;

use std::panic::{catch_unwind, AssertUnwindSafe};

use common::guard;
use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
use volt_rt::Runtime;

/// Regression: the other worker ran its future, which here waits for a stop nobody sends, and
/// `run` waited for it forever instead of reporting the failure.
#[test]
#[cfg_attr(miri, ignore)] // rlimits
fn a_worker_without_a_reactor_fails_the_run_instead_of_hanging_it() {
    guard(|| {
        let rt = Runtime::builder().workers(2).build().unwrap();
        let handle = rt.handle();
        // Room for one more descriptor: the lowest free one is the last under the limit.
        let limit = getrlimit(Resource::Nofile);
        let next_fd = rustix::io::dup(std::io::stderr()).unwrap();
        let room_for_one = Rlimit {
            current: Some(std::os::fd::AsRawFd::as_raw_fd(&next_fd) as u64 + 1),
            maximum: limit.maximum,
        };
        drop(next_fd);
        setrlimit(Resource::Nofile, room_for_one).unwrap();
        let ran = catch_unwind(AssertUnwindSafe(|| rt.run(|_| handle.stopped())));
        setrlimit(Resource::Nofile, limit).unwrap();
        let panic = ran.expect_err("both workers made a reactor with room for one descriptor");
        let msg = panic.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(msg.contains("reactor"), "{msg:?}");
        // With descriptors again, the same runtime runs.
        assert_eq!(rt.run(|i| async move { i }), [0, 1]);
    });
}
