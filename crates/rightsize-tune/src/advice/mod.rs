//! Host-tuning advice: for a path, the window it needs and the exact settings
//! that let one TCP connection reach it on Linux, FreeBSD, macOS, Windows
//! (Vista and later) and Windows 2000/XP.
//!
//! The output is plain data ([`Advice`]); the binary prints it for a person
//! or as JSON, from the same values. Advice never lowers a setting below the
//! host's current value (or, without a host, the kernel's default), so
//! applying it cannot slow down a longer path that already worked.

mod bsd;
mod linux;
mod windows;

use std::time::Duration;

use serde::Serialize;

use crate::bdp::{self, PathParams};
use crate::host::HostSettings;
use crate::units::{BitRate, Bytes, human_rate};

pub use linux::{LINUX_DROPIN_PATH, RECEIVE_BDPS, linux_buffer, linux_receive_buffer};

/// An operating system family the advisor knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Os {
    /// Linux 2.6.17 and later (autotuning), with notes for 6.5+ and 6.16+.
    Linux,
    /// FreeBSD 7 and later (socket buffer autosizing, FreeBSD's patch).
    Freebsd,
    /// macOS.
    Macos,
    /// Windows Vista and later (receive window auto-tuning).
    Windows,
    /// Windows 2000 and XP, as the Windows tuning note tunes them.
    WindowsXp,
}

impl Os {
    /// Every OS, in the order advice is printed.
    pub const ALL: [Os; 5] = [
        Os::Linux,
        Os::Freebsd,
        Os::Macos,
        Os::Windows,
        Os::WindowsXp,
    ];

    /// The name `--os` accepts.
    pub const fn name(self) -> &'static str {
        match self {
            Os::Linux => "linux",
            Os::Freebsd => "freebsd",
            Os::Macos => "macos",
            Os::Windows => "windows",
            Os::WindowsXp => "windows-xp",
        }
    }

    /// A title for people.
    pub const fn title(self) -> &'static str {
        match self {
            Os::Linux => "Linux",
            Os::Freebsd => "FreeBSD",
            Os::Macos => "macOS",
            Os::Windows => "Windows Vista and later",
            Os::WindowsXp => "Windows 2000/XP (the Windows tuning note)",
        }
    }
}

/// One setting to make, with its value and the reason for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Setting {
    /// The sysctl, registry value or command option.
    pub name: String,
    /// The value to give it.
    pub value: String,
    /// Why, in one sentence.
    pub why: String,
}

/// A file that makes the settings persistent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConfigFile {
    /// Where it goes.
    pub path: String,
    /// What it holds.
    pub contents: String,
}

/// The advice for one OS.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OsAdvice {
    /// Which OS.
    pub os: Os,
    /// The title for people.
    pub title: String,
    /// The buffer size (or window) the settings below provide for, bytes.
    pub buffer_bytes: u64,
    /// The settings.
    pub settings: Vec<Setting>,
    /// Commands that apply them now, one per line, to run as an administrator.
    pub commands: Vec<String>,
    /// A file that makes them persistent, where the OS has one.
    pub file: Option<ConfigFile>,
    /// Facts worth knowing that are not settings.
    pub notes: Vec<String>,
}

/// The path and the arithmetic every OS's advice starts from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PathSummary {
    /// Bottleneck rate, bits per second.
    pub rate_bps: u64,
    /// Round-trip time, nanoseconds.
    pub rtt_ns: u64,
    /// The bandwidth-delay product, bytes (rounded up).
    pub bdp_bytes: u64,
    /// The BDP in decimal megabytes (10^6 bytes).
    pub bdp_mb: f64,
    /// The BDP in mebibytes (2^20 bytes).
    pub bdp_mib: f64,
    /// The window-scale shift the handshake must reach for one connection to
    /// carry the BDP; `None` when no shift can (see `streams_needed`).
    pub window_scale_needed: Option<u8>,
    /// Whether one TCP connection can carry the BDP at all.
    pub fits_one_connection: bool,
    /// Parallel connections needed: 1 unless the BDP exceeds 1,073,725,440.
    pub streams_needed: u64,
    /// MSS the Windows 2000/XP rounding uses, bytes.
    pub mss_bytes: u64,
}

impl PathSummary {
    /// Summarises `path`.
    pub fn new(path: &PathParams, mss: u64) -> Self {
        let bdp = path.bdp();
        let scale = bdp::window_scale_needed(bdp);
        PathSummary {
            rate_bps: path.rate.bps(),
            rtt_ns: u64::try_from(path.rtt.as_nanos()).unwrap_or(u64::MAX),
            bdp_bytes: bdp.get(),
            bdp_mb: bdp.get() as f64 / 1e6,
            bdp_mib: bdp.get() as f64 / (1u64 << 20) as f64,
            window_scale_needed: scale,
            fits_one_connection: scale.is_some(),
            streams_needed: path.streams_needed(),
            mss_bytes: mss,
        }
    }
}

