//! The `--tune` value: which tuner, with which options.
//!
//! Grammar: `NAME` or `NAME:OPTIONS`, where `OPTIONS` is `key=value` pairs
//! separated by commas, except `static:SIZE` whose option is the size
//! itself. Names are case-insensitive. Sizes and durations are parsed by
//! [`crate::units`], so `64K`, `16MiB`, `212.5KB` and `500ms` mean what
//! they mean everywhere else. Every error quotes the input and lists what
//! is accepted.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::Serialize;

use crate::units::{Bytes, UnitError, format_duration, parse_positive_duration};

/// What `--tune` accepts, for help text and errors.
pub const ACCEPTED: &str = "stock, static:SIZE (e.g. static:16MiB, static:212.5KB), kernel, \
     drs[:interval=DURATION], sobas, \
     freebsd[:recvbuf_max=SIZE,recvbuf_inc=SIZE,recvbuf_auto=0|1,sendbuf_max=SIZE,sendbuf_inc=SIZE,sendbuf_auto=0|1], \
     auto";

/// drs's sampling interval when none is given: one second, as in the drsFTP paper,
/// section 4.1 ("a conservative configuration with very low overhead").
pub const DRS_DEFAULT_INTERVAL: Duration = Duration::from_secs(1);

/// The shortest drs interval accepted: below it the goodput of one
/// interval is dominated by scheduling and buffering (the drsFTP paper,
/// section 3.1; docs/sources.md).
pub const DRS_MIN_INTERVAL: Duration = Duration::from_millis(10);

/// A tuner and its options, as parsed from `--tune`. It serializes as its
/// canonical text (`"static:16MiB"`), which parses back.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TunerSpec {
    /// 64 KiB send and receive buffers, fixed: the source documents' baseline.
    Stock,
    /// Both buffers fixed at this request, bytes.
    Static(Bytes),
    /// Set nothing; the kernel autotunes.
    Kernel,
    /// Dynamic right-sizing in user space (the drsFTP paper).
    Drs(DrsOptions),
    /// Socket buffer auto-sizing (the SOBAS paper, Fig. 8).
    Sobas,
    /// FreeBSD's automatic buffer sizing, in user space (FreeBSD's autosizing patch).
    FreeBsd(FreeBsdOptions),
    /// rightsize's own tuner, driven by `TCP_INFO` on both ends.
    #[default]
    Auto,
}

/// Options of `drs`: `drs:interval=500ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DrsOptions {
    /// How long each goodput sample aggregates (the drsFTP paper, section 3.1);
    /// default [`DRS_DEFAULT_INTERVAL`], at least [`DRS_MIN_INTERVAL`].
    pub interval: Duration,
}

impl Default for DrsOptions {
    fn default() -> Self {
        DrsOptions {
            interval: DRS_DEFAULT_INTERVAL,
        }
    }
}

/// The knobs of FreeBSD's autosizing patch (`net.inet.tcp.{send,recv}buf_{auto,inc,max}`),
/// with the patch's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct FreeBsdOptions {
    /// `sendbuf_auto`: grow the send buffer (default on).
    pub sendbuf_auto: bool,
    /// `sendbuf_inc`: step, bytes (default 8 KiB).
    pub sendbuf_inc: Bytes,
    /// `sendbuf_max`: growth limit, bytes (default 256 KiB).
    pub sendbuf_max: Bytes,
    /// `recvbuf_auto`: grow the receive buffer (default on).
    pub recvbuf_auto: bool,
    /// `recvbuf_inc`: step, bytes (default 16 KiB).
    pub recvbuf_inc: Bytes,
    /// `recvbuf_max`: growth limit, bytes (default 256 KiB).
    pub recvbuf_max: Bytes,
}

impl Default for FreeBsdOptions {
    fn default() -> Self {
        FreeBsdOptions {
            sendbuf_auto: true,
            sendbuf_inc: Bytes(8 * 1024),
            sendbuf_max: Bytes(256 * 1024),
            recvbuf_auto: true,
            recvbuf_inc: Bytes(16 * 1024),
            recvbuf_max: Bytes(256 * 1024),
        }
    }
}

