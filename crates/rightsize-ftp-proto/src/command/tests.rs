//! Unit tests for `command.rs`: the sequences real clients send (see
//! `research/ftp-interop.md`), hostile lines, and encoding.

#![allow(clippy::unwrap_used)]

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

use super::*;
use crate::line::{LineEvent, LineReader};

fn a(s: &[u8]) -> Arg {
    Arg::new(s).unwrap()
}

fn t(s: &str) -> Token {
    Token::new(s).unwrap()
}

fn p(line: &str) -> Command {
    parse(line.as_bytes()).unwrap_or_else(|e| panic!("{line:?}: {e}"))
}

fn code(line: &[u8]) -> u16 {
    match parse(line) {
        Ok(c) => panic!("{:?} parsed as {c:?}", line.escape_ascii().to_string()),
        Err(e) => e.reply_code(),
    }
}

fn list(flags: &str, path: Option<&[u8]>) -> ListArgs {
    ListArgs::new(flags, path.map(a)).unwrap()
}

#[test]
fn curl_7_88_sequence() {
    assert_eq!(p("USER anonymous"), Command::User(a(b"anonymous")));
    assert_eq!(
        p("PASS ftp@example.com"),
        Command::Pass(Some(a(b"ftp@example.com")))
    );
    assert_eq!(p("PWD"), Command::Pwd);
    assert_eq!(p("CWD pub"), Command::Cwd(a(b"pub")));
    assert_eq!(p("EPSV"), Command::Epsv(None));
    assert_eq!(p("PASV"), Command::Pasv);
    assert_eq!(p("TYPE I"), Command::Type(TransferType::Image));
    assert_eq!(p("SIZE file.bin"), Command::Size(a(b"file.bin")));
    assert_eq!(p("RETR file.bin"), Command::Retr(a(b"file.bin")));
    assert_eq!(p("REST 1048576"), Command::Rest(1_048_576));
    let Command::RestRanges(ranges) = p("REST 0-29,30-89,100-200") else {
        panic!("REST with ranges")
    };
    assert_eq!(ranges.as_slice(), [(0, 29), (30, 89), (100, 200)]);
    assert_eq!(
        Command::RestRanges(ranges).to_string(),
        "REST 0-29,30-89,100-200"
    );
    assert!(parse(b"REST 5-1").is_err());
    let eprt: SocketAddr = "127.0.0.1:40123".parse().unwrap();
    assert_eq!(p("EPRT |1|127.0.0.1|40123|"), Command::Eprt(eprt));
    assert_eq!(p("LIST -a"), Command::List(list("a", None)));
    assert_eq!(p("QUIT"), Command::Quit);
}

#[test]
fn lftp_4_9_sequence() {
    assert_eq!(p("FEAT"), Command::Feat);
    assert_eq!(p("AUTH TLS"), Command::Auth(t("TLS")));
    assert_eq!(p("OPTS UTF8 ON"), Command::Opts(OptsCommand::Utf8(true)));
    let Command::Opts(OptsCommand::Mlst(facts)) =
        p("OPTS MLST type;size;modify;UNIX.mode;UNIX.owner;UNIX.group;")
    else {
        panic!("not OPTS MLST");
    };
    assert_eq!(facts.facts().len(), 6);
    assert!(facts.contains("unix.MODE"));
    assert_eq!(p("MDTM file.bin"), Command::Mdtm(a(b"file.bin")));
    assert_eq!(p("LIST -la"), Command::List(list("la", None)));
    assert_eq!(p("MLSD"), Command::Mlsd(None));
    assert_eq!(p("MLST /pub"), Command::Mlst(Some(a(b"/pub"))));
}

#[test]
fn python_ftplib_tnftp_sequence() {
    assert_eq!(p("PASS anonymous@"), Command::Pass(Some(a(b"anonymous@"))));
    assert_eq!(p("NLST"), Command::Nlst(ListArgs::default()));
    assert_eq!(p("ABOR"), Command::Abor);
    assert_eq!(p("SYST"), Command::Syst);
    let v6: SocketAddr = "[::1]:5000".parse().unwrap();
    assert_eq!(p("EPRT |2|::1|5000|"), Command::Eprt(v6));
    assert_eq!(p("EPSV 2"), Command::Epsv(Some(EpsvArg::Protocol(2))));
    assert_eq!(p("EPSV ALL"), Command::Epsv(Some(EpsvArg::All)));
    assert_eq!(p("STOR up.bin"), Command::Stor(a(b"up.bin")));
}

