//! Small measuring tools the tuners share: goodput over a lookback, windowed
//! minimum and maximum, and size arithmetic that cannot overflow or panic.
//!
//! Rates are `f64` bytes per second (`_bytes_per_s`); sizes leave as
//! [`Bytes`], rounded and clamped so that no input (NaN, infinity, a
//! negative) can make a size out of range.

use std::collections::VecDeque;
use std::time::Duration;

use crate::units::{Bytes, human_rate};

/// Linux stores twice an `SO_RCVBUF`/`SO_SNDBUF` request (half for its
/// bookkeeping; `docs/linux-tcp.md`), so a read-back is about
/// this many times the request.
pub const LINUX_BUFFER_DOUBLING: u64 = 2;

/// Window per byte of buffer read-back before any is measured: Linux's
/// default `scaling_ratio` (and the old `tcp_adv_win_scale = 1` rule).
pub const DEFAULT_WINDOW_RATIO: f64 = 0.5;

/// How many samples a [`RateMeter`] keeps.
const RATE_POINTS: usize = 256;

/// Goodput from a cumulative byte counter read at increasing times.
#[derive(Debug, Clone, Default)]
pub struct RateMeter {
    points: VecDeque<(Duration, u64)>,
}

/// Why a sample was not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MeterError {
    /// Its time is before the previous sample's.
    TimeWentBack,
    /// Its byte count is below the previous sample's.
    BytesWentBack,
}

impl MeterError {
    /// A short text for a decision record.
    pub fn reason(self) -> &'static str {
        match self {
            MeterError::TimeWentBack => "sample ignored: its time is before the previous sample's",
            MeterError::BytesWentBack => {
                "sample ignored: its byte count is below the previous sample's"
            }
        }
    }
}

impl RateMeter {
    /// Adds a reading; refuses one that goes back in time or bytes.
    pub fn push(&mut self, at: Duration, bytes: u64) -> Result<(), MeterError> {
        if let Some(&(last_at, last_bytes)) = self.points.back() {
            if at < last_at {
                return Err(MeterError::TimeWentBack);
            }
            if bytes < last_bytes {
                return Err(MeterError::BytesWentBack);
            }
            if at == last_at {
                // A repeated reading: keep the newer count, no new interval.
                self.points.pop_back();
            }
        }
        if self.points.len() == RATE_POINTS {
            self.points.pop_front();
        }
        self.points.push_back((at, bytes));
        Ok(())
    }

    /// Bytes per second from the newest reading back to the newest one at
    /// least `lookback` older (or the oldest kept); `None` before two
    /// readings.
    pub fn rate_over(&self, lookback: Duration) -> Option<f64> {
        let &(at, bytes) = self.points.back()?;
        let start = self
            .points
            .iter()
            .rev()
            .skip(1)
            .find(|(t, _)| at.saturating_sub(*t) >= lookback)
            .or_else(|| self.points.front())
            .copied()?;
        rate(bytes.saturating_sub(start.1), at.saturating_sub(start.0))
    }
}

/// How much receive window a byte of `SO_RCVBUF` read-back gives, learnt
/// from `tcpi_rcv_wnd` (Linux 6.5+ measures it per connection: about 0.89
/// on a 1500-byte veth with GRO, seen on 6.18; older kernels 0.5).
///
/// The largest ratio seen is kept: a window still opening, or data the
/// application has not read yet, only make the ratio look smaller, so the
/// estimate errs towards more memory.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WindowRatio {
    ratio: f64,
}

impl Default for WindowRatio {
    fn default() -> Self {
        WindowRatio {
            ratio: DEFAULT_WINDOW_RATIO,
        }
    }
}

impl WindowRatio {
    /// Takes one reading; returns whether the estimate rose.
    pub fn observe(&mut self, rcv_wnd_bytes: u64, rcvbuf_bytes: u64) -> bool {
        if rcvbuf_bytes == 0 {
            return false;
        }
        let seen = rcv_wnd_bytes as f64 / rcvbuf_bytes as f64;
        if seen > self.ratio && seen <= 1.0 {
            self.ratio = seen;
            return true;
        }
        false
    }

