//! Tests of the cross-traffic schedule over a virtual clock: the pacer is
//! driven by a simulated source that wakes when told (or late, by a seeded
//! amount), and every datagram it sends is timed and counted.

#![allow(clippy::unwrap_used)]

use super::*;
use proptest::prelude::*;

const MS: Duration = Duration::from_millis(1);

fn plan(rate: &str, on_off: Option<OnOff>) -> UdpPlan {
    UdpPlan::new(
        rate.parse().unwrap(),
        DEFAULT_UDP_PAYLOAD,
        IpVersion::V4,
        on_off,
    )
    .unwrap()
}

fn on_off(on_ms: u64, off_ms: u64) -> OnOff {
    OnOff::new(Duration::from_millis(on_ms), Duration::from_millis(off_ms)).unwrap()
}

/// Every send a simulated source made: (elapsed time, datagrams).
struct Run {
    sends: Vec<(Duration, u64)>,
    wakeups: u64,
    /// Datagrams the pacer dropped from the schedule at the end.
    late: u64,
}

impl Run {
    fn packets(&self) -> u64 {
        self.sends.iter().map(|s| s.1).sum()
    }
}

/// Drives a pacer until `until`, waking `late(i)` after each time it asks
/// for, and checks after every send that the schedule was not exceeded.
fn simulate(plan: UdpPlan, until: Duration, mut late: impl FnMut(u64) -> Duration) -> Run {
    let mut pacer = Pacer::new(plan);
    let mut run = Run {
        sends: Vec::new(),
        wakeups: 0,
        late: 0,
    };
    let mut now = Duration::ZERO;
    let mut sent = 0;
    while now <= until {
        let pace = pacer.poll(now);
        // Every scheduled datagram is sent, late or still due (each count is
        // rounded down, so the sum may fall short by up to two).
        let due = plan.packets_due(now);
        let accounted = sent + pacer.late_packets() + pacer.due_packets();
        assert!(
            accounted <= due && accounted + 2 >= due,
            "{accounted} accounted of {due} at {now:?}"
        );
        match pace {
            Pace::Send(n) => {
                assert!(n >= 1 && n <= plan.burst_packets(), "send {n} at {now:?}");
                pacer.sent(n);
                sent += n;
                run.sends.push((now, n));
                assert!(sent <= plan.packets_due(now), "{sent} ahead at {now:?}");
                // Having sent all that was ready, the pacer must ask to wait.
                assert!(matches!(pacer.poll(now), Pace::WaitUntil(t) if t > now));
            }
            Pace::WaitUntil(t) => {
                assert!(t >= now, "asked to wait until {t:?} at {now:?}");
                run.wakeups += 1;
                now = t + late(run.wakeups);
            }
        }
    }
    run.late = pacer.late_packets();
    run
}

fn on_time() -> impl FnMut(u64) -> Duration {
    |_| Duration::ZERO
}

#[test]
fn batches_are_a_quantum_of_traffic() {
    // 1500-byte packets: 12,000 bits; a 500 us quantum at 100 Mbit/s is 4.17.
    assert_eq!(plan("100M", None).batch_packets(), 4);
    assert_eq!(plan("200M", None).batch_packets(), 8);
    assert_eq!(plan("1G", None).batch_packets(), 41);
    assert_eq!(plan("10G", None).batch_packets(), MAX_BATCH_PACKETS);
    assert_eq!(plan("1k", None).batch_packets(), 1);
    assert_eq!(plan("200M", None).burst_packets(), 8 * MAX_CATCH_UP_QUANTA);
    assert_eq!(plan("100M", None).packet_bytes(), 1500);
    let v6 = UdpPlan::new(BitRate(100_000_000), Bytes(1452), IpVersion::V6, None).unwrap();
    assert_eq!(v6.packet_bytes(), 1500);
}

