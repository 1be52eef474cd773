//! The flags the benchmarks on emulated paths share, parsed without
//! touching the system: `--flag value` or `--flag=value`, lists separated
//! by commas, tuner names through [`TunerSpec`]'s parser and sizes through
//! [`Bytes`]'. An error quotes what was typed.

use std::str::FromStr;

use anyhow::{Context, bail};
use rightsize_tune::TunerSpec;
use rightsize_tune::units::Bytes;

/// Marks an error in the command line (a flag or value not accepted):
/// `rightsize-bench` exits with status 2 for it, as for an unknown
/// benchmark, and with 1 when a benchmark that started fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadUsage;

impl std::fmt::Display for BadUsage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("invalid command line")
    }
}

/// What was on the command line: each flag with its value, in order, and
/// the flags without a value (`--smoke`, and the benchmark's own switches)
/// that were among them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Given {
    /// `(flag, value)`, the flag with its dashes.
    pub values: Vec<(String, String)>,
    /// `--smoke`.
    pub smoke: bool,
    /// The switches given, with their dashes, each once.
    pub switches: Vec<String>,
}

impl Given {
    /// Whether the switch `flag` was given.
    pub fn switch(&self, flag: &str) -> bool {
        self.switches.iter().any(|s| s == flag)
    }
}

/// Splits `args` into flags with values; a flag not in `known` (or
/// `--smoke`), or one without its value, is an error followed by `usage`.
pub fn given(args: &[String], known: &[&str], usage: &str) -> anyhow::Result<Given> {
    given_with_switches(args, known, &[], usage)
}

/// [`given`], with `switches`: flags that take no value.
pub fn given_with_switches(
    args: &[String],
    known: &[&str],
    switches: &[&str],
    usage: &str,
) -> anyhow::Result<Given> {
    let mut out = Given::default();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        if arg == "--smoke" {
            out.smoke = true;
            continue;
        }
        if switches.contains(&arg.as_str()) {
            if !out.switch(arg) {
                out.switches.push(arg.clone());
            }
            continue;
        }
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag, Some(value.to_owned())),
            _ => (arg.as_str(), None),
        };
        if !known.contains(&flag) {
            bail!("unknown flag {arg:?}\n\n{usage}");
        }
        let value = match inline {
            Some(v) => v,
            None => it
                .next()
                .with_context(|| format!("{flag} needs a value\n\n{usage}"))?
                .clone(),
        };
        out.values.push((flag.to_owned(), value));
    }
    Ok(out)
}

/// The items of a comma-separated list, each once, in order; at least one.
pub fn list(flag: &str, value: &str) -> anyhow::Result<Vec<String>> {
    let mut items: Vec<String> = Vec::new();
    for item in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        if !items.iter().any(|i| i == item) {
            items.push(item.to_owned());
        }
    }
    if items.is_empty() {
        bail!("{flag} {value:?}: give at least one, comma-separated");
    }
    Ok(items)
}

/// Path names or spec files, each once.
pub fn parse_paths(value: &str) -> anyhow::Result<Vec<String>> {
    list("--paths", value)
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

/// A number of repetitions, at least 1.
pub fn parse_reps(value: &str) -> anyhow::Result<usize> {
    Ok(usize::try_from(whole_number("--reps", value, 1)?)?)
}

/// Bytes per transfer.
pub fn parse_size(value: &str) -> anyhow::Result<Bytes> {
    parse_bytes("--size", value)
}

/// A positive size given to `flag`: `32MiB`, `10MB`, `4096`.
pub fn parse_bytes(flag: &str, value: &str) -> anyhow::Result<Bytes> {
    Bytes::parse_positive(value).with_context(|| format!("invalid {flag} {value:?}"))
}

/// A whole number given to `flag`, at least `min`.
pub fn whole_number(flag: &str, value: &str, min: u64) -> anyhow::Result<u64> {
    match value.parse::<u64>() {
        Ok(n) if n >= min => Ok(n),
        _ if min > 0 => {
            bail!("invalid {flag} {value:?}: expected a whole number, at least {min}")
        }
        _ => bail!("invalid {flag} {value:?}: expected a whole number"),
    }
}

/// Names as the defaults write them, as owned strings.
pub fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}
