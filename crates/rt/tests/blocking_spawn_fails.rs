//! The blocking pool when it cannot start a thread and has none: the job is not left queued
//! for a thread that will never come. A test binary of its own: it needs a pool with no thread
//! yet, and lowers the process's `RLIMIT_NPROC` to 0 while this thread runs as another user
//! without the capabilities that exempt it (the real root user is exempt from the limit, so
//! only this thread, and only for the test, gives up being root).

mod common;

use std::time::Duration;

use common::guard;
use rustix::process::Uid;
use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
use rustix::thread::{capabilities, set_capabilities, set_thread_res_uid, CapabilitySet};
use rustix::thread::{set_capabilities_secure_bits, CapabilitiesSecureBits};
use volt_rt::time::timeout;
use volt_rt::{block_on, spawn_blocking};

#[test]
#[cfg_attr(miri, ignore)] // rlimits and capabilities
fn a_job_the_pool_has_no_thread_for_is_cancelled_not_stranded() {
    guard(|| {
        // Thread creation fails (EAGAIN) for this thread: real user `nobody`, over a limit of 0
        // processes, without CAP_SYS_ADMIN and CAP_SYS_RESOURCE (kept in the permitted set, and
        // kept across the uid change, so that all of it can be undone).
        let limit = getrlimit(Resource::Nproc);
        let caps = capabilities(None).unwrap();
        let mut limited = caps;
        limited.effective -= CapabilitySet::SYS_ADMIN | CapabilitySet::SYS_RESOURCE;
        let restricted = set_capabilities_secure_bits(CapabilitiesSecureBits::NO_SETUID_FIXUP)
            .and_then(|()| set_thread_res_uid(Uid::from_raw(65534), None, None))
            .and_then(|()| set_capabilities(None, limited));
        let zero = Rlimit {
            current: Some(0),
            maximum: limit.maximum,
        };
        setrlimit(Resource::Nproc, zero).unwrap();
        let spawns = std::thread::Builder::new().spawn(|| ()).is_ok();

        let stranded = block_on(timeout(Duration::from_secs(30), spawn_blocking(|| 7)));

        setrlimit(Resource::Nproc, limit).unwrap();
        if restricted.is_ok() {
            set_capabilities(None, caps).unwrap();
            set_thread_res_uid(Uid::ROOT, None, None).unwrap();
        }
        if spawns {
            eprintln!("skipping: threads still start here ({restricted:?})");
            return;
        }
        let out = stranded.expect("the job waited for a thread that never started");
        assert!(out.unwrap_err().is_cancelled());
        // With threads allowed again, the pool starts one as usual.
        assert_eq!(block_on(spawn_blocking(|| 7)).unwrap(), 7);
    });
}
