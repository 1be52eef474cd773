//! The FTP server (`rightsize serve`): rightsize-ftp-proto's [`Session`] state machine
//! over real sockets and a served directory.
//!
//! One thread per control connection (plus a reader, and a data thread
//! while a transfer runs), so no session ever waits for another; idle
//! sessions cost a few small stacks. The served directory is opened once and
//! every path goes through `rightsize_sys::rootfs`, so no name, `..` or
//! symbolic link leads outside it. Data connections are made by
//! `rightsize_sys::socket` with the client's `SBUF` applied before the
//! handshake and read back.
//!
//! [`Session`]: rightsize_ftp_proto::session::Session

mod checksum;
mod connection;
mod data;
mod extended;
mod host;
mod limits;
mod markers;
mod telemetry;

use std::collections::HashMap;
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::AtomicU32;
use std::sync::{Arc, Mutex, PoisonError, RwLock, Weak};
use std::thread;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rightsize_ftp_proto::passwd::UserDb;
use rightsize_ftp_proto::session::{SessionConfig, TlsPolicy};
use rightsize_sys::rootfs::{Root, RootError};
use rightsize_sys::socket::{self, BufferRequest, SocketError};
use rightsize_tune::budget::{Budget, Use};
use rightsize_tune::civil::UtcTime;
use rightsize_tune::crowd::Crowd;
use rightsize_tune::units::Bytes;
use rightsize_tune::write_size::WriteSize;
use rightsize_tune::{Peer, Role, Tuner, TunerSpec};

use crate::tls::ServerTls;

pub use data::COPY_CHUNK_BYTES;
pub use limits::{Evict, Limits, Refused};

/// The port `rightsize serve` listens on by default.
pub const DEFAULT_PORT: u16 = 2121;
/// Sessions at once, in total (vsftpd's `max_clients` has no limit by
/// default).
pub const DEFAULT_MAX_SESSIONS: usize = 1000;
/// Sessions at once from one address (vsftpd's `max_per_ip` has no limit
/// by default; a benchmark host opens many).
pub const DEFAULT_MAX_PER_ADDRESS: usize = 250;
/// Sessions at once from one address that have not logged in (a client
/// logs in within a few round trips; more than this from one address is
/// a client that holds places without using them).
pub const DEFAULT_MAX_PRELOGIN_PER_ADDRESS: usize = 32;
/// How long a client may take to log in (vsftpd: 60 s).
pub const DEFAULT_LOGIN_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a logged-in client may stay silent (vsftpd: 300 s).
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(300);
/// How long a data connection may take to be made (vsftpd: 60 s).
pub const DEFAULT_DATA_CONNECT_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a data connection may move nothing (vsftpd: 300 s).
pub const DEFAULT_DATA_IDLE_TIMEOUT: Duration = Duration::from_secs(300);
/// Stack of a session thread; its buffers are on the heap.
const SESSION_STACK_BYTES: usize = 256 * 1024;

/// Everything `rightsize serve` is told.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// The served directory.
    pub root: PathBuf,
    /// Where to listen for control connections.
    pub listen: SocketAddr,
    /// Ports for passive listeners (inclusive); any free port when `None`.
    pub passive_ports: Option<(u16, u16)>,
    /// Whether `anonymous`/`ftp` may log in (read-only).
    pub anonymous: bool,
    /// Users with passwords (`rightsize passwd` writes the file).
    pub users: Option<UserDb>,
    /// Cap on sessions in total.
    pub max_sessions: usize,
    /// Cap on sessions from one address.
    pub max_per_address: usize,
    /// Cap on sessions from one address before their login.
    pub max_prelogin_per_address: usize,
    /// Pre-login timeout.
    pub login_timeout: Duration,
    /// Idle timeout between commands.
    pub idle_timeout: Duration,
    /// Timeout for making a data connection.
    pub data_connect_timeout: Duration,
    /// Timeout for a data connection that moves nothing.
    pub data_idle_timeout: Duration,
    /// The server's own request for every data socket; a client's `SBUF`
    /// replaces its receive and send buffer sizes. With a tuner, only its
    /// congestion control is used.
    pub buffers: BufferRequest,
    /// The tuner that sizes each data connection (`--tune`) unless the
    /// client sent `SBUF` before the transfer; `None` applies `buffers` as
    /// they are.
    pub tune: Option<TunerSpec>,
    /// The bound on all data connections' buffers together
    /// (`--buffer-budget`, [`rightsize_tune::budget`]): every connection's
    /// tuner sizes within its share, and a connection that cannot have its
    /// least is refused with 425.
    pub buffer_budget: Option<Bytes>,
    /// Bytes per `write(2)` on every data connection the server sends on
    /// (RETR, the zero source, listings), to reproduce the Windows tuning note's
    /// write-size experiment (Appendix B); `None` sends files and the zero
    /// source with `sendfile` in [`COPY_CHUNK_BYTES`] calls.
    pub write_size: Option<WriteSize>,
    /// Where to write one telemetry file per data connection.
    pub telemetry_dir: Option<PathBuf>,
    /// Telemetry sampling interval.
    pub telemetry_interval: Duration,
    /// The command line, for telemetry headers.
    pub argv: Vec<String>,
    /// No log lines on stderr.
    pub quiet: bool,
    /// FTPS: the certificate, and how TLS is offered; `None` offers none.
    pub tls: Option<ServerTlsConfig>,
}

