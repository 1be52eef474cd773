//! A lab scenario: one TOML file naming a path, the tuners, the transfer
//! sizes, the repetitions, host-setting variants and the plots to make
//! (commented examples in `lab/scenarios/`). Parsing and checking only:
//! no I/O (the caller reads the file).

use std::collections::BTreeMap;

use anyhow::{Context, bail};
use rightsize_tune::TunerSpec;
use rightsize_tune::units::Bytes;
use serde::{Deserialize, Serialize};

/// Plots a scenario may ask for (see [`Plot`]).
pub const PLOTS: &[&str] = &[
    "goodput-vs-size",
    "mbps-per-mb-vs-size",
    "goodput-vs-buffer",
    "goodput-by-tuner",
    "rcvbuf-over-time",
    "goodput-over-time",
    "rtt-over-time",
    "cwnd-over-time",
    "rwnd-over-time",
    "retrans-over-time",
    "goodput-vs-memory",
];

/// A plot of a scenario's report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Plot {
    /// Mean goodput (95% CI) against transfer size, a line per tuner
    /// (the drsFTP paper, Fig. 4; docs/sources.md).
    GoodputVsSize,
    /// Goodput per MB of peak receive buffer against transfer size
    /// (the drsFTP paper, Fig. 6).
    MbpsPerMbVsSize,
    /// Mean goodput against the buffer of `static:SIZE` tuners (the Windows note).
    GoodputVsBuffer,
    /// Mean goodput (95% CI) per tuner and variant, as bars.
    GoodputByTuner,
    /// The receiver's SO_RCVBUF over time, a line per run (the drsFTP paper, Fig. 5).
    RcvbufOverTime,
    /// The receiver's goodput over time, a line per tuner (the SOBAS paper).
    GoodputOverTime,
    /// The sender's smoothed RTT over time, a line per tuner (the SOBAS paper).
    RttOverTime,
    /// The sender's congestion window over time, a line per tuner.
    CwndOverTime,
    /// The window the receiver advertised over time, a line per tuner.
    RwndOverTime,
    /// The sender's retransmitted segments so far, over time, a line per tuner.
    RetransOverTime,
    /// Mean goodput against mean peak receive buffer, a point per tuner
    /// and variant: the trade-off the source documents argue about.
    GoodputVsMemory,
}

/// A setting of the path and the hosts to compare: host settings (the
/// perfSONAR lab: default vs tuned hosts), path keys (the Windows note: the RTT;
/// the SOBAS paper: cross traffic) and the server's options (the Windows note:
/// the write size),
/// laid over the scenario's path.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Variant {
    /// Its name in tables and legends.
    pub name: String,
    /// Top-level keys of a path spec (`delay`, `rate`, `queue`, `cross`,
    /// ...), laid over the path's.
    #[serde(default)]
    pub path: BTreeMap<String, toml::Value>,
    /// Keys for the left host (the client, which receives with `get`).
    #[serde(default)]
    pub left: BTreeMap<String, toml::Value>,
    /// Keys for the right host (the server).
    #[serde(default)]
    pub right: BTreeMap<String, toml::Value>,
    /// Options added to `rightsize serve` (e.g. `["--write-size", "1024"]`).
    #[serde(default)]
    pub server_args: Vec<String>,
}

/// A tuner as a scenario names it: one `--tune` for both ends, or one per
/// end under a label (the Windows note: a sender's buffer and a receiver's window).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TunerEntry {
    /// The same tuner on both ends: `"auto"`, `"static:1bdp"`.
    Both(String),
    /// A tuner per end.
    Pair(TunerPair),
}

/// A tuner per end under a label.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TunerPair {
    /// Its name in tables, legends and claims.
    pub label: String,
    /// The server's `--tune` (the sender with `get`).
    pub server: String,
    /// The client's `--tune` (the receiver).
    pub client: String,
}

/// One end's tuner: a `--tune` value, or `static:Nbdp`, a static buffer of
/// N times the variant's BDP rounded up to whole segments (the Windows note sizes
/// `TcpWindowSize` so), resolved when the path is known.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum EndTuner {
    /// As given.
    Spec(TunerSpec),
    /// `static:` N x the BDP.
    StaticBdp(f64),
}

