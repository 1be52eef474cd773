//! [`put_tree`]: a local directory and everything under it, uploaded, as
//! `lftp mirror -R --parallel=N` and `globus-url-copy -r -cd -cc N` do.
//!
//! The tree is walked first (symbolic links are skipped, as `cp -r` and
//! lftp do without `-L`), its directories made on the server with `MKD`
//! (parents first; one that exists already is no error), then `jobs`
//! control connections take the files from one queue. Where the server
//! takes MODE E, a connection connects its data connections once and
//! keeps them from file to file, its `STOR`s (and `CKSM`s) sent ahead of
//! the replies; a file's blocks go only after its `150`, so that a file
//! the server refuses can never be read as the next one. Elsewhere each
//! file goes as [`super::super::put`] sends one.
//!
//! Guarantees: a file that fails does not stop the others; a connection
//! that may be out of step is closed and a new one opened; with `resume`
//! (stream mode only) a file the server holds whole (`SIZE`) is skipped
//! and one it holds in part is finished after `REST`.

use crate::client::secure::ClientStream;
use std::collections::VecDeque;
use std::fs::File;
use std::net::{SocketAddr, TcpStream};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use rightsize_ftp_proto::Command;
use rightsize_ftp_proto::checksum::Checksum;
use rightsize_ftp_proto::mode_e::{Blocks, Ranges};
use rightsize_ftp_proto::url::FtpUrl;
use rightsize_sys::{signals, socket};

use super::pipeline::MAX_AHEAD;
use super::work::{MAX_DEPTH, join_remote};
use super::{Event, FileJob, Forward, TreeObserver, TreeReport, chain, collect, keeps_session};
use crate::blocks::{self, BLOCK_BYTES, Failure};
use crate::client::Options;
use crate::client::control::arg;
use crate::client::data;
use crate::client::error::ClientError;
use crate::client::local::read_into;
use crate::client::session::Session;
use crate::client::transfer::{open_upload, put_file, start_checksum};
use crate::stream::DataStream;

/// Uploads the directory `dir`, and everything under it, to `url`: a URL
/// ending in `/` gets the directory's name appended (as `put` does with a
/// file), else it names the remote directory itself.
pub fn put_tree(
    dir: &Path,
    url: &FtpUrl,
    options: &Options,
    jobs: u32,
    observer: &mut dyn TreeObserver,
) -> Result<TreeReport, ClientError> {
    let started = Instant::now();
    let top = crate::client::transfer::remote_path(url, dir);
    let mut warnings = Vec::new();
    let (dirs, files) = walk(dir, &top, &mut warnings)?;
    for warning in &warnings {
        observer.warning(warning);
    }
    let (tx, rx) = mpsc::channel();
    let mut report = TreeReport::new(url, dir, jobs);
    let queue = Mutex::new(VecDeque::from(files));
    std::thread::scope(|scope| -> Result<(), ClientError> {
        {
            let tx = tx.clone();
            let mut forward = Forward {
                tx: &tx,
                connection: 0,
                file_bytes: 0,
            };
            make_dirs(url, &dirs, options, &mut forward)?;
        }
        let total = {
            let q = queue.lock().unwrap_or_else(PoisonError::into_inner);
            (q.len() as u64, q.iter().filter_map(|j| j.size).sum())
        };
        let _ = tx.send(Event::Listed {
            dirs: 0,
            files: total.0,
            bytes: total.1,
        });
        for connection in 1..=report.jobs {
            let tx = tx.clone();
            let queue = &queue;
            scope.spawn(move || run_job(url, queue, options, connection, &tx));
        }
        drop(tx);
        collect(&rx, &mut report, started, options.verify, observer);
        Ok(())
    })?;
    report.directories = dirs.len() as u64;
    report.listing_elapsed = Duration::ZERO;
    report.elapsed = started.elapsed();
    report.not_started = queue
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner)
        .len() as u64;
    Ok(report)
}

