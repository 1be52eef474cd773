//! The sender alone over the modelled path, against a receiver whose
//! kernel autotunes (curl, say): the tuner benchmark's deep and shallow
//! paths and the Windows note's slow, short path; and its reactions to
//! samples made by hand.

#![allow(clippy::unwrap_used)]

use super::*;
use crate::telemetry::BufferReading;
use crate::tests::harness::{
    Outcome, Scenario, auto_and_kernel, behind_bbr_with_random_loss, mbps, run,
};
use crate::tests::model::Path;
use crate::tests::{ctx, ms};
use crate::{Peer, Role, TunerSpec};

fn both(path: Path) -> (Outcome, Outcome) {
    auto_and_kernel(Role::Sender, path)
}

fn show(name: &str, auto: &Outcome, kernel: &Outcome) -> String {
    format!(
        "{name}: auto {:.1} Mbit/s, peak sndbuf {:.0}, mean {:.0}, retrans {:.0}; \
         kernel {:.1} Mbit/s, peak sndbuf {:.0}, mean {:.0}, retrans {:.0}",
        mbps(auto.goodput),
        auto.peak_sndbuf,
        auto.mean_sndbuf,
        auto.retrans_bytes,
        mbps(kernel.goodput),
        kernel.peak_sndbuf,
        kernel.mean_sndbuf,
        kernel.retrans_bytes
    )
}

#[test]
fn deep_queue_the_kernels_goodput_with_less_send_memory() {
    let path = Path::benchmark(1.0);
    let (auto, kernel) = both(path);
    let text = show("deep", &auto, &kernel);
    assert!(auto.goodput >= 0.98 * kernel.goodput, "{text}");
    assert!(auto.goodput >= 0.9 * path.payload_rate(), "{text}");
    assert!(auto.peak_sndbuf <= kernel.peak_sndbuf, "{text}");
    assert!(auto.mean_sndbuf <= 0.9 * kernel.mean_sndbuf, "{text}");
    assert!(auto.retrans_bytes <= kernel.retrans_bytes, "{text}");
}

#[test]
fn shallow_queue_the_kernels_goodput_with_less_send_memory() {
    let path = Path::benchmark(0.1);
    let (auto, kernel) = both(path);
    let text = show("shallow", &auto, &kernel);
    assert!(auto.goodput >= 0.98 * kernel.goodput, "{text}");
    assert!(auto.peak_sndbuf <= kernel.peak_sndbuf, "{text}");
    assert!(auto.mean_sndbuf <= 0.9 * kernel.mean_sndbuf, "{text}");
}

#[test]
fn a_long_path_with_a_queue_too_shallow_to_show_the_kernels_goodput_with_half_its_send_memory() {
    // `bench/paths/far.toml`: 200 Mbit/s x 300 ms, a queue of a twentieth
    // of the BDP. Slow start overflows it with the RTT up 5% at most; the
    // loss is not ridden out once it has taken more than a segment here
    // and there.
    let (auto, kernel) = both(Path::of(200.0, 300.0, 0.05, 0.0));
    let text = show("far", &auto, &kernel);
    assert!(auto.goodput >= 0.98 * kernel.goodput, "{text}");
    assert!(auto.peak_sndbuf <= 0.5 * kernel.peak_sndbuf, "{text}");
}

#[test]
fn slow_short_path_a_fraction_of_the_kernels_send_memory() {
    let path = Path::windows_note();
    let (auto, kernel) = both(path);
    let text = show("100M x 40 ms", &auto, &kernel);
    assert!(auto.goodput >= 0.98 * kernel.goodput, "{text}");
    assert!(auto.peak_sndbuf <= 0.5 * kernel.peak_sndbuf, "{text}");
    // Never much beyond what the flow needs: 1.5 x BDP of payload, at
    // the model's 0.8 payload per byte of buffer, with room for the start.
    assert!(auto.peak_sndbuf <= 4.0 * path.bdp(), "{text}");
}

#[test]
fn no_run_is_stuck_at_a_small_buffer() {
    // Paths around the benchmark's: in the last five seconds of every run
    // the flow moves what the kernel's autotuning moves on the same path,
    // never a fraction of it (the model's cubic on a shallow queue is
    // itself slow, so the kernel is the yardstick, not the path's rate).
    for (rate_bps, base_rtt, queue_bdps) in [
        (200e6, 0.1, 1.0),
        (200e6, 0.1, 0.1),
        (200e6, 0.08, 0.5),
        (150e6, 0.12, 1.0),
        (100e6, 0.04, 0.3),
        (50e6, 0.2, 1.0),
    ] {
        let path = Path {
            rate_bps,
            base_rtt,
            queue_bytes: queue_bdps * rate_bps / 8.0 * base_rtt,
            loss: 0.0,
        };
        let (auto, kernel) = both(path);
        let (late, kernel_late) = (
            auto.goodput_between(15.0, 20.0),
            kernel.goodput_between(15.0, 20.0),
        );
        assert!(
            late >= 0.95 * kernel_late && late >= 0.5 * path.payload_rate(),
            "{:.0} Mbit/s x {:.0} ms, queue {queue_bdps} BDP: {:.1} Mbit/s late, kernel {:.1}",
            rate_bps * 1e-6,
            base_rtt * 1e3,
            mbps(late),
            mbps(kernel_late)
        );
        assert!(auto.peak_sndbuf < kernel.peak_sndbuf);
    }
}

fn alone() -> Alone {
    Alone::new(ctx(Role::Sender, Peer::Other))
}

/// A sender's sample: cwnd and in flight in segments of 1448 bytes,
/// counters in milliseconds, the delivery rate in Mbit/s.
struct S {
    at_ms: u64,
    cwnd: u32,
    unacked: u32,
    rtt_ms: u32,
    busy_ms: u64,
    sndbuf_ms: u64,
    rate_mbps: u64,
    sndbuf: u64,
}

impl S {
    fn event(&self) -> Event {
        Event::Sample(Sample {
            at: ms(self.at_ms),
            bytes: 0,
            tcp_info: Some(TcpInfoSample {
                snd_mss_bytes: 1448,
                snd_cwnd_segs: self.cwnd,
                unacked_segs: self.unacked,
                rtt_us: self.rtt_ms * 1000,
                min_rtt_us: Some(100_000),
                busy_time_us: Some(self.busy_ms * 1000),
                sndbuf_limited_us: Some(self.sndbuf_ms * 1000),
                rwnd_limited_us: Some(0),
                delivery_rate_bps: Some(self.rate_mbps * 1_000_000),
                bytes_retrans: Some(0),
                notsent_bytes: Some(0),
                ..TcpInfoSample::default()
            }),
            buffers: Some(BufferReading {
                rcvbuf_bytes: 0,
                sndbuf_bytes: self.sndbuf,
                window_clamp_bytes: 0,
            }),
        })
    }
}

