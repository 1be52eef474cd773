//! The peer benchmark's flags, tables and goals, on synthetic runs.

use rightsize_lab::run::paths::{LoadedPath, PathFacts};
use rightsize_lab::run::peer::Peer;
use rightsize_lab::run::record::{self, Measured, RunRecord};
use rightsize_tune::TunerSpec;
use rightsize_tune::units::Bytes;

use super::{options, report};
use crate::goals::{self, Judged, Verdict};

fn args(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_owned).collect()
}

#[test]
fn defaults_are_every_peer_on_seven_paths_and_smoke_is_small() {
    let o = options::parse(&[]).expect("defaults");
    assert_eq!(
        o.paths,
        [
            "lfn", "shallow", "changing", "short", "bbr-loss", "reno", "metro"
        ]
    );
    assert_eq!(
        o.peers,
        [Peer::Rightsize, Peer::Vsftpd, Peer::Curl, Peer::Globus]
    );
    assert_eq!(
        o.tuners.iter().map(ToString::to_string).collect::<Vec<_>>(),
        ["auto", "kernel", "static:16MiB"]
    );
    assert_eq!((o.reps, o.size, o.smoke), (3, None, false));
    let s = options::parse(&args("--smoke")).expect("smoke");
    assert_eq!(s.paths, ["short"]);
    assert_eq!(s.peers, [Peer::Vsftpd, Peer::Curl, Peer::Globus]);
    assert_eq!(s.tuners, [TunerSpec::Auto]);
    assert_eq!((s.reps, s.size, s.smoke), (1, None, true));
    let o = options::parse(&args(
        "--peers curl,vsftpd,curl --smoke --reps=2 --paths lfn --size 64MiB --out /tmp/x",
    ))
    .expect("parses");
    assert_eq!(o.peers, [Peer::Curl, Peer::Vsftpd]);
    assert_eq!((o.reps, o.size), (2, Some(Bytes(64 << 20))));
    assert_eq!(o.paths, ["lfn"]);
    assert_eq!(o.out.as_deref(), Some(std::path::Path::new("/tmp/x")));
}

#[test]
fn bad_flags_quote_the_input() {
    for (input, needle) in [
        ("--peers proftpd", "\"proftpd\""),
        ("--peers ,", "at least one"),
        ("--tuners fast", "fast"),
        ("--reps 0", "--reps \"0\""),
        ("--frobnicate 1", "--frobnicate"),
        ("--out", "needs a value"),
    ] {
        let e = options::parse(&args(input)).expect_err(input);
        assert!(format!("{e:#}").contains(needle), "{input}: {e:#}");
    }
}

#[test]
fn the_new_paths_are_what_the_benchmark_says() {
    let short = LoadedPath::load("short").expect("short");
    assert_eq!(short.spec.rtt(), std::time::Duration::from_millis(40));
    assert_eq!(
        short.spec.queue_limit(rightsize_path::Side::Right),
        rightsize_path::QueueLimit::Packets(50)
    );
    let bbr = LoadedPath::load("bbr-loss").expect("bbr-loss");
    assert_eq!(bbr.spec.right.congestion.as_deref(), Some("bbr"));
    assert_eq!(bbr.facts().bdp_bytes, 2.5e6);
    let metro = LoadedPath::load("metro").expect("metro");
    assert_eq!(metro.spec.rtt(), std::time::Duration::from_millis(5));
    assert_eq!(metro.facts().bdp_bytes, 62.5e3);
    let reno = LoadedPath::load("reno").expect("reno");
    assert_eq!(reno.spec.right.congestion.as_deref(), Some("reno"));
    assert_eq!(reno.spec.left.congestion.as_deref(), Some("reno"));
    for name in options::DEFAULT_PATHS {
        let p = LoadedPath::load(name).expect(name);
        let peak = p.spec.link_from(rightsize_path::Side::Right).rate.peak().0;
        assert!(peak <= 200_000_000, "{name}: {peak} bit/s");
        assert_eq!(p.spec.right.wmem_max, Some(32 << 20), "{name}");
    }
}

#[test]
fn a_run_under_bbr_is_long_enough_for_two_probe_rtt_halts_unless_a_size_is_given() {
    let bbr = LoadedPath::load("bbr-loss").expect("bbr-loss").spec;
    let lfn = LoadedPath::load("lfn").expect("lfn").spec;
    let o = options::parse(&[]).expect("defaults");
    assert_eq!(o.size_for(&bbr), options::BBR_SIZE);
    assert_eq!(o.size_for(&lfn), options::DEFAULT_SIZE);
    // 200 Mbit/s x 1448/1500 for 26 s at the least: two halts ten seconds
    // apart, the first 10.9 to 12.2 s in.
    assert!(options::BBR_SIZE.0 as f64 * 8.0 / (200e6 * 1448.0 / 1500.0) > 26.0);
    assert!(
        o.size_heading()
            .contains("640 MiB where the sender runs bbr")
    );
    let given = options::parse(&args("--size 64MiB")).expect("size");
    assert_eq!(given.size_for(&bbr), Bytes(64 << 20));
    assert_eq!(given.size_heading(), "64 MiB per run");
    let smoke = options::parse(&args("--smoke")).expect("smoke");
    assert_eq!(smoke.size_for(&bbr), options::SMOKE_SIZE);
}

