//! Driving the pinned `rattan` binary.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rightsize_path::PathSpec;
use rightsize_path::rattan::{self as config_gen, LEFT_ADDR, RIGHT_ADDR};

use super::{EmuError, HostRecord, Record, packet_sockets};
use crate::netns;
use crate::process::{self, Signal};

/// The Rattan release rightsize is built and tested against.
pub const VERSION: &str = "0.1.1";

/// How long Rattan may take to build its namespaces.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// Finds the `rattan` binary: `$RIGHTSIZE_RATTAN`, then `PATH`, then
/// `~/.cargo/bin`, and checks its version.
pub fn binary() -> Result<PathBuf, EmuError> {
    let fix = format!("run scripts/setup, or: cargo install rattan --version {VERSION} --locked");
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(path) = std::env::var_os("RIGHTSIZE_RATTAN") {
        candidates.push(PathBuf::from(path));
    }
    if let Some(paths) = std::env::var_os("PATH") {
        candidates.extend(std::env::split_paths(&paths).map(|d| d.join("rattan")));
    }
    if let Some(home) = std::env::var_os("HOME") {
        candidates.push(Path::new(&home).join(".cargo/bin/rattan"));
    }
    candidates.push(PathBuf::from("/root/.cargo/bin/rattan"));
    let Some(found) = candidates.into_iter().find(|p| p.is_file()) else {
        return Err(EmuError::Missing {
            problem: "the Rattan emulator is not installed".to_owned(),
            fix,
        });
    };
    let output = Command::new(&found)
        .arg("--version")
        .output()
        .map_err(|e| EmuError::Missing {
            problem: format!("cannot run {}: {e}", found.display()),
            fix: fix.clone(),
        })?;
    let version = String::from_utf8_lossy(&output.stdout);
    if !version.split_whitespace().any(|w| w == VERSION) {
        return Err(EmuError::Missing {
            problem: format!(
                "{} is Rattan \"{}\", not the pinned {VERSION}",
                found.display(),
                version.trim()
            ),
            fix,
        });
    }
    Ok(found)
}

