//! The driver against a fake kernel, and the schedule, in virtual time.

#![allow(clippy::unwrap_used)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::*;
use crate::telemetry::BufferReading;
use crate::units::Bytes;
use crate::{Inputs, PeerReport, Setup};

const MS: Duration = Duration::from_millis(1);
/// Loopback's MSS, and so a floor of 261,932 bytes.
const MSS: u32 = 65_483;
const FLOOR: u64 = 4 * MSS as u64;

/// A tuner that answers each event with the next scripted decision and
/// remembers what it was fed.
#[derive(Debug)]
struct Scripted {
    after_connect: Settings,
    inputs: Inputs,
    decisions: VecDeque<Decision>,
    fed: Arc<Mutex<Vec<&'static str>>>,
}

impl Scripted {
    fn new(decisions: Vec<Decision>) -> (Self, Arc<Mutex<Vec<&'static str>>>) {
        let fed = Arc::new(Mutex::new(Vec::new()));
        let tuner = Scripted {
            after_connect: Settings::default(),
            inputs: Inputs::default(),
            decisions: decisions.into(),
            fed: Arc::clone(&fed),
        };
        (tuner, fed)
    }
}

impl Tuner for Scripted {
    fn name(&self) -> &'static str {
        "scripted"
    }

    fn state(&self) -> &'static str {
        "running"
    }

    fn setup(&self) -> Setup {
        Setup {
            pre_handshake: Settings::default(),
            after_connect: self.after_connect,
        }
    }

    fn inputs(&self) -> Inputs {
        self.inputs
    }

    fn on_event(&mut self, event: &Event) -> Decision {
        self.fed.lock().unwrap().push(event_name(event));
        self.decisions.pop_front().unwrap_or_default()
    }

    fn next_wakeup(&self) -> Option<Duration> {
        Some(20 * MS)
    }
}

/// Linux as far as the driver can tell: buffers read back doubled, the
/// clamp and the pacing rate as set; every request is logged.
#[derive(Debug, Default)]
struct Kernel {
    ops: Vec<SocketOp>,
    /// `TCP_INFO` cannot be read.
    no_tcp_info: bool,
    /// `SO_RCVBUF` fails.
    rcvbuf_fails: bool,
    /// The control connection's smoothed RTT, µs.
    control_rtt_us: u32,
}

impl Kernel {
    fn execute(&mut self, op: SocketOp) -> Reply {
        self.ops.push(op);
        match op {
            SocketOp::SetRcvBuf { .. } if self.rcvbuf_fails => {
                Reply::Failed("setsockopt(SO_RCVBUF): EPERM".into())
            }
            SocketOp::SetRcvBuf { bytes } | SocketOp::SetSndBuf { bytes } => Reply::Applied {
                bytes: 2 * bytes,
                clamped_by: None,
            },
            SocketOp::SetWindowClamp { bytes } => Reply::Applied {
                bytes,
                clamped_by: None,
            },
            SocketOp::SetMaxPacingRate { bytes_per_second } => Reply::Applied {
                bytes: bytes_per_second,
                clamped_by: None,
            },
            SocketOp::TellPeer { .. } | SocketOp::TellPeerPace { .. } => Reply::Told,
            SocketOp::ReadTcpInfo { socket } => {
                Reply::TcpInfo((!self.no_tcp_info).then(|| TcpInfoSample {
                    snd_mss_bytes: MSS,
                    rcv_mss_bytes: 536,
                    rtt_us: match socket {
                        Conn::Data => 40_000,
                        Conn::Control => self.control_rtt_us,
                    },
                    ..TcpInfoSample::default()
                }))
            }
            SocketOp::ReadBuffers => Reply::Buffers(Some(BufferReading::default())),
        }
    }
}

/// Polls `driver` at `now` until it is idle, carrying out every request on
/// `kernel`; the lines it wrote.
fn drive(driver: &mut Driver, kernel: &mut Kernel, now: Duration) -> Vec<DecisionLine> {
    let mut lines = Vec::new();
    loop {
        match driver.poll(now) {
            Step::Op(op) => driver.reply(kernel.execute(op)),
            Step::Line(line) => lines.push(line),
            Step::Idle => return lines,
        }
    }
}

