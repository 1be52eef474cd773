//! A file-system root that no path can escape, for the FTP server.
//!
//! [`Root::open`] opens the served directory once (`O_PATH`); every later
//! operation resolves its path relative to that descriptor with
//! `openat2(2)` and `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`, so the kernel
//! itself refuses any lookup that would leave the root.
//!
//! Guarantees:
//! - A symbolic link inside the root is followed only while it stays
//!   beneath the root. A link that is absolute (even one naming a place
//!   inside the root), climbs above the root with `..`, loops, or is a
//!   `/proc` magic link makes the operation fail with
//!   [`RootError::Escapes`]; nothing outside the root is read, listed,
//!   created, removed or renamed through one.
//! - Operations on a name (create, remove, rename, store) open the parent
//!   directory beneath the root and act on the final component with an
//!   `*at` call, so a final component that is a link is acted on itself
//!   (removed, renamed) and never followed. A store onto a link is refused.
//! - Stores are atomic (see [`PendingFile`]): the final name never holds a
//!   partial upload.
//! - Paths are checked before any system call: a relative path must be
//!   `/`-separated components without `.`, `..`, empty components or NUL
//!   (what a `VirtualPath` yields); anything else is
//!   [`RootError::InvalidPath`], never trusted.
//!
//! Needs Linux 5.6 or later for `openat2`; on older kernels every operation
//! fails with [`RootError::Unsupported`], beginning with [`Root::open`].
//! Hard links and bind mounts the operator placed inside the root are
//! served like any other file or directory (a mount point is crossed; a
//! rename across one fails with `EXDEV` as [`RootError::Io`]). If the root
//! directory is moved while served, operations follow the directory, not
//! its old path.

mod error;
mod rel;
mod store;
mod sys;

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

pub use error::RootError;
pub use rel::TEMP_PREFIX;
pub use store::{Keep, PendingFile};

use rel::Rel;

/// Lookups beneath the root: links are followed only while they stay
/// beneath it, and `/proc` magic links never.
const BENEATH: u64 = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS;

/// Mode for new directories, before the process umask.
const NEW_DIR_MODE: libc::mode_t = 0o777;

/// What kind of file a [`Stat`] describes (after following links).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// Anything else: FIFO, socket, device.
    Other,
}

/// What [`Root::metadata`] and [`Root::read_dir`] report about a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    /// The file type.
    pub kind: Kind,
    /// Length, bytes (`st_size`).
    pub size_bytes: u64,
    /// Last modification, seconds since the Unix epoch (`st_mtime`).
    pub modified_unix: i64,
    /// Permission bits, `st_mode & 0o7777` (no file-type bits).
    pub mode: u32,
}

impl Stat {
    fn from_raw(st: &libc::stat) -> Stat {
        let kind = match st.st_mode & libc::S_IFMT {
            libc::S_IFREG => Kind::File,
            libc::S_IFDIR => Kind::Dir,
            _ => Kind::Other,
        };
        Stat {
            kind,
            size_bytes: u64::try_from(st.st_size).unwrap_or(0),
            // time_t is i32 on some 32-bit targets; the conversion is for them.
            #[allow(clippy::useless_conversion)]
            modified_unix: i64::from(st.st_mtime),
            mode: st.st_mode & 0o7777,
        }
    }
}

/// One entry of [`Root::read_dir`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The name, bytes as stored (no `/`, no NUL).
    pub name: Vec<u8>,
    /// The entry, after following a symbolic link that stays beneath the
    /// root.
    pub stat: Stat,
}

/// The served directory; see the module documentation. `Send + Sync`, so
/// the server's sessions can share one (each call stands alone); a
/// [`PendingFile`] can move to the thread that receives the upload.
#[derive(Debug)]
pub struct Root {
    fd: OwnedFd,
    path: PathBuf,
}

const _: () = {
    const fn shareable<T: Send + Sync>() {}
    shareable::<Root>();
    shareable::<PendingFile>();
};

