//! Tests of the probe sizes, the probe ledger, the train meter and the
//! responder's gate, on times given by the test; the ledger also against a
//! simulated responder with seeded losses on both paths.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use proptest::prelude::*;

use super::wire::HEADER_BYTES;
use super::*;
use crate::cross::{DEFAULT_UDP_PAYLOAD, IpVersion};
use rightsize_tune::{TrainProbe, UdpProbeReport};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn us(n: u64) -> Duration {
    Duration::from_micros(n)
}

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

// ---- the probe ledger ----

/// A responder as the system layer runs it: echoes every probe it gets,
/// saying which it has seen.
#[derive(Debug, Default)]
struct FakeResponder {
    seen: SeenWindow,
}

impl FakeResponder {
    fn echo(&mut self, probe: Probe) -> Echo {
        self.seen.record(probe.seq);
        Echo {
            seq: probe.seq,
            stamp: probe.stamp,
            seen: self.seen.mask_before(probe.seq),
        }
    }
}

/// Sends `n` probes 10 ms apart from `start`, each echoed after `rtt`
/// unless `drop_out` (lost on the way out) or `drop_back` (echo lost) says
/// so for its sequence number.
fn stream(
    ledger: &mut ProbeLedger,
    responder: &mut FakeResponder,
    start: Duration,
    n: u64,
    rtt: Duration,
    drop_out: impl Fn(u64) -> bool,
    drop_back: impl Fn(u64) -> bool,
) {
    let mut pending: Vec<(Duration, Echo)> = Vec::new();
    for i in 0..n {
        let at = start + PROBE_INTERVAL * i as u32;
        pending.retain(|&(arrives, echo)| {
            if arrives <= at {
                ledger.on_echo(&echo, arrives);
                false
            } else {
                true
            }
        });
        let probe = ledger.send(at);
        if drop_out(probe.seq) {
            continue;
        }
        let echo = responder.echo(probe);
        if !drop_back(probe.seq) {
            pending.push((at + rtt, echo));
        }
    }
    for (arrives, echo) in pending {
        ledger.on_echo(&echo, arrives);
    }
}

#[test]
fn a_clean_stream_reports_every_probe_and_the_mean_rtt() {
    let mut ledger = ProbeLedger::new(0x5EED, DEFAULT_LOSS_TIMEOUT);
    let mut responder = FakeResponder::default();
    stream(
        &mut ledger,
        &mut responder,
        ms(0),
        10,
        ms(25),
        |_| false,
        |_| false,
    );
    let report = ledger.report(ms(100) + ms(25));
    assert_eq!(
        report,
        UdpProbeReport {
            at: ms(125),
            sent: 10,
            lost: 0,
            rtt: Some(ms(25)),
        }
    );
    // Nothing new: an empty report.
    assert_eq!(
        ledger.report(ms(200)),
        UdpProbeReport {
            at: ms(200),
            sent: 0,
            lost: 0,
            rtt: None,
        }
    );
    assert_eq!(ledger.totals().echoed, 10);
    assert_eq!(ledger.outstanding(), 0);
}

#[test]
fn the_rtt_is_the_mean_of_the_period() {
    let mut ledger = ProbeLedger::new(1, DEFAULT_LOSS_TIMEOUT);
    let a = ledger.send(ms(0));
    let b = ledger.send(ms(10));
    ledger.on_echo(
        &Echo {
            seq: a.seq,
            stamp: a.stamp,
            seen: 0,
        },
        ms(20),
    );
    ledger.on_echo(
        &Echo {
            seq: b.seq,
            stamp: b.stamp,
            seen: 1,
        },
        ms(40),
    );
    assert_eq!(ledger.report(ms(40)).rtt, Some(ms(25)));
}

#[test]
fn a_lost_echo_counts_on_the_forward_path_once_a_later_one_returns() {
    let mut ledger = ProbeLedger::new(0, DEFAULT_LOSS_TIMEOUT);
    let mut responder = FakeResponder::default();
    stream(
        &mut ledger,
        &mut responder,
        ms(0),
        4,
        ms(5),
        |_| false,
        |s| s == 0,
    );
    // Probe 3's echo (at 35 ms) is the third after probe 0: given up.
    let report = ledger.report(ms(36));
    assert_eq!((report.sent, report.lost), (4, 1));
    assert_eq!(report.rtt, Some(ms(5)));
    let totals = ledger.totals();
    assert_eq!((totals.lost_forward, totals.lost_reverse), (1, 0));
}

