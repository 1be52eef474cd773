//! The scenario format and the plan, without running anything.

use std::path::Path;

use rightsize_tune::units::Bytes;

use crate::lab::{self, ScenarioFile};
use crate::scenario::Checked;

const MINIMAL: &str = r#"
title = "t"
path = "lfn"
tuners = ["stock", "auto"]
sizes = ["1MiB", "8MiB"]
reps = 2
plots = ["goodput-vs-size"]
"#;

/// Loads scenario `text` from a file in `dir`, with its path.
fn load(dir: &Path, text: &str) -> anyhow::Result<ScenarioFile> {
    let file = dir.join("v.toml");
    std::fs::write(&file, text).expect("write");
    ScenarioFile::load(&file.to_string_lossy(), false)
}

fn err(text: &str) -> String {
    format!(
        "{:#}",
        Checked::parse("x", text, false).expect_err("refused")
    )
}

#[test]
fn a_scenario_with_bad_input_is_refused_with_the_value_quoted() {
    let e = err(&MINIMAL.replace("\"auto\"", "\"fast\""));
    assert!(e.contains("tuner \"fast\""), "{e}");
    let e = err(&MINIMAL.replace("\"8MiB\"", "\"lots\""));
    assert!(e.contains("size \"lots\""), "{e}");
    let e = err(&MINIMAL.replace("\"8MiB\"", "\"0B\""));
    assert!(e.contains("accepted are 1 byte to 16 GiB"), "{e}");
    let e = err(&MINIMAL.replace("reps = 2", "reps = 0"));
    assert!(e.contains("reps = 0"), "{e}");
    let e = err(&MINIMAL.replace("goodput-vs-size", "pie"));
    assert!(e.contains("pie"), "{e}");
    let e = err(&format!("{MINIMAL}\nspeed = 3\n"));
    assert!(e.contains("speed"), "{e}");
    let e = format!(
        "{:#}",
        Checked::parse("x", MINIMAL, true).expect_err("no [quick]")
    );
    assert!(e.contains("[quick]"), "{e}");
    let claim = format!(
        "{MINIMAL}\n[[claims]]\nseed = \"s\"\ntext = \"c\"\ntuner = \"drs\"\nover = \"stock\"\npublished = 2.0\nholds_at_least = 1.0\n"
    );
    assert!(err(&claim).contains("tuner \"drs\""));
}

#[test]
fn every_builtin_scenario_loads_in_both_modes() {
    let names = lab::builtin_names();
    assert!(names.contains(&"demo".to_owned()), "{names:?}");
    for name in names {
        for quick in [false, true] {
            let s = ScenarioFile::load(&name, quick)
                .unwrap_or_else(|e| panic!("{name} quick={quick}: {e:#}"));
            assert!(!lab::plan(&[s]).is_empty());
        }
    }
}

#[test]
fn the_plan_alternates_tuners_and_names_each_run_its_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("mini.toml");
    std::fs::write(&file, MINIMAL).expect("write");
    let s = ScenarioFile::load(&file.to_string_lossy(), false).expect("loads");
    let plan = lab::plan(&[s]);
    assert_eq!(plan.len(), 2 * 2 * 2);
    let order: Vec<String> = plan
        .iter()
        .map(|p| format!("{}:{}:{}", p.rep, p.size.human_iec(), p.tuning))
        .collect();
    assert_eq!(
        order[..4],
        [
            "1:1 MiB:stock",
            "1:1 MiB:auto",
            "1:8 MiB:stock",
            "1:8 MiB:auto"
        ]
    );
    assert_eq!(
        plan[1].dir,
        Path::new("mini").join("path").join("auto-1-MiB-rep1")
    );
    // The record of a run is found again by what it was asked.
    let mut r = sample_record();
    r.scenario = Some("mini".into());
    r.variant = Some("path".into());
    r.tuner = "auto".into();
    r.rep = 1;
    r.size_bytes = 1 << 20;
    assert!(plan[1].is(&r));
    assert!(!plan[0].is(&r));
}

