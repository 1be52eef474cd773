//! [`get_tree`]: a remote directory and everything under it, as
//! `lftp mirror --parallel=N` and `globus-url-copy -r -cc N` move one.
//!
//! One control connection lists the tree, a directory at a time
//! (`listing`), and creates the local directories; then `jobs` control
//! connections, each logged in once, take the files from one queue in
//! turn, so that `jobs` files are in flight and no file waits for a
//! login. Each file goes as [`super::get`] sends one (`transfer::get_file`):
//! its part file, `REST` with `resume`, its checksum with `verify`.
//!
//! Guarantees: every local path is inside the target directory (names are
//! checked by `entries`); a file that fails does not stop the others: it
//! is reported with its error, and its part file is kept for `resume` as
//! [`super::get`] keeps one; a control connection that may be out of step
//! after a failure is closed and a new one opened for the next file;
//! after `SIGINT`/`SIGTERM` no new file starts. With `resume`, a local
//! file that already has the remote size is skipped, not fetched again.

use std::collections::VecDeque;
use std::net::TcpStream;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use rightsize_ftp_proto::entries::EntryKind;
use rightsize_ftp_proto::url::FtpUrl;
use rightsize_sys::signals;
use serde::Serialize;

use super::error::ClientError;
use super::local::Sink;
use super::session::Session;
use super::transfer::get_file;
use super::{Observer, Options, Progress};

/// Deepest directory nesting followed (a server's link loop ends here).
pub const MAX_DEPTH: usize = 64;
/// Most entries a tree may hold.
pub const MAX_ENTRIES: usize = 1_000_000;
/// How often progress is reported.
const PROGRESS_EVERY: Duration = Duration::from_millis(200);

/// Receives what happens during a tree transfer; every method has an
/// empty default.
pub trait TreeObserver {
    /// The listing is done: this many files and bytes to move.
    fn listed(&mut self, _files: u64, _bytes: u64) {}
    /// Progress of the whole tree, every 200 ms at most.
    fn progress(&mut self, _progress: &TreeProgress) {}
    /// A file ended: its path under the tree and its outcome (bytes moved,
    /// or the error).
    fn file_done(&mut self, _path: &str, _outcome: &Result<u64, String>) {}
    /// Each command and reply, with the number of its connection (0 for
    /// the listing).
    fn protocol(&mut self, _connection: u32, _line: &str) {}
    /// Something the user should know that does not stop the transfer.
    fn warning(&mut self, _message: &str) {}
}

impl TreeObserver for () {}

/// Where a tree transfer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TreeProgress {
    /// Files ended (moved, failed).
    pub files_done: u64,
    /// Files to move.
    pub files_total: u64,
    /// Bytes moved.
    pub bytes_done: u64,
    /// Bytes to move.
    pub bytes_total: u64,
    /// Since the first file started.
    pub elapsed: Duration,
}

/// A file that failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileFailure {
    /// Its path under the tree.
    pub path: String,
    /// Why.
    pub error: String,
}

/// The result of a tree transfer; failed files are in it, not an error.
#[derive(Debug, Clone, Serialize)]
pub struct TreeReport {
    /// The URL, password removed.
    pub url: String,
    /// The local directory filled.
    pub local_dir: PathBuf,
    /// Directories in the tree, its top included.
    pub directories: u64,
    /// Files moved whole.
    pub files: u64,
    /// Bytes moved on data connections.
    pub bytes: u64,
    /// Bytes already in part files that transfers resumed after.
    pub resumed_bytes: u64,
    /// Files skipped because they were already complete (`resume`).
    pub skipped_files: u64,
    /// Their bytes.
    pub skipped_bytes: u64,
    /// Files whose checksum matched the server's (`verify`).
    pub verified_files: u64,
    /// Files that failed.
    pub failures: Vec<FileFailure>,
    /// Files not started (a signal stopped the transfer).
    pub not_started: u64,
    /// Control connections that moved files.
    pub jobs: u32,
    /// Listing the tree.
    pub listing_elapsed: Duration,
    /// From the first file's start to the last file's end.
    pub elapsed: Duration,
}

