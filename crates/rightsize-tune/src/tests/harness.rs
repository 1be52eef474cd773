//! Runs a tuner at each end of a modelled flow: the driver's job, with a
//! virtual clock. Samples at each tuner's `next_wakeup`, control-channel
//! RTTs, packet trains, UDP probe reports and peer messages (delayed as
//! the path would delay them) go in; actions are applied to the model.

use std::collections::VecDeque;
use std::time::Duration;

use super::model::{Cc, Flow, HEADERS, Host, MSS, Path, SocketSettings};
use crate::tcpinfo::TcpInfoSample;
use crate::telemetry::BufferReading;
use crate::units::Bytes;
use crate::{
    Action, Congestion, Context, Event, Limits, Peer, PeerInfo, PeerReport, Role, RttMeasurement,
    Sample, Setup, TrainProbe, Tuner, TunerSpec, UdpProbeReport,
};

/// The model's step, seconds.
const TICK: f64 = 0.001;
/// A rightsize sender reports its `TCP_INFO` this often (what `auto`
/// expects of the wire extension: at least twice per RTT).
const REPORT_EVERY: f64 = 0.05;
/// The UDP probe stream (one 100-byte probe per 10 ms, as in the SOBAS paper) is
/// summed up this often.
const PROBES_EVERY: f64 = 0.1;
const PROBES_PER_REPORT: u32 = 10;
/// The driver samples for telemetry this often, whatever the tuner asks.
const TELEMETRY_EVERY: f64 = 0.1;

/// One experiment.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub path: Path,
    /// Path changes: from this second on, this path.
    pub changes: Vec<(f64, Path)>,
    pub host: Host,
    pub cc: Cc,
    pub seed: u64,
    pub seconds: f64,
    pub spec: TunerSpec,
    /// The receiver's tuner when it is not `spec` (`kernel`: a plain
    /// client such as curl, whose kernel autotunes).
    pub receiver: Option<TunerSpec>,
    /// The sender's tuner when it is not `spec` (`kernel`: a plain server
    /// such as vsftpd).
    pub sender: Option<TunerSpec>,
    /// The sender reports its `TCP_INFO` and both ends take sizes (a
    /// rightsize peer).
    pub rightsize_peer: bool,
    /// Sizes told by one end reach the other (drsFTP's `SBUF`).
    pub sizes: bool,
    /// Packet trains measure this many times the true capacity.
    pub trains: Option<f64>,
    pub udp_probes: bool,
    pub control_rtt_every: f64,
    /// The sender takes the pacing ceiling it is asked for (a rightsize
    /// peer of this version).
    pub pacing: bool,
}

impl Scenario {
    /// 200 Mbit/s, 2 x 50 ms, a queue of `queue_bdps` x BDP, CUBIC: the
    /// tuner benchmark's path (`lfn` or `shallow`).
    pub fn benchmark(spec: &str, queue_bdps: f64) -> Self {
        let rate_bps = 200e6;
        let base_rtt = 0.1;
        Scenario {
            path: Path {
                rate_bps,
                base_rtt,
                queue_bytes: queue_bdps * rate_bps / 8.0 * base_rtt,
                loss: 0.0,
            },
            changes: Vec::new(),
            host: Host::tuned(),
            cc: Cc::Cubic,
            seed: 1,
            seconds: 20.0,
            spec: spec.parse().unwrap_or_default(),
            receiver: None,
            sender: None,
            rightsize_peer: true,
            sizes: true,
            trains: Some(1.0),
            udp_probes: true,
            control_rtt_every: 1.0,
            pacing: true,
        }
    }
}

impl Scenario {
    /// `spec` at the `tuned` end, the kernel's autotuning at the other (a
    /// plain client such as curl, or a plain server such as vsftpd), and
    /// nothing between them: no reports, no trains, no probes, no pacing
    /// asked. Both hosts autotune up to 32 MiB, as on the benchmark paths
    /// (`bench/paths/lfn.toml`).
    pub fn against_plain(spec: &str, tuned: Role, path: Path) -> Self {
        let mut s = Scenario::benchmark(spec, 1.0);
        s.path = path;
        s.host.tcp_wmem[2] = 33_554_432.0;
        match tuned {
            Role::Sender => s.receiver = Some(TunerSpec::Kernel),
            Role::Receiver => s.sender = Some(TunerSpec::Kernel),
        }
        s.rightsize_peer = false;
        s.sizes = false;
        s.trains = None;
        s.udp_probes = false;
        s.pacing = false;
        s
    }
}

