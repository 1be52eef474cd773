//! A run's line reads and writes as it always has: the measured numbers sit
//! among the record's own keys, in the same order. Against other peers,
//! each number comes from the end that can say it.

use serde_json::json;

use super::*;
use crate::run::peer::Peer;

/// A line as the record wrote it before [`Measured`] held the numbers.
const LINE: &str = r#"{"kind":"run","invocation":"1795326063-1","argv":["rightsize","lab","run"],"bench_version":"0.1.0","rightsize_version":"0.1.0","kernel":"6.18.44","started_unix_s":1795326063,"path":"lfn","spec_file":"bench/paths/lfn.toml","tuner":"auto","rep":1,"size_bytes":1048576,"shortened_from_bytes":1073741824,"run_dir":"x/path/auto-1048576-rep1","wall_seconds":10.0,"path_exit_code":0,"valid":true,"failed_checks":[],"error":null,"goodput_bps":185500000.0,"transfer_seconds":8.0,"bytes":1048576,"peak_rcvbuf_bytes":4000000,"mean_rcvbuf_bytes":3000000,"peak_sndbuf_bytes":8000000,"bytes_retrans":1000,"retrans_segs":1,"client_tuner":{"name":"auto","state":"cruise"},"fidelity":{"valid":true},"scenario":"x","ceiling_bps":193000000.0}"#;

#[test]
fn a_line_reads_and_writes_back_byte_for_byte() {
    let run = parse_line(LINE).expect("parses").expect("a run");
    assert_eq!(run.measured.goodput_bps, Some(185.5e6));
    assert_eq!(run.measured.retrans_segs, Some(1));
    assert_eq!(
        run.measured.client_tuner,
        Some(json!({"name": "auto", "state": "cruise"}))
    );
    assert_eq!(run.rightsize_version.as_deref(), Some("0.1.0"));
    assert_eq!(serde_json::to_string(&run).expect("writes"), LINE);
}

#[test]
fn missing_and_null_numbers_are_none() {
    let mut value: Value = serde_json::from_str(LINE).expect("json");
    value["goodput_bps"] = Value::Null;
    if let Some(map) = value.as_object_mut() {
        map.remove("client_tuner");
        map.remove("ceiling_bps");
    }
    let run: RunRecord = serde_json::from_value(value).expect("a run");
    assert_eq!(run.measured.goodput_bps, None);
    assert_eq!(run.measured.client_tuner, None);
    assert_eq!(run.measured.bytes, Some(1_048_576));
    assert_eq!(run.ceiling_bps, None);
}

/// `rightsize serve`'s telemetry of one transfer: a header, a sample, a
/// decision that set the send buffer, the final line.
const SERVER: &str = r#"{"kind":"header","version":"0.1.0","role":"server","direction":"send","settings":{"tune":"auto"}}
{"kind":"sample","t_s":0.1,"bytes":1000,"sndbuf_bytes":87040}
{"kind":"decision","t_s":0.2,"tuner":"auto","actions":[{"action":"set_sndbuf","requested_bytes":3000000,"applied_bytes":6000000},{"action":"set_window_clamp","applied_bytes":9000000}]}
{"kind":"final","t_s":9.0,"bytes":67108864,"sndbuf_bytes":5000000,"bytes_retrans":2896,"total_retrans_segs":2}
"#;

fn results(segments: Option<u64>) -> Value {
    json!({"exit_code": 0, "fidelity": {"valid": true, "checks": [],
        "measured": {"retransmitted_segments": segments}}})
}

#[test]
fn from_vsftpd_the_receiver_reports_and_the_path_counts_the_losses() {
    let client = json!({
        "rightsize_version": "0.1.0",
        "goodput_bps": 1.8e8, "seconds": 3.0, "bytes": 67108864u64,
        "server_buffers": null,
        "tuning": {"buffers": {"peak_rcvbuf_bytes": 4000000, "mean_rcvbuf_bytes": 3000000},
                   "tuner": {"name": "auto", "state": "cruise"}}
    });
    let m = peers::measure(
        Peer::Vsftpd,
        &client,
        None,
        &results(Some(3)),
        "auto",
        "auto",
    );
    assert_eq!(m.problems, Vec::<String>::new());
    assert_eq!(m.measured.goodput_bps, Some(1.8e8));
    assert_eq!(m.measured.peak_rcvbuf_bytes, Some(4_000_000));
    assert_eq!(m.measured.peak_sndbuf_bytes, None);
    assert_eq!(m.measured.bytes_retrans, Some(3 * 1448));
    assert_eq!(m.measured.retrans_segs, Some(3));
    assert_eq!(m.measured.retrans_from.as_deref(), Some("path"));
    assert_eq!(m.rightsize_version.as_deref(), Some("0.1.0"));
    // The client's tuner is still checked; the counters must be there.
    let m = peers::measure(
        Peer::Vsftpd,
        &client,
        None,
        &results(None),
        "kernel",
        "kernel",
    );
    let all = m.problems.join("; ");
    assert!(all.contains("client ran tuner"), "{all}");
    assert!(all.contains("retransmitted_segments"), "{all}");
    assert!(!all.contains("server"), "{all}");
}

