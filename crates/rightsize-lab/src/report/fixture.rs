//! Run records and a synthetic results directory for the report's tests.

use std::fs;
use std::path::Path;

use crate::layout::{LAB_JSON, LabInfo, RUNS_JSONL};
use crate::run::record::{Measured, RUN_KIND, RunRecord};
use crate::scenario::PLOTS;

/// A valid run of `tuner` at `size_bytes` with `goodput_mbps`.
pub fn record(tuner: &str, size_bytes: u64, rep: usize, goodput_mbps: f64) -> RunRecord {
    RunRecord {
        kind: RUN_KIND.to_owned(),
        invocation: "1795326063-1".into(),
        argv: vec!["rightsize".into(), "lab".into(), "run".into()],
        bench_version: env!("CARGO_PKG_VERSION").into(),
        rightsize_version: Some(env!("CARGO_PKG_VERSION").into()),
        kernel: "6.18.44".into(),
        started_unix_s: 1_795_326_063,
        path: "lfn".into(),
        spec_file: "bench/paths/lfn.toml".into(),
        tuner: tuner.into(),
        peer: None,
        rep,
        size_bytes,
        shortened_from_bytes: None,
        run_dir: format!("x/path/{}-{size_bytes}-rep{rep}", tuner.replace(':', "-")),
        wall_seconds: 10.0,
        path_exit_code: Some(0),
        valid: true,
        failed_checks: Vec::new(),
        error: None,
        measured: Measured {
            goodput_bps: Some(goodput_mbps * 1e6),
            transfer_seconds: Some(8.0),
            bytes: Some(size_bytes),
            peak_rcvbuf_bytes: Some(4_000_000),
            mean_rcvbuf_bytes: Some(3_000_000),
            peak_sndbuf_bytes: Some(8_000_000),
            bytes_retrans: Some(1000),
            retrans_segs: Some(1),
            retrans_from: None,
            client_tuner: None,
        },
        fidelity: None,
        scenario: Some("x".into()),
        variant: None,
        ceiling_bps: Some(193.0e6),
        bdp_bytes: Some(2.5e6),
    }
}

/// A run whose fidelity check `check` failed.
pub fn invalid(
    tuner: &str,
    size_bytes: u64,
    rep: usize,
    goodput_mbps: f64,
    check: &str,
) -> RunRecord {
    RunRecord {
        valid: false,
        failed_checks: vec![check.to_owned()],
        path_exit_code: Some(3),
        ..record(tuner, size_bytes, rep, goodput_mbps)
    }
}

/// The scenario the tests use, with `plots`.
pub fn scenario_text(plots: &str) -> String {
    format!(
        r#"title = "Tuners on a long fat network"
about = "Compares <tuners> & sizes."
path = "lfn"
tuners = ["auto", "static:16MiB", "stock"]
sizes = ["1MiB", "64MiB"]
reps = 3
plots = [{plots}]

[[published]]
plot = "goodput-vs-size"
label = "drsFTP (paper): drs"
points = [[1048576, 20.0], [67108864, 150.0]]

[[claims]]
seed = "drsFTP paper"
text = "auto beats stock by 5x"
tuner = "auto"
over = "stock"
published = 5.0
holds_at_least = 2.0

[[claims]]
seed = "drsFTP paper"
text = "static beats auto"
tuner = "static:16MiB"
over = "auto"
published = 1.5
holds_at_least = 1.2
"#
    )
}

const MIB64: u64 = 64 << 20;

pub fn write(path: &Path, text: &str) {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).expect("mkdir");
    }
    fs::write(path, text).expect("write");
}

pub fn lab_json() -> String {
    serde_json::to_string(&LabInfo::new(
        "6.18.44-test".into(),
        1_795_326_063,
        false,
        vec!["rightsize".into(), "lab".into(), "run".into()],
    ))
    .expect("json")
}

/// Receiver telemetry ramping 50, 100, 180, 190 Mbit/s (a ceiling of 193
/// Mbit/s is 90% reached 0.2 s after the first sample), with decision
/// lines between.
fn client_jsonl() -> String {
    let mut t = String::from("{\"kind\":\"header\",\"version\":\"0.1.0\",\"role\":\"client\"}\n");
    for (i, mbps) in [50, 100, 180, 190].into_iter().enumerate() {
        let t_s = 0.1 * (i + 1) as f64;
        t.push_str(&format!(
            "{{\"kind\":\"decision\",\"t_s\":{t_s},\"event\":\"sample\",\"reason\":\"grow\"}}\n"
        ));
        t.push_str(&format!(
            "{{\"kind\":\"sample\",\"t_s\":{t_s},\"interval_goodput_bps\":{},\"rcvbuf_bytes\":{},\"rtt_us\":100200,\"rcv_wnd_bytes\":{}}}\n",
            mbps * 1_000_000,
            (i + 1) * 1_000_000,
            (i + 1) * 600_000
        ));
    }
    t.push_str("{\"kind\":\"final\",\"t_s\":0.5,\"bytes_retrans\":0}\n");
    t
}

fn server_jsonl() -> String {
    (1..=4)
        .map(|i| {
            format!(
                "{{\"kind\":\"sample\",\"t_s\":{},\"rtt_us\":{},\"snd_cwnd_bytes\":{},\"total_retrans_segs\":{}}}\n",
                0.1 * i as f64,
                100_000 + 1000 * i,
                500_000 * i,
                3 * (i / 2)
            )
        })
        .collect()
}

fn all_plots() -> String {
    PLOTS
        .iter()
        .map(|p| format!("\"{p}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A directory of scenario x: auto at 64 MiB 10, 12, 14 Mbit/s and an
/// invalid 900; stock 2 and a failed run; static:16MiB 50; auto at 1 MiB
/// 5. Stock's rep 1 has no telemetry.
pub fn synthetic_dir(dir: &Path) {
    write(&dir.join(LAB_JSON), &lab_json());
    write(&dir.join("scenarios/x.toml"), &scenario_text(&all_plots()));
    let mut failed = record("stock", MIB64, 2, 0.0);
    failed.valid = false;
    failed.measured.goodput_bps = None;
    failed.error = Some("the client exited 1: <no reply>".into());
    let mut orphan = record("auto", MIB64, 1, 1.0);
    orphan.scenario = None;
    let runs = [
        record("auto", MIB64, 1, 10.0),
        record("auto", MIB64, 2, 12.0),
        record("auto", MIB64, 3, 14.0),
        invalid("auto", MIB64, 4, 900.0, "idle_rtt"),
        record("stock", MIB64, 1, 2.0),
        failed,
        record("static:16MiB", MIB64, 1, 50.0),
        record("auto", 1 << 20, 1, 5.0),
        orphan,
    ];
    let mut lines = String::new();
    for r in &runs {
        lines.push_str(&serde_json::to_string(r).expect("json"));
        lines.push('\n');
        let with_telemetry = r.size_bytes == MIB64 && r.tuner != "stock" && r.rep <= 3;
        if with_telemetry && r.scenario.is_some() {
            let run_dir = dir.join(&r.run_dir);
            write(&run_dir.join("client.jsonl"), &client_jsonl());
            write(
                &run_dir.join("123-10.1.1.1-2-1-retr.jsonl"),
                &server_jsonl(),
            );
        }
    }
    write(&dir.join(RUNS_JSONL), &lines);
}
