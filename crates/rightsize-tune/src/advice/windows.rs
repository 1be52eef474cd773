//! Windows advice: the receive-window auto-tuning level of Vista and later,
//! and the registry values of the Windows tuning note (docs/sources.md) for
//! Windows 2000/XP, computed exactly as the note does (BDP rounded up to
//! an even multiple of the MSS).

use super::{ConfigFile, Os, OsAdvice, PathSummary, Setting};
use crate::bdp::{self, MAX_UNSCALED_WINDOW};
use crate::units::Bytes;

/// Auto-tuning levels with the window-scale shift each allows.
const LEVELS: [(&str, u8); 5] = [
    ("disabled", 0),
    ("highlyrestricted", 2),
    ("restricted", 4),
    ("normal", 8),
    ("experimental", 14),
];

/// The largest `TcpWindowSize` the registry takes (the Windows tuning note, appendix 9.5).
const XP_MAX_WINDOW: u64 = 0x3FFF_FFFF;

/// The least auto-tuning level whose largest window holds `bdp`.
fn least_level(bdp: u64) -> (&'static str, u8) {
    LEVELS
        .into_iter()
        .find(|&(_, shift)| MAX_UNSCALED_WINDOW << shift >= bdp)
        .unwrap_or(LEVELS[LEVELS.len() - 1])
}

pub(super) fn vista(summary: &PathSummary) -> OsAdvice {
    let (least, shift) = least_level(summary.bdp_bytes);
    // Below `normal` Windows only restricts itself; never advise that.
    let (level, shift) = if shift < 8 {
        ("normal", 8)
    } else {
        (least, shift)
    };
    let window = bdp::max_window_for_scale(shift);
    OsAdvice {
        os: Os::Windows,
        title: Os::Windows.title().into(),
        buffer_bytes: window.get(),
        settings: vec![Setting {
            name: "autotuninglevel".into(),
            value: level.into(),
            why: format!(
                "receive window auto-tuning up to {} bytes (scale {shift}); the BDP is {} bytes",
                window.grouped(),
                Bytes(summary.bdp_bytes).grouped()
            ),
        }],
        commands: vec![
            format!("netsh interface tcp set global autotuninglevel={level}"),
            "netsh interface tcp show global".into(),
        ],
        file: None,
        notes: vec![
            format!(
                "PowerShell on Windows Server: Set-NetTCPSetting -SettingName InternetCustom -AutoTuningLevelLocal {}",
                capitalise(level)
            ),
            "The send buffer autotunes since Windows 7 / Server 2008 R2 (ideal send backlog); an application that sets SO_SNDBUF or SO_RCVBUF fixes that socket's size.".into(),
            "Levels and their largest windows: disabled 65,535; highlyrestricted 262,140; restricted 1,048,560; normal 16,776,960; experimental 1,073,725,440 bytes.".into(),
        ],
    }
}

fn capitalise(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
        .unwrap_or_default()
}

pub(super) fn xp(summary: &PathSummary) -> OsAdvice {
    let bdp = Bytes(summary.bdp_bytes);
    let window = bdp::round_up_to_even_mss(bdp, summary.mss_bytes)
        .get()
        .min(XP_MAX_WINDOW);
    let segments = window / summary.mss_bytes.max(1);
    let large = bdp.get() > MAX_UNSCALED_WINDOW;
    let tcpip = r"HKLM\SYSTEM\CurrentControlSet\Services\Tcpip\Parameters";
    let afd = r"HKLM\SYSTEM\CurrentControlSet\Services\AFD\Parameters";
    let mut settings = vec![Setting {
        name: format!(r"{afd}\DefaultSendWindow"),
        value: window.to_string(),
        why: "the sender's socket buffer: one BDP (the Windows tuning note, step 3 or 4; the default is 8192)"
            .into(),
    }];
    if large {
        settings.push(Setting {
            name: format!(r"{tcpip}\Tcp1323Opts"),
            value: "1".into(),
            why: "window scaling on, timestamps off (the Windows tuning note: 3 would also send timestamps, which costs throughput); on both hosts".into(),
        });
        settings.push(Setting {
            name: format!(r"{tcpip}\TcpWindowSize"),
            value: window.to_string(),
            why: format!(
                "on the receiver: the BDP ({}) rounded up to an even multiple of the MSS {}: {segments} x {}",
                bdp.grouped(),
                summary.mss_bytes,
                summary.mss_bytes
            ),
        });
    }
    let commands: Vec<String> = settings
        .iter()
        .map(|s| {
            let (key, value) = s.name.rsplit_once('\\').unwrap_or((&s.name, ""));
            format!(
                "reg add \"{key}\" /v {value} /t REG_DWORD /d {} /f",
                s.value
            )
        })
        .collect();
    let mut contents = String::from("Windows Registry Editor Version 5.00\r\n");
    for s in &settings {
        let (key, value) = s.name.rsplit_once('\\').unwrap_or((&s.name, ""));
        contents.push_str(&format!(
            "\r\n[{}]\r\n\"{value}\"=dword:{:08x}\r\n",
            key.replacen("HKLM", "HKEY_LOCAL_MACHINE", 1),
            s.value.parse::<u64>().unwrap_or(0)
        ));
    }
    OsAdvice {
        os: Os::WindowsXp,
        title: Os::WindowsXp.title().into(),
        buffer_bytes: window,
        settings,
        commands,
        file: Some(ConfigFile {
            path: "rightsize-tcp.reg".into(),
            contents,
        }),
        notes: vec![
            "Reboot after changing these registry values.".into(),
            if large {
                "The Windows tuning note measured 11.7x the throughput at 40 ms RTT with these values over the defaults.".into()
            } else {
                "The BDP fits in 64 kB: the Windows tuning note sets only the send buffer, and leaves window scaling alone.".into()
            },
        ],
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn summary(rate: &str, rtt_us: u64) -> PathSummary {
        super::super::test_summary(rate, std::time::Duration::from_micros(rtt_us))
    }

    #[test]
    fn windows_note_registry_values() {
        for (rtt_us, window) in [(12_000, 151_840), (20_000, 251_120), (40_000, 502_240)] {
            let advice = xp(&summary("100M", rtt_us));
            let tcp_window = advice
                .settings
                .iter()
                .find(|s| s.name.ends_with("TcpWindowSize"))
                .unwrap();
            assert_eq!(tcp_window.value, window.to_string());
            assert!(
                advice
                    .settings
                    .iter()
                    .any(|s| s.name.ends_with("Tcp1323Opts") && s.value == "1")
            );
            assert!(
                advice
                    .commands
                    .iter()
                    .any(|c| c.contains(&format!("/v TcpWindowSize /t REG_DWORD /d {window} /f")))
            );
        }
    }

    #[test]
    fn windows_note_small_bdp_sets_only_the_send_buffer() {
        let advice = xp(&summary("100M", 2_500));
        assert_eq!(advice.settings.len(), 1);
        assert!(advice.settings[0].name.ends_with("DefaultSendWindow"));
    }

    #[test]
    fn vista_levels() {
        assert_eq!(vista(&summary("100M", 20_000)).settings[0].value, "normal");
        assert_eq!(
            vista(&summary("10G", 50_000)).settings[0].value,
            "experimental"
        );
        assert_eq!(least_level(200_000), ("highlyrestricted", 2));
    }
}
