//! The prober's side of the UDP probe stream: which probes went out, which
//! came back, and a [`UdpProbeReport`] per period.
//!
//! A probe is *resolved* when its echo arrives, or when it is given up as
//! lost: the echo of a probe sent [`REORDER_PROBES`] later came back first,
//! or the loss timeout passed. A report covers the probes resolved since
//! the previous one: `sent` counts them, `lost` those lost on the forward
//! path, `rtt` is the mean RTT of those echoed. Resolution goes in sequence
//! order, so a probe is reported once, and `lost <= sent` always.
//!
//! Forward and reverse: the prober is the end that receives the data (the
//! SOBAS paper, IV-B: the receiver probes, the sender echoes), so an echo travels
//! the data's forward path. Each echo says which of the 64 probes before it
//! reached the responder ([`Echo::seen`]): a lost probe that did reach it
//! lost its echo on the forward path and counts in `lost`; one that did not
//! was lost on the way out (the reverse path, where only ACKs go) and does
//! not. A probe given up with no later echo to tell (the forward path went
//! silent) counts as forward: a dead path is a congested one.
//!
//! Ignored (and counted in [`LedgerTotals`]): an echo whose probe was
//! already resolved (late), a second echo (duplicate), an echo of a probe
//! never sent or with the wrong stamp (unknown: stray or forged).

use std::collections::VecDeque;
use std::time::Duration;

use super::wire::{Echo, Probe};
use super::{REORDER_PROBES, SeenWindow};
use rightsize_tune::UdpProbeReport;

/// Probes kept while unresolved, at most; beyond it the oldest is given up
/// as lost. At one per 10 ms that is about 11 minutes, far above any loss
/// timeout: only a caller that feeds no time could reach it.
const MAX_OUTSTANDING: usize = 1 << 16;

/// How many earlier probes an echo's [`Echo::seen`] covers.
const SEEN_BITS: u64 = 64;

/// What became of one echo.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EchoVerdict {
    /// Taken, with the probe's RTT.
    Accepted {
        /// Echo arrival minus probe send time.
        rtt: Duration,
    },
    /// Its probe was already resolved (given up as lost, or echoed and
    /// reported).
    Late,
    /// Its probe was already echoed (among the last 128 probes echoed;
    /// older copies count as late).
    Duplicate,
    /// No probe was sent with this sequence number and stamp.
    Unknown,
}

/// Counts since the ledger was made, for telemetry.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LedgerTotals {
    /// Probes sent.
    pub sent: u64,
    /// Echoes accepted.
    pub echoed: u64,
    /// Probes given up whose echo was lost on the forward path (or that
    /// nothing showed reached the responder; see the module docs).
    pub lost_forward: u64,
    /// Probes given up that never reached the responder.
    pub lost_reverse: u64,
    /// Echoes that came after their probe was resolved.
    pub late: u64,
    /// Second and later echoes of one probe.
    pub duplicate: u64,
    /// Echoes of no probe sent, or with a wrong stamp.
    pub unknown: u64,
}

#[derive(Debug, Clone)]
struct Outstanding {
    seq: u64,
    sent_at: Duration,
    rtt: Option<Duration>,
    /// Whether a later echo said the responder had it; `None` until one
    /// says anything.
    reached: Option<bool>,
}

#[derive(Debug, Clone, Copy, Default)]
struct Period {
    resolved: u32,
    lost_forward: u32,
    rtt_sum: Duration,
    rtts: u32,
}

/// The UDP probe stream's bookkeeping; see the module docs.
#[derive(Debug, Clone)]
pub struct ProbeLedger {
    key: u64,
    loss_timeout: Duration,
    next_seq: u64,
    /// Unresolved probes, oldest first, consecutive sequence numbers.
    outstanding: VecDeque<Outstanding>,
    highest_echoed: Option<u64>,
    /// The probes echoed lately, to tell a duplicate from a late echo
    /// once the probe is resolved.
    echoed: SeenWindow,
    period: Period,
    totals: LedgerTotals,
}

impl ProbeLedger {
    /// A ledger whose probes carry stamps derived from `key` (a random
    /// number, so that an off-path sender cannot forge echoes), giving up
    /// on a probe `loss_timeout` after it was sent at the latest
    /// ([`super::DEFAULT_LOSS_TIMEOUT`]).
    pub fn new(key: u64, loss_timeout: Duration) -> Self {
        ProbeLedger {
            key,
            loss_timeout,
            next_seq: 0,
            outstanding: VecDeque::new(),
            highest_echoed: None,
            echoed: SeenWindow::new(),
            period: Period::default(),
            totals: LedgerTotals::default(),
        }
    }

