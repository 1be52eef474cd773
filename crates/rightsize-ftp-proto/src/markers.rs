//! GridFTP's progress replies during a MODE E transfer, pure: the
//! `112` perf marker, the `111` range (restart) marker, and the clock
//! that says when each is due.
//!
//! What the Globus server does, and this follows: while it receives (STOR,
//! ESTO) in MODE E it sends a perf marker and a range marker every 5
//! seconds, and a last one of each before the `226`; while it sends
//! (RETR, ERET) it sends perf markers only to a client that asked with
//! `OPTS RETR markers=N;` (every N seconds). `TREV PERF N` and `TREV
//! RESTART N` change a store's intervals. A perf marker is multi-line:
//!
//! ```text
//! 112-Perf Marker
//!  Timestamp: 1764232100.3
//!  Stripe Index: 0
//!  Stripe Bytes Transferred: 1048576
//!  Total Stripe Count: 1
//! 112 End.
//! ```
//!
//! and a range marker lists the byte ranges held, end excluded:
//! `111 Range Marker 0-3000000`.
//!
//! Guarantees: markers come only from a [`Markers`] whose
//! [`MarkerSchedule`] asks for them, so a stream-mode client (curl, ftplib)
//! never sees one when the session gives it [`MarkerSchedule::NONE`]; no
//! range marker is sent empty (`0-0`) or twice with the same ranges; time
//! is an argument, never read here.

use std::time::Duration;

use crate::Reply;
use crate::mode_e::Ranges;

/// How often a receiving server sends a `112` perf marker (the Globus
/// server's default).
pub const PERF_MARKER_INTERVAL: Duration = Duration::from_secs(5);

/// How often a receiving server sends a `111` range marker (the Globus
/// server's default).
pub const RANGE_MARKER_INTERVAL: Duration = Duration::from_secs(5);

/// Which markers a transfer sends, and how often.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MarkerSchedule {
    /// Every how long a `112` perf marker goes out; `None`: never.
    pub perf: Option<Duration>,
    /// Every how long a `111` range marker goes out; `None`: never.
    pub ranges: Option<Duration>,
}

impl MarkerSchedule {
    /// No markers: stream mode, listings, and retrieves nobody asked
    /// markers for.
    pub const NONE: MarkerSchedule = MarkerSchedule {
        perf: None,
        ranges: None,
    };

    /// A MODE E store: both markers at the Globus server's intervals.
    pub const STORE: MarkerSchedule = MarkerSchedule {
        perf: Some(PERF_MARKER_INTERVAL),
        ranges: Some(RANGE_MARKER_INTERVAL),
    };

    /// A MODE E retrieve: perf markers every `secs` seconds, none for 0
    /// (`OPTS RETR markers=N;`).
    pub fn retrieve(secs: u32) -> MarkerSchedule {
        MarkerSchedule {
            perf: every(secs),
            ranges: None,
        }
    }

    /// Whether no marker is ever sent.
    pub fn is_none(&self) -> bool {
        self.perf.is_none() && self.ranges.is_none()
    }
}

/// An interval of `secs` seconds, or `None` (never) for 0: how `OPTS RETR
/// markers=N;` and `TREV` count.
pub fn every(secs: u32) -> Option<Duration> {
    (secs > 0).then(|| Duration::from_secs(u64::from(secs)))
}

/// The `112` perf marker of this server's one stripe: `bytes` moved so
/// far, at `since_epoch` (Unix time; written in seconds with one decimal,
/// as the Globus server writes it).
pub fn perf_marker(since_epoch: Duration, bytes: u64) -> Reply {
    let lines = vec![
        "Perf Marker".to_owned(),
        format!(
            " Timestamp: {}.{}",
            since_epoch.as_secs(),
            since_epoch.subsec_millis() / 100
        ),
        " Stripe Index: 0".to_owned(),
        format!(" Stripe Bytes Transferred: {bytes}"),
        " Total Stripe Count: 1".to_owned(),
        "End.".to_owned(),
    ];
    Reply::multiline(112, lines).unwrap_or_else(|_| Reply::trusted(112, "End.".into()))
}

/// The `111` range marker for `ranges`; `None` when there are none (the
/// Globus server never sends `0-0`: its client misreads it).
pub fn range_marker(ranges: &Ranges) -> Option<Reply> {
    (!ranges.as_slice().is_empty()).then(|| Reply::trusted(111, format!("Range Marker {ranges}")))
}

/// The marker clock of one transfer: fed the time since the transfer
/// started, says which markers are due (smoltcp's `poll`/`poll_at`).
#[derive(Debug, Clone)]
pub struct Markers {
    schedule: MarkerSchedule,
    next_perf: Option<Duration>,
    next_ranges: Option<Duration>,
    sent_ranges: Ranges,
}

impl Markers {
    /// A transfer's markers; the first of each is due one interval after
    /// the start.
    pub fn new(schedule: MarkerSchedule) -> Markers {
        Markers {
            schedule,
            next_perf: schedule.perf,
            next_ranges: schedule.ranges,
            sent_ranges: Ranges::new(),
        }
    }

    /// When, counted from the transfer's start, to call [`Markers::poll`]
    /// next; `None`: never.
    pub fn poll_at(&self) -> Option<Duration> {
        match (self.next_perf, self.next_ranges) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The markers due at `elapsed` since the start, perf marker first.
    /// `since_epoch` is the wall-clock time for the perf marker's
    /// timestamp; `bytes` and `ranges` are what moved so far. Markers
    /// missed by a late call are not made up for: one of each at most.
    pub fn poll(
        &mut self,
        elapsed: Duration,
        since_epoch: Duration,
        bytes: u64,
        ranges: &Ranges,
    ) -> Vec<Reply> {
        let mut out = Vec::new();
        if let (Some(due), Some(every)) = (self.next_perf, self.schedule.perf)
            && elapsed >= due
        {
            out.push(perf_marker(since_epoch, bytes));
            self.next_perf = Some(next_after(due, every, elapsed));
        }
        if let (Some(due), Some(every)) = (self.next_ranges, self.schedule.ranges)
            && elapsed >= due
        {
            out.extend(self.ranges_if_new(ranges));
            self.next_ranges = Some(next_after(due, every, elapsed));
        }
        out
    }

    /// The last markers, before the transfer's final reply: a perf marker
    /// if the schedule has them, and a range marker if the schedule has
    /// them and the ranges changed since the last one.
    pub fn finish(&mut self, since_epoch: Duration, bytes: u64, ranges: &Ranges) -> Vec<Reply> {
        let mut out = Vec::new();
        if self.schedule.perf.is_some() {
            out.push(perf_marker(since_epoch, bytes));
        }
        if self.schedule.ranges.is_some() {
            out.extend(self.ranges_if_new(ranges));
        }
        self.next_perf = None;
        self.next_ranges = None;
        out
    }

    fn ranges_if_new(&mut self, ranges: &Ranges) -> Option<Reply> {
        if *ranges == self.sent_ranges {
            return None;
        }
        let reply = range_marker(ranges)?;
        self.sent_ranges = ranges.clone();
        Some(reply)
    }
}

/// The first multiple of `every` after `due` that is later than `now`.
fn next_after(due: Duration, every: Duration, now: Duration) -> Duration {
    if every.is_zero() {
        return now + Duration::from_secs(1);
    }
    let mut next = due + every;
    if next <= now {
        let behind = (now - due).as_nanos() / every.as_nanos();
        let skip = u32::try_from(behind).unwrap_or(u32::MAX);
        next = due + every.saturating_mul(skip.saturating_add(1));
    }
    next
}

#[cfg(test)]
mod tests;
