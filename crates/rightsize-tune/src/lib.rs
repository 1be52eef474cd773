//! rightsize's tuning domain, pure: units and their parsing, UTC calendar
//! dates from Unix time, bandwidth-delay arithmetic, `TCP_INFO` values and telemetry records, host facts, the
//! host-tuning advice and checks, the diagnosis of a transfer's limit, the
//! write size, the socket-buffer tuners with their fluid model, and the
//! driver that turns their decisions into socket requests. Nothing
//! here does I/O or reads a clock; time is an argument.
//!
//! # Tuners
//!
//! Socket-buffer tuners as pure state machines: fed measurements, they
//! return the buffer actions to take.
//!
//! A tuner is chosen by a [`TunerSpec`] (the `--tune` value) and built for
//! one end of one data connection ([`Context`]: receiver or sender, and the
//! kernel's [`Limits`]). Then:
//!
//! 1. the FTP layer applies [`Tuner::setup`]'s `pre_handshake` settings
//!    before `connect()`/`listen()` (Linux fixes the window scale at the
//!    handshake, see `docs/linux-tcp.md`), mapped to socket
//!    requests by [`driver::settings_actions`];
//! 2. a [`driver::Driver`], run by the system layer's monitor, applies the
//!    `after_connect` settings as soon as the connection is up and feeds
//!    [`Event`]s: a [`Sample`] at [`Tuner::next_wakeup`] (or whenever it
//!    samples for telemetry), control-channel RTTs, probe results and what
//!    the peer reported;
//! 3. it turns each [`Decision`]'s [`Action`]s into [`driver::SocketOp`]s
//!    for the system layer, which carries them out and reads back what the
//!    kernel kept; the driver logs the [`DecisionRecord`] with the
//!    read-backs, and the read-back value comes in the next sample.
//!
//! Guarantees: no tuner does I/O or reads a clock (time is the `at` of each
//! event, a [`Duration`] since the data connection opened); no input makes a
//! tuner panic; every size a tuner asks for is within [`Limits`] except
//! `static:SIZE`, which passes the user's size through so that the read-back
//! shows the clamp; an input a tuner refuses (a malformed or absurd peer
//! report, a clock that went backwards) produces a record that says why.
//!
//! Sizes in [`Action::SetRcvBuf`] and [`Action::SetSndBuf`] are `setsockopt`
//! arguments: Linux doubles them, so the read-back is about twice the
//! request. How much of a receive buffer becomes window depends on the
//! kernel: half on kernels before 6.5, a measured ratio since (about 0.89 of
//! the read-back over a 1500-byte veth on 6.18, so 1.78 x the request);
//! `auto` and `sobas`, which mean a window, learn the ratio from
//! `tcpi_rcv_wnd`. Seen on 6.18, and why `auto` sets `TCP_WINDOW_CLAMP` and
//! re-applies it: raising `SO_RCVBUF` after the handshake may leave the
//! window at the clamp the handshake fixed, and the kernel replaces an
//! application's clamp with `ratio x buffer` when it re-measures the ratio.

pub mod advice;
pub mod bdp;
pub mod budget;
pub mod check;
pub mod civil;
pub mod crowd;
pub mod diagnose;
pub mod driver;
pub mod host;
pub mod streams;
pub mod tcpinfo;
pub mod telemetry;
pub mod units;
pub mod write_size;

mod auto;
mod drs;
mod fixed;
mod freebsd;
mod held;
mod input;
mod meter;
mod sobas;
mod spec;

#[cfg(test)]
mod tests;

use std::fmt;
use std::time::Duration;

use serde::Serialize;

use crate::bdp::DEFAULT_MSS;
use crate::host::HostSettings;
use crate::units::Bytes;

/// The largest buffer size a peer may name (`SBUF`, a peer report): the
/// largest `int` a buffer sysctl takes.
pub const MAX_BUFFER_BYTES: u64 = i32::MAX as u64;

