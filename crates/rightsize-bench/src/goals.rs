//! From run records to summaries and verdicts, for the benchmarks on
//! emulated paths: a tuner's medians on a path (against one peer), and a
//! goal that compares one of them with another tuner's, the BDP or the
//! path's ceiling. Pure: runs in, summaries and verdicts out.

use rightsize_lab::run::paths::PathFacts;
use rightsize_lab::run::record::RunRecord;

/// The over-provisioned buffer the goals compare with.
pub const STATIC_16: &str = "static:16MiB";

/// The median of the values (the mean of the two middle ones for an even
/// count); `None` for none. NaNs sort last.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut v = values.to_vec();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    })
}

/// A ratio against its target, as one line (`  what = 0.950x (target >=
/// 0.95) met`, or `  what: no valid runs to compare, NOT met` when a value
/// is missing or the reference is zero), with whether it was met.
pub fn ratio_goal(
    what: &str,
    ours: Option<f64>,
    theirs: Option<f64>,
    met: impl Fn(f64) -> bool,
    target: &str,
) -> (String, bool) {
    match (ours, theirs) {
        (Some(a), Some(b)) if b > 0.0 => {
            let ratio = a / b;
            let ok = met(ratio);
            let verdict = if ok { "met" } else { "NOT met" };
            (
                format!("  {what} = {ratio:.3}x (target {target}) {verdict}"),
                ok,
            )
        }
        _ => (
            format!("  {what}: no valid runs to compare, NOT met"),
            false,
        ),
    }
}

/// One tuner on one path, against one peer: medians over its valid runs.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Summary {
    /// The path's name.
    pub path: String,
    /// The peer, as the runs name it (`None` for `rightsize-bench tuners`).
    pub peer: Option<String>,
    /// The tuner's text.
    pub tuner: String,
    /// Runs counted in the medians.
    pub valid: usize,
    /// Every run, counted or not.
    pub total: usize,
    /// Median goodput, bits/s.
    pub goodput_bps: Option<f64>,
    /// The lowest goodput of a valid run, bits/s.
    pub worst_goodput_bps: Option<f64>,
    /// Median peak SO_RCVBUF of the receiver, bytes.
    pub peak_rcvbuf_bytes: Option<f64>,
    /// Median peak SO_SNDBUF of the sender, bytes.
    pub peak_sndbuf_bytes: Option<f64>,
    /// Median mean SO_RCVBUF of the receiver, bytes.
    pub mean_rcvbuf_bytes: Option<f64>,
    /// Median retransmitted bytes of the sender.
    pub bytes_retrans: Option<f64>,
    /// Where the retransmissions come from when not from the sender's
    /// telemetry (`retrans_from` of the runs).
    pub retrans_from: Option<String>,
}

impl Summary {
    /// Summarises `runs`, all of one path, peer and tuner; invalid runs and
    /// runs with an error are counted in `total` only.
    pub fn of(path: &str, tuner: &str, runs: &[&RunRecord]) -> Summary {
        let valid: Vec<&RunRecord> = runs
            .iter()
            .copied()
            .filter(|r| r.valid && r.error.is_none())
            .collect();
        let values = |f: &dyn Fn(&RunRecord) -> Option<f64>| {
            valid.iter().filter_map(|r| f(r)).collect::<Vec<_>>()
        };
        let med = |f: &dyn Fn(&RunRecord) -> Option<f64>| median(&values(f));
        let goodputs = values(&|r| r.measured.goodput_bps);
        Summary {
            path: path.to_owned(),
            peer: runs.first().and_then(|r| r.peer.clone()),
            tuner: tuner.to_owned(),
            valid: valid.len(),
            total: runs.len(),
            goodput_bps: median(&goodputs),
            worst_goodput_bps: goodputs.iter().copied().min_by(f64::total_cmp),
            peak_rcvbuf_bytes: med(&|r| r.measured.peak_rcvbuf_bytes.map(|b| b as f64)),
            peak_sndbuf_bytes: med(&|r| r.measured.peak_sndbuf_bytes.map(|b| b as f64)),
            mean_rcvbuf_bytes: med(&|r| r.measured.mean_rcvbuf_bytes.map(|b| b as f64)),
            bytes_retrans: med(&|r| r.measured.bytes_retrans.map(|b| b as f64)),
            retrans_from: valid.iter().find_map(|r| r.measured.retrans_from.clone()),
        }
    }