/// Segment size a `static:Nbdp` buffer is a whole multiple of: the TCP
/// payload of a 1500-byte packet with timestamps.
pub const SEGMENT_BYTES: u64 = 1448;

impl EndTuner {
    /// Parses a `--tune` value or `static:Nbdp` (N from 0.01 to 100).
    pub fn parse(text: &str) -> Result<EndTuner, String> {
        if let Some(n) = text
            .strip_prefix("static:")
            .and_then(|r| r.trim().strip_suffix("bdp"))
        {
            return match n.trim().parse::<f64>() {
                Ok(n) if (0.01..=100.0).contains(&n) => Ok(EndTuner::StaticBdp(n)),
                _ => Err(format!(
                    "{text:?}: static:Nbdp takes N from 0.01 to 100, e.g. static:1bdp"
                )),
            };
        }
        text.parse::<TunerSpec>()
            .map(EndTuner::Spec)
            .map_err(|e| e.to_string())
    }

    /// The tuner on a path whose BDP is `bdp_bytes`.
    pub fn resolve(self, bdp_bytes: u64) -> TunerSpec {
        match self {
            EndTuner::Spec(t) => t,
            EndTuner::StaticBdp(n) => {
                let bytes = (n * bdp_bytes as f64).ceil() as u64;
                TunerSpec::Static(Bytes(bytes.div_ceil(SEGMENT_BYTES).max(1) * SEGMENT_BYTES))
            }
        }
    }

    /// Its text: canonical for a `--tune` value.
    pub fn text(self) -> String {
        match self {
            EndTuner::Spec(t) => t.to_string(),
            EndTuner::StaticBdp(n) => format!("static:{n}bdp"),
        }
    }
}

/// A scenario's tuner, parsed: a label and a tuner per end.
#[derive(Debug, Clone, PartialEq)]
pub struct Tuning {
    /// Its name in records, tables, legends and claims (the canonical
    /// `--tune` text when both ends run the same).
    pub label: String,
    /// The server's (the sender's).
    pub server: EndTuner,
    /// The client's (the receiver's).
    pub client: EndTuner,
}

impl Tuning {
    /// Parses an entry; errors name the entry.
    pub fn parse(entry: &TunerEntry) -> Result<Tuning, String> {
        match entry {
            TunerEntry::Both(text) => {
                let t = EndTuner::parse(text)?;
                Ok(Tuning {
                    label: t.text(),
                    server: t,
                    client: t,
                })
            }
            TunerEntry::Pair(p) => {
                if p.label.trim().is_empty() {
                    return Err("a tuner pair needs a label".into());
                }
                Ok(Tuning {
                    label: p.label.clone(),
                    server: EndTuner::parse(&p.server).map_err(|e| format!("server: {e}"))?,
                    client: EndTuner::parse(&p.client).map_err(|e| format!("client: {e}"))?,
                })
            }
        }
    }

    /// Both ends on a path whose BDP is `bdp_bytes`.
    pub fn resolve(&self, bdp_bytes: u64) -> RunTuning {
        RunTuning {
            label: self.label.clone(),
            server: self.server.resolve(bdp_bytes),
            client: self.client.resolve(bdp_bytes),
        }
    }
}

/// The tuners of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunTuning {
    /// The scenario's label.
    pub label: String,
    /// The server's `--tune`.
    pub server: TunerSpec,
    /// The client's `--tune`.
    pub client: TunerSpec,
}

impl std::fmt::Display for RunTuning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.label)
    }
}

/// Numbers a source document published, drawn beside ours on one plot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Published {
    /// The plot they belong on.
    pub plot: Plot,
    /// The legend, e.g. "drsFTP (paper): drs".
    pub label: String,
    /// `[x, y]` pairs in the plot's units (bytes; Mbit/s; seconds).
    pub points: Vec<[f64; 2]>,
}

