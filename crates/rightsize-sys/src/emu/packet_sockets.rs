//! Rattan's packet sockets, from outside: rightsize widens their receive
//! buffers when a path comes up and reads their drop counters around each
//! run (`rightsize_path::rattan::ingress_buffer_bytes` says why).
//!
//! Rattan 0.1.1 has no setting for either, so rightsize takes a duplicate
//! of each of its `AF_PACKET` sockets with `pidfd_getfd(2)` (root may do
//! that to any process), sets `SO_RCVBUFFORCE` on it (the socket is shared,
//! so Rattan's own descriptor sees the new size), and reads
//! `PACKET_STATISTICS` (which resets the counters it returns; Rattan never
//! reads them).

use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};

use crate::socket::{get_bytes, get_int, set_int};

/// A duplicate of each `AF_PACKET` socket process `pid` holds.
pub fn of_process(pid: u32) -> io::Result<Vec<OwnedFd>> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor
    // or -1; nothing else is touched.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    if pidfd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a descriptor the kernel just returned, owned by nobody else.
    let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd as RawFd) };
    let mut sockets = Vec::new();
    for entry in std::fs::read_dir(format!("/proc/{pid}/fd"))? {
        let entry = entry?;
        let Some(target_fd) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<RawFd>().ok())
        else {
            continue;
        };
        let is_socket = std::fs::read_link(entry.path())
            .map(|t| t.to_string_lossy().starts_with("socket:"))
            .unwrap_or(false);
        if !is_socket {
            continue;
        }
        // SAFETY: pidfd_getfd duplicates `target_fd` of the process into
        // this one and returns the new descriptor or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), target_fd, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a descriptor the kernel just returned, owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd as RawFd) };
        if get_int(fd.as_fd(), libc::SOL_SOCKET, libc::SO_DOMAIN)? == libc::AF_PACKET {
            sockets.push(fd);
        }
    }
    Ok(sockets)
}

/// What [`widen`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Widened {
    /// Packet sockets found.
    pub sockets: usize,
    /// The smallest receive buffer after, as the kernel reported it (the
    /// kernel doubles what is asked, for its bookkeeping); 0 with no socket.
    pub after: u64,
}

/// Sets the receive buffer of every packet socket of `pid` to `bytes` of
/// socket memory (`SO_RCVBUFFORCE`, which `rmem_max` does not cap; it asks
/// for half, since the kernel doubles what it is given).
pub fn widen(pid: u32, bytes: u64) -> io::Result<Widened> {
    let sockets = of_process(pid)?;
    let request = (bytes / 2).min(i32::MAX as u64 / 2) as libc::c_int;
    let mut after: Option<u64> = None;
    for fd in &sockets {
        set_int(fd.as_fd(), libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, request)?;
        let kept = get_int(fd.as_fd(), libc::SOL_SOCKET, libc::SO_RCVBUF)?.max(0) as u64;
        after = Some(after.map_or(kept, |a| a.min(kept)));
    }
    Ok(Widened {
        sockets: sockets.len(),
        after: after.unwrap_or(0),
    })
}

/// Packets the packet sockets of `pid` dropped since the last call (their
/// buffers were full: the emulator fell behind its input), summed.
pub fn drops(pid: u32) -> io::Result<u64> {
    let mut total = 0u64;
    for fd in of_process(pid)? {
        // struct tpacket_stats { unsigned int tp_packets, tp_drops; }
        let mut stats = [0u8; 8];
        let len = get_bytes(
            fd.as_fd(),
            libc::SOL_PACKET,
            libc::PACKET_STATISTICS,
            &mut stats,
        )?;
        if len != stats.len() {
            return Err(io::Error::other(format!(
                "PACKET_STATISTICS returned {len} bytes, expected 8"
            )));
        }
        let tp_drops = u32::from_ne_bytes([stats[4], stats[5], stats[6], stats[7]]);
        total += u64::from(tp_drops);
    }
    Ok(total)
}
