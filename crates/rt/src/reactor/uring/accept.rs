//! TCP listeners on io_uring: one accept in flight per listener, which writes the peer's address
//! into a buffer of the listener's slot, and waits for a connection first unless the last one
//! said more were waiting.

use std::io;
use std::mem::MaybeUninit;
use std::net::SocketAddr;
use std::os::fd::{FromRawFd, OwnedFd};
use std::task::{Context, Poll};

use io_uring::{cqueue, opcode, squeue, types};
use rustix::net::addr::{SocketAddrLen, SocketAddrStorage};
use rustix::net::SocketAddrAny;

use super::{queue_waker, Direction, Reactor, State, ECANCELED, EINVAL, OP_ACCEPT};

/// `IORING_ACCEPT_POLL_FIRST` (Linux 6.10), in an accept's `ioprio`: wait for a connection
/// before trying to take one (see [`super::Rare::backlog`]).
pub(super) const ACCEPT_POLL_FIRST: u16 = 1 << 2;

/// The peer's address an accept writes, and its length. Zeroed at first, so all of it is
/// initialized.
pub(super) struct PeerAddr {
    addr: MaybeUninit<SocketAddrStorage>,
    len: SocketAddrLen,
}

impl Reactor {
    /// The next accepted connection. One accept is kept in flight, so the next connection is
    /// taken by the kernel while this one is served.
    pub(crate) fn poll_accept(
        &self,
        token: usize,
        cx: &Context<'_>,
    ) -> Poll<io::Result<(OwnedFd, SocketAddr)>> {
        let mut st = self.state.borrow_mut();
        let rare = st.sources[token].rare.as_mut();
        let accepted = rare.and_then(|r| r.accepted.pop_front());
        if !st.sources[token].armed(OP_ACCEPT) {
            st.arm_accept(token);
        }
        if accepted.is_none() {
            st.sources[token].io.wait(Direction::Read, cx);
        }
        accepted.map_or(Poll::Pending, Poll::Ready)
    }
}

impl State {
    pub(super) fn arm_accept(&mut self, token: usize) {
        let ioprio = self.accept_ioprio;
        let slot = &mut self.sources[token];
        let rare = slot.rare.get_or_insert_with(Box::default);
        rare.poll_first = ioprio != 0 && !rare.backlog;
        let peer = rare.peer.get_or_insert_with(|| {
            Box::new(PeerAddr {
                addr: MaybeUninit::zeroed(),
                len: 0,
            })
        });
        peer.len = size_of::<SocketAddrStorage>() as SocketAddrLen;
        let flags = rustix::net::SocketFlags::NONBLOCK | rustix::net::SocketFlags::CLOEXEC;
        let (addr, len) = (peer.addr.as_mut_ptr().cast(), &mut peer.len);
        let sqe = opcode::Accept::new(types::Fd(slot.fd), addr, len);
        let mut sqe = sqe.flags(flags.bits() as i32).build();
        if rare.poll_first {
            sqe = with_ioprio(sqe, ioprio);
        }
        // SAFETY: `peer` is boxed in the slot's `rare`, neither replaced nor freed before the
        // slot, which outlives the accept (`maybe_close`, `Reactor::drop`); it is read only after
        // the completion.
        unsafe { self.arm(token, OP_ACCEPT, sqe) };
    }

