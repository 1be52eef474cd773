//! Input checks: peer reports are refused whole when malformed or absurd,
//! and a peer's summary is its own `TCP_INFO`.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use crate::input::{MAX_PLAUSIBLE_RATE_BPS, MIN_PLAUSIBLE_PACE_BPS, PeerReportError};
use crate::tcpinfo::TcpInfoSample;
use crate::units::Bytes;
use crate::{PeerInfo, PeerReport};

fn info() -> PeerInfo {
    PeerInfo {
        busy_time_us: Some(1_000_000),
        rwnd_limited_us: Some(600_000),
        sndbuf_limited_us: Some(0),
        delivery_rate_bps: Some(200_000_000),
        min_rtt_us: Some(100_000),
        rtt_us: Some(104_000),
        bytes_retrans: Some(0),
        total_retrans_segs: Some(0),
        pace_bps: None,
    }
}

fn report(info: Option<PeerInfo>, size: Option<u64>) -> PeerReport {
    PeerReport {
        at: Duration::from_secs(1),
        info,
        size: size.map(Bytes),
    }
}

#[test]
fn a_sane_report_passes() {
    assert_eq!(report(Some(info()), Some(4 << 20)).check(None), Ok(()));
    assert_eq!(report(None, None).check(None), Ok(()));
}

#[test]
fn absurd_sizes_rates_and_rtts_are_refused() {
    assert_eq!(
        report(None, Some(0)).check(None),
        Err(PeerReportError::ZeroSize)
    );
    assert_eq!(
        report(None, Some(u64::MAX)).check(None),
        Err(PeerReportError::SizeTooLarge { bytes: u64::MAX })
    );
    let fast = PeerInfo {
        delivery_rate_bps: Some(MAX_PLAUSIBLE_RATE_BPS + 1),
        ..info()
    };
    assert!(matches!(
        report(Some(fast), None).check(None),
        Err(PeerReportError::RateImplausible { .. })
    ));
    for (pace, refused) in [
        (MIN_PLAUSIBLE_PACE_BPS - 1, true),
        (MIN_PLAUSIBLE_PACE_BPS, false),
        (MAX_PLAUSIBLE_RATE_BPS, false),
        (MAX_PLAUSIBLE_RATE_BPS + 1, true),
    ] {
        let asked = PeerInfo {
            pace_bps: Some(pace),
            ..PeerInfo::default()
        };
        assert_eq!(
            report(Some(asked), None).check(None).is_err(),
            refused,
            "pace {pace}"
        );
    }
    assert_eq!(
        report(
            Some(PeerInfo {
                pace_bps: Some(0),
                ..PeerInfo::default()
            }),
            None
        )
        .check(None)
        .map_err(|e| e.to_string()),
        Err("peer pacing ceiling 0 bit/s is below 64000 bit/s".to_owned())
    );
    for (rtt, min_rtt) in [(Some(0), Some(1)), (Some(1), Some(0))] {
        let zero = PeerInfo {
            rtt_us: rtt,
            min_rtt_us: min_rtt,
            ..info()
        };
        assert!(matches!(
            report(Some(zero), None).check(None),
            Err(PeerReportError::ZeroRtt { .. })
        ));
    }
    let slow = PeerInfo {
        rtt_us: Some(u32::MAX),
        ..info()
    };
    let err = report(Some(slow), None).check(None).unwrap_err();
    assert!(err.to_string().contains("rtt of 4294967295 us"), "{err}");
}

#[test]
fn inconsistent_counters_are_refused() {
    let limited = PeerInfo {
        rwnd_limited_us: Some(2_000_000),
        ..info()
    };
    assert!(matches!(
        report(Some(limited), None).check(None),
        Err(PeerReportError::LimitedExceedsBusy {
            field: "rwnd_limited",
            ..
        })
    ));
    let before = report(
        Some(PeerInfo {
            bytes_retrans: Some(10_000),
            ..info()
        }),
        None,
    );
    let now = report(Some(info()), None);
    let err = now.check(Some(&before)).unwrap_err();
    assert_eq!(
        err,
        PeerReportError::CounterWentBack {
            field: "bytes_retrans",
            previous: 10_000,
            now: 0
        }
    );
    assert!(err.to_string().contains("went backwards"));
}

#[test]
fn peer_info_is_the_peers_own_tcp_info() {
    let tcp = TcpInfoSample {
        rtt_us: 0,
        min_rtt_us: Some(0),
        total_retrans_segs: 7,
        delivery_rate_bps: Some(8),
        ..TcpInfoSample::default()
    };
    let peer = PeerInfo::from_tcp_info(&tcp);
    // The kernel's "unknown" 0 RTT is left out rather than sent as 0.
    assert_eq!((peer.rtt_us, peer.min_rtt_us), (None, None));
    assert_eq!(peer.total_retrans_segs, Some(7));
    assert_eq!(report(Some(peer), None).check(None), Ok(()));
}

#[test]
fn an_event_counted_from_a_later_origin_moves_back_and_stops_at_zero() {
    use crate::{Event, TrainProbe};
    let train = |ms| {
        Event::Train(TrainProbe {
            at: Duration::from_millis(ms),
            bytes: 70_000,
            dispersion: Duration::from_millis(3),
        })
    };
    let later = Duration::from_millis(120);
    assert_eq!(
        train(200).counted_from(later).at(),
        Duration::from_millis(80)
    );
    assert_eq!(train(40).counted_from(later), train(0));
    let peer = Event::Peer(report(Some(info()), None)).counted_from(later);
    assert_eq!(peer.at(), Duration::from_millis(880));
}
