//! The token buckets behind the connection's defences against floods of control frames and
//! of stream resets (see the parent module's docs).

use std::time::{Duration, Instant};

use super::{conn_err, Connection, Fault};
use crate::h2::frame::Reason;

/// A budget refills in full over this period.
const BUDGET_REFILL: Duration = Duration::from_secs(10);

/// WINDOW_UPDATE frames each DATA frame the server sends earns the client, plus one per this
/// many bytes of it: a client gives window back on the stream and on the connection for each
/// frame it reads, or for every few KiB (Go's client: every 4 KiB).
const UPDATES_PER_FRAME: u64 = 2;
const UPDATE_BYTES: usize = 1024;

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

    /// A WINDOW_UPDATE: free while the DATA the server sent has earned the client some, a
    /// control frame beyond that (a flood of tiny updates opens nothing worth the work).
    pub(super) fn spend_window_update(&mut self) -> Result<(), Fault> {
        match self.updates_earned.checked_sub(1) {
            Some(left) => {
                self.updates_earned = left;
                Ok(())
            }
            None => self.spend_control(),
        }
    }

    /// A DATA frame of `len` bytes went out: the client may answer it with WINDOW_UPDATEs.
    pub(super) fn earn_window_updates(&mut self, len: usize) {
        self.updates_earned += UPDATES_PER_FRAME + (len / UPDATE_BYTES) as u64;
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

    /// Frames that cost the server work and bring no request, and were counted in no budget:
    /// WINDOW_UPDATEs (a stream of one-byte updates kept the server busy for ever), PING and
    /// SETTINGS ACKs, GOAWAYs, frames of unknown types, header blocks of refused streams.
    #[test]
    fn floods_of_frames_that_were_free_are_stopped() {
        type Flood = fn(u32) -> Vec<u8>;
        let floods: [(&str, Flood); 6] = [
            ("WINDOW_UPDATE", |_| frame(0x8, 0, 0, &1u32.to_be_bytes())),
            ("PING ACK", |_| frame(0x6, flags::ACK, 0, &[0; 8])),
            ("SETTINGS ACK", |_| frame(0x4, flags::ACK, 0, &[])),
            ("GOAWAY", |_| frame(0x7, 0, 0, &[0; 8])),
            ("unknown type", |_| frame(0xfa, 0, 0, b"grease")),
            ("HEADERS after GOAWAY", |i| {
                headers(3 + 2 * i, flags::END_STREAM, &GET)
            }),
        ];
        for (what, flood) in floods {
            let mut conn = open(Settings {
                max_control_frames: 20,
                ..Settings::default()
            });
            // Keeps the connection from being idle and lets HEADERS be refused silently.
            run(&mut conn, &headers(1, 0, &POST));
            conn.go_away(&mut Vec::new());
            let bytes: Vec<u8> = (0..100).flat_map(flood).collect();
            let (_, out, err) = run(&mut conn, &bytes);
            assert_eq!(
                err.map(|e| e.reason()),
                Some(Reason::ENHANCE_YOUR_CALM),
                "{what}"
            );
            assert_eq!(goaway_code(&out), Some(Reason::ENHANCE_YOUR_CALM), "{what}");
        }
    }

    /// A client that gives window back for every DATA frame it reads, on the stream and on
    /// the connection, and in 4 KiB steps, sends far more WINDOW_UPDATEs than the control
    /// budget over a long response: the DATA the server sent paid for them.
    #[test]
    fn window_updates_answering_data_are_not_a_flood() {
        let mut conn = open(Settings {
            max_control_frames: 20,
            ..Settings::default()
        });
        run(&mut conn, &headers(1, flags::END_STREAM, &GET));
        let mut out = Vec::new();
        let mut block = conn.headers(1, &mut out).unwrap();
        block.status(200);
        block.finish(false);
        let frame_size = frame::DEFAULT_MAX_FRAME_SIZE as usize;
        let body = vec![b'x'; frame_size];
        for _ in 0..200 {
            assert_eq!(conn.send_data(1, &body, false, &mut out), frame_size);
            let mut updates = Vec::new();
            for _ in 0..frame_size / 4096 {
                updates.extend(frame(0x8, 0, 0, &4096u32.to_be_bytes()));
                updates.extend(frame(0x8, 0, 1, &4096u32.to_be_bytes()));
            }
            let (_, _, err) = run(&mut conn, &updates);
            assert_eq!(err, None);
        }
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
