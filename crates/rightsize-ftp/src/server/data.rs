//! A server data connection: made (accepted on the passive listener, or
//! connected to the client's PORT/EPRT address) and run to its end.
//!
//! Guarantees:
//! - a passive connection is accepted only from the control connection's
//!   peer address (RFC 2577 section 3); connections from anywhere else are
//!   closed at once and the wait goes on;
//! - every socket is made by `rightsize_sys::socket`, with the SBUF request
//!   applied before the handshake (the listener carries it, or `connect`
//!   applies it) and read back;
//! - the accept or connect gives up after the data-connection timeout, and
//!   a connection that moves no byte for the idle timeout ends as a network
//!   error;
//! - an [`AbortHandle`] stops a transfer at any point: waiting, or mid-copy;
//! - with a write size ([`DataParams::write_size`]) everything sent goes
//!   out in `write(2)` calls of at most that many bytes (no `sendfile`).
//!
//! Nothing here writes to the control connection: the session thread does.

use std::fs::File;
use std::io::{self, Read, Seek, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use rightsize_ftp_proto::session::TransferOutcome;
use rightsize_sys::socket::{self, Applied, BufferRequest};
use rightsize_sys::telemetry::Finished;
use rightsize_sys::{poll, zero_copy};
use rightsize_tune::write_size::WriteSize;

use crate::stream::DataStream;
use crate::tls::{ServerTls, TlsStream};
use crate::tuning::StreamsTuned;

use crate::writes::{self, CopyError, ZEROS};

/// How often a waiting accept looks at the abort flag.
const ACCEPT_POLL: Duration = Duration::from_millis(50);

/// Bytes per `read`/`write` of a copy, and per `sendfile` call.
pub const COPY_CHUNK_BYTES: usize = 1 << 20;

/// Where the bytes of a retrieve come from.
#[derive(Debug)]
pub enum Source {
    /// A file, already positioned at the REST offset (sent with `sendfile`,
    /// or read and written with a write size).
    File(File),
    /// The benchmark source: this many zero bytes.
    Zero {
        /// Bytes left to send.
        remaining_bytes: u64,
    },
    /// A listing, formatted.
    Bytes(Vec<u8>),
    /// A part of a file (ERET P): positioned at its first byte, this many
    /// bytes. In MODE E its blocks are numbered from 0.
    Part {
        /// The file, positioned at the part's first byte.
        file: File,
        /// Bytes to send.
        length: u64,
    },
}

/// Where a store's bytes go: a file that appears only when committed.
pub trait StoreTarget: Send + std::fmt::Debug {
    /// Appends bytes.
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()>;
    /// Writes bytes at an offset (MODE E blocks come in any order).
    fn write_at(&mut self, offset: u64, bytes: &[u8]) -> io::Result<()>;
    /// Makes the file appear under its final name, after the last byte.
    fn commit(self: Box<Self>) -> io::Result<()>;
    /// Keeps what arrived of a cut store, hidden, for a later `REST` and
    /// `STOR` of the name to continue; returns its size, bytes, or `None`
    /// if this store cannot be kept.
    fn keep(self: Box<Self>) -> io::Result<Option<u64>>;
}

/// Where the bytes of a store go.
#[derive(Debug)]
pub enum Sink {
    /// A file under the root.
    File(Box<dyn StoreTarget>),
    /// The benchmark sink: count and drop.
    Discard,
}

/// Which way a transfer moves bytes.
#[derive(Debug)]
pub enum Flow {
    /// Server to client (RETR, LIST, NLST, MLSD).
    Send(Source),
    /// Client to server (STOR, APPE).
    Receive(Sink),
}

/// How to get the data connection.
#[derive(Debug)]
pub enum Endpoint {
    /// Accept on this listener (opened at PASV/EPSV with the SBUF request).
    Passive(TcpListener),
    /// Connect to the client's address (PORT/EPRT).
    Active(SocketAddr),
}

/// Settings of one data connection.
#[derive(Debug, Clone)]
pub struct DataParams {
    /// The control connection's peer: the only address data may come from.
    pub control_peer: IpAddr,
    /// The buffers the client asked for with SBUF (and the server's own).
    pub request: BufferRequest,
    /// How long to wait for the connection to be made.
    pub connect_timeout: Duration,
    /// How long the connection may move no byte.
    pub idle_timeout: Duration,
    /// Bytes per `write(2)` when this end sends (`--write-size`); `None`
    /// sends files and the zero source with `sendfile`.
    pub write_size: Option<WriteSize>,
    /// Whether a send holds its connection until the client acknowledged
    /// every byte (up to `idle_timeout`): closed at once, the kernel goes
    /// on sending what its buffer holds, and a buffer budget that freed
    /// the connection's share would count those buffers twice.
    pub drain: bool,
    /// `PROT P`: TLS on the data connection, this end the server side of
    /// the handshake whichever end connected.
    pub tls: Option<ServerTls>,
}

/// Stops a running transfer from another thread.
#[derive(Debug, Default)]
pub struct AbortHandle {
    aborted: AtomicBool,
    /// Whether the client asked for it (`ABOR`), not the session's end.
    asked: AtomicBool,
    socket: Mutex<Option<TcpStream>>,
}

impl AbortHandle {
    /// Stops the transfer because the client asked (`ABOR`): as
    /// [`AbortHandle::abort`], and a cut upload is not kept.
    pub fn abort_asked(&self) {
        self.asked.store(true, Ordering::SeqCst);
        self.abort();
    }

    pub(super) fn was_asked(&self) -> bool {
        self.asked.load(Ordering::SeqCst)
    }

    /// Stops the transfer: a waiting accept gives up, a copy fails at once.
    pub fn abort(&self) {
        self.aborted.store(true, Ordering::SeqCst);
        let socket = self.socket.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(socket) = socket.as_ref() {
            // Wakes a blocked read or write; the copy then sees the flag.
            let _ = socket.shutdown(Shutdown::Both);
        }
    }

    pub(super) fn is_aborted(&self) -> bool {
        self.aborted.load(Ordering::SeqCst)
    }

    /// Whether the data connection is up (the transfer watches it).
    pub fn connected(&self) -> bool {
        self.socket
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    }

    pub(super) fn watch(&self, socket: &TcpStream) {
        if let Ok(clone) = socket.try_clone() {
            *self.socket.lock().unwrap_or_else(PoisonError::into_inner) = Some(clone);
        }
        if self.is_aborted() {
            let _ = socket.shutdown(Shutdown::Both);
        }
    }
}

/// What a finished data connection reports.
#[derive(Debug)]
pub struct DataReport {
    /// How the transfer ended, for the session.
    pub outcome: TransferOutcome,
    /// The client's data address, once connected.
    pub peer: Option<SocketAddr>,
    /// The buffer request as applied to the data socket, when one was made.
    pub applied: Option<Applied>,
    /// Connections refused because they came from another address.
    pub strangers_refused: u32,
    /// From connection to the end.
    pub elapsed: Duration,
    /// The data socket's buffers after the last byte (autotuning moves them).
    pub final_buffers: Option<socket::BufferState>,
    /// What the connection's monitor found: peak buffers, the tuner's end.
    pub monitor: Option<Finished>,
    /// Over several streams (MODE E): what their tuners found, summed
    /// (it replaces the monitor's buffers and tuner).
    pub streams: Option<StreamsTuned>,
    /// The data socket's `TCP_INFO` after the last byte (the `226` carries
    /// its summary to a rightsize client).
    pub final_tcp_info: Option<rightsize_tune::tcpinfo::TcpInfoSample>,
    /// MODE E connections kept open for the next transfer: the client's
    /// after an upload, ours after a send.
    pub kept: Vec<DataStream>,
    /// Where a MODE E send's kept connections go (`None` for an upload).
    pub sent_to: Option<SocketAddr>,
}

impl DataReport {
    /// A report of nothing yet: aborted until the transfer says otherwise.
    pub fn new() -> DataReport {
        DataReport {
            outcome: TransferOutcome::Aborted,
            peer: None,
            applied: None,
            strangers_refused: 0,
            elapsed: Duration::ZERO,
            final_buffers: None,
            monitor: None,
            streams: None,
            final_tcp_info: None,
            kept: Vec::new(),
            sent_to: None,
        }
    }
}

/// Counters a running transfer shares with observers (telemetry).
#[derive(Debug, Default)]
pub struct Progress {
    /// Bytes moved so far.
    pub bytes: Arc<AtomicU64>,
    /// A MODE E receive's byte ranges written so far, as the blocks
    /// number them (for `111` range markers); empty otherwise.
    pub ranges: Mutex<rightsize_ftp_proto::mode_e::Ranges>,
}

/// Makes the data connection and moves the bytes. Blocks until done.
///
/// `on_connect` is called with the data socket once it is connected (the
/// telemetry sampler starts there) and returns a value handed back to
/// `on_end` with the report, so observers stop after the last byte.
pub fn run(
    endpoint: Endpoint,
    flow: Flow,
    params: &DataParams,
    abort: &AbortHandle,
    progress: &Arc<Progress>,
    on_connect: &mut dyn FnMut(&TcpStream),
    client_alive: &dyn Fn() -> bool,
) -> DataReport {
    let mut report = DataReport::new();
    let stream = match connect(endpoint, params, abort, &mut report) {
        Ok(stream) => stream,
        Err(outcome) => {
            report.outcome = outcome;
            return report;
        }
    };
    report.peer = stream.peer_addr().ok();
    abort.watch(&stream);
    let _ = stream.set_read_timeout(Some(params.idle_timeout));
    let _ = stream.set_write_timeout(Some(params.idle_timeout));
    on_connect(&stream);
    let observer = stream.try_clone().ok();
    let started = Instant::now();
    let aborted = || abort.is_aborted();
    let asked = || abort.was_asked();
    let idle = IdleWatch::default();
    // Not after the idle watch shut the connection down: the end of the
    // data that a stream-mode upload then reads is the cut.
    let may_commit = || !abort.is_aborted() && !idle.fired() && client_alive();
    idle.add(&stream);
    report.outcome = idle.during(params.idle_timeout, || {
        transfer(
            stream,
            flow,
            params,
            progress,
            &aborted,
            &may_commit,
            &asked,
        )
    });
    report.elapsed = started.elapsed();
    report.final_tcp_info = observer
        .as_ref()
        .and_then(|s| rightsize_sys::tcp_info::read(s.as_fd()).ok());
    report.final_buffers = observer.and_then(|s| socket::read_buffers(s.as_fd()).ok());
    // A session that ended cut the upload; what it kept is the news.
    let kept =
        matches!(&report.outcome, TransferOutcome::NetworkError(what) if what.contains(KEPT));
    if abort.is_aborted() && !kept {
        report.outcome = TransferOutcome::Aborted;
    }
    report
}

/// The bytes of a connected data connection, one way or the other.
fn transfer(
    stream: TcpStream,
    flow: Flow,
    params: &DataParams,
    progress: &Progress,
    aborted: &dyn Fn() -> bool,
    may_commit: &dyn Fn() -> bool,
    asked: &dyn Fn() -> bool,
) -> TransferOutcome {
    match (secure(params, stream), flow) {
        (Err(why), _) => TransferOutcome::DataConnectFailed(why),
        (Ok(DataStream::Plain(stream)), Flow::Send(source)) => {
            send(stream, source, params, progress, &aborted)
        }
        (Ok(DataStream::Plain(stream)), Flow::Receive(sink)) => {
            receive(stream, sink, progress, &may_commit, asked)
        }
        (Ok(DataStream::Tls(stream)), Flow::Send(source)) => {
            send_tls(*stream, source, params, progress, aborted)
        }
        (Ok(DataStream::Tls(mut stream)), Flow::Receive(sink)) => {
            let outcome = receive(&mut *stream, sink, progress, may_commit, asked);
            // The client waits for this end's close_notify too (Python's
            // ftplib does after a store).
            let _ = stream.finish();
            outcome
        }
    }
}

/// The data idle timeout, kept by watching the connections move: the
/// bytes the client acknowledged or sent (`TCP_INFO`), summed over a
/// transfer's connections (one in stream mode, a MODE E transfer's
/// streams as they come), read every quarter of the timeout (a tenth of
/// a second to a second). A send timeout alone fired late: a blocked
/// `sendfile` that had queued some bytes returns them only when its
/// timeout ends, and the next call waits a whole timeout again (15.3 s
/// for a 5 s timeout, measured).
#[derive(Debug, Default)]
pub(super) struct IdleWatch {
    fired: AtomicBool,
    stopped: Mutex<bool>,
    signal: Condvar,
    sockets: Mutex<Vec<TcpStream>>,
}

impl IdleWatch {
    /// Watches `socket` too (a clone of it) from now on.
    pub(super) fn add(&self, socket: &TcpStream) {
        if let Ok(clone) = socket.try_clone() {
            self.sockets
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(clone);
        }
    }

    /// Runs `work` while a thread watches the connections added (before
    /// and during it); after `limit` without movement of any, shuts them
    /// all down, and the work fails at once. Work that ended after the
    /// watch fired, however it ended, is a network error that says so.
    pub(super) fn during(
        &self,
        limit: Duration,
        work: impl FnOnce() -> TransferOutcome,
    ) -> TransferOutcome {
        let outcome = std::thread::scope(|scope| {
            let _ = std::thread::Builder::new()
                .name("ftp-data-idle".into())
                .spawn_scoped(scope, || self.watch(limit));
            let outcome = work();
            *self.stopped.lock().unwrap_or_else(PoisonError::into_inner) = true;
            self.signal.notify_all();
            outcome
        });
        // Once the watch fired, the work's end is the watch's doing, even
        // when it reads as complete: an upload in stream mode ends at the
        // end of the data, and a connection shut down reads as that end
        // (a 20 MB upload cut by a 7 s outage was kept as complete at
        // 3.2 MB, under its final name).
        if self.fired() {
            let idle = idle_timeout();
            return TransferOutcome::NetworkError(match outcome {
                // What the work said of it (a cut upload kept) follows.
                TransferOutcome::NetworkError(what) if what.contains(KEPT) => {
                    format!("{idle}: {what}")
                }
                _ => idle.to_string(),
            });
        }
        outcome
    }

    /// Whether the watch fired (and shut the connections down).
    pub(super) fn fired(&self) -> bool {
        self.fired.load(Ordering::SeqCst)
    }

    /// How many connections, and the bytes they moved; a new connection is
    /// movement too.
    fn moved(&self) -> (usize, u64) {
        let sockets = self.sockets.lock().unwrap_or_else(PoisonError::into_inner);
        let bytes = sockets
            .iter()
            .filter_map(|s| rightsize_sys::tcp_info::read(s.as_fd()).ok())
            .fold(0u64, |sum, i| {
                sum.wrapping_add(i.bytes_acked.unwrap_or(0))
                    .wrapping_add(i.bytes_received.unwrap_or(0))
            });
        (sockets.len(), bytes)
    }

    fn watch(&self, limit: Duration) {
        let tick = (limit / 4).clamp(Duration::from_millis(100), Duration::from_secs(1));
        let (mut last, mut since) = (self.moved(), Instant::now());
        let mut stopped = self.stopped.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            // The work may have ended before this thread first waits: the
            // flag is read before each wait, or the transfer's end (and its
            // reply) waited a whole tick (a 3 MB download that took 3 ms
            // logged 1.001 s).
            stopped = self
                .signal
                .wait_timeout_while(stopped, tick, |stopped| !*stopped)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
            if *stopped {
                return;
            }
            let now = self.moved();
            // Nothing connected yet: the connect timeout's business.
            if now != last || now.0 == 0 {
                (last, since) = (now, Instant::now());
            } else if since.elapsed() >= limit {
                self.fired.store(true, Ordering::SeqCst);
                let sockets = self.sockets.lock().unwrap_or_else(PoisonError::into_inner);
                for socket in sockets.iter() {
                    let _ = socket.shutdown(Shutdown::Both);
                }
                return;
            }
        }
    }
}

