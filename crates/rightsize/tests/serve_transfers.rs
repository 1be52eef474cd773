//! Uploads and restarts against `rightsize serve` from a raw client: REST
//! for downloads and uploads, APPE, atomic STOR (an interrupted upload never
//! appears under its final name; it is kept hidden and `put -C` continues
//! it), write permission, and the same USER reply for known and unknown
//! users.
#![allow(clippy::unwrap_used)]

mod serve_support;

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serve_support::{Control, Serve, add_user, random_bytes, run};

/// Runs `rightsize ARGS`, which must succeed, and reads its JSON.
fn json_of(args: &[&str]) -> serde_json::Value {
    let what = format!("rightsize {args:?}");
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_rightsize"));
    let output = run(&what, command.args(args));
    serde_json::from_slice::<serde_json::Value>(&output.stdout)
        .unwrap_or_else(|e| panic!("{what}: {e}: {output:?}"))
}

struct Fixture {
    dir: tempfile::TempDir,
    serve: Serve,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("pub")).unwrap();
        std::fs::write(root.join("pub/ten.txt"), b"0123456789").unwrap();
        let users = dir.path().join("users");
        add_user(&users, "alice", "pw-alice", false);
        add_user(&users, "bob", "pw-bob", true);
        let serve = Serve::start(&root, &["--users", users.to_str().unwrap()]);
        Fixture { dir, serve }
    }

    fn file(&self, rel: &str) -> std::path::PathBuf {
        self.dir.path().join("root").join(rel)
    }

    /// Names in `pub/`, temporary files included.
    fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.file("pub"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

#[test]
fn rest_restarts_a_download_at_an_offset() {
    let f = Fixture::new();
    let mut c = Control::anonymous(f.serve.addr);
    assert_eq!(c.cmd("TYPE I").code(), 200);
    assert_eq!(c.cmd("REST 4").code(), 350);
    let (bytes, reply) = c.retr("pub/ten.txt");
    assert_eq!((bytes.as_slice(), reply.code()), (&b"456789"[..], 226));
    // REST applies to one transfer only.
    let (bytes, _) = c.retr("pub/ten.txt");
    assert_eq!(bytes, b"0123456789");
    assert_eq!(c.cmd("REST 3").code(), 350);
    let (bytes, _) = c.retr("/.rightsize/zero/10");
    assert_eq!(bytes, [0u8; 7]);
}

#[test]
fn stor_rest_and_appe_upload_at_an_offset() {
    let f = Fixture::new();
    let mut c = Control::login(f.serve.addr, "alice", "pw-alice");
    let content = random_bytes(3 << 20, 11);
    assert_eq!(c.store("STOR pub/up.bin", &content[..1 << 20]).code(), 226);
    assert_eq!(c.cmd("SIZE pub/up.bin").text(), (1u32 << 20).to_string());
    assert_eq!(c.cmd(&format!("REST {}", 1 << 20)).code(), 350);
    assert_eq!(
        c.store("STOR pub/up.bin", &content[1 << 20..2 << 20])
            .code(),
        226
    );
    assert_eq!(c.store("APPE pub/up.bin", &content[2 << 20..]).code(), 226);
    assert_eq!(std::fs::read(f.file("pub/up.bin")).unwrap(), content);
    // A restart beyond the end of the file is refused, the file untouched.
    assert_eq!(c.cmd("REST 999999999").code(), 350);
    let reply = c.store("STOR pub/up.bin", b"x");
    assert!(reply.code() >= 500 || reply.code() == 451, "{reply:?}");
    assert_eq!(std::fs::read(f.file("pub/up.bin")).unwrap(), content);
    assert_eq!(f.names(), ["ten.txt", "up.bin"]);
}

#[test]
fn an_interrupted_upload_never_appears_under_its_final_name_and_rest_continues_it() {
    let f = Fixture::new();
    let mut c = Control::login(f.serve.addr, "alice", "pw-alice");
    let data_addr = c.epsv();
    let mut data = TcpStream::connect(data_addr).unwrap();
    assert_eq!(c.cmd("STOR pub/half.bin").code(), 150);
    let content = random_bytes(2 << 20, 3);
    data.write_all(&content[..1 << 20]).unwrap();
    // While it runs, the final name does not exist.
    std::thread::sleep(Duration::from_millis(100));
    assert!(!f.file("pub/half.bin").exists());
    // The client dies. The control connection closes first here: a data
    // connection that ends more than 20 ms before it looks like a whole
    // upload (stream mode), on a loaded machine too. What arrived is
    // kept, hidden.
    drop(c);
    std::thread::sleep(Duration::from_millis(200));
    drop(data);
    let kept_name = ".rightsize-part.half.bin.kept";
    let deadline = Instant::now() + Duration::from_secs(10);
    while f.names() != [kept_name, "ten.txt"] && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        f.names(),
        [kept_name, "ten.txt"],
        "a partial upload was left under its name, or not kept"
    );
    let mut c = Control::login(f.serve.addr, "alice", "pw-alice");
    assert!(!c.cmd("LIST pub").text().contains("half"));
    assert_eq!(c.cmd("SIZE pub/half.bin").code(), 550);
    let part = c.cmd("SITE RIGHTSIZE PART pub/half.bin");
    assert_eq!(part.code(), 213, "{part:?}");
    let kept: usize = part.text().trim().parse().unwrap();
    assert_eq!(kept, 1 << 20);
    // REST and STOR continue it; beyond it, refused and still kept.
    assert_eq!(c.cmd(&format!("REST {}", kept + 1)).code(), 350);
    let beyond = c.store("STOR pub/half.bin", b"x");
    assert!(beyond.code() >= 451, "{beyond:?}");
    assert_eq!(c.cmd(&format!("REST {kept}")).code(), 350);
    assert_eq!(c.store("STOR pub/half.bin", &content[kept..]).code(), 226);
    assert!(std::fs::read(f.file("pub/half.bin")).unwrap() == content);
    assert_eq!(f.names(), ["half.bin", "ten.txt"]);
    assert_eq!(c.cmd("SITE RIGHTSIZE PART pub/half.bin").code(), 550);
    assert_eq!(c.cmd("DELE pub/half.bin").code(), 250);
    drop(c);

    // ABOR mid-upload: nothing kept.
    let mut c = Control::login(f.serve.addr, "alice", "pw-alice");
    let data_addr = c.epsv();
    let mut data = TcpStream::connect(data_addr).unwrap();
    assert_eq!(c.cmd("STOR pub/aborted.bin").code(), 150);
    data.write_all(&random_bytes(1 << 20, 4)).unwrap();
    c.send("ABOR");
    assert_eq!(c.reply().code(), 426);
    assert_eq!(c.reply().code(), 226);
    drop(data);
    assert_eq!(c.cmd("NOOP").code(), 200);
    assert_eq!(f.names(), ["ten.txt"]);

    // An upload over an existing file replaces it only when complete.
    let data_addr = c.epsv();
    let mut data = TcpStream::connect(data_addr).unwrap();
    assert_eq!(c.cmd("STOR pub/ten.txt").code(), 150);
    data.write_all(b"new content").unwrap();
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(std::fs::read(f.file("pub/ten.txt")).unwrap(), b"0123456789");
    drop(data);
    assert_eq!(c.reply().code(), 226);
    assert_eq!(
        std::fs::read(f.file("pub/ten.txt")).unwrap(),
        b"new content"
    );
}

