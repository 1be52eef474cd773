//! FTPS clients against `rightsize serve` with a certificate: curl
//! (`--ssl-reqd`, and `ftps://` against `--tls-implicit`), lftp
//! (`ftp:ssl-force`) and Python's `ftplib.FTP_TLS` download and upload a
//! 16 MiB random file over protected data connections, byte for byte. A
//! relay that records what the client sends shows that no password
//! crosses in clear. Bad input (a password login before `AUTH TLS`, a
//! client that asks for `PROT P` and connects in clear, an upload cut
//! without its `close_notify`, a handshake that fails) gets a clear reply,
//! leaves nothing under the final name, and the server goes on serving.
//! `SIGHUP` reloads the certificate for the connections that follow.
//! The clients come from `scripts/setup`; a missing one fails the test.
#![allow(clippy::unwrap_used)]

mod serve_support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use rightsize_ftp::tls::{ClientTls, TlsStream, Verify};
use serve_support::{Control, Fixture, PASSWORD, USER, run};

const FILE_BYTES: usize = 16 << 20;

/// A certificate for 127.0.0.1 (not a CA: a leaf that clients trust as
/// it is) and its key, written in `dir`.
fn certificate(dir: &Path) -> (PathBuf, PathBuf) {
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let made = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned()]).unwrap();
    std::fs::write(&cert, made.cert.pem()).unwrap();
    std::fs::write(&key, made.signing_key.serialize_pem()).unwrap();
    (cert, key)
}

/// A served root (see [`Fixture`]) whose server has a certificate, and
/// the certificate's file.
fn tls_fixture(seed: u64, extra: &[&str]) -> (Fixture, PathBuf, tempfile::TempDir) {
    let certs = tempfile::tempdir().unwrap();
    let (cert, key) = certificate(certs.path());
    let flags = [
        &[
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
        ],
        extra,
    ]
    .concat();
    (Fixture::with(FILE_BYTES, seed, &flags), cert, certs)
}

#[test]
fn curl_downloads_and_uploads_over_tls_explicit_and_implicit() {
    let (f, cert, _certs) = tls_fixture(11, &[]);
    let url = |path: &str| format!("ftp://{USER}:{PASSWORD}@{}{path}", f.host_port());
    run(
        "curl --ssl-reqd download",
        Command::new("curl")
            .args(["-sS", "--ssl-reqd", "--cacert"])
            .arg(&cert)
            .arg("-o")
            .arg(f.out())
            .arg(url("/pub/big.bin")),
    );
    f.assert_same(&f.out(), "curl --ssl-reqd download");
    run(
        "curl --ssl-reqd upload",
        Command::new("curl")
            .args(["-sS", "--ssl-reqd", "--cacert"])
            .arg(&cert)
            .arg("-T")
            .arg(f.local())
            .arg(url("/up/curl.bin")),
    );
    f.assert_same(&f.root().join("up/curl.bin"), "curl --ssl-reqd upload");
    // A login in clear is refused before it sends the password.
    let refused = Command::new("curl")
        .args(["-sS", "-o", "/dev/null"])
        .arg(url("/pub/big.bin"))
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("530"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );

    let (implicit, cert, _certs) = tls_fixture(12, &["--tls-implicit"]);
    run(
        "curl ftps:// (implicit)",
        Command::new("curl")
            .args(["-sS", "--cacert"])
            .arg(&cert)
            .arg("-o")
            .arg(implicit.out())
            .arg(format!(
                "ftps://{USER}:{PASSWORD}@{}/pub/big.bin",
                implicit.host_port()
            )),
    );
    implicit.assert_same(&implicit.out(), "curl ftps:// download");
}

#[test]
fn lftp_downloads_and_uploads_with_ssl_forced() {
    let (f, cert, _certs) = tls_fixture(13, &[]);
    let script = format!(
        "set ftp:ssl-force true; set ftp:ssl-protect-data true; set ssl:ca-file {cert}; \
         set net:max-retries 1; set net:timeout 20; \
         get /pub/big.bin -o {out}; put {local} -o /up/lftp.bin; quit",
        cert = cert.display(),
        out = f.out().display(),
        local = f.local().display()
    );
    run(
        "lftp ftp:ssl-force",
        Command::new("lftp")
            .args(["-u", &format!("{USER},{PASSWORD}"), "-e", &script])
            .arg(format!("ftp://{}", f.host_port())),
    );
    f.assert_same(&f.out(), "lftp get over TLS");
    f.assert_same(&f.root().join("up/lftp.bin"), "lftp put over TLS");
}

