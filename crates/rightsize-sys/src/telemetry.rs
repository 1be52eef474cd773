//! A thread that watches one data connection: it samples the socket into
//! telemetry lines and drives the connection's tuner.
//!
//! [`Monitor::start`] applies the tuner's `after_connect` settings, writes
//! the telemetry [`Header`] line if there is a file, then a thread wakes at
//! each telemetry tick (writing a `"sample"` line), at each time the tuner
//! asks for a sample, and when an input arrives on the [`Inbox`] (what the
//! peer said, probe results). Each wake-up reads `TCP_INFO` and the buffers
//! of the socket, feeds the tuner, applies its actions with
//! `rightsize_sys::socket`, reads back what the kernel kept (fed in the
//! next sample) and writes one `"decision"` line per decision. The control
//! connection's `tcpi_rtt` feeds tuners that want control-channel RTTs. A
//! sender whose peer reads them sends its `TCP_INFO` summary every half
//! RTT through the [`ToPeer`] callback, which also carries the sizes a
//! tuner tells the peer.
//!
//! [`Monitor::finish`] stops the thread at once, writes the `"final"` line
//! and returns it with the buffers' peak and mean and the tuner's last
//! state. The thread works on a clone of the socket's descriptor, so the
//! socket stays readable after the transfer closes it; a reading that fails
//! leaves its fields out instead of ending the thread; a failed write ends
//! the telemetry file (reported by `finish`) but not the tuning. Every line
//! is flushed as it is written, so a live plot can follow it.

use std::io::{self, Write};
use std::net::TcpStream;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rightsize_tune::tcpinfo::TcpInfoSample;
use rightsize_tune::telemetry::{
    self, AppliedAction, BufferReading, BufferStats, BufferSummary, DecisionLine, Header,
    IntervalError, Record, RecordKind, Recorder,
};
use rightsize_tune::units::Bytes;
use rightsize_tune::{
    Action, Decision, Event, PeerInfo, PeerReport, RttMeasurement, Sample, Settings, Tuner,
};
use serde::Serialize;

use crate::{socket, tcp_info};

/// Telemetry that could not be started or finished.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// The interval is too short.
    #[error(transparent)]
    Interval(#[from] IntervalError),
    /// The socket's descriptor could not be duplicated for the thread.
    #[error("dup of the data socket (fd {fd}) for telemetry")]
    Clone {
        /// The socket's descriptor.
        fd: RawFd,
        /// What the OS said.
        #[source]
        source: io::Error,
    },
    /// The thread could not be started.
    #[error("starting the telemetry thread")]
    Spawn {
        /// What the OS said.
        #[source]
        source: io::Error,
    },
    /// A line could not be written; the file stops there.
    #[error("writing the telemetry {line} line")]
    Write {
        /// `header`, `sample`, `decision` or `final`.
        line: &'static str,
        /// What the writer said.
        #[source]
        source: io::Error,
    },
    /// The sampling thread panicked (a bug).
    #[error("the telemetry thread panicked")]
    Panicked,
}

/// Where the telemetry lines go.
pub struct TelemetryOut {
    /// The file (or any writer); each line is flushed.
    pub out: Box<dyn Write + Send>,
    /// The header line; `interval_us` is filled in.
    pub header: Header,
    /// How often a `"sample"` line is written.
    pub interval: Duration,
}

impl std::fmt::Debug for TelemetryOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TelemetryOut")
            .field("interval", &self.interval)
            .finish_non_exhaustive()
    }
}

/// Something for the peer, to send over the control connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToPeer {
    /// A size the tuner tells the peer (drsFTP's in-transfer `SBUF`).
    Size(Bytes),
    /// This end's `TCP_INFO` summary.
    Info(PeerInfo),
}

/// The tuner of one data connection and what it talks to.
pub struct Tuning {
    /// The tuner, built for this end; its `pre_handshake` settings were
    /// applied before the handshake by the caller.
    pub tuner: Box<dyn Tuner>,
    /// A clone of the control connection, whose `tcpi_rtt` is fed as
    /// control-channel RTTs to a tuner that wants them.
    pub control: Option<TcpStream>,
    /// Where sizes and reports for the peer go; `None` when the peer does
    /// not take them (not rightsize, or the extension is off). Must not
    /// block for long: it runs on the monitor thread.
    pub to_peer: Option<Box<dyn FnMut(ToPeer) + Send>>,
    /// Whether to send this end's `TCP_INFO` summary to the peer every
    /// half RTT (a sender whose peer's tuner reads it).
    pub report_info: bool,
}

