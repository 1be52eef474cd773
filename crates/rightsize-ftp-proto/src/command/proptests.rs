//! Property tests for the command codec and the line reader: over 100,000
//! generated inputs in total, asserting no panic, bounded output, and the
//! round trip `parse(encode(c)) == c`.

#![allow(clippy::unwrap_used)]

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;
use proptest::strategy::Union;

use super::*;
use crate::line::{LineEvent, LineReader, MAX_LINE_BYTES};
use crate::rightsize::proptests::peer_info;

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Feeds `wire` to a fresh reader and collects the events.
fn read_lines(wire: &[u8]) -> Vec<LineEvent> {
    LineReader::new().feed(wire).collect()
}

/// The round-trip property for one command: as a line and through the
/// line reader as wire bytes.
fn assert_round_trip(c: &Command) -> Result<(), TestCaseError> {
    let line = c.to_line();
    prop_assert_eq!(parse(&line), Ok(c.clone()), "line {}", line.escape_ascii());
    let wire = c.encode();
    prop_assert_eq!(read_lines(&wire), vec![LineEvent::Line(line)]);
    prop_assert!(!c.to_string().contains(['\r', '\n']));
    Ok(())
}

fn check_line(line: &[u8]) -> Result<(), TestCaseError> {
    match parse(line) {
        Ok(c) => assert_round_trip(&c)?,
        Err(e) => {
            prop_assert!([500, 501, 502, 504, 522].contains(&e.reply_code()));
            prop_assert!(!e.to_string().contains(['\r', '\n']));
            prop_assert_eq!(e.to_reply().code(), e.reply_code());
        }
    }
    Ok(())
}

const VERBS: &[&str] = &[
    "USER", "PASS", "ACCT", "QUIT", "REIN", "NOOP", "SYST", "FEAT", "OPTS", "PWD", "XPWD", "CWD",
    "XCWD", "CDUP", "XCUP", "TYPE", "MODE", "STRU", "PASV", "EPSV", "EPRT", "PORT", "LIST", "NLST",
    "MLSD", "MLST", "SIZE", "MDTM", "RETR", "STOR", "APPE", "STOU", "REST", "DELE", "MKD", "XMKD",
    "RMD", "XRMD", "RNFR", "RNTO", "ABOR", "STAT", "HELP", "ALLO", "SITE", "SBUF", "CKSM", "HASH",
    "AUTH", "PBSZ", "PROT", "RINF", "FOO", "LPRT", "CLNT", "X",
];

/// A verb from the list in random letter case.
fn verb() -> impl Strategy<Value = Vec<u8>> {
    (proptest::sample::select(VERBS), any::<u16>()).prop_map(|(v, case)| {
        v.bytes()
            .enumerate()
            .map(|(i, b)| {
                if case >> (i % 16) & 1 == 1 {
                    b.to_ascii_lowercase()
                } else {
                    b
                }
            })
            .collect()
    })
}

/// Words the verbs take, words they do not, and hostile bytes. Built from
/// a table rather than regexes, which are slow to generate in debug builds.
const PIECES: &[&[u8]] = &[
    b"A",
    b"I",
    b"L",
    b"8",
    b"16",
    b"N",
    b"T",
    b"E",
    b"C",
    b"S",
    b"B",
    b"F",
    b"R",
    b"P",
    b"X",
    b"-la",
    b"-l",
    b"-a",
    b"-x.txt",
    b"--",
    b"-",
    b"./-l",
    b"/pub",
    b"pub/data",
    b"..",
    b"/",
    b"HELP",
    b"SBUF",
    b"CHMOD",
    b"CLIENTINFO",
    b"755",
    b"0644",
    b"17777",
    b"UTF8",
    b"ON",
    b"OFF",
    b"MLST",
    b"size;type;",
    b"UNIX.mode;",
    b"a;;b",
    b"RETR",
    b"Parallelism=4,4,4;",
    b"RIGHTSIZE",
    b"UDP=5000",
    b"UDP=0",
    b"busy=1;rtt=2;",
    b"rate=18446744073709551616",
    b"minrtt=4294967296",
    b"busy=1;busy=2",
    b"=1;",
    b"ALL",
    b"1",
    b"2",
    b"-1",
    b"0",
    b"4194304",
    b"18446744073709551615",
    b"18446744073709551616",
    b"127,0,0,1,19,137",
    b"1,2,3,4,0,0",
    b"1,2,3,256,1,1",
    b"1,2,3,4,5",
    b"|1|127.0.0.1|5000|",
    b"|2|::1|21|",
    b"|3|x|1|",
    b"!1!10.0.0.1!2000!",
    b"|1|::1|21|",
    b"|1|1.2.3.4|0|",
    b"MD5",
    b"ADLER32",
    b"TLS",
    b"caf\xc3\xa9",
    b"\xff",
    b"\xe9",
    b"\r",
    b"\0",
    b"\t",
    b"\n",
    b"x",
];

