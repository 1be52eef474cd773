//! Network namespaces joined by a veth pair: two hosts on one machine, with
//! real kernel TCP between them and nothing else on the wire.
//!
//! Names start with [`PREFIX`] so `down_all` can find what a crash left
//! behind; a [`Namespace`] and a [`VethPath`] remove themselves on drop.
//! Everything goes through `ip` (iproute2), whose errors are passed on with
//! the command line that failed. Addresses come from 198.18.0.0/15 (RFC
//! 2544, benchmarking), so no traffic can reach a real network.

use std::io;
use std::net::Ipv4Addr;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::process::{self, Signal};

/// Every namespace rightsize creates starts with this.
pub const PREFIX: &str = "rs-";

/// The two hosts' addresses on a veth path (RFC 2544 benchmarking range).
pub const LEFT_ADDR: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 1);
/// See [`LEFT_ADDR`].
pub const RIGHT_ADDR: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 2);
/// Prefix length of the path's subnet.
pub const PREFIX_LEN: u8 = 30;

/// A failed `ip` command.
#[derive(Debug, thiserror::Error)]
pub enum NetnsError {
    /// The command could not be started (iproute2 missing?).
    #[error("cannot run `{command}` (is iproute2 installed? scripts/setup installs it)")]
    Spawn {
        /// The command line.
        command: String,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// Writing a namespace's own `/etc/hosts`.
    #[error("cannot write {path}")]
    Write {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// Entering a namespace (opening `/var/run/netns/NAME`, `setns`).
    #[error(
        "cannot enter network namespace {name} (is it up? `ip netns list` shows the namespaces)"
    )]
    Enter {
        /// The namespace.
        name: String,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The command ran and failed.
    #[error("`{command}` failed: {stderr}")]
    Failed {
        /// The command line.
        command: String,
        /// What it printed on stderr.
        stderr: String,
    },
}

pub(crate) fn ip(args: &[&str]) -> Result<Output, NetnsError> {
    let command = format!("ip {}", args.join(" "));
    let output = Command::new("ip")
        .args(args)
        .output()
        .map_err(|source| NetnsError::Spawn {
            command: command.clone(),
            source,
        })?;
    if !output.status.success() {
        return Err(NetnsError::Failed {
            command,
            stderr: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        });
    }
    Ok(output)
}

/// A unique name `rs-<what>-<pid>-<n>`.
pub fn unique_name(what: &str) -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("{PREFIX}{what}-{}-{n}", std::process::id())
}

/// A network namespace, deleted on drop.
#[derive(Debug)]
pub struct Namespace {
    name: String,
}

impl Namespace {
    /// Creates `name` (which must start with [`PREFIX`]) with its loopback up.
    pub fn create(name: &str) -> Result<Namespace, NetnsError> {
        debug_assert!(name.starts_with(PREFIX));
        ip(&["netns", "add", name])?;
        let ns = Namespace { name: name.into() };
        ip(&["-n", name, "link", "set", "lo", "up"])?;
        Ok(ns)
    }

    /// Leaves the namespace in place when this value goes (its owner, such
    /// as an emulated path's record, deletes it later); returns its name.
    pub fn keep(self) -> String {
        let name = self.name.clone();
        std::mem::forget(self);
        name
    }

