//! `auto`'s state machine: what each state does with a sample, and how a
//! loss is read. See [`super`] for the states and why.

use std::time::Duration;

use super::super::Decision;
use super::super::meter::{scaled, show_ms, show_rate, show_size};
use super::*;

/// How `startup` grows the window while the flow fills it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Ramp {
    /// By this many bytes per RTT (towards an estimated window).
    Add(f64),
    /// By this factor per RTT.
    Times(f64),
    /// By this share per RTT, doubling each RTT up to [`PROBE_GAIN_MAX`]:
    /// the path got faster. It starts small because the queue may be
    /// small: the rate and RTT that show a queue come back one and a half
    /// RTTs after the window grew, and x1.125 per RTT grew it by 19% in
    /// that time, into a queue of a tenth of the BDP (1,027 segments
    /// retransmitted in one probe, measured).
    Probe(f64),
}

impl Ramp {
    /// The window after `rtts` (at most 1) RTTs of growth from `window`.
    pub(super) fn grow(self, window: f64, rtts: f64) -> f64 {
        let rtts = rtts.clamp(0.0, 1.0);
        match self {
            Ramp::Add(bytes) => window + bytes * rtts,
            Ramp::Times(factor) => window * factor.powf(rtts),
            Ramp::Probe(gain) => window * (1.0 + gain).powf(rtts),
        }
    }

    /// The ramp after `rtts` (at most 1) RTTs of growth; a probe's gain
    /// doubles per RTT up to `most`.
    pub(super) fn after(self, rtts: f64, most: f64) -> Ramp {
        match self {
            Ramp::Probe(gain) => Ramp::Probe((gain * 2f64.powf(rtts.clamp(0.0, 1.0))).min(most)),
            other => other,
        }
    }

    pub(super) fn halved(self) -> Ramp {
        match self {
            Ramp::Add(bytes) => Ramp::Add(bytes / 2.0),
            Ramp::Times(factor) => Ramp::Times(1.0 + (factor - 1.0) / 2.0),
            Ramp::Probe(gain) => Ramp::Probe(gain / 2.0),
        }
    }
}

/// What `drain` watches: whether the RTT comes down with the window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct DrainCheck {
    /// When the drain began; rates from its first RTT still describe the
    /// window before it.
    pub(super) began: Duration,
    pub(super) until: Duration,
    /// The bottleneck-rate estimate before the drain, bytes per second.
    pub(super) bw_before: f64,
    /// The bottleneck's rate while a queue kept it busy, bytes per second:
    /// the rate read with the RTT inflated, from one RTT into the drain,
    /// outside loss recovery, first and then whenever the RTT rose further
    /// (the queue still filling). Once the RTT stops rising, later readings
    /// are lower only because the window was cut: each cut lowers the
    /// rate, which would lower the window again.
    /// With it, the RTT of the reading it came from.
    pub(super) busy: Option<(f64, Duration)>,
    /// The RTT when the drain began, and the least since.
    pub(super) start_rtt: Duration,
    pub(super) min_rtt: Duration,
    /// The most RTT since the drain began (a queue may still fill after
    /// it began).
    pub(super) most_rtt: Duration,
    /// The RTT when it last moved by more than [`FLAT`], and when.
    pub(super) flat: (Duration, Duration),
    /// Rounds of [`DRAIN_RTTS`] so far.
    pub(super) rounds: u32,
}

/// `auto`'s states (see [`super`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum State {
    /// Ramping up to `ceiling` (the capacity estimate's window), if known.
    Startup { ceiling: Option<f64>, ramp: Ramp },
    /// Holding the window at rate x min-RTT plus headroom.
    Cruise,
    /// Watching whether the RTT comes down with a smaller window.
    Drain(DrainCheck),
    /// A congested path: the window stays out of the way.
    StepAside,
}

impl State {
    pub(super) fn name(self) -> &'static str {
        match self {
            State::Startup { .. } => "startup",
            State::Cruise => "cruise",
            State::Drain(_) => "drain",
            State::StepAside => "step-aside",
        }
    }
}

