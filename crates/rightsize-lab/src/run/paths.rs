//! The emulated paths: a name (`lfn`) is `bench/paths/lfn.toml`; a spec is
//! checked with rightsize's own parser before anything runs, and each run
//! gets a copy that also starts the server on the right host.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use rightsize_path::{PathSpec, Side};

use super::budget;

/// What a path contributes to the targets: its BDP and goodput ceiling.
#[derive(Debug, Clone, PartialEq)]
pub struct PathFacts {
    /// The path's name.
    pub name: String,
    /// Bandwidth-delay product of the data's direction, bytes.
    pub bdp_bytes: f64,
    /// Goodput ceiling, bits/s.
    pub ceiling_bps: f64,
}

/// Where the named paths live, in the source tree.
pub const PATHS_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../bench/paths");

/// A path spec, read and checked.
#[derive(Debug, Clone)]
pub struct LoadedPath {
    /// Its name: the file stem.
    pub name: String,
    /// The file.
    pub file: PathBuf,
    /// The file's text.
    pub text: String,
    /// The parsed spec.
    pub spec: PathSpec,
}

impl LoadedPath {
    /// Loads `name_or_file`: an existing file, else `bench/paths/NAME.toml`.
    pub fn load(name_or_file: &str) -> anyhow::Result<LoadedPath> {
        let (file, name) = find(name_or_file, Path::new(PATHS_DIR)).with_context(|| {
            format!(
                "path {name_or_file:?}: neither a spec file nor {}/{name_or_file}.toml exists",
                PATHS_DIR
            )
        })?;
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("cannot read {}", file.display()))?;
        let base = file.parent().map(Path::to_owned).unwrap_or_default();
        let spec = PathSpec::from_toml(&text, &mut |name| {
            std::fs::read_to_string(base.join(name)).map_err(|e| e.to_string())
        })
        .with_context(|| format!("path spec {}", file.display()))?;
        if spec.right.command.is_some() {
            bail!(
                "path spec {}: has a [right] command; the benchmark starts the server there itself",
                file.display()
            );
        }
        Ok(LoadedPath {
            name,
            file,
            text,
            spec,
        })
    }

    /// This path with a lab variant's settings laid over it: `top` over
    /// its top-level keys, `left`/`right` over its hosts' tables; checked
    /// again.
    pub fn with_variant(
        &self,
        variant: &str,
        top: &std::collections::BTreeMap<String, toml::Value>,
        left: &std::collections::BTreeMap<String, toml::Value>,
        right: &std::collections::BTreeMap<String, toml::Value>,
    ) -> anyhow::Result<LoadedPath> {
        if top.is_empty() && left.is_empty() && right.is_empty() {
            return Ok(self.clone());
        }
        let mut table: toml::Table = self.text.parse()?;
        for (k, v) in top {
            if matches!(k.as_str(), "left" | "right") {
                bail!(
                    "variant {variant:?}: path key {k:?}: host settings go in the variant's own {k} table"
                );
            }
            table.insert(k.clone(), v.clone());
        }
        for (host, keys) in [("left", left), ("right", right)] {
            let entry = table
                .entry(host)
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
            let toml::Value::Table(t) = entry else {
                bail!("path spec {}: {host} is not a table", self.file.display());
            };
            for (k, v) in keys {
                t.insert(k.clone(), v.clone());
            }
        }
        let text = toml::to_string(&table)?;
        let base = self.file.parent().map(Path::to_owned).unwrap_or_default();
        let spec = PathSpec::from_toml(&text, &mut |name| {
            std::fs::read_to_string(base.join(name)).map_err(|e| e.to_string())
        })
        .with_context(|| {
            format!(
                "path spec {} with the settings of variant {variant:?}",
                self.file.display()
            )
        })?;
        Ok(LoadedPath {
            name: self.name.clone(),
            file: self.file.clone(),
            text,
            spec,
        })
    }

    /// What the targets need to know of it.
    pub fn facts(&self) -> PathFacts {
        PathFacts {
            name: self.name.clone(),
            bdp_bytes: self.spec.bdp_from(Side::Right).0 as f64,
            ceiling_bps: budget::goodput_ceiling_bps(&self.spec),
        }
    }

    /// The spec of one run: this one with `[right] command = server`,
    /// trace files made absolute (the copy lives elsewhere) and, unless
    /// the spec sets one, the random loss's `seed`.
    pub fn for_run(&self, server: &[String], seed: Option<u64>) -> anyhow::Result<String> {
        let base = self.file.parent().unwrap_or(Path::new("/"));
        spec_with_server(&self.text, base, server, seed)
            .with_context(|| format!("path spec {}", self.file.display()))
    }
}

/// `name_or_file` as an existing file, else `DIR/NAME.toml`: the file,
/// canonical, and its name (the file stem); `None` if neither exists.
pub fn find(name_or_file: &str, dir: &Path) -> Option<(PathBuf, String)> {
    let given = Path::new(name_or_file);
    let file = if given.is_file() {
        given.to_owned()
    } else {
        dir.join(format!("{name_or_file}.toml"))
    };
    let file = file.canonicalize().ok()?;
    let name = file.file_stem().map_or_else(
        || name_or_file.to_owned(),
        |s| s.to_string_lossy().into_owned(),
    );
    Some((file, name))
}

/// `text` with `[right] command` set to `server`, every relative `trace`
/// (top level, `[uplink]`, `[downlink]`) resolved against `base`, and
/// `seed` set unless `text` sets one.
pub fn spec_with_server(
    text: &str,
    base: &Path,
    server: &[String],
    seed: Option<u64>,
) -> anyhow::Result<String> {
    let mut table: toml::Table = text.parse()?;
    if let Some(seed) = seed
        && !table.contains_key("seed")
    {
        table.insert(
            "seed".to_owned(),
            toml::Value::Integer(i64::try_from(seed)?),
        );
    }
    let absolute = |t: &mut toml::Table| {
        if let Some(toml::Value::String(trace)) = t.get_mut("trace")
            && Path::new(trace.as_str()).is_relative()
        {
            *trace = base.join(&*trace).to_string_lossy().into_owned();
        }
    };
    absolute(&mut table);
    for direction in ["uplink", "downlink"] {
        if let Some(toml::Value::Table(t)) = table.get_mut(direction) {
            absolute(t);
        }
    }
    let right = table
        .entry("right")
        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    let toml::Value::Table(right) = right else {
        bail!("right is not a table");
    };
    if right.contains_key("command") {
        bail!("[right] already has a command");
    }
    right.insert(
        "command".to_owned(),
        toml::Value::Array(
            server
                .iter()
                .map(|a| toml::Value::String(a.clone()))
                .collect(),
        ),
    );
    Ok(toml::to_string(&table)?)
}
