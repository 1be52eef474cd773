//! `auto` on a sender whose peer is not rightsize (curl, lftp, ftplib or
//! globus-url-copy fetching from `rightsize serve`): no peer reports, no
//! packet trains, only this end's `TCP_INFO`. It sizes `SO_SNDBUF` from
//! that alone, starting from the kernel's own send autotuning and bounding
//! it by what the path carries.
//!
//! One number is steered: the allowance `A`, the payload the flow may have
//! in flight. The request is [`WAKE`] x `A` over the payload per byte of
//! read-back buffer (learnt from `tcpi_unacked` and `tcpi_notsent_bytes`
//! against the read-back, at most 1), halved for Linux's doubling.
//!
//! What it guarantees:
//!
//! - It sets only `SO_SNDBUF` and, once the path's rate is found,
//!   `SO_MAX_PACING_RATE`; nothing before the handshake.
//! - While starting, `A` is one and a half congestion windows: the
//!   kernel's own rule (`tcp_sndbuf_expand`) keeps two windows so that slow
//!   start can double, but counts 4,352 bytes of memory per 1,448-byte
//!   segment; this counts the payload per byte measured, and resizes four
//!   times per RTT. The buffer holds [`WAKE`] x `A`: Linux wakes a writer
//!   blocked on a full send buffer only once a third of it is free
//!   (`sk_stream_write_space`).
//! - Once the path shows its rate (the RTT inflates over min-RTT, or a
//!   segment is retransmitted), `A` follows the congestion window (+1/8,
//!   but once the path's rate is found not beyond the window itself where
//!   the path holds less: its BDP and the deepest queue that stood a
//!   round; down, at once to half the largest window of the last 600 ms
//!   at most, and not at all to a window of four segments or less: bbr's
//!   `PROBE_RTT` and the dip as its recovery ends are pauses)
//!   but stays within `gain` x the best delivery rate of the last
//!   [`BW_WINDOW`] x min-RTT: more in flight only queues at the bottleneck.
//!   Until that rate grows by less than 1/8 in a round, the bound is twice
//!   it (at least): a slow start's own bursts inflate the RTT long before
//!   the path is full, and the rate, measured on what was sent a round
//!   before, is half of what is in flight. Bounded at the rate there, the
//!   flow of a 200 Mbit/s x 100 ms path fell from a 1.32 MiB to a
//!   412 KiB allowance at 34 Mbit/s, 0.68 s into the transfer, and
//!   reached 150 Mbit/s 0.3 s after a run bounded a round later
//!   (measured).
//! - Once per round (a min-RTT) the queue steers `gain`: up when the
//!   buffer held the flow back (the congestion window had room, nothing
//!   waited unsent, or `tcpi_sndbuf_limited` grew) and the queue emptied
//!   (the least RTT of the round within 1/16 of min-RTT), so a buffer that
//!   holds a flow back cannot stay small. Until the path's rate is found
//!   that is x5/4; after, it is a probe of x17/16, judged two rounds later
//!   by the mean delivery rate: one that raised it by half its step makes
//!   the next twice as large (up to x5/4; back to x17/16 once the flow
//!   falls below the path's rate); one that did not finds the path full
//!   (more buffer would only have queued): `gain` back to 1 at most, and
//!   the next probe four rounds later. x7/8 when a queue stood all round
//!   (least RTT more than 1/4 above min-RTT), at most once per RTT of the
//!   queue (a cut shows in the RTT only that much later), down to
//!   [`MIN_GAIN`], since the read-back does not always bound what is in
//!   flight. When the best rate's window lets a higher rate go while a
//!   queue stands, `gain` takes the difference: the bound comes down by
//!   those cuts, not in one step to a rate read while the queue drained.
//!   A queue that
//!   stands [`STOOD_ROUNDS`] rounds in a row while the buffer comes down
//!   (what is in flight by [`CAME_DOWN`] at least: a queue that stands
//!   while the flight does not come down is the sender's), its least RTT
//!   not falling, means the path's RTT rose: min-RTT starts
//!   again from that RTT (the kernel's own `min_rtt` keeps the old one for
//!   minutes, so it is set aside), and the bound starts again from the
//!   allowance (at least rate x min-RTT): the rounds before shrank `gain`
//!   against the old min-RTT.
//! - Once the path's rate is found, an RTT 1/8 below min-RTT is a new,
//!   shorter path: the sender starts again from its congestion window,
//!   the pacing ceiling lifted, until a queue or a loss shows the new
//!   path's rate.
//! - Behind bbr (`TCP_CONGESTION`, or the host's default), which paces
//!   at its own estimate of the path's rate and probes above it, no
//!   pacing is set at all (the two items below are for the others).
//! - From the first retransmission on, the kernel's own pacing is on
//!   ([`KERNEL_PACING`]: no ceiling yet), so the kernel spreads what the
//!   congestion window lets out over the smoothed RTT (1.2 windows per
//!   RTT after slow start) instead of sending line-rate bursts, which
//!   overflow a shallow queue. After a recovery in which the buffer held
//!   only unacknowledged data, the ACK that fills the holes frees most of
//!   it at once: unpaced, the window it opened left in one burst and lost
//!   400 segments more (measured on a 200 Mbit/s x 100 ms path with a
//!   0.1 x BDP queue). Not before the first loss: paced, a slow start
//!   shows Linux's HyStart no delay, and on a 1 x BDP queue it went on to
//!   overfill the queue the unpaced one never reached (630 to 860 segments
//!   retransmitted where none were, measured).
//! - Once the best rate stops growing (by less than 1/8 in a round), the
//!   kernel paces the flow at 1/16 above it, and the ceiling follows the
//!   best rate up (a flow at the ceiling raises it) and down; it is never
//!   below the best rate of the last [`BW_WINDOW`]. Paced, what the writer
//!   adds after a wake-up leaves at about the path's rate, not as a
//!   line-rate burst into the bottleneck queue.
//! - A loss episode (retransmissions less than two min-RTTs apart, or
//!   while the kernel recovers) that begins with no queue in this round or
//!   the one before, on a path whose RTT has not changed, or with a queue
//!   under half the deepest that stood a whole round (in bytes, the RTT
//!   above min-RTT times the delivery rate, at most what is in flight
//!   beyond rate x min-RTT: a drop-tail queue overflows at the same bytes
//!   at any rate; bbr's own queue stands below that) and an RTT below the
//!   most that stood a round, is the path's: for [`QUIET_ROUNDS`] after
//!   it `A` is at least [`RIDE_OUT_BDPS`] x rate x min-RTT, so that the
//!   flow goes on through a recovery. Unless it retransmits more than
//!   [`OVERFLOW_LOST`] of what it sent (in flight when it began, and sent
//!   since): then a queue too shallow for the RTT to show overflowed, and
//!   the ride-out it began ends.
//! - While the kernel recovers from a loss (`tcpi_ca_state` Recovery or
//!   Loss), `A` does not come down: the buffer holds everything from the
//!   first hole on, and a recovery with nothing new to send learns of
//!   further losses only late.
//! - It asks for no more than the kernel's own autotuning could reach
//!   (`tcp_wmem[2]`), unless the buffer held the flow back there with the
//!   queue empty; then up to `wmem_max`. It never asks for less than the
//!   buffer of [`MIN_ALLOWANCE`].
//!
//! A full-rate flow needs about 1.5 x BDP of payload in its buffer; the
//! kernel keeps about 6 x its congestion window. Measured on a 200 Mbit/s
//! x 100 ms path (`bench/paths/lfn.toml`), curl fetching 256 MiB: 0.999 x
//! the kernel's goodput with 0.36 x its peak send buffer, and nothing
//! retransmitted (docs/benchmarks.md).

use std::time::Duration;

