//! A sample of the kernel's `TCP_INFO` for one socket, as plain values.
//!
//! The system layer (`rightsize_sys::tcp_info`) reads `struct tcp_info` and
//! fills [`TcpInfoSample`]; tuners, telemetry and verdicts read it. Every
//! field carries its unit in its name. The fields of the original 2.6 struct
//! (the first 104 bytes, through `tcpi_total_retrans`) are plain values; every
//! field added since is an `Option` that is `None` when the running kernel
//! did not fill it (the system layer trusts only fields that the length
//! returned by `getsockopt` fully covers). Rates are converted from the
//! kernel's bytes per second to bits per second. Nothing here does I/O.

use serde::Serialize;

/// `tcpi_state` of an established connection (`TCP_ESTABLISHED`).
pub const TCP_STATE_ESTABLISHED: u8 = 1;

/// `tcpi_snd_ssthresh` before the first loss: `TCP_INFINITE_SSTHRESH`.
pub const INFINITE_SSTHRESH_SEGS: u32 = 0x7fff_ffff;

/// A pacing rate of "no limit": the kernel reports `~0` bytes/s when pacing
/// is off (`tcpi_pacing_rate`) or `SO_MAX_PACING_RATE` is unset
/// (`tcpi_max_pacing_rate`); it is kept as `u64::MAX` rather than multiplied.
pub const PACING_UNLIMITED_BPS: u64 = u64::MAX;

