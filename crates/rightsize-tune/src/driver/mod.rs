//! The tuner driver: everything between a [`Tuner`] and a socket that is
//! logic, with no I/O and no clock.
//!
//! A [`Driver`] owns the tuner of one end of one data connection. The
//! system layer (`rightsize_sys::telemetry`) tells it what happened:
//! [`Driver::setup`] once the connection is up, [`Driver::sample`] at each
//! sample [`Schedule`] says is due, [`Driver::handle`] for any other input.
//! It then calls [`Driver::poll`] with the time now until it returns
//! [`Step::Idle`]: each [`Step::Op`] is a [`SocketOp`] to carry out and
//! answer with [`Driver::reply`] before polling again, each [`Step::Line`]
//! a telemetry decision line to write.
//!
//! What the driver guarantees, for each decision of the tuner in turn:
//!
//! 1. `TCP_INFO` of the data socket is asked for first, and only when an
//!    action sizes the socket (a buffer or the window clamp); every such
//!    size below [`MIN_SEGMENTS`] of the larger MSS it shows is raised to
//!    that floor, and the line says so in `raised_to_bytes`.
//! 2. The tuner's actions are asked for in its order. A size for a peer
//!    with no channel to it is not asked for; the line records why.
//! 3. After an `SO_RCVBUF` raise the window clamp is lifted to the largest
//!    read-back, unless the tuner has ever set the clamp itself (then the
//!    clamp is its window). Linux keeps the clamp it computed for the old
//!    buffer, so the window would stay where it was (measured: drs and
//!    freebsd stuck near 64 KiB, 6-9 Mbit/s at 200 Mbit/s x 100 ms); the
//!    kernel still offers no more window than the buffer's free space.
//!    Lifting a tuner's own clamp let `auto`'s window jump by the memory's
//!    margin into the bottleneck queue (30 losses, measured).
//! 4. After any action the buffers are read back once, for the stats.
//! 5. A decision with a record makes one line, stamped with the `now` of
//!    the poll that completes it; the actions in it carry what the kernel
//!    read back, the sysctl that capped it, or the error.
//!
//! A control-channel RTT is fed only when the tuner reads them, it changed
//! and it is not zero, and always before the sample of the same wake-up.
//! No input and no reply makes the driver panic; a reply that does not
//! fit its request leaves the action without a read-back.

mod line;
mod op;
mod schedule;

#[cfg(test)]
mod tests;

use std::collections::VecDeque;
use std::time::Duration;

use serde::Serialize;

use crate::tcpinfo::TcpInfoSample;
use crate::telemetry;
use crate::{Action, Decision, Event, PeerInfo, RttMeasurement, Sample, Settings, Tuner};

pub use line::{AppliedAction, DecisionLine};
pub use op::{Conn, MIN_SEGMENTS, NO_PEER, Reply, SocketOp, ToPeer, floor_bytes};
pub use schedule::{
    MAX_REPORT_EVERY, MIN_REPORT_EVERY, MIN_TUNER_GAP, Schedule, Wake, report_every,
};

/// The actions that put `settings` in force, in the order receive buffer,
/// send buffer, clamp (the clamp last: a buffer change may replace it).
/// The one mapping from settings to socket requests: the monitor applies
/// `after_connect` with it, and the FTP layer builds its pre-handshake
/// request from it.
pub fn settings_actions(settings: Settings) -> Vec<Action> {
    let mut actions = Vec::new();
    if let Some(b) = settings.rcvbuf {
        actions.push(Action::SetRcvBuf(b));
    }
    if let Some(b) = settings.sndbuf {
        actions.push(Action::SetSndBuf(b));
    }
    if let Some(b) = settings.window_clamp {
        actions.push(Action::SetWindowClamp(b));
    }
    actions
}

/// What the tuner can reach besides the data socket.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Links {
    /// Messages can go to the peer (it is rightsize and takes them).
    pub peer: bool,
    /// The control connection's `TCP_INFO` can be read.
    pub control: bool,
    /// Send this end's `TCP_INFO` summary to the peer every half RTT (a
    /// sender whose peer's tuner reads it); only with `peer`.
    pub report_info: bool,
}

/// What the system layer is to do next.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Carry this out and [`Driver::reply`] with what came of it.
    Op(SocketOp),
    /// Write this telemetry line.
    Line(DecisionLine),
    /// Nothing left until the next input.
    Idle,
}

