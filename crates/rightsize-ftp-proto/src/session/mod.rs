//! The server side of one FTP control connection, as a state machine.
//!
//! A [`Session`] is fed one command line at a time (already framed and
//! parsed by [`crate`]) and returns the [`Output`]s to act on: replies,
//! a transfer to run, a delay, a close. It never does I/O itself: file
//! system and listener requests go through a [`ServerHost`], and transfers
//! run in the driver, which reports how they ended. Guarantees:
//!
//! - exactly one final reply per command line (RFC 959 section 4.2), with the
//!   preliminary 150 of a transfer carried in its [`TransferPlan`];
//! - the same `331` to `USER` for known and unknown users, a delay and a
//!   count on failed logins (RFC 2577 section 5);
//! - `PORT`/`EPRT` only to the control connection's peer address and to
//!   ports of 1024 and above (RFC 2577 section 3);
//! - write commands only for [`Access::ReadWrite`] users;
//! - paths resolved with [`VirtualPath`], so none leaves the served root;
//! - `111`/`112` markers only in MODE E (a transfer's
//!   [`TransferPlan::markers`]), so a stream-mode client never sees one;
//! - the RIGHTSIZE extension (`rightsize.rs`) changes nothing for a client
//!   that did not send `OPTS RIGHTSIZE ON`; the driver must send notices
//!   only while [`Session::rightsize_on`] is true.

mod answer;
pub mod bench;
mod commands;
mod gridftp;
mod host;
pub mod listing;
mod port;
pub mod report;
mod rightsize;
mod tls;

#[cfg(test)]
mod tests;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::ops::RangeInclusive;
use std::time::Duration;

use crate::{Command, CommandError, Reply, VirtualPath};

pub use crate::PeerMessage;
pub use host::{
    Access, ChecksumJob, ChecksumOutcome, DataEndpoint, DirEntry, EntryKind, FsError, Metadata,
    Output, ServerHost, TransferKind, TransferOutcome, TransferPlan,
};
pub use rightsize::RINF_REFUSED;
pub use tls::TlsPolicy;

/// Failed logins before the connection is closed (vsftpd's default).
pub const MAX_FAILED_LOGINS: u32 = 3;

/// The pause before answering a failed login (vsftpd's default).
pub const FAILED_LOGIN_DELAY: Duration = Duration::from_secs(1);

/// The largest `SBUF` accepted: the largest buffer a peer may name.
pub use rightsize_tune::MAX_BUFFER_BYTES as MAX_SBUF_BYTES;

/// The sizes `SBUF` takes, bytes, before a transfer and during one.
const SBUF_SIZES: RangeInclusive<u64> = 1..=MAX_SBUF_BYTES;

/// What the 501 to an `SBUF` outside [`SBUF_SIZES`] says.
fn sbuf_sizes_text() -> String {
    format!(
        "SBUF takes {} to {} bytes.",
        SBUF_SIZES.start(),
        SBUF_SIZES.end()
    )
}

/// Commands held back while a transfer runs; more are refused with 503.
pub const MAX_QUEUED_COMMANDS: usize = 32;

/// Settings of a server session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionConfig {
    /// Whether `anonymous` and `ftp` may log in (read-only).
    pub anonymous: bool,
    /// The text of the 220 greeting.
    pub greeting: String,
    /// How long a client may take to log in.
    pub login_timeout: Duration,
    /// How long a logged-in client may stay silent between commands.
    pub idle_timeout: Duration,
    /// The server's UDP probe port, if the driver runs a probe responder:
    /// the reply to `OPTS RIGHTSIZE ON UDP=<port>` names it. `None` (the
    /// default) or `Some(0)`: the reply names none.
    pub probe_port: Option<u16>,
    /// Whether and how TLS is offered.
    pub tls: TlsPolicy,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            anonymous: true,
            greeting: "rightsize FTP server ready.".into(),
            login_timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(300),
            probe_port: None,
            tls: TlsPolicy::Off,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Login {
    AwaitingUser,
    AwaitingPass { user: String },
    LoggedIn { access: Access, user: String },
}

/// Long work the driver runs for the session; commands wait meanwhile.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Busy {
    Idle,
    Transfer,
    Checksum(ChecksumAnswer),
}