#[test]
fn globus_url_copy_sequence() {
    assert_eq!(p("SITE HELP"), Command::Site(SiteCommand::Help(None)));
    let Command::Site(SiteCommand::Other(info)) =
        p("SITE CLIENTINFO appname=\"globus-url-copy\";appver=\"10.12\";")
    else {
        panic!("not SITE other");
    };
    assert_eq!(info.name().as_str(), "CLIENTINFO");
    assert_eq!(
        info.args().unwrap().as_bytes(),
        b"appname=\"globus-url-copy\";appver=\"10.12\";"
    );
    let Command::Opts(OptsCommand::Other(o)) = p("OPTS RETR Parallelism=4,4,4;") else {
        panic!("not OPTS other");
    };
    assert_eq!(
        (o.command().as_str(), o.args().unwrap().as_bytes()),
        ("RETR", &b"Parallelism=4,4,4;"[..])
    );
    let port = SocketAddrV4::new(Ipv4Addr::new(127, 0, 0, 1), 5001);
    assert_eq!(p("PORT 127,0,0,1,19,137"), Command::Port(port));
    assert_eq!(p("SBUF 4194304"), Command::Sbuf(4_194_304));
    assert_eq!(
        p("SITE SBUF 1048576"),
        Command::Site(SiteCommand::Sbuf(1_048_576))
    );
    assert_eq!(
        p("CKSM MD5 0 -1 /pub/big file"),
        Command::Cksm {
            algorithm: t("MD5"),
            offset: 0,
            length: None,
            path: a(b"/pub/big file")
        }
    );
    assert_eq!(
        p("CKSM adler32 10 4096 f"),
        Command::Cksm {
            algorithm: t("adler32"),
            offset: 10,
            length: Some(4096),
            path: a(b"f")
        }
    );
    assert_eq!(code(b"MODE B"), 504);
}

#[test]
fn other_commands() {
    assert_eq!(p("ACCT x"), Command::Acct(a(b"x")));
    assert_eq!(p("REIN"), Command::Rein);
    assert_eq!(p("CDUP"), Command::Cdup);
    assert_eq!(p("STRU F"), Command::Stru(FileStructure::File));
    assert_eq!(p("MODE s"), Command::Mode(TransferMode::Stream));
    assert_eq!(p("MODE e"), Command::Mode(TransferMode::Extended));
    assert_eq!(p("TYPE A"), Command::Type(TransferType::Ascii));
    assert_eq!(p("TYPE A N"), Command::Type(TransferType::Ascii));
    assert_eq!(p("TYPE L 8"), Command::Type(TransferType::Local8));
    assert_eq!(p("STOU"), Command::Stou(None));
    assert_eq!(p("STOU base"), Command::Stou(Some(a(b"base"))));
    assert_eq!(p("APPE log"), Command::Appe(a(b"log")));
    assert_eq!(
        p("ALLO 1000"),
        Command::Allo {
            bytes: 1000,
            record_bytes: None
        }
    );
    assert_eq!(
        p("ALLO 1000 R 512"),
        Command::Allo {
            bytes: 1000,
            record_bytes: Some(512)
        }
    );
    assert_eq!(p("RNFR a"), Command::Rnfr(a(b"a")));
    assert_eq!(p("RNTO b"), Command::Rnto(a(b"b")));
    assert_eq!(p("DELE a"), Command::Dele(a(b"a")));
    assert_eq!(p("STAT"), Command::Stat(None));
    assert_eq!(p("STAT /pub"), Command::Stat(Some(a(b"/pub"))));
    assert_eq!(p("HELP SITE"), Command::Help(Some(a(b"SITE"))));
    assert_eq!(p("NOOP"), Command::Noop);
    assert_eq!(p("HASH /f"), Command::Hash(a(b"/f")));
    assert_eq!(p("PBSZ 0"), Command::Pbsz(0));
    assert_eq!(p("PROT P"), Command::Prot(ProtectionLevel::Private));
    assert_eq!(p("PROT c"), Command::Prot(ProtectionLevel::Clear));
    assert_eq!(p("CCC"), Command::Ccc);
    assert_eq!(p("OPTS UTF8 off"), Command::Opts(OptsCommand::Utf8(false)));
    assert_eq!(
        p("OPTS MLST"),
        Command::Opts(OptsCommand::Mlst(MlstFacts::default()))
    );
    assert_eq!(
        p("SITE HELP SBUF"),
        Command::Site(SiteCommand::Help(Some(a(b"SBUF"))))
    );
    assert_eq!(
        p("SITE CHMOD 0755 my file"),
        Command::Site(SiteCommand::Chmod {
            mode: 0o755,
            path: a(b"my file")
        })
    );
}

