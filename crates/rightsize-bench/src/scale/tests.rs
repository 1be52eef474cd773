//! The scale benchmark's flags, scripts, figures and report, on synthetic
//! files and figures.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use rightsize_tune::units::Bytes;

use super::figures::{
    ClientRun, RunFigures, Sample, jain, mean_while_busy, parse_samples, parse_timing, run_figures,
};
use super::options::{self, Client};
use super::report::{self, BudgetOutcome, BudgetSummary, TunerSummary};
use super::scripts::{self, RunFiles};
use super::{bytes_of, client_argv};

fn args(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_owned).collect()
}

fn error_of(s: &str) -> String {
    options::parse(&args(s))
        .err()
        .map_or(String::new(), |e| format!("{e:#}"))
}

#[test]
fn defaults_are_sixteen_clients_and_smoke_is_small() {
    let o = options::parse(&[]).expect("defaults");
    assert_eq!((o.clients, o.size, o.reps), (16, Bytes(32 << 20), 3));
    assert_eq!(
        o.tuners.iter().map(ToString::to_string).collect::<Vec<_>>(),
        ["auto", "kernel"]
    );
    assert_eq!(
        (o.budget, o.client, o.json, o.smoke),
        (None, Client::Rightsize, false, false)
    );
    let s = options::parse(&args("--smoke")).expect("smoke");
    assert_eq!(
        (s.clients, s.size, s.reps, s.smoke),
        (4, Bytes(4 << 20), 1, true)
    );
    let o = options::parse(&args(
        "--clients=64 --json --smoke --size 8MiB --budget 10MB --client curl --reps 2 --tuners kernel",
    ))
    .expect("parses");
    assert_eq!((o.clients, o.size, o.reps), (64, Bytes(8 << 20), 2));
    assert_eq!(
        (o.budget, o.client, o.json),
        (Some(Bytes(10_000_000)), Client::Curl, true)
    );
}

#[test]
fn bad_flags_quote_what_was_given() {
    assert!(error_of("--clients x").contains("\"x\""));
    assert!(error_of("--clients 0").contains("\"0\""));
    assert!(error_of("--client wget").contains("\"wget\""));
    assert!(error_of("--client wget").contains("globus-url-copy"));
    assert!(error_of("--budget 0").contains("\"0\""));
    assert!(error_of("--size lots").contains("\"lots\""));
    assert!(error_of("--tuners fast").contains("\"fast\""));
    assert!(error_of("--paths lfn").contains("\"--paths\""));
    assert!(error_of("--clients").contains("--clients needs a value"));
}

#[test]
fn jain_is_one_when_equal_and_one_over_n_when_one_has_all() {
    assert_eq!(jain(&[5.0, 5.0, 5.0, 5.0]), Some(1.0));
    assert_eq!(jain(&[8.0, 0.0, 0.0, 0.0]), Some(0.25));
    let j = jain(&[1.0, 2.0]).unwrap_or(0.0);
    assert!((j - 0.9).abs() < 1e-12, "{j}");
    assert_eq!(jain(&[]), None);
    assert_eq!(jain(&[0.0, 0.0]), None);
}

#[test]
fn samples_parse_and_a_cut_last_line_is_left_out() {
    let text = "1000 2621440 2\n1100 5242880 4\n\n1200 52";
    let s = parse_samples(text).expect("parses");
    assert_eq!(
        s,
        [
            Sample {
                at_ns: 1000,
                sum_bytes: 2_621_440,
                sockets: 2
            },
            Sample {
                at_ns: 1100,
                sum_bytes: 5_242_880,
                sockets: 4
            }
        ]
    );
    assert_eq!(parse_samples(""), Ok(Vec::new()));
    let e = parse_samples("1000 rb131072 1\n").expect_err("not numbers");
    assert!(e.contains("\"1000 rb131072 1\""), "{e}");
    assert!(parse_samples("1000 5\n").is_err());
    assert_eq!(parse_timing("10 20 0\n"), Ok((10, 20, 0)));
    assert!(parse_timing("10 20").is_err_and(|e| e.contains("\"10 20\"")));
    assert_eq!(scripts::parse_server_exit("2 123\n"), Some((2, 123)));
    assert_eq!(scripts::parse_server_exit(""), None);
}

