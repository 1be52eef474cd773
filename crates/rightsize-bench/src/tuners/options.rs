//! The flags of `rightsize-bench tuners`, parsed without touching the
//! system: every value is checked here (tuner names through
//! [`TunerSpec`]'s parser, sizes through [`Bytes`]'), and an error quotes
//! what was typed.

use std::path::PathBuf;
use std::str::FromStr;

use anyhow::{Context, bail};
use rightsize_tune::TunerSpec;
use rightsize_tune::units::Bytes;

use super::USAGE;

/// The paths of the tuner benchmark's goals, in the order they are run.
pub const DEFAULT_PATHS: &[&str] = &["lfn", "shallow", "changing"];

/// Every tuner, the baselines first.
pub const DEFAULT_TUNERS: &[&str] = &[
    "stock",
    "static:16MiB",
    "kernel",
    "drs",
    "sobas",
    "freebsd",
    "auto",
];

/// Repetitions of each tuner on each path: the benchmark asks for at least 3.
pub const DEFAULT_REPS: usize = 3;

/// Bytes per transfer: the benchmark's 512 MiB.
pub const DEFAULT_SIZE: Bytes = Bytes(512 << 20);

/// What `--smoke` runs: enough to prove every part works, in well under a
/// minute.
pub const SMOKE_PATHS: &[&str] = &["lfn"];
/// The tuners of `--smoke`: rightsize's own and the slowest baseline (which
/// exercises the shortened runs).
pub const SMOKE_TUNERS: &[&str] = &["auto", "stock"];
/// Bytes per transfer of `--smoke`.
pub const SMOKE_SIZE: Bytes = Bytes(32 << 20);

/// The benchmark's settings, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Path names (`bench/paths/NAME.toml`) or spec files.
    pub paths: Vec<String>,
    /// Tuners, each once, in the order given.
    pub tuners: Vec<TunerSpec>,
    /// Repetitions of each (path, tuner).
    pub reps: usize,
    /// Bytes per transfer (slow tuners get fewer, see `budget`).
    pub size: Bytes,
    /// Where runs.jsonl and each run's files go; `None` for a fresh
    /// directory under target/.
    pub out: Option<PathBuf>,
    /// The CI smoke run: short runs, shortened slow runs, no judging.
    pub smoke: bool,
}

/// Parses the arguments after `tuners`. `--smoke` sets the smoke run's
/// paths, tuners, repetitions and size; flags given explicitly win, in
/// whatever order.
pub fn parse(args: &[String]) -> anyhow::Result<Options> {
    let mut paths: Option<Vec<String>> = None;
    let mut tuners: Option<Vec<TunerSpec>> = None;
    let mut reps: Option<usize> = None;
    let mut size: Option<Bytes> = None;
    let mut out = None;
    let mut smoke = false;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        if arg == "--smoke" {
            smoke = true;
            continue;
        }
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag, Some(value.to_owned())),
            _ => (arg.as_str(), None),
        };
        if !matches!(flag, "--paths" | "--tuners" | "--reps" | "--size" | "--out") {
            bail!("unknown flag {arg:?}\n\n{USAGE}");
        }
        let value = match inline {
            Some(v) => v,
            None => it
                .next()
                .with_context(|| format!("{flag} needs a value\n\n{USAGE}"))?
                .clone(),
        };
        match flag {
            "--paths" => paths = Some(parse_paths(&value)?),
            "--tuners" => tuners = Some(parse_tuners(&value)?),
            "--reps" => reps = Some(parse_reps(&value)?),
            "--size" => size = Some(parse_size(&value)?),
            _ => out = Some(PathBuf::from(value)),
        }
    }
    let names = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let default_tuners = if smoke { SMOKE_TUNERS } else { DEFAULT_TUNERS };
    Ok(Options {
        paths: paths.unwrap_or_else(|| names(if smoke { SMOKE_PATHS } else { DEFAULT_PATHS })),
        tuners: match tuners {
            Some(t) => t,
            None => parse_tuners(&default_tuners.join(","))?,
        },
        reps: reps.unwrap_or(if smoke { 1 } else { DEFAULT_REPS }),
        size: size.unwrap_or(if smoke { SMOKE_SIZE } else { DEFAULT_SIZE }),
        out,
        smoke,
    })
}

fn list(flag: &str, value: &str) -> anyhow::Result<Vec<String>> {
    let items: Vec<String> = value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    if items.is_empty() {
        bail!("{flag} {value:?}: give at least one, comma-separated");
    }
    Ok(items)
}

/// Path names or spec files, each once.
fn parse_paths(value: &str) -> anyhow::Result<Vec<String>> {
    let mut paths: Vec<String> = Vec::new();
    for item in list("--paths", value)? {
        if !paths.contains(&item) {
            paths.push(item);
        }
    }
    Ok(paths)
}

/// Tuners as `--tune` accepts them, each once (`static:16M` and
/// `static:16MiB` are the same tuner).
pub fn parse_tuners(value: &str) -> anyhow::Result<Vec<TunerSpec>> {
    let mut tuners = Vec::new();
    for item in list("--tuners", value)? {
        let tuner = TunerSpec::from_str(&item).with_context(|| format!("--tuners {value:?}"))?;
        if !tuners.contains(&tuner) {
            tuners.push(tuner);
        }
    }
    Ok(tuners)
}

fn parse_reps(value: &str) -> anyhow::Result<usize> {
    match value.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => bail!("invalid --reps {value:?}: expected a whole number, at least 1"),
    }
}

fn parse_size(value: &str) -> anyhow::Result<Bytes> {
    Bytes::parse_positive(value).with_context(|| format!("invalid --size {value:?}"))
}
