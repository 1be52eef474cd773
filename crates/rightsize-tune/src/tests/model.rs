//! A fluid model of one bulk TCP flow over one bottleneck, stepped by a
//! virtual clock, that produces what the tuners read and obeys what they
//! set.
//!
//! Path: a drop-tail queue of `queue_bytes` in front of a link of
//! `rate_bps` (on the wire: each `mss` of payload costs `mss + 52` bytes),
//! then `base_rtt` of propagation; random loss with a seeded PRNG. Sender:
//! slow start, then Reno or CUBIC (beta 0.7, C 0.4, with its TCP-friendly
//! floor; no HyStart), one window reduction per episode of losses (as
//! Linux's recovery: a loss of what was sent before the reduction is part
//! of it), and in the RTT of recovery that follows, sending as Linux's
//! proportional rate reduction allows (RFC 6937: in proportion to what the
//! ACKs deliver, so that a loss seen is no burst); losses seen one RTT
//! after the drop; or bbr (v1, simplified: [`Bbr`]); bytes in flight
//! capped by `min(cwnd, the receiver's window as advertised half an RTT
//! ago, the send buffer)`.
//! Receiver: the application reads at once; the window is
//! `min(TCP_WINDOW_CLAMP, scaling_ratio x SO_RCVBUF read-back,
//! rcv_ssthresh, 65535 << wscale)`, with `rcv_ssthresh` opening by two
//! bytes per byte received and the window scale fixed at the handshake
//! as Linux does. Buffers follow Linux: requests doubled and capped at
//! `rmem_max`/`wmem_max`; untouched ones autotuned (a simplified
//! `tcp_rcv_space_adjust`, which also raises the clamp, and send buffers of
//! two congestion windows of `tcp_sndbuf_expand`'s worst-case memory per
//! segment up to `tcp_wmem[2]`, of which two congestion windows of payload
//! are used). Unpaced, the sender sends
//! all its window lets out in one tick (a line-rate burst); with a pacing
//! ceiling (`SO_MAX_PACING_RATE`) it sends at most that rate's bytes per
//! tick, as Linux's internal pacing does, with no credit for idle time.

use std::collections::VecDeque;

/// Payload bytes per segment.
pub const MSS: f64 = 1448.0;
/// Header bytes per segment on the wire (IPv4 + TCP + timestamps).
pub const HEADERS: f64 = 52.0;
const TICK: f64 = 0.001;
const CUBIC_BETA: f64 = 0.7;
const CUBIC_C: f64 = 0.4;
/// Payload bytes of send buffer per byte of read-back (skb overhead).
const SEND_TRUESIZE: f64 = 1.25;
/// Send buffer the kernel's autotuning keeps per segment of congestion
/// window: `tcp_sndbuf_expand` counts two windows of its worst case per
/// segment, a 4 KiB power of two for a 1,448-byte segment and its headers
/// plus the `sk_buff`, 4,352 bytes (the demo's `kernel` sender peaked at
/// 16.16 MB on `lfn`, a congestion window of 1.1 x BDP).
const KERNEL_SNDBUF_PER_SEGMENT: f64 = 2.0 * 4352.0;
const INITIAL_CWND: f64 = 10.0 * MSS;
const INITIAL_RCV_WINDOW: f64 = 65_535.0;
/// Bytes per chunk of the fluid (four segments).
const CHUNK: f64 = 4.0 * MSS;

/// A small seeded PRNG (SplitMix64), so runs are reproducible.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// Uniform in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The path at one moment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Path {
    /// Bottleneck rate on the wire, bits per second.
    pub rate_bps: f64,
    /// Propagation round trip, seconds.
    pub base_rtt: f64,
    /// Drop-tail queue, wire bytes.
    pub queue_bytes: f64,
    /// Random loss probability per segment.
    pub loss: f64,
}

impl Path {
    /// Payload bytes per second the link carries.
    pub fn payload_rate(&self) -> f64 {
        self.rate_bps / 8.0 * MSS / (MSS + HEADERS)
    }

    /// Payload bandwidth-delay product, bytes.
    pub fn bdp(&self) -> f64 {
        self.payload_rate() * self.base_rtt
    }
}