fn argument() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        8 => proptest::sample::select(PIECES).prop_map(<[u8]>::to_vec),
        1 => any::<u64>().prop_map(|n| n.to_string().into_bytes()),
        1 => any::<u8>().prop_map(|b| vec![b]),
    ];
    const SEPS: &[&[u8]] = &[b" ", b" ", b" ", b"", b"  "];
    let sep = proptest::sample::select(SEPS);
    vec((piece, sep), 0..5).prop_map(|parts| {
        let mut out = Vec::new();
        for (i, (piece, sep)) in parts.into_iter().enumerate() {
            if i > 0 {
                out.extend_from_slice(sep);
            }
            out.extend_from_slice(&piece);
        }
        out
    })
}

/// Lines the keyword-argument verbs take, `#` standing for a number, so
/// the round trip is exercised on them too (random pieces rarely fit).
const TEMPLATES: &[&str] = &[
    "TYPE A",
    "TYPE I",
    "TYPE L 8",
    "TYPE A N",
    "TYPE E",
    "TYPE L #",
    "MODE S",
    "MODE E",
    "STRU F",
    "STRU R",
    "PORT 127,0,0,1,#,#",
    "PORT #,#,#,#,#,#",
    "EPRT |1|10.0.#.#|#|",
    "EPRT |2|::#|#|",
    "EPRT |#|1.2.3.4|#|",
    "CKSM MD5 # -1 /f",
    "CKSM ADLER32 # # f g",
    "PROT P",
    "PROT C",
    "PBSZ #",
    "REST #",
    "SBUF #",
    "SITE SBUF #",
    "ALLO # R #",
    "ALLO #",
    "EPSV #",
    "EPSV ALL",
    "SITE CHMOD # f",
    "AUTH TLS",
    "OPTS UTF8 ON",
    "OPTS MLST size;type;",
    "OPTS RETR Parallelism=#,#,#;",
    "OPTS RIGHTSIZE ON",
    "OPTS RIGHTSIZE OFF",
    "OPTS RIGHTSIZE ON UDP=#",
    "RINF busy=#;rwnd=#;sndbuf=#;rate=#;",
    "RINF minrtt=#;rtt=#;bretrans=#;retrans=#",
    "RINF future=#;busy=#",
    "LIST -la #",
    "NLST -# #",
    "SITE HELP #",
    "HELP #",
];

/// A template with its numbers filled in (0 to 20 digits, mostly few) and its verb in
/// random case.
fn template_line() -> impl Strategy<Value = Vec<u8>> {
    (
        proptest::sample::select(TEMPLATES),
        vec((any::<u64>(), prop_oneof![4 => 0u32..4, 1 => 0u32..21]), 6),
        any::<u16>(),
    )
        .prop_map(|(template, numbers, case)| {
            let mut numbers =
                numbers
                    .into_iter()
                    .map(|(n, digits)| match 10u64.checked_pow(digits) {
                        Some(m) => n % m,
                        None => n,
                    });
            let mut out = String::new();
            for (i, c) in template.chars().enumerate() {
                match c {
                    '#' => out.push_str(&numbers.next().unwrap_or(7).to_string()),
                    c if i < 4 && case >> i & 1 == 1 => out.push(c.to_ascii_lowercase()),
                    c => out.push(c),
                }
            }
            out.into_bytes()
        })
}

fn separator() -> impl Strategy<Value = &'static [u8]> {
    const SEPS: &[&[u8]] = &[b" ", b" ", b" ", b" ", b"", b"  "];
    proptest::sample::select(SEPS)
}

/// Maps a random byte onto the bytes that matter more often.
fn interesting(b: u8) -> u8 {
    match b % 16 {
        0 => b' ',
        1 => b'\r',
        2 => 0xff,
        3 => 0,
        4 => b'-',
        5 => b';',
        _ => b,
    }
}

