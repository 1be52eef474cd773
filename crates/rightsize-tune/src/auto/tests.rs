//! `auto` over the modelled path: the tuner benchmark's paths (200 Mbit/s,
//! 2 x 50 ms, CUBIC; queues of 1 and 0.1 BDP), a path that changes, a
//! congested path; and its reactions to the kernel and to bad input.
//!
//! The model is not the kernel: these pin `auto`'s behaviour and the
//! shape of the tuner benchmark's goals, with the margins noted where the model
//! gives less than the goal.

#![allow(clippy::unwrap_used)]

use crate::auto::INITIAL_WINDOW;
use crate::auto::memory::Memory;
use crate::auto::view::View;
use crate::tcpinfo::TcpInfoSample;
use crate::telemetry::BufferReading;
use crate::tests::harness::{Outcome, Scenario, clamp_of, run};
use crate::tests::model::Path;
use crate::tests::{control_rtt, ms, rcvbufs, tuner};
use crate::units::Bytes;
use crate::{Action, Event, Peer, PeerInfo, PeerReport, Role, Sample, TrainProbe};

fn mbps(bytes_per_s: f64) -> f64 {
    bytes_per_s * 8e-6
}

/// The wire BDP of the benchmark path, as the tuner benchmark counts it: 2.5 MB.
fn wire_bdp(s: &Scenario) -> f64 {
    s.path.rate_bps / 8.0 * s.path.base_rtt
}

/// The receiver's windows (clamps) after `from` seconds.
fn clamps_after(o: &Outcome, from: f64, to: f64) -> Vec<f64> {
    o.log
        .iter()
        .filter(|l| l.role == Role::Receiver && l.at >= from && l.at < to)
        .flat_map(|l| l.actions.iter())
        .filter_map(clamp_of)
        .map(|b| b.get() as f64)
        .collect()
}

#[test]
fn deep_queue_full_rate_with_a_fraction_of_the_memory() {
    let scenario = Scenario::benchmark("auto", 1.0);
    let auto = run(&scenario);
    let fixed = run(&Scenario::benchmark("static:16MiB", 1.0));
    let stock = run(&Scenario::benchmark("stock", 1.0));
    let kernel = run(&Scenario::benchmark("kernel", 1.0));
    let (g, bdp) = (auto.goodput, wire_bdp(&scenario));
    assert!(
        g >= 0.95 * fixed.goodput,
        "{:.1} vs static {:.1}",
        mbps(g),
        mbps(fixed.goodput)
    );
    assert!(g >= 6.0 * stock.goodput);
    assert!(
        auto.peak_rcvbuf <= 2.0 * bdp,
        "peak {:.0} for {bdp:.0}",
        auto.peak_rcvbuf
    );
    assert!(auto.peak_rcvbuf <= 0.25 * kernel.peak_rcvbuf);
    // Goal 1d asks 0.98 x the kernel's goodput; in the model the ramp
    // that keeps a shallow queue from overflowing costs about 3% here.
    assert!(
        g >= 0.96 * kernel.goodput,
        "{:.1} vs kernel {:.1}",
        mbps(g),
        mbps(kernel.goodput)
    );
    assert_eq!(auto.retrans_bytes, 0.0);
    assert_eq!(auto.receiver_state, "cruise");
    // The sender's buffer followed the window: twice the told window, read
    // back, and never the limit.
    assert!(
        auto.peak_sndbuf <= 2.5 * bdp,
        "sender peak {:.0}",
        auto.peak_sndbuf
    );
    let window = *clamps_after(&auto, 0.0, 99.0).last().unwrap();
    let payload_bdp = scenario.path.bdp();
    assert!(
        (payload_bdp..1.1 * payload_bdp).contains(&window),
        "window {window:.0}"
    );
}

#[test]
fn a_short_path_is_filled_with_what_the_hosts_add_to_its_rtt() {
    // 200 Mbit/s x 5 ms with 4 BDPs of queue. The model's millisecond
    // steps add to every RTT what the hosts' delays do on a real one: a
    // window of rate x min-RTT x 1.06 made 0.87 x the kernel's goodput
    // here (0.84 x on the emulated path); one of rate x (min-RTT + 2.5
    // ms) fills the path, with a tenth of the kernel's buffer.
    let path = Path::of(200.0, 5.0, 4.0, 0.0);
    let at = |spec: &str| {
        let mut s = Scenario::benchmark(spec, 1.0);
        s.path = path;
        run(&s)
    };
    let (auto, kernel) = (at("auto"), at("kernel"));
    let text = format!(
        "auto {:.1} Mbit/s, peak rcvbuf {:.0}; kernel {:.1}, {:.0}",
        mbps(auto.goodput),
        auto.peak_rcvbuf,
        mbps(kernel.goodput),
        kernel.peak_rcvbuf
    );
    assert!(auto.goodput >= 0.98 * kernel.goodput, "{text}");
    assert!(auto.peak_rcvbuf <= 0.25 * kernel.peak_rcvbuf, "{text}");
    // The window: about rate x 7.5 ms, never near the queue's 20 ms.
    let window = *clamps_after(&auto, 0.0, 99.0).last().unwrap();
    let payload = path.bdp() / path.base_rtt;
    assert!(
        (payload * 0.007..payload * 0.010).contains(&window),
        "window {window:.0} ({text})"
    );
}