/// What one sample says, as the state machine reads it.
#[derive(Debug, Clone)]
pub(super) struct Reading {
    pub(super) at: Duration,
    pub(super) rate: f64,
    /// Bottleneck-rate estimate, bytes per second.
    pub(super) bw: f64,
    pub(super) rtt: Duration,
    pub(super) rt_prop: Duration,
    pub(super) limited: bool,
    pub(super) inflated: bool,
    /// Inflated in the last two reports of a rightsize sender, half an
    /// RTT apart (alone: as `inflated`). What a drain waits for: it cuts
    /// the window to the bottleneck's rate, and a drain read from one
    /// report of a host's stall (the sender's RTT +16% for a moment, its
    /// 100 ms telemetry at +1 to 5%, nothing queued) went on to "the path
    /// got slower" and left a window of 2.02 MB where 2.52 had carried
    /// 190 Mbit/s (measured between two rightsize ends on 200 Mbit/s x
    /// 100 ms). A loss reads the RTT of now: a queue that fills fast shows
    /// in the latest report only, and read as settled, its overflow
    /// passed for a random loss.
    pub(super) inflated_settled: bool,
    pub(super) no_queue: bool,
    /// No queue worth a quarter of the headroom: only then does a full
    /// window mean the path could carry more (at half the headroom, a
    /// window 3% above the BDP read as "the path got faster" and the
    /// probe overflowed a queue of a tenth of the BDP, measured).
    pub(super) empty: bool,
    /// A receiver's bytes that arrived and were not read yet (behind a
    /// hole, those beyond it); 0 where unknown.
    pub(super) held: f64,
    /// The numbers, for the decision record.
    pub(super) numbers: String,
}

impl Reading {
    /// The queue the RTT shows, bytes.
    pub(super) fn queued(&self) -> f64 {
        super::queue_bytes(self.rtt, self.rt_prop, self.rate)
    }
}

