//! Reading a password from the terminal without echoing it.
//!
//! [`read_password`] prints a prompt on stderr, turns the terminal's echo
//! off (`tcsetattr`, keeping `ECHONL` so the Enter key still moves to a new
//! line) and reads one line from stdin. The previous settings come back
//! when it returns, by a guard's `Drop`, on every path. While it reads,
//! `SIGINT` is caught, so Ctrl-C ends the read with
//! [`io::ErrorKind::Interrupted`] instead of killing the process with the
//! echo still off; the previous handler is then put back.

use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::sync::atomic::{AtomicBool, Ordering};

/// A terminal call that failed.
#[derive(Debug, thiserror::Error)]
#[error("{call} on the terminal")]
pub struct TtyError {
    /// The call, such as `tcgetattr` or `read`.
    pub call: &'static str,
    /// What the OS said (or `Interrupted` for Ctrl-C).
    #[source]
    pub source: io::Error,
}

/// Prompts on stderr and reads one line from stdin (a terminal) with echo
/// off. Returns the line without its `\n`.
pub fn read_password(prompt: &str) -> Result<Vec<u8>, TtyError> {
    let stdin = io::stdin();
    read_password_from(stdin.as_fd(), prompt, &mut io::stderr())
}

/// [`read_password`] on any terminal descriptor, prompting on `out`.
pub fn read_password_from(
    tty: BorrowedFd<'_>,
    prompt: &str,
    out: &mut dyn Write,
) -> Result<Vec<u8>, TtyError> {
    let write_err = |source| TtyError {
        call: "write(prompt)",
        source,
    };
    out.write_all(prompt.as_bytes()).map_err(write_err)?;
    out.flush().map_err(write_err)?;
    let sigint = CatchSigint::new()?;
    let echo_off = EchoOff::new(tty)?;
    let mut line = Vec::new();
    loop {
        let mut byte = 0u8;
        // SAFETY: reads at most one byte into `byte`, which outlives the call.
        let n = unsafe { libc::read(tty.as_raw_fd(), (&raw mut byte).cast(), 1) };
        match n {
            1 if byte == b'\n' => break,
            1 => line.push(byte),
            0 => break,
            _ => {
                let source = io::Error::last_os_error();
                if source.kind() != io::ErrorKind::Interrupted {
                    return Err(TtyError {
                        call: "read",
                        source,
                    });
                }
                if SIGINT_SEEN.load(Ordering::SeqCst) {
                    return Err(TtyError {
                        call: "read",
                        source: io::Error::new(io::ErrorKind::Interrupted, "cancelled with Ctrl-C"),
                    });
                }
            }
        }
    }
    drop(echo_off);
    drop(sigint);
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    Ok(line)
}

/// Echo and signal keys off until dropped.
struct EchoOff<'fd> {
    tty: BorrowedFd<'fd>,
    saved: libc::termios,
}

impl<'fd> EchoOff<'fd> {
    fn new(tty: BorrowedFd<'fd>) -> Result<Self, TtyError> {
        // SAFETY: an all-zero termios is a valid value for tcgetattr to overwrite.
        let mut saved: libc::termios = unsafe { std::mem::zeroed() };
        // SAFETY: `saved` is a valid termios for the call to fill.
        if unsafe { libc::tcgetattr(tty.as_raw_fd(), &mut saved) } != 0 {
            return Err(TtyError {
                call: "tcgetattr",
                source: io::Error::last_os_error(),
            });
        }
        let mut quiet = saved;
        quiet.c_lflag &= !libc::ECHO;
        quiet.c_lflag |= libc::ECHONL;
        // SAFETY: `quiet` is a valid termios read from this terminal.
        if unsafe { libc::tcsetattr(tty.as_raw_fd(), libc::TCSAFLUSH, &quiet) } != 0 {
            return Err(TtyError {
                call: "tcsetattr(echo off)",
                source: io::Error::last_os_error(),
            });
        }
        Ok(EchoOff { tty, saved })
    }
}

impl Drop for EchoOff<'_> {
    fn drop(&mut self) {
        // SAFETY: restores the settings read from this terminal. Nothing can
        // be done about a failure here; the terminal stays as it is.
        unsafe { libc::tcsetattr(self.tty.as_raw_fd(), libc::TCSANOW, &self.saved) };
    }
}

