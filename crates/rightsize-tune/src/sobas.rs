//! `sobas`: socket buffer auto-sizing at the application layer (the SOBAS
//! paper, docs/sources.md),
//! the whole state machine of its Fig. 8, on the receiver.
//!
//! - Before the handshake both buffers are set to their maximum, for the
//!   window scale (section IV-B).
//! - A capacity estimate `C'` comes from the average dispersion of five
//!   packet trains; the first size is `S = 1.2 x C' x T` (state 1).
//! - The RTT `T` is a running average of the UDP probe RTTs (100-byte
//!   probes every 10 ms, echoed by the peer); their loss decides whether
//!   the path is congested (section IV-B).
//! - Throughput is sampled every `2 x T` (section IV-B).
//! - While buffer-limited, `S` grows by one MSS per `T` (states 2 and 4).
//! - `flat-rate`: five successive near-equal samples, two in slow start
//!   (states 1 and 2, footnote 3); `const-rate-drop`: a significant drop
//!   after two near-equal samples.
//! - On either, `S = R x T` on a non-congested path (state 6) and the
//!   maximum on a congested one (state 5), once (section IV: "SOBAS adjusts
//!   the socket buffer size only once").
//!
//! `S` is a window, as in the paper's model (`W <= S`). Linux 6.5+ offers
//! more window than the request (about 1.78 x on 6.18: the request doubled,
//! times a measured payload ratio of 0.89), so the request that gives a
//! window `S` is computed from the ratio `tcpi_rcv_wnd` shows
//! ([`WindowRatio`]); `S = MAX` is the largest request itself.
//!
//! Where the paper leaves a number open, the choice is a named constant
//! below. Two readings of ours: "buffer-limited" compares `R x T_min` (the
//! exogenous RTT) with `S`, since `R x T` with the inflated RTT equals the
//! window whatever limits it; and after a `const-rate-drop` the final size
//! uses `T_min`, since the running average then includes the full queue
//! that just overflowed. And the congestion verdict counts only probes lost
//! while the transfer's rate was steady: losses while it climbs (slow
//! start's bursts overflow the queue first, appendix) or just before it
//! drops are its own. It is checked at every sample of states 1 to 4 (the
//! "congested path" edge of Fig. 8) and at the final decision (Fig. 7).
//!
//! Blind spots kept from the paper: a flow that is buffer-limited below
//! capacity looks flat too (one MSS per RTT barely moves the rate) and is
//! finalised there; so is a flow that lost packets early in slow start and
//! crawls back in congestion avoidance, if it crawls flat enough.

use std::collections::VecDeque;
use std::time::Duration;

use super::meter::{
    RateMeter, WindowRatio, bytes_capped, micros, scaled, show_bytes, show_ms, show_rate,
};
use super::{Action, Context, Decision, Event, Inputs, Role, Sample, Settings, Setup, Tuner};
use super::{TrainProbe, UdpProbeReport};
use crate::units::Bytes;

/// Packet trains averaged for `C'` (section IV-B).
pub const TRAINS: usize = 5;

/// The first size is this many `C' x T` (Fig. 8).
const CAPACITY_FACTOR: f64 = 1.2;

/// Samples are taken every this many RTTs (section IV-B).
const SAMPLE_RTTS: f64 = 2.0;

/// Near-equal samples for `flat-rate` in slow start (footnote 3) and after.
const FLAT_SAMPLES_SLOW_START: usize = 2;
const FLAT_SAMPLES: usize = 5;

/// Samples are "almost equal" when the largest is within this fraction of
/// the smallest (the paper gives no number).
const FLAT_TOLERANCE: f64 = 0.05;

/// A "significant" drop: the rate falls by more than this fraction.
const DROP_FRACTION: f64 = 0.2;

/// Buffer-limited when `R x T_min` reaches this share of `S`.
const BUFFER_LIMITED_SHARE: f64 = 0.9;

/// Weight of a new RTT in the running average (TCP's 1/8, RFC 6298).
const RTT_GAIN: f64 = 0.125;

/// How many past sampling periods the congestion verdict looks at.
const LOSS_LOOKBACK: usize = 20;