impl Path {
    /// A path of `rate_mbps` x `rtt_ms` with `queue_bdps` of queue (two
    /// packets at the least) and `loss` of the packets lost at random.
    pub fn of(rate_mbps: f64, rtt_ms: f64, queue_bdps: f64, loss: f64) -> Self {
        let rate_bps = rate_mbps * 1e6;
        let base_rtt = rtt_ms / 1e3;
        Path {
            rate_bps,
            base_rtt,
            queue_bytes: (queue_bdps * rate_bps / 8.0 * base_rtt).max(2.0 * 1500.0),
            loss,
        }
    }

    /// 200 Mbit/s x 100 ms with a queue of `queue_bdps` x BDP: the tuner
    /// benchmark's `lfn` (1) and `shallow` (0.1).
    pub fn benchmark(queue_bdps: f64) -> Self {
        Scenario::benchmark("kernel", queue_bdps).path
    }

    /// The Windows note's slow, short path: 100 Mbit/s x 40 ms, a
    /// 50-packet queue.
    pub fn windows_note() -> Self {
        Path {
            rate_bps: 100e6,
            base_rtt: 0.04,
            queue_bytes: 50.0 * 1500.0,
            loss: 0.0,
        }
    }
}

/// `auto` and `kernel` at the `tuned` end of `path`, against a plain
/// program at the other ([`Scenario::against_plain`]).
pub fn auto_and_kernel(tuned: Role, path: Path) -> (Outcome, Outcome) {
    (
        run(&Scenario::against_plain("auto", tuned, path)),
        run(&Scenario::against_plain("kernel", tuned, path)),
    )
}

/// `auto` and `kernel` at the `tuned` end of the tuner benchmark's `lfn`
/// path (200 Mbit/s x 100 ms, one BDP of queue) with 0.01% random loss
/// each way, as on `bench/paths/bbr-loss.toml`, behind a bbr sender, once
/// per seed from 1 to 3; and whether `auto`'s goodput over the three is
/// at least 0.98 x the kernel's.
pub fn behind_bbr_with_random_loss(tuned: Role) -> (Vec<(Outcome, Outcome)>, bool) {
    let mut path = Path::benchmark(1.0);
    path.loss = 1e-4;
    let runs: Vec<_> = (1..=3)
        .map(|seed| {
            let mut s = Scenario::against_plain("auto", tuned, path);
            s.cc = Cc::Bbr;
            s.seed = seed;
            let auto = run(&s);
            s.spec = TunerSpec::Kernel;
            (auto, run(&s))
        })
        .collect();
    let total = |pick: fn(&(Outcome, Outcome)) -> f64| runs.iter().map(pick).sum::<f64>();
    let met = total(|(auto, _)| auto.goodput) >= 0.98 * total(|(_, kernel)| kernel.goodput);
    (runs, met)
}

/// Bytes per second in Mbit/s.
pub fn mbps(bytes_per_s: f64) -> f64 {
    bytes_per_s * 8e-6
}

/// One decision, as the driver would log it.
#[derive(Debug, Clone)]
pub struct Logged {
    pub at: f64,
    pub role: Role,
    pub state: &'static str,
    pub reason: String,
    pub actions: Vec<Action>,
}

/// The model at one moment.
#[derive(Debug, Clone, Copy)]
pub struct Trace {
    pub at: f64,
    pub cwnd: f64,
    pub inflight: f64,
    pub window: f64,
    pub sndbuf: f64,
    pub queue_delay: f64,
}

