//! A retrieve or a listing in `MODE E` (GridFTP's extended blocks): the server connects
//! to the client's PORT/EPRT address as many times as `OPTS RETR
//! Parallelism=` asked, and each connection takes the next block of the
//! file (`rightsize_ftp_proto::mode_e::Blocks`) until none is left, as the
//! Globus server does: 256 KiB blocks, an empty EOD block at the end of
//! each connection, and EOD with EOF (which counts the connections) on the
//! first. Each connection is then closed (the close bit is set): data
//! channels are not kept between transfers.
//!
//! Guarantees: every socket is made by `rightsize_sys::socket` with the
//! SBUF request applied before the handshake; a failed connect or write on
//! any connection stops them all and the transfer fails; an
//! [`AbortHandle`] stops them between blocks. The tuners do not run on
//! these connections yet: the kernel sizes their buffers unless SBUF or the
//! server's flags fix them.

use std::fs::File;
use std::io::{self, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::os::fd::AsFd;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::Instant;

use rightsize_ftp_proto::mode_e::{Blocks, Header, Ranges, descriptor};
use rightsize_ftp_proto::session::TransferOutcome;
use rightsize_sys::socket;

use super::data::{AbortHandle, DataParams, DataReport, Progress, Source};

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
    let mut report = DataReport {
        outcome: TransferOutcome::Aborted,
        peer: None,
        applied: None,
        strangers_refused: 0,
        elapsed: std::time::Duration::ZERO,
        final_buffers: None,
        monitor: None,
        final_tcp_info: None,
    };
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
