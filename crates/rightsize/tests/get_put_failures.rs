//! How `rightsize get`/`put` fail: bad input (exit 2), an unreachable
//! server, servers that stall, cut a transfer short, fail after sending
//! data, send a wrong checksum or MODE E blocks that break GFD.20 (a
//! scripted server on 127.0.0.1), a full disk (a 1 MiB tmpfs; needs root,
//! as CI runs), and `SIGINT`. Each
//! must end with one line on stderr (and one more that says what the part
//! file kept), a non-zero exit, within the timeout, and nothing new under
//! the requested name; `get -C` then resumes from what was kept.

#![allow(clippy::unwrap_used)]

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use rightsize_ftp_proto::checksum::{Algorithm, Checksum};
use support::*;

const PAYLOAD_BYTES: usize = 1 << 20;

/// What the scripted server does wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Trouble {
    /// Accepts the connection and never greets.
    Silent,
    /// Sends half the file, then nothing, keeping both connections open.
    Stall,
    /// `SIZE` says twice what `RETR` sends, then `226`.
    Short,
    /// Sends half the file, closes, then `451`.
    FailAfterData,
    /// Offers `CKSM MD5`, sends the file, answers a wrong sum.
    WrongChecksum,
    /// Nothing: takes `REST`, sends the file from there, answers the right
    /// MD5.
    Fine,
    /// As `Fine`, but refuses `REST`.
    NoRest,
    /// As `Fine`, slowly: 64 KiB every 100 ms.
    Slow,
    /// Takes MODE E; its blocks break GFD.20 as the case says.
    Blocks(BadBlocks),
}

/// How a scripted MODE E sender's blocks go wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BadBlocks {
    /// One whole block, then a block cut in its middle, and the close.
    CutMidBlock,
    /// A block over bytes another one brought.
    Overlap,
    /// A block past the end `SIZE` gave.
    PastTheEnd,
    /// An EOF that counts one connection, and EODs on two.
    MoreConnections,
}

/// A MODE E block header: descriptor, count, offset.
fn header(descriptor: u8, count: u64, offset: u64) -> Vec<u8> {
    let mut h = vec![descriptor];
    h.extend_from_slice(&count.to_be_bytes());
    h.extend_from_slice(&offset.to_be_bytes());
    h
}

/// What a scripted MODE E sender writes on its data connections.
fn send_blocks(how: BadBlocks, to: std::net::SocketAddr, payload: &[u8]) -> std::io::Result<()> {
    const BLOCK: usize = 256 * 1024;
    let mut data = TcpStream::connect(to)?;
    let block = |offset: usize, len: usize| {
        let mut b = header(0, len as u64, offset as u64);
        b.extend_from_slice(&payload[offset..offset + len]);
        b
    };
    match how {
        BadBlocks::CutMidBlock => {
            data.write_all(&block(0, BLOCK))?;
            data.write_all(&header(0, BLOCK as u64, BLOCK as u64))?;
            data.write_all(&payload[BLOCK..BLOCK + BLOCK / 2])?;
        }
        BadBlocks::Overlap => {
            data.write_all(&block(0, 1000))?;
            data.write_all(&block(500, 1000))?;
        }
        BadBlocks::PastTheEnd => {
            let mut b = header(0, 1000, payload.len() as u64);
            b.extend_from_slice(&payload[..1000]);
            data.write_all(&b)?;
        }
        BadBlocks::MoreConnections => {
            data.write_all(&block(0, BLOCK))?;
            data.write_all(&header(64 | 8, 0, 1))?;
            let mut second = TcpStream::connect(to)?;
            second.write_all(&header(8, 0, 0))?;
            std::thread::sleep(Duration::from_millis(500));
        }
    }
    std::thread::sleep(Duration::from_millis(200));
    Ok(())
}

/// Starts a one-connection scripted server; returns its port.
fn scripted(trouble: Trouble) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        if let Ok((control, _)) = listener.accept() {
            let _ = serve(control, trouble);
        }
    });
    port
}

