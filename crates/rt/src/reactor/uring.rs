//! The io_uring driver: completions instead of readiness, and buffers the reactor owns.
//!
//! The public socket API borrows the caller's buffers (`read(&mut [u8])`), and a borrowed buffer
//! must never reach the kernel: an aborted task frees it while the kernel may still write. So:
//!
//! - **Receive**: one multishot receive per stream, into a ring of provided buffers owned by this
//!   reactor. Completions queue the buffer on the stream's slot (a list linked through the
//!   buffer ring, so a stream allocates nothing for it); a read copies out of the buffer (the
//!   copy a `read` syscall would make) and gives it back to the ring when emptied.
//!   A receive that ends (out of buffers, error) is re-armed when a reader next waits.
//! - **Send**: a write copies into the slot's `unsent` buffer and returns. Once per loop turn,
//!   every stream with unsent bytes and no send in flight gets one send SQE (its whole batch),
//!   submitted with the wait. The bytes move to `sending`, untouched until the completion.
//!   Writes wait (backpressure) once [`SEND_LIMIT`] bytes are queued; a send error is reported by
//!   the next write or flush.
//! - **Accept** (TCP listeners): one accept SQE in flight, which waits for a connection first
//!   unless the last one found more waiting (`accept`).
//! - **Readiness** (UDP sockets, Unix listeners, a connecting stream's first writability): a poll SQE,
//!   with the same edge semantics as epoll.
//! - **Drop**: the slot (and the memory the kernel sees) stays until the last completion of every
//!   operation on it arrived: receives and polls are cancelled, queued bytes are still sent (as
//!   `close` would), then the reactor closes the descriptor. Dropping the reactor (its worker
//!   ends) lets queued sends go on for up to [`LINGER`], then cancels everything and waits for
//!   the completions before freeing any buffer.
//! - **Waiting**: `io_uring_enter` with a timespec for the next timer (sub-millisecond), the
//!   worker's eventfd watched by a multishot poll; one enter both submits a turn's sends and
//!   sleeps ([`Reactor::poll`]).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io::{self, IoSlice};
use std::mem::{offset_of, ManuallyDrop};
use std::net::{Shutdown, SocketAddr};
use std::num::NonZeroU16;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, IntoRawFd, OwnedFd, RawFd};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use io_uring::{cqueue, opcode, squeue, types, IoUring};
use rustix::event::epoll::EventFlags;
use rustix::event::PollFlags;
use rustix::io::Errno;
use rustix::net::SendFlags;
use slab::Slab;

use super::{queue_waker, shutdown, Direction, Kind, Notifier, Readiness, READABLE, WRITABLE};
use accept::{PeerAddr, ACCEPT_POLL_FIRST};
use buf_ring::{BufRing, Received};

mod accept;
mod buf_ring;
mod teardown;

/// Size of each provided receive buffer.
const BUF_SIZE: usize = 4096;
/// Provided buffers per worker (4 MiB): 256 pipelining connections hold about one each.
const BUF_ENTRIES: u16 = 1024;
const BUF_GROUP: u16 = 0;
/// A starved receive (`ENOBUFS`) is re-armed once this many buffers are back in the ring.
const REARM_FREE: usize = 64;
/// Received buffers a stream may hold before its receive is cancelled (re-armed when its reader
/// has emptied them): a reader that stops reading leaves the rest in the kernel's socket buffer,
/// under TCP flow control, instead of draining the shared ring.
const MAX_HELD: u16 = 16;
/// A send of at most this many bytes, on a stream whose sends have never found the socket full,
/// that no task waits for, is expected to complete in the enter that submits it
/// ([`Reactor::poll`]). A larger one would more often find too little room, and send in two
/// parts instead of one.
const EXPECT_SEND_MAX: u32 = 16 * 1024;
/// How long an enter waits at most for sends expected to complete in it: a safety net, as such a
/// send is made with `MSG_DONTWAIT` and completes in its enter, full socket or not. Longer than
/// a scheduler tick (4 ms at `HZ=250`, 10 ms at 100), so the kernel need not reprogram its
/// timer for the wait: a 1 ms limit cost ~1.5-2.5 µs of CPU per sleeping enter on a KVM guest
/// (BENCHMARKS.md, run V).
const EXPECT_WAIT: Duration = Duration::from_millis(50);
/// The scratch buffer a starved stream reads through (`read` syscalls, as on epoll).
const SCRATCH_SIZE: usize = 16 * 1024;
/// Bytes a stream may have queued for sending before writes wait.
const SEND_LIMIT: usize = 256 * 1024;
/// How long a worker that ends goes on sending the bytes its streams still have queued.
const LINGER: Duration = Duration::from_secs(2);
const SQ_ENTRIES: u32 = 1024;
const CQ_ENTRIES: u32 = 8192;

