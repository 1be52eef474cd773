//! Many files over one control connection in MODE E, pipelined, as
//! `globus-url-copy -pp -fast` moves them: the data connections are made
//! once (the server connects to one `PORT` address, as MODE E's sender
//! must) and kept from file to file, and the `RETR`s (each with its `CKSM`
//! when verifying) are sent ahead, [`MAX_AHEAD`] commands at most, so that
//! a small file costs no round trip of its own: the server starts the next
//! file as soon as one ends.
//!
//! Replies come in the order the commands went, so the files are read in
//! that order: a file's `150`, its blocks over the kept connections (a
//! stream is never read past its EOD, so the next file's blocks wait in the
//! socket), its `226` after any markers, then its checksum. Directories
//! are listed in the same stream (`MLSD`), but nothing is sent after a
//! listing until it is read.
//!
//! Guarantees: a file refused by the server (`550`) or whose checksum
//! differs fails alone and the pipeline goes on; a failure on the data
//! connections fails the file being read and ends the pipeline (the
//! connections' state is unknown): the files already asked for go back to
//! the front of the queue, and the caller closes the control connection.
//! A file that fails keeps no part file (blocks arrive in any order).

use crate::client::secure::ClientStream;
use std::collections::VecDeque;
use std::net::TcpStream;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicU64, Ordering};

use rightsize_ftp_proto::Command;
use rightsize_ftp_proto::checksum::{Algorithm, Checksum};
use rightsize_ftp_proto::entries;
use rightsize_ftp_proto::mode_e::{Assembly, Ranges};
use rightsize_sys::{signals, socket};

use super::work::{Dir, Item, Work};
use super::{FileJob, Forward};
use crate::blocks::{self, Failure, Incoming, WriteAt};
use crate::client::control::arg;
use crate::client::data;
use crate::client::error::ClientError;
use crate::client::listing::list_command;
use crate::client::local::PartFile;
use crate::client::session::Session;
use crate::client::transfer::start_checksum;
use crate::client::{MAX_LISTING_BYTES, Observer, Options};
use crate::stream::{self, DataStream};

/// Commands sent ahead of the replies read. The rightsize server holds 32
/// during a transfer; this leaves room for an `ABOR` or `STAT`.
pub const MAX_AHEAD: usize = 30;

/// A command sent whose replies are not read yet.
enum InFlight {
    Get {
        job: FileJob,
        part: PartFile,
        checksum: Option<Checksum>,
    },
    List {
        dir: Dir,
        mlsd: bool,
    },
    /// `--sync`: a `CKSM` asked of a file the local one may already be.
    Check {
        job: FileJob,
        algorithm: Algorithm,
    },
}

impl InFlight {
    fn into_item(self) -> Item {
        match self {
            InFlight::Get { job, .. } | InFlight::Check { job, .. } => Item::Get(job),
            InFlight::List { dir, .. } => Item::List(dir),
        }
    }
}

/// What one file's end means for the pipeline.
enum Next {
    /// Go on with the next file.
    Continue,
    /// The data connections failed: stop, with this error.
    Broken(ClientError),
}