    /// Goodput per receive buffer: Mbit/s per MB of peak SO_RCVBUF
    /// (the drsFTP paper's Fig. 6), from the medians.
    pub fn mbps_per_mb(&self) -> Option<f64> {
        match (self.goodput_bps, self.peak_rcvbuf_bytes) {
            (Some(g), Some(b)) if b > 0.0 => Some((g / 1e6) / (b / 1e6)),
            _ => None,
        }
    }

    /// The value of one metric.
    pub fn metric(&self, metric: Metric) -> Option<f64> {
        match metric {
            Metric::Goodput => self.goodput_bps,
            Metric::WorstGoodput => self.worst_goodput_bps,
            Metric::PeakRcvbuf => self.peak_rcvbuf_bytes,
            Metric::PeakSndbuf => self.peak_sndbuf_bytes,
            Metric::MeanRcvbuf => self.mean_rcvbuf_bytes,
            Metric::RetransBytes => self.bytes_retrans,
        }
    }
}

/// The summaries of every (path, peer, tuner) in `runs`: paths and tuners
/// in the order given, peers in the order they first ran.
pub fn summarise(runs: &[RunRecord], paths: &[String], tuners: &[String]) -> Vec<Summary> {
    let mut peers: Vec<Option<&str>> = Vec::new();
    for r in runs {
        if !peers.contains(&r.peer.as_deref()) {
            peers.push(r.peer.as_deref());
        }
    }
    let mut out = Vec::new();
    for path in paths {
        for peer in &peers {
            for tuner in tuners {
                let mine: Vec<&RunRecord> = runs
                    .iter()
                    .filter(|r| &r.path == path && r.peer.as_deref() == *peer && &r.tuner == tuner)
                    .collect();
                if !mine.is_empty() {
                    out.push(Summary::of(path, tuner, &mine));
                }
            }
        }
    }
    out
}

/// A value in a table: `value / scale` with `decimals`, or `-`.
pub fn cell(value: Option<f64>, scale: f64, decimals: usize) -> String {
    value.map_or_else(|| "-".to_owned(), |v| format!("{:.*}", decimals, v / scale))
}

/// A measured quantity of a tuner on a path (a median of its valid runs,
/// or their worst).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Goodput, bits/s.
    Goodput,
    /// The lowest goodput of a valid run, bits/s; compared with the
    /// reference's median goodput.
    WorstGoodput,
    /// Peak SO_RCVBUF of the receiver, bytes.
    PeakRcvbuf,
    /// Peak SO_SNDBUF of the sender, bytes.
    PeakSndbuf,
    /// Mean SO_RCVBUF of the receiver, bytes.
    MeanRcvbuf,
    /// Bytes the sender retransmitted.
    RetransBytes,
}

impl Metric {
    fn name(self) -> &'static str {
        match self {
            Metric::Goodput => "goodput",
            Metric::WorstGoodput => "worst run's goodput",
            Metric::PeakRcvbuf => "peak receive buffer",
            Metric::PeakSndbuf => "peak send buffer",
            Metric::MeanRcvbuf => "mean receive buffer",
            Metric::RetransBytes => "retransmitted bytes",
        }
    }

    /// The metric of another tuner this one is compared with.
    fn of_reference(self) -> Metric {
        match self {
            Metric::WorstGoodput => Metric::Goodput,
            other => other,
        }
    }

    fn show(self, value: f64) -> String {
        match self {
            Metric::Goodput | Metric::WorstGoodput => format!("{:.1} Mbit/s", value / 1e6),
            Metric::PeakRcvbuf | Metric::PeakSndbuf | Metric::MeanRcvbuf => {
                format!("{:.2} MB", value / 1e6)
            }
            Metric::RetransBytes => format!("{value:.0} B"),
        }
    }
}

/// What a tuner's metric is compared with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Reference {
    /// The same metric of another tuner on the same path and peer (its
    /// median goodput for [`Metric::WorstGoodput`]).
    Tuner(&'static str),
    /// The path's bandwidth-delay product, bytes.
    Bdp,
    /// The path's goodput ceiling, bits/s.
    Ceiling,
}

/// How the metric must compare with `factor x reference`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bound {
    /// `value >= factor x reference`.
    AtLeast(f64),
    /// `value <= factor x reference`.
    AtMost(f64),
    /// `value > reference`.
    MoreThan,
}

/// A goal: a bound on one tuner's metric on one path (against one peer).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Target<'a> {
    /// `1a`, `2c`, `P1`, ...
    pub id: &'static str,
    /// The path it is measured on.
    pub path: &'a str,
    /// The peer it is measured against (`None`: the tuner benchmark's
    /// rightsize ends).
    pub peer: Option<&'a str>,
    /// The tuner it judges.
    pub tuner: &'static str,
    /// What is measured.
    pub metric: Metric,
    /// Against what.
    pub reference: Reference,
    /// How.
    pub bound: Bound,
    /// Where the bound comes from, when the goal's wording gives none.
    pub note: &'static str,
}