fn serve(mut control: TcpStream, trouble: Trouble) -> std::io::Result<()> {
    control.set_read_timeout(Some(Duration::from_secs(30)))?;
    if trouble == Trouble::Silent {
        // Until the client gives up and closes.
        let _ = control.read(&mut [0u8; 64])?;
        return Ok(());
    }
    let payload = random_bytes(PAYLOAD_BYTES, 99);
    let mut lines = BufReader::new(control.try_clone()?);
    let mut send = |text: &str| control.write_all(format!("{text}\r\n").as_bytes());
    send("220 scripted server ready")?;
    let mut passive: Option<TcpListener> = None;
    let mut active: Option<std::net::SocketAddr> = None;
    let mut offset: usize = 0;
    loop {
        let mut line = String::new();
        if lines.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let verb = line
            .split_whitespace()
            .next()
            .unwrap_or("")
            .to_ascii_uppercase();
        match verb.as_str() {
            "USER" => send("331 Send the password.")?,
            "PASS" => send("230 Logged in.")?,
            "FEAT" if matches!(trouble, Trouble::WrongChecksum | Trouble::Fine) => {
                send("211-Features:\r\n CKSM MD5\r\n SIZE\r\n211 End")?
            }
            "FEAT" => send("211-Features:\r\n SIZE\r\n211 End")?,
            "TYPE" => send("200 Binary.")?,
            "MODE" if matches!(trouble, Trouble::Blocks(_)) => send("200 Mode set to E.")?,
            "OPTS" if matches!(trouble, Trouble::Blocks(_)) => send("200 OPTS ok.")?,
            "PORT" => {
                let numbers: Vec<u16> = line
                    .split_whitespace()
                    .nth(1)
                    .unwrap_or("")
                    .split(',')
                    .filter_map(|n| n.trim().parse().ok())
                    .collect();
                if let [a, b, c, d, p1, p2] = numbers[..] {
                    let ip = std::net::Ipv4Addr::new(a as u8, b as u8, c as u8, d as u8);
                    active = Some((ip, p1 * 256 + p2).into());
                    send("200 PORT ok.")?;
                } else {
                    send("501 Bad PORT.")?;
                }
            }
            "RETR" if matches!(trouble, Trouble::Blocks(_)) => {
                let (Trouble::Blocks(how), Some(to)) = (trouble, active) else {
                    send("425 Use PORT first.")?;
                    continue;
                };
                send("150 Blocks coming.")?;
                send_blocks(how, to, &payload)?;
                send("451 Transfer aborted.")?;
            }
            "REST" if trouble != Trouble::NoRest => {
                offset = line
                    .split_whitespace()
                    .nth(1)
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0);
                send(&format!("350 Restarting at {offset}."))?
            }
            "SIZE" if trouble == Trouble::Short => send(&format!("213 {}", 2 * PAYLOAD_BYTES))?,
            "SIZE" => send(&format!("213 {PAYLOAD_BYTES}"))?,
            "EPSV" => {
                let listener = TcpListener::bind("127.0.0.1:0")?;
                let port = listener.local_addr()?.port();
                passive = Some(listener);
                send(&format!("229 Entering Extended Passive Mode (|||{port}|)"))?;
            }
            "RETR" => {
                let Some(listener) = passive.take() else {
                    send("425 Use EPSV first.")?;
                    continue;
                };
                send("150 Here it comes.")?;
                let (mut data, _) = listener.accept()?;
                match trouble {
                    Trouble::Stall => {
                        data.write_all(&payload[..PAYLOAD_BYTES / 2])?;
                        // Hold both connections until the client closes.
                        let _ = lines.read_line(&mut String::new());
                        return Ok(());
                    }
                    Trouble::FailAfterData => {
                        data.write_all(&payload[..PAYLOAD_BYTES / 2])?;
                        drop(data);
                        send("451 Local error in processing.")?;
                    }
                    Trouble::Slow => {
                        for piece in payload[offset..].chunks(64 << 10) {
                            data.write_all(piece)?;
                            std::thread::sleep(Duration::from_millis(100));
                        }
                        drop(data);
                        send("226 Transfer complete.")?;
                    }
                    _ => {
                        data.write_all(&payload[offset.min(PAYLOAD_BYTES)..])?;
                        drop(data);
                        send("226 Transfer complete.")?;
                    }
                }
            }
            "CKSM" if trouble == Trouble::Fine => send(&format!("213 {}", md5_hex(&payload)))?,
            "CKSM" => send("213 0123456789abcdef0123456789abcdef")?,
            "QUIT" => {
                send("221 Bye.")?;
                return Ok(());
            }
            _ => send("502 Not implemented.")?,
        }
    }
}

