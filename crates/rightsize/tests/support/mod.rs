//! Shared by the `get`/`put` end-to-end tests: real FTP servers on
//! 127.0.0.1 (pyftpdlib, vsftpd, globus-gridftp-server) started on free
//! ports and killed by a guard, the `rightsize` binary run with a
//! watchdog, and deterministic random files.
//!
//! Ports: each test process takes ports from its own range below the
//! kernel's ephemeral range (32768-60999), so threads of one test binary
//! never collide, and every port is checked free by binding it first; a
//! server that still fails to start (another process took the port) is
//! retried on new ports. All traffic stays on 127.0.0.1.

#![allow(dead_code, clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Read};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

/// Lowest port handed out; the kernel's ephemeral range starts at 32768.
const PORT_BASE: u16 = 20_000;
/// Ports per test process, which picks its range from its pid.
const PORTS_PER_PROCESS: u16 = 400;
/// Passive ports given to each vsftpd or globus server.
pub const PASSIVE_PORTS: u16 = 8;
/// How long a server may take to greet.
const START_TIMEOUT: Duration = Duration::from_secs(20);
/// Longest a `rightsize` run may take before the test fails.
const RUN_TIMEOUT: Duration = Duration::from_secs(120);

fn next_port() -> &'static AtomicU16 {
    static NEXT: OnceLock<AtomicU16> = OnceLock::new();
    NEXT.get_or_init(|| {
        let slots = (32_768 - PORT_BASE) / PORTS_PER_PROCESS;
        let slot = (std::process::id() % u32::from(slots)) as u16;
        AtomicU16::new(PORT_BASE + slot * PORTS_PER_PROCESS)
    })
}

/// The first of `count` consecutive ports that are free now.
pub fn free_ports(count: u16) -> u16 {
    loop {
        let first = next_port().fetch_add(count, Ordering::Relaxed);
        assert!(first < 32_768 - count, "ran out of test ports");
        let all_free = (first..first + count).all(|p| TcpListener::bind(("127.0.0.1", p)).is_ok());
        if all_free {
            return first;
        }
    }
}

/// A port with nothing listening on it.
pub fn closed_port() -> u16 {
    free_ports(1)
}

/// A running server; dropping it kills its whole process group.
#[derive(Debug)]
pub struct Server {
    child: Child,
    pub ip: IpAddr,
    pub port: u16,
    pub root: tempfile::TempDir,
    pub name: &'static str,
}

impl Server {
    /// `ftp://127.0.0.1:PORT` (or `[::1]`) followed by `path`.
    pub fn url(&self, path: &str) -> String {
        format!("ftp://{}{path}", SocketAddr::new(self.ip, self.port))
    }

    /// The server's log, for failure messages.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.root.path().join("server.log")).unwrap_or_default()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        kill_group(&mut self.child);
    }
}

fn kill_group(child: &mut Child) {
    if let Ok(pid) = i32::try_from(child.id()) {
        // SAFETY: kill(2) with a negative pid signals that process group;
        // the group was created for this child by `process_group(0)`.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// A fresh served directory that the server's unprivileged user can read
/// and write (globus runs anonymous sessions as `nobody`).
pub fn served_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    dir
}

/// Starts a server with `command(root, port, passive_low)` until one
/// greets with `banner` (retrying on new ports if one was taken).
pub fn start(
    name: &'static str,
    banner: &str,
    ip: IpAddr,
    root: tempfile::TempDir,
    command: impl Fn(&Path, u16, u16) -> Command,
) -> Server {
    let log_path = root.path().join("server.log");
    for _ in 0..5 {
        let port = free_ports(1);
        let passive = free_ports(PASSIVE_PORTS);
        let log = std::fs::File::create(&log_path).unwrap();
        let mut cmd = command(root.path(), port, passive);
        cmd.stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .process_group(0);
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("start {name}: {e}; is it installed (scripts/setup)?"));
        if wait_for_greeting(&mut child, SocketAddr::new(ip, port), banner) {
            return Server {
                child,
                ip,
                port,
                root,
                name,
            };
        }
        kill_group(&mut child);
    }
    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
    panic!("{name} did not start on {ip}; its log:\n{log}");
}

