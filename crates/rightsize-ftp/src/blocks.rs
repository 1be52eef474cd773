//! GridFTP's MODE E over sockets, for the server and the client alike:
//! [`send`] spreads a file's blocks over connected streams, [`receive`]
//! takes the blocks of every connection a peer opens and writes them at
//! their offsets. The wire format and the bookkeeping are
//! `rightsize_ftp_proto::mode_e`'s; here are the threads and the sockets.
//!
//! Sending: the streams take the next block (`mode_e::Blocks`) in turn
//! until none is left, as the Globus server does (256 KiB blocks); each
//! ends with an empty EOD block, the first with EOD and EOF (which counts
//! the streams). Kept (`keep`), the streams end without the close bit and
//! are given back open for the next transfer, as the Globus server keeps
//! them; otherwise the close bit is set and they are shut down. More
//! streams may join a running send and any but the first may leave it
//! ([`Crew`]): the first sends the EOF once no block is left, so its count
//! is of every stream that took part.
//!
//! Receiving: the peer may open connections until the EODs its EOF
//! counted are in; a connection that ends its data with EOD and no close
//! bit is given back open, for the peer's next transfer (globus-url-copy
//! `-fast` keeps them). A connection is never read past its EOD, so the
//! next transfer's blocks, already on the way, stay in the socket for it.
//! The transfer is whole only when the bytes cover the file from 0 with
//! no hole (`mode_e::Assembly::complete`).
//!
//! Guarantees: a failure on any stream (a write or read error, a block out
//! of place, a connection cut inside a block) stops them all at once and is
//! the transfer's outcome; only connections from the expected peer are
//! accepted; nothing blocks past the connect timeout (no connection) or
//! the idle timeout (a connection moving nothing).

use std::fs::File;
use std::io::{self, Read, Write};
use std::net::{IpAddr, Shutdown, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::os::unix::fs::FileExt;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use rightsize_ftp_proto::mode_e::{
    Assembly, BlockReader, Blocks, HEADER_BYTES, Header, Item, MAX_PARALLELISM, Ranges, descriptor,
};
use rightsize_sys::{poll, socket};

use crate::stream::{DataStream, Secure};

/// Bytes per block, as the Globus server sends them.
pub(crate) const BLOCK_BYTES: u64 = 256 * 1024;
/// How often the accept loop looks for the end.
const ACCEPT_POLL: Duration = Duration::from_millis(20);
/// The longest a send waits to look again at its streams (each change
/// wakes it at once).
const JOIN_WAIT: Duration = Duration::from_millis(100);
/// How often a receiving connection looks for the end between reads.
const READ_POLL: Duration = Duration::from_millis(50);

/// Why a MODE E transfer failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// No connection came in time, or one could not be made.
    Connect(String),
    /// A socket failed.
    Network(String),
    /// The local file failed.
    Local(String),
    /// The peer's blocks broke the protocol.
    BadData(String),
    /// Stopped from outside (an abort, a signal).
    Stopped,
}

/// What blocks are read from.
#[derive(Debug)]
pub(crate) enum Source {
    /// A file.
    File(File),
    /// Zeros (the benchmark source).
    Zeros,
    /// Bytes in memory (a listing).
    Bytes(Vec<u8>),
    /// A part of a file that starts at `base` (a partial retrieve, ERET
    /// P): block offset 0 is the file's byte `base`.
    Window {
        /// The file.
        file: File,
        /// The file offset of block offset 0.
        base: u64,
    },
}

