//! Command-line definitions. Step one of two: validate what the user typed
//! (units are parsed here, by `rightsize_tune::units`); resolving against the
//! system happens in each command's module.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use rightsize_ftp_proto::passwd;
use rightsize_tune::advice::Os;
use rightsize_tune::bdp::DEFAULT_MSS;
use rightsize_tune::units::{self, BitRate, Bytes};

pub use crate::transfer::{GetArgs, PutArgs};

/// Writes the completion script for `shell` to standard output.
pub fn completions(shell: clap_complete::Shell) -> anyhow::Result<std::process::ExitCode> {
    use clap::CommandFactory as _;
    let mut command = Cli::command();
    clap_complete::generate(shell, &mut command, "rightsize", &mut std::io::stdout());
    Ok(std::process::ExitCode::SUCCESS)
}

/// Writes the manual page (roff) to standard output: the top command's
/// page, then one section per subcommand.
pub fn man() -> anyhow::Result<std::process::ExitCode> {
    use anyhow::Context as _;
    use clap::CommandFactory as _;
    let mut command = Cli::command();
    // Every subcommand gets the version and the help flags, as --help shows.
    command.build();
    let mut out = Vec::new();
    clap_mangen::Man::new(command.clone())
        .render(&mut out)
        .context("rendering the manual page")?;
    for sub in command.get_subcommands() {
        let name = format!("rightsize-{}", sub.get_name());
        clap_mangen::Man::new(sub.clone().display_name(name))
            .render(&mut out)
            .context("rendering the manual page")?;
    }
    use std::io::Write as _;
    std::io::stdout()
        .write_all(&out)
        .context("writing the manual page")?;
    Ok(std::process::ExitCode::SUCCESS)
}

/// Size TCP buffers for long fat networks: compute, advise, measure.
#[derive(Debug, Parser)]
#[command(name = "rightsize", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// The bandwidth-delay product of a path and the host settings for it.
    #[command(long_about = ADVISE_ABOUT)]
    Advise(AdviseArgs),
    /// An FTP server whose data connections rightsize sizes and observes.
    #[command(long_about = crate::serve::SERVE_ABOUT, args_override_self = true)]
    Serve(crate::serve::ServeArgs),
    /// Download one file over FTP with the data socket's buffers set and read back.
    #[command(long_about = GET_ABOUT)]
    Get(GetArgs),
    /// Upload one file over FTP with the data socket's buffers set and read back.
    #[command(long_about = PUT_ABOUT)]
    Put(PutArgs),
    /// Add a user to the FTP server's user file, change a password, or delete a user.
    #[command(long_about = PASSWD_ABOUT)]
    Passwd(PasswdArgs),
    /// Emulated WAN paths: two hosts in network namespaces joined by an emulated link.
    #[command(long_about = crate::path::PATH_ABOUT)]
    Path(crate::path::PathArgs),
    /// Round-trip times over an FTP control connection (NOOP), like ping(8).
    #[command(long_about = crate::ping::PING_ABOUT)]
    Ping(crate::ping::PingArgs),
    /// A memory-to-memory throughput test against `rightsize serve`, like iperf3.
    #[command(long_about = crate::test_cmd::TEST_ABOUT)]
    Test(crate::test_cmd::TestArgs),
    /// Say what limits one TCP stream to a rightsize server, and the settings that fix it.
    #[command(long_about = crate::doctor::DOCTOR_ABOUT)]
    Doctor(crate::doctor::DoctorArgs),
    /// Reproduce the drsFTP, SOBAS, perfSONAR lab and Windows note experiments on emulated paths:
    /// runs, plots and a report.
    #[command(long_about = crate::lab::LAB_ABOUT)]
    Lab(crate::lab::LabArgs),
    /// The main job: five buffer policies on a built-in long fat path, a table and a report.
    #[command(long_about = crate::lab::DEMO_ABOUT)]
    Demo(crate::lab::DemoArgs),
    /// Print a shell completion script: bash, zsh, fish, elvish or powershell.
    #[command(long_about = COMPLETIONS_ABOUT)]
    Completions(CompletionsArgs),
    /// Print the manual page (roff), for man(1).
    #[command(long_about = MAN_ABOUT)]
    Man,
}

const COMPLETIONS_ABOUT: &str = "\
Print a completion script for a shell on standard output: its commands, flags and values.

  rightsize completions bash > /etc/bash_completion.d/rightsize
  rightsize completions zsh > \"${fpath[1]}/_rightsize\"
  rightsize completions fish > ~/.config/fish/completions/rightsize.fish";

