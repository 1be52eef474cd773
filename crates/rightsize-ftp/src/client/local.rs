//! Local files of a transfer: the download's part file, which becomes the
//! requested file only by [`PartFile::commit`], and standard output.
//!
//! Guarantees: nothing appears under the requested name before the
//! commit, which fsyncs the part file, renames it over the requested name
//! (atomic on one file system) and fsyncs the directory. The part file is
//! `.NAME.rightsize-part` beside the requested name, locked (`flock`) while
//! a transfer writes it: a second download to the same name fails at once
//! instead of writing into the first one's bytes. A part file dropped
//! without a commit is kept when it holds bytes and was not discarded (a
//! stalled connection, an interruption: `get -C` resumes from it), and
//! removed when it is empty or discarded (a checksum mismatch, more bytes
//! than the server announced). A MODE E download, whose blocks leave
//! holes, records the ranges it holds beside it ([`ranges_path`]).

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::error::ClientError;

/// The suffix of a download's part file: `.NAME.rightsize-part`.
pub const PART_SUFFIX: &str = ".rightsize-part";

/// A download being written next to its final name.
#[derive(Debug)]
pub(crate) struct PartFile {
    file: File,
    temp: PathBuf,
    target: PathBuf,
    /// Bytes in the file.
    len: u64,
    committed: bool,
    discarded: bool,
}

/// The part file of `target`: `.NAME.rightsize-part` in its directory.
pub fn part_path(target: &Path) -> PathBuf {
    let dir = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "download".to_owned());
    dir.join(format!(".{name}{PART_SUFFIX}"))
}

/// Where a MODE E download that stopped records the byte ranges its part
/// file holds: `.NAME.rightsize-part.ranges`, one line like `0-29,60-89`
/// (ends excluded).
pub fn ranges_path(target: &Path) -> PathBuf {
    let mut path = part_path(target).into_os_string();
    path.push(".ranges");
    PathBuf::from(path)
}

/// What the part file of `target` holds for a resume, in bytes: the sum
/// of its recorded ranges, or its length; `None` without a part file.
pub fn kept_bytes(target: &Path) -> Option<u64> {
    let len = std::fs::metadata(part_path(target)).ok()?.len();
    let recorded = std::fs::read_to_string(ranges_path(target)).ok();
    Some(
        recorded
            .and_then(|text| rightsize_ftp_proto::mode_e::Ranges::parse(text.trim()).ok())
            .map_or(len, |ranges| ranges.total()),
    )
}

impl PartFile {
    /// Opens `target`'s part file and locks it: emptied, or with `resume`
    /// kept as it is, positioned at its end. A directory at `target` is
    /// refused.
    pub(crate) fn create(target: &Path, resume: bool) -> Result<PartFile, ClientError> {
        // A directory where the file goes is an error before any byte
        // moves, not at the rename after the last one.
        if target.is_dir() {
            return Err(ClientError::Local {
                op: "write the file (a directory holds its name)",
                path: target.to_path_buf(),
                source: io::ErrorKind::IsADirectory.into(),
            });
        }
        let temp = part_path(target);
        let local = |op, source| ClientError::Local {
            op,
            path: temp.clone(),
            source,
        };
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&temp)
            .map_err(|e| local("create the part file", e))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(local(
                    "lock the part file (another transfer is writing it)",
                    io::Error::from(io::ErrorKind::WouldBlock),
                ));
            }
            Err(TryLockError::Error(e)) => return Err(local("lock the part file", e)),
        }
        if !resume {
            file.set_len(0)
                .map_err(|e| local("empty the part file", e))?;
        }
        let len = file
            .seek(SeekFrom::End(0))
            .map_err(|e| local("seek to the end of the part file", e))?;
        Ok(PartFile {
            file,
            temp,
            target: target.to_path_buf(),
            len,
            committed: false,
            discarded: false,
        })
    }

    /// Bytes in the part file.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// The part file's path.
    pub(crate) fn path(&self) -> &Path {
        &self.temp
    }

    /// The name it becomes.
    pub(crate) fn target(&self) -> &Path {
        &self.target
    }

    /// Empties the file: what it held is not the start of the remote file.
    pub(crate) fn restart(&mut self) -> Result<(), ClientError> {
        self.file
            .set_len(0)
            .and_then(|()| self.file.seek(SeekFrom::Start(0)).map(|_| ()))
            .map_err(|source| ClientError::Local {
                op: "empty the part file",
                path: self.temp.clone(),
                source,
            })?;
        self.len = 0;
        Ok(())
    }

    /// Feeds what the file holds to `each`, a piece at a time, and leaves
    /// the position at the end.
    pub(crate) fn read_back(&mut self, mut each: impl FnMut(&[u8])) -> Result<(), ClientError> {
        let error = |source| ClientError::Local {
            op: "read back the part file",
            path: self.temp.clone(),
            source,
        };
        self.file.seek(SeekFrom::Start(0)).map_err(error)?;
        read_into(&mut self.file, self.len, &mut each).map_err(error)?;
        self.file.seek(SeekFrom::End(0)).map_err(error)?;
        Ok(())
    }

    /// Removes the file when dropped: its bytes must not be resumed from.
    pub(crate) fn discard(&mut self) {
        self.discarded = true;
    }

    /// Writes `bytes` at `offset` (MODE E blocks come in any order).
    pub(crate) fn write_at(&mut self, offset: u64, bytes: &[u8]) -> io::Result<()> {
        std::os::unix::fs::FileExt::write_all_at(&self.file, bytes, offset)?;
        self.len = self.len.max(offset + bytes.len() as u64);
        Ok(())
    }

    /// Appends `bytes`.
    pub(crate) fn write_all(&mut self, bytes: &[u8]) -> Result<(), ClientError> {
        self.file
            .write_all(bytes)
            .map_err(|source| ClientError::Local {
                op: "write",
                path: self.temp.clone(),
                source,
            })?;
        self.len += bytes.len() as u64;
        Ok(())
    }

    /// Flushes the data to disk and renames the file to its final name.
    pub(crate) fn commit(mut self) -> Result<PathBuf, ClientError> {
        self.file.sync_all().map_err(|source| ClientError::Local {
            op: "fsync",
            path: self.temp.clone(),
            source,
        })?;
        std::fs::rename(&self.temp, &self.target).map_err(|source| ClientError::Local {
            op: "rename the part file to",
            path: self.target.clone(),
            source,
        })?;
        self.committed = true;
        // The rename is durable once the directory is; a failure here
        // leaves a complete file, so it is not an error.
        if let Some(dir) = self.target.parent().filter(|p| !p.as_os_str().is_empty())
            && let Ok(d) = File::open(dir)
        {
            let _ = d.sync_all();
        }
        Ok(self.target.clone())
    }
}