impl Source {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        match self {
            Source::File(file) => file.read_exact_at(buf, offset),
            Source::Window { file, base } => {
                let at = base
                    .checked_add(offset)
                    .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
                file.read_exact_at(buf, at)
            }
            Source::Zeros => {
                buf.fill(0);
                Ok(())
            }
            Source::Bytes(bytes) => {
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

/// Where received blocks are written.
pub(crate) trait WriteAt: Send {
    /// Writes `bytes` at `offset`.
    fn write_at(&mut self, offset: u64, bytes: &[u8]) -> io::Result<()>;
}

/// The blocks a send has left and the streams that send them. While
/// blocks are left, more streams may join a running send ([`Crew::reserve`]
/// before connecting, then [`Crew::join`]), and any stream but the first
/// may be asked to leave ([`Crew::leave`]): it ends with its EOD after the
/// block it sends. The first stream's EOF, sent once it finds no block
/// left, counts every stream counted then; no stream joins after it.
pub(crate) struct Crew {
    state: Mutex<CrewState>,
    /// Wakes the send when a stream joins, is lost or ends.
    changed: Condvar,
}

struct CrewState {
    blocks: Blocks,
    /// Streams counted: started, joined, and reserved.
    counted: u64,
    /// Reserved and not yet joined.
    reserved: u64,
    /// The first stream's EOF is out with `counted`.
    announced: bool,
    /// Joined, not yet started.
    joining: Vec<DataStream>,
    /// Streams asked to leave, not yet gone.
    leaving: u64,
    /// Streams that left or ended.
    ended: u64,
    /// A reserved stream that never came after the EOF counted it.
    lost: Option<Failure>,
}

impl Crew {
    /// A send of `blocks`, no stream yet.
    pub(crate) fn new(blocks: Blocks) -> Crew {
        Crew {
            state: Mutex::new(CrewState {
                blocks,
                counted: 0,
                reserved: 0,
                announced: false,
                joining: Vec::new(),
                leaving: 0,
                ended: 0,
                lost: None,
            }),
            changed: Condvar::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, CrewState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts a stream about to connect; `false` (not counted) once no
    /// block is left or the EOF is out.
    pub(crate) fn reserve(&self) -> bool {
        let mut s = self.lock();
        if s.announced || s.blocks.left() == 0 {
            return false;
        }
        s.counted += 1;
        s.reserved += 1;
        true
    }

    /// A reserved stream, connected: it takes blocks with the others.
    pub(crate) fn join(&self, stream: DataStream) {
        let mut s = self.lock();
        s.reserved = s.reserved.saturating_sub(1);
        s.joining.push(stream);
        self.changed.notify_all();
    }

    /// A reserved stream that could not be made (`why`): no longer
    /// counted, unless the EOF counted it already, which fails the send.
    pub(crate) fn lost(&self, why: String) {
        let mut s = self.lock();
        s.reserved = s.reserved.saturating_sub(1);
        if s.announced {
            s.lost.get_or_insert(Failure::Connect(why));
        } else {
            s.counted = s.counted.saturating_sub(1);
        }
        self.changed.notify_all();
    }

    /// Asks `n` streams (never the first) to end after their block.
    pub(crate) fn leave(&self, n: u64) {
        let mut s = self.lock();
        let others = s.counted.saturating_sub(s.ended + s.leaving + 1);
        s.leaving += n.min(others);
    }

    /// A stream ended.
    fn ended(&self) {
        self.lock().ended += 1;
        self.changed.notify_all();
    }

    /// Streams sending now, or about to.
    pub(crate) fn running(&self) -> u64 {
        let s = self.lock();
        s.counted.saturating_sub(s.ended + s.leaving)
    }

    /// Bytes not yet taken by a stream.
    pub(crate) fn left(&self) -> u64 {
        self.lock().blocks.left()
    }

    /// Stream `first` or another's next block, `None` when it is to end
    /// (no block left, or asked to leave).
    fn next(&self, first: bool) -> Option<(u64, u64)> {
        let mut s = self.lock();
        if !first && s.leaving > 0 {
            s.leaving -= 1;
            return None;
        }
        s.blocks.take()
    }

    /// The first stream's last block: the EOF that counts the streams.
    fn announce(&self, close: u8) -> Header {
        let mut s = self.lock();
        s.announced = true;
        Header {
            descriptor: descriptor::EOD | descriptor::EOF | close,
            count: 0,
            offset: s.counted,
        }
    }
}

/// Tells its crew that a stream ended, when dropped.
struct EndedOnDrop<'a>(&'a Crew);

impl Drop for EndedOnDrop<'_> {
    fn drop(&mut self) {
        self.0.ended();
    }
}

/// Sends `blocks` of `source` over `streams` (already connected); counts
/// the payload in `moved`. Once `enough` says so, no stream takes another
/// block: each ends cleanly after the one it sends (a test limited by
/// time), while `stop` fails the transfer. Returns when every stream
/// ended: with `keep`, the streams, open for the next transfer; otherwise
/// none.
pub(crate) fn send(
    streams: Vec<DataStream>,
    source: &Source,
    blocks: Blocks,
    moved: &AtomicU64,
    stops: (&(dyn Fn() -> bool + Sync), &(dyn Fn() -> bool + Sync)),
    keep: bool,
) -> Result<Vec<DataStream>, Failure> {
    send_crew(streams, source, &Crew::new(blocks), moved, stops, keep)
}

/// [`send`] with the streams `crew` lets join and leave while it runs.
pub(crate) fn send_crew(
    streams: Vec<DataStream>,
    source: &Source,
    crew: &Crew,
    moved: &AtomicU64,
    (stop, enough): (&(dyn Fn() -> bool + Sync), &(dyn Fn() -> bool + Sync)),
    keep: bool,
) -> Result<Vec<DataStream>, Failure> {
    {
        let mut s = crew.lock();
        s.counted += streams.len() as u64;
        s.joining.extend(streams);
    }
    let failed = AtomicBool::new(false);
    let close = if keep { 0 } else { descriptor::CLOSE };
    let mut started = 0u64;
    let results: Vec<Result<DataStream, Failure>> = thread::scope(|scope| {
        let mut handles = Vec::new();
        let mut state = crew.lock();
        loop {
            if let Some(lost) = state.lost.take() {
                failed.store(true, Ordering::SeqCst);
                handles.push(scope.spawn(move || Err(lost)));
            }
            let joined = std::mem::take(&mut state.joining);
            // Every stream started has ended, and none is on its way.
            let over = joined.is_empty() && state.reserved == 0 && state.ended >= started;
            if over {
                break;
            }
            if joined.is_empty() {
                state = crew
                    .changed
                    .wait_timeout(state, JOIN_WAIT)
                    .map_or_else(|e| e.into_inner().0, |(s, _)| s);
                continue;
            }
            drop(state);
            for mut stream in joined {
                let first = started == 0;
                started += 1;
                let failed = &failed;
                handles.push(scope.spawn(move || {
                    // Counted as ended however the thread ends.
                    let _ended = EndedOnDrop(crew);
                    let halted = || stop() || failed.load(Ordering::SeqCst);
                    let result = send_stream(
                        &mut stream,
                        source,
                        (crew, first, enough),
                        close,
                        moved,
                        &halted,
                    );
                    if result.is_err() {
                        failed.store(true, Ordering::SeqCst);
                        let _ = stream.socket().shutdown(Shutdown::Both);
                    } else if !keep {
                        let _ = stream.end();
                    }
                    result.map(|()| stream)
                }));
            }
            state = crew.lock();
        }
        drop(state);
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or(Err(Failure::Stopped)))
            .collect()
    });
    if stop() {
        return Err(Failure::Stopped);
    }
    let (sent, failures): (Vec<_>, Vec<_>) = results.into_iter().partition(Result::is_ok);
    // The first real failure, not the streams it stopped.
    let mut failures = failures.into_iter().filter_map(Result::err);
    let first = failures.next();
    match first {
        None if keep => Ok(sent.into_iter().filter_map(Result::ok).collect()),
        None => Ok(Vec::new()),
        Some(Failure::Stopped) => Err(failures
            .find(|f| *f != Failure::Stopped)
            .unwrap_or(Failure::Stopped)),
        Some(failure) => Err(failure),
    }
}

/// One stream's share: blocks until none is left, `enough`, or (not the
/// first) it is asked to leave; then its EOD, the first's with the EOF.
fn send_stream(
    stream: &mut DataStream,
    source: &Source,
    (crew, first, enough): (&Crew, bool, &(dyn Fn() -> bool + Sync)),
    close: u8,
    moved: &AtomicU64,
    stop: &dyn Fn() -> bool,
) -> Result<(), Failure> {
    // A block's header and bytes go in one write (two would cost a
    // system call and a small segment per block).
    let mut buf = vec![0u8; HEADER_BYTES + usize::try_from(BLOCK_BYTES).unwrap_or(1 << 18)];
    loop {
        if stop() {
            return Err(Failure::Stopped);
        }
        if enough() {
            break;
        }
        let Some((offset, len)) = crew.next(first) else {
            break;
        };
        let end = HEADER_BYTES + usize::try_from(len).unwrap_or(0);
        let (head, piece) = buf[..end].split_at_mut(HEADER_BYTES);
        // The buffer starts zeroed and only the header is written over:
        // the zero source has nothing to read.
        if !matches!(source, Source::Zeros) {
            source
                .read_exact_at(piece, offset)
                .map_err(|e| Failure::Local(e.to_string()))?;
        }
        head.copy_from_slice(&Header::data(offset, len).encode());
        stream
            .write_all(&buf[..end])
            .map_err(|e| Failure::Network(e.to_string()))?;
        moved.fetch_add(len, Ordering::Relaxed);
    }
    let last = if first {
        crew.announce(close)
    } else {
        Header {
            descriptor: descriptor::EOD | close,
            count: 0,
            offset: 0,
        }
    };
    stream
        .write_all(&last.encode())
        .map_err(|e| Failure::Network(e.to_string()))
}

/// How a [`receive`] waits for and accepts connections.
pub(crate) struct Incoming<'a> {
    /// Where the peer connects.
    pub(crate) listener: &'a TcpListener,
    /// The only address allowed to.
    pub(crate) peer: IpAddr,
    /// Connections an earlier transfer kept open.
    pub(crate) cached: Vec<DataStream>,
    /// What each new connection goes through before its blocks (its TLS
    /// handshake under `PROT P`).
    pub(crate) secure: Secure<'a>,
    /// How long to wait with no connection running.
    pub(crate) connect_timeout: Duration,
    /// How long a connection may move nothing.
    pub(crate) idle_timeout: Duration,
}

/// What a [`receive`] saw besides its outcome.
#[derive(Debug, Default)]
pub(crate) struct Received {
    /// The first connection (for its buffers and `TCP_INFO` at the end).
    pub(crate) first: Option<TcpStream>,
    /// When the first connection came.
    pub(crate) started: Option<Instant>,
    /// Connections refused because they came from another address.
    pub(crate) strangers: u32,
    /// Connections that ended their data with EOD and stay open.
    pub(crate) kept: Vec<DataStream>,
    /// The byte ranges held at the end (those given at the start
    /// included), whole or not.
    pub(crate) ranges: Ranges,
}

struct Shared<'a> {
    assembly: Assembly,
    sink: Option<&'a mut dyn WriteAt>,
    failed: Option<Failure>,
}

