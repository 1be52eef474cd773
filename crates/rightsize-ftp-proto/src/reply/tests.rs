//! Tests for `reply.rs`: encoding, parsing of real server output, hostile
//! input and a round-trip property.

#![allow(clippy::unwrap_used)]

use super::*;
use proptest::prelude::*;

fn reply(code: u16, lines: &[&str]) -> Reply {
    Reply::multiline(code, lines.iter().map(|s| s.to_string()).collect()).unwrap()
}

fn parse_all(input: &[u8]) -> Vec<Result<Reply, ReplyParseError>> {
    ReplyParser::new().feed(input).collect()
}

#[test]
fn single_line_encoding() {
    let r = Reply::new(200, "Switching to Binary mode.").unwrap();
    assert_eq!(r.encode(), b"200 Switching to Binary mode.\r\n");
    assert_eq!(Reply::new(200, "").unwrap().encode(), b"200 \r\n");
}

#[test]
fn multi_line_encoding_follows_rfc959() {
    let r = reply(211, &["Features:", " EPSV", " SBUF", "End"]);
    assert_eq!(
        r.encode(),
        b"211-Features:\r\n EPSV\r\n SBUF\r\n211 End\r\n"
    );
}

#[test]
fn middle_lines_starting_with_digits_are_indented() {
    let r = reply(
        213,
        &["Status of /pub:", "213 not the end", "211-nor this", "End"],
    );
    let wire = r.encode();
    assert_eq!(
        wire,
        b"213-Status of /pub:\r\n 213 not the end\r\n 211-nor this\r\n213 End\r\n"
    );
    let back = parse_all(&wire);
    assert_eq!(back.len(), 1);
    let back = back[0].as_ref().unwrap();
    assert_eq!(back.lines()[1], " 213 not the end");
    assert_eq!(back.lines().len(), 4);
}

#[test]
fn construction_refuses_bad_codes_and_line_breaks() {
    assert_eq!(
        Reply::new(99, "x"),
        Err(ReplyError::CodeOutOfRange { code: 99 })
    );
    assert_eq!(
        Reply::new(600, "x"),
        Err(ReplyError::CodeOutOfRange { code: 600 })
    );
    assert_eq!(
        Reply::multiline(200, vec![]),
        Err(ReplyError::NoLines { code: 200 })
    );
    let err = Reply::new(257, "\"/a\r\n226 fake\"").unwrap_err();
    assert_eq!(
        err.to_string(),
        "reply 257 line \"\\\"/a\\r\\n226 fake\\\"\" contains CR or LF"
    );
}

#[test]
fn classification() {
    assert!(Reply::new(150, "").unwrap().is_preliminary());
    assert!(Reply::new(226, "").unwrap().is_completion());
    assert!(Reply::new(331, "").unwrap().is_intermediate());
    assert!(Reply::new(425, "").unwrap().is_transient_negative());
    assert!(Reply::new(550, "").unwrap().is_permanent_negative());
    assert!(Reply::new(421, "").unwrap().is_negative());
    assert!(!Reply::new(350, "").unwrap().is_negative());
    assert_eq!(ReplyKind::of(99), None);
    assert_eq!(ReplyKind::of(599), Some(ReplyKind::PermanentNegative));
}

#[test]
fn vsftpd_session_parses() {
    let wire = b"220 (vsFTPd 3.0.3)\r\n331 Please specify the password.\r\n\
230 Login successful.\r\n257 \"/\" is the current directory\r\n\
227 Entering Passive Mode (127,0,0,1,156,64).\r\n";
    let codes: Vec<u16> = parse_all(wire)
        .into_iter()
        .map(|r| r.unwrap().code())
        .collect();
    assert_eq!(codes, vec![220, 331, 230, 257, 227]);
}

#[test]
fn feat_reply_parses() {
    let wire = b"211-Features:\r\n EPRT\r\n EPSV\r\n MDTM\r\n PASV\r\n REST STREAM\r\n SIZE\r\n TVFS\r\n UTF8\r\n211 End\r\n";
    let r = parse_all(wire).remove(0).unwrap();
    assert_eq!(r.code(), 211);
    assert_eq!(r.lines().first().map(String::as_str), Some("Features:"));
    assert!(r.lines().iter().any(|l| l == " REST STREAM"));
    assert_eq!(r.lines().last().map(String::as_str), Some("End"));
}