impl Drop for PartFile {
    fn drop(&mut self) {
        if self.committed {
            return;
        }
        if self.len == 0 || self.discarded {
            let _ = std::fs::remove_file(&self.temp);
        } else {
            // Kept for a resume: what was written reaches the disk.
            let _ = self.file.sync_data();
        }
    }
}

/// Feeds up to `limit` bytes of `reader` to `each`, a piece at a time;
/// returns how many there were (fewer at the end of the input).
pub(crate) fn read_into(
    reader: &mut impl Read,
    limit: u64,
    each: impl FnMut(&[u8]),
) -> io::Result<u64> {
    /// A writer that hands what it is given to a closure.
    struct Each<F>(F);
    impl<F: FnMut(&[u8])> Write for Each<F> {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            (self.0)(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    io::copy(&mut reader.by_ref().take(limit), &mut Each(each))
}

/// Where downloaded bytes go.
#[derive(Debug)]
pub(crate) enum Sink {
    /// A file, renamed into place on commit.
    File(PartFile),
    /// Something that is not a regular file (`/dev/null`, a FIFO, a
    /// terminal): written in place. Renaming over it would replace a device
    /// node with a regular file.
    Device(File, PathBuf),
    /// Standard output.
    Stdout(io::Stdout),
}

impl Sink {
    /// The sink for `target`: a temporary file renamed into place for a
    /// regular file or a new name (through a symbolic link, at the link's
    /// target), the target itself for anything else that exists.
    pub(crate) fn open(target: &Path, resume: bool) -> Result<Sink, ClientError> {
        let local = |op, source| ClientError::Local {
            op,
            path: target.to_path_buf(),
            source,
        };
        match std::fs::metadata(target) {
            Ok(meta) if !meta.is_file() && !meta.is_dir() => {
                let file = OpenOptions::new()
                    .write(true)
                    .open(target)
                    .map_err(|e| local("open", e))?;
                Ok(Sink::Device(file, target.to_path_buf()))
            }
            Ok(meta) if meta.is_file() && target.is_symlink() => {
                let real = std::fs::canonicalize(target).map_err(|e| local("resolve", e))?;
                PartFile::create(&real, resume).map(Sink::File)
            }
            _ => PartFile::create(target, resume).map(Sink::File),
        }
    }

    /// Writes `bytes`.
    pub(crate) fn write_all(&mut self, bytes: &[u8]) -> Result<(), ClientError> {
        match self {
            Sink::File(part) => part.write_all(bytes),
            Sink::Device(file, path) => {
                file.write_all(bytes).map_err(|source| ClientError::Local {
                    op: "write",
                    path: path.clone(),
                    source,
                })
            }
            Sink::Stdout(out) => out.write_all(bytes).map_err(stdout_error),
        }
    }

    /// A part file's bytes must not be resumed from (see
    /// [`PartFile::discard`]); nothing for other sinks.
    pub(crate) fn discard(&mut self) {
        if let Sink::File(part) = self {
            part.discard();
        }
    }

    /// Makes the bytes final: commit the file, or flush standard output.
    pub(crate) fn commit(self) -> Result<Option<PathBuf>, ClientError> {
        match self {
            Sink::File(part) => part.commit().map(Some),
            Sink::Device(_, path) => Ok(Some(path)),
            Sink::Stdout(mut out) => out.flush().map(|()| None).map_err(stdout_error),
        }
    }
}

fn stdout_error(source: io::Error) -> ClientError {
    ClientError::Local {
        op: "write",
        path: PathBuf::from("standard output"),
        source,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_where_the_file_goes_is_refused_before_anything_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("x");
        std::fs::create_dir(&target).unwrap();
        let e = PartFile::create(&target, false).unwrap_err();
        assert!(e.to_string().contains("a directory holds its name"), "{e}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn an_empty_or_discarded_part_file_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("f.bin");
        let part = PartFile::create(&target, false).unwrap();
        let temp = part.path().to_path_buf();
        assert_eq!(temp, dir.path().join(".f.bin.rightsize-part"));
        assert!(temp.exists());
        drop(part);
        assert!(!temp.exists());
        let mut part = PartFile::create(&target, false).unwrap();
        part.write_all(b"wrong").unwrap();
        part.discard();
        drop(part);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_part_file_with_bytes_is_kept_resumed_or_emptied() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("f.bin");
        let mut part = PartFile::create(&target, false).unwrap();
        part.write_all(b"half").unwrap();
        let temp = part.path().to_path_buf();
        drop(part);
        assert_eq!(std::fs::read(&temp).unwrap(), b"half");
        assert!(!target.exists());
        // Resumed: kept, and written after.
        let mut part = PartFile::create(&target, true).unwrap();
        assert_eq!(part.len(), 4);
        let mut seen = Vec::new();
        part.read_back(|piece| seen.extend_from_slice(piece))
            .unwrap();
        assert_eq!(seen, b"half");
        part.write_all(b" more").unwrap();
        assert_eq!(part.commit().unwrap(), target);
        assert_eq!(std::fs::read(&target).unwrap(), b"half more");
        // Not resumed: emptied.
        std::fs::write(&temp, b"stale").unwrap();
        let part = PartFile::create(&target, false).unwrap();
        assert_eq!(part.len(), 0);
        assert_eq!(std::fs::metadata(&temp).unwrap().len(), 0);
    }

    #[test]
    fn a_second_transfer_to_the_same_name_is_refused_while_the_first_writes() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("f.bin");
        let mut first = PartFile::create(&target, false).unwrap();
        first.write_all(b"first").unwrap();
        let err = PartFile::create(&target, true).unwrap_err().to_string();
        assert!(err.contains("another transfer is writing it"), "{err}");
        assert!(err.contains(".f.bin.rightsize-part"), "{err}");
        first.write_all(b" bytes").unwrap();
        first.commit().unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"first bytes");
    }

    #[test]
    fn commit_renames_over_the_target() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("f.bin");
        std::fs::write(&target, b"old").unwrap();
        let mut part = PartFile::create(&target, false).unwrap();
        part.write_all(b"new bytes").unwrap();
        assert_eq!(part.commit().unwrap(), target);
        assert_eq!(std::fs::read(&target).unwrap(), b"new bytes");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn dev_null_is_written_in_place_never_replaced() {
        let sink = Sink::open(Path::new("/dev/null"), false).unwrap();
        assert!(matches!(sink, Sink::Device(..)));
        let mut sink = sink;
        sink.write_all(b"x").unwrap();
        sink.commit().unwrap();
        use std::os::unix::fs::FileTypeExt;
        assert!(
            std::fs::metadata("/dev/null")
                .unwrap()
                .file_type()
                .is_char_device()
        );
    }

    #[test]
    fn a_symlinked_target_is_replaced_at_the_link_target() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.bin");
        std::fs::write(&real, b"old").unwrap();
        let link = dir.path().join("link.bin");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let mut sink = Sink::open(&link, false).unwrap();
        sink.write_all(b"new").unwrap();
        sink.commit().unwrap();
        assert!(link.is_symlink());
        assert_eq!(std::fs::read(&real).unwrap(), b"new");
    }

    #[test]
    fn a_missing_directory_is_an_error_naming_the_path() {
        let err = PartFile::create(Path::new("/nonexistent-dir/f.bin"), false).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("/nonexistent-dir/.f.bin.rightsize-part"),
            "{text}"
        );
    }
}
