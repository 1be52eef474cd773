//! A scenario's runs as table rows (one per variant, tuner and size) and
//! the claims checked against them. Pure: the runs and what their
//! telemetry said come in as data.

use super::stats::{MeanCi, mean, mean_ci};
use crate::run::record::RunRecord;
use crate::scenario::Checked;

/// Bits per Mbit, bytes per MB: the tables' units.
pub const MEGA: f64 = 1e6;

/// The share of the path's ceiling a run's goodput must reach for
/// "time to 90%".
pub const CEILING_SHARE: f64 = 0.9;

/// A run as the report sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct RunView {
    /// Its line of runs.jsonl.
    pub record: RunRecord,
    /// Its variant: the record's, or "path" (a scenario without variants).
    pub variant: String,
    /// When its receiver's goodput first reached 90% of the ceiling.
    pub reach: Reach,
}

impl RunView {
    /// Whether it counts in the statistics: every fidelity check passed
    /// and nothing failed.
    pub fn is_valid(&self) -> bool {
        self.record.valid && self.record.error.is_none()
    }

    /// The transfer size the scenario asked for, bytes: a run the lab's
    /// time budget shortened counts at that size (its row says so), so
    /// every tuner has a point at the scenario's sizes.
    pub fn asked_bytes(&self) -> u64 {
        self.record
            .shortened_from_bytes
            .unwrap_or(self.record.size_bytes)
    }
}

/// When a run's goodput first reached [`CEILING_SHARE`] of the ceiling.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Reach {
    /// Seconds after its first telemetry sample.
    At(f64),
    /// No sample did.
    Never,
    /// Not known: no ceiling in the record, no telemetry, an invalid run.
    Unknown,
}

/// What the runs of one row say about [`Reach`].
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ReachSummary {
    /// The mean over the runs that reached it, seconds.
    pub mean_s: Option<f64>,
    /// Runs that reached it.
    pub reached: usize,
    /// Runs that never did.
    pub never: usize,
    /// Runs for which it is not known.
    pub unknown: usize,
}

impl ReachSummary {
    /// "2.31 s", "never", "2.31 s (2 of 3)", or "—" when not known.
    pub fn text(&self) -> String {
        let known = self.reached + self.never;
        match self.mean_s {
            None if self.never > 0 => "never".to_owned(),
            None => "—".to_owned(),
            Some(s) if self.reached == known => format!("{s:.2} s"),
            Some(s) => format!("{s:.2} s ({} of {known})", self.reached),
        }
    }
}

/// One row of a scenario's table: the runs of one (variant, tuner, size).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The variant's name.
    pub variant: String,
    /// The tuner, canonical `--tune` text.
    pub tuner: String,
    /// The transfer size the scenario asked for, bytes.
    pub size_bytes: u64,
    /// The size transferred, when the lab shortened the runs (the
    /// smallest, if they differ).
    pub shortened_to_bytes: Option<u64>,
    /// Valid runs.
    pub n_valid: usize,
    /// All runs.
    pub n: usize,
    /// Goodput of the valid runs, Mbit/s.
    pub goodput_mbps: Option<MeanCi>,
    /// Mean peak SO_RCVBUF (receiver), bytes.
    pub peak_rcvbuf_bytes: Option<f64>,
    /// Mean peak SO_SNDBUF (sender), bytes.
    pub peak_sndbuf_bytes: Option<f64>,
    /// Mean bytes retransmitted (sender).
    pub bytes_retrans: Option<f64>,
    /// Goodput in Mbit/s per MB (1e6 bytes) of peak receive buffer.
    pub mbps_per_mb: Option<MeanCi>,
    /// Time to 90% of the ceiling.
    pub reach: ReachSummary,
}

/// A run left out of the statistics, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct InvalidRun {
    /// See [`Row`].
    pub variant: String,
    /// See [`Row`].
    pub tuner: String,
    /// See [`Row`].
    pub size_bytes: u64,
    /// Repetition, from 1.
    pub rep: usize,
    /// Its directory.
    pub run_dir: String,
    /// The failed fidelity checks and the error.
    pub why: String,
}

/// The tuners of a scenario in its order, by label.
pub fn tuner_order(checked: &Checked) -> Vec<String> {
    checked.tuners.iter().map(|t| t.label.clone()).collect()
}

/// The position of `name` in `order`, names not in it after, in order of
/// first sight.
fn rank(order: &mut Vec<String>, name: &str) -> usize {
    match order.iter().position(|o| o == name) {
        Some(i) => i,
        None => {
            order.push(name.to_owned());
            order.len() - 1
        }
    }
}

/// The rows of a scenario's table, by variant (the scenario's order),
/// tuner (its order) and size (ascending).
pub fn rows(checked: &Checked, runs: &[RunView]) -> Vec<Row> {
    let mut variants: Vec<String> = checked.variants().into_iter().map(|v| v.name).collect();
    let mut tuners = tuner_order(checked);
    let mut keyed: Vec<((usize, usize, u64), &RunView)> = runs
        .iter()
        .map(|r| {
            let key = (
                rank(&mut variants, &r.variant),
                rank(&mut tuners, &r.record.tuner),
                r.asked_bytes(),
            );
            (key, r)
        })
        .collect();
    keyed.sort_by_key(|(k, _)| *k);
    let mut rows = Vec::new();
    let mut start = 0;
    while start < keyed.len() {
        let key = keyed[start].0;
        let end = keyed[start..]
            .iter()
            .position(|(k, _)| *k != key)
            .map_or(keyed.len(), |p| start + p);
        let group: Vec<&RunView> = keyed[start..end].iter().map(|(_, r)| *r).collect();
        rows.push(row(&group));
        start = end;
    }
    rows
}