#[test]
fn globus_perf_marker_and_prefixed_lines() {
    let wire = b"112-Perf Marker\r\n Timestamp:  1700000000.1\r\n Stripe Bytes Transferred: 4096\r\n112 End.\r\n\
230-User anonymous logged in.\r\n230-Welcome\r\n230 Enjoy\r\n";
    let replies = parse_all(wire);
    let perf = replies[0].as_ref().unwrap();
    assert_eq!(perf.code(), 112);
    assert!(perf.is_preliminary());
    assert_eq!(perf.lines()[2], " Stripe Bytes Transferred: 4096");
    let login = replies[1].as_ref().unwrap();
    assert_eq!(
        login.lines(),
        ["User anonymous logged in.", "Welcome", "Enjoy"]
    );
}

#[test]
fn bare_lf_code_only_and_blank_lines_are_tolerated() {
    let wire = b"\r\n200 OK\n\n200\r\n";
    let replies: Vec<Reply> = parse_all(wire).into_iter().map(Result::unwrap).collect();
    assert_eq!(replies, vec![reply(200, &["OK"]), reply(200, &[""])]);
}

#[test]
fn other_codes_inside_a_multi_line_reply_do_not_end_it() {
    let wire = b"250-first\r\n226 inner\r\n250-more\r\n250 last\r\n";
    let r = parse_all(wire).remove(0).unwrap();
    assert_eq!(r.lines(), ["first", "226 inner", "more", "last"]);
}

#[test]
fn non_utf8_and_stray_cr_become_replacement_characters() {
    let r = parse_all(b"257 \"/caf\xe9\"\r\n550 a\rb\r\n");
    assert_eq!(r[0].as_ref().unwrap().lines(), ["\"/caf\u{fffd}\""]);
    assert_eq!(r[1].as_ref().unwrap().lines(), ["a\u{fffd}b"]);
}

#[test]
fn malformed_and_invalid_codes_are_typed_errors() {
    let r = parse_all(b"hello\r\n2000 x\r\n099 x\r\n600 x\r\n220 ok\r\n");
    assert!(matches!(&r[0], Err(ReplyParseError::Malformed { line }) if line == "hello"));
    assert!(matches!(&r[1], Err(ReplyParseError::Malformed { .. })));
    assert!(matches!(&r[2], Err(ReplyParseError::InvalidCode { line }) if line == "099 x"));
    assert!(matches!(&r[3], Err(ReplyParseError::InvalidCode { .. })));
    assert_eq!(r[4].as_ref().unwrap().code(), 220);
}

#[test]
fn invalid_multi_line_reply_is_skipped_whole() {
    let r = parse_all(b"700-bad\r\n 200 inner\r\n700 end\r\n200 ok\r\n");
    assert_eq!(r.len(), 2);
    assert!(matches!(&r[0], Err(ReplyParseError::InvalidCode { .. })));
    assert_eq!(r[1].as_ref().unwrap().code(), 200);
}

#[test]
fn overlong_line_is_one_error_then_resync() {
    let mut p = ReplyParser::with_limits(64, 4096);
    let mut wire = b"200 ".to_vec();
    wire.extend(std::iter::repeat_n(b'x', 10_000));
    wire.extend_from_slice(b"\r\n226 done\r\n");
    let r: Vec<_> = p.feed(&wire).collect();
    assert_eq!(r.len(), 2);
    assert!(
        matches!(&r[0], Err(ReplyParseError::LineTooLong { limit_bytes: 64, start }) if start.starts_with("200 xxx"))
    );
    assert_eq!(r[1].as_ref().unwrap().code(), 226);
    assert!(p.is_idle());
}

#[test]
fn overlong_line_inside_multi_line_reply_skips_that_reply() {
    let mut p = ReplyParser::with_limits(32, 4096);
    let mut wire = b"211-Features:\r\n ".to_vec();
    wire.extend(std::iter::repeat_n(b'y', 100));
    wire.extend_from_slice(b"\r\n 211-not the end\r\n211 End\r\n200 next\r\n");
    let r: Vec<_> = p.feed(&wire).collect();
    assert_eq!(r.len(), 2, "{r:?}");
    assert!(matches!(r[0], Err(ReplyParseError::LineTooLong { .. })));
    assert_eq!(r[1].as_ref().unwrap().code(), 200);
}

#[test]
fn overlong_first_line_of_multi_line_reply_skips_that_reply() {
    let mut p = ReplyParser::with_limits(32, 4096);
    let mut wire = b"211-".to_vec();
    wire.extend(std::iter::repeat_n(b'y', 100));
    wire.extend_from_slice(b"\r\n body\r\n211 End\r\n200 next\r\n");
    let r: Vec<_> = p.feed(&wire).collect();
    assert_eq!(r.len(), 2, "{r:?}");
    assert_eq!(r[1].as_ref().unwrap().code(), 200);
}

