#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use super::*;
use crate as ftp;

/// An in-memory file system with a fixed clock and one read-write user.
#[derive(Default)]
pub(super) struct MemHost {
    files: BTreeMap<Vec<u8>, u64>,
    dirs: Vec<Vec<u8>>,
    /// Parts of cut uploads kept, by path: their sizes.
    pub(super) kept: BTreeMap<Vec<u8>, u64>,
}

const PEER: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(198, 18, 0, 2)), 40_000);
const LOCAL_PASV: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(198, 18, 0, 1)), 50_000);
const NOW: i64 = 1_795_000_000;

impl MemHost {
    fn new() -> Self {
        let mut host = MemHost::default();
        host.dirs.push(b"/".to_vec());
        host.dirs.push(b"/pub".to_vec());
        host.files.insert(b"/pub/a.bin".to_vec(), 1000);
        host
    }

    fn meta(kind: EntryKind, size: u64) -> Metadata {
        Metadata {
            kind,
            size,
            modified_unix: NOW - 60,
            writable: false,
        }
    }
}

impl ServerHost for MemHost {
    fn kept_part(&mut self, path: &VirtualPath) -> Result<Option<u64>, FsError> {
        Ok(self.kept.get(path.as_bytes()).copied())
    }

    fn metadata(&mut self, path: &VirtualPath) -> Result<Metadata, FsError> {
        if self.dirs.iter().any(|d| d == path.as_bytes()) {
            return Ok(Self::meta(EntryKind::Dir, 0));
        }
        self.files
            .get(path.as_bytes())
            .map(|&size| Self::meta(EntryKind::File, size))
            .ok_or(FsError::NotFound)
    }
    fn read_dir(&mut self, path: &VirtualPath) -> Result<Vec<DirEntry>, FsError> {
        let prefix = if path.is_root() {
            b"/".to_vec()
        } else {
            [path.as_bytes(), b"/"].concat()
        };
        Ok(self
            .files
            .iter()
            .filter_map(|(name, &size)| {
                let rest = name.strip_prefix(prefix.as_slice())?;
                (!rest.contains(&b'/')).then(|| DirEntry {
                    name: rest.to_vec(),
                    metadata: Self::meta(EntryKind::File, size),
                })
            })
            .collect())
    }
    fn make_dir(&mut self, path: &VirtualPath) -> Result<(), FsError> {
        self.dirs.push(path.as_bytes().to_vec());
        Ok(())
    }
    fn remove_dir(&mut self, _: &VirtualPath) -> Result<(), FsError> {
        Err(FsError::NotEmpty)
    }
    fn remove_file(&mut self, path: &VirtualPath) -> Result<(), FsError> {
        self.files
            .remove(path.as_bytes())
            .map(|_| ())
            .ok_or(FsError::NotFound)
    }
    fn rename(&mut self, from: &VirtualPath, to: &VirtualPath) -> Result<(), FsError> {
        let size = self
            .files
            .remove(from.as_bytes())
            .ok_or(FsError::NotFound)?;
        self.files.insert(to.as_bytes().to_vec(), size);
        Ok(())
    }
    fn checksums(&self) -> &[&'static str] {
        &["SHA256", "MD5"]
    }
    fn open_passive(&mut self, _sbuf: Option<u64>) -> Result<SocketAddr, String> {
        Ok(LOCAL_PASV)
    }
    fn authenticate(&mut self, user: &str, password: &[u8]) -> Option<Access> {
        (user == "alice" && password == b"secret").then_some(Access::ReadWrite)
    }
}

pub(super) struct Client {
    pub(super) session: Session,
    pub(super) host: MemHost,
}

impl Client {
    pub(super) fn new() -> Self {
        Client::with(SessionConfig::default())
    }

    pub(super) fn with(config: SessionConfig) -> Self {
        let (session, greeting) = Session::new(config, PEER);
        assert_eq!(codes(&[greeting]), [220]);
        Client {
            session,
            host: MemHost::new(),
        }
    }

