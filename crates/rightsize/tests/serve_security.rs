//! Each security rule of `rightsize serve` (RFC 2577 and what vsftpd does),
//! attacked from a raw TCP client; and bad input that must get the right
//! reply, one per line, with the server still up.
#![allow(clippy::unwrap_used)]

mod serve_support;

use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use serve_support::{Control, Serve, add_user};

fn root_with_files() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("pub")).unwrap();
    std::fs::write(dir.path().join("pub/hello.txt"), b"hello\n").unwrap();
    // Escapes the root by a symbolic link, absolute and relative.
    std::os::unix::fs::symlink("/etc", dir.path().join("pub/etc")).unwrap();
    std::os::unix::fs::symlink("../../", dir.path().join("pub/up")).unwrap();
    // A link that stays inside is fine.
    std::os::unix::fs::symlink("hello.txt", dir.path().join("pub/inside")).unwrap();
    dir
}

#[test]
fn no_path_leaves_the_root() {
    let root = root_with_files();
    let serve = Serve::start(root.path(), &[]);
    let mut c = Control::anonymous(serve.addr);
    for path in [
        "../../../../etc/passwd",
        "/../etc/passwd",
        "/etc/passwd",
        "//etc//passwd",
        "pub/../../etc/passwd",
        "pub/etc/passwd",
        "pub/up/etc/passwd",
        "/pub/etc/hostname",
    ] {
        assert_eq!(c.cmd(&format!("SIZE {path}")).code(), 550, "SIZE {path}");
        let (bytes, reply) = c.retr(path);
        assert!(bytes.is_empty(), "RETR {path} sent data");
        assert_eq!(reply.code(), 550, "RETR {path}: {reply:?}");
    }
    for dir in ["pub/etc", "pub/up", "/pub/up/tmp", "../.."] {
        let reply = c.cmd(&format!("CWD {dir}"));
        assert!(
            reply.code() == 550 || (reply.code() == 250 && c.cmd("PWD").text().contains("\"/\"")),
            "CWD {dir}: {reply:?}"
        );
        assert_eq!(c.cmd("CWD /").code(), 250);
    }
    // A NUL byte is refused by the parser, never truncates a path.
    c.send_bytes(b"SIZE pub/hello.txt\0/../../etc/passwd\r\n");
    let nul = c.reply().code();
    assert!(nul == 501 || nul == 553, "NUL in a path: {nul}");
    // The inside link and repeated slashes still work.
    assert_eq!(c.cmd("SIZE //pub///inside").text(), "6");
    let (bytes, reply) = c.retr("/pub/./hello.txt");
    assert_eq!((bytes.as_slice(), reply.code()), (&b"hello\n"[..], 226));
}

#[test]
fn port_and_eprt_only_to_the_client_and_never_below_1024() {
    let root = root_with_files();
    let serve = Serve::start(root.path(), &[]);
    let mut c = Control::anonymous(serve.addr);
    // Another address (the FTP bounce attack), and a privileged port.
    assert_eq!(c.cmd("PORT 127,0,0,2,200,10").code(), 500);
    assert_eq!(c.cmd("PORT 198,18,0,9,200,10").code(), 500);
    assert_eq!(c.cmd("PORT 127,0,0,1,0,25").code(), 500);
    assert_eq!(c.cmd("EPRT |1|127.0.0.2|51234|").code(), 500);
    assert_eq!(c.cmd("EPRT |1|127.0.0.1|25|").code(), 500);
    // The refused PORT left no data connection behind.
    assert_eq!(c.cmd("RETR pub/hello.txt").code(), 425);
    // The client itself, on a high port, is fine.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let reply = c.cmd(&format!("EPRT |1|127.0.0.1|{port}|"));
    assert_eq!(reply.code(), 200);
    assert_eq!(c.cmd("RETR pub/hello.txt").code(), 150);
    let (mut data, _) = listener.accept().unwrap();
    let mut bytes = Vec::new();
    data.read_to_end(&mut bytes).unwrap();
    assert_eq!(bytes, b"hello\n");
    assert_eq!(c.reply().code(), 226);
}

