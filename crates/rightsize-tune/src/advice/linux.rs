//! Linux advice: the four buffer sysctls of the perfSONAR lab, window scaling,
//! receive autotuning, and what a modern kernel changes about them.
//!
//! The perfSONAR lab (docs/sources.md) sizes every buffer at 2 x BDP (half of a buffer is kernel
//! overhead). The send side keeps that. The receive side gets 4 x BDP:
//! measured on Linux 6.18 over a 50 Mbit/s x 40 ms emulated path (BDP
//! 250 kB, cubic, a 1 x BDP queue), the kernel advertised 0.62 of the
//! buffer (`tcpi_rcv_wnd` 311,168 of 500,000: its measured payload to
//! truesize ratio), so 2 x BDP gave a window of 1.24 x BDP, too little for
//! the RTT a queue adds: the sender was receive-window limited 93% of its
//! busy time at 0.90 of capacity (doctor, 4 s), and after one loss burst in
//! CI at 0.62. With 4 x BDP (a window of 2.5 x BDP, room for the BDP and a
//! queue of one BDP) it was limited 2% of the time.

use super::{ConfigFile, Os, OsAdvice, PathSummary, Setting, rate_over, twice};
use crate::bdp;
use crate::host::{BufferTriple, HostSettings, SysctlKey};
use crate::units::Bytes;

/// Where the persistent settings go; `sysctl --system` loads it.
pub const LINUX_DROPIN_PATH: &str = "/etc/sysctl.d/90-rightsize.conf";

/// The largest value the kernel accepts for these sysctls (a C `int`).
const SYSCTL_INT_MAX: u64 = i32::MAX as u64;

/// How many BDPs of receive buffer the advice asks for (see the module
/// documentation for the measurement behind it).
pub const RECEIVE_BDPS: u64 = 4;

/// The Linux send buffer size for `summary`: 2 x BDP, within a sysctl `int`.
pub fn linux_buffer(summary: &PathSummary) -> u64 {
    twice(summary.bdp_bytes).min(SYSCTL_INT_MAX)
}

/// The Linux receive buffer size for `summary`: [`RECEIVE_BDPS`] x BDP,
/// within a sysctl `int`.
pub fn linux_receive_buffer(summary: &PathSummary) -> u64 {
    summary
        .bdp_bytes
        .saturating_mul(RECEIVE_BDPS)
        .min(SYSCTL_INT_MAX)
}

