//! Cross traffic through an emulated bottleneck, made by rightsize itself.
//!
//! A [`Sink`] listens on one address and port for both TCP and UDP and
//! discards what arrives, counting it. A [`UdpSource`] sends datagrams to a
//! sink at a constant bit rate, optionally on/off, paced by rightsize-path's
//! token bucket (`rightsize_path::cross`) and deaf to ICMP errors: it is
//! unresponsive traffic. [`TcpSources`] run N bulk TCP flows to a sink,
//! each writing zeros as fast as TCP lets it, optionally limited by a fixed
//! send buffer (a buffer-limited flow, as in SOBAS Figs. 14-15).
//!
//! Guarantees: every handle's `snapshot()` reads its counters while it runs,
//! and `stop()` (or `Drop`) stops its threads within about
//! [`POLL_INTERVAL`] and joins them. A failure while running (a reset flow,
//! a socket error) does not end the others; it is kept in the report.
//! Settings are checked, and sockets made, connected and read back, before
//! any traffic starts. Every error names the call and the address. Rates
//! count IP packets (IP + UDP headers + payload), never Ethernet framing.

mod sink;
mod tcp;
mod udp;

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rightsize_path::cross::PlanError;
use rightsize_tune::units::Bytes;
use serde::Serialize;

use crate::socket::SocketError;

pub use sink::{Sink, SinkReport};
pub use tcp::{DEFAULT_CONNECT_TIMEOUT, TcpConfig, TcpFlowReport, TcpReport, TcpSources};
pub use udp::{UdpConfig, UdpReport, UdpSource};

/// How often every blocked call wakes to check whether it should stop.
pub const POLL_INTERVAL: Duration = crate::signals::POLL_INTERVAL;

/// At most this many error messages are kept per report; the rest are counted.
pub const MAX_ERRORS_KEPT: usize = 8;

/// Cross traffic that could not start.
#[derive(Debug, thiserror::Error)]
pub enum CrossError {
    /// A setting rightsize-path refused (rate 0, window 0, ...).
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// Not `ADDR:PORT`.
    #[error(
        "invalid address {input:?}: give ADDR:PORT, such as 127.0.0.1:5201, [::1]:5201 or host:5201"
    )]
    BadAddress {
        /// The text given.
        input: String,
    },
    /// The name did not resolve.
    #[error("cannot resolve {input:?}")]
    Resolve {
        /// The text given.
        input: String,
        /// What the resolver said.
        #[source]
        source: io::Error,
    },
    /// A destination that cannot receive (0.0.0.0, ::, port 0).
    #[error(
        "cannot send to {addr}: give the sink's own address and port (the one `cross sink` printed)"
    )]
    NotADestination {
        /// The address given.
        addr: SocketAddr,
    },
    /// A TCP socket call, from `rightsize_sys::socket`.
    #[error(transparent)]
    Socket(#[from] SocketError),
    /// Another system call failed.
    #[error("{call} on {addr}")]
    Os {
        /// The call, such as `bind(UDP)` or `sendmmsg`.
        call: &'static str,
        /// The address it was acting on.
        addr: SocketAddr,
        /// What the OS said.
        #[source]
        source: io::Error,
    },
    /// The kernel kept less send buffer than the window needs.
    #[error(
        "TCP window {window}: the kernel kept only {applied_bytes} bytes of send buffer for \
         {to} (capped by {clamped_by}); {fix}"
    )]
    WindowClamped {
        /// The window asked for.
        window: Bytes,
        /// The destination.
        to: SocketAddr,
        /// `SO_SNDBUF` as read back.
        applied_bytes: u64,
        /// What capped it (a sysctl name or the kernel's own limit).
        clamped_by: &'static str,
        /// What to do: the `sysctl` command that lifts the cap, where there is one.
        fix: String,
    },
    /// A thread could not be started.
    #[error("starting the {what} thread")]
    Spawn {
        /// What the thread was for.
        what: &'static str,
        /// What the OS said.
        #[source]
        source: io::Error,
    },
}

/// Parses `ADDR:PORT` (an IP or a host name, `[v6]:port`) and resolves it
/// to its first address. A host name is looked up, so this is I/O.
pub fn resolve(input: &str) -> Result<SocketAddr, CrossError> {
    if let Ok(addr) = input.parse() {
        return Ok(addr);
    }
    let bad = || CrossError::BadAddress {
        input: input.to_owned(),
    };
    let (host, port) = input.rsplit_once(':').ok_or_else(bad)?;
    if host.is_empty() || port.parse::<u16>().is_err() || host.contains(':') {
        return Err(bad());
    }
    let mut addrs = input
        .to_socket_addrs()
        .map_err(|source| CrossError::Resolve {
            input: input.to_owned(),
            source,
        })?;
    addrs.next().ok_or_else(|| CrossError::Resolve {
        input: input.to_owned(),
        source: io::Error::new(io::ErrorKind::NotFound, "no addresses"),
    })
}