// `user_data` = token << 3 | operation.
const OP_POLL: u64 = 0;
const OP_RECV: u64 = 1;
const OP_SEND: u64 = 2;
const OP_ACCEPT: u64 = 3;
/// Cancellations and closes (from here on): their completions are not counted or handled.
const OP_CANCEL: u64 = 4;
const OP_CLOSE: u64 = 5;
const NOTIFIER_TOKEN: u64 = u64::MAX >> 3;

fn user_data(token: usize, op: u64) -> u64 {
    (token as u64) << 3 | op
}

/// Whether this process can run the driver: Linux ≥ 6.0 (multishot receive) and a ring set up.
pub(super) fn probe() -> io::Result<()> {
    if kernel_version() < (6, 0) {
        let uname = rustix::system::uname();
        let release = uname.release().to_string_lossy();
        let msg = format!("kernel {release} lacks multishot receive (needs 6.0)");
        return Err(io::Error::other(msg));
    }
    IoUring::new(8).map(drop)
}

/// The running kernel's (major, minor) version, from `uname` (`6.18.44-fc-v782`: (6, 18));
/// 0 for what does not parse.
fn kernel_version() -> (u32, u32) {
    let uname = rustix::system::uname();
    let release = uname.release().to_string_lossy();
    let mut parts = release.split(['.', '-']).map(|p| p.parse().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

/// A registered descriptor.
///
/// Laid out by hand in two cache lines (`repr(C)`, 64-byte aligned, 128 bytes: asserted below).
/// In a closed loop a connection's slot is evicted by the other connections' requests before
/// its next one, so every line a request touches is a miss: the first line holds what a write
/// and its send use, the second the wakers (a send's completion wakes the writer from there
/// too) and the receive side; what only listeners and starved streams use is boxed in `rare`.
/// Measured against the 200-byte slot it replaced (callgrind's cache simulation, keep-alive, 64
/// connections): L1 data misses 17.3 -> 15.7 reads and 4.8 -> 4.5 writes a request.
#[derive(Default)]
#[repr(C, align(64))]
struct Slot {
    /// Bytes written and not yet handed to the kernel.
    // Tried: a last-in first-out list of spare send buffers in `State`, a stream holding one
    // only while it has bytes queued, so a write gets the buffer a send finished with last
    // instead of this one, evicted since. Keep-alive c64 (callgrind): L1 write misses 4.5 ->
    // 3.5 a request (the copy's lines a turn old, not a connection's round), but Ir 2,812 ->
    // 2,869; not kept. Nor writing into the buffer the last send went from when nothing is
    // queued (one warm buffer instead of two taking turns): L1 misses 14.0 -> 13.5 a request,
    // Ir 2,730 -> 2,747.
    unsent: Vec<u8>,
    /// Bytes the kernel is sending from offset `sent`: untouched while a send is armed.
    sending: Vec<u8>,
    sent: u32, // `sending` holds at most `SEND_LIMIT` bytes
    /// The errno of a failed send (errnos fit a `u16`).
    send_error: Option<NonZeroU16>,
    /// A send found the socket buffer full (it sent part of its bytes, or none): this stream's
    /// sends are no longer counted on to complete at once ([`Reactor::poll`]), and wait for
    /// room in the kernel instead. A stream that meets backpressure once is likely to again.
    send_blocked: bool,
    /// Set when the owner drops the socket; the reactor closes it once nothing is in flight.
    owned: Option<OwnedFd>,
    /// The operations submitted (or queued) whose last completion has not arrived, one bit per
    /// `OP_*`: each is in flight at most once, and the slot is freed when none is. A send's bit
    /// is set when the stream is listed in `State::to_send`, before its entry is made.
    armed: u8,
    /// `shutdown(Write)` asked for: later writes fail; if bytes were queued, the write side is
    /// shut down once they are sent.
    shutdown_write: bool,
    kind: Kind,
    /// A cancellation of the receive is on its way.
    recv_cancelling: bool,
    // Second line.
    /// Readiness (of [`Kind::Readiness`] slots, a stream's first writability, a starved read)
    /// and the waiting tasks: the reader also waits for receives and accepts, the writer for
    /// sends.
    io: Readiness,
    rare: Option<Box<Rare>>,
    received: Received,
    /// How the stream ended: 0 for end of stream, else an errno. Reads see it after `received`.
    recv_end: Option<u16>,
    /// The last receive ended with `ENOBUFS`: until [`State::rearm_starved`] re-arms it, reads
    /// are `read` syscalls and readiness a poll, as on epoll.
    starved: bool,
    /// A connected stream whose receive was never armed: its first read is a `read` syscall,
    /// and only a read that finds nothing arms the receive (see [`Reactor::register`]).
    read_direct: bool,
    fd: RawFd,
}

/// What few slots use, kept out of [`Slot`]'s two lines; made when first needed and freed with
/// the slot.
#[derive(Default)]
struct Rare {
    /// Bytes a starved read took and its caller had no room for; read before `received`.
    spill: Vec<u8>,
    /// [`Kind::Acceptor`]: the accept in flight writes the peer's address into `peer` (a box of
    /// its own, which stays put while the slab grows, and which no `&mut Rare` covers while the
    /// kernel writes it); what it accepted.
    peer: Option<Box<PeerAddr>>,
    accepted: VecDeque<io::Result<(OwnedFd, SocketAddr)>>,
    /// [`Kind::Acceptor`]: the last accept found more connections waiting
    /// (`IORING_CQE_F_SOCK_NONEMPTY`), so the next one takes one at once. Otherwise it waits
    /// for one first ([`ACCEPT_POLL_FIRST`]): an accept that finds none has already made, and
    /// must free, the new socket's inode and file, and then waits all the same. Under `ab -c32`
    /// 0.11 such attempts per connection (BENCHMARKS.md, run W).
    backlog: bool,
    /// The accept in flight waits first.
    poll_first: bool,
    /// The accept in flight is made again without [`ACCEPT_POLL_FIRST`], after `EINVAL`: if
    /// it fails with `EINVAL` too, the flag was not the cause (a socket not listening).
    poll_first_refused: bool,
}

// A stream's slot is two cache lines, split where [`Slot`] says.
const _: () = assert!(size_of::<Slot>() == 128 && align_of::<Slot>() == 64);
const _: () = assert!(offset_of!(Slot, send_blocked) < 64 && offset_of!(Slot, io) == 64);

impl Slot {
    fn armed(&self, op: u64) -> bool {
        self.armed & 1 << op != 0
    }

    fn has_data(&self) -> bool {
        self.received.len > 0
            || self.recv_end.is_some()
            || self.rare.as_ref().is_some_and(|r| !r.spill.is_empty())
    }

    fn queued(&self) -> usize {
        self.unsent.len() + self.sending.len() - self.sent as usize
    }

    /// A stream's writes can proceed: connected, and under [`SEND_LIMIT`] (or failed).
    fn writable(&self) -> bool {
        self.io.ready & WRITABLE != 0 && (self.send_error.is_some() || self.queued() < SEND_LIMIT)
    }
}

struct State {
    // Field order matters: the ring is closed before the buffers it may point at are freed.
    ring: IoUring,
    bufs: BufRing,
    sources: Slab<Slot>,
    /// Counted operations whose last completion has not arrived.
    in_flight: usize,
    /// Streams with unsent bytes and no send in flight, sent at the end of the loop turn.
    to_send: Vec<usize>,
    starved: Vec<usize>,
    scratch: Vec<u8>,
    notifier_fd: RawFd,
    notified: bool,
    to_wake: Vec<Waker>,
    /// The `ioprio` of an accept that waits for a connection first: [`ACCEPT_POLL_FIRST`], or 0
    /// once an accept failed with `EINVAL` with it and not without it (a kernel before 6.10).
    accept_ioprio: u16,
}

pub(crate) struct Reactor {
    /// Dropped by hand in `Drop`, or leaked if the kernel might still use its memory.
    state: ManuallyDrop<RefCell<State>>,
}

impl Reactor {
    pub(crate) fn new(notifier: &Notifier) -> io::Result<Reactor> {
        // SINGLE_ISSUER + DEFER_TASKRUN: completions are processed by this thread when it waits,
        // not by interrupting it (Linux 6.1). Older kernels get a plain ring.
        let ring = IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .setup_taskrun_flag()
            .setup_cqsize(CQ_ENTRIES)
            .build(SQ_ENTRIES)
            .or_else(|_| {
                IoUring::builder()
                    .setup_cqsize(CQ_ENTRIES)
                    .build(SQ_ENTRIES)
            })?;
        let bufs = BufRing::new();
        let addr = bufs.ring.as_ptr() as u64;
        // SAFETY: the ring memory is page-aligned, `BUF_ENTRIES` entries long, and outlives the
        // registration (freed after the ring is closed).
        unsafe {
            ring.submitter()
                .register_buf_ring_with_flags(addr, BUF_ENTRIES, BUF_GROUP, 0)?
        };
        let mut state = State {
            ring,
            bufs,
            sources: Slab::with_capacity(1024),
            in_flight: 0,
            to_send: Vec::with_capacity(256),
            starved: Vec::new(),
            scratch: vec![0; SCRATCH_SIZE],
            notifier_fd: notifier.as_fd().as_raw_fd(),
            notified: false,
            to_wake: Vec::with_capacity(64),
            accept_ioprio: ACCEPT_POLL_FIRST,
        };
        state.arm_notifier();
        Ok(Reactor {
            state: ManuallyDrop::new(RefCell::new(state)),
        })
    }

    pub(crate) fn register(&self, fd: BorrowedFd<'_>, ready: u8, kind: Kind) -> io::Result<usize> {
        let mut st = self.state.borrow_mut();
        // An accepted connection nearly always has its request waiting (the listener defers
        // the accept until it comes), so its first read is a plain `read`, as on epoll: a
        // connection that takes one request and closes arms no receive at all, and cancels
        // none, which cost more than the syscall (a new connection per request, `ab -c32`:
        // 0.89x the CPU per connection, BENCHMARKS.md run V). A stream still connecting has
        // nothing to read yet, and arms its receive on its first read.
        let read_direct = kind == Kind::Stream && ready & WRITABLE != 0;
        let token = st.sources.insert(Slot {
            fd: fd.as_raw_fd(),
            kind,
            io: Readiness::new(ready),
            read_direct,
            ..Slot::default()
        });
        match kind {
            // Like an edge-triggered epoll registration: one multishot poll for both directions.
            Kind::Readiness => st.arm_poll(token, PollFlags::IN | PollFlags::OUT, true),
            // A connecting stream: one poll for the end of the handshake.
            Kind::Stream if ready & WRITABLE == 0 => st.arm_poll(token, PollFlags::OUT, false),
            Kind::Stream | Kind::Acceptor => {}
        }
        Ok(token)
    }

    pub(crate) fn deregister(&self, token: usize, fd: OwnedFd) {
        let st = &mut *self.state.borrow_mut();
        let slot = &mut st.sources[token];
        let listener = slot.kind != Kind::Stream;
        if let Some(rare) = &mut slot.rare {
            rare.accepted.clear();
        }
        slot.owned = Some(fd);
        let io = std::mem::take(&mut slot.io);
        while let Some(n) = st.bufs.front(&slot.received).map(<[u8]>::len) {
            st.bufs.consume(&mut slot.received, n); // unread, given back
        }
        for op in [OP_POLL, OP_RECV, OP_ACCEPT] {
            if st.sources[token].armed(op) {
                st.cancel(token, op);
            }
        }
        st.maybe_close(token);
        // A listener's poll or accept holds its socket open until cancelled, but a dropped
        // listener must refuse connections now: the cancellation is waited for here, and the
        // close queued with its completion submitted. (`shutdown`, which did it before, also
        // shut the socket for every other listener on it, a clone's.)
        while listener && st.sources.contains(token) {
            let _ = submit_and_wait_for(&st.ring, 1, Duration::from_millis(10));
            st.complete();
        }
        if listener {
            let _ = st.ring.submit();
        }
        drop(io); // wakers dropped last
    }

    #[inline] // into `Source::poll_ready_on`: twice per request of a keep-alive server
    pub(crate) fn poll_ready(&self, token: usize, dir: Direction, cx: &Context<'_>) -> Poll<()> {
        let st = &mut *self.state.borrow_mut();
        let slot = &mut st.sources[token];
        let ready = match (slot.kind, dir) {
            (Kind::Readiness, _) => slot.io.is_ready(dir),
            (Kind::Acceptor, _) => slot.rare.as_ref().is_some_and(|r| !r.accepted.is_empty()),
            (Kind::Stream, Direction::Read) => {
                slot.has_data()
                    || slot.read_direct
                    || (slot.starved && slot.io.ready & READABLE != 0)
            }
            (Kind::Stream, Direction::Write) => slot.writable(),
        };
        if ready {
            return Poll::Ready(());
        }
        slot.io.wait(dir, cx);
        // Nearly always armed (and never while starved): no call on the common path.
        if slot.kind == Kind::Stream && dir == Direction::Read && !slot.armed(OP_RECV) {
            st.arm_read(token);
        }
        Poll::Pending
    }

    pub(crate) fn clear_ready(&self, token: usize, dir: Direction) {
        let mut st = self.state.borrow_mut();
        let slot = &mut st.sources[token];
        if slot.kind == Kind::Readiness {
            slot.io.clear(dir);
        }
    }

    /// Copies received bytes into `sink` (which takes what fits and returns how much) until it
    /// is full or nothing is left. `Ok(0)` at end of stream; `Pending` (waker kept if `cx`) when
    /// nothing has arrived.
    pub(crate) fn poll_recv(
        &self,
        token: usize,
        cx: Option<&Context<'_>>,
        sink: &mut impl FnMut(&[u8]) -> usize,
    ) -> Poll<io::Result<usize>> {
        let st = &mut *self.state.borrow_mut();
        let slot = &mut st.sources[token];
        let mut total = 0;
        let spill = slot.rare.as_mut().map(|r| &mut r.spill);
        if let Some(spill) = spill.filter(|s| !s.is_empty()) {
            total = sink(spill);
            spill.drain(..total);
            if !spill.is_empty() || slot.received.len == 0 {
                return Poll::Ready(Ok(total));
            }
        }
        if slot.received.len == 0 {
            match slot.recv_end {
                Some(0) => return Poll::Ready(Ok(0)),
                Some(errno) => return Poll::Ready(Err(io::Error::from_raw_os_error(errno.into()))),
                None if slot.starved || slot.read_direct => {
                    slot.read_direct = false;
                    if let Poll::Ready(result) = st.read_plain(token, sink) {
                        return Poll::Ready(result);
                    }
                }
                None => st.arm_read(token),
            }
            if let Some(cx) = cx {
                st.sources[token].io.wait(Direction::Read, cx);
            }
            return Poll::Pending;
        }
        while let Some(bytes) = st.bufs.front(&slot.received) {
            let (len, n) = (bytes.len(), sink(bytes));
            total += n;
            st.bufs.consume(&mut slot.received, n);
            if n < len {
                break; // the sink is full
            }
        }
        Poll::Ready(Ok(total))
    }

    /// Queues as much of `bufs` as fits under [`SEND_LIMIT`] for sending at the end of this loop
    /// turn. `Pending` (waker kept if `cx`) when the stream is at its limit.
    pub(crate) fn poll_send(
        &self,
        token: usize,
        cx: Option<&Context<'_>>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let st = &mut *self.state.borrow_mut();
        let slot = &mut st.sources[token];
        if !slot.writable() {
            if let Some(cx) = cx {
                slot.io.wait(Direction::Write, cx);
            }
            return Poll::Pending;
        }
        if let Some(errno) = slot.send_error.map(NonZeroU16::get) {
            return Poll::Ready(Err(io::Error::from_raw_os_error(errno.into())));
        }
        if slot.shutdown_write {
            return Poll::Ready(Err(io::ErrorKind::BrokenPipe.into()));
        }
        let (room, before) = (SEND_LIMIT - slot.queued(), slot.unsent.len());
        for buf in bufs {
            let take = buf.len().min(room - (slot.unsent.len() - before));
            slot.unsent.extend_from_slice(&buf[..take]);
        }
        let n = slot.unsent.len() - before;
        if n > 0 && !slot.armed(OP_SEND) {
            slot.armed |= 1 << OP_SEND;
            st.to_send.push(token);
        }
        Poll::Ready(Ok(n))
    }

    /// Ready once every queued byte has been sent (or a send failed).
    pub(crate) fn poll_flush(&self, token: usize, cx: &Context<'_>) -> Poll<io::Result<()>> {
        let mut st = self.state.borrow_mut();
        let slot = &mut st.sources[token];
        if let Some(errno) = slot.send_error.map(NonZeroU16::get) {
            return Poll::Ready(Err(io::Error::from_raw_os_error(errno.into())));
        }
        if slot.queued() == 0 {
            return Poll::Ready(Ok(()));
        }
        slot.io.wait(Direction::Write, cx);
        Poll::Pending
    }

    /// Shuts down a stream. The write side waits for the bytes already queued.
    pub(crate) fn shutdown(&self, token: usize, how: Shutdown) -> io::Result<()> {
        let mut st = self.state.borrow_mut();
        let slot = &mut st.sources[token];
        // SAFETY: the slot's descriptor stays open while the owner, who is calling, holds it.
        let fd = unsafe { BorrowedFd::borrow_raw(slot.fd) };
        // Later writes fail at once, as on epoll; bytes already queued go out first.
        slot.shutdown_write |= how != Shutdown::Read;
        let how = match (how, slot.queued() > 0) {
            (Shutdown::Write, true) => return Ok(()),
            (Shutdown::Both, true) => Shutdown::Read,
            (how, _) => how,
        };
        shutdown(fd, how)
    }

    /// Submits what is queued and waits for completions until `deadline` (`None`: no limit).
    ///
    /// Completions that wake nobody do not end the wait: a send submitted with the wait nearly
    /// always completes at once, and without this every request would cost a second turn of
    /// the executor, only to handle its send's completion. Nor do they end the enter: it waits
    /// for one completion more than the sends expected to complete at once, so a turn that
    /// sent is one `io_uring_enter`, not two (one returning at once with the sends'
    /// completions, one to sleep). A counted send is made with `MSG_DONTWAIT`, so it completes
    /// in that enter even if the socket is full (with `EAGAIN` or part of its bytes; the rest
    /// goes again uncounted, waiting for room). Large sends and those of a stream that has met
    /// a full socket before are not counted, as they would often go twice. A send some task
    /// waits for is not counted either: its completion is one that wakes. Should a counted
    /// send not complete after all, the wait ends after [`EXPECT_WAIT`].
    pub(crate) fn poll(&self, deadline: Option<Instant>) -> bool {
        let mut st = self.state.borrow_mut();
        let mut waited = true;
        while waited && !st.notified && st.to_wake.is_empty() {
            let sends = st.start_sends();
            st.rearm_starved();
            let wait = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            let result = match wait {
                Some(wait) if wait.is_zero() && st.idle() => Ok(0),
                Some(wait) if wait.is_zero() => st.ring.submit(),
                _ if sends > 0 => {
                    let cut = wait.map_or(EXPECT_WAIT, |wait| wait.min(EXPECT_WAIT));
                    // Never more than the completion queue holds at once.
                    let want = (1 + sends).min(CQ_ENTRIES as usize / 2);
                    submit_and_wait_for(&st.ring, want, cut)
                }
                None => st.ring.submit_and_wait(1),
                Some(wait) => submit_and_wait_for(&st.ring, 1, wait),
            };
            waited = result.is_ok() && wait.is_none_or(|wait| !wait.is_zero());
            entered(result).unwrap_or_else(|e| panic!("io_uring_enter failed: {e}"));
            st.complete();
        }
        let notified = std::mem::take(&mut st.notified);
        let wakers = std::mem::take(&mut st.to_wake);
        drop(st);
        self.state.borrow_mut().to_wake = super::wake_all(wakers);
        notified
    }
}

// The errnos the driver handles, as `i32` (rustix's are an opaque type).
const ETIME: i32 = Errno::TIME.raw_os_error();
const EINTR: i32 = Errno::INTR.raw_os_error();
const EBUSY: i32 = Errno::BUSY.raw_os_error();
const ENOBUFS: i32 = Errno::NOBUFS.raw_os_error();
const EAGAIN: i32 = Errno::AGAIN.raw_os_error();
const EINVAL: i32 = Errno::INVAL.raw_os_error();
const ECANCELED: i32 = Errno::CANCELED.raw_os_error();

/// An `io_uring_enter` result with the errors that only end the wait early taken as success:
/// the timeout (`ETIME`), a signal (`EINTR`), and a full completion queue (`EBUSY`, drained next).
fn entered(result: io::Result<usize>) -> io::Result<()> {
    match result {
        Err(e) if !matches!(e.raw_os_error(), Some(ETIME | EINTR | EBUSY)) => Err(e),
        _ => Ok(()),
    }
}

/// Submits what is queued and waits for `want` completions, or for `wait`.
fn submit_and_wait_for(ring: &IoUring, want: usize, wait: Duration) -> io::Result<usize> {
    let ts = types::Timespec::from(wait);
    let args = types::SubmitArgs::new().timespec(&ts);
    ring.submitter().submit_with_args(want, &args)
}

impl State {
    /// Queues `sqe` for the next submit (submitting now if the queue is full).
    ///
    /// # Safety
    /// Every buffer `sqe` points at stays valid and untouched until its last completion.
    unsafe fn push(&mut self, sqe: squeue::Entry, counted: bool) {
        // SAFETY: forwarded to the caller.
        while unsafe { self.ring.submission().push(&sqe) }.is_err() {
            let _ = self.ring.submit();
        }
        self.in_flight += counted as usize;
    }

    /// Submits `op` on `token`'s slot, marking it in flight there.
    ///
    /// # Safety
    /// As [`State::push`].
    #[inline] // one per send: the entry is built in place, not passed by value
    unsafe fn arm(&mut self, token: usize, op: u64, sqe: squeue::Entry) {
        self.sources[token].armed |= 1 << op;
        // SAFETY: forwarded to the caller.
        unsafe { self.push(sqe.user_data(user_data(token, op)), true) };
    }

    /// Nothing to submit or reap: deferred completions and an overflowed CQ both need an enter.
    fn idle(&mut self) -> bool {
        let sq = self.ring.submission();
        let idle = sq.is_empty() && !sq.taskrun() && !sq.cq_overflow();
        drop(sq);
        idle && self.ring.completion().is_empty()
    }

    fn arm_notifier(&mut self) {
        let fd = types::Fd(self.notifier_fd);
        let sqe = opcode::PollAdd::new(fd, PollFlags::IN.bits() as u32)
            .multi(true)
            .build()
            .user_data(user_data(NOTIFIER_TOKEN as usize, OP_POLL));
        // SAFETY: a poll points at no memory.
        unsafe { self.push(sqe, true) };
    }

    fn arm_poll(&mut self, token: usize, events: PollFlags, multi: bool) {
        let events = events | PollFlags::RDHUP;
        let sqe = opcode::PollAdd::new(types::Fd(self.sources[token].fd), events.bits() as u32)
            .multi(multi)
            .build();
        // SAFETY: a poll points at no memory.
        unsafe { self.arm(token, OP_POLL, sqe) };
    }

    /// A read without the receive, on a starved stream or as a stream's first: a `read` syscall
    /// through the scratch buffer; when there is nothing, a poll for readiness (starved) or the
    /// receive (first).
    fn read_plain(
        &mut self,
        token: usize,
        sink: &mut dyn FnMut(&[u8]) -> usize,
    ) -> Poll<io::Result<usize>> {
        let slot = &mut self.sources[token];
        // SAFETY: the slot's descriptor is open while its owner, who is reading, holds it.
        let fd = unsafe { BorrowedFd::borrow_raw(slot.fd) };
        match rustix::io::read(fd, &mut self.scratch[..]) {
            Ok(0) => {
                slot.recv_end = Some(0);
                Poll::Ready(Ok(0))
            }
            Ok(n) => {
                let taken = sink(&self.scratch[..n]);
                if taken < n {
                    let rare = slot.rare.get_or_insert_with(Box::default);
                    rare.spill.extend_from_slice(&self.scratch[taken..n]);
                }
                Poll::Ready(Ok(taken))
            }
            Err(Errno::AGAIN) | Err(Errno::INTR) => {
                slot.io.clear(Direction::Read);
                self.arm_read(token);
                Poll::Pending
            }
            Err(e) => {
                slot.recv_end = Some(e.raw_os_error() as u16);
                Poll::Ready(Err(e.into()))
            }
        }
    }

    /// Arms what tells a waiting reader that data came, unless it is armed: a poll on a starved
    /// stream, else the receive.
    #[inline] // into `poll_recv`, whose every wait finds the receive armed
    fn arm_read(&mut self, token: usize) {
        let slot = &self.sources[token];
        if slot.starved && !slot.armed(OP_POLL) {
            self.arm_poll(token, PollFlags::IN, false);
        } else if !slot.starved && !slot.armed(OP_RECV) {
            self.arm_recv(token);
        }
    }

    fn arm_recv(&mut self, token: usize) {
        let slot = &mut self.sources[token];
        slot.recv_cancelling = false;
        let sqe = opcode::RecvMulti::new(types::Fd(slot.fd), BUF_GROUP).build();
        // SAFETY: the receive writes only into provided buffers, which live as long as the ring.
        unsafe { self.arm(token, OP_RECV, sqe) };
    }

    fn cancel(&mut self, token: usize, op: u64) {
        let sqe = opcode::AsyncCancel::new(user_data(token, op))
            .build()
            .user_data(user_data(token, OP_CANCEL));
        // SAFETY: a cancellation points at no memory.
        unsafe { self.push(sqe, false) };
    }

    /// One send per stream with unsent bytes: its whole batch.
    /// Submits a send for every stream listed in `to_send`; returns how many are expected to
    /// complete in the enter that submits them ([`Reactor::poll`]).
    fn start_sends(&mut self) -> usize {
        let mut expected = 0;
        let mut to_send = std::mem::take(&mut self.to_send);
        for token in to_send.drain(..) {
            // Listed once (with its send bit set, `poll_send`), with bytes to send and no error.
            let slot = &mut self.sources[token];
            if slot.sent as usize == slot.sending.len() {
                slot.sending.clear();
                slot.sent = 0;
                std::mem::swap(&mut slot.sending, &mut slot.unsent);
            }
            let rest = &slot.sending[slot.sent as usize..];
            let len = rest.len().min(u32::MAX as usize) as u32;
            // A send a task waits for (a flush, or a write held back by `SEND_LIMIT`) must end
            // the wait when it completes: it wakes that task.
            let awaited = slot.io.writer.is_some();
            let counted = !slot.send_blocked && !awaited && len <= EXPECT_SEND_MAX;
            expected += usize::from(counted);
            let mut flags = SendFlags::NOSIGNAL;
            // Held: they go with the FIN.
            flags.set(SendFlags::MORE, slot.shutdown_write);
            // A counted send must complete in this enter, even on a full socket: there it fails
            // with `EAGAIN` at once (io_uring honours `MSG_DONTWAIT` on sends) instead of
            // waiting for room, and goes again uncounted, waiting for room.
            flags.set(SendFlags::DONTWAIT, counted);
            let sqe = opcode::Send::new(types::Fd(slot.fd), rest.as_ptr(), len)
                .flags(flags.bits() as i32)
                .build();
            // SAFETY: `sending` is neither touched nor dropped while the send is armed: writes
            // go to `unsent`, and the slot outlives its operations (`maybe_close`, `Drop`).
            unsafe { self.arm(token, OP_SEND, sqe) };
        }
        self.to_send = to_send;
        expected
    }

    fn rearm_starved(&mut self) {
        if self.starved.is_empty() || BUF_ENTRIES as usize - self.bufs.lent < REARM_FREE {
            return;
        }
        for token in std::mem::take(&mut self.starved) {
            // Skips slots freed (and reused) meanwhile.
            let Some(slot) = self.sources.get_mut(token).filter(|s| s.starved) else {
                continue;
            };
            slot.starved = false;
            if slot.owned.is_none() && !slot.armed(OP_RECV) && slot.recv_end.is_none() {
                self.arm_recv(token);
            }
        }
    }

    /// Handles every completion waiting in the queue.
    fn complete(&mut self) {
        // One entry at a time, each given back to the kernel before it is handled: handling
        // needs `&mut self`, which a borrowed queue would hold.
        loop {
            let Some(c) = self.ring.completion().next() else {
                return;
            };
            self.complete_one(c.user_data(), c.result(), c.flags());
        }
    }

    fn complete_one(&mut self, data: u64, result: i32, flags: u32) {
        let (token, op) = ((data >> 3) as usize, data & 7);
        if op >= OP_CANCEL {
            return;
        }
        let last = !cqueue::more(flags);
        self.in_flight -= usize::from(last);
        if token as u64 == NOTIFIER_TOKEN {
            // Also after a lost arm: the executor then reads the eventfd and checks its inbox.
            self.notified = true;
            if last && result != -ECANCELED {
                self.arm_notifier();
            }
            return;
        }
        let slot = &mut self.sources[token];
        if last {
            slot.armed &= !(1 << op);
        }
        let dropped = slot.owned.is_some();
        match op {
            OP_POLL => match slot.kind {
                Kind::Readiness => {
                    // A failed poll (the socket is gone) makes both directions ready, as on
                    // epoll.
                    let events = match result {
                        ..0 => EventFlags::ERR | EventFlags::HUP,
                        _ => EventFlags::from_bits_truncate(result as u32),
                    };
                    slot.io.set(events, &mut self.to_wake);
                    if last && !dropped && result >= 0 {
                        self.arm_poll(token, PollFlags::IN | PollFlags::OUT, true);
                    }
                }
                // The handshake ended (or failed: the connect reads `SO_ERROR`), or a starved
                // stream has something to read.
                Kind::Stream | Kind::Acceptor => {
                    slot.io
                        .set(EventFlags::IN | EventFlags::OUT, &mut self.to_wake);
                }
            },
            OP_RECV => {
                queue_waker(&mut slot.io.reader, &mut self.to_wake);
                if let Some(buf) = cqueue::buffer_select(flags) {
                    self.bufs.lent += 1;
                    if result > 0 && !dropped {
                        // SAFETY: this completion handed `buf` over with `result` bytes in it.
                        unsafe { self.bufs.push(&mut slot.received, buf, result as u32) };
                        if slot.received.len >= MAX_HELD && !last && !slot.recv_cancelling {
                            slot.recv_cancelling = true;
                            self.cancel(token, OP_RECV);
                        }
                    } else {
                        self.bufs.give_back(buf);
                    }
                } else if result == 0 {
                    slot.recv_end = Some(0);
                } else if result == -ENOBUFS {
                    if !dropped && !slot.starved {
                        slot.starved = true;
                        self.starved.push(token);
                    }
                } else if result < 0 && result != -ECANCELED {
                    slot.recv_end = Some(-result as u16);
                }
            }
            OP_SEND => {
                queue_waker(&mut slot.io.writer, &mut self.to_wake);
                // A counted send (`MSG_DONTWAIT`) that found the socket full sent nothing.
                let result = if result == -EAGAIN { 0 } else { result };
                if result < 0 {
                    slot.send_error = NonZeroU16::new(-result as u16);
                    slot.unsent = Vec::new();
                    slot.sending.clear();
                    slot.sent = 0;
                } else {
                    slot.sent += result as u32;
                    // Sent in part: the socket buffer is full.
                    slot.send_blocked |= (slot.sent as usize) < slot.sending.len();
                    if (slot.sent as usize) < slot.sending.len() || !slot.unsent.is_empty() {
                        slot.armed |= 1 << OP_SEND;
                        self.to_send.push(token);
                    } else if slot.shutdown_write {
                        // SAFETY: the slot's descriptor is open until `maybe_close` closes it.
                        let fd = unsafe { BorrowedFd::borrow_raw(slot.fd) };
                        let _ = shutdown(fd, Shutdown::Write);
                    }
                }
            }
            OP_ACCEPT => self.complete_accept(token, result, flags, dropped),
            _ => unreachable!("unknown operation in user_data {data:#x}"),
        }
        if dropped {
            self.maybe_close(token);
        }
    }

    /// Frees a dropped slot (closing its descriptor) once nothing on it is in flight or queued.
    fn maybe_close(&mut self, token: usize) {
        let slot = &self.sources[token];
        if slot.owned.is_some() && slot.armed == 0 {
            let slot = self.sources.remove(token);
            if let Some(fd) = slot.owned {
                // Closed by the ring with the next submit: one syscall fewer per connection.
                let sqe = opcode::Close::new(types::Fd(fd.into_raw_fd()))
                    .build()
                    .user_data(user_data(0, OP_CLOSE));
                // SAFETY: a close points at no memory; the descriptor is ours and unused after.
                unsafe { self.push(sqe, false) };
            }
        }
    }
}
