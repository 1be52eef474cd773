//! The socket settings behind `auto`'s window, and what the kernel does to
//! them.
//!
//! On a receiver the window `W` is `TCP_WINDOW_CLAMP`, and the memory
//! `SO_RCVBUF` is sized so that it alone also caps the window near `W`:
//! Linux offers `ratio x buffer` (the kernel's `scaling_ratio`, payload per
//! byte of `skb` truesize, about 0.89 on a 1500-byte veth with GRO as
//! measured on 6.18) and, seen on 6.18, *replaces* an application's clamp
//! with `ratio x buffer` when that ratio changes, and may leave the window
//! at the clamp of the handshake when only `SO_RCVBUF` is raised. So the
//! clamp is re-applied whenever its read-back differs, the replacement
//! value teaches the ratio exactly, and `tcpi_rcv_wnd` refines it. The
//! ratio starts at 0.6, a little under what 6.18 measures on Ethernet,
//! so that the first buffers neither hold the window back nor are twice
//! it.
//!
//! A receiver lowers its memory two RTTs after its window, and not during a
//! loss episode: the sender may still have the old window in flight, and
//! after a loss every segment behind the hole waits in the out-of-order
//! queue; a buffer cut below them makes Linux prune that queue, and the
//! sender retransmit all of it. Measured on the changing benchmark path:
//! a 2.4 MB window cut to 29 KB with its memory during a loss left the
//! sender in timeout backoff for 80 s.
//!
//! Only a receiver steers its window this way: a sender alone sizes its
//! send buffer in [`super::alone`].

use std::time::Duration;

use super::view::View;
use crate::meter::{LINUX_BUFFER_DOUBLING, bytes_capped, show_bytes};
use crate::units::Bytes;
use crate::{Action, Context, Decision, Settings};

/// Window per byte of receive buffer before anything is learnt. Linux
/// 6.18 on a 1500-byte veth offered 0.63 to 0.89 of the read-back buffer
/// on the benchmark paths; at the old 0.5 the buffer was 2.1 x the window,
/// above 2 x BDP, and at 0.9 the window was often memory-limited, and a
/// memory-limited window opens in bursts as the application reads (a
/// queue of a tenth of the BDP overflowed at 0.4 x BDP of window,
/// measured). A kernel with a ratio below 0.6 (before 6.5: 0.5) limits the
/// window by memory until the advertised window teaches the ratio.
const RECEIVER_DEFAULT_RATIO: f64 = 0.6;
/// Ratios outside this range are measurement noise.
const MIN_RATIO: f64 = 0.25;
const MAX_RATIO: f64 = 1.0;
/// Memory beyond the exact need, so that rounding never caps the window.
const MARGIN: f64 = 1.0 / 16.0;
/// A receiver alone keeps memory for this much more than its window.
/// Memory that caps the window near it makes the window open as the
/// application reads, in bursts, into the bottleneck queue: a sender
/// that is not rightsize does not pace them, and vsftpd's 100 Mbit/s x
/// 40 ms flow lost a segment in a 50-packet queue every few seconds
/// with its window at 0.8 x BDP (measured). The clamp still holds the
/// window; the kernel's replacement of it is put back as before.
const MARGIN_ALONE: f64 = 0.5;
/// ... and this much more during a first ramp, where the sender's slow
/// start, not the window, makes the bursts and a window that grows each
/// RTT binds for a moment at most. With [`MARGIN_ALONE`] there, the ramp
/// after `changing`'s path sped up back to 200 Mbit/s held 9.75 MB for a
/// window of 4.06 MB, 0.29 x the kernel's buffer (measured).
const MARGIN_RAMP: f64 = 1.0 / 8.0;
/// A read-back clamp this far from the applied one was replaced.
const CLAMP_TOLERANCE: f64 = 0.01;
/// The memory limits the window when the advertised window stays this
/// far below the clamp.
const MEMORY_LIMITED: f64 = 0.97;
/// Changes of the request smaller than this share are not applied.
const HYSTERESIS: f64 = 1.0 / 32.0;
/// A receiver's memory comes down this many RTTs after its window, and as
/// long after the last loss.
const SHRINK_AFTER_RTTS: u32 = 2;

/// What a receiver's window is for, which decides how much memory it
/// keeps beyond the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    /// The first ramp (or a ramp again after the path changed).
    FirstRamp,
    /// Holding the sender back: the window steers the flow.
    Steer,
    /// Binding only in a loss recovery: stepping aside, or raised to
    /// ride one out.
    Recovery,
}