/// How a server offers FTPS.
#[derive(Debug, Clone)]
pub struct ServerTlsConfig {
    /// The certificate and key, which [`CurrentTls::replace`] changes
    /// for the connections that start after (a reload).
    pub tls: CurrentTls,
    /// Implicit FTPS: every control connection is TLS from its first
    /// byte; else explicit (`AUTH TLS`).
    pub implicit: bool,
    /// Explicit FTPS only: anonymous users may log in without TLS (a
    /// password login must come after `AUTH TLS` in any case).
    pub anonymous_in_clear: bool,
}

/// A server's TLS, shared by its sessions, replaceable while it runs.
#[derive(Debug, Clone)]
pub struct CurrentTls(Arc<RwLock<ServerTls>>);

impl CurrentTls {
    /// `tls` for now.
    pub fn new(tls: ServerTls) -> CurrentTls {
        CurrentTls(Arc::new(RwLock::new(tls)))
    }

    /// The TLS in force (cheap: its configuration is shared).
    pub fn get(&self) -> ServerTls {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// `tls` for every connection and handshake from now on; those
    /// running keep theirs.
    pub fn replace(&self, tls: ServerTls) {
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = tls;
    }
}

impl ServerTlsConfig {
    /// The session's policy.
    fn policy(&self) -> TlsPolicy {
        if self.implicit {
            TlsPolicy::Implicit
        } else {
            TlsPolicy::Explicit {
                anonymous_in_clear: self.anonymous_in_clear,
            }
        }
    }
}

impl ServerConfig {
    /// The defaults for serving `root`.
    pub fn new(root: PathBuf) -> Self {
        ServerConfig {
            root,
            listen: SocketAddr::from(([0, 0, 0, 0], DEFAULT_PORT)),
            passive_ports: None,
            anonymous: true,
            users: None,
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_per_address: DEFAULT_MAX_PER_ADDRESS,
            max_prelogin_per_address: DEFAULT_MAX_PRELOGIN_PER_ADDRESS,
            login_timeout: DEFAULT_LOGIN_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            data_connect_timeout: DEFAULT_DATA_CONNECT_TIMEOUT,
            data_idle_timeout: DEFAULT_DATA_IDLE_TIMEOUT,
            buffers: BufferRequest::default(),
            tune: None,
            buffer_budget: None,
            write_size: None,
            telemetry_dir: None,
            telemetry_interval: Duration::from_millis(100),
            argv: Vec::new(),
            quiet: false,
            tls: None,
        }
    }
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The served directory.
    #[error("cannot serve {path}")]
    Root {
        /// The directory given.
        path: PathBuf,
        /// Why.
        #[source]
        source: RootError,
    },
    /// The control listener.
    #[error("cannot listen on {addr}")]
    Listen {
        /// The address given.
        addr: SocketAddr,
        /// Why.
        #[source]
        source: SocketError,
    },
    /// The telemetry directory.
    #[error("cannot write telemetry into {path}")]
    Telemetry {
        /// The directory given.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// Seconds since the Unix epoch: the server's only reading of the wall
/// clock (the session takes it as an argument).
fn now_unix() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// What every session of a server shares.
#[derive(Debug)]
struct Shared {
    config: ServerConfig,
    session_config: SessionConfig,
    root: Root,
    limits: Limits,
    started_unix: i64,
    /// Where the next passive port search starts, so ports rotate.
    next_passive: AtomicU32,
    /// The data connections' buffer budget, if any.
    budget: Option<Arc<Mutex<Budget>>>,
    /// The downloads tuned by `auto`, by client network
    /// ([`client_network`]): each network's share one path.
    crowds: Mutex<HashMap<IpAddr, Weak<Mutex<Crowd>>>>,
    /// How many `CKSM`/`HASH` run at once.
    checksums: checksum::Gate,
}

/// `at` as RFC 3339 UTC to the millisecond: `2026-11-27T14:30:01.123Z`.
pub fn log_time(at: SystemTime) -> String {
    let since = at.duration_since(UNIX_EPOCH).unwrap_or_default();
    let t = UtcTime::from_unix(i64::try_from(since.as_secs()).unwrap_or(i64::MAX));
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        t.year,
        t.month,
        t.day,
        t.hour,
        t.minute,
        t.second,
        since.subsec_millis()
    )
}

/// The network a client address belongs to, for sizing the downloads that
/// share its path together: its /24 (IPv4) or /64 (IPv6).
fn client_network(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V4(v4) => IpAddr::V4(Ipv4Addr::from(v4.to_bits() & !0xff)),
        IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from(v6.to_bits() & !u128::from(u64::MAX))),
    }
}

