//! Bandwidth-delay product arithmetic, exact where the arithmetic is exact.
//!
//! A TCP connection carries at most one window per round trip, so a path of
//! rate `R` and round-trip time `T` needs a window of `R x T` (the BDP) to be
//! full, and a window `W` caps a stream at `W / T` whatever the link. These
//! functions compute both directions of that relation in integers (bytes,
//! bits per second, nanoseconds), rounding a BDP up to a whole byte, and the
//! window-scale facts of RFC 7323 section 2 that decide whether one TCP
//! connection can carry the BDP at all.

use std::time::Duration;

use crate::units::{BitRate, Bytes};

/// The largest unscaled TCP window (RFC 7323 section 2.2): 65,535 bytes.
pub const MAX_UNSCALED_WINDOW: u64 = 65_535;

/// The largest window-scale shift (RFC 7323 section 2.3): 14.
pub const MAX_WINDOW_SCALE: u8 = 14;

/// The largest window one TCP connection can advertise: 65,535 x 2^14 =
/// 1,073,725,440 bytes (the perfSONAR lab, section 1.4; docs/sources.md).
pub const MAX_WINDOW: Bytes = Bytes(MAX_UNSCALED_WINDOW << MAX_WINDOW_SCALE);

/// The Ethernet TCP maximum segment size without options (1500 - 40).
pub const DEFAULT_MSS: u64 = 1460;

const NANOS_PER_SEC: u128 = 1_000_000_000;

/// A path as the sizing arithmetic sees it: bottleneck rate and round trip.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathParams {
    /// Bottleneck rate.
    pub rate: BitRate,
    /// Round-trip time.
    pub rtt: Duration,
}

impl PathParams {
    /// The bandwidth-delay product: `rate x rtt / 8`, rounded up to a byte.
    ///
    /// The perfSONAR lab: 10 Gbit/s x 50 ms = 62,500,000 bytes.
    pub fn bdp(&self) -> Bytes {
        let bits = u128::from(self.rate.bps()) * self.rtt.as_nanos();
        let bytes = bits.div_ceil(8 * NANOS_PER_SEC);
        Bytes(u64::try_from(bytes).unwrap_or(u64::MAX))
    }

    /// The share of the path a window (or buffer) of `window` bytes can use,
    /// from 0.0 to 1.0 (the perfSONAR lab: 1 MiB at 10 Gbit/s x 50 ms is 1.68%).
    pub fn utilisation(&self, window: Bytes) -> f64 {
        let bdp = self.bdp().get();
        if bdp == 0 {
            return 1.0;
        }
        (window.get() as f64 / bdp as f64).min(1.0)
    }

    /// How many parallel connections the BDP needs: 1 unless it is beyond
    /// [`MAX_WINDOW`].
    pub fn streams_needed(&self) -> u64 {
        self.bdp().get().div_ceil(MAX_WINDOW.get()).max(1)
    }
}

/// The most one connection with window `window` can carry over `rtt`:
/// `window x 8 / rtt` (FreeBSD's autosizing patch: 32 KiB at 100 ms is 2.62 Mbit/s).
pub fn max_rate_for_window(window: Bytes, rtt: Duration) -> BitRate {
    let nanos = rtt.as_nanos();
    if nanos == 0 {
        return BitRate(u64::MAX);
    }
    let bps = u128::from(window.get()) * 8 * NANOS_PER_SEC / nanos;
    BitRate(u64::try_from(bps).unwrap_or(u64::MAX))
}

/// The smallest window-scale shift whose largest window holds `window`, or
/// `None` when even shift 14 cannot (then one connection cannot carry it).
pub fn window_scale_needed(window: Bytes) -> Option<u8> {
    (0..=MAX_WINDOW_SCALE).find(|&shift| MAX_UNSCALED_WINDOW << shift >= window.get())
}

/// The largest window a connection can advertise with scale `shift`.
pub fn max_window_for_scale(shift: u8) -> Bytes {
    Bytes(MAX_UNSCALED_WINDOW << shift.min(MAX_WINDOW_SCALE))
}

/// The window scale Linux offers in its SYN when no `SO_RCVBUF` was set:
/// `ilog2(max(tcp_rmem[2], rmem_max)) - 15`, clamped to 0..=14
/// (`tcp_select_initial_window`; see `docs/linux-tcp.md`).
pub fn linux_handshake_window_scale(tcp_rmem_max: Bytes, rmem_max: Bytes) -> u8 {
    let space = tcp_rmem_max
        .get()
        .max(rmem_max.get())
        .clamp(1, u64::from(u32::MAX));
    let log = 63 - space.leading_zeros();
    u8::try_from(log.saturating_sub(15))
        .unwrap_or(MAX_WINDOW_SCALE)
        .min(MAX_WINDOW_SCALE)
}

