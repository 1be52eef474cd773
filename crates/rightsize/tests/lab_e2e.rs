//! `rightsize lab run --quick` of the built-in scenarios, end to end: real
//! kernel TCP through Rattan between two namespaces (needs root and the
//! pinned rattan, as `path_e2e.rs`; in CI it runs, it does not skip), then
//! the report made from the results directory. The assertions check the
//! shape of the results, with margins wide enough for a 2-core machine:
//! stock far below the others, auto's memory a fraction of the kernel's,
//! the Windows note's tuned hosts far above its defaults. `rightsize demo
//! --quick` runs first (its table and report), then `lab run all --quick`
//! into the same directory: the demo's runs are skipped as recorded and
//! every other built-in scenario runs. About 4 minutes, one path at a time.

mod binary;

use std::path::Path;
use std::sync::Mutex;

use binary::{rightsize, text};

/// The tests that run paths take turns: two at once on two cores would
/// fail the paths' fidelity checks.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

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
    // drs shrinks SO_RCVBUF under the data in flight and its receiver
    // prunes what it holds: Linux counts a prune once, not per segment,
    // so the losses check may find more retransmissions than the counted
    // drops explain (a quick lab with the whole suite beside it: 174
    // retransmitted, 1 + 24 explained, in both attempts). That is the
    // tuner's own result; any other failed check is the apparatus's.
    let own_losses = tuner == "drs" && run["failed_checks"] == serde_json::json!(["losses"]);
    assert!(run["valid"] == true || own_losses, "{run:#}");
    run["goodput_bps"].as_f64().unwrap_or(0.0) / 1e6
}

#[test]
fn the_demo_then_the_quick_lab_reproduce_the_shapes_and_report_them() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let out = dir.path().join("results");
    demo_prints_its_table_and_makes_its_report(&out);
    // The lab into the demo's directory: the demo's runs are recorded
    // there and skipped, the other scenarios run.
    let output = rightsize()
        .args(["lab", "run", "all", "--quick", "--out"])
        .arg(&out)
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(output.status.success(), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("24 run(s) made, 5 already recorded"),
        "{stdout}"
    );

    let runs = runs(&out);
    assert_eq!(runs.len(), 29);
    let scenarios: std::collections::BTreeSet<&str> =
        runs.iter().filter_map(|r| r["scenario"].as_str()).collect();
    assert_eq!(
        scenarios.into_iter().collect::<Vec<_>>(),
        [
            "demo",
            "drsftp",
            "perfsonar",
            "sobas",
            "windows-rtt",
            "windows-sndbuf",
            "windows-write"
        ]
    );
    let failed: Vec<&serde_json::Value> = runs.iter().filter(|r| !r["error"].is_null()).collect();
    assert!(failed.is_empty(), "failed runs: {failed:#?}");
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
    // sobas sizes the buffer from one measurement of the path: far above
    // stock's window.
    let sobas = mbps(&runs, "demo", "sobas", size);
    assert!(
        sobas > 5.0 * stock,
        "sobas {sobas:.1}, stock {stock:.1} Mbit/s"
    );
    let peak = |tuner: &str| {
        runs.iter()
            .find(|r| r["scenario"] == "demo" && r["tuner"] == tuner)
            .and_then(|r| r["peak_rcvbuf_bytes"].as_u64())
            .unwrap_or_else(|| panic!("no peak_rcvbuf_bytes for the demo's {tuner} run"))
    };
    // Far below the kernel's: one 128 MiB run, whose peak spreads (4.3 MB
    // in the documented demo; 10.8 and 11.0 MB against the kernel's
    // 33.6 on another machine of the same kind, with the whole suite
    // running beside it).
    assert!(
        peak("auto") * 2 <= peak("kernel"),
        "auto {} vs kernel {} bytes",
        peak("auto"),
        peak("kernel")
    );
    // drsftp at 32 MB: the over-provisioned buffer and drs well above stock.
    let size = 32_000_000;
    let stock = mbps(&runs, "drsftp", "stock", size);
    assert!(mbps(&runs, "drsftp", "static:16MiB", size) > 5.0 * stock);
    assert!(mbps(&runs, "drsftp", "drs", size) > 2.0 * stock);
    // windows-rtt at 20 ms: an 8 KiB send buffer and a 17,520-byte window
    // allow about 5 Mbit/s, buffers at the BDP most of 100 Mbit/s (the
    // note measured 8.7x).
    let size = 8 << 20;
    let (default, tuned) = (
        mbps(&runs, "windows-rtt", "default (XP)", size),
        mbps(&runs, "windows-rtt", "tuned (BDP)", size),
    );
    assert!(
        tuned > 3.0 * default,
        "tuned {tuned:.1}, default {default:.1} Mbit/s"
    );
    // windows-write: the server wrote in the sizes asked.
    let header = |variant: &str| -> String {
        let run = runs
            .iter()
            .find(|r| r["scenario"] == "windows-write" && r["variant"] == variant)
            .unwrap_or_else(|| panic!("no windows-write run of {variant}"));
        let dir = out.join(run["run_dir"].as_str().unwrap_or_default());
        std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with("-retr.jsonl"))
            .filter_map(|e| std::fs::read_to_string(e.path()).ok())
            .filter_map(|t| t.lines().next().map(str::to_owned))
            .next()
            .unwrap_or_default()
    };
    assert!(
        header("1024 B writes").contains("\"write_size_bytes\":\"1024\""),
        "{}",
        header("1024 B writes")
    );

    // The report, from the directory alone.
    let html = std::fs::read_to_string(out.join("report/index.html"))
        .unwrap_or_else(|e| panic!("index.html: {e}"));
    // One inline plot per plot a scenario asks for (demo 8, drsftp 3,
    // sobas 3, the others 1 each), and the headline at the top.
    assert_eq!(html.matches("<svg").count(), 18, "plots inline");
    assert!(
        html.contains("<p class=\"headline\">Five buffer policies on a long fat path: auto made "),
        "no headline"
    );
    for plot in [
        "demo-goodput-by-tuner",
        "demo-goodput-vs-memory",
        "demo-goodput-over-time",
        "demo-cwnd-over-time",
        "demo-rwnd-over-time",
        "demo-retrans-over-time",
        "drsftp-goodput-vs-size",
        "sobas-rtt-over-time",
        "perfsonar-goodput-by-tuner",
        "windows-sndbuf-goodput-vs-buffer",
        "windows-rtt-goodput-by-tuner",
        "windows-write-goodput-by-tuner",
    ] {
        for ext in ["svg", "png"] {
            let file = out.join(format!("report/{plot}.{ext}"));
            assert!(file.is_file(), "{}", file.display());
        }
    }
    assert!(out.join("report/summary.md").is_file());
    // `lab report --screenshot`: the report made again from the directory,
    // opened in headless Chromium, every plot checked as drawn.
    let shot = rightsize()
        .args(["lab", "report"])
        .arg(&out)
        .arg("--screenshot")
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(shot.status.success(), "{}", text(&shot));
    let said = String::from_utf8_lossy(&shot.stdout);
    assert!(said.contains("screenshot: "), "{}", text(&shot));
    let png = std::fs::metadata(out.join("report/screenshot.png"))
        .unwrap_or_else(|e| panic!("report/screenshot.png: {e}: {}", text(&shot)));
    assert!(png.len() > 10_000, "a screenshot of {} bytes", png.len());
}

