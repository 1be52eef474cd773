//! A path spec as the kernel's `netem` + `tbf` qdiscs, the perfSONAR
//! lab's commands (docs/sources.md):
//!
//! ```text
//! tc qdisc add dev ens37 root handle 1: netem delay 50ms
//! tc qdisc add dev ens37 parent 1: handle 2: tbf rate 2gbit burst 500000 limit 50000000
//! ```
//!
//! Each host's `eth0` carries its outgoing direction: netem delays (and
//! drops at random), and the `tbf` below it is the bottleneck, whose `limit`
//! is the drop-tail queue in bytes. A schedule of steps becomes
//! `tc qdisc change` commands run at each step's start. A mahimahi trace
//! cannot be expressed with `tbf` and is refused.
//!
//! This machine's kernel has no netem, so these commands are unit-tested
//! here and run only where `sch_netem` exists.

use std::time::Duration;

use super::{PACKET_BYTES, PathSpec, QueueLimit, RateSpec, Side, bdp_bytes};
use rightsize_tune::units::BitRate;

/// The device that carries a host's outgoing traffic.
pub const DEVICE: &str = "eth0";

/// Kernel timer ticks per second assumed for `tbf`'s burst (HZ=250 is the
/// smallest common value, so the burst is enough at any HZ).
const HZ: u64 = 250;

/// One `tc` command line, without the leading `tc`.
pub type Command = Vec<String>;

/// The commands for one host: run `setup` once, then each of `schedule`
/// at its offset from the start (repeating with `period`).
#[derive(Debug, Clone, PartialEq)]
pub struct NetemPlan {
    /// Which host these run on.
    pub side: Side,
    /// Commands to create the qdiscs.
    pub setup: Vec<Command>,
    /// `(offset, commands)` for a schedule of steps; empty for a fixed link.
    pub schedule: Vec<(Duration, Vec<Command>)>,
    /// The schedule's period (it repeats); zero for a fixed link.
    pub period: Duration,
}

fn words(line: &str) -> Command {
    line.split_whitespace().map(str::to_owned).collect()
}

/// `tbf`'s burst: one timer tick's worth of bytes at `rate`, and never less
/// than two full packets.
pub fn burst_bytes(rate: BitRate) -> u64 {
    (rate.0 / 8 / HZ).max(2 * PACKET_BYTES)
}

fn netem_line(verb: &str, delay: Duration, loss: f64, limit_packets: u64) -> Command {
    let mut line = format!(
        "qdisc {verb} dev {DEVICE} root handle 1: netem delay {}us limit {limit_packets}",
        delay.as_micros()
    );
    if loss > 0.0 {
        line.push_str(&format!(" loss {}%", loss * 100.0));
    }
    words(&line)
}

fn tbf_line(verb: &str, rate: BitRate, limit_bytes: u64) -> Command {
    words(&format!(
        "qdisc {verb} dev {DEVICE} parent 1: handle 2: tbf rate {}bit burst {} limit {limit_bytes}",
        rate.0,
        burst_bytes(rate)
    ))
}

/// The plan for the host on `side` (its outgoing direction), or why the
/// spec cannot run on netem.
pub fn plan(spec: &PathSpec, side: Side) -> Result<NetemPlan, String> {
    let link = spec.link_from(side);
    let limit_bytes = match spec.queue_limit(side) {
        QueueLimit::Bytes(b) => b,
        QueueLimit::Packets(p) => p * PACKET_BYTES,
        // tbf needs a limit; a gigabyte is more than any test here sends.
        QueueLimit::Infinite => 1 << 30,
    };
    // netem's own queue holds every packet in flight on the delay line: the
    // largest rate times the largest delay, in packets, with room to spare.
    let max_delay = match &link.rate {
        RateSpec::Steps(steps) => steps
            .iter()
            .filter_map(|s| s.delay)
            .fold(link.delay, Duration::max),
        _ => link.delay,
    };
    let in_flight = bdp_bytes(link.rate.peak(), max_delay).0 / PACKET_BYTES;
    let limit_packets = (in_flight * 2).max(1000);
    let setup = vec![
        netem_line("add", link.delay, link.loss, limit_packets),
        tbf_line("add", link.rate.initial(), limit_bytes),
    ];
    let (schedule, period) = match &link.rate {
        RateSpec::Constant(_) => (Vec::new(), Duration::ZERO),
        RateSpec::Mahimahi(_) => {
            return Err(
                "a mahimahi trace cannot run on the netem backend (tbf has one rate); \
                 use backend = \"rattan\" or a steps schedule"
                    .to_owned(),
            );
        }
        RateSpec::Steps(steps) => {
            let mut at = Duration::ZERO;
            let mut rate = link.rate.initial();
            let mut delay = link.delay;
            let mut schedule = Vec::new();
            for step in steps {
                rate = step.rate.unwrap_or(rate);
                delay = step.delay.unwrap_or(delay);
                schedule.push((
                    at,
                    vec![
                        netem_line("change", delay, link.loss, limit_packets),
                        tbf_line("change", rate, limit_bytes),
                    ],
                ));
                at += step.duration;
            }
            (schedule, at)
        }
    };
    Ok(NetemPlan {
        side,
        setup,
        schedule,
        period,
    })
}
