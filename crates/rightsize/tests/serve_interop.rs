//! Real FTP clients against `rightsize serve`: curl, lftp, Python's ftplib,
//! tnftp and globus-url-copy each download and upload a 64 MiB random file,
//! and the bytes must be identical; globus-url-copy also over four streams
//! in MODE E (`-p 4`), a file and a tree (`-r -cd`, with and without
//! `-fast`) each way; lftp's `pget -n 4`, `mirror --parallel=4` and
//! `get -c`, and curl's `-C -`. The clients come from `scripts/setup`;
//! a missing one fails the test (CI must run them, not skip them).
#![allow(clippy::unwrap_used)]

mod serve_support;

use std::process::Command;

use serve_support::{Fixture, PASSWORD, USER, run};

const FILE_BYTES: usize = 64 << 20;

#[test]
fn curl_downloads_and_uploads() {
    let f = Fixture::new(FILE_BYTES, 1);
    run(
        "curl download",
        Command::new("curl")
            .args(["-sS", "-o"])
            .arg(f.out())
            .arg(f.serve.url("/pub/big.bin")),
    );
    f.assert_same(&f.out(), "curl download");
    run(
        "curl upload",
        Command::new("curl")
            .args(["-sS", "-T"])
            .arg(f.local())
            .arg(format!(
                "ftp://{USER}:{PASSWORD}@{}/up/curl.bin",
                f.host_port()
            )),
    );
    f.assert_same(&f.root().join("up/curl.bin"), "curl upload");
    // curl's active mode (EPRT) too.
    run(
        "curl download, active",
        Command::new("curl")
            .args(["-sS", "-P", "-", "-o"])
            .arg(f.out())
            .arg(f.serve.url("/pub/big.bin")),
    );
    f.assert_same(&f.out(), "curl active download");
}

#[test]
fn lftp_downloads_and_uploads() {
    let f = Fixture::new(FILE_BYTES, 2);
    let script = format!(
        "set ftp:ssl-allow no; set net:max-retries 1; set net:timeout 20; \
         get /pub/big.bin -o {out}; put {local} -o /up/lftp.bin; quit",
        out = f.out().display(),
        local = f.local().display()
    );
    run(
        "lftp",
        Command::new("lftp")
            .args(["-u", &format!("{USER},{PASSWORD}"), "-e", &script])
            .arg(format!("ftp://{}", f.host_port())),
    );
    f.assert_same(&f.out(), "lftp get");
    f.assert_same(&f.root().join("up/lftp.bin"), "lftp put");
}

#[test]
fn lftp_pget_mirror_and_reget_and_curl_resume() {
    let f = Fixture::new(FILE_BYTES, 8);
    let root = f.root();
    std::fs::create_dir_all(root.join("pub/sub")).unwrap();
    std::fs::write(root.join("pub/sub/small.bin"), &f.content[..3000]).unwrap();
    std::fs::write(root.join("pub/empty.bin"), b"").unwrap();
    let dir = f.dir.path();
    // Resumes start after 1,000,000 bytes, zeros here: kept as they are,
    // they show that the rest came from REST, not a whole new download.
    let resumed = [&[0u8; 1_000_000][..], &f.content[1_000_000..]].concat();
    std::fs::write(dir.join("reget.bin"), [0u8; 1_000_000]).unwrap();
    std::fs::write(dir.join("curl-c.bin"), [0u8; 1_000_000]).unwrap();
    let script = format!(
        "set ftp:ssl-allow no; set net:max-retries 1; set net:timeout 20; \
         pget -n 4 /pub/big.bin -o {pget}; mirror --parallel=4 /pub {mirror}; \
         get -c /pub/big.bin -o {reget}; quit",
        pget = dir.join("pget.bin").display(),
        mirror = dir.join("mirror").display(),
        reget = dir.join("reget.bin").display(),
    );
    run(
        "lftp pget, mirror, get -c",
        Command::new("lftp")
            .args(["-u", &format!("{USER},{PASSWORD}"), "-e", &script])
            .arg(format!("ftp://{}", f.host_port())),
    );
    f.assert_same(&dir.join("pget.bin"), "lftp pget -n 4");
    f.assert_same(&dir.join("mirror/big.bin"), "lftp mirror");
    assert_eq!(
        std::fs::read(dir.join("mirror/sub/small.bin")).unwrap(),
        &f.content[..3000]
    );
    assert_eq!(std::fs::read(dir.join("mirror/empty.bin")).unwrap(), b"");
    assert!(
        std::fs::read(dir.join("reget.bin")).unwrap() == resumed,
        "lftp get -c"
    );
    run(
        "curl -C -",
        Command::new("curl")
            .args(["-sS", "-C", "-", "-o"])
            .arg(dir.join("curl-c.bin"))
            .arg(f.serve.url("/pub/big.bin")),
    );
    assert!(
        std::fs::read(dir.join("curl-c.bin")).unwrap() == resumed,
        "curl -C -"
    );
}

