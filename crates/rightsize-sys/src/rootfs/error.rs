//! Why an operation on the root failed.
//!
//! Guarantees: every error names the system call (or the check) that failed
//! and the host path it was about, so a log line is enough to find the
//! file. The variants a client can cause are separate so that the FTP layer
//! can match them to reply codes; all others are [`RootError::Io`]. The
//! paths are host paths: fine for the operator's log, not for a client.

use std::io;

/// An operation on a [`super::Root`] that failed.
#[derive(Debug, thiserror::Error)]
pub enum RootError {
    /// The path, or a component of it, does not exist (or a symbolic link
    /// on the way dangles).
    #[error("{op} {path}: no such file or directory")]
    NotFound {
        /// The system call.
        op: &'static str,
        /// The host path.
        path: String,
    },
    /// The kernel refused (`EACCES`, `EPERM`, or `EROFS` for a read-only
    /// file system).
    #[error("{op} {path}: permission denied")]
    PermissionDenied {
        /// The system call.
        op: &'static str,
        /// The host path.
        path: String,
        /// What the OS said.
        #[source]
        source: io::Error,
    },
    /// The path would leave the root: through a symbolic link that points
    /// outside it or is absolute (`EXDEV` from `openat2`), or through a
    /// link loop or a `/proc` magic link (`ELOOP`). Answer a client with
    /// "permission denied"; do not tell it where the link points.
    #[error(
        "{op} {path}: refused, the path leads outside the root (a symbolic link that is absolute, climbs above the root or loops, or a /proc magic link)"
    )]
    Escapes {
        /// The system call.
        op: &'static str,
        /// The host path.
        path: String,
        /// What the OS said (`EXDEV` or `ELOOP`).
        #[source]
        source: io::Error,
    },
    /// A component used as a directory is not one.
    #[error("{op} {path}: not a directory")]
    NotADirectory {
        /// The system call.
        op: &'static str,
        /// The host path.
        path: String,
    },
    /// A file operation named a directory.
    #[error("{op} {path}: is a directory")]
    IsADirectory {
        /// The system call.
        op: &'static str,
        /// The host path.
        path: String,
    },
    /// Reading or storing needs a regular file and found something else.
    #[error("{op} {path}: not a regular file but {found}")]
    NotAFile {
        /// The system call.
        op: &'static str,
        /// The host path.
        path: String,
        /// What is there, such as "a symbolic link" or "a FIFO".
        found: &'static str,
    },
    /// The name is taken (`mkdir` of an existing name).
    #[error("{op} {path}: already exists")]
    AlreadyExists {
        /// The system call.
        op: &'static str,
        /// The host path.
        path: String,
    },
    /// A directory to remove, or to rename over, still has entries.
    #[error("{op} {path}: directory not empty")]
    NotEmpty {
        /// The system call.
        op: &'static str,
        /// The host path.
        path: String,
    },
    /// A restart offset (FTP `REST`) past the end of the existing file.
    #[error(
        "{path}: restart offset {offset_bytes} is beyond the end of the file ({len_bytes} bytes)"
    )]
    RestBeyondEnd {
        /// The host path.
        path: String,
        /// The offset asked for, bytes.
        offset_bytes: u64,
        /// The file's length, bytes (0 if it does not exist).
        len_bytes: u64,
    },
    /// The relative path is not one [`super::Root`] accepts; a caller's bug,
    /// since `VirtualPath` never produces one.
    #[error("invalid path {path:?} inside the root: it {reason}")]
    InvalidPath {
        /// The path as given (lossy UTF-8).
        path: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The file system is full or a quota is exhausted (`ENOSPC`, `EDQUOT`).
    #[error("{op} {path}: no space left on the file system or quota exceeded")]
    NoSpace {
        /// The system call.
        op: &'static str,
        /// The host path.
        path: String,
        /// What the OS said.
        #[source]
        source: io::Error,
    },
    /// `openat2(2)` is missing (`ENOSYS`), and without it nothing can be
    /// confined to the root.
    #[error(
        "{op} {path}: this kernel has no openat2(2), which rightsize needs to keep paths \
         inside the served root; use Linux 5.6 or later (inside a container, also allow \
         openat2 in the seccomp profile)"
    )]
    Unsupported {
        /// The system call.
        op: &'static str,
        /// The host path.
        path: String,
        /// What the OS said.
        #[source]
        source: io::Error,
    },
    /// Any other failure of a system call.
    #[error("{op} {path}")]
    Io {
        /// The system call.
        op: &'static str,
        /// The host path.
        path: String,
        /// What the OS said.
        #[source]
        source: io::Error,
    },
}

