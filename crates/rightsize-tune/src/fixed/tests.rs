//! `stock`, `static:SIZE` and `kernel`: everything before the handshake,
//! nothing after, whatever happens.

#![allow(clippy::unwrap_used)]

use crate::tests::harness::{Scenario, run};
use crate::tests::{bare_sample, control_rtt, tuner};
use crate::units::Bytes;
use crate::{Peer, Role, Settings, Setup};

fn both(size: u64) -> Setup {
    Setup {
        pre_handshake: Settings {
            rcvbuf: Some(Bytes(size)),
            sndbuf: Some(Bytes(size)),
            window_clamp: None,
        },
        after_connect: Settings::default(),
    }
}

#[test]
fn stock_and_static_set_both_buffers_before_the_handshake() {
    for role in [Role::Receiver, Role::Sender] {
        assert_eq!(tuner("stock", role, Peer::Other).setup(), both(64 << 10));
        assert_eq!(
            tuner("static:16MiB", role, Peer::Other).setup(),
            both(16 << 20)
        );
        // Passed through, not capped: the read-back shows the clamp.
        assert_eq!(
            tuner("static:1GiB", role, Peer::Other).setup(),
            both(1 << 30)
        );
        assert_eq!(
            tuner("kernel", role, Peer::Rightsize).setup(),
            Setup::default()
        );
    }
}

#[test]
fn fixed_tuners_never_act_and_never_ask_for_samples() {
    for spec in ["stock", "static:212.5KB", "kernel"] {
        let mut t = tuner(spec, Role::Receiver, Peer::Rightsize);
        assert_eq!(t.next_wakeup(), None);
        for (i, event) in [
            control_rtt(0, 100),
            bare_sample(100, 10),
            bare_sample(50, 5),
        ]
        .iter()
        .enumerate()
        {
            assert!(t.on_event(event).actions.is_empty(), "{spec} acted on {i}");
        }
        assert_eq!(t.state(), "fixed");
    }
}

#[test]
fn stock_is_window_limited_on_a_long_fat_path() {
    // 200 Mbit/s x 100 ms: 64 KiB requested is 128 KiB of buffer and, at
    // the 0.89 window per byte of 6.18, a 117 KB window: 9.3 Mbit/s at most.
    let o = run(&Scenario::benchmark("stock", 1.0));
    let mbps = o.goodput * 8e-6;
    assert!((8.0..9.4).contains(&mbps), "stock got {mbps:.2} Mbit/s");
    assert_eq!(o.retrans_bytes, 0.0);
    assert!(o.log.is_empty(), "stock decided something: {:?}", o.log);
}

#[test]
fn each_tuner_says_which_inputs_it_reads() {
    use crate::Inputs;
    let none = Inputs::default();
    let rtt = Inputs {
        control_rtt: true,
        ..none
    };
    let cases = [
        ("stock", Role::Receiver, Peer::Rightsize, none),
        ("kernel", Role::Sender, Peer::Other, none),
        ("drs", Role::Receiver, Peer::Other, rtt),
        (
            "drs",
            Role::Sender,
            Peer::Other,
            Inputs {
                peer_messages: true,
                ..none
            },
        ),
        ("freebsd", Role::Sender, Peer::Other, rtt),
        (
            "sobas",
            Role::Receiver,
            Peer::Other,
            Inputs {
                trains: true,
                udp_probes: true,
                ..rtt
            },
        ),
        ("sobas", Role::Sender, Peer::Other, none),
        (
            "auto",
            Role::Receiver,
            Peer::Rightsize,
            Inputs {
                trains: true,
                peer_messages: true,
                ..rtt
            },
        ),
        (
            "auto",
            Role::Receiver,
            Peer::Other,
            Inputs {
                trains: true,
                ..rtt
            },
        ),
        (
            "auto",
            Role::Sender,
            Peer::Rightsize,
            Inputs {
                peer_messages: true,
                ..none
            },
        ),
    ];
    for (spec, role, peer, inputs) in cases {
        assert_eq!(
            tuner(spec, role, peer).inputs(),
            inputs,
            "{spec} {role:?} {peer:?}"
        );
    }
}
