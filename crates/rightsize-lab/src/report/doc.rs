//! The report as data: its header, a section per scenario, the claims;
//! and the text of every table cell, shared by the HTML and the Markdown
//! renderings so they cannot disagree. Pure.

use rightsize_tune::civil::UtcTime;

use super::figure::size_label;
use super::stats::MeanCi;
use super::table::{ClaimRow, InvalidRun, Row};
use crate::layout::LabInfo;
use crate::scenario::Plot;

/// Everything a report shows.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// The directory's `lab.json`.
    pub lab: LabInfo,
    /// Runs in runs.jsonl.
    pub runs_total: usize,
    /// A section per scenario, in name order.
    pub sections: Vec<Section>,
    /// The claims of every scenario.
    pub claims: Vec<ClaimRow>,
    /// Remarks about the directory (runs of no known scenario).
    pub notes: Vec<String>,
}

/// One scenario's part of the report.
#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    /// The scenario's name (file stem).
    pub name: String,
    /// Its title.
    pub title: String,
    /// Its `about` text.
    pub about: String,
    /// Its plots.
    pub plots: Vec<PlotOut>,
    /// Its table.
    pub rows: Vec<Row>,
    /// The runs left out of the statistics.
    pub invalid: Vec<InvalidRun>,
    /// Remarks: telemetry that was missing, runs of unknown tuners.
    pub notes: Vec<String>,
    /// Each run's telemetry files, for links.
    pub telemetry: Vec<RunFiles>,
}

/// A run's telemetry files, as paths relative to the lab directory.
#[derive(Debug, Clone, PartialEq)]
pub struct RunFiles {
    /// See [`Row`].
    pub variant: String,
    /// See [`Row`].
    pub tuner: String,
    /// The size the scenario asked for, bytes.
    pub size_bytes: u64,
    /// Repetition, from 1.
    pub rep: usize,
    /// Whether it counts in the statistics.
    pub valid: bool,
    /// The receiver's telemetry, if there is one.
    pub client: Option<String>,
    /// The sender's, if there is one.
    pub server: Option<String>,
}

/// The report's one-line headline: in the first section with `auto` and
/// `kernel` rows of one variant and size, auto's goodput and peak receive
/// buffer against the kernel's; else the fastest row of the first section
/// with a goodput. `None` without a valid run.
pub fn headline(report: &Report) -> Option<String> {
    let mean = |r: &Row| r.goodput_mbps.map(|m| m.mean);
    for s in &report.sections {
        for auto in s.rows.iter().filter(|r| r.tuner == "auto") {
            let Some(kernel) = s.rows.iter().find(|k| {
                k.tuner == "kernel" && k.variant == auto.variant && k.size_bytes == auto.size_bytes
            }) else {
                continue;
            };
            let (Some(ga), Some(gk)) = (mean(auto), mean(kernel)) else {
                continue;
            };
            let memory = match (auto.peak_rcvbuf_bytes, kernel.peak_rcvbuf_bytes) {
                (Some(ma), Some(mk)) if mk > 0.0 => format!(
                    " with {} MB of peak receive buffer against {} MB ({:.2} x)",
                    num(ma / 1e6),
                    num(mk / 1e6),
                    ma / mk
                ),
                _ => String::new(),
            };
            return Some(format!(
                "{}: auto made {} Mbit/s, {:.2} x the kernel's autotuning ({} Mbit/s){memory}; {}, {}",
                s.title,
                num(ga),
                ga / gk,
                num(gk),
                size_label(auto.size_bytes as f64),
                auto.variant
            ));
        }
    }
    let section = report
        .sections
        .iter()
        .find(|s| s.rows.iter().any(|r| mean(r).is_some()))?;
    let best = section
        .rows
        .iter()
        .filter(|r| mean(r).is_some())
        .max_by(|a, b| mean(a).unwrap_or(0.0).total_cmp(&mean(b).unwrap_or(0.0)))?;
    Some(format!(
        "{}: fastest {} at {} Mbit/s; {}, {}",
        section.title,
        best.tuner,
        num(mean(best).unwrap_or(0.0)),
        size_label(best.size_bytes as f64),
        best.variant
    ))
}

/// A plot as drawn.
#[derive(Debug, Clone, PartialEq)]
pub struct PlotOut {
    /// Which plot.
    pub plot: Plot,
    /// Its files' name without extension: `SCENARIO-PLOT`.
    pub stem: String,
    /// Its title.
    pub title: String,
    /// The SVG document.
    pub svg: String,
}

/// A plot's name as scenarios write it: `goodput-vs-size`.
pub fn plot_name(plot: Plot) -> String {
    serde_json::to_value(plot)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| format!("{plot:?}"))
}