#[test]
fn constant_rate_keeps_to_the_schedule() {
    for (rate, bps) in [("50M", 50e6), ("100M", 100e6), ("200M", 200e6)] {
        let plan = plan(rate, None);
        let run = simulate(plan, Duration::from_secs(2), on_time());
        let due = plan.packets_due(Duration::from_secs(2));
        // 2 s at the rate, plus the first batch sent at 0.
        let exact = (bps * 2.0 / 12_000.0) as u64 + plan.batch_packets();
        assert_eq!(due, exact, "{rate}");
        assert!(run.packets() <= due && run.packets() + plan.batch_packets() > due);
        // About one wake-up per quantum, never one per packet.
        let per_s = run.wakeups as f64 / 2.0;
        assert!(
            (1_500.0..2_600.0).contains(&per_s),
            "{rate}: {per_s} wake-ups/s"
        );
    }
}

#[test]
fn slow_rates_send_one_packet_at_a_time() {
    // 120 kbit/s with 1500-byte packets: one every 100 ms.
    let plan = plan("120k", None);
    let run = simulate(plan, Duration::from_secs(1), on_time());
    let times: Vec<_> = run.sends.iter().map(|s| s.0).collect();
    let want: Vec<_> = (0..=10).map(|i| i * 100 * MS).collect();
    assert_eq!(times, want);
}

#[test]
fn on_off_phases_and_active_time() {
    let p = on_off(100, 300);
    assert_eq!(
        p.phase(Duration::ZERO),
        Phase {
            on: true,
            ends_at: 100 * MS
        }
    );
    assert_eq!(
        p.phase(100 * MS),
        Phase {
            on: false,
            ends_at: 400 * MS
        }
    );
    assert!(!p.phase(399 * MS).on);
    assert_eq!(p.phase(400 * MS).ends_at, 500 * MS);
    assert_eq!(p.active_time(250 * MS), 100 * MS);
    assert_eq!(p.active_time(450 * MS), 150 * MS);
    assert_eq!(p.elapsed_at_active(100 * MS), 100 * MS);
    assert_eq!(p.elapsed_at_active(150 * MS), 450 * MS);
    assert_eq!(p.elapsed_at_active(200 * MS), 500 * MS);
    assert_eq!(p.elapsed_at_active(Duration::ZERO), Duration::ZERO);
}

#[test]
fn on_off_halves_the_traffic_and_is_silent_when_off() {
    let constant = simulate(plan("100M", None), Duration::from_secs(2), on_time());
    let pattern = on_off(100, 100);
    let run = simulate(
        plan("100M", Some(pattern)),
        Duration::from_secs(2),
        on_time(),
    );
    for &(t, n) in &run.sends {
        assert!(pattern.phase(t).on, "{n} sent at {t:?}, an off phase");
    }
    let ratio = run.packets() as f64 / constant.packets() as f64;
    assert!(
        (0.49..0.51).contains(&ratio),
        "on/off sent {ratio} of constant"
    );
}

#[test]
fn short_on_phases_send_their_partial_batch_before_going_quiet() {
    // 200 Mbit/s for 1.3 ms is 21.67 packets per period; batches of 8.
    let pattern = OnOff::new(Duration::from_micros(1_300), 10 * MS).unwrap();
    let plan = plan("200M", Some(pattern));
    let run = simulate(plan, 113 * MS, on_time());
    for period in 0..10u32 {
        let start = period * 11_300 * Duration::from_micros(1);
        let in_period: u64 = run
            .sends
            .iter()
            .filter(|s| s.0 >= start && s.0 < start + Duration::from_micros(1_300))
            .map(|s| s.1)
            .sum();
        // 21.67 per period; the first also has the batch due at 0.
        let want = if period == 0 { 29..=30 } else { 21..=22 };
        assert!(want.contains(&in_period), "period {period}: {in_period}");
    }
    let due = plan.packets_due(113 * MS);
    assert!(run.packets() <= due && run.packets() + 8 > due);
}

