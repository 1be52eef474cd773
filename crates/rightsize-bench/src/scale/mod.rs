//! `rightsize-bench scale`: a server for many clients. N clients on the
//! left host of one emulated path (`bench/paths/lfn.toml`, 200 Mbit/s x
//! 100 ms) receive at once from one `rightsize serve` on the right host,
//! each run on a fresh `rightsize path run` (with the path's checks). Per
//! tuner (the server's `--tune`, and the clients' when they are rightsize)
//! it measures the aggregate goodput (all bytes over the time from the
//! first client's start to the last one's end), Jain's fairness over the
//! clients' own goodputs, and the peaks (and means) of the summed
//! buffers of both hosts' data connections, sampled every 100 ms with `ss
//! -tm` (the sum is sampled, not the connections' own peaks added): the
//! clients' receive buffers and the server's send buffers. Then `auto` with
//! `rightsize serve --buffer-budget` (4 x the BDP unless `--budget`):
//! whether every sample stayed within it, and the goodput it cost.
//!
//! Each run is one line of `DIR/runs.jsonl`; the scripts' files stay in
//! the run's directory ([`scripts`]), the figures are made from them
//! ([`figures`]), the summary from the figures ([`report`]).

mod figures;
mod options;
mod report;
mod scripts;
#[cfg(test)]
mod tests;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::Context as _;
use rightsize_lab::run::paths::LoadedPath;
use rightsize_lab::run::record::fidelity_of;
use rightsize_lab::run::runner::{append_line, dir_name, unix_seconds};
use rightsize_tune::units::Bytes;
use serde_json::{Value, json};

use crate::emulated::{Bench, checks_failed, path_heading};
use crate::procs::tail;
use figures::{ClientRun, RunFigures, parse_samples, parse_timing, run_figures};
use options::{BUDGET_BDPS, Client, Options};
use report::{BudgetOutcome, BudgetSummary, TunerSummary};

pub const USAGE: &str = "\
usage: rightsize-bench scale [--clients 16] [--size 32MiB] [--tuners auto,kernel] [--budget SIZE]
                             [--client rightsize|curl|globus-url-copy] [--reps 3] [--out DIR]
                             [--json] [--smoke]

