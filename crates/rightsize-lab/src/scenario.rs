//! A lab scenario: one TOML file naming a path, the tuners, the transfer
//! sizes, the repetitions, host-setting variants and the plots to make
//! (commented examples in `lab/scenarios/`). Parsing and checking only:
//! no I/O (the caller reads the file).

use std::collections::BTreeMap;

use anyhow::{Context, bail};
use rightsize_core::tune::TunerSpec;
use rightsize_core::units::Bytes;
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
];

/// A plot of a scenario's report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Plot {
    /// Mean goodput (95% CI) against transfer size, a line per tuner
    /// (seed 000 Fig. 4).
    GoodputVsSize,
    /// Goodput per MB of peak receive buffer against transfer size
    /// (seed 000 Fig. 6).
    MbpsPerMbVsSize,
    /// Mean goodput against the buffer of `static:SIZE` tuners (seed 004).
    GoodputVsBuffer,
    /// Mean goodput (95% CI) per tuner and variant, as bars.
    GoodputByTuner,
    /// The receiver's SO_RCVBUF over time, a line per run (seed 000 Fig. 5).
    RcvbufOverTime,
    /// The receiver's goodput over time, a line per tuner (seed 001).
    GoodputOverTime,
    /// The sender's smoothed RTT over time, a line per tuner (seed 001).
    RttOverTime,
}

/// A set of host settings to compare (seed 003: default vs tuned hosts):
/// keys of a path spec's `[left]`/`[right]` tables, laid over the path's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Variant {
    /// Its name in tables and legends.
    pub name: String,
    /// Keys for the left host (the client, which receives with `get`).
    #[serde(default)]
    pub left: BTreeMap<String, toml::Value>,
    /// Keys for the right host (the server).
    #[serde(default)]
    pub right: BTreeMap<String, toml::Value>,
}

/// Numbers a seed published, drawn beside ours on one plot.
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

/// A seed's headline claim, checked against our measurement: the ratio of
/// one tuner's mean goodput to another's (in the first variant, at the
/// largest size).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claim {
    /// Which seed, e.g. "000 drsFTP".
    pub seed: String,
    /// The claim in words.
    pub text: String,
    /// The tuner in the numerator.
    pub tuner: String,
    /// The tuner in the denominator.
    pub over: String,
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
    /// The tuners, as `--tune` takes them.
    pub tuners: Vec<String>,
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
    /// Numbers the seed published.
    #[serde(default)]
    pub published: Vec<Published>,
    /// The seed's claims.
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
    pub tuners: Option<Vec<String>>,
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
    /// The tuners, parsed, in order (canonical `--tune` text via Display).
    pub tuners: Vec<TunerSpec>,
    /// The sizes, parsed, in order.
    pub sizes: Vec<Bytes>,
    /// Repetitions.
    pub reps: usize,
}

/// The largest transfer a scenario may ask for.
pub const MAX_SIZE: Bytes = Bytes(16 << 30);

impl Checked {
    /// Parses and checks the text of scenario `name`; with `quick`, its
    /// `[quick]` sizes, repetitions and tuners replace the full ones.
    pub fn parse(name: &str, text: &str, quick: bool) -> anyhow::Result<Checked> {
        let scenario: Scenario =
            toml::from_str(text).with_context(|| format!("scenario {name:?}"))?;
        let (tuners, sizes, reps) = match (&scenario.quick, quick) {
            (Some(q), true) => (
                q.tuners.clone().unwrap_or_else(|| scenario.tuners.clone()),
                q.sizes.clone(),
                q.reps,
            ),
            (None, true) => bail!("scenario {name:?} has no [quick] table for --quick"),
            (_, false) => (
                scenario.tuners.clone(),
                scenario.sizes.clone(),
                scenario.reps,
            ),
        };
        if tuners.is_empty() || sizes.is_empty() {
            bail!("scenario {name:?}: needs at least one tuner and one size");
        }
        if !(1..=100).contains(&reps) {
            bail!("scenario {name:?}: reps = {reps}: accepted are 1 to 100");
        }
        let tuners = tuners
            .iter()
            .map(|t| {
                t.parse::<TunerSpec>()
                    .map_err(|e| anyhow::anyhow!("scenario {name:?}: tuner {t:?}: {e}"))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
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
                if !scenario.tuners.contains(t) {
                    bail!(
                        "scenario {name:?}: claim {:?} names tuner {t:?}, which the scenario does not run",
                        c.text
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
        })
    }

    /// The variants to run: the scenario's, or one unnamed ("path") with
    /// the path's own settings.
    pub fn variants(&self) -> Vec<Variant> {
        if self.scenario.variants.is_empty() {
            vec![Variant {
                name: "path".into(),
                ..Variant::default()
            }]
        } else {
            self.scenario.variants.clone()
        }
    }
}
