//! [`ClientError`]: everything `get` and `put` can fail with, each variant
//! naming the server (host and port), the command or file, and what the
//! server or the OS said, so one line tells a user what went wrong.

use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use rightsize_ftp_proto::checksum::Algorithm;
use rightsize_ftp_proto::{ArgError, ReplyParseError};
use rightsize_sys::socket::SocketError;

/// A failed `get` or `put`.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The host name did not resolve.
    #[error("resolve FTP server {server}")]
    Resolve {
        /// `host:port` from the URL.
        server: String,
        /// What the resolver said.
        #[source]
        source: io::Error,
    },
    /// The host name resolved to no address.
    #[error("resolve FTP server {server}: no address")]
    NoAddress {
        /// `host:port` from the URL.
        server: String,
    },
    /// The control connection could not be opened (refused, timed out,
    /// unreachable): said plainly for the common causes, with the socket
    /// layer's words (the call that failed) for the others.
    #[error(
        "connect to FTP server {server}{}: {}",
        resolved(server, addr),
        why_not(addr, cause)
    )]
    Connect {
        /// `host:port` from the URL.
        server: String,
        /// The address tried last.
        addr: SocketAddr,
        /// What the socket layer said (boxed: it is large).
        cause: Box<SocketError>,
    },
    /// Reading or writing the control connection failed.
    #[error("{op} on the control connection to {server}")]
    ControlIo {
        /// What was being done, e.g. `send RETR` or `read the reply to SIZE`.
        op: String,
        /// The server's address.
        server: SocketAddr,
        /// What the OS said.
        #[source]
        source: io::Error,
    },
    /// The server did not answer in time.
    #[error("{server} sent no reply to {op} within {timeout:?}")]
    ReplyTimeout {
        /// The command waited on (or `the greeting`).
        op: String,
        /// The server's address.
        server: SocketAddr,
        /// The limit (`Options::idle_timeout`).
        timeout: Duration,
    },
    /// The server closed the control connection.
    #[error("{server} closed the control connection instead of answering {op}")]
    Closed {
        /// The command waited on.
        op: String,
        /// The server's address.
        server: SocketAddr,
    },
    /// The server sent something that is not an FTP reply.
    #[error("{server} answered {op} with a malformed reply")]
    BadReply {
        /// The command waited on.
        op: String,
        /// The server's address.
        server: SocketAddr,
        /// What was wrong.
        #[source]
        source: ReplyParseError,
    },
    /// The server refused the login (530, or an account was required).
    #[error("{server} refused the login as \"{user}\": {reply}")]
    LoginRefused {
        /// The server's address.
        server: SocketAddr,
        /// The user name sent.
        user: String,
        /// The refusing reply, on one line.
        reply: String,
    },
    /// The server refused a command the transfer needs.
    #[error("{server} refused {command}: {reply}")]
    Refused {
        /// The server's address.
        server: SocketAddr,
        /// The command as sent (password hidden).
        command: String,
        /// The reply, on one line.
        reply: String,
    },
    /// `RETR`, `STOR` or `CKSM` of a remote file failed (missing file,
    /// permission, server-side disk full).
    #[error("{server}: {verb} \"{path}\" failed: {reply}")]
    RemoteFile {
        /// The server's address.
        server: SocketAddr,
        /// `RETR`, `STOR` or `CKSM`.
        verb: &'static str,
        /// The remote path as sent.
        path: String,
        /// The reply, on one line.
        reply: String,
    },
    /// A reply with the wrong code or an unusable argument (a `229` without
    /// a port, a `227` without an address).
    #[error("{server} answered {command} with \"{reply}\": {problem}")]
    Unexpected {
        /// The server's address.
        server: SocketAddr,
        /// The command.
        command: String,
        /// The reply, on one line.
        reply: String,
        /// What is wrong with it.
        problem: String,
    },
    /// The data connection could not be opened.
    #[error("open the data connection to {addr} ({mode})")]
    DataConnect {
        /// The address connected to or listened on.
        addr: SocketAddr,
        /// `EPSV`, `PASV`, `EPRT` or `PORT`.
        mode: &'static str,
        /// What the socket layer said (boxed: it is large).
        #[source]
        source: Box<SocketError>,
    },
    /// In active mode the server did not connect back in time.
    #[error(
        "{server} did not open the data connection to {listen} within {timeout:?} ({mode}); try without --active"
    )]
    AcceptTimeout {
        /// The server's control address.
        server: SocketAddr,
        /// Where the client listened.
        listen: SocketAddr,
        /// `EPRT` or `PORT`.
        mode: &'static str,
        /// The limit (`Options::connect_timeout`).
        timeout: Duration,
    },
    /// Reading or writing the data connection failed.
    #[error("{op} on the data connection with {peer}")]
    DataIo {
        /// What was being done.
        op: &'static str,
        /// The other end of the data connection.
        peer: SocketAddr,
        /// What the OS said.
        #[source]
        source: io::Error,
    },
    /// The data connection carried nothing for too long.
    #[error(
        "data connection with {peer} idle for {timeout:?} during {verb} \"{path}\" after {bytes} bytes"
    )]
    DataTimeout {
        /// The other end.
        peer: SocketAddr,
        /// `RETR` or `STOR`.
        verb: &'static str,
        /// The remote path.
        path: String,
        /// Bytes moved before it stalled.
        bytes: u64,
        /// The limit (`Options::idle_timeout`).
        timeout: Duration,
    },
    /// A local file could not be opened, read, written or renamed.
    #[error("{op} {path}")]
    Local {
        /// What was being done, e.g. `open`, `write`, `rename to`.
        op: &'static str,
        /// The local path.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: io::Error,
    },
    /// A user name, password or path that cannot be sent as an argument.
    #[error("the {what} cannot be sent in an FTP command")]
    Argument {
        /// `user name`, `password` or `path`.
        what: &'static str,
        /// Why.
        #[source]
        source: ArgError,
    },
    /// The download has no local name: the URL ends in `/` and no `-o`.
    #[error("the URL {url} names no file; give the remote file's path, or -o FILE")]
    NoFileName {
        /// The URL, password hidden.
        url: String,
    },
    /// The server announced a size and sent a different number of bytes.
    #[error("{server}: RETR \"{path}\" ended after {got_bytes} bytes, but SIZE said {size_bytes}")]
    ShortTransfer {
        /// The server's address.
        server: SocketAddr,
        /// The remote path.
        path: String,
        /// Bytes received.
        got_bytes: u64,
        /// The `213` answer to `SIZE`.
        size_bytes: u64,
    },
    /// `--verify` found different checksums.
    #[error("checksum mismatch for \"{path}\": {algorithm} here {local}, on {server} {remote}")]
    ChecksumMismatch {
        /// The server's address.
        server: SocketAddr,
        /// The remote path.
        path: String,
        /// The algorithm used.
        algorithm: Algorithm,
        /// Computed over the bytes moved.
        local: String,
        /// The server's answer.
        remote: String,
    },
    /// `rightsize test`/`doctor` against a server without the benchmark
    /// source and sink (not `rightsize serve`).
    #[error(
        "{server} is not `rightsize serve`: no RIGHTSIZE in its FEAT and no benchmark source (SIZE /.rightsize/zero/1: {reply}); a throughput test needs /.rightsize/zero and /.rightsize/null; `rightsize ping` still measures its round trips"
    )]
    NoBenchmark {
        /// The server's address.
        server: SocketAddr,
        /// Its answer to the `SIZE` of the zero source.
        reply: String,
    },
    /// `SIGINT` or `SIGTERM` arrived while the caller caught them
    /// (`rightsize_sys::signals::StopSignals`).
    #[error("interrupted by {signal}")]
    Interrupted {
        /// `SIGINT` or `SIGTERM`.
        signal: &'static str,
    },
    /// `-P` asked for something it cannot do.
    #[error("{why}")]
    Parallel {
        /// Why.
        why: &'static str,
    },
    /// `-P` needs GridFTP's MODE E, and the server refused it.
    #[error("{server} does not send over parallel streams (MODE E answered \"{reply}\"); drop -P")]
    NoParallel {
        /// The server's address.
        server: SocketAddr,
        /// The reply, on one line.
        reply: String,
    },
    /// TLS was required (`--tls`, `ftps://`) and the server has none.
    #[error(
        "{server} {answer}: it offers no FTPS (explicit TLS, RFC 4217); use ftps:// if it speaks implicit FTPS, or --no-tls to transfer in clear"
    )]
    NoTls {
        /// The server's address.
        server: SocketAddr,
        /// What it answered, quoted.
        answer: String,
    },
    /// TLS could not be set up (a `--cacert` file, no system roots).
    #[error("TLS with {server} (verifying {verify})")]
    TlsSetup {
        /// The server's address.
        server: SocketAddr,
        /// How the certificate was to be checked.
        verify: String,
        /// What went wrong.
        #[source]
        source: Box<crate::tls::TlsError>,
    },
    /// A TLS handshake failed: most often the certificate did not verify.
    #[error(
        "TLS handshake on the {channel} connection to {peer} for \"{name}\" failed (certificate checked {verify}); trust the server with --cacert FILE or --pin-sha256 HEX, skip the check with --insecure, or transfer in clear with --no-tls"
    )]
    TlsHandshake {
        /// The connection's other end.
        peer: SocketAddr,
        /// `control` or `data`.
        channel: &'static str,
        /// The name the certificate was checked for.
        name: String,
        /// How it was checked.
        verify: String,
        /// What TLS said.
        #[source]
        source: Box<crate::tls::TlsError>,
    },
    /// `ftps://` with `--no-tls`.
    #[error(
        "{url} is implicit FTPS (TLS from the first byte), which --no-tls forbids; write ftp:// to transfer in clear"
    )]
    ImplicitWithoutTls {
        /// The URL.
        url: String,
    },
    /// A MODE E transfer's streams failed.
    #[error("{server}: {verb} \"{path}\" over parallel streams failed: {why}")]
    Streams {
        /// The server's address.
        server: SocketAddr,
        /// `RETR` or `STOR`.
        verb: &'static str,
        /// The remote path.
        path: String,
        /// What went wrong.
        why: String,
    },
    /// A resume needs `REST`, and the server refused it.
    #[error("{server} cannot resume \"{path}\" at byte {offset}: REST answered \"{reply}\"")]
    NoRestart {
        /// The server's address.
        server: SocketAddr,
        /// The remote path.
        path: String,
        /// Where the transfer would have resumed.
        offset: u64,
        /// The reply, on one line.
        reply: String,
    },
    /// A tree transfer (`-r`) cannot go on.
    #[error("{why}")]
    Tree {
        /// Why.
        why: String,
    },
    /// The telemetry file could not be created or started.
    #[error(transparent)]
    TelemetryStart(#[from] crate::telemetry::StartError),
    /// Watching the data connection (telemetry, tuner) failed.
    #[error("telemetry of the data connection")]
    Telemetry(#[from] rightsize_sys::telemetry::TelemetryError),
}

impl ClientError {
    /// What failed, in one stable word for programs (`--json`'s
    /// `error.kind`): `connect`, `control`, `login`, `server` (a refusal
    /// in the server's reply), `data`, `local`, `short`, `checksum`,
    /// `interrupted`, `tls`, `tree`, `telemetry`.
    pub fn kind(&self) -> &'static str {
        use ClientError as E;
        match self {
            E::Resolve { .. } | E::NoAddress { .. } | E::Connect { .. } => "connect",
            E::ControlIo { .. }
            | E::ReplyTimeout { .. }
            | E::Closed { .. }
            | E::BadReply { .. }
            | E::Unexpected { .. } => "control",
            E::LoginRefused { .. } => "login",
            E::Refused { .. }
            | E::RemoteFile { .. }
            | E::NoRestart { .. }
            | E::NoParallel { .. } => "server",
            E::DataConnect { .. }
            | E::AcceptTimeout { .. }
            | E::DataIo { .. }
            | E::DataTimeout { .. }
            | E::Parallel { .. }
            | E::Streams { .. } => "data",
            E::Local { .. } | E::Argument { .. } | E::NoFileName { .. } | E::NoBenchmark { .. } => {
                "local"
            }
            E::ShortTransfer { .. } => "short",
            E::ChecksumMismatch { .. } => "checksum",
            E::Interrupted { .. } => "interrupted",
            E::NoTls { .. }
            | E::TlsSetup { .. }
            | E::TlsHandshake { .. }
            | E::ImplicitWithoutTls { .. } => "tls",
            E::Tree { .. } => "tree",
            E::TelemetryStart(_) | E::Telemetry(_) => "telemetry",
        }
    }
}

/// The error and its causes, on one line (what `rightsize: ...` prints).
pub fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}

/// Why a connect failed, as a user says it: `connection refused by ADDR`
/// rather than the call and descriptor.
fn why_not(addr: &SocketAddr, cause: &SocketError) -> String {
    let io = match cause {
        SocketError::Os { source, .. } => Some(source),
        _ => None,
    };
    match io.map(std::io::Error::kind) {
        Some(io::ErrorKind::ConnectionRefused) => {
            format!("connection refused by {addr} (nothing listens on that port)")
        }
        Some(io::ErrorKind::TimedOut) => format!("no answer from {addr} (timed out)"),
        Some(io::ErrorKind::HostUnreachable) => format!("host {} unreachable", addr.ip()),
        Some(io::ErrorKind::NetworkUnreachable) => {
            format!("network unreachable for {}", addr.ip())
        }
        _ => chain(cause),
    }
}

/// ` (addr)` when the host name resolved to something else than it says.
fn resolved(server: &str, addr: &SocketAddr) -> String {
    if server == addr.to_string() {
        String::new()
    } else {
        format!(" ({addr})")
    }
}