impl TreeReport {
    /// Payload bits per second over [`TreeReport::elapsed`].
    pub fn goodput_bps(&self) -> f64 {
        let seconds = self.elapsed.as_secs_f64();
        if seconds > 0.0 {
            self.bytes as f64 * 8.0 / seconds
        } else {
            0.0
        }
    }
}

/// A file to move.
#[derive(Debug, Clone)]
struct FileJob {
    /// The remote path, as the server names it.
    remote: Vec<u8>,
    /// The path under the tree, for messages.
    relative: String,
    /// Where it goes.
    local: PathBuf,
    /// From the listing.
    size: Option<u64>,
}

/// What a job's thread tells the caller's thread.
enum Event {
    Protocol(u32, String),
    Warning(String),
    Moved(u64),
    Done {
        relative: String,
        outcome: Result<(u64, u64, bool), String>,
    },
}

/// Downloads the directory `url` names, and everything under it, into
/// `dir` (created if missing) over `jobs` connections.
pub fn get_tree(
    url: &FtpUrl,
    dir: &Path,
    options: &Options,
    jobs: u32,
    observer: &mut dyn TreeObserver,
) -> Result<TreeReport, ClientError> {
    let listing_started = Instant::now();
    create_dir(dir)?;
    let mut relay = Relay(observer);
    let mut session = Session::open(url, options, &mut relay)?;
    let (files, directories) = walk(&mut session, url.path(), dir, options, &mut relay)?;
    session.quit(&mut relay);
    let listing_elapsed = listing_started.elapsed();

    let mut report = TreeReport {
        url: url.to_string(),
        local_dir: dir.to_path_buf(),
        directories,
        files: 0,
        bytes: 0,
        resumed_bytes: 0,
        skipped_files: 0,
        skipped_bytes: 0,
        verified_files: 0,
        failures: Vec::new(),
        not_started: 0,
        jobs: 0,
        listing_elapsed,
        elapsed: Duration::ZERO,
    };
    let mut queue = VecDeque::new();
    for job in files {
        match (options.resume, job.size, std::fs::metadata(&job.local)) {
            (true, Some(size), Ok(meta)) if meta.is_file() && meta.len() == size => {
                report.skipped_files += 1;
                report.skipped_bytes += size;
            }
            _ => queue.push_back(job),
        }
    }
    let files_total = queue.len() as u64;
    let bytes_total = queue.iter().filter_map(|j| j.size).sum();
    observer.listed(files_total, bytes_total);
    report.jobs = jobs.clamp(1, u32::try_from(queue.len()).unwrap_or(u32::MAX).max(1));
    let queue = Mutex::new(queue);
    let started = Instant::now();
    let (tx, rx) = mpsc::channel();
    std::thread::scope(|scope| {
        for connection in 1..=report.jobs {
            let tx = tx.clone();
            let queue = &queue;
            scope.spawn(move || run_job(url, queue, options, connection, &tx));
        }
        drop(tx);
        let totals = (files_total, bytes_total);
        collect(&rx, &mut report, totals, started, options.verify, observer);
    });
    report.elapsed = started.elapsed();
    report.not_started = queue
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .len() as u64;
    Ok(report)
}

