//! The streams' window as one flow: rounds on a virtual clock.

#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::*;
use crate::tests::{ctx, ms, rx_sample};
use crate::{Peer, Role};

const RTT: Duration = Duration::from_millis(100);

/// Four streams that each moved `per_stream` bytes by `at_ms`.
fn report_all(a: &mut Aggregate, ids: &[usize], per_stream: u64) {
    for &id in ids {
        a.report(id, per_stream, Some(RTT), Some(RTT));
    }
}

#[test]
fn rounds_in_which_every_streams_rtt_stands_a_tenth_above_the_least_found_a_queue() {
    let mut a = Aggregate::new();
    let ids: Vec<usize> = (0..3).map(|_| a.join()).collect();
    assert_eq!(a.queued(), None, "no round yet");
    a.tick(ms(0));
    let mut total = 0;
    // Two rounds with two of three streams at +20 ms (the third is not:
    // its receiver's delayed ACKs, not a queue, held the others), then
    // two with all three.
    for (round, late) in [(1u64, 2usize), (2, 2), (3, 3), (4, 3)] {
        total += 300_000;
        for (i, &id) in ids.iter().enumerate() {
            let now = if i < late { ms(120) } else { ms(100) };
            a.report(id, total / 3, Some(RTT), Some(now));
        }
        a.tick(ms(100 * round + 20 * u64::from(late > 1)));
    }
    assert_eq!(a.queued(), Some(0.5));
    assert_eq!(a.queued(), None, "asked: counted again from zero");
}

#[test]
fn while_the_goodput_doubles_the_window_is_one_and_a_half_times_the_last_round() {
    let mut a = Aggregate::new();
    let ids: Vec<usize> = (0..4).map(|_| a.join()).collect();
    assert_eq!(a.share(), None, "nothing before the first round");
    assert_eq!(a.tick(ms(0)), None);
    // Slow start: 100 kB, 200 kB, 400 kB per round over all streams.
    let mut total = 0;
    for (round, bytes) in [100_000u64, 200_000, 400_000].into_iter().enumerate() {
        total += bytes;
        report_all(&mut a, &ids, total / 4);
        let r = a.tick(ms(100 * (round as u64 + 1))).unwrap();
        assert!(r.growing);
        assert_eq!(r.window, 3 * bytes / 2, "round {round}");
    }
    // Split evenly: 600 kB over four streams.
    assert_eq!(a.share(), Some(Bytes(150_000)));
}

#[test]
fn a_full_bottleneck_holds_the_window_a_quarter_above_the_best_round_and_a_loss_does_not_cut_it() {
    let mut a = Aggregate::new();
    let ids: Vec<usize> = (0..8).map(|_| a.join()).collect();
    a.tick(ms(0));
    // 2.4 MB a round (192 Mbit/s x 100 ms) from the first round on.
    let mut total = 0;
    let mut windows = Vec::new();
    for round in 1..=6u64 {
        total += 2_400_000;
        report_all(&mut a, &ids, total / 8);
        windows.push(a.tick(ms(100 * round)).unwrap().window);
    }
    // Growth once (from nothing), then flat: 1.5 x 2.4 MB held while not
    // sure, then 1.25 x 2.4 MB after three flat rounds.
    assert_eq!(windows[..3], [3_600_000; 3]);
    assert_eq!(windows[3..], [3_000_000; 3]);
    // One stream's loss: the round moves a third less. The window stays.
    total += 1_600_000;
    report_all(&mut a, &ids, total / 8);
    let r = a.tick(ms(700)).unwrap();
    assert!(!r.growing);
    assert_eq!(r.window, 3_000_000);
    assert_eq!(a.share(), Some(Bytes(375_000)));
}

#[test]
fn growth_after_the_bottleneck_seemed_full_opens_the_window_again() {
    let mut a = Aggregate::new();
    let id = a.join();
    a.tick(ms(0));
    let mut total = 0;
    for round in 1..=4u64 {
        total += 1_000_000;
        a.report(id, total, Some(RTT), Some(RTT));
        a.tick(ms(100 * round));
    }
    assert_eq!(a.share(), Some(Bytes(1_250_000)));
    // The path got faster (or more streams joined): 2 MB a round.
    total += 2_000_000;
    a.report(id, total, Some(RTT), Some(RTT));
    let r = a.tick(ms(500)).unwrap();
    assert!(r.growing);
    assert_eq!(r.window, 3_000_000);
}

#[test]
fn a_round_lasts_the_least_rtt_any_stream_saw_and_a_share_never_falls_below_the_floor() {
    let mut a = Aggregate::new();
    let (x, y) = (a.join(), a.join());
    a.report(x, 0, Some(ms(300)), None);
    a.report(y, 0, Some(ms(40)), None);
    a.tick(ms(0));
    a.report(x, 1000, None, None);
    assert_eq!(a.tick(ms(39)), None, "shorter than the least RTT");
    let r = a.tick(ms(40)).unwrap();
    // 1000 bytes in 40 ms: 25 kB/s, a window of 1.5 kB; each stream's floor.
    assert_eq!(r.window, 1_500);
    assert_eq!(a.share(), Some(FLOOR));
}

/// A stream's sample: `bytes` by `at_ms`, its receiver RTT 100 ms.
fn sample(at_ms: u64, bytes: u64) -> Event {
    rx_sample(at_ms, bytes, 100, 65_535, 131_072)
}