#[test]
fn shallow_queue_capped_near_the_bdp_without_the_slow_start_losses() {
    let scenario = Scenario::benchmark("auto", 0.1);
    let auto = run(&scenario);
    let fixed = run(&Scenario::benchmark("static:16MiB", 0.1));
    let ceiling = scenario.path.payload_rate();
    assert!(
        auto.goodput >= 0.93 * ceiling,
        "{:.1} of a {:.1} Mbit/s ceiling, slow start included",
        mbps(auto.goodput),
        mbps(ceiling)
    );
    assert!(auto.goodput > fixed.goodput);
    assert!(fixed.retrans_bytes > 0.0);
    assert!(auto.retrans_bytes <= 0.2 * fixed.retrans_bytes);
    assert!(
        auto.peak_window <= 1.1 * scenario.path.bdp(),
        "window {:.0}",
        auto.peak_window
    );
    // It ramped towards the trains' estimate and stopped there.
    let states = auto.receiver_states();
    assert_eq!(states.first(), Some(&"startup"));
    assert!(
        auto.log
            .iter()
            .any(|l| l.reason.contains("reached the capacity estimate"))
    );
}

#[test]
fn without_trains_or_a_rightsize_peer_it_still_finds_the_bandwidth() {
    let mut scenario = Scenario::benchmark("auto", 1.0);
    scenario.trains = None;
    let alone = {
        let mut s = scenario.clone();
        s.rightsize_peer = false;
        s.sizes = false;
        s.udp_probes = false;
        s
    };
    let ceiling = scenario.path.payload_rate();
    // Alone, the receiver leaves its sender twice its flight until a
    // queue shows the capacity, with memory for half as much again: a
    // sender that sizes its own buffer never makes that queue.
    for (name, s, bdps) in [("no trains", scenario, 2.0), ("alone", alone, 4.5)] {
        let o = run(&s);
        assert!(
            o.goodput >= 0.85 * ceiling,
            "{name}: {:.1} Mbit/s",
            mbps(o.goodput)
        );
        assert!(
            o.peak_rcvbuf <= bdps * wire_bdp(&s),
            "{name}: peak {:.0}",
            o.peak_rcvbuf
        );
    }
}

/// The tuner benchmark's goals 3a and 3b: at least 0.9 x the goodput of `static:16MiB` with
/// at most a third of its mean receive buffer.
fn assert_target_3(auto: &Outcome, fixed: &Outcome) {
    assert!(
        auto.goodput >= 0.9 * fixed.goodput,
        "{:.1} vs {:.1}",
        mbps(auto.goodput),
        mbps(fixed.goodput)
    );
    assert!(auto.mean_rcvbuf <= fixed.mean_rcvbuf / 3.0);
}

fn changing(spec: &str) -> Scenario {
    let mut s = Scenario::benchmark(spec, 1.0);
    s.seconds = 40.0;
    let path = |rate_bps: f64, base_rtt: f64| Path {
        rate_bps,
        base_rtt,
        queue_bytes: rate_bps / 8.0 * base_rtt,
        loss: 0.0,
    };
    s.changes = vec![
        (10.0, path(100e6, 0.1)),
        (20.0, path(300e6, 0.1)),
        (30.0, path(300e6, 0.15)),
    ];
    s
}

#[test]
fn a_changing_path_is_followed_with_a_third_of_the_memory() {
    let auto = run(&changing("auto"));
    let fixed = run(&changing("static:16MiB"));
    assert_target_3(&auto, &fixed);
    // The rate halved at 10 s: the window follows it down near 1.25 MB.
    let half_bdp = 100e6 / 8.0 * 0.1 * 1448.0 / 1500.0;
    let settled = clamps_after(&auto, 10.0, 20.0);
    let last = *settled.last().unwrap();
    assert!(
        (0.9 * half_bdp..1.25 * half_bdp).contains(&last),
        "window {last:.0}"
    );
    let half_rate = 100e6 / 8.0 * 1448.0 / 1500.0;
    let during = auto.goodput_between(12.0, 20.0);
    assert!(
        during >= 0.95 * half_rate,
        "{:.1} Mbit/s at half rate",
        mbps(during)
    );
    assert!(
        auto.log
            .iter()
            .any(|l| l.reason.starts_with("queue drained: the path got slower"))
    );
    // It grew again when the rate tripled ...
    let grown = clamps_after(&auto, 20.0, 30.0);
    assert!(grown.iter().any(|&w| w > 2.0 * last));
    // ... and took the longer RTT at 30 s for what it is.
    assert!(
        auto.log
            .iter()
            .any(|l| l.at > 30.0 && l.reason.contains("the path's RTT rose"))
    );
}

#[test]
fn a_path_that_gets_slower_and_longer_is_read_once_its_queue_is_gone() {
    // As the benchmark's changing path: 200 Mbit/s x 100 ms, then 50
    // Mbit/s x 160 ms with the queue it had. The drain cuts the window
    // to the new rate x the old min-RTT; once the queue is gone (0.4 s
    // after the cut) the bottleneck idles at a level RTT, which is the
    // path's. Read by drain rounds of three RTTs instead, at 13.1 s.
    let mut s = Scenario::benchmark("auto", 1.0);
    s.seconds = 20.0;
    let queue_bytes = s.path.queue_bytes;
    s.changes = vec![(
        10.0,
        Path {
            rate_bps: 50e6,
            base_rtt: 0.16,
            queue_bytes,
            loss: 0.0,
        },
    )];
    let auto = run(&s);
    let rose = auto
        .log
        .iter()
        .find(|l| l.at > 10.0 && l.reason.contains("the path's RTT rose"))
        .map(|l| l.at);
    let during = auto.goodput_between(12.0, 20.0);
    let rate = 50e6 / 8.0 * 1448.0 / 1500.0;
    assert!(
        rose.is_some_and(|at| at < 12.25) && during >= 0.95 * rate,
        "the RTT rose read at {rose:?} s; {:.1} Mbit/s from 12 s",
        mbps(during)
    );
}