/// A tuner's end-of-transfer summary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TunerSummary {
    /// As `--tune` names it.
    pub name: &'static str,
    /// Its state at the end.
    pub state: &'static str,
    /// Decisions recorded (actions, state changes, ignored inputs).
    pub decisions: u32,
    /// Actions that failed or could not be carried out (a size for a
    /// peer that takes none).
    pub actions_failed: u32,
    /// The peer is rightsize: the two ends' tuners talk (reports, sizes,
    /// pacing requests) through the RIGHTSIZE extension. Without it each
    /// end tunes alone.
    pub extension: bool,
    /// The sender paced the flow (`SO_MAX_PACING_RATE`): this end set a
    /// ceiling, or the peer reported one in force.
    pub paced: bool,
}

impl TunerSummary {
    /// Which case the tuner ran in, for people: with a rightsize peer or
    /// alone, and whether the sender paced.
    pub fn case(&self) -> &'static str {
        match (self.extension, self.paced) {
            (true, true) => "with a rightsize peer, paced",
            (true, false) => "with a rightsize peer, not paced",
            (false, true) => "alone, paced",
            (false, false) => "alone, not paced",
        }
    }
}

/// Drives one tuner: feeds it, turns its decisions into [`SocketOp`]s and
/// assembles the decision lines. See the module docs for the guarantees.
#[derive(Debug)]
pub struct Driver {
    tuner: Box<dyn Tuner>,
    links: Links,
    jobs: VecDeque<Job>,
    /// The decision being carried out.
    carry: Option<Carry>,
    /// The request asked for and not yet answered.
    waiting: Option<Waiting>,
    last_control_rtt_us: Option<u32>,
    /// The tuner set `TCP_WINDOW_CLAMP` on this connection: the clamp is
    /// its own, and raising `SO_RCVBUF` must not lift it.
    tuner_clamps: bool,
    /// The pacing ceiling in force on the socket (`SO_MAX_PACING_RATE` as
    /// read back), bits per second: this end's reports carry it.
    pace_bps: Option<u64>,
    /// A report from the peer said it paces.
    peer_paced: bool,
    decisions: u32,
    actions_failed: u32,
}

// Events are moved once into the queue and out again; boxing would only
// add an allocation per input.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
enum Job {
    /// Read the control connection's `TCP_INFO` for an RTT at `at`.
    ReadControl { at: Duration },
    /// Feed the tuner, then carry out its decision.
    Feed(Event),
    /// Carry out a decision made already (the `after_connect` settings).
    Carry(Carry),
}

#[derive(Debug, Clone, Copy)]
enum Waiting {
    Control { at: Duration, op: SocketOp },
    Carry(SocketOp),
}

/// One decision on its way to the socket.
#[derive(Debug)]
struct Carry {
    /// What prompted it, as the line names it.
    event: &'static str,
    decision: Decision,
    stage: Stage,
    /// Sizes for the socket below this are raised to it, bytes.
    floor: u64,
    /// One entry per request made (or refused), in order.
    applied: Vec<AppliedAction>,
}

/// Where a [`Carry`] is; a stage that asked for something stays until the
/// reply comes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Floor,
    Act(usize),
    Lift,
    ReadBack,
    Line,
    Done,
}

impl Carry {
    fn new(event: &'static str, decision: Decision) -> Self {
        Carry {
            event,
            decision,
            stage: Stage::Floor,
            floor: 0,
            applied: Vec::new(),
        }
    }
}

impl Driver {
    /// A driver for `tuner`, whose `pre_handshake` settings the caller
    /// applied before the handshake.
    pub fn new(tuner: Box<dyn Tuner>, links: Links) -> Self {
        Driver {
            tuner,
            links,
            jobs: VecDeque::new(),
            carry: None,
            waiting: None,
            last_control_rtt_us: None,
            tuner_clamps: false,
            pace_bps: None,
            peer_paced: false,
            decisions: 0,
            actions_failed: 0,
        }
    }

    /// The tuner driven.
    pub fn tuner(&self) -> &dyn Tuner {
        self.tuner.as_ref()
    }

    /// Queues the tuner's `after_connect` settings as a decision (event
    /// `setup`), if it has any.
    pub fn setup(&mut self) {
        let settings = self.tuner.setup().after_connect;
        if settings.is_empty() {
            return;
        }
        let decision = Decision::act(
            self.tuner.state(),
            settings_actions(settings),
            settings.rcvbuf.or(settings.sndbuf).unwrap_or_default(),
            "after the handshake",
        );
        self.jobs
            .push_back(Job::Carry(Carry::new("setup", decision)));
    }