/// Does `work` over `session` (already in MODE E) until none is left
/// (`Ok`) or the pipeline broke (`Err`: the caller drops the session).
/// Files with a part file to resume go to `later`, for the stream mode.
pub(super) fn run(
    session: &mut Session<ClientStream>,
    work: &Work,
    options: &Options,
    later: &mut Vec<FileJob>,
    forward: &mut Forward<'_>,
) -> Result<(), ClientError> {
    let request = options.buffers.clone();
    let plan = data::open_active(&mut session.control, &session.features, &request, forward)?;
    let data::Pending::Listening(listener, _) = plan.pending else {
        return Err(ClientError::Parallel {
            why: "the data connections could not be listened for",
        });
    };
    let algorithm = start_checksum(session, options, forward).map(|c| c.algorithm());
    let mlsd = session.features.has("MLST");
    let per_file = 1 + usize::from(algorithm.is_some());
    let mut window: VecDeque<InFlight> = VecDeque::new();
    let mut ahead = 0usize;
    let mut kept: Vec<TcpStream> = Vec::new();
    loop {
        // Nothing goes after a listing until it is read: a server that
        // sends it over new connections (as rightsize does) would meanwhile
        // send the next file over the kept ones, which the listing reads.
        while ahead + per_file <= MAX_AHEAD
            && signals::caught().is_none()
            && !matches!(window.back(), Some(InFlight::List { .. }))
        {
            let Some(item) = work.next(window.is_empty()) else {
                break;
            };
            let sent = match item {
                Item::Get(job) if options.resume && job.part_bytes > 0 => {
                    later.push(job);
                    continue;
                }
                Item::Get(job) if job.same_size => match session.features.checksum() {
                    // Said when the session opened: the size decides.
                    None => {
                        forward.skipped(&job);
                        continue;
                    }
                    Some(algorithm) => {
                        let asked = super::session_cksm(session, algorithm, &job.remote, forward);
                        (InFlight::Check { job, algorithm }, asked)
                    }
                },
                Item::Get(job) => {
                    let opened = PartFile::create(&job.local, false).and_then(|part| {
                        arg(&job.remote, "path").map(|path| (part, Command::Retr(path)))
                    });
                    let (part, retr) = match opened {
                        Ok(opened) => opened,
                        Err(e) => {
                            forward.done(job, Err(super::chain(&e)));
                            continue;
                        }
                    };
                    let asked = super::ask(session, retr, &job.remote, algorithm, forward);
                    (
                        InFlight::Get {
                            job,
                            part,
                            checksum: algorithm.map(Checksum::of),
                        },
                        asked,
                    )
                }
                Item::List(dir) => match list_command(&dir.remote, mlsd) {
                    Ok(command) => {
                        let asked = session.control.send(&command, forward);
                        (InFlight::List { dir, mlsd }, asked)
                    }
                    Err(e) => {
                        let tx = forward.tx;
                        work.listed(&dir, Err(super::chain(&e)), &mut |event| {
                            let _ = tx.send(event);
                        });
                        continue;
                    }
                },
            };
            let (flight, asked) = sent;
            ahead += commands(&flight, per_file);
            window.push_back(flight);
            if let Err(e) = asked {
                work.give_back(window.into_iter().map(InFlight::into_item).collect());
                return Err(e);
            }
        }
        let Some(front) = window.pop_front() else {
            return Ok(());
        };
        ahead -= commands(&front, per_file);
        let next = match front {
            InFlight::Get {
                job,
                part,
                checksum,
            } => receive_file(
                session,
                &listener,
                &mut kept,
                (job, part, checksum),
                options,
                forward,
            ),
            InFlight::List { dir, mlsd } => receive_list(
                session, &listener, &mut kept, &dir, mlsd, work, options, forward,
            ),
            InFlight::Check { mut job, algorithm } => {
                let reply = session.control.reply("CKSM", forward)?;
                if super::matches_local(session, algorithm, &job, &reply) {
                    forward.skipped(&job);
                } else {
                    // Not the same: fetched whole, as any file.
                    job.same_size = false;
                    work.give_back(vec![Item::Get(job)]);
                }
                Ok(Next::Continue)
            }
        };
        match next {
            Ok(Next::Continue) => {}
            Ok(Next::Broken(e)) | Err(e) => {
                work.give_back(window.into_iter().map(InFlight::into_item).collect());
                return Err(e);
            }
        }
    }
}

/// Commands a piece in flight took.
fn commands(flight: &InFlight, per_file: usize) -> usize {
    match flight {
        InFlight::Get { .. } => per_file,
        InFlight::List { .. } | InFlight::Check { .. } => 1,
    }
}

/// A listing's bytes, as the blocks bring them.
#[derive(Default)]
struct Listing(Vec<u8>);

impl WriteAt for Listing {
    fn write_at(&mut self, offset: u64, bytes: &[u8]) -> std::io::Result<()> {
        let end = offset
            .checked_add(bytes.len() as u64)
            .filter(|&end| end <= MAX_LISTING_BYTES)
            .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::FileTooLarge))?;
        let (start, end) = (
            usize::try_from(offset).unwrap_or(usize::MAX),
            usize::try_from(end).unwrap_or(usize::MAX),
        );
        if self.0.len() < end {
            self.0.resize(end, 0);
        }
        self.0[start..end].copy_from_slice(bytes);
        Ok(())
    }
}

/// Reads the front listing: its reply, its blocks, its `226`; its entries
/// go to `work`.
#[allow(clippy::too_many_arguments)]
fn receive_list(
    session: &mut Session<ClientStream>,
    listener: &std::net::TcpListener,
    kept: &mut Vec<TcpStream>,
    dir: &Dir,
    mlsd: bool,
    work: &Work,
    options: &Options,
    forward: &mut Forward<'_>,
) -> Result<Next, ClientError> {
    let verb = if mlsd { "MLSD" } else { "LIST" };
    let first = session.control.reply(verb, forward)?;
    let tx = forward.tx;
    let mut events = |event| {
        let _ = tx.send(event);
    };
    if first.is_negative() {
        let e = session.remote_error(verb, &dir.remote, &first);
        work.listed(dir, Err(e.to_string()), &mut events);
        return Ok(Next::Continue);
    }
    let mut listing = Listing::default();
    let received = receive_blocks(session, listener, kept, None, &mut listing, options);
    if let Err(e) = received {
        work.listed(dir, Err(e.to_string()), &mut events);
        return Ok(Next::Broken(e));
    }
    let early = Some(first).filter(|r| !r.is_preliminary());
    let last = session.ending(verb, early, forward)?;
    if !last.is_completion() {
        let e = session.remote_error(verb, &dir.remote, &last);
        work.listed(dir, Err(e.to_string()), &mut events);
        return Ok(Next::Continue);
    }
    let (entries, errors) = entries::parse_listing(&listing.0, mlsd);
    for error in errors {
        forward.warning(&format!("skipped in \"{}\": {error}", dir.relative));
    }
    work.listed(dir, Ok(entries), &mut events);
    Ok(Next::Continue)
}

