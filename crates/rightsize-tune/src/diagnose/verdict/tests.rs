//! One test per verdict, from synthetic numbers of a 50 Mbit/s, 40 ms
//! path (BDP 250,000 bytes).

use super::*;
use crate::host::BufferTriple;

const RTT_US: u64 = 40_000;

fn host(rmem_max: u64, wmem_max: u64) -> HostSettings {
    HostSettings {
        rmem_max: Some(rmem_max),
        wmem_max: Some(wmem_max),
        tcp_congestion_control: Some("cubic".into()),
        ..HostSettings::linux_defaults()
    }
}

fn sender(busy_s: f64, rwnd: f64, sndbuf: f64, sent: u64, retrans: u64) -> TcpSummary {
    TcpSummary {
        busy_time_us: Some((busy_s * 1e6) as u64),
        rwnd_limited_us: Some((busy_s * rwnd * 1e6) as u64),
        sndbuf_limited_us: Some((busy_s * sndbuf * 1e6) as u64),
        min_rtt_us: Some(RTT_US),
        rtt_us: Some(RTT_US),
        bytes_sent: Some(sent),
        bytes_retrans: Some(retrans),
        total_retrans_segs: Some(retrans / 1448),
        snd_mss_bytes: Some(1448),
        snd_wscale: Some(7),
        ..TcpSummary::default()
    }
}

fn run(tune: &str, goodput_mbit: f64, s: TcpSummary, rtts: Vec<u64>, peak_mbit: f64) -> RunFacts {
    RunFacts {
        tune: tune.into(),
        goodput_bps: goodput_mbit * 1e6,
        seconds: 5.0,
        steady_goodput_bps: None,
        sender: Some(s),
        sender_rtt_us: rtts,
        peak_delivery_rate_bps: Some((peak_mbit * 1e6) as u64),
        fixed_buffers: tune != "kernel",
        sender_peak_sndbuf_bytes: Some(1 << 20),
    }
}

fn facts(
    kernel: RunFacts,
    auto: RunFacts,
    sender_host: HostSettings,
    receiver_host: HostSettings,
) -> DoctorFacts {
    DoctorFacts {
        sender: Some(End::Client),
        idle_rtt: Some(Duration::from_micros(RTT_US + 100)),
        path_rate: None,
        sender_host: Some(sender_host),
        receiver_host: Some(receiver_host),
        kernel: Some(kernel),
        auto: Some(auto),
    }
}

fn fine_auto() -> RunFacts {
    run(
        "auto",
        47.0,
        sender(5.0, 0.0, 0.0, 30_000_000, 0),
        vec![RTT_US; 20],
        49.0,
    )
}

#[test]
fn a_small_tcp_rmem_on_the_receiver_is_a_receive_window_limit_with_its_fix() {
    let mut receiver = host(4 << 20, 4 << 20);
    receiver.tcp_rmem = Some(BufferTriple {
        min: 4096,
        default: 65_536,
        max: 131_072,
    });
    let kernel = run(
        "kernel",
        12.0,
        sender(5.0, 0.8, 0.0, 7_500_000, 0),
        vec![RTT_US; 20],
        13.0,
    );
    let v = diagnose(&facts(
        kernel,
        fine_auto(),
        host(4 << 20, 4 << 20),
        receiver,
    ));
    assert_eq!(v.kind, VerdictKind::ReceiveWindow, "{v:#?}");
    assert_eq!(v.limited_end, Some(End::Server));
    assert!(
        v.limited_by
            .as_deref()
            .unwrap_or("")
            .contains("tcp_rmem max = 131,072"),
        "{v:#?}"
    );
    assert_eq!(v.numbers.rwnd_limited_share, Some(0.8));
    let fix = &v.fixes[0];
    assert_eq!(
        (fix.end, fix.setting.as_str()),
        (End::Server, "net.ipv4.tcp_rmem")
    );
    // 4 x the BDP of 49 Mbit/s (the best rate measured) at 40 ms.
    assert_eq!(fix.value, "4096 65536 980000");
    assert!(
        fix.command.starts_with("sysctl -w net.ipv4.tcp_rmem="),
        "{fix:?}"
    );
    assert_eq!(v.expected_bps, Some(49e6));
}

