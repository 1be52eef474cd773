//! `rightsize serve`: the FTP server's flags, and starting it.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use rightsize_ftp::server::{self, CurrentTls, Server, ServerConfig, ServerTlsConfig};
use rightsize_ftp::tls::ServerTls;
use rightsize_ftp_proto::passwd::UserDb;
use rightsize_ftp_proto::session::bench::{NULL_DIR, ZERO_DIR};
use rightsize_sys::signals::Hangups;
use rightsize_sys::socket::BufferRequest;
use rightsize_tune::TunerSpec;
use rightsize_tune::units::{self, Bytes};
use rightsize_tune::write_size::WriteSize;

pub const SERVE_ABOUT: &str = "\
An FTP server (RFC 959 with FEAT, EPSV/EPRT, MLSD/MLST, SIZE, MDTM, REST STREAM, and GridFTP's \
SBUF, CKSM and MODE E parallel streams with perf and range markers, ERET/ESTO and SPAS/SPOR, as \
globus-url-copy -p N, -partial-offset and -stripe use them) whose data connections \
rightsize's socket layer makes: the buffers a client asks for with SBUF are applied before the \
handshake, read back and logged.

Anonymous users may read; users from --users (written by `rightsize passwd`) may also write. \
Benchmark files need no disk: RETR /.rightsize/zero/SIZE sends SIZE zero bytes (1G, 100MB, \
12345), STOR /.rightsize/null/NAME discards what it receives.

  rightsize serve --root /srv/ftp
  rightsize serve --root /srv/ftp --listen 198.18.0.1:2121 --passive-ports 50000-50100
  rightsize serve --root /srv/ftp --users users.txt --tls-cert cert.pem --tls-key key.pem
  curl -o /dev/null ftp://HOST:2121/.rightsize/zero/1G";

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Read settings from a TOML file: one key per flag, named as the flag without its dashes
    /// (root = "/srv/ftp", max-sessions = 500, no-anonymous = true); flags on the command line win
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// The directory to serve; no path, `..` or symbolic link leads outside it.
    #[arg(long, value_name = "DIR")]
    pub root: PathBuf,

    /// Where to listen for control connections (port 0 picks a free one).
    #[arg(long, value_name = "ADDR:PORT", default_value_t = SocketAddr::from(([0, 0, 0, 0], server::DEFAULT_PORT)))]
    pub listen: SocketAddr,

    /// Ports for passive data connections, e.g. 50000-50100 (default: any free port).
    #[arg(long, value_name = "LOW-HIGH", value_parser = parse_port_range)]
    pub passive_ports: Option<(u16, u16)>,

    /// A password file written by `rightsize passwd`: its users may log in (`rw` ones may write).
    #[arg(long, value_name = "FILE")]
    pub users: Option<PathBuf>,

    /// Refuse anonymous logins.
    #[arg(long)]
    pub no_anonymous: bool,

    /// Once listening (and the password file and certificate read), go on
    /// as this user: its uid, its group, no other groups; uploads then
    /// belong to it, and the served root must be open to it (as must the
    /// certificate and key, read again on SIGHUP). Needs root
    #[arg(long, value_name = "NAME")]
    pub user: Option<String>,

    /// With --user: also make the served root the process's root (chroot)
    /// before giving up root, so that no path outside it can be named even
    /// by a flaw (paths are already resolved beneath the root). The
    /// certificate cannot then be read again on SIGHUP, and SITE RIGHTSIZE
    /// HOST cannot read the host's settings
    #[arg(long, requires = "user", conflicts_with = "telemetry_dir")]
    pub chroot: bool,

    /// Most sessions at once.
    #[arg(long, value_name = "N", default_value_t = server::DEFAULT_MAX_SESSIONS)]
    pub max_sessions: usize,

    /// Most sessions at once from one address.
    #[arg(long, value_name = "N", default_value_t = server::DEFAULT_MAX_PER_ADDRESS)]
    pub max_per_address: usize,

    /// Most sessions at once from one address that have not logged in (a
    /// client that connects and does not log in holds a place until the
    /// login timeout). When the server holds --max-sessions, a new
    /// connection takes the place of the session that has waited longest
    /// for its login
    #[arg(long, value_name = "N", default_value_t = server::DEFAULT_MAX_PRELOGIN_PER_ADDRESS)]
    pub max_prelogin_per_address: usize,

    /// Time a client has to log in.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = units::parse_positive_duration)]
    pub login_timeout: Duration,

    /// Time a logged-in client may stay silent.
    #[arg(long, value_name = "DURATION", default_value = "300s", value_parser = units::parse_positive_duration)]
    pub idle_timeout: Duration,

    /// Time a data connection has to be made.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = units::parse_positive_duration)]
    pub data_connect_timeout: Duration,

    /// Time a data connection may move nothing.
    #[arg(long, value_name = "DURATION", default_value = "300s", value_parser = units::parse_positive_duration)]
    pub data_idle_timeout: Duration,

    /// How data connections' buffers are sized while they run: stock (64 KiB), static:SIZE, kernel
    /// (the OS autotunes), drs, sobas, freebsd, or auto (rightsize's own, reading TCP_INFO). A
    /// client's SBUF before a transfer fixes that transfer's size instead. Default: auto, unless
    /// --rcvbuf or --sndbuf fix the buffers.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["rcvbuf", "sndbuf"])]
    pub tune: Option<TunerSpec>,

    /// Bound the buffers of all data connections together: the sum of their SO_SNDBUF and
    /// SO_RCVBUF (as the kernel stores them) stays within SIZE (e.g. 4x the path's BDP: 10MB). Each
    /// connection's tuner sizes within its share: what it needs while the needs fit, else an even
    /// level that those needing less leave to the others; a connection that cannot have its least
    /// (144 KiB) is refused with 425 and why. A download's connection is held (and counted) until the
    /// client has acknowledged its last byte. STAT shows the use. Needs a tuner that sizes buffers
    /// (auto, drs, sobas, freebsd, static:SIZE), not kernel or stock.
    #[arg(long, value_name = "SIZE", value_parser = parse_budget, conflicts_with_all = ["rcvbuf", "sndbuf"])]
    pub buffer_budget: Option<Bytes>,

    /// SO_RCVBUF for data connections (a client's SBUF replaces it): 64KiB, 16MiB.
    #[arg(long, value_name = "SIZE", value_parser = Bytes::parse_positive)]
    pub rcvbuf: Option<Bytes>,

    /// SO_SNDBUF for data connections (a client's SBUF replaces it).
    #[arg(long, value_name = "SIZE", value_parser = Bytes::parse_positive)]
    pub sndbuf: Option<Bytes>,

    /// TCP_CONGESTION for data connections: cubic, bbr, reno.
    #[arg(long, value_name = "NAME")]
    pub congestion: Option<String>,

    /// Send with write(2) calls of at most BYTES each (the last one shorter) on every data
    /// connection the server sends on (RETR, the zero source, listings), instead of sendfile: 1 to
    /// 16MiB, e.g. 1024, 4KB, 16KiB. For the Windows note's write-size experiment; on Linux a
    /// small write size mostly costs CPU. Default: sendfile.
    #[arg(long, value_name = "BYTES", allow_hyphen_values = true)]
    pub write_size: Option<WriteSize>,

    /// Write one JSON-lines telemetry file per data connection into DIR.
    #[arg(long, value_name = "DIR")]
    pub telemetry_dir: Option<PathBuf>,

    /// Telemetry sampling interval.
    #[arg(long, value_name = "DURATION", default_value = "100ms", value_parser = units::parse_positive_duration)]
    pub telemetry_interval: Duration,

    /// FTPS (RFC 4217): the server's certificate chain, PEM. With it, clients start TLS with AUTH
    /// TLS, protect data connections with PROT P, and no password login is taken before AUTH TLS.
    #[arg(
        long,
        value_name = "FILE",
        requires = "tls_key",
        conflicts_with = "tls_self_signed"
    )]
    pub tls_cert: Option<PathBuf>,

    /// The private key of --tls-cert, PEM (PKCS#8, PKCS#1 or SEC1). Both files are read again on
    /// SIGHUP, for the connections that start after.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,

    /// FTPS with a certificate made at start for NAME (a host name or an address; repeat for more):
    /// clients trust it by its SHA-256 fingerprint, printed at start (rightsize get --pin-sha256,
    /// curl -k). Nothing is written to disk.
    #[arg(long, value_name = "NAME")]
    pub tls_self_signed: Vec<String>,

    /// Implicit FTPS: every control connection is TLS from its first byte (ftps://, port 990's
    /// habit), not upgraded with AUTH TLS.
    #[arg(long)]
    pub tls_implicit: bool,

    /// With a certificate, let anonymous users log in without TLS (password logins still need AUTH
    /// TLS first).
    #[arg(long)]
    pub tls_optional: bool,

    /// No log lines on stderr.
    #[arg(long, short = 'q')]
    pub quiet: bool,

    /// The log on stderr: text (a line per event: time, what happened, then the client, user
    /// and transfer as key=value) or json (one object per line: timestamp, level, message and
    /// those fields).
    #[arg(long, value_enum, default_value = "text")]
    pub log_format: LogFormat,
}

