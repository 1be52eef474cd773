//! `rightsize path`: emulated WAN paths between two namespaces.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{Args, Subcommand};
use rightsize_core::path::fidelity::{self, Fidelity, Measured};
use rightsize_core::path::{CrossSpec, PathSpec, Side};
use rightsize_sys::emu::{self, EmulatedPath, Record, UpOptions, counters};
use rightsize_sys::process::{self, Waited};

pub const PATH_ABOUT: &str = "\
Two hosts in network namespaces joined by an emulated WAN link (Rattan 0.1.1, or the kernel's \
netem where it exists), for trying a tuning before deploying it. Needs root.

  rightsize path up examples/paths/lfn-200m-100ms.toml
  rightsize path exec right -- iperf3 -s -D
  rightsize path exec left -- iperf3 -c right -t 10
  rightsize path down --all
  rightsize path run --rate 100Mbit --delay 25ms -- iperf3 -c right   (with [right] command = [\"iperf3\", \"-s\"])

A path spec is a TOML file (commented examples in examples/paths/): rate, one-way delay, \
drop-tail queue (\"1bdp\", \"375KB\", \"250 packets\"), random loss, schedules of steps or \
mahimahi traces, per-host sysctls, commands and cross traffic. The flags --rate, --delay, \
--queue, --loss and --backend override the file for both directions. Hosts are named left and \
right in each other's /etc/hosts; commands see RS_LEFT, RS_RIGHT and RS_PEER.";

#[derive(Debug, Args)]
pub struct PathArgs {
    #[command(subcommand)]
    pub command: PathCommand,
}

#[derive(Debug, Subcommand)]
pub enum PathCommand {
    /// Bring a path up and leave it up; print its hosts' names and addresses.
    Up(UpArgs),
    /// Run a command on one host of a path that is up.
    Exec(ExecArgs),
    /// Tear down a path (or every path, and whatever a killed run left behind).
    Down(DownArgs),
    /// List the paths that are up.
    List,
    /// Cross traffic for a path (started by specs with [[cross]]): a sink, and UDP or TCP senders.
    #[command(long_about = crate::cross::CROSS_ABOUT)]
    Cross(crate::cross::CrossArgs),
    /// Check a spec and print what it means and the emulator configuration it makes (no root).
    Show(ShowArgs),
    /// Bring a path up, run a command on one side while the spec's commands and cross
    /// traffic run, check the apparatus, tear it down.
    Run(RunArgs),
}

#[derive(Debug, Args, Clone)]
pub struct SpecArgs {
    /// The path spec (TOML); without it, the flags alone describe the path.
    #[arg(value_name = "SPEC")]
    pub spec: Option<PathBuf>,
    /// Bottleneck rate, both directions: 100Mbit, 1Gbit, 12.5MB/s.
    #[arg(long, value_name = "RATE")]
    pub rate: Option<String>,
    /// One-way delay, each direction (the RTT is twice this): 25ms.
    #[arg(long, value_name = "DELAY")]
    pub delay: Option<String>,
    /// Drop-tail queue: 1bdp, "0.1 x BDP", 375KB, "250 packets", infinite.
    #[arg(long, value_name = "QUEUE")]
    pub queue: Option<String>,
    /// Random loss per packet, each direction: 0.001 or 0.1%.
    #[arg(long, value_name = "LOSS")]
    pub loss: Option<String>,
    /// auto (netem where the kernel has it, else rattan), rattan or netem.
    #[arg(long, value_name = "BACKEND")]
    pub backend: Option<String>,
    /// The path's name (must start with rs-); default rs-path-PID-N.
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
}

#[derive(Debug, Args)]
pub struct UpArgs {
    #[command(flatten)]
    pub spec: SpecArgs,
    /// Print the path as one JSON object.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    #[command(flatten)]
    pub spec: SpecArgs,
    /// Also print the Rattan configuration and the netem commands.
    #[arg(long)]
    pub config: bool,
}

#[derive(Debug, Args)]
pub struct ExecArgs {
    /// Which path (default: the only one up).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// left or right.
    #[arg(value_name = "SIDE", value_parser = parse_side)]
    pub side: Side,
    /// The command and its arguments, after --.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
}

#[derive(Debug, Args)]
pub struct DownArgs {
    /// The path to tear down.
    #[arg(
        value_name = "NAME",
        required_unless_present = "all",
        conflicts_with = "all"
    )]
    pub name: Option<String>,
    /// Every path, plus any namespace, emulator or process a killed run left behind.
    #[arg(long)]
    pub all: bool,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub spec: SpecArgs,
    /// Where the command runs.
    #[arg(long, value_name = "SIDE", default_value = "left", value_parser = parse_side)]
    pub side: Side,
    /// Write the run's record (spec, hosts, fidelity checks, exit status) as JSON.
    #[arg(long, value_name = "FILE")]
    pub results: Option<PathBuf>,
    /// The command and its arguments, after --.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
}

fn parse_side(input: &str) -> Result<Side, String> {
    input.parse()
}

/// Exit code of a run whose apparatus failed a fidelity check.
const INVALID_RUN: u8 = 3;

pub fn run(args: PathArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        PathCommand::Up(up) => run_up(up),
        PathCommand::Exec(exec) => run_exec(exec),
        PathCommand::Down(down) => run_down(down),
        PathCommand::List => run_list(),
        PathCommand::Show(show) => run_show(show),
        PathCommand::Cross(cross) => crate::cross::run(cross).map(|()| ExitCode::SUCCESS),
        PathCommand::Run(run) => run_run(run),
    }
}

