//! One run as one JSON line of `runs.jsonl`, and the numbers it takes
//! from what the run left behind: the client's `--json` report, the
//! server's telemetry and `path run --results`. When one end is not
//! rightsize, [`peers`] says where each number comes from. No I/O: the
//! caller reads the files and hands over their text or values.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The `kind` of a run line.
pub const RUN_KIND: &str = "run";

/// One run: what was asked, where it ran, what it measured. Every number
/// is `None` when the run did not produce it (an error, a missing field).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Always [`RUN_KIND`].
    pub kind: String,
    /// This invocation of the benchmark (`<unix seconds>-<pid>`): a
    /// runs.jsonl may hold several.
    pub invocation: String,
    /// The benchmark's command line.
    pub argv: Vec<String>,
    /// rightsize-bench's version.
    pub bench_version: String,
    /// `rightsize_version` from the client's report.
    pub rightsize_version: Option<String>,
    /// The kernel release.
    pub kernel: String,
    /// When the run started, unix seconds.
    pub started_unix_s: u64,
    /// The path's name (file stem of its spec).
    pub path: String,
    /// The spec file the run's spec was made from.
    pub spec_file: String,
    /// The tuner, in `--tune`'s canonical text.
    pub tuner: String,
    /// The programs at the two ends (`rightsize-bench peers`); absent for
    /// `rightsize get` from `rightsize serve`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<String>,
    /// Repetition, from 1.
    pub rep: usize,
    /// Bytes asked of the server.
    pub size_bytes: u64,
    /// The size asked on the command line, when this run was shortened.
    pub shortened_from_bytes: Option<u64>,
    /// The run's directory (spec, logs, telemetry).
    pub run_dir: String,
    /// Wall time of `rightsize path run`, setup and teardown included.
    pub wall_seconds: f64,
    /// `rightsize path run`'s exit code (3: a fidelity check failed).
    pub path_exit_code: Option<i32>,
    /// Every fidelity check passed and nothing failed: counts in medians.
    pub valid: bool,
    /// Names of the fidelity checks that failed.
    pub failed_checks: Vec<String>,
    /// What went wrong, when the run produced no measurement.
    pub error: Option<String>,
    /// What the run measured; its keys sit inline in the line, between
    /// `error` and `fidelity`.
    #[serde(flatten)]
    pub measured: Measured,
    /// `path run`'s fidelity verdict as written to `--results`.
    pub fidelity: Option<Value>,
    /// The lab scenario the run belongs to (`rightsize lab`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario: Option<String>,
    /// Its host-setting variant (`rightsize lab`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    /// The path's goodput ceiling (rate x 1448/1500), bits/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ceiling_bps: Option<f64>,
    /// The path's bandwidth-delay product in the data's direction, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bdp_bytes: Option<f64>,
}

/// Parses one line of runs.jsonl; `Ok(None)` for a line of another kind.
pub fn parse_line(line: &str) -> anyhow::Result<Option<RunRecord>> {
    let value: Value = serde_json::from_str(line)?;
    if value["kind"] != RUN_KIND {
        return Ok(None);
    }
    Ok(Some(serde_json::from_value(value)?))
}

/// The runs of one invocation in a runs.jsonl text, in order; an unreadable
/// line is an error naming its number.
pub fn runs_of(text: &str, invocation: &str) -> anyhow::Result<Vec<RunRecord>> {
    let mut runs = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let run =
            parse_line(line).map_err(|e| anyhow::anyhow!("runs.jsonl line {}: {e}", i + 1))?;
        if let Some(run) = run.filter(|r| r.invocation == invocation) {
            runs.push(run);
        }
    }
    Ok(runs)
}

/// The numbers of one run, from the client's report and the server's last
/// telemetry line; `None` when the run did not produce one.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Measured {
    /// Client: bytes over the data connection's lifetime, bits/s.
    pub goodput_bps: Option<f64>,
    /// Client: seconds from the data connection being ready to its end.
    pub transfer_seconds: Option<f64>,
    /// Client: bytes received.
    pub bytes: Option<u64>,
    /// Receiver (client): peak SO_RCVBUF as read back.
    pub peak_rcvbuf_bytes: Option<u64>,
    /// Receiver (client): mean SO_RCVBUF as read back.
    pub mean_rcvbuf_bytes: Option<u64>,
    /// Sender (server): peak SO_SNDBUF as read back, from its `226`.
    pub peak_sndbuf_bytes: Option<u64>,
    /// Sender (server): bytes retransmitted (`tcpi_bytes_retrans`).
    pub bytes_retrans: Option<u64>,
    /// Sender (server): segments retransmitted (`tcpi_total_retrans`).
    pub retrans_segs: Option<u64>,
    /// Where the retransmissions come from when the sender is not
    /// rightsize: [`peers::RETRANS_FROM_PATH`]; absent when they are the
    /// sender's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retrans_from: Option<String>,
    /// The client's tuner at the end: name, state, decisions.
    pub client_tuner: Option<Value>,
}

/// What [`measure`] takes out of a run's files.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Measurement {
    /// `rightsize_version` from the client's report.
    pub rightsize_version: Option<String>,
    /// The numbers.
    pub measured: Measured,
    /// Every field that was expected and missing, and every tuner that was
    /// not the one asked for: a run with any is an error.
    pub problems: Vec<String>,
}