/// The memory behind `auto`'s window.
#[derive(Debug, Clone)]
pub struct Memory {
    ctx: Context,
    /// Window per byte of buffer read-back.
    ratio: f64,
    /// The request in force, bytes.
    request: Option<Bytes>,
    /// When a replaced clamp was last put back.
    last_put_back: Option<Duration>,
    /// A receiver's memory held above its window's need since this time,
    /// until it may come down.
    held_since: Option<Duration>,
    /// The latest sample's time, and when a loss was last seen.
    now: Duration,
    last_loss: Option<Duration>,
    /// The kernel's receive-window growth (`rcv_ssthresh`) last seen, and
    /// when it last grew.
    ssthresh: Option<u64>,
    ssthresh_grew: Option<Duration>,
    /// Memory beyond the window's exact need, a share of it.
    margin: f64,
}

impl Memory {
    /// Memory for the end `ctx` describes.
    pub fn new(ctx: Context) -> Self {
        let mut memory = Memory {
            ctx,
            ratio: RECEIVER_DEFAULT_RATIO,
            request: None,
            last_put_back: None,
            held_since: None,
            now: Duration::ZERO,
            last_loss: None,
            ssthresh: None,
            ssthresh_grew: None,
            margin: MARGIN,
        };
        memory.serve(Use::FirstRamp);
        memory
    }

    /// Sets the memory's margin for what the window is used for. Only a
    /// receiver alone has a margin beyond [`MARGIN`]: [`MARGIN_RAMP`] in
    /// its first ramp, [`MARGIN_ALONE`] while its window steers the
    /// sender. Stepping aside, or raised to ride out a recovery, the
    /// window binds only in a loss recovery, so the bursts that margin
    /// guards against do not arise, and it would only hold memory.
    pub fn serve(&mut self, used: Use) {
        self.margin = match used {
            _ if !self.ctx.receiver_alone() => MARGIN,
            Use::FirstRamp => MARGIN_RAMP,
            Use::Steer => MARGIN_ALONE,
            Use::Recovery => MARGIN,
        };
    }

    /// Notes the time and any loss of a sample: call it before anything
    /// else of the sample.
    pub fn observe(&mut self, view: &View) {
        self.now = view.at;
        if view.behind_a_hole() {
            self.last_loss = Some(view.at);
        }
        if let Some(now) = view.rcv_ssthresh {
            if self.ssthresh.is_some_and(|before| now > before) {
                self.ssthresh_grew = Some(view.at);
            }
            self.ssthresh = Some(now);
        }
    }

    /// No loss in this sample or the [`SHRINK_AFTER_RTTS`] before it: the
    /// out-of-order segments of a recovery no longer hold the buffer.
    fn quiet(&self, view: &View) -> bool {
        !view.behind_a_hole() && self.no_loss_for(view.rtt.unwrap_or_default())
    }

    /// No loss seen in the last [`SHRINK_AFTER_RTTS`] of `rtt`.
    fn no_loss_for(&self, rtt: Duration) -> bool {
        let wait = rtt.saturating_mul(SHRINK_AFTER_RTTS);
        self.last_loss
            .is_none_or(|loss| self.now.saturating_sub(loss) >= wait)
    }

    /// The `SO_RCVBUF` request that carries `window`, bytes.
    fn request_for(&self, window: Bytes) -> Bytes {
        let max = self.ctx.limits.rmem_max;
        let per_request = LINUX_BUFFER_DOUBLING as f64 * self.ratio;
        bytes_capped(window.get() as f64 / per_request * (1.0 + self.margin), max)
    }

    /// The largest window the kernel's limit lets the memory carry.
    pub fn max_window(&self) -> f64 {
        self.ctx.limits.rmem_max.get() as f64 * LINUX_BUFFER_DOUBLING as f64 * self.ratio
            / (1.0 + self.margin)
    }

    /// The actions that set `window`; memory first when it grows, the
    /// clamp first when it shrinks. A receiver's memory does not shrink
    /// now: it is held until [`Memory::check`] finds it safe.
    pub fn actions(&mut self, window: Bytes, grow: bool) -> Vec<Action> {
        let request = self.request_for(window);
        let held = self.request.filter(|&old| old > request);
        match held {
            Some(old) => {
                self.held_since = Some(self.now);
                // The clamp alone, or a put-back at the held memory.
                if grow {
                    vec![Action::SetRcvBuf(old), Action::SetWindowClamp(window)]
                } else {
                    vec![Action::SetWindowClamp(window)]
                }
            }
            None => {
                self.held_since = None;
                self.request = Some(request);
                vec![Action::SetRcvBuf(request), Action::SetWindowClamp(window)]
            }
        }
    }

    /// Whether held memory may come down to `window`'s need: the window
    /// shrank [`SHRINK_AFTER_RTTS`] ago and no loss came since.
    fn may_release(&self, rtt: Option<Duration>) -> bool {
        let (Some(since), Some(rtt)) = (self.held_since, rtt) else {
            return false;
        };
        self.now.saturating_sub(since) >= rtt.saturating_mul(SHRINK_AFTER_RTTS)
            && self.no_loss_for(rtt)
    }

