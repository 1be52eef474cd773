//! A receiver whose sender is plain: not rightsize (vsftpd, pyftpdlib,
//! globus-gridftp-server), so no reports, no packet trains and no pacing.
//! Its own `TCP_INFO` and goodput are all it has, and its window the only
//! lever. See docs/linux-tcp.md ("A receiver facing a plain sender") for
//! the kernel behaviour this relies on.
//!
//! - The first ramp starts from 256 KiB and, in eight steps per RTT while
//!   the flow fills the window of two RTTs ago (its goodput over two RTTs
//!   shows no later one; what arrived in the last min-RTT counts too, as
//!   that goodput lags a doubling flow by a round), leaves the sender
//!   twice what arrived in the last min-RTT, as its slow start doubles:
//!   the window grows by up to x2 per RTT, and at least x1.75
//!   (`RAMP_FACTOR_ALONE`). At x1.5 and
//!   compared with the window of now, the ramp read "not limited" every
//!   other sample and grew x1.2 per RTT: 2.2 s to the BDP of 200 Mbit/s x
//!   100 ms, against 0.7 s for the kernel's autotuning (measured). Its
//!   memory is 1/8 above the window, not 1/2 (see `memory`).
//! - A queue (the RTT up by [`QUEUED`]) once the window binds may be a
//!   full path or the sender's slow-start bursts: the window is held, and
//!   if the rate still grows after [`HOLD_RTTS`] RTTs the hold goes on (or,
//!   with all of the window delivered and no queue, the ramp does); if it
//!   does not, the bandwidth is found: the window becomes the rate x
//!   min-RTT plus headroom. Cut at once to the goodput instead, which lags
//!   by two RTTs, the window fell to a third of the BDP. Once it has held,
//!   the ramp grows no further than [`FOLLOW_AHEAD`] x what arrived.
//! - A loss with a queue ends the ramp, with no cut below [`LOSS_KEEP`] of
//!   the window that was in flight (the sender has cut its own window
//!   already); a loss with no queue is the path's, and the ramp goes on
//!   while the flow fills the window (see [`RAMP_ON_RTTS`]).
//! - Until a queue shows the path's capacity, the window stays [`ROOM`] x
//!   the flight: a loss-based sender that lost a segment early grows back
//!   only while its congestion window limits it.
//! - The cut a loss asks for waits until the sender's recovery is over,
//!   the window riding it out at [`RIDE_OUT_FLIGHTS`] x the flight, and
//!   goes no lower than the flow's best rate of the last [`BEST_WINDOW`]
//!   x min-RTT.

use super::steer::{Reading, State};
use super::{Auto, Decision, HOLD_GROWTH, HOLD_RTTS, HYSTERESIS, RECOVERY_RTTS, Ramp};
use crate::meter::{show_rate, show_size};
use std::time::Duration;

/// The first ramp stops to look at a queue of this share of min-RTT
/// (plus the timer slack, and at least half of the hosts' delay as a
/// receiver alone counts it, [`super::HOST_PARTS_ALONE`] x
/// [`super::HOST_DELAY`]): a queue of a tenth of the BDP adds +10%, which
/// the usual +1/8 never sees before it overflows. At 1/16 (+6.75% on 200 Mbit/s x 100 ms, from
/// vsftpd), the RTT read +6% for four samples in one run while the window
/// grew from 1.04 to 1.46 BDPs. Over six runs each there and on
/// `bench/paths/changing.toml`, the median peak was 6.50 and 7.25 MB of
/// buffer at 1/16, 6.16 and 6.83 MB at 1/20, with the same goodput
/// (measured). Lower, the slow start's own bursts count: the RTT read +2
/// to +6% for 8 to 18 samples in a row with the window a tenth to three
/// quarters of the BDP, long before it bound.
const QUEUED: f64 = 1.0 / 20.0;
/// The first ramp grows its window no further than this many times what
/// arrived in the last min-RTT. Where a window of 256 KiB is already
/// twice the BDP (200 Mbit/s x 5 ms), "the flow fills the window" reads
/// true against the kernel's own small advertised window during the
/// sender's slow start, and the ramp took the window to 1.25 MB (ten
/// BDPs) in three samples before the queue showed (measured from
/// vsftpd). A slow start's next window is about 2.7 times what its last
/// two RTTs carried per RTT, so the bound leaves a ramp that follows one
/// as it was.
const RAMP_AHEAD: f64 = 4.0;
/// A ramp whose sender the window holds back, in flight already, grows
/// its window no further than this many times what arrived in the last
/// min-RTT: a ramp again after the path changed, and the first ramp once
/// it has held at a queue (the sender's slow-start bursts, at 0.4 to 0.7
/// BDPs in every run from vsftpd on 200 Mbit/s x 100 ms). Each step of
/// the window lets the sender out at once, so what arrives is the window
/// of an RTT before: at x1.5 per RTT the window leads it by x1.5, and the
/// bound holds nothing back until the flow stops following, the path
/// full. Bounded only by [`RAMP_AHEAD`], the window went on growing for
/// the time the queue took to show in the receiver's RTT: x1.5 per RTT
/// after the path changed, to 1.8 BDPs and 8.4 MB of buffer (0.25 x the
/// kernel's), and x2 per RTT after a hold, for 0.19 s on an RTT reading
/// that stood still, to 4 BDPs, a loss and 38 MB
/// (`bench/paths/changing.toml` from vsftpd, measured). At this bound
/// the window stops at 1.6 BDPs, short of the 2 BDPs a queue of one BDP
/// overflows at.
const FOLLOW_AHEAD: f64 = 1.6;
/// After a loss in the first ramp read as the path's, the ramp ends once
/// the flow has not filled the window for this many min-RTTs.
const RAMP_ON_RTTS: u32 = 4;
/// After a loss in the first ramp, the window keeps at least this share of
/// the window one RTT before.
const LOSS_KEEP: f64 = 0.7;

