//! `rightsize lab run --quick` of the built-in scenarios, end to end: real
//! kernel TCP through Rattan between two namespaces (needs root and the
//! pinned rattan, as `path_e2e.rs`; in CI it runs, it does not skip), then
//! the report made from the results directory. The assertions check the
//! shape of the results, with margins wide enough for a 2-core machine:
//! stock far below the others, auto's memory a fraction of the kernel's.
//! About 3 minutes.

use std::path::Path;
use std::process::{Command, Output};

fn rightsize() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rightsize"))
}

fn text(output: &Output) -> String {
    format!(
        "status {}\nstdout: {}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn runs(dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("runs.jsonl"))
        .unwrap_or_else(|e| panic!("runs.jsonl: {e}"))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The goodput in Mbit/s of `tuner`'s run of `scenario` asked `size` bytes.
fn mbps(runs: &[serde_json::Value], scenario: &str, tuner: &str, size: u64) -> f64 {
    let run = runs
        .iter()
        .find(|r| {
            r["scenario"] == scenario
                && r["tuner"] == tuner
                && r["shortened_from_bytes"]
                    .as_u64()
                    .unwrap_or(0)
                    .max(r["size_bytes"].as_u64().unwrap_or(0))
                    == size
        })
        .unwrap_or_else(|| panic!("no {scenario} {tuner} {size} run"));
    assert!(run["valid"] == true, "{run:#}");
    run["goodput_bps"].as_f64().unwrap_or(0.0) / 1e6
}

#[test]
fn the_quick_lab_reproduces_the_shapes_and_reports_them() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let out = dir.path().join("results");
    let output = rightsize()
        .args(["lab", "run", "demo", "drsftp", "--quick", "--out"])
        .arg(&out)
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(output.status.success(), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("17 run(s) made"), "{stdout}");

    let runs = runs(&out);
    assert_eq!(runs.len(), 17);
    // demo, 128 MiB on 200 Mbit/s x 100 ms: stock's 64 KiB window allows
    // about 5 Mbit/s, auto fills most of the pipe with a fraction of the
    // kernel's memory.
    let size = 128 << 20;
    let (stock, auto) = (
        mbps(&runs, "demo", "stock", size),
        mbps(&runs, "demo", "auto", size),
    );
    assert!(
        stock < 0.1 * auto,
        "stock {stock:.1}, auto {auto:.1} Mbit/s"
    );
    assert!(auto > 100.0, "auto {auto:.1} Mbit/s");
    let peak = |tuner: &str| {
        runs.iter()
            .find(|r| r["scenario"] == "demo" && r["tuner"] == tuner)
            .and_then(|r| r["peak_rcvbuf_bytes"].as_u64())
            .unwrap_or(0)
    };
    assert!(
        peak("auto") * 4 <= peak("kernel"),
        "auto {} vs kernel {} bytes",
        peak("auto"),
        peak("kernel")
    );
    // drsftp at 32 MB: the over-provisioned buffer and drs well above stock.
    let size = 32_000_000;
    let stock = mbps(&runs, "drsftp", "stock", size);
    assert!(mbps(&runs, "drsftp", "static:16MiB", size) > 5.0 * stock);
    assert!(mbps(&runs, "drsftp", "drs", size) > 2.0 * stock);

    // The report, from the directory alone.
    let html = std::fs::read_to_string(out.join("report/index.html"))
        .unwrap_or_else(|e| panic!("index.html: {e}"));
    assert!(html.matches("<svg").count() >= 7, "plots inline");
    for plot in [
        "demo-goodput-by-tuner",
        "demo-goodput-over-time",
        "drsftp-goodput-vs-size",
    ] {
        for ext in ["svg", "png"] {
            let file = out.join(format!("report/{plot}.{ext}"));
            assert!(file.is_file(), "{}", file.display());
        }
    }
    assert!(out.join("report/summary.md").is_file());

    // A re-run skips what is recorded.
    let again = rightsize()
        .args(["lab", "run", "demo", "--quick", "--out"])
        .arg(&out)
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(again.status.success(), "{}", text(&again));
    assert!(
        String::from_utf8_lossy(&again.stdout).contains("0 run(s) made, 5 already recorded"),
        "{}",
        text(&again)
    );
}

#[test]
fn bad_scenarios_and_directories_are_refused_before_any_run() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let output = rightsize()
        .args(["lab", "run", "nosuch", "--out"])
        .arg(dir.path())
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("\"nosuch\"") && stderr.contains("demo"),
        "{stderr}"
    );

    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        "title = \"t\"\npath = \"lfn\"\ntuners = [\"warp\"]\nsizes = [\"1MiB\"]\nplots = []\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let output = rightsize()
        .args(["lab", "run"])
        .arg(&bad)
        .arg("--out")
        .arg(dir.path().join("r"))
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("tuner \"warp\""),
        "{}",
        text(&output)
    );
    assert!(!dir.path().join("r").exists(), "nothing made before a run");

    let other = dir.path().join("other");
    std::fs::create_dir(&other).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(
        other.join("lab.json"),
        r#"{"kind":"lab","version":"0.0.1","kernel":"","created_unix_s":0}"#,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let output = rightsize()
        .args(["lab", "run", "demo", "--out"])
        .arg(&other)
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("0.0.1"),
        "{}",
        text(&output)
    );
    let output = rightsize()
        .args(["lab", "report"])
        .arg(dir.path())
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("lab.json"),
        "{}",
        text(&output)
    );
}
