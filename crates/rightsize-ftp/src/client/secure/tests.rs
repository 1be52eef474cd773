//! The pure parts of client FTPS: which `FEAT` lines offer TLS, the name
//! a certificate is checked for, and how verification is described.

#![allow(clippy::unwrap_used)]

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::PathBuf;

use rightsize_ftp_proto::Reply;
use rightsize_ftp_proto::ReplyParser;

use super::*;

fn reply(wire: &str) -> Reply {
    ReplyParser::new()
        .push(wire.as_bytes())
        .output
        .unwrap()
        .unwrap()
}

fn features(feat: &str) -> Features {
    Features::new(&reply("220 ready\r\n"), Some(&reply(feat)))
}

#[test]
fn feat_offers_tls_as_vsftpd_pyftpdlib_and_rightsize_list_it() {
    // vsftpd 3.0.3 with ssl_enable=YES.
    assert!(offers_tls(&features(
        "211-Features:\r\n AUTH TLS\r\n EPRT\r\n PBSZ\r\n PROT\r\n211 End\r\n"
    )));
    // pyftpdlib's TLS_FTPHandler.
    assert!(offers_tls(&features(
        "211-Features supported:\r\n AUTH SSL\r\n AUTH TLS\r\n PBSZ\r\n211 End FEAT.\r\n"
    )));
    // A list on one line.
    assert!(offers_tls(&features(
        "211-Features:\r\n AUTH TLS;SSL\r\n211 End\r\n"
    )));
    assert!(offers_tls(&features("211-x\r\n auth tls-c\r\n211 End\r\n")));
}

#[test]
fn feat_without_auth_tls_offers_nothing() {
    assert!(!offers_tls(&features(
        "211-Features:\r\n EPSV\r\n SIZE\r\n211 End\r\n"
    )));
    assert!(!offers_tls(&features("211-x\r\n AUTH SSL\r\n211 End\r\n")));
    // A line that only mentions TLS after another verb.
    assert!(!offers_tls(&features("211-x\r\n PROT TLS\r\n211 End\r\n")));
    // FEAT refused before login.
    assert!(!offers_tls(&features(
        "530 Please login with USER and PASS.\r\n"
    )));
}

#[test]
fn certificates_are_checked_for_the_host_without_brackets() {
    assert_eq!(
        tls_name(&Host::Name("ftp.example.org".into())),
        "ftp.example.org"
    );
    assert_eq!(tls_name(&Host::Ipv4(Ipv4Addr::LOCALHOST)), "127.0.0.1");
    assert_eq!(tls_name(&Host::Ipv6(Ipv6Addr::LOCALHOST)), "::1");
}

#[test]
fn verification_is_described_with_what_was_given() {
    assert_eq!(
        describe(&Verify::CaFile(PathBuf::from("/tmp/ca.pem"))),
        "against --cacert \"/tmp/ca.pem\""
    );
    let pin = describe(&Verify::Pin([0xAB; 32]));
    assert!(pin.starts_with("against --pin-sha256 AB:AB:"), "{pin}");
    assert_eq!(pin.len(), "against --pin-sha256 ".len() + 95);
    assert!(describe(&Verify::Insecure).contains("--insecure"));
    assert!(describe(&Verify::SystemRoots).contains("system"));
}

#[test]
fn the_library_defaults_to_clear_and_system_roots() {
    let options = TlsOptions::default();
    assert_eq!(options.mode, TlsMode::Off);
    assert_eq!(options.verify, Verify::SystemRoots);
}

/// A server that answers with `script` at once and records what it got.
struct Scripted {
    script: std::io::Cursor<Vec<u8>>,
    written: Vec<u8>,
}

impl Read for Scripted {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.script.read(buf)? {
            0 => Err(io::ErrorKind::WouldBlock.into()),
            n => Ok(n),
        }
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
struct Warnings(Vec<String>);

impl Observer for Warnings {
    fn warning(&mut self, message: &str) {
        self.0.push(message.to_owned());
    }
}

/// Runs [`ask_for_tls`] against `script`: its outcome, what the client
/// wrote, and its warnings.
fn ask(mode: TlsMode, script: &str) -> (Result<bool, ClientError>, String, Vec<String>) {
    let stream = Scripted {
        script: std::io::Cursor::new(script.as_bytes().to_vec()),
        written: Vec::new(),
    };
    let server: SocketAddr = "127.0.0.1:2121".parse().unwrap();
    let mut control = Control::new(stream, server, std::time::Duration::from_secs(1));
    let mut warnings = Warnings::default();
    let greeting = reply("220 ready\r\n");
    let outcome = ask_for_tls(&mut control, &greeting, mode, &mut warnings);
    let written = String::from_utf8(control.stream().written.clone()).unwrap();
    (outcome, written, warnings.0)
}

const VSFTPD_FEAT: &str =
    "211-Features:\r\n AUTH TLS\r\n EPSV\r\n PBSZ\r\n PROT\r\n SIZE\r\n211 End\r\n";

#[test]
fn auto_asks_feat_first_and_upgrades_when_auth_tls_is_listed() {
    let script = format!("{VSFTPD_FEAT}234 Proceed with negotiation.\r\n");
    let (outcome, written, warnings) = ask(TlsMode::Auto, &script);
    assert!(outcome.unwrap());
    assert_eq!(written, "FEAT\r\nAUTH TLS\r\n");
    assert!(warnings.is_empty());
}

#[test]
fn auto_stays_in_clear_when_feat_lists_no_tls_or_is_refused() {
    let (outcome, written, _) = ask(TlsMode::Auto, "211-Features:\r\n EPSV\r\n211 End\r\n");
    assert!(!outcome.unwrap());
    assert_eq!(written, "FEAT\r\n", "AUTH is not sent unasked");
    let (outcome, _, _) = ask(TlsMode::Auto, "530 Please login with USER and PASS.\r\n");
    assert!(!outcome.unwrap());
}

#[test]
fn auto_warns_when_a_listed_auth_tls_is_refused() {
    let script = format!("{VSFTPD_FEAT}534 Policy requires SSL.\r\n");
    let (outcome, _, warnings) = ask(TlsMode::Auto, &script);
    assert!(!outcome.unwrap());
    assert!(
        warnings[0].contains("534 Policy requires SSL."),
        "{warnings:?}"
    );
}

#[test]
fn require_sends_auth_at_once_and_a_refusal_is_an_error_quoting_it() {
    let (outcome, written, _) = ask(TlsMode::Require, "234 AUTH TLS successful\r\n");
    assert!(outcome.unwrap());
    assert_eq!(written, "AUTH TLS\r\n");
    let (outcome, _, _) = ask(TlsMode::Require, "500 Unknown command.\r\n");
    let text = outcome.unwrap_err().to_string();
    assert!(
        text.contains("answered AUTH TLS with \"500 Unknown command.\""),
        "{text}"
    );
    assert!(text.contains("--no-tls"), "{text}");
}

#[test]
fn off_sends_nothing() {
    let (outcome, written, _) = ask(TlsMode::Off, "");
    assert!(!outcome.unwrap());
    assert!(written.is_empty());
}
