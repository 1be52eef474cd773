//! `rightsize-bench tuners`: the tuner benchmark (docs/benchmarks.md). Every
//! tuner, on the same emulated paths, in one run. What it measures, as first specified:
//!
//! > Benchmarks (on emulated paths; a command that runs every tuner on the
//! > same path in one run, at least 3 repetitions, and prints medians and
//! > ratios). Memory is the peak SO_RCVBUF on the receiver and the peak
//! > SO_SNDBUF on the sender, as read back, reported separately; 'Mbit/s
//! > per MB' is goodput over peak receive buffer, as in the drsFTP paper's Fig. 6.
//! > 1. Non-congested path, 200 Mbit/s, 2 x 50 ms, drop-tail queue of
//! >    1 x BDP, cubic, 512 MiB: auto reaches at least 0.95x the goodput of
//! >    static:16MiB and at least 6x stock; its peak receive buffer is at
//! >    most 2 x BDP; against kernel: at least 0.98x the goodput with at
//! >    most 0.25x the peak receive buffer.
//! > 2. The same path with a queue of 0.1 x BDP: auto reaches at least
//! >    0.93x the path's goodput ceiling (rate x 1448/1500, averaged over
//! >    the whole transfer, slow start included), more than static:16MiB
//! >    does, with at most 0.2x its retransmitted bytes.
//! > 3. A path whose rate and RTT change during the transfer (a trace in
//! >    the spirit of the drsFTP paper's Fig. 1): auto reaches at least 0.9x the
//! >    goodput of static:16MiB with at most a third of its mean receive
//! >    buffer.
//! > 4. drs and sobas show the behaviour their papers report (drs well
//! >    above stock; sobas avoiding the losses of the over-provisioned
//! >    buffer on path 2).
//!
//! The paths are `bench/paths/{lfn,shallow,changing}.toml`. Each run
//! brings up a fresh path with `rightsize path run`, where the right host
//! serves `/.rightsize/zero/SIZE` with `--tune T` and the left host (the
//! receiver) fetches it with `rightsize get --tune T`. Repetitions
//! alternate the tuners. Each run is one JSON line of `DIR/runs.jsonl`
//! (appended), and the tables and verdicts are made from those lines.
//! A run that fails a fidelity check of `path run` (exit 3) is recorded as
//! invalid and left out of the medians. The command exits 0 whether or not
//! the goals are met, 1 if a run failed.

mod options;
mod report;
#[cfg(test)]
mod tests;

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use rightsize_path::{RateSpec, Side};
use rightsize_tune::units::{Bytes, human_duration};

use rightsize_lab::run::budget::{self, Basis, RunSize};
use rightsize_lab::run::paths::LoadedPath;
use rightsize_lab::run::runner::{append_line, dir_name, run_line, unix_seconds};
use rightsize_lab::run::{paths, record, runner};

pub const USAGE: &str = "\
usage: rightsize-bench tuners [--paths lfn,shallow,changing] [--tuners stock,static:16MiB,kernel,drs,sobas,freebsd,auto]
                              [--reps 3] [--size 512MiB] [--out DIR] [--smoke]

Runs every tuner on each emulated path (bench/paths/NAME.toml, or a spec file), each run on a
fresh `rightsize path run`: `rightsize serve --tune T` on the right host, `rightsize get --tune T`
on the left (the receiver). As root. Prints per path the median goodput, the receiver's peak and
mean SO_RCVBUF, the sender's peak SO_SNDBUF, Mbit/s per MB of peak receive buffer and the
sender's retransmitted bytes, then the goals 1a to 4b, each met or not. Tuners whose rate is
below 20 Mbit/s (stock; or as measured by their first repetition) move what lasts ~30 s instead.
Every run is a line of DIR/runs.jsonl (default: target/bench-results/tuners-UNIXTIME).
Exits 0 whether or not the goals are met, 1 if a run failed.
--smoke: lfn, auto and stock, 1 repetition, 32 MiB (short runs of ~5 s): checks that it works.";