impl std::fmt::Debug for Tuning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tuning")
            .field("tuner", &self.tuner)
            .field("control", &self.control)
            .field("to_peer", &self.to_peer.is_some())
            .field("report_info", &self.report_info)
            .finish()
    }
}

/// What a finished monitor reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finished {
    /// The final telemetry record, taken at `finish`.
    pub record: Record,
    /// Peak and mean buffers over the connection.
    pub buffers: BufferSummary,
    /// The tuner's name and last state, and how many decisions it made.
    pub tuner: Option<TunerSummary>,
    /// Why the telemetry file stopped early (the first failed write);
    /// the tuning went on regardless.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub telemetry_error: Option<String>,
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
}

/// Inputs for the monitor from other threads (the control connection's
/// reader, the probes); cheap to clone. Inputs sent after the monitor
/// stopped are dropped.
#[derive(Debug, Clone)]
pub struct Inbox {
    tx: mpsc::Sender<Msg>,
    opened: Instant,
}

impl Inbox {
    /// The peer told a size or sent its `TCP_INFO` summary.
    pub fn peer(&self, info: Option<PeerInfo>, size: Option<Bytes>) {
        let _ = self.tx.send(Msg::Event(Event::Peer(PeerReport {
            at: self.opened.elapsed(),
            info,
            size,
        })));
    }

    /// Any other event; its `at` counts from [`Inbox::opened`].
    pub fn event(&self, event: Event) {
        let _ = self.tx.send(Msg::Event(event));
    }

    /// When the monitor started.
    pub fn opened(&self) -> Instant {
        self.opened
    }
}

// Events are rare (a few per RTT) and moved once: boxing would only add an
// allocation per message.
#[allow(clippy::large_enum_variant)]
enum Msg {
    Event(Event),
    /// Sent by [`Monitor::finish`] and on drop: inbox clones held
    /// elsewhere must not keep the thread alive.
    Stop,
}

/// A running monitor; dropping it without [`Monitor::finish`] stops the
/// thread and writes no final line.
#[derive(Debug)]
pub struct Monitor {
    inbox: Option<Inbox>,
    thread: Option<JoinHandle<Worker>>,
    last: Arc<Mutex<Option<Record>>>,
}

/// Sampling when neither telemetry nor the tuner asks for more: often
/// enough to see a buffer's peak.
const BASE_INTERVAL: Duration = telemetry::DEFAULT_INTERVAL;
/// The closest two tuner samples may be.
const MIN_TUNER_GAP: Duration = Duration::from_millis(1);
/// No buffer or clamp is set below this many of the connection's
/// segments: a window under a few segments stalls TCP (silly-window
/// avoidance waits for the persist timer). Tuners size in 1448-byte
/// segments before they can know the MSS; loopback's is 65,483.
const MIN_SEGMENTS: u64 = 4;

/// Bounds of the peer-report period (half the smoothed RTT).
const MIN_REPORT_EVERY: Duration = Duration::from_millis(10);
const MAX_REPORT_EVERY: Duration = Duration::from_millis(250);

/// What the thread owns, handed back when it stops.
struct Worker {
    socket: TcpStream,
    bytes: Arc<AtomicU64>,
    out: Option<Box<dyn Write + Send>>,
    write_error: Option<TelemetryError>,
    interval: Option<Duration>,
    recorder: Recorder,
    stats: BufferStats,
    tuning: Option<Tuning>,
    decisions: u32,
    actions_failed: u32,
    last_control_rtt: Option<u32>,
    /// The tuner set `TCP_WINDOW_CLAMP` on this connection: the clamp is
    /// its own, and raising `SO_RCVBUF` must not lift it.
    tuner_clamps: bool,
    /// The pacing ceiling in force on the socket (`SO_MAX_PACING_RATE` as
    /// read back), bits per second: this end's reports carry it.
    pace_bps: Option<u64>,
    opened: Instant,
    last: Arc<Mutex<Option<Record>>>,
}

