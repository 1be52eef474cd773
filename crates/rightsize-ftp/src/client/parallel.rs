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
//! A download gives each stream its own tuner (receiver alone), so that
//! together their windows follow the path's BDP; an upload's streams are
//! the kernel's. `-P auto` ([`super::AUTO_STREAMS`]) runs trials of more
//! and more streams (`rightsize_tune::streams`), each a `RETR` of what is
//! missing, ended by closing its control connection.

use std::fs::File;
use std::io;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsFd;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use rightsize_ftp_proto::checksum::Checksum;
use rightsize_ftp_proto::command::{OptsCommand, OptsOther, TransferMode};
use rightsize_ftp_proto::mode_e::{Assembly, Blocks, Ranges};
use rightsize_ftp_proto::url::FtpUrl;
use rightsize_ftp_proto::{Arg, Command, Token};
use rightsize_sys::signals;
use rightsize_sys::socket;
use rightsize_sys::telemetry::{Monitor, Tuning};
use rightsize_tune::streams::{self as chooser, Choice, Chooser};
use rightsize_tune::{Peer, Role};
use std::sync::Arc;

use crate::tuning;

use super::control::arg;
use super::data::{self, DataMode};
use super::error::ClientError;
use super::local::{PartFile, Sink, ranges_path, read_into};
use super::session::Session;
use super::transfer::{finish_checksum, open_upload, remote_path, start_checksum};
use super::{Direction, Observer, Options, Output, Report};
use crate::blocks::{self, BLOCK_BYTES, Failure, Incoming, WriteAt};

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
    let mut session = Session::open(url, options, observer)?;
    let size = session.size(path, observer)?;
    let sbuf = match options.sbuf_bytes {
        Some(bytes) => Some(session.sbuf(bytes, observer)?),
        None => None,
    };
    // `-P auto`: trials of more and more streams, each a RETR of what is
    // still missing, ended by closing its control connection, until one
    // is settled on.
    let auto = streams == super::AUTO_STREAMS;
    let mut n = if auto { chooser::FIRST } else { streams };
    let chooser = std::sync::Mutex::new(Chooser::new());
    let mut settled = !auto;
    extended_mode(&mut session, n, observer)?;
    let checksum = start_checksum(&session, options, observer);
    // Each stream has its own tuner, reading its own TCP_INFO: each
    // window follows that stream's share of the rate, so that together
    // they follow the path's BDP, not N times it. The pre-handshake
    // settings go on the listener, which the streams inherit.
    let request = match &options.tune {
        Some(spec) => tuning::request(
            &options.buffers,
            tuning::build(spec, Role::Receiver, Peer::Other)
                .setup()
                .pre_handshake,
        ),
        None => options.buffers.clone(),
    };
    let control = session.control.stream().try_clone().ok();
    let trial = chooser::phase_length(control_rtt(&session));
    let mut monitors: Vec<Monitor> = Vec::new();
    // The trial whose streams held the most buffer, for the report.
    let mut busiest: Option<super::TuningReport> = None;
    let server = session.control.server();
    let moved = AtomicU64::new(0);
    let mut first: Option<TcpStream> = None;
    let mut started: Option<Instant> = None;
    let (result, early, plan) = loop {
        // A listener for each trial: connections of the last one that
        // were still waiting in its backlog die with it.
        let plan = data::open_active(&mut session.control, &session.features, &request, observer)?;
        let data::Pending::Listening(listener, _) = &plan.pending else {
            return Err(ClientError::Parallel {
                why: "the data connections could not be listened for",
            });
        };
        if got.total() > 0 {
            rest_ranges(&mut session, got, url, observer)?;
        }
        let early = session.begin(&Command::Retr(arg(path, "path")?), path, observer)?;
        let phase = Phase::new((!settled).then_some(trial), n, &moved, &chooser);
        let incoming = Incoming {
            listener,
            peer: server.ip(),
            cached: Vec::new(),
            connect_timeout: options.connect_timeout,
            idle_timeout: options.idle_timeout,
        };
        let (result, received) = blocks::receive(
            incoming,
            Assembly::new(size, got.clone()),
            Some(target as &mut dyn WriteAt),
            &moved,
            &|| signals::caught().is_some() || phase.over(&moved),
            &mut |stream| {
                let _ = socket::apply(stream.as_fd(), &request);
                let spec = options.tune.as_ref()?;
                let own = Arc::new(AtomicU64::new(0));
                let tuning = Tuning {
                    tuner: tuning::build(spec, Role::Receiver, Peer::Other),
                    control: control.as_ref().and_then(|c| c.try_clone().ok()),
                    to_peer: None,
                    report_info: false,
                };
                let monitor = Monitor::start(stream, Arc::clone(&own), None, Some(tuning)).ok()?;
                monitors.push(monitor);
                Some(own)
            },
            &mut |_| {},
        );
        *got = received.ranges.clone();
        if first.is_none() {
            first = received.first;
            started = received.started;
        }
        settled |= phase.settled_here();
        let decision = phase
            .ended()
            .filter(|_| matches!(result, Err(Failure::Stopped)) && signals::caught().is_none());
        let Some(decision) = decision else {
            break (result, early, plan);
        };
        // The trial ends with its control connection, which every server
        // takes as the end of the transfer (an ABOR is answered in as many
        // ways as there are servers); the next trial logs in again.
        drop(plan);
        busiest = busier(busiest, streams_tuning(std::mem::take(&mut monitors)));
        drop(std::mem::replace(
            &mut session,
            Session::open(url, options, observer)?,
        ));
        n = match decision {
            Choice::Try(next) => next,
            Choice::Settle(chosen) => {
                settled = true;
                chosen
            }
        };
        let trials = chooser
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        observer.protocol(&format!(
            "-P auto: {} -> {n} streams{}",
            trials
                .trials()
                .iter()
                .map(|(k, bps)| format!("{k} streams {:.1} Mbit/s", bps / 1e6))
                .collect::<Vec<_>>()
                .join(", "),
            if settled { " (settled)" } else { "" }
        ));
        extended_mode(&mut session, n, observer)?;
    };
    let tuned = busier(busiest, streams_tuning(monitors));
    let elapsed = started.map_or(std::time::Duration::ZERO, |s| s.elapsed());
    if let Err(failure) = result {
        return Err(failed(failure, server, "RETR", url));
    }
    let reply = session.ending("RETR", early, observer)?;
    if !reply.is_completion() {
        return Err(session.remote_error("RETR", path, &reply));
    }
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
    let checksum = finish_checksum(&mut session, checksum, path, options.verify, observer)?;
    session.quit(observer);
    let bytes = moved.load(Ordering::Relaxed);
    let mut report = report(
        url,
        Direction::Get,
        (plan.mode, plan.applied, request),
        first.as_ref(),
        (bytes, elapsed, size, n),
        server,
        sbuf,
        checksum,
    );
    report.resumed_bytes = held.total();
    report.tuning = tuned;
    report.stream_trials = chooser
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .trials()
        .iter()
        .map(|&(streams, goodput_bps)| super::StreamTrial {
            streams,
            goodput_bps,
        })
        .collect();
    Ok(report)
}

