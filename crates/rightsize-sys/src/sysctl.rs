//! Reading (and later writing) sysctls through `/proc/sys`.
//!
//! Reads never guess: a key that cannot be read is reported with the path
//! and the OS error, and the caller decides what to say about it.

use std::io;
use std::path::PathBuf;

use rightsize_tune::host::{HostSettings, SysctlKey};

/// A sysctl that could not be read.
#[derive(Debug, thiserror::Error)]
#[error("reading {key} from {}", path.display())]
pub struct SysctlError {
    /// The sysctl's dotted name.
    pub key: &'static str,
    /// The file that was read.
    pub path: PathBuf,
    /// What the OS said.
    #[source]
    pub source: io::Error,
}

/// Reads one sysctl's text.
pub fn read(key: SysctlKey) -> Result<String, SysctlError> {
    let path = PathBuf::from(key.proc_path());
    std::fs::read_to_string(&path).map_err(|source| SysctlError {
        key: key.name(),
        path,
        source,
    })
}

/// Reads every key rightsize checks, with the errors of those it could not.
pub fn read_host_settings() -> (HostSettings, Vec<SysctlError>) {
    let mut errors = Vec::new();
    let settings = HostSettings::parse(|key| match read(key) {
        Ok(text) => Some(text),
        Err(err) => {
            errors.push(err);
            None
        }
    });
    (settings, errors)
}

/// Reads a host sysctl by its dotted name (`net.core.rmem_max`), trimmed.
pub fn read_key(key: &str) -> Result<String, io::Error> {
    std::fs::read_to_string(proc_path(key)).map(|s| s.trim().to_owned())
}

/// Writes a host sysctl by its dotted name.
pub fn write_key(key: &str, value: &str) -> Result<(), io::Error> {
    std::fs::write(proc_path(key), value)
}

fn proc_path(key: &str) -> PathBuf {
    PathBuf::from(format!("/proc/sys/{}", key.replace('.', "/")))
}

/// The running kernel's release (`/proc/sys/kernel/osrelease`), as `uname -r`.
pub fn kernel_release() -> Result<String, io::Error> {
    std::fs::read_to_string("/proc/sys/kernel/osrelease").map(|s| s.trim().to_owned())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_hosts_buffer_settings() {
        // Every Linux with TCP has these files; a failure here names the path.
        let (settings, errors) = read_host_settings();
        let tcp_rmem = settings
            .tcp_rmem
            .unwrap_or_else(|| panic!("tcp_rmem unreadable: {errors:?}"));
        assert!(tcp_rmem.min <= tcp_rmem.default && tcp_rmem.default <= tcp_rmem.max);
        assert!(settings.tcp_wmem.is_some());
        assert!(!kernel_release().unwrap().is_empty());
    }
}
