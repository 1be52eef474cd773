//! Waiting for descriptors to become ready: one `poll(2)` wrapper for
//! every wait on a socket, listener or pipe with a time limit.
//!
//! Guarantees: the timeout is rounded up to whole milliseconds (a
//! sub-millisecond remainder waits 1 ms instead of spinning) and capped at
//! `c_int::MAX` ms; a signal that interrupts the wait (`EINTR`) ends it
//! early as if it had timed out, so a caller that loops and checks a stop
//! flag sees the flag at once; any other failure is a [`PollError`] naming
//! `poll`, the descriptors and the timeout. A descriptor's hang-up or error
//! (`POLLHUP`, `POLLERR`, and `POLLRDHUP` for a read) counts as ready, as
//! the next read or write on it will not block.

use std::fmt::Write as _;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::time::Duration;

/// What to wait for on a descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    /// Bytes to read, a connection to accept, or the peer's FIN.
    Read,
    /// Room to write.
    Write,
}

impl Want {
    fn events(self) -> libc::c_short {
        match self {
            Want::Read => libc::POLLIN | libc::POLLRDHUP,
            Want::Write => libc::POLLOUT,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Want::Read => "read",
            Want::Write => "write",
        }
    }
}

/// What `poll` reported for one descriptor. All false: not ready when the
/// wait ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ready {
    /// `POLLIN`: a read (or accept) will not block.
    pub readable: bool,
    /// `POLLOUT`: a write will not block.
    pub writable: bool,
    /// `POLLRDHUP`, `POLLHUP`, `POLLERR` or `POLLNVAL`: the peer closed
    /// its side, or the descriptor has an error pending.
    pub hung_up: bool,
}

impl Ready {
    /// Anything at all was reported.
    pub fn any(self) -> bool {
        self.readable || self.writable || self.hung_up
    }

    fn from_revents(revents: libc::c_short) -> Ready {
        Ready {
            readable: revents & libc::POLLIN != 0,
            writable: revents & libc::POLLOUT != 0,
            hung_up: revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR | libc::POLLNVAL)
                != 0,
        }
    }
}

/// `poll(2)` failed (not by a signal).
#[derive(Debug, thiserror::Error)]
#[error("poll({}, timeout {timeout:?})", describe(.fds))]
pub struct PollError {
    /// The descriptors and what was waited for on each.
    pub fds: Vec<(RawFd, Want)>,
    /// The time limit asked for.
    pub timeout: Duration,
    /// What the OS said.
    #[source]
    pub source: io::Error,
}

/// For callers that report `io::Error`s: the same kind, and a message
/// that names the call, the descriptors and what the OS said.
impl From<PollError> for io::Error {
    fn from(e: PollError) -> io::Error {
        io::Error::new(e.source.kind(), format!("{e}: {}", e.source))
    }
}

fn describe(fds: &[(RawFd, Want)]) -> String {
    let mut out = String::new();
    for (i, (fd, want)) in fds.iter().enumerate() {
        let sep = if i == 0 { "" } else { ", " };
        let _ = write!(out, "{sep}fd {fd} {}", want.name());
    }
    out
}

