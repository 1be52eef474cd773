//! What `auto` knows about the flow, merged from every source it has.
//!
//! The sender's `TCP_INFO` says the most (whether the window or the send
//! buffer stopped it, its smoothed and minimum RTT, its retransmissions):
//! a sender reads its own, a receiver gets it in the reports of a rightsize
//! peer. A receiver on its own falls back to its goodput, its receiver-side
//! RTT (`tcpi_rcv_rtt`), control-channel RTTs and out-of-order arrivals
//! (`tcpi_rcv_ooopack`) as the sign of a loss. [`Observer`] keeps that
//! history and turns each [`Sample`] into one [`View`].

use std::time::Duration;

use crate::Role;
use crate::input::{PeerInfo, PeerReport, Sample};
use crate::meter::{MeterError, RateMeter, WindowedMax, micros};
use crate::tcpinfo::TcpInfoSample;
use crate::telemetry::BufferReading;

/// The bottleneck-rate estimate is the largest rate seen over this long.
const BW_WINDOW: Duration = Duration::from_secs(2);

/// A peer report older than this is not used for the current sample.
const PEER_FRESH: Duration = Duration::from_millis(500);

/// A receiver reads a loss from out-of-order arrivals once more than this
/// many arrived since its last sample without any: every segment that
/// arrives behind a lost one is out of order until the retransmission
/// fills the hole, about an RTT of the flow (the sender itself waits for
/// three such before it retransmits), where a segment the path only
/// reordered puts one in. Read from any, a path that reordered a packet
/// and lost none (`lfn` on a loaded 2-core machine: 0 segments
/// retransmitted in the run) was ridden out as a random loss: the window
/// went to 2.25 x BDP, a peak receive buffer of 11.3 MB where the other
/// runs peaked at 4.4 (measured, `rightsize get` from `rightsize serve`).
const REORDERED: u32 = 2;

/// The shortest lookback for a rate.
const MIN_RATE_LOOKBACK: Duration = Duration::from_millis(10);

/// The bottleneck rate is measured over this many RTTs: a window-limited
/// flow delivers in bursts, and over one RTT a sample may catch one burst
/// or two; over several the error shrinks to a fraction of one.
const BW_LOOKBACK_RTTS: u32 = 4;

/// The flow as of one sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct View {
    /// Time of the sample.
    pub at: Duration,
    /// Delivery rate, bytes per second: the sender's `tcpi_delivery_rate`
    /// when known, else this end's goodput over the last two RTTs.
    pub rate: Option<f64>,
    /// The current RTT (smoothed, so with any queue in it).
    pub rtt: Option<Duration>,
    /// The least RTT of the last two peer reports, when they are within
    /// an RTT of each other; else [`View::rtt`]. A queue stands for
    /// longer than half an RTT, a host's stall does not: the sender's
    /// smoothed RTT follows each ACK closely, and on a 2-core machine
    /// that ran the hosts and the emulator it read 14 to 17% up in a
    /// report while its 100 ms telemetry before and after read 1 to 5%,
    /// the window steady and nothing queued (measured between two
    /// rightsize ends on 200 Mbit/s x 100 ms).
    pub settled_rtt: Option<Duration>,
    /// The propagation RTT: the least RTT seen since the last reset.
    pub rt_prop: Option<Duration>,
    /// The largest delivery rate, measured over [`BW_LOOKBACK_RTTS`],
    /// of the last [`BW_WINDOW`], bytes/s.
    pub btl_bw: Option<f64>,
    /// Share of the sender's busy time stopped by the receive window in
    /// the latest interval, if the sender's `TCP_INFO` is known.
    pub rwnd_share: Option<f64>,
    /// Share stopped by the sender's own send buffer, likewise.
    pub sndbuf_share: Option<f64>,
    /// Whether a loss showed since the previous sample (retransmissions
    /// on the sender, out-of-order arrivals on the receiver).
    pub loss: bool,
    /// Out-of-order arrivals that read as a loss while a rightsize
    /// sender's fresh reports say it retransmitted nothing: the path may
    /// only have reordered (between two rightsize ends on `lfn`, 0
    /// segments retransmitted in the run, such a sign was ridden out as a
    /// random loss: a window of 2.5 x BDP, a peak receive buffer of 10.8
    /// MB where the other runs peaked at 4.4, measured). A loss that fills
    /// a queue shows in the sender's next report, or in the RTT now.
    pub unconfirmed_loss: bool,
    /// The window this end advertises (`tcpi_rcv_wnd`), bytes.
    pub rcv_wnd: Option<u64>,
    /// Where the kernel's receive-window growth is (`tcpi_rcv_ssthresh`),
    /// bytes: the window opens towards the clamp as data arrives.
    pub rcv_ssthresh: Option<u64>,
    /// The buffers and clamp as read back, if they could be read.
    pub buffers: Option<BufferReading>,
    /// Bytes in flight (`tcpi_unacked x tcpi_snd_mss`) on a sender.
    pub inflight: Option<u64>,
    /// What this end's own counter saw in the last propagation RTT, bytes
    /// per second: fresher than the sender's reports, which come late.
    pub recent_rate: Option<f64>,
    /// A receiver's bytes that arrived and were not read yet, counted
    /// from its arrivals (`tcpi_data_segs_in`): behind a hole after a
    /// loss, those that came beyond it.
    pub held: Option<u64>,
}

