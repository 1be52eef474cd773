//! The real [`ServerHost`]: the served directory through
//! `rightsize_sys::rootfs`, passive listeners through
//! `rightsize_sys::socket`, users from the password file.

use rightsize_tune::TunerSpec;
use rightsize_tune::host::SysctlKey;
use rightsize_tune::units::Bytes;
use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use rightsize_ftp_proto::VirtualPath;
use rightsize_ftp_proto::session::{Access, DirEntry, EntryKind, FsError, Metadata, ServerHost};
use rightsize_sys::rootfs::{Keep, Kind, PendingFile, RootError, Stat};
use rightsize_sys::socket;

use super::Shared;
use super::data::StoreTarget;

/// Checksums `CKSM` offers, strongest first (FEAT lists them in this order).
const CHECKSUMS: &[&str] = &["SHA256", "MD5", "ADLER32"];

/// Backlog of a passive listener: one client, which in MODE E may open
/// all its connections before STOR (the Globus server answers STOR only
/// then, so clients do).
const PASSIVE_BACKLOG: i32 = rightsize_ftp_proto::mode_e::MAX_PARALLELISM as i32;

/// One session's view of the server.
#[derive(Debug)]
pub(super) struct FsHost {
    shared: Arc<Shared>,
    /// The control connection's local address: passive listeners bind here.
    local_ip: IpAddr,
    /// The listener of the last PASV/EPSV, not yet used.
    passive: Option<(SocketAddr, TcpListener)>,
    /// The tuner the client chose with `SITE RIGHTSIZE TUNE`, instead of
    /// `--tune`, for this session's later data connections.
    tune: Option<TunerSpec>,
}

fn fs_error(e: RootError) -> FsError {
    match e {
        RootError::NotFound { .. } => FsError::NotFound,
        RootError::PermissionDenied { .. }
        | RootError::Escapes { .. }
        | RootError::InvalidPath { .. } => FsError::PermissionDenied,
        RootError::NotADirectory { .. } => FsError::NotADirectory,
        RootError::IsADirectory { .. } | RootError::NotAFile { .. } => FsError::IsADirectory,
        RootError::AlreadyExists { .. } => FsError::AlreadyExists,
        RootError::NotEmpty { .. } => FsError::NotEmpty,
        other => FsError::Other(other.to_string()),
    }
}

fn metadata(stat: &Stat) -> Option<Metadata> {
    let kind = match stat.kind {
        Kind::File => EntryKind::File,
        Kind::Dir => EntryKind::Dir,
        _ => return None,
    };
    Some(Metadata {
        kind,
        size: if kind == EntryKind::File {
            stat.size_bytes
        } else {
            0
        },
        modified_unix: stat.modified_unix,
        writable: stat.mode & 0o200 != 0,
    })
}

impl FsHost {
    pub(super) fn new(shared: Arc<Shared>, local_ip: IpAddr) -> Self {
        FsHost {
            shared,
            local_ip,
            passive: None,
            tune: None,
        }
    }

    /// The tuner the client chose for this session, if it chose one.
    pub(super) fn tune(&self) -> Option<&TunerSpec> {
        self.tune.as_ref()
    }

    /// The passive listener opened at `addr`, for the transfer that uses it.
    /// A second handle on the passive listener at `addr`, which stays
    /// (MODE E keeps it for the next transfers).
    pub(super) fn share_listener(&self, addr: SocketAddr) -> Option<TcpListener> {
        match &self.passive {
            Some((at, listener)) if *at == addr => listener.try_clone().ok(),
            _ => None,
        }
    }

    pub(super) fn take_listener(&mut self, addr: SocketAddr) -> Option<TcpListener> {
        match self.passive.take() {
            Some((at, listener)) if at == addr => Some(listener),
            other => {
                self.passive = other;
                None
            }
        }
    }

    /// Opens a file to send from `offset` (REST).
    pub(super) fn open_source(&mut self, path: &VirtualPath, offset: u64) -> Result<File, FsError> {
        let mut file = self
            .shared
            .root
            .open_read(path.relative_bytes())
            .map_err(fs_error)?;
        if offset > 0 {
            file.seek(SeekFrom::Start(offset))
                .map_err(|e| FsError::Other(e.to_string()))?;
        }
        Ok(file)
    }

