//! `rightsize-bench peers`: rightsize's tuners against ends that are not
//! rightsize (docs/benchmarks.md). Between two rightsize ends `auto` has
//! packet trains and a paced sender; against vsftpd only the receiver
//! tunes, against curl and globus-url-copy only the sender does. Each
//! (path, peer) is a cell; in each, `auto`, `kernel` and `static:16MiB`
//! take turns, every run on a fresh emulated path through the lab's runner
//! (see [`rightsize_lab::run::peer`] for the programs and their flags).
//! Each run is one line of `DIR/runs.jsonl`, with its `peer`; the tables
//! and the goals ([`report`]) are made from those lines. The command exits
//! 0 whether or not the goals are met, 1 if a run failed.

mod options;
mod report;
#[cfg(test)]
mod tests;

use anyhow::Context as _;
use rightsize_lab::run::paths::{self, LoadedPath};
use rightsize_lab::run::peer::Peer;

use crate::emulated::{self, Bench, Cell};
use crate::goals;

pub const USAGE: &str = "\
usage: rightsize-bench peers [--paths lfn,shallow,changing,short,bbr-loss,reno,metro]
                             [--peers rightsize,vsftpd,curl,globus]
                             [--tuners auto,kernel,static:16MiB]
                             [--reps 3] [--size 256MiB, 640MiB under bbr] [--out DIR]
                             [--smoke]

Runs rightsize's tuners against other FTP programs, and itself, on emulated paths (bench/paths/
NAME.toml, or a spec file), each run on a fresh `rightsize path run`, as root. Beyond the
default list, bench/paths/ holds the corners of the range, each run on its own: short12 (12 ms),
far (300 ms, a twentieth of a BDP), lan (10 Mbit/s x 1 ms), lossy1k (0.1% random loss). The
server is on the right host (the sender), the client on the left (the receiver):
  rightsize  rightsize get --tune T from rightsize serve --tune T (both ends tune)
  vsftpd     rightsize get --tune T from vsftpd (the receiver tunes alone)
  curl       curl from rightsize serve --tune T (the sender tunes alone)
  globus     globus-url-copy from rightsize serve --tune T (the sender tunes alone)
In each (path, peer) cell the repetitions alternate the tuners. Prints a table per cell: median
and worst goodput, the rightsize end's peak SO_RCVBUF or SO_SNDBUF (n/a at the other end), the
sender's retransmitted bytes (from the path's counters when vsftpd sends); then the goals P1 to
P6, and 1a, 2a and 3a between rightsize ends, each met or not.
Each run moves 256 MiB, or 640 MiB where the path's sender runs bbr: bbr halts for PROBE_RTT ten
seconds after its minimum RTT last fell, and a run of 30 s holds two halts (or one) where one of
12 s holds one or none. --size sets one size for every path.
Every run is a line of DIR/runs.jsonl (default: target/bench-results/peers-UNIXTIME).
Exits 0 whether or not the goals are met, 1 if a run failed.
--smoke: short, vsftpd, curl and globus with auto, 1 repetition, 16 MiB: checks that it works.";

/// Runs the benchmark; `Ok(false)` if a run failed.
pub fn run(args: &[String]) -> anyhow::Result<bool> {
    let o = options::parse(args).context(crate::flags::BadUsage)?;
    let (bench, paths, budget) = Bench::open("peers", &o.paths, o.out.as_deref(), o.smoke)?;
    let tuners: Vec<String> = o.tuners.iter().map(ToString::to_string).collect();
    println!(
        "rightsize-bench peers: {} path(s) x {} peer(s) x {} tuner(s) x {} repetition(s), {}; kernel {}",
        paths.len(),
        o.peers.len(),
        tuners.len(),
        o.reps,
        o.size_heading(),
        bench.kernel
    );
    println!("runs: {}", bench.runs_file.display());

    let mut failed = 0usize;
    for path in &paths {
        println!("\npath {} ({})", path.name, path.file.display());
        for line in path.spec.describe() {
            println!("  {line}");
        }
        for &peer in &o.peers {
            println!("  peer {peer}: {}", who_tunes(peer));
            failed += bench.cell(&Cell {
                path,
                peer: Some(peer),
                tuners: &o.tuners,
                reps: o.reps,
                asked: o.size_for(&path.spec),
                budget,
                dir: &bench.out.join(&path.name).join(peer.name()),
                indent: "    ",
            })?;
        }
    }

    let runs = bench.runs()?;
    let names: Vec<String> = paths.iter().map(|p| p.name.clone()).collect();
    let summaries = goals::summarise(&runs, &names, &tuners);
    let mut cells = Vec::new();
    for path in &paths {
        for &peer in &o.peers {
            cells.push((path.name.as_str(), peer));
            let mine: Vec<&goals::Summary> = summaries
                .iter()
                .filter(|s| s.path == path.name && s.peer.as_deref() == Some(peer.name()))
                .collect();
            println!(
                "\n{}; {}; medians of valid runs",
                emulated::path_heading(&format!("{}, {peer}", path.name), path),
                who_tunes(peer)
            );
            print!("{}", report::table(peer, &mine));
        }
    }
    let facts: Vec<paths::PathFacts> = paths.iter().map(LoadedPath::facts).collect();
    if o.smoke {
        println!("\nsmoke run: every part ran; goals are not judged on so short a run");
    } else {
        let judged = report::judge(&cells, &summaries, &facts);
        println!();
        for j in &judged {
            println!("{}", j.line());
        }
        println!("{}", report::tally(&judged));
    }
    if failed > 0 {
        println!(
            "\n{failed} run(s) failed; see their error in {}",
            bench.runs_file.display()
        );
    }
    Ok(failed == 0)
}

/// Which ends tune, for people.
fn who_tunes(peer: Peer) -> &'static str {
    match peer {
        Peer::Rightsize => "rightsize get from rightsize serve, both ends tune",
        Peer::Vsftpd => "rightsize get from vsftpd, the receiver tunes alone",
        Peer::Curl => "curl from rightsize serve, the sender tunes alone",
        Peer::Globus => "globus-url-copy from rightsize serve, the sender tunes alone",
    }
}
