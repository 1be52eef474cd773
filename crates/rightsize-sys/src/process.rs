//! Child processes: signalling one or its whole process group, waiting for
//! one with a deadline, and [`ProcessGroup`], a child that leads its own
//! group and takes the group with it when dropped.
//!
//! Guarantees: every `kill(2)` and wait names the call and the process (a
//! group as `-PGID`, as `kill` takes it) in its error; [`wait_until`]
//! reaps the child when it reports its exit and leaves it running
//! otherwise, so the caller decides how to stop it; a [`ProcessGroup`]
//! kills its group only while its leader is unreaped, so the group's id
//! cannot have been reused by anyone else's processes.

use std::ffi::OsString;
use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

/// A signal sent to stop a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// `SIGINT`, as Ctrl-C sends.
    Int,
    /// `SIGTERM`: asks the process to tidy up and exit.
    Term,
    /// `SIGKILL`: cannot be caught.
    Kill,
}

impl Signal {
    /// Its name: `SIGTERM`.
    pub fn name(self) -> &'static str {
        match self {
            Signal::Int => "SIGINT",
            Signal::Term => "SIGTERM",
            Signal::Kill => "SIGKILL",
        }
    }

    fn number(self) -> libc::c_int {
        match self {
            Signal::Int => libc::SIGINT,
            Signal::Term => libc::SIGTERM,
            Signal::Kill => libc::SIGKILL,
        }
    }
}

/// A process could not be started, signalled or waited for.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    /// `fork`/`exec` failed (the program is missing, not executable, ...).
    #[error("cannot run {program:?}")]
    Spawn {
        /// The program.
        program: OsString,
        /// What the OS said.
        #[source]
        source: io::Error,
    },
    /// `kill(2)` failed; `target` is negative for a process group.
    #[error("kill({target}, {})", .signal.name())]
    Kill {
        /// The pid, or minus the group's id.
        target: i64,
        /// The signal.
        signal: Signal,
        /// What the OS said.
        #[source]
        source: io::Error,
    },
    /// A `waitpid(2)` or `waitid(2)` on a child failed.
    #[error("{call}({pid})")]
    Wait {
        /// `waitpid` or `waitid`.
        call: &'static str,
        /// The child.
        pid: u32,
        /// What the OS said.
        #[source]
        source: io::Error,
    },
}

/// Sends `signal` to process `pid`.
pub fn signal(pid: u32, signal: Signal) -> Result<(), ProcessError> {
    kill(i64::from(pid), signal)
}

/// Sends `signal` to every process in group `pgid`.
pub fn signal_group(pgid: u32, signal: Signal) -> Result<(), ProcessError> {
    kill(-i64::from(pgid), signal)
}

fn kill(target: i64, signal: Signal) -> Result<(), ProcessError> {
    let error = |source| ProcessError::Kill {
        target,
        signal,
        source,
    };
    // A pid above pid_t's range names no process.
    let pid = libc::pid_t::try_from(target).map_err(|_| error(esrch()))?;
    // SAFETY: kill(2) takes plain integers and touches no memory of ours.
    if unsafe { libc::kill(pid, signal.number()) } != 0 {
        return Err(error(io::Error::last_os_error()));
    }
    Ok(())
}

fn esrch() -> io::Error {
    io::Error::from_raw_os_error(libc::ESRCH)
}

/// How a wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waited {
    /// The child exited and was reaped.
    Exited(ExitStatus),
    /// The deadline passed first; the child runs on.
    TimedOut,
    /// `stop()` said to give up first; the child runs on.
    Stopped,
}

/// Waits for `child` to exit, looking every `interval`: returns when it
/// has (reaped), when `deadline` (if any) has passed, or when `stop()` is
/// true, checked in that order.
pub fn wait_until(
    child: &mut Child,
    deadline: Option<Instant>,
    interval: Duration,
    mut stop: impl FnMut() -> bool,
) -> Result<Waited, ProcessError> {
    let pid = child.id();
    poll(deadline, interval, &mut stop, || {
        child.try_wait().map_err(|source| ProcessError::Wait {
            call: "waitpid",
            pid,
            source,
        })
    })
}