use crate::auto::{CwndFollower, INITIAL_WINDOW};
use crate::meter::{
    LINUX_BUFFER_DOUBLING, WindowedMax, bytes_capped, micros, scaled, show_bytes, show_ms,
    show_rate, show_size,
};
use crate::tcpinfo::TcpInfoSample;
use crate::units::Bytes;
use crate::{
    Action, Congestion, Context, Decision, Event, Inputs, KERNEL_PACING, MIN_PLAUSIBLE_PACE_BPS,
    NO_PACING_CEILING, Sample, Settings, Setup, Tuner,
};

/// The send buffer holds this many times the allowance: a blocked writer
/// wakes when a third of the buffer is free, so two thirds of it must
/// still cover what the flow may have in flight.
const WAKE: f64 = 1.5;
/// The least allowance, bytes of payload: the first window any TCP
/// advertises.
const MIN_ALLOWANCE: Bytes = INITIAL_WINDOW;
/// While starting, the allowance is this many congestion windows. Slow
/// start doubles the window per RTT, so by at most 2^(1/4) = 1.19 between
/// two samples (four per RTT); this leaves room for a late one. (The
/// kernel's `tcp_sndbuf_expand` keeps two windows, but of its worst-case
/// memory per segment.)
const START_CWNDS: f64 = 1.5;
/// After the start, the allowance is this much above the congestion
/// window, so that congestion avoidance's growth between two samples is
/// never held back.
const CWND_MARGIN: f64 = 1.0 / 8.0;
/// The best delivery rate is taken over this long.
const BW_WINDOW: Duration = Duration::from_secs(2);
/// Payload per byte of send-buffer read-back before anything is learnt
/// (the rest is `sk_buff` overhead; large segments, as TSO and GSO build
/// them, carry little). The largest seen since is kept: a buffer the
/// writer has not filled only reads lower.
const DEFAULT_RATIO: f64 = 0.8;
/// Ratios outside this range are not learnt. More than a byte of payload
/// per byte of buffer does happen, but is no measure of the buffer's
/// need: on Linux 6.18 with `sendfile`, a send buffer of 3.78 MB read back
/// had 7.5 MB in flight (a congestion window's worth, at an RTT of 284 ms
/// on a 200 Mbit/s path), and 2 to 4 times the buffer during a loss
/// recovery after the buffer came down (measured). Learnt, such ratios
/// shrank the buffer to 52 KB; the queue the RTT shows steers the
/// buffer instead ([`STOOD`]).
const MIN_RATIO: f64 = 0.5;
const MAX_RATIO: f64 = 1.0;
/// The buffer stopped the sender when `tcpi_sndbuf_limited` grew by this
/// share of `tcpi_busy_time` since the previous sample ...
const LIMITED_SHARE: f64 = 0.2;
/// ... or, in a sample, when the congestion window had room beyond the
/// bytes in flight (this share of them and [`ROOM_SEGMENTS`]) and next to
/// nothing waited unsent (this share of the buffer's payload): all the
/// buffer held was in flight, and the window could have taken more.
/// (Linux 6.18 counted no `sndbuf_limited` time at all for a buffer that
/// held a flow to 0.87 of a 200 Mbit/s path, measured.)
const CWND_ROOM: f64 = 1.0 / 8.0;
const ROOM_SEGMENTS: u64 = 4;
const UNSENT_SHARE: f64 = 1.0 / 8.0;
/// A round (one min-RTT) is buffer-limited when the buffer was the limit
/// in this share of its samples.
const LIMITED_SAMPLES: f64 = 0.5;
/// Growth per round when the buffer held the flow back and the queue
/// emptied: of `A` while starting, of `gain` until the path's rate is
/// found.
const START_GROWTH: f64 = 2.0;
const GROWTH: f64 = 5.0 / 4.0;
/// Once the path's rate is found, such a round is a probe: `gain` grows
/// by this much (the request is made even if it moves by less than
/// [`HYSTERESIS`]), and the mean delivery rate of the [`PROBE_ROUNDS`]th
/// round after it tells whether the buffer held the flow back. If the rate
/// grew by half the step, the next probe's step doubles (up to
/// [`GROWTH`]) until the flow falls below the path's rate; if not, the
/// path was full: `gain` goes back to 1, rate x min-RTT (the buffer
/// holds [`WAKE`] times that), or to what it was if less, and the next
/// probe waits [`PROBE_WAIT`] rounds. At x5/4 a probe
/// and the congestion window that followed it took the send buffer to
/// 0.91 to 1.01 MB on a 100 Mbit/s x 40 ms path whose queue holds 75 kB,
/// where the flow was already at the path's rate and the kernel's own
/// buffer peaked at 1.79 MB; at x1.1, undone to the gain before it
/// (x1.14, from the end of the slow start), to 0.91 to 0.96 MB (measured,
/// curl and globus-url-copy from `rightsize serve`,
/// `bench/paths/short.toml`).
const PROBE_STEP: f64 = 1.0 / 16.0;
/// Probes are for a flow within 1/8 of the path's best rate.
const AT_RATE: f64 = 7.0 / 8.0;
const PROBE_ROUNDS: u32 = 2;
const PROBE_WAIT: u32 = 4;
/// Growth beyond rate x min-RTT stops here (a path 64 times faster than
/// the best rate seen is a new path).
const MAX_GAIN: f64 = 64.0;
/// The RTT is inflated (a queue at the bottleneck) above min-RTT x (1 +
/// this) + [`super::RTT_FLOOR`].
const INFLATION: f64 = 1.0 / 8.0;
/// The queue emptied during a round when the least smoothed RTT of the
/// round was within this share of min-RTT (+ [`super::RTT_FLOOR`]) ...
const EMPTIED: f64 = 1.0 / 16.0;
/// ... and stood all round when it stayed above this share: more memory
/// than the path needs, which comes down by [`SHRINK`] per round, down to
/// [`MIN_GAIN`] x rate x min-RTT (the buffer does not always bound what is
/// in flight, see [`MAX_RATIO`]).
const STOOD: f64 = 1.0 / 4.0;
/// On a short path the bound leaves up to the hosts' delay in flight
/// beyond rate x min-RTT ([`super::HOST_DELAY`]: at 200 Mbit/s x 5 ms,
/// bounded at rate x min-RTT, the buffer held curl's flow 40 to 72% of
/// the time and made 0.96 x the kernel's goodput, measured), so inflated,
/// emptied and stood are at least these shares of that delay above
/// min-RTT.
const INFLATED_HOST: f64 = 2.0;
const EMPTIED_HOST: f64 = 0.25;
const STOOD_HOST: f64 = 2.0;
const SHRINK: f64 = 7.0 / 8.0;
/// A queue that stood this many rounds in a row while the buffer came
/// down, and two of its own RTTs, its least RTT within [`RTT_STAYED`] of
/// the first round's either way, is no queue: the path's RTT rose, and min-RTT starts
/// again from it. Without
/// this, curl from `rightsize serve` on the changing path (100 to 160 ms)
/// cut the buffer x7/8 a round for ever, to 200 kB and 15 Mbit/s
/// (measured, one run in three).
const STOOD_ROUNDS: u32 = 4;
const RTT_STAYED: f64 = 0.95;
/// The buffer came down when what was in flight, on average over the
/// last of those rounds, was at most this share of the first round's. A
/// queue that stands while the flight does not come down is the
/// sender's, whatever the RTT does: the cuts did not reach the flow (the
/// ride-out after a path's loss held the buffer up, or the buffer held
/// more than it read back). Read as a path whose RTT rose, such a queue
/// then drained and read as a new, shorter path, where the sender starts
/// again from its congestion window: behind bbr (1.39 x the path's RTT
/// for 4 rounds while the ride-out held 2.5 BDP), 16.8 MB of send buffer,
/// half the kernel's 33.6; behind reno, 1.3 to 1.5 x for 4 rounds while
/// the buffer came down from 1.27 MiB to 684 KiB of allowance and the
/// flight not at all (693 to 1,024 segments in the samples logged),
/// 4.67 MB against the kernel's 9.32 (measured on
/// `bench/paths/bbr-loss.toml` and `bench/paths/reno.toml`, curl
/// fetching 256 MiB).
const CAME_DOWN: f64 = 7.0 / 8.0;
/// Once the path's rate is found, an RTT below this share of min-RTT is
/// a new, shorter path (min-RTT comes from the kernel's least RTT, which
/// the smoothed RTT never undercuts, or from the least smoothed RTT once
/// it started again): the sender starts again from the congestion window
/// it has, with no pacing ceiling. A flow bounded and paced for 50 Mbit/s
/// x 160 ms took 0.9 s to climb to 190 Mbit/s once the changing path was
/// back at 200 Mbit/s x 100 ms, where the kernel's congestion window,
/// which never came down, carried the new path's rate within 0.2 s
/// (measured).
const SHORTER: f64 = 7.0 / 8.0;
const MIN_GAIN: f64 = 1.0 / 16.0;
/// A segment retransmitted with no queue at all (the RTT within
/// [`EMPTIED`] of min-RTT in this round and the one before, on a path
/// whose RTT has not changed) is the path's loss, not the buffer's: for
/// [`QUIET_ROUNDS`] after it the allowance is at least this many times
/// rate x min-RTT. The buffer holds everything from the hole on until
/// the retransmission is acknowledged, about an RTT and a quarter later,
/// while the flow goes on at the path's rate; at one BDP it stops the
/// sender instead (under bbr with 0.01% random loss on 200 Mbit/s x
/// 100 ms, curl from `rightsize serve` made 0.91 x the kernel's goodput,
/// measured).
const RIDE_OUT_BDPS: f64 = 2.5;
const QUIET_ROUNDS: u32 = 128;
/// Retransmissions less than this many min-RTTs apart, or while the
/// kernel is still recovering (`tcpi_ca_state` Recovery or Loss in this
/// sample and the one before), are one loss episode, read as its first
/// was. A shallow queue that overflowed in slow start
/// (`bench/paths/shallow.toml`: 584 segments lost) is retransmitted for
/// half a second after the queue drained; read one by one, those
/// retransmissions looked like the path's losses, and the ride-out took
/// the send buffer to 3.78 MB (measured, 2 runs in 4). A recovery that
/// begins in this sample is a new episode's: read as the last one's, each
/// random loss behind bbr was taken for the queue's overflow of its
/// startup five seconds before (curl on `bench/paths/bbr-loss.toml`,
/// measured).
const EPISODE_RTTS: u32 = 2;
/// A loss episode read as the path's (it began with no queue) that
/// retransmits more than this share of what it sent (in flight when it
/// began, and sent since) is a queue's overflow after all: a queue of a
/// twentieth of the BDP on a 300 ms path (`bench/paths/far.toml`) adds 5%
/// to the RTT when full, and the slow start that overflowed it lost 289
/// segments of the 1,167 in flight; read as the path's, the ride-out held
/// the send buffer at 2.5 BDPs for the whole run while cubic climbed back,
/// 9.1 to 9.8 MB against the kernel's 8.7 to 12.5, and 4.5 to 6.1 MB once
/// it ended (curl and globus-url-copy, measured). Random loss of 0.1%
/// takes one segment in a thousand.
const OVERFLOW_LOST: f64 = 1.0 / 16.0;
/// `tcpi_ca_state` values of a recovery: fast recovery and loss (a
/// retransmission timeout).
const CA_RECOVERY: u8 = 3;
const CA_LOSS: u8 = 4;
/// A new request is made when it moved by this share of the one in force.
const HYSTERESIS: f64 = 1.0 / 16.0;
/// Once the path shows its rate, the flow is paced (`SO_MAX_PACING_RATE`,
/// which also turns on the kernel's own pacing) this much above the best
/// delivery rate of the last [`BW_WINDOW`], so that what the writer adds
/// after a wake-up leaves at about the path's rate, not as a line-rate
/// burst into the bottleneck queue. A flow that reaches the ceiling
/// raises the best rate, and so the ceiling. Measured on `lfn` (200 Mbit/s
/// x 100 ms, queue 1 x BDP), curl fetching 256 MiB: unpaced, 153.6 Mbit/s
/// and 812 segments retransmitted; paced, 164.2 Mbit/s and none.
const PACE_GAIN: f64 = 1.0 / 16.0;
/// A round in which the flow reached the ceiling (or the buffer) with no
/// queue and no loss doubles the ceiling's margin, up to this: a path that
/// got faster is climbed to as a start does, paced (54 to 101 Mbit/s in
/// five rounds, not 2.6 s at 1/16 a round on the changing path), and a
/// queue or a loss puts the margin back to [`PACE_GAIN`]. Capped at 1/2
/// so that a round's overshoot stays within half a BDP of queue.
const MAX_PACE_GAIN: f64 = 1.0 / 2.0;
/// Pacing starts once the best rate grew by less than this over a round
/// (in slow start it doubles per round).
const PLATEAU_GROWTH: f64 = 1.0 / 8.0;
/// A flow delivering this share of the pacing ceiling is held by it.
/// Above `1 / (1 + PACE_GAIN)`: a flow that delivers the best rate is not
/// held by a ceiling 1/16 above it, and may be held by its buffer. (At
/// 0.9, measured, a flow paced after a loss just above what its congestion
/// window gave was never read as held by its buffer, and stayed at
/// 70 Mbit/s of 200 for 20 s.)
const PACED_SHARE: f64 = 0.97;
/// The ceiling is set again when it would move up by this share, or down
/// by four times it.
const PACE_STEP: f64 = 1.0 / 32.0;
/// Samples per min-RTT, and the bounds of the interval.
const SAMPLES_PER_RTT: f64 = 4.0;
const MIN_INTERVAL: Duration = Duration::from_millis(10);
const MAX_INTERVAL: Duration = Duration::from_millis(250);
const DEFAULT_INTERVAL: Duration = Duration::from_millis(20);