/// How the checksum's final reply is worded.
#[derive(Debug, Clone, PartialEq, Eq)]
enum ChecksumAnswer {
    /// `CKSM`: `213 <hex>`.
    Cksm,
    /// `HASH`: `213 SHA-256 0-<last> <hex> <path>`.
    Hash { size: u64, path: VirtualPath },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DataSetup {
    None,
    Passive(SocketAddr),
    Active(SocketAddr),
}

/// One control connection's state.
#[derive(Debug)]
pub struct Session {
    config: SessionConfig,
    peer: SocketAddr,
    login: Login,
    failed_logins: u32,
    cwd: VirtualPath,
    binary: bool,
    data: DataSetup,
    epsv_all: bool,
    rest: u64,
    /// MODE E restart ranges (`REST 0-29,30-89`) for the next retrieve.
    rest_ranges: Option<crate::mode_e::Ranges>,
    rename_from: Option<VirtualPath>,
    sbuf: Option<u64>,
    /// `MODE E`, and the connections a retrieve opens in it.
    extended: bool,
    parallelism: u32,
    /// `OPTS RETR markers=N;`: perf markers every N seconds during a MODE
    /// E retrieve; 0 for none.
    retr_markers_secs: u32,
    /// The markers of a MODE E store (`TREV` changes them).
    store_markers: crate::markers::MarkerSchedule,
    busy: Busy,
    /// ABOR came while [`Session::busy`]: it gets its own reply at the end,
    /// whether the work was stopped or had just finished.
    abort_asked: bool,
    quit_after_transfer: bool,
    queued: VecDeque<Result<Command, CommandError>>,
    /// `Some` while the RIGHTSIZE extension is on.
    rightsize: Option<rightsize::RightsizeState>,
    tls: tls::TlsState,
}

impl Session {
    /// A session for a client at `peer`, and the greeting to send.
    pub fn new(config: SessionConfig, peer: SocketAddr) -> (Session, Output) {
        let greeting = Output::Reply(Reply::trusted(220, config.greeting.clone()));
        let tls = tls::TlsState::new(config.tls);
        let session = Session {
            config,
            peer,
            login: Login::AwaitingUser,
            failed_logins: 0,
            cwd: VirtualPath::root(),
            binary: false,
            data: DataSetup::None,
            epsv_all: false,
            rest: 0,
            rest_ranges: None,
            rename_from: None,
            sbuf: None,
            extended: false,
            parallelism: 1,
            retr_markers_secs: 0,
            store_markers: crate::markers::MarkerSchedule::STORE,
            busy: Busy::Idle,
            abort_asked: false,
            quit_after_transfer: false,
            queued: VecDeque::new(),
            rightsize: None,
            tls,
        };
        (session, greeting)
    }

    /// How long the driver should wait for the next command before calling
    /// [`Session::timed_out`]; `None` while a transfer or a checksum runs.
    pub fn read_timeout(&self) -> Option<Duration> {
        match (&self.login, &self.busy) {
            (_, Busy::Transfer | Busy::Checksum(_)) => None,
            (Login::LoggedIn { .. }, Busy::Idle) => Some(self.config.idle_timeout),
            _ => Some(self.config.login_timeout),
        }
    }

    /// The client stayed silent past [`Session::read_timeout`].
    pub fn timed_out(&mut self) -> Vec<Output> {
        vec![
            Output::Reply(Reply::trusted(421, "Timeout.".into())),
            Output::Close,
        ]
    }

    /// The client sent a line longer than the codec accepts (vsftpd's answer).
    pub fn line_too_long(&mut self) -> Vec<Output> {
        vec![
            Output::Reply(Reply::trusted(500, "Input line too long.".into())),
            Output::Close,
        ]
    }

    /// The user name given with `USER`, while its password is awaited or
    /// once logged in (`anonymous` as given).
    pub fn user(&self) -> Option<&str> {
        match &self.login {
            Login::AwaitingUser => None,
            Login::AwaitingPass { user } | Login::LoggedIn { user, .. } => Some(user),
        }
    }

    /// Whether a user is logged in.
    pub fn logged_in(&self) -> bool {
        matches!(self.login, Login::LoggedIn { .. })
    }

    /// Whether the control connection is protected (after `AUTH TLS`,
    /// or implicit FTPS).
    pub fn control_protected(&self) -> bool {
        self.tls.control
    }

    /// Whether a transfer is running.
    pub fn is_transferring(&self) -> bool {
        self.busy == Busy::Transfer
    }

    /// Whether a checksum runs.
    pub fn is_checksumming(&self) -> bool {
        matches!(self.busy, Busy::Checksum(_))
    }