#[test]
fn python_ftplib_ftp_tls_downloads_lists_and_uploads() {
    let (f, cert, _certs) = tls_fixture(14, &[]);
    let script = r#"
import ftplib, ssl, sys
host, port, user, pw, cert, out, local = sys.argv[1:8]
ctx = ssl.create_default_context(cafile=cert)
ftp = ftplib.FTP_TLS(context=ctx)
ftp.connect(host, int(port), timeout=30)
ftp.login(user, pw)
ftp.prot_p()
with open(out, "wb") as f:
    ftp.retrbinary("RETR /pub/big.bin", f.write, blocksize=1 << 16)
assert ftp.nlst("/pub") == ["big.bin"], ftp.nlst("/pub")
with open(local, "rb") as f:
    ftp.storbinary("STOR /up/ftplib.bin", f, blocksize=1 << 16)
ftp.quit()
"#;
    let addr = f.serve.addr;
    run(
        "python3 ftplib.FTP_TLS",
        Command::new("python3")
            .arg("-c")
            .arg(script)
            .args([
                addr.ip().to_string(),
                addr.port().to_string(),
                USER.into(),
                PASSWORD.into(),
            ])
            .arg(&cert)
            .arg(f.out())
            .arg(f.local()),
    );
    f.assert_same(&f.out(), "ftplib FTP_TLS retrbinary");
    f.assert_same(&f.root().join("up/ftplib.bin"), "ftplib FTP_TLS storbinary");
}

/// A relay on loopback to `to` that records every byte the client sends
/// (the control connection only: data connections go to the server's own
/// addresses).
fn recording_relay(to: SocketAddr) -> (SocketAddr, Arc<Mutex<Vec<u8>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(mut client) = client else { return };
            let mut server = TcpStream::connect(to).unwrap();
            let (mut client_r, mut server_w) =
                (client.try_clone().unwrap(), server.try_clone().unwrap());
            let record = Arc::clone(&record);
            thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = client_r.read(&mut buf) {
                    if n == 0 || server_w.write_all(&buf[..n]).is_err() {
                        break;
                    }
                    record.lock().unwrap().extend_from_slice(&buf[..n]);
                }
                let _ = server_w.shutdown(std::net::Shutdown::Write);
            });
            thread::spawn(move || {
                let _ = std::io::copy(&mut server, &mut client);
                let _ = client.shutdown(std::net::Shutdown::Write);
            });
        }
    });
    (addr, seen)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn a_capture_of_a_password_login_shows_no_password() {
    let (f, cert, _certs) = tls_fixture(15, &[]);
    let (relay, seen) = recording_relay(f.serve.addr);
    run(
        "curl --ssl-reqd through the relay",
        Command::new("curl")
            .args(["-sS", "--ssl-reqd", "--cacert"])
            .arg(&cert)
            .arg("-o")
            .arg(f.out())
            .arg(format!("ftp://{USER}:{PASSWORD}@{relay}/pub/big.bin")),
    );
    f.assert_same(&f.out(), "download through the relay");
    thread::sleep(Duration::from_millis(200));
    let captured = seen.lock().unwrap().clone();
    assert!(contains(&captured, b"AUTH "), "the relay saw the session");
    assert!(
        !contains(&captured, PASSWORD.as_bytes()),
        "the password crossed in clear"
    );
    assert!(
        !contains(&captured, USER.as_bytes()),
        "the user name crossed in clear"
    );

    // The same relay in front of a server without TLS does see it: the
    // capture above could have.
    let clear = Fixture::new(1024, 16);
    let (relay, seen) = recording_relay(clear.serve.addr);
    run(
        "curl in clear through the relay",
        Command::new("curl")
            .args(["-sS", "-o"])
            .arg(clear.out())
            .arg(format!("ftp://{USER}:{PASSWORD}@{relay}/pub/big.bin")),
    );
    thread::sleep(Duration::from_millis(200));
    assert!(contains(&seen.lock().unwrap(), PASSWORD.as_bytes()));
}

/// A control connection over TLS, as a client that the test steers.
struct TlsControl {
    stream: BufReader<TlsStream>,
}