#[test]
fn a_fixed_so_rcvbuf_points_at_rmem_max() {
    let receiver = host(65_536, 4 << 20);
    let auto = run(
        "auto",
        6.0,
        sender(5.0, 0.9, 0.0, 3_750_000, 0),
        vec![RTT_US; 20],
        40.0,
    );
    let v = diagnose(
        &DoctorFacts {
            kernel: None,
            ..facts(auto.clone(), auto, host(4 << 20, 4 << 20), receiver)
        }
        .with_kernel(None),
    );
    assert_eq!(v.kind, VerdictKind::ReceiveWindow);
    assert!(
        v.limited_by.as_deref().unwrap_or("").contains("rmem_max"),
        "{v:#?}"
    );
}

#[test]
fn a_window_scale_too_low_for_the_bdp_is_named() {
    let mut s = sender(5.0, 0.9, 0.0, 3_000_000, 0);
    s.snd_wscale = Some(1); // at most 131,070 bytes of window
    let kernel = run("kernel", 5.0, s, vec![RTT_US; 20], 5.0);
    let v = diagnose(&facts(
        kernel,
        fine_auto(),
        host(4 << 20, 4 << 20),
        host(4 << 20, 4 << 20),
    ));
    assert_eq!(v.kind, VerdictKind::ReceiveWindow);
    assert!(
        v.limited_by
            .as_deref()
            .unwrap_or("")
            .contains("window scale"),
        "{v:#?}"
    );
}

#[test]
fn a_small_tcp_wmem_on_the_sender_is_a_send_buffer_limit_with_its_fix() {
    let mut client = host(4 << 20, 4 << 20);
    client.tcp_wmem = Some(BufferTriple {
        min: 4096,
        default: 16_384,
        max: 65_536,
    });
    let kernel = run(
        "kernel",
        8.0,
        sender(5.0, 0.0, 0.7, 5_000_000, 0),
        vec![RTT_US; 20],
        8.5,
    );
    let v = diagnose(&facts(kernel, fine_auto(), client, host(4 << 20, 4 << 20)));
    assert_eq!(v.kind, VerdictKind::SendBuffer, "{v:#?}");
    assert_eq!(v.limited_end, Some(End::Client));
    assert!(
        v.limited_by
            .as_deref()
            .unwrap_or("")
            .contains("tcp_wmem max = 65,536")
    );
    assert_eq!(v.fixes[0].setting, "net.ipv4.tcp_wmem");
    assert_eq!(v.fixes[0].value, "4096 16384 490000");
}

#[test]
fn clustered_losses_are_congestion_at_a_shallow_queue() {
    // 0.25% of bytes lost, yet 38 Mbit/s: 5x the Mathis rate of 7 Mbit/s.
    // The queue adds up to 10 ms (0.25 x BDP) before it drops.
    let rtts: Vec<u64> = (0..20).map(|i| RTT_US + 500 * i).collect();
    let kernel = run(
        "kernel",
        38.0,
        sender(5.0, 0.0, 0.0, 24_000_000, 60_000),
        rtts,
        50.0,
    );
    let v = diagnose(&facts(
        kernel,
        fine_auto(),
        host(4 << 20, 4 << 20),
        host(4 << 20, 4 << 20),
    ));
    assert_eq!(v.kind, VerdictKind::Congestion, "{v:#?}");
    assert!(v.summary.contains("in bursts"), "{}", v.summary);
    assert!(v.fixes.is_empty());
}