#[test]
fn random_loss_makes_it_step_aside() {
    let (mut auto_total, mut fixed_total) = (0.0, 0.0);
    for seed in 1..=4 {
        let mut s = Scenario::benchmark("auto", 1.0);
        s.path.loss = 1e-4;
        s.seed = seed;
        let auto = run(&s);
        assert!(
            auto.receiver_states().contains(&"step-aside"),
            "seed {seed}"
        );
        let aside = auto.log.iter().find(|l| l.state == "step-aside").unwrap();
        let window = aside.actions.iter().find_map(clamp_of).unwrap().get() as f64;
        assert!(
            window >= 2.0 * s.path.bdp(),
            "seed {seed}: window {window:.0}"
        );
        s.spec = "static:16MiB".parse().unwrap();
        fixed_total += run(&s).goodput;
        auto_total += auto.goodput;
    }
    assert!(
        auto_total >= 0.85 * fixed_total,
        "{:.1} vs {:.1}",
        mbps(auto_total / 4.0),
        mbps(fixed_total / 4.0)
    );
}

fn receiver() -> Box<dyn crate::Tuner> {
    tuner("auto", Role::Receiver, Peer::Rightsize)
}

/// A receiver's sample with the kernel's read-back clamp and buffer.
fn read_back(at_ms: u64, bytes: u64, clamp: u32, rcvbuf: u64, rcv_wnd: u32) -> Event {
    Event::Sample(Sample {
        at: ms(at_ms),
        bytes,
        tcp_info: Some(TcpInfoSample {
            rcv_rtt_us: 100_000,
            rcv_wnd_bytes: Some(rcv_wnd),
            ..TcpInfoSample::default()
        }),
        buffers: Some(BufferReading {
            rcvbuf_bytes: rcvbuf,
            sndbuf_bytes: 0,
            window_clamp_bytes: clamp,
        }),
    })
}

#[test]
fn first_window_then_the_clamp_is_put_back_when_the_kernel_replaces_it() {
    let mut auto = receiver();
    let setup = auto.setup();
    assert!(
        setup.pre_handshake.is_empty(),
        "the kernel's own scale is the largest"
    );
    assert_eq!(setup.after_connect.window_clamp, Some(Bytes(64 << 10)));
    // 64 KiB of window at 0.6 per byte of the doubled request, plus 1/16:
    // 58,027 bytes requested.
    assert_eq!(setup.after_connect.rcvbuf, Some(Bytes(58_027)));
    auto.on_event(&control_rtt(0, 100));
    // The kernel measured 0.89 and set the clamp to 0.89 x 116,054.
    let d = auto.on_event(&read_back(20, 0, 103_288, 116_054, 65_536));
    assert_eq!(
        d.actions[..2],
        [
            Action::SetRcvBuf(Bytes(39_119)),
            Action::SetWindowClamp(Bytes(64 << 10))
        ]
    );
    assert!(
        d.record
            .unwrap()
            .reason
            .contains("the kernel replaced the clamp")
    );
    // Put back and read back as set: nothing more.
    let d = auto.on_event(&read_back(40, 0, 65_536, 78_238, 65_536));
    assert!(
        d.actions.iter().all(|a| matches!(a, Action::TellPeer(_))),
        "{d:?}"
    );
    // A kernel that keeps replacing it is answered once per two RTTs.
    let d = auto.on_event(&read_back(60, 0, 68_858, 78_238, 65_536));
    assert!(d.actions.is_empty(), "{d:?}");
    let d = auto.on_event(&read_back(230, 0, 68_858, 78_238, 65_536));
    assert!(d.actions.contains(&Action::SetWindowClamp(Bytes(64 << 10))));
}

fn peer(at_ms: u64, info: PeerInfo) -> Event {
    Event::Peer(PeerReport {
        at: ms(at_ms),
        info: Some(info),
        size: None,
    })
}

fn sender_info(busy_ms: u64, rwnd_ms: u64, retrans: u64) -> PeerInfo {
    PeerInfo {
        busy_time_us: Some(busy_ms * 1000),
        rwnd_limited_us: Some(rwnd_ms * 1000),
        sndbuf_limited_us: Some(0),
        delivery_rate_bps: Some(5_000_000),
        min_rtt_us: Some(100_000),
        rtt_us: Some(100_000),
        bytes_retrans: Some(retrans),
        total_retrans_segs: Some(0),
        pace_bps: None,
    }
}

#[test]
fn a_peer_that_lies_is_ignored_with_a_reason_and_nothing_changes() {
    let mut auto = receiver();
    auto.on_event(&control_rtt(0, 100));
    auto.on_event(&peer(50, sender_info(50, 40, 0)));
    for (bad, why) in [
        (
            PeerInfo {
                rtt_us: Some(0),
                ..sender_info(100, 80, 0)
            },
            "rtt is 0",
        ),
        (
            PeerInfo {
                delivery_rate_bps: Some(u64::MAX),
                ..sender_info(100, 80, 0)
            },
            "delivery rate",
        ),
        (
            PeerInfo {
                rwnd_limited_us: Some(10_000_000),
                ..sender_info(100, 80, 0)
            },
            "exceeds its busy time",
        ),
        (sender_info(10, 5, 0), "busy_time went backwards"),
    ] {
        let d = auto.on_event(&peer(100, bad));
        assert!(d.actions.is_empty());
        let reason = d.record.unwrap().reason;
        assert!(
            reason.starts_with("peer report ignored") && reason.contains(why),
            "{reason}"
        );
    }
    let zero = Event::Peer(PeerReport {
        at: ms(120),
        info: None,
        size: Some(Bytes(0)),
    });
    assert!(
        auto.on_event(&zero)
            .record
            .unwrap()
            .reason
            .contains("size 0")
    );
    assert_eq!(auto.state(), "startup");
    // A good report after the bad ones is taken.
    assert!(
        auto.on_event(&peer(150, sender_info(150, 120, 0)))
            .record
            .is_none()
    );
}

