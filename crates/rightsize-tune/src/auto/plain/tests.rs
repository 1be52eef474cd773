//! The receiver alone over the modelled path, behind a sender whose kernel
//! autotunes and neither reports, sends trains nor paces (vsftpd, say):
//! the tuner benchmark's deep and shallow paths and the Windows note's
//! slow, short path, against the kernel's own receive autotuning.

#![allow(clippy::unwrap_used)]

use super::super::steer::{DrainCheck, Reading, State};
use super::super::tests::bench_changing;
use super::super::{Auto, HEADROOM, RAMP_FACTOR, RAMP_FACTOR_ALONE};
use crate::tcpinfo::TcpInfoSample;
use crate::telemetry::BufferReading;
use crate::tests::harness::{
    Outcome, Scenario, auto_and_kernel, behind_bbr_with_random_loss, mbps, run,
};
use crate::tests::model::Path;
use crate::tests::{ctx, ms};
use crate::{Action, Event, Peer, Role, Sample, Tuner};
use std::time::Duration;

fn both(path: Path) -> (Outcome, Outcome) {
    auto_and_kernel(Role::Receiver, path)
}

fn show(name: &str, auto: &Outcome, kernel: &Outcome) -> String {
    format!(
        "{name}: auto {:.1} Mbit/s, peak rcvbuf {:.0}, retrans {:.0}, states {:?}; \
         kernel {:.1} Mbit/s, peak rcvbuf {:.0}, retrans {:.0}",
        mbps(auto.goodput),
        auto.peak_rcvbuf,
        auto.retrans_bytes,
        auto.receiver_states(),
        mbps(kernel.goodput),
        kernel.peak_rcvbuf,
        kernel.retrans_bytes
    )
}

#[test]
fn deep_queue_the_kernels_goodput_with_a_fraction_of_its_memory() {
    let path = Path::benchmark(1.0);
    let (auto, kernel) = both(path);
    let text = show("deep", &auto, &kernel);
    // The model gives 0.98 x (the emulated path 0.95 to 0.98 x): the
    // first ramp, paced by the window, is a few RTTs slower than slow start.
    assert!(auto.goodput >= 0.97 * kernel.goodput, "{text}");
    assert!(auto.peak_rcvbuf <= 0.3 * kernel.peak_rcvbuf, "{text}");
    assert!(auto.retrans_bytes <= kernel.retrans_bytes, "{text}");
}

#[test]
fn shallow_queue_no_collapse() {
    // Both lose a segment early, to the sender's slow-start bursts (a
    // queue of a tenth of the BDP holds half a round of them at a quarter
    // of the BDP), and the sender's cubic then climbs back for seconds.
    // Cut to the flow after that loss, the window held cubic where it was
    // (0.3 x the kernel's goodput in the model); left room, it climbs as
    // the kernel's does: the model gives 1.36 x the kernel's goodput here,
    // the emulated path 0.9 to 1.1 x. Its memory follows the flight, so it
    // is weighed per unit of goodput.
    let path = Path::benchmark(0.1);
    let (auto, kernel) = both(path);
    let text = show("shallow", &auto, &kernel);
    assert!(auto.goodput >= 0.75 * kernel.goodput, "{text}");
    let per_rate = |o: &Outcome| o.peak_rcvbuf / o.goodput.max(1.0);
    assert!(per_rate(&auto) <= 1.5 * per_rate(&kernel), "{text}");
}

#[test]
fn slow_short_path_no_slower_than_the_kernel() {
    let path = Path::windows_note();
    let (auto, kernel) = both(path);
    let text = show("100M x 40 ms", &auto, &kernel);
    assert!(auto.goodput >= 0.98 * kernel.goodput, "{text}");
    // Room for the sender to grow back after its early loss costs memory:
    // the model's kernel receiver keeps less than the real one (1.3 MB
    // against 6 to 24 MB measured).
    assert!(auto.peak_rcvbuf <= 1.5 * kernel.peak_rcvbuf, "{text}");
}

