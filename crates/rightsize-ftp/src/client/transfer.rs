//! [`get`] and [`put`]: one file over one data connection, in the order
//! the module `client` describes, with the bytes checksummed as they pass.
//!
//! Guarantees: the data connection has the idle timeout on every read and
//! write; the completion reply is read after the data connection ends
//! (a `226` already waiting is fine); a download is committed only after a
//! positive completion, the full `SIZE`, and a matching checksum.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rightsize_ftp_proto::checksum::{Algorithm, Checksum};
use rightsize_ftp_proto::url::FtpUrl;
use rightsize_ftp_proto::{Command, Reply};
use rightsize_sys::probe::Prober;
use rightsize_sys::signals;
use rightsize_sys::socket::{Applied, BufferApplied, BufferRequest};
use rightsize_sys::telemetry::{Monitor, TelemetryOut, Tuning};
use rightsize_tune::diagnose::tcp::TcpSummary;
use rightsize_tune::telemetry::{Direction as TelemetryDirection, Role as TelemetryRole};
use rightsize_tune::write_size::WriteSize;
use rightsize_tune::{Peer, Role, Tuner};

use super::control::{arg, is_timeout};
use super::data::{self, DataMode};
use super::error::ClientError;
use super::local::{Sink, read_into};
use super::pump::{self, Exchange, Pump};
use super::secure::{ClientStream, TlsReport};
use super::session::Session;
use super::{
    ChecksumReport, Direction, Observer, Options, Output, Progress, Report, TelemetryFile,
    TuningReport,
};
use crate::telemetry::{self, Describe};
use crate::tuning;
use crate::writes::read_full;
use rightsize_ftp_proto::session::report::DataSocketBuffers;

/// Bytes moved per read or write on the data connection, unless
/// [`Options::write_size`] says otherwise for writes.
pub(crate) const CHUNK_BYTES: usize = 256 * 1024;
/// The longest a download's read waits before progress is reported
/// again (with nothing new while the data stalls).
const STALL_TICK: Duration = Duration::from_millis(200);
/// How long a client whose data connection broke waits for the server's
/// reply, which says why (a `426` with the reason, a `452`). After an
/// outage the reply may come one retransmission later than the data
/// connection's reset: seconds.
const REPLY_AFTER_BREAK: Duration = Duration::from_secs(10);
/// What `--verify` says when the server has no checksum.
pub const NO_SERVER_CHECKSUM: &str = "not verified: the server offers no checksum";

/// Downloads `url` to `output` over one data connection.
pub(crate) fn get(
    url: &FtpUrl,
    output: &Output,
    options: &Options,
    observer: &mut dyn Observer,
) -> Result<Report, ClientError> {
    let path = url.path();
    let name = url.file_name().ok_or_else(|| ClientError::NoFileName {
        url: url.to_string(),
    })?;
    // Created (and locked) before connecting, so an unwritable directory
    // or a second download to the same name fails fast.
    let sink = match output {
        Output::Stdout => Sink::Stdout(io::stdout()),
        Output::File(target) => Sink::open(&local_target(target, name), options.resume)?,
    };
    let mut session = Session::open(url, options, observer)?;
    if options.tune.is_some() {
        session.rightsize_on(observer)?;
    }
    let mut report = get_file(&mut session, path, sink, None, options, observer)?;
    report.url = url.to_string();
    session.quit(observer);
    Ok(report)
}

