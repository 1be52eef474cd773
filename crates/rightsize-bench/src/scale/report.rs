//! From the runs of `rightsize-bench scale` to its summary: per tuner the
//! medians over the repetitions, the budget run's outcome, the goals, and
//! the `--json` object. Pure: figures in, lines and JSON out.

use serde_json::{Value, json};

use super::figures::RunFigures;
use crate::goals::{median, ratio_goal};

/// A tuner's medians over its valid runs.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct TunerSummary {
    /// Bits/s.
    pub aggregate_goodput_bps: Option<f64>,
    /// Jain's index, 0 to 1.
    pub jain_fairness: Option<f64>,
    /// Bytes.
    pub sum_peak_rcvbuf_bytes: Option<f64>,
    /// Bytes.
    pub sum_peak_sndbuf_bytes: Option<f64>,
    /// Bytes: the mean of the clients' sampled sums while busy.
    pub sum_mean_rcvbuf_bytes: Option<f64>,
    /// Bytes: the mean of the server's sampled sums while busy.
    pub sum_mean_sndbuf_bytes: Option<f64>,
    /// Runs that counted.
    pub valid: usize,
    /// Runs made.
    pub total: usize,
}

impl TunerSummary {
    /// The medians of `runs` (`None`: a run that did not count).
    pub fn of(runs: &[Option<RunFigures>]) -> TunerSummary {
        let valid: Vec<&RunFigures> = runs.iter().flatten().collect();
        let med =
            |f: fn(&RunFigures) -> f64| median(&valid.iter().map(|r| f(r)).collect::<Vec<_>>());
        TunerSummary {
            aggregate_goodput_bps: med(|r| r.aggregate_goodput_bps),
            jain_fairness: med(|r| r.jain_fairness),
            sum_peak_rcvbuf_bytes: med(|r| r.sum_peak_rcvbuf_bytes as f64),
            sum_peak_sndbuf_bytes: med(|r| r.sum_peak_sndbuf_bytes as f64),
            sum_mean_rcvbuf_bytes: med(|r| r.sum_mean_rcvbuf_bytes),
            sum_mean_sndbuf_bytes: med(|r| r.sum_mean_sndbuf_bytes),
            valid: valid.len(),
            total: runs.len(),
        }
    }
}

/// The budget run: `auto` with `rightsize serve --buffer-budget`.
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetSummary {
    /// The budget, bytes.
    pub bytes: u64,
    /// What happened.
    pub outcome: BudgetOutcome,
}

/// How the budget runs went.
#[derive(Debug, Clone, PartialEq)]
pub enum BudgetOutcome {
    /// Not run, and why (`rightsize serve has no --buffer-budget`).
    NotRun(String),
    /// Run: its figures.
    Ran {
        /// The highest sampled sum of the server's data connections'
        /// buffers (send and receive, what the budget bounds) over the
        /// valid runs, bytes.
        sum_peak_bytes: Option<u64>,
        /// The median aggregate goodput, bits/s.
        aggregate_goodput_bps: Option<f64>,
        /// Whether every sample of every valid run was within the budget
        /// (`None`: no valid run).
        held: Option<bool>,
    },
}

impl BudgetSummary {
    /// The summary of the budget runs (`None`: a run that did not count),
    /// each with the sampled sums of the server's buffers (both of each
    /// data connection).
    pub fn of(bytes: u64, runs: &[Option<(RunFigures, Vec<u64>)>]) -> BudgetSummary {
        let valid: Vec<&(RunFigures, Vec<u64>)> = runs.iter().flatten().collect();
        let held = if valid.is_empty() {
            None
        } else {
            Some(
                valid
                    .iter()
                    .all(|(_, sums)| sums.iter().all(|s| *s <= bytes)),
            )
        };
        BudgetSummary {
            bytes,
            outcome: BudgetOutcome::Ran {
                sum_peak_bytes: valid
                    .iter()
                    .flat_map(|(_, sums)| sums.iter().copied())
                    .max(),
                aggregate_goodput_bps: median(
                    &valid
                        .iter()
                        .map(|(f, _)| f.aggregate_goodput_bps)
                        .collect::<Vec<_>>(),
                ),
                held,
            },
        }
    }
}

