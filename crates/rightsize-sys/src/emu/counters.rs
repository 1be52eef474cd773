//! What a run measures about its own apparatus: idle round trips, the
//! emulator's CPU, its drops and the hosts' retransmissions.

use std::io::ErrorKind;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use rightsize_path::fidelity::Counters;

use super::EmuError;
use crate::netns;

/// A port nothing listens on: a connect gets a RST after one round trip.
pub const CLOSED_PORT: u16 = 9;

/// Measures `count` idle round trips from namespace `from` to `to`: each is
/// a TCP connect to a closed port, answered by a RST one round trip later
/// (no server needed, nothing stays open). The connects start
/// [`PROBE_SPACING`] apart and overlap, so the whole takes about
/// `count x PROBE_SPACING` plus one round trip, not `count` round trips
/// (at 100 ms, 0.3 s instead of 1.2 s per path run); a SYN of 60 bytes
/// every 20 ms adds no queue.
pub fn idle_rtts(
    from: &str,
    to: std::net::Ipv4Addr,
    count: usize,
) -> Result<Vec<Duration>, EmuError> {
    let target = SocketAddr::from((to, CLOSED_PORT));
    let samples = netns::run_in(from, move || {
        // Threads spawned here inherit this thread's network namespace.
        std::thread::scope(|scope| {
            let probes: Vec<_> = (0..count)
                .map(|i| {
                    scope.spawn(move || {
                        std::thread::sleep(PROBE_SPACING * i as u32);
                        let start = Instant::now();
                        match TcpStream::connect_timeout(&target, Duration::from_secs(3)) {
                            Err(e) if e.kind() == ErrorKind::ConnectionRefused => {
                                Some(start.elapsed())
                            }
                            // Something answered on the port, or nothing came
                            // back: either way not an idle round trip.
                            _ => None,
                        }
                    })
                })
                .collect();
            probes
                .into_iter()
                .filter_map(|p| p.join().ok().flatten())
                .collect::<Vec<Duration>>()
        })
    })?;
    Ok(samples)
}

/// Time between the starts of two idle-RTT probes.
pub const PROBE_SPACING: Duration = Duration::from_millis(20);

/// Reads the [`Counters`]: interface packets in the emulator's namespace and
/// the TCP retransmission counters of both hosts' namespaces.
pub fn snapshot(emulator_ns: &str, hosts: [&str; 2]) -> Result<Counters, EmuError> {
    let dev = netns::run_in(emulator_ns, || {
        std::fs::read_to_string("/proc/thread-self/net/dev")
    })?
    .map_err(|e| EmuError::Read {
        what: format!("/proc/net/dev in {emulator_ns}"),
        source: e,
    })?;
    let (mut retrans, mut explained) = (0, 0);
    for host in hosts {
        let snmp = netns::run_in(host, || {
            std::fs::read_to_string("/proc/thread-self/net/snmp")
        })?
        .map_err(|e| EmuError::Read {
            what: format!("/proc/net/snmp in {host}"),
            source: e,
        })?;
        retrans += retrans_segs(&snmp).unwrap_or(0);
        let netstat = netns::run_in(host, || {
            std::fs::read_to_string("/proc/thread-self/net/netstat")
        })?
        .map_err(|e| EmuError::Read {
            what: format!("/proc/net/netstat in {host}"),
            source: e,
        })?;
        explained += host_explained(&netstat);
    }
    Ok(Counters {
        emulator_in_minus_out: in_minus_out(&dev),
        retrans_segs: retrans,
        host_explained: explained,
    })
}

/// Packets the emulator (process `pid`) dropped at its input since the last
/// call: its packet sockets' buffers were full because it fell behind. No
/// real path drops there. `None` when they cannot be read.
pub fn ingress_drops(pid: u32) -> Option<u64> {
    super::packet_sockets::drops(pid).ok()
}

/// `TcpExt` counters of segments a retransmission answers that the
/// emulator did not drop: dropped by the receiving host (its buffer full
/// or pruned: a tuner that shrinks `SO_RCVBUF` under the data in flight
/// causes these) and retransmitted although the peer had them (reported
/// by D-SACK: tail loss probes, spurious timeouts). From
/// `/proc/net/netstat`.
pub fn host_explained(netstat: &str) -> u64 {
    const DROPS: [&str; 6] = [
        "OfoPruned",
        "RcvPruned",
        "TCPRcvQDrop",
        "TCPOFODrop",
        "TCPZeroWindowDrop",
        "TCPBacklogDrop",
    ];
    let mut lines = netstat.lines().filter(|l| l.starts_with("TcpExt:"));
    let (Some(header), Some(values)) = (lines.next(), lines.next()) else {
        return 0;
    };
    let pairs: Vec<(&str, u64)> = header
        .split_whitespace()
        .zip(values.split_whitespace())
        .skip(1)
        .filter_map(|(h, v)| Some((h, v.parse().ok()?)))
        .collect();
    let get = |name: &str| pairs.iter().find(|(h, _)| *h == name).map(|&(_, v)| v);
    let drops: u64 = DROPS.iter().filter_map(|n| get(n)).sum();
    // Segments where the kernel counts them (5.10+), else events.
    let duplicates = get("TCPDSACKRecvSegs").or_else(|| get("TCPDSACKRecv"));
    drops + duplicates.unwrap_or(0)
}

