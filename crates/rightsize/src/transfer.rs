//! `rightsize get` and `rightsize put`: their arguments, and the glue that
//! turns them into `rightsize_ftp::client::Options`, runs the transfer and
//! prints progress, interval lines and the summary (text or `--json`).
//!
//! Where output goes: the downloaded bytes with `-o -`, or the JSON summary
//! with `--json`, own standard output; everything for people (interval
//! lines, the text summary) then goes to standard error, and otherwise to
//! standard output. Warnings and the progress bar always go to standard
//! error; the bar only when it is a terminal.

use std::fmt;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::str::FromStr;
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;
use rightsize_ftp::client::{
    self, DEFAULT_CONNECT_TIMEOUT, DEFAULT_IDLE_TIMEOUT, Direction, Options, Output, Report,
    TelemetryFile, TlsMode, TlsOptions,
};
use rightsize_ftp::tls::Verify;
use rightsize_ftp_proto::url::FtpUrl;
use rightsize_sys::signals::StopSignals;
use rightsize_sys::socket::BufferRequest;
use rightsize_tune::units::{self, Bytes, UnitError};
use rightsize_tune::write_size::WriteSize;

use crate::transfer_output::{Console, summary_json, summary_text};
use rightsize_tune::TunerSpec;
use std::collections::BTreeMap;

/// `rightsize get`.
#[derive(Debug, Args)]
pub struct GetArgs {
    /// The file to download: ftp://[user[:password]@]host[:port]/path (ftps:// for implicit FTPS,
    /// port 990). The path is relative to the login directory; ftp://host//abs/path (or %2F) names an absolute one. Default login:
    /// anonymous.
    #[arg(value_name = "URL", value_parser = FtpUrl::parse)]
    pub url: FtpUrl,

    /// Where to write it: a file (replaced only once the whole file arrived and, with --verify,
    /// matched), a directory, or - for standard output. Default: the URL's file name here.
    #[arg(short, long, value_name = "FILE|-")]
    pub output: Option<PathBuf>,

    /// Download the directory the URL names and everything under it into -o DIR (created if
    /// missing; default: the directory's name here). Lists with MLSD, or LIST where the server has
    /// no MLSD; links are skipped. A file that fails does not stop the others; with -C, files
    /// already complete (same size) are skipped and part files resumed.
    #[arg(short = 'r', long, conflicts_with_all = ["interval", "telemetry"])]
    pub recursive: bool,

    /// With -r: files in flight at once, each over its own control connection (as lftp mirror
    /// --parallel=N and globus-url-copy -cc N), 1 to 64.
    #[arg(short = 'j', long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=64), requires = "recursive")]
    pub jobs: u32,

    #[command(flatten)]
    pub common: TransferArgs,
}

/// `rightsize put`.
#[derive(Debug, Args)]
pub struct PutArgs {
    /// The local file to upload (with -r, the directory); - reads standard input (not with -r,
    /// -C or -P; the URL then names the remote file).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,

    /// Where to store it: ftp://[user[:password]@]host[:port]/path; a URL ending in / gets FILE's
    /// name.
    #[arg(value_name = "URL", value_parser = FtpUrl::parse)]
    pub url: FtpUrl,

    /// Send with write(2) calls of at most BYTES each (the last one shorter): 1 to 16MiB, e.g.
    /// 1024, 4KB, 16KiB. For the Windows note's write-size experiment; on Linux a small write size
    /// mostly costs CPU.
    #[arg(long, value_name = "BYTES", allow_hyphen_values = true)]
    pub write_size: Option<WriteSize>,

    /// Upload the directory FILE and everything under it: a URL ending in / gets its name, else the
    /// URL names the remote directory. Directories are made with MKD (one that exists is fine);
    /// links are skipped. A file that fails does not stop the others; with -C, files the server
    /// holds whole (SIZE) are skipped and part ones finished.
    #[arg(short = 'r', long, conflicts_with_all = ["interval", "telemetry", "write_size"])]
    pub recursive: bool,

    /// With -r: files in flight at once, each over its own control connection, 1 to 64.
    #[arg(short = 'j', long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=64), requires = "recursive")]
    pub jobs: u32,

    #[command(flatten)]
    pub common: TransferArgs,
}

