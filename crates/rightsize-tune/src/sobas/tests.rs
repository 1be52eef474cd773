//! `sobas` (the SOBAS paper, Fig. 8), one transition at a time over synthetic
//! traces, then over the modelled path.

#![allow(clippy::unwrap_used)]

use crate::tests::harness::{Scenario, rcvbuf_of, run};
use crate::tests::{bare_sample, control_rtt, limits, ms, rcvbufs, rx_sample, tuner};
use crate::units::Bytes;
use crate::{Decision, Event, Peer, Role, TrainProbe, Tuner, UdpProbeReport};

/// Five trains whose dispersion says `rate` bytes per second.
fn trains(t: &mut dyn Tuner, rate: f64) -> Vec<Decision> {
    (0..5)
        .map(|_| {
            t.on_event(&Event::Train(TrainProbe {
                at: ms(0),
                bytes: 15_000,
                dispersion: std::time::Duration::from_secs_f64(15_000.0 / rate),
            }))
        })
        .collect()
}

/// SOBAS after `C' = rate` and `T = 100 ms`, with its first period begun.
fn started(rate: f64) -> (Box<dyn Tuner>, Decision) {
    let mut t = tuner("sobas", Role::Receiver, Peer::Other);
    t.on_event(&control_rtt(0, 100));
    let mut decisions = trains(&mut *t, rate);
    let first = decisions.pop().unwrap();
    assert!(
        decisions.iter().all(|d| d.actions.is_empty()),
        "before 5 trains"
    );
    t.on_event(&bare_sample(0, 0));
    (t, first)
}

/// Feeds one period per rate (MB/s), 2 x T = 200 ms apart, from `from_ms`
/// with `bytes` so far; returns the decisions and the bytes.
fn periods(
    t: &mut dyn Tuner,
    from_ms: u64,
    mut bytes: u64,
    rates_mb: &[f64],
) -> (Vec<Decision>, u64) {
    let mut out = Vec::new();
    for (i, r) in rates_mb.iter().enumerate() {
        bytes += (r * 1e6 * 0.2) as u64;
        out.push(t.on_event(&bare_sample(from_ms + 200 * (i as u64 + 1), bytes)));
    }
    (out, bytes)
}

#[test]
fn before_the_handshake_both_buffers_are_at_the_maximum() {
    let setup = tuner("sobas", Role::Receiver, Peer::Other).setup();
    assert_eq!(setup.pre_handshake.rcvbuf, Some(limits().rmem_max));
    assert_eq!(setup.pre_handshake.sndbuf, Some(limits().wmem_max));
    assert!(setup.after_connect.is_empty());
}

#[test]
fn the_first_size_is_1_2_capacity_times_rtt() {
    // 25 MB/s (200 Mbit/s) x 100 ms x 1.2 = 3 MB of window; before any
    // window is measured, the request is the window (0.5 per byte, doubled).
    let (t, first) = started(25e6);
    assert_eq!(rcvbufs(&first), vec![3_000_000]);
    let record = first.record.unwrap();
    assert_eq!(record.requested, Some(Bytes(3_000_000)));
    assert_eq!(record.state, "slow-start");
    assert!(record.reason.contains("S = 1.2 x C' x T"));
    // Sampled every 2 x T.
    assert_eq!(t.next_wakeup(), Some(ms(200)));
}

#[test]
fn a_larger_window_per_buffer_byte_asks_for_less_buffer() {
    let (mut t, _) = started(25e6);
    // The kernel offers 0.89 x the buffer: a 3 MB window needs 1.69 MB.
    let d = t.on_event(&rx_sample(100, 1_000, 100, 890_000, 1_000_000));
    assert_eq!(rcvbufs(&d), vec![1_685_393]);
    assert_eq!(d.record.unwrap().requested, Some(Bytes(3_000_000)));
}

#[test]
fn flat_rate_in_slow_start_needs_two_samples_and_ends_at_rate_times_rtt() {
    let (mut t, _) = started(25e6);
    let (d, bytes) = periods(&mut *t, 0, 0, &[1.0, 4.0, 16.0, 20.0]);
    assert!(d.iter().all(|d| d.actions.is_empty()));
    assert_eq!(t.state(), "slow-start");
    let (d, _) = periods(&mut *t, 800, bytes, &[20.0]);
    // 20 MB/s x 100 ms = 2 MB of window: final.
    assert_eq!(rcvbufs(&d[0]), vec![2_000_000]);
    assert!(
        d[0].record
            .as_ref()
            .unwrap()
            .reason
            .starts_with("flat-rate")
    );
    assert_eq!(t.state(), "final");
    assert_eq!(t.next_wakeup(), None);
}

#[test]
fn buffer_limited_slow_start_grows_one_mss_per_rtt() {
    // C' = 10 MB/s: S = 1.2 MB, and the flow fills it at 12 MB/s.
    let (mut t, _) = started(10e6);
    let (d, bytes) = periods(&mut *t, 0, 0, &[2.0, 6.0, 12.0]);
    assert_eq!(rcvbufs(&d[2]), vec![1_200_000 + 1448]);
    assert_eq!(t.state(), "slow-start-buffer-limited");
    // The next increase is due one RTT later, before the next sample.
    assert_eq!(t.next_wakeup(), Some(ms(700)));
    let d = t.on_event(&bare_sample(700, bytes + 1_200_000));
    assert_eq!(rcvbufs(&d), vec![1_200_000 + 2 * 1448]);
    // Two near-equal samples: flat, final at R x T.
    let d = t.on_event(&bare_sample(800, bytes + 2_410_000));
    assert_eq!(t.state(), "final");
    assert_eq!(rcvbufs(&d), vec![1_202_500]);
}

