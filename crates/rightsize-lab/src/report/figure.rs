//! What each plot shows, as data: series of points with their
//! confidence intervals, bars, reference lines, in the plot's units.
//! Pure: [`super::render`] draws a [`Figure`]; the caller reads the
//! telemetry of the runs [`time_runs`] names.

use std::collections::BTreeMap;

use rightsize_tune::TunerSpec;

use super::table::{MEGA, Row, RunView};
use super::telemetry::Sample;
use crate::scenario::{Checked, EndTuner, Plot};

/// A plot, ready to draw.
#[derive(Debug, Clone, PartialEq)]
pub enum Figure {
    /// Lines and markers over a numeric x axis.
    Xy(XyFigure),
    /// Bars over categories.
    Bars(BarFigure),
}

impl Figure {
    /// Its title.
    pub fn title(&self) -> &str {
        match self {
            Figure::Xy(f) => &f.title,
            Figure::Bars(f) => &f.title,
        }
    }
}

/// Lines and markers.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct XyFigure {
    /// Its title.
    pub title: String,
    /// The x axis's label, with its unit.
    pub x_label: String,
    /// x values are log2 of a byte count; ticks are labelled as sizes.
    pub x_log2_bytes: bool,
    /// The y axis's label, with its unit.
    pub y_label: String,
    /// The series.
    pub series: Vec<Series>,
    /// Horizontal reference lines.
    pub refs: Vec<RefLine>,
}

/// One line or set of markers.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Its legend; `None` to share the legend of an earlier series of the
    /// same colour.
    pub label: Option<String>,
    /// Index into the palette.
    pub color: usize,
    /// How it is drawn.
    pub kind: SeriesKind,
    /// Its points, in order of x.
    pub points: Vec<Point>,
}

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeriesKind {
    /// Our measurement: a line with dots, and error bars where known.
    Measured,
    /// A time series: a thin line.
    Trace,
    /// Numbers a source document published: distinct markers, no line.
    Published,
}

/// A point and the half-width of its confidence interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// x, in the axis's unit.
    pub x: f64,
    /// y, in the axis's unit.
    pub y: f64,
    /// The 95% confidence interval's half-width, in y's unit.
    pub half_ci: Option<f64>,
}

/// A labelled horizontal line.
#[derive(Debug, Clone, PartialEq)]
pub struct RefLine {
    /// Its legend.
    pub label: String,
    /// Its height, in the y axis's unit.
    pub y: f64,
    /// Index into the palette.
    pub color: usize,
    /// Drawn as a source document's number (dashed) rather than ours.
    pub published: bool,
}

/// Bars with confidence whiskers.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BarFigure {
    /// Its title.
    pub title: String,
    /// The y axis's label, with its unit.
    pub y_label: String,
    /// The legend of each colour (the variants).
    pub groups: Vec<String>,
    /// The bars, left to right.
    pub bars: Vec<Bar>,
    /// Horizontal reference lines.
    pub refs: Vec<RefLine>,
}

/// One bar.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    /// Its label under the axis (the tuner).
    pub label: String,
    /// Index into [`BarFigure::groups`], which picks its colour.
    pub group: usize,
    /// Its height.
    pub value: f64,
    /// The 95% confidence interval's half-width.
    pub half_ci: Option<f64>,
}

/// The largest transfer size (as asked) with a valid run.
pub fn largest_size(runs: &[RunView]) -> Option<u64> {
    runs.iter()
        .filter(|r| r.is_valid())
        .map(RunView::asked_bytes)
        .max()
}

/// The runs (indices into `runs`) whose telemetry a time plot draws:
/// every valid run at the largest size for `rcvbuf-over-time`; for the
/// others, the valid run of lowest repetition (rep 1, normally) of each
/// variant and tuner at the largest size. None for other plots.
pub fn time_runs(plot: Plot, runs: &[RunView]) -> Vec<usize> {
    let Some(size) = largest_size(runs) else {
        return Vec::new();
    };
    let at_size = runs
        .iter()
        .enumerate()
        .filter(|(_, r)| r.is_valid() && r.asked_bytes() == size);
    match plot {
        Plot::RcvbufOverTime => at_size.map(|(i, _)| i).collect(),
        Plot::GoodputOverTime
        | Plot::RttOverTime
        | Plot::CwndOverTime
        | Plot::RwndOverTime
        | Plot::RetransOverTime => {
            let mut first: BTreeMap<(&str, &str), (usize, usize)> = BTreeMap::new();
            for (i, r) in at_size {
                let key = (r.variant.as_str(), r.record.tuner.as_str());
                let e = first.entry(key).or_insert((r.record.rep, i));
                if r.record.rep < e.0 {
                    *e = (r.record.rep, i);
                }
            }
            let mut picked: Vec<usize> = first.values().map(|(_, i)| *i).collect();
            picked.sort_unstable();
            picked
        }
        _ => Vec::new(),
    }
}