/// Why a `--tune` value was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    /// The name is not a tuner.
    #[error("unknown tuner \"{input}\"; accepted: {ACCEPTED}")]
    Unknown {
        /// The value as typed.
        input: String,
    },
    /// `static` without a size.
    #[error("tuner \"{input}\" needs a size, e.g. static:16MiB or static:212.5KB")]
    StaticWithoutSize {
        /// The value as typed.
        input: String,
    },
    /// `static:` with a size that does not parse or is zero.
    #[error("tuner \"{input}\": {source}")]
    StaticSize {
        /// The value as typed.
        input: String,
        /// What was wrong with the size.
        source: UnitError,
    },
    /// Options given to a tuner that takes none.
    #[error("tuner \"{input}\": {tuner} takes no options; accepted: {ACCEPTED}")]
    NoOptions {
        /// The value as typed.
        input: String,
        /// The tuner's name.
        tuner: &'static str,
    },
    /// An option the tuner does not know, or one without `=value`.
    #[error("tuner \"{input}\": unknown option \"{option}\"; accepted: {accepted}")]
    UnknownOption {
        /// The value as typed.
        input: String,
        /// The option as typed.
        option: String,
        /// The options this tuner takes.
        accepted: &'static str,
    },
    /// An option whose value is wrong.
    #[error("tuner \"{input}\": option \"{option}\": {reason}")]
    BadValue {
        /// The value as typed.
        input: String,
        /// The option's key.
        option: String,
        /// What was wrong, with an accepted form.
        reason: String,
    },
}

const DRS_OPTIONS: &str = "interval=DURATION (e.g. drs:interval=500ms)";
const FREEBSD_OPTIONS: &str = "recvbuf_max=SIZE, recvbuf_inc=SIZE, recvbuf_auto=0|1, \
     sendbuf_max=SIZE, sendbuf_inc=SIZE, sendbuf_auto=0|1 (e.g. freebsd:recvbuf_max=16MiB)";

impl TunerSpec {
    /// The tuner's name as `--tune` spells it.
    pub const fn name(&self) -> &'static str {
        match self {
            TunerSpec::Stock => "stock",
            TunerSpec::Static(_) => "static",
            TunerSpec::Kernel => "kernel",
            TunerSpec::Drs(_) => "drs",
            TunerSpec::Sobas => "sobas",
            TunerSpec::FreeBsd(_) => "freebsd",
            TunerSpec::Auto => "auto",
        }
    }
}

impl FromStr for TunerSpec {
    type Err = SpecError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let trimmed = input.trim();
        let (name, options) = match trimmed.split_once(':') {
            Some((name, options)) => (name, Some(options)),
            None => (trimmed, None),
        };
        let no_options = |spec: TunerSpec| match options {
            None => Ok(spec),
            Some(_) => Err(SpecError::NoOptions {
                input: input.to_owned(),
                tuner: spec.name(),
            }),
        };
        match name.to_ascii_lowercase().as_str() {
            "stock" => no_options(TunerSpec::Stock),
            "kernel" => no_options(TunerSpec::Kernel),
            "sobas" => no_options(TunerSpec::Sobas),
            "auto" => no_options(TunerSpec::Auto),
            "static" => parse_static(input, options),
            "drs" => parse_drs(input, options.unwrap_or("")).map(TunerSpec::Drs),
            "freebsd" => parse_freebsd(input, options.unwrap_or("")).map(TunerSpec::FreeBsd),
            _ => Err(SpecError::Unknown {
                input: input.to_owned(),
            }),
        }
    }
}

fn parse_static(input: &str, size: Option<&str>) -> Result<TunerSpec, SpecError> {
    let size = size
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| SpecError::StaticWithoutSize {
            input: input.to_owned(),
        })?;
    Bytes::parse_positive(size)
        .map(TunerSpec::Static)
        .map_err(|source| SpecError::StaticSize {
            input: input.to_owned(),
            source,
        })
}

/// Splits `a=1,b=2` into pairs; an empty string is no pairs.
fn pairs<'a>(
    input: &str,
    options: &'a str,
    accepted: &'static str,
) -> Result<Vec<(&'a str, &'a str)>, SpecError> {
    options
        .split(',')
        .map(str::trim)
        .filter(|o| !o.is_empty())
        .map(|option| {
            option
                .split_once('=')
                .map(|(k, v)| (k.trim(), v.trim()))
                .ok_or_else(|| SpecError::UnknownOption {
                    input: input.to_owned(),
                    option: option.to_owned(),
                    accepted,
                })
        })
        .collect()
}