impl TlsControl {
    /// Connects, reads the 220, `AUTH TLS` and the handshake (trusting
    /// `cert`).
    fn connect(addr: SocketAddr, cert: &Path) -> (TlsControl, ClientTls) {
        let mut raw = Control::connect(addr);
        assert_eq!(raw.cmd("AUTH TLS").code(), 234);
        let tls = ClientTls::new(&Verify::CaFile(cert.to_owned())).unwrap();
        let stream = tls
            .connect("127.0.0.1", raw.stream.try_clone().unwrap())
            .unwrap();
        (
            TlsControl {
                stream: BufReader::new(stream),
            },
            tls,
        )
    }

    /// Sends `line`; the reply's last line.
    fn cmd(&mut self, line: &str) -> String {
        self.stream
            .get_mut()
            .write_all(format!("{line}\r\n").as_bytes())
            .unwrap();
        self.reply()
    }

    fn reply(&mut self) -> String {
        loop {
            let mut text = String::new();
            assert!(self.stream.read_line(&mut text).unwrap() > 0, "closed");
            let bytes = text.as_bytes();
            if bytes.len() >= 4 && bytes[..3].iter().all(u8::is_ascii_digit) && bytes[3] == b' ' {
                return text;
            }
        }
    }

    /// Logs in, `PBSZ 0`, `PROT P`, `EPSV`: the data address.
    fn ready(&mut self, port_of: SocketAddr) -> SocketAddr {
        assert!(self.cmd(&format!("USER {USER}")).starts_with("331"));
        assert!(self.cmd(&format!("PASS {PASSWORD}")).starts_with("230"));
        assert!(self.cmd("PBSZ 0").starts_with("200"));
        assert!(self.cmd("PROT P").starts_with("200"));
        let epsv = self.cmd("EPSV");
        let port: u16 = epsv
            .split("|||")
            .nth(1)
            .and_then(|r| r.split('|').next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("{epsv}"));
        SocketAddr::new(port_of.ip(), port)
    }
}

#[test]
fn bad_clients_get_clear_replies_leave_nothing_and_the_server_goes_on() {
    let (f, cert, _certs) = tls_fixture(17, &[]);
    let addr = f.serve.addr;
    // A password login before AUTH TLS: refused at USER, before any
    // password is sent.
    let mut clear = Control::connect(addr);
    let refused = clear.cmd(&format!("USER {USER}"));
    assert_eq!(refused.code(), 530);
    assert!(refused.to_string().contains("AUTH TLS"), "{refused}");

    // PROT P, then a data connection in clear: 425, and the session goes on.
    let (mut c, tls) = TlsControl::connect(addr, &cert);
    let data = c.ready(addr);
    c.stream
        .get_mut()
        .write_all(b"RETR /pub/big.bin\r\n")
        .unwrap();
    let mut plain = TcpStream::connect(data).unwrap();
    plain.write_all(b"hello in clear\r\n").unwrap();
    let start = c.reply();
    assert!(start.starts_with("150"), "{start}");
    let failed = c.reply();
    assert!(failed.starts_with("425"), "{failed}");
    assert!(c.cmd("NOOP").starts_with("200"));

    // An upload cut without its close_notify: not kept.
    let data = {
        let epsv = c.cmd("EPSV");
        let port: u16 = epsv
            .split("|||")
            .nth(1)
            .and_then(|r| r.split('|').next())
            .and_then(|p| p.parse().ok())
            .unwrap();
        SocketAddr::new(addr.ip(), port)
    };
    c.stream
        .get_mut()
        .write_all(b"STOR /up/cut.bin\r\n")
        .unwrap();
    let sock = TcpStream::connect(data).unwrap();
    assert!(c.reply().starts_with("150"));
    let mut upload = tls.connect("127.0.0.1", sock).unwrap();
    upload.write_all(&vec![7u8; 1 << 20]).unwrap();
    upload.flush().unwrap();
    upload.socket().shutdown(std::net::Shutdown::Both).unwrap();
    let end = c.reply();
    assert!(end.starts_with("426") || end.starts_with("451"), "{end}");
    assert!(
        !f.root().join("up/cut.bin").exists(),
        "a cut upload was kept"
    );
    assert!(c.cmd("NOOP").starts_with("200"));

    // A handshake that fails: the connection closes; the next one is served.
    let mut broken = Control::connect(addr);
    assert_eq!(broken.cmd("AUTH TLS").code(), 234);
    broken.send_bytes(b"this is not a ClientHello\r\n\r\n");
    assert!(broken.is_closed());
    let (mut again, _) = TlsControl::connect(addr, &cert);
    again.ready(addr);
    assert!(again.cmd("QUIT").starts_with("221"));
}