/// Rounds `bytes` up to an even multiple of `mss`, that is a multiple of
/// `2 x mss`, as the Windows tuning note sizes `TcpWindowSize` (150,000 bytes at MSS 1460
/// becomes 104 x 1460 = 151,840).
pub fn round_up_to_even_mss(bytes: Bytes, mss: u64) -> Bytes {
    let step = 2 * mss.max(1);
    Bytes(bytes.get().div_ceil(step).saturating_mul(step))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn path(rate: &str, rtt_ms: f64) -> PathParams {
        PathParams {
            rate: rate.parse().unwrap(),
            rtt: Duration::from_secs_f64(rtt_ms / 1000.0),
        }
    }

    #[test]
    fn perfsonar_ten_gigabit_fifty_ms() {
        assert_eq!(path("10G", 50.0).bdp(), Bytes(62_500_000));
    }

    #[test]
    fn perfsonar_two_gigabit_hundred_ms_and_the_mib_convention() {
        assert_eq!(path("2G", 100.0).bdp(), Bytes(25_000_000));
        // The lab then redoes it in MiB: 2 x 25 MiB.
        assert_eq!(2 * 25 * 1024 * 1024, 52_428_800);
        assert_eq!("25MiB".parse::<Bytes>().unwrap().get() * 2, 52_428_800);
    }

    #[test]
    fn perfsonar_one_mib_buffer_uses_1_68_percent() {
        let share = path("10G", 50.0).utilisation(Bytes(1 << 20));
        assert_eq!(format!("{:.2}%", share * 100.0), "1.68%");
    }

    #[test]
    fn windows_note_hundred_megabit() {
        assert_eq!(path("100M", 20.0).bdp(), Bytes(250_000));
        assert_eq!(path("100M", 2.5).bdp(), Bytes(31_250));
    }

    #[test]
    fn windows_note_tcp_window_size_even_mss() {
        for (rtt_ms, expected) in [(12.0, 151_840), (20.0, 251_120), (40.0, 502_240)] {
            let bdp = path("100M", rtt_ms).bdp();
            assert_eq!(
                round_up_to_even_mss(bdp, DEFAULT_MSS),
                Bytes(expected),
                "{rtt_ms} ms"
            );
        }
    }

    #[test]
    fn drsftp_oc12_hundred_ms() {
        assert_eq!(path("622M", 100.0).bdp(), Bytes(7_775_000));
    }

    #[test]
    fn freebsd_patch_window_caps() {
        let rtt = Duration::from_millis(100);
        assert_eq!(
            max_rate_for_window(Bytes(64 * 1024), rtt).human(),
            "5.24 Mbit/s"
        );
        assert_eq!(
            max_rate_for_window(Bytes(32 * 1024), rtt).human(),
            "2.62 Mbit/s"
        );
    }

    #[test]
    fn window_scale() {
        assert_eq!(MAX_WINDOW, Bytes(1_073_725_440));
        assert_eq!(window_scale_needed(Bytes(65_535)), Some(0));
        assert_eq!(window_scale_needed(Bytes(65_536)), Some(1));
        assert_eq!(window_scale_needed(Bytes(62_500_000)), Some(10));
        assert_eq!(window_scale_needed(MAX_WINDOW), Some(14));
        assert_eq!(window_scale_needed(Bytes(MAX_WINDOW.get() + 1)), None);
    }

    #[test]
    fn linux_scale_matches_what_was_seen_here() {
        // tcp_rmem[2] = 32 MiB gives rcv_wscale 10 (linux-tcp.md, "seen").
        assert_eq!(
            linux_handshake_window_scale(Bytes(33_554_432), Bytes(4_194_304)),
            10
        );
        assert_eq!(
            linux_handshake_window_scale(Bytes(6 << 20), Bytes(212_992)),
            7
        );
    }

    #[test]
    fn beyond_one_connection() {
        let p = path("400G", 100.0); // 5 GB
        assert_eq!(p.bdp(), Bytes(5_000_000_000));
        assert_eq!(p.streams_needed(), 5);
        assert_eq!(path("10G", 50.0).streams_needed(), 1);
    }
}