impl View {
    /// A loss, or out-of-order arrivals not confirmed as one: either way
    /// segments wait in the receive buffer behind a hole, and the window
    /// the kernel advertises says nothing of the memory (read as if it
    /// did while the sender's reports had not yet confirmed the loss
    /// behind bbr with random losses, 0.376 per byte raised the buffer
    /// from 10.9 to 18.1 MB, measured).
    pub fn behind_a_hole(&self) -> bool {
        self.loss || self.unconfirmed_loss
    }
}

/// The sender's counters at one moment, to difference.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
struct SenderCounters {
    busy_us: Option<u64>,
    rwnd_us: Option<u64>,
    sndbuf_us: Option<u64>,
    retrans: Option<u64>,
}

impl SenderCounters {
    fn from_peer(info: &PeerInfo) -> Self {
        SenderCounters {
            busy_us: info.busy_time_us,
            rwnd_us: info.rwnd_limited_us,
            sndbuf_us: info.sndbuf_limited_us,
            retrans: info
                .bytes_retrans
                .or(info.total_retrans_segs.map(u64::from)),
        }
    }

    /// Shares of the busy time between `before` and `self`, and whether
    /// anything was retransmitted.
    fn since(&self, before: &SenderCounters) -> (Option<f64>, Option<f64>, bool) {
        let busy = self
            .busy_us
            .zip(before.busy_us)
            .map(|(n, b)| n.saturating_sub(b))
            .filter(|&b| b > 0);
        let share = |now: Option<u64>, then: Option<u64>| {
            let part = now?.saturating_sub(then?);
            Some((part as f64 / busy? as f64).min(1.0))
        };
        let retrans = matches!((self.retrans, before.retrans), (Some(n), Some(b)) if n > b);
        (
            share(self.rwnd_us, before.rwnd_us),
            share(self.sndbuf_us, before.sndbuf_us),
            retrans,
        )
    }
}

/// The sender's latest interval, as seen in its counters.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
struct SenderInterval {
    at: Duration,
    rwnd_share: Option<f64>,
    sndbuf_share: Option<f64>,
    rtt: Option<Duration>,
    min_rtt: Option<Duration>,
    /// `tcpi_delivery_rate`, bytes per second.
    delivery_rate: Option<f64>,
}

/// Keeps the history `auto` needs and makes a [`View`] of each sample.
#[derive(Debug, Clone)]
pub struct Observer {
    role: Role,
    delivered: RateMeter,
    rt_prop: Option<Duration>,
    /// Whether the data connection gave an RTT yet.
    data_rtt_seen: bool,
    /// The last kernel `min_rtt` seen: a new, lower one is news.
    kernel_min_rtt: Option<Duration>,
    btl_bw: WindowedMax,
    control_rtt: Option<Duration>,
    sender: Option<SenderInterval>,
    /// The peer report before the latest: when, and its RTT.
    report_before: Option<(Duration, Duration)>,
    sender_counters: Option<SenderCounters>,
    /// A loss seen in a peer report, not yet reported in a view.
    pending_loss: bool,
    /// `tcpi_rcv_ooopack` at the last sample that added none, and at the
    /// last sample.
    ooopack: Option<(u32, u32)>,
    last_peer: Option<PeerReport>,
    /// A receiver's arrivals: the last `tcpi_data_segs_in` and the bytes
    /// they add up to.
    arrived: Option<(u32, u64)>,
}

