//! Flows that share one bottleneck, on the model (`harness::run_sharing`):
//! the streams of one transfer sized as one flow, connections held
//! within one buffer budget, and one server's downloads to one network
//! sized together.

use std::sync::{Arc, Mutex};

use super::harness::{Scenario, Shared, run_sharing};
use super::limits;
use crate::budget::{Budget, Budgeted, OTHER};
use crate::crowd::{Crowd, Crowded, LEAD};
use crate::streams::share::{Aggregate, Share};
use crate::units::Bytes;
use crate::{Context, Peer, Role, Tuner, TunerSpec};

fn ctx(role: Role, peer: Peer) -> Context {
    Context {
        role,
        limits: limits(),
        peer,
        congestion: crate::Congestion::WindowBased,
    }
}

/// The lossy path of the datasets benchmark: 200 Mbit/s x 100 ms, one BDP
/// of queue, 0.01% random loss, cubic; receivers tuned, kernel senders.
fn lossy() -> Scenario {
    let mut s = Scenario::against_plain(
        "kernel",
        Role::Receiver,
        Scenario::benchmark("kernel", 1.0).path,
    );
    s.path.loss = 0.0001;
    s.seconds = 20.0;
    s
}

fn bdp(s: &Scenario) -> f64 {
    s.path.rate_bps / 8.0 * s.path.base_rtt
}

fn eight_streams(s: &Scenario, share: bool) -> Shared {
    let aggregate = Arc::new(Mutex::new(Aggregate::new()));
    run_sharing(s, 8, &mut |_| {
        let rx: Box<dyn Tuner> = if share {
            Box::new(Share::new(
                ctx(Role::Receiver, Peer::Other),
                Arc::clone(&aggregate),
            ))
        } else {
            TunerSpec::Kernel.build(ctx(Role::Receiver, Peer::Other))
        };
        (rx, TunerSpec::Kernel.build(ctx(Role::Sender, Peer::Other)))
    })
}

#[test]
fn eight_streams_sized_as_one_flow_fill_a_lossy_path_with_a_third_of_the_kernels_windows() {
    let s = lossy();
    let (share, kernel) = (eight_streams(&s, true), eight_streams(&s, false));
    assert!(
        share.goodput() >= 0.95 * kernel.goodput(),
        "{} vs {} B/s",
        share.goodput(),
        kernel.goodput()
    );
    assert!(share.fairness() >= 0.9, "{}", share.fairness());
    // Together the windows stay near the path's BDP (the bottleneck plus
    // its queue hold two); the kernel's add up to ten.
    assert!(
        share.peak_window_sum <= 3.0 * bdp(&s),
        "{} BDPs",
        share.peak_window_sum / bdp(&s)
    );
    assert!(
        share.peak_window_sum <= 0.35 * kernel.peak_window_sum,
        "{} vs {}",
        share.peak_window_sum,
        kernel.peak_window_sum
    );
}

/// Sixteen connections between rightsize ends on `lfn` (200 Mbit/s x
/// 100 ms, one BDP of queue), `spec` at both ends, starting together,
/// each end's tuner within `budget` if there is one.
fn sixteen(spec: TunerSpec, budget: Option<&Arc<Mutex<Budget>>>) -> Shared {
    sixteen_from(spec, budget, None)
}

/// [`sixteen`], the senders within `crowd` if there is one (as one
/// server's downloads to one client network).
fn sixteen_from(
    spec: TunerSpec,
    budget: Option<&Arc<Mutex<Budget>>>,
    crowd: Option<&Arc<Mutex<Crowd>>>,
) -> Shared {
    let mut s = Scenario::benchmark("auto", 1.0);
    s.seconds = 20.0;
    run_sharing(&s, 16, &mut |_| {
        let rx = spec.build(ctx(Role::Receiver, Peer::Rightsize));
        let tx = spec.build(ctx(Role::Sender, Peer::Rightsize));
        let tx = match crowd {
            None => tx,
            Some(c) => Box::new(Crowded::new(tx, c)) as Box<dyn Tuner>,
        };
        match budget {
            None => (rx, tx),
            Some(b) => (
                Box::new(Budgeted::new(rx, Role::Receiver, b).unwrap_or_else(|e| panic!("{e}")))
                    as Box<dyn Tuner>,
                Box::new(Budgeted::new(tx, Role::Sender, b).unwrap_or_else(|e| panic!("{e}"))),
            ),
        }
    })
}

#[test]
fn sixteen_connections_within_a_budget_of_four_bdps_hold_it_at_every_tick_and_lose_no_goodput() {
    let s = Scenario::benchmark("auto", 1.0);
    let limit = 4.0 * bdp(&s);
    let budget = Arc::new(Mutex::new(Budget::new(Bytes(limit as u64))));
    let (held, free) = (
        sixteen(TunerSpec::Auto, Some(&budget)),
        sixteen(TunerSpec::Auto, None),
    );
    // The model has each end's main buffer; the other one is fixed.
    let others = 32.0 * 2.0 * OTHER.0 as f64;
    assert!(
        held.peak_buffers_sum + others <= limit,
        "{} of {limit}",
        held.peak_buffers_sum + others
    );
    assert!(
        held.goodput() >= 0.95 * free.goodput(),
        "{} vs {} B/s",
        held.goodput(),
        free.goodput()
    );
    assert!(held.fairness() >= 0.9, "{}", held.fairness());
}