    pub(super) fn send(&mut self, line: &str) -> Vec<Output> {
        self.session
            .handle(ftp::parse(line.as_bytes()), &mut self.host, NOW)
    }

    pub(super) fn codes(&mut self, line: &str) -> Vec<u16> {
        codes(&self.send(line))
    }

    pub(super) fn logged_in(user: &str, pass: &str) -> Self {
        let mut client = Client::new();
        assert_eq!(client.codes(&format!("USER {user}")), [331]);
        assert_eq!(client.codes(&format!("PASS {pass}")), [230]);
        client
    }

    pub(super) fn transfer(&mut self, line: &str) -> TransferPlan {
        let out = self.send(line);
        match out.as_slice() {
            [Output::Transfer(plan)] => plan.clone(),
            other => panic!("{line}: expected a transfer, got {other:?}"),
        }
    }

    pub(super) fn done(&mut self, outcome: TransferOutcome) -> Vec<u16> {
        codes(&self.session.transfer_done(outcome, &mut self.host, NOW))
    }
}

pub(super) fn codes(outputs: &[Output]) -> Vec<u16> {
    outputs
        .iter()
        .filter_map(|o| match o {
            Output::Reply(r) => Some(r.code()),
            _ => None,
        })
        .collect()
}

pub(super) fn text(outputs: &[Output]) -> String {
    outputs
        .iter()
        .filter_map(|o| match o {
            Output::Reply(r) => Some(String::from_utf8_lossy(&r.encode()).into_owned()),
            _ => None,
        })
        .collect()
}

#[test]
fn curl_sequence_downloads_a_file() {
    let mut c = Client::logged_in("anonymous", "x@y");
    assert_eq!(c.codes("PWD"), [257]);
    assert_eq!(c.codes("CWD pub"), [250]);
    assert_eq!(
        text(&c.send("EPSV")),
        "229 Entering Extended Passive Mode (|||50000|)\r\n"
    );
    assert_eq!(c.codes("TYPE I"), [200]);
    assert_eq!(text(&c.send("SIZE a.bin")), "213 1000\r\n");
    let plan = c.transfer("RETR a.bin");
    assert_eq!(
        plan.kind,
        TransferKind::Retrieve {
            path: VirtualPath::parse(b"/pub/a.bin").unwrap(),
            offset: 0,
            done: crate::mode_e::Ranges::new(),
            length: None,
        }
    );
    assert_eq!(plan.endpoint, DataEndpoint::Passive(LOCAL_PASV));
    assert_eq!(plan.start_reply.code(), 150);
    assert!(c.session.is_transferring());
    assert_eq!(c.done(TransferOutcome::Complete { bytes: 1000 }), [226]);
    assert_eq!(c.codes("QUIT"), [221]);
}

#[test]
fn a_transfer_needs_a_data_connection_set_up_and_consumes_it() {
    let mut c = Client::logged_in("anonymous", "");
    assert_eq!(c.codes("RETR /pub/a.bin"), [425]);
    c.send("PASV");
    c.transfer("RETR /pub/a.bin");
    c.done(TransferOutcome::Complete { bytes: 1000 });
    assert_eq!(c.codes("RETR /pub/a.bin"), [425]);
}

#[test]
fn rest_past_the_end_of_the_file_is_refused_and_rest_at_its_end_sends_nothing() {
    let mut c = Client::logged_in("anonymous", "");
    c.send("PASV");
    c.send("REST 18446744073709551615");
    let out = c.send("RETR /pub/a.bin");
    let [Output::Reply(r)] = out.as_slice() else {
        panic!("{out:?}")
    };
    assert_eq!(r.code(), 554);
    assert!(
        r.text().contains("18446744073709551615") && r.text().contains("1000 bytes"),
        "{r}"
    );
    // Refused, it is gone: the next RETR starts from 0.
    let plan = c.transfer("RETR /pub/a.bin");
    assert!(matches!(
        plan.kind,
        TransferKind::Retrieve { offset: 0, .. }
    ));
    c.done(TransferOutcome::Complete { bytes: 1000 });
    c.send("PASV");
    c.send("REST 1000");
    let plan = c.transfer("RETR /pub/a.bin");
    assert!(matches!(
        plan.kind,
        TransferKind::Retrieve { offset: 1000, .. }
    ));
}