/// A source document's headline claim, checked against our measurement: the ratio of
/// one tuner's mean goodput to another's at the largest size, in the first
/// variant unless the claim names one (and, for the denominator, another).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claim {
    /// Which document, e.g. "drsFTP paper" (or "rightsize" for rightsize's
    /// own goals); the report's "source" column.
    pub seed: String,
    /// The claim in words.
    pub text: String,
    /// The tuner in the numerator (a label of the scenario's tuners).
    pub tuner: String,
    /// The tuner in the denominator.
    pub over: String,
    /// The variant of the numerator; none: the first.
    #[serde(default)]
    pub variant: Option<String>,
    /// The variant of the denominator; none: the numerator's.
    #[serde(default)]
    pub over_variant: Option<String>,
    /// The published ratio.
    pub published: f64,
    /// The least ratio for which the claim's shape holds.
    pub holds_at_least: f64,
}

/// A scenario as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// The title of its report section.
    pub title: String,
    /// What it reproduces and how to read it.
    #[serde(default)]
    pub about: String,
    /// A path spec: a file relative to the scenario, or a name in
    /// `bench/paths/` (`lfn`, `shallow`, `changing`).
    pub path: String,
    /// The tuners: `--tune` values (both ends), `static:Nbdp`, or
    /// `{ label, server, client }` tables.
    pub tuners: Vec<TunerEntry>,
    /// Transfer sizes ("8KB", "256MiB").
    pub sizes: Vec<String>,
    /// Repetitions of each (tuner, size, variant).
    #[serde(default = "default_reps")]
    pub reps: usize,
    /// A tuner whose fixed window allows less than 20 Mbit/s (`stock`)
    /// moves only what lasts this long instead of a larger size (the
    /// record keeps the size asked); none: every size in full.
    #[serde(default)]
    pub max_run_seconds: Option<f64>,
    /// Host-setting variants; none means the path's own settings.
    #[serde(default)]
    pub variants: Vec<Variant>,
    /// The plots of its report.
    pub plots: Vec<Plot>,
    /// Numbers the source document published.
    #[serde(default)]
    pub published: Vec<Published>,
    /// The source document's claims, and rightsize's own.
    #[serde(default)]
    pub claims: Vec<Claim>,
    /// `--quick`: sizes and repetitions for a short run.
    #[serde(default)]
    pub quick: Option<Quick>,
}

/// The `--quick` variant of a scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Quick {
    /// Sizes instead of `sizes`.
    pub sizes: Vec<String>,
    /// Repetitions instead of `reps`.
    #[serde(default = "one")]
    pub reps: usize,
    /// Tuners instead of `tuners`, if given.
    #[serde(default)]
    pub tuners: Option<Vec<TunerEntry>>,
    /// Variants (by name) instead of all of them, if given.
    #[serde(default)]
    pub variants: Option<Vec<String>>,
}

fn default_reps() -> usize {
    3
}

fn one() -> usize {
    1
}

/// A scenario, checked: tuners and sizes parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    /// Its name: the file stem.
    pub name: String,
    /// As written.
    pub scenario: Scenario,
    /// The tuners, parsed, in order.
    pub tuners: Vec<Tuning>,
    /// The sizes, parsed, in order.
    pub sizes: Vec<Bytes>,
    /// Repetitions.
    pub reps: usize,
    /// With `--quick` and a `[quick] variants` list: the variants to run.
    pub only_variants: Option<Vec<String>>,
}