impl Monitor {
    /// Starts watching `socket` (the data connection, just opened): times
    /// count from this call. `bytes` is the payload counter the transfer
    /// loop advances. With `telemetry`, writes its header now (an error if
    /// that fails or the interval is below `telemetry::MIN_INTERVAL`);
    /// with `tuning`, applies the tuner's `after_connect` settings before
    /// returning, so they are in force before the first byte.
    pub fn start(
        socket: &TcpStream,
        bytes: Arc<AtomicU64>,
        telemetry: Option<TelemetryOut>,
        tuning: Option<Tuning>,
    ) -> Result<Monitor, TelemetryError> {
        let socket = socket.try_clone().map_err(|source| TelemetryError::Clone {
            fd: socket.as_raw_fd(),
            source,
        })?;
        let (out, interval) = match telemetry {
            Some(TelemetryOut {
                mut out,
                header,
                interval,
            }) => {
                let interval = telemetry::check_interval(interval)?;
                let mut header = header;
                header.interval_us = Some(u64::try_from(interval.as_micros()).unwrap_or(u64::MAX));
                write_line(&mut out, &header, "header")?;
                (Some(out), Some(interval))
            }
            None => (None, None),
        };
        let last = Arc::new(Mutex::new(None));
        let opened = Instant::now();
        let mut worker = Worker {
            socket,
            bytes,
            out,
            write_error: None,
            interval,
            recorder: Recorder::new(),
            stats: BufferStats::default(),
            tuning,
            decisions: 0,
            actions_failed: 0,
            last_control_rtt: None,
            tuner_clamps: false,
            pace_bps: None,
            opened,
            last: Arc::clone(&last),
        };
        worker.setup();
        let (tx, rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("rightsize-monitor".into())
            .spawn(move || worker.run(&rx))
            .map_err(|source| TelemetryError::Spawn { source })?;
        Ok(Monitor {
            inbox: Some(Inbox { tx, opened }),
            thread: Some(thread),
            last,
        })
    }

    /// Where other threads send the peer's reports and probe results.
    pub fn inbox(&self) -> Option<Inbox> {
        self.inbox.clone()
    }

    /// The latest sample, for a progress display.
    pub fn last(&self) -> Option<Record> {
        self.last.lock().ok().and_then(|last| last.clone())
    }

    /// Stops the thread, takes the final reading and writes the final line.
    /// A telemetry line that could not be written is reported in
    /// [`Finished::telemetry_error`]; the error is for a thread that died.
    pub fn finish(mut self) -> Result<Finished, TelemetryError> {
        let mut worker = self.stop_thread()?;
        let at = worker.opened.elapsed();
        let (buffers, info) = worker.observe(at);
        let record = worker.record(RecordKind::Final, at, buffers, info.as_ref());
        worker.write("final", &record);
        let telemetry_error = worker.write_error.take().map(|e| {
            let mut text = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(cause) = source {
                text.push_str(&format!(": {cause}"));
                source = cause.source();
            }
            text
        });
        Ok(Finished {
            telemetry_error,
            record,
            buffers: worker.stats.summary(),
            tuner: worker.tuning.as_ref().map(|t| TunerSummary {
                name: t.tuner.name(),
                state: t.tuner.state(),
                decisions: worker.decisions,
                actions_failed: worker.actions_failed,
            }),
        })
    }

    fn stop_thread(&mut self) -> Result<Worker, TelemetryError> {
        if let Some(inbox) = self.inbox.take() {
            let _ = inbox.tx.send(Msg::Stop);
        }
        match self.thread.take() {
            Some(thread) => thread.join().map_err(|_| TelemetryError::Panicked),
            // Only `finish` and `drop` call this, and each at most once.
            None => Err(TelemetryError::Panicked),
        }
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        if self.thread.is_some() {
            // Nothing to report to: the owner chose not to finish.
            let _ = self.stop_thread();
        }
    }
}

impl Worker {
    /// Applies the tuner's `after_connect` settings.
    fn setup(&mut self) {
        let Some(tuning) = self.tuning.as_ref() else {
            return;
        };
        let settings = tuning.tuner.setup().after_connect;
        if settings.is_empty() {
            return;
        }
        let decision = Decision::act(
            tuning.tuner.state(),
            settings_actions(settings),
            settings.rcvbuf.or(settings.sndbuf).unwrap_or_default(),
            "after the handshake",
        );
        self.carry_out("setup", decision);
    }