#[test]
fn rest_sets_the_offset_of_the_next_transfer_only() {
    let mut c = Client::logged_in("anonymous", "");
    c.send("PASV");
    assert_eq!(c.codes("REST 400"), [350]);
    let plan = c.transfer("RETR /pub/a.bin");
    assert!(matches!(
        plan.kind,
        TransferKind::Retrieve { offset: 400, .. }
    ));
    c.done(TransferOutcome::Complete { bytes: 600 });
    // REST before PASV/EPSV counts too (vsftpd and pyftpdlib keep it until
    // a transfer uses it; strict RFC 3659 order is not what clients send).
    c.send("REST 10");
    c.send("PASV");
    let plan = c.transfer("RETR /pub/a.bin");
    assert!(matches!(
        plan.kind,
        TransferKind::Retrieve { offset: 10, .. }
    ));
    c.done(TransferOutcome::Complete { bytes: 990 });
    c.send("REST 20");
    c.send("PASV");
    let _listing = c.transfer("LIST");
    c.done(TransferOutcome::Complete { bytes: 0 });
    c.send("PASV");
    let plan = c.transfer("RETR /pub/a.bin");
    assert!(matches!(
        plan.kind,
        TransferKind::Retrieve { offset: 0, .. }
    ));
}

#[test]
fn user_reply_is_the_same_for_known_and_unknown_users() {
    let mut c = Client::new();
    let known = text(&c.send("USER alice"));
    let mut d = Client::new();
    assert_eq!(known, text(&d.send("USER nobody-here")));
}

#[test]
fn failed_logins_are_delayed_and_the_third_closes() {
    let mut c = Client::new();
    for attempt in 1..=3 {
        c.send("USER alice");
        let out = c.send("PASS wrong");
        assert_eq!(out[0], Output::Delay(FAILED_LOGIN_DELAY));
        assert_eq!(codes(&out), [530]);
        assert_eq!(
            out.last() == Some(&Output::Close),
            attempt == 3,
            "attempt {attempt}"
        );
    }
}

#[test]
fn nothing_but_login_before_login() {
    let mut c = Client::new();
    for line in [
        "PWD",
        "PASV",
        "RETR x",
        "LIST",
        "CWD /",
        "SBUF 1000",
        "MKD x",
    ] {
        assert_eq!(c.codes(line), [530], "{line}");
    }
    assert_eq!(c.codes("FEAT"), [211]);
    assert_eq!(c.codes("PASS x"), [503]);
}

#[test]
fn anonymous_users_cannot_write() {
    let mut c = Client::logged_in("ftp", "");
    for line in [
        "STOR x",
        "APPE x",
        "DELE /pub/a.bin",
        "MKD d",
        "RMD pub",
        "RNFR /pub/a.bin",
        "RNTO y",
    ] {
        assert_eq!(c.codes(line), [550], "{line}");
    }
}

