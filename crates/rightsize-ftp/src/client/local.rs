//! Local files of a transfer: the download's temporary file, which becomes
//! the requested file only by [`PartFile::commit`], and standard output.
//!
//! Guarantees: a [`PartFile`] that is dropped without a commit removes its
//! temporary file, so an error anywhere (a refused `RETR`, a stalled
//! connection, a full disk, a checksum mismatch, a panic unwinding) leaves
//! nothing under the requested name and no temporary file behind. The
//! commit fsyncs the file, renames it over the requested name (atomic on one
//! file system) and fsyncs the directory.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::error::ClientError;

/// How many names `.NAME.rightsize-part-PID[-N]` are tried before giving up.
const MAX_TEMP_NAME_TRIES: u32 = 100;

/// A download being written next to its final name.
#[derive(Debug)]
pub(crate) struct PartFile {
    file: File,
    temp: PathBuf,
    target: PathBuf,
    committed: bool,
}

impl PartFile {
    /// Creates `.NAME.rightsize-part-PID` in `target`'s directory.
    pub(crate) fn create(target: &Path) -> Result<PartFile, ClientError> {
        let dir = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "download".to_owned());
        let pid = std::process::id();
        let mut last_error = None;
        for attempt in 0..MAX_TEMP_NAME_TRIES {
            let suffix = if attempt == 0 {
                String::new()
            } else {
                format!("-{attempt}")
            };
            let temp = dir.join(format!(".{name}.rightsize-part-{pid}{suffix}"));
            match OpenOptions::new().write(true).create_new(true).open(&temp) {
                Ok(file) => {
                    return Ok(PartFile {
                        file,
                        temp,
                        target: target.to_path_buf(),
                        committed: false,
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last_error = Some(e),
                Err(source) => {
                    return Err(ClientError::Local {
                        op: "create the temporary file",
                        path: temp,
                        source,
                    });
                }
            }
        }
        Err(ClientError::Local {
            op: "create a temporary file next to",
            path: target.to_path_buf(),
            source: last_error.unwrap_or_else(|| io::Error::other("no free name")),
        })
    }

    /// Appends `bytes`.
    pub(crate) fn write_all(&mut self, bytes: &[u8]) -> Result<(), ClientError> {
        self.file
            .write_all(bytes)
            .map_err(|source| ClientError::Local {
                op: "write",
                path: self.temp.clone(),
                source,
            })
    }

    /// Flushes the data to disk and renames the file to its final name.
    pub(crate) fn commit(mut self) -> Result<PathBuf, ClientError> {
        self.file.sync_all().map_err(|source| ClientError::Local {
            op: "fsync",
            path: self.temp.clone(),
            source,
        })?;
        std::fs::rename(&self.temp, &self.target).map_err(|source| ClientError::Local {
            op: "rename the temporary file to",
            path: self.target.clone(),
            source,
        })?;
        self.committed = true;
        // The rename is durable once the directory is; a failure here
        // leaves a complete file, so it is not an error.
        if let Some(dir) = self.target.parent().filter(|p| !p.as_os_str().is_empty()) {
            if let Ok(d) = File::open(dir) {
                let _ = d.sync_all();
            }
        }
        Ok(self.target.clone())
    }
}

impl Drop for PartFile {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_file(&self.temp);
        }
    }
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
    pub(crate) fn open(target: &Path) -> Result<Sink, ClientError> {
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
                PartFile::create(&real).map(Sink::File)
            }
            _ => PartFile::create(target).map(Sink::File),
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
    fn a_dropped_part_file_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("f.bin");
        let mut part = PartFile::create(&target).unwrap();
        part.write_all(b"half").unwrap();
        let temp = part.temp.clone();
        assert!(temp.exists());
        assert!(
            temp.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(".f.bin.rightsize-part-")
        );
        drop(part);
        assert!(!temp.exists());
        assert!(!target.exists());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn commit_renames_over_the_target() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("f.bin");
        std::fs::write(&target, b"old").unwrap();
        let mut part = PartFile::create(&target).unwrap();
        // A second download of the same name in the same process gets its own file.
        let other = PartFile::create(&target).unwrap();
        assert_ne!(part.temp, other.temp);
        part.write_all(b"new bytes").unwrap();
        assert_eq!(part.commit().unwrap(), target);
        drop(other);
        assert_eq!(std::fs::read(&target).unwrap(), b"new bytes");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn dev_null_is_written_in_place_never_replaced() {
        let sink = Sink::open(Path::new("/dev/null")).unwrap();
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
        let mut sink = Sink::open(&link).unwrap();
        sink.write_all(b"new").unwrap();
        sink.commit().unwrap();
        assert!(link.is_symlink());
        assert_eq!(std::fs::read(&real).unwrap(), b"new");
    }

    #[test]
    fn a_missing_directory_is_an_error_naming_the_path() {
        let err = PartFile::create(Path::new("/nonexistent-dir/f.bin")).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("/nonexistent-dir/.f.bin.rightsize-part-"),
            "{text}"
        );
    }
}
