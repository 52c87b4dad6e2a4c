//! The epoll driver: readiness per registered file descriptor.
//!
//! Every descriptor is registered once, edge-triggered, for both directions. The reactor keeps a
//! readiness bit per direction: set by an epoll event, cleared by the I/O code when a syscall
//! says `EAGAIN` (or returns short, which on a stream socket means the same). A task that finds
//! the bit clear leaves its waker and sleeps until the next edge.
//!
//! End of stream and errors are kept apart, in "closed" bits that are never cleared: a short
//! read can return the last data before a FIN whose one edge has already been reported, and
//! clearing that would leave the reader waiting for an edge that never comes.
//!
//! Token 0 is the worker's [`Notifier`] (eventfd); other tokens are slab keys plus one.

use std::cell::RefCell;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use rustix::event::epoll;
use rustix::time::Timespec;
use slab::Slab;

use super::{Direction, Notifier, READABLE, READ_CLOSED, WRITABLE, WRITE_CLOSED};

const NOTIFIER_TOKEN: u64 = 0;
const MAX_EVENTS: usize = 1024;

#[derive(Default)]
struct ScheduledIo {
    ready: u8,
    reader: Option<Waker>,
    writer: Option<Waker>,
}

pub(crate) struct Reactor {
    epoll: OwnedFd,
    events: RefCell<Vec<epoll::Event>>,
    sources: RefCell<Slab<ScheduledIo>>,
    /// Reused between turns: wakers taken from `sources`, woken once the borrow is released.
    to_wake: RefCell<Vec<Waker>>,
}

impl Reactor {
    pub(crate) fn new(notifier: &Notifier) -> io::Result<Reactor> {
        let epoll = epoll::create(epoll::CreateFlags::CLOEXEC)?;
        epoll::add(
            &epoll,
            notifier.as_fd(),
            epoll::EventData::new_u64(NOTIFIER_TOKEN),
            epoll::EventFlags::IN | epoll::EventFlags::ET,
        )?;
        Ok(Reactor {
            epoll,
            events: RefCell::new(Vec::with_capacity(MAX_EVENTS)),
            sources: RefCell::new(Slab::with_capacity(1024)),
            to_wake: RefCell::new(Vec::with_capacity(64)),
        })
    }

    /// Registers `fd` for both directions. `ready` is the readiness to assume until the first
    /// event: a fresh accepted socket is worth one optimistic read, a connecting one is not.
    pub(crate) fn register(&self, fd: BorrowedFd<'_>, ready: u8) -> io::Result<usize> {
        let mut sources = self.sources.borrow_mut();
        let entry = sources.vacant_entry();
        let token = entry.key();
        epoll::add(
            &self.epoll,
            fd,
            epoll::EventData::new_u64(token as u64 + 1),
            epoll::EventFlags::IN
                | epoll::EventFlags::OUT
                | epoll::EventFlags::RDHUP
                | epoll::EventFlags::ET,
        )?;
        entry.insert(ScheduledIo {
            ready,
            ..ScheduledIo::default()
        });
        Ok(token)
    }

    pub(crate) fn deregister(&self, token: usize, fd: OwnedFd) {
        // Removing before close matters only for descriptors duplicated elsewhere; it is cheap.
        let _ = epoll::delete(&self.epoll, &fd);
        drop(fd);
        let io = self.sources.borrow_mut().try_remove(token);
        drop(io); // wakers dropped outside the borrow
    }

    /// Ready now, or the waker is kept for the next edge in `dir`.
    pub(crate) fn poll_ready(&self, token: usize, dir: Direction, cx: &Context<'_>) -> Poll<()> {
        let mut sources = self.sources.borrow_mut();
        let io = &mut sources[token];
        if io.ready & (dir.bit() | dir.closed_bit()) != 0 {
            return Poll::Ready(());
        }
        let slot = match dir {
            Direction::Read => &mut io.reader,
            Direction::Write => &mut io.writer,
        };
        match slot {
            Some(w) if w.will_wake(cx.waker()) => {}
            _ => *slot = Some(cx.waker().clone()),
        }
        Poll::Pending
    }

    /// Clears `dir`'s readiness, but not its closed bit, which is final.
    pub(crate) fn clear_ready(&self, token: usize, dir: Direction) {
        self.sources.borrow_mut()[token].ready &= !dir.bit();
    }

    /// Waits for events until `deadline` (`None`: until an event) and wakes their tasks.
    /// Returns true if the worker's [`Notifier`] fired (the caller then resets it).
    pub(crate) fn poll(&self, deadline: Option<Instant>) -> bool {
        let timeout = deadline.map(|d| {
            // Rounded up to whole milliseconds (what epoll_wait takes) so a timer is never
            // polled early and spun on.
            let ms = d
                .saturating_duration_since(Instant::now())
                .as_nanos()
                .div_ceil(1_000_000);
            let ms = ms.min(i32::MAX as u128) as i64;
            Timespec {
                tv_sec: ms / 1000,
                tv_nsec: (ms % 1000) * 1_000_000,
            }
        });
        let mut events = self.events.borrow_mut();
        events.clear();
        match epoll::wait(
            &self.epoll,
            rustix::buffer::spare_capacity(&mut *events),
            timeout.as_ref(),
        ) {
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => return false,
            Err(e) => panic!("epoll_wait failed: {e}"),
        }
        let mut notified = false;
        let mut to_wake = self.to_wake.borrow_mut();
        {
            let mut sources = self.sources.borrow_mut();
            for event in events.iter() {
                let token = event.data.u64();
                if token == NOTIFIER_TOKEN {
                    notified = true; // the executor checks its inbox every turn
                    continue;
                }
                let Some(io) = sources.get_mut(token as usize - 1) else {
                    continue;
                };
                let flags = event.flags;
                let error = epoll::EventFlags::ERR | epoll::EventFlags::HUP;
                if flags.intersects(epoll::EventFlags::RDHUP | error) {
                    io.ready |= READ_CLOSED;
                }
                if flags.intersects(error) {
                    io.ready |= WRITE_CLOSED;
                }
                if flags.intersects(epoll::EventFlags::IN | epoll::EventFlags::RDHUP | error) {
                    io.ready |= READABLE;
                    to_wake.extend(io.reader.take());
                }
                if flags.intersects(epoll::EventFlags::OUT | error) {
                    io.ready |= WRITABLE;
                    to_wake.extend(io.writer.take());
                }
            }
        }
        drop(events);
        let mut wakers = std::mem::take(&mut *to_wake);
        drop(to_wake);
        for w in wakers.drain(..) {
            w.wake();
        }
        *self.to_wake.borrow_mut() = wakers;
        notified
    }
}