impl Root {
    /// Opens `path`, which must be a directory. The path itself is the
    /// operator's and is followed as given (links included); it is also
    /// where this checks that the kernel has `openat2`.
    pub fn open(path: &Path) -> Result<Root, RootError> {
        const OP: &str = "openat2(O_PATH|O_DIRECTORY)";
        let shown = path.display().to_string();
        let c_path =
            CString::new(path.as_os_str().as_bytes()).map_err(|_| RootError::InvalidPath {
                path: shown.clone(),
                reason: "contains a NUL byte",
            })?;
        // No RESOLVE_* flags: this path is the operator's, not a client's.
        let flags = libc::O_PATH | libc::O_DIRECTORY;
        let fd = sys::openat2_cwd(&c_path, flags, 0).map_err(|source| {
            if source.raw_os_error() == Some(libc::ENOSYS) {
                RootError::Unsupported {
                    op: OP,
                    path: shown,
                    source,
                }
            } else {
                RootError::os(OP, shown, source)
            }
        })?;
        Ok(Root {
            fd,
            path: path.to_path_buf(),
        })
    }

    /// The root's path as given to [`Root::open`], for display.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Describes `rel`, following links that stay beneath the root.
    pub fn metadata(&self, rel: &[u8]) -> Result<Stat, RootError> {
        let rel = self.check(rel)?;
        let fd = self.lookup(rel, libc::O_PATH, "openat2(O_PATH)")?;
        self.fstat(fd.as_fd(), rel).map(|st| Stat::from_raw(&st))
    }

    /// Lists the directory `rel`, sorted by name, without `.` and `..`.
    /// A symbolic link is described by its target; links that escape the
    /// root, dangle or loop are left out, and so are the temporary files of
    /// pending stores.
    pub fn read_dir(&self, rel: &[u8]) -> Result<Vec<Entry>, RootError> {
        let rel = self.check(rel)?;
        let flags = libc::O_RDONLY | libc::O_DIRECTORY;
        let fd = self.lookup(rel, flags, "openat2(O_RDONLY|O_DIRECTORY)")?;
        let mut dir = sys::Dir::new(fd).map_err(|e| self.os("fdopendir", rel, e))?;
        let mut entries = Vec::new();
        while let Some(name) = dir.next_name().map_err(|e| self.os("readdir", rel, e))? {
            let bytes = name.as_bytes();
            if bytes == b"." || bytes == b".." || bytes.starts_with(TEMP_PREFIX) {
                continue;
            }
            let st = match sys::lstatat(dir.fd(), &name) {
                Ok(st) => st,
                // Removed since readdir returned it.
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => continue,
                Err(e) => return Err(self.os("fstatat", rel, e)),
            };
            let st = if st.st_mode & libc::S_IFMT == libc::S_IFLNK {
                match self.follow(rel, bytes)? {
                    Some(st) => st,
                    None => continue,
                }
            } else {
                st
            };
            entries.push(Entry {
                name: bytes.to_vec(),
                stat: Stat::from_raw(&st),
            });
        }
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(entries)
    }

    /// Opens the regular file `rel` for reading, following links that stay
    /// beneath the root. A directory is [`RootError::IsADirectory`], any
    /// other non-regular file [`RootError::NotAFile`] (a FIFO is never
    /// opened for reading, so it cannot block the caller).
    pub fn open_read(&self, rel: &[u8]) -> Result<File, RootError> {
        let rel = self.check(rel)?;
        // Check the type through O_PATH first, which opens nothing.
        let probe = self.lookup(rel, libc::O_PATH, "openat2(O_PATH)")?;
        self.require_file(&self.fstat(probe.as_fd(), rel)?, rel)?;
        // O_NONBLOCK in case the name became a FIFO meanwhile; the type is
        // checked again on what was actually opened.
        let flags = libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY;
        let fd = self.lookup(rel, flags, "openat2(O_RDONLY)")?;
        self.require_file(&self.fstat(fd.as_fd(), rel)?, rel)?;
        sys::clear_nonblock(fd.as_fd()).map_err(|e| self.os("fcntl(F_SETFL)", rel, e))?;
        Ok(File::from(fd))
    }