impl RootError {
    /// Classifies an error of an `openat2` lookup beneath the root, where
    /// `EXDEV` and `ELOOP` mean the path escapes.
    pub(super) fn lookup(op: &'static str, path: String, source: io::Error) -> RootError {
        match source.raw_os_error() {
            Some(libc::EXDEV | libc::ELOOP) => RootError::Escapes { op, path, source },
            Some(libc::ENOSYS) => RootError::Unsupported { op, path, source },
            _ => RootError::os(op, path, source),
        }
    }

    /// Classifies an error of any other call, by `errno`.
    pub(super) fn os(op: &'static str, path: String, source: io::Error) -> RootError {
        match source.raw_os_error() {
            Some(libc::ENOENT) => RootError::NotFound { op, path },
            Some(libc::EACCES | libc::EPERM | libc::EROFS) => {
                RootError::PermissionDenied { op, path, source }
            }
            Some(libc::ENOTDIR) => RootError::NotADirectory { op, path },
            Some(libc::EISDIR) => RootError::IsADirectory { op, path },
            Some(libc::EEXIST) => RootError::AlreadyExists { op, path },
            Some(libc::ENOTEMPTY) => RootError::NotEmpty { op, path },
            Some(libc::ENOSPC | libc::EDQUOT) => RootError::NoSpace { op, path, source },
            _ => RootError::Io { op, path, source },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(errno: i32) -> RootError {
        RootError::os("call", "/p".into(), io::Error::from_raw_os_error(errno))
    }

    fn lookup(errno: i32) -> RootError {
        RootError::lookup("openat2", "/p".into(), io::Error::from_raw_os_error(errno))
    }

    #[test]
    fn maps_errno_to_the_variants_a_client_can_cause() {
        assert!(matches!(os(libc::ENOENT), RootError::NotFound { .. }));
        assert!(matches!(
            os(libc::EACCES),
            RootError::PermissionDenied { .. }
        ));
        assert!(matches!(
            os(libc::EPERM),
            RootError::PermissionDenied { .. }
        ));
        assert!(matches!(os(libc::ENOTDIR), RootError::NotADirectory { .. }));
        assert!(matches!(os(libc::EISDIR), RootError::IsADirectory { .. }));
        assert!(matches!(os(libc::EEXIST), RootError::AlreadyExists { .. }));
        assert!(matches!(os(libc::ENOTEMPTY), RootError::NotEmpty { .. }));
        assert!(matches!(os(libc::ENOSPC), RootError::NoSpace { .. }));
        assert!(matches!(os(libc::EDQUOT), RootError::NoSpace { .. }));
        assert!(matches!(os(libc::EIO), RootError::Io { .. }));
    }

    #[test]
    fn exdev_means_escape_only_for_a_lookup() {
        assert!(matches!(lookup(libc::EXDEV), RootError::Escapes { .. }));
        assert!(matches!(lookup(libc::ELOOP), RootError::Escapes { .. }));
        assert!(matches!(lookup(libc::ENOENT), RootError::NotFound { .. }));
        // renameat's EXDEV is a mount point inside the root, not an escape.
        assert!(matches!(os(libc::EXDEV), RootError::Io { .. }));
    }

    #[test]
    fn enosys_says_which_kernel_is_needed() {
        let text = lookup(libc::ENOSYS).to_string();
        assert!(text.contains("openat2") && text.contains("5.6"), "{text}");
    }

    #[test]
    fn messages_name_the_call_and_path_but_not_the_source() {
        let err = os(libc::EIO);
        assert_eq!(err.to_string(), "call /p");
        assert!(std::error::Error::source(&err).is_some());
    }
}
