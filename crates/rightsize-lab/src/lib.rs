//! rightsize's lab: transfers over emulated paths, run one at a
//! time from scenario files, and the plots and reports made from the data
//! files they leave (`rightsize lab`, `rightsize demo`). The benchmarks of
//! `rightsize-bench` run through the same machinery.
//!
//! - [`scenario`]: a scenario file, parsed and checked.
//! - [`layout`]: the names of a results directory's files and `lab.json`.
//! - [`report`]: `lab report`, the tables and plots of a results directory.
//! - [`run`]: one run, a fresh `rightsize path run` with `rightsize serve`
//!   on the right host and `rightsize get` on the left (the receiver), or
//!   one of them against vsftpd, curl or globus-url-copy
//!   (`rightsize-bench peers`), and the record of what it measured.
//!
//! A results directory `DIR` (what `lab run` writes and `lab report` reads):
//!
//! ```text
//! DIR/lab.json                       {"kind":"lab","version":"0.1.0",...}: whose directory it is
//! DIR/scenarios/NAME.toml            a copy of each scenario that ran, as run
//! DIR/runs.jsonl                     one line per finished run (run::record::RunRecord,
//!                                    with `scenario`, `variant`, `ceiling_bps`)
//! DIR/NAME/VARIANT/TUNER-SIZE-repN/  a run: spec.toml, path.json (as path run --results),
//!                                    client.json (get --json), client.jsonl (the
//!                                    receiver's telemetry), *-retr.jsonl (the sender's
//!                                    telemetry), right.log (the server's output), path.log
//! DIR/report/                        index.html, summary.md, NAME-PLOT.svg and .png;
//!                                    screenshot.png (`lab report --screenshot`)
//! ```
//!
//! A run's line is appended only once the run is over, so a directory
//! that was interrupted holds whole runs only; a re-run skips the runs
//! whose line is there.

pub mod lab;
pub mod layout;
pub mod report;
pub mod run;
pub mod scenario;

#[cfg(test)]
mod tests;