pub use auto::INITIAL_WINDOW;
pub use fixed::STOCK_BUFFER;
pub use held::{CLAMP_CHECK_INTERVAL, Held};
pub use input::{
    Event, MAX_PLAUSIBLE_RATE_BPS, MAX_PLAUSIBLE_RTT, MIN_PLAUSIBLE_PACE_BPS, PeerInfo, PeerReport,
    PeerReportError, RttMeasurement, Sample, TrainProbe, UdpProbeReport,
};
pub use sobas::TRAINS;
pub use spec::{
    ACCEPTED, DRS_DEFAULT_INTERVAL, DRS_MIN_INTERVAL, DrsOptions, FreeBsdOptions, SpecError,
    TunerSpec,
};

/// Which way the data flows through this end of the data connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// This end reads the data (RETR on the client, STOR on the server).
    Receiver,
    /// This end writes the data.
    Sender,
}

/// What the kernel allows, read by the caller from `/proc/sys` before the
/// connection opens. All sizes are bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Limits {
    /// The largest `SO_RCVBUF` request the kernel applies as given:
    /// `net.core.rmem_max` (the kernel stores twice it), or more when the
    /// caller uses `SO_RCVBUFFORCE`.
    pub rmem_max: Bytes,
    /// The largest `SO_SNDBUF` request: `net.core.wmem_max`, or more with
    /// `SO_SNDBUFFORCE`.
    pub wmem_max: Bytes,
    /// `net.ipv4.tcp_rmem[2]`: how far receive autotuning grows a buffer.
    pub tcp_rmem_max: Bytes,
    /// `net.ipv4.tcp_wmem[2]`: how far send autotuning grows a buffer.
    pub tcp_wmem_max: Bytes,
    /// The segment size of the data connection (`tcpi_snd_mss`), bytes;
    /// SOBAS grows by one per RTT.
    pub mss: Bytes,
}

impl Limits {
    /// The limits of a host as read by `advise --check`; a value that could
    /// not be read falls back to the untuned Linux default of
    /// [`HostSettings::linux_defaults`], and the MSS to [`DEFAULT_MSS`] when
    /// `mss` is `None`.
    pub fn from_host(host: &HostSettings, mss: Option<u64>) -> Self {
        let defaults = HostSettings::linux_defaults();
        // `linux_defaults` fills every key, so the last fallback is moot.
        let or_default =
            |value: Option<u64>, default: Option<u64>| Bytes(value.or(default).unwrap_or_default());
        let max = |t: Option<crate::host::BufferTriple>| t.map(|t| t.max);
        Limits {
            rmem_max: or_default(host.rmem_max, defaults.rmem_max),
            wmem_max: or_default(host.wmem_max, defaults.wmem_max),
            tcp_rmem_max: or_default(max(host.tcp_rmem), max(defaults.tcp_rmem)),
            tcp_wmem_max: or_default(max(host.tcp_wmem), max(defaults.tcp_wmem)),
            mss: Bytes(mss.filter(|&m| m > 0).unwrap_or(DEFAULT_MSS)),
        }
    }
}

/// What the other end is, as the control connection negotiated it before
/// the data connection opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Peer {
    /// The peer is rightsize with the in-transfer extension turned on: it
    /// sends [`PeerReport`]s (its `TCP_INFO` summary) and acts on sizes.
    Rightsize,
    /// Any other peer: no reports will come.
    #[default]
    Other,
}

/// Everything a tuner is built for: this end's role, the kernel's limits
/// and what the peer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Context {
    /// Receiver or sender of the data.
    pub role: Role,
    /// What the kernel allows.
    pub limits: Limits,
    /// Whether the peer reports; only `auto` cares (a sender whose peer
    /// is rightsize leaves the window to the receiver).
    pub peer: Peer,
    /// The congestion control this end's connection runs.
    pub congestion: Congestion,
}

/// The congestion control of this end's connection (`TCP_CONGESTION`), as
/// far as a tuner cares: whether it paces its own sending at its own
/// estimate of the path's rate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Congestion {
    /// A loss-based one (`cubic`, `reno`, ...), or one not known: it sends
    /// what its window lets out, unpaced unless asked.
    #[default]
    WindowBased,
    /// `bbr` (any version): it paces at its own estimate of the path's
    /// rate, with gains above it to probe, and takes no random loss for
    /// congestion.
    Bbr,
}

