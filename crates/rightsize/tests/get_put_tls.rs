//! `rightsize get` and `put` over FTPS (RFC 4217) against real servers on
//! 127.0.0.1: `rightsize serve` with a self-signed certificate (trusted by
//! `--pin-sha256`), with an openssl-made certificate (trusted by
//! `--cacert`), and with `--tls-implicit` (`ftps://`); vsftpd 3.0.3 with
//! `ssl_enable`, `require_ssl_reuse` and forced TLS for anonymous logins
//! and data; pyftpdlib's `TLS_FTPHandler`. Every transfer's bytes are
//! compared with the original and its `--json` must say TLS covered the
//! control and data connections. The failures (a wrong pin, an untrusted
//! certificate, a server without TLS under `--tls`, a TLS data stream cut
//! without `close_notify`) must exit non-zero with a message that quotes
//! what was given, and leave nothing under the final name. A peer that is
//! missing (scripts/setup installs them) fails the test. vsftpd needs root.

#![allow(clippy::unwrap_used)]

mod support;

use std::io::{BufRead, BufReader, Write};
use std::net::{Shutdown, SocketAddr, TcpListener};

use rightsize_ftp::tls::ServerTls;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use support::*;

const MIB: usize = 1 << 20;

/// A running `rightsize serve` with TLS; killed on drop.
struct Serve {
    child: Child,
    addr: SocketAddr,
    fingerprint: String,
    root: tempfile::TempDir,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Serve {
    /// Serves a fresh root on 127.0.0.1 with `extra` flags; reads the
    /// address and the certificate's fingerprint from its stdout.
    fn start(extra: &[&str]) -> Serve {
        let root = tempfile::tempdir().unwrap();
        let users = root.path().join("users.txt");
        let mut passwd = Command::new(env!("CARGO_BIN_EXE_rightsize"))
            .args([
                "passwd",
                users.to_str().unwrap(),
                "alice",
                "--iterations",
                "1000",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        passwd.stdin.take().unwrap().write_all(b"pw\n").unwrap();
        assert!(passwd.wait().unwrap().success());
        let files = root.path().join("files");
        std::fs::create_dir(&files).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_rightsize"))
            .args(["serve", "-q", "--listen", "127.0.0.1:0", "--root"])
            .arg(&files)
            .arg("--users")
            .arg(&users)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let (mut addr, mut fingerprint) = (None, None);
        for _ in 0..4 {
            let Some(Ok(line)) = lines.next() else { break };
            if let Some(rest) = line.split("ftp://").nth(1) {
                addr = rest.split('/').next().and_then(|a| a.parse().ok());
            }
            if let Some(fp) = line.split("certificate SHA-256 ").nth(1) {
                fingerprint = Some(fp.trim().to_owned());
            }
            if addr.is_some() && fingerprint.is_some() {
                break;
            }
        }
        Serve {
            child,
            addr: addr.expect("no address in serve's banner"),
            fingerprint: fingerprint.expect("no fingerprint in serve's banner"),
            root,
        }
    }

    fn files(&self) -> PathBuf {
        self.root.path().join("files")
    }

    fn url(&self, scheme: &str, path: &str) -> String {
        format!("{scheme}://alice:pw@{}{path}", self.addr)
    }
}

/// A certificate and key for 127.0.0.1 made by openssl (P-256), in `dir`.
fn openssl_cert(dir: &Path) -> (PathBuf, PathBuf) {
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let out = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
        ])
        .args(["-nodes", "-days", "2", "-subj", "/CN=127.0.0.1"])
        .args(["-addext", "subjectAltName=IP:127.0.0.1"])
        // A leaf, not a CA (openssl's default for -x509), as webpki wants
        // of a certificate trusted directly.
        .args(["-addext", "basicConstraints=critical,CA:FALSE", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl (scripts/setup)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    (cert, key)
}

/// Asserts that `--json` says TLS covered control and data.
fn assert_tls(output: &std::process::Output, implicit: bool) {
    let json = json(output);
    let tls = &json["tls"];
    assert_eq!(tls["control"], true, "{tls}");
    assert_eq!(tls["data"], true, "{tls}");
    assert_eq!(tls["implicit"], implicit, "{tls}");
}

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn serve_self_signed_get_and_put_with_the_pinned_fingerprint() {
    let serve = Serve::start(&["--tls-self-signed", "127.0.0.1"]);
    let data = random_bytes(8 * MIB + 5, 31);
    std::fs::write(serve.files().join("f.bin"), &data).unwrap();
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("f.bin");

    let output = rightsize(&[
        "get",
        &serve.url("ftp", "/f.bin"),
        "-o",
        target.to_str().unwrap(),
        "--tls",
        "--pin-sha256",
        &serve.fingerprint,
        "--json",
    ]);
    assert_success(&output, None);
    assert!(same_bytes(&target, &data), "downloaded bytes differ");
    assert_tls(&output, false);
    assert_eq!(json(&output)["tls"]["resumed"], true);
    // The RIGHTSIZE extension runs over TLS too: both ends tune together.
    let tuning = &json(&output)["tuning"];
    assert_eq!(tuning["extension"], true, "{tuning}");
    assert!(
        tuning["received_from_peer"].as_u64().unwrap_or(0) > 0,
        "no notice came over TLS: {tuning}"
    );

    let output = rightsize(&[
        "put",
        target.to_str().unwrap(),
        &serve.url("ftp", "/up.bin"),
        "--tls",
        "--pin-sha256",
        &serve.fingerprint.replace(':', "").to_lowercase(),
        "--json",
    ]);
    assert_success(&output, None);
    assert!(
        same_bytes(&serve.files().join("up.bin"), &data),
        "uploaded bytes differ"
    );
    assert_tls(&output, false);

    // Opportunistic: no --tls, the server's FEAT lists AUTH TLS.
    let again = out.path().join("again.bin");
    let output = rightsize(&[
        "get",
        &serve.url("ftp", "/f.bin"),
        "-o",
        again.to_str().unwrap(),
        "--pin-sha256",
        &serve.fingerprint,
        "--json",
    ]);
    assert_success(&output, None);
    assert!(same_bytes(&again, &data));
    assert_tls(&output, false);

    // Active mode: the server connects, the client is still the TLS client.
    let active = out.path().join("active.bin");
    let output = rightsize(&[
        "get",
        "--active",
        &serve.url("ftp", "/f.bin"),
        "-o",
        active.to_str().unwrap(),
        "--pin-sha256",
        &serve.fingerprint,
        "--json",
    ]);
    assert_success(&output, None);
    assert!(same_bytes(&active, &data));
    assert_tls(&output, false);
    assert_eq!(json(&output)["data_mode"], "EPRT");

    // -r: listings and files over TLS data connections.
    std::fs::create_dir_all(serve.files().join("tree/sub")).unwrap();
    let small = random_bytes(100_000, 39);
    std::fs::write(serve.files().join("tree/sub/s.bin"), &small).unwrap();
    let tree = out.path().join("tree");
    let output = rightsize(&[
        "get",
        "-r",
        &serve.url("ftp", "/tree/"),
        "-o",
        tree.to_str().unwrap(),
        "--tls",
        "--pin-sha256",
        &serve.fingerprint,
    ]);
    assert_success(&output, None);
    assert!(same_bytes(&tree.join("sub/s.bin"), &small));
}

#[test]
fn serve_with_an_openssl_certificate_trusted_by_cacert_explicit_and_implicit() {
    let certs = tempfile::tempdir().unwrap();
    let (cert, key) = openssl_cert(certs.path());
    let flags = [
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        key.to_str().unwrap(),
    ];
    let serve = Serve::start(&flags);
    let data = random_bytes(4 * MIB + 1, 32);
    std::fs::write(serve.files().join("f.bin"), &data).unwrap();
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("f.bin");
    let output = rightsize(&[
        "get",
        &serve.url("ftp", "/f.bin"),
        "-o",
        target.to_str().unwrap(),
        "--tls",
        "--cacert",
        cert.to_str().unwrap(),
        "--json",
    ]);
    assert_success(&output, None);
    assert!(same_bytes(&target, &data));
    assert_tls(&output, false);
    let output = rightsize(&[
        "put",
        target.to_str().unwrap(),
        &serve.url("ftp", "/up.bin"),
        "--tls",
        "--cacert",
        cert.to_str().unwrap(),
    ]);
    assert_success(&output, None);
    assert!(same_bytes(&serve.files().join("up.bin"), &data));
    drop(serve);

    let implicit = Serve::start(&[&flags[..], &["--tls-implicit"]].concat());
    std::fs::write(implicit.files().join("f.bin"), &data).unwrap();
    let target = out.path().join("implicit.bin");
    let output = rightsize(&[
        "get",
        &implicit.url("ftps", "/f.bin"),
        "-o",
        target.to_str().unwrap(),
        "--cacert",
        cert.to_str().unwrap(),
        "--json",
    ]);
    assert_success(&output, None);
    assert!(same_bytes(&target, &data));
    assert_tls(&output, true);
    let output = rightsize(&[
        "put",
        target.to_str().unwrap(),
        &implicit.url("ftps", "/up2.bin"),
        "--cacert",
        cert.to_str().unwrap(),
    ]);
    assert_success(&output, None);
    assert!(same_bytes(&implicit.files().join("up2.bin"), &data));
}

/// vsftpd with TLS forced for anonymous logins and data, and session
/// reuse required on data connections.
fn vsftpd_tls(cert: &Path, key: &Path) -> Server {
    std::fs::create_dir_all("/var/run/vsftpd/empty").unwrap();
    let root = tempfile::tempdir().unwrap();
    let files = root.path().join("files");
    std::fs::create_dir(&files).unwrap();
    std::fs::set_permissions(&files, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (cert, key) = (cert.to_owned(), key.to_owned());
    start(
        "vsftpd",
        "vsFTPd",
        "127.0.0.1".parse().unwrap(),
        root,
        move |root, port, passive| {
            let config = root.join("vsftpd.conf");
            let text = format!(
                "listen=YES\nbackground=NO\nlisten_address=127.0.0.1\nlisten_port={port}\n\
             anonymous_enable=YES\nlocal_enable=NO\nanon_root={}\nno_anon_password=YES\n\
             write_enable=NO\npasv_min_port={passive}\npasv_max_port={}\n\
             run_as_launching_user=YES\nseccomp_sandbox=NO\nxferlog_enable=NO\n\
             ssl_enable=YES\nallow_anon_ssl=YES\nforce_anon_data_ssl=YES\n\
             force_anon_logins_ssl=YES\nrequire_ssl_reuse=YES\n\
             rsa_cert_file={}\nrsa_private_key_file={}\n",
                root.join("files").display(),
                passive + PASSIVE_PORTS - 1,
                cert.display(),
                key.display(),
            );
            std::fs::write(&config, text).unwrap();
            let mut cmd = Command::new("/usr/sbin/vsftpd");
            cmd.arg(config);
            cmd
        },
    )
}

#[test]
fn vsftpd_get_with_tls_forced_and_session_reuse_required() {
    let certs = tempfile::tempdir().unwrap();
    std::fs::set_permissions(certs.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let (cert, key) = openssl_cert(certs.path());
    let server = vsftpd_tls(&cert, &key);
    let data = random_bytes(16 * MIB + 3, 33);
    write_public(&files_dir(&server).join("f.bin"), &data);
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("f.bin");
    let output = rightsize(&[
        "get",
        &server.url("/f.bin"),
        "-o",
        target.to_str().unwrap(),
        "--tls",
        "--cacert",
        cert.to_str().unwrap(),
        "--json",
    ]);
    assert_success(&output, Some(&server));
    assert!(same_bytes(&target, &data), "downloaded bytes differ");
    assert_tls(&output, false);
    // require_ssl_reuse=YES refuses a data connection that did not resume.
    assert_eq!(json(&output)["tls"]["resumed"], true);

    // In clear, vsftpd refuses the anonymous login.
    let clear = out.path().join("clear.bin");
    let output = rightsize(&[
        "get",
        &server.url("/f.bin"),
        "-o",
        clear.to_str().unwrap(),
        "--no-tls",
    ]);
    assert!(!output.status.success());
    assert!(!clear.exists());
    assert!(stderr(&output).contains("530"), "{}", stderr(&output));
}

/// pyftpdlib's TLS_FTPHandler with `cert` (a PEM holding the certificate
/// and its key), anonymous with write access, TLS required on control and
/// data.
fn pyftpdlib_tls(pem: &Path) -> Server {
    let pem = pem.to_owned();
    start(
        "pyftpdlib",
        "pyftpdlib",
        "127.0.0.1".parse().unwrap(),
        served_dir(),
        move |root, port, _| {
            let script = "import sys\n\
            from pyftpdlib.authorizers import DummyAuthorizer\n\
            from pyftpdlib.handlers import TLS_FTPHandler\n\
            from pyftpdlib.servers import FTPServer\n\
            a = DummyAuthorizer()\n\
            a.add_anonymous(sys.argv[2], perm='elradfmw')\n\
            h = TLS_FTPHandler\n\
            h.authorizer = a\n\
            h.certfile = sys.argv[3]\n\
            h.tls_control_required = True\n\
            h.tls_data_required = True\n\
            h.banner = 'pyftpdlib ready'\n\
            FTPServer(('127.0.0.1', int(sys.argv[1])), h).serve_forever()\n";
            let mut cmd = Command::new("/usr/bin/python3");
            cmd.arg("-c")
                .arg(script)
                .arg(port.to_string())
                .arg(root)
                .arg(&pem);
            cmd
        },
    )
}

#[test]
fn pyftpdlib_tls_handler_get_and_put() {
    let certs = tempfile::tempdir().unwrap();
    let (cert, key) = openssl_cert(certs.path());
    let pem = certs.path().join("both.pem");
    let both = [std::fs::read(&cert).unwrap(), std::fs::read(&key).unwrap()].concat();
    std::fs::write(&pem, both).unwrap();
    let server = pyftpdlib_tls(&pem);
    let data = random_bytes(8 * MIB + 7, 34);
    write_public(&files_dir(&server).join("f.bin"), &data);
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("f.bin");
    let output = rightsize(&[
        "get",
        &server.url("/f.bin"),
        "-o",
        target.to_str().unwrap(),
        "--tls",
        "--cacert",
        cert.to_str().unwrap(),
        "--json",
    ]);
    assert_success(&output, Some(&server));
    assert!(same_bytes(&target, &data), "downloaded bytes differ");
    assert_tls(&output, false);

    let output = rightsize(&[
        "put",
        target.to_str().unwrap(),
        &server.url("/up.bin"),
        "--cacert",
        cert.to_str().unwrap(),
        "--json",
    ]);
    assert_success(&output, Some(&server));
    assert!(
        same_bytes(&files_dir(&server).join("up.bin"), &data),
        "uploaded bytes differ"
    );
    assert_tls(&output, false);
}

#[test]
fn a_wrong_pin_and_an_untrusted_certificate_fail_and_leave_no_file() {
    let serve = Serve::start(&["--tls-self-signed", "127.0.0.1"]);
    std::fs::write(serve.files().join("f.bin"), random_bytes(MIB, 35)).unwrap();
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("f.bin");
    let wrong = "00".repeat(32);
    let output = rightsize(&[
        "get",
        &serve.url("ftp", "/f.bin"),
        "-o",
        target.to_str().unwrap(),
        "--tls",
        "--pin-sha256",
        &wrong,
    ]);
    assert!(!output.status.success());
    let text = stderr(&output);
    assert!(text.contains("--pin-sha256 00:00:00"), "{text}");
    assert!(
        text.contains(&serve.fingerprint),
        "the server's fingerprint is named: {text}"
    );
    assert!(!text.contains("panicked"), "{text}");
    assert!(!target.exists());

    // Opportunistic against the system's roots: an error that names the
    // flags, never a transfer in clear.
    let output = rightsize(&[
        "get",
        &serve.url("ftp", "/f.bin"),
        "-o",
        target.to_str().unwrap(),
    ]);
    assert!(!output.status.success());
    let text = stderr(&output);
    for flag in [
        "--cacert",
        "--pin-sha256",
        "--insecure",
        "--no-tls",
        "system's root",
    ] {
        assert!(text.contains(flag), "{flag} not named: {text}");
    }
    assert!(!target.exists());

    // A CA file that is missing, or holds no certificate.
    let output = rightsize(&[
        "get",
        &serve.url("ftp", "/f.bin"),
        "--cacert",
        "/nonexistent/ca.pem",
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("/nonexistent/ca.pem"),
        "{}",
        stderr(&output)
    );
    let not_pem = out.path().join("not.pem");
    std::fs::write(&not_pem, "hello").unwrap();
    let output = rightsize(&[
        "get",
        &serve.url("ftp", "/f.bin"),
        "--cacert",
        not_pem.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("holds no PEM certificate"),
        "{}",
        stderr(&output)
    );

    // A pin that is not one.
    let output = rightsize(&["get", &serve.url("ftp", "/f.bin"), "--pin-sha256", "abc"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("\"abc\""), "{}", stderr(&output));

    // --insecure works and warns.
    let output = rightsize(&[
        "get",
        &serve.url("ftp", "/f.bin"),
        "-o",
        target.to_str().unwrap(),
        "--insecure",
    ]);
    assert_success(&output, None);
    assert!(stderr(&output).contains("anyone on the path can read and change"));
    assert!(target.exists());
}

#[test]
fn tls_required_from_a_server_without_it_quotes_its_answer() {
    let server = pyftpdlib();
    write_public(&files_dir(&server).join("f.bin"), &random_bytes(MIB, 36));
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("f.bin");
    let output = rightsize(&[
        "get",
        &server.url("/f.bin"),
        "-o",
        target.to_str().unwrap(),
        "--tls",
    ]);
    assert!(!output.status.success());
    let text = stderr(&output);
    assert!(text.contains("answered AUTH TLS with \"5"), "{text}");
    assert!(text.contains("--no-tls"), "{text}");
    assert!(!target.exists());
    // ftps:// to a server that speaks clear FTP: the handshake fails.
    let implicit = server.url("/f.bin").replacen("ftp://", "ftps://", 1);
    let output = rightsize(&[
        "get",
        &implicit,
        "-o",
        target.to_str().unwrap(),
        "--timeout",
        "5s",
    ]);
    assert!(!output.status.success());
    let text = stderr(&output);
    assert!(
        text.contains("TLS handshake on the control connection"),
        "{text}"
    );
    assert!(!target.exists());
    // ftps:// and --no-tls contradict each other.
    let output = rightsize(&["get", &implicit, "-o", target.to_str().unwrap(), "--no-tls"]);
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("--no-tls forbids"),
        "{}",
        stderr(&output)
    );
    // Without --tls, the same server is used in clear.
    let output = rightsize(&[
        "get",
        &server.url("/f.bin"),
        "-o",
        target.to_str().unwrap(),
        "--json",
    ]);
    assert_success(&output, Some(&server));
    assert_eq!(json(&output)["tls"]["control"], false);
}

#[test]
fn parallel_streams_go_over_tls_each_way_and_resume_the_session() {
    let serve = Serve::start(&["--tls-self-signed", "127.0.0.1"]);
    let data = random_bytes(6 * MIB + 3, 37);
    std::fs::write(serve.files().join("f.bin"), &data).unwrap();
    let out = tempfile::tempdir().unwrap();
    let p = out.path().join("p.bin");
    let output = rightsize(&[
        "get",
        &serve.url("ftp", "/f.bin"),
        "-o",
        p.to_str().unwrap(),
        "-P",
        "4",
        "--tls",
        "--pin-sha256",
        &serve.fingerprint,
        "--json",
    ]);
    assert_success(&output, None);
    assert!(same_bytes(&p, &data), "get -P 4 over TLS: bytes differ");
    assert_eq!(json(&output)["streams"], 4, "{}", json(&output));
    let tls = &json(&output)["tls"];
    assert_eq!(tls["data"], true, "{tls}");
    assert_eq!(tls["resumed"], true, "every stream resumes: {tls}");
    let auto = out.path().join("auto.bin");
    let output = rightsize(&[
        "get",
        &serve.url("ftp", "/f.bin"),
        "-o",
        auto.to_str().unwrap(),
        "-P",
        "auto",
        "--tls",
        "--pin-sha256",
        &serve.fingerprint,
        "--json",
    ]);
    assert_success(&output, None);
    assert!(
        same_bytes(&auto, &data),
        "get -P auto over TLS: bytes differ"
    );
    assert_eq!(json(&output)["tls"]["data"], true, "{}", json(&output));
    let output = rightsize(&[
        "put",
        p.to_str().unwrap(),
        &serve.url("ftp", "/up4.bin"),
        "-P",
        "4",
        "--tls",
        "--pin-sha256",
        &serve.fingerprint,
    ]);
    assert_success(&output, None);
    assert!(
        same_bytes(&serve.files().join("up4.bin"), &data),
        "put -P 4 over TLS: bytes differ"
    );
    // The memory-to-memory test over two TLS streams, each way.
    let addr = serve.addr.to_string();
    for reverse in [false, true] {
        let mut args = vec![
            "test",
            &addr,
            "-P",
            "2",
            "-n",
            "8M",
            "--tls",
            "--pin-sha256",
            &serve.fingerprint,
            "--json",
        ];
        if reverse {
            args.push("-R");
        }
        let output = rightsize(&args);
        assert_success(&output, None);
        let tls = &json(&output)["transfer"]["tls"];
        assert_eq!(tls["data"], true, "test -P 2 (-R: {reverse}): {tls}");
    }
}

/// A scripted FTPS server on 127.0.0.1 (explicit TLS, with `tls`) that
/// announces `size_bytes` for any file, sends the first `cut_bytes` of
/// `data` over a TLS data connection, cuts that connection's TCP without
/// `close_notify`, and then claims success with a `226`.
fn cutting_server(tls: ServerTls, data: Vec<u8>, cut_bytes: usize) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let Ok((mut control, _)) = listener.accept() else {
            return;
        };
        control
            .set_read_timeout(Some(std::time::Duration::from_secs(20)))
            .unwrap();
        control.write_all(b"220 scripted\r\n").unwrap();
        let mut line = String::new();
        let mut plain = BufReader::new(control.try_clone().unwrap());
        plain.read_line(&mut line).unwrap();
        assert!(line.starts_with("AUTH TLS"), "{line}");
        control.write_all(b"234 go\r\n").unwrap();
        let secured = tls.accept(control).unwrap();
        let mut control = BufReader::new(secured);
        let data_listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let data_port = data_listener.local_addr().unwrap().port();
        loop {
            line.clear();
            if control.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let verb = line
                .split_whitespace()
                .next()
                .unwrap_or("")
                .to_ascii_uppercase();
            let answer = match verb.as_str() {
                "PBSZ" | "PROT" | "TYPE" => "200 ok".to_owned(),
                "USER" => "230 in".to_owned(),
                "FEAT" => "211 no features".to_owned(),
                "SIZE" => format!("213 {}", data.len()),
                "EPSV" => format!("229 Entering Extended Passive Mode (|||{data_port}|)"),
                "QUIT" => "221 bye".to_owned(),
                "RETR" => {
                    control.get_mut().write_all(b"150 here\r\n").unwrap();
                    let (socket, _) = data_listener.accept().unwrap();
                    let mut stream = tls.accept(socket).unwrap();
                    stream.write_all(&data[..cut_bytes]).unwrap();
                    stream.flush().unwrap();
                    stream.socket().shutdown(Shutdown::Both).unwrap();
                    "226 all sent (not really)".to_owned()
                }
                _ => "502 no".to_owned(),
            };
            control
                .get_mut()
                .write_all(format!("{answer}\r\n").as_bytes())
                .unwrap();
        }
    });
    addr
}

#[test]
fn a_tls_data_stream_cut_without_close_notify_fails_and_leaves_no_file() {
    let tls = ServerTls::self_signed(&["127.0.0.1".to_owned()]).unwrap();
    let pin = tls.fingerprint().to_owned();
    let data = random_bytes(4 * MIB, 38);
    let server = cutting_server(tls, data, MIB);
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("f.bin");
    let output = rightsize(&[
        "get",
        &format!("ftp://{server}/f.bin"),
        "-o",
        target.to_str().unwrap(),
        "--tls",
        "--pin-sha256",
        &pin,
        "--timeout",
        "10s",
    ]);
    assert!(!output.status.success(), "{}", stderr(&output));
    let text = stderr(&output);
    assert!(!text.contains("panicked"), "{text}");
    // The data stream, not the handshake, is what failed.
    assert!(!text.contains("handshake"), "{text}");
    assert!(text.contains("read"), "{text}");
    assert!(text.contains("close_notify"), "{text}");
    // The command that resumes keeps the TLS flags.
    let hint = format!(
        "rightsize get -C --tls --pin-sha256 {} ",
        pin.replace(':', "")
    );
    assert!(text.contains(&hint), "{text}");
    assert!(!target.exists(), "a cut download was committed: {text}");
}

#[test]
fn ping_and_test_go_over_tls_as_get_does() {
    let serve = Serve::start(&["--tls-self-signed", "127.0.0.1"]);
    let addr = serve.addr.to_string();
    let output = rightsize(&[
        "ping",
        &addr,
        "-c",
        "2",
        "-i",
        "0.05",
        "--tls",
        "--pin-sha256",
        &serve.fingerprint,
        "--json",
    ]);
    assert_success(&output, None);
    let ping = json(&output);
    assert_eq!(ping["tls"], true, "{ping}");
    assert_eq!(ping["answered"], 2, "{ping}");
    // Without a way to trust the certificate, the opportunistic upgrade
    // fails and says which flags decide, rather than going on in clear.
    let output = rightsize(&["ping", &addr, "-c", "1"]);
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("--pin-sha256"),
        "{}",
        stderr(&output)
    );
    for direction in [&[][..], &["-R"][..]] {
        let output = rightsize(
            &[
                &[
                    "test",
                    &addr,
                    "-n",
                    "20M",
                    "--tls",
                    "--pin-sha256",
                    &serve.fingerprint,
                ][..],
                direction,
                &["--json"][..],
            ]
            .concat(),
        );
        assert_success(&output, None);
        let test = json(&output);
        assert!(
            test["bytes"].as_u64().unwrap_or(0) >= 20 << 20,
            "{direction:?}: {test}"
        );
        assert_eq!(
            test["transfer"]["tls"]["data"], true,
            "{direction:?}: {test}"
        );
    }
    let output = rightsize(&["test", &addr, "-n", "1M", "-k"]);
    assert!(
        stderr(&output).contains("--insecure"),
        "{}",
        stderr(&output)
    );
}
