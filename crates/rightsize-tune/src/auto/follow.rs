//! `auto` on a sender whose peer is rightsize: the receiver steers the
//! window (it has the sender's `TCP_INFO` in the peer reports), so the
//! sender only makes sure its send buffer never becomes the limit.
//!
//! It leaves `SO_SNDBUF` to the kernel's autotuning until the receiver
//! tells a window; then the request follows that window (Linux doubles
//! it, enough for the bytes in flight and the unsent ones behind them),
//! or the congestion window when that is smaller: the receiver's window
//! may be ahead of what the flow carries (a receiver opens it a few times
//! ahead in a startup, and the congestion controller may have left slow
//! start early), and the bytes in flight never exceed the congestion
//! window. A congestion window of four segments (bbr's `PROBE_RTT`, every
//! ten seconds) is a pause, and one that falls below half the largest of
//! the last 600 ms is followed only once that one is older (a sender
//! alone's rule too): followed at once, the buffer fell from 11.98 MB to
//! 128 KiB in a `PROBE_RTT` and held the flow's 5 MiB window back at its
//! end (bbr with 0.01% loss on 200 Mbit/s x 100 ms, measured). Whenever
//! `tcpi_sndbuf_limited` shows the buffer stopped the sender while the
//! receiver's window did not, the request grows by half over that, for
//! the rest of the connection.
//!
//! When the receiver asks for a pacing ceiling (the `pace` fact, from its
//! packet-train capacity estimate), the sender sets `SO_MAX_PACING_RATE`
//! to it: the kernel then paces the flow, and a window that opens sends
//! its new bytes at about the path's rate instead of as one line-rate
//! burst into the bottleneck queue. The sender's own reports carry the
//! ceiling in force, which tells the receiver it may open the window at
//! once.

use std::time::Duration;

use crate::auto::{CwndFollower, INITIAL_WINDOW};
use crate::meter::{LINUX_BUFFER_DOUBLING, bytes_capped, micros, scaled, show_bytes, show_rate};
use crate::tcpinfo::TcpInfoSample;
use crate::units::Bytes;
use crate::{Action, Context, Decision, Event, Inputs, PeerReport, Sample, Setup, Tuner};

/// The send buffer is "the limit" when it stopped the sender this share
/// of its busy time ...
const SNDBUF_LIMITED_SHARE: f64 = 0.2;
/// ... while the receive window stopped it less than this share.
const RWND_LIMITED_SHARE: f64 = 0.5;
/// Growth step when the buffer limits.
const GROWTH: f64 = 1.5;
/// ... up to this many times what it follows.
const MOST_BOOST: f64 = 8.0;
/// A told window this many times below the request shrinks it.
const SHRINK_BELOW: f64 = 0.5;
/// Sampling interval bounds, and samples per RTT.
const MIN_INTERVAL: Duration = Duration::from_millis(10);
const MAX_INTERVAL: Duration = Duration::from_millis(250);
const DEFAULT_INTERVAL: Duration = Duration::from_millis(50);
const SAMPLES_PER_RTT: f64 = 2.0;

/// `busy_time`, `rwnd_limited`, `sndbuf_limited`, microseconds.
type Counters = (u64, u64, u64);

/// The follower.
#[derive(Debug, Clone)]
pub struct Follower {
    ctx: Context,
    /// `SO_SNDBUF` request in force; `None` while the kernel autotunes.
    request: Option<Bytes>,
    told: Option<Bytes>,
    last_peer: Option<PeerReport>,
    counters: Option<Counters>,
    rtt: Option<Duration>,
    last_sample: Option<Duration>,
    last_change: Duration,
    /// The pacing ceiling asked for and set, bits per second.
    pace: Option<u64>,
    /// The congestion window at the last sample as the buffer follows it
    /// (not down to a pause or a dip), bytes.
    cwnd: Option<Bytes>,
    cwnd_seen: CwndFollower,
    /// The request is this many times the smaller of the windows: grown
    /// each time the buffer stopped the sender.
    boost: f64,
}

impl Follower {
    /// A follower for the sender `ctx` describes.
    pub fn new(ctx: Context) -> Self {
        Follower {
            ctx,
            request: None,
            told: None,
            last_peer: None,
            counters: None,
            rtt: None,
            last_sample: None,
            last_change: Duration::ZERO,
            pace: None,
            cwnd: None,
            cwnd_seen: CwndFollower::new(),
            boost: 1.0,
        }
    }

    fn set(&mut self, at: Duration, request: Bytes, reason: String) -> Decision {
        let request = request.min(self.ctx.limits.wmem_max);
        if Some(request) == self.request {
            return Decision::none();
        }
        self.request = Some(request);
        self.last_change = at;
        Decision::act(
            self.state(),
            vec![Action::SetSndBuf(request)],
            request,
            reason,
        )
    }

    /// What the request follows: the smaller of the told window and the
    /// congestion window (no less than the first window).
    fn base(&self) -> Option<Bytes> {
        let told = self.told?;
        Some(
            self.cwnd
                .map_or(told, |cwnd| told.min(cwnd.max(INITIAL_WINDOW))),
        )
    }

    /// What the request should be: [`Follower::base`], boosted.
    fn want(&self) -> Option<Bytes> {
        let base = self.base()?;
        Some(bytes_capped(
            base.get() as f64 * self.boost,
            self.ctx.limits.wmem_max,
        ))
    }

    /// Moves the request to [`Follower::want`] if that grew, or fell to
    /// well below the request.
    fn follow(&mut self, at: Duration, reason: impl FnOnce(Bytes) -> String) -> Decision {
        let Some(want) = self.want() else {
            return Decision::none();
        };
        let grow = self.request.is_none_or(|r| r < want);
        let shrink = self
            .request
            .is_some_and(|r| (want.get() as f64) < SHRINK_BELOW * r.get() as f64);
        if !(grow || shrink) {
            return Decision::none();
        }
        let reason = reason(want);
        self.set(at, want, reason)
    }