#[test]
fn only_users_with_write_permission_may_change_files() {
    let f = Fixture::new();
    let mut bob = Control::login(f.serve.addr, "bob", "pw-bob");
    for line in [
        "STOR pub/x",
        "APPE pub/ten.txt",
        "DELE pub/ten.txt",
        "MKD d",
        "RMD pub",
        "RNFR pub/ten.txt",
        "RNTO pub/y",
    ] {
        assert_eq!(bob.cmd(line).code(), 550, "bob: {line}");
    }
    let (bytes, _) = bob.retr("pub/ten.txt");
    assert_eq!(bytes, b"0123456789");
    let mut alice = Control::login(f.serve.addr, "alice", "pw-alice");
    assert_eq!(alice.cmd("MKD d").code(), 257);
    assert_eq!(alice.cmd("RNFR pub/ten.txt").code(), 350);
    assert_eq!(alice.cmd("RNTO d/ten.txt").code(), 250);
    assert_eq!(alice.cmd("DELE d/ten.txt").code(), 250);
    assert_eq!(alice.cmd("RMD d").code(), 250);
    assert!(!f.file("d").exists());
}

#[test]
fn user_reply_is_the_same_for_known_and_unknown_users_and_wrong_passwords_wait() {
    let f = Fixture::new();
    let mut c = Control::connect(f.serve.addr);
    let known = c.cmd("USER alice");
    let started = Instant::now();
    assert_eq!(c.cmd("PASS wrong").code(), 530);
    let known_wrong = started.elapsed();
    let unknown = c.cmd("USER mallory");
    let started = Instant::now();
    assert_eq!(c.cmd("PASS wrong").code(), 530);
    let unknown_wrong = started.elapsed();
    assert_eq!(known, unknown);
    assert!(
        known_wrong >= Duration::from_millis(900) && unknown_wrong >= Duration::from_millis(900)
    );
}

/// The wire bytes of a MODE E block: descriptor, count, offset, data.
fn block(descriptor: u8, offset: u64, data: &[u8]) -> Vec<u8> {
    let mut out = vec![descriptor];
    out.extend_from_slice(&(data.len() as u64).to_be_bytes());
    out.extend_from_slice(&offset.to_be_bytes());
    out.extend_from_slice(data);
    out
}

