//! FTPS commands and the login they guard.

use super::*;
use crate::session::SessionConfig;
use crate::session::tests::{Client, codes};

fn explicit(anonymous_in_clear: bool) -> Client {
    Client::with(SessionConfig {
        tls: TlsPolicy::Explicit { anonymous_in_clear },
        ..SessionConfig::default()
    })
}

fn feat(client: &mut Client) -> String {
    match client.send("FEAT").as_slice() {
        [Output::Reply(r)] => String::from_utf8_lossy(&r.encode()).into_owned(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn without_a_certificate_tls_is_not_offered() {
    let mut c = Client::new();
    assert!(!feat(&mut c).contains("AUTH TLS"));
    assert_eq!(c.codes("AUTH TLS"), [502]);
    assert_eq!(c.codes("PBSZ 0"), [503]);
    assert_eq!(c.codes("USER alice"), [331], "logins in clear as before");
}

#[test]
fn auth_tls_starts_the_handshake_after_its_234_and_resets_a_user_sent_in_clear() {
    let mut c = explicit(false);
    assert!(feat(&mut c).contains(" AUTH TLS\r\n PBSZ\r\n PROT\r\n"));
    assert_eq!(c.codes("USER anonymous"), [530], "no login in clear");
    assert!(!c.session.control_protected());
    let out = c.send("AUTH TLS");
    assert_eq!(codes(&out), [234]);
    assert_eq!(out.last(), Some(&Output::StartTls), "after the 234");
    assert!(c.session.control_protected());
    assert_eq!(c.codes("AUTH TLS"), [503], "once");
    assert_eq!(c.codes("USER alice"), [331]);
    assert_eq!(c.codes("PASS secret"), [230]);
}

#[test]
fn a_password_never_crosses_in_clear_but_anonymous_may_when_allowed() {
    let mut strict = explicit(false);
    assert_eq!(strict.codes("USER alice"), [530]);
    assert_eq!(strict.codes("PASS secret"), [503], "no USER was taken");
    let mut relaxed = explicit(true);
    assert_eq!(relaxed.codes("USER alice"), [530]);
    assert_eq!(relaxed.codes("USER anonymous"), [331]);
    assert_eq!(relaxed.codes("PASS x@y"), [230]);
    assert_eq!(
        relaxed.codes("AUTH TLS"),
        [503],
        "AUTH comes before the login"
    );
}

#[test]
fn prot_p_after_pbsz_protects_the_data_connections() {
    let mut c = explicit(false);
    assert_eq!(c.codes("PROT P"), [503], "before AUTH");
    c.send("AUTH TLS");
    assert_eq!(c.codes("PROT P"), [503], "before PBSZ");
    assert_eq!(c.codes("PBSZ 0"), [200]);
    assert_eq!(c.codes("PROT S"), [536]);
    assert_eq!(c.codes("PROT P"), [200]);
    c.send("USER alice");
    c.send("PASS secret");
    c.send("PASV");
    assert!(c.transfer("RETR /pub/a.bin").private);
    c.done(crate::session::TransferOutcome::Complete { bytes: 0 });
    assert_eq!(c.codes("PROT C"), [200]);
    c.send("PASV");
    assert!(!c.transfer("RETR /pub/a.bin").private);
}

#[test]
fn the_older_mechanisms_protect_data_too_and_others_are_refused_by_name() {
    let mut c = explicit(false);
    let out = c.send("AUTH KERBEROS_V4");
    let [Output::Reply(r)] = out.as_slice() else {
        panic!("{out:?}")
    };
    assert_eq!(r.code(), 504);
    assert!(String::from_utf8_lossy(&r.encode()).contains("KERBEROS_V4"));
    assert_eq!(c.codes("AUTH SSL"), [234]);
    c.send("USER alice");
    c.send("PASS secret");
    c.send("PASV");
    assert!(c.transfer("RETR /pub/a.bin").private);
}

#[test]
fn ccc_is_refused_and_implicit_ftps_starts_protected() {
    let mut c = explicit(false);
    assert_eq!(c.codes("CCC"), [533]);
    c.send("AUTH TLS");
    assert_eq!(c.codes("CCC"), [534]);
    let mut implicit = Client::with(SessionConfig {
        tls: TlsPolicy::Implicit,
        ..SessionConfig::default()
    });
    assert!(implicit.session.control_protected());
    assert_eq!(implicit.codes("USER alice"), [331]);
    assert_eq!(implicit.codes("AUTH TLS"), [503]);
}

#[test]
fn mode_e_streams_are_protected_under_prot_p_too() {
    let mut c = explicit(false);
    c.send("AUTH TLS");
    c.send("PBSZ 0");
    c.send("PROT P");
    c.send("USER alice");
    c.send("PASS secret");
    assert_eq!(c.codes("MODE E"), [200]);
    c.send("PORT 198,18,0,2,200,10");
    let plan = c.transfer("RETR /pub/a.bin");
    assert!(plan.extended.is_some() && plan.private, "{plan:?}");
}