/// Whether a time plot reads the sender's telemetry (else the receiver's).
pub fn reads_sender(plot: Plot) -> bool {
    matches!(
        plot,
        Plot::RttOverTime | Plot::CwndOverTime | Plot::RetransOverTime
    )
}

/// A time plot's (seconds, y) points from a run's samples, y in the
/// plot's unit.
pub fn time_points(plot: Plot, samples: &[Sample]) -> Vec<(f64, f64)> {
    let y_of = |s: &Sample| match plot {
        Plot::RcvbufOverTime => s.rcvbuf_bytes.map(|b| b / MEGA),
        Plot::GoodputOverTime => s.interval_goodput_bps.map(|g| g / MEGA),
        Plot::RttOverTime => s.rtt_us.map(|us| us / 1e3),
        Plot::CwndOverTime => s.snd_cwnd_bytes.map(|b| b / MEGA),
        Plot::RwndOverTime => s.rcv_wnd_bytes.map(|b| b / MEGA),
        Plot::RetransOverTime => s.total_retrans_segs,
        _ => None,
    };
    let points: Vec<(f64, f64)> = samples
        .iter()
        .filter_map(|s| y_of(s).map(|y| (s.t_s, y)))
        .collect();
    thin(points, MAX_TRACE_POINTS)
}

/// The most points a time series keeps: more add bytes to the SVG, not
/// detail a reader can see at the plot's width.
pub const MAX_TRACE_POINTS: usize = 1000;

/// Every k-th point and the last, so at most about `max` remain.
fn thin(points: Vec<(f64, f64)>, max: usize) -> Vec<(f64, f64)> {
    if points.len() <= max {
        return points;
    }
    let step = points.len().div_ceil(max);
    let last = points.len() - 1;
    points
        .into_iter()
        .enumerate()
        .filter(|(i, _)| i % step == 0 || *i == last)
        .map(|(_, p)| p)
        .collect()
}

