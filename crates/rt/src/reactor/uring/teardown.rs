//! What the io_uring driver does when its worker ends: bytes still queued are sent for up to
//! [`LINGER`], then every operation is cancelled and its completion awaited before any buffer
//! the kernel might use is freed.

use std::mem::ManuallyDrop;
use std::time::{Duration, Instant};

use io_uring::{opcode, types};

use super::{entered, submit_and_wait_for, user_data, Reactor, LINGER, OP_CANCEL, OP_SEND};

impl Drop for Reactor {
    fn drop(&mut self) {
        let st = self.state.get_mut();
        // Bytes still queued go on being sent for up to `LINGER`, as after `close` on epoll,
        // where the kernel has them and sends them on its own; what the peer has not taken by
        // then is dropped.
        let linger_end = Instant::now() + LINGER;
        while Instant::now() < linger_end && st.sources.iter().any(|(_, s)| s.armed(OP_SEND)) {
            st.start_sends();
            let wait = linger_end.saturating_duration_since(Instant::now());
            if entered(submit_and_wait_for(&st.ring, 1, wait)).is_err() {
                break;
            }
            st.complete();
        }
        // Cancel everything (again each round, in case a completion re-armed something), then
        // wait for every last completion: until then the kernel may still write into the
        // buffer ring or read from a slot's `sending`.
        let cancel = opcode::AsyncCancel2::new(types::CancelBuilder::any())
            .build()
            .user_data(user_data(0, OP_CANCEL));
        for _ in 0..1000 {
            // SAFETY: a cancellation points at no memory.
            unsafe { st.push(cancel.clone(), false) };
            if st.in_flight == 0 {
                let _ = st.ring.submit(); // the closes queued last
                break;
            }
            if entered(submit_and_wait_for(&st.ring, 1, Duration::from_millis(10))).is_err() {
                break;
            }
            st.complete();
        }
        // If some operation never completed, `state` is leaked, not dropped, rather than
        // freeing memory the kernel may still use.
        if st.in_flight == 0 {
            // SAFETY: not used again; nothing is in flight, so the kernel holds no pointer into
            // the memory freed with it.
            unsafe { ManuallyDrop::drop(&mut self.state) };
        }
    }
}