#[test]
fn a_writer_stores_appends_and_renames() {
    let mut c = Client::logged_in("alice", "secret");
    c.send("EPSV");
    c.send("REST 100");
    let plan = c.transfer("STOR /pub/new.bin");
    assert_eq!(
        plan.kind,
        TransferKind::Store {
            path: VirtualPath::parse(b"/pub/new.bin").unwrap(),
            offset: 100,
            append: false,
            adjust: None,
        }
    );
    c.done(TransferOutcome::Complete { bytes: 5 });
    assert_eq!(c.codes("STOR /missing-dir/x"), [553]);
    assert_eq!(c.codes("STOR /pub"), [553]);
    assert_eq!(c.codes("RNTO /pub/b.bin"), [503]);
    assert_eq!(c.codes("RNFR /pub/a.bin"), [350]);
    assert_eq!(c.codes("RNTO /pub/b.bin"), [250]);
    assert_eq!(c.codes("SIZE /pub/b.bin"), [213]);
    assert_eq!(c.codes("RNFR /pub/b.bin"), [350]);
    c.send("NOOP"); // RNTO must follow RNFR at once
    assert_eq!(c.codes("RNTO /pub/c.bin"), [503]);
    assert_eq!(text(&c.send("MKD /pub/d")), "257 \"/pub/d\" created\r\n");
}

#[test]
fn port_only_to_the_client_and_never_below_1024() {
    let mut c = Client::logged_in("anonymous", "");
    assert_eq!(c.codes("PORT 198,18,0,3,200,0"), [500], "another host");
    assert_eq!(c.codes("PORT 198,18,0,2,0,21"), [500], "a privileged port");
    assert_eq!(c.codes("EPRT |1|10.0.0.1|5000|"), [500]);
    assert_eq!(c.codes("PORT 198,18,0,2,200,0"), [200]);
    let plan = c.transfer("LIST");
    assert_eq!(
        plan.endpoint,
        DataEndpoint::Active("198.18.0.2:51200".parse().unwrap())
    );
}

#[test]
fn paths_never_leave_the_root() {
    let mut c = Client::logged_in("anonymous", "");
    assert_eq!(c.codes("CWD ../../../etc"), [550]);
    assert_eq!(c.codes("CWD ../../.."), [250]);
    assert_eq!(
        text(&c.send("PWD")),
        "257 \"/\" is the current directory\r\n"
    );
    assert_eq!(c.codes("CWD //pub//"), [250]);
    assert_eq!(c.codes("SIZE ../../pub/a.bin"), [213]);
}

#[test]
fn listings() {
    let mut c = Client::logged_in("anonymous", "");
    c.send("PASV");
    let plan = c.transfer("LIST -la /pub");
    let TransferKind::Listing(data) = plan.kind else {
        panic!("not a listing")
    };
    assert_eq!(
        String::from_utf8(data).unwrap(),
        "-rw-r--r--    1 ftp      ftp              1000 Nov 18 11:05 a.bin\r\n"
    );
    c.done(TransferOutcome::Complete { bytes: 1 });
    c.send("PASV");
    let TransferKind::Listing(data) = c.transfer("NLST /pub").kind else {
        panic!()
    };
    assert_eq!(data, b"a.bin\r\n");
    c.done(TransferOutcome::Complete { bytes: 1 });
    c.send("PASV");
    let TransferKind::Listing(data) = c.transfer("MLSD /pub").kind else {
        panic!()
    };
    assert!(
        String::from_utf8(data)
            .unwrap()
            .ends_with("type=file;size=1000;modify=20261118110540;perm=r; a.bin\r\n")
    );
    c.done(TransferOutcome::Complete { bytes: 1 });
    let mlst = text(&c.send("MLST /pub/a.bin"));
    assert!(
        mlst.starts_with("250-Listing /pub/a.bin\r\n type=file;size=1000;"),
        "{mlst}"
    );
    assert!(mlst.ends_with("\r\n250 End\r\n"));
}

#[test]
fn abort_during_a_transfer_gets_426_then_226() {
    let mut c = Client::logged_in("anonymous", "");
    c.send("PASV");
    c.transfer("RETR /pub/a.bin");
    assert_eq!(c.send("ABOR"), [Output::Abort]);
    assert_eq!(c.done(TransferOutcome::Aborted), [426, 226]);
    assert_eq!(c.codes("ABOR"), [225]);
}