Runs, as root, N clients at once on the left host of one emulated path (bench/paths/lfn.toml),
each receiving SIZE from one rightsize serve --tune T on the right host (the clients are
rightsize get --tune T, or curl or globus-url-copy, which Linux autotunes), every run on a fresh
rightsize path run, the tuners alternating. Per tuner: the aggregate goodput (all bytes over the
first start to the last end), Jain's fairness over the clients' goodputs, the clients' summed
receive buffers and the server's summed send buffers, peak and mean (the sums sampled every
100 ms with ss -tm, control connections left out). Then auto with serve --buffer-budget SIZE (default
4 x the path's BDP): whether every sample held within it, and its goodput against auto's.
Prints each run, the medians and the goals (auto against kernel: goodput >= 0.95x, fairness
>= 0.9, receive buffers <= 0.25x, send buffers <= 0.5x; the budget held, goodput >= 0.9x).
--json: one object on stdout, {\"tuners\": {T: {...}}, \"budget\": {...}}; the lines go to stderr.
Every run is a line of DIR/runs.jsonl (default: target/bench-results/scale-UNIXTIME); the
server's telemetry and decisions, one file per data connection, are in DIR/RUN/server-telemetry.
Exits 1 if a run failed or a goal is missed.
--smoke: 4 clients of 4 MiB, 1 repetition: checks that everything works (not judged).";

/// The path every run is on.
const PATH: &str = "lfn";

/// The server's control port on the right host.
const PORT: u16 = rightsize_lab::run::peer::PORT;

/// The tuner of the budget run.
const BUDGET_TUNER: &str = report::JUDGED;

/// Where the lines people read go: stdout, or stderr under `--json`.
#[derive(Debug, Clone, Copy)]
struct Say {
    json: bool,
}

impl Say {
    fn line(self, text: &str) {
        if self.json {
            eprintln!("{text}");
        } else {
            println!("{text}");
        }
    }
}

/// One run to make: the tuner, the budget passed to serve, which
/// repetition.
struct RunSpec<'a> {
    tuner: &'a str,
    budget: Option<Bytes>,
    rep: usize,
}

/// What one run left: its record (a line of runs.jsonl) and, when it
/// counts, its figures and the server's sampled sums of both buffers of
/// its data connections (what `--buffer-budget` bounds).
struct RunResult {
    record: Value,
    figures: Option<(RunFigures, Vec<u64>)>,
}

/// Runs the benchmark; `Ok(false)` if a run failed or, unless `--smoke`,
/// a goal is missed.
pub fn run(args: &[String]) -> anyhow::Result<bool> {
    let o = options::parse(args).context(crate::flags::BadUsage)?;
    let say = Say { json: o.json };
    let rightsize = Bench::preflight()?;
    let path = LoadedPath::load(PATH)?;
    let bench = Bench::start("scale", rightsize, o.out.as_deref())?;
    let root = bench.out.join("root");
    fs::create_dir_all(&root)?;
    for d in [&bench.out, &root] {
        fs::set_permissions(d, fs::Permissions::from_mode(0o755))?;
    }
    let bdp = path.facts().bdp_bytes;
    let budget = o
        .budget
        .unwrap_or(Bytes((BUDGET_BDPS * bdp).round() as u64));
    say.line(&format!(
        "rightsize-bench scale: {} {} client(s) x {} each, tuners {}, {} repetition(s); kernel {}",
        o.clients,
        o.client.name(),
        o.size.human_iec(),
        o.tuners
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        o.reps,
        bench.kernel
    ));
    say.line(&path_heading(PATH, &path));
    say.line(&format!("runs: {}", bench.runs_file.display()));
    let refused = serve_refuses_budget(&bench.rightsize, budget);
    if let Some(why) = &refused {
        say.line(&format!("budget run: not run: {why}"));
    }
    let tuners: Vec<String> = o.tuners.iter().map(ToString::to_string).collect();
    let mut by_tuner: Vec<Vec<Option<RunFigures>>> = vec![Vec::new(); tuners.len()];
    let mut budgeted: Vec<Option<(RunFigures, Vec<u64>)>> = Vec::new();
    let mut failed = 0usize;
    for rep in 1..=o.reps {
        let mut specs: Vec<(Option<usize>, RunSpec)> = tuners
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let spec = RunSpec {
                    tuner: t,
                    budget: None,
                    rep,
                };
                (Some(i), spec)
            })
            .collect();
        if refused.is_none() {
            let spec = RunSpec {
                tuner: BUDGET_TUNER,
                budget: Some(budget),
                rep,
            };
            specs.push((None, spec));
        }
        for (i, spec) in specs {
            let result = one_run(&bench, &path, &root, &o, &spec)?;
            say.line(&format!("  {}", run_line(&spec, &result)));
            append_line(&bench.runs_file, &serde_json::to_string(&result.record)?)?;
            if result.figures.is_none() {
                failed += 1;
            }
            match i {
                Some(i) => by_tuner[i].push(result.figures.map(|(f, _)| f)),
                None => budgeted.push(result.figures),
            }
        }
    }
    let summaries: Vec<(String, TunerSummary)> = tuners
        .iter()
        .zip(&by_tuner)
        .map(|(t, runs)| (t.clone(), TunerSummary::of(runs)))
        .collect();
    let budget_summary = match refused {
        Some(why) => BudgetSummary {
            bytes: budget.0,
            outcome: BudgetOutcome::NotRun(why),
        },
        None => BudgetSummary::of(budget.0, &budgeted),
    };
    for line in summary_lines(&summaries, &budget_summary, o.clients) {
        say.line(&line);
    }
    let mut ok = failed == 0;
    if o.smoke {
        say.line(if ok {
            "smoke run: everything ran; the figures of so short a run are not judged"
        } else {
            "smoke run: a run failed (see above)"
        });
    } else {
        say.line("goals:");
        for (line, met) in report::goals(&summaries, &budget_summary) {
            say.line(&line);
            ok &= met;
        }
    }
    if o.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report::json_report(&summaries, &budget_summary))?
        );
    }
    Ok(ok)
}