#[test]
fn oversized_reply_is_one_error_then_resync() {
    let mut p = ReplyParser::with_limits(1024, 10 * REPLY_LINE_OVERHEAD_BYTES);
    let mut wire = b"213-listing\r\n".to_vec();
    for _ in 0..1000 {
        wire.extend_from_slice(b"\r\n");
    }
    wire.extend_from_slice(b"213 End\r\n250 ok\r\n");
    let r: Vec<_> = p.feed(&wire).collect();
    assert_eq!(r.len(), 2, "{r:?}");
    assert!(matches!(
        r[0],
        Err(ReplyParseError::ReplyTooLong { code: 213, .. })
    ));
    assert_eq!(r[1].as_ref().unwrap().code(), 250);
}

#[test]
fn endless_garbage_uses_bounded_memory() {
    let mut p = ReplyParser::with_limits(64, 1024);
    let chunk = vec![b'z'; 4096];
    let mut errors = 0;
    for _ in 0..100 {
        errors += p.feed(&chunk).count();
        assert!(p.line.len() <= 64);
    }
    assert_eq!(errors, 1);
}

#[test]
fn push_reports_consumed_bytes() {
    let mut p = ReplyParser::new();
    let wire = b"150 Opening\r\n226 Done\r\n";
    let first = p.push(wire);
    assert_eq!(first.consumed, 13);
    assert_eq!(first.output.unwrap().unwrap().code(), 150);
    let second = p.push(&wire[13..]);
    assert_eq!(second.consumed, 10);
    assert_eq!(second.output.unwrap().unwrap().code(), 226);
}

#[test]
fn quote_pathname_doubles_quotes() {
    assert_eq!(quote_pathname(b"/a \"b\""), "\"/a \"\"b\"\"\"");
    assert_eq!(quote_pathname(b"/x\ny\xff"), "\"/x\u{fffd}y\u{fffd}\"");
}

#[test]
fn display_is_one_line() {
    assert_eq!(reply(211, &["a", "b"]).to_string(), "211 a | b");
}

fn line_text() -> impl Strategy<Value = String> {
    // Printable text, some lines starting with digits or "ccc-", some not ASCII.
    proptest::collection::vec(any::<u8>(), 0..20).prop_map(|raw| {
        raw.iter()
            .enumerate()
            .map(|(i, b)| match (i, b % 16) {
                (0..=2, 0..=5) => char::from(b'0' + b % 10),
                (3, 0..=5) => {
                    if b % 2 == 0 {
                        ' '
                    } else {
                        '-'
                    }
                }
                (_, 6) => '\u{e9}',
                (_, 7) => '\u{4e2d}',
                _ => char::from(0x20 + b % 95),
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 2_000,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Encoding then parsing gives the reply back, in any chunking; middle
    /// lines starting with a digit come back with the one-space indent.
    #[test]
    fn encode_then_parse_round_trips(
        code in 100u16..=599,
        lines in proptest::collection::vec(line_text(), 1..6),
        split in 0usize..200,
    ) {
        let r = Reply::multiline(code, lines.clone()).unwrap();
        let wire = r.encode();
        let cut = split.min(wire.len());
        let mut p = ReplyParser::new();
        let mut got: Vec<_> = p.feed(&wire[..cut]).collect();
        got.extend(p.feed(&wire[cut..]));
        prop_assert!(p.is_idle());
        prop_assert_eq!(got.len(), 1);
        let back = got.remove(0).unwrap();
        let n = lines.len();
        let expected: Vec<String> = lines.iter().enumerate().map(|(i, l)| {
            if i > 0 && i + 1 < n && l.starts_with(|c: char| c.is_ascii_digit()) {
                format!(" {l}")
            } else {
                l.clone()
            }
        }).collect();
        prop_assert_eq!(back.code(), code);
        prop_assert_eq!(back.lines(), expected.as_slice());
    }

    /// Arbitrary bytes never panic, and the parser stays within its limits.
    #[test]
    fn arbitrary_bytes_never_panic(raw in proptest::collection::vec(any::<u8>(), 0..400)) {
        // Bias towards the bytes that steer the parser.
        let input: Vec<u8> = raw.iter().map(|b| match b % 8 {
            0 => b'\n',
            1 => b'-',
            2 => b' ',
            3 | 4 => b'0' + b % 6,
            _ => *b,
        }).collect();
        let mut p = ReplyParser::with_limits(40, 400);
        for r in p.feed(&input).flatten() {
            prop_assert!(ReplyKind::of(r.code()).is_some());
            prop_assert!(Reply::multiline(r.code(), r.lines().to_vec()).is_ok());
        }
        prop_assert!(p.line.len() <= 40);
    }
}
