//! `freebsd`: FreeBSD's automatic send and receive buffer sizing (Andre
//! Oppermann's 2006 autosizing patch, docs/sources.md), in user space.
//!
//! Buffers start at FreeBSD's defaults (32 KiB send, 64 KiB receive) and
//! grow by a fixed step up to a limit, with the knobs `sendbuf_auto`,
//! `sendbuf_inc`, `sendbuf_max`, `recvbuf_auto`, `recvbuf_inc`,
//! `recvbuf_max` ([`FreeBsdOptions`], defaults 8 KiB / 256 KiB and
//! 16 KiB / 256 KiB as in the patch).
//!
//! - Receiver (`tcp_input.c` of the patch): bytes are counted over one RTT;
//!   if more than 7/8 of the buffer arrived within it (and the RTT is under
//!   a second), the buffer grows by `recvbuf_inc`, up to `recvbuf_max`.
//! - Sender (`tcp_output.c`): the buffer grows by `sendbuf_inc`, up to
//!   `sendbuf_max`, when the peer's window can take it (`snd_wnd x 5/4 >=
//!   buffer`), the buffer is at least 7/8 full, and the network could send
//!   all of its unsent data now (`min(snd_wnd, cwnd) >= unsent`). The
//!   kernel checks on every output; here it is checked every eighth of an
//!   RTT, one step per check.
//!
//! FreeBSD picks the window scale from `kern.ipc.maxsockbuf`, not from the
//! buffer; to get the same here the receive buffer is set to `recvbuf_max`
//! before the handshake and to 64 KiB after it.

use std::time::Duration;

use super::meter::{RateMeter, micros, scaled, show_bytes, show_ms};
use super::{
    Action, Context, Decision, Event, FreeBsdOptions, Inputs, Role, Sample, Settings, Setup,
};
use super::{Tuner, fixed::STOCK_BUFFER};
use crate::tcpinfo::TcpInfoSample;
use crate::units::Bytes;

/// FreeBSD's default send buffer, `net.inet.tcp.sendspace` (the patch:
/// "FreeBSD has a default 32K send socket buffer").
pub const SENDSPACE: Bytes = Bytes(32 * 1024);

/// FreeBSD's default receive buffer, `net.inet.tcp.recvspace` (the patch:
/// "a default of 64K buffer").
pub const RECVSPACE: Bytes = STOCK_BUFFER;

/// The receive side measures only RTTs shorter than this (`hz` ticks).
const MAX_MEASURED_RTT: Duration = Duration::from_secs(1);

/// The sender checks this many times per RTT.
const SENDER_CHECKS_PER_RTT: f64 = 8.0;

/// Before an RTT is known, sample this often.
const DEFAULT_PERIOD: Duration = Duration::from_millis(100);

/// FreeBSD-style sizing at one end.
#[derive(Debug, Clone)]
pub struct FreeBsd {
    ctx: Context,
    options: FreeBsdOptions,
    /// `sb_hiwat` of the buffer this end sizes (receive on a receiver,
    /// send on a sender), as the request, bytes.
    hiwat: Bytes,
    rtt: Option<Duration>,
    period_start: Option<(Duration, u64)>,
    meter: RateMeter,
    said_missing: bool,
}

impl FreeBsd {
    /// FreeBSD sizing for the end `ctx` describes.
    pub fn new(ctx: Context, options: FreeBsdOptions) -> Self {
        let hiwat = match ctx.role {
            Role::Receiver => RECVSPACE,
            Role::Sender => SENDSPACE,
        };
        FreeBsd {
            ctx,
            options,
            hiwat,
            rtt: None,
            period_start: None,
            meter: RateMeter::default(),
            said_missing: false,
        }
    }

    fn auto(&self) -> bool {
        match self.ctx.role {
            Role::Receiver => self.options.recvbuf_auto,
            Role::Sender => self.options.sendbuf_auto,
        }
    }

    /// The growth limit: the knob, and never above what the kernel takes.
    fn max(&self) -> Bytes {
        match self.ctx.role {
            Role::Receiver => self.options.recvbuf_max.min(self.ctx.limits.rmem_max),
            Role::Sender => self.options.sendbuf_max.min(self.ctx.limits.wmem_max),
        }
    }

    fn period(&self) -> Duration {
        let rtt = self.rtt.unwrap_or(DEFAULT_PERIOD);
        match self.ctx.role {
            Role::Receiver => rtt,
            Role::Sender => scaled(rtt, 1.0 / SENDER_CHECKS_PER_RTT),
        }
    }

    fn grow(&mut self, why: String) -> Decision {
        let inc = match self.ctx.role {
            Role::Receiver => self.options.recvbuf_inc,
            Role::Sender => self.options.sendbuf_inc,
        };
        let max = self.max();
        if self.hiwat >= max {
            return Decision::none();
        }
        self.hiwat = Bytes(self.hiwat.get().saturating_add(inc.get())).min(max);
        let action = match self.ctx.role {
            Role::Receiver => Action::SetRcvBuf(self.hiwat),
            Role::Sender => Action::SetSndBuf(self.hiwat),
        };
        Decision::act(
            self.state(),
            vec![action],
            self.hiwat,
            format!(
                "{why}; buffer += {} = {} (max {})",
                show_bytes(inc),
                show_bytes(self.hiwat),
                show_bytes(max)
            ),
        )
    }