#[test]
fn passive_data_accepted_only_from_the_control_peer() {
    let root = root_with_files();
    let serve = Serve::start(root.path(), &[]);
    let mut c = Control::anonymous(serve.addr);
    let data_addr = c.epsv();
    c.send("RETR pub/hello.txt");
    assert_eq!(c.reply().code(), 150);
    // A stranger (127.0.0.2) connects first: it gets nothing.
    let stranger =
        socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    stranger
        .bind(&SocketAddr::new(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)), 0).into())
        .unwrap();
    stranger.connect(&data_addr.into()).unwrap();
    let mut stranger: TcpStream = stranger.into();
    stranger
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut got = Vec::new();
    let _ = stranger.read_to_end(&mut got);
    assert!(got.is_empty(), "the stranger got {} bytes", got.len());
    // The client itself then gets the file.
    let mut data = TcpStream::connect(data_addr).unwrap();
    let mut bytes = Vec::new();
    data.read_to_end(&mut bytes).unwrap();
    assert_eq!(bytes, b"hello\n");
    assert_eq!(c.reply().code(), 226);
}

#[test]
fn an_overlong_line_gets_exactly_one_reply_and_a_close() {
    let root = root_with_files();
    let serve = Serve::start(root.path(), &[]);
    let mut c = Control::anonymous(serve.addr);
    let mut line = b"RETR ".to_vec();
    line.extend(std::iter::repeat_n(b'a', 10_000));
    line.extend(b"\r\nNOOP\r\n");
    c.send_bytes(&line);
    let reply = c.reply();
    assert_eq!(
        (reply.code(), reply.text().as_str()),
        (500, "Input line too long.")
    );
    assert!(c.is_closed(), "a second reply or no close");
    // A line of exactly the limit is still a command.
    let mut c = Control::anonymous(serve.addr);
    let mut line = b"SIZE ".to_vec();
    line.extend(std::iter::repeat_n(b'a', 4096 - 5));
    line.extend(b"\r\n");
    c.send_bytes(&line);
    assert_eq!(c.reply().code(), 550);
    assert_eq!(c.cmd("NOOP").code(), 200);
}

#[test]
fn sessions_are_capped_per_address_and_in_total() {
    let root = root_with_files();
    let serve = Serve::start(
        root.path(),
        &["--max-per-address", "2", "--max-sessions", "3"],
    );
    let a = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1));
    let b = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 3));
    let c = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 4));
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut s = Control::connect_raw_from(a, serve.addr);
        assert_eq!(s.reply().code(), 220);
        held.push(s);
    }
    let mut third = Control::connect_raw_from(a, serve.addr);
    let reply = third.reply();
    assert_eq!(reply.code(), 421);
    assert!(
        reply
            .text()
            .contains("too many connections from your internet address")
    );
    // Logged in, the sessions of b and a are never closed to make room.
    let mut logged = Control::connect_raw_from(b, serve.addr);
    assert_eq!(logged.reply().code(), 220);
    assert_eq!(logged.cmd("USER anonymous").code(), 331);
    assert_eq!(logged.cmd("PASS x@y").code(), 230);
    assert_eq!(held[1].cmd("USER anonymous").code(), 331);
    assert_eq!(held[1].cmd("PASS x@y").code(), 230);
    // Full: a newcomer takes the place of the one session that has not
    // logged in, the oldest.
    let mut newcomer = Control::connect_raw_from(c, serve.addr);
    assert_eq!(newcomer.reply().code(), 220);
    assert!(held[0].is_closed(), "the waiting session was not closed");
    assert_eq!(logged.cmd("NOOP").code(), 200);
    assert_eq!(held[1].cmd("NOOP").code(), 200);
    // Full, and all logged in: no room to make.
    assert_eq!(newcomer.cmd("USER anonymous").code(), 331);
    assert_eq!(newcomer.cmd("PASS x@y").code(), 230);
    let mut over = Control::connect_raw_from(c, serve.addr);
    assert_eq!(over.reply().code(), 421);
    // A closed session frees its place.
    drop(logged);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut again = Control::connect_raw_from(c, serve.addr);
        match again.reply().code() {
            220 => break,
            421 if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            code => panic!("reply {code} after a session closed"),
        }
    }
}

