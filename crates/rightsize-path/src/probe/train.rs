//! One packet train as the prober receives it, turned into a capacity
//! sample: the IP bytes that arrived after the first packet, over the time
//! from the first arrival to the last (the SOBAS paper, IV-B).
//!
//! "First" and "last" are by arrival time, whatever the packets' indices
//! say, so reordering changes nothing. A train with missing packets is
//! still measured over what arrived if at least half of it did (a packet
//! lost after the bottleneck makes the estimate a little low, one lost
//! before it none); with fewer, or with all arrivals at one instant, it is
//! discarded with the reason. Packets of another train, or with the wrong
//! stamp, and second copies are not counted.

use std::time::Duration;

use super::wire::{TrainPacket, TrainRequest};
use crate::cross::IpVersion;
use rightsize_tune::TrainProbe;

/// What became of one packet offered to a [`TrainMeter`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PacketVerdict {
    /// Counted.
    Counted,
    /// Its index had arrived already.
    Duplicate,
    /// Another train's id, length or stamp.
    NotThisTrain,
}

/// Why a train gives no capacity sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TrainDiscard {
    /// Fewer than half of the packets (or fewer than two) arrived.
    #[error("train {train}: {arrived} of {packets} packets arrived, fewer than half")]
    TooFewPackets {
        /// The train's id.
        train: u32,
        /// Packets that arrived.
        arrived: u16,
        /// Packets in the train.
        packets: u16,
    },
    /// Every packet arrived at the same instant (a clock too coarse).
    #[error("train {train}: {arrived} packets arrived with no time between them")]
    NoDispersion {
        /// The train's id.
        train: u32,
        /// Packets that arrived.
        arrived: u16,
    },
}

/// One arrived packet: when, and its size as an IP packet in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Arrival {
    at: Duration,
    ip_bytes: u64,
}

/// The packets of one requested train; see the module docs.
#[derive(Debug, Clone)]
pub struct TrainMeter {
    request: TrainRequest,
    header_bytes: u64,
    /// By index.
    arrivals: Vec<Option<Arrival>>,
    arrived: u16,
}

impl TrainMeter {
    /// A meter for the train `request` asked for, whose packets travel
    /// over `ip` (their IP + UDP headers count: 28 bytes over IPv4, 48 over
    /// IPv6).
    pub fn new(request: &TrainRequest, ip: IpVersion) -> Self {
        TrainMeter {
            request: *request,
            header_bytes: ip.udp_overhead_bytes(),
            arrivals: vec![None; usize::from(request.packets)],
            arrived: 0,
        }
    }

    /// The request this meter measures.
    pub fn request(&self) -> &TrainRequest {
        &self.request
    }

    /// Takes a packet of `datagram_bytes` (UDP payload) that arrived at
    /// `at`.
    pub fn on_packet(
        &mut self,
        packet: &TrainPacket,
        datagram_bytes: usize,
        at: Duration,
    ) -> PacketVerdict {
        let r = &self.request;
        if packet.train != r.train || packet.packets != r.packets || packet.stamp != r.stamp {
            return PacketVerdict::NotThisTrain;
        }
        let Some(slot) = self.arrivals.get_mut(usize::from(packet.index)) else {
            return PacketVerdict::NotThisTrain;
        };
        if slot.is_some() {
            return PacketVerdict::Duplicate;
        }
        *slot = Some(Arrival {
            at,
            ip_bytes: (datagram_bytes as u64).saturating_add(self.header_bytes),
        });
        self.arrived += 1;
        PacketVerdict::Counted
    }

    /// Packets counted so far.
    pub fn arrived(&self) -> u16 {
        self.arrived
    }

    /// Whether every packet of the train has arrived.
    pub fn is_complete(&self) -> bool {
        self.arrived == self.request.packets
    }

    /// The capacity sample of what arrived, or why there is none.
    pub fn finish(&self) -> Result<TrainProbe, TrainDiscard> {
        let (train, arrived, packets) = (self.request.train, self.arrived, self.request.packets);
        if arrived < 2 || u32::from(arrived) * 2 < u32::from(packets) {
            return Err(TrainDiscard::TooFewPackets {
                train,
                arrived,
                packets,
            });
        }
        let arrivals = self.arrivals.iter().flatten();
        // The earliest arrival; the lowest index among equals.
        let first =
            arrivals
                .clone()
                .min_by_key(|a| a.at)
                .copied()
                .ok_or(TrainDiscard::TooFewPackets {
                    train,
                    arrived,
                    packets,
                })?;
        let last = arrivals.clone().map(|a| a.at).max().unwrap_or(first.at);
        let dispersion = last.saturating_sub(first.at);
        if dispersion.is_zero() {
            return Err(TrainDiscard::NoDispersion { train, arrived });
        }
        let total: u64 = arrivals.map(|a| a.ip_bytes).sum();
        Ok(TrainProbe {
            at: last,
            bytes: total - first.ip_bytes,
            dispersion,
        })
    }
}
