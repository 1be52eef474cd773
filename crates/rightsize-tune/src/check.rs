//! Which of a host's settings caps one TCP stream on a path, and the fix.
//!
//! Each limit is one setting and the window it allows, turned into a rate by
//! `window / RTT`. Buffers count under the convention of the perfSONAR lab (half of a
//! buffer becomes window), the same rule the advice uses, so a setting caps
//! exactly when the advice would raise it; the "at most" rate (the whole
//! buffer as window) is reported beside it because kernels since 6.5 measure
//! their own overhead and often do better than half. Window-scale and
//! window-scaling limits are windows already and are not halved.

use serde::Serialize;

use crate::advice::{self, PathSummary};
use crate::bdp::{self, PathParams};
use crate::host::{HostSettings, SysctlKey};
use crate::units::Bytes;

/// Which end of a transfer a limit applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Side {
    /// This host receives (downloads).
    Receive,
    /// This host sends (uploads, serves).
    Send,
}

/// Whose buffer sizing a limit applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Buffering {
    /// The kernel autotunes the buffer (most applications).
    Autotuned,
    /// The application sets `SO_RCVBUF`/`SO_SNDBUF` itself (`iperf3 -w`).
    Fixed,
}

/// One setting and what it allows on the path.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Limit {
    /// Receive or send.
    pub side: Side,
    /// Autotuned or fixed buffers.
    pub buffering: Buffering,
    /// The setting, as `sysctl` names it, with the part that matters.
    pub setting: String,
    /// Its current value (bytes, or the flag/shift value).
    pub value: u64,
    /// The window it allows, bytes.
    pub window_bytes: u64,
    /// `window / RTT`, bits per second.
    pub ceiling_bps: u64,
    /// The rate if the whole buffer were window (only for buffer limits).
    pub ceiling_upper_bps: u64,
    /// Whether it keeps one stream below the path's rate.
    pub caps: bool,
    /// The sysctl whose change lifts it.
    #[serde(skip)]
    pub key: SysctlKey,
}

/// The result of checking a host against a path.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostCheck {
    /// The path and its BDP.
    pub path: PathSummary,
    /// The settings as read.
    pub settings: HostSettings,
    /// Settings that could not be read.
    pub unreadable: Vec<String>,
    /// Every limit considered.
    pub limits: Vec<Limit>,
    /// Commands that lift every cap, as `sysctl -w` lines.
    pub fixes: Vec<String>,
    /// The drop-in file that makes the fixes persistent.
    pub fix_file: Option<advice::ConfigFile>,
    /// Other facts worth knowing (congestion control, qdisc).
    pub notes: Vec<String>,
}

impl HostCheck {
    /// The tightest limit on `side` for `buffering`, if any was computed.
    pub fn tightest(&self, side: Side, buffering: Buffering) -> Option<&Limit> {
        self.limits
            .iter()
            .filter(|l| l.side == side && l.buffering == buffering)
            .min_by_key(|l| l.ceiling_bps)
    }

    /// Whether anything caps one stream below the path's rate.
    pub fn any_cap(&self) -> bool {
        self.limits.iter().any(|l| l.caps)
    }
}

