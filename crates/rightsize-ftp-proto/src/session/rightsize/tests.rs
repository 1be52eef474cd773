//! The RIGHTSIZE extension in a server session: FEAT, OPTS, and SBUF and
//! RINF during a transfer.

#![allow(clippy::unwrap_used)]

use crate::rightsize::{Capability, RightsizeFeature, server_udp_port};
use crate::session::tests::{Client, codes, text};
use crate::session::*;
use rightsize_tune::PeerInfo;

/// A logged-in anonymous client with a RETR running.
fn transferring(extension_on: bool) -> Client {
    let mut c = Client::logged_in("anonymous", "");
    if extension_on {
        assert_eq!(c.codes("OPTS RIGHTSIZE ON"), [200]);
    }
    c.send("PASV");
    c.transfer("RETR /pub/a.bin");
    c
}

fn only_reply(outputs: &[Output]) -> &Reply {
    match outputs {
        [Output::Reply(r)] => r,
        other => panic!("expected one reply, got {other:?}"),
    }
}

#[test]
fn feat_lists_the_extension_and_its_capabilities() {
    let mut c = Client::new();
    let out = c.send("FEAT");
    assert!(
        text(&out).contains("\r\n RIGHTSIZE SBUF;INFO;HOST;TUNE;PART;\r\n"),
        "{}",
        text(&out)
    );
    let Output::Reply(feat) = &out[0] else {
        panic!("{out:?}")
    };
    let found: Vec<RightsizeFeature> = feat
        .lines()
        .iter()
        .filter_map(|l| RightsizeFeature::parse(l))
        .collect();
    assert_eq!(found, [RightsizeFeature::offered()]);
    assert!(found[0].has(Capability::Sbuf) && found[0].has(Capability::Info));
}

#[test]
fn help_lists_rinf() {
    let mut c = Client::new();
    assert!(text(&c.send("HELP")).contains(" RINF "));
}

#[test]
fn opts_rightsize_turns_the_extension_on_and_off() {
    let mut c = Client::logged_in("anonymous", "");
    assert!(!c.session.rightsize_on());
    assert_eq!(
        only_reply(&c.send("opts rightsize on")).encode(),
        b"200 RIGHTSIZE ON.\r\n"
    );
    assert!(c.session.rightsize_on());
    assert_eq!(c.session.client_probe_port(), None);
    assert_eq!(
        only_reply(&c.send("OPTS RIGHTSIZE Off")).encode(),
        b"200 RIGHTSIZE OFF.\r\n"
    );
    assert!(!c.session.rightsize_on());
}

#[test]
fn opts_rightsize_needs_a_login() {
    let mut c = Client::new();
    assert_eq!(c.codes("OPTS RIGHTSIZE ON"), [530]);
    assert!(!c.session.rightsize_on());
}

#[test]
fn a_probe_port_below_1024_is_refused_as_port_refuses_one() {
    let mut c = Client::logged_in("anonymous", "");
    let reply = only_reply(&c.send("OPTS RIGHTSIZE ON UDP=22")).clone();
    assert_eq!(reply.code(), 501);
    assert!(
        reply.text().contains("UDP=22") && reply.text().contains("1024"),
        "{reply}"
    );
    assert!(!c.session.rightsize_on());
    assert_eq!(
        only_reply(&c.send("OPTS RIGHTSIZE ON UDP=1024")).code(),
        200
    );
}

#[test]
fn opts_rightsize_with_a_udp_port_names_the_servers_only_if_it_has_one() {
    let mut c = Client::logged_in("anonymous", "");
    let reply = only_reply(&c.send("OPTS RIGHTSIZE ON UDP=40001")).clone();
    assert_eq!(reply.encode(), b"200 RIGHTSIZE ON.\r\n");
    assert_eq!(server_udp_port(&reply), None);
    assert_eq!(c.session.client_probe_port(), Some(40001));

    c.session.set_probe_port(Some(9000));
    let reply = only_reply(&c.send("OPTS RIGHTSIZE ON udp=40002")).clone();
    assert_eq!(reply.encode(), b"200 RIGHTSIZE ON UDP=9000.\r\n");
    assert_eq!(server_udp_port(&reply).map(|p| p.get()), Some(9000));
    assert_eq!(c.session.client_probe_port(), Some(40002));

    // A plain ON forgets the client's port and names no server port.
    assert_eq!(
        only_reply(&c.send("OPTS RIGHTSIZE ON")).encode(),
        b"200 RIGHTSIZE ON.\r\n"
    );
    assert_eq!(c.session.client_probe_port(), None);
    c.send("OPTS RIGHTSIZE ON UDP=40003");
    c.send("OPTS RIGHTSIZE OFF");
    assert_eq!(c.session.client_probe_port(), None);
}

