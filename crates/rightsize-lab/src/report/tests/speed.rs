//! How long the report of a full lab run takes: 500 runs with telemetry
//! files of about 1.5 MB each. Ignored by default (it writes ~2 MB and
//! makes 500 hard links); run it in release mode:
//! `cargo test --release -p rightsize-lab -- --ignored report_of_500_runs`.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;
use std::time::Instant;

use crate::layout::{LAB_JSON, LabInfo, RUNS_JSONL};
use crate::report::fixture::record;
use crate::report::*;
use crate::scenario::PLOTS;

const TUNERS: [&str; 5] = ["auto", "kernel", "stock", "static:16MiB", "static:64MiB"];
const SIZES: [u64; 5] = [1 << 20, 16 << 20, 256 << 20, 1 << 30, 4 << 30];
const REPS: usize = 10;
const SAMPLES: usize = 1500;

/// A receiver's telemetry of `SAMPLES` samples, each after a decision
/// line, ramping to `top_mbps`.
fn client_telemetry(top_mbps: f64) -> String {
    let mut t = String::from("{\"kind\":\"header\",\"version\":\"0.1.0\",\"role\":\"client\"}\n");
    for i in 0..SAMPLES {
        let t_s = 0.1 * (i + 1) as f64;
        let g = top_mbps * 1e6 * (i as f64 / SAMPLES as f64 * 2.0).min(1.0);
        let _ = writeln!(
            t,
            "{{\"kind\":\"decision\",\"t_s\":{t_s},\"tuner\":\"auto\",\"event\":\"sample\",\"state\":\"startup\",\"reason\":\"the kernel replaced the clamp 64 KiB with 70.83 KiB (0.625 x the buffer): put back; memory 54.4 KiB\",\"requested_bytes\":65536,\"actions\":[{{\"action\":\"set_rcvbuf\",\"requested_bytes\":55706,\"applied_bytes\":111412}}]}}"
        );
        let _ = writeln!(
            t,
            "{{\"kind\":\"sample\",\"t_s\":{t_s},\"bytes\":{},\"interval_goodput_bps\":{g:.0},\"rcvbuf_bytes\":{},\"sndbuf_bytes\":46080,\"window_clamp_bytes\":65536,\"rtt_us\":100289,\"rttvar_us\":50144,\"min_rtt_us\":100289,\"snd_cwnd_segs\":10,\"snd_cwnd_bytes\":14480,\"delivery_rate_bps\":0,\"busy_time_us\":0,\"rwnd_limited_us\":0,\"sndbuf_limited_us\":0,\"total_retrans_segs\":0,\"bytes_retrans\":0,\"rcv_rtt_us\":106000,\"rcv_space_bytes\":14480,\"rcv_wnd_bytes\":71680,\"snd_wnd_bytes\":65536,\"notsent_bytes\":0}}",
            i * 14480,
            111_412 + i * 3000
        );
    }
    t
}

fn server_telemetry() -> String {
    let mut t = String::new();
    for i in 0..SAMPLES {
        let _ = writeln!(
            t,
            "{{\"kind\":\"sample\",\"t_s\":{},\"bytes\":0,\"interval_goodput_bps\":0,\"rcvbuf_bytes\":131072,\"sndbuf_bytes\":46080,\"window_clamp_bytes\":64088,\"rtt_us\":{},\"rttvar_us\":50180,\"min_rtt_us\":100360,\"snd_cwnd_segs\":10,\"snd_cwnd_bytes\":14480,\"delivery_rate_bps\":0,\"busy_time_us\":96000,\"rwnd_limited_us\":0,\"sndbuf_limited_us\":0,\"total_retrans_segs\":0,\"bytes_retrans\":0,\"rcv_rtt_us\":0,\"rcv_space_bytes\":14480,\"rcv_wnd_bytes\":65536,\"snd_wnd_bytes\":64512,\"notsent_bytes\":31856}}",
            0.1 * (i + 1) as f64,
            100_000 + (i % 50) * 400
        );
    }
    t
}

fn big_dir(dir: &Path) {
    let lab = LabInfo::new("6.18.44".into(), 1_795_326_063, false, Vec::new());
    fs::write(
        dir.join(LAB_JSON),
        serde_json::to_string(&lab).expect("json"),
    )
    .expect("write");
    fs::create_dir_all(dir.join("scenarios")).expect("mkdir");
    let plots: Vec<String> = PLOTS.iter().map(|p| format!("\"{p}\"")).collect();
    let tuners: Vec<String> = TUNERS.iter().map(|t| format!("\"{t}\"")).collect();
    let scenario = format!(
        "title = \"Big\"\npath = \"lfn\"\ntuners = [{}]\nsizes = [\"1MiB\", \"16MiB\", \"256MiB\", \"1GiB\", \"4GiB\"]\nreps = {REPS}\nplots = [{}]\n\n[[variants]]\nname = \"default\"\n\n[[variants]]\nname = \"tuned\"\n",
        tuners.join(", "),
        plots.join(", ")
    );
    fs::write(dir.join("scenarios/big.toml"), scenario).expect("write");
    let reaches = dir.join("reaches.jsonl");
    let short = dir.join("short.jsonl");
    let server = dir.join("server.jsonl");
    fs::write(&reaches, client_telemetry(190.0)).expect("write");
    fs::write(&short, client_telemetry(120.0)).expect("write");
    fs::write(&server, server_telemetry()).expect("write");
    let mut lines = String::new();
    for variant in ["default", "tuned"] {
        for (ti, tuner) in TUNERS.iter().enumerate() {
            for size in SIZES {
                for rep in 1..=REPS {
                    let mut r = record(tuner, size, rep, 100.0 + (ti * 10 + rep) as f64);
                    r.scenario = Some("big".into());
                    r.variant = Some(variant.into());
                    r.run_dir =
                        format!("big/{variant}/{}-{size}-rep{rep}", tuner.replace(':', "-"));
                    r.valid = rep != 3;
                    let run_dir = dir.join(&r.run_dir);
                    fs::create_dir_all(&run_dir).expect("mkdir");
                    let client = if ti % 2 == 0 { &reaches } else { &short };
                    fs::hard_link(client, run_dir.join("client.jsonl")).expect("link");
                    fs::hard_link(&server, run_dir.join("1-10.1.1.1-2-1-retr.jsonl"))
                        .expect("link");
                    lines.push_str(&serde_json::to_string(&r).expect("json"));
                    lines.push('\n');
                }
            }
        }
    }
    fs::write(dir.join(RUNS_JSONL), lines).expect("write");
}

#[test]
#[ignore = "a timing: run in release mode"]
fn report_of_500_runs() {
    let tmp = tempfile::tempdir().expect("tempdir");
    big_dir(tmp.path());
    let t0 = Instant::now();
    let files = make_report(tmp.path()).expect("report");
    let took = t0.elapsed();
    let html = fs::metadata(&files.index_html).expect("html").len();
    eprintln!(
        "report of 500 runs: {:.2} s, {} files, index.html {html} bytes",
        took.as_secs_f64(),
        files.all().len()
    );
    assert_eq!(files.plots.len(), 2 * PLOTS.len());
    if !cfg!(debug_assertions) {
        assert!(took.as_secs_f64() < 10.0, "{took:?}");
    }
    if let Ok(keep) = std::env::var("RIGHTSIZE_REPORT_KEEP") {
        let keep = Path::new(&keep);
        fs::create_dir_all(keep).expect("mkdir");
        for f in files.all() {
            let name = f.file_name().expect("file name");
            fs::copy(f, keep.join(name)).expect("copy");
        }
    }
}
