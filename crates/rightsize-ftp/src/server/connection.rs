//! One control connection: rightsize-ftp-proto's [`Session`] driven by real I/O.
//!
//! Three threads at most: this one runs the session (replies, timeouts,
//! file-system requests), a reader turns the control socket into events
//! (so ABOR, STAT and QUIT are seen while a transfer runs), and a transfer
//! thread runs one data connection at a time. Only this thread writes to
//! the control socket, so replies never interleave, and the session's
//! "one reply per line" holds on the wire.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use rightsize_ftp_proto::session::bench::{BenchHost, BenchPath, classify};
use rightsize_ftp_proto::session::report::DataSocketBuffers;
use rightsize_ftp_proto::session::{
    ChecksumJob, ChecksumOutcome, DataEndpoint, FsError, Output, Session, TransferKind,
    TransferOutcome, TransferPlan,
};
use rightsize_ftp_proto::{LineEvent, LineReader, parse};
use rightsize_tune::diagnose::tcp::TcpSummary;

use rightsize_ftp_proto::command::OptsCommand;
use rightsize_ftp_proto::{Command, PeerMessage, Reply, RightsizeOpts};
use rightsize_sys::poll::{self, Want};
use rightsize_sys::probe::Responder;
use rightsize_sys::telemetry::{Inbox, Monitor, ToPeer, Tuning};
use rightsize_tune::budget::Budgeted;
use rightsize_tune::crowd::Crowded;
use rightsize_tune::units::Bytes;
use rightsize_tune::{Peer, Role, Tuner, TunerSpec};

use crate::stream::DataStream;
use crate::tls::Pump;
use crate::tuning::{self, StreamTuners};

use super::checksum;
use super::data::{self, AbortHandle, DataParams, Endpoint, Flow, Progress, Sink, Source};
use super::extended;
use super::host::FsHost;
use super::limits::Slot;
use super::markers::{self, Ticker};
use super::telemetry::TransferLog;
use super::{Shared, now_unix};

/// Stack of the reader thread: it only copies bytes into a channel.
const READER_STACK_BYTES: usize = 64 * 1024;
/// Stack of a transfer thread (the copy buffer is on the heap).
const TRANSFER_STACK_BYTES: usize = 256 * 1024;
/// Control bytes read at a time.
const CONTROL_READ_BYTES: usize = 4096;
/// Events buffered between the reader and the session: a client that
/// floods the control connection waits on TCP, not on server memory.
const EVENT_QUEUE: usize = 8;
/// How long a data connection just admitted within a buffer budget waits
/// for the others to make room for its least (they do within a sample).
const ROOM_WAIT: Duration = Duration::from_millis(100);

enum Event {
    Input(Vec<u8>),
    Closed,
    TransferDone(Box<data::DataReport>),
    ChecksumDone(ChecksumOutcome),
    /// Something the running transfer's tuner tells the client.
    Notice(ToPeer),
    /// `111`/`112` markers of the running MODE E transfer.
    Markers(Vec<Reply>),
}

/// The session's running transfer or checksum.
struct Running {
    abort: Arc<AbortHandle>,
    thread: JoinHandle<()>,
    /// The running transfer's monitor, once its data connection is up:
    /// where what the client reports goes.
    inbox: Arc<Mutex<Option<Inbox>>>,
    /// Whether it is a stream-mode upload: when the session ends it goes
    /// on to the end of its data, and what arrived is kept.
    upload: bool,
}

struct Conn {
    control: TcpStream,
    /// TLS on the control connection, once `AUTH TLS` started it (or
    /// from the start, implicit FTPS): what is read goes in, what is
    /// written goes through it.
    tls: Option<Pump>,
    peer: SocketAddr,
    session: Session,
    host: BenchHost<FsHost>,
    lines: LineReader,
    shared: Arc<Shared>,
    events: SyncSender<Event>,
    running: Option<Running>,
    transfers: u64,
    /// Echoes the client's probes and sends it packet trains, once it
    /// asked with `OPTS RIGHTSIZE ON UDP=<port>`.
    responder: Option<Responder>,
    /// MODE E data connections kept open after the last transfer: the
    /// client's, for its next upload, or ours to its PORT address, for
    /// the next send there.
    cached: Cached,
    /// This session's place under the caps.
    slot: Slot,
}

