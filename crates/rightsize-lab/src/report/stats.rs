//! The mean of a point's repetitions and its 95% confidence interval
//! (Student's t, two-sided). Pure arithmetic.

/// A mean over `n` samples and the half-width of its 95% confidence
/// interval, in the samples' unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MeanCi {
    /// The arithmetic mean.
    pub mean: f64,
    /// `t(0.975, n-1) * s / sqrt(n)`, with `s` the sample standard
    /// deviation; `None` for a single sample (no interval).
    pub half_width: Option<f64>,
    /// How many samples.
    pub n: usize,
}

impl MeanCi {
    /// The interval's ends, `mean ± half_width` (the mean twice for n = 1).
    pub fn bounds(&self) -> (f64, f64) {
        let h = self.half_width.unwrap_or(0.0);
        (self.mean - h, self.mean + h)
    }
}

/// The mean and 95% confidence interval of `samples`; `None` for none.
pub fn mean_ci(samples: &[f64]) -> Option<MeanCi> {
    let n = samples.len();
    if n == 0 {
        return None;
    }
    let mean = samples.iter().sum::<f64>() / n as f64;
    let half_width = (n > 1).then(|| {
        let var = samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        t_975(n - 1) * var.sqrt() / (n as f64).sqrt()
    });
    Some(MeanCi {
        mean,
        half_width,
        n,
    })
}

/// The arithmetic mean, `None` for no samples.
pub fn mean(samples: &[f64]) -> Option<f64> {
    (!samples.is_empty()).then(|| samples.iter().sum::<f64>() / samples.len() as f64)
}

/// Student's t 0.975 quantiles for 1 to 30 degrees of freedom.
const T_975: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
];

/// The standard normal's 0.975 quantile.
const Z_975: f64 = 1.959_964;

/// Student's t 0.975 quantile for `df` degrees of freedom (`df >= 1`):
/// the table to 30, then the Cornish-Fisher expansion, which is within
/// 0.001 of the exact value there.
pub fn t_975(df: usize) -> f64 {
    match df {
        0 => f64::INFINITY,
        1..=30 => T_975[df - 1],
        _ => {
            let z = Z_975;
            let v = df as f64;
            z + (z.powi(3) + z) / (4.0 * v)
                + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * v * v)
                + (3.0 * z.powi(7) + 19.0 * z.powi(5) + 17.0 * z.powi(3) - 15.0 * z)
                    / (384.0 * v.powi(3))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn three_samples_known_interval() {
        let m = mean_ci(&[10.0, 12.0, 14.0]).expect("samples");
        assert_eq!(m.n, 3);
        assert!(close(m.mean, 12.0, 1e-12));
        // s = 2, t(0.975, 2) = 4.303: 4.303 * 2 / sqrt(3).
        let h = m.half_width.expect("n > 1");
        assert!(close(h, 4.303 * 2.0 / 3f64.sqrt(), 1e-9), "{h}");
        assert!(close(h, 4.969, 5e-4), "{h}");
        let (lo, hi) = m.bounds();
        assert!(close(lo, 12.0 - h, 1e-12) && close(hi, 12.0 + h, 1e-12));
    }

    #[test]
    fn one_sample_has_no_interval_and_none_has_no_mean() {
        let m = mean_ci(&[7.5]).expect("one sample");
        assert_eq!((m.mean, m.half_width, m.n), (7.5, None, 1));
        assert_eq!(m.bounds(), (7.5, 7.5));
        assert_eq!(mean_ci(&[]), None);
        assert_eq!(mean(&[]), None);
        assert_eq!(mean(&[1.0, 2.0]), Some(1.5));
    }

    #[test]
    fn equal_samples_have_a_zero_interval() {
        let m = mean_ci(&[5.0, 5.0]).expect("samples");
        assert_eq!(m.half_width, Some(0.0));
    }

    #[test]
    fn t_quantiles_beyond_the_table_are_close_to_exact() {
        // Exact: t(0.975, 40) = 2.0211, 60: 2.0003, 120: 1.9799.
        for (df, exact) in [(31, 2.0395), (40, 2.0211), (60, 2.0003), (120, 1.9799)] {
            assert!(close(t_975(df), exact, 1e-3), "df {df}: {}", t_975(df));
        }
        assert_eq!(t_975(2), 4.303);
        assert!(t_975(10_000) > Z_975 && t_975(10_000) < 1.961);
    }
}
