//! A thread that watches one data connection: it samples the socket into
//! telemetry lines and runs the connection's tuner driver.
//!
//! Every tuning decision is made in `rightsize_tune::driver`, which does no
//! I/O: the [`Driver`] says which `setsockopt`, `getsockopt` or message to
//! the peer comes next and assembles the decision lines, and the
//! [`Schedule`] says when to wake. This file keeps the thread, the clock,
//! the system calls that carry out the driver's requests (their results go
//! back to it) and the writing of the lines.
//!
//! [`Monitor::start`] applies the tuner's `after_connect` settings, writes
//! the telemetry [`Header`] line if there is a file, then a thread wakes at
//! each telemetry tick (writing a `"sample"` line), at each time the tuner
//! asks for a sample, and when an input arrives on the [`Inbox`] (what the
//! peer said, probe results). Each wake-up reads `TCP_INFO` and the buffers
//! of the socket and hands them to the driver; what the kernel kept comes
//! back in the next sample, and each decision makes one `"decision"` line.
//! A sender whose peer reads them sends its `TCP_INFO` summary every half
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

use rightsize_tune::driver::{Conn, Driver, Links, NO_PEER, Reply, Schedule, SocketOp, Step};
use rightsize_tune::tcpinfo::TcpInfoSample;
use rightsize_tune::telemetry::{
    self, BufferReading, BufferStats, BufferSummary, Header, IntervalError, Record, RecordKind,
    Recorder,
};
use rightsize_tune::units::Bytes;
use rightsize_tune::{Event, PeerInfo, PeerReport, Sample, Tuner};
use serde::Serialize;

pub use rightsize_tune::driver::{ToPeer, TunerSummary};

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

/// What the thread owns, handed back when it stops.
struct Worker {
    socket: TcpStream,
    bytes: Arc<AtomicU64>,
    out: Option<Box<dyn Write + Send>>,
    write_error: Option<TelemetryError>,
    schedule: Schedule,
    recorder: Recorder,
    stats: BufferStats,
    driver: Option<Driver>,
    /// The control connection, read for a tuner that wants its RTT.
    control: Option<TcpStream>,
    to_peer: Option<Box<dyn FnMut(ToPeer) + Send>>,
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
        let (driver, control, to_peer) = match tuning {
            Some(t) => {
                let links = Links {
                    peer: t.to_peer.is_some(),
                    control: t.control.is_some(),
                    report_info: t.report_info,
                };
                (Some(Driver::new(t.tuner, links)), t.control, t.to_peer)
            }
            None => (None, None, None),
        };
        let mut worker = Worker {
            socket,
            bytes,
            out,
            write_error: None,
            schedule: Schedule::new(interval),
            recorder: Recorder::new(),
            stats: BufferStats::default(),
            driver,
            control,
            to_peer,
            opened,
            last: Arc::clone(&last),
        };
        if let Some(driver) = worker.driver.as_mut() {
            driver.setup();
        }
        worker.drive();
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
            tuner: worker.driver.as_ref().map(Driver::summary),
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
    /// Wakes for telemetry ticks, tuner samples, peer reports and inbox
    /// inputs until the inbox's senders are all gone.
    fn run(mut self, inbox: &mpsc::Receiver<Msg>) -> Self {
        loop {
            let wanted = self.driver.as_ref().and_then(Driver::next_wakeup);
            let reports = self.driver.as_ref().is_some_and(Driver::reports);
            let due = self.schedule.next(wanted, reports);
            match inbox.recv_timeout(due.saturating_sub(self.opened.elapsed())) {
                Ok(Msg::Event(event)) => {
                    if let Some(driver) = self.driver.as_mut() {
                        driver.handle(event);
                    }
                    self.drive();
                    continue;
                }
                Err(RecvTimeoutError::Timeout) => {}
                Ok(Msg::Stop) | Err(RecvTimeoutError::Disconnected) => return self,
            }
            let now = self.opened.elapsed();
            let wake = self.schedule.wake(now, wanted, reports);
            let (buffers, info) = self.observe(now);
            if wake.tick {
                let record = self.record(RecordKind::Sample, now, buffers, info.as_ref());
                self.write("sample", &record);
                if let Ok(mut last) = self.last.lock() {
                    *last = Some(record);
                }
            }
            if wake.report {
                if let (Some(driver), Some(info), Some(send)) =
                    (self.driver.as_ref(), info.as_ref(), self.to_peer.as_mut())
                {
                    send(driver.report(info));
                }
                self.schedule.reported(now, info.as_ref());
            }
            if wake.sample
                && let Some(driver) = self.driver.as_mut()
            {
                driver.sample(Sample {
                    at: now,
                    bytes: self.bytes.load(Ordering::Relaxed),
                    tcp_info: info,
                    buffers,
                });
                self.drive();
            }
        }
    }

