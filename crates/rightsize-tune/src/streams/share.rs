//! The buffers of parallel streams sized as one flow: `auto` on a
//! transfer over several streams (MODE E), at either end.
//!
//! A tuner per stream, each alone, reads the queue that the other streams
//! build as its own and cuts its window, and the loss of another stream's
//! segment as a reason to step aside: measured on a lossy long path
//! (200 Mbit/s x 100 ms, 0.01% loss, 4 streams), the sender was held by
//! the receive window for half of the transfer, and the streams' buffers
//! summed 13-16 MB. The streams share one bottleneck, so one window is
//! sized for all of them and split evenly: [`Aggregate`] measures the
//! streams' summed goodput once per round trip and sets the aggregate
//! window (the sum of the streams' `SO_RCVBUF` requests; the kernel
//! doubles each) to
//! - [`GROW`] x the last round's bytes while the goodput still grows by
//!   [`GROWTH`] a round (slow start doubles each round: the window lets
//!   the next round deliver twice as much), and
//! - [`HOLD`] x the best round's bytes once it has not grown for
//!   [`FLAT_ROUNDS`] rounds: the bottleneck is full. The window is not cut
//!   for a loss or a queue: a stream's loss halves that stream's
//!   congestion window, not the path's capacity, and the window is then
//!   what lets the others take up the share.
//!
//! Each stream's [`Share`] (a [`Tuner`]) reports what arrived and its RTT
//! into the shared [`Aggregate`], and asks for its part of the window:
//! - a receiver counts its `tcpi_data_segs_in` segments of `tcpi_rcv_mss`
//!   bytes (what the application reads comes in bursts when a hole is
//!   filled, faster than the path), reads its RTT in `tcpi_rcv_rtt`, and
//!   sets `SO_RCVBUF`;
//! - a sender counts its `tcpi_delivered` segments of `tcpi_snd_mss` bytes
//!   (selectively acknowledged ones included, for the same reason), reads
//!   its RTT in `tcpi_rtt`, and sets `SO_SNDBUF`: a send buffer of the
//!   request holds about as much payload as a receive buffer advertises
//!   (the kernel doubles both; about 0.8 of it is payload, measured by
//!   `auto`'s sender), and a flow needs at most its window in flight.
//!
//! The first
//! stream to join also keeps the aggregate's clock: its samples close the
//! rounds (the streams' clocks start within a round trip of each other;
//! one clock keeps the rounds' lengths true).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::units::Bytes;
use crate::{Action, Context, Decision, Event, Inputs, Role, Setup, Tuner};

/// While the summed goodput grows, the window is this many times the last
/// round's bytes: slow start doubles a round, and the kernel lets the
/// window reach more than the request (it doubles the request for its
/// overhead, and advertises part of that).
pub const GROW: f64 = 1.5;
/// Once it stopped growing, this many times the best round's bytes: room
/// for the streams that recover from a loss to be made up by the others
/// (8 streams with 384 KiB each, 1.25 BDPs together, made 172 Mbit/s on
/// the lossy path, measured, as the kernel's autotuning with 52 MB did).
pub const HOLD: f64 = 1.25;
/// A round whose goodput exceeds the best by this factor is growth.
pub const GROWTH: f64 = 1.1;
/// Rounds without growth after which the bottleneck counts as full.
pub const FLAT_ROUNDS: u32 = 3;
/// No stream's request goes below this (what Linux gives a socket by
/// default, `tcp_rmem[1]`): a stream starting late is not starved.
pub const FLOOR: Bytes = Bytes(128 * 1024);
/// A round in which every stream's RTT stands this share above the least
/// RTT (and at least [`QUEUED_AT_LEAST`]) found a queue at the
/// bottleneck: the streams fill it. Every stream's, the least of them: a
/// queue at the bottleneck delays each stream that crosses it, where one
/// stream's smoothed RTT also carries what its own ends add (delayed
/// ACKs of a stream that sends few segments a round, a busy host). (The
/// median of eight streams' smoothed RTTs, 33 Mbit/s together on a
/// 100 Mbit/s x 40 ms path with 1% loss, read more than 4 ms above the
/// least in 55% of a trial's rounds, measured on a 2-core machine
/// running both ends, the emulator and a debug build.)
pub const QUEUED: f64 = 0.1;
/// ... and at least this much above it, for short paths.
pub const QUEUED_AT_LEAST: Duration = Duration::from_millis(1);
/// A path whose least RTT is below this is a LAN or a host's own ...
pub const LAN_RTT: Duration = Duration::from_millis(1);
/// ... and its streams' window is sized for this RTT: there the receiving
/// threads' scheduling, not the path, sets the RTT the streams see, and on
/// two cores with four streams (and their tuners) it is milliseconds.
/// Measured over a veth pair, four streams of 4 GiB, alternating with the
/// kernel's autotuning: sized for their tens of microseconds, 20.7 Gbit/s;
/// for 1 ms, 0.88 x the kernel's goodput; for 3 ms, 0.88 x; for 8 ms,
/// 0.96 to 0.98 x, with 0.3 to 0.6 x its buffers.
pub const LAN_SIZING_RTT: Duration = Duration::from_millis(8);
/// Until a round was measured: an RTT for the rounds.
const FIRST_RTT: Duration = Duration::from_millis(100);
/// Linux stores twice a buffer request.
const LINUX_DOUBLING: u64 = 2;
/// How often a stream samples.
const SAMPLE_EVERY: Duration = Duration::from_millis(10);