/// The queue an RTT shows, bytes: its time above min-RTT at the rate
/// that drains it, and never more than is in flight beyond rate x
/// min-RTT. The delivery rate lags a path that got slower by an RTT
/// while the queue fills: from 200 to 50 Mbit/s, the RTT at 400 ms above
/// min-RTT times the old rate read 8.9 MiB of queue where the path holds
/// 2.5 MB, and the overflow that followed passed for the path's loss
/// (measured on the changing path).
fn queued(rtt: Duration, min_rtt: Duration, rate: f64, inflight: f64) -> f64 {
    let pipe = rate * min_rtt.as_secs_f64();
    super::queue_bytes(rtt, min_rtt, rate).min((inflight - pipe).max(0.0))
}

/// What one round (a min-RTT) of samples showed.
#[derive(Debug, Clone, Copy)]
struct Round {
    began: Duration,
    samples: u32,
    limited: u32,
    /// Samples held by the pacing ceiling.
    paced: u32,
    /// Samples whose ceiling was below the congestion window (see
    /// [`Alone::below_cwnd`]).
    below_cwnd: u32,
    /// The delivery rate, bytes per second, summed over its samples.
    rate: f64,
    /// Whether a segment was retransmitted in it.
    lost: bool,
    /// The bytes in flight, summed over its samples.
    inflight: f64,
    /// The least and the most smoothed RTT seen in it.
    least_rtt: Option<Duration>,
    most_rtt: Option<Duration>,
    /// The least and the most queue seen in it, bytes (see
    /// [`queued`]).
    least_queue: Option<f64>,
    most_queue: f64,
}

impl Round {
    fn new(began: Duration) -> Self {
        Round {
            began,
            samples: 0,
            limited: 0,
            paced: 0,
            below_cwnd: 0,
            rate: 0.0,
            lost: false,
            inflight: 0.0,
            least_rtt: None,
            most_rtt: None,
            least_queue: None,
            most_queue: 0.0,
        }
    }
}