/// Flags `get` and `put` share.
#[derive(Debug, Args)]
pub struct TransferArgs {
    /// Active mode: the server connects to us (EPRT, or PORT if it lacks EPRT). Default: passive
    /// (EPSV, then PASV if EPSV is refused).
    #[arg(long)]
    pub active: bool,

    /// Resume, as curl's -C - and lftp's get -c: get continues after the bytes of the part file
    /// (.NAME.rightsize-part) that an interrupted or failed get kept; put continues after the part
    /// of a cut upload that rightsize serve kept (SITE RIGHTSIZE PART), else after the bytes the
    /// server already has under the name (SIZE). Both ask the server with REST; one that refuses
    /// it is an error, and the part file stays. With --verify the checksum covers the whole
    /// file.
    #[arg(short = 'C', long = "continue")]
    pub resume: bool,

    /// With -r: a file already at the other end with the same size is compared by checksum (CKSM:
    /// SHA256, else MD5, else ADLER32) and skipped if it is the same; one that differs moves again
    /// whole (as globus-url-copy -sync -sync-level 3, rsync -c). Against a server without CKSM the
    /// size decides (said once). With -C part files are resumed too.
    #[arg(long, requires = "recursive")]
    pub sync: bool,

    /// Move the file over N parallel streams (GridFTP's MODE E, as globus-url-copy -p N), 2 to
    /// 64, or auto: 8 streams, and 8 more if they leave the path without a queue and doubling
    /// pays, without stopping the transfer (a download adds a control connection that takes half
    /// of what is left; an upload opens 8 more data connections into its STOR and closes them
    /// again if they made it slower; a tree uses one stream per connection). The server must
    /// speak MODE E (rightsize serve, globus-gridftp-server). With --tune auto (the default) a
    /// transfer sizes its streams' buffers as one flow (a download their receive buffers, an upload
    /// their send buffers), so that together their windows follow the path's BDP. A download that
    /// fails keeps its part file and the byte ranges that
    /// arrived (.NAME.rightsize-part.ranges); -C -P sends them with REST and gets the rest.
    #[arg(short = 'P', long = "parallel", value_name = "N|auto", value_parser = parse_streams)]
    pub parallel: Option<u32>,

    /// Compare a checksum of the bytes moved with the server's (CKSM: SHA256, else MD5, else
    /// ADLER32). A mismatch fails (a download then does not appear under its name); a server without CKSM is
    /// reported as "not verified".
    #[arg(long)]
    pub verify: bool,

    /// Print a line every interval, like iperf3: bytes, rate, retransmits and RTT of the data
    /// connection. Seconds (1, 0.5) or a duration (500ms).
    #[arg(short = 'i', long, value_name = "SECONDS", value_parser = parse_interval)]
    pub interval: Option<Duration>,

    /// Print one JSON summary on standard output at the end (schema in docs/telemetry.md).
    #[arg(long)]
    pub json: bool,

    /// Print the FTP commands and replies on standard error (password hidden).
    #[arg(short, long)]
    pub verbose: bool,

    /// Print nothing but warnings and errors: no progress bar, no summary
    /// (curl's -s). The exit status says how it went; --json still prints
    /// its summary
    #[arg(short, long, short_alias = 's', alias = "silent", conflicts_with_all = ["interval", "verbose"])]
    pub quiet: bool,

    /// SO_RCVBUF of the data socket, set before its handshake (the kernel doubles it and caps it
    /// at net.core.rmem_max; it turns receive autotuning off). 64K, 16MiB, 65536. Default: the
    /// kernel's autotuning. For a download, at least the path's BDP (rightsize advise).
    #[arg(long, value_name = "SIZE", value_parser = Bytes::parse_positive)]
    pub rcvbuf: Option<Bytes>,

    /// SO_SNDBUF of the data socket, set before its handshake (capped at net.core.wmem_max; turns
    /// send autotuning off). Default: the kernel's autotuning.
    #[arg(long, value_name = "SIZE", value_parser = Bytes::parse_positive)]
    pub sndbuf: Option<Bytes>,

    /// TCP_WINDOW_CLAMP of the data socket: the largest receive window to advertise. Set before
    /// the handshake it also lowers the window scale; held during the transfer (Linux raises it as
    /// receive autotuning grows the buffer, so it is read back every 10 ms and set again).
    #[arg(long, value_name = "SIZE", value_parser = parse_window_clamp)]
    pub window_clamp: Option<u32>,