/// The host's sysctls and the kernel's receive-memory ratio.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Host {
    pub rmem_max: f64,
    pub wmem_max: f64,
    pub tcp_rmem: [f64; 3],
    pub tcp_wmem: [f64; 3],
    /// Window per byte of receive buffer once data flows (`scaling_ratio`;
    /// 0.89 measured on 6.18 over veth, 0.5 is the old
    /// `tcp_adv_win_scale = 1` and the kernel's value before any data).
    pub scaling_ratio: f64,
}

impl Host {
    /// A data-transfer host: 32 MiB limits, the kernel's other defaults.
    pub fn tuned() -> Self {
        Host {
            rmem_max: 33_554_432.0,
            wmem_max: 33_554_432.0,
            tcp_rmem: [4096.0, 131_072.0, 33_554_432.0],
            tcp_wmem: [4096.0, 16_384.0, 4_194_304.0],
            scaling_ratio: 0.89,
        }
    }
}

/// Reno, CUBIC or bbr.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cc {
    Reno,
    Cubic,
    Bbr,
}

/// bbr's startup gain (2 / ln 2), for its pacing and its window.
const BBR_HIGH_GAIN: f64 = 2.885;
/// bbr's gains for its pacing in `PROBE_BW`, a round each.
const BBR_CYCLE: [f64; 8] = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
/// bbr's window in `PROBE_BW`: twice its estimate of the BDP.
const BBR_CWND_GAIN: f64 = 2.0;
/// bbr's bandwidth estimate is the most delivered in this many rounds.
const BBR_BW_ROUNDS: f64 = 10.0;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BbrMode {
    Startup,
    Drain,
    ProbeBw,
}

/// bbr v1 as Linux runs it, simplified: the bandwidth estimate is the
/// largest delivery rate of the last ten rounds (a round: a min-RTT); in
/// `STARTUP` it paces at 2.885 x that and grows its window by what is
/// acknowledged until the estimate grew by less than 1/4 in three rounds;
/// `DRAIN` paces at 1/2.885 until what is in flight is one BDP; then
/// `PROBE_BW` cycles its pacing gain (1.25, 0.75, then 1 for six rounds)
/// with a window of two BDPs. A loss does not reduce its window: what
/// was lost is sent again. No `PROBE_RTT` (runs here are 20 s long).
#[derive(Debug, Clone)]
struct Bbr {
    mode: BbrMode,
    samples: VecDeque<(f64, f64)>,
    full_bw: f64,
    full_bw_rounds: u32,
    round_start: f64,
    cycle: usize,
}

impl Bbr {
    fn new() -> Self {
        Bbr {
            mode: BbrMode::Startup,
            samples: VecDeque::new(),
            full_bw: 0.0,
            full_bw_rounds: 0,
            round_start: 0.0,
            cycle: 0,
        }
    }

    fn bw(&self) -> f64 {
        self.samples.iter().map(|(_, r)| *r).fold(0.0, f64::max)
    }

    fn gains(&self) -> (f64, f64) {
        match self.mode {
            BbrMode::Startup => (BBR_HIGH_GAIN, BBR_HIGH_GAIN),
            BbrMode::Drain => (1.0 / BBR_HIGH_GAIN, BBR_HIGH_GAIN),
            BbrMode::ProbeBw => (BBR_CYCLE[self.cycle], BBR_CWND_GAIN),
        }
    }
}

/// What the application set on a socket, as requests.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SocketSettings {
    pub rcvbuf: Option<f64>,
    pub sndbuf: Option<f64>,
    pub clamp: Option<f64>,
}

#[derive(Debug, Clone, Copy)]
struct InFlight {
    bytes: f64,
    arrive_at: f64,
    ack_at: f64,
    sent_at: f64,
    /// Bytes acknowledged when it was sent, for the delivery rate.
    acked_at_send: f64,
}

/// Cumulative sender-side counters, as `TCP_INFO` would show them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SenderStats {
    pub busy: f64,
    pub rwnd_limited: f64,
    pub sndbuf_limited: f64,
    pub bytes_sent: f64,
    pub bytes_acked: f64,
    pub bytes_retrans: f64,
    pub retrans_segs: f64,
}