/// Calls `check` every `interval` until it returns something, `stop()` is
/// true or `deadline` passes.
fn poll(
    deadline: Option<Instant>,
    interval: Duration,
    stop: &mut dyn FnMut() -> bool,
    mut check: impl FnMut() -> Result<Option<ExitStatus>, ProcessError>,
) -> Result<Waited, ProcessError> {
    loop {
        if let Some(status) = check()? {
            return Ok(Waited::Exited(status));
        }
        if stop() {
            return Ok(Waited::Stopped);
        }
        let nap = match deadline.map(|d| d.saturating_duration_since(Instant::now())) {
            Some(left) if left.is_zero() => return Ok(Waited::TimedOut),
            Some(left) => left.min(interval),
            None => interval,
        };
        std::thread::sleep(nap);
    }
}

/// A child that leads its own process group. Dropping it kills the whole
/// group (`SIGKILL`) and reaps the child, so helpers the child started
/// (Chromium's, a shell's background jobs) do not outlive it.
#[derive(Debug)]
pub struct ProcessGroup {
    /// `None` once reaped by [`ProcessGroup::wait`].
    leader: Option<Child>,
}

impl ProcessGroup {
    /// Runs `command` as the leader of a new process group
    /// (`setpgid(0, 0)` in the child).
    pub fn spawn(command: &mut Command) -> Result<ProcessGroup, ProcessError> {
        let leader = command
            .process_group(0)
            .spawn()
            .map_err(|source| ProcessError::Spawn {
                program: command.get_program().to_owned(),
                source,
            })?;
        Ok(ProcessGroup {
            leader: Some(leader),
        })
    }

    /// The leader's pid, which is also the group's id.
    pub fn id(&self) -> Option<u32> {
        self.leader.as_ref().map(Child::id)
    }

    /// Waits up to `timeout` (looking every `interval`) for the leader to
    /// exit, then kills what it left in its group and reaps it. On
    /// [`Waited::TimedOut`] too the group is killed and the leader reaped
    /// before this returns (`self` is dropped).
    pub fn wait(mut self, timeout: Duration, interval: Duration) -> Result<Waited, ProcessError> {
        let deadline = Instant::now() + timeout;
        let exited = poll(Some(deadline), interval, &mut || false, || {
            // The status is read for real by Child::wait below.
            self.leader_exited()
                .map(|gone| gone.then(ExitStatus::default))
        })?;
        if exited == Waited::TimedOut {
            return Ok(Waited::TimedOut); // Drop kills the group
        }
        self.kill_group();
        let Some(mut leader) = self.leader.take() else {
            return Ok(Waited::Exited(ExitStatus::default()));
        };
        let pid = leader.id();
        leader
            .wait()
            .map(Waited::Exited)
            .map_err(|source| ProcessError::Wait {
                call: "waitpid",
                pid,
                source,
            })
    }

    /// Whether the leader has exited, without reaping it: while it is an
    /// unreaped zombie its pid (the group's id) cannot be reused, so
    /// killing the group afterwards cannot hit anyone else's.
    fn leader_exited(&self) -> Result<bool, ProcessError> {
        let Some(pid) = self.id() else {
            return Ok(true);
        };
        let id = libc::id_t::from(pid);
        // SAFETY: a zeroed siginfo_t is a valid value of the plain C struct.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
        // SAFETY: waitid(2) writes only into `info`, which we own;
        // WNOWAIT leaves the child to be reaped by Child::wait.
        if unsafe { libc::waitid(libc::P_PID, id, &mut info, flags) } != 0 {
            return Err(ProcessError::Wait {
                call: "waitid",
                pid,
                source: io::Error::last_os_error(),
            });
        }
        // SAFETY: waitid filled `info` (or left it zeroed: no child exited).
        Ok(unsafe { info.si_pid() } != 0)
    }