/// A MODE E upload of `pub/e.bin` over `streams`, each given its bytes
/// (then closed); returns the final reply, after the `111`/`112`
/// markers a MODE E store ends with.
fn mode_e_upload(f: &Fixture, streams: &[Vec<u8>]) -> rightsize_ftp_proto::Reply {
    let mut c = Control::login(f.serve.addr, "alice", "pw-alice");
    assert_eq!(c.cmd("MODE E").code(), 200);
    let data_addr = c.epsv();
    assert_eq!(c.cmd("STOR pub/e.bin").code(), 150);
    for bytes in streams {
        let mut data = TcpStream::connect(data_addr).unwrap();
        data.write_all(bytes).unwrap();
        // In order: each connection's blocks are read before the next's.
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut reply = c.reply();
    while reply.code() < 200 {
        reply = c.reply();
    }
    reply
}

#[test]
fn a_mode_e_upload_in_blocks_out_of_order_over_two_connections_is_whole() {
    let f = Fixture::new();
    let content = random_bytes(300_000, 8);
    let (a, b) = content.split_at(100_000);
    let mut first = block(0, 100_000, b);
    first.extend(block(8 | 64, 0, &[]));
    let mut second = block(0, 0, a);
    second.extend(block(8, 0, &[]));
    // The EOF block's offset counts the connections: 2.
    first.splice(first.len() - 8.., 2u64.to_be_bytes());
    let reply = mode_e_upload(&f, &[first, second]);
    assert_eq!(reply.code(), 226, "{reply:?}");
    assert_eq!(std::fs::read(f.file("pub/e.bin")).unwrap(), content);
}

#[test]
fn bad_mode_e_uploads_fail_clearly_and_leave_nothing_under_the_name() {
    let f = Fixture::new();
    let eof = |n: u64| {
        let mut b = block(8 | 64, 0, &[]);
        b.splice(b.len() - 8.., n.to_be_bytes());
        b
    };
    let cases: [(&str, Vec<Vec<u8>>, &str); 4] = [
        (
            "overlapping blocks",
            vec![[block(0, 0, b"abcd"), block(0, 2, b"cd"), eof(1)].concat()],
            "overlaps bytes already received",
        ),
        (
            "a connection that dies inside a block",
            vec![block(0, 0, &[7u8; 1000])[..500].to_vec()],
            "the connection ended after 483 of the 1000 bytes",
        ),
        (
            // One block carries the EOF (no connection) and this
            // connection's EOD: the server reads both in one go, whatever
            // the scheduling (over several connections, an EOF read before
            // a connection's EOD would legitimately end the transfer).
            "more EODs than the EOF announced",
            vec![[block(0, 0, b"ab"), eof(0)].concat()],
            "more EODs than connections",
        ),
        (
            "a hole",
            vec![[block(0, 5, b"late"), eof(1)].concat()],
            "bytes missing: received 5-9 of 9",
        ),
    ];
    for (what, streams, expected) in cases {
        let reply = mode_e_upload(&f, &streams);
        assert!(
            reply.code() >= 400 && reply.text().contains(expected),
            "{what}: {reply:?}"
        );
        assert_eq!(f.names(), ["ten.txt"], "{what}: something was left");
    }
}

#[test]
fn rightsize_get_and_put_over_four_streams_verified() {
    let f = Fixture::new();
    let content = random_bytes(9 << 20, 12);
    std::fs::write(f.file("pub/p.bin"), &content).unwrap();
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("p.bin");
    let url = format!("ftp://alice:pw-alice@{}/pub/p.bin", f.serve.addr);
    let summary = json_of(&[
        "get",
        &url,
        "-P",
        "4",
        "-o",
        target.to_str().unwrap(),
        "--verify",
        "--json",
    ]);
    assert_eq!(std::fs::read(&target).unwrap(), content);
    assert_eq!(summary["streams"], 4);
    assert_eq!(summary["checksum"]["verified"], true);
    let up = format!("ftp://alice:pw-alice@{}/pub/p-up.bin", f.serve.addr);
    let summary = json_of(&[
        "put",
        target.to_str().unwrap(),
        &up,
        "-P",
        "4",
        "--verify",
        "--json",
    ]);
    assert_eq!(std::fs::read(f.file("pub/p-up.bin")).unwrap(), content);
    assert_eq!(summary["streams"], 4);
    assert_eq!(summary["checksum"]["verified"], true);
}

#[test]
fn every_mode_e_stream_of_both_ends_is_tuned_as_one_flow() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    let log = dir.path().join("serve.log");
    let serve = Serve::start_logged(&root, &[], &log);
    let get = json_of(&[
        "get",
        &serve.url("/.rightsize/zero/1G"),
        "-P",
        "4",
        "-o",
        "/dev/null",
        "--json",
    ]);
    let sparse = dir.path().join("sparse");
    std::fs::File::create(&sparse)
        .unwrap()
        .set_len(512 << 20)
        .unwrap();
    let put = json_of(&[
        "put",
        "-P",
        "4",
        sparse.to_str().unwrap(),
        &serve.url("/.rightsize/null/z"),
        "--json",
    ]);
    drop(serve);
    // Both clients' streams: auto's shared window, buffers summed.
    for summary in [&get, &put] {
        assert_eq!(summary["streams"], 4, "{summary}");
        let tuner = &summary["tuning"]["tuner"];
        assert_eq!(tuner["name"], "auto", "{summary}");
        assert_eq!(tuner["state"], "shared", "{summary}");
        assert!(tuner["decisions"].as_u64().unwrap() > 0, "{summary}");
    }
    // The server's: its send buffers for the RETR, its receive buffers for
    // the STOR.
    let log = std::fs::read_to_string(&log).unwrap();
    for verb in ["RETR /.rightsize/zero/1G", "STOR /.rightsize/null/z"] {
        let line = log
            .lines()
            .find(|l| l.contains(verb))
            .unwrap_or_else(|| panic!("no {verb} in the log:\n{log}"));
        assert!(line.contains("tune auto ended shared after"), "{line}");
        assert!(!line.contains("after 0 decisions"), "{line}");
    }
}

/// `rightsize test` against `serve` with `args` and `--json`: its JSON.
fn test_json(serve: &Serve, args: &[&str]) -> serde_json::Value {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_rightsize"))
        .args(["test", &serve.addr.to_string(), "--json"])
        .args(args)
        .output()
        .unwrap();
    assert!(output.status.success(), "{args:?}: {output:?}");
    serde_json::from_slice::<serde_json::Value>(&output.stdout).unwrap()
}

#[test]
fn test_p_4_moves_memory_to_memory_over_four_tuned_streams_each_way_by_time_or_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(dir.path(), &[]);
    let test = |args: &[&str]| test_json(&serve, &[&["-P", "4"], args].concat());
    for reverse in [false, true] {
        let direction: &[&str] = if reverse { &["-R"] } else { &[] };
        // By time: stopped on time, a send cleanly (226), a receive by
        // closing its streams.
        let timed = test(&[direction, &["-t", "1"]].concat());
        assert_eq!(timed["stopped"], "time", "{timed}");
        assert!(timed["bytes"].as_u64().unwrap() > 0, "{timed}");
        if !reverse {
            assert!(
                timed["completion"].as_str().unwrap().starts_with("226"),
                "{timed}"
            );
        }
        // By bytes: all of them, and the server's side from its 226.
        let sized = test(&[direction, &["-n", "256M"]].concat());
        assert_eq!(sized["bytes"], 256 << 20, "{sized}");
        assert_eq!(sized["stopped"], serde_json::Value::Null, "{sized}");
        for run in [&timed, &sized] {
            assert_eq!(run["transfer"]["streams"], 4, "{run}");
            assert_eq!(
                run["transfer"]["tuning"]["tuner"]["state"], "shared",
                "{run}"
            );
        }
        assert_eq!(sized["server_buffers"]["tune"], "auto", "{sized}");
    }
}

#[test]
fn test_p_auto_runs_its_trials_each_way_and_ends_on_time_or_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(dir.path(), &[]);
    let test = |args: &[&str]| test_json(&serve, &[&["-P", "auto"], args].concat());
    for reverse in [false, true] {
        let direction: &[&str] = if reverse { &["-R"] } else { &[] };
        // Past the first trial (2 s on loopback): 8 streams tried, then 8
        // or 16 (a download's second lane, an upload's added streams).
        let timed = test(&[direction, &["-t", "4"]].concat());
        assert_eq!(timed["stopped"], "time", "{timed}");
        let trials = &timed["transfer"]["stream_trials"];
        assert_eq!(trials[0]["streams"], 8, "{timed}");
        let streams = timed["transfer"]["streams"].as_u64().unwrap();
        assert!(streams == 8 || streams == 16, "{timed}");
        // By bytes: all of them, and the server's 226 (its buffers).
        let sized = test(&[direction, &["-n", "512M"]].concat());
        assert_eq!(sized["bytes"], 512 << 20, "{sized}");
        assert_eq!(sized["stopped"], serde_json::Value::Null, "{sized}");
        assert!(
            sized["completion"].as_str().unwrap().starts_with("226"),
            "{sized}"
        );
        assert_eq!(sized["server_buffers"]["tune"], "auto", "{sized}");
    }
}

