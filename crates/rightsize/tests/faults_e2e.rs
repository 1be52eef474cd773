//! Link outages mid-transfer, on an emulated path (Rattan between two
//! namespaces, 50 Mbit/s, 20 ms RTT): the left host's link is taken down
//! while a download or an upload runs, then brought back. Shorter than the
//! server's data idle timeout, the transfer goes on and completes intact;
//! longer, the server ends it with a `426` that says why, the download
//! keeps its part file and resumes with `get -C`, and the upload leaves
//! nothing under its name. Needs root and the pinned rattan (scripts/setup
//! installs it); in CI these run, they do not skip.

#![allow(clippy::unwrap_used)]

mod binary;
mod serve_support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use binary::{rightsize, text};
use serve_support::{add_user, random_bytes};

/// One path at a time in this binary (the two cores are shared).
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

const USER: &str = "mover";
const PASSWORD: &str = "outage-pw";
/// 6.4 s at the path's rate.
const DOWNLOAD_BYTES: u64 = 40 << 20;
/// 3.4 s at the path's rate.
const UPLOAD_BYTES: usize = 20 << 20;
/// When the link goes down, after the client started.
const CUT_AFTER: Duration = Duration::from_millis(1500);

/// An emulated path, torn down on drop.
struct Lab {
    name: String,
    left: String,
    right: String,
    rattan: String,
    right_addr: String,
    /// The emulator's end of the left host's link.
    left_link: String,
}

impl Lab {
    fn up() -> Lab {
        let name = format!("rs-faults-{}", std::process::id());
        let out = rightsize()
            .args(["path", "up", "--rate", "50Mbit", "--delay", "10ms"])
            .args(["--name", &name, "--json"])
            .output()
            .unwrap();
        assert!(out.status.success(), "path up: {}", text(&out));
        let path: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let id = path["emulator_id"]
            .as_str()
            .expect("path up --json: no emulator_id");
        let rattan = format!("ns-rattan-{id}");
        // Rattan names the emulator's end of the left host's veth vL<n>-R-<id>.
        let links = Command::new("ip")
            .args(["-n", &rattan, "-o", "link", "show"])
            .output()
            .unwrap();
        let links = String::from_utf8_lossy(&links.stdout).into_owned();
        let left_link = links
            .lines()
            .filter_map(|l| l.split(": ").nth(1))
            .map(|n| n.split('@').next().unwrap_or(n))
            .find(|n| n.starts_with("vL") && n.contains("-R-"))
            .unwrap_or_else(|| panic!("no link to the left host in {rattan}: {links}"))
            .to_owned();
        let field = |side: &str, key: &str| {
            path[side][key]
                .as_str()
                .unwrap_or_else(|| panic!("path up --json: no {side}.{key}"))
                .to_owned()
        };
        Lab {
            left: field("left", "namespace"),
            right: field("right", "namespace"),
            right_addr: field("right", "addr"),
            rattan,
            left_link,
            name,
        }
    }

    /// `rightsize ARGS` on one host.
    fn rightsize(&self, namespace: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", namespace])
            .arg(env!("CARGO_BIN_EXE_rightsize"))
            .args(args);
        cmd
    }

    fn link(&self, state: &str) {
        let out = Command::new("ip")
            .args(["-n", &self.rattan, "link", "set", &self.left_link, state])
            .output()
            .unwrap();
        assert!(out.status.success(), "link {state}: {}", text(&out));
    }

    /// Runs `client` on the left host; `CUT_AFTER` into it the link goes
    /// down for `outage`, then comes back. The client's output.
    fn with_outage(&self, client: &[&str], outage: Duration) -> Output {
        let child = self.start_left(client);
        thread::sleep(CUT_AFTER);
        self.link("down");
        thread::sleep(outage);
        self.link("up");
        wait_bounded(child, Duration::from_secs(60), client)
    }

    /// Runs `client` on the left host with the link up; its output.
    fn run_left(&self, client: &[&str]) -> Output {
        wait_bounded(self.start_left(client), Duration::from_secs(60), client)
    }

    /// Starts `client` on the left host, its output piped.
    fn start_left(&self, client: &[&str]) -> Child {
        self.rightsize(&self.left, client)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let _ = rightsize().args(["path", "down", &self.name]).output();
    }
}

/// The child's output, or a failure if it ran past `limit` (then killed).
fn wait_bounded(mut child: Child, limit: Duration, what: &[&str]) -> Output {
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!("{what:?} ran past {limit:?}: {}", text(&out));
        }
        thread::sleep(Duration::from_millis(100));
    }
    child.wait_with_output().unwrap()
}

/// `rightsize serve` on the right host; killed on drop.
struct Server {
    child: Child,
    url: String,
}