/// Loads and checks the spec; `Err` is a usage error (exit 2).
fn load_spec(args: &SpecArgs) -> Result<PathSpec, String> {
    let (text, base) = match &args.spec {
        Some(file) => {
            let text = std::fs::read_to_string(file)
                .map_err(|e| format!("cannot read path spec {}: {e}", file.display()))?;
            let base = file.parent().map(Path::to_owned).unwrap_or_default();
            (text, base)
        }
        None if args.rate.is_none() => {
            return Err(
                "give a path spec file or at least --rate (e.g. --rate 100Mbit --delay 25ms)"
                    .to_owned(),
            );
        }
        None => (String::new(), PathBuf::new()),
    };
    let mut overrides = Vec::new();
    for (key, value) in [
        ("rate", &args.rate),
        ("delay", &args.delay),
        ("queue", &args.queue),
        ("loss", &args.loss),
        ("backend", &args.backend),
    ] {
        if let Some(v) = value {
            overrides.push((key, v.clone()));
        }
    }
    let mut read = |name: &str| {
        let path = base.join(name);
        std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))
    };
    PathSpec::from_toml_with(&text, &overrides, &mut read).map_err(|e| e.to_string())
}

fn usage(message: &str) -> ExitCode {
    eprintln!("rightsize: {message}");
    ExitCode::from(2)
}

/// Brings the spec up after clearing what dead runs left behind.
fn bring_up(spec: &PathSpec, name: Option<String>, owned: bool) -> anyhow::Result<EmulatedPath> {
    emu::preflight_root()?;
    for removed in emu::down_stale().context("clearing what earlier runs left behind")? {
        eprintln!("removed {removed}, left behind by a run that died");
    }
    Ok(EmulatedPath::up(
        spec,
        UpOptions {
            name,
            die_with_parent: owned,
        },
    )?)
}

/// The port each cross-traffic entry's sink listens on: 47000 + its index.
const CROSS_PORT_BASE: u16 = 47000;

