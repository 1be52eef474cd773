//! The flags of `rightsize-bench tuners`, parsed without touching the
//! system (see [`crate::flags`]).

use std::path::PathBuf;

use rightsize_tune::TunerSpec;
use rightsize_tune::units::Bytes;

use super::USAGE;
use crate::flags::{self, names, parse_paths, parse_reps, parse_size, parse_tuners};

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
    let given = flags::given(
        args,
        &["--paths", "--tuners", "--reps", "--size", "--out"],
        USAGE,
    )?;
    let smoke = given.smoke;
    let mut paths: Option<Vec<String>> = None;
    let mut tuners: Option<Vec<TunerSpec>> = None;
    let mut reps: Option<usize> = None;
    let mut size: Option<Bytes> = None;
    let mut out = None;
    for (flag, value) in given.values {
        match flag.as_str() {
            "--paths" => paths = Some(parse_paths(&value)?),
            "--tuners" => tuners = Some(parse_tuners(&value)?),
            "--reps" => reps = Some(parse_reps(&value)?),
            "--size" => size = Some(parse_size(&value)?),
            _ => out = Some(PathBuf::from(value)),
        }
    }
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
