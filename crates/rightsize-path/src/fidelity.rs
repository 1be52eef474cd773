//! Every run checks its own apparatus. Four checks, each a number measured
//! by the system layer and judged here:
//!
//! - **idle RTT**: the smallest of several idle round trips must be within
//!   1 ms + 2% of the configured round-trip delay (and never below it);
//! - **emulator CPU**: the emulator's busiest thread must have been busy
//!   less than 90% of the run, or its own queueing, not the spec, shaped the
//!   traffic;
//! - **losses**: the senders' retransmitted segments must be accounted for
//!   by packets the emulator dropped (queue overflow or random loss) and
//!   the hosts dropped themselves, with a little slack (5% and 10 segments)
//!   for tail-loss probes; more retransmissions than drops mean
//!   the emulator delayed or reordered packets enough to fool TCP;
//! - **emulator input**: the emulator must not have dropped packets before
//!   its queue (Rattan's packet sockets overflowing while it waited for a
//!   CPU): such a loss is the apparatus's, not the path's.
//!
//! A run that fails a check is invalid; results keep it, marked, and never
//! use it silently.

use std::time::Duration;

use serde::Serialize;

/// The busiest emulator thread's share of the run above which a run is flagged.
pub const CPU_LIMIT: f64 = 0.90;

/// Retransmissions allowed beyond the drops: tail-loss probes retransmit
/// without a loss, once per flight's tail.
pub const RETRANS_SLACK_SEGMENTS: u64 = 10;

/// How far above the configured RTT an idle round trip may be: 1 ms + 2%.
pub fn rtt_tolerance(configured: Duration) -> Duration {
    Duration::from_millis(1) + configured / 50
}

/// What the system layer measured for one run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Measured {
    /// The configured round-trip delay.
    pub configured_rtt: Duration,
    /// Idle round trips measured before the run.
    pub idle_rtts: Vec<Duration>,
    /// The emulator's busiest thread: CPU time over wall time, 0..1 (or
    /// more than 1 never; `None` when the emulator is the kernel's netem).
    pub emulator_cpu: Option<f64>,
    /// Packets the emulator dropped during the run (both directions).
    pub emulator_drops: Option<u64>,
    /// Packets the emulator dropped at its input, before its queue (part
    /// of `emulator_drops`); `None` when not measured.
    pub emulator_ingress_drops: Option<u64>,
    /// Segments the hosts retransmitted during the run (both hosts).
    pub retransmitted_segments: Option<u64>,
    /// Segments the hosts dropped themselves or got twice (D-SACK) during
    /// the run: retransmissions these explain are the transfer's, not the
    /// apparatus's (a receive buffer shrunk under the data in flight).
    pub host_explained_segments: Option<u64>,
}

/// The counters of one instant, read before and after a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Packets the emulator's interfaces received minus those they sent.
    pub emulator_in_minus_out: i64,
    /// `Tcp: RetransSegs` summed over both hosts.
    pub retrans_segs: u64,
    /// Segments the hosts themselves dropped or received twice, summed over
    /// both.
    pub host_explained: u64,
}

impl Measured {
    /// What a run measured from the counters read around it (`None` where
    /// the backend has none, the kernel's netem). `ingress_drops`: the
    /// emulator's input drops since the count was started just before the
    /// run, if it could be read both times.
    pub fn between(
        configured_rtt: Duration,
        idle_rtts: Vec<Duration>,
        emulator_cpu: Option<f64>,
        before: Option<Counters>,
        after: Option<Counters>,
        ingress_drops: Option<u64>,
    ) -> Measured {
        let both = before.zip(after);
        Measured {
            configured_rtt,
            idle_rtts,
            emulator_cpu,
            emulator_drops: both
                .map(|(b, a)| (a.emulator_in_minus_out - b.emulator_in_minus_out).max(0) as u64),
            emulator_ingress_drops: ingress_drops,
            retransmitted_segments: both
                .map(|(b, a)| a.retrans_segs.saturating_sub(b.retrans_segs)),
            host_explained_segments: both
                .map(|(b, a)| a.host_explained.saturating_sub(b.host_explained)),
        }
    }
}

/// The verdict on one check.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    /// `idle_rtt`, `emulator_cpu`, `losses` or `emulator_input`.
    pub name: &'static str,
    /// Passed; `None` when it could not be measured (not a failure, but said).
    pub ok: Option<bool>,
    /// One line with the numbers.
    pub detail: String,
}

