//! Tests for `addr.rs`: real client and server forms, hostile input, and
//! format/parse round trips.

#![allow(clippy::unwrap_used)]

use super::*;
use proptest::prelude::*;

fn v4(a: [u8; 4], port: u16) -> SocketAddrV4 {
    SocketAddrV4::new(Ipv4Addr::from(a), port)
}

#[test]
fn port_argument_as_globus_url_copy_sends_it() {
    assert_eq!(
        parse_port_arg("192,168,1,2,19,137"),
        Ok(v4([192, 168, 1, 2], 5001))
    );
    assert_eq!(
        format_port_arg(v4([10, 0, 0, 1], 65535)),
        "10,0,0,1,255,255"
    );
}

#[test]
fn port_argument_refuses_bad_input() {
    assert!(matches!(
        parse_port_arg("1,2,3,4,5"),
        Err(AddrError::WrongCount { found: 5, .. })
    ));
    assert!(matches!(
        parse_port_arg("1,2,3,4,5,6,7"),
        Err(AddrError::WrongCount { found: 7, .. })
    ));
    assert!(matches!(
        parse_port_arg(""),
        Err(AddrError::WrongCount { found: 1, .. })
    ));
    let err = parse_port_arg("1,2,3,256,5,6").unwrap_err();
    assert_eq!(
        err.to_string(),
        "\"256\" is not a number 0-255 in \"1,2,3,256,5,6\""
    );
    assert!(matches!(
        parse_port_arg("1,2,3,4,0,0"),
        Err(AddrError::PortZero { .. })
    ));
    assert!(parse_port_arg("1,2,3,4,5,-6").is_err());
    assert!(parse_port_arg("1,2,3,4,5,+6").is_err());
    assert!(parse_port_arg("1,2,3,4, 5,6").is_err());
    assert!(parse_port_arg("1,2,3,4,5,0006").is_err());
    assert!(parse_port_arg("1,2,3,4,5,99999999999999999999").is_err());
}

#[test]
fn pasv_reply_round_trips() {
    let a = v4([127, 0, 0, 1], 40000);
    let r = pasv_reply(a);
    assert_eq!(
        r.encode(),
        b"227 Entering Passive Mode (127,0,0,1,156,64).\r\n"
    );
    assert_eq!(parse_pasv_reply(&r), Ok(a));
}

#[test]
fn pasv_reply_text_variants_of_real_servers() {
    let a = v4([10, 1, 2, 3], 1025);
    for text in [
        "Entering Passive Mode (10,1,2,3,4,1)",
        "Entering Passive Mode (10,1,2,3,4,1).",
        "Entering Passive Mode 10,1,2,3,4,1",
        "=10,1,2,3,4,1",
        "Entering Passive Mode (10,1,2,3,4,1,)",
        "Passive mode (v2 1234,5) ok (10,1,2,3,4,1)",
    ] {
        assert_eq!(find_pasv_address(text), Ok(a), "{text}");
    }
}

#[test]
fn pasv_reply_refuses_bad_replies() {
    assert!(matches!(
        find_pasv_address("Entering Passive Mode"),
        Err(AddrError::NoPasvAddress { .. })
    ));
    assert!(matches!(
        find_pasv_address("(10,1,2,3,4)"),
        Err(AddrError::NoPasvAddress { .. })
    ));
    assert!(matches!(
        find_pasv_address("(300,1,2,3,4,1)"),
        Err(AddrError::NoPasvAddress { .. })
    ));
    assert!(matches!(
        find_pasv_address("(10,1,2,3,0,0)"),
        Err(AddrError::PortZero { .. })
    ));
    let wrong = Reply::new(500, "Illegal PORT command.").unwrap();
    assert!(matches!(
        parse_pasv_reply(&wrong),
        Err(AddrError::WrongReplyCode {
            expected: 227,
            got: 500,
            ..
        })
    ));
}

#[test]
fn eprt_ipv4_and_ipv6_as_curl_sends_them() {
    assert_eq!(
        parse_eprt_arg("|1|132.235.1.2|6275|"),
        Ok(SocketAddr::V4(v4([132, 235, 1, 2], 6275)))
    );
    let v6: SocketAddr = "[1080::8:800:200c:417a]:5282".parse().unwrap();
    assert_eq!(parse_eprt_arg("|2|1080::8:800:200C:417A|5282|"), Ok(v6));
    assert_eq!(format_eprt_arg(v6), "|2|1080::8:800:200c:417a|5282|");
    assert_eq!(
        format_eprt_arg("127.0.0.1:21".parse().unwrap()),
        "|1|127.0.0.1|21|"
    );
}

#[test]
fn eprt_accepts_any_delimiter_in_range() {
    assert_eq!(
        parse_eprt_arg("!1!10.0.0.1!2000!"),
        Ok(SocketAddr::V4(v4([10, 0, 0, 1], 2000)))
    );
    assert!(parse_eprt_arg("~2~::1~2000~").is_ok());
    assert!(matches!(
        parse_eprt_arg(" 1 10.0.0.1 2000 "),
        Err(AddrError::BadDelimiter { .. })
    ));
    assert!(matches!(
        parse_eprt_arg("\u{e9}1\u{e9}10.0.0.1\u{e9}2000\u{e9}"),
        Err(AddrError::BadDelimiter { .. })
    ));
}

