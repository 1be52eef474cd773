//! The small measuring tools never go backwards or produce nonsense: rates
//! over a lookback, windowed maxima, the window-to-buffer ratio, sizes
//! from floats.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use super::{MeterError, RateMeter, WindowRatio, WindowedMax, bytes_capped, rate};
use crate::units::Bytes;

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