#[test]
fn verbs_are_case_insensitive_and_aliases_map() {
    assert_eq!(p("retr X"), Command::Retr(a(b"X")));
    assert_eq!(p("tYpE i"), Command::Type(TransferType::Image));
    assert_eq!(p("XPWD"), Command::Pwd);
    assert_eq!(p("xcwd d"), Command::Cwd(a(b"d")));
    assert_eq!(p("XCUP"), Command::Cdup);
    assert_eq!(p("XMKD d"), Command::Mkd(a(b"d")));
    assert_eq!(p("XRMD d"), Command::Rmd(a(b"d")));
    assert_eq!(p("site sbuf 10"), Command::Site(SiteCommand::Sbuf(10)));
    assert_eq!(p("opts utf8 on"), Command::Opts(OptsCommand::Utf8(true)));
}

#[test]
fn arguments_are_kept_byte_for_byte() {
    assert_eq!(p("RETR  a b "), Command::Retr(a(b" a b ")));
    assert_eq!(
        parse(b"RETR caf\xe9\xff"),
        Ok(Command::Retr(a(b"caf\xe9\xff")))
    );
    assert_eq!(
        parse(b"USER \xc3\xa9"),
        Ok(Command::User(a("é".as_bytes())))
    );
    assert_eq!(parse(b"CWD a\rb"), Ok(Command::Cwd(a(b"a\rb"))));
}

#[test]
fn keyword_arguments_tolerate_spaces() {
    assert_eq!(p("TYPE  I "), Command::Type(TransferType::Image));
    assert_eq!(p("TYPE A  N"), Command::Type(TransferType::Ascii));
    assert_eq!(p("REST  100 "), Command::Rest(100));
    assert_eq!(p("PWD "), Command::Pwd);
    assert_eq!(p("SITE  HELP"), Command::Site(SiteCommand::Help(None)));
}

#[test]
fn pass_without_password() {
    assert_eq!(p("PASS"), Command::Pass(None));
    assert_eq!(p("PASS "), Command::Pass(None));
    assert_eq!(Command::Pass(None).encode(), b"PASS \r\n");
}

#[test]
fn list_options_and_paths() {
    assert_eq!(p("LIST"), Command::List(ListArgs::default()));
    assert_eq!(p("LIST /pub"), Command::List(list("", Some(b"/pub"))));
    assert_eq!(
        p("LIST -l -a /pub"),
        Command::List(list("la", Some(b"/pub")))
    );
    assert_eq!(
        p("LIST -la  dir with spaces "),
        Command::List(list("la", Some(b"dir with spaces ")))
    );
    assert_eq!(p("NLST -x.txt"), Command::Nlst(list("", Some(b"-x.txt"))));
    assert_eq!(p("LIST --"), Command::List(list("", Some(b"--"))));
    assert_eq!(p("LIST -"), Command::List(list("", Some(b"-"))));
    assert_eq!(p("LIST ./-l"), Command::List(list("", Some(b"./-l"))));
    let l = list("la", None);
    assert!(l.has_flag('a') && !l.has_flag('R'));
}

#[test]
fn composite_constructors_refuse_ambiguous_values() {
    assert!(ListArgs::new("l", Some(a(b"-a"))).is_err());
    assert!(ListArgs::new("", Some(a(b" x"))).is_err());
    assert!(ListArgs::new("-l", None).is_err());
    assert!(ListArgs::new("", Some(a(b"-a.txt"))).is_ok());
    assert!(SiteOther::new(t("chmod"), None).is_err());
    assert!(SiteOther::new(t("UTIME"), None).is_ok());
    assert!(OptsOther::new(t("Utf8"), None).is_err());
    assert!(MlstFacts::new(vec![t("a;b")]).is_err());
}

#[test]
fn empty_and_malformed_lines_are_500() {
    assert_eq!(parse(b""), Err(CommandError::Empty));
    assert_eq!(code(b"   "), 500);
    assert_eq!(code(b" NOOP"), 500);
    assert_eq!(code(b"R3TR x"), 500);
    assert_eq!(code(b"\xff\xfe"), 500);
    assert_eq!(code(b"NOOP\tx"), 500);
    assert_eq!(code(&[b'A'; 17]), 500);
    assert_eq!(code(b"GET / HTTP/1.1"), 502);
}

