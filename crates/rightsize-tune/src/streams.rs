//! How many parallel streams a transfer uses when it chooses itself
//! (`-P auto`). Pure: the caller runs each trial and reports its goodput.
//!
//! One loss-based TCP stream on a lossy long path is held far below the
//! rate (Mathis: about MSS / (RTT x sqrt(p))); N streams share the losses
//! and together go about N times faster, until they fill the bottleneck,
//! where more streams only add connections. So the chooser climbs:
//! [`FIRST`] streams (what GridFTP users ask for with `-p 4`), then twice
//! as many as long as doubling gains at least [`GAIN`] (a quarter more
//! goodput), up to [`MAX_AUTO`]. It then keeps the streams running unless
//! fewer did clearly better ([`KEEP`]): a restart costs a login and a slow
//! start, and with a tuner per stream more streams cost little memory
//! (each window follows its stream's share). Each trial is measured after
//! its warm-up ([`phase_length`] long, the second half counted), so slow
//! start does not count against more streams.

use std::time::Duration;

/// Streams of the first trial.
pub const FIRST: u32 = 4;
/// Most streams `auto` opens.
pub const MAX_AUTO: u32 = 16;
/// What doubling the streams must gain to go on: 1.25 x the goodput.
pub const GAIN: f64 = 1.25;
/// The streams running are kept unless fewer made more than 1 / KEEP
/// times their goodput (0.9: a tenth more).
pub const KEEP: f64 = 0.9;

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

    /// A trial of `streams` made `goodput_bps`; what comes next. A
    /// [`Choice::Settle`] on `streams` itself means: go on as it is.
    pub fn measured(&mut self, streams: u32, goodput_bps: f64) -> Choice {
        let previous = self.trials.last().copied();
        self.trials.push((streams, goodput_bps));
        let doubled = streams.saturating_mul(2);
        match previous {
            Some((_, before)) if goodput_bps < GAIN * before => {
                Choice::Settle(self.kept(streams, goodput_bps))
            }
            _ if doubled > MAX_AUTO => Choice::Settle(streams),
            _ => Choice::Try(doubled),
        }
    }

    /// The trials, in order: streams and goodput.
    pub fn trials(&self) -> &[(u32, f64)] {
        &self.trials
    }

    /// `streams` (running, `goodput_bps`), unless an earlier trial made
    /// clearly more: then that one's count.
    fn kept(&self, streams: u32, goodput_bps: f64) -> u32 {
        let best = self
            .trials
            .iter()
            .copied()
            .reduce(|a, b| if b.1 > a.1 { b } else { a });
        match best {
            Some((fewer, best_bps)) if goodput_bps < KEEP * best_bps => fewer,
            _ => streams,
        }
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
        assert_eq!(c.measured(FIRST, 110e6), Choice::Try(8));
        assert_eq!(c.measured(8, 150e6), Choice::Try(16));
        assert_eq!(c.measured(16, 160e6), Choice::Settle(16));
        assert_eq!(c.trials().len(), 3);
    }

    #[test]
    fn more_streams_that_go_clearly_slower_are_dropped() {
        let mut c = Chooser::new();
        assert_eq!(c.measured(4, 190e6), Choice::Try(8));
        assert_eq!(c.measured(8, 185e6), Choice::Settle(8));
        let mut c = Chooser::new();
        assert_eq!(c.measured(4, 190e6), Choice::Try(8));
        assert_eq!(c.measured(8, 150e6), Choice::Settle(4));
    }

    #[test]
    fn it_stops_at_the_most_it_may_open() {
        let mut c = Chooser::new();
        let mut n = FIRST;
        let mut rate = 10e6;
        loop {
            match c.measured(n, rate) {
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