/// The caller's side: events into the observer and the report.
fn collect(
    rx: &Receiver<Event>,
    report: &mut TreeReport,
    (files_total, bytes_total): (u64, u64),
    started: Instant,
    verify: bool,
    observer: &mut dyn TreeObserver,
) {
    let mut progress = TreeProgress {
        files_done: 0,
        files_total,
        bytes_done: 0,
        bytes_total,
        elapsed: Duration::ZERO,
    };
    let mut shown = Instant::now();
    loop {
        let event = match rx.recv_timeout(PROGRESS_EVERY) {
            Ok(event) => Some(event),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => break,
        };
        match event {
            Some(Event::Protocol(connection, line)) => observer.protocol(connection, &line),
            Some(Event::Warning(message)) => observer.warning(&message),
            Some(Event::Moved(bytes)) => progress.bytes_done += bytes,
            Some(Event::Done { relative, outcome }) => {
                progress.files_done += 1;
                match &outcome {
                    Ok((bytes, resumed, verified)) => {
                        report.files += 1;
                        report.bytes += bytes;
                        report.resumed_bytes += resumed;
                        report.verified_files += u64::from(*verified && verify);
                    }
                    Err(error) => report.failures.push(FileFailure {
                        path: relative.clone(),
                        error: error.clone(),
                    }),
                }
                observer.file_done(&relative, &outcome.map(|(bytes, ..)| bytes));
            }
            None => {}
        }
        if shown.elapsed() >= PROGRESS_EVERY {
            shown = Instant::now();
            progress.elapsed = started.elapsed();
            observer.progress(&progress);
        }
    }
}

/// Lists the tree under `top` breadth first, creating its directories
/// under `dir`; returns the files and the number of directories.
fn walk(
    session: &mut Session<TcpStream>,
    top: &[u8],
    dir: &Path,
    options: &Options,
    observer: &mut dyn Observer,
) -> Result<(Vec<FileJob>, u64), ClientError> {
    let mut files = Vec::new();
    let mut directories = 0u64;
    let mut pending = VecDeque::from([(top.to_vec(), String::new(), dir.to_path_buf(), 0usize)]);
    let mut entries_seen = 0usize;
    while let Some((remote, relative, local, depth)) = pending.pop_front() {
        directories += 1;
        let entries = session.list_dir(&remote, options, observer)?;
        entries_seen += entries.len();
        if entries_seen > MAX_ENTRIES {
            return Err(ClientError::Tree {
                why: format!(
                    "the tree holds more than {MAX_ENTRIES} entries; download it in parts"
                ),
            });
        }
        for entry in entries {
            let name = String::from_utf8_lossy(&entry.name).into_owned();
            let child_remote = join_remote(&remote, &entry.name);
            let child_relative = if relative.is_empty() {
                name.clone()
            } else {
                format!("{relative}/{name}")
            };
            let child_local = local.join(std::ffi::OsStr::from_bytes(&entry.name));
            match entry.kind {
                EntryKind::File => files.push(FileJob {
                    remote: child_remote,
                    relative: child_relative,
                    local: child_local,
                    size: entry.size,
                }),
                EntryKind::Dir if depth + 1 > MAX_DEPTH => {
                    observer.warning(&format!(
                        "skipped \"{child_relative}\": deeper than {MAX_DEPTH} directories"
                    ));
                }
                EntryKind::Dir => {
                    create_dir(&child_local)?;
                    pending.push_back((child_remote, child_relative, child_local, depth + 1));
                }
                EntryKind::Other => observer.warning(&format!(
                    "skipped \"{child_relative}\": neither a file nor a directory (a link?)"
                )),
            }
        }
    }
    Ok((files, directories))
}

/// `dir/name` as the server spells paths (an empty `dir` is the login
/// directory).
fn join_remote(dir: &[u8], name: &[u8]) -> Vec<u8> {
    let mut path = dir.to_vec();
    if !path.is_empty() && !path.ends_with(b"/") {
        path.push(b'/');
    }
    path.extend_from_slice(name);
    path
}

fn create_dir(dir: &Path) -> Result<(), ClientError> {
    std::fs::create_dir_all(dir).map_err(|source| ClientError::Local {
        op: "create the directory",
        path: dir.to_path_buf(),
        source,
    })
}

