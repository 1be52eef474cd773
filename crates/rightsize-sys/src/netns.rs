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
    /// The command ran and failed.
    #[error("`{command}` failed: {stderr}")]
    Failed {
        /// The command line.
        command: String,
        /// What it printed on stderr.
        stderr: String,
    },
}

fn ip(args: &[&str]) -> Result<Output, NetnsError> {
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

    /// Gives the namespace its own `/etc/hosts` (`ip netns exec` mounts
    /// `/etc/netns/NAME/hosts` over it), so programs that look up their own
    /// address by name (globus-gridftp-server does) find it without DNS.
    pub fn set_hosts(&self, entries: &[(Ipv4Addr, &str)]) -> Result<(), NetnsError> {
        let dir = Path::new(ETC_NETNS).join(&self.name);
        let mut text = String::from("127.0.0.1 localhost\n::1 localhost\n");
        for (addr, name) in entries {
            text.push_str(&format!("{addr} {name}\n"));
        }
        let path = dir.join("hosts");
        std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::write(&path, text))
            .map_err(|source| NetnsError::Write { path, source })
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A command that runs `program` inside the namespace.
    pub fn command(&self, program: &str) -> Command {
        let mut command = Command::new("ip");
        command.args(["netns", "exec", &self.name, program]);
        command
    }

    /// Writes a sysctl inside the namespace (the `net.*` ones are per
    /// namespace), e.g. `net.ipv4.tcp_rmem`, `4096 131072 33554432`.
    pub fn sysctl(&self, key: &str, value: &str) -> Result<(), NetnsError> {
        ip(&[
            "netns",
            "exec",
            &self.name,
            "sysctl",
            "-q",
            "-w",
            &format!("{key}={value}"),
        ])
        .map(|_| ())
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        let _ = ip(&["netns", "del", &self.name]);
        let _ = std::fs::remove_dir_all(Path::new(ETC_NETNS).join(&self.name));
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
        // Each end is created directly inside its namespace, so the fixed
        // name cannot collide with the host's interfaces or another path's.
        ip(&[
            "link",
            "add",
            "eth0",
            "netns",
            left.name(),
            "type",
            "veth",
            "peer",
            "name",
            "eth0",
            "netns",
            right.name(),
        ])?;
        for (ns, addr) in [(&left, LEFT_ADDR), (&right, RIGHT_ADDR)] {
            ip(&[
                "-n",
                ns.name(),
                "addr",
                "add",
                &format!("{addr}/{PREFIX_LEN}"),
                "dev",
                "eth0",
            ])?;
            ip(&["-n", ns.name(), "link", "set", "eth0", "up"])?;
            // Programs that resolve this machine's own name (globus-url-copy
            // does) get the host's address on the path.
            let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
            let mut hosts = vec![(LEFT_ADDR, "rs-left"), (RIGHT_ADDR, "rs-right")];
            if !hostname.trim().is_empty() {
                hosts.push((addr, hostname.trim()));
            }
            ns.set_hosts(&hosts)?;
        }
        Ok(VethPath { left, right })
    }
}

/// Deletes every namespace whose name starts with [`PREFIX`] (what a
/// crashed run left behind); returns their names.
pub fn down_all() -> Result<Vec<String>, NetnsError> {
    let output = ip(&["netns", "list"])?;
    let mut removed = Vec::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let name = line.split_whitespace().next().unwrap_or("");
        if name.starts_with(PREFIX) {
            ip(&["netns", "del", name])?;
            let _ = std::fs::remove_dir_all(Path::new(ETC_NETNS).join(name));
            removed.push(name.to_owned());
        }
    }
    Ok(removed)
}