fn sample(at: Duration) -> Sample {
    Sample {
        at,
        bytes: 0,
        tcp_info: None,
        buffers: None,
    }
}

fn act(actions: Vec<Action>) -> Decision {
    Decision::act("running", actions, Bytes(1), "scripted")
}

fn driver(tuner: Scripted, links: Links) -> Driver {
    Driver::new(Box::new(tuner), links)
}

fn peer() -> Links {
    Links {
        peer: true,
        ..Links::default()
    }
}

#[test]
fn setup_sets_rcvbuf_sndbuf_then_clamp_each_raised_to_four_segments() {
    let (mut tuner, _) = Scripted::new(Vec::new());
    tuner.after_connect = Settings {
        rcvbuf: Some(Bytes(48_000)),
        sndbuf: Some(Bytes(10_000)),
        window_clamp: Some(Bytes(500_000)),
    };
    let mut d = driver(tuner, Links::default());
    let mut kernel = Kernel::default();
    d.setup();
    let lines = drive(&mut d, &mut kernel, 3 * MS);
    // The tuner's own clamp: no lift after the SO_RCVBUF raise.
    assert_eq!(
        kernel.ops,
        vec![
            SocketOp::ReadTcpInfo { socket: Conn::Data },
            SocketOp::SetRcvBuf { bytes: FLOOR },
            SocketOp::SetSndBuf { bytes: FLOOR },
            SocketOp::SetWindowClamp { bytes: 500_000 },
            SocketOp::ReadBuffers,
        ]
    );
    assert_eq!(lines.len(), 1);
    let line = &lines[0];
    assert_eq!(
        (line.event.as_str(), line.tuner.as_str()),
        ("setup", "scripted")
    );
    assert_eq!(line.reason, "after the handshake");
    assert_eq!(line.requested_bytes, Some(48_000));
    assert_eq!(line.t_s, 0.003);
    let rcv = &line.actions[0];
    assert_eq!(rcv.action, SocketOp::SetRcvBuf { bytes: 48_000 });
    assert_eq!(rcv.raised_to_bytes, Some(FLOOR));
    assert_eq!(rcv.applied_bytes, Some(2 * FLOOR));
    assert_eq!(line.actions[2].raised_to_bytes, None);
    assert_eq!(d.summary().decisions, 1);
}

#[test]
fn a_tuner_without_after_connect_settings_has_no_setup_decision() {
    let (tuner, fed) = Scripted::new(Vec::new());
    let mut d = driver(tuner, Links::default());
    let mut kernel = Kernel::default();
    d.setup();
    assert!(drive(&mut d, &mut kernel, MS).is_empty());
    assert!(kernel.ops.is_empty() && fed.lock().unwrap().is_empty());
}

#[test]
fn raising_rcvbuf_lifts_the_clamp_to_the_largest_read_back() {
    let (tuner, _) = Scripted::new(vec![act(vec![
        Action::SetRcvBuf(Bytes(600_000)),
        Action::SetRcvBuf(Bytes(400_000)),
    ])]);
    let mut d = driver(tuner, Links::default());
    let mut kernel = Kernel::default();
    d.sample(sample(20 * MS));
    let lines = drive(&mut d, &mut kernel, 21 * MS);
    assert_eq!(
        kernel.ops,
        vec![
            SocketOp::ReadTcpInfo { socket: Conn::Data },
            SocketOp::SetRcvBuf { bytes: 600_000 },
            SocketOp::SetRcvBuf { bytes: 400_000 },
            SocketOp::SetWindowClamp { bytes: 1_200_000 },
            SocketOp::ReadBuffers,
        ]
    );
    let lift = &lines[0].actions[2];
    assert_eq!(lift.action, SocketOp::SetWindowClamp { bytes: 1_200_000 });
    assert_eq!(lift.applied_bytes, Some(1_200_000));
    assert_eq!(lines[0].event, "sample");
}

