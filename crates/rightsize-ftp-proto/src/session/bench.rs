//! The benchmark source and sink: virtual files any FTP client can reach,
//! in the spirit of GridFTP's `/dev/zero` and `/dev/null`.
//!
//! - `/.rightsize/zero/SIZE` is a read-only file of SIZE zero bytes (`SIZE` in
//!   bytes, or with a unit: `1G` = 1 GiB, `100MB` = 100,000,000 bytes, as
//!   [`rightsize_tune::units::Bytes`] reads it), streamed without touching a disk.
//! - `/.rightsize/null/NAME` is a sink: whatever is stored there is counted
//!   and dropped. Any logged-in user may store there, anonymous users
//!   included, since nothing is written.
//!
//! [`BenchHost`] wraps a real [`ServerHost`] and answers for these paths; the
//! driver asks [`classify`] which transfer is virtual. Everything else goes to
//! the wrapped host, so the names shadow a real `.rightsize` directory at the
//! top of the served root.

use std::net::SocketAddr;

use super::host::{Access, DirEntry, EntryKind, FsError, Metadata, ServerHost};
use crate::VirtualPath;
use rightsize_tune::units::Bytes;

/// The reserved top-level directory.
pub const BENCH_DIR: &str = "/.rightsize";
/// The directory of the zero source.
pub const ZERO_DIR: &str = "/.rightsize/zero";
/// The directory of the discard sink.
pub const NULL_DIR: &str = "/.rightsize/null";

/// Sizes a listing of [`ZERO_DIR`] shows as examples; any other size works.
pub const LISTED_ZERO_SIZES: [&str; 6] = ["1M", "16M", "256M", "1G", "4G", "16G"];

/// What a path in the benchmark namespace is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BenchPath {
    /// One of the three virtual directories.
    Dir,
    /// A zero-filled source of this many bytes.
    Zero {
        /// Its size in bytes.
        size_bytes: u64,
    },
    /// A file in the sink.
    Null,
}

/// The benchmark meaning of `path`, or `None` for a path outside the
/// namespace (and for a name under `zero/` that is not a size).
pub fn classify(path: &VirtualPath) -> Option<BenchPath> {
    let bytes = path.as_bytes();
    if [BENCH_DIR, ZERO_DIR, NULL_DIR]
        .iter()
        .any(|d| d.as_bytes() == bytes)
    {
        return Some(BenchPath::Dir);
    }
    let name = path.file_name()?;
    let parent = path.parent();
    if parent.as_bytes() == ZERO_DIR.as_bytes() {
        let size = std::str::from_utf8(name).ok()?.parse::<Bytes>().ok()?;
        return Some(BenchPath::Zero { size_bytes: size.0 });
    }
    (parent.as_bytes() == NULL_DIR.as_bytes()).then_some(BenchPath::Null)
}

/// Whether `path` is in the namespace at all (including names under `zero/`
/// that are not sizes, which exist nowhere).
fn in_namespace(path: &VirtualPath) -> bool {
    let bytes = path.as_bytes();
    bytes == BENCH_DIR.as_bytes()
        || bytes
            .strip_prefix(BENCH_DIR.as_bytes())
            .is_some_and(|rest| rest.starts_with(b"/"))
}

/// A [`ServerHost`] that answers for the benchmark namespace and hands every
/// other path to `inner`.
#[derive(Debug)]
pub struct BenchHost<H> {
    inner: H,
    /// When the server started: the virtual files' modification time.
    started_unix: i64,
}

impl<H: ServerHost> BenchHost<H> {
    /// Wraps `inner`; the virtual files carry `started_unix` as their time.
    pub fn new(inner: H, started_unix: i64) -> Self {
        BenchHost {
            inner,
            started_unix,
        }
    }

    /// The wrapped host.
    pub fn inner(&mut self) -> &mut H {
        &mut self.inner
    }

    fn meta(&self, kind: EntryKind, size: u64, writable: bool) -> Metadata {
        Metadata {
            kind,
            size,
            modified_unix: self.started_unix,
            writable,
        }
    }

    fn entry(&self, name: &str, kind: EntryKind, size: u64) -> DirEntry {
        DirEntry {
            name: name.as_bytes().to_vec(),
            metadata: self.meta(kind, size, false),
        }
    }
}

impl<H: ServerHost> ServerHost for BenchHost<H> {
    fn metadata(&mut self, path: &VirtualPath) -> Result<Metadata, FsError> {
        if !in_namespace(path) {
            return self.inner.metadata(path);
        }
        match classify(path) {
            Some(BenchPath::Dir) => {
                Ok(self.meta(EntryKind::Dir, 0, path.as_bytes() == NULL_DIR.as_bytes()))
            }
            Some(BenchPath::Zero { size_bytes }) => {
                Ok(self.meta(EntryKind::File, size_bytes, false))
            }
            Some(BenchPath::Null) | None => Err(FsError::NotFound),
        }
    }