/// One flow, its path and both sockets.
#[derive(Debug, Clone)]
pub struct Flow {
    pub path: Path,
    pub host: Host,
    pub cc: Cc,
    rng: Rng,
    pub now: f64,
    // Sender.
    pub cwnd: f64,
    ssthresh: f64,
    recovery_until: f64,
    cubic_wmax: f64,
    cubic_epoch: Option<f64>,
    pub inflight: f64,
    retrans_backlog: f64,
    pipe: VecDeque<InFlight>,
    /// Losses to be seen: when, how many bytes, and `bytes_sent` when
    /// they were sent.
    losses: VecDeque<(f64, f64, f64)>,
    /// `bytes_sent` when the window was last reduced (Linux's `high_seq`).
    recovery_high: f64,
    /// Proportional rate reduction in recovery: the window before the
    /// reduction, what the ACKs delivered and what was sent since, and what
    /// the last tick's ACKs delivered.
    prr_prior_cwnd: f64,
    prr_delivered: f64,
    prr_out: f64,
    acked_last: f64,
    bottleneck_free_at: f64,
    pub srtt: f64,
    pub min_rtt: f64,
    pub stats: SenderStats,
    /// The latest per-flight delivery rate, payload bytes per second.
    pub delivery_rate: f64,
    // Buffers: `None` while autotuned.
    rcvbuf_req: Option<f64>,
    sndbuf_req: Option<f64>,
    pub rcvbuf: f64,
    pub sndbuf: f64,
    pub clamp: f64,
    clamp_set: bool,
    max_window: f64,
    rcv_ssthresh: f64,
    adv_history: VecDeque<(f64, f64)>,
    /// The receiver's window per byte of buffer now: the kernel's default
    /// until data arrives.
    ratio: f64,
    // Receiver.
    pub received: f64,
    pub ooo_packets: f64,
    space_mark: (f64, f64, f64),
    /// Whether the queue overflowed since the UDP probes last looked (a
    /// probe then would have been lost too).
    pub overflowed_since_probe: bool,
    /// The sender's pacing ceiling, payload bytes per second, and the
    /// bytes it may still send this tick.
    pub pace: Option<f64>,
    pace_credit: f64,
    bbr: Bbr,
}

impl Flow {
    /// A flow whose sockets had `pre` applied before the handshake.
    pub fn new(path: Path, host: Host, cc: Cc, seed: u64, pre: SocketSettings) -> Self {
        let cap = |req: f64, max: f64| 2.0 * req.min(max);
        // The window scale: from the buffer if SO_RCVBUF was set (at the
        // default ratio of 0.5, before any data), else from the sysctls.
        let space = match pre.rcvbuf {
            Some(req) => cap(req, host.rmem_max) * 0.5,
            None => host.tcp_rmem[2].max(host.rmem_max),
        };
        let space = pre.clamp.map_or(space, |c| space.min(c));
        let scale = ((space.max(1.0).log2().floor() as i32) - 15).clamp(0, 14);
        let max_window = 65_535.0 * f64::from(1u32 << scale);
        let rcvbuf = pre
            .rcvbuf
            .map_or(host.tcp_rmem[1], |r| cap(r, host.rmem_max));
        let sndbuf = pre
            .sndbuf
            .map_or(host.tcp_wmem[1], |r| cap(r, host.wmem_max));
        Flow {
            path,
            host,
            cc,
            rng: Rng::new(seed),
            now: 0.0,
            cwnd: INITIAL_CWND,
            ssthresh: f64::INFINITY,
            recovery_until: 0.0,
            cubic_wmax: 0.0,
            cubic_epoch: None,
            inflight: 0.0,
            retrans_backlog: 0.0,
            pipe: VecDeque::new(),
            losses: VecDeque::new(),
            recovery_high: 0.0,
            prr_prior_cwnd: 0.0,
            prr_delivered: 0.0,
            prr_out: 0.0,
            acked_last: 0.0,
            bottleneck_free_at: 0.0,
            srtt: path.base_rtt,
            min_rtt: f64::INFINITY,
            stats: SenderStats::default(),
            delivery_rate: 0.0,
            rcvbuf_req: pre.rcvbuf,
            sndbuf_req: pre.sndbuf,
            rcvbuf,
            sndbuf,
            clamp: pre.clamp.unwrap_or(f64::INFINITY),
            clamp_set: pre.clamp.is_some(),
            max_window,
            rcv_ssthresh: INITIAL_RCV_WINDOW,
            adv_history: VecDeque::new(),
            ratio: 0.5,
            received: 0.0,
            ooo_packets: 0.0,
            space_mark: (0.0, 0.0, 0.0),
            overflowed_since_probe: false,
            pace: None,
            pace_credit: 0.0,
            bbr: Bbr::new(),
        }
    }