#[test]
fn a_clamp_the_tuner_ever_set_is_not_lifted_later() {
    let (tuner, _) = Scripted::new(vec![
        act(vec![Action::SetWindowClamp(Bytes(300_000))]),
        act(vec![Action::SetRcvBuf(Bytes(900_000))]),
    ]);
    let mut d = driver(tuner, Links::default());
    let mut kernel = Kernel::default();
    d.sample(sample(20 * MS));
    d.sample(sample(40 * MS));
    drive(&mut d, &mut kernel, 40 * MS);
    assert!(
        !kernel
            .ops
            .contains(&SocketOp::SetWindowClamp { bytes: 1_800_000 }),
        "{:?}",
        kernel.ops
    );
    assert!(kernel.ops.contains(&SocketOp::SetRcvBuf { bytes: 900_000 }));
}

#[test]
fn a_failed_rcvbuf_counts_against_the_tuner_and_lifts_nothing() {
    let (tuner, _) = Scripted::new(vec![act(vec![Action::SetRcvBuf(Bytes(600_000))])]);
    let mut d = driver(tuner, Links::default());
    let mut kernel = Kernel {
        rcvbuf_fails: true,
        ..Kernel::default()
    };
    d.sample(sample(20 * MS));
    let lines = drive(&mut d, &mut kernel, 20 * MS);
    assert_eq!(
        kernel.ops,
        vec![
            SocketOp::ReadTcpInfo { socket: Conn::Data },
            SocketOp::SetRcvBuf { bytes: 600_000 },
            SocketOp::ReadBuffers,
        ]
    );
    assert_eq!(
        lines[0].actions[0].error.as_deref(),
        Some("setsockopt(SO_RCVBUF): EPERM")
    );
    assert_eq!(d.summary().actions_failed, 1);
}

#[test]
fn without_tcp_info_nothing_is_raised() {
    let (tuner, _) = Scripted::new(vec![act(vec![Action::SetSndBuf(Bytes(1_000))])]);
    let mut d = driver(tuner, Links::default());
    let mut kernel = Kernel {
        no_tcp_info: true,
        ..Kernel::default()
    };
    d.sample(sample(20 * MS));
    let lines = drive(&mut d, &mut kernel, 20 * MS);
    assert_eq!(kernel.ops[1], SocketOp::SetSndBuf { bytes: 1_000 });
    assert_eq!(lines[0].actions[0].raised_to_bytes, None);
}

#[test]
fn pacing_and_peer_messages_read_no_tcp_info_and_the_report_carries_the_pace() {
    let (tuner, _) = Scripted::new(vec![act(vec![
        Action::SetMaxPacingRate(Bytes(1_000_000)),
        Action::TellPeer(Bytes(2_000_000)),
        Action::TellPeerPace(Bytes(500_000)),
    ])]);
    let mut d = driver(tuner, peer());
    let mut kernel = Kernel::default();
    d.sample(sample(20 * MS));
    let lines = drive(&mut d, &mut kernel, 20 * MS);
    assert_eq!(
        kernel.ops,
        vec![
            SocketOp::SetMaxPacingRate {
                bytes_per_second: 1_000_000
            },
            SocketOp::TellPeer { bytes: 2_000_000 },
            SocketOp::TellPeerPace {
                bytes_per_second: 500_000
            },
            SocketOp::ReadBuffers,
        ]
    );
    assert_eq!(
        kernel.ops[1].to_peer(),
        Some(ToPeer::Size(Bytes(2_000_000)))
    );
    let Some(ToPeer::Info(ceiling)) = kernel.ops[2].to_peer() else {
        panic!("{:?}", kernel.ops[2]);
    };
    assert_eq!(ceiling.pace_bps, Some(4_000_000));
    assert_eq!(lines[0].actions[1].applied_bytes, None);
    assert_eq!(lines[0].actions[1].error, None);
    let ToPeer::Info(report) = d.report(&TcpInfoSample {
        rtt_us: 30_000,
        ..TcpInfoSample::default()
    }) else {
        panic!("a report is an info message");
    };
    assert_eq!(report.pace_bps, Some(8_000_000));
    assert_eq!(report.rtt_us, Some(30_000));
}

