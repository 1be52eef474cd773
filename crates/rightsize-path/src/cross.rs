//! Cross-traffic plans: what an unresponsive UDP source sends when, and
//! how a fixed TCP window becomes a send-buffer request. No I/O, no clock.
//!
//! A [`UdpPlan`] is a constant bit rate, optionally switched by an
//! [`OnOff`] pattern (on first, then off, repeating). A [`Pacer`] turns the
//! plan into a token bucket over *elapsed time since the source started*,
//! which the caller passes in: [`Pacer::poll`] says how many datagrams to
//! send now, or when to ask again. Guarantees, over any sequence of polls:
//! the packets sent never exceed [`UdpPlan::packets_due`] (the schedule); a
//! caller that polls when told lags the schedule by less than one batch
//! ([`UdpPlan::batch_packets`], about [`PACING_QUANTUM`] of traffic); a
//! caller that falls further behind catches up at most
//! [`MAX_CATCH_UP_QUANTA`] quanta in one burst and the rest is lost (and
//! counted: [`Pacer::late_packets`]), so a stalled source never floods the
//! bottleneck afterwards. Every scheduled datagram is accounted for: sent
//! (or dropped) by the caller, late, or still due. Nothing is sent during an
//! off phase.
//!
//! Rates count IP packets: IP header + UDP header + payload
//! ([`IpVersion::udp_overhead_bytes`]), not Ethernet framing. A 1,472-byte
//! payload ([`DEFAULT_UDP_PAYLOAD`]) is a 1,500-byte IPv4 packet; an
//! emulator that counts Ethernet frames sees 14 bytes (0.9%) more per packet.

use std::time::Duration;

use serde::Serialize;

use rightsize_tune::units::{BitRate, Bytes, format_duration};

/// UDP payload that makes a 1,500-byte IPv4 packet (a full Ethernet MTU).
pub const DEFAULT_UDP_PAYLOAD: Bytes = Bytes(1472);

/// The largest UDP payload over IPv4: 65,535 - 20 - 8 bytes.
pub const MAX_UDP_PAYLOAD_BYTES: u64 = 65_507;

/// How much traffic a source releases per wake-up: it sleeps until about
/// this much is due, then sends it as one batch (`sendmmsg`). At 200 Mbit/s
/// that is 8 datagrams of 1,500 bytes, 2,000 wake-ups a second.
pub const PACING_QUANTUM: Duration = Duration::from_micros(500);

/// How many quanta a late source may send at once to catch up (the token
/// bucket's depth, 5 ms); anything further behind is dropped from the
/// schedule. Measured here with both cores busy: 2 ms of depth lost 3-5% of
/// the rate at 100-200 Mbit/s (wake-ups wait for a scheduler slice), 5 ms
/// lost under 0.5%. At 200 Mbit/s a full catch-up is 80 packets (120 kB).
pub const MAX_CATCH_UP_QUANTA: u64 = 10;

/// The most datagrams in one batch, whatever the rate (one `sendmmsg`).
pub const MAX_BATCH_PACKETS: u64 = 64;

/// The most TCP cross-traffic flows one source runs (one thread each).
pub const MAX_TCP_FLOWS: usize = 256;

/// Nanoseconds per second, for token arithmetic.
const NANOS: u128 = 1_000_000_000;

/// A cross-traffic setting that cannot work. Each message quotes the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// A UDP rate of zero.
    #[error("UDP rate {rate} must be greater than zero, for example 100M")]
    ZeroRate {
        /// The rate given.
        rate: BitRate,
    },
    /// A payload outside 1..=[`MAX_UDP_PAYLOAD_BYTES`].
    #[error(
        "UDP payload of {payload_bytes} bytes is outside 1..={MAX_UDP_PAYLOAD_BYTES}; \
         1472 makes a 1500-byte IPv4 packet"
    )]
    Payload {
        /// The payload given, bytes.
        payload_bytes: u64,
    },
    /// An on/off pattern whose on or off time is zero.
    #[error(
        "on/off pattern on={on} off={off}: both must be greater than zero \
         (leave the pattern out for a constant rate)"
    )]
    OnOff {
        /// The on time, printed.
        on: String,
        /// The off time, printed.
        off: String,
    },
    /// A TCP window of zero bytes.
    #[error("TCP window {window} must be greater than zero, for example 256KiB")]
    ZeroWindow {
        /// The window given.
        window: Bytes,
    },
    /// A flow count of zero or above [`MAX_TCP_FLOWS`].
    #[error("{flows} TCP flows: give 1..={MAX_TCP_FLOWS}")]
    Flows {
        /// The count given.
        flows: usize,
    },
}