/// Receives a transfer into `sink` (`None` discards) with `assembly`'s
/// expectations, over `incoming`; `on_connect` sees each connection, kept
/// or new (to set its buffers, to start its tuner; it may give a counter
/// for that connection's own payload) and `on_first` the first one. Counts
/// the payload in `moved`. Returns when the transfer is whole, failed or
/// stopped.
pub(crate) fn receive(
    incoming: Incoming<'_>,
    assembly: Assembly,
    sink: Option<&mut dyn WriteAt>,
    moved: &AtomicU64,
    stop: &(dyn Fn() -> bool + Sync),
    on_connect: &mut dyn FnMut(&TcpStream) -> Option<Arc<AtomicU64>>,
    on_first: &mut dyn FnMut(&TcpStream),
) -> (Result<Assembly, Failure>, Received) {
    let shared = Mutex::new(Shared {
        assembly,
        sink,
        failed: None,
    });
    let lock = || shared.lock().unwrap_or_else(PoisonError::into_inner);
    let halted = || stop() || lock().failed.is_some();
    let done = || lock().assembly.done();
    let active = AtomicUsize::new(0);
    // A connection that ends wakes the accept loop at once; the end of the
    // transfer (whole or failed) wakes every connection still waiting.
    let (wake, woken) = match UnixStream::pair() {
        Ok((wake, woken)) => (Some(wake), Some(woken)),
        Err(_) => (None, None),
    };
    let (finish, finished) = match UnixStream::pair() {
        Ok((finish, finished)) => (Some(Mutex::new(finish)), Some(finished)),
        Err(_) => (None, None),
    };
    let mut received = Received::default();
    let Incoming {
        listener,
        peer,
        cached,
        secure,
        connect_timeout,
        idle_timeout,
    } = incoming;
    let kept = thread::scope(|scope| {
        let mut running = Vec::new();
        let mut handles = Vec::new();
        let mut accepted = 0u32;
        let mut spawn = |arrival: Arrival, own: Option<Arc<AtomicU64>>, received: &mut Received| {
            let socket = arrival.socket();
            if received.first.is_none() {
                on_first(socket);
                received.first = socket.try_clone().ok();
                received.started = Some(Instant::now());
            }
            running.extend(socket.try_clone().ok());
            active.fetch_add(1, Ordering::SeqCst);
            let (shared, halted, done, active) = (&shared, &halted, &done, &active);
            let wake = wake.as_ref();
            let end = End {
                finish: finish.as_ref(),
                finished: finished.as_ref(),
            };
            handles.push(scope.spawn(move || {
                let counted = Counted { all: moved, own };
                let (kept, result) = match arrival.secured(secure, idle_timeout) {
                    Ok(stream) => {
                        receive_stream(stream, shared, &counted, halted, done, idle_timeout, end)
                    }
                    Err(failure) => {
                        end.signal();
                        (None, Err(failure))
                    }
                };
                if let Err(failure) = result {
                    let mut s = shared.lock().unwrap_or_else(PoisonError::into_inner);
                    s.failed.get_or_insert(failure);
                }
                active.fetch_sub(1, Ordering::SeqCst);
                if let Some(mut wake) = wake {
                    let _ = wake.write_all(&[1]);
                }
                kept
            }));
        };
        for stream in cached {
            let own = on_connect(stream.socket());
            spawn(Arrival::Kept(stream), own, &mut received);
        }
        // Until the EODs the EOF announced are in, more connections may
        // come (GFD.20: one may still be opening when the others end).
        let mut idle_since = Some(Instant::now());
        loop {
            if done() || halted() {
                break;
            }
            if active.load(Ordering::SeqCst) > 0 {
                idle_since = None;
            } else if idle_since.get_or_insert_with(Instant::now).elapsed() >= connect_timeout {
                if received.first.is_none() {
                    lock().failed.get_or_insert(Failure::Connect(format!(
                        "no data connection within {connect_timeout:?}"
                    )));
                }
                break;
            }
            if !accept_ready(listener, woken.as_ref(), finished.as_ref()) {
                continue;
            }
            let stream = match listener.accept() {
                Ok((stream, from)) if from.ip().to_canonical() == peer.to_canonical() => {
                    let _ = stream.set_nonblocking(false);
                    stream
                }
                Ok((stranger, _)) => {
                    received.strangers += 1;
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
                        .get_or_insert(Failure::Connect(format!("accept: {e}")));
                    break;
                }
            };
            accepted += 1;
            if accepted > MAX_PARALLELISM {
                lock().failed.get_or_insert(Failure::BadData(format!(
                    "more than {MAX_PARALLELISM} data connections"
                )));
                break;
            }
            let own = on_connect(&stream);
            spawn(Arrival::New(stream), own, &mut received);
        }
        // A failure or a stop ends the connections still reading at once,
        // with a reset: a sender whose window is full would wait for good
        // on a connection only shut down while a monitor holds it open.
        if halted() {
            for stream in &running {
                let _ = stream.shutdown(Shutdown::Both);
                let _ = socket::reset(stream);
            }
        }
        handles
            .into_iter()
            .filter_map(|h| h.join().ok().flatten())
            .collect::<Vec<DataStream>>()
    });
    let Shared {
        assembly, failed, ..
    } = shared.into_inner().unwrap_or_else(PoisonError::into_inner);
    received.ranges = assembly.received().clone();
    let outcome = if stop() {
        Err(Failure::Stopped)
    } else if let Some(failure) = failed {
        Err(failure)
    } else {
        assembly
            .complete()
            .map(|()| assembly)
            .map_err(|e| Failure::BadData(e.to_string()))
    };
    if outcome.is_ok() {
        received.kept = kept;
    }
    (outcome, received)
}