#[test]
fn a_stalled_source_catches_up_one_burst_only() {
    let plan = plan("200M", None);
    // Wake-up 20 is 100 ms late: 1,667 packets' worth of time.
    let run = simulate(plan, Duration::from_secs(1), |i| {
        if i == 20 { 100 * MS } else { Duration::ZERO }
    });
    let biggest = run.sends.iter().map(|s| s.1).max().unwrap();
    assert_eq!(biggest, plan.burst_packets());
    // 100 ms is 1,666.7 packets; one burst of them was caught up.
    let lost = plan.packets_due(Duration::from_secs(1)) - run.packets();
    let want = 1_666 - plan.burst_packets()..=1_667 - plan.burst_packets() + plan.batch_packets();
    assert!(want.contains(&lost), "lost {lost}, want {want:?}");
    // The pacer counted them as late.
    let late = run.late;
    assert!(want.contains(&late), "late {late}, want {want:?}");
}

#[test]
fn late_wakeups_never_exceed_the_schedule() {
    // A seeded linear congruential generator: 0-300 us late, as a loaded host.
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let run = simulate(plan("100M", None), Duration::from_secs(2), move |_| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        Duration::from_micros((state >> 33) % 300)
    });
    // Lateness below the catch-up depth loses nothing but the last batch.
    let due = plan("100M", None).packets_due(Duration::from_secs(2));
    assert!(run.packets() + 2 * 4 > due, "{} of {due}", run.packets());
}

#[test]
fn bad_settings_quote_the_value() {
    let zero = UdpPlan::new(BitRate(0), DEFAULT_UDP_PAYLOAD, IpVersion::V4, None);
    assert_eq!(zero, Err(PlanError::ZeroRate { rate: BitRate(0) }));
    assert!(zero.unwrap_err().to_string().contains("UDP rate 0bit/s"));
    for payload in [0, MAX_UDP_PAYLOAD_BYTES + 1] {
        let err = UdpPlan::new(BitRate(1), Bytes(payload), IpVersion::V4, None).unwrap_err();
        assert!(
            err.to_string().contains(&format!("{payload} bytes")),
            "{err}"
        );
    }
    let err = OnOff::new(Duration::ZERO, MS).unwrap_err().to_string();
    assert!(err.contains("on=0ns off=1ms"), "{err}");
    assert!(OnOff::new(MS, Duration::ZERO).is_err());
    let err = sndbuf_request_for_window(Bytes(0)).unwrap_err().to_string();
    assert!(err.contains("TCP window 0B"), "{err}");
    assert_eq!(check_flows(0), Err(PlanError::Flows { flows: 0 }));
    assert!(check_flows(MAX_TCP_FLOWS + 1).is_err());
    assert_eq!(check_flows(4), Ok(4));
}

#[test]
fn window_becomes_half_as_the_kernel_doubles_it() {
    assert_eq!(sndbuf_request_for_window(Bytes(256 * 1024)), Ok(128 * 1024));
    assert_eq!(sndbuf_request_for_window(Bytes(3)), Ok(2));
    assert_eq!(sndbuf_request_for_window(Bytes(1)), Ok(1));
}

proptest! {
    #[test]
    fn elapsed_at_active_inverts_active_time(
        on_us in 1u64..10_000,
        off_us in 1u64..10_000,
        active_us in 0u64..1_000_000,
    ) {
        let p = OnOff::new(Duration::from_micros(on_us), Duration::from_micros(off_us)).unwrap();
        let a = Duration::from_micros(active_us);
        let t = p.elapsed_at_active(a);
        prop_assert_eq!(p.active_time(t), a);
        if !t.is_zero() {
            prop_assert!(p.active_time(t - Duration::from_nanos(1)) < a);
        }
    }

    #[test]
    fn any_plan_stays_within_its_schedule(
        rate_kbps in 1u64..2_000_000,
        payload in 1u64..=9_000,
        on_ms in 0u64..50,
        late_us in 0u64..2_000,
    ) {
        let pattern = (on_ms > 0).then(|| on_off(on_ms, 7));
        let plan = UdpPlan::new(BitRate(rate_kbps * 1000), Bytes(payload), IpVersion::V4, pattern)
            .unwrap();
        // `simulate` asserts the schedule after every send.
        let run = simulate(plan, 200 * MS, |i| Duration::from_micros(late_us * (i % 3)));
        prop_assert!(run.packets() <= plan.packets_due(200 * MS) + plan.batch_packets());
    }
}
