//! Units: byte counts, bit rates and durations, parsed in one place.
//!
//! Everything a user types as a size, a rate or a time goes through this
//! module, so that `10G`, `10Gbit/s`, `64KiB` and `50ms` mean the same thing
//! everywhere in rightsize, and every rejection quotes the input and shows an
//! accepted form.
//!
//! Conventions (the ones iperf3 users already know):
//! - Rates are decimal: `k`, `M`, `G`, `T` are 10^3, 10^6, 10^9, 10^12, in
//!   bits per second unless the unit says bytes (`B/s`, `Bps`). A bare number
//!   is refused: `100` could be bits or bytes, per second or not.
//! - Sizes: a bare prefix or an `iB` unit is binary (`64K`, `64KiB` = 65,536
//!   bytes); a `B` after the prefix is decimal (`64kB`, `64KB` = 64,000). A bare
//!   number is a count of bytes, as in `sysctl` and `setsockopt`.
//! - Durations need a unit: `ns`, `us` (or `µs`), `ms`, `s`, `min`.
//!
//! Parsing is exact: `2.5G` is 2,500,000,000 bit/s, `0.05s` is 50,000,000 ns.
//! A value that is not a whole number of the base unit is rounded to the
//! nearest one. Values that do not fit in 64 bits are refused. Printing with
//! `Display` gives a canonical form that parses back to the same value.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Why a size, rate or duration was refused. Every message quotes the input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    /// Nothing was given.
    #[error("empty {kind}: give a value such as {example}")]
    Empty {
        /// What was being parsed ("rate", "size", "duration").
        kind: &'static str,
        /// An accepted form.
        example: &'static str,
    },
    /// A minus sign: none of these quantities can be negative.
    #[error("{kind} \"{input}\" is negative; give a positive value such as {example}")]
    Negative {
        /// What was being parsed.
        kind: &'static str,
        /// The input as typed.
        input: String,
        /// An accepted form.
        example: &'static str,
    },
    /// The number part is missing or not a plain decimal (`NaN`, `1e9`, `--`).
    #[error("{kind} \"{input}\" is not a number followed by a unit; accepted: {accepted}")]
    NotANumber {
        /// What was being parsed.
        kind: &'static str,
        /// The input as typed.
        input: String,
        /// Accepted forms.
        accepted: &'static str,
    },
    /// A number with no unit where the unit is ambiguous.
    #[error("{kind} \"{input}\" has no unit; accepted: {accepted}")]
    MissingUnit {
        /// What was being parsed.
        kind: &'static str,
        /// The input as typed.
        input: String,
        /// Accepted forms.
        accepted: &'static str,
    },
    /// A unit this parser does not know.
    #[error("{kind} \"{input}\" has an unknown unit \"{unit}\"; accepted: {accepted}")]
    UnknownUnit {
        /// What was being parsed.
        kind: &'static str,
        /// The input as typed.
        input: String,
        /// The unit part that was not recognised.
        unit: String,
        /// Accepted forms.
        accepted: &'static str,
    },
    /// The value does not fit in 64 bits of the base unit.
    #[error(
        "{kind} \"{input}\" is too large (at most {max} of the base unit); give a value such as {example}"
    )]
    Overflow {
        /// What was being parsed.
        kind: &'static str,
        /// The input as typed.
        input: String,
        /// The largest accepted value, printed.
        max: String,
        /// An accepted form.
        example: &'static str,
    },
    /// Zero where only a positive value makes sense (a rate, an RTT).
    #[error("{kind} \"{input}\" must be greater than zero, for example {example}")]
    Zero {
        /// What was being parsed.
        kind: &'static str,
        /// The input as typed.
        input: String,
        /// An accepted form.
        example: &'static str,
    },
}