    fn on_sample(&mut self, sample: &Sample) -> Decision {
        if let Err(e) = self.meter.push(sample.at, sample.bytes) {
            return Decision::note(self.state(), e.reason());
        }
        let info = sample.tcp_info.as_ref();
        let own_rtt = info.and_then(|i| match self.ctx.role {
            Role::Receiver => micros(i.rcv_rtt_us),
            Role::Sender => micros(i.rtt_us),
        });
        if let Some(rtt) = own_rtt {
            self.rtt = Some(rtt);
        }
        let Some((start_at, start_bytes)) = self.period_start else {
            self.period_start = Some((sample.at, sample.bytes));
            return Decision::none();
        };
        let elapsed = sample.at.saturating_sub(start_at);
        if elapsed < self.period() || !self.auto() {
            return Decision::none();
        }
        self.period_start = Some((sample.at, sample.bytes));
        match self.ctx.role {
            Role::Receiver => self.receiver(sample.bytes.saturating_sub(start_bytes), elapsed),
            Role::Sender => match info {
                Some(info) => self.sender(info),
                None => self.missing("no TCP_INFO"),
            },
        }
    }

    fn receiver(&mut self, bytes: u64, elapsed: Duration) -> Decision {
        let Some(rtt) = self.rtt else {
            return Decision::none();
        };
        if rtt >= MAX_MEASURED_RTT {
            return Decision::none();
        }
        // Bytes per RTT, if the driver sampled late.
        let per_rtt = bytes as f64 * rtt.as_secs_f64() / elapsed.as_secs_f64();
        if per_rtt <= self.hiwat.get() as f64 * 7.0 / 8.0 {
            return Decision::none();
        }
        self.grow(format!(
            "{} arrived in one RTT ({}), over 7/8 of the buffer",
            show_bytes(Bytes(per_rtt as u64)),
            show_ms(rtt)
        ))
    }

    fn sender(&mut self, info: &TcpInfoSample) -> Decision {
        let (Some(snd_wnd), Some(notsent)) = (info.snd_wnd_bytes, info.notsent_bytes) else {
            return self.missing("TCP_INFO lacks snd_wnd (5.4) or notsent_bytes (4.6)");
        };
        let snd_wnd = u64::from(snd_wnd);
        let inflight = info.inflight_bytes();
        let queued = inflight.saturating_add(u64::from(notsent));
        let hiwat = self.hiwat.get();
        let peer_can_take = snd_wnd / 4 * 5 >= hiwat;
        let nearly_full = queued >= hiwat / 8 * 7;
        let network_can_send = snd_wnd.min(info.snd_cwnd_bytes()) >= u64::from(notsent);
        if !(peer_can_take && nearly_full && network_can_send) {
            return Decision::none();
        }
        self.grow(format!(
            "{} queued of {}, peer window {}",
            show_bytes(Bytes(queued)),
            show_bytes(self.hiwat),
            show_bytes(Bytes(snd_wnd))
        ))
    }

    fn missing(&mut self, what: &str) -> Decision {
        if std::mem::replace(&mut self.said_missing, true) {
            return Decision::none();
        }
        Decision::note(
            self.state(),
            format!("{what}: the send buffer cannot be judged and stays as it is"),
        )
    }
}

impl Tuner for FreeBsd {
    fn name(&self) -> &'static str {
        "freebsd"
    }

    fn state(&self) -> &'static str {
        if !self.auto() {
            "fixed"
        } else if self.hiwat >= self.max() {
            "at-max"
        } else {
            "growing"
        }
    }

    fn setup(&self) -> Setup {
        let scale_for = if self.options.recvbuf_auto {
            self.options
                .recvbuf_max
                .max(RECVSPACE)
                .min(self.ctx.limits.rmem_max)
        } else {
            RECVSPACE
        };
        Setup {
            pre_handshake: Settings {
                rcvbuf: Some(scale_for),
                sndbuf: Some(SENDSPACE),
                window_clamp: None,
            },
            after_connect: Settings {
                rcvbuf: (scale_for != RECVSPACE).then_some(RECVSPACE),
                sndbuf: None,
                window_clamp: None,
            },
        }
    }

    fn inputs(&self) -> Inputs {
        // The kernel's RTT, or the control channel's before it has one.
        Inputs {
            control_rtt: true,
            ..Inputs::default()
        }
    }

    fn on_event(&mut self, event: &Event) -> Decision {
        match event {
            Event::Sample(sample) => self.on_sample(sample),
            Event::ControlRtt(m) if self.rtt.is_none() && !m.rtt.is_zero() => {
                self.rtt = Some(m.rtt);
                Decision::none()
            }
            _ => Decision::none(),
        }
    }

    fn next_wakeup(&self) -> Option<Duration> {
        if !self.auto() || self.hiwat >= self.max() {
            return None;
        }
        Some(
            self.period_start
                .map_or(Duration::ZERO, |(at, _)| at.saturating_add(self.period())),
        )
    }
}

#[cfg(test)]
mod tests;
