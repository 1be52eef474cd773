//! `auto`: rightsize's own tuner. It keeps the window near the path's
//! bandwidth-delay product, measured with `TCP_INFO` on both ends.
//!
//! One number is steered: the window `W` (payload bytes in flight). On a
//! receiver it becomes `TCP_WINDOW_CLAMP = W`, plus `SO_RCVBUF` sized so that
//! the memory alone also caps the window near `W` ([`memory`]:
//! Linux 6.18 replaces an application's clamp when it re-measures its
//! payload-to-memory ratio). A sender whose peer is rightsize leaves the
//! window to the receiver ([`follow`]); a sender whose peer is not sizes
//! its send buffer from its own `TCP_INFO` ([`alone`]); a receiver whose
//! sender is not ([`plain`]) ramps at its sender's pace, holds at a queue,
//! and leaves a loss-based sender room to grow until a queue shows the
//! path's capacity, with memory for more than its window. The receiver
//! reads the sender's `TCP_INFO` from the peer's reports ([`view`]): whether the
//! window stopped it (`rwnd_limited` over `busy_time`), its delivery rate,
//! RTT and retransmissions; without them, its own goodput, receive RTT and
//! out-of-order arrivals.
//!
//! States:
//! - `startup`: `W` starts at 64 KiB and ramps while the window is what
//!   stops the sender. With a packet-train capacity estimate `C'` (SOBAS's
//!   trick, the SOBAS paper) it climbs by 1/18 of `C' x min-RTT` per RTT and stops
//!   there; without one, by x1.5 per RTT until the rate stops following
//!   the window or the RTT inflates. The ramp is the receiver pacing slow
//!   start: a window-limited flow comes in bursts, each growing by what the
//!   window grew, and slow start's doubling bursts a whole window into the
//!   bottleneck queue, which overflows first there (the SOBAS paper's appendix; docs/sources.md).
//!   The price is about a second at 200 Mbit/s x 100 ms; the gain, no loss
//!   on a queue of a tenth of the BDP. A rightsize sender does better: the
//!   receiver asks it (the `pace` fact) to pace at 1/32 above `C'` (the
//!   median of the trains), the sender sets `SO_MAX_PACING_RATE` and says
//!   so in its reports, and the window then opens at once towards 3/4 of
//!   `C' x min-RTT`, but never past 2.5 times what the flow carried in
//!   its last min-RTT (nor, when the window holds the flow back, does the
//!   ramp), and not while a queue shows: paced, an opening arrives at
//!   about the path's rate, not as a burst; and the trains measure the
//!   path, not this flow's share of it (a server's clients that start
//!   together each carry a part). The ceiling is raised when the flow
//!   reaches it (trains that read low), by a gain that doubles while the
//!   flow fills it with no queue; a flow that carries 1/8 more than the
//!   trains said, with no queue, drops them and the pacing (they were
//!   measured in a slow moment of a path whose rate changes).
//! - `cruise`: holds `W = rate x min-RTT x (1 + headroom)`, headroom 1/16
//!   (and at least `rate x (min-RTT + 2.5 ms)`: on a path of a few
//!   milliseconds the hosts add that much to the RTT, [`HOST_DELAY`]; each
//!   share of min-RTT below is at least its part of that delay too).
//!   A window-limited flow with no queue at all (RTT within a quarter of
//!   the headroom) whose window all turned into rate means the path got
//!   faster: probe, +1/32 in the first RTT, doubling each RTT up to +1/8
//!   (+1/2 below the trains' capacity behind a paced sender),
//!   and stop when the RTT inflates or the rate stops following the
//!   window; beyond the trains' capacity, from +1/128 doubling up to
//!   +1/32, stopping at the first queue (over a quarter of the headroom).
//!   An inflated RTT (over 1/8; behind a rightsize sender, in its last two
//!   reports, half an RTT apart: a host's stall shows in one) means it got
//!   slower, or longer: `drain`
//!   (only while the window holds the sender back and not within four RTTs
//!   of a loss: a queue behind a sender that is not held back, such as a
//!   congestion window growing back after a loss, is not the window's).
//! - `drain`: from one RTT in, `W` follows down the rate the busy
//!   bottleneck delivers (read while the RTT is inflated and still
//!   rising, outside loss recovery) x min-RTT. If the RTT comes down
//!   (within up to four rounds of three RTTs) the queue was ours and the
//!   rate estimate restarts from that busy rate; if it stays where it was
//!   while the window shrank (and did not climb during the round), the
//!   path's RTT rose: the min-RTT restarts, and the window is the busy
//!   rate (never more than before) x the new RTT. Behind a rightsize
//!   sender that is read at once when the RTT, fallen 1/8 below its most
//!   in the drain but still inflated, stays level for an RTT while the
//!   sender delivers 1/8 below the busy rate (the bottleneck idles: the
//!   queue is gone). A path found slower by
//!   more than a quarter is remembered for 10 s: a flow that then fills
//!   its window with no queue, well below the rate before, ramps back
//!   x1.5 per RTT. In `cruise` or `drain`,
//!   a min-RTT that falls by 1/8 is a path that changed: back to
//!   `startup`, towards the trains' capacity x the new RTT.
//! - `step-aside`: three loss episodes within 256 RTTs that neither a
//!   queue nor the window explains mean a congested path (the SOBAS paper, section III-B: there a limited window
//!   only costs throughput); `W` goes to four of the flow's BDPs, stays
//!   above the flow (x1.5 per RTT while the flow fills it), and comes
//!   back once 128 RTTs pass without loss. A
//!   single loss with no queue at all, at the target (or behind a paced
//!   sender's ramp), is the path's: `W` steps aside at once to 2.5 of the
//!   flow's BDPs, enough for the sender to go on through a recovery, with
//!   memory 1/16 above it. The flow's BDP is its best rate (up to 2.5
//!   times it when stepping aside, never above `C'`) x min-RTT, raised as
//!   the rate grows.
//!
//! Losses, one event per episode (losses less than two RTTs apart): a
//! queue under half the deepest the path has shown, in bytes (once that
//! was a quarter of the flow's BDP or more), is no drop-tail queue's
//! overflow, whatever the RTT reads; at the target it is the path's: step
//! aside. Otherwise, with an inflated RTT the queue overflowed (`W` to
//! rate x min-RTT); while ramping with a queue behind the window, the
//! ramp's bursts were too big (below the estimate: the ramp slows by half)
//! or the bandwidth is found (beyond it); with `W` well above the
//! estimated BDP, an overshoot; at the target with a standing queue under
//! twice the headroom, the queue could not hold the headroom and its
//! bursts: the headroom is halved; anything else is not ours.
//!
//! Why no large buffer before the handshake: Linux picks the window scale
//! from `max(tcp_rmem[2], rmem_max)` when `SO_RCVBUF` is left alone, which
//! already allows any window `auto` may ask for (never beyond what
//! `rmem_max` holds), while setting `SO_RCVBUF` first could only lower it
//! (`docs/linux-tcp.md`; the test model does the same).

use std::collections::VecDeque;
use std::time::Duration;

mod alone;
mod follow;
pub(crate) mod memory;
mod plain;
mod steer;
pub(crate) mod view;

use steer::{Ramp, Reading, State};