#[test]
fn test_p_says_what_it_takes() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_rightsize"))
        .args(["test", "127.0.0.1:9", "-P", "many"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("\"many\"") && stderr.contains("1 to 64, or auto"),
        "{stderr}"
    );
}

#[test]
fn put_continue_sends_only_what_the_server_lacks_and_verifies_the_whole_file() {
    let f = Fixture::new();
    let content = random_bytes(3 << 20, 13);
    // The server holds the first 1,000,000 bytes under the name.
    std::fs::write(f.file("pub/r.bin"), &content[..1_000_000]).unwrap();
    let local = tempfile::tempdir().unwrap();
    let source = local.path().join("r.bin");
    std::fs::write(&source, &content).unwrap();
    let url = format!("ftp://alice:pw-alice@{}/pub/r.bin", f.serve.addr);
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_rightsize"))
        .args([
            "put",
            "-C",
            source.to_str().unwrap(),
            &url,
            "--verify",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(summary["resumed_bytes"], 1_000_000);
    assert_eq!(summary["bytes"], content.len() as u64 - 1_000_000);
    assert_eq!(summary["checksum"]["verified"], true, "{summary}");
    assert_eq!(std::fs::read(f.file("pub/r.bin")).unwrap(), content);
}

#[test]
fn rightsize_get_r_a_tree_keeps_going_past_a_file_that_fails_and_resumes() {
    let f = Fixture::new();
    let mut made = Vec::new();
    for i in 0..12u64 {
        let name = format!("pub/set/d{}/f{i}.bin", i % 3);
        std::fs::create_dir_all(f.file(&name).parent().unwrap()).unwrap();
        let bytes = random_bytes(70_000 + i as usize * 1000, i);
        std::fs::write(f.file(&name), &bytes).unwrap();
        made.push((name.trim_start_matches("pub/set/").to_owned(), bytes));
    }
    let out = tempfile::tempdir().unwrap();
    let copy = out.path().join("copy");
    // d1/f1.bin cannot be written here: a directory holds its name.
    std::fs::create_dir_all(copy.join("d1/f1.bin")).unwrap();
    // d2/f2.bin was half fetched before.
    std::fs::create_dir_all(copy.join("d2")).unwrap();
    std::fs::write(copy.join("d2/.f2.bin.rightsize-part"), &made[2].1[..5000]).unwrap();
    let url = format!("ftp://{}/pub/set/", f.serve.addr);
    let run = |extra: &[&str]| {
        let mut args = vec!["get", "-r", &url, "-o", copy.to_str().unwrap(), "--json"];
        args.extend_from_slice(extra);
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_rightsize"))
            .args(&args)
            .output()
            .unwrap();
        let summary = serde_json::from_slice::<serde_json::Value>(&output.stdout)
            .unwrap_or_else(|e| panic!("{args:?}: {e}: {output:?}"));
        (output, summary)
    };
    let (output, summary) = run(&["-C", "--verify", "-j", "3"]);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert_eq!(summary["files"], 11);
    assert_eq!(summary["verified_files"], 11);
    assert_eq!(summary["resumed_bytes"], 5000);
    let failures = summary["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert_eq!(failures[0]["path"], "d1/f1.bin");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("1 of 12 files failed") && stderr.contains("get -r -C"),
        "{stderr}"
    );
    for (name, bytes) in &made {
        if name != "d1/f1.bin" {
            assert_eq!(&std::fs::read(copy.join(name)).unwrap(), bytes, "{name}");
        }
    }
    // Once the way is clear, -C fetches only what is missing.
    std::fs::remove_dir(copy.join("d1/f1.bin")).unwrap();
    let (output, summary) = run(&["-C"]);
    assert!(output.status.success(), "{output:?}");
    assert_eq!(summary["files"], 1);
    assert_eq!(summary["skipped_files"], 11);
    assert_eq!(std::fs::read(copy.join("d1/f1.bin")).unwrap(), made[1].1);
    let parts: Vec<_> = walk(&copy)
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(".rightsize-part"))
        .collect();
    assert!(parts.is_empty(), "{parts:?}");
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn rightsize_put_r_a_tree_pipelined_then_skip_it_with_c() {
    let f = Fixture::new();
    let local = tempfile::tempdir().unwrap();
    let top = local.path().join("run42");
    let mut made = Vec::new();
    for i in 0..25u64 {
        let name = format!("d{}/f{i}.bin", i % 4);
        let path = top.join(&name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let bytes = random_bytes(30_000 + i as usize * 5000, i);
        std::fs::write(&path, &bytes).unwrap();
        made.push((name, bytes));
    }
    std::fs::write(top.join("empty"), b"").unwrap();
    made.push(("empty".to_owned(), Vec::new()));
    let url = format!("ftp://alice:pw-alice@{}/pub/", f.serve.addr);
    let run = |extra: &[&str]| {
        let mut args = vec!["put", "-r", top.to_str().unwrap(), &url, "--json"];
        args.extend_from_slice(extra);
        json_of(&args)
    };
    let summary = run(&["--verify", "-j", "2", "-P", "2"]);
    assert_eq!(summary["files"], made.len() as u64);
    assert_eq!(summary["verified_files"], made.len() as u64);
    for (name, bytes) in &made {
        let there = f.file(&format!("pub/run42/{name}"));
        assert_eq!(&std::fs::read(&there).unwrap(), bytes, "{name}");
    }
    let summary = run(&["-C"]);
    assert_eq!(summary["skipped_files"], made.len() as u64);
    assert_eq!(summary["files"], 0);
}

#[test]
fn sync_skips_the_files_already_the_same_and_moves_those_that_differ_at_the_same_size() {
    let f = Fixture::new();
    let local = tempfile::tempdir().unwrap();
    let mine = local.path().join("t");
    std::fs::create_dir_all(f.file("pub/t/d")).unwrap();
    std::fs::create_dir_all(mine.join("d")).unwrap();
    // On the server: same, changed (same size), new. Here: same, and
    // changed's old bytes.
    let same = random_bytes(70_000, 21);
    let changed = random_bytes(50_000, 22);
    let new = random_bytes(10_000, 23);
    std::fs::write(f.file("pub/t/same"), &same).unwrap();
    std::fs::write(f.file("pub/t/d/changed"), &changed).unwrap();
    std::fs::write(f.file("pub/t/new"), &new).unwrap();
    std::fs::write(mine.join("same"), &same).unwrap();
    std::fs::write(mine.join("d/changed"), random_bytes(50_000, 24)).unwrap();
    let run = |args: &[&str]| json_of(&[args, &["--sync", "--json"]].concat());
    // A download (pipelined in MODE E: the CKSMs go ahead with the RETRs).
    let url = format!("ftp://alice:pw-alice@{}/pub/t/", f.serve.addr);
    let got = run(&["get", "-r", &url, "-o", mine.to_str().unwrap()]);
    assert_eq!(
        (got["skipped_files"].as_u64(), got["files"].as_u64()),
        (Some(1), Some(2)),
        "{got}"
    );
    assert_eq!(std::fs::read(mine.join("d/changed")).unwrap(), changed);
    assert_eq!(std::fs::read(mine.join("new")).unwrap(), new);
    // An upload (stream mode: SIZE, then CKSM where the size is the same).
    let changed_here = random_bytes(50_000, 25);
    std::fs::write(mine.join("d/changed"), &changed_here).unwrap();
    let url = format!("ftp://alice:pw-alice@{}/pub/", f.serve.addr);
    let put = run(&["put", "-r", mine.to_str().unwrap(), &url]);
    assert_eq!(
        (put["skipped_files"].as_u64(), put["files"].as_u64()),
        (Some(2), Some(1)),
        "{put}"
    );
    assert_eq!(
        std::fs::read(f.file("pub/t/d/changed")).unwrap(),
        changed_here
    );
}

/// What a `get -P` that stopped keeps: the blocks that came, at their
/// offsets (holes between them), and their ranges beside the part.
fn kept_blocks(
    out: &std::path::Path,
    name: &str,
    content: &[u8],
    ranges: &[(usize, usize)],
) -> u64 {
    let mut part = vec![0u8; ranges.iter().map(|r| r.1).max().unwrap_or(0)];
    for &(start, end) in ranges {
        part[start..end].copy_from_slice(&content[start..end]);
    }
    std::fs::write(out.join(format!(".{name}.rightsize-part")), &part).unwrap();
    let text: Vec<String> = ranges.iter().map(|(s, e)| format!("{s}-{e}")).collect();
    std::fs::write(
        out.join(format!(".{name}.rightsize-part.ranges")),
        text.join(",") + "\n",
    )
    .unwrap();
    ranges.iter().map(|(s, e)| (e - s) as u64).sum()
}

#[test]
fn rightsize_get_c_p_4_fetches_only_the_ranges_a_part_lacks() {
    let f = Fixture::new();
    let content = random_bytes(5 << 20, 21);
    std::fs::write(f.file("pub/r.bin"), &content).unwrap();
    let out = tempfile::tempdir().unwrap();
    let held = kept_blocks(
        out.path(),
        "r.bin",
        &content,
        &[(0, 262_144), (786_432, 1_310_720), (2_097_152, 2_100_000)],
    );
    let url = format!("ftp://{}/pub/r.bin", f.serve.addr);
    let target = out.path().join("r.bin");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_rightsize"))
        .args(["get", "-C", "-P", "4", &url, "-o", target.to_str().unwrap()])
        .args(["--verify", "--json"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(std::fs::read(&target).unwrap(), content);
    assert_eq!(summary["resumed_bytes"], held);
    assert_eq!(summary["bytes"], content.len() as u64 - held);
    assert_eq!(summary["checksum"]["verified"], true);
    let mut names: Vec<_> = std::fs::read_dir(out.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["r.bin"], "the part and its ranges are gone");
}

#[test]
fn interval_lines_go_on_while_the_data_stalls() {
    let root = tempfile::tempdir().unwrap();
    let serve = Serve::start(root.path(), &[]);
    // The server stops for 2 s a second into the download.
    let pid = serve.pid().to_string();
    let stopper = std::thread::spawn(move || {
        let signal = |which: &str| {
            let done = std::process::Command::new("kill")
                .args([which, &pid])
                .status()
                .unwrap();
            assert!(done.success(), "kill {which} {pid}");
        };
        std::thread::sleep(Duration::from_secs(1));
        signal("-STOP");
        std::thread::sleep(Duration::from_secs(2));
        signal("-CONT");
    });
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rightsize"))
        .args(["get", &serve.url("/.rightsize/zero/16G"), "-o", "/dev/null"])
        .args(["-i", "0.5", "--tune", "kernel"])
        .output()
        .unwrap();
    stopper.join().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // "[  1.61-2.02   s]       0 Bytes ...": one line about every half
    // second, back to back, the stall's with nothing.
    let spans: Vec<(f64, f64, bool)> = text
        .lines()
        .filter(|l| l.starts_with('[') && l.contains("bits/sec"))
        .map(|l| {
            let inside = &l[1..l.find(']').unwrap()];
            let (from, to) = inside
                .trim()
                .trim_end_matches('s')
                .trim()
                .split_once('-')
                .unwrap();
            (
                from.trim().parse().unwrap(),
                to.trim().parse().unwrap(),
                l.contains(" 0 Bytes "),
            )
        })
        .collect();
    assert!(spans.len() >= 6, "{text}");
    for pair in spans.windows(2) {
        assert!(
            (pair[1].0 - pair[0].1).abs() < 1e-9,
            "a gap between lines:\n{text}"
        );
    }
    for &(from, to, _) in &spans[..spans.len() - 1] {
        assert!(to - from < 0.9, "a line of {from}-{to} s:\n{text}");
    }
    let stalled = spans.iter().filter(|s| s.2).count();
    assert!(stalled >= 2, "no line for the stall:\n{text}");
}

#[test]
fn a_download_cut_by_a_server_killed_midway_resumes_from_the_restarted_server() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let out = dir.path().join("out");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&out).unwrap();
    let content = random_bytes(128 << 20, 21);
    std::fs::write(root.join("big.bin"), &content).unwrap();
    // Writes of 1 KiB (no sendfile): slow enough to be caught midway.
    let first = Serve::start(&root, &["--write-size", "1024"]);
    let target = out.join("big.bin");
    let client = std::process::Command::new(env!("CARGO_BIN_EXE_rightsize"))
        .args([
            "get",
            &first.url("/big.bin"),
            "-o",
            target.to_str().unwrap(),
        ])
        .args(["--timeout", "2s"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Once a part of the file is in, the server stops, then dies.
    let part = out.join(".big.bin.rightsize-part");
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::fs::metadata(&part).map_or(true, |m| m.len() < 1 << 20) {
        assert!(Instant::now() < deadline, "no part file grew");
        std::thread::sleep(Duration::from_millis(5));
    }
    let kill = |signal: &str| {
        let pid = first.pid().to_string();
        assert!(
            std::process::Command::new("kill")
                .args([signal, &pid])
                .status()
                .unwrap()
                .success()
        );
    };
    kill("-STOP");
    std::thread::sleep(Duration::from_millis(200));
    kill("-KILL");
    let cut = client.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&cut.stderr);
    assert!(!cut.status.success(), "{stderr}");
    assert!(stderr.contains("resume with: rightsize get -C"), "{stderr}");
    let kept = std::fs::metadata(&part).unwrap().len();
    assert!(kept > 0 && kept < content.len() as u64, "{kept}");
    assert!(!target.exists(), "a cut download is under its name");
    drop(first);
    // A new server (another port) over the same files: -C goes on from
    // the part kept.
    let second = Serve::start(&root, &[]);
    let resumed = std::process::Command::new(env!("CARGO_BIN_EXE_rightsize"))
        .args([
            "get",
            "-C",
            &second.url("/big.bin"),
            "-o",
            target.to_str().unwrap(),
        ])
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        resumed.status.success(),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&resumed.stdout).unwrap();
    assert_eq!(report["resumed_bytes"].as_u64(), Some(kept), "{report}");
    assert!(
        std::fs::read(&target).unwrap() == content,
        "the resumed file differs"
    );
    assert!(!part.exists(), "the part file is left");
}

#[test]
fn put_c_continues_the_part_a_server_kept_of_a_cut_upload() {
    let f = Fixture::new();
    let content = random_bytes(6 << 20, 21);
    let local = f.dir.path().join("big.bin");
    std::fs::write(&local, &content).unwrap();
    // A first upload whose client dies after 2 MiB, its control connection
    // first (see above).
    let mut c = Control::login(f.serve.addr, "alice", "pw-alice");
    let data_addr = c.epsv();
    let mut data = TcpStream::connect(data_addr).unwrap();
    assert_eq!(c.cmd("STOR pub/big.bin").code(), 150);
    data.write_all(&content[..2 << 20]).unwrap();
    // The writes may all sit in socket buffers: give the server time to
    // take the data connection up (a session that ends before that keeps
    // nothing).
    std::thread::sleep(Duration::from_millis(300));
    drop(c);
    std::thread::sleep(Duration::from_millis(200));
    drop(data);
    let mut probe = Control::login(f.serve.addr, "alice", "pw-alice");
    let deadline = Instant::now() + Duration::from_secs(10);
    let kept = loop {
        let reply = probe.cmd("SITE RIGHTSIZE PART pub/big.bin");
        if reply.code() == 213 {
            break reply.text().trim().parse::<u64>().unwrap();
        }
        assert!(Instant::now() < deadline, "nothing kept: {reply:?}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(kept, 2 << 20);
    let url = format!("ftp://alice:pw-alice@{}/pub/big.bin", f.serve.addr);
    let report = json_of(&[
        "put",
        "-C",
        "--verify",
        local.to_str().unwrap(),
        &url,
        "--json",
    ]);
    assert_eq!(report["resumed_bytes"].as_u64(), Some(kept), "{report}");
    assert!(std::fs::read(f.file("pub/big.bin")).unwrap() == content);
    assert_eq!(f.names(), ["big.bin", "ten.txt"]);
}

#[test]
fn passive_ports_and_buffers_set_by_hand_are_what_a_curl_download_gets() {
    let dir = tempfile::tempdir().unwrap();
    let telemetry = dir.path().join("telemetry");
    std::fs::create_dir_all(&telemetry).unwrap();
    let serve = Serve::start(
        dir.path(),
        &[
            "--passive-ports",
            "50100-50103",
            "--sndbuf",
            "1MiB",
            "--congestion",
            "reno",
            "--telemetry-dir",
            telemetry.to_str().unwrap(),
        ],
    );
    for _ in 0..3 {
        run(
            "curl download",
            std::process::Command::new("curl")
                .args(["-sS", "-o", "/dev/null"])
                .arg(serve.url("/.rightsize/zero/20M")),
        );
    }
    let files: Vec<_> = std::fs::read_dir(&telemetry)
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    assert_eq!(files.len(), 3, "one telemetry file per data connection");
    for text in files {
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let header = &lines[0];
        // The data connection came to a port of the range.
        let port: u16 = header["local_addr"]
            .as_str()
            .and_then(|a| a.rsplit(':').next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no local port in {header}"));
        assert!((50100..=50103).contains(&port), "{header}");
        assert_eq!(header["settings"]["congestion"], "reno", "{header}");
        assert_eq!(header["settings"]["sndbuf_bytes"], "1048576", "{header}");
        // The kernel holds twice the request, and autotuning left it.
        let last = lines.last().unwrap();
        assert_eq!(last["kind"], "final", "{text}");
        assert_eq!(last["sndbuf_bytes"], 2 * 1_048_576, "{last}");
    }
}

#[test]
fn quiet_transfers_print_nothing_but_their_errors() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("a.bin"), random_bytes(100_000, 3)).unwrap();
    let serve = Serve::start(&root, &[]);
    let rightsize = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_rightsize"))
            .args(args)
            .output()
            .unwrap()
    };
    let out = dir.path().join("a.bin");
    for flag in ["-q", "-s", "--quiet", "--silent"] {
        let done = rightsize(&[
            "get",
            &serve.url("/a.bin"),
            "-o",
            out.to_str().unwrap(),
            flag,
        ]);
        assert!(done.status.success(), "{flag}");
        assert!(
            done.stdout.is_empty() && done.stderr.is_empty(),
            "{flag}: {done:?}"
        );
    }
    assert_eq!(std::fs::read(&out).unwrap(), random_bytes(100_000, 3));
    let up = rightsize(&[
        "put",
        out.to_str().unwrap(),
        &serve.url("/.rightsize/null/a"),
        "-q",
    ]);
    assert!(
        up.status.success() && up.stdout.is_empty() && up.stderr.is_empty(),
        "{up:?}"
    );
    // An error still says what went wrong.
    let missing = rightsize(&["get", &serve.url("/none.bin"), "-o", "/dev/null", "-q"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&missing.stderr).contains("550"),
        "{missing:?}"
    );
    // With --json the summary is still printed: that is what was asked.
    let json = rightsize(&[
        "get",
        &serve.url("/a.bin"),
        "-o",
        "/dev/null",
        "-q",
        "--json",
    ]);
    assert!(json.status.success());
    assert!(String::from_utf8_lossy(&json.stdout).contains("\"bytes\""));
}

#[test]
fn logins_from_u_the_environment_a_password_file_and_a_netrc() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("up")).unwrap();
    std::fs::write(root.join("a.bin"), random_bytes(50_000, 9)).unwrap();
    let users = dir.path().join("users");
    add_user(&users, "alice", "pw for alice", false);
    let serve = Serve::start(
        &root,
        &["--users", users.to_str().unwrap(), "--no-anonymous"],
    );
    let host = serve.addr.ip().to_string();
    let out = dir.path().join("a.bin");
    let rightsize = |args: &[&str], env: Option<&str>| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_rightsize"));
        cmd.args(args)
            .env_remove("RIGHTSIZE_PASSWORD")
            .stdin(std::process::Stdio::null());
        if let Some(password) = env {
            cmd.env("RIGHTSIZE_PASSWORD", password);
        }
        cmd.output().unwrap()
    };
    let url = serve.url("/a.bin");
    let get = |extra: &[&str], env: Option<&str>| {
        let _ = std::fs::remove_file(&out);
        rightsize(
            &[
                &["get", url.as_str(), "-o", out.to_str().unwrap(), "-q"],
                extra,
            ]
            .concat(),
            env,
        )
    };
    let fetched = |what: &str, done: &std::process::Output| {
        assert!(done.status.success(), "{what}: {done:?}");
        assert_eq!(
            std::fs::read(&out).unwrap(),
            random_bytes(50_000, 9),
            "{what}"
        );
    };
    // -u with the password in RIGHTSIZE_PASSWORD.
    fetched(
        "-u and the environment",
        &get(&["-u", "alice"], Some("pw for alice")),
    );
    // -u USER:PASSWORD.
    fetched(
        "-u user:password",
        &get(&["-u", "alice:pw for alice"], None),
    );
    // --password-file: its first line.
    let file = dir.path().join("pw");
    std::fs::write(&file, "pw for alice\nignored\n").unwrap();
    fetched(
        "--password-file",
        &get(
            &["-u", "alice", "--password-file", file.to_str().unwrap()],
            None,
        ),
    );
    // A .netrc names the user and the password.
    let netrc = dir.path().join("netrc");
    std::fs::write(
        &netrc,
        format!("machine {host}\n  login alice\n  password \"pw for alice\"\n"),
    )
    .unwrap();
    fetched(
        "--netrc-file",
        &get(&["--netrc-file", netrc.to_str().unwrap()], None),
    );
    // An upload logs in the same way.
    let up = rightsize(
        &[
            "put",
            out.to_str().unwrap(),
            &serve.url("/up/a.bin"),
            "-u",
            "alice",
            "-q",
        ],
        Some("pw for alice"),
    );
    assert!(up.status.success(), "{up:?}");
    assert_eq!(
        std::fs::read(root.join("up/a.bin")).unwrap(),
        random_bytes(50_000, 9)
    );
    // No password anywhere and no terminal to ask on: said, with where
    // one may come from.
    let none = get(&["-u", "alice"], None);
    let said = String::from_utf8_lossy(&none.stderr);
    assert_eq!(none.status.code(), Some(1), "{none:?}");
    assert!(
        said.contains("no password for alice") && said.contains("RIGHTSIZE_PASSWORD"),
        "{said}"
    );
    // A wrong one is the server's refusal.
    let wrong = get(&["-u", "alice"], Some("nope"));
    assert_eq!(wrong.status.code(), Some(1), "{wrong:?}");
    assert!(
        String::from_utf8_lossy(&wrong.stderr).contains("530"),
        "{wrong:?}"
    );
    // A file that is not a .netrc is refused, quoting it.
    std::fs::write(&netrc, "machine h\nlogn alice\n").unwrap();
    let bad = get(&["--netrc-file", netrc.to_str().unwrap()], None);
    let said = String::from_utf8_lossy(&bad.stderr);
    assert!(
        !bad.status.success() && said.contains("line 2") && said.contains("\"logn\""),
        "{said}"
    );
    // A user in the URL and in -u: refused.
    let twice = rightsize(
        &[
            "get",
            &url.replace("ftp://", "ftp://alice@"),
            "-u",
            "alice",
            "-o",
            "/dev/null",
        ],
        None,
    );
    assert!(
        String::from_utf8_lossy(&twice.stderr).contains("give the user once"),
        "{twice:?}"
    );
}

