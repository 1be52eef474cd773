//! The TOML form of a path spec and its checks. Unknown keys are refused
//! (Rattan ignores them silently; we do not).

use std::time::Duration;

use serde::Deserialize;

use super::trace;
use super::{
    Backend, CrossSpec, HostSpec, LinkSpec, PACKET_BYTES, PathSpec, QueueLimit, QueueSpec,
    RateSpec, Side, Step,
};
use rightsize_tune::units::{BitRate, Bytes, parse_duration};

/// Why a path spec was refused: the key, what was given, what is accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("path spec: {0}")]
pub struct SpecError(pub String);

fn err<T>(message: impl Into<String>) -> Result<T, SpecError> {
    Err(SpecError(message.into()))
}

/// The longest one-way delay accepted: beyond this no path is plausible.
const MAX_DELAY: Duration = Duration::from_secs(10);
/// The fastest rate accepted (the emulator saturates long before).
const MAX_RATE: BitRate = BitRate(100_000_000_000);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSpec {
    backend: Option<String>,
    #[serde(flatten)]
    link: RawLink,
    uplink: Option<RawLink>,
    downlink: Option<RawLink>,
    left: Option<RawHost>,
    right: Option<RawHost>,
    #[serde(default)]
    cross: Vec<RawCross>,
    seed: Option<toml::Value>,
}

#[derive(Debug, Default, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct RawLink {
    rate: Option<String>,
    delay: Option<String>,
    queue: Option<toml::Value>,
    loss: Option<toml::Value>,
    trace: Option<String>,
    steps: Option<Vec<RawStep>>,
}