/// The directories (the top first, parents before children, as remote
/// paths) and the files under `dir`; links and other kinds are skipped
/// with a warning.
fn walk(
    dir: &Path,
    top: &[u8],
    warnings: &mut Vec<String>,
) -> Result<(Vec<Vec<u8>>, Vec<FileJob>), ClientError> {
    let meta = std::fs::metadata(dir).map_err(|source| ClientError::Local {
        op: "read the directory",
        path: dir.to_path_buf(),
        source,
    })?;
    if !meta.is_dir() {
        return Err(ClientError::Tree {
            why: format!(
                "{} is not a directory; put -r uploads a directory (put uploads a file)",
                dir.display()
            ),
        });
    }
    let mut dirs = vec![top.to_vec()];
    let mut files = Vec::new();
    let mut pending = VecDeque::from([(dir.to_path_buf(), top.to_vec(), String::new(), 0usize)]);
    while let Some((local, remote, relative, depth)) = pending.pop_front() {
        let read = std::fs::read_dir(&local).map_err(|source| ClientError::Local {
            op: "read the directory",
            path: local.clone(),
            source,
        })?;
        let mut entries: Vec<_> = read.flatten().collect();
        entries.sort_by_key(std::fs::DirEntry::file_name);
        for entry in entries {
            let name = entry.file_name();
            let child_local = entry.path();
            let child_remote = join_remote(&remote, name.as_bytes());
            let child_relative = if relative.is_empty() {
                name.to_string_lossy().into_owned()
            } else {
                format!("{relative}/{}", name.to_string_lossy())
            };
            match entry.file_type() {
                Ok(t) if t.is_dir() && depth + 1 > MAX_DEPTH => warnings.push(format!(
                    "skipped \"{child_relative}\": deeper than {MAX_DEPTH} directories"
                )),
                Ok(t) if t.is_dir() => {
                    dirs.push(child_remote.clone());
                    pending.push_back((child_local, child_remote, child_relative, depth + 1));
                }
                Ok(t) if t.is_file() => {
                    let size = entry.metadata().ok().map(|m| m.len());
                    files.push(FileJob {
                        remote: child_remote,
                        relative: child_relative,
                        local: child_local,
                        size,
                        part_bytes: 0,
                        same_size: false,
                    });
                }
                _ => warnings.push(format!(
                    "skipped \"{child_relative}\": neither a file nor a directory (a link?)"
                )),
            }
        }
    }
    Ok((dirs, files))
}

/// `MKD` of every directory, parents first, sent [`MAX_AHEAD`] at a time;
/// a refusal is not an error (the directory may exist already: servers
/// answer that with 550 or 521): a file in a directory that is missing
/// fails on its own.
fn make_dirs(
    url: &FtpUrl,
    dirs: &[Vec<u8>],
    options: &Options,
    forward: &mut Forward<'_>,
) -> Result<(), ClientError> {
    let mut session = Session::open(url, options, forward)?;
    for batch in dirs.chunks(MAX_AHEAD) {
        for dir in batch {
            session
                .control
                .send(&Command::Mkd(arg(dir, "path")?), forward)?;
        }
        for _ in batch {
            session.control.reply("MKD", forward)?;
        }
    }
    session.quit(forward);
    Ok(())
}

/// One connection's share of the files.
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
    let take = || {
        queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front()
    };
    let mut session: Option<Session<ClientStream>> = None;
    // MODE E is tried unless resuming or syncing (which need SIZE, REST
    // and CKSM per file).
    let mut extended = if options.resume || options.sync {
        Some(false)
    } else {
        None
    };
    loop {
        if signals::caught().is_some() {
            break;
        }
        if session.is_none() {
            match super::open_session(url, options, &mut extended, &mut forward) {
                Ok(opened) => session = Some(opened),
                Err(e) => {
                    let Some(job) = take() else { break };
                    forward.done(job, Err(chain(&e)));
                    continue;
                }
            }
        }
        let Some(open) = session.as_mut() else { break };
        if extended == Some(true) {
            match push(open, queue, options, &mut forward) {
                Ok(()) => break,
                Err(_) => {
                    session = None;
                    continue;
                }
            }
        }
        let Some(job) = take() else { break };
        forward.file_bytes = 0;
        let outcome = send_file(open, &job, options, &mut forward);
        let keep = outcome.as_ref().err().is_none_or(keeps_session);
        match outcome {
            Ok(None) => forward.skipped(&job),
            Ok(Some(report)) => forward.done(
                job,
                Ok((
                    report.bytes,
                    report.resumed_bytes,
                    report.checksum.is_some_and(|c| c.verified),
                )),
            ),
            Err(e) => forward.done(job, Err(chain(&e))),
        }
        if !keep {
            session = None;
        }
    }
    if let Some(session) = session {
        session.quit(&mut forward);
    }
}

