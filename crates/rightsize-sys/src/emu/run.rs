//! `rightsize path run`'s supervision of one command on a path that is up:
//! the idle round trips, the hosts' commands and cross traffic, the
//! counters read around the command, the command itself (stopped when the
//! caller says so), and the fidelity verdict on what was measured.
//!
//! The verdict and the exit code are `rightsize_path`'s pure functions;
//! this module only reads and waits.

use std::fs::File;
use std::io::ErrorKind;
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use rightsize_path::fidelity::{self, Fidelity, Measured};
use rightsize_path::run::Ended;
use rightsize_path::{PathSpec, Side};

use super::{EmuError, EmulatedPath, Record, UpOptions, counters};
use crate::netns;
use crate::process::{self, Waited};
use crate::signals::POLL_INTERVAL;

/// Idle round trips measured before the command starts.
pub const IDLE_PROBES: usize = 10;

/// The longest wait after the command for the last packets to leave the
/// emulator's queues (one RTT, at most this, plus 100 ms).
const DRAIN_AT_MOST: Duration = Duration::from_secs(1);

/// Sinks listen this long before the cross-traffic senders connect.
const SINKS_FIRST: Duration = Duration::from_millis(300);

/// How long the command waits for [`Job::wait_for_port`]: this many
/// connection attempts, [`PORT_RETRY`] apart.
const PORT_TRIES: u32 = 100;
const PORT_RETRY: Duration = Duration::from_millis(100);

/// What to run on the path.
#[derive(Debug)]
pub struct Job<'a> {
    /// The host the command runs on.
    pub side: Side,
    /// The command and its arguments.
    pub command: &'a [String],
    /// The `rightsize` program that makes the spec's cross traffic.
    pub cross_exe: &'a str,
    /// Where the command's standard output goes (inherited when `None`).
    pub stdout: Option<File>,
    /// Where its standard error goes (inherited when `None`).
    pub stderr: Option<File>,
    /// A port on the other host that must accept a connection before the
    /// command starts (a server the spec starts there); the run fails if it
    /// does not within [`PORT_TRIES`] tries.
    pub wait_for_port: Option<u16>,
    /// Where the hosts' own commands write their output (`left.log`,
    /// `right.log`); the path's state directory when `None`.
    pub host_logs: Option<&'a Path>,
}

/// What came of it.
#[derive(Debug, Clone)]
pub struct Supervised {
    /// How the command ended.
    pub ended: Ended,
    /// The command's wall time.
    pub wall: Duration,
    /// The verdict on the run's own measurements.
    pub fidelity: Fidelity,
}

impl Supervised {
    /// The exit code of `path run` for this run.
    pub fn exit_code(&self) -> u8 {
        self.ended.exit_code(self.fidelity.valid)
    }
}

/// Runs `job` on `path` (brought up from `spec`) and judges the run.
/// `stop` is asked between checks: `Some(why)` kills the command (the
/// outcome is then [`Ended::Interrupted`]); `log` gets lines for people.
pub fn supervise(
    path: &EmulatedPath,
    spec: &PathSpec,
    job: Job<'_>,
    stop: &dyn Fn() -> Option<String>,
    log: &mut dyn FnMut(String),
) -> Result<Supervised, EmuError> {
    let record = path.record();
    let configured = spec.rtt();
    let idle = idle_rtts(path, spec, log)?;
    start_traffic(path, spec, job.cross_exe, job.host_logs)?;
    let hosts = [
        record.left.namespace.as_str(),
        record.right.namespace.as_str(),
    ];
    let read = || -> Result<_, EmuError> {
        record
            .emulator_ns
            .as_deref()
            .map(|ns| counters::snapshot(ns, hosts))
            .transpose()
    };
    let before = read()?;
    let ticks_before = record.emulator_pid.map(counters::thread_ticks);
    // Reading the emulator's input drops resets them: this read starts the count.
    let ingress_before = record.emulator_pid.and_then(counters::ingress_drops);
    let started = Instant::now();

    let Some((program, rest)) = job.command.split_first() else {
        return Err(EmuError::Setting("give a command after --".into()));
    };
    let command_line = || job.command.join(" ");
    if let Some(port) = job.wait_for_port {
        wait_for_port(record, job.side, port)?;
    }
    let mut command = record.command(job.side, program);
    command.args(rest);
    if let Some(out) = job.stdout {
        command.stdout(out);
    }
    if let Some(err) = job.stderr {
        command.stderr(err);
    }
    let mut child = command.spawn().map_err(|source| EmuError::Run {
        command: command_line(),
        source,
    })?;
    let mut why = None;
    let waited = process::wait_until(&mut child, None, POLL_INTERVAL, || {
        why = stop();
        why.is_some()
    })?;
    let ended = match waited {
        Waited::Exited(status) => Ended::Exited {
            success: status.success(),
            code: status.code(),
        },
        Waited::Stopped | Waited::TimedOut => {
            let why = why.unwrap_or_else(|| "a signal".to_owned());
            log(format!(
                "rightsize: {why}: stopping the command and tearing the path down"
            ));
            let _ = child.kill();
            let _ = child.wait();
            Ended::Interrupted
        }
    };
    let wall = started.elapsed();
    // Let the last packets leave the emulator's queues.
    std::thread::sleep(configured.min(DRAIN_AT_MOST) + Duration::from_millis(100));
    let after = read()?;
    let cpu = match (ticks_before, record.emulator_pid) {
        (Some(before), Some(pid)) => {
            counters::busiest_share(&before, &counters::thread_ticks(pid), wall)
        }
        _ => None,
    };
    let ingress = match (ingress_before, record.emulator_pid) {
        (Some(_), Some(pid)) => counters::ingress_drops(pid),
        _ => None,
    };
    let fidelity = fidelity::judge(Measured::between(
        configured, idle, cpu, before, after, ingress,
    ));
    Ok(Supervised {
        ended,
        wall,
        fidelity,
    })
}