fn connect(
    endpoint: Endpoint,
    params: &DataParams,
    abort: &AbortHandle,
    report: &mut DataReport,
) -> Result<TcpStream, TransferOutcome> {
    match endpoint {
        Endpoint::Active(addr) => {
            let (stream, applied) = socket::connect(addr, &params.request, params.connect_timeout)
                .map_err(|e| TransferOutcome::DataConnectFailed(format!("{e}")))?;
            report.applied = Some(applied);
            Ok(stream)
        }
        Endpoint::Passive(listener) => {
            let stream = accept_from_peer(&listener, params, abort, report)?;
            // The listener's buffers were inherited; apply again so an SBUF
            // that came after PASV still sizes this connection.
            let applied = socket::apply(stream.as_fd(), &params.request)
                .map_err(|e| TransferOutcome::DataConnectFailed(format!("{e}")))?;
            report.applied = Some(applied);
            Ok(stream)
        }
    }
}

fn accept_from_peer(
    listener: &TcpListener,
    params: &DataParams,
    abort: &AbortHandle,
    report: &mut DataReport,
) -> Result<TcpStream, TransferOutcome> {
    let deadline = Instant::now() + params.connect_timeout;
    let timed_out = || TransferOutcome::DataConnectFailed("no data connection in time".into());
    loop {
        if abort.is_aborted() {
            return Err(TransferOutcome::Aborted);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(timed_out());
        }
        // A failed poll is retried like a quiet one, until the deadline.
        if !matches!(poll::readable(listener, left.min(ACCEPT_POLL)), Ok(true)) {
            continue;
        }
        match listener.accept() {
            Ok((stream, from))
                if from.ip().to_canonical() == params.control_peer.to_canonical() =>
            {
                let _ = stream.set_nonblocking(false);
                return Ok(stream);
            }
            Ok((stranger, _)) => {
                report.strangers_refused += 1;
                drop(stranger);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(TransferOutcome::DataConnectFailed(format!("accept: {e}"))),
        }
    }
}

fn send(
    mut stream: TcpStream,
    source: Source,
    params: &DataParams,
    progress: &Progress,
    aborted: &dyn Fn() -> bool,
) -> TransferOutcome {
    let write_size = params.write_size;
    let count = &mut |n: usize| {
        progress.bytes.fetch_add(n as u64, Ordering::Relaxed);
    };
    let result = match (source, write_size) {
        (Source::File(file), None) => send_file(&stream, &file, progress),
        (Source::File(mut file), Some(size)) => {
            writes::copy(&mut file, &mut stream, size.bytes(), count).map_err(|e| match e {
                CopyError::Read(e) => SendError::Local(e),
                CopyError::Write(e) => write_error(e),
            })
        }
        (Source::Zero { remaining_bytes }, None) => {
            send_zeros(&mut stream, remaining_bytes, progress)
        }
        (Source::Zero { remaining_bytes }, Some(size)) => {
            writes::zeros(&mut stream, remaining_bytes, size.bytes(), count).map_err(write_error)
        }
        (Source::Bytes(bytes), None) => stream
            .write_all(&bytes)
            .map(|()| count(bytes.len()))
            .map_err(SendError::Network),
        (Source::Part { file, length }, size) => {
            let chunk = size.map_or(COPY_CHUNK_BYTES, |s| s.bytes());
            writes::copy(&mut file.take(length), &mut stream, chunk, count).map_err(|e| match e {
                CopyError::Read(e) => SendError::Local(e),
                CopyError::Write(e) => write_error(e),
            })
        }
        (Source::Bytes(bytes), Some(size)) => {
            writes::copy(&mut bytes.as_slice(), &mut stream, size.bytes(), count).map_err(|e| {
                match e {
                    CopyError::Read(e) | CopyError::Write(e) => write_error(e),
                }
            })
        }
    };
    match result {
        Ok(()) => finish_send(
            stream,
            progress,
            params.drain.then_some((params.idle_timeout, aborted)),
        ),
        Err(SendError::Network(e)) => TransferOutcome::NetworkError(e.to_string()),
        Err(SendError::Local(e)) => TransferOutcome::LocalError(e.to_string()),
    }
}

/// A data connection just made or accepted: under `PROT P` after its TLS
/// handshake (this end the server's side, whichever end connected), else
/// as it is; an error says why in words.
pub(super) fn secure(params: &DataParams, stream: TcpStream) -> Result<DataStream, String> {
    match &params.tls {
        Some(tls) => tls
            .accept(stream)
            .map(|s| DataStream::Tls(Box::new(s)))
            .map_err(|e| format!("TLS on a data connection (PROT P): {e}")),
        None => Ok(DataStream::Plain(stream)),
    }
}

/// [`send`] through TLS: every source is read and encrypted (no
/// `sendfile`; [`TlsStream::send_all`]), then `close_notify` and the FIN,
/// and the drain.
fn send_tls(
    stream: TlsStream,
    source: Source,
    params: &DataParams,
    progress: &Progress,
    aborted: &dyn Fn() -> bool,
) -> TransferOutcome {
    let write_size = params.write_size.map(|s| s.bytes().min(COPY_CHUNK_BYTES));
    let count = &mut |n: usize| {
        progress.bytes.fetch_add(n as u64, Ordering::Relaxed);
    };
    let sent = match source {
        Source::File(mut file) => {
            let left = file
                .metadata()
                .and_then(|m| Ok(m.len().saturating_sub(file.stream_position()?)))
                .ok();
            stream.send_all(&mut file, left, write_size, count)
        }
        Source::Part { file, length } => {
            stream.send_all(&mut file.take(length), Some(length), write_size, count)
        }
        Source::Bytes(bytes) => {
            let length = bytes.len() as u64;
            stream.send_all(&mut bytes.as_slice(), Some(length), write_size, count)
        }
        Source::Zero { remaining_bytes } => stream.send_all(
            &mut io::repeat(0).take(remaining_bytes),
            Some(remaining_bytes),
            write_size,
            count,
        ),
    };
    let socket = match sent {
        Ok(socket) => socket,
        Err(CopyError::Read(e)) => return TransferOutcome::LocalError(e.to_string()),
        Err(CopyError::Write(e)) => return TransferOutcome::NetworkError(e.to_string()),
    };
    let drain = params.drain.then_some((params.idle_timeout, aborted));
    drain_sent(&socket, drain);
    TransferOutcome::Complete {
        bytes: progress.bytes.load(Ordering::Relaxed),
    }
}

/// Closes the sending side (a FIN after the last byte) so the client sees
/// the end of the file; with `drain`, then waits (at most that long, and
/// not once the transfer is aborted) until the client has acknowledged
/// every byte.
fn finish_send(
    stream: TcpStream,
    progress: &Progress,
    drain: Option<(Duration, &dyn Fn() -> bool)>,
) -> TransferOutcome {
    let bytes = progress.bytes.load(Ordering::Relaxed);
    if let Err(e) = stream.shutdown(Shutdown::Write) {
        return TransferOutcome::NetworkError(format!("shutdown: {e}"));
    }
    drain_sent(&stream, drain);
    TransferOutcome::Complete { bytes }
}

/// With `drain`, waits (at most that long, and not once the transfer is
/// aborted) until the client has acknowledged every byte sent.
pub(super) fn drain_sent(stream: &TcpStream, drain: Option<(Duration, &dyn Fn() -> bool)>) {
    if let Some((most, aborted)) = drain {
        let until = Instant::now() + most;
        while Instant::now() < until && !aborted() {
            match rightsize_sys::tcp_info::read(stream.as_fd()) {
                Ok(info) if info.unacked_segs > 0 || info.notsent_bytes.unwrap_or(0) > 0 => {
                    thread::sleep(DRAIN_POLL);
                }
                _ => break,
            }
        }
    }
}

/// How often a draining send looks whether the client acknowledged all.
const DRAIN_POLL: Duration = Duration::from_millis(5);

enum SendError {
    Network(io::Error),
    Local(io::Error),
}

impl From<io::Error> for SendError {
    fn from(e: io::Error) -> Self {
        SendError::Network(e)
    }
}

/// Bytes of the in-memory zero file the benchmark source sends from.
const ZERO_FILE_BYTES: usize = 4 << 20;

/// A memory-backed file of zeros, made once per process: `sendfile` from it
/// hands page references to TCP instead of copying every byte from user
/// space, as a file from page cache is sent.
fn zero_file() -> Option<&'static File> {
    static ZERO_FILE: OnceLock<Option<File>> = OnceLock::new();
    ZERO_FILE
        .get_or_init(|| {
            let mut file = zero_copy::memfd_create(c"rightsize-zero").ok()?;
            for _ in 0..ZERO_FILE_BYTES / ZEROS.len() {
                file.write_all(&ZEROS).ok()?;
            }
            Some(file)
        })
        .as_ref()
}

