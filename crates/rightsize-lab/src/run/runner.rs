//! One run: a fresh emulated path (brought up and judged by
//! `rightsize_sys::emu::run`, as `rightsize path run` does), the server on
//! the right host, the client on the left (the receiver) once the server
//! listens, then the numbers from the files they leave in the run's
//! directory. The [`Peer`] says which programs they are: `rightsize serve`
//! and `rightsize get` with their tuners (the lab's runs and the tuner
//! benchmark's), or one of them against vsftpd, curl or globus-url-copy.
//!
//! A run that fails (the client, a missing number, a hung path) is an
//! outcome with an error, not an `Err`: the benchmark records it and goes
//! on. `Err` is for what stops every run (a directory that cannot be
//! written, `rightsize` that cannot be started).

use std::fs;
use std::io::Write as _;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use rightsize_path::run::{Ended, INVALID_RUN_EXIT};
use rightsize_path::{PathSpec, Side};
use rightsize_sys::emu::run::{self as emu_run, Job};
use rightsize_tune::units::Bytes;
use serde_json::Value;

use super::paths::LoadedPath;
use super::peer::{Ends, Peer, RunFile};
use super::record::{self, Measurement, RunRecord};

pub use super::peer::PORT;

/// What to run.
pub struct RunSpec<'a> {
    /// The `rightsize` binary (absolute).
    pub rightsize: &'a Path,
    /// The path.
    pub path: &'a LoadedPath,
    /// The server's `--tune` text (the sender's).
    pub server_tune: &'a str,
    /// The client's `--tune` text (the receiver's).
    pub client_tune: &'a str,
    /// More options for `rightsize serve`.
    pub server_args: &'a [String],
    /// The programs at the two ends.
    pub peer: Peer,
    /// Bytes to move.
    pub size: Bytes,
    /// The run's directory (created; must not hold an earlier run).
    pub dir: PathBuf,
    /// When to give up on the run.
    pub deadline: Duration,
    /// The random loss's seed, unless the spec sets one: repetition `n`
    /// of a benchmark or scenario runs with seed `n`, each tuner alike,
    /// so that repetitions lose different packets and tuners the same.
    pub seed: Option<u64>,
    /// Asked while the client runs: true stops the run (Ctrl-C).
    pub stop: &'a dyn Fn() -> bool,
}

impl std::fmt::Debug for RunSpec<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunSpec")
            .field("path", &self.path.name)
            .field("peer", &self.peer)
            .field("server_tune", &self.server_tune)
            .field("client_tune", &self.client_tune)
            .field("size", &self.size)
            .field("dir", &self.dir)
            .field("deadline", &self.deadline)
            .field("seed", &self.seed)
            .finish_non_exhaustive()
    }
}

/// What came of it.
#[derive(Debug)]
pub struct Outcome {
    /// Wall time of `path run`.
    pub wall: Duration,
    /// Its exit code.
    pub exit_code: Option<i32>,
    /// `path run`'s verdict: every fidelity check passed.
    pub fidelity_valid: bool,
    /// The checks that failed.
    pub failed_checks: Vec<String>,
    /// The verdict as `path run` wrote it.
    pub fidelity: Option<Value>,
    /// The numbers.
    pub measured: Measurement,
    /// Why there are no (trustworthy) numbers.
    pub error: Option<String>,
}