/// The IP version of the path, which sets the header bytes per datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum IpVersion {
    /// IPv4: 20-byte IP header.
    V4,
    /// IPv6: 40-byte IP header.
    V6,
}

impl IpVersion {
    /// IP + UDP header bytes: 28 for IPv4, 48 for IPv6 (no options).
    pub const fn udp_overhead_bytes(self) -> u64 {
        match self {
            IpVersion::V4 => 20 + 8,
            IpVersion::V6 => 40 + 8,
        }
    }
}

/// A repeating pattern: `on` at the full rate, then `off` silent, from 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct OnOff {
    on: Duration,
    off: Duration,
}

/// Where in an [`OnOff`] pattern an elapsed time falls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Phase {
    /// Whether the source sends in this phase.
    pub on: bool,
    /// The elapsed time at which this phase ends.
    pub ends_at: Duration,
}

impl OnOff {
    /// A pattern of `on` then `off`; both must be greater than zero.
    pub fn new(on: Duration, off: Duration) -> Result<OnOff, PlanError> {
        if on.is_zero() || off.is_zero() {
            return Err(PlanError::OnOff {
                on: format_duration(on),
                off: format_duration(off),
            });
        }
        Ok(OnOff { on, off })
    }

    /// The time spent sending in each period.
    pub const fn on(&self) -> Duration {
        self.on
    }

    /// The silent time in each period.
    pub const fn off(&self) -> Duration {
        self.off
    }

    fn period_ns(&self) -> u128 {
        self.on.as_nanos() + self.off.as_nanos()
    }

    /// The phase that `elapsed` falls in (a boundary starts the next phase).
    pub fn phase(&self, elapsed: Duration) -> Phase {
        let (on, period) = (self.on.as_nanos(), self.period_ns());
        let t = elapsed.as_nanos();
        let start = t - t % period;
        if t - start < on {
            Phase {
                on: true,
                ends_at: nanos(start + on),
            }
        } else {
            Phase {
                on: false,
                ends_at: nanos(start + period),
            }
        }
    }

    /// Total on time in `[0, elapsed]`.
    pub fn active_time(&self, elapsed: Duration) -> Duration {
        let (on, period) = (self.on.as_nanos(), self.period_ns());
        let t = elapsed.as_nanos();
        nanos((t / period) * on + (t % period).min(on))
    }

    /// The earliest elapsed time at which [`OnOff::active_time`] reaches `active`.
    pub fn elapsed_at_active(&self, active: Duration) -> Duration {
        let (on, period) = (self.on.as_nanos(), self.period_ns());
        let a = active.as_nanos();
        if a == 0 {
            return Duration::ZERO;
        }
        // The last nanosecond of on time in period k is reached at k*period + on.
        let full = (a - 1) / on;
        nanos(full * period + (a - full * on))
    }
}

fn nanos(ns: u128) -> Duration {
    Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
}

/// An unresponsive UDP source's schedule: rate, datagram size and pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpPlan {
    rate: BitRate,
    payload_bytes: u64,
    packet_bytes: u64,
    on_off: Option<OnOff>,
    batch: u64,
    burst: u64,
}