#[test]
fn commands_during_a_transfer_wait_their_turn() {
    let mut c = Client::logged_in("anonymous", "");
    c.send("PASV");
    c.transfer("RETR /pub/a.bin");
    assert_eq!(c.codes("NOOP"), [200]);
    assert!(c.send("SIZE /pub/a.bin").is_empty());
    assert!(c.send("PWD").is_empty());
    assert_eq!(
        c.done(TransferOutcome::Complete { bytes: 1000 }),
        [226, 213, 257]
    );
}

#[test]
fn quit_during_a_transfer_waits_for_its_end() {
    let mut c = Client::logged_in("anonymous", "");
    c.send("PASV");
    c.transfer("RETR /pub/a.bin");
    assert!(c.send("QUIT").is_empty());
    let out = c
        .session
        .transfer_done(TransferOutcome::Complete { bytes: 1 }, &mut c.host, NOW);
    assert_eq!(codes(&out), [226, 221]);
    assert_eq!(out.last(), Some(&Output::Close));
}

#[test]
fn transfer_failures_map_to_their_codes() {
    let cases = [
        (TransferOutcome::OpenFailed(FsError::NotFound), 550),
        (TransferOutcome::DataConnectFailed("timeout".into()), 425),
        (TransferOutcome::NoBuffers("budget spent".into()), 425),
        (TransferOutcome::NetworkError("reset".into()), 426),
        (TransferOutcome::LocalError("I/O error".into()), 451),
        (TransferOutcome::StorageFull("no space left".into()), 452),
    ];
    for (outcome, code) in cases {
        let mut c = Client::logged_in("anonymous", "");
        c.send("PASV");
        c.transfer("RETR /pub/a.bin");
        assert_eq!(c.done(outcome.clone()), [code], "{outcome:?}");
    }
}

#[test]
fn sbuf_sets_the_buffer_of_later_data_connections() {
    let mut c = Client::logged_in("anonymous", "");
    assert_eq!(c.codes("SBUF 4194304"), [200]);
    assert_eq!(c.codes("SITE SBUF 8388608"), [200]);
    assert_eq!(
        text(&c.send("SBUF 0")),
        "501 SBUF takes 1 to 2147483647 bytes.\r\n"
    );
    assert_eq!(c.codes("SBUF 99999999999"), [501]);
    assert_eq!(c.codes("SBUF"), [501]);
    assert_eq!(c.codes("SBUF lots"), [501]);
    c.send("PASV");
    assert_eq!(c.transfer("RETR /pub/a.bin").sbuf, Some(8_388_608));
}

#[test]
fn feat_advertises_sbuf_and_checksums() {
    let mut c = Client::new();
    let feat = text(&c.send("FEAT"));
    for token in [
        "\r\n SBUF\r\n",
        "\r\n EPSV\r\n",
        "\r\n REST STREAM\r\n",
        "\r\n PARALLEL\r\n",
        "\r\n CKSM SHA256,MD5\r\n",
        "\r\n UTF8\r\n",
    ] {
        assert!(feat.contains(token), "{token:?} missing from {feat}");
    }
    assert!(feat.starts_with("211-") && feat.ends_with("211 End\r\n"));
}

#[test]
fn every_line_gets_exactly_one_final_reply() {
    let lines = [
        "",
        "XYZZY",
        "USER",
        "PASS",
        "TYPE Q",
        "MODE B",
        "STRU R",
        "PORT 1,2,3",
        "EPRT |9|x|1|",
        "REST abc",
        "ALLO 5",
        "OPTS FOO",
        "SITE CHMOD 777 x",
        "SITE BOGUS",
        "HELP",
        "STAT",
        "SYST",
        "NOOP",
        "CKSM CRC99 0 -1 /pub/a.bin",
        "CKSM SHA256 0 -1 /pub/a.bin",
        "HASH /pub/a.bin",
        "MDTM /pub/a.bin",
        "MDTM /nope",
        "AUTH TLS",
        "ACCT x",
        "\u{1}\u{2}\u{3}",
        "RETR /nope",
        "CWD /pub/a.bin",
    ];
    let mut c = Client::logged_in("alice", "secret");
    for line in lines {
        let mut out = c.send(line);
        if let [Output::Checksum(_)] = out.as_slice() {
            out = c
                .session
                .checksum_done(ChecksumOutcome::Done("00ff".into()), &mut c.host, NOW);
        }
        let finals: Vec<u16> = codes(&out)
            .into_iter()
            .filter(|&code| code >= 200)
            .collect();
        assert_eq!(finals.len(), 1, "{line:?} gave {out:?}");
    }
}

