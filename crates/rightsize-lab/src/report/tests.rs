//! `make_report` over synthetic results directories; in `tests/`, the
//! report opened in a browser and the report of a full lab run timed.

mod browser;
mod speed;

use std::fs;
use std::path::Path;

use super::fixture::{lab_json, synthetic_dir, write};
use super::*;
use crate::layout::{LAB_JSON, RUNS_JSONL};
use crate::scenario::PLOTS;

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
    // Reference lines: the path's ceiling under goodput over time, the
    // BDP under the receive buffer.
    let svg = fs::read_to_string(dir.join("report/x-goodput-over-time.svg")).expect("svg");
    assert!(svg.contains("path ceiling 193 Mbit/s"), "no ceiling line");
    let svg = fs::read_to_string(dir.join("report/x-rcvbuf-over-time.svg")).expect("svg");
    assert!(svg.contains("BDP 2.50 MB"), "no BDP line");
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