/// The states of Fig. 8, plus the wait for the capacity estimate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before `C'` and `T` are known; `S` is the maximum.
    Estimating,
    /// State 1: slow start after `S = 1.2 C' T`.
    SlowStart,
    /// State 2: slow start, buffer-limited, `S += MSS` per `T`.
    SlowStartLimited,
    /// State 3: congestion avoidance after a rate drop.
    Avoidance,
    /// State 4: congestion avoidance, buffer-limited, `S += MSS` per `T`.
    AvoidanceLimited,
    /// State 5: congested path, `S = MAX`.
    Congested,
    /// State 6: `S = R x T`, final.
    Final,
}

impl State {
    fn name(self) -> &'static str {
        match self {
            State::Estimating => "estimate-capacity",
            State::SlowStart => "slow-start",
            State::SlowStartLimited => "slow-start-buffer-limited",
            State::Avoidance => "congestion-avoidance",
            State::AvoidanceLimited => "congestion-avoidance-buffer-limited",
            State::Congested => "congested-max",
            State::Final => "final",
        }
    }

    fn flat_samples(self) -> usize {
        match self {
            State::SlowStart | State::SlowStartLimited => FLAT_SAMPLES_SLOW_START,
            _ => FLAT_SAMPLES,
        }
    }

    fn is_limited(self) -> bool {
        matches!(self, State::SlowStartLimited | State::AvoidanceLimited)
    }
}

/// One sampling period as the congestion verdict sees it.
#[derive(Debug, Clone, Copy)]
struct Period {
    probe_loss: bool,
    /// The rate fell significantly, or rose beyond "near-equal": the
    /// transfer was changing its own load (slow start, a loss).
    changing: bool,
    rate_drop: bool,
}

/// SOBAS at one end; only the receiver acts.
#[derive(Debug, Clone)]
pub struct Sobas {
    ctx: Context,
    state: State,
    /// `S`, the window, bytes (`rmem_max` in the `MAX` states).
    size: Bytes,
    ratio: WindowRatio,
    /// Trains so far: total bytes and total dispersion.
    trains: usize,
    train_bytes: u64,
    train_dispersion: Duration,
    /// `C'`, IP-layer bytes per second.
    capacity: Option<f64>,
    rtt_avg: Option<Duration>,
    rtt_min: Option<Duration>,
    /// Whether an RTT came from the UDP probes (they replace the others).
    probe_rtt_seen: bool,
    meter: RateMeter,
    period_start: Option<Duration>,
    last_increase: Duration,
    rates: VecDeque<f64>,
    periods: VecDeque<Period>,
    probe_lost_in_period: u32,
    said_no_rtt: bool,
}

impl Sobas {
    /// SOBAS for the end `ctx` describes.
    pub fn new(ctx: Context) -> Self {
        Sobas {
            ctx,
            state: State::Estimating,
            size: ctx.limits.rmem_max,
            ratio: WindowRatio::default(),
            trains: 0,
            train_bytes: 0,
            train_dispersion: Duration::ZERO,
            capacity: None,
            rtt_avg: None,
            rtt_min: None,
            probe_rtt_seen: false,
            meter: RateMeter::default(),
            period_start: None,
            last_increase: Duration::ZERO,
            rates: VecDeque::new(),
            periods: VecDeque::new(),
            probe_lost_in_period: 0,
            said_no_rtt: false,
        }
    }

    fn rtt_sample(&mut self, rtt: Duration) {
        self.rtt_min = Some(self.rtt_min.map_or(rtt, |m| m.min(rtt)));
        self.rtt_avg = Some(match self.rtt_avg {
            Some(avg) => scaled(avg, 1.0 - RTT_GAIN) + scaled(rtt, RTT_GAIN),
            None => rtt,
        });
    }

    fn on_train(&mut self, train: &TrainProbe) -> Decision {
        if train.dispersion.is_zero() || train.bytes == 0 {
            return Decision::note(
                self.state.name(),
                "packet train ignored: no bytes or no dispersion",
            );
        }
        if self.trains >= TRAINS {
            return Decision::none();
        }
        self.trains += 1;
        self.train_bytes = self.train_bytes.saturating_add(train.bytes);
        self.train_dispersion = self.train_dispersion.saturating_add(train.dispersion);
        if self.trains == TRAINS {
            // The average dispersion of equal trains: total over total.
            self.capacity = Some(self.train_bytes as f64 / self.train_dispersion.as_secs_f64());
        }
        self.maybe_first_size()
    }

