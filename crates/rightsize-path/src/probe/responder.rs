//! The responder's decisions, without its socket: which train requests to
//! serve ([`TrainGate`]) and which probes it has seen ([`SeenWindow`], for
//! [`super::Echo::seen`]).
//!
//! Amplification: a train is many datagrams sent in answer to one, so a
//! request whose source is forged could aim the responder at a victim. The
//! system layer sends only to the one peer address it trusts, so the worst
//! a forger can do is aim the peer's own trains at it; the gate bounds even
//! that: the request datagram must be at least as big as one packet of the
//! train it asks for (so the bytes sent are at most the train's length, at
//! most [`MAX_TRAIN_PACKETS`], times the bytes received), served trains are
//! at least half of [`TRAIN_SPACING`] apart, and at most
//! [`MAX_TRAINS_SERVED`] are served in the responder's life. Echoes are as
//! big as the probe and one per probe: no amplification.
//!
//! [`MAX_TRAIN_PACKETS`]: super::MAX_TRAIN_PACKETS

use std::time::Duration;

use super::wire::TrainRequest;
use super::{MAX_TRAINS_SERVED, TRAIN_SPACING};

/// Why a responder did not serve a train request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TrainRefusal {
    /// The request is smaller than one packet of the train it asks for.
    #[error(
        "train request of {datagram_bytes} bytes for {packet_bytes}-byte packets: pad it to one packet"
    )]
    Undersized {
        /// The request datagram's size, bytes.
        datagram_bytes: usize,
        /// The packet size it asks for, bytes.
        packet_bytes: u16,
    },
    /// Too soon after the previous train served.
    #[error("train request {since:?} after the previous train, below {:?}", TRAIN_SPACING / 2)]
    TooSoon {
        /// The time since the previous train served.
        since: Duration,
    },
    /// Every train this responder may send has been sent.
    #[error("{MAX_TRAINS_SERVED} trains served already")]
    BudgetSpent,
}

/// Which train requests a responder serves; see the module docs.
#[derive(Debug, Clone, Default)]
pub struct TrainGate {
    served: usize,
    last_served: Option<Duration>,
}

impl TrainGate {
    /// A gate that has served nothing.
    pub fn new() -> Self {
        TrainGate::default()
    }

    /// Whether to serve `request`, which came in a datagram of
    /// `datagram_bytes` at `now` (on the responder's clock); a train
    /// admitted counts as served.
    pub fn admit(
        &mut self,
        request: &TrainRequest,
        datagram_bytes: usize,
        now: Duration,
    ) -> Result<(), TrainRefusal> {
        if datagram_bytes < usize::from(request.packet_bytes) {
            return Err(TrainRefusal::Undersized {
                datagram_bytes,
                packet_bytes: request.packet_bytes,
            });
        }
        if self.served >= MAX_TRAINS_SERVED {
            return Err(TrainRefusal::BudgetSpent);
        }
        if let Some(last) = self.last_served {
            let since = now.saturating_sub(last);
            if since < TRAIN_SPACING / 2 {
                return Err(TrainRefusal::TooSoon { since });
            }
        }
        self.served += 1;
        self.last_served = Some(now);
        Ok(())
    }

    /// Trains served so far.
    pub fn served(&self) -> usize {
        self.served
    }
}

/// The probe sequence numbers a responder has received lately: the
/// highest, and which of the 127 before it (an anti-replay window).
#[derive(Debug, Clone, Copy, Default)]
pub struct SeenWindow {
    highest: Option<u64>,
    /// Bit `d`: probe `highest - d` was received.
    bits: u128,
}

impl SeenWindow {
    /// An empty window.
    pub fn new() -> Self {
        SeenWindow::default()
    }

    /// Notes that probe `seq` arrived.
    pub fn record(&mut self, seq: u64) {
        match self.highest {
            None => {
                self.highest = Some(seq);
                self.bits = 1;
            }
            Some(h) if seq > h => {
                let shift = seq - h;
                self.bits = if shift >= 128 { 0 } else { self.bits << shift };
                self.bits |= 1;
                self.highest = Some(seq);
            }
            Some(h) => {
                let back = h - seq;
                if back < 128 {
                    self.bits |= 1 << back;
                }
            }
        }
    }

    /// Whether probe `seq` was received (as far as the window remembers).
    pub fn contains(&self, seq: u64) -> bool {
        match self.highest {
            Some(h) if seq <= h => h - seq < 128 && self.bits >> (h - seq) & 1 == 1,
            _ => false,
        }
    }

    /// [`super::Echo::seen`] for an echo of probe `seq`: bit `i` set if
    /// probe `seq - 1 - i` was received.
    pub fn mask_before(&self, seq: u64) -> u64 {
        (0..64u64)
            .filter(|&i| seq.checked_sub(i + 1).is_some_and(|s| self.contains(s)))
            .fold(0, |mask, i| mask | 1 << i)
    }
}