/// Runs it.
pub fn execute(run: &RunSpec) -> anyhow::Result<Outcome> {
    let dir = &run.dir;
    let root = dir.join("root");
    fs::create_dir_all(&root).with_context(|| format!("cannot create {}", root.display()))?;
    for d in [dir, &root] {
        fs::set_permissions(d, fs::Permissions::from_mode(0o755))
            .with_context(|| format!("cannot chmod {}", d.display()))?;
    }
    let s = |p: &Path| p.to_string_lossy().into_owned();
    let ends = Ends {
        rightsize: run.rightsize,
        dir,
        root: &root,
        server_tune: run.server_tune,
        client_tune: run.client_tune,
        server_args: run.server_args,
        size: run.size,
    };
    let files = run.peer.files(&ends);
    let _sparse = prepare(&files)?;
    let server = run.peer.server_argv(&ends);
    let spec_text = run.path.for_run(&server, run.seed)?;
    let spec_file = dir.join("spec.toml");
    fs::write(&spec_file, &spec_text)
        .with_context(|| format!("cannot write {}", spec_file.display()))?;
    // Trace files are absolute in the run's copy of the spec.
    let mut read =
        |name: &str| fs::read_to_string(name).map_err(|e| format!("cannot read {name}: {e}"));
    let spec = PathSpec::from_toml(&spec_text, &mut read)
        .map_err(|e| anyhow::anyhow!("{}: {e}", spec_file.display()))?;
    let results = dir.join("path.json");
    let client_json = dir.join("client.json");
    let path_log = dir.join("path.log");
    let client = run.peer.client_argv(&ends);
    let mut log_file = create(&path_log)?;
    let job = Job {
        side: Side::Left,
        command: &client,
        cross_exe: &s(run.rightsize),
        stdout: Some(create(&client_json)?),
        stderr: Some(log_file.try_clone().context("cannot share the run's log")?),
        wait_for_port: Some(PORT),
        host_logs: Some(dir),
    };
    let started = Instant::now();
    let deadline = started + run.deadline;
    let mut timed_out = false;
    let stop = || {
        if (run.stop)() {
            Some("interrupted".to_owned())
        } else if Instant::now() >= deadline {
            Some("the run's deadline".to_owned())
        } else {
            None
        }
    };
    let mut log = |line: String| {
        let _ = writeln!(log_file, "{line}");
    };
    let supervised = emu_run::bring_up(&spec, None, true, &mut log).and_then(|path| {
        for line in emu_run::describe(path.record(), &spec) {
            log(line);
        }
        let outcome = emu_run::supervise(&path, &spec, job, &stop, &mut log)?;
        for line in outcome.fidelity.lines() {
            log(line);
        }
        let value = emu_run::results_json(&client, Side::Left, &outcome, path.record());
        path.down()?;
        Ok((outcome, value))
    });
    let (exit_code, results) = match supervised {
        Ok((outcome, value)) => {
            timed_out = outcome.ended == Ended::Interrupted && Instant::now() >= deadline;
            fs::write(&results, format!("{value}\n"))
                .with_context(|| format!("cannot write {}", results.display()))?;
            (Some(i32::from(outcome.exit_code())), Some(value))
        }
        Err(e) => {
            log(format!("rightsize: {e}"));
            (Some(1), None)
        }
    };
    let wall = started.elapsed();
    let mut outcome = Outcome {
        wall,
        exit_code,
        fidelity_valid: false,
        failed_checks: Vec::new(),
        fidelity: None,
        measured: Measurement::default(),
        error: None,
    };
    let log_tail = || tail(&fs::read_to_string(&path_log).unwrap_or_default(), 4);
    if timed_out {
        outcome.error = Some(format!(
            "stopped after {:.0} s (the run's deadline); {}",
            run.deadline.as_secs_f64(),
            log_tail()
        ));
        return Ok(outcome);
    }
    let Some(results) = results else {
        outcome.error = Some(format!("the path did not run: {}", log_tail()));
        return Ok(outcome);
    };
    let (valid, failed) = record::fidelity_of(&results);
    outcome.fidelity_valid = valid == Some(true);
    outcome.failed_checks = failed;
    outcome.fidelity = Some(results["fidelity"].clone());
    let client_exit = results["exit_code"].as_i64();
    if client_exit != Some(0) {
        outcome.error = Some(format!(
            "{} exited {client_exit:?}: {}",
            run.peer.client_program(),
            log_tail()
        ));
        return Ok(outcome);
    }
    let expected_exit = if outcome.fidelity_valid {
        0
    } else {
        i32::from(INVALID_RUN_EXIT)
    };
    if exit_code != Some(expected_exit) {
        outcome.error = Some(format!(
            "the run exited {exit_code:?} with a {} verdict: {}",
            if outcome.fidelity_valid {
                "valid"
            } else {
                "invalid"
            },
            log_tail()
        ));
        return Ok(outcome);
    }
    let client: Value = match fs::read_to_string(&client_json)
        .ok()
        .and_then(|t| serde_json::from_str(t.trim()).ok())
    {
        Some(v) => v,
        None => {
            outcome.error = Some(format!(
                "{} is not the client's JSON report",
                client_json.display()
            ));
            return Ok(outcome);
        }
    };
    let server_telemetry = server_telemetry(dir);
    outcome.measured = match run.peer {
        Peer::Rightsize => record::measure(
            &client,
            server_telemetry.as_deref(),
            run.server_tune,
            run.client_tune,
        ),
        peer => record::peers::measure(
            peer,
            &client,
            server_telemetry.as_deref(),
            &results,
            run.server_tune,
            run.client_tune,
        ),
    };
    if !outcome.measured.problems.is_empty() {
        outcome.error = Some(outcome.measured.problems.join("; "));
    }
    Ok(outcome)
}