#[test]
fn the_summary_says_whether_the_peer_is_rightsize_and_whether_the_sender_paced() {
    // Alone: no extension, nothing paced.
    let (tuner, _) = Scripted::new(vec![act(Vec::new())]);
    let mut alone = driver(tuner, Links::default());
    alone.sample(sample(20 * MS));
    drive(&mut alone, &mut Kernel::default(), 20 * MS);
    let summary = alone.summary();
    assert!(!summary.extension && !summary.paced, "{summary:?}");
    // A sender that set a ceiling paced.
    let (tuner, _) = Scripted::new(vec![act(vec![Action::SetMaxPacingRate(Bytes(1_000_000))])]);
    let mut sender = driver(tuner, peer());
    sender.sample(sample(20 * MS));
    drive(&mut sender, &mut Kernel::default(), 20 * MS);
    let summary = sender.summary();
    assert!(summary.extension && summary.paced, "{summary:?}");
    // A receiver whose peer reported a ceiling in force saw a paced sender;
    // one whose peer reported none did not.
    for (pace_bps, paced) in [(None, false), (Some(8_000_000), true)] {
        let (tuner, _) = Scripted::new(vec![act(Vec::new())]);
        let mut receiver = driver(tuner, peer());
        receiver.handle(Event::Peer(PeerReport {
            at: 20 * MS,
            info: Some(PeerInfo {
                pace_bps,
                ..PeerInfo::default()
            }),
            size: None,
        }));
        drive(&mut receiver, &mut Kernel::default(), 20 * MS);
        assert_eq!(receiver.summary().paced, paced, "pace {pace_bps:?}");
    }
}

#[test]
fn a_size_for_a_peer_without_a_channel_is_recorded_not_asked_for() {
    let (tuner, _) = Scripted::new(vec![act(vec![Action::TellPeer(Bytes(2_000_000))])]);
    let mut d = driver(tuner, Links::default());
    let mut kernel = Kernel::default();
    d.sample(sample(20 * MS));
    let lines = drive(&mut d, &mut kernel, 20 * MS);
    assert_eq!(kernel.ops, vec![SocketOp::ReadBuffers]);
    assert_eq!(lines[0].actions[0].error.as_deref(), Some(NO_PEER));
    assert_eq!(d.summary().actions_failed, 1);
    assert!(!d.reports());
}

#[test]
fn a_changed_control_rtt_is_fed_before_the_sample_of_its_wake_up() {
    let (mut tuner, fed) = Scripted::new(Vec::new());
    tuner.inputs.control_rtt = true;
    let links = Links {
        control: true,
        ..Links::default()
    };
    let mut d = driver(tuner, links);
    let mut kernel = Kernel {
        control_rtt_us: 20_000,
        ..Kernel::default()
    };
    d.sample(sample(20 * MS));
    d.handle(Event::Peer(PeerReport {
        at: 25 * MS,
        info: None,
        size: Some(Bytes(1)),
    }));
    // The same RTT again, then none at all: neither is fed.
    d.sample(sample(40 * MS));
    drive(&mut d, &mut kernel, 40 * MS);
    kernel.control_rtt_us = 0;
    d.sample(sample(60 * MS));
    drive(&mut d, &mut kernel, 60 * MS);
    kernel.control_rtt_us = 30_000;
    d.sample(sample(80 * MS));
    drive(&mut d, &mut kernel, 80 * MS);
    assert_eq!(
        *fed.lock().unwrap(),
        vec![
            "control_rtt",
            "sample",
            "peer",
            "sample",
            "sample",
            "control_rtt",
            "sample"
        ]
    );
    let control = SocketOp::ReadTcpInfo {
        socket: Conn::Control,
    };
    assert_eq!(kernel.ops, vec![control; 4]);
}

#[test]
fn no_control_connection_no_control_read() {
    let (mut tuner, fed) = Scripted::new(Vec::new());
    tuner.inputs.control_rtt = true;
    let mut d = driver(tuner, Links::default());
    let mut kernel = Kernel::default();
    d.sample(sample(20 * MS));
    drive(&mut d, &mut kernel, 20 * MS);
    assert!(kernel.ops.is_empty());
    assert_eq!(*fed.lock().unwrap(), vec!["sample"]);
}

