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
pub mod report;
#[cfg(test)]
mod tests;

use anyhow::Context as _;
use rightsize_lab::run::paths::{self, LoadedPath};

use crate::emulated::{self, Bench, Cell};
use crate::goals;

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
    let o = options::parse(args).context(crate::flags::BadUsage)?;
    let (bench, paths, budget) = Bench::open("tuners", &o.paths, o.out.as_deref(), o.smoke)?;
    let tuners: Vec<String> = o.tuners.iter().map(ToString::to_string).collect();
    println!(
        "rightsize-bench tuners: {} path(s) x {} tuner(s) x {} repetition(s), {} per run; kernel {}",
        paths.len(),
        tuners.len(),
        o.reps,
        o.size.human_iec(),
        bench.kernel
    );
    println!("runs: {}", bench.runs_file.display());

    let mut failed = 0usize;
    for path in &paths {
        println!("\npath {} ({})", path.name, path.file.display());
        for line in path.spec.describe() {
            println!("  {line}");
        }
        failed += bench.cell(&Cell {
            path,
            peer: None,
            tuners: &o.tuners,
            reps: o.reps,
            asked: o.size,
            budget,
            dir: &bench.out.join(&path.name),
            indent: "  ",
        })?;
    }

    let runs = bench.runs()?;
    let names: Vec<String> = paths.iter().map(|p| p.name.clone()).collect();
    let summaries = goals::summarise(&runs, &names, &tuners);
    for path in &paths {
        println!(
            "\n{}; medians of valid runs",
            emulated::path_heading(&path.name, path)
        );
        let mine: Vec<&goals::Summary> = summaries.iter().filter(|s| s.path == path.name).collect();
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
            bench.runs_file.display()
        );
    }
    Ok(failed == 0)
}