/// One reading of `TCP_INFO`, in the kernel's order.
///
/// Comments give the unit and, for optional fields, the kernel release that
/// added the field. Counters are cumulative since the connection opened.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TcpInfoSample {
    /// How many bytes of `struct tcp_info` the kernel returned (280 on 6.18).
    pub info_len_bytes: usize,
    /// `tcpi_state`: the TCP state (`1` = established, see `TCP_STATE_*`).
    pub state: u8,
    /// `tcpi_ca_state`: congestion-avoidance state (0 open, 1 disorder,
    /// 2 CWR, 3 recovery, 4 loss).
    pub ca_state: u8,
    /// `tcpi_retransmits`: retransmissions of the current head segment.
    pub retransmits: u8,
    /// `tcpi_probes`: unanswered zero-window probes.
    pub probes: u8,
    /// `tcpi_backoff`: exponential RTO backoff count.
    pub backoff: u8,
    /// `tcpi_options`: `TCPI_OPT_*` bits (timestamps 1, SACK 2, window scale 4, ECN 8, ...).
    pub options: u8,
    /// `tcpi_snd_wscale`: the peer's window scale shift (RFC 7323), 0..14.
    pub snd_wscale: u8,
    /// `tcpi_rcv_wscale`: our window scale shift, fixed at the handshake.
    pub rcv_wscale: u8,
    /// `tcpi_delivery_rate_app_limited` (4.9): the last delivery-rate sample
    /// was limited by the application, not the network.
    pub delivery_rate_app_limited: Option<bool>,
    /// `tcpi_fastopen_client_fail` (5.5): why TCP Fast Open failed, 0 = no
    /// failure recorded. Shares a byte with the 4.9 flag, so reads 0 on 4.9-5.4.
    pub fastopen_client_fail: Option<u8>,
    /// `tcpi_rto`: retransmission timeout, microseconds.
    pub rto_us: u32,
    /// `tcpi_ato`: delayed-ACK timeout, microseconds.
    pub ato_us: u32,
    /// `tcpi_snd_mss`: sending maximum segment size, bytes.
    pub snd_mss_bytes: u32,
    /// `tcpi_rcv_mss`: estimate of the peer's MSS, bytes.
    pub rcv_mss_bytes: u32,
    /// `tcpi_unacked`: segments in flight (sent, not yet acknowledged).
    pub unacked_segs: u32,
    /// `tcpi_sacked`: segments selectively acknowledged.
    pub sacked_segs: u32,
    /// `tcpi_lost`: segments presumed lost.
    pub lost_segs: u32,
    /// `tcpi_retrans`: retransmitted segments now in flight.
    pub retrans_segs: u32,
    /// `tcpi_fackets`: always 0 since forward ACK was removed (4.15).
    pub fackets_segs: u32,
    /// `tcpi_last_data_sent`: time since data was last sent, milliseconds.
    pub last_data_sent_ms: u32,
    /// `tcpi_last_data_recv`: time since data was last received, milliseconds.
    pub last_data_recv_ms: u32,
    /// `tcpi_last_ack_recv`: time since an ACK was last received, milliseconds.
    /// (`tcpi_last_ack_sent` is left out: the kernel never fills it.)
    pub last_ack_recv_ms: u32,
    /// `tcpi_pmtu`: path MTU, bytes.
    pub pmtu_bytes: u32,
    /// `tcpi_rcv_ssthresh`: current window clamp of the receive slow start, bytes.
    pub rcv_ssthresh_bytes: u32,
    /// `tcpi_rtt`: smoothed RTT of our sent data, microseconds (0 before any ACK).
    pub rtt_us: u32,
    /// `tcpi_rttvar`: RTT variation, microseconds.
    pub rttvar_us: u32,
    /// `tcpi_snd_ssthresh`: slow-start threshold, segments
    /// ([`INFINITE_SSTHRESH_SEGS`] until the first loss).
    pub snd_ssthresh_segs: u32,
    /// `tcpi_snd_cwnd`: congestion window, segments (not bytes).
    pub snd_cwnd_segs: u32,
    /// `tcpi_advmss`: MSS we advertised, bytes.
    pub advmss_bytes: u32,
    /// `tcpi_reordering`: reordering degree the sender tolerates, segments.
    pub reordering_segs: u32,
    /// `tcpi_rcv_rtt`: receiver-side RTT estimate, microseconds (a pure
    /// receiver has this and no `rtt_us` of its own).
    pub rcv_rtt_us: u32,
    /// `tcpi_rcv_space`: receive-autotuning's estimate of the data the
    /// sender delivers per RTT, bytes.
    pub rcv_space_bytes: u32,
    /// `tcpi_total_retrans`: segments retransmitted over the connection's life.
    pub total_retrans_segs: u32,
    /// `tcpi_pacing_rate` (3.15), converted from bytes/s to bits/s
    /// ([`PACING_UNLIMITED_BPS`] when not pacing).
    pub pacing_rate_bps: Option<u64>,
    /// `tcpi_max_pacing_rate` (3.15, `SO_MAX_PACING_RATE`), converted from
    /// bytes/s to bits/s ([`PACING_UNLIMITED_BPS`] when unset).
    pub max_pacing_rate_bps: Option<u64>,
    /// `tcpi_bytes_acked` (4.1): bytes acknowledged by the peer. On 6.18 this
    /// counts the SYN too, so it is data + 1 after a complete transfer.
    pub bytes_acked: Option<u64>,
    /// `tcpi_bytes_received` (4.1): bytes received in order.
    pub bytes_received: Option<u64>,
    /// `tcpi_segs_out` (4.2): segments sent, including pure ACKs and retransmissions.
    pub segs_out: Option<u32>,
    /// `tcpi_segs_in` (4.2): segments received.
    pub segs_in: Option<u32>,
    /// `tcpi_notsent_bytes` (4.6): bytes queued but not yet sent.
    pub notsent_bytes: Option<u32>,
    /// `tcpi_min_rtt` (4.6): windowed minimum RTT, microseconds.
    pub min_rtt_us: Option<u32>,
    /// `tcpi_data_segs_in` (4.6): segments received carrying data.
    pub data_segs_in: Option<u32>,
    /// `tcpi_data_segs_out` (4.6): segments sent carrying data.
    pub data_segs_out: Option<u32>,
    /// `tcpi_delivery_rate` (4.9), converted from bytes/s to bits/s.
    pub delivery_rate_bps: Option<u64>,
    /// `tcpi_busy_time` (4.10): time with data to send, microseconds. It
    /// includes the two `*_limited` times and advances in jiffies (4 ms at
    /// HZ=250), so a transfer shorter than a jiffy can read 0.
    pub busy_time_us: Option<u64>,
    /// `tcpi_rwnd_limited` (4.10): time the sender was stopped by the peer's
    /// receive window, microseconds.
    pub rwnd_limited_us: Option<u64>,
    /// `tcpi_sndbuf_limited` (4.10): time the sender was stopped by its own
    /// send buffer, microseconds.
    pub sndbuf_limited_us: Option<u64>,
    /// `tcpi_delivered` (4.18): segments delivered, including retransmissions.
    pub delivered_segs: Option<u32>,
    /// `tcpi_delivered_ce` (4.18): delivered segments that carried ECN CE marks.
    pub delivered_ce_segs: Option<u32>,
    /// `tcpi_bytes_sent` (4.19): data bytes sent, including retransmissions.
    pub bytes_sent: Option<u64>,
    /// `tcpi_bytes_retrans` (4.19): data bytes retransmitted.
    pub bytes_retrans: Option<u64>,
    /// `tcpi_dsack_dups` (4.19): duplicate segments reported by D-SACK.
    pub dsack_dups: Option<u32>,
    /// `tcpi_reord_seen` (4.19): reordering events seen.
    pub reord_seen: Option<u32>,
    /// `tcpi_rcv_ooopack` (5.4): out-of-order packets received.
    pub rcv_ooopack: Option<u32>,
    /// `tcpi_snd_wnd` (5.4): the peer's advertised receive window after
    /// scaling, bytes: what the peer lets us have in flight.
    pub snd_wnd_bytes: Option<u32>,
    /// `tcpi_rcv_wnd` (6.2): the receive window we advertise after scaling,
    /// bytes: the window the kernel actually offers, whatever the buffer.
    pub rcv_wnd_bytes: Option<u32>,
    /// `tcpi_rehash` (6.2): PLB- or timeout-triggered rehash attempts.
    pub rehash: Option<u32>,
    /// `tcpi_total_rto` (6.7): RTO timeouts, including SYN and recurring ones.
    pub total_rto: Option<u16>,
    /// `tcpi_total_rto_recoveries` (6.7): RTO recoveries, including an unfinished one.
    pub total_rto_recoveries: Option<u16>,
    /// `tcpi_total_rto_time` (6.7): time spent in RTO recoveries, milliseconds.
    pub total_rto_time_ms: Option<u32>,
    /// `tcpi_received_ce` (6.18, AccECN): CE-marked segments received.
    pub received_ce_segs: Option<u32>,
    /// `tcpi_delivered_e1_bytes` (6.18, AccECN): bytes delivered with ECT(1),
    /// a 32-bit counter that wraps.
    pub delivered_e1_bytes: Option<u32>,
    /// `tcpi_delivered_e0_bytes` (6.18, AccECN): bytes delivered with ECT(0), wraps.
    pub delivered_e0_bytes: Option<u32>,
    /// `tcpi_delivered_ce_bytes` (6.18, AccECN): bytes delivered with CE, wraps.
    pub delivered_ce_bytes: Option<u32>,
    /// `tcpi_received_e1_bytes` (6.18, AccECN): bytes received with ECT(1), wraps.
    pub received_e1_bytes: Option<u32>,
    /// `tcpi_received_e0_bytes` (6.18, AccECN): bytes received with ECT(0), wraps.
    pub received_e0_bytes: Option<u32>,
    /// `tcpi_received_ce_bytes` (6.18, AccECN): bytes received with CE, wraps.
    pub received_ce_bytes: Option<u32>,
}

