//! The FTP client (`rightsize get` / `rightsize put`): one file per call,
//! in binary, over a data connection whose buffers are set before the
//! handshake and read back.
//!
//! Sequence (see `docs/ftp-interop.md` for why each step): the
//! `220` greeting (over TLS at once for `ftps://`), FTPS if
//! [`Options::tls`] asks for it (`FEAT` before login when opportunistic,
//! `AUTH TLS`, the handshake, `PBSZ 0`, `PROT P`; see `secure`),
//! `USER`/`PASS` (a `230` right after `USER` ends the
//! login), `FEAT` (500/502 means "nothing"), `TYPE I` (before `EPSV`: the
//! Globus server binds the type at `PASV`/`EPSV` time), for a download
//! `SIZE`, then `SBUF` if asked for and offered, the data connection
//! (`EPSV`, else `PASV`; with `--active` `EPRT` or `PORT`), `RETR`/`STOR`,
//! the bytes, the `226`, and with `verify` the Globus `CKSM`.
//!
//! Guarantees:
//! - Every connect, accept and read has a timeout ([`Options`]); no server
//!   behaviour makes a call hang past it.
//! - Passive data connections go to the control connection's peer,
//!   whatever address a `227` names (as Python's ftplib does); in active
//!   mode only a connection from that peer is accepted.
//! - A download never leaves a partial or unverified file under the
//!   requested name: it is written to `.NAME.rightsize-part` in the same
//!   directory (locked while written), fsynced, and renamed only after the
//!   `226`, the full `SIZE` and a matching checksum. A download that stops
//!   (a failure, or `SIGINT`/`SIGTERM` while the caller catches them) keeps
//!   the part file's bytes for [`Options::resume`]; a checksum mismatch
//!   removes them.
//! - Against servers other than rightsize, only what they advertise is used
//!   (with the GridFTP exception documented in `features`).

mod bench;
mod control;
mod data;
mod error;
mod features;
mod listing;
mod local;
mod parallel;
mod ping;
mod pump;
mod secure;
mod session;
mod transfer;
mod tree;

use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::time::Duration;

use rightsize_ftp_proto::checksum::Algorithm;
use rightsize_ftp_proto::url::FtpUrl;
use rightsize_sys::socket::{Applied, BufferRequest};
use rightsize_sys::tcp_info::TcpInfoError;
use rightsize_tune::TunerSpec;
use rightsize_tune::tcpinfo::TcpInfoSample;
use rightsize_tune::telemetry::BufferSummary;
use rightsize_tune::write_size::WriteSize;
use serde::Serialize;

pub use bench::{BenchDirection, BenchLimit, BenchPlan, BenchReport, bench};
pub use data::DataMode;
pub use error::{ClientError, chain};
pub use features::Features;
pub use listing::MAX_LISTING_BYTES;
pub use local::{PART_SUFFIX, kept_bytes, part_path, ranges_path};
pub use ping::{PingOptions, PingProbe, PingReport, ping};
pub use rightsize_sys::telemetry::TunerSummary;
pub use secure::{TlsMode, TlsOptions, TlsReport};
pub use transfer::{NO_SERVER_CHECKSUM, STDIN, local_target};
pub use tree::{FileFailure, TreeObserver, TreeProgress, TreeReport, get_tree, put_tree};

/// Downloads `url` to `output`: over one data connection, or with
/// [`Options::streams`] over several in MODE E (see the module
/// documentation).
pub fn get(
    url: &FtpUrl,
    output: &Output,
    options: &Options,
    observer: &mut dyn Observer,
) -> Result<Report, ClientError> {
    if options.streams > 1 || options.streams == AUTO_STREAMS {
        return parallel::get(url, output, options, options.streams, observer);
    }
    transfer::get(url, output, options, observer)
}

/// Uploads the file at `local` to `url` (a URL ending in `/` gets the
/// file's name): over one data connection, or with [`Options::streams`]
/// over several in MODE E.
pub fn put(
    local: &std::path::Path,
    url: &FtpUrl,
    options: &Options,
    observer: &mut dyn Observer,
) -> Result<Report, ClientError> {
    if options.streams > 1 || options.streams == AUTO_STREAMS {
        return parallel::put(local, url, options, options.streams, observer);
    }
    transfer::put(local, url, options, observer)
}