/// A connection to receive on: kept from an earlier transfer, or just
/// accepted (its TLS, if any, still to come).
enum Arrival {
    Kept(DataStream),
    New(TcpStream),
}

impl Arrival {
    fn socket(&self) -> &TcpStream {
        match self {
            Arrival::Kept(s) => s.socket(),
            Arrival::New(s) => s,
        }
    }

    /// The stream to read blocks from: a new connection through `secure`
    /// (its handshake within `idle_timeout`), then read every
    /// [`READ_POLL`] at most.
    fn secured(self, secure: Secure<'_>, idle_timeout: Duration) -> Result<DataStream, Failure> {
        let stream = match self {
            Arrival::Kept(s) => s,
            Arrival::New(s) => {
                let _ = s.set_read_timeout(Some(idle_timeout));
                secure(s).map_err(Failure::Connect)?
            }
        };
        let _ = stream.socket().set_read_timeout(Some(READ_POLL));
        Ok(stream)
    }
}

/// Waits up to [`ACCEPT_POLL`] for a connection to accept, or for a
/// receiving connection to end (`woken`, drained here); true when there is
/// one to accept.
fn accept_ready(
    listener: &TcpListener,
    woken: Option<&UnixStream>,
    finished: Option<&UnixStream>,
) -> bool {
    let (Some(mut woken), Some(finished)) = (woken, finished) else {
        return matches!(poll::readable(listener, ACCEPT_POLL), Ok(true));
    };
    let fds = [
        (listener.as_fd(), poll::Want::Read),
        (woken.as_fd(), poll::Want::Read),
        (finished.as_fd(), poll::Want::Read),
    ];
    let Ok(ready) = poll::wait(&fds, ACCEPT_POLL) else {
        return false;
    };
    if ready.get(1).is_some_and(|r| r.any()) {
        let _ = woken.set_nonblocking(true);
        let mut drain = [0u8; 64];
        let _ = woken.read(&mut drain);
    }
    ready.first().is_some_and(|r| r.any())
}