fn sndbufs(d: &Decision) -> Vec<u64> {
    d.actions
        .iter()
        .filter_map(|a| match a {
            Action::SetSndBuf(b) => Some(b.get()),
            _ => None,
        })
        .collect()
}

#[test]
fn it_is_the_sender_alone_and_sets_only_the_send_buffer() {
    let auto = crate::tests::tuner("auto", Role::Sender, Peer::Other);
    assert_eq!(auto.state(), "alone-start");
    let setup = auto.setup();
    // Two first windows of payload, x1.5, at 0.8 payload per byte, halved.
    assert_eq!(setup.after_connect.sndbuf, Some(Bytes(122_880)));
    assert_eq!(setup.after_connect.rcvbuf, None);
    assert_eq!(setup.after_connect.window_clamp, None);
    assert!(setup.pre_handshake.is_empty());
    assert_eq!(auto.inputs(), Inputs::default());
}

#[test]
fn while_starting_it_keeps_one_and_a_half_congestion_windows_and_doubles_when_it_limits() {
    let mut auto = alone();
    let base = S {
        at_ms: 0,
        cwnd: 10,
        unacked: 10,
        rtt_ms: 100,
        busy_ms: 0,
        sndbuf_ms: 0,
        rate_mbps: 1,
        sndbuf: 262_144,
    };
    assert!(auto.on_event(&base.event()).actions.is_empty());
    // Slow start at 600 segments: 1.5 windows of payload, x1.5, at 0.8.
    let d = auto.on_event(
        &S {
            at_ms: 500,
            cwnd: 600,
            unacked: 600,
            busy_ms: 500,
            rate_mbps: 40,
            sndbuf: 2_000_000,
            ..base
        }
        .event(),
    );
    assert_eq!(sndbufs(&d), vec![1_221_750]);
    // The buffer stopped the sender half the time, and no queue: x2.
    let d = auto.on_event(
        &S {
            at_ms: 600,
            cwnd: 600,
            unacked: 600,
            busy_ms: 600,
            sndbuf_ms: 50,
            rate_mbps: 40,
            sndbuf: 2_606_400,
            ..base
        }
        .event(),
    );
    assert_eq!(sndbufs(&d), vec![2_097_152], "capped at tcp_wmem[2] / 2");
    assert!(d.record.unwrap().reason.contains("x2"));
    assert_eq!(auto.state(), "alone-start");
}

#[test]
fn once_the_rtt_inflates_in_flight_is_bounded_by_twice_the_rate_then_comes_down_from_the_flight() {
    let (mut auto, base) = started();
    let full = queued(&base, 500);
    let d = auto.on_event(&full.event());
    assert_eq!(auto.state(), "alone");
    // No pacing yet: the kernel's slow start ends on the delay its
    // unpaced bursts show.
    assert!(pacing(&d).is_empty());
    // The rate may still be growing: a slow start's bursts queue too, and
    // the rate shows what was in flight a round before. Twice 1 MB bounds
    // nothing here: the window, +1/8 (1.63 MB x 1.5 / 0.8 / 2).
    assert_eq!(sndbufs(&d), vec![1_527_188]);
    let reason = d.record.unwrap().reason;
    assert!(reason.contains("the RTT inflated"), "{reason}");
    // A round later the best rate has not grown: the bound is what is in
    // flight, 1.45 x rate x min-RTT (x 1.5 / 0.8 / 2) ...
    let d = auto.on_event(
        &S {
            rtt_ms: 120,
            ..later(&full, 600)
        }
        .event(),
    );
    assert_eq!(sndbufs(&d), vec![1_357_500]);
    let reason = d.record.unwrap().reason;
    assert!(reason.contains("the path's rate is found"), "{reason}");
    // ... and comes down by 7/8 per RTT of the queue while it stands (a
    // cut shows in the RTT a loaded RTT later: the round at 800 ms, 100 ms
    // after a cut with the RTT at 140 ms, does not cut again) ...
    let mut requests = Vec::new();
    for (at_ms, rtt_ms) in [(700, 150), (800, 140), (900, 130)] {
        let d = auto.on_event(
            &S {
                rtt_ms,
                ..later(&full, at_ms)
            }
            .event(),
        );
        requests.extend(sndbufs(&d));
    }
    assert_eq!(requests, vec![1_187_813, 1_039_336]);
    // ... and below the bound it follows the congestion window, +1/8: at
    // once to half the largest of the last 600 ms (500 segments), ...
    let smaller = S {
        at_ms: 1000,
        cwnd: 400,
        unacked: 400,
        rtt_ms: 100,
        busy_ms: 1000,
        rate_mbps: 80,
        ..base
    };
    let d = auto.on_event(&smaller.event());
    assert_eq!(sndbufs(&d), vec![763_594]);
    // ... and the rest of the way once the larger window is that old.
    let d = auto.on_event(&later(&smaller, 1600).event());
    assert_eq!(sndbufs(&d), vec![610_875]);
}

#[test]
fn once_the_rate_is_found_the_congestion_window_is_followed_no_further_than_the_path_holds() {
    // The path's rate found with 1.45 x rate x min-RTT in flight (the
    // bound) and a queue of 200 kB shown (RTT 120 ms over a 1 MB BDP),
    // then cubic's window at 900 segments (1.30 MB): 1/8 above it is more
    // than the BDP and the deepest queue hold, and would only overflow
    // the queue.
    let (mut auto, base) = started();
    let full = queued(&base, 500);
    auto.on_event(&full.event());
    auto.on_event(
        &S {
            rtt_ms: 120,
            ..later(&full, 600)
        }
        .event(),
    );
    let d = auto.on_event(
        &S {
            cwnd: 900,
            unacked: 900,
            rtt_ms: 110,
            ..later(&full, 700)
        }
        .event(),
    );
    // The window itself, 1,303,200 bytes (x 1.5 / 0.8 / 2), not 1/8 above
    // it up to the bound (1.45 MB).
    assert_eq!(sndbufs(&d), vec![1_221_750]);
    // A window under what the path holds is still followed 1/8 above
    // (700 segments, 1.14 MB).
    let d = auto.on_event(
        &S {
            cwnd: 700,
            unacked: 700,
            rtt_ms: 110,
            ..later(&full, 1_400)
        }
        .event(),
    );
    assert_eq!(sndbufs(&d), vec![1_069_031]);
}

#[test]
fn the_payload_per_byte_is_learnt_from_what_is_queued() {
    let mut auto = alone();
    let d = auto.on_event(
        &S {
            at_ms: 0,
            cwnd: 200,
            unacked: 200,
            rtt_ms: 100,
            busy_ms: 0,
            sndbuf_ms: 0,
            rate_mbps: 1,
            sndbuf: 320_000,
        }
        .event(),
    );
    // 289,600 queued in 320,000: 0.905 per byte, and a smaller request
    // for 1.5 windows than at 0.8.
    assert!(d.record.as_ref().unwrap().reason.contains("0.905"));
    assert_eq!(sndbufs(&d), vec![360_000]);
}

