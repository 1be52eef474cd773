//! The `"kind":"sample"` lines of a telemetry file (`--telemetry`, JSON
//! lines: a header, samples every interval, the tuner's decisions, a
//! final line), read as a stream. The caller opens the file; these
//! functions take any reader, so tests feed them text.
//!
//! A report reads hundreds of files of several MB, mostly decision lines,
//! so a line is classified by its start (`{"kind":"decision"` is skipped
//! unparsed) and a sample's few numbers are taken out directly; a line in
//! another layout falls back to a full JSON parse. Unreadable lines (a
//! file cut short by a killed process) are skipped.

use std::io::{self, BufRead};

use serde_json::Value;

/// The numbers of one sample line a report uses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// Seconds since the connection's telemetry began.
    pub t_s: f64,
    /// Goodput over the last interval, bits/s.
    pub interval_goodput_bps: Option<f64>,
    /// SO_RCVBUF as read back, bytes.
    pub rcvbuf_bytes: Option<f64>,
    /// The smoothed RTT (`tcpi_rtt`), microseconds.
    pub rtt_us: Option<f64>,
    /// The congestion window (`tcpi_snd_cwnd` x MSS), bytes.
    pub snd_cwnd_bytes: Option<f64>,
    /// The window this end advertised (`tcpi_rcv_wnd`), bytes.
    pub rcv_wnd_bytes: Option<f64>,
    /// Segments retransmitted so far (`tcpi_total_retrans`).
    pub total_retrans_segs: Option<f64>,
}

/// Every sample of a telemetry stream, in order.
pub fn samples(reader: impl BufRead) -> io::Result<Vec<Sample>> {
    let mut out = Vec::new();
    for_each_sample(reader, |s| {
        out.push(s);
        true
    })?;
    Ok(out)
}

/// Seconds from the first sample to the first whose interval goodput is
/// at least `threshold_bps`; `None` if none is. Stops reading there.
pub fn time_to_reach(reader: impl BufRead, threshold_bps: f64) -> io::Result<Option<f64>> {
    let mut first = None;
    let mut reached = None;
    for_each_sample(reader, |s| {
        let t0 = *first.get_or_insert(s.t_s);
        if s.interval_goodput_bps.is_some_and(|g| g >= threshold_bps) {
            reached = Some(s.t_s - t0);
            return false;
        }
        true
    })?;
    Ok(reached)
}

/// Calls `f` with each sample until it returns false.
fn for_each_sample(mut reader: impl BufRead, mut f: impl FnMut(Sample) -> bool) -> io::Result<()> {
    let mut buf = Vec::with_capacity(1024);
    loop {
        buf.clear();
        if reader.read_until(b'\n', &mut buf)? == 0 {
            return Ok(());
        }
        let Ok(line) = std::str::from_utf8(&buf) else {
            continue;
        };
        if sample_of(line).is_some_and(|sample| !f(sample)) {
            return Ok(());
        }
    }
}

const KIND_PREFIX: &str = "{\"kind\":\"";

/// The sample in one line, if it is a sample line.
pub fn sample_of(line: &str) -> Option<Sample> {
    let line = line.trim();
    if !line.ends_with('}') {
        return None;
    }
    if let Some(rest) = line.strip_prefix(KIND_PREFIX) {
        if !rest.starts_with("sample\"") {
            return None;
        }
        if let Some(t_s) = number_field(line, "t_s") {
            return Some(Sample {
                t_s,
                interval_goodput_bps: number_field(line, "interval_goodput_bps"),
                rcvbuf_bytes: number_field(line, "rcvbuf_bytes"),
                rtt_us: number_field(line, "rtt_us"),
                snd_cwnd_bytes: number_field(line, "snd_cwnd_bytes"),
                rcv_wnd_bytes: number_field(line, "rcv_wnd_bytes"),
                total_retrans_segs: number_field(line, "total_retrans_segs"),
            });
        }
    } else if !line.contains("\"sample\"") {
        return None;
    }
    let value: Value = serde_json::from_str(line).ok()?;
    if value["kind"] != "sample" {
        return None;
    }
    Some(Sample {
        t_s: value["t_s"].as_f64()?,
        interval_goodput_bps: value["interval_goodput_bps"].as_f64(),
        rcvbuf_bytes: value["rcvbuf_bytes"].as_f64(),
        rtt_us: value["rtt_us"].as_f64(),
        snd_cwnd_bytes: value["snd_cwnd_bytes"].as_f64(),
        rcv_wnd_bytes: value["rcv_wnd_bytes"].as_f64(),
        total_retrans_segs: value["total_retrans_segs"].as_f64(),
    })
}