impl UdpPlan {
    /// Checks the settings and sizes the batches. `rate` counts whole IP
    /// packets (payload + [`IpVersion::udp_overhead_bytes`]); during an
    /// off phase nothing is sent, so the mean rate is `rate * on / (on + off)`.
    pub fn new(
        rate: BitRate,
        payload: Bytes,
        ip: IpVersion,
        on_off: Option<OnOff>,
    ) -> Result<UdpPlan, PlanError> {
        if rate.bps() == 0 {
            return Err(PlanError::ZeroRate { rate });
        }
        let payload_bytes = payload.get();
        if !(1..=MAX_UDP_PAYLOAD_BYTES).contains(&payload_bytes) {
            return Err(PlanError::Payload { payload_bytes });
        }
        let packet_bytes = payload_bytes + ip.udp_overhead_bytes();
        let per_quantum = u128::from(rate.bps()) * PACING_QUANTUM.as_nanos()
            / (u128::from(packet_bytes) * 8 * NANOS);
        let batch = u64::try_from(per_quantum)
            .unwrap_or(MAX_BATCH_PACKETS)
            .clamp(1, MAX_BATCH_PACKETS);
        Ok(UdpPlan {
            rate,
            payload_bytes,
            packet_bytes,
            on_off,
            batch,
            burst: batch * MAX_CATCH_UP_QUANTA,
        })
    }

    /// The rate while on, counting IP packets.
    pub const fn rate(&self) -> BitRate {
        self.rate
    }

    /// UDP payload per datagram, bytes.
    pub const fn payload_bytes(&self) -> u64 {
        self.payload_bytes
    }

    /// IP packet per datagram (payload + headers), bytes.
    pub const fn packet_bytes(&self) -> u64 {
        self.packet_bytes
    }

    /// The on/off pattern, if any.
    pub const fn on_off(&self) -> Option<OnOff> {
        self.on_off
    }

    /// Datagrams released per wake-up (about [`PACING_QUANTUM`] worth, 1..=64).
    pub const fn batch_packets(&self) -> u64 {
        self.batch
    }

    /// The most datagrams sent back to back to catch up (the bucket depth).
    pub const fn burst_packets(&self) -> u64 {
        self.burst
    }

    /// Time spent sending in `[0, elapsed]`: all of it without a pattern.
    pub fn active_time(&self, elapsed: Duration) -> Duration {
        match self.on_off {
            Some(p) => p.active_time(elapsed),
            None => elapsed,
        }
    }

    fn elapsed_at_active(&self, active: Duration) -> Duration {
        match self.on_off {
            Some(p) => p.elapsed_at_active(active),
            None => active,
        }
    }

    /// One datagram's cost in tokens (bit-nanoseconds per second).
    fn cost(&self) -> u128 {
        u128::from(self.packet_bytes) * 8 * NANOS
    }

    /// The schedule: how many datagrams a source that keeps up may have sent
    /// by `elapsed`. The first batch is due at 0, then one packet every
    /// `packet_bytes * 8 / rate` seconds of on time.
    pub fn packets_due(&self, elapsed: Duration) -> u64 {
        let earned = self.active_time(elapsed).as_nanos() * u128::from(self.rate.bps());
        let due = (u128::from(self.batch) * self.cost() + earned) / self.cost();
        u64::try_from(due).unwrap_or(u64::MAX)
    }
}

/// What a [`Pacer`] asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pace {
    /// Send this many datagrams now, then call [`Pacer::sent`].
    Send(u64),
    /// Nothing is due; poll again at this elapsed time.
    WaitUntil(Duration),
}

/// A token bucket over a [`UdpPlan`]; time is elapsed time since the start.
#[derive(Debug, Clone)]
pub struct Pacer {
    plan: UdpPlan,
    /// Tokens in bit-nanoseconds per second: one packet is `cost()`.
    tokens: u128,
    /// Active (on) time up to the last poll.
    active: Duration,
    /// Tokens earned beyond the bucket's depth: the schedule the source
    /// missed because it fell too far behind.
    late: u128,
}

impl Pacer {
    /// A full first batch is due at elapsed time 0.
    pub fn new(plan: UdpPlan) -> Pacer {
        Pacer {
            tokens: u128::from(plan.batch) * plan.cost(),
            plan,
            active: Duration::ZERO,
            late: 0,
        }
    }

    /// The plan being paced.
    pub const fn plan(&self) -> &UdpPlan {
        &self.plan
    }