#[test]
fn a_probe_lost_on_the_way_out_is_not_a_forward_loss() {
    let mut ledger = ProbeLedger::new(0, DEFAULT_LOSS_TIMEOUT);
    let mut responder = FakeResponder::default();
    stream(
        &mut ledger,
        &mut responder,
        ms(0),
        5,
        ms(5),
        |s| s == 1,
        |_| false,
    );
    let report = ledger.report(ms(60));
    assert_eq!((report.sent, report.lost), (5, 0));
    let totals = ledger.totals();
    assert_eq!((totals.lost_forward, totals.lost_reverse), (0, 1));
}

#[test]
fn reordering_within_three_probes_is_not_a_loss() {
    let mut ledger = ProbeLedger::new(0, DEFAULT_LOSS_TIMEOUT);
    let mut responder = FakeResponder::default();
    let probes: Vec<Probe> = (0..4).map(|i| ledger.send(ms(10 * i))).collect();
    let echoes: Vec<Echo> = probes.iter().map(|&p| responder.echo(p)).collect();
    // Probe 0's echo comes after those of 1 and 2.
    for (i, at) in [(1, 41), (2, 42), (0, 43), (3, 44)] {
        let verdict = ledger.on_echo(&echoes[i], ms(at));
        assert!(matches!(verdict, EchoVerdict::Accepted { .. }), "{i}");
    }
    let report = ledger.report(ms(50));
    assert_eq!((report.sent, report.lost), (4, 0));
}

#[test]
fn late_duplicate_unknown_and_forged_echoes_are_ignored() {
    let mut ledger = ProbeLedger::new(0xABCD, ms(200));
    let mut responder = FakeResponder::default();
    let p0 = ledger.send(ms(0));
    let e0 = responder.echo(p0);
    // Probe 0's echo never comes back in time: timeout.
    assert_eq!(
        ledger.report(ms(199)).sent,
        0,
        "not given up before the timeout"
    );
    let report = ledger.report(ms(200));
    assert_eq!((report.sent, report.lost), (1, 1));
    assert_eq!(ledger.on_echo(&e0, ms(250)), EchoVerdict::Late);

    let p1 = ledger.send(ms(300));
    let e1 = responder.echo(p1);
    assert_eq!(
        ledger.on_echo(&e1, ms(310)),
        EchoVerdict::Accepted { rtt: ms(10) }
    );
    let p2 = ledger.send(ms(320));
    assert_eq!(ledger.on_echo(&e1, ms(311)), EchoVerdict::Duplicate);
    let forged = Echo {
        seq: p2.seq,
        stamp: p2.stamp ^ 1,
        seen: 0,
    };
    assert_eq!(ledger.on_echo(&forged, ms(321)), EchoVerdict::Unknown);
    let future = Echo {
        seq: 99,
        stamp: 0xABCD ^ 99,
        seen: 0,
    };
    assert_eq!(ledger.on_echo(&future, ms(322)), EchoVerdict::Unknown);
    let report = ledger.report(ms(330));
    assert_eq!((report.sent, report.lost, report.rtt), (1, 0, Some(ms(10))));
    let totals = ledger.totals();
    assert_eq!(
        (totals.late, totals.duplicate, totals.unknown, totals.sent),
        (1, 1, 2, 3)
    );
    assert_eq!(ledger.outstanding(), 1, "probe 2 still waits");
}

#[test]
fn a_silent_path_counts_as_forward_loss_after_the_timeout() {
    let mut ledger = ProbeLedger::new(0, ms(300));
    for i in 0..10 {
        ledger.send(ms(10 * i));
    }
    assert_eq!(ledger.report(ms(299)).sent, 0);
    let report = ledger.report(ms(310));
    assert_eq!((report.sent, report.lost, report.rtt), (2, 2, None));
    let report = ledger.report(ms(400));
    assert_eq!((report.sent, report.lost), (8, 8));
}