    /// Whether the client turned the RIGHTSIZE extension on (`OPTS
    /// RIGHTSIZE ON`, not since turned `OFF`). Send `RIGHTSIZE` notices
    /// only while this is true: a client that did not ask for them breaks
    /// on them.
    pub fn rightsize_on(&self) -> bool {
        self.rightsize.is_some()
    }

    /// Whether the driver may write a `RIGHTSIZE` notice now: the extension
    /// is on and a transfer runs (its 150 is written before its data
    /// flows, and its 226 only after [`Session::transfer_done`], which
    /// ends this). The driver must still write a notice only between whole
    /// replies, never in the middle of one.
    pub fn notices_allowed(&self) -> bool {
        self.is_transferring() && self.rightsize.is_some()
    }

    /// The client's UDP probe port from `OPTS RIGHTSIZE ON UDP=<port>`
    /// (1..=65535), while the extension is on; the probes go to the control
    /// connection's peer address at this port.
    pub fn client_probe_port(&self) -> Option<u16> {
        self.rightsize
            .and_then(|r| r.client_udp_port)
            .map(std::num::NonZeroU16::get)
    }

    /// Sets the server's UDP probe port named in later replies to `OPTS
    /// RIGHTSIZE ON UDP=<port>`, for a driver that opens its probe socket
    /// per session; see [`SessionConfig::probe_port`].
    pub fn set_probe_port(&mut self, port: Option<u16>) {
        self.config.probe_port = port;
    }

    /// Handles one parsed (or refused) command line.
    pub fn handle(
        &mut self,
        command: Result<Command, CommandError>,
        host: &mut dyn ServerHost,
        now_unix: i64,
    ) -> Vec<Output> {
        if self.busy != Busy::Idle {
            return self.during_transfer(command);
        }
        let command = match command {
            Ok(command) => command,
            Err(err) => {
                self.rename_from = None;
                return rightsize::refused_line(&err)
                    .unwrap_or_else(|| vec![Output::Reply(err.to_reply())]);
            }
        };
        // RNTO must come right after RNFR. REST holds until a transfer
        // starts (`commands::start` clears it), as in vsftpd.
        if !matches!(command, Command::Rnto(_) | Command::Rnfr(_)) {
            self.rename_from = None;
        }
        commands::dispatch(self, command, host, now_unix)
    }

    /// The transfer ended; the replies to send, then what the commands that
    /// arrived during it produce.
    pub fn transfer_done(
        &mut self,
        outcome: TransferOutcome,
        host: &mut dyn ServerHost,
        now_unix: i64,
    ) -> Vec<Output> {
        self.busy = Busy::Idle;
        let out = vec![Output::Reply(match &outcome {
            TransferOutcome::Complete { .. } => Reply::trusted(226, "Transfer complete.".into()),
            TransferOutcome::OpenFailed(FsError::PermissionDenied) => {
                Reply::trusted(550, "Permission denied.".into())
            }
            TransferOutcome::OpenFailed(FsError::IsADirectory) => {
                Reply::trusted(550, "Is a directory.".into())
            }
            TransferOutcome::OpenFailed(FsError::NotFound) => {
                Reply::trusted(550, "No such file or directory.".into())
            }
            TransferOutcome::OpenFailed(_) => Reply::trusted(550, "Failed to open file.".into()),
            TransferOutcome::DataConnectFailed(_) => {
                Reply::trusted(425, "Failed to establish connection.".into())
            }
            TransferOutcome::NoBuffers(why) => Reply::trusted(
                425,
                format!(
                    "No buffers for a data connection: {}.",
                    why.replace(['\r', '\n'], " ")
                ),
            ),
            TransferOutcome::NetworkError(why) => Reply::trusted(
                426,
                format!(
                    "Connection closed; transfer aborted: {}.",
                    why.replace(['\r', '\n'], " ").trim_end_matches('.')
                ),
            ),
            TransferOutcome::LocalError(_) => {
                Reply::trusted(451, "Local error in processing; transfer aborted.".into())
            }
            TransferOutcome::StorageFull(why) => Reply::trusted(
                452,
                format!(
                    "Insufficient storage space; nothing was kept: {}.",
                    why.replace(['\r', '\n'], " ").trim_end_matches('.')
                ),
            ),
            TransferOutcome::BadData(why) => Reply::trusted(
                451,
                format!("Transfer aborted: {}.", why.replace(['\r', '\n'], " ")),
            ),
            TransferOutcome::Aborted => {
                Reply::trusted(426, "Connection closed; transfer aborted.".into())
            }
        })];
        self.after_work(out, host, now_unix)
    }