#[test]
fn unknown_commands_get_502() {
    let mut c = Client::logged_in("anonymous", "");
    assert_eq!(c.codes("XYZZY"), [502]);
    assert_eq!(c.codes("SITE BOGUS"), [500]);
}

#[test]
fn anonymous_may_read_the_zero_source_and_store_into_the_sink_only() {
    let (mut session, _) = Session::new(SessionConfig::default(), PEER);
    let mut host = bench::BenchHost::new(MemHost::new(), NOW);
    let mut send = |line: &str| session.handle(ftp::parse(line.as_bytes()), &mut host, NOW);
    assert_eq!(codes(&send("USER anonymous")), [331]);
    assert_eq!(codes(&send("PASS x@y")), [230]);
    assert_eq!(
        text(&send("SIZE /.rightsize/zero/1G")),
        "213 1073741824\r\n"
    );
    assert_eq!(codes(&send("SIZE /.rightsize/zero/lots")), [550]);
    assert_eq!(codes(&send("CWD /.rightsize/null")), [250]);
    assert_eq!(codes(&send("STOR /pub/b.bin")), [550]);
    assert_eq!(codes(&send("DELE /.rightsize/zero/1G")), [550]);
    assert_eq!(codes(&send("EPSV")), [229]);
    match send("STOR x.bin").as_slice() {
        [Output::Transfer(plan)] => assert_eq!(
            plan.kind,
            TransferKind::Store {
                path: VirtualPath::parse(b"/.rightsize/null/x.bin").unwrap(),
                offset: 0,
                append: false,
                adjust: None,
            }
        ),
        other => panic!("expected a transfer, got {other:?}"),
    }
}

#[test]
fn listing_the_zero_directory_shows_example_sizes() {
    let mut host = bench::BenchHost::new(MemHost::new(), NOW);
    let entries = host
        .read_dir(&VirtualPath::parse(b"/.rightsize/zero").unwrap())
        .unwrap();
    assert_eq!(entries.len(), bench::LISTED_ZERO_SIZES.len());
    assert_eq!(entries[3].name, b"1G");
    assert_eq!(entries[3].metadata.size, 1 << 30);
    assert_eq!(
        host.make_dir(&VirtualPath::parse(b"/.rightsize/x").unwrap()),
        Err(FsError::PermissionDenied)
    );
}