/// `REST` with the ranges held (GridFTP's restart in MODE E).
fn rest_ranges(
    session: &mut Session<TcpStream>,
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
fn control_rtt(session: &Session<TcpStream>) -> std::time::Duration {
    rightsize_sys::tcp_info::read(session.control.stream().as_fd())
        .ok()
        .filter(|i| i.rtt_us > 0)
        .map_or(std::time::Duration::from_millis(100), |i| {
            std::time::Duration::from_micros(u64::from(i.rtt_us))
        })
}

/// One trial of `-P auto` with `streams` streams: `length` after it
/// starts, its goodput over its second half (after slow start) goes to the
/// chooser; the trial ends there unless the chooser keeps it going as it
/// is.
struct Phase<'a> {
    started: Instant,
    length: Option<std::time::Duration>,
    streams: u32,
    start_bytes: u64,
    half: std::sync::Mutex<Option<(Instant, u64)>>,
    chooser: &'a std::sync::Mutex<Chooser>,
    decision: std::sync::Mutex<Option<Choice>>,
}

impl<'a> Phase<'a> {
    fn new(
        length: Option<std::time::Duration>,
        streams: u32,
        moved: &AtomicU64,
        chooser: &'a std::sync::Mutex<Chooser>,
    ) -> Phase<'a> {
        Phase {
            started: Instant::now(),
            length,
            streams,
            start_bytes: moved.load(Ordering::Relaxed),
            half: std::sync::Mutex::new(None),
            chooser,
            decision: std::sync::Mutex::new(None),
        }
    }

    /// Whether the trial ends now: at its length the chooser decides, once;
    /// a decision to go on with these streams keeps it going to the end.
    fn over(&self, moved: &AtomicU64) -> bool {
        let Some(length) = self.length else {
            return false;
        };
        let elapsed = self.started.elapsed();
        if elapsed >= length / 2 {
            let mut half = self
                .half
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            half.get_or_insert_with(|| (Instant::now(), moved.load(Ordering::Relaxed)));
        }
        if elapsed < length {
            return false;
        }
        let mut decision = self
            .decision
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let choice = *decision.get_or_insert_with(|| {
            let goodput = self.goodput_bps(moved);
            self.chooser
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .measured(self.streams, goodput)
        });
        choice != Choice::Settle(self.streams)
    }

    fn decision(&self) -> Option<Choice> {
        *self
            .decision
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The chooser's decision, when it ended the trial.
    fn ended(&self) -> Option<Choice> {
        self.decision()
            .filter(|c| *c != Choice::Settle(self.streams))
    }

    /// Whether the chooser settled on these streams (the trial went on).
    fn settled_here(&self) -> bool {
        self.decision() == Some(Choice::Settle(self.streams))
    }

    /// Goodput over the second half (the whole trial if it had none).
    fn goodput_bps(&self, moved: &AtomicU64) -> f64 {
        let now = moved.load(Ordering::Relaxed);
        let half = *self
            .half
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (from, bytes) = half.unwrap_or((self.started, self.start_bytes));
        let seconds = from.elapsed().as_secs_f64();
        if seconds > 0.0 {
            now.saturating_sub(bytes) as f64 * 8.0 / seconds
        } else {
            0.0
        }
    }
}