/// The RTT a window is sized for, on a path whose least RTT is `least`.
fn sizing_rtt(least: Duration) -> Duration {
    if least < LAN_RTT {
        LAN_SIZING_RTT
    } else {
        least
    }
}

/// The streams of one transfer, as one flow.
#[derive(Debug, Clone, Default)]
pub struct Aggregate {
    /// Each stream's bytes so far.
    bytes: Vec<u64>,
    /// The least RTT any stream saw.
    min_rtt: Option<Duration>,
    /// When the current round began (the clock stream's time) and the
    /// bytes then.
    round: Option<(Duration, u64)>,
    /// The best round's goodput, bytes per second.
    best: f64,
    /// Rounds since the goodput last grew.
    flat: u32,
    /// The aggregate request, bytes (the sum of the streams' `SO_RCVBUF`).
    window: u64,
    /// Rounds measured.
    rounds: u32,
    /// Each stream's latest RTT.
    rtt_now: Vec<Option<Duration>>,
    /// Rounds that found a queue, and rounds, since [`Aggregate::queued`]
    /// was last asked.
    queued: (u32, u32),
}

/// What a round changed, for the decision log.
#[derive(Debug, Clone, PartialEq)]
pub struct Round {
    /// The round's goodput, bits per second.
    pub goodput_bps: f64,
    /// The aggregate window now, bytes.
    pub window: u64,
    /// Whether the goodput still grows.
    pub growing: bool,
}

impl Aggregate {
    /// No stream yet.
    pub fn new() -> Aggregate {
        Aggregate::default()
    }

    /// A new stream; its index.
    pub fn join(&mut self) -> usize {
        self.bytes.push(0);
        self.rtt_now.push(None);
        self.bytes.len() - 1
    }

    /// Stream `id` received `bytes` so far, saw `least` as its least RTT
    /// and `now` as its RTT now.
    pub fn report(
        &mut self,
        id: usize,
        bytes: u64,
        least: Option<Duration>,
        now: Option<Duration>,
    ) {
        if let Some(b) = self.bytes.get_mut(id) {
            *b = bytes;
        }
        if let Some(rtt) = least.filter(|r| !r.is_zero()) {
            self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
        }
        if let (Some(slot), Some(now)) = (self.rtt_now.get_mut(id), now.filter(|r| !r.is_zero())) {
            *slot = Some(now);
        }
    }

    /// The share of the rounds since the last call that found a queue at
    /// the bottleneck (every stream's RTT [`QUEUED`] above the least):
    /// with a queue in most rounds, the streams fill the path and more of
    /// them only add connections. `None` without a round.
    pub fn queued(&mut self) -> Option<f64> {
        let (queued, rounds) = std::mem::take(&mut self.queued);
        (rounds > 0).then(|| f64::from(queued) / f64::from(rounds))
    }

    /// Whether the streams' RTTs now show a queue.
    fn queue_now(&self) -> Option<bool> {
        let least = self.min_rtt?;
        let now = self.rtt_now.iter().flatten().copied().min()?;
        let above = least.mul_f64(QUEUED).max(QUEUED_AT_LEAST);
        Some(now > least + above)
    }

    /// The clock stream's time is `at`: closes the round if one RTT
    /// passed, and says what it measured.
    pub fn tick(&mut self, at: Duration) -> Option<Round> {
        let total: u64 = self.bytes.iter().sum();
        let rtt = self.min_rtt.unwrap_or(FIRST_RTT);
        let Some((began, before)) = self.round else {
            self.round = Some((at, total));
            return None;
        };
        let span = at.saturating_sub(began);
        if span < rtt {
            return None;
        }
        self.round = Some((at, total));
        let rate = total.saturating_sub(before) as f64 / span.as_secs_f64();
        let growing = rate > self.best * GROWTH;
        if growing {
            self.flat = 0;
        } else {
            self.flat += 1;
        }
        self.best = self.best.max(rate);
        self.rounds += 1;
        if let Some(queue) = self.queue_now() {
            self.queued.0 += u32::from(queue);
            self.queued.1 += 1;
        }
        let rtt_s = sizing_rtt(rtt).as_secs_f64();
        self.window = if self.flat < FLAT_ROUNDS {
            // Still growing (or not sure yet): never below what it was.
            self.window.max((GROW * rate * rtt_s) as u64)
        } else {
            (HOLD * self.best * rtt_s) as u64
        };
        Some(Round {
            goodput_bps: rate * 8.0,
            window: self.window,
            growing: self.flat < FLAT_ROUNDS,
        })
    }