#[test]
fn a_sample_from_the_past_is_ignored_and_samples_come_four_per_rtt() {
    let mut auto = alone();
    assert_eq!(auto.next_wakeup(), Some(Duration::ZERO));
    let s = S {
        at_ms: 1000,
        cwnd: 10,
        unacked: 10,
        rtt_ms: 100,
        busy_ms: 0,
        sndbuf_ms: 0,
        rate_mbps: 1,
        sndbuf: 262_144,
    };
    auto.on_event(&s.event());
    assert_eq!(auto.next_wakeup(), Some(ms(1025)));
    let d = auto.on_event(&S { at_ms: 900, ..s }.event());
    assert!(d.actions.is_empty());
    assert!(d.record.unwrap().reason.contains("older"));
}

#[test]
fn a_buffer_that_holds_the_flow_back_while_the_queue_empties_grows_and_a_standing_queue_shrinks_it()
{
    // 1 MB in flight. The RTT inflated, and a round later the rate has
    // not grown: bounded at 1 MB (80 Mbit/s x 100 ms).
    let (mut auto, base) = bounded_at_1mb();
    let at = |at_ms: u64, rtt_ms: u32, cwnd: u32| S {
        cwnd,
        rtt_ms,
        ..later(&base, at_ms)
    };
    // A round in which the congestion window had room beyond what was in
    // flight and nothing waited unsent, and the RTT came down to 103 ms:
    // the bottleneck idled behind the buffer. The rate is found: a probe
    // of x17/16.
    auto.on_event(&at(250, 103, 3000).event());
    let d = auto.on_event(&at(300, 120, 3000).event());
    assert_eq!(sndbufs(&d), vec![996_094]);
    assert!(d.record.unwrap().reason.contains("the queue emptied"));
    // A round whose least RTT stayed at 130 ms: back by 7/8.
    auto.on_event(&at(350, 140, 3000).event());
    let d = auto.on_event(&at(400, 130, 3000).event());
    assert_eq!(sndbufs(&d), vec![871_582]);
    assert!(d.record.unwrap().reason.contains("a queue stood all round"));
}

/// A sender whose RTT inflated with 690 segments in flight at 80 Mbit/s,
/// and whose rate then did not grow for a round: bounded at 1 MB (80
/// Mbit/s x 100 ms). Its last sample, at 200 ms.
fn bounded_at_1mb() -> (Alone, S) {
    let mut auto = alone();
    let at = |at_ms: u64, rtt_ms: u32| S {
        at_ms,
        cwnd: 690,
        unacked: 690,
        rtt_ms,
        busy_ms: at_ms,
        sndbuf_ms: 0,
        rate_mbps: 80,
        sndbuf: 4_000_000,
    };
    auto.on_event(&at(0, 100).event());
    auto.on_event(&at(100, 150).event());
    let d = auto.on_event(&at(200, 120).event());
    assert_eq!(sndbufs(&d), vec![937_500]);
    (auto, at(200, 120))
}

/// A sender bounded at 1 MB (80 Mbit/s x 100 ms), whose buffer then holds
/// the flow back with no queue, round after round (100 ms), at the rates
/// `rates` gives each round. The requests made, one per round.
fn probed(rates: impl Fn(u64) -> u64) -> Vec<(Vec<u64>, String)> {
    probed_at(8, |round| (rates(round), 101))
}

/// [`probed`] for `rounds` rounds, at the rate and least RTT (ms) `round`
/// gives each round.
fn probed_at(rounds: u64, round: impl Fn(u64) -> (u64, u32)) -> Vec<(Vec<u64>, String)> {
    let (mut auto, base) = bounded_at_1mb();
    let at = |at_ms: u64, (rate_mbps, rtt_ms): (u64, u32)| S {
        cwnd: 3000,
        unacked: 690,
        rtt_ms,
        rate_mbps,
        ..later(&base, at_ms)
    };
    (1..=rounds)
        .map(|n| {
            let t = 200 + n * 100;
            auto.on_event(&at(t - 50, round(n)).event());
            let d = auto.on_event(&at(t, round(n)).event());
            let reason = d
                .record
                .as_ref()
                .map_or(String::new(), |r| r.reason.clone());
            (sndbufs(&d), reason)
        })
        .collect()
}

#[test]
fn once_the_rate_is_found_a_probe_that_leaves_the_rate_is_undone_and_one_that_raises_it_doubles() {
    // The path is full: the rate stays at 80 Mbit/s. The probe of x17/16
    // is undone two rounds later, and the next waits four rounds.
    let full = probed(|_| 80);
    let requests: Vec<Vec<u64>> = full.iter().map(|(r, _)| r.clone()).collect();
    assert_eq!(
        requests,
        vec![
            vec![996_094],
            vec![],
            vec![937_500],
            vec![],
            vec![],
            vec![],
            vec![996_094],
            vec![]
        ],
        "{full:?}"
    );
    assert!(full[2].1.contains("the path is full"), "{full:?}");
    // The rate follows the buffer: each probe raised it by more than half
    // its step, so each next one is twice as large, up to x1.25.
    let mut rate = 80.0;
    let rates: Vec<u64> = (0..=8)
        .map(|round| {
            if round % 2 == 1 {
                rate *= 1.25;
            }
            rate as u64
        })
        .collect();
    let climbing = probed(|round| rates[round as usize]);
    let grown: Vec<u64> = climbing
        .iter()
        .filter_map(|(r, _)| r.first().copied())
        .collect();
    assert_eq!(grown.len(), 4, "{climbing:?}");
    let steps: Vec<f64> = grown
        .windows(2)
        .map(|w| w[1] as f64 / w[0] as f64)
        .collect();
    assert!(
        steps.iter().all(|&s| s > 1.15) && steps.windows(2).all(|w| w[1] >= w[0]),
        "{steps:?}: {climbing:?}"
    );
}

