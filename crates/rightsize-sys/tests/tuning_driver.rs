//! The monitor driving a tuner on a real loopback TCP connection: a
//! scripted tuner asks for samples, sets buffers and a clamp, tells the peer
//! a size and reads what the peer said; the test checks that each action
//! reached the kernel, came back in the next sample, and landed in the
//! telemetry as a decision line with what the kernel applied.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rightsize_sys::telemetry::{Monitor, TelemetryOut, ToPeer, Tuning};
use rightsize_tune::telemetry::{Direction, Header, Role};
use rightsize_tune::units::Bytes;
use rightsize_tune::{Action, Decision, Event, Inputs, PeerInfo, Settings, Setup, Tuner};

#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut out = self.0.lock().map_err(|_| io::Error::other("poisoned"))?;
        out.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// What the scripted tuner saw, for the test to read.
#[derive(Debug, Default)]
struct Seen {
    samples: Vec<(Duration, Option<u64>)>,
    peer_sizes: Vec<Bytes>,
}

/// Samples every 20 ms; at its third sample sets SO_RCVBUF to 600 KB, the
/// clamp to 300 KB and tells the peer 600 KB. Its first setting, 48 KB of
/// send buffer, is below four loopback segments and gets raised.
#[derive(Debug)]
struct Scripted {
    seen: Arc<Mutex<Seen>>,
    samples: u32,
}

impl Tuner for Scripted {
    fn name(&self) -> &'static str {
        "scripted"
    }

    fn state(&self) -> &'static str {
        if self.samples >= 3 { "done" } else { "waiting" }
    }

    fn setup(&self) -> Setup {
        Setup {
            pre_handshake: Settings::default(),
            after_connect: Settings {
                sndbuf: Some(Bytes(48_000)),
                ..Settings::default()
            },
        }
    }

    fn inputs(&self) -> Inputs {
        Inputs {
            peer_messages: true,
            ..Inputs::default()
        }
    }

    fn on_event(&mut self, event: &Event) -> Decision {
        let mut seen = self.seen.lock().expect("lock");
        match event {
            Event::Sample(sample) => {
                self.samples += 1;
                seen.samples
                    .push((sample.at, sample.buffers.map(|b| b.rcvbuf_bytes)));
                if self.samples == 3 {
                    return Decision::act(
                        "done",
                        vec![
                            Action::SetRcvBuf(Bytes(600_000)),
                            Action::SetWindowClamp(Bytes(300_000)),
                            Action::TellPeer(Bytes(600_000)),
                        ],
                        Bytes(600_000),
                        "third sample",
                    );
                }
                Decision::none()
            }
            Event::Peer(report) => {
                if let Some(size) = report.size {
                    seen.peer_sizes.push(size);
                }
                Decision::note(self.state(), "peer report read")
            }
            _ => Decision::none(),
        }
    }

    fn next_wakeup(&self) -> Option<Duration> {
        Some(Duration::from_millis(20) * (self.samples + 1))
    }
}

