//! The pure parts of `rightsize-bench tuners`: flags, sizes, run lines,
//! medians, goals. No root, no network.

use std::path::Path;
use std::time::Duration;

use rightsize_path::PathSpec;
use rightsize_tune::TunerSpec;
use rightsize_tune::units::Bytes;
use serde_json::json;

use rightsize_lab::run::budget::{self, Basis};
use rightsize_lab::run::paths::{self, LoadedPath};
use rightsize_lab::run::record::{self, Measured, RunRecord};

use super::options;
use super::report;
use crate::goals::{self, Summary, Verdict, median};

fn args(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_owned).collect()
}

#[test]
fn median_of_odd_even_and_none() {
    assert_eq!(median(&[]), None);
    assert_eq!(median(&[3.0]), Some(3.0));
    assert_eq!(median(&[5.0, 1.0, 3.0]), Some(3.0));
    assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
}

#[test]
fn defaults_are_the_benchmarks_and_smoke_is_small() {
    let o = options::parse(&[]).expect("defaults");
    assert_eq!(o.paths, ["lfn", "shallow", "changing"]);
    let tuners: Vec<String> = o.tuners.iter().map(ToString::to_string).collect();
    assert_eq!(
        tuners,
        [
            "stock",
            "static:16MiB",
            "kernel",
            "drs",
            "sobas",
            "freebsd",
            "auto"
        ]
    );
    assert_eq!((o.reps, o.size), (3, Bytes(512 << 20)));
    let s = options::parse(&args("--smoke")).expect("smoke");
    assert_eq!(s.paths, ["lfn"]);
    assert_eq!(s.tuners, [TunerSpec::Auto, TunerSpec::Stock]);
    assert_eq!((s.reps, s.size, s.smoke), (1, Bytes(32 << 20), true));
}

#[test]
fn explicit_flags_win_over_smoke_in_any_order() {
    let o = options::parse(&args(
        "--reps=2 --smoke --size 8MiB --paths shallow,shallow",
    ))
    .expect("parses");
    assert_eq!((o.reps, o.size), (2, Bytes(8 << 20)));
    assert_eq!(o.paths, ["shallow"]);
    assert_eq!(o.tuners, [TunerSpec::Auto, TunerSpec::Stock]);
}

#[test]
fn tuners_are_canonical_and_deduplicated() {
    let t = crate::flags::parse_tuners("static:16M, static:16MiB,auto,AUTO").expect("parses");
    assert_eq!(t.len(), 2);
    assert_eq!(t[0].to_string(), "static:16MiB");
}

#[test]
fn bad_flags_quote_the_input() {
    for (input, needle) in [
        ("--tuners fast", "fast"),
        ("--reps 0", "--reps \"0\""),
        ("--size lots", "--size \"lots\""),
        ("--frobnicate 1", "--frobnicate"),
        ("--paths", "needs a value"),
    ] {
        let e = options::parse(&args(input)).expect_err(input);
        assert!(format!("{e:#}").contains(needle), "{input}: {e:#}");
    }
}

fn lfn() -> PathSpec {
    PathSpec::from_toml(
        "rate = \"200Mbit\"\ndelay = \"50ms\"\nqueue = \"1bdp\"\n",
        &mut |_| Err("no traces".into()),
    )
    .expect("spec")
}

#[test]
fn stock_is_expected_near_5_mbit_and_shortened_to_about_30_s() {
    let path = lfn();
    let stock = budget::expected_rate_bps(&TunerSpec::Stock, &path).expect("fixed");
    assert!((stock - 5_242_880.0).abs() < 1.0, "{stock}");
    let size = budget::run_size(Bytes(512 << 20), Some(stock), None, budget::SLOW_RUN);
    // 5.24 Mbit/s x 30 s = 19.66 MB = 18.75 MiB, whole MiB down.
    assert_eq!(size.bytes, Bytes(18 << 20));
    assert_eq!(size.shortened, Some(Basis::Expected(stock)));
    // A large static buffer is limited by the path: not shortened.
    let big = budget::expected_rate_bps(&TunerSpec::Static(Bytes(16 << 20)), &path);
    assert_eq!(big, Some(budget::goodput_ceiling_bps(&path)));
    assert!((budget::goodput_ceiling_bps(&path) - 193.0667e6).abs() < 100.0);
    let full = budget::run_size(Bytes(512 << 20), big, None, budget::SLOW_RUN);
    assert_eq!((full.bytes, full.shortened), (Bytes(512 << 20), None));
    assert_eq!(budget::expected_rate_bps(&TunerSpec::Auto, &path), None);
}