    /// Records a probe sent at `at` and returns it, to be written with
    /// [`super::Message::Probe`].
    pub fn send(&mut self, at: Duration) -> Probe {
        self.resolve(at);
        if self.outstanding.len() >= MAX_OUTSTANDING
            && let Some(oldest) = self.outstanding.pop_front()
        {
            self.retire(&oldest);
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        let stamp = self.key ^ seq;
        self.outstanding.push_back(Outstanding {
            seq,
            sent_at: at,
            rtt: None,
            reached: None,
        });
        self.totals.sent += 1;
        Probe { seq, stamp }
    }

    /// Takes an echo that arrived at `at`.
    pub fn on_echo(&mut self, echo: &Echo, at: Duration) -> EchoVerdict {
        let verdict = self.classify(echo, at);
        match verdict {
            EchoVerdict::Accepted { .. } => self.totals.echoed += 1,
            EchoVerdict::Late => self.totals.late += 1,
            EchoVerdict::Duplicate => self.totals.duplicate += 1,
            EchoVerdict::Unknown => self.totals.unknown += 1,
        }
        self.resolve(at);
        verdict
    }

    fn classify(&mut self, echo: &Echo, at: Duration) -> EchoVerdict {
        if echo.seq >= self.next_seq || echo.stamp != self.key ^ echo.seq {
            return EchoVerdict::Unknown;
        }
        if self.echoed.contains(echo.seq) {
            return EchoVerdict::Duplicate;
        }
        let Some(index) = self
            .outstanding
            .front()
            .and_then(|front| echo.seq.checked_sub(front.seq))
        else {
            return EchoVerdict::Late;
        };
        let Some(probe) = usize::try_from(index)
            .ok()
            .and_then(|i| self.outstanding.get_mut(i))
        else {
            return EchoVerdict::Unknown;
        };
        let rtt = at.saturating_sub(probe.sent_at);
        probe.rtt = Some(rtt);
        self.echoed.record(echo.seq);
        self.highest_echoed = self.highest_echoed.max(Some(echo.seq));
        // What the echo says about the probes before it.
        for earlier in self.outstanding.iter_mut() {
            let Some(back) = echo.seq.checked_sub(earlier.seq + 1) else {
                break;
            };
            if back >= SEEN_BITS || earlier.rtt.is_some() {
                continue;
            }
            let seen = echo.seen >> back & 1 == 1;
            earlier.reached = Some(earlier.reached.unwrap_or(false) || seen);
        }
        EchoVerdict::Accepted { rtt }
    }

    /// Resolves, oldest first, every probe whose fate is known at `now`.
    fn resolve(&mut self, now: Duration) {
        while let Some(front) = self.outstanding.front() {
            let overtaken = self
                .highest_echoed
                .is_some_and(|h| h >= front.seq.saturating_add(REORDER_PROBES));
            let timed_out = now >= front.sent_at.saturating_add(self.loss_timeout);
            if front.rtt.is_none() && !overtaken && !timed_out {
                break;
            }
            if let Some(probe) = self.outstanding.pop_front() {
                self.retire(&probe);
            }
        }
    }

    /// Counts a resolved probe in the period: echoed, or lost.
    fn retire(&mut self, probe: &Outstanding) {
        self.period.resolved = self.period.resolved.saturating_add(1);
        if let Some(rtt) = probe.rtt {
            self.period.rtt_sum = self.period.rtt_sum.saturating_add(rtt);
            self.period.rtts += 1;
        } else if probe.reached == Some(false) {
            self.totals.lost_reverse += 1;
        } else {
            self.period.lost_forward += 1;
            self.totals.lost_forward += 1;
        }
    }

    /// The report of the probes resolved since the previous report (or
    /// since the start), made at `now`.
    pub fn report(&mut self, now: Duration) -> UdpProbeReport {
        self.resolve(now);
        let period = std::mem::take(&mut self.period);
        UdpProbeReport {
            at: now,
            sent: period.resolved,
            lost: period.lost_forward,
            rtt: (period.rtts > 0).then(|| period.rtt_sum / period.rtts),
        }
    }

    /// Counts since the ledger was made.
    pub fn totals(&self) -> LedgerTotals {
        self.totals
    }

    /// Probes sent and not yet resolved.
    pub fn outstanding(&self) -> usize {
        self.outstanding.len()
    }
}