/// A scenario's plot. `traces` holds the time points of the runs
/// [`time_runs`] named that had telemetry (by index into `runs`).
pub fn figure(
    checked: &Checked,
    plot: Plot,
    rows: &[Row],
    runs: &[RunView],
    traces: &BTreeMap<usize, Vec<(f64, f64)>>,
) -> Figure {
    let many_variants = runs
        .iter()
        .any(|r| runs.first().is_some_and(|f| f.variant != r.variant));
    let name = |tuner: &str, variant: &str| {
        if many_variants {
            format!("{tuner} ({variant})")
        } else {
            tuner.to_owned()
        }
    };
    let title = |what: &str| format!("{}: {what}", checked.scenario.title);
    let size_note = largest_size(runs)
        .map(|s| format!(", {}", size_label(s as f64)))
        .unwrap_or_default();
    let mut fig = match plot {
        Plot::GoodputVsSize | Plot::MbpsPerMbVsSize => {
            let per_mb = plot == Plot::MbpsPerMbVsSize;
            let mut series: Vec<Series> = Vec::new();
            for (key, group) in by_variant_tuner(rows) {
                let points = group
                    .iter()
                    .filter_map(|r| {
                        let m = if per_mb {
                            r.mbps_per_mb
                        } else {
                            r.goodput_mbps
                        }?;
                        Some(Point {
                            x: (r.size_bytes as f64).log2(),
                            y: m.mean,
                            half_ci: m.half_width,
                        })
                    })
                    .collect();
                series.push(measured(name(key.1, key.0), series.len(), points));
            }
            XyFigure {
                title: title(if per_mb {
                    "goodput per MB of receive buffer"
                } else {
                    "goodput vs transfer size"
                }),
                x_label: "transfer size (log2 scale)".into(),
                x_log2_bytes: true,
                y_label: if per_mb {
                    "goodput / peak SO_RCVBUF (Mbit/s per MB)".into()
                } else {
                    "goodput (Mbit/s, mean and 95% CI)".into()
                },
                series,
                refs: Vec::new(),
            }
            .into()
        }
        Plot::GoodputVsBuffer => {
            let largest = largest_size(runs);
            let at_largest: Vec<&Row> = rows
                .iter()
                .filter(|r| Some(r.size_bytes) == largest)
                .collect();
            let mut series: Vec<Series> = Vec::new();
            let mut refs = Vec::new();
            let first_variant = at_largest.first().map(|r| r.variant.clone());
            let swept = swept_buffer(checked, &at_largest);
            let mut variants: Vec<&str> = Vec::new();
            for r in &at_largest {
                if !variants.contains(&r.variant.as_str()) {
                    variants.push(&r.variant);
                }
            }
            for v in variants {
                let mut points: Vec<Point> = at_largest
                    .iter()
                    .filter(|r| r.variant == v)
                    .filter_map(|r| {
                        let buf = static_bytes(checked, &r.tuner)?;
                        let m = r.goodput_mbps?;
                        Some(Point {
                            x: (buf as f64).log2(),
                            y: m.mean,
                            half_ci: m.half_width,
                        })
                    })
                    .collect();
                points.sort_by(|a, b| a.x.total_cmp(&b.x));
                let label = if many_variants {
                    format!("{swept} ({v})")
                } else {
                    swept.clone()
                };
                series.push(measured(label, series.len(), points));
            }
            for r in at_largest
                .iter()
                .filter(|r| static_bytes(checked, &r.tuner).is_none())
            {
                if Some(&r.variant) != first_variant.as_ref() {
                    continue;
                }
                if let Some(m) = r.goodput_mbps {
                    refs.push(RefLine {
                        label: name(&r.tuner, &r.variant),
                        y: m.mean,
                        color: series.len() + refs.len(),
                        published: false,
                    });
                }
            }
            XyFigure {
                title: title(&format!("goodput vs static buffer{size_note}")),
                x_label: format!("{swept} (log2 scale)"),
                x_log2_bytes: true,
                y_label: "goodput (Mbit/s, mean and 95% CI)".into(),
                series,
                refs,
            }
            .into()
        }
        Plot::GoodputVsMemory => {
            let largest = largest_size(runs);
            let mut series = Vec::new();
            for r in rows.iter().filter(|r| Some(r.size_bytes) == largest) {
                let (Some(m), Some(peak)) = (r.goodput_mbps, r.peak_rcvbuf_bytes) else {
                    continue;
                };
                series.push(Series {
                    label: Some(name(&r.tuner, &r.variant)),
                    color: series.len(),
                    kind: SeriesKind::Measured,
                    points: vec![Point {
                        x: peak / MEGA,
                        y: m.mean,
                        half_ci: m.half_width,
                    }],
                });
            }
            let refs = ceiling_line(runs, series.len()).into_iter().collect();
            XyFigure {
                title: title(&format!("goodput against memory{size_note}")),
                x_label: "peak receive buffer, SO_RCVBUF (MB)".into(),
                x_log2_bytes: false,
                y_label: "goodput (Mbit/s, mean and 95% CI)".into(),
                series,
                refs,
            }
            .into()
        }
        Plot::GoodputByTuner => {
            let largest = largest_size(runs);
            let mut fig = BarFigure {
                title: title(&format!("goodput by tuner{size_note}")),
                y_label: "goodput (Mbit/s, mean and 95% CI)".into(),
                ..BarFigure::default()
            };
            for r in rows.iter().filter(|r| Some(r.size_bytes) == largest) {
                let Some(m) = r.goodput_mbps else { continue };
                let group = match fig.groups.iter().position(|g| *g == r.variant) {
                    Some(g) => g,
                    None => {
                        fig.groups.push(r.variant.clone());
                        fig.groups.len() - 1
                    }
                };
                fig.bars.push(Bar {
                    label: r.tuner.clone(),
                    group,
                    value: m.mean,
                    half_ci: m.half_width,
                });
            }
            fig.into()
        }
        Plot::RcvbufOverTime
        | Plot::GoodputOverTime
        | Plot::RttOverTime
        | Plot::CwndOverTime
        | Plot::RwndOverTime
        | Plot::RetransOverTime => {
            let (what, y_label) = match plot {
                Plot::RcvbufOverTime => ("receiver's SO_RCVBUF over time", "SO_RCVBUF (MB)"),
                Plot::GoodputOverTime => (
                    "receiver's goodput over time",
                    "goodput per interval (Mbit/s)",
                ),
                Plot::CwndOverTime => (
                    "sender's congestion window over time",
                    "congestion window (MB)",
                ),
                Plot::RwndOverTime => (
                    "receiver's advertised window over time",
                    "receive window (MB)",
                ),
                Plot::RetransOverTime => (
                    "sender's retransmissions over time",
                    "segments retransmitted so far",
                ),
                _ => ("sender's smoothed RTT over time", "RTT (ms)"),
            };
            let mut colors: Vec<(&str, &str)> = Vec::new();
            let mut series = Vec::new();
            for (&i, points) in traces {
                let Some(r) = runs.get(i) else { continue };
                let key = (r.variant.as_str(), r.record.tuner.as_str());
                let (color, label) = match colors.iter().position(|c| *c == key) {
                    Some(c) => (c, None),
                    None => {
                        colors.push(key);
                        (colors.len() - 1, Some(name(key.1, key.0)))
                    }
                };
                series.push(Series {
                    label,
                    color,
                    kind: SeriesKind::Trace,
                    points: points
                        .iter()
                        .map(|&(x, y)| Point {
                            x,
                            y,
                            half_ci: None,
                        })
                        .collect(),
                });
            }
            let which = if plot == Plot::RcvbufOverTime {
                "every valid run"
            } else {
                "one run per tuner"
            };
            // Goodput against what the path carries; a receive buffer and
            // the windows against the BDP.
            let refs = match plot {
                Plot::RcvbufOverTime | Plot::CwndOverTime | Plot::RwndOverTime => runs
                    .iter()
                    .find_map(|r| r.record.bdp_bytes)
                    .map(|bytes| RefLine {
                        label: format!("BDP {:.2} MB", bytes / 1e6),
                        y: bytes / 1e6,
                        color: series.len(),
                        published: false,
                    })
                    .into_iter()
                    .collect(),
                Plot::GoodputOverTime => ceiling_line(runs, series.len()).into_iter().collect(),
                _ => Vec::new(),
            };
            XyFigure {
                title: title(&format!("{what}{size_note}, {which}")),
                x_label: "time since the telemetry began (s)".into(),
                x_log2_bytes: false,
                y_label: y_label.into(),
                series,
                refs,
            }
            .into()
        }
    };
    add_published(&mut fig, checked, plot);
    say_when_no_interval(&mut fig);
    fig
}