#[test]
fn python_ftplib_downloads_and_uploads() {
    let f = Fixture::new(FILE_BYTES, 3);
    let script = r#"
import ftplib, sys
host, port, user, pw, out, local = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6]
ftp = ftplib.FTP()
ftp.connect(host, port, timeout=30)
ftp.login(user, pw)
with open(out, "wb") as f:
    ftp.retrbinary("RETR /pub/big.bin", f.write, blocksize=1 << 16)
with open(local, "rb") as f:
    ftp.storbinary("STOR /up/ftplib.bin", f, blocksize=1 << 16)
assert ftp.size("/up/ftplib.bin") == %d
# An abort mid-download (ftplib sends ABOR with MSG_OOB, and reads one reply:
# the 426 of the transfer; the 225/226 of the ABOR follows, as from any server).
conn = ftp.transfercmd("RETR /.rightsize/zero/10G")
conn.recv(65536)
resp = ftp.abort()
assert resp.startswith("426"), resp
assert ftp.getresp()[:3] in ("225", "226")
conn.close()
assert ftp.sendcmd("PWD").startswith("257")
ftp.quit()
"#
    .replace("%d", &FILE_BYTES.to_string());
    let addr = f.serve.addr;
    run(
        "python3 ftplib",
        Command::new("python3")
            .arg("-c")
            .arg(script)
            .args([
                addr.ip().to_string(),
                addr.port().to_string(),
                USER.into(),
                PASSWORD.into(),
            ])
            .arg(f.out())
            .arg(f.local()),
    );
    f.assert_same(&f.out(), "ftplib retrbinary");
    f.assert_same(&f.root().join("up/ftplib.bin"), "ftplib storbinary");
}

#[test]
fn tnftp_downloads_and_uploads() {
    let f = Fixture::new(FILE_BYTES, 4);
    run(
        "tnftp download",
        Command::new("tnftp")
            .args(["-n", "-o"])
            .arg(f.out())
            .arg(f.serve.url("/pub/big.bin")),
    );
    f.assert_same(&f.out(), "tnftp download");
    run(
        "tnftp upload",
        Command::new("tnftp")
            .args(["-n", "-u"])
            .arg(format!(
                "ftp://{USER}:{PASSWORD}@{}/up/tnftp.bin",
                f.host_port()
            ))
            .arg(f.local()),
    );
    f.assert_same(&f.root().join("up/tnftp.bin"), "tnftp upload");
}

#[test]
fn globus_url_copy_downloads_and_uploads_with_sbuf() {
    let telemetry = tempfile::tempdir().unwrap();
    let f = Fixture::with(
        FILE_BYTES,
        5,
        &["--telemetry-dir", telemetry.path().to_str().unwrap()],
    );
    let out_url = format!("file://{}", f.out().display());
    run(
        "globus-url-copy download",
        Command::new("globus-url-copy")
            .args(["-tcp-bs", "4194304"])
            .arg(f.serve.url("/pub/big.bin"))
            .arg(&out_url),
    );
    f.assert_same(&f.out(), "globus-url-copy download");
    // The server applied the SBUF that -tcp-bs sent to the data connection.
    let files: Vec<String> = std::fs::read_dir(telemetry.path())
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    assert_eq!(files.len(), 1, "one data connection: {files:?}");
    let lines: Vec<serde_json::Value> = files[0]
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let (header, last) = (&lines[0], lines.last().unwrap());
    assert_eq!(header["settings"]["sbuf_bytes"], "4194304", "{header}");
    assert_eq!(header["settings"]["sndbuf_bytes"], "4194304", "{header}");
    assert_eq!(
        header["settings"]["tune"], "none",
        "SBUF fixes the size: {header}"
    );
    // The kernel holds twice the request, to the end.
    assert_eq!(last["kind"], "final", "{last}");
    assert_eq!(last["sndbuf_bytes"], 2 * 4_194_304, "{last}");
    run(
        "globus-url-copy upload",
        Command::new("globus-url-copy")
            .arg(format!("file://{}", f.local().display()))
            .arg(format!(
                "ftp://{USER}:{PASSWORD}@{}/up/globus.bin",
                f.host_port()
            )),
    );
    f.assert_same(&f.root().join("up/globus.bin"), "globus-url-copy upload");
}