#[test]
fn a_sample_from_the_past_is_ignored() {
    let mut auto = receiver();
    auto.on_event(&read_back(100, 1000, 65_536, 78_238, 65_536));
    let d = auto.on_event(&read_back(50, 2000, 65_536, 78_238, 65_536));
    assert!(d.actions.is_empty());
    assert!(
        d.record
            .unwrap()
            .reason
            .contains("before the previous sample")
    );
    // Four samples per RTT, the receiver's RTT being 100 ms.
    assert_eq!(auto.next_wakeup(), Some(ms(125)));
}

fn sender_sample(at_ms: u64, busy_ms: u64, sndbuf_ms: u64, rwnd_ms: u64, sndbuf: u64) -> Event {
    Event::Sample(Sample {
        at: ms(at_ms),
        bytes: 0,
        tcp_info: Some(TcpInfoSample {
            rtt_us: 100_000,
            busy_time_us: Some(busy_ms * 1000),
            sndbuf_limited_us: Some(sndbuf_ms * 1000),
            rwnd_limited_us: Some(rwnd_ms * 1000),
            ..TcpInfoSample::default()
        }),
        buffers: Some(BufferReading {
            rcvbuf_bytes: 0,
            sndbuf_bytes: sndbuf,
            window_clamp_bytes: 0,
        }),
    })
}

/// A receiver's report that tells the window, `size` bytes.
fn told(at_ms: u64, size: u64) -> Event {
    Event::Peer(PeerReport {
        at: ms(at_ms),
        info: None,
        size: Some(Bytes(size)),
    })
}

#[test]
fn a_sender_with_a_rightsize_peer_follows_and_never_holds_the_flow_back() {
    let mut auto = tuner("auto", Role::Sender, Peer::Rightsize);
    assert!(
        auto.setup().after_connect.is_empty(),
        "the kernel autotunes until told"
    );
    assert_eq!(
        auto.on_event(&told(10, 2_000_000)).actions,
        vec![Action::SetSndBuf(Bytes(2_000_000))]
    );
    assert!(
        auto.on_event(&told(20, 1_500_000)).actions.is_empty(),
        "no churn for a little less"
    );
    assert_eq!(
        auto.on_event(&told(30, 500_000)).actions,
        vec![Action::SetSndBuf(Bytes(500_000))]
    );
    auto.on_event(&sender_sample(100, 100, 0, 0, 1_000_000));
    // The buffer stopped the sender 30% of the time, the window not: x1.5.
    let d = auto.on_event(&sender_sample(250, 200, 30, 10, 1_000_000));
    assert_eq!(d.actions, vec![Action::SetSndBuf(Bytes(750_000))]);
    // The window held it back: the receiver's business.
    assert!(
        auto.on_event(&sender_sample(400, 300, 60, 80, 1_500_000))
            .actions
            .is_empty()
    );
}

/// A sender's sample with its congestion window (1,448-byte segments).
fn sender_cwnd_sample(at_ms: u64, cwnd_segs: u32) -> Event {
    Event::Sample(Sample {
        at: ms(at_ms),
        bytes: 0,
        tcp_info: Some(TcpInfoSample {
            rtt_us: 100_000,
            snd_cwnd_segs: cwnd_segs,
            snd_mss_bytes: 1448,
            ..TcpInfoSample::default()
        }),
        buffers: None,
    })
}

#[test]
fn a_following_sender_holds_no_more_than_its_congestion_window_needs() {
    let mut auto = tuner("auto", Role::Sender, Peer::Rightsize);
    // The receiver's window is ahead of the flow (a startup): the buffer
    // follows the congestion window, no less than the first window.
    assert_eq!(
        auto.on_event(&sender_cwnd_sample(10, 20)).actions,
        vec![],
        "nothing told yet: the kernel autotunes"
    );
    assert_eq!(
        auto.on_event(&told(20, 2_000_000)).actions,
        vec![Action::SetSndBuf(INITIAL_WINDOW)]
    );
    assert_eq!(
        auto.on_event(&sender_cwnd_sample(70, 200)).actions,
        vec![Action::SetSndBuf(Bytes(289_600))]
    );
    // Past the receiver's window, the receiver's window.
    assert_eq!(
        auto.on_event(&sender_cwnd_sample(120, 2_000)).actions,
        vec![Action::SetSndBuf(Bytes(2_000_000))]
    );
    // A congestion window halved by a loss leaves it (no churn); bbr's
    // `PROBE_RTT` (four segments) is a pause; one that fell below half of
    // it takes it down once the larger window is 600 ms old.
    for (at, cwnd) in [(170, 1_000), (220, 4), (270, 600), (700, 600)] {
        assert!(
            auto.on_event(&sender_cwnd_sample(at, cwnd))
                .actions
                .is_empty(),
            "{at} ms"
        );
    }
    assert_eq!(
        auto.on_event(&sender_cwnd_sample(800, 600)).actions,
        vec![Action::SetSndBuf(Bytes(868_800))]
    );
}

#[test]
fn a_following_sender_paces_at_the_ceiling_the_receiver_asks_for() {
    let mut auto = tuner("auto", Role::Sender, Peer::Rightsize);
    let asked = |at_ms, bps| {
        Event::Peer(PeerReport {
            at: ms(at_ms),
            info: Some(PeerInfo {
                pace_bps: Some(bps),
                ..PeerInfo::default()
            }),
            size: None,
        })
    };
    let d = auto.on_event(&asked(10, 200_000_000));
    assert_eq!(d.actions, vec![Action::SetMaxPacingRate(Bytes(25_000_000))]);
    assert!(
        d.record
            .unwrap()
            .reason
            .contains("pacing ceiling of 200 Mbit/s")
    );
    // The same ceiling again (each report of the receiver may carry it).
    assert!(auto.on_event(&asked(20, 200_000_000)).actions.is_empty());
    // An absurd one is ignored with its reason; the ceiling stays.
    let d = auto.on_event(&asked(30, 8));
    assert!(d.actions.is_empty());
    assert!(d.record.unwrap().reason.contains("peer report ignored"));
    assert_eq!(
        auto.on_event(&asked(40, 206_000_000)).actions,
        vec![Action::SetMaxPacingRate(Bytes(25_750_000))]
    );
}

