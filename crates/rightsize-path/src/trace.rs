//! Time-varying links: schedules of steps and trace files.
//!
//! Two file formats are accepted, told apart by their first data line:
//! - **mahimahi**: one integer per line, a millisecond timestamp at which
//!   the link can deliver one 1500-byte packet; the trace repeats with a
//!   period of its last timestamp (mahimahi's `mm-link` format).
//! - **steps**: one step per line, `DURATION RATE [DELAY]`, e.g.
//!   `4s 200Mbit 50ms`; the schedule repeats when it ends. `#` starts a
//!   comment in both formats; blank lines are ignored.

use std::fmt;
use std::time::Duration;

use serde::Serialize;

use rightsize_tune::units::{BitRate, parse_duration, parse_positive_duration};

use super::PACKET_BYTES;

/// One step of a schedule: `rate` and/or `delay` for `duration`; a missing
/// field keeps its previous value.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    /// How long the step lasts.
    pub duration: Duration,
    /// The rate during the step.
    pub rate: Option<BitRate>,
    /// The one-way delay during the step.
    pub delay: Option<Duration>,
}

/// A mahimahi delivery trace: millisecond timestamps, non-decreasing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RateTrace {
    /// Delivery opportunities, each for one 1500-byte packet.
    pub timestamps_ms: Vec<u64>,
}

impl RateTrace {
    /// The repeat period: the last timestamp.
    pub fn period(&self) -> Duration {
        Duration::from_millis(self.timestamps_ms.last().copied().unwrap_or(0))
    }

    /// The mean rate over one period.
    pub fn mean_rate(&self) -> BitRate {
        let ms = self.timestamps_ms.last().copied().unwrap_or(0).max(1);
        BitRate(self.timestamps_ms.len() as u64 * PACKET_BYTES * 8 * 1000 / ms)
    }

    /// The highest rate over any aligned 100 ms window of one period.
    pub fn peak_rate(&self) -> BitRate {
        let mut best = 0u64;
        let mut bin = u64::MAX;
        let mut count = 0u64;
        for &t in &self.timestamps_ms {
            if t / 100 != bin {
                bin = t / 100;
                count = 0;
            }
            count += 1;
            best = best.max(count);
        }
        BitRate(best * PACKET_BYTES * 8 * 10)
    }

    /// The trace in mahimahi's format, one timestamp per line.
    pub fn to_mahimahi(&self) -> String {
        let mut out = String::with_capacity(self.timestamps_ms.len() * 6);
        for t in &self.timestamps_ms {
            out.push_str(&t.to_string());
            out.push('\n');
        }
        out
    }
}

/// A parsed trace file.
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    /// A mahimahi trace.
    Mahimahi(RateTrace),
    /// A steps file.
    Steps(Vec<Step>),
}

/// Why a trace file was refused, with its line number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceError {
    /// 1-based line number, 0 for the whole file.
    pub line: usize,
    /// What is wrong and what is accepted.
    pub message: String,
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.message)
        } else {
            write!(f, "line {}: {}", self.line, self.message)
        }
    }
}

impl std::error::Error for TraceError {}

fn fail<T>(line: usize, message: impl Into<String>) -> Result<T, TraceError> {
    Err(TraceError {
        line,
        message: message.into(),
    })
}

/// Parses a trace file in either format.
pub fn parse(text: &str) -> Result<Parsed, TraceError> {
    let lines: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.split('#').next().unwrap_or("").trim()))
        .filter(|(_, l)| !l.is_empty())
        .collect();
    let Some((_, first)) = lines.first() else {
        return fail(
            0,
            "the trace is empty; give mahimahi timestamps (one integer per line) or steps (\"4s 200Mbit 50ms\" per line)",
        );
    };
    if first.parse::<u64>().is_ok() {
        mahimahi(&lines).map(Parsed::Mahimahi)
    } else {
        steps(&lines).map(Parsed::Steps)
    }
}

fn mahimahi(lines: &[(usize, &str)]) -> Result<RateTrace, TraceError> {
    let mut timestamps = Vec::with_capacity(lines.len());
    let mut last = 0u64;
    for &(n, line) in lines {
        let Ok(t) = line.parse::<u64>() else {
            return fail(
                n,
                format!(
                    "\"{line}\" is not a millisecond timestamp; a mahimahi trace has one integer per line"
                ),
            );
        };
        if t < last {
            return fail(
                n,
                format!("timestamp {t} comes after {last}; timestamps must not decrease"),
            );
        }
        last = t;
        timestamps.push(t);
    }
    if last == 0 {
        return fail(
            0,
            "the trace's last timestamp is 0, so it has no period; end it after 0 ms",
        );
    }
    Ok(RateTrace {
        timestamps_ms: timestamps,
    })
}

fn steps(lines: &[(usize, &str)]) -> Result<Vec<Step>, TraceError> {
    const FORM: &str = "a step is DURATION RATE [DELAY], e.g. \"4s 200Mbit 50ms\"";
    let mut out = Vec::with_capacity(lines.len());
    for &(n, line) in lines {
        let words: Vec<&str> = line.split_whitespace().collect();
        let (duration, rate, delay) = match words.as_slice() {
            [d, r] => (*d, *r, None),
            [d, r, l] => (*d, *r, Some(*l)),
            _ => return fail(n, format!("\"{line}\": {FORM}")),
        };
        let duration = parse_positive_duration(duration).map_err(|e| TraceError {
            line: n,
            message: format!("{e}; {FORM}"),
        })?;
        let rate = BitRate::parse_positive(rate).map_err(|e| TraceError {
            line: n,
            message: format!("{e}; {FORM}"),
        })?;
        let delay = delay
            .map(parse_duration)
            .transpose()
            .map_err(|e| TraceError {
                line: n,
                message: format!("{e}; {FORM}"),
            })?;
        out.push(Step {
            duration,
            rate: Some(rate),
            delay,
        });
    }
    Ok(out)
}
