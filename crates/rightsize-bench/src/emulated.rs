//! What the benchmarks on emulated paths (`tuners`, `peers`) share: the
//! `rightsize` binary, the results directory and its `runs.jsonl`, one run
//! through the lab's runner recorded as one line, and the lines people
//! read about a path and a shortened run.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use rightsize_path::{RateSpec, Side};
use rightsize_sys::signals::{self, StopSignals};
use rightsize_tune::TunerSpec;
use rightsize_tune::units::{Bytes, human_duration};

use rightsize_lab::run::budget::{self, Basis, RunSize};
use rightsize_lab::run::paths::LoadedPath;
use rightsize_lab::run::peer::Peer;
use rightsize_lab::run::record::{self, RunRecord};
use rightsize_lab::run::runner::{self, append_line, dir_name, run_line, unix_seconds};

/// One invocation of a benchmark: where its runs go and what each run's
/// record says of it.
#[derive(Debug)]
pub struct Bench {
    /// The `rightsize` binary next to this one.
    pub rightsize: PathBuf,
    /// The results directory (canonical).
    pub out: PathBuf,
    /// `out/runs.jsonl`.
    pub runs_file: PathBuf,
    /// `<unix seconds>-<pid>`.
    pub invocation: String,
    /// The command line.
    pub argv: Vec<String>,
    /// The kernel release.
    pub kernel: String,
    /// `SIGINT` and `SIGTERM` caught while it runs: a run stops, its path
    /// is taken down, and the benchmark ends with what it recorded.
    _stop: StopSignals,
}

/// One cell of a benchmark: see [`Bench::cell`].
#[derive(Debug, Clone, Copy)]
pub struct Cell<'a> {
    /// The path.
    pub path: &'a LoadedPath,
    /// The programs at the two ends; see [`Run::peer`].
    pub peer: Option<Peer>,
    /// The tuners, in the order they alternate.
    pub tuners: &'a [TunerSpec],
    /// Repetitions of each.
    pub reps: usize,
    /// The size asked for on the command line.
    pub asked: Bytes,
    /// What a slow tuner's run may last.
    pub budget: Duration,
    /// The directory the cell's runs go in, one `TUNER-repN` each.
    pub dir: &'a Path,
    /// The indent of its lines.
    pub indent: &'a str,
}

/// One run to make.
#[derive(Debug, Clone, Copy)]
pub struct Run<'a> {
    /// The path.
    pub path: &'a LoadedPath,
    /// The programs at the two ends, and named in the record
    /// (`rightsize-bench peers`); `None`: rightsize at both, and no `peer`
    /// in the record (`rightsize-bench tuners`).
    pub peer: Option<Peer>,
    /// The tuner of both rightsize ends.
    pub tuner: &'a str,
    /// Repetition, from 1.
    pub rep: usize,
    /// Its size.
    pub size: RunSize,
    /// The size asked for on the command line.
    pub asked: Bytes,
    /// Its directory, which must not exist yet.
    pub dir: &'a Path,
}

impl Bench {
    /// Checks that this runs as root and finds `rightsize`, before
    /// anything else is looked at.
    pub fn preflight() -> anyhow::Result<PathBuf> {
        rightsize_sys::emu::preflight_root()?;
        rightsize_bin()
    }

    /// What both emulated benchmarks do first: checks that this runs as
    /// root, loads the paths, and creates the results directory
    /// ([`Bench::start`]). With it, the time a slow tuner's run is sized
    /// to last ([`budget::SMOKE_SLOW_RUN`] in a smoke run).
    pub fn open(
        name: &str,
        paths: &[String],
        out: Option<&Path>,
        smoke: bool,
    ) -> anyhow::Result<(Bench, Vec<LoadedPath>, Duration)> {
        let rightsize = Bench::preflight()?;
        let paths = paths
            .iter()
            .map(|p| LoadedPath::load(p))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let bench = Bench::start(name, rightsize, out)?;
        let slow_run = if smoke {
            budget::SMOKE_SLOW_RUN
        } else {
            budget::SLOW_RUN
        };
        Ok((bench, paths, slow_run))
    }

