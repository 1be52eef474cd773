//! The prober: one UDP socket connected to the responder, one thread.
//!
//! First the trains, one at a time: a request (padded to one train packet,
//! as the responder demands), then the packets until all came, the
//! timeout passed or the prober is stopped; each train gives a
//! [`ProbeEvent::Train`] or a [`ProbeEvent::TrainDiscarded`], and the next
//! request waits [`TRAIN_SPACING`] after it ended, so trains never overlap
//! and the bottleneck queue drains between them. Up to
//! [`ProberOptions::train_attempts`] requests are sent for
//! [`ProberOptions::trains`] samples. Then, if asked for, the probe stream:
//! a probe every [`ProberOptions::probe_interval`] on a fixed schedule (a
//! late thread skips probes rather than bursting), and a
//! [`ProbeEvent::UdpProbes`] every [`ProberOptions::report_every`] or on
//! [`Prober::request_report`].

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rightsize_path::cross::IpVersion;
use rightsize_path::probe::wire::HEADER_BYTES;
use rightsize_path::probe::{
    DEFAULT_LOSS_TIMEOUT, DEFAULT_MTU_BYTES, DEFAULT_REPORT_EVERY, DEFAULT_TRAIN_PACKETS,
    DEFAULT_TRAIN_TIMEOUT, MAX_TRAIN_PACKET_BYTES, MAX_TRAIN_PACKETS, Message, PROBE_INTERVAL,
    PacketVerdict, ProbeLedger, TRAIN_ATTEMPTS, TRAIN_SPACING, TrainMeter, TrainRequest,
    probe_payload_bytes, train_payload_bytes,
};
use rightsize_tune::TRAINS;

use super::io::{Stamper, enable_kernel_timestamps, recv_stamped, wall_now};
use super::{POLL_INTERVAL, ProbeError, ProbeEvent, is_timeout, spawn};

/// Where arrival times come from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Timestamps {
    /// The kernel's receive time (`SO_TIMESTAMPNS`), taken as the packet
    /// enters the stack: a train's dispersion is the path's, not the
    /// prober thread's wake-up. Falls back to [`Timestamps::User`] where
    /// the kernel does not stamp.
    #[default]
    Kernel,
    /// The monotonic clock read after each `recvmsg` returns. A train's
    /// first packet wakes the thread; the rest are often already queued
    /// when it reads them, so the dispersion shrinks and the capacity is
    /// overstated (on loopback, by orders of magnitude).
    User,
}

/// How a [`Prober`] probes; [`ProberOptions::default`] is SOBAS's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProberOptions {
    /// Train samples wanted, [`TRAINS`] (five, the SOBAS paper, IV-B); 0 skips the
    /// trains.
    pub trains: usize,
    /// Train requests sent at most, [`TRAIN_ATTEMPTS`]; a lost train is
    /// asked for again.
    pub train_attempts: usize,
    /// Packets per train, [`DEFAULT_TRAIN_PACKETS`], 2 to
    /// [`MAX_TRAIN_PACKETS`].
    pub train_packets: u16,
    /// UDP payload of each train packet, bytes; `None` fills a 1,500-byte
    /// MTU (1,472 over IPv4, 1,452 over IPv6). At most
    /// [`MAX_TRAIN_PACKET_BYTES`]; it should fill the path's MTU, since
    /// the estimate counts headers per packet.
    pub train_packet_bytes: Option<u16>,
    /// How long to wait for a train's packets after its request,
    /// [`DEFAULT_TRAIN_TIMEOUT`]; above the path's RTT.
    pub train_timeout: Duration,
    /// Whether to run the probe stream after the trains (SOBAS reads it;
    /// `auto` needs the trains only).
    pub udp_probes: bool,
    /// Time between probes, [`PROBE_INTERVAL`] (10 ms).
    pub probe_interval: Duration,
    /// Time between reports, [`DEFAULT_REPORT_EVERY`] (100 ms).
    pub report_every: Duration,
    /// How long a probe may go unanswered before it counts as lost,
    /// [`DEFAULT_LOSS_TIMEOUT`]; above the path's RTT with a full queue.
    pub loss_timeout: Duration,
    /// Where arrival times come from.
    pub timestamps: Timestamps,
}

impl Default for ProberOptions {
    fn default() -> Self {
        ProberOptions {
            trains: TRAINS,
            train_attempts: TRAIN_ATTEMPTS,
            train_packets: DEFAULT_TRAIN_PACKETS,
            train_packet_bytes: None,
            train_timeout: DEFAULT_TRAIN_TIMEOUT,
            udp_probes: true,
            probe_interval: PROBE_INTERVAL,
            report_every: DEFAULT_REPORT_EVERY,
            loss_timeout: DEFAULT_LOSS_TIMEOUT,
            timestamps: Timestamps::Kernel,
        }
    }
}

