//! `drs` (the drsFTP paper): goodput per interval x probe RTT, the buffer raised to
//! twice that BDP whenever below it, the sender kept in step.

#![allow(clippy::unwrap_used)]

use crate::tests::harness::{Scenario, rcvbuf_of, run};
use crate::tests::{bare_sample, control_rtt, limits, ms, rcvbufs, tuner};
use crate::units::Bytes;
use crate::{Action, Event, Peer, PeerReport, Role, Settings};

#[test]
fn large_buffers_before_the_handshake_then_64_kib() {
    let setup = tuner("drs", Role::Receiver, Peer::Other).setup();
    let l = limits();
    assert_eq!(
        setup.pre_handshake,
        Settings {
            rcvbuf: Some(l.rmem_max),
            sndbuf: Some(l.wmem_max),
            window_clamp: None
        }
    );
    assert_eq!(setup.after_connect.rcvbuf, Some(Bytes(64 << 10)));
    assert_eq!(setup.after_connect.sndbuf, Some(Bytes(64 << 10)));
}

#[test]
fn the_buffer_becomes_twice_goodput_times_rtt() {
    let mut drs = tuner("drs", Role::Receiver, Peer::Other);
    assert_eq!(drs.next_wakeup(), Some(ms(0)));
    drs.on_event(&control_rtt(0, 100));
    assert!(drs.on_event(&bare_sample(0, 0)).actions.is_empty());
    assert_eq!(drs.next_wakeup(), Some(ms(1000)));
    // Not a whole interval yet: nothing.
    assert!(
        drs.on_event(&bare_sample(500, 2_000_000))
            .actions
            .is_empty()
    );
    // 5 MB in 1 s x 100 ms = 500 kB of BDP: the buffer becomes 1 MB, and
    // the peer hears of it.
    let d = drs.on_event(&bare_sample(1000, 5_000_000));
    assert_eq!(
        d.actions,
        vec![
            Action::SetRcvBuf(Bytes(1_000_000)),
            Action::TellPeer(Bytes(1_000_000))
        ]
    );
    let record = d.record.unwrap();
    assert_eq!(record.requested, Some(Bytes(1_000_000)));
    assert!(record.reason.contains("below 2 x BDP"), "{}", record.reason);
    // Slower, and never smaller: nothing.
    assert!(
        drs.on_event(&bare_sample(2000, 6_000_000))
            .actions
            .is_empty()
    );
    // A longer RTT: 4 MB/s x 300 ms x 2 = 2.4 MB.
    drs.on_event(&control_rtt(2100, 300));
    let d = drs.on_event(&bare_sample(3000, 10_000_000));
    assert_eq!(rcvbufs(&d), vec![2_400_000]);
}

#[test]
fn without_a_probe_the_receivers_rtt_stands_in_and_without_any_it_waits() {
    let mut drs = tuner("drs:interval=500ms", Role::Receiver, Peer::Other);
    drs.on_event(&bare_sample(0, 0));
    let d = drs.on_event(&bare_sample(500, 1_000_000));
    assert!(d.actions.is_empty());
    assert!(d.record.unwrap().reason.contains("no RTT"));
    let with_rtt = crate::tests::rx_sample(1000, 2_000_000, 50, 65_535, 131_072);
    // 2 MB/s x 50 ms x 2 = 200 kB.
    assert_eq!(rcvbufs(&drs.on_event(&with_rtt)), vec![200_000]);
}

#[test]
fn the_buffer_is_capped_at_rmem_max() {
    let mut drs = tuner("drs", Role::Receiver, Peer::Other);
    drs.on_event(&control_rtt(0, 500));
    drs.on_event(&bare_sample(0, 0));
    let d = drs.on_event(&bare_sample(1000, 1 << 30));
    assert_eq!(rcvbufs(&d), vec![limits().rmem_max.get()]);
    assert!(d.record.unwrap().reason.contains("capped at rmem_max"));
}