    fn on_peer(&mut self, report: &PeerReport) -> Decision {
        if let Err(e) = report.check(self.last_peer.as_ref()) {
            return Decision::note(self.state(), format!("peer report ignored: {e}"));
        }
        self.last_peer = Some(*report);
        if let Some(bps) = report.info.and_then(|i| i.pace_bps)
            && self.pace != Some(bps)
        {
            self.pace = Some(bps);
            let ceiling = Bytes(bps / 8);
            return Decision::act(
                self.state(),
                vec![Action::SetMaxPacingRate(ceiling)],
                ceiling,
                format!(
                    "receiver asks for a pacing ceiling of {}: paced",
                    show_rate(ceiling.get() as f64)
                ),
            );
        }
        let Some(told) = report.size else {
            return Decision::none();
        };
        self.told = Some(told);
        self.follow(report.at, |want| {
            format!(
                "receiver's window is {}: send buffer in step, {}",
                show_bytes(told),
                show_bytes(want)
            )
        })
    }

    fn on_sample(&mut self, sample: &Sample) -> Decision {
        if self.last_sample.is_some_and(|last| sample.at < last) {
            return Decision::note(self.state(), "sample ignored: it is older than the last");
        }
        self.last_sample = Some(sample.at);
        let Some(info) = sample.tcp_info.as_ref() else {
            return Decision::none();
        };
        if let Some(rtt) = micros(info.rtt_us) {
            self.rtt = Some(rtt);
        }
        let cwnd = info.snd_cwnd_bytes();
        let follow = if cwnd > 0 {
            let mss = u64::from(info.snd_mss_bytes.max(1));
            let followed = self.cwnd_seen.see(sample.at, cwnd as f64, mss);
            self.cwnd = Some(bytes_capped(followed, Bytes(u64::MAX)));
            self.follow(sample.at, |want| {
                format!(
                    "congestion window {}: send buffer in step, {}",
                    show_bytes(Bytes(cwnd)),
                    show_bytes(want)
                )
            })
        } else {
            Decision::none()
        };
        let grown = self.on_counters(sample, info);
        if grown.actions.is_empty() {
            follow
        } else {
            grown
        }
    }

    /// Grows the request by half when the sender's counters show the send
    /// buffer stopped it while the receiver's window did not.
    fn on_counters(&mut self, sample: &Sample, info: &TcpInfoSample) -> Decision {
        let (Some(busy), Some(rwnd), Some(sndbuf)) = (
            info.busy_time_us,
            info.rwnd_limited_us,
            info.sndbuf_limited_us,
        ) else {
            return Decision::none();
        };
        let before = self.counters.replace((busy, rwnd, sndbuf));
        let Some((busy0, rwnd0, sndbuf0)) = before else {
            return Decision::none();
        };
        let busy_delta = busy.saturating_sub(busy0);
        if busy_delta == 0 {
            return Decision::none();
        }
        let share = |now: u64, then: u64| now.saturating_sub(then) as f64 / busy_delta as f64;
        let sndbuf_share = share(sndbuf, sndbuf0);
        let rwnd_share = share(rwnd, rwnd0);
        let rtt = self.rtt.unwrap_or(DEFAULT_INTERVAL);
        let settled = sample.at.saturating_sub(self.last_change) >= rtt;
        if sndbuf_share < SNDBUF_LIMITED_SHARE || rwnd_share >= RWND_LIMITED_SHARE || !settled {
            return Decision::none();
        }
        let why = format!(
            "send buffer stopped the sender {:.0}% of the time (receive window {:.0}%)",
            sndbuf_share * 100.0,
            rwnd_share * 100.0
        );
        let Some(base) = self.base() else {
            // Not told yet: the kernel's autotuned size, grown by half.
            let kept = sample
                .buffers
                .map(|b| Bytes(b.sndbuf_bytes / LINUX_BUFFER_DOUBLING))
                .unwrap_or_default();
            let request = bytes_capped(kept.get() as f64 * GROWTH, self.ctx.limits.wmem_max);
            return self.set(
                sample.at,
                request,
                format!("{why}: {}", show_bytes(request)),
            );
        };
        // Half again over the request in force, which may be above what
        // it follows now.
        let base = base.get().max(1) as f64;
        let held = self.request.map_or(0.0, |r| r.get() as f64 / base);
        self.boost = (GROWTH * self.boost.max(held)).min(MOST_BOOST);
        self.follow(sample.at, |want| format!("{why}: {}", show_bytes(want)))
    }
}

impl Tuner for Follower {
    fn name(&self) -> &'static str {
        "auto"
    }

    fn state(&self) -> &'static str {
        if self.request.is_some() {
            "follow"
        } else {
            "follow-kernel"
        }
    }

    fn setup(&self) -> Setup {
        Setup::default()
    }

    fn inputs(&self) -> Inputs {
        Inputs {
            peer_messages: true,
            ..Inputs::default()
        }
    }

    fn on_event(&mut self, event: &Event) -> Decision {
        match event {
            Event::Sample(sample) => self.on_sample(sample),
            Event::Peer(report) => self.on_peer(report),
            _ => Decision::none(),
        }
    }

    fn next_wakeup(&self) -> Option<Duration> {
        let interval = self.rtt.map_or(DEFAULT_INTERVAL, |rtt| {
            scaled(rtt, 1.0 / SAMPLES_PER_RTT).clamp(MIN_INTERVAL, MAX_INTERVAL)
        });
        Some(
            self.last_sample
                .map_or(Duration::ZERO, |at| at.saturating_add(interval)),
        )
    }
}