    /// A draw from the flow's PRNG (for the UDP probes' losses).
    pub fn probe_draw(&mut self) -> f64 {
        self.rng.next_f64()
    }

    pub fn set_rcvbuf(&mut self, req: f64) {
        self.rcvbuf_req = Some(req);
        self.rcvbuf = (2.0 * req.min(self.host.rmem_max)).max(2304.0);
    }

    pub fn set_sndbuf(&mut self, req: f64) {
        self.sndbuf_req = Some(req);
        self.sndbuf = (2.0 * req.min(self.host.wmem_max)).max(4608.0);
    }

    pub fn set_clamp(&mut self, clamp: f64) {
        let clamp = clamp.max(1152.0);
        if clamp < self.clamp {
            self.rcv_ssthresh = self.rcv_ssthresh.min(clamp);
        }
        self.clamp = clamp;
        self.clamp_set = true;
    }

    /// The window the receiver advertises now.
    /// `tcpi_rcv_ssthresh`: where the window's growth is.
    pub fn rcv_ssthresh(&self) -> f64 {
        self.rcv_ssthresh
    }

    pub fn advertised(&self) -> f64 {
        (self.rcvbuf * self.ratio)
            .min(self.clamp)
            .min(self.rcv_ssthresh)
            .min(self.max_window)
    }

    /// What the sender may have in flight by its send buffer.
    fn send_capacity(&self) -> f64 {
        match self.sndbuf_req {
            Some(_) => self.sndbuf / SEND_TRUESIZE,
            None => (2.0 * self.cwnd).min(self.host.tcp_wmem[2] / SEND_TRUESIZE),
        }
    }

    /// The path changes: the bytes waiting at the bottleneck stay, and
    /// leave at the new rate (what is already on its way keeps its times).
    pub fn set_path(&mut self, path: Path) {
        let backlog = (self.bottleneck_free_at - self.now).max(0.0) * self.path.rate_bps;
        self.path = path;
        self.bottleneck_free_at = self.now + backlog / path.rate_bps;
    }

    /// What a bulk writer keeps queued and not yet sent: the send buffer's
    /// room beyond what is in flight.
    pub fn notsent(&self) -> f64 {
        (self.send_capacity() - self.inflight).max(0.0)
    }

    /// The current RTT of a packet entering the queue now.
    pub fn path_rtt(&self) -> f64 {
        self.path.base_rtt + self.queue_delay()
    }

    /// When the bottleneck is free again: the queue in front of it, as
    /// a time. Flows that share one bottleneck pass it on.
    pub fn bottleneck_free_at(&self) -> f64 {
        self.bottleneck_free_at
    }

    /// The queue other flows left at the shared bottleneck.
    pub fn set_bottleneck_free_at(&mut self, at: f64) {
        self.bottleneck_free_at = at;
    }

    pub fn queue_delay(&self) -> f64 {
        (self.bottleneck_free_at - self.now).max(0.0)
    }

    /// Advances the clock by one tick.
    pub fn step(&mut self) {
        self.now += TICK;
        self.receive_arrivals();
        self.take_acks();
        self.detect_losses();
        self.autotune_receive();
        self.send();
    }