#[test]
fn put_dash_uploads_standard_input() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("up")).unwrap();
    let users = dir.path().join("users");
    add_user(&users, "alice", "pw", false);
    let serve = Serve::start(&root, &["--users", users.to_str().unwrap()]);
    let content = random_bytes(3_000_000, 12);
    let put = |url: &str, extra: &[&str]| {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_rightsize"))
            .args([&["put", "-", url, "-u", "alice:pw", "-q"], extra].concat())
            .stdin(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // A pipe: its size is known only at its end.
        let mut stdin = child.stdin.take().unwrap();
        let _ = stdin.write_all(&content);
        drop(stdin);
        child.wait_with_output().unwrap()
    };
    let done = put(&serve.url("/up/piped.bin"), &["--verify"]);
    assert!(done.status.success(), "{done:?}");
    assert!(std::fs::read(root.join("up/piped.bin")).unwrap() == content);
    // What standard input cannot do is refused before any connection.
    for (url, extra, why) in [
        ("/up/", &[][..], "must name the remote file"),
        ("/up/x", &["-C"][..], "cannot resume"),
        ("/up/x", &["-P", "4"][..], "-P reads"),
    ] {
        let refused = put(&serve.url(url), extra);
        let said = String::from_utf8_lossy(&refused.stderr);
        assert_eq!(refused.status.code(), Some(2), "{extra:?}: {said}");
        assert!(said.contains(why), "{extra:?}: {said}");
    }
}