#[test]
fn a_probe_after_the_flow_fell_below_the_paths_rate_starts_from_the_least_step() {
    // Bounded at 1 MB (80 Mbit/s x 100 ms), the buffer holding the flow
    // back with no queue: a probe of x17/16 raises the rate to 84 Mbit/s,
    // so the next would be twice as large; a queue stands in the round it
    // is judged, and then the flow falls far below the path's rate (a
    // loss) and comes back. The next probe is x17/16 again: seconds
    // later, a doubled step took the send buffer of a 100 Mbit/s x 40 ms
    // path to 0.52 x the kernel's (globus-url-copy from `rightsize
    // serve`, measured).
    let reasons = |fall: u64| {
        let rounds = [
            (80, 101),
            (84, 101),
            (84, 130),
            (fall, 101),
            (fall, 101),
            (84, 101),
        ];
        probed_at(rounds.len() as u64, |n| rounds[n as usize - 1])
            .into_iter()
            .map(|(_, reason)| reason)
            .collect::<Vec<String>>()
    };
    // The last probe, the flow at the path's rate.
    let last_probe = |reasons: &[String]| {
        reasons
            .iter()
            .rev()
            .find(|r| r.contains("the queue emptied"))
            .cloned()
            .unwrap_or_default()
    };
    // Staying at the rate, the doubled step is the next probe's ...
    let stayed = reasons(84);
    assert!(last_probe(&stayed).contains("x1.125 beyond"), "{stayed:#?}");
    // ... not once the flow fell below it (where it grew by x5/4 a round,
    // as before its rate was found).
    let fell = reasons(40);
    assert!(last_probe(&fell).contains("x1.062 beyond"), "{fell:#?}");
}

#[test]
fn the_bound_follows_a_rate_that_fell_with_no_queue() {
    // After its slow start's loss the sender's own window halves its rate:
    // once the best rate's window lets the old rate go, the bound is the
    // new rate x min-RTT, not the old one.
    // Bounded at 1 MB (80 Mbit/s x 100 ms), the flow at 1 MB.
    let (mut auto, base) = bounded_at_1mb();
    let at = |at_ms: u64, rtt_ms: u32, segs: u32, rate_mbps: u64| S {
        cwnd: segs,
        unacked: segs,
        rtt_ms,
        rate_mbps,
        ..later(&base, at_ms)
    };
    // Half the window, half the rate, no queue: the allowance follows the
    // window (+1/8) ...
    let mut last = Vec::new();
    for t in (300..=2100).step_by(100) {
        last = sndbufs(&auto.on_event(&at(t, 100, 400, 40).event()));
    }
    assert!(last.is_empty() || last == vec![610_875], "{last:?}");
    // ... until the best rate of 2 s is 40 Mbit/s: bounded at 0.5 MB.
    let d = auto.on_event(&at(2300, 100, 400, 40).event());
    assert_eq!(sndbufs(&d), vec![468_750]);
}

#[test]
fn a_buffer_that_holds_the_flow_back_below_the_congestion_windows_need_grows_it_too() {
    // Linux grows the congestion window only while it limits: behind a
    // buffer that holds the flow back it stays, so following it alone
    // would keep the flow at 25 Mbit/s on a 100 Mbit/s path for good.
    let mut auto = alone();
    // 125 kB in flight at 10 Mbit/s, in a congestion window of 145 kB;
    // both grow with the rate.
    let at = |at_ms: u64, rtt_ms: u32, sndbuf_ms: u64, rate_mbps: u64| S {
        at_ms,
        cwnd: 100 * rate_mbps as u32 / 10,
        unacked: 86 * rate_mbps as u32 / 10,
        rtt_ms,
        busy_ms: at_ms,
        sndbuf_ms,
        rate_mbps,
        sndbuf: 300_000,
    };
    auto.on_event(&at(0, 100, 0, 10).event());
    // A loss-free RTT inflation, and a round with no growth of the rate,
    // bound it (10 Mbit/s x 100 ms = 125 kB).
    auto.on_event(&at(100, 150, 0, 10).event());
    let first = sndbufs(&auto.on_event(&at(200, 150, 0, 10).event()));
    assert_eq!(first.len(), 1, "{first:?}");
    let mut last = first[0];
    let mut grew = 0;
    // Rounds in which the buffer held the flow back (sndbuf_limited grew)
    // and the queue emptied, and the rate grew with the buffer: at the end
    // of each round the request is larger than at the end of the last.
    for round in 1..=8u64 {
        let t = 200 + round * 100;
        let rate = 10 + 2 * round;
        auto.on_event(&at(t - 50, 100, round * 50, rate).event());
        let d = auto.on_event(&at(t, 101, round * 50 + 40, rate).event());
        if let Some(&now) = sndbufs(&d).first() {
            assert!(
                now > last,
                "round {round}: {now} after {last}: {:?}",
                d.record
            );
            last = now;
            grew += 1;
        }
    }
    assert!(grew >= 4, "{grew} times, to {last}");
}

/// The sender alone (`auto`) and the kernel over `seconds` of the deep
/// benchmark path, 200 Mbit/s x 100 ms, that becomes 50 Mbit/s x 160 ms
/// with the same queue at `at` seconds (as the changing path does).
fn rate_drops_at(at: f64, seconds: f64) -> (Outcome, Outcome) {
    let mut s = Scenario::against_plain("auto", Role::Sender, Path::benchmark(1.0));
    s.seconds = seconds;
    let slow = Path {
        rate_bps: 50e6,
        base_rtt: 0.16,
        ..s.path
    };
    s.changes = vec![(at, slow)];
    let auto = run(&s);
    let kernel = run(&Scenario {
        spec: TunerSpec::Kernel,
        ..s
    });
    (auto, kernel)
}

#[test]
fn a_path_whose_rtt_rises_does_not_starve_the_flow() {
    // 200 Mbit/s x 100 ms, then 50 Mbit/s x 160 ms with the same queue (as
    // the changing benchmark path): the RTT that rose is not a queue to
    // cut the buffer against for ever.
    let (o, kernel) = rate_drops_at(10.0, 30.0);
    let (auto_late, kernel_late) = (
        o.goodput_between(20.0, 30.0),
        kernel.goodput_between(20.0, 30.0),
    );
    assert!(
        auto_late >= 0.9 * kernel_late,
        "{:.1} vs {:.1} Mbit/s after the change",
        mbps(auto_late),
        mbps(kernel_late)
    );
}

#[test]
fn a_drop_of_the_paths_rate_does_not_starve_the_flow_once_its_queue_drained() {
    // As above: 200 Mbit/s x 100 ms, then 50 Mbit/s x 160 ms. The queue
    // the drop leaves stands against the old min-RTT and shrinks the
    // buffer round after round; once min-RTT starts again, the buffer must
    // carry the new path, not what the shrinking left.
    let (o, kernel) = rate_drops_at(8.0, 16.0);
    for (from, to) in [(8.0, 12.0), (12.0, 16.0)] {
        let (auto, kernel) = (
            o.goodput_between(from, to),
            kernel.goodput_between(from, to),
        );
        eprintln!(
            "{from}-{to} s: auto {:.1}, kernel {:.1} Mbit/s",
            mbps(auto),
            mbps(kernel)
        );
    }
    let (auto, kernel) = (
        o.goodput_between(8.0, 12.0),
        kernel.goodput_between(8.0, 12.0),
    );
    assert!(
        auto >= 0.95 * kernel,
        "{:.1} vs {:.1} Mbit/s in the 4 s after the drop",
        mbps(auto),
        mbps(kernel)
    );
}

