//! The work of a tree download, shared by its connections: directories to
//! list and files to fetch, in one queue. Directories go to the front, so
//! that the tree is discovered while the files already known move; files
//! to the back. A connection that finds the queue empty waits while a
//! listing is still out (it may bring more), and stops when none is.
//!
//! Guarantees: every local path is the target directory joined with
//! names `entries` checked; no directory deeper than [`MAX_DEPTH`] and no
//! more than [`MAX_ENTRIES`] entries are followed; a signal ends every
//! wait within [`WAIT_STEP`].

use std::collections::VecDeque;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::Duration;

use rightsize_ftp_proto::entries::{Entry, EntryKind};
use rightsize_sys::signals;

use super::{Event, FileJob};
use crate::client::part_path;

/// Deepest directory nesting followed (a server's link loop ends here).
pub const MAX_DEPTH: usize = 64;
/// Most entries a tree may hold.
pub const MAX_ENTRIES: usize = 1_000_000;
/// How often a waiting connection looks for a signal.
const WAIT_STEP: Duration = Duration::from_millis(50);

/// A directory to list.
#[derive(Debug, Clone)]
pub(super) struct Dir {
    /// As the server names it.
    pub(super) remote: Vec<u8>,
    /// Under the tree, for messages ("" for the top).
    pub(super) relative: String,
    /// Where its entries go (created before it is listed).
    pub(super) local: PathBuf,
    /// 0 for the top.
    pub(super) depth: usize,
}

/// One piece of work.
#[derive(Debug)]
pub(super) enum Item {
    List(Dir),
    Get(FileJob),
}

#[derive(Debug, Default)]
struct State {
    items: VecDeque<Item>,
    /// Listings taken and not yet ended.
    listing: usize,
    entries: usize,
}

/// The queue.
#[derive(Debug)]
pub(super) struct Work {
    state: Mutex<State>,
    changed: Condvar,
    /// Files already complete are skipped (`-C`).
    resume: bool,
    /// Files of the local size are compared by checksum (`--sync`).
    sync: bool,
}

