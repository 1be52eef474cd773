//! [`get_tree`]: a remote directory and everything under it, as
//! `lftp mirror --parallel=N` and `globus-url-copy -r -cd -pp -cc N` move
//! one.
//!
//! `jobs` control connections, each logged in once, share one queue of
//! work (`work`): directories to list and files to fetch. The tree is
//! listed by the same connections while the files already known move.
//! Where the server takes MODE E (rightsize, the Globus server), each
//! connection pipelines its commands over data connections kept from file
//! to file (`pipeline`), so a small file costs no round trip of its own;
//! elsewhere each file goes as [`super::get`] sends one
//! (`transfer::get_file`): a passive data connection, its part file,
//! `REST` with `resume`, its checksum with `verify`.
//!
//! Guarantees: every local path is inside the target directory (names are
//! checked by `entries`); a file that fails does not stop the others: it
//! is reported with its error; a control connection that may be out of
//! step after a failure is closed and a new one opened; after
//! `SIGINT`/`SIGTERM` no new command is sent. With `resume`, a local file
//! that already has the remote size is skipped and a part file is resumed
//! with `REST` (in stream mode: MODE E's blocks have no prefix to resume
//! after). A top directory that cannot be listed is the transfer's error.

use super::error::chain;
use crate::client::secure::ClientStream;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use rightsize_ftp_proto::Command;
use rightsize_ftp_proto::checksum::{Algorithm, Checksum};
use rightsize_ftp_proto::command::TransferMode;
use rightsize_ftp_proto::url::FtpUrl;
use rightsize_sys::signals;
use serde::Serialize;

use super::error::ClientError;
use super::local::{Sink, read_into};
use super::parallel;
use super::session::Session;
use super::transfer::get_file;
use super::{Observer, Options, Progress};
use work::{Item, Work};

mod pipeline;
mod upload;
mod work;

pub use upload::put_tree;

/// How often progress is reported.
const PROGRESS_EVERY: Duration = Duration::from_millis(200);

/// Receives what happens during a tree transfer; every method has an
/// empty default.
pub trait TreeObserver {
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
    /// Files to move, as far as the tree is listed.
    pub files_total: u64,
    /// Bytes moved.
    pub bytes_done: u64,
    /// Bytes to move, as far as the tree is listed.
    pub bytes_total: u64,
    /// Directories still to list (0: the totals are final).
    pub listing: u64,
    /// Since the transfer started.
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
    /// Directories that could not be listed (their files are missing).
    pub unlisted: Vec<FileFailure>,
    /// From the start to the last listing's end (files move meanwhile).
    pub listing_elapsed: Duration,
    /// From the start (the first login) to the last file's end.
    pub elapsed: Duration,
}

impl TreeReport {
    /// Nothing moved yet.
    fn new(url: &FtpUrl, dir: &Path, jobs: u32) -> TreeReport {
        TreeReport {
            url: url.to_string(),
            local_dir: dir.to_path_buf(),
            directories: 0,
            files: 0,
            bytes: 0,
            resumed_bytes: 0,
            skipped_files: 0,
            skipped_bytes: 0,
            verified_files: 0,
            failures: Vec::new(),
            not_started: 0,
            jobs: jobs.max(1),
            unlisted: Vec::new(),
            listing_elapsed: Duration::ZERO,
            elapsed: Duration::ZERO,
        }
    }