/// A probe of the bound: `gain` before it, the mean delivery rate of the
/// round before it, its step, and the rounds since.
#[derive(Debug, Clone, Copy)]
struct Probe {
    gain: f64,
    rate: f64,
    step: f64,
    rounds: u32,
}

/// What a round did to the probes (see [`PROBE_STEP`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ProbeRound {
    /// Nothing that moves the request.
    Quiet,
    /// A probe began: `gain` grows by its step.
    Began,
    /// A probe that left the rate where it was was undone.
    Undone,
}

/// Rounds in a row in which a queue stood.
#[derive(Debug, Clone, Copy)]
struct Stood {
    rounds: u32,
    /// The least RTT of the first round, when it began, and the bytes in
    /// flight in it, on average.
    least: Duration,
    since: Duration,
    inflight: f64,
}

/// `busy_time`, `sndbuf_limited`, `rwnd_limited` (microseconds) and bytes retransmitted
/// at one sample.
#[derive(Debug, Clone, Copy)]
struct Counters {
    busy_us: u64,
    sndbuf_us: u64,
    rwnd_us: u64,
    /// Bytes retransmitted so far, and sent (`tcpi_bytes_sent`, if the
    /// kernel has it).
    retrans: u64,
    sent: Option<u64>,
}

/// A loss episode (see [`EPISODE_RTTS`]).
#[derive(Debug, Clone, Copy)]
struct Episode {
    /// When a segment was last retransmitted.
    last: Duration,
    /// Whether it is read as the path's loss: it began with no queue, and
    /// has not retransmitted more than [`OVERFLOW_LOST`] of what it sent.
    paths: bool,
    /// Whether it began the ride-out (none was under way).
    rode_out: bool,
    /// When it began, bytes in flight then, and the counters of bytes
    /// retransmitted and sent (`tcpi_bytes_sent`, if the kernel has it)
    /// before it.
    began: Duration,
    flight: f64,
    retrans_before: u64,
    sent_before: Option<u64>,
}

/// The sender alone.
#[derive(Debug, Clone)]
pub struct Alone {
    ctx: Context,
    /// The allowance `A`, payload bytes.
    allowance: f64,
    /// Payload per byte of read-back.
    ratio: f64,
    /// The `SO_SNDBUF` request in force.
    request: Bytes,
    /// Whether the path has shown its rate (a queue or a loss).
    bounded: bool,
    /// The bound's multiple of rate x min-RTT: up while the buffer holds
    /// the flow back and the queue empties, down while a queue stands.
    gain: f64,
    /// The pacing ceiling in force, bytes per second.
    pace: Option<f64>,
    /// Whether the kernel's own pacing is on: once any pacing rate was set.
    kernel_pacing: bool,
    /// The probe under way, the next one's step, and the rounds to wait
    /// before it (see [`PROBE_STEP`]).
    probe: Option<Probe>,
    probe_step: f64,
    probe_wait: u32,
    /// Rounds in a row the flow reached the ceiling with no queue: each
    /// doubles the ceiling's margin.
    climb: u32,
    /// The best rate at the end of the previous round, and whether it
    /// stopped growing (the flow found the path's rate: pacing starts).
    round_bw: Option<f64>,
    plateau: bool,
    /// Whether the request may go beyond `tcp_wmem[2]`.
    beyond: bool,
    /// When the request last went down: what was queued before may
    /// exceed the new buffer for a while, and shows no ratio.
    shrunk_at: Option<Duration>,
    btl_bw: WindowedMax,
    /// The congestion window, as the buffer follows it.
    cwnd_seen: CwndFollower,
    min_rtt: Option<Duration>,
    /// The kernel's `min_rtt` when min-RTT last started again: it keeps
    /// its least for minutes, so readings up to it are stale.
    stale_min_rtt: Option<Duration>,
    /// Rounds in a row a queue stood.
    stood: Option<Stood>,
    /// When a standing queue last cut `gain`.
    cut_at: Option<Duration>,
    /// The best rate `gain` was last applied to: when the best rate's
    /// window lets a higher rate go, `gain` takes the difference.
    gain_bw: Option<f64>,
    /// When a segment was last retransmitted with no queue.
    path_loss: Option<Duration>,
    /// The loss episode under way.
    episode: Option<Episode>,
    /// Whether the kernel was recovering at the last sample.
    recovering: bool,
    /// The most smoothed RTT of the previous round, and its most queue.
    last_round_most: Option<Duration>,
    last_round_queue: f64,
    /// The deepest queue that stood a whole round, bytes: the bottleneck's
    /// queue holds at least that much; and the most RTT that stood one.
    deepest: f64,
    deepest_rtt: Duration,
    counters: Option<Counters>,
    last_sample: Option<Duration>,
    round: Round,
}

impl Alone {
    /// The sender `ctx` describes.
    pub fn new(ctx: Context) -> Self {
        let mut alone = Alone {
            ctx,
            allowance: 2.0 * MIN_ALLOWANCE.get() as f64,
            ratio: DEFAULT_RATIO,
            request: Bytes(0),
            bounded: false,
            gain: 1.0,
            pace: None,
            kernel_pacing: false,
            probe: None,
            probe_step: PROBE_STEP,
            probe_wait: 0,
            climb: 0,
            round_bw: None,
            plateau: false,
            beyond: false,
            shrunk_at: None,
            btl_bw: WindowedMax::new(BW_WINDOW),
            cwnd_seen: CwndFollower::new(),
            min_rtt: None,
            stale_min_rtt: None,
            stood: None,
            cut_at: None,
            gain_bw: None,
            path_loss: None,
            episode: None,
            recovering: false,
            last_round_most: None,
            last_round_queue: 0.0,
            deepest: 0.0,
            deepest_rtt: Duration::ZERO,
            counters: None,
            last_sample: None,
            round: Round::new(Duration::ZERO),
        };
        alone.request = alone.request_for(alone.allowance);
        alone
    }

    /// The `SO_SNDBUF` request that holds [`WAKE`] x `allowance` of
    /// payload, within the limits.
    fn request_for(&self, allowance: f64) -> Bytes {
        let l = self.ctx.limits;
        let cap = if self.beyond {
            l.wmem_max
        } else {
            Bytes(l.tcp_wmem_max.get() / LINUX_BUFFER_DOUBLING).min(l.wmem_max)
        };
        let allowance = allowance.max(MIN_ALLOWANCE.get() as f64);
        bytes_capped(self.plain_request(allowance), cap)
    }

    fn plain_request(&self, allowance: f64) -> f64 {
        allowance * WAKE / (LINUX_BUFFER_DOUBLING as f64 * self.ratio)
    }