proptest! {
    #![proptest_config(config(512))]

    /// Seeded losses both ways: every probe is reported once, `lost` never
    /// exceeds `sent`, and the forward losses are exactly the echoes lost
    /// (a clean tail of probes gives every loss a later echo to tell it).
    #[test]
    fn losses_are_told_apart_and_reported_once(
        out in proptest::collection::vec(any::<bool>(), 200),
        back in proptest::collection::vec(any::<bool>(), 200),
        rate_out in 0u8..40,
        rate_back in 0u8..40,
        rtt_ms in 1u64..300,
        report_ms in 20u64..500,
    ) {
        let n = 200u64;
        let tail = 5u64;
        // Sparse drops: a bool and a rate pick about rate% of the probes.
        let drop_out = |s: u64| s < n && out[s as usize] && s % 100 < u64::from(rate_out);
        let drop_back = |s: u64| s < n && back[s as usize] && (s * 7) % 100 < u64::from(rate_back);
        let mut ledger = ProbeLedger::new(42, DEFAULT_LOSS_TIMEOUT);
        let mut responder = FakeResponder::default();
        let rtt = ms(rtt_ms);
        let mut reports = Vec::new();
        let mut next_report = ms(report_ms);
        // Interleave reports with the stream in chunks of one report period.
        let mut sent = 0u64;
        while sent < n + tail {
            let chunk = (report_ms / 10).max(1).min(n + tail - sent);
            stream(&mut ledger, &mut responder, ms(10 * sent), chunk, rtt, drop_out, drop_back);
            sent += chunk;
            reports.push(ledger.report(next_report));
            next_report += ms(report_ms);
        }
        reports.push(ledger.report(ms(10 * sent) + DEFAULT_LOSS_TIMEOUT));
        for r in &reports {
            prop_assert!(r.lost <= r.sent, "{r:?}");
        }
        let total_sent: u64 = reports.iter().map(|r| u64::from(r.sent)).sum();
        let total_lost: u64 = reports.iter().map(|r| u64::from(r.lost)).sum();
        prop_assert_eq!(total_sent, n + tail);
        let forward = (0..n).filter(|&s| !drop_out(s) && drop_back(s)).count() as u64;
        let reverse = (0..n).filter(|&s| drop_out(s)).count() as u64;
        prop_assert_eq!(total_lost, forward);
        prop_assert_eq!(ledger.totals().lost_reverse, reverse);
        prop_assert_eq!(ledger.outstanding(), 0);
    }
}

// ---- the train meter ----

fn request(packets: u16) -> TrainRequest {
    TrainRequest {
        train: 7,
        packets,
        packet_bytes: 1472,
        stamp: 0xFEED,
    }
}

fn packet(index: u16, packets: u16) -> TrainPacket {
    TrainPacket {
        train: 7,
        index,
        packets,
        stamp: 0xFEED,
    }
}

#[test]
fn a_whole_train_gives_ip_bytes_after_the_first_over_the_dispersion() {
    let mut meter = TrainMeter::new(&request(11), IpVersion::V4);
    for i in 0..11u16 {
        // 12 us per 1,500-byte packet: 1 Gbit/s.
        let at = ms(5) + us(12 * u64::from(i));
        assert_eq!(
            meter.on_packet(&packet(i, 11), 1472, at),
            PacketVerdict::Counted
        );
    }
    assert!(meter.is_complete());
    let train = meter.finish().unwrap();
    assert_eq!(
        train,
        TrainProbe {
            at: ms(5) + us(120),
            bytes: 15_000,
            dispersion: us(120),
        }
    );
    let rate_bps = train.bytes as f64 * 8.0 / train.dispersion.as_secs_f64();
    assert!((rate_bps - 1e9).abs() < 1.0, "{rate_bps}");
}

#[test]
fn ipv6_counts_its_longer_headers() {
    let mut meter = TrainMeter::new(&request(2), IpVersion::V6);
    meter.on_packet(&packet(0, 2), 1452, us(0));
    meter.on_packet(&packet(1, 2), 1452, us(12));
    assert_eq!(meter.finish().unwrap().bytes, 1500);
}