fn create(path: &Path) -> anyhow::Result<fs::File> {
    fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))
}

/// Creates what the peer needs before its server starts; the sparse files
/// go away with the returned guard.
fn prepare(files: &[RunFile]) -> anyhow::Result<Removed> {
    let mut removed = Removed(Vec::new());
    for file in files {
        match file {
            RunFile::Dir(d) => {
                fs::create_dir_all(d).with_context(|| format!("cannot create {}", d.display()))?;
            }
            RunFile::Text { path, text } => {
                fs::write(path, text)
                    .with_context(|| format!("cannot write {}", path.display()))?;
            }
            RunFile::Sparse { path, bytes } => {
                let f = create(path)?;
                removed.0.push(path.clone());
                f.set_len(bytes.0).with_context(|| {
                    format!("cannot size {} to {} bytes", path.display(), bytes.0)
                })?;
                fs::set_permissions(path, fs::Permissions::from_mode(0o644))
                    .with_context(|| format!("cannot chmod {}", path.display()))?;
            }
        }
    }
    Ok(removed)
}

/// Files removed on drop: a run's sparse files, which would read as their
/// full size to anyone who copies the results.
struct Removed(Vec<PathBuf>);

impl Drop for Removed {
    fn drop(&mut self) {
        for path in &self.0 {
            let _ = fs::remove_file(path);
        }
    }
}

/// The text of the server's telemetry of the transfer (`*-retr.jsonl`).
/// Of several (globus-url-copy's one-byte probe before the transfer), the
/// one whose final line counts the most bytes; the last by name among
/// equals.
fn server_telemetry(dir: &Path) -> Option<String> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with("-retr.jsonl"))
        .collect();
    files.sort();
    record::largest_transfer(files.iter().filter_map(|f| fs::read_to_string(f).ok()))
}

/// The last `n` non-empty lines, joined with " | ".
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}

/// What a run's record says of it besides what it measured.
#[derive(Debug, Clone)]
pub struct Identity {
    /// See [`RunRecord`].
    pub invocation: String,
    /// See [`RunRecord`].
    pub argv: Vec<String>,
    /// See [`RunRecord`].
    pub kernel: String,
    /// See [`RunRecord`].
    pub started_unix_s: u64,
    /// See [`RunRecord`].
    pub tuner: String,
    /// See [`RunRecord`].
    pub peer: Option<String>,
    /// See [`RunRecord`].
    pub rep: usize,
    /// See [`RunRecord`].
    pub size_bytes: u64,
    /// See [`RunRecord`].
    pub shortened_from_bytes: Option<u64>,
    /// See [`RunRecord`].
    pub run_dir: String,
    /// See [`RunRecord`].
    pub scenario: Option<String>,
    /// See [`RunRecord`].
    pub variant: Option<String>,
}