fn bad_value(input: &str, option: &str, reason: impl fmt::Display) -> SpecError {
    SpecError::BadValue {
        input: input.to_owned(),
        option: option.to_owned(),
        reason: reason.to_string(),
    }
}

fn parse_drs(input: &str, options: &str) -> Result<DrsOptions, SpecError> {
    let mut drs = DrsOptions::default();
    for (key, value) in pairs(input, options, DRS_OPTIONS)? {
        match key {
            "interval" => {
                let interval =
                    parse_positive_duration(value).map_err(|e| bad_value(input, key, e))?;
                if interval < DRS_MIN_INTERVAL {
                    return Err(bad_value(
                        input,
                        key,
                        format!(
                            "\"{value}\" is shorter than {}; give e.g. 1s",
                            format_duration(DRS_MIN_INTERVAL)
                        ),
                    ));
                }
                drs.interval = interval;
            }
            _ => {
                return Err(SpecError::UnknownOption {
                    input: input.to_owned(),
                    option: key.to_owned(),
                    accepted: DRS_OPTIONS,
                });
            }
        }
    }
    Ok(drs)
}

fn parse_freebsd(input: &str, options: &str) -> Result<FreeBsdOptions, SpecError> {
    let mut bsd = FreeBsdOptions::default();
    for (key, value) in pairs(input, options, FREEBSD_OPTIONS)? {
        let size = || Bytes::parse_positive(value).map_err(|e| bad_value(input, key, e));
        let flag = || match value {
            "1" | "on" | "yes" | "true" => Ok(true),
            "0" | "off" | "no" | "false" => Ok(false),
            _ => Err(bad_value(input, key, format!("\"{value}\" is not 0 or 1"))),
        };
        match key {
            "sendbuf_auto" => bsd.sendbuf_auto = flag()?,
            "sendbuf_inc" => bsd.sendbuf_inc = size()?,
            "sendbuf_max" => bsd.sendbuf_max = size()?,
            "recvbuf_auto" => bsd.recvbuf_auto = flag()?,
            "recvbuf_inc" => bsd.recvbuf_inc = size()?,
            "recvbuf_max" => bsd.recvbuf_max = size()?,
            _ => {
                return Err(SpecError::UnknownOption {
                    input: input.to_owned(),
                    option: key.to_owned(),
                    accepted: FREEBSD_OPTIONS,
                });
            }
        }
    }
    Ok(bsd)
}

impl Serialize for TunerSpec {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl fmt::Display for TunerSpec {
    /// The canonical form, which parses back to the same spec; options at
    /// their defaults are left out.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TunerSpec::Static(size) => write!(f, "static:{size}"),
            TunerSpec::Drs(drs) if *drs != DrsOptions::default() => {
                write!(f, "drs:interval={}", format_duration(drs.interval))
            }
            TunerSpec::FreeBsd(bsd) if *bsd != FreeBsdOptions::default() => {
                let d = FreeBsdOptions::default();
                let mut options = Vec::new();
                let flag = |on: bool| if on { "1" } else { "0" };
                if bsd.recvbuf_auto != d.recvbuf_auto {
                    options.push(format!("recvbuf_auto={}", flag(bsd.recvbuf_auto)));
                }
                if bsd.recvbuf_inc != d.recvbuf_inc {
                    options.push(format!("recvbuf_inc={}", bsd.recvbuf_inc));
                }
                if bsd.recvbuf_max != d.recvbuf_max {
                    options.push(format!("recvbuf_max={}", bsd.recvbuf_max));
                }
                if bsd.sendbuf_auto != d.sendbuf_auto {
                    options.push(format!("sendbuf_auto={}", flag(bsd.sendbuf_auto)));
                }
                if bsd.sendbuf_inc != d.sendbuf_inc {
                    options.push(format!("sendbuf_inc={}", bsd.sendbuf_inc));
                }
                if bsd.sendbuf_max != d.sendbuf_max {
                    options.push(format!("sendbuf_max={}", bsd.sendbuf_max));
                }
                write!(f, "freebsd:{}", options.join(","))
            }
            other => f.write_str(other.name()),
        }
    }
}

#[cfg(test)]
mod tests;