impl Shared {
    /// The buffer budget's use now, if there is one.
    pub(super) fn budget_use(&self) -> Option<Use> {
        self.budget
            .as_ref()
            .map(|b| b.lock().unwrap_or_else(PoisonError::into_inner).usage())
    }

    /// The crowd of `auto` downloads to `client`'s network, joined by
    /// the next one ([`rightsize_tune::crowd`]).
    fn crowd_for(&self, client: IpAddr) -> Arc<Mutex<Crowd>> {
        let mut crowds = self.crowds.lock().unwrap_or_else(PoisonError::into_inner);
        crowds.retain(|_, crowd| crowd.strong_count() > 0);
        let network = client_network(client);
        if let Some(crowd) = crowds.get(&network).and_then(Weak::upgrade) {
            return crowd;
        }
        let crowd = Arc::new(Mutex::new(Crowd::new()));
        crowds.insert(network, Arc::downgrade(&crowd));
        crowd
    }

    /// A line of the server's log on stderr: UTC time to the
    /// millisecond, then `line` (nothing with `--quiet`).
    /// A line of the server's log about the server as a whole, as a
    /// `tracing` event (the binary chooses where and how it is written).
    fn log(&self, line: &str) {
        if !self.config.quiet {
            tracing::info!("{line}");
        }
    }

    /// A line about one client's session: its address as a field.
    fn log_client(&self, client: SocketAddr, line: &str) {
        if !self.config.quiet {
            tracing::info!(client = %client, "{line}");
        }
    }

    /// A transfer's end: the client and the session's transfer number as
    /// fields.
    fn log_transfer(&self, client: SocketAddr, transfer: u64, line: &str) {
        if !self.config.quiet {
            tracing::info!(client = %client, transfer, "{line}");
        }
    }

    /// A login, or a failed one: the client, the user as given, and the
    /// outcome as fields.
    fn log_login(&self, client: SocketAddr, user: &str, ok: bool, tls: bool) {
        if self.config.quiet {
            return;
        }
        let over = if tls { " over TLS" } else { "" };
        if ok {
            tracing::info!(client = %client, user, event = "login", tls, "{user:?} logged in{over}");
        } else {
            tracing::warn!(client = %client, user, event = "failed-login", tls, "failed login for {user:?}{over}");
        }
    }