    /// TCP congestion control of the data socket: cubic, reno, bbr (see
    /// /proc/sys/net/ipv4/tcp_available_congestion_control).
    #[arg(long, value_name = "NAME")]
    pub congestion: Option<String>,

    /// How the data socket's buffers are sized while the transfer runs: stock (64 KiB), static:SIZE,
    /// kernel (the OS autotunes), drs, sobas, freebsd, or auto (rightsize's own, reading TCP_INFO).
    /// Default: auto, unless --rcvbuf, --sndbuf or --window-clamp fix the buffers.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["rcvbuf", "sndbuf", "window_clamp"])]
    pub tune: Option<TunerSpec>,

    /// Ask the server to use this TCP buffer on its data socket (GridFTP SBUF); sent only to
    /// servers that offer it (FEAT SBUF, or a GridFTP server).
    #[arg(long, value_name = "SIZE", value_parser = Bytes::parse_positive)]
    pub sbuf: Option<Bytes>,

    /// Record the data connection into FILE as JSON lines: a header (command line, settings,
    /// version, kernel), then every --telemetry-interval the bytes, goodput, buffers and TCP_INFO.
    #[arg(long, value_name = "FILE")]
    pub telemetry: Option<PathBuf>,

    /// Sampling interval of --telemetry.
    #[arg(long, value_name = "DURATION", default_value = "100ms", value_parser = units::parse_positive_duration)]
    pub telemetry_interval: Duration,

    /// Limit for each connect, and for the server to connect back with --active.
    #[arg(long, value_name = "DURATION", default_value_t = Limit(DEFAULT_CONNECT_TIMEOUT))]
    pub connect_timeout: Limit,

    /// Limit for each wait for a reply or for data to move.
    #[arg(long, value_name = "DURATION", default_value_t = Limit(DEFAULT_IDLE_TIMEOUT))]
    pub timeout: Limit,

    #[command(flatten)]
    pub tls: TlsArgs,

    #[command(flatten)]
    pub login: crate::login::LoginArgs,
}

/// FTPS flags of `get`, `put`, `ping`, `test` and `doctor`.
#[derive(Debug, Args)]
pub struct TlsArgs {
    /// Require explicit FTPS (RFC 4217): AUTH TLS, then PBSZ 0 and PROT P, so that the login and
    /// every data connection are TLS; a server that refuses AUTH TLS is an error. Without --tls or
    /// --no-tls, TLS is used when the server's FEAT lists AUTH TLS. An ftps:// URL means implicit
    /// FTPS (TLS from the first byte, port 990 by default).
    #[arg(long, conflicts_with = "no_tls")]
    pub tls: bool,

    /// Never use TLS, even when the server offers it (and refuse an ftps:// URL).
    #[arg(long)]
    pub no_tls: bool,

    /// Trust the CA certificates (PEM) in FILE instead of the system's, for the URL's host name or
    /// address.
    #[arg(long, value_name = "FILE", value_parser = parse_cacert, conflicts_with_all = ["pin_sha256", "insecure", "no_tls"])]
    pub cacert: Option<PathBuf>,

    /// Accept only the server certificate whose SHA-256 fingerprint is HEX (64 hex digits, colons
    /// allowed, as `openssl x509 -fingerprint -sha256` and `rightsize serve` print it); its name
    /// and issuer are not checked.
    #[arg(long, value_name = "HEX", value_parser = parse_pin, conflicts_with_all = ["insecure", "no_tls"])]
    pub pin_sha256: Option<[u8; 32]>,

    /// Do not check the server's certificate at all (curl's -k): anyone on the path can then read
    /// and change the transfer.
    #[arg(short = 'k', long, conflicts_with = "no_tls")]
    pub insecure: bool,
}

/// `--pin-sha256`.
fn parse_pin(input: &str) -> Result<[u8; 32], String> {
    rightsize_ftp::tls::parse_pin(input).map_err(|e| e.to_string())
}

/// `--cacert`: a file that holds at least one PEM certificate, read now
/// so that a wrong path fails before any connection.
fn parse_cacert(input: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(input);
    rightsize_ftp::tls::ClientTls::new(&Verify::CaFile(path.clone())).map_err(|e| e.to_string())?;
    Ok(path)
}

/// What `--insecure` warns.
pub const INSECURE_WARNING: &str = "--insecure: the server's certificate is not checked; anyone on the path can read and change the transfer";