#[test]
fn memory_follows_the_window_on_an_older_kernel_too() {
    // At 0.5 window per byte (before Linux 6.5) the buffer is twice the
    // window; the clamp is never replaced, nothing is learnt, all is well.
    let mut s = Scenario::benchmark("auto", 1.0);
    s.host.scaling_ratio = 0.5;
    let o = run(&s);
    assert!(o.goodput >= 0.9 * s.path.payload_rate());
    assert!(
        o.peak_rcvbuf <= 2.4 * s.path.bdp(),
        "peak {:.0}",
        o.peak_rcvbuf
    );
    assert!(
        o.log
            .iter()
            .all(|l| !l.reason.contains("replaced the clamp"))
    );
}

#[test]
fn the_window_never_exceeds_what_the_limits_allow() {
    let mut auto = receiver();
    auto.on_event(&control_rtt(0, 100));
    let mut bytes = 0;
    let mut biggest = 0;
    for i in 1..400u64 {
        bytes += 1 << 26;
        let info = PeerInfo {
            delivery_rate_bps: Some(400_000_000_000),
            ..sender_info(i * 25, i * 25, 0)
        };
        auto.on_event(&peer(i * 25, info));
        let d = auto.on_event(&read_back(i * 25, bytes, 0, 0, 0));
        biggest = biggest.max(rcvbufs(&d).into_iter().max().unwrap_or(0));
    }
    assert!(biggest > 0);
    assert!(biggest <= crate::tests::limits().rmem_max.get());
}

/// A sender report 40 ms into the path: `rwnd_ms` of `busy_ms` limited by
/// the window, at `rate_mbps`, smoothed RTT `rtt_ms` over a 40 ms minimum.
fn slow_start_info(busy_ms: u64, rwnd_ms: u64, rate_mbps: u64, rtt_ms: u32) -> PeerInfo {
    PeerInfo {
        busy_time_us: Some(busy_ms * 1000),
        rwnd_limited_us: Some(rwnd_ms * 1000),
        sndbuf_limited_us: Some(0),
        delivery_rate_bps: Some(rate_mbps * 1_000_000),
        min_rtt_us: Some(40_000),
        rtt_us: Some(rtt_ms * 1000),
        bytes_retrans: Some(0),
        total_retrans_segs: Some(0),
        pace_bps: None,
    }
}

#[test]
fn slow_start_bursts_that_the_window_did_not_cause_do_not_end_the_startup() {
    // Measured on 50 Mbit/s x 40 ms (diag_e2e): a sender in slow start
    // bursts its 64 KiB into the bottleneck (10 ms of queue at 50 Mbit/s),
    // so its smoothed RTT reads +22% while the window has not yet held it
    // back. That is the sender's queue, not a bandwidth found at 6.6 Mbit/s.
    let mut auto = receiver();
    auto.on_event(&control_rtt(0, 40));
    let mut bytes = 0;
    for step in 1..=8u64 {
        let at = step * 25;
        bytes += 30_000;
        auto.on_event(&peer(at, slow_start_info(at, 0, 6, 49)));
        let d = auto.on_event(&read_back(at, bytes, 65_536, 116_054, 65_536));
        assert!(
            !d.actions.contains(&Action::SetWindowClamp(Bytes(35_111))),
            "{d:?}"
        );
        assert_eq!(auto.state(), "startup", "at {at} ms: {d:?}");
    }
    // Then the window holds it back, and the rate follows the window: ramp.
    let mut grew = false;
    for step in 9..=16u64 {
        let at = step * 25;
        bytes += 60_000;
        auto.on_event(&peer(at, slow_start_info(at, (at - 200) * 9 / 10, 13, 44)));
        let d = auto.on_event(&read_back(at, bytes, 65_536, 116_054, 65_536));
        grew |= d
            .actions
            .iter()
            .any(|a| matches!(a, Action::SetWindowClamp(b) if b.get() > 65_536));
    }
    assert!(grew, "a window-limited flow at the window's rate ramps");
}

#[test]
fn trains_after_a_startup_that_ended_short_ramp_it_on() {
    // The window held the sender at 64 KiB and the RTT read +22%: the
    // startup ends at 6.6 Mbit/s. Then 50 Mbit/s trains arrive.
    let mut auto = receiver();
    auto.on_event(&control_rtt(0, 40));
    auto.on_event(&peer(25, slow_start_info(25, 20, 6, 49)));
    auto.on_event(&read_back(25, 30_000, 65_536, 116_054, 65_536));
    auto.on_event(&peer(50, slow_start_info(50, 45, 6, 49)));
    auto.on_event(&read_back(50, 60_000, 65_536, 116_054, 65_536));
    assert_eq!(auto.state(), "cruise");
    let mut ramped = None;
    for train in 0..crate::sobas::TRAINS as u64 {
        // 48 packets of 1,500 bytes at 50 Mbit/s.
        let d = auto.on_event(&Event::Train(TrainProbe {
            at: ms(60 + train),
            bytes: 47 * 1500,
            dispersion: std::time::Duration::from_micros(47 * 240),
        }));
        ramped = d.record.map(|r| r.reason).or(ramped);
    }
    let reason = ramped.unwrap_or_default();
    assert!(reason.contains("ramp up to"), "{reason}");
    assert_eq!(auto.state(), "startup");
}