/// Runs the benchmark; `Ok(false)` if a run failed.
pub fn run(args: &[String]) -> anyhow::Result<bool> {
    let o = options::parse(args)?;
    rightsize_sys::emu::preflight_root()?;
    let rightsize = rightsize_bin()?;
    let paths = o
        .paths
        .iter()
        .map(|p| LoadedPath::load(p))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let tuners: Vec<String> = o.tuners.iter().map(ToString::to_string).collect();
    let now = unix_seconds();
    let out = match &o.out {
        Some(dir) => dir.clone(),
        None => rightsize
            .parent()
            .and_then(Path::parent)
            .context("no target directory above the binary")?
            .join("bench-results")
            .join(format!("tuners-{now}")),
    };
    fs::create_dir_all(&out).with_context(|| format!("cannot create {}", out.display()))?;
    let out = out.canonicalize()?;
    let runs_file = out.join("runs.jsonl");
    let invocation = format!("{now}-{}", std::process::id());
    let argv: Vec<String> = std::env::args().collect();
    let kernel = rightsize_sys::sysctl::kernel_release().unwrap_or_default();
    let budget = if o.smoke {
        budget::SMOKE_SLOW_RUN
    } else {
        budget::SLOW_RUN
    };
    println!(
        "rightsize-bench tuners: {} path(s) x {} tuner(s) x {} repetition(s), {} per run; kernel {kernel}",
        paths.len(),
        tuners.len(),
        o.reps,
        o.size.human_iec()
    );
    println!("runs: {}", runs_file.display());

    let mut failed = 0usize;
    for path in &paths {
        println!("\npath {} ({})", path.name, path.file.display());
        for line in path.spec.describe() {
            println!("  {line}");
        }
        let mut first_rep: Vec<Option<f64>> = vec![None; tuners.len()];
        for rep in 1..=o.reps {
            for (i, (tuner, spec)) in tuners.iter().zip(&o.tuners).enumerate() {
                let expected = budget::expected_rate_bps(spec, &path.spec);
                let size = budget::run_size(o.size, expected, first_rep[i], budget);
                if let Some(basis) = size.shortened
                    && (rep == 1 || matches!(basis, Basis::Measured(_)))
                {
                    println!("  {}", shortened_note(tuner, size, basis, o.size, budget));
                }
                let dir = out
                    .join(&path.name)
                    .join(format!("{}-rep{rep}", dir_name(tuner)));
                if dir.exists() {
                    bail!(
                        "{} already holds a run; give --out a new directory",
                        dir.display()
                    );
                }
                let started_unix_s = unix_seconds();
                let outcome = runner::execute(&runner::RunSpec {
                    rightsize: &rightsize,
                    path,
                    server_tune: tuner,
                    client_tune: tuner,
                    server_args: &[],
                    size: size.bytes,
                    dir: dir.clone(),
                    deadline: budget::run_deadline(size, &path.spec),
                    stop: &|| false,
                })?;
                let record = outcome.into_record(
                    runner::Identity {
                        invocation: invocation.clone(),
                        argv: argv.clone(),
                        kernel: kernel.clone(),
                        started_unix_s,
                        tuner: tuner.clone(),
                        rep,
                        size_bytes: size.bytes.0,
                        shortened_from_bytes: size.shortened.map(|_| o.size.0),
                        run_dir: dir.to_string_lossy().into_owned(),
                        scenario: None,
                        variant: None,
                    },
                    path,
                );
                append_line(&runs_file, &serde_json::to_string(&record)?)?;
                println!("  {}", run_line(&record, o.reps));
                if record.error.is_some() {
                    failed += 1;
                } else if rep == 1 {
                    first_rep[i] = record.measured.goodput_bps;
                }
            }
        }
    }

    // The report is made from the data file, as any later one would be.
    let text = fs::read_to_string(&runs_file)
        .with_context(|| format!("cannot read {}", runs_file.display()))?;
    let runs = record::runs_of(&text, &invocation)?;
    let names: Vec<String> = paths.iter().map(|p| p.name.clone()).collect();
    let summaries = report::summarise(&runs, &names, &tuners);
    for path in &paths {
        let facts = path.facts();
        let ceiling = match path.spec.link_from(Side::Right).rate {
            RateSpec::Constant(_) => {
                format!("goodput ceiling {:.1} Mbit/s", facts.ceiling_bps / 1e6)
            }
            _ => "rate follows a schedule".to_owned(),
        };
        println!(
            "\n{}: BDP {} (peak rate), {ceiling}; medians of valid runs",
            path.name,
            Bytes(facts.bdp_bytes as u64).human_si(),
        );
        let mine: Vec<&report::Summary> =
            summaries.iter().filter(|s| s.path == path.name).collect();
        print!("{}", report::table(&mine));
    }
    let facts: Vec<paths::PathFacts> = paths.iter().map(LoadedPath::facts).collect();
    let judged = report::judge(&summaries, &facts);
    if !judged.is_empty() {
        println!();
    }
    for j in &judged {
        println!("{}", j.line());
    }
    if o.smoke {
        println!("\nsmoke run: every part ran; goals are not judged on so short a run");
    }
    if failed > 0 {
        println!(
            "\n{failed} run(s) failed; see their error in {}",
            runs_file.display()
        );
    }
    Ok(failed == 0)
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

fn shortened_note(
    tuner: &str,
    size: RunSize,
    basis: Basis,
    asked: Bytes,
    budget: std::time::Duration,
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