#[test]
fn slow_clients_that_never_log_in_do_not_keep_others_out() {
    let root = root_with_files();
    let serve = Serve::start(
        root.path(),
        &[
            "--max-sessions",
            "40",
            "--max-prelogin-per-address",
            "8",
            "--login-timeout",
            "60s",
        ],
    );
    // Slowloris: from one address, a byte now and then and never a login.
    let slow = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
    let mut held = Vec::new();
    for _ in 0..8 {
        let mut s = Control::connect_raw_from(slow, serve.addr);
        assert_eq!(s.reply().code(), 220);
        s.send_bytes(b"U");
        held.push(s);
    }
    let mut ninth = Control::connect_raw_from(slow, serve.addr);
    let reply = ninth.reply();
    assert_eq!(reply.code(), 421, "{reply:?}");
    assert!(
        reply.text().contains("that have not logged in"),
        "{reply:?}"
    );
    // From 32 more addresses, filling the server.
    for host in 10..42u8 {
        let mut s =
            Control::connect_raw_from(IpAddr::V4(Ipv4Addr::new(127, 0, 0, host)), serve.addr);
        assert_eq!(s.reply().code(), 220);
        s.send_bytes(b"U");
        held.push(s);
    }
    // A client that logs in still gets in, and downloads, within the
    // login timeout the slow ones hold their places for.
    let started = Instant::now();
    let mut client = Control::anonymous(serve.addr);
    let (bytes, done) = client.retr("pub/hello.txt");
    assert_eq!(done.code(), 226);
    assert_eq!(bytes, b"hello\n");
    assert!(started.elapsed() < Duration::from_secs(10));
    // The session that waited longest made room.
    assert!(
        held[0].is_closed(),
        "the oldest waiting session is still open"
    );
}

#[test]
fn login_idle_and_data_timeouts() {
    let root = root_with_files();
    let serve = Serve::start(
        root.path(),
        &[
            "--login-timeout",
            "1s",
            "--idle-timeout",
            "2s",
            "--data-connect-timeout",
            "1s",
        ],
    );
    let mut silent = Control::connect(serve.addr);
    assert_eq!(silent.reply().code(), 421);
    assert!(silent.is_closed());

    let mut c = Control::anonymous(serve.addr);
    // The data connection never comes: 425 after the data timeout.
    let _ = c.epsv();
    assert_eq!(c.cmd("RETR pub/hello.txt").code(), 150);
    assert_eq!(c.reply().code(), 425);
    // Then silence past the idle timeout.
    assert_eq!(c.reply().code(), 421);
    assert!(c.is_closed());
}

#[test]
fn failed_logins_are_delayed_and_limited() {
    let root = root_with_files();
    let serve = Serve::start(root.path(), &["--no-anonymous"]);
    let mut c = Control::connect(serve.addr);
    for attempt in 1..=3 {
        let user = c.cmd("USER anonymous");
        assert_eq!(user.code(), 331);
        let started = Instant::now();
        assert_eq!(c.cmd("PASS x").code(), 530, "attempt {attempt}");
        assert!(
            started.elapsed() >= Duration::from_millis(900),
            "no delay after a failed login"
        );
    }
    assert!(c.is_closed(), "still open after three failed logins");
}

#[test]
fn anonymous_is_read_only_but_may_use_the_benchmark_sink() {
    let root = root_with_files();
    let serve = Serve::start(root.path(), &[]);
    let mut c = Control::anonymous(serve.addr);
    for line in [
        "STOR pub/x",
        "APPE pub/hello.txt",
        "DELE pub/hello.txt",
        "MKD new",
        "RMD pub",
        "RNFR pub/hello.txt",
    ] {
        assert_eq!(c.cmd(line).code(), 550, "{line}");
    }
    let data_addr = c.epsv();
    let mut data = TcpStream::connect(data_addr).unwrap();
    assert_eq!(c.cmd("STOR /.rightsize/null/x").code(), 150);
    data.write_all(&vec![7u8; 1 << 20]).unwrap();
    drop(data);
    assert_eq!(c.reply().code(), 226);
    assert!(!root.path().join(".rightsize").exists());
}