    fn state_name(&self) -> &'static str {
        if self.bounded { "alone" } else { "alone-start" }
    }

    fn interval(&self) -> Duration {
        self.min_rtt.map_or(DEFAULT_INTERVAL, |rtt| {
            scaled(rtt, 1.0 / SAMPLES_PER_RTT).clamp(MIN_INTERVAL, MAX_INTERVAL)
        })
    }

    /// Learns the payload per byte of buffer from what is queued now.
    fn learn_ratio(&mut self, info: &TcpInfoSample, readback: u64) -> Option<String> {
        if readback == 0 {
            return None;
        }
        let queued = info
            .inflight_bytes()
            .saturating_add(u64::from(info.notsent_bytes.unwrap_or(0)));
        let seen = (queued as f64 / readback as f64).min(MAX_RATIO);
        if seen <= self.ratio || seen < MIN_RATIO {
            return None;
        }
        self.ratio = seen;
        Some(format!(
            "{} queued in a send buffer of {}: {seen:.3} payload per byte",
            show_bytes(Bytes(queued)),
            show_bytes(Bytes(readback))
        ))
    }

    fn on_sample(&mut self, sample: &Sample) -> Decision {
        if self.last_sample.is_some_and(|last| sample.at < last) {
            return Decision::note(
                self.state_name(),
                "sample ignored: it is older than the last",
            );
        }
        self.last_sample = Some(sample.at);
        let Some(info) = sample.tcp_info.as_ref() else {
            return Decision::none();
        };
        let at = sample.at;
        let kernel_min = info
            .min_rtt_us
            .and_then(micros)
            .filter(|&m| self.stale_min_rtt.is_none_or(|stale| m > stale));
        let before = self.min_rtt;
        if let Some(m) = kernel_min.or(micros(info.rtt_us)) {
            self.min_rtt = Some(self.min_rtt.map_or(m, |old| old.min(m)));
        }
        let mut notes = Vec::new();
        if let Some((old, new)) = before.zip(self.min_rtt)
            && self.plateau
            && new.as_secs_f64() < SHORTER * old.as_secs_f64()
        {
            self.start_again();
            notes.push(format!(
                "the RTT fell to {} from a min-RTT of {}: a new path, the sender starts again \
                 from its congestion window, with no pacing ceiling",
                show_ms(new),
                show_ms(old)
            ));
        }
        if let Some(bps) = info.delivery_rate_bps.filter(|&r| r > 0) {
            self.btl_bw.update(at, bps as f64 / 8.0);
        }
        self.btl_bw.expire(at);
        // When the best rate's window lets a higher rate go while a queue
        // stands (the path got slower), the bound would step down with
        // it, before the queue shows what the path carries: `gain` takes
        // the difference, and the standing queue's cuts bring the bound
        // down from there. (Stepped down with the rate, 194 to 50 Mbit/s,
        // against a min-RTT of 100 ms where the path's had become 160, the
        // bound fell to 224 KiB and the flow to 9-12 Mbit/s for 0.7 s,
        // measured on the changing path.) With no queue the rate fell
        // because the sender slowed (a loss halved its window), and the
        // bound follows it: kept, the slow start's best rate over the one
        // after its loss left `gain` at 2 and more on `shallow`, and the
        // send buffer followed cubic's window past what the path holds.
        let best = self.btl_bw.get();
        if let Some((now, before)) = best.zip(self.gain_bw)
            && self.plateau
            && self.stood.is_some()
            && now > 0.0
            && now < before
        {
            self.gain = (self.gain * before / now).min(MAX_GAIN);
        }
        self.gain_bw = best;
        let settled = self
            .shrunk_at
            .zip(self.min_rtt)
            .is_none_or(|(shrunk, rtt)| at.saturating_sub(shrunk) >= rtt.saturating_mul(2));
        if let Some(learnt) = sample
            .buffers
            .filter(|_| settled)
            .and_then(|b| self.learn_ratio(info, b.sndbuf_bytes))
        {
            notes.push(learnt);
        }
        let counters = Counters {
            busy_us: info.busy_time_us.unwrap_or(0),
            sndbuf_us: info.sndbuf_limited_us.unwrap_or(0),
            rwnd_us: info.rwnd_limited_us.unwrap_or(0),
            retrans: info.bytes_retrans.unwrap_or(
                u64::from(info.total_retrans_segs) * u64::from(info.snd_mss_bytes.max(1)),
            ),
            sent: info.bytes_sent,
        };
        let before = self.counters.replace(counters);
        let (limited, rwnd, loss) = before.map_or((false, false, false), |b| {
            let busy = counters.busy_us.saturating_sub(b.busy_us);
            let share = |now: u64, then: u64| {
                busy > 0 && now.saturating_sub(then) as f64 >= LIMITED_SHARE * busy as f64
            };
            (
                share(counters.sndbuf_us, b.sndbuf_us),
                share(counters.rwnd_us, b.rwnd_us),
                counters.retrans > b.retrans,
            )
        });
        let (Some(min_rtt), Some(rtt)) = (self.min_rtt, micros(info.rtt_us)) else {
            return self.apply(at, notes, false);
        };
        // On a short path each share is at least `part` x the hosts' delay
        // ([`super::host_room`]), as the bound leaves that much in flight.
        let above = |share: f64, part: f64, rtt: Duration| {
            rtt.as_secs_f64() > super::rtt_above(min_rtt.as_secs_f64(), share, part)
        };
        let queue = above(INFLATION, INFLATED_HOST, rtt);
        if (queue || loss) && !self.bounded {
            self.bounded = true;
            notes.push(format!(
                "the path shows its rate ({}): in flight bounded by {START_GROWTH} x rate x \
                 min-RTT while the rate still grows, then from the flight down",
                if loss { "a loss" } else { "the RTT inflated" }
            ));
        }
        // No queue in this sample nor in the round before: the smoothed
        // RTT at a shallow queue's overflow reads +5% a sample after
        // +14% (measured on `shallow`). And not on a path whose RTT
        // changed, where min-RTT started again from a loaded RTT.
        let recent_most = [self.round.most_rtt, self.last_round_most]
            .into_iter()
            .flatten()
            .fold(rtt, Duration::max);
        let rate = info.delivery_rate_bps.map_or(0.0, |bps| bps as f64 / 8.0);
        let inflight = info.inflight_bytes();
        let queue_now = queued(rtt, min_rtt, rate, inflight as f64);
        let recent_queue = queue_now
            .max(self.round.most_queue)
            .max(self.last_round_queue);
        // A loss episode that begins with the queue under half the deepest
        // that stood a whole round did not overflow a drop-tail queue: the
        // path's, whatever the RTT reads (the receiver's rule, with the
        // queue of a round). curl under bbr with 0.01% random loss on
        // 200 Mbit/s x 100 ms with a queue of one BDP lost segments with
        // the RTT at +15% to +36% after its startup had queued +98% for a
        // round, none of them read as the path's (0.967 x the kernel's
        // goodput, measured). The RTT must also be below the most that
        // stood a round: the bytes are read with a delivery rate an RTT
        // old, and on a path that just got slower (200 to 50 Mbit/s) the
        // queue's overflow read 464 KiB where a round had read 1.5 MiB, as
        // the RTT reached 452 ms for the first time.
        let bdp = self.btl_bw.get().unwrap_or(0.0) * min_rtt.as_secs_f64();
        let below_deepest = self.deepest > 0.0
            && self.deepest >= super::DEEP_QUEUE * bdp
            && recent_queue < super::OVERFLOW_SHARE * self.deepest
            && recent_most < self.deepest_rtt;
        let recovering = matches!(info.ca_state, CA_RECOVERY | CA_LOSS);
        let still_recovering = recovering && self.recovering;
        self.recovering = recovering;
        let ongoing = self.episode.filter(|e| {
            still_recovering || at.saturating_sub(e.last) < min_rtt.saturating_mul(EPISODE_RTTS)
        });
        let mut paths_loss = loss
            && ongoing.map_or_else(
                || {
                    (!above(EMPTIED, EMPTIED_HOST, recent_most) && self.stale_min_rtt.is_none())
                        || below_deepest
                },
                |e| e.paths,
            );
        if loss {
            self.episode = Some(match ongoing {
                Some(e) => Episode {
                    last: at,
                    paths: paths_loss,
                    ..e
                },
                None => Episode {
                    last: at,
                    paths: paths_loss,
                    rode_out: paths_loss && self.path_loss.is_none(),
                    began: at,
                    flight: inflight as f64,
                    retrans_before: before.map_or(0, |b| b.retrans),
                    sent_before: before.and_then(|b| b.sent),
                },
            });
        }
        // An episode that retransmits more than a share of what it sent
        // (in flight when it began, and sent since, counted by the kernel
        // or else at the delivery rate) overflowed a queue, one too
        // shallow for the RTT to show it: random loss takes a segment here
        // and there.
        if let Some(e) = self.episode.as_mut().filter(|e| e.paths) {
            let lost = counters.retrans.saturating_sub(e.retrans_before);
            let since = match (e.sent_before, counters.sent) {
                (Some(then), Some(now)) => now.saturating_sub(then) as f64,
                _ => rate * at.saturating_sub(e.began).as_secs_f64(),
            };
            if lost as f64 > OVERFLOW_LOST * (e.flight + since) {
                e.paths = false;
                paths_loss = false;
                if e.rode_out {
                    self.path_loss = None;
                    notes.push(format!(
                        "{} retransmitted since the loss began ({} in flight then), more than \
                         1/{:.0} of what was sent: a queue's overflow, not the path's loss; no \
                         ride-out",
                        show_size(lost as f64),
                        show_size(e.flight),
                        1.0 / OVERFLOW_LOST
                    ));
                }
            }
        }
        if paths_loss {
            if self.path_loss.is_none() {
                let queue = if below_deepest {
                    format!(
                        "with {} queued, where a round queued {}",
                        show_size(recent_queue),
                        show_size(self.deepest)
                    )
                } else {
                    "with no queue".to_string()
                };
                notes.push(format!(
                    "a loss {queue}: the path's; in flight up to {RIDE_OUT_BDPS} x rate x \
                     min-RTT, to ride out a recovery"
                ));
            }
            self.path_loss = Some(at);
        }
        if self
            .path_loss
            .is_some_and(|last| at.saturating_sub(last) >= min_rtt.saturating_mul(QUIET_ROUNDS))
        {
            self.path_loss = None;
            notes.push(format!("no loss for {QUIET_ROUNDS} rounds"));
        }
        let cwnd = info.snd_cwnd_bytes() as f64;
        let mss = u64::from(info.snd_mss_bytes.max(1));
        let followed = self.cwnd_seen.see(at, cwnd, mss);
        let unsent = u64::from(info.notsent_bytes.unwrap_or(0)) as f64;
        let payload = self.request.get() as f64 * LINUX_BUFFER_DOUBLING as f64 * self.ratio;
        let room = cwnd >= inflight as f64 * (1.0 + CWND_ROOM) + (ROOM_SEGMENTS * mss) as f64;
        // A flow the pacing ceiling holds is not held by the buffer.
        let paced = self
            .pace
            .is_some_and(|ceiling| rate >= PACED_SHARE * ceiling);
        if (queue || loss) && self.climb > 0 {
            self.climb = 0;
            notes.push(format!(
                "{}: the ceiling back to 1/{:.0} above the best rate",
                if loss { "a loss" } else { "a queue" },
                1.0 / PACE_GAIN
            ));
        }
        let below_cwnd = self.below_cwnd(
            cwnd,
            min_rtt,
            unsent,
            super::queue_bytes(rtt, min_rtt, rate),
            mss,
        );
        let round = &mut self.round;
        round.samples += 1;
        round.lost |= loss;
        round.inflight += inflight as f64;
        round.rate += rate;
        round.below_cwnd += u32::from(below_cwnd);
        // Held by the ceiling: the pacing holds it (Linux counts a
        // segment's headers against the ceiling, so the delivery rate of a
        // paced flow reads about 0.96 of it), or room in the congestion
        // window and data waiting that the buffer and the receiver did not
        // hold back.
        if paced
            || (self.pace.is_some() && room && !limited && !rwnd && unsent > UNSENT_SHARE * payload)
        {
            round.paced += 1;
        }
        if limited || (room && !paced && unsent <= UNSENT_SHARE * payload) {
            round.limited += 1;
        }
        round.least_rtt = Some(round.least_rtt.map_or(rtt, |least| least.min(rtt)));
        round.most_rtt = Some(round.most_rtt.map_or(rtt, |most| most.max(rtt)));
        round.least_queue = Some(round.least_queue.map_or(queue_now, |q| q.min(queue_now)));
        round.most_queue = round.most_queue.max(queue_now);
        // Once per round: grow when the buffer held the flow back and the
        // queue emptied (the bottleneck idled); come down when a queue
        // stood all round.
        let mut grow = false;
        let mut probed = ProbeRound::Quiet;
        if at.saturating_sub(round.began) >= min_rtt {
            let began = round.began;
            let least = round.least_rtt.unwrap_or(rtt);
            let flight = round.inflight / f64::from(round.samples.max(1));
            let mean_rate = round.rate / f64::from(round.samples.max(1));
            let held = f64::from(round.limited) >= LIMITED_SAMPLES * f64::from(round.samples);
            grow = held && !above(EMPTIED, EMPTIED_HOST, least);
            let held_by_ceiling = round.paced > 0
                && f64::from(round.limited + round.paced)
                    >= LIMITED_SAMPLES * f64::from(round.samples);
            // Or held below its congestion window, which then grows no
            // more (see [`Alone::below_cwnd`]).
            let stalled = f64::from(round.below_cwnd) >= LIMITED_SAMPLES * f64::from(round.samples);
            let most = round.most_rtt.unwrap_or(rtt);
            // No queue means none all round: a 75 kB queue on a 100 Mbit/s
            // x 40 ms path stays below +1/8, and a flow that filled it at
            // the path's rate climbed to 1/4 above it, its buffer with it
            // (`bench/paths/short.toml`, measured).
            if self.pace.is_some()
                && (held_by_ceiling || stalled)
                && !round.lost
                && !above(EMPTIED, EMPTIED_HOST, most)
                && self.pace_gain() < MAX_PACE_GAIN
            {
                self.climb += 1;
                let what = if held_by_ceiling {
                    "the flow reached the ceiling"
                } else {
                    "the ceiling holds the flow below its congestion window"
                };
                notes.push(format!(
                    "{what} with no queue: 1/{:.0} above the best rate",
                    1.0 / self.pace_gain()
                ));
            }
            // The path's rate is found once the best rate grows by less
            // than 1/8 in a round. The bound comes down from what is in
            // flight then, by the standing queue's 7/8 a round: cut at
            // once from 1.55 x to 0.88 x rate x min-RTT, a 200 Mbit/s x
            // 100 ms flow drained its queue and fell to 119 Mbit/s for
            // 0.3 s (measured).
            let bw = self.btl_bw.get();
            if self.bounded && !self.plateau {
                self.plateau = bw
                    .zip(self.round_bw)
                    .is_some_and(|(now, before)| now < before * (1.0 + PLATEAU_GROWTH));
                if self.plateau {
                    let bdp = bw.unwrap_or(0.0) * min_rtt.as_secs_f64();
                    if bdp > 0.0 {
                        self.gain = self.gain.max((inflight as f64 / bdp).min(START_GROWTH));
                    }
                    notes.push(format!(
                        "the best rate grew by less than 1/{:.0} in a round: the path's rate \
                         is found, in flight bounded by x{:.2} of it x min-RTT",
                        1.0 / PLATEAU_GROWTH,
                        self.gain
                    ));
                }
            }
            // A probe asks whether the path takes more; a flow far below
            // the path's best rate, held by its buffer with the queue
            // empty, is not at the path's rate, and grows as it did
            // before its rate was found.
            let at_rate = mean_rate >= AT_RATE * self.btl_bw.get().unwrap_or(0.0);
            if self.plateau && !at_rate {
                // Nor is a probing sequence: the next probe, once the flow
                // is back at the path's rate, starts from the least step.
                self.probe = None;
                self.probe_step = PROBE_STEP;
            } else if self.plateau {
                probed = self.probe(grow, mean_rate, &mut notes);
                grow = probed == ProbeRound::Began;
            }
            let stood = self.bounded && !grow && above(STOOD, STOOD_HOST, least);
            self.stood = match self.stood {
                Some(s)
                    if stood
                        && least.as_secs_f64() >= RTT_STAYED * s.least.as_secs_f64()
                        && least.as_secs_f64() * RTT_STAYED <= s.least.as_secs_f64() =>
                {
                    Some(Stood {
                        rounds: (s.rounds + 1).min(STOOD_ROUNDS),
                        ..s
                    })
                }
                _ if stood => Some(Stood {
                    rounds: 1,
                    least,
                    since: began,
                    inflight: flight,
                }),
                _ => None,
            };
            // Rounds are min-RTTs; a cut of the buffer shows in the RTT one
            // (loaded) RTT later. So the RTT must also have stayed for two
            // of its own rounds: a queue still filling after a drop of the
            // path's rate (200 to 50 Mbit/s, the RTT 162, 266, 338, 432 ms
            // in four rounds of 100 ms) is not a longer path.
            let stayed = self.stood.is_some_and(|s| {
                s.rounds == STOOD_ROUNDS
                    && at.saturating_sub(s.since) >= least.saturating_mul(2)
                    && flight <= CAME_DOWN * s.inflight
            });
            if stayed {
                self.stood = None;
                self.stale_min_rtt = info.min_rtt_us.and_then(micros);
                self.min_rtt = Some(least);
                let bw = rate.max(1.0);
                self.btl_bw.reset(at, bw);
                self.gain_bw = Some(bw);
                // The rounds that shrank the gain measured their queue
                // against the old min-RTT: on the new path the bound starts
                // again from the allowance, and at least rate x min-RTT.
                // (Kept, the buffer held a 50 Mbit/s x 160 ms path at
                // 3.6 Mbit/s once its queue had drained, measured.)
                let bdp = bw * least.as_secs_f64();
                self.gain = (self.allowance / bdp).clamp(1.0, MAX_GAIN);
                notes.push(format!(
                    "the RTT stayed at {} for {STOOD_ROUNDS} rounds while the buffer came down: \
                     the path's RTT rose, min-RTT starts again",
                    show_ms(least)
                ));
            } else if stood
                && self.gain > MIN_GAIN
                && self.path_loss.is_none()
                && self
                    .cut_at
                    .is_none_or(|cut| at.saturating_sub(cut) >= least)
            {
                // Not while a loss is ridden out: the ride-out bound is
                // what holds the buffer up then, and the queue is the
                // sender's own (reno's standing queue on `reno` took the
                // gain x0.875 a round to x0.076 under the ride-out, and
                // when that ended, 128 rounds on, the buffer fell to
                // 67 KiB: globus-url-copy at 11 Mbit/s for 2 s, measured).
                // A cut shows in the RTT one loaded RTT later: cut once
                // per RTT of the queue, not per min-RTT. (Cut per min-RTT,
                // the 400 ms queue a drop from 200 to 50 Mbit/s left took
                // the allowance x0.875 a round for 1.5 s, from 2.24 MiB to
                // 462 KiB, below the new path's 1 MB, before it drained:
                // 15-36 Mbit/s for 0.9 s, measured on the changing path.)
                self.cut_at = Some(at);
                self.gain = (self.gain * SHRINK).max(MIN_GAIN);
                notes.push(format!(
                    "a queue stood all round (least RTT {}): x{SHRINK} beyond rate x min-RTT",
                    show_ms(least)
                ));
            }
            self.round_bw = bw;
            self.last_round_most = self.round.most_rtt;
            self.last_round_queue = self.round.most_queue;
            self.deepest = self.deepest.max(self.round.least_queue.unwrap_or(0.0));
            self.deepest_rtt = self.deepest_rtt.max(least);
            self.round = Round::new(at);
        }
        let bdp = self.btl_bw.get().unwrap_or(0.0) * min_rtt.as_secs_f64();
        let at_cap = self.request >= self.request_for(f64::MAX);
        if grow && at_cap && !self.beyond {
            self.beyond = true;
            notes.push(format!(
                "the send buffer limits at tcp_wmem[2] ({}) with no queue: up to wmem_max",
                show_bytes(self.ctx.limits.tcp_wmem_max)
            ));
        }
        let growth = self.probe.map_or(GROWTH, |p| 1.0 + p.step);
        let wanted = if self.bounded {
            if grow {
                self.gain = (self.gain * growth).min(MAX_GAIN);
            }
            // Without a delivery rate yet, the congestion window alone.
            // While the best rate still grows, what slow start sends next;
            // while climbing, room for what the ceiling lets out in a
            // min-RTT.
            let gain = if !self.plateau {
                self.gain.max(START_GROWTH)
            } else if self.climb > 0 {
                self.gain.max(1.0 + self.pace_gain())
            } else {
                self.gain
            };
            // What the hosts' own delays keep in flight at the path's rate
            // ([`super::host_room`]).
            let host = self.btl_bw.get().unwrap_or(0.0)
                * super::host_room(min_rtt.as_secs_f64(), 1.0, super::HEADROOM, 0.0);
            let bound = if bdp > 0.0 {
                (bdp * gain + host).max(MIN_ALLOWANCE.get() as f64)
            } else {
                f64::INFINITY
            };
            // Once the path's rate is found, following the congestion
            // window goes no further than the path holds: its BDP and the
            // deepest queue that stood a round (at least a probe's step).
            // More in flight only overflows the queue: on `short` (a
            // 72 kB queue behind 0.5 MB) cubic's window grew to the BDP
            // and the queue and 1/8 beyond it, 617 KiB allowed, and lost
            // segments there (measured). Growth when the queue emptied
            // (the path took more) is not held back by it.
            let holds = if self.plateau && bdp > 0.0 {
                bdp + self.deepest.max(PROBE_STEP * bdp) + host
            } else {
                f64::INFINITY
            };
            let follow = (followed * (1.0 + CWND_MARGIN)).min(holds.max(followed));
            if grow {
                notes.push(format!(
                    "the send buffer held the flow back and the queue emptied: x{growth:.3} beyond rate {} x min-RTT {}",
                    show_rate(self.btl_bw.get().unwrap_or(0.0)),
                    show_ms(min_rtt)
                ));
            }
            // A buffer that holds the flow back keeps the congestion
            // window from growing (Linux grows it only while it limits), so
            // following the window alone would hold the flow there for good.
            let held = if grow { self.allowance * growth } else { 0.0 };
            let ride_out = if self.path_loss.is_some() {
                RIDE_OUT_BDPS * bdp
            } else {
                0.0
            };
            // While the kernel recovers, the buffer holds everything from
            // the first hole on, acknowledged selectively or not: cut to
            // the congestion window there, it left nothing to send, and
            // the recovery went on without new segments to show what
            // else was lost (curl on `short`: nothing unsent for 0.2 s,
            // 151 segments retransmitted where the kernel's run had 60,
            // and the congestion window after it 116 segments against
            // 150). It comes down once the recovery is over.
            let keep = if recovering { self.allowance } else { 0.0 };
            follow.max(held).min(bound).max(ride_out).max(keep)
        } else {
            let mut wanted = (START_CWNDS * cwnd).max(self.allowance);
            if grow {
                wanted = wanted.max(self.allowance * START_GROWTH);
                notes.push(format!(
                    "the send buffer held the flow back and the queue emptied: x{START_GROWTH}"
                ));
            }
            wanted
        };
        // No more payload than the largest buffer holds.
        let most = self
            .ctx
            .limits
            .wmem_max
            .get()
            .saturating_mul(LINUX_BUFFER_DOUBLING) as f64;
        self.allowance = wanted.min(most).max(MIN_ALLOWANCE.get() as f64);
        let mut decision = self.apply(at, notes, probed != ProbeRound::Quiet);
        decision.and(self.pace());
        decision
    }

    /// Once per round after the path's rate is found: judges the probe under
    /// way by the round's mean delivery `rate`, and whether a round that
    /// would `grow` begins one (see [`PROBE_STEP`]).
    fn probe(&mut self, grow: bool, rate: f64, notes: &mut Vec<String>) -> ProbeRound {
        self.probe_wait = self.probe_wait.saturating_sub(1);
        if let Some(mut p) = self.probe.take() {
            p.rounds += 1;
            if p.rounds < PROBE_ROUNDS {
                self.probe = Some(p);
                return ProbeRound::Quiet;
            }
            if rate >= p.rate * (1.0 + p.step / 2.0) {
                self.probe_step = (2.0 * p.step).min(GROWTH - 1.0);
            } else {
                self.probe_step = PROBE_STEP;
                self.probe_wait = PROBE_WAIT;
                let before = self.gain;
                self.gain = self.gain.min(p.gain.min(1.0));
                notes.push(format!(
                    "a probe left the rate at {} ({} before): the path is full, x{before:.3} \
                     back to x{:.3} beyond rate x min-RTT",
                    show_rate(rate),
                    show_rate(p.rate),
                    self.gain
                ));
                return ProbeRound::Undone;
            }
        }
        if !grow || self.probe_wait > 0 {
            return ProbeRound::Quiet;
        }
        self.probe = Some(Probe {
            gain: self.gain,
            rate,
            step: self.probe_step,
            rounds: 0,
        });
        ProbeRound::Began
    }

    /// Forgets what the path showed but its min-RTT and rate: as at the
    /// start, `A` follows the congestion window until a queue or a loss
    /// shows the path's rate again, and no pacing ceiling holds the flow.
    fn start_again(&mut self) {
        self.bounded = false;
        self.plateau = false;
        self.gain = 1.0;
        self.climb = 0;
        self.probe = None;
        self.probe_step = PROBE_STEP;
        self.probe_wait = 0;
        self.round_bw = None;
        self.stood = None;
        self.cut_at = None;
        self.path_loss = None;
        self.episode = None;
    }

    /// Whether the pacing ceiling lets out less per min-RTT than the
    /// congestion window `cwnd` (bytes) allows while more than a few
    /// segments wait unsent and the RTT shows fewer queued (`queue`,
    /// bytes, its time above min-RTT at the delivery rate): the
    /// ceiling, not the window, holds the flow, and Linux grows a
    /// congestion window only while the window is what holds it. Read
    /// from the delivery rate alone (0.97 of the ceiling), such a flow
    /// went unseen: 300 ms after a loss on a 300 ms path the ceiling was
    /// set 1/16 above the recovery's 37 Mbit/s, a hair under the window's
    /// 39.7, and the flow delivered 0.91 of the ceiling (the writer left
    /// the buffer empty at times) with 100 segments of the window unused:
    /// window and ceiling stayed there for the rest of the run, 34 Mbit/s
    /// where the kernel made 43 (curl on `bench/paths/far.toml`, measured,
    /// one run in three). A flow at the path's rate has a window as large
    /// as the path and its queue, and reads no queue (+1/16) with a few
    /// milliseconds of it: the ceiling raised there went into the queue,
    /// and the send buffer with it, to 0.51 x the kernel's on a 40 ms
    /// path with a 50-packet queue (curl on `bench/paths/short.toml`,
    /// measured). Nor is that queue bounded by what is in flight beyond
    /// rate x min-RTT, as [`queued`] bounds it: a flow whose writer left
    /// the buffer empty for a moment read none with 2 ms of it there.
    fn below_cwnd(&self, cwnd: f64, min_rtt: Duration, unsent: f64, queue: f64, mss: u64) -> bool {
        let few = (ROOM_SEGMENTS * mss) as f64;
        self.pace
            .is_some_and(|ceiling| ceiling * min_rtt.as_secs_f64() + few <= cwnd)
            && unsent > few
            && queue < few
    }

    /// The pacing ceiling's margin above the best delivery rate.
    fn pace_gain(&self) -> f64 {
        (PACE_GAIN * 2f64.powi(self.climb.min(16) as i32)).min(MAX_PACE_GAIN)
    }

    /// Sets the pacing ceiling [`Alone::pace_gain`] above the best delivery
    /// rate, once the path has shown it.
    fn pace(&mut self) -> Decision {
        // bbr paces at its own estimate of the path's rate, and probes
        // above it (x1.25 a round in eight): a ceiling 1/16 above the best
        // rate it delivered stops its probing, and any queue or loss took
        // the ceiling back there. Behind bbr with 0.01% random loss, a
        // ceiling set at 80 Mbit/s when a loss in its startup made the
        // rate look found took 4 s to climb to the path's 200 (138.3 Mbit/s
        // where the kernel made 173.7, measured).
        if self.ctx.congestion == Congestion::Bbr {
            return Decision::none();
        }
        let state = self.state_name();
        let uncapped = |rate: Bytes, why: &str| {
            Decision::act(
                state,
                vec![Action::SetMaxPacingRate(rate)],
                rate,
                why.to_owned(),
            )
        };
        // The first loss: an episode is forgotten only on a new path, by
        // when the plateau's ceiling has turned pacing on.
        if !self.kernel_pacing && self.episode.is_some() {
            self.kernel_pacing = true;
            return uncapped(
                KERNEL_PACING,
                "the kernel's own pacing on, at its rate for the congestion window",
            );
        }
        if !self.plateau && self.pace.is_some() {
            self.pace = None;
            return uncapped(NO_PACING_CEILING, "the pacing ceiling lifted");
        }
        let Some(best) = self.btl_bw.get().filter(|&b| self.plateau && b > 0.0) else {
            return Decision::none();
        };
        // Never below a slow modem's rate: a ceiling of nothing stops the flow.
        let floor = (MIN_PLAUSIBLE_PACE_BPS / 8) as f64;
        let gain = self.pace_gain();
        let ceiling = (best * (1.0 + gain)).max(floor);
        let moved = self.pace.is_none_or(|p| {
            ceiling > p * (1.0 + PACE_STEP) || ceiling < p * (1.0 - 4.0 * PACE_STEP)
        });
        if !moved {
            return Decision::none();
        }
        self.pace = Some(ceiling);
        self.kernel_pacing = true;
        let bytes = bytes_capped(ceiling, KERNEL_PACING);
        Decision::act(
            self.state_name(),
            vec![Action::SetMaxPacingRate(bytes)],
            bytes,
            format!(
                "paced at {}, 1/{:.0} above the best delivery rate",
                show_rate(ceiling),
                1.0 / gain
            ),
        )
    }

    /// Makes the request for the allowance, if it moved enough (or at all,
    /// when a probe began or was undone).
    fn apply(&mut self, at: Duration, notes: Vec<String>, probed: bool) -> Decision {
        let request = self.request_for(self.allowance);
        let (new, old) = (request.get() as f64, self.request.get() as f64);
        let moved = if probed {
            new != old
        } else if new > old {
            new > old * (1.0 + HYSTERESIS)
        } else {
            new < old * (1.0 - HYSTERESIS)
        };
        if !moved {
            return if notes.is_empty() {
                Decision::none()
            } else {
                Decision::note(self.state_name(), notes.join("; "))
            };
        }
        if new < old {
            self.shrunk_at = Some(at);
        }
        self.request = request;
        let mut reason = notes;
        reason.push(format!(
            "in flight up to {}: send buffer {}",
            show_bytes(Bytes(self.allowance as u64)),
            show_bytes(request)
        ));
        Decision::act(
            self.state_name(),
            vec![Action::SetSndBuf(request)],
            request,
            reason.join("; "),
        )
    }
}

impl Tuner for Alone {
    fn name(&self) -> &'static str {
        "auto"
    }

    fn state(&self) -> &'static str {
        self.state_name()
    }

    fn setup(&self) -> Setup {
        Setup {
            pre_handshake: Settings::default(),
            after_connect: Settings {
                sndbuf: Some(self.request),
                ..Settings::default()
            },
        }
    }

    fn inputs(&self) -> Inputs {
        Inputs::default()
    }

    fn on_event(&mut self, event: &Event) -> Decision {
        match event {
            Event::Sample(sample) => self.on_sample(sample),
            _ => Decision::none(),
        }
    }

    fn next_wakeup(&self) -> Option<Duration> {
        Some(
            self.last_sample
                .map_or(Duration::ZERO, |at| at.saturating_add(self.interval())),
        )
    }
}

#[cfg(test)]
mod tests;
