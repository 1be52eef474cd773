//! `lab report`: the tables and plots of a results directory (the layout
//! is in the crate's doc), made only from its files: `DIR/lab.json`,
//! `DIR/scenarios/*.toml`, `DIR/runs.jsonl` and the telemetry of the runs
//! a table or time plot needs. It writes `DIR/report/index.html` (one
//! self-contained page: inline SVG plots, inline style), `summary.md`
//! (the same tables, plots linked) and `SCENARIO-PLOT.svg` and `.png`
//! for each plot a scenario asks for.
//!
//! Each point is the mean of the valid repetitions with its 95%
//! confidence interval (Student's t; one repetition has none). A run is
//! valid when its fidelity checks passed and it has no error; the others
//! are listed with their failed checks or error, and left out.
//!
//! [`browser`] opens the page in headless Chromium, takes a full-page
//! screenshot and checks every plot rendered (`lab report --screenshot`);
//! [`rendered`] judges what it saw.
//!
//! Only [`make_report`], [`load`] and [`browser`] touch files. The statistics
//! ([`stats`]), tables ([`table`]), plot contents ([`figure`]), drawing
//! ([`render`]) and the HTML and Markdown ([`html`], [`markdown`]) are
//! functions over data.
//!
//! Fonts: the plots' text is laid out and rasterised from one TrueType
//! file, [`FONT_PATH`] (Debian's `fonts-dejavu-core`, which
//! `scripts/setup` installs), read directly: no fontconfig, no system
//! font discovery. Without it the report fails, naming the package: the
//! SVGs need the font's metrics as much as the PNGs do, so there is no
//! half-report to fall back to.
//!
//! Speed: the time to 90% of the ceiling reads each valid run's receiver
//! telemetry only up to the sample that reaches it; the time plots read
//! whole files only for the runs they draw (largest size); decision lines
//! are skipped unparsed.

pub mod browser;
pub mod doc;
pub mod figure;
pub mod html;
pub mod load;
pub mod markdown;
pub mod render;
pub mod rendered;
pub mod stats;
pub mod table;
pub mod telemetry;

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use anyhow::{Context, anyhow};

use self::doc::{PlotOut, Report, RunFiles, Section, plot_name};
use self::figure::{Figure, reads_sender, time_points, time_runs};
use self::table::{CEILING_SHARE, ClaimRow, Reach, RunView};
use self::telemetry::Sample;
use crate::layout::REPORT_DIR;
use crate::run::record::RunRecord;
use crate::scenario::{Checked, Plot};

/// The font the plots' text is drawn with.
pub const FONT_PATH: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
/// The Debian package that installs [`FONT_PATH`].
pub const FONT_PACKAGE: &str = "fonts-dejavu-core";

/// The variant of a run that names none: a scenario without variants.
pub const DEFAULT_VARIANT: &str = "path";

/// What [`make_report`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportFiles {
    /// `DIR/report/index.html`.
    pub index_html: PathBuf,
    /// `DIR/report/summary.md`.
    pub summary_md: PathBuf,
    /// `DIR/report/SCENARIO-PLOT.svg` and `.png`, in pairs.
    pub plots: Vec<PathBuf>,
    /// Plots on the page (one `<figure>` each).
    pub figures: usize,
}

impl ReportFiles {
    /// Every file, the page first.
    pub fn all(&self) -> Vec<&Path> {
        let mut all = vec![self.index_html.as_path(), self.summary_md.as_path()];
        all.extend(self.plots.iter().map(PathBuf::as_path));
        all
    }
}

