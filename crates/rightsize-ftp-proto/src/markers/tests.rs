#![allow(clippy::unwrap_used)]

use super::*;

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

fn ranges(pairs: &[(u64, u64)]) -> Ranges {
    let mut r = Ranges::new();
    for &(a, b) in pairs {
        r.add(a, b);
    }
    r
}

fn wire(replies: &[Reply]) -> String {
    replies
        .iter()
        .map(|r| String::from_utf8(r.encode()).unwrap())
        .collect()
}

#[test]
fn a_perf_marker_is_written_as_the_globus_server_writes_it() {
    let at = Duration::from_millis(1_764_232_100_370);
    assert_eq!(
        String::from_utf8(perf_marker(at, 1_048_576).encode()).unwrap(),
        "112-Perf Marker\r\n Timestamp: 1764232100.3\r\n Stripe Index: 0\r\n \
         Stripe Bytes Transferred: 1048576\r\n Total Stripe Count: 1\r\n112 End.\r\n"
    );
}

#[test]
fn a_range_marker_lists_the_ranges_and_is_never_empty() {
    let r = ranges(&[(0, 30), (60, 90)]);
    assert_eq!(
        String::from_utf8(range_marker(&r).unwrap().encode()).unwrap(),
        "111 Range Marker 0-30,60-90\r\n"
    );
    assert_eq!(range_marker(&Ranges::new()), None);
}

#[test]
fn no_schedule_never_sends_a_marker() {
    let mut m = Markers::new(MarkerSchedule::NONE);
    assert_eq!(m.poll_at(), None);
    assert!(
        m.poll(secs(3600), secs(1), 10, &ranges(&[(0, 10)]))
            .is_empty()
    );
    assert!(m.finish(secs(1), 10, &ranges(&[(0, 10)])).is_empty());
}

#[test]
fn a_store_sends_both_markers_every_interval_and_a_last_pair() {
    let mut m = Markers::new(MarkerSchedule::STORE);
    assert_eq!(m.poll_at(), Some(PERF_MARKER_INTERVAL));
    assert!(m.poll(secs(4), secs(100), 5, &ranges(&[(0, 5)])).is_empty());
    let due = m.poll(secs(5), secs(101), 10, &ranges(&[(0, 10)]));
    assert_eq!(due.iter().map(Reply::code).collect::<Vec<_>>(), [112, 111]);
    assert!(wire(&due).contains("111 Range Marker 0-10\r\n"));
    assert_eq!(m.poll_at(), Some(secs(10)));
    // Nothing new arrived: the perf marker goes out, the ranges do not.
    let due = m.poll(secs(10), secs(106), 10, &ranges(&[(0, 10)]));
    assert_eq!(due.iter().map(Reply::code).collect::<Vec<_>>(), [112]);
    let last = m.finish(secs(107), 20, &ranges(&[(0, 20)]));
    assert_eq!(last.iter().map(Reply::code).collect::<Vec<_>>(), [112, 111]);
    assert!(wire(&last).contains("Stripe Bytes Transferred: 20\r\n"));
    assert!(wire(&last).contains("111 Range Marker 0-20\r\n"));
    assert_eq!(m.poll_at(), None);
}

#[test]
fn a_store_that_moved_nothing_ends_with_no_range_marker() {
    let mut m = Markers::new(MarkerSchedule::STORE);
    let last = m.finish(secs(1), 0, &Ranges::new());
    assert_eq!(last.iter().map(Reply::code).collect::<Vec<_>>(), [112]);
}

#[test]
fn a_retrieve_sends_perf_markers_only_when_asked() {
    assert_eq!(MarkerSchedule::retrieve(0), MarkerSchedule::NONE);
    let mut m = Markers::new(MarkerSchedule::retrieve(2));
    assert_eq!(m.poll_at(), Some(secs(2)));
    let due = m.poll(secs(2), secs(50), 7, &ranges(&[(0, 7)]));
    assert_eq!(due.iter().map(Reply::code).collect::<Vec<_>>(), [112]);
    let last = m.finish(secs(51), 9, &ranges(&[(0, 9)]));
    assert_eq!(last.iter().map(Reply::code).collect::<Vec<_>>(), [112]);
}

#[test]
fn a_late_poll_sends_one_marker_and_catches_up_with_the_clock() {
    let mut m = Markers::new(MarkerSchedule::retrieve(5));
    let due = m.poll(secs(23), secs(1), 1, &Ranges::new());
    assert_eq!(due.len(), 1);
    assert_eq!(m.poll_at(), Some(secs(25)));
}