    /// The ratio now.
    pub fn get(self) -> f64 {
        self.ratio
    }

    /// The `SO_RCVBUF` request whose window is `window`, capped at `max`.
    pub fn request_for(self, window: Bytes, max: Bytes) -> Bytes {
        bytes_capped(
            window.get() as f64 / (LINUX_BUFFER_DOUBLING as f64 * self.ratio),
            max,
        )
    }
}

/// `bytes / interval` in bytes per second; `None` for an empty interval.
pub fn rate(bytes: u64, interval: Duration) -> Option<f64> {
    let secs = interval.as_secs_f64();
    (secs > 0.0).then(|| bytes as f64 / secs)
}

/// The maximum of values seen over a sliding time window, in amortised
/// constant time per update.
#[derive(Debug, Clone)]
pub struct WindowedMax {
    window: Duration,
    values: VecDeque<(Duration, f64)>,
}

impl WindowedMax {
    /// The maximum over the last `window`.
    pub fn new(window: Duration) -> Self {
        WindowedMax {
            window,
            values: VecDeque::new(),
        }
    }

    /// Adds a value seen at `at`; NaN is ignored.
    pub fn update(&mut self, at: Duration, value: f64) {
        if value.is_nan() {
            return;
        }
        while self.values.back().is_some_and(|&(_, v)| v <= value) {
            self.values.pop_back();
        }
        self.values.push_back((at, value));
        self.expire(at);
    }

    /// Drops values older than the window, as of `now` (keeping the newest).
    pub fn expire(&mut self, now: Duration) {
        while self.values.len() > 1
            && self
                .values
                .front()
                .is_some_and(|&(t, _)| now.saturating_sub(t) > self.window)
        {
            self.values.pop_front();
        }
    }

    /// The maximum now, if any value was seen.
    pub fn get(&self) -> Option<f64> {
        self.values.front().map(|&(_, v)| v)
    }

    /// Forgets everything and starts again from one value.
    pub fn reset(&mut self, at: Duration, value: f64) {
        self.values.clear();
        self.update(at, value);
    }
}

/// A size from a float number of bytes, rounded, NaN as 0, capped at `max`.
pub fn bytes_capped(value: f64, max: Bytes) -> Bytes {
    if value.is_nan() || value <= 0.0 {
        return Bytes(0);
    }
    if value >= max.get() as f64 {
        return max;
    }
    Bytes(value.round() as u64)
}

/// A duration of `factor` times `base`, saturating instead of panicking.
pub fn scaled(base: Duration, factor: f64) -> Duration {
    Duration::try_from_secs_f64(base.as_secs_f64() * factor).unwrap_or(Duration::MAX)
}

/// A microsecond count as a duration, `None` for 0 (the kernel's "unknown").
pub fn micros(us: u32) -> Option<Duration> {
    (us > 0).then(|| Duration::from_micros(u64::from(us)))
}

/// A rate in bytes per second as people read it: `200 Mbit/s`.
pub fn show_rate(bytes_per_s: f64) -> String {
    human_rate(bytes_per_s * 8.0)
}

/// A size as people read it: `2.38 MiB`.
pub fn show_bytes(bytes: Bytes) -> String {
    bytes.human_iec()
}

/// A size in bytes held as a number (a window, a queue) as people read
/// it: `2.38 MiB`.
pub fn show_size(bytes: f64) -> String {
    show_bytes(bytes_capped(bytes, Bytes(u64::MAX)))
}

/// A duration as people read it, in milliseconds: `100.0 ms`.
pub fn show_ms(duration: Duration) -> String {
    format!("{:.1} ms", duration.as_secs_f64() * 1e3)
}

#[cfg(test)]
mod tests;