    /// What to set once connected, for the first window.
    pub fn settings(&self, window: Bytes) -> Settings {
        Settings {
            rcvbuf: Some(self.request_for(window)),
            sndbuf: None,
            window_clamp: Some(window),
        }
    }

    /// Compares what the kernel shows with `window` (applied `since`): puts
    /// back a replaced clamp, and resizes the memory when the ratio proved
    /// different. The memory is not trimmed to find a higher ratio: a
    /// memory-limited window opens in bursts as the application reads, and
    /// bursts overflow a shallow queue.
    pub fn check(
        &mut self,
        view: &View,
        window: Bytes,
        since: Duration,
        state: &'static str,
    ) -> Decision {
        let Some(buffers) = view.buffers else {
            return Decision::none();
        };
        let settled = view
            .rtt
            .is_some_and(|rtt| view.at.saturating_sub(since) >= rtt.saturating_mul(2));
        let w = window.get() as f64;
        if self.may_release(view.rtt) {
            self.held_since = None;
            let request = self.request_for(window);
            self.request = Some(request);
            return Decision::act(
                state,
                vec![Action::SetRcvBuf(request)],
                window,
                format!(
                    "the window shrank {SHRINK_AFTER_RTTS} RTTs ago, no loss since: memory down to {}",
                    show_bytes(request)
                ),
            );
        }
        let (why, reapply) = {
            let buffer = buffers.rcvbuf_bytes as f64;
            let clamp = f64::from(buffers.window_clamp_bytes);
            if buffer <= 0.0 {
                return Decision::none();
            }
            let replaced = (clamp - w).abs() > CLAMP_TOLERANCE * w;
            // Put back at most once per two RTTs: a kernel that keeps
            // replacing it (or refusing it) is not fought every sample.
            let recently = self
                .last_put_back
                .zip(view.rtt)
                .is_some_and(|(at, rtt)| view.at.saturating_sub(at) < rtt.saturating_mul(2));
            if replaced && recently {
                return Decision::none();
            }
            if replaced {
                self.last_put_back = Some(view.at);
                let seen = clamp / buffer;
                if (MIN_RATIO..=MAX_RATIO).contains(&seen) {
                    self.ratio = seen;
                }
                (
                    format!(
                        "the kernel replaced the clamp {} with {} ({seen:.3} x the buffer): put back",
                        show_bytes(window),
                        show_bytes(Bytes(clamp as u64))
                    ),
                    true,
                )
            } else if let Some(rcv_wnd) = view
                .rcv_wnd
                .map(|w| w as f64)
                // Above the clamp, the window is one the kernel would
                // not shrink yet; after a loss, out-of-order segments
                // hold the buffer. Neither shows the ratio (measured:
                // 0.72 and then 0.25 "learnt" in one loss episode).
                .filter(|&rcv_wnd| rcv_wnd <= w * (1.0 + CLAMP_TOLERANCE) && self.quiet(view))
            {
                let seen = rcv_wnd / buffer;
                // While the kernel still opens the window towards the
                // clamp (`rcv_ssthresh` grew within the last RTT and a
                // half: slow start's flights arrive once per RTT), the
                // window is that growth's, not the memory's (measured:
                // a window opened at once read 0.303 per byte a few
                // RTTs in, and the buffer became 3.6 x the BDP);
                // memory stops that growth where it caps.
                let opening = self.ssthresh_grew.zip(view.rtt).is_some_and(|(at, rtt)| {
                    view.at.saturating_sub(at) < rtt.saturating_mul(3) / 2
                });
                let limited = settled && !opening && rcv_wnd < MEMORY_LIMITED * w;
                let in_range = (MIN_RATIO..=MAX_RATIO).contains(&seen);
                if in_range && (limited || seen > self.ratio) {
                    self.ratio = seen;
                    (
                        format!(
                            "advertised window {} from a buffer of {}: {seen:.3} per byte",
                            show_bytes(Bytes(rcv_wnd as u64)),
                            show_bytes(Bytes(buffer as u64))
                        ),
                        false,
                    )
                } else {
                    return Decision::none();
                }
            } else {
                return Decision::none();
            }
        };
        let request = self.request_for(window);
        let old = self.request.unwrap_or(request).get() as f64;
        let moved = (request.get() as f64 - old).abs() > HYSTERESIS * old;
        let held = self.held_since.is_some() && (request.get() as f64) < old;
        if (held || !moved) && !reapply {
            return Decision::none();
        }
        let actions = if reapply {
            self.actions(window, true)
        } else {
            self.request = Some(request);
            vec![Action::SetRcvBuf(request)]
        };
        Decision::act(
            state,
            actions,
            window,
            format!("{why}; memory {}", show_bytes(request)),
        )
    }
}