    /// Starts a store that appears under its name only when complete.
    pub(super) fn open_sink(
        &mut self,
        path: &VirtualPath,
        offset: u64,
        append: bool,
    ) -> Result<Box<dyn StoreTarget>, FsError> {
        let keep = match (append, offset) {
            (true, _) => Keep::Everything,
            (false, 0) => Keep::Nothing,
            (false, n) => Keep::Prefix(n),
        };
        let pending = self
            .shared
            .root
            .begin_store(path.relative_bytes(), keep)
            .map_err(fs_error)?;
        Ok(Box::new(Pending(pending)))
    }

    /// Starts an adjusted store (ESTO A): the file keeps what it has, and
    /// every byte lands `adjust` bytes further than the client numbers
    /// it; the file appears changed only when complete, as with STOR.
    pub(super) fn open_adjusted_sink(
        &mut self,
        path: &VirtualPath,
        adjust: u64,
    ) -> Result<Box<dyn StoreTarget>, FsError> {
        let pending = self
            .shared
            .root
            .begin_store(path.relative_bytes(), Keep::Everything)
            .map_err(fs_error)?;
        Ok(Box::new(Adjusted {
            inner: Pending(pending),
            adjust,
            written: 0,
        }))
    }

    fn bind_passive(
        &self,
        request: &socket::BufferRequest,
    ) -> Result<(SocketAddr, TcpListener), String> {
        let Some((low, high)) = self.shared.config.passive_ports else {
            let (listener, _) =
                socket::listen(SocketAddr::new(self.local_ip, 0), request, PASSIVE_BACKLOG)
                    .map_err(|e| e.to_string())?;
            let addr = listener.local_addr().map_err(|e| e.to_string())?;
            return Ok((addr, listener));
        };
        let span = u32::from(high - low) + 1;
        let start = self.shared.next_passive.fetch_add(1, Ordering::Relaxed) % span;
        let mut last_error = String::from("no port in the passive range is free");
        for i in 0..span {
            let port = low + u16::try_from((start + i) % span).unwrap_or(0);
            match socket::listen(
                SocketAddr::new(self.local_ip, port),
                request,
                PASSIVE_BACKLOG,
            ) {
                Ok((listener, _)) => return Ok((SocketAddr::new(self.local_ip, port), listener)),
                Err(e) => last_error = e.to_string(),
            }
        }
        Err(last_error)
    }
}

/// A store in progress, as the data connection sees it.
#[derive(Debug)]
struct Pending(PendingFile);

impl StoreTarget for Pending {
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.0.file().write_all(bytes)
    }

    fn write_at(&mut self, offset: u64, bytes: &[u8]) -> io::Result<()> {
        std::os::unix::fs::FileExt::write_all_at(self.0.file(), bytes, offset)
    }

    fn commit(self: Box<Self>) -> io::Result<()> {
        self.0
            .commit()
            .map(|_| ())
            .map_err(|e| io::Error::other(e.to_string()))
    }

    fn keep(self: Box<Self>) -> io::Result<Option<u64>> {
        self.0.keep().map_err(|e| io::Error::other(e.to_string()))
    }
}

/// An ESTO A store: offsets shifted by `adjust`; in stream mode the bytes
/// follow each other from `adjust` on.
#[derive(Debug)]
struct Adjusted {
    inner: Pending,
    adjust: u64,
    /// Bytes written in stream mode so far.
    written: u64,
}

impl Adjusted {
    fn at(&self, offset: u64) -> io::Result<u64> {
        self.adjust.checked_add(offset).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "ESTO A {}: block offset {offset} goes past the largest file offset",
                    self.adjust
                ),
            )
        })
    }
}

impl StoreTarget for Adjusted {
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        let at = self.at(self.written)?;
        self.inner.write_at(at, bytes)?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    fn write_at(&mut self, offset: u64, bytes: &[u8]) -> io::Result<()> {
        let at = self.at(offset)?;
        self.inner.write_at(at, bytes)
    }

    fn commit(self: Box<Self>) -> io::Result<()> {
        Box::new(self.inner).commit()
    }

