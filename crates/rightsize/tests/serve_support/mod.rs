//! Test support: a `rightsize serve` process that stops when dropped, and a
//! raw FTP control client that sends exactly what a test says.
#![allow(dead_code, clippy::unwrap_used)]

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use rightsize_ftp_proto::addr::find_epsv_port;
use rightsize_ftp_proto::{Reply, ReplyParser};

/// How long a test waits for any one reply.
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(20);

/// A running `rightsize serve`; killed on drop.
pub struct Serve {
    child: Child,
    pub addr: SocketAddr,
}

impl Serve {
    /// Serves `root` on 127.0.0.1 on a free port, with `extra` flags.
    pub fn start(root: &Path, extra: &[&str]) -> Serve {
        Serve::spawn(root, &[&["-q"], extra].concat(), Stdio::inherit())
    }

    /// As [`Serve::start`], with its log lines written to the file `log`.
    pub fn start_logged(root: &Path, extra: &[&str], log: &Path) -> Serve {
        let file = std::fs::File::create(log).unwrap();
        Serve::spawn(root, extra, Stdio::from(file))
    }

    fn spawn(root: &Path, extra: &[&str], stderr: Stdio) -> Serve {
        let mut child = Command::new(env!("CARGO_BIN_EXE_rightsize"))
            .args(["serve", "--listen", "127.0.0.1:0", "--root"])
            .arg(root)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).unwrap();
        let addr = line
            .split("ftp://")
            .nth(1)
            .and_then(|rest| rest.split('/').next())
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("no address in the serve banner {line:?}"));
        Serve { child, addr }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The server is still running.
    pub fn is_running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// ftp://127.0.0.1:PORT
    pub fn url(&self, path: &str) -> String {
        format!("ftp://{}{path}", self.addr)
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A control connection under the test's full control.
pub struct Control {
    pub stream: TcpStream,
    parser: ReplyParser,
    pending: VecDeque<u8>,
}

impl Control {
    /// Connects and returns the connection with its greeting unread.
    pub fn connect_raw(addr: SocketAddr) -> Control {
        Self::wrap(TcpStream::connect(addr).unwrap())
    }

    /// Connects from a chosen local address (any 127.0.0.0/8 one works on
    /// loopback) and returns it with the greeting unread.
    pub fn connect_raw_from(local: IpAddr, addr: SocketAddr) -> Control {
        let socket =
            socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        socket.bind(&SocketAddr::new(local, 0).into()).unwrap();
        socket.connect(&addr.into()).unwrap();
        Self::wrap(socket.into())
    }

    fn wrap(stream: TcpStream) -> Control {
        stream.set_read_timeout(Some(REPLY_TIMEOUT)).unwrap();
        Control {
            stream,
            parser: ReplyParser::new(),
            pending: VecDeque::new(),
        }
    }

    /// Connects and reads the 220.
    pub fn connect(addr: SocketAddr) -> Control {
        let mut c = Self::connect_raw(addr);
        assert_eq!(c.reply().code(), 220);
        c
    }

    /// Connects and logs in anonymously.
    pub fn anonymous(addr: SocketAddr) -> Control {
        let mut c = Self::connect(addr);
        assert_eq!(c.cmd("USER anonymous").code(), 331);
        assert_eq!(c.cmd("PASS test@").code(), 230);
        c
    }

    /// Sends raw bytes.
    pub fn send_bytes(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).unwrap();
    }

    /// Sends one command line.
    pub fn send(&mut self, line: &str) {
        self.send_bytes(format!("{line}\r\n").as_bytes());
    }

    /// The next reply; panics on timeout or a closed connection.
    pub fn reply(&mut self) -> Reply {
        self.try_reply().unwrap_or_else(|| panic!("no reply"))
    }

    /// The next reply, or `None` once the server closed the connection.
    pub fn try_reply(&mut self) -> Option<Reply> {
        loop {
            if !self.pending.is_empty() {
                let bytes: Vec<u8> = self.pending.drain(..).collect();
                let step = self.parser.push(&bytes);
                self.pending.extend(&bytes[step.consumed..]);
                if let Some(reply) = step.output {
                    return Some(reply.unwrap());
                }
            }
            let mut buf = [0u8; 4096];
            match self.stream.read(&mut buf) {
                Ok(0) => return None,
                Ok(n) => self.pending.extend(&buf[..n]),
                Err(e) => panic!("reading a reply: {e}"),
            }
        }
    }

    /// Sends a command and reads its reply.
    pub fn cmd(&mut self, line: &str) -> Reply {
        self.send(line);
        self.reply()
    }

    /// Whether the server has closed the connection (after the replies read).
    pub fn is_closed(&mut self) -> bool {
        self.try_reply().is_none()
    }

    /// EPSV, and the data address to connect to.
    pub fn epsv(&mut self) -> SocketAddr {
        let reply = self.cmd("EPSV");
        assert_eq!(reply.code(), 229, "{reply:?}");
        let port = find_epsv_port(&reply.text()).unwrap();
        SocketAddr::new(self.stream.peer_addr().unwrap().ip(), port)
    }

    /// Downloads `path` over EPSV and returns the bytes and the final reply.
    pub fn retr(&mut self, path: &str) -> (Vec<u8>, Reply) {
        let data_addr = self.epsv();
        let mut data = TcpStream::connect(data_addr).unwrap();
        let start = self.cmd(&format!("RETR {path}"));
        if start.code() != 150 {
            return (Vec::new(), start);
        }
        let mut bytes = Vec::new();
        data.read_to_end(&mut bytes).unwrap();
        (bytes, self.reply())
    }
}