#[test]
fn test_and_get_print_interval_lines_in_the_same_format() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(dir.path(), &[]);
    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_rightsize"))
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
        // get prints its lines on standard error, test on standard output.
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    };
    let addr = serve.addr.to_string();
    let test = run(&["test", &addr, "-t", "0.6", "-i", "0.2"]);
    let get = run(&[
        "get",
        &serve.url("/.rightsize/zero/300M"),
        "-o",
        "/dev/null",
        "-i",
        "0.05",
    ]);
    // The header first, with the same first columns.
    let columns = "[ Interval       ]      Transfer          Bitrate  Retr";
    for (what, text) in [("test", &test), ("get", &get)] {
        let first = text.lines().next().unwrap_or_default();
        assert!(first.starts_with(columns), "{what}: {text}");
        let line = text.lines().nth(1).unwrap_or_default();
        assert!(
            line.starts_with("[  0.00-") && line.contains("Bytes ") && line.contains("bits/sec"),
            "{what}: {text}"
        );
    }
}

#[test]
fn json_carries_the_intervals_that_add_up_to_the_transfer() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(dir.path(), &[]);
    for extra in [&["-i", "0.05"][..], &[][..]] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_rightsize"))
            .args([
                "get",
                &serve.url("/.rightsize/zero/300M"),
                "-o",
                "/dev/null",
                "--json",
            ])
            .args(extra)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(json["error"].is_null(), "{json}");
        let intervals = json["intervals"]
            .as_array()
            .unwrap_or_else(|| panic!("{json}"));
        assert!(!intervals.is_empty(), "{extra:?}: {json}");
        let sum: u64 = intervals.iter().map(|i| i["bytes"].as_u64().unwrap()).sum();
        assert_eq!(sum, json["bytes"].as_u64().unwrap(), "{extra:?}: {json}");
        let ends: Vec<f64> = intervals
            .iter()
            .map(|i| i["end_s"].as_f64().unwrap())
            .collect();
        assert!(ends.windows(2).all(|w| w[0] < w[1]), "{ends:?}");
        assert!(
            intervals.iter().all(|i| i["bits_per_second"].is_f64()),
            "{json}"
        );
    }
}