#[test]
fn commands_out_of_order_and_garbage_get_their_codes_one_reply_per_line() {
    let root = root_with_files();
    let mut serve = Serve::start(root.path(), &[]);
    let mut c = Control::connect(serve.addr);
    assert_eq!(c.cmd("RETR pub/hello.txt").code(), 530);
    assert_eq!(c.cmd("PASS x").code(), 503);
    assert_eq!(c.cmd("USER anonymous").code(), 331);
    assert_eq!(c.cmd("PASS x").code(), 230);
    assert_eq!(c.cmd("RETR pub/hello.txt").code(), 425);
    assert_eq!(c.cmd("RNTO b").code(), 550);
    assert_eq!(c.cmd("XYZZY").code(), 502);
    assert_eq!(c.cmd("TYPE Q").code(), 501);
    assert_eq!(c.cmd("TYPE E").code(), 504);
    assert_eq!(c.cmd("SBUF").code(), 501);
    let sbuf = c.cmd("SBUF lots").code();
    assert!(sbuf == 501 || sbuf == 502, "SBUF lots: {sbuf}");
    assert_eq!(c.cmd("SBUF 4194304").code(), 200);
    // Eight lines in one write, binary garbage among them: eight replies.
    c.send_bytes(b"NOOP\r\n\x01\x02\x03\r\n\xff\xfe\xfd\r\nSIZE\r\nPWD\r\n\x80\x81garbage\r\nSTAT\r\nNOOP\r\n");
    let codes: Vec<u16> = (0..8).map(|_| c.reply().code()).collect();
    assert_eq!(codes[0], 200);
    assert_eq!(codes[4], 257);
    assert_eq!(codes[7], 200);
    assert_eq!(c.cmd("QUIT").code(), 221);
    assert!(c.is_closed());
    assert!(serve.is_running());
    // A client that vanishes mid-transfer does not take the server down.
    let mut c = Control::anonymous(serve.addr);
    let data_addr = c.epsv();
    let data = TcpStream::connect(data_addr).unwrap();
    assert_eq!(c.cmd("RETR /.rightsize/zero/10G").code(), 150);
    drop(data);
    drop(c);
    std::thread::sleep(Duration::from_millis(200));
    assert!(serve.is_running());
    let mut c = Control::anonymous(serve.addr);
    assert_eq!(c.cmd("NOOP").code(), 200);
}

#[test]
fn a_password_file_others_can_read_is_refused_at_start() {
    use std::os::unix::fs::PermissionsExt as _;
    let root = root_with_files();
    let users = root.path().join("users");
    add_user(&users, "alice", "pw-for-alice", false);
    for mode in [0o644, 0o640, 0o604, 0o660] {
        std::fs::set_permissions(&users, std::fs::Permissions::from_mode(mode)).unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_rightsize"))
            .args(["serve", "--listen", "127.0.0.1:0", "--root"])
            .arg(root.path())
            .arg("--users")
            .arg(&users)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "mode {mode:o} accepted");
        assert!(
            stderr.contains(&format!("has mode {mode:04o}")) && stderr.contains("chmod 600"),
            "{stderr}"
        );
    }
    // Written by `rightsize passwd` (0600): taken, and alice logs in.
    std::fs::set_permissions(&users, std::fs::Permissions::from_mode(0o600)).unwrap();
    let serve = Serve::start(root.path(), &["--users", users.to_str().unwrap()]);
    let mut c = Control::connect(serve.addr);
    assert_eq!(c.cmd("USER alice").code(), 331);
    assert_eq!(c.cmd("PASS pw-for-alice").code(), 230);
}