    /// Creates the directory `rel` (mode 0777 less the umask). An existing
    /// name, even a dangling link, is [`RootError::AlreadyExists`].
    pub fn create_dir(&self, rel: &[u8]) -> Result<(), RootError> {
        let rel = self.check(rel)?;
        let (dir, name) = self.parent(rel)?;
        sys::mkdirat(dir.as_fd(), &name, NEW_DIR_MODE).map_err(|e| self.os("mkdirat", rel, e))
    }

    /// Removes the empty directory `rel`. A link to a directory is
    /// [`RootError::NotADirectory`] (remove it with [`Root::remove_file`]).
    pub fn remove_dir(&self, rel: &[u8]) -> Result<(), RootError> {
        const OP: &str = "unlinkat(AT_REMOVEDIR)";
        let rel = self.check(rel)?;
        let (dir, name) = self.parent(rel)?;
        sys::unlinkat(dir.as_fd(), &name, libc::AT_REMOVEDIR).map_err(|e| {
            match e.raw_os_error() {
                // POSIX allows EEXIST for a non-empty directory.
                Some(libc::EEXIST | libc::ENOTEMPTY) => RootError::NotEmpty {
                    op: OP,
                    path: self.show(rel.bytes()),
                },
                _ => self.os(OP, rel, e),
            }
        })
    }

    /// Removes the non-directory `rel`; a symbolic link is removed itself,
    /// never its target. A directory is [`RootError::IsADirectory`].
    pub fn remove_file(&self, rel: &[u8]) -> Result<(), RootError> {
        let rel = self.check(rel)?;
        let (dir, name) = self.parent(rel)?;
        sys::unlinkat(dir.as_fd(), &name, 0).map_err(|e| self.os("unlinkat", rel, e))
    }

    /// Renames `from` to `to` (POSIX `rename`: an existing `to` is replaced
    /// if the types allow; a link is renamed itself, not its target).
    /// Moving a directory inside itself is [`RootError::InvalidPath`].
    pub fn rename(&self, from: &[u8], to: &[u8]) -> Result<(), RootError> {
        let from = self.check(from)?;
        let to = self.check(to)?;
        let (from_dir, from_name) = self.parent(from)?;
        let (to_dir, to_name) = self.parent(to)?;
        sys::renameat(from_dir.as_fd(), &from_name, to_dir.as_fd(), &to_name).map_err(|e| {
            let path = format!("{} -> {}", self.show(from.bytes()), self.show(to.bytes()));
            match e.raw_os_error() {
                Some(libc::EINVAL) => RootError::InvalidPath {
                    path,
                    reason: "would move a directory inside itself",
                },
                _ => RootError::os("renameat", path, e),
            }
        })
    }

    /// Starts an atomic store of `rel`: a temporary file in the same
    /// directory that [`PendingFile::commit`] renames over `rel`. `keep`
    /// says how much of an existing file comes first; a missing file counts
    /// as empty. `rel` must not be a directory ([`RootError::IsADirectory`]),
    /// a symbolic link or another non-regular file ([`RootError::NotAFile`]).
    pub fn begin_store(&self, rel: &[u8], keep: Keep) -> Result<PendingFile, RootError> {
        let rel = self.check(rel)?;
        let (dir, name) = self.parent(rel)?;
        store::begin(dir, name, self.show(rel.bytes()), keep)
    }

    /// The size of the part of `rel` that a cut store kept (see
    /// [`PendingFile::keep`]), bytes; `None` if there is none.
    pub fn kept_part(&self, rel: &[u8]) -> Result<Option<u64>, RootError> {
        let rel = self.check(rel)?;
        let (dir, name) = self.parent(rel)?;
        store::kept_part(&dir, &name, &self.show(rel.bytes()))
    }