#[test]
fn a_note_is_a_line_without_requests_and_silence_is_nothing() {
    let (tuner, _) = Scripted::new(vec![Decision::note("running", "peer report read")]);
    let mut d = driver(tuner, Links::default());
    let mut kernel = Kernel::default();
    d.sample(sample(20 * MS));
    d.sample(sample(40 * MS));
    let lines = drive(&mut d, &mut kernel, 41 * MS);
    assert!(kernel.ops.is_empty());
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0].reason, "peer report read");
    assert_eq!(lines[0].requested_bytes, None);
    assert!(lines[0].actions.is_empty());
    assert_eq!(d.summary().decisions, 1);
}

#[test]
fn actions_without_a_record_are_carried_out_without_a_line() {
    let (tuner, _) = Scripted::new(vec![Decision {
        actions: vec![Action::SetSndBuf(Bytes(1_000_000))],
        record: None,
    }]);
    let mut d = driver(tuner, Links::default());
    let mut kernel = Kernel::default();
    d.sample(sample(20 * MS));
    assert!(drive(&mut d, &mut kernel, 20 * MS).is_empty());
    assert_eq!(kernel.ops.len(), 3);
    assert_eq!(d.summary().decisions, 0);
}

#[test]
fn an_unanswered_request_is_asked_again_and_a_stray_reply_is_ignored() {
    let (tuner, _) = Scripted::new(vec![act(vec![Action::SetSndBuf(Bytes(1_000_000))])]);
    let mut d = driver(tuner, Links::default());
    d.reply(Reply::Told);
    assert_eq!(d.poll(MS), Step::Idle);
    d.sample(sample(20 * MS));
    let first = d.poll(20 * MS);
    assert_eq!(
        first,
        Step::Op(SocketOp::ReadTcpInfo { socket: Conn::Data })
    );
    assert_eq!(d.poll(20 * MS), first);
    // A reply that does not fit: no floor, and the run goes on.
    d.reply(Reply::Told);
    assert_eq!(
        d.poll(20 * MS),
        Step::Op(SocketOp::SetSndBuf { bytes: 1_000_000 })
    );
}

#[test]
fn the_line_is_stamped_when_its_decision_completes() {
    let (tuner, _) = Scripted::new(vec![act(vec![Action::SetSndBuf(Bytes(1_000_000))])]);
    let mut d = driver(tuner, Links::default());
    let mut kernel = Kernel::default();
    d.sample(sample(20 * MS));
    let mut now = 20 * MS;
    let line = loop {
        match d.poll(now) {
            Step::Op(op) => d.reply(kernel.execute(op)),
            Step::Line(line) => break line,
            Step::Idle => panic!("no line"),
        }
        now += Duration::from_micros(250);
    };
    assert_eq!(line.t_s, 0.02075);
}

#[test]
fn decision_lines_keep_their_json_byte_for_byte() {
    let (mut tuner, _) = Scripted::new(vec![Decision::act(
        "done",
        vec![
            Action::SetRcvBuf(Bytes(600_000)),
            Action::TellPeer(Bytes(600_000)),
        ],
        Bytes(600_000),
        "third sample",
    )]);
    tuner.after_connect.sndbuf = Some(Bytes(48_000));
    let mut d = driver(tuner, Links::default());
    let mut kernel = Kernel::default();
    d.setup();
    d.sample(sample(60 * MS));
    let lines = drive(&mut d, &mut kernel, 60 * MS);
    let text: Vec<String> = lines
        .iter()
        .map(|l| serde_json::to_string(l).unwrap())
        .collect();
    assert_eq!(
        text,
        [
            r#"{"kind":"decision","t_s":0.06,"tuner":"scripted","event":"setup","state":"running","reason":"after the handshake","requested_bytes":48000,"actions":[{"action":"set_sndbuf","requested_bytes":48000,"applied_bytes":523864,"raised_to_bytes":261932}]}"#,
            r#"{"kind":"decision","t_s":0.06,"tuner":"scripted","event":"sample","state":"done","reason":"third sample","requested_bytes":600000,"actions":[{"action":"set_rcvbuf","requested_bytes":600000,"applied_bytes":1200000},{"action":"tell_peer","requested_bytes":600000,"error":"the peer takes no sizes (not rightsize with OPTS RIGHTSIZE ON)"},{"action":"set_window_clamp","requested_bytes":1200000,"applied_bytes":1200000}]}"#,
        ]
    );
    let back: DecisionLine = serde_json::from_str(&text[1]).unwrap();
    assert_eq!(back, lines[1]);
    let clamped = AppliedAction {
        clamped_by: Some("net.core.wmem_max".into()),
        applied_bytes: Some(8_388_608),
        ..AppliedAction::requested(SocketOp::SetMaxPacingRate {
            bytes_per_second: 1,
        })
    };
    assert_eq!(
        serde_json::to_string(&clamped).unwrap(),
        r#"{"action":"set_max_pacing_rate","requested_bytes":1,"applied_bytes":8388608,"clamped_by":"net.core.wmem_max"}"#
    );
}