/// Downloads `path` into `sink` over a session already open (logged in,
/// binary, the extension on if wanted), and leaves the session open for
/// the next file. `known_size` (from a listing) saves the `SIZE` round
/// trip. The report's `url` is left for the caller to fill in.
pub(crate) fn get_file(
    session: &mut Session<ClientStream>,
    path: &[u8],
    mut sink: Sink,
    known_size: Option<u64>,
    options: &Options,
    observer: &mut dyn Observer,
) -> Result<Report, ClientError> {
    if let Some(tune) = &options.tune {
        session.probe_early(tune, observer);
    }
    let expected_bytes = match known_size {
        Some(size) => Some(size),
        None => session.size(path, observer)?,
    };
    let sbuf = match options.sbuf_bytes {
        Some(bytes) => Some(session.sbuf(bytes, observer)?),
        None => None,
    };
    let mut checksum = start_checksum(session, options, observer);
    let resumed = resume_download(&mut sink, session, path, expected_bytes, observer)?;
    if resumed > 0
        && let (Some(c), Sink::File(part)) = (checksum.as_mut(), &mut sink)
    {
        part.read_back(|piece| c.update(piece))?;
    }
    let remaining = expected_bytes.map(|size| size.saturating_sub(resumed));

    let retr = Command::Retr(arg(path, "path")?);
    let mut data = open_data(session, &retr, path, Role::Receiver, options, observer)?;
    data.stream.receive_in_place(remaining);
    // Reads wait a tick at most, so that progress (and `-i`'s interval
    // lines, 0 bytes included) goes on while the data stalls; the idle
    // timeout counts from the last byte.
    let _ = data
        .stream
        .socket()
        .set_read_timeout(Some(STALL_TICK.min(options.idle_timeout)));
    let mut last_byte = Instant::now();
    let mut chunk = vec![0u8; CHUNK_BYTES];
    loop {
        if let Some(signal) = signals::caught() {
            return Err(ClientError::Interrupted { signal });
        }
        let n = match data.stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if is_timeout(&e) && last_byte.elapsed() < options.idle_timeout => {
                data.passed(&[], &mut checksum, remaining, observer);
                continue;
            }
            Err(e) => {
                let error = data.io_error("read", e, options);
                return Err(data.broken(session, observer, error, options));
            }
        };
        last_byte = Instant::now();
        let piece = &chunk[..n];
        sink.write_all(piece)?;
        data.passed(piece, &mut checksum, remaining, observer);
    }
    // TLS: our close_notify answers the server's (the bytes are all
    // here; a failure to say goodbye does not undo them).
    if data.stream.is_tls() {
        let _ = data.stream.end();
    }
    let (bytes, elapsed) = (data.moved(), data.started.elapsed());
    let done = data.finish(session, observer)?;
    if let Some(size_bytes) = expected_bytes.filter(|&size| size != resumed + bytes) {
        if resumed + bytes > size_bytes {
            sink.discard();
        }
        return Err(ClientError::ShortTransfer {
            server: session.control.server(),
            path: String::from_utf8_lossy(path).into_owned(),
            got_bytes: resumed + bytes,
            size_bytes,
        });
    }
    let checksum = match finish_checksum(session, checksum, path, options.verify, observer) {
        Ok(report) => report,
        Err(e) => {
            if matches!(e, ClientError::ChecksumMismatch { .. }) {
                sink.discard();
            }
            return Err(e);
        }
    };
    let local_path = sink.commit()?;
    let server = session.control.server();
    Ok(Report {
        url: String::new(),
        direction: Direction::Get,
        local_path,
        bytes,
        resumed_bytes: resumed,
        elapsed,
        server,
        sbuf,
        checksum,
        expected_bytes,
        ..done.report()
    })
}

/// With a part file kept from before (`Options::resume`), asks the server
/// to start after its bytes (`REST`); returns how many it holds. A part
/// longer than the remote file is not its start: emptied, from byte 0.
fn resume_download<S: Read + Write>(
    sink: &mut Sink,
    session: &mut Session<S>,
    path: &[u8],
    size: Option<u64>,
    observer: &mut dyn Observer,
) -> Result<u64, ClientError> {
    let Sink::File(part) = sink else {
        return Ok(0);
    };
    let held = part.len();
    if held == 0 {
        return Ok(0);
    }
    if size.is_some_and(|size| held > size) {
        observer.warning(&format!(
            "{} holds {held} bytes, more than the remote file's {}: downloading it again",
            part.path().display(),
            size.unwrap_or(0)
        ));
        part.restart()?;
        return Ok(0);
    }
    session.rest(path, held, observer)?;
    Ok(held)
}