#[test]
fn reordering_is_measured_by_arrival_time() {
    let arrivals = [(3u16, 10u64), (0, 20), (1, 30), (2, 45)];
    let mut meter = TrainMeter::new(&request(4), IpVersion::V4);
    for (index, at) in arrivals {
        meter.on_packet(&packet(index, 4), 1472, us(at));
    }
    let train = meter.finish().unwrap();
    assert_eq!(train.dispersion, us(35));
    assert_eq!(train.bytes, 3 * 1500);
    assert_eq!(train.at, us(45));
    // The order of the calls does not matter either.
    let mut again = TrainMeter::new(&request(4), IpVersion::V4);
    for (index, at) in arrivals.iter().rev() {
        again.on_packet(&packet(*index, 4), 1472, us(*at));
    }
    assert_eq!(again.finish(), Ok(train));
}

#[test]
fn half_a_train_is_measured_and_less_is_discarded() {
    let mut meter = TrainMeter::new(&request(11), IpVersion::V4);
    for i in [0u16, 2, 4, 6, 8] {
        meter.on_packet(&packet(i, 11), 1472, us(10 * u64::from(i)));
    }
    assert_eq!(
        meter.finish(),
        Err(TrainDiscard::TooFewPackets {
            train: 7,
            arrived: 5,
            packets: 11
        })
    );
    meter.on_packet(&packet(10, 11), 1472, us(100));
    assert!(!meter.is_complete());
    let train = meter.finish().unwrap();
    assert_eq!((train.bytes, train.dispersion), (5 * 1500, us(100)));
    let one = TrainMeter::new(&request(2), IpVersion::V4);
    assert!(matches!(
        one.finish(),
        Err(TrainDiscard::TooFewPackets { arrived: 0, .. })
    ));
    let err = TrainDiscard::TooFewPackets {
        train: 7,
        arrived: 1,
        packets: 11,
    };
    assert!(err.to_string().contains("1 of 11"), "{err}");
}

#[test]
fn strangers_and_copies_are_not_counted() {
    let mut meter = TrainMeter::new(&request(3), IpVersion::V4);
    assert_eq!(
        meter.on_packet(&packet(0, 3), 1472, us(0)),
        PacketVerdict::Counted
    );
    assert_eq!(
        meter.on_packet(&packet(0, 3), 1472, us(1)),
        PacketVerdict::Duplicate
    );
    let mut other = packet(1, 3);
    other.train = 8;
    assert_eq!(
        meter.on_packet(&other, 1472, us(2)),
        PacketVerdict::NotThisTrain
    );
    let mut forged = packet(1, 3);
    forged.stamp = 0;
    assert_eq!(
        meter.on_packet(&forged, 1472, us(2)),
        PacketVerdict::NotThisTrain
    );
    assert_eq!(
        meter.on_packet(&packet(1, 4), 1472, us(2)),
        PacketVerdict::NotThisTrain
    );
    assert_eq!(meter.arrived(), 1);
}

#[test]
fn a_train_with_no_dispersion_is_discarded() {
    let mut meter = TrainMeter::new(&request(3), IpVersion::V4);
    for i in 0..3 {
        meter.on_packet(&packet(i, 3), 1472, us(50));
    }
    assert_eq!(
        meter.finish(),
        Err(TrainDiscard::NoDispersion {
            train: 7,
            arrived: 3
        })
    );
}

proptest! {
    #![proptest_config(config(1024))]

    /// Whatever arrives in whatever order: no panic, and a sample has
    /// positive dispersion and bytes that are the arrived packets but one.
    #[test]
    fn any_arrivals_give_a_sound_sample_or_a_reason(
        packets in 2u16..=MAX_TRAIN_PACKETS,
        arrivals in proptest::collection::vec((any::<u16>(), 0u64..10_000, 40usize..9000), 0..80),
    ) {
        let mut meter = TrainMeter::new(&request(packets), IpVersion::V4);
        for &(index, at, size) in &arrivals {
            meter.on_packet(&packet(index % packets, packets), size, us(at));
        }
        match meter.finish() {
            Ok(t) => {
                prop_assert!(!t.dispersion.is_zero());
                prop_assert!(u32::from(meter.arrived()) * 2 >= u32::from(packets));
                prop_assert!(t.bytes >= u64::from(meter.arrived() - 1) * (40 + 28));
            }
            Err(TrainDiscard::TooFewPackets { arrived, .. }) => {
                prop_assert!(arrived < 2 || u32::from(arrived) * 2 < u32::from(packets));
            }
            Err(TrainDiscard::NoDispersion { .. }) => {}
        }
    }
}

