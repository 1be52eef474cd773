//! A flag raised by SIGINT, SIGTERM or SIGHUP, for commands that must tear
//! down what they built before they exit (`rightsize path run`).

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);
static SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(signal: libc::c_int) {
    SIGNAL.store(signal, Ordering::SeqCst);
    STOP.store(true, Ordering::SeqCst);
}

/// Installs the handlers; from now on those signals only raise the flag.
pub fn install() {
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: an all-zero sigaction is valid (empty mask, no flags); the
        // handler only stores to atomics, which is async-signal-safe.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// The signal that arrived, if one did.
pub fn received() -> Option<i32> {
    if STOP.load(Ordering::SeqCst) {
        Some(SIGNAL.load(Ordering::SeqCst))
    } else {
        None
    }
}