impl TlsArgs {
    /// The library's TLS options.
    pub fn options(&self) -> TlsOptions {
        let mode = if self.no_tls {
            TlsMode::Off
        } else if self.tls {
            TlsMode::Require
        } else {
            TlsMode::Auto
        };
        let verify = if let Some(pin) = self.pin_sha256 {
            Verify::Pin(pin)
        } else if let Some(file) = &self.cacert {
            Verify::CaFile(file.clone())
        } else if self.insecure {
            Verify::Insecure
        } else {
            Verify::SystemRoots
        };
        TlsOptions { mode, verify }
    }

    /// The flags as typed, each with a leading space (for the command
    /// that resumes a transfer).
    pub fn flags(&self) -> String {
        let mut out = String::new();
        if self.tls {
            out.push_str(" --tls");
        }
        if self.no_tls {
            out.push_str(" --no-tls");
        }
        if let Some(file) = &self.cacert {
            out.push_str(&format!(" --cacert {}", file.display()));
        }
        if let Some(pin) = &self.pin_sha256 {
            let hex: String = pin.iter().map(|b| format!("{b:02X}")).collect();
            out.push_str(&format!(" --pin-sha256 {hex}"));
        }
        if self.insecure {
            out.push_str(" --insecure");
        }
        out
    }

    /// The warning `--insecure` earns, said before connecting.
    pub fn warn(&self) {
        if self.insecure {
            eprintln!("rightsize: warning: {INSECURE_WARNING}");
        }
    }
}

/// A positive duration flag, printed in its canonical form (`10s`) so its
/// default in `--help` comes from the library's constant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit(pub Duration);

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&units::format_duration(self.0))
    }
}

impl FromStr for Limit {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Limit, UnitError> {
        units::parse_positive_duration(s).map(Limit)
    }
}

/// `-i`: a bare number is seconds (as in iperf3), else a duration.
pub fn parse_interval(input: &str) -> Result<Duration, String> {
    if let Ok(seconds) = input.trim().parse::<f64>() {
        if seconds.is_finite() && seconds > 0.0 && seconds <= 86_400.0 {
            return Ok(Duration::from_secs_f64(seconds));
        }
        return Err(format!(
            "interval \"{input}\" must be a positive number of seconds up to 86400, like 1 or 0.5"
        ));
    }
    units::parse_positive_duration(input).map_err(|e| e.to_string())
}

/// `-P`: 2 to 64 streams, or `auto` (`client::AUTO_STREAMS`).
fn parse_streams(input: &str) -> Result<u32, String> {
    if input.trim().eq_ignore_ascii_case("auto") {
        return Ok(client::AUTO_STREAMS);
    }
    match input.trim().parse::<u32>() {
        Ok(n) if (2..=64).contains(&n) => Ok(n),
        _ => Err(format!(
            "streams \"{input}\" must be a number from 2 to 64, or auto"
        )),
    }
}

/// `--window-clamp`: a size that fits the kernel's 32-bit option.
fn parse_window_clamp(input: &str) -> Result<u32, String> {
    let bytes = Bytes::parse_positive(input).map_err(|e| e.to_string())?;
    u32::try_from(bytes.get()).map_err(|_| {
        format!(
            "window clamp \"{input}\" is above the kernel's limit of {} bytes; give a size such as 16MiB",
            u32::MAX
        )
    })
}

impl TransferArgs {
    /// The tuner: `--tune`, else auto unless buffers are fixed by hand.
    fn tune(&self) -> Option<TunerSpec> {
        match &self.tune {
            Some(spec) => Some(*spec),
            None if self.rcvbuf.is_some()
                || self.sndbuf.is_some()
                || self.window_clamp.is_some() =>
            {
                None
            }
            None => Some(TunerSpec::Auto),
        }
    }

    fn telemetry(&self, url: &FtpUrl) -> Option<TelemetryFile> {
        let path = self.telemetry.clone()?;
        let opt =
            |v: Option<Bytes>| v.map_or_else(|| "default".to_owned(), |b| b.get().to_string());
        let settings = BTreeMap::from([
            ("url".to_owned(), url.to_string()),
            ("rcvbuf_bytes".to_owned(), opt(self.rcvbuf)),
            ("sndbuf_bytes".to_owned(), opt(self.sndbuf)),
            ("sbuf_bytes".to_owned(), opt(self.sbuf)),
            (
                "window_clamp_bytes".to_owned(),
                self.window_clamp
                    .map_or_else(|| "default".to_owned(), |c| c.to_string()),
            ),
            (
                "congestion".to_owned(),
                self.congestion.clone().unwrap_or_else(|| "default".into()),
            ),
            (
                "mode".to_owned(),
                if self.active { "active" } else { "passive" }.to_owned(),
            ),
            (
                "tune_spec".to_owned(),
                self.tune()
                    .map_or_else(|| "none".to_owned(), |t| t.to_string()),
            ),
        ]);
        Some(TelemetryFile {
            path,
            interval: self.telemetry_interval,
            settings,
        })
    }

