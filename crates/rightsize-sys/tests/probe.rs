//! The probe responder and prober over loopback (127.0.0.1 only; no root
//! needed): probes come back with no loss, trains give a capacity, and a
//! responder answers nobody but its peer. Times are only checked for
//! sanity; the measured numbers are printed (`--nocapture`).

#![allow(clippy::unwrap_used)]

use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rightsize_path::probe::wire::HEADER_BYTES;
use rightsize_path::probe::{
    DEFAULT_TRAIN_PACKETS, Echo, Message, Probe, TrainPacket, TrainRequest,
};
use rightsize_sys::probe::{ProbeError, ProbeEvent, Prober, ProberOptions, Responder, Timestamps};
use rightsize_tune::{Event, TRAINS};

const LOCALHOST: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

fn responder() -> Responder {
    Responder::bind((LOCALHOST, 0).into(), LOCALHOST).unwrap()
}

/// Starts a prober whose events arrive on the returned channel.
fn prober(to: SocketAddr, options: ProberOptions) -> (Prober, mpsc::Receiver<ProbeEvent>) {
    let (tx, rx) = mpsc::channel();
    let sink = Box::new(move |event| {
        let _ = tx.send(event);
    });
    (
        Prober::start(to, Instant::now(), sink, options).unwrap(),
        rx,
    )
}

/// Events until `done` says so, or until 10 s pass (then the test fails).
fn collect(
    rx: &mpsc::Receiver<ProbeEvent>,
    done: impl Fn(&[ProbeEvent]) -> bool,
) -> Vec<ProbeEvent> {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut events = Vec::new();
    while !done(&events) {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(event) => events.push(event),
            Err(_) => panic!("no end after 10 s; events so far: {events:#?}"),
        }
    }
    events
}

fn client() -> UdpSocket {
    let socket = UdpSocket::bind((LOCALHOST, 0)).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    socket
}

/// Nothing comes back on `socket` within its read timeout.
fn assert_silent(socket: &UdpSocket, what: &str) {
    let mut buf = [0u8; 2048];
    match socket.recv_from(&mut buf) {
        Ok((n, from)) => panic!("{what}: got {n} bytes from {from}"),
        Err(err) => assert!(
            matches!(
                err.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ),
            "{what}: {err}"
        ),
    }
}

#[test]
fn probes_are_echoed_with_no_loss_and_a_small_rtt() {
    let responder = responder();
    let options = ProberOptions {
        trains: 0,
        ..ProberOptions::default()
    };
    let (prober, rx) = prober(responder.local_addr(), options);
    let events = collect(&rx, |e| {
        e.iter()
            .filter(|e| matches!(e, ProbeEvent::UdpProbes(r) if r.sent > 0))
            .count()
            >= 5
    });
    drop(prober);
    let reports: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            ProbeEvent::UdpProbes(r) => Some(*r),
            _ => None,
        })
        .collect();
    assert!(!events.iter().any(|e| matches!(e, ProbeEvent::Train(_))));
    let sent: u32 = reports.iter().map(|r| r.sent).sum();
    let lost: u32 = reports.iter().map(|r| r.lost).sum();
    assert!(sent >= 5, "{reports:#?}");
    assert_eq!(lost, 0, "{reports:#?}");
    for r in reports.iter().filter(|r| r.sent > 0) {
        let rtt = r.rtt.unwrap();
        assert!(
            rtt > Duration::ZERO && rtt < Duration::from_secs(1),
            "{r:?}"
        );
    }
    let mut ats = reports.iter().map(|r| r.at);
    let first = ats.next().unwrap();
    assert!(ats.all(|at| at >= first), "times go forward");
    let rtts: Vec<_> = reports.iter().filter_map(|r| r.rtt).collect();
    eprintln!("loopback probes: {sent} resolved, {lost} lost, mean RTT per report {rtts:?}");
    let stats = responder.stats();
    assert!(stats.echoed >= u64::from(sent), "{stats:?}");
    assert_eq!((stats.strangers, stats.ignored, stats.errors), (0, 0, 0));
    // The reports feed the tuners as they are.
    assert!(matches!(
        ProbeEvent::UdpProbes(reports[0]).tuner_event(),
        Some(Event::UdpProbes(_))
    ));
}