impl TcpInfoSample {
    /// Share of the busy time during which the peer's receive window stopped
    /// the sender (`rwnd_limited / busy_time`), 0.0..=1.0 for kernel samples
    /// (the kernel's busy time includes the limited times).
    ///
    /// `None` if either field is missing or nothing was sent yet (busy time 0).
    /// A high share on the sender means the receiver's buffer, or a window
    /// clamp, is what limits the transfer.
    pub fn rwnd_limited_share(&self) -> Option<f64> {
        share(self.rwnd_limited_us, self.busy_time_us)
    }

    /// Share of the busy time during which the sender's own send buffer
    /// stopped it (`sndbuf_limited / busy_time`); `None` as for
    /// [`Self::rwnd_limited_share`]. A high share means raise `SO_SNDBUF` or
    /// `tcp_wmem[2]`.
    pub fn sndbuf_limited_share(&self) -> Option<f64> {
        share(self.sndbuf_limited_us, self.busy_time_us)
    }

    /// The congestion window in bytes (`snd_cwnd_segs * snd_mss_bytes`).
    pub fn snd_cwnd_bytes(&self) -> u64 {
        u64::from(self.snd_cwnd_segs) * u64::from(self.snd_mss_bytes)
    }

    /// The bytes in flight (`unacked_segs * snd_mss_bytes`).
    pub fn inflight_bytes(&self) -> u64 {
        u64::from(self.unacked_segs) * u64::from(self.snd_mss_bytes)
    }
}

