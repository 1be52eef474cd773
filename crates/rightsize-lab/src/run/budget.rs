//! How many bytes each run moves, and how long it may take.
//!
//! A fixed 64 KiB buffer over a 100 ms round trip is ~5 Mbit/s, so stock
//! would take 14 minutes for 512 MiB. A tuner whose rate is known to be low
//! (stock or a small static buffer, from the window and the round trip),
//! or whose first repetition measured below [`SLOW_RATE_BPS`], moves
//! instead what lasts [`SLOW_RUN`] at that rate. What is compared is
//! the goodput in steady state, which such a run still reaches.

use std::time::Duration;

use rightsize_path::{PathSpec, Side};
use rightsize_tune::units::Bytes;
use rightsize_tune::{STOCK_BUFFER, TunerSpec};

/// Below this goodput (bits/s), a tuner's runs are shortened.
pub const SLOW_RATE_BPS: f64 = 20e6;

/// How long a shortened run should last.
pub const SLOW_RUN: Duration = Duration::from_secs(30);

/// How long a shortened run of `--smoke` should last.
pub const SMOKE_SLOW_RUN: Duration = Duration::from_secs(5);

/// The smallest shortened transfer.
pub const MIN_SIZE: Bytes = Bytes(1 << 20);

/// Payload per full-size packet: a 1500-byte IP packet carries 1448 bytes
/// of TCP payload (20 IP, 20 TCP, 12 timestamp option).
pub const PAYLOAD_PER_PACKET: f64 = 1448.0 / 1500.0;

/// The highest goodput the path allows at the start: the rate from the
/// sender (right, the server) to the receiver times [`PAYLOAD_PER_PACKET`].
pub fn goodput_ceiling_bps(path: &PathSpec) -> f64 {
    path.link_from(Side::Right).rate.initial().0 as f64 * PAYLOAD_PER_PACKET
}

/// The goodput a tuner with a fixed window should reach: the window over
/// the round trip, at most the path's ceiling. `None` for tuners that
/// size their buffers as they go.
pub fn expected_rate_bps(tuner: &TunerSpec, path: &PathSpec) -> Option<f64> {
    // With SO_RCVBUF = S Linux allocates 2 S and advertises about S.
    let window = match tuner {
        TunerSpec::Stock => STOCK_BUFFER,
        TunerSpec::Static(size) => *size,
        _ => return None,
    };
    let rtt = path.rtt().as_secs_f64();
    if rtt <= 0.0 {
        return None;
    }
    Some((window.0 as f64 * 8.0 / rtt).min(goodput_ceiling_bps(path)))
}

/// Why a run moves fewer bytes than asked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Basis {
    /// The rate a fixed window allows ([`expected_rate_bps`]).
    Expected(f64),
    /// The goodput the tuner's first repetition measured.
    Measured(f64),
}

impl Basis {
    /// The rate, bits/s.
    pub fn rate_bps(self) -> f64 {
        match self {
            Basis::Expected(r) | Basis::Measured(r) => r,
        }
    }
}

/// The size of one run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunSize {
    /// Bytes to move.
    pub bytes: Bytes,
    /// Set when `bytes` is less than asked, with the rate it was computed from.
    pub shortened: Option<Basis>,
}

/// Picks the size of a run: `requested`, unless the expected rate or, failing
/// that, the first repetition's measured rate is below [`SLOW_RATE_BPS`];
/// then what lasts `budget` at that rate, in whole MiB, at least
/// [`MIN_SIZE`], never more than asked.
pub fn run_size(
    requested: Bytes,
    expected_bps: Option<f64>,
    first_rep_bps: Option<f64>,
    budget: Duration,
) -> RunSize {
    let basis = match (expected_bps, first_rep_bps) {
        (Some(r), _) if r < SLOW_RATE_BPS => Some(Basis::Expected(r)),
        (_, Some(r)) if r < SLOW_RATE_BPS => Some(Basis::Measured(r)),
        _ => None,
    };
    let full = RunSize {
        bytes: requested,
        shortened: None,
    };
    let Some(basis) = basis else {
        return full;
    };
    let bytes = basis.rate_bps().max(0.0) * budget.as_secs_f64() / 8.0;
    let mib = (bytes as u64 >> 20) << 20;
    let bytes = Bytes(mib.max(MIN_SIZE.0));
    if bytes >= requested {
        return full;
    }
    RunSize {
        bytes,
        shortened: Some(basis),
    }
}

/// The longest a run may take before it is stopped as failed: two
/// minutes for setting up and tearing down, plus the transfer at a
/// twentieth of the path's peak rate (or of the rate the size was shortened
/// for). A slow tuner is a measurement; this only catches a hung run.
pub fn run_deadline(size: RunSize, path: &PathSpec) -> Duration {
    let peak = path.link_from(Side::Right).rate.peak().0 as f64;
    let rate = size.shortened.map_or(peak, Basis::rate_bps).max(1e5);
    Duration::from_secs(120) + Duration::from_secs_f64(size.bytes.0 as f64 * 8.0 * 20.0 / rate)
}