fn rcvbuf(d: &Decision) -> Option<u64> {
    d.actions.iter().find_map(|a| match a {
        Action::SetRcvBuf(b) => Some(b.0),
        _ => None,
    })
}

#[test]
fn each_stream_tuner_asks_for_its_part_and_only_the_first_keeps_the_clock() {
    let aggregate = Arc::new(Mutex::new(Aggregate::new()));
    let mut first = Share::new(ctx(Role::Receiver, Peer::Other), Arc::clone(&aggregate));
    let mut second = Share::new(ctx(Role::Receiver, Peer::Other), Arc::clone(&aggregate));
    assert_eq!(
        first.setup(),
        Setup::default(),
        "nothing before the handshake"
    );
    assert_eq!(rcvbuf(&first.on_event(&sample(0, 0))), None);
    // The second stream's samples never close a round.
    assert_eq!(rcvbuf(&second.on_event(&sample(150, 1_000_000))), None);
    assert!(aggregate.lock().unwrap().share().is_none());
    // The first's does: 2 MB in the round's 150 ms, 13.3 MB/s, sized for
    // the 100 ms RTT: 1.5 x 13.3 MB/s x 0.1 s = 2 MB, 1 MB a stream.
    let d = first.on_event(&sample(150, 1_000_000));
    let share = rcvbuf(&d).unwrap();
    assert_eq!(share, 1_000_000);
    assert!(d.record.unwrap().reason.contains("growing"));
    assert_eq!(
        rcvbuf(&second.on_event(&sample(160, 1_000_000))),
        Some(share)
    );
    // Unchanged (within 1/16): no system call.
    assert_eq!(rcvbuf(&second.on_event(&sample(170, 1_000_000))), None);
    assert_eq!(first.next_wakeup(), Some(ms(160)));
}

#[test]
fn a_share_is_capped_at_what_the_kernel_applies() {
    let aggregate = Arc::new(Mutex::new(Aggregate::new()));
    let mut only = Share::new(ctx(Role::Receiver, Peer::Other), Arc::clone(&aggregate));
    only.on_event(&sample(0, 0));
    // 1 GB in a round: far beyond rmem_max (32 MiB).
    let d = only.on_event(&sample(100, 1_000_000_000));
    assert_eq!(rcvbuf(&d), Some(32 << 20));
}

/// A sending stream's sample: `segs` segments of 1,448 bytes delivered
/// (acknowledged, selectively or not) by `at_ms`, its smoothed RTT
/// `rtt_ms`, least 100 ms.
fn tx_sample(at_ms: u64, segs: u32, rtt_ms: u32) -> Event {
    use crate::tcpinfo::TcpInfoSample;
    Event::Sample(crate::Sample {
        at: ms(at_ms),
        bytes: 0,
        tcp_info: Some(TcpInfoSample {
            rtt_us: rtt_ms * 1000,
            min_rtt_us: Some(100_000),
            snd_mss_bytes: 1448,
            delivered_segs: Some(segs),
            ..TcpInfoSample::default()
        }),
        buffers: None,
    })
}

#[test]
fn a_sending_stream_counts_what_was_delivered_reads_its_smoothed_rtt_and_sizes_its_send_buffer() {
    let aggregate = Arc::new(Mutex::new(Aggregate::new()));
    let mut first = Share::new(ctx(Role::Sender, Peer::Other), Arc::clone(&aggregate));
    let mut second = Share::new(ctx(Role::Sender, Peer::Other), Arc::clone(&aggregate));
    assert!(first.on_event(&tx_sample(0, 0, 100)).actions.is_empty());
    // 500 segments each in the round: 1.4 MB in 100 ms, a window of
    // 1.5 x that, half a stream. The sender's RTT (130 ms, the smoothed
    // one) is a queue: the first stream's sample closes the round.
    second.on_event(&tx_sample(100, 500, 130));
    let d = first.on_event(&tx_sample(100, 500, 130));
    let want = (1_448_000.0 * 1.5 / 2.0) as u64;
    assert_eq!(d.actions, vec![Action::SetSndBuf(Bytes(want))]);
    assert_eq!(aggregate.lock().unwrap().queued(), Some(1.0));
    assert_eq!(
        second.on_event(&tx_sample(110, 500, 130)).actions,
        vec![Action::SetSndBuf(Bytes(want))]
    );
}

#[test]
fn a_sending_stream_never_asks_for_more_than_the_kernels_send_autotuning_reaches() {
    let aggregate = Arc::new(Mutex::new(Aggregate::new()));
    let mut only = Share::new(ctx(Role::Sender, Peer::Other), Arc::clone(&aggregate));
    only.on_event(&tx_sample(0, 0, 100));
    // 1.4 GB in a round: tcp_wmem[2] is 4 MiB, stored as twice a request.
    let d = only.on_event(&tx_sample(100, 1_000_000, 100));
    assert_eq!(d.actions, vec![Action::SetSndBuf(Bytes(2 << 20))]);
}

#[test]
fn on_a_path_shorter_than_a_millisecond_the_window_is_sized_for_eight() {
    let mut a = Aggregate::new();
    let id = a.join();
    a.report(id, 0, Some(Duration::from_micros(50)), None);
    a.tick(ms(0));
    // 1 MB in 10 ms (each sample closes a round here): 100 MB/s, sized
    // for LAN_SIZING_RTT, not for 50 us.
    a.report(id, 1_000_000, None, None);
    let r = a.tick(ms(10)).unwrap();
    assert_eq!(r.window, (1.5 * 100e6 * 0.008) as u64);
}
