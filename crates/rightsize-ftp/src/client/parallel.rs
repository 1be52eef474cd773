//! [`get`] and [`put`] over several streams: GridFTP's MODE E
//! (`crate::blocks`). The sender opens the data connections (GFD.20): a
//! download listens (`EPRT`/`PORT`) and the server connects as many times
//! as `OPTS RETR Parallelism=N,N,N;` asks; an upload connects N times to
//! the server's `EPSV`/`PASV` port.
//!
//! Guarantees: a download is written at the blocks' offsets into its part
//! file, and renamed to its name only when the EODs the EOF counted are in,
//! every byte of `SIZE` arrived once, the `226` came and, with `verify`,
//! the checksum of the whole file matched. A download that fails keeps its
//! part file and the byte ranges it holds (`local::ranges_path`); with
//! `resume` they are sent as `REST 0-29,60-89` and only the rest comes (a
//! part kept by a stream-mode download is the range from 0 to its length).
//! Every stream gets the tuner's buffers ([`StreamTuners`]); `auto` sizes
//! them as one flow (`rightsize_tune::streams::share`), so that together
//! their windows follow the path's BDP: a download's receive buffers, an
//! upload's send buffers. `-P auto` ([`super::AUTO_STREAMS`]) adds a
//! download's streams in lanes ([`lanes`]), an upload's into its running
//! `STOR` ([`steer`]).

use crate::client::secure::ClientStream;
use std::fs::File;
use std::io;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsFd;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rightsize_ftp_proto::checksum::Checksum;
use rightsize_ftp_proto::command::{OptsCommand, OptsOther, TransferMode};
use rightsize_ftp_proto::mode_e::{Assembly, Blocks, Ranges};
use rightsize_ftp_proto::url::FtpUrl;
use rightsize_ftp_proto::{Arg, Command, Reply, Token};
use rightsize_sys::signals;
use rightsize_sys::socket;
use rightsize_tune::Role;
use rightsize_tune::streams::{self as chooser, Choice, Phase, Trials};
use std::sync::{Arc, Mutex};

use crate::tuning::StreamTuners;

use super::control::arg;
use super::data::{self, DataMode};
use super::error::ClientError;
use super::local::{PartFile, Sink, ranges_path, read_into};
use super::session::Session;
use super::transfer::{finish_checksum, open_upload, remote_path, start_checksum};
use super::{Direction, Observer, Options, Output, Report};
use crate::blocks::{self, BLOCK_BYTES, Crew, Failure, Incoming, WriteAt};
use crate::stream::DataStream;

mod bench;
mod lanes;

pub(super) use bench::{
    receive as bench_receive, receive_lanes as bench_receive_lanes, send as bench_send,
};

impl WriteAt for PartFile {
    fn write_at(&mut self, offset: u64, bytes: &[u8]) -> io::Result<()> {
        PartFile::write_at(self, offset, bytes)
    }
}

/// Downloads `url` to `output` over `streams` streams; with
/// `options.resume`, after the byte ranges its part file holds.
pub(crate) fn get(
    url: &FtpUrl,
    output: &Output,
    options: &Options,
    streams: u32,
    observer: &mut dyn Observer,
) -> Result<Report, ClientError> {
    let name = url.file_name().ok_or_else(|| ClientError::NoFileName {
        url: url.to_string(),
    })?;
    let Output::File(target) = output else {
        return Err(ClientError::Parallel {
            why: "blocks arrive in any order, so -P needs a file to write to, not standard output",
        });
    };
    let mut part = match Sink::open(&super::local_target(target, name), options.resume)? {
        Sink::File(part) => part,
        Sink::Device(_, path) if is_null(&path) => {
            // A memory-to-memory test: blocks written nowhere.
            let mut report = get_into(
                url,
                &mut Target::Null,
                options,
                streams,
                &mut Ranges::new(),
                observer,
            )?;
            report.local_path = Some(path);
            return Ok(report);
        }
        _ => {
            return Err(ClientError::Parallel {
                why: "blocks arrive in any order, so -P needs a regular file (or /dev/null) to write to",
            });
        }
    };
    let ranges_file = ranges_path(part.target());
    let held = if options.resume {
        held_ranges(&mut part, &ranges_file, observer)?
    } else {
        let _ = std::fs::remove_file(&ranges_file);
        Ranges::new()
    };
    let mut got = held.clone();
    let result = get_into(
        url,
        &mut Target::Part(&mut part),
        options,
        streams,
        &mut got,
        observer,
    );
    match result {
        Ok(mut report) => {
            report.local_path = Some(part.commit()?);
            let _ = std::fs::remove_file(&ranges_file);
            Ok(report)
        }
        Err(e) if got.total() > 0 && !matches!(e, ClientError::ChecksumMismatch { .. }) => {
            // Blocks land anywhere: what arrived is kept with its ranges.
            if record_ranges(&ranges_file, &got).is_err() {
                part.discard();
            }
            Err(e)
        }
        Err(e) => {
            part.discard();
            let _ = std::fs::remove_file(&ranges_file);
            Err(e)
        }
    }
}