    /// Adds the tokens earned up to `now` (capped at the burst) and says
    /// whether to send. A `now` earlier than a previous one earns nothing.
    pub fn poll(&mut self, now: Duration) -> Pace {
        let cost = self.plan.cost();
        let rate = u128::from(self.plan.rate.bps());
        let active = self.plan.active_time(now);
        if active > self.active {
            let earned = (active - self.active).as_nanos() * rate;
            let cap = u128::from(self.plan.burst) * cost;
            let total = self.tokens + earned;
            self.late += total.saturating_sub(cap);
            self.tokens = total.min(cap);
            self.active = active;
        }
        let phase = self.plan.on_off.map(|p| p.phase(now));
        if let Some(Phase { on: false, ends_at }) = phase {
            // Nothing leaves during an off phase, not even a late source's debt.
            return Pace::WaitUntil(ends_at);
        }
        let ready = u64::try_from(self.tokens / cost).unwrap_or(u64::MAX);
        if ready >= self.plan.batch {
            return Pace::Send(ready);
        }
        let wait_for = |packets: u64| {
            let missing = (u128::from(packets) * cost).saturating_sub(self.tokens);
            nanos(missing.div_ceil(rate))
        };
        let wake = self
            .plan
            .elapsed_at_active(self.active + wait_for(self.plan.batch));
        if let Some(Phase { ends_at, .. }) = phase.filter(|p| wake > p.ends_at) {
            // The batch will not fill before this on phase ends: send the
            // packets the phase still earns when its last one is due, not
            // after the off phase.
            let left = u128::from(self.plan.burst) * cost - self.tokens;
            // Strictly before `ends_at`, which already belongs to the off phase.
            let earn = ((ends_at - now).as_nanos().saturating_sub(1) * rate).min(left);
            let last = u64::try_from((self.tokens + earn) / cost).unwrap_or(u64::MAX);
            if last > ready {
                return Pace::WaitUntil(now + wait_for(last));
            }
            if ready > 0 {
                return Pace::Send(ready);
            }
        }
        Pace::WaitUntil(wake.max(now))
    }

    /// Datagrams dropped from the schedule up to the last poll because the
    /// caller fell more than the bucket's depth
    /// ([`UdpPlan::burst_packets`]) behind: a sign of a host too busy to pace.
    /// With the datagrams the caller disposed of and [`Pacer::due_packets`],
    /// it adds up to [`UdpPlan::packets_due`] at the last poll.
    pub fn late_packets(&self) -> u64 {
        u64::try_from(self.late / self.plan.cost()).unwrap_or(u64::MAX)
    }

    /// Whole datagrams due now and not yet disposed of (at most
    /// [`UdpPlan::burst_packets`]).
    pub fn due_packets(&self) -> u64 {
        u64::try_from(self.tokens / self.plan.cost()).unwrap_or(u64::MAX)
    }

    /// Takes `packets` datagrams' tokens: call it for every datagram the
    /// source disposed of, sent or dropped, so that it moves on.
    pub fn sent(&mut self, packets: u64) {
        let spent = u128::from(packets) * self.plan.cost();
        self.tokens = self.tokens.saturating_sub(spent);
    }
}

/// The `SO_SNDBUF` request that makes the kernel keep `window` bytes of send
/// buffer: half of it, rounded up, because Linux doubles the request.
///
/// A sender whose buffer is `window` bytes keeps at most about `window`
/// bytes in flight (less the kernel's per-packet overhead: 0.88-0.90 of it
/// measured on Linux 6.18 over veth with cubic), so a loss-based flow is
/// limited to about `window / RTT`, as SOBAS's buffer-limited cross traffic
/// (the SOBAS paper, Figs. 14-15). The receiver need not limit too: its window
/// autotunes above the sender's buffer as long as it reads at once, as the
/// cross-traffic sink does.
pub fn sndbuf_request_for_window(window: Bytes) -> Result<u64, PlanError> {
    if window.get() == 0 {
        return Err(PlanError::ZeroWindow { window });
    }
    Ok(window.get().div_ceil(2))
}

/// Checks a TCP flow count: 1..=[`MAX_TCP_FLOWS`].
pub fn check_flows(flows: usize) -> Result<usize, PlanError> {
    if flows == 0 || flows > MAX_TCP_FLOWS {
        return Err(PlanError::Flows { flows });
    }
    Ok(flows)
}

#[cfg(test)]
mod tests;