#[test]
fn opts_rightsize_with_anything_else_is_501_quoting_it() {
    let mut c = Client::logged_in("anonymous", "");
    for (line, quoted) in [
        ("OPTS RIGHTSIZE MAYBE", "\"MAYBE\""),
        ("OPTS RIGHTSIZE", "\"\""),
        ("OPTS RIGHTSIZE ON UDP=0", "\"ON UDP=0\""),
        ("OPTS RIGHTSIZE ON UDP=65536", "\"ON UDP=65536\""),
        ("OPTS RIGHTSIZE ON TCP=5", "\"ON TCP=5\""),
        ("OPTS RIGHTSIZE OFF UDP=5", "\"OFF UDP=5\""),
        ("OPTS RIGHTSIZE ON ON", "\"ON ON\""),
    ] {
        let reply = only_reply(&c.send(line)).clone();
        assert_eq!(reply.code(), 501, "{line}");
        assert!(reply.text().contains(quoted), "{line}: {reply}");
        assert!(reply.text().contains("ON UDP=<port>"), "{line}: {reply}");
    }
    assert!(!c.session.rightsize_on());
    // A quoted control byte cannot break the reply line.
    let out = c.send("OPTS RIGHTSIZE \r\x07");
    assert_eq!(codes(&out), [501]);
    assert!(!text(&out).trim_end().contains(['\r', '\n']));
}

#[test]
fn sbuf_during_a_transfer_with_the_extension_on_goes_to_the_tuner() {
    let mut c = transferring(true);
    let out = c.send("SBUF 4194304");
    assert_eq!(out.len(), 2, "{out:?}");
    assert_eq!(out[0], Output::Peer(PeerMessage::Size(4_194_304)));
    assert_eq!(
        text(&out[1..]),
        "200 SBUF 4194304 for the running transfer.\r\n"
    );
    // Bad sizes: 501 at once, nothing for the tuner, the transfer goes on.
    for line in ["SBUF 0", "SBUF 99999999999", "SBUF lots", "SBUF"] {
        assert_eq!(c.codes(line), [501], "{line}");
    }
    assert!(c.session.is_transferring());
    // The same range, in the same words, as between transfers.
    assert_eq!(
        text(&c.send("SBUF 0")),
        "501 SBUF takes 1 to 2147483647 bytes.\r\n"
    );
    assert_eq!(c.done(TransferOutcome::Complete { bytes: 1000 }), [226]);
    // The size was for that transfer only.
    c.send("PASV");
    assert_eq!(c.transfer("RETR /pub/a.bin").sbuf, None);
}

#[test]
fn sbuf_during_a_transfer_with_the_extension_off_waits_and_sizes_the_next() {
    let mut c = transferring(false);
    assert!(c.send("SBUF 4194304").is_empty());
    assert_eq!(
        c.done(TransferOutcome::Complete { bytes: 1000 }),
        [226, 200]
    );
    c.send("PASV");
    assert_eq!(c.transfer("RETR /pub/a.bin").sbuf, Some(4_194_304));
}

#[test]
fn site_sbuf_during_a_transfer_still_sizes_the_next() {
    let mut c = transferring(true);
    assert!(c.send("SITE SBUF 8388608").is_empty());
    assert_eq!(
        c.done(TransferOutcome::Complete { bytes: 1000 }),
        [226, 200]
    );
    c.send("PASV");
    assert_eq!(c.transfer("RETR /pub/a.bin").sbuf, Some(8_388_608));
}

#[test]
fn rinf_during_a_transfer_goes_to_the_tuner() {
    let mut c = transferring(true);
    let out = c.send("RINF busy=5000;rwnd=10;rate=94000000;minrtt=20100;future=x;");
    let info = PeerInfo {
        busy_time_us: Some(5000),
        rwnd_limited_us: Some(10),
        delivery_rate_bps: Some(94_000_000),
        min_rtt_us: Some(20_100),
        ..PeerInfo::default()
    };
    assert_eq!(out.len(), 2, "{out:?}");
    assert_eq!(out[0], Output::Peer(PeerMessage::Info(info)));
    assert_eq!(text(&out[1..]), "200 RINF ok.\r\n");
    assert_eq!(c.done(TransferOutcome::Complete { bytes: 1000 }), [226]);
}