fn start_traffic(path: &EmulatedPath, spec: &PathSpec) -> anyhow::Result<()> {
    let record = path.record();
    for side in [Side::Right, Side::Left] {
        if let Some(argv) = &spec.host(side).command {
            path.start(side, argv)?;
        }
    }
    if spec.cross.is_empty() {
        return Ok(());
    }
    let exe = std::env::current_exe()
        .context("finding this program to start cross traffic")?
        .to_string_lossy()
        .into_owned();
    let mut senders = Vec::new();
    for (i, cross) in spec.cross.iter().enumerate() {
        let from = match cross {
            CrossSpec::Udp { from, .. } | CrossSpec::Tcp { from, .. } => *from,
        };
        let to = record.host(from.other()).addr;
        let port = CROSS_PORT_BASE + i as u16;
        path.start(
            from.other(),
            &[
                exe.clone(),
                "path".into(),
                "cross".into(),
                "sink".into(),
                "--listen".into(),
                format!("{to}:{port}"),
            ],
        )?;
        let mut argv = vec![
            exe.clone(),
            "path".into(),
            "cross".into(),
            "send".into(),
            "--to".into(),
            format!("{to}:{port}"),
        ];
        match cross {
            CrossSpec::Udp { rate, on_off, .. } => {
                argv.extend(["--udp".into(), format!("{}bit", rate.0)]);
                if let Some((on, off)) = on_off {
                    argv.extend([
                        "--on".into(),
                        format!("{}ms", on.as_millis()),
                        "--off".into(),
                        format!("{}ms", off.as_millis()),
                    ]);
                }
            }
            CrossSpec::Tcp {
                flows,
                window,
                congestion,
                ..
            } => {
                argv.extend(["--tcp".into(), flows.to_string()]);
                if let Some(w) = window {
                    argv.extend(["--window".into(), format!("{}B", w.0)]);
                }
                if let Some(c) = congestion {
                    argv.extend(["--congestion".into(), c.clone()]);
                }
            }
        }
        senders.push((from, argv));
    }
    // Sinks listen before the senders connect.
    std::thread::sleep(Duration::from_millis(300));
    for (from, argv) in senders {
        path.start(from, &argv)?;
    }
    Ok(())
}

fn describe(record: &Record, spec: &PathSpec) -> Vec<String> {
    let mut lines = vec![format!(
        "path {} is up ({}{})",
        record.name,
        record.backend,
        match (&record.emulator_pid, &record.emulator_id) {
            (Some(pid), Some(id)) => format!(", emulator pid {pid}, id {id}"),
            _ => String::new(),
        }
    )];
    for side in [Side::Left, Side::Right] {
        let host = record.host(side);
        lines.push(format!(
            "  {:<5} {:<10} namespace {}",
            side.name(),
            host.addr.to_string(),
            host.namespace
        ));
    }
    lines.extend(spec.describe().into_iter().map(|l| format!("  {l}")));
    if let Some(bytes) = record.emulator_ingress_buffer {
        lines.push(format!(
            "  emulator input buffer {:.1} MB per packet socket (so that a burst reaches the queue)",
            bytes as f64 / 1e6
        ));
    }
    lines
}

fn idle_check(record: &Record, spec: &PathSpec) -> anyhow::Result<Vec<Duration>> {
    let samples = counters::idle_rtts(&record.left.namespace, record.right.addr, 10)?;
    let configured = spec.rtt();
    match samples.iter().min() {
        Some(min) => eprintln!(
            "  idle RTT {:.2} ms (min of {}; configured {:.2} ms, tolerance +{:.2} ms)",
            min.as_secs_f64() * 1e3,
            samples.len(),
            configured.as_secs_f64() * 1e3,
            fidelity::rtt_tolerance(configured).as_secs_f64() * 1e3
        ),
        None => eprintln!("  idle RTT: no round trip could be measured"),
    }
    Ok(samples)
}