/// `None` when `rightsize serve` takes `--buffer-budget BYTES`, else why
/// not: asked with `--help` after it, which starts nothing.
fn serve_refuses_budget(rightsize: &Path, budget: Bytes) -> Option<String> {
    let out = Command::new(rightsize)
        .args(["serve", "--buffer-budget", &budget.0.to_string(), "--help"])
        .stdin(Stdio::null())
        .output();
    match out {
        Ok(o) if o.status.success() => None,
        Ok(o) => {
            let stderr = String::from_utf8_lossy(&o.stderr);
            Some(if stderr.contains("unexpected argument") {
                "rightsize serve has no --buffer-budget".to_owned()
            } else {
                format!(
                    "rightsize serve --buffer-budget {} exited with {}: {}",
                    budget.0,
                    o.status,
                    tail(&stderr)
                )
            })
        }
        Err(e) => Some(format!("cannot run {}: {e}", rightsize.display())),
    }
}

/// One run: the path with the server and its sampler on the right host,
/// the clients and theirs on the left.
fn one_run(
    bench: &Bench,
    path: &LoadedPath,
    root: &Path,
    o: &Options,
    spec: &RunSpec,
) -> anyhow::Result<RunResult> {
    let name = match spec.budget {
        Some(_) => format!("{}-budget-rep{}", dir_name(spec.tuner), spec.rep),
        None => format!("{}-rep{}", dir_name(spec.tuner), spec.rep),
    };
    let dir = bench.out.join(name);
    if dir.exists() {
        anyhow::bail!(
            "{} already holds a run; give --out a new directory",
            dir.display()
        );
    }
    fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let files = scripts::RunFiles::in_dir(&dir);
    let rs = bench.rightsize.to_string_lossy().into_owned();
    let mut serve = vec![
        rs.clone(),
        "serve".into(),
        "-q".into(),
        "--listen".into(),
        format!("0.0.0.0:{PORT}"),
        "--root".into(),
        root.to_string_lossy().into_owned(),
        "--tune".into(),
        spec.tuner.to_owned(),
        "--telemetry-dir".into(),
        dir.join("server-telemetry").to_string_lossy().into_owned(),
    ];
    if let Some(b) = spec.budget {
        serve.extend(["--buffer-budget".to_owned(), b.0.to_string()]);
    }
    let spec_file = dir.join("spec.toml");
    fs::write(
        &spec_file,
        path.for_run(
            &scripts::server_argv(&files, PORT, &serve),
            Some(spec.rep as u64),
        )?,
    )?;
    let url = format!("ftp://right:{PORT}/.rightsize/zero/{}", o.size.0);
    let client = client_argv(o.client, &rs, spec.tuner, &url);
    let results = dir.join("path.json");
    let started = unix_seconds();
    let status = Command::new(&bench.rightsize)
        .args(["path", "run"])
        .arg(&spec_file)
        .arg("--results")
        .arg(&results)
        .arg("--")
        .args(scripts::clients_argv(
            &files, "right", PORT, o.clients, &client,
        ))
        .stdout(Stdio::null())
        .stderr(fs::File::create(dir.join("path.log"))?)
        .status()
        .context("cannot run rightsize path run")?;
    let results_json: Value = fs::read_to_string(&results)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    let (valid, failed_checks) = fidelity_of(&results_json);
    let clients = read_clients(&files, o.clients, o.client);
    let read = |p: &Path| fs::read_to_string(p).unwrap_or_default();
    let rcv = parse_samples(&read(&files.rcvbuf_samples));
    let snd = parse_samples(&read(&files.sndbuf_samples));
    let both = parse_samples(&read(&files.server_buffers_samples));
    let figures = (|| -> Result<(RunFigures, Vec<u64>), String> {
        let clients = clients?;
        let (rcv, snd, both) = (rcv?, snd?, both?);
        if both.is_empty() {
            return Err("the server's sampler of both buffers wrote nothing".to_owned());
        }
        if let Some(why) = server_exited_early(&files, &clients) {
            return Err(why);
        }
        let f = run_figures(&clients, o.size, &rcv, &snd)?;
        if valid != Some(true) {
            return Err(checks_failed(status, &failed_checks));
        }
        Ok((f, both.iter().map(|s| s.sum_bytes).collect()))
    })();
    let error = figures.as_ref().err().cloned();
    let f = figures.as_ref().ok().map(|(f, _)| *f);
    let record = bench.record(
        started,
        json!({
        "path": path.name,
        "tuner": spec.tuner,
        "buffer_budget_bytes": spec.budget.map(|b| b.0),
        "client": o.client.name(),
        "clients": o.clients,
        "size_bytes": o.size.0,
        "rep": spec.rep,
        "aggregate_goodput_bps": f.map(|f| f.aggregate_goodput_bps),
        "jain_fairness": f.map(|f| f.jain_fairness),
        "sum_peak_rcvbuf_bytes": f.map(|f| f.sum_peak_rcvbuf_bytes),
        "sum_peak_sndbuf_bytes": f.map(|f| f.sum_peak_sndbuf_bytes),
        "sum_mean_rcvbuf_bytes": f.map(|f| f.sum_mean_rcvbuf_bytes.round() as u64),
        "sum_mean_sndbuf_bytes": f.map(|f| f.sum_mean_sndbuf_bytes.round() as u64),
        "samples": f.map(|f| [f.samples.0, f.samples.1]),
        "fidelity_valid": valid,
        "failed_checks": failed_checks,
        "run_dir": dir,
        "error": error,
        }),
    );
    Ok(RunResult {
        record,
        figures: figures.ok(),
    })
}