use super::meter::{WindowedMax, bytes_capped, scaled, show_bytes, show_ms, show_rate};
use super::sobas::TRAINS;
use super::{
    Action, Context, Decision, DecisionRecord, Event, Inputs, MAX_PLAUSIBLE_RATE_BPS, Peer, Role,
    Settings, Setup, Tuner,
};
use crate::bdp::{linux_handshake_window_scale, max_window_for_scale};
use crate::units::Bytes;
use alone::Alone;
use follow::Follower;
use memory::Memory;
use view::{Observer, View};

/// The first window, bytes: no more than the first window any TCP
/// advertises, so that slow start's own bursts stay small.
pub const INITIAL_WINDOW: Bytes = Bytes(64 * 1024);
/// A receiver alone's first window, bytes. Its sender's slow start
/// doubles from ten segments; at 64 KiB the window held vsftpd's flow back
/// from its fourth round (116 kB wanted at 0.4 s on 200 Mbit/s x 100 ms),
/// where the kernel's own window was 173 kB at 0.3 s and 596 kB at
/// 0.5 s, and the flow fell a round and a half behind the kernel's
/// (measured). 256 KiB leaves it its first five rounds.
const INITIAL_WINDOW_ALONE: Bytes = Bytes(256 * 1024);
/// The smallest window, in segments.
const MIN_WINDOW_SEGMENTS: u64 = 20;
/// While ramping towards an estimated window, the window grows by this
/// share of it per RTT. A window-limited flow comes in bursts (slow start
/// leaves it so), and each burst grows by what the window grew, into the
/// bottleneck queue: this keeps them under a tenth of the BDP.
const RAMP_LEAD: f64 = 1.0 / 18.0;
/// A receiver asks a rightsize sender to pace at this much above the
/// trains' capacity (or the best rate since, once the flow reaches the
/// ceiling). Paced, the sender spreads what a growing window lets out
/// instead of bursting it into the bottleneck queue, so once the sender
/// says it paces, the window opens at once ([`PACED_OPEN`]).
/// Measured on `shallow` (200 Mbit/s x 100 ms, queue 0.1 x BDP): opened at
/// once without pacing, 123 segments lost and 114.9 Mbit/s; paced at
/// 1.1 x the trains' 191 Mbit/s, none lost and 185.0 Mbit/s; paced at
/// 1.1 x trains that read 2% high, 71 lost (1/32 above: none).
const PACE_GAIN: f64 = 1.0 / 32.0;
/// Behind a paced sender the window opens at once to this share of the
/// capacity's window, and ramps on from there: of 80 sets of trains on
/// the benchmark paths (summed over the five, before the median), 6 read
/// 3 to 8% high and one 28%, and a window opened at once to that one
/// overflowed a queue of a tenth of the BDP (539 segments lost, measured).
/// From here the ramp meets a queue before it can overflow one.
const PACED_OPEN: f64 = 3.0 / 4.0;
/// ... but no further than this many times what the flow carried in its
/// last min-RTT (and at first half of that many first windows): a sender
/// in slow start doubles what it sends each round trip, and a sample
/// comes a quarter of one after the last. Sixteen flows that start
/// together each carry a sixteenth of the path: on the model their
/// receive buffers peaked at 2.8 BDPs with 2.5 (3.4 with 4; 14.7 opened
/// at once), and a flow alone lost nothing to it on the benchmark paths.
const OPEN_LEAD: f64 = 2.5;
/// A paced flow within this share of its ceiling, with no queue at all
/// for a min-RTT, is held by the ceiling, not by the path: the ceiling is
/// raised by a gain that doubles each min-RTT this holds, from
/// [`PACE_GAIN`] up to [`PACE_GAIN_MAX`]. The sender's delivery rate at a
/// ceiling read 2 to 7% below it (measured), under the 1/64 that raises
/// it by [`PACE_GAIN`]: trains that read low held the flow for seconds.
const PACE_HELD: f64 = 1.0 / 16.0;
const PACE_GAIN_MAX: f64 = 1.0 / 4.0;
/// A drain that found the path slower by more than this share of the new
/// rate is remembered for [`RECALL`]: a window-limited flow with no queue
/// within that time, well below the rate before, ramps back x1.5 per RTT
/// (`steer`'s `back_to_faster`).
const RECALL_DROP: f64 = 1.0 / 4.0;
const RECALL: Duration = Duration::from_secs(10);
/// The flow carried this much more than the trains' capacity with no
/// queue at all, in two readings a min-RTT or more apart: the trains read
/// low (a path whose rate changes, measured in a slow moment). Trains on
/// the benchmark paths read 1 to 2% low, or up to 28% high, and a flow reaches
/// a path's rate, not beyond it.
const TRAINS_READ_LOW: f64 = 1.0 / 8.0;
/// A sender's ceiling up to this much above the one asked for is taken
/// as "paced" (the kernel keeps what it is given; this is rounding).
const PACE_TOLERANCE: f64 = 1.0 / 64.0;
/// Towards an estimate, an inflated RTT below this share of it is a
/// burst, not the bottleneck: the ramp pauses.
const RAMP_PAUSE_BELOW: f64 = 0.8;
/// Without an estimate, the window grows by this factor per RTT ...
const RAMP_FACTOR: f64 = 1.5;
/// ... or by this one on a receiver alone (a sender that is not rightsize:
/// no reports, no trains, no pacing). Its sender's slow start doubles its
/// window each RTT, and a ramp that grows slower holds it back: at x1.5
/// the window took 2.2 s to reach the BDP of 200 Mbit/s x 100 ms from
/// vsftpd, against 0.7 s for the kernel's autotuning (measured). It is
/// the least growth: the ramp follows twice what arrives, up to x2 per RTT
/// (see [`plain`]).
const RAMP_FACTOR_ALONE: f64 = 1.75;
/// ... and from a known window, when the path got faster, by this share
/// per RTT at first, doubling each RTT up to the most.
const PROBE_GAIN: f64 = 1.0 / 32.0;
const PROBE_GAIN_MAX: f64 = 1.0 / 8.0;
/// Below the trains' capacity, behind a paced sender, the probe's gain
/// doubles up to this: a window that opens no longer bursts into the
/// bottleneck queue, and on the changing path each switch from 50 to 200
/// Mbit/s took 2 s to grow the window back at +1/8 per RTT.
const PACED_PROBE_GAIN_MAX: f64 = 1.0 / 2.0;
/// A probe that starts beyond the trains' capacity starts at this share
/// per RTT, doubling up to [`PROBE_GAIN`] (no more, beyond it).
const PROBE_GAIN_BEYOND: f64 = 1.0 / 128.0;
/// The window is kept this much above rate x min-RTT, at first.
const HEADROOM: f64 = 1.0 / 16.0;
/// Headroom is halved down to this by losses at a full window.
const MIN_HEADROOM: f64 = 1.0 / 64.0;
/// The RTT is inflated above min-RTT x (1 + this) + [`RTT_FLOOR`].
const INFLATION: f64 = 1.0 / 8.0;
/// Slack for timer granularity on short paths.
const RTT_FLOOR: Duration = Duration::from_micros(500);
/// What the hosts add to min-RTT on a loaded flow: delayed ACKs, the
/// receiving application's reads, the emulator's and the kernel's
/// batching. On a 200 Mbit/s x 5 ms path the sender's RTT stood at 5.6 to
/// 6.0 ms behind a window of 1.06 x rate x min-RTT with nothing queued,
/// the window stopped the sender 40 to 68% of the time, and the flow made
/// 0.84 x the kernel's goodput (measured between two rightsize ends, with
/// a queue of 4 x BDP). So the window is at least rate x (min-RTT + this;
/// a receiver alone's [`HOST_PARTS_ALONE`] times this), and the RTT reads
/// queued or inflated only beyond it: on paths from 40 ms up (80 ms for
/// a receiver alone; [`HEADROOM`] x min-RTT is as much) nothing changes
/// (see [`host_room`]).
const HOST_DELAY: Duration = Duration::from_micros(2500);
/// A receiver alone counts the hosts' delay this many times over: its RTT
/// is the kernel's `tcpi_rcv_rtt`, which since Linux 6.16 takes any
/// smaller sample at once (see docs/linux-tcp.md), so it reads the least
/// of the round trips its flow sees, not their mean. From vsftpd on
/// 100 Mbit/s x 5 ms, `tcpi_rcv_rtt` read 6.0 ms at the median in every
/// run while the window over the goodput, the round trip that held the
/// flow, was 7.6 ms at the median in most runs and 8.4 to 9.1 ms in some;
/// a window of the rate x (min-RTT + one host delay) made 84.9 and 56.2
/// Mbit/s in two runs of eight against the kernel's 95.7 to 96.2, and a
/// drain read one of those round trips as a queue and cut the window to
/// half the BDP (measured).
const HOST_PARTS_ALONE: f64 = 2.0;
/// The shortest RTT a window is sized for. On loopback and LANs min-RTT
/// (tens of microseconds) says little about the loaded RTT, which the
/// receiving application's scheduling sets: a window of rate x min-RTT
/// there lowers the rate, which lowers the window (measured on loopback:
/// 84 Mbit/s with a 29 KB window, against 20 Gbit/s with 64 KiB buffers).
/// Sized for at least 3 ms, the window outgrows the loaded RTT and the
/// rate climbs to what the hosts can do (over a veth pair, 1 ms left
/// `auto` at 18 to 21 Gbit/s where the kernel's autotuning made 22 to 24;
/// 3 ms, 19 to 21 against 18 to 23, with 8 MB of buffer to the kernel's
/// 14 to 30, measured); paths of 3 ms and more are not affected.
pub(crate) const MIN_SIZING_RTT: Duration = Duration::from_millis(3);
/// Window-limited when the window stopped the sender this share of its
/// busy time.
const LIMITED_SHARE: f64 = 0.5;
/// Without the sender's `TCP_INFO`: window-limited when rate x RTT fills
/// this share of the window.
const FULL_WINDOW_SHARE: f64 = 0.75;
/// Without an estimate, the path is saturated when rate x min-RTT falls
/// below this share of the window of two RTTs ago (what the rate can
/// show by now, reports being late), twice in a row.
const SATURATED: f64 = 0.8;
/// Alone, a first ramp held at a queue goes on if the rate grew by this
/// much within [`HOLD_RTTS`]: the queue was the sender's slow start
/// bursting, not a full path.
const HOLD_GROWTH: f64 = 1.0 / 8.0;
const HOLD_RTTS: u32 = 2;
/// A window more than this above the target counts as an overshoot.
const OVERSHOOT: f64 = 1.0 / 8.0;
/// `drain` looks every this many RTTs whether the queue emptied ...
const DRAIN_RTTS: f64 = 3.0;
/// ... for at most this many rounds while the RTT keeps falling.
const DRAIN_ROUNDS: u32 = 4;
/// In a drain, the RTT is level while it stays within this share of
/// where it last moved to ...
const FLAT: f64 = 1.0 / 16.0;
/// ... and the bottleneck idles once the flow delivers this share less
/// than the bottleneck did while a queue kept it busy.
const IDLE: f64 = 1.0 / 8.0;
/// The RTT "stayed" when its least during a drain round is above this
/// share of where it began.
const RTT_STAYED: f64 = 0.95;
/// This many loss events the window does not explain, within this many
/// RTTs, mean a congested path. The SOBAS paper (section IV-B) only asks whether
/// the loss rate is non-zero, and waiting costs: at a window near the BDP
/// each loss halves the rate for seconds. But a mistaken step-aside costs
/// more than what `static` costs: on Rattan one burst loss (a window that
/// opened at once) stepped aside to four BDPs of window, which then
/// overflowed the queue (1,625 segments retransmitted in a 128 MiB run,
/// measured); three episodes rule out one burst.
const RANDOM_LOSSES: usize = 3;
const RANDOM_LOSS_RTTS: f64 = 256.0;
/// Losses within this many RTTs of the previous one belong to the same
/// event (TCP too reduces once per round trip of losses; a window cut
/// takes a round trip to show; a recovery may go on for seconds).
const LOSS_EVENT_RTTS: f64 = 2.0;
/// A loss whose queue, in bytes, is under this share of the deepest
/// queue the path has shown, once that was at least [`DEEP_QUEUE`] of
/// the flow's BDP, is not a drop-tail queue's overflow, whatever the RTT
/// reads: a drop-tail queue overflows at the same bytes at any rate. It
/// is the path's. Behind bbr, which keeps up to two BDPs in flight, the
/// RTT stands well above min-RTT without filling the queue: vsftpd under
/// bbr with 0.01% random loss on a path with a queue of one BDP (the
/// startup showed +173%) lost segments with the RTT at +36% to +66%, each
/// read as the queue's overflow and cutting the window to 1.1 BDP, which
/// then stalled the flow through the next recovery (0.956 x the kernel's
/// goodput, measured). And halving the headroom instead left the window
/// at the BDP through two more losses, each stalling the flow for an RTT
/// (0.7 s of a 13 s transfer, measured). The RTT must also be below the
/// most it has shown: a queue deeper in time than ever before may be a
/// path that just got slower, whose rate the readings have not caught up
/// with.
const OVERFLOW_SHARE: f64 = 0.5;
const DEEP_QUEUE: f64 = 0.25;