/// `serve --log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// RFC 3339 UTC to the millisecond, the log's times.
struct LogTime;

impl tracing_subscriber::fmt::time::FormatTime for LogTime {
    fn format_time(&self, w: &mut tracing_subscriber::fmt::format::Writer<'_>) -> std::fmt::Result {
        write!(w, "{}", server::log_time(std::time::SystemTime::now()))
    }
}

/// Writes the server's log events to stderr in `format` (none with -q).
fn start_log(format: LogFormat, quiet: bool) {
    if quiet {
        return;
    }
    let log = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_timer(LogTime)
        .with_target(false);
    let _ = match format {
        LogFormat::Text => log.with_level(false).try_init(),
        LogFormat::Json => log.json().flatten_event(true).try_init(),
    };
}

/// The server's FTPS setting from the flags; `None` offers no TLS.
fn tls_config(args: &ServeArgs) -> anyhow::Result<Option<ServerTlsConfig>> {
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => ServerTls::from_pem_files(cert, key)?,
        _ if !args.tls_self_signed.is_empty() => ServerTls::self_signed(&args.tls_self_signed)?,
        _ => {
            if args.tls_implicit || args.tls_optional {
                anyhow::bail!(
                    "--tls-implicit and --tls-optional need a certificate: give --tls-cert FILE --tls-key FILE, or --tls-self-signed NAME"
                );
            }
            return Ok(None);
        }
    };
    if args.tls_implicit && args.tls_optional {
        anyhow::bail!(
            "--tls-optional is for explicit FTPS (AUTH TLS): with --tls-implicit every connection is TLS"
        );
    }
    Ok(Some(ServerTlsConfig {
        tls: CurrentTls::new(tls),
        implicit: args.tls_implicit,
        anonymous_in_clear: args.tls_optional,
    }))
}