fn run(path: &str, peer: Peer, tuner: &str, rep: usize, goodput_mbps: f64) -> RunRecord {
    let sender = peer.server_is_rightsize();
    let receiver = peer.client_is_rightsize();
    RunRecord {
        kind: record::RUN_KIND.to_owned(),
        invocation: "1-2".to_owned(),
        argv: vec!["rightsize-bench".into(), "peers".into()],
        bench_version: "0.1.0".into(),
        rightsize_version: Some("0.1.0".into()),
        kernel: "6.18".into(),
        started_unix_s: 1,
        path: path.into(),
        spec_file: format!("/x/{path}.toml"),
        tuner: tuner.into(),
        peer: Some(peer.name().into()),
        rep,
        size_bytes: 256 << 20,
        shortened_from_bytes: None,
        run_dir: "/x".into(),
        wall_seconds: 30.0,
        path_exit_code: Some(0),
        valid: true,
        failed_checks: vec![],
        error: None,
        measured: Measured {
            goodput_bps: Some(goodput_mbps * 1e6),
            transfer_seconds: Some(12.0),
            bytes: Some(256 << 20),
            peak_rcvbuf_bytes: receiver.then_some(4_000_000),
            mean_rcvbuf_bytes: receiver.then_some(3_000_000),
            peak_sndbuf_bytes: sender.then_some(5_000_000),
            bytes_retrans: Some(0),
            retrans_segs: Some(0),
            retrans_from: (!sender).then(|| record::peers::RETRANS_FROM_PATH.to_owned()),
            client_tuner: None,
        },
        fidelity: None,
        scenario: None,
        variant: None,
        ceiling_bps: None,
        bdp_bytes: None,
    }
}

fn facts(name: &str) -> PathFacts {
    PathFacts {
        name: name.into(),
        bdp_bytes: 2.5e6,
        ceiling_bps: 200e6 * 1448.0 / 1500.0,
    }
}

fn tuners() -> Vec<String> {
    ["auto", "kernel", "static:16MiB"]
        .map(str::to_owned)
        .to_vec()
}

fn find<'a>(judged: &'a [Judged<'a>], id: &str, peer: &str) -> &'a Judged<'a> {
    judged
        .iter()
        .find(|j| j.target.id == id && j.target.peer == Some(peer))
        .unwrap_or_else(|| panic!("no goal {id} against {peer}"))
}

#[test]
fn each_cell_gets_its_goals() {
    let ids = |path, peer| -> Vec<&'static str> {
        report::goals(path, peer).iter().map(|t| t.id).collect()
    };
    assert_eq!(ids("lfn", Peer::Rightsize), ["P1", "P2", "1a"]);
    assert_eq!(ids("shallow", Peer::Rightsize), ["P1", "P2", "2a"]);
    assert_eq!(ids("changing", Peer::Rightsize), ["P1", "P2", "3a"]);
    assert_eq!(ids("reno", Peer::Rightsize), ["P1", "P2"]);
    assert_eq!(ids("lfn", Peer::Vsftpd), ["P1", "P2", "P3"]);
    assert_eq!(ids("shallow", Peer::Vsftpd), ["P1", "P2", "P3", "P5", "P6"]);
    assert_eq!(ids("shallow", Peer::Curl), ["P1", "P2", "P4"]);
    assert_eq!(ids("bbr-loss", Peer::Globus), ["P1", "P2", "P4"]);
    for t in report::goals("lfn", Peer::Rightsize) {
        assert_eq!((t.path, t.peer), ("lfn", Some("rightsize")));
    }
}

