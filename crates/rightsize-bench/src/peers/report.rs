//! The peer benchmark's tables (one per path and peer) and its goals.
//! Pure: summaries in, text and verdicts out.
//!
//! The goals, against each peer (`auto` against `kernel` unless said):
//!
//! - P1, every cell: median goodput >= 0.98 x the kernel's;
//! - P2, every cell: the worst run's goodput >= 0.9 x the kernel's median;
//! - P3, vsftpd (the receiver tunes alone): peak receive buffer <= 0.25 x
//!   the kernel's;
//! - P4, curl and globus (the sender tunes alone): peak send buffer <= 0.5 x
//!   the kernel's;
//! - P5 and P6, `shallow` from vsftpd: goodput >= 0.9 x the path's ceiling,
//!   with <= 0.2 x `static:16MiB`'s retransmitted bytes;
//! - between two rightsize ends, the tuner benchmark's goals 1a (`lfn`), 2a
//!   (`shallow`) and 3a (`changing`) still hold.

use std::fmt::Write as _;

use rightsize_lab::run::paths::PathFacts;
use rightsize_lab::run::peer::Peer;
use rightsize_lab::run::record::peers::SEGMENT_BYTES;

use crate::goals::{Bound, Judged, Metric, Reference, STATIC_16, Summary, Target, cell, judge_one};
use crate::tuners::report::TARGETS;

const AUTO: &str = "auto";
const KERNEL: &str = "kernel";

/// The tuner benchmark's goals that must still hold between two rightsize
/// ends.
pub const RIGHTSIZE_GOALS: &[&str] = &["1a", "2a", "3a"];

/// The table of one path and peer: one row per tuner. A buffer of an end
/// that is not rightsize is `n/a`; retransmissions counted on the path
/// are said under the table.
pub fn table(peer: Peer, summaries: &[&Summary]) -> String {
    let mut s = String::new();
    let row = |s: &mut String, cols: [&str; 7]| {
        let _ = writeln!(
            s,
            "  {:<14} {:>6} {:>9} {:>9} {:>11} {:>11} {:>12}",
            cols[0], cols[1], cols[2], cols[3], cols[4], cols[5], cols[6]
        );
    };
    row(
        &mut s,
        [
            "tuner",
            "valid",
            "goodput",
            "worst",
            "peak rcvbuf",
            "peak sndbuf",
            "retrans",
        ],
    );
    row(
        &mut s,
        ["", "", "Mbit/s", "Mbit/s", "recv MB", "send MB", "bytes"],
    );
    let na = |rightsize: bool, value: Option<f64>| {
        if rightsize {
            cell(value, 1e6, 2)
        } else {
            "n/a".to_owned()
        }
    };
    let mut from_path = false;
    for x in summaries {
        from_path |= x.retrans_from.is_some();
        row(
            &mut s,
            [
                x.tuner.as_str(),
                format!("{}/{}", x.valid, x.total).as_str(),
                cell(x.goodput_bps, 1e6, 1).as_str(),
                cell(x.worst_goodput_bps, 1e6, 1).as_str(),
                na(peer.client_is_rightsize(), x.peak_rcvbuf_bytes).as_str(),
                na(peer.server_is_rightsize(), x.peak_sndbuf_bytes).as_str(),
                cell(x.bytes_retrans, 1.0, 0).as_str(),
            ],
        );
    }
    if from_path {
        let _ = writeln!(
            s,
            "  retrans: the path's retransmitted segments (both hosts) x {SEGMENT_BYTES} B; the sender, {peer}, says none"
        );
    }
    s
}

/// The goals of one cell: `path` against `peer`.
pub fn goals(path: &str, peer: Peer) -> Vec<Target<'_>> {
    let name = Some(peer.name());
    let auto = |id, metric, reference, bound| Target {
        id,
        path,
        peer: name,
        tuner: AUTO,
        metric,
        reference,
        bound,
        note: "",
    };
    let mut out = vec![
        auto(
            "P1",
            Metric::Goodput,
            Reference::Tuner(KERNEL),
            Bound::AtLeast(0.98),
        ),
        auto(
            "P2",
            Metric::WorstGoodput,
            Reference::Tuner(KERNEL),
            Bound::AtLeast(0.9),
        ),
    ];
    match peer {
        Peer::Vsftpd => out.push(auto(
            "P3",
            Metric::PeakRcvbuf,
            Reference::Tuner(KERNEL),
            Bound::AtMost(0.25),
        )),
        Peer::Curl | Peer::Globus => out.push(auto(
            "P4",
            Metric::PeakSndbuf,
            Reference::Tuner(KERNEL),
            Bound::AtMost(0.5),
        )),
        Peer::Rightsize => {}
    }
    if peer == Peer::Vsftpd && path == "shallow" {
        out.push(auto(
            "P5",
            Metric::Goodput,
            Reference::Ceiling,
            Bound::AtLeast(0.9),
        ));
        out.push(auto(
            "P6",
            Metric::RetransBytes,
            Reference::Tuner(STATIC_16),
            Bound::AtMost(0.2),
        ));
    }
    if peer == Peer::Rightsize {
        out.extend(
            TARGETS
                .iter()
                .filter(|t| RIGHTSIZE_GOALS.contains(&t.id) && t.path == path)
                .map(|t| Target {
                    path,
                    peer: name,
                    ..*t
                }),
        );
    }
    out
}

/// Judges the goals of every cell, in order.
pub fn judge<'a>(
    cells: &[(&'a str, Peer)],
    summaries: &[Summary],
    facts: &[PathFacts],
) -> Vec<Judged<'a>> {
    let mut out = Vec::new();
    for &(path, peer) in cells {
        let Some(f) = facts.iter().find(|f| f.name == path) else {
            continue;
        };
        for target in goals(path, peer) {
            out.push(judge_one(target, summaries, f));
        }
    }
    out
}

/// `12 of 14 goals met, 1 not met, 1 not measured`.
pub fn tally(judged: &[Judged]) -> String {
    use crate::goals::Verdict;
    let met = judged.iter().filter(|j| j.verdict == Verdict::Met).count();
    let not = judged
        .iter()
        .filter(|j| j.verdict == Verdict::NotMet)
        .count();
    format!(
        "{met} of {} goals met, {not} not met, {} not measured",
        judged.len(),
        judged.len() - met - not
    )
}
