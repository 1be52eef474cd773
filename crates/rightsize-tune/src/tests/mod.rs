//! Deterministic tests of the tuners: the `--tune` grammar, input checks,
//! each tuner's state machine fed synthetic traces, and every tuner driven
//! over a modelled path ([`model`], [`harness`]) with a virtual clock and a
//! seeded PRNG. No test reads a clock.

#![allow(clippy::unwrap_used)]

mod auto_tests;
mod drs_tests;
mod fixed_tests;
mod freebsd_tests;
mod harness;
mod input_tests;
mod model;
mod model_tests;
mod robustness_tests;
mod sobas_tests;
mod spec_tests;

use std::time::Duration;

use crate::tcpinfo::TcpInfoSample;
use crate::telemetry::BufferReading;
use crate::units::Bytes;
use crate::{
    Action, Context, Decision, Event, Limits, Peer, Role, RttMeasurement, Sample, Tuner, TunerSpec,
};

/// A data-transfer host: 32 MiB buffer limits, 4 MiB send autotuning.
fn limits() -> Limits {
    Limits {
        rmem_max: Bytes(32 << 20),
        wmem_max: Bytes(32 << 20),
        tcp_rmem_max: Bytes(32 << 20),
        tcp_wmem_max: Bytes(4 << 20),
        mss: Bytes(1448),
    }
}

fn ctx(role: Role, peer: Peer) -> Context {
    Context {
        role,
        limits: limits(),
        peer,
    }
}

fn tuner(spec: &str, role: Role, peer: Peer) -> Box<dyn Tuner> {
    spec.parse::<TunerSpec>().unwrap().build(ctx(role, peer))
}

fn ms(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

/// A receiver's sample: `bytes` read by `at_ms`, with its own `TCP_INFO`
/// (receiver RTT and advertised window) and buffers.
fn rx_sample(at_ms: u64, bytes: u64, rcv_rtt_ms: u32, rcv_wnd: u32, rcvbuf: u64) -> Event {
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
fn bare_sample(at_ms: u64, bytes: u64) -> Event {
    Event::Sample(Sample {
        at: ms(at_ms),
        bytes,
        tcp_info: None,
        buffers: None,
    })
}

fn control_rtt(at_ms: u64, rtt_ms: u64) -> Event {
    Event::ControlRtt(RttMeasurement {
        at: ms(at_ms),
        rtt: ms(rtt_ms),
    })
}

/// The receive-buffer requests among a decision's actions.
fn rcvbufs(d: &Decision) -> Vec<u64> {
    d.actions
        .iter()
        .filter_map(|a| match a {
            Action::SetRcvBuf(b) => Some(b.get()),
            _ => None,
        })
        .collect()
}