    /// Wakes for telemetry ticks, tuner samples, peer reports and inbox
    /// inputs until the inbox's senders are all gone.
    fn run(mut self, inbox: &mpsc::Receiver<Msg>) -> Self {
        let mut next_tick = self.interval.unwrap_or(BASE_INTERVAL);
        let mut last_tuner_sample: Option<Duration> = None;
        let mut next_report = Duration::ZERO;
        loop {
            let tuner_due = self.tuner_due(last_tuner_sample);
            let report_due = self.reports().then_some(next_report);
            let due = [Some(next_tick), tuner_due, report_due]
                .into_iter()
                .flatten()
                .min()
                .unwrap_or(next_tick);
            let wait = due.saturating_sub(self.opened.elapsed());
            match inbox.recv_timeout(wait) {
                Ok(Msg::Event(event)) => {
                    self.feed(&event);
                    continue;
                }
                Err(RecvTimeoutError::Timeout) => {}
                Ok(Msg::Stop) | Err(RecvTimeoutError::Disconnected) => return self,
            }
            let now = self.opened.elapsed();
            let tick = now >= next_tick;
            let (buffers, info) = self.observe(now);
            if tick {
                let record = self.record(RecordKind::Sample, now, buffers, info.as_ref());
                self.write("sample", &record);
                if let Ok(mut last) = self.last.lock() {
                    *last = Some(record);
                }
                let interval = self.interval.unwrap_or(BASE_INTERVAL);
                next_tick += interval;
                if next_tick <= now {
                    next_tick = now + interval;
                }
            }
            if report_due.is_some_and(|at| now >= at) {
                next_report = now + self.report_info(info.as_ref());
            }
            if tuner_due.is_some_and(|at| now >= at) || tick {
                last_tuner_sample = Some(now);
                self.feed_sample(now, info, buffers);
            }
        }
    }

    /// When the tuner wants its next sample, never sooner than
    /// [`MIN_TUNER_GAP`] after the previous one.
    fn tuner_due(&self, last: Option<Duration>) -> Option<Duration> {
        let wanted = self.tuning.as_ref()?.tuner.next_wakeup()?;
        Some(match last {
            Some(last) => wanted.max(last + MIN_TUNER_GAP),
            None => wanted,
        })
    }

    fn reports(&self) -> bool {
        self.tuning
            .as_ref()
            .is_some_and(|t| t.report_info && t.to_peer.is_some())
    }

    /// Sends this end's `TCP_INFO` summary; returns when to send the next.
    fn report_info(&mut self, info: Option<&TcpInfoSample>) -> Duration {
        let Some(info) = info else {
            return MAX_REPORT_EVERY;
        };
        if let Some(send) = self.tuning.as_mut().and_then(|t| t.to_peer.as_mut()) {
            send(ToPeer::Info(PeerInfo {
                pace_bps: self.pace_bps,
                ..PeerInfo::from_tcp_info(info)
            }));
        }
        Duration::from_micros(u64::from(info.rtt_us) / 2).clamp(MIN_REPORT_EVERY, MAX_REPORT_EVERY)
    }

    /// Feeds a sample (and a fresh control-channel RTT first, if wanted).
    fn feed_sample(
        &mut self,
        at: Duration,
        info: Option<TcpInfoSample>,
        buffers: Option<BufferReading>,
    ) {
        let Some(tuning) = self.tuning.as_ref() else {
            return;
        };
        if tuning.tuner.inputs().control_rtt
            && let Some(control) = tuning.control.as_ref()
            && let Ok(control_info) = tcp_info::read(control)
            && control_info.rtt_us > 0
            && self.last_control_rtt != Some(control_info.rtt_us)
        {
            self.last_control_rtt = Some(control_info.rtt_us);
            self.feed(&Event::ControlRtt(RttMeasurement {
                at,
                rtt: Duration::from_micros(u64::from(control_info.rtt_us)),
            }));
        }
        self.feed(&Event::Sample(Sample {
            at,
            bytes: self.bytes.load(Ordering::Relaxed),
            tcp_info: info,
            buffers,
        }));
    }

    fn feed(&mut self, event: &Event) {
        let Some(tuning) = self.tuning.as_mut() else {
            return;
        };
        let decision = tuning.tuner.on_event(event);
        self.carry_out(event_name(event), decision);
    }

