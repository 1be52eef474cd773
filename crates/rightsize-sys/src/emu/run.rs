//! `rightsize path run`'s supervision of one command on a path that is up:
//! the idle round trips, the hosts' commands and cross traffic, the
//! counters read around the command, the command itself (stopped when the
//! caller says so), and the fidelity verdict on what was measured.
//!
//! The verdict and the exit code are `rightsize_path`'s pure functions;
//! this module only reads and waits.

use std::time::{Duration, Instant};

use rightsize_path::fidelity::{self, Fidelity, Measured};
use rightsize_path::run::Ended;
use rightsize_path::{PathSpec, Side};

use super::{EmuError, EmulatedPath, counters};
use crate::process::{self, Waited};
use crate::signals::POLL_INTERVAL;

/// Idle round trips measured before the command starts.
pub const IDLE_PROBES: usize = 10;

/// The longest wait after the command for the last packets to leave the
/// emulator's queues (one RTT, at most this, plus 100 ms).
const DRAIN_AT_MOST: Duration = Duration::from_secs(1);

/// Sinks listen this long before the cross-traffic senders connect.
const SINKS_FIRST: Duration = Duration::from_millis(300);

/// What to run on the path.
#[derive(Debug, Clone, Copy)]
pub struct Job<'a> {
    /// The host the command runs on.
    pub side: Side,
    /// The command and its arguments.
    pub command: &'a [String],
    /// The `rightsize` program that makes the spec's cross traffic.
    pub cross_exe: &'a str,
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
    start_traffic(path, spec, job.cross_exe)?;
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
    let mut child = record
        .command(job.side, program)
        .args(rest)
        .spawn()
        .map_err(|source| EmuError::Run {
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
pub fn start_traffic(path: &EmulatedPath, spec: &PathSpec, exe: &str) -> Result<(), EmuError> {
    for side in [Side::Right, Side::Left] {
        if let Some(argv) = &spec.host(side).command {
            path.start(side, argv)?;
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
