//! The RIGHTSIZE extension's codec: FEAT line, OPTS, RINF, notices.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use super::*;
use crate::command::OptsCommand;
use crate::line::{LineEvent, LineReader};
use crate::{Command, CommandError, Notice, NoticeError, PeerMessage, parse};
use rightsize_tune::units::Bytes;
use rightsize_tune::{PeerInfo, PeerReport};

fn port(p: u16) -> Option<NonZeroU16> {
    NonZeroU16::new(p)
}

#[test]
fn the_offered_feat_line() {
    assert_eq!(
        RightsizeFeature::offered().feat_line(),
        "RIGHTSIZE SBUF;INFO;HOST;TUNE;PART;"
    );
}

#[test]
fn feat_line_parsing_skips_unknown_capabilities() {
    let f = RightsizeFeature::parse(" RIGHTSIZE SBUF;INFO;HOST;TUNE;PART;").unwrap();
    assert_eq!(f, RightsizeFeature::offered());
    // A server from before HOST and TUNE.
    let old = RightsizeFeature::parse(" RIGHTSIZE SBUF;INFO;").unwrap();
    assert!(old.has(Capability::Info) && !old.has(Capability::Host) && !old.has(Capability::Tune));
    let f = RightsizeFeature::parse("rightsize info;PACING=fq;sbuf;sbuf").unwrap();
    assert_eq!(f.capabilities(), [Capability::Info, Capability::Sbuf]);
    let f = RightsizeFeature::parse("RIGHTSIZE FUTURE;").unwrap();
    assert!(!f.has(Capability::Sbuf) && !f.has(Capability::Info));
    assert_eq!(RightsizeFeature::parse("RIGHTSIZE"), Some(f));
    for other in [" SBUF", "RIGHTSIZEX SBUF;", "", " ", "MLST size*;"] {
        assert_eq!(RightsizeFeature::parse(other), None, "{other:?}");
    }
}

#[test]
fn opts_rightsize_parses_and_encodes() {
    let cases = [
        ("OPTS RIGHTSIZE ON", RightsizeOpts::On { udp_port: None }),
        ("OPTS RIGHTSIZE OFF", RightsizeOpts::Off),
        (
            "OPTS RIGHTSIZE ON UDP=40000",
            RightsizeOpts::On {
                udp_port: port(40000),
            },
        ),
    ];
    for (line, opts) in cases {
        let c = Command::Opts(OptsCommand::Rightsize(opts));
        assert_eq!(parse(line.as_bytes()), Ok(c.clone()));
        assert_eq!(c.to_line(), line.as_bytes());
    }
    assert_eq!(
        parse(b"opts rightsize  on   udp=1 "),
        Ok(Command::Opts(OptsCommand::Rightsize(RightsizeOpts::On {
            udp_port: port(1)
        })))
    );
}

#[test]
fn opts_rightsize_errors_quote_the_argument() {
    for arg in [
        "",
        "YES",
        "ON UDP=0",
        "ON UDP=65536",
        "ON UDP=",
        "ON UDP=+5",
        "OFF UDP=5",
        "ON UDP=5 X",
    ] {
        let line = format!("OPTS RIGHTSIZE {arg}");
        match parse(line.as_bytes()) {
            Err(e @ CommandError::Syntax { .. }) => {
                assert_eq!(e.reply_code(), 501);
                assert!(
                    e.to_string().contains(&format!("\"{}\"", arg.trim())),
                    "{e}"
                );
            }
            other => panic!("{line}: {other:?}"),
        }
    }
}

#[test]
fn other_opts_cannot_claim_the_rightsize_name() {
    let name = crate::Token::new("rightsize").unwrap();
    assert!(crate::command::OptsOther::new(name, None).is_err());
}

#[test]
fn opts_replies_and_the_port_a_client_reads_back() {
    let on = RightsizeOpts::On {
        udp_port: port(40000),
    };
    let cases = [
        (on, port(9000), "200 RIGHTSIZE ON UDP=9000.\r\n", port(9000)),
        (on, None, "200 RIGHTSIZE ON.\r\n", None),
        (
            RightsizeOpts::On { udp_port: None },
            port(9000),
            "200 RIGHTSIZE ON.\r\n",
            None,
        ),
        (
            RightsizeOpts::Off,
            port(9000),
            "200 RIGHTSIZE OFF.\r\n",
            None,
        ),
    ];
    for (opts, server, wire, read_back) in cases {
        let reply = opts_reply(opts, server);
        assert_eq!(String::from_utf8(reply.encode()).unwrap(), wire);
        assert_eq!(server_udp_port(&reply), read_back, "{wire}");
    }
    let reply = |code, text: &str| Reply::new(code, text).unwrap();
    assert_eq!(server_udp_port(&reply(200, "ok udp=65535")), port(65535));
    assert_eq!(server_udp_port(&reply(501, "UDP=9000.")), None);
    assert_eq!(server_udp_port(&reply(200, "UDP=0.")), None);
    assert_eq!(server_udp_port(&reply(200, "UDP=70000.")), None);
    assert_eq!(server_udp_port(&reply(200, "UDP=-1")), None);
    assert_eq!(server_udp_port(&reply(200, "éUDP=5")), None);
}