    /// Queues a sample of the data socket, after a read of the control
    /// connection's RTT if the tuner reads those.
    pub fn sample(&mut self, sample: Sample) {
        if self.tuner.inputs().control_rtt && self.links.control {
            self.jobs.push_back(Job::ReadControl { at: sample.at });
        }
        self.jobs.push_back(Job::Feed(Event::Sample(sample)));
    }

    /// Queues any other input (peer reports, probe results).
    pub fn handle(&mut self, event: Event) {
        self.jobs.push_back(Job::Feed(event));
    }

    /// When the tuner wants its next sample (see [`Schedule`]).
    pub fn next_wakeup(&self) -> Option<Duration> {
        self.tuner.next_wakeup()
    }

    /// Whether this end sends its `TCP_INFO` summary to the peer.
    pub fn reports(&self) -> bool {
        self.links.report_info && self.links.peer
    }

    /// This end's report for the peer: its `TCP_INFO` summary with the
    /// pacing ceiling in force.
    pub fn report(&self, info: &TcpInfoSample) -> ToPeer {
        ToPeer::Info(PeerInfo {
            pace_bps: self.pace_bps,
            ..PeerInfo::from_tcp_info(info)
        })
    }

    /// The tuner's name and state, and how its decisions went.
    pub fn summary(&self) -> TunerSummary {
        TunerSummary {
            name: self.tuner.name(),
            state: self.tuner.state(),
            decisions: self.decisions,
            actions_failed: self.actions_failed,
            extension: self.links.peer,
            paced: self.pace_bps.is_some() || self.peer_paced,
        }
    }

    /// The next thing to do, `now` after the data connection opened. A
    /// request not yet answered is asked for again.
    pub fn poll(&mut self, now: Duration) -> Step {
        if let Some(waiting) = self.waiting {
            return Step::Op(match waiting {
                Waiting::Control { op, .. } | Waiting::Carry(op) => op,
            });
        }
        loop {
            let Some(mut carry) = self.carry.take() else {
                match self.jobs.pop_front() {
                    None => return Step::Idle,
                    Some(Job::ReadControl { at }) => {
                        let op = SocketOp::ReadTcpInfo {
                            socket: Conn::Control,
                        };
                        self.waiting = Some(Waiting::Control { at, op });
                        return Step::Op(op);
                    }
                    Some(Job::Feed(event)) => {
                        if let Event::Peer(report) = &event
                            && report.info.is_some_and(|i| i.pace_bps.is_some())
                        {
                            self.peer_paced = true;
                        }
                        let decision = self.tuner.on_event(&event);
                        self.carry = Some(Carry::new(event_name(&event), decision));
                    }
                    Some(Job::Carry(carry)) => self.carry = Some(carry),
                }
                continue;
            };
            let step = self.advance(&mut carry, now);
            if carry.stage != Stage::Done {
                self.carry = Some(carry);
            }
            if let Some(step) = step {
                return step;
            }
        }
    }

    /// Moves `carry` on by one stage; the step to hand out, if any.
    fn advance(&mut self, carry: &mut Carry, now: Duration) -> Option<Step> {
        let actions = &carry.decision.actions;
        match carry.stage {
            Stage::Floor => {
                if actions.iter().copied().any(op::sizes_socket) {
                    return Some(self.ask(SocketOp::ReadTcpInfo { socket: Conn::Data }));
                }
                carry.stage = Stage::Act(0);
            }
            Stage::Act(i) => {
                let Some(&action) = actions.get(i) else {
                    carry.stage = Stage::Lift;
                    return None;
                };
                let requested = SocketOp::from(action);
                let (op, raised) = requested.floored(carry.floor);
                let mut done = AppliedAction::requested(requested);
                done.raised_to_bytes = raised;
                if op.to_peer().is_some() && !self.links.peer {
                    done.error = Some(NO_PEER.to_owned());
                    self.actions_failed += 1;
                    carry.applied.push(done);
                    carry.stage = Stage::Act(i + 1);
                    return None;
                }
                carry.applied.push(done);
                return Some(self.ask(op));
            }
            Stage::Lift => {
                self.tuner_clamps |= actions
                    .iter()
                    .any(|a| matches!(a, Action::SetWindowClamp(_)));
                let raised = carry
                    .applied
                    .iter()
                    .filter(|a| matches!(a.action, SocketOp::SetRcvBuf { .. }))
                    .filter_map(|a| a.applied_bytes)
                    .max();
                if let (false, Some(buffer)) = (self.tuner_clamps, raised) {
                    let requested = SocketOp::SetWindowClamp { bytes: buffer };
                    let (op, raised) = requested.floored(carry.floor);
                    let mut done = AppliedAction::requested(requested);
                    done.raised_to_bytes = raised;
                    carry.applied.push(done);
                    return Some(self.ask(op));
                }
                carry.stage = Stage::ReadBack;
            }
            Stage::ReadBack => {
                if !actions.is_empty() {
                    return Some(self.ask(SocketOp::ReadBuffers));
                }
                carry.stage = Stage::Line;
            }
            Stage::Line => {
                carry.stage = Stage::Done;
                let record = carry.decision.record.take()?;
                self.decisions += 1;
                return Some(Step::Line(DecisionLine {
                    t_s: telemetry::seconds(now),
                    tuner: self.tuner.name().to_owned(),
                    event: carry.event.to_owned(),
                    state: record.state.to_owned(),
                    reason: record.reason,
                    requested_bytes: record.requested.map(|b| b.get()),
                    actions: std::mem::take(&mut carry.applied),
                }));
            }
            Stage::Done => {}
        }
        None
    }