#[test]
fn the_server_log_has_times_clients_users_and_outcomes_as_text_or_json() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("a.bin"), random_bytes(10_000, 4)).unwrap();
    let users = dir.path().join("users");
    add_user(&users, "alice", "pw", false);
    for format in ["text", "json"] {
        let log = dir.path().join(format!("serve-{format}.log"));
        let serve = Serve::start_logged(
            &root,
            &["--users", users.to_str().unwrap(), "--log-format", format],
            &log,
        );
        let mut c = Control::login(serve.addr, "alice", "pw");
        let (bytes, end) = c.retr("/a.bin");
        assert_eq!((bytes.len(), end.code()), (10_000, 226));
        let mut bad = Control::connect(serve.addr);
        assert_eq!(bad.cmd("USER alice").code(), 331);
        assert_eq!(bad.cmd("PASS wrong").code(), 530);
        drop((c, bad));
        std::thread::sleep(Duration::from_millis(200));
        drop(serve);
        let text = std::fs::read_to_string(&log).unwrap();
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| !l.starts_with("rightsize serve:"))
            .collect();
        assert!(lines.len() >= 4, "{text}");
        if format == "text" {
            // RFC 3339 UTC first, then what happened, then the fields.
            for line in &lines {
                let time = line.split(' ').next().unwrap_or_default();
                assert!(
                    time.len() == 24 && time.ends_with('Z') && time.contains('T'),
                    "{line}"
                );
                assert!(line.contains(" client=127.0.0.1:"), "{line}");
            }
            assert!(
                text.contains("\"alice\" logged in") && text.contains("user=\"alice\""),
                "{text}"
            );
            assert!(text.contains("failed login for \"alice\""), "{text}");
            assert!(
                text.contains("RETR /a.bin from 0: complete, 10000 bytes"),
                "{text}"
            );
        } else {
            let events: Vec<serde_json::Value> = lines
                .iter()
                .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
                .collect();
            assert!(
                events
                    .iter()
                    .all(|e| e["timestamp"].as_str().is_some_and(|t| t.ends_with('Z')))
            );
            let find = |event: &str| {
                events
                    .iter()
                    .find(|e| e["event"] == event)
                    .unwrap_or_else(|| panic!("no {event} in {text}"))
            };
            assert_eq!(find("login")["user"], "alice");
            let failed = find("failed-login");
            assert_eq!(
                (failed["user"].as_str(), failed["level"].as_str()),
                (Some("alice"), Some("WARN"))
            );
            let transfer = events
                .iter()
                .find(|e| e["transfer"] == 1)
                .unwrap_or_else(|| panic!("no transfer in {text}"));
            assert!(
                transfer["message"]
                    .as_str()
                    .unwrap()
                    .contains("complete, 10000 bytes")
            );
            assert!(
                transfer["client"]
                    .as_str()
                    .unwrap()
                    .starts_with("127.0.0.1:")
            );
        }
    }
}

