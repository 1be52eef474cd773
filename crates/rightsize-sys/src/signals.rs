//! Ending a long-running command in order: on `SIGINT` or `SIGTERM` (caught,
//! so that it can still write its counters or tear down what it built),
//! after a duration, or when its work ends by itself. The handlers only set
//! an atomic; [`wait`] and [`caught`] read it. Used by `path cross`,
//! `path run`, and `get` and `put` (which keep what they downloaded). And
//! `SIGHUP` counted ([`Hangups`]), for `serve` to reload its certificate.

use std::io;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How often [`wait`] checks.
pub const POLL_INTERVAL: Duration = Duration::from_millis(50);

/// A signal handler could not be installed.
#[derive(Debug, thiserror::Error)]
#[error("sigaction({signal})")]
pub struct SignalError {
    /// `SIGINT` or `SIGTERM`.
    pub signal: &'static str,
    /// What the OS said.
    #[source]
    pub source: io::Error,
}

/// The signal caught, 0 for none.
static CAUGHT: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(signal: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    CAUGHT.store(signal, Ordering::SeqCst);
}

const SIGNALS: [(libc::c_int, &str); 2] = [(libc::SIGINT, "SIGINT"), (libc::SIGTERM, "SIGTERM")];

/// `SIGINT` and `SIGTERM` caught until dropped, which restores the previous
/// handlers. Install one at a time.
#[derive(Debug)]
pub struct StopSignals {
    previous: Vec<(libc::c_int, libc::sigaction)>,
}

impl StopSignals {
    /// Catches `SIGINT` and `SIGTERM` from now on.
    pub fn install() -> Result<StopSignals, SignalError> {
        CAUGHT.store(0, Ordering::SeqCst);
        let mut installed = StopSignals {
            previous: Vec::new(),
        };
        for (signal, name) in SIGNALS {
            // SAFETY: an all-zero sigaction is valid (empty mask, no flags);
            // the handler only stores to an atomic.
            let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            // SAFETY: as above; `previous` is written by the kernel.
            let mut previous: libc::sigaction = unsafe { std::mem::zeroed() };
            // SAFETY: valid pointers to two sigaction structs for the call.
            if unsafe { libc::sigaction(signal, &action, &mut previous) } != 0 {
                return Err(SignalError {
                    signal: name,
                    source: io::Error::last_os_error(),
                });
            }
            installed.previous.push((signal, previous));
        }
        Ok(installed)
    }

    /// The name of the signal caught since [`StopSignals::install`], if any.
    pub fn caught(&self) -> Option<&'static str> {
        caught()
    }
}

impl Drop for StopSignals {
    fn drop(&mut self) {
        for (signal, previous) in &self.previous {
            // SAFETY: restores a sigaction the kernel handed us.
            unsafe { libc::sigaction(*signal, previous, std::ptr::null_mut()) };
        }
    }
}

/// The name of the signal caught since a [`StopSignals`] was last
/// installed, if any: for code deep in a loop that the installer does not
/// reach (a transfer stops between two reads). Nothing is caught while no
/// [`StopSignals`] is installed.
pub fn caught() -> Option<&'static str> {
    let caught = CAUGHT.load(Ordering::SeqCst);
    SIGNALS
        .iter()
        .find(|(signal, _)| *signal == caught)
        .map(|(_, name)| *name)
}

/// `SIGHUP`s caught since [`Hangups::install`].
static HANGUPS: AtomicU64 = AtomicU64::new(0);

extern "C" fn on_hangup(_: libc::c_int) {
    // Only an atomic add: async-signal-safe.
    HANGUPS.fetch_add(1, Ordering::SeqCst);
}

/// `SIGHUP` counted instead of ending the process (a server reloads its
/// certificate on it), for the rest of the process.
#[derive(Debug)]
pub struct Hangups {
    seen: u64,
}

impl Hangups {
    /// Counts `SIGHUP` from now on.
    pub fn install() -> Result<Hangups, SignalError> {
        // SAFETY: an all-zero sigaction is valid (empty mask, no flags);
        // the handler only adds to an atomic.
        let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
        action.sa_sigaction = on_hangup as extern "C" fn(libc::c_int) as libc::sighandler_t;
        action.sa_flags = libc::SA_RESTART;
        // SAFETY: a valid sigaction; the previous one is not wanted.
        if unsafe { libc::sigaction(libc::SIGHUP, &action, std::ptr::null_mut()) } != 0 {
            return Err(SignalError {
                signal: "SIGHUP",
                source: io::Error::last_os_error(),
            });
        }
        Ok(Hangups {
            seen: HANGUPS.load(Ordering::SeqCst),
        })
    }

    /// Whether a `SIGHUP` came since the last call.
    pub fn came(&mut self) -> bool {
        let now = HANGUPS.load(Ordering::SeqCst);
        let came = now != self.seen;
        self.seen = now;
        came
    }
}

/// Why [`wait`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// `SIGINT` or `SIGTERM`, by name.
    Signal(&'static str),
    /// The duration passed.
    Duration,
    /// `done()` said the traffic ended by itself.
    Done,
}

impl Stopped {
    /// A word for results files: `SIGTERM`, `duration`, `ended`.
    pub fn as_str(self) -> &'static str {
        match self {
            Stopped::Signal(name) => name,
            Stopped::Duration => "duration",
            Stopped::Done => "ended",
        }
    }
}

/// Blocks until a signal is caught, `duration` (if any) has passed, or
/// `done()` is true; checks every [`POLL_INTERVAL`] at most.
pub fn wait(signals: &StopSignals, duration: Option<Duration>, done: impl Fn() -> bool) -> Stopped {
    let start = Instant::now();
    loop {
        if let Some(name) = signals.caught() {
            return Stopped::Signal(name);
        }
        if done() {
            return Stopped::Done;
        }
        let nap = match duration.map(|d| d.saturating_sub(start.elapsed())) {
            Some(left) if left.is_zero() => return Stopped::Duration,
            Some(left) => left.min(POLL_INTERVAL),
            None => POLL_INTERVAL,
        };
        std::thread::sleep(nap);
    }
}

/// Restores SIGPIPE's default action, so that a process whose stdout is a
/// closed pipe (`rightsize advise | head -1`) ends at once and quietly, as
/// `cat` does, instead of failing its next `print!`. Only for processes
/// that do nothing but print: sockets written with `sendfile` would get the
/// signal too.
pub fn die_quietly_when_stdout_closes() {
    // SAFETY: signal(2) with a valid signal number and SIG_DFL has no
    // memory-safety preconditions.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