impl Observer {
    /// An observer for a receiver or a sender.
    pub fn new(role: Role) -> Self {
        Observer {
            role,
            delivered: RateMeter::default(),
            rt_prop: None,
            data_rtt_seen: false,
            kernel_min_rtt: None,
            btl_bw: WindowedMax::new(BW_WINDOW),
            control_rtt: None,
            sender: None,
            report_before: None,
            sender_counters: None,
            pending_loss: false,
            ooopack: None,
            last_peer: None,
            arrived: None,
        }
    }

    /// The bytes that reached a receiver so far, in order or not:
    /// `tcpi_data_segs_in` segments of `tcpi_rcv_mss`, summed sample by
    /// sample (the counter is 32 bits). What the application read is no
    /// measure of the path: a recovery hands over at once everything that
    /// waited behind a hole, and a goodput over two RTTs read 333 Mbit/s
    /// on a 200 Mbit/s path behind a bbr sender with random losses
    /// (measured). `None` where the kernel does not count segments.
    fn arrivals(&mut self, info: &TcpInfoSample) -> Option<u64> {
        let segs = info.data_segs_in?;
        let mss = u64::from(info.rcv_mss_bytes.max(1));
        let total = match self.arrived {
            Some((before, total)) => {
                total.saturating_add(u64::from(segs.wrapping_sub(before)) * mss)
            }
            None => u64::from(segs) * mss,
        };
        self.arrived = Some((segs, total));
        Some(total)
    }

    /// The propagation RTT estimate, if any RTT was seen.
    pub fn rt_prop(&self) -> Option<Duration> {
        self.rt_prop
    }

    /// An RTT of the data connection.
    fn see_data_rtt(&mut self, rtt: Duration) {
        if !rtt.is_zero() {
            self.data_rtt_seen = true;
            self.see_rtt(rtt);
        }
    }

    fn see_rtt(&mut self, rtt: Duration) {
        if !rtt.is_zero() {
            self.rt_prop = Some(self.rt_prop.map_or(rtt, |p| p.min(rtt)));
        }
    }

    fn see_kernel_min_rtt(&mut self, min_rtt: Option<Duration>) {
        if let Some(m) = min_rtt
            && self.kernel_min_rtt.is_none_or(|old| m < old)
        {
            self.kernel_min_rtt = Some(m);
            self.see_data_rtt(m);
        }
    }

    /// Starts the propagation RTT again from `rtt`: the path's RTT rose.
    pub fn reset_rt_prop(&mut self, rtt: Duration) {
        self.rt_prop = Some(rtt);
    }

    /// Starts the bottleneck-rate estimate again from `rate`: the path
    /// got slower.
    pub fn reset_btl_bw(&mut self, at: Duration, rate: f64) {
        self.btl_bw.reset(at, rate);
    }

    /// An RTT from the control channel. It is the propagation RTT only
    /// until the data connection gives one: the control connection's
    /// smoothed RTT rests on the few segments this end sends there, and
    /// lags a path whose RTT changed by seconds (after a rise from 100 to
    /// 160 ms it read 156 ms, and the data's RTT of 160 ms then showed a
    /// queue that was not there: the window stayed at three quarters of
    /// the path's for 7 s, measured).
    pub fn control_rtt(&mut self, rtt: Duration) {
        self.control_rtt = Some(rtt);
        if !self.data_rtt_seen {
            self.see_rtt(rtt);
        }
    }