/// Of two trials' tuning, the one whose streams held the most.
fn busier(
    a: Option<super::TuningReport>,
    b: Option<super::TuningReport>,
) -> Option<super::TuningReport> {
    match (a, b) {
        (Some(a), Some(b)) if a.buffers.peak_rcvbuf_bytes > b.buffers.peak_rcvbuf_bytes => Some(a),
        (a, b) => b.or(a),
    }
}

/// The streams' tuners, stopped, as one report: buffers summed over the
/// streams (each stream's peak and mean), decisions summed.
fn streams_tuning(monitors: Vec<Monitor>) -> Option<super::TuningReport> {
    let mut summed: Option<super::TuningReport> = None;
    for finished in monitors.into_iter().filter_map(|m| m.finish().ok()) {
        let Some(report) = summed.as_mut() else {
            summed = Some(super::TuningReport {
                buffers: finished.buffers,
                tuner: finished.tuner,
                extension: false,
                sent_to_peer: 0,
                received_from_peer: 0,
                ignored: Vec::new(),
                telemetry_error: None,
            });
            continue;
        };
        let (b, f) = (&mut report.buffers, &finished.buffers);
        b.peak_rcvbuf_bytes += f.peak_rcvbuf_bytes;
        b.peak_sndbuf_bytes += f.peak_sndbuf_bytes;
        b.mean_rcvbuf_bytes += f.mean_rcvbuf_bytes;
        b.mean_sndbuf_bytes += f.mean_sndbuf_bytes;
        if let (Some(sum), Some(one)) = (report.tuner.as_mut(), finished.tuner) {
            sum.decisions += one.decisions;
        }
    }
    summed
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
    extended_mode(&mut session, streams, observer)?;
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
    let request = options.buffers.clone();
    let (mode, port) = data::passive_port(&mut session.control, observer)?;
    let server = session.control.server();
    let addr = SocketAddr::new(server.ip(), port);
    let mut connections = Vec::new();
    let mut applied = None;
    for _ in 0..streams {
        let (stream, a) =
            socket::connect(addr, &request, options.connect_timeout).map_err(|source| {
                ClientError::DataConnect {
                    addr,
                    mode: mode.verb(),
                    source: Box::new(source),
                }
            })?;
        let _ = stream.set_write_timeout(Some(options.idle_timeout));
        applied.get_or_insert(a);
        connections.push(stream);
    }
    // Connected before STOR, as RFC 959 asks of a passive data
    // connection (the Globus server answers STOR only then).
    let stor = Command::Stor(arg(&path, "path")?);
    let reply = session.control.command(&stor, observer)?;
    if !reply.is_preliminary() {
        return Err(session.remote_error("STOR", &path, &reply));
    }
    let first = connections.first().and_then(|s| s.try_clone().ok());
    let moved = AtomicU64::new(0);
    let started = Instant::now();
    let result = blocks::send(
        connections,
        &blocks::Source::File(file),
        Blocks::new(size, &Ranges::new(), BLOCK_BYTES),
        &moved,
        &|| signals::caught().is_some(),
        false,
    );
    let elapsed = started.elapsed();
    if let Err(failure) = result {
        return Err(failed(failure, server, "STOR", url));
    }
    let reply = session.ending("STOR", None, observer)?;
    if !reply.is_completion() {
        return Err(session.remote_error("STOR", &path, &reply));
    }
    let checksum = finish_checksum(&mut session, checksum, &path, options.verify, observer)?;
    session.quit(observer);
    let mut report = report(
        url,
        Direction::Put,
        (mode, applied.unwrap_or_default(), request),
        first.as_ref(),
        (moved.load(Ordering::Relaxed), elapsed, Some(size), streams),
        server,
        sbuf,
        checksum,
    );
    report.local_path = Some(local.to_path_buf());
    Ok(report)
}

/// `MODE E`, and for a download `OPTS RETR Parallelism=N,N,N;`.
pub(super) fn extended_mode(
    session: &mut Session<TcpStream>,
    streams: u32,
    observer: &mut dyn Observer,
) -> Result<(), ClientError> {
    let mode = Command::Mode(TransferMode::Extended);
    let reply = session.control.command(&mode, observer)?;
    if !reply.is_completion() {
        return Err(ClientError::NoParallel {
            server: session.control.server(),
            reply: reply.to_string(),
        });
    }
    let opts = OptsOther::new(
        Token::from_bytes(b"RETR").map_err(|_| ClientError::Parallel {
            why: "the RETR options could not be written",
        })?,
        Arg::new(format!("Parallelism={streams},{streams},{streams};").as_bytes()).ok(),
    )
    .map_err(|_| ClientError::Parallel {
        why: "the RETR options could not be written",
    })?;
    session
        .control
        .expect_completion(&Command::Opts(OptsCommand::Other(opts)), observer)?;
    Ok(())
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