/// `rightsize demo --quick --out OUT`: five runs, its table and its report.
fn demo_prints_its_table_and_makes_its_report(out: &Path) {
    let output = rightsize()
        .args(["demo", "--quick", "--out"])
        .arg(out)
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(output.status.success(), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("5 run(s) made"), "{stdout}");
    // The table: a row per tuner, goodput in its second column.
    let mbps = |tuner: &str| -> f64 {
        stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(tuner))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {tuner} row with a rate in:\n{stdout}"))
    };
    for tuner in ["stock", "kernel", "drs", "sobas", "auto"] {
        assert!(mbps(tuner) > 0.0, "{tuner}: {stdout}");
    }
    // stock's 64 KiB window allows about 5 Mbit/s at 100 ms; auto fills
    // much more of the path.
    assert!(mbps("auto") > 4.0 * mbps("stock"), "{stdout}");
    for file in ["report/index.html", "report/summary.md", "runs.jsonl"] {
        assert!(out.join(file).is_file(), "{file} missing: {stdout}");
    }
    assert!(
        stdout.contains(&format!(
            "report: {}",
            out.join("report/index.html").display()
        )),
        "{stdout}"
    );
}

#[test]
fn freebsd_grows_past_stock_but_stops_at_its_256_kib_limit_on_a_long_path() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let scenario = dir.path().join("freebsd.toml");
    std::fs::write(
        &scenario,
        "title = \"freebsd on lfn\"\npath = \"lfn\"\ntuners = [\"stock\", \"freebsd\"]\n\
         sizes = [\"8MiB\"]\nreps = 1\nmax_run_seconds = 15\nplots = [\"goodput-by-tuner\"]\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let out = dir.path().join("results");
    let output = rightsize()
        .args(["lab", "run"])
        .arg(&scenario)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(output.status.success(), "{}", text(&output));
    let runs = runs(&out);
    let size = 8 << 20;
    let (stock, freebsd) = (
        mbps(&runs, "freebsd", "stock", size),
        mbps(&runs, "freebsd", "freebsd", size),
    );
    // 256 KiB at 100 ms allows about 21 Mbit/s; stock's 64 KiB about 5.
    assert!(
        freebsd > 2.5 * stock,
        "freebsd {freebsd:.1}, stock {stock:.1} Mbit/s"
    );
    let peak = runs
        .iter()
        .find(|r| r["tuner"] == "freebsd")
        .and_then(|r| r["peak_rcvbuf_bytes"].as_u64())
        .unwrap_or_else(|| panic!("no peak_rcvbuf_bytes for freebsd"));
    // The kernel holds twice the 256 KiB it asks for, and no more.
    assert!(
        peak <= 2 * 256 * 1024,
        "freebsd's peak receive buffer {peak}"
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
