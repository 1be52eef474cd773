//! Input checks and the small measuring tools: peer reports are refused
//! whole when malformed or absurd, the limits come from the host's
//! sysctls, and meters never go backwards or produce nonsense.

use std::time::Duration;

use crate::host::HostSettings;
use crate::input::{MAX_PLAUSIBLE_RATE_BPS, MIN_PLAUSIBLE_PACE_BPS, PeerReportError};
use crate::meter::{MeterError, RateMeter, WindowRatio, WindowedMax, bytes_capped, rate};
use crate::tcpinfo::TcpInfoSample;
use crate::units::Bytes;
use crate::{Limits, PeerInfo, PeerReport};

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
fn limits_come_from_the_host_or_the_linux_defaults() {
    let host = HostSettings::parse(|key| match key.name() {
        "net.core.rmem_max" => Some("67108864".into()),
        "net.ipv4.tcp_wmem" => Some("4096 16384 8388608".into()),
        _ => None,
    });
    let limits = Limits::from_host(&host, Some(8948));
    assert_eq!(limits.rmem_max, Bytes(64 << 20));
    assert_eq!(limits.tcp_wmem_max, Bytes(8 << 20));
    // Unread values: an untuned 6.16+ kernel.
    assert_eq!(limits.wmem_max, Bytes(212_992));
    assert_eq!(limits.tcp_rmem_max, Bytes(32 << 20));
    assert_eq!(limits.mss, Bytes(8948));
    assert_eq!(Limits::from_host(&host, Some(0)).mss, Bytes(1460));
}

#[test]
fn rate_meter_refuses_going_back_and_measures_over_the_lookback() {
    let mut m = RateMeter::default();
    let s = Duration::from_secs;
    m.push(s(0), 0).unwrap();
    m.push(s(1), 1_000).unwrap();
    m.push(s(2), 3_000).unwrap();
    assert_eq!(m.push(s(1), 4_000), Err(MeterError::TimeWentBack));
    assert_eq!(m.push(s(3), 2_000), Err(MeterError::BytesWentBack));
    assert_eq!(m.rate_over(s(1)), Some(2_000.0));
    assert_eq!(m.rate_over(s(2)), Some(1_500.0));
    // Longer than kept: from the oldest.
    assert_eq!(m.rate_over(s(60)), Some(1_500.0));
    assert_eq!(rate(10, Duration::ZERO), None);
}

#[test]
fn windowed_max_forgets_old_peaks() {
    let s = Duration::from_secs;
    let mut max = WindowedMax::new(s(2));
    max.update(s(0), 10.0);
    max.update(s(1), 5.0);
    assert_eq!(max.get(), Some(10.0));
    max.update(s(3), 4.0);
    assert_eq!(max.get(), Some(5.0));
    max.update(s(4), f64::NAN);
    max.expire(s(10));
    assert_eq!(max.get(), Some(4.0));
    max.reset(s(10), 1.0);
    assert_eq!(max.get(), Some(1.0));
}

#[test]
fn window_ratio_keeps_the_largest_sane_reading() {
    let mut r = WindowRatio::default();
    assert_eq!(
        r.request_for(Bytes(1_000_000), Bytes(u64::MAX)),
        Bytes(1_000_000)
    );
    assert!(!r.observe(400, 1000));
    assert!(r.observe(890, 1000));
    assert!(!r.observe(2000, 1000), "a window above the buffer is noise");
    assert!(!r.observe(1, 0));
    assert_eq!(r.get(), 0.89);
    assert_eq!(
        r.request_for(Bytes(1_780_000), Bytes(u64::MAX)),
        Bytes(1_000_000)
    );
    assert_eq!(r.request_for(Bytes(1_780_000), Bytes(4096)), Bytes(4096));
}

#[test]
fn sizes_from_floats_never_leave_range() {
    let max = Bytes(1000);
    assert_eq!(bytes_capped(f64::NAN, max), Bytes(0));
    assert_eq!(bytes_capped(-5.0, max), Bytes(0));
    assert_eq!(bytes_capped(f64::INFINITY, max), max);
    assert_eq!(bytes_capped(999.6, max), max);
    assert_eq!(bytes_capped(12.4, max), Bytes(12));
}