/// Set by [`on_sigint`]; read after `read` fails with `EINTR`.
static SIGINT_SEEN: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_signal: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    SIGINT_SEEN.store(true, Ordering::SeqCst);
}

/// `SIGINT` caught (without `SA_RESTART`, so a blocked `read` returns
/// `EINTR`) until dropped, then the previous disposition restored.
struct CatchSigint {
    previous: libc::sigaction,
}

impl CatchSigint {
    fn new() -> Result<Self, TtyError> {
        SIGINT_SEEN.store(false, Ordering::SeqCst);
        // SAFETY: an all-zero sigaction is valid (empty mask, no flags);
        // the handler field is set to a function with the right signature.
        let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
        action.sa_sigaction = on_sigint as extern "C" fn(libc::c_int) as libc::sighandler_t;
        // SAFETY: as above.
        let mut previous: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: both pointers are valid sigaction structs for the call.
        if unsafe { libc::sigaction(libc::SIGINT, &action, &mut previous) } != 0 {
            return Err(TtyError {
                call: "sigaction(SIGINT)",
                source: io::Error::last_os_error(),
            });
        }
        Ok(CatchSigint { previous })
    }
}

impl Drop for CatchSigint {
    fn drop(&mut self) {
        // SAFETY: puts back the disposition saved in `new`.
        unsafe { libc::sigaction(libc::SIGINT, &self.previous, std::ptr::null_mut()) };
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::fs::File;
    use std::io::Read;
    use std::os::fd::{FromRawFd, OwnedFd};
    use std::time::{Duration, Instant};

    /// A pseudo-terminal: (controller, terminal).
    fn pty() -> (File, OwnedFd) {
        let (mut controller, mut terminal) = (-1, -1);
        // SAFETY: openpty writes two descriptors; the null pointers ask for
        // no name, default settings and no window size.
        let rc = unsafe {
            libc::openpty(
                &mut controller,
                &mut terminal,
                std::ptr::null_mut(),
                std::ptr::null(),
                std::ptr::null(),
            )
        };
        assert_eq!(rc, 0, "openpty: {}", io::Error::last_os_error());
        // SAFETY: both descriptors were just opened and are owned by nobody else.
        unsafe {
            (
                File::from(OwnedFd::from_raw_fd(controller)),
                OwnedFd::from_raw_fd(terminal),
            )
        }
    }

    fn lflag(tty: BorrowedFd<'_>) -> libc::tcflag_t {
        // SAFETY: as in `EchoOff::new`.
        let mut t: libc::termios = unsafe { std::mem::zeroed() };
        // SAFETY: `t` is a valid termios to fill.
        assert_eq!(unsafe { libc::tcgetattr(tty.as_raw_fd(), &mut t) }, 0);
        t.c_lflag
    }

    /// Types `keys` once the reader has turned echo off, then returns
    /// the reader's result and everything the terminal echoed.
    fn type_password(keys: &[u8]) -> (Result<Vec<u8>, TtyError>, Vec<u8>, libc::tcflag_t) {
        let (mut controller, terminal) = pty();
        assert_ne!(lflag(terminal.as_fd()) & libc::ECHO, 0);
        let reader_tty = terminal.try_clone().unwrap();
        let reader = std::thread::spawn(move || {
            let mut prompt = Vec::new();
            let result = read_password_from(reader_tty.as_fd(), "Password: ", &mut prompt);
            assert_eq!(prompt, b"Password: ");
            result
        });
        let deadline = Instant::now() + Duration::from_secs(10);
        while lflag(terminal.as_fd()) & libc::ECHO != 0 {
            assert!(Instant::now() < deadline, "echo never went off");
            std::thread::sleep(Duration::from_millis(1));
        }
        controller.write_all(keys).unwrap();
        let result = reader.join().unwrap();
        let after = lflag(terminal.as_fd());
        // Close the terminal side so reading the controller ends (EIO).
        drop(terminal);
        let mut echoed = Vec::new();
        let _ = controller.read_to_end(&mut echoed);
        (result, echoed, after)
    }

    #[test]
    fn tty_reads_a_line_without_echo_and_restores_it() {
        let (result, echoed, after) = type_password(b"s3cret pass\n");
        assert_eq!(result.unwrap(), b"s3cret pass");
        // Only the newline is echoed (ECHONL, as "\r\n" with ONLCR).
        assert_eq!(echoed, b"\r\n");
        assert_ne!(after & libc::ECHO, 0);
    }
}