/// Uploads the file at `local` to `url`; a URL ending in `/` gets the local
/// file's name appended (as curl -T does). The server's `226` is success.
pub(crate) fn put(
    local: &Path,
    url: &FtpUrl,
    options: &Options,
    observer: &mut dyn Observer,
) -> Result<Report, ClientError> {
    let path = remote_path(url, local);
    // Opened before connecting: a missing file fails fast.
    let upload = if local == Path::new(STDIN) {
        open_stdin()?
    } else {
        let (file, size) = open_upload(local)?;
        (file, Some(size))
    };
    let mut session = Session::open(url, options, observer)?;
    if options.tune.is_some() {
        session.rightsize_on(observer)?;
    }
    let mut report = put_file(&mut session, local, upload, &path, options, observer)?;
    report.url = url.to_string();
    session.quit(observer);
    Ok(report)
}

/// Uploads `upload` (the open file at `local` and its size, if known) to `path` over
/// a session already open, and leaves the session open for the next file.
/// The report's `url` is left for the caller to fill in.
pub(crate) fn put_file(
    session: &mut Session<ClientStream>,
    local: &Path,
    (mut file, size): (File, Option<u64>),
    path: &[u8],
    options: &Options,
    observer: &mut dyn Observer,
) -> Result<Report, ClientError> {
    let local_error = |op| {
        move |source| ClientError::Local {
            op,
            path: local.to_path_buf(),
            source,
        }
    };
    let expected_bytes = size;
    let sbuf = match options.sbuf_bytes {
        Some(bytes) => Some(session.sbuf(bytes, observer)?),
        None => None,
    };
    let mut checksum = start_checksum(session, options, observer);
    let resumed = if options.resume {
        resume_upload(&mut file, local, session, path, &mut checksum, observer)?
    } else {
        0
    };
    let remaining = expected_bytes.map(|size| size.saturating_sub(resumed));

    let stor = Command::Stor(arg(path, "path")?);
    let mut data = open_data(session, &stor, path, Role::Sender, options, observer)?;
    let mut chunk = vec![0u8; options.write_size.map_or(CHUNK_BYTES, WriteSize::bytes)];
    loop {
        // With a write size every piece is whole (one write each), however
        // the file's reads come.
        let read = match options.write_size {
            Some(_) => read_full(&mut file, &mut chunk),
            None => file.read(&mut chunk),
        };
        let n = match read {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(local_error("read")(e)),
        };
        if let Err(error) = data.send(&chunk[..n], &mut checksum, remaining, observer, options) {
            return Err(data.broken(session, observer, error, options));
        }
        if let Some(signal) = signals::caught() {
            return Err(ClientError::Interrupted { signal });
        }
    }
    if let Err(error) = data.end_upload(options) {
        return Err(data.broken(session, observer, error, options));
    }
    let (bytes, elapsed) = (data.moved(), data.started.elapsed());
    let done = data.finish(session, observer)?;
    let checksum = finish_checksum(session, checksum, path, options.verify, observer)?;
    let server = session.control.server();
    Ok(Report {
        url: String::new(),
        direction: Direction::Put,
        local_path: Some(local.to_path_buf()),
        bytes,
        resumed_bytes: resumed,
        elapsed,
        server,
        sbuf,
        checksum,
        expected_bytes,
        ..done.report()
    })
}

/// The local name of standard input for `put`: `put - URL`.
pub const STDIN: &str = "-";

/// Standard input to upload, and its size when it is a regular file (a
/// pipe's is known only at its end).
fn open_stdin() -> Result<(File, Option<u64>), ClientError> {
    let local_error = |op| {
        move |source| ClientError::Local {
            op,
            path: PathBuf::from("standard input"),
            source,
        }
    };
    let file = File::open("/dev/stdin").map_err(local_error("open"))?;
    let metadata = file.metadata().map_err(local_error("stat"))?;
    Ok((file, metadata.is_file().then_some(metadata.len())))
}