impl Auto {
    pub(super) fn steer(&mut self, r: &Reading) -> Decision {
        let settled = r.at.saturating_sub(self.last_change) >= r.rtt;
        if !self.first_ramp() {
            self.ramp_on = None;
        }
        match self.state {
            State::Startup { ceiling, ramp } => {
                let then = self.window_at(r.at.saturating_sub(r.rtt.saturating_mul(2)));
                let saturated = r.limited && r.rate * r.rt_prop.as_secs_f64() < SATURATED * then;
                let saturated_twice = saturated && self.saturated_once;
                self.saturated_once = saturated;
                if let (true, Ramp::Times(factor)) = (self.alone, ramp) {
                    return self.first_ramp_alone(r, factor);
                }
                let burst = ceiling.is_some_and(|c| self.window < RAMP_PAUSE_BELOW * c);
                if r.inflated && burst {
                    self.last_growth = r.at;
                    return Decision::none();
                }
                // Before the window first holds the sender back, a queue
                // is the sender's: slow start bursts its window into the
                // bottleneck (64 KiB is +26% of RTT at 50 Mbit/s x 40 ms;
                // diag_e2e's fine path read +22% and ended the startup at
                // 6.6 Mbit/s).
                self.bound |= r.limited;
                // Beyond the trains' capacity a probe from a known window
                // creeps (at most +1/32 per RTT) and stops at the first sign
                // of a queue, which may hold no more than a tenth of the
                // BDP. Below it, a queue that small is the window's own
                // bursts (+4% read at half the path's rate) and says nothing.
                let beyond = self.beyond_capacity(r);
                // There it stops at a queue of a quarter of the headroom,
                // and a probe that starts there grows +1/128 in its first
                // RTT, doubling up to +1/32: from +1/32 and stopping at half
                // the headroom, a probe from the trains' window (estimates
                // 1-2% low) read its queue at +6% and overflowed the
                // 0.1 x BDP queue in 2 runs of 3, once the emulator stopped
                // dropping bursts at its input.
                let probe_queued =
                    matches!(ramp, Ramp::Probe(_)) && beyond && r.limited && !r.empty;
                // Alone, a rate that stops following the window with no
                // queue is the sender's own limit (a congestion window
                // growing back after a loss): a window cut to it holds
                // that window where it is, as Linux grows a congestion
                // window only while it is what limits the sender (a
                // receiver alone cut its window to 0.54 MB this way, again
                // and again, and made 47 Mbit/s on a 193 Mbit/s path from
                // vsftpd, measured). The probe ends; the window stays.
                if self.alone && ceiling.is_none() && saturated_twice && !r.inflated {
                    self.state = State::Cruise;
                    return Decision::note(
                        self.state.name(),
                        format!(
                            "the rate stopped following the window with no queue: the sender's \
                             own limit, the window stays; {}",
                            r.numbers
                        ),
                    );
                }
                if (r.inflated && self.bound)
                    || (ceiling.is_none() && saturated_twice)
                    || probe_queued
                {
                    self.state = State::Cruise;
                    self.found |= r.inflated;
                    let rate = r.rate.max(r.bw).max(self.queued_rate(r));
                    let mut target = self.target(rate, r.rt_prop);
                    // A probe from below stops just past the trains'
                    // capacity, and the rate still lags its window by an
                    // RTT or more: sized from that rate, the window fell
                    // from 2.46 to 1.90 MB at 140 Mbit/s on a 200 Mbit/s
                    // phase (measured on the changing path). Up to the
                    // capacity's window it has just seen no queue.
                    if probe_queued && let Some(c) = self.capacity {
                        target = target.max(self.target(c, r.rt_prop).min(self.window));
                    }
                    return self.retarget(
                        r.at,
                        target,
                        format!(
                            "the rate stopped following the window: bandwidth found; {}",
                            r.numbers
                        ),
                    );
                }
                let rtts =
                    r.at.saturating_sub(self.last_growth).as_secs_f64() / r.rtt.as_secs_f64();
                self.last_growth = r.at;
                if !r.limited {
                    return Decision::none();
                }
                // Beyond the trains' capacity a probe creeps; below it,
                // behind a paced sender (whose bursts the pacing spreads),
                // it may grow faster than a bursting one.
                let most = if beyond {
                    PROBE_GAIN
                } else if self.paced {
                    PACED_PROBE_GAIN_MAX
                } else {
                    PROBE_GAIN_MAX
                };
                let ramp = ramp.after(rtts, most);
                // Towards the trains' window, never more than a few times
                // what the flow carries: the trains measure the path, not
                // this flow's share of it (sixteen flows that each ramped
                // by a share of the path's window per RTT summed to four
                // BDPs within a second, on the model; doubling instead
                // while the window held a paced sender back with no queue,
                // as slow start does, gained 1 Mbit/s on `lfn` alone and
                // doubled the peak of sixteen flows' buffers, measured).
                let mut ramped = ramp.grow(self.window, rtts);
                if ceiling.is_some() {
                    ramped = ramped.min(self.window.max(super::OPEN_LEAD * self.carried));
                }
                self.state = State::Startup { ceiling, ramp };
                match ceiling {
                    Some(ceiling) if ramped >= ceiling => {
                        self.state = State::Cruise;
                        self.retarget(
                            r.at,
                            ceiling,
                            format!("reached the capacity estimate's window; {}", r.numbers),
                        )
                    }
                    _ => self.retarget(
                        r.at,
                        ramped,
                        format!("window-limited: ramp up; {}", r.numbers),
                    ),
                }
            }
            State::Cruise => {
                // A queue with a sender the window does not hold back is
                // not the window's (bursts of a congestion window that
                // grows back after a loss): cutting the window would only
                // slow the recovery.
                // Nor is a queue while a loss recovery goes on: the
                // receiver's out-of-order data shrinks the advertised
                // window (the sender reads as window-limited) and the rate
                // shows the recovery (a drain to 0.71 MB at 53 Mbit/s two
                // RTTs after a loss, measured on the shallow path).
                let recovering = self.loss_within(r, RECOVERY_RTTS);
                let raising = r.at < self.last_raise.saturating_add(scaled(r.rtt, RAISE_RTTS));
                if r.inflated_settled && r.limited && !recovering && !raising {
                    self.found = true;
                    self.state = State::Drain(DrainCheck {
                        began: r.at,
                        until: r.at.saturating_add(scaled(r.rtt, DRAIN_RTTS)),
                        bw_before: r.bw,
                        busy: None,
                        start_rtt: r.rtt,
                        min_rtt: r.rtt,
                        most_rtt: r.rtt,
                        flat: (r.rtt, r.at),
                        rounds: 1,
                    });
                    // The window is sized from the bottleneck's best rate
                    // of the last seconds, not the rate of now; a slower
                    // path shows in the drain. Alone, the rate is a
                    // goodput over two RTTs that dips as the window moves:
                    // sized from it, the window fell below the BDP after
                    // each probe (2.39 MB for 2.41, and 180 Mbit/s on a
                    // 193 Mbit/s path, measured from vsftpd). Behind a
                    // rightsize sender, the rate dips with the RTT when the
                    // hosts stall (a sender's smoothed RTT +25% for 100 to
                    // 200 ms at 130 Mbit/s on a 193 Mbit/s path, on a
                    // machine whose CPU was half stolen): sized from it,
                    // each drain cut the window to 1.5 to 1.9 MB of 2.5.
                    let rate = r.bw.max(self.queued_rate(r));
                    let window = self.cut_window(rate, r);
                    return self.retarget(
                        r.at,
                        window,
                        format!("RTT inflated: drain; {}", r.numbers),
                    );
                }
                // No queue, and the window all turned into rate: more
                // window would carry more.
                if r.limited && r.empty && self.converted(r) && settled {
                    if let Some(decision) = self.back_to_faster(r) {
                        return decision;
                    }
                    let ramp = Ramp::Probe(if self.beyond_capacity(r) {
                        PROBE_GAIN_BEYOND
                    } else {
                        PROBE_GAIN
                    });
                    self.state = State::Startup {
                        ceiling: None,
                        ramp: ramp.after(self.sample_rtts(), PROBE_GAIN_MAX),
                    };
                    self.last_growth = r.at;
                    return self.retarget(
                        r.at,
                        ramp.grow(self.window, self.sample_rtts()),
                        format!(
                            "window-limited, no queue: the path got faster; {}",
                            r.numbers
                        ),
                    );
                }
                Decision::none()
            }
            State::Drain(mut check) => {
                check.min_rtt = check.min_rtt.min(r.rtt);
                check.most_rtt = check.most_rtt.max(r.rtt);
                let level = check.flat.0.as_secs_f64();
                if (r.rtt.as_secs_f64() - level).abs() > level * FLAT {
                    check.flat = (r.rtt, r.at);
                }
                let recovering = self.in_loss_episode(r);
                // Only a reading with the RTT higher than the last one's is
                // of a bottleneck kept busy by a queue still filling. While
                // the RTT falls, the sender has paused (the window was cut
                // below what is in flight) and the delivery rate, measured
                // over the send interval too, reads low: readings of 38,
                // 25 and 15 Mbit/s on a path of 50 cut the window to a
                // fifth of its BDP (measured). And the rate reports lag
                // the RTT: the first reading may still be the old rate.
                let filling = check
                    .busy
                    .is_none_or(|(_, t)| r.rtt.as_secs_f64() > t.as_secs_f64());
                if r.inflated && r.at >= check.began.saturating_add(r.rtt) && !recovering && filling
                {
                    check.busy = Some((r.rate, r.rtt));
                }
                let busy = check.busy.map(|(rate, _)| rate);
                self.state = State::Drain(check);
                // Behind a rightsize sender, whose reports carry its
                // delivery rate, the queue is gone once the bottleneck
                // idles: the flow delivers well below the rate it had while
                // the queue kept it busy, and the RTT, fallen since its
                // most in the drain but still inflated, has stayed level
                // for an RTT. That RTT is the path's. Waiting for the rounds
                // instead, the flow on a path that went from 200 Mbit/s x
                // 100 ms to 50 Mbit/s x 160 ms ran at two thirds of 50
                // Mbit/s for 1.5 to 1.9 s, its window sized by the old
                // min-RTT (measured). Alone, the rate is a goodput over two
                // RTTs that still falls with the path's while a full queue
                // holds the RTT level: read so from vsftpd, the RTT of a
                // full queue (423 ms) passed for the path's, and the
                // receive buffer peaked at 16 MB (measured).
                let fallen = r.rtt.as_secs_f64() < check.most_rtt.as_secs_f64() * (1.0 - INFLATION);
                if let Some(busy) = busy
                    && !self.alone
                    && fallen
                    && r.inflated
                    && !recovering
                    && r.rate < busy * (1.0 - IDLE)
                    && r.at >= check.flat.1.saturating_add(r.rtt)
                {
                    check.min_rtt = check.flat.0.min(r.rtt);
                    return self.rtt_rose(r, check, busy, "while the bottleneck idled");
                }
                // The rate lags a slower path: follow it down, to what the
                // busy bottleneck delivers.
                let follow = busy.map(|busy| self.target(busy, r.rt_prop));
                if r.at < check.until {
                    if let Some(follow) = follow.filter(|&f| f < self.window * (1.0 - OVERSHOOT)) {
                        return self.retarget(
                            r.at,
                            follow,
                            format!("draining: the rate keeps falling; {}", r.numbers),
                        );
                    }
                    return Decision::none();
                }
                let drained = check.min_rtt.as_secs_f64() <= self.inflated_above(r.rt_prop);
                // A round in which the RTT climbed (the queue still filling
                // from a window the rate had not caught up with yet) says
                // nothing about the path's RTT.
                let rising =
                    r.rtt.as_secs_f64() > check.start_rtt.as_secs_f64() * (1.0 + INFLATION);
                let stayed = !rising
                    && check.min_rtt.as_secs_f64() >= RTT_STAYED * check.start_rtt.as_secs_f64();
                if drained {
                    self.state = State::Cruise;
                    let Some(busy) = busy else {
                        return Decision::note(
                            self.state.name(),
                            format!("queue drained; {}", r.numbers),
                        );
                    };
                    self.obs.reset_btl_bw(r.at, busy);
                    self.best.reset(r.at, busy);
                    if check.bw_before > busy * (1.0 + RECALL_DROP) {
                        self.slower_from = Some((r.at, check.bw_before));
                    }
                    return Decision::note(
                        self.state.name(),
                        format!(
                            "queue drained: the path got slower, {}; {}",
                            show_rate(busy),
                            r.numbers
                        ),
                    );
                }
                if !stayed && check.rounds < DRAIN_ROUNDS {
                    // Coming down, not there yet: another round.
                    self.state = State::Drain(DrainCheck {
                        until: r.at.saturating_add(scaled(r.rtt, DRAIN_RTTS)),
                        start_rtt: r.rtt,
                        min_rtt: r.rtt,
                        rounds: check.rounds + 1,
                        ..check
                    });
                    return self.retarget(
                        r.at,
                        follow.unwrap_or(self.window).min(self.window),
                        format!(
                            "draining: RTT down to {}; {}",
                            show_ms(check.min_rtt),
                            r.numbers
                        ),
                    );
                }
                self.state = State::Cruise;
                if !stayed {
                    return Decision::note(
                        self.state.name(),
                        format!("the queue does not drain further; {}", r.numbers),
                    );
                }
                // Alone, the rate the queue kept busy was read from a
                // goodput over two RTTs that still showed the faster path
                // before (112 Mbit/s of 50, with a queue of 400 ms): a
                // window sized from it was 3.5 times the new BDP, the flow
                // overflowed the queue and the receive buffer peaked at
                // 16 MB (from vsftpd on `bench/paths/changing.toml`,
                // measured). An RTT that stayed inflated is a queue that
                // stayed, the bottleneck busy all along: the goodput of
                // now is its rate.
                let busy = match busy {
                    Some(busy) if self.alone => busy.min(r.rate),
                    busy => busy.unwrap_or(r.rate),
                };
                self.rtt_rose(r, check, busy, "with a smaller window")
            }
            State::StepAside => {
                if r.at.saturating_sub(self.last_loss) >= scaled(r.rt_prop, QUIET_RTTS) {
                    self.state = State::Cruise;
                    self.random_losses.clear();
                    // Alone, no lower than the flow's best rate allows,
                    // as every cut: at the end of a step-aside on `short`
                    // from vsftpd, cubic still climbing back at 53 Mbit/s
                    // after two losses, the window was cut to that rate's
                    // (279 kB) where the flow had carried 92 Mbit/s 5 s
                    // before (measured).
                    let window = self.cut_window(r.bw, r);
                    return self.retarget(r.at, window, format!("losses stopped; {}", r.numbers));
                }
                let aside = self.aside_window(r.bw, r);
                if aside > self.window * (1.0 + HYSTERESIS) {
                    return self.retarget(
                        r.at,
                        aside,
                        format!("stepping aside: the flow's rate grew; {}", r.numbers),
                    );
                }
                if r.limited && r.no_queue && self.converted(r) {
                    return self.retarget(
                        r.at,
                        self.window * RAMP_FACTOR.powf(self.sample_rtts()),
                        format!(
                            "stepping aside: keep the window above the flow; {}",
                            r.numbers
                        ),
                    );
                }
                Decision::none()
            }
        }
    }

