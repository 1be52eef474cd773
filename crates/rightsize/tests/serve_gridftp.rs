//! GridFTP's extensions in `rightsize serve`, against the real clients:
//! globus-url-copy reads the `112` perf markers of a MODE E upload (its
//! `-vb` rate) and the `111` range marker, downloads part of a file with
//! `ERET P` (`-partial-offset`/`-partial-length`), uploads into part of
//! one with `ESTO A`, and uploads through `SPAS` (`-stripe`);
//! `rightsize put -P 4` reads past the markers. `SPOR`, the markers of a
//! retrieve (`OPTS RETR markers=N;`) and of a slow store (`TREV`), their
//! absence in stream mode and `ESTO A` in stream mode are checked with a
//! raw control connection. globus-url-copy comes from
//! `scripts/setup`; a missing one fails the test.
#![allow(clippy::unwrap_used)]

mod serve_support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread;
use std::time::Duration;

use rightsize_ftp_proto::Reply;
use rightsize_ftp_proto::addr::format_port_arg;
use rightsize_ftp_proto::mode_e::{HEADER_BYTES, Header, descriptor};
use serve_support::{Control, Fixture, PASSWORD, USER, random_bytes, run};

const FILE_BYTES: usize = 6_000_000;

fn local_url(f: &Fixture) -> String {
    format!("file://{}", f.local().display())
}

/// globus-url-copy with `args`; its stdout and stderr together, with the
/// CRs of the replies its `-dbg` echoes taken out.
fn guc(what: &str, args: &[&str]) -> String {
    let out = run(what, Command::new("globus-url-copy").args(args));
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
    .replace('\r', "")
}