#[test]
fn a_path_that_gets_faster_is_ramped_to_without_a_loss() {
    // `bench/paths/changing.toml` behind a plain cubic sender: at each
    // switch back to 200 Mbit/s x 100 ms the sender is in flight with its
    // congestion window of before, and each step of the window lets it
    // out. Ramped after twice the arrivals, as a slow start, the window
    // reached 3.4 BDPs, the flow lost 6.7 MB and the memory peaked at
    // 0.38 x the kernel's on the model; at x1.5 per RTT nothing is lost.
    let scenario = |spec| {
        let mut s = Scenario::against_plain(spec, Role::Receiver, Path::benchmark(1.0));
        let changing = bench_changing(spec);
        s.seconds = changing.seconds;
        s.changes = changing.changes;
        s
    };
    let (auto, kernel) = (run(&scenario("auto")), run(&scenario("kernel")));
    let text = show("changing", &auto, &kernel);
    assert!(
        auto.log
            .iter()
            .any(|l| l.role == Role::Receiver && l.reason.contains("the path changed")),
        "{text}"
    );
    assert!(auto.goodput >= 0.98 * kernel.goodput, "{text}");
    assert!(auto.retrans_bytes == 0.0, "{text}");
    assert!(auto.peak_rcvbuf <= 0.25 * kernel.peak_rcvbuf, "{text}");
}

#[test]
fn the_first_ramp_holds_at_a_queue_and_finds_the_bandwidth() {
    let auto = run(&Scenario::against_plain(
        "auto",
        Role::Receiver,
        Path::benchmark(1.0),
    ));
    let reasons: Vec<&str> = auto
        .log
        .iter()
        .filter(|l| l.role == Role::Receiver)
        .map(|l| l.reason.as_str())
        .collect();
    assert!(
        reasons.iter().any(|r| r.contains("bandwidth found")),
        "{reasons:#?}"
    );
    // Nothing is sent to a peer that takes nothing.
    assert!(
        !auto
            .log
            .iter()
            .flat_map(|l| l.actions.iter())
            .any(|a| matches!(a, Action::TellPeer(_) | Action::TellPeerPace(_))),
        "{reasons:#?}"
    );
}

#[test]
fn a_random_loss_at_the_target_steps_aside_at_once() {
    // 0.01% random loss: behind a loss-based sender the model's cubic
    // cuts its own window, but the receiver's window must not be what
    // stalls a recovery, from the first such loss.
    let mut path = Path::benchmark(1.0);
    path.loss = 1e-4;
    let (auto, kernel) = both(path);
    let text = show("lossy", &auto, &kernel);
    assert!(auto.goodput >= 0.95 * kernel.goodput, "{text}");
    let aside = auto
        .log
        .iter()
        .find(|l| l.state == "step-aside")
        .expect(&text);
    assert!(aside.reason.contains("rides out a recovery"), "{text}");
    // The first loss at the window comes with the window's own standing
    // queue (+6%), on a path whose queue showed +76% in the first ramp:
    // not that queue's overflow, so no halving of the headroom first (two
    // such halvings cost 1.6 s at the BDP's window here).
    let halved: Vec<f64> = auto
        .log
        .iter()
        .filter(|l| l.at <= aside.at && l.reason.contains("shallower than the headroom"))
        .map(|l| l.at)
        .collect();
    assert!(halved.is_empty(), "{text}: headroom halved at {halved:?}");
    let window = aside
        .actions
        .iter()
        .find_map(|a| match a {
            Action::SetWindowClamp(w) => Some(w.get() as f64),
            _ => None,
        })
        .unwrap();
    assert!(window >= 2.0 * path.bdp(), "{text}: window {window:.0}");
}

/// A reading of a receiver alone at `at_ms` on a 40 ms path, the flow at
/// `mbit` Mbit/s held by its window, with a queue (RTT `rtt_ms`) or not.
fn reading(at_ms: u64, mbit: f64, rtt_ms: u64) -> Reading {
    let rate = mbit * 1e6 / 8.0;
    Reading {
        at: ms(at_ms),
        rate,
        bw: rate,
        rtt: ms(rtt_ms),
        rt_prop: ms(40),
        limited: true,
        inflated: rtt_ms > 45,
        inflated_settled: rtt_ms > 45,
        no_queue: rtt_ms <= 41,
        empty: rtt_ms <= 40,
        held: 0.0,
        numbers: String::new(),
    }
}

/// A loss at `at_ms` with a queue (RTT 47 ms), the flow at `mbit`
/// Mbit/s, as the tuner's sample loop handles it: the window it cuts to
/// once the recovery is over.
fn loss_with_a_queue(auto: &mut Auto, at_ms: u64, mbit: f64) -> f64 {
    let r = reading(at_ms, mbit, 47);
    auto.best.update(r.at, r.rate);
    auto.on_loss(&r);
    auto.after_recovery.expect("a cut after the recovery")
}