#[test]
fn the_login_timeout_is_a_deadline_that_noops_do_not_push_back() {
    let root = root_with_files();
    let serve = Serve::start(root.path(), &["--login-timeout", "2s"]);
    let mut c = Control::connect(serve.addr);
    let started = Instant::now();
    let mut last = String::new();
    while started.elapsed() < Duration::from_secs(8) {
        c.send("NOOP");
        match c.try_reply() {
            Some(reply) => {
                last = reply.to_string();
                if reply.code() == 421 {
                    break;
                }
            }
            None => break,
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    let took = started.elapsed();
    assert!(
        last.starts_with("421"),
        "last reply {last:?} after {took:?}"
    );
    assert!(
        took < Duration::from_millis(4500),
        "a NOOP every 0.3 s held an unauthenticated session for {took:?}"
    );
}

#[test]
fn a_client_that_never_reads_its_replies_loses_its_session() {
    let root = root_with_files();
    let serve = Serve::start(root.path(), &["--login-timeout", "2s"]);
    // A small receive buffer, and replies never read: the server's writes
    // fill it and its own send buffer, then wait.
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    socket.connect(&serve.addr.into()).unwrap();
    let mut stream: TcpStream = socket.into();
    stream
        .set_write_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let started = Instant::now();
    // HELP before login: about 400 bytes of reply for 6 bytes sent. The
    // server gives up on a reply that waits its login timeout (2 s) and
    // closes: a write of ours then finds the connection reset.
    let closed = loop {
        if started.elapsed() > Duration::from_secs(12) {
            break false;
        }
        match stream.write_all(&b"HELP\r\n".repeat(100)) {
            Ok(()) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => break true,
        }
    };
    assert!(
        closed,
        "a client that never read kept its session for {:?}",
        started.elapsed()
    );
    // The server goes on serving.
    let mut fresh = Control::connect(serve.addr);
    assert_eq!(fresh.cmd("NOOP").code(), 200);
}

#[test]
fn with_no_descriptor_left_a_connection_hears_421_not_silence() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let root = root_with_files();
    // 40 descriptors: about a dozen sessions.
    let mut child = Command::new("prlimit")
        .arg("--nofile=40:40")
        .arg(env!("CARGO_BIN_EXE_rightsize"))
        .args(["serve", "-q", "--listen", "127.0.0.1:0", "--root"])
        .arg(root.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("prlimit (util-linux): {e}"));
    let mut banner = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut banner)
        .unwrap();
    let addr: SocketAddr = banner
        .split("ftp://")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("no address in {banner:?}"));
    let mut held = Vec::new();
    let (mut greeted, mut refused) = (0, 0);
    for i in 0..40 {
        let mut c = Control::connect_raw(addr);
        let reply = c
            .try_reply()
            .unwrap_or_else(|| panic!("connection {i}: closed with no reply"));
        match reply.code() {
            220 => greeted += 1,
            421 => refused += 1,
            code => panic!("connection {i}: {code}"),
        }
        held.push(c);
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        greeted > 0 && refused > 0,
        "{greeted} greeted, {refused} refused"
    );
}

#[test]
fn strangers_that_connect_first_do_not_keep_the_client_out() {
    let root = root_with_files();
    let serve = Serve::start(root.path(), &[]);
    let mut c = Control::anonymous(serve.addr);
    let data_addr = c.epsv();
    // Two connections from another local address, right after EPSV and
    // before the client's own (ftplib connects before it sends RETR).
    let strangers: Vec<TcpStream> = (0..2)
        .map(|_| {
            let s =
                socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
            s.bind(&SocketAddr::new(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)), 0).into())
                .unwrap();
            s.connect(&data_addr.into()).unwrap();
            s.into()
        })
        .collect();
    let started = Instant::now();
    let mut data = TcpStream::connect(data_addr).unwrap();
    c.send("RETR pub/hello.txt");
    assert_eq!(c.reply().code(), 150);
    data.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut bytes = Vec::new();
    data.read_to_end(&mut bytes).unwrap();
    assert_eq!(bytes, b"hello\n");
    assert_eq!(c.reply().code(), 226);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    drop(strangers);
}

#[test]
fn the_data_idle_timeout_holds_for_a_download_the_client_never_reads() {
    let root = root_with_files();
    let serve = Serve::start(root.path(), &["--data-idle-timeout", "2s"]);
    let mut c = Control::anonymous(serve.addr);
    let data_addr = c.epsv();
    // Connected, and never read: the kernel's buffers fill, then nothing
    // moves.
    let data = TcpStream::connect(data_addr).unwrap();
    assert_eq!(c.cmd("RETR /.rightsize/zero/1G").code(), 150);
    let started = Instant::now();
    let end = c.reply();
    let waited = started.elapsed();
    assert_eq!(end.code(), 426, "{end:?}");
    assert!(end.text().contains("idle timeout"), "{end:?}");
    // Filling the buffers takes a moment; then 2 s (a send timeout alone
    // ended it after three of them).
    assert!(
        waited >= Duration::from_millis(1500) && waited < Duration::from_millis(4500),
        "the 2 s data idle timeout ended the transfer after {waited:?}"
    );
    assert_eq!(c.cmd("NOOP").code(), 200);
    drop(data);
}