/// What a run produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub goodput: f64,
    pub retrans_bytes: f64,
    pub peak_rcvbuf: f64,
    pub mean_rcvbuf: f64,
    pub peak_sndbuf: f64,
    pub mean_sndbuf: f64,
    pub peak_window: f64,
    pub log: Vec<Logged>,
    /// Payload received at each tenth of a second.
    pub received: Vec<(f64, f64)>,
    /// The model's state at each tenth of a second.
    pub trace: Vec<Trace>,
    pub receiver_state: &'static str,
}

impl Outcome {
    /// Goodput between two times, payload bytes per second.
    pub fn goodput_between(&self, from: f64, to: f64) -> f64 {
        let at = |t: f64| {
            self.received
                .iter()
                .rev()
                .find(|(s, _)| *s <= t + 1e-9)
                .map_or(0.0, |(_, b)| *b)
        };
        (at(to) - at(from)) / (to - from)
    }

    /// The states the receiver went through, in order, without repeats.
    pub fn receiver_states(&self) -> Vec<&'static str> {
        let mut states: Vec<&'static str> = Vec::new();
        for l in self.log.iter().filter(|l| l.role == Role::Receiver) {
            if states.last() != Some(&l.state) {
                states.push(l.state);
            }
        }
        states
    }

    /// The last value of an action kind the receiver asked for.
    pub fn last_receiver_action(&self, pick: fn(&Action) -> Option<Bytes>) -> Option<Bytes> {
        self.log
            .iter()
            .filter(|l| l.role == Role::Receiver)
            .flat_map(|l| l.actions.iter())
            .filter_map(pick)
            .next_back()
    }
}

/// `SetRcvBuf`'s size.
pub fn rcvbuf_of(a: &Action) -> Option<Bytes> {
    match a {
        Action::SetRcvBuf(b) => Some(*b),
        _ => None,
    }
}

/// `SetWindowClamp`'s size.
pub fn clamp_of(a: &Action) -> Option<Bytes> {
    match a {
        Action::SetWindowClamp(b) => Some(*b),
        _ => None,
    }
}

fn limits(host: &Host) -> Limits {
    Limits {
        rmem_max: Bytes(host.rmem_max as u64),
        wmem_max: Bytes(host.wmem_max as u64),
        tcp_rmem_max: Bytes(host.tcp_rmem[2] as u64),
        tcp_wmem_max: Bytes(host.tcp_wmem[2] as u64),
        mss: Bytes(MSS as u64),
    }
}

fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s.max(0.0))
}

fn us(s: f64) -> u32 {
    (s * 1e6).clamp(0.0, f64::from(u32::MAX)) as u32
}

fn receiver_sample(flow: &Flow) -> Sample {
    Sample {
        at: secs(flow.now),
        bytes: flow.received as u64,
        tcp_info: Some(TcpInfoSample {
            snd_mss_bytes: MSS as u32,
            rcv_mss_bytes: MSS as u32,
            data_segs_in: Some((flow.received / MSS) as u32),
            rcv_rtt_us: us(flow.srtt),
            rcv_wnd_bytes: Some(flow.advertised() as u32),
            rcv_ssthresh_bytes: flow.rcv_ssthresh() as u32,
            bytes_received: Some(flow.received as u64),
            rcv_ooopack: Some(flow.ooo_packets as u32),
            ..TcpInfoSample::default()
        }),
        buffers: Some(buffers(flow)),
    }
}

fn sender_sample(flow: &Flow) -> Sample {
    let s = flow.stats;
    let micros = |x: f64| Some((x * 1e6) as u64);
    Sample {
        at: secs(flow.now),
        bytes: (s.bytes_acked + flow.inflight) as u64,
        tcp_info: Some(TcpInfoSample {
            snd_mss_bytes: MSS as u32,
            rtt_us: us(flow.srtt),
            min_rtt_us: flow.min_rtt.is_finite().then(|| us(flow.min_rtt)),
            snd_cwnd_segs: (flow.cwnd / MSS) as u32,
            unacked_segs: (flow.inflight / MSS) as u32,
            busy_time_us: micros(s.busy),
            rwnd_limited_us: micros(s.rwnd_limited),
            sndbuf_limited_us: micros(s.sndbuf_limited),
            delivery_rate_bps: Some((flow.delivery_rate * 8.0) as u64),
            bytes_acked: Some(s.bytes_acked as u64),
            bytes_sent: Some(s.bytes_sent as u64),
            bytes_retrans: Some(s.bytes_retrans as u64),
            total_retrans_segs: s.retrans_segs as u32,
            snd_wnd_bytes: Some(flow.sender_window() as u32),
            notsent_bytes: Some(flow.notsent() as u32),
            ..TcpInfoSample::default()
        }),
        buffers: Some(buffers(flow)),
    }
}