/// An output directory holding `f.bin` with known old content.
fn out_dir_with_old_file() -> (tempfile::TempDir, PathBuf) {
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("f.bin");
    std::fs::write(&target, b"old content").unwrap();
    (out, target)
}

/// Nothing but the old `f.bin`, unchanged, is in `dir`.
fn assert_untouched(dir: &Path, target: &Path) {
    assert_eq!(names_in(dir), ["f.bin"], "a temporary file was left");
    assert_eq!(std::fs::read(target).unwrap(), b"old content");
}

fn get_from(port: u16, target: &Path, extra: &[&str]) -> (std::process::Output, Duration) {
    let url = format!("ftp://127.0.0.1:{port}/f.bin");
    let mut args = vec!["get", &url, "-o", target.to_str().unwrap()];
    args.extend_from_slice(extra);
    let started = Instant::now();
    let output = rightsize(&args);
    (output, started.elapsed())
}

/// The MD5 of `bytes`, lowercase hex.
fn md5_hex(bytes: &[u8]) -> String {
    let mut sum = Checksum::of(Algorithm::Md5);
    sum.update(bytes);
    sum.finish()
}

/// The error line, and the line that says what the part file kept.
fn error_and_kept(output: &std::process::Output, dir: &Path, kept: usize) -> String {
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let lines = stderr_lines(output);
    assert_eq!(lines.len(), 2, "{lines:?}");
    let part = dir.join(".f.bin.rightsize-part");
    assert!(
        lines[1].starts_with(&format!(
            "rightsize: kept {} bytes in {}; resume with: rightsize get -C ftp://127.0.0.1:",
            grouped(kept),
            part.display()
        )),
        "{lines:?}"
    );
    assert_eq!(std::fs::metadata(&part).unwrap().len(), kept as u64);
    lines[0].clone()
}

/// `n` with thousands separated by commas, as the summary prints bytes.
fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Resumes the download kept in `dir` from a server that behaves, and
/// checks the whole file arrived, verified, with no part file left.
fn resume_completes(dir: &Path, target: &Path, kept: usize) {
    let port = scripted(Trouble::Fine);
    let (output, _) = get_from(port, target, &["-C", "--verify", "--json"]);
    assert!(output.status.success(), "{output:?}");
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(summary["resumed_bytes"], kept as u64, "{summary}");
    assert_eq!(summary["bytes"], (PAYLOAD_BYTES - kept) as u64, "{summary}");
    assert_eq!(summary["checksum"]["verified"], true, "{summary}");
    assert_eq!(
        std::fs::read(target).unwrap(),
        random_bytes(PAYLOAD_BYTES, 99)
    );
    assert_eq!(names_in(dir), ["f.bin"]);
}

fn one_error_line(output: &std::process::Output) -> String {
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let lines = stderr_lines(output);
    assert_eq!(lines.len(), 1, "{lines:?}");
    lines[0].clone()
}

