use super::*;
use crate::report::fixture::{invalid, record, scenario_text};

const MIB64: u64 = 64 << 20;

fn checked() -> Checked {
    Checked::parse("x", &scenario_text("\"goodput-vs-size\""), false).expect("scenario")
}

fn view(record: RunRecord, reach: Reach) -> RunView {
    RunView {
        variant: "path".into(),
        record,
        reach,
    }
}

fn runs() -> Vec<RunView> {
    vec![
        view(record("stock", MIB64, 1, 2.0), Reach::Never),
        view(record("auto", MIB64, 1, 10.0), Reach::At(1.0)),
        view(record("auto", MIB64, 2, 12.0), Reach::At(2.0)),
        view(invalid("auto", MIB64, 3, 900.0, "idle_rtt"), Reach::Unknown),
        view(record("auto", MIB64, 4, 14.0), Reach::Never),
        view(record("auto", 1 << 20, 1, 5.0), Reach::Unknown),
    ]
}

#[test]
fn rows_are_ordered_and_exclude_invalid_runs() {
    let rows = rows(&checked(), &runs());
    let keys: Vec<(&str, u64)> = rows
        .iter()
        .map(|r| (r.tuner.as_str(), r.size_bytes))
        .collect();
    assert_eq!(keys, [("auto", 1 << 20), ("auto", MIB64), ("stock", MIB64)]);
    let auto = &rows[1];
    assert_eq!((auto.n_valid, auto.n), (3, 4));
    let g = auto.goodput_mbps.expect("valid runs");
    assert!((g.mean - 12.0).abs() < 1e-9);
    assert!((g.half_width.expect("n = 3") - 4.969).abs() < 1e-3);
    // 12 Mbit/s over 4 MB of receive buffer.
    let per_mb = auto.mbps_per_mb.expect("buffers");
    assert!((per_mb.mean - 3.0).abs() < 1e-9);
    assert_eq!(auto.peak_rcvbuf_bytes, Some(4e6));
    assert_eq!(auto.reach.text(), "1.50 s (2 of 3)");
    assert_eq!(rows[2].reach.text(), "never");
    assert_eq!(rows[0].reach.text(), "—");
    assert_eq!(rows[2].goodput_mbps.expect("one run").half_width, None);
}

#[test]
fn invalid_runs_say_why() {
    let bad = invalid_runs(&runs());
    assert_eq!(bad.len(), 1);
    assert_eq!((bad[0].tuner.as_str(), bad[0].rep), ("auto", 3));
    assert_eq!(bad[0].why, "failed checks: idle_rtt");
    let mut failed = record("stock", 1, 1, 1.0);
    failed.error = Some("the client exited 1".into());
    let bad = invalid_runs(&[view(failed, Reach::Unknown)]);
    assert_eq!(bad[0].why, "error: the client exited 1");
}

#[test]
fn claims_compare_means_at_the_largest_size() {
    let c = checked();
    let claims = claims(&c, &rows(&c, &runs()));
    assert_eq!(claims.len(), 2);
    // auto 12 over stock 2.
    assert!((claims[0].measured.expect("both ran") - 6.0).abs() < 1e-9);
    assert_eq!(claims[0].verdict, Verdict::Holds);
    assert_eq!(claims[0].at, Some(("path".to_owned(), MIB64)));
    // static:16MiB never ran.
    assert_eq!(claims[1].measured, None);
    assert_eq!(claims[1].verdict, Verdict::NotMeasured);
    let mut low = runs();
    low[0].record.measured.goodput_bps = Some(10e6);
    let claims = claims_of(&c, &low);
    assert_eq!(claims[0].verdict, Verdict::DoesNotHold);
}

fn claims_of(c: &Checked, runs: &[RunView]) -> Vec<ClaimRow> {
    claims(c, &rows(c, runs))
}

#[test]
fn canonical_tuner_text() {
    assert_eq!(
        crate::scenario::canonical("static:16384KiB"),
        "static:16MiB"
    );
    assert_eq!(crate::scenario::canonical("no such tuner"), "no such tuner");
}