fn arg() -> impl Strategy<Value = Arg> {
    vec(any::<u8>(), 1..16).prop_filter_map("an Arg holds no LF", |v| {
        Arg::new(
            v.into_iter()
                .map(|b| if b == b'\n' { b'n' } else { interesting(b) })
                .collect::<Vec<u8>>(),
        )
        .ok()
    })
}

fn token() -> impl Strategy<Value = Token> {
    vec(b'!'..=b'~', 1..8).prop_filter_map("printable ASCII", |v| {
        Token::new(String::from_utf8(v).ok()?).ok()
    })
}

fn list_args() -> impl Strategy<Value = ListArgs> {
    (vec(any::<u8>(), 0..3), option::of(arg())).prop_filter_map(
        "unambiguous LIST arguments",
        |(f, p)| {
            let flags: String = f
                .iter()
                .filter(|b| b.is_ascii_alphanumeric())
                .map(|b| char::from(*b))
                .collect();
            ListArgs::new(&flags, p).ok()
        },
    )
}

fn site() -> impl Strategy<Value = SiteCommand> {
    prop_oneof![
        option::of(arg()).prop_map(SiteCommand::Help),
        any::<u64>().prop_map(SiteCommand::Sbuf),
        (0u32..=0o7777, arg()).prop_map(|(mode, path)| SiteCommand::Chmod { mode, path }),
        (token(), option::of(arg()))
            .prop_filter_map("not HELP/SBUF/CHMOD", |(n, a)| SiteOther::new(n, a).ok())
            .prop_map(SiteCommand::Other),
    ]
}

fn opts() -> impl Strategy<Value = OptsCommand> {
    prop_oneof![
        any::<bool>().prop_map(OptsCommand::Utf8),
        vec(token(), 0..4)
            .prop_filter_map("no ';' in facts", |f| MlstFacts::new(f).ok())
            .prop_map(OptsCommand::Mlst),
        (token(), option::of(arg()))
            .prop_filter_map("not UTF8/MLST/RIGHTSIZE", |(c, a)| OptsOther::new(c, a)
                .ok())
            .prop_map(OptsCommand::Other),
        Just(OptsCommand::Rightsize(RightsizeOpts::Off)),
        option::of(any::<std::num::NonZeroU16>())
            .prop_map(|udp_port| OptsCommand::Rightsize(RightsizeOpts::On { udp_port })),
    ]
}

fn v4_addr() -> impl Strategy<Value = SocketAddrV4> {
    (any::<[u8; 4]>(), 1u16..).prop_map(|(ip, port)| SocketAddrV4::new(Ipv4Addr::from(ip), port))
}