/// The queue an RTT shows, bytes: its time above min-RTT at the rate
/// that drains it.
fn queue_bytes(rtt: Duration, min_rtt: Duration, rate: f64) -> f64 {
    rtt.saturating_sub(min_rtt).as_secs_f64() * rate
}

/// A congestion window of at most this many segments is a pause, not the
/// flow's size: bbr's `PROBE_RTT` holds the window at four segments for
/// 200 ms and a round trip every ten seconds, then gives back the one
/// before (and a timeout restarts from one). A send buffer then keeps the
/// largest window of the last [`CWND_MEMORY`]. Followed down to it, the
/// buffer came down to 96 KiB, and the flow waited for the next samples
/// to raise it again (curl behind bbr on 200 Mbit/s x 100 ms: four
/// segments in flight for 0.4 s where the kernel's buffer let the flow go
/// on at once, measured).
const PAUSE_SEGMENTS: u64 = 4;
const CWND_MEMORY: Duration = Duration::from_millis(600);
/// Otherwise a send buffer follows the window down at once to no less
/// than this share of that largest window (reno halves its window at a
/// loss, cubic keeps 0.7 of it), and further only once the larger window
/// is [`CWND_MEMORY`] old: bbr's window dips for a moment as a recovery
/// ends (1,969 segments, then about 180, then 955 and 1,834 within
/// 0.2 s), and followed down the buffer came down to 217 KiB and the flow
/// to 61 Mbit/s for 0.1 s (globus-url-copy behind bbr, measured).
const CWND_FALL: f64 = 0.5;