    fn receive_arrivals(&mut self) {
        let now = self.now;
        let first = self.received == 0.0;
        for p in self.pipe.iter_mut() {
            if p.arrive_at > now {
                break;
            }
            if p.bytes > 0.0 {
                self.received += p.bytes;
                self.rcv_ssthresh = (self.rcv_ssthresh + 2.0 * p.bytes)
                    .min(self.clamp)
                    .min(self.rcvbuf * self.ratio);
                p.bytes = -p.bytes;
            }
        }
        if first && self.received > 0.0 {
            // Linux measures its ratio on the first data and, with the
            // buffer locked, replaces the clamp with the window the buffer
            // gives (seen on 6.18).
            let changed = self.ratio != self.host.scaling_ratio;
            self.ratio = self.host.scaling_ratio;
            if changed && self.rcvbuf_req.is_some() && self.clamp_set {
                self.clamp = self.rcvbuf * self.ratio;
            }
        }
        let adv = self.advertised();
        self.adv_history.push_back((now, adv));
        let horizon = now - self.path.base_rtt / 2.0;
        while self.adv_history.len() > 1
            && self.adv_history.get(1).is_some_and(|(t, _)| *t <= horizon)
        {
            self.adv_history.pop_front();
        }
    }

    /// The receiver's window as the sender knows it (half an RTT old).
    pub fn sender_window(&self) -> f64 {
        self.adv_history
            .front()
            .map_or(INITIAL_RCV_WINDOW, |(_, w)| *w)
    }

    fn take_acks(&mut self) {
        let now = self.now;
        let mut acked = 0.0;
        self.acked_last = 0.0;
        while self.pipe.front().is_some_and(|p| p.ack_at <= now) {
            let Some(p) = self.pipe.pop_front() else {
                break;
            };
            let bytes = p.bytes.abs();
            acked += bytes;
            let rtt = p.ack_at - p.sent_at;
            self.srtt = 0.875 * self.srtt + 0.125 * rtt;
            self.min_rtt = self.min_rtt.min(rtt);
            self.stats.bytes_acked += bytes;
            self.delivery_rate = (self.stats.bytes_acked - p.acked_at_send) / rtt.max(TICK);
        }
        if acked <= 0.0 {
            return;
        }
        self.inflight = (self.inflight - acked).max(0.0);
        if self.cc == Cc::Bbr {
            self.bbr_on_ack(acked);
            return;
        }
        if now < self.recovery_until {
            self.prr_delivered += acked;
            self.acked_last = acked;
            return;
        }
        let window_limited = self.sender_window().min(self.send_capacity()) < self.cwnd;
        if self.cwnd < self.ssthresh {
            // Linux grows in slow start while in flight >= cwnd / 2.
            if !window_limited || self.cwnd < 2.0 * self.inflight.max(self.sender_window()) {
                self.cwnd += acked;
            }
            return;
        }
        if window_limited {
            return;
        }
        let segs = self.cwnd / MSS;
        let acked_segs = acked / MSS;
        let inc = match self.cc {
            Cc::Reno | Cc::Bbr => acked_segs / segs,
            Cc::Cubic => {
                let epoch = *self.cubic_epoch.get_or_insert(now);
                let k = (self.cubic_wmax * (1.0 - CUBIC_BETA) / CUBIC_C).cbrt();
                let t = now - epoch + self.min_rtt.min(1.0);
                let target = self.cubic_wmax + CUBIC_C * (t - k).powi(3);
                let cubic = if target > segs {
                    ((target - segs) / segs).min(0.5) * acked_segs
                } else {
                    0.01 * acked_segs / segs
                };
                let friendly = 3.0 * (1.0 - CUBIC_BETA) / (1.0 + CUBIC_BETA) * acked_segs / segs;
                cubic.max(friendly)
            }
        };
        self.cwnd += inc * MSS;
    }

    fn detect_losses(&mut self) {
        let now = self.now;
        while self.losses.front().is_some_and(|(t, _, _)| *t <= now) {
            let Some((_, bytes, sent)) = self.losses.pop_front() else {
                break;
            };
            self.inflight = (self.inflight - bytes).max(0.0);
            self.retrans_backlog += bytes;
            // Every segment that arrived behind the hole, about the
            // flight sent since, is out of order until the retransmission.
            self.ooo_packets += (bytes / MSS).ceil() + (self.inflight / MSS).floor();
            if now >= self.recovery_until && sent > self.recovery_high && self.cc != Cc::Bbr {
                let beta = match self.cc {
                    Cc::Reno | Cc::Bbr => 0.5,
                    Cc::Cubic => CUBIC_BETA,
                };
                let segs = self.cwnd / MSS;
                // CUBIC's fast convergence.
                self.cubic_wmax = if segs < self.cubic_wmax {
                    segs * (1.0 + CUBIC_BETA) / 2.0
                } else {
                    segs
                };
                self.cubic_epoch = None;
                self.prr_prior_cwnd = self.cwnd;
                self.prr_delivered = 0.0;
                self.prr_out = 0.0;
                self.cwnd = (self.cwnd * beta).max(2.0 * MSS);
                self.ssthresh = self.cwnd;
                self.recovery_until = now + self.srtt;
                self.recovery_high = self.stats.bytes_sent;
            }
        }
    }

