//! Transfers in `MODE E` (GridFTP's extended blocks), as the server runs
//! them over `crate::blocks`.
//!
//! Sending (a retrieve or a listing, [`run`]): the server connects to the
//! client's PORT/EPRT address as many times as `OPTS RETR Parallelism=`
//! asked, and the connections share the file's blocks. They end with EOD
//! and stay open, as the Globus server's do: the next send to the same
//! address takes those the client has not closed (a pipelined tree
//! download then pays no handshake per file). A part of a file (ERET P)
//! goes in blocks numbered from 0, as if it were the whole file.
//!
//! Receiving (a store, [`receive`]): the client connects to the passive
//! listener as many times as it likes (up to 64), the connections a client
//! kept open after its last upload included; each connection's blocks are
//! written at their offsets, and the upload appears under its name only
//! once it is whole. The ranges written so far are kept in the
//! transfer's `Progress` for the `111` range markers.
//!
//! Guarantees: every socket is made by `rightsize_sys::socket` with the
//! SBUF request applied before the handshake (accepted ones: right after),
//! and a passive connection is accepted only from the control connection's
//! peer; an [`AbortHandle`] stops the streams between blocks. Every stream,
//! kept or new, gets a tuner from the transfer's [`StreamTuners`] (`auto`:
//! the streams sized as one flow); the report sums their buffers.

use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rightsize_ftp_proto::mode_e::{Assembly, Blocks, Ranges};
use rightsize_ftp_proto::session::TransferOutcome;
use rightsize_sys::socket;

use super::data::{
    self, AbortHandle, DataParams, DataReport, IdleWatch, Progress, Sink, Source, StoreTarget,
};
use crate::blocks::{self, BLOCK_BYTES, Failure, Incoming, WriteAt};
use crate::stream::DataStream;
use crate::tuning::StreamTuners;

/// The sink of a receive (`None` discards), which also notes each
/// write's range in `ranges` for the `111` markers.
struct Noted<'a> {
    target: Option<&'a mut Box<dyn StoreTarget>>,
    ranges: &'a Mutex<Ranges>,
}

impl WriteAt for Noted<'_> {
    fn write_at(&mut self, offset: u64, bytes: &[u8]) -> io::Result<()> {
        if let Some(target) = self.target.as_mut() {
            StoreTarget::write_at(target.as_mut(), offset, bytes)?;
        }
        let end = offset.saturating_add(bytes.len() as u64);
        self.ranges
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .add(offset, end);
        Ok(())
    }
}

/// Where a send goes, over which connections, tuned by what.
#[derive(Debug)]
pub struct Outgoing<'a> {
    /// The client's PORT/EPRT address.
    pub addr: SocketAddr,
    /// Connections to `addr` kept open by the last send there.
    pub cached: Vec<DataStream>,
    /// Keep them open after this send.
    pub keep: bool,
    /// Byte ranges the client has already (`REST` with ranges): not sent.
    pub done: Ranges,
    /// The streams' tuners.
    pub tuners: &'a StreamTuners,
}

/// Where an upload comes from, tuned by what.
#[derive(Debug)]
pub struct Arriving<'a> {
    /// The passive listener.
    pub listener: TcpListener,
    /// The connections the client kept open after its last upload.
    pub cached: Vec<DataStream>,
    /// The streams' tuners.
    pub tuners: &'a StreamTuners,
}

/// Sends `source` (a file positioned at its REST offset, the zero source,
/// or a listing) in blocks over `streams` connections to `addr`, `cached`
/// ones (kept by the last send to `addr`) first, each tuned by `tuners`.
/// `on_connect` sees the first connection. Blocks until every connection
/// ended; with `keep`, the report's `kept` holds them, open, else they
/// are closed.
pub fn run(
    Outgoing {
        addr,
        cached,
        keep,
        done: already,
        tuners,
    }: Outgoing<'_>,
    source: Source,
    streams: u32,
    params: &DataParams,
    abort: &AbortHandle,
    progress: &Arc<Progress>,
    on_connect: &mut dyn FnMut(&TcpStream),
) -> DataReport {
    let mut report = DataReport::new();
    let (source, start, end) = match open(source) {
        Ok(opened) => opened,
        Err(e) => {
            report.outcome = TransferOutcome::LocalError(e.to_string());
            return report;
        }
    };
    let mut connections: Vec<DataStream> = cached
        .into_iter()
        .filter(|c| still_open(c.socket()))
        .take(usize::try_from(streams.max(1)).unwrap_or(1))
        .collect();
    while connections.len() < usize::try_from(streams.max(1)).unwrap_or(1) {
        let made = socket::connect(addr, &params.request, params.connect_timeout)
            .map_err(|e| format!("{e}"))
            .and_then(|(stream, applied)| {
                report.applied.get_or_insert(applied);
                let _ = stream.set_write_timeout(Some(params.idle_timeout));
                let _ = stream.set_read_timeout(Some(params.idle_timeout));
                data::secure(params, stream)
            });
        match made {
            Ok(stream) => connections.push(stream),
            Err(why) => {
                report.outcome = TransferOutcome::DataConnectFailed(why);
                return report;
            }
        }
    }
    let Some(first) = connections.first() else {
        return report;
    };
    for connection in &connections {
        tuners.tune(connection.socket());
    }
    let first = first.socket();
    report.peer = first.peer_addr().ok();
    abort.watch(first);
    on_connect(first);
    let observer = first.try_clone().ok();
    // Under a buffer budget every stream is counted until the client has
    // acknowledged its last byte, as a stream-mode send is.
    let draining: Vec<TcpStream> = if params.drain {
        connections
            .iter()
            .filter_map(|c| c.socket().try_clone().ok())
            .collect()
    } else {
        Vec::new()
    };
    let started = Instant::now();
    let mut done = already;
    done.add(0, start);
    let idle = IdleWatch::default();
    for connection in &connections {
        idle.add(connection.socket());
    }
    report.outcome = idle.during(params.idle_timeout, || {
        let result = blocks::send(
            connections,
            &source,
            Blocks::new(end, &done, BLOCK_BYTES),
            &progress.bytes,
            (&|| abort.is_aborted(), &|| false),
            keep,
        );
        for stream in &draining {
            super::data::drain_sent(stream, Some((params.idle_timeout, &|| abort.is_aborted())));
        }
        match result {
            Ok(kept) => {
                report.kept = kept;
                report.sent_to = keep.then_some(addr);
                TransferOutcome::Complete {
                    bytes: progress.bytes.load(Ordering::Relaxed),
                }
            }
            Err(failure) => outcome(failure),
        }
    });
    drop(draining);
    finish(&mut report, observer, started.elapsed());
    report.streams = tuners.finish();
    report
}

