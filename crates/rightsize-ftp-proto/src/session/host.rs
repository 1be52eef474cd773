//! What a server session asks of the world, and what it hands back.
//!
//! The session decides; a [`ServerHost`] does. The real host (in the FTP
//! driver crate) maps virtual paths under the served root, opens listeners
//! with rightsize's socket layer and checks passwords; tests use an in-memory
//! host. Transfers and checksums are long-running, so the session does not
//! run them: it returns a [`TransferPlan`] or a [`ChecksumJob`] and is told
//! the [`TransferOutcome`] or the [`ChecksumOutcome`].

use std::net::SocketAddr;
use std::time::Duration;

use crate::{PeerMessage, Reply, VirtualPath};

pub use super::listing::{DirEntry, EntryKind, Metadata};

/// What a logged-in user may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Read and list (anonymous users, and users without write permission).
    ReadOnly,
    /// Also STOR, APPE, DELE, MKD, RMD, RNFR, RNTO.
    ReadWrite,
}

/// Why a file-system request failed; the session turns it into a reply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FsError {
    /// No such file or directory.
    #[error("no such file or directory")]
    NotFound,
    /// The operating system refused, or the path leaves the served root.
    #[error("permission denied")]
    PermissionDenied,
    /// A directory was expected.
    #[error("not a directory")]
    NotADirectory,
    /// A file was expected.
    #[error("is a directory")]
    IsADirectory,
    /// The target exists.
    #[error("already exists")]
    AlreadyExists,
    /// The directory is not empty.
    #[error("directory not empty")]
    NotEmpty,
    /// The request is not supported for this path (a virtual file).
    #[error("not supported here")]
    Unsupported,
    /// Anything else, with the OS's words.
    #[error("{0}")]
    Other(String),
}

/// The world a server session runs in.
pub trait ServerHost {
    /// Metadata of a path.
    fn metadata(&mut self, path: &VirtualPath) -> Result<Metadata, FsError>;
    /// The entries of a directory, in the order to list them.
    fn read_dir(&mut self, path: &VirtualPath) -> Result<Vec<DirEntry>, FsError>;
    /// Creates a directory.
    fn make_dir(&mut self, path: &VirtualPath) -> Result<(), FsError>;
    /// Removes an empty directory.
    fn remove_dir(&mut self, path: &VirtualPath) -> Result<(), FsError>;
    /// Removes a file.
    fn remove_file(&mut self, path: &VirtualPath) -> Result<(), FsError>;
    /// Renames a file or directory.
    fn rename(&mut self, from: &VirtualPath, to: &VirtualPath) -> Result<(), FsError>;
    /// The checksum algorithms offered (`CKSM`, upper case, e.g. `SHA256`).
    fn checksums(&self) -> &[&'static str];
    /// Opens a passive-mode listener on the control connection's local
    /// address, and returns its address. `sbuf` is the buffer size the client
    /// asked for with `SBUF`, bytes: the listener gets it before `listen()`
    /// so the accepted connection's window scale can carry it.
    fn open_passive(&mut self, sbuf: Option<u64>) -> Result<SocketAddr, String>;
    /// Checks a user's password; `None` for an unknown user or a wrong
    /// password alike.
    fn authenticate(&mut self, user: &str, password: &[u8]) -> Option<Access>;
    /// Lines about the server as a whole for `STAT` (e.g. its buffer
    /// budget's use); none by default.
    fn status(&mut self) -> Vec<String> {
        Vec::new()
    }
    /// This host's TCP settings for `SITE RIGHTSIZE HOST`, one
    /// `name=value` pair each as `sysctl` names and prints them
    /// (`net.ipv4.tcp_rmem=4096 131072 6291456`); `None` where the host
    /// cannot tell (the default).
    fn tcp_settings(&mut self) -> Option<Vec<(String, String)>> {
        None
    }
    /// `SITE RIGHTSIZE PART <path>`: the bytes of a cut upload to `path`
    /// that the host kept, hidden, for `REST` and `STOR` to continue;
    /// `None` if there is none (the default: nothing is kept).
    fn kept_part(&mut self, path: &VirtualPath) -> Result<Option<u64>, FsError> {
        let _ = path;
        Ok(None)
    }
    /// `SITE RIGHTSIZE TUNE <spec>`: the tuner of this session's later data
    /// connections. `Ok` with the canonical name, or `Err` with why the
    /// spec is refused and what is accepted. Refused by default.
    fn set_tuner(&mut self, spec: &str) -> Result<String, String> {
        Err(format!(
            "this server cannot choose a tuner per session (\"{spec}\")"
        ))
    }
}

/// Where the data connection comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataEndpoint {
    /// Accept on the listener [`ServerHost::open_passive`] opened (kept
    /// for the next transfers in MODE E, used up otherwise).
    Passive(SocketAddr),
    /// Connect to the client's address (PORT/EPRT, already checked).
    Active(SocketAddr),
}

