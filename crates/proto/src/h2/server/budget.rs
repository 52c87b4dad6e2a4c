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

    /// A stream refused for being over `max_concurrent_streams` (RFC 9113 §5.1.2): its header
    /// block was decoded for nothing, so it costs a control-frame token, as other blocks that
    /// bring no request do. It is counted in a run that the next stream the server takes
    /// ends (see [`Connection::reset_costs`]).
    pub(super) fn refuse(&mut self) -> Result<(), Fault> {
        self.spend_control()?;
        self.refused_in_a_row = self.refused_in_a_row.saturating_add(1);
        Ok(())
    }

    /// Whether a reset for `reason` spends the reset budget. Every stream error does but a
    /// refusal within a run of at most `max_concurrent_streams`: a client that opens streams
    /// as it sees others end may race the limit (its view of which streams are open lags the
    /// server's, and before our SETTINGS it may assume any limit), sending up to a limit's
    /// worth too many, then waits for one to end; its next stream is taken and the run starts
    /// again. A client that keeps opening streams it is refused is past the run at once, and
    /// each refusal then costs what any other stream error costs.
    pub(super) fn reset_costs(&self, reason: Reason) -> bool {
        reason != Reason::REFUSED_STREAM
            || self.refused_in_a_row > self.settings.max_concurrent_streams
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

    /// DATA on a stream the server reset is ignored but its window given back, a
    /// WINDOW_UPDATE per frame: it was free, so a client could keep the server writing
    /// updates for ever. Now the control budget pays for each; the few frames an honest client
    /// had in flight when the reset came are answered as before.
    #[test]
    fn data_on_a_reset_stream_counts_in_the_control_budget() {
        let mut conn = open(Settings {
            max_control_frames: 20,
            ..Settings::default()
        });
        run(&mut conn, &headers(1, 0, &POST));
        conn.reset(1, Reason::CANCEL, &mut Vec::new());
        let in_flight: Vec<u8> = (0..5).flat_map(|_| data(1, 0, &[7; 100])).collect();
        let (events, out, err) = run(&mut conn, &in_flight);
        assert_eq!((events, err), (vec![], None));
        let updates: Vec<_> = frames(&out)
            .into_iter()
            .map(|(h, p)| (h.kind, h.stream, p))
            .collect();
        let update = (Kind::WindowUpdate, 0, 100u32.to_be_bytes().to_vec());
        assert_eq!(updates, vec![update; 5]);
        let flood: Vec<u8> = (0..100).flat_map(|_| data(1, 0, &[7])).collect();
        let (_, out, err) = run(&mut conn, &flood);
        assert_eq!(err.map(|e| e.reason()), Some(Reason::ENHANCE_YOUR_CALM));
        assert_eq!(goaway_code(&out), Some(Reason::ENHANCE_YOUR_CALM));
    }

    /// A client that opens streams as fast as it sees others end races the concurrency limit:
    /// here, with a limit of 2, it opens two too many each round and they are refused. Every
    /// refusal spent the reset budget, so 3 rounds took a budget of 5 and the honest client got
    /// GOAWAY; now refusals within a run of the limit's size (no stream taken between them)
    /// are free of it. A client that goes on opening streams past the run is stopped.
    #[test]
    fn racing_the_stream_limit_is_not_a_reset_flood() {
        let settings = Settings {
            max_concurrent_streams: 2,
            max_reset_streams: 5,
            ..Settings::default()
        };
        let mut conn = open(settings.clone());
        let mut next = 1;
        let open_stream = |conn: &mut Connection, next: &mut u32| {
            let (events, out, err) = run(conn, &headers(*next, flags::END_STREAM, &GET));
            *next += 2;
            assert_eq!(err, None);
            (events.len(), rst_code(&out, *next - 2))
        };
        let mut open_ids = std::collections::VecDeque::from([1, 3]);
        for _ in 0..2 {
            assert_eq!(open_stream(&mut conn, &mut next), (1, None));
        }
        for _round in 0..20 {
            // Two too many: refused.
            for _ in 0..2 {
                let refused = Some(Reason::REFUSED_STREAM);
                assert_eq!(open_stream(&mut conn, &mut next), (0, refused));
            }
            // The oldest open stream is answered and ends; the client takes its place.
            let oldest = open_ids.pop_front().unwrap();
            let mut out = Vec::new();
            let mut block = conn.headers(oldest, &mut out).unwrap();
            block.status(204);
            block.finish(true);
            open_ids.push_back(next);
            assert_eq!(open_stream(&mut conn, &mut next), (1, None));
        }

        let mut conn = open(settings);
        run(&mut conn, &headers(1, flags::END_STREAM, &GET));
        run(&mut conn, &headers(3, flags::END_STREAM, &GET));
        let flood: Vec<u8> = (0..10)
            .flat_map(|i| headers(5 + 2 * i, flags::END_STREAM, &GET))
            .collect();
        let (_, out, err) = run(&mut conn, &flood);
        assert_eq!(err.map(|e| e.reason()), Some(Reason::ENHANCE_YOUR_CALM));
        // The limit's run (2), then the reset budget (5), then the GOAWAY.
        let refused = frames(&out)
            .iter()
            .filter(|(h, _)| h.kind == Kind::RstStream)
            .count();
        assert_eq!(refused, 2 + 5);
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
