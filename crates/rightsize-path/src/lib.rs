//! rightsize's network paths, pure: emulated path specs, the emulator's
//! configuration, rate traces, fidelity verdicts, the cross-traffic schedule
//! and the packet-train probes' datagrams and bookkeeping.
//!
//! # Path specs
//!
//! Emulated paths: what a path spec says, checked, with nothing run.
//!
//! A path is two hosts, `left` and `right`, joined by an emulated WAN link.
//! The spec (a TOML file, or the same settings as CLI flags) gives each
//! direction's rate, one-way delay, drop-tail bottleneck queue, random loss
//! and time-varying schedule; each host's kernel settings; the commands a
//! path starts on either side; and cross traffic through the bottleneck.
//!
//! Everything here is pure: [`PathSpec::from_toml`] parses and validates,
//! [`rattan`] turns a spec into Rattan's configuration, [`netem`] into `tc`
//! commands, [`fidelity`] judges a run's own measurements. The system layer
//! (`rightsize_sys::emu`) creates the namespaces, runs the emulator and reads
//! the counters. Direction names follow Rattan: the **uplink** carries
//! packets from left to right, the **downlink** from right to left.

pub mod cross;
pub mod probe;

pub mod fidelity;
pub mod netem;
pub mod rattan;
mod raw;
pub mod run;
pub mod trace;

use std::time::Duration;

use serde::Serialize;

use rightsize_tune::units::{BitRate, Bytes};

pub use raw::{SpecError, parse_trace};
pub use trace::{RateTrace, Step, TraceError};

/// The IP packet size the emulated link is dimensioned for (Ethernet MTU).
pub const PACKET_BYTES: u64 = 1500;

/// The two ends of a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// The host whose packets cross the uplink; commands run here by default.
    Left,
    /// The far host.
    Right,
}

impl Side {
    /// `"left"` or `"right"`.
    pub fn name(self) -> &'static str {
        match self {
            Side::Left => "left",
            Side::Right => "right",
        }
    }

    /// The other end.
    pub fn other(self) -> Side {
        match self {
            Side::Left => Side::Right,
            Side::Right => Side::Left,
        }
    }
}

impl std::str::FromStr for Side {
    type Err = String;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        match input {
            "left" => Ok(Side::Left),
            "right" => Ok(Side::Right),
            other => Err(format!("side \"{other}\" is not one of: left, right")),
        }
    }
}

/// Which emulator runs the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// `netem` where the kernel has it, else Rattan.
    #[default]
    Auto,
    /// Rattan, a user-space emulator (works on any kernel with veth and AF_PACKET).
    Rattan,
    /// The kernel's `netem` + `tbf` qdiscs (the perfSONAR lab's commands).
    Netem,
}

/// The bottleneck queue of one direction, as written in the spec.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum QueueSpec {
    /// Drop-tail, this many bytes.
    Bytes(u64),
    /// Drop-tail, this many packets (of any size).
    Packets(u64),
    /// Drop-tail, this multiple of the path's BDP (the direction's peak rate
    /// times the round-trip delay), in bytes.
    Bdp(f64),
    /// No limit: nothing is ever dropped at the bottleneck.
    Infinite,
    /// Not given: one BDP, and never less than [`DEFAULT_MIN_QUEUE_BYTES`]
    /// (a path without delay has no BDP).
    Default,
}

/// The smallest queue a spec gets when it names none: 100 packets.
pub const DEFAULT_MIN_QUEUE_BYTES: u64 = 100 * PACKET_BYTES;

/// The rate of one direction over time.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RateSpec {
    /// A fixed rate.
    Constant(BitRate),
    /// A schedule of steps, each a rate (and optionally a one-way delay) for
    /// a while, repeated from the start when it ends.
    Steps(Vec<Step>),
    /// A mahimahi packet-delivery trace (one millisecond timestamp per line,
    /// each a delivery opportunity for one 1500-byte packet), repeated.
    Mahimahi(RateTrace),
}

impl RateSpec {
    /// The highest rate the direction ever has, for dimensioning queues.
    pub fn peak(&self) -> BitRate {
        match self {
            RateSpec::Constant(rate) => *rate,
            RateSpec::Steps(steps) => steps
                .iter()
                .filter_map(|step| step.rate)
                .max()
                .unwrap_or(BitRate(0)),
            RateSpec::Mahimahi(trace) => trace.peak_rate(),
        }
    }