/// How often the reloader looks for a `SIGHUP`.
const HANGUP_POLL: Duration = Duration::from_millis(200);

/// Reloads `--tls-cert` and `--tls-key` on `SIGHUP`, for the connections
/// that start after; a certificate that does not load leaves the one in
/// use, and says why (on stderr even with `-q`: the operator must know).
fn reload_on_hangup(tls: CurrentTls, cert: PathBuf, key: PathBuf) -> anyhow::Result<()> {
    let mut hangups = Hangups::install()?;
    std::thread::Builder::new()
        .name("tls-reload".into())
        .spawn(move || {
            loop {
                std::thread::sleep(HANGUP_POLL);
                if !hangups.came() {
                    continue;
                }
                let line = match ServerTls::from_pem_files(&cert, &key) {
                    Ok(new) => {
                        let line = format!(
                            "rightsize serve: SIGHUP: certificate reloaded from {}, SHA-256 {}",
                            cert.display(),
                            new.fingerprint()
                        );
                        tls.replace(new);
                        line
                    }
                    Err(e) => format!("rightsize serve: SIGHUP: kept the certificate in use: {e}"),
                };
                let _ = writeln!(std::io::stderr().lock(), "{line}");
            }
        })
        .context("starting the certificate reloader")?;
    Ok(())
}

/// Refuses a password file that other users of the host may read or
/// write (as ssh refuses such a private key): its PBKDF2 hashes could be
/// attacked offline, or users added.
fn refuse_if_open_to_others(path: &std::path::Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    let meta = std::fs::metadata(path)
        .with_context(|| format!("cannot read the password file {}", path.display()))?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        anyhow::bail!(
            "the password file {} has mode {mode:04o}: others on this host could read its hashes and try passwords offline; chmod 600 {} (as rightsize passwd writes it)",
            path.display(),
            path.display()
        );
    }
    Ok(())
}

/// `--buffer-budget`: a size that holds at least one data connection.
fn parse_budget(input: &str) -> Result<Bytes, String> {
    let bytes = Bytes::parse_positive(input).map_err(|e| e.to_string())?;
    let least = rightsize_tune::budget::min_cost();
    if bytes.get() < least {
        return Err(format!(
            "buffer budget \"{input}\" holds no data connection: each needs at least {} ({least} bytes); give e.g. 10MB",
            Bytes(least).human_iec()
        ));
    }
    Ok(bytes)
}

/// `LOW-HIGH` with 1 <= LOW <= HIGH <= 65535.
fn parse_port_range(input: &str) -> Result<(u16, u16), String> {
    let bad = || {
        format!(
            "invalid port range {input:?}: expected LOW-HIGH with 1 <= LOW <= HIGH <= 65535, e.g. 50000-50100"
        )
    };
    let (low, high) = input.split_once('-').ok_or_else(bad)?;
    let low: u16 = low.trim().parse().map_err(|_| bad())?;
    let high: u16 = high.trim().parse().map_err(|_| bad())?;
    if low == 0 || low > high {
        return Err(bad());
    }
    Ok((low, high))
}