/// Received minus transmitted packets over every interface but `lo`
/// (`/proc/net/dev` format).
pub fn in_minus_out(dev: &str) -> i64 {
    let mut total = 0i64;
    for line in dev.lines().skip(2) {
        let Some((name, fields)) = line.split_once(':') else {
            continue;
        };
        if name.trim() == "lo" {
            continue;
        }
        let fields: Vec<i64> = fields
            .split_whitespace()
            .filter_map(|f| f.parse().ok())
            .collect();
        // rx: bytes packets errs drop fifo frame compressed multicast; tx: bytes packets ...
        if let (Some(rx), Some(tx)) = (fields.get(1), fields.get(9)) {
            total += rx - tx;
        }
    }
    total
}

/// `Tcp: ... RetransSegs ...` from `/proc/net/snmp`.
pub fn retrans_segs(snmp: &str) -> Option<u64> {
    let mut lines = snmp.lines().filter(|l| l.starts_with("Tcp:"));
    let header: Vec<&str> = lines.next()?.split_whitespace().collect();
    let values: Vec<&str> = lines.next()?.split_whitespace().collect();
    let index = header.iter().position(|h| *h == "RetransSegs")?;
    values.get(index)?.parse().ok()
}

/// CPU time of each thread of a process, in clock ticks, by thread id.
pub fn thread_ticks(pid: u32) -> Vec<(u32, u64)> {
    let Ok(entries) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let Some(tid) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
            continue;
        };
        if let Ok(stat) = std::fs::read_to_string(entry.path().join("stat"))
            && let Some(ticks) = stat_ticks(&stat)
        {
            out.push((tid, ticks));
        }
    }
    out
}

/// utime + stime from a `/proc/.../stat` line (fields 14 and 15, counted
/// after the parenthesised command name, which may hold spaces).
pub fn stat_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state): utime is field 14 -> index 11.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// The busiest thread's share of `wall` between two [`thread_ticks`] readings.
pub fn busiest_share(before: &[(u32, u64)], after: &[(u32, u64)], wall: Duration) -> Option<f64> {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz <= 0 || wall.is_zero() {
        return None;
    }
    let busiest = after
        .iter()
        .map(|(tid, ticks)| {
            let start = before
                .iter()
                .find(|(t, _)| t == tid)
                .map(|(_, s)| *s)
                .unwrap_or(0);
            ticks.saturating_sub(start)
        })
        .max()?;
    Some(busiest as f64 / hz as f64 / wall.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_formats() {
        let dev = "Inter-|   Receive |  Transmit\n face |bytes packets errs drop fifo frame compressed multicast|bytes packets errs drop fifo colls carrier compressed\n    lo: 10 2 0 0 0 0 0 0 10 2 0 0 0 0 0 0\nvR1-L-x: 586 70 0 0 0 0 0 0 586 60 0 0 0 0 0 0\nvL1-R-x: 100 5 0 0 0 0 0 0 100 7 0 0 0 0 0 0\n";
        assert_eq!(in_minus_out(dev), 8);
        let netstat = "TcpExt: SyncookiesSent OfoPruned RcvPruned TCPDSACKRecv TCPOFODrop TCPDSACKRecvSegs\nTcpExt: 0 3 1 9 2 40\nIpExt: InNoRoutes\nIpExt: 0\n";
        assert_eq!(host_explained(netstat), 3 + 1 + 2 + 40);
        assert_eq!(host_explained("TcpExt: TCPDSACKRecv\nTcpExt: 7\n"), 7);
        assert_eq!(host_explained(""), 0);
        let snmp = "Ip: Forwarding\nIp: 1\nTcp: RtoAlgorithm RtoMin RetransSegs InErrs\nTcp: 1 200 4711 0\nUdp: InDatagrams\nUdp: 3\n";
        assert_eq!(retrans_segs(snmp), Some(4711));
        assert_eq!(retrans_segs("Ip: x\n"), None);
        let stat = "7307 (rattan (x) y) S 1 7307 7307 0 -1 4194560 100 0 0 0 250 31 0 0 20 0 4 0";
        assert_eq!(stat_ticks(stat), Some(281));
    }
}