fn send_zeros(
    stream: &mut TcpStream,
    remaining: u64,
    progress: &Progress,
) -> Result<(), SendError> {
    match zero_file() {
        Some(file) => send_zero_file(stream, file, remaining, progress),
        // The fallback without a memory file: `write` from a static buffer.
        None => writes::zeros(stream, remaining, ZEROS.len(), &mut |n| {
            progress.bytes.fetch_add(n as u64, Ordering::Relaxed);
        })
        .map_err(write_error),
    }
}

/// `sendfile(2)` from the zero file, round and round.
fn send_zero_file(
    stream: &TcpStream,
    file: &File,
    mut remaining: u64,
    progress: &Progress,
) -> Result<(), SendError> {
    let mut offset: u64 = 0;
    while remaining > 0 {
        if usize::try_from(offset).map_or(true, |at| at >= ZERO_FILE_BYTES) {
            offset = 0;
        }
        let left_in_file = ZERO_FILE_BYTES - usize::try_from(offset).unwrap_or(0);
        let n = usize::try_from(remaining)
            .unwrap_or(usize::MAX)
            .min(left_in_file);
        match sendfile(stream, file, Some(&mut offset), n)? {
            0 => return Err(io::Error::from(io::ErrorKind::WriteZero).into()),
            sent => {
                remaining -= sent as u64;
                progress.bytes.fetch_add(sent as u64, Ordering::Relaxed);
            }
        }
    }
    Ok(())
}