#[test]
fn rinf_parses_and_encodes() {
    let info = PeerInfo {
        busy_time_us: Some(10),
        min_rtt_us: Some(20),
        ..PeerInfo::default()
    };
    let c = Command::Rinf(info);
    assert_eq!(c.to_line(), b"RINF busy=10;minrtt=20");
    assert_eq!(parse(b"rinf  minrtt=20;busy=10; "), Ok(c));
    assert_eq!(Command::Rinf(PeerInfo::default()).to_line(), b"RINF");
    assert_eq!(parse(b"RINF"), Ok(Command::Rinf(PeerInfo::default())));
    match parse(b"RINF busy=1;busy=1") {
        Err(e) => {
            assert_eq!(e.reply_code(), 501);
            assert_eq!(e.to_string(), "RINF: a fact repeats a key in \"busy=1\"");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn notices_on_the_wire() {
    let info = PeerInfo {
        rtt_us: Some(21_000),
        total_retrans_segs: Some(3),
        ..PeerInfo::default()
    };
    let cases = [
        (Notice::Size(4_194_304), "RIGHTSIZE SBUF 4194304\r\n"),
        (Notice::Info(info), "RIGHTSIZE INFO rtt=21000;retrans=3\r\n"),
        (Notice::Info(PeerInfo::default()), "RIGHTSIZE INFO\r\n"),
    ];
    for (notice, wire) in cases {
        assert_eq!(String::from_utf8(notice.encode()).unwrap(), wire);
        assert_eq!(Notice::parse(wire.as_bytes()), Ok(Some(notice)));
        let line = wire.trim_end().as_bytes();
        assert_eq!(Notice::parse(line), Ok(Some(notice)));
        assert_eq!(
            LineReader::new().feed(wire.as_bytes()).collect::<Vec<_>>(),
            [LineEvent::Line(line.to_vec())]
        );
        assert!(!wire.starts_with(|c: char| c.is_ascii_digit()));
    }
    assert_eq!(
        Notice::parse(b"rightsize sbuf  7 \n"),
        Ok(Some(Notice::Size(7)))
    );
    assert_eq!(
        Notice::parse(b"RIGHTSIZE INFO "),
        Ok(Some(Notice::Info(PeerInfo::default())))
    );
}

#[test]
fn reply_lines_are_not_notices() {
    for line in [
        &b"226 Transfer complete.\r\n"[..],
        b"126 SBUF 4194304",
        b"150 Opening BINARY mode data connection.",
        b" RIGHTSIZE SBUF;INFO;",
        b"RIGHTSIZE",
        b"RIGHTSIZEX SBUF 1",
        b"",
    ] {
        assert_eq!(Notice::parse(line), Ok(None), "{}", line.escape_ascii());
    }
}

#[test]
fn malformed_notices_are_errors_to_log() {
    assert_eq!(
        Notice::parse(b"RIGHTSIZE PACE 1"),
        Err(NoticeError::UnknownKind {
            line: "RIGHTSIZE PACE 1".into()
        })
    );
    for bad in [
        &b"RIGHTSIZE SBUF"[..],
        b"RIGHTSIZE SBUF x",
        b"RIGHTSIZE SBUF -1",
        b"RIGHTSIZE SBUF 18446744073709551616",
    ] {
        assert!(
            matches!(Notice::parse(bad), Err(NoticeError::Size { .. })),
            "{}",
            bad.escape_ascii()
        );
    }
    let err = Notice::parse(b"RIGHTSIZE INFO rtt=99999999999").unwrap_err();
    assert!(matches!(err, NoticeError::Info(_)));
    assert!(err.to_string().contains("rtt=99999999999"), "{err}");
    // Syntax only: a zero size is for PeerReport::check to refuse.
    assert_eq!(
        Notice::parse(b"RIGHTSIZE SBUF 0"),
        Ok(Some(Notice::Size(0)))
    );
}

#[test]
fn messages_become_commands_and_reports() {
    let info = PeerInfo {
        busy_time_us: Some(1),
        ..PeerInfo::default()
    };
    assert_eq!(PeerMessage::Size(9).to_command(), Command::Sbuf(9));
    assert_eq!(PeerMessage::Info(info).to_command(), Command::Rinf(info));
    let at = Duration::from_millis(250);
    assert_eq!(
        PeerMessage::Size(9).to_report(at),
        PeerReport {
            at,
            info: None,
            size: Some(Bytes(9))
        }
    );
    assert_eq!(
        PeerMessage::Info(info).to_report(at),
        PeerReport {
            at,
            info: Some(info),
            size: None
        }
    );
    assert!(PeerMessage::Size(0).to_report(at).check(None).is_err());
}