/// The ranges a kept part file holds: its ranges file's, or, without one,
/// its length from 0 (a part kept by a stream-mode download). Ranges that
/// do not fit the part are not believed: the part is emptied.
fn held_ranges(
    part: &mut PartFile,
    ranges_file: &Path,
    observer: &mut dyn Observer,
) -> Result<Ranges, ClientError> {
    let recorded = match std::fs::read_to_string(ranges_file) {
        Ok(text) => Some(Ranges::parse(text.trim())),
        Err(_) => None,
    };
    let held = match recorded {
        Some(Ok(ranges)) if ranges.as_slice().last().is_none_or(|r| r.1 <= part.len()) => ranges,
        None => {
            let mut prefix = Ranges::new();
            prefix.add(0, part.len());
            prefix
        }
        Some(_) => {
            observer.warning(&format!(
                "{} does not describe {}: downloading it again",
                ranges_file.display(),
                part.path().display()
            ));
            part.restart()?;
            Ranges::new()
        }
    };
    Ok(held)
}

/// Writes `ranges` to `file`, synced, for a later `-C`.
fn record_ranges(file: &Path, ranges: &Ranges) -> io::Result<()> {
    let mut f = File::create(file)?;
    io::Write::write_all(&mut f, format!("{ranges}\n").as_bytes())?;
    f.sync_all()
}

/// Whether `path` is `/dev/null`.
fn is_null(path: &Path) -> bool {
    std::fs::canonicalize(path).is_ok_and(|p| p == Path::new("/dev/null"))
}

/// Where a download's blocks go.
enum Target<'a> {
    /// Its part file.
    Part(&'a mut PartFile),
    /// `/dev/null`: nothing is written.
    Null,
}

impl WriteAt for Target<'_> {
    fn write_at(&mut self, offset: u64, bytes: &[u8]) -> io::Result<()> {
        match self {
            Target::Part(part) => PartFile::write_at(part, offset, bytes),
            Target::Null => Ok(()),
        }
    }
}

fn get_into(
    url: &FtpUrl,
    target: &mut Target<'_>,
    options: &Options,
    streams: u32,
    got: &mut Ranges,
    observer: &mut dyn Observer,
) -> Result<Report, ClientError> {
    let path = url.path();
    let held = got.clone();
    let auto = streams == super::AUTO_STREAMS;
    let n = if auto { lanes::LANE_STREAMS } else { streams };
    let mut session = Session::open(url, options, observer)?;
    let size = extended_setup(&mut session, Some(path), n, observer)?;
    let sbuf = match options.sbuf_bytes {
        Some(bytes) => Some(session.sbuf(bytes, observer)?),
        None => None,
    };
    let checksum = start_checksum(&session, options, observer);
    let hooks = Hooks::new(options, &session, Role::Receiver);
    let server = session.control.server();
    // `-P auto` moves the file over lanes of streams, each with a part of
    // it, and adds lanes while that pays; without the size there are no
    // parts, and it stays with one lane's streams.
    let ran = match size {
        Some(size) if auto => lanes::run(
            session,
            url,
            options,
            size,
            got,
            target,
            (&hooks, &|| false, &|_, _| Ok(())),
            observer,
        ),
        _ => one_retr(
            session,
            url,
            options,
            (size, n),
            got,
            target,
            &hooks,
            observer,
        ),
    }?;
    let Ran {
        session,
        plan,
        streams,
        trials,
        tls,
        reply: _,
    } = ran;
    let (started, first) = hooks.take_first().unzip();
    let elapsed = started.map_or(std::time::Duration::ZERO, |s| s.elapsed());
    let checksum = match (checksum, target) {
        (Some(mut c), Target::Part(part)) => {
            part.read_back(|piece| c.update(piece))?;
            Some(c)
        }
        (Some(_), Target::Null) => {
            observer
                .warning("--verify: blocks written to /dev/null cannot be read back; not verified");
            None
        }
        (None, _) => None,
    };
    // Lanes that all ended by closing leave no control connection: one is
    // opened for the checksum.
    let session = match session {
        None if checksum.is_some() || options.verify => {
            Some(Session::open(url, options, observer)?)
        }
        session => session,
    };
    let checksum = match session {
        Some(mut session) => {
            let checksum = finish_checksum(&mut session, checksum, path, options.verify, observer)?;
            session.quit(observer);
            checksum
        }
        None => None,
    };
    let mut report = report(
        url,
        Direction::Get,
        (plan.0, plan.1, hooks.tuners.request().clone()),
        first.as_ref(),
        (
            got.total().saturating_sub(held.total()),
            elapsed,
            size,
            streams,
        ),
        server,
        sbuf,
        checksum,
    );
    report.resumed_bytes = held.total();
    report.tls = tls.map(|t| t.streams_report());
    report.tuning = streams_tuning(&hooks.tuners);
    report.stream_trials = stream_trials(&trials);
    Ok(report)
}

