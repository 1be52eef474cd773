//! The names of a results directory's files and the schema of its
//! `lab.json` (the layout itself is drawn in the crate's doc): written by
//! `lab run`, read by `lab report`. No I/O.

use serde::{Deserialize, Serialize};

/// `DIR/lab.json`: whose directory it is.
pub const LAB_JSON: &str = "lab.json";
/// `DIR/runs.jsonl`: one line per finished run.
pub const RUNS_JSONL: &str = "runs.jsonl";
/// `DIR/scenarios/`: a copy of each scenario that ran, as `NAME.toml`.
pub const SCENARIOS_DIR: &str = "scenarios";
/// `DIR/report/`: what `lab report` writes.
pub const REPORT_DIR: &str = "report";
/// `DIR/report/screenshot.png`: the page as headless Chromium showed it
/// (`lab report --screenshot`).
pub const SCREENSHOT_PNG: &str = "screenshot.png";
/// A run directory's receiver telemetry (`get --telemetry`).
pub const CLIENT_TELEMETRY: &str = "client.jsonl";
/// How a run directory's sender telemetry files end (`serve
/// --telemetry-dir` writes one per transfer, `<...>-retr.jsonl`).
pub const SERVER_TELEMETRY_SUFFIX: &str = "-retr.jsonl";
/// The `kind` of `lab.json`.
pub const LAB_KIND: &str = "lab";

/// `DIR/lab.json`, one JSON object:
///
/// ```json
/// {"kind":"lab","version":"0.1.0","kernel":"6.18.44","created_unix_s":1795326063,
///  "quick":false,"argv":["rightsize","lab","run","--out","DIR","lfn"]}
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabInfo {
    /// Always [`LAB_KIND`].
    pub kind: String,
    /// The version of rightsize that made the directory
    /// (`CARGO_PKG_VERSION`); `lab report` reads only its own version's.
    pub version: String,
    /// The kernel release (`uname -r`) the runs ran on.
    pub kernel: String,
    /// When the directory was made, unix seconds.
    pub created_unix_s: u64,
    /// The runs used the scenarios' `[quick]` sizes and repetitions
    /// (`--quick`); absent means false.
    #[serde(default)]
    pub quick: bool,
    /// The command line that made it.
    #[serde(default)]
    pub argv: Vec<String>,
}

impl LabInfo {
    /// The `lab.json` of a directory made now by this version.
    pub fn new(kernel: String, created_unix_s: u64, quick: bool, argv: Vec<String>) -> LabInfo {
        LabInfo {
            kind: LAB_KIND.to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            kernel,
            created_unix_s,
            quick,
            argv,
        }
    }
}
