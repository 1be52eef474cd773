//! Draws a [`Figure`] as an SVG document or a PNG image, in memory, with
//! `plotters`. Text is laid out with the font [`register_font`] was given
//! (plotters' `ab_glyph` feature: no system font discovery); drawing
//! before that fails with an error saying so.

use anyhow::{Context, anyhow};
use plotters::coord::Shift;
use plotters::prelude::*;

use super::figure::{BarFigure, Figure, Point, RefLine, SeriesKind, XyFigure, size_label};

/// A plot's size in pixels (the SVG's viewBox too).
pub const SIZE_PX: (u32, u32) = (960, 560);

/// The font family the plots ask for.
const FAMILY: &str = "sans-serif";

/// The series colours (matplotlib's tab10), then again.
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// A reference line's dash and gap, pixels: long dashes for a published
/// number, short ones for ours.
fn dash(published: bool) -> (i32, i32) {
    if published { (10, 5) } else { (3, 3) }
}

fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// Registers the contents of a TrueType font file for the plots' text.
pub fn register_font(bytes: &'static [u8]) -> anyhow::Result<()> {
    plotters::style::register_font(FAMILY, FontStyle::Normal, bytes)
        .map_err(|_| anyhow!("not a TrueType or OpenType font"))
}

/// The figure as an SVG document.
pub fn svg(fig: &Figure) -> anyhow::Result<String> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, SIZE_PX).into_drawing_area();
        draw(&root, fig).map_err(|e| anyhow!("{e}"))?;
        root.present().map_err(|e| anyhow!("{e}"))?;
    }
    Ok(out)
}

/// The figure as a PNG image.
pub fn png(fig: &Figure) -> anyhow::Result<Vec<u8>> {
    let (w, h) = SIZE_PX;
    let mut rgb = vec![0u8; (w * h * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, SIZE_PX).into_drawing_area();
        draw(&root, fig).map_err(|e| anyhow!("{e}"))?;
        root.present().map_err(|e| anyhow!("{e}"))?;
    }
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, w, h);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder
        .write_header()
        .and_then(|mut w| w.write_image_data(&rgb))
        .context("encoding a PNG")?;
    Ok(out)
}

type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, fig: &Figure) -> DrawResult<DB> {
    root.fill(&WHITE)?;
    match fig {
        Figure::Xy(xy) => draw_xy(root, xy),
        Figure::Bars(bars) => draw_bars(root, bars),
    }
}

/// `[lo, hi]` padded, never empty.
fn padded(lo: f64, hi: f64, pad: f64) -> (f64, f64) {
    if !lo.is_finite() || !hi.is_finite() {
        (0.0, 1.0)
    } else if hi - lo < 1e-9 {
        (lo - 1.0, hi + 1.0)
    } else {
        (lo - pad, hi + pad)
    }
}

/// y from 0 to above the highest value (with room for the legend).
fn y_top(values: impl Iterator<Item = f64>) -> f64 {
    let top = values.filter(|v| v.is_finite()).fold(0.0, f64::max);
    if top > 0.0 { top * 1.3 } else { 1.0 }
}

/// The share of a trace's points the y axis of a time series must show:
/// the rest (a receiver's catch-up burst after a stall, measured over a
/// few milliseconds) is drawn at the top and marked, not given the axis.
const TRACE_SHOWN: f64 = 0.99;

/// The top of a time series' y axis: its reference lines and the
/// [`TRACE_SHOWN`] quantile of its points, with room for the legend.
fn trace_top(fig: &XyFigure) -> f64 {
    let mut values: Vec<f64> = fig
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.y))
        .filter(|v| v.is_finite())
        .collect();
    values.sort_by(f64::total_cmp);
    let quantile = values
        .get(((values.len() as f64 - 1.0) * TRACE_SHOWN).round().max(0.0) as usize)
        .copied()
        .unwrap_or(0.0);
    y_top(std::iter::once(quantile).chain(fig.refs.iter().map(|r| r.y)))
}