    /// Alone, with a queue: the bottleneck's rate from the window, bytes
    /// per second. A flow held back by its window with a queue standing
    /// behind it has the window of one RTT ago in flight, and that takes
    /// the current RTT to deliver, whatever the goodput lags: ramping x2
    /// per RTT, the goodput over two RTTs read 63 Mbit/s when the RTT first
    /// inflated on a 193 Mbit/s path, and a window sized from it was a
    /// third of the BDP (measured from vsftpd). 0 when there is no queue or
    /// the sender's own `TCP_INFO` is known.
    fn queued_rate(&self, r: &Reading) -> f64 {
        if !self.alone || !r.inflated {
            return 0.0;
        }
        self.window_at(r.at.saturating_sub(r.rtt)) / r.rtt.as_secs_f64()
    }

    /// Whether the window of an RTT ago all turned into rate (within half
    /// the headroom), but for the part of a segment a sender cannot send:
    /// a window of 38,539 bytes carries 26 segments of 1,448 (37,648), and
    /// at 7.2 Mbit/s x 40 ms the flow read as not converted, its window
    /// never probed, for 70 s (on a path of 10 and 50 Mbit/s, measured).
    /// Behind a rightsize sender, what is in flight is the rate times the
    /// sender's RTT of now, not min-RTT: where the hosts add a millisecond
    /// or two to a 100 ms path, a window that all turned into rate read
    /// 2% short, and a flow whose trains read 8% low never probed past
    /// them (177 of 193 Mbit/s for 13 s, measured on `lfn`). Not alone:
    /// there the rate is a goodput over two RTTs and the RTT the
    /// receiver's own estimate, and with the RTT of now the receiver
    /// behind vsftpd made less than 0.98 x the kernel's goodput on four
    /// of the six benchmark paths (0.935 x on `bbr-loss`), where with
    /// min-RTT it made more on all six (a block of three runs a path
    /// each, measured).
    fn converted(&self, r: &Reading) -> bool {
        let then = self.window_at(r.at.saturating_sub(r.rtt));
        let sendable = then - self.ctx.limits.mss.get() as f64;
        let rtt = if self.alone { r.rt_prop } else { r.rtt };
        r.rate * rtt.as_secs_f64() >= (1.0 - self.headroom / 2.0) * sendable
    }