    fn on_probes(&mut self, report: &UdpProbeReport) -> Decision {
        if report.lost > report.sent {
            return Decision::note(
                self.state.name(),
                format!(
                    "UDP probe report ignored: {} lost of {} sent",
                    report.lost, report.sent
                ),
            );
        }
        self.probe_lost_in_period = self.probe_lost_in_period.saturating_add(report.lost);
        if let Some(rtt) = report.rtt.filter(|r| !r.is_zero()) {
            if !self.probe_rtt_seen {
                // The probes' RTT replaces any stand-in.
                self.probe_rtt_seen = true;
                self.rtt_avg = None;
                self.rtt_min = None;
            }
            self.rtt_sample(rtt);
        }
        self.maybe_first_size()
    }

    /// Leaves state 0 once `C'` and `T` are known: `S = 1.2 C' T`. Also
    /// applies a late estimate in slow start, before anything was learnt.
    fn maybe_first_size(&mut self) -> Decision {
        let late = self.state == State::SlowStart && self.size == self.ctx.limits.rmem_max;
        if self.state != State::Estimating && !late {
            return Decision::none();
        }
        let (Some(capacity), Some(rtt)) = (self.capacity, self.rtt_avg) else {
            return Decision::none();
        };
        self.state = State::SlowStart;
        let size = bytes_capped(
            CAPACITY_FACTOR * capacity * rtt.as_secs_f64(),
            self.ctx.limits.rmem_max,
        );
        self.set_size(
            size,
            format!(
                "C' {} from {TRAINS} trains, T {}: S = 1.2 x C' x T = {}",
                show_rate(capacity),
                show_ms(rtt),
                show_bytes(size)
            ),
        )
    }

    /// Sets `S`: the request that gives a window of `size`, or the
    /// maximum request itself on a congested path.
    fn set_size(&mut self, size: Bytes, reason: String) -> Decision {
        self.size = size;
        let max = self.ctx.limits.rmem_max;
        let request = if self.state == State::Congested {
            max
        } else {
            self.ratio.request_for(size, max)
        };
        Decision::act(
            self.state.name(),
            vec![Action::SetRcvBuf(request)],
            size,
            format!(
                "{reason}; SO_RCVBUF {} at {:.2} window per buffer byte",
                show_bytes(request),
                self.ratio.get()
            ),
        )
    }

    fn on_sample(&mut self, sample: &Sample) -> Decision {
        if let Err(e) = self.meter.push(sample.at, sample.bytes) {
            return Decision::note(self.state.name(), e.reason());
        }
        if self.rtt_avg.is_none()
            && let Some(rtt) = sample.tcp_info.as_ref().and_then(|i| micros(i.rcv_rtt_us))
        {
            self.rtt_sample(rtt);
        }
        let Some(rtt) = self.rtt_avg else {
            if std::mem::replace(&mut self.said_no_rtt, true) {
                return Decision::none();
            }
            return Decision::note(self.state.name(), "no RTT yet: waiting for one");
        };
        if self.state == State::Estimating {
            // The transfer runs at the maximum until the trains are in.
            self.state = State::SlowStart;
        }
        let Some(start) = self.period_start else {
            self.period_start = Some(sample.at);
            self.last_increase = sample.at;
            return Decision::none();
        };
        if self.state == State::Congested {
            return Decision::none();
        }
        // A larger window per buffer byte than believed: the window is
        // larger than S, so ask again for less.
        let rcvbuf = sample.buffers.map_or(0, |b| b.rcvbuf_bytes);
        let rcv_wnd = sample.tcp_info.as_ref().and_then(|i| i.rcv_wnd_bytes);
        let before = self.ratio.get();
        if let Some(wnd) = rcv_wnd
            && self.ratio.observe(u64::from(wnd), rcvbuf)
            && self.ratio.get() > before * 1.05
            && self.state != State::Estimating
            && self.size < self.ctx.limits.rmem_max
        {
            return self.set_size(
                self.size,
                format!(
                    "window per buffer byte is {:.2}, not {before:.2}",
                    self.ratio.get()
                ),
            );
        }
        if self.state == State::Final {
            return Decision::none();
        }
        // The kernel may have kept less than asked: the window it can give.
        let kept = if rcvbuf > 0 {
            let window = rcvbuf as f64 * self.ratio.get();
            Bytes(window as u64).min(self.size)
        } else {
            self.size
        };
        if sample.at.saturating_sub(start) >= scaled(rtt, SAMPLE_RTTS) {
            return self.evaluate(sample.at, rtt, kept);
        }
        self.linear_increase(sample.at, rtt)
    }