#[test]
fn to_curl_the_goodput_is_curls_and_the_rest_the_servers() {
    let client = json!({"size_download": 67108864u64, "time_pretransfer": 0.5,
        "time_total": 4.5, "exitcode": 0});
    let m = peers::measure(
        Peer::Curl,
        &client,
        Some(SERVER),
        &results(Some(9)),
        "auto",
        "auto",
    );
    assert_eq!(m.problems, Vec::<String>::new());
    assert_eq!(m.measured.transfer_seconds, Some(4.0));
    assert_eq!(m.measured.goodput_bps, Some(67108864.0 * 8.0 / 4.0));
    assert_eq!(m.measured.bytes, Some(67108864));
    // The decision's 6 MB is the peak, above the final 5 MB.
    assert_eq!(m.measured.peak_sndbuf_bytes, Some(6_000_000));
    assert_eq!(m.measured.peak_rcvbuf_bytes, None);
    assert_eq!(
        (m.measured.bytes_retrans, m.measured.retrans_segs),
        (Some(2896), Some(2))
    );
    assert_eq!(m.measured.retrans_from, None);
    assert_eq!(m.rightsize_version.as_deref(), Some("0.1.0"));
    let m = peers::measure(
        Peer::Curl,
        &json!({}),
        Some(SERVER),
        &results(None),
        "kernel",
        "kernel",
    );
    let all = m.problems.join("; ");
    assert!(all.contains("server ran tuner Some(\"auto\")"), "{all}");
    assert!(all.contains("time_total"), "{all}");
    let m = peers::measure(Peer::Curl, &client, None, &results(None), "auto", "auto");
    assert!(
        m.problems.join("; ").contains("server's telemetry"),
        "{:?}",
        m.problems
    );
}

#[test]
fn to_globus_the_probe_time_is_taken_off() {
    let client = json!({"probe_ns": 1_200_000_000u64, "transfer_ns": 5_200_000_000u64});
    let m = peers::measure(
        Peer::Globus,
        &client,
        Some(SERVER),
        &results(Some(0)),
        "auto",
        "auto",
    );
    assert_eq!(m.problems, Vec::<String>::new());
    assert_eq!(m.measured.transfer_seconds, Some(4.0));
    assert_eq!(m.measured.goodput_bps, Some(67108864.0 * 8.0 / 4.0));
    assert_eq!(m.measured.bytes, Some(67108864));
    let slower_probe = json!({"probe_ns": 6_000_000_000u64, "transfer_ns": 5_200_000_000u64});
    let m = peers::measure(
        Peer::Globus,
        &slower_probe,
        Some(SERVER),
        &results(Some(0)),
        "auto",
        "auto",
    );
    assert_eq!(m.measured.goodput_bps, None);
    assert!(
        m.problems.join("; ").contains("transfer time"),
        "{:?}",
        m.problems
    );
}

#[test]
fn a_static_tuner_is_known_by_its_name_or_its_text() {
    let text = SERVER.replace("\"tune\":\"auto\"", "\"tune\":\"static:16MiB\"");
    let mut problems = Vec::new();
    let s = peers::sender_numbers(Some(&text), "static:16MiB", &mut problems);
    assert_eq!(problems, Vec::<String>::new());
    assert_eq!(s.bytes, Some(67108864));
    let text = SERVER.replace("\"tune\":\"auto\"", "\"tune\":\"static\"");
    peers::sender_numbers(Some(&text), "static:16MiB", &mut problems);
    assert_eq!(problems, Vec::<String>::new());
}

#[test]
fn a_peer_and_a_source_of_losses_only_appear_when_set() {
    let mut run = parse_line(LINE).expect("parses").expect("a run");
    run.peer = Some("vsftpd".into());
    run.measured.retrans_from = Some("path".into());
    let line = serde_json::to_string(&run).expect("writes");
    assert!(
        line.contains(r#""tuner":"auto","peer":"vsftpd","rep":1"#),
        "{line}"
    );
    assert!(
        line.contains(r#""retrans_segs":1,"retrans_from":"path","client_tuner""#),
        "{line}"
    );
    assert_eq!(parse_line(&line).expect("parses"), Some(run));
}

#[test]
fn the_transfer_is_the_telemetry_that_counts_the_most_bytes() {
    let probe = SERVER.replace("67108864", "1");
    let broken = "{\"kind\":\"header\"}\n".to_owned();
    let picked = largest_transfer([probe.clone(), SERVER.to_owned(), broken.clone()]);
    assert_eq!(picked.as_deref(), Some(SERVER));
    // One file is its own answer, whatever it holds; none is none.
    assert_eq!(largest_transfer([broken.clone()]), Some(broken));
    assert_eq!(largest_transfer(Vec::new()), None);
}
