//! Helpers shared by the integration tests. Each test binary uses part of them.
#![allow(dead_code)] // each test binary compiles this module and uses only some of it

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::task::{Wake, Waker};
use std::time::Duration;

/// How long a test may run before it is declared hung. Never a performance bound: a correct run
/// takes a small fraction of it even on a loaded machine.
pub const HANG_GUARD: Duration = Duration::from_secs(120);

/// Runs `f` on its own thread and fails the test if it has not returned after [`HANG_GUARD`]
/// (a lost wakeup shows up as a failure instead of a CI job that never ends). A panic in `f` is
/// resumed here, so `should_panic` and assertion messages work as usual.
///
/// Under Miri `f` runs directly: its clock is virtual, and a hang there ends the run anyway.
pub fn guard<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    if cfg!(miri) {
        return f();
    }
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let thread = std::thread::Builder::new()
        .name("test-body".into())
        .spawn(move || {
            let out = f();
            drop(done_tx);
            out
        })
        .expect("spawning the test thread");
    match done_rx.recv_timeout(HANG_GUARD) {
        Err(RecvTimeoutError::Disconnected) => match thread.join() {
            Ok(out) => out,
            Err(panic) => std::panic::resume_unwind(panic),
        },
        Ok(()) | Err(RecvTimeoutError::Timeout) => {
            panic!("test hung: no result after {HANG_GUARD:?}")
        }
    }
}

/// Sets a flag when dropped: tells whether a future's destructor ran.
pub struct DropFlag(pub Arc<AtomicBool>);

impl DropFlag {
    pub fn new() -> (DropFlag, Arc<AtomicBool>) {
        let flag = Arc::new(AtomicBool::new(false));
        (DropFlag(flag.clone()), flag)
    }
}

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// A waker that counts its wakes; `Arc::strong_count` on it tells how many clones are alive.
#[derive(Default)]
pub struct CountingWaker {
    pub wakes: AtomicUsize,
}

impl CountingWaker {
    pub fn new() -> (Arc<CountingWaker>, Waker) {
        let counter = Arc::new(CountingWaker::default());
        let waker = Waker::from(counter.clone());
        (counter, waker)
    }
}

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.wakes.fetch_add(1, Ordering::SeqCst);
    }
}

/// A small deterministic PRNG (xorshift64*), so tests need no `rand` and replay exactly.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `0..n` (close enough for tests).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// Polls `cond` (sleeping the calling OS thread between tries) until it holds; fails after
/// [`HANG_GUARD`]. For test threads that wait on a runtime running elsewhere.
pub fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !cond() {
        assert!(start.elapsed() < HANG_GUARD, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Makes sure this process may open `needed` descriptors, raising the soft limit toward the
/// hard one. `Err` says why not (the caller skips with that message).
pub fn ensure_fd_limit(needed: u64) -> Result<(), String> {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let limit = getrlimit(Resource::Nofile);
    let current = limit.current.unwrap_or(u64::MAX);
    if current >= needed {
        return Ok(());
    }
    let max = limit.maximum.unwrap_or(u64::MAX);
    if max < needed {
        return Err(format!(
            "RLIMIT_NOFILE hard limit is {max}, the test needs {needed} descriptors"
        ));
    }
    let raised = rustix::process::Rlimit {
        current: Some(needed),
        maximum: limit.maximum,
    };
    setrlimit(Resource::Nofile, raised)
        .map_err(|e| format!("raising RLIMIT_NOFILE to {needed} failed: {e}"))
}

/// One `SO_REUSEPORT` listener per worker, all on one port: worker 0 binds port 0 and hands the
/// port it got to the other workers. Each bound address is also reported to the test thread.
pub struct SharedPort {
    to_others: std::sync::Mutex<Option<Vec<volt_rt::Sender<u16>>>>,
    from_first: std::sync::Mutex<Vec<Option<volt_rt::Receiver<u16>>>>,
    bound: std::sync::Mutex<mpsc::Sender<std::net::SocketAddr>>,
}

impl SharedPort {
    /// For a runtime of `workers` workers; the receiver gets one address per bound listener.
    pub fn new(workers: usize) -> (SharedPort, mpsc::Receiver<std::net::SocketAddr>) {
        let (txs, rxs): (Vec<_>, Vec<_>) = (1..workers).map(|_| volt_rt::channel()).unzip();
        let mut from_first = vec![None];
        from_first.extend(rxs.into_iter().map(Some));
        let (bound_tx, bound_rx) = mpsc::channel();
        let shared = SharedPort {
            to_others: std::sync::Mutex::new(Some(txs)),
            from_first: std::sync::Mutex::new(from_first),
            bound: std::sync::Mutex::new(bound_tx),
        };
        (shared, bound_rx)
    }

    /// Binds this worker's listener (call it once on each worker).
    pub async fn bind(&self, worker: usize) -> volt_rt::net::TcpListener {
        let options = volt_rt::net::ListenOptions::new()
            .reuse_port(true)
            .backlog(4096);
        let listener = if worker == 0 {
            let listener = options.bind("127.0.0.1:0").unwrap();
            let port = listener.local_addr().unwrap().port();
            for tx in self.to_others.lock().unwrap().take().unwrap() {
                tx.send(port).unwrap();
            }
            listener
        } else {
            let rx = self.from_first.lock().unwrap()[worker].take();
            let port = rx.unwrap().recv().await.unwrap();
            options.bind(("127.0.0.1", port)).unwrap()
        };
        let addr = listener.local_addr().unwrap();
        self.bound.lock().unwrap().send(addr).unwrap();
        listener
    }

    /// Waits (on a plain thread) until `workers` listeners are bound; returns their address.
    pub fn wait_bound(
        bound: &mpsc::Receiver<std::net::SocketAddr>,
        workers: usize,
    ) -> std::net::SocketAddr {
        let addrs: Vec<_> = (0..workers)
            .map(|_| {
                bound
                    .recv_timeout(HANG_GUARD)
                    .expect("a worker never bound its listener")
            })
            .collect();
        assert!(
            addrs.iter().all(|a| *a == addrs[0]),
            "listeners on different ports: {addrs:?}"
        );
        addrs[0]
    }
}

/// The bytes connection `id` sends: 1 B to 64 KiB, a pattern no other connection shares.
pub fn connection_payload(id: u64) -> Vec<u8> {
    let mut rng = Rng::new(id.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let len = 1 + rng.below(64 * 1024) as usize;
    let mut bytes: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
    // The id up front, so a mix-up between connections names the culprit.
    for (b, id_byte) in bytes.iter_mut().zip(id.to_le_bytes()) {
        *b = id_byte;
    }
    bytes
}
