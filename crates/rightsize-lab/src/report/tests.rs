//! `make_report` over synthetic results directories.

use std::fs;
use std::path::Path;

use super::fixture::{invalid, record, scenario_text};
use super::*;
use crate::layout::{LAB_JSON, LabInfo, RUNS_JSONL};
use crate::scenario::PLOTS;

const MIB64: u64 = 64 << 20;

fn write(path: &Path, text: &str) {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).expect("mkdir");
    }
    fs::write(path, text).expect("write");
}

fn lab_json() -> String {
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
            "{{\"kind\":\"sample\",\"t_s\":{t_s},\"interval_goodput_bps\":{},\"rcvbuf_bytes\":{},\"rtt_us\":100200}}\n",
            mbps * 1_000_000,
            (i + 1) * 1_000_000
        ));
    }
    t.push_str("{\"kind\":\"final\",\"t_s\":0.5,\"bytes_retrans\":0}\n");
    t
}

fn server_jsonl() -> String {
    (1..=4)
        .map(|i| {
            format!(
                "{{\"kind\":\"sample\",\"t_s\":{},\"rtt_us\":{}}}\n",
                0.1 * i as f64,
                100_000 + 1000 * i
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
fn synthetic_dir(dir: &Path) {
    write(&dir.join(LAB_JSON), &lab_json());
    write(&dir.join("scenarios/x.toml"), &scenario_text(&all_plots()));
    let mut failed = record("stock", MIB64, 2, 0.0);
    failed.valid = false;
    failed.goodput_bps = None;
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

#[test]
fn writes_every_file_with_the_right_numbers() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    synthetic_dir(dir);
    let files = make_report(dir).expect("report");
    assert_eq!(files.plots.len(), 2 * PLOTS.len());
    for path in files.all() {
        let len = fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        assert!(len > 0, "{} not written", path.display());
    }
    for p in PLOTS {
        let svg = fs::read_to_string(dir.join(format!("report/x-{p}.svg"))).expect("svg");
        assert!(svg.starts_with("<svg"), "{p}");
        let png = fs::read(dir.join(format!("report/x-{p}.png"))).expect("png");
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{p}");
    }
    let html = fs::read_to_string(&files.index_html).expect("html");
    assert_eq!(html.matches("<svg").count(), PLOTS.len());
    assert!(!html.contains("<script") && !html.contains("<link") && !html.contains("src=\"http"));
    // auto at 64 MiB: 3 valid of 4, mean 12, CI 4.303 * 2 / sqrt(3).
    assert!(html.contains("<td class=\"n\">3 of 4</td><td class=\"n\">12.00 ± 4.97</td>"));
    // 12 Mbit/s over 4 MB; 90% of 193 Mbit/s 0.2 s after the first sample.
    assert!(html.contains("<td class=\"n\">3.00 ± 1.24</td><td class=\"n\">0.20 s</td>"));
    // The invalid and the failed run are listed, with why.
    assert!(html.contains("failed checks: idle_rtt"));
    assert!(html.contains("error: the client exited 1: &lt;no reply&gt;"));
    assert!(html.contains("<td class=\"n\">1 of 2</td><td class=\"n\">2.00</td>"));
    // Text from the directory is escaped.
    assert!(html.contains("Compares &lt;tuners&gt; &amp; sizes."));
    // The claims: auto over stock 6, static over auto 50 / 12.
    assert!(html.contains("<td class=\"n\">6.00 (path, 64 MiB)</td>"));
    assert!(html.contains("<td class=\"n\">4.17 (path, 64 MiB)</td>"));
    assert_eq!(html.matches("<td class=\"holds\">holds</td>").count(), 2);
    // Missing telemetry is said, and which plots it is left out of.
    assert!(
        html.contains("time to 90%, rcvbuf-over-time, goodput-over-time")
            && html.contains("no telemetry"),
        "{html}"
    );
    assert!(html.contains("1 run(s) of scenario (none)"));
    assert!(html.contains("6.18.44-test") && html.contains("2026-11-22 05:41 UTC"));
    // Published points are in their plot's legend.
    let svg = fs::read_to_string(dir.join("report/x-goodput-vs-size.svg")).expect("svg");
    assert!(svg.contains("drsFTP (paper): drs"));
    let md = fs::read_to_string(&files.summary_md).expect("md");
    assert!(md.contains("| 3 of 4 | 12.00 ± 4.97 |"));
    assert!(md.contains("(x-goodput-vs-size.svg)"));
    assert!(md.contains("failed checks: idle\\_rtt"));
}

fn error_of(dir: &Path) -> String {
    format!("{:#}", make_report(dir).expect_err("bad input"))
}

#[test]
fn bad_directories_are_clear_errors() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let e = error_of(dir);
    assert!(
        e.contains("lab.json") && e.contains("results directory"),
        "{e}"
    );

    synthetic_dir(dir);
    fs::remove_file(dir.join(RUNS_JSONL)).expect("rm");
    let e = error_of(dir);
    assert!(
        e.contains(&dir.join(RUNS_JSONL).display().to_string()),
        "{e}"
    );

    synthetic_dir(dir);
    let runs = fs::read_to_string(dir.join(RUNS_JSONL)).expect("runs");
    let mut lines: Vec<&str> = runs.lines().collect();
    lines.insert(1, "{\"kind\":\"run\",\"tuner\":");
    write(&dir.join(RUNS_JSONL), &lines.join("\n"));
    let e = error_of(dir);
    assert!(e.contains("runs.jsonl: line 2"), "{e}");

    synthetic_dir(dir);
    let other = lab_json().replace(env!("CARGO_PKG_VERSION"), "0.0.0-other");
    write(&dir.join(LAB_JSON), &other);
    let e = error_of(dir);
    assert!(e.contains("made by rightsize 0.0.0-other"), "{e}");
}
