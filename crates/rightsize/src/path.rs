//! `rightsize path`: emulated WAN paths between two namespaces.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};
use rightsize_path::{PathSpec, Side};
use rightsize_sys::emu;
use rightsize_sys::emu::run::{self, Job, supervise};

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
--queue, --loss, --seed and --backend override the file for both directions. Hosts are named left and \
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
    /// Seed of the random loss (Rattan): runs with the same seed lose the
    /// same packets; a benchmark gives each repetition its own.
    #[arg(long, value_name = "SEED")]
    pub seed: Option<String>,
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

/// Lines for people go to standard error.
fn say(line: String) {
    eprintln!("{line}");
}

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
        ("seed", &args.seed),
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
    crate::exit::usage()
}

fn run_up(args: UpArgs) -> anyhow::Result<ExitCode> {
    let spec = match load_spec(&args.spec) {
        Ok(spec) => spec,
        Err(e) => return Ok(usage(&e)),
    };
    let path = run::bring_up(&spec, args.spec.name.clone(), false, &mut say)?;
    let rtts = run::idle_rtts(&path, &spec, &mut |line| eprintln!("{line}"))?;
    run::start_traffic(&path, &spec, &this_program()?, None)?;
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
        for line in run::describe(&path_record, &spec) {
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
        let files = rightsize_path::rattan::config(&spec, "/run/rightsize/paths/NAME");
        println!("\n# rattan.toml\n{}", files.config);
        for (name, text) in files.traces {
            println!("# {name}\n{text}");
        }
        for side in [Side::Left, Side::Right] {
            match rightsize_path::netem::plan(&spec, side) {
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
    if args.command.is_empty() {
        return Ok(usage("give a command after --"));
    }
    let signals = rightsize_sys::signals::StopSignals::install()?;
    let path = run::bring_up(&spec, args.spec.name.clone(), true, &mut say)?;
    let record = path.record().clone();
    for line in run::describe(&record, &spec) {
        eprintln!("{line}");
    }
    let exe = this_program()?;
    let job = Job {
        side: args.side,
        command: &args.command,
        cross_exe: &exe,
        stdout: None,
        stderr: None,
        wait_for_port: None,
        host_logs: None,
    };
    let stop = || signals.caught().map(|s| s.to_string());
    let outcome = supervise(&path, &spec, job, &stop, &mut |line| eprintln!("{line}"))?;
    for line in outcome.fidelity.lines() {
        eprintln!("{line}");
    }
    if let Some(file) = &args.results {
        let value = run::results_json(&args.command, args.side, &outcome, &record);
        write_atomic(file, &format!("{value}\n"))?;
    }
    path.down()?;
    Ok(ExitCode::from(outcome.exit_code()))
}

/// This program, which makes the cross traffic.
fn this_program() -> anyhow::Result<String> {
    Ok(std::env::current_exe()
        .context("finding this program to start cross traffic")?
        .to_string_lossy()
        .into_owned())
}

fn write_atomic(path: &Path, text: &str) -> anyhow::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, path))
        .with_context(|| format!("cannot write {}", path.display()))
}