/// Starts the hosts' own commands (right first), then the cross traffic:
/// its sinks, and after [`SINKS_FIRST`] its senders.
/// `host_logs`: where the hosts' commands write (`SIDE.log`), else the
/// path's state directory.
pub fn start_traffic(
    path: &EmulatedPath,
    spec: &PathSpec,
    exe: &str,
    host_logs: Option<&Path>,
) -> Result<(), EmuError> {
    for side in [Side::Right, Side::Left] {
        if let Some(argv) = &spec.host(side).command {
            match host_logs {
                Some(dir) => {
                    path.start_logged(side, argv, &dir.join(format!("{}.log", side.name())))?
                }
                None => path.start(side, argv)?,
            }
        }
    }
    let record = path.record();
    let cross = spec.cross_commands(exe, |side| record.host(side).addr.into());
    if cross.is_empty() {
        return Ok(());
    }
    for c in &cross {
        path.start(c.sink_side, &c.sink)?;
    }
    std::thread::sleep(SINKS_FIRST);
    for c in &cross {
        path.start(c.sender_side, &c.sender)?;
    }
    Ok(())
}

/// Measures the idle round trip from left to right ([`IDLE_PROBES`]
/// probes) and says it to `log` beside the configured one.
pub fn idle_rtts(
    path: &EmulatedPath,
    spec: &PathSpec,
    log: &mut dyn FnMut(String),
) -> Result<Vec<Duration>, EmuError> {
    let record = path.record();
    let idle = counters::idle_rtts(&record.left.namespace, record.right.addr, IDLE_PROBES)?;
    let configured = spec.rtt();
    log(match idle.iter().min() {
        Some(min) => format!(
            "  idle RTT {:.2} ms (min of {}; configured {:.2} ms, tolerance +{:.2} ms)",
            min.as_secs_f64() * 1e3,
            idle.len(),
            configured.as_secs_f64() * 1e3,
            fidelity::rtt_tolerance(configured).as_secs_f64() * 1e3
        ),
        None => "  idle RTT: no round trip could be measured".to_owned(),
    });
    Ok(idle)
}

/// Brings `spec` up after clearing what dead runs left behind (said to
/// `log`). `owned`: the path dies with this process (a run), rather than
/// staying up (`path up`).
pub fn bring_up(
    spec: &PathSpec,
    name: Option<String>,
    owned: bool,
    log: &mut dyn FnMut(String),
) -> Result<EmulatedPath, EmuError> {
    super::preflight_root()?;
    for removed in super::down_stale()? {
        log(format!("removed {removed}, left behind by a run that died"));
    }
    let path = EmulatedPath::up(
        spec,
        UpOptions {
            name,
            die_with_parent: owned,
        },
    )?;
    for note in path.notes() {
        log(note.clone());
    }
    Ok(path)
}

/// What a path that is up is, for people: its name and emulator, each
/// host's address and namespace, the spec, the emulator's input buffers.
pub fn describe(record: &Record, spec: &PathSpec) -> Vec<String> {
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

/// The record of a run that `path run --results` writes and the lab keeps
/// (`path.json`): the command, how it ended, the path and the verdict, with
/// this program's version and the kernel.
pub fn results_json(
    command: &[String],
    side: Side,
    outcome: &Supervised,
    record: &Record,
) -> serde_json::Value {
    let (exit_code, interrupted) = match outcome.ended {
        Ended::Interrupted => (None, true),
        Ended::Exited { code, .. } => (code, false),
    };
    serde_json::json!({
        "command": command,
        "side": side,
        "exit_code": exit_code,
        "interrupted": interrupted,
        "seconds": outcome.wall.as_secs_f64(),
        "path": record,
        "fidelity": outcome.fidelity,
        "version": env!("CARGO_PKG_VERSION"),
        "kernel": crate::sysctl::kernel_release().unwrap_or_default(),
    })
}

/// Waits until the host across from `side` accepts a TCP connection on
/// `port`, connecting from `side`'s namespace.
fn wait_for_port(record: &Record, side: Side, port: u16) -> Result<(), EmuError> {
    let target = SocketAddr::from((record.host(side.other()).addr, port));
    let up = netns::run_in(&record.host(side).namespace, move || {
        (0..PORT_TRIES).any(|_| {
            let tried = Instant::now();
            match TcpStream::connect_timeout(&target, PORT_RETRY * 10) {
                Ok(_) => true,
                Err(e) => {
                    if e.kind() == ErrorKind::ConnectionRefused {
                        std::thread::sleep(PORT_RETRY.saturating_sub(tried.elapsed()));
                    }
                    false
                }
            }
        })
    })?;
    if up {
        Ok(())
    } else {
        Err(EmuError::Setting(format!(
            "no server on {target} after {PORT_TRIES} tries"
        )))
    }
}