/// The reasons `auto` gave over samples every 25 ms from `from_ms` to
/// `to_ms` of `s` at those times.
fn reasons_over(auto: &mut Alone, s: &S, from_ms: u64, to_ms: u64) -> Vec<String> {
    (from_ms..=to_ms)
        .step_by(25)
        .filter_map(|at_ms| auto.on_event(&later(s, at_ms).event()).record)
        .map(|r| r.reason)
        .collect()
}

/// Whether one of `reasons` says `text`.
fn said(reasons: &[String], text: &str) -> bool {
    reasons.iter().any(|r| r.contains(text))
}

#[test]
fn a_queue_that_stands_while_the_ride_out_holds_the_buffer_up_is_the_senders() {
    // bbr keeps up to a BDP queued: the RTT stands at 1.4 x min-RTT with
    // the same flight while the ride-out after the path's loss holds the
    // buffer at 2.5 BDP. The queue is the sender's, not a path whose RTT
    // rose, and the gain is not cut under the ride-out: cuts that do not
    // reach the flow would leave the buffer far below it when the
    // ride-out ends.
    let (mut auto, base) = started();
    let d = auto.on_event(&with_retrans(flowing(&base, 100).event(), 1448));
    assert!(d.record.unwrap().reason.contains("ride out a recovery"));
    let standing = S {
        cwnd: 400,
        unacked: 350,
        rtt_ms: 140,
        ..flowing(&base, 140)
    };
    let reasons = reasons_over(&mut auto, &standing, 525, 3000);
    assert!(!said(&reasons, "a queue stood all round"), "{reasons:#?}");
    assert!(!said(&reasons, "the path's RTT rose"), "{reasons:#?}");
}

#[test]
fn a_flow_held_far_below_the_paths_rate_grows_without_probes() {
    // Bounded at 1 MB for 80 Mbit/s, the buffer holds the flow at 10
    // Mbit/s with no queue: not a probe of a full path, each round grows
    // the bound by x1.25.
    let held = probed(|_| 10);
    assert!(
        held.iter()
            .all(|(_, reason)| !reason.contains("the path is full")),
        "{held:?}"
    );
    let grown: Vec<u64> = held
        .iter()
        .filter_map(|(r, _)| r.first().copied())
        .collect();
    assert!(grown.len() >= 6, "{held:?}");
    // x1.25 a round, but where the request meets tcp_wmem[2] (2 MiB).
    assert!(
        grown.windows(2).all(|w| w[1] as f64 >= 1.1 * w[0] as f64),
        "{grown:?}"
    );
    assert!(grown[grown.len() - 1] >= 4 * grown[0], "{grown:?}");
}

#[test]
fn a_queue_that_stands_while_the_flight_does_not_come_down_is_the_senders() {
    // The buffer comes down round after round but holds more than it
    // reads back: the flight stays at 1 MB, and the RTT at 1.4 x min-RTT.
    let (mut auto, base) = started();
    let standing = S {
        cwnd: 1000,
        unacked: 700,
        rtt_ms: 140,
        rate_mbps: 80,
        ..later(&base, 100)
    };
    let reasons = reasons_over(&mut auto, &standing, 100, 3000);
    assert!(
        said(&reasons, "in flight up to"),
        "the buffer came down: {reasons:#?}"
    );
    assert!(!said(&reasons, "the path's RTT rose"), "{reasons:#?}");
    // Once the flight does come down with the buffer and the RTT stays,
    // the path's RTT rose.
    let cut = S {
        unacked: 550,
        ..standing
    };
    let reasons = reasons_over(&mut auto, &cut, 3025, 4000);
    assert!(said(&reasons, "the path's RTT rose"), "{reasons:#?}");
}

/// `event` with its `TCP_INFO` changed by `change`.
fn with_info(event: Event, change: impl FnOnce(&mut TcpInfoSample)) -> Event {
    let Event::Sample(mut sample) = event else {
        unreachable!("a sample")
    };
    if let Some(info) = sample.tcp_info.as_mut() {
        change(info);
    }
    Event::Sample(sample)
}

/// `event` with `bytes` retransmitted so far.
fn with_retrans(event: Event, bytes: u64) -> Event {
    with_info(event, |info| info.bytes_retrans = Some(bytes))
}

/// `s` again at `at_ms`, busy all the while.
fn later(s: &S, at_ms: u64) -> S {
    S {
        at_ms,
        busy_ms: at_ms,
        ..*s
    }
}

/// 80 Mbit/s x 100 ms = 1 MB, and a full congestion window of 1,000
/// segments (1.45 MB) in a queue of 50 ms, at `at_ms`.
fn queued(base: &S, at_ms: u64) -> S {
    S {
        cwnd: 1000,
        unacked: 1000,
        rtt_ms: 150,
        rate_mbps: 80,
        ..later(base, at_ms)
    }
}

/// `base` at 500 ms: 20 Mbit/s with 175 segments (250 kB) in flight, at
/// an RTT of `rtt_ms`.
fn flowing(base: &S, rtt_ms: u32) -> S {
    S {
        cwnd: 175,
        unacked: 175,
        rtt_ms,
        rate_mbps: 20,
        ..later(base, 500)
    }
}

/// A sender alone after its first sample: 10 segments at 100 ms.
fn started() -> (Alone, S) {
    let mut auto = alone();
    let base = S {
        at_ms: 0,
        cwnd: 10,
        unacked: 10,
        rtt_ms: 100,
        busy_ms: 0,
        sndbuf_ms: 0,
        rate_mbps: 1,
        sndbuf: 4_000_000,
    };
    auto.on_event(&base.event());
    (auto, base)
}

#[test]
fn a_loss_with_no_queue_keeps_room_to_ride_out_a_recovery() {
    let (mut auto, base) = started();
    // 20 Mbit/s x 100 ms = 250 kB in flight, a segment lost, no queue:
    // the buffer holds 2.5 BDP of payload (625 kB x 1.5 / 0.8 / 2), not
    // the congestion window's.
    let lossy = flowing(&base, 100);
    let d = auto.on_event(&with_retrans(lossy.event(), 1448));
    assert_eq!(sndbufs(&d), vec![585_938]);
    assert!(d.record.unwrap().reason.contains("ride out a recovery"));
    // It keeps that while losses come ...
    for (i, at_ms) in (600..=2000).step_by(100).enumerate() {
        let d = auto.on_event(&with_retrans(
            later(&lossy, at_ms).event(),
            1448 * (1 + i as u64 / 4),
        ));
        assert!(sndbufs(&d).is_empty(), "{at_ms} ms: {:?}", d.record);
    }
    // ... and comes back to the flight, rate x min-RTT, after 128 quiet
    // rounds (253 kB x 1.5 / 0.8 / 2).
    let quiet = 2000 + 128 * 100;
    let d = auto.on_event(&with_retrans(later(&lossy, quiet).event(), 1448 * 4));
    assert_eq!(sndbufs(&d), vec![237_563]);
}