    /// Payload bits per second over [`TreeReport::elapsed`].
    pub fn goodput_bps(&self) -> f64 {
        super::bits_per_second(self.bytes, self.elapsed)
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
    /// What its part file holds (`-C` resumes after it).
    part_bytes: u64,
    /// `--sync`: the local file has the remote size; checksums decide
    /// whether it is fetched.
    same_size: bool,
}

/// What a connection's thread tells the caller's thread.
enum Event {
    Protocol(u32, String),
    Warning(String),
    Moved(u64),
    /// A directory listed: the directories and files (and bytes) it
    /// added.
    Listed {
        dirs: u64,
        files: u64,
        bytes: u64,
    },
    /// A file skipped as complete, its size.
    Skipped(u64),
    ListFailed {
        relative: String,
        top: bool,
        error: String,
    },
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
    std::fs::create_dir_all(dir).map_err(|source| ClientError::Local {
        op: "create the directory",
        path: dir.to_path_buf(),
        source,
    })?;
    let work = Work::new(work::top(url.path(), dir), options.resume, options.sync);
    let mut report = TreeReport::new(url, dir, jobs);
    let started = Instant::now();
    let (tx, rx) = mpsc::channel();
    let top_error = std::thread::scope(|scope| {
        for connection in 1..=report.jobs {
            let tx = tx.clone();
            let work = &work;
            scope.spawn(move || run_job(url, work, options, connection, &tx));
        }
        drop(tx);
        collect(&rx, &mut report, started, options.verify, observer)
    });
    report.elapsed = started.elapsed();
    report.not_started = work.files_left();
    match top_error {
        Some(why) => Err(ClientError::Tree {
            why: format!("cannot list {url}: {why}"),
        }),
        None => Ok(report),
    }
}

/// The caller's side: events into the observer and the report. Returns
/// why the top directory could not be listed, if it could not.
fn collect(
    rx: &Receiver<Event>,
    report: &mut TreeReport,
    started: Instant,
    verify: bool,
    observer: &mut dyn TreeObserver,
) -> Option<String> {
    let mut progress = TreeProgress {
        files_done: 0,
        files_total: 0,
        bytes_done: 0,
        bytes_total: 0,
        listing: 1,
        elapsed: Duration::ZERO,
    };
    let mut top_error = None;
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
            Some(Event::Listed { dirs, files, bytes }) => {
                report.directories += 1;
                progress.listing = (progress.listing + dirs).saturating_sub(1);
                report.listing_elapsed = started.elapsed();
                progress.files_total += files;
                progress.bytes_total += bytes;
            }
            Some(Event::Skipped(bytes)) => {
                report.skipped_files += 1;
                report.skipped_bytes += bytes;
            }
            Some(Event::ListFailed {
                relative,
                top,
                error,
            }) => {
                progress.listing = progress.listing.saturating_sub(1);
                if top {
                    top_error.get_or_insert(error);
                } else {
                    observer.warning(&format!("cannot list \"{relative}\": {error}"));
                    report.unlisted.push(FileFailure {
                        path: relative,
                        error,
                    });
                }
            }
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
    top_error
}

/// One connection's share of the work, until none is left or a signal
/// came: over MODE E, pipelined, when the server takes it (`pipeline`);
/// else one piece after the other in stream mode.
fn run_job(url: &FtpUrl, work: &Work, options: &Options, connection: u32, tx: &Sender<Event>) {
    let mut forward = Forward {
        tx,
        connection,
        file_bytes: 0,
    };
    let mut session: Option<Session<ClientStream>> = None;
    // Whether this server takes MODE E, once asked.
    let mut extended: Option<bool> = None;
    // Files the pipeline left for the stream mode (part files to resume).
    let mut later: Vec<FileJob> = Vec::new();
    loop {
        if signals::caught().is_some() {
            break;
        }
        if session.is_none() {
            match open_session(url, options, &mut extended, &mut forward) {
                Ok(opened) => session = Some(opened),
                Err(e) => {
                    // The work that would have come next fails with it.
                    let Some(item) = work.next(true) else { break };
                    fail(item, &e, work, &mut forward);
                    continue;
                }
            }
        }
        let Some(open) = session.as_mut() else { break };
        if extended == Some(true) {
            match pipeline::run(open, work, options, &mut later, &mut forward) {
                Ok(()) if later.is_empty() => break,
                Ok(()) => {
                    // Back to stream mode for the part files.
                    let mode = Command::Mode(TransferMode::Stream);
                    if open.control.expect_completion(&mode, &mut forward).is_err() {
                        session = None;
                    }
                    extended = Some(false);
                    continue;
                }
                Err(_) => {
                    session = None;
                    continue;
                }
            }
        }
        let item = match later.pop() {
            Some(job) => Item::Get(job),
            None => match work.next(true) {
                Some(item) => item,
                None => break,
            },
        };
        let keep = match item {
            Item::List(dir) => {
                let listed = open.list_dir(&dir.remote, options, &mut forward);
                let keep = listed.as_ref().err().is_none_or(keeps_session);
                let entries = listed.map_err(|e| chain(&e));
                work.listed(&dir, entries, &mut |event| {
                    let _ = tx.send(event);
                });
                keep
            }
            Item::Get(mut job) => {
                if job.same_size {
                    match same_there(open, &job, &mut forward) {
                        Ok(true) => {
                            forward.skipped(&job);
                            continue;
                        }
                        Ok(false) => job.same_size = false,
                        Err(e) => {
                            forward.done(job, Err(chain(&e)));
                            session = None;
                            continue;
                        }
                    }
                }
                forward.file_bytes = 0;
                let outcome = fetch(open, &job, options, &mut forward);
                let keep = outcome.as_ref().err().is_none_or(keeps_session);
                let outcome = outcome
                    .map(|report| {
                        (
                            report.bytes,
                            report.resumed_bytes,
                            report.checksum.is_some_and(|c| c.verified),
                        )
                    })
                    .map_err(|e| chain(&e));
                forward.done(job, outcome);
                keep
            }
        };
        if !keep {
            session = None;
        }
    }
    if let Some(session) = session {
        session.quit(&mut forward);
    }
}

/// A piece of work that cannot be done: `error` is its outcome.
fn fail(item: Item, error: &ClientError, work: &Work, forward: &mut Forward<'_>) {
    match item {
        Item::List(dir) => work.listed(&dir, Err(chain(error)), &mut |event| {
            let _ = forward.tx.send(event);
        }),
        Item::Get(job) => forward.done(job, Err(chain(error))),
    }
}

/// A logged-in session for a job; asks for MODE E unless `extended` is
/// already false (a refusal leaves the session in stream mode, and
/// `extended` false).
fn open_session(
    url: &FtpUrl,
    options: &Options,
    extended: &mut Option<bool>,
    forward: &mut Forward<'_>,
) -> Result<Session<ClientStream>, ClientError> {
    let mut session = Session::open(url, options, forward)?;
    // MODE E's streams are not secured: a TLS session moves each file
    // over one TLS data connection.
    if session.tls.is_some() {
        *extended = Some(false);
    }
    if extended.is_none_or(|on| on) {
        let asked = parallel::extended_mode(&mut session, options.streams.max(1), forward);
        match asked {
            Ok(()) => *extended = Some(true),
            Err(ClientError::NoParallel { .. }) => *extended = Some(false),
            Err(e) => return Err(e),
        }
    }
    if *extended == Some(false) && options.tune.is_some() {
        session.rightsize_on(forward)?;
    }
    if options.sync && forward.connection == 1 && session.features.checksum().is_none() {
        forward.warning(SYNC_BY_SIZE);
    }
    Ok(session)
}

/// `--sync`, one file in stream mode: whether the server's checksum of
/// `job`'s remote file (`CKSM`) is the local file's. A server without
/// `CKSM` is taken at the size (said once, when the session opens); a
/// refusal or a local file that cannot be read means not the same.
fn same_there(
    session: &mut Session<ClientStream>,
    job: &FileJob,
    forward: &mut Forward<'_>,
) -> Result<bool, ClientError> {
    let Some(algorithm) = session.features.checksum() else {
        return Ok(true);
    };
    let command = super::session::cksm(algorithm, &job.remote)?;
    let reply = session.control.command(&command, forward)?;
    Ok(matches_local(session, algorithm, job, &reply))
}

/// Sends `CKSM` of `path` (its reply is read later: a pipeline's).
fn session_cksm(
    session: &mut Session<ClientStream>,
    algorithm: Algorithm,
    path: &[u8],
    forward: &mut Forward<'_>,
) -> Result<(), ClientError> {
    let command = super::session::cksm(algorithm, path)?;
    session.control.send(&command, forward)
}

/// Whether the `CKSM` `reply` for `job`'s remote file is the checksum of
/// its local file (one that cannot be read is not the same).
fn matches_local(
    session: &Session<ClientStream>,
    algorithm: Algorithm,
    job: &FileJob,
    reply: &rightsize_ftp_proto::Reply,
) -> bool {
    let local = File::open(&job.local).and_then(|mut file| {
        let mut checksum = Checksum::of(algorithm);
        read_into(&mut file, u64::MAX, |piece| checksum.update(piece))?;
        Ok(checksum.finish())
    });
    local.is_ok_and(|local| {
        session
            .checked(algorithm, local, &job.remote, reply)
            .is_ok()
    })
}

/// The warning for `--sync` against a server without `CKSM`.
const SYNC_BY_SIZE: &str =
    "--sync: the server offers no checksum (CKSM): files of the same size count as the same";

fn fetch(
    session: &mut Session<ClientStream>,
    job: &FileJob,
    options: &Options,
    forward: &mut Forward<'_>,
) -> Result<super::Report, ClientError> {
    let sink = Sink::open(&job.local, options.resume)?;
    get_file(session, &job.remote, sink, job.size, options, forward)
}

/// Sends `command` (a `RETR` or `STOR` of `path`), and with `algorithm`
/// the `CKSM` of `path` after it: a pipeline's pair.
fn ask(
    session: &mut Session<ClientStream>,
    command: Command,
    path: &[u8],
    algorithm: Option<rightsize_ftp_proto::checksum::Algorithm>,
    forward: &mut Forward<'_>,
) -> Result<(), ClientError> {
    session.control.send(&command, forward)?;
    if let Some(algorithm) = algorithm {
        session
            .control
            .send(&super::session::cksm(algorithm, path)?, forward)?;
    }
    Ok(())
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

impl Forward<'_> {
    /// A file ended.
    fn done(&mut self, job: FileJob, outcome: Result<(u64, u64, bool), String>) {
        let _ = self.tx.send(Event::Done {
            relative: job.relative,
            outcome,
        });
    }

    /// A file skipped: already there, whole (`-C`) or the same (`--sync`).
    fn skipped(&mut self, job: &FileJob) {
        let _ = self.tx.send(Event::Skipped(job.size.unwrap_or(0)));
    }

    /// Bytes moved.
    fn moved(&mut self, bytes: u64) {
        if bytes > 0 {
            let _ = self.tx.send(Event::Moved(bytes));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