fn run_up(args: UpArgs) -> anyhow::Result<ExitCode> {
    let spec = match load_spec(&args.spec) {
        Ok(spec) => spec,
        Err(e) => return Ok(usage(&e)),
    };
    let path = bring_up(&spec, args.spec.name.clone(), false)?;
    let record = path.record().clone();
    let rtts = idle_check(&record, &spec)?;
    start_traffic(&path, &spec)?;
    let path_record = path.detach();
    if args.json {
        let value = serde_json::json!({
            "name": path_record.name,
            "backend": path_record.backend,
            "left": path_record.left,
            "right": path_record.right,
            "emulator_pid": path_record.emulator_pid,
            "emulator_id": path_record.emulator_id,
            "idle_rtt_ms": rtts.iter().min().map(|d| d.as_secs_f64() * 1e3),
        });
        println!("{value}");
    } else {
        for line in describe(&path_record, &spec) {
            println!("{line}");
        }
        println!(
            "run a command on a host: rightsize path exec left -- CMD   (the hosts are named left and right)"
        );
        println!(
            "tear it down:            rightsize path down {}",
            path_record.name
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn run_show(args: ShowArgs) -> anyhow::Result<ExitCode> {
    let spec = match load_spec(&args.spec) {
        Ok(spec) => spec,
        Err(e) => return Ok(usage(&e)),
    };
    for line in spec.describe() {
        println!("{line}");
    }
    println!(
        "RTT {:.2} ms; BDP left -> right {}, right -> left {}",
        spec.rtt().as_secs_f64() * 1e3,
        spec.bdp_from(Side::Left).human_si(),
        spec.bdp_from(Side::Right).human_si()
    );
    for side in [Side::Left, Side::Right] {
        for (key, value) in spec.host(side).sysctls() {
            println!("{} host: {key} = {value}", side.name());
        }
        if let Some(command) = &spec.host(side).command {
            println!("{} host runs: {}", side.name(), command.join(" "));
        }
    }
    for cross in &spec.cross {
        println!(
            "cross traffic: {}",
            serde_json::to_string(cross).unwrap_or_default()
        );
    }
    if args.config {
        let files = rightsize_core::path::rattan::config(&spec, "/run/rightsize/paths/NAME");
        println!("\n# rattan.toml\n{}", files.config);
        for (name, text) in files.traces {
            println!("# {name}\n{text}");
        }
        for side in [Side::Left, Side::Right] {
            match rightsize_core::path::netem::plan(&spec, side) {
                Ok(plan) => {
                    println!("# netem, {} host", side.name());
                    for command in plan.setup {
                        println!("tc {}", command.join(" "));
                    }
                    for (at, commands) in plan.schedule {
                        for command in commands {
                            println!("at {:?}: tc {}", at, command.join(" "));
                        }
                    }
                }
                Err(e) => println!("# netem: {e}"),
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn run_exec(args: ExecArgs) -> anyhow::Result<ExitCode> {
    use std::os::unix::process::CommandExt;
    let record = emu::find(args.name.as_deref())?;
    let Some((program, rest)) = args.command.split_first() else {
        return Ok(usage("give a command after --"));
    };
    let error = record.command(args.side, program).args(rest).exec();
    Err(anyhow::anyhow!(
        "cannot run `{}`: {error}",
        args.command.join(" ")
    ))
}

fn run_down(args: DownArgs) -> anyhow::Result<ExitCode> {
    if args.all {
        let removed = emu::down_all()?;
        if removed.is_empty() {
            println!("nothing to remove");
        }
        for name in removed {
            println!("removed {name}");
        }
    } else if let Some(name) = args.name {
        emu::down(&name)?;
        println!("removed {name}");
    }
    Ok(ExitCode::SUCCESS)
}

fn run_list() -> anyhow::Result<ExitCode> {
    let records = emu::records();
    if records.is_empty() {
        println!("no path is up");
    }
    for r in records {
        println!(
            "{}  {}  left {} ({})  right {} ({})",
            r.name, r.backend, r.left.addr, r.left.namespace, r.right.addr, r.right.namespace
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn run_run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let spec = match load_spec(&args.spec) {
        Ok(spec) => spec,
        Err(e) => return Ok(usage(&e)),
    };
    if let Some(results) = &args.results
        && let Some(dir) = results.parent()
        && !dir.as_os_str().is_empty()
        && !dir.is_dir()
    {
        return Ok(usage(&format!(
            "--results {}: directory {} does not exist",
            results.display(),
            dir.display()
        )));
    }
    let signals = rightsize_sys::signals::StopSignals::install()?;
    let path = bring_up(&spec, args.spec.name.clone(), true)?;
    let record = path.record().clone();
    for line in describe(&record, &spec) {
        eprintln!("{line}");
    }
    // Measure the idle path before any traffic starts.
    let idle = idle_check(&record, &spec)?;
    start_traffic(&path, &spec)?;
    let emulator_ns = record.emulator_ns.clone();
    let hosts = [
        record.left.namespace.as_str(),
        record.right.namespace.as_str(),
    ];
    let before = match &emulator_ns {
        Some(ns) => Some(counters::snapshot(ns, hosts)?),
        None => None,
    };
    let ticks_before = record.emulator_pid.map(counters::thread_ticks);
    // Reading the emulator's input drops resets them: this read starts the count.
    let ingress_before = record.emulator_pid.and_then(counters::ingress_drops);
    let started = Instant::now();

    let Some((program, rest)) = args.command.split_first() else {
        return Ok(usage("give a command after --"));
    };
    let mut child = record
        .command(args.side, program)
        .args(rest)
        .spawn()
        .with_context(|| format!("cannot run `{}`", args.command.join(" ")))?;
    let mut caught = None;
    let poll = rightsize_sys::signals::POLL_INTERVAL;
    let waited = process::wait_until(&mut child, None, poll, || {
        caught = signals.caught();
        caught.is_some()
    })?;
    let status = match waited {
        Waited::Exited(status) => Some(status),
        Waited::Stopped | Waited::TimedOut => {
            let signal = caught.unwrap_or("a signal");
            eprintln!("rightsize: {signal}: stopping the command and tearing the path down");
            let _ = child.kill();
            let _ = child.wait();
            None
        }
    };
    let wall = started.elapsed();
    // Let the last packets leave the emulator's queues.
    std::thread::sleep(spec.rtt().min(Duration::from_secs(1)) + Duration::from_millis(100));
    let after = match &emulator_ns {
        Some(ns) => Some(counters::snapshot(ns, hosts)?),
        None => None,
    };
    let cpu = match (ticks_before, record.emulator_pid) {
        (Some(before), Some(pid)) => {
            counters::busiest_share(&before, &counters::thread_ticks(pid), wall)
        }
        _ => None,
    };
    let verdict = fidelity::judge(Measured {
        configured_rtt: spec.rtt(),
        idle_rtts: idle,
        emulator_cpu: cpu,
        emulator_drops: match (before, after) {
            (Some(b), Some(a)) => {
                Some((a.emulator_in_minus_out - b.emulator_in_minus_out).max(0) as u64)
            }
            _ => None,
        },
        emulator_ingress_drops: match (ingress_before, record.emulator_pid) {
            (Some(_), Some(pid)) => counters::ingress_drops(pid),
            _ => None,
        },
        retransmitted_segments: match (before, after) {
            (Some(b), Some(a)) => Some(a.retrans_segs.saturating_sub(b.retrans_segs)),
            _ => None,
        },
        host_explained_segments: match (before, after) {
            (Some(b), Some(a)) => Some(a.host_explained.saturating_sub(b.host_explained)),
            _ => None,
        },
    });
    print_fidelity(&verdict);
    if let Some(file) = &args.results {
        let value = serde_json::json!({
            "command": args.command,
            "side": args.side,
            "exit_code": status.and_then(|s| s.code()),
            "interrupted": status.is_none(),
            "seconds": wall.as_secs_f64(),
            "path": record,
            "fidelity": verdict,
            "version": env!("CARGO_PKG_VERSION"),
            "kernel": rightsize_sys::sysctl::kernel_release().unwrap_or_default(),
        });
        write_atomic(file, &format!("{value}\n"))?;
    }
    path.down()?;
    Ok(match status {
        None => ExitCode::from(130),
        Some(s) if !s.success() => ExitCode::from(s.code().unwrap_or(1).clamp(1, 255) as u8),
        Some(_) if !verdict.valid => ExitCode::from(INVALID_RUN),
        Some(_) => ExitCode::SUCCESS,
    })
}

fn print_fidelity(verdict: &Fidelity) {
    for check in &verdict.checks {
        let mark = match check.ok {
            Some(true) => "ok",
            Some(false) => "FAILED",
            None => "not measured",
        };
        eprintln!("  fidelity {:<14} {mark}: {}", check.name, check.detail);
    }
    if verdict.valid {
        eprintln!("  run valid");
    } else {
        eprintln!("  run INVALID: a fidelity check failed (exit code {INVALID_RUN})");
    }
}

fn write_atomic(path: &Path, text: &str) -> anyhow::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, path))
        .with_context(|| format!("cannot write {}", path.display()))
}
