//! SOBAS's path probes over real UDP sockets (the SOBAS paper, section IV-B; docs/sources.md): the
//! packet trains that estimate the capacity before data flows, and the
//! out-of-band probe stream (100 bytes every 10 ms, echoed) that gives the
//! RTT and the forward path's loss.
//!
//! A [`Responder`] runs on the end that sends the data: it echoes probes
//! and answers train requests, for one trusted peer address only. A
//! [`Prober`] runs on the end that receives the data: it asks for the
//! trains, then runs the probe stream, and hands each result to a callback
//! as a [`ProbeEvent`] whose times are since the data connection opened,
//! ready for the tuners ([`ProbeEvent::tuner_event`]). The datagrams and
//! the bookkeeping are `rightsize_path::probe`'s; this module only moves
//! them and reads the clocks.
//!
//! Guarantees: each handle's threads stop within [`POLL_INTERVAL`] of its
//! `Drop` and are joined; a responder sends nothing to any address but its
//! peer's, never more than one echo per probe (of the probe's size), and a
//! train only for a request padded to one train packet, spaced and within
//! a lifetime budget (`rightsize_path::probe::TrainGate`). Train arrival
//! times are the kernel's (`SO_TIMESTAMPNS`) where it gives them: on
//! loopback, user-space times after the wake-up bunch a train's packets
//! together and overstate the capacity (see [`Timestamps`]).

mod io;
mod prober;
mod responder;

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use rightsize_path::probe::TrainDiscard;
use rightsize_tune::{Event, TrainProbe, UdpProbeReport};

pub use prober::{Prober, ProberOptions, Timestamps};
pub use responder::{Responder, ResponderStats};

/// How often a blocked probe thread wakes to check whether to stop.
pub const POLL_INTERVAL: Duration = crate::signals::POLL_INTERVAL;

/// A probe socket or thread that could not start, or an option refused.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// A system call failed.
    #[error("{call} on {addr}")]
    Os {
        /// The call, such as `bind(UDP)` or `setsockopt(SO_TIMESTAMPNS)`.
        call: &'static str,
        /// The address it was acting on.
        addr: SocketAddr,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// A responder address that cannot be sent to.
    #[error(
        "cannot probe {addr}: give the responder's own address and port (Responder::local_addr)"
    )]
    NotADestination {
        /// The address given.
        addr: SocketAddr,
    },
    /// An option outside what the datagrams can carry.
    #[error("probe option {option} = {value}: {expected}")]
    BadOption {
        /// The option's name.
        option: &'static str,
        /// The value given.
        value: String,
        /// What it must be.
        expected: String,
    },
    /// The key that makes stamps unforgeable could not be drawn.
    #[error(transparent)]
    Random(#[from] crate::random::RandomError),
    /// A thread could not be started.
    #[error("starting the {what} thread")]
    Spawn {
        /// What the thread was for.
        what: &'static str,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
}

/// What a [`Prober`] reports; `at` is always time since the data connection
/// opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeEvent {
    /// A train measured ([`Event::Train`]).
    Train(TrainProbe),
    /// A train that gave no sample: too few packets came back in time, or
    /// none had a dispersion.
    TrainDiscarded {
        /// When it was given up.
        at: Duration,
        /// Why.
        reason: TrainDiscard,
    },
    /// The trains are over: `measured` samples from `requested` requests.
    TrainsDone {
        /// When.
        at: Duration,
        /// Trains that gave a sample.
        measured: usize,
        /// Train requests sent.
        requested: usize,
    },
    /// One period of the probe stream ([`Event::UdpProbes`]).
    UdpProbes(UdpProbeReport),
    /// The prober stopped on an error; nothing follows.
    Failed {
        /// When.
        at: Duration,
        /// The error, with its cause.
        error: String,
    },
}

impl ProbeEvent {
    /// The tuner input this event is, if it is one.
    pub fn tuner_event(&self) -> Option<Event> {
        match self {
            ProbeEvent::Train(t) => Some(Event::Train(*t)),
            ProbeEvent::UdpProbes(r) => Some(Event::UdpProbes(*r)),
            _ => None,
        }
    }

    /// When it happened, since the data connection opened.
    pub fn at(&self) -> Duration {
        match self {
            ProbeEvent::Train(t) => t.at,
            ProbeEvent::UdpProbes(r) => r.at,
            ProbeEvent::TrainDiscarded { at, .. }
            | ProbeEvent::TrainsDone { at, .. }
            | ProbeEvent::Failed { at, .. } => *at,
        }
    }
}

/// Whether an I/O error only means "nothing arrived before the timeout".
fn is_timeout(err: &std::io::Error) -> bool {
    matches!(
        err.kind(),
        std::io::ErrorKind::WouldBlock
            | std::io::ErrorKind::TimedOut
            | std::io::ErrorKind::Interrupted
    )
}

/// Whether two addresses are the same host (an IPv4-mapped IPv6 address is
/// its IPv4 address).
fn same_host(a: IpAddr, b: IpAddr) -> bool {
    a.to_canonical() == b.to_canonical()
}

fn spawn(
    what: &'static str,
    body: impl FnOnce() + Send + 'static,
) -> Result<std::thread::JoinHandle<()>, ProbeError> {
    std::thread::Builder::new()
        .name(format!("rightsize-{}", what.replace(' ', "-")))
        .spawn(body)
        .map_err(|source| ProbeError::Spawn { what, source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapped_addresses_are_the_same_host() {
        let v4: IpAddr = [127, 0, 0, 1].into();
        let mapped: IpAddr = "::ffff:127.0.0.1".parse().unwrap_or(v4);
        assert!(same_host(v4, mapped));
        assert!(!same_host(v4, [127, 0, 0, 2].into()));
    }

    #[test]
    fn only_trains_and_reports_are_tuner_events() {
        let report = UdpProbeReport {
            at: Duration::from_millis(5),
            sent: 1,
            lost: 0,
            rtt: None,
        };
        assert_eq!(
            ProbeEvent::UdpProbes(report).tuner_event(),
            Some(Event::UdpProbes(report))
        );
        let done = ProbeEvent::TrainsDone {
            at: Duration::from_millis(7),
            measured: 5,
            requested: 5,
        };
        assert_eq!(done.tuner_event(), None);
        assert_eq!(done.at(), Duration::from_millis(7));
    }
}