/// Every variant, with values in the ranges their docs state.
fn command() -> impl Strategy<Value = Command> {
    let b = |s: BoxedStrategy<Command>| s;
    Union::new(vec![
        b(arg().prop_map(Command::User).boxed()),
        b(option::of(arg()).prop_map(Command::Pass).boxed()),
        b(arg().prop_map(Command::Acct).boxed()),
        b(arg().prop_map(Command::Cwd).boxed()),
        b(prop_oneof![
            Just(Command::Cdup),
            Just(Command::Rein),
            Just(Command::Quit),
            Just(Command::Pasv),
            Just(Command::Abor),
            Just(Command::Pwd),
            Just(Command::Syst),
            Just(Command::Noop),
            Just(Command::Ccc),
            Just(Command::Feat),
            Just(Command::Type(TransferType::Ascii)),
            Just(Command::Type(TransferType::Image)),
            Just(Command::Type(TransferType::Local8)),
            Just(Command::Stru(FileStructure::File)),
            Just(Command::Mode(TransferMode::Stream)),
            Just(Command::Mode(TransferMode::Extended)),
            Just(Command::Spas),
        ]
        .boxed()),
        b((v4_addr(), vec(v4_addr(), 0..3))
            .prop_map(|(first, more)| Command::Spor(StripeAddrs::new(first, more)))
            .boxed()),
        b((any::<u64>(), any::<u64>(), arg())
            .prop_map(|(offset, length, path)| Command::Eret {
                offset,
                length,
                path,
            })
            .boxed()),
        b((any::<u64>(), arg())
            .prop_map(|(offset, path)| Command::Esto { offset, path })
            .boxed()),
        b((
            prop_oneof![Just(MarkerEvent::Perf), Just(MarkerEvent::Restart)],
            any::<u32>(),
        )
            .prop_map(|(event, secs)| Command::Trev { event, secs })
            .boxed()),
        b(v4_addr().prop_map(Command::Port).boxed()),
        b(prop_oneof![
            v4_addr().prop_map(SocketAddr::V4),
            (any::<[u8; 16]>(), 1u16..).prop_map(|(ip, port)| {
                SocketAddr::V6(SocketAddrV6::new(Ipv6Addr::from(ip), port, 0, 0))
            }),
        ]
        .prop_map(Command::Eprt)
        .boxed()),
        b(prop_oneof![
            arg().prop_map(Command::Retr),
            arg().prop_map(Command::Stor),
            arg().prop_map(Command::Appe),
            arg().prop_map(Command::Rnfr),
            arg().prop_map(Command::Rnto),
            arg().prop_map(Command::Dele),
            arg().prop_map(Command::Rmd),
            arg().prop_map(Command::Mkd),
            arg().prop_map(Command::Size),
            arg().prop_map(Command::Mdtm),
            arg().prop_map(Command::Hash),
        ]
        .boxed()),
        b(prop_oneof![
            option::of(arg()).prop_map(Command::Stou),
            option::of(arg()).prop_map(Command::Stat),
            option::of(arg()).prop_map(Command::Help),
            option::of(arg()).prop_map(Command::Mlst),
            option::of(arg()).prop_map(Command::Mlsd),
        ]
        .boxed()),
        b((any::<u64>(), option::of(any::<u64>()))
            .prop_map(|(bytes, record_bytes)| Command::Allo {
                bytes,
                record_bytes,
            })
            .boxed()),
        b(prop_oneof![
            any::<u64>().prop_map(Command::Rest),
            proptest::collection::vec((any::<u32>(), any::<u32>()), 0..4).prop_map(|pairs| {
                let mut ranges = crate::mode_e::Ranges::new();
                for (a, b) in pairs {
                    ranges.add(u64::from(a.min(b)), u64::from(a.max(b)));
                }
                Command::RestRanges(ranges)
            }),
            any::<u64>().prop_map(Command::Sbuf),
            any::<u32>().prop_map(Command::Pbsz),
        ]
        .boxed()),
        b(list_args().prop_map(Command::List).boxed()),
        b(list_args().prop_map(Command::Nlst).boxed()),
        b(site().prop_map(Command::Site).boxed()),
        b(opts().prop_map(Command::Opts).boxed()),
        b(option::of(prop_oneof![
            Just(EpsvArg::All),
            any::<u16>().prop_map(EpsvArg::Protocol)
        ])
        .prop_map(Command::Epsv)
        .boxed()),
        b(token().prop_map(Command::Auth).boxed()),
        b(peer_info().prop_map(Command::Rinf).boxed()),
        b(prop_oneof![
            Just(ProtectionLevel::Clear),
            Just(ProtectionLevel::Safe),
            Just(ProtectionLevel::Confidential),
            Just(ProtectionLevel::Private),
        ]
        .prop_map(Command::Prot)
        .boxed()),
        b((token(), any::<u64>(), option::of(any::<u64>()), arg())
            .prop_map(|(algorithm, offset, length, path)| Command::Cksm {
                algorithm,
                offset,
                length,
                path,
            })
            .boxed()),
    ])
}

/// Maps random bytes onto what matters to the line reader: line ends, CR,
/// NUL, IAC and Telnet commands, plus plain text.
fn wire_byte(b: u8) -> u8 {
    match b % 32 {
        0..=2 => b'\r',
        3..=5 => b'\n',
        6 => 0,
        7..=9 => 0xff,
        10..=12 => 0xf0 + b % 15,
        _ => b'a' + b % 26,
    }
}

/// Random wire bytes with up to two runs longer than the line limit.
fn long_wire() -> impl Strategy<Value = Vec<u8>> {
    (
        vec(any::<u8>(), 0..200),
        vec(
            (
                any::<u8>(),
                any::<usize>(),
                MAX_LINE_BYTES - 2..MAX_LINE_BYTES + 64,
            ),
            0..3,
        ),
    )
        .prop_map(|(base, runs)| {
            let mut wire: Vec<u8> = base.into_iter().map(wire_byte).collect();
            for (b, at, len) in runs {
                let at = at % (wire.len() + 1);
                let b = if b % 4 == 0 { wire_byte(b) } else { b'z' };
                wire.splice(at..at, std::iter::repeat_n(b, len));
            }
            wire
        })
}