#[test]
fn serve_user_goes_on_as_that_user_and_uploads_belong_to_it() {
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
    let nobody = rightsize_sys::privileges::lookup("nobody").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("up")).unwrap();
    for (path, mode) in [
        (dir.path(), 0o755),
        (&root, 0o755),
        (&root.join("up"), 0o777),
    ] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    let users = dir.path().join("users");
    add_user(&users, "alice", "pw-for-alice", false);
    let extra = ["--users", users.to_str().unwrap(), "--user", "nobody"];
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        // Only root may become another user: refused, saying so.
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_rightsize"))
            .args(["serve", "--listen", "127.0.0.1:0", "--root"])
            .arg(&root)
            .args(extra)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && stderr.contains("setgroups"),
            "{stderr}"
        );
        return;
    }
    let serve = Serve::start(&root, &extra);
    // Every id of the process is nobody's, and it has no other group.
    let status = std::fs::read_to_string(format!("/proc/{}/status", serve.pid())).unwrap();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    assert_eq!(field("Uid:"), vec![nobody.uid.to_string(); 4], "{status}");
    assert_eq!(field("Gid:"), vec![nobody.gid.to_string(); 4], "{status}");
    assert_eq!(field("Groups:"), vec![nobody.gid.to_string()], "{status}");
    // An upload belongs to nobody, not to root.
    let mut c = Control::login(serve.addr, "alice", "pw-for-alice");
    assert_eq!(c.store("STOR up/mine.txt", b"mine\n").code(), 226);
    let meta = std::fs::metadata(root.join("up/mine.txt")).unwrap();
    assert_eq!((meta.uid(), meta.gid()), (nobody.uid, nobody.gid));
    // Where nobody may not write, neither may the server.
    assert_eq!(c.store("STOR mine.txt", b"mine\n").code(), 550);
}

/// A tmpfs of `size` mounted on `dir`, unmounted on drop.
struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    fn mount(dir: &std::path::Path, size: &str) -> Tmpfs {
        // SAFETY: geteuid has no preconditions.
        assert_eq!(
            unsafe { libc::geteuid() },
            0,
            "mounting a tmpfs needs root, as the suite runs"
        );
        let done = std::process::Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0777"),
                "rightsize-test",
            ])
            .arg(dir)
            .status()
            .unwrap();
        assert!(done.success(), "mount -t tmpfs on {}", dir.display());
        Tmpfs(dir.to_owned())
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_during_an_upload_is_a_452_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("up")).unwrap();
    let _disk = Tmpfs::mount(&root.join("up"), "1m");
    let users = dir.path().join("users");
    add_user(&users, "alice", "pw-for-alice", false);
    let serve = Serve::start(&root, &["--users", users.to_str().unwrap()]);
    let mut c = Control::login(serve.addr, "alice", "pw-for-alice");
    let data_addr = c.epsv();
    let mut data = TcpStream::connect(data_addr).unwrap();
    assert_eq!(c.cmd("STOR up/big.bin").code(), 150);
    // 4 MiB into 1 MiB: the server stops reading when the disk is full.
    let _ = data.write_all(&vec![7u8; 4 << 20]);
    drop(data);
    let reply = c.reply();
    assert_eq!(reply.code(), 452, "{reply:?}");
    assert!(
        reply.text().contains("Insufficient storage space"),
        "{reply:?}"
    );
    let left: Vec<_> = std::fs::read_dir(root.join("up")).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
    // The space is free again: a small upload goes through.
    assert_eq!(c.store("STOR up/small.bin", &[1u8; 10_000]).code(), 226);
    assert_eq!(
        std::fs::read(root.join("up/small.bin")).unwrap(),
        vec![1u8; 10_000]
    );
}

#[test]
fn a_long_checksum_leaves_the_session_answering_and_abor_stops_it() {
    let root = root_with_files();
    // A sparse 64 GiB file: a minute of SHA-256 on this kind of host.
    let big = std::fs::File::create(root.path().join("pub/big")).unwrap();
    big.set_len(64 << 30).unwrap();
    drop(big);
    let serve = Serve::start(root.path(), &[]);
    let mut c = Control::anonymous(serve.addr);
    c.stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    c.send("CKSM SHA256 0 -1 /pub/big");
    std::thread::sleep(Duration::from_millis(200));
    // Answered while the checksum runs (before: after it, a minute later).
    let stat = c.cmd("STAT");
    assert_eq!(stat.code(), 213, "{stat:?}");
    assert!(stat.text().contains("Checksum in progress"), "{stat:?}");
    assert_eq!(c.cmd("NOOP").code(), 200);
    let asked = Instant::now();
    c.send("ABOR");
    let aborted = c.reply();
    assert_eq!(aborted.code(), 426, "{aborted:?}");
    assert_eq!(c.reply().code(), 226);
    assert!(
        asked.elapsed() < Duration::from_secs(2),
        "ABOR stopped the checksum after {:?}",
        asked.elapsed()
    );
    // The session goes on: md5("hello\n").
    let small = c.cmd("CKSM MD5 0 -1 /pub/hello.txt");
    assert_eq!(small.code(), 213, "{small:?}");
    assert_eq!(small.text().trim(), "b1946ac92492d2347c6235b4d2611184");
    // A checksum of what is not a file is refused at once.
    assert_eq!(c.cmd("CKSM MD5 0 -1 /pub").code(), 550);
}