    /// `S += MSS` once per RTT in the buffer-limited states.
    fn linear_increase(&mut self, at: Duration, rtt: Duration) -> Decision {
        if !self.state.is_limited() || at.saturating_sub(self.last_increase) < rtt {
            return Decision::none();
        }
        self.last_increase = at;
        let size = Bytes(self.size.get().saturating_add(self.ctx.limits.mss.get()))
            .min(self.ctx.limits.rmem_max);
        if size == self.size {
            return Decision::none();
        }
        self.set_size(
            size,
            format!("buffer-limited: S += MSS, now {}", show_bytes(size)),
        )
    }

    fn evaluate(&mut self, at: Duration, rtt: Duration, kept: Bytes) -> Decision {
        let Some(rate) = self
            .meter
            .rate_over(at.saturating_sub(self.period_start.unwrap_or(at)))
        else {
            return Decision::none();
        };
        self.period_start = Some(at);
        let previous = self.rates.back().copied();
        let rate_drop = previous.is_some_and(|p| rate < (1.0 - DROP_FRACTION) * p);
        let rate_rise = previous.is_none_or(|p| rate > (1.0 + FLAT_TOLERANCE) * p);
        let const_rate_drop = rate_drop && self.last_flat(2);
        self.rates.push_back(rate);
        if self.rates.len() > FLAT_SAMPLES {
            self.rates.pop_front();
        }
        self.periods.push_back(Period {
            probe_loss: self.probe_lost_in_period > 0,
            changing: rate_drop || rate_rise,
            rate_drop,
        });
        if self.periods.len() > LOSS_LOOKBACK {
            self.periods.pop_front();
        }
        self.probe_lost_in_period = 0;

        let t_min = self.rtt_min.unwrap_or(rtt);
        let limited = rate * t_min.as_secs_f64() >= BUFFER_LIMITED_SHARE * kept.get() as f64;
        if self.congested() {
            return self.finish(State::Congested, rate, rtt, "congested path");
        }
        if const_rate_drop {
            return self.finish(State::Final, rate, t_min, "const-rate-drop");
        }
        if self.last_flat(self.state.flat_samples()) {
            return self.finish(State::Final, rate, rtt, "flat-rate");
        }
        let before = self.state;
        match self.state {
            State::SlowStart | State::SlowStartLimited if rate_drop => {
                self.state = State::Avoidance;
            }
            State::SlowStart if limited => self.state = State::SlowStartLimited,
            State::Avoidance if limited => self.state = State::AvoidanceLimited,
            _ => {}
        }
        let entered_limited = before != self.state && self.state.is_limited();
        if entered_limited {
            // Entering a buffer-limited state is itself an increase.
            self.last_increase = at.saturating_sub(rtt);
            return self.linear_increase(at, rtt);
        }
        if before != self.state {
            return Decision::note(
                self.state.name(),
                format!("rate dropped to {}", show_rate(rate)),
            );
        }
        if limited {
            return self.linear_increase(at, rtt);
        }
        Decision::none()
    }

    /// Whether the last `n` rates are near-equal.
    fn last_flat(&self, n: usize) -> bool {
        if self.rates.len() < n {
            return false;
        }
        let last = self.rates.iter().rev().take(n);
        let (lo, hi) = last.fold((f64::INFINITY, 0.0f64), |(lo, hi), &r| {
            (lo.min(r), hi.max(r))
        });
        lo > 0.0 && hi <= lo * (1.0 + FLAT_TOLERANCE)
    }