    /// An accept's completion: a connection (or an error) for the listener's next
    /// [`Reactor::poll_accept`].
    pub(super) fn complete_accept(&mut self, token: usize, result: i32, flags: u32, dropped: bool) {
        let slot = &mut self.sources[token];
        queue_waker(&mut slot.io.reader, &mut self.to_wake);
        let rare = slot.rare.as_mut().expect("an accept's address buffer");
        rare.backlog = cqueue::sock_nonempty(flags);
        if std::mem::take(&mut rare.poll_first_refused) && result == -EINVAL {
            // Refused without the flag too: not the flag's fault. The error goes to the caller.
            self.accept_ioprio = ACCEPT_POLL_FIRST;
        }
        if result == -EINVAL && rare.poll_first {
            // Perhaps a kernel without `ACCEPT_POLL_FIRST`. The next `poll_accept` (the reader
            // is woken, if one waits) accepts again without it.
            self.accept_ioprio = 0;
            rare.poll_first_refused = true;
        } else if result >= 0 {
            // SAFETY: the kernel returned a new descriptor that nothing else owns.
            let fd = unsafe { OwnedFd::from_raw_fd(result) };
            let peer = rare.peer.as_ref().expect("an accept's address buffer");
            if !dropped {
                // SAFETY: `peer.addr` is initialized (zeroed, then written by the accept) and at
                // least `len` long.
                let addr = unsafe { SocketAddrAny::read(peer.addr.as_ptr(), peer.len) };
                let addr = SocketAddr::try_from(addr)
                    .map_err(|_| io::Error::other("accepted socket without an IP peer address"));
                rare.accepted.push_back(addr.map(|addr| (fd, addr)));
            }
        } else if result != -ECANCELED && !dropped {
            rare.accepted
                .push_back(Err(io::Error::from_raw_os_error(-result)));
        }
    }
}

/// `sqe` with its `ioprio` field set, which the `io-uring` crate's `Accept` does not expose.
fn with_ioprio(sqe: squeue::Entry, ioprio: u16) -> squeue::Entry {
    // SAFETY: `Entry` is `repr(C)` around the 64-byte `struct io_uring_sqe`, plain integers
    // and pointers, any bit pattern valid; its `ioprio` is the `u16` at byte 2, after the
    // one-byte `opcode` and `flags` (the kernel's ABI).
    let mut raw: [u16; 32] = unsafe { std::mem::transmute(sqe) };
    raw[1] = ioprio;
    // SAFETY: as above; only `ioprio` changed.
    unsafe { std::mem::transmute(raw) }
}

#[cfg(test)]
mod tests {
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsFd;
    use std::ptr::null_mut;
    use std::task::{Poll, Waker};
    use std::time::{Duration, Instant};

    use super::*;
    use crate::reactor::{uring_probe, Kind, Notifier};

    #[test]
    fn ioprio_is_where_the_crate_writes_it() {
        // `AcceptMulti` is the one entry the crate gives an `ioprio` (`IORING_ACCEPT_MULTISHOT`,
        // 1); an `Accept` given that `ioprio` by hand must come out byte for byte the same.
        let by_hand = with_ioprio(
            opcode::Accept::new(types::Fd(3), null_mut(), null_mut()).build(),
            1,
        );
        let by_crate = opcode::AcceptMulti::new(types::Fd(3)).build();
        // SAFETY: an `Entry` is 64 bytes of plain data (see `with_ioprio`).
        let bytes = |e: squeue::Entry| unsafe { std::mem::transmute::<_, [u8; 64]>(e) };
        assert_eq!(bytes(by_hand), bytes(by_crate));
    }

    /// A reactor and a listener registered with it; `None` (the test skips) without io_uring.
    fn setup() -> Option<(TcpListener, Notifier, Reactor, usize)> {
        if let Err(why) = uring_probe() {
            eprintln!("skipping: no io_uring here ({why})");
            return None;
        }
        // First, so dropped last: the reactor ends its accept before the listener closes.
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let notifier = Notifier::new().unwrap();
        let reactor = Reactor::new(&notifier).unwrap();
        let token = reactor
            .register(listener.as_fd(), 0, Kind::Acceptor)
            .unwrap();
        Some((listener, notifier, reactor, token))
    }