const RATE: &str = "rate";
const RATE_EXAMPLE: &str = "10G";
const RATE_ACCEPTED: &str = "10G, 10Gbit/s, 10Gbps, 2.5G, 100M, 100000kbit/s, 56k, 125MB/s";
const SIZE: &str = "size";
const SIZE_EXAMPLE: &str = "64KiB";
const SIZE_ACCEPTED: &str = "65536, 64K, 64KiB, 16MiB, 1.5GiB, 64kB (= 64,000 bytes)";
const DURATION: &str = "duration";
const DURATION_EXAMPLE: &str = "50ms";
const DURATION_ACCEPTED: &str = "50ms, 0.05s, 12 ms, 100us, 250ns, 2min";

/// A count of bytes (a buffer size, a window, a transfer size).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Bytes(pub u64);

/// A bit rate in bits per second.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct BitRate(pub u64);

impl Bytes {
    /// The count as `u64`.
    pub const fn get(self) -> u64 {
        self.0
    }

    /// The count with thousands separators: `62,500,000`.
    pub fn grouped(self) -> String {
        group_thousands(self.0)
    }

    /// Decimal megabytes-style rendering with the best SI prefix: `62.5 MB`.
    pub fn human_si(self) -> String {
        scaled(self.0 as f64, 1000.0, &["B", "kB", "MB", "GB", "TB", "PB"])
    }

    /// Binary rendering with the best IEC prefix: `59.6 MiB`.
    pub fn human_iec(self) -> String {
        scaled(
            self.0 as f64,
            1024.0,
            &["B", "KiB", "MiB", "GiB", "TiB", "PiB"],
        )
    }

    /// Parses a size, refusing zero.
    pub fn parse_positive(input: &str) -> Result<Self, UnitError> {
        let value: Self = input.parse()?;
        if value.0 == 0 {
            return Err(UnitError::Zero {
                kind: SIZE,
                input: input.to_owned(),
                example: SIZE_EXAMPLE,
            });
        }
        Ok(value)
    }
}

impl BitRate {
    /// The rate in bits per second.
    pub const fn bps(self) -> u64 {
        self.0
    }

    /// The rate rendered with the best decimal prefix: `5.24 Mbit/s`.
    pub fn human(self) -> String {
        human_rate(self.0 as f64)
    }

    /// Parses a rate, refusing zero.
    pub fn parse_positive(input: &str) -> Result<Self, UnitError> {
        let value: Self = input.parse()?;
        if value.0 == 0 {
            return Err(UnitError::Zero {
                kind: RATE,
                input: input.to_owned(),
                example: RATE_EXAMPLE,
            });
        }
        Ok(value)
    }
}

/// Renders a rate given as a float number of bits per second: `5.24 Mbit/s`.
pub fn human_rate(bps: f64) -> String {
    let units = ["bit/s", "kbit/s", "Mbit/s", "Gbit/s", "Tbit/s"];
    scaled(bps, 1000.0, &units)
}

fn scaled(mut value: f64, step: f64, units: &[&str]) -> String {
    let mut index = 0;
    while value.abs() >= step && index + 1 < units.len() {
        value /= step;
        index += 1;
    }
    let text = format!("{value:.2}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text} {}", units[index])
}

