//! What a worker records: latency histograms, counters, status codes.
//!
//! Each worker owns one [`Recorder`]; its connection tasks record into it without any
//! synchronisation. Histograms are recorded per interval (one second) and folded into the
//! run's totals at each tick, so a response costs one histogram record per latency kind.

use hdrhistogram::Histogram;

/// Highest latency the histograms track: one hour, in microseconds. Longer values are clamped.
const MAX_LATENCY_US: u64 = 3_600_000_000;

/// A latency histogram: microsecond resolution, 3 significant digits.
pub(crate) fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_LATENCY_US, 3).expect("static histogram bounds are valid")
}

/// Why a request did not get a response. One per failed request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ErrorKind {
    /// The TCP connection could not be opened.
    Connect,
    /// A read or write on the connection failed for another reason than the server ending it
    /// (no route to host, for one).
    Io,
    /// The server ended the connection (a close, a reset, a broken pipe) before the response
    /// was complete, or before any of it: a request written on a connection the server had
    /// already closed counts here too.
    Closed,
    /// The response was not valid HTTP/1.1 (head or body framing), or the server broke the
    /// HTTP/2 protocol (a malformed frame, a header block HPACK cannot decode).
    Parse,
    /// No response within the timeout.
    Timeout,
    /// HTTP/2: the server reset the request's stream (RST_STREAM).
    Reset,
}

pub(crate) const ERROR_KINDS: usize = 6;

/// Running totals of a worker (or of a whole run, once merged).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    /// Complete responses counted (any status).
    pub responses: u64,
    /// Of which not 2xx.
    pub non_2xx: u64,
    pub errors: [u64; ERROR_KINDS],
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// Connections opened (successfully).
    pub connections: u64,
    /// Requests written during the measured window (rate mode: with their scheduled time in
    /// the window).
    pub sent: u64,
    /// Requests with neither a response nor an error when the window ended. Rate mode, timed
    /// runs: scheduled in the window (in flight, or never sent because their connection was
    /// still waiting). Otherwise: written in the window and still in flight.
    pub unanswered: u64,
}

impl Counts {
    pub(crate) fn error_total(&self) -> u64 {
        self.errors.iter().sum()
    }

    pub(crate) fn add(&mut self, other: &Counts) {
        self.responses += other.responses;
        self.non_2xx += other.non_2xx;
        for (a, b) in self.errors.iter_mut().zip(other.errors) {
            *a += b;
        }
        self.bytes_read += other.bytes_read;
        self.bytes_written += other.bytes_written;
        self.connections += other.connections;
        self.sent += other.sent;
        self.unanswered += other.unanswered;
    }
}

/// Latency histograms of one kind of measurement.
#[derive(Clone, Debug)]
pub(crate) struct Latencies {
    /// Latency as reported: from the intended send time in rate mode, from the actual send
    /// (or connect, without keep-alive) in closed-loop mode.
    pub latency: Histogram<u64>,
    /// Rate mode: from the actual send time (what a closed-loop tool would report).
    pub service: Option<Histogram<u64>>,
    /// Rate mode: how late each request was sent after its scheduled time.
    pub lag: Option<Histogram<u64>>,
}

impl Latencies {
    pub(crate) fn new(rate_mode: bool) -> Latencies {
        Latencies {
            latency: new_histogram(),
            service: rate_mode.then(new_histogram),
            lag: rate_mode.then(new_histogram),
        }
    }

    pub(crate) fn add(&mut self, other: &Latencies) {
        // The histograms share their bounds, so adding cannot fail.
        let _ = self.latency.add(&other.latency);
        if let (Some(a), Some(b)) = (&mut self.service, &other.service) {
            let _ = a.add(b);
        }
        if let (Some(a), Some(b)) = (&mut self.lag, &other.lag) {
            let _ = a.add(b);
        }
    }

    pub(crate) fn reset(&mut self) {
        self.latency.reset();
        if let Some(h) = &mut self.service {
            h.reset();
        }
        if let Some(h) = &mut self.lag {
            h.reset();
        }
    }
}

/// Latencies under this many microseconds are first counted in a plain array (see
/// [`ExactCounts`]).
const EXACT_US: usize = 8192;

/// Exact counts of the latencies under [`EXACT_US`] microseconds recorded since the last tick,
/// folded into a histogram at the tick. Counting is an index and an add, where a histogram
/// record is about 60 instructions (bucket arithmetic, min, max and total); the fold records
/// each distinct value once with its count, so the histogram ends up the same.
#[derive(Debug)]
struct ExactCounts {
    counts: Vec<u64>,
    /// The smallest and the largest latency counted since the last fold (`lo > hi`: none).
    lo: usize,
    hi: usize,
}

impl ExactCounts {
    fn new() -> ExactCounts {
        ExactCounts {
            counts: vec![0; EXACT_US],
            lo: EXACT_US,
            hi: 0,
        }
    }

    /// Counts `n` latencies of `us` microseconds, into `histogram` if they are not small.
    #[inline]
    fn record(&mut self, histogram: &mut Histogram<u64>, us: u64, n: u64) {
        match self.counts.get_mut(us as usize) {
            Some(count) => {
                *count += n;
                self.lo = self.lo.min(us as usize);
                self.hi = self.hi.max(us as usize);
            }
            None => {
                let _ = histogram.record_n(us.min(MAX_LATENCY_US), n);
            }
        }
    }

    /// Moves the counts into `histogram`, leaving none.
    fn fold_into(&mut self, histogram: &mut Histogram<u64>) {
        if self.lo > self.hi {
            return;
        }
        for (us, count) in (self.lo..).zip(&mut self.counts[self.lo..=self.hi]) {
            if *count > 0 {
                // Under `EXACT_US`, so inside the histogram's bounds.
                let _ = histogram.record_n(us as u64, *count);
                *count = 0;
            }
        }
        (self.lo, self.hi) = (EXACT_US, 0);
    }
}

