//! The crowd's shares, and a sender's tuner held within them.

#![allow(clippy::unwrap_used)]

use std::collections::VecDeque;

use super::*;
use crate::tcpinfo::TcpInfoSample;
use crate::telemetry::BufferReading;
use crate::tests::ms;

const KB: u64 = 1_000;
const MB: u64 = 1_000_000;
/// 200 Mbit/s, bytes per second.
const PACE: Bytes = Bytes(25 * MB);
const RTT: Duration = Duration::from_millis(100);

/// A crowd of `n` connections, each paced at [`PACE`] with a minimum RTT
/// of [`RTT`] and wanting `want`.
fn crowd_of(n: usize, want: u64) -> (Crowd, Vec<u64>) {
    let mut crowd = Crowd::new();
    let ids: Vec<u64> = (0..n).map(|_| crowd.join()).collect();
    for &id in &ids {
        crowd.pace(id, PACE);
        crowd.min_rtt(id, RTT);
        crowd.want(id, Bytes(want));
    }
    (crowd, ids)
}

#[test]
fn nothing_is_cut_before_the_path_is_known_or_while_the_wants_fit() {
    let mut crowd = Crowd::new();
    let a = crowd.join();
    crowd.want(a, Bytes(50 * MB));
    assert_eq!(crowd.bdp(), None);
    assert_eq!(crowd.allowance(a), None, "no pace, no RTT: no estimate");
    crowd.pace(a, PACE);
    assert_eq!(crowd.allowance(a), None, "no RTT yet");
    crowd.min_rtt(a, RTT);
    assert_eq!(crowd.bdp(), Some(Bytes(2_500_000)));
    assert_eq!(crowd.limit(), Some(Bytes(3_125_000)));
    // One connection alone wanting more than the bound: its tuner's call.
    assert_eq!(crowd.allowance(a), None);
    // Two that fit: none cut; two that do not: both.
    crowd.want(a, Bytes(MB));
    let b = crowd.join();
    crowd.want(b, Bytes(MB));
    assert_eq!(crowd.allowance(a), None);
    assert_eq!(crowd.allowance(b), None);
    crowd.want(a, Bytes(50 * MB));
    assert_eq!(crowd.allowance(a), Some(Bytes(3_125_000 - MB)));
    assert_eq!(crowd.allowance(99), None, "not a member");
}

#[test]
fn sixteen_starting_together_share_the_path_not_sixteen_paths() {
    // Sixteen slow starts each wanting 400 KB (6.4 MB) on a 2.5 MB path.
    let (crowd, ids) = crowd_of(16, 400 * KB);
    let each = crowd.allowance(ids[0]).unwrap();
    assert_eq!(each, Bytes(3_125_000 / 16));
    let sum: u64 = ids
        .iter()
        .map(|&id| crowd.allowance(id).unwrap().get())
        .sum();
    assert!(sum <= crowd.limit().unwrap().get());
}

#[test]
fn a_connection_that_needs_less_leaves_the_rest_to_the_others() {
    let (mut crowd, ids) = crowd_of(4, 2 * MB);
    crowd.want(ids[0], Bytes(125 * KB));
    // 3.125 MB: 125 kB for the first, a third of the rest for each other.
    assert_eq!(crowd.allowance(ids[1]), Some(Bytes(1_000_000)));
    assert_eq!(crowd.allowance(ids[0]), Some(Bytes(1_000_000)));
    crowd.leave(ids[3]);
    assert_eq!(crowd.allowance(ids[1]), Some(Bytes(1_500_000)));
}

#[test]
fn the_fastest_pace_and_the_longest_rtt_make_the_estimate_and_no_one_gets_less_than_the_least() {
    let (mut crowd, ids) = crowd_of(64, MB);
    // A train measured while the others sent reads low; one RTT is longer.
    crowd.pace(ids[5], Bytes(10 * MB));
    crowd.min_rtt(ids[6], Duration::from_millis(120));
    assert_eq!(crowd.bdp(), Some(Bytes(3 * MB)));
    // 3.75 MB over 64 is below the least: each keeps the least.
    assert_eq!(crowd.allowance(ids[0]), Some(LEAST));
}

/// A tuner that answers each event with the next of its scripted
/// actions (none once they run out).
#[derive(Debug)]
struct Script(VecDeque<Vec<Action>>);