#[test]
fn globus_url_copy_downloads_a_file_and_a_tree_over_four_streams_in_mode_e() {
    let f = Fixture::new(FILE_BYTES, 6);
    let out_url = format!("file://{}", f.out().display());
    let out = run(
        "globus-url-copy -p 4 download",
        Command::new("globus-url-copy")
            .args(["-dbg", "-p", "4"])
            .arg(f.serve.url("/pub/big.bin"))
            .arg(&out_url),
    );
    f.assert_same(&f.out(), "globus-url-copy -p 4 download");
    // It did ask for MODE E and four streams, and got them.
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    for line in ["200 Mode set to E.", "OPTS RETR Parallelism=4,4,4;", "226 "] {
        assert!(log.contains(line), "{line} not in:\n{log}");
    }
    // A tree, with -fast: one PORT for every file, listings in MODE E too.
    let root = f.root();
    std::fs::create_dir_all(root.join("pub/sub")).unwrap();
    std::fs::write(root.join("pub/sub/small.bin"), &f.content[..1000]).unwrap();
    std::fs::write(root.join("pub/empty.bin"), b"").unwrap();
    let tree = f.dir.path().join("tree");
    run(
        "globus-url-copy -fast -r -cd -p 4",
        Command::new("globus-url-copy")
            .args(["-fast", "-r", "-cd", "-p", "4"])
            .arg(f.serve.url("/pub/"))
            .arg(format!("file://{}/", tree.display())),
    );
    f.assert_same(&tree.join("big.bin"), "the tree's big.bin");
    assert_eq!(
        std::fs::read(tree.join("sub/small.bin")).unwrap(),
        &f.content[..1000]
    );
    assert_eq!(std::fs::read(tree.join("empty.bin")).unwrap(), b"");
}

#[test]
fn globus_url_copy_uploads_a_file_and_a_tree_over_four_streams_in_mode_e() {
    let f = Fixture::new(FILE_BYTES, 7);
    run(
        "globus-url-copy -p 4 upload",
        Command::new("globus-url-copy")
            .args(["-p", "4"])
            .arg(format!("file://{}", f.local().display()))
            .arg(format!(
                "ftp://{USER}:{PASSWORD}@{}/up/p4.bin",
                f.host_port()
            )),
    );
    f.assert_same(&f.root().join("up/p4.bin"), "globus-url-copy -p 4 upload");
    // A tree, with and without -fast (which keeps the data connections
    // open from one file to the next).
    let tree = f.dir.path().join("tree");
    std::fs::create_dir_all(tree.join("sub")).unwrap();
    std::fs::write(tree.join("big.bin"), &f.content).unwrap();
    std::fs::write(tree.join("sub/small.bin"), &f.content[..1000]).unwrap();
    std::fs::write(tree.join("empty.bin"), b"").unwrap();
    for (name, fast) in [("t1", false), ("t2", true)] {
        let mut cmd = Command::new("globus-url-copy");
        if fast {
            cmd.arg("-fast");
        }
        run(
            "globus-url-copy -r -cd -p 4 upload",
            cmd.args(["-r", "-cd", "-p", "4"])
                .arg(format!("file://{}/", tree.display()))
                .arg(format!(
                    "ftp://{USER}:{PASSWORD}@{}/up/{name}/",
                    f.host_port()
                )),
        );
        let up = f.root().join("up").join(name);
        f.assert_same(&up.join("big.bin"), "the tree's big.bin");
        assert_eq!(
            std::fs::read(up.join("sub/small.bin")).unwrap(),
            &f.content[..1000]
        );
        assert_eq!(std::fs::read(up.join("empty.bin")).unwrap(), b"");
        let mut names: Vec<_> = std::fs::read_dir(&up)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(
            names,
            ["big.bin", "empty.bin", "sub"],
            "nothing else is left"
        );
    }
}