fn buffers(flow: &Flow) -> BufferReading {
    BufferReading {
        rcvbuf_bytes: flow.rcvbuf as u64,
        sndbuf_bytes: flow.sndbuf as u64,
        window_clamp_bytes: flow.clamp.min(f64::from(u32::MAX)) as u32,
    }
}

/// A message in flight on the control channel.
struct Pending {
    at: f64,
    to: Role,
    event: Event,
}

/// Runs `scenario` and says what happened.
pub fn run(scenario: &Scenario) -> Outcome {
    let peer = if scenario.rightsize_peer {
        Peer::Rightsize
    } else {
        Peer::Other
    };
    let ctx = |role| Context {
        role,
        limits: limits(&scenario.host),
        peer,
        congestion: match (role, scenario.cc) {
            (Role::Sender, Cc::Bbr) => Congestion::Bbr,
            _ => Congestion::WindowBased,
        },
    };
    let rx = scenario
        .receiver
        .as_ref()
        .unwrap_or(&scenario.spec)
        .build(ctx(Role::Receiver));
    let tx = scenario
        .sender
        .as_ref()
        .unwrap_or(&scenario.spec)
        .build(ctx(Role::Sender));
    let mut conn = Conn::new(scenario, scenario.seed, rx, tx);
    let ticks = (scenario.seconds / TICK).round() as u64;
    for _ in 0..ticks {
        conn.tick(scenario);
    }
    conn.outcome(scenario)
}

/// Runs one connection per pair of tuners `ends` makes (its argument:
/// the connection's number), all through the one bottleneck of
/// `scenario.path` (its queue and its rate are shared; each flow has its
/// own RTT and random losses), each seeded apart. A tick steps them in
/// turn; what each says happened, and the most the windows and the
/// buffers summed to at any tick.
pub fn run_sharing(
    scenario: &Scenario,
    flows: usize,
    ends: &mut dyn FnMut(usize) -> (Box<dyn Tuner>, Box<dyn Tuner>),
) -> Shared {
    let mut conns: Vec<Conn> = (0..flows)
        .map(|i| {
            let (rx, tx) = ends(i);
            Conn::new(scenario, scenario.seed.wrapping_add(i as u64), rx, tx)
        })
        .collect();
    let mut bottleneck = 0.0;
    let mut peaks = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    let ticks = (scenario.seconds / TICK).round() as u64;
    for _ in 0..ticks {
        for conn in &mut conns {
            conn.flow.set_bottleneck_free_at(bottleneck);
            conn.tick(scenario);
            bottleneck = conn.flow.bottleneck_free_at();
        }
        let sum = |f: fn(&Flow) -> f64| conns.iter().map(|c| f(&c.flow)).sum::<f64>();
        peaks.0 = peaks.0.max(sum(Flow::advertised));
        peaks.1 = peaks.1.max(sum(|f| f.rcvbuf + f.sndbuf));
        peaks.2 = peaks.2.max(sum(|f| f.rcvbuf));
        peaks.3 = peaks.3.max(sum(|f| f.sndbuf));
    }
    Shared {
        flows: conns.into_iter().map(|c| c.outcome(scenario)).collect(),
        peak_window_sum: peaks.0,
        peak_buffers_sum: peaks.1,
        peak_rcvbuf_sum: peaks.2,
        peak_sndbuf_sum: peaks.3,
    }
}