/// A linear axis' tick value without float noise: plotters steps ticks
/// by adding floats, and `{x}` printed 0.15000000000000002 and a
/// 0.39999999999999997 too wide for the plot (its end was cut off).
/// Six decimals keep microseconds on a seconds axis.
fn tick_label(x: f64) -> String {
    let text = format!("{x:.6}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text == "-0" { "0" } else { text }.to_owned()
}

fn hi(p: &Point) -> f64 {
    p.y + p.half_ci.unwrap_or(0.0)
}

/// The frame every plot shares: its title (marked when there is nothing
/// to draw), margins and axis label areas.
fn framed<'a, 'b, DB: DrawingBackend>(
    root: &'a DrawingArea<DB, Shift>,
    title: &str,
    no_data: bool,
) -> ChartBuilder<'a, 'b, DB> {
    let title = if no_data {
        format!("{title} (no data)")
    } else {
        title.to_owned()
    };
    let mut builder = ChartBuilder::on(root);
    builder
        .caption(title, (FAMILY, 20))
        .margin(12)
        .x_label_area_size(48)
        .y_label_area_size(72);
    builder
}

fn draw_xy<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, fig: &XyFigure) -> DrawResult<DB> {
    let xs = fig.series.iter().flat_map(|s| s.points.iter().map(|p| p.x));
    let (x_lo, x_hi) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
        (a.min(x), b.max(x))
    });
    let (x_lo, x_hi) = if fig.x_log2_bytes {
        padded(x_lo, x_hi, 0.5)
    } else {
        padded(0f64.min(x_lo), x_hi, 0.0)
    };
    let traces = !fig.series.is_empty() && fig.series.iter().all(|s| s.kind == SeriesKind::Trace);
    let y_hi = if traces {
        trace_top(fig)
    } else {
        y_top(
            fig.series
                .iter()
                .flat_map(|s| s.points.iter().map(hi))
                .chain(fig.refs.iter().map(|r| r.y)),
        )
    };
    let no_data = fig.series.iter().all(|s| s.points.is_empty()) && fig.refs.is_empty();
    let mut chart = framed(root, &fig.title, no_data).build_cartesian_2d(x_lo..x_hi, 0.0..y_hi)?;
    let log2 = fig.x_log2_bytes;
    let x_fmt = move |x: &f64| {
        if log2 {
            size_label(2f64.powf(*x))
        } else {
            tick_label(*x)
        }
    };
    let x_labels = if log2 {
        ((x_hi - x_lo).ceil() as usize).clamp(2, 12)
    } else {
        10
    };
    chart
        .configure_mesh()
        .x_desc(fig.x_label.as_str())
        .y_desc(fig.y_label.as_str())
        .x_labels(x_labels)
        .x_label_formatter(&x_fmt)
        .axis_desc_style((FAMILY, 15))
        .light_line_style(WHITE.mix(0.0))
        .draw()?;
    for s in &fig.series {
        let c = color(s.color);
        let xy = |p: &Point| (p.x, p.y);
        let anno = match s.kind {
            SeriesKind::Measured => {
                chart.draw_series(s.points.iter().filter_map(|p| {
                    let h = p.half_ci?;
                    Some(ErrorBar::new_vertical(
                        p.x,
                        p.y - h,
                        p.y,
                        p.y + h,
                        c.stroke_width(1),
                        8,
                    ))
                }))?;
                chart.draw_series(s.points.iter().map(|p| Circle::new(xy(p), 3, c.filled())))?;
                chart.draw_series(LineSeries::new(s.points.iter().map(xy), c.stroke_width(2)))?
            }
            SeriesKind::Trace => {
                // Points above the axis: at its top, each marked.
                let clamped = |p: &Point| (p.x, p.y.min(y_hi));
                chart.draw_series(
                    s.points
                        .iter()
                        .filter(|p| p.y > y_hi)
                        .map(|p| TriangleMarker::new(clamped(p), 5, c.filled())),
                )?;
                chart.draw_series(LineSeries::new(
                    s.points.iter().map(clamped),
                    c.stroke_width(1),
                ))?
            }
            SeriesKind::Published => chart.draw_series(
                s.points
                    .iter()
                    .map(|p| TriangleMarker::new(xy(p), 7, c.filled())),
            )?,
        };
        if let Some(label) = &s.label {
            let anno = anno.label(label.as_str());
            if s.kind == SeriesKind::Published {
                anno.legend(move |(x, y)| {
                    EmptyElement::at((x + 10, y)) + TriangleMarker::new((0, 0), 6, c.filled())
                });
            } else {
                anno.legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
                });
            }
        }
    }
    draw_refs(&mut chart, &fig.refs, x_lo, x_hi)?;
    let clipped = traces
        && fig
            .series
            .iter()
            .any(|s| s.points.iter().any(|p| p.y > y_hi));
    if clipped {
        chart
            .draw_series(std::iter::empty::<TriangleMarker<(f64, f64), i32>>())?
            .label("above the axis (a catch-up burst)")
            .legend(|(x, y)| {
                EmptyElement::at((x + 10, y)) + TriangleMarker::new((0, 0), 5, BLACK.filled())
            });
    }
    if !no_data {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .label_font((FAMILY, 13))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.5))
            .draw()?;
    }
    Ok(())
}

