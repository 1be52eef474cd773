//! The flags of `rightsize-bench peers`, parsed without touching the
//! system (see [`crate::flags`]).

use std::path::PathBuf;

use anyhow::Context;
use rightsize_lab::run::peer::Peer;
use rightsize_path::PathSpec;
use rightsize_tune::TunerSpec;
use rightsize_tune::units::Bytes;

use super::USAGE;
use crate::flags::{self, list, names, parse_paths, parse_reps, parse_size, parse_tuners};

/// The paths: the tuner benchmark's three, the Windows note's slow short
/// path, a lossy path under bbr, one under reno and a short, fast one
/// (`bench/paths/`).
pub const DEFAULT_PATHS: &[&str] = &[
    "lfn", "shallow", "changing", "short", "bbr-loss", "reno", "metro",
];

/// Every peer.
pub const DEFAULT_PEERS: &[&str] = &["rightsize", "vsftpd", "curl", "globus"];

/// rightsize's tuner, Linux's autotuning, and the over-provisioned buffer.
pub const DEFAULT_TUNERS: &[&str] = &["auto", "kernel", "static:16MiB"];

/// Repetitions of each tuner in each cell.
pub const DEFAULT_REPS: usize = 3;

/// Bytes per transfer.
pub const DEFAULT_SIZE: Bytes = Bytes(256 << 20);

/// Bytes per transfer where the sender runs bbr: about 30 s at 180 Mbit/s.
/// bbr halts the flow for `PROBE_RTT` (four segments in flight for 200 ms
/// and a round trip) ten seconds after its minimum RTT last fell, which
/// happens at a time of its own in each run (0.9 to 2.2 s, or later): a
/// transfer of 12 s holds one halt or none, and a cell's medians swing by
/// 2 to 3% with that. One of 30 s holds two (one where the minimum last
/// fell late), each about 1% of it.
pub const BBR_SIZE: Bytes = Bytes(640 << 20);

/// What `--smoke` runs: each program that is not rightsize once, on the
/// shortest path, in well under a minute and a half.
pub const SMOKE_PATHS: &[&str] = &["short"];
/// The peers of `--smoke`.
pub const SMOKE_PEERS: &[&str] = &["vsftpd", "curl", "globus"];
/// The tuners of `--smoke`.
pub const SMOKE_TUNERS: &[&str] = &["auto"];
/// Bytes per transfer of `--smoke`.
pub const SMOKE_SIZE: Bytes = Bytes(16 << 20);

/// The benchmark's settings, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Path names (`bench/paths/NAME.toml`) or spec files.
    pub paths: Vec<String>,
    /// Peers, each once, in the order given.
    pub peers: Vec<Peer>,
    /// Tuners, each once, in the order given.
    pub tuners: Vec<TunerSpec>,
    /// Repetitions of each (path, peer, tuner).
    pub reps: usize,
    /// Bytes per transfer, if given (see [`Options::size_for`]).
    pub size: Option<Bytes>,
    /// Where runs.jsonl and each run's files go; `None` for a fresh
    /// directory under target/.
    pub out: Option<PathBuf>,
    /// The smoke run: goals are not judged.
    pub smoke: bool,
}

/// Parses the arguments after `peers`. `--smoke` sets the smoke run's
/// paths, peers, tuners, repetitions and size; flags given explicitly win,
/// in whatever order.
pub fn parse(args: &[String]) -> anyhow::Result<Options> {
    let given = flags::given(
        args,
        &[
            "--paths", "--peers", "--tuners", "--reps", "--size", "--out",
        ],
        USAGE,
    )?;
    let smoke = given.smoke;
    let mut paths = None;
    let mut peers = None;
    let mut tuners = None;
    let mut reps = None;
    let mut size = None;
    let mut out = None;
    for (flag, value) in given.values {
        match flag.as_str() {
            "--paths" => paths = Some(parse_paths(&value)?),
            "--peers" => peers = Some(parse_peers(&value)?),
            "--tuners" => tuners = Some(parse_tuners(&value)?),
            "--reps" => reps = Some(parse_reps(&value)?),
            "--size" => size = Some(parse_size(&value)?),
            _ => out = Some(PathBuf::from(value)),
        }
    }
    let pick = |normal: &'static [&'static str], short: &'static [&'static str]| {
        if smoke { short } else { normal }
    };
    Ok(Options {
        paths: paths.unwrap_or_else(|| names(pick(DEFAULT_PATHS, SMOKE_PATHS))),
        peers: match peers {
            Some(p) => p,
            None => parse_peers(&pick(DEFAULT_PEERS, SMOKE_PEERS).join(","))?,
        },
        tuners: match tuners {
            Some(t) => t,
            None => parse_tuners(&pick(DEFAULT_TUNERS, SMOKE_TUNERS).join(","))?,
        },
        reps: reps.unwrap_or(if smoke { 1 } else { DEFAULT_REPS }),
        size,
        out,
        smoke,
    })
}

impl Options {
    /// Bytes per transfer on `path`: `--size` if given, else the smoke
    /// run's, else [`BBR_SIZE`] where the sender (the right host) runs bbr,
    /// else [`DEFAULT_SIZE`].
    pub fn size_for(&self, path: &PathSpec) -> Bytes {
        match self.size {
            Some(size) => size,
            None if self.smoke => SMOKE_SIZE,
            None if path.right.congestion.as_deref() == Some("bbr") => BBR_SIZE,
            None => DEFAULT_SIZE,
        }
    }

    /// The size per run, for the heading.
    pub fn size_heading(&self) -> String {
        match self.size {
            Some(size) => format!("{} per run", size.human_iec()),
            None if self.smoke => format!("{} per run", SMOKE_SIZE.human_iec()),
            None => format!(
                "{} per run ({} where the sender runs bbr)",
                DEFAULT_SIZE.human_iec(),
                BBR_SIZE.human_iec()
            ),
        }
    }
}

/// Peers by name, each once.
pub fn parse_peers(value: &str) -> anyhow::Result<Vec<Peer>> {
    list("--peers", value)?
        .iter()
        .map(|name| {
            name.parse::<Peer>()
                .map_err(anyhow::Error::msg)
                .with_context(|| format!("--peers {value:?}"))
        })
        .collect()
}