/// One file in stream mode; `None` when `resume` finds it whole there, or
/// `sync` the same (its size, and its checksum where the server has
/// `CKSM`). A file of the same size that `sync` finds different goes
/// again whole.
fn send_file(
    session: &mut Session<ClientStream>,
    job: &FileJob,
    options: &Options,
    forward: &mut Forward<'_>,
) -> Result<Option<crate::client::Report>, ClientError> {
    let upload = open_upload(&job.local)?;
    if (options.resume || options.sync) && session.size(&job.remote, forward)? == Some(upload.1) {
        if !options.sync || super::same_there(session, job, forward)? {
            return Ok(None);
        }
        let whole = Options {
            resume: false,
            ..options.clone()
        };
        let upload = (upload.0, Some(upload.1));
        return put_file(session, &job.local, upload, &job.remote, &whole, forward).map(Some);
    }
    let upload = (upload.0, Some(upload.1));
    put_file(session, &job.local, upload, &job.remote, options, forward).map(Some)
}

/// A `STOR` sent whose replies are not read yet.
struct Asked {
    job: FileJob,
    file: File,
    size: u64,
    verify: Option<Checksum>,
}

/// Files from `queue` over `session` (in MODE E), pipelined, until none is
/// left (`Ok`) or a data connection failed (`Err`; the files asked for go
/// back to the queue).
fn push(
    session: &mut Session<ClientStream>,
    queue: &Mutex<VecDeque<FileJob>>,
    options: &Options,
    forward: &mut Forward<'_>,
) -> Result<(), ClientError> {
    let (mode, port) = data::passive_port(&mut session.control, forward)?;
    let server = session.control.server();
    let addr = SocketAddr::new(server.ip(), port);
    let mut streams = Vec::new();
    for _ in 0..options.streams.max(1) {
        let (stream, _) = socket::connect(addr, &options.buffers, options.connect_timeout)
            .map_err(|source| ClientError::DataConnect {
                addr,
                mode: mode.verb(),
                source: Box::new(source),
            })?;
        let _ = stream.set_write_timeout(Some(options.idle_timeout));
        streams.push(stream);
    }
    let algorithm = start_checksum(session, options, forward).map(|c| c.algorithm());
    let per_file = 1 + usize::from(algorithm.is_some());
    let mut window: VecDeque<Asked> = VecDeque::new();
    let give_back = |window: VecDeque<Asked>| {
        let mut q = queue.lock().unwrap_or_else(PoisonError::into_inner);
        for asked in window.into_iter().rev() {
            q.push_front(asked.job);
        }
    };
    loop {
        while (window.len() + 1) * per_file <= MAX_AHEAD && signals::caught().is_none() {
            let next = queue
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .pop_front();
            let Some(job) = next else { break };
            let opened = open_upload(&job.local).and_then(|(file, size)| {
                arg(&job.remote, "path").map(|path| (file, size, Command::Stor(path)))
            });
            let (file, size, stor) = match opened {
                Ok(opened) => opened,
                Err(e) => {
                    forward.done(job, Err(chain(&e)));
                    continue;
                }
            };
            if let Err(e) = super::ask(session, stor, &job.remote, algorithm, forward) {
                give_back(window);
                let mut q = queue.lock().unwrap_or_else(PoisonError::into_inner);
                q.push_front(job);
                return Err(e);
            }
            window.push_back(Asked {
                job,
                file,
                size,
                verify: algorithm.map(Checksum::of),
            });
        }
        let Some(asked) = window.pop_front() else {
            return Ok(());
        };
        match store(session, &mut streams, asked, forward) {
            Ok(true) => {}
            Ok(false) => {
                give_back(window);
                return Err(ClientError::Streams {
                    server,
                    verb: "STOR",
                    path: String::new(),
                    why: "the data connections failed".into(),
                });
            }
            Err(e) => {
                give_back(window);
                return Err(e);
            }
        }
    }
}

