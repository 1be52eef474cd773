//! One end's `TCP_INFO` summary for a verdict ([`TcpSummary`]), and how a
//! rightsize server writes its data socket's final one into the text of
//! its `226` (`tcpi=busy=...;rwnd=...`) for the client to read back.
//!
//! Guarantees: [`TcpSummary::from_reply_text`] never panics and returns
//! `None` for a `226` without a `tcpi=` word (any other server); unknown
//! keys inside it are skipped, so later versions can add some; a value that
//! is not a decimal number leaves its field `None`.

use serde::Serialize;

use crate::PeerInfo;
use crate::tcpinfo::TcpInfoSample;

/// The `TCP_INFO` numbers a verdict reads, each `None` where the kernel
/// (or the peer) did not give it. Times are microseconds, counters are
/// cumulative over the connection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct TcpSummary {
    /// `tcpi_busy_time`: time with data in flight, us.
    pub busy_time_us: Option<u64>,
    /// `tcpi_rwnd_limited`: time the peer's receive window stopped the sender, us.
    pub rwnd_limited_us: Option<u64>,
    /// `tcpi_sndbuf_limited`: time the send buffer stopped the sender, us.
    pub sndbuf_limited_us: Option<u64>,
    /// `tcpi_delivery_rate`, bit/s.
    pub delivery_rate_bps: Option<u64>,
    /// `tcpi_min_rtt`, us.
    pub min_rtt_us: Option<u64>,
    /// `tcpi_rtt` (smoothed), us.
    pub rtt_us: Option<u64>,
    /// `tcpi_bytes_retrans`.
    pub bytes_retrans: Option<u64>,
    /// `tcpi_total_retrans`, segments.
    pub total_retrans_segs: Option<u64>,
    /// `tcpi_bytes_sent` (retransmissions included).
    pub bytes_sent: Option<u64>,
    /// `tcpi_snd_cwnd`, segments.
    pub snd_cwnd_segs: Option<u64>,
    /// `tcpi_snd_mss`, bytes.
    pub snd_mss_bytes: Option<u64>,
    /// `tcpi_snd_wscale`: the peer's window scale, fixed at the handshake.
    pub snd_wscale: Option<u64>,
    /// `tcpi_rcv_wscale`: this end's window scale.
    pub rcv_wscale: Option<u64>,
    /// `tcpi_rcv_space`: the receive space autotuning aims at, bytes.
    pub rcv_space_bytes: Option<u64>,
}

/// The word of the `226` text that carries a [`TcpSummary`].
const MARK: &str = "tcpi=";

/// Keys inside `tcpi=`, in the order written.
const KEYS: [&str; 14] = [
    "busy", "rwnd", "sndbuf", "rate", "minrtt", "rtt", "bretrans", "retrans", "bsent", "cwnd",
    "mss", "swscale", "rwscale", "rspace",
];

impl TcpSummary {
    /// The summary of a sample.
    pub fn from_tcp_info(info: &TcpInfoSample) -> TcpSummary {
        let nz = |v: u32| (v > 0).then_some(u64::from(v));
        TcpSummary {
            busy_time_us: info.busy_time_us,
            rwnd_limited_us: info.rwnd_limited_us,
            sndbuf_limited_us: info.sndbuf_limited_us,
            delivery_rate_bps: info.delivery_rate_bps,
            min_rtt_us: info.min_rtt_us.filter(|&r| r > 0).map(u64::from),
            rtt_us: nz(info.rtt_us),
            bytes_retrans: info.bytes_retrans,
            total_retrans_segs: Some(u64::from(info.total_retrans_segs)),
            bytes_sent: info.bytes_sent,
            snd_cwnd_segs: nz(info.snd_cwnd_segs),
            snd_mss_bytes: nz(info.snd_mss_bytes),
            snd_wscale: Some(u64::from(info.snd_wscale)),
            rcv_wscale: Some(u64::from(info.rcv_wscale)),
            rcv_space_bytes: nz(info.rcv_space_bytes),
        }
    }

    /// What a peer's `RIGHTSIZE INFO` notice or `RINF` carried.
    pub fn from_peer_info(info: &PeerInfo) -> TcpSummary {
        TcpSummary {
            busy_time_us: info.busy_time_us,
            rwnd_limited_us: info.rwnd_limited_us,
            sndbuf_limited_us: info.sndbuf_limited_us,
            delivery_rate_bps: info.delivery_rate_bps,
            min_rtt_us: info.min_rtt_us.map(u64::from),
            rtt_us: info.rtt_us.map(u64::from),
            bytes_retrans: info.bytes_retrans,
            total_retrans_segs: info.total_retrans_segs.map(u64::from),
            ..TcpSummary::default()
        }
    }