/// The path's goodput ceiling as a line on a Mbit/s axis, if the runs
/// recorded it.
fn ceiling_line(runs: &[RunView], color: usize) -> Option<RefLine> {
    runs.iter()
        .find_map(|r| r.record.ceiling_bps)
        .map(|bps| RefLine {
            label: format!("path ceiling {:.0} Mbit/s", bps / MEGA),
            y: bps / MEGA,
            color,
            published: false,
        })
}

/// A label that promises a 95% confidence interval keeps the promise
/// only where one was drawn: with one run per point there is none.
fn say_when_no_interval(fig: &mut Figure) {
    const PROMISE: &str = ", mean and 95% CI";
    let (label, any) = match fig {
        Figure::Xy(f) => (
            &mut f.y_label,
            f.series
                .iter()
                .any(|s| s.points.iter().any(|p| p.half_ci.is_some())),
        ),
        Figure::Bars(f) => (&mut f.y_label, f.bars.iter().any(|b| b.half_ci.is_some())),
    };
    if !any && label.contains(PROMISE) {
        *label = label.replace(PROMISE, ", one run each");
    }
}

impl From<XyFigure> for Figure {
    fn from(f: XyFigure) -> Figure {
        Figure::Xy(f)
    }
}

impl From<BarFigure> for Figure {
    fn from(f: BarFigure) -> Figure {
        Figure::Bars(f)
    }
}

fn measured(label: String, color: usize, points: Vec<Point>) -> Series {
    Series {
        label: Some(label),
        color,
        kind: SeriesKind::Measured,
        points,
    }
}

