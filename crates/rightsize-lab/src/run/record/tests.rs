//! A run's line reads and writes as it always has: the measured numbers sit
//! among the record's own keys, in the same order.

use serde_json::json;

use super::*;

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
