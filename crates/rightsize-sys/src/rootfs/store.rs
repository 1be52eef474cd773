//! Atomic stores: an upload goes to a hidden temporary file next to its
//! final name and replaces that name with one `renameat` when complete.
//!
//! Guarantees: the final name holds either its old content or the complete
//! new content, never a partial upload; a symbolic link at the final name
//! is never written through (the store is refused); the temporary file is
//! created with `O_CREAT | O_EXCL` in the target's directory, so it cannot
//! be a link planted in advance, and it is unlinked when the
//! [`PendingFile`] is dropped without [`PendingFile::commit`]. Only a crash
//! can leave one behind; its name starts with [`super::TEMP_PREFIX`],
//! which listings hide and no caller path may name.
//!
//! A store that was cut may be kept instead ([`PendingFile::keep`]): its
//! temporary file becomes the *kept part* of its name,
//! `.rightsize-part.<name>.kept`, hidden like it. A later store of the
//! same name that keeps a prefix ([`Keep::Prefix`], FTP `REST` then
//! `STOR`) continues the kept part rather than the file under the name,
//! and a committed store of the name removes it. A name too long to have
//! a kept part (over 234 bytes) is not kept.

use std::ffi::{CStr, CString};
use std::fs::{File, Permissions};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;
use std::sync::atomic::{AtomicU64, Ordering};

use super::rel::{NAME_MAX_BYTES, TEMP_PREFIX};
use super::{RootError, file_type, sys};

/// How many temporary names to try before giving up; another name is only
/// needed if a file with this process's id and counter already exists
/// (left by a crashed process that had the same pid).
const TEMP_NAME_ATTEMPTS: usize = 16;

/// Distinguishes the temporary files of this process's concurrent stores.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Lookups of a single name in an already-confined directory: no symbolic
/// link is followed at all, so `ELOOP` means the name is a link.
const SINGLE_NAME: u64 =
    libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS | libc::RESOLVE_NO_SYMLINKS;

/// Which part of an existing file a store keeps before the new bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// Replace the content (FTP `STOR`).
    Nothing,
    /// Keep this many bytes and write after them (FTP `REST` then `STOR`).
    /// More than the file's length is [`RootError::RestBeyondEnd`].
    Prefix(u64),
    /// Keep the whole file and write after it (FTP `APPE`).
    Everything,
}

/// The suffix of a kept part's name.
const KEPT_SUFFIX: &[u8] = b".kept";

/// A store in progress; see the module documentation.
#[derive(Debug)]
pub struct PendingFile {
    file: File,
    dir: OwnedFd,
    temp_name: CString,
    final_name: CString,
    shown: String,
    written_from_bytes: u64,
    committed: bool,
}

impl PendingFile {
    /// The temporary file, positioned at the end of the kept prefix.
    pub fn file(&mut self) -> &mut File {
        &mut self.file
    }

    /// How many bytes of the old file were kept, bytes.
    pub fn written_from(&self) -> u64 {
        self.written_from_bytes
    }

    /// Classifies an error from writing to [`PendingFile::file`] (so a full
    /// disk becomes [`RootError::NoSpace`] with the final path).
    pub fn write_error(&self, source: io::Error) -> RootError {
        RootError::os("write", self.shown.clone(), source)
    }

    /// Flushes the data to disk (`fdatasync`), then renames the temporary
    /// file over the final name; returns the final size, bytes. On error the
    /// temporary file is removed and the final name is left as it was. The
    /// directory entry itself is not fsynced: after a crash the name holds
    /// the old or the new content, complete either way.
    pub fn commit(mut self) -> Result<u64, RootError> {
        self.file
            .sync_data()
            .map_err(|e| RootError::os("fdatasync", self.shown.clone(), e))?;
        let final_name = self.final_name.clone();
        let size_bytes = self.rename_to(&final_name)?;
        // The name is whole now: a part kept of an earlier store is stale.
        if let Some(kept) = kept_name(final_name.as_bytes()) {
            let _ = sys::unlinkat(self.dir.as_fd(), &kept, 0);
        }
        Ok(size_bytes)
    }

    /// Renames the temporary file to `name` in its directory, which it then
    /// is no longer (nothing to remove on drop); returns its size, bytes.
    fn rename_to(&mut self, name: &CStr) -> Result<u64, RootError> {
        let size_bytes = self
            .file
            .metadata()
            .map_err(|e| RootError::os("fstat", self.shown.clone(), e))?
            .len();
        let dir = self.dir.as_fd();
        sys::renameat(dir, &self.temp_name, dir, name)
            .map_err(|e| RootError::os("renameat", self.shown.clone(), e))?;
        self.committed = true;
        Ok(size_bytes)
    }

    /// Keeps what was written so far as the kept part of the final name
    /// (replacing an older one), for a later store with [`Keep::Prefix`] to
    /// continue; returns its size, bytes, or `None` if the name is too long
    /// to have a kept part (the temporary file is then removed).
    pub fn keep(mut self) -> Result<Option<u64>, RootError> {
        let Some(kept) = kept_name(self.final_name.as_bytes()) else {
            return Ok(None);
        };
        self.rename_to(&kept).map(Some)
    }
}