impl Congestion {
    /// The congestion control `name` (`getsockopt(TCP_CONGESTION)`, or
    /// `net.ipv4.tcp_congestion_control`) names.
    pub fn from_name(name: &str) -> Self {
        if name.trim().starts_with("bbr") {
            Congestion::Bbr
        } else {
            Congestion::WindowBased
        }
    }
}

impl Context {
    /// A receiver whose sender is not rightsize: no reports, no packet
    /// trains and no pacing, its own `TCP_INFO` all it sees.
    pub fn receiver_alone(&self) -> bool {
        self.role == Role::Receiver && self.peer == Peer::Other
    }
}

/// What a tuner uses besides its samples, so that the driver probes, and
/// asks the peer, only for what will be read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Inputs {
    /// RTTs measured on the control channel ([`Event::ControlRtt`]).
    pub control_rtt: bool,
    /// Five packet trains before the transfer ([`Event::Train`], [`TRAINS`]).
    pub trains: bool,
    /// The UDP probe stream's reports ([`Event::UdpProbes`]).
    pub udp_probes: bool,
    /// The peer's messages: sizes it tells, and its `TCP_INFO` summary
    /// when it is rightsize ([`Event::Peer`]).
    pub peer_messages: bool,
}

/// Socket settings to apply at one moment; `None` leaves a setting alone
/// (and, for a buffer, the kernel's autotuning of it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Settings {
    /// `SO_RCVBUF` request, bytes (the kernel stores about twice it).
    pub rcvbuf: Option<Bytes>,
    /// `SO_SNDBUF` request, bytes (the kernel stores about twice it).
    pub sndbuf: Option<Bytes>,
    /// `TCP_WINDOW_CLAMP`, bytes: the largest receive window to advertise.
    pub window_clamp: Option<Bytes>,
}

impl Settings {
    /// Whether nothing is to be set.
    pub fn is_empty(&self) -> bool {
        *self == Settings::default()
    }
}

/// What to set before the handshake and right after it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Setup {
    /// Applied before `connect()` / `listen()`: this decides the window
    /// scale, and so the largest window the connection can ever offer.
    pub pre_handshake: Settings,
    /// Applied once the connection is established (or accepted), before
    /// the first byte of data.
    pub after_connect: Settings,
}

/// One thing for the driver to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "action", content = "bytes", rename_all = "snake_case")]
pub enum Action {
    /// `setsockopt(SO_RCVBUF)` with this request, bytes.
    SetRcvBuf(Bytes),
    /// `setsockopt(SO_SNDBUF)` with this request, bytes.
    SetSndBuf(Bytes),
    /// `setsockopt(TCP_WINDOW_CLAMP)` with this window, bytes.
    SetWindowClamp(Bytes),
    /// Tell the peer this size, bytes, over the control channel (drsFTP's
    /// in-transfer `SBUF`, the drsFTP paper, section 3.5): the receive window this
    /// end offers, so that a sending peer keeps its send buffer in step.
    TellPeer(Bytes),
    /// `setsockopt(SO_MAX_PACING_RATE)` with this ceiling, bytes per second
    /// (the kernel's unit). Setting it also turns on the kernel's own
    /// pacing, so a window-limited sender spreads the bursts a growing
    /// window would send at line rate. [`NO_PACING_CEILING`] lifts it.
    SetMaxPacingRate(Bytes),
    /// Ask the sending peer for this pacing ceiling, bytes per second (the
    /// `pace` fact of an `RINF` or a `RIGHTSIZE INFO` notice, in bit/s).
    TellPeerPace(Bytes),
}

/// The `SO_MAX_PACING_RATE` of no ceiling (the kernel's `~0`): it lifts a
/// ceiling and leaves pacing as it was; once on, the kernel's own pacing
/// stays on at its rate for the congestion window.
pub const NO_PACING_CEILING: Bytes = Bytes(u64::MAX);