/// MODE E data connections kept open after a transfer.
#[derive(Debug, Default)]
enum Cached {
    /// None kept.
    #[default]
    None,
    /// The client's, after its upload.
    Received(Vec<DataStream>),
    /// Ours, to this address, after a send.
    Sent(SocketAddr, Vec<DataStream>),
}

/// Serves one control connection to its end. `slot` is the connection's
/// place under the session caps, given back when this returns.
pub(super) fn serve(control: TcpStream, peer: SocketAddr, shared: Arc<Shared>, slot: Slot) {
    if let Err(e) = setup_control(&control, shared.config.login_timeout) {
        shared.log_client(peer, &format!("control socket setup failed: {e}"));
        return;
    }
    let local_ip = match control.local_addr() {
        Ok(addr) => addr.ip().to_canonical(),
        Err(_) => return,
    };
    let (events, inbox) = mpsc::sync_channel(EVENT_QUEUE);
    // No descriptor or thread for the session: the client hears why.
    let refuse = |why: String| {
        shared.log_client(peer, &format!("refused: {why}"));
        let _ = (&control).write_all(super::NO_ROOM_REPLY);
    };
    let reader = match control.try_clone() {
        Ok(reader) => reader,
        Err(e) => return refuse(format!("no descriptor for the control reader ({e})")),
    };
    let reader_events = events.clone();
    let reader_thread = thread::Builder::new()
        .name("ftp-control-reader".into())
        .stack_size(READER_STACK_BYTES)
        .spawn(move || read_control(reader, reader_events));
    if let Err(e) = reader_thread {
        return refuse(format!("no thread for the control reader ({e})"));
    }
    let (session, greeting) = Session::new(shared.session_config.clone(), peer);
    let host = BenchHost::new(
        FsHost::new(Arc::clone(&shared), local_ip),
        shared.started_unix,
    );
    let mut conn = Conn {
        control,
        tls: None,
        peer,
        session,
        host,
        lines: LineReader::new(),
        shared,
        events,
        running: None,
        transfers: 0,
        responder: None,
        cached: Cached::None,
        slot,
    };
    conn.shared.log_client(peer, "connected");
    // Implicit FTPS: the greeting waits in TLS for the handshake.
    let implicit = conn.shared.config.tls.as_ref().is_some_and(|t| t.implicit);
    if implicit && !conn.start_tls() {
        conn.close();
        return;
    }
    if conn.act(vec![greeting]) {
        conn.run(&inbox);
    }
    conn.close();
}

/// The control socket's options. A write waits at most `write_timeout`
/// (the login timeout until the login, then the idle timeout): a client
/// that never reads its replies does not hold its session, its thread and
/// its buffers for ever.
fn setup_control(control: &TcpStream, write_timeout: Duration) -> io::Result<()> {
    control.set_nodelay(true)?;
    control.set_write_timeout(Some(write_timeout))?;
    // ftplib sends ABOR with MSG_OOB: keep the urgent byte in the stream
    // rather than losing the line's last byte.
    socket2::SockRef::from(control).set_out_of_band_inline(true)?;
    Ok(())
}