    /// An `ESTO` part is not kept: `REST` and `STOR` could not continue it.
    fn keep(self: Box<Self>) -> io::Result<Option<u64>> {
        Ok(None)
    }
}

impl ServerHost for FsHost {
    fn metadata(&mut self, path: &VirtualPath) -> Result<Metadata, FsError> {
        let stat = self
            .shared
            .root
            .metadata(path.relative_bytes())
            .map_err(fs_error)?;
        metadata(&stat).ok_or(FsError::NotFound)
    }

    fn read_dir(&mut self, path: &VirtualPath) -> Result<Vec<DirEntry>, FsError> {
        let entries = self
            .shared
            .root
            .read_dir(path.relative_bytes())
            .map_err(fs_error)?;
        Ok(entries
            .into_iter()
            .filter_map(|entry| {
                Some(DirEntry {
                    metadata: metadata(&entry.stat)?,
                    name: entry.name,
                })
            })
            .collect())
    }

    fn make_dir(&mut self, path: &VirtualPath) -> Result<(), FsError> {
        self.shared
            .root
            .create_dir(path.relative_bytes())
            .map_err(fs_error)
    }

    fn kept_part(&mut self, path: &VirtualPath) -> Result<Option<u64>, FsError> {
        self.shared
            .root
            .kept_part(path.relative_bytes())
            .map_err(fs_error)
    }

    fn remove_dir(&mut self, path: &VirtualPath) -> Result<(), FsError> {
        self.shared
            .root
            .remove_dir(path.relative_bytes())
            .map_err(fs_error)
    }

    fn remove_file(&mut self, path: &VirtualPath) -> Result<(), FsError> {
        self.shared
            .root
            .remove_file(path.relative_bytes())
            .map_err(fs_error)
    }

    fn rename(&mut self, from: &VirtualPath, to: &VirtualPath) -> Result<(), FsError> {
        self.shared
            .root
            .rename(from.relative_bytes(), to.relative_bytes())
            .map_err(fs_error)
    }

    fn checksums(&self) -> &[&'static str] {
        CHECKSUMS
    }

    fn open_passive(&mut self, sbuf: Option<u64>) -> Result<SocketAddr, String> {
        // A new PASV replaces an unused listener (RFC 959: the last one counts).
        self.passive = None;
        let request = self.shared.listener_request(sbuf, self.tune.as_ref());
        let (addr, listener) = self.bind_passive(&request)?;
        self.passive = Some((addr, listener));
        Ok(addr)
    }

    fn authenticate(&mut self, user: &str, password: &[u8]) -> Option<Access> {
        self.shared.config.users.as_ref()?.verify(user, password)
    }

    fn tcp_settings(&mut self) -> Option<Vec<(String, String)>> {
        // This process's network namespace: the per-namespace values of the
        // host the server runs on, and the host-wide net.core ones.
        let settings = SysctlKey::ALL
            .into_iter()
            .filter_map(|key| {
                let value = rightsize_sys::sysctl::read_key(key.name()).ok()?;
                Some((
                    key.name().to_owned(),
                    value.split_whitespace().collect::<Vec<_>>().join(" "),
                ))
            })
            .collect();
        Some(settings)
    }

    fn status(&mut self) -> Vec<String> {
        self.shared
            .budget_use()
            .map(|u| {
                vec![format!(
                    "Buffer budget: {} held of {} by {} data connection(s), which want {}",
                    Bytes(u.held).human_si(),
                    Bytes(u.limit).human_si(),
                    u.connections,
                    Bytes(u.wanted).human_si()
                )]
            })
            .unwrap_or_default()
    }

    fn set_tuner(&mut self, spec: &str) -> Result<String, String> {
        let spec: TunerSpec = spec.parse().map_err(|e| format!("{e}"))?;
        if self.shared.budget.is_some() && matches!(spec, TunerSpec::Kernel | TunerSpec::Stock) {
            return Err(format!(
                "{spec} leaves the buffers to the kernel, which no budget bounds: this server has a buffer budget; accepted: auto, drs, sobas, freebsd, static:SIZE"
            ));
        }
        let name = spec.to_string();
        self.tune = Some(spec);
        Ok(name)
    }
}