/// A file of `len` pseudo-random bytes (xorshift, so no two tests share
/// content by accident).
pub fn random_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(len);
    out
}

/// Writes a password file at `path` with `user` (read-write unless
/// `read_only`) through `rightsize passwd`, the password on stdin.
pub fn add_user(path: &Path, user: &str, password: &str, read_only: bool) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rightsize"));
    cmd.arg("passwd").arg(path).arg(user);
    if read_only {
        cmd.arg("--read-only");
    }
    let mut child = cmd.stdin(Stdio::piped()).spawn().unwrap();
    writeln!(child.stdin.take().unwrap(), "{password}").unwrap();
    assert!(child.wait().unwrap().success(), "rightsize passwd failed");
}

impl Control {
    /// Connects and logs in as `user`.
    pub fn login(addr: SocketAddr, user: &str, password: &str) -> Control {
        let mut c = Self::connect(addr);
        assert_eq!(c.cmd(&format!("USER {user}")).code(), 331);
        let reply = c.cmd(&format!("PASS {password}"));
        assert_eq!(reply.code(), 230, "{reply:?}");
        c
    }

    /// Uploads `bytes` with `command` (STOR/APPE path) over EPSV; returns
    /// the final reply.
    pub fn store(&mut self, command: &str, bytes: &[u8]) -> Reply {
        let data_addr = self.epsv();
        let mut data = TcpStream::connect(data_addr).unwrap();
        let start = self.cmd(command);
        if start.code() != 150 {
            return start;
        }
        data.write_all(bytes).unwrap();
        drop(data);
        self.reply()
    }
}

/// Runs a peer tool (a client from `scripts/setup`) and requires success;
/// a missing tool fails the test, which CI must run, not skip.
pub fn run(what: &str, cmd: &mut Command) -> Output {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run ({e}); scripts/setup installs it"));
    assert!(
        out.status.success(),
        "{what} failed: {}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The writer of a [`Fixture`]'s served root.
pub const USER: &str = "alice";
/// Its password.
pub const PASSWORD: &str = "s3cret-pw";

/// A served root with `pub/big.bin` (random bytes) and a writable `up/`,
/// `alice` may write, and the same bytes in a local file.
pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub content: Vec<u8>,
    pub serve: Serve,
}

impl Fixture {
    /// `bytes` pseudo-random bytes from `seed`, served and local.
    pub fn new(bytes: usize, seed: u64) -> Fixture {
        Fixture::with(bytes, seed, &[])
    }

    /// [`Fixture::new`], the server started with `extra` flags too.
    pub fn with(bytes: usize, seed: u64, extra: &[&str]) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("pub")).unwrap();
        std::fs::create_dir_all(root.join("up")).unwrap();
        let content = random_bytes(bytes, seed);
        std::fs::write(root.join("pub/big.bin"), &content).unwrap();
        std::fs::write(dir.path().join("local.bin"), &content).unwrap();
        let users = dir.path().join("users");
        add_user(&users, USER, PASSWORD, false);
        let serve = Serve::start(
            &root,
            &[&["--users", users.to_str().unwrap()], extra].concat(),
        );
        Fixture {
            dir,
            content,
            serve,
        }
    }

    pub fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }

    pub fn local(&self) -> PathBuf {
        self.dir.path().join("local.bin")
    }

    pub fn out(&self) -> PathBuf {
        self.dir.path().join("out.bin")
    }

    pub fn host_port(&self) -> String {
        self.serve.addr.to_string()
    }

    /// `ftp://alice:PASSWORD@HOST:PORT/up/NAME`
    pub fn upload_url(&self, name: &str) -> String {
        format!("ftp://{USER}:{PASSWORD}@{}/up/{name}", self.serve.addr)
    }

    pub fn assert_same(&self, path: &Path, what: &str) {
        let got = std::fs::read(path).unwrap_or_else(|e| panic!("{what}: {}: {e}", path.display()));
        assert!(
            got.len() == self.content.len() && got == self.content,
            "{what}: {} bytes differ",
            path.display()
        );
    }
}