/// The row of one group of runs (same variant, tuner and size; not empty).
fn row(group: &[&RunView]) -> Row {
    let first = &group[0];
    let valid: Vec<&RunRecord> = group
        .iter()
        .filter(|r| r.is_valid())
        .map(|r| &r.record)
        .collect();
    let of = |f: fn(&RunRecord) -> Option<f64>| valid.iter().filter_map(|r| f(r)).collect();
    let goodput: Vec<f64> = of(|r| r.measured.goodput_bps.map(|g| g / MEGA));
    let per_mb: Vec<f64> = of(
        |r| match (r.measured.goodput_bps, r.measured.peak_rcvbuf_bytes) {
            (Some(g), Some(b)) if b > 0 => Some((g / MEGA) / (b as f64 / MEGA)),
            _ => None,
        },
    );
    let mut reach = ReachSummary::default();
    let mut reached = Vec::new();
    for r in group.iter().filter(|r| r.is_valid()) {
        match r.reach {
            Reach::At(s) => reached.push(s),
            Reach::Never => reach.never += 1,
            Reach::Unknown => reach.unknown += 1,
        }
    }
    reach.reached = reached.len();
    reach.mean_s = mean(&reached);
    Row {
        variant: first.variant.clone(),
        tuner: first.record.tuner.clone(),
        size_bytes: first.asked_bytes(),
        shortened_to_bytes: group
            .iter()
            .filter(|r| r.record.shortened_from_bytes.is_some())
            .map(|r| r.record.size_bytes)
            .min(),
        n_valid: valid.len(),
        n: group.len(),
        goodput_mbps: mean_ci(&goodput),
        peak_rcvbuf_bytes: mean(&of(|r| r.measured.peak_rcvbuf_bytes.map(|b| b as f64))),
        peak_sndbuf_bytes: mean(&of(|r| r.measured.peak_sndbuf_bytes.map(|b| b as f64))),
        bytes_retrans: mean(&of(|r| r.measured.bytes_retrans.map(|b| b as f64))),
        mbps_per_mb: mean_ci(&per_mb),
        reach,
    }
}

/// The runs left out of the statistics, in the order they ran.
pub fn invalid_runs(runs: &[RunView]) -> Vec<InvalidRun> {
    runs.iter()
        .filter(|r| !r.is_valid())
        .map(|r| {
            let rec = &r.record;
            let mut why = Vec::new();
            if !rec.failed_checks.is_empty() {
                why.push(format!("failed checks: {}", rec.failed_checks.join(", ")));
            }
            if let Some(e) = &rec.error {
                why.push(format!("error: {e}"));
            }
            if why.is_empty() {
                why.push("marked invalid".to_owned());
            }
            InvalidRun {
                variant: r.variant.clone(),
                tuner: rec.tuner.clone(),
                size_bytes: r.asked_bytes(),
                rep: rec.rep,
                run_dir: rec.run_dir.clone(),
                why: why.join("; "),
            }
        })
        .collect()
}

/// Whether a claim holds by our measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The measured ratio is at least `holds_at_least`.
    Holds,
    /// It is less.
    DoesNotHold,
    /// One of the two tuners has no valid run there.
    NotMeasured,
}

impl Verdict {
    /// As the tables write it.
    pub fn text(self) -> &'static str {
        match self {
            Verdict::Holds => "holds",
            Verdict::DoesNotHold => "does not hold",
            Verdict::NotMeasured => "not measured",
        }
    }
}

/// A source document's claim and our measurement of it.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimRow {
    /// The scenario it belongs to.
    pub scenario: String,
    /// See [`crate::scenario::Claim`].
    pub seed: String,
    /// See [`crate::scenario::Claim`].
    pub text: String,
    /// See [`crate::scenario::Claim`].
    pub published: f64,
    /// See [`crate::scenario::Claim`].
    pub holds_at_least: f64,
    /// Mean goodput of `tuner` over that of `over`, in the first variant
    /// at the largest size with runs.
    pub measured: Option<f64>,
    /// Where it was measured: variant and size.
    pub at: Option<(String, u64)>,
    /// The verdict.
    pub verdict: Verdict,
}

/// The claims of a scenario, checked against its rows.
pub fn claims(checked: &Checked, rows: &[Row]) -> Vec<ClaimRow> {
    let first = checked
        .variants()
        .first()
        .map(|v| v.name.clone())
        .unwrap_or_default();
    let largest = rows.iter().map(|r| r.size_bytes).max();
    checked
        .scenario
        .claims
        .iter()
        .map(|c| {
            let variant = c.variant.clone().unwrap_or_else(|| first.clone());
            let over_variant = c.over_variant.clone().unwrap_or_else(|| variant.clone());
            let goodput = |tuner: &str, variant: &str| {
                let tuner = checked.label_of(tuner);
                rows.iter()
                    .find(|r| {
                        Some(r.size_bytes) == largest && r.tuner == tuner && r.variant == variant
                    })
                    .and_then(|r| r.goodput_mbps)
                    .map(|m| m.mean)
            };
            let at = if over_variant == variant {
                variant.clone()
            } else {
                format!("{variant} over {over_variant}")
            };
            let measured = match (goodput(&c.tuner, &variant), goodput(&c.over, &over_variant)) {
                (Some(a), Some(b)) if b > 0.0 => Some(a / b),
                _ => None,
            };
            let verdict = match measured {
                Some(m) if m >= c.holds_at_least => Verdict::Holds,
                Some(_) => Verdict::DoesNotHold,
                None => Verdict::NotMeasured,
            };
            ClaimRow {
                scenario: checked.name.clone(),
                seed: c.seed.clone(),
                text: c.text.clone(),
                published: c.published,
                holds_at_least: c.holds_at_least,
                measured,
                at: largest.map(|s| (at, s)),
                verdict,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
