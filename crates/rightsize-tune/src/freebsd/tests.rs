//! `freebsd` (FreeBSD's autosizing patch): fixed steps up to a limit, per RTT on the
//! receiver, whenever the send buffer is what holds data back on the
//! sender.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use crate::bdp::max_rate_for_window;
use crate::tcpinfo::TcpInfoSample;
use crate::tests::harness::{Scenario, rcvbuf_of, run};
use crate::tests::{bare_sample, control_rtt, ms, rcvbufs, tuner};
use crate::units::Bytes;
use crate::{Action, Event, FreeBsdOptions, Peer, Role, Sample};

#[test]
fn freebsd_patch_rates_of_the_default_and_the_autosized_buffers() {
    let at = |ms: u64| Duration::from_millis(ms);
    // "32K ... slightly more than 2Mbit/s on a 100ms RTT"; with auto sizing
    // (256K) "20Mbit/s at 100ms and 10Mbit/s at 200ms".
    assert_eq!(
        max_rate_for_window(Bytes(32 << 10), at(100)).human(),
        "2.62 Mbit/s"
    );
    let max = FreeBsdOptions::default().sendbuf_max;
    assert_eq!(max_rate_for_window(max, at(100)).human(), "20.97 Mbit/s");
    assert_eq!(max_rate_for_window(max, at(200)).human(), "10.49 Mbit/s");
}

#[test]
fn the_receive_buffer_grows_by_steps_while_7_8_of_it_arrives_per_rtt() {
    let mut bsd = tuner("freebsd", Role::Receiver, Peer::Other);
    let setup = bsd.setup();
    assert_eq!(setup.pre_handshake.rcvbuf, Some(Bytes(256 << 10)));
    assert_eq!(setup.after_connect.rcvbuf, Some(Bytes(64 << 10)));
    bsd.on_event(&control_rtt(0, 100));
    bsd.on_event(&bare_sample(0, 0));
    // 56 KiB in an RTT is 7/8 of 64 KiB exactly: not more, no growth.
    assert!(bsd.on_event(&bare_sample(100, 56 << 10)).actions.is_empty());
    let mut bytes = 56 << 10;
    let mut sizes = Vec::new();
    for i in 2..30 {
        bytes += 300 << 10;
        sizes.extend(rcvbufs(&bsd.on_event(&bare_sample(i * 100, bytes))));
    }
    let expected: Vec<u64> = (5..=16).map(|k| k * (16 << 10)).collect();
    assert_eq!(sizes, expected, "16 KiB steps from 64 KiB to 256 KiB");
    assert_eq!(bsd.state(), "at-max");
    assert_eq!(bsd.next_wakeup(), None);
}

#[test]
fn knobs_change_the_step_the_limit_and_turn_it_off() {
    let mut bsd = tuner(
        "freebsd:recvbuf_inc=64K,recvbuf_max=1M",
        Role::Receiver,
        Peer::Other,
    );
    bsd.on_event(&control_rtt(0, 50));
    bsd.on_event(&bare_sample(0, 0));
    assert_eq!(
        rcvbufs(&bsd.on_event(&bare_sample(50, 1 << 20))),
        vec![128 << 10]
    );
    let mut off = tuner("freebsd:recvbuf_auto=0", Role::Receiver, Peer::Other);
    assert_eq!(off.setup().pre_handshake.rcvbuf, Some(Bytes(64 << 10)));
    assert_eq!(off.setup().after_connect.rcvbuf, None);
    assert_eq!(off.next_wakeup(), None);
    off.on_event(&bare_sample(0, 0));
    assert!(off.on_event(&bare_sample(100, 1 << 20)).actions.is_empty());
}

fn sender_sample(
    at_ms: u64,
    snd_wnd: u32,
    unacked_segs: u32,
    notsent: u32,
    cwnd_segs: u32,
) -> Event {
    Event::Sample(Sample {
        at: ms(at_ms),
        bytes: 0,
        tcp_info: Some(TcpInfoSample {
            rtt_us: 100_000,
            snd_mss_bytes: 1000,
            unacked_segs,
            snd_cwnd_segs: cwnd_segs,
            snd_wnd_bytes: Some(snd_wnd),
            notsent_bytes: Some(notsent),
            ..TcpInfoSample::default()
        }),
        buffers: None,
    })
}

#[test]
fn the_send_buffer_grows_when_full_and_the_network_could_take_more() {
    let mut bsd = tuner("freebsd", Role::Sender, Peer::Other);
    assert_eq!(bsd.setup().pre_handshake.sndbuf, Some(Bytes(32 << 10)));
    bsd.on_event(&sender_sample(0, 1 << 20, 0, 0, 100));
    // Full (30 of 32 KiB queued), peer window and cwnd large: +8 KiB.
    let d = bsd.on_event(&sender_sample(13, 1 << 20, 30, 1000, 100));
    assert_eq!(d.actions, vec![Action::SetSndBuf(Bytes(40 << 10))]);
    // The peer's window is smaller than the buffer / 1.25: no.
    assert!(
        bsd.on_event(&sender_sample(26, 30_000, 38, 1000, 100))
            .actions
            .is_empty()
    );
    // Not full: no.
    assert!(
        bsd.on_event(&sender_sample(39, 1 << 20, 10, 0, 100))
            .actions
            .is_empty()
    );
    // Full but the congestion window could not send the unsent part: no.
    assert!(
        bsd.on_event(&sender_sample(52, 1 << 20, 30, 20_000, 10))
            .actions
            .is_empty()
    );
    assert_eq!(
        bsd.on_event(&sender_sample(65, 1 << 20, 40, 0, 100))
            .actions,
        vec![Action::SetSndBuf(Bytes(48 << 10))]
    );
}

#[test]
fn a_sender_without_the_fields_says_so_once() {
    let mut bsd = tuner("freebsd", Role::Sender, Peer::Other);
    let old = |at| {
        Event::Sample(Sample {
            at: ms(at),
            bytes: 0,
            tcp_info: Some(TcpInfoSample::default()),
            buffers: None,
        })
    };
    bsd.on_event(&old(0));
    let first = bsd.on_event(&old(200));
    assert!(first.record.unwrap().reason.contains("snd_wnd"));
    assert_eq!(bsd.on_event(&old(400)).record, None);
}

#[test]
fn on_a_long_fat_path_freebsd_stops_at_its_limit() {
    let o = run(&Scenario::benchmark("freebsd", 1.0));
    assert_eq!(o.receiver_state, "at-max");
    assert_eq!(o.last_receiver_action(rcvbuf_of), Some(Bytes(256 << 10)));
    // 512 KiB of buffer, 0.89 of it window: about 37 Mbit/s at 100 ms.
    let mbps = o.goodput * 8e-6;
    assert!((25.0..38.0).contains(&mbps), "{mbps:.1} Mbit/s");
}