    /// A window-limited flow with no queue a few seconds after the path
    /// got slower, and well below the rate it carried before: the path is
    /// back to that rate (its rate changes back and forth), and the window
    /// ramps x1.5 per RTT as at the start instead of probing from +1/32.
    /// On a path of 10 and 50 Mbit/s a second each (`flapping`), probing
    /// grew the window back over most of each fast second: 18.0 Mbit/s
    /// where the kernel's autotuning made 28.1; ramping, 21.5 (measured).
    /// Not alone: a receiver alone ramps its own way.
    fn back_to_faster(&mut self, r: &Reading) -> Option<Decision> {
        let (when, before) = self.slower_from?;
        if self.alone
            || r.at.saturating_sub(when) > RECALL
            || before <= r.rate * (1.0 + RECALL_DROP)
        {
            return None;
        }
        self.slower_from = None;
        self.state = State::Startup {
            ceiling: None,
            ramp: Ramp::Times(RAMP_FACTOR),
        };
        self.last_growth = r.at;
        Some(self.retarget(
            r.at,
            Ramp::Times(RAMP_FACTOR).grow(self.window, self.sample_rtts()),
            format!(
                "window-limited, no queue: the path is back to a faster rate ({} {:.1} s ago), ramp x{RAMP_FACTOR} per RTT; {}",
                show_rate(before),
                r.at.saturating_sub(when).as_secs_f64(),
                r.numbers
            ),
        ))
    }