#[test]
fn independent_losses_are_random_loss() {
    // 0.5% lost and 9 Mbit/s: 1.8x the Mathis rate of 5 Mbit/s.
    let kernel = run(
        "kernel",
        9.0,
        sender(5.0, 0.0, 0.0, 5_600_000, 28_000),
        vec![RTT_US + 300; 20],
        11.0,
    );
    let auto = run(
        "auto",
        9.5,
        sender(5.0, 0.0, 0.0, 5_900_000, 29_000),
        vec![RTT_US + 300; 20],
        11.0,
    );
    let v = diagnose(&facts(
        kernel,
        auto,
        host(4 << 20, 4 << 20),
        host(4 << 20, 4 << 20),
    ));
    assert_eq!(v.kind, VerdictKind::RandomLoss, "{v:#?}");
    assert!(v.summary.contains("Mathis"), "{}", v.summary);
}

#[test]
fn a_full_link_is_near_capacity_even_with_a_few_drops() {
    let rtts: Vec<u64> = (0..20).map(|i| RTT_US + 2_000 * i).collect();
    let kernel = run(
        "kernel",
        47.5,
        sender(5.0, 0.01, 0.0, 30_000_000, 30_000),
        rtts,
        50.0,
    );
    let v = diagnose(&facts(
        kernel,
        fine_auto(),
        host(4 << 20, 4 << 20),
        host(4 << 20, 4 << 20),
    ));
    assert_eq!(v.kind, VerdictKind::NearCapacity, "{v:#?}");
    assert!(v.notes.iter().any(|n| n.contains("queue")), "{:?}", v.notes);
    assert_eq!(v.expected_bps, Some(47.5e6));
}

#[test]
fn an_idle_sender_is_application_limited() {
    let kernel = run(
        "kernel",
        2.0,
        sender(1.0, 0.0, 0.0, 1_250_000, 0),
        vec![RTT_US; 20],
        49.0,
    );
    let v = diagnose(&facts(
        kernel,
        fine_auto(),
        host(4 << 20, 4 << 20),
        host(4 << 20, 4 << 20),
    ));
    assert_eq!(v.kind, VerdictKind::Application, "{v:#?}");
}

#[test]
fn no_sender_numbers_is_unknown_and_says_why() {
    let v = diagnose(&DoctorFacts::default());
    assert_eq!(v.kind, VerdictKind::Unknown);
    assert!(v.summary.contains("not seen"));
}

#[test]
fn a_bandwidth_given_by_the_user_sizes_the_fix() {
    let mut receiver = host(4 << 20, 4 << 20);
    receiver.tcp_rmem = Some(BufferTriple {
        min: 4096,
        default: 65_536,
        max: 131_072,
    });
    let kernel = run(
        "kernel",
        12.0,
        sender(5.0, 0.8, 0.0, 7_500_000, 0),
        vec![RTT_US; 20],
        13.0,
    );
    let mut f = facts(kernel, fine_auto(), host(4 << 20, 4 << 20), receiver);
    f.path_rate = Some(BitRate(100_000_000));
    let v = diagnose(&f);
    assert_eq!(v.fixes[0].value, "4096 65536 2000000");
}

impl DoctorFacts {
    fn with_kernel(mut self, kernel: Option<RunFacts>) -> DoctorFacts {
        self.kernel = kernel;
        self
    }
}

#[test]
fn a_send_buffer_stuck_at_tcp_wmem_max_is_a_send_buffer_limit_even_without_the_chrono() {
    // Linux counts sndbuf_limited only while not cwnd-limited: a lossy
    // small-buffer flow shows 0% (seen on an emulated path).
    let kernel = run(
        "kernel",
        17.5,
        sender(5.0, 0.0, 0.0, 11_000_000, 300_000),
        vec![RTT_US + 8_000; 20],
        18.0,
    );
    let v = with_send_buffer_at_cap(kernel.clone(), 65_536);
    assert_eq!(v.kind, VerdictKind::SendBuffer, "{v:#?}");
    assert!(
        v.summary.contains("kept its send buffer at its cap"),
        "{}",
        v.summary
    );
    // With a max above 2 x BDP the same numbers are not a buffer limit.
    let v = with_send_buffer_at_cap(kernel, 4 << 20);
    assert_ne!(v.kind, VerdictKind::SendBuffer, "{v:#?}");
}