/// Makes the report of results directory `dir` in `dir/report/`.
pub fn make_report(dir: &Path) -> anyhow::Result<ReportFiles> {
    let lab = load::lab_info(dir)?;
    let scenarios = load::scenarios(dir, lab.quick)?;
    let records = load::runs(dir)?;
    ensure_font()?;
    let runs_total = records.len();
    let (by_scenario, notes) = assign(records, &scenarios);
    let mut sections = Vec::new();
    let mut claims = Vec::new();
    let mut pngs = Vec::new();
    for (checked, runs) in scenarios.iter().zip(by_scenario) {
        let (section, section_claims, section_pngs) = scenario_section(dir, checked, runs)?;
        sections.push(section);
        claims.extend(section_claims);
        pngs.extend(section_pngs);
    }
    let report = Report {
        lab,
        runs_total,
        sections,
        claims,
        notes,
    };
    let out = dir.join(REPORT_DIR);
    fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let write = |name: &str, bytes: &[u8]| -> anyhow::Result<PathBuf> {
        let path = out.join(name);
        fs::write(&path, bytes).with_context(|| format!("writing {}", path.display()))?;
        Ok(path)
    };
    let mut plots = Vec::new();
    let figures = report.sections.iter().map(|s| s.plots.len()).sum();
    let svgs = report.sections.iter().flat_map(|s| &s.plots);
    for (p, png) in svgs.zip(&pngs) {
        plots.push(write(&format!("{}.svg", p.stem), p.svg.as_bytes())?);
        plots.push(write(&format!("{}.png", p.stem), png)?);
    }
    Ok(ReportFiles {
        index_html: write("index.html", html::render(&report).as_bytes())?,
        summary_md: write("summary.md", markdown::render(&report).as_bytes())?,
        plots,
        figures,
    })
}

/// Reads [`FONT_PATH`] and registers it for the plots, once per process.
pub(crate) fn ensure_font() -> anyhow::Result<()> {
    static FONT: OnceLock<Result<(), String>> = OnceLock::new();
    FONT.get_or_init(|| {
        let bytes = fs::read(FONT_PATH).map_err(|e| {
            format!(
                "the plots need the font {FONT_PATH} ({e}): install it with \
                 `apt-get install {FONT_PACKAGE}` (scripts/setup does)"
            )
        })?;
        // plotters keeps a registered font for the life of the process.
        let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
        render::register_font(bytes).map_err(|e| format!("{FONT_PATH}: {e}"))
    })
    .clone()
    .map_err(|e| anyhow!(e))
}

/// The runs of each scenario (in `scenarios`' order) and remarks about
/// runs of none of them.
pub fn assign(records: Vec<RunRecord>, scenarios: &[Checked]) -> (Vec<Vec<RunView>>, Vec<String>) {
    let mut by: Vec<Vec<RunView>> = scenarios.iter().map(|_| Vec::new()).collect();
    let mut orphans: BTreeMap<String, usize> = BTreeMap::new();
    for record in records {
        let at = record
            .scenario
            .as_deref()
            .and_then(|s| scenarios.iter().position(|c| c.name == s));
        match at {
            Some(i) => by[i].push(RunView {
                variant: record
                    .variant
                    .clone()
                    .unwrap_or_else(|| DEFAULT_VARIANT.to_owned()),
                record,
                reach: Reach::Unknown,
            }),
            None => {
                let name = record
                    .scenario
                    .clone()
                    .unwrap_or_else(|| "(none)".to_owned());
                *orphans.entry(name).or_default() += 1;
            }
        }
    }
    let notes = orphans
        .into_iter()
        .map(|(name, n)| {
            format!("{n} run(s) of scenario {name}, which has no copy in scenarios/, left out")
        })
        .collect();
    (by, notes)
}

/// Telemetry a run lacked, and what it was left out of.
type Missing = BTreeMap<(usize, PathBuf), Vec<String>>;