/// `-P auto`'s trials for the report.
fn stream_trials(trials: &[(u32, f64)]) -> Vec<super::StreamTrial> {
    trials
        .iter()
        .map(|&(streams, goodput_bps)| super::StreamTrial {
            streams,
            goodput_bps,
        })
        .collect()
}

/// The streams a transfer opens first: `streams`, or with `-P auto`
/// ([`super::AUTO_STREAMS`]) the chooser's first trial's.
fn first_streams(streams: u32) -> u32 {
    if streams == super::AUTO_STREAMS {
        chooser::FIRST
    } else {
        streams
    }
}

/// A `RETR` over streams, received.
pub(super) struct Streamed {
    /// How the data connections were made, and the buffers they got.
    pub(super) plan: (DataMode, socket::Applied),
    /// A completion reply that came instead of a `150`.
    pub(super) early: Option<Reply>,
    /// How the blocks ended.
    pub(super) result: Result<Assembly, Failure>,
    /// What came.
    pub(super) received: blocks::Received,
}

/// `RETR path` over streams that connect to a listener of their own
/// (`before` runs between the listener and the `RETR`: a `REST`), the
/// blocks received into `sink` with `assembly`'s expectations until whole,
/// failed or `stop`; the streams tuned by `hooks`, progress to `observer`
/// against the download's `size`.
#[allow(clippy::type_complexity)]
pub(super) fn retr_streams(
    session: &mut Session<ClientStream>,
    path: &[u8],
    before: &mut dyn FnMut(
        &mut Session<ClientStream>,
        &mut dyn Observer,
    ) -> Result<(), ClientError>,
    (assembly, sink): (Assembly, Option<&mut dyn WriteAt>),
    (hooks, options, size): (&Hooks, &Options, Option<u64>),
    observer: &mut dyn Observer,
    stop: &(dyn Fn() -> bool + Sync),
) -> Result<Streamed, ClientError> {
    let server = session.control.server();
    let plan = data::open_active(
        &mut session.control,
        &session.features,
        hooks.tuners.request(),
        observer,
    )?;
    let data::Pending::Listening(listener, _) = &plan.pending else {
        return Err(ClientError::Parallel {
            why: "the data connections could not be listened for",
        });
    };
    before(session, observer)?;
    let secure = session.mode_e_secure();
    let early = session.begin(&Command::Retr(arg(path, "path")?), path, observer)?;
    let incoming = Incoming {
        listener,
        peer: server.ip(),
        cached: Vec::new(),
        secure: &secure,
        connect_timeout: options.connect_timeout,
        idle_timeout: options.idle_timeout,
    };
    let (result, received) = std::thread::scope(|scope| {
        let worker = scope.spawn(|| {
            blocks::receive(
                incoming,
                assembly,
                sink,
                &hooks.moved,
                stop,
                &mut |stream| hooks.connected(stream),
                &mut |stream| hooks.first(stream),
            )
        });
        hooks.watch(observer, size, &|| worker.is_finished());
        worker
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    });
    Ok(Streamed {
        plan: (plan.mode, plan.applied),
        early,
        result,
        received,
    })
}

/// What a new lane's session asks of its server once logged in.
pub(super) type Prepare<'a> =
    &'a (dyn Fn(&mut Session<ClientStream>, &mut dyn Observer) -> Result<(), ClientError> + Sync);

/// What a download's streams moved, and where its end goes on.
struct Ran {
    /// A control connection still logged in, for the checksum and `QUIT`.
    session: Option<Session<ClientStream>>,
    /// How the data connections were made, and the buffers they got.
    plan: (DataMode, socket::Applied),
    /// Streams at the end.
    streams: u32,
    /// `-P auto`'s trials: streams and goodput.
    trials: Vec<(u32, f64)>,
    /// The TLS of the first session, whose streams the report describes.
    tls: Option<super::secure::SessionTls>,
    /// The first lane's final reply, when it read one (`-P auto`).
    reply: Option<Reply>,
}