#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct RawStep {
    #[serde(rename = "for")]
    duration: String,
    rate: Option<String>,
    delay: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHost {
    tcp_rmem: Option<toml::Value>,
    tcp_wmem: Option<toml::Value>,
    congestion: Option<String>,
    rmem_max: Option<toml::Value>,
    wmem_max: Option<toml::Value>,
    command: Option<Vec<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCross {
    kind: String,
    from: Option<String>,
    rate: Option<String>,
    on: Option<String>,
    off: Option<String>,
    flows: Option<u32>,
    window: Option<String>,
    congestion: Option<String>,
}

pub(super) fn parse(
    text: &str,
    read: &mut dyn FnMut(&str) -> Result<String, String>,
) -> Result<PathSpec, SpecError> {
    let raw: RawSpec = toml::from_str(text).map_err(|e| SpecError(e.to_string()))?;
    let backend = match raw.backend.as_deref() {
        None | Some("auto") => Backend::Auto,
        Some("rattan") => Backend::Rattan,
        Some("netem") => Backend::Netem,
        Some(other) => {
            return err(format!(
                "backend \"{other}\" is not one of: auto, rattan, netem"
            ));
        }
    };
    let uplink = merge(&raw.link, raw.uplink.as_ref());
    let downlink = merge(&raw.link, raw.downlink.as_ref());
    let uplink_rate = rate_spec("uplink", &uplink, read)?;
    let downlink_rate = rate_spec("downlink", &downlink, read)?;
    let uplink_delay = delay("uplink.delay", uplink.delay.as_deref())?;
    let downlink_delay = delay("downlink.delay", downlink.delay.as_deref())?;
    let spec = PathSpec {
        backend,
        uplink: LinkSpec {
            rate: uplink_rate,
            delay: uplink_delay,
            queue: queue("uplink.queue", uplink.queue.as_ref())?,
            loss: loss("uplink.loss", uplink.loss.as_ref())?,
        },
        downlink: LinkSpec {
            rate: downlink_rate,
            delay: downlink_delay,
            queue: queue("downlink.queue", downlink.queue.as_ref())?,
            loss: loss("downlink.loss", downlink.loss.as_ref())?,
        },
        left: host("left", raw.left.unwrap_or_default())?,
        right: host("right", raw.right.unwrap_or_default())?,
        cross: raw
            .cross
            .into_iter()
            .enumerate()
            .map(|(i, c)| cross(i, c))
            .collect::<Result<_, _>>()?,
        seed: raw.seed.as_ref().map(seed).transpose()?,
    };
    for side in [Side::Left, Side::Right] {
        let name = if side == Side::Left {
            "uplink.queue"
        } else {
            "downlink.queue"
        };
        match spec.queue_limit(side) {
            QueueLimit::Bytes(b) if b < PACKET_BYTES => {
                return err(format!(
                    "{name} is {b} bytes, smaller than one {PACKET_BYTES}-byte packet; \
                     give at least \"{PACKET_BYTES}B\", \"1packets\" or a larger BDP multiple"
                ));
            }
            QueueLimit::Packets(0) => {
                return err(format!(
                    "{name} of 0 packets holds nothing; give at least 1"
                ));
            }
            _ => {}
        }
    }
    Ok(spec)
}

/// A direction's settings: its own table over the top-level defaults.
fn merge(base: &RawLink, over: Option<&RawLink>) -> RawLink {
    let Some(over) = over else {
        return base.clone();
    };
    RawLink {
        rate: over.rate.clone().or_else(|| base.rate.clone()),
        delay: over.delay.clone().or_else(|| base.delay.clone()),
        queue: over.queue.clone().or_else(|| base.queue.clone()),
        loss: over.loss.clone().or_else(|| base.loss.clone()),
        trace: over.trace.clone().or_else(|| base.trace.clone()),
        steps: over.steps.clone().or_else(|| base.steps.clone()),
    }
}

fn rate(key: &str, input: &str) -> Result<BitRate, SpecError> {
    let rate = BitRate::parse_positive(input).map_err(|e| SpecError(format!("{key}: {e}")))?;
    if rate > MAX_RATE {
        return err(format!(
            "{key} \"{input}\" is above {}; no emulator here can carry it",
            MAX_RATE.human()
        ));
    }
    Ok(rate)
}

fn delay(key: &str, input: Option<&str>) -> Result<Duration, SpecError> {
    let Some(input) = input else {
        return Ok(Duration::ZERO);
    };
    let value = parse_duration(input).map_err(|e| SpecError(format!("{key}: {e}")))?;
    if value > MAX_DELAY {
        return err(format!(
            "{key} \"{input}\" is longer than 10s one way; give a delay such as \"50ms\""
        ));
    }
    Ok(value)
}

fn rate_spec(
    name: &str,
    link: &RawLink,
    read: &mut dyn FnMut(&str) -> Result<String, String>,
) -> Result<RateSpec, SpecError> {
    let given = [
        link.rate.is_some(),
        link.trace.is_some(),
        link.steps.is_some(),
    ]
    .iter()
    .filter(|g| **g)
    .count();
    if given > 1 {
        return err(format!(
            "{name}: give one of rate, trace or steps, not several"
        ));
    }
    if let Some(input) = &link.rate {
        return Ok(RateSpec::Constant(rate(&format!("{name}.rate"), input)?));
    }
    if let Some(steps) = &link.steps {
        let steps = steps
            .iter()
            .enumerate()
            .map(|(i, s)| step(&format!("{name}.steps[{i}]"), s))
            .collect::<Result<Vec<_>, _>>()?;
        return check_steps(name, steps).map(RateSpec::Steps);
    }
    if let Some(file) = &link.trace {
        let text = read(file).map_err(|e| SpecError(format!("{name}.trace \"{file}\": {e}")))?;
        let parsed =
            trace::parse(&text).map_err(|e| SpecError(format!("{name}.trace \"{file}\": {e}")))?;
        return match parsed {
            trace::Parsed::Mahimahi(t) => Ok(RateSpec::Mahimahi(t)),
            trace::Parsed::Steps(steps) => check_steps(name, steps).map(RateSpec::Steps),
        };
    }
    err(format!(
        "{name} has no rate: give rate = \"100Mbit\" (top level for both directions, or in [{name}]), a trace file or steps"
    ))
}

fn step(key: &str, raw: &RawStep) -> Result<Step, SpecError> {
    let duration = rightsize_tune::units::parse_positive_duration(&raw.duration)
        .map_err(|e| SpecError(format!("{key}.for: {e}")))?;
    Ok(Step {
        duration,
        rate: raw
            .rate
            .as_deref()
            .map(|r| rate(&format!("{key}.rate"), r))
            .transpose()?,
        delay: raw
            .delay
            .as_deref()
            .map(|d| delay(&format!("{key}.delay"), Some(d)))
            .transpose()?,
    })
}

fn check_steps(name: &str, steps: Vec<Step>) -> Result<Vec<Step>, SpecError> {
    if steps.is_empty() {
        return err(format!("{name}.steps is empty; give at least one step"));
    }
    if steps.first().and_then(|s| s.rate).is_none() {
        return err(format!(
            "{name}.steps: the first step needs a rate (later steps keep the last one)"
        ));
    }
    Ok(steps)
}

fn queue(key: &str, value: Option<&toml::Value>) -> Result<QueueSpec, SpecError> {
    const ACCEPTED: &str =
        "\"1bdp\" or \"0.1 x BDP\", \"375KB\", \"250 packets\", \"infinite\", or a number of bytes";
    let Some(value) = value else {
        return Ok(QueueSpec::Default);
    };
    let text = match value {
        toml::Value::Integer(n) if *n >= 0 => return Ok(QueueSpec::Bytes(*n as u64)),
        toml::Value::String(s) => s.trim().to_owned(),
        other => return err(format!("{key} = {other} is not accepted; give {ACCEPTED}")),
    };
    let lower = text.to_ascii_lowercase();
    if lower == "infinite" || lower == "unlimited" {
        return Ok(QueueSpec::Infinite);
    }
    let compact: String = lower.chars().filter(|c| !c.is_whitespace()).collect();
    if let Some(number) = compact
        .strip_suffix("bdp")
        .map(|n| n.trim_end_matches(['x', '*']))
    {
        let multiple: f64 = if number.is_empty() {
            1.0
        } else {
            number.parse().map_err(|_| {
                SpecError(format!("{key} \"{text}\" is not accepted; give {ACCEPTED}"))
            })?
        };
        if !(multiple.is_finite() && multiple > 0.0 && multiple <= 1000.0) {
            return err(format!(
                "{key} \"{text}\": the BDP multiple must be above 0 and at most 1000"
            ));
        }
        return Ok(QueueSpec::Bdp(multiple));
    }
    for suffix in ["packets", "packet", "pkts", "pkt", "p"] {
        if let Some(number) = compact.strip_suffix(suffix)
            && let Ok(n) = number.parse::<u64>()
        {
            return Ok(QueueSpec::Packets(n));
        }
    }
    text.parse::<Bytes>()
        .map(|b| QueueSpec::Bytes(b.0))
        .map_err(|_| SpecError(format!("{key} \"{text}\" is not accepted; give {ACCEPTED}")))
}

/// The random-loss seed: a whole number from 0 to 2^62.
fn seed(value: &toml::Value) -> Result<u64, SpecError> {
    match value {
        toml::Value::Integer(n) if (0..=1 << 62).contains(n) => Ok(*n as u64),
        other => err(format!(
            "seed = {other} is not accepted; give a whole number from 0 to 2^62, such as 7 \
             (runs with the same seed lose the same packets)"
        )),
    }
}

fn loss(key: &str, value: Option<&toml::Value>) -> Result<f64, SpecError> {
    let probability = match value {
        None => 0.0,
        Some(toml::Value::Float(f)) => *f,
        Some(toml::Value::Integer(n)) => *n as f64,
        Some(toml::Value::String(s)) => {
            let t = s.trim();
            let parsed = match t.strip_suffix('%') {
                Some(p) => p.trim().parse::<f64>().map(|p| p / 100.0),
                None => t.parse::<f64>(),
            };
            parsed.map_err(|_| {
                SpecError(format!(
                    "{key} \"{s}\" is not a probability; give 0.001 or \"0.1%\""
                ))
            })?
        }
        Some(other) => {
            return err(format!(
                "{key} = {other} is not a probability; give 0.001 or \"0.1%\""
            ));
        }
    };
    if !(probability.is_finite() && (0.0..1.0).contains(&probability)) {
        return err(format!(
            "{key} = {probability} is outside [0, 1): give a probability such as 0.001 or \"0.1%\""
        ));
    }
    Ok(probability)
}

fn size(key: &str, value: &toml::Value) -> Result<u64, SpecError> {
    match value {
        toml::Value::Integer(n) if *n > 0 => Ok(*n as u64),
        toml::Value::String(s) => Bytes::parse_positive(s)
            .map(|b| b.0)
            .map_err(|e| SpecError(format!("{key}: {e}"))),
        other => err(format!(
            "{key} = {other} is not a size; give bytes or \"32MiB\""
        )),
    }
}

fn triple(key: &str, value: &toml::Value) -> Result<[u64; 3], SpecError> {
    let items: Vec<toml::Value> = match value {
        toml::Value::Array(items) => items.clone(),
        toml::Value::String(s) => s
            .split_whitespace()
            .map(|w| toml::Value::String(w.to_owned()))
            .collect(),
        _ => Vec::new(),
    };
    let accepted = "give three sizes, min default max: \"4096 131072 33554432\" or [4096, \"128KiB\", \"32MiB\"]";
    let [a, b, c] = items.as_slice() else {
        return err(format!("{key} = {value} is not accepted; {accepted}"));
    };
    let values = [size(key, a)?, size(key, b)?, size(key, c)?];
    if !(values[0] <= values[1] && values[1] <= values[2]) {
        return err(format!(
            "{key} = {value}: min <= default <= max does not hold; {accepted}"
        ));
    }
    Ok(values)
}

fn host(side: &str, raw: RawHost) -> Result<HostSpec, SpecError> {
    let congestion = match raw.congestion {
        Some(name)
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') =>
        {
            return err(format!(
                "{side}.congestion \"{name}\" is not a congestion-control name such as cubic, reno or bbr"
            ));
        }
        other => other,
    };
    if let Some(command) = &raw.command
        && command.first().is_none_or(|c| c.is_empty())
    {
        return err(format!(
            "{side}.command is empty; give a program and its arguments: [\"iperf3\", \"-s\"]"
        ));
    }
    Ok(HostSpec {
        tcp_rmem: raw
            .tcp_rmem
            .as_ref()
            .map(|v| triple(&format!("{side}.tcp_rmem"), v))
            .transpose()?,
        tcp_wmem: raw
            .tcp_wmem
            .as_ref()
            .map(|v| triple(&format!("{side}.tcp_wmem"), v))
            .transpose()?,
        congestion,
        rmem_max: raw
            .rmem_max
            .as_ref()
            .map(|v| size(&format!("{side}.rmem_max"), v))
            .transpose()?,
        wmem_max: raw
            .wmem_max
            .as_ref()
            .map(|v| size(&format!("{side}.wmem_max"), v))
            .transpose()?,
        command: raw.command,
    })
}

fn cross(index: usize, raw: RawCross) -> Result<CrossSpec, SpecError> {
    let key = format!("cross[{index}]");
    let from: Side = match raw.from.as_deref() {
        None => Side::Left,
        Some(s) => s
            .parse()
            .map_err(|e| SpecError(format!("{key}.from: {e}")))?,
    };
    match raw.kind.as_str() {
        "udp" => {
            if raw.flows.is_some() || raw.window.is_some() || raw.congestion.is_some() {
                return err(format!(
                    "{key}: flows, window and congestion are for kind = \"tcp\""
                ));
            }
            let Some(r) = raw.rate.as_deref() else {
                return err(format!(
                    "{key}: UDP cross traffic needs a rate, e.g. \"100Mbit\""
                ));
            };
            let on_off = match (raw.on.as_deref(), raw.off.as_deref()) {
                (None, None) => None,
                (Some(on), Some(off)) => Some((
                    rightsize_tune::units::parse_positive_duration(on)
                        .map_err(|e| SpecError(format!("{key}.on: {e}")))?,
                    rightsize_tune::units::parse_positive_duration(off)
                        .map_err(|e| SpecError(format!("{key}.off: {e}")))?,
                )),
                _ => return err(format!("{key}: give both on and off, or neither")),
            };
            Ok(CrossSpec::Udp {
                from,
                rate: rate(&format!("{key}.rate"), r)?,
                on_off,
            })
        }
        "tcp" => {
            if raw.rate.is_some() || raw.on.is_some() || raw.off.is_some() {
                return err(format!(
                    "{key}: rate, on and off are for kind = \"udp\" (a TCP flow's rate is its own)"
                ));
            }
            let flows = raw.flows.unwrap_or(1);
            if flows == 0 || flows > 64 {
                return err(format!("{key}.flows = {flows}: give 1 to 64 flows"));
            }
            let window = raw
                .window
                .as_deref()
                .map(|w| {
                    Bytes::parse_positive(w).map_err(|e| SpecError(format!("{key}.window: {e}")))
                })
                .transpose()?;
            Ok(CrossSpec::Tcp {
                from,
                flows,
                window,
                congestion: raw.congestion,
            })
        }
        other => err(format!("{key}.kind \"{other}\" is not one of: udp, tcp")),
    }
}

/// Parses a spec with CLI flags laid over it: each `(key, value)` (keys
/// `rate`, `delay`, `queue`, `loss`, `backend`) sets that key for both
/// directions, replacing what the file said at the top level or in
/// `[uplink]`/`[downlink]`.
pub(super) fn parse_with(
    text: &str,
    overrides: &[(&str, String)],
    read: &mut dyn FnMut(&str) -> Result<String, String>,
) -> Result<PathSpec, SpecError> {
    if overrides.is_empty() {
        return parse(text, read);
    }
    let mut table: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| SpecError(e.to_string()))?;
    for (key, value) in overrides {
        let value = match (*key, value.parse::<f64>(), value.parse::<i64>()) {
            ("loss", Ok(f), _) => toml::Value::Float(f),
            ("seed", _, Ok(n)) => toml::Value::Integer(n),
            _ => toml::Value::String(value.clone()),
        };
        for direction in ["uplink", "downlink"] {
            if let Some(toml::Value::Table(link)) = table.get_mut(direction) {
                link.remove(*key);
                if *key == "rate" {
                    link.remove("trace");
                    link.remove("steps");
                }
            }
        }
        if *key == "rate" {
            table.remove("trace");
            table.remove("steps");
        }
        table.insert((*key).to_owned(), value);
    }
    parse(&table.to_string(), read)
}

/// Parses one trace file's text on its own.
pub fn parse_trace(text: &str) -> Result<RateSpec, SpecError> {
    match trace::parse(text).map_err(|e| SpecError(e.to_string()))? {
        trace::Parsed::Mahimahi(t) => Ok(RateSpec::Mahimahi(t)),
        trace::Parsed::Steps(steps) => check_steps("trace", steps).map(RateSpec::Steps),
    }
}
