//! Child processes for benchmarks: servers that stop when dropped, and
//! clients whose wall time and output are kept.

use std::process::{Child, ChildStdout, Command, Output, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

/// A server process, killed and reaped on drop.
#[derive(Debug)]
pub struct Daemon {
    name: String,
    child: Child,
}

impl Daemon {
    /// Starts `command` with its output discarded.
    pub fn start(name: &str, mut command: Command) -> anyhow::Result<Daemon> {
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("starting {name} ({command:?})"))?;
        Ok(Daemon {
            name: name.into(),
            child,
        })
    }

    /// Starts `command` with its stdout piped to the caller (to read a
    /// banner), stderr discarded.
    pub fn start_piped(name: &str, mut command: Command) -> anyhow::Result<(Daemon, ChildStdout)> {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("starting {name} ({command:?})"))?;
        let stdout = child.stdout.take().context("no stdout")?;
        let daemon = Daemon {
            name: name.into(),
            child,
        };
        Ok((daemon, stdout))
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Fails if the process has already exited.
    pub fn check_running(&mut self) -> anyhow::Result<()> {
        if let Some(status) = self.child.try_wait()? {
            bail!("{} exited early: {status}", self.name);
        }
        Ok(())
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A finished client run.
#[derive(Debug)]
pub struct Timed {
    /// Wall time of the process.
    pub elapsed: Duration,
    /// What it printed.
    pub output: Output,
}

/// Runs `command` to its end; fails with its stderr unless it succeeded.
pub fn run_timed(what: &str, mut command: Command) -> anyhow::Result<Timed> {
    let started = Instant::now();
    let output = command
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running {what} ({command:?})"))?;
    let elapsed = started.elapsed();
    if !output.status.success() {
        bail!(
            "{what} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(Timed { elapsed, output })
}

/// Waits until `probe` succeeds, for at most `timeout`.
pub fn wait_for(
    what: &str,
    timeout: Duration,
    mut probe: impl FnMut() -> bool,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if probe() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    bail!("{what} was not ready within {timeout:?}")
}

/// A command line from string slices.
pub fn argv(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|s| (*s).to_owned()).collect()
}

/// The last two lines of a program's output, joined by ` | `: what a
/// one-line error quotes of it.
pub fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().rev().take(2).collect();
    lines.into_iter().rev().collect::<Vec<_>>().join(" | ")
}
