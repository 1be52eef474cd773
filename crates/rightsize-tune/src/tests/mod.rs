//! The tuners' shared test bench: a modelled path ([`model`], with its own
//! tests) and the [`harness`] that drives any tuner over it with a virtual
//! clock and a seeded PRNG; the events and limits the tuners' tests build
//! on; and the suites about every tuner at once ([`robustness`]) and about
//! this crate's root ([`Limits::from_host`]). Each tuner's own tests sit
//! beside it (`drs/tests.rs`, `auto/tests.rs`, ...) and reach this module
//! as `crate::tests`. No test reads a clock.

#![allow(clippy::unwrap_used)]

pub(crate) mod harness;
pub(crate) mod model;
mod range;
mod robustness;
mod sharing;

use std::time::Duration;

use crate::host::HostSettings;
use crate::tcpinfo::TcpInfoSample;
use crate::telemetry::BufferReading;
use crate::units::Bytes;
use crate::{
    Action, Congestion, Context, Decision, Event, Limits, Peer, Role, RttMeasurement, Sample,
    Tuner, TunerSpec,
};

/// A data-transfer host: 32 MiB buffer limits, 4 MiB send autotuning.
pub(crate) fn limits() -> Limits {
    Limits {
        rmem_max: Bytes(32 << 20),
        wmem_max: Bytes(32 << 20),
        tcp_rmem_max: Bytes(32 << 20),
        tcp_wmem_max: Bytes(4 << 20),
        mss: Bytes(1448),
    }
}

pub(crate) fn ctx(role: Role, peer: Peer) -> Context {
    Context {
        role,
        limits: limits(),
        peer,
        congestion: Congestion::WindowBased,
    }
}

pub(crate) fn tuner(spec: &str, role: Role, peer: Peer) -> Box<dyn Tuner> {
    spec.parse::<TunerSpec>().unwrap().build(ctx(role, peer))
}

pub(crate) fn ms(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

/// A receiver's sample: `bytes` read by `at_ms`, with its own `TCP_INFO`
/// (receiver RTT and advertised window) and buffers.
pub(crate) fn rx_sample(
    at_ms: u64,
    bytes: u64,
    rcv_rtt_ms: u32,
    rcv_wnd: u32,
    rcvbuf: u64,
) -> Event {
    Event::Sample(Sample {
        at: ms(at_ms),
        bytes,
        tcp_info: Some(TcpInfoSample {
            rcv_rtt_us: rcv_rtt_ms * 1000,
            rcv_wnd_bytes: Some(rcv_wnd),
            ..TcpInfoSample::default()
        }),
        buffers: Some(BufferReading {
            rcvbuf_bytes: rcvbuf,
            sndbuf_bytes: 0,
            window_clamp_bytes: 0,
        }),
    })
}

/// A bare sample: only time and bytes.
pub(crate) fn bare_sample(at_ms: u64, bytes: u64) -> Event {
    Event::Sample(Sample {
        at: ms(at_ms),
        bytes,
        tcp_info: None,
        buffers: None,
    })
}

pub(crate) fn control_rtt(at_ms: u64, rtt_ms: u64) -> Event {
    Event::ControlRtt(RttMeasurement {
        at: ms(at_ms),
        rtt: ms(rtt_ms),
    })
}

/// The receive-buffer requests among a decision's actions.
pub(crate) fn rcvbufs(d: &Decision) -> Vec<u64> {
    d.actions
        .iter()
        .filter_map(|a| match a {
            Action::SetRcvBuf(b) => Some(b.get()),
            _ => None,
        })
        .collect()
}

#[test]
fn limits_come_from_the_host_or_the_linux_defaults() {
    let host = HostSettings::parse(|key| match key.name() {
        "net.core.rmem_max" => Some("67108864".into()),
        "net.ipv4.tcp_wmem" => Some("4096 16384 8388608".into()),
        _ => None,
    });
    let limits = Limits::from_host(&host, Some(8948));
    assert_eq!(limits.rmem_max, Bytes(64 << 20));
    assert_eq!(limits.tcp_wmem_max, Bytes(8 << 20));
    // Unread values: an untuned 6.16+ kernel.
    assert_eq!(limits.wmem_max, Bytes(212_992));
    assert_eq!(limits.tcp_rmem_max, Bytes(32 << 20));
    assert_eq!(limits.mss, Bytes(8948));
    assert_eq!(Limits::from_host(&host, Some(0)).mss, Bytes(1460));
}