/// One transfer's blocks over the kept connections and any new one, into
/// `sink`; the connections that stay open go back to `kept`. Returns the
/// bytes moved.
fn receive_blocks(
    session: &Session<ClientStream>,
    listener: &std::net::TcpListener,
    kept: &mut Vec<TcpStream>,
    size: Option<u64>,
    sink: &mut dyn WriteAt,
    options: &Options,
) -> Result<u64, ClientError> {
    let server = session.control.server();
    let moved = AtomicU64::new(0);
    let incoming = Incoming {
        listener,
        peer: server.ip(),
        cached: std::mem::take(kept)
            .into_iter()
            .map(DataStream::Plain)
            .collect(),
        secure: &stream::plain,
        connect_timeout: options.connect_timeout,
        idle_timeout: options.idle_timeout,
    };
    let (result, received) = blocks::receive(
        incoming,
        Assembly::new(size, Ranges::new()),
        Some(sink),
        &moved,
        &|| signals::caught().is_some(),
        &mut |stream| {
            let _ = socket::apply(stream.as_fd(), &options.buffers);
            None
        },
        &mut |_| {},
    );
    match result {
        Ok(_) => {
            *kept = received
                .kept
                .into_iter()
                .filter_map(DataStream::into_plain)
                .collect();
            Ok(moved.load(Ordering::Relaxed))
        }
        Err(Failure::Stopped) => Err(ClientError::Interrupted {
            signal: signals::caught().unwrap_or("SIGINT"),
        }),
        Err(
            Failure::Connect(why)
            | Failure::Network(why)
            | Failure::Local(why)
            | Failure::BadData(why),
        ) => Err(ClientError::Streams {
            server,
            verb: "RETR",
            path: String::new(),
            why,
        }),
    }
}

/// Reads the front file: its reply, its blocks, its `226` and checksum.
fn receive_file(
    session: &mut Session<ClientStream>,
    listener: &std::net::TcpListener,
    kept: &mut Vec<TcpStream>,
    (job, mut part, checksum): (FileJob, PartFile, Option<Checksum>),
    options: &Options,
    forward: &mut Forward<'_>,
) -> Result<Next, ClientError> {
    let first = session.control.reply("RETR", forward)?;
    if first.is_negative() {
        // No data comes; the CKSM after it is answered too.
        if checksum.is_some() {
            session.control.reply("CKSM", forward)?;
        }
        part.discard();
        let e = session.remote_error("RETR", &job.remote, &first);
        forward.done(job, Err(e.to_string()));
        return Ok(Next::Continue);
    }
    let received = receive_blocks(session, listener, kept, job.size, &mut part, options);
    let bytes = match received {
        Ok(bytes) => bytes,
        Err(e) => {
            part.discard();
            let e = match e {
                ClientError::Streams {
                    server, verb, why, ..
                } => ClientError::Streams {
                    server,
                    verb,
                    path: String::from_utf8_lossy(&job.remote).into_owned(),
                    why,
                },
                other => other,
            };
            forward.done(job, Err(e.to_string()));
            return Ok(Next::Broken(e));
        }
    };
    forward.moved(bytes);
    let early = Some(first).filter(|r| !r.is_preliminary());
    let last = session.ending("RETR", early, forward)?;
    let checked = match checksum {
        Some(mut c) => {
            part.read_back(|piece| c.update(piece))?;
            let algorithm = c.algorithm();
            let local = c.finish();
            let reply = session.control.reply("CKSM", forward)?;
            Some(session.checked(algorithm, local, &job.remote, &reply))
        }
        None => None,
    };
    if !last.is_completion() {
        part.discard();
        let e = session.remote_error("RETR", &job.remote, &last);
        forward.done(job, Err(e.to_string()));
        return Ok(Next::Continue);
    }
    if let Some(Err(e)) = checked {
        part.discard();
        forward.done(job, Err(e.to_string()));
        return Ok(Next::Continue);
    }
    match part.commit() {
        Ok(_) => forward.done(job, Ok((bytes, 0, checked.is_some()))),
        Err(e) => forward.done(job, Err(super::chain(&e))),
    }
    Ok(Next::Continue)
}