    pub(crate) fn options(&self, url: &FtpUrl) -> Options {
        Options {
            buffers: BufferRequest {
                rcvbuf: self.rcvbuf.map(Bytes::get),
                sndbuf: self.sndbuf.map(Bytes::get),
                window_clamp: self.window_clamp,
                congestion: self.congestion.clone(),
                force: false,
            },
            sbuf_bytes: self.sbuf.map(Bytes::get),
            active: self.active,
            verify: self.verify,
            connect_timeout: self.connect_timeout.0,
            idle_timeout: self.timeout.0,
            tune: self.tune(),
            telemetry: self.telemetry(url),
            write_size: None,
            resume: self.resume,
            sync: self.sync,
            streams: self.parallel.unwrap_or(1),
            tls: self.tls.options(),
        }
    }
}

/// Why `put -` cannot do what `args` ask, if it cannot: standard input is
/// read once, in order.
pub(crate) fn stdin_refusal(args: &PutArgs) -> Option<&'static str> {
    if args.file.as_os_str() != client::STDIN {
        return None;
    }
    if args.recursive {
        Some("-r takes a directory")
    } else if args.common.resume {
        Some("-C cannot resume it (it cannot be read again); upload it whole")
    } else if args.common.parallel.is_some() {
        Some("-P reads the file's blocks at their offsets; give a file")
    } else if args.url.file_name().is_none() {
        Some("the URL must name the remote file (it has no name to give it)")
    } else {
        None
    }
}

pub fn run_get(args: &GetArgs) -> anyhow::Result<ExitCode> {
    let output = match args.output.as_deref() {
        Some(p) if p.as_os_str() == "-" => Output::Stdout,
        Some(p) => Output::File(p.to_path_buf()),
        None => match args.url.file_name() {
            Some(name) => Output::File(PathBuf::from(String::from_utf8_lossy(name).into_owned())),
            None => {
                eprintln!(
                    "error: the URL {} names no file; give the remote file's path, or -o FILE",
                    args.url
                );
                return Ok(crate::exit::usage());
            }
        },
    };
    let data_on_stdout = output == Output::Stdout;
    if data_on_stdout && args.common.parallel.is_some() {
        eprintln!(
            "error: -o - and -P: blocks over parallel streams arrive in any order and need a file; write it with -o FILE"
        );
        return Ok(crate::exit::usage());
    }
    if data_on_stdout && args.common.json {
        eprintln!("error: -o - and --json both want standard output; write the file with -o FILE");
        return Ok(crate::exit::usage());
    }
    let mut console = Console::new(
        args.common.interval,
        args.common.verbose,
        args.common.json,
        Direction::Get,
        data_on_stdout,
    )
    .quiet(args.common.quiet);
    let options = args.common.options(&args.url);
    args.common.tls.warn();
    // Caught, so that a download that is stopped keeps its part file.
    let signals = StopSignals::install()?;
    let result = client::get(&args.url, &output, &options, &mut console);
    drop(signals);
    let failed = result.as_ref().err().map(stopped_code);
    let outcome = finish(console, result, &args.common, (&args.url, Direction::Get));
    let (Err(error), Some(code)) = (&outcome, failed) else {
        return outcome;
    };
    eprintln!("rightsize: {error:#}");
    if let Output::File(target) = &output
        && let Some(name) = args.url.file_name()
    {
        let target = client::local_target(target, name);
        say_kept(
            &args.url,
            &args.output,
            &target,
            args.common.parallel,
            &args.common.tls.flags(),
        );
    }
    Ok(code)
}

/// The exit code of a transfer that failed: 128 + the signal's number
/// when one stopped it, as a shell reports, else 1.
fn stopped_code(error: &client::ClientError) -> ExitCode {
    match error {
        client::ClientError::Interrupted { signal: "SIGINT" } => ExitCode::from(130),
        client::ClientError::Interrupted { .. } => ExitCode::from(143),
        _ => ExitCode::FAILURE,
    }
}

