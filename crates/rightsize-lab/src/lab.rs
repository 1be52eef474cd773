//! `rightsize lab run`: every run of some scenarios, one at a time, each on
//! a fresh emulated path, into a results directory (layout in the crate
//! documentation). A re-run skips the runs already recorded there; an
//! interrupted one leaves only whole runs recorded.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use rightsize_tune::units::Bytes;

use crate::layout::{LabInfo, RUNS_JSONL};
use crate::run::budget::{self, RunSize};
use crate::run::paths::{self, LoadedPath};
use crate::run::peer::Peer;
use crate::run::record::RunRecord;
use crate::run::runner::{self, append_line, dir_name, unix_seconds};
use crate::scenario::{Checked, RunTuning, Variant};

/// Where the built-in scenarios live, in the source tree.
pub const SCENARIOS_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../lab/scenarios");

/// Overhead of one run besides the transfer (path up and down, checks,
/// the FTP session's round trips): measured 0.9 to 2.4 s per run here
/// (release build, RTTs of 2.5 to 100 ms), plus the lab's own bookkeeping.
const RUN_OVERHEAD: Duration = Duration::from_secs(3);

/// A scenario, read and checked, with its path.
#[derive(Debug, Clone)]
pub struct ScenarioFile {
    /// The file.
    pub file: PathBuf,
    /// Its text.
    pub text: String,
    /// Parsed and checked.
    pub checked: Checked,
    /// Its path, per variant (the variant, the path with its settings).
    pub paths: Vec<(Variant, LoadedPath)>,
}

impl ScenarioFile {
    /// Loads `name_or_file`: an existing file, else a built-in scenario
    /// (`lab/scenarios/NAME.toml`).
    pub fn load(name_or_file: &str, quick: bool) -> anyhow::Result<ScenarioFile> {
        let (file, name) = paths::find(name_or_file, Path::new(SCENARIOS_DIR)).ok_or_else(|| {
            anyhow::anyhow!(
                "scenario {name_or_file:?}: neither a file nor a built-in scenario (built in: {})",
                builtin_names().join(", ")
            )
        })?;
        let text =
            fs::read_to_string(&file).with_context(|| format!("cannot read {}", file.display()))?;
        let checked = Checked::parse(&name, &text, quick)?;
        let base = file.parent().unwrap_or(Path::new("/"));
        let path_arg = &checked.scenario.path;
        let relative = base.join(path_arg);
        let path = if relative.is_file() {
            LoadedPath::load(&relative.to_string_lossy())
        } else {
            LoadedPath::load(path_arg)
        }
        .with_context(|| format!("scenario {name:?}"))?;
        let paths = checked
            .variants()
            .into_iter()
            .map(|v| {
                let p = path
                    .with_variant(&v.name, &v.path, &v.left, &v.right)
                    .with_context(|| format!("scenario {name:?}"))?;
                Ok((v, p))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(ScenarioFile {
            file,
            text,
            checked,
            paths,
        })
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.checked.name
    }
}

/// The built-in scenarios' names.
pub fn builtin_names() -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(SCENARIOS_DIR)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter_map(|e| {
                    let p = e.path();
                    (p.extension()? == "toml")
                        .then(|| p.file_stem()?.to_str().map(str::to_owned))?
                })
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// One run of the plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    /// Scenario name.
    pub scenario: String,
    /// Index into the scenario's `paths`.
    pub variant: usize,
    /// Variant name.
    pub variant_name: String,
    /// The tuners.
    pub tuning: RunTuning,
    /// Bytes asked.
    pub size: Bytes,
    /// Bytes moved (less when a slow tuner's run is shortened).
    pub run_size: RunSize,
    /// Repetition, from 1.
    pub rep: usize,
    /// The run's directory, relative to the results directory.
    pub dir: PathBuf,
    /// What it is expected to take.
    pub estimate: Duration,
}

impl Planned {
    /// Whether `records` hold this run, finished without an error (a
    /// failed run is made again).
    pub fn done_in(&self, records: &[RunRecord]) -> bool {
        records.iter().any(|r| self.is(r) && r.error.is_none())
    }