/// The benchmark's changing path (bench/paths/changing.toml): 200 Mbit/s
/// at 100 ms and 50 Mbit/s at 160 ms in turn, 10 s each, rate and RTT
/// changing together, a queue of 2.5 MB throughout.
pub(super) fn bench_changing(spec: &str) -> Scenario {
    let mut s = Scenario::benchmark(spec, 1.0);
    s.seconds = 60.0;
    let queue_bytes = s.path.queue_bytes;
    let path = |rate_bps: f64, base_rtt: f64| Path {
        rate_bps,
        base_rtt,
        queue_bytes,
        loss: 0.0,
    };
    s.changes = (1..6)
        .map(|i| {
            let p = if i % 2 == 1 {
                path(50e6, 0.16)
            } else {
                path(200e6, 0.1)
            };
            (10.0 * f64::from(i), p)
        })
        .collect();
    s
}

/// The model has no spurious timeouts and no out-of-order pruning, the two
/// ways the real path punished mistakes here; it pins the shape: the
/// window follows both changes, with no loss, in a tenth of the memory.
#[test]
fn rate_and_rtt_changing_together_are_followed() {
    let auto = run(&bench_changing("auto"));
    let fixed = run(&bench_changing("static:16MiB"));
    for (name, o) in [("auto", &auto), ("static", &fixed)] {
        let per: Vec<String> = (0..6)
            .map(|i| {
                format!(
                    "{:.0}",
                    mbps(o.goodput_between(10.0 * i as f64, 10.0 * (i + 1) as f64))
                )
            })
            .collect();
        eprintln!(
            "{name}: {:.1} Mbit/s [{}], mean rcvbuf {:.2} MB, retrans {:.0} B",
            mbps(o.goodput),
            per.join(" "),
            o.mean_rcvbuf / 1e6,
            o.retrans_bytes
        );
    }
    assert_target_3(&auto, &fixed);
    assert_eq!(auto.retrans_bytes, 0.0);
    // Each slow phase is carried at 0.8 of its rate or more.
    let slow = 50e6 / 8.0 * 1448.0 / 1500.0;
    for phase in [1.0, 3.0, 5.0] {
        let during = auto.goodput_between(10.0 * phase, 10.0 * (phase + 1.0));
        assert!(during >= 0.8 * slow, "{:.1} Mbit/s", mbps(during));
    }
}

/// 10 Mbit/s and 50 Mbit/s in turn, a second each (10 first), 40 ms RTT, a
/// queue of 250 kB (the BDP at 50 Mbit/s), 20 s: trains read the slow
/// second.
fn every_second(spec: &str) -> Scenario {
    let mut s = Scenario::benchmark(spec, 1.0);
    s.seconds = 20.0;
    let path = |rate_bps: f64| Path {
        rate_bps,
        base_rtt: 0.04,
        queue_bytes: 250e3,
        loss: 0.0,
    };
    s.path = path(10e6);
    s.changes = (1..20)
        .map(|i| (f64::from(i), path(if i % 2 == 1 { 50e6 } else { 10e6 })))
        .collect();
    s
}

#[test]
fn trains_read_in_a_slow_moment_do_not_hold_the_flow_there() {
    // Kept, the trains' 10 Mbit/s held the paced flow near it: each fast
    // second the pace crept up by 1/32, each slow one drained it back
    // (10.1 Mbit/s where the kernel's autotuning made 27.5 on the emulated
    // path).
    let auto = run(&every_second("auto"));
    let kernel = run(&every_second("kernel"));
    let dropped = auto
        .log
        .iter()
        .find(|l| l.role == Role::Receiver && l.reason.contains("they read low"))
        .unwrap_or_else(|| {
            panic!(
                "trains kept: {:#?}",
                auto.log
                    .iter()
                    .filter(|l| l.role == Role::Receiver)
                    .map(|l| format!("{:.2} {} {}", l.at, l.state, l.reason))
                    .collect::<Vec<_>>()
            )
        });
    assert!(dropped.at < 3.0, "dropped at {:.2} s", dropped.at);
    // The pace asked then is one no flow reaches.
    assert!(dropped.actions.iter().any(
        |a| matches!(a, Action::TellPeerPace(b) if b.get() * 8 >= crate::MAX_PLAUSIBLE_RATE_BPS / 2)
    ));
    eprintln!(
        "auto {:.1} Mbit/s, kernel {:.1}",
        mbps(auto.goodput),
        mbps(kernel.goodput)
    );
    // The model's sender grows its congestion window back after a slow
    // second more slowly than Linux's did: it reads the x1.5 ramp back to
    // a faster rate as the bandwidth found, and makes 0.64 x the kernel
    // here, where on the emulated path (`bench/paths/flapping.toml`) that
    // ramp took auto from 18.0 to 21.5 Mbit/s against the kernel's 28.1.
    assert!(
        auto.goodput >= 0.6 * kernel.goodput,
        "auto {:.1} Mbit/s vs kernel {:.1}",
        mbps(auto.goodput),
        mbps(kernel.goodput)
    );
}

/// A view of the receiver at `at_ms`: RTT 100 ms, the clamp read back as
/// `clamp`, a loss or not.
fn memory_view(at_ms: u64, clamp: u64, loss: bool) -> View {
    View {
        at: ms(at_ms),
        rate: Some(10e6),
        rtt: Some(ms(100)),
        settled_rtt: Some(ms(100)),
        rt_prop: Some(ms(100)),
        btl_bw: Some(10e6),
        rwnd_share: None,
        sndbuf_share: None,
        loss,
        unconfirmed_loss: false,
        rcv_wnd: None,
        rcv_ssthresh: None,
        buffers: Some(BufferReading {
            rcvbuf_bytes: 4 << 20,
            sndbuf_bytes: 0,
            window_clamp_bytes: u32::try_from(clamp).unwrap(),
        }),
        inflight: None,
        recent_rate: None,
        held: None,
    }
}

