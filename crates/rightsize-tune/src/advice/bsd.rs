//! FreeBSD and macOS advice: socket-buffer autosizing limits (FreeBSD's patch's
//! knobs as today's FreeBSD has them) and `kern.ipc.maxsockbuf`.
//!
//! Both kernels check a buffer against `kern.ipc.maxsockbuf` scaled by
//! `MCLBYTES / (MSIZE + MCLBYTES)` = 2048 / 2304 (the mbuf overhead), so the
//! cap must be 9/8 of the largest buffer wanted.

use super::{ConfigFile, Os, OsAdvice, PathSummary, Setting, twice};
use crate::units::Bytes;

/// FreeBSD's default `kern.ipc.maxsockbuf` (2 MiB).
const FREEBSD_MAXSOCKBUF_DEFAULT: u64 = 2 * 1024 * 1024;
/// FreeBSD's default `sendbuf_max` and `recvbuf_max` (2 MiB).
const FREEBSD_AUTO_MAX_DEFAULT: u64 = 2 * 1024 * 1024;
/// macOS's default `kern.ipc.maxsockbuf` (8 MiB).
const MACOS_MAXSOCKBUF_DEFAULT: u64 = 8 * 1024 * 1024;
/// macOS's default `autorcvbufmax` and `autosndbufmax` on current releases (4 MiB).
const MACOS_AUTO_MAX_DEFAULT: u64 = 4 * 1024 * 1024;

/// `kern.ipc.maxsockbuf` that lets a socket buffer reach `buffer` bytes.
fn maxsockbuf_for(buffer: u64) -> u64 {
    buffer.saturating_mul(2304).div_ceil(2048)
}

/// The `kern.ipc.maxsockbuf` setting both BSD-derived kernels need.
fn maxsockbuf_setting(maxsockbuf: u64) -> Setting {
    Setting {
        name: "kern.ipc.maxsockbuf".into(),
        value: maxsockbuf.to_string(),
        why: "caps every socket buffer; 9/8 of the largest buffer, for mbuf overhead".into(),
    }
}

fn sysctl_lines(settings: &[Setting], prefix: &str) -> Vec<String> {
    settings
        .iter()
        .map(|s| format!("{prefix}sysctl {}={}", s.name, s.value))
        .collect()
}

fn file_contents(settings: &[Setting], summary: &PathSummary) -> String {
    let mut contents = format!(
        "# Written from `rightsize advise` (BDP {} bytes).\n",
        Bytes(summary.bdp_bytes).grouped()
    );
    for s in settings {
        contents.push_str(&format!("{}={}\n", s.name, s.value));
    }
    contents
}

pub(super) fn freebsd(summary: &PathSummary) -> OsAdvice {
    let buffer = twice(summary.bdp_bytes).max(FREEBSD_AUTO_MAX_DEFAULT);
    let maxsockbuf = maxsockbuf_for(buffer).max(FREEBSD_MAXSOCKBUF_DEFAULT);
    let inc = if summary.bdp_bytes > 4 * 1024 * 1024 {
        16_384
    } else {
        8_192
    };
    let settings = vec![
        maxsockbuf_setting(maxsockbuf),
        Setting {
            name: "net.inet.tcp.sendbuf_max".into(),
            value: buffer.to_string(),
            why: "how far send-buffer autosizing may grow: one BDP in flight plus room for recovery (2 x BDP)".into(),
        },
        Setting {
            name: "net.inet.tcp.recvbuf_max".into(),
            value: buffer.to_string(),
            why: "how far receive-buffer autosizing may grow (it grows 1.5x at a time, so leave headroom: 2 x BDP)".into(),
        },
        Setting { name: "net.inet.tcp.sendbuf_auto".into(), value: "1".into(), why: "send-buffer autosizing on (FreeBSD's autosizing patch)".into() },
        Setting { name: "net.inet.tcp.recvbuf_auto".into(), value: "1".into(), why: "receive-buffer autosizing on (FreeBSD's autosizing patch)".into() },
        Setting {
            name: "net.inet.tcp.sendbuf_inc".into(),
            value: inc.to_string(),
            why: "the step the send buffer grows by while full; 8192 is the default, 16384 grows a large buffer twice as fast".into(),
        },
    ];
    OsAdvice {
        os: Os::Freebsd,
        title: Os::Freebsd.title().into(),
        buffer_bytes: buffer,
        commands: sysctl_lines(&settings, ""),
        file: Some(ConfigFile { path: "/etc/sysctl.conf".into(), contents: file_contents(&settings, summary) }),
        settings,
        notes: vec![
            "An application that sets SO_RCVBUF or SO_SNDBUF turns autosizing off for that socket.".into(),
            "recvbuf_inc, in FreeBSD's 2006 autosizing patch, is gone: today the receive buffer grows 1.5x when more than 3/8 of it arrives within half an RTT.".into(),
            "The 2006 patch's defaults (sendbuf_max = recvbuf_max = 256 KiB) cap one stream at 20 Mbit/s at 100 ms; today's are 2 MiB.".into(),
        ],
    }
}

pub(super) fn macos(summary: &PathSummary) -> OsAdvice {
    let buffer = twice(summary.bdp_bytes).max(MACOS_AUTO_MAX_DEFAULT);
    let maxsockbuf = maxsockbuf_for(buffer).max(MACOS_MAXSOCKBUF_DEFAULT);
    let settings = vec![
        maxsockbuf_setting(maxsockbuf),
        Setting {
            name: "net.inet.tcp.autorcvbufmax".into(),
            value: buffer.to_string(),
            why: "how far receive-buffer autotuning may grow (2 x BDP)".into(),
        },
        Setting {
            name: "net.inet.tcp.autosndbufmax".into(),
            value: buffer.to_string(),
            why: "how far send-buffer autotuning may grow (2 x BDP)".into(),
        },
    ];
    OsAdvice {
        os: Os::Macos,
        title: Os::Macos.title().into(),
        buffer_bytes: buffer,
        commands: sysctl_lines(&settings, "sudo ").into_iter().map(|c| c.replacen("sysctl ", "sysctl -w ", 1)).collect(),
        file: None,
        settings,
        notes: vec![
            "macOS does not read /etc/sysctl.conf at boot on current releases: to keep these, run the commands from a LaunchDaemon (a plist in /Library/LaunchDaemons with RunAtLoad).".into(),
            "Both autotuning maxima are 4 MiB on current releases: that caps one stream at about 335 Mbit/s at 100 ms.".into(),
        ],
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn summary(rate: &str, rtt_ms: u64) -> PathSummary {
        super::super::test_summary(rate, std::time::Duration::from_millis(rtt_ms))
    }

    #[test]
    fn freebsd_ten_gig() {
        let advice = freebsd(&summary("10G", 50));
        assert_eq!(advice.buffer_bytes, 125_000_000);
        assert_eq!(advice.settings[0].value, "140625000");
        assert!(
            advice
                .commands
                .contains(&"sysctl net.inet.tcp.recvbuf_max=125000000".to_owned())
        );
    }

    #[test]
    fn small_paths_keep_the_defaults() {
        assert_eq!(
            freebsd(&summary("10M", 10)).buffer_bytes,
            FREEBSD_AUTO_MAX_DEFAULT
        );
        let mac = macos(&summary("10M", 10));
        assert_eq!(mac.buffer_bytes, MACOS_AUTO_MAX_DEFAULT);
        assert_eq!(mac.settings[0].value, MACOS_MAXSOCKBUF_DEFAULT.to_string());
        assert!(mac.commands[0].starts_with("sudo sysctl -w kern.ipc.maxsockbuf="));
    }
}