#[test]
fn serve_chroot_makes_the_served_root_the_process_root() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("up")).unwrap();
    std::fs::write(root.join("hello.txt"), b"hello\n").unwrap();
    for (path, mode) in [
        (dir.path(), 0o755),
        (&root, 0o755),
        (&root.join("up"), 0o777),
    ] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    let users = dir.path().join("users");
    add_user(&users, "alice", "pw-for-alice", false);
    // Without --user, refused: root can leave a chroot.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rightsize"))
        .args(["serve", "--listen", "127.0.0.1:0", "--chroot", "--root"])
        .arg(&root)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.code() == Some(2) && stderr.contains("--user"),
        "{stderr}"
    );
    let extra = [
        "--users",
        users.to_str().unwrap(),
        "--user",
        "nobody",
        "--chroot",
    ];
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_rightsize"))
            .args(["serve", "--listen", "127.0.0.1:0", "--root"])
            .arg(&root)
            .args(extra)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && stderr.contains("chroot"),
            "{stderr}"
        );
        return;
    }
    let serve = Serve::start(&root, &extra);
    // The process's root is the served root.
    let seen = std::fs::read_link(format!("/proc/{}/root", serve.pid())).unwrap();
    assert_eq!(seen, root.canonicalize().unwrap());
    // It still serves, both ways.
    let mut c = Control::login(serve.addr, "alice", "pw-for-alice");
    let (bytes, end) = c.retr("/hello.txt");
    assert_eq!((bytes.as_slice(), end.code()), (&b"hello\n"[..], 226));
    assert_eq!(c.store("STOR up/mine.txt", b"mine\n").code(), 226);
    assert_eq!(std::fs::read(root.join("up/mine.txt")).unwrap(), b"mine\n");
    let data_addr = c.epsv();
    let mut data = TcpStream::connect(data_addr).unwrap();
    assert_eq!(c.cmd("LIST /").code(), 150);
    let mut listed = String::new();
    data.read_to_string(&mut listed).unwrap();
    assert_eq!(c.reply().code(), 226);
    assert!(listed.contains("hello.txt"), "{listed}");
}

#[test]
fn serve_config_sets_every_flag_and_the_command_line_wins() {
    let root = root_with_files();
    let dir = tempfile::tempdir().unwrap();
    let users = dir.path().join("users");
    add_user(&users, "alice", "pw-for-alice", false);
    let config = dir.path().join("serve.toml");
    std::fs::write(
        &config,
        format!(
            "# the server's settings\nroot = \"/nonexistent\"\nusers = {:?}\nno-anonymous = true\nmax_sessions = 10\nlogin-timeout = \"30s\"\n",
            users.to_str().unwrap()
        ),
    )
    .unwrap();
    // Serve::start adds --root ROOT on the command line: it wins over the
    // file's.
    let serve = Serve::start(root.path(), &["--config", config.to_str().unwrap()]);
    // From the file: no anonymous login, the users file.
    let mut c = Control::connect(serve.addr);
    assert_eq!(c.cmd("USER anonymous").code(), 331);
    assert_eq!(c.cmd("PASS x@").code(), 530);
    let mut c = Control::login(serve.addr, "alice", "pw-for-alice");
    let (bytes, end) = c.retr("/pub/hello.txt");
    assert_eq!((bytes.as_slice(), end.code()), (&b"hello\n"[..], 226));
    // A setting serve does not have: exit 2, quoting it and the file.
    std::fs::write(&config, "max-sesions = 10\n").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rightsize"))
        .args(["serve", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(
        said.contains("unknown setting \"max-sesions\"")
            && said.contains("max-sessions")
            && said.contains("serve.toml"),
        "{said}"
    );
}