    /// Applies a decision's actions, reads each back and writes the line.
    fn carry_out(&mut self, event: &'static str, decision: Decision) {
        let Some(tuning) = self.tuning.as_mut() else {
            return;
        };
        let mut applied = Vec::with_capacity(decision.actions.len());
        let touches_socket = decision.actions.iter().copied().any(sizes_socket);
        let floor = if touches_socket {
            tcp_info::read(&self.socket).ok().map_or(0, |i| {
                MIN_SEGMENTS * u64::from(i.snd_mss_bytes.max(i.rcv_mss_bytes))
            })
        } else {
            0
        };
        for action in &decision.actions {
            let done = apply(&self.socket, *action, floor, tuning.to_peer.as_mut());
            if done.error.is_some() {
                self.actions_failed += 1;
            }
            if let (Action::SetMaxPacingRate(_), Some(b)) = (action, done.applied_bytes) {
                self.pace_bps = Some(b.saturating_mul(8));
            }
            applied.push(done);
        }
        // Linux keeps the window clamp it computed for the old receive
        // buffer when SO_RCVBUF is raised after the handshake, so the
        // window would stay where it was (measured: drs and freebsd stuck
        // near 64 KiB, 6-9 Mbit/s at 200 Mbit/s x 100 ms). Unless the tuner
        // ever set the clamp itself (then the clamp is its window, and
        // lifting it let `auto`'s window jump by the memory's margin into
        // the bottleneck queue: 30 losses, measured), lift it to the new
        // buffer; the kernel still offers no more window than the buffer's
        // free space.
        self.tuner_clamps |= decision
            .actions
            .iter()
            .any(|a| matches!(a, Action::SetWindowClamp(_)));
        let raised = applied
            .iter()
            .filter(|a| a.action == "set_rcvbuf")
            .filter_map(|a| a.applied_bytes)
            .max();
        if let (false, Some(buffer)) = (self.tuner_clamps, raised) {
            let clamp = Action::SetWindowClamp(Bytes(buffer));
            applied.push(apply(&self.socket, clamp, floor, None));
        }
        if !decision.actions.is_empty()
            && let Ok(b) = socket::read_buffers(&self.socket)
        {
            self.stats.observe(self.opened.elapsed(), reading(b));
        }
        let Some(record) = decision.record else {
            return;
        };
        self.decisions += 1;
        let line = DecisionLine {
            t_s: micros(self.opened.elapsed()),
            tuner: tuning.tuner.name().to_owned(),
            event: event.to_owned(),
            state: record.state.to_owned(),
            reason: record.reason,
            requested_bytes: record.requested.map(Bytes::get),
            actions: applied,
        };
        self.write("decision", &line);
    }

    /// Reads the socket's buffers (counted in the stats) and `TCP_INFO`
    /// now; a failed reading is `None`.
    fn observe(&mut self, at: Duration) -> (Option<BufferReading>, Option<TcpInfoSample>) {
        let buffers = socket::read_buffers(&self.socket).ok().map(reading);
        if let Some(b) = buffers {
            self.stats.observe(at, b);
        }
        (buffers, tcp_info::read(&self.socket).ok())
    }

    /// A telemetry record of a reading taken `at`; only telemetry ticks and
    /// the final reading make one, so each sample line's goodput covers
    /// one interval whatever the tuner's wake-ups.
    fn record(
        &mut self,
        kind: RecordKind,
        at: Duration,
        buffers: Option<BufferReading>,
        info: Option<&TcpInfoSample>,
    ) -> Record {
        let bytes = self.bytes.load(Ordering::Relaxed);
        self.recorder.record(kind, at, bytes, buffers, info)
    }

    /// Writes one line; after a failure the file gets no more lines.
    fn write(&mut self, line: &'static str, value: &impl Serialize) {
        if self.write_error.is_some() {
            return;
        }
        if let Some(out) = self.out.as_mut()
            && let Err(e) = write_line(out, value, line)
        {
            self.write_error = Some(e);
        }
    }
}

fn reading(b: socket::BufferState) -> BufferReading {
    BufferReading {
        rcvbuf_bytes: b.rcvbuf_bytes,
        sndbuf_bytes: b.sndbuf_bytes,
        window_clamp_bytes: b.window_clamp_bytes,
    }
}

fn micros(elapsed: Duration) -> f64 {
    elapsed.as_micros() as f64 / 1e6
}

fn event_name(event: &Event) -> &'static str {
    match event {
        Event::Sample(_) => "sample",
        Event::ControlRtt(_) => "control_rtt",
        Event::Train(_) => "train",
        Event::UdpProbes(_) => "udp_probes",
        Event::Peer(_) => "peer",
    }
}

