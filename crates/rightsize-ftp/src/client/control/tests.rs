//! Reply sequencing against scripted servers, no sockets: the replies
//! real servers sent (vsftpd 3.0.3, pyftpdlib 1.5.7, globus-gridftp-server
//! 13.24) fed back byte by byte, and the commands the client wrote.

#![allow(clippy::unwrap_used)]

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::time::Duration;

use rightsize_ftp_proto::checksum::Algorithm;
use rightsize_ftp_proto::url::FtpUrl;

use super::*;
use crate::client::data::{DataMode, passive_port};
use crate::client::session::Session;

/// A server that answers with `script`, `chunk` bytes per read, then times
/// out (`WouldBlock`, as a socket with `SO_RCVTIMEO` does) or closes.
#[derive(Debug)]
struct Scripted {
    script: Vec<u8>,
    at: usize,
    chunk: usize,
    closes: bool,
    written: Vec<u8>,
}

impl Scripted {
    fn new(script: &str) -> Scripted {
        Scripted {
            script: script.as_bytes().to_vec(),
            at: 0,
            chunk: 1,
            closes: false,
            written: Vec::new(),
        }
    }

    fn closing(mut self) -> Scripted {
        self.closes = true;
        self
    }
}

impl Read for Scripted {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let rest = &self.script[self.at..];
        if rest.is_empty() {
            return if self.closes {
                Ok(0)
            } else {
                Err(io::ErrorKind::WouldBlock.into())
            };
        }
        let n = rest.len().min(self.chunk).min(buf.len());
        buf[..n].copy_from_slice(&rest[..n]);
        self.at += n;
        Ok(n)
    }
}