/// Each client's command line: `rightsize get` with the tuner under test,
/// or curl or globus-url-copy with nothing that sizes their sockets.
fn client_argv(client: Client, rightsize: &str, tuner: &str, url: &str) -> Vec<String> {
    let parts: Vec<&str> = match client {
        Client::Rightsize => vec![
            rightsize,
            "get",
            url,
            "-o",
            "/dev/null",
            "--json",
            "--tune",
            tuner,
        ],
        Client::Curl => vec![
            "curl",
            "-sS",
            "-o",
            "/dev/null",
            "-w",
            "%{size_download}",
            url,
        ],
        Client::Globus => vec!["globus-url-copy", url, "file:///dev/null"],
    };
    crate::procs::argv(&parts)
}

/// The bytes a client says it received: `rightsize get --json`'s
/// `bytes`, curl's `%{size_download}`; globus-url-copy says nothing
/// (`Ok(None)`, its exit code is all there is).
fn bytes_of(client: Client, stdout: &str) -> Result<Option<u64>, String> {
    let found = match client {
        Client::Rightsize => serde_json::from_str::<Value>(stdout)
            .ok()
            .and_then(|v| v["bytes"].as_u64()),
        Client::Curl => stdout.trim().parse().ok(),
        Client::Globus => return Ok(None),
    };
    found
        .map(Some)
        .ok_or_else(|| format!("no byte count in {:?}", tail(stdout)))
}

/// Every client's files, read; the first that is missing or says too
/// little is the error, with the tail of what the client printed.
fn read_clients(
    files: &scripts::RunFiles,
    n: usize,
    client: Client,
) -> Result<Vec<ClientRun>, String> {
    (1..=n)
        .map(|i| {
            let (timing, out, err) = files.client(i);
            let text = fs::read_to_string(&timing)
                .map_err(|_| format!("client {i} left no timing ({})", timing.display()))?;
            let (start_ns, end_ns, rc) =
                parse_timing(&text).map_err(|e| format!("client {i}: {e}"))?;
            let stderr = fs::read_to_string(&err).unwrap_or_default();
            if rc != 0 {
                return Err(format!("client {i} exited with {rc}: {}", tail(&stderr)));
            }
            let bytes = bytes_of(client, &fs::read_to_string(&out).unwrap_or_default())
                .map_err(|e| format!("client {i}: {e}"))?;
            Ok(ClientRun {
                start_ns,
                end_ns,
                rc,
                bytes,
            })
        })
        .collect()
}