/// The sampler's awk against `ss -tmnH` output as Linux 6.x prints it
/// (an `ss` on PATH that prints it), run for a few samples.
#[test]
fn the_sampler_sums_the_skmem_field_of_every_socket() {
    let dir = std::env::temp_dir().join(format!("rightsize-bench-sampler-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let ss = dir.join("ss");
    std::fs::write(
        &ss,
        "#!/bin/sh\ncat <<'EOF'\n\
         0      0      10.0.0.1:50000 10.0.0.2:40000\n\
         \t skmem:(r0,rb131072,t0,tb2621440,f0,w0,o0,bl0,d0)\n\
         0      0      10.0.0.1:50001 10.0.0.2:40001\n\
         \t skmem:(r0,rb262144,t0,tb1048576,f0,w0,o0,bl0,d0)\n\
         EOF\n",
    )
    .expect("fake ss");
    std::fs::set_permissions(&ss, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let path = format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run = |fields: &[&str]| {
        let out = Command::new("timeout")
            .args(["0.35", "bash", "-c", &scripts::sampler(fields, 2121)])
            .env("PATH", &path)
            .output()
            .expect("bash runs");
        parse_samples(&String::from_utf8_lossy(&out.stdout)).expect("sampler output parses")
    };
    let rb = run(&["rb"]);
    let tb = run(&["tb"]);
    let both = run(&["rb", "tb"]);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!rb.is_empty() && !tb.is_empty());
    assert!(
        rb.iter().all(|s| s.sum_bytes == 393_216 && s.sockets == 2),
        "{rb:?}"
    );
    assert!(tb.iter().all(|s| s.sum_bytes == 3_670_016), "{tb:?}");
    assert!(both.iter().all(|s| s.sum_bytes == 4_063_232), "{both:?}");
}

#[test]
fn the_scripts_take_their_files_and_leave_the_control_port_out() {
    let files = RunFiles::in_dir(Path::new("/r/auto-rep1"));
    let serve = args("/bin/rightsize serve --tune auto");
    let argv = scripts::server_argv(&files, 2121, &serve);
    assert_eq!(argv[..2], ["bash", "-c"]);
    assert!(argv[2].contains("not sport = :2121 and not dport = :2121"));
    assert!(argv[2].contains("/^(tb)[0-9]+$/") && argv[2].contains("/^(rb|tb)[0-9]+$/"));
    assert_eq!(
        argv[4..],
        args(
            "/r/auto-rep1/sndbuf.samples /r/auto-rep1/serverbuf.samples /r/auto-rep1/server.log /r/auto-rep1/server.rc /bin/rightsize serve --tune auto"
        )
    );
    let client = client_argv(
        Client::Rightsize,
        "/bin/rightsize",
        "kernel",
        "ftp://right:2121/.rightsize/zero/1",
    );
    assert_eq!(
        client,
        args(
            "/bin/rightsize get ftp://right:2121/.rightsize/zero/1 -o /dev/null --json --tune kernel"
        )
    );
    let argv = scripts::clients_argv(&files, "right", 2121, 16, &client);
    assert!(argv[2].contains("/^(rb)[0-9]+$/"));
    assert_eq!(
        argv[4..9],
        args("right 2121 /r/auto-rep1 16 /r/auto-rep1/rcvbuf.samples")
    );
    assert_eq!(argv[9..], client[..]);
    assert_eq!(files.client(3).0, Path::new("/r/auto-rep1/client-3.time"));
}

#[test]
fn each_client_says_its_bytes_its_own_way() {
    assert_eq!(
        bytes_of(Client::Rightsize, "{\"bytes\": 42, \"x\": 1}"),
        Ok(Some(42))
    );
    assert_eq!(bytes_of(Client::Curl, "33554432"), Ok(Some(33_554_432)));
    assert_eq!(bytes_of(Client::Globus, ""), Ok(None));
    assert!(bytes_of(Client::Rightsize, "").is_err());
    assert!(bytes_of(Client::Curl, "curl: (7) Failed").is_err_and(|e| e.contains("Failed")));
}

fn sample(sum_bytes: u64) -> Sample {
    Sample {
        at_ns: 0,
        sum_bytes,
        sockets: 1,
    }
}

#[test]
fn the_mean_leaves_out_samples_of_no_connection() {
    let idle = Sample {
        sockets: 0,
        ..sample(0)
    };
    assert_eq!(
        mean_while_busy(&[idle, sample(4), sample(8), idle]),
        Some(6.0)
    );
    assert_eq!(mean_while_busy(&[idle]), None);
}

#[test]
fn run_figures_need_every_client_and_both_samplers() {
    let mib = Bytes(1 << 20);
    let c = |start_ns: u64, end_ns: u64| ClientRun {
        start_ns,
        end_ns,
        rc: 0,
        bytes: Some(1 << 20),
    };
    let clients = [c(0, 1_000_000_000), c(0, 2_000_000_000)];
    let f = run_figures(&clients, mib, &[sample(5), sample(9)], &[sample(3)]).expect("figures");
    // 2 MiB over 2 s; goodputs 1 MiB/s and 0.5 MiB/s.
    assert!((f.aggregate_goodput_bps - 8.0 * 1_048_576.0).abs() < 1e-6);
    assert!((f.jain_fairness - 0.9).abs() < 1e-12);
    assert_eq!(
        (f.sum_peak_rcvbuf_bytes, f.sum_peak_sndbuf_bytes, f.samples),
        (9, 3, (2, 1))
    );
    let failed = [c(0, 1), ClientRun { rc: 1, ..c(0, 1) }];
    assert!(
        run_figures(&failed, mib, &[sample(1)], &[sample(1)])
            .is_err_and(|e| e.contains("client 2"))
    );
    let short = [ClientRun {
        bytes: Some(5),
        ..c(0, 1)
    }];
    assert!(
        run_figures(&short, mib, &[sample(1)], &[sample(1)]).is_err_and(|e| e.contains("5 bytes"))
    );
    assert!(run_figures(&[c(0, 1)], mib, &[sample(1)], &[]).is_err_and(|e| e.contains("sampler")));
    assert!(run_figures(&[], mib, &[sample(1)], &[sample(1)]).is_err());
    let idle = Sample {
        sockets: 0,
        ..sample(0)
    };
    assert!(
        run_figures(&[c(0, 1)], mib, &[sample(1)], &[idle])
            .is_err_and(|e| e.contains("no data connection"))
    );
    // globus-url-copy says no bytes: its exit code counts.
    let silent = [ClientRun {
        bytes: None,
        ..c(0, 1)
    }];
    assert!(run_figures(&silent, mib, &[sample(1)], &[sample(1)]).is_ok());
}

fn figures(goodput: f64, rcv: u64, snd: u64) -> RunFigures {
    RunFigures {
        aggregate_goodput_bps: goodput,
        jain_fairness: 0.95,
        sum_peak_rcvbuf_bytes: rcv,
        sum_peak_sndbuf_bytes: snd,
        sum_mean_rcvbuf_bytes: rcv as f64 / 2.0,
        sum_mean_sndbuf_bytes: snd as f64 / 2.0,
        samples: (10, 10),
    }
}

fn summaries() -> Vec<(String, TunerSummary)> {
    vec![
        (
            "auto".to_owned(),
            TunerSummary::of(&[Some(figures(190e6, 8_000_000, 9_000_000)), None]),
        ),
        (
            "kernel".to_owned(),
            TunerSummary::of(&[Some(figures(195e6, 60_000_000, 30_000_000))]),
        ),
    ]
}

#[test]
fn the_json_has_the_documented_shape() {
    let budget = BudgetSummary::of(
        10_000_000,
        &[Some((figures(180e6, 1, 9_500_000), vec![1, 9_500_000]))],
    );
    let v = report::json_report(&summaries(), &budget);
    let auto = &v["tuners"]["auto"];
    assert_eq!(auto["aggregate_goodput_bps"].as_f64(), Some(190e6));
    assert_eq!(auto["jain_fairness"].as_f64(), Some(0.95));
    assert_eq!(auto["sum_peak_rcvbuf_bytes"].as_u64(), Some(8_000_000));
    assert_eq!(auto["sum_peak_sndbuf_bytes"].as_u64(), Some(9_000_000));
    assert_eq!(auto["sum_mean_rcvbuf_bytes"].as_u64(), Some(4_000_000));
    assert_eq!(
        (auto["valid_runs"].as_u64(), auto["runs"].as_u64()),
        (Some(1), Some(2))
    );
    assert!(v["tuners"]["kernel"]["aggregate_goodput_bps"].is_f64());
    let b = &v["budget"];
    assert_eq!(b["bytes"].as_u64(), Some(10_000_000));
    assert_eq!(b["sum_peak_bytes"].as_u64(), Some(9_500_000));
    assert_eq!(b["aggregate_goodput_bps"].as_f64(), Some(180e6));
    assert_eq!(b["held"].as_bool(), Some(true));
    let not_run = BudgetSummary {
        bytes: 10_000_000,
        outcome: BudgetOutcome::NotRun("rightsize serve has no --buffer-budget".to_owned()),
    };
    let v = report::json_report(&summaries(), &not_run);
    assert!(v["budget"]["held"].is_null() && v["budget"]["sum_peak_bytes"].is_null());
    assert_eq!(
        v["budget"]["not_run"].as_str(),
        Some("rightsize serve has no --buffer-budget")
    );
}

#[test]
fn goals_judge_auto_against_kernel_and_the_budget() {
    let over = BudgetSummary::of(
        10_000_000,
        &[Some((
            figures(180e6, 1, 9_000_000),
            vec![9_000_000, 10_000_001],
        ))],
    );
    assert_eq!(
        over.outcome,
        BudgetOutcome::Ran {
            sum_peak_bytes: Some(10_000_001),
            aggregate_goodput_bps: Some(180e6),
            held: Some(false)
        }
    );
    let g = report::goals(&summaries(), &over);
    let met: Vec<bool> = g.iter().map(|(_, m)| *m).collect();
    // goodput 0.974x, fairness 0.95, receive 0.133x, send 0.3x; exceeded;
    // 180/190 = 0.947x.
    assert_eq!(met, [true, true, true, true, false, true], "{g:?}");
    let not_run = BudgetSummary {
        bytes: 10_000_000,
        outcome: BudgetOutcome::NotRun("rightsize serve has no --buffer-budget".to_owned()),
    };
    let g = report::goals(&summaries(), &not_run);
    assert_eq!(g.len(), 6);
    for (line, met) in &g[4..] {
        assert!(!met);
        assert!(
            line.contains("not run (rightsize serve has no --buffer-budget), NOT met"),
            "{line}"
        );
    }
    let none = BudgetSummary::of(10_000_000, &[None]);
    let g = report::goals(&[], &none);
    assert!(g.iter().all(|(_, m)| !m));
}

/// A `rightsize` that answers `serve --buffer-budget N --help` as a
/// build without the flag does (clap's exit 2), one that takes it, and
/// one that rejects its value.
#[test]
fn a_serve_without_buffer_budget_is_said_so() {
    let dir = std::env::temp_dir().join(format!("rightsize-bench-budget-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let fake = |name: &str, body: &str| {
        let bin = dir.join(name);
        std::fs::write(&bin, format!("#!/bin/sh\n{body}\n")).expect("fake rightsize");
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        bin
    };
    let without = fake(
        "without",
        "echo \"error: unexpected argument '--buffer-budget' found\" >&2; exit 2",
    );
    let with = fake("with", "echo usage; exit 0");
    let bad = fake(
        "bad",
        "echo \"error: invalid value '0' for '--buffer-budget'\" >&2; exit 2",
    );
    let budget = Bytes(10_000_000);
    let said = [
        super::serve_refuses_budget(&without, budget),
        super::serve_refuses_budget(&with, budget),
        super::serve_refuses_budget(&bad, budget),
        super::serve_refuses_budget(&dir.join("missing"), budget),
    ];
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(
        said[0].as_deref(),
        Some("rightsize serve has no --buffer-budget")
    );
    assert_eq!(said[1], None);
    assert!(
        said[2]
            .as_deref()
            .is_some_and(|w| w.contains("10000000") && w.contains("invalid value")),
        "{said:?}"
    );
    assert!(said[3].as_deref().is_some_and(|w| w.contains("cannot run")));
}

/// A smoke run fails on missing data: a client without its timing file,
/// one that failed (with what it printed), one without its byte count.
#[test]
fn missing_or_failed_clients_are_errors_that_say_which() {
    let dir = std::env::temp_dir().join(format!("rightsize-bench-clients-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let files = RunFiles::in_dir(&dir);
    let write = |i: usize, time: &str, out: &str, err: &str| {
        let (t, o, e) = files.client(i);
        for (path, text) in [(t, time), (o, out), (e, err)] {
            std::fs::write(path, text).expect("client file");
        }
    };
    write(1, "10 20 0\n", "{\"bytes\": 7}", "");
    let one = super::read_clients(&files, 1, Client::Rightsize);
    let two = super::read_clients(&files, 2, Client::Rightsize);
    write(2, "10 30 1\n", "", "rightsize: 530 login refused\n");
    let failed = super::read_clients(&files, 2, Client::Rightsize);
    write(2, "10 30 0\n", "", "");
    let silent = super::read_clients(&files, 2, Client::Curl);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(
        one,
        Ok(vec![ClientRun {
            start_ns: 10,
            end_ns: 20,
            rc: 0,
            bytes: Some(7)
        }])
    );
    assert!(two.is_err_and(|e| e.starts_with("client 2 left no timing")));
    assert!(failed.is_err_and(|e| e == "client 2 exited with 1: rightsize: 530 login refused"));
    assert!(silent.is_err_and(|e| e.starts_with("client 1: no byte count")));
}