impl Write for Scripted {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.written.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[derive(Default)]
struct Log {
    protocol: Vec<String>,
    warnings: Vec<String>,
}

impl Observer for Log {
    fn protocol(&mut self, line: &str) {
        self.protocol.push(line.to_owned());
    }
    fn warning(&mut self, message: &str) {
        self.warnings.push(message.to_owned());
    }
}

fn server() -> SocketAddr {
    "127.0.0.1:2121".parse().unwrap()
}

fn control(script: Scripted) -> Control<Scripted> {
    Control::new(script, server(), Duration::from_secs(60))
}

fn written(session: &Session<Scripted>) -> String {
    String::from_utf8(session.control.stream().written.clone()).unwrap()
}

const VSFTPD_LOGIN: &str = "220 (vsFTPd 3.0.3)\r\n230 Login successful.\r\n\
    211-Features:\r\n EPRT\r\n EPSV\r\n MDTM\r\n PASV\r\n REST STREAM\r\n SIZE\r\n TVFS\r\n211 End\r\n\
    200 Switching to Binary mode.\r\n";

#[test]
fn vsftpd_anonymous_login_ends_at_230_after_user() {
    let url = FtpUrl::parse("ftp://127.0.0.1:2121/f").unwrap();
    let mut log = Log::default();
    let session = Session::start(control(Scripted::new(VSFTPD_LOGIN)), &url, &mut log).unwrap();
    assert_eq!(written(&session), "USER anonymous\r\nFEAT\r\nTYPE I\r\n");
    assert!(session.features.has("EPSV"));
    assert_eq!(session.features.checksum(), None);
    assert_eq!(log.protocol[0], "< 220 (vsFTPd 3.0.3)");
}

#[test]
fn pyftpdlib_login_sends_the_password_and_hides_it_in_the_log() {
    let script = "220 pyftpdlib 1.5.7 ready.\r\n331 Username ok, send password.\r\n\
        230 Login successful.\r\n500 Command \"FEAT\" not understood.\r\n200 Type set to: Binary.\r\n";
    let url = FtpUrl::parse("ftp://bob:s3cret@127.0.0.1:2121/f").unwrap();
    let mut log = Log::default();
    let session = Session::start(control(Scripted::new(script)), &url, &mut log).unwrap();
    assert_eq!(
        written(&session),
        "USER bob\r\nPASS s3cret\r\nFEAT\r\nTYPE I\r\n"
    );
    assert!(log.protocol.contains(&"> PASS ****".to_owned()));
    assert!(!log.protocol.iter().any(|l| l.contains("s3cret")));
    // FEAT refused: nothing is assumed.
    assert!(!session.features.has("SIZE"));
}

#[test]
fn a_refused_login_names_the_server_user_and_reply() {
    let script = "220 ready\r\n331 Username ok, send password.\r\n530 Authentication failed.\r\n";
    let url = FtpUrl::parse("ftp://bob:wrong@127.0.0.1:2121/f").unwrap();
    let err = Session::start(control(Scripted::new(script)), &url, &mut ()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "127.0.0.1:2121 refused the login as \"bob\": 530 Authentication failed."
    );
}

#[test]
fn a_120_greeting_is_followed_by_220_and_a_421_is_an_error() {
    let script = "120 Service ready in 1 minute\r\n220-Welcome\r\n220 ready\r\n";
    let mut c = control(Scripted::new(script));
    let reply = greeting(&mut c, &mut ()).unwrap();
    assert_eq!(reply.lines(), ["Welcome", "ready"]);

    let mut c = control(Scripted::new("421 Too many connections\r\n"));
    let err = greeting(&mut c, &mut ()).unwrap_err();
    assert!(
        err.to_string().contains("421 Too many connections"),
        "{err}"
    );
}

#[test]
fn globus_features_choose_sha256_after_its_login() {
    let script = "220 vm GridFTP Server 13.24 (gcc64, 1653033972-1) [Grid Community Toolkit 6.2] ready.\r\n\
        331 Password required for anonymous.\r\n230 User anonymous logged in.\r\n\
        211-Extensions supported\r\n CKSM MD5:10;ADLER32:10;SHA1:10;SHA256:11;SHA512:12;\r\n SIZE\r\n211 End.\r\n\
        200 Type set to I.\r\n";
    let url = FtpUrl::parse("ftp://127.0.0.1:2121//tmp/f").unwrap();
    let session = Session::start(control(Scripted::new(script)), &url, &mut ()).unwrap();
    assert_eq!(
        written(&session),
        "USER anonymous\r\nPASS anonymous@\r\nFEAT\r\nTYPE I\r\n"
    );
    assert_eq!(session.features.checksum(), Some(Algorithm::Sha256));
    assert!(session.features.sbuf());
}

#[test]
fn epsv_refused_falls_back_to_pasv_and_ignores_its_address() {
    let script = "500 EPSV not understood\r\n227 Entering Passive Mode (10,0,0,1,4,1).\r\n";
    let mut c = control(Scripted::new(script));
    let mut log = Log::default();
    assert_eq!(
        passive_port(&mut c, &mut log).unwrap(),
        (DataMode::Pasv, 1025)
    );
    assert_eq!(c.stream().written, b"EPSV\r\nPASV\r\n");
    assert_eq!(
        log.warnings,
        ["PASV reply names 10.0.0.1; connecting to the control peer 127.0.0.1 instead"]
    );
}

#[test]
fn epsv_answer_as_vsftpd_sends_it() {
    let mut c = control(Scripted::new(
        "229 Entering Extended Passive Mode (|||40296|)\r\n",
    ));
    assert_eq!(
        passive_port(&mut c, &mut ()).unwrap(),
        (DataMode::Epsv, 40296)
    );
    let mut c = control(Scripted::new("229 Entering Extended Passive Mode\r\n"));
    let err = passive_port(&mut c, &mut ()).unwrap_err();
    assert!(err.to_string().contains("no (|||port|)"), "{err}");
}

#[test]
fn silence_is_a_timeout_and_a_close_is_an_error() {
    let mut c = control(Scripted::new("220-partial\r\n"));
    let err = greeting(&mut c, &mut ()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "127.0.0.1:2121 sent no reply to the greeting within 60s"
    );
    let mut c = control(Scripted::new("").closing());
    let err = c
        .command(&rightsize_ftp_proto::Command::Noop, &mut ())
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "127.0.0.1:2121 closed the control connection instead of answering NOOP"
    );
}

#[test]
fn replies_in_one_read_are_returned_one_at_a_time() {
    let mut script = Scripted::new("150 Opening\r\n226 Done\r\n");
    script.chunk = usize::MAX;
    let mut c = control(script);
    assert_eq!(c.reply("RETR", &mut ()).unwrap().code(), 150);
    assert_eq!(c.reply("RETR", &mut ()).unwrap().code(), 226);
}

#[test]
fn garbage_is_a_bad_reply() {
    let mut c = control(Scripted::new("HTTP/1.1 400 Bad Request\r\n"));
    let err = greeting(&mut c, &mut ()).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("127.0.0.1:2121 answered the greeting with a malformed reply"),
        "{err}"
    );
}