/// A receiver alone past its first ramp on a 40 ms path, its flow's best
/// rate 96 Mbit/s at 1 s, its window (applied at 1 s) `window` or, for
/// `None`, the target at that rate, with `headroom`.
fn cruising_at_96(window: Option<f64>, headroom: f64) -> Auto {
    let mut auto = Auto::new(ctx(Role::Receiver, Peer::Other));
    auto.state = State::Cruise;
    auto.found = true;
    auto.headroom = headroom;
    let rate = 96e6 / 8.0;
    auto.best.update(ms(1_000), rate);
    auto.window = window.unwrap_or_else(|| auto.target(rate, ms(40)));
    auto.history.push_back((ms(1_000), auto.window));
    auto
}

#[test]
fn a_receiver_alone_counts_the_hosts_delay_twice_on_a_short_path() {
    // Its RTT, `tcpi_rcv_rtt`, reads the least of the flow's round trips:
    // on 100 Mbit/s x 5 ms its window leaves 2.5 ms more than a receiver
    // whose sender is rightsize ...
    let alone = Auto::new(ctx(Role::Receiver, Peer::Other));
    let paired = Auto::new(ctx(Role::Receiver, Peer::Rightsize));
    let rate = 100e6 / 8.0;
    let extra = alone.target(rate, ms(5)) - paired.target(rate, ms(5));
    assert!((extra - rate * 0.0025).abs() < 1.0, "{extra:.0}");
    // ... and, from 80 ms, where 1/16 of min-RTT covers both, nothing.
    assert_eq!(alone.target(rate, ms(80)), paired.target(rate, ms(80)));
}

#[test]
fn an_rtt_that_stayed_in_a_drain_sizes_the_window_from_the_goodput_of_now() {
    // The path went from 200 Mbit/s x 40 ms to 50 Mbit/s with a deeper
    // RTT; the drain's first inflated reading was the goodput of before,
    // 112 Mbit/s. Two drain rounds on, the RTT stays at 98 ms with the
    // flow at 48 Mbit/s: the path's RTT rose, and the window is sized
    // from 48 Mbit/s, not 112.
    let mut auto = cruising_at_96(None, HEADROOM);
    let busy = 112e6 / 8.0;
    auto.state = State::Drain(DrainCheck {
        began: ms(1_000),
        until: ms(1_500),
        bw_before: 200e6 / 8.0,
        busy: Some((busy, ms(170))),
        start_rtt: ms(98),
        min_rtt: ms(98),
        most_rtt: ms(170),
        flat: (ms(98), ms(1_300)),
        rounds: 2,
    });
    let mut r = reading(1_600, 48.0, 98);
    r.limited = false;
    let d = auto.steer(&r);
    let reason = d.record.map(|r| r.reason).unwrap_or_default();
    assert!(reason.contains("the path's RTT rose"), "{reason}");
    let window = 48e6 / 8.0 * 0.098 * (1.0 + HEADROOM);
    assert!(
        (auto.window - window).abs() < 1e3,
        "{:.0} for {window:.0}: {reason}",
        auto.window
    );
}

#[test]
fn losses_below_the_flows_best_rate_do_not_ratchet_the_window_down() {
    // 100 Mbit/s x 40 ms with a 50-packet queue: the flow carried
    // 96 Mbit/s, then each loss to its own bursts came at a lower rate
    // (the sender's recovery from the loss before).
    let bdp = 96e6 / 8.0 * 0.040;
    let mut auto = cruising_at_96(Some(2.0 * bdp), HEADROOM);
    for (at_ms, mbit) in [(2_000, 77.0), (4_000, 61.0), (7_000, 49.0)] {
        auto.after_recovery = None;
        let window = loss_with_a_queue(&mut auto, at_ms, mbit);
        assert!(
            window >= bdp,
            "a loss at {mbit} Mbit/s at {at_ms} ms cut the window to {window:.0}, below the {bdp:.0} of the best rate"
        );
    }
    // Ten seconds after the flow last carried more, the rate of a loss
    // with a queue is the path's again: the window follows it down.
    let window = loss_with_a_queue(&mut auto, 17_500, 40.0);
    assert!(
        window < 0.5 * bdp,
        "the window stayed at {window:.0} with the flow at 40 Mbit/s for 10 s"
    );
}

