//! `drs`: dynamic right-sizing in user space, as drsFTP does it (the drsFTP
//! paper, docs/sources.md).
//!
//! Receiver: every sampling interval (default 1 s, section 4.1) the goodput
//! is the bytes received in the interval over its length (section 3.1);
//! the RTT is the latest control-channel probe (section 3.2, where `SBUF`
//! doubles as the probe, section 3.5); whenever the receive buffer is below
//! twice the estimated BDP it becomes twice the estimated BDP (section
//! 3.3), and the sender is told the new size (section 3.5). It never
//! shrinks. Before the handshake both buffers are set to the largest size
//! drs may want, so that the window scale allows it, then reset to 64 KiB
//! once connected (section 3.4).
//!
//! Sender: the same handshake trick, then its send buffer follows the sizes
//! the receiver tells (section 3.5: "the sender's buffer should adjust in
//! step with the receiver's").

use std::time::Duration;

use super::fixed::STOCK_BUFFER;
use super::meter::{
    LINUX_BUFFER_DOUBLING, RateMeter, bytes_capped, micros, rate, show_bytes, show_ms, show_rate,
};
use super::{
    Action, Context, Decision, DrsOptions, Event, Inputs, PeerReport, Role, Sample, Settings,
    Setup, Tuner,
};
use crate::units::Bytes;

/// The receive buffer is kept at this many estimated BDPs (section 3.3).
const BDP_FACTOR: f64 = 2.0;

/// drs at one end.
#[derive(Debug, Clone)]
pub struct Drs {
    ctx: Context,
    options: DrsOptions,
    /// The buffer request in force (receive on a receiver, send on a
    /// sender), bytes.
    current: Bytes,
    /// Latest control-channel RTT.
    rtt: Option<Duration>,
    /// Time and byte count at the start of the current interval.
    interval_start: Option<(Duration, u64)>,
    meter: RateMeter,
    last_peer: Option<PeerReport>,
}

impl Drs {
    /// drs for the end `ctx` describes.
    pub fn new(ctx: Context, options: DrsOptions) -> Self {
        Drs {
            ctx,
            options,
            current: STOCK_BUFFER,
            rtt: None,
            interval_start: None,
            meter: RateMeter::default(),
            last_peer: None,
        }
    }

    fn on_sample(&mut self, sample: &Sample) -> Decision {
        if let Err(e) = self.meter.push(sample.at, sample.bytes) {
            return Decision::note(self.state(), e.reason());
        }
        // The kernel may have kept less than asked (rmem_max): believe it.
        if let Some(buffers) = sample.buffers {
            let kept = Bytes(buffers.rcvbuf_bytes / LINUX_BUFFER_DOUBLING);
            if kept.get() > 0 && kept < self.current {
                self.current = kept;
            }
        }
        let Some((start_at, start_bytes)) = self.interval_start else {
            self.interval_start = Some((sample.at, sample.bytes));
            return Decision::none();
        };
        let elapsed = sample.at.saturating_sub(start_at);
        if elapsed < self.options.interval {
            return Decision::none();
        }
        self.interval_start = Some((sample.at, sample.bytes));
        let Some(goodput) = rate(sample.bytes.saturating_sub(start_bytes), elapsed) else {
            return Decision::none();
        };
        // Section 3.2 measures the RTT with probes; before the first one,
        // the kernel's receiver-side estimate stands in.
        let rtt = self.rtt.or_else(|| {
            sample
                .tcp_info
                .as_ref()
                .and_then(|info| micros(info.rcv_rtt_us))
        });
        let Some(rtt) = rtt else {
            return Decision::note(self.state(), "no RTT measured yet; buffer left alone");
        };
        let bdp = goodput * rtt.as_secs_f64();
        let wanted = bytes_capped(BDP_FACTOR * bdp, self.ctx.limits.rmem_max);
        if self.current.get() as f64 >= BDP_FACTOR * bdp || wanted <= self.current {
            return Decision::none();
        }
        self.current = wanted;
        let capped = if wanted == self.ctx.limits.rmem_max {
            " (capped at rmem_max)"
        } else {
            ""
        };
        Decision::act(
            self.state(),
            vec![Action::SetRcvBuf(wanted), Action::TellPeer(wanted)],
            wanted,
            format!(
                "goodput {} x RTT {} = BDP {}; buffer below 2 x BDP, set to {}{capped}",
                show_rate(goodput),
                show_ms(rtt),
                show_bytes(Bytes(bdp as u64)),
                show_bytes(wanted),
            ),
        )
    }

    fn on_peer(&mut self, report: &PeerReport) -> Decision {
        if let Err(e) = report.check(self.last_peer.as_ref()) {
            return Decision::note(self.state(), format!("peer report ignored: {e}"));
        }
        self.last_peer = Some(*report);
        let (Role::Sender, Some(told)) = (self.ctx.role, report.size) else {
            return Decision::none();
        };
        let wanted = told.min(self.ctx.limits.wmem_max);
        if wanted == self.current {
            return Decision::none();
        }
        self.current = wanted;
        let capped = if wanted < told {
            " (capped at wmem_max)"
        } else {
            ""
        };
        Decision::act(
            self.state(),
            vec![Action::SetSndBuf(wanted)],
            wanted,
            format!(
                "receiver's buffer is {}; send buffer in step at {}{capped}",
                show_bytes(told),
                show_bytes(wanted)
            ),
        )
    }
}

impl Tuner for Drs {
    fn name(&self) -> &'static str {
        "drs"
    }

    fn state(&self) -> &'static str {
        match self.ctx.role {
            Role::Receiver => "sizing",
            Role::Sender => "following",
        }
    }

    fn setup(&self) -> Setup {
        // Section 3.4: large buffers before connecting, so that the window
        // scale allows the largest size drs may grow to; 64 KiB after.
        let limits = self.ctx.limits;
        Setup {
            pre_handshake: Settings {
                rcvbuf: Some(limits.rmem_max),
                sndbuf: Some(limits.wmem_max),
                window_clamp: None,
            },
            after_connect: Settings {
                rcvbuf: Some(STOCK_BUFFER),
                sndbuf: Some(STOCK_BUFFER),
                window_clamp: None,
            },
        }
    }

    fn inputs(&self) -> Inputs {
        // The receiver probes the RTT (section 3.2, `SBUF` doubling as the
        // probe); the sender listens for the sizes it is told.
        Inputs {
            control_rtt: self.ctx.role == Role::Receiver,
            peer_messages: self.ctx.role == Role::Sender,
            ..Inputs::default()
        }
    }

    fn on_event(&mut self, event: &Event) -> Decision {
        match event {
            Event::Sample(sample) if self.ctx.role == Role::Receiver => self.on_sample(sample),
            Event::ControlRtt(m) if m.rtt.is_zero() => {
                Decision::note(self.state(), "control-channel RTT of 0 ignored")
            }
            Event::ControlRtt(m) => {
                self.rtt = Some(m.rtt);
                Decision::none()
            }
            Event::Peer(report) => self.on_peer(report),
            _ => Decision::none(),
        }
    }

    fn next_wakeup(&self) -> Option<Duration> {
        match (self.ctx.role, self.interval_start) {
            (Role::Sender, _) => None,
            (Role::Receiver, None) => Some(Duration::ZERO),
            (Role::Receiver, Some((at, _))) => Some(at.saturating_add(self.options.interval)),
        }
    }
}

#[cfg(test)]
mod tests;