    /// Creates the results directory: `out`, or
    /// `target/bench-results/NAME-UNIXTIME` beside `rightsize`
    /// ([`Bench::preflight`]'s).
    pub fn start(name: &str, rightsize: PathBuf, out: Option<&Path>) -> anyhow::Result<Bench> {
        let now = unix_seconds();
        let out = match out {
            Some(dir) => dir.to_owned(),
            None => rightsize
                .parent()
                .and_then(Path::parent)
                .context("no target directory above the binary")?
                .join("bench-results")
                .join(format!("{name}-{now}")),
        };
        fs::create_dir_all(&out).with_context(|| format!("cannot create {}", out.display()))?;
        let out = out.canonicalize()?;
        Ok(Bench {
            rightsize,
            runs_file: out.join("runs.jsonl"),
            out,
            invocation: format!("{now}-{}", std::process::id()),
            argv: std::env::args().collect(),
            kernel: rightsize_sys::sysctl::kernel_release().unwrap_or_default(),
            _stop: StopSignals::install().context("catch Ctrl-C")?,
        })
    }

    /// Makes one run and appends its line to `runs.jsonl`; a run that
    /// failed is a record with an error, not an `Err`. A run stopped by
    /// `SIGINT` or `SIGTERM` is an `Err`, recorded nowhere.
    pub fn run(&self, r: Run) -> anyhow::Result<RunRecord> {
        if r.dir.exists() {
            bail!(
                "{} already holds a run; give --out a new directory",
                r.dir.display()
            );
        }
        let started_unix_s = unix_seconds();
        let outcome = runner::execute(&runner::RunSpec {
            rightsize: &self.rightsize,
            path: r.path,
            server_tune: r.tuner,
            client_tune: r.tuner,
            server_args: &[],
            peer: r.peer.unwrap_or_default(),
            size: r.size.bytes,
            dir: r.dir.to_owned(),
            deadline: budget::run_deadline(r.size, &r.path.spec),
            seed: Some(r.rep as u64),
            stop: &|| signals::caught().is_some(),
        })?;
        if let Some(signal) = signals::caught() {
            bail!(
                "stopped by {signal} during a run of {} (not recorded); the runs before it are in {}",
                r.path.name,
                self.runs_file.display()
            );
        }
        let record = outcome.into_record(
            runner::Identity {
                invocation: self.invocation.clone(),
                argv: self.argv.clone(),
                kernel: self.kernel.clone(),
                started_unix_s,
                tuner: r.tuner.to_owned(),
                peer: r.peer.map(|p| p.name().to_owned()),
                rep: r.rep,
                size_bytes: r.size.bytes.0,
                shortened_from_bytes: r.size.shortened.map(|_| r.asked.0),
                run_dir: r.dir.to_string_lossy().into_owned(),
                scenario: None,
                variant: None,
            },
            r.path,
        );
        append_line(&self.runs_file, &serde_json::to_string(&record)?)?;
        Ok(record)
    }

    /// One cell: every tuner on `cell.path` (with `cell.peer`),
    /// `cell.reps` times, the tuners alternating within each repetition.
    /// A tuner expected to be slow, or measured slow in its first
    /// repetition, moves what lasts `cell.budget` (said once). Prints a
    /// line per run at `cell.indent`; returns how many runs failed.
    pub fn cell(&self, cell: &Cell) -> anyhow::Result<usize> {
        let indent = cell.indent;
        let mut failed = 0usize;
        let mut first_rep: Vec<Option<f64>> = vec![None; cell.tuners.len()];
        for rep in 1..=cell.reps {
            for (i, spec) in cell.tuners.iter().enumerate() {
                let tuner = spec.to_string();
                let expected = budget::expected_rate_bps(spec, &cell.path.spec);
                let size = budget::run_size(cell.asked, expected, first_rep[i], cell.budget);
                if let Some(basis) = size.shortened
                    && (rep == 1 || matches!(basis, Basis::Measured(_)))
                {
                    let note = shortened_note(&tuner, size, basis, cell.asked, cell.budget);
                    println!("{indent}{note}");
                }
                let dir = cell.dir.join(format!("{}-rep{rep}", dir_name(&tuner)));
                let record = self.run(Run {
                    path: cell.path,
                    peer: cell.peer,
                    tuner: &tuner,
                    rep,
                    size,
                    asked: cell.asked,
                    dir: &dir,
                })?;
                println!("{indent}{}", run_line(&record, cell.reps));
                if record.error.is_some() {
                    failed += 1;
                } else if rep == 1 {
                    first_rep[i] = record.measured.goodput_bps;
                }
            }
        }
        Ok(failed)
    }