/// One connection's blocks, written at their offsets, until its EOD;
/// then the connection, unless the sender closes it. A connection that
/// carried nothing by the time the transfer is whole is given back too.
/// How the connections of one transfer learn that it ended.
#[derive(Clone, Copy)]
struct End<'a> {
    /// Written once the transfer is whole or failed (never drained).
    finish: Option<&'a Mutex<UnixStream>>,
    /// Readable from then on.
    finished: Option<&'a UnixStream>,
}

impl End<'_> {
    /// Wakes every connection waiting in [`End::wait`].
    fn signal(&self) {
        if let Some(finish) = self.finish {
            let _ = finish
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .write_all(&[1]);
        }
    }

    /// Waits up to [`READ_POLL`] for `stream` to have bytes or the
    /// transfer to end; true when `stream` may be read.
    fn wait(&self, stream: &TcpStream) -> bool {
        let Some(finished) = self.finished else {
            return poll::wait_one(stream, poll::Want::Read, READ_POLL).is_ok_and(|r| r.any());
        };
        let fds = [
            (stream.as_fd(), poll::Want::Read),
            (finished.as_fd(), poll::Want::Read),
        ];
        match poll::wait(&fds, READ_POLL) {
            Ok(ready) => ready.first().is_some_and(|r| r.any()),
            Err(_) => true,
        }
    }
}