    /// The mean of the near-equal rates: the two before the latest (for a
    /// drop) or the last `flat` (for a flat rate).
    fn flat_mean(&self, skip_latest: bool, flat: usize) -> f64 {
        let n = if skip_latest { 2 } else { flat };
        let rates: Vec<f64> = self
            .rates
            .iter()
            .rev()
            .skip(usize::from(skip_latest))
            .take(n)
            .copied()
            .collect();
        if rates.is_empty() {
            return 0.0;
        }
        rates.iter().sum::<f64>() / rates.len() as f64
    }

    /// Probe loss in a period the transfer did not cause itself: its rate
    /// was steady (not climbing in slow start, when its own bursts overflow
    /// the queue, the SOBAS paper's appendix; not dropping after a loss) and the next
    /// period shows no drop (the queue the transfer filled before one).
    fn congested(&self) -> bool {
        let periods: Vec<Period> = self.periods.iter().copied().collect();
        periods.iter().enumerate().any(|(i, p)| {
            let before_drop = periods.get(i + 1).is_some_and(|next| next.rate_drop);
            p.probe_loss && !p.changing && !before_drop && i + 1 < periods.len()
        })
    }

    fn finish(&mut self, state: State, rate: f64, rtt: Duration, why: &str) -> Decision {
        let flat = self.state.flat_samples();
        self.state = state;
        if state == State::Congested {
            let max = self.ctx.limits.rmem_max;
            return self.set_size(
                max,
                format!(
                    "{why}: UDP probes lost packets the transfer did not cause; S = MAX = {}",
                    show_bytes(max)
                ),
            );
        }
        let r = self.flat_mean(why == "const-rate-drop", flat);
        let r = if r > 0.0 { r } else { rate };
        let size =
            bytes_capped(r * rtt.as_secs_f64(), self.ctx.limits.rmem_max).max(self.ctx.limits.mss);
        self.set_size(
            size,
            format!(
                "{why}: S = R x T = {} x {} = {}",
                show_rate(r),
                show_ms(rtt),
                show_bytes(size)
            ),
        )
    }
}

impl Tuner for Sobas {
    fn name(&self) -> &'static str {
        "sobas"
    }

    fn state(&self) -> &'static str {
        self.state.name()
    }

    fn setup(&self) -> Setup {
        let limits = self.ctx.limits;
        Setup {
            pre_handshake: Settings {
                rcvbuf: Some(limits.rmem_max),
                sndbuf: Some(limits.wmem_max),
                window_clamp: None,
            },
            after_connect: Settings::default(),
        }
    }

    fn inputs(&self) -> Inputs {
        // The receiver probes; the sender only echoes, which is the
        // driver's job whatever the tuner.
        let receiver = self.ctx.role == Role::Receiver;
        Inputs {
            control_rtt: receiver,
            trains: receiver,
            udp_probes: receiver,
            peer_messages: false,
        }
    }

    fn on_event(&mut self, event: &Event) -> Decision {
        if self.ctx.role == Role::Sender {
            return Decision::none();
        }
        match event {
            Event::Sample(sample) => self.on_sample(sample),
            Event::Train(train) => self.on_train(train),
            Event::UdpProbes(report) => self.on_probes(report),
            Event::ControlRtt(m) if !self.probe_rtt_seen && !m.rtt.is_zero() => {
                self.rtt_sample(m.rtt);
                self.maybe_first_size()
            }
            _ => Decision::none(),
        }
    }

    fn next_wakeup(&self) -> Option<Duration> {
        if self.ctx.role == Role::Sender || matches!(self.state, State::Final | State::Congested) {
            return None;
        }
        let (Some(start), Some(rtt)) = (self.period_start, self.rtt_avg) else {
            return Some(Duration::ZERO);
        };
        let sample = start.saturating_add(scaled(rtt, SAMPLE_RTTS));
        if self.state.is_limited() {
            return Some(sample.min(self.last_increase.saturating_add(rtt)));
        }
        Some(sample)
    }
}

#[cfg(test)]
mod tests;