/// Whether a kept connection can carry another send: the receiver never
/// writes on it, so anything to read is its end (it closed, or reset).
fn still_open(stream: &TcpStream) -> bool {
    matches!(
        rightsize_sys::poll::wait_one(stream, rightsize_sys::poll::Want::Read, Duration::ZERO),
        Ok(ready) if !ready.any()
    )
}

/// Receives an upload in blocks over the connections the client kept
/// open after its last upload and those it opens to the listener, each
/// tuned by its tuners, into `sink`. `on_connect` sees the first
/// connection. Blocks until the upload is whole or failed; the report's
/// `kept` holds the connections that stay open for the client's next
/// upload.
pub fn receive(
    Arriving {
        listener,
        cached,
        tuners,
    }: Arriving<'_>,
    sink: Sink,
    params: &DataParams,
    abort: &AbortHandle,
    progress: &Arc<Progress>,
    on_connect: &mut dyn FnMut(&TcpStream),
) -> DataReport {
    let mut report = DataReport::new();
    let mut target = match sink {
        Sink::File(target) => Some(target),
        Sink::Discard => None,
    };
    let secured = |stream: TcpStream| data::secure(params, stream);
    let incoming = Incoming {
        listener: &listener,
        peer: params.control_peer,
        cached,
        secure: &secured,
        connect_timeout: params.connect_timeout,
        idle_timeout: params.idle_timeout,
    };
    let mut applied = None;
    let mut noted = Noted {
        target: target.as_mut(),
        ranges: &progress.ranges,
    };
    let idle = IdleWatch::default();
    let mut received = None;
    let watched = idle.during(params.idle_timeout, || {
        let (result, arrived) = blocks::receive(
            incoming,
            Assembly::new(None, Ranges::new()),
            Some(&mut noted),
            &progress.bytes,
            &|| abort.is_aborted(),
            &mut |stream| {
                idle.add(stream);
                if let Ok(a) = socket::apply(stream.as_fd(), &params.request) {
                    applied.get_or_insert(a);
                }
                tuners.tune(stream)
            },
            &mut |stream| {
                abort.watch(stream);
                on_connect(stream);
            },
        );
        received = Some(arrived);
        match result {
            Ok(assembly) => TransferOutcome::Complete {
                bytes: assembly.received().total(),
            },
            Err(failure) => outcome(failure),
        }
    });
    let Some(received) = received else {
        report.outcome = watched;
        return report;
    };
    report.applied = applied;
    report.strangers_refused = received.strangers;
    report.peer = received.first.as_ref().and_then(|s| s.peer_addr().ok());
    let elapsed = received.started.map_or(Duration::ZERO, |s| s.elapsed());
    finish(&mut report, received.first, elapsed);
    report.streams = tuners.finish();
    report.outcome = match watched {
        TransferOutcome::Complete { bytes } => match target.map(StoreTarget::commit) {
            Some(Err(e)) => super::data::store_error(&e),
            _ => TransferOutcome::Complete { bytes },
        },
        failed => failed,
    };
    if matches!(report.outcome, TransferOutcome::Complete { .. }) {
        report.kept = received.kept;
    }
    report
}

/// The source, and the byte range `start..end` to send.
fn open(source: Source) -> io::Result<(blocks::Source, u64, u64)> {
    match source {
        Source::File(mut file) => {
            let start = io::Seek::stream_position(&mut file)?;
            let end = file.metadata()?.len().max(start);
            Ok((blocks::Source::File(file), start, end))
        }
        Source::Zero { remaining_bytes } => Ok((blocks::Source::Zeros, 0, remaining_bytes)),
        Source::Bytes(bytes) => {
            let end = bytes.len() as u64;
            Ok((blocks::Source::Bytes(bytes), 0, end))
        }
        Source::Part { mut file, length } => {
            let base = io::Seek::stream_position(&mut file)?;
            Ok((blocks::Source::Window { file, base }, 0, length))
        }
    }
}

fn outcome(failure: Failure) -> TransferOutcome {
    match failure {
        Failure::Connect(why) => TransferOutcome::DataConnectFailed(why),
        Failure::Network(why) => TransferOutcome::NetworkError(why),
        Failure::Local(why) => TransferOutcome::LocalError(why),
        Failure::BadData(why) => TransferOutcome::BadData(why),
        Failure::Stopped => TransferOutcome::Aborted,
    }
}

/// The first connection's buffers and `TCP_INFO` at the end.
fn finish(report: &mut DataReport, first: Option<TcpStream>, elapsed: Duration) {
    report.elapsed = elapsed;
    report.final_tcp_info = first
        .as_ref()
        .and_then(|s| rightsize_sys::tcp_info::read(s.as_fd()).ok());
    report.final_buffers = first.and_then(|s| socket::read_buffers(s.as_fd()).ok());
}