    fn read_dir(&mut self, path: &VirtualPath) -> Result<Vec<DirEntry>, FsError> {
        if !in_namespace(path) {
            return self.inner.read_dir(path);
        }
        match path.as_bytes() {
            p if p == BENCH_DIR.as_bytes() => Ok(vec![
                self.entry("null", EntryKind::Dir, 0),
                self.entry("zero", EntryKind::Dir, 0),
            ]),
            p if p == NULL_DIR.as_bytes() => Ok(Vec::new()),
            p if p == ZERO_DIR.as_bytes() => Ok(LISTED_ZERO_SIZES
                .iter()
                .filter_map(|name| {
                    let size = name.parse::<Bytes>().ok()?;
                    Some(self.entry(name, EntryKind::File, size.0))
                })
                .collect()),
            _ => match classify(path) {
                Some(_) => Err(FsError::NotADirectory),
                None => Err(FsError::NotFound),
            },
        }
    }

    fn make_dir(&mut self, path: &VirtualPath) -> Result<(), FsError> {
        if in_namespace(path) {
            return Err(FsError::PermissionDenied);
        }
        self.inner.make_dir(path)
    }

    fn remove_dir(&mut self, path: &VirtualPath) -> Result<(), FsError> {
        if in_namespace(path) {
            return Err(FsError::PermissionDenied);
        }
        self.inner.remove_dir(path)
    }

    fn remove_file(&mut self, path: &VirtualPath) -> Result<(), FsError> {
        if in_namespace(path) {
            return Err(FsError::PermissionDenied);
        }
        self.inner.remove_file(path)
    }

    fn rename(&mut self, from: &VirtualPath, to: &VirtualPath) -> Result<(), FsError> {
        if in_namespace(from) || in_namespace(to) {
            return Err(FsError::PermissionDenied);
        }
        self.inner.rename(from, to)
    }

    fn checksums(&self) -> &[&'static str] {
        self.inner.checksums()
    }

    fn open_passive(&mut self, sbuf: Option<u64>) -> Result<SocketAddr, String> {
        self.inner.open_passive(sbuf)
    }

    fn authenticate(&mut self, user: &str, password: &[u8]) -> Option<Access> {
        self.inner.authenticate(user, password)
    }

    fn status(&mut self) -> Vec<String> {
        self.inner.status()
    }

    fn tcp_settings(&mut self) -> Option<Vec<(String, String)>> {
        self.inner.tcp_settings()
    }

    fn set_tuner(&mut self, spec: &str) -> Result<String, String> {
        self.inner.set_tuner(spec)
    }

    fn kept_part(&mut self, path: &VirtualPath) -> Result<Option<u64>, FsError> {
        if in_namespace(path) {
            return Ok(None);
        }
        self.inner.kept_part(path)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn path(p: &str) -> VirtualPath {
        VirtualPath::parse(p.as_bytes()).unwrap()
    }

    #[test]
    fn classify_names_the_source_sink_and_directories() {
        assert_eq!(classify(&path("/.rightsize")), Some(BenchPath::Dir));
        assert_eq!(classify(&path("/.rightsize/zero")), Some(BenchPath::Dir));
        assert_eq!(classify(&path("/.rightsize/null")), Some(BenchPath::Dir));
        assert_eq!(
            classify(&path("/.rightsize/zero/1G")),
            Some(BenchPath::Zero {
                size_bytes: 1 << 30
            })
        );
        assert_eq!(
            classify(&path("/.rightsize/zero/100MB")),
            Some(BenchPath::Zero {
                size_bytes: 100_000_000
            })
        );
        assert_eq!(
            classify(&path("/.rightsize/zero/12345")),
            Some(BenchPath::Zero { size_bytes: 12345 })
        );
        assert_eq!(
            classify(&path("/.rightsize/null/x.bin")),
            Some(BenchPath::Null)
        );
        assert_eq!(classify(&path("/.rightsize/zero/banana")), None);
        assert_eq!(classify(&path("/.rightsizer/zero/1G")), None);
        assert_eq!(classify(&path("/pub/zero/1G")), None);
        assert_eq!(classify(&path("/.rightsize/zero/1G/x")), None);
    }

    #[test]
    fn namespace_is_prefix_by_component() {
        assert!(in_namespace(&path("/.rightsize/zero/banana")));
        assert!(!in_namespace(&path("/.rightsizer")));
        assert!(!in_namespace(&path("/")));
    }
}