/// Default time to open a control or data connection, and in active mode
/// to wait for the server to connect back.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Default time a reply or the data connection may stay silent.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// How to transfer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Socket options for the data connection, set before its handshake:
    /// `SO_RCVBUF`/`SO_SNDBUF` in bytes, `TCP_WINDOW_CLAMP`,
    /// `TCP_CONGESTION`. Empty (the default) leaves the kernel's defaults
    /// and autotuning alone. For a download the receive buffer should be at
    /// least the path's bandwidth-delay product (`rightsize advise`).
    pub buffers: BufferRequest,
    /// `SBUF` size in bytes to ask the server for (GFD.20), sent only if the
    /// server offers it.
    pub sbuf_bytes: Option<u64>,
    /// Active mode (`EPRT`/`PORT`: the server connects to us) instead of
    /// passive (`EPSV`/`PASV`).
    pub active: bool,
    /// Compare a checksum of the bytes moved with the server's `CKSM`.
    pub verify: bool,
    /// Limit for each connect, and for the server to connect back in active
    /// mode. Default [`DEFAULT_CONNECT_TIMEOUT`].
    pub connect_timeout: Duration,
    /// Limit for each wait for a reply or for data to move. Default
    /// [`DEFAULT_IDLE_TIMEOUT`].
    pub idle_timeout: Duration,
    /// The tuner that sizes the data connection while it runs; its
    /// settings replace the buffers and clamp of `buffers` (congestion
    /// control stays). `None` applies `buffers` as they are.
    pub tune: Option<TunerSpec>,
    /// A telemetry file of the data connection, with the tuner's decisions.
    pub telemetry: Option<TelemetryFile>,
    /// Bytes per `write(2)` when the client sends (an upload, or a test
    /// that sends), to reproduce the Windows tuning note's write-size experiment
    /// (Appendix B). `None` (the default) writes 256 KiB pieces.
    pub write_size: Option<WriteSize>,
    /// Resume: a download continues after the bytes of its part file
    /// (`.NAME.rightsize-part`, kept by a transfer that stopped); an upload
    /// after the bytes the server already has under the name (`SIZE`).
    /// Both with `REST`.
    pub resume: bool,
    /// With `-r`: a file already at the other end with the same size is
    /// compared by checksum (`CKSM`) first, skipped if it matches, and
    /// moved whole again if not (`--sync`).
    pub sync: bool,
    /// Data streams: 1 is stream mode over one connection; more is
    /// GridFTP's MODE E over that many (`-P`); [`AUTO_STREAMS`] lets a
    /// download choose (`-P auto`).
    pub streams: u32,
    /// FTPS (RFC 4217): when to use TLS and how to verify the server.
    /// Default: [`TlsMode::Off`] (in clear; `rightsize get` and `put`
    /// choose [`TlsMode::Auto`] unless told), verification against the
    /// system's roots.
    pub tls: TlsOptions,
}

/// [`Options::streams`] for `-P auto`: a download tries more and more
/// streams, each trial a `RETR` of what is still missing (`REST` with
/// ranges) ended by closing its control connection, and settles on the
/// number that paid (`rightsize_tune::streams`).
pub const AUTO_STREAMS: u32 = 0;

/// One trial of `-P auto`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct StreamTrial {
    /// Streams.
    pub streams: u32,
    /// Goodput over the trial's second half, bits/s.
    pub goodput_bps: f64,
}

/// Where and how often to record the data connection (`--telemetry`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TelemetryFile {
    /// The file, created (or truncated) when the data connection opens.
    pub path: PathBuf,
    /// Sampling interval.
    pub interval: Duration,
    /// Settings to record in the header, by name.
    pub settings: std::collections::BTreeMap<String, String>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            buffers: BufferRequest::default(),
            sbuf_bytes: None,
            active: false,
            verify: false,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            tune: None,
            telemetry: None,
            write_size: None,
            resume: false,
            sync: false,
            streams: 1,
            tls: TlsOptions::default(),
        }
    }
}

/// Where a download goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// This file (an existing directory means the URL's file name in it);
    /// replaced atomically on success.
    File(PathBuf),
    /// Standard output, as the bytes arrive (no atomicity possible).
    Stdout,
}

/// Receives what happens during a transfer; every method has an empty
/// default, and `()` ignores everything.
pub trait Observer {
    /// Called after every chunk moved on the data connection. Called often
    /// (every 256 KiB at most): throttle expensive work.
    fn progress(&mut self, _progress: &Progress<'_>) {}
    /// Each command sent (`> RETR x`, password hidden) and reply received
    /// (`< 226 Transfer complete.`).
    fn protocol(&mut self, _line: &str) {}
    /// Something the user should know that does not stop the transfer
    /// (a clamped buffer, `SBUF` not offered, no checksum on the server).
    fn warning(&mut self, _message: &str) {}
}

impl Observer for () {}

/// A progress report: bytes moved so far on the data connection.
#[derive(Debug)]
pub struct Progress<'a> {
    /// Bytes moved so far.
    pub bytes: u64,
    /// Time since the data connection was ready.
    pub elapsed: Duration,
    /// The size the server announced (download) or the local file's size
    /// (upload), if known.
    pub expected_bytes: Option<u64>,
    /// The server's latest in-transfer `RIGHTSIZE INFO` notice (its data
    /// socket's `TCP_INFO` summary), when the extension is on and the
    /// server sends them (a sending server does, every half RTT).
    pub server_info: Option<rightsize_tune::PeerInfo>,
    socket: &'a TcpStream,
}