/// Draws reference lines across the x axis from `x_from` to `x_to`, dashed
/// as [`dash`] says, each with its legend entry.
fn draw_refs<DB, X, Y>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
    refs: &[RefLine],
    x_from: X::ValueType,
    x_to: X::ValueType,
) -> DrawResult<DB>
where
    DB: DrawingBackend,
    X: Ranged,
    X::ValueType: Clone,
    Y: Ranged<ValueType = f64>,
{
    for r in refs {
        let c = color(r.color);
        let (dash_px, gap_px) = dash(r.published);
        let line = vec![(x_from.clone(), r.y), (x_to.clone(), r.y)];
        chart
            .draw_series(DashedLineSeries::new(
                line,
                dash_px,
                gap_px,
                c.stroke_width(2),
            ))?
            .label(r.label.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
    }
    Ok(())
}

fn draw_bars<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, fig: &BarFigure) -> DrawResult<DB> {
    let n = fig.bars.len().max(1) as i32;
    let y_hi = y_top(
        fig.bars
            .iter()
            .map(|b| b.value + b.half_ci.unwrap_or(0.0))
            .chain(fig.refs.iter().map(|r| r.y)),
    );
    let mut chart = framed(root, &fig.title, fig.bars.is_empty())
        .build_cartesian_2d((0..n - 1).into_segmented(), 0.0..y_hi)?;
    let labels: Vec<String> = fig.bars.iter().map(|b| b.label.clone()).collect();
    let x_fmt = move |v: &SegmentValue<i32>| match v {
        SegmentValue::CenterOf(i) => labels.get(*i as usize).cloned().unwrap_or_default(),
        _ => String::new(),
    };
    chart
        .configure_mesh()
        .x_desc("tuner")
        .y_desc(fig.y_label.as_str())
        .x_labels(fig.bars.len().max(1))
        .x_label_formatter(&x_fmt)
        .axis_desc_style((FAMILY, 15))
        .light_line_style(WHITE.mix(0.0))
        .disable_x_mesh()
        .draw()?;
    for (g, name) in fig.groups.iter().enumerate() {
        let c = color(g);
        let bars = fig.bars.iter().enumerate().filter(|(_, b)| b.group == g);
        chart
            .draw_series(bars.map(|(i, b)| {
                let i = i as i32;
                let mut r = Rectangle::new(
                    [
                        (SegmentValue::Exact(i), 0.0),
                        (SegmentValue::Exact(i + 1), b.value),
                    ],
                    c.filled(),
                );
                r.set_margin(0, 0, 8, 8);
                r
            }))?
            .label(name.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 16, y + 5)], c.filled()));
    }
    chart.draw_series(fig.bars.iter().enumerate().filter_map(|(i, b)| {
        let h = b.half_ci?;
        Some(ErrorBar::new_vertical(
            SegmentValue::CenterOf(i as i32),
            b.value - h,
            b.value,
            b.value + h,
            BLACK.stroke_width(1),
            12,
        ))
    }))?;
    draw_refs(
        &mut chart,
        &fig.refs,
        SegmentValue::Exact(0),
        SegmentValue::Exact(n),
    )?;
    if !fig.bars.is_empty() {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .label_font((FAMILY, 13))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.5))
            .draw()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::figure::{Bar, RefLine, Series};
    use super::*;

    fn font() {
        super::super::ensure_font().expect("the font scripts/setup installs");
    }

    fn xy() -> XyFigure {
        XyFigure {
            title: "T & <x>".into(),
            x_label: "transfer size (log2 scale)".into(),
            x_log2_bytes: true,
            y_label: "goodput (Mbit/s)".into(),
            series: vec![
                Series {
                    label: Some("auto".into()),
                    color: 0,
                    kind: SeriesKind::Measured,
                    points: vec![
                        Point {
                            x: 20.0,
                            y: 10.0,
                            half_ci: Some(2.0),
                        },
                        Point {
                            x: 26.0,
                            y: 150.0,
                            half_ci: None,
                        },
                    ],
                },
                Series {
                    label: Some("paper: drs".into()),
                    color: 1,
                    kind: SeriesKind::Published,
                    points: vec![Point {
                        x: 26.0,
                        y: 120.0,
                        half_ci: None,
                    }],
                },
            ],
            refs: vec![RefLine {
                label: "kernel".into(),
                y: 90.0,
                color: 2,
                published: false,
            }],
        }
    }

    #[test]
    fn draws_series_legends_and_escaped_titles() {
        font();
        let svg = svg(&Figure::Xy(xy())).expect("svg");
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains("T &amp; &lt;x&gt;"));
        for text in ["auto", "paper: drs", "kernel", "goodput (Mbit/s)", "64 MiB"] {
            assert!(svg.contains(text), "{text} missing");
        }
        let png = png(&Figure::Xy(xy())).expect("png");
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    }

    #[test]
    fn tick_labels_have_no_float_noise() {
        let labels: Vec<String> = [
            0.15000000000000002,
            0.39999999999999997,
            0.0,
            -0.0,
            1200.0,
            2.5e-7,
        ]
        .into_iter()
        .map(tick_label)
        .collect();
        assert_eq!(labels, ["0.15", "0.4", "0", "0", "1200", "0"]);
    }

    #[test]
    fn empty_and_single_figures_draw() {
        font();
        let empty = svg(&Figure::Xy(XyFigure::default())).expect("svg");
        assert!(empty.contains("(no data)"));
        let none = BarFigure::default();
        assert!(
            svg(&Figure::Bars(none.clone()))
                .expect("svg")
                .contains("(no data)")
        );
        let one = BarFigure {
            title: "bars".into(),
            y_label: "goodput (Mbit/s)".into(),
            groups: vec!["path".into()],
            bars: vec![Bar {
                label: "static:16MiB".into(),
                group: 0,
                value: 104.5,
                half_ci: Some(79.5),
            }],
            refs: Vec::new(),
        };
        let svg = svg(&Figure::Bars(one.clone())).expect("svg");
        assert!(svg.contains("static:16MiB") && svg.contains("path"));
        png(&Figure::Bars(one)).expect("png");
    }

    /// Both kinds of figure draw their reference lines the same way: a
    /// dashed line with a legend entry, its dashes longer for a seed's
    /// number than for ours.
    #[test]
    fn reference_lines_on_both_kinds_of_figure() {
        font();
        let refs = vec![
            RefLine {
                label: "ceiling".into(),
                y: 100.0,
                color: 3,
                published: false,
            },
            RefLine {
                label: "paper: 42".into(),
                y: 42.0,
                color: 4,
                published: true,
            },
        ];
        let bars = BarFigure {
            title: "bars".into(),
            y_label: "goodput (Mbit/s)".into(),
            groups: vec!["path".into()],
            bars: vec![Bar {
                label: "stock".into(),
                group: 0,
                value: 80.0,
                half_ci: None,
            }],
            refs: refs.clone(),
        };
        let xy = XyFigure { refs, ..xy() };
        for svg in [
            svg(&Figure::Bars(bars)).expect("svg"),
            svg(&Figure::Xy(xy)).expect("svg"),
        ] {
            assert!(svg.contains("ceiling") && svg.contains("paper: 42"));
        }
        assert!(dash(true).0 > dash(false).0);
    }

    #[test]
    fn a_time_series_axis_shows_the_ceiling_not_a_burst_and_marks_the_burst() {
        font();
        // 300 samples near 180 Mbit/s and one catch-up burst of 1000.
        let mut points: Vec<Point> = (0..300)
            .map(|i| Point {
                x: f64::from(i) * 0.1,
                y: 180.0,
                half_ci: None,
            })
            .collect();
        points[150].y = 1000.0;
        let fig = XyFigure {
            title: "goodput over time".into(),
            x_label: "time (s)".into(),
            x_log2_bytes: false,
            y_label: "goodput per interval (Mbit/s)".into(),
            series: vec![Series {
                label: Some("auto".into()),
                color: 0,
                kind: SeriesKind::Trace,
                points,
            }],
            refs: vec![RefLine {
                label: "path ceiling 193 Mbit/s".into(),
                y: 193.0,
                color: 1,
                published: false,
            }],
        };
        let top = trace_top(&fig);
        assert!((top - 193.0 * 1.3).abs() < 1e-9, "{top}");
        let svg = svg(&Figure::Xy(fig)).expect("svg");
        assert!(svg.contains("above the axis"), "the burst is not marked");
        assert!(svg.contains("path ceiling 193"), "no ceiling line");
    }
}