    /// The buffer request for a passive listener: the client's SBUF, else
    /// what the tuner sets before the handshake. The listener's settings
    /// are inherited at the handshake, before the transfer's direction is
    /// known, so the tuner is asked as a receiver: the window scale only
    /// matters to the end that receives.
    fn listener_request(&self, sbuf: Option<u64>, tune: Option<&TunerSpec>) -> BufferRequest {
        self.data_plan(sbuf, tune, Role::Receiver, Peer::Other).0
    }

    /// The tuner of a data connection: the session's own choice (`SITE
    /// RIGHTSIZE TUNE`), else `--tune`; none when the client's SBUF fixed
    /// the size, unless a buffer budget holds it: then SBUF is a fixed
    /// size within the connection's share, as `static:SIZE` is.
    fn tuner_spec(&self, sbuf: Option<u64>, tune: Option<&TunerSpec>) -> Option<TunerSpec> {
        match sbuf {
            Some(bytes) if self.budget.is_some() => Some(TunerSpec::Static(Bytes(bytes))),
            Some(_) => None,
            None => tune.or(self.config.tune.as_ref()).copied(),
        }
    }

    /// The buffer request for a data connection, applied before its
    /// handshake (active) or right after it (passive), and its tuner: none
    /// when the client's SBUF fixed the size or no `--tune` is in force.
    /// `tune` is the session's own choice (`SITE RIGHTSIZE TUNE`), which
    /// replaces `--tune`.
    fn data_plan(
        &self,
        sbuf: Option<u64>,
        tune: Option<&TunerSpec>,
        role: Role,
        peer: Peer,
    ) -> (BufferRequest, Option<Box<dyn Tuner>>) {
        let mut request = self.config.buffers.clone();
        let Some(spec) = self.tuner_spec(sbuf, tune) else {
            if let Some(bytes) = sbuf {
                request.rcvbuf = Some(bytes);
                request.sndbuf = Some(bytes);
            }
            return (request, None);
        };
        let tuner = crate::tuning::build(&spec, role, peer, &request);
        let request = crate::tuning::request(&request, tuner.setup().pre_handshake);
        (request, Some(tuner))
    }
}

/// A bound server, ready to run.
#[derive(Debug)]
pub struct Server {
    listener: TcpListener,
    shared: Arc<Shared>,
    /// A descriptor held back for the moment the process has no other:
    /// closed, it lets a connection be accepted and told `421` instead of
    /// left unanswered; then it is taken again.
    spare: Option<std::fs::File>,
}

/// Descriptors a session holds at most (its control socket and the
/// reader's copy, a data connection, a passive listener, a file and a
/// telemetry file), for the warning about a low open-file limit.
const DESCRIPTORS_PER_SESSION: u64 = 6;

/// What a connection hears when the server has no descriptor or thread
/// left for its session.
const NO_ROOM_REPLY: &[u8] = b"421 Too many connections on this server; try again later.\r\n";

/// The spare descriptor: `/dev/null`, read-only.
fn spare() -> Option<std::fs::File> {
    std::fs::File::open("/dev/null").ok()
}

impl Server {
    /// Opens the served directory and binds the control listener.
    pub fn bind(config: ServerConfig) -> Result<Server, ServerError> {
        let root = Root::open(&config.root).map_err(|source| ServerError::Root {
            path: config.root.clone(),
            source,
        })?;
        if let Some(dir) = &config.telemetry_dir {
            std::fs::create_dir_all(dir).map_err(|source| ServerError::Telemetry {
                path: dir.clone(),
                source,
            })?;
        }
        let (listener, _) =
            socket::listen(config.listen, &BufferRequest::default(), 128).map_err(|source| {
                ServerError::Listen {
                    addr: config.listen,
                    source,
                }
            })?;
        let started_unix = now_unix();
        let session_config = SessionConfig {
            anonymous: config.anonymous,
            login_timeout: config.login_timeout,
            idle_timeout: config.idle_timeout,
            tls: config
                .tls
                .as_ref()
                .map_or(TlsPolicy::Off, ServerTlsConfig::policy),
            ..SessionConfig::default()
        };
        let shared = Arc::new(Shared {
            limits: Limits::new(
                config.max_sessions,
                config.max_per_address,
                config.max_prelogin_per_address,
            ),
            session_config,
            root,
            started_unix,
            next_passive: AtomicU32::new(std::process::id()),
            budget: config
                .buffer_budget
                .map(|limit| Arc::new(Mutex::new(Budget::new(limit)))),
            crowds: Mutex::new(HashMap::new()),
            checksums: checksum::Gate::per_core(),
            config,
        });
        // Every session holds descriptors: as many as the system allows.
        match rightsize_sys::limits::raise_open_files() {
            Ok((soft, _)) => {
                let room = soft.saturating_sub(64) / DESCRIPTORS_PER_SESSION;
                if room < shared.config.max_sessions as u64 {
                    shared.log(&format!(
                        "warning: the open-file limit ({soft}) holds about {room} sessions, \
                         --max-sessions is {}; past it, connections get 421",
                        shared.config.max_sessions
                    ));
                }
            }
            Err(e) => shared.log(&format!("warning: {e}: the open-file limit stays as it is")),
        }
        Ok(Server {
            listener,
            shared,
            spare: spare(),
        })
    }