fn group_thousands(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// Renders a duration for people: `50 ms`, `12.5 ms`, `1.2 s`, `100 us`.
pub fn human_duration(duration: Duration) -> String {
    let nanos = duration.as_nanos() as f64;
    let (value, unit) = if nanos >= 1e9 {
        (nanos / 1e9, "s")
    } else if nanos >= 1e6 {
        (nanos / 1e6, "ms")
    } else if nanos >= 1e3 {
        (nanos / 1e3, "us")
    } else {
        (nanos, "ns")
    };
    let text = format!("{value:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text} {unit}")
}

/// A duration in the canonical form that [`parse_duration`] reads back:
/// the largest of `s`, `ms`, `us`, `ns` that divides it exactly.
pub fn format_duration(duration: Duration) -> String {
    let nanos = duration.as_nanos();
    for (unit, size) in [("s", 1_000_000_000u128), ("ms", 1_000_000), ("us", 1_000)] {
        if nanos != 0 && nanos.is_multiple_of(size) {
            return format!("{}{unit}", nanos / size);
        }
    }
    format!("{nanos}ns")
}

/// Parses a duration such as `50ms`, `0.05s`, `12 ms`, `100us`.
pub fn parse_duration(input: &str) -> Result<Duration, UnitError> {
    let (number, unit) = split_number(input, DURATION, DURATION_EXAMPLE, DURATION_ACCEPTED)?;
    let nanos_per_unit: u128 = match unit {
        "" if number.mantissa == 0 => {
            return Err(UnitError::Zero {
                kind: DURATION,
                input: input.to_owned(),
                example: DURATION_EXAMPLE,
            });
        }
        "" => {
            return Err(UnitError::MissingUnit {
                kind: DURATION,
                input: input.to_owned(),
                accepted: DURATION_ACCEPTED,
            });
        }
        "ns" | "nsec" => 1,
        "us" | "µs" | "μs" | "usec" => 1_000,
        "ms" | "msec" => 1_000_000,
        "s" | "sec" | "secs" | "second" | "seconds" => 1_000_000_000,
        "min" | "mins" | "minute" | "minutes" => 60_000_000_000,
        other => {
            return Err(UnitError::UnknownUnit {
                kind: DURATION,
                input: input.to_owned(),
                unit: other.to_owned(),
                accepted: DURATION_ACCEPTED,
            });
        }
    };
    let nanos = number.scale(nanos_per_unit, DURATION, DURATION_EXAMPLE, input)?;
    Ok(Duration::from_nanos(nanos))
}

/// Parses a duration, refusing zero (an RTT, an interval).
pub fn parse_positive_duration(input: &str) -> Result<Duration, UnitError> {
    let value = parse_duration(input)?;
    if value.is_zero() {
        return Err(UnitError::Zero {
            kind: DURATION,
            input: input.to_owned(),
            example: DURATION_EXAMPLE,
        });
    }
    Ok(value)
}

impl FromStr for Bytes {
    type Err = UnitError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let (number, unit) = split_number(input, SIZE, SIZE_EXAMPLE, SIZE_ACCEPTED)?;
        let unknown = || UnitError::UnknownUnit {
            kind: SIZE,
            input: input.to_owned(),
            unit: unit.to_owned(),
            accepted: SIZE_ACCEPTED,
        };
        let multiplier: u128 =
            if unit.is_empty() || unit == "B" || unit.eq_ignore_ascii_case("bytes") {
                1
            } else {
                let mut chars = unit.chars();
                let prefix = chars.next().ok_or_else(unknown)?;
                let power = match prefix {
                    'k' | 'K' => 1,
                    'm' | 'M' => 2,
                    'g' | 'G' => 3,
                    't' | 'T' => 4,
                    _ => return Err(unknown()),
                };
                match chars.as_str() {
                    "" | "i" | "iB" => 1024u128.pow(power),
                    "B" => 1000u128.pow(power),
                    _ => return Err(unknown()),
                }
            };
        number
            .scale(multiplier, SIZE, SIZE_EXAMPLE, input)
            .map(Bytes)
    }
}

