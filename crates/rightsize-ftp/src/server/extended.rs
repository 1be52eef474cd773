//! Transfers in `MODE E` (GridFTP's extended blocks).
//!
//! Sending (a retrieve or a listing, [`run`]): the server connects to the
//! client's PORT/EPRT address as many times as `OPTS RETR Parallelism=`
//! asked, and each connection takes the next block of the file
//! (`rightsize_ftp_proto::mode_e::Blocks`) until none is left, as the
//! Globus server does: 256 KiB blocks, an empty EOD block at the end of
//! each connection, and EOD with EOF (which counts the connections) on the
//! first. Each connection is then closed (the close bit is set): data
//! channels are not kept between transfers.
//!
//! Receiving (a store, [`receive`]): the client connects to the passive
//! listener as many times as it likes (up to [`MAX_PARALLELISM`]); each
//! connection's blocks are written at their offsets; the upload is whole
//! once the EODs the EOF counted are in and the bytes cover the file from
//! 0 with no hole (`mode_e::Assembly`).
//!
//! Guarantees: every socket is made by `rightsize_sys::socket` with the
//! SBUF request applied before the handshake, and a passive connection is
//! accepted only from the control connection's peer; a failed connect,
//! read or write on any connection stops them all and the transfer fails;
//! a block that overlaps another, reaches past the end of 64-bit offsets,
//! or follows its connection's EOD, and a connection that ends inside a
//! block, fail the upload, which then never appears under its name; an
//! [`AbortHandle`] stops them between blocks. The tuners do not run on
//! these connections yet: the kernel sizes their buffers unless SBUF or
//! the server's flags fix them.

use std::fs::File;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::Instant;

use rightsize_ftp_proto::mode_e::{
    Assembly, BlockReader, Blocks, Header, Item, MAX_PARALLELISM, Ranges, descriptor,
};
use rightsize_ftp_proto::session::TransferOutcome;
use rightsize_sys::{poll, socket};

use super::data::{self, AbortHandle, DataParams, DataReport, Progress, Sink, Source};

/// How often the receiving side's accept loop looks for the end.
const ACCEPT_POLL: std::time::Duration = std::time::Duration::from_millis(20);
/// How often a receiving connection looks for the end between reads.
const READ_POLL: std::time::Duration = std::time::Duration::from_millis(50);

/// Bytes per block, as the Globus server sends them.
pub const BLOCK_BYTES: u64 = 256 * 1024;

/// What the blocks are read from.
enum Reader {
    File(File),
    Zeros,
    Bytes(Vec<u8>),
}

impl Reader {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        match self {
            Reader::File(file) => file.read_exact_at(buf, offset),
            Reader::Zeros => {
                buf.fill(0);
                Ok(())
            }
            Reader::Bytes(bytes) => {
                let start = usize::try_from(offset).unwrap_or(usize::MAX);
                let piece = start
                    .checked_add(buf.len())
                    .and_then(|end| bytes.get(start..end))
                    .ok_or_else(|| io::Error::from(io::ErrorKind::UnexpectedEof))?;
                buf.copy_from_slice(piece);
                Ok(())
            }
        }
    }
}