impl Auto {
    /// Whether this is a receiver alone in its first ramp.
    pub(super) fn first_ramp(&self) -> bool {
        self.alone
            && matches!(
                self.state,
                State::Startup {
                    ramp: Ramp::Times(_),
                    ..
                }
            )
    }

    /// One sample of the first ramp of a receiver alone, growing by up to
    /// `factor` per RTT.
    pub(super) fn first_ramp_alone(&mut self, r: &Reading, factor: f64) -> Decision {
        let base = r.rt_prop.as_secs_f64();
        let queued = r.rtt.as_secs_f64() > self.rtt_above(base, QUEUED, 0.5);
        if let Some((since, rate)) = self.hold {
            self.last_growth = r.at;
            // All of the window delivered with no queue: the queue was the
            // sender's slow start bursting, and the window holds it back
            // now; ramp on at once. Looked at only every two RTTs, the
            // window of 200 Mbit/s x 100 ms stayed at half the BDP for
            // 0.45 s with the flow filling it (measured from vsftpd). What
            // arrived in the last min-RTT shows it first: the goodput over
            // two RTTs ramped on 50 ms later.
            let delivered = self.carried >= (1.0 - self.headroom) * self.window;
            let ramp_on = delivered && !queued;
            if !ramp_on && r.at < since.saturating_add(r.rtt * HOLD_RTTS) {
                return Decision::none();
            }
            // Or still growing into the window: hold on.
            if ramp_on || r.rate >= rate * (1.0 + HOLD_GROWTH) {
                self.hold = (!ramp_on).then_some((r.at, r.rate));
                let what = if ramp_on {
                    "the window is all delivered with no queue: ramp on"
                } else {
                    "the rate grew: hold on"
                };
                return Decision::note(
                    self.state.name(),
                    format!("held since {}: {what}; {}", show_rate(rate), r.numbers),
                );
            }
            self.hold = None;
            self.state = State::Cruise;
            self.found = true;
            let target = self.target(r.rate.max(r.bw), r.rt_prop);
            return self.retarget(
                r.at,
                target.min(self.window),
                format!(
                    "the rate stopped growing while held: bandwidth found; {}",
                    r.numbers
                ),
            );
        }
        if queued && self.bound {
            self.hold = Some((r.at, r.rate));
            self.ramp_held = true;
            self.last_growth = r.at;
            return Decision::note(
                self.state.name(),
                format!(
                    "a queue: hold the window, does the rate still grow?; {}",
                    r.numbers
                ),
            );
        }
        let rtts = r.at.saturating_sub(self.last_growth).as_secs_f64() / r.rtt.as_secs_f64();
        self.last_growth = r.at;
        // From the first sample the sender fills, the window is what holds
        // it back: from then on, a queue is the window's.
        self.bound |= r.limited;
        if !r.limited {
            return self.ramp_goes_on(r);
        }
        self.ramp_on = self.ramp_on.map(|_| r.at);
        self.retarget(
            r.at,
            self.ramp_window(factor, rtts),
            format!("window-limited: ramp up; {}", r.numbers),
        )
    }

