//! Run records for the report's tests.

use crate::run::record::{RUN_KIND, RunRecord};

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
        rep,
        size_bytes,
        shortened_from_bytes: None,
        run_dir: format!("x/path/{}-{size_bytes}-rep{rep}", tuner.replace(':', "-")),
        wall_seconds: 10.0,
        path_exit_code: Some(0),
        valid: true,
        failed_checks: Vec::new(),
        error: None,
        goodput_bps: Some(goodput_mbps * 1e6),
        transfer_seconds: Some(8.0),
        bytes: Some(size_bytes),
        peak_rcvbuf_bytes: Some(4_000_000),
        mean_rcvbuf_bytes: Some(3_000_000),
        peak_sndbuf_bytes: Some(8_000_000),
        bytes_retrans: Some(1000),
        retrans_segs: Some(1),
        client_tuner: None,
        fidelity: None,
        scenario: Some("x".into()),
        variant: None,
        ceiling_bps: Some(193.0e6),
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
seed = "000 drsFTP"
text = "auto beats stock by 5x"
tuner = "auto"
over = "stock"
published = 5.0
holds_at_least = 2.0

[[claims]]
seed = "000 drsFTP"
text = "static beats auto"
tuner = "static:16MiB"
over = "auto"
published = 1.5
holds_at_least = 1.2
"#
    )
}