fn read_control(mut reader: TcpStream, events: SyncSender<Event>) {
    let mut buf = [0u8; CONTROL_READ_BYTES];
    loop {
        match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                if events.send(Event::Input(buf[..n].to_vec())).is_err() {
                    return;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    let _ = events.send(Event::Closed);
}

impl Conn {
    /// The event loop; returns when the connection is to be closed.
    fn run(&mut self, inbox: &Receiver<Event>) {
        // The login timeout is a deadline from the connection (a NOOP now
        // and then does not hold a session that never logs in); the idle
        // timeout counts from the last complete line.
        let connected = Instant::now();
        let mut last_line = connected;
        loop {
            let since = if self.session.logged_in() {
                last_line
            } else {
                connected
            };
            let event = match self.session.read_timeout() {
                None => inbox.recv().map_err(|_| RecvTimeoutError::Disconnected),
                Some(timeout) => {
                    let left = (since + timeout).saturating_duration_since(Instant::now());
                    inbox.recv_timeout(left)
                }
            };
            let keep_going = match event {
                Ok(Event::Input(bytes)) => self.input(&bytes, &mut last_line),
                Ok(Event::TransferDone(report)) => {
                    last_line = Instant::now();
                    self.transfer_done(report)
                }
                Ok(Event::ChecksumDone(outcome)) => {
                    last_line = Instant::now();
                    self.checksum_done(outcome)
                }
                Ok(Event::Notice(notice)) => self.notice(notice),
                Ok(Event::Markers(replies)) => self.markers(&replies),
                Ok(Event::Closed) | Err(RecvTimeoutError::Disconnected) => false,
                Err(RecvTimeoutError::Timeout) => {
                    let out = self.session.timed_out();
                    self.shared.log_client(self.peer, "timed out");
                    self.act(out)
                }
            };
            if !keep_going {
                return;
            }
        }
    }

    fn input(&mut self, raw: &[u8], last_line: &mut Instant) -> bool {
        let plain;
        let bytes = match self.tls.as_mut() {
            None => raw,
            Some(pump) => match pump.input(raw, &mut self.control) {
                Ok(p) => {
                    plain = p;
                    if plain.is_empty() && pump.peer_closed() {
                        return false;
                    }
                    &plain[..]
                }
                Err(e) => {
                    self.shared.log_client(self.peer, &format!("{e}"));
                    return false;
                }
            },
        };
        let clear = self.tls.is_none();
        let mut rest = bytes;
        while !rest.is_empty() {
            let step = self.lines.push(rest);
            rest = &rest[step.consumed.min(rest.len())..];
            let out = match step.output {
                None => continue,
                Some(LineEvent::Line(line)) => {
                    *last_line = Instant::now();
                    let command = parse(&line);
                    if let Ok(Command::Opts(OptsCommand::Rightsize(RightsizeOpts::On {
                        udp_port: Some(_),
                    }))) = &command
                    {
                        self.bind_responder();
                    }
                    let login =
                        matches!(command, Ok(Command::Pass(_))) && !self.session.logged_in();
                    let user = self.session.user().map(str::to_owned);
                    let out = self.session.handle(command, &mut self.host, now_unix());
                    if login && self.session.logged_in() {
                        // Logged in: never closed to make room.
                        self.slot.logged_in();
                        // Logged in: a reply may wait on the client as
                        // long as a command may.
                        let idle = self.shared.config.idle_timeout;
                        let _ = self.control.set_write_timeout(Some(idle));
                    }
                    if let (true, Some(user)) = (login, user) {
                        self.shared.log_login(
                            self.peer,
                            &user,
                            self.session.logged_in(),
                            self.tls.is_some(),
                        );
                    }
                    out
                }
                Some(LineEvent::TooLong) => self.session.line_too_long(),
            };
            if !self.act(out) {
                return false;
            }
            if clear && self.tls.is_some() {
                // AUTH TLS: what follows its line is the handshake.
                return rest.is_empty() || self.input(rest, last_line);
            }
        }
        true
    }

    /// Writes `bytes` to the client, through TLS once it is on; false
    /// once the connection is to be closed.
    fn send(&mut self, bytes: &[u8]) -> bool {
        match self.tls.as_mut() {
            Some(pump) => pump.write_all(bytes, &mut self.control).is_ok(),
            None => self.control.write_all(bytes).is_ok(),
        }
    }

    /// TLS from the next byte: `AUTH TLS` was accepted (its 234 sent), or
    /// the connection is implicit FTPS.
    fn start_tls(&mut self) -> bool {
        let Some(tls) = &self.shared.config.tls else {
            return false;
        };
        match tls.tls.get().connection() {
            Ok(c) => {
                self.tls = Some(Pump::new(c));
                true
            }
            Err(e) => {
                self.shared.log_client(self.peer, &format!("TLS: {e}"));
                false
            }
        }
    }

    /// Carries out the session's outputs in order; false once the
    /// connection is to be closed.
    fn act(&mut self, outputs: Vec<Output>) -> bool {
        let mut queue: VecDeque<Output> = outputs.into();
        while let Some(output) = queue.pop_front() {
            match output {
                Output::Reply(reply) => {
                    if !self.send(&reply.encode()) {
                        return false;
                    }
                }
                Output::StartTls => {
                    if !self.start_tls() {
                        return false;
                    }
                }
                Output::Delay(pause) => thread::sleep(pause),
                // Work that could not start is over at once: what the
                // session says to that comes before the rest.
                Output::Transfer(plan) => {
                    if let Err(outcome) = self.start_transfer(plan) {
                        let more = self
                            .session
                            .transfer_done(outcome, &mut self.host, now_unix());
                        put_first(&mut queue, more);
                    }
                }
                Output::Checksum(job) => {
                    if let Err(outcome) = self.start_checksum(job) {
                        let more = self
                            .session
                            .checksum_done(outcome, &mut self.host, now_unix());
                        put_first(&mut queue, more);
                    }
                }
                Output::Abort => {
                    if let Some(running) = &self.running {
                        running.abort.abort_asked();
                    }
                }
                Output::Close => return false,
                Output::Peer(message) => self.to_transfer(&message),
            }
        }
        true
    }

    /// Opens the source or sink, sends the 150 and starts the data
    /// connection on its own thread.
    fn start_transfer(&mut self, plan: TransferPlan) -> Result<(), TransferOutcome> {
        let flow = self.open_flow(&plan.kind)?;
        let endpoint = match plan.endpoint {
            DataEndpoint::Active(addr) => Endpoint::Active(addr),
            DataEndpoint::Passive(addr) => match if plan.extended.is_some() {
                self.host.inner().share_listener(addr)
            } else {
                self.host.inner().take_listener(addr)
            } {
                Some(listener) => Endpoint::Passive(listener),
                None => {
                    return Err(TransferOutcome::DataConnectFailed(
                        "the passive listener is gone".into(),
                    ));
                }
            },
        };
        let role = match &plan.kind {
            TransferKind::Store { .. } => Role::Receiver,
            TransferKind::Retrieve { .. } | TransferKind::Listing(_) => Role::Sender,
        };
        let peer = if self.rightsize_on() {
            Peer::Rightsize
        } else {
            Peer::Other
        };
        let (request, tuner) =
            self.shared
                .data_plan(plan.sbuf, self.host.inner().tune(), role, peer);
        let listing = matches!(plan.kind, TransferKind::Listing(_));
        let extended = plan.extended;
        let sends = !matches!(plan.kind, TransferKind::Store { .. });
        let shared = Arc::clone(&self.shared);
        let budget = shared.budget.as_ref();
        // MODE E's streams are tuned together (the same tuner, `auto` as
        // one flow); a listing is too short to tune.
        let spec = self
            .shared
            .tuner_spec(plan.sbuf, self.host.inner().tune())
            .filter(|_| !listing && extended.is_some());
        let tuners = StreamTuners::new(&request, spec, role, self.control.try_clone().ok())
            .within(budget.filter(|_| extended.is_some()));
        let request = tuners.request().clone();
        let tuner = tuner.filter(|_| !listing && extended.is_none());
        // An `auto` download is sized with the others to the same client
        // network: they share its path.
        let crowded = role == Role::Sender
            && self.shared.tuner_spec(plan.sbuf, self.host.inner().tune()) == Some(TunerSpec::Auto);
        let tuner = match tuner {
            Some(inner) if crowded => Some(Box::new(Crowded::new(
                inner,
                &self.shared.crowd_for(self.peer.ip()),
            )) as Box<dyn Tuner>),
            other => other,
        };
        // Within a budget every data connection is admitted before the
        // 150, or refused with 425 and why.
        let (request, tuner) = match (budget, extended) {
            (None, _) => (request, tuner),
            (Some(budget), Some(streams)) => {
                let wanted = if sends { streams as usize } else { 1 };
                let budget = budget.lock().unwrap_or_else(PoisonError::into_inner);
                if !budget.admits(wanted) {
                    return Err(TransferOutcome::NoBuffers(budget.refusal().to_string()));
                }
                (request, tuner)
            }
            (Some(budget), None) => {
                // A listing within the budget too (with the client's
                // SBUF, that size within its share; else its least).
                let inner = tuner.unwrap_or_else(|| {
                    let fixed = plan
                        .sbuf
                        .map_or(TunerSpec::Kernel, |b| TunerSpec::Static(Bytes(b)));
                    tuning::build(&fixed, role, peer, &self.shared.config.buffers)
                });
                let budgeted = Budgeted::new(inner, role, budget)
                    .map_err(|e| TransferOutcome::NoBuffers(e.to_string()))?;
                let request =
                    tuning::request(&self.shared.config.buffers, budgeted.setup().pre_handshake);
                (request, Some(Box::new(budgeted) as Box<dyn Tuner>))
            }
        };
        // A connection just admitted sets its buffers (its least) only
        // once the others gave back what its least needs.
        if let Some(budget) = budget
            && !tuning::wait_for_room(budget, ROOM_WAIT)
        {
            self.shared.log_client(
                self.peer,
                &format!(
                    "the buffer budget's other connections had not made room within {} ms; \
                 going on",
                    ROOM_WAIT.as_millis()
                ),
            );
        }
        if !self.send(&plan.start_reply.encode()) {
            return Err(TransferOutcome::NetworkError(
                "control connection lost".into(),
            ));
        }
        // Kept connections serve the next MODE E transfer the same way
        // (an upload, or a send to the same address); others are closed.
        // A listing goes over connections of its own, closed after it
        // (globus-url-copy -fast reads a listing only from new ones); the
        // kept ones wait for the next file.
        let cached = match (std::mem::take(&mut self.cached), &endpoint) {
            (kept, _) if listing => {
                self.cached = kept;
                Vec::new()
            }
            (Cached::Received(streams), _) if extended.is_some() && !sends => streams,
            (Cached::Sent(to, streams), Endpoint::Active(addr))
                if extended.is_some() && sends && to == *addr =>
            {
                streams
            }
            _ => Vec::new(),
        };
        let params = DataParams {
            control_peer: self.peer.ip(),
            request,
            connect_timeout: self.shared.config.data_connect_timeout,
            idle_timeout: self.shared.config.data_idle_timeout,
            write_size: self.shared.config.write_size,
            drain: budget.is_some(),
            tls: self
                .shared
                .config
                .tls
                .as_ref()
                .filter(|_| plan.private)
                .map(|t| t.tls.get()),
        };
        let probe_to = self
            .session
            .client_probe_port()
            .filter(|_| role == Role::Receiver)
            .map(|port| SocketAddr::new(self.peer.ip(), port));
        let mut tuning = tuner.map(|tuner| self.tuning(tuner, role, peer));
        let inputs = tuning.as_ref().map(|t| t.tuner.inputs());
        let probe_log = Arc::clone(&self.shared);
        let client = self.peer;
        self.transfers += 1;
        let log = TransferLog::new(
            Arc::clone(&self.shared),
            self.peer,
            self.transfers,
            &plan.kind,
            plan.sbuf,
        );
        let abort = Arc::new(AbortHandle::default());
        let thread_abort = Arc::clone(&abort);
        let events = self.events.clone();
        let control = self
            .control
            .try_clone()
            .map_err(|e| TransferOutcome::LocalError(e.to_string()))?;
        let inbox = Arc::new(Mutex::new(None));
        let thread_inbox = Arc::clone(&inbox);
        let done = match &plan.kind {
            TransferKind::Retrieve { done, .. } => done.clone(),
            _ => rightsize_ftp_proto::mode_e::Ranges::new(),
        };
        let schedule = plan.markers;
        let deliver = markers::deliver_to(self.events.clone(), Event::Markers);
        let upload = extended.is_none() && matches!(flow, Flow::Receive(_));
        let thread = thread::Builder::new()
            .name("ftp-data".into())
            .stack_size(TRANSFER_STACK_BYTES)
            .spawn(move || {
                let progress = Arc::new(Progress::default());
                let ticker = Ticker::start(schedule, Arc::clone(&progress), deliver);
                let mut monitor = None;
                let mut prober = None;
                let slot = |inbox: Option<Inbox>| {
                    *thread_inbox.lock().unwrap_or_else(PoisonError::into_inner) = inbox;
                };
                let mut on_connect = |socket: &TcpStream| {
                    monitor = log.start(socket, &progress, tuning.take());
                    let inbox = monitor.as_ref().and_then(Monitor::inbox);
                    if let (Some(inbox), Some(inputs), Some(to)) = (&inbox, inputs, probe_to) {
                        match tuning::start_prober(inputs, to, inbox) {
                            Ok(p) => prober = p,
                            Err(e) => probe_log.log_client(client, &format!("no probes: {e}")),
                        }
                    }
                    slot(inbox);
                };
                let mut report = match (extended, endpoint, flow) {
                    (Some(streams), Endpoint::Active(addr), Flow::Send(source)) => extended::run(
                        extended::Outgoing {
                            addr,
                            cached,
                            keep: !listing,
                            done,
                            tuners: &tuners,
                        },
                        source,
                        streams,
                        &params,
                        &thread_abort,
                        &progress,
                        &mut on_connect,
                    ),
                    (Some(_), Endpoint::Passive(listener), Flow::Receive(sink)) => {
                        extended::receive(
                            extended::Arriving {
                                listener,
                                cached,
                                tuners: &tuners,
                            },
                            sink,
                            &params,
                            &thread_abort,
                            &progress,
                            &mut on_connect,
                        )
                    }
                    (_, endpoint, flow) => data::run(
                        endpoint,
                        flow,
                        &params,
                        &thread_abort,
                        &progress,
                        &mut on_connect,
                        &|| control_open(&control),
                    ),
                };
                // The last markers go before the 226, as the Globus
                // server's do.
                ticker.finish(!matches!(
                    report.outcome,
                    TransferOutcome::DataConnectFailed(_)
                ));
                drop(prober);
                slot(None);
                // Stopped before TransferDone is sent: every notice of the
                // monitor is in the channel ahead of the 226.
                report.monitor = log.finish(monitor, &report);
                let _ = events.send(Event::TransferDone(Box::new(report)));
            })
            .map_err(|e| TransferOutcome::LocalError(format!("no thread for the transfer: {e}")))?;
        self.running = Some(Running {
            abort,
            thread,
            inbox,
            upload,
        });
        Ok(())
    }

    /// The tuner's connections: the control socket for its RTT, and the
    /// client for sizes and reports when it turned the extension on.
    fn tuning(&self, tuner: Box<dyn Tuner>, role: Role, peer: Peer) -> Tuning {
        let to_peer = (peer == Peer::Rightsize).then(|| {
            let events = self.events.clone();
            // Never blocks the monitor: a notice that finds the queue full
            // is dropped (the next one carries newer numbers).
            Box::new(move |message| {
                let _ = events.try_send(Event::Notice(message));
            }) as Box<dyn FnMut(ToPeer) + Send>
        });
        Tuning {
            tuner,
            control: self.control.try_clone().ok(),
            report_info: role == Role::Sender && to_peer.is_some(),
            to_peer,
        }
    }

    /// A UDP responder for the client's probes, on the control
    /// connection's local address, answering only the client's address;
    /// the session's reply to the OPTS then names its port.
    fn bind_responder(&mut self) {
        if self.responder.is_some() {
            return;
        }
        let local = match self.control.local_addr() {
            Ok(addr) => SocketAddr::new(addr.ip(), 0),
            Err(_) => return,
        };
        match Responder::bind(local, self.peer.ip()) {
            Ok(responder) => {
                self.session.set_probe_port(Some(responder.port()));
                self.responder = Some(responder);
            }
            Err(e) => self
                .shared
                .log_client(self.peer, &format!("no UDP probe responder: {e}")),
        }
    }

    /// Whether the client turned the in-transfer extension on.
    fn rightsize_on(&self) -> bool {
        self.session.rightsize_on()
    }

    /// Hands what the client said during the transfer to its tuner; with
    /// no tuner running (not connected yet, or fixed by SBUF) it is dropped.
    fn to_transfer(&self, message: &PeerMessage) {
        let Some(running) = &self.running else {
            return;
        };
        let inbox = running.inbox.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(inbox) = inbox.as_ref() {
            match message {
                PeerMessage::Size(bytes) => inbox.peer(None, Some(Bytes(*bytes))),
                PeerMessage::Info(info) => inbox.peer(Some(*info), None),
            }
        }
    }

    /// Writes a notice of the running transfer's tuner, if the client
    /// turned the extension on and the transfer still runs; false once the
    /// connection is to be closed.
    fn notice(&mut self, notice: ToPeer) -> bool {
        if !self.session.notices_allowed() || self.running.is_none() {
            return true;
        }
        let line = match notice {
            ToPeer::Size(bytes) => PeerMessage::Size(bytes.get()),
            ToPeer::Info(info) => PeerMessage::Info(info),
        };
        self.send(&line.encode())
    }

    /// Writes the running MODE E transfer's markers, if it still runs
    /// (markers that arrive after its end are dropped); false once the
    /// connection is to be closed.
    fn markers(&mut self, replies: &[Reply]) -> bool {
        if !self.session.is_transferring() || self.running.is_none() {
            return true;
        }
        replies.iter().all(|reply| self.send(&reply.encode()))
    }

    fn open_flow(&mut self, kind: &TransferKind) -> Result<Flow, TransferOutcome> {
        match kind {
            TransferKind::Listing(bytes) => Ok(Flow::Send(Source::Bytes(bytes.clone()))),
            TransferKind::Retrieve {
                path,
                offset,
                length,
                ..
            } => match classify(path) {
                Some(BenchPath::Zero { size_bytes }) => Ok(Flow::Send(Source::Zero {
                    remaining_bytes: size_bytes
                        .saturating_sub(*offset)
                        .min(length.unwrap_or(u64::MAX)),
                })),
                _ => self
                    .host
                    .inner()
                    .open_source(path, *offset)
                    .map(|file| {
                        Flow::Send(match length {
                            Some(length) => Source::Part {
                                file,
                                length: *length,
                            },
                            None => Source::File(file),
                        })
                    })
                    .map_err(TransferOutcome::OpenFailed),
            },
            TransferKind::Store {
                path,
                adjust: Some(adjust),
                ..
            } => match classify(path) {
                Some(BenchPath::Null) => Ok(Flow::Receive(Sink::Discard)),
                _ => self
                    .host
                    .inner()
                    .open_adjusted_sink(path, *adjust)
                    .map(|target| Flow::Receive(Sink::File(target)))
                    .map_err(TransferOutcome::OpenFailed),
            },
            TransferKind::Store {
                path,
                offset,
                append,
                adjust: None,
            } => match classify(path) {
                Some(BenchPath::Null) => Ok(Flow::Receive(Sink::Discard)),
                _ => self
                    .host
                    .inner()
                    .open_sink(path, *offset, *append)
                    .map(|target| Flow::Receive(Sink::File(target)))
                    .map_err(TransferOutcome::OpenFailed),
            },
        }
    }

    /// Opens the file and computes its checksum on a thread of its own
    /// (`checksum.rs`); its end comes back as an event.
    fn start_checksum(&mut self, job: ChecksumJob) -> Result<(), ChecksumOutcome> {
        // The bench namespace's files have no bytes to sum.
        if classify(&job.path).is_some() {
            return Err(ChecksumOutcome::Failed(FsError::Unsupported));
        }
        let file = self
            .host
            .inner()
            .open_source(&job.path, job.offset)
            .map_err(ChecksumOutcome::Failed)?;
        let abort = Arc::new(AbortHandle::default());
        let thread_abort = Arc::clone(&abort);
        let events = self.events.clone();
        let shared = Arc::clone(&self.shared);
        let thread = thread::Builder::new()
            .name("ftp-checksum".into())
            .stack_size(TRANSFER_STACK_BYTES)
            .spawn(move || {
                let outcome = checksum::compute(file, &job, &shared.checksums, &thread_abort);
                let _ = events.send(Event::ChecksumDone(outcome));
            })
            .map_err(|e| ChecksumOutcome::Failed(FsError::Other(e.to_string())))?;
        self.running = Some(Running {
            abort,
            thread,
            inbox: Arc::new(Mutex::new(None)),
            upload: false,
        });
        Ok(())
    }

    fn checksum_done(&mut self, outcome: ChecksumOutcome) -> bool {
        if let Some(running) = self.running.take() {
            let _ = running.thread.join();
        }
        if let ChecksumOutcome::Failed(e) = &outcome {
            self.shared
                .log_client(self.peer, &format!("checksum failed: {e}"));
        }
        let out = self
            .session
            .checksum_done(outcome, &mut self.host, now_unix());
        self.act(out)
    }

    fn transfer_done(&mut self, mut report: Box<data::DataReport>) -> bool {
        // A transfer that used the kept connections took them; one that
        // keeps its own leaves them here (a listing keeps none, and left
        // the others in place).
        let kept = std::mem::take(&mut report.kept);
        if !kept.is_empty() {
            self.cached = match report.sent_to {
                Some(addr) => Cached::Sent(addr, kept),
                None => Cached::Received(kept),
            };
        }
        if let Some(running) = self.running.take() {
            let _ = running.thread.join();
        }
        let complete = matches!(report.outcome, TransferOutcome::Complete { .. });
        let mut out = self
            .session
            .transfer_done(report.outcome, &mut self.host, now_unix());
        // The 226 tells a rightsize client this end's buffers.
        if let (true, Some(b), Some(Output::Reply(first))) =
            (complete, report.final_buffers, out.first_mut())
            && first.code() == 226
        {
            let monitor = report.monitor.as_ref();
            *first = DataSocketBuffers {
                rcvbuf_bytes: b.rcvbuf_bytes,
                sndbuf_bytes: b.sndbuf_bytes,
                peak_rcvbuf_bytes: monitor.map(|m| m.buffers.peak_rcvbuf_bytes),
                peak_sndbuf_bytes: monitor.map(|m| m.buffers.peak_sndbuf_bytes),
                tune: monitor
                    .and_then(|m| m.tuner.as_ref())
                    .map(|t| t.name.to_owned()),
            }
            .completion_reply_with(
                report
                    .final_tcp_info
                    .as_ref()
                    .map(TcpSummary::from_tcp_info)
                    .as_ref(),
            );
        }
        self.act(out)
    }

    fn close(&mut self) {
        if let Some(pump) = self.tls.as_mut() {
            pump.close(&mut self.control);
        }
        let _ = self.control.shutdown(Shutdown::Both);
        if let Some(running) = self.running.take() {
            // A stream-mode upload under way reads on to the end of its
            // data (within the data idle timeout): what a client that went
            // away sent is all kept, not cut where the session ended (an
            // abort there dropped what the socket still held, or all of it).
            if !(running.upload && running.abort.connected()) {
                running.abort.abort();
            }
            let _ = running.thread.join();
        }
        self.shared.log_client(self.peer, "closed");
    }
}

/// Whether the client's control connection is still open: a peek that
/// finds the end of the stream means the client closed it (or died).
fn control_open(control: &TcpStream) -> bool {
    let mut byte = [0u8; 1];
    // Give a dying client's control FIN a moment to arrive after its data FIN.
    // A failed poll says nothing about the peer: assume it is still there.
    let Ok(ready) = poll::wait_one(control, Want::Read, CONTROL_CHECK) else {
        return true;
    };
    if !ready.any() {
        return true;
    }
    if ready.hung_up {
        return false;
    }
    !matches!(control.peek(&mut byte), Ok(0) | Err(_))
}

/// How long to wait for a dying client's control-connection FIN after its
/// data connection ended.
const CONTROL_CHECK: Duration = Duration::from_millis(20);

/// Puts `outputs` before the rest of `queue`, in their order.
fn put_first(queue: &mut VecDeque<Output>, outputs: Vec<Output>) {
    for output in outputs.into_iter().rev() {
        queue.push_front(output);
    }
}
