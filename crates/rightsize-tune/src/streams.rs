//! How many parallel streams a transfer uses when it chooses itself
//! (`-P auto`). Pure: the caller runs each trial and reports its goodput.
//!
//! One loss-based TCP stream on a lossy long path is held far below the
//! rate (Mathis: about MSS / (RTT x sqrt(p))); N streams share the losses
//! and together go about N times faster, until they fill the bottleneck,
//! where more streams only add connections. So the chooser climbs:
//! [`FIRST`] streams (what GridFTP users ask for with `-p 4`), then twice
//! as many as long as doubling gains at least [`GAIN`] (a quarter more
//! goodput), up to [`MAX_AUTO`]. It then keeps the streams running: they
//! were added to a running transfer, each with part of the file, and the
//! streams' window is sized as one flow ([`share`]), so more streams cost
//! connections, not memory. Each trial is measured after its warm-up
//! ([`phase_length`] long, the second half counted), so slow start does
//! not count against more streams.

use std::time::Duration;

pub mod share;

/// Streams of the first trial: on a lossy long path (200 Mbit/s x
/// 100 ms, 0.01% loss) four streams made 147 to 165 Mbit/s and eight 169
/// to 174, of 193 (measured); with the streams' window sized as one flow
/// ([`share`]), eight cost no more memory than four.
pub const FIRST: u32 = 8;
/// A trial that found a queue in this share of its rounds filled the
/// path: the streams stay.
pub const FULL: f64 = 0.5;
/// Most streams `auto` opens.
pub const MAX_AUTO: u32 = 16;
/// What doubling the streams must gain to go on: 1.25 x the goodput.
pub const GAIN: f64 = 1.25;

/// What to do after a trial.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Choice {
    /// Run a trial with this many streams.
    Try(u32),
    /// Use this many for the rest of the transfer.
    Settle(u32),
}

/// The trials so far.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Chooser {
    trials: Vec<(u32, f64)>,
}

impl Chooser {
    /// No trial yet: the first uses [`FIRST`] streams.
    pub fn new() -> Chooser {
        Chooser::default()
    }

    /// A trial of `streams` made `goodput_bps`; what comes next
    /// ([`Choice::Settle`] names `streams`: go on as it is).
    ///
    /// `queued` is the share of the trial's rounds that found a queue at
    /// the bottleneck ([`share::Aggregate::queued`]): from [`FULL`] on,
    /// the streams fill the path, and more would only add connections
    /// and a slow start into a full queue.
    pub fn measured(&mut self, streams: u32, goodput_bps: f64, queued: Option<f64>) -> Choice {
        let previous = self.trials.last().copied();
        self.trials.push((streams, goodput_bps));
        let doubled = streams.saturating_mul(2);
        match previous {
            _ if queued.is_some_and(|q| q >= FULL) => Choice::Settle(streams),
            Some((_, before)) if goodput_bps < GAIN * before => Choice::Settle(streams),
            _ if doubled > MAX_AUTO => Choice::Settle(streams),
            _ => Choice::Try(doubled),
        }
    }

    /// The trials, in order: streams and goodput.
    pub fn trials(&self) -> &[(u32, f64)] {
        &self.trials
    }
}

/// How long a trial lasts: 40 round trips (slow start and a few loss
/// cycles), within 2 to 10 seconds.
pub fn phase_length(rtt: Duration) -> Duration {
    (rtt * 40).clamp(Duration::from_secs(2), Duration::from_secs(10))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_doubles_while_doubling_pays_and_keeps_what_runs_when_it_stops_paying() {
        let mut c = Chooser::new();
        // A lossy path: each stream ~40 Mbit/s until 190 Mbit/s fill it.
        assert_eq!(c.measured(4, 110e6, None), Choice::Try(8));
        assert_eq!(c.measured(8, 150e6, None), Choice::Try(16));
        assert_eq!(c.measured(16, 160e6, None), Choice::Settle(16));
        assert_eq!(c.trials().len(), 3);
    }

    #[test]
    fn streams_that_keep_a_queue_at_the_bottleneck_fill_it_and_stay_as_they_are() {
        let mut c = Chooser::new();
        assert_eq!(c.measured(FIRST, 192e6, Some(0.8)), Choice::Settle(FIRST));
        let mut c = Chooser::new();
        assert_eq!(c.measured(FIRST, 160e6, Some(0.2)), Choice::Try(2 * FIRST));
        assert_eq!(
            c.measured(2 * FIRST, 190e6, Some(FULL)),
            Choice::Settle(2 * FIRST)
        );
    }

    #[test]
    fn streams_added_to_a_full_path_stay() {
        let mut c = Chooser::new();
        assert_eq!(c.measured(4, 190e6, None), Choice::Try(8));
        assert_eq!(c.measured(8, 185e6, None), Choice::Settle(8));
        let mut c = Chooser::new();
        assert_eq!(c.measured(4, 190e6, None), Choice::Try(8));
        assert_eq!(c.measured(8, 150e6, None), Choice::Settle(8));
    }

    #[test]
    fn it_stops_at_the_most_it_may_open() {
        let mut c = Chooser::new();
        let mut n = FIRST;
        let mut rate = 10e6;
        loop {
            match c.measured(n, rate, None) {
                Choice::Try(next) => {
                    assert!(next <= MAX_AUTO);
                    n = next;
                    rate *= 2.0;
                }
                Choice::Settle(settled) => {
                    assert_eq!(settled, MAX_AUTO);
                    break;
                }
            }
        }
    }

    #[test]
    fn trials_last_forty_round_trips_within_bounds() {
        assert_eq!(
            phase_length(Duration::from_millis(100)),
            Duration::from_secs(4)
        );
        assert_eq!(
            phase_length(Duration::from_millis(1)),
            Duration::from_secs(2)
        );
        assert_eq!(
            phase_length(Duration::from_secs(1)),
            Duration::from_secs(10)
        );
    }
}