    /// The first ramp's window `rtts` RTTs after its last step: what a
    /// slow-starting sender sends next, twice what arrived in the last
    /// min-RTT, but growing by no more than x[`ROOM`] per RTT and no less
    /// than `factor`. Grown from the window alone by `factor`, it held
    /// the sender x1.75 a round where slow start doubles, and the flow
    /// reached the BDP 0.4 s after the kernel's (measured); following
    /// twice the arrivals with no bound, it took the window from 1.46 to
    /// 5.1 MB in an RTT and segments were lost at twice the BDP.
    /// Nor does it grow once it is [`RAMP_AHEAD`] x what arrived in the
    /// last min-RTT.
    ///
    /// A ramp slower than the first (`factor` below
    /// [`super::RAMP_FACTOR_ALONE`]: again, after the path changed) grows
    /// by `factor` alone: the sender is not in slow start but in flight
    /// already, its congestion window as large as before, and each step
    /// of the window lets it out at once. Following twice the arrivals
    /// there, the window of 50 Mbit/s x 160 ms went from 1.1 to 4.8 MB,
    /// twice the new BDP, in two and a half RTTs after the path became
    /// 200 Mbit/s x 100 ms, and the flow lost segments with 13.8 MB of
    /// memory (`bench/paths/changing.toml` from vsftpd, measured). Nor
    /// does it grow once it is [`FOLLOW_AHEAD`] x what arrived, as the
    /// first ramp once it has held at a queue.
    fn ramp_window(&self, factor: f64, rtts: f64) -> f64 {
        let grown = Ramp::Times(factor).grow(self.window, rtts);
        let grown = if factor < super::RAMP_FACTOR_ALONE {
            grown
        } else {
            let slow_start = (ROOM * self.carried).min(Ramp::Times(ROOM).grow(self.window, rtts));
            grown.max(slow_start)
        };
        let ahead = if factor < super::RAMP_FACTOR_ALONE || self.ramp_held {
            FOLLOW_AHEAD
        } else {
            RAMP_AHEAD
        };
        grown.min(self.window.max(ahead * self.carried))
    }

    /// Alone, in the first ramp, a sample the flow did not fill the
    /// window: nothing, unless a loss read as the path's let the ramp go
    /// on and the flow has not filled the window for [`RAMP_ON_RTTS`]
    /// min-RTTs since. A loss-based sender leaves its slow start at any
    /// loss, and a ramp that followed a slow start no longer has one to
    /// follow: the ramp ends, and the window stays out of the sender's way
    /// as after any first ramp ([`Self::leave_room`]). A ramp that went on
    /// waited for the flow to fill the window again, and from vsftpd on
    /// 200 Mbit/s x 300 ms with a queue of a twentieth of the BDP, where
    /// the slow start's overflow showed at +3% and read as the path's,
    /// that came 23 s later as cubic climbed back, and the ramp grew the
    /// window to four times what arrived, 13.8 MB (25.8 MB of buffer,
    /// measured). Behind bbr, whose startup goes on through a random loss,
    /// the flow fills the window again within a round or two.
    fn ramp_goes_on(&mut self, r: &Reading) -> Decision {
        let Some(since) = self.ramp_on else {
            return Decision::none();
        };
        if r.at < since.saturating_add(r.rt_prop.saturating_mul(RAMP_ON_RTTS)) {
            return Decision::none();
        }
        self.ramp_on = None;
        self.state = State::Cruise;
        Decision::note(
            self.state.name(),
            format!(
                "the flow has not filled the window for {RAMP_ON_RTTS} RTTs since a loss in the \
                 ramp: the sender's slow start is over, and so is the ramp; {}",
                r.numbers
            ),
        )
    }

    /// A loss in the first ramp of a receiver alone: the ramp ends, the
    /// window no lower than [`LOSS_KEEP`] of the one in flight.
    pub(super) fn first_ramp_loss_alone(&mut self, r: &Reading) -> Decision {
        // With no queue at all the loss is the path's, not the window's
        // (one in 10,000 packets lost at random ended the ramp at
        // 53 Mbit/s of 193 behind a bbr sender, measured): ramp on.
        if r.no_queue {
            self.ramp_on = Some(r.at);
            return Decision::note(
                self.state.name(),
                format!(
                    "loss in the first ramp with no queue: the path's, ramp on; {}",
                    r.numbers
                ),
            );
        }
        self.hold = None;
        self.state = State::Cruise;
        self.found |= r.inflated;
        let in_flight = self.window_at(r.at.saturating_sub(r.rtt));
        let window = self
            .target(r.rate.max(r.bw), r.rt_prop)
            .max(LOSS_KEEP * in_flight)
            .min(self.window);
        // A ramp the window held back had all of it out: the sender's
        // flight at the loss is the window of now, not what the goodput,
        // a round behind a doubling flow, shows.
        let flight = self.bound.then_some(self.window);
        self.ride_out(
            r,
            window,
            flight,
            format!(
                "loss in the first ramp: the sender cut its window, the ramp ends; {}",
                r.numbers
            ),
        )
    }
}

