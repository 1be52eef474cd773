//! SOBAS's two path probes, without the sockets: the datagrams' wire
//! format, the bookkeeping of the UDP probe stream, the measurement of a
//! packet train, and the responder's rule for which train requests to serve
//! (the SOBAS paper, section IV-B; docs/sources.md).
//!
//! - [`wire`]: the probe datagram's 40-byte versioned header and its four
//!   kinds (probe, echo, train request, train packet). [`Message::parse`]
//!   returns an error, never panics, on any input.
//! - [`ProbeLedger`]: the out-of-band stream (a 100-byte probe every 10 ms,
//!   echoed by the peer), turned into [`UdpProbeReport`]s: probes resolved
//!   in the period, those lost on the forward (data) path, mean RTT. Late,
//!   duplicate, unknown and forged echoes are counted and otherwise ignored.
//! - [`TrainMeter`]: the packets of one train and their arrival times,
//!   turned into a [`TrainProbe`] (IP bytes after the first packet over the
//!   dispersion), or a reason to discard the train.
//! - [`TrainGate`] and [`SeenWindow`]: the responder's decisions, whether
//!   to serve a train request (so that it cannot be used as an amplifier)
//!   and which probes it has received.
//!
//! Every time is an argument (a [`Duration`] on the caller's clock, normally
//! since the data connection opened); nothing here reads a clock or does
//! I/O. The system layer (`rightsize_sys::probe`) drives these with sockets.
//!
//! [`UdpProbeReport`]: rightsize_tune::UdpProbeReport
//! [`TrainProbe`]: rightsize_tune::TrainProbe

mod ledger;
mod responder;
mod train;
pub mod wire;

#[cfg(test)]
mod tests;

use std::time::Duration;

use crate::cross::IpVersion;
use rightsize_tune::TRAINS;

pub use ledger::{EchoVerdict, LedgerTotals, ProbeLedger};
pub use responder::{SeenWindow, TrainGate, TrainRefusal};
pub use train::{PacketVerdict, TrainDiscard, TrainMeter};
pub use wire::{Echo, Kind, Message, Probe, TrainPacket, TrainRequest, WireError};

/// How often the UDP probe stream sends a probe: 10 ms (the SOBAS paper, IV-B).
pub const PROBE_INTERVAL: Duration = Duration::from_millis(10);

/// The size of a probe as an IP packet: 100 bytes (the SOBAS paper, IV-B: "each
/// probing packet is 100B", 80 kbit/s at one per 10 ms).
pub const PROBE_PACKET_BYTES: u64 = 100;

/// How often the prober reports the probe stream by default: 100 ms, ten
/// probes, so that a single loss shows in the period it happened in.
pub const DEFAULT_REPORT_EVERY: Duration = Duration::from_millis(100);

/// The path MTU a train's packets fill by default, bytes (Ethernet).
pub const DEFAULT_MTU_BYTES: u64 = 1500;

/// Packets per train by default. The SOBAS paper takes the average dispersion of
/// five trains "using UDP probing packets [27]" and does not give their
/// length. Eleven packets (10 x 1,500 IP bytes after the first) measured
/// 226 Mbit/s of payload on a 200 Mbit/s Rattan link (193 Mbit/s of TCP
/// payload): over 0.6 ms of dispersion the emulator's release granularity
/// shows. Forty-eight packets measured 192.3 Mbit/s on the same link, and
/// at 72 kB still cross a queue of a tenth of a 2.5 MB BDP without loss.
pub const DEFAULT_TRAIN_PACKETS: u16 = 48;

/// The most packets a train request may ask for; a responder refuses more.
pub const MAX_TRAIN_PACKETS: u16 = 64;

/// The largest train packet, UDP payload bytes: a 9,000-byte jumbo-frame
/// IPv4 packet. Also the receive buffer that any probe datagram fits in.
pub const MAX_TRAIN_PACKET_BYTES: u16 = 9000 - 28;

/// The gap between trains: the prober sends the next request this long
/// after the previous train ended (complete or timed out); a responder
/// refuses a request that follows the previous one it served by less than
/// half of it (requests may bunch up on the way).
pub const TRAIN_SPACING: Duration = Duration::from_millis(10);

/// How many train requests a prober sends at most: a lost train is asked
/// for again, up to twice [`TRAINS`] in all.
pub const TRAIN_ATTEMPTS: usize = 2 * TRAINS;

/// How many trains a responder serves over its life: enough for every
/// attempt of two probers, and a bound on what a spoofed request can make
/// it send to its peer.
pub const MAX_TRAINS_SERVED: usize = 2 * TRAIN_ATTEMPTS;

// A responder's budget covers a prober's every attempt.
const _: () = assert!(MAX_TRAINS_SERVED >= TRAIN_ATTEMPTS);

/// How long a prober waits for a train's packets after its request.
pub const DEFAULT_TRAIN_TIMEOUT: Duration = Duration::from_secs(1);

/// How long a probe may go unanswered before it counts as lost, when no
/// later probe's echo has shown it lost sooner ([`REORDER_PROBES`]): 1 s,
/// above the RTT of any path with a queue of a sensible size (a 500 ms
/// buffer-to-capacity ratio on a 250 ms path, the SOBAS paper's appendix).
pub const DEFAULT_LOSS_TIMEOUT: Duration = Duration::from_secs(1);

/// A probe counts as lost once the echo of a probe sent this many later
/// has come back (as TCP's three duplicate ACKs): reordering by fewer
/// probes is not a loss.
pub const REORDER_PROBES: u64 = 3;

/// UDP payload of a probe, bytes: [`PROBE_PACKET_BYTES`] less the IP and
/// UDP headers (72 over IPv4, 52 over IPv6).
pub fn probe_payload_bytes(ip: IpVersion) -> u16 {
    (PROBE_PACKET_BYTES - ip.udp_overhead_bytes()) as u16
}

/// UDP payload of a train packet that fills an `mtu_bytes` IP packet:
/// 1,472 bytes over IPv4 on a 1,500-byte MTU, 1,452 over IPv6. Clamped to
/// what a train packet may be (the header up to
/// [`MAX_TRAIN_PACKET_BYTES`]).
pub fn train_payload_bytes(mtu_bytes: u64, ip: IpVersion) -> u16 {
    let payload = mtu_bytes.saturating_sub(ip.udp_overhead_bytes());
    payload.clamp(wire::HEADER_BYTES as u64, u64::from(MAX_TRAIN_PACKET_BYTES)) as u16
}