#[test]
fn eprt_refuses_bad_input() {
    assert!(matches!(
        parse_eprt_arg(""),
        Err(AddrError::BadExtendedForm { .. })
    ));
    assert!(matches!(
        parse_eprt_arg("|1|10.0.0.1|2000"),
        Err(AddrError::BadExtendedForm { .. })
    ));
    assert!(matches!(
        parse_eprt_arg("|1|10.0.0.1|2000|x"),
        Err(AddrError::BadExtendedForm { .. })
    ));
    assert!(matches!(
        parse_eprt_arg("|x|10.0.0.1|2000|"),
        Err(AddrError::BadExtendedForm { .. })
    ));
    assert!(matches!(
        parse_eprt_arg("|3|10.0.0.1|2000|"),
        Err(AddrError::UnsupportedProtocol { protocol: 3, .. })
    ));
    assert!(matches!(
        parse_eprt_arg("|1|::1|2000|"),
        Err(AddrError::BadAddress { version: 4, .. })
    ));
    assert!(matches!(
        parse_eprt_arg("|2|10.0.0.1|2000|"),
        Err(AddrError::BadAddress { version: 6, .. })
    ));
    assert!(matches!(
        parse_eprt_arg("|1|010.0.0.1|2000|"),
        Err(AddrError::BadAddress { .. })
    ));
    assert!(matches!(
        parse_eprt_arg("|2|fe80::1%eth0|2000|"),
        Err(AddrError::BadAddress { .. })
    ));
    assert!(matches!(
        parse_eprt_arg("|1|10.0.0.1|0|"),
        Err(AddrError::PortZero { .. })
    ));
    assert!(matches!(
        parse_eprt_arg("|1|10.0.0.1|65536|"),
        Err(AddrError::BadPort { .. })
    ));
    assert!(matches!(
        parse_eprt_arg("|1|10.0.0.1||"),
        Err(AddrError::BadPort { .. })
    ));
    let err = parse_eprt_arg("|1|1.2.3|80|").unwrap_err();
    assert_eq!(
        err.to_string(),
        "\"1.2.3\" is not an IPv4 address in \"|1|1.2.3|80|\""
    );
}

#[test]
fn epsv_reply_round_trips_and_tolerates_variants() {
    let r = epsv_reply(6446);
    assert_eq!(
        r.encode(),
        b"229 Entering Extended Passive Mode (|||6446|)\r\n"
    );
    assert_eq!(parse_epsv_reply(&r), Ok(6446));
    assert_eq!(find_epsv_port("Extended Passive (!!!1024!)."), Ok(1024));
    assert_eq!(find_epsv_port("EPSV ok (|2|::1|1024|)"), Ok(1024));
    assert_eq!(find_epsv_port("note (x) then (|||1025|)"), Ok(1025));
}

#[test]
fn epsv_reply_refuses_bad_replies() {
    assert!(matches!(
        find_epsv_port("Entering Extended Passive Mode"),
        Err(AddrError::NoEpsvPort { .. })
    ));
    assert!(matches!(
        find_epsv_port("(|||6446|"),
        Err(AddrError::NoEpsvPort { .. })
    ));
    assert!(matches!(
        find_epsv_port("(|||0|)"),
        Err(AddrError::PortZero { .. })
    ));
    assert!(matches!(
        find_epsv_port("(|||70000|)"),
        Err(AddrError::BadPort { .. })
    ));
    assert!(matches!(
        find_epsv_port("(||6446|)"),
        Err(AddrError::NoEpsvPort { .. })
    ));
    let wrong = Reply::new(227, "(1,2,3,4,5,6)").unwrap();
    assert!(matches!(
        parse_epsv_reply(&wrong),
        Err(AddrError::WrongReplyCode { .. })
    ));
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 2_000,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn port_and_eprt_round_trip(ip in any::<[u8; 4]>(), ip6 in any::<[u8; 16]>(), port in 1u16..) {
        let a = v4(ip, port);
        prop_assert_eq!(parse_port_arg(&format_port_arg(a)), Ok(a));
        prop_assert_eq!(find_pasv_address(&pasv_reply(a).text()), Ok(a));
        let a4 = SocketAddr::V4(a);
        prop_assert_eq!(parse_eprt_arg(&format_eprt_arg(a4)), Ok(a4));
        let a6 = SocketAddr::V6(SocketAddrV6::new(Ipv6Addr::from(ip6), port, 0, 0));
        prop_assert_eq!(parse_eprt_arg(&format_eprt_arg(a6)), Ok(a6));
        prop_assert_eq!(find_epsv_port(&epsv_reply(port).text()), Ok(port));
    }

    #[test]
    fn arbitrary_text_never_panics(s in "[0-9,|()!a-z.: \u{e9}]{0,40}") {
        let _ = parse_port_arg(&s);
        let _ = parse_eprt_arg(&s);
        if let Ok(a) = find_pasv_address(&s) {
            prop_assert!(a.port() != 0);
        }
        if let Ok(p) = find_epsv_port(&s) {
            prop_assert!(p != 0);
        }
    }
}