#[test]
fn a_bad_url_or_size_is_a_usage_error_on_one_line() {
    let output = rightsize(&["get", "http://x"]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr_lines(&output),
        [
            "error: invalid URL \"http://x\": only ftp:// and ftps:// URLs are accepted, like ftp://[user[:password]@]host[:port]/path"
        ]
    );
    let output = rightsize(&["put", "f", "ftp://bob:pw@h:99999/x"]);
    assert_eq!(output.status.code(), Some(2));
    let lines = stderr_lines(&output);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("port \"99999\""), "{lines:?}");
    assert!(!lines[0].contains(":pw@"), "the password leaked: {lines:?}");
    let output = rightsize(&["get", "ftp://h/f", "--rcvbuf", "12 parsecs"]);
    assert_eq!(output.status.code(), Some(2));
    let lines = stderr_lines(&output);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("\"12 parsecs\""), "{lines:?}");
    let output = rightsize(&["get", "ftp://127.0.0.1/dir/"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr_lines(&output)[0].contains("names no file"));
    // -P: 2 to 64 streams, to a file.
    let output = rightsize(&["get", "ftp://127.0.0.1:1/f", "-P", "4", "-o", "-"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr_lines(&output)[0].contains("-o - and -P"));
    for bad in [&["-P", "1"][..], &["-P", "65"], &["-P", "many"]] {
        let mut args = vec!["get", "ftp://127.0.0.1:1/f"];
        args.extend_from_slice(bad);
        let output = rightsize(&args);
        assert_eq!(output.status.code(), Some(2), "{bad:?}");
    }
}

#[test]
fn a_closed_port_fails_at_once_with_one_line() {
    let port = closed_port();
    let (out, target) = out_dir_with_old_file();
    let (output, elapsed) = get_from(port, &target, &[]);
    let line = one_error_line(&output);
    assert!(
        line == format!(
            "rightsize: connect to FTP server 127.0.0.1:{port}: connection refused by 127.0.0.1:{port} (nothing listens on that port)"
        ),
        "{line}"
    );
    assert!(elapsed < Duration::from_secs(5), "took {elapsed:?}");
    assert_untouched(out.path(), &target);
}

#[test]
fn a_server_that_never_greets_times_out() {
    let port = scripted(Trouble::Silent);
    let (out, target) = out_dir_with_old_file();
    let (output, elapsed) = get_from(port, &target, &["--timeout", "1s"]);
    let line = one_error_line(&output);
    assert_eq!(
        line,
        format!("rightsize: 127.0.0.1:{port} sent no reply to the greeting within 1s")
    );
    assert!(elapsed < Duration::from_secs(10), "took {elapsed:?}");
    assert_untouched(out.path(), &target);
}

#[test]
fn a_stalled_transfer_times_out_keeps_its_part_and_resumes() {
    let port = scripted(Trouble::Stall);
    let (out, target) = out_dir_with_old_file();
    let (output, elapsed) = get_from(port, &target, &["--timeout", "1s"]);
    let line = error_and_kept(&output, out.path(), PAYLOAD_BYTES / 2);
    assert!(
        line.contains("idle for 1s during RETR \"f.bin\" after 524288 bytes"),
        "{line}"
    );
    assert!(elapsed < Duration::from_secs(10), "took {elapsed:?}");
    assert_eq!(std::fs::read(&target).unwrap(), b"old content");
    resume_completes(out.path(), &target, PAYLOAD_BYTES / 2);
}

#[test]
fn sigint_keeps_the_part_and_says_how_to_resume() {
    let port = scripted(Trouble::Slow);
    let (out, target) = out_dir_with_old_file();
    let url = format!("ftp://127.0.0.1:{port}/f.bin");
    let child = Command::new(env!("CARGO_BIN_EXE_rightsize"))
        .args(["get", &url, "-o", target.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let part = out.path().join(".f.bin.rightsize-part");
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::fs::metadata(&part).map_or(0, |m| m.len()) < 128 << 10 {
        assert!(Instant::now() < deadline, "no bytes arrived");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: a plain kill(2) of our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(130), "{output:?}");
    let lines = stderr_lines(&output);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0], "rightsize: interrupted by SIGINT");
    let kept = std::fs::metadata(&part).unwrap().len() as usize;
    assert!(kept > 0 && kept < PAYLOAD_BYTES, "{kept}");
    assert!(
        lines[1].contains(&format!(
            "kept {} bytes in {}",
            grouped(kept),
            part.display()
        )),
        "{lines:?}"
    );
    assert_eq!(std::fs::read(&target).unwrap(), b"old content");
    resume_completes(out.path(), &target, kept);
}

#[test]
fn a_server_that_refuses_rest_cannot_resume_and_the_part_stays() {
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("f.bin");
    let part = out.path().join(".f.bin.rightsize-part");
    std::fs::write(&part, &random_bytes(PAYLOAD_BYTES, 99)[..1000]).unwrap();
    let port = scripted(Trouble::NoRest);
    let (output, _) = get_from(port, &target, &["-C"]);
    let line = error_and_kept(&output, out.path(), 1000);
    assert_eq!(
        line,
        format!(
            "rightsize: 127.0.0.1:{port} cannot resume \"f.bin\" at byte 1000: REST answered \"502 Not implemented.\""
        )
    );
    assert!(!target.exists());
}

#[test]
fn a_part_longer_than_the_remote_file_is_downloaded_again() {
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("f.bin");
    let part = out.path().join(".f.bin.rightsize-part");
    std::fs::write(&part, vec![7u8; PAYLOAD_BYTES + 1]).unwrap();
    let port = scripted(Trouble::Fine);
    let (output, _) = get_from(port, &target, &["-C"]);
    assert!(output.status.success(), "{output:?}");
    let lines = stderr_lines(&output);
    assert!(
        lines
            .iter()
            .any(|l| l.contains("more than the remote file's 1048576: downloading it again")),
        "{lines:?}"
    );
    assert_eq!(
        std::fs::read(&target).unwrap(),
        random_bytes(PAYLOAD_BYTES, 99)
    );
    assert_eq!(names_in(out.path()), ["f.bin"]);
}

#[test]
fn fewer_bytes_than_size_said_is_an_error() {
    let port = scripted(Trouble::Short);
    let (out, target) = out_dir_with_old_file();
    let (output, _) = get_from(port, &target, &[]);
    let line = error_and_kept(&output, out.path(), PAYLOAD_BYTES);
    assert!(
        line.ends_with("RETR \"f.bin\" ended after 1048576 bytes, but SIZE said 2097152"),
        "{line}"
    );
    assert_eq!(std::fs::read(&target).unwrap(), b"old content");
}

#[test]
fn a_failure_reply_after_the_data_keeps_the_old_file() {
    let port = scripted(Trouble::FailAfterData);
    let (out, target) = out_dir_with_old_file();
    let (output, _) = get_from(port, &target, &[]);
    let line = error_and_kept(&output, out.path(), PAYLOAD_BYTES / 2);
    assert_eq!(
        line,
        format!(
            "rightsize: 127.0.0.1:{port}: RETR \"f.bin\" failed: 451 Local error in processing."
        )
    );
    assert_eq!(std::fs::read(&target).unwrap(), b"old content");
    resume_completes(out.path(), &target, PAYLOAD_BYTES / 2);
}

#[test]
fn a_checksum_mismatch_keeps_the_download_from_its_name() {
    let port = scripted(Trouble::WrongChecksum);
    let (out, target) = out_dir_with_old_file();
    let (output, _) = get_from(port, &target, &["--verify"]);
    let line = one_error_line(&output);
    assert!(
        line.contains("checksum mismatch for \"f.bin\": MD5 here ")
            && line.ends_with("0123456789abcdef0123456789abcdef"),
        "{line}"
    );
    assert_untouched(out.path(), &target);
}

#[test]
fn uploading_a_missing_local_file_names_it() {
    let output = rightsize(&["put", "/nonexistent/f.bin", "ftp://127.0.0.1:1/f.bin"]);
    let line = one_error_line(&output);
    assert_eq!(
        line,
        "rightsize: open /nonexistent/f.bin: No such file or directory (os error 2)"
    );
}

/// A small tmpfs, unmounted on drop.
struct Tmpfs(tempfile::TempDir);

impl Tmpfs {
    fn new(size: &str) -> Tmpfs {
        let dir = tempfile::tempdir().unwrap();
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .status()
            .unwrap();
        assert!(
            status.success(),
            "mounting a tmpfs for the full-disk test needs root (CI runs as root): {status}"
        );
        Tmpfs(dir)
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(self.0.path()).status();
    }
}

#[test]
fn a_full_disk_keeps_what_fitted_and_nothing_under_the_name() {
    let server = pyftpdlib();
    let data = random_bytes(4 << 20, 11);
    write_public(&files_dir(&server).join("f.bin"), &data);
    let disk = Tmpfs::new("1m");
    let target = disk.0.path().join("f.bin");
    let output = rightsize(&["get", &server.url("/f.bin"), "-o", target.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let lines = stderr_lines(&output);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines[0].starts_with(&format!(
            "rightsize: write {}/.f.bin.rightsize-part:",
            disk.0.path().display()
        )) && lines[0].ends_with("No space left on device (os error 28)"),
        "{lines:?}"
    );
    // What fitted is kept for a resume once there is room; nothing is
    // under the name.
    assert!(
        lines[1].contains("resume with: rightsize get -C"),
        "{lines:?}"
    );
    assert_eq!(names_in(disk.0.path()), [".f.bin.rightsize-part"]);
}

#[test]
fn blocks_that_break_mode_e_fail_clearly_and_keep_what_arrived_with_its_ranges() {
    let cases = [
        // The half block that came is kept too: its bytes are good.
        (
            BadBlocks::CutMidBlock,
            &["ended after"][..],
            Some("0-393216"),
        ),
        (BadBlocks::Overlap, &["overlap"], Some("0-1000")),
        (BadBlocks::PastTheEnd, &["past"], None),
        // Whichever comes first: the EOD too many, or the end the EOF
        // announced with bytes still missing.
        (
            BadBlocks::MoreConnections,
            &["EOD", "bytes missing"],
            Some("0-262144"),
        ),
    ];
    for (how, says, ranges) in cases {
        let (dir, target) = out_dir_with_old_file();
        let port = scripted(Trouble::Blocks(how));
        let (output, _) = get_from(port, &target, &["-P", "2"]);
        assert_eq!(output.status.code(), Some(1), "{how:?}: {output:?}");
        let lines = stderr_lines(&output);
        assert!(
            lines[0].contains("over parallel streams failed")
                && says.iter().any(|s| lines[0].contains(s)),
            "{how:?}: {lines:?}"
        );
        assert_eq!(std::fs::read(&target).unwrap(), b"old content", "{how:?}");
        let ranges_file = dir.path().join(".f.bin.rightsize-part.ranges");
        match ranges {
            Some(expected) => {
                assert_eq!(
                    std::fs::read_to_string(&ranges_file).unwrap().trim(),
                    expected,
                    "{how:?}"
                );
                assert!(
                    lines[1].contains("resume with: rightsize get -C -P 2 ftp://"),
                    "{how:?}: {lines:?}"
                );
            }
            None => {
                assert_eq!(lines.len(), 1, "{how:?}: {lines:?}");
                assert_eq!(names_in(dir.path()), ["f.bin"], "{how:?}");
            }
        }
    }
}

#[test]
fn json_says_a_failure_as_an_error_object() {
    let port = closed_port();
    let (out, target) = out_dir_with_old_file();
    let (output, _) = get_from(port, &target, &["--json"]);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let json: serde_json::Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("--json printed no JSON on failure: {e}: {output:?}"));
    assert_eq!(json["error"]["kind"], "connect", "{json}");
    let message = json["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("connection refused"), "{json}");
    // Standard error says the same.
    assert!(one_error_line(&output).ends_with(message), "{output:?}");
    assert_eq!(json["direction"], "get", "{json}");
    assert_untouched(out.path(), &target);
}

#[test]
fn a_tree_transfer_says_its_failure_as_an_error_object_too() {
    let port = closed_port();
    let dir = tempfile::tempdir().unwrap();
    let url = format!("ftp://127.0.0.1:{port}/dir/");
    let out = dir.path().join("tree");
    let output = rightsize(&["get", "-r", &url, "-o", out.to_str().unwrap(), "--json"]);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let json: serde_json::Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("get -r --json printed no JSON on failure: {e}: {output:?}"));
    assert_eq!(json["error"]["kind"], "tree", "{json}");
    assert!(
        json["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("connection refused"),
        "{json}"
    );
}
