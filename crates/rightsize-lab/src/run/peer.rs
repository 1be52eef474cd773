//! Who the rightsize end of a run talks to. Every run has a server on the
//! right host (the sender) and a client on the left (the receiver); a
//! [`Peer`] says which program each one is, builds both command lines and
//! lists the files the server needs in the run's directory. Pure: the
//! runner creates the files and starts the programs.
//!
//! Between two rightsize ends both tune (the lab's runs, and the tuner
//! benchmark's). Against vsftpd only the receiver does; against curl and
//! globus-url-copy only the sender does. The other programs are started as
//! in the interop tests and `rightsize-bench ftp`, with nothing that sizes
//! their sockets: Linux's autotuning sizes them, within the path's
//! `tcp_rmem` and `tcp_wmem`.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use rightsize_tune::units::Bytes;

/// The server's control port inside the right host's namespace.
pub const PORT: u16 = 2121;

/// The file vsftpd serves, in the run's served root: sparse, so it costs
/// no disk and reads as zeros from the page cache.
pub const VSFTPD_FILE: &str = "zero.bin";

/// The directory vsftpd insists on (its `secure_chroot_dir`).
pub const VSFTPD_EMPTY_DIR: &str = "/var/run/vsftpd/empty";

/// What globus-url-copy's first, one-byte transfer fetches: it costs the
/// same control round trips as the measured one (see [`GLOBUS_TIMED`]).
pub const GLOBUS_PROBE_BYTES: u64 = 1;

/// A shell script that times two globus-url-copy transfers: one of
/// [`GLOBUS_PROBE_BYTES`], then the measured one, and prints
/// `{"probe_ns":N,"transfer_ns":N}` (and sends what globus-url-copy prints
/// to the standard error). globus-url-copy prints no transfer
/// time of its own (its `-vb` line comes every 2 s), and its process time
/// includes a dozen control round trips (login, `SITE HELP`, `FEAT`,
/// `SITE CLIENTINFO`, `TYPE`, `PASV`, ...): over a 100 ms path, over a
/// second. The difference of the two times leaves the data's time.
/// Arguments: the program, the probe's URL, the measured URL, the
/// destination.
pub const GLOBUS_TIMED: &str = r#"t0=$(date +%s%N)
"$1" "$2" "$4" >&2 || exit $?
t1=$(date +%s%N)
"$1" "$3" "$4" >&2 || exit $?
t2=$(date +%s%N)
printf '{"probe_ns":%s,"transfer_ns":%s}\n' $((t1 - t0)) $((t2 - t1))"#;

/// The programs at the two ends of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum Peer {
    /// `rightsize get` from `rightsize serve`: both ends tune.
    #[default]
    Rightsize,
    /// `rightsize get` from vsftpd: the receiver tunes alone.
    Vsftpd,
    /// curl from `rightsize serve`: the sender tunes alone.
    Curl,
    /// globus-url-copy from `rightsize serve`: the sender tunes alone.
    Globus,
}

/// Every peer, rightsize first.
pub const ALL: [Peer; 4] = [Peer::Rightsize, Peer::Vsftpd, Peer::Curl, Peer::Globus];

/// What both command lines are made of.
#[derive(Debug, Clone, Copy)]
pub struct Ends<'a> {
    /// The `rightsize` binary (absolute).
    pub rightsize: &'a Path,
    /// The run's directory: telemetry, logs, vsftpd's configuration.
    pub dir: &'a Path,
    /// The directory the server serves.
    pub root: &'a Path,
    /// The server's `--tune` text (used when the server is rightsize).
    pub server_tune: &'a str,
    /// The client's `--tune` text (used when the client is rightsize).
    pub client_tune: &'a str,
    /// More options for `rightsize serve` (none for vsftpd).
    pub server_args: &'a [String],
    /// Bytes to move.
    pub size: Bytes,
}

/// A file or directory a run needs before its server starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunFile {
    /// A directory, created with its parents if missing (and left).
    Dir(PathBuf),
    /// A text file.
    Text {
        /// Where.
        path: PathBuf,
        /// Its contents.
        text: String,
    },
    /// A sparse file of zeros, readable by everyone, removed when the run
    /// is over.
    Sparse {
        /// Where.
        path: PathBuf,
        /// Its length.
        bytes: Bytes,
    },
}