/// A receiver alone's cut goes no lower than the flow's best rate over
/// this long (unless a drain showed the path slower since).
pub(super) const BEST_WINDOW: Duration = Duration::from_secs(10);

/// Until a queue shows the path's capacity, a receiver alone leaves its
/// sender this many times its flight.
const ROOM: f64 = 2.0;

/// Alone, a loss recovery is ridden out with a window of at least this
/// many times what was in flight at the loss: the sender sends about 0.7
/// of a flight more before the hole is filled.
const RIDE_OUT_FLIGHTS: f64 = 1.75;

impl Auto {
    /// Alone, the cut a loss asks for (`window`) waits until the sender's
    /// recovery is over, and until then the window carries
    /// [`RIDE_OUT_FLIGHTS`] x the flight. The hole holds the advertised
    /// window where it is for about an RTT while the sender goes on: cut
    /// at once, the window held the recovery back, the pipe emptied, and
    /// when the hole filled the sender let its whole new congestion window
    /// out at once, a burst that a 50-packet queue dropped again. Each
    /// such loss left cubic at 0.4 of its rate instead of 0.7, from vsftpd
    /// on 100 Mbit/s x 40 ms (measured). Once the recovery is over the
    /// sender's window is 0.7 of what it was, under the cut. A window
    /// raised for that binds only in the recovery, and memory stays close
    /// to it, as stepping aside.
    pub(super) fn cut_after_recovery(
        &mut self,
        r: &Reading,
        window: f64,
        reason: String,
    ) -> Decision {
        self.ride_out(r, window, None, reason)
    }

    /// [`Self::cut_after_recovery`], with the sender's flight at the loss
    /// when the receiver knows it better than its goodput shows.
    fn ride_out(
        &mut self,
        r: &Reading,
        window: f64,
        flight: Option<f64>,
        reason: String,
    ) -> Decision {
        if !self.alone {
            return self.retarget(r.at, window, reason);
        }
        self.after_recovery = Some(window);
        // What the sender had out: its rate over the RTT of now, no more
        // than the window of an RTT ago lets out (behind bbr's startup
        // the RTT read +43%, and 1.75 x its rate times that RTT was
        // 6 MB on a 2.5 MB path).
        let flight = flight.unwrap_or_else(|| {
            (r.rate.max(r.bw) * r.rtt.as_secs_f64()).min(self.window_at(r.at.saturating_sub(r.rtt)))
        });
        self.ride = Some((flight, r.held));
        let ride = (RIDE_OUT_FLIGHTS * flight).max(self.window);
        self.riding_out = ride > self.window * (1.0 + HYSTERESIS);
        self.retarget(
            r.at,
            ride,
            format!(
                "{reason}; the window {} once the recovery is over",
                show_size(window)
            ),
        )
    }

    /// Alone, while a loss's cut waits: nothing else steers the window
    /// until no loss for [`RECOVERY_RTTS`], then the cut. `None` when no
    /// cut waits, or at a loss.
    pub(super) fn recovery(&mut self, r: &Reading, loss: bool) -> Option<Decision> {
        let window = self.after_recovery?;
        if loss {
            return None;
        }
        if self.loss_within(r, RECOVERY_RTTS) {
            return Some(Decision::none());
        }
        self.after_recovery = None;
        self.riding_out = false;
        self.ride = None;
        // Until a queue shows the capacity the window stays out of the
        // way ([`Self::leave_room`]): cut below it, the window of the next
        // sample raised it again, and the sender, held for that moment,
        // sent what it had kept at once.
        let room = if self.found { 0.0 } else { self.room(r) };
        let cut = window.max(room).min(self.window);
        let reason = if cut > window {
            format!(
                "the recovery is over: the window {ROOM} x the flight until a queue shows the \
                 capacity; {}",
                r.numbers
            )
        } else {
            format!(
                "the recovery is over: the window the loss asked for; {}",
                r.numbers
            )
        };
        Some(self.retarget(r.at, cut, reason))
    }

    /// Alone, the window that leaves a sender [`ROOM`] x its flight.
    fn room(&self, r: &Reading) -> f64 {
        ROOM * r.rate * r.rt_prop.as_secs_f64()
    }