    /// Whether the window is at or beyond the trains' capacity x min-RTT.
    fn beyond_capacity(&self, r: &Reading) -> bool {
        self.capacity
            .is_some_and(|c| self.window >= c * r.rt_prop.as_secs_f64())
    }

    /// Whether `r` falls in a loss episode: rates then show the recovery,
    /// not the path.
    fn in_loss_episode(&self, r: &Reading) -> bool {
        self.loss_within(r, LOSS_EVENT_RTTS)
    }

    /// Whether a loss was seen less than `rtts` RTTs before `r`.
    pub(super) fn loss_within(&self, r: &Reading, rtts: f64) -> bool {
        self.loss_seen
            .is_some_and(|last| r.at.saturating_sub(last) < scaled(r.rtt, rtts))
    }

    pub(super) fn on_loss(&mut self, r: &Reading) -> Decision {
        self.last_loss = r.at;
        // One episode lasts while losses keep coming within two RTTs of the
        // last: a recovery that goes on for seconds (an RTO after a burst
        // of losses) is one event, not three "random" ones.
        let same_event = self.in_loss_episode(r);
        self.loss_seen = Some(r.at);
        if same_event {
            return self.ride_on(r);
        }
        if let (
            true,
            State::Startup {
                ramp: Ramp::Times(_),
                ..
            },
        ) = (self.alone, self.state)
        {
            return self.first_ramp_loss_alone(r);
        }
        // A queue far below the deepest the path has shown did not
        // overflow it, whatever the RTT reads (bbr's own standing queue).
        let below_deepest = self.deepest_queue
            >= super::DEEP_QUEUE * r.rate * r.rt_prop.as_secs_f64()
            && r.queued() < super::OVERFLOW_SHARE * self.deepest_queue
            && r.rtt < self.deepest_rtt;
        let inflated = r.inflated && !below_deepest;
        if inflated && !r.limited && matches!(self.state, State::Cruise) {
            return Decision::note(
                self.state.name(),
                format!(
                    "loss with a queue, the sender not held by the window: its own burst; {}",
                    r.numbers
                ),
            );
        }
        if inflated {
            self.state = State::Cruise;
            self.found = true;
            self.obs.reset_btl_bw(r.at, r.rate);
            let window = self.cut_window(r.rate, r);
            return self.cut_after_recovery(
                r,
                window,
                format!("loss, RTT inflated: the queue overflowed; {}", r.numbers),
            );
        }
        let bw = self.capacity.map_or(r.bw, |c| c.max(r.bw));
        let target = self.target(bw, r.rt_prop);
        // While ramping, a loss with a queue behind it is ours: the ramp's
        // bursts (below the estimate) or an overshoot (beyond it). One
        // with no queue at all is not.
        if let (State::Startup { ceiling, ramp }, false) = (self.state, r.no_queue) {
            if ceiling.is_some() && self.window <= target * (1.0 + OVERSHOOT) {
                self.state = State::Startup {
                    ceiling,
                    ramp: ramp.halved(),
                };
                return Decision::note(
                    self.state.name(),
                    format!(
                        "loss while ramping: bursts too big for the queue, ramp halved; {}",
                        r.numbers
                    ),
                );
            }
            self.state = State::Cruise;
            return self.retarget(
                r.at,
                target.min(self.window),
                format!("loss while ramping: bandwidth found; {}", r.numbers),
            );
        }
        // An overshoot fills the queue: with none at all, the loss is the
        // path's (a window cut from 1.4 to 1.1 BDP this way under bbr with
        // random loss stalled each recovery after, measured).
        if self.window > target * (1.0 + OVERSHOOT) && !r.no_queue && !below_deepest {
            self.state = State::Cruise;
            self.found = true;
            return self.cut_after_recovery(
                r,
                target.max(self.alone_floor(r)),
                format!("loss, window above the BDP: overshoot; {}", r.numbers),
            );
        }
        let standing = r.rtt.as_secs_f64() / r.rt_prop.as_secs_f64() - 1.0;
        let at_target = matches!(self.state, State::Cruise | State::Drain(_));
        // At the target, a loss with no queue at all is the path's, and
        // with a window near the BDP the flow stalls until the hole is
        // filled: the sender may not send past the window beyond it. The
        // window steps aside at once to ride out the next recovery (under
        // bbr with 0.01% random loss on 200 Mbit/s x 100 ms, waiting for
        // three such losses cost 0.9 s of a 12 s transfer, measured). So
        // does a paced sender's ramp: its window opened at the trains'
        // estimate, a lost segment held the flow at 27 Mbit/s for an RTT.
        let paced_ramp = self.paced && matches!(self.state, State::Startup { .. });
        if (at_target || paced_ramp) && r.no_queue {
            return self.step_aside(
                r,
                RIDE_OUT_BDPS,
                format!(
                    "loss with no queue: the path's; the window rides out a recovery; {}",
                    r.numbers
                ),
            );
        }
        // A loss at a full window whose queue is a small part of the
        // deepest this path has shown cannot be that queue's overflow:
        // the path's.
        if at_target && below_deepest {
            return self.step_aside(
                r,
                RIDE_OUT_BDPS,
                format!(
                    "loss with {} queued, where the path has queued {}: the path's; the window \
                     rides out a recovery; {}",
                    show_size(r.queued()),
                    show_size(self.deepest_queue),
                    r.numbers
                ),
            );
        }
        // Alone, a loss with no queue at all is the path's: with its
        // window near the BDP a receiver alone cannot ride out a recovery
        // (the sender may not send past the hole's window), so random
        // losses must reach step-aside soon (from vsftpd under bbr with
        // 0.01% loss, two such losses halved the headroom instead).
        if at_target
            && r.limited
            && standing < HELD_HEADROOM * self.headroom
            && self.headroom > MIN_HEADROOM
        {
            self.headroom /= 2.0;
            self.state = State::Cruise;
            let window = self.cut_window(r.bw, r);
            return self.cut_after_recovery(
                r,
                window,
                format!(
                    "loss at a full window with a standing queue of {:.1}%: the queue is \
                     shallower than the headroom, now 1/{:.0}; {}",
                    standing * 100.0,
                    1.0 / self.headroom,
                    r.numbers
                ),
            );
        }
        let horizon = scaled(r.rt_prop, RANDOM_LOSS_RTTS);
        self.random_losses
            .retain(|&t| r.at.saturating_sub(t) <= horizon);
        self.random_losses.push_back(r.at);
        if self.random_losses.len() < RANDOM_LOSSES {
            let reason = format!(
                "loss not caused by the window ({} of {RANDOM_LOSSES}); {}",
                self.random_losses.len(),
                r.numbers
            );
            // Alone, the window stays but rides the recovery out.
            if self.alone {
                return self.cut_after_recovery(r, self.window, reason);
            }
            return Decision::note(self.state.name(), reason);
        }
        self.step_aside(
            r,
            STEP_ASIDE_BDPS,
            format!(
                "{RANDOM_LOSSES} losses no queue explains: congested path, step aside; {}",
                r.numbers
            ),
        )
    }