    /// Carries out what the driver asks until it has nothing left, and
    /// writes its decision lines.
    fn drive(&mut self) {
        let Some(mut driver) = self.driver.take() else {
            return;
        };
        loop {
            match driver.poll(self.opened.elapsed()) {
                Step::Op(op) => driver.reply(self.execute(op)),
                Step::Line(line) => self.write("decision", &line),
                Step::Idle => break,
            }
        }
        self.driver = Some(driver);
    }

    /// One request of the driver: the system call (or the message to the
    /// peer) and what came of it.
    fn execute(&mut self, op: SocketOp) -> Reply {
        let buffer = |result: Result<socket::BufferApplied, socket::SocketError>| match result {
            Ok(b) => Reply::Applied {
                bytes: b.applied_bytes,
                clamped_by: b.clamped_by.map(str::to_owned),
            },
            Err(e) => Reply::Failed(e.to_string()),
        };
        match op {
            SocketOp::SetRcvBuf { bytes } => buffer(socket::set_rcvbuf(&self.socket, bytes, false)),
            SocketOp::SetSndBuf { bytes } => buffer(socket::set_sndbuf(&self.socket, bytes, false)),
            SocketOp::SetWindowClamp { bytes } => {
                let clamp = u32::try_from(bytes).unwrap_or(u32::MAX);
                match socket::set_window_clamp(&self.socket, clamp) {
                    Ok(c) => Reply::Applied {
                        bytes: u64::from(c.applied_bytes),
                        clamped_by: None,
                    },
                    Err(e) => Reply::Failed(e.to_string()),
                }
            }
            SocketOp::SetMaxPacingRate { bytes_per_second } => {
                match socket::set_max_pacing_rate(&self.socket, bytes_per_second) {
                    Ok(applied) => Reply::Applied {
                        bytes: applied,
                        clamped_by: None,
                    },
                    Err(e) => Reply::Failed(e.to_string()),
                }
            }
            SocketOp::TellPeer { .. } | SocketOp::TellPeerPace { .. } => {
                match (op.to_peer(), self.to_peer.as_mut()) {
                    (Some(message), Some(send)) => {
                        send(message);
                        Reply::Told
                    }
                    _ => Reply::Failed(NO_PEER.to_owned()),
                }
            }
            SocketOp::ReadTcpInfo { socket: Conn::Data } => {
                Reply::TcpInfo(tcp_info::read(&self.socket).ok())
            }
            SocketOp::ReadTcpInfo {
                socket: Conn::Control,
            } => Reply::TcpInfo(self.control.as_ref().and_then(|c| tcp_info::read(c).ok())),
            SocketOp::ReadBuffers => Reply::Buffers(self.read_buffers(self.opened.elapsed())),
        }
    }

    /// Reads the socket's buffers (counted in the stats) and `TCP_INFO`
    /// now; a failed reading is `None`.
    fn observe(&mut self, at: Duration) -> (Option<BufferReading>, Option<TcpInfoSample>) {
        let buffers = self.read_buffers(at);
        (buffers, tcp_info::read(&self.socket).ok())
    }

    /// Reads the socket's buffers, counted in the stats as of `at`.
    fn read_buffers(&mut self, at: Duration) -> Option<BufferReading> {
        let b = socket::read_buffers(&self.socket).ok()?;
        let reading = BufferReading {
            rcvbuf_bytes: b.rcvbuf_bytes,
            sndbuf_bytes: b.sndbuf_bytes,
            window_clamp_bytes: b.window_clamp_bytes,
        };
        self.stats.observe(at, reading);
        Some(reading)
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