/// A congestion window as a send buffer follows it: pauses and dips are
/// not the flow's size (both ends that size a send buffer, alone or
/// behind a rightsize receiver, follow it so).
#[derive(Debug, Clone)]
struct CwndFollower {
    /// The largest congestion window of the last [`CWND_MEMORY`], bytes.
    recent: WindowedMax,
}

impl CwndFollower {
    fn new() -> Self {
        CwndFollower {
            recent: WindowedMax::new(CWND_MEMORY),
        }
    }

    /// Takes the congestion window of now (`cwnd` bytes, segments of
    /// `mss`) and says what to follow, bytes.
    fn see(&mut self, at: Duration, cwnd: f64, mss: u64) -> f64 {
        self.recent.update(at, cwnd);
        let recent = self.recent.get().unwrap_or(cwnd);
        if cwnd <= (PAUSE_SEGMENTS * mss) as f64 {
            recent
        } else {
            cwnd.max(CWND_FALL * recent)
        }
    }
}

/// At a full window, a standing queue below this multiple of the headroom
/// is the window's own: a loss there means the bottleneck queue could not
/// hold the headroom and the bursts on top of it (measured on the shallow
/// path: losses at +5% and +10% with a headroom of 1/16, read as "not the
/// window's" when this was a half).
const HELD_HEADROOM: f64 = 2.0;
/// For this many RTTs after the window was raised, a queue is the
/// raise's own: what the window let out crossing the bottleneck (behind a
/// sender paced at the path's first capacity, faster than a path that got
/// slower), while the rate still shows the smaller window. Read as the
/// window's, it cut the window at once to that rate: on a path whose RTT
/// rose from 100 to 160 ms, the window sized for the new RTT fell back to
/// 0.7 of it for 2 s (measured).
const RAISE_RTTS: f64 = 2.0;
/// For this many RTTs after a loss, a queue is the recovery's, not the
/// window's.
const RECOVERY_RTTS: f64 = 4.0;
/// `step-aside` keeps the window at this many estimated BDPs, until no
/// loss for [`QUIET_RTTS`].
const STEP_ASIDE_BDPS: f64 = 4.0;
/// ... or at this many, when a loss with no queue at all showed a lossy
/// path. A lost segment holds the receiver's window at the hole for
/// about an RTT and a quarter (detection waits a quarter of min-RTT for
/// reordering, the retransmission half an RTT to arrive), while the
/// sender goes on at the path's rate: the window must carry the BDP in
/// flight and that much beyond. Memory stays within 1/16 of it there
/// (see [`memory`]): the window does not bind but in a recovery.
const RIDE_OUT_BDPS: f64 = 2.5;
const QUIET_RTTS: f64 = 128.0;
/// Changes smaller than this share of the window are not applied.
const HYSTERESIS: f64 = 1.0 / 32.0;
/// The peer is told again when the window moved by this share.
const TELL_CHANGE: f64 = 1.0 / 8.0;
/// Samples per RTT, and the bounds of the interval.
const SAMPLES_PER_RTT: f64 = 4.0;
/// A receiver alone samples this often per RTT: each step of its ramp
/// lets its sender out by that much at once, a burst into the bottleneck
/// queue, and at x2 per RTT in four steps a step is a fifth of the window.
const SAMPLES_PER_RTT_ALONE: f64 = 8.0;
const MIN_INTERVAL: Duration = Duration::from_millis(5);
const MAX_INTERVAL: Duration = Duration::from_millis(250);
const DEFAULT_INTERVAL: Duration = Duration::from_millis(20);
/// How long the history of windows goes back.
const HISTORY: Duration = Duration::from_secs(5);
/// IPv4 + TCP + timestamp option: a train's IP rate to a payload rate.
const HEADER_BYTES: f64 = 52.0;

/// What a margin of `share` x `base` (+ `floor`) lacks of `part` x
/// [`HOST_DELAY`] on a path of min-RTT `base` (seconds): added to the
/// margin, it makes that at least `part` x the hosts' delay. Zero on
/// paths of 40 ms and more for the window ([`HEADROOM`]), of 36 ms and
/// more for inflation, whatever losses did to the headroom.
fn host_room(base: f64, part: f64, share: f64, floor: f64) -> f64 {
    (part * HOST_DELAY.as_secs_f64() - base * share - floor).max(0.0)
}

/// The RTT (seconds) a flow over a path of min-RTT `base` (seconds) must
/// pass to read `share` above it: that share and [`RTT_FLOOR`], and at
/// least `part` x [`HOST_DELAY`], as the window leaves up to that much
/// queued by design on a short path.
fn rtt_above(base: f64, share: f64, part: f64) -> f64 {
    let floor = RTT_FLOOR.as_secs_f64();
    base * (1.0 + share) + floor + host_room(base, part, share, floor)
}

/// An RTT this much below min-RTT (and [`RTT_FLOOR`]) is a path that
/// got shorter, not a better sample of the same one.
const SHORTER: f64 = 1.0 / 8.0;

/// Whether min-RTT falling from `before` to `now` shows a path that got
/// shorter.
fn shorter_path(before: Duration, now: Duration) -> bool {
    now.as_secs_f64() + RTT_FLOOR.as_secs_f64() < before.as_secs_f64() * (1.0 - SHORTER)
}

/// `auto` for one end.
pub fn new(ctx: Context) -> Box<dyn Tuner> {
    match (ctx.role, ctx.peer) {
        (Role::Sender, Peer::Rightsize) => Box::new(Follower::new(ctx)),
        (Role::Sender, Peer::Other) => Box::new(Alone::new(ctx)),
        (Role::Receiver, _) => Box::new(Auto::new(ctx)),
    }
}