#[test]
fn a_loss_just_after_a_queue_is_the_queues() {
    let (mut auto, base) = started();
    // A shallow queue fills (+14%), overflows, and the smoothed RTT reads
    // +5% by the sample that shows the loss: no ride-out.
    let full = flowing(&base, 114);
    assert!(pacing(&auto.on_event(&full.event())).is_empty());
    let settled = S {
        rtt_ms: 105,
        ..later(&full, 525)
    };
    let d = auto.on_event(&with_retrans(settled.event(), 1448));
    // The loss turns the kernel's own pacing on, with no ceiling: the
    // recovery's end, and each window cubic opens, leave spread over the
    // RTT, not in a line-rate burst.
    assert_eq!(pacing(&d), [KERNEL_PACING.get()]);
    assert!(
        sndbufs(&d).iter().all(|&b| b < 585_938),
        "{:?}",
        sndbufs(&d)
    );
    let reason = d.record.map(|r| r.reason).unwrap_or_default();
    assert!(!reason.contains("ride out"), "{reason}");
}

/// `event` with the kernel's congestion-avoidance state `ca_state`.
fn in_state(event: Event, ca_state: u8) -> Event {
    with_info(event, |info| info.ca_state = ca_state)
}

#[test]
fn the_retransmissions_of_a_queues_overflow_are_the_queues_after_it_drained() {
    let (mut auto, base) = started();
    // The queue overflows: the first loss comes with the RTT up 14%.
    let full = flowing(&base, 114);
    auto.on_event(&with_retrans(full.event(), 1448));
    // The recovery retransmits for half a second more, the queue long
    // drained: one episode, the queue's, and no ride-out.
    let drained = flowing(&base, 100);
    for (i, at_ms) in (525..=1000).step_by(25).enumerate() {
        let lost = 1448 * (2 + i as u64);
        let d = auto.on_event(&in_state(
            with_retrans(later(&drained, at_ms).event(), lost),
            CA_RECOVERY,
        ));
        let reason = d
            .record
            .as_ref()
            .map(|r| r.reason.clone())
            .unwrap_or_default();
        assert!(!reason.contains("ride out"), "{at_ms} ms: {reason}");
        assert!(
            sndbufs(&d).iter().all(|&b| b < 585_938),
            "{at_ms} ms: {:?}",
            sndbufs(&d)
        );
    }
    // Recovered, three RTTs later a segment is lost with no queue: the path's.
    let d = auto.on_event(&with_retrans(later(&drained, 1300).event(), 1448 * 22));
    let reason = d.record.map(|r| r.reason).unwrap_or_default();
    assert!(reason.contains("ride out a recovery"), "{reason}");
}

#[test]
fn bbrs_probe_of_four_segments_leaves_the_buffer_and_a_smaller_window_does_not() {
    let (mut auto, base) = started();
    // The path's rate found: 1,000 segments in flight, a queue.
    let full = queued(&base, 500);
    auto.on_event(&full.event());
    let d = auto.on_event(&later(&full, 600).event());
    let before = sndbufs(&d);
    // bbr's PROBE_RTT: four segments for 200 ms and a round trip.
    let probe = S {
        cwnd: 4,
        unacked: 4,
        rtt_ms: 100,
        ..full
    };
    for at_ms in (700..=1000).step_by(25) {
        let d = auto.on_event(&later(&probe, at_ms).event());
        assert!(
            sndbufs(&d).is_empty(),
            "{at_ms} ms: {:?} after {before:?}",
            d.record
        );
    }
    // A window that came down for good is followed down.
    let smaller = S {
        cwnd: 400,
        unacked: 400,
        rtt_ms: 100,
        ..full
    };
    let d = auto.on_event(&later(&smaller, 1100).event());
    assert!(!sndbufs(&d).is_empty(), "{:?}", d.record);
}

#[test]
fn a_recovery_keeps_the_buffer_it_began_with() {
    let (mut auto, base) = started();
    // A queue overflows: 250 kB in flight, the RTT up 14%, a segment lost
    // and the kernel in recovery.
    let full = flowing(&base, 114);
    let d = auto.on_event(&in_state(with_retrans(full.event(), 1448), CA_RECOVERY));
    let first = sndbufs(&d);
    assert_eq!(first.len(), 1, "{:?}", d.record);
    // The sender has cut its congestion window to half, but the buffer
    // still holds everything from the hole on: no cut while it recovers.
    let cut = S {
        cwnd: 88,
        ..later(&full, 600)
    };
    for at_ms in [600, 700, 800] {
        let d = auto.on_event(&in_state(
            with_retrans(later(&cut, at_ms).event(), 1448 * 3),
            CA_RECOVERY,
        ));
        assert!(sndbufs(&d).is_empty(), "{at_ms} ms: {:?}", d.record);
    }
    // Recovered: it follows the congestion window down.
    let d = auto.on_event(&with_retrans(later(&cut, 900).event(), 1448 * 3));
    let after = sndbufs(&d);
    assert!(
        after.len() == 1 && after[0] < first[0] * 3 / 4,
        "{after:?} after {first:?}"
    );
}

#[test]
fn a_path_that_gets_fast_again_is_not_held_back() {
    // The changing benchmark path: 200 Mbit/s x 100 ms, 50 Mbit/s x 160 ms
    // from 10 s, 200 Mbit/s x 100 ms again from 20 s.
    let mut s = Scenario::against_plain("auto", Role::Sender, Path::benchmark(1.0));
    s.seconds = 24.0;
    let fast = s.path;
    let slow = Path {
        rate_bps: 50e6,
        base_rtt: 0.16,
        ..fast
    };
    s.changes = vec![(10.0, slow), (20.0, fast)];
    let o = run(&s);
    let kernel = run(&Scenario {
        spec: TunerSpec::Kernel,
        ..s.clone()
    });
    let (auto_back, kernel_back) = (
        o.goodput_between(20.5, 24.0),
        kernel.goodput_between(20.5, 24.0),
    );
    // The RTT fell from 160 to 100 ms: a new path, where the sender starts
    // again from its congestion window, no ceiling. (Bounded and paced for
    // the slow path, it climbed back at 1/16 to 1/2 a round: 78.8 Mbit/s
    // in the first half second against the kernel's 88.3.)
    let (auto_first, kernel_first) = (
        o.goodput_between(20.0, 20.5),
        kernel.goodput_between(20.0, 20.5),
    );
    assert!(
        auto_first >= kernel_first,
        "{:.1} vs {:.1} Mbit/s in the half second after the path got fast again",
        mbps(auto_first),
        mbps(kernel_first)
    );
    assert!(
        auto_back >= 0.95 * kernel_back,
        "{:.1} vs {:.1} Mbit/s after the path got fast again",
        mbps(auto_back),
        mbps(kernel_back)
    );
}