#[test]
fn bad_rinf_during_a_transfer_gets_501_naming_the_fact() {
    let mut c = transferring(true);
    for (line, piece) in [
        ("RINF busy=1;busy=2", "busy=2"),
        ("RINF rtt=4294967296", "rtt=4294967296"),
        ("RINF rate=fast", "rate=fast"),
        ("RINF =5", "=5"),
        ("RINF busy", "busy"),
        ("RINF busy=1;;rtt=2", "\"\""),
    ] {
        let out = c.send(line);
        let reply = only_reply(&out);
        assert_eq!(reply.code(), 501, "{line}");
        assert!(reply.text().contains(piece), "{line}: {reply}");
    }
    let long = format!("RINF busy={}", "9".repeat(3000));
    let out = c.send(&long);
    let reply = only_reply(&out);
    assert_eq!(reply.code(), 501);
    assert!(reply.text().len() < 300, "{reply}");
    assert!(!reply.text().contains(['\r', '\n']));
    assert!(c.session.is_transferring());
    assert_eq!(c.done(TransferOutcome::Complete { bytes: 1000 }), [226]);
}

#[test]
fn rinf_outside_a_transfer_or_with_the_extension_off_is_503() {
    let mut c = Client::logged_in("anonymous", "");
    for line in ["RINF busy=1", "RINF busy=x"] {
        let out = c.send(line);
        assert_eq!(text(&out), format!("503 {RINF_REFUSED}\r\n"), "{line}");
    }
    c.send("OPTS RIGHTSIZE ON");
    assert_eq!(c.codes("RINF busy=1"), [503]);

    // Off during a transfer: it waits its turn, as any command did before
    // the extension, and is refused then.
    let mut c = transferring(false);
    assert!(c.send("RINF busy=1").is_empty());
    assert!(c.send("RINF busy=x").is_empty());
    assert_eq!(
        c.done(TransferOutcome::Complete { bytes: 1000 }),
        [226, 503, 503]
    );
}

#[test]
fn notices_only_during_a_transfer_with_the_extension_on() {
    let c = transferring(false);
    assert!(!c.session.notices_allowed());
    let mut c = Client::logged_in("anonymous", "");
    c.send("OPTS RIGHTSIZE ON");
    assert!(!c.session.notices_allowed());
    c.send("PASV");
    c.transfer("RETR /pub/a.bin");
    assert!(c.session.notices_allowed());
    c.done(TransferOutcome::Complete { bytes: 1000 });
    assert!(!c.session.notices_allowed());
}

#[test]
fn turning_the_extension_off_takes_effect_after_the_transfer() {
    let mut c = transferring(true);
    assert!(c.send("OPTS RIGHTSIZE OFF").is_empty());
    assert!(c.session.rightsize_on());
    assert_eq!(c.codes("RINF"), [200]);
    assert_eq!(
        c.done(TransferOutcome::Complete { bytes: 1000 }),
        [226, 200]
    );
    assert!(!c.session.rightsize_on());
}

#[test]
fn site_rightsize_part_says_how_much_of_a_cut_upload_is_kept() {
    let mut c = Client::logged_in("anonymous", "");
    c.host.kept.insert(b"/pub/big file.bin".to_vec(), 3_216_912);
    // Relative to the working directory, spaces and all.
    assert_eq!(c.codes("CWD /pub"), [250]);
    let out = c.send("SITE RIGHTSIZE PART big file.bin");
    assert_eq!(codes(&out), [213], "{}", text(&out));
    assert!(text(&out).starts_with("213 3216912"), "{}", text(&out));
    let out = c.send("SITE RIGHTSIZE part /pub/big file.bin");
    assert_eq!(codes(&out), [213], "{}", text(&out));
    let out = c.send("SITE RIGHTSIZE PART a.bin");
    assert_eq!(codes(&out), [550]);
    assert!(
        text(&out).contains("no part of \"a.bin\" is kept"),
        "{}",
        text(&out)
    );
    let out = c.send("SITE RIGHTSIZE PART");
    assert_eq!(codes(&out), [501]);
    assert!(text(&out).contains("PART <path>"), "{}", text(&out));
}