/// What a transfer reads from or writes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransferKind {
    /// Send a file from `offset` (RETR).
    Retrieve {
        /// The file.
        path: VirtualPath,
        /// Where to start (REST).
        offset: u64,
        /// In MODE E, the byte ranges the client has already (REST with
        /// ranges): only the rest is sent. Empty otherwise.
        done: crate::mode_e::Ranges,
        /// `ERET P`: send only this many bytes from `offset` (fewer if the
        /// file ends first); in MODE E the blocks are numbered from 0.
        /// `None`: to the end (RETR).
        length: Option<u64>,
    },
    /// Send a listing already formatted (LIST, NLST, MLSD).
    Listing(Vec<u8>),
    /// Receive into a file (STOR at `offset`, or APPE).
    Store {
        /// The file.
        path: VirtualPath,
        /// Where to start writing (REST); 0 truncates.
        offset: u64,
        /// APPE: write at the end of what is there.
        append: bool,
        /// `ESTO A`: write each block at its offset plus this, into the
        /// file as it is (nothing is truncated; `offset` and `append` are
        /// then 0 and false). `None`: STOR or APPE.
        adjust: Option<u64>,
    },
}

/// A transfer for the driver to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransferPlan {
    /// Which transfer.
    pub kind: TransferKind,
    /// How to reach the client.
    pub endpoint: DataEndpoint,
    /// The buffer size the client asked for with `SBUF`, bytes.
    pub sbuf: Option<u64>,
    /// `MODE E`: send in extended blocks over this many connections
    /// (`OPTS RETR Parallelism=`), each connected to the endpoint, which is
    /// then always active. `None`: stream mode, one connection.
    pub extended: Option<u32>,
    /// The 150 reply to send once the source or sink is open, before the
    /// data connection.
    pub start_reply: Reply,
    /// The `111`/`112` markers to send while the transfer runs
    /// (`crate::markers`); [`crate::markers::MarkerSchedule::NONE`] in
    /// stream mode.
    pub markers: crate::markers::MarkerSchedule,
    /// `PROT P`: the data connections are TLS (the server's side of the
    /// handshake, whichever end connects).
    pub private: bool,
}

/// How a transfer ended, as the driver saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransferOutcome {
    /// Every byte went through and the data connection closed cleanly.
    Complete {
        /// Bytes moved.
        bytes: u64,
    },
    /// The file could not be opened or created (before the 150).
    OpenFailed(FsError),
    /// The data connection could not be made (after the 150).
    DataConnectFailed(String),
    /// No buffers for a data connection (the server's buffer budget is
    /// spent, before the 150): the reply says why.
    NoBuffers(String),
    /// The data connection broke mid-transfer.
    NetworkError(String),
    /// Reading or writing the local file failed (an I/O error).
    LocalError(String),
    /// The disk (or the user's quota) is full: an upload could not be
    /// kept (RFC 959's 452).
    StorageFull(String),
    /// The client's data broke the protocol (a MODE E block out of place):
    /// the reply says what was wrong.
    BadData(String),
    /// The client sent ABOR.
    Aborted,
}

impl std::fmt::Display for TransferOutcome {
    /// For a log line: `complete, 1000 bytes`, `network error: ...`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TransferOutcome::Complete { bytes } => write!(f, "complete, {bytes} bytes"),
            TransferOutcome::OpenFailed(e) => write!(f, "not opened: {e}"),
            TransferOutcome::DataConnectFailed(why) => write!(f, "no data connection: {why}"),
            TransferOutcome::NoBuffers(why) => write!(f, "no buffers: {why}"),
            TransferOutcome::NetworkError(why) => write!(f, "network error: {why}"),
            TransferOutcome::LocalError(why) => write!(f, "local error: {why}"),
            TransferOutcome::StorageFull(why) => write!(f, "storage full: {why}"),
            TransferOutcome::BadData(why) => write!(f, "bad data: {why}"),
            TransferOutcome::Aborted => write!(f, "aborted by the client"),
        }
    }
}

/// A checksum for the driver to compute (`CKSM`, `HASH`): the file is
/// read to its end, which may take minutes, so the driver computes it
/// beside the session, as it runs a transfer: `ABOR` stops it, `STAT`
/// and `NOOP` are answered meanwhile, and other commands wait.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChecksumJob {
    /// The file, a regular file when the job was made.
    pub path: VirtualPath,
    /// One of [`ServerHost::checksums`].
    pub algorithm: crate::checksum::Algorithm,
    /// Where to start.
    pub offset: u64,
    /// How many bytes from `offset`; `None`: to the end.
    pub length: Option<u64>,
}

/// How a checksum job ended, as the driver saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChecksumOutcome {
    /// The checksum, lowercase hex.
    Done(String),
    /// The file could not be opened or read.
    Failed(FsError),
    /// The client sent ABOR.
    Aborted,
}

/// What the driver must do, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// Send this reply.
    Reply(Reply),
    /// Wait this long before the next output (after a failed login).
    Delay(Duration),
    /// Run this transfer; report its end with `Session::transfer_done`.
    Transfer(TransferPlan),
    /// Compute this checksum; report its end with `Session::checksum_done`.
    Checksum(ChecksumJob),
    /// Stop the running transfer or checksum; it then ends as
    /// [`TransferOutcome::Aborted`] or [`ChecksumOutcome::Aborted`].
    Abort,
    /// Hand this to the running transfer's tuner (the RIGHTSIZE extension:
    /// the client's in-transfer `SBUF` or `RINF`); drop it if the transfer
    /// has none. The 200 that acknowledges it follows. Convert it with
    /// [`PeerMessage::to_report`] and check it with
    /// [`rightsize_tune::PeerReport::check`] before the tuner reads it.
    Peer(PeerMessage),
    /// Start TLS on the control connection after the replies before
    /// this (`AUTH TLS`'s 234): the client's next bytes are its
    /// handshake, and no command line may be read in clear after the
    /// `AUTH` line.
    StartTls,
    /// Close the control connection after the replies before this.
    Close,
}