impl FromStr for BitRate {
    type Err = UnitError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let (number, unit) = split_number(input, RATE, RATE_EXAMPLE, RATE_ACCEPTED)?;
        let unknown = || UnitError::UnknownUnit {
            kind: RATE,
            input: input.to_owned(),
            unit: unit.to_owned(),
            accepted: RATE_ACCEPTED,
        };
        if unit.is_empty() {
            if number.mantissa == 0 {
                return Err(UnitError::Zero {
                    kind: RATE,
                    input: input.to_owned(),
                    example: RATE_EXAMPLE,
                });
            }
            return Err(UnitError::MissingUnit {
                kind: RATE,
                input: input.to_owned(),
                accepted: RATE_ACCEPTED,
            });
        }
        let (prefix, base) = match unit.chars().next() {
            Some('k' | 'K') => (1_000u128, &unit[1..]),
            Some('m' | 'M') => (1_000_000, &unit[1..]),
            Some('g' | 'G') => (1_000_000_000, &unit[1..]),
            Some('t' | 'T') => (1_000_000_000_000, &unit[1..]),
            _ => (1, unit),
        };
        let bits_per_unit: u128 = match base {
            "" if prefix > 1 => 1,
            "bps" | "b/s" | "b" => 1,
            "Bps" | "B/s" | "B" => 8,
            other => match other.to_ascii_lowercase().as_str() {
                "bit/s" | "bits/s" | "bit" | "bits" | "bitps" => 1,
                "byte/s" | "bytes/s" => 8,
                _ => return Err(unknown()),
            },
        };
        number
            .scale(prefix * bits_per_unit, RATE, RATE_EXAMPLE, input)
            .map(BitRate)
    }
}

impl fmt::Display for Bytes {
    /// Canonical form: the largest binary unit that divides exactly, else bytes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (unit, size) in [
            ("TiB", 1u64 << 40),
            ("GiB", 1 << 30),
            ("MiB", 1 << 20),
            ("KiB", 1 << 10),
        ] {
            if self.0 != 0 && self.0.is_multiple_of(size) {
                return write!(f, "{}{unit}", self.0 / size);
            }
        }
        write!(f, "{}B", self.0)
    }
}

impl fmt::Display for BitRate {
    /// Canonical form: the largest decimal prefix that divides exactly.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (unit, size) in [
            ("T", 1_000_000_000_000u64),
            ("G", 1_000_000_000),
            ("M", 1_000_000),
            ("k", 1_000),
        ] {
            if self.0 != 0 && self.0.is_multiple_of(size) {
                return write!(f, "{}{unit}bit/s", self.0 / size);
            }
        }
        write!(f, "{}bit/s", self.0)
    }
}

/// A non-negative decimal read exactly: `mantissa / 10^decimals`.
#[derive(Debug, Clone, Copy)]
struct Decimal {
    mantissa: u128,
    decimals: u32,
}

impl Decimal {
    /// `self * multiplier`, rounded to the nearest whole base unit; refuses
    /// anything above `u64::MAX`.
    fn scale(
        self,
        multiplier: u128,
        kind: &'static str,
        example: &'static str,
        input: &str,
    ) -> Result<u64, UnitError> {
        let overflow = || UnitError::Overflow {
            kind,
            input: input.to_owned(),
            max: u64::MAX.to_string(),
            example,
        };
        let product = self.mantissa.checked_mul(multiplier).ok_or_else(overflow)?;
        let divisor = 10u128.checked_pow(self.decimals).ok_or_else(overflow)?;
        let quotient = product / divisor;
        let remainder = product % divisor;
        let rounded = if remainder * 2 >= divisor {
            quotient + 1
        } else {
            quotient
        };
        u64::try_from(rounded).map_err(|_| overflow())
    }
}