/// Each receiver opens its window a few times ahead of what its flow
/// carries, not at once to the window the packet trains measured for the
/// whole path: sixteen flows that start together each carry a sixteenth.
/// (Opened at once to three quarters of the trains' window, the receivers'
/// buffers summed to 14.7 BDPs and the senders' to 24.6.)
#[test]
fn sixteen_auto_connections_starting_together_size_for_their_share_not_the_path() {
    let s = Scenario::benchmark("auto", 1.0);
    let (auto, kernel) = (
        sixteen(TunerSpec::Auto, None),
        sixteen(TunerSpec::Kernel, None),
    );
    let bdps = |bytes: f64| bytes / bdp(&s);
    eprintln!(
        "auto {} B/s, fairness {}, receive {} BDPs, send {}, windows {}; kernel {} B/s, fairness {}, receive {}, send {}",
        auto.goodput(),
        auto.fairness(),
        bdps(auto.peak_rcvbuf_sum),
        bdps(auto.peak_sndbuf_sum),
        bdps(auto.peak_window_sum),
        kernel.goodput(),
        kernel.fairness(),
        bdps(kernel.peak_rcvbuf_sum),
        bdps(kernel.peak_sndbuf_sum)
    );
    assert!(
        auto.goodput() >= 0.95 * kernel.goodput(),
        "{} vs {} B/s",
        auto.goodput(),
        kernel.goodput()
    );
    assert!(
        auto.peak_rcvbuf_sum <= 0.25 * kernel.peak_rcvbuf_sum,
        "receive buffers {} vs {} BDPs",
        bdps(auto.peak_rcvbuf_sum),
        bdps(kernel.peak_rcvbuf_sum)
    );
    assert!(
        auto.peak_window_sum <= 3.0 * bdp(&s),
        "windows {} BDPs",
        bdps(auto.peak_window_sum)
    );
    assert!(
        auto.peak_sndbuf_sum <= 6.0 * bdp(&s),
        "send buffers {} BDPs",
        bdps(auto.peak_sndbuf_sum)
    );
    // A window sized from its flow's rate holds that flow's share where a
    // loss left it while a queue stands: the model's flows end unevenly
    // (0.78; the kernel's 0.74 on the model), the real path's less so.
    assert!(auto.fairness() >= 0.65, "{}", auto.fairness());
}

/// One server's sixteen downloads to one client network size their send
/// buffers together ([`crate::crowd`]): their requests sum to at most
/// 1.25 x the path's bandwidth-delay product (the kernel stores twice
/// that), at the goodput of each sized alone and with even shares.
#[test]
fn sixteen_downloads_to_one_network_hold_send_buffers_for_the_path_not_sixteen_paths() {
    let s = Scenario::benchmark("auto", 1.0);
    let crowd = Arc::new(Mutex::new(Crowd::new()));
    let (together, alone) = (
        sixteen_from(TunerSpec::Auto, None, Some(&crowd)),
        sixteen(TunerSpec::Auto, None),
    );
    let bdps = |bytes: f64| bytes / bdp(&s);
    eprintln!(
        "together {} B/s, fairness {}, send {} BDPs, receive {}; alone {} B/s, fairness {}, send {}, receive {}",
        together.goodput(),
        together.fairness(),
        bdps(together.peak_sndbuf_sum),
        bdps(together.peak_rcvbuf_sum),
        alone.goodput(),
        alone.fairness(),
        bdps(alone.peak_sndbuf_sum),
        bdps(alone.peak_rcvbuf_sum),
    );
    // Stored twice: 2.5 BDPs, and a little more for the pacing the
    // receivers ask for above the bottleneck's rate and the kernel's own
    // sizing before a receiver's first report (2.86 BDPs; each sized
    // alone, 4.39).
    assert!(
        together.peak_sndbuf_sum <= 2.0 * LEAD * 1.2 * bdp(&s),
        "send buffers {} BDPs",
        bdps(together.peak_sndbuf_sum)
    );
    assert!(together.peak_sndbuf_sum <= 0.7 * alone.peak_sndbuf_sum);
    assert!(
        together.goodput() >= 0.95 * alone.goodput(),
        "{} vs {} B/s",
        together.goodput(),
        alone.goodput()
    );
    // Even shares: 0.90 (each sized alone, 0.91): no less even than each
    // sized alone, but for a hundredth or two.
    assert!(
        together.fairness() >= 0.85 && together.fairness() >= alone.fairness() - 0.02,
        "{} vs {}",
        together.fairness(),
        alone.fairness()
    );
    assert!(crowd.lock().unwrap_or_else(|e| e.into_inner()).is_empty());
}
