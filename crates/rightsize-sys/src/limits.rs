//! The process's own limits: a server raises its open-file limit as far
//! as the system lets it, since every session holds a few descriptors.
//!
//! Guarantees: each failure names the call (`getrlimit`, `setrlimit`).

use std::io;

/// A limit could not be read or changed.
#[derive(Debug, thiserror::Error)]
#[error("{call}(RLIMIT_NOFILE)")]
pub struct LimitError {
    /// `getrlimit` or `setrlimit`.
    pub call: &'static str,
    /// What the OS said.
    #[source]
    pub source: io::Error,
}

/// Raises the soft open-file limit to the hard one; the soft and hard
/// limits in force after.
pub fn raise_open_files() -> Result<(u64, u64), LimitError> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: a valid pointer to an rlimit for the kernel to fill.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(LimitError {
            call: "getrlimit",
            source: io::Error::last_os_error(),
        });
    }
    if limit.rlim_cur < limit.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: limit.rlim_max,
            rlim_max: limit.rlim_max,
        };
        // SAFETY: a valid rlimit, read back just above.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } != 0 {
            return Err(LimitError {
                call: "setrlimit",
                source: io::Error::last_os_error(),
            });
        }
        limit = raised;
    }
    Ok((limit.rlim_cur, limit.rlim_max))
}

/// Whether `e` says the process or the system has no file descriptor
/// left (`EMFILE`, `ENFILE`).
pub fn out_of_descriptors(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_soft_limit_ends_at_the_hard_one() {
        let (soft, hard) = raise_open_files().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(soft, hard);
        assert!(soft >= 64, "{soft}");
    }

    #[test]
    fn emfile_and_enfile_are_out_of_descriptors_and_others_not() {
        assert!(out_of_descriptors(&io::Error::from_raw_os_error(
            libc::EMFILE
        )));
        assert!(out_of_descriptors(&io::Error::from_raw_os_error(
            libc::ENFILE
        )));
        assert!(!out_of_descriptors(&io::Error::from_raw_os_error(
            libc::ECONNABORTED
        )));
    }
}