/// The whole download (what `got` lacks) as one `RETR` over `streams`
/// streams: `-P N`.
#[allow(clippy::too_many_arguments)]
fn one_retr(
    mut session: Session<ClientStream>,
    url: &FtpUrl,
    options: &Options,
    (size, streams): (Option<u64>, u32),
    got: &mut Ranges,
    target: &mut Target<'_>,
    hooks: &Hooks,
    observer: &mut dyn Observer,
) -> Result<Ran, ClientError> {
    let path = url.path();
    let server = session.control.server();
    let held = got.clone();
    let streamed = retr_streams(
        &mut session,
        path,
        &mut |session, observer| {
            if held.total() > 0 {
                rest_ranges(session, &held, url, observer)?;
            }
            Ok(())
        },
        (
            Assembly::new(size, got.clone()),
            Some(target as &mut dyn WriteAt),
        ),
        (hooks, options, size),
        observer,
        &|| signals::caught().is_some(),
    )?;
    let Streamed {
        plan,
        early,
        result,
        received,
    } = streamed;
    *got = received.ranges.clone();
    if let Err(failure) = result {
        return Err(failed(failure, server, "RETR", url));
    }
    let reply = session.ending("RETR", early, observer)?;
    if !reply.is_completion() {
        return Err(session.remote_error("RETR", path, &reply));
    }
    Ok(Ran {
        tls: session.tls.clone(),
        session: Some(session),
        plan,
        streams,
        trials: Vec::new(),
        reply: None,
    })
}

/// What every stream of a download gets, from whichever thread accepts it:
/// the buffers requested, and with `--tune` a monitor whose tuner reads
/// it (`auto`: the streams as one flow, [`Aggregate`]); and the count of
/// bytes and the first stream, for the progress lines.
pub(super) struct Hooks {
    pub(super) tuners: StreamTuners,
    first: Mutex<Option<(Instant, TcpStream)>>,
    /// Payload bytes moved over all the streams.
    pub(super) moved: AtomicU64,
}

impl Hooks {
    fn new(options: &Options, session: &Session<ClientStream>, role: Role) -> Hooks {
        Hooks {
            tuners: StreamTuners::new(
                &options.buffers,
                options.tune,
                role,
                session.control.stream().socket().try_clone().ok(),
            ),
            first: Mutex::new(None),
            moved: AtomicU64::new(0),
        }
    }

    /// A stream came: its buffers, and its tuner's monitor (whose byte
    /// count it returns).
    pub(super) fn connected(&self, stream: &TcpStream) -> Option<Arc<AtomicU64>> {
        self.tuners.connected(stream)
    }

    /// A transfer's first stream; the download's first is kept.
    pub(super) fn first(&self, stream: &TcpStream) {
        let mut first = lock(&self.first);
        if first.is_none() {
            *first = stream.try_clone().ok().map(|s| (Instant::now(), s));
        }
    }

    /// Progress reports to `observer` (bytes over all the streams; the
    /// first stream's `TCP_INFO`) every [`WATCH_EVERY`] until `done`.
    pub(super) fn watch(
        &self,
        observer: &mut dyn Observer,
        size: Option<u64>,
        done: &dyn Fn() -> bool,
    ) {
        while !done() {
            std::thread::sleep(WATCH_EVERY);
            self.report(observer, size);
        }
    }

    /// One progress report, once the first stream came.
    pub(super) fn report(&self, observer: &mut dyn Observer, size: Option<u64>) {
        let first = lock(&self.first);
        if let Some((since, socket)) = first.as_ref() {
            observer.progress(&super::Progress {
                bytes: self.moved.load(Ordering::Relaxed),
                elapsed: since.elapsed(),
                expected_bytes: size,
                server_info: None,
                socket,
            });
        }
    }

    /// Where `trials` is at `at`: once its trial is over, the goodput, the
    /// share of the counted rounds that found a queue at the bottleneck,
    /// and the bytes moved; `None` before (the queue is counted from the
    /// second half on).
    fn trial_over(&self, trials: &mut Trials, at: Duration) -> Option<(f64, Option<f64>, u64)> {
        let moved = self.moved.load(Ordering::Relaxed);
        match trials.at(at, moved) {
            Phase::Running | Phase::Settled => None,
            Phase::Counting => {
                let _ = self.tuners.queued();
                None
            }
            Phase::Over(goodput) => Some((goodput, self.tuners.queued(), moved)),
        }
    }

    /// The download's first stream and when it came, once.
    fn take_first(&self) -> Option<(Instant, TcpStream)> {
        lock(&self.first).take()
    }
}

/// How often the progress of a download over several streams is told.
const WATCH_EVERY: std::time::Duration = std::time::Duration::from_millis(50);