const MAN_ABOUT: &str = "\
Print rightsize's manual page in roff on standard output: every command and flag, as --help \
says them.

  rightsize man | man -l -
  rightsize man > /usr/local/share/man/man1/rightsize.1";

/// `rightsize completions SHELL`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

const GET_ABOUT: &str = "\
Download one file over FTP (binary, one data connection) with the data socket's buffers, window \
clamp and congestion control set before its handshake and read back from the kernel; print the \
rate, retransmits and RTT of the data connection.

  rightsize get ftp://127.0.0.1:2121/data.bin
  rightsize get ftp://user:pass@host/dir/data.bin -o /tmp/data.bin --rcvbuf 16MiB -i 1
  rightsize get ftp://gridftp.example:2811//abs/path/data.bin --verify --json
  rightsize get --tls --pin-sha256 AA:BB:..:FF ftp://127.0.0.1:2121/data.bin
  rightsize get ftps://host/dir/data.bin --cacert ca.pem

FTPS: --tls requires AUTH TLS (then PBSZ 0, PROT P, and the login over TLS); ftps:// is implicit \
FTPS; without --tls or --no-tls the client upgrades when the server's FEAT lists AUTH TLS. The \
certificate is checked against the system's roots for the URL's host, --cacert FILE or \
--pin-sha256 HEX; --insecure checks nothing. Data connections are TLS and resume the control \
connection's TLS session.

The file appears under its name only once it arrived whole (and, with --verify, matched the \
server's checksum). Exit codes: 0 success, 1 transfer failed, 2 bad arguments.";

const PUT_ABOUT: &str = "\
Upload one file over FTP (binary, one data connection) with the data socket's buffers, window \
clamp and congestion control set before its handshake and read back from the kernel.

  rightsize put data.bin ftp://127.0.0.1:2121/incoming/data.bin
  rightsize put data.bin ftp://user:pass@host/dir/ --sndbuf 16MiB -i 1
  rightsize put data.bin ftp://gridftp.example:2811//abs/path/ --verify --json
  rightsize put data.bin ftp://host/incoming/ --tls --cacert ca.pem

FTPS as for get: --tls, ftps://, --cacert, --pin-sha256, --insecure, --no-tls; without --tls or \
--no-tls the upload is over TLS when the server offers it.

The server's 226 reply means success; the server is responsible for atomicity on its side. Exit \
codes: 0 success, 1 transfer failed, 2 bad arguments.";

const ADVISE_ABOUT: &str = "\
The bandwidth-delay product (BDP) of a path and the exact host settings that let one TCP \
connection fill it, for this host's system by default, or for Linux, FreeBSD, macOS, Windows \
(Vista and later) and Windows 2000/XP (--os all, or by name).

  rightsize advise --bandwidth 10G --rtt 50ms
  rightsize advise --bandwidth 10G --rtt 50ms --os all        # every system
  rightsize advise --bandwidth 200M --rtt 300ms --check     # what on this host caps a stream
  rightsize advise --buffer 64KiB --rtt 100ms               # what a buffer allows
  rightsize advise --bandwidth 1G --rtt 80ms --os linux --json

Rates are decimal and in bits unless the unit says bytes (10G, 10Gbit/s, 10Gbps, 125MB/s). \
Sizes: 64K and 64KiB are 65,536 bytes, 64kB is 64,000, a bare number is bytes. \
Durations need a unit (50ms, 0.05s, 100us).";

const PASSWD_ABOUT: &str = "\
Add a user to the user file of `rightsize serve --users FILE`, change a user's password or access, \
or delete a user. Other lines of the file are kept as they are.

  rightsize passwd users.txt alice                   # read-write; asks for the password twice
  echo 'pass phrase' | rightsize passwd users.txt bob --read-only
  rightsize passwd users.txt bob --delete

The password is one line of stdin; from a terminal it is asked for twice, without echo. \
It is stored as a salted PBKDF2-HMAC-SHA256 hash (name:rw|ro:pbkdf2-sha256$ITERATIONS$SALT$HASH). \
FILE is created with mode 0600 if missing and always replaced atomically. \
The names anonymous and ftp are reserved for anonymous login.";

#[derive(Debug, Args)]
pub struct PasswdArgs {
    /// The user file; created with mode 0600 if missing.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,

    /// The user name: no ':', whitespace or control characters; not anonymous or ftp.
    #[arg(value_name = "USER", value_parser = passwd::parse_user_name)]
    pub user: String,

    /// Read-only access (default: read-write, also when changing an existing user).
    #[arg(long, conflicts_with = "delete")]
    pub read_only: bool,

    /// Delete the user instead (reads no password).
    #[arg(long)]
    pub delete: bool,

    /// PBKDF2 iterations: about 50 ms of one core by default; OWASP (2023) asks for 600000.
    #[arg(long, value_name = "N", default_value_t = passwd::DEFAULT_ITERATIONS,
          value_parser = clap::value_parser!(u32).range(1..), conflicts_with = "delete")]
    pub iterations: u32,
}