#[test]
fn a_loss_is_ridden_out_and_the_window_cut_once_the_recovery_is_over() {
    // At the window (1.06 x the BDP of 96 Mbit/s x 40 ms), a loss with
    // the queue full: the hole holds the advertised window for an RTT
    // while the sender goes on.
    let mut auto = cruising_at_96(None, HEADROOM);
    let at_target = auto.window;
    let cut = loss_with_a_queue(&mut auto, 2_000, 96.0);
    // The window of an RTT ago was in flight (less than the rate times
    // the RTT of now, with the queue).
    assert!(
        auto.window >= 1.75 * at_target,
        "the window {:.0} during the recovery of a flight of {at_target:.0}",
        auto.window
    );
    assert!(cut <= at_target, "cut to {cut:.0} from {at_target:.0}");
    // During the recovery nothing steers it, whatever the readings say.
    for at_ms in [2_050, 2_100, 2_150] {
        let r = reading(at_ms, 40.0, 40);
        let d = auto.recovery(&r, false).expect("held");
        assert!(d.actions.is_empty(), "{d:?}");
    }
    // Four RTTs after the loss: the cut.
    let r = reading(2_200, 60.0, 40);
    let d = auto.recovery(&r, false).expect("the cut");
    assert!(
        d.record.unwrap().reason.contains("the recovery is over"),
        "{:?}",
        d.actions
    );
    assert_eq!(auto.window, cut);
    assert!(auto.recovery(&r, false).is_none());
}

#[test]
fn a_loss_the_window_did_not_cause_is_ridden_out_too() {
    // Held at its window with the headroom down to 1/32, a flow loses a
    // segment with +12% of queue: not the window's (a burst), and the
    // window stays, but the hole must not hold the recovery back.
    let mut auto = cruising_at_96(None, 1.0 / 32.0);
    let before = auto.window;
    let r = reading(2_000, 90.0, 45);
    assert!(!r.inflated);
    let d = auto.on_loss(&r);
    assert!(
        d.record
            .unwrap()
            .reason
            .contains("loss not caused by the window"),
        "{:?}",
        d.actions
    );
    assert_eq!(auto.after_recovery, Some(before));
    assert!(auto.window >= 1.5 * before, "{:.0}", auto.window);
}

#[test]
fn a_recovery_that_goes_on_keeps_the_window_beyond_what_arrived_behind_the_hole() {
    // The loss with a queue at the window: ridden out at 1.75 flights.
    let mut auto = cruising_at_96(None, HEADROOM);
    let flight = auto.window;
    loss_with_a_queue(&mut auto, 2_000, 96.0);
    let ride = auto.window;
    assert!(ride >= 1.75 * flight, "{ride:.0}");
    // An RTT on the hole is still there (its retransmission was lost
    // too), and half a flight arrived beyond it: the sender sends on past
    // the window of the loss only if the window covers that as well.
    let mut r = reading(2_040, 60.0, 40);
    r.held = 0.5 * flight;
    let d = auto.on_loss(&r);
    assert!(
        d.record.unwrap().reason.contains("the recovery goes on"),
        "{:?}",
        d.actions
    );
    assert!(
        auto.window >= 1.75 * flight + 0.5 * flight - 1.0,
        "the window {:.0} behind a hole with {:.0} beyond it, the flight {flight:.0}",
        auto.window,
        r.held
    );
    // The hole lasts: what came beyond it is covered up to two round
    // trips of arrivals at the flow's rate, no further.
    let two_rounds = 2.0 * r.rate * 0.040;
    r.at = ms(2_060);
    r.held = 20.0 * flight;
    auto.on_loss(&r);
    let most = 1.75 * flight + two_rounds;
    assert!(
        (auto.window - most).abs() <= 0.01 * most,
        "the window {:.0} behind a long hole, {most:.0} expected",
        auto.window
    );
    // Less beyond the hole than before: the window stays.
    let before = auto.window;
    r.at = ms(2_080);
    r.held = 0.2 * flight;
    auto.on_loss(&r);
    assert_eq!(auto.window, before);
    // Once the recovery is over the cut comes as before, and a later loss
    // of the same kind raises nothing until a new ride begins.
    let cut = auto.recovery(&reading(2_300, 90.0, 40), false).unwrap();
    assert!(cut.record.unwrap().reason.contains("the recovery is over"));
    assert!(auto.window < before);
    assert!(auto.ride.is_none() && auto.after_recovery.is_none());
}