fn assert_has(log: &str, wanted: &[&str]) {
    for line in wanted {
        assert!(log.contains(line), "{line:?} not in:\n{log}");
    }
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn globus_url_copy_shows_the_rate_of_a_mode_e_upload_from_its_perf_markers() {
    let f = Fixture::new(FILE_BYTES, 11);
    // globus-url-copy prints a rate only from a marker at least 0.1 s
    // after the transfer began: the file comes through its standard input
    // over half a second at least, so that a fast host cannot finish
    // sooner.
    let mut child = Command::new("globus-url-copy")
        .args(["-vb", "-dbg", "-p", "4", "-", &f.upload_url("p4.bin")])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("globus-url-copy (scripts/setup installs it)");
    let mut stdin = child.stdin.take().unwrap();
    for piece in f.content.chunks(FILE_BYTES / 6) {
        stdin.write_all(piece).unwrap();
        thread::sleep(Duration::from_millis(100));
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
    .replace('\r', "");
    assert!(out.status.success(), "globus-url-copy failed:\n{log}");
    assert_eq!(read(&f.root().join("up/p4.bin")), f.content);
    // The last markers before the 226: all the bytes, one stripe, and
    // the range that arrived, as the Globus server writes them.
    assert_has(
        &log,
        &[
            "112-Perf Marker\n Timestamp: ",
            "\n Stripe Index: 0\n",
            &format!(" Stripe Bytes Transferred: {FILE_BYTES}\n"),
            "\n Total Stripe Count: 1\n112 End.",
            &format!("111 Range Marker 0-{FILE_BYTES}\n"),
        ],
    );
    // -vb prints a rate only from perf markers for a MODE E upload.
    assert!(
        log.lines()
            .any(|l| l.contains(&format!("{FILE_BYTES} bytes")) && l.contains("MB/sec")),
        "no -vb rate line in:\n{log}"
    );
}

#[test]
fn rightsize_put_over_four_streams_reads_past_the_markers() {
    let f = Fixture::new(FILE_BYTES, 12);
    let local = f.local();
    run(
        "rightsize put -P 4",
        Command::new(env!("CARGO_BIN_EXE_rightsize"))
            .args(["put", "-P", "4"])
            .arg(&local)
            .arg(f.upload_url("put4.bin")),
    );
    assert_eq!(read(&f.root().join("up/put4.bin")), f.content);
}

#[test]
fn globus_url_copy_downloads_part_of_a_file_with_eret() {
    let f = Fixture::new(FILE_BYTES, 13);
    let (offset, length) = (1_000_003usize, 2_500_000usize);
    for (name, parallel) in [("e.bin", true), ("s.bin", false)] {
        let out = f.dir.path().join(name);
        let (o, l) = (offset.to_string(), length.to_string());
        let mut args = vec!["-dbg", "-partial-offset", &o, "-partial-length", &l];
        if parallel {
            args.extend(["-p", "4"]);
        }
        let url = f.serve.url("/pub/big.bin");
        let dest = format!("file://{}", out.display());
        args.extend([url.as_str(), dest.as_str()]);
        let log = guc("globus-url-copy -partial-offset", &args);
        assert_has(&log, &[&format!("ERET P {offset} {length} /pub/big.bin")]);
        // globus-url-copy writes the part where it was in the file (the
        // Globus server gives the same file).
        let got = read(&out);
        assert_eq!(got.len(), offset + length, "{name}");
        assert!(
            got[offset..] == f.content[offset..offset + length],
            "{name}: the part differs"
        );
    }
}

#[test]
fn globus_url_copy_uploads_into_part_of_a_file_with_esto() {
    let f = Fixture::new(FILE_BYTES, 14);
    let old = random_bytes(FILE_BYTES, 99);
    let target = f.root().join("up/esto.bin");
    std::fs::write(&target, &old).unwrap();
    let (offset, length) = (1_000_003usize, 2_500_000usize);
    let log = guc(
        "globus-url-copy -partial-offset upload",
        &[
            "-dbg",
            "-p",
            "4",
            "-partial-offset",
            &offset.to_string(),
            "-partial-length",
            &length.to_string(),
            &local_url(&f),
            &f.upload_url("esto.bin"),
        ],
    );
    assert_has(&log, &[&format!("ESTO A {offset} /up/esto.bin")]);
    let mut expected = old.clone();
    expected[offset..offset + length].copy_from_slice(&f.content[offset..offset + length]);
    assert!(read(&target) == expected, "ESTO A did not land in place");
}

#[test]
fn globus_url_copy_stripe_uploads_through_spas() {
    let f = Fixture::new(FILE_BYTES, 15);
    let log = guc(
        "globus-url-copy -stripe upload",
        &[
            "-dbg",
            "-stripe",
            "-p",
            "4",
            &local_url(&f),
            &f.upload_url("striped.bin"),
        ],
    );
    assert_has(
        &log,
        &[
            "SPAS",
            "229-Entering Striped Passive Mode.\n 127,0,0,1,",
            "229 End",
        ],
    );
    assert_eq!(read(&f.root().join("up/striped.bin")), f.content);
}

/// Reads one MODE E connection to its EOD; the data at its offsets.
fn read_blocks(mut stream: TcpStream, into: &mut Vec<u8>, pace: Option<Duration>) {
    loop {
        let mut head = [0u8; HEADER_BYTES];
        stream.read_exact(&mut head).unwrap();
        let header = Header::decode(&head);
        if header.descriptor & descriptor::EOF == 0 && header.count > 0 {
            let start = usize::try_from(header.offset).unwrap();
            let end = start + usize::try_from(header.count).unwrap();
            if into.len() < end {
                into.resize(end, 0);
            }
            stream.read_exact(&mut into[start..end]).unwrap();
            if let Some(pause) = pace {
                thread::sleep(pause);
            }
        }
        if header.descriptor & descriptor::EOD != 0 {
            return;
        }
    }
}

/// The replies up to the one that ends the transfer, that one included.
fn replies_to_end(c: &mut Control) -> Vec<Reply> {
    let mut replies = vec![c.reply()];
    while replies.last().unwrap().code() < 200 {
        replies.push(c.reply());
    }
    replies
}

fn port_line(verb: &str, listeners: &[&TcpListener]) -> String {
    let addrs: Vec<String> = listeners
        .iter()
        .map(|l| match l.local_addr().unwrap() {
            SocketAddr::V4(v4) => format_port_arg(v4),
            SocketAddr::V6(_) => panic!("loopback is IPv4"),
        })
        .collect();
    format!("{verb} {}", addrs.join(" "))
}

#[test]
fn spor_sends_a_mode_e_retrieve_to_the_first_stripe() {
    let f = Fixture::new(FILE_BYTES, 16);
    let mut c = Control::anonymous(f.serve.addr);
    assert_eq!(c.cmd("TYPE I").code(), 200);
    assert_eq!(c.cmd("MODE E").code(), 200);
    let first = TcpListener::bind("127.0.0.1:0").unwrap();
    let second = TcpListener::bind("127.0.0.1:0").unwrap();
    let reply = c.cmd(&port_line("SPOR", &[&first, &second]));
    assert_eq!(reply.code(), 200, "{reply:?}");
    assert_eq!(c.cmd("RETR /pub/big.bin").code(), 150);
    let (stream, _) = first.accept().unwrap();
    let mut got = Vec::new();
    read_blocks(stream, &mut got, None);
    assert_eq!(replies_to_end(&mut c).last().unwrap().code(), 226);
    assert!(got == f.content, "the blocks do not make the file");
    // Every address is checked as PORT's is: no privileged port.
    assert_eq!(c.cmd("SPOR 127,0,0,1,0,21").code(), 500);
    assert_eq!(c.cmd("SPOR 127,0,0,1").code(), 501);
}

#[test]
fn a_mode_e_retrieve_sends_perf_markers_only_when_asked() {
    let f = Fixture::new(FILE_BYTES, 17);
    // A slow reader: 256 KiB every 100 ms with a small receive buffer, so
    // 12 MiB take seconds whatever the machine, and markers=1 is due.
    const BYTES: usize = 12 << 20;
    let listener = {
        let socket =
            socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        socket.set_recv_buffer_size(64 << 10).unwrap();
        socket
            .bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap().into())
            .unwrap();
        socket.listen(4).unwrap();
        TcpListener::from(socket)
    };
    let mut c = Control::anonymous(f.serve.addr);
    for line in ["TYPE I", "MODE E", "OPTS RETR markers=1;"] {
        assert_eq!(c.cmd(line).code(), 200, "{line}");
    }
    assert_eq!(c.cmd(&port_line("PORT", &[&listener])).code(), 200);
    assert_eq!(c.cmd(&format!("RETR /.rightsize/zero/{BYTES}")).code(), 150);
    let (stream, _) = listener.accept().unwrap();
    let mut got = Vec::new();
    // 256 KiB blocks (the server's block size), one per 100 ms.
    read_blocks(stream, &mut got, Some(Duration::from_millis(100)));
    assert_eq!(got.len(), BYTES);
    let replies = replies_to_end(&mut c);
    let codes: Vec<u16> = replies.iter().map(Reply::code).collect();
    assert_eq!(*codes.last().unwrap(), 226, "{replies:?}");
    assert!(!codes.contains(&111), "no range markers on a retrieve");
    let moved: Vec<u64> = replies
        .iter()
        .filter(|r| r.code() == 112)
        .map(|r| {
            let line = r.lines().iter().find(|l| l.contains("Bytes Transferred"));
            line.and_then(|l| l.rsplit(' ').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("no byte count in {r:?}"))
        })
        .collect();
    assert!(
        moved.len() >= 2,
        "a periodic marker and the last: {replies:?}"
    );
    assert!(moved[0] < BYTES as u64, "{moved:?}");
    assert!(moved.windows(2).all(|w| w[0] <= w[1]), "{moved:?}");
    assert_eq!(*moved.last().unwrap(), BYTES as u64);

    // A session that did not ask gets none.
    let mut c = Control::anonymous(f.serve.addr);
    for line in ["TYPE I", "MODE E"] {
        assert_eq!(c.cmd(line).code(), 200, "{line}");
    }
    assert_eq!(c.cmd(&port_line("PORT", &[&listener])).code(), 200);
    assert_eq!(c.cmd("RETR /pub/big.bin").code(), 150);
    let (stream, _) = listener.accept().unwrap();
    let mut got = Vec::new();
    read_blocks(stream, &mut got, None);
    let codes: Vec<u16> = replies_to_end(&mut c).iter().map(Reply::code).collect();
    assert_eq!(codes, [226]);
}

#[test]
fn a_slow_mode_e_upload_gets_markers_at_the_intervals_trev_sets() {
    let f = Fixture::new(FILE_BYTES, 19);
    let mut c = Control::login(f.serve.addr, USER, PASSWORD);
    for line in ["TYPE I", "MODE E", "TREV PERF 1", "TREV RESTART 1"] {
        assert_eq!(c.cmd(line).code(), 200, "{line}");
    }
    let data_addr = c.epsv();
    let mut data = TcpStream::connect(data_addr).unwrap();
    assert_eq!(c.cmd("STOR /up/slow.bin").code(), 150);
    // 24 blocks of 128 KiB, one per 100 ms: the upload takes seconds
    // whatever the machine, so markers every second are due on the way.
    const BLOCK: usize = 128 << 10;
    let content = random_bytes(24 * BLOCK, 20);
    for (i, piece) in content.chunks(BLOCK).enumerate() {
        let offset = (i * BLOCK) as u64;
        data.write_all(&Header::data(offset, piece.len() as u64).encode())
            .unwrap();
        data.write_all(piece).unwrap();
        thread::sleep(Duration::from_millis(100));
    }
    let end = Header {
        descriptor: descriptor::EOD | descriptor::EOF,
        count: 0,
        offset: 1,
    };
    data.write_all(&end.encode()).unwrap();
    let replies = replies_to_end(&mut c);
    assert_eq!(replies.last().unwrap().code(), 226, "{replies:?}");
    assert!(read(&f.root().join("up/slow.bin")) == content);
    let total = content.len();
    let ranges: Vec<String> = replies
        .iter()
        .filter(|r| r.code() == 111)
        .map(Reply::text)
        .collect();
    let perf = replies.iter().filter(|r| r.code() == 112).count();
    assert!(
        perf >= 2,
        "a periodic perf marker and the last: {replies:?}"
    );
    assert!(
        ranges.len() >= 2,
        "a periodic range marker and the last: {ranges:?}"
    );
    assert!(ranges[0].starts_with("Range Marker 0-"), "{ranges:?}");
    assert_ne!(ranges[0], format!("Range Marker 0-{total}"));
    assert_eq!(*ranges.last().unwrap(), format!("Range Marker 0-{total}"));
}

#[test]
fn a_stream_mode_client_never_sees_a_marker() {
    let f = Fixture::new(FILE_BYTES, 18);
    let mut c = Control::login(f.serve.addr, USER, PASSWORD);
    assert_eq!(c.cmd("TYPE I").code(), 200);
    assert_eq!(c.cmd("OPTS RETR markers=1;").code(), 200);
    // ftplib and curl take the reply after the 150 as the end: it must be
    // the 226, for a store and for a retrieve alike.
    assert_eq!(c.store("STOR /up/s.bin", &f.content).code(), 226);
    let (bytes, end) = c.retr("/pub/big.bin");
    assert_eq!(end.code(), 226, "{end:?}");
    assert!(bytes == f.content);
    // ESTO A in stream mode: the bytes follow each other from the offset.
    assert_eq!(c.store("ESTO A 5 /up/s.bin", b"spliced").code(), 226);
    let got = read(&f.root().join("up/s.bin"));
    assert_eq!(got.len(), f.content.len());
    assert_eq!(&got[5..12], b"spliced");
    assert!(got[..5] == f.content[..5] && got[12..] == f.content[12..]);
    assert_eq!(c.cmd("NOOP").code(), 200);
}

#[test]
fn the_data_idle_timeout_holds_for_a_mode_e_download_the_client_never_reads() {
    let f = Fixture::with(FILE_BYTES, 21, &["--data-idle-timeout", "2s"]);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut c = Control::anonymous(f.serve.addr);
    for line in ["TYPE I", "MODE E", "OPTS RETR Parallelism=2,2,2;"] {
        assert_eq!(c.cmd(line).code(), 200, "{line}");
    }
    assert_eq!(c.cmd(&port_line("PORT", &[&listener])).code(), 200);
    assert_eq!(c.cmd("RETR /.rightsize/zero/1G").code(), 150);
    // Both streams accepted and never read: the buffers fill, then
    // nothing moves.
    let streams: Vec<TcpStream> = (0..2).map(|_| listener.accept().unwrap().0).collect();
    let started = std::time::Instant::now();
    let end = c.reply();
    let waited = started.elapsed();
    assert_eq!(end.code(), 426, "{end:?}");
    assert!(end.text().contains("idle timeout"), "{end:?}");
    assert!(
        waited >= Duration::from_millis(1500) && waited < Duration::from_millis(4500),
        "the 2 s data idle timeout ended the MODE E transfer after {waited:?}"
    );
    assert_eq!(c.cmd("NOOP").code(), 200);
    drop(streams);
}
