//! Emulated paths: two hosts in network namespaces joined by an emulated
//! WAN link, brought up from a [`PathSpec`], torn down on drop.
//!
//! Two backends. **Rattan** (the pinned `rattan` 0.1.1 binary, run in its
//! "isolated" mode) creates `ns-left-ID`, `ns-rattan-ID` and `ns-right-ID`
//! and addresses the hosts 10.1.1.1 and 10.2.1.1; rightsize starts one
//! holder process on each side (so the namespaces live until rightsize says
//! so), learns the ID from them, and records it. **netem** (where the
//! kernel has `sch_netem`) uses rightsize's own `rs-NAME-l`/`-r` namespaces
//! on 198.18.0.0/30 with the perfSONAR lab's qdiscs (docs/sources.md).
//!
//! Every path is recorded in `/run/rightsize/paths/NAME/state.json` before
//! anything runs in it, so [`down_all`] can remove what a killed run left
//! behind: every process in the path's namespaces, the emulator, the
//! namespaces and their `/etc/netns` files.

pub mod counters;
mod netem_backend;
mod packet_sockets;
mod rattan;
pub mod run;

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use rightsize_path::{Backend, PathSpec, Side};
use serde::{Deserialize, Serialize};

use crate::netns::{self, NetnsError};

/// Where paths are recorded.
pub const STATE_DIR: &str = "/run/rightsize/paths";