/// The file to upload and its size; a directory is refused.
pub(crate) fn open_upload(local: &Path) -> Result<(File, u64), ClientError> {
    let local_error = |op| {
        move |source| ClientError::Local {
            op,
            path: local.to_path_buf(),
            source,
        }
    };
    let file = File::open(local).map_err(local_error("open"))?;
    let metadata = file.metadata().map_err(local_error("stat"))?;
    if metadata.is_dir() {
        return Err(local_error("upload")(io::Error::from(
            io::ErrorKind::IsADirectory,
        )));
    }
    Ok((file, metadata.len()))
}

/// For `Options::resume`, asks the server how much of `path` it has (the
/// part of a cut upload a rightsize server kept, else `SIZE`; none if
/// refused) and to store after it (`REST`), and moves `file` there,
/// through `checksum`. Returns the bytes skipped. More than the local file
/// is not its start: the whole file goes again.
fn resume_upload<S: Read + Write>(
    file: &mut File,
    local: &Path,
    session: &mut Session<S>,
    path: &[u8],
    checksum: &mut Option<Checksum>,
    observer: &mut dyn Observer,
) -> Result<u64, ClientError> {
    let local_error = |op| {
        move |source| ClientError::Local {
            op,
            path: local.to_path_buf(),
            source,
        }
    };
    let len = file.metadata().map_err(local_error("stat"))?.len();
    let held = match session.kept_part(path, observer)? {
        Some(kept) => kept,
        None => session.size(path, observer)?.unwrap_or(0),
    };
    if held == 0 {
        return Ok(0);
    }
    if held > len {
        observer.warning(&format!(
            "the server holds {held} bytes of \"{}\", more than the local {len}: uploading it again",
            String::from_utf8_lossy(path)
        ));
        return Ok(0);
    }
    session.rest(path, held, observer)?;
    match checksum.as_mut() {
        Some(c) => {
            let read =
                read_into(file, held, |piece| c.update(piece)).map_err(local_error("read"))?;
            if read < held {
                return Err(local_error("read")(io::ErrorKind::UnexpectedEof.into()));
            }
        }
        None => {
            file.seek(SeekFrom::Start(held))
                .map_err(local_error("seek"))?;
        }
    }
    Ok(held)
}

/// `-o DIR` means the URL's file name inside `DIR`.
pub fn local_target(output: &Path, name: &[u8]) -> PathBuf {
    if output.is_dir() {
        output.join(std::ffi::OsStr::from_bytes(name))
    } else {
        output.to_path_buf()
    }
}

/// The URL's path, with the local file name appended when it ends in `/`.
pub(crate) fn remote_path(url: &FtpUrl, local: &Path) -> Vec<u8> {
    let mut path = url.path().to_vec();
    if url.file_name().is_none()
        && let Some(name) = local.file_name()
    {
        if !path.is_empty() && !path.ends_with(b"/") {
            path.push(b'/');
        }
        path.extend_from_slice(name.as_bytes());
    }
    path
}