    /// `SIGKILL` to the group while the leader is unreaped. Best effort:
    /// a group that is already gone is what was wanted.
    fn kill_group(&self) {
        if let Some(pgid) = self.id() {
            let _ = signal_group(pgid, Signal::Kill);
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill_group();
        if let Some(mut leader) = self.leader.take() {
            let _ = leader.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    #[test]
    fn a_hung_group_is_killed_at_the_timeout() {
        let group = ProcessGroup::spawn(Command::new("sh").args(["-c", "sleep 30 & sleep 30"]))
            .expect("sh");
        let pgid = group.id().expect("a leader");
        let started = Instant::now();
        let waited = group
            .wait(Duration::from_millis(100), Duration::from_millis(20))
            .expect("wait");
        assert_eq!(waited, Waited::TimedOut);
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_group_gone(pgid);
    }

    #[test]
    fn a_group_that_ends_is_reaped_with_its_status_and_its_stragglers_killed() {
        let group =
            ProcessGroup::spawn(Command::new("sh").args(["-c", "sleep 30 & exit 7"])).expect("sh");
        let pgid = group.id().expect("a leader");
        let waited = group
            .wait(Duration::from_secs(10), Duration::from_millis(20))
            .expect("wait");
        match waited {
            Waited::Exited(status) => assert_eq!(status.code(), Some(7)),
            other => panic!("{other:?}"),
        }
        assert_group_gone(pgid);
    }

    #[test]
    fn a_missing_program_names_it() {
        let err = ProcessGroup::spawn(&mut Command::new("/nonexistent/rightsize-test"))
            .expect_err("spawn");
        assert!(
            err.to_string().contains("/nonexistent/rightsize-test"),
            "{err}"
        );
    }

    #[test]
    fn wait_until_times_out_then_a_signal_ends_the_child() {
        let mut child = Command::new("sleep").arg("30").spawn().expect("sleep");
        let deadline = Instant::now() + Duration::from_millis(50);
        let waited = wait_until(
            &mut child,
            Some(deadline),
            Duration::from_millis(10),
            || false,
        );
        assert_eq!(waited.expect("wait"), Waited::TimedOut);
        signal(child.id(), Signal::Term).expect("kill");
        let deadline = Instant::now() + Duration::from_secs(10);
        match wait_until(
            &mut child,
            Some(deadline),
            Duration::from_millis(10),
            || false,
        ) {
            Ok(Waited::Exited(status)) => assert!(!status.success()),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn wait_until_gives_up_when_told() {
        let mut child = Command::new("sleep").arg("30").spawn().expect("sleep");
        let mut asked = 0;
        let waited = wait_until(&mut child, None, Duration::from_millis(1), || {
            asked += 1;
            asked == 3
        });
        assert_eq!(waited.expect("wait"), Waited::Stopped);
        let _ = child.kill();
        let _ = child.wait();
    }

    #[test]
    fn a_failed_kill_names_the_call_and_the_group() {
        // Group ids are pids: one above pid_max names no group.
        let err = signal_group(1 << 22 | 1, Signal::Term).expect_err("kill");
        assert!(
            err.to_string().starts_with("kill(-4194305, SIGTERM)"),
            "{err}"
        );
    }

    /// Waits (up to 2 s) for the group's processes to die: SIGKILL is
    /// delivered asynchronously, and an orphan may wait for init to reap
    /// it (zombies do not count).
    fn assert_group_gone(pgid: u32) {
        let mut left = live_members(pgid);
        for _ in 0..100 {
            if left.is_empty() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
            left = live_members(pgid);
        }
        assert!(left.is_empty(), "the group outlived its leader: {left:?}");
    }

    fn live_members(pgid: u32) -> Vec<String> {
        let Ok(dir) = fs::read_dir("/proc") else {
            return Vec::new();
        };
        dir.filter_map(|e| fs::read_to_string(e.ok()?.path().join("stat")).ok())
            .filter(|stat| {
                // pid (comm) state ppid pgrp ...
                let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
                let f: Vec<&str> = rest.split_whitespace().collect();
                f.len() > 3 && f[3] == pgid.to_string() && f[0] != "Z" && f[0] != "X"
            })
            .collect()
    }
}