#[test]
fn the_monitor_applies_reads_back_and_records_a_tuners_actions() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let client = TcpStream::connect(listener.local_addr().expect("addr")).expect("connect");
    let (_server, _) = listener.accept().expect("accept");

    let seen = Arc::new(Mutex::new(Seen::default()));
    let told = Arc::new(Mutex::new(Vec::new()));
    let told_by_monitor = Arc::clone(&told);
    let out = Shared::default();
    let header = Header {
        version: "test".into(),
        kernel: None,
        argv: Vec::new(),
        role: Role::Client,
        direction: Direction::Receive,
        local_addr: String::new(),
        peer_addr: String::new(),
        interval_us: None,
        settings: BTreeMap::new(),
    };
    let monitor = Monitor::start(
        &client,
        Arc::new(AtomicU64::new(0)),
        Some(TelemetryOut {
            out: Box::new(out.clone()),
            header,
            // Long, so that the tuner's wake-ups are what drives it.
            interval: Duration::from_secs(10),
        }),
        Some(Tuning {
            tuner: Box::new(Scripted {
                seen: Arc::clone(&seen),
                samples: 0,
            }),
            control: None,
            to_peer: Some(Box::new(move |m| {
                told_by_monitor.lock().expect("lock").push(m);
            })),
            report_info: false,
        }),
    )
    .expect("start the monitor");
    // after_connect is in force when start returns, raised to the floor of
    // four segments (loopback's MSS is about 64 KiB).
    let mss = rightsize_sys::tcp_info::read(&client)
        .expect("TCP_INFO")
        .snd_mss_bytes;
    let floor = 4 * u64::from(mss);
    assert!(floor > 48_000, "loopback MSS {mss}");
    let sndbuf = rightsize_sys::socket::read_buffers(&client).expect("read");
    assert_eq!(sndbuf.sndbuf_bytes, 2 * floor);
    let inbox = monitor.inbox().expect("an inbox while running");
    inbox.peer(Some(PeerInfo::default()), Some(Bytes(123_456)));
    // Until four samples and the peer's report were seen (200 ms on an
    // idle host; a busy one may take longer, which is not wrong).
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let enough = {
            let seen = seen.lock().expect("lock");
            seen.samples.len() >= 4 && !seen.peer_sizes.is_empty()
        };
        if enough || std::time::Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let finished = monitor.finish().expect("finish");

    let seen = seen.lock().expect("lock");
    assert!(seen.samples.len() >= 4, "{:?}", seen.samples);
    // Samples came when the tuner asked, in order.
    assert!(seen.samples.windows(2).all(|w| w[0].0 < w[1].0));
    assert!(seen.samples[0].0 >= Duration::from_millis(20));
    // The fourth sample reads back what the third decision set.
    assert_eq!(seen.samples[3].1, Some(1_200_000));
    assert_eq!(seen.peer_sizes, vec![Bytes(123_456)]);
    assert_eq!(
        *told.lock().expect("lock"),
        vec![ToPeer::Size(Bytes(600_000))]
    );

    let tuner = finished.tuner.expect("a tuner summary");
    assert_eq!((tuner.name, tuner.state), ("scripted", "done"));
    assert_eq!(tuner.decisions, 3, "setup, peer note, the action");
    assert_eq!(tuner.actions_failed, 0);
    assert_eq!(finished.buffers.peak_rcvbuf_bytes, 1_200_000);
    assert_eq!(finished.buffers.peak_sndbuf_bytes, 2 * floor);

    let text = String::from_utf8(out.0.lock().expect("lock").clone()).expect("UTF-8");
    let decisions: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .filter(|v: &serde_json::Value| v["kind"] == "decision")
        .collect();
    assert_eq!(decisions.len(), 3, "{text}");
    assert_eq!(decisions[0]["event"], "setup");
    assert_eq!(decisions[0]["actions"][0]["requested_bytes"], 48_000);
    assert_eq!(decisions[0]["actions"][0]["raised_to_bytes"], floor);
    assert_eq!(decisions[0]["actions"][0]["applied_bytes"], 2 * floor);
    let act = decisions
        .iter()
        .find(|d| d["reason"] == "third sample")
        .expect("the action line");
    assert_eq!(act["tuner"], "scripted");
    assert_eq!(act["requested_bytes"], 600_000);
    assert_eq!(act["actions"][0]["action"], "set_rcvbuf");
    assert_eq!(act["actions"][0]["applied_bytes"], 1_200_000);
    assert_eq!(act["actions"][1]["action"], "set_window_clamp");
    assert_eq!(act["actions"][1]["applied_bytes"], 300_000);
    assert_eq!(act["actions"][2]["action"], "tell_peer");
}

/// Clamps the window after the handshake, then at its first sample raises
/// only `SO_RCVBUF`: the clamp is its own and must stay.
#[derive(Debug)]
struct ClampsThenGrows {
    samples: u32,
}

impl Tuner for ClampsThenGrows {
    fn name(&self) -> &'static str {
        "clamps-then-grows"
    }

    fn state(&self) -> &'static str {
        "running"
    }

    fn setup(&self) -> Setup {
        Setup {
            pre_handshake: Settings::default(),
            after_connect: Settings {
                rcvbuf: Some(Bytes(400_000)),
                window_clamp: Some(Bytes(300_000)),
                ..Settings::default()
            },
        }
    }

    fn inputs(&self) -> Inputs {
        Inputs::default()
    }

    fn on_event(&mut self, event: &Event) -> Decision {
        if !matches!(event, Event::Sample(_)) {
            return Decision::none();
        }
        self.samples += 1;
        if self.samples != 1 {
            return Decision::none();
        }
        Decision::act(
            "running",
            vec![Action::SetRcvBuf(Bytes(900_000))],
            Bytes(900_000),
            "more memory, same window",
        )
    }

    fn next_wakeup(&self) -> Option<Duration> {
        Some(Duration::from_millis(20) * (self.samples + 1))
    }
}

#[test]
fn a_clamp_the_tuner_set_is_not_lifted_when_it_raises_the_buffer() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let client = TcpStream::connect(listener.local_addr().expect("addr")).expect("connect");
    let (_server, _) = listener.accept().expect("accept");
    let monitor = Monitor::start(
        &client,
        Arc::new(AtomicU64::new(0)),
        None,
        Some(Tuning {
            tuner: Box::new(ClampsThenGrows { samples: 0 }),
            control: None,
            to_peer: None,
            report_info: false,
        }),
    )
    .expect("start the monitor");
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while rightsize_sys::socket::read_buffers(&client)
        .expect("read")
        .rcvbuf_bytes
        < 1_800_000
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the first sample's action never came"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let finished = monitor.finish().expect("finish");
    assert_eq!(finished.tuner.expect("summary").actions_failed, 0);
    let b = rightsize_sys::socket::read_buffers(&client).expect("read");
    assert_eq!(b.rcvbuf_bytes, 1_800_000);
    assert_eq!(
        b.window_clamp_bytes, 300_000,
        "the tuner's clamp was lifted"
    );
}