/// An `SO_MAX_PACING_RATE` no path reaches, one below the kernel's `~0`
/// (which leaves pacing off): it turns on the kernel's own pacing, at the
/// kernel's rate for the congestion window (twice the window per smoothed
/// RTT in slow start, 1.2 times after it, Linux's `tcp_pacing_ss_ratio`
/// and `tcp_pacing_ca_ratio`), and caps nothing.
pub const KERNEL_PACING: Bytes = Bytes(u64::MAX - 1);

/// Why a tuner did what it did, for the telemetry file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DecisionRecord {
    /// The tuner's state after the event (e.g. `slow-start`, `cruise`).
    pub state: &'static str,
    /// Short human text with the numbers behind the decision.
    pub reason: String,
    /// The size the tuner now wants, bytes: the window for `auto` and
    /// `sobas` (the actions say what request carries it), the buffer
    /// request for the others; `None` if it asks for nothing.
    pub requested: Option<Bytes>,
}

/// A tuner's answer to one event.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Decision {
    /// What to apply, in order.
    pub actions: Vec<Action>,
    /// Present when something happened: an action, a change of state, or
    /// an input that was ignored (with the reason).
    pub record: Option<DecisionRecord>,
}

impl Decision {
    /// Nothing to do and nothing to say.
    pub fn none() -> Self {
        Decision::default()
    }

    /// No action, but a record (a state change, an ignored input).
    pub fn note(state: &'static str, reason: impl Into<String>) -> Self {
        Decision {
            actions: Vec::new(),
            record: Some(DecisionRecord {
                state,
                reason: reason.into(),
                requested: None,
            }),
        }
    }

    /// Actions with their record.
    pub fn act(
        state: &'static str,
        actions: Vec<Action>,
        requested: Bytes,
        reason: impl Into<String>,
    ) -> Self {
        Decision {
            actions,
            record: Some(DecisionRecord {
                state,
                reason: reason.into(),
                requested: Some(requested),
            }),
        }
    }

    /// Appends `other`: its actions after these, its reason after this
    /// one's (joined by `; `); the size asked for stays this record's if
    /// it names one. Without a record of its own, this takes `other`'s.
    pub fn and(&mut self, other: Decision) {
        self.actions.extend(other.actions);
        match (self.record.as_mut(), other.record) {
            (Some(record), Some(more)) => {
                record.reason = format!("{}; {}", record.reason, more.reason);
                record.requested = record.requested.or(more.requested);
            }
            (None, more) => self.record = more,
            (Some(_), None) => {}
        }
    }
}

/// A socket-buffer tuner for one end of one data connection.
///
/// Build one with [`TunerSpec::build`]. Every method is cheap and pure.
pub trait Tuner: fmt::Debug + Send {
    /// The tuner's name as `--tune` spells it (`stock`, `drs`, ...), or
    /// `manual` for buffers set by hand ([`Held`]).
    fn name(&self) -> &'static str;

    /// The current state's name, for telemetry between decisions.
    fn state(&self) -> &'static str;

    /// What to set before the handshake and right after it.
    fn setup(&self) -> Setup;

    /// Which events besides samples it reads.
    fn inputs(&self) -> Inputs;

    /// Takes one measurement or report and says what to do.
    fn on_event(&mut self, event: &Event) -> Decision;

    /// When the tuner wants the next [`Sample`], as time since the data
    /// connection opened; `None` if it never needs one (the driver may
    /// still sample for telemetry; extra samples do no harm).
    fn next_wakeup(&self) -> Option<Duration>;
}

impl TunerSpec {
    /// The tuner this spec stands for, at the end `ctx` describes.
    pub fn build(&self, ctx: Context) -> Box<dyn Tuner> {
        match self {
            TunerSpec::Stock => Box::new(fixed::Fixed::stock(ctx)),
            TunerSpec::Static(size) => Box::new(fixed::Fixed::sized(ctx, *size)),
            TunerSpec::Kernel => Box::new(fixed::Fixed::kernel(ctx)),
            TunerSpec::Drs(options) => Box::new(drs::Drs::new(ctx, *options)),
            TunerSpec::Sobas => Box::new(sobas::Sobas::new(ctx)),
            TunerSpec::FreeBsd(options) => Box::new(freebsd::FreeBsd::new(ctx, *options)),
            TunerSpec::Auto => auto::new(ctx),
        }
    }
}