/// Sends `source` (a file positioned at its REST offset, or the zero
/// source) in blocks over `streams` connections to `addr`. `on_connect`
/// sees the first connection. Blocks until every connection ended.
pub fn run(
    addr: SocketAddr,
    source: Source,
    streams: u32,
    params: &DataParams,
    abort: &AbortHandle,
    progress: &Arc<Progress>,
    on_connect: &mut dyn FnMut(&TcpStream),
) -> DataReport {
    let mut report = empty_report();
    let (reader, start, end) = match open(source) {
        Ok(opened) => opened,
        Err(e) => {
            report.outcome = TransferOutcome::LocalError(e.to_string());
            return report;
        }
    };
    let mut connections = Vec::new();
    for _ in 0..streams.max(1) {
        match socket::connect(addr, &params.request, params.connect_timeout) {
            Ok((stream, applied)) => {
                report.applied.get_or_insert(applied);
                let _ = stream.set_write_timeout(Some(params.idle_timeout));
                connections.push(stream);
            }
            Err(e) => {
                report.outcome = TransferOutcome::DataConnectFailed(format!("{e}"));
                return report;
            }
        }
    }
    let Some(first) = connections.first() else {
        return report;
    };
    report.peer = first.peer_addr().ok();
    abort.watch(first);
    on_connect(first);
    let observer = first.try_clone().ok();
    let started = Instant::now();
    let mut done = Ranges::new();
    done.add(0, start);
    let blocks = Mutex::new(Blocks::new(end, &done, BLOCK_BYTES));
    let failed = AtomicBool::new(false);
    let count = connections.len() as u64;
    let results: Vec<Result<(), SendError>> = thread::scope(|scope| {
        let handles: Vec<_> = connections
            .into_iter()
            .enumerate()
            .map(|(i, stream)| {
                let (reader, blocks, failed) = (&reader, &blocks, &failed);
                let last = if i == 0 {
                    Header {
                        descriptor: descriptor::EOD | descriptor::EOF | descriptor::CLOSE,
                        count: 0,
                        offset: count,
                    }
                } else {
                    Header::eod(true)
                };
                scope.spawn(move || {
                    let result = send_blocks(&stream, reader, blocks, last, progress, &|| {
                        abort.is_aborted() || failed.load(Ordering::SeqCst)
                    });
                    if result.is_err() {
                        failed.store(true, Ordering::SeqCst);
                        // Wakes the others' blocked writes.
                        let _ = stream.shutdown(Shutdown::Both);
                    } else {
                        let _ = stream.shutdown(Shutdown::Write);
                    }
                    result
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or(Err(SendError::Stopped)))
            .collect()
    });
    report.elapsed = started.elapsed();
    report.final_tcp_info = observer
        .as_ref()
        .and_then(|s| rightsize_sys::tcp_info::read(s.as_fd()).ok());
    report.final_buffers = observer.and_then(|s| socket::read_buffers(s.as_fd()).ok());
    let bytes = progress.bytes.load(Ordering::Relaxed);
    report.outcome = if abort.is_aborted() {
        TransferOutcome::Aborted
    } else if let Some(error) = results.into_iter().find_map(Result::err) {
        match error {
            SendError::Network(e) => TransferOutcome::NetworkError(e.to_string()),
            SendError::Local(e) => TransferOutcome::LocalError(e.to_string()),
            SendError::Stopped => {
                TransferOutcome::NetworkError("another data connection failed".into())
            }
        }
    } else {
        TransferOutcome::Complete { bytes }
    };
    report
}

/// The reader, and the byte range `start..end` to send.
fn open(source: Source) -> io::Result<(Reader, u64, u64)> {
    match source {
        Source::File(mut file) => {
            let start = io::Seek::stream_position(&mut file)?;
            let end = file.metadata()?.len().max(start);
            Ok((Reader::File(file), start, end))
        }
        Source::Zero { remaining_bytes } => Ok((Reader::Zeros, 0, remaining_bytes)),
        Source::Bytes(bytes) => {
            let end = bytes.len() as u64;
            Ok((Reader::Bytes(bytes), 0, end))
        }
    }
}

enum SendError {
    Network(io::Error),
    Local(io::Error),
    /// Stopped because another connection failed or the client aborted.
    Stopped,
}

/// One connection's share: blocks until none is left, then `last`.
fn send_blocks(
    mut stream: &TcpStream,
    reader: &Reader,
    blocks: &Mutex<Blocks>,
    last: Header,
    progress: &Progress,
    stop: &dyn Fn() -> bool,
) -> Result<(), SendError> {
    let mut buf = vec![0u8; usize::try_from(BLOCK_BYTES).unwrap_or(1 << 18)];
    loop {
        if stop() {
            return Err(SendError::Stopped);
        }
        let next = blocks.lock().unwrap_or_else(PoisonError::into_inner).take();
        let Some((offset, len)) = next else {
            break;
        };
        let piece = &mut buf[..usize::try_from(len).unwrap_or(0)];
        reader
            .read_exact_at(piece, offset)
            .map_err(SendError::Local)?;
        stream
            .write_all(&Header::data(offset, len).encode())
            .and_then(|()| stream.write_all(piece))
            .map_err(SendError::Network)?;
        progress.bytes.fetch_add(len, Ordering::Relaxed);
    }
    stream.write_all(&last.encode()).map_err(SendError::Network)
}

fn empty_report() -> DataReport {
    DataReport {
        outcome: TransferOutcome::Aborted,
        peer: None,
        applied: None,
        strangers_refused: 0,
        elapsed: std::time::Duration::ZERO,
        final_buffers: None,
        monitor: None,
        final_tcp_info: None,
        kept: Vec::new(),
    }
}

/// What the receiving connections share.
struct Upload {
    assembly: Assembly,
    target: Option<Box<dyn data::StoreTarget>>,
    /// The first failure, which stops every connection.
    failed: Option<TransferOutcome>,
}

/// Receives an upload in blocks over `cached` (the connections an earlier
/// transfer kept open) and the connections the client opens to
/// `listener`, into `sink`. `on_connect` sees the first connection.
/// Blocks until the upload is whole or failed; the report's `kept` holds
/// the connections that ended their data with EOD and stay open (the
/// sender closes them, GFD.20).
pub fn receive(
    listener: TcpListener,
    cached: Vec<TcpStream>,
    sink: Sink,
    params: &DataParams,
    abort: &AbortHandle,
    progress: &Arc<Progress>,
    on_connect: &mut dyn FnMut(&TcpStream),
) -> DataReport {
    let mut report = empty_report();
    let target = match sink {
        Sink::File(target) => Some(target),
        Sink::Discard => None,
    };
    let upload = Mutex::new(Upload {
        assembly: Assembly::new(None, Ranges::new()),
        target,
        failed: None,
    });
    let lock = || upload.lock().unwrap_or_else(PoisonError::into_inner);
    let stop = || abort.is_aborted() || lock().failed.is_some();
    let mut started = None;
    let mut observer = None;
    let active = AtomicUsize::new(0);
    // Until the EODs the EOF announced are in, more connections may come
    // (GFD.20: one may still be opening when the others end). Given up
    // after the connect timeout with none running.
    let mut idle_since = Some(Instant::now());
    let done = || lock().assembly.done();
    let kept = thread::scope(|scope| {
        let mut accepted = 0;
        let mut running = Vec::new();
        let mut handles = Vec::new();
        let mut spawn = |stream: TcpStream, report: &mut DataReport| {
            let _ = stream.set_read_timeout(Some(READ_POLL));
            if report.peer.is_none() {
                report.peer = stream.peer_addr().ok();
                abort.watch(&stream);
                on_connect(&stream);
                observer = stream.try_clone().ok();
                started = Some(Instant::now());
            }
            running.extend(stream.try_clone().ok());
            active.fetch_add(1, Ordering::SeqCst);
            let (upload, stop, done, active) = (&upload, &stop, &done, &active);
            let idle = params.idle_timeout;
            handles.push(scope.spawn(move || {
                let (kept, result) = receive_blocks(stream, upload, progress, stop, done, idle);
                if let Err(outcome) = result {
                    let mut shared = upload.lock().unwrap_or_else(PoisonError::into_inner);
                    shared.failed.get_or_insert(outcome);
                }
                active.fetch_sub(1, Ordering::SeqCst);
                kept
            }));
        };
        for stream in cached {
            spawn(stream, &mut report);
        }
        loop {
            if done() || stop() {
                break;
            }
            if active.load(Ordering::SeqCst) > 0 {
                idle_since = None;
            } else {
                let since = *idle_since.get_or_insert_with(Instant::now);
                if since.elapsed() >= params.connect_timeout {
                    if report.peer.is_none() {
                        lock()
                            .failed
                            .get_or_insert(TransferOutcome::DataConnectFailed(
                                "no data connection in time".into(),
                            ));
                    }
                    break;
                }
            }
            // Poll briefly: the loop also watches for the end.
            if !matches!(poll::readable(&listener, ACCEPT_POLL), Ok(true)) {
                continue;
            }
            let stream = match listener.accept() {
                Ok((stream, from))
                    if from.ip().to_canonical() == params.control_peer.to_canonical() =>
                {
                    let _ = stream.set_nonblocking(false);
                    stream
                }
                Ok((stranger, _)) => {
                    report.strangers_refused += 1;
                    drop(stranger);
                    continue;
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                    ) =>
                {
                    continue;
                }
                Err(e) => {
                    lock()
                        .failed
                        .get_or_insert(TransferOutcome::DataConnectFailed(format!("accept: {e}")));
                    break;
                }
            };
            accepted += 1;
            if accepted > MAX_PARALLELISM {
                lock()
                    .failed
                    .get_or_insert(TransferOutcome::BadData(format!(
                        "more than {MAX_PARALLELISM} data connections"
                    )));
                break;
            }
            if let Ok(applied) = socket::apply(stream.as_fd(), &params.request) {
                report.applied.get_or_insert(applied);
            }
            spawn(stream, &mut report);
        }
        // A failure stops the connections still reading at once.
        if stop() {
            for stream in &running {
                let _ = stream.shutdown(Shutdown::Both);
            }
        }
        handles
            .into_iter()
            .filter_map(|h| h.join().ok().flatten())
            .collect::<Vec<TcpStream>>()
    });
    report.elapsed = started.map_or(std::time::Duration::ZERO, |s| s.elapsed());
    report.final_tcp_info = observer
        .as_ref()
        .and_then(|s| rightsize_sys::tcp_info::read(s.as_fd()).ok());
    report.final_buffers = observer.and_then(|s| socket::read_buffers(s.as_fd()).ok());
    let Upload {
        assembly,
        target,
        failed,
    } = upload.into_inner().unwrap_or_else(PoisonError::into_inner);
    report.outcome = if abort.is_aborted() {
        TransferOutcome::Aborted
    } else if let Some(outcome) = failed {
        outcome
    } else if let Err(e) = assembly.complete() {
        TransferOutcome::BadData(e.to_string())
    } else {
        let bytes = assembly.received().total();
        // Every byte from 0 arrived: the file's length is its last byte.
        match target.map(|t| t.commit()) {
            Some(Err(e)) => TransferOutcome::LocalError(e.to_string()),
            _ => TransferOutcome::Complete { bytes },
        }
    };
    if matches!(report.outcome, TransferOutcome::Complete { .. }) {
        report.kept = kept;
    }
    report
}

/// One connection's blocks, written at their offsets, until its EOD;
/// then the connection, unless the sender closes it. A connection that
/// carried nothing by the time the upload is whole is given back too.
fn receive_blocks(
    mut stream: TcpStream,
    upload: &Mutex<Upload>,
    progress: &Progress,
    stop: &dyn Fn() -> bool,
    done: &dyn Fn() -> bool,
    idle_timeout: std::time::Duration,
) -> (Option<TcpStream>, Result<(), TransferOutcome>) {
    let mut reader = BlockReader::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut closing = false;
    let mut last_data = Instant::now();
    let network = |e: &dyn std::fmt::Display| TransferOutcome::NetworkError(e.to_string());
    let bad = |e: &dyn std::fmt::Display| TransferOutcome::BadData(e.to_string());
    loop {
        if stop() {
            return (None, Ok(()));
        }
        if reader.ended() {
            return ((!closing).then_some(stream), Ok(()));
        }
        if done() {
            return (Some(stream), Ok(()));
        }
        let n = match stream.read(&mut buf) {
            Ok(0) => {
                let result = reader.finish().map_err(|e| bad(&e)).and_then(|()| {
                    if reader.ended() {
                        Ok(())
                    } else {
                        Err(bad(&"a data connection closed before its EOD"))
                    }
                });
                return (None, result);
            }
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                if last_data.elapsed() >= idle_timeout {
                    return (None, Err(network(&format!("no data for {idle_timeout:?}"))));
                }
                continue;
            }
            Err(e) => return (None, Err(network(&e))),
        };
        last_data = Instant::now();
        let mut items = Vec::new();
        if let Err(e) = reader.feed(&buf[..n], &mut items) {
            return (None, Err(bad(&e)));
        }
        let mut shared = upload.lock().unwrap_or_else(PoisonError::into_inner);
        for item in &items {
            if let Err(e) = shared.assembly.item(item) {
                return (None, Err(bad(&e)));
            }
            match item {
                Item::Data { offset, bytes } => {
                    if let Some(target) = shared.target.as_mut()
                        && let Err(e) = target.write_at(*offset, bytes)
                    {
                        return (None, Err(TransferOutcome::LocalError(e.to_string())));
                    }
                    progress
                        .bytes
                        .fetch_add(bytes.len() as u64, Ordering::Relaxed);
                }
                Item::Close => closing = true,
                Item::Eod | Item::Eof { .. } => {}
            }
        }
    }
}