/// Rows grouped by (variant, tuner), in the rows' order.
fn by_variant_tuner(rows: &[Row]) -> Vec<((&str, &str), Vec<&Row>)> {
    let mut groups: Vec<((&str, &str), Vec<&Row>)> = Vec::new();
    for r in rows {
        let key = (r.variant.as_str(), r.tuner.as_str());
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, g)) => g.push(r),
            None => groups.push((key, vec![r])),
        }
    }
    groups
}

/// What the goodput-vs-buffer plot sweeps: `static:SIZE` on both ends,
/// or, for pairs (the Windows note's send buffer against the receiver's
/// autotuning), the server's `static:SIZE` beside the client's tuner.
fn swept_buffer(checked: &Checked, rows: &[&Row]) -> String {
    let pair = rows
        .iter()
        .filter(|r| static_bytes(checked, &r.tuner).is_some())
        .find_map(|r| {
            r.tuner.parse::<TunerSpec>().is_err().then(|| {
                checked
                    .tuners
                    .iter()
                    .find(|t| t.label == r.tuner)
                    .map(|t| t.client.text())
            })?
        });
    match pair {
        Some(client) => format!("server static:SIZE, client {client}"),
        None => "static:SIZE".to_owned(),
    }
}

/// The buffer of a `static:SIZE` tuner, bytes: the label's own, or that
/// of the sender's tuner of a pair the scenario labels so (the Windows note's send
/// buffer sweep).
fn static_bytes(checked: &Checked, label: &str) -> Option<u64> {
    let fixed = |t: &TunerSpec| match t {
        TunerSpec::Static(b) => Some(b.get()),
        _ => None,
    };
    if let Ok(t) = label.parse::<TunerSpec>() {
        return fixed(&t);
    }
    let tuning = checked.tuners.iter().find(|t| t.label == label)?;
    match tuning.server {
        EndTuner::Spec(t) => fixed(&t),
        EndTuner::StaticBdp(_) => None,
    }
}

/// The published points of `plot`, converted to its axes: bytes to log2
/// on size axes, bytes to MB on the SO_RCVBUF axis; on bars, each point's
/// y is a reference line.
fn add_published(fig: &mut Figure, checked: &Checked, plot: Plot) {
    for p in checked.scenario.published.iter().filter(|p| p.plot == plot) {
        match fig {
            Figure::Xy(xy) => {
                let color = xy.series.len() + xy.refs.len();
                let points = p
                    .points
                    .iter()
                    .filter(|[x, _]| !xy.x_log2_bytes || *x > 0.0)
                    .map(|&[x, y]| Point {
                        x: if xy.x_log2_bytes { x.log2() } else { x },
                        y: if plot == Plot::RcvbufOverTime {
                            y / MEGA
                        } else {
                            y
                        },
                        half_ci: None,
                    })
                    .collect();
                xy.series.push(Series {
                    label: Some(p.label.clone()),
                    color,
                    kind: SeriesKind::Published,
                    points,
                });
            }
            Figure::Bars(bars) => {
                for &[_, y] in &p.points {
                    bars.refs.push(RefLine {
                        label: p.label.clone(),
                        y,
                        color: bars.groups.len() + bars.refs.len(),
                        published: true,
                    });
                }
            }
        }
    }
}

/// A byte count as a short size label: `64 KiB`, `1.5 MiB`.
pub fn size_label(bytes: f64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    if (v - v.round()).abs() < 0.05 {
        format!("{} {}", v.round(), units[u])
    } else {
        format!("{v:.1} {}", units[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bars(half_ci: Option<f64>) -> Figure {
        Figure::Bars(BarFigure {
            title: "t".into(),
            y_label: "goodput (Mbit/s, mean and 95% CI)".into(),
            groups: vec!["g".into()],
            bars: vec![Bar {
                label: "auto".into(),
                group: 0,
                value: 180.0,
                half_ci,
            }],
            refs: Vec::new(),
        })
    }

    fn label(fig: &Figure) -> &str {
        match fig {
            Figure::Bars(f) => &f.y_label,
            Figure::Xy(f) => &f.y_label,
        }
    }

    #[test]
    fn a_confidence_interval_is_promised_only_where_one_is_drawn() {
        let mut one_run = bars(None);
        say_when_no_interval(&mut one_run);
        assert_eq!(label(&one_run), "goodput (Mbit/s, one run each)");
        let mut repeated = bars(Some(4.0));
        say_when_no_interval(&mut repeated);
        assert_eq!(label(&repeated), "goodput (Mbit/s, mean and 95% CI)");
    }
}