/// One scenario's section, its claims and its plots' PNGs (in the order
/// of the section's plots).
fn scenario_section(
    dir: &Path,
    checked: &Checked,
    mut runs: Vec<RunView>,
) -> anyhow::Result<(Section, Vec<ClaimRow>, Vec<Vec<u8>>)> {
    let mut missing = Missing::new();
    for (i, run) in runs.iter_mut().enumerate() {
        let Some(ceiling) = run.record.ceiling_bps.filter(|_| run.is_valid()) else {
            continue;
        };
        let path = load::client_telemetry(&load::run_path(dir, &run.record));
        run.reach = match load::time_to_reach(&path, CEILING_SHARE * ceiling) {
            Ok(Some(s)) => Reach::At(s),
            Ok(None) => Reach::Never,
            Err(_) => {
                note_missing(&mut missing, i, path, "time to 90%");
                Reach::Unknown
            }
        };
    }
    let rows = table::rows(checked, &runs);
    let claims = table::claims(checked, &rows);
    let mut plots = Vec::new();
    let mut pngs = Vec::new();
    let mut client: HashMap<usize, Option<Vec<Sample>>> = HashMap::new();
    let mut server: HashMap<usize, Option<Vec<Sample>>> = HashMap::new();
    let mut asked: Vec<Plot> = Vec::new();
    for &plot in &checked.scenario.plots {
        if asked.contains(&plot) {
            continue;
        }
        asked.push(plot);
        let mut traces = BTreeMap::new();
        for i in time_runs(plot, &runs) {
            let run_dir = load::run_path(dir, &runs[i].record);
            let (cache, path) = if reads_sender(plot) {
                let path = load::server_telemetry(&run_dir).unwrap_or_else(|| {
                    run_dir.join(format!("*{}", crate::layout::SERVER_TELEMETRY_SUFFIX))
                });
                (&mut server, path)
            } else {
                (&mut client, load::client_telemetry(&run_dir))
            };
            let samples = cache.entry(i).or_insert_with(|| load::samples(&path).ok());
            match samples {
                Some(s) => {
                    traces.insert(i, time_points(plot, s));
                }
                None => note_missing(&mut missing, i, path, &plot_name(plot)),
            }
        }
        let fig: Figure = figure::figure(checked, plot, &rows, &runs, &traces);
        let stem = format!("{}-{}", checked.name, plot_name(plot));
        let svg = render::svg(&fig).with_context(|| format!("drawing {stem}.svg"))?;
        pngs.push(render::png(&fig).with_context(|| format!("drawing {stem}.png"))?);
        plots.push(PlotOut {
            plot,
            stem,
            title: fig.title().to_owned(),
            svg,
        });
    }
    let notes = missing
        .into_iter()
        .map(|((i, path), what)| {
            format!(
                "run {}: no telemetry {}: left out of {}",
                runs[i].record.run_dir,
                path.display(),
                what.join(", ")
            )
        })
        .collect();
    let relative = |path: &Path| {
        path.is_file().then(|| {
            path.strip_prefix(dir)
                .unwrap_or(path)
                .to_string_lossy()
                .into_owned()
        })
    };
    let telemetry = runs
        .iter()
        .map(|r| {
            let run_dir = load::run_path(dir, &r.record);
            RunFiles {
                variant: r.variant.clone(),
                tuner: r.record.tuner.clone(),
                size_bytes: r.asked_bytes(),
                rep: r.record.rep,
                valid: r.is_valid(),
                client: relative(&load::client_telemetry(&run_dir)),
                server: load::server_telemetry(&run_dir).and_then(|p| relative(&p)),
            }
        })
        .collect();
    let section = Section {
        name: checked.name.clone(),
        title: checked.scenario.title.clone(),
        about: checked.scenario.about.clone(),
        plots,
        invalid: table::invalid_runs(&runs),
        rows,
        notes,
        telemetry,
    };
    Ok((section, claims, pngs))
}

fn note_missing(missing: &mut Missing, run: usize, path: PathBuf, what: &str) {
    missing
        .entry((run, path))
        .or_default()
        .push(what.to_owned());
}

#[cfg(test)]
mod fixture;
#[cfg(test)]
mod tests;