#[test]
fn a_loss_in_a_ramp_the_window_held_rides_out_the_window_not_the_goodput() {
    // The ramp held the sender at its window of 2 MB on a 40 ms path;
    // the goodput, a round behind a doubling flow, shows 1 MB an RTT. The
    // sender had the whole window out at the loss.
    let window = 2e6;
    let mut auto = ramping(window, 1e6);
    auto.bound = true;
    auto.history.push_back((ms(1_000), window));
    let mut r = reading(1_100, 200.0, 47);
    r.rate = 1e6 / 0.047;
    r.bw = r.rate;
    auto.on_loss(&r);
    assert!(
        auto.window >= 1.75 * window,
        "ridden out at {:.0} for a window of {window:.0} in flight",
        auto.window
    );
}

#[test]
fn the_recovery_over_the_window_stays_twice_the_flight_until_a_queue_shows_the_capacity() {
    // No queue has shown the capacity: the cut a loss asked for is below
    // twice the flight, and the window would be raised again a sample
    // later; it goes to twice the flight instead.
    let mut auto = cruising_at_96(None, HEADROOM);
    auto.window *= 3.0;
    let asked = loss_with_a_queue(&mut auto, 2_000, 96.0);
    auto.found = false;
    let r = reading(2_300, 80.0, 40);
    let room = 2.0 * r.rate * 0.040;
    assert!(asked < room, "{asked:.0} {room:.0}");
    let d = auto.recovery(&r, false).unwrap();
    assert!(
        d.record.unwrap().reason.contains("until a queue shows"),
        "{:?}",
        d.actions
    );
    assert!(
        (auto.window - room).abs() < 1.0,
        "{:.0} {room:.0}",
        auto.window
    );
    // With the capacity found, the cut is the one the loss asked for.
    let mut auto = cruising_at_96(None, HEADROOM);
    auto.window *= 3.0;
    let asked = loss_with_a_queue(&mut auto, 2_000, 96.0);
    auto.recovery(&reading(2_300, 80.0, 40), false).unwrap();
    assert_eq!(auto.window, asked);
}

#[test]
fn stepping_aside_the_window_grows_no_faster_than_the_ramp_per_rtt() {
    // Stepping aside with the window all in flight and no queue, the
    // window is raised to keep above the flow: at the ramp's rate per RTT
    // however often a receiver alone samples (eight times an RTT here).
    let mut auto = cruising_at_96(None, HEADROOM);
    auto.state = State::StepAside;
    auto.last_loss = ms(1_000);
    auto.aside_bdps = 1.0;
    let start = auto.window;
    let rate = start / 0.040;
    for at_ms in (1_005..=1_040).step_by(5) {
        let mut r = reading(at_ms, rate * 8.0 / 1e6, 40);
        r.bw = rate / 2.0;
        auto.steer(&r);
    }
    let grown = auto.window / start;
    assert!(grown > 1.2, "the window did not grow: x{grown:.2}");
    assert!(
        grown <= RAMP_FACTOR * 1.001,
        "x{grown:.2} in an RTT, the ramp is x{RAMP_FACTOR}"
    );
}

#[test]
fn when_losses_stop_the_window_goes_no_lower_than_the_flows_best_rate() {
    // Stepping aside after losses, the flow's best rate 96 Mbit/s: when
    // the losses stop, cubic is still climbing back at 53 Mbit/s, and the
    // window must not be cut to that rate's.
    let mut auto = cruising_at_96(None, HEADROOM);
    let floor = auto.window;
    auto.window = 3.0 * floor;
    auto.history.push_back((ms(1_500), auto.window));
    auto.state = State::StepAside;
    auto.last_loss = ms(1_500);
    auto.aside_bdps = 2.5;
    let r = reading(7_000, 53.0, 40);
    let d = auto.steer(&r);
    assert!(
        d.record.unwrap().reason.contains("losses stopped"),
        "{:?}",
        d.actions
    );
    assert_eq!(auto.state, State::Cruise);
    assert!(
        auto.window >= floor,
        "cut to {:.0}, below {floor:.0}, the window of the best rate",
        auto.window
    );
}

/// A receiver alone at the start of its first ramp on a 40 ms path, its
/// window `window`, that carried `carried` bytes in the last min-RTT.
fn ramping(window: f64, carried: f64) -> Auto {
    let mut auto = Auto::new(ctx(Role::Receiver, Peer::Other));
    auto.window = window;
    auto.carried = carried;
    auto
}

/// The window after one RTT's growth of the first ramp (one sample 40 ms
/// after the last step), no queue.
fn one_rtt_of_ramp(auto: &mut Auto) -> f64 {
    auto.first_ramp_alone(&reading(40, 1.0, 40), RAMP_FACTOR_ALONE);
    auto.window
}

