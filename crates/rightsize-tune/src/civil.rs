//! Calendar dates and times of day from Unix time, in UTC and the proleptic
//! Gregorian calendar, for the places that print a date (FTP listings and
//! `MDTM`, the lab's report header).
//!
//! The day-count to date step is Howard Hinnant's `civil_from_days`, the
//! inverse of his days-from-civil algorithm ("chrono-Compatible Low-Level
//! Date Algorithms", public domain). It is exact for every `i64` count of
//! seconds, before and after 1970. Unix time has no leap seconds, so every
//! day here has 86,400 seconds. Pure: no clock, no time zone.

/// Seconds in a day of Unix time.
pub const SECS_PER_DAY: i64 = 86_400;

/// A UTC calendar time, to the second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UtcTime {
    /// Year, e.g. 2026 (0 is 1 BC, as ISO 8601 counts).
    pub year: i64,
    /// Month 1..=12.
    pub month: u32,
    /// Day 1..=31.
    pub day: u32,
    /// Hour 0..=23.
    pub hour: u32,
    /// Minute 0..=59.
    pub minute: u32,
    /// Second 0..=59.
    pub second: u32,
}

impl UtcTime {
    /// The calendar time `secs` seconds after 1970-01-01 00:00:00 UTC
    /// (negative is before it).
    pub fn from_unix(secs: i64) -> UtcTime {
        let (year, month, day) = civil_from_days(secs.div_euclid(SECS_PER_DAY));
        let rem = secs.rem_euclid(SECS_PER_DAY);
        UtcTime {
            year,
            month,
            day,
            hour: (rem / 3600) as u32,
            minute: (rem % 3600 / 60) as u32,
            second: (rem % 60) as u32,
        }
    }
}

/// The date (year, month 1..=12, day 1..=31) `days` days after 1970-01-01.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    // Shift the epoch to 0000-03-01, so that a leap day ends its year, and
    // count in 400-year eras of 146,097 days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // day of era, 0..=146_096
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // 0..=399
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // day of year from March 1
    let mp = (5 * doy + 2) / 153; // month from March, 0..=11
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month as u32, day as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn time(secs: i64) -> (i64, u32, u32, u32, u32, u32) {
        let t = UtcTime::from_unix(secs);
        (t.year, t.month, t.day, t.hour, t.minute, t.second)
    }

    #[test]
    fn known_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(11_017), (2000, 3, 1));
        // 2100 is not a leap year: February 28 is followed by March 1.
        assert_eq!(civil_from_days(47_540), (2100, 2, 28));
        assert_eq!(civil_from_days(47_541), (2100, 3, 1));
        assert_eq!(civil_from_days(-719_468), (0, 3, 1));
    }

    #[test]
    fn times_of_day() {
        assert_eq!(time(0), (1970, 1, 1, 0, 0, 0));
        assert_eq!(time(-1), (1969, 12, 31, 23, 59, 59));
        assert_eq!(time(951_782_400), (2000, 2, 29, 0, 0, 0));
        assert_eq!(time(1_795_000_000), (2026, 11, 18, 11, 6, 40));
        assert_eq!(time(1_795_326_063), (2026, 11, 22, 5, 41, 3));
    }

    /// Day by day over four centuries either side of 1970, the date moves
    /// to the next day of the same month or to the 1st of the next month,
    /// and months have their Gregorian lengths.
    #[test]
    fn consecutive_days() {
        let days_in = |year: i64, month: u32| match month {
            2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
            2 => 28,
            4 | 6 | 9 | 11 => 30,
            _ => 31,
        };
        let mut prev = civil_from_days(-146_097);
        assert_eq!(prev, (1570, 1, 1));
        for days in -146_096..=146_097 {
            let next = civil_from_days(days);
            let (y, m, d) = prev;
            let expected = if d < days_in(y, m) {
                (y, m, d + 1)
            } else if m < 12 {
                (y, m + 1, 1)
            } else {
                (y + 1, 1, 1)
            };
            assert_eq!(next, expected, "day {days}");
            prev = next;
        }
    }

    #[test]
    fn extremes_do_not_panic() {
        let _ = UtcTime::from_unix(i64::MAX);
        let _ = UtcTime::from_unix(i64::MIN);
    }
}