/// `event` with `bytes` written and not yet sent.
fn with_unsent(event: Event, bytes: u32) -> Event {
    with_info(event, |info| info.notsent_bytes = Some(bytes))
}

fn pacing(d: &Decision) -> Vec<u64> {
    d.actions
        .iter()
        .filter_map(|a| match a {
            Action::SetMaxPacingRate(b) => Some(b.get()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_flow_held_by_the_ceiling_with_no_queue_doubles_its_margin_each_round_until_a_queue() {
    let (mut auto, base) = started();
    // 50 Mbit/s, a queue once (the path shows its rate), then none; the
    // congestion window has room and the writer's data waits unsent: the
    // pacing holds the flow, though it delivers only 0.96 of the ceiling.
    let at = |at_ms: u64, rtt_ms: u32| {
        with_unsent(
            S {
                at_ms,
                cwnd: 2000,
                unacked: 450,
                rtt_ms,
                busy_ms: at_ms,
                rate_mbps: 50,
                ..base
            }
            .event(),
            4_000_000,
        )
    };
    let mut ceilings = Vec::new();
    let mut reasons = Vec::new();
    for (i, at_ms) in (100..=1600).step_by(25).enumerate() {
        let d = auto.on_event(&at(at_ms, if i == 0 { 130 } else { 100 }));
        ceilings.extend(pacing(&d));
        reasons.extend(d.record.map(|r| r.reason));
    }
    // 1/16, then 1/8, 1/4, 1/2 above 6.25 MB/s, one more each round; no
    // further.
    assert_eq!(
        ceilings,
        [6_640_625, 7_031_250, 7_812_500, 9_375_000],
        "{reasons:#?}"
    );
    // A queue puts the margin back to 1/16 at once.
    let d = auto.on_event(&at(1625, 120));
    assert_eq!(pacing(&d), [6_640_625]);
    assert!(
        d.record
            .unwrap()
            .reason
            .contains("a queue: the ceiling back to 1/16"),
        "{reasons:#?}"
    );
}

#[test]
fn a_ceiling_below_the_congestion_window_is_raised_though_the_flow_delivers_less_than_it() {
    // As above, but the flow delivers 0.87 of the ceiling set 1/16 above
    // its best 50 Mbit/s (the writer leaves the buffer short at times),
    // and its congestion window of 480 segments is 20 above what the
    // ceiling lets out per min-RTT, 40 above what is in flight: neither
    // the delivery rate nor the window's room says the ceiling holds the
    // flow, and Linux grows the window no more. The ceiling must rise,
    // but not with 4 ms queued (+4%, no queue by the 1/16 rule): that
    // window holds the path and a queue, and its flow is at the path's
    // rate.
    let held_below = |queued_ms: u32| {
        let (mut auto, base) = started();
        let at = |at_ms: u64, rtt_ms: u32, rate_mbps: u64| {
            with_unsent(
                S {
                    at_ms,
                    cwnd: 480,
                    unacked: 440,
                    rtt_ms,
                    busy_ms: at_ms,
                    rate_mbps,
                    ..base
                }
                .event(),
                100_000,
            )
        };
        let mut ceilings = Vec::new();
        let mut reasons = Vec::new();
        for (i, at_ms) in (100..=1600).step_by(25).enumerate() {
            let (rtt_ms, rate_mbps) = match i {
                0 => (130, 50),
                1..=8 => (100 + queued_ms, 50),
                _ => (100 + queued_ms, 46),
            };
            let d = auto.on_event(&at(at_ms, rtt_ms, rate_mbps));
            ceilings.extend(pacing(&d));
            reasons.extend(d.record.map(|r| r.reason));
        }
        (ceilings, reasons)
    };
    let (ceilings, reasons) = held_below(0);
    assert!(
        ceilings.first() == Some(&6_640_625) && ceilings.contains(&7_031_250),
        "{ceilings:?}: {reasons:#?}"
    );
    let rule = "the ceiling holds the flow below its congestion window with no queue";
    assert!(said(&reasons, rule), "{reasons:#?}");
    let (ceilings, reasons) = held_below(4);
    assert_eq!(ceilings, [6_640_625], "{reasons:#?}");
    assert!(!said(&reasons, rule), "{reasons:#?}");
}

/// `event` with the kernel's least RTT `us`.
fn with_min_rtt(event: Event, us: u32) -> Event {
    with_info(event, |info| info.min_rtt_us = Some(us))
}

#[test]
fn a_path_whose_rtt_falls_is_a_new_path_where_the_sender_starts_again_with_no_ceiling() {
    let (mut auto, base) = started();
    let full = queued(&base, 100);
    auto.on_event(&full.event());
    let d = auto.on_event(
        &S {
            rtt_ms: 120,
            ..later(&full, 200)
        }
        .event(),
    );
    assert_eq!(pacing(&d), [10_625_000]);
    // The RTT falls to 80 ms, the kernel's least with it: more than 1/8
    // below min-RTT, a shorter path. The ceiling is lifted and the
    // allowance is 1.5 congestion windows again (1.45 MB x 1.5 x 1.5 /
    // 0.8 / 2), until a queue shows the new path's rate.
    let d = auto.on_event(&with_min_rtt(
        S {
            rtt_ms: 80,
            ..later(&full, 300)
        }
        .event(),
        80_000,
    ));
    assert_eq!(auto.state(), "alone-start");
    assert_eq!(pacing(&d), [NO_PACING_CEILING.get()]);
    assert_eq!(sndbufs(&d), vec![2_036_250]);
    let reason = d.record.unwrap().reason;
    assert!(reason.contains("a new path"), "{reason}");
}

/// The reason `auto` gives for a loss at 1,325 ms, after a queue of
/// `deep_ms` above min-RTT stood for half a second at 20 Mbit/s, then an
/// RTT of `rtt_ms` at `rate_mbps` for three rounds, with 350 segments
/// (507 kB) in flight.
fn loss_after_a_deep_queue(deep_ms: u32, rtt_ms: u32, rate_mbps: u64) -> String {
    let (mut auto, base) = started();
    let at = |rtt_ms, rate_mbps| S {
        unacked: 350,
        cwnd: 400,
        rate_mbps,
        ..flowing(&base, rtt_ms)
    };
    reasons_over(&mut auto, &at(100 + deep_ms, 20), 500, 1000);
    reasons_over(&mut auto, &at(rtt_ms, rate_mbps), 1025, 1300);
    let lost = later(&at(rtt_ms, rate_mbps), 1325);
    let d = auto.on_event(&with_retrans(lost.event(), 1448));
    d.record.map(|r| r.reason).unwrap_or_default()
}

#[test]
fn a_loss_with_a_queue_under_half_the_deepest_is_the_paths() {
    // 20 Mbit/s x 100 ms: a queue of 100 ms holds 250 kB, one BDP. bbr's
    // own queue stands at +30% (75 kB) where the path queued 250 kB for a
    // whole round: a loss there overflowed nothing.
    let reason = loss_after_a_deep_queue(100, 130, 20);
    assert!(
        reason.contains("queued, where a round queued") && reason.contains("ride out a recovery"),
        "{reason}"
    );
    // At +80% (200 kB) it may be the queue's overflow: no ride-out.
    let reason = loss_after_a_deep_queue(100, 180, 20);
    assert!(!reason.contains("ride out"), "{reason}");
    // An RTT 400 ms up at the rate of before (a path that got slower, the
    // delivery rate an RTT behind) is no queue of 1 MB: no more than the
    // 257 kB in flight beyond rate x min-RTT. A loss at +80% may be its
    // overflow.
    let reason = loss_after_a_deep_queue(400, 180, 20);
    assert!(!reason.contains("ride out"), "{reason}");
}

#[test]
fn a_loss_with_an_rtt_beyond_any_that_stood_may_be_the_queues() {
    // After a queue of +100% (250 kB at 20 Mbit/s), the RTT climbs to
    // +150% while the delivery rate, an RTT old, reads 5 Mbit/s: 94 kB
    // by the bytes, but a queue deeper than any before. Not the path's.
    let reason = loss_after_a_deep_queue(100, 250, 5);
    assert!(!reason.contains("ride out"), "{reason}");
}

#[test]
fn behind_bbr_with_random_loss_the_kernels_goodput_with_less_send_memory() {
    // bbr paces itself and takes no random loss for congestion; it keeps
    // up to two BDPs in flight, so its own queue stands.
    let (runs, met) = behind_bbr_with_random_loss(Role::Sender);
    let texts: Vec<_> = runs
        .iter()
        .map(|(auto, kernel)| show("bbr", auto, kernel))
        .collect();
    assert!(met, "{texts:#?}");
    for ((auto, kernel), text) in runs.iter().zip(&texts) {
        assert!(auto.peak_sndbuf <= 0.5 * kernel.peak_sndbuf, "{text}");
        assert!(auto.goodput >= 0.9 * kernel.goodput, "{text}");
    }
}

/// The pacing `auto` sets over 3 s at 50 Mbit/s from `base`: a queue
/// every half second, a segment lost every second.
fn paced_over(auto: &mut Alone, base: &S) -> Vec<u64> {
    let mut paced = Vec::new();
    for (i, at_ms) in (100..=3000).step_by(25).enumerate() {
        let s = S {
            cwnd: 2000,
            unacked: 450,
            rtt_ms: if i % 20 == 0 { 130 } else { 100 },
            rate_mbps: 50,
            ..later(base, at_ms)
        };
        let event = with_unsent(with_retrans(s.event(), 1448 * (i as u64 / 40)), 4_000_000);
        paced.extend(pacing(&auto.on_event(&event)));
    }
    paced
}

#[test]
fn behind_bbr_no_pacing_is_set() {
    // bbr paces at its own estimate and probes above it: neither the
    // kernel's pacing at the first loss nor a ceiling once the rate is
    // found, whatever the flow shows.
    let (_, base) = started();
    let mut auto = Alone::new(crate::Context {
        congestion: crate::Congestion::Bbr,
        ..ctx(Role::Sender, Peer::Other)
    });
    auto.on_event(&base.event());
    let paced = paced_over(&mut auto, &base);
    assert!(paced.is_empty(), "{paced:?}");
    // A window-based sender on the same samples is paced.
    let (mut auto, base) = started();
    assert!(!paced_over(&mut auto, &base).is_empty());
}

#[test]
fn a_recovery_that_begins_with_a_new_loss_is_a_new_episode() {
    let (mut auto, base) = started();
    // The queue overflows (+14%) and the kernel recovers.
    let full = flowing(&base, 114);
    auto.on_event(&in_state(with_retrans(full.event(), 1448), CA_RECOVERY));
    // Two seconds with no loss and no queue ...
    let drained = flowing(&base, 100);
    for at_ms in (525..=2500).step_by(25) {
        auto.on_event(&with_retrans(later(&drained, at_ms).event(), 1448));
    }
    // ... then a segment lost with no queue: the kernel recovers again,
    // from this loss, not the overflow's. The path's.
    let lost = in_state(
        with_retrans(later(&drained, 2525).event(), 2 * 1448),
        CA_RECOVERY,
    );
    let reason = auto
        .on_event(&lost)
        .record
        .map(|r| r.reason)
        .unwrap_or_default();
    assert!(reason.contains("ride out a recovery"), "{reason}");
}

#[test]
fn a_loss_with_no_queue_that_takes_a_share_of_the_flight_is_a_queues_overflow() {
    let (mut auto, base) = started();
    // 175 segments in flight, no queue: a segment lost reads as the
    // path's, and the ride-out begins.
    let drained = flowing(&base, 100);
    let d = auto.on_event(&in_state(with_retrans(drained.event(), 1448), CA_RECOVERY));
    assert!(d.record.unwrap().reason.contains("ride out a recovery"));
    // The recovery goes on to retransmit 20 of them (more than 1/16 of
    // those and what went out since): a queue too shallow to show in the
    // RTT overflowed. The ride-out ends (the buffer it began with is kept
    // while the kernel recovers) ...
    let d = auto.on_event(&in_state(
        with_retrans(later(&drained, 525).event(), 20 * 1448),
        CA_RECOVERY,
    ));
    let reason = d.record.map(|r| r.reason).unwrap_or_default();
    assert!(reason.contains("a queue's overflow"), "{reason}");
    // ... and once it is over the buffer follows the flight, not 2.5 BDPs.
    let mut after = Vec::new();
    for at_ms in (550..=1500).step_by(25) {
        after.extend(sndbufs(
            &auto.on_event(&with_retrans(later(&drained, at_ms).event(), 20 * 1448)),
        ));
    }
    assert!(after.last().is_some_and(|&b| b < 585_938 / 2), "{after:?}");
}

#[test]
fn random_losses_of_a_segment_each_are_ridden_out() {
    let (mut auto, base) = started();
    let drained = flowing(&base, 100);
    auto.on_event(&with_retrans(drained.event(), 1448));
    // A segment more every 150 ms (1 in 260 sent), one long episode:
    // never 1/16 of what it sent. The buffer stays.
    for (i, at_ms) in (525..=3000).step_by(25).enumerate() {
        let lost = 1448 * (1 + i as u64 / 6);
        let d = auto.on_event(&with_retrans(later(&drained, at_ms).event(), lost));
        assert!(sndbufs(&d).is_empty(), "{at_ms} ms: {:?}", d.record);
    }
}