/// The window-steering `auto` of a receiver.
#[derive(Debug, Clone)]
struct Auto {
    ctx: Context,
    obs: Observer,
    memory: Memory,
    state: State,
    /// `W`, bytes.
    window: f64,
    /// The window last applied, bytes, and the history of them.
    applied: Bytes,
    history: VecDeque<(Duration, f64)>,
    headroom: f64,
    /// The deepest queue the RTT has shown, bytes (the RTT above min-RTT
    /// at the rate that drained it): the bottleneck's queue holds at
    /// least that much; and the most RTT it has shown.
    deepest_queue: f64,
    deepest_rtt: Duration,
    /// Each train's IP rate, bytes per second.
    train_rates: Vec<f64>,
    /// Payload capacity from the trains, bytes per second.
    capacity: Option<f64>,
    ceiling_pending: bool,
    /// The last sample's decision put right what the kernel did to the
    /// clamp or the memory (and did not steer).
    put_right_last: bool,
    saturated_once: bool,
    /// Whether the window has held the sender back yet: before that, a
    /// queue is the sender's own slow start bursting into the bottleneck.
    bound: bool,
    /// Whether the first ramp has held at a queue yet (see
    /// [`plain`]'s `FOLLOW_AHEAD`).
    ramp_held: bool,
    last_change: Duration,
    /// When the window was last raised.
    last_raise: Duration,
    /// The propagation RTT at the previous sample.
    last_rt_prop: Option<Duration>,
    /// When `startup` last grew (or looked at growing) the window.
    last_growth: Duration,
    last_sample: Option<Duration>,
    last_loss: Duration,
    /// When a loss was last seen (an episode lasts while losses keep
    /// coming).
    loss_seen: Option<Duration>,
    random_losses: VecDeque<Duration>,
    told: Option<Bytes>,
    /// The pacing ceiling asked of the sender, bytes per second.
    pace_asked: Option<f64>,
    /// Whether the sender said it paces at no more than that.
    paced: bool,
    /// Since when (or the last raise) the flow fills its pacing ceiling
    /// with no queue ([`PACE_HELD`]), and the next raise's gain.
    held_at_pace: Option<Duration>,
    pace_gain: f64,
    /// When a drain last found the path slower, and the rate before.
    slower_from: Option<(Duration, f64)>,
    /// Since when the flow carries more than the trains' capacity allows
    /// ([`TRAINS_READ_LOW`]).
    above_trains: Option<Duration>,
    /// A receiver whose sender is not rightsize: its own `TCP_INFO` is
    /// all it knows, and the window its only lever.
    alone: bool,
    /// Alone, in the first ramp: since when the window is held at a
    /// queue, and the rate then.
    hold: Option<(Duration, f64)>,
    /// Alone, in the first ramp after a loss read as the path's: the
    /// latest of that loss and the last sample the flow filled the window
    /// (see [`Auto::ramp_goes_on`]).
    ramp_on: Option<Duration>,
    /// Alone: whether a queue has shown the path's capacity yet.
    found: bool,
    /// Alone: the flow's best rate over the last [`plain::BEST_WINDOW`],
    /// bytes per second; a cut goes no lower (see [`Auto::alone_floor`]).
    best: WindowedMax,
    /// Alone: the window a loss asked for, applied once the sender's
    /// recovery is over (see [`Auto::cut_after_recovery`]).
    after_recovery: Option<f64>,
    /// Alone: whether the window was raised to ride out the recovery.
    riding_out: bool,
    /// Alone, while a loss's cut waits: the sender's flight at the loss
    /// and the bytes this end held then (see [`Auto::ride_on`]).
    ride: Option<(f64, f64)>,
    /// What the flow carried in its last min-RTT (the sender's rate, or
    /// this end's count of the last min-RTT if higher, x min-RTT), bytes.
    carried: f64,
    /// Stepping aside: the window is kept at least this many of the
    /// flow's BDPs (its best rate x min-RTT).
    aside_bdps: f64,
}

impl Auto {
    fn new(ctx: Context) -> Self {
        let alone = ctx.receiver_alone();
        let initial = if alone {
            INITIAL_WINDOW_ALONE
        } else {
            INITIAL_WINDOW
        };
        Auto {
            ctx,
            obs: Observer::new(ctx.role),
            memory: Memory::new(ctx),
            state: State::Startup {
                ceiling: None,
                ramp: Ramp::Times(if alone {
                    RAMP_FACTOR_ALONE
                } else {
                    RAMP_FACTOR
                }),
            },
            window: initial.get() as f64,
            applied: initial,
            history: VecDeque::new(),
            headroom: HEADROOM,
            deepest_queue: 0.0,
            deepest_rtt: Duration::ZERO,
            train_rates: Vec::with_capacity(TRAINS),
            capacity: None,
            ceiling_pending: false,
            put_right_last: false,
            saturated_once: false,
            bound: false,
            ramp_held: false,
            last_change: Duration::ZERO,
            last_raise: Duration::ZERO,
            last_rt_prop: None,
            last_growth: Duration::ZERO,
            last_sample: None,
            last_loss: Duration::ZERO,
            loss_seen: None,
            random_losses: VecDeque::new(),
            told: None,
            pace_asked: None,
            paced: false,
            held_at_pace: None,
            pace_gain: PACE_GAIN,
            above_trains: None,
            slower_from: None,
            alone,
            hold: None,
            ramp_on: None,
            found: false,
            best: WindowedMax::new(plain::BEST_WINDOW),
            after_recovery: None,
            riding_out: false,
            ride: None,
            carried: 0.0,
            aside_bdps: 0.0,
        }
    }

    fn min_window(&self) -> f64 {
        (MIN_WINDOW_SEGMENTS * self.ctx.limits.mss.get()) as f64
    }

    /// The largest window: what the buffer limit and the handshake's
    /// window scale allow.
    fn max_window(&self) -> f64 {
        let l = self.ctx.limits;
        let scale = linux_handshake_window_scale(l.tcp_rmem_max, l.rmem_max);
        self.memory
            .max_window()
            .min(max_window_for_scale(scale).get() as f64)
    }

    /// Sets `W` and, if it moved enough, the socket.
    fn retarget(&mut self, at: Duration, window: f64, reason: String) -> Decision {
        let window = window.clamp(self.min_window(), self.max_window().max(self.min_window()));
        self.window = window;
        let old = self.applied.get() as f64;
        if (window - old).abs() < HYSTERESIS * old {
            return Decision::note(self.state.name(), reason);
        }
        let bytes = bytes_capped(window, Bytes(u64::MAX));
        self.applied = bytes;
        self.last_change = at;
        if window > old {
            self.last_raise = at;
        }
        self.history.push_back((at, window));
        while self
            .history
            .front()
            .is_some_and(|&(t, _)| at.saturating_sub(t) > HISTORY)
        {
            self.history.pop_front();
        }
        // Memory stays close to a window that binds only in a loss
        // recovery: stepping aside, or raised to ride one out. Not a
        // window left as room for a plain sender: at its loss, the
        // out-of-order data filled memory that close, the recovery
        // stalled, and cubic fell to 0.6 of its rate on `short` (where
        // the margin left it at 0.9, measured).
        self.memory
            .serve(if self.state == State::StepAside || self.riding_out {
                memory::Use::Recovery
            } else if self.first_ramp() {
                memory::Use::FirstRamp
            } else {
                memory::Use::Steer
            });
        let actions = self.memory.actions(bytes, window > old);
        let mut decision = Decision::act(self.state.name(), actions, bytes, reason);
        self.tell_peer(&mut decision);
        decision
    }

    /// Adds `TellPeer` when the peer has not heard of a similar window.
    fn tell_peer(&mut self, decision: &mut Decision) {
        // A peer that is not rightsize takes no sizes: telling it would
        // only count failed actions (25 to 29 a transfer from vsftpd).
        if self.ctx.role != Role::Receiver || self.ctx.peer != Peer::Rightsize {
            return;
        }
        let w = self.applied;
        let moved = self.told.is_none_or(|told| {
            (w.get() as f64 - told.get() as f64).abs() > TELL_CHANGE * told.get() as f64
        });
        if !moved {
            return;
        }
        self.told = Some(w);
        decision.actions.push(Action::TellPeer(w));
        decision.record.get_or_insert_with(|| DecisionRecord {
            state: self.state.name(),
            reason: format!("told the peer the window, {}", show_bytes(w)),
            requested: Some(w),
        });
    }

    /// The window that was applied at `at`; before any was, the first
    /// window any TCP advertises. A receiver alone's first window is
    /// larger, a head start rather than a window the flow has filled: its
    /// ramp begins once the flow fills 3/4 of 64 KiB. Counted from the
    /// 256 KiB instead, the ramp began at 0.41 s rather than 0.31 s
    /// behind vsftpd's slow start on 200 Mbit/s x 100 ms, and its window,
    /// which the sender sees a round later, held the flow's sixth round at
    /// 262 kB where slow start wanted 464 (measured).
    fn window_at(&self, at: Duration) -> f64 {
        self.history
            .iter()
            .rev()
            .find(|&&(t, _)| t <= at)
            .map_or(INITIAL_WINDOW.get() as f64, |&(_, w)| w)
    }