#[test]
fn medians_worst_runs_and_buffers_are_judged_per_cell() {
    let mut runs = Vec::new();
    for (rep, (auto, kernel)) in [(180.0, 185.0), (150.0, 186.0), (184.0, 184.0)]
        .into_iter()
        .enumerate()
    {
        runs.push(run("lfn", Peer::Curl, "auto", rep + 1, auto));
        runs.push(run("lfn", Peer::Curl, "kernel", rep + 1, kernel));
        runs.push(run("lfn", Peer::Vsftpd, "auto", rep + 1, auto + 20.0));
        runs.push(run("lfn", Peer::Vsftpd, "kernel", rep + 1, kernel));
    }
    // The kernel's buffers: 20 MB at each end.
    for r in runs.iter_mut().filter(|r| r.tuner == "kernel") {
        r.measured.peak_sndbuf_bytes = r.measured.peak_sndbuf_bytes.map(|_| 20_000_000);
        r.measured.peak_rcvbuf_bytes = r.measured.peak_rcvbuf_bytes.map(|_| 20_000_000);
    }
    let summaries = goals::summarise(&runs, &["lfn".to_owned()], &tuners());
    assert_eq!(summaries.len(), 4);
    let curl_auto = &summaries[0];
    assert_eq!(curl_auto.peer.as_deref(), Some("curl"));
    assert_eq!(curl_auto.goodput_bps, Some(180e6));
    assert_eq!(curl_auto.worst_goodput_bps, Some(150e6));
    let cells = [("lfn", Peer::Curl), ("lfn", Peer::Vsftpd)];
    let judged = report::judge(&cells, &summaries, &[facts("lfn")]);
    assert_eq!(judged.len(), 6);
    // 180 < 0.98 x 185 = 181.3.
    let p1 = find(&judged, "P1", "curl");
    assert_eq!(p1.verdict, Verdict::NotMet);
    assert!(p1.line().starts_with("goal P1 (lfn, curl): auto goodput >= 0.98 x kernel's: measured 180.0 Mbit/s vs 185.0 Mbit/s (0.973x) -> NOT met"), "{}", p1.line());
    // 150 < 0.9 x 185 = 166.5.
    let p2 = find(&judged, "P2", "curl");
    assert_eq!(p2.verdict, Verdict::NotMet);
    assert!(
        p2.line()
            .contains("auto worst run's goodput >= 0.9 x kernel's median goodput"),
        "{}",
        p2.line()
    );
    // 5 MB <= 0.5 x 20 MB.
    assert_eq!(find(&judged, "P4", "curl").verdict, Verdict::Met);
    assert_eq!(find(&judged, "P1", "vsftpd").verdict, Verdict::Met);
    assert_eq!(find(&judged, "P2", "vsftpd").verdict, Verdict::Met);
    assert_eq!(find(&judged, "P3", "vsftpd").verdict, Verdict::Met);
    assert_eq!(
        report::tally(&judged),
        "4 of 6 goals met, 2 not met, 0 not measured"
    );

    let table = report::table(Peer::Curl, &summaries[..2].iter().collect::<Vec<_>>());
    let auto_row = table
        .lines()
        .find(|l| l.trim_start().starts_with("auto"))
        .expect("row");
    assert!(
        auto_row.contains("n/a") && auto_row.contains("150.0") && auto_row.contains("5.00"),
        "{table}"
    );
    assert!(!table.contains("path's retransmitted"), "{table}");
    let table = report::table(Peer::Vsftpd, &summaries[2..].iter().collect::<Vec<_>>());
    assert!(
        table.contains("x 1448 B; the sender, vsftpd, says none"),
        "{table}"
    );
}

#[test]
fn shallow_from_vsftpd_meets_the_ceiling_with_few_losses_and_rightsize_keeps_its_figures() {
    let mut runs = vec![
        run("shallow", Peer::Vsftpd, "auto", 1, 176.0),
        run("shallow", Peer::Vsftpd, "kernel", 1, 120.0),
        run("shallow", Peer::Vsftpd, "static:16MiB", 1, 121.0),
        run("shallow", Peer::Rightsize, "auto", 1, 185.0),
        run("shallow", Peer::Rightsize, "kernel", 1, 121.0),
    ];
    runs[0].measured.bytes_retrans = Some(100 * 1448);
    runs[2].measured.bytes_retrans = Some(400 * 1448);
    let summaries = goals::summarise(&runs, &["shallow".to_owned()], &tuners());
    let cells = [("shallow", Peer::Vsftpd), ("shallow", Peer::Rightsize)];
    let judged = report::judge(&cells, &summaries, &[facts("shallow")]);
    // 176 >= 0.9 x 193.07 = 173.8.
    assert_eq!(find(&judged, "P5", "vsftpd").verdict, Verdict::Met);
    // 100 segments > 0.2 x 400.
    assert_eq!(find(&judged, "P6", "vsftpd").verdict, Verdict::NotMet);
    // 185 >= 0.93 x 193.07 = 179.6.
    let a2 = find(&judged, "2a", "rightsize");
    assert_eq!(a2.verdict, Verdict::Met);
    assert!(
        a2.line()
            .starts_with("goal 2a (shallow, rightsize): auto goodput >= 0.93 x the path's ceiling"),
        "{}",
        a2.line()
    );
}

#[test]
fn a_cell_without_the_kernel_is_not_measured() {
    let runs = [run("reno", Peer::Globus, "auto", 1, 90.0)];
    let summaries = goals::summarise(&runs, &["reno".to_owned()], &tuners());
    let judged = report::judge(&[("reno", Peer::Globus)], &summaries, &[facts("reno")]);
    assert_eq!(judged.len(), 3);
    for j in &judged {
        assert!(
            matches!(&j.verdict, Verdict::NotMeasured(why) if why.contains("kernel was not run")),
            "{:?}",
            j.verdict
        );
    }
    assert_eq!(
        report::tally(&judged),
        "0 of 3 goals met, 0 not met, 3 not measured"
    );
}