#[test]
fn mode_e_retrieves_over_the_connections_asked_for_from_the_active_side_only() {
    let mut c = Client::logged_in("alice", "secret");
    assert_eq!(text(&c.send("MODE E")), "200 Mode set to E.\r\n");
    assert_eq!(c.codes("OPTS RETR Parallelism=4,4,4;"), [200]);
    assert_eq!(c.codes("OPTS RETR Parallelism=99,1,99;"), [501]);
    assert_eq!(c.codes("PORT 198,18,0,2,200,0"), [200]);
    let plan = c.transfer("RETR /pub/a.bin");
    assert_eq!(plan.extended, Some(4));
    c.done(TransferOutcome::Complete { bytes: 3 });
    // The PORT address stays for the next file, as a tree needs.
    assert_eq!(c.transfer("RETR /pub/a.bin").endpoint, plan.endpoint);
    c.done(TransferOutcome::Complete { bytes: 3 });
    // A listing goes over one connection.
    assert_eq!(c.transfer("MLSD /pub").extended, Some(1));
    c.done(TransferOutcome::Complete { bytes: 3 });
    // The receiver listens: a passive RETR in MODE E is refused, and so
    // is an active STOR.
    assert_eq!(c.codes("STOR /pub/new.bin"), [425]);
    assert_eq!(c.codes("APPE /pub/new.bin"), [504]);
    assert_eq!(c.codes("PASV"), [227]);
    assert_eq!(c.codes("RETR /pub/a.bin"), [425]);
    let plan = c.transfer("STOR /pub/new.bin");
    assert_eq!(plan.extended, Some(4));
    c.done(TransferOutcome::Complete { bytes: 3 });
    assert_eq!(c.transfer("STOR /pub/other.bin").endpoint, plan.endpoint);
    c.done(TransferOutcome::Complete { bytes: 3 });
    assert_eq!(text(&c.send("MODE S")), "200 Mode set to S.\r\n");
    c.send("PASV");
    assert_eq!(c.transfer("LIST").extended, None);
}

#[test]
fn rest_with_ranges_leaves_them_out_in_mode_e_and_is_a_prefix_in_stream_mode() {
    let mut c = Client::logged_in("alice", "secret");
    // Stream mode: 0-N is REST N; ranges with holes need MODE E.
    c.send("PASV");
    assert_eq!(c.codes("REST 0-100"), [350]);
    assert!(matches!(
        c.transfer("RETR /pub/a.bin").kind,
        TransferKind::Retrieve { offset: 100, .. }
    ));
    c.done(TransferOutcome::Complete { bytes: 900 });
    assert_eq!(c.codes("REST 0-10,20-30"), [501]);
    c.send("MODE E");
    assert_eq!(c.codes("PORT 198,18,0,2,200,0"), [200]);
    assert_eq!(c.codes("REST 0-10,20-30"), [350]);
    let TransferKind::Retrieve { offset, done, .. } = c.transfer("RETR /pub/a.bin").kind else {
        panic!("a retrieve")
    };
    assert_eq!((offset, done.as_slice()), (0, &[(0, 10), (20, 30)][..]));
    c.done(TransferOutcome::Complete { bytes: 980 });
    // For the next transfer only.
    let TransferKind::Retrieve { done, .. } = c.transfer("RETR /pub/a.bin").kind else {
        panic!("a retrieve")
    };
    assert!(done.as_slice().is_empty());
    c.done(TransferOutcome::Complete { bytes: 1000 });
    assert_eq!(c.codes("REST 5-1"), [501]);
}

#[test]
fn a_checksum_is_computed_beside_the_session_and_answered_when_done() {
    let mut c = Client::logged_in("alice", "secret");
    let out = c.send("CKSM sha256 10 100 /pub/a.bin");
    assert_eq!(
        out,
        [Output::Checksum(ChecksumJob {
            path: VirtualPath::parse(b"/pub/a.bin").unwrap(),
            algorithm: crate::checksum::Algorithm::Sha256,
            offset: 10,
            length: Some(100),
        })]
    );
    assert!(c.session.is_checksumming() && !c.session.is_transferring());
    assert_eq!(c.session.read_timeout(), None);
    // STAT and NOOP are answered meanwhile; other commands wait.
    assert_eq!(text(&c.send("STAT")), "213 Checksum in progress.\r\n");
    assert_eq!(c.codes("NOOP"), [200]);
    assert_eq!(c.codes("PASV"), Vec::<u16>::new());
    assert_eq!(c.codes("SIZE /pub/a.bin"), Vec::<u16>::new());
    let out = c
        .session
        .checksum_done(ChecksumOutcome::Done("abcd".into()), &mut c.host, NOW);
    assert_eq!(codes(&out), [213, 227, 213]);
    assert!(text(&out).starts_with("213 abcd\r\n227 "));
    assert!(!c.session.is_checksumming());
}

