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
//! connections, not memory; but streams whose doubling made the transfer
//! slower (more losses on a shallow queue, a server that shares its
//! disk) are taken away again where the transfer can ([`Choice::Settle`]
//! names fewer). Each trial is measured after its warm-up
//! ([`phase_length`] long, the second half counted, [`Trials`]), so slow
//! start does not count against more streams.

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
    /// Use this many for the rest of the transfer: the streams of the
    /// last trial, or those of the one before when it was faster.
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
            Some((fewer, before)) if goodput_bps < before => Choice::Settle(fewer),
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

/// Where a trial is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Phase {
    /// Warming up, or counting: nothing to do.
    Running,
    /// The second half begins: what it counts starts now (the rounds
    /// that find a queue, too).
    Counting,
    /// The trial is over: its goodput over the second half, bits per
    /// second; [`Trials::decide`] next.
    Over(f64),
    /// The chooser settled: no more trials.
    Settled,
}

/// The trials of a transfer in time, driven by its clock and byte count:
/// each [`phase_length`] long, its goodput counted over its second half,
/// then decided by the [`Chooser`].
#[derive(Debug, Clone, PartialEq)]
pub struct Trials {
    chooser: Chooser,
    length: Duration,
    /// When the trial began, and the bytes moved then.
    began: (Duration, u64),
    /// When its second half began, and the bytes then.
    half: Option<(Duration, u64)>,
    settled: bool,
}

impl Trials {
    /// Trials for a path of `rtt`, the first beginning at `at` with
    /// `moved` bytes moved.
    pub fn new(rtt: Duration, at: Duration, moved: u64) -> Trials {
        Trials {
            chooser: Chooser::new(),
            length: phase_length(rtt),
            began: (at, moved),
            half: None,
            settled: false,
        }
    }

    /// The trial at `at`, with `moved` bytes moved since the transfer
    /// began.
    pub fn at(&mut self, at: Duration, moved: u64) -> Phase {
        if self.settled {
            return Phase::Settled;
        }
        let elapsed = at.saturating_sub(self.began.0);
        if self.half.is_none() && elapsed >= self.length / 2 {
            self.half = Some((at, moved));
            return Phase::Counting;
        }
        if elapsed < self.length {
            return Phase::Running;
        }
        let (from, bytes) = self.half.unwrap_or(self.began);
        let seconds = at.saturating_sub(from).as_secs_f64().max(1e-3);
        Phase::Over(moved.saturating_sub(bytes) as f64 * 8.0 / seconds)
    }

    /// The trial of `streams` that made `goodput_bps` (with a queue at the
    /// bottleneck in `queued` of its counted rounds) is decided at `at`
    /// with `moved` bytes moved and `left` bytes still to move: more
    /// streams only while what is left lasts two more trials (new streams
    /// start slow). A [`Choice::Try`] begins the next trial now.
    pub fn decide(
        &mut self,
        (streams, goodput_bps, queued): (u32, f64, Option<f64>),
        (at, moved): (Duration, u64),
        left: u64,
    ) -> Choice {
        let more_allowed =
            left as f64 * 8.0 / goodput_bps.max(1.0) > 2.0 * self.length.as_secs_f64();
        let choice = match self.chooser.measured(streams, goodput_bps, queued) {
            Choice::Try(_) if !more_allowed => Choice::Settle(streams),
            choice => choice,
        };
        self.settled = matches!(choice, Choice::Settle(_));
        self.began = (at, moved);
        self.half = None;
        choice
    }

    /// No more trials: the transfer could not act on the last choice.
    pub fn settle(&mut self) {
        self.settled = true;
    }

    /// How long a trial lasts.
    pub fn length(&self) -> Duration {
        self.length
    }

    /// The trials so far, in order: streams and goodput.
    pub fn trials(&self) -> &[(u32, f64)] {
        self.chooser.trials()
    }
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
    fn streams_added_to_a_full_path_stay_unless_they_slowed_it() {
        let mut c = Chooser::new();
        assert_eq!(c.measured(4, 190e6, None), Choice::Try(8));
        assert_eq!(c.measured(8, 192e6, None), Choice::Settle(8));
        let mut c = Chooser::new();
        assert_eq!(c.measured(4, 190e6, None), Choice::Try(8));
        assert_eq!(c.measured(8, 150e6, None), Choice::Settle(4));
    }

    #[test]
    fn a_doubling_that_made_the_transfer_slower_is_taken_back() {
        let mut c = Chooser::new();
        assert_eq!(c.measured(FIRST, 120e6, Some(0.1)), Choice::Try(2 * FIRST));
        assert_eq!(
            c.measured(2 * FIRST, 110e6, Some(0.9)),
            Choice::Settle(FIRST)
        );
    }

    #[test]
    fn a_trial_counts_its_second_half_and_the_next_begins_at_the_decision() {
        let ms = Duration::from_millis;
        // 100 ms: trials of 4 s; 10 MB/s in the first two seconds (slow
        // start), 20 MB/s after.
        let mut t = Trials::new(ms(100), ms(0), 0);
        assert_eq!(t.at(ms(1000), 10_000_000), Phase::Running);
        assert_eq!(t.at(ms(2000), 20_000_000), Phase::Counting);
        assert_eq!(t.at(ms(3000), 40_000_000), Phase::Running);
        let Phase::Over(bps) = t.at(ms(4000), 60_000_000) else {
            panic!("the trial is over at 4 s");
        };
        assert!((bps - 160e6).abs() < 1.0, "{bps}");
        assert_eq!(
            t.decide((FIRST, bps, None), (ms(4000), 60_000_000), u64::MAX),
            Choice::Try(2 * FIRST)
        );
        assert_eq!(t.at(ms(5000), 80_000_000), Phase::Running);
        assert_eq!(t.at(ms(6000), 100_000_000), Phase::Counting);
        let Phase::Over(bps) = t.at(ms(8000), 150_000_000) else {
            panic!("the second trial is over at 8 s");
        };
        assert!((bps - 200e6).abs() < 1.0, "{bps}");
        // 1.25 x: it would double again, but 150 MB at 200 Mbit/s end
        // within two trials.
        assert_eq!(
            t.decide((2 * FIRST, bps, None), (ms(8000), 150_000_000), 150_000_000),
            Choice::Settle(2 * FIRST)
        );
        assert_eq!(t.at(ms(20_000), 400_000_000), Phase::Settled);
        assert_eq!(t.trials().len(), 2);
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