    /// Alone, a loss of the episode a cut waits for: the hole is still
    /// there, and what arrived beyond it waits in this end's buffer while
    /// the sender may send no further than the window beyond the hole. The
    /// window covers what came beyond the hole since the loss and the
    /// flight at the loss (the sender's window is 0.7 of it, the rest
    /// holes). Held at [`RIDE_OUT_FLIGHTS`] x the flight, a recovery whose
    /// retransmissions were lost again lasted three RTTs; the sender
    /// filled the window and stopped, and when the hole filled it let its
    /// whole congestion window out at once into the queue, lost segments
    /// again, and cubic, cut a second time below its last maximum, grew
    /// back to 0.87 of the kernel's window (from vsftpd on 200 Mbit/s x
    /// 300 ms with a queue of a twentieth of the BDP, measured).
    ///
    /// What came beyond the hole is covered up to [`ROOM`] x the flow's
    /// rate x min-RTT, two round trips of arrivals: a hole that lasts
    /// longer waits for the sender's timeout, and the window would follow
    /// it up to the kernel's. Behind bbr, which does not slow down for a
    /// loss, on 200 Mbit/s x 100 ms with 0.01% random loss, a hole in the
    /// first ramp lasted 0.8 s and held 8.7 MiB beyond it, and the window
    /// followed to 17.6 MB where the other runs peaked at 6 MB (measured).
    pub(super) fn ride_on(&mut self, r: &Reading) -> Decision {
        let (Some((flight, held_then)), Some(_)) = (self.ride, self.after_recovery) else {
            return Decision::none();
        };
        let beyond = (r.held - held_then).max(0.0);
        let need = RIDE_OUT_FLIGHTS * flight + beyond.min(self.room(r));
        if need <= self.window * (1.0 + HYSTERESIS) {
            return Decision::none();
        }
        self.riding_out = true;
        self.retarget(
            r.at,
            need,
            format!(
                "the recovery goes on, {} arrived beyond the hole: the window covers it and the \
                 flight at the loss; {}",
                show_size(beyond),
                r.numbers
            ),
        )
    }

    /// Alone, the lowest window a loss or a queue may cut to: the flow's
    /// best rate over the last [`BEST_WINDOW`] x min-RTT, plus headroom
    /// (never above the window of now); 0 with a rightsize sender.
    ///
    /// A plain sender on a shallow queue loses segments to its own bursts
    /// well below the path's rate, and the rate at such a loss is its
    /// recovery's, not the path's: each loss cut the window to it, and the
    /// next loss came at the lower window. From vsftpd on 100 Mbit/s x
    /// 40 ms with a 50-packet queue, the window went 820, 440, 323 and
    /// 260 kB in 7 s, and the flow stayed near 50 Mbit/s where the
    /// kernel's autotuning made 73 (measured). The window is there to keep
    /// the sender from overrunning the queue, which a window at the rate
    /// the flow already carried does not do; a path that really got
    /// slower shows in a drain, which starts the best rate again.
    pub(super) fn alone_floor(&self, r: &Reading) -> f64 {
        if !self.alone {
            return 0.0;
        }
        self.best
            .get()
            .map_or(0.0, |best| self.target(best, r.rt_prop))
            .min(self.window)
    }

    /// The window a cut sized for `rate` (bytes per second) goes to: its
    /// target at min-RTT, never above the window of now and, alone, never
    /// below [`Self::alone_floor`].
    pub(super) fn cut_window(&self, rate: f64, r: &Reading) -> f64 {
        self.target(rate, r.rt_prop)
            .min(self.window)
            .max(self.alone_floor(r))
    }

    /// Alone, after the first ramp and until a queue shows the capacity:
    /// the window stays [`ROOM`] x the flight, out of the sender's way.
    /// A loss that no queue explains (the bursts of a sender's slow start
    /// into a shallow queue, at a quarter of the BDP) leaves a loss-based
    /// sender growing back slowly, and a window held at its flight stops
    /// that growth (Linux grows a congestion window only while it limits
    /// the sender): from vsftpd on 100 Mbit/s x 40 ms with a 50-packet
    /// queue, windows cut to the flight after such losses kept the flow at
    /// 30 to 60 Mbit/s for 25 s (measured). The kernel's own autotuning
    /// keeps its window about twice the flight too.
    pub(super) fn leave_room(&mut self, r: &Reading) -> Decision {
        if !self.alone || self.found || self.first_ramp() {
            return Decision::none();
        }
        let room = self.room(r);
        if room <= self.window * (1.0 + HYSTERESIS) {
            return Decision::none();
        }
        self.retarget(
            r.at,
            room,
            format!(
                "no queue has shown the capacity yet: the window stays {ROOM} x the flight; {}",
                r.numbers
            ),
        )
    }
}

#[cfg(test)]
mod tests;