#[test]
fn abor_stops_a_checksum_with_426_then_226() {
    let mut c = Client::logged_in("alice", "secret");
    assert!(matches!(
        c.send("CKSM MD5 0 -1 /pub/a.bin").as_slice(),
        [Output::Checksum(_)]
    ));
    assert_eq!(c.send("ABOR"), [Output::Abort]);
    let out = c
        .session
        .checksum_done(ChecksumOutcome::Aborted, &mut c.host, NOW);
    assert_eq!(
        text(&out),
        "426 Checksum aborted.\r\n226 ABOR successful.\r\n"
    );
    assert_eq!(c.codes("NOOP"), [200]);
}

#[test]
fn abor_that_comes_as_the_work_ends_still_gets_its_226() {
    let mut c = Client::logged_in("alice", "secret");
    assert!(matches!(
        c.send("CKSM MD5 0 -1 /pub/a.bin").as_slice(),
        [Output::Checksum(_)]
    ));
    assert_eq!(c.send("ABOR"), [Output::Abort]);
    let out = c
        .session
        .checksum_done(ChecksumOutcome::Done("ab".into()), &mut c.host, NOW);
    assert_eq!(text(&out), "213 ab\r\n226 ABOR successful.\r\n");
    assert_eq!(c.codes("PASV"), [227]);
    c.transfer("RETR /pub/a.bin");
    assert_eq!(c.send("ABOR"), [Output::Abort]);
    assert_eq!(
        c.done(TransferOutcome::Complete { bytes: 1000 }),
        [226, 226]
    );
    // Not twice for one ABOR.
    assert_eq!(c.codes("NOOP"), [200]);
}

#[test]
fn quit_during_a_checksum_waits_for_its_reply() {
    let mut c = Client::logged_in("alice", "secret");
    assert!(matches!(
        c.send("HASH /pub/a.bin").as_slice(),
        [Output::Checksum(_)]
    ));
    assert!(c.send("QUIT").is_empty());
    let out = c
        .session
        .checksum_done(ChecksumOutcome::Done("ee".into()), &mut c.host, NOW);
    assert_eq!(
        text(&out),
        "213 SHA-256 0-999 ee /pub/a.bin\r\n221 Goodbye.\r\n"
    );
    assert_eq!(out.last(), Some(&Output::Close));
}

#[test]
fn checksums_of_what_is_not_a_file_or_cannot_be_read_get_550() {
    let mut c = Client::logged_in("alice", "secret");
    assert_eq!(c.codes("CKSM MD5 0 -1 /nope"), [550]);
    assert_eq!(c.codes("CKSM MD5 0 -1 /pub"), [550]);
    assert_eq!(c.codes("HASH /pub"), [550]);
    assert_eq!(c.codes("CKSM ADLER32 0 -1 /pub/a.bin"), [504]);
    assert!(matches!(
        c.send("CKSM MD5 0 -1 /pub/a.bin").as_slice(),
        [Output::Checksum(_)]
    ));
    let out = c.session.checksum_done(
        ChecksumOutcome::Failed(FsError::PermissionDenied),
        &mut c.host,
        NOW,
    );
    assert_eq!(text(&out), "550 Could not compute the checksum.\r\n");
}

#[test]
fn a_retrieve_of_what_is_not_there_or_not_a_file_says_which() {
    let mut c = Client::logged_in("alice", "secret");
    assert_eq!(
        text(&c.send("RETR /nope")),
        "550 No such file or directory.\r\n"
    );
    assert_eq!(text(&c.send("RETR /pub")), "550 Is a directory.\r\n");
    assert_eq!(
        text(&c.session.transfer_done(
            TransferOutcome::OpenFailed(FsError::NotFound),
            &mut c.host,
            NOW
        )),
        "550 No such file or directory.\r\n"
    );
}