/// After a failed download: what its part file kept, and how to resume.
fn say_kept(
    url: &FtpUrl,
    output: &Option<PathBuf>,
    target: &std::path::Path,
    streams: Option<u32>,
    tls_flags: &str,
) {
    let part = client::part_path(target);
    let Some(kept) = client::kept_bytes(target) else {
        return;
    };
    if kept == 0 {
        return;
    }
    let out = output
        .as_ref()
        .map_or_else(String::new, |o| format!(" -o {}", o.display()));
    let parallel = match streams {
        None => String::new(),
        Some(client::AUTO_STREAMS) => " -P auto".to_owned(),
        Some(n) => format!(" -P {n}"),
    };
    eprintln!(
        "rightsize: kept {} bytes in {}; resume with: rightsize get -C{parallel}{tls_flags} {url}{out}",
        Bytes(kept).grouped(),
        part.display()
    );
}

pub fn run_put(args: &PutArgs) -> anyhow::Result<ExitCode> {
    if let Some(why) = stdin_refusal(args) {
        eprintln!("error: put - (standard input): {why}");
        return Ok(crate::exit::usage());
    }
    let mut console = Console::new(
        args.common.interval,
        args.common.verbose,
        args.common.json,
        Direction::Put,
        false,
    )
    .quiet(args.common.quiet);
    let options = Options {
        write_size: args.write_size,
        ..args.common.options(&args.url)
    };
    args.common.tls.warn();
    let signals = StopSignals::install()?;
    let result = client::put(&args.file, &args.url, &options, &mut console);
    drop(signals);
    let failed = result.as_ref().err().map(stopped_code);
    match (
        finish(console, result, &args.common, (&args.url, Direction::Put)),
        failed,
    ) {
        (Err(error), Some(code)) => {
            eprintln!("rightsize: {error:#}");
            Ok(code)
        }
        (outcome, _) => outcome,
    }
}

fn finish(
    mut console: Console,
    result: Result<Report, client::ClientError>,
    args: &TransferArgs,
    (url, direction): (&FtpUrl, Direction),
) -> anyhow::Result<ExitCode> {
    console.clear_bar();
    let report = match result {
        Ok(report) => report,
        Err(error) => {
            // --json: the error as JSON on standard output too (iperf3's
            // habit), so that a program reading it always gets an object.
            if args.json {
                crate::transfer_output::print_error_json(&error, url, direction)?;
            }
            return Err(error.into());
        }
    };
    console.final_interval(&report);
    if args.json {
        let mut summary = summary_json(&report);
        summary["intervals"] = serde_json::Value::from(console.intervals().to_vec());
        let json = serde_json::to_string_pretty(&summary)?;
        let mut out = std::io::stdout().lock();
        writeln!(out, "{json}").context("write the JSON summary to standard output")?;
    } else if !args.quiet {
        console.say(&summary_text(&report));
    }
    // The transfer itself completed and its file is in place.
    if let Some(e) = report
        .tuning
        .as_ref()
        .and_then(|t| t.telemetry_error.as_ref())
    {
        anyhow::bail!("telemetry: {e}");
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn interval_takes_seconds_or_a_duration() {
        assert_eq!(parse_interval("1"), Ok(Duration::from_secs(1)));
        assert_eq!(parse_interval("0.5"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_interval("250ms"), Ok(Duration::from_millis(250)));
        assert!(parse_interval("0").is_err());
        assert!(parse_interval("-1").is_err());
        assert!(parse_interval("soon").unwrap_err().contains("\"soon\""));
    }

    #[test]
    fn window_clamp_must_fit_32_bits() {
        assert_eq!(parse_window_clamp("64K"), Ok(65_536));
        let err = parse_window_clamp("8GiB").unwrap_err();
        assert!(err.contains("\"8GiB\""), "{err}");
    }

    #[test]
    fn limits_print_as_they_parse() {
        assert_eq!(Limit(DEFAULT_CONNECT_TIMEOUT).to_string(), "10s");
        assert_eq!(
            "1.5s".parse::<Limit>(),
            Ok(Limit(Duration::from_millis(1500)))
        );
        assert!("0s".parse::<Limit>().is_err());
    }
}