#[test]
fn settings_map_to_actions_receive_buffer_first_clamp_last() {
    assert!(settings_actions(Settings::default()).is_empty());
    let all = Settings {
        window_clamp: Some(Bytes(3)),
        sndbuf: Some(Bytes(2)),
        rcvbuf: Some(Bytes(1)),
    };
    assert_eq!(
        settings_actions(all),
        vec![
            Action::SetRcvBuf(Bytes(1)),
            Action::SetSndBuf(Bytes(2)),
            Action::SetWindowClamp(Bytes(3)),
        ]
    );
}

#[test]
fn ticks_come_every_interval_and_a_late_wake_up_does_not_pile_them_up() {
    let mut s = Schedule::new(Some(100 * MS));
    assert_eq!(s.next(None, false), 100 * MS);
    assert_eq!(
        s.wake(50 * MS, None, false),
        Wake::default(),
        "an early wake-up is nothing"
    );
    let w = s.wake(100 * MS, None, false);
    assert!(w.tick && w.sample && !w.report, "a tick is also a sample");
    assert_eq!(s.next(None, false), 200 * MS);
    // Asleep until 450 ms: one tick, the next a whole interval later.
    assert!(s.wake(450 * MS, None, false).tick);
    assert_eq!(s.next(None, false), 550 * MS);
    assert_eq!(
        Schedule::new(None).next(None, false),
        crate::telemetry::DEFAULT_INTERVAL
    );
}

#[test]
fn tuner_samples_come_when_wanted_but_a_gap_apart() {
    let mut s = Schedule::new(Some(10_000 * MS));
    let wanted = Some(20 * MS);
    assert_eq!(s.next(wanted, false), 20 * MS);
    let w = s.wake(20 * MS, wanted, false);
    assert!(w.sample && !w.tick);
    // A tuner that still wants 20 ms waits the gap, not a busy loop.
    assert_eq!(s.next(wanted, false), 20 * MS + MIN_TUNER_GAP);
    assert!(!s.wake(20 * MS, wanted, false).sample);
    assert!(s.wake(21 * MS, wanted, false).sample);
    assert_eq!(s.next(Some(60 * MS), false), 60 * MS);
}

#[test]
fn reports_come_every_half_rtt_within_bounds() {
    let mut s = Schedule::new(Some(10_000 * MS));
    assert_eq!(s.next(None, true), Duration::ZERO, "the first is at once");
    assert!(s.wake(Duration::ZERO, None, true).report);
    let info = |rtt_ms: u32| TcpInfoSample {
        rtt_us: rtt_ms * 1_000,
        ..TcpInfoSample::default()
    };
    s.reported(Duration::ZERO, Some(&info(100)));
    assert_eq!(s.next(None, true), 50 * MS);
    assert!(!s.wake(49 * MS, None, true).report);
    assert!(!s.wake(50 * MS, None, false).report, "not when off");
    assert!(s.wake(50 * MS, None, true).report);
    assert_eq!(report_every(Some(&info(1))), MIN_REPORT_EVERY);
    assert_eq!(report_every(Some(&info(10_000))), MAX_REPORT_EVERY);
    assert_eq!(report_every(None), MAX_REPORT_EVERY);
}