impl ProberOptions {
    /// Refuses what the datagrams cannot carry or the loop cannot do.
    fn check(&self) -> Result<(), ProbeError> {
        let bad = |option, value: String, expected: String| ProbeError::BadOption {
            option,
            value,
            expected,
        };
        if !(2..=MAX_TRAIN_PACKETS).contains(&self.train_packets) {
            return Err(bad(
                "train_packets",
                self.train_packets.to_string(),
                format!("2 to {MAX_TRAIN_PACKETS}"),
            ));
        }
        if let Some(bytes) = self.train_packet_bytes
            && !(HEADER_BYTES as u16..=MAX_TRAIN_PACKET_BYTES).contains(&bytes)
        {
            return Err(bad(
                "train_packet_bytes",
                bytes.to_string(),
                format!("{HEADER_BYTES} to {MAX_TRAIN_PACKET_BYTES} bytes"),
            ));
        }
        for (option, value) in [
            ("train_timeout", self.train_timeout),
            ("probe_interval", self.probe_interval),
            ("report_every", self.report_every),
            ("loss_timeout", self.loss_timeout),
        ] {
            if value.is_zero() {
                return Err(bad(option, "0".into(), "above 0".into()));
            }
        }
        Ok(())
    }
}

/// A running prober; dropping it stops its thread.
#[derive(Debug)]
pub struct Prober {
    local: SocketAddr,
    timestamps: Timestamps,
    stop: Arc<AtomicBool>,
    report_now: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Prober {
    /// Starts probing the responder at `peer`; `sink` receives every
    /// event, on the prober's thread, with times since `opened` (the data
    /// connection's opening).
    pub fn start(
        peer: SocketAddr,
        opened: Instant,
        sink: Box<dyn FnMut(ProbeEvent) + Send>,
        options: ProberOptions,
    ) -> Result<Prober, ProbeError> {
        if peer.ip().is_unspecified() || peer.port() == 0 {
            return Err(ProbeError::NotADestination { addr: peer });
        }
        options.check()?;
        let os = |call| {
            move |source| ProbeError::Os {
                call,
                addr: peer,
                source,
            }
        };
        let (any, ip): (SocketAddr, _) = match peer {
            SocketAddr::V4(_) => ((Ipv4Addr::UNSPECIFIED, 0).into(), IpVersion::V4),
            SocketAddr::V6(_) => ((Ipv6Addr::UNSPECIFIED, 0).into(), IpVersion::V6),
        };
        let socket = UdpSocket::bind(any).map_err(os("bind(UDP)"))?;
        socket.connect(peer).map_err(os("connect(UDP)"))?;
        let local = socket.local_addr().map_err(os("getsockname"))?;
        let timestamps = match options.timestamps {
            Timestamps::Kernel if enable_kernel_timestamps(&socket).is_ok() => Timestamps::Kernel,
            _ => Timestamps::User,
        };
        let mut key = [0u8; 8];
        crate::random::fill_random(&mut key)?;
        let stop = Arc::new(AtomicBool::new(false));
        let report_now = Arc::new(AtomicBool::new(false));
        let worker = Worker {
            socket,
            peer,
            ip,
            opened,
            key: u64::from_ne_bytes(key),
            sink,
            options,
            stop: Arc::clone(&stop),
            report_now: Arc::clone(&report_now),
            buf: vec![0u8; usize::from(MAX_TRAIN_PACKET_BYTES) + 1],
            stamper: Stamper::default(),
        };
        let thread = spawn("prober", move || worker.run())?;
        Ok(Prober {
            local,
            timestamps,
            stop,
            report_now,
            thread: Some(thread),
        })
    }

    /// The local address its socket sends from.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Where its arrival times come from (the kernel's, unless the kernel
    /// refused or [`Timestamps::User`] was asked for).
    pub fn timestamps(&self) -> Timestamps {
        self.timestamps
    }

    /// Asks for a probe-stream report now, besides the periodic ones (it
    /// comes within one probe interval).
    pub fn request_report(&self) {
        self.report_now.store(true, Ordering::Relaxed);
    }

    /// Whether its thread has ended (the trains done and no probe stream
    /// asked for, or an error).
    pub fn is_finished(&self) -> bool {
        self.thread.as_ref().is_none_or(|t| t.is_finished())
    }
}

impl Drop for Prober {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// After the first train, each request waits this many of its
/// dispersions after the previous one (and at least [`TRAIN_SPACING`]),
/// so that trains asked for in one round do not meet in the bottleneck
/// queue: at 200 Mbit/s a train of 48 packets lasts 2.9 ms, and five
/// trains one RTT apart took 0.55 s of a 100 ms path's startup.
const TRAIN_GAP_DISPERSIONS: u32 = 3;

/// One datagram received: its length and arrival since open.
type Arrived = Option<(usize, Duration)>;

struct Worker {
    socket: UdpSocket,
    peer: SocketAddr,
    ip: IpVersion,
    opened: Instant,
    key: u64,
    sink: Box<dyn FnMut(ProbeEvent) + Send>,
    options: ProberOptions,
    stop: Arc<AtomicBool>,
    report_now: Arc<AtomicBool>,
    buf: Vec<u8>,
    stamper: Stamper,
}

impl Worker {
    fn run(mut self) {
        if let Err(error) = self.probe() {
            let at = self.since_open();
            (self.sink)(ProbeEvent::Failed {
                at,
                error: format!("{error:#}"),
            });
        }
    }