/// `mutex`'s value, even if a thread panicked holding it.
pub(super) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// `REST` with the ranges held (GridFTP's restart in MODE E).
fn rest_ranges(
    session: &mut Session<ClientStream>,
    held: &Ranges,
    url: &FtpUrl,
    observer: &mut dyn Observer,
) -> Result<(), ClientError> {
    let reply = session
        .control
        .command(&Command::RestRanges(held.clone()), observer)?;
    if reply.code() == 350 {
        return Ok(());
    }
    Err(ClientError::NoRestart {
        server: session.control.server(),
        path: url.path_display(),
        offset: held.total(),
        reply: reply.to_string(),
    })
}

/// The control connection's smoothed RTT (the data's path), or 100 ms.
fn control_rtt(session: &Session<ClientStream>) -> std::time::Duration {
    rightsize_sys::tcp_info::read(session.control.stream().socket().as_fd())
        .ok()
        .filter(|i| i.rtt_us > 0)
        .map_or(std::time::Duration::from_millis(100), |i| {
            std::time::Duration::from_micros(u64::from(i.rtt_us))
        })
}

/// The streams' tuners, stopped, as one report: buffers summed over the
/// streams (each stream's peak and mean), decisions summed.
fn streams_tuning(tuners: &StreamTuners) -> Option<super::TuningReport> {
    tuners.finish().map(|tuned| super::TuningReport {
        buffers: tuned.buffers,
        tuner: tuned.tuner,
        extension: false,
        sent_to_peer: 0,
        received_from_peer: 0,
        ignored: Vec::new(),
        telemetry_error: None,
    })
}

/// Uploads `local` to `url` over `streams` streams.
pub(crate) fn put(
    local: &Path,
    url: &FtpUrl,
    options: &Options,
    streams: u32,
    observer: &mut dyn Observer,
) -> Result<Report, ClientError> {
    let (mut file, size) = open_upload(local)?;
    let path = remote_path(url, local);
    let mut session = Session::open(url, options, observer)?;
    let sbuf = match options.sbuf_bytes {
        Some(bytes) => Some(session.sbuf(bytes, observer)?),
        None => None,
    };
    extended_mode(&mut session, first_streams(streams), observer)?;
    let checksum = match start_checksum(&session, options, observer) {
        Some(mut c) => {
            hash_file(&mut file, &mut c).map_err(|source| ClientError::Local {
                op: "read",
                path: local.to_path_buf(),
                source,
            })?;
            Some(c)
        }
        None => None,
    };
    let stored = stor_blocks(
        &mut session,
        (url, &path),
        &blocks::Source::File(file),
        (Some(size), streams),
        options,
        observer,
        &|| false,
    )?;
    if !stored.reply.is_completion() {
        return Err(session.remote_error("STOR", &path, &stored.reply));
    }
    let checksum = finish_checksum(&mut session, checksum, &path, options.verify, observer)?;
    let server = session.control.server();
    let tls = session.tls.as_ref().map(|t| t.streams_report());
    session.quit(observer);
    let mut report = report(
        url,
        Direction::Put,
        stored.plan,
        stored.first.as_ref(),
        (stored.bytes, stored.elapsed, Some(size), stored.streams),
        server,
        sbuf,
        checksum,
    );
    report.local_path = Some(local.to_path_buf());
    report.tuning = stored.tuning;
    report.stream_trials = stream_trials(&stored.trials);
    report.tls = tls;
    server_side(&mut report, &stored.reply);
    Ok(report)
}

/// What a rightsize server's final reply tells of its side (its first
/// stream's `TCP_INFO` and buffers, the peaks summed over its streams).
fn server_side(report: &mut Report, reply: &Reply) {
    let text = reply.text();
    report.server_tcp = rightsize_tune::diagnose::tcp::TcpSummary::from_reply_text(&text);
    report.server_buffers =
        rightsize_ftp_proto::session::report::DataSocketBuffers::from_reply_text(&text);
}

/// What a `STOR` over several streams sent.
pub(super) struct Stored {
    /// How the data connections were made, the buffers they got, and the
    /// request.
    pub(super) plan: (DataMode, socket::Applied, socket::BufferRequest),
    /// The first stream (its `TCP_INFO` for the report).
    pub(super) first: Option<TcpStream>,
    /// Payload bytes sent.
    pub(super) bytes: u64,
    /// From the `STOR` to the last block.
    pub(super) elapsed: Duration,
    /// The streams' tuners, summed.
    pub(super) tuning: Option<super::TuningReport>,
    /// The `STOR`'s final reply.
    pub(super) reply: Reply,
    /// The most streams that ran at once.
    pub(super) streams: u32,
    /// `-P auto`'s trials: streams and goodput.
    pub(super) trials: Vec<(u32, f64)>,
}

