//! The budget's shares, and a tuner held within them.

#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};

use super::*;
use crate::tests::{ctx, rx_sample, tuner};
use crate::{Peer, Role};

const MB: u64 = 1_000_000;

#[test]
fn a_connection_is_admitted_only_while_every_one_can_have_its_least() {
    let mut b = Budget::new(Bytes(3 * min_cost() + 1));
    let ids: Vec<u64> = (0..3).map(|_| b.open().unwrap()).collect();
    let refused = b.open().unwrap_err();
    assert_eq!(refused.connections, 3);
    assert!(refused.to_string().contains("try again"), "{refused}");
    b.close(ids[1]);
    assert!(
        b.open().is_ok(),
        "a closed connection's share is free at once"
    );
}

#[test]
fn a_newcomer_fits_once_the_others_gave_back_what_it_needs() {
    let mut b = Budget::new(Bytes(4 * MB));
    let first = b.open().unwrap();
    assert_eq!(b.grant(first, 8 * MB), 4 * MB);
    assert!(b.fits());
    let newcomer = b.open().unwrap();
    assert!(!b.fits(), "the first still holds all of it");
    assert_eq!(b.follow(first), 4 * MB - min_cost());
    assert!(b.fits());
    b.close(newcomer);
    assert!(b.fits());
}

#[test]
fn wants_that_fit_are_met_and_the_rest_is_shared_by_water_filling() {
    let mut b = Budget::new(Bytes(10 * MB));
    let small = b.open().unwrap();
    let big = b.open().unwrap();
    assert_eq!((b.grant(small, MB), b.grant(big, 4 * MB)), (MB, 4 * MB));
    // A third wants 8 MB: 13 MB do not fit. The level is 5 MB: the two
    // below it keep their wants, the third gets the 5 MB left.
    let hungry = b.open().unwrap();
    assert_eq!(b.grant(hungry, 8 * MB), 5 * MB);
    assert_eq!((b.follow(small), b.follow(big)), (MB, 4 * MB));
    let usage = b.usage();
    assert_eq!(
        (usage.held, usage.wanted, usage.connections),
        (10 * MB, 13 * MB, 3)
    );
    // What they hold together is within the limit, whatever the wants.
    for want in [0, 1, MB, 7 * MB, 100 * MB] {
        b.grant(small, want);
        assert!(b.usage().held <= 10 * MB, "want {want}");
    }
}

#[test]
fn a_grant_is_never_what_another_still_holds() {
    let mut b = Budget::new(Bytes(10 * MB));
    let first = b.open().unwrap();
    assert_eq!(b.grant(first, 9 * MB), 9 * MB);
    // A second wants as much: its share is 5 MB, but the first holds 9
    // until its next sample; the second gets the 1 MB left for now.
    let second = b.open().unwrap();
    assert_eq!(b.grant(second, 9 * MB), MB);
    assert_eq!(b.follow(first), 5 * MB, "the first gives back");
    assert_eq!(b.follow(second), 5 * MB, "then the second takes it");
}

#[test]
fn a_receiver_sets_its_buffer_after_the_handshake_and_a_sender_before_the_other_one_small() {
    let budget = Arc::new(Mutex::new(Budget::new(Bytes(10 * MB))));
    let rx = Budgeted::new(
        tuner("auto", Role::Receiver, Peer::Other),
        Role::Receiver,
        &budget,
    )
    .unwrap();
    let setup = rx.setup();
    assert_eq!(
        setup.pre_handshake.rcvbuf, None,
        "the window scale stays free"
    );
    assert_eq!(setup.pre_handshake.sndbuf, Some(OTHER));
    assert_eq!(setup.after_connect.rcvbuf, Some(MIN_MAIN));
    let tx = Budgeted::new(
        tuner("kernel", Role::Sender, Peer::Other),
        Role::Sender,
        &budget,
    )
    .unwrap();
    let setup = tx.setup();
    assert_eq!(
        setup.pre_handshake.sndbuf,
        Some(MIN_MAIN),
        "fixed: it would grow by itself"
    );
    assert_eq!(setup.pre_handshake.rcvbuf, Some(OTHER));
    drop((rx, tx));
    assert_eq!(
        budget.lock().unwrap().usage().connections,
        0,
        "dropped: closed"
    );
}

/// `static:SIZE` asks for SIZE after every sample it is given.
fn fixed(size: &str, role: Role, budget: &Arc<Mutex<Budget>>) -> Budgeted {
    let spec: crate::TunerSpec = format!("static:{size}").parse().unwrap();
    Budgeted::new(spec.build(ctx(role, Peer::Other)), role, budget).unwrap()
}

fn rcvbuf(d: &Decision) -> Option<u64> {
    d.actions.iter().find_map(|a| match a {
        Action::SetRcvBuf(b) => Some(b.0),
        _ => None,
    })
}

#[test]
fn a_request_is_cut_to_the_allowance_and_follows_it_down_and_back_up() {
    // Room for 4 MB of main buffer (stored: twice, with the other one).
    let limit = cost(4 * MB);
    let budget = Arc::new(Mutex::new(Budget::new(Bytes(limit))));
    let mut first = fixed("3MB", Role::Receiver, &budget);
    // The budget's allowance from the start.
    assert!(first.setup().after_connect.rcvbuf.unwrap().0 <= 3 * MB);
    // A request within the allowance goes through whole.
    assert_eq!(
        first.within(Action::SetRcvBuf(Bytes(3 * MB))),
        Action::SetRcvBuf(Bytes(3 * MB))
    );
    // A second connection wants as much: 6 MB do not fit in 4. It gets
    // what the first leaves free now (1 MB); the first comes down to
    // half of the budget at its next sample, the second up to it at its.
    let mut second = fixed("3MB", Role::Receiver, &budget);
    let got = second.within(Action::SetRcvBuf(Bytes(3 * MB)));
    assert_eq!(
        got,
        Action::SetRcvBuf(Bytes(main_for(limit - cost(3 * MB))))
    );
    let half = main_for(limit / 2);
    let d = first.on_event(&rx_sample(30, 0, 100, 65_535, 131_072));
    assert_eq!(rcvbuf(&d), Some(half), "cut at the next sample");
    let d = second.on_event(&rx_sample(30, 0, 100, 65_535, 131_072));
    assert_eq!(rcvbuf(&d), Some(half), "and the second takes what it left");
    // The second one ends: the first goes back to its want.
    drop(second);
    let d = first.on_event(&rx_sample(40, 0, 100, 65_535, 131_072));
    assert_eq!(rcvbuf(&d), Some(3 * MB));
    assert!(first.next_wakeup().unwrap() <= crate::tests::ms(50));
}

#[test]
fn a_tuner_within_a_budget_never_asks_for_the_other_buffer_beyond_its_fixed_size() {
    let budget = Arc::new(Mutex::new(Budget::new(Bytes(10 * MB))));
    let mut rx = Budgeted::new(
        tuner("auto", Role::Receiver, Peer::Other),
        Role::Receiver,
        &budget,
    )
    .unwrap();
    assert_eq!(
        rx.within(Action::SetSndBuf(Bytes(MB))),
        Action::SetSndBuf(OTHER)
    );
    assert_eq!(
        rx.within(Action::SetWindowClamp(Bytes(MB))),
        Action::SetWindowClamp(Bytes(MB))
    );
}
