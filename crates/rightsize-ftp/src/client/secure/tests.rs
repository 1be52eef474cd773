//! The pure parts of client FTPS: which `FEAT` lines offer TLS, the name
//! a certificate is checked for, and how verification is described.

#![allow(clippy::unwrap_used)]

use std::net::{Ipv4Addr, Ipv6Addr};
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
