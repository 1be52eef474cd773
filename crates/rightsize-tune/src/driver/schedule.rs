//! When the monitor wakes: telemetry ticks, the tuner's samples and this
//! end's reports to the peer, on a clock that is an argument.
//!
//! Guarantees: ticks come every interval and never pile up (a late wake-up
//! moves the next tick to one interval after it); two tuner samples are at
//! least [`MIN_TUNER_GAP`] apart, and every tick is also a sample; reports
//! come every half RTT, within [`MIN_REPORT_EVERY`] and
//! [`MAX_REPORT_EVERY`].

use std::time::Duration;

use crate::tcpinfo::TcpInfoSample;
use crate::telemetry::DEFAULT_INTERVAL;

/// The closest two tuner samples may be.
pub const MIN_TUNER_GAP: Duration = Duration::from_millis(1);

/// The shortest period of this end's reports to the peer.
pub const MIN_REPORT_EVERY: Duration = Duration::from_millis(10);

/// The longest period of this end's reports to the peer, and the period
/// while `TCP_INFO` cannot be read.
pub const MAX_REPORT_EVERY: Duration = Duration::from_millis(250);

/// The monitor's timers, as time since the data connection opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schedule {
    interval: Duration,
    next_tick: Duration,
    last_sample: Option<Duration>,
    next_report: Duration,
}

/// What is due at a wake-up.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Wake {
    /// Write a telemetry sample line.
    pub tick: bool,
    /// Send this end's report to the peer, then call
    /// [`Schedule::reported`].
    pub report: bool,
    /// Feed the tuner a sample.
    pub sample: bool,
}

impl Schedule {
    /// Ticks every `interval` (the telemetry interval), or every
    /// [`DEFAULT_INTERVAL`] without telemetry: often enough to see a
    /// buffer's peak. The first report is due at once.
    pub fn new(interval: Option<Duration>) -> Self {
        let interval = interval.unwrap_or(DEFAULT_INTERVAL);
        Schedule {
            interval,
            next_tick: interval,
            last_sample: None,
            next_report: Duration::ZERO,
        }
    }

    /// When to wake next, given when the tuner wants its next sample
    /// (`Tuner::next_wakeup`) and whether this end reports to the peer.
    pub fn next(&self, wanted: Option<Duration>, reports: bool) -> Duration {
        [
            Some(self.next_tick),
            self.tuner_due(wanted),
            reports.then_some(self.next_report),
        ]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(self.next_tick)
    }

    /// Says what is due `now` and moves the tick and sample timers past it.
    pub fn wake(&mut self, now: Duration, wanted: Option<Duration>, reports: bool) -> Wake {
        let tick = now >= self.next_tick;
        if tick {
            self.next_tick += self.interval;
            if self.next_tick <= now {
                self.next_tick = now + self.interval;
            }
        }
        let sample = self.tuner_due(wanted).is_some_and(|at| now >= at) || tick;
        if sample {
            self.last_sample = Some(now);
        }
        Wake {
            tick,
            report: reports && now >= self.next_report,
            sample,
        }
    }

    /// A report was due `now` and `info` is this end's `TCP_INFO` then:
    /// the next is due half its smoothed RTT later.
    pub fn reported(&mut self, now: Duration, info: Option<&TcpInfoSample>) {
        self.next_report = now + report_every(info);
    }

    /// When the tuner's sample is due: when it wants it, never sooner than
    /// [`MIN_TUNER_GAP`] after the previous one.
    fn tuner_due(&self, wanted: Option<Duration>) -> Option<Duration> {
        let wanted = wanted?;
        Some(match self.last_sample {
            Some(last) => wanted.max(last + MIN_TUNER_GAP),
            None => wanted,
        })
    }
}

/// Half the smoothed RTT of `info`, within [`MIN_REPORT_EVERY`] and
/// [`MAX_REPORT_EVERY`]; the longest without a reading.
pub fn report_every(info: Option<&TcpInfoSample>) -> Duration {
    match info {
        Some(info) => Duration::from_micros(u64::from(info.rtt_us) / 2)
            .clamp(MIN_REPORT_EVERY, MAX_REPORT_EVERY),
        None => MAX_REPORT_EVERY,
    }
}