    fn values(&self) -> [Option<u64>; 14] {
        [
            self.busy_time_us,
            self.rwnd_limited_us,
            self.sndbuf_limited_us,
            self.delivery_rate_bps,
            self.min_rtt_us,
            self.rtt_us,
            self.bytes_retrans,
            self.total_retrans_segs,
            self.bytes_sent,
            self.snd_cwnd_segs,
            self.snd_mss_bytes,
            self.snd_wscale,
            self.rcv_wscale,
            self.rcv_space_bytes,
        ]
    }

    fn field(&mut self, index: usize) -> Option<&mut Option<u64>> {
        Some(match index {
            0 => &mut self.busy_time_us,
            1 => &mut self.rwnd_limited_us,
            2 => &mut self.sndbuf_limited_us,
            3 => &mut self.delivery_rate_bps,
            4 => &mut self.min_rtt_us,
            5 => &mut self.rtt_us,
            6 => &mut self.bytes_retrans,
            7 => &mut self.total_retrans_segs,
            8 => &mut self.bytes_sent,
            9 => &mut self.snd_cwnd_segs,
            10 => &mut self.snd_mss_bytes,
            11 => &mut self.snd_wscale,
            12 => &mut self.rcv_wscale,
            13 => &mut self.rcv_space_bytes,
            _ => return None,
        })
    }

    /// The word for the `226` text: `tcpi=busy=1200;rwnd=0;...`, known
    /// fields only, no spaces.
    pub fn reply_word(&self) -> String {
        let pairs: Vec<String> = KEYS
            .iter()
            .zip(self.values())
            .filter_map(|(k, v)| v.map(|v| format!("{k}={v}")))
            .collect();
        format!("{MARK}{}", pairs.join(";"))
    }

    /// Reads the `tcpi=` word of a `226` text back; `None` without one.
    pub fn from_reply_text(text: &str) -> Option<TcpSummary> {
        let word = text
            .split(' ')
            .find_map(|w| w.strip_prefix(MARK))?
            .trim_end_matches('.');
        let mut summary = TcpSummary::default();
        for pair in word.split(';') {
            let Some((key, value)) = pair.split_once('=') else {
                continue;
            };
            let Some(index) = KEYS.iter().position(|k| k.eq_ignore_ascii_case(key)) else {
                continue;
            };
            if let (Some(field), Ok(v)) = (summary.field(index), value.parse::<u64>()) {
                *field = Some(v);
            }
        }
        Some(summary)
    }

    /// `limited / busy` as a share in 0..=1; `None` without both numbers
    /// or with no busy time.
    pub fn share(limited_us: Option<u64>, busy_us: Option<u64>) -> Option<f64> {
        let busy = busy_us.filter(|&b| b > 0)?;
        Some((limited_us? as f64 / busy as f64).min(1.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_through_the_226_text() {
        let s = TcpSummary {
            busy_time_us: Some(5_000_000),
            rwnd_limited_us: Some(4_000_000),
            sndbuf_limited_us: Some(0),
            rtt_us: Some(40_100),
            snd_wscale: Some(7),
            ..TcpSummary::default()
        };
        let text = format!(
            "Transfer complete; data socket rcvbuf=1 sndbuf=2 {}.",
            s.reply_word()
        );
        assert!(text.contains(" tcpi=busy=5000000;rwnd=4000000;sndbuf=0;rtt=40100;swscale=7."));
        assert_eq!(TcpSummary::from_reply_text(&text), Some(s));
        assert_eq!(TcpSummary::from_reply_text("Transfer complete."), None);
    }

    #[test]
    fn unknown_and_bad_values_are_skipped() {
        let s = TcpSummary::from_reply_text("ok tcpi=busy=x;future=7;rtt=9;junk.").expect("word");
        assert_eq!(s.busy_time_us, None);
        assert_eq!(s.rtt_us, Some(9));
    }

    #[test]
    fn shares_need_busy_time() {
        assert_eq!(TcpSummary::share(Some(5), Some(10)), Some(0.5));
        assert_eq!(TcpSummary::share(Some(5), Some(0)), None);
        assert_eq!(TcpSummary::share(None, Some(10)), None);
        assert_eq!(TcpSummary::share(Some(20), Some(10)), Some(1.0));
    }
}
