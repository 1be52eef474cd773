//! The file reading of `lab report`: a results directory's `lab.json`,
//! scenario copies, `runs.jsonl` and run telemetry. Every error quotes
//! the path (and the line of runs.jsonl).

use std::fs::{self, File};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use super::telemetry::{self, Sample};
use crate::layout::{
    CLIENT_TELEMETRY, LAB_JSON, LAB_KIND, LabInfo, RUNS_JSONL, SCENARIOS_DIR,
    SERVER_TELEMETRY_SUFFIX,
};
use crate::run::record::{self, RunRecord};
use crate::scenario::Checked;

/// `DIR/lab.json`, checked to be a lab directory of this version.
pub fn lab_info(dir: &Path) -> anyhow::Result<LabInfo> {
    let path = dir.join(LAB_JSON);
    let text = fs::read_to_string(&path).with_context(|| {
        format!(
            "reading {}: is {} a results directory of `rightsize lab run`?",
            path.display(),
            dir.display()
        )
    })?;
    let lab: LabInfo = serde_json::from_str(&text)
        .with_context(|| format!("{}: not a lab.json", path.display()))?;
    if lab.kind != LAB_KIND {
        bail!(
            "{}: kind {:?}, expected {LAB_KIND:?}",
            path.display(),
            lab.kind
        );
    }
    let ours = env!("CARGO_PKG_VERSION");
    if lab.version != ours {
        bail!(
            "{}: made by rightsize {}, this is {ours}: report it with that version, or run the lab again",
            path.display(),
            lab.version
        );
    }
    Ok(lab)
}

/// The scenario copies in `DIR/scenarios/`, in name order.
pub fn scenarios(dir: &Path, quick: bool) -> anyhow::Result<Vec<Checked>> {
    let sdir = dir.join(SCENARIOS_DIR);
    let entries =
        fs::read_dir(&sdir).with_context(|| format!("reading the directory {}", sdir.display()))?;
    let mut paths = Vec::new();
    for e in entries {
        let path = e
            .with_context(|| format!("reading the directory {}", sdir.display()))?
            .path();
        if path.extension().is_some_and(|x| x == "toml") {
            paths.push(path);
        }
    }
    paths.sort();
    paths
        .iter()
        .map(|path| {
            let name = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let text =
                fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
            Checked::parse(&name, &text, quick).with_context(|| path.display().to_string())
        })
        .collect()
}

/// Every run line of `DIR/runs.jsonl`, in order.
pub fn runs(dir: &Path) -> anyhow::Result<Vec<RunRecord>> {
    let path = dir.join(RUNS_JSONL);
    let file = File::open(&path).with_context(|| format!("reading {}", path.display()))?;
    let mut runs = Vec::new();
    for (i, line) in BufReader::new(file).lines().enumerate() {
        let line = line.with_context(|| format!("{}: line {}", path.display(), i + 1))?;
        if line.trim().is_empty() {
            continue;
        }
        let run = record::parse_line(&line)
            .with_context(|| format!("{}: line {}: not a run record", path.display(), i + 1))?;
        runs.extend(run);
    }
    Ok(runs)
}

/// A run's directory: `run_dir` as recorded, relative to `DIR` unless
/// absolute.
pub fn run_path(dir: &Path, run: &RunRecord) -> PathBuf {
    let p = Path::new(&run.run_dir);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        dir.join(p)
    }
}

/// The receiver's telemetry file of a run.
pub fn client_telemetry(run_dir: &Path) -> PathBuf {
    run_dir.join(CLIENT_TELEMETRY)
}

/// The sender's telemetry file of a run: the largest `*-retr.jsonl` (one
/// per transfer; a run has one), `None` if there is none.
pub fn server_telemetry(run_dir: &Path) -> Option<PathBuf> {
    fs::read_dir(run_dir)
        .ok()?
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .ends_with(SERVER_TELEMETRY_SUFFIX)
        })
        .filter_map(|e| Some((e.metadata().ok()?.len(), e.path())))
        .max()
        .map(|(_, p)| p)
}

/// Every sample of a telemetry file.
pub fn samples(path: &Path) -> anyhow::Result<Vec<Sample>> {
    let file = File::open(path).with_context(|| format!("reading {}", path.display()))?;
    telemetry::samples(BufReader::with_capacity(1 << 16, file))
        .with_context(|| format!("reading {}", path.display()))
}

/// Seconds to the first sample at or above `threshold_bps` (see
/// [`telemetry::time_to_reach`]).
pub fn time_to_reach(path: &Path, threshold_bps: f64) -> anyhow::Result<Option<f64>> {
    let file = File::open(path).with_context(|| format!("reading {}", path.display()))?;
    telemetry::time_to_reach(BufReader::with_capacity(1 << 16, file), threshold_bps)
        .with_context(|| format!("reading {}", path.display()))
}