pub(super) fn advise(summary: &PathSummary, host: &HostSettings) -> OsAdvice {
    let defaults = HostSettings::linux_defaults();
    let target = linux_buffer(summary);
    let receive = linux_receive_buffer(summary);
    let current_or_default =
        |value: Option<u64>, default: Option<u64>| value.or(default).unwrap_or(0);
    let rmem_max = receive.max(current_or_default(host.rmem_max, defaults.rmem_max));
    let wmem_max = target.max(current_or_default(host.wmem_max, defaults.wmem_max));
    let triple = |current: Option<BufferTriple>, default: Option<BufferTriple>, target: u64| {
        let base = current.or(default).unwrap_or(BufferTriple {
            min: 4096,
            default: 131_072,
            max: 0,
        });
        BufferTriple {
            max: base.max.max(target),
            ..base
        }
    };
    let tcp_rmem = triple(host.tcp_rmem, defaults.tcp_rmem, receive);
    let tcp_wmem = triple(host.tcp_wmem, defaults.tcp_wmem, target);
    let bdp = Bytes(summary.bdp_bytes);

    let settings = vec![
        Setting {
            name: SysctlKey::TcpRmem.name().into(),
            value: tcp_rmem.to_sysctl(),
            why: format!(
                "the receive buffer autotuning may grow to: {RECEIVE_BDPS} x BDP = {} bytes; Linux 6.18 advertised 0.62 of its buffer as window, so this allows the BDP and a bottleneck queue as deep again",
                Bytes(receive).grouped()
            ),
        },
        Setting {
            name: SysctlKey::TcpWmem.name().into(),
            value: tcp_wmem.to_sysctl(),
            why: format!(
                "the send buffer autotuning may grow to: 2 x BDP = {} bytes; it holds every unacknowledged byte, one BDP in flight, plus overhead",
                Bytes(target).grouped()
            ),
        },
        Setting {
            name: SysctlKey::RmemMax.name().into(),
            value: rmem_max.to_string(),
            why: format!(
                "the cap on an application's SO_RCVBUF (iperf3 -w, rightsize static:SIZE), {RECEIVE_BDPS} x BDP as tcp_rmem; it also raises the window scale offered in the handshake"
            ),
        },
        Setting {
            name: SysctlKey::WmemMax.name().into(),
            value: wmem_max.to_string(),
            why: "the cap on an application's SO_SNDBUF".into(),
        },
        Setting {
            name: SysctlKey::TcpWindowScaling.name().into(),
            value: "1".into(),
            why: "without RFC 7323 window scaling no window exceeds 65,535 bytes".into(),
        },
        Setting {
            name: SysctlKey::TcpModerateRcvbuf.name().into(),
            value: "1".into(),
            why: "receive-buffer autotuning (Dynamic Right-Sizing in the kernel): grows the buffer only as far as the flow needs".into(),
        },
    ];

    let commands = settings
        .iter()
        .map(|s| {
            if s.value.contains(' ') {
                format!("sysctl -w {}='{}'", s.name, s.value)
            } else {
                format!("sysctl -w {}={}", s.name, s.value)
            }
        })
        .collect();
    let mut contents = format!(
        "# Written from `rightsize advise` for a path of {} x {} ms (BDP {} bytes).\n# Load with: sysctl --system\n",
        super::human_rate(summary.rate_bps as f64),
        summary.rtt_ns as f64 / 1e6,
        bdp.grouped()
    );
    for s in &settings {
        contents.push_str(&format!("{} = {}\n", s.name, s.value));
    }

    let scale_offered = bdp::linux_handshake_window_scale(Bytes(tcp_rmem.max), Bytes(rmem_max));
    let mut notes = vec![
        format!(
            "Window needed: {} bytes (the BDP). The handshake must offer window scale {} or more; with these values Linux offers {} (from max(tcp_rmem max, rmem_max)), a window of up to {} bytes.",
            bdp.grouped(),
            summary.window_scale_needed.map_or_else(|| "beyond 14".to_owned(), |s| s.to_string()),
            scale_offered,
            bdp::max_window_for_scale(scale_offered).grouped()
        ),
        format!("Why {RECEIVE_BDPS} x BDP to receive and 2 x BDP to send: the perfSONAR lab (section 1.3) assumes half of a buffer goes to kernel overhead and sizes both at 2 x BDP. Since Linux 6.5 the kernel measures its own ratio of payload to memory (scaling_ratio) instead: 0.62 on Linux 6.18 with 1500-byte packets, so 2 x BDP of receive buffer is a window of 1.24 x BDP, which a queue at the bottleneck or one loss burst turns into a receive-window limit (measured: 93% of the sender's busy time at 0.90 of capacity, against 2% with {RECEIVE_BDPS} x BDP). Autotuning only grows the buffer as far as the flow needs; `ss -tmi` on a running transfer shows the buffer (skmem rb/tb) and the window (rcv_space)."),
        format!(
            "Linux 6.16 raised the default tcp_rmem max to 32 MiB, but tcp_wmem max is still 4 MiB: untuned, a sender caps one stream at about {} (half of 4 MiB per RTT) to {} (all of it) on this path.",
            rate_over(4_194_304 / 2, summary),
            rate_over(4_194_304, summary)
        ),
        "Congestion control: cubic (the usual default, loss-based) fills a deep bottleneck queue and loses throughput to its own drops on a shallow one; bbr models the bottleneck rate and minimum RTT, keeps the queue small and tolerates random loss: `modprobe tcp_bbr; sysctl -w net.ipv4.tcp_congestion_control=bbr`.".into(),
        "Queueing discipline: `sysctl -w net.core.default_qdisc=fq` paces every flow (needs the sch_fq module; BBR paces by itself since Linux 4.13). With jumbo frames also set net.ipv4.tcp_mtu_probing=1.".into(),
        "Send-side memory: net.ipv4.tcp_notsent_lowat=131072 keeps unsent data in the send buffer small without limiting the window.".into(),
        "These settings are per network namespace for tcp_rmem/tcp_wmem; apply them in each container or namespace that transfers.".into(),
    ];
    if summary.bdp_bytes.saturating_mul(RECEIVE_BDPS) > SYSCTL_INT_MAX {
        notes.push(format!(
            "{RECEIVE_BDPS} x BDP exceeds the largest value these sysctls take ({}); the values above stop there, and this path needs {} parallel streams.",
            Bytes(SYSCTL_INT_MAX).grouped(),
            summary.streams_needed
        ));
    }

    OsAdvice {
        os: Os::Linux,
        title: Os::Linux.title().into(),
        buffer_bytes: receive,
        settings,
        commands,
        file: Some(ConfigFile {
            path: LINUX_DROPIN_PATH.into(),
            contents,
        }),
        notes,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn summary(rate: &str, rtt_ms: u64) -> PathSummary {
        super::super::test_summary(rate, std::time::Duration::from_millis(rtt_ms))
    }

    fn value(advice: &OsAdvice, key: SysctlKey) -> String {
        advice
            .settings
            .iter()
            .find(|s| s.name == key.name())
            .unwrap()
            .value
            .clone()
    }

    #[test]
    fn perfsonar_two_gig_hundred_ms() {
        // The perfSONAR lab's 2 x BDP (50 MB) on the send side; the receive side
        // gets 4 x BDP for the window Linux 6.18 makes of a buffer.
        let advice = advise(&summary("2G", 100), &HostSettings::linux_defaults());
        assert_eq!(advice.buffer_bytes, 100_000_000);
        assert_eq!(value(&advice, SysctlKey::TcpRmem), "4096 131072 100000000");
        assert_eq!(value(&advice, SysctlKey::TcpWmem), "4096 16384 50000000");
        assert!(
            advice
                .commands
                .contains(&"sysctl -w net.ipv4.tcp_rmem='4096 131072 100000000'".to_owned())
        );
        let file = advice.file.unwrap();
        assert!(file.contents.contains("net.core.rmem_max = 100000000\n"));
        assert!(file.contents.contains("net.core.wmem_max = 50000000\n"));
    }

    #[test]
    fn never_lowers_what_the_host_has() {
        // 100 Mbit/s x 20 ms needs 500 kB; the 32 MiB default stays.
        let advice = advise(&summary("100M", 20), &HostSettings::linux_defaults());
        assert_eq!(value(&advice, SysctlKey::TcpRmem), "4096 131072 33554432");
        assert_eq!(value(&advice, SysctlKey::TcpWmem), "4096 16384 4194304");
        assert_eq!(value(&advice, SysctlKey::RmemMax), "1000000");
    }

    #[test]
    fn huge_paths_stop_at_int_max() {
        let advice = advise(&summary("100G", 200), &HostSettings::linux_defaults());
        assert_eq!(advice.buffer_bytes, SYSCTL_INT_MAX);
        assert!(advice.notes.iter().any(|n| n.contains("parallel streams")));
    }
}