#[test]
fn unknown_verbs_are_502() {
    assert_eq!(code(b"FOO"), 502);
    assert_eq!(code(b"LPRT 4,4,1,2,3,4,2,0,20"), 502);
    assert_eq!(
        parse(b"CLNT x").unwrap_err(),
        CommandError::Unknown {
            verb: "CLNT".into()
        }
    );
}

#[test]
fn bad_arguments_are_501() {
    for line in [
        &b"RETR"[..],
        b"RETR ",
        b"USER",
        b"CWD",
        b"TYPE",
        b"TYPE Z",
        b"TYPE L",
        b"TYPE L x",
        b"TYPE I I",
        b"MODE",
        b"MODE X",
        b"MODE SS",
        b"STRU Q",
        b"REST",
        b"REST abc",
        b"REST -1",
        b"REST 18446744073709551616",
        b"SBUF",
        b"SBUF abc",
        b"SBUF 1e6",
        b"SBUF -1",
        b"SBUF 99999999999999999999999",
        b"SITE",
        b"SITE SBUF",
        b"SITE SBUF x",
        b"SITE CHMOD",
        b"SITE CHMOD 755",
        b"SITE CHMOD 999 f",
        b"SITE CHMOD 17777 f",
        b"PORT",
        b"PORT 1,2,3",
        b"PORT 1,2,3,4,0,0",
        b"PORT 1,2,3,4,256,1",
        b"EPRT",
        b"EPRT |1|::1|21|",
        b"EPRT x",
        b"EPSV foo",
        b"EPSV 70000",
        b"PWD x",
        b"QUIT now",
        b"PBSZ",
        b"PBSZ 4294967296",
        b"PROT",
        b"AUTH",
        b"AUTH \xff",
        b"OPTS",
        b"OPTS UTF8",
        b"OPTS UTF8 MAYBE",
        b"OPTS MLST a b;",
        b"CKSM",
        b"CKSM MD5 0",
        b"CKSM MD5 0 -1",
        b"CKSM MD5 0 -1 ",
        b"CKSM MD5 x -1 f",
        b"CKSM MD5 0 -2 f",
        b"ALLO",
        b"ALLO x",
        b"ALLO 1 X 2",
        b"HASH",
        b"RETR a\nb",
    ] {
        assert_eq!(code(line), 501, "{}", line.escape_ascii());
    }
}

#[test]
fn unimplemented_parameters_are_504() {
    for line in [
        &b"TYPE E"[..],
        b"TYPE A T",
        b"TYPE a c",
        b"TYPE L 16",
        b"TYPE E N",
        b"MODE B",
        b"MODE C",
        b"STRU R",
        b"STRU P",
        b"PROT X",
        b"PROT SS",
    ] {
        assert_eq!(code(line), 504, "{}", line.escape_ascii());
    }
}

#[test]
fn eprt_with_unknown_protocol_is_522() {
    assert_eq!(code(b"EPRT |3|1.2.3.4|21|"), 522);
}

#[test]
fn errors_quote_the_input_and_map_to_replies() {
    let e = parse(b"SBUF lots").unwrap_err();
    assert_eq!(
        e.to_string(),
        "SBUF: expected a decimal number of bytes in \"lots\""
    );
    assert_eq!(
        e.to_reply().encode(),
        b"501 Syntax error in parameters or arguments.\r\n"
    );
    let e = parse(b"TYPE E").unwrap_err();
    assert_eq!(e.to_string(), "TYPE: parameter \"E\" not implemented");
    assert_eq!(e.to_reply().code(), 504);
    let e = parse(b"FOO\r\nbar").unwrap_err();
    assert_eq!(e.to_reply().code(), 500);
    assert_eq!(e.to_string(), "malformed command verb \"FOO\\r\\nbar\"");
    assert_eq!(CommandError::Empty.to_reply().code(), 500);
    assert_eq!(parse(b"XYZ").unwrap_err().to_reply().code(), 502);
    assert_eq!(parse(b"EPRT |9|x|1|").unwrap_err().to_reply().code(), 522);
}

#[test]
fn encoding_writes_canonical_lines() {
    let cases: Vec<(Command, &[u8])> = vec![
        (p("xpwd"), b"PWD\r\n"),
        (p("type a n"), b"TYPE A\r\n"),
        (p("LIST -l -a  /pub"), b"LIST -la /pub\r\n"),
        (p("SITE CHMOD 0644 f"), b"SITE CHMOD 644 f\r\n"),
        (p("CKSM MD5 0 -1 f"), b"CKSM MD5 0 -1 f\r\n"),
        (p("OPTS MLST size;type"), b"OPTS MLST size;type;\r\n"),
        (p("EPRT !2!::1!21!"), b"EPRT |2|::1|21|\r\n"),
        (p("ALLO 5 r 6"), b"ALLO 5 R 6\r\n"),
        (p("SBUF 01"), b"SBUF 1\r\n"),
    ];
    for (c, wire) in cases {
        assert_eq!(c.encode(), wire, "{c:?}");
    }
}