    /// A record of this invocation's own (a run of `datasets` or `scale`):
    /// the invocation, the command line, the kernel, the version and when
    /// the run started, then `fields` (an object).
    pub fn record(&self, started_unix_s: u64, fields: serde_json::Value) -> serde_json::Value {
        let mut record = serde_json::json!({
            "invocation": self.invocation,
            "argv": self.argv,
            "kernel": self.kernel,
            "version": env!("CARGO_PKG_VERSION"),
            "started_unix_s": started_unix_s,
        });
        if let (Some(head), serde_json::Value::Object(rest)) = (record.as_object_mut(), fields) {
            head.extend(rest);
        }
        record
    }

    /// The runs of this invocation, read back from `runs.jsonl`: the report
    /// is made from the data file, as any later one would be.
    pub fn runs(&self) -> anyhow::Result<Vec<RunRecord>> {
        let text = fs::read_to_string(&self.runs_file)
            .with_context(|| format!("cannot read {}", self.runs_file.display()))?;
        record::runs_of(&text, &self.invocation)
    }
}

/// The `rightsize` binary next to this one (scripts/bench builds both).
fn rightsize_bin() -> anyhow::Result<PathBuf> {
    let bin = std::env::current_exe()?.with_file_name("rightsize");
    if !bin.exists() {
        bail!(
            "{} not found; build it with `cargo build --release -p rightsize`",
            bin.display()
        );
    }
    Ok(bin)
}

/// Why a run whose path's checks did not pass does not count: the checks
/// that failed, or how `rightsize path run` exited when it names none.
pub fn checks_failed(status: std::process::ExitStatus, failed: &[String]) -> String {
    format!(
        "the path's checks failed: {}",
        if failed.is_empty() {
            format!("path run exited with {status}")
        } else {
            failed.join(", ")
        }
    )
}

/// `lfn: BDP 2.5 MB (peak rate), goodput ceiling 193.1 Mbit/s`, with
/// `title` in place of the path's name.
pub fn path_heading(title: &str, path: &LoadedPath) -> String {
    let facts = path.facts();
    let ceiling = match path.spec.link_from(Side::Right).rate {
        RateSpec::Constant(_) => {
            format!("goodput ceiling {:.1} Mbit/s", facts.ceiling_bps / 1e6)
        }
        _ => "rate follows a schedule".to_owned(),
    };
    format!(
        "{title}: BDP {} (peak rate), {ceiling}",
        Bytes(facts.bdp_bytes as u64).human_si(),
    )
}

/// Why a tuner's runs move less than asked.
pub fn shortened_note(
    tuner: &str,
    size: RunSize,
    basis: Basis,
    asked: Bytes,
    budget: Duration,
) -> String {
    let why = match basis {
        Basis::Expected(r) => format!("expected {:.1} Mbit/s (its window over the RTT)", r / 1e6),
        Basis::Measured(r) => format!("its first repetition measured {:.1} Mbit/s", r / 1e6),
    };
    format!(
        "{tuner}: {why}, below {:.0} Mbit/s: {} per run instead of {} (~{})",
        budget::SLOW_RATE_BPS / 1e6,
        size.bytes.human_iec(),
        asked.human_iec(),
        human_duration(budget)
    )
}
