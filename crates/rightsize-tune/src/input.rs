//! What tuners are fed: samples of this end, RTTs from the control channel,
//! probe results, and what the peer reported.
//!
//! Every input carries `at`, the time since the data connection opened, as
//! the driver's clock read it. Peer reports cross the network from a peer
//! that may be buggy or hostile, so [`PeerReport::check`] refuses the
//! malformed and the absurd before any tuner reads them.

use std::time::Duration;

use serde::Serialize;

use crate::MAX_BUFFER_BYTES;
use crate::tcpinfo::TcpInfoSample;
use crate::telemetry::BufferReading;
use crate::units::Bytes;

/// The fastest rate a peer may report, bits per second: 1 Tbit/s, above
/// any single TCP stream today (the fastest NICs are 800 Gbit/s).
pub const MAX_PLAUSIBLE_RATE_BPS: u64 = 1_000_000_000_000;

/// The lowest pacing ceiling a peer may ask for, bits per second: 64
/// kbit/s, a slow modem's rate. Below it a sender would all but stop.
pub const MIN_PLAUSIBLE_PACE_BPS: u64 = 64_000;

/// The longest RTT a peer may report: 30 s, far beyond a geostationary
/// hop (about 0.6 s) and TCP's own initial RTO backoff.
pub const MAX_PLAUSIBLE_RTT: Duration = Duration::from_secs(30);

/// One event for a tuner.
// A `Sample` carries a whole `TcpInfoSample` (about 500 bytes); events are
// made once per reading and passed by reference, so boxing would only add
// an allocation per sample.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A periodic reading of this end.
    Sample(Sample),
    /// An RTT measured on the control channel (drsFTP's `SBUF` round trip,
    /// the drsFTP paper, section 3.5, or the control socket's `tcpi_rtt`).
    ControlRtt(RttMeasurement),
    /// One packet train's dispersion (SOBAS's capacity probe, the SOBAS
    /// paper, section IV-B).
    Train(TrainProbe),
    /// A summary of the out-of-band UDP probe stream (the SOBAS paper, section IV-B).
    UdpProbes(UdpProbeReport),
    /// What the peer said over the control channel.
    Peer(PeerReport),
}

impl Event {
    /// When the event happened, as time since the data connection opened.
    pub fn at(&self) -> Duration {
        match self {
            Event::Sample(s) => s.at,
            Event::ControlRtt(r) => r.at,
            Event::Train(t) => t.at,
            Event::UdpProbes(u) => u.at,
            Event::Peer(p) => p.at,
        }
    }

    /// The same event with its time counted from an origin `later` than
    /// the one it was counted from; an event from before that origin is
    /// at zero. Probes can start before the data connection opens.
    pub fn counted_from(mut self, later: Duration) -> Event {
        let at = match &mut self {
            Event::Sample(s) => &mut s.at,
            Event::ControlRtt(r) => &mut r.at,
            Event::Train(t) => &mut t.at,
            Event::UdpProbes(u) => &mut u.at,
            Event::Peer(p) => &mut p.at,
        };
        *at = at.saturating_sub(later);
        self
    }
}

/// A periodic reading of this end of the data connection.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sample {
    /// Time since the data connection opened.
    pub at: Duration,
    /// Payload bytes the application moved so far on this end (read on a
    /// receiver, written on a sender), cumulative.
    pub bytes: u64,
    /// The data socket's `TCP_INFO`, if it could be read.
    pub tcp_info: Option<TcpInfoSample>,
    /// The data socket's buffers and clamp as read back now (so after the
    /// previous decision was applied), if they could be read.
    pub buffers: Option<BufferReading>,
}

/// One RTT measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RttMeasurement {
    /// When the measurement completed.
    pub at: Duration,
    /// The round-trip time.
    pub rtt: Duration,
}

/// One packet train as the receiver saw it: `bytes` arrived, after the
/// first packet, spread over `dispersion`; capacity = `bytes / dispersion`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrainProbe {
    /// When the train's last packet arrived.
    pub at: Duration,
    /// Bytes of the train after its first packet (IP packets, headers
    /// included), bytes.
    pub bytes: u64,
    /// Time from the first packet's arrival to the last's.
    pub dispersion: Duration,
}