    /// The checksum ended; its reply, then what the commands that arrived
    /// during it produce.
    pub fn checksum_done(
        &mut self,
        outcome: ChecksumOutcome,
        host: &mut dyn ServerHost,
        now_unix: i64,
    ) -> Vec<Output> {
        let Busy::Checksum(answer) = std::mem::replace(&mut self.busy, Busy::Idle) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        match (outcome, answer) {
            (ChecksumOutcome::Done(hex), ChecksumAnswer::Cksm) => {
                out.push(Output::Reply(Reply::trusted(213, hex)));
            }
            (ChecksumOutcome::Done(hex), ChecksumAnswer::Hash { size, path }) => {
                out.push(Output::Reply(Reply::trusted(
                    213,
                    format!(
                        "SHA-256 0-{} {hex} {}",
                        size.saturating_sub(1),
                        path.to_string().replace(['\r', '\n'], "?")
                    ),
                )));
            }
            (ChecksumOutcome::Failed(_), ChecksumAnswer::Cksm) => out.push(Output::Reply(
                Reply::trusted(550, "Could not compute the checksum.".into()),
            )),
            (ChecksumOutcome::Failed(_), ChecksumAnswer::Hash { .. }) => out.push(Output::Reply(
                Reply::trusted(550, "Could not compute the hash.".into()),
            )),
            (ChecksumOutcome::Aborted, _) => {
                out.push(Output::Reply(Reply::trusted(
                    426,
                    "Checksum aborted.".into(),
                )));
            }
        }
        self.after_work(out, host, now_unix)
    }

    /// After a transfer or a checksum (`out` holds its reply): ABOR's
    /// 226 if it came meanwhile (RFC 959: whether or not the work was
    /// still running), QUIT if it came, else the commands that waited, in
    /// order, until one starts long work again.
    fn after_work(
        &mut self,
        mut out: Vec<Output>,
        host: &mut dyn ServerHost,
        now_unix: i64,
    ) -> Vec<Output> {
        if std::mem::take(&mut self.abort_asked) {
            out.push(Output::Reply(Reply::trusted(
                226,
                "ABOR successful.".into(),
            )));
        }
        if self.quit_after_transfer {
            out.push(Output::Reply(Reply::trusted(221, "Goodbye.".into())));
            out.push(Output::Close);
            return out;
        }
        while let Some(command) = self.queued.pop_front() {
            let more = self.handle(command, host, now_unix);
            let started = more
                .iter()
                .any(|o| matches!(o, Output::Transfer(_) | Output::Checksum(_)));
            out.extend(more);
            if started || out.contains(&Output::Close) {
                break;
            }
        }
        out
    }

    /// Commands while a transfer or a checksum runs: ABOR, STAT, NOOP and
    /// QUIT are answered now, and during a transfer with the RIGHTSIZE
    /// extension on SBUF and RINF too; the rest wait for the end, in order.
    fn during_transfer(&mut self, command: Result<Command, CommandError>) -> Vec<Output> {
        if self.is_transferring()
            && let Some(out) = rightsize::during_transfer(self, &command)
        {
            return out;
        }
        match command {
            Ok(Command::Abor) if self.abort_asked => Vec::new(),
            Ok(Command::Abor) => {
                self.abort_asked = true;
                vec![Output::Abort]
            }
            Ok(Command::Stat(None)) => vec![Output::Reply(Reply::trusted(
                213,
                if self.is_transferring() {
                    "Transfer in progress."
                } else {
                    "Checksum in progress."
                }
                .into(),
            ))],
            Ok(Command::Noop) => vec![Output::Reply(Reply::trusted(200, "NOOP ok.".into()))],
            Ok(Command::Quit) => {
                self.quit_after_transfer = true;
                Vec::new()
            }
            other if self.queued.len() < MAX_QUEUED_COMMANDS => {
                self.queued.push_back(other);
                Vec::new()
            }
            _ => vec![Output::Reply(Reply::trusted(
                503,
                "Too many commands during a transfer.".into(),
            ))],
        }
    }

    fn access(&self) -> Option<Access> {
        match self.login {
            Login::LoggedIn { access, .. } => Some(access),
            _ => None,
        }
    }
}