    fn ask(&mut self, op: SocketOp) -> Step {
        self.waiting = Some(Waiting::Carry(op));
        Step::Op(op)
    }

    /// What came of the request [`Driver::poll`] handed out last; a reply
    /// with no request waiting is ignored.
    pub fn reply(&mut self, reply: Reply) {
        match self.waiting.take() {
            None => {}
            Some(Waiting::Control { at, .. }) => self.control_rtt(at, reply),
            Some(Waiting::Carry(_)) => {
                if let Some(mut carry) = self.carry.take() {
                    self.answer(&mut carry, reply);
                    self.carry = Some(carry);
                }
            }
        }
    }

    fn control_rtt(&mut self, at: Duration, reply: Reply) {
        let Reply::TcpInfo(Some(info)) = reply else {
            return;
        };
        if info.rtt_us == 0 || self.last_control_rtt_us == Some(info.rtt_us) {
            return;
        }
        self.last_control_rtt_us = Some(info.rtt_us);
        // Before the sample queued with this read.
        self.jobs
            .push_front(Job::Feed(Event::ControlRtt(RttMeasurement {
                at,
                rtt: Duration::from_micros(u64::from(info.rtt_us)),
            })));
    }

    fn answer(&mut self, carry: &mut Carry, reply: Reply) {
        match carry.stage {
            Stage::Floor => {
                let info = match &reply {
                    Reply::TcpInfo(info) => info.as_ref(),
                    _ => None,
                };
                carry.floor = floor_bytes(info);
                carry.stage = Stage::Act(0);
            }
            Stage::Act(i) => {
                if let Some(done) = carry.applied.last_mut() {
                    fill(done, reply);
                    if done.error.is_some() {
                        self.actions_failed += 1;
                    }
                    if let (SocketOp::SetMaxPacingRate { .. }, Some(b)) =
                        (done.action, done.applied_bytes)
                    {
                        self.pace_bps = Some(b.saturating_mul(8));
                    }
                }
                carry.stage = Stage::Act(i + 1);
            }
            Stage::Lift => {
                // The lift is the driver's, not the tuner's: a failure is
                // on the line but not counted against the tuner.
                if let Some(done) = carry.applied.last_mut() {
                    fill(done, reply);
                }
                carry.stage = Stage::ReadBack;
            }
            // The system layer keeps the read-back for its stats.
            Stage::ReadBack => carry.stage = Stage::Line,
            Stage::Line | Stage::Done => {}
        }
    }
}

/// Records what came of a setting (or a message to the peer).
fn fill(done: &mut AppliedAction, reply: Reply) {
    match reply {
        Reply::Applied { bytes, clamped_by } => {
            done.applied_bytes = Some(bytes);
            done.clamped_by = clamped_by;
        }
        Reply::Failed(error) => done.error = Some(error),
        Reply::Told | Reply::TcpInfo(_) | Reply::Buffers(_) => {}
    }
}

/// The event's name on a decision line.
pub fn event_name(event: &Event) -> &'static str {
    match event {
        Event::Sample(_) => "sample",
        Event::ControlRtt(_) => "control_rtt",
        Event::Train(_) => "train",
        Event::UdpProbes(_) => "udp_probes",
        Event::Peer(_) => "peer",
    }
}