/// The UDP probe stream since the previous report: SOBAS sends a 100-byte
/// probe every 10 ms and the peer echoes it (the SOBAS paper, section IV-B; docs/sources.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpProbeReport {
    /// When the report was made.
    pub at: Duration,
    /// Probes whose echo was due in the period.
    pub sent: u32,
    /// Of those, probes lost on the forward path (known from the echoed
    /// sequence numbers).
    pub lost: u32,
    /// Mean RTT of the echoed probes, if any came back.
    pub rtt: Option<Duration>,
}

/// The peer's `TCP_INFO` summary, as a rightsize peer reports it. Counters
/// are cumulative since the data connection opened; each field is `None`
/// where the peer's kernel does not fill it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct PeerInfo {
    /// `tcpi_busy_time`, microseconds.
    pub busy_time_us: Option<u64>,
    /// `tcpi_rwnd_limited`, microseconds.
    pub rwnd_limited_us: Option<u64>,
    /// `tcpi_sndbuf_limited`, microseconds.
    pub sndbuf_limited_us: Option<u64>,
    /// `tcpi_delivery_rate`, bits per second.
    pub delivery_rate_bps: Option<u64>,
    /// `tcpi_min_rtt`, microseconds.
    pub min_rtt_us: Option<u32>,
    /// `tcpi_rtt` (smoothed), microseconds.
    pub rtt_us: Option<u32>,
    /// `tcpi_bytes_retrans`, bytes.
    pub bytes_retrans: Option<u64>,
    /// `tcpi_total_retrans`, segments.
    pub total_retrans_segs: Option<u32>,
    /// The sender's pacing ceiling (`SO_MAX_PACING_RATE`), bits per second:
    /// from a receiver, the ceiling it asks the sending peer to set; from a
    /// sender, the one in force on its data socket. Not a `TCP_INFO` field.
    pub pace_bps: Option<u64>,
}

impl PeerInfo {
    /// The summary a rightsize peer sends of its own socket.
    pub fn from_tcp_info(info: &TcpInfoSample) -> Self {
        PeerInfo {
            busy_time_us: info.busy_time_us,
            rwnd_limited_us: info.rwnd_limited_us,
            sndbuf_limited_us: info.sndbuf_limited_us,
            delivery_rate_bps: info.delivery_rate_bps,
            min_rtt_us: info.min_rtt_us.filter(|&r| r > 0),
            rtt_us: (info.rtt_us > 0).then_some(info.rtt_us),
            bytes_retrans: info.bytes_retrans,
            total_retrans_segs: Some(info.total_retrans_segs),
            pace_bps: None,
        }
    }
}

/// Something the peer said during the transfer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct PeerReport {
    /// When it arrived here.
    pub at: Duration,
    /// Its `TCP_INFO` summary, if the peer is rightsize.
    pub info: Option<PeerInfo>,
    /// A size the peer tells or asks for, bytes (drsFTP's in-transfer
    /// `SBUF`, the drsFTP paper, section 3.5).
    pub size: Option<Bytes>,
}