    /// Whether `r` records this run.
    pub fn is(&self, r: &RunRecord) -> bool {
        r.scenario.as_deref() == Some(&self.scenario)
            && r.variant.as_deref() == Some(&self.variant_name)
            && r.tuner == self.tuning.label
            && r.rep == self.rep
            && r.shortened_from_bytes.unwrap_or(r.size_bytes) == self.size.get()
    }
}

/// Every run of `scenarios`, in order: per scenario, repetition, size and
/// variant, the tuners in turn (so a drift of the machine spreads over
/// all of them).
pub fn plan(scenarios: &[ScenarioFile]) -> Vec<Planned> {
    let mut runs = Vec::new();
    for s in scenarios {
        let c = &s.checked;
        for rep in 1..=c.reps {
            for &size in &c.sizes {
                for (vi, (variant, path)) in s.paths.iter().enumerate() {
                    let bdp = path.facts().bdp_bytes as u64;
                    for tuning in &c.tuners {
                        let tuning = tuning.resolve(bdp);
                        let expected = [tuning.server, tuning.client]
                            .iter()
                            .filter_map(|t| budget::expected_rate_bps(t, &path.spec))
                            .reduce(f64::min);
                        let run_size = match c.scenario.max_run_seconds {
                            Some(secs) => budget::run_size(
                                size,
                                expected,
                                None,
                                Duration::from_secs_f64(secs),
                            ),
                            None => RunSize {
                                bytes: size,
                                shortened: None,
                            },
                        };
                        let rate = expected
                            .unwrap_or_else(|| budget::goodput_ceiling_bps(&path.spec))
                            .max(1e5);
                        let transfer =
                            Duration::from_secs_f64(run_size.bytes.get() as f64 * 8.0 / rate);
                        runs.push(Planned {
                            scenario: c.name.clone(),
                            variant: vi,
                            variant_name: variant.name.clone(),
                            size,
                            run_size,
                            rep,
                            dir: PathBuf::from(&c.name).join(dir_name(&variant.name)).join(
                                format!(
                                    "{}-{}-rep{rep}",
                                    dir_name(&tuning.label),
                                    dir_name(&size.human_iec())
                                ),
                            ),
                            estimate: RUN_OVERHEAD + transfer,
                            tuning,
                        });
                    }
                }
            }
        }
    }
    runs
}

/// How `run` reports as it goes.
pub trait Progress {
    /// Before a run: `index` from 1 of `total`, the time expected left.
    fn starting(&mut self, index: usize, total: usize, run: &Planned, left: Duration);
    /// After it.
    fn finished(&mut self, record: &RunRecord);
}

/// What `run` did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    /// Runs made now.
    pub ran: usize,
    /// Runs found already recorded.
    pub skipped: usize,
    /// Runs made now that failed.
    pub failed: usize,
    /// Whether a stop was asked before the plan's end.
    pub interrupted: bool,
}

/// Options of `run`.
#[derive(Debug)]
pub struct Options<'a> {
    /// The results directory.
    pub out: &'a Path,
    /// The `rightsize` binary.
    pub rightsize: &'a Path,
    /// `--quick`.
    pub quick: bool,
    /// The command line, for the records.
    pub argv: Vec<String>,
    /// The kernel release.
    pub kernel: String,
}

/// Prepares the results directory: `lab.json` (made, or checked to be of
/// this version and mode) and the scenarios' copies; then the runs already
/// recorded.
pub fn prepare(scenarios: &[ScenarioFile], o: &Options) -> anyhow::Result<Vec<RunRecord>> {
    fs::create_dir_all(o.out.join("scenarios"))
        .with_context(|| format!("cannot create {}", o.out.join("scenarios").display()))?;
    let info_file = o.out.join("lab.json");
    if info_file.exists() {
        check_info(o.out, o.quick)?;
    } else {
        let info = LabInfo::new(o.kernel.clone(), unix_seconds(), o.quick, o.argv.clone());
        write_new(&info_file, &serde_json::to_string_pretty(&info)?)?;
    }
    for s in scenarios {
        let copy = o.out.join("scenarios").join(format!("{}.toml", s.name()));
        match fs::read_to_string(&copy) {
            Ok(old) if old == s.text => {}
            Ok(_) => bail!(
                "{} holds runs of another scenario {:?} (its copy {} differs from {}): give --out another directory",
                o.out.display(),
                s.name(),
                copy.display(),
                s.file.display()
            ),
            Err(_) => write_new(&copy, &s.text)?,
        }
    }
    recorded(o.out)
}

/// Checks that `dir` holds runs of this version and of this mode.
pub fn check_info(dir: &Path, quick: bool) -> anyhow::Result<()> {
    let info = read_info(dir)?;
    if info.quick != quick {
        bail!(
            "{} holds {} runs; this is a {} run: give --out another directory",
            dir.display(),
            if info.quick { "--quick" } else { "full" },
            if quick { "--quick" } else { "full" }
        );
    }
    Ok(())
}

/// `lab.json` of a results directory, checked to be of this version.
pub fn read_info(dir: &Path) -> anyhow::Result<LabInfo> {
    crate::report::load::lab_info(dir)
}

/// The runs recorded in `DIR/runs.jsonl` (none if it does not exist yet).
pub fn recorded(dir: &Path) -> anyhow::Result<Vec<RunRecord>> {
    if !dir.join(RUNS_JSONL).exists() {
        return Ok(Vec::new());
    }
    crate::report::load::runs(dir)
}