/// The verdict on a run's apparatus.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fidelity {
    /// Every check.
    pub checks: Vec<Check>,
    /// No check failed.
    pub valid: bool,
    /// What was measured.
    pub measured: Measured,
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

impl Fidelity {
    /// The verdict for people: a line per check, then valid or not (with
    /// the exit code `path run` gives an invalid run).
    pub fn lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .checks
            .iter()
            .map(|check| {
                let mark = match check.ok {
                    Some(true) => "ok",
                    Some(false) => "FAILED",
                    None => "not measured",
                };
                format!("  fidelity {:<14} {mark}: {}", check.name, check.detail)
            })
            .collect();
        lines.push(if self.valid {
            "  run valid".to_owned()
        } else {
            format!(
                "  run INVALID: a fidelity check failed (exit code {})",
                crate::run::INVALID_RUN_EXIT
            )
        });
        lines
    }
}

/// Judges what was measured.
pub fn judge(measured: Measured) -> Fidelity {
    let mut checks = Vec::new();
    let configured = measured.configured_rtt;
    let tolerance = rtt_tolerance(configured);
    checks.push(match measured.idle_rtts.iter().min() {
        None => Check {
            name: "idle_rtt",
            ok: Some(false),
            detail: format!(
                "no idle round trip could be measured (configured {})",
                ms(configured)
            ),
        },
        Some(&min) => {
            let ok =
                min + Duration::from_micros(200) >= configured && min <= configured + tolerance;
            Check {
                name: "idle_rtt",
                ok: Some(ok),
                detail: format!(
                    "idle RTT {} (min of {}) vs configured {}, tolerance +{}",
                    ms(min),
                    measured.idle_rtts.len(),
                    ms(configured),
                    ms(tolerance)
                ),
            }
        }
    });
    checks.push(match measured.emulator_cpu {
        None => Check {
            name: "emulator_cpu",
            ok: None,
            detail: "emulator CPU not measured (kernel qdiscs)".to_owned(),
        },
        Some(share) => Check {
            name: "emulator_cpu",
            ok: Some(share <= CPU_LIMIT),
            detail: format!(
                "emulator's busiest thread {:.0}% busy (limit {:.0}%)",
                share * 100.0,
                CPU_LIMIT * 100.0
            ),
        },
    });
    checks.push(
        match (measured.emulator_drops, measured.retransmitted_segments) {
            (Some(drops), Some(retrans)) => {
                let host = measured.host_explained_segments.unwrap_or(0);
                // The 5% covers the tail-loss probes and RACK re-sends that
                // follow a burst of drops, wherever the drops were: a drs
                // run whose receiver pruned 338 segments retransmitted 357
                // with 6 emulator drops (quick lab, once the emulator's
                // input stopped dropping), 3 over a slack taken from the
                // emulator's drops alone.
                let explained = drops + host;
                let allowed = explained + explained / 20 + RETRANS_SLACK_SEGMENTS;
                let host_text = if host > 0 {
                    format!(", {host} dropped or received twice by the hosts")
                } else {
                    String::new()
                };
                Check {
                    name: "losses",
                    ok: Some(retrans <= allowed),
                    detail: format!(
                        "{retrans} segments retransmitted, {drops} packets dropped by the emulator{host_text}{}",
                        if retrans <= allowed {
                            ""
                        } else {
                            ": retransmissions neither the emulator's nor the hosts' drops explain"
                        }
                    ),
                }
            }
            _ => Check {
                name: "losses",
                ok: None,
                detail: "drops or retransmissions not measured".to_owned(),
            },
        },
    );
    checks.push(match measured.emulator_ingress_drops {
        None => Check {
            name: "emulator_input",
            ok: None,
            detail: "drops at the emulator's input not measured".to_owned(),
        },
        Some(0) => Check {
            name: "emulator_input",
            ok: Some(true),
            detail: "no packet dropped at the emulator's input".to_owned(),
        },
        Some(n) => Check {
            name: "emulator_input",
            ok: Some(false),
            detail: format!(
                "{n} packets dropped at the emulator's input, before its queue (it fell behind a burst): \
                 losses the path does not have"
            ),
        },
    });
    let valid = checks.iter().all(|c| c.ok != Some(false));
    Fidelity {
        checks,
        valid,
        measured,
    }
}