/// `.rightsize-part.<name>.kept`, or `None` if that would exceed
/// `NAME_MAX` (a shortened name could be another name's).
fn kept_name(name: &[u8]) -> Option<CString> {
    if TEMP_PREFIX.len() + name.len() + KEPT_SUFFIX.len() > NAME_MAX_BYTES {
        return None;
    }
    CString::new([TEMP_PREFIX, name, KEPT_SUFFIX].concat()).ok()
}

/// The size of the kept part of `name` in `dir`, if there is one (a
/// regular file); `shown` is the final host path for errors.
pub(super) fn kept_part(dir: &OwnedFd, name: &CStr, shown: &str) -> Result<Option<u64>, RootError> {
    let Some(kept) = kept_name(name.to_bytes()) else {
        return Ok(None);
    };
    match sys::lstatat(dir.as_fd(), &kept) {
        Ok(st) if st.st_mode & libc::S_IFMT == libc::S_IFREG => {
            Ok(Some(u64::try_from(st.st_size).unwrap_or(0)))
        }
        Ok(_) => Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(None),
        Err(e) => Err(RootError::os("fstatat", shown.to_owned(), e)),
    }
}

impl Drop for PendingFile {
    fn drop(&mut self) {
        if !self.committed {
            // Nothing to report to: if this fails (the directory was
            // removed meanwhile), the file is hidden and named for cleanup.
            let _ = sys::unlinkat(self.dir.as_fd(), &self.temp_name, 0);
        }
    }
}

/// Starts a store of `name` in `dir` (already opened beneath the root);
/// `shown` is the final host path for errors.
pub(super) fn begin(
    dir: OwnedFd,
    name: CString,
    shown: String,
    keep: Keep,
) -> Result<PendingFile, RootError> {
    let existing = match sys::lstatat(dir.as_fd(), &name) {
        Ok(st) => Some(st),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => None,
        Err(e) => return Err(RootError::os("fstatat", shown, e)),
    };
    if let Some(st) = &existing {
        match st.st_mode & libc::S_IFMT {
            libc::S_IFREG => {}
            libc::S_IFDIR => {
                return Err(RootError::IsADirectory {
                    op: "fstatat",
                    path: shown,
                });
            }
            other => {
                return Err(RootError::NotAFile {
                    op: "fstatat",
                    path: shown,
                    found: file_type(other),
                });
            }
        }
    }
    if let Keep::Prefix(n) = keep
        && let Some(len_bytes) = kept_part(&dir, &name, &shown)?
    {
        return continue_kept(dir, name, shown, n, len_bytes);
    }
    // None: keep everything there is.
    let keep_bytes = match keep {
        Keep::Nothing => Some(0),
        Keep::Prefix(n) => Some(n),
        Keep::Everything => None,
    };
    let source = match (keep_bytes, &existing) {
        (Some(0), _) | (None, None) => None,
        (Some(n), None) => {
            return Err(RootError::RestBeyondEnd {
                path: shown,
                offset_bytes: n,
                len_bytes: 0,
            });
        }
        (_, Some(_)) => Some(open_source(&dir, &name, &shown, keep_bytes)?),
    };
    let mut pending = create_temp(dir, name, shown)?;
    if let Some(st) = &existing {
        // An overwrite keeps the old file's permission bits (not set-id).
        let mode = st.st_mode & 0o777;
        pending
            .file
            .set_permissions(Permissions::from_mode(mode))
            .map_err(|e| RootError::os("fchmod", pending.shown.clone(), e))?;
    }
    if let Some(source) = source {
        // std's io::copy uses copy_file_range between two files (falling
        // back to sendfile, then read/write), advancing both positions.
        let limit = keep_bytes.unwrap_or(u64::MAX);
        let copied = io::copy(&mut (&source).take(limit), &mut pending.file)
            .map_err(|e| RootError::os("copy_file_range", pending.shown.clone(), e))?;
        if let Some(n) = keep_bytes.filter(|&n| n > copied) {
            // The file shrank after it was measured.
            return Err(RootError::RestBeyondEnd {
                path: pending.shown.clone(),
                offset_bytes: n,
                len_bytes: copied,
            });
        }
        pending.written_from_bytes = copied;
    }
    Ok(pending)
}

