//! `rightsize lab` and `rightsize demo`: scenarios run on emulated paths
//! (`rightsize-lab` does the work), with a progress line per run, then the
//! report.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Subcommand};
use rightsize_lab::lab::{self, Planned, ScenarioFile};
use rightsize_lab::layout::{REPORT_DIR, SCREENSHOT_PNG};
use rightsize_lab::report::rendered::{
    BrowserCheck, COLOUR_COUNT_CAP, MIN_PLOT_COLOURS, MIN_PLOT_INK,
};
use rightsize_lab::report::{self, browser};
use rightsize_lab::run::record::RunRecord;
use rightsize_lab::run::runner::run_line;
use rightsize_sys::signals::StopSignals;
use rightsize_tune::units::Bytes;

pub const LAB_ABOUT: &str = "\
Reproduce the experiments of rightsize's source documents on emulated paths: the drsFTP and \
SOBAS papers, the perfSONAR BDP lab and the Windows 2000/XP tuning note (docs/sources.md). Each \
scenario (a TOML file; built-in ones in \
lab/scenarios/, commented) names a path, the tuners, the transfer sizes, the repetitions and the \
plots. `lab run` makes every run, one at a time, each on a fresh path (`rightsize path run` with \
`rightsize serve --tune T` on the right host and `rightsize get --tune T` on the left), into a \
results directory; `lab report` makes PNG and SVG plots, one self-contained HTML report and a \
Markdown summary from that directory's files alone. Needs root (network namespaces).

  rightsize lab list
  rightsize lab run demo drsftp --out results/
  rightsize lab run lab/scenarios/perfsonar.toml --out results/ --quick
  rightsize lab report results/
  rightsize lab report results/ --screenshot

A re-run with the same --out skips the runs already recorded; Ctrl-C leaves only whole runs \
recorded. Runs that fail a fidelity check of the path are shown as invalid and left out of the \
statistics. Exit codes: 0 every run made and recorded, 1 a run failed or was interrupted, 2 bad \
input (a scenario, a directory of another version), before any run starts.";

pub const DEMO_ABOUT: &str = "\
The main job: on a built-in long fat path (200 Mbit/s, 2 x 50 ms, a drop-tail queue of one BDP, \
cubic; Rattan emulates it between two network namespaces), one transfer each with stock (64 \
KiB), kernel (Linux autotuning), drs, sobas and rightsize's auto; then a table (goodput, peak \
buffers, Mbit/s per MB of receive buffer, retransmits, time to reach 90% of the path's rate), \
the plots and the HTML report. About two minutes. Needs root; `./scripts/demo` installs what it \
needs first.

  rightsize demo
  rightsize demo --out /tmp/demo --quick";

/// `rightsize lab`.
#[derive(Debug, Args)]
pub struct LabArgs {
    #[command(subcommand)]
    pub command: LabCommand,
}

#[derive(Debug, Subcommand)]
pub enum LabCommand {
    /// List the built-in scenarios.
    List,
    /// Run scenarios into a results directory, then write its report.
    Run(RunArgs),
    /// Write the plots and reports of a results directory.
    Report(ReportArgs),
}

/// The scenario name that means every built-in one.
pub const ALL: &str = "all";

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Scenario files, built-in scenario names (`rightsize lab list`), or
    /// `all`: every built-in scenario.
    #[arg(required = true, value_name = "SCENARIO")]
    pub scenarios: Vec<String>,
    /// The results directory (made if missing; a re-run skips what it holds).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Each scenario's short variant (its [quick] table): fewer sizes and repetitions.
    #[arg(long)]
    pub quick: bool,
    /// Print the plan and its time estimate, run nothing.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A results directory written by `rightsize lab run`.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Then open the report in headless Chromium (`apt-get install chromium-headless-shell`),
    /// save a full-page screenshot as DIR/report/screenshot.png and check every plot rendered.
    #[arg(long)]
    pub screenshot: bool,
}

/// `rightsize demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// The results directory.
    #[arg(long, value_name = "DIR", default_value = "rightsize-demo")]
    pub out: PathBuf,
    /// Smaller transfers (about a minute).
    #[arg(long)]
    pub quick: bool,
}