#[test]
fn a_variant_lays_its_host_settings_over_the_path() {
    let text = format!(
        "{MINIMAL}\n[[variants]]\nname = \"default\"\n[[variants]]\nname = \"tuned\"\n[variants.left]\ntcp_rmem = \"4096 131072 6000000\"\n"
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let s = load(dir.path(), &text).expect("loads");
    assert_eq!(s.paths.len(), 2);
    assert!(s.paths[1].1.text.contains("6000000"));
    assert!(!s.paths[0].1.text.contains("6000000"));
    let bad = text.replace("tcp_rmem = \"4096 131072 6000000\"", "tcp_rmem = \"lots\"");
    let e = format!("{:#}", load(dir.path(), &bad).expect_err("refused"));
    assert!(e.contains("variant \"tuned\""), "{e}");
}

#[test]
fn a_variant_lays_path_keys_and_server_options_over_the_path() {
    let text = format!(
        "{MINIMAL}\n[[variants]]\nname = \"12 ms\"\nserver_args = [\"--write-size\", \"1024\"]\n[variants.path]\ndelay = \"6ms\"\n[[variants.path.cross]]\nkind = \"udp\"\nrate = \"50Mbit\"\n"
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let s = load(dir.path(), &text).expect("loads");
    let (variant, path) = &s.paths[0];
    assert_eq!(variant.server_args, ["--write-size", "1024"]);
    assert_eq!(path.spec.rtt(), std::time::Duration::from_millis(12));
    assert_eq!(path.spec.cross.len(), 1);
    // Host tables are the variant's own, not path keys.
    let bad = text.replace("delay = \"6ms\"", "left = { congestion = \"reno\" }");
    let e = format!("{:#}", load(dir.path(), &bad).expect_err("refused"));
    assert!(
        e.contains("variant \"12 ms\"") && e.contains("\"left\""),
        "{e}"
    );
}

#[test]
fn a_tuner_pair_and_a_bdp_sized_buffer_resolve_on_each_variant() {
    let text = r#"
title = "t"
path = "lfn"
tuners = ["static:1bdp", { label = "xp default", server = "static:8KB", client = "static:17520" }]
sizes = ["1MiB"]
reps = 1
plots = ["goodput-by-tuner"]
[[variants]]
name = "2.5 ms"
path = { delay = "1.25ms", rate = "100Mbit" }
[[variants]]
name = "12 ms"
path = { delay = "6ms", rate = "100Mbit" }
[[claims]]
seed = "Windows note"
text = "tuning multiplies the throughput at 12 ms"
tuner = "static:1bdp"
over = "xp default"
variant = "12 ms"
published = 8.3
holds_at_least = 3.0
"#;
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("w.toml");
    std::fs::write(&file, text).expect("write");
    let s = ScenarioFile::load(&file.to_string_lossy(), false).expect("loads");
    let plan = lab::plan(&[s]);
    let tunes: Vec<(String, String, String)> = plan
        .iter()
        .map(|p| {
            (
                p.tuning.label.clone(),
                p.tuning.server.to_string(),
                p.tuning.client.to_string(),
            )
        })
        .collect();
    // 100 Mbit/s x 2.5 ms = 31,250 bytes: 22 segments of 1,448 = 31,856;
    // x 12 ms = 150,000: 104 segments = 150,592 (the Windows note, section 7.1).
    let sized = |b: u64| rightsize_tune::TunerSpec::Static(Bytes(b)).to_string();
    assert_eq!(
        tunes,
        [
            ("static:1bdp".into(), sized(31_856), sized(31_856)),
            ("xp default".into(), sized(8_000), sized(17_520)),
            ("static:1bdp".into(), sized(150_592), sized(150_592)),
            ("xp default".into(), sized(8_000), sized(17_520)),
        ]
    );
    assert_eq!(
        plan[0].dir,
        Path::new("w").join("2-5-ms").join("static-1bdp-1-MiB-rep1")
    );
    assert!(err(&text.replace("variant = \"12 ms\"", "variant = \"40 ms\"")).contains("\"40 ms\""));
    assert!(err(&text.replace("\"static:1bdp\",", "\"static:0bdp\",")).contains("0.01 to 100"));
    assert!(
        err(&text.replace("label = \"xp default\"", "label = \"static:1bdp\""))
            .contains("named twice")
    );
}

fn sample_record() -> crate::run::record::RunRecord {
    serde_json::from_value(serde_json::json!({
        "kind": "run", "invocation": "1-2", "argv": [], "bench_version": "0.1.0",
        "rightsize_version": null, "kernel": "", "started_unix_s": 0, "path": "lfn",
        "spec_file": "", "tuner": "stock", "rep": 1, "size_bytes": 1,
        "shortened_from_bytes": null, "run_dir": "", "wall_seconds": 0.0,
        "path_exit_code": null, "valid": true, "failed_checks": [], "error": null,
        "goodput_bps": null, "transfer_seconds": null, "bytes": null,
        "peak_rcvbuf_bytes": null, "mean_rcvbuf_bytes": null, "peak_sndbuf_bytes": null,
        "bytes_retrans": null, "retrans_segs": null, "client_tuner": null, "fidelity": null
    }))
    .expect("a record")
}