/// The front file: its `150`, then its blocks over `streams` (kept open),
/// its `226` and checksum. `Ok(false)` when the data connections failed.
fn store(
    session: &mut Session<ClientStream>,
    streams: &mut Vec<TcpStream>,
    asked: Asked,
    forward: &mut Forward<'_>,
) -> Result<bool, ClientError> {
    let Asked {
        job,
        mut file,
        size,
        verify,
    } = asked;
    let first = session.control.reply("STOR", forward)?;
    if first.is_negative() {
        // No data is sent for it; its CKSM is answered too.
        if verify.is_some() {
            session.control.reply("CKSM", forward)?;
        }
        let e = session.remote_error("STOR", &job.remote, &first);
        forward.done(job, Err(e.to_string()));
        return Ok(true);
    }
    let local = match verify {
        Some(mut c) => {
            let read = read_into(&mut file, u64::MAX, |piece| c.update(piece));
            if let Err(source) = read {
                // The server waits for blocks: this connection cannot go on.
                let e = ClientError::Local {
                    op: "read",
                    path: job.local.clone(),
                    source,
                };
                forward.done(job, Err(chain(&e)));
                return Ok(false);
            }
            Some((c.algorithm(), c.finish()))
        }
        None => None,
    };
    let moved = AtomicU64::new(0);
    let sent = blocks::send(
        std::mem::take(streams)
            .into_iter()
            .map(DataStream::Plain)
            .collect(),
        &blocks::Source::File(file),
        Blocks::new(size, &Ranges::new(), BLOCK_BYTES),
        &moved,
        (&|| signals::caught().is_some(), &|| false),
        true,
    );
    let bytes = moved.load(Ordering::Relaxed);
    forward.moved(bytes);
    match sent {
        Ok(kept) => {
            *streams = kept
                .into_iter()
                .filter_map(DataStream::into_plain)
                .collect();
        }
        Err(failure) => {
            let why = match failure {
                Failure::Stopped => "interrupted".to_owned(),
                Failure::Connect(w)
                | Failure::Network(w)
                | Failure::Local(w)
                | Failure::BadData(w) => w,
            };
            let e = ClientError::Streams {
                server: session.control.server(),
                verb: "STOR",
                path: String::from_utf8_lossy(&job.remote).into_owned(),
                why,
            };
            forward.done(job, Err(e.to_string()));
            return Ok(false);
        }
    }
    let early = Some(first).filter(|r| !r.is_preliminary());
    let last = session.ending("STOR", early, forward)?;
    let checked = match local {
        Some((algorithm, local)) => {
            let reply = session.control.reply("CKSM", forward)?;
            Some(session.checked(algorithm, local, &job.remote, &reply))
        }
        None => None,
    };
    let outcome = if !last.is_completion() {
        Err(session.remote_error("STOR", &job.remote, &last).to_string())
    } else if let Some(Err(e)) = &checked {
        Err(e.to_string())
    } else {
        Ok((bytes, 0, checked.is_some()))
    };
    forward.done(job, outcome);
    Ok(true)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_top_takes_the_directory_name_after_a_slash() {
        let top_of = crate::client::transfer::remote_path;
        let url = FtpUrl::parse("ftp://h/incoming/").unwrap();
        assert_eq!(top_of(&url, Path::new("/data/run42")), b"incoming/run42");
        let url = FtpUrl::parse("ftp://h/incoming/x").unwrap();
        assert_eq!(top_of(&url, Path::new("/data/run42")), b"incoming/x");
    }

    #[test]
    fn the_walk_lists_parents_first_and_skips_links() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        std::fs::write(dir.path().join("a/b/f"), b"123").unwrap();
        std::fs::write(dir.path().join("top"), b"1").unwrap();
        std::os::unix::fs::symlink("/etc", dir.path().join("link")).unwrap();
        let mut warnings = Vec::new();
        let (dirs, files) = walk(dir.path(), b"up", &mut warnings).unwrap();
        assert_eq!(dirs, [b"up".to_vec(), b"up/a".to_vec(), b"up/a/b".to_vec()]);
        let names: Vec<_> = files.iter().map(|f| f.relative.as_str()).collect();
        assert_eq!(names, ["top", "a/b/f"]);
        assert_eq!(files[1].size, Some(3));
        assert_eq!(warnings.len(), 1);
        assert!(walk(&dir.path().join("top"), b"x", &mut warnings).is_err());
    }
}