impl Progress<'_> {
    /// The data socket (to sample it, e.g. for a telemetry file).
    pub fn socket(&self) -> &TcpStream {
        self.socket
    }

    /// `TCP_INFO` of the data connection now (retransmits, RTT, windows).
    pub fn tcp_info(&self) -> Result<TcpInfoSample, TcpInfoError> {
        rightsize_sys::tcp_info::read(self.socket.as_fd())
    }
}

/// Which way the bytes went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// `RETR`: server to client.
    Get,
    /// `STOR`: client to server.
    Put,
}

/// The `--verify` outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChecksumReport {
    /// The algorithm used; `None` when the server offers none.
    pub algorithm: Option<Algorithm>,
    /// Computed over the bytes moved, lowercase hex.
    pub local: Option<String>,
    /// The server's `CKSM` answer.
    pub remote: Option<String>,
    /// Both present and equal. (A mismatch is an error, not a report.)
    pub verified: bool,
    /// Why it was not verified, e.g. `the server offers no checksum`.
    pub note: Option<String>,
}

/// What `SBUF` did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SbufReport {
    /// The size asked for, bytes.
    pub requested_bytes: u64,
    /// Whether the server answered 2yz; `false` also when not sent.
    pub accepted: bool,
    /// The server's reply, or why it was not sent.
    pub reply: String,
}

/// The result of a transfer that succeeded.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The URL, password removed.
    pub url: String,
    /// Download or upload.
    pub direction: Direction,
    /// The local file (the final name), `None` for standard output.
    pub local_path: Option<PathBuf>,
    /// Bytes moved on the data connection.
    pub bytes: u64,
    /// Bytes already there that the transfer resumed after
    /// ([`Options::resume`]); 0 for a whole transfer.
    pub resumed_bytes: u64,
    /// Data connections: 1, or MODE E's streams ([`Options::streams`]).
    pub streams: u32,
    /// From the data connection being ready to its end.
    pub elapsed: Duration,
    /// The server's control address.
    pub server: SocketAddr,
    /// How the data connection was made.
    pub data_mode: DataMode,
    /// The data connection's other end.
    pub data_peer: SocketAddr,
    /// What was asked for on the client's data socket.
    pub buffers_requested: BufferRequest,
    /// What the kernel applied there, read back.
    pub buffers_applied: Applied,
    /// The server's data socket buffers at the end, when a rightsize
    /// server reported them in its `226`.
    pub server_buffers: Option<rightsize_ftp_proto::session::report::DataSocketBuffers>,
    /// `SBUF`, if asked for.
    pub sbuf: Option<SbufReport>,
    /// `TCP_INFO` of the data socket when the data had all moved.
    pub tcp_info: Option<TcpInfoSample>,
    /// Bytes per write of an upload made with [`Options::write_size`];
    /// `None` for a download or the default pieces.
    pub write_size: Option<WriteSize>,
    /// `--verify`, if asked for.
    pub checksum: Option<ChecksumReport>,
    /// The `SIZE` answer (download) or local size (upload), bytes.
    pub expected_bytes: Option<u64>,
    /// The client end's buffers over the transfer (peak and mean, as read
    /// back) and its tuner's end.
    pub tuning: Option<TuningReport>,
    /// The server's data socket's `TCP_INFO` summary: the final one from a
    /// rightsize server's `226`, else its last in-transfer notice.
    pub server_tcp: Option<rightsize_tune::diagnose::tcp::TcpSummary>,
    /// `-P auto`'s trials, in order (empty otherwise).
    pub stream_trials: Vec<StreamTrial>,
    /// What TLS covered (`None`: the transfer was in clear).
    pub tls: Option<TlsReport>,
}

/// The client end's buffers over the transfer and its tuner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TuningReport {
    /// Peak and time-weighted mean buffers, bytes as read back.
    pub buffers: BufferSummary,
    /// The tuner's name, last state and decision count, if one ran.
    pub tuner: Option<TunerSummary>,
    /// Whether the in-transfer extension was on (a rightsize server that
    /// took `OPTS RIGHTSIZE ON`).
    pub extension: bool,
    /// In-transfer commands sent to the server (`SBUF`, `RINF`).
    pub sent_to_peer: u32,
    /// Notices read from the server and handed to the tuner.
    pub received_from_peer: u32,
    /// What the server said in-transfer that was ignored, and why.
    pub ignored: Vec<String>,
    /// Why the telemetry file stopped early, if it did (the transfer
    /// itself completed).
    pub telemetry_error: Option<String>,
}

impl Report {
    /// Payload bits per second over [`Report::elapsed`].
    pub fn goodput_bps(&self) -> f64 {
        bits_per_second(self.bytes, self.elapsed)
    }
}

/// `bytes` over `elapsed` in bits per second; 0 for no time.
pub(crate) fn bits_per_second(bytes: u64, elapsed: Duration) -> f64 {
    let seconds = elapsed.as_secs_f64();
    if seconds > 0.0 {
        bytes as f64 * 8.0 / seconds
    } else {
        0.0
    }
}