/// Writes a file through a temporary name, so it is whole or absent.
fn write_new(file: &Path, text: &str) -> anyhow::Result<()> {
    let tmp = file.with_extension("part");
    fs::write(&tmp, text).with_context(|| format!("cannot write {}", tmp.display()))?;
    fs::rename(&tmp, file).with_context(|| format!("cannot rename to {}", file.display()))
}

/// Runs the plan of `scenarios` into `o.out`, skipping recorded runs;
/// `stop` is asked before each run (and a run during which a stop was
/// asked is not recorded: its path was torn down under it).
pub fn run(
    scenarios: &[ScenarioFile],
    o: &Options,
    progress: &mut dyn Progress,
    stop: &dyn Fn() -> bool,
) -> anyhow::Result<Summary> {
    let done = prepare(scenarios, o)?;
    let plan = plan(scenarios);
    let mut summary = Summary::default();
    let todo: Vec<&Planned> = plan
        .iter()
        .filter(|p| {
            let found = p.done_in(&done);
            summary.skipped += usize::from(found);
            !found
        })
        .collect();
    let invocation = format!("{}-{}", unix_seconds(), std::process::id());
    let runs_file = o.out.join("runs.jsonl");
    let mut left: Duration = todo.iter().map(|p| p.estimate).sum();
    let started = Instant::now();
    let mut spent_estimated = Duration::ZERO;
    for (i, p) in todo.iter().enumerate() {
        if stop() {
            summary.interrupted = true;
            break;
        }
        // The estimate, scaled by how the runs so far compared with theirs.
        let scale = if spent_estimated.is_zero() {
            1.0
        } else {
            started.elapsed().as_secs_f64() / spent_estimated.as_secs_f64()
        };
        progress.starting(i + 1, todo.len(), p, left.mul_f64(scale.clamp(0.2, 5.0)));
        let Some(s) = scenarios.iter().find(|s| s.name() == p.scenario) else {
            continue;
        };
        let (variant, path) = &s.paths[p.variant];
        let dir = o.out.join(&p.dir);
        // A run the fidelity checks mark invalid (the emulator or the hosts
        // did not do what the spec says) is made once more, and the second
        // is recorded whatever it shows.
        let mut attempts = 0;
        let record = loop {
            attempts += 1;
            if dir.exists() {
                // A run that was interrupted, failed or was invalid: made
                // again from scratch.
                fs::remove_dir_all(&dir)
                    .with_context(|| format!("cannot remove {}", dir.display()))?;
            }
            let started_unix_s = unix_seconds();
            let outcome = runner::execute(&runner::RunSpec {
                rightsize: o.rightsize,
                path,
                server_tune: &p.tuning.server.to_string(),
                client_tune: &p.tuning.client.to_string(),
                server_args: &variant.server_args,
                peer: Peer::Rightsize,
                size: p.run_size.bytes,
                dir: dir.clone(),
                deadline: budget::run_deadline(p.run_size, &path.spec),
                seed: Some(p.rep as u64),
                stop,
            })?;
            if stop() {
                break None;
            }
            let record = outcome.into_record(
                runner::Identity {
                    invocation: invocation.clone(),
                    argv: o.argv.clone(),
                    kernel: o.kernel.clone(),
                    started_unix_s,
                    tuner: p.tuning.label.clone(),
                    peer: None,
                    rep: p.rep,
                    size_bytes: p.run_size.bytes.get(),
                    shortened_from_bytes: p.run_size.shortened.map(|_| p.size.get()),
                    run_dir: p.dir.to_string_lossy().into_owned(),
                    scenario: Some(p.scenario.clone()),
                    variant: Some(p.variant_name.clone()),
                },
                path,
            );
            if record.valid || record.error.is_some() || attempts == 2 {
                break Some(record);
            }
        };
        let Some(record) = record else {
            summary.interrupted = true;
            break;
        };
        append_line(&runs_file, &serde_json::to_string(&record)?)?;
        summary.ran += 1;
        summary.failed += usize::from(record.error.is_some());
        progress.finished(&record);
        left = left.saturating_sub(p.estimate);
        spent_estimated += p.estimate;
    }
    Ok(summary)
}

/// A duration as a person reads a time left: "45 s", "12 min", "1 h 05 min".
pub fn eta(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min", s.div_ceil(60)),
        _ => format!("{} h {:02} min", s / 3600, (s % 3600) / 60),
    }
}

/// "288 runs, about 41 min".
pub fn plan_line(plan: &[Planned], skipped: usize) -> String {
    let total: Duration = plan.iter().map(|p| p.estimate).sum();
    format!(
        "{} runs ({} already recorded), about {} if the tuners reach their expected rates",
        plan.len(),
        skipped,
        eta(total)
    )
}