    /// The control listener's address (the real port when 0 was asked).
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Accepts control connections until the process ends.
    pub fn run(mut self) -> ! {
        loop {
            match self.listener.accept() {
                Ok((stream, peer)) => self.admit(stream, peer),
                Err(e) if rightsize_sys::limits::out_of_descriptors(&e) => {
                    self.no_descriptors(&e);
                }
                Err(e) => {
                    self.shared.log(&format!("accept failed: {e}"));
                    thread::sleep(Duration::from_millis(50));
                }
            }
        }
    }

    /// The process has no descriptor left: with the spare one given up,
    /// the connection waiting is accepted, told `421` and closed, rather
    /// than left unanswered (and the accept loop spinning on it).
    fn no_descriptors(&mut self, e: &std::io::Error) {
        drop(self.spare.take());
        match self.listener.accept() {
            Ok((mut stream, peer)) => {
                self.shared
                    .log_client(peer, &format!("refused: no file descriptor left ({e})"));
                let _ = stream.write_all(NO_ROOM_REPLY);
            }
            Err(_) => thread::sleep(Duration::from_millis(50)),
        }
        self.spare = spare();
    }

    fn admit(&self, mut stream: TcpStream, peer: SocketAddr) {
        // Should the server fill while this session has not logged in,
        // a newcomer may take its place: its connection is closed then.
        let evict: Evict = match stream.try_clone() {
            Ok(closer) => {
                let shared = Arc::clone(&self.shared);
                Box::new(move || {
                    shared.log_client(
                        peer,
                        "closed to make room: the server is full and it had not logged in",
                    );
                    let _ = closer.shutdown(Shutdown::Both);
                })
            }
            Err(_) => Box::new(|| {}),
        };
        let slot = match self.shared.limits.admit(peer.ip(), evict) {
            Ok(slot) => slot,
            Err(refused) => {
                self.shared
                    .log_client(peer, &format!("refused: {}", refused.reply_text()));
                let _ = stream.write_all(format!("421 {}\r\n", refused.reply_text()).as_bytes());
                return;
            }
        };
        let shared = Arc::clone(&self.shared);
        let spawned = thread::Builder::new()
            .name("ftp-session".into())
            .stack_size(SESSION_STACK_BYTES)
            .spawn(move || connection::serve(stream, peer, shared, slot));
        if let Err(e) = spawned {
            self.shared
                .log_client(peer, &format!("no thread for the session: {e}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_lines_start_with_the_utc_time_to_the_millisecond() {
        let at = UNIX_EPOCH + Duration::from_millis(1_795_789_801_123);
        assert_eq!(log_time(at), "2026-11-27T14:30:01.123Z");
    }

    #[test]
    fn clients_of_one_network_share_a_crowd_and_others_do_not() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap_or_else(|e| panic!("{s}: {e}"));
        assert_eq!(client_network(ip("10.1.1.7")), ip("10.1.1.0"));
        assert_eq!(client_network(ip("::ffff:10.1.1.7")), ip("10.1.1.0"));
        assert_eq!(
            client_network(ip("2001:db8:1:2:aaaa::1")),
            ip("2001:db8:1:2::")
        );
        assert_ne!(client_network(ip("10.1.2.7")), ip("10.1.1.0"));
    }
}
