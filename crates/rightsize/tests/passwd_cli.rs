//! End-to-end tests of `rightsize passwd`: the real binary with the password
//! on stdin, the file it writes read back with `rightsize_ftp_proto::passwd`, and
//! its exit codes and messages.

use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

use rightsize_ftp_proto::passwd::UserDb;
use rightsize_ftp_proto::session::Access;

/// A few iterations keep the debug binary fast; one test checks the default.
const TEST_ITERATIONS: &str = "100";

/// A fresh directory, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!(
            "rightsize-passwd-{name}-{}-{n}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create a temporary directory");
        TempDir(dir)
    }

    fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn passwd(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rightsize"))
        .arg("passwd")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the rightsize binary");
    let mut pipe = child.stdin.take().expect("stdin is piped");
    // The binary may exit before reading (bad arguments): ignore EPIPE.
    let _ = pipe.write_all(stdin);
    drop(pipe);
    child.wait_with_output().expect("wait for rightsize")
}

fn set(file: &Path, user: &str, password: &str, extra: &[&str]) -> Output {
    let file = file.to_str().expect("UTF-8 temp path");
    let mut args = vec![file, user, "--iterations", TEST_ITERATIONS];
    args.extend_from_slice(extra);
    passwd(&args, format!("{password}\n").as_bytes())
}

fn db(file: &Path) -> UserDb {
    let text = std::fs::read_to_string(file).expect("read the user file");
    UserDb::parse(&text).expect("the written file parses")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn assert_ok(output: &Output) {
    assert!(output.status.success(), "{}", stderr(output));
}

#[test]
fn passwd_creates_a_0600_file_that_verifies() {
    let dir = TempDir::new("create");
    let file = dir.join("users");
    let output = set(&file, "alice", "correct horse", &[]);
    assert_ok(&output);
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        format!("added user alice (read-write) to {}", file.display())
    );
    let mode = std::fs::metadata(&file).expect("stat").permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let users = db(&file);
    assert_eq!(
        users.verify("alice", b"correct horse"),
        Some(Access::ReadWrite)
    );
    assert_eq!(users.verify("alice", b"correct horse\n"), None);
    assert_eq!(users.verify("alice", b"wrong"), None);
    let text = std::fs::read_to_string(&file).expect("read");
    assert!(text.starts_with("alice:rw:pbkdf2-sha256$100$"), "{text}");
    // Only the file itself is left: the temporary file was renamed.
    let entries = std::fs::read_dir(&dir.0).expect("list").count();
    assert_eq!(entries, 1);
}

#[test]
fn passwd_keeps_other_users_and_comments() {
    let dir = TempDir::new("keep");
    let file = dir.join("users");
    std::fs::write(&file, "# FTP users\n\n").expect("write");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    assert_ok(&set(&file, "alice", "first", &[]));
    let alice_line = std::fs::read_to_string(&file).expect("read");
    assert_ok(&set(&file, "bob", "second", &["--read-only"]));
    let users = db(&file);
    assert_eq!(users.verify("alice", b"first"), Some(Access::ReadWrite));
    assert_eq!(users.verify("bob", b"second"), Some(Access::ReadOnly));
    let text = std::fs::read_to_string(&file).expect("read");
    assert!(text.starts_with(&alice_line), "{text}");
    // An existing file keeps its mode.
    let mode = std::fs::metadata(&file).expect("stat").permissions().mode();
    assert_eq!(mode & 0o777, 0o640);

    // A new password replaces alice's line in place; CRLF input is one line.
    let output = passwd(
        &[file.to_str().expect("UTF-8"), "alice", "--iterations", "50"],
        b"changed\r\nignored second line\n",
    );
    assert_ok(&output);
    assert!(String::from_utf8_lossy(&output.stdout).contains("changed user alice"));
    let users = db(&file);
    assert_eq!(users.verify("alice", b"changed"), Some(Access::ReadWrite));
    assert_eq!(users.verify("alice", b"first"), None);
    assert_eq!(users.users().collect::<Vec<_>>(), ["alice", "bob"]);
    assert!(
        std::fs::read_to_string(&file)
            .expect("read")
            .starts_with("# FTP users\n\nalice:rw:pbkdf2-sha256$50$")
    );
}

#[test]
fn passwd_delete_removes_only_that_user() {
    let dir = TempDir::new("delete");
    let file = dir.join("users");
    assert_ok(&set(&file, "alice", "a", &[]));
    assert_ok(&set(&file, "bob", "b", &[]));
    let f = file.to_str().expect("UTF-8");
    let output = passwd(&[f, "alice", "--delete"], b"");
    assert_ok(&output);
    let users = db(&file);
    assert_eq!(users.users().collect::<Vec<_>>(), ["bob"]);
    assert_eq!(users.verify("bob", b"b"), Some(Access::ReadWrite));

    // Deleting a user who is not there is bad input: one line, exit 2.
    let output = passwd(&[f, "alice", "--delete"], b"");
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(stderr(&output).lines().count(), 1, "{}", stderr(&output));
    assert!(stderr(&output).contains("\"alice\" is not in"));
}

#[test]
fn passwd_bad_user_names_exit_2_with_one_line() {
    let dir = TempDir::new("names");
    let file = dir.join("users");
    let f = file.to_str().expect("UTF-8");
    for (name, needle) in [
        ("anonymous", "reserved for anonymous login"),
        ("ftp", "reserved for anonymous login"),
        ("bob smith", "contains a space"),
        ("a:b", "contains ':'"),
        ("tab\there", "whitespace"),
        ("", "user name is empty"),
    ] {
        let output = passwd(&[f, name], b"password\n");
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{name:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{name:?}: {err}");
        assert!(err.contains(needle), "{name:?}: {err}");
    }
    assert!(!file.exists(), "a refused name must not create the file");
}

#[test]
fn passwd_bad_passwords_and_files_change_nothing() {
    let dir = TempDir::new("bad");
    let file = dir.join("users");
    let f = file.to_str().expect("UTF-8");
    for (stdin, needle) in [
        (&b""[..], "no password on stdin"),
        (b"\n", "empty password"),
    ] {
        let output = passwd(&[f, "alice"], stdin);
        assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
        assert!(stderr(&output).contains(needle), "{}", stderr(&output));
    }
    assert!(!file.exists());

    // A malformed file is reported with its line and left as it was.
    let broken = "# users\nalice:admin:pbkdf2-sha256$1$00$00\n";
    std::fs::write(&file, broken).expect("write");
    let output = set(&file, "bob", "pw", &[]);
    assert_eq!(output.status.code(), Some(1));
    let err = stderr(&output);
    assert!(err.contains("line 2: access \"admin\""), "{err}");
    assert_eq!(std::fs::read_to_string(&file).expect("read"), broken);
}

#[test]
fn passwd_uses_the_default_iterations() {
    let dir = TempDir::new("default");
    let file = dir.join("users");
    let output = passwd(&[file.to_str().expect("UTF-8"), "carol"], b"pw\n");
    assert_ok(&output);
    let text = std::fs::read_to_string(&file).expect("read");
    let expected = format!(
        "carol:rw:pbkdf2-sha256${}$",
        rightsize_ftp_proto::passwd::DEFAULT_ITERATIONS
    );
    assert!(text.starts_with(&expected), "{text}");
}
