#![allow(clippy::unwrap_used)]

use super::*;

fn full() -> PeerInfo {
    PeerInfo {
        busy_time_us: Some(1_200_000),
        rwnd_limited_us: Some(300),
        sndbuf_limited_us: Some(0),
        delivery_rate_bps: Some(9_400_000_000),
        min_rtt_us: Some(20_100),
        rtt_us: Some(21_000),
        bytes_retrans: Some(2896),
        total_retrans_segs: Some(2),
        pace_bps: Some(210_000_000),
    }
}

#[test]
fn encode_writes_every_known_key_in_order() {
    assert_eq!(
        encode_facts(&full()),
        "busy=1200000;rwnd=300;sndbuf=0;rate=9400000000;minrtt=20100;rtt=21000;bretrans=2896;retrans=2;pace=210000000"
    );
    assert_eq!(encode_facts(&PeerInfo::default()), "");
    let some = PeerInfo {
        rtt_us: Some(5),
        ..PeerInfo::default()
    };
    assert_eq!(encode_facts(&some), "rtt=5");
}

#[test]
fn parse_reads_back_what_encode_writes() {
    for info in [full(), PeerInfo::default()] {
        assert_eq!(parse_facts(encode_facts(&info).as_bytes()), Ok(info));
    }
}

#[test]
fn parse_takes_any_order_a_trailing_semicolon_and_any_key_case() {
    let info = parse_facts(b"RTT=7;busy=1;").unwrap();
    assert_eq!(info.rtt_us, Some(7));
    assert_eq!(info.busy_time_us, Some(1));
    assert_eq!(info.min_rtt_us, None);
    assert_eq!(parse_facts(b";"), Ok(PeerInfo::default()));
    assert_eq!(parse_facts(b""), Ok(PeerInfo::default()));
}

#[test]
fn unknown_keys_are_skipped_whatever_their_value() {
    let info = parse_facts(b"cc=bbr;busy=1;x.y=;future=-3").unwrap();
    assert_eq!(
        info,
        PeerInfo {
            busy_time_us: Some(1),
            ..PeerInfo::default()
        }
    );
}

#[test]
fn values_at_the_edge_of_their_field() {
    let info = parse_facts(b"rate=18446744073709551615;rtt=4294967295;retrans=0").unwrap();
    assert_eq!(info.delivery_rate_bps, Some(u64::MAX));
    assert_eq!(info.rtt_us, Some(u32::MAX));
    assert_eq!(info.total_retrans_segs, Some(0));
    assert_eq!(parse_facts(b"busy=007").unwrap().busy_time_us, Some(7));
}

#[test]
fn errors_name_the_offending_fact() {
    let cases: [(&[u8], FactsError); 10] = [
        (
            b"busy=1;BUSY=2",
            FactsError::DuplicateKey {
                piece: "BUSY=2".into(),
            },
        ),
        (
            b"x=1;x=2",
            FactsError::DuplicateKey {
                piece: "x=2".into(),
            },
        ),
        (
            b"rate=1e9",
            FactsError::NotNumber {
                piece: "rate=1e9".into(),
            },
        ),
        (
            b"busy=",
            FactsError::NotNumber {
                piece: "busy=".into(),
            },
        ),
        (
            b"busy=-1",
            FactsError::NotNumber {
                piece: "busy=-1".into(),
            },
        ),
        (
            b"minrtt=4294967296",
            FactsError::Overflow {
                piece: "minrtt=4294967296".into(),
                max: u64::from(u32::MAX),
            },
        ),
        (
            b"busy=18446744073709551616",
            FactsError::Overflow {
                piece: "busy=18446744073709551616".into(),
                max: u64::MAX,
            },
        ),
        (b"=3", FactsError::EmptyKey { piece: "=3".into() }),
        (
            b"busy",
            FactsError::NotPair {
                piece: "busy".into(),
            },
        ),
        (
            b"busy=1 ;rtt=2",
            FactsError::NotPrintable {
                piece: "busy=1 ".into(),
            },
        ),
    ];
    for (input, want) in cases {
        assert_eq!(parse_facts(input), Err(want), "{}", input.escape_ascii());
    }
    // Empty pieces are allowed only as the one trailing ';'.
    for input in [&b";busy=1"[..], b"busy=1;;", b"busy=1;;rtt=2", b";;"] {
        assert!(
            matches!(parse_facts(input), Err(FactsError::NotPair { .. })),
            "{}",
            input.escape_ascii()
        );
    }
}

#[test]
fn at_most_max_facts_pairs() {
    let list = |n: usize| {
        (0..n)
            .map(|i| format!("k{i}=1"))
            .collect::<Vec<_>>()
            .join(";")
    };
    assert!(parse_facts(list(MAX_FACTS).as_bytes()).is_ok());
    assert!(matches!(
        parse_facts(list(MAX_FACTS + 1).as_bytes()),
        Err(FactsError::TooMany { .. })
    ));
}

#[test]
fn quoted_pieces_are_escaped_and_bounded() {
    let long = format!("busy={}", "9".repeat(5000));
    let err = parse_facts(long.as_bytes()).unwrap_err();
    assert!(err.piece().len() < 80, "{err}");
    assert!(
        err.to_string()
            .ends_with("...\" is above 18446744073709551615")
    );
    let err = parse_facts(b"busy=1\r\n").unwrap_err();
    assert_eq!(err.piece(), "busy=1\\r\\n");
    assert!(!err.to_string().contains(['\r', '\n']));
}
