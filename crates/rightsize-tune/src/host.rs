//! The host's TCP settings, as values: which sysctls rightsize reads, and how
//! their text is parsed.
//!
//! The system layer reads the files under `/proc/sys` named by
//! [`SysctlKey::proc_path`] and hands their text to [`HostSettings::parse`];
//! nothing here touches the file system, so the parsing and every decision
//! made from these values can be tested with literal strings. A key that
//! could not be read or parsed stays `None` and is reported, never guessed.

use serde::Serialize;

/// A sysctl that rightsize reads or advises on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SysctlKey {
    /// `net.core.rmem_max`: the cap on `SO_RCVBUF` requests (doubled by the kernel).
    RmemMax,
    /// `net.core.wmem_max`: the cap on `SO_SNDBUF` requests (doubled by the kernel).
    WmemMax,
    /// `net.ipv4.tcp_rmem`: min, default, max of the autotuned receive buffer.
    TcpRmem,
    /// `net.ipv4.tcp_wmem`: min, default, max of the autotuned send buffer.
    TcpWmem,
    /// `net.ipv4.tcp_window_scaling`: RFC 7323 window scaling on or off.
    TcpWindowScaling,
    /// `net.ipv4.tcp_moderate_rcvbuf`: receive-buffer autotuning on or off.
    TcpModerateRcvbuf,
    /// `net.ipv4.tcp_congestion_control`: the default congestion control.
    TcpCongestionControl,
    /// `net.ipv4.tcp_available_congestion_control`: the ones loaded.
    TcpAvailableCongestionControl,
    /// `net.core.default_qdisc`: the queueing discipline new interfaces get.
    DefaultQdisc,
    /// `net.ipv4.tcp_mtu_probing`: packetization-layer path MTU discovery.
    TcpMtuProbing,
    /// `net.ipv4.tcp_notsent_lowat`: the cap on unsent bytes in the send buffer.
    TcpNotsentLowat,
}

impl SysctlKey {
    /// Every key `advise --check` reads, in the order it reports them.
    pub const ALL: [SysctlKey; 11] = [
        SysctlKey::RmemMax,
        SysctlKey::WmemMax,
        SysctlKey::TcpRmem,
        SysctlKey::TcpWmem,
        SysctlKey::TcpWindowScaling,
        SysctlKey::TcpModerateRcvbuf,
        SysctlKey::TcpCongestionControl,
        SysctlKey::TcpAvailableCongestionControl,
        SysctlKey::DefaultQdisc,
        SysctlKey::TcpMtuProbing,
        SysctlKey::TcpNotsentLowat,
    ];

    /// The dotted name `sysctl` uses.
    pub const fn name(self) -> &'static str {
        match self {
            SysctlKey::RmemMax => "net.core.rmem_max",
            SysctlKey::WmemMax => "net.core.wmem_max",
            SysctlKey::TcpRmem => "net.ipv4.tcp_rmem",
            SysctlKey::TcpWmem => "net.ipv4.tcp_wmem",
            SysctlKey::TcpWindowScaling => "net.ipv4.tcp_window_scaling",
            SysctlKey::TcpModerateRcvbuf => "net.ipv4.tcp_moderate_rcvbuf",
            SysctlKey::TcpCongestionControl => "net.ipv4.tcp_congestion_control",
            SysctlKey::TcpAvailableCongestionControl => "net.ipv4.tcp_available_congestion_control",
            SysctlKey::DefaultQdisc => "net.core.default_qdisc",
            SysctlKey::TcpMtuProbing => "net.ipv4.tcp_mtu_probing",
            SysctlKey::TcpNotsentLowat => "net.ipv4.tcp_notsent_lowat",
        }
    }

    /// The file that holds it: `/proc/sys/` and the name with dots as slashes.
    pub fn proc_path(self) -> String {
        format!("/proc/sys/{}", self.name().replace('.', "/"))
    }
}