/// What flows sharing one bottleneck did.
#[derive(Debug, Clone)]
pub struct Shared {
    /// Each flow's outcome.
    pub flows: Vec<Outcome>,
    /// The most the advertised windows summed to at one tick.
    pub peak_window_sum: f64,
    /// The most both ends' buffers (each receiver's receive buffer and
    /// each sender's send buffer) summed to at one tick.
    pub peak_buffers_sum: f64,
    /// The most the receivers' receive buffers summed to at one tick.
    pub peak_rcvbuf_sum: f64,
    /// The most the senders' send buffers summed to at one tick.
    pub peak_sndbuf_sum: f64,
}

impl Shared {
    /// The flows' goodput together, payload bytes per second.
    pub fn goodput(&self) -> f64 {
        self.flows.iter().map(|f| f.goodput).sum()
    }

    /// Jain's fairness index over the flows' goodputs.
    pub fn fairness(&self) -> f64 {
        let n = self.flows.len() as f64;
        let sum: f64 = self.flows.iter().map(|f| f.goodput).sum();
        let squares: f64 = self.flows.iter().map(|f| f.goodput * f.goodput).sum();
        if squares == 0.0 {
            return 0.0;
        }
        sum * sum / (n * squares)
    }
}

/// One modelled connection and the tuners at its two ends, with what the
/// driver keeps for them.
struct Conn {
    rx: Box<dyn Tuner>,
    tx: Box<dyn Tuner>,
    flow: Flow,
    pending: VecDeque<Pending>,
    log: Vec<Logged>,
    changes: VecDeque<(f64, Path)>,
    next_report: f64,
    next_probe: f64,
    next_rtt: f64,
    next_telemetry: f64,
    peaks: (f64, f64, f64),
    rcvbuf_time: f64,
    sndbuf_time: f64,
    received: Vec<(f64, f64)>,
    trace: Vec<Trace>,
}

impl Conn {
    /// The connection up: the tuners' settings applied, the control
    /// channel's RTT and the trains delivered.
    fn new(scenario: &Scenario, seed: u64, mut rx: Box<dyn Tuner>, mut tx: Box<dyn Tuner>) -> Conn {
        let mut log = Vec::new();
        let (rx_setup, tx_setup) = (rx.setup(), tx.setup());
        let pre = |rx: &Setup, tx: &Setup| SocketSettings {
            rcvbuf: rx.pre_handshake.rcvbuf.map(|b| b.get() as f64),
            clamp: rx.pre_handshake.window_clamp.map(|b| b.get() as f64),
            sndbuf: tx.pre_handshake.sndbuf.map(|b| b.get() as f64),
        };
        let mut flow = Flow::new(
            scenario.path,
            scenario.host,
            scenario.cc,
            seed,
            pre(&rx_setup, &tx_setup),
        );
        let mut pending: VecDeque<Pending> = VecDeque::new();
        // Before the first byte: the control channel's RTT and the trains.
        let mut first = vec![Event::ControlRtt(RttMeasurement {
            at: Duration::ZERO,
            rtt: secs(scenario.path.base_rtt),
        })];
        if let Some(factor) = scenario.trains {
            let wire = 10.0 * (MSS + HEADERS);
            for _ in 0..5 {
                first.push(Event::Train(TrainProbe {
                    at: Duration::ZERO,
                    bytes: wire as u64,
                    dispersion: secs(wire / (scenario.path.rate_bps / 8.0 * factor)),
                }));
            }
        }
        for event in &first {
            deliver(
                &mut *rx,
                Role::Receiver,
                event,
                &mut flow,
                &mut pending,
                scenario,
                &mut log,
            );
            deliver(
                &mut *tx,
                Role::Sender,
                event,
                &mut flow,
                &mut pending,
                scenario,
                &mut log,
            );
        }
        apply_settings(&mut flow, &rx_setup, &tx_setup);
        let mut changes = scenario.changes.clone();
        changes.sort_by(|a, b| a.0.total_cmp(&b.0));
        Conn {
            rx,
            tx,
            flow,
            pending,
            log,
            changes: changes.into(),
            next_report: REPORT_EVERY,
            next_probe: PROBES_EVERY,
            next_rtt: scenario.control_rtt_every,
            next_telemetry: 0.0,
            peaks: (0.0, 0.0, 0.0),
            rcvbuf_time: 0.0,
            sndbuf_time: 0.0,
            received: Vec::new(),
            trace: Vec::new(),
        }
    }