    /// Gives the namespace its own `/etc/hosts` (`ip netns exec` mounts
    /// `/etc/netns/NAME/hosts` over it), so programs that look up their own
    /// address by name (globus-gridftp-server does) find it without DNS,
    /// and its own `/etc/resolv.conf`, where any other lookup fails at once.
    pub fn set_hosts(&self, entries: &[(Ipv4Addr, &str)]) -> Result<(), NetnsError> {
        write_hosts(&self.name, entries)
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A command that runs `program` inside the namespace.
    pub fn command(&self, program: &str) -> Command {
        command_in(&self.name, program)
    }

    /// Writes a sysctl inside the namespace (the `net.*` ones are per
    /// namespace), e.g. `net.ipv4.tcp_rmem`, `4096 131072 33554432`.
    pub fn sysctl(&self, key: &str, value: &str) -> Result<(), NetnsError> {
        sysctl_in(&self.name, key, value)
    }
}

/// Gives namespace `name` its own `/etc/hosts` (see [`Namespace::set_hosts`]).
pub fn write_hosts(name: &str, entries: &[(Ipv4Addr, &str)]) -> Result<(), NetnsError> {
    let dir = Path::new(ETC_NETNS).join(name);
    let mut text = String::from("127.0.0.1 localhost\n::1 localhost\n");
    for (addr, host) in entries {
        text.push_str(&format!("{addr} {host}\n"));
    }
    let path = dir.join("hosts");
    std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(&path, text))
        .map_err(|source| NetnsError::Write { path, source })?;
    // No DNS server is reachable from the namespace: a name or address not
    // in its hosts file (globus-gridftp-server looks up the address of
    // every client) must fail at once, not after the resolver's timeouts
    // towards the machine's server (30 s per connection, measured).
    let path = dir.join("resolv.conf");
    std::fs::write(&path, RESOLV_CONF).map_err(|source| NetnsError::Write { path, source })
}

/// A namespace's `/etc/resolv.conf`: its own loopback, where nothing
/// answers, so a lookup fails with a refused query at once.
const RESOLV_CONF: &str = "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n";

/// Removes what [`write_hosts`] wrote for `name`.
pub fn remove_hosts(name: &str) {
    let _ = std::fs::remove_dir_all(Path::new(ETC_NETNS).join(name));
}

/// A command that runs `program` inside namespace `name` (`ip netns exec`,
/// which also mounts the namespace's own `/etc/hosts`).
pub fn command_in(name: &str, program: &str) -> Command {
    let mut command = Command::new("ip");
    command.args(["netns", "exec", name, program]);
    command
}

/// Writes a sysctl inside namespace `name`.
pub fn sysctl_in(name: &str, key: &str, value: &str) -> Result<(), NetnsError> {
    ip(&[
        "netns",
        "exec",
        name,
        "sysctl",
        "-q",
        "-w",
        &format!("{key}={value}"),
    ])
    .map(|_| ())
}

/// Runs `f` on a thread that has entered namespace `name`
/// (`/var/run/netns/NAME`); sockets it opens live in that namespace.
pub fn run_in<T: Send + 'static>(
    name: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, NetnsError> {
    use std::os::fd::AsRawFd;
    let path = Path::new(NETNS_DIR).join(name);
    let file = std::fs::File::open(&path).map_err(|source| NetnsError::Enter {
        name: name.to_owned(),
        source,
    })?;
    let handle = std::thread::spawn(move || -> Result<T, io::Error> {
        // SAFETY: setns on a valid namespace fd changes only this thread.
        if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(f())
    });
    match handle.join() {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(source)) => Err(NetnsError::Enter {
            name: name.to_owned(),
            source,
        }),
        Err(_) => Err(NetnsError::Failed {
            command: format!("a thread in namespace {name}"),
            stderr: "panicked".to_owned(),
        }),
    }
}

/// Where `ip netns` keeps named namespaces.
pub const NETNS_DIR: &str = "/var/run/netns";

/// The namespaces `ip netns list` shows, by name.
pub fn list() -> Result<Vec<String>, NetnsError> {
    let output = ip(&["netns", "list"])?;
    Ok(String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().next().map(str::to_owned))
        .collect())
}

/// Deletes namespace `name`.
pub fn delete(name: &str) -> Result<(), NetnsError> {
    ip(&["netns", "del", name]).map(|_| ())?;
    remove_hosts(name);
    Ok(())
}