    fn target(&self, bw: f64, rt_prop: Duration) -> f64 {
        let sized = rt_prop.max(MIN_SIZING_RTT).as_secs_f64();
        bw * (sized * (1.0 + self.headroom) + self.host_room(sized, 1.0, HEADROOM, 0.0))
    }

    /// How many times over this end counts [`HOST_DELAY`]: a receiver
    /// alone [`HOST_PARTS_ALONE`], any other once.
    fn host_parts(&self) -> f64 {
        if self.alone { HOST_PARTS_ALONE } else { 1.0 }
    }

    /// [`host_room`], `part` counted as this end counts the hosts' delay
    /// ([`Auto::host_parts`]).
    fn host_room(&self, base: f64, part: f64, share: f64, floor: f64) -> f64 {
        host_room(base, part * self.host_parts(), share, floor)
    }

    /// [`rtt_above`], `part` counted as this end counts the hosts' delay
    /// ([`Auto::host_parts`]).
    fn rtt_above(&self, base: f64, share: f64, part: f64) -> f64 {
        rtt_above(base, share, part * self.host_parts())
    }

    /// The RTT above which a flow over a path of min-RTT `base` reads
    /// inflated: [`INFLATION`] above it, and at least twice the hosts'
    /// delay.
    fn inflated_above(&self, base: Duration) -> f64 {
        self.rtt_above(base.as_secs_f64(), INFLATION, 2.0)
    }

    fn on_train(&mut self, bytes: u64, dispersion: Duration) -> Decision {
        if bytes == 0 || dispersion.is_zero() {
            return Decision::note(self.state.name(), "packet train ignored: empty");
        }
        if self.train_rates.len() >= TRAINS {
            return Decision::none();
        }
        self.train_rates
            .push(bytes as f64 / dispersion.as_secs_f64());
        if self.train_rates.len() == TRAINS {
            // The median: one train the emulator (or a NIC) delivers in a
            // batch reads far too fast. The sum of bytes over the sum of
            // dispersions once read 28% high (247 Mbit/s on a 193 Mbit/s
            // path, measured; most likely such a train, as one fully
            // compressed train of five raises the sum about 25%), and a
            // paced startup then overflowed a queue of a tenth of the BDP.
            self.train_rates.sort_by(f64::total_cmp);
            let ip_rate = self.train_rates[TRAINS / 2];
            let mss = self.ctx.limits.mss.get() as f64;
            self.capacity = Some(ip_rate * mss / (mss + HEADER_BYTES));
            self.ceiling_pending = true;
        }
        self.use_capacity(self.last_sample.unwrap_or_default())
    }

    /// Ramps towards `C' x min-RTT` once both are known, if still starting.
    fn use_capacity(&mut self, at: Duration) -> Decision {
        let (true, Some(capacity), Some(rt_prop)) =
            (self.ceiling_pending, self.capacity, self.obs.rt_prop())
        else {
            return Decision::none();
        };
        self.ceiling_pending = false;
        let ceiling = self.target(capacity, rt_prop);
        match self.state {
            State::Startup { .. } => {}
            // Trains that come after the startup ended at a window well
            // short of theirs (a burst read as a queue on a slow, short
            // path): ramp on towards theirs.
            State::Cruise | State::Drain(_) if self.window < RAMP_PAUSE_BELOW * ceiling => {}
            _ => return Decision::none(),
        }
        self.state = State::Startup {
            ceiling: Some(ceiling),
            ramp: Ramp::Add(ceiling * RAMP_LEAD),
        };
        let reason = format!(
            "capacity {} from {TRAINS} trains x min-RTT {}: ramp up to {}",
            show_rate(capacity),
            show_ms(rt_prop),
            show_bytes(Bytes(ceiling as u64))
        );
        let mut decision = if self.window > ceiling {
            self.retarget(at, ceiling, reason)
        } else {
            Decision::note(self.state.name(), reason)
        };
        self.ask_pace(capacity * (1.0 + PACE_GAIN), &mut decision);
        self.open_paced(at, &mut decision);
        decision
    }

    /// Behind a paced sender, opens the window at once to
    /// [`PACED_OPEN`] of the capacity's window, if still starting below it.
    fn open_paced(&mut self, at: Duration, decision: &mut Decision) {
        let State::Startup {
            ceiling: Some(ceiling),
            ..
        } = self.state
        else {
            return;
        };
        let open = (PACED_OPEN * ceiling)
            .min((OPEN_LEAD * self.carried).max(OPEN_LEAD / 2.0 * INITIAL_WINDOW.get() as f64));
        if !self.paced || self.window >= open {
            return;
        }
        let reason = format!(
            "the sender paces: the window opens at once to {}, {OPEN_LEAD}x what the flow carries",
            show_bytes(Bytes(open as u64))
        );
        decision.and(self.retarget(at, open, reason));
    }

    /// Asks a rightsize sender to pace at [`PACE_GAIN`] above `rate`
    /// (bytes per second), if that is above the ceiling asked before.
    /// Asks the sender to pace at no more than `pace`, bytes per second,
    /// if above the ceiling asked before.
    fn ask_pace(&mut self, pace: f64, decision: &mut Decision) {
        if self.ctx.role != Role::Receiver || self.ctx.peer != Peer::Rightsize {
            return;
        }
        if self.pace_asked.is_some_and(|asked| pace <= asked) {
            return;
        }
        self.pace_asked = Some(pace);
        let (state, reason) = (
            self.state.name(),
            format!("asked the sender to pace at {}", show_rate(pace)),
        );
        let actions = vec![Action::TellPeerPace(bytes_capped(pace, Bytes(u64::MAX)))];
        // Alone, it names the window in force; added to another record,
        // it leaves that record's size as it was.
        decision.and(match decision.record {
            Some(_) => Decision {
                actions,
                ..Decision::note(state, reason)
            },
            None => Decision::act(state, actions, self.applied, reason),
        });
    }

    /// The next ceiling for a paced flow that has filled the one asked for
    /// ([`PACE_HELD`]) with no queue at all for a min-RTT since it began or
    /// since the last raise, if it has.
    fn held_at_pace(&mut self, r: &Reading, asked: f64) -> Option<f64> {
        if !self.paced || !r.empty || r.rate < asked * (1.0 - PACE_HELD) {
            self.held_at_pace = None;
            self.pace_gain = PACE_GAIN;
            return None;
        }
        if !held_for(&mut self.held_at_pace, r.at, r.rt_prop) {
            return None;
        }
        self.held_at_pace = Some(r.at);
        let pace = asked * (1.0 + self.pace_gain);
        self.pace_gain = (self.pace_gain * 2.0).min(PACE_GAIN_MAX);
        Some(pace)
    }