/// One `sendfile(2)` of at most `count` bytes, from `offset` (advanced) or
/// from the file's own position. Returns the bytes sent, 0 at the end of
/// the file. EIO is the file's fault, EAGAIN (the send timeout) the idle
/// timeout, anything else the network's.
fn sendfile(
    stream: &TcpStream,
    file: &File,
    offset: Option<&mut u64>,
    count: usize,
) -> Result<usize, SendError> {
    zero_copy::sendfile(stream, file, offset, count).map_err(|e| {
        if e.is_read_error() {
            SendError::Local(e.source)
        } else if e.is_would_block() {
            SendError::Network(idle_timeout())
        } else {
            SendError::Network(e.source)
        }
    })
}

fn idle_timeout() -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        "the data connection moved nothing for the idle timeout",
    )
}

/// A failed write to the data connection; the send timeout (`EAGAIN`) is
/// the idle timeout, as for `sendfile`.
fn write_error(e: io::Error) -> SendError {
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => SendError::Network(idle_timeout()),
        _ => SendError::Network(e),
    }
}

/// `sendfile(2)` from the file's current position to its end: the bytes go
/// from the page cache to the socket without a copy through user space.
fn send_file(stream: &TcpStream, file: &File, progress: &Progress) -> Result<(), SendError> {
    loop {
        match sendfile(stream, file, None, COPY_CHUNK_BYTES)? {
            0 => return Ok(()),
            sent => {
                progress.bytes.fetch_add(sent as u64, Ordering::Relaxed);
            }
        }
    }
}