    /// A peer report (already checked by [`PeerReport::check`]).
    pub fn peer(&mut self, report: &PeerReport) {
        let Some(info) = report.info else {
            return;
        };
        let counters = SenderCounters::from_peer(&info);
        let rtt = info.rtt_us.and_then(micros);
        self.report_before = self.sender.and_then(|s| Some((s.at, s.rtt?)));
        if let Some(rtt) = rtt {
            self.see_data_rtt(rtt);
        }
        self.see_kernel_min_rtt(info.min_rtt_us.and_then(micros));
        self.take_counters(report.at, counters, rtt, &info);
        self.last_peer = Some(*report);
    }

    /// The last accepted peer report, to check the next against.
    pub fn last_peer(&self) -> Option<&PeerReport> {
        self.last_peer.as_ref()
    }

    fn take_counters(
        &mut self,
        at: Duration,
        counters: SenderCounters,
        rtt: Option<Duration>,
        info: &PeerInfo,
    ) {
        let (rwnd_share, sndbuf_share, retrans) = match &self.sender_counters {
            Some(before) => counters.since(before),
            None => (None, None, false),
        };
        self.pending_loss |= retrans;
        self.sender_counters = Some(counters);
        self.sender = Some(SenderInterval {
            at,
            rwnd_share,
            sndbuf_share,
            rtt,
            min_rtt: info.min_rtt_us.and_then(micros),
            delivery_rate: info
                .delivery_rate_bps
                .filter(|&r| r > 0)
                .map(|r| r as f64 / 8.0),
        });
    }

