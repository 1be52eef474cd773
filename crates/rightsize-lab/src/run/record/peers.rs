//! The numbers of a run whose one end is not rightsize
//! ([`Peer`](crate::run::peer::Peer)): each comes from the end that can
//! say it.
//!
//! - From vsftpd, `rightsize get` reports the goodput and its receive
//!   buffer. vsftpd reports nothing: its send buffer is unknown, and the
//!   retransmissions are the path's (both hosts' `RetransSegs` over the run,
//!   from `path run`'s fidelity counters) times [`SEGMENT_BYTES`].
//! - To curl, the goodput is curl's own (`-w '%{json}'`: the bytes over
//!   the time from just before `RETR` to the end); to globus-url-copy, the
//!   bytes over the time of the transfer less that of a one-byte one (see
//!   [`GLOBUS_TIMED`](crate::run::peer::GLOBUS_TIMED)). `rightsize serve`'s
//!   telemetry gives its send buffer, its tuner and its retransmissions.
//!   The receive buffer is curl's or globus's, unknown.

use serde_json::Value;

use super::{
    Measured, Measurement, client_tuner, final_line, receiver_numbers, sender_retransmissions,
};
use super::{pointer, tuner_name};
use crate::run::peer::Peer;

/// The bytes of one retransmitted segment when only the path's segment
/// count is known: the payload of a 1,500-byte packet with TCP timestamps.
pub const SEGMENT_BYTES: u64 = 1448;

/// `retrans_from` of a run whose retransmissions are the path's counters.
pub const RETRANS_FROM_PATH: &str = "path";

/// Takes the numbers of a run with `peer` out of the client's standard
/// output (`client`, JSON), the server's telemetry (when the server is
/// rightsize) and `path run`'s results (`results`); checks that each
/// rightsize end ran the tuner asked of it.
pub fn measure(
    peer: Peer,
    client: &Value,
    server_telemetry: Option<&str>,
    results: &Value,
    server_tune: &str,
    client_tune: &str,
) -> Measurement {
    let mut m = Measured::default();
    let mut problems = Vec::new();
    let mut version = None;
    if peer.client_is_rightsize() {
        receiver_numbers(client, &mut m, &mut problems);
        client_tuner(client, client_tune, &mut m, &mut problems);
        version = client["rightsize_version"].as_str().map(str::to_owned);
    }
    if peer.server_is_rightsize() {
        let sender = sender_numbers(server_telemetry, server_tune, &mut problems);
        m.peak_sndbuf_bytes = sender.peak_sndbuf_bytes;
        version = version.or(sender.version);
        sender_retransmissions(server_telemetry, &mut m, &mut problems);
        match peer {
            Peer::Curl => curl_numbers(client, &mut m, &mut problems),
            Peer::Globus => globus_numbers(client, sender.bytes, &mut m, &mut problems),
            Peer::Rightsize | Peer::Vsftpd => {}
        }
    } else {
        let segments =
            pointer(results, "fidelity.measured.retransmitted_segments").and_then(Value::as_u64);
        match segments {
            Some(segs) => {
                m.retrans_segs = Some(segs);
                m.bytes_retrans = Some(segs * SEGMENT_BYTES);
                m.retrans_from = Some(RETRANS_FROM_PATH.to_owned());
            }
            None => problems.push("no retransmitted_segments in the path's counters".to_owned()),
        }
    }
    Measurement {
        rightsize_version: version,
        measured: m,
        problems,
    }
}

/// What `rightsize serve`'s telemetry of one data connection says of it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Sender {
    /// rightsize's version, from the header.
    pub version: Option<String>,
    /// The largest `SO_SNDBUF` in its samples and its tuner's read-backs.
    pub peak_sndbuf_bytes: Option<u64>,
    /// Bytes sent, from the final line.
    pub bytes: Option<u64>,
}

/// Reads the server's telemetry; a tuner other than `server_tune` in its
/// header, or no telemetry, is a problem.
pub fn sender_numbers(
    telemetry: Option<&str>,
    server_tune: &str,
    problems: &mut Vec<String>,
) -> Sender {
    let Some(text) = telemetry else {
        // sender_retransmissions says it.
        return Sender::default();
    };
    let lines: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .collect();
    let header = lines.iter().find(|v| v["kind"] == "header");
    let tune = header.and_then(|h| h["settings"]["tune"].as_str());
    match tune {
        Some(t) if t == server_tune || t == tuner_name(server_tune) => {}
        other => problems.push(format!(
            "the server ran tuner {other:?}, not {server_tune:?}"
        )),
    }
    let read_backs = lines.iter().flat_map(|v| match v["kind"].as_str() {
        Some("sample" | "final") => vec![v["sndbuf_bytes"].as_u64()],
        Some("decision") => v["actions"]
            .as_array()
            .map(|actions| {
                actions
                    .iter()
                    .filter(|a| a["action"] == "set_sndbuf")
                    .map(|a| a["applied_bytes"].as_u64())
                    .collect()
            })
            .unwrap_or_default(),
        _ => Vec::new(),
    });
    let peak = read_backs.flatten().max();
    if peak.is_none() {
        problems.push("no sndbuf_bytes in the server's telemetry".to_owned());
    }
    Sender {
        version: header.and_then(|h| h["version"].as_str().map(str::to_owned)),
        peak_sndbuf_bytes: peak,
        bytes: final_line(text).and_then(|last| last["bytes"].as_u64()),
    }
}

/// curl's `-w '%{json}'`: the goodput over the time from just before
/// `RETR` (`time_pretransfer`) to the end (`time_total`).
fn curl_numbers(client: &Value, m: &mut Measured, problems: &mut Vec<String>) {
    let number = |key: &str, problems: &mut Vec<String>| {
        let got = client[key].as_f64();
        if got.is_none() {
            problems.push(format!("no {key} in curl's -w '%{{json}}'"));
        }
        got
    };
    let bytes = number("size_download", problems);
    let pre = number("time_pretransfer", problems);
    let total = number("time_total", problems);
    let (Some(bytes), Some(pre), Some(total)) = (bytes, pre, total) else {
        return;
    };
    m.bytes = Some(bytes as u64);
    rate(bytes, total - pre, m, problems);
}

/// The timing script's `{"probe_ns","transfer_ns"}` and the bytes the
/// server sent.
fn globus_numbers(
    client: &Value,
    bytes: Option<u64>,
    m: &mut Measured,
    problems: &mut Vec<String>,
) {
    let probe = client["probe_ns"].as_f64();
    let transfer = client["transfer_ns"].as_f64();
    let (Some(probe), Some(transfer)) = (probe, transfer) else {
        problems.push("no probe_ns and transfer_ns from globus-url-copy's timing".to_owned());
        return;
    };
    let Some(bytes) = bytes else {
        problems.push("no bytes in the server's final telemetry line".to_owned());
        return;
    };
    m.bytes = Some(bytes);
    rate(bytes as f64, (transfer - probe) / 1e9, m, problems);
}

fn rate(bytes: f64, seconds: f64, m: &mut Measured, problems: &mut Vec<String>) {
    if seconds > 0.0 {
        m.transfer_seconds = Some(seconds);
        m.goodput_bps = Some(bytes * 8.0 / seconds);
    } else {
        problems.push(format!("a transfer time of {seconds} s"));
    }
}