#[test]
fn the_first_ramp_leaves_a_slow_start_twice_what_arrived() {
    // It starts above the 64 KiB any TCP first advertises: slow start's
    // fifth round (232 kB from ten segments) fits.
    let auto = Auto::new(ctx(Role::Receiver, Peer::Other));
    assert!(auto.first_ramp());
    assert!(auto.window >= 256.0 * 1024.0, "{:.0}", auto.window);
    let ramp = |window: f64, carried: f64| one_rtt_of_ramp(&mut ramping(window, carried));
    // 240 kB arrived in the last RTT: the sender's next window is 480 kB,
    // and the ramp leaves it that, more than x1.75 of the window.
    let window = ramp(256e3, 240e3);
    assert!((window - 480e3).abs() < 1e3, "{window:.0}");
    // A burst that counted more than the window: no faster than x2.
    let window = ramp(256e3, 400e3);
    assert!((window - 512e3).abs() < 1e3, "{window:.0}");
    // Less arrived than the window held: x1.75, as before.
    let window = ramp(256e3, 150e3);
    assert!((window - 448e3).abs() < 1e3, "{window:.0}");
    // Far less: no more than four times what arrived, and never below
    // the window it has.
    let window = ramp(256e3, 100e3);
    assert!((window - 400e3).abs() < 1e3, "{window:.0}");
    let window = ramp(256e3, 50e3);
    assert!((window - 256e3).abs() < 1e3, "{window:.0}");
    // The flow does not fill the window (of two RTTs ago): it waits.
    let mut auto = ramping(256e3, 240e3);
    let mut r = reading(40, 1.0, 40);
    r.limited = false;
    auto.first_ramp_alone(&r, RAMP_FACTOR_ALONE);
    assert_eq!(auto.window, 256e3);
}

#[test]
fn a_ramp_behind_a_bound_sender_leads_what_arrives_by_no_more_than_its_growth() {
    // After the path changed the sender is in flight: what arrives is the
    // window of an RTT before. Following it at x1.5 per RTT, the window is
    // not held back ...
    let again = |window: f64, carried: f64| {
        let mut auto = ramping(window, carried);
        auto.first_ramp_alone(&reading(40, 1.0, 40), RAMP_FACTOR);
        auto.window
    };
    let window = again(1e6, 0.97e6);
    assert!((window - 1.5e6).abs() < 1e3, "{window:.0}");
    // ... until the flow stops following it, the path full: 1.6 x what
    // arrived, where the first ramp would go on to four times.
    let window = again(3e6, 2.4e6);
    assert!((window - 3.84e6).abs() < 1e3, "{window:.0}");
    let window = again(4e6, 2.4e6);
    assert_eq!(window, 4e6);
    // So does the first ramp once it has held at a queue: its sender is
    // bound and in flight. Before that, it follows a slow start.
    let first = |held: bool| {
        let mut auto = ramping(3e6, 2.4e6);
        auto.ramp_held = held;
        one_rtt_of_ramp(&mut auto)
    };
    let window = first(true);
    assert!((window - 3.84e6).abs() < 1e3, "{window:.0}");
    let window = first(false);
    assert!((window - 5.25e6).abs() < 1e3, "{window:.0}");
}

/// On 200 Mbit/s x 100 ms with the window bound, the first ramp holds at
/// an RTT of +6% (150 kB queued) and ramps on at +4%, which the sender's
/// slow-start bursts show long before the window binds.
#[test]
fn the_first_ramp_holds_at_a_queue_of_a_twentieth_of_min_rtt() {
    let at = |at_ms: u64, rtt_us: u64| Reading {
        rt_prop: ms(100),
        rtt: Duration::from_micros(rtt_us),
        inflated: false,
        inflated_settled: false,
        no_queue: false,
        empty: false,
        ..reading(at_ms, 100.0, 40)
    };
    let mut auto = ramping(2e6, 1.25e6);
    auto.bound = true;
    let d = auto.first_ramp_alone(&at(1_000, 104_000), RAMP_FACTOR_ALONE);
    assert!(auto.hold.is_none(), "{:?}", d.record);
    assert!(auto.window > 2e6, "{:.0}", auto.window);
    let window = auto.window;
    let d = auto.first_ramp_alone(&at(1_013, 106_000), RAMP_FACTOR_ALONE);
    assert!(
        d.record
            .unwrap()
            .reason
            .contains("a queue: hold the window"),
        "{:?}",
        d.actions
    );
    assert!(auto.hold.is_some());
    assert_eq!(auto.window, window);
}

