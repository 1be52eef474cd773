//! The model itself, against the arithmetic it must obey: slow start
//! doubles per RTT, a window beyond the BDP stands in the queue, losses
//! shrink the window by Reno's half or CUBIC's 0.7, random loss happens at
//! its rate. The tuners' tests mean something only if these hold.

use super::{Cc, Flow, Host, MSS, Path, SocketSettings};
use crate::tests::harness::{Scenario, run};

fn path(queue_bdps: f64, loss: f64) -> Path {
    Path {
        rate_bps: 200e6,
        base_rtt: 0.1,
        queue_bytes: queue_bdps * 2.5e6,
        loss,
    }
}

/// A flow whose receive buffer is `request` (set after the handshake, so
/// that the window scale is the largest).
fn flow(path: Path, cc: Cc, request: f64) -> Flow {
    let settings = SocketSettings {
        rcvbuf: None,
        sndbuf: Some(4.0 * request),
        clamp: None,
    };
    let mut f = Flow::new(path, Host::tuned(), cc, 7, settings);
    f.set_rcvbuf(request);
    f
}

#[test]
fn a_buffer_set_before_the_handshake_caps_the_window_scale() {
    // As seen on Linux: 2 MB requested before connect() gives scale 5, a
    // window of at most 65,535 x 32 bytes, whatever the buffer later.
    let settings = SocketSettings {
        rcvbuf: Some(2e6),
        sndbuf: None,
        clamp: None,
    };
    let mut f = Flow::new(path(1.0, 0.0), Host::tuned(), Cc::Cubic, 7, settings);
    f.set_rcvbuf(16e6);
    steps(&mut f, 5.0);
    assert_eq!(f.advertised(), 65_535.0 * 32.0);
}

fn steps(f: &mut Flow, seconds: f64) {
    for _ in 0..(seconds * 1000.0).round() as u64 {
        f.step();
    }
}

#[test]
fn slow_start_doubles_per_rtt_from_ten_segments() {
    let mut f = flow(path(1.0, 0.0), Cc::Cubic, 16e6);
    let mut cwnd = Vec::new();
    for _ in 0..4 {
        steps(&mut f, 0.1);
        cwnd.push(f.cwnd / MSS);
    }
    assert_eq!(cwnd, [10.0, 20.0, 40.0, 80.0]);
}

#[test]
fn a_window_beyond_the_bdp_stands_in_the_queue() {
    // 1.5 BDPs of window: half a BDP queued, 50 ms more RTT, full rate
    // (the queue holds 2 BDPs, so that slow start's bursts do not overflow).
    let p = path(2.0, 0.0);
    let window = 1.5 * p.bdp();
    let mut f = flow(p, Cc::Cubic, window / (2.0 * 0.89));
    steps(&mut f, 10.0);
    let before = f.received;
    steps(&mut f, 1.0);
    assert!((f.received - before - p.payload_rate()).abs() < 0.01 * p.payload_rate());
    assert!((f.path_rtt() - 0.15).abs() < 0.005, "RTT {}", f.path_rtt());
    assert_eq!(f.stats.bytes_retrans, 0.0);
}

#[test]
fn losses_cut_reno_by_half_and_cubic_by_0_7() {
    for (cc, beta) in [(Cc::Reno, 0.5), (Cc::Cubic, 0.7)] {
        let mut f = flow(path(0.1, 0.0), cc, 16e6);
        let (mut before, mut after) = (0.0, 0.0);
        while after >= before {
            before = f.cwnd;
            f.step();
            after = f.cwnd;
        }
        assert!(
            (after / before - beta).abs() < 0.03,
            "{cc:?}: {before} -> {after}"
        );
    }
}

#[test]
fn random_loss_happens_at_its_rate() {
    let mut f = flow(path(1.0, 1e-3), Cc::Reno, 3e6);
    steps(&mut f, 20.0);
    let sent = f.stats.bytes_sent / MSS;
    let lost = f.stats.bytes_retrans / MSS;
    let rate = lost / sent;
    assert!((0.7e-3..1.3e-3).contains(&rate), "{lost} of {sent}: {rate}");
}

#[test]
fn the_harness_traces_what_the_flow_did() {
    let o = run(&Scenario::benchmark("static:16MiB", 1.0));
    let t = o.trace.iter().find(|t| t.at > 0.399).unwrap();
    assert_eq!((t.cwnd / MSS).round(), 80.0);
    assert!(t.inflight <= t.cwnd && t.inflight <= t.window);
    assert!(t.sndbuf >= 32e6);
    // The over-provisioned buffer overshoots into the queue and fills it.
    assert!(o.trace.iter().any(|t| t.queue_delay > 0.09));
}