/// The `--json` object: `{"tuners": {NAME: {aggregate_goodput_bps,
/// jain_fairness, sum_peak_rcvbuf_bytes, sum_peak_sndbuf_bytes, and the
/// means while busy, sum_mean_rcvbuf_bytes and sum_mean_sndbuf_bytes}},
/// "budget": {bytes, sum_peak_bytes, aggregate_goodput_bps, held}}`, a
/// figure with no valid run being `null`; a budget that was not run has
/// `null` figures and says why in `not_run`.
pub fn json_report(tuners: &[(String, TunerSummary)], budget: &BudgetSummary) -> Value {
    let mut by_tuner = serde_json::Map::new();
    for (name, s) in tuners {
        by_tuner.insert(
            name.clone(),
            json!({
                "aggregate_goodput_bps": s.aggregate_goodput_bps,
                "jain_fairness": s.jain_fairness,
                "sum_peak_rcvbuf_bytes": s.sum_peak_rcvbuf_bytes.map(|b| b.round() as u64),
                "sum_peak_sndbuf_bytes": s.sum_peak_sndbuf_bytes.map(|b| b.round() as u64),
                "sum_mean_rcvbuf_bytes": s.sum_mean_rcvbuf_bytes.map(|b| b.round() as u64),
                "sum_mean_sndbuf_bytes": s.sum_mean_sndbuf_bytes.map(|b| b.round() as u64),
                "valid_runs": s.valid,
                "runs": s.total,
            }),
        );
    }
    let budget = match &budget.outcome {
        BudgetOutcome::NotRun(why) => json!({
            "bytes": budget.bytes,
            "sum_peak_bytes": null,
            "aggregate_goodput_bps": null,
            "held": null,
            "not_run": why,
        }),
        BudgetOutcome::Ran {
            sum_peak_bytes,
            aggregate_goodput_bps,
            held,
        } => json!({
            "bytes": budget.bytes,
            "sum_peak_bytes": sum_peak_bytes,
            "aggregate_goodput_bps": aggregate_goodput_bps,
            "held": held,
        }),
    };
    json!({ "tuners": by_tuner, "budget": budget })
}

/// The tuner the goals judge, and the one it is compared with.
pub const JUDGED: &str = "auto";
/// See [`JUDGED`].
pub const REFERENCE: &str = "kernel";

/// The goals, each a line and whether it was met: against `kernel`,
/// `auto`'s aggregate goodput >= 0.95x, its summed receive buffers <=
/// 0.25x and its server's summed send buffers <= 0.5x; its fairness >=
/// 0.9; with the budget, held in every sample and aggregate goodput >=
/// 0.9x unbudgeted `auto`'s.
pub fn goals(tuners: &[(String, TunerSummary)], budget: &BudgetSummary) -> Vec<(String, bool)> {
    let find = |name: &str| {
        tuners
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, s)| *s)
            .unwrap_or_default()
    };
    let (auto, kernel) = (find(JUDGED), find(REFERENCE));
    let mut out = vec![
        ratio_goal(
            "auto / kernel (aggregate goodput)",
            auto.aggregate_goodput_bps,
            kernel.aggregate_goodput_bps,
            |r| r >= 0.95,
            ">= 0.95",
        ),
        match auto.jain_fairness {
            Some(j) => {
                let ok = j >= 0.9;
                let verdict = if ok { "met" } else { "NOT met" };
                (
                    format!("  auto's Jain fairness = {j:.3} (target >= 0.9) {verdict}"),
                    ok,
                )
            }
            None => (
                "  auto's Jain fairness: no valid runs, NOT met".to_owned(),
                false,
            ),
        },
        ratio_goal(
            "auto / kernel (clients' summed peak receive buffers)",
            auto.sum_peak_rcvbuf_bytes,
            kernel.sum_peak_rcvbuf_bytes,
            |r| r <= 0.25,
            "<= 0.25",
        ),
        ratio_goal(
            "auto / kernel (server's summed peak send buffers)",
            auto.sum_peak_sndbuf_bytes,
            kernel.sum_peak_sndbuf_bytes,
            |r| r <= 0.5,
            "<= 0.5",
        ),
    ];
    let budget_text = format!("{:.2} MB", budget.bytes as f64 / 1e6);
    match &budget.outcome {
        BudgetOutcome::NotRun(why) => {
            for what in ["held in every sample", "aggregate goodput >= 0.9x auto's"] {
                out.push((
                    format!("  --buffer-budget {budget_text}, {what}: not run ({why}), NOT met"),
                    false,
                ));
            }
        }
        BudgetOutcome::Ran {
            sum_peak_bytes,
            aggregate_goodput_bps,
            held,
        } => {
            let peak =
                sum_peak_bytes.map_or("-".to_owned(), |b| format!("{:.2} MB", b as f64 / 1e6));
            out.push(match held {
                Some(true) => (
                    format!(
                        "  --buffer-budget {budget_text}: held in every sample (peak {peak}) met"
                    ),
                    true,
                ),
                Some(false) => (
                    format!("  --buffer-budget {budget_text}: exceeded (peak {peak}) NOT met"),
                    false,
                ),
                None => (
                    format!("  --buffer-budget {budget_text}: no valid runs, NOT met"),
                    false,
                ),
            });
            out.push(ratio_goal(
                "auto with the budget / auto without (aggregate goodput)",
                *aggregate_goodput_bps,
                auto.aggregate_goodput_bps,
                |r| r >= 0.9,
                ">= 0.9",
            ));
        }
    }
    out
}