/// Whether a TLS handshake with the server at `addr` succeeds for a
/// client that trusts only `cert`.
fn trusted_by(addr: SocketAddr, cert: &Path) -> bool {
    let mut raw = Control::connect(addr);
    assert_eq!(raw.cmd("AUTH TLS").code(), 234);
    let tls = ClientTls::new(&Verify::CaFile(cert.to_owned())).unwrap();
    tls.connect("127.0.0.1", raw.stream.try_clone().unwrap())
        .is_ok()
}

#[test]
fn a_sighup_reloads_the_certificate_for_the_connections_that_follow() {
    let (mut f, cert, certs) = tls_fixture(18, &[]);
    let old = certs.path().join("old.pem");
    std::fs::copy(&cert, &old).unwrap();
    let fresh = tempfile::tempdir().unwrap();
    let (new_cert, new_key) = certificate(fresh.path());
    assert!(trusted_by(f.serve.addr, &old));
    assert!(!trusted_by(f.serve.addr, &new_cert));
    // A key file that does not load: the certificate in use stays.
    std::fs::write(certs.path().join("key.pem"), "garbage\n").unwrap();
    // SAFETY: a signal to the child this test started.
    assert_eq!(
        unsafe { libc::kill(f.serve.pid() as libc::pid_t, libc::SIGHUP) },
        0
    );
    thread::sleep(Duration::from_millis(600));
    assert!(f.serve.is_running(), "SIGHUP ended the server");
    assert!(trusted_by(f.serve.addr, &old));
    // The new pair in place: the next connections get it.
    std::fs::copy(&new_cert, &cert).unwrap();
    std::fs::copy(&new_key, certs.path().join("key.pem")).unwrap();
    // SAFETY: as above.
    assert_eq!(
        unsafe { libc::kill(f.serve.pid() as libc::pid_t, libc::SIGHUP) },
        0
    );
    let mut reloaded = false;
    for _ in 0..50 {
        thread::sleep(Duration::from_millis(100));
        if trusted_by(f.serve.addr, &new_cert) {
            reloaded = true;
            break;
        }
    }
    assert!(reloaded, "the new certificate was not taken");
    assert!(!trusted_by(f.serve.addr, &old));
}

#[test]
fn the_log_names_who_logged_in_and_who_failed_with_the_time_and_never_a_password() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = certificate(dir.path());
    let users = dir.path().join("users");
    serve_support::add_user(&users, USER, PASSWORD, false);
    let log = dir.path().join("serve.log");
    let root = dir.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    let serve = serve_support::Serve::start_logged(
        &root,
        &[
            "--users",
            users.to_str().unwrap(),
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
        ],
        &log,
    );
    let (mut good, _) = TlsControl::connect(serve.addr, &cert);
    assert!(good.cmd(&format!("USER {USER}")).starts_with("331"));
    assert!(good.cmd(&format!("PASS {PASSWORD}")).starts_with("230"));
    let (mut bad, _) = TlsControl::connect(serve.addr, &cert);
    assert!(bad.cmd(&format!("USER {USER}")).starts_with("331"));
    assert!(bad.cmd("PASS wrong-password").starts_with("530"));
    assert!(good.cmd("QUIT").starts_with("221"));
    thread::sleep(Duration::from_millis(300));
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains(&format!("\"{USER}\" logged in over TLS")),
        "{text}"
    );
    assert!(
        text.contains(&format!("failed login for \"{USER}\" over TLS")),
        "{text}"
    );
    assert!(
        !text.contains(PASSWORD) && !text.contains("wrong-password"),
        "{text}"
    );
    for line in text.lines() {
        let stamp = line.split(' ').next().unwrap_or("");
        assert!(
            stamp.len() == 24 && stamp.ends_with('Z') && stamp.as_bytes()[10] == b'T',
            "no time at the start of {line:?}"
        );
    }
}
