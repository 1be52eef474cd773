//! `--telemetry FILE` (client) and `--telemetry-dir DIR` (server): both ends
//! of a data connection write a header line, samples and a final record.
#![allow(clippy::unwrap_used)]

mod serve_support;

use std::process::Command;

use serde_json::Value;
use serve_support::Serve;

fn lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn check(lines: &[Value], role: &str, direction: &str, bytes: u64) {
    assert_eq!(lines[0]["kind"], "header");
    assert_eq!(lines[0]["role"], role);
    assert_eq!(lines[0]["direction"], direction);
    assert!(lines[0]["argv"].as_array().unwrap().len() > 2);
    assert!(lines[0]["kernel"].as_str().unwrap().len() > 2);
    assert_eq!(lines[0]["interval_us"], 10_000);
    let last = lines.last().unwrap();
    assert_eq!(last["kind"], "final");
    assert_eq!(last["bytes"], bytes);
    assert!(last["rtt_us"].as_u64().is_some(), "{last}");
    assert!(last["rcvbuf_bytes"].as_u64().unwrap() > 0);
    assert!(last.get("total_retrans_segs").is_some());
    let times: Vec<f64> = lines[1..]
        .iter()
        .map(|l| l["t_s"].as_f64().unwrap())
        .collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    // Kernel fields that were not filled are left out, never null.
    assert!(
        lines[1..]
            .iter()
            .all(|l| l.as_object().unwrap().values().all(|v| !v.is_null()))
    );
}

#[test]
fn both_ends_record_the_data_connection() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let server_dir = dir.path().join("server");
    let serve = Serve::start(
        &root,
        &[
            "--telemetry-dir",
            server_dir.to_str().unwrap(),
            "--telemetry-interval",
            "10ms",
        ],
    );
    let client_file = dir.path().join("client.jsonl");
    let bytes: u64 = 256 << 20;
    let out = Command::new(env!("CARGO_BIN_EXE_rightsize"))
        .args([
            "get",
            &serve.url(&format!("/.rightsize/zero/{bytes}")),
            "-o",
            "/dev/null",
            "--sbuf",
            "2M",
        ])
        .args([
            "--telemetry",
            client_file.to_str().unwrap(),
            "--telemetry-interval",
            "10ms",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let client = lines(&client_file);
    check(&client, "client", "receive", bytes);
    assert_eq!(client[0]["settings"]["sbuf_bytes"], "2097152");
    // The server's file appears when its transfer ends (just before the 226).
    let files: Vec<_> = std::fs::read_dir(&server_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(files[0].to_string_lossy().ends_with("-1-retr.jsonl"));
    let server = lines(&files[0]);
    check(&server, "server", "send", bytes);
    assert_eq!(server[0]["settings"]["sbuf_bytes"], "2097152");
    // SBUF asked for 2 MiB; Linux doubles what it is given.
    assert_eq!(server.last().unwrap()["sndbuf_bytes"], 4 << 20);
}