/// `STOR path` (MODE E already set) of the blocks of `source` from 0 to
/// `size` (`None`: until `enough`) over `streams` streams
/// ([`super::AUTO_STREAMS`]: as many as the trials choose, [`steer`]),
/// connected to the server's passive address before the `STOR` (RFC 959
/// asks it of a passive data connection, and the Globus server answers
/// `STOR` only then), each tuned as one flow with the others; progress to
/// `observer`. Once `enough` says so, the streams end cleanly after the
/// blocks they send. Fails if the streams fail or the server refuses the
/// `STOR`; its final reply is the caller's to judge.
pub(super) fn stor_blocks(
    session: &mut Session<ClientStream>,
    (url, path): (&FtpUrl, &[u8]),
    source: &blocks::Source,
    (size, streams): (Option<u64>, u32),
    options: &Options,
    observer: &mut dyn Observer,
    enough: &(dyn Fn() -> bool + Sync),
) -> Result<Stored, ClientError> {
    let hooks = Hooks::new(options, session, Role::Sender);
    let auto = streams == super::AUTO_STREAMS;
    let rtt = control_rtt(session);
    let (mode, port) = data::passive_port(&mut session.control, observer)?;
    let server = session.control.server();
    let addr = SocketAddr::new(server.ip(), port);
    let connect = |hooks: &Hooks| {
        let (stream, a) = socket::connect(addr, hooks.tuners.request(), options.connect_timeout)
            .map_err(|source| ClientError::DataConnect {
                addr,
                mode: mode.verb(),
                source: Box::new(source),
            })?;
        let _ = stream.set_write_timeout(Some(options.idle_timeout));
        hooks.connected(&stream);
        hooks.first(&stream);
        Ok::<_, ClientError>((stream, a))
    };
    let mut connections = Vec::new();
    let mut applied = None;
    for _ in 0..first_streams(streams) {
        let (stream, a) = connect(&hooks)?;
        applied.get_or_insert(a);
        connections.push(stream);
    }
    let stor = Command::Stor(arg(path, "path")?);
    let reply = session.control.command(&stor, observer)?;
    if !reply.is_preliminary() {
        return Err(session.remote_error("STOR", path, &reply));
    }
    // Under PROT P each connection's handshake now: the server takes them
    // once it has the STOR.
    let connections = connections
        .into_iter()
        .map(|c| session.mode_e_stream(c, addr))
        .collect::<Result<Vec<_>, _>>()?;
    let crew = Crew::new(Blocks::new(
        size.unwrap_or(u64::MAX),
        &Ranges::new(),
        BLOCK_BYTES,
    ));
    let started = Instant::now();
    let mut trials = Trials::new(rtt, Duration::ZERO, 0);
    let mut most = connections.len() as u32;
    let result = std::thread::scope(|scope| {
        let worker = scope.spawn(|| {
            blocks::send_crew(
                connections,
                source,
                &crew,
                &hooks.moved,
                (&|| signals::caught().is_some(), enough),
                false,
            )
        });
        if auto {
            let join = || {
                let (stream, _) = connect(&hooks)?;
                session.mode_e_stream(stream, addr)
            };
            let crewed = Crewed {
                crew: &crew,
                hooks: &hooks,
                join: &join,
            };
            most = steer(
                &crewed,
                &mut trials,
                (size, started, most),
                observer,
                &|| worker.is_finished(),
            );
        } else {
            hooks.watch(observer, size, &|| worker.is_finished());
        }
        worker
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    });
    let elapsed = started.elapsed();
    let tuning = streams_tuning(&hooks.tuners);
    if let Err(failure) = result {
        return Err(failed(failure, server, "STOR", url));
    }
    let reply = session.ending("STOR", None, observer)?;
    Ok(Stored {
        plan: (
            mode,
            applied.unwrap_or_default(),
            hooks.tuners.request().clone(),
        ),
        first: hooks.take_first().map(|(_, s)| s),
        bytes: hooks.moved.load(Ordering::Relaxed),
        elapsed,
        tuning,
        reply,
        streams: most,
        trials: trials.trials().to_vec(),
    })
}

/// A sending transfer's streams, and how another joins them.
struct Crewed<'a> {
    crew: &'a Crew,
    hooks: &'a Hooks,
    /// Connects one more stream (its buffers, tuner and TLS).
    join: &'a dyn Fn() -> Result<DataStream, ClientError>,
}

