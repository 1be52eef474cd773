//! `rightsize doctor`'s reasoning between its measurements and the
//! verdict: which end is which, what one test says ([`RunFacts::of`]), the
//! facts the verdict reads ([`DoctorFacts::assemble`]) and the verdict as
//! text for people ([`verdict_text`]).
//!
//! Nothing here measures or prints: the binary runs the ping and the two
//! tests and hands in their numbers.

use std::fmt::Write as _;
use std::time::Duration;

use serde::Serialize;

use crate::diagnose::tcp::TcpSummary;
use crate::diagnose::verdict::{DoctorFacts, End, RunFacts, Verdict, second_half_goodput};
use crate::host::HostSettings;
use crate::units::{BitRate, human_rate};

/// One sample of a test's sending end, taken at a fixed interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SenderSample {
    /// Seconds since the test began.
    pub t_s: f64,
    /// Payload written by the sender, bytes.
    pub bytes: u64,
    /// Payload the receiver had: the bytes received, or on a sending
    /// client its `tcpi_bytes_acked` (what it wrote includes its buffer).
    pub delivered_bytes: u64,
    /// The sender's smoothed RTT, us.
    pub rtt_us: Option<u64>,
    /// The sender's delivery rate, bit/s.
    pub delivery_rate_bps: Option<u64>,
    /// Segments the sender retransmitted so far.
    pub retrans_segs: Option<u64>,
}

/// What one test measured, as [`RunFacts::of`] reads it.
#[derive(Debug, Clone, Copy)]
pub struct TestMeasured<'a> {
    /// The tuner both ends ran (`kernel`, `auto`).
    pub tune: &'a str,
    /// Whether that tuner fixes the buffers (every tuner but `kernel`).
    pub fixed_buffers: bool,
    /// Payload bits per second over the test.
    pub goodput_bps: f64,
    /// Length of the test.
    pub elapsed: Duration,
    /// Payload moved, bytes.
    pub bytes: u64,
    /// The sending end's samples over the test.
    pub samples: &'a [SenderSample],
    /// The sending end's final `TCP_INFO` summary.
    pub sender: Option<TcpSummary>,
    /// The largest `SO_SNDBUF` the sender's socket reached, bytes.
    pub sender_peak_sndbuf_bytes: Option<u64>,
}

impl RunFacts {
    /// What the verdict reads of one test.
    pub fn of(test: &TestMeasured<'_>) -> RunFacts {
        let seconds = test.elapsed.as_secs_f64();
        let peak = test
            .samples
            .iter()
            .filter_map(|s| s.delivery_rate_bps)
            .chain(test.sender.and_then(|s| s.delivery_rate_bps))
            .max();
        let delivered: Vec<(f64, u64)> = test
            .samples
            .iter()
            .map(|s| (s.t_s, s.delivered_bytes))
            .collect();
        RunFacts {
            tune: test.tune.to_owned(),
            goodput_bps: test.goodput_bps,
            seconds,
            steady_goodput_bps: second_half_goodput(&delivered, seconds, test.bytes),
            sender: test.sender,
            sender_rtt_us: test.samples.iter().filter_map(|s| s.rtt_us).collect(),
            peak_delivery_rate_bps: peak,
            fixed_buffers: test.fixed_buffers,
            sender_peak_sndbuf_bytes: test.sender_peak_sndbuf_bytes,
        }
    }
}

impl DoctorFacts {
    /// The facts of a doctor run. `sender`: which end sent; `local` and
    /// `server`: the host settings of this host and of the server (from
    /// the server's report, if any); `kernel` and `auto`: the two tests'
    /// facts, where they ran.
    pub fn assemble(
        sender: End,
        idle_rtt: Option<Duration>,
        path_rate: Option<BitRate>,
        local: HostSettings,
        server: Option<HostSettings>,
        kernel: Option<RunFacts>,
        auto: Option<RunFacts>,
    ) -> DoctorFacts {
        let (sender_host, receiver_host) = match sender {
            End::Client => (Some(local), server),
            End::Server => (server, Some(local)),
        };
        DoctorFacts {
            sender: Some(sender),
            idle_rtt,
            path_rate,
            sender_host,
            receiver_host,
            kernel,
            auto,
        }
    }

    /// Whether any test ran: without one there is no verdict.
    pub fn has_a_test(&self) -> bool {
        self.kernel.is_some() || self.auto.is_some()
    }
}

/// The verdict for people; `unseen` lists what the tests could not read
/// (each said once).
pub fn verdict_text(v: &Verdict, unseen: &[String]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "VERDICT: {}", v.kind.headline());
    let _ = writeln!(out, "  {}", v.summary);
    let n = &v.numbers;
    let ms =
        |us: Option<u64>| us.map_or_else(|| "n/a".into(), |u| format!("{:.1} ms", u as f64 / 1e3));
    let _ = writeln!(
        out,
        "  numbers ({} test): goodput {}, best {}, capacity estimate {}, idle RTT {}, RTT under load (p90) {}, loss {}",
        n.test,
        human_rate(n.goodput_bps),
        human_rate(n.best_goodput_bps),
        human_rate(n.capacity_bps),
        ms(n.base_rtt_us),
        ms(n.loaded_rtt_us),
        n.loss_rate
            .map_or_else(|| "n/a".into(), |l| format!("{:.3}%", l * 100.0)),
    );
    if !v.fixes.is_empty() {
        let _ = writeln!(out, "FIX:");
        for fix in &v.fixes {
            let _ = writeln!(out, "  on the {}: {}", fix.end.name(), fix.command);
        }
    }
    if let Some(e) = v.expected_bps {
        let after = if v.fixes.is_empty() {
            ""
        } else {
            " after the fix"
        };
        let _ = writeln!(out, "EXPECTED{after}: about {}", human_rate(e));
    }
    for note in &v.notes {
        let _ = writeln!(out, "  note: {note}");
    }
    let mut seen = std::collections::BTreeSet::new();
    for u in unseen.iter().filter(|u| seen.insert(u.as_str())) {
        let _ = writeln!(out, "  not seen: {u}");
    }
    out
}

#[cfg(test)]
mod tests;