/// A slow start read from the receiver's byte counter on a long path: each
/// round arrives as one train, twice the one before (from vsftpd on
/// 200 Mbit/s x 300 ms: 58, 116 and 232 kB, each train within 100 ms).
#[test]
fn the_first_ramp_starts_with_the_round_that_fills_the_window() {
    let mut auto = Auto::new(ctx(Role::Receiver, Peer::Other));
    let start = auto.window;
    // The window of 256 KiB since the start (as if set by the first
    // sample).
    auto.history.push_back((Duration::ZERO, start));
    let (mut rcvbuf, mut clamp) = (0_u64, 0_u32);
    let mut first_step = None;
    for at in (25..=3_600).step_by(25) {
        // Trains of 14 to 232 kB, doubling; the window of 256 KiB
        // (advertised 277,504 bytes) holds back the one after 1.3 s.
        let bytes: u64 = match at {
            ..100 => 0,
            100..400 => 14_480,
            400..700 => 43_440,
            700..1_000 => 101_360,
            1_000..1_300 => 217_200,
            1_300..1_600 => 448_880,
            _ => 726_384,
        };
        let d = auto.on_event(&Event::Sample(Sample {
            at: ms(at),
            bytes,
            tcp_info: Some(TcpInfoSample {
                rcv_rtt_us: 300_000,
                rcv_wnd_bytes: Some(277_504),
                ..TcpInfoSample::default()
            }),
            buffers: Some(BufferReading {
                rcvbuf_bytes: rcvbuf,
                sndbuf_bytes: 0,
                window_clamp_bytes: clamp,
            }),
        }));
        for a in &d.actions {
            match a {
                Action::SetRcvBuf(b) => rcvbuf = 2 * b.get(),
                Action::SetWindowClamp(b) => clamp = u32::try_from(b.get()).unwrap(),
                _ => {}
            }
        }
        if first_step.is_none() && auto.window > start {
            first_step = Some(at);
        }
    }
    // The round of 1.3 s (231,680 bytes) fills 0.88 of the window. Over
    // two RTTs the goodput is 174 kB a round, 3/4 of the last, and reads
    // "not limited" until the next round has arrived too, at 1.6 s: one
    // round late.
    assert_eq!(first_step, Some(1_300), "window {:.0}", auto.window);
}

#[test]
fn the_first_ramp_keeps_less_memory_beyond_its_window() {
    // Memory (`SO_RCVBUF`, before Linux doubles it) per byte of window: in
    // the first ramp, and steering the sender after it.
    fn memory_per_window(auto: &mut Auto) -> f64 {
        let d = auto.retarget(ms(1_000), 2.0 * auto.window, String::new());
        let (mut rcvbuf, mut clamp) = (None, None);
        for a in &d.actions {
            match a {
                Action::SetRcvBuf(b) => rcvbuf = Some(b.get() as f64),
                Action::SetWindowClamp(w) => clamp = Some(w.get() as f64),
                _ => {}
            }
        }
        rcvbuf.unwrap() / clamp.unwrap()
    }
    let mut auto = ramping(256e3, 0.0);
    let ramp = memory_per_window(&mut auto);
    auto.state = State::Cruise;
    let steer = memory_per_window(&mut auto);
    // 1 + 1/8 against 1 + 1/2 of the window's need.
    assert!(
        (steer / ramp - 1.5 / 1.125).abs() < 0.01,
        "ramp {ramp:.3}, steering {steer:.3}"
    );
}

/// Cruising at 96 Mbit/s on a 40 ms path that once queued 40 ms at that
/// rate (480 kB, one BDP, the RTT at 80 ms).
fn cruising_after_a_bdp_queue() -> Auto {
    let mut auto = cruising_at_96(None, HEADROOM);
    auto.deepest_queue = 0.040 * 96e6 / 8.0;
    auto.deepest_rtt = ms(80);
    auto
}

/// The reason for a loss at `mbit` Mbit/s with the RTT at `rtt_ms`, after
/// [`cruising_after_a_bdp_queue`].
fn loss_after_a_bdp_queue(mbit: f64, rtt_ms: u64) -> String {
    let mut auto = cruising_after_a_bdp_queue();
    let reason = auto.on_loss(&reading(2_000, mbit, rtt_ms)).record;
    reason.map(|r| r.reason).unwrap_or_default()
}