/// Why a path could not be brought up, used or torn down.
#[derive(Debug, thiserror::Error)]
pub enum EmuError {
    /// Something the machine lacks, with the command that fixes it.
    #[error("{problem}; {fix}")]
    Missing {
        /// What is missing.
        problem: String,
        /// What to run.
        fix: String,
    },
    /// An `ip` command.
    #[error(transparent)]
    Netns(#[from] NetnsError),
    /// The emulator failed to start or died.
    #[error("the emulator {0}")]
    Emulator(String),
    /// A file of the path's state.
    #[error("cannot read {what}")]
    Read {
        /// Which file.
        what: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Writing a file of the path's state.
    #[error("cannot write {path}")]
    Write {
        /// Which file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A path name that is not up.
    #[error("no path named \"{name}\" is up; `rightsize path list` shows the paths that are")]
    NoSuchPath {
        /// The name given.
        name: String,
    },
    /// A command that needs one path and finds several or none.
    #[error("{0}")]
    Ambiguous(String),
    /// A host setting that cannot be applied.
    #[error("{0}")]
    Setting(String),
    /// Waiting for or signalling a process of the path.
    #[error(transparent)]
    Process(#[from] crate::process::ProcessError),
    /// A command on the path that could not be started.
    #[error("cannot run `{command}`")]
    Run {
        /// The command line.
        command: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// One host of a path.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct HostRecord {
    /// Its network namespace.
    pub namespace: String,
    /// Its address.
    pub addr: Ipv4Addr,
}

/// What is recorded about a path that is up.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Record {
    /// rightsize's name for the path (`rs-…`).
    pub name: String,
    /// `rattan` or `netem`.
    pub backend: String,
    /// The emulator process (Rattan), if any.
    pub emulator_pid: Option<u32>,
    /// Rattan's instance ID (the suffix of its namespaces).
    pub emulator_id: Option<String>,
    /// The namespace the emulator forwards in (Rattan's `ns-rattan-ID`).
    pub emulator_ns: Option<String>,
    /// Every namespace of the path.
    pub namespaces: Vec<String>,
    /// The left host.
    pub left: HostRecord,
    /// The right host.
    pub right: HostRecord,
    /// The process that owns the path and whose death makes it stale
    /// (`path run`); `None` for a path left up on purpose (`path up`).
    pub owner_pid: Option<u32>,
    /// The receive buffer of each of the emulator's packet sockets, as the
    /// kernel reported it after rightsize widened it (Rattan); `None` when
    /// not widened (netem, or it failed).
    #[serde(default)]
    pub emulator_ingress_buffer: Option<u64>,
    /// Host-wide sysctls this path raised, with the value to restore.
    pub host_sysctls: Vec<(String, String)>,
    /// The spec, as brought up.
    pub spec: serde_json::Value,
}

impl Record {
    /// The host on `side`.
    pub fn host(&self, side: Side) -> &HostRecord {
        match side {
            Side::Left => &self.left,
            Side::Right => &self.right,
        }
    }

    /// A command that runs `program` on `side`, with `RS_LEFT`, `RS_RIGHT`
    /// and `RS_PEER` (the other host's address) in its environment.
    pub fn command(&self, side: Side, program: &str) -> Command {
        let mut command = netns::command_in(&self.host(side).namespace, program);
        command
            .env("RS_LEFT", self.left.addr.to_string())
            .env("RS_RIGHT", self.right.addr.to_string())
            .env("RS_PEER", self.host(side.other()).addr.to_string())
            .env("RS_PATH", &self.name);
        command
    }
}

/// How to bring a path up.
#[derive(Debug, Default)]
pub struct UpOptions {
    /// The path's name; a fresh `rs-path-PID-N` when `None`.
    pub name: Option<String>,
    /// Stop the emulator if this process dies (for `path run`).
    pub die_with_parent: bool,
}

/// A path that is up; tears itself down on drop unless [`EmulatedPath::detach`]ed.
#[derive(Debug)]
pub struct EmulatedPath {
    record: Record,
    emulator: Option<Child>,
    detached: bool,
    /// What bringing it up changed outside the path, for people.
    notes: Vec<String>,
}

impl EmulatedPath {
    /// Brings `spec` up. `down_all` is the caller's business (the CLI runs
    /// it first); this never touches other paths.
    pub fn up(spec: &PathSpec, options: UpOptions) -> Result<EmulatedPath, EmuError> {
        preflight_root()?;
        let name = options
            .name
            .clone()
            .unwrap_or_else(|| netns::unique_name("path"));
        if !name.starts_with(netns::PREFIX)
            || name.len() > 40
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(EmuError::Setting(format!(
                "path name \"{name}\" must start with \"rs-\" and hold only letters, digits, - and _ (at most 40)"
            )));
        }
        let dir = Path::new(STATE_DIR).join(&name);
        if dir.exists() {
            return Err(EmuError::Setting(format!(
                "a path named \"{name}\" is already up; `rightsize path down {name}` removes it"
            )));
        }
        create_dir(&dir)?;
        let backend = match spec.backend {
            Backend::Rattan => Backend::Rattan,
            Backend::Netem => Backend::Netem,
            Backend::Auto if netem_backend::available() => Backend::Netem,
            Backend::Auto => Backend::Rattan,
        };
        let started = match backend {
            Backend::Netem => netem_backend::up(spec, &name, &dir),
            _ => rattan::up(spec, &name, &dir, options.die_with_parent),
        };
        let (record, emulator) = match started {
            Ok(started) => started,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                return Err(e);
            }
        };
        let mut record = record;
        if options.die_with_parent {
            record.owner_pid = Some(std::process::id());
        }
        let mut path = EmulatedPath {
            record,
            emulator,
            detached: false,
            notes: Vec::new(),
        };
        // From here on, Drop tears everything down if a step fails.
        path.save()?;
        for side in [Side::Left, Side::Right] {
            path.apply_host(spec, side)?;
        }
        path.save()?;
        Ok(path)
    }

    /// What bringing the path up changed outside it (a host-wide sysctl
    /// raised until the last path goes down), one line each, for people.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// What is recorded about the path.
    pub fn record(&self) -> &Record {
        &self.record
    }

    /// Leaves the path up after this process exits (`rightsize path up`).
    pub fn detach(mut self) -> Record {
        self.detached = true;
        if let Some(mut child) = self.emulator.take() {
            // Reap it in the background if it ever exits while we live.
            std::thread::spawn(move || child.wait());
        }
        self.record.clone()
    }

    fn save(&self) -> Result<(), EmuError> {
        save(&self.record)
    }

    fn apply_host(&mut self, spec: &PathSpec, side: Side) -> Result<(), EmuError> {
        let namespace = self.record.host(side).namespace.clone();
        for (key, value) in spec.host(side).sysctls() {
            if key == "net.ipv4.tcp_congestion_control" {
                self.allow_congestion_control(side, &value)?;
            }
            let global = matches!(key, "net.core.rmem_max" | "net.core.wmem_max")
                && !writable_in(&namespace, key);
            if !global {
                netns::sysctl_in(&namespace, key, &value).map_err(|e| {
                    EmuError::Setting(format!(
                        "{side} host: cannot set {key} = {value}: {e}",
                        side = side.name()
                    ))
                })?;
                continue;
            }
            // This kernel keeps it host-wide (read-only in a namespace):
            // raise it on the host, restore it when the last path goes down.
            let current = crate::sysctl::read_key(key).unwrap_or_default();
            let wanted: u64 = value.parse().unwrap_or(0);
            let now: u64 = current.trim().parse().unwrap_or(0);
            if wanted < now {
                return Err(EmuError::Setting(format!(
                    "{} host: {key} = {value} is below the host's {now}, and this kernel keeps {key} host-wide \
                     (read-only inside a namespace), so a lower value cannot be emulated; leave it out or use \
                     tcp_rmem/tcp_wmem, which are per namespace",
                    side.name()
                )));
            }
            if wanted > now {
                remember_host_sysctl(key, &current)?;
                crate::sysctl::write_key(key, &value).map_err(|e| {
                    EmuError::Setting(format!("cannot raise host-wide {key} to {value}: {e}"))
                })?;
                self.notes.push(format!(
                    "note: {key} is host-wide on this kernel; raised from {now} to {value} until the last path goes down"
                ));
                self.record.host_sysctls.push((key.to_owned(), current));
            }
        }
        Ok(())
    }

    /// Outside the initial namespace, a namespace's default congestion
    /// control must be one the host allows
    /// (`net.ipv4.tcp_allowed_congestion_control`); add it there, to be
    /// restored when the last path goes down.
    fn allow_congestion_control(&mut self, side: Side, name: &str) -> Result<(), EmuError> {
        const ALLOWED: &str = "net.ipv4.tcp_allowed_congestion_control";
        let available = crate::sysctl::read_key("net.ipv4.tcp_available_congestion_control")
            .unwrap_or_default();
        if !available.split_whitespace().any(|c| c == name) {
            return Err(EmuError::Setting(format!(
                "{} host: congestion control \"{name}\" is not available on this kernel (available: {available}); \
                 load it with: modprobe tcp_{name}",
                side.name()
            )));
        }
        let allowed = crate::sysctl::read_key(ALLOWED).unwrap_or_default();
        if allowed.split_whitespace().any(|c| c == name) {
            return Ok(());
        }
        remember_host_sysctl(ALLOWED, &allowed)?;
        let wider = format!("{allowed} {name}");
        crate::sysctl::write_key(ALLOWED, wider.trim()).map_err(|e| {
            EmuError::Setting(format!("cannot add {name} to the host's {ALLOWED}: {e}"))
        })?;
        self.record.host_sysctls.push((ALLOWED.to_owned(), allowed));
        Ok(())
    }

    /// Starts `argv` on `side` in the background, its output appended to
    /// the path's `SIDE.log`; it is stopped at teardown with everything
    /// else in the host's namespace.
    pub fn start(&self, side: Side, argv: &[String]) -> Result<(), EmuError> {
        let log = Path::new(STATE_DIR)
            .join(&self.record.name)
            .join(format!("{}.log", side.name()));
        self.start_logged(side, argv, &log)
    }

    /// [`start`](Self::start), its output appended to `log` instead.
    pub fn start_logged(&self, side: Side, argv: &[String], log: &Path) -> Result<(), EmuError> {
        let Some((program, args)) = argv.split_first() else {
            return Ok(());
        };
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .map_err(|source| EmuError::Write {
                path: log.to_owned(),
                source,
            })?;
        let err = file.try_clone().map_err(|source| EmuError::Write {
            path: log.to_owned(),
            source,
        })?;
        let mut command = self.record.command(side, program);
        command
            .args(args)
            .stdin(Stdio::null())
            .stdout(file)
            .stderr(err);
        new_session(&mut command);
        let child = command.spawn().map_err(|e| {
            EmuError::Setting(format!(
                "cannot start `{}` on the {} host: {e}",
                argv.join(" "),
                side.name()
            ))
        })?;
        std::thread::spawn(move || {
            let mut child = child;
            child.wait()
        });
        Ok(())
    }

    /// Tears the path down now, reporting what failed.
    pub fn down(mut self) -> Result<(), EmuError> {
        self.detached = true;
        self.stop()
    }

    fn stop(&mut self) -> Result<(), EmuError> {
        let result = teardown(&self.record);
        if let Some(mut child) = self.emulator.take() {
            let _ = child.wait();
        }
        result
    }
}

impl Drop for EmulatedPath {
    fn drop(&mut self) {
        if !self.detached {
            let _ = self.stop();
        }
    }
}

fn create_dir(dir: &Path) -> Result<(), EmuError> {
    std::fs::create_dir_all(dir).map_err(|source| EmuError::Write {
        path: dir.to_owned(),
        source,
    })
}

fn save(record: &Record) -> Result<(), EmuError> {
    let dir = Path::new(STATE_DIR).join(&record.name);
    let path = dir.join("state.json");
    let tmp = dir.join("state.json.tmp");
    let text = serde_json::to_string_pretty(record).unwrap_or_default();
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(|source| EmuError::Write { path, source })
}

/// Starts the child in a session of its own, so a Ctrl-C at the terminal
/// reaches rightsize, which then tears down in order.
fn new_session(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: setsid is async-signal-safe and the closure touches nothing else.
    unsafe {
        command.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
}

fn writable_in(namespace: &str, key: &str) -> bool {
    let file = format!("/proc/sys/{}", key.replace('.', "/"));
    netns::run_in(namespace, move || {
        std::fs::OpenOptions::new().write(true).open(&file).is_ok()
    })
    .unwrap_or(false)
}

const HOST_SYSCTLS: &str = "/run/rightsize/host-sysctls.json";

/// Records a host-wide sysctl's value before the first path changed it.
fn remember_host_sysctl(key: &str, value: &str) -> Result<(), EmuError> {
    let mut saved: Vec<(String, String)> = std::fs::read_to_string(HOST_SYSCTLS)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    if saved.iter().any(|(k, _)| k == key) {
        return Ok(());
    }
    saved.push((key.to_owned(), value.trim().to_owned()));
    let text = serde_json::to_string(&saved).unwrap_or_default();
    std::fs::write(HOST_SYSCTLS, text).map_err(|source| EmuError::Write {
        path: PathBuf::from(HOST_SYSCTLS),
        source,
    })
}

/// Restores host-wide sysctls once no path is up.
fn restore_host_sysctls() {
    if !records().is_empty() {
        return;
    }
    let Some(saved) = std::fs::read_to_string(HOST_SYSCTLS)
        .ok()
        .and_then(|t| serde_json::from_str::<Vec<(String, String)>>(&t).ok())
    else {
        return;
    };
    for (key, value) in saved {
        let _ = crate::sysctl::write_key(&key, &value);
    }
    let _ = std::fs::remove_file(HOST_SYSCTLS);
}

/// Removes one path: every process in its hosts' namespaces, the emulator,
/// the namespaces, its `/etc/netns` files and its record.
fn teardown(record: &Record) -> Result<(), EmuError> {
    for ns in [&record.left.namespace, &record.right.namespace] {
        netns::kill_processes_in(ns, Duration::from_secs(2));
    }
    if let Some(pid) = record.emulator_pid {
        rattan::stop(pid);
    }
    let live = netns::list().unwrap_or_default();
    let mut failed = Vec::new();
    for ns in &record.namespaces {
        if live.contains(ns) {
            netns::kill_processes_in(ns, Duration::from_millis(500));
            if let Err(e) = netns::delete(ns) {
                failed.push(e.to_string());
            }
        }
        netns::remove_hosts(ns);
    }
    let _ = std::fs::remove_dir_all(Path::new(STATE_DIR).join(&record.name));
    restore_host_sysctls();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(EmuError::Emulator(format!(
            "left namespaces behind: {}",
            failed.join("; ")
        )))
    }
}

/// Every recorded path.
pub fn records() -> Vec<Record> {
    let Ok(entries) = std::fs::read_dir(STATE_DIR) else {
        return Vec::new();
    };
    let mut out: Vec<Record> = entries
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("state.json")).ok())
        .filter_map(|t| serde_json::from_str(&t).ok())
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// The path named `name`, or the only one up when `name` is `None`.
pub fn find(name: Option<&str>) -> Result<Record, EmuError> {
    let all = records();
    match name {
        Some(name) => {
            all.into_iter()
                .find(|r| r.name == name)
                .ok_or_else(|| EmuError::NoSuchPath {
                    name: name.to_owned(),
                })
        }
        None => match all.len() {
            1 => all
                .into_iter()
                .next()
                .ok_or_else(|| EmuError::Ambiguous(String::new())),
            0 => Err(EmuError::Ambiguous(
                "no path is up; `rightsize path up SPEC` brings one up".to_owned(),
            )),
            _ => Err(EmuError::Ambiguous(format!(
                "{} paths are up ({}); name one with --name",
                all.len(),
                all.iter()
                    .map(|r| r.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        },
    }
}

/// Tears down the path named `name`.
pub fn down(name: &str) -> Result<(), EmuError> {
    let record = find(Some(name))?;
    teardown(&record)
}

/// Tears down what dead runs left behind, and nothing that is alive: paths
/// whose owner or emulator died, and unrecorded `rs-` namespaces named
/// after a process that no longer exists (`rs-WHAT-PID-N`). A state
/// directory without a record may be a path coming up right now, so only
/// [`down_all`] removes those. Run before every `up`.
pub fn down_stale() -> Result<Vec<String>, EmuError> {
    let alive = |pid: u32| Path::new(&format!("/proc/{pid}")).exists();
    let mut removed = Vec::new();
    let recorded = records();
    for record in &recorded {
        let owner_dead = record.owner_pid.is_some_and(|pid| !alive(pid));
        let emulator_dead = record.emulator_pid.is_some_and(|pid| !rattan::running(pid));
        if owner_dead || emulator_dead {
            teardown(record)?;
            removed.push(record.name.clone());
        }
    }
    for ns in netns::list()? {
        let Some(rest) = ns.strip_prefix(netns::PREFIX) else {
            continue;
        };
        let pid = rest
            .split('-')
            .filter_map(|part| part.parse::<u32>().ok())
            .next();
        if let Some(pid) = pid
            && !alive(pid)
            && !recorded.iter().any(|r| r.namespaces.contains(&ns))
        {
            netns::kill_processes_in(&ns, Duration::from_secs(1));
            netns::delete(&ns)?;
            removed.push(ns);
        }
    }
    Ok(removed)
}

/// Tears down every recorded path, then anything a killed run left behind
/// unrecorded (namespaces starting with `rs-`); returns what was removed.
pub fn down_all() -> Result<Vec<String>, EmuError> {
    let mut removed = Vec::new();
    for record in records() {
        teardown(&record)?;
        removed.push(record.name);
    }
    // A run killed between creating its directory and its record.
    if let Ok(entries) = std::fs::read_dir(STATE_DIR) {
        for entry in entries.flatten() {
            if let Ok(text) = std::fs::read_to_string(entry.path().join("emulator.pid"))
                && let Ok(pid) = text.trim().parse::<u32>()
            {
                rattan::stop(pid);
            }
            // Rattan's namespaces, if it was killed before it could remove them.
            if let Ok(id) = std::fs::read_to_string(entry.path().join("id.left")) {
                let live = netns::list().unwrap_or_default();
                for ns in ["left", "rattan", "right"].map(|w| format!("ns-{w}-{}", id.trim())) {
                    if live.contains(&ns) {
                        netns::kill_processes_in(&ns, Duration::from_secs(1));
                        netns::delete(&ns)?;
                        removed.push(ns);
                    }
                }
            }
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
    for ns in netns::list()? {
        if ns.starts_with(netns::PREFIX) {
            netns::kill_processes_in(&ns, Duration::from_secs(1));
            netns::delete(&ns)?;
            removed.push(ns);
        }
    }
    restore_host_sysctls();
    Ok(removed)
}

/// Checks what every backend needs (root, `/dev/net/tun`) before anything
/// is touched.
pub fn preflight_root() -> Result<(), EmuError> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(EmuError::Missing {
            problem: "emulated paths need root (network namespaces, veth, AF_PACKET)".to_owned(),
            fix: "run it as root: sudo rightsize path ...".to_owned(),
        });
    }
    if !Path::new("/dev/net/tun").exists() {
        return Err(EmuError::Missing {
            problem: "/dev/net/tun does not exist".to_owned(),
            fix:
                "load the tun module (modprobe tun) or, in a container, pass --device /dev/net/tun"
                    .to_owned(),
        });
    }
    Ok(())
}