#[derive(Debug, Args)]
pub struct AdviseArgs {
    /// The path's bottleneck rate: 10G, 10Gbit/s, 10Gbps, 2.5G, 100M, 100000kbit/s, 56k, 125MB/s.
    #[arg(long, short = 'b', value_name = "RATE", allow_hyphen_values = true, value_parser = BitRate::parse_positive)]
    pub bandwidth: Option<BitRate>,

    /// The path's round-trip time: 50ms, 0.05s, "12 ms", 100us.
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true, value_parser = units::parse_positive_duration)]
    pub rtt: Duration,

    /// Instead of advice: the most throughput this buffer (taken as the window) allows over the RTT,
    /// and with --bandwidth the share of the path it can use. 64KiB, 16MiB, 65536.
    #[arg(long, value_name = "SIZE", allow_hyphen_values = true, value_parser = Bytes::parse_positive)]
    pub buffer: Option<Bytes>,

    /// TCP maximum segment size in bytes, for the Windows 2000/XP window rounding.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MSS, value_parser = clap::value_parser!(u64).range(64..=65_495))]
    pub mss: u64,

    /// Which operating systems to advise for (comma-separated): host (this one's), all, or each
    /// by name.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "host")]
    pub os: Vec<OsChoice>,

    /// Also read this host's settings and say which one caps a stream on this path, and the fix.
    #[arg(long, requires = "bandwidth")]
    pub check: bool,

    /// Print JSON (schema in docs/telemetry.md) instead of text.
    #[arg(long)]
    pub json: bool,
}

/// The system this binary runs on, for `advise --os host`.
const HOST_OS: Os = if cfg!(target_os = "freebsd") {
    Os::Freebsd
} else if cfg!(target_os = "macos") {
    Os::Macos
} else if cfg!(target_os = "windows") {
    Os::Windows
} else {
    Os::Linux
};

/// `--os` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OsChoice {
    /// The system rightsize runs on.
    Host,
    All,
    Linux,
    Freebsd,
    Macos,
    Windows,
    WindowsXp,
}

impl AdviseArgs {
    /// The operating systems asked for, in the advisor's order, each once.
    pub fn oses(&self) -> Vec<Os> {
        if self.os.contains(&OsChoice::All) {
            return Os::ALL.to_vec();
        }
        Os::ALL
            .into_iter()
            .filter(|os| {
                self.os.iter().any(|choice| match choice {
                    OsChoice::Host => *os == HOST_OS,
                    OsChoice::All => true,
                    OsChoice::Linux => *os == Os::Linux,
                    OsChoice::Freebsd => *os == Os::Freebsd,
                    OsChoice::Macos => *os == Os::Macos,
                    OsChoice::Windows => *os == Os::Windows,
                    OsChoice::WindowsXp => *os == Os::WindowsXp,
                })
            })
            .collect()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    /// The help's range is the parser's: one constant, printed as typed.
    #[test]
    fn write_size_help_states_the_parsers_limit() {
        use rightsize_tune::write_size::MAX_WRITE_SIZE_BYTES;
        let limit = format!("1 to {}", Bytes(MAX_WRITE_SIZE_BYTES));
        let mut cli = Cli::command();
        for name in ["serve", "put"] {
            let command = cli.find_subcommand_mut(name).unwrap();
            let arg = command
                .get_arguments()
                .find(|a| a.get_id() == "write_size")
                .unwrap();
            let help = arg.get_help().unwrap().to_string();
            assert!(help.contains(&limit), "{name}: {help}");
        }
        assert!(
            Cli::command()
                .find_subcommand("get")
                .unwrap()
                .get_arguments()
                .all(|a| a.get_id() != "write_size"),
            "get receives; it has no write size"
        );
    }
}