#[test]
fn serve_rcvbuf_is_what_a_curl_upload_gets() {
    let dir = tempfile::tempdir().unwrap();
    let telemetry = dir.path().join("telemetry");
    std::fs::create_dir_all(&telemetry).unwrap();
    let serve = Serve::start(
        dir.path(),
        &[
            "--rcvbuf",
            "1MiB",
            "--telemetry-dir",
            telemetry.to_str().unwrap(),
        ],
    );
    let local = dir.path().join("up.bin");
    std::fs::write(&local, vec![0u8; 20 << 20]).unwrap();
    run(
        "curl upload",
        std::process::Command::new("curl")
            .args(["-sS", "-T"])
            .arg(&local)
            .arg(serve.url("/.rightsize/null/up.bin")),
    );
    let files: Vec<String> = std::fs::read_dir(&telemetry)
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    assert_eq!(files.len(), 1, "one data connection");
    let lines: Vec<serde_json::Value> = files[0]
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let (header, last) = (&lines[0], lines.last().unwrap());
    assert_eq!(header["direction"], "receive", "{header}");
    assert_eq!(header["settings"]["rcvbuf_bytes"], "1048576", "{header}");
    // The kernel holds twice the request, and autotuning left it.
    assert_eq!(last["kind"], "final", "{last}");
    assert_eq!(last["rcvbuf_bytes"], 2 * 1_048_576, "{last}");
}