#[test]
fn trains_give_a_positive_capacity() {
    let responder = responder();
    for timestamps in [Timestamps::Kernel, Timestamps::User] {
        let options = ProberOptions {
            udp_probes: false,
            timestamps,
            ..ProberOptions::default()
        };
        let (prober, rx) = prober(responder.local_addr(), options);
        assert_eq!(
            prober.timestamps(),
            timestamps,
            "the kernel stamps on Linux"
        );
        let events = collect(&rx, |e| {
            e.iter().any(|e| matches!(e, ProbeEvent::TrainsDone { .. }))
        });
        let trains: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                ProbeEvent::Train(t) => Some(*t),
                _ => None,
            })
            .collect();
        assert_eq!(trains.len(), TRAINS, "{events:#?}");
        let mut rates = Vec::new();
        for t in &trains {
            // Forty-seven full 1,500-byte IPv4 packets after the first.
            assert_eq!(t.bytes, 70_500, "{t:?}");
            assert!(t.dispersion > Duration::ZERO && t.dispersion < Duration::from_secs(1));
            rates.push(t.bytes as f64 * 8.0 / t.dispersion.as_secs_f64() / 1e9);
        }
        let bytes: u64 = trains.iter().map(|t| t.bytes).sum();
        let dispersion: Duration = trains.iter().map(|t| t.dispersion).sum();
        let capacity = bytes as f64 * 8.0 / dispersion.as_secs_f64() / 1e9;
        assert!(capacity > 0.0);
        eprintln!(
            "loopback trains ({timestamps:?} stamps): C' = {capacity:.2} Gbit/s; per train {:.2?} Gbit/s, dispersions {:?}",
            rates,
            trains.iter().map(|t| t.dispersion).collect::<Vec<_>>()
        );
        assert!(matches!(
            events.last(),
            Some(ProbeEvent::TrainsDone {
                measured: 5,
                requested: 5,
                ..
            })
        ));
        // Without the probe stream the thread ends by itself.
        let deadline = Instant::now() + Duration::from_secs(2);
        while !prober.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(prober.is_finished());
    }
    let stats = responder.stats();
    assert_eq!(stats.trains_served, 2 * TRAINS as u64, "{stats:?}");
    assert_eq!(stats.train_packets_dropped, 0);
}

#[test]
fn a_stranger_gets_no_answer() {
    // The responder trusts 127.0.0.2; this test sends from 127.0.0.1.
    let responder = Responder::bind((LOCALHOST, 0).into(), [127, 0, 0, 2].into()).unwrap();
    let socket = client();
    let to = responder.local_addr();
    let probe = Message::Probe(Probe { seq: 0, stamp: 1 })
        .datagram(72)
        .unwrap();
    socket.send_to(&probe, to).unwrap();
    let request = Message::TrainRequest(TrainRequest {
        train: 0,
        packets: DEFAULT_TRAIN_PACKETS,
        packet_bytes: 1472,
        stamp: 0,
    })
    .datagram(1472)
    .unwrap();
    socket.send_to(&request, to).unwrap();
    assert_silent(&socket, "a stranger's probe and train request");
    let stats = responder.stats();
    assert_eq!(stats.strangers, 2, "{stats:?}");
    assert_eq!((stats.echoed, stats.trains_served), (0, 0));
}

