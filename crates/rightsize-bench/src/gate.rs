//! `rightsize-bench gate`: the performance gate that `./scripts/test`
//! runs, loose enough to hold on a busy two-core host and tight enough to
//! catch a halving. On `lfn` (200 Mbit/s x 100 ms, a 1 BDP queue) with
//! 64 MiB per run, `auto` and `kernel` take turns against three peers:
//!
//! - G1, between two rightsize ends: auto's goodput >= 0.8 x kernel's;
//! - G2, `rightsize get` from vsftpd (the receiver tunes alone): the same;
//! - G3, curl from `rightsize serve` (its default tuner; the sender tunes
//!   alone): the same;
//! - G4, between two rightsize ends: auto's peak receive buffer <= 0.5 x
//!   kernel's.
//!
//! A tuner whose run the path's fidelity check marked invalid (or that
//! failed) runs once more; a cell with a goal not met gets one more
//! repetition of both tuners and is judged on the medians, so one slow run
//! on a busy host does not fail the gate and a halving still does. Exits 1
//! when a goal is not met or not measured.

use anyhow::Context as _;
use rightsize_lab::run::paths::LoadedPath;
use rightsize_lab::run::peer::Peer;
use rightsize_tune::TunerSpec;
use rightsize_tune::units::Bytes;

use crate::emulated::{Bench, Cell};
use crate::flags;
use crate::goals::{self, Bound, Judged, Metric, Reference, Summary, Target, Verdict, judge_one};

pub const USAGE: &str = "\
usage: rightsize-bench gate [--out DIR]

The performance gate of ./scripts/test, as root: on bench/paths/lfn.toml with 64 MiB per run,
auto and kernel take turns between two rightsize ends, from vsftpd (rightsize get) and to curl
(rightsize serve), each run on a fresh `rightsize path run`. Goals: auto's goodput >= 0.8 x
kernel's with each peer (G1 rightsize, G2 vsftpd, G3 curl), and auto's peak receive buffer
<= 0.5 x kernel's between rightsize ends (G4). An invalid run (fidelity) is made once more; a
cell that misses a goal gets one more repetition and is judged on medians. Prints each goal
with its ratio; exits 1 if one is not met. Runs go to DIR/runs.jsonl (default:
target/bench-results/gate-UNIXTIME).";

/// The path.
const PATH: &str = "lfn";
/// Bytes per run.
const SIZE: Bytes = Bytes(64 << 20);
/// The peers, each a cell.
const PEERS: [Peer; 3] = [Peer::Rightsize, Peer::Vsftpd, Peer::Curl];
/// The least goodput ratio, auto / kernel.
const GOODPUT: f64 = 0.8;
/// The most peak receive buffer ratio, auto / kernel.
const RCVBUF: f64 = 0.5;

const AUTO: &str = "auto";
const KERNEL: &str = "kernel";

/// The gate's goals on `path`.
pub fn targets(path: &str) -> Vec<Target<'_>> {
    let goal = |id, peer: Peer, metric, bound| Target {
        id,
        path,
        peer: Some(peer.name()),
        tuner: AUTO,
        metric,
        reference: Reference::Tuner(KERNEL),
        bound,
        note: "",
    };
    vec![
        goal(
            "G1",
            Peer::Rightsize,
            Metric::Goodput,
            Bound::AtLeast(GOODPUT),
        ),
        goal("G2", Peer::Vsftpd, Metric::Goodput, Bound::AtLeast(GOODPUT)),
        goal("G3", Peer::Curl, Metric::Goodput, Bound::AtLeast(GOODPUT)),
        goal(
            "G4",
            Peer::Rightsize,
            Metric::PeakRcvbuf,
            Bound::AtMost(RCVBUF),
        ),
    ]
}

/// The (peer, tuner) pairs with no valid run yet: to run once more.
pub fn without_valid_run(
    summaries: &[Summary],
    peers: &[Peer],
    tuners: &[&str],
) -> Vec<(Peer, String)> {
    let mut out = Vec::new();
    for &peer in peers {
        for &tuner in tuners {
            let valid = summaries
                .iter()
                .find(|s| s.peer.as_deref() == Some(peer.name()) && s.tuner == tuner)
                .map_or(0, |s| s.valid);
            if valid == 0 {
                out.push((peer, tuner.to_owned()));
            }
        }
    }
    out
}

/// The peers of the goals judged not met (each once, in order).
pub fn peers_not_met(judged: &[Judged]) -> Vec<Peer> {
    let mut out: Vec<Peer> = Vec::new();
    for j in judged.iter().filter(|j| j.verdict == Verdict::NotMet) {
        if let Some(peer) = PEERS.into_iter().find(|p| Some(p.name()) == j.target.peer)
            && !out.contains(&peer)
        {
            out.push(peer);
        }
    }
    out
}

/// Whether every goal was met.
pub fn passed(judged: &[Judged]) -> bool {
    !judged.is_empty() && judged.iter().all(|j| j.verdict == Verdict::Met)
}