    /// The rate at the start.
    pub fn initial(&self) -> BitRate {
        match self {
            RateSpec::Constant(rate) => *rate,
            RateSpec::Steps(steps) => steps
                .iter()
                .find_map(|step| step.rate)
                .unwrap_or(BitRate(0)),
            RateSpec::Mahimahi(trace) => trace.mean_rate(),
        }
    }
}

/// One direction of the link.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkSpec {
    /// Bottleneck rate over time (IP packets, headers included).
    pub rate: RateSpec,
    /// One-way propagation delay at the start (steps may change it).
    pub delay: Duration,
    /// Drop-tail bottleneck queue.
    pub queue: QueueSpec,
    /// Random loss probability per packet, 0 <= loss < 1.
    pub loss: f64,
}

/// Kernel settings applied inside one host's namespace, each `None` when left
/// at the namespace's default.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct HostSpec {
    /// `net.ipv4.tcp_rmem`: min, default, max bytes.
    pub tcp_rmem: Option<[u64; 3]>,
    /// `net.ipv4.tcp_wmem`: min, default, max bytes.
    pub tcp_wmem: Option<[u64; 3]>,
    /// `net.ipv4.tcp_congestion_control`.
    pub congestion: Option<String>,
    /// `net.core.rmem_max`: host-wide on Linux 6.18 (read-only inside a
    /// namespace), so the system layer raises the host's value while the
    /// path is up; see docs/emulation.md, "Per-host settings".
    pub rmem_max: Option<u64>,
    /// `net.core.wmem_max`: host-wide, as `rmem_max`.
    pub wmem_max: Option<u64>,
    /// A command the path starts on this host and stops at teardown.
    pub command: Option<Vec<String>>,
}

impl HostSpec {
    /// The sysctls to write in the namespace, as `(key, value)`.
    pub fn sysctls(&self) -> Vec<(&'static str, String)> {
        let triple = |v: &[u64; 3]| format!("{} {} {}", v[0], v[1], v[2]);
        let mut out = Vec::new();
        if let Some(v) = self.rmem_max {
            out.push(("net.core.rmem_max", v.to_string()));
        }
        if let Some(v) = self.wmem_max {
            out.push(("net.core.wmem_max", v.to_string()));
        }
        if let Some(v) = &self.tcp_rmem {
            out.push(("net.ipv4.tcp_rmem", triple(v)));
        }
        if let Some(v) = &self.tcp_wmem {
            out.push(("net.ipv4.tcp_wmem", triple(v)));
        }
        if let Some(v) = &self.congestion {
            out.push(("net.ipv4.tcp_congestion_control", v.clone()));
        }
        out
    }
}

/// Traffic that rightsize itself sends through the bottleneck beside the
/// measured flow.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum CrossSpec {
    /// Unresponsive UDP at a constant rate, optionally on for `on`, off for
    /// `off`, repeating.
    Udp {
        /// The sending host (its packets cross that side's outgoing direction).
        from: Side,
        /// Rate while on (IP packets, headers included).
        rate: BitRate,
        /// On/off pattern, `None` for always on.
        on_off: Option<(Duration, Duration)>,
    },
    /// Responsive TCP flows.
    Tcp {
        /// The sending host.
        from: Side,
        /// How many flows.
        flows: u32,
        /// A fixed send buffer per flow (buffer-limited, SOBAS Figs. 14-15),
        /// `None` for the kernel's autotuning.
        window: Option<Bytes>,
        /// Congestion control, `None` for the namespace default.
        congestion: Option<String>,
    },
}

/// A whole path, validated.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PathSpec {
    /// Which emulator runs it.
    pub backend: Backend,
    /// Left to right.
    pub uplink: LinkSpec,
    /// Right to left.
    pub downlink: LinkSpec,
    /// The left host's settings.
    pub left: HostSpec,
    /// The right host's settings.
    pub right: HostSpec,
    /// Cross traffic.
    pub cross: Vec<CrossSpec>,
    /// The seed of the random-loss generator (Rattan): runs with the same
    /// seed lose the same packets, by their order through the link. The
    /// uplink draws from `2 x seed`, the downlink from `2 x seed + 1`.
    /// `None` is [`DEFAULT_LOSS_SEED`].
    pub seed: Option<u64>,
}

/// The random-loss generator's seed when a spec gives none.
pub const DEFAULT_LOSS_SEED: u64 = 42;

impl PathSpec {
    /// Parses and validates a TOML spec. `read` returns the text of a trace
    /// file named in the spec (the caller resolves it against the spec's
    /// directory), so that this stays free of I/O.
    pub fn from_toml(
        text: &str,
        read: &mut dyn FnMut(&str) -> Result<String, String>,
    ) -> Result<PathSpec, SpecError> {
        raw::parse(text, read)
    }