    /// Makes the view of `sample`; refuses a sample that goes back.
    pub fn sample(&mut self, sample: &Sample) -> Result<View, MeterError> {
        let info = sample.tcp_info.as_ref();
        // A sender counts what the peer acknowledged, when the kernel says.
        let delivered = match (self.role, info) {
            (Role::Sender, Some(i)) => i.bytes_acked.unwrap_or(sample.bytes),
            // Once counted by arrivals, always: the two counts differ.
            (Role::Receiver, Some(i)) => match self.arrivals(i) {
                Some(bytes) => bytes,
                None => self.arrived.map_or(sample.bytes, |(_, total)| total),
            },
            (_, None) => self.arrived.map_or(sample.bytes, |(_, total)| total),
        };
        self.delivered.push(sample.at, delivered)?;
        let held = (self.role == Role::Receiver && info.is_some_and(|i| i.data_segs_in.is_some()))
            .then(|| delivered.saturating_sub(sample.bytes));
        let mut loss = std::mem::take(&mut self.pending_loss);
        let mut unconfirmed_loss = false;
        let mut rcv_wnd = None;
        let mut rcv_ssthresh = None;
        let mut inflight = None;
        if let Some(info) = info {
            rcv_wnd = info.rcv_wnd_bytes.map(u64::from);
            rcv_ssthresh = Some(u64::from(info.rcv_ssthresh_bytes)).filter(|&b| b > 0);
            match self.role {
                Role::Sender => {
                    inflight = Some(info.inflight_bytes());
                    let own = PeerInfo::from_tcp_info(info);
                    let rtt = own.rtt_us.and_then(micros);
                    if let Some(rtt) = rtt {
                        self.see_data_rtt(rtt);
                    }
                    self.see_kernel_min_rtt(own.min_rtt_us.and_then(micros));
                    self.take_counters(sample.at, SenderCounters::from_peer(&own), rtt, &own);
                    loss |= std::mem::take(&mut self.pending_loss);
                }
                Role::Receiver => {
                    if let Some(rtt) = micros(info.rcv_rtt_us) {
                        self.see_data_rtt(rtt);
                    }
                    // A rightsize sender's reports say what it
                    // retransmitted: out-of-order arrivals alone then may
                    // be the path's reordering ([`View::unconfirmed_loss`]).
                    let reported = self.sender_counters.is_some_and(|c| c.retrans.is_some())
                        && self
                            .sender
                            .is_some_and(|s| sample.at.saturating_sub(s.at) <= PEER_FRESH);
                    if let Some(ooo) = info.rcv_ooopack {
                        let (quiet, last) = self.ooopack.unwrap_or((ooo, ooo));
                        let lost = ooo != last && ooo.wrapping_sub(quiet) > REORDERED;
                        loss |= lost && !reported;
                        unconfirmed_loss = lost && reported;
                        self.ooopack = Some(if ooo == last {
                            (ooo, ooo)
                        } else {
                            (quiet, ooo)
                        });
                    }
                }
            }
        }
        let fresh = self
            .sender
            .filter(|s| sample.at.saturating_sub(s.at) <= PEER_FRESH);
        let rtt = fresh
            .and_then(|s| s.rtt.or(s.min_rtt))
            .or_else(|| info.and_then(|i| micros(i.rcv_rtt_us)))
            .or(self.control_rtt);
        let lookback = rtt.unwrap_or(MIN_RATE_LOOKBACK).max(MIN_RATE_LOOKBACK);
        let settled_rtt = match (self.role, fresh, self.report_before) {
            (Role::Receiver, Some(now), Some((then, before))) => now
                .rtt
                .filter(|&r| now.at.saturating_sub(then) <= r)
                .map(|r| r.min(before))
                .or(rtt),
            _ => rtt,
        };
        // The kernel's delivery rate covers exactly one flight; a rate from
        // the byte counter over one RTT may catch one burst of a
        // window-limited flow, or two.
        let rate = fresh
            .and_then(|s| s.delivery_rate)
            .or_else(|| self.delivered.rate_over(lookback * 2));
        if let Some(long) = self.delivered.rate_over(lookback * BW_LOOKBACK_RTTS) {
            self.btl_bw.update(sample.at, long);
        }
        self.btl_bw.expire(sample.at);
        let recent_rate = self.rt_prop.and_then(|p| self.delivered.rate_over(p));
        Ok(View {
            at: sample.at,
            rate,
            rtt,
            settled_rtt,
            rt_prop: self.rt_prop,
            btl_bw: self.btl_bw.get(),
            rwnd_share: fresh.and_then(|s| s.rwnd_share),
            sndbuf_share: fresh.and_then(|s| s.sndbuf_share),
            loss,
            unconfirmed_loss: unconfirmed_loss && !loss,
            rcv_wnd,
            rcv_ssthresh,
            buffers: sample.buffers,
            inflight,
            recent_rate,
            held,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// A receiver's sample at `at_ms`: `read` bytes read by the
    /// application, `segs` data segments of 1448 bytes arrived, at an RTT
    /// of 100 ms.
    fn receiver(at_ms: u64, read: u64, segs: u32) -> Sample {
        Sample {
            at: Duration::from_millis(at_ms),
            bytes: read,
            tcp_info: Some(TcpInfoSample {
                rcv_mss_bytes: 1448,
                rcv_rtt_us: 100_000,
                data_segs_in: Some(segs),
                ..TcpInfoSample::default()
            }),
            buffers: None,
        }
    }

    #[test]
    fn a_receivers_rate_counts_arrivals_not_what_a_recovery_hands_over() {
        let mut obs = Observer::new(Role::Receiver);
        // 25 MB/s arrive all along (17,265 segments a second, the counter
        // wrapping on the way); the application reads them as they come,
        // then nothing for 150 ms (a hole), then all that waited at once.
        let start = u32::MAX - 20_000;
        let mut read = 0;
        let mut rates = Vec::new();
        for step in 0..=60 {
            let at_ms = 10 * step;
            let segs = start.wrapping_add((17_265 * at_ms / 1000) as u32);
            let arrived = 17_265 * at_ms / 1000 * 1448;
            if !(300..450).contains(&at_ms) {
                read = arrived;
            }
            rates.push(obs.sample(&receiver(at_ms, read, segs)).unwrap().rate);
        }
        for (step, rate) in rates.iter().enumerate().skip(21) {
            let rate = rate.unwrap();
            assert!(
                (rate / 25e6 - 1.0).abs() < 0.02,
                "{} ms: {rate:.0} B/s",
                step * 10
            );
        }
    }

    #[test]
    fn a_reordered_segment_is_no_loss_and_the_segments_behind_a_hole_are() {
        let mut obs = Observer::new(Role::Receiver);
        let mut loss = |at_ms: u64, ooo: u32| {
            let mut s = receiver(at_ms, 0, 0);
            if let Some(info) = s.tcp_info.as_mut() {
                info.rcv_ooopack = Some(ooo);
            }
            obs.sample(&s).unwrap().loss
        };
        // The path swaps two segments now and then: one out of order each
        // time, with quiet samples between.
        let mut seen = Vec::new();
        for (i, ooo) in [7, 8, 8, 9, 9, 10, 11, 11].into_iter().enumerate() {
            seen.push(loss(10 * i as u64, ooo));
        }
        assert!(seen.iter().all(|&l| !l), "{seen:?}");
        // A lost segment: every one behind it arrives out of order until
        // the retransmission, read from the third on, sample by sample.
        let seen: Vec<bool> = [13, 40, 90, 90]
            .into_iter()
            .enumerate()
            .map(|(i, ooo)| loss(100 + 10 * i as u64, ooo))
            .collect();
        assert_eq!(seen, [false, true, true, false]);
    }

    #[test]
    fn out_of_order_arrivals_are_unconfirmed_while_the_senders_reports_say_no_loss() {
        let mut obs = Observer::new(Role::Receiver);
        let mut sample = |at_ms: u64, ooo: u32, report: Option<u64>| {
            if let Some(retrans) = report {
                obs.peer(&PeerReport {
                    at: Duration::from_millis(at_ms),
                    info: Some(PeerInfo {
                        bytes_retrans: Some(retrans),
                        ..PeerInfo::default()
                    }),
                    size: None,
                });
            }
            let mut s = receiver(at_ms + 1, 0, 0);
            if let Some(info) = s.tcp_info.as_mut() {
                info.rcv_ooopack = Some(ooo);
            }
            let view = obs.sample(&s).unwrap();
            (view.loss, view.unconfirmed_loss)
        };
        // The path reorders a burst; the sender retransmits nothing.
        let seen: Vec<(bool, bool)> = [(0, 0), (50, 0), (100, 40), (150, 90), (200, 90)]
            .into_iter()
            .map(|(at, ooo)| sample(at, ooo, Some(0)))
            .collect();
        let (no, unconfirmed) = ((false, false), (false, true));
        assert_eq!(seen, [no, no, unconfirmed, unconfirmed, no]);
        // The sender retransmits: its next report says so.
        assert_eq!(sample(250, 120, Some(1448)), (true, false));
        // Reports stop: out-of-order arrivals are the sign again.
        assert_eq!(sample(1000, 120, None), no);
        assert_eq!(sample(1010, 200, None), (true, false));
    }

    #[test]
    fn an_rtt_up_in_one_report_is_not_settled_and_up_in_two_is() {
        let mut obs = Observer::new(Role::Receiver);
        // Reports every 50 ms on a 100 ms path; each sample follows one.
        let mut report = |at_ms: u64, rtt_ms: u32| {
            obs.peer(&PeerReport {
                at: Duration::from_millis(at_ms),
                info: Some(PeerInfo {
                    rtt_us: Some(rtt_ms * 1000),
                    min_rtt_us: Some(100_000),
                    ..PeerInfo::default()
                }),
                size: None,
            });
            let view = obs.sample(&receiver(at_ms + 1, 0, 0)).unwrap();
            (view.rtt.unwrap(), view.settled_rtt.unwrap())
        };
        let ms = Duration::from_millis;
        assert_eq!(report(0, 101), (ms(101), ms(101)), "no report before");
        assert_eq!(report(50, 116), (ms(116), ms(101)), "a host's stall");
        assert_eq!(report(100, 102), (ms(102), ms(102)));
        assert_eq!(report(150, 115), (ms(115), ms(102)));
        assert_eq!(report(200, 117), (ms(117), ms(115)), "a queue");
        // Reports more than an RTT apart say nothing of each other.
        assert_eq!(report(400, 130), (ms(130), ms(130)));
    }

    #[test]
    fn a_receiver_without_segment_counts_uses_what_it_read() {
        let mut obs = Observer::new(Role::Receiver);
        let mut sample = |at_ms: u64, read: u64| {
            let mut s = receiver(at_ms, read, 0);
            if let Some(info) = s.tcp_info.as_mut() {
                info.data_segs_in = None;
            }
            obs.sample(&s).unwrap().rate
        };
        sample(0, 0);
        let rate = sample(200, 5_000_000).unwrap();
        assert!((rate - 25e6).abs() < 1.0, "{rate}");
    }
}