    /// Drops the trains' capacity, and the pacing built on it, once the
    /// flow has carried [`TRAINS_READ_LOW`] more with no queue at all, twice
    /// a min-RTT or more apart: they were measured in a slow moment of a
    /// path whose rate changes. Kept, they held the flow near their rate
    /// for good (trains that read 9.65 Mbit/s on a path of 50 Mbit/s one
    /// second and 10 the next: the pace crept up by 1/32 at a time and
    /// each slow second drained it back, 10.1 Mbit/s where the kernel's
    /// autotuning made 27.5, measured). The window then ramps as without
    /// trains, x1.5 per RTT while the flow follows it, the sender no longer
    /// held to a ceiling.
    fn trains_read_low(&mut self, r: &Reading, loss: bool) -> Option<Decision> {
        let capacity = self.capacity?;
        if loss || !r.empty || r.rate < capacity * (1.0 + TRAINS_READ_LOW) {
            self.above_trains = None;
            return None;
        }
        if !held_for(&mut self.above_trains, r.at, r.rt_prop) {
            return None;
        }
        self.above_trains = None;
        self.capacity = None;
        self.paced = false;
        self.last_growth = r.at;
        self.state = State::Startup {
            ceiling: None,
            ramp: Ramp::Times(RAMP_FACTOR),
        };
        let reason = format!(
            "the flow carries {} with no queue, {:.0}% above the trains' capacity {}: they read \
             low (the path's rate changed); capacity and pacing dropped, ramp x{RAMP_FACTOR} per RTT; {}",
            show_rate(r.rate),
            (r.rate / capacity - 1.0) * 100.0,
            show_rate(capacity),
            r.numbers
        );
        Some(match self.pace_asked.take() {
            // The most a report may carry: no ceiling the flow could reach.
            Some(_) => Decision::act(
                self.state.name(),
                vec![Action::TellPeerPace(Bytes(MAX_PLAUSIBLE_RATE_BPS / 8))],
                self.applied,
                reason,
            ),
            None => Decision::note(self.state.name(), reason),
        })
    }

    /// A report from a sender that paces at no more than asked: the
    /// window need not open gradually from far below the capacity's.
    fn on_pace(&mut self, at: Duration, bps: u64) -> Decision {
        let Some(asked) = self.pace_asked else {
            return Decision::none();
        };
        let pace = bps as f64 / 8.0;
        if self.paced || pace > asked * (1.0 + PACE_TOLERANCE) {
            return Decision::none();
        }
        self.paced = true;
        let mut decision = Decision::note(
            self.state.name(),
            format!("the sender paces at {}", show_rate(pace)),
        );
        self.open_paced(at, &mut decision);
        decision
    }

    fn read(&self, view: &View) -> Option<Reading> {
        let (rate, rtt, rt_prop) = (view.rate?, view.rtt?, view.rt_prop?);
        let fills = || {
            // Alone, the rate is this end's goodput over the last two
            // RTTs: it shows the window of two RTTs ago. Compared with
            // the window of now, a ramp of x1.5 per RTT read as
            // "not limited" every other sample and grew x1.2 per RTT
            // (measured from vsftpd on 200 Mbit/s x 100 ms).
            let window = if self.alone {
                self.window_at(view.at.saturating_sub(rtt.saturating_mul(2)))
            } else {
                self.window
            };
            let window = view.rcv_wnd.map_or(window, |w| window.min(w as f64));
            // In a first ramp alone, what arrived in the last min-RTT
            // counts too: behind a slow start that doubles each round, the
            // goodput over two RTTs is 3/4 of the last round, and read
            // "not limited" a round late (from vsftpd on 200 Mbit/s x
            // 300 ms the window held the flow at 277 KB for two rounds
            // where the kernel's had doubled to 463 KB, measured). Not
            // later: a recovery's hand-over fills one min-RTT with far
            // more than the window carries.
            let recent = view
                .recent_rate
                .filter(|_| self.first_ramp())
                .unwrap_or(0.0);
            let in_flight = view
                .inflight
                .map_or(rate.max(recent) * rtt.as_secs_f64(), |b| b as f64);
            in_flight >= FULL_WINDOW_SHARE * window
        };
        // A paced sender spends its time waiting for the pacing timer,
        // which Linux counts as neither window- nor buffer-limited: held
        // at 145 Mbit/s by a window of 1.82 MB on a 100 ms path while
        // paced at 187, the sender's `rwnd_limited` grew 24 to 48 ms in
        // each 100 ms, and the startup ramp, reading the window as not
        // limiting, stood still for 0.55 s and then crept, reaching the
        // trains' window only 5.5 s in (measured on `lfn` between two
        // rightsize ends). Below its pace, a flow that the window holds
        // can be window-limited only for the time the pacer would have
        // sent, about 1 - rate / pace: the share is read against that.
        let share = view
            .rwnd_share
            .map(|share| match self.pace_asked.filter(|_| self.paced) {
                Some(pace) if rate < pace * (1.0 - PACE_HELD) => share / (1.0 - rate / pace),
                _ => share,
            });
        // While it starts, a paced flow that fills its window is held by
        // it, whatever share.
        let starting_paced = self.paced && matches!(self.state, State::Startup { .. });
        let limited = share.map_or_else(fills, |share| {
            share >= LIMITED_SHARE || (starting_paced && fills())
        });
        let (base, now, floor) = (
            rt_prop.as_secs_f64(),
            rtt.as_secs_f64(),
            RTT_FLOOR.as_secs_f64(),
        );
        let queue_pct = (now / base - 1.0) * 100.0;
        let inflated_above = self.inflated_above(rt_prop);
        // The window leaves up to [`HOST_DELAY`] queued on a short path
        // (alone, twice that): no queue is up to half of that, empty a
        // quarter.
        let no_queue_above = base * (1.0 + self.headroom / 2.0)
            + floor
            + self.host_room(base, 0.5, HEADROOM / 2.0, floor);
        let empty_above = base * (1.0 + self.headroom / 4.0)
            + floor
            + self.host_room(base, 0.25, HEADROOM / 4.0, floor);
        // "No queue" leaves room for one segment's time at the flow's rate
        // too: a segment waits for its own serialization at the
        // bottleneck, which min-RTT need not hold (1.2 ms at 10 Mbit/s; a
        // flow at 8.5 Mbit/s on a 40 ms path read +2% with nothing queued,
        // never "empty" once losses had halved the headroom to 1/32, and
        // its window never probed again, on the model and on an emulated
        // path of 10 and 50 Mbit/s).
        let segment = self.ctx.limits.mss.get() as f64 / rate.max(1.0);
        Some(Reading {
            at: view.at,
            rate,
            bw: view.btl_bw.unwrap_or(rate).max(rate),
            rtt,
            rt_prop,
            limited,
            inflated: now > inflated_above,
            inflated_settled: view.settled_rtt.unwrap_or(rtt).as_secs_f64() > inflated_above,
            no_queue: now <= no_queue_above + segment,
            empty: now <= empty_above + segment,
            held: view.held.unwrap_or(0) as f64,
            numbers: format!(
                "rate {}, RTT {} (min {}, +{queue_pct:.0}%)",
                show_rate(rate),
                show_ms(rtt),
                show_ms(rt_prop)
            ),
        })
    }