#[test]
fn memory_comes_down_two_rtts_after_the_window_and_never_during_a_loss() {
    // The loss read from the sender's retransmissions, or from
    // out-of-order arrivals it has not confirmed yet: either way segments
    // wait behind a hole.
    for unconfirmed in [false, true] {
        let mut memory = Memory::new(crate::tests::ctx(Role::Receiver, Peer::Rightsize));
        let (big, small) = (Bytes(2_000_000), Bytes(500_000));
        memory.observe(&memory_view(0, 0, false));
        let grown = memory.actions(big, true);
        let Action::SetRcvBuf(held) = grown[0] else {
            panic!("{grown:?}")
        };
        // The window shrinks at 1 s: the clamp now, the memory not yet.
        memory.observe(&memory_view(1_000, 2_000_000, false));
        assert_eq!(
            memory.actions(small, false),
            [Action::SetWindowClamp(small)]
        );
        let check = |memory: &mut Memory, at_ms, loss: bool| {
            let mut view = memory_view(at_ms, 500_000, loss && !unconfirmed);
            view.unconfirmed_loss = loss && unconfirmed;
            memory.observe(&view);
            memory.check(&view, small, ms(1_000), "drain")
        };
        assert!(check(&mut memory, 1_100, false).actions.is_empty());
        // A loss 150 ms in: out-of-order segments may fill the old buffer.
        assert!(check(&mut memory, 1_150, true).actions.is_empty());
        assert!(
            check(&mut memory, 1_300, false).actions.is_empty(),
            "unconfirmed: {unconfirmed}"
        );
        // Two RTTs after the loss, and after the cut: down to the window's need.
        let released = check(&mut memory, 1_350, false);
        let [Action::SetRcvBuf(now)] = released.actions[..] else {
            panic!("{released:?}")
        };
        // The kernel doubles a request: twice it still carries the window.
        assert!(
            now < held && 2 * now.get() > 500_000,
            "{now:?} after {held:?}"
        );
        assert!(
            released
                .record
                .unwrap()
                .reason
                .contains("no loss since: memory down to")
        );
        // Once down, nothing more.
        assert!(check(&mut memory, 1_500, false).actions.is_empty());
    }
}

#[test]
fn at_the_trains_capacity_it_does_not_probe_but_below_a_low_estimate_it_does() {
    // Trains 2% low: the full window with no queue is the knee. Probing on
    // from there overflowed the 0.1 x BDP queue on the emulated path, with
    // a sender that does not pace (bursts of the opening window).
    let mut close = Scenario::benchmark("auto", 0.1);
    close.trains = Some(0.98);
    close.pacing = false;
    let o = run(&close);
    assert!(
        !o.log
            .iter()
            .any(|l| l.reason.contains("the path got faster")),
        "{:?}",
        o.log.iter().map(|l| &l.reason).collect::<Vec<_>>()
    );
    assert!(o.goodput >= 0.9 * close.path.payload_rate());
    assert_eq!(o.retrans_bytes, 0.0);
    // Trains 15% low: the window passes the estimate by its headroom, the
    // rate follows, and the probe finds the rest.
    let mut low = Scenario::benchmark("auto", 1.0);
    low.trains = Some(0.85);
    let o = run(&low);
    assert!(
        o.log
            .iter()
            .any(|l| l.reason.contains("the path got faster")),
        "no probe: {:#?}",
        o.log
            .iter()
            .filter(|l| !l.reason.contains("ramp up"))
            .map(|l| format!("{:.2} {} {}", l.at, l.state, l.reason))
            .collect::<Vec<_>>()
    );
    assert!(
        o.goodput >= 0.9 * low.path.payload_rate(),
        "{:.1}",
        mbps(o.goodput)
    );
}

#[test]
fn a_paced_sender_lets_the_window_open_at_once_and_nothing_is_lost() {
    // Behind a sender that takes the pacing ceiling asked for, the window
    // opens at once to 3/4 of the trains' window: a faster startup than
    // the gradual ramp an unpaced sender needs, on the shallow queue too,
    // and with trains that read 3% high.
    for (queue, trains) in [(0.1, 1.0), (1.0, 1.0), (0.1, 1.03), (0.1, 0.97)] {
        let mut paced = Scenario::benchmark("auto", queue);
        paced.trains = Some(trains);
        let mut bursting = paced.clone();
        bursting.pacing = false;
        let (p, b) = (run(&paced), run(&bursting));
        let case = format!("queue {queue} x BDP, trains x{trains}");
        assert!(
            p.log
                .iter()
                .any(|l| l.role == Role::Receiver && l.reason.contains("the window opens at once")),
            "{case}: the window did not open"
        );
        assert!(
            !b.log.iter().any(|l| l.reason.contains("the sender paces")),
            "{case}: a sender that does not pace read as paced"
        );
        assert_eq!(p.retrans_bytes, 0.0, "{case}");
        assert!(
            p.goodput > b.goodput,
            "{case}: paced {:.1} vs bursting {:.1} Mbit/s",
            mbps(p.goodput),
            mbps(b.goodput)
        );
        assert!(p.peak_rcvbuf <= 2.0 * wire_bdp(&paced), "{case}");
    }
}

#[test]
fn behind_a_paced_sender_the_startup_reaches_the_trains_window_without_stalling() {
    // A paced sender held by the window waits for its pacer much of the
    // time, and Linux counts only the rest as window-limited (the model
    // too, about 1 - rate / pace): a flow that fills its window while
    // starting is held by it, whatever share of the sender's time the
    // window took.
    for queue in [1.0, 0.1] {
        let o = run(&Scenario::benchmark("auto", queue));
        let reached = o
            .log
            .iter()
            .find(|l| {
                l.role == Role::Receiver
                    && l.reason.contains("reached the capacity estimate's window")
            })
            .map(|l| l.at);
        // 1.7 s in the model; never, in 20 s, when the share of the
        // sender's time decides alone, even read against the pace.
        assert!(
            reached.is_some_and(|at| at < 3.0),
            "queue {queue} x BDP: {reached:?}"
        );
    }
}