/// One worker's measurements.
#[derive(Debug)]
pub(crate) struct Recorder {
    /// Since the last tick (once [`take_interval`](Self::take_interval) has folded `exact`
    /// into it).
    pub interval: Latencies,
    /// Up to the last tick.
    pub total: Latencies,
    pub counts: Counts,
    /// Responses per status code (index = code, 100..=999).
    pub status: Vec<u64>,
    /// The small latencies of the interval, not yet in its histograms.
    exact_latency: ExactCounts,
    /// Rate mode: the same for the service time and the send lag.
    exact_rate: Option<[ExactCounts; 2]>,
}

impl Recorder {
    pub(crate) fn new(rate_mode: bool) -> Recorder {
        Recorder {
            interval: Latencies::new(rate_mode),
            total: Latencies::new(rate_mode),
            counts: Counts::default(),
            status: vec![0; 1000],
            exact_latency: ExactCounts::new(),
            exact_rate: rate_mode.then(|| [ExactCounts::new(), ExactCounts::new()]),
        }
    }

    /// Counts `n` responses that share one latency in microseconds (responses completed by
    /// the same read of the same batch). `rate` is the service time and send lag, in rate mode.
    /// Their statuses are counted with [`status`](Self::status).
    #[inline]
    pub(crate) fn responses(&mut self, latency_us: u64, n: u64, rate: Option<(u64, u64)>) {
        self.counts.responses += n;
        self.exact_latency
            .record(&mut self.interval.latency, latency_us, n);
        if let (Some((service_us, lag_us)), Some([service, lag])) = (rate, &mut self.exact_rate) {
            if let Some(h) = &mut self.interval.service {
                service.record(h, service_us, n);
            }
            if let Some(h) = &mut self.interval.lag {
                lag.record(h, lag_us, n);
            }
        }
    }

    /// Counts `n` responses with status `code`.
    #[inline]
    pub(crate) fn status(&mut self, code: u16, n: u64) {
        if !(200..300).contains(&code) {
            self.counts.non_2xx += n;
        }
        self.status[usize::from(code).min(999)] += n;
    }

    /// Counts a request that had waited `waited_us` without an answer when the window ended.
    /// Its latency is at least that, and it goes into the latency as that: left out, a stall
    /// lasting to the end would not show in the percentiles at all.
    pub(crate) fn unanswered(&mut self, waited_us: u64) {
        self.counts.unanswered += 1;
        self.exact_latency
            .record(&mut self.interval.latency, waited_us, 1);
    }

    pub(crate) fn errors(&mut self, kind: ErrorKind, requests: u64) {
        self.counts.errors[kind as usize] += requests;
    }

    /// Folds the interval into the totals and returns a copy of it (for the interval log and
    /// the progress line), leaving the interval empty.
    pub(crate) fn take_interval(&mut self) -> Latencies {
        self.exact_latency.fold_into(&mut self.interval.latency);
        if let Some([service, lag]) = &mut self.exact_rate {
            if let Some(h) = &mut self.interval.service {
                service.fold_into(h);
            }
            if let Some(h) = &mut self.interval.lag {
                lag.fold_into(h);
            }
        }
        self.total.add(&self.interval);
        let out = self.interval.clone();
        self.interval.reset();
        out
    }
}

/// Microseconds in a duration, for recording.
#[inline]
pub(crate) fn micros(d: std::time::Duration) -> u64 {
    d.as_micros().min(u128::from(u64::MAX)) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_and_folds() {
        let mut r = Recorder::new(true);
        r.responses(100, 1, Some((90, 10)));
        r.status(200, 1);
        r.responses(2_000, 1, Some((1_000, 1_000)));
        r.status(503, 1);
        r.errors(ErrorKind::Parse, 1);
        assert_eq!(r.counts.responses, 2);
        assert_eq!(r.counts.non_2xx, 1);
        assert_eq!(r.counts.error_total(), 1);
        assert_eq!(r.status[200] + r.status[503], 2);
        let interval = r.take_interval();
        assert_eq!(interval.latency.len(), 2);
        assert_eq!(r.interval.latency.len(), 0);
        assert_eq!(r.total.latency.len(), 2);
        assert_eq!(r.total.service.as_ref().unwrap().max(), 1_000);
    }

    #[test]
    fn exact_counts_fold_into_the_same_histogram() {
        let mut r = Recorder::new(true);
        let mut want = new_histogram();
        let values = [
            0,
            1,
            57,
            57,
            2_047,
            2_048,
            8_191,
            8_192,
            123_456,
            MAX_LATENCY_US + 1,
        ];
        for (i, &us) in values.iter().enumerate() {
            let n = i as u64 + 1;
            r.responses(us, n, Some((us, us)));
            want.record_n(us.min(MAX_LATENCY_US), n).unwrap();
        }
        let interval = r.take_interval();
        for h in [
            &interval.latency,
            interval.service.as_ref().unwrap(),
            &r.total.latency,
        ] {
            assert_eq!(h, &want);
        }
        // The fold left nothing behind for the next interval.
        r.responses(57, 1, None);
        let next = r.take_interval();
        assert_eq!(next.latency.len(), 1);
        assert_eq!(r.total.latency.len(), want.len() + 1);
    }

    #[test]
    fn resolution_is_three_digits_of_microseconds() {
        let mut h = new_histogram();
        h.record(123_456).unwrap();
        assert!(h.equivalent(h.max(), 123_456));
        assert!((h.max() as f64 - 123_456.0).abs() / 123_456.0 < 1e-3);
        h.saturating_record(u64::MAX);
        assert!(h.max() >= MAX_LATENCY_US);
    }
}