/// One connection's share: files from `queue` until none is left or a
/// signal came.
fn run_job(
    url: &FtpUrl,
    queue: &Mutex<VecDeque<FileJob>>,
    options: &Options,
    connection: u32,
    tx: &Sender<Event>,
) {
    let mut forward = Forward {
        tx,
        connection,
        file_bytes: 0,
    };
    let mut session: Option<Session<TcpStream>> = None;
    loop {
        if signals::caught().is_some() {
            break;
        }
        let next = queue
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop_front();
        let Some(job) = next else { break };
        forward.file_bytes = 0;
        let outcome = fetch(url, &mut session, &job, options, &mut forward);
        let outcome = match outcome {
            Ok(report) => Ok((
                report.bytes,
                report.resumed_bytes,
                report.checksum.is_some_and(|c| c.verified),
            )),
            Err(error) => {
                if !keeps_session(&error) {
                    session = None;
                }
                Err(chain(&error))
            }
        };
        let _ = tx.send(Event::Done {
            relative: job.relative,
            outcome,
        });
    }
    if let Some(session) = session {
        session.quit(&mut forward);
    }
}

fn fetch(
    url: &FtpUrl,
    session: &mut Option<Session<TcpStream>>,
    job: &FileJob,
    options: &Options,
    forward: &mut Forward<'_>,
) -> Result<super::Report, ClientError> {
    if job.local.is_dir() {
        return Err(ClientError::Local {
            op: "write the file (a directory holds its name)",
            path: job.local.clone(),
            source: std::io::ErrorKind::IsADirectory.into(),
        });
    }
    let sink = Sink::open(&job.local, options.resume)?;
    let session = match session {
        Some(session) => session,
        None => {
            let mut opened = Session::open(url, options, forward)?;
            if options.tune.is_some() {
                opened.rightsize_on(forward)?;
            }
            session.insert(opened)
        }
    };
    get_file(session, &job.remote, sink, job.size, options, forward)
}

/// The error and its causes, on one line.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}

/// Whether the control connection is still in step after `error`: the
/// server answered, and nothing is left unread.
fn keeps_session(error: &ClientError) -> bool {
    matches!(
        error,
        ClientError::RemoteFile { .. }
            | ClientError::ShortTransfer { .. }
            | ClientError::ChecksumMismatch { .. }
            | ClientError::NoRestart { .. }
    )
}

/// A job's [`Observer`]: everything goes to the caller's thread.
struct Forward<'a> {
    tx: &'a Sender<Event>,
    connection: u32,
    /// Bytes of the current file already counted.
    file_bytes: u64,
}

impl Observer for Forward<'_> {
    fn progress(&mut self, progress: &Progress<'_>) {
        let new = progress.bytes.saturating_sub(self.file_bytes);
        if new > 0 {
            self.file_bytes = progress.bytes;
            let _ = self.tx.send(Event::Moved(new));
        }
    }

    fn protocol(&mut self, line: &str) {
        let _ = self
            .tx
            .send(Event::Protocol(self.connection, line.to_owned()));
    }

    fn warning(&mut self, message: &str) {
        let _ = self.tx.send(Event::Warning(message.to_owned()));
    }
}

/// The listing's [`Observer`]: straight to the caller's.
struct Relay<'a>(&'a mut dyn TreeObserver);

impl Observer for Relay<'_> {
    fn protocol(&mut self, line: &str) {
        self.0.protocol(0, line);
    }

    fn warning(&mut self, message: &str) {
        self.0.warning(message);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_paths_join_with_one_slash() {
        assert_eq!(join_remote(b"", b"a"), b"a");
        assert_eq!(join_remote(b"pub", b"a"), b"pub/a");
        assert_eq!(join_remote(b"pub/", b"a"), b"pub/a");
        assert_eq!(join_remote(b"/abs", b"a b"), b"/abs/a b");
    }

    #[test]
    fn only_answered_failures_keep_the_connection() {
        let server = "127.0.0.1:21".parse().unwrap_or_else(|_| unreachable!());
        assert!(keeps_session(&ClientError::RemoteFile {
            server,
            verb: "RETR",
            path: "x".into(),
            reply: "550 no".into(),
        }));
        assert!(!keeps_session(&ClientError::Closed {
            op: "RETR".into(),
            server,
        }));
    }
}