/// Splits `input` into an exact decimal and the unit text after it (leading
/// spaces removed). Refuses signs, exponents, `NaN`, `inf` and empty input.
fn split_number<'a>(
    input: &'a str,
    kind: &'static str,
    example: &'static str,
    accepted: &'static str,
) -> Result<(Decimal, &'a str), UnitError> {
    let trimmed = input.trim();
    if trimmed.is_empty() {
        return Err(UnitError::Empty { kind, example });
    }
    if trimmed.starts_with('-')
        && trimmed[1..].starts_with(|c: char| c.is_ascii_digit() || c == '.')
    {
        return Err(UnitError::Negative {
            kind,
            input: input.to_owned(),
            example,
        });
    }
    let end = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(end);
    let not_a_number = || UnitError::NotANumber {
        kind,
        input: input.to_owned(),
        accepted,
    };
    let overflow = || UnitError::Overflow {
        kind,
        input: input.to_owned(),
        max: u64::MAX.to_string(),
        example,
    };
    let (whole, fraction) = match number.split_once('.') {
        Some((whole, fraction)) => (whole, fraction),
        None => (number, ""),
    };
    if (whole.is_empty() && fraction.is_empty()) || fraction.contains('.') {
        return Err(not_a_number());
    }
    let mut mantissa: u128 = 0;
    for digit in whole.bytes().chain(fraction.bytes()) {
        mantissa = mantissa
            .checked_mul(10)
            .and_then(|m| m.checked_add(u128::from(digit - b'0')))
            .ok_or_else(overflow)?;
    }
    let decimals = u32::try_from(fraction.len()).map_err(|_| overflow())?;
    let unit = unit.trim_start();
    if unit.starts_with(|c: char| c.is_ascii_digit() || c == '.' || c == '-' || c == '+') {
        return Err(not_a_number());
    }
    Ok((Decimal { mantissa, decimals }, unit))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn rate(s: &str) -> u64 {
        s.parse::<BitRate>().unwrap().bps()
    }

    fn size(s: &str) -> u64 {
        s.parse::<Bytes>().unwrap().get()
    }

    #[test]
    fn rates_people_type() {
        assert_eq!(rate("10G"), 10_000_000_000);
        assert_eq!(rate("10Gbit/s"), 10_000_000_000);
        assert_eq!(rate("10Gbps"), 10_000_000_000);
        assert_eq!(rate("100M"), 100_000_000);
        assert_eq!(rate("2.5G"), 2_500_000_000);
        assert_eq!(rate("100000kbit/s"), 100_000_000);
        assert_eq!(rate("56k"), 56_000);
        assert_eq!(rate("125MB/s"), 1_000_000_000);
        assert_eq!(rate("125MBps"), 1_000_000_000);
        assert_eq!(rate("622 Mbit/s"), 622_000_000);
        assert_eq!(rate("9600bit/s"), 9_600);
        assert_eq!(rate("1g"), 1_000_000_000);
    }

    #[test]
    fn sizes_people_type() {
        assert_eq!(size("65536"), 65_536);
        assert_eq!(size("64K"), 65_536);
        assert_eq!(size("64KiB"), 65_536);
        assert_eq!(size("64kB"), 64_000);
        assert_eq!(size("16MiB"), 16 * 1024 * 1024);
        assert_eq!(size("212.5KB"), 212_500);
        assert_eq!(size("1.5GiB"), 3 * 512 * 1024 * 1024);
        assert_eq!(size("100 bytes"), 100);
    }

    #[test]
    fn durations_people_type() {
        assert_eq!(parse_duration("50ms").unwrap(), Duration::from_millis(50));
        assert_eq!(parse_duration("0.05s").unwrap(), Duration::from_millis(50));
        assert_eq!(parse_duration("12 ms").unwrap(), Duration::from_millis(12));
        assert_eq!(parse_duration("100us").unwrap(), Duration::from_micros(100));
        assert_eq!(parse_duration("100µs").unwrap(), Duration::from_micros(100));
        assert_eq!(
            parse_duration("2.5ms").unwrap(),
            Duration::from_micros(2500)
        );
        assert_eq!(parse_duration("2min").unwrap(), Duration::from_secs(120));
    }

    #[test]
    fn bad_rates_quote_the_input_and_show_a_form() {
        for bad in [
            "0",
            "-5M",
            "10X",
            "",
            "   ",
            "NaN",
            "inf",
            "1e9",
            "100",
            "99999999999999999999999G",
            "1.2.3G",
        ] {
            let err = BitRate::parse_positive(bad).unwrap_err().to_string();
            assert!(
                err.contains("10G") || err.contains("give"),
                "{bad:?}: {err}"
            );
            if !bad.trim().is_empty() {
                assert!(
                    err.contains(&format!("\"{bad}\"")),
                    "{bad:?} not quoted: {err}"
                );
            }
        }
    }

    #[test]
    fn bad_durations_and_sizes() {
        assert!(matches!(
            parse_duration("50"),
            Err(UnitError::MissingUnit { .. })
        ));
        assert!(matches!(parse_duration("0"), Err(UnitError::Zero { .. })));
        assert!(matches!(
            BitRate::parse_positive("0"),
            Err(UnitError::Zero { .. })
        ));
        assert!(matches!(
            parse_positive_duration("0ms"),
            Err(UnitError::Zero { .. })
        ));
        assert!(matches!(
            parse_duration("-1ms"),
            Err(UnitError::Negative { .. })
        ));
        assert!(matches!(
            parse_duration("5 parsecs"),
            Err(UnitError::UnknownUnit { .. })
        ));
        assert!(matches!(
            "64Kb".parse::<Bytes>(),
            Err(UnitError::UnknownUnit { .. })
        ));
        assert!(matches!(
            Bytes::parse_positive("0"),
            Err(UnitError::Zero { .. })
        ));
        assert!(matches!(
            "18446744073709551616".parse::<Bytes>(),
            Err(UnitError::Overflow { .. })
        ));
        assert!(matches!(
            "18446744073709551615".parse::<Bytes>(),
            Ok(Bytes(u64::MAX))
        ));
    }

    #[test]
    fn human_forms() {
        assert_eq!(BitRate(5_242_880).human(), "5.24 Mbit/s");
        assert_eq!(BitRate(10_000_000_000).human(), "10 Gbit/s");
        assert_eq!(Bytes(62_500_000).grouped(), "62,500,000");
        assert_eq!(Bytes(62_500_000).human_si(), "62.5 MB");
        assert_eq!(Bytes(62_500_000).human_iec(), "59.6 MiB");
        assert_eq!(Bytes(999).grouped(), "999");
        assert_eq!(human_duration(Duration::from_micros(12_500)), "12.5 ms");
    }

    proptest! {
        #[test]
        fn no_input_panics(input in ".{0,40}") {
            let _ = input.parse::<BitRate>();
            let _ = input.parse::<Bytes>();
            let _ = parse_duration(&input);
        }

        #[test]
        fn unit_shaped_input_never_panics(
            number in "[0-9.]{0,30}",
            space in " {0,2}",
            unit in "(k|K|M|m|G|T|Ki|Mi|B|b|bit/s|bps|Bps|B/s|iB|ms|us|s|ns|min|x|é){0,3}",
        ) {
            let input = format!("{number}{space}{unit}");
            let _ = input.parse::<BitRate>();
            let _ = input.parse::<Bytes>();
            let _ = parse_duration(&input);
        }

        #[test]
        fn rates_round_trip(bps in 1u64..) {
            let printed = BitRate(bps).to_string();
            prop_assert_eq!(printed.parse::<BitRate>().unwrap(), BitRate(bps));
        }

        #[test]
        fn sizes_round_trip(n in 0u64..) {
            prop_assert_eq!(Bytes(n).to_string().parse::<Bytes>().unwrap(), Bytes(n));
        }

        #[test]
        fn durations_round_trip(nanos in 0u64..) {
            let d = Duration::from_nanos(nanos);
            prop_assert_eq!(parse_duration(&format_duration(d)).unwrap(), d);
        }

        #[test]
        fn decimal_rates_are_exact(whole in 0u64..100_000, tenths in 0u64..10) {
            let parsed = format!("{whole}.{tenths}M").parse::<BitRate>().unwrap();
            prop_assert_eq!(parsed.bps(), whole * 1_000_000 + tenths * 100_000);
        }
    }
}