/// Checks `host` against `path`.
pub fn check(path: &PathParams, mss: u64, host: &HostSettings) -> HostCheck {
    let summary = PathSummary::new(path, mss);
    let bdp = summary.bdp_bytes;
    let limit = |side, buffering, setting: String, value: u64, window: u64, upper: u64, key| {
        let ceiling = bdp::max_rate_for_window(Bytes(window), path.rtt).bps();
        Limit {
            side,
            buffering,
            setting,
            value,
            window_bytes: window,
            ceiling_bps: ceiling,
            ceiling_upper_bps: bdp::max_rate_for_window(Bytes(upper), path.rtt).bps(),
            caps: window < bdp,
            key,
        }
    };
    let mut limits = Vec::new();
    use Buffering::{Autotuned, Fixed};
    use Side::{Receive, Send};

    if host.tcp_window_scaling == Some(false) {
        let w = bdp::MAX_UNSCALED_WINDOW;
        limits.push(limit(
            Receive,
            Autotuned,
            "net.ipv4.tcp_window_scaling = 0".into(),
            0,
            w,
            w,
            SysctlKey::TcpWindowScaling,
        ));
        limits.push(limit(
            Receive,
            Fixed,
            "net.ipv4.tcp_window_scaling = 0".into(),
            0,
            w,
            w,
            SysctlKey::TcpWindowScaling,
        ));
    }
    if let Some(rmem) = host.tcp_rmem {
        if host.tcp_moderate_rcvbuf == Some(false) {
            limits.push(limit(
                Receive,
                Autotuned,
                format!(
                    "net.ipv4.tcp_moderate_rcvbuf = 0 (the buffer stays at tcp_rmem default {})",
                    Bytes(rmem.default).grouped()
                ),
                0,
                rmem.default / 2,
                rmem.default,
                SysctlKey::TcpModerateRcvbuf,
            ));
        } else {
            limits.push(limit(
                Receive,
                Autotuned,
                "net.ipv4.tcp_rmem max".into(),
                rmem.max,
                rmem.max / 2,
                rmem.max,
                SysctlKey::TcpRmem,
            ));
        }
        if host.tcp_window_scaling != Some(false) {
            let shift = bdp::linux_handshake_window_scale(
                Bytes(rmem.max),
                Bytes(host.rmem_max.unwrap_or(0)),
            );
            let window = bdp::max_window_for_scale(shift).get();
            limits.push(limit(
                Receive,
                Autotuned,
                format!("handshake window scale {shift}"),
                u64::from(shift),
                window,
                window,
                SysctlKey::TcpRmem,
            ));
        }
    }
    if let Some(max) = host.rmem_max {
        // SO_RCVBUF requests are capped at rmem_max, then doubled.
        limits.push(limit(
            Receive,
            Fixed,
            "net.core.rmem_max".into(),
            max,
            max,
            max.saturating_mul(2),
            SysctlKey::RmemMax,
        ));
    }
    if let Some(wmem) = host.tcp_wmem {
        limits.push(limit(
            Send,
            Autotuned,
            "net.ipv4.tcp_wmem max".into(),
            wmem.max,
            wmem.max / 2,
            wmem.max,
            SysctlKey::TcpWmem,
        ));
    }
    if let Some(max) = host.wmem_max {
        limits.push(limit(
            Send,
            Fixed,
            "net.core.wmem_max".into(),
            max,
            max,
            max.saturating_mul(2),
            SysctlKey::WmemMax,
        ));
    }

    let linux = advice::advise(path, mss, &[advice::Os::Linux], host)
        .os
        .into_iter()
        .next();
    let capping: Vec<SysctlKey> = limits.iter().filter(|l| l.caps).map(|l| l.key).collect();
    let (fixes, fix_file) = match linux {
        Some(linux) => {
            let chosen: Vec<usize> = (0..linux.settings.len())
                .filter(|&i| capping.iter().any(|k| k.name() == linux.settings[i].name))
                .collect();
            let fixes = chosen
                .iter()
                .filter_map(|&i| linux.commands.get(i).cloned())
                .collect::<Vec<_>>();
            let file = linux.file.filter(|_| !fixes.is_empty());
            (fixes, file)
        }
        None => (Vec::new(), None),
    };

    HostCheck {
        path: summary,
        settings: host.clone(),
        unreadable: host
            .missing()
            .into_iter()
            .map(|k| k.name().to_owned())
            .collect(),
        limits,
        fixes,
        fix_file,
        notes: notes(host),
    }
}