/// The main table's column heads.
pub const ROW_HEADS: [&str; 10] = [
    "variant",
    "tuner",
    "size",
    "valid runs",
    "goodput (Mbit/s, mean ± 95% CI)",
    "peak SO_RCVBUF (mean)",
    "peak SO_SNDBUF (mean)",
    "retransmitted (mean)",
    "Mbit/s per MB of SO_RCVBUF",
    "time to 90% of ceiling",
];

/// A number with as many decimals as its size deserves.
pub fn num(x: f64) -> String {
    let a = x.abs();
    if a >= 100.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// "12.00 ± 4.97", "7.50" (n = 1), "—" (no valid run).
pub fn mean_ci_text(m: Option<MeanCi>) -> String {
    match m {
        None => "—".to_owned(),
        Some(MeanCi {
            mean,
            half_width: None,
            ..
        }) => num(mean),
        Some(MeanCi {
            mean,
            half_width: Some(h),
            ..
        }) => format!("{} ± {}", num(mean), num(h)),
    }
}

/// Buffers and retransmitted bytes in MB (10^6 bytes), as the plots and
/// the "per MB" column count them; transfer sizes stay as the scenario
/// asked for them (MiB).
fn bytes_text(b: Option<f64>) -> String {
    b.map_or_else(
        || "—".to_owned(),
        |b| match b {
            0.0 => "0 MB".to_owned(),
            b => format!("{} MB", num(b / 1e6)),
        },
    )
}

/// The cells of a row of the main table.
pub fn row_cells(r: &Row) -> [String; 10] {
    let size = match r.shortened_to_bytes {
        Some(to) => format!(
            "{} (shortened to {})",
            size_label(r.size_bytes as f64),
            size_label(to as f64)
        ),
        None => size_label(r.size_bytes as f64),
    };
    [
        r.variant.clone(),
        r.tuner.clone(),
        size,
        format!("{} of {}", r.n_valid, r.n),
        mean_ci_text(r.goodput_mbps),
        bytes_text(r.peak_rcvbuf_bytes),
        bytes_text(r.peak_sndbuf_bytes),
        bytes_text(r.bytes_retrans),
        mean_ci_text(r.mbps_per_mb),
        r.reach.text(),
    ]
}

/// The invalid runs' column heads.
pub const INVALID_HEADS: [&str; 6] = ["variant", "tuner", "size", "rep", "run", "why"];

/// The cells of an invalid run.
pub fn invalid_cells(r: &InvalidRun) -> [String; 6] {
    [
        r.variant.clone(),
        r.tuner.clone(),
        size_label(r.size_bytes as f64),
        r.rep.to_string(),
        r.run_dir.clone(),
        r.why.clone(),
    ]
}

/// The claims table's column heads.
pub const CLAIM_HEADS: [&str; 7] = [
    "scenario",
    "source",
    "claim",
    "published ratio",
    "measured ratio",
    "holds at",
    "verdict",
];

/// The cells of a claim.
pub fn claim_cells(c: &ClaimRow) -> [String; 7] {
    let measured = match (&c.measured, &c.at) {
        (Some(m), Some((variant, size))) => {
            format!("{} ({variant}, {})", num(*m), size_label(*size as f64))
        }
        (Some(m), None) => num(*m),
        (None, _) => "—".to_owned(),
    };
    [
        c.scenario.clone(),
        c.seed.clone(),
        c.text.clone(),
        num(c.published),
        measured,
        format!("≥ {}", num(c.holds_at_least)),
        c.verdict.text().to_owned(),
    ]
}

/// The header's facts, as (name, value) pairs.
pub fn facts(r: &Report) -> Vec<(&'static str, String)> {
    let lab = &r.lab;
    vec![
        ("version", lab.version.clone()),
        ("kernel", lab.kernel.clone()),
        ("created", utc_date(lab.created_unix_s)),
        ("mode", if lab.quick { "quick" } else { "full" }.to_owned()),
        ("command", lab.argv.join(" ")),
        ("runs", r.runs_total.to_string()),
    ]
}

/// Unix seconds as `2026-11-22 06:31 UTC`.
pub fn utc_date(unix_s: u64) -> String {
    let t = UtcTime::from_unix(i64::try_from(unix_s).unwrap_or(i64::MAX));
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02} UTC",
        t.year, t.month, t.day, t.hour, t.minute
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(utc_date(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc_date(951_782_400), "2000-02-29 00:00 UTC");
        assert_eq!(utc_date(1_795_326_063), "2026-11-22 05:41 UTC");
    }

    #[test]
    fn mean_ci_cells() {
        let m = super::super::stats::mean_ci(&[10.0, 12.0, 14.0]);
        assert_eq!(mean_ci_text(m), "12.00 ± 4.97");
        assert_eq!(
            mean_ci_text(super::super::stats::mean_ci(&[151.07])),
            "151.1"
        );
        assert_eq!(mean_ci_text(None), "—");
        assert_eq!(plot_name(Plot::GoodputVsSize), "goodput-vs-size");
    }
}