/// Waits until any of `fds` is ready for what it is paired with, or
/// `timeout` passes (or a signal arrives). Returns one [`Ready`] per
/// descriptor, in order; all empty when nothing became ready.
pub fn wait(fds: &[(BorrowedFd<'_>, Want)], timeout: Duration) -> Result<Vec<Ready>, PollError> {
    let mut pollfds: Vec<libc::pollfd> = fds
        .iter()
        .map(|(fd, want)| libc::pollfd {
            fd: fd.as_raw_fd(),
            events: want.events(),
            revents: 0,
        })
        .collect();
    let error = |source| PollError {
        fds: fds
            .iter()
            .map(|(fd, want)| (fd.as_raw_fd(), *want))
            .collect(),
        timeout,
        source,
    };
    let count = libc::nfds_t::try_from(pollfds.len())
        .map_err(|_| error(io::Error::from_raw_os_error(libc::EINVAL)))?;
    // SAFETY: `pollfds` is a live array of `count` pollfds that poll(2)
    // only writes `revents` of; every descriptor is borrowed, so open.
    let rc = unsafe { libc::poll(pollfds.as_mut_ptr(), count, timeout_ms(timeout)) };
    if rc < 0 {
        let source = io::Error::last_os_error();
        if source.kind() != io::ErrorKind::Interrupted {
            return Err(error(source));
        }
        return Ok(vec![Ready::default(); fds.len()]);
    }
    Ok(pollfds
        .iter()
        .map(|p| Ready::from_revents(p.revents))
        .collect())
}

/// Waits until `fd` is ready for `want`, or `timeout` passes.
pub fn wait_one(fd: impl AsFd, want: Want, timeout: Duration) -> Result<Ready, PollError> {
    let ready = wait(&[(fd.as_fd(), want)], timeout)?;
    Ok(ready.first().copied().unwrap_or_default())
}

/// Whether `fd` becomes readable (or hangs up) within `timeout`.
pub fn readable(fd: impl AsFd, timeout: Duration) -> Result<bool, PollError> {
    wait_one(fd, Want::Read, timeout).map(Ready::any)
}

/// Whether `fd` becomes writable (or hangs up) within `timeout`.
pub fn writable(fd: impl AsFd, timeout: Duration) -> Result<bool, PollError> {
    wait_one(fd, Want::Write, timeout).map(Ready::any)
}

/// `timeout` in whole milliseconds, rounded up, at most `c_int::MAX`.
fn timeout_ms(timeout: Duration) -> libc::c_int {
    let ms = timeout.as_nanos().div_ceil(1_000_000);
    libc::c_int::try_from(ms).unwrap_or(libc::c_int::MAX)
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::os::unix::net::UnixStream;
    use std::time::Instant;

    use super::*;

    #[test]
    fn a_quiet_socket_times_out_then_a_write_makes_it_readable() {
        let (mut a, b) = UnixStream::pair().expect("socketpair");
        let started = Instant::now();
        assert!(!readable(&b, Duration::from_millis(30)).expect("poll"));
        assert!(started.elapsed() >= Duration::from_millis(30));
        a.write_all(b"x").expect("write");
        assert!(readable(&b, Duration::from_secs(5)).expect("poll"));
    }

    #[test]
    fn a_set_reports_each_descriptor() {
        let (mut a, b) = UnixStream::pair().expect("socketpair");
        let (c, d) = UnixStream::pair().expect("socketpair");
        a.write_all(b"x").expect("write");
        let ready = wait(
            &[
                (b.as_fd(), Want::Read),
                (d.as_fd(), Want::Read),
                (c.as_fd(), Want::Write),
            ],
            Duration::from_secs(5),
        )
        .expect("poll");
        assert_eq!(ready.len(), 3);
        assert!(ready[0].readable && !ready[0].hung_up);
        assert!(!ready[1].any());
        assert!(ready[2].writable);
    }

    #[test]
    fn a_closed_peer_is_a_hang_up() {
        let (a, b) = UnixStream::pair().expect("socketpair");
        drop(a);
        let ready = wait_one(&b, Want::Read, Duration::from_secs(5)).expect("poll");
        assert!(ready.hung_up);
    }

    #[test]
    fn timeouts_round_up_and_saturate() {
        assert_eq!(timeout_ms(Duration::ZERO), 0);
        assert_eq!(timeout_ms(Duration::from_micros(1)), 1);
        assert_eq!(timeout_ms(Duration::from_millis(20)), 20);
        assert_eq!(timeout_ms(Duration::MAX), libc::c_int::MAX);
    }

    #[test]
    fn the_error_names_the_call_and_the_descriptors() {
        let err = PollError {
            fds: vec![(5, Want::Read), (6, Want::Write)],
            timeout: Duration::from_millis(20),
            source: io::Error::from_raw_os_error(libc::EINVAL),
        };
        assert_eq!(err.to_string(), "poll(fd 5 read, fd 6 write, timeout 20ms)");
        let io = io::Error::from(err);
        assert_eq!(io.kind(), io::ErrorKind::InvalidInput);
        assert!(
            io.to_string()
                .starts_with("poll(fd 5 read, fd 6 write, timeout 20ms): Invalid argument"),
            "{io}"
        );
    }
}
