#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;

use super::super::tests::{Client, codes, text};
use crate::markers::MarkerSchedule;
use crate::session::{DataEndpoint, TransferKind, TransferOutcome};

#[test]
fn feat_and_help_name_the_gridftp_commands() {
    let mut c = Client::new();
    let feat = text(&c.send("FEAT"));
    for line in [" ERET\r\n", " ESTO\r\n", " SPAS\r\n", " SPOR\r\n"] {
        assert!(feat.contains(line), "{line:?} in {feat}");
    }
    let help = text(&c.send("HELP"));
    for verb in ["ERET", "ESTO", "SPAS", "SPOR"] {
        assert!(help.contains(verb), "{verb} in {help}");
    }
}

#[test]
fn spas_answers_the_striped_reply_and_a_store_accepts_on_it() {
    let mut c = Client::logged_in("alice", "secret");
    c.send("MODE E");
    assert_eq!(
        text(&c.send("SPAS")),
        "229-Entering Striped Passive Mode.\r\n 198,18,0,1,195,80\r\n229 End\r\n"
    );
    let plan = c.transfer("STOR /pub/new.bin");
    assert_eq!(
        plan.endpoint,
        DataEndpoint::Passive("198.18.0.1:50000".parse().unwrap())
    );
    c.done(TransferOutcome::Complete { bytes: 1 });
    assert_eq!(c.codes("SPAS 2"), [504]);
}

#[test]
fn spas_is_refused_after_epsv_all() {
    let mut c = Client::logged_in("alice", "secret");
    assert_eq!(c.codes("EPSV ALL"), [200]);
    assert_eq!(c.codes("SPAS"), [501]);
}

#[test]
fn spor_connects_to_the_first_stripe_and_checks_every_address() {
    let mut c = Client::logged_in("alice", "secret");
    c.send("MODE E");
    assert_eq!(c.codes("SPOR 198,18,0,2,200,0 198,18,0,2,200,1"), [200]);
    let plan = c.transfer("RETR /pub/a.bin");
    let first: SocketAddr = "198.18.0.2:51200".parse().unwrap();
    assert_eq!(plan.endpoint, DataEndpoint::Active(first));
    c.done(TransferOutcome::Complete { bytes: 1000 });
    // Another host, or a privileged port, in any place: the bounce attack.
    assert_eq!(c.codes("SPOR 198,18,0,2,200,0 10,0,0,9,200,0"), [500]);
    assert_eq!(c.codes("SPOR 198,18,0,2,0,21"), [500]);
    let out = c.send("SPOR 198,18,0,2,200,0 nonsense");
    assert_eq!(codes(&out), [501]);
    assert_eq!(c.codes("SPOR"), [501]);
}

#[test]
fn eret_sends_the_part_asked_for_cut_at_the_end_of_the_file() {
    let mut c = Client::logged_in("anonymous", "x@y");
    c.send("MODE E");
    c.send("PORT 198,18,0,2,200,0");
    let plan = c.transfer("ERET P 100 200 /pub/a.bin");
    assert!(matches!(
        plan.kind,
        TransferKind::Retrieve {
            offset: 100,
            length: Some(200),
            ..
        }
    ));
    assert!(plan.start_reply.text().contains("(200 bytes)"));
    c.done(TransferOutcome::Complete { bytes: 200 });
    // a.bin has 1000 bytes.
    let plan = c.transfer("ERET P 900 500 /pub/a.bin");
    assert!(matches!(
        plan.kind,
        TransferKind::Retrieve {
            offset: 900,
            length: Some(100),
            ..
        }
    ));
    c.done(TransferOutcome::Complete { bytes: 100 });
    assert_eq!(c.codes("ERET P 0 10 /pub/missing"), [550]);
    assert_eq!(c.codes("ERET X 0 10 /pub/a.bin"), [504]);
    assert_eq!(c.codes("ERET P 0 /pub/a.bin"), [501]);
}

#[test]
fn esto_shifts_the_blocks_and_needs_write_access() {
    let mut c = Client::logged_in("anonymous", "x@y");
    c.send("MODE E");
    c.send("PASV");
    assert_eq!(c.codes("ESTO A 4096 /pub/a.bin"), [550]);
    let mut c = Client::logged_in("alice", "secret");
    c.send("MODE E");
    c.send("PASV");
    c.send("REST 10");
    let plan = c.transfer("ESTO A 4096 /pub/a.bin");
    assert!(matches!(
        plan.kind,
        TransferKind::Store {
            offset: 0,
            append: false,
            adjust: Some(4096),
            ..
        }
    ));
    assert_eq!(plan.markers, MarkerSchedule::STORE);
    c.done(TransferOutcome::Complete { bytes: 10 });
    assert_eq!(c.codes("ESTO B 1 /pub/a.bin"), [504]);
    assert_eq!(c.codes("ESTO A x /pub/a.bin"), [501]);
}

#[test]
fn markers_only_in_mode_e_and_on_a_retrieve_only_when_asked() {
    let mut c = Client::logged_in("alice", "secret");
    // Stream mode: never (curl and ftplib break on a 1yz they did not ask for).
    c.send("PASV");
    assert_eq!(c.transfer("STOR /pub/s.bin").markers, MarkerSchedule::NONE);
    c.done(TransferOutcome::Complete { bytes: 1 });
    c.send("MODE E");
    c.send("PASV");
    assert_eq!(c.transfer("STOR /pub/e.bin").markers, MarkerSchedule::STORE);
    c.done(TransferOutcome::Complete { bytes: 1 });
    c.send("PORT 198,18,0,2,200,0");
    assert_eq!(c.transfer("RETR /pub/a.bin").markers, MarkerSchedule::NONE);
    c.done(TransferOutcome::Complete { bytes: 1000 });
    assert_eq!(c.codes("OPTS RETR markers=3;"), [200]);
    assert_eq!(
        c.transfer("RETR /pub/a.bin").markers,
        MarkerSchedule::retrieve(3)
    );
    c.done(TransferOutcome::Complete { bytes: 1000 });
    // Parallelism alone leaves the marker setting as it was.
    assert_eq!(c.codes("OPTS RETR Parallelism=2,2,2;"), [200]);
    assert_eq!(
        c.transfer("RETR /pub/a.bin").markers,
        MarkerSchedule::retrieve(3)
    );
    c.done(TransferOutcome::Complete { bytes: 1000 });
    assert_eq!(c.transfer("MLSD /pub").markers, MarkerSchedule::NONE);
    c.done(TransferOutcome::Complete { bytes: 10 });
    assert_eq!(c.codes("OPTS RETR markers=soon;"), [501]);
}

#[test]
fn trev_sets_the_intervals_of_a_stores_markers() {
    let mut c = Client::logged_in("alice", "secret");
    c.send("MODE E");
    assert_eq!(c.codes("TREV PERF 1"), [200]);
    assert_eq!(c.codes("TREV restart 0"), [200]);
    c.send("PASV");
    let markers = c.transfer("STOR /pub/e.bin").markers;
    assert_eq!(markers.perf, Some(std::time::Duration::from_secs(1)));
    assert_eq!(markers.ranges, None);
    c.done(TransferOutcome::Complete { bytes: 1 });
    assert_eq!(c.codes("TREV BYTES 1"), [504]);
    assert_eq!(c.codes("TREV PERF soon"), [501]);
    assert_eq!(c.codes("TREV PERF"), [501]);
}