pub fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    start_log(args.log_format, args.quiet);
    let run_as = match &args.user {
        Some(name) => Some(rightsize_sys::privileges::lookup(name).context("--user")?),
        None => None,
    };
    let users = match &args.users {
        None => None,
        Some(path) => {
            refuse_if_open_to_others(path)?;
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read the password file {}", path.display()))?;
            Some(UserDb::parse(&text).with_context(|| format!("in {}", path.display()))?)
        }
    };
    let mut config = ServerConfig::new(args.root.clone());
    config.listen = args.listen;
    config.passive_ports = args.passive_ports;
    config.anonymous = !args.no_anonymous;
    config.users = users;
    config.max_sessions = args.max_sessions;
    config.max_per_address = args.max_per_address;
    config.max_prelogin_per_address = args.max_prelogin_per_address;
    config.login_timeout = args.login_timeout;
    config.idle_timeout = args.idle_timeout;
    config.data_connect_timeout = args.data_connect_timeout;
    config.data_idle_timeout = args.data_idle_timeout;
    config.buffers = BufferRequest {
        rcvbuf: args.rcvbuf.map(|b| b.0),
        sndbuf: args.sndbuf.map(|b| b.0),
        congestion: args.congestion.clone(),
        ..BufferRequest::default()
    };
    config.tune = match &args.tune {
        Some(spec) => Some(*spec),
        None if args.rcvbuf.is_some() || args.sndbuf.is_some() => None,
        None => Some(TunerSpec::Auto),
    };
    if args.buffer_budget.is_some()
        && matches!(config.tune, Some(TunerSpec::Kernel | TunerSpec::Stock))
    {
        anyhow::bail!(
            "--buffer-budget with --tune {}: the kernel's autotuning cannot be bounded; use auto, drs, sobas, freebsd or static:SIZE",
            config.tune.map_or_else(String::new, |t| t.to_string())
        );
    }
    config.buffer_budget = args.buffer_budget;
    config.write_size = args.write_size;
    config.telemetry_dir = args.telemetry_dir.clone();
    config.telemetry_interval = args.telemetry_interval;
    config.argv = std::env::args().collect();
    config.quiet = args.quiet;
    config.tls = tls_config(&args)?;
    let tls_line = config.tls.as_ref().map(|t| {
        format!(
            "rightsize serve: FTPS ({}), certificate SHA-256 {}",
            if t.implicit {
                "implicit: TLS from the first byte"
            } else if t.anonymous_in_clear {
                "AUTH TLS; anonymous may log in without it"
            } else {
                "AUTH TLS before any login"
            },
            t.tls.get().fingerprint()
        )
    });
    let reload = match (&config.tls, &args.tls_cert, &args.tls_key) {
        (Some(t), Some(cert), Some(key)) => Some((t.tls.clone(), cert.clone(), key.clone())),
        _ => None,
    };
    let server = Server::bind(config)?;
    let addr = server
        .local_addr()
        .context("reading the listening address")?;
    let mut banner = format!(
        "rightsize serve: serving {} on ftp://{addr}/ (anonymous: {}; benchmark source {ZERO_DIR}/SIZE, sink {NULL_DIR}/)\n",
        args.root.display(),
        if args.no_anonymous {
            "off"
        } else {
            "read-only"
        },
    );
    if let Some(line) = tls_line {
        banner.push_str(&line);
        banner.push('\n');
    }
    if args.chroot {
        rightsize_sys::privileges::enter_root(&args.root).with_context(|| {
            format!(
                "--chroot: making {} the root (start serve as root)",
                args.root.display()
            )
        })?;
        banner.push_str(&format!(
            "rightsize serve: {} is the process's root (chroot)\n",
            args.root.display()
        ));
    }
    if let Some(user) = &run_as {
        rightsize_sys::privileges::become_user(user).with_context(|| {
            format!(
                "--user {}: becoming that user (start serve as root)",
                user.name
            )
        })?;
        banner.push_str(&format!(
            "rightsize serve: running as user {} (uid {}, gid {})\n",
            user.name, user.uid, user.gid
        ));
    }
    // One write: a reader that takes the first line and goes away (a
    // script waiting for the address) does not stop the server, whose
    // banner is only information.
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(banner.as_bytes()).and_then(|()| out.flush());
    drop(out);
    if let Some((tls, cert, key)) = reload {
        reload_on_hangup(tls, cert, key)?;
    }
    server.run()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn port_ranges() {
        assert_eq!(parse_port_range("50000-50100"), Ok((50000, 50100)));
        assert_eq!(parse_port_range("2000-2000"), Ok((2000, 2000)));
        for bad in ["", "5", "0-10", "10-5", "1-70000", "a-b", "-5"] {
            let err = parse_port_range(bad).unwrap_err();
            assert!(err.contains(&format!("{bad:?}")), "{err}");
        }
    }
}