#[test]
fn a_drop_in_slow_start_leads_to_avoidance_where_flat_needs_five_samples() {
    let (mut t, _) = started(25e6);
    let (_, bytes) = periods(&mut *t, 0, 0, &[4.0, 16.0, 8.0]);
    assert_eq!(t.state(), "congestion-avoidance");
    let (d, bytes) = periods(&mut *t, 600, bytes, &[10.0, 10.0, 10.0, 10.0]);
    assert!(d.iter().all(|d| d.actions.is_empty()), "four are not five");
    let (d, _) = periods(&mut *t, 1400, bytes, &[10.0]);
    assert_eq!(rcvbufs(&d[0]), vec![1_000_000]);
    assert_eq!(t.state(), "final");
}

#[test]
fn const_rate_drop_ends_at_the_flat_rate_times_the_least_rtt() {
    let (mut t, _) = started(25e6);
    let (_, bytes) = periods(&mut *t, 0, 0, &[4.0, 16.0, 8.0, 15.0, 15.0]);
    assert_eq!(t.state(), "congestion-avoidance");
    // The queue inflated the running average (100 -> 112.5 ms, so the
    // next sample is 225 ms on); the final size uses T_min.
    t.on_event(&control_rtt(1000, 200));
    assert_eq!(t.next_wakeup(), Some(ms(1225)));
    let d = t.on_event(&bare_sample(1225, bytes + 2_025_000));
    assert_eq!(rcvbufs(&d), vec![1_500_000]);
    let reason = &d.record.as_ref().unwrap().reason;
    assert!(reason.starts_with("const-rate-drop"), "{reason}");
    assert_eq!(t.state(), "final");
}

#[test]
fn probe_losses_the_transfer_did_not_cause_mean_a_congested_path() {
    let (mut t, _) = started(25e6);
    let (_, bytes) = periods(&mut *t, 0, 0, &[5.0, 20.0, 12.0, 14.0]);
    let lossy = |at_ms| {
        Event::UdpProbes(UdpProbeReport {
            at: ms(at_ms),
            sent: 20,
            lost: 1,
            rtt: Some(ms(100)),
        })
    };
    t.on_event(&lossy(900));
    let (d, bytes) = periods(&mut *t, 800, bytes, &[14.2]);
    assert!(
        d[0].actions.is_empty(),
        "the latest period is not judged yet"
    );
    let (d, _) = periods(&mut *t, 1000, bytes, &[14.1]);
    assert_eq!(rcvbufs(&d[0]), vec![limits().rmem_max.get()]);
    assert_eq!(t.state(), "congested-max");
    assert_eq!(t.next_wakeup(), None);
}

#[test]
fn probe_losses_while_the_transfer_climbs_are_its_own() {
    let (mut t, _) = started(25e6);
    for at in [100, 300, 500] {
        t.on_event(&Event::UdpProbes(UdpProbeReport {
            at: ms(at),
            sent: 20,
            lost: 3,
            rtt: Some(ms(100)),
        }));
    }
    periods(&mut *t, 0, 0, &[1.0, 4.0, 16.0, 16.2]);
    assert_eq!(t.state(), "final", "slow-start overflow is not congestion");
    let bad = t.on_event(&Event::UdpProbes(UdpProbeReport {
        at: ms(900),
        sent: 2,
        lost: 3,
        rtt: None,
    }));
    assert!(bad.record.unwrap().reason.contains("3 lost of 2 sent"));
}

#[test]
fn senders_only_set_the_maximum_before_the_handshake() {
    let mut t = tuner("sobas", Role::Sender, Peer::Other);
    assert_eq!(t.next_wakeup(), None);
    assert!(trains(&mut *t, 25e6).iter().all(|d| d.actions.is_empty()));
    assert!(t.on_event(&bare_sample(0, 0)).actions.is_empty());
}

#[test]
fn on_a_non_congested_path_sobas_ends_at_rate_times_rtt_without_loss() {
    let scenario = Scenario::benchmark("sobas", 1.0);
    let bdp = scenario.path.bdp();
    let o = run(&scenario);
    assert_eq!(o.receiver_state, "final");
    assert!(o.receiver_states().contains(&"slow-start"));
    let flat = o
        .log
        .iter()
        .find(|l| l.reason.starts_with("flat-rate"))
        .expect("flat-rate detected");
    let window = o.last_receiver_action(rcvbuf_of).unwrap().get() as f64 * 2.0 * 0.89;
    assert!(
        (0.95 * bdp..1.3 * bdp).contains(&window),
        "final window {window:.0} for a BDP of {bdp:.0} ({})",
        flat.reason
    );
    assert_eq!(o.retrans_bytes, 0.0);
    assert!(o.goodput >= 0.95 * scenario.path.payload_rate());
}