/// `-P auto` for a sender: runs the trials over the transfer's streams
/// until `done`, adding streams to the running `STOR` (GFD.20: the
/// receiver takes connections until the EOF's count of them is in) or
/// asking the added ones to leave when they made it slower; progress to
/// `observer`. The most streams that ran at once (`first` at the start).
fn steer(
    crewed: &Crewed<'_>,
    trials: &mut Trials,
    (size, started, first): (Option<u64>, Instant, u32),
    observer: &mut dyn Observer,
    done: &dyn Fn() -> bool,
) -> u32 {
    let Crewed { crew, hooks, join } = crewed;
    let mut most = first;
    while !done() {
        std::thread::sleep(WATCH_EVERY);
        hooks.report(observer, size);
        let Some((goodput, queued, moved)) = hooks.trial_over(trials, started.elapsed()) else {
            continue;
        };
        let streams = crew.running() as u32;
        let decision = trials.decide(
            (streams, goodput, queued),
            (started.elapsed(), moved),
            crew.left(),
        );
        match decision {
            Choice::Try(n) => {
                for _ in streams..n {
                    if !crew.reserve() {
                        break;
                    }
                    match join() {
                        Ok(stream) => crew.join(stream),
                        Err(e) => {
                            observer.warning(&format!("-P auto: a stream could not be added: {e}"));
                            crew.lost(e.to_string());
                            trials.settle();
                            break;
                        }
                    }
                }
            }
            Choice::Settle(n) if n < streams => crew.leave(u64::from(streams - n)),
            Choice::Settle(_) => {}
        }
        let now = crew.running() as u32;
        most = most.max(now);
        let settled = if matches!(decision, Choice::Settle(_)) {
            " (settled)"
        } else {
            ""
        };
        observer.protocol(&trial_line(trials, queued, now, settled));
    }
    most
}

/// `-P auto`'s line after a trial: the trials so far, the queue the last
/// one found, the streams now, and `settled`'s words.
fn trial_line(trials: &Trials, queued: Option<f64>, now: u32, settled: &str) -> String {
    format!(
        "-P auto: {}{} -> {now} streams{settled}",
        trials
            .trials()
            .iter()
            .map(|(k, bps)| format!("{k} streams {:.1} Mbit/s", bps / 1e6))
            .collect::<Vec<_>>()
            .join(", "),
        queued.map_or(String::new(), |q| format!(
            " (a queue at the bottleneck in {:.0}% of the last rounds)",
            q * 100.0
        )),
    )
}

/// `MODE E`, and for a download `OPTS RETR Parallelism=N,N,N;`.
pub(super) fn extended_mode(
    session: &mut Session<ClientStream>,
    streams: u32,
    observer: &mut dyn Observer,
) -> Result<(), ClientError> {
    extended_setup(session, None, streams, observer).map(|_| ())
}

/// `SIZE path` (when given), `MODE E` and `OPTS RETR Parallelism=N,N,N;`;
/// the size, if the server told it. A server that lists `PARALLEL` in
/// `FEAT` (a GridFTP server: they take pipelined commands, as
/// `globus-url-copy -pp` sends them) gets the three in one flight, a round
/// trip instead of three; none of them starts anything if another fails.
fn extended_setup(
    session: &mut Session<ClientStream>,
    size_of: Option<&[u8]>,
    streams: u32,
    observer: &mut dyn Observer,
) -> Result<Option<u64>, ClientError> {
    let opts = OptsOther::new(
        Token::from_bytes(b"RETR").map_err(|_| ClientError::Parallel {
            why: "the RETR options could not be written",
        })?,
        Arg::new(format!("Parallelism={streams},{streams},{streams};").as_bytes()).ok(),
    )
    .map_err(|_| ClientError::Parallel {
        why: "the RETR options could not be written",
    })?;
    let mut commands = Vec::with_capacity(3);
    if let Some(path) = size_of {
        commands.push(Command::Size(arg(path, "path")?));
    }
    commands.push(Command::Mode(TransferMode::Extended));
    commands.push(Command::Opts(OptsCommand::Other(opts)));
    let replies = if session.features.has("PARALLEL") {
        for command in &commands {
            session.control.send(command, observer)?;
        }
        let mut replies = Vec::with_capacity(commands.len());
        for command in &commands {
            replies.push(session.control.reply(command.verb(), observer)?);
        }
        replies
    } else {
        let mut replies = Vec::with_capacity(commands.len());
        for command in &commands {
            let reply = session.control.command(command, observer)?;
            let refused = matches!(command, Command::Mode(_)) && !reply.is_completion();
            replies.push(reply);
            if refused {
                break;
            }
        }
        replies
    };
    let mut size = None;
    for (command, reply) in commands.iter().zip(&replies) {
        match command {
            Command::Size(_) => size = super::session::size_in(reply),
            Command::Mode(_) if !reply.is_completion() => {
                return Err(ClientError::NoParallel {
                    server: session.control.server(),
                    reply: reply.to_string(),
                });
            }
            _ if !reply.is_completion() => {
                return Err(session.control.refused(command, reply));
            }
            _ => {}
        }
    }
    Ok(size)
}