    /// One tick of the flow, and what its tuners hear and do in it.
    fn tick(&mut self, scenario: &Scenario) {
        let Conn {
            rx,
            tx,
            flow,
            pending,
            log,
            changes,
            next_report,
            next_probe,
            next_rtt,
            next_telemetry,
            peaks,
            rcvbuf_time,
            sndbuf_time,
            received,
            trace,
        } = self;
        while changes.front().is_some_and(|(t, _)| *t <= flow.now) {
            if let Some((_, path)) = changes.pop_front() {
                flow.set_path(path);
            }
        }
        flow.step();
        let now = flow.now;
        peaks.0 = peaks.0.max(flow.rcvbuf);
        peaks.1 = peaks.1.max(flow.sndbuf);
        peaks.2 = peaks.2.max(flow.advertised());
        *rcvbuf_time += flow.rcvbuf * TICK;
        *sndbuf_time += flow.sndbuf * TICK;
        let mut events: Vec<(Role, Event)> = Vec::new();
        while pending.front().is_some_and(|p| p.at <= now) {
            if let Some(p) = pending.pop_front() {
                events.push((p.to, p.event));
            }
        }
        let telemetry = now >= *next_telemetry;
        if telemetry {
            *next_telemetry += TELEMETRY_EVERY;
            received.push((now, flow.received));
            trace.push(Trace {
                at: now,
                cwnd: flow.cwnd,
                inflight: flow.inflight,
                window: flow.sender_window(),
                sndbuf: flow.sndbuf,
                queue_delay: flow.queue_delay(),
            });
        }
        let due = |t: &dyn Tuner| t.next_wakeup().is_some_and(|w| w <= secs(now));
        if telemetry || due(&**rx) {
            events.push((Role::Receiver, Event::Sample(receiver_sample(flow))));
        }
        if telemetry || due(&**tx) {
            events.push((Role::Sender, Event::Sample(sender_sample(flow))));
        }
        if now >= *next_rtt {
            *next_rtt += scenario.control_rtt_every;
            let m = RttMeasurement {
                at: secs(now),
                rtt: secs(flow.path_rtt()),
            };
            events.push((Role::Receiver, Event::ControlRtt(m)));
            events.push((Role::Sender, Event::ControlRtt(m)));
        }
        if scenario.udp_probes && now >= *next_probe {
            *next_probe += PROBES_EVERY;
            let mut lost = u32::from(std::mem::take(&mut flow.overflowed_since_probe));
            for _ in 0..PROBES_PER_REPORT {
                if flow.path.loss > 0.0 && rng_probe(flow) < flow.path.loss {
                    lost += 1;
                }
            }
            events.push((
                Role::Receiver,
                Event::UdpProbes(UdpProbeReport {
                    at: secs(now),
                    sent: PROBES_PER_REPORT,
                    lost: lost.min(PROBES_PER_REPORT),
                    rtt: Some(secs(flow.path_rtt())),
                }),
            ));
        }
        if scenario.rightsize_peer && now >= *next_report {
            *next_report += REPORT_EVERY;
            let info = sender_sample(flow).tcp_info.map(|i| PeerInfo {
                pace_bps: flow.pace.map(|p| (p * 8.0) as u64),
                ..PeerInfo::from_tcp_info(&i)
            });
            post(
                pending,
                Pending {
                    at: now + flow.path.base_rtt / 2.0 + flow.queue_delay(),
                    to: Role::Receiver,
                    event: Event::Peer(PeerReport {
                        at: Duration::ZERO,
                        info,
                        size: None,
                    }),
                },
            );
        }
        for (role, mut event) in events {
            match &mut event {
                Event::Peer(report) => report.at = secs(now),
                // Read when delivered, as the driver does: an earlier
                // event of this tick may have changed the sockets.
                Event::Sample(sample) => {
                    *sample = match role {
                        Role::Receiver => receiver_sample(flow),
                        Role::Sender => sender_sample(flow),
                    };
                }
                _ => {}
            }
            let tuner: &mut dyn Tuner = match role {
                Role::Receiver => &mut **rx,
                Role::Sender => &mut **tx,
            };
            deliver(tuner, role, &event, flow, pending, scenario, log);
        }
    }

