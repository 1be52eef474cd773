//! Round-trip statistics as ping(8) prints them: min, avg, max and mdev
//! over the answered probes, and the share lost.
//!
//! Guarantees: no sample, no statistics (`None`), never a division by zero;
//! `mdev` is ping's population standard deviation,
//! `sqrt(mean(x^2) - mean(x)^2)`, never negative; every value is whole
//! microseconds (what a reader of `ping` output expects to compare).

use std::time::Duration;

use serde::Serialize;

/// min/avg/max/mdev of a set of round trips.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RttStats {
    /// Smallest round trip.
    #[serde(rename = "min_us", serialize_with = "micros")]
    pub min: Duration,
    /// Arithmetic mean.
    #[serde(rename = "avg_us", serialize_with = "micros")]
    pub avg: Duration,
    /// Largest round trip.
    #[serde(rename = "max_us", serialize_with = "micros")]
    pub max: Duration,
    /// Mean deviation as ping(8) computes it (the standard deviation).
    #[serde(rename = "mdev_us", serialize_with = "micros")]
    pub mdev: Duration,
}

fn micros<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

impl RttStats {
    /// The statistics of `samples`; `None` without samples.
    pub fn of(samples: &[Duration]) -> Option<RttStats> {
        let min = *samples.iter().min()?;
        let max = *samples.iter().max()?;
        let us: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1e6).collect();
        let n = us.len() as f64;
        let mean = us.iter().sum::<f64>() / n;
        let mean_sq = us.iter().map(|x| x * x).sum::<f64>() / n;
        let mdev = (mean_sq - mean * mean).max(0.0).sqrt();
        let whole = |x: f64| Duration::from_micros(x.round() as u64);
        Some(RttStats {
            min: Duration::from_micros(u64::try_from(min.as_micros()).unwrap_or(u64::MAX)),
            avg: whole(mean),
            max: Duration::from_micros(u64::try_from(max.as_micros()).unwrap_or(u64::MAX)),
            mdev: whole(mdev),
        })
    }

    /// `min/avg/max/mdev = 20.112/20.300/20.871/0.201 ms`, in milliseconds
    /// with three decimals as ping(8) prints them.
    pub fn ping_line(&self) -> String {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        format!(
            "min/avg/max/mdev = {:.3}/{:.3}/{:.3}/{:.3} ms",
            ms(self.min),
            ms(self.avg),
            ms(self.max),
            ms(self.mdev)
        )
    }
}

/// The share of probes that got no answer, in percent (0 when none sent).
pub fn loss_percent(sent: u32, answered: u32) -> f64 {
    if sent == 0 {
        return 0.0;
    }
    f64::from(sent.saturating_sub(answered)) * 100.0 / f64::from(sent)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn no_samples_no_statistics() {
        assert_eq!(RttStats::of(&[]), None);
    }

    #[test]
    fn one_sample_has_no_deviation() {
        let s = RttStats::of(&[ms(20)]).expect("one sample");
        assert_eq!(
            (s.min, s.avg, s.max, s.mdev),
            (ms(20), ms(20), ms(20), ms(0))
        );
        assert_eq!(
            s.ping_line(),
            "min/avg/max/mdev = 20.000/20.000/20.000/0.000 ms"
        );
    }

    #[test]
    fn mdev_is_the_population_standard_deviation() {
        // 10, 20, 30 ms: mean 20, variance (100+0+100)/3 = 66.67 ms^2.
        let s = RttStats::of(&[ms(10), ms(30), ms(20)]).expect("three samples");
        assert_eq!(s.min, ms(10));
        assert_eq!(s.max, ms(30));
        assert_eq!(s.avg, ms(20));
        assert_eq!(s.mdev, Duration::from_micros(8165));
    }

    #[test]
    fn loss_is_a_share_of_what_was_sent() {
        assert_eq!(loss_percent(0, 0), 0.0);
        assert_eq!(loss_percent(4, 3), 25.0);
        assert_eq!(loss_percent(3, 5), 0.0);
    }
}