    /// Ends a drain that showed the path's RTT rose to the drain's least,
    /// `why`. The path's rate is what the busy bottleneck delivered,
    /// `busy` (it may have fallen too), never more than before.
    fn rtt_rose(&mut self, r: &Reading, check: DrainCheck, busy: f64, why: &str) -> Decision {
        self.state = State::Cruise;
        let rate = busy.min(check.bw_before);
        self.obs.reset_rt_prop(check.min_rtt);
        self.obs.reset_btl_bw(r.at, rate);
        self.best.reset(r.at, rate);
        self.retarget(
            r.at,
            rate * check.min_rtt.as_secs_f64() * (1.0 + self.headroom),
            format!(
                "RTT stayed at {} {why}: the path's RTT rose; rate {}",
                show_ms(check.min_rtt),
                show_rate(rate)
            ),
        )
    }

    /// Steps aside: the window no lower than `bdps` of the flow's BDPs
    /// until no loss for [`super::QUIET_RTTS`].
    fn step_aside(&mut self, r: &Reading, bdps: f64, reason: String) -> Decision {
        self.state = State::StepAside;
        self.aside_bdps = bdps;
        // Up to [`super::OPEN_LEAD`] times the flow's best rate, never
        // above the trains' capacity: a flow still in its startup, or
        // coming back from a loss, may soon carry that much; as its best
        // rate grows past that, the window follows it (see `steer`).
        let rate = self
            .capacity
            .map_or(r.bw, |c| c.min(super::OPEN_LEAD * r.bw).max(r.bw));
        let window = self.aside_window(rate, r).max(self.window);
        self.retarget(r.at, window, reason)
    }

    /// The window stepping aside for a flow at `rate`, bytes per second:
    /// [`Auto::aside_bdps`] x `rate` x min-RTT. The flow's own rate, not
    /// the path's: a flow that shares the bottleneck with others (a
    /// server's many clients) has no more than its share to carry, and
    /// eleven of sixteen such flows that each stepped aside to the trains'
    /// capacity held 100 MB of receive buffers on a path whose BDP is
    /// 2.5 MB (measured).
    fn aside_window(&self, rate: f64, r: &Reading) -> f64 {
        self.aside_bdps * rate * r.rt_prop.max(super::MIN_SIZING_RTT).as_secs_f64()
    }
}