fn hash_file(file: &mut File, checksum: &mut Checksum) -> io::Result<()> {
    read_into(file, u64::MAX, |piece| checksum.update(piece)).map(|_| ())
}

pub(super) fn failed(
    failure: Failure,
    server: SocketAddr,
    verb: &'static str,
    url: &FtpUrl,
) -> ClientError {
    match failure {
        Failure::Stopped => ClientError::Interrupted {
            signal: signals::caught().unwrap_or("SIGINT"),
        },
        Failure::Connect(why)
        | Failure::Network(why)
        | Failure::Local(why)
        | Failure::BadData(why) => ClientError::Streams {
            server,
            verb,
            path: url.path_display(),
            why,
        },
    }
}

#[allow(clippy::too_many_arguments)]
fn report(
    url: &FtpUrl,
    direction: Direction,
    (data_mode, buffers_applied, buffers_requested): (
        DataMode,
        socket::Applied,
        socket::BufferRequest,
    ),
    first: Option<&TcpStream>,
    (bytes, elapsed, expected_bytes, streams): (u64, std::time::Duration, Option<u64>, u32),
    server: SocketAddr,
    sbuf: Option<super::SbufReport>,
    checksum: Option<super::ChecksumReport>,
) -> Report {
    Report {
        url: url.to_string(),
        direction,
        local_path: None,
        bytes,
        resumed_bytes: 0,
        streams,
        elapsed,
        server,
        data_mode,
        data_peer: first.and_then(|s| s.peer_addr().ok()).unwrap_or(server),
        buffers_requested,
        buffers_applied,
        server_buffers: None,
        sbuf,
        tcp_info: first.and_then(|s| rightsize_sys::tcp_info::read(s.as_fd()).ok()),
        write_size: None,
        checksum,
        expected_bytes,
        tuning: None,
        server_tcp: None,
        stream_trials: Vec::new(),
        tls: None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_part_file_takes_blocks_at_their_offsets() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("f.bin");
        let mut part = PartFile::create(&target, false).unwrap();
        WriteAt::write_at(&mut part, 4, b"5678").unwrap();
        WriteAt::write_at(&mut part, 0, b"1234").unwrap();
        assert_eq!(part.len(), 8);
        part.commit().unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"12345678");
    }

    #[test]
    fn a_part_holds_its_recorded_ranges_or_its_length() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("f.bin");
        let mut part = PartFile::create(&target, false).unwrap();
        WriteAt::write_at(&mut part, 0, &[1u8; 100]).unwrap();
        WriteAt::write_at(&mut part, 300, &[2u8; 100]).unwrap();
        drop(part);
        let ranges_file = ranges_path(&target);
        let mut got = Ranges::new();
        got.add(0, 100);
        got.add(300, 400);
        record_ranges(&ranges_file, &got).unwrap();
        assert_eq!(super::super::kept_bytes(&target), Some(200));
        let mut part = PartFile::create(&target, true).unwrap();
        let held = held_ranges(&mut part, &ranges_file, &mut ()).unwrap();
        assert_eq!(held, got);
        // Without a ranges file: a stream-mode part, a prefix.
        std::fs::remove_file(&ranges_file).unwrap();
        let held = held_ranges(&mut part, &ranges_file, &mut ()).unwrap();
        assert_eq!(held.as_slice(), [(0, 400)]);
        // Ranges past the part's end are not believed: it starts again.
        std::fs::write(&ranges_file, "0-100,300-900\n").unwrap();
        let held = held_ranges(&mut part, &ranges_file, &mut ()).unwrap();
        assert!(held.as_slice().is_empty());
        assert_eq!(part.len(), 0);
    }

    #[test]
    fn hash_file_reads_it_all() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x");
        std::fs::write(&path, vec![9u8; 3 << 20]).unwrap();
        let mut c = Checksum::of(rightsize_ftp_proto::checksum::Algorithm::Md5);
        hash_file(&mut File::open(&path).unwrap(), &mut c).unwrap();
        let mut d = Checksum::of(rightsize_ftp_proto::checksum::Algorithm::Md5);
        d.update(&vec![9u8; 3 << 20]);
        assert_eq!(c.finish(), d.finish());
    }

    #[test]
    fn the_streams_failure_names_the_transfer() {
        let url = FtpUrl::parse("ftp://127.0.0.1:2121/a/b.bin").unwrap();
        let e = failed(
            Failure::BadData("a block overlaps".into()),
            "127.0.0.1:2121".parse().unwrap(),
            "RETR",
            &url,
        );
        assert_eq!(
            e.to_string(),
            "127.0.0.1:2121: RETR \"a/b.bin\" over parallel streams failed: a block overlaps"
        );
    }
}