/// Polls until the server on `addr` sends a greeting containing `banner`;
/// false if the child exits or the time is up.
fn wait_for_greeting(child: &mut Child, addr: SocketAddr, banner: &str) -> bool {
    let deadline = Instant::now() + START_TIMEOUT;
    while Instant::now() < deadline {
        if !matches!(child.try_wait(), Ok(None)) {
            return false;
        }
        if let Ok(stream) = TcpStream::connect_timeout(&addr, Duration::from_millis(200)) {
            let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
            let mut line = String::new();
            let _ = BufReader::new(stream).read_line(&mut line);
            return line.contains(banner) && matches!(child.try_wait(), Ok(None));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

const LOCALHOST_V4: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// pyftpdlib 1.5.7 (Debian's; the pyenv `python3` on PATH lacks it),
/// anonymous with write access.
pub fn pyftpdlib() -> Server {
    pyftpdlib_on(LOCALHOST_V4)
}

/// [`pyftpdlib`] on `::1`.
pub fn pyftpdlib_v6() -> Server {
    pyftpdlib_on(IpAddr::V6(Ipv6Addr::LOCALHOST))
}

fn pyftpdlib_on(ip: IpAddr) -> Server {
    start(
        "pyftpdlib",
        "pyftpdlib",
        ip,
        served_dir(),
        move |root, port, _| {
            let mut cmd = Command::new("/usr/bin/python3");
            cmd.args(["-m", "pyftpdlib", "-w", "-i"])
                .arg(ip.to_string())
                .arg("-p")
                .arg(port.to_string())
                .arg("-d")
                .arg(root);
            cmd
        },
    )
}

/// pyftpdlib with one user `user`/`password` and no anonymous login.
pub fn pyftpdlib_with_user(user: &str, password: &str) -> Server {
    let (user, password) = (user.to_owned(), password.to_owned());
    start(
        "pyftpdlib",
        "pyftpdlib",
        LOCALHOST_V4,
        served_dir(),
        move |root, port, _| {
            let script = "import sys\n\
            from pyftpdlib.authorizers import DummyAuthorizer\n\
            from pyftpdlib.handlers import FTPHandler\n\
            from pyftpdlib.servers import FTPServer\n\
            a = DummyAuthorizer()\n\
            a.add_user(sys.argv[2], sys.argv[3], sys.argv[4], perm='elradfmw')\n\
            FTPHandler.authorizer = a\n\
            FTPHandler.auth_failed_timeout = 0.1\n\
            FTPServer(('127.0.0.1', int(sys.argv[1])), FTPHandler).serve_forever()\n";
            let mut cmd = Command::new("/usr/bin/python3");
            cmd.arg("-c")
                .arg(script)
                .arg(port.to_string())
                .arg(&user)
                .arg(&password)
                .arg(root);
            cmd
        },
    )
}

/// vsftpd 3.0.3, anonymous, uploads and new directories allowed into
/// `up/` only (the served root itself stays unwritable, as vsftpd's chroot
/// rule wants).
pub fn vsftpd() -> Server {
    std::fs::create_dir_all("/var/run/vsftpd/empty").unwrap();
    let root = tempfile::tempdir().unwrap();
    let files = root.path().join("files");
    std::fs::create_dir(&files).unwrap();
    std::fs::set_permissions(&files, std::fs::Permissions::from_mode(0o755)).unwrap();
    let up = files.join("up");
    std::fs::create_dir(&up).unwrap();
    std::fs::set_permissions(&up, std::fs::Permissions::from_mode(0o777)).unwrap();
    start(
        "vsftpd",
        "vsFTPd",
        LOCALHOST_V4,
        root,
        |root, port, passive| {
            let config = root.join("vsftpd.conf");
            let text = format!(
                "listen=YES\nbackground=NO\nlisten_address=127.0.0.1\nlisten_port={port}\n\
             anonymous_enable=YES\nlocal_enable=NO\nanon_root={}\nno_anon_password=YES\n\
             write_enable=YES\nanon_upload_enable=YES\nanon_mkdir_write_enable=YES\nanon_umask=022\n\
             pasv_min_port={passive}\npasv_max_port={}\nrun_as_launching_user=YES\n\
             seccomp_sandbox=NO\nxferlog_enable=NO\n",
                root.join("files").display(),
                passive + PASSIVE_PORTS - 1
            );
            std::fs::write(&config, text).unwrap();
            let mut cmd = Command::new("/usr/sbin/vsftpd");
            cmd.arg(config);
            cmd
        },
    )
}

/// globus-gridftp-server 13.24, anonymous sessions as `nobody`; its URLs
/// take absolute paths (`ftp://h:p//abs/path`).
pub fn globus() -> Server {
    start(
        "globus-gridftp-server",
        "GridFTP Server",
        LOCALHOST_V4,
        served_dir(),
        |root, port, passive| {
            let mut cmd = Command::new("/usr/sbin/globus-gridftp-server");
            cmd.args([
                "-aa",
                "-anonymous-user",
                "nobody",
                "-control-interface",
                "127.0.0.1",
            ])
            .args(["-data-interface", "127.0.0.1", "-no-chdir", "-p"])
            .arg(port.to_string())
            .arg("-home-dir")
            .arg(root)
            .arg("-port-range")
            .arg(format!("{passive},{}", passive + PASSIVE_PORTS - 1));
            cmd
        },
    )
}

/// The directory a server serves files from.
pub fn files_dir(server: &Server) -> PathBuf {
    match server.name {
        "vsftpd" => server.root.path().join("files"),
        _ => server.root.path().to_path_buf(),
    }
}

/// Runs `rightsize` with `args`; fails the test if it runs longer than
/// [`RUN_TIMEOUT`].
pub fn rightsize<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rightsize"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stdout.read_to_end(&mut buf);
        buf
    });
    let err_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stderr.read_to_end(&mut buf);
        buf
    });
    let deadline = Instant::now() + RUN_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "rightsize {:?} ran longer than {RUN_TIMEOUT:?}",
                args.iter()
                    .map(|a| a.as_ref().to_owned())
                    .collect::<Vec<_>>()
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Output {
        status,
        stdout: out_reader.join().unwrap(),
        stderr: err_reader.join().unwrap(),
    }
}

/// Standard error as lines.
pub fn stderr_lines(output: &Output) -> Vec<String> {
    String::from_utf8_lossy(&output.stderr)
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Standard output parsed as the `--json` summary.
pub fn json(output: &Output) -> serde_json::Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

/// Asserts a zero exit and shows stderr otherwise.
pub fn assert_success(output: &Output, server: Option<&Server>) {
    assert!(
        output.status.success(),
        "rightsize failed ({}): {}\nserver log: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr),
        server.map(Server::log).unwrap_or_default()
    );
}

/// `len` pseudo-random bytes from `seed` (xorshift64*): incompressible
/// and reproducible.
pub fn random_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed | 1;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        out.extend_from_slice(&state.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes());
    }
    out.truncate(len);
    out
}

/// Writes `bytes` to `path`, readable by every server user.
pub fn write_public(path: &Path, bytes: &[u8]) {
    std::fs::write(path, bytes).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644)).unwrap();
}

/// Whether two files hold the same bytes (without printing 64 MiB on a
/// mismatch).
pub fn same_bytes(a: &Path, b: &[u8]) -> bool {
    std::fs::read(a).map(|bytes| bytes == b).unwrap_or(false)
}

/// The names in `dir`, sorted.
pub fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}