/// The processes whose network namespace is `name`'s.
pub fn processes_in(name: &str) -> Vec<u32> {
    use std::os::unix::fs::MetadataExt;
    let Ok(target) = std::fs::metadata(Path::new(NETNS_DIR).join(name)) else {
        return Vec::new();
    };
    let mut pids = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return pids;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        if let Ok(ns) = std::fs::metadata(entry.path().join("ns/net"))
            && ns.ino() == target.ino()
            && ns.dev() == target.dev()
        {
            pids.push(pid);
        }
    }
    pids
}

/// Stops every process in namespace `name`: SIGTERM, then SIGKILL after
/// `grace`. Returns how many there were.
pub fn kill_processes_in(name: &str, grace: std::time::Duration) -> usize {
    let pids = processes_in(name);
    for &pid in &pids {
        // A pid read from /proc; a stale one fails harmlessly.
        let _ = process::signal(pid, Signal::Term);
    }
    let deadline = std::time::Instant::now() + grace;
    while std::time::Instant::now() < deadline && !processes_in(name).is_empty() {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    for pid in processes_in(name) {
        let _ = process::signal(pid, Signal::Kill);
    }
    pids.len()
}

impl Drop for Namespace {
    fn drop(&mut self) {
        let _ = ip(&["netns", "del", &self.name]);
        remove_hosts(&self.name);
    }
}

/// Where `ip netns exec` finds per-namespace files for `/etc`.
const ETC_NETNS: &str = "/etc/netns";

/// Two namespaces joined by a veth pair: [`LEFT_ADDR`] and [`RIGHT_ADDR`].
#[derive(Debug)]
pub struct VethPath {
    /// The left host (a server, usually).
    pub left: Namespace,
    /// The right host.
    pub right: Namespace,
}

impl VethPath {
    /// Creates `rs-<what>-…-l` and `…-r` joined by a veth pair.
    pub fn create(what: &str) -> Result<VethPath, NetnsError> {
        let base = unique_name(what);
        let left = Namespace::create(&format!("{base}-l"))?;
        let right = Namespace::create(&format!("{base}-r"))?;
        join(left.name(), right.name())?;
        for (ns, addr) in [(&left, LEFT_ADDR), (&right, RIGHT_ADDR)] {
            write_path_hosts(
                ns.name(),
                addr,
                &[(LEFT_ADDR, "rs-left"), (RIGHT_ADDR, "rs-right")],
            )?;
        }
        Ok(VethPath { left, right })
    }
}

/// Joins two namespaces with a veth pair: `eth0` in each, [`LEFT_ADDR`] in
/// `left` and [`RIGHT_ADDR`] in `right`, both up.
pub fn join(left: &str, right: &str) -> Result<(), NetnsError> {
    // Each end is created directly inside its namespace, so the fixed name
    // cannot collide with the host's interfaces or another path's.
    ip(&[
        "link", "add", "eth0", "netns", left, "type", "veth", "peer", "name", "eth0", "netns",
        right,
    ])?;
    for (ns, addr) in [(left, LEFT_ADDR), (right, RIGHT_ADDR)] {
        ip(&[
            "-n",
            ns,
            "addr",
            "add",
            &format!("{addr}/{PREFIX_LEN}"),
            "dev",
            "eth0",
        ])?;
        ip(&["-n", ns, "link", "set", "eth0", "up"])?;
    }
    Ok(())
}

/// Writes a path host's `/etc/hosts`: `names`, plus this machine's own
/// hostname for `own` (the host's address on the path), because programs
/// that resolve their own name (globus-gridftp-server, globus-url-copy)
/// must find it without DNS.
pub fn write_path_hosts(
    name: &str,
    own: Ipv4Addr,
    names: &[(Ipv4Addr, &str)],
) -> Result<(), NetnsError> {
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let mut hosts = names.to_vec();
    if !hostname.trim().is_empty() {
        hosts.push((own, hostname.trim()));
    }
    write_hosts(name, &hosts)
}