    /// What happened, once the scenario's time is up.
    fn outcome(self, scenario: &Scenario) -> Outcome {
        Outcome {
            goodput: self.flow.received / scenario.seconds,
            retrans_bytes: self.flow.stats.bytes_retrans,
            peak_rcvbuf: self.peaks.0,
            mean_rcvbuf: self.rcvbuf_time / scenario.seconds,
            peak_sndbuf: self.peaks.1,
            mean_sndbuf: self.sndbuf_time / scenario.seconds,
            peak_window: self.peaks.2,
            log: self.log,
            received: self.received,
            trace: self.trace,
            receiver_state: self.rx.state(),
        }
    }
}

/// Probes share the path's random loss.
fn rng_probe(flow: &mut Flow) -> f64 {
    flow.probe_draw()
}

/// Queues a control-channel message, keeping the queue in time order.
fn post(pending: &mut VecDeque<Pending>, message: Pending) {
    let index = pending.partition_point(|p| p.at <= message.at);
    pending.insert(index, message);
}

fn apply_settings(flow: &mut Flow, rx: &Setup, tx: &Setup) {
    let after = rx.after_connect;
    if let Some(b) = after.rcvbuf {
        flow.set_rcvbuf(b.get() as f64);
    }
    if let Some(c) = after.window_clamp {
        flow.set_clamp(c.get() as f64);
    }
    if let Some(b) = tx.after_connect.sndbuf {
        flow.set_sndbuf(b.get() as f64);
    }
}

fn deliver(
    tuner: &mut dyn Tuner,
    role: Role,
    event: &Event,
    flow: &mut Flow,
    pending: &mut VecDeque<Pending>,
    scenario: &Scenario,
    log: &mut Vec<Logged>,
) {
    let decision = tuner.on_event(event);
    for action in &decision.actions {
        match (role, action) {
            (Role::Receiver, Action::SetRcvBuf(b)) => flow.set_rcvbuf(b.get() as f64),
            (Role::Receiver, Action::SetWindowClamp(c)) => flow.set_clamp(c.get() as f64),
            (Role::Sender, Action::SetSndBuf(b)) => flow.set_sndbuf(b.get() as f64),
            (Role::Sender, Action::SetMaxPacingRate(b)) => flow.pace = Some(b.get() as f64),
            (Role::Receiver, Action::TellPeerPace(b)) if scenario.sizes && scenario.pacing => post(
                pending,
                Pending {
                    at: flow.now + flow.path.base_rtt / 2.0,
                    to: Role::Sender,
                    event: Event::Peer(PeerReport {
                        at: Duration::ZERO,
                        info: Some(PeerInfo {
                            pace_bps: Some(b.get().saturating_mul(8)),
                            ..PeerInfo::default()
                        }),
                        size: None,
                    }),
                },
            ),
            (_, Action::TellPeer(size)) if scenario.sizes => {
                let (to, delay) = match role {
                    Role::Receiver => (Role::Sender, flow.path.base_rtt / 2.0),
                    Role::Sender => (Role::Receiver, flow.path_rtt() - flow.path.base_rtt / 2.0),
                };
                post(
                    pending,
                    Pending {
                        at: flow.now + delay,
                        to,
                        event: Event::Peer(PeerReport {
                            at: Duration::ZERO,
                            info: None,
                            size: Some(*size),
                        }),
                    },
                );
            }
            // The other direction's buffers do not matter to this flow.
            _ => {}
        }
    }
    if let Some(record) = decision.record {
        log.push(Logged {
            at: flow.now,
            role,
            state: record.state,
            reason: record.reason,
            actions: decision.actions,
        });
    }
}