// ---- the responder's side ----

#[test]
fn the_gate_serves_padded_spaced_requests_up_to_its_budget() {
    let mut gate = TrainGate::new();
    let r = request(11);
    assert_eq!(
        gate.admit(&r, 100, ms(0)),
        Err(TrainRefusal::Undersized {
            datagram_bytes: 100,
            packet_bytes: 1472
        })
    );
    assert_eq!(gate.admit(&r, 1472, ms(0)), Ok(()));
    assert_eq!(
        gate.admit(&r, 1472, ms(4)),
        Err(TrainRefusal::TooSoon { since: ms(4) })
    );
    let mut at = ms(0);
    while gate.served() < MAX_TRAINS_SERVED {
        at += TRAIN_SPACING / 2;
        assert_eq!(gate.admit(&r, 1472, at), Ok(()));
    }
    assert_eq!(
        gate.admit(&r, 1472, at + ms(100)),
        Err(TrainRefusal::BudgetSpent)
    );
}

#[test]
fn the_seen_window_remembers_128_probes_and_masks_64() {
    let mut w = SeenWindow::new();
    assert!(!w.contains(0));
    assert_eq!(w.mask_before(5), 0);
    for seq in [0u64, 1, 3] {
        w.record(seq);
    }
    assert_eq!(w.mask_before(4), 0b1101, "3, 1 and 0 seen; 2 not");
    assert_eq!(w.mask_before(2), 0b11);
    assert_eq!(w.mask_before(0), 0);
    w.record(2); // late
    assert_eq!(w.mask_before(4), 0b1111);
    w.record(130);
    assert!(w.contains(3) && !w.contains(2), "3 is 127 back, 2 is 128");
    w.record(1_000);
    assert!(!w.contains(130));
    assert!(w.contains(1_000));
    assert_eq!(w.mask_before(1_065), 0, "1,000 is 65 back");
    assert_eq!(w.mask_before(1_064), 1 << 63);
    assert_eq!(w.mask_before(u64::MAX), 0);
}

#[test]
fn probe_and_train_sizes_follow_the_seed_and_the_mtu() {
    // 100-byte IP packets (the SOBAS paper, IV-B).
    assert_eq!(probe_payload_bytes(IpVersion::V4), 72);
    assert_eq!(probe_payload_bytes(IpVersion::V6), 52);
    assert!(usize::from(probe_payload_bytes(IpVersion::V6)) >= HEADER_BYTES);
    // An MTU-sized train packet is the cross traffic's full-MTU payload.
    assert_eq!(
        u64::from(train_payload_bytes(DEFAULT_MTU_BYTES, IpVersion::V4)),
        DEFAULT_UDP_PAYLOAD.get()
    );
    assert_eq!(train_payload_bytes(1500, IpVersion::V6), 1452);
    assert_eq!(
        train_payload_bytes(9000, IpVersion::V4),
        MAX_TRAIN_PACKET_BYTES
    );
    assert_eq!(train_payload_bytes(20, IpVersion::V4), HEADER_BYTES as u16);
    assert_eq!(
        train_payload_bytes(100_000, IpVersion::V4),
        MAX_TRAIN_PACKET_BYTES
    );
    // A default train: 47 x 1,500 IP bytes after the first packet.
    let ip_bytes = u64::from(train_payload_bytes(DEFAULT_MTU_BYTES, IpVersion::V4))
        + IpVersion::V4.udp_overhead_bytes();
    assert_eq!((u64::from(DEFAULT_TRAIN_PACKETS) - 1) * ip_bytes, 70_500);
}
