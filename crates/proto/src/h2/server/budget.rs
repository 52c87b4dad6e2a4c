//! The token buckets behind the connection's defences against floods of control frames and
//! of stream resets (see the parent module's docs).

use std::time::{Duration, Instant};

use super::{conn_err, Connection, Fault};
use crate::h2::frame::Reason;

/// A budget refills in full over this period.
const BUDGET_REFILL: Duration = Duration::from_secs(10);

/// A token bucket: `capacity` events in a burst, refilled in full over [`BUDGET_REFILL`].
#[derive(Debug)]
pub(super) struct Budget {
    capacity: f64,
    tokens: f64,
    last: Instant,
}

impl Budget {
    pub(super) fn new(capacity: u32) -> Budget {
        let capacity = f64::from(capacity.max(1));
        Budget {
            capacity,
            tokens: capacity,
            last: Instant::now(),
        }
    }

    /// Takes one token; false when there was none left.
    pub(super) fn spend(&mut self) -> bool {
        let now = Instant::now();
        let refill = now.duration_since(self.last).as_secs_f64() / BUDGET_REFILL.as_secs_f64();
        self.last = now;
        self.tokens = (self.tokens + refill * self.capacity).min(self.capacity) - 1.0;
        self.tokens >= 0.0
    }
}

impl Connection {
    /// Spends one control-frame token.
    pub(super) fn spend_control(&mut self) -> Result<(), Fault> {
        if self.control_budget.spend() {
            Ok(())
        } else {
            Err(conn_err(Reason::ENHANCE_YOUR_CALM, "control frame flood"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;

    #[test]
    fn ping_is_answered_and_floods_are_stopped() {
        let mut conn = open(Settings {
            max_control_frames: 3,
            ..Settings::default()
        });
        let (_, out, _) = run(&mut conn, &frame(0x6, 0, 0, &[7; 8]));
        assert_eq!(
            frames(&out)[0],
            (FrameHeader::parse(&out).unwrap(), vec![7; 8])
        );
        assert_eq!(frames(&out)[0].0.flags, flags::ACK);
        let pings: Vec<u8> = (0..3).flat_map(|_| frame(0x6, 0, 0, &[0; 8])).collect();
        let (_, out, err) = run(&mut conn, &pings);
        assert_eq!(err.map(|e| e.reason()), Some(Reason::ENHANCE_YOUR_CALM));
        assert_eq!(goaway_code(&out), Some(Reason::ENHANCE_YOUR_CALM));
    }

    #[test]
    fn rapid_reset_and_continuation_floods_are_stopped() {
        let mut conn = open(Settings {
            max_reset_streams: 5,
            ..Settings::default()
        });
        let bytes: Vec<u8> = (0..10u32)
            .flat_map(|i| {
                let mut f = headers(1 + 2 * i, 0, &POST);
                f.extend(frame(0x3, 0, 1 + 2 * i, &8u32.to_be_bytes()));
                f
            })
            .collect();
        let (_, _, err) = run(&mut conn, &bytes);
        assert_eq!(err.map(|e| e.reason()), Some(Reason::ENHANCE_YOUR_CALM));

        let mut conn = open(Settings::default());
        let mut bytes = frame(0x1, 0, 1, &GET);
        bytes.extend((0..100).flat_map(|_| frame(0x9, 0, 1, &[])));
        let (_, _, err) = run(&mut conn, &bytes);
        assert_eq!(err.map(|e| e.reason()), Some(Reason::ENHANCE_YOUR_CALM));
    }
}
