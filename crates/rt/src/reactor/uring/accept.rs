//! Listeners on io_uring: one accept in flight per listener, which writes the peer's address
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
        if result == -EINVAL && rare.poll_first {
            // A kernel without `ACCEPT_POLL_FIRST`; the reader, woken, accepts again without it.
            self.accept_ioprio = 0;
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
    use std::task::{Poll, Waker};
    use std::time::{Duration, Instant};

    use super::*;
    use crate::reactor::{Kind, Notifier};

    #[test]
    fn ioprio_is_the_entrys_third_and_fourth_bytes() {
        let sqe = opcode::Nop::new().build().user_data(7);
        // SAFETY: an `Entry` is 64 bytes of plain data (see `with_ioprio`).
        let raw: [u8; 64] = unsafe { std::mem::transmute(with_ioprio(sqe, 0x0102)) };
        assert_eq!(raw[0], 0, "the opcode (IORING_OP_NOP) is untouched");
        assert_eq!(u16::from_ne_bytes([raw[2], raw[3]]), 0x0102);
        assert_eq!(
            u64::from_ne_bytes(raw[32..40].try_into().unwrap()),
            7,
            "user_data"
        );
    }

    /// Accepts `n` connections through `reactor`, every other one connected before the
    /// accept is armed, the others while it waits; returns the clients.
    fn accept_each(reactor: &Reactor, listener: &TcpListener, n: usize) -> Vec<TcpStream> {
        let token = reactor
            .register(listener.as_fd(), 0, Kind::Acceptor)
            .expect("register the listener");
        let cx = Context::from_waker(Waker::noop());
        let mut clients = Vec::new();
        for i in 0..n {
            if i % 2 == 0 {
                clients.push(TcpStream::connect(listener.local_addr().unwrap()).unwrap());
            }
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                if let Poll::Ready(accepted) = reactor.poll_accept(token, &cx) {
                    accepted.expect("a connection");
                    break;
                }
                assert!(Instant::now() < deadline, "connection {i} never accepted");
                if i % 2 == 1 && clients.len() == i {
                    // Connected only once the accept waits.
                    clients.push(TcpStream::connect(listener.local_addr().unwrap()).unwrap());
                }
                reactor.poll(Some(Instant::now() + Duration::from_millis(100)));
            }
        }
        clients
    }

    #[test]
    fn a_kernel_that_refuses_the_poll_first_flag_gets_accepts_without_it() {
        if crate::reactor::uring::probe().is_err() {
            return; // no io_uring here: the epoll driver has nothing like it
        }
        // Declared first, dropped last: the reactor ends its accept before the listener closes.
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let notifier = Notifier::new().unwrap();
        let reactor = Reactor::new(&notifier).unwrap();
        // A flag no kernel knows stands for one the kernel does not know yet: the accept
        // fails with `EINVAL`, as `ACCEPT_POLL_FIRST` does before Linux 6.10.
        reactor.state.borrow_mut().accept_ioprio = 1 << 15;
        let clients = accept_each(&reactor, &listener, 4);
        assert_eq!(clients.len(), 4);
        assert_eq!(
            reactor.state.borrow().accept_ioprio,
            0,
            "the flag is dropped"
        );
    }

    #[test]
    fn accepts_that_wait_first_take_every_connection() {
        if crate::reactor::uring::probe().is_err() {
            return;
        }
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let notifier = Notifier::new().unwrap();
        let reactor = Reactor::new(&notifier).unwrap();
        let clients = accept_each(&reactor, &listener, 6);
        assert_eq!(clients.len(), 6);
        if kernel_at_least(6, 10) {
            let ioprio = reactor.state.borrow().accept_ioprio;
            assert_eq!(ioprio, ACCEPT_POLL_FIRST, "the kernel took the flag");
        }
    }

    fn kernel_at_least(major: u32, minor: u32) -> bool {
        let uname = rustix::system::uname();
        let release = uname.release().to_string_lossy();
        let mut parts = release
            .split(['.', '-'])
            .map(|p| p.parse::<u32>().unwrap_or(0));
        (parts.next().unwrap_or(0), parts.next().unwrap_or(0)) >= (major, minor)
    }
}