    /// Receive autotuning (`tcp_rcv_space_adjust`, simplified) while
    /// `SO_RCVBUF` is untouched; like Linux 6.18, it raises the clamp too.
    fn autotune_receive(&mut self) {
        let (mark_at, mark_bytes, space) = self.space_mark;
        if self.now - mark_at < self.srtt {
            return;
        }
        let copied = self.received - mark_bytes;
        self.space_mark = (self.now, self.received, space.max(copied));
        if self.rcvbuf_req.is_some() || copied <= space {
            return;
        }
        let mut rcvwin = 2.0 * copied + 16.0 * MSS;
        if space > 0.0 {
            rcvwin += 2.0 * rcvwin * (copied - space) / space;
        }
        let rcvbuf = (rcvwin / self.ratio).min(self.host.tcp_rmem[2]);
        if rcvbuf > self.rcvbuf {
            self.rcvbuf = rcvbuf;
            if self.clamp_set {
                self.clamp = rcvbuf * self.ratio;
            }
        }
    }

    /// bbr's rounds, estimate and window, at an ACK of `acked` bytes.
    fn bbr_on_ack(&mut self, acked: f64) {
        let now = self.now;
        let min_rtt = self.min_rtt.min(self.srtt);
        let inflight = self.inflight;
        let bbr = &mut self.bbr;
        bbr.samples.push_back((now, self.delivery_rate));
        while bbr
            .samples
            .front()
            .is_some_and(|(t, _)| now - t > BBR_BW_ROUNDS * min_rtt)
        {
            bbr.samples.pop_front();
        }
        let bw = bbr.bw();
        if now - bbr.round_start >= min_rtt {
            bbr.round_start = now;
            match bbr.mode {
                BbrMode::Startup => {
                    if bw >= 1.25 * bbr.full_bw {
                        bbr.full_bw = bw;
                        bbr.full_bw_rounds = 0;
                    } else {
                        bbr.full_bw_rounds += 1;
                        if bbr.full_bw_rounds >= 3 {
                            bbr.mode = BbrMode::Drain;
                        }
                    }
                }
                BbrMode::Drain => {
                    if inflight <= bw * min_rtt {
                        bbr.mode = BbrMode::ProbeBw;
                        bbr.cycle = 0;
                    }
                }
                BbrMode::ProbeBw => bbr.cycle = (bbr.cycle + 1) % BBR_CYCLE.len(),
            }
        }
        let target = bbr.gains().1 * bw * min_rtt + 3.0 * MSS;
        self.cwnd = if bbr.mode == BbrMode::Startup && self.cwnd < target {
            self.cwnd + acked
        } else if bbr.mode == BbrMode::Startup {
            self.cwnd
        } else {
            (self.cwnd + acked).min(target)
        }
        .max(4.0 * MSS);
    }

    /// The rate bbr paces at, if the sender runs bbr.
    fn bbr_pace(&self) -> Option<f64> {
        (self.cc == Cc::Bbr).then(|| {
            let bw = self.bbr.bw();
            let bw = if bw > 0.0 {
                bw
            } else {
                self.cwnd / self.srtt.max(TICK)
            };
            self.bbr.gains().0 * bw
        })
    }

