//! Property tests for the RIGHTSIZE extension's codec: facts and notices
//! round-trip for every value, and no input makes their parsers panic or
//! write an error that would break a reply line. (The `RINF` and `OPTS
//! RIGHTSIZE` commands are in `command/proptests.rs` with the others.)

#![allow(clippy::unwrap_used)]

use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;

use crate::facts::{FACT_KEYS, MAX_FACTS, encode_facts, parse_facts};
use crate::line::{LineEvent, LineReader};
use crate::notice::{NOTICE_PREFIX, Notice};
use rightsize_tune::PeerInfo;

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Any [`PeerInfo`], each field present or not, over its whole range.
pub(crate) fn peer_info() -> impl Strategy<Value = PeerInfo> {
    (
        (
            option::of(any::<u64>()),
            option::of(any::<u64>()),
            option::of(any::<u64>()),
            option::of(any::<u64>()),
        ),
        (
            option::of(any::<u32>()),
            option::of(any::<u32>()),
            option::of(any::<u64>()),
            option::of(any::<u32>()),
        ),
    )
        .prop_map(
            |((busy, rwnd, sndbuf, rate), (minrtt, rtt, bretrans, retrans))| PeerInfo {
                busy_time_us: busy,
                rwnd_limited_us: rwnd,
                sndbuf_limited_us: sndbuf,
                delivery_rate_bps: rate,
                min_rtt_us: minrtt,
                rtt_us: rtt,
                bytes_retrans: bretrans,
                total_retrans_segs: retrans,
                pace_bps: None,
            },
        )
}

/// Fact-shaped bytes: known and unknown keys in random case, numbers near
/// the field limits, and hostile pieces, joined by `;` or not.
fn fact_list() -> impl Strategy<Value = Vec<u8>> {
    const OTHER_KEYS: &[&str] = &["", "x", "cc", "BUSY", "Rtt", "a=b", " ", "é"];
    const VALUES: &[&str] = &[
        "",
        "0",
        "-1",
        "1e3",
        "4294967295",
        "4294967296",
        "18446744073709551615",
        "18446744073709551616",
        " 5",
        "\r\n",
        "x",
    ];
    let key = prop_oneof![
        3 => proptest::sample::select(&FACT_KEYS[..]),
        1 => proptest::sample::select(OTHER_KEYS),
    ];
    let value = prop_oneof![
        3 => any::<u64>().prop_map(|n| n.to_string()),
        1 => proptest::sample::select(VALUES).prop_map(str::to_owned),
    ];
    let sep = proptest::sample::select(&[";", ";", ";", "", ";;", "="][..]);
    (
        vec((key, any::<bool>(), value, sep), 0..MAX_FACTS + 3),
        any::<bool>(),
    )
        .prop_map(|(facts, trailing)| {
            let mut out = String::new();
            for (i, (key, has_eq, value, sep)) in facts.iter().enumerate() {
                if i > 0 {
                    out.push_str(sep);
                }
                out.push_str(key);
                if *has_eq {
                    out.push('=');
                }
                out.push_str(value);
            }
            if trailing {
                out.push(';');
            }
            out.into_bytes()
        })
}

/// An error message fits on one reply line and stays short.
fn assert_safe_message(message: &str) -> Result<(), TestCaseError> {
    prop_assert!(!message.contains(['\r', '\n']), "{message:?}");
    prop_assert!(message.len() < 512, "{} bytes", message.len());
    Ok(())
}

proptest! {
    #![proptest_config(config(5_000))]

    /// Every summary reads back from its facts, as facts and as a notice.
    #[test]
    fn facts_and_info_notices_round_trip(info in peer_info()) {
        let facts = encode_facts(&info);
        prop_assert_eq!(parse_facts(facts.as_bytes()), Ok(info));
        prop_assert!(facts.bytes().all(|b| b.is_ascii_graphic()));
        let wire = Notice::Info(info).encode();
        prop_assert!(!wire[0].is_ascii_digit());
        let line = wire.strip_suffix(b"\r\n").unwrap().to_vec();
        prop_assert_eq!(
            LineReader::new().feed(&wire).collect::<Vec<_>>(),
            vec![LineEvent::Line(line.clone())]
        );
        prop_assert_eq!(Notice::parse(&line), Ok(Some(Notice::Info(info))));
        prop_assert_eq!(Notice::parse(&wire), Ok(Some(Notice::Info(info))));
    }

    /// Every size reads back from its notice.
    #[test]
    fn size_notices_round_trip(bytes in any::<u64>()) {
        let wire = Notice::Size(bytes).encode();
        prop_assert!(!wire[0].is_ascii_digit());
        prop_assert_eq!(Notice::parse(&wire), Ok(Some(Notice::Size(bytes))));
    }

    /// Fact-shaped input: no panic; what parses re-encodes to the same
    /// summary; errors are safe to put in a reply.
    #[test]
    fn fact_lists_parse_or_fail_cleanly(facts in fact_list()) {
        match parse_facts(&facts) {
            Ok(info) => {
                prop_assert_eq!(parse_facts(encode_facts(&info).as_bytes()), Ok(info));
            }
            Err(e) => {
                assert_safe_message(&e.to_string())?;
                assert_safe_message(e.piece())?;
            }
        }
    }

    /// Arbitrary bytes as facts and as notices: no panic, safe errors, and
    /// only lines with the prefix are notices.
    #[test]
    fn arbitrary_bytes_never_panic(raw in vec(any::<u8>(), 0..96), prefixed in any::<bool>()) {
        if let Err(e) = parse_facts(&raw) {
            assert_safe_message(&e.to_string())?;
        }
        let line = if prefixed { [NOTICE_PREFIX.as_bytes(), &raw].concat() } else { raw.clone() };
        match Notice::parse(&line) {
            Ok(None) => prop_assert!(!line
                .get(..NOTICE_PREFIX.len())
                .is_some_and(|h| h.eq_ignore_ascii_case(NOTICE_PREFIX.as_bytes()))),
            Ok(Some(notice)) => prop_assert_eq!(Notice::parse(&notice.encode()), Ok(Some(notice))),
            Err(e) => assert_safe_message(&e.to_string())?,
        }
    }

    /// Notice-shaped lines built from fact lists: no panic, safe errors.
    #[test]
    fn info_notices_from_fact_lists(facts in fact_list(), kind in proptest::sample::select(&["INFO", "info", "SBUF", "PACE"][..])) {
        let line = [format!("{NOTICE_PREFIX}{kind} ").as_bytes(), &facts].concat();
        match Notice::parse(&line) {
            Ok(Some(notice)) => prop_assert_eq!(Notice::parse(&notice.encode()), Ok(Some(notice))),
            Ok(None) => prop_assert!(false, "a prefixed line is a notice or an error"),
            Err(e) => assert_safe_message(&e.to_string())?,
        }
    }
}
