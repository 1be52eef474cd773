//! How many parallel streams a transfer uses when it chooses itself
//! (`-P auto`). Pure: the caller runs each trial and reports its goodput.
//!
//! One loss-based TCP stream on a lossy long path is held far below the
//! rate (Mathis: about MSS / (RTT x sqrt(p))); N streams share the losses
//! and together go about N times faster, until they fill the bottleneck,
//! where more streams only add queueing and memory. So the chooser climbs:
//! [`FIRST`] streams, then twice as many as long as doubling gains at
//! least [`GAIN`] (a quarter more goodput), up to [`MAX_AUTO`]; it settles
//! on the better of the last two. Each trial is measured after its
//! warm-up ([`phase_length`] long, the second half counted), so slow start
//! does not count against more streams.

use std::time::Duration;

/// Streams of the first trial.
pub const FIRST: u32 = 2;
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

    /// A trial of `streams` made `goodput_bps`; what comes next.
    pub fn measured(&mut self, streams: u32, goodput_bps: f64) -> Choice {
        let previous = self.trials.last().copied();
        self.trials.push((streams, goodput_bps));
        let doubled = streams.saturating_mul(2);
        match previous {
            _ if doubled > MAX_AUTO => Choice::Settle(self.best()),
            None => Choice::Try(doubled),
            Some((_, before)) if goodput_bps >= GAIN * before => Choice::Try(doubled),
            Some(_) => Choice::Settle(self.best()),
        }
    }

    /// The trials, in order: streams and goodput.
    pub fn trials(&self) -> &[(u32, f64)] {
        &self.trials
    }

    /// The better of the last two trials (fewer streams on a tie).
    fn best(&self) -> u32 {
        let last_two = &self.trials[self.trials.len().saturating_sub(2)..];
        last_two
            .iter()
            .copied()
            .reduce(|a, b| if b.1 > a.1 { b } else { a })
            .map_or(FIRST, |(streams, _)| streams)
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
    fn it_doubles_while_doubling_pays_and_settles_on_the_better_of_the_last_two() {
        let mut c = Chooser::new();
        // A lossy path: each stream ~40 Mbit/s until 190 Mbit/s fill it.
        assert_eq!(c.measured(FIRST, 80e6), Choice::Try(4));
        assert_eq!(c.measured(4, 150e6), Choice::Try(8));
        assert_eq!(c.measured(8, 170e6), Choice::Settle(8));
        assert_eq!(c.trials().len(), 3);
    }

    #[test]
    fn more_streams_that_go_slower_are_dropped() {
        let mut c = Chooser::new();
        assert_eq!(c.measured(2, 190e6), Choice::Try(4));
        assert_eq!(c.measured(4, 180e6), Choice::Settle(2));
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