    fn check<'a>(&self, rel: &'a [u8]) -> Result<Rel<'a>, RootError> {
        Rel::new(rel).map_err(|reason| RootError::InvalidPath {
            path: String::from_utf8_lossy(rel).into_owned(),
            reason,
        })
    }

    /// Opens `rel` beneath the root with `flags`.
    fn lookup(&self, rel: Rel<'_>, flags: i32, op: &'static str) -> Result<OwnedFd, RootError> {
        sys::openat2(self.fd.as_fd(), &rel.c_path(), flags, 0, BENEATH)
            .map_err(|e| RootError::lookup(op, self.show(rel.bytes()), e))
    }

    /// Opens the directory holding `rel` beneath the root; returns it with
    /// the final component. The root itself has no parent.
    fn parent(&self, rel: Rel<'_>) -> Result<(OwnedFd, CString), RootError> {
        const OP: &str = "openat2(O_PATH|O_DIRECTORY)";
        let Some((parent, name)) = rel.split() else {
            return Err(RootError::InvalidPath {
                path: String::new(),
                reason: "names the root itself",
            });
        };
        let flags = libc::O_PATH | libc::O_DIRECTORY;
        let dir = sys::openat2(self.fd.as_fd(), &parent, flags, 0, BENEATH)
            .map_err(|e| RootError::lookup(OP, self.show(parent.as_bytes()), e))?;
        Ok((dir, name))
    }

    /// Describes the target of the link `name` in the directory `dir`, or
    /// `None` if it escapes, dangles, loops or cannot be reached. The link
    /// is resolved from the root by path (a link's target is relative to
    /// its directory's place in the root, which the directory's descriptor
    /// does not know); should `dir` be renamed during the listing, the
    /// lookup is still confined to the root.
    fn follow(&self, dir: Rel<'_>, name: &[u8]) -> Result<Option<libc::stat>, RootError> {
        const OP: &str = "openat2(O_PATH)";
        let path = dir.join(name);
        let fd = match sys::openat2(self.fd.as_fd(), &path, libc::O_PATH, 0, BENEATH) {
            Ok(fd) => fd,
            Err(e) => {
                return match RootError::lookup(OP, self.show(path.as_bytes()), e) {
                    RootError::Escapes { .. }
                    | RootError::NotFound { .. }
                    | RootError::NotADirectory { .. }
                    | RootError::PermissionDenied { .. } => Ok(None),
                    other => Err(other),
                };
            }
        };
        sys::fstat(fd.as_fd())
            .map(Some)
            .map_err(|e| RootError::os("fstat", self.show(path.as_bytes()), e))
    }

    fn fstat(&self, fd: BorrowedFd<'_>, rel: Rel<'_>) -> Result<libc::stat, RootError> {
        sys::fstat(fd).map_err(|e| self.os("fstat", rel, e))
    }

    fn require_file(&self, st: &libc::stat, rel: Rel<'_>) -> Result<(), RootError> {
        let path = || self.show(rel.bytes());
        match st.st_mode & libc::S_IFMT {
            libc::S_IFREG => Ok(()),
            libc::S_IFDIR => Err(RootError::IsADirectory {
                op: "fstat",
                path: path(),
            }),
            other => Err(RootError::NotAFile {
                op: "fstat",
                path: path(),
                found: file_type(other),
            }),
        }
    }

    fn os(&self, op: &'static str, rel: Rel<'_>, source: io::Error) -> RootError {
        RootError::os(op, self.show(rel.bytes()), source)
    }

    /// The host path of `rel`, for errors.
    fn show(&self, rel: &[u8]) -> String {
        let root = self.path.display();
        match rel {
            b"" | b"." => root.to_string(),
            _ => format!("{root}/{}", String::from_utf8_lossy(rel)),
        }
    }
}

/// Names a file type (`st_mode & S_IFMT`) for [`RootError::NotAFile`].
fn file_type(fmt: libc::mode_t) -> &'static str {
    match fmt {
        libc::S_IFREG => "a regular file",
        libc::S_IFDIR => "a directory",
        libc::S_IFLNK => "a symbolic link",
        libc::S_IFIFO => "a FIFO",
        libc::S_IFSOCK => "a socket",
        libc::S_IFCHR => "a character device",
        libc::S_IFBLK => "a block device",
        _ => "a file of unknown type",
    }
}