    /// Runs the reactor until `poll_accept` yields a connection.
    fn accept_one(reactor: &Reactor, token: usize) {
        let cx = Context::from_waker(Waker::noop());
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Poll::Ready(accepted) = reactor.poll_accept(token, &cx) {
                accepted.expect("a connection");
                return;
            }
            assert!(Instant::now() < deadline, "no connection accepted in 10 s");
            reactor.poll(Some(Instant::now() + Duration::from_millis(100)));
        }
    }

    /// Accepts `n` connections: every other one connected before the accept is submitted, the
    /// others once it waits in the kernel. Returns the clients.
    fn accept_each(
        listener: &TcpListener,
        reactor: &Reactor,
        token: usize,
        n: usize,
    ) -> Vec<TcpStream> {
        let cx = Context::from_waker(Waker::noop());
        let mut clients = Vec::new();
        for i in 0..n {
            if i % 2 == 1 {
                assert!(reactor.poll_accept(token, &cx).is_pending());
                reactor.poll(Some(Instant::now() + Duration::from_millis(20))); // submitted
            }
            clients.push(TcpStream::connect(listener.local_addr().unwrap()).unwrap());
            accept_one(reactor, token);
        }
        clients
    }

    fn rare(reactor: &Reactor, token: usize) -> (bool, bool) {
        let st = reactor.state.borrow();
        let rare = st.sources[token]
            .rare
            .as_ref()
            .expect("a listener's rare part");
        (rare.backlog, rare.poll_first)
    }

    #[test]
    fn a_kernel_that_refuses_the_poll_first_flag_gets_accepts_without_it() {
        let Some((listener, _notifier, reactor, token)) = setup() else {
            return;
        };
        // A flag no kernel knows stands for one the kernel does not know yet: the accept
        // fails with `EINVAL`, as `ACCEPT_POLL_FIRST` does before Linux 6.10.
        reactor.state.borrow_mut().accept_ioprio = 1 << 15;
        assert_eq!(accept_each(&listener, &reactor, token, 4).len(), 4);
        assert_eq!(
            reactor.state.borrow().accept_ioprio,
            0,
            "the flag is dropped"
        );
    }

    #[test]
    fn a_socket_that_does_not_listen_is_an_error_and_keeps_the_flag() {
        let Some((_listener, _notifier, reactor, _)) = setup() else {
            return;
        };
        use rustix::net::{socket, AddressFamily, SocketType};
        let unlistening = socket(AddressFamily::INET, SocketType::STREAM, None).unwrap();
        let token = reactor
            .register(unlistening.as_fd(), 0, Kind::Acceptor)
            .unwrap();
        let cx = Context::from_waker(Waker::noop());
        let deadline = Instant::now() + Duration::from_secs(10);
        let error = loop {
            if let Poll::Ready(accepted) = reactor.poll_accept(token, &cx) {
                break accepted.expect_err("accept on a socket that does not listen");
            }
            assert!(
                Instant::now() < deadline,
                "no answer from the accept in 10 s"
            );
            reactor.poll(Some(Instant::now() + Duration::from_millis(100)));
        };
        assert_eq!(error.raw_os_error(), Some(EINVAL));
        // Refused with the flag and without it: the socket's fault, not the flag's.
        assert_eq!(reactor.state.borrow().accept_ioprio, ACCEPT_POLL_FIRST);
        reactor.deregister(token, unlistening);
    }

    #[test]
    fn accepts_wait_first_unless_more_connections_were_waiting() {
        let Some((listener, _notifier, reactor, token)) = setup() else {
            return;
        };
        assert_eq!(accept_each(&listener, &reactor, token, 6).len(), 6);
        if crate::reactor::uring::kernel_version() < (6, 10) {
            return; // no `ACCEPT_POLL_FIRST` nor `SOCK_NONEMPTY` to check
        }
        assert_eq!(
            reactor.state.borrow().accept_ioprio,
            ACCEPT_POLL_FIRST,
            "the kernel took it"
        );
        // Three wait at once: the first accept says more are waiting, so the next one does
        // not wait first; the last says none are, so the one after it does.
        let addr = listener.local_addr().unwrap();
        let _waiting: Vec<_> = (0..3).map(|_| TcpStream::connect(addr).unwrap()).collect();
        std::thread::sleep(Duration::from_millis(50)); // all three in the backlog
        accept_one(&reactor, token);
        assert_eq!(
            rare(&reactor, token),
            (true, false),
            "the next accept takes one at once"
        );
        accept_one(&reactor, token);
        accept_one(&reactor, token);
        assert_eq!(
            rare(&reactor, token),
            (false, true),
            "the next accept waits first"
        );
    }
}