#[test]
fn a_window_limit_at_the_paths_rate_is_not_the_verdict() {
    // Receive autotuning keeps the window near the BDP: the sender is
    // "rwnd limited" 95% of the time while the link is full (seen after
    // the tcp_rmem fix on an emulated path).
    let kernel = run(
        "kernel",
        46.0,
        sender(5.0, 0.95, 0.0, 29_000_000, 0),
        vec![RTT_US + 500; 20],
        48.0,
    );
    let v = diagnose(&facts(
        kernel,
        fine_auto(),
        host(4 << 20, 4 << 20),
        host(4 << 20, 4 << 20),
    ));
    assert_eq!(v.kind, VerdictKind::NearCapacity, "{v:#?}");
}

#[test]
fn a_send_buffer_at_its_cap_near_capacity_is_not_called_a_limit() {
    // After the tcp_wmem fix on an emulated path: the buffer sat at its new
    // cap, 5% below 2 x the (noisy) BDP estimate, at 85% of capacity.
    let kernel = run(
        "kernel",
        43.5,
        sender(5.0, 0.0, 0.0, 27_000_000, 0),
        vec![RTT_US + 500; 20],
        51.2,
    );
    let v = with_send_buffer_at_cap(kernel, 485_320);
    assert_ne!(v.kind, VerdictKind::SendBuffer, "{v:#?}");
}

#[test]
fn the_advised_send_buffer_a_little_below_a_higher_estimate_is_not_a_limit() {
    // CI after the tcp_wmem fix: the cap was the advice's 2 x BDP, 492,938
    // bytes; this test's peak delivery rate, 52.1 Mbit/s, made 2 x BDP
    // 521,256; a lossy kernel test reached 70%.
    let kernel = run(
        "kernel",
        36.4,
        sender(4.0, 0.0, 0.0, 18_000_000, 90_000),
        vec![RTT_US + 20_000; 20],
        52.1,
    );
    let v = with_send_buffer_at_cap(kernel, 492_938);
    assert_ne!(v.kind, VerdictKind::SendBuffer, "{v:#?}");
}

/// The verdict of a `kernel` test whose sending client's autotuned send
/// buffer peaked at its `tcp_wmem` max of `cap` bytes.
fn with_send_buffer_at_cap(mut kernel: RunFacts, cap: u64) -> Verdict {
    let mut client = host(4 << 20, 4 << 20);
    client.tcp_wmem = Some(BufferTriple {
        min: 4096,
        default: 16_384,
        max: cap,
    });
    kernel.sender_peak_sndbuf_bytes = Some(cap);
    diagnose(&facts(kernel, fine_auto(), client, host(4 << 20, 4 << 20)))
}

#[test]
fn the_second_half_is_measured_from_the_last_sample_before_half_time() {
    let samples = [(1.0, 100_000), (2.0, 1_000_000), (2.5, 1_500_000)];
    // From 2 s (1 MB) to the end at 4 s (3 MB): 2 MB in 2 s.
    assert_eq!(
        second_half_goodput(&samples, 4.0, 3_000_000),
        Some(8_000_000.0)
    );
    assert_eq!(second_half_goodput(&samples, 1.5, 3_000_000), None);
    assert_eq!(second_half_goodput(&samples, 4.0, 500_000), None);
    assert_eq!(second_half_goodput(&[], 4.0, 1), None);
}