/// Why the run does not count if the server exited before the last client
/// ended (rather than when the path was torn down).
fn server_exited_early(files: &scripts::RunFiles, clients: &[ClientRun]) -> Option<String> {
    let text = fs::read_to_string(&files.server_rc).ok()?;
    let (rc, at_ns) = scripts::parse_server_exit(&text)?;
    let last_end = clients.iter().map(|c| c.end_ns).max().unwrap_or(0);
    (at_ns <= last_end).then(|| {
        format!(
            "the server exited with {rc} during the run: {}",
            tail(&fs::read_to_string(&files.server_log).unwrap_or_default())
        )
    })
}

/// `auto rep 1: aggregate 185.2 Mbit/s, fairness 0.981, ...`, or why the
/// run did not count.
fn run_line(spec: &RunSpec, result: &RunResult) -> String {
    let name = match spec.budget {
        Some(b) => format!("{} --buffer-budget {}", spec.tuner, b.human_si()),
        None => spec.tuner.to_owned(),
    };
    match &result.figures {
        Some((f, _)) => format!(
            "{name} rep {}: aggregate {:.1} Mbit/s, fairness {:.3}, clients' summed receive buffers peak {:.2} MB (mean {:.2}), server's summed send buffers peak {:.2} MB (mean {:.2}); {} and {} samples",
            spec.rep,
            f.aggregate_goodput_bps / 1e6,
            f.jain_fairness,
            f.sum_peak_rcvbuf_bytes as f64 / 1e6,
            f.sum_mean_rcvbuf_bytes / 1e6,
            f.sum_peak_sndbuf_bytes as f64 / 1e6,
            f.sum_mean_sndbuf_bytes / 1e6,
            f.samples.0,
            f.samples.1
        ),
        None => format!(
            "{name} rep {}: not counted: {}",
            spec.rep,
            result.record["error"].as_str().unwrap_or("?")
        ),
    }
}

/// The medians per tuner and the budget run, one line each.
fn summary_lines(
    tuners: &[(String, TunerSummary)],
    budget: &BudgetSummary,
    clients: usize,
) -> Vec<String> {
    let mbps = |v: Option<f64>| v.map_or("-".to_owned(), |b| format!("{:.1} Mbit/s", b / 1e6));
    let mb = |v: Option<f64>| v.map_or("-".to_owned(), |b| format!("{:.2} MB", b / 1e6));
    let mut out = vec![format!("medians ({clients} clients):")];
    for (name, s) in tuners {
        out.push(format!(
            "  {name}: aggregate {}, fairness {}, clients' summed receive buffers peak {} (mean {}), server's summed send buffers peak {} (mean {}); {}/{} runs valid",
            mbps(s.aggregate_goodput_bps),
            s.jain_fairness.map_or("-".to_owned(), |j| format!("{j:.3}")),
            mb(s.sum_peak_rcvbuf_bytes),
            mb(s.sum_mean_rcvbuf_bytes),
            mb(s.sum_peak_sndbuf_bytes),
            mb(s.sum_mean_sndbuf_bytes),
            s.valid,
            s.total
        ));
    }
    let b = budget.bytes as f64;
    out.push(match &budget.outcome {
        BudgetOutcome::NotRun(why) => {
            format!("  {BUDGET_TUNER} --buffer-budget {}: not run: {why}", mb(Some(b)))
        }
        BudgetOutcome::Ran {
            sum_peak_bytes,
            aggregate_goodput_bps,
            held,
        } => format!(
            "  {BUDGET_TUNER} --buffer-budget {}: aggregate {}, server's summed send buffers peak {}, {}",
            mb(Some(b)),
            mbps(*aggregate_goodput_bps),
            mb(sum_peak_bytes.map(|p| p as f64)),
            match held {
                Some(true) => "held in every sample",
                Some(false) => "exceeded",
                None => "no valid run",
            }
        ),
    });
    out
}