/// Takes the numbers out of `rightsize get --json` (`client`) and the
/// server's telemetry file (`server_telemetry`, JSON lines, its last
/// `"final"` line counts), checking that the server ran `server_tune` and
/// the client `client_tune`.
pub fn measure(
    client: &Value,
    server_telemetry: Option<&str>,
    server_tune: &str,
    client_tune: &str,
) -> Measurement {
    let mut m = Measured::default();
    let mut problems = Vec::new();
    receiver_numbers(client, &mut m, &mut problems);
    m.peak_sndbuf_bytes =
        f64_at(client, "server_buffers.peak_sndbuf_bytes", &mut problems).map(|b| b as u64);
    client_tuner(client, client_tune, &mut m, &mut problems);
    let wanted = tuner_name(server_tune);
    match ran(pointer(client, "server_buffers.tune")) {
        Some(name) if name == wanted || name == server_tune => {}
        other => problems.push(format!(
            "the server ran tuner {other:?}, not {server_tune:?}"
        )),
    }
    sender_retransmissions(server_telemetry, &mut m, &mut problems);
    Measurement {
        rightsize_version: client["rightsize_version"].as_str().map(str::to_owned),
        measured: m,
        problems,
    }
}

/// A number of `rightsize get --json` (`client`); a missing one is a
/// problem.
fn f64_at(client: &Value, path: &str, problems: &mut Vec<String>) -> Option<f64> {
    let got = pointer(client, path).and_then(Value::as_f64);
    if got.is_none() {
        problems.push(format!("no {path} in the client's report"));
    }
    got
}

/// The receiver's numbers in `rightsize get --json`: goodput, time, bytes,
/// its receive buffer.
fn receiver_numbers(client: &Value, m: &mut Measured, problems: &mut Vec<String>) {
    m.goodput_bps = f64_at(client, "goodput_bps", problems);
    m.transfer_seconds = f64_at(client, "seconds", problems);
    m.bytes = f64_at(client, "bytes", problems).map(|b| b as u64);
    m.peak_rcvbuf_bytes =
        f64_at(client, "tuning.buffers.peak_rcvbuf_bytes", problems).map(|b| b as u64);
    m.mean_rcvbuf_bytes =
        f64_at(client, "tuning.buffers.mean_rcvbuf_bytes", problems).map(|b| b as u64);
}

/// The client's tuner in `rightsize get --json`, checked against the one
/// asked for.
fn client_tuner(client: &Value, client_tune: &str, m: &mut Measured, problems: &mut Vec<String>) {
    m.client_tuner = pointer(client, "tuning.tuner").cloned();
    let wanted = tuner_name(client_tune);
    match ran(pointer(client, "tuning.tuner.name")) {
        Some(name) if name == wanted => {}
        other => problems.push(format!("the client ran tuner {other:?}, not {wanted:?}")),
    }
}

/// The sender's retransmissions, from the last line of its telemetry.
fn sender_retransmissions(
    server_telemetry: Option<&str>,
    m: &mut Measured,
    problems: &mut Vec<String>,
) {
    match server_telemetry.and_then(final_line) {
        Some(last) => {
            m.bytes_retrans = last["bytes_retrans"].as_u64();
            m.retrans_segs = last["total_retrans_segs"].as_u64();
            if m.bytes_retrans.is_none() || m.retrans_segs.is_none() {
                problems.push(
                    "no bytes_retrans or total_retrans_segs in the server's final telemetry line"
                        .to_owned(),
                );
            }
        }
        None => problems.push("no final line in the server's telemetry".to_owned()),
    }
}

fn ran(v: Option<&Value>) -> Option<String> {
    v.and_then(Value::as_str).map(str::to_owned)
}

/// The name part of a tuner's text: `static` of `static:16MiB`.
fn tuner_name(tuner: &str) -> &str {
    tuner.split(':').next().unwrap_or(tuner)
}

/// `a.b.c` in a JSON value.
fn pointer<'a>(value: &'a Value, dotted: &str) -> Option<&'a Value> {
    value.pointer(&format!("/{}", dotted.replace('.', "/")))
}

/// The last `"kind":"final"` line of a telemetry file.
pub fn final_line(text: &str) -> Option<Value> {
    text.lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["kind"] == "final")
}

/// Of the texts of several telemetry files, the one whose final line
/// counts the most bytes (the transfer, not a probe before it); the last
/// among equals, so one file is always its own answer.
pub fn largest_transfer(texts: impl IntoIterator<Item = String>) -> Option<String> {
    texts.into_iter().max_by_key(|text| {
        final_line(text)
            .and_then(|last| last["bytes"].as_u64())
            .unwrap_or(0)
    })
}

/// What `path run --results` says: the fidelity verdict and the names of
/// the checks that failed.
pub fn fidelity_of(results: &Value) -> (Option<bool>, Vec<String>) {
    let valid = results["fidelity"]["valid"].as_bool();
    let failed = results["fidelity"]["checks"]
        .as_array()
        .map(|checks| {
            checks
                .iter()
                .filter(|c| c["ok"] == Value::Bool(false))
                .filter_map(|c| c["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    (valid, failed)
}

pub mod peers;

#[cfg(test)]
mod tests;