impl Peer {
    /// Its name, as `--peers` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Peer::Rightsize => "rightsize",
            Peer::Vsftpd => "vsftpd",
            Peer::Curl => "curl",
            Peer::Globus => "globus",
        }
    }

    /// The server (the sender) is `rightsize serve`, with its tuner and
    /// telemetry.
    pub fn server_is_rightsize(self) -> bool {
        !matches!(self, Peer::Vsftpd)
    }

    /// The client (the receiver) is `rightsize get`, with its tuner and
    /// `--json` report.
    pub fn client_is_rightsize(self) -> bool {
        matches!(self, Peer::Rightsize | Peer::Vsftpd)
    }

    /// The client program, for messages.
    pub fn client_program(self) -> &'static str {
        match self {
            Peer::Rightsize | Peer::Vsftpd => "rightsize get",
            Peer::Curl => "curl",
            Peer::Globus => "globus-url-copy",
        }
    }

    /// The server's command line, run on the right host by the path.
    pub fn server_argv(self, e: &Ends) -> Vec<String> {
        if self == Peer::Vsftpd {
            return vec!["vsftpd".to_owned(), s(&vsftpd_conf(e.dir))];
        }
        let mut argv: Vec<String> = [
            &s(e.rightsize),
            "serve",
            "--root",
            &s(e.root),
            "--listen",
            &format!("0.0.0.0:{PORT}"),
            "--tune",
            e.server_tune,
            "--telemetry-dir",
            &s(e.dir),
            "-q",
        ]
        .map(str::to_owned)
        .to_vec();
        argv.extend(e.server_args.iter().cloned());
        argv
    }

    /// The client's command line, run on the left host; its standard
    /// output is the run's `client.json`.
    pub fn client_argv(self, e: &Ends) -> Vec<String> {
        let zero = |bytes: u64| format!("ftp://right:{PORT}/.rightsize/zero/{bytes}");
        let get = |url: String| -> Vec<String> {
            [
                &s(e.rightsize),
                "get",
                &url,
                "-o",
                "/dev/null",
                "--tune",
                e.client_tune,
                "--json",
                "--telemetry",
                &s(&e.dir.join("client.jsonl")),
            ]
            .map(str::to_owned)
            .to_vec()
        };
        match self {
            Peer::Rightsize => get(zero(e.size.0)),
            Peer::Vsftpd => get(format!("ftp://right:{PORT}/{VSFTPD_FILE}")),
            Peer::Curl => ["curl", "-sS", "-o", "/dev/null", "-w", "%{json}"]
                .map(str::to_owned)
                .into_iter()
                .chain([zero(e.size.0)])
                .collect(),
            Peer::Globus => vec![
                "sh".to_owned(),
                "-c".to_owned(),
                GLOBUS_TIMED.to_owned(),
                "sh".to_owned(),
                "globus-url-copy".to_owned(),
                zero(GLOBUS_PROBE_BYTES),
                zero(e.size.0),
                "file:///dev/null".to_owned(),
            ],
        }
    }

    /// What must exist before the server starts.
    pub fn files(self, e: &Ends) -> Vec<RunFile> {
        if self != Peer::Vsftpd {
            return Vec::new();
        }
        vec![
            RunFile::Dir(PathBuf::from(VSFTPD_EMPTY_DIR)),
            RunFile::Text {
                path: vsftpd_conf(e.dir),
                text: vsftpd_config(e.root),
            },
            RunFile::Sparse {
                path: e.root.join(VSFTPD_FILE),
                bytes: e.size,
            },
        ]
    }
}

fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

fn vsftpd_conf(dir: &Path) -> PathBuf {
    dir.join("vsftpd.conf")
}

/// vsftpd 3.0.3 as `rightsize-bench ftp` runs it: in the foreground,
/// anonymous and read-only, on [`PORT`] of every address. It sets no
/// socket buffer of its own.
pub fn vsftpd_config(root: &Path) -> String {
    format!(
        "listen=YES\nbackground=NO\nlisten_port={PORT}\n\
         anonymous_enable=YES\nlocal_enable=NO\nanon_root={}\nno_anon_password=YES\n\
         write_enable=NO\nrun_as_launching_user=YES\nseccomp_sandbox=NO\nxferlog_enable=NO\n",
        root.display()
    )
}

impl fmt::Display for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Peer {
    type Err = String;

    fn from_str(text: &str) -> Result<Peer, String> {
        ALL.into_iter().find(|p| p.name() == text).ok_or_else(|| {
            format!(
                "unknown peer {text:?}; accepted: {}",
                ALL.map(Peer::name).join(", ")
            )
        })
    }
}

#[cfg(test)]
mod tests;