impl Server {
    fn start(lab: &Lab, root: &Path, users: &Path, idle: &str) -> Server {
        let listen = format!("{}:0", lab.right_addr);
        let mut child = lab
            .rightsize(
                &lab.right,
                &[
                    "serve",
                    "-q",
                    "--listen",
                    &listen,
                    "--data-idle-timeout",
                    idle,
                ],
            )
            .arg("--root")
            .arg(root)
            .arg("--users")
            .arg(users)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut banner = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut banner)
            .unwrap();
        let addr = banner
            .split("ftp://")
            .nth(1)
            .and_then(|rest| rest.split('/').next())
            .unwrap_or_else(|| panic!("no address in the serve banner {banner:?}"))
            .to_owned();
        Server {
            child,
            url: format!("ftp://{USER}:{PASSWORD}@{addr}"),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Setup {
    dir: tempfile::TempDir,
    root: PathBuf,
    users: PathBuf,
    upload: Vec<u8>,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("up")).unwrap();
    let users = dir.path().join("users");
    add_user(&users, USER, PASSWORD, false);
    let upload = random_bytes(UPLOAD_BYTES, 23);
    std::fs::write(dir.path().join("upload.bin"), &upload).unwrap();
    Setup {
        dir,
        root,
        users,
        upload,
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn all_zeros(path: &Path, len: u64) -> bool {
    let bytes = std::fs::read(path).unwrap();
    bytes.len() as u64 == len && bytes.iter().all(|&b| b == 0)
}

#[test]
fn an_outage_shorter_than_the_data_idle_timeout_delays_the_transfers_only() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let s = setup();
    let lab = Lab::up();
    let server = Server::start(&lab, &s.root, &s.users, "10s");
    let got = s.dir.path().join("got.bin");
    let source = format!("{}/.rightsize/zero/{DOWNLOAD_BYTES}", server.url);
    let get = ["get", &source, "-o", got.to_str().unwrap()];
    let started = Instant::now();
    let out = lab.with_outage(&get, Duration::from_secs(3));
    assert!(
        out.status.success(),
        "get across a 3 s outage: {}",
        text(&out)
    );
    assert!(all_zeros(&got, DOWNLOAD_BYTES), "the download is not whole");
    assert!(
        started.elapsed() >= Duration::from_secs(9),
        "6.4 s of data and a 3 s outage took {:?}: the link was not cut",
        started.elapsed()
    );
    let local = s.dir.path().join("upload.bin");
    let target = format!("{}/up/upload.bin", server.url);
    let put = ["put", local.to_str().unwrap(), &target];
    let out = lab.with_outage(&put, Duration::from_secs(3));
    assert!(
        out.status.success(),
        "put across a 3 s outage: {}",
        text(&out)
    );
    let stored = std::fs::read(s.root.join("up/upload.bin")).unwrap();
    assert!(stored == s.upload, "the upload is not the file");
}

#[test]
fn an_outage_longer_than_the_data_idle_timeout_ends_the_transfers_cleanly() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let s = setup();
    let lab = Lab::up();
    let server = Server::start(&lab, &s.root, &s.users, "3s");
    let got = s.dir.path().join("got.bin");
    let source = format!("{}/.rightsize/zero/{DOWNLOAD_BYTES}", server.url);
    let get = ["get", &source, "-o", got.to_str().unwrap()];
    let out = lab.with_outage(&get, Duration::from_secs(7));
    assert!(
        !out.status.success(),
        "get across a 7 s outage: {}",
        text(&out)
    );
    let said = stderr(&out);
    assert!(
        said.contains("426") && said.contains("idle timeout"),
        "the server's reason is not quoted: {said}"
    );
    assert!(said.contains("resume with: rightsize get -C"), "{said}");
    assert!(!got.exists(), "a cut download appeared under its name");
    let part = s.dir.path().join(".got.bin.rightsize-part");
    let kept = std::fs::metadata(&part).map(|m| m.len()).unwrap_or(0);
    assert!(
        kept > 0 && kept < DOWNLOAD_BYTES,
        "{kept} bytes kept in {}",
        part.display()
    );
    // The link is back: the download resumes from its part.
    let resume = [&get[..], &["-C"]].concat();
    let out = lab.run_left(&resume);
    assert!(
        out.status.success(),
        "get -C after the outage: {}",
        text(&out)
    );
    assert!(
        all_zeros(&got, DOWNLOAD_BYTES),
        "the resumed download is not whole"
    );
    assert!(!part.exists(), "the part file is left after the resume");

    let local = s.dir.path().join("upload.bin");
    let target = format!("{}/up/upload.bin", server.url);
    let put = ["put", local.to_str().unwrap(), &target];
    let out = lab.with_outage(&put, Duration::from_secs(7));
    assert!(
        !out.status.success(),
        "put across a 7 s outage: {}",
        text(&out)
    );
    // The server's reason, not only the reset the client saw.
    let said = stderr(&out);
    assert!(
        said.contains("STOR") && said.contains("426") && said.contains("idle timeout"),
        "{said}"
    );
    let names = || -> Vec<String> {
        std::fs::read_dir(s.root.join("up"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    };
    // Nothing under its name; what arrived kept, hidden.
    assert_eq!(
        names(),
        [".rightsize-part.upload.bin.kept"],
        "a cut upload appeared under its name, or was not kept"
    );
    assert!(said.contains("kept, hidden"), "{said}");
    // The link is back: put -C continues the part the server kept.
    let resume = [&put[..], &["-C"]].concat();
    let out = lab.run_left(&resume);
    assert!(
        out.status.success(),
        "put -C after the outage: {}",
        text(&out)
    );
    assert!(
        text(&out).contains("resumed after"),
        "put -C did not resume: {}",
        text(&out)
    );
    let stored = std::fs::read(s.root.join("up/upload.bin")).unwrap();
    assert!(stored == s.upload, "the resumed upload is not the file");
    assert_eq!(names(), ["upload.bin"]);
}