/// Runs the gate; `Ok(false)` if a goal was not met or a run failed.
pub fn run(args: &[String]) -> anyhow::Result<bool> {
    let given = flags::given(args, &["--out"], USAGE).context(flags::BadUsage)?;
    if given.smoke {
        return Err(anyhow::anyhow!(
            "the gate has no --smoke: it is short already\n\n{USAGE}"
        ))
        .context(flags::BadUsage);
    }
    let out = given
        .values
        .into_iter()
        .find(|(flag, _)| flag == "--out")
        .map(|(_, dir)| std::path::PathBuf::from(dir));
    let (bench, paths, budget) = Bench::open("gate", &[PATH.to_owned()], out.as_deref(), false)?;
    let path: &LoadedPath = paths.first().context("the gate's path did not load")?;
    let tuners = [TunerSpec::Auto, TunerSpec::Kernel];
    let names = [AUTO, KERNEL];
    println!(
        "rightsize-bench gate: {} with {} per run, auto and kernel against rightsize, vsftpd and curl; kernel {}",
        path.name,
        SIZE.human_iec(),
        bench.kernel
    );
    println!("runs: {}", bench.runs_file.display());
    for line in path.spec.describe() {
        println!("  {line}");
    }
    let mut failed = 0usize;
    let mut cell = |peer: Peer, tuners: &[TunerSpec], attempt: &str| -> anyhow::Result<()> {
        println!("  peer {peer} ({attempt})");
        failed += bench.cell(&Cell {
            path,
            peer: Some(peer),
            tuners,
            reps: 1,
            asked: SIZE,
            budget,
            dir: &bench.out.join(peer.name()).join(attempt),
            indent: "    ",
        })?;
        Ok(())
    };
    for peer in PEERS {
        cell(peer, &tuners, "first")?;
    }
    let names_owned: Vec<String> = names.iter().map(|&n| n.to_owned()).collect();
    let summaries = |bench: &Bench| -> anyhow::Result<Vec<Summary>> {
        Ok(goals::summarise(
            &bench.runs()?,
            std::slice::from_ref(&path.name),
            &names_owned,
        ))
    };
    for (peer, tuner) in without_valid_run(&summaries(&bench)?, &PEERS, &names) {
        let spec: TunerSpec = tuner.parse().context("a tuner of the gate")?;
        cell(peer, &[spec], "again, no valid run")?;
    }
    let facts = path.facts();
    let judge = |summaries: &[Summary]| -> Vec<Judged<'_>> {
        targets(PATH)
            .into_iter()
            .map(|t| judge_one(t, summaries, &facts))
            .collect()
    };
    let first = summaries(&bench)?;
    for peer in peers_not_met(&judge(&first)) {
        cell(peer, &tuners, "repeated, a goal not met")?;
    }
    let last = summaries(&bench)?;
    let judged = judge(&last);
    println!();
    for j in &judged {
        println!("{}", j.line());
    }
    let ok = passed(&judged) && failed == 0;
    if failed > 0 {
        println!(
            "{failed} run(s) failed; see their error in {}",
            bench.runs_file.display()
        );
    }
    println!(
        "gate: {}",
        if ok {
            "every goal met"
        } else {
            "FAILED (a goal not met, not measured, or a run failed)"
        }
    );
    Ok(ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(peer: Peer, tuner: &str, valid: usize, goodput: f64, rcvbuf: f64) -> Summary {
        Summary {
            path: PATH.to_owned(),
            peer: Some(peer.name().to_owned()),
            tuner: tuner.to_owned(),
            valid,
            total: valid.max(1),
            goodput_bps: (valid > 0).then_some(goodput),
            peak_rcvbuf_bytes: (valid > 0).then_some(rcvbuf),
            ..Summary::default()
        }
    }

    fn facts() -> rightsize_lab::run::paths::PathFacts {
        rightsize_lab::run::paths::PathFacts {
            name: PATH.to_owned(),
            bdp_bytes: 2.5e6,
            ceiling_bps: 193e6,
        }
    }

    fn judged(summaries: &[Summary]) -> Vec<Judged<'static>> {
        let f = facts();
        targets(PATH)
            .into_iter()
            .map(|t| judge_one(t, summaries, &f))
            .collect()
    }

    fn all(auto_goodput: f64, auto_rcvbuf: f64) -> Vec<Summary> {
        let mut out = Vec::new();
        for peer in PEERS {
            out.push(summary(peer, AUTO, 1, auto_goodput, auto_rcvbuf));
            out.push(summary(peer, KERNEL, 1, 180e6, 30e6));
        }
        out
    }

    #[test]
    fn the_gate_passes_a_fine_auto_and_fails_a_halved_one() {
        assert!(passed(&judged(&all(175e6, 4e6))));
        // 0.8 x 180 = 144 Mbit/s holds; a halving does not.
        assert!(passed(&judged(&all(144e6, 4e6))));
        let halved = judged(&all(90e6, 4e6));
        assert!(!passed(&halved));
        assert_eq!(
            peers_not_met(&halved),
            [Peer::Rightsize, Peer::Vsftpd, Peer::Curl]
        );
        // Memory: auto with kernel's buffers fails G4 only.
        let fat = judged(&all(175e6, 20e6));
        assert_eq!(peers_not_met(&fat), [Peer::Rightsize]);
    }

    #[test]
    fn a_missing_run_fails_the_gate_and_is_run_again() {
        let mut s = all(175e6, 4e6);
        s.retain(|x| !(x.peer.as_deref() == Some("curl") && x.tuner == KERNEL));
        s.push(summary(Peer::Curl, KERNEL, 0, 0.0, 0.0));
        let j = judged(&s);
        assert!(!passed(&j));
        assert!(
            j.iter()
                .any(|x| matches!(x.verdict, Verdict::NotMeasured(_)))
        );
        // Not measured is not "not met": no repetition, but a run again.
        assert!(peers_not_met(&j).is_empty());
        assert_eq!(
            without_valid_run(&s, &PEERS, &[AUTO, KERNEL]),
            [(Peer::Curl, KERNEL.to_owned())]
        );
        assert!(!passed(&[]));
    }
}