    /// As [`PathSpec::from_toml`], with CLI flags laid over the file: each
    /// `(key, value)` of `rate`, `delay`, `queue`, `loss`, `backend` sets
    /// that key for both directions. An empty `text` is a spec of flags only.
    pub fn from_toml_with(
        text: &str,
        overrides: &[(&str, String)],
        read: &mut dyn FnMut(&str) -> Result<String, String>,
    ) -> Result<PathSpec, SpecError> {
        raw::parse_with(text, overrides, read)
    }

    /// The round-trip propagation delay at the start (uplink + downlink).
    pub fn rtt(&self) -> Duration {
        self.uplink.delay + self.downlink.delay
    }

    /// Host settings of one side.
    pub fn host(&self, side: Side) -> &HostSpec {
        match side {
            Side::Left => &self.left,
            Side::Right => &self.right,
        }
    }

    /// The direction that carries packets sent by `side`.
    pub fn link_from(&self, side: Side) -> &LinkSpec {
        match side {
            Side::Left => &self.uplink,
            Side::Right => &self.downlink,
        }
    }

    /// The bandwidth-delay product of the direction leaving `side`: its
    /// peak rate times the round-trip delay, in bytes.
    pub fn bdp_from(&self, side: Side) -> Bytes {
        let link = self.link_from(side);
        bdp_bytes(link.rate.peak(), self.rtt())
    }

    /// The queue of the direction leaving `side`, resolved to a drop-tail
    /// limit: `Ok(Some(bytes))`, `Ok(None)` for infinite, packet limits as
    /// packets.
    pub fn queue_limit(&self, side: Side) -> QueueLimit {
        match self.link_from(side).queue {
            QueueSpec::Infinite => QueueLimit::Infinite,
            QueueSpec::Bytes(b) => QueueLimit::Bytes(b),
            QueueSpec::Packets(p) => QueueLimit::Packets(p),
            QueueSpec::Bdp(multiple) => {
                let bytes = (self.bdp_from(side).0 as f64 * multiple).round() as u64;
                QueueLimit::Bytes(bytes)
            }
            QueueSpec::Default => {
                QueueLimit::Bytes(self.bdp_from(side).0.max(DEFAULT_MIN_QUEUE_BYTES))
            }
        }
    }

    /// One line per direction, for `path up` and reports:
    /// `left -> right: 200 Mbit/s, 50 ms, queue 1.25 MB (1 x BDP), loss 0%`.
    pub fn describe(&self) -> Vec<String> {
        [Side::Left, Side::Right]
            .into_iter()
            .map(|side| {
                let link = self.link_from(side);
                let rate = match &link.rate {
                    RateSpec::Constant(rate) => rate.human(),
                    RateSpec::Steps(steps) => format!("{} steps", steps.len()),
                    RateSpec::Mahimahi(trace) => format!(
                        "mahimahi trace, mean {}",
                        BitRate(trace.mean_rate().0).human()
                    ),
                };
                let queue = match (self.queue_limit(side), link.queue) {
                    (QueueLimit::Infinite, _) => "infinite".to_owned(),
                    (QueueLimit::Packets(p), _) => format!("{p} packets"),
                    (QueueLimit::Bytes(b), QueueSpec::Bdp(m)) => {
                        format!("{} ({m} x BDP)", Bytes(b).human_si())
                    }
                    (QueueLimit::Bytes(b), _) => Bytes(b).human_si(),
                };
                let seed = match self.seed {
                    Some(seed) if link.loss > 0.0 => format!(" (seed {seed})"),
                    _ => String::new(),
                };
                format!(
                    "{} -> {}: {rate}, delay {}, queue {queue}, loss {}%{seed}",
                    side.name(),
                    side.other().name(),
                    rightsize_tune::units::human_duration(link.delay),
                    link.loss * 100.0
                )
            })
            .collect()
    }
}

/// A direction's queue limit in the emulator's terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum QueueLimit {
    /// At most this many bytes queued.
    Bytes(u64),
    /// At most this many packets queued.
    Packets(u64),
    /// No limit.
    Infinite,
}

/// `rate x rtt` in bytes, rounded down.
pub fn bdp_bytes(rate: BitRate, rtt: Duration) -> Bytes {
    Bytes(((rate.0 as u128 * rtt.as_nanos()) / 8 / 1_000_000_000) as u64)
}

#[cfg(test)]
mod tests;