impl Outcome {
    /// The run's line of `runs.jsonl`.
    pub fn into_record(self, id: Identity, path: &LoadedPath) -> RunRecord {
        let m = self.measured;
        RunRecord {
            kind: record::RUN_KIND.to_owned(),
            invocation: id.invocation,
            argv: id.argv,
            bench_version: env!("CARGO_PKG_VERSION").to_owned(),
            rightsize_version: m.rightsize_version,
            kernel: id.kernel,
            started_unix_s: id.started_unix_s,
            path: path.name.clone(),
            spec_file: path.file.to_string_lossy().into_owned(),
            tuner: id.tuner,
            peer: id.peer,
            rep: id.rep,
            size_bytes: id.size_bytes,
            shortened_from_bytes: id.shortened_from_bytes,
            run_dir: id.run_dir,
            wall_seconds: self.wall.as_secs_f64(),
            path_exit_code: self.exit_code,
            valid: self.fidelity_valid && self.error.is_none(),
            failed_checks: self.failed_checks,
            error: self.error,
            measured: m.measured,
            fidelity: self.fidelity,
            scenario: id.scenario,
            variant: id.variant,
            ceiling_bps: Some(path.facts().ceiling_bps),
            bdp_bytes: Some(path.facts().bdp_bytes),
        }
    }
}

/// A tuner's text as a directory name: `static-16MiB`.
pub fn dir_name(tuner: &str) -> String {
    tuner
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// Appends one line to `file` (one write: a run's line is whole or absent).
pub fn append_line(file: &Path, line: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut f = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(file)
        .with_context(|| format!("cannot open {}", file.display()))?;
    f.write_all(format!("{line}\n").as_bytes())
        .with_context(|| format!("cannot write {}", file.display()))
}

/// Seconds since the epoch.
pub fn unix_seconds() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// `auto rep 1/3: 185.2 Mbit/s, rcvbuf peak 4.21 MB mean 3.10 MB, sndbuf
/// peak 5.00 MB, retrans 0 B (0 segs), 512 MiB in 23.1 s (run 28.4 s), valid`.
pub fn run_line(r: &RunRecord, reps: usize) -> String {
    let mb = |b: Option<u64>| {
        b.map_or_else(|| "n/a".to_owned(), |b| format!("{:.2} MB", b as f64 / 1e6))
    };
    let verdict = match (&r.error, r.valid) {
        (Some(e), _) => format!("FAILED: {e}"),
        (None, true) => "valid".to_owned(),
        (None, false) => format!("INVALID (fidelity: {})", r.failed_checks.join(", ")),
    };
    format!(
        "{:<13} rep {}/{reps}: {} Mbit/s, rcvbuf peak {} mean {}, sndbuf peak {}, retrans {} B ({} segs), {} in {} s (run {:.1} s), {verdict}",
        r.tuner,
        r.rep,
        r.measured
            .goodput_bps
            .map_or_else(|| "-".to_owned(), |g| format!("{:.1}", g / 1e6)),
        mb(r.measured.peak_rcvbuf_bytes),
        mb(r.measured.mean_rcvbuf_bytes),
        mb(r.measured.peak_sndbuf_bytes),
        r.measured
            .bytes_retrans
            .map_or_else(|| "-".to_owned(), |b| b.to_string()),
        r.measured
            .retrans_segs
            .map_or_else(|| "-".to_owned(), |b| b.to_string()),
        Bytes(r.size_bytes).human_iec(),
        r.measured
            .transfer_seconds
            .map_or_else(|| "-".to_owned(), |t| format!("{t:.1}")),
        r.wall_seconds
    )
}