    fn send(&mut self) {
        let window = self.sender_window();
        let capacity = self.send_capacity();
        let allowed = self.cwnd.min(window).min(capacity);
        let mut room = (allowed - self.inflight).max(0.0);
        let in_recovery = self.now < self.recovery_until && self.cc != Cc::Bbr;
        if in_recovery {
            // RFC 6937 with its slow-start reduction bound, as Linux.
            let ssthresh = self.cwnd;
            let prr = if self.inflight > ssthresh {
                self.prr_delivered * ssthresh / self.prr_prior_cwnd.max(MSS) - self.prr_out
            } else {
                (ssthresh - self.inflight)
                    .min((self.prr_delivered - self.prr_out).max(self.acked_last) + MSS)
            };
            room = (window.min(capacity) - self.inflight)
                .max(0.0)
                .min(prr.max(0.0));
        }
        let pace = match (self.pace, self.bbr_pace()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if let Some(pace) = pace {
            // No credit for idle time: at most one segment carries over.
            self.pace_credit = (self.pace_credit + pace * TICK).min(pace * TICK + MSS);
            room = room.min(self.pace_credit);
        }
        let bytes = (room / MSS).floor() * MSS;
        if pace.is_some() {
            self.pace_credit -= bytes;
        }
        if bytes > 0.0 {
            if in_recovery {
                self.prr_out += bytes;
            }
            if self.sndbuf_req.is_none() {
                self.sndbuf = (self.cwnd / MSS * KERNEL_SNDBUF_PER_SEGMENT)
                    .max(self.sndbuf)
                    .min(self.host.tcp_wmem[2]);
            }
            let retrans = bytes.min(self.retrans_backlog);
            self.retrans_backlog -= retrans;
            self.stats.bytes_retrans += retrans;
            self.stats.retrans_segs += (retrans / MSS).round();
            self.stats.bytes_sent += bytes;
            self.inflight += bytes;
            self.enqueue(bytes);
        }
        // What stopped the sender once it sent all it could (the kernel
        // counts the time the window or the buffer held data back).
        self.stats.busy += TICK;
        let full = self.inflight + MSS > allowed;
        if full && window < self.cwnd && window <= capacity {
            // Paced, Linux counts the time the window held data back only
            // while the pacer would have sent: about 1 - the window's rate
            // over the pace (24 to 48 ms in 100, measured, at 145 Mbit/s
            // of window behind a pace of 187).
            let share = self.pace.map_or(1.0, |pace| {
                (1.0 - window / self.srtt.max(f64::MIN_POSITIVE) / pace).clamp(0.0, 1.0)
            });
            self.stats.rwnd_limited += TICK * share;
        } else if full && capacity < self.cwnd {
            self.stats.sndbuf_limited += TICK;
        }
    }

    fn enqueue(&mut self, bytes: f64) {
        let now = self.now;
        let wire_per_byte = (MSS + HEADERS) / MSS;
        let link = self.path.rate_bps / 8.0;
        let backlog = (self.bottleneck_free_at - now).max(0.0) * link;
        let space = (self.path.queue_bytes - backlog).max(0.0) / wire_per_byte;
        let accepted = (bytes.min(space) / MSS).floor() * MSS;
        let mut dropped = bytes - accepted;
        if dropped > 0.0 {
            self.overflowed_since_probe = true;
        }
        let mut kept = accepted;
        if self.path.loss > 0.0 {
            let packets = (accepted / MSS) as u64;
            for _ in 0..packets {
                if self.rng.next_f64() < self.path.loss {
                    kept -= MSS;
                    dropped += MSS;
                }
            }
        }
        let start = self.bottleneck_free_at.max(now);
        self.bottleneck_free_at = start + accepted * wire_per_byte / link;
        if dropped > 0.0 {
            // Seen when the ACKs of what follows come back.
            let seen = self.bottleneck_free_at + self.path.base_rtt;
            self.losses
                .push_back((seen, dropped, self.stats.bytes_sent));
        }
        // Packets leave the bottleneck one after another: split what was
        // kept into small chunks, so that ACKs come back spread out at the
        // bottleneck's rate, as the ACK clock does.
        let share = if accepted > 0.0 { kept / accepted } else { 0.0 };
        let mut offset = 0.0;
        while offset < accepted {
            let piece = (accepted - offset).min(CHUNK);
            offset += piece;
            let depart = start + offset * wire_per_byte / link;
            self.pipe.push_back(InFlight {
                bytes: piece * share,
                arrive_at: depart + self.path.base_rtt / 2.0,
                ack_at: depart + self.path.base_rtt,
                sent_at: now,
                acked_at_send: self.stats.bytes_acked,
            });
        }
    }
}

mod tests;
