//! Every tuner, at both ends, fed a long stream of random and hostile
//! events (times that go back, counters that wrap, absurd peer reports,
//! empty trains): none panics, and every size asked for is within the
//! limits (`static` excepted: it passes the user's size through).

use std::time::Duration;

use super::model::Rng;
use super::{Peer, Role, limits, tuner};
use crate::tcpinfo::TcpInfoSample;
use crate::telemetry::BufferReading;
use crate::units::Bytes;
use crate::{
    Action, Event, PeerInfo, PeerReport, RttMeasurement, Sample, TrainProbe, UdpProbeReport,
};

fn pick(rng: &mut Rng, values: &[u64]) -> u64 {
    let i = (rng.next_f64() * values.len() as f64) as usize;
    values.get(i).copied().unwrap_or(0)
}

const EDGES: [u64; 8] = [
    0,
    1,
    1448,
    65_535,
    1 << 20,
    1 << 31,
    u32::MAX as u64,
    u64::MAX,
];

fn maybe(rng: &mut Rng, value: u64) -> Option<u64> {
    (rng.next_f64() < 0.9).then_some(value)
}

/// An edge value, usually.
fn edge(rng: &mut Rng) -> Option<u64> {
    let value = pick(rng, &EDGES);
    maybe(rng, value)
}

fn event(rng: &mut Rng, at_us: &mut u64, bytes: &mut u64) -> Event {
    // Mostly forward, sometimes back in time or in bytes.
    let step = pick(rng, &[0, 1, 1_000, 25_000, 100_000, 5_000_000]);
    *at_us = if rng.next_f64() < 0.05 {
        at_us.saturating_sub(step)
    } else {
        at_us.saturating_add(step)
    };
    *bytes = if rng.next_f64() < 0.05 {
        bytes.saturating_sub(pick(rng, &EDGES))
    } else {
        bytes.saturating_add(pick(rng, &[0, 1448, 1 << 20, 1 << 30]))
    };
    let at = Duration::from_micros(*at_us);
    let small = |rng: &mut Rng| pick(rng, &EDGES).min(u64::from(u32::MAX)) as u32;
    match (rng.next_f64() * 5.0) as u32 {
        0 => Event::Sample(Sample {
            at,
            bytes: *bytes,
            tcp_info: (rng.next_f64() < 0.8).then(|| TcpInfoSample {
                rtt_us: small(rng),
                rcv_rtt_us: small(rng),
                min_rtt_us: Some(small(rng)),
                snd_mss_bytes: small(rng),
                unacked_segs: small(rng),
                snd_cwnd_segs: small(rng),
                busy_time_us: maybe(rng, *at_us),
                rwnd_limited_us: edge(rng),
                sndbuf_limited_us: edge(rng),
                delivery_rate_bps: edge(rng),
                bytes_acked: maybe(rng, *bytes),
                bytes_retrans: edge(rng),
                rcv_wnd_bytes: Some(small(rng)),
                snd_wnd_bytes: Some(small(rng)),
                notsent_bytes: Some(small(rng)),
                rcv_ooopack: Some(small(rng)),
                ..TcpInfoSample::default()
            }),
            buffers: (rng.next_f64() < 0.8).then(|| BufferReading {
                rcvbuf_bytes: pick(rng, &EDGES),
                sndbuf_bytes: pick(rng, &EDGES),
                window_clamp_bytes: small(rng),
            }),
        }),
        1 => Event::ControlRtt(RttMeasurement {
            at,
            rtt: Duration::from_micros(pick(rng, &[0, 1, 100_000, 10_000_000_000])),
        }),
        2 => Event::Train(TrainProbe {
            at,
            bytes: pick(rng, &EDGES),
            dispersion: Duration::from_nanos(pick(rng, &[0, 1, 600_000, u64::MAX])),
        }),
        3 => Event::UdpProbes(UdpProbeReport {
            at,
            sent: small(rng),
            lost: small(rng),
            rtt: (rng.next_f64() < 0.5).then(|| Duration::from_micros(pick(rng, &EDGES))),
        }),
        _ => Event::Peer(PeerReport {
            at,
            info: (rng.next_f64() < 0.7).then(|| PeerInfo {
                busy_time_us: maybe(rng, *at_us),
                rwnd_limited_us: edge(rng),
                sndbuf_limited_us: edge(rng),
                delivery_rate_bps: edge(rng),
                min_rtt_us: edge(rng).map(|v| v.min(u64::from(u32::MAX)) as u32),
                rtt_us: edge(rng).map(|v| v.min(u64::from(u32::MAX)) as u32),
                bytes_retrans: edge(rng),
                total_retrans_segs: Some(small(rng)),
                pace_bps: edge(rng),
            }),
            size: (rng.next_f64() < 0.5).then(|| Bytes(pick(rng, &EDGES))),
        }),
    }
}

#[test]
fn no_input_makes_a_tuner_panic_or_ask_beyond_the_limits() {
    let l = limits();
    for spec in [
        "stock",
        "kernel",
        "drs",
        "drs:interval=10ms",
        "sobas",
        "freebsd",
        "auto",
    ] {
        for role in [Role::Receiver, Role::Sender] {
            for peer in [Peer::Rightsize, Peer::Other] {
                for seed in 0..4 {
                    let mut t = tuner(spec, role, peer);
                    let mut rng = Rng::new(seed);
                    let (mut at_us, mut bytes) = (0, 0);
                    for _ in 0..3_000 {
                        let d = t.on_event(&event(&mut rng, &mut at_us, &mut bytes));
                        for action in &d.actions {
                            let ok = match action {
                                Action::SetRcvBuf(b) => *b <= l.rmem_max,
                                Action::SetSndBuf(b) => *b <= l.wmem_max,
                                Action::SetWindowClamp(b) => b.get() <= u64::from(u32::MAX),
                                Action::TellPeer(b) | Action::TellPeerPace(b) => b.get() > 0,
                                Action::SetMaxPacingRate(b) => b.get() > 0,
                            };
                            assert!(ok, "{spec} {role:?} {peer:?} seed {seed}: {action:?}");
                        }
                        if !d.actions.is_empty() {
                            assert!(d.record.is_some(), "{spec}: an action without a record");
                        }
                        let _ = (t.next_wakeup(), t.state());
                    }
                }
            }
        }
    }
}