/// The number after `"key":` in a flat JSON object whose values are
/// numbers (a sample line): the quotes make `"rcvbuf_bytes":` miss
/// `"peak_rcvbuf_bytes":`.
fn number_field(line: &str, key: &str) -> Option<f64> {
    let pattern = format!("\"{key}\":");
    let start = line.find(&pattern)? + pattern.len();
    let rest = line[start..].trim_start();
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, '-' | '+' | '.' | 'e' | 'E')))
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = concat!(
        "{\"kind\":\"header\",\"version\":\"0.1.0\",\"role\":\"client\"}\n",
        "{\"kind\":\"decision\",\"t_s\":0.01,\"event\":\"sample\",\"reason\":\"x\"}\n",
        "{\"kind\":\"sample\",\"t_s\":0.1,\"bytes\":1,\"interval_goodput_bps\":1000000,\"rcvbuf_bytes\":131072,\"rtt_us\":100200,\"min_rtt_us\":100000,\"snd_cwnd_bytes\":14480,\"total_retrans_segs\":2,\"rcv_wnd_bytes\":65536}\n",
        "{\"kind\":\"sample\",\"t_s\":0.2,\"interval_goodput_bps\":5e6,\"rcvbuf_bytes\":262144,\"rtt_us\":101000}\n",
        "{ \"t_s\": 0.3, \"kind\": \"sample\", \"interval_goodput_bps\": 9000000 }\n",
        "{\"kind\":\"sample\",\"t_s\":0.4,\"interval_goo",
    );

    #[test]
    fn reads_samples_and_skips_other_and_cut_lines() {
        let got = samples(TEXT.as_bytes()).expect("in memory");
        assert_eq!(got.len(), 3);
        assert_eq!(
            got[0],
            Sample {
                t_s: 0.1,
                interval_goodput_bps: Some(1e6),
                rcvbuf_bytes: Some(131072.0),
                rtt_us: Some(100200.0),
                snd_cwnd_bytes: Some(14480.0),
                rcv_wnd_bytes: Some(65536.0),
                total_retrans_segs: Some(2.0),
            }
        );
        assert_eq!(got[1].interval_goodput_bps, Some(5e6));
        // Another key order and spacing: the full parse.
        assert_eq!(got[2].t_s, 0.3);
        assert_eq!(got[2].interval_goodput_bps, Some(9e6));
        assert_eq!(got[2].rcvbuf_bytes, None);
    }

    #[test]
    fn time_to_reach_counts_from_the_first_sample() {
        let t = time_to_reach(TEXT.as_bytes(), 4e6).expect("in memory");
        assert!((t.expect("reached") - 0.1).abs() < 1e-12);
        assert_eq!(
            time_to_reach(TEXT.as_bytes(), 1e9).expect("in memory"),
            None
        );
    }

    #[test]
    fn exact_keys_only() {
        let line = "{\"kind\":\"sample\",\"t_s\":1,\"peak_rcvbuf_bytes\":9,\"rcvbuf_bytes\":7}";
        assert_eq!(sample_of(line).and_then(|s| s.rcvbuf_bytes), Some(7.0));
    }
}