#[test]
fn encoding_escapes_iac_and_cr_for_the_line_reader() {
    let c = Command::Retr(a(b"x\xffy\rz\0"));
    assert_eq!(c.encode(), b"RETR x\xff\xffy\r\0z\0\r\n");
    let events: Vec<_> = LineReader::new().feed(&c.encode()).collect();
    assert_eq!(events, vec![LineEvent::Line(c.to_line())]);
    assert_eq!(parse(&c.to_line()), Ok(c));
}

#[test]
fn display_hides_password_and_escapes_controls() {
    assert_eq!(p("PASS secret").to_string(), "PASS ****");
    assert_eq!(p("PASS").to_string(), "PASS ");
    assert_eq!(
        parse(b"RETR a\rb\xff").unwrap().to_string(),
        "RETR a\\rb\u{fffd}"
    );
    assert_eq!(p("retr x").verb(), "RETR");
}

#[test]
fn data_address() {
    let port = p("PORT 10,0,0,1,4,1").data_address();
    assert_eq!(port, Some("10.0.0.1:1025".parse().unwrap()));
    assert_eq!(p("NOOP").data_address(), None);
}

#[test]
fn rest_with_long_ranges() {
    let line = "REST 0-8508932096,8509980672-8510242816,8511029248-8511291392";
    assert!(matches!(p(line), Command::RestRanges(_)));
}

#[test]
fn gridftp_partial_and_striped_commands() {
    assert_eq!(
        p("ERET P 100 200 /data/a file "),
        Command::Eret {
            offset: 100,
            length: 200,
            path: a(b"/data/a file "),
        }
    );
    assert_eq!(
        p("eret p  5  6 x"),
        Command::Eret {
            offset: 5,
            length: 6,
            path: a(b"x"),
        }
    );
    assert_eq!(
        p("ESTO A 4096 /up/b"),
        Command::Esto {
            offset: 4096,
            path: a(b"/up/b"),
        }
    );
    assert_eq!(p("SPAS"), Command::Spas);
    let port = |p: u16| SocketAddrV4::new(Ipv4Addr::new(127, 0, 0, 1), p);
    assert_eq!(
        p("SPOR 127,0,0,1,4,1 127,0,0,1,4,2"),
        Command::Spor(StripeAddrs::new(port(1025), vec![port(1026)]))
    );
    assert_eq!(
        p("SPOR 127,0,0,1,4,1 127,0,0,1,4,2").to_line(),
        b"SPOR 127,0,0,1,4,1 127,0,0,1,4,2"
    );
    // Modules this server does not offer are 504; broken lines 501, and
    // the error quotes what was sent.
    assert_eq!(code(b"ERET mode=\"x\" /a"), 504);
    assert_eq!(code(b"ESTO P 1 /a"), 504);
    assert_eq!(code(b"SPAS 2"), 504);
    for bad in [
        &b"ERET"[..],
        b"ERET P",
        b"ERET P 1 /a",
        b"ERET P 1 2",
        b"ERET P 1 2 ",
        b"ERET P -1 2 /a",
        b"ESTO A",
        b"ESTO A /a",
        b"SPOR",
        b"SPOR 127,0,0,1,4",
        b"SPOR 127,0,0,1,4,1 x",
    ] {
        assert_eq!(code(bad), 501, "{}", bad.escape_ascii());
    }
    assert_eq!(
        p("TREV perf 5"),
        Command::Trev {
            event: MarkerEvent::Perf,
            secs: 5
        }
    );
    assert_eq!(p("TREV RESTART 0").to_line(), b"TREV RESTART 0");
    assert_eq!(code(b"TREV BYTES 5"), 504);
    for bad in [&b"TREV"[..], b"TREV PERF", b"TREV PERF x", b"TREV PERF 1 2"] {
        assert_eq!(code(bad), 501, "{}", bad.escape_ascii());
    }
    let e = parse(b"ERET P 1 /a").unwrap_err();
    assert!(e.to_string().contains("P <offset> <length> <path>"), "{e}");
    assert!(e.to_string().contains("P 1 /a"), "{e}");
}