impl Tuner for Script {
    fn name(&self) -> &'static str {
        "script"
    }
    fn state(&self) -> &'static str {
        "scripted"
    }
    fn setup(&self) -> Setup {
        Setup::default()
    }
    fn inputs(&self) -> Inputs {
        Inputs::default()
    }
    fn on_event(&mut self, event: &Event) -> Decision {
        let actions = self.0.pop_front().unwrap_or_default();
        if let Event::Sample(s) = event {
            // What it saw, for the test to read back.
            let limited = s.tcp_info.as_ref().and_then(|i| i.sndbuf_limited_us);
            return Decision::act("scripted", actions, Bytes(0), format!("saw {limited:?}"));
        }
        Decision::act("scripted", actions, Bytes(0), "told")
    }
    fn next_wakeup(&self) -> Option<Duration> {
        None
    }
}

fn script(steps: Vec<Vec<Action>>) -> Box<dyn Tuner> {
    Box::new(Script(steps.into()))
}

fn sample(at_ms: u64, sndbuf_limited_ms: u64) -> Event {
    Event::Sample(Sample {
        at: ms(at_ms),
        bytes: 0,
        tcp_info: Some(TcpInfoSample {
            rtt_us: 100_000,
            min_rtt_us: Some(100_000),
            busy_time_us: Some(at_ms * 1000),
            sndbuf_limited_us: Some(sndbuf_limited_ms * 1000),
            ..TcpInfoSample::default()
        }),
        buffers: Some(BufferReading::default()),
    })
}

fn sndbuf(d: &Decision) -> Option<u64> {
    d.actions.iter().find_map(|a| match a {
        Action::SetSndBuf(b) => Some(b.0),
        _ => None,
    })
}

#[test]
fn a_send_buffer_is_cut_to_the_allowance_and_follows_it_back_up() {
    let crowd = Arc::new(Mutex::new(Crowd::new()));
    let pace_and_want = |want: u64| {
        vec![
            Action::SetMaxPacingRate(PACE),
            Action::SetSndBuf(Bytes(want)),
        ]
    };
    let mut first = Crowded::new(script(vec![vec![], pace_and_want(2 * MB)]), &crowd);
    let mut second = Crowded::new(script(vec![vec![], pace_and_want(2 * MB)]), &crowd);
    // The first sample gives the crowd an RTT; nothing is asked yet.
    assert_eq!(sndbuf(&first.on_event(&sample(10, 0))), None);
    assert_eq!(sndbuf(&second.on_event(&sample(10, 0))), None);
    // The first asks for 2 MB (the second's want counts as the least):
    // it gets it whole. The second then asks as much: 4 MB do not fit in
    // 3.125, and it gets half of them; the first comes down at its next
    // sample.
    let d = first.on_event(&sample(20, 0));
    assert_eq!(sndbuf(&d), Some(2 * MB));
    assert_eq!(
        d.actions[0],
        Action::SetMaxPacingRate(PACE),
        "the pace goes through"
    );
    let d = second.on_event(&sample(20, 0));
    assert_eq!(sndbuf(&d), Some(3_125_000 / 2));
    assert!(
        d.record
            .unwrap()
            .reason
            .contains("with the other connections")
    );
    assert!(
        first.next_wakeup().unwrap() <= ms(45),
        "sampled to follow its share"
    );
    let d = first.on_event(&sample(45, 0));
    assert_eq!(sndbuf(&d), Some(3_125_000 / 2));
    assert!(
        d.record
            .unwrap()
            .reason
            .contains("2 connections to this network share its path")
    );
    // Held below its want, the sender was stopped by its buffer for 20 ms:
    // not the tuner's buffer's doing, so the tuner does not see it.
    let d = first.on_event(&sample(70, 20));
    assert_eq!(d.record.unwrap().reason, "saw Some(0)");
    // The second one ends: the first goes back to its want.
    drop(second);
    let d = first.on_event(&sample(95, 20));
    assert_eq!(sndbuf(&d), Some(2 * MB));
    assert_eq!(crowd.lock().unwrap().len(), 1);
    // Its want met, the time counts again.
    let d = first.on_event(&sample(120, 30));
    assert_eq!(d.record.unwrap().reason, "saw Some(10000)");
    assert_eq!(first.next_wakeup(), None, "alone, the tuner's own schedule");
    drop(first);
    assert!(crowd.lock().unwrap().is_empty());
}