#[test]
fn a_loss_with_a_queue_under_half_the_deepest_overflowed_nothing() {
    // A loss at +30% (156 kB at 104 Mbit/s: bbr's own queue, say) did not
    // overflow the path's queue, whatever the inflated RTT reads. The
    // path's: the window rides out the recovery.
    let mut auto = cruising_after_a_bdp_queue();
    let before = auto.window;
    let r = reading(2_000, 104.0, 52);
    assert!(r.inflated);
    let reason = auto.on_loss(&r).record.unwrap().reason;
    assert!(reason.contains("the path's"), "{reason}");
    assert!(auto.window >= 2.0 * before, "{:.0}", auto.window);
    // At +75% (312 kB) it may have overflowed it: the window is cut.
    let reason = loss_after_a_bdp_queue(104.0, 70);
    assert!(reason.contains("the queue overflowed"), "{reason}");
    // At +125% at 20 Mbit/s (125 kB by the bytes, the rate not caught up
    // with a slower path) the RTT is beyond any it showed: it may be.
    let reason = loss_after_a_bdp_queue(20.0, 90);
    assert!(!reason.contains("the path's"), "{reason}");
}

#[test]
fn behind_bbr_with_random_loss_the_kernels_goodput() {
    // A plain server whose kernel runs bbr: it paces itself, keeps up to
    // two BDPs in flight when the window lets it (its own queue stands)
    // and takes no random loss for congestion.
    let (runs, met) = behind_bbr_with_random_loss(Role::Receiver);
    let texts: Vec<_> = runs
        .iter()
        .map(|(auto, kernel)| {
            format!(
                "auto {:.1} Mbit/s, peak rcvbuf {:.0}; kernel {:.1} Mbit/s, peak rcvbuf {:.0}",
                mbps(auto.goodput),
                auto.peak_rcvbuf,
                mbps(kernel.goodput),
                kernel.peak_rcvbuf
            )
        })
        .collect();
    assert!(met, "{texts:#?}");
    for ((auto, kernel), text) in runs.iter().zip(&texts) {
        assert!(auto.goodput >= 0.9 * kernel.goodput, "{text}");
    }
}

#[test]
fn a_ramp_that_went_on_after_a_loss_ends_when_the_flow_stops_filling_the_window() {
    // A loss with no queue in the first ramp reads as the path's: the
    // ramp goes on while the flow fills the window.
    let mut auto = ramping(1e6, 0.5e6);
    auto.bound = true;
    assert!(auto.first_ramp());
    let d = auto.first_ramp_loss_alone(&reading(1_000, 100.0, 40));
    assert!(d.record.unwrap().reason.contains("ramp on"));
    assert!(auto.first_ramp());
    let idle = |at_ms| {
        let mut r = reading(at_ms, 50.0, 40);
        r.limited = false;
        r
    };
    // Not filled for three RTTs, then filled: the ramp goes on.
    for at_ms in (1_040..=1_120).step_by(40) {
        auto.first_ramp_alone(&idle(at_ms), RAMP_FACTOR_ALONE);
    }
    assert!(auto.first_ramp());
    auto.first_ramp_alone(&reading(1_150, 100.0, 40), RAMP_FACTOR_ALONE);
    assert!(auto.first_ramp());
    // A loss-based sender left its slow start at the loss: four RTTs
    // with the window not filled, and the ramp is over; the window stays.
    let window = auto.window;
    for at_ms in (1_190..=1_270).step_by(40) {
        auto.first_ramp_alone(&idle(at_ms), RAMP_FACTOR_ALONE);
    }
    assert!(auto.first_ramp());
    let d = auto.first_ramp_alone(&idle(1_310), RAMP_FACTOR_ALONE);
    assert!(
        d.record
            .unwrap()
            .reason
            .contains("the sender's slow start is over"),
        "{:?}",
        d.actions
    );
    assert!(!auto.first_ramp());
    assert_eq!(auto.window, window);
    // With no such loss, a flow that does not fill the window (its sender
    // slower than the path) leaves the ramp where it is.
    let mut auto = ramping(1e6, 0.5e6);
    auto.bound = true;
    for at_ms in (1_000..=3_000).step_by(40) {
        auto.first_ramp_alone(&idle(at_ms), RAMP_FACTOR_ALONE);
    }
    assert!(auto.first_ramp());
}