/// A store's write or commit that failed: a full disk or quota is said
/// so (452), anything else is a local error (451).
pub(super) fn store_error(e: &io::Error) -> TransferOutcome {
    match e.kind() {
        io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded | io::ErrorKind::FileTooLarge => {
            TransferOutcome::StorageFull(e.to_string())
        }
        _ => TransferOutcome::LocalError(e.to_string()),
    }
}

/// Receives to the end of the stream. In stream mode (RFC 959 section
/// 3.4.1) the end of the data connection is the end of the file, and a
/// client that dies closes it just like one that finished; so the file is
/// committed only if `may_commit` still holds after the last byte (no ABOR,
/// and the control connection still open). What arrived of a cut upload
/// is kept hidden ([`StoreTarget::keep`]), unless the client `asked` for
/// the abort (`ABOR`).
fn receive(
    mut stream: impl Read,
    sink: Sink,
    progress: &Progress,
    may_commit: &dyn Fn() -> bool,
    asked: &dyn Fn() -> bool,
) -> TransferOutcome {
    let mut buf = vec![0u8; COPY_CHUNK_BYTES];
    let mut target = match sink {
        Sink::File(target) => Some(target),
        Sink::Discard => None,
    };
    loop {
        let n = match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                return cut(
                    target,
                    "the TLS stream ended without its close_notify (cut short?)",
                    asked(),
                );
            }
            // The read timeout is the idle timeout: nothing came for it.
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return cut(target, &idle_timeout().to_string(), asked());
            }
            Err(e) => return cut(target, &e.to_string(), asked()),
        };
        if let Some(target) = target.as_mut()
            && let Err(e) = target.write_all(&buf[..n])
        {
            return store_error(&e);
        }
        progress.bytes.fetch_add(n as u64, Ordering::Relaxed);
    }
    if !may_commit() {
        return cut(target, "the data connection was cut", asked());
    }
    if let Some(target) = target
        && let Err(e) = target.commit()
    {
        return store_error(&e);
    }
    TransferOutcome::Complete {
        bytes: progress.bytes.load(Ordering::Relaxed),
    }
}