    fn on_sample(&mut self, sample: &super::Sample) -> Decision {
        let view = match self.obs.sample(sample) {
            Ok(view) => view,
            Err(e) => return Decision::note(self.state.name(), e.reason()),
        };
        self.last_sample = Some(sample.at);
        self.memory.observe(&view);
        let before = std::mem::replace(&mut self.last_rt_prop, view.rt_prop);
        if let (Some(before), Some(now)) = (before, view.rt_prop) {
            let settled = matches!(self.state, State::Cruise | State::Drain(_));
            if settled && shorter_path(before, now) {
                return self.restart(sample.at, before, now);
            }
        }
        let mut decision = self.use_capacity(sample.at);
        // What the kernel did to the clamp and the memory is put right
        // first, and the steering waits for the next sample; but not two
        // samples in a row: where the kernel replaces the clamp at every
        // sample (loopback), the steering would never run and the pacing
        // ceiling never rise (the flow stayed at the trains' 1.7 Gbit/s,
        // measured). Steering at every sample instead, the window of a
        // veth pair swung with its noisy 5 ms rates (3 to 18 Gbit/s where
        // this makes 18 to 22, measured).
        let put_right = self.put_right_last;
        self.put_right_last = false;
        if decision.actions.is_empty() && !put_right {
            decision = self
                .memory
                .check(&view, self.applied, self.last_change, self.state.name());
            self.put_right_last = !decision.actions.is_empty();
        }
        if decision.actions.is_empty()
            && let Some(r) = self.read(&view)
        {
            // Out-of-order arrivals the sender's reports do not confirm
            // are a loss only with a queue that may have overflowed.
            let loss = view.loss || (view.unconfirmed_loss && r.inflated);
            if loss {
                self.last_loss = r.at;
            }
            self.deepest_queue = self.deepest_queue.max(r.queued());
            self.deepest_rtt = self.deepest_rtt.max(r.rtt);
            if self.alone {
                self.best.update(r.at, r.rate);
            }
            self.carried = r.rate.max(view.recent_rate.unwrap_or(0.0))
                * r.rt_prop.max(MIN_SIZING_RTT).as_secs_f64();
            decision = if let Some(recovering) = self.recovery(&r, loss) {
                recovering
            } else if let Some(dropped) = self.trains_read_low(&r, loss) {
                dropped
            } else if loss && self.state != State::StepAside {
                self.on_loss(&r)
            } else {
                self.steer(&r)
            };
            // Not at a queue: other flows fill the path (a server's
            // many clients starting together), or this one does.
            if decision.actions.is_empty() && !r.inflated {
                self.open_paced(r.at, &mut decision);
            }
            if decision.actions.is_empty() {
                let room = self.leave_room(&r);
                if !room.actions.is_empty() {
                    decision = room;
                }
            }
            // A flow that reaches the ceiling may be held by it: raise
            // it (the trains' estimate may be low).
            if let Some(asked) = self.pace_asked {
                if r.rate * (1.0 + PACE_GAIN / 2.0) >= asked {
                    self.ask_pace(r.rate * (1.0 + PACE_GAIN), &mut decision);
                } else if let Some(pace) = self.held_at_pace(&r, asked) {
                    self.ask_pace(pace, &mut decision);
                }
            }
        }
        if self.told.is_none() {
            self.tell_peer(&mut decision);
        }
        decision
    }

    /// The path's RTT fell from `before` to `now`: a path that changed,
    /// which may carry more. The window ramps again as at the start:
    /// towards the trains' capacity x the new RTT (at once to
    /// [`PACED_OPEN`] of it behind a paced sender), or x1.5 per RTT while
    /// the flow fills it. Probing from the old window at
    /// +1/32 per RTT, doubling, it took 0.7 s to grow back from 50 Mbit/s
    /// x 160 ms to 200 Mbit/s x 100 ms (measured on the changing path).
    fn restart(&mut self, at: Duration, before: Duration, now: Duration) -> Decision {
        self.hold = None;
        let reason = format!(
            "the RTT fell to {} from {}: the path changed, ramp again",
            show_ms(now),
            show_ms(before)
        );
        let Some(capacity) = self.capacity else {
            // Alone too at x1.5, and not after twice the arrivals as a
            // slow start (see `ramp_window`): the flow is already in
            // flight, and x1.75 overshot the BDP 1.7 times while the rate
            // caught up (memory 0.3 x the kernel's, measured).
            self.state = State::Startup {
                ceiling: None,
                ramp: Ramp::Times(RAMP_FACTOR),
            };
            self.last_growth = at;
            return Decision::note(self.state.name(), reason);
        };
        let ceiling = self.target(capacity, now);
        self.state = State::Startup {
            ceiling: Some(ceiling),
            ramp: Ramp::Add(ceiling * RAMP_LEAD),
        };
        self.last_growth = at;
        let mut decision = Decision::note(self.state.name(), reason);
        self.open_paced(at, &mut decision);
        decision
    }

    /// The share of an RTT between two samples: what a step that grows
    /// the window by a rate per RTT takes at each one. Alone, a step
    /// taken as a quarter of an RTT at eight samples per RTT grew the
    /// window stepping aside x2.25 per RTT, not x1.5: 6.0 to 14.4 MB in
    /// 100 ms of a recovery, from vsftpd with bbr (measured).
    fn sample_rtts(&self) -> f64 {
        if self.alone {
            1.0 / SAMPLES_PER_RTT_ALONE
        } else {
            1.0 / SAMPLES_PER_RTT
        }
    }

    fn interval(&self) -> Duration {
        let share = self.sample_rtts();
        self.obs.rt_prop().map_or(DEFAULT_INTERVAL, |rtt| {
            scaled(rtt, share).clamp(MIN_INTERVAL, MAX_INTERVAL)
        })
    }
}

/// Whether a condition that holds at `at` has held for `span` or more
/// since `since` (set to `at` if it only began now).
fn held_for(since: &mut Option<Duration>, at: Duration, span: Duration) -> bool {
    let began = *since.get_or_insert(at);
    at.saturating_sub(began) >= span
}

impl Tuner for Auto {
    fn name(&self) -> &'static str {
        "auto"
    }

    fn state(&self) -> &'static str {
        self.state.name()
    }

    fn setup(&self) -> Setup {
        Setup {
            pre_handshake: Settings::default(),
            after_connect: self.memory.settings(self.applied),
        }
    }

    fn inputs(&self) -> Inputs {
        // Trains cap the ramp (without them it may overshoot once); the
        // peer's reports say what limits the sender.
        Inputs {
            control_rtt: true,
            trains: true,
            udp_probes: false,
            peer_messages: self.ctx.role == Role::Receiver && self.ctx.peer == Peer::Rightsize,
        }
    }

    fn on_event(&mut self, event: &Event) -> Decision {
        match event {
            Event::Sample(sample) => self.on_sample(sample),
            Event::ControlRtt(m) if m.rtt.is_zero() => {
                Decision::note(self.state.name(), "control-channel RTT of 0 ignored")
            }
            Event::ControlRtt(m) => {
                self.obs.control_rtt(m.rtt);
                self.use_capacity(m.at)
            }
            Event::Train(train) => self.on_train(train.bytes, train.dispersion),
            Event::Peer(report) if self.ctx.role == Role::Receiver => {
                if let Err(e) = report.check(self.obs.last_peer()) {
                    return Decision::note(self.state.name(), format!("peer report ignored: {e}"));
                }
                self.obs.peer(report);
                let decision = self.use_capacity(report.at);
                match report.info.and_then(|i| i.pace_bps) {
                    Some(bps) if decision.record.is_none() => self.on_pace(report.at, bps),
                    _ => decision,
                }
            }
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