/// The whole advice for a path.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Advice {
    /// The path and its BDP.
    pub path: PathSummary,
    /// One entry per OS asked for.
    pub os: Vec<OsAdvice>,
}

/// The advice for `path`, for each OS in `oses`. `host` supplies the current
/// Linux values (the advice never lowers them); pass
/// [`HostSettings::linux_defaults`] when no host was read.
pub fn advise(path: &PathParams, mss: u64, oses: &[Os], host: &HostSettings) -> Advice {
    let summary = PathSummary::new(path, mss);
    let os = oses
        .iter()
        .map(|&os| match os {
            Os::Linux => linux::advise(&summary, host),
            Os::Freebsd => bsd::freebsd(&summary),
            Os::Macos => bsd::macos(&summary),
            Os::Windows => windows::vista(&summary),
            Os::WindowsXp => windows::xp(&summary),
        })
        .collect();
    Advice { path: summary, os }
}

/// The answer to the inverse question: what a buffer allows on a path.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BufferAnswer {
    /// The buffer (taken as the window), bytes.
    pub buffer_bytes: u64,
    /// Round-trip time, nanoseconds.
    pub rtt_ns: u64,
    /// The most one connection with this window carries: `buffer x 8 / rtt`.
    pub max_rate_bps: u64,
    /// The path's rate, when given.
    pub path_rate_bps: Option<u64>,
    /// The share of the path's rate the buffer allows (0..=1), when given.
    pub utilisation: Option<f64>,
    /// The BDP of the path, when the rate was given.
    pub bdp_bytes: Option<u64>,
}

impl BufferAnswer {
    /// What `buffer` allows over `rtt`, and on a path of `rate` if given.
    pub fn new(buffer: Bytes, rtt: Duration, rate: Option<BitRate>) -> Self {
        let path = rate.map(|rate| PathParams { rate, rtt });
        BufferAnswer {
            buffer_bytes: buffer.get(),
            rtt_ns: u64::try_from(rtt.as_nanos()).unwrap_or(u64::MAX),
            max_rate_bps: bdp::max_rate_for_window(buffer, rtt).bps(),
            path_rate_bps: rate.map(BitRate::bps),
            utilisation: path.map(|p| p.utilisation(buffer)),
            bdp_bytes: path.map(|p| p.bdp().get()),
        }
    }
}

/// `2 x bytes`, the buffer that holds a window of `bytes` under the
/// half-for-overhead convention of the perfSONAR lab, section 1.3.
pub(crate) fn twice(bytes: u64) -> u64 {
    bytes.saturating_mul(2)
}

/// "caps one stream at …" phrasing shared by the OS modules.
pub(crate) fn rate_over(bytes: u64, summary: &PathSummary) -> String {
    if summary.rtt_ns == 0 {
        return "unbounded".into();
    }
    human_rate(bytes as f64 * 8.0 * 1e9 / summary.rtt_ns as f64)
}

/// A summary of a path given as text, for the OS modules' tests.
#[cfg(test)]
#[allow(clippy::unwrap_used)]
fn test_summary(rate: &str, rtt: Duration) -> PathSummary {
    PathSummary::new(
        &PathParams {
            rate: rate.parse().unwrap(),
            rtt,
        },
        bdp::DEFAULT_MSS,
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn path(rate: &str, rtt: &str) -> PathParams {
        PathParams {
            rate: rate.parse().unwrap(),
            rtt: crate::units::parse_duration(rtt).unwrap(),
        }
    }

    #[test]
    fn ten_gig_fifty_ms_covers_every_os() {
        let advice = advise(
            &path("10G", "50ms"),
            1460,
            &Os::ALL,
            &HostSettings::linux_defaults(),
        );
        assert_eq!(advice.path.bdp_bytes, 62_500_000);
        assert_eq!(advice.path.window_scale_needed, Some(10));
        assert_eq!(advice.os.len(), 5);
        for os in &advice.os {
            assert!(!os.settings.is_empty(), "{:?} has no settings", os.os);
            assert!(!os.commands.is_empty(), "{:?} has no commands", os.os);
        }
    }

    #[test]
    fn inverse_question() {
        let answer = BufferAnswer::new(Bytes(64 * 1024), Duration::from_millis(100), None);
        assert_eq!(BitRate(answer.max_rate_bps).human(), "5.24 Mbit/s");
        let answer = BufferAnswer::new(
            Bytes(1 << 20),
            Duration::from_millis(50),
            Some(BitRate(10_000_000_000)),
        );
        assert_eq!(
            format!("{:.2}", answer.utilisation.unwrap() * 100.0),
            "1.68"
        );
    }

    #[test]
    fn beyond_one_connection_is_said() {
        let advice = advise(
            &path("200G", "100ms"),
            1460,
            &[Os::Linux],
            &HostSettings::linux_defaults(),
        );
        assert!(!advice.path.fits_one_connection);
        assert_eq!(advice.path.streams_needed, 3);
    }
}