/// A triple such as `tcp_rmem`: minimum, default and maximum, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BufferTriple {
    /// The least a socket's buffer is shrunk to under memory pressure.
    pub min: u64,
    /// The size a new socket starts with.
    pub default: u64,
    /// The most autotuning grows a buffer to.
    pub max: u64,
}

impl BufferTriple {
    /// Parses the three whitespace-separated numbers a `tcp_rmem` file holds.
    pub fn parse(text: &str) -> Option<Self> {
        let mut numbers = text.split_whitespace().map(|n| n.parse::<u64>().ok());
        let triple = BufferTriple {
            min: numbers.next()??,
            default: numbers.next()??,
            max: numbers.next()??,
        };
        numbers.next().is_none().then_some(triple)
    }

    /// The triple as `sysctl` writes it: `4096 131072 33554432`.
    pub fn to_sysctl(self) -> String {
        format!("{} {} {}", self.min, self.default, self.max)
    }
}

/// The values of every [`SysctlKey`], each `None` where it could not be read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct HostSettings {
    /// `net.core.rmem_max`, bytes.
    pub rmem_max: Option<u64>,
    /// `net.core.wmem_max`, bytes.
    pub wmem_max: Option<u64>,
    /// `net.ipv4.tcp_rmem`.
    pub tcp_rmem: Option<BufferTriple>,
    /// `net.ipv4.tcp_wmem`.
    pub tcp_wmem: Option<BufferTriple>,
    /// `net.ipv4.tcp_window_scaling`.
    pub tcp_window_scaling: Option<bool>,
    /// `net.ipv4.tcp_moderate_rcvbuf`.
    pub tcp_moderate_rcvbuf: Option<bool>,
    /// `net.ipv4.tcp_congestion_control`.
    pub tcp_congestion_control: Option<String>,
    /// `net.ipv4.tcp_available_congestion_control`.
    pub tcp_available_congestion_control: Option<Vec<String>>,
    /// `net.core.default_qdisc`.
    pub default_qdisc: Option<String>,
    /// `net.ipv4.tcp_mtu_probing` (0 off, 1 after a black hole, 2 always).
    pub tcp_mtu_probing: Option<u8>,
    /// `net.ipv4.tcp_notsent_lowat`, bytes (`u32::MAX` means no limit).
    pub tcp_notsent_lowat: Option<u64>,
}

impl HostSettings {
    /// The values of a Linux 6.16+ kernel that nobody has tuned: `tcp_rmem`
    /// max 32 MiB (6 MiB before 6.16), `tcp_wmem` max 4 MiB, `rmem_max` and
    /// `wmem_max` 212,992 bytes. Used by `advise` when it has not read a host.
    pub fn linux_defaults() -> Self {
        HostSettings {
            rmem_max: Some(212_992),
            wmem_max: Some(212_992),
            tcp_rmem: Some(BufferTriple {
                min: 4096,
                default: 131_072,
                max: 33_554_432,
            }),
            tcp_wmem: Some(BufferTriple {
                min: 4096,
                default: 16_384,
                max: 4_194_304,
            }),
            tcp_window_scaling: Some(true),
            tcp_moderate_rcvbuf: Some(true),
            tcp_congestion_control: Some("cubic".into()),
            tcp_available_congestion_control: Some(vec!["reno".into(), "cubic".into()]),
            default_qdisc: Some("pfifo_fast".into()),
            tcp_mtu_probing: Some(0),
            tcp_notsent_lowat: Some(u64::from(u32::MAX)),
        }
    }