/// Brings up a Rattan path; returns its record and the emulator process.
pub(super) fn up(
    spec: &PathSpec,
    name: &str,
    dir: &Path,
    die_with_parent: bool,
) -> Result<(Record, Option<Child>), EmuError> {
    let rattan = binary()?;
    let dir_text = dir.to_string_lossy().into_owned();
    let files = config_gen::config(spec, &dir_text);
    for (file, contents) in &files.traces {
        write(&dir.join(file), contents)?;
    }
    // The holders keep each host's namespace alive and tell us Rattan's ID.
    let holder = |side: &str| {
        format!(
            "[\"sh\", \"-c\", \"echo \\\"$RATTAN_ID\\\" > {dir_text}/id.{side}.tmp && mv {dir_text}/id.{side}.tmp {dir_text}/id.{side} && exec sleep infinity\"]"
        )
    };
    let config = format!(
        "{}\n[commands]\nleft = {}\nright = {}\n",
        files.config,
        holder("left"),
        holder("right")
    );
    let config_path = dir.join("rattan.toml");
    write(&config_path, &config)?;
    check_readback(&rattan, &config_path, &config)?;

    let log_path = dir.join("rattan.log");
    let log = std::fs::File::create(&log_path).map_err(|source| EmuError::Write {
        path: log_path.clone(),
        source,
    })?;
    let log_err = log.try_clone().map_err(|source| EmuError::Write {
        path: log_path.clone(),
        source,
    })?;
    let mut command = Command::new(&rattan);
    command
        .args(["run", "--config"])
        .arg(&config_path)
        .env("RUST_LOG", "error")
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err);
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: setsid and prctl are async-signal-safe; nothing else runs.
        unsafe {
            command.pre_exec(move || {
                libc::setsid();
                if die_with_parent {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                }
                Ok(())
            });
        }
    }
    let mut child = command
        .spawn()
        .map_err(|e| EmuError::Emulator(format!("{} could not start: {e}", rattan.display())))?;
    let _ = std::fs::write(dir.join("emulator.pid"), child.id().to_string());

    let deadline = Instant::now() + START_TIMEOUT;
    let id = loop {
        let left = std::fs::read_to_string(dir.join("id.left"));
        let right = std::fs::read_to_string(dir.join("id.right"));
        if let (Ok(l), Ok(r)) = (&left, &right)
            && !l.trim().is_empty()
            && l.trim() == r.trim()
        {
            break l.trim().to_owned();
        }
        if let Ok(Some(status)) = child.try_wait() {
            let log = std::fs::read_to_string(&log_path).unwrap_or_default();
            return Err(EmuError::Emulator(format!(
                "exited ({status}) before the path was up: {}",
                last_lines(&log, 5)
            )));
        }
        if Instant::now() > deadline {
            stop(child.id());
            let _ = child.wait();
            return Err(EmuError::Emulator(format!(
                "did not bring the path up within {}s (log: {})",
                START_TIMEOUT.as_secs(),
                log_path.display()
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let left = format!("ns-left-{id}");
    let right = format!("ns-right-{id}");
    let emulator_ns = format!("ns-rattan-{id}");
    for (ns, own) in [(&left, LEFT_ADDR), (&right, RIGHT_ADDR)] {
        if let Err(e) =
            netns::write_path_hosts(ns, own, &[(LEFT_ADDR, "left"), (RIGHT_ADDR, "right")])
        {
            stop(child.id());
            let _ = child.wait();
            return Err(e.into());
        }
    }
    let ingress = widen_ingress(child.id(), config_gen::ingress_buffer_bytes(spec));
    let record = Record {
        name: name.to_owned(),
        backend: "rattan".to_owned(),
        emulator_ingress_buffer: ingress,
        emulator_pid: Some(child.id()),
        emulator_id: Some(id),
        emulator_ns: Some(emulator_ns.clone()),
        namespaces: vec![left.clone(), emulator_ns, right.clone()],
        left: HostRecord {
            namespace: left,
            addr: LEFT_ADDR,
        },
        right: HostRecord {
            namespace: right,
            addr: RIGHT_ADDR,
        },
        owner_pid: None,
        host_sysctls: Vec::new(),
        spec: serde_json::to_value(spec).unwrap_or_default(),
    };
    Ok((record, Some(child)))
}

/// Rattan's packet sockets (one per veth: two) appear while it starts its
/// hosts; waits for them, then widens their receive buffers to `bytes`.
/// Returns the buffer the kernel reports, or `None` (with a note on
/// stderr) when it could not: the path still works, but the emulator may
/// drop a sender's bursts at its input, and runs say so.
fn widen_ingress(pid: u32, bytes: u64) -> Option<u64> {
    const SOCKETS: usize = 2;
    let deadline = Instant::now() + Duration::from_secs(3);
    let result = loop {
        match packet_sockets::widen(pid, bytes) {
            Ok(w) if w.sockets >= SOCKETS => break Ok(w),
            Ok(w) if Instant::now() > deadline => {
                break Err(format!(
                    "found {} packet sockets in Rattan (pid {pid}), expected {SOCKETS}",
                    w.sockets
                ));
            }
            Ok(_) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => break Err(format!("reading Rattan's sockets (pid {pid}): {e}")),
        }
    };
    match result {
        Ok(w) => Some(w.after),
        Err(e) => {
            eprintln!(
                "note: cannot widen the emulator's input buffers ({e}); it may drop a sender's bursts before its queue"
            );
            None
        }
    }
}

/// Rattan ignores keys it does not know: ask it to print the configuration
/// as it read it and compare.
fn check_readback(rattan: &Path, config_path: &Path, config: &str) -> Result<(), EmuError> {
    let output = Command::new(rattan)
        .args(["run", "--generate", "--config"])
        .arg(config_path)
        .env("RUST_LOG", "error")
        .output()
        .map_err(|e| EmuError::Emulator(format!("could not check its configuration: {e}")))?;
    let theirs = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        return Err(EmuError::Emulator(format!(
            "refused the generated configuration {}: {}",
            config_path.display(),
            last_lines(&String::from_utf8_lossy(&output.stderr), 5)
        )));
    }
    let missing = config_gen::unread_keys(config, &theirs).map_err(EmuError::Emulator)?;
    if !missing.is_empty() {
        return Err(EmuError::Emulator(format!(
            "did not read the generated configuration {} as written: {}",
            config_path.display(),
            missing.join("; ")
        )));
    }
    Ok(())
}

/// Stops a Rattan process: SIGTERM (it stops its hosts' commands and
/// removes its namespaces), then SIGKILL after 5 s. Does nothing if `pid`
/// is not a Rattan process (a stale record after a reboot).
pub(super) fn stop(pid: u32) {
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    if comm.trim() != "rattan" {
        return;
    }
    // A pid we just checked is Rattan's.
    let _ = process::signal(pid, Signal::Term);
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline && running(pid) {
        std::thread::sleep(Duration::from_millis(20));
    }
    if running(pid) {
        let _ = process::signal(pid, Signal::Kill);
    }
}

/// Alive and not a zombie.
pub(super) fn running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

fn write(path: &Path, contents: &str) -> Result<(), EmuError> {
    std::fs::write(path, contents).map_err(|source| EmuError::Write {
        path: path.to_owned(),
        source,
    })
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}