#[test]
fn the_second_half_is_reported_but_the_whole_test_is_judged() {
    // CI, a 0.25 x BDP queue: the peak delivery rate (44.8 Mbit/s) ran 7%
    // under the link's, and the second half's 43.2 would have read "near
    // capacity"; the whole test's 38.7 with 41 segments lost in bursts is
    // congestion.
    let lossy = sender(4.0, 0.0, 0.0, 19_300_000, 57_000);
    let mut kernel = run("kernel", 38.7, lossy, vec![RTT_US + 1_200; 10], 44.8);
    kernel.steady_goodput_bps = Some(43.2e6);
    let mut auto = fine_auto();
    auto.goodput_bps = 9.5e6;
    auto.peak_delivery_rate_bps = Some(38_000_000);
    let wide = || host(4 << 20, 4 << 20);
    let v = diagnose(&facts(kernel, auto, wide(), wide()));
    assert_eq!(v.kind, VerdictKind::Congestion, "{v:#?}");
    assert_eq!(v.numbers.steady_goodput_bps, Some(43.2e6));
}

#[test]
fn far_below_the_estimate_with_no_limit_seen_is_unknown_not_near_capacity() {
    // 10 of 100 Mbit/s, busy all along, no window, buffer or loss limit.
    let kernel = run(
        "kernel",
        10.0,
        sender(5.0, 0.0, 0.0, 30_000_000, 0),
        vec![RTT_US; 20],
        100.0,
    );
    let v = diagnose(&facts(
        kernel,
        fine_auto(),
        host(212_992, 212_992),
        host(212_992, 212_992),
    ));
    assert_eq!(v.kind, VerdictKind::Unknown, "{v:#?}");
    assert!(
        v.summary.contains("10% of the estimated capacity"),
        "{}",
        v.summary
    );
    assert!(v.summary.contains("no window, buffer"), "{}", v.summary);
    assert!(v.notes.iter().any(|n| n.contains("--bandwidth")), "{v:#?}");
}

mod properties {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// Whatever the numbers, a verdict comes (no panic), and it agrees
        /// with them: "near the path's capacity" only at 90% of the
        /// capacity estimate or more, a window or buffer limit only below.
        #[test]
        fn verdicts_agree_with_their_numbers(
            goodput_mbit in 0.1f64..100.0,
            peak_mbit in 0.1f64..200.0,
            busy in prop_oneof![Just(1.0f64), 0.0f64..1.0],
            rwnd in prop_oneof![Just(0.0f64), 0.0f64..1.0],
            sndbuf in prop_oneof![Just(0.0f64), 0.0f64..1.0],
            retrans in prop_oneof![Just(0u64), 0u64..3_000_000],
            inflated in prop_oneof![Just(0u64), 0u64..40_000],
            steady_mbit in prop_oneof![Just(None), (0.1f64..200.0).prop_map(Some)],
        ) {
            let s = sender(5.0 * busy, rwnd, sndbuf, 30_000_000, retrans);
            let rtts = vec![RTT_US + inflated; 20];
            let mut kernel = run("kernel", goodput_mbit, s, rtts, peak_mbit);
            kernel.steady_goodput_bps = steady_mbit.map(|m| m * 1e6);
            let f = facts(
                kernel,
                fine_auto(),
                host(212_992, 212_992),
                host(212_992, 212_992),
            );
            let v = diagnose(&f);
            let n = &v.numbers;
            let share = n.goodput_bps / n.capacity_bps;
            let best = n.steady_goodput_bps.unwrap_or(0.0).max(n.goodput_bps) / n.capacity_bps;
            match v.kind {
                VerdictKind::NearCapacity => prop_assert!(
                    best >= NEAR_CAPACITY,
                    "near capacity at {share:.2} of it: {}", v.summary
                ),
                VerdictKind::ReceiveWindow | VerdictKind::SendBuffer => prop_assert!(
                    share < NEAR_CAPACITY,
                    "{:?} at {share:.2} of the capacity: {}", v.kind, v.summary
                ),
                _ => {}
            }
        }
    }
}