    /// Builds the settings from the text of each key's file, as `read`
    /// returns it (`None` where the file could not be read).
    pub fn parse(mut read: impl FnMut(SysctlKey) -> Option<String>) -> Self {
        let mut text = |key| read(key).map(|t| t.trim().to_owned());
        let number = |t: Option<String>| t.and_then(|t| t.parse::<u64>().ok());
        let flag = |t: Option<String>| t.and_then(|t| t.parse::<u8>().ok()).map(|v| v != 0);
        HostSettings {
            rmem_max: number(text(SysctlKey::RmemMax)),
            wmem_max: number(text(SysctlKey::WmemMax)),
            tcp_rmem: text(SysctlKey::TcpRmem).and_then(|t| BufferTriple::parse(&t)),
            tcp_wmem: text(SysctlKey::TcpWmem).and_then(|t| BufferTriple::parse(&t)),
            tcp_window_scaling: flag(text(SysctlKey::TcpWindowScaling)),
            tcp_moderate_rcvbuf: flag(text(SysctlKey::TcpModerateRcvbuf)),
            tcp_congestion_control: text(SysctlKey::TcpCongestionControl).filter(|t| !t.is_empty()),
            tcp_available_congestion_control: text(SysctlKey::TcpAvailableCongestionControl)
                .map(|t| t.split_whitespace().map(str::to_owned).collect()),
            default_qdisc: text(SysctlKey::DefaultQdisc).filter(|t| !t.is_empty()),
            tcp_mtu_probing: text(SysctlKey::TcpMtuProbing).and_then(|t| t.parse().ok()),
            tcp_notsent_lowat: number(text(SysctlKey::TcpNotsentLowat)),
        }
    }

    /// The keys whose value is missing.
    pub fn missing(&self) -> Vec<SysctlKey> {
        let present = [
            self.rmem_max.is_some(),
            self.wmem_max.is_some(),
            self.tcp_rmem.is_some(),
            self.tcp_wmem.is_some(),
            self.tcp_window_scaling.is_some(),
            self.tcp_moderate_rcvbuf.is_some(),
            self.tcp_congestion_control.is_some(),
            self.tcp_available_congestion_control.is_some(),
            self.default_qdisc.is_some(),
            self.tcp_mtu_probing.is_some(),
            self.tcp_notsent_lowat.is_some(),
        ];
        SysctlKey::ALL
            .into_iter()
            .zip(present)
            .filter(|(_, p)| !p)
            .map(|(k, _)| k)
            .collect()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_this_machine_shows() {
        let settings = HostSettings::parse(|key| {
            Some(
                match key {
                    SysctlKey::RmemMax | SysctlKey::WmemMax => "4194304\n",
                    SysctlKey::TcpRmem => "4096\t131072\t33554432\n",
                    SysctlKey::TcpWmem => "4096\t16384\t4194304\n",
                    SysctlKey::TcpWindowScaling | SysctlKey::TcpModerateRcvbuf => "1\n",
                    SysctlKey::TcpCongestionControl => "bbr\n",
                    SysctlKey::TcpAvailableCongestionControl => "reno bbr cubic\n",
                    SysctlKey::DefaultQdisc => "pfifo_fast\n",
                    SysctlKey::TcpMtuProbing => "0\n",
                    SysctlKey::TcpNotsentLowat => "4294967295\n",
                }
                .to_owned(),
            )
        });
        assert_eq!(settings.tcp_wmem.unwrap().max, 4_194_304);
        assert_eq!(
            settings.tcp_rmem.unwrap().to_sysctl(),
            "4096 131072 33554432"
        );
        assert_eq!(
            settings
                .tcp_available_congestion_control
                .as_deref()
                .unwrap()
                .len(),
            3
        );
        assert!(settings.missing().is_empty());
    }

    #[test]
    fn unreadable_or_garbled_values_stay_missing() {
        let settings = HostSettings::parse(|key| match key {
            SysctlKey::TcpRmem => Some("4096 lots".into()),
            SysctlKey::RmemMax => Some("-1".into()),
            _ => None,
        });
        assert_eq!(settings.tcp_rmem, None);
        assert_eq!(settings.rmem_max, None);
        assert_eq!(settings.missing().len(), SysctlKey::ALL.len());
        assert_eq!(BufferTriple::parse("1 2 3 4"), None);
    }

    #[test]
    fn proc_paths() {
        assert_eq!(
            SysctlKey::TcpRmem.proc_path(),
            "/proc/sys/net/ipv4/tcp_rmem"
        );
    }
}