proptest! {
    #![proptest_config(config(35_000))]

    /// Arbitrary bytes: no panic; anything parsed round-trips.
    #[test]
    fn parse_arbitrary_bytes(line in vec(any::<u8>(), 0..48)) {
        check_line(&line)?;
    }

    /// Verb-shaped lines: no panic; anything parsed round-trips; a known
    /// verb is never reported unknown.
    #[test]
    fn parse_verb_shaped_lines(v in verb(), sep in separator(), a in argument()) {
        let mut line = v.clone();
        line.extend_from_slice(sep);
        line.extend_from_slice(&a);
        check_line(&line)?;
        if let (false, Err(CommandError::Unknown { .. })) = (sep.is_empty(), parse(&line)) {
            let upper = String::from_utf8_lossy(&v).to_ascii_uppercase();
            prop_assert!(["FOO", "LPRT", "CLNT", "X"].contains(&upper.as_str()));
        }
    }
}

proptest! {
    #![proptest_config(config(10_000))]

    /// Keyword-argument lines: no panic; anything parsed round-trips.
    #[test]
    fn parse_template_lines(line in template_line()) {
        check_line(&line)?;
    }
}

proptest! {
    #![proptest_config(config(20_000))]

    /// Every command the types allow encodes to a line that parses back.
    #[test]
    fn generated_commands_round_trip(c in command()) {
        assert_round_trip(&c)?;
    }
}

proptest! {
    #![proptest_config(config(2_500))]

    /// Any bytes in any chunking give the same events; lines stay within the
    /// limit and contain no LF; each TooLong is followed by a line end
    /// before the next TooLong.
    #[test]
    fn line_reader_chunking_is_invisible(wire in long_wire(), cuts in vec(any::<usize>(), 0..6)) {
        let whole = read_lines(&wire);
        let mut points: Vec<usize> = cuts.iter().map(|c| c % (wire.len() + 1)).collect();
        points.sort_unstable();
        let mut reader = LineReader::new();
        let mut chunked = Vec::new();
        let mut start = 0;
        for end in points.into_iter().chain([wire.len()]) {
            chunked.extend(reader.feed(&wire[start..end]));
            start = end;
            prop_assert!(reader.buffered_bytes() <= MAX_LINE_BYTES);
        }
        prop_assert_eq!(&chunked, &whole);
        for e in &whole {
            if let LineEvent::Line(l) = e {
                prop_assert!(l.len() <= MAX_LINE_BYTES && !l.contains(&b'\n'));
            }
        }
        let too_long = whole.iter().filter(|e| **e == LineEvent::TooLong).count();
        prop_assert!(too_long <= wire.len() / MAX_LINE_BYTES);
    }
}

proptest! {
    #![proptest_config(config(10_000))]

    /// Lines escaped as a client does and mixed with Telnet commands come
    /// out exactly.
    #[test]
    fn line_reader_recovers_sent_lines(raw in vec(any::<u8>(), 0..240), bare_lf in any::<bool>()) {
        const TELNET: [&[u8]; 5] = [b"\xff\xf4", b"\xff\xf2", b"\xff\xf1", b"\xff\xfb\x01", b"\xff\xfe\xff"];
        let end: &[u8] = if bare_lf { b"\n" } else { b"\r\n" };
        let mut wire = Vec::new();
        let mut lines = vec![Vec::new()];
        for b in raw {
            let line = lines.last_mut().expect("never empty");
            match b % 32 {
                0..=1 => {
                    wire.extend_from_slice(end);
                    lines.push(Vec::new());
                }
                2..=3 => wire.extend_from_slice(TELNET[usize::from(b % 5)]),
                4 => {
                    wire.extend_from_slice(&[0xff, 0xff]);
                    line.push(0xff);
                }
                5 => {
                    wire.extend_from_slice(b"\r\0");
                    line.push(b'\r');
                }
                6 => {
                    wire.push(0);
                    line.push(0);
                }
                _ => {
                    let c = 0x20 + b % 95;
                    wire.push(c);
                    line.push(c);
                }
            }
        }
        wire.extend_from_slice(end);
        let expected: Vec<LineEvent> = lines.into_iter().map(LineEvent::Line).collect();
        prop_assert_eq!(read_lines(&wire), expected);
    }
}
