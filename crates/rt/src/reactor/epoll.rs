//! The epoll driver: readiness per registered file descriptor.
//!
//! Every descriptor joins the epoll set once, edge-triggered, for both directions, the first
//! time a task has to wait on it (see [`Reactor::poll_ready`]). The reactor keeps a
//! readiness bit per direction: set by an epoll event, cleared by the I/O code when a syscall
//! says `EAGAIN` (or returns short, which on a stream socket means the same). A task that finds
//! the bit clear leaves its waker and sleeps until the next edge.
//!
//! Token 0 is the worker's [`Notifier`] (eventfd); other tokens are slab keys plus one in the
//! low 32 bits and the registration's generation in the high 32 (see [`Reactor::deregister`]).

use std::cell::{Cell, RefCell};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use rustix::event::epoll;
use rustix::time::Timespec;
use slab::Slab;

use super::{Direction, Notifier, Readiness};

const NOTIFIER_TOKEN: u64 = 0;
const MAX_EVENTS: usize = 1024;

struct ScheduledIo {
    io: Readiness,
    /// Tells this registration's events from those of an earlier one under the same slab key.
    generation: u32,
    /// The fd may have been duplicated outside volt-rt: remove it from the set before closing.
    shared: bool,
    /// In the epoll set.
    watched: bool,
}

/// Adds `fd` to `epoll`, edge-triggered for both directions, its events carrying `data`.
fn watch(epoll: &OwnedFd, fd: BorrowedFd<'_>, data: u64) -> io::Result<()> {
    let flags = epoll::EventFlags::IN | epoll::EventFlags::OUT | epoll::EventFlags::RDHUP;
    let data = epoll::EventData::new_u64(data);
    Ok(epoll::add(epoll, fd, data, flags | epoll::EventFlags::ET)?)
}

pub(crate) struct Reactor {
    epoll: OwnedFd,
    events: RefCell<Vec<epoll::Event>>,
    sources: RefCell<Slab<ScheduledIo>>,
    /// Reused between turns: wakers taken from `sources`, woken once the borrow is released.
    to_wake: RefCell<Vec<Waker>>,
    /// Bumped on every registration.
    generation: Cell<u32>,
}

impl Reactor {
    pub(crate) fn new(notifier: &Notifier) -> io::Result<Reactor> {
        let epoll = epoll::create(epoll::CreateFlags::CLOEXEC)?;
        watch(&epoll, notifier.as_fd(), NOTIFIER_TOKEN)?;
        Ok(Reactor {
            epoll,
            events: RefCell::new(Vec::with_capacity(MAX_EVENTS)),
            sources: RefCell::new(Slab::with_capacity(1024)),
            to_wake: RefCell::new(Vec::with_capacity(64)),
            generation: Cell::new(0),
        })
    }

    /// Registers an fd, to join the epoll set when a task first waits on it (see
    /// [`Reactor::poll_ready`]). `ready` is the readiness to assume until then: a fresh
    /// accepted socket is worth one optimistic read, a connecting one is not. `shared`: the fd
    /// came from the user, who may hold a duplicate of it.
    pub(crate) fn register(&self, ready: u8, shared: bool) -> usize {
        let generation = self.generation.get().wrapping_add(1);
        self.generation.set(generation);
        self.sources.borrow_mut().insert(ScheduledIo {
            io: Readiness::new(ready),
            generation,
            shared,
            watched: false,
        })
    }

    /// Forgets `token` and closes `fd`.
    ///
    /// Closing the last fd of an open file description removes it from every epoll set, so
    /// `EPOLL_CTL_DEL` is a wasted syscall for the fds volt-rt made itself (accepted, connected,
    /// paired, bound: it never duplicates them). The rule: delete first only when the fd came
    /// from the user (`from_std`), who may have cloned the socket; its clone would otherwise stay
    /// in this set and wake this worker for nothing. A duplicate made through `AsFd` on a socket
    /// volt-rt created (or a `fork`) also keeps the registration alive: its later events carry
    /// this registration's generation, which no longer matches, and [`Reactor::poll`] drops them
    /// rather than set (sticky) readiness on whatever socket reuses the slab key.
    pub(crate) fn deregister(&self, token: usize, fd: OwnedFd) {
        let io = self.sources.borrow_mut().try_remove(token);
        if io.as_ref().is_some_and(|io| io.shared && io.watched) {
            let _ = epoll::delete(&self.epoll, &fd);
        }
        // `io`'s wakers are dropped here, outside the borrow; then `fd` is closed.
    }

    /// Ready, or the waker is kept for the next edge. The fd joins the epoll set here, the first
    /// time it is not ready: a connection that is read, answered and closed without waiting (one
    /// per request) costs no `epoll_ctl`, nor its close a removal from the set. Data that came
    /// before the join is not missed: a socket ready when added is reported at once. Should the
    /// kernel refuse the add (out of memory or of watches), the task polls: it is woken at once
    /// to try again.
    // Into `Source::poll_io`: it runs before every read and write, and the call's register
    // spills cost more than the check. Plain `inline` was not always taken.
    #[inline(always)]
    pub(crate) fn poll_ready(
        &self,
        token: usize,
        fd: BorrowedFd,
        dir: Direction,
        cx: &Context,
    ) -> Poll<()> {
        let mut sources = self.sources.borrow_mut();
        let io = &mut sources[token];
        let poll = io.io.poll(dir, cx);
        if poll.is_pending() && !io.watched {
            let data = u64::from(io.generation) << 32 | (token as u64 + 1);
            io.watched = watch(&self.epoll, fd, data).is_ok();
            if !io.watched {
                cx.waker().wake_by_ref();
            }
        }
        poll
    }

    #[inline]
    pub(crate) fn clear_ready(&self, token: usize, dir: Direction) {
        self.sources.borrow_mut()[token].io.clear(dir);
    }

    /// Waits for events until `deadline` (`None`: until an event) and wakes their tasks.
    /// Returns true if the worker's [`Notifier`] fired (the caller then resets it).
    pub(crate) fn poll(&self, deadline: Option<Instant>) -> bool {
        let timeout = deadline.map(|d| {
            // Rounded up to whole milliseconds (what epoll_wait takes) so a timer is never
            // polled early and spun on.
            let wait = d.saturating_duration_since(Instant::now());
            let ms = wait.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128);
            Timespec::try_from(Duration::from_millis(ms as u64)).expect("fits a timespec")
        });
        let mut events = self.events.borrow_mut();
        events.clear();
        let spare = rustix::buffer::spare_capacity(&mut *events);
        match epoll::wait(&self.epoll, spare, timeout.as_ref()) {
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => return false,
            Err(e) => panic!("epoll_wait failed: {e}"),
        }
        let mut notified = false;
        let mut to_wake = self.to_wake.take();
        let mut sources = self.sources.borrow_mut();
        for event in events.iter() {
            let data = event.data.u64();
            if data == NOTIFIER_TOKEN {
                notified = true; // the executor checks its inbox every turn
                continue;
            }
            let (generation, key) = ((data >> 32) as u32, (data as u32) as usize - 1);
            // A stale generation: a closed registration kept alive by a duplicate of its fd.
            if let Some(io) = sources.get_mut(key).filter(|s| s.generation == generation) {
                io.io.set(event.flags, &mut to_wake);
            }
        }
        drop((events, sources));
        *self.to_wake.borrow_mut() = super::wake_all(to_wake);
        notified
    }
}