/// A goal's outcome.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Met.
    Met,
    /// Not met.
    NotMet,
    /// Something it needs was not run or had no valid run.
    NotMeasured(String),
}

/// A goal, judged.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged<'a> {
    /// The goal.
    pub target: Target<'a>,
    /// The tuner's value and the reference value (`factor` not applied).
    pub values: Option<(f64, f64)>,
    /// The outcome.
    pub verdict: Verdict,
}

impl Judged<'_> {
    /// `value / reference`, when the reference is not zero.
    pub fn ratio(&self) -> Option<f64> {
        self.values
            .and_then(|(v, r)| if r != 0.0 { Some(v / r) } else { None })
    }

    /// One line: `goal 1a (lfn): auto goodput >= 0.95 x static:16MiB's:
    /// measured 181.0 Mbit/s vs 190.2 Mbit/s (0.952x) -> met`; against a
    /// peer, `goal P1 (lfn, curl): ...`.
    pub fn line(&self) -> String {
        let t = &self.target;
        let reference = match t.reference {
            Reference::Tuner(name) if t.metric.of_reference() != t.metric => {
                format!("{name}'s median {}", t.metric.of_reference().name())
            }
            Reference::Tuner(name) => format!("{name}'s"),
            Reference::Bdp => "the BDP".to_owned(),
            Reference::Ceiling => "the path's ceiling (rate x 1448/1500)".to_owned(),
        };
        let bound = match t.bound {
            Bound::AtLeast(f) => format!(">= {} x {reference}", factor(f)),
            Bound::AtMost(f) => format!("<= {} x {reference}", factor(f)),
            Bound::MoreThan => format!("> {reference}"),
        };
        let outcome = match (&self.verdict, self.values) {
            (Verdict::NotMeasured(why), _) => format!("not measured ({why})"),
            (_, None) => "not measured".to_owned(),
            (verdict, Some((v, r))) => format!(
                "measured {} vs {} ({}) -> {}",
                t.metric.show(v),
                t.metric.show(r),
                self.ratio()
                    .map_or_else(|| "no ratio".to_owned(), |x| format!("{x:.3}x")),
                if *verdict == Verdict::Met {
                    "met"
                } else {
                    "NOT met"
                }
            ),
        };
        let cell = match t.peer {
            Some(peer) => format!("{}, {peer}", t.path),
            None => t.path.to_owned(),
        };
        format!(
            "goal {} ({cell}): {} {} {bound}{}: {outcome}",
            t.id,
            t.tuner,
            t.metric.name(),
            t.note
        )
    }
}

fn factor(f: f64) -> String {
    if (f - 1.0 / 3.0).abs() < 1e-9 {
        "1/3".to_owned()
    } else {
        format!("{f}")
    }
}

/// Judges one goal against the summaries, with its path's facts.
pub fn judge_one<'a>(target: Target<'a>, summaries: &[Summary], facts: &PathFacts) -> Judged<'a> {
    let find = |tuner: &str| {
        summaries
            .iter()
            .find(|s| s.path == target.path && s.peer.as_deref() == target.peer && s.tuner == tuner)
    };
    let value_of = |tuner: &str, metric: Metric| -> Result<f64, String> {
        let s = find(tuner).ok_or_else(|| format!("{tuner} was not run on {}", target.path))?;
        s.metric(metric).ok_or_else(|| {
            format!(
                "no valid run of {tuner} on {} ({}/{} valid)",
                target.path, s.valid, s.total
            )
        })
    };
    let values = value_of(target.tuner, target.metric).and_then(|v| {
        let r = match target.reference {
            Reference::Tuner(other) => value_of(other, target.metric.of_reference())?,
            Reference::Bdp => facts.bdp_bytes,
            Reference::Ceiling => facts.ceiling_bps,
        };
        Ok((v, r))
    });
    match values {
        Err(why) => Judged {
            target,
            values: None,
            verdict: Verdict::NotMeasured(why),
        },
        Ok((v, r)) => {
            let met = match target.bound {
                Bound::AtLeast(f) => v >= f * r,
                Bound::AtMost(f) => v <= f * r,
                Bound::MoreThan => v > r,
            };
            Judged {
                target,
                values: Some((v, r)),
                verdict: if met { Verdict::Met } else { Verdict::NotMet },
            }
        }
    }
}