#[test]
fn the_sender_follows_the_receivers_sizes() {
    let mut drs = tuner("drs", Role::Sender, Peer::Other);
    assert_eq!(drs.next_wakeup(), None);
    let told = |at_ms, size| {
        Event::Peer(PeerReport {
            at: ms(at_ms),
            info: None,
            size: Some(Bytes(size)),
        })
    };
    assert_eq!(
        drs.on_event(&told(10, 3_000_000)).actions,
        vec![Action::SetSndBuf(Bytes(3_000_000))]
    );
    assert!(drs.on_event(&told(20, 3_000_000)).actions.is_empty());
    assert_eq!(
        drs.on_event(&told(30, 1 << 40)).record.unwrap().reason,
        "peer report ignored: peer size 1099511627776 is above the largest buffer (2147483647)"
    );
    let d = drs.on_event(&told(40, 1 << 30));
    assert_eq!(d.actions, vec![Action::SetSndBuf(limits().wmem_max)]);
    assert!(
        drs.on_event(&told(50, 0))
            .record
            .unwrap()
            .reason
            .contains("size 0")
    );
}

#[test]
fn on_a_long_fat_path_drs_reaches_twice_the_bdp_and_beats_stock() {
    let scenario = Scenario::benchmark("drs", 1.0);
    let bdp = scenario.path.bdp();
    let o = run(&scenario);
    let last = o.last_receiver_action(rcvbuf_of).unwrap().get() as f64;
    // The probes' RTT includes the queue drs's own window fills (here up
    // to a BDP of it), so "twice the BDP" lands between 2 and 4 BDPs.
    assert!(
        (1.8 * bdp..4.2 * bdp).contains(&last),
        "last buffer {last:.0} for a BDP of {bdp:.0}"
    );
    let stock = run(&Scenario::benchmark("stock", 1.0));
    assert!(
        o.goodput > 6.0 * stock.goodput,
        "drs {:.1} vs stock {:.1} Mbit/s",
        o.goodput * 8e-6,
        stock.goodput * 8e-6
    );
    // The sender's buffer followed the receiver's.
    let sender_last = o
        .log
        .iter()
        .filter(|l| l.role == Role::Sender)
        .flat_map(|l| l.actions.iter())
        .filter_map(|a| match a {
            Action::SetSndBuf(b) => Some(b.get() as f64),
            _ => None,
        })
        .next_back();
    assert_eq!(sender_last, Some(last));
    // One decision per interval at most.
    let times: Vec<f64> = o
        .log
        .iter()
        .filter(|l| l.role == Role::Receiver)
        .map(|l| l.at)
        .collect();
    assert!(times.windows(2).all(|w| w[1] - w[0] >= 0.999), "{times:?}");
}

mod properties {
    use proptest::prelude::*;

    use super::*;

    /// The buffer `drs` asks for after one interval of `bytes` at `rtt_ms`.
    fn first_size(bytes: u64, rtt_ms: u64) -> Option<u64> {
        let mut drs = tuner("drs", Role::Receiver, Peer::Other);
        drs.on_event(&control_rtt(0, rtt_ms));
        drs.on_event(&bare_sample(0, 0));
        rcvbufs(&drs.on_event(&bare_sample(1000, bytes)))
            .first()
            .copied()
    }

    proptest! {
        /// A longer RTT at the same goodput never asks for less, and no
        /// size passes rmem_max.
        #[test]
        fn a_longer_rtt_never_asks_for_a_smaller_buffer(
            bytes in 1u64..2_000_000_000,
            rtt_ms in 1u64..1000,
            longer_by in 1u64..1000,
        ) {
            let max = limits().rmem_max.get();
            let short = first_size(bytes, rtt_ms);
            let long = first_size(bytes, rtt_ms + longer_by);
            for size in [short, long].into_iter().flatten() {
                prop_assert!(size <= max, "{size} > rmem_max {max}");
            }
            // Asked at the shorter RTT: asked at the longer one too, no less.
            if let Some(short) = short {
                prop_assert!(long.is_some_and(|long| long >= short), "{short} then {long:?}");
            }
        }
    }
}