fn notes(host: &HostSettings) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some(cc) = &host.tcp_congestion_control {
        let kind = match cc.as_str() {
            "cubic" | "reno" => {
                "loss-based, as the source documents assume: on a shallow bottleneck queue it loses throughput to its own drops"
            }
            "bbr" => {
                "model-based: keeps the queue short and tolerates random loss; the source documents' experiments assume loss-based control (cubic)"
            }
            _ => "check how it reacts to loss and queueing",
        };
        notes.push(format!("Congestion control: {cc} ({kind})."));
    }
    if let Some(available) = &host.tcp_available_congestion_control
        && !available.iter().any(|c| c == "bbr")
    {
        notes.push("bbr is not loaded: `modprobe tcp_bbr` makes it available.".into());
    }
    if let Some(qdisc) = &host.default_qdisc
        && qdisc != "fq"
    {
        notes.push(format!(
            "Default qdisc: {qdisc}. `sysctl -w net.core.default_qdisc=fq` paces every flow (needs sch_fq; BBR paces by itself since 4.13)."
        ));
    }
    if let Some(lowat) = host.tcp_notsent_lowat
        && lowat < u64::from(u32::MAX)
    {
        notes.push(format!("tcp_notsent_lowat = {lowat}: unsent data in the send buffer is kept below that (memory, not window)."));
    }
    if host.tcp_mtu_probing == Some(0) {
        notes.push("tcp_mtu_probing = 0: with jumbo frames set it to 1.".into());
    }
    notes
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::host::BufferTriple;
    use std::time::Duration;

    /// The settings seen on the developers' machines (linux-tcp.md).
    fn this_machine() -> HostSettings {
        HostSettings {
            rmem_max: Some(4_194_304),
            wmem_max: Some(4_194_304),
            tcp_congestion_control: Some("bbr".into()),
            ..HostSettings::linux_defaults()
        }
    }

    fn path(rate: &str, rtt_ms: u64) -> PathParams {
        PathParams {
            rate: rate.parse().unwrap(),
            rtt: Duration::from_millis(rtt_ms),
        }
    }

    #[test]
    fn two_hundred_megabit_three_hundred_ms_names_tcp_wmem_as_the_sender_cap() {
        let result = check(&path("200M", 300), 1460, &this_machine());
        let send = result.tightest(Side::Send, Buffering::Autotuned).unwrap();
        assert_eq!(send.setting, "net.ipv4.tcp_wmem max");
        assert!(send.caps);
        assert_eq!(send.value, 4_194_304);
        let receive = result
            .tightest(Side::Receive, Buffering::Autotuned)
            .unwrap();
        assert!(!receive.caps, "{receive:?}");
        assert!(
            result
                .fixes
                .contains(&"sysctl -w net.ipv4.tcp_wmem='4096 16384 15000000'".to_owned()),
            "{:?}",
            result.fixes
        );
        assert!(!result.fixes.iter().any(|f| f.contains("tcp_rmem")));
    }

    #[test]
    fn a_short_path_is_not_capped() {
        let result = check(&path("100M", 10), 1460, &this_machine());
        assert!(!result.any_cap());
        assert!(result.fixes.is_empty());
        assert!(result.fix_file.is_none());
    }

    #[test]
    fn window_scaling_off_caps_at_65535() {
        let host = HostSettings {
            tcp_window_scaling: Some(false),
            ..this_machine()
        };
        let result = check(&path("100M", 100), 1460, &host);
        let receive = result
            .tightest(Side::Receive, Buffering::Autotuned)
            .unwrap();
        assert_eq!(receive.window_bytes, 65_535);
        assert!(
            result
                .fixes
                .contains(&"sysctl -w net.ipv4.tcp_window_scaling=1".to_owned())
        );
    }

    #[test]
    fn autotuning_off_caps_at_the_default() {
        let host = HostSettings {
            tcp_moderate_rcvbuf: Some(false),
            ..this_machine()
        };
        let result = check(&path("100M", 100), 1460, &host);
        let receive = result
            .tightest(Side::Receive, Buffering::Autotuned)
            .unwrap();
        assert!(receive.setting.starts_with("net.ipv4.tcp_moderate_rcvbuf"));
        assert_eq!(receive.window_bytes, 65_536);
    }

    #[test]
    fn a_small_rmem_max_lowers_the_window_scale() {
        let host = HostSettings {
            tcp_rmem: Some(BufferTriple {
                min: 4096,
                default: 131_072,
                max: 1 << 20,
            }),
            rmem_max: Some(212_992),
            ..this_machine()
        };
        let result = check(&path("1G", 100), 1460, &host);
        let scale = result
            .limits
            .iter()
            .find(|l| l.setting.starts_with("handshake window scale"))
            .unwrap();
        assert_eq!(scale.value, 5);
        assert!(scale.caps);
    }

    #[test]
    fn unreadable_settings_are_listed_not_guessed() {
        let result = check(&path("100M", 10), 1460, &HostSettings::default());
        assert!(result.limits.is_empty());
        assert_eq!(result.unreadable.len(), SysctlKey::ALL.len());
    }
}