#[test]
fn a_slow_first_repetition_shortens_the_later_ones_never_lengthens() {
    let later = budget::run_size(Bytes(512 << 20), None, Some(8e6), budget::SLOW_RUN);
    assert_eq!(later.bytes, Bytes(28 << 20));
    assert_eq!(later.shortened, Some(Basis::Measured(8e6)));
    let fast = budget::run_size(Bytes(512 << 20), None, Some(150e6), budget::SLOW_RUN);
    assert_eq!(fast.shortened, None);
    // Asked for less than the budget would give: kept.
    let small = budget::run_size(Bytes(4 << 20), Some(5e6), None, budget::SLOW_RUN);
    assert_eq!((small.bytes, small.shortened), (Bytes(4 << 20), None));
    // Never below 1 MiB.
    let tiny = budget::run_size(Bytes(512 << 20), Some(1e3), None, Duration::from_secs(1));
    assert_eq!(tiny.bytes, budget::MIN_SIZE);
    // The deadline follows the size and the rate it was made for.
    let d = budget::run_deadline(later, &lfn());
    assert!(
        d > Duration::from_secs(120) + Duration::from_secs(500),
        "{d:?}"
    );
}

fn run(path: &str, tuner: &str, rep: usize, goodput_mbps: f64, peak_mb: f64) -> RunRecord {
    RunRecord {
        kind: record::RUN_KIND.to_owned(),
        invocation: "1-2".to_owned(),
        argv: vec!["rightsize-bench".into(), "tuners".into()],
        bench_version: "0.1.0".into(),
        rightsize_version: Some("0.1.0".into()),
        kernel: "6.18".into(),
        started_unix_s: 1,
        path: path.into(),
        spec_file: format!("/x/{path}.toml"),
        tuner: tuner.into(),
        peer: None,
        rep,
        size_bytes: 512 << 20,
        shortened_from_bytes: None,
        run_dir: "/x".into(),
        wall_seconds: 30.0,
        path_exit_code: Some(0),
        valid: true,
        failed_checks: vec![],
        error: None,
        measured: Measured {
            goodput_bps: Some(goodput_mbps * 1e6),
            transfer_seconds: Some(20.0),
            bytes: Some(512 << 20),
            peak_rcvbuf_bytes: Some((peak_mb * 1e6) as u64),
            mean_rcvbuf_bytes: Some((peak_mb * 0.5e6) as u64),
            peak_sndbuf_bytes: Some(4_000_000),
            bytes_retrans: Some(1000),
            retrans_segs: Some(1),
            retrans_from: None,
            client_tuner: None,
        },
        fidelity: None,
        scenario: None,
        variant: None,
        ceiling_bps: None,
        bdp_bytes: None,
    }
}