/// Reads until the peer closes or the read timeout passes; what arrives is
/// not data (the server has nothing to send on an upload).
fn drain(stream: &mut ClientStream) {
    let mut scratch = [0u8; 4096];
    loop {
        match stream.read(&mut scratch) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

/// The checksum to compute while moving the bytes, if `--verify` and the
/// server offers one; warns when it does not.
pub(crate) fn start_checksum<S>(
    session: &Session<S>,
    options: &Options,
    observer: &mut dyn Observer,
) -> Option<Checksum> {
    if !options.verify {
        return None;
    }
    match session.features.checksum() {
        Some(algorithm) => Some(Checksum::of(algorithm)),
        None => {
            observer.warning(NO_SERVER_CHECKSUM);
            None
        }
    }
}

pub(crate) fn finish_checksum<S: Read + Write>(
    session: &mut Session<S>,
    checksum: Option<Checksum>,
    path: &[u8],
    verify: bool,
    observer: &mut dyn Observer,
) -> Result<Option<ChecksumReport>, ClientError> {
    let Some(checksum) = checksum else {
        return Ok(verify.then(unverified_report));
    };
    let algorithm: Algorithm = checksum.algorithm();
    session
        .verify(algorithm, checksum.finish(), path, observer)
        .map(Some)
}

/// The `--verify` report when the server offered no checksum.
fn unverified_report() -> ChecksumReport {
    ChecksumReport {
        algorithm: None,
        local: None,
        remote: None,
        verified: false,
        note: Some(NO_SERVER_CHECKSUM.to_owned()),
    }
}

/// An open data connection of a `RETR` or `STOR`, and its monitor.
#[derive(Debug)]
pub(crate) struct DataConn {
    /// The data connection, clear or TLS.
    pub(crate) stream: ClientStream,
    peer: SocketAddr,
    mode: DataMode,
    request: BufferRequest,
    applied: Applied,
    verb: &'static str,
    path: String,
    /// A completion reply the server sent instead of a preliminary one.
    early_completion: Option<Reply>,
    /// Samples the socket, runs the tuner and writes the telemetry.
    monitor: Monitor,
    /// Payload bytes moved, shared with the monitor.
    bytes: Arc<AtomicU64>,
    /// When the data connection became usable.
    pub(crate) started: Instant,
    /// With the RIGHTSIZE extension on: the control connection's reader
    /// and the count of in-transfer commands and replies.
    pump: Option<Pump>,
    exchange: Option<Arc<Exchange>>,
    /// Packet trains and the probe stream towards the server, for a
    /// receiving tuner that reads them.
    prober: Option<Prober>,
    /// The write size in force when this end sends.
    write_size: Option<WriteSize>,
}

/// What is left of a data connection once it is closed.
#[derive(Debug)]
pub(crate) struct DataDone {
    /// The server's data socket's `TCP_INFO` summary: final from a
    /// rightsize server's `226`, else its last in-transfer notice.
    pub(crate) server_tcp: Option<TcpSummary>,
    /// The completion reply, on one line.
    pub(crate) completion: String,
    mode: DataMode,
    peer: SocketAddr,
    request: BufferRequest,
    applied: Applied,
    server_buffers: Option<DataSocketBuffers>,
    tcp_info: Option<rightsize_tune::tcpinfo::TcpInfoSample>,
    tuning: Option<TuningReport>,
    write_size: Option<WriteSize>,
    tls: Option<TlsReport>,
}

impl DataDone {
    /// A report with what the data connection knows; the caller fills in
    /// the rest.
    pub(crate) fn report(self) -> Report {
        Report {
            url: String::new(),
            direction: Direction::Get,
            local_path: None,
            bytes: 0,
            resumed_bytes: 0,
            streams: 1,
            elapsed: Duration::ZERO,
            server: self.peer,
            data_mode: self.mode,
            data_peer: self.peer,
            buffers_requested: self.request,
            buffers_applied: self.applied,
            server_buffers: self.server_buffers,
            sbuf: None,
            tcp_info: self.tcp_info,
            write_size: self.write_size,
            checksum: None,
            expected_bytes: None,
            tuning: self.tuning,
            server_tcp: self.server_tcp,
            stream_trials: Vec::new(),
            tls: self.tls,
        }
    }
}

/// Sets up the data connection, sends `command` (`RETR` or `STOR`), reads
/// its `150`/`125`, makes the data connection usable and starts watching
/// it: the tuner (`--tune`), with its settings before the handshake, and
/// the telemetry file.
pub(crate) fn open_data(
    session: &mut Session<ClientStream>,
    command: &Command,
    path: &[u8],
    role: Role,
    options: &Options,
    observer: &mut dyn Observer,
) -> Result<DataConn, ClientError> {
    let peer = if session.rightsize {
        Peer::Rightsize
    } else {
        Peer::Other
    };
    let tuner = options
        .tune
        .as_ref()
        .map(|spec| tuning::build(spec, role, peer, &options.buffers));
    let request = match &tuner {
        Some(tuner) => tuning::request(&options.buffers, tuner.setup().pre_handshake),
        None => options.buffers.clone(),
    };
    // Buffers set by hand: a window clamp is held where the user put it,
    // since Linux raises it as receive autotuning grows the buffer.
    let tuner = tuner.or_else(|| tuning::held(&request));
    let plan = if options.active {
        data::open_active(&mut session.control, &session.features, &request, observer)?
    } else {
        data::open_passive(&mut session.control, &request, options, observer)?
    };
    warn_clamps(&plan.applied, observer);
    let verb = command.verb();
    let early_completion = session.begin(command, path, observer)?;
    let server = session.control.server();
    let (socket, peer) = plan
        .pending
        .establish(server, plan.mode, options.connect_timeout)?;
    let timeouts = socket
        .set_read_timeout(Some(options.idle_timeout))
        .and_then(|()| socket.set_write_timeout(Some(options.idle_timeout)));
    timeouts.map_err(|source| ClientError::DataIo {
        op: "set the timeouts",
        peer,
        source,
    })?;
    let stream = session.secure_data(socket, peer)?;
    let telemetry = match &options.telemetry {
        Some(file) => Some(open_telemetry(
            file,
            stream.socket(),
            role,
            tuner.as_deref(),
            options.write_size,
        )?),
        None => None,
    };
    let control = session.control.stream().socket();
    let exchange =
        (session.rightsize && options.tune.is_some()).then(|| Arc::new(Exchange::default()));
    let to_peer = match &exchange {
        Some(exchange) => Some(pump::sender(
            control_channel(session, server)?,
            Arc::clone(exchange),
        )),
        None => None,
    };
    let inputs = tuner.as_ref().map(|t| t.inputs());
    let tuning = tuner.map(|tuner| Tuning {
        tuner,
        control: control.try_clone().ok(),
        report_info: role == Role::Sender && to_peer.is_some(),
        to_peer,
    });
    let bytes = Arc::new(AtomicU64::new(0));
    let monitor = Monitor::start(stream.socket(), Arc::clone(&bytes), telemetry, tuning)?;
    let probe_to = session
        .server_probe_port
        .filter(|_| role == Role::Receiver)
        .map(|port| SocketAddr::new(server.ip(), port));
    // Trains started before the data (`Session::probe_early`) are this
    // connection's, or no one's.
    let early = session.early_probes.take();
    let prober = match (probe_to, monitor.inbox(), inputs, early) {
        (Some(_), Some(inbox), Some(_), Some(early)) => Some(early.deliver_to(&inbox)),
        (Some(to), Some(inbox), Some(inputs), None) => {
            match tuning::start_prober(inputs, to, &inbox) {
                Ok(prober) => prober,
                Err(e) => {
                    observer.warning(&format!("no UDP probes to {to}: {e}; tuning without them"));
                    None
                }
            }
        }
        _ => None,
    };
    let pump = match (&exchange, monitor.inbox()) {
        (Some(exchange), Some(inbox)) => {
            let reader = control_channel(session, server)?;
            let input = std::mem::take(session.control.input());
            let pump =
                Pump::start(reader, input, inbox, Arc::clone(exchange)).map_err(|source| {
                    ClientError::ControlIo {
                        op: "start the control reader".to_owned(),
                        server,
                        source,
                    }
                })?;
            Some(pump)
        }
        _ => None,
    };
    Ok(DataConn {
        stream,
        peer,
        mode: plan.mode,
        request,
        applied: plan.applied,
        verb,
        path: String::from_utf8_lossy(path).into_owned(),
        early_completion,
        monitor,
        bytes,
        started: Instant::now(),
        pump,
        exchange,
        prober,
        write_size: options.write_size.filter(|_| role == Role::Sender),
    })
}

/// The control connection for the threads of a transfer (clear, or the
/// session's TLS).
fn control_channel(
    session: &Session<ClientStream>,
    server: SocketAddr,
) -> Result<ClientStream, ClientError> {
    session
        .control
        .stream()
        .channel()
        .map_err(|source| ClientError::ControlIo {
            op: "dup the control socket".to_owned(),
            server,
            source,
        })
}

/// Creates the telemetry file of the data connection `stream`.
fn open_telemetry(
    file: &TelemetryFile,
    stream: &TcpStream,
    role: Role,
    tuner: Option<&dyn Tuner>,
    write_size: Option<WriteSize>,
) -> Result<TelemetryOut, ClientError> {
    let mut settings = file.settings.clone();
    settings.insert(
        "tune".to_owned(),
        tuner.map_or("none", |t| t.name()).to_owned(),
    );
    if role == Role::Sender {
        telemetry::record_write_size(&mut settings, write_size);
    }
    let describe = Describe {
        role: TelemetryRole::Client,
        direction: match role {
            Role::Receiver => TelemetryDirection::Receive,
            Role::Sender => TelemetryDirection::Send,
        },
        argv: std::env::args().collect(),
        settings,
    };
    Ok(telemetry::open(
        &file.path,
        stream,
        file.interval,
        describe,
    )?)
}

impl DataConn {
    /// Payload bytes moved so far.
    pub(crate) fn moved(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Counts a piece that crossed the data connection: the checksum, the
    /// byte count the monitor reads, and a progress report.
    pub(crate) fn passed(
        &self,
        piece: &[u8],
        checksum: &mut Option<Checksum>,
        expected_bytes: Option<u64>,
        observer: &mut dyn Observer,
    ) {
        if let Some(c) = checksum.as_mut() {
            c.update(piece);
        }
        let bytes =
            self.bytes.fetch_add(piece.len() as u64, Ordering::Relaxed) + piece.len() as u64;
        observer.progress(&Progress {
            bytes,
            elapsed: self.started.elapsed(),
            expected_bytes,
            server_info: self.exchange.as_ref().and_then(|e| e.last_info()),
            socket: self.stream.socket(),
        });
    }

    /// Writes a piece of an upload and counts it ([`DataConn::passed`]).
    pub(crate) fn send(
        &mut self,
        piece: &[u8],
        checksum: &mut Option<Checksum>,
        expected_bytes: Option<u64>,
        observer: &mut dyn Observer,
        options: &Options,
    ) -> Result<(), ClientError> {
        if let Err(e) = self.stream.write_all(piece) {
            return Err(self.io_error("write", e, options));
        }
        self.passed(piece, checksum, expected_bytes, observer);
        Ok(())
    }

    /// Ends an upload. End of file in stream mode is the close (RFC 959
    /// 3.4.1); waiting for the server's close too means every byte was
    /// acknowledged, so the elapsed time and the final TCP_INFO cover the
    /// whole transfer.
    pub(crate) fn end_upload(&mut self, options: &Options) -> Result<(), ClientError> {
        if let Err(e) = self.stream.end() {
            return Err(self.io_error("shutdown", e, options));
        }
        drain(&mut self.stream);
        Ok(())
    }

    /// The error of a data connection that broke (`error`, a
    /// [`ClientError::DataIo`]), or rather the server's reply that says
    /// why, if one comes within [`REPLY_AFTER_BREAK`]: the `426` of a
    /// server that ended the transfer, a full disk's `452`.
    pub(crate) fn broken(
        self,
        session: &mut Session<ClientStream>,
        observer: &mut dyn Observer,
        error: ClientError,
        options: &Options,
    ) -> ClientError {
        if !matches!(error, ClientError::DataIo { .. }) {
            return error;
        }
        let control = session.control.stream().socket();
        let _ = control.set_read_timeout(Some(REPLY_AFTER_BREAK.min(options.idle_timeout)));
        let said = self.finish(session, observer);
        let _ = session
            .control
            .stream()
            .socket()
            .set_read_timeout(Some(options.idle_timeout));
        match said {
            Err(reply @ ClientError::RemoteFile { .. }) => reply,
            _ => error,
        }
    }

    pub(crate) fn io_error(
        &self,
        op: &'static str,
        e: io::Error,
        options: &Options,
    ) -> ClientError {
        if is_timeout(&e) {
            ClientError::DataTimeout {
                peer: self.peer,
                verb: self.verb,
                path: self.path.clone(),
                bytes: self.moved(),
                timeout: options.idle_timeout,
            }
        } else {
            ClientError::DataIo {
                op,
                peer: self.peer,
                source: e,
            }
        }
    }

    /// Reads `TCP_INFO`, closes the data connection and reads the
    /// completion reply; a negative one is the transfer's error.
    fn finish<S: Read + Write>(
        self,
        session: &mut Session<S>,
        observer: &mut dyn Observer,
    ) -> Result<DataDone, ClientError> {
        self.finish_or_stop(session, observer, false)
    }

    /// [`DataConn::finish`]; with `stopped_early` (the client ended the
    /// transfer on purpose by closing the data connection) a negative
    /// completion reply is expected and kept in the report, not an error.
    pub(crate) fn finish_or_stop<S: Read + Write>(
        self,
        session: &mut Session<S>,
        observer: &mut dyn Observer,
        stopped_early: bool,
    ) -> Result<DataDone, ClientError> {
        let tcp_info = rightsize_sys::tcp_info::read(self.stream.socket().as_fd()).ok();
        let tls = session.tls_report(&self.stream);
        drop(self.prober);
        // The monitor first: after it, nothing more is sent in-transfer.
        let finished = self.monitor.finish().ok();
        drop(self.stream);
        let server = session.control.server();
        if let Some(pump) = self.pump {
            let (input, error) = pump.stop();
            *session.control.input() = input;
            if let Some(source) = error {
                return Err(ClientError::ControlIo {
                    op: format!("read the control connection during {}", self.verb),
                    server,
                    source,
                });
            }
        }
        let exchange = self.exchange.unwrap_or_default();
        let reply = match self.early_completion {
            Some(reply) => reply,
            None => loop {
                // Skip further 1yz replies (markers some servers send) and
                // the answers to in-transfer commands.
                let reply = session.control.reply(self.verb, observer)?;
                if !reply.is_preliminary() && !exchange.take_answer(&reply) {
                    break reply;
                }
            },
        };
        // Answers that come after the 226 (a server that queues them).
        while exchange.owed() > 0 {
            let late = session.control.reply("an in-transfer command", observer)?;
            if !exchange.take_answer(&late) {
                return Err(ClientError::Unexpected {
                    server,
                    command: "SBUF/RINF during the transfer".to_owned(),
                    reply: late.to_string(),
                    problem: "not an answer to an in-transfer command; the control connection is out of step".to_owned(),
                });
            }
        }
        let tuning = finished.map(|finished| TuningReport {
            buffers: finished.buffers,
            tuner: finished.tuner,
            extension: session.rightsize,
            sent_to_peer: exchange.sent(),
            received_from_peer: exchange.received(),
            ignored: exchange.ignored(),
            telemetry_error: finished.telemetry_error,
        });
        if !reply.is_completion() && !stopped_early {
            return Err(session.remote_error(self.verb, self.path.as_bytes(), &reply));
        }
        let text = reply.text();
        Ok(DataDone {
            server_tcp: TcpSummary::from_reply_text(&text)
                .or_else(|| exchange.last_info().map(|i| TcpSummary::from_peer_info(&i))),
            completion: reply.to_string(),
            mode: self.mode,
            peer: self.peer,
            request: self.request,
            applied: self.applied,
            server_buffers: DataSocketBuffers::from_reply_text(&text),
            tcp_info,
            tuning,
            write_size: self.write_size,
            tls,
        })
    }
}

/// Warns about each buffer the kernel capped, with the command that lifts
/// the cap.
fn warn_clamps(applied: &Applied, observer: &mut dyn Observer) {
    let buffers: [(&str, &Option<BufferApplied>); 2] = [
        ("SO_RCVBUF", &applied.rcvbuf),
        ("SO_SNDBUF", &applied.sndbuf),
    ];
    for (name, buffer) in buffers {
        let Some(b) = buffer else { continue };
        let Some(cause) = b.clamped_by else { continue };
        let fix = b
            .lift_command()
            .map(|c| format!("; lift it with `{c}`"))
            .unwrap_or_default();
        observer.warning(&format!(
            "{name}: asked for {} bytes, the kernel kept {} (capped by {cause}){fix}",
            b.requested_bytes, b.applied_bytes
        ));
    }
}