/// Converts a kernel rate in bytes per second to bits per second, keeping
/// the kernel's "unlimited" (`~0`) as [`PACING_UNLIMITED_BPS`] and saturating
/// otherwise.
pub fn bytes_per_sec_to_bps(bytes_per_sec: u64) -> u64 {
    if bytes_per_sec == u64::MAX {
        PACING_UNLIMITED_BPS
    } else {
        bytes_per_sec.saturating_mul(8)
    }
}

fn share(part_us: Option<u64>, busy_us: Option<u64>) -> Option<f64> {
    let busy_us = busy_us.filter(|&b| b > 0)?;
    // Precision loss above 2^53 µs (285 years) does not matter here.
    Some(part_us? as f64 / busy_us as f64)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn sample(busy: Option<u64>, rwnd: Option<u64>, sndbuf: Option<u64>) -> TcpInfoSample {
        TcpInfoSample {
            busy_time_us: busy,
            rwnd_limited_us: rwnd,
            sndbuf_limited_us: sndbuf,
            ..TcpInfoSample::default()
        }
    }

    #[test]
    fn tcpinfo_shares_are_fractions_of_busy_time() {
        let s = sample(Some(40_000), Some(34_000), Some(4_000));
        assert!((s.rwnd_limited_share().unwrap() - 0.85).abs() < 1e-12);
        assert!((s.sndbuf_limited_share().unwrap() - 0.1).abs() < 1e-12);
    }

    #[test]
    fn tcpinfo_shares_are_none_without_busy_time() {
        // Nothing sent yet: busy time 0 is not "0% limited".
        assert_eq!(sample(Some(0), Some(0), Some(0)).rwnd_limited_share(), None);
        assert_eq!(
            sample(Some(0), Some(0), Some(0)).sndbuf_limited_share(),
            None
        );
        // A kernel older than 4.10 fills none of the three.
        assert_eq!(sample(None, None, None).rwnd_limited_share(), None);
        assert_eq!(sample(Some(8_000), None, None).sndbuf_limited_share(), None);
        assert_eq!(sample(None, Some(8_000), None).rwnd_limited_share(), None);
    }

    #[test]
    fn tcpinfo_shares_of_an_unlimited_flow_are_zero() {
        let s = sample(Some(4_000), Some(0), Some(0));
        assert_eq!(s.rwnd_limited_share(), Some(0.0));
        assert_eq!(s.sndbuf_limited_share(), Some(0.0));
    }

    #[test]
    fn tcpinfo_rates_are_bits_per_second_and_keep_unlimited() {
        assert_eq!(bytes_per_sec_to_bps(125_000_000), 1_000_000_000);
        assert_eq!(bytes_per_sec_to_bps(0), 0);
        assert_eq!(bytes_per_sec_to_bps(u64::MAX), PACING_UNLIMITED_BPS);
        assert_eq!(bytes_per_sec_to_bps(u64::MAX / 4), u64::MAX);
    }

    #[test]
    fn tcpinfo_cwnd_bytes_multiplies_segments_by_mss() {
        let s = TcpInfoSample {
            snd_cwnd_segs: 10,
            snd_mss_bytes: 1448,
            ..TcpInfoSample::default()
        };
        assert_eq!(s.snd_cwnd_bytes(), 14_480);
    }
}