/// Parses a scenario's tuner entries; each label only once.
fn parse_tuners(name: &str, entries: &[TunerEntry]) -> anyhow::Result<Vec<Tuning>> {
    let tuners = entries
        .iter()
        .map(|t| {
            Tuning::parse(t).map_err(|e| anyhow::anyhow!("scenario {name:?}: tuner {t:?}: {e}"))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mut labels = std::collections::BTreeSet::new();
    for t in &tuners {
        if !labels.insert(t.label.as_str()) {
            bail!("scenario {name:?}: tuner {:?} is named twice", t.label);
        }
    }
    Ok(tuners)
}

/// A tuner's canonical `--tune` text (`static:16MiB`), or the text as given
/// if it does not parse.
pub fn canonical(text: &str) -> String {
    text.parse::<TunerSpec>()
        .map_or_else(|_| text.to_owned(), |t| t.to_string())
}

/// The largest transfer a scenario may ask for.
pub const MAX_SIZE: Bytes = Bytes(16 << 30);

impl Checked {
    /// Parses and checks the text of scenario `name`; with `quick`, its
    /// `[quick]` sizes, repetitions and tuners replace the full ones.
    pub fn parse(name: &str, text: &str, quick: bool) -> anyhow::Result<Checked> {
        let scenario: Scenario =
            toml::from_str(text).with_context(|| format!("scenario {name:?}"))?;
        // Every tuner the scenario names, so that claims are checked
        // against all of them even when `--quick` runs fewer.
        let all = parse_tuners(name, &scenario.tuners)?;
        let (tuners, sizes, reps) = match (&scenario.quick, quick) {
            (Some(q), true) => (
                match &q.tuners {
                    Some(t) => parse_tuners(name, t)?,
                    None => all.clone(),
                },
                q.sizes.clone(),
                q.reps,
            ),
            (None, true) => bail!("scenario {name:?} has no [quick] table for --quick"),
            (_, false) => (all.clone(), scenario.sizes.clone(), scenario.reps),
        };
        if tuners.is_empty() || sizes.is_empty() {
            bail!("scenario {name:?}: needs at least one tuner and one size");
        }
        if !(1..=100).contains(&reps) {
            bail!("scenario {name:?}: reps = {reps}: accepted are 1 to 100");
        }
        let sizes = sizes
            .iter()
            .map(|s| {
                let b: Bytes = s
                    .parse()
                    .map_err(|e| anyhow::anyhow!("scenario {name:?}: size {s:?}: {e}"))?;
                if b.get() == 0 || b > MAX_SIZE {
                    bail!("scenario {name:?}: size {s:?}: accepted are 1 byte to 16 GiB");
                }
                Ok(b)
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        if let Some(secs) = scenario.max_run_seconds
            && !(1.0..=3600.0).contains(&secs)
        {
            bail!("scenario {name:?}: max_run_seconds = {secs}: accepted are 1 to 3600");
        }
        let mut names = std::collections::BTreeSet::new();
        for v in &scenario.variants {
            if v.name.is_empty() || !names.insert(v.name.as_str()) {
                bail!(
                    "scenario {name:?}: variant names must be given and distinct ({:?})",
                    v.name
                );
            }
        }
        for c in &scenario.claims {
            for t in [&c.tuner, &c.over] {
                if !all.iter().any(|x| &x.label == t || canonical(t) == x.label) {
                    bail!(
                        "scenario {name:?}: claim {:?} names tuner {t:?}, which the scenario does not run",
                        c.text
                    );
                }
            }
            for v in [&c.variant, &c.over_variant].into_iter().flatten() {
                if !names.contains(v.as_str()) {
                    bail!(
                        "scenario {name:?}: claim {:?} names variant {v:?}, which the scenario does not have",
                        c.text
                    );
                }
            }
        }
        let wanted = match (&scenario.quick, quick) {
            (Some(q), true) => q.variants.clone(),
            _ => None,
        };
        if let Some(wanted) = &wanted {
            for v in wanted {
                if !names.contains(v.as_str()) {
                    bail!(
                        "scenario {name:?}: [quick] names variant {v:?}, which the scenario does not have"
                    );
                }
            }
        }
        Ok(Checked {
            name: name.to_owned(),
            scenario,
            tuners,
            sizes,
            reps,
            only_variants: wanted,
        })
    }

    /// The variants to run: the scenario's (those `[quick]` names, with
    /// `--quick`), or one unnamed ("path") with the path's own settings.
    pub fn variants(&self) -> Vec<Variant> {
        if self.scenario.variants.is_empty() {
            vec![Variant {
                name: "path".into(),
                ..Variant::default()
            }]
        } else {
            self.scenario
                .variants
                .iter()
                .filter(|v| {
                    self.only_variants
                        .as_ref()
                        .is_none_or(|only| only.contains(&v.name))
                })
                .cloned()
                .collect()
        }
    }

    /// The label of the tuner a claim or a record names: its own text if a
    /// label, else its canonical `--tune` text.
    pub fn label_of(&self, text: &str) -> String {
        if self.tuners.iter().any(|t| t.label == text) {
            text.to_owned()
        } else {
            canonical(text)
        }
    }
}