/// Continues the kept part of `name` (`len_bytes` long) from `n`: it
/// becomes the store's temporary file, cut to `n` bytes. Claimed with one
/// `renameat`, so two stores cannot both continue it.
fn continue_kept(
    dir: OwnedFd,
    name: CString,
    shown: String,
    n: u64,
    len_bytes: u64,
) -> Result<PendingFile, RootError> {
    if n > len_bytes {
        return Err(RootError::RestBeyondEnd {
            path: shown,
            offset_bytes: n,
            len_bytes,
        });
    }
    let kept = kept_name(name.as_bytes()).unwrap_or_default();
    let counter = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    let temp_name = temp_name(name.as_bytes(), std::process::id(), counter);
    sys::renameat(dir.as_fd(), &kept, dir.as_fd(), &temp_name)
        .map_err(|e| RootError::os("renameat", shown.clone(), e))?;
    const OP: &str = "openat2(O_RDWR)";
    let flags = libc::O_RDWR | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY;
    let opened = sys::openat2(dir.as_fd(), &temp_name, flags, 0, SINGLE_NAME);
    let mut pending = PendingFile {
        file: match opened {
            Ok(fd) => File::from(fd),
            Err(e) => {
                let _ = sys::unlinkat(dir.as_fd(), &temp_name, 0);
                return Err(RootError::lookup(OP, shown, e));
            }
        },
        dir,
        temp_name,
        final_name: name,
        shown,
        written_from_bytes: n,
        committed: false,
    };
    pending
        .file
        .set_len(n)
        .map_err(|e| RootError::os("ftruncate", pending.shown.clone(), e))?;
    pending
        .file
        .seek(SeekFrom::Start(n))
        .map_err(|e| RootError::os("lseek", pending.shown.clone(), e))?;
    Ok(pending)
}

/// Opens the existing file to copy its prefix from, checking that it is
/// still a regular file and long enough for `keep_bytes`.
fn open_source(
    dir: &OwnedFd,
    name: &CStr,
    shown: &str,
    keep_bytes: Option<u64>,
) -> Result<File, RootError> {
    const OP: &str = "openat2(O_RDONLY|O_NOFOLLOW)";
    // O_NONBLOCK: should the name have become a FIFO since the check, the
    // open must not wait for a writer. It does not affect regular files.
    let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY;
    let fd = sys::openat2(dir.as_fd(), name, flags, 0, SINGLE_NAME)
        .map_err(|e| RootError::lookup(OP, shown.to_owned(), e))?;
    let st = sys::fstat(fd.as_fd()).map_err(|e| RootError::os("fstat", shown.to_owned(), e))?;
    if st.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Err(RootError::NotAFile {
            op: "fstat",
            path: shown.to_owned(),
            found: file_type(st.st_mode & libc::S_IFMT),
        });
    }
    let len_bytes = u64::try_from(st.st_size).unwrap_or(0);
    if let Some(n) = keep_bytes.filter(|&n| n > len_bytes) {
        return Err(RootError::RestBeyondEnd {
            path: shown.to_owned(),
            offset_bytes: n,
            len_bytes,
        });
    }
    Ok(File::from(fd))
}

/// Creates the temporary file next to `name`, owned by the returned
/// [`PendingFile`] from the moment it exists.
fn create_temp(dir: OwnedFd, name: CString, shown: String) -> Result<PendingFile, RootError> {
    const OP: &str = "openat2(O_CREAT|O_EXCL)";
    let flags = libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW;
    let pid = std::process::id();
    let mut last_err = None;
    for _ in 0..TEMP_NAME_ATTEMPTS {
        let counter = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        let temp_name = temp_name(name.as_bytes(), pid, counter);
        match sys::openat2(dir.as_fd(), &temp_name, flags, 0o666, SINGLE_NAME) {
            Ok(fd) => {
                return Ok(PendingFile {
                    file: File::from(fd),
                    dir,
                    temp_name,
                    final_name: name,
                    shown,
                    written_from_bytes: 0,
                    committed: false,
                });
            }
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => last_err = Some(e),
            Err(e) => return Err(RootError::lookup(OP, shown, e)),
        }
    }
    let source = last_err.unwrap_or_else(|| io::Error::from_raw_os_error(libc::EEXIST));
    Err(RootError::Io {
        op: OP,
        path: shown,
        source,
    })
}

/// `.rightsize-part.<name>.<pid>.<counter>`, with `name` cut short if the
/// whole would exceed `NAME_MAX`.
fn temp_name(name: &[u8], pid: u32, counter: u64) -> CString {
    let suffix = format!(".{pid}.{counter}");
    let room = NAME_MAX_BYTES - TEMP_PREFIX.len() - suffix.len();
    let kept = &name[..name.len().min(room)];
    let bytes = [TEMP_PREFIX, kept, suffix.as_bytes()].concat();
    // `name` came from a CString, so there is no NUL to refuse.
    CString::new(bytes).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_names_are_hidden_unique_and_within_name_max() {
        let a = temp_name(b"f.bin", 42, 7);
        assert_eq!(a.as_bytes(), b".rightsize-part.f.bin.42.7");
        assert_ne!(a, temp_name(b"f.bin", 42, 8));
        let long = temp_name(&[b'x'; NAME_MAX_BYTES], u32::MAX, u64::MAX);
        assert_eq!(long.as_bytes().len(), NAME_MAX_BYTES);
        assert!(long.as_bytes().starts_with(TEMP_PREFIX));
    }
}