#[test]
fn the_receiver_asks_for_pacing_once_and_raises_it_only_when_the_flow_reaches_it() {
    // Trains 15% low: the ceiling first asked holds the flow, and is
    // raised as the flow reaches it, until the path's rate fits.
    let mut low = Scenario::benchmark("auto", 1.0);
    low.trains = Some(0.85);
    let o = run(&low);
    let asked: Vec<f64> = o
        .log
        .iter()
        .filter(|l| l.role == Role::Receiver)
        .flat_map(|l| l.actions.iter())
        .filter_map(|a| match a {
            Action::TellPeerPace(b) => Some(b.get() as f64 * 8.0),
            _ => None,
        })
        .collect();
    assert!(asked.len() >= 2, "{asked:?}");
    assert!(asked.windows(2).all(|w| w[1] > w[0]), "{asked:?}");
    let rate = low.path.payload_rate() * 8.0;
    assert!(asked[0] < rate, "{asked:?}");
    assert!(asked.last().is_some_and(|&last| last > rate), "{asked:?}");
    assert!(
        o.goodput >= 0.93 * low.path.payload_rate(),
        "{:.1}",
        mbps(o.goodput)
    );
}

#[test]
fn one_train_read_far_too_fast_does_not_raise_the_capacity() {
    let mut auto = receiver();
    auto.on_event(&control_rtt(0, 100));
    // Four trains at 200 Mbit/s (48 packets of 1,500 bytes in 2.82 ms),
    // one whose packets came in a batch.
    let train = |at_ms, dispersion_us| {
        Event::Train(TrainProbe {
            at: ms(at_ms),
            bytes: 47 * 1500,
            dispersion: std::time::Duration::from_micros(dispersion_us),
        })
    };
    let mut last = None;
    for (i, dispersion_us) in [2_820, 2_830, 100, 2_810, 2_820].into_iter().enumerate() {
        last = Some(auto.on_event(&train(10 + 10 * i as u64, dispersion_us)));
    }
    let reason = last
        .and_then(|d| d.record)
        .map(|r| r.reason)
        .unwrap_or_default();
    assert!(
        reason.starts_with("capacity 193."),
        "the median of the five, as payload: {reason}"
    );
}

#[test]
fn a_path_that_gets_faster_and_shorter_is_ramped_to_again() {
    // Each switch from 50 Mbit/s x 160 ms back to 200 Mbit/s x 100 ms: the
    // RTT that fell says the path changed, and the window ramps towards
    // the trains' capacity x the new RTT instead of probing from the old
    // window at +1/32 per RTT.
    let auto = run(&bench_changing("auto"));
    let fast = 200e6 / 8.0 * 1448.0 / 1500.0;
    for at in [20.0, 40.0] {
        assert!(
            auto.log
                .iter()
                .any(|l| l.at >= at && l.at < at + 1.0 && l.reason.contains("the path changed")),
            "no restart after {at} s"
        );
        let after = auto.goodput_between(at, at + 1.0);
        // Probing from the old window instead: 56 Mbit/s in that second.
        assert!(
            after >= 0.6 * fast,
            "{:.1} Mbit/s in the second after {at} s",
            mbps(after)
        );
    }
}

#[test]
fn a_kernel_that_replaces_the_clamp_at_every_sample_does_not_stop_the_steering() {
    // Loopback: a 1 ms path whose trains read 200 Mbit/s, a sender that
    // paces at the ceiling asked for and a flow that fills it, and a
    // kernel that puts its own clamp in place of the tuner's before every
    // sample (seen on loopback, 64 KiB segments). The ceiling must still
    // be raised as the flow reaches it: answering the kernel alone, the
    // flow stayed at the trains' 1.7 Gbit/s where the kernel's own tuning
    // made 20 (measured).
    let mut auto = receiver();
    auto.on_event(&control_rtt(0, 1));
    let train = |at_ms| {
        Event::Train(TrainProbe {
            at: ms(at_ms),
            bytes: 47 * 1500,
            dispersion: std::time::Duration::from_micros(2_820),
        })
    };
    let mut asked = Vec::new();
    let note = |asked: &mut Vec<f64>, d: crate::Decision| {
        for a in &d.actions {
            if let Action::TellPeerPace(b) = a {
                asked.push(b.get() as f64);
            }
        }
    };
    for i in 0..crate::sobas::TRAINS as u64 {
        note(&mut asked, auto.on_event(&train(1 + i)));
    }
    assert_eq!(asked.len(), 1, "the trains asked for a pace: {asked:?}");
    let mut bytes = 0u64;
    for step in 1..=200u64 {
        let at_ms = 10 + 5 * step;
        let pace = *asked.last().unwrap();
        // The flow carries what the sender is let to: its ceiling.
        bytes += (pace * 0.005) as u64;
        let info = PeerInfo {
            busy_time_us: Some(at_ms * 1000),
            rwnd_limited_us: Some(0),
            sndbuf_limited_us: Some(0),
            delivery_rate_bps: Some((pace * 8.0) as u64),
            min_rtt_us: Some(1_000),
            rtt_us: Some(1_000),
            bytes_retrans: Some(0),
            total_retrans_segs: Some(0),
            pace_bps: Some((pace * 8.0) as u64),
        };
        note(&mut asked, auto.on_event(&peer(at_ms, info)));
        // The kernel's clamp, never the one asked for.
        let sample = read_back(at_ms, bytes, 4_000_000, 8_000_000, 4_000_000);
        note(&mut asked, auto.on_event(&sample));
    }
    // Raised as the flow reaches it, until the flow carries 1/8 more than
    // the trains said: then the ceiling is lifted.
    let lifted = (crate::MAX_PLAUSIBLE_RATE_BPS / 8) as f64;
    assert!(
        asked.len() >= 3 && asked.windows(2).all(|w| w[1] > w[0]) && asked.last() == Some(&lifted),
        "the ceiling was not raised as the flow reached it: {asked:?}"
    );
}