impl Work {
    /// Work that starts with listing `top`.
    pub(super) fn new(top: Dir, resume: bool, sync: bool) -> Work {
        Work {
            state: Mutex::new(State {
                items: VecDeque::from([Item::List(top)]),
                ..State::default()
            }),
            changed: Condvar::new(),
            resume,
            sync,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The next piece of work. With `wait`, an empty queue is waited on
    /// while a listing is out; `None` then means there is none left (or a
    /// signal came). Without, `None` means none now.
    pub(super) fn next(&self, wait: bool) -> Option<Item> {
        let mut state = self.lock();
        loop {
            if let Some(item) = state.items.pop_front() {
                if matches!(item, Item::List(_)) {
                    state.listing += 1;
                }
                return Some(item);
            }
            if !wait || state.listing == 0 || signals::caught().is_some() {
                return None;
            }
            state = self
                .changed
                .wait_timeout(state, WAIT_STEP)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Puts pieces taken back at the front, in their order (a connection
    /// that broke gives back what it had asked for).
    pub(super) fn give_back(&self, items: Vec<Item>) {
        let mut state = self.lock();
        for item in items.into_iter().rev() {
            if matches!(item, Item::List(_)) {
                state.listing = state.listing.saturating_sub(1);
            }
            state.items.push_front(item);
        }
        drop(state);
        self.changed.notify_all();
    }

    /// A listing of `dir` ended: its directories are created and queued
    /// first, its files last (or skipped when already complete). What
    /// happened goes to `events`.
    pub(super) fn listed(
        &self,
        dir: &Dir,
        entries: Result<Vec<Entry>, String>,
        events: &mut dyn FnMut(Event),
    ) {
        let mut dirs = Vec::new();
        let mut files = Vec::new();
        let (mut count, mut bytes) = (0u64, 0u64);
        match entries {
            Err(error) => events(Event::ListFailed {
                relative: dir.relative.clone(),
                top: dir.depth == 0,
                error,
            }),
            Ok(entries) => {
                let seen = entries.len();
                for entry in entries {
                    let child = child(dir, &entry.name);
                    match entry.kind {
                        EntryKind::File => {
                            let job = FileJob {
                                remote: child.remote,
                                relative: child.relative,
                                local: child.local,
                                size: entry.size,
                                part_bytes: 0,
                                same_size: false,
                            };
                            match self.classify(job) {
                                Ok(job) => {
                                    count += 1;
                                    bytes += job.size.unwrap_or(0);
                                    files.push(Item::Get(job));
                                }
                                Err(size) => events(Event::Skipped(size)),
                            }
                        }
                        EntryKind::Dir if child.depth > MAX_DEPTH => {
                            events(Event::Warning(format!(
                                "skipped \"{}\": deeper than {MAX_DEPTH} directories",
                                child.relative
                            )));
                        }
                        EntryKind::Dir => match std::fs::create_dir_all(&child.local) {
                            Ok(()) => dirs.push(Item::List(child)),
                            Err(e) => events(Event::ListFailed {
                                relative: child.relative.clone(),
                                top: false,
                                error: format!(
                                    "create the directory {}: {e}",
                                    child.local.display()
                                ),
                            }),
                        },
                        EntryKind::Other => events(Event::Warning(format!(
                            "skipped \"{}\": neither a file nor a directory (a link?)",
                            child.relative
                        ))),
                    }
                }
                let mut state = self.lock();
                state.entries += seen;
                if state.entries > MAX_ENTRIES {
                    drop(state);
                    events(Event::ListFailed {
                        relative: dir.relative.clone(),
                        top: true,
                        error: format!(
                            "the tree holds more than {MAX_ENTRIES} entries; download it in parts"
                        ),
                    });
                    dirs.clear();
                    files.clear();
                } else {
                    drop(state);
                }
                events(Event::Listed {
                    dirs: dirs.len() as u64,
                    files: count,
                    bytes,
                });
            }
        }
        let mut state = self.lock();
        state.listing = state.listing.saturating_sub(1);
        for item in dirs.into_iter().rev() {
            state.items.push_front(item);
        }
        state.items.extend(files);
        drop(state);
        self.changed.notify_all();
    }

    /// A file to fetch, with what its part file holds; `Err(size)` when it
    /// is already complete and `-C` skips it. With `--sync` a local file
    /// of the remote size is marked for the checksums to decide.
    fn classify(&self, mut job: FileJob) -> Result<FileJob, u64> {
        if !self.resume && !self.sync {
            return Ok(job);
        }
        if let (Some(size), Ok(meta)) = (job.size, std::fs::metadata(&job.local))
            && meta.is_file()
            && meta.len() == size
        {
            if !self.sync {
                return Err(size);
            }
            job.same_size = true;
            return Ok(job);
        }
        if self.resume {
            job.part_bytes = std::fs::metadata(part_path(&job.local)).map_or(0, |m| m.len());
        }
        Ok(job)
    }

    /// Files never started (a signal ended the transfer).
    pub(super) fn files_left(&self) -> u64 {
        self.lock()
            .items
            .iter()
            .filter(|i| matches!(i, Item::Get(_)))
            .count() as u64
    }
}

/// The directory `name` inside `dir`, everywhere.
fn child(dir: &Dir, name: &[u8]) -> Dir {
    let text = String::from_utf8_lossy(name);
    Dir {
        remote: join_remote(&dir.remote, name),
        relative: if dir.relative.is_empty() {
            text.into_owned()
        } else {
            format!("{}/{text}", dir.relative)
        },
        local: dir.local.join(std::ffi::OsStr::from_bytes(name)),
        depth: dir.depth + 1,
    }
}

/// `dir/name` as the server spells paths (an empty `dir` is the login
/// directory).
pub(super) fn join_remote(dir: &[u8], name: &[u8]) -> Vec<u8> {
    let mut path = dir.to_vec();
    if !path.is_empty() && !path.ends_with(b"/") {
        path.push(b'/');
    }
    path.extend_from_slice(name);
    path
}

/// The top of a tree: `remote` into `local`.
pub(super) fn top(remote: &[u8], local: &Path) -> Dir {
    Dir {
        remote: remote.to_vec(),
        relative: String::new(),
        local: local.to_path_buf(),
        depth: 0,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn file(name: &str, size: u64) -> Entry {
        Entry {
            name: name.as_bytes().to_vec(),
            kind: EntryKind::File,
            size: Some(size),
        }
    }

    #[test]
    fn remote_paths_join_with_one_slash() {
        assert_eq!(join_remote(b"", b"a"), b"a");
        assert_eq!(join_remote(b"pub", b"a"), b"pub/a");
        assert_eq!(join_remote(b"pub/", b"a"), b"pub/a");
        assert_eq!(join_remote(b"/abs", b"a b"), b"/abs/a b");
    }

    #[test]
    fn directories_come_first_and_the_queue_waits_for_listings() {
        let dir = tempfile::tempdir().unwrap();
        let work = Work::new(top(b"t", dir.path()), false, false);
        let Some(Item::List(t)) = work.next(true) else {
            panic!("the top is listed first")
        };
        // Nothing more now, but a listing is out: no wait asked, none.
        assert!(work.next(false).is_none());
        let sub = Entry {
            name: b"sub".to_vec(),
            kind: EntryKind::Dir,
            size: None,
        };
        let mut events = Vec::new();
        work.listed(&t, Ok(vec![file("a", 1), sub, file("b", 2)]), &mut |e| {
            events.push(e)
        });
        assert!(dir.path().join("sub").is_dir());
        let order: Vec<String> = std::iter::from_fn(|| work.next(false))
            .map(|item| match item {
                Item::List(d) => format!("list {}", d.relative),
                Item::Get(f) => format!("get {}", f.relative),
            })
            .collect();
        assert_eq!(order, ["list sub", "get a", "get b"]);
        assert!(matches!(
            events.last(),
            Some(Event::Listed {
                dirs: 1,
                files: 2,
                bytes: 3
            })
        ));
    }

    #[test]
    fn with_sync_files_of_the_local_size_are_left_to_the_checksums_and_others_fetched() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("same"), b"abc").unwrap();
        std::fs::write(dir.path().join("other"), b"ab").unwrap();
        let work = Work::new(top(b"", dir.path()), false, true);
        let Some(Item::List(t)) = work.next(true) else {
            panic!()
        };
        work.listed(&t, Ok(vec![file("same", 3), file("other", 4)]), &mut |e| {
            assert!(!matches!(e, Event::Skipped(_)), "nothing skipped by size")
        });
        let mut jobs = Vec::new();
        while let Some(Item::Get(job)) = work.next(false) {
            jobs.push((job.relative, job.same_size));
        }
        jobs.sort();
        assert_eq!(
            jobs,
            [("other".to_owned(), false), ("same".to_owned(), true)]
        );
    }

    #[test]
    fn complete_files_are_skipped_with_resume() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("done"), b"abc").unwrap();
        std::fs::write(dir.path().join(".half.rightsize-part"), b"ab").unwrap();
        let work = Work::new(top(b"", dir.path()), true, false);
        let Some(Item::List(t)) = work.next(true) else {
            panic!()
        };
        let mut events = Vec::new();
        work.listed(&t, Ok(vec![file("done", 3), file("half", 4)]), &mut |e| {
            events.push(e)
        });
        assert!(matches!(events.first(), Some(Event::Skipped(3))));
        let Some(Item::Get(half)) = work.next(true) else {
            panic!()
        };
        assert_eq!((half.relative.as_str(), half.part_bytes), ("half", 2));
        assert!(work.next(true).is_none(), "no listing out: no wait");
    }

    #[test]
    fn a_failed_top_listing_is_said_so() {
        let dir = tempfile::tempdir().unwrap();
        let work = Work::new(top(b"x", dir.path()), false, false);
        let Some(Item::List(t)) = work.next(true) else {
            panic!()
        };
        let mut events = Vec::new();
        work.listed(&t, Err("550 no".into()), &mut |e| events.push(e));
        assert!(matches!(events[0], Event::ListFailed { top: true, .. }));
        assert!(work.next(true).is_none());
    }
}