/// Why a peer report was ignored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PeerReportError {
    /// A size of zero.
    #[error("peer size 0 is not a buffer size")]
    ZeroSize,
    /// A size no socket can have.
    #[error("peer size {bytes} is above the largest buffer ({MAX_BUFFER_BYTES})")]
    SizeTooLarge {
        /// The size reported, bytes.
        bytes: u64,
    },
    /// A delivery rate or pacing ceiling beyond anything a TCP stream
    /// carries.
    #[error("peer {field} {bps} bit/s is above {MAX_PLAUSIBLE_RATE_BPS} bit/s")]
    RateImplausible {
        /// Which field: `delivery rate` or `pacing ceiling`.
        field: &'static str,
        /// The rate reported, bits per second.
        bps: u64,
    },
    /// A pacing ceiling too low to carry a transfer.
    #[error("peer pacing ceiling {bps} bit/s is below {MIN_PLAUSIBLE_PACE_BPS} bit/s")]
    PaceTooLow {
        /// The ceiling reported, bits per second.
        bps: u64,
    },
    /// An RTT of zero.
    #[error("peer {field} is 0")]
    ZeroRtt {
        /// Which field.
        field: &'static str,
    },
    /// An RTT too long to be real.
    #[error("peer {field} of {us} us is above {MAX_PLAUSIBLE_RTT:?}")]
    RttTooLong {
        /// Which field.
        field: &'static str,
        /// The value reported, microseconds.
        us: u64,
    },
    /// A limited time longer than the busy time that contains it.
    #[error("peer {field} ({limited_us} us) exceeds its busy time ({busy_us} us)")]
    LimitedExceedsBusy {
        /// Which field.
        field: &'static str,
        /// The limited time, microseconds.
        limited_us: u64,
        /// The busy time, microseconds.
        busy_us: u64,
    },
    /// A cumulative counter smaller than in the previous report.
    #[error("peer {field} went backwards ({previous} then {now})")]
    CounterWentBack {
        /// Which counter.
        field: &'static str,
        /// Its previous value.
        previous: u64,
        /// Its value now.
        now: u64,
    },
}

impl PeerReport {
    /// Checks the report on its own and against the previous accepted
    /// report (`None` for the first); a failing report is to be ignored
    /// whole.
    pub fn check(&self, previous: Option<&PeerReport>) -> Result<(), PeerReportError> {
        if let Some(Bytes(bytes)) = self.size {
            if bytes == 0 {
                return Err(PeerReportError::ZeroSize);
            }
            if bytes > MAX_BUFFER_BYTES {
                return Err(PeerReportError::SizeTooLarge { bytes });
            }
        }
        let Some(info) = self.info else {
            return Ok(());
        };
        for (field, rate) in [
            ("delivery rate", info.delivery_rate_bps),
            ("pacing ceiling", info.pace_bps),
        ] {
            if let Some(bps) = rate.filter(|&r| r > MAX_PLAUSIBLE_RATE_BPS) {
                return Err(PeerReportError::RateImplausible { field, bps });
            }
        }
        if let Some(bps) = info.pace_bps.filter(|&p| p < MIN_PLAUSIBLE_PACE_BPS) {
            return Err(PeerReportError::PaceTooLow { bps });
        }
        for (field, value) in [("min_rtt", info.min_rtt_us), ("rtt", info.rtt_us)] {
            match value.map(u64::from) {
                Some(0) => return Err(PeerReportError::ZeroRtt { field }),
                Some(us) if us > MAX_PLAUSIBLE_RTT.as_micros() as u64 => {
                    return Err(PeerReportError::RttTooLong { field, us });
                }
                _ => {}
            }
        }
        if let Some(busy_us) = info.busy_time_us {
            for (field, limited) in [
                ("rwnd_limited", info.rwnd_limited_us),
                ("sndbuf_limited", info.sndbuf_limited_us),
            ] {
                if let Some(limited_us) = limited.filter(|&l| l > busy_us) {
                    return Err(PeerReportError::LimitedExceedsBusy {
                        field,
                        limited_us,
                        busy_us,
                    });
                }
            }
        }
        let Some(before) = previous.and_then(|p| p.info) else {
            return Ok(());
        };
        let counters = [
            ("busy_time", before.busy_time_us, info.busy_time_us),
            ("rwnd_limited", before.rwnd_limited_us, info.rwnd_limited_us),
            (
                "sndbuf_limited",
                before.sndbuf_limited_us,
                info.sndbuf_limited_us,
            ),
            ("bytes_retrans", before.bytes_retrans, info.bytes_retrans),
            (
                "total_retrans",
                before.total_retrans_segs.map(u64::from),
                info.total_retrans_segs.map(u64::from),
            ),
        ];
        for (field, previous, now) in counters {
            if let (Some(previous), Some(now)) = (previous, now)
                && now < previous
            {
                return Err(PeerReportError::CounterWentBack {
                    field,
                    previous,
                    now,
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