#[test]
fn the_peer_gets_an_echo_of_its_own_size_and_no_train_for_a_short_request() {
    let responder = responder();
    let socket = client();
    let to = responder.local_addr();
    // Garbage and misdirected kinds are ignored.
    socket.send_to(b"hello", to).unwrap();
    let echo = Message::Echo(Echo {
        seq: 0,
        stamp: 0,
        seen: 0,
    });
    socket
        .send_to(&echo.datagram(HEADER_BYTES).unwrap(), to)
        .unwrap();
    // A train request not padded to one packet: no train.
    let request = TrainRequest {
        train: 9,
        packets: 4,
        packet_bytes: 1000,
        stamp: 77,
    };
    let short = Message::TrainRequest(request).datagram(999).unwrap();
    socket.send_to(&short, to).unwrap();
    assert_silent(&socket, "garbage, an echo and a short train request");

    for seq in [0u64, 2] {
        let probe = Message::Probe(Probe { seq, stamp: 5 })
            .datagram(72)
            .unwrap();
        socket.send_to(&probe, to).unwrap();
        let mut buf = [0u8; 2048];
        let (n, from) = socket.recv_from(&mut buf).unwrap();
        assert_eq!((n, from), (72, to), "one echo, as big as the probe");
        let seen = u64::from(seq == 2) << 1; // probe 0 seen, 1 not
        assert_eq!(
            Message::parse(&buf[..n]),
            Ok(Message::Echo(Echo {
                seq,
                stamp: 5,
                seen
            }))
        );
    }
    // A padded request gets its train, to the requester.
    let padded = Message::TrainRequest(request).datagram(1000).unwrap();
    socket.send_to(&padded, to).unwrap();
    let mut indices = Vec::new();
    let mut buf = [0u8; 2048];
    while indices.len() < 4 {
        let (n, from) = socket.recv_from(&mut buf).unwrap();
        assert_eq!((n, from), (1000, to));
        match Message::parse(&buf[..n]).unwrap() {
            Message::TrainPacket(TrainPacket {
                train: 9,
                index,
                packets: 4,
                stamp: 77,
            }) => indices.push(index),
            other => panic!("{other:?}"),
        }
    }
    indices.sort_unstable();
    assert_eq!(indices, [0, 1, 2, 3]);
    // The responder counts the train once `sendmmsg` returns.
    let deadline = Instant::now() + Duration::from_secs(1);
    while responder.stats().trains_served == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    let stats = responder.stats();
    assert_eq!(
        (
            stats.ignored,
            stats.trains_refused,
            stats.trains_served,
            stats.echoed
        ),
        (2, 1, 1, 2),
        "{stats:?}"
    );
}

#[test]
fn handles_stop_on_drop_and_free_their_port() {
    let responder = responder();
    let addr = responder.local_addr();
    assert_eq!(responder.port(), addr.port());
    assert_ne!(addr.port(), 0);
    // No periodic report for a minute: the one that comes was asked for.
    let options = ProberOptions {
        trains: 0,
        report_every: Duration::from_secs(60),
        ..ProberOptions::default()
    };
    let (prober, rx) = prober(addr, options);
    std::thread::sleep(Duration::from_millis(50));
    prober.request_report();
    collect(&rx, |e| {
        e.iter().any(|e| matches!(e, ProbeEvent::UdpProbes(_)))
    });
    // They stop at once, not at their next report a minute away (5 s
    // leaves room for a busy host).
    let start = Instant::now();
    drop(prober);
    drop(responder);
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    // Its socket is closed: the port can be bound again.
    UdpSocket::bind(addr).unwrap();
    // Nothing is sent after the drop: the channel's sender is gone.
    let deadline = Instant::now() + Duration::from_secs(1);
    loop {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(_) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => panic!("the prober's sink lives on"),
        }
    }
}

#[test]
fn a_prober_refuses_what_it_cannot_send_to() {
    let sink = || Box::new(|_| {}) as Box<dyn FnMut(ProbeEvent) + Send>;
    for addr in ["0.0.0.0:5201", "127.0.0.1:0"] {
        let err = Prober::start(
            addr.parse().unwrap(),
            Instant::now(),
            sink(),
            ProberOptions::default(),
        )
        .unwrap_err();
        assert!(matches!(err, ProbeError::NotADestination { .. }), "{err}");
        assert!(err.to_string().contains(addr), "{err}");
    }
    let options = ProberOptions {
        train_packets: 65,
        ..ProberOptions::default()
    };
    let err = Prober::start(
        "127.0.0.1:9".parse().unwrap(),
        Instant::now(),
        sink(),
        options,
    )
    .unwrap_err();
    assert!(err.to_string().contains("train_packets = 65"), "{err}");
}