/// Where a connection counts its payload: the transfer's count, and its
/// own when something (a tuner) watches it.
struct Counted<'a> {
    all: &'a AtomicU64,
    own: Option<Arc<AtomicU64>>,
}

impl Counted<'_> {
    fn add(&self, bytes: u64) {
        self.all.fetch_add(bytes, Ordering::Relaxed);
        if let Some(own) = &self.own {
            own.fetch_add(bytes, Ordering::Relaxed);
        }
    }
}

fn receive_stream(
    stream: DataStream,
    shared: &Mutex<Shared<'_>>,
    moved: &Counted<'_>,
    halted: &dyn Fn() -> bool,
    done: &dyn Fn() -> bool,
    idle_timeout: Duration,
    end: End<'_>,
) -> (Option<DataStream>, Result<(), Failure>) {
    let (kept, result) = read_stream(stream, shared, moved, halted, done, idle_timeout, end);
    if result.is_err() || done() {
        end.signal();
    }
    (kept, result)
}

fn read_stream(
    mut stream: DataStream,
    shared: &Mutex<Shared<'_>>,
    moved: &Counted<'_>,
    halted: &dyn Fn() -> bool,
    done: &dyn Fn() -> bool,
    idle_timeout: Duration,
    end: End<'_>,
) -> (Option<DataStream>, Result<(), Failure>) {
    let mut reader = BlockReader::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut closing = false;
    let mut last_data = Instant::now();
    let bad = |e: &dyn std::fmt::Display| Failure::BadData(e.to_string());
    // Read first, wait only when nothing is there: one system call per
    // read while the data flows (a wait before every read doubled them).
    // A kept connection goes back to blocking.
    let _ = stream.socket().set_nonblocking(true);
    let keep = |stream: DataStream| {
        let _ = stream.socket().set_nonblocking(false);
        Some(stream)
    };
    loop {
        if halted() {
            return (None, Ok(()));
        }
        if reader.ended() {
            return (if closing { None } else { keep(stream) }, Ok(()));
        }
        if done() {
            return (keep(stream), Ok(()));
        }
        let want = reader.wanted().min(buf.len());
        let n = match stream.read(&mut buf[..want]) {
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
                    let idle = format!("a data connection moved nothing for {idle_timeout:?}");
                    return (None, Err(Failure::Network(idle)));
                }
                end.wait(stream.socket());
                continue;
            }
            Err(e) => return (None, Err(Failure::Network(e.to_string()))),
        };
        last_data = Instant::now();
        let mut items = Vec::new();
        if let Err(e) = reader.feed(&buf[..n], &mut items) {
            return (None, Err(bad(&e)));
        }
        let mut s = shared.lock().unwrap_or_else(PoisonError::into_inner);
        for item in &items {
            if let Err(e) = s.assembly.item(item) {
                return (None, Err(bad(&e)));
            }
            match item {
                Item::Data { offset, bytes } => {
                    if let Some(sink) = s.sink.as_mut()
                        && let Err(e) = sink.write_at(*offset, bytes)
                    {
                        return (None, Err(Failure::Local(e.to_string())));
                    }
                    moved.add(bytes.len() as u64);
                }
                Item::Close => closing = true,
                Item::Eod | Item::Eof { .. } => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::stream::plain;
    use std::net::{Ipv4Addr, SocketAddr};

    const SIZE: u64 = 64 << 20;

    /// Keeps every write's bytes, the first held until `go`.
    struct Held<'a> {
        go: &'a AtomicBool,
        bytes: Vec<u8>,
    }

    impl WriteAt for Held<'_> {
        fn write_at(&mut self, offset: u64, bytes: &[u8]) -> io::Result<()> {
            while !self.go.load(Ordering::SeqCst) {
                thread::sleep(Duration::from_millis(5));
            }
            let at = usize::try_from(offset).unwrap();
            self.bytes[at..at + bytes.len()].copy_from_slice(bytes);
            Ok(())
        }
    }

    #[test]
    fn streams_join_a_running_send_and_leave_it_and_the_file_arrives_whole() {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let addr: SocketAddr = listener.local_addr().unwrap();
        let file: Vec<u8> = (0..SIZE).map(|i| (i % 251) as u8).collect();
        let source = Source::Bytes(file.clone());
        let crew = Crew::new(Blocks::new(SIZE, &Ranges::new(), BLOCK_BYTES));
        let go = AtomicBool::new(false);
        let connections = AtomicUsize::new(0);
        let (moved_in, moved_out) = (AtomicU64::new(0), AtomicU64::new(0));
        let mut held = Held {
            go: &go,
            bytes: vec![0; file.len()],
        };
        let (received, sent) = thread::scope(|scope| {
            let receiver = scope.spawn(|| {
                let incoming = Incoming {
                    listener: &listener,
                    peer: IpAddr::V4(Ipv4Addr::LOCALHOST),
                    cached: Vec::new(),
                    secure: &plain,
                    connect_timeout: Duration::from_secs(10),
                    idle_timeout: Duration::from_secs(10),
                };
                receive(
                    incoming,
                    Assembly::new(Some(SIZE), Ranges::new()),
                    Some(&mut held),
                    &moved_in,
                    &|| false,
                    &mut |_| {
                        connections.fetch_add(1, Ordering::SeqCst);
                        None
                    },
                    &mut |_| {},
                )
                .0
            });
            let first = DataStream::Plain(TcpStream::connect(addr).unwrap());
            let sender = scope.spawn(|| {
                send_crew(
                    vec![first],
                    &source,
                    &crew,
                    &moved_out,
                    (&|| false, &|| false),
                    false,
                )
            });
            // The receiver holds its first write: most blocks are left.
            while crew.running() == 0 {
                thread::sleep(Duration::from_millis(1));
            }
            // (Nothing here may panic before `go`: the threads would wait
            // for it.)
            let mut reserved = Vec::new();
            for _ in 0..3 {
                reserved.push(crew.reserve());
                if let Ok(stream) = TcpStream::connect(addr) {
                    crew.join(DataStream::Plain(stream));
                }
            }
            // One that never came, before the EOF: no longer counted.
            reserved.push(crew.reserve());
            crew.lost("refused".to_owned());
            let running = crew.running();
            crew.leave(2);
            let after = crew.running();
            go.store(true, Ordering::SeqCst);
            assert_eq!(reserved, [true; 4]);
            assert_eq!((running, after), (4, 2));
            (receiver.join().unwrap(), sender.join().unwrap())
        });
        assert!(sent.is_ok(), "{sent:?}");
        let assembly = received.unwrap();
        assert!(assembly.received().covers(SIZE));
        assert_eq!(connections.load(Ordering::SeqCst), 4);
        assert!(held.bytes == file, "the bytes arrived in their places");
        // After the EOF no stream may join.
        assert!(!crew.reserve());
    }

    #[test]
    fn a_stream_counted_by_the_eof_that_never_came_fails_the_send() {
        let crew = Crew::new(Blocks::new(SIZE, &Ranges::new(), BLOCK_BYTES));
        assert!(crew.reserve());
        let _ = crew.announce(0);
        crew.lost("refused".to_owned());
        let lost = crew.lock().lost.take();
        assert_eq!(lost, Some(Failure::Connect("refused".to_owned())));
    }
}