    /// Each stream's part of the window, bytes: an even split, at least
    /// [`FLOOR`]; `None` before the first round.
    pub fn share(&self) -> Option<Bytes> {
        let streams = self.bytes.len().max(1) as u64;
        (self.rounds > 0).then(|| Bytes((self.window / streams).max(FLOOR.0)))
    }
}

/// One stream's tuner: its part of the [`Aggregate`] window.
#[derive(Debug)]
pub struct Share {
    aggregate: Arc<Mutex<Aggregate>>,
    id: usize,
    /// Which buffer it sizes, and from which counters.
    role: Role,
    /// The request applied last.
    applied: Option<Bytes>,
    /// The largest request the kernel applies as given.
    max: Bytes,
    next: Duration,
}

impl Share {
    /// A stream of the transfer whose streams share `aggregate`.
    pub fn new(ctx: Context, aggregate: Arc<Mutex<Aggregate>>) -> Share {
        let id = aggregate
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .join();
        Share {
            aggregate,
            id,
            role: ctx.role,
            applied: None,
            // A sender never asks for more than the kernel's own send
            // autotuning reaches (it stores twice the request).
            max: match ctx.role {
                Role::Receiver => ctx.limits.rmem_max,
                Role::Sender => Bytes(
                    ctx.limits
                        .wmem_max
                        .0
                        .min(ctx.limits.tcp_wmem_max.0 / LINUX_DOUBLING),
                ),
            },
            next: Duration::ZERO,
        }
    }
}

impl Tuner for Share {
    fn name(&self) -> &'static str {
        "auto"
    }

    fn state(&self) -> &'static str {
        "shared"
    }

    fn setup(&self) -> Setup {
        // Nothing before the handshake: the window scale stays the one
        // Linux picks for a buffer that may grow (see `auto`).
        Setup::default()
    }

    fn inputs(&self) -> Inputs {
        Inputs::default()
    }

    fn on_event(&mut self, event: &Event) -> Decision {
        let Event::Sample(sample) = event else {
            return Decision::none();
        };
        self.next = sample.at + SAMPLE_EVERY;
        let micros = |us: u32| Some(Duration::from_micros(u64::from(us))).filter(|d| !d.is_zero());
        let info = sample.tcp_info.as_ref();
        // A receiver's RTT now is its `rcv_rtt` (from the timestamps the
        // sender echoes), a sender's its smoothed RTT; the least is
        // `min_rtt` (the handshake's, at least).
        let now = info.and_then(|i| match self.role {
            Role::Receiver => micros(i.rcv_rtt_us),
            Role::Sender => micros(i.rtt_us),
        });
        let least = info.and_then(|i| i.min_rtt_us.and_then(micros)).or(now);
        // What arrived, in order or not: bytes read by the application
        // (or acknowledged in order) come in bursts when a hole is filled
        // (a loss held the rest back), which would read as more than the
        // path's rate.
        let arrived = info
            .and_then(|i| match self.role {
                Role::Receiver => Some(u64::from(i.data_segs_in?) * u64::from(i.rcv_mss_bytes)),
                Role::Sender => Some(u64::from(i.delivered_segs?) * u64::from(i.snd_mss_bytes)),
            })
            .filter(|&b| b > 0)
            .unwrap_or(sample.bytes);
        let mut aggregate = self
            .aggregate
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        aggregate.report(self.id, arrived, least, now);
        let round = if self.id == 0 {
            aggregate.tick(sample.at)
        } else {
            None
        };
        let share = aggregate.share();
        drop(aggregate);
        let Some(share) = share.map(|s| Bytes(s.0.min(self.max.0))) else {
            return Decision::none();
        };
        // A change under 1/16 is not worth a system call.
        let moved = self
            .applied
            .is_none_or(|a| share.0.abs_diff(a.0) > a.0 / 16);
        let reason = |round: &Round| {
            format!(
                "streams' goodput {:.1} Mbit/s ({}), aggregate window {}",
                round.goodput_bps / 1e6,
                if round.growing { "growing" } else { "full" },
                Bytes(round.window).human_si()
            )
        };
        if !moved {
            return round.map_or_else(Decision::none, |r| Decision::note("shared", reason(&r)));
        }
        self.applied = Some(share);
        let action = match self.role {
            Role::Receiver => Action::SetRcvBuf(share),
            Role::Sender => Action::SetSndBuf(share),
        };
        Decision::act(
            "shared",
            vec![action],
            share,
            round.as_ref().map_or_else(
                || {
                    format!(
                        "this stream's part of the aggregate window: {}",
                        share.human_si()
                    )
                },
                reason,
            ),
        )
    }

    fn next_wakeup(&self) -> Option<Duration> {
        Some(self.next)
    }
}

#[cfg(test)]
mod tests;