/// The actions that put `settings` in force, in the order receive buffer,
/// send buffer, clamp (the clamp last: a buffer change may replace it).
fn settings_actions(settings: Settings) -> Vec<Action> {
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

/// Carries out one action on `socket` (or through `to_peer`); sizes for
/// the socket below `floor` bytes are raised to it.
fn apply(
    socket: &TcpStream,
    action: Action,
    floor: u64,
    to_peer: Option<&mut Box<dyn FnMut(ToPeer) + Send>>,
) -> AppliedAction {
    let (name, bytes) = match action {
        Action::SetRcvBuf(b) => ("set_rcvbuf", b.get()),
        Action::SetSndBuf(b) => ("set_sndbuf", b.get()),
        Action::SetWindowClamp(b) => ("set_window_clamp", b.get()),
        Action::TellPeer(b) => ("tell_peer", b.get()),
        Action::SetMaxPacingRate(b) => ("set_max_pacing_rate", b.get()),
        Action::TellPeerPace(b) => ("tell_peer_pace", b.get()),
    };
    let mut done = AppliedAction {
        action: name.to_owned(),
        requested_bytes: bytes,
        applied_bytes: None,
        clamped_by: None,
        raised_to_bytes: None,
        error: None,
    };
    let bytes = if sizes_socket(action) && bytes < floor {
        done.raised_to_bytes = Some(floor);
        floor
    } else {
        bytes
    };
    let buffer = |result: Result<socket::BufferApplied, socket::SocketError>,
                  done: &mut AppliedAction| match result {
        Ok(b) => {
            done.applied_bytes = Some(b.applied_bytes);
            done.clamped_by = b.clamped_by.map(str::to_owned);
        }
        Err(e) => done.error = Some(e.to_string()),
    };
    match action {
        Action::SetRcvBuf(_) => buffer(socket::set_rcvbuf(socket, bytes, false), &mut done),
        Action::SetSndBuf(_) => buffer(socket::set_sndbuf(socket, bytes, false), &mut done),
        Action::SetWindowClamp(_) => {
            let clamp = u32::try_from(bytes).unwrap_or(u32::MAX);
            match socket::set_window_clamp(socket, clamp) {
                Ok(c) => done.applied_bytes = Some(u64::from(c.applied_bytes)),
                Err(e) => done.error = Some(e.to_string()),
            }
        }
        Action::SetMaxPacingRate(_) => match socket::set_max_pacing_rate(socket, bytes) {
            Ok(applied) => done.applied_bytes = Some(applied),
            Err(e) => done.error = Some(e.to_string()),
        },
        Action::TellPeer(b) => done.error = tell(to_peer, ToPeer::Size(b)),
        Action::TellPeerPace(b) => {
            let ceiling = PeerInfo {
                pace_bps: Some(b.get().saturating_mul(8)),
                ..PeerInfo::default()
            };
            done.error = tell(to_peer, ToPeer::Info(ceiling));
        }
    }
    done
}

/// Whether `action` sizes the socket (a buffer or the window clamp), and
/// so is raised to the connection's floor of a few segments.
fn sizes_socket(action: Action) -> bool {
    matches!(
        action,
        Action::SetRcvBuf(_) | Action::SetSndBuf(_) | Action::SetWindowClamp(_)
    )
}

/// Sends `message` to the peer; the error to record if it takes none.
fn tell(to_peer: Option<&mut Box<dyn FnMut(ToPeer) + Send>>, message: ToPeer) -> Option<String> {
    match to_peer {
        Some(send) => {
            send(message);
            None
        }
        None => Some("the peer takes no sizes (not rightsize with OPTS RIGHTSIZE ON)".into()),
    }
}

/// Writes `value` as one JSON line and flushes.
fn write_line(
    out: &mut dyn Write,
    value: &impl Serialize,
    line: &'static str,
) -> Result<(), TelemetryError> {
    let write = |out: &mut dyn Write| -> io::Result<()> {
        let mut text = serde_json::to_vec(value).map_err(io::Error::from)?;
        text.push(b'\n');
        out.write_all(&text)?;
        out.flush()
    };
    write(out).map_err(|source| TelemetryError::Write { line, source })
}