/// How a cut upload's outcome says its part was kept.
const KEPT: &str = "kept, hidden";

/// An upload cut: what arrived is kept hidden for `REST` and `STOR` to
/// continue, unless the client `asked` for the abort, and the outcome says
/// so.
fn cut(target: Option<Box<dyn StoreTarget>>, why: &str, asked: bool) -> TransferOutcome {
    if asked {
        return TransferOutcome::NetworkError("the client aborted; the upload was not kept".into());
    }
    let what = match target.map(|t| t.keep()) {
        Some(Ok(Some(bytes))) => format!(
            "{bytes} bytes {KEPT} (not under its name): REST {bytes} then STOR of the name continues it"
        ),
        Some(Err(e)) => format!("the upload could not be kept: {e}"),
        _ => "the upload was not kept".to_owned(),
    };
    TransferOutcome::NetworkError(format!("{why}; {what}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_upload_cut_by_the_watch_is_not_complete() {
        // A client that connects and then sends nothing: the watch shuts
        // the connection down, and the read sees what looks like the end
        // of the data.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let _client = TcpStream::connect(listener.local_addr().expect("addr")).expect("connect");
        let (mut server, _) = listener.accept().expect("accept");
        let watch = IdleWatch::default();
        watch.add(&server);
        let outcome = watch.during(Duration::from_millis(300), || {
            let mut buf = [0u8; 1024];
            let mut bytes = 0;
            loop {
                match std::io::Read::read(&mut server, &mut buf) {
                    Ok(0) => return TransferOutcome::Complete { bytes },
                    Ok(n) => bytes += n as u64,
                    Err(e) => return TransferOutcome::NetworkError(e.to_string()),
                }
            }
        });
        assert!(
            matches!(&outcome, TransferOutcome::NetworkError(why) if why.contains("idle timeout")),
            "{outcome:?}"
        );
    }

    #[test]
    fn work_that_ends_at_once_is_not_held_by_the_watch() {
        // The watch ticks every second for a long limit; work that ends
        // before the watcher first waits must not wait that second (it
        // did, in nearly every one of these).
        let started = Instant::now();
        for _ in 0..20 {
            let outcome = IdleWatch::default().during(Duration::from_secs(60), || {
                TransferOutcome::Complete { bytes: 0 }
            });
            assert!(matches!(outcome, TransferOutcome::Complete { bytes: 0 }));
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "20 watches took {:?}: each waited for its tick",
            started.elapsed()
        );
    }
}