#[test]
fn run_lines_round_trip_and_other_kinds_and_invocations_are_skipped() {
    let r = run("lfn", "auto", 1, 180.0, 4.0);
    let line = serde_json::to_string(&r).expect("serializes");
    assert_eq!(record::parse_line(&line).expect("parses"), Some(r.clone()));
    assert_eq!(
        record::parse_line(r#"{"kind":"header","argv":[]}"#).expect("parses"),
        None
    );
    let mut other = r.clone();
    other.invocation = "9-9".into();
    let text = format!(
        "{line}\n\n{}\n{}\n",
        serde_json::to_string(&other).expect("serializes"),
        r#"{"kind":"note"}"#
    );
    assert_eq!(record::runs_of(&text, "1-2").expect("reads"), vec![r]);
    let e = record::runs_of("{\"kind\":\"run\"}\n", "1-2").expect_err("incomplete");
    assert!(e.to_string().contains("line 1"), "{e}");
}

#[test]
fn measure_reads_the_client_report_and_the_servers_final_line() {
    let client = json!({
        "rightsize_version": "0.1.0",
        "goodput_bps": 1.8e8,
        "seconds": 23.5,
        "bytes": 536870912u64,
        "server_buffers": {"peak_sndbuf_bytes": 5000000, "tune": "static:16MiB"},
        "tuning": {"buffers": {"peak_rcvbuf_bytes": 33554432, "mean_rcvbuf_bytes": 33554432},
                   "tuner": {"name": "static", "state": "fixed"}}
    });
    let server = "{\"kind\":\"header\"}\n\
                  {\"kind\":\"sample\",\"bytes_retrans\":1,\"total_retrans_segs\":1}\n\
                  {\"kind\":\"final\",\"bytes_retrans\":28960,\"total_retrans_segs\":20}\n";
    let m = record::measure(&client, Some(server), "static:16MiB", "static:16MiB");
    assert_eq!(m.problems, Vec::<String>::new());
    assert_eq!(m.measured.goodput_bps, Some(1.8e8));
    assert_eq!(m.measured.peak_rcvbuf_bytes, Some(33554432));
    assert_eq!(m.measured.peak_sndbuf_bytes, Some(5_000_000));
    assert_eq!(
        (m.measured.bytes_retrans, m.measured.retrans_segs),
        (Some(28960), Some(20))
    );

    // The wrong tuner, a missing number, no server telemetry: each named.
    let m = record::measure(&client, None, "auto", "auto");
    let all = m.problems.join("; ");
    assert!(all.contains("client ran tuner"), "{all}");
    assert!(all.contains("server ran tuner"), "{all}");
    assert!(all.contains("server's telemetry"), "{all}");
    let m = record::measure(&json!({"tuning": {}}), Some(server), "stock", "stock");
    assert!(
        m.problems.iter().any(|p| p.contains("goodput_bps")),
        "{:?}",
        m.problems
    );
}

#[test]
fn the_fidelity_verdict_and_its_failed_checks_are_read() {
    let results = json!({"exit_code": 0, "fidelity": {"valid": false, "checks": [
        {"name": "idle_rtt", "ok": true}, {"name": "losses", "ok": false},
        {"name": "emulator_cpu", "ok": null}]}});
    assert_eq!(
        record::fidelity_of(&results),
        (Some(false), vec!["losses".to_owned()])
    );
    assert_eq!(record::fidelity_of(&json!({})), (None, vec![]));
}

#[test]
fn summaries_take_medians_of_valid_runs_only() {
    let mut bad = run("lfn", "auto", 3, 10.0, 100.0);
    bad.valid = false;
    let mut failed = run("lfn", "auto", 4, 1.0, 1.0);
    failed.error = Some("boom".into());
    let runs = [
        run("lfn", "auto", 1, 190.0, 4.0),
        run("lfn", "auto", 2, 170.0, 5.0),
        bad,
        failed,
    ];
    let refs: Vec<&RunRecord> = runs.iter().collect();
    let s = Summary::of("lfn", "auto", &refs);
    assert_eq!((s.valid, s.total), (2, 4));
    assert_eq!(s.goodput_bps, Some(180e6));
    assert_eq!(s.peak_rcvbuf_bytes, Some(4.5e6));
    assert_eq!(s.mbps_per_mb(), Some(40.0));
    let table = report::table(&[&s]);
    assert!(table.contains("2/4"), "{table}");
    assert!(table.contains("180.0"), "{table}");
}

fn facts(name: &str) -> paths::PathFacts {
    paths::PathFacts {
        name: name.into(),
        bdp_bytes: 2.5e6,
        ceiling_bps: 200e6 * 1448.0 / 1500.0,
    }
}

fn verdict_of<'a>(judged: &'a [goals::Judged<'static>], id: &str) -> &'a goals::Judged<'static> {
    judged
        .iter()
        .find(|j| j.target.id == id)
        .unwrap_or_else(|| panic!("no goal {id}"))
}

#[test]
fn goals_are_judged_with_their_ratios() {
    let runs = [
        run("lfn", "auto", 1, 190.0, 4.0),
        run("lfn", "static:16MiB", 1, 192.0, 33.5),
        run("lfn", "stock", 1, 5.2, 0.13),
        run("lfn", "kernel", 1, 195.0, 20.0),
    ];
    let tuners: Vec<String> = ["auto", "static:16MiB", "stock", "kernel"]
        .map(str::to_owned)
        .to_vec();
    let summaries = goals::summarise(&runs, &["lfn".to_owned()], &tuners);
    let judged = report::judge(&summaries, &[facts("lfn")]);
    // Only lfn's goals: 1a-1e and drs's 4a.
    assert_eq!(judged.len(), 6);
    let a = verdict_of(&judged, "1a");
    assert_eq!(a.verdict, Verdict::Met);
    assert!((a.ratio().expect("ratio") - 190.0 / 192.0).abs() < 1e-9);
    assert!(a.line().contains("(0.990x) -> met"), "{}", a.line());
    assert_eq!(verdict_of(&judged, "1b").verdict, Verdict::Met);
    // 4 MB <= 2 x 2.5 MB.
    assert_eq!(verdict_of(&judged, "1c").verdict, Verdict::Met);
    // 190 < 0.98 x 195 = 191.1.
    let d = verdict_of(&judged, "1d");
    assert_eq!(d.verdict, Verdict::NotMet);
    assert!(d.line().ends_with("-> NOT met"), "{}", d.line());
    // 4 MB <= 0.25 x 20 MB.
    assert_eq!(verdict_of(&judged, "1e").verdict, Verdict::Met);
    let drs = verdict_of(&judged, "4a");
    assert!(
        matches!(&drs.verdict, Verdict::NotMeasured(why) if why.contains("drs was not run")),
        "{:?}",
        drs.verdict
    );
}

#[test]
fn shallow_goals_use_the_ceiling_and_retransmissions() {
    let mut auto = run("shallow", "auto", 1, 181.0, 3.0);
    auto.measured.bytes_retrans = Some(100_000);
    let mut fixed = run("shallow", "static:16MiB", 1, 150.0, 33.5);
    fixed.measured.bytes_retrans = Some(400_000);
    let mut sobas = run("shallow", "sobas", 1, 150.0, 3.0);
    sobas.measured.bytes_retrans = Some(0);
    let tuners = ["auto", "static:16MiB", "sobas"]
        .map(str::to_owned)
        .to_vec();
    let summaries = goals::summarise(&[auto, fixed, sobas], &["shallow".to_owned()], &tuners);
    let judged = report::judge(&summaries, &[facts("shallow")]);
    // 181 >= 0.93 x 193.07 = 179.6.
    assert_eq!(verdict_of(&judged, "2a").verdict, Verdict::Met);
    assert_eq!(verdict_of(&judged, "2b").verdict, Verdict::Met);
    // 100 kB > 0.2 x 400 kB.
    assert_eq!(verdict_of(&judged, "2c").verdict, Verdict::NotMet);
    assert_eq!(verdict_of(&judged, "4b").verdict, Verdict::Met);
}

#[test]
fn a_tuner_without_valid_runs_is_not_measured_rather_than_missed() {
    let mut fixed = run("changing", "static:16MiB", 1, 120.0, 33.5);
    fixed.valid = false;
    let runs = [run("changing", "auto", 1, 110.0, 5.0), fixed];
    let tuners = ["auto", "static:16MiB"].map(str::to_owned).to_vec();
    let summaries = goals::summarise(&runs, &["changing".to_owned()], &tuners);
    let judged = report::judge(&summaries, &[facts("changing")]);
    assert_eq!(judged.len(), 2);
    for j in &judged {
        assert!(
            matches!(&j.verdict, Verdict::NotMeasured(why) if why.contains("0/1 valid")),
            "{:?}",
            j.verdict
        );
    }
}

#[test]
fn the_run_spec_starts_the_server_and_keeps_traces_reachable() {
    let text = "rate = \"200Mbit\"\n[downlink]\ntrace = \"changing.steps\"\n[right]\ncongestion = \"cubic\"\n";
    let server = ["rightsize", "serve", "--tune", "auto"].map(str::to_owned);
    let out =
        paths::spec_with_server(text, Path::new("/specs"), &server, Some(2)).expect("rewrites");
    let table: toml::Table = out.parse().expect("toml");
    // Each repetition's own random loss; a seed the spec gives stays.
    assert_eq!(table["seed"].as_integer(), Some(2));
    let given = paths::spec_with_server(
        "rate = \"1Gbit\"\nseed = 9\n",
        Path::new("/"),
        &server,
        Some(2),
    );
    let given: toml::Table = given.expect("rewrites").parse().expect("toml");
    assert_eq!(given["seed"].as_integer(), Some(9));
    assert_eq!(
        table["downlink"]["trace"].as_str(),
        Some("/specs/changing.steps")
    );
    assert_eq!(table["right"]["congestion"].as_str(), Some("cubic"));
    let command: Vec<&str> = table["right"]["command"]
        .as_array()
        .expect("array")
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    assert_eq!(command, ["rightsize", "serve", "--tune", "auto"]);
    let twice = paths::spec_with_server(&out, Path::new("/specs"), &server, None);
    assert!(twice.is_err());
}

#[test]
fn the_committed_paths_are_the_benchmarks() {
    let lfn = LoadedPath::load("lfn").expect("lfn");
    let f = lfn.facts();
    assert_eq!(f.bdp_bytes, 2.5e6);
    assert!(
        (f.ceiling_bps - 193.0666e6).abs() < 1e3,
        "{}",
        f.ceiling_bps
    );
    assert_eq!(lfn.spec.rtt(), Duration::from_millis(100));
    for host in [&lfn.spec.left, &lfn.spec.right] {
        assert_eq!(host.rmem_max, Some(32 << 20));
        assert_eq!(host.wmem_max, Some(32 << 20));
        assert_eq!(host.tcp_rmem.map(|t| t[2]), Some(32 << 20));
        assert_eq!(host.congestion.as_deref(), Some("cubic"));
    }
    let shallow = LoadedPath::load("shallow").expect("shallow");
    assert_eq!(
        shallow.spec.queue_limit(rightsize_path::Side::Right),
        rightsize_path::QueueLimit::Bytes(250_000)
    );
    let changing = LoadedPath::load("changing").expect("changing");
    assert!(matches!(
        changing.spec.downlink.rate,
        rightsize_path::RateSpec::Steps(ref s) if s.len() == 2
    ));
    // Each run's copy parses and runs the server on the right host.
    let copy = changing
        .for_run(&["serve".to_owned()], None)
        .expect("run spec");
    let spec = PathSpec::from_toml(&copy, &mut |_| Err("none".into())).expect("parses");
    assert_eq!(spec.right.command, Some(vec!["serve".to_owned()]));
}