/// Refuses destinations that cannot be a sink.
fn check_destination(addr: SocketAddr) -> Result<SocketAddr, CrossError> {
    if addr.ip().is_unspecified() || addr.port() == 0 {
        return Err(CrossError::NotADestination { addr });
    }
    Ok(addr)
}

/// When a handle started and stopped, for results files.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Times {
    /// Start, seconds since the Unix epoch (wall clock).
    pub start_unix_s: f64,
    /// Stop, seconds since the Unix epoch; `None` while running.
    pub stop_unix_s: Option<f64>,
    /// Start to stop (or to now), seconds, on the monotonic clock.
    pub elapsed_s: f64,
}

/// A start time on both clocks and a stop time once stopped.
#[derive(Debug)]
struct Span {
    start: Instant,
    start_unix: SystemTime,
    /// Monotonic nanoseconds from start to stop; `u64::MAX` while running.
    stop_ns: AtomicU64,
}

impl Span {
    fn start() -> Span {
        Span {
            start: Instant::now(),
            start_unix: SystemTime::now(),
            stop_ns: AtomicU64::new(u64::MAX),
        }
    }

    /// Records the stop time; later calls keep the first.
    fn stop(&self) {
        self.stop_at(self.start.elapsed());
    }

    /// Records `elapsed` (since the start) as the stop time, unless a stop
    /// time is already recorded.
    fn stop_at(&self, elapsed: Duration) {
        let ns = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX - 1);
        let _ = self
            .stop_ns
            .compare_exchange(u64::MAX, ns, Ordering::SeqCst, Ordering::SeqCst);
    }

    /// Start to stop, or to now while running.
    fn elapsed(&self) -> Duration {
        match self.stop_ns.load(Ordering::SeqCst) {
            u64::MAX => self.start.elapsed(),
            ns => Duration::from_nanos(ns),
        }
    }

    fn times(&self) -> Times {
        let start = self
            .start_unix
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs_f64();
        let elapsed = self.elapsed().as_secs_f64();
        let stopped = self.stop_ns.load(Ordering::SeqCst) != u64::MAX;
        Times {
            start_unix_s: start,
            stop_unix_s: stopped.then_some(start + elapsed),
            elapsed_s: elapsed,
        }
    }
}

/// Whether an I/O error only means "nothing happened before the timeout".
fn is_timeout(err: &io::Error) -> bool {
    matches!(
        err.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn addresses_parse_or_say_what_is_expected() {
        assert_eq!(
            resolve("127.0.0.1:5201").unwrap(),
            SocketAddr::from(([127, 0, 0, 1], 5201))
        );
        assert_eq!(resolve("[::1]:9").unwrap().port(), 9);
        assert_eq!(resolve("localhost:7").unwrap().port(), 7);
        for bad in [
            "127.0.0.1",
            "127.0.0.1:",
            ":5201",
            "1.2.3.4:99999",
            "::1:5",
            "",
        ] {
            let err = resolve(bad).unwrap_err().to_string();
            assert!(
                err.contains(&format!("{bad:?}")) && err.contains("ADDR:PORT"),
                "{err}"
            );
        }
        let err = resolve("nosuch.invalid:5201").unwrap_err();
        assert!(matches!(err, CrossError::Resolve { .. }), "{err:?}");
        assert!(err.to_string().contains("\"nosuch.invalid:5201\""));
    }

    #[test]
    fn wildcards_are_not_destinations() {
        for addr in ["0.0.0.0:5201", "[::]:5201", "127.0.0.1:0"] {
            let err = check_destination(addr.parse().unwrap()).unwrap_err();
            assert!(err.to_string().contains(addr), "{err}");
        }
    }

    #[test]
    fn span_keeps_the_first_stop() {
        let span = Span::start();
        assert_eq!(span.times().stop_unix_s, None);
        span.stop();
        let first = span.elapsed();
        std::thread::sleep(Duration::from_millis(2));
        span.stop();
        assert_eq!(span.elapsed(), first);
        let times = span.times();
        assert!(times.stop_unix_s.unwrap() >= times.start_unix_s);
    }
}