    fn probe(&mut self) -> Result<(), String> {
        if self.options.trains > 0 {
            self.trains()?;
        }
        if self.options.udp_probes {
            self.stream()?;
        }
        Ok(())
    }

    fn since_open(&self) -> Duration {
        Instant::now().saturating_duration_since(self.opened)
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Waits until `deadline` (at most [`POLL_INTERVAL`]) for a datagram.
    fn receive(&mut self, deadline: Instant) -> Result<Arrived, String> {
        let wait = deadline
            .saturating_duration_since(Instant::now())
            .clamp(Duration::from_micros(100), POLL_INTERVAL);
        self.socket
            .set_read_timeout(Some(wait))
            .map_err(|e| format!("setsockopt(SO_RCVTIMEO) on {}: {e}", self.peer))?;
        match recv_stamped(&self.socket, &mut self.buf) {
            Ok(got) => {
                let (user, wall) = (self.since_open(), wall_now());
                let at = self.stamper.arrival(user, wall, got.kernel);
                Ok(Some((got.len.min(self.buf.len()), at)))
            }
            Err(err) if is_timeout(&err) => Ok(None),
            // An ICMP error for an earlier datagram (the responder is not
            // there yet, or went away): what it means shows as loss.
            Err(err) if err.raw_os_error() == Some(libc::ECONNREFUSED) => Ok(None),
            Err(err) => Err(format!("recvmsg from {}: {err}", self.peer)),
        }
    }

    fn send(&self, datagram: &[u8]) -> Result<(), String> {
        match self.socket.send(datagram) {
            Ok(_) => Ok(()),
            // See `receive`; and a full buffer loses this datagram only.
            Err(err)
                if matches!(
                    err.raw_os_error(),
                    Some(libc::ECONNREFUSED | libc::EAGAIN | libc::ENOBUFS)
                ) =>
            {
                Ok(())
            }
            Err(err) => Err(format!("send to {}: {err}", self.peer)),
        }
    }

    fn trains(&mut self) -> Result<(), String> {
        let packet_bytes = self
            .options
            .train_packet_bytes
            .unwrap_or_else(|| train_payload_bytes(DEFAULT_MTU_BYTES, self.ip));
        let (mut measured, mut requested) = (0, 0);
        // Until one train is measured, one at a time; then the ones still
        // wanted in one round, each request this far after the previous.
        let mut spacing = TRAIN_SPACING;
        while measured < self.options.trains
            && requested < self.options.train_attempts
            && !self.stopped()
        {
            let wanted = if measured == 0 {
                1
            } else {
                (self.options.trains - measured).min(self.options.train_attempts - requested)
            };
            let meters = self.train_round(wanted, &mut requested, packet_bytes, spacing)?;
            if self.stopped() {
                return Ok(());
            }
            for meter in &meters {
                let event = match meter.finish() {
                    Ok(sample) => {
                        measured += 1;
                        spacing =
                            spacing.max(sample.dispersion.saturating_mul(TRAIN_GAP_DISPERSIONS));
                        ProbeEvent::Train(sample)
                    }
                    Err(reason) => ProbeEvent::TrainDiscarded {
                        at: self.since_open(),
                        reason,
                    },
                };
                (self.sink)(event);
            }
            // Spaced from the end of this round, not from its requests, so
            // that the responder (whose gate wants half of it) sees the
            // spacing however late it served them.
            let next = Instant::now() + TRAIN_SPACING;
            while Instant::now() < next && !self.stopped() {
                std::thread::sleep(next.saturating_duration_since(Instant::now()));
            }
        }
        let at = self.since_open();
        (self.sink)(ProbeEvent::TrainsDone {
            at,
            measured,
            requested,
        });
        Ok(())
    }

    /// Asks for `wanted` trains, `spacing` apart, and meters their packets
    /// until all arrived or the timeout passed after the last request.
    fn train_round(
        &mut self,
        wanted: usize,
        requested: &mut usize,
        packet_bytes: u16,
        spacing: Duration,
    ) -> Result<Vec<TrainMeter>, String> {
        let mut meters: Vec<TrainMeter> = Vec::with_capacity(wanted);
        let mut next_send = Instant::now();
        let mut last_sent = next_send;
        self.stamper.reset();
        while !self.stopped() {
            let now = Instant::now();
            if meters.len() < wanted && now >= next_send {
                let train = u32::try_from(*requested).unwrap_or(u32::MAX);
                let request = TrainRequest {
                    train,
                    packets: self.options.train_packets,
                    packet_bytes,
                    stamp: self.key.rotate_left(32) ^ u64::from(train),
                };
                // Padded to one train packet: the responder refuses less.
                let datagram = Message::TrainRequest(request)
                    .datagram(usize::from(packet_bytes))
                    .map_err(|e| format!("train request: {e}"))?;
                self.send(&datagram)?;
                *requested += 1;
                meters.push(TrainMeter::new(&request, self.ip));
                last_sent = now;
                next_send = now + spacing;
                continue;
            }
            let all_sent = meters.len() == wanted;
            let deadline = if all_sent {
                last_sent + self.options.train_timeout
            } else {
                next_send
            };
            if all_sent && (meters.iter().all(TrainMeter::is_complete) || now >= deadline) {
                break;
            }
            if let Some((len, at)) = self.receive(deadline)?
                && let Ok(Message::TrainPacket(p)) = Message::parse(&self.buf[..len])
            {
                for meter in &mut meters {
                    if meter.on_packet(&p, len, at) != PacketVerdict::NotThisTrain {
                        break;
                    }
                }
            }
        }
        Ok(meters)
    }

    fn stream(&mut self) -> Result<(), String> {
        let interval = self.options.probe_interval;
        let every = self.options.report_every;
        let mut ledger = ProbeLedger::new(self.key, self.options.loss_timeout);
        let mut probe = vec![0u8; usize::from(probe_payload_bytes(self.ip))];
        let start = Instant::now();
        let (mut next_probe, mut next_report) = (start, start + every);
        while !self.stopped() {
            let now = Instant::now();
            if now >= next_probe {
                let message = Message::Probe(ledger.send(self.since_open()));
                message
                    .encode(&mut probe)
                    .map_err(|e| format!("probe: {e}"))?;
                self.send(&probe)?;
                next_probe = next_after(next_probe, interval, now);
            }
            if now >= next_report || self.report_now.swap(false, Ordering::Relaxed) {
                let report = ledger.report(self.since_open());
                (self.sink)(ProbeEvent::UdpProbes(report));
                if now >= next_report {
                    next_report = next_after(next_report, every, now);
                }
            }
            self.stamper.reset();
            if let Some((len, at)) = self.receive(next_probe.min(next_report))?
                && let Ok(Message::Echo(echo)) = Message::parse(&self.buf[..len])
            {
                ledger.on_echo(&echo, at);
            }
        }
        Ok(())
    }
}

/// The next tick of a schedule after `tick`, skipping ticks already past
/// `now` (a late thread does not burst to catch up).
fn next_after(tick: Instant, period: Duration, now: Instant) -> Instant {
    let next = tick + period;
    if next > now {
        return next;
    }
    let behind = now.duration_since(tick).as_nanos() / period.as_nanos().max(1);
    tick + period * u32::try_from(behind + 1).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_late_schedule_skips_instead_of_bursting() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        assert_eq!(next_after(t0, ms(10), t0 + ms(3)), t0 + ms(10));
        assert_eq!(next_after(t0, ms(10), t0 + ms(10)), t0 + ms(20));
        assert_eq!(next_after(t0, ms(10), t0 + ms(35)), t0 + ms(40));
    }

    #[test]
    fn options_are_checked_before_any_socket() {
        let mut options = ProberOptions {
            train_packets: 1,
            ..ProberOptions::default()
        };
        let err = options.check().map(|_| ()).err().map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("probe option train_packets = 1: 2 to 64")
        );
        options.train_packets = 11;
        options.train_packet_bytes = Some(9_000);
        assert!(options.check().is_err());
        options.train_packet_bytes = None;
        options.report_every = Duration::ZERO;
        let err = options.check().map(|_| ()).err().map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("probe option report_every = 0: above 0")
        );
    }
}