pub fn run(args: LabArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        LabCommand::List => {
            for name in lab::builtin_names() {
                let title = ScenarioFile::load(&name, false).map_or_else(
                    |e| format!("(invalid: {e:#})"),
                    |s| s.checked.scenario.title,
                );
                println!("{name:<16} {title}");
            }
            Ok(ExitCode::SUCCESS)
        }
        LabCommand::Run(a) => run_scenarios(&a.scenarios, &a.out, a.quick, a.dry_run, false),
        LabCommand::Report(a) => {
            if let Err(e) = lab::read_info(&a.dir) {
                eprintln!("rightsize: {e:#}");
                return Ok(crate::exit::usage());
            }
            let files = report::make_report(&a.dir)?;
            print_report_files(&files);
            if !a.screenshot {
                return Ok(ExitCode::SUCCESS);
            }
            let shot = a.dir.join(REPORT_DIR).join(SCREENSHOT_PNG);
            let check = browser::check_report(&files.index_html, &shot, files.figures)
                .context("checking the report in a browser")?;
            print_browser_check(&check);
            Ok(if check.passed() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
    }
}

pub fn demo(args: DemoArgs) -> anyhow::Result<ExitCode> {
    run_scenarios(&["demo".to_owned()], &args.out, args.quick, false, true)
}

/// Loads every scenario first (bad input stops before any run), runs the
/// plan, writes the report.
fn run_scenarios(
    names: &[String],
    out: &Path,
    quick: bool,
    dry_run: bool,
    table: bool,
) -> anyhow::Result<ExitCode> {
    // Bad input (a scenario, a directory of another version or mode):
    // exit 2 before any run.
    let bad = |e: anyhow::Error| {
        eprintln!("rightsize: {e:#}");
        Ok(crate::exit::usage())
    };
    let names: Vec<String> = names
        .iter()
        .flat_map(|n| {
            if n == ALL && !Path::new(n).exists() {
                lab::builtin_names()
            } else {
                vec![n.clone()]
            }
        })
        .collect();
    let scenarios = match names
        .iter()
        .map(|n| ScenarioFile::load(n, quick))
        .collect::<anyhow::Result<Vec<_>>>()
    {
        Ok(s) => s,
        Err(e) => return bad(e),
    };
    let plan = lab::plan(&scenarios);
    let done = if out.join("lab.json").exists() {
        if let Err(e) = lab::check_info(out, quick) {
            return bad(e);
        }
        lab::recorded(out)?
    } else {
        Vec::new()
    };
    let skipped = plan.iter().filter(|p| p.done_in(&done)).count();
    println!(
        "rightsize lab: {} scenario(s) into {}: {}",
        scenarios.len(),
        out.display(),
        lab::plan_line(&plan, skipped)
    );
    for s in &scenarios {
        let c = &s.checked;
        println!(
            "  {:<14} {}: {} tuner(s) x {} size(s) x {} variant(s) x {} rep(s) on {}",
            c.name,
            c.scenario.title,
            c.tuners.len(),
            c.sizes.len(),
            s.paths.len(),
            c.reps,
            s.paths[0].1.name
        );
    }
    if dry_run {
        return Ok(ExitCode::SUCCESS);
    }
    rightsize_sys::emu::preflight_root()?;
    let rightsize = std::env::current_exe().context("where is this rightsize binary")?;
    let signals = StopSignals::install().context("catch Ctrl-C")?;
    let stop = || signals.caught().is_some();
    let kernel = rightsize_sys::sysctl::kernel_release().unwrap_or_default();
    let options = lab::Options {
        out,
        rightsize: &rightsize,
        quick,
        argv: std::env::args().collect(),
        kernel,
    };
    let mut progress = Lines { reps: 1 };
    let summary = lab::run(&scenarios, &options, &mut progress, &stop)?;
    println!(
        "\n{} run(s) made, {} already recorded, {} failed{}",
        summary.ran,
        summary.skipped,
        summary.failed,
        if summary.interrupted {
            "; interrupted: run the same command again to go on"
        } else {
            ""
        }
    );
    if summary.interrupted {
        return Ok(ExitCode::FAILURE);
    }
    if table {
        print_table(out, &scenarios)?;
    }
    let files = report::make_report(out)?;
    print_report_files(&files);
    Ok(if summary.failed > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// A line before and after each run.
struct Lines {
    reps: usize,
}

impl lab::Progress for Lines {
    fn starting(&mut self, index: usize, total: usize, run: &Planned, left: Duration) {
        self.reps = run.rep.max(self.reps);
        let shortened = match run.run_size.shortened {
            Some(_) => format!(" (shortened to {})", run.run_size.bytes.human_iec()),
            None => String::new(),
        };
        print!(
            "[{index}/{total}, ~{} left] {} {} {} {}{shortened} rep {}: ",
            lab::eta(left),
            run.scenario,
            run.variant_name,
            run.tuning,
            run.size.human_iec(),
            run.rep
        );
        let _ = std::io::stdout().flush();
    }

    fn finished(&mut self, record: &RunRecord) {
        println!("{}", run_line(record, self.reps));
    }
}

/// The demo's table: one line per tuner, from the recorded runs.
fn print_table(out: &Path, scenarios: &[ScenarioFile]) -> anyhow::Result<()> {
    let runs = lab::recorded(out)?;
    for s in scenarios {
        println!(
            "\n{}\n{:<10} {:>10} {:>12} {:>12} {:>10} {:>10} {:>12}",
            s.checked.scenario.title,
            "tuner",
            "Mbit/s",
            "rcvbuf peak",
            "sndbuf peak",
            "Mbit/s/MB",
            "retrans",
            "to 90% rate"
        );
        for tuner in &s.checked.tuners {
            let name = tuner.label.clone();
            let Some(r) = runs
                .iter()
                .rev()
                .find(|r| r.scenario.as_deref() == Some(s.name()) && r.tuner == name)
            else {
                continue;
            };
            let mb = |b: Option<u64>| b.map_or_else(|| "-".into(), |b| Bytes(b).human_si());
            let per_mb = match (r.measured.goodput_bps, r.measured.peak_rcvbuf_bytes) {
                (Some(g), Some(b)) if b > 0 => format!("{:.1}", g / 1e6 / (b as f64 / 1e6)),
                _ => "-".into(),
            };
            let to90 = time_to_90(out, r);
            println!(
                "{:<10} {:>10} {:>12} {:>12} {:>10} {:>10} {:>12}{}",
                name,
                r.measured
                    .goodput_bps
                    .map_or_else(|| "-".into(), |g| format!("{:.1}", g / 1e6)),
                mb(r.measured.peak_rcvbuf_bytes),
                mb(r.measured.peak_sndbuf_bytes),
                per_mb,
                r.measured
                    .bytes_retrans
                    .map_or_else(|| "-".into(), |b| Bytes(b).human_si()),
                to90,
                match (&r.error, r.valid) {
                    (Some(_), _) => "  FAILED",
                    (None, false) => "  INVALID",
                    _ => "",
                }
            );
        }
    }
    Ok(())
}

/// Seconds from the receiver's first telemetry sample to the first at 90%
/// of the path's goodput ceiling.
fn time_to_90(out: &Path, r: &RunRecord) -> String {
    let file = report::load::client_telemetry(&report::load::run_path(out, r));
    let reached = r.ceiling_bps.and_then(|ceiling| {
        let f = std::fs::File::open(file).ok()?;
        report::telemetry::time_to_reach(std::io::BufReader::new(f), 0.9 * ceiling).ok()
    });
    match reached {
        Some(Some(t)) => format!("{t:.1} s"),
        Some(None) => "never".into(),
        None => "-".into(),
    }
}

fn print_report_files(files: &report::ReportFiles) {
    println!("\nreport: {}", files.index_html.display());
    println!("summary: {}", files.summary_md.display());
    println!("plots: {} file(s)", files.plots.len());
}

/// What the browser check looked at, a line per plot, then the verdict.
fn print_browser_check(check: &BrowserCheck) {
    println!(
        "\nscreenshot: {} ({} x {} px, the whole page; {})",
        check.screenshot.display(),
        check.screenshot_px.0,
        check.screenshot_px.1,
        check.browser
    );
    println!(
        "browser check: {} of {} plot(s) rendered ({} <svg>/<img> in the page; a plot counts when \
         laid out, drawn, and its box in the screenshot has >= {MIN_PLOT_COLOURS} colours and \
         >= {:.0}% not white)",
        check.plots_rendered(),
        check.plots_expected,
        check.elements,
        100.0 * MIN_PLOT_INK
    );
    for (i, p) in check.plots.iter().enumerate() {
        let seen = p.ink.map_or_else(String::new, |ink| {
            let more = if ink.colours >= COLOUR_COUNT_CAP {
                "+"
            } else {
                ""
            };
            format!(
                ", {}{more} colours, {:.1}% not white",
                ink.colours,
                100.0 * ink.share
            )
        });
        println!(
            "  plot {}: <{}> {:.0} x {:.0} px at y = {:.0}{seen}: {}",
            i + 1,
            p.probe.tag.as_deref().unwrap_or("none"),
            p.probe.w,
            p.probe.h,
            p.probe.y,
            p.problem.as_deref().unwrap_or("ok")
        );
    }
    for problem in check.problems() {
        println!("problem: {problem}");
    }
}
