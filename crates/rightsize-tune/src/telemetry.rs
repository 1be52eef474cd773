//! Telemetry of one data connection: the JSON-lines records and the pure
//! recorder that makes them.
//!
//! A telemetry file is one [`Header`] line (command line, settings,
//! version, kernel, addresses), then one [`Record`] per sampling interval
//! (`"kind": "sample"`), then one `"kind": "final"` record taken when the
//! transfer ends. Each record holds the bytes moved so far, the goodput
//! over the interval since the previous record, the socket's buffers and
//! window clamp, and the `TCP_INFO` fields that say what limits a transfer.
//! A field the kernel did not fill (or could not be read) is left out of
//! the line, never written as `null` or `0`.
//!
//! [`Recorder`] turns readings into records; it reads no clock: the
//! elapsed time is an argument, so tests drive it with virtual time. The
//! sampling thread lives in `rightsize_sys::telemetry`.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::tcpinfo::TcpInfoSample;

/// Sampling interval when none is given.
pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(100);

/// The shortest sampling interval accepted: below it, sampling costs more
/// than it tells (`busy_time` advances in 4 ms jiffies at HZ=250).
pub const MIN_INTERVAL: Duration = Duration::from_millis(1);

/// A sampling interval below [`MIN_INTERVAL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "telemetry interval {interval:?} is shorter than the minimum {MIN_INTERVAL:?}; give e.g. 100ms"
)]
pub struct IntervalError {
    /// The interval given.
    pub interval: Duration,
}

/// Checks a sampling interval: at least [`MIN_INTERVAL`].
pub fn check_interval(interval: Duration) -> Result<Duration, IntervalError> {
    if interval < MIN_INTERVAL {
        return Err(IntervalError { interval });
    }
    Ok(interval)
}

/// Which end of the FTP session wrote the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The FTP client.
    Client,
    /// The FTP server.
    Server,
}

/// Which way the data flows on this end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// This end writes the data (STOR on the client, RETR on the server).
    Send,
    /// This end reads it.
    Receive,
}

/// The first line of a telemetry file, `"kind": "header"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename = "header")]
pub struct Header {
    /// rightsize's version (`CARGO_PKG_VERSION`).
    pub version: String,
    /// The kernel release (`uname -r`), if it could be read.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub kernel: Option<String>,
    /// The command line, program name first.
    pub argv: Vec<String>,
    /// Client or server.
    pub role: Role,
    /// Send or receive.
    pub direction: Direction,
    /// This end's address, `ip:port`.
    pub local_addr: String,
    /// The other end's address, `ip:port`.
    pub peer_addr: String,
    /// The sampling interval, microseconds (the sampler fills it in).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub interval_us: Option<u64>,
    /// Settings in force (buffer requests, congestion control, tuner...),
    /// as the user gave them or as applied, by name.
    pub settings: BTreeMap<String, String>,
}

/// Whether a record is periodic or the last one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RecordKind {
    /// Taken every interval.
    Sample,
    /// Taken when the transfer ended.
    Final,
}

/// A socket's buffers and window clamp as the kernel reported them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BufferReading {
    /// `SO_RCVBUF`, bytes.
    pub rcvbuf_bytes: u64,
    /// `SO_SNDBUF`, bytes.
    pub sndbuf_bytes: u64,
    /// `TCP_WINDOW_CLAMP`, bytes.
    pub window_clamp_bytes: u32,
}

/// One telemetry line. Every `Option` field is left out when `None`: the
/// buffers when they could not be read, the `TCP_INFO` fields when
/// `TCP_INFO` could not be read or the running kernel does not fill them
/// (see `tcpinfo` for the release that added each).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Sample or final.
    pub kind: RecordKind,
    /// Seconds since the data connection opened, to the microsecond.
    pub t_s: f64,
    /// Payload bytes moved so far by this end.
    pub bytes: u64,
    /// Goodput since the previous record (or since the start), bits per
    /// second; absent if no time passed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval_goodput_bps: Option<u64>,
    /// `SO_RCVBUF` now, bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rcvbuf_bytes: Option<u64>,
    /// `SO_SNDBUF` now, bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sndbuf_bytes: Option<u64>,
    /// `TCP_WINDOW_CLAMP` now, bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window_clamp_bytes: Option<u32>,
    /// `tcpi_rtt`: smoothed RTT of sent data, microseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_us: Option<u32>,
    /// `tcpi_rttvar`, microseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rttvar_us: Option<u32>,
    /// `tcpi_min_rtt` (4.6), microseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_rtt_us: Option<u32>,
    /// `tcpi_snd_cwnd`, segments.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snd_cwnd_segs: Option<u32>,
    /// The congestion window in bytes (`snd_cwnd` x `snd_mss`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snd_cwnd_bytes: Option<u64>,
    /// `tcpi_delivery_rate` (4.9), bits per second.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delivery_rate_bps: Option<u64>,
    /// `tcpi_busy_time` (4.10), microseconds, cumulative.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub busy_time_us: Option<u64>,
    /// `tcpi_rwnd_limited` (4.10): time stopped by the peer's window, µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rwnd_limited_us: Option<u64>,
    /// `tcpi_sndbuf_limited` (4.10): time stopped by our send buffer, µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sndbuf_limited_us: Option<u64>,
    /// `tcpi_total_retrans`: segments retransmitted so far.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_retrans_segs: Option<u32>,
    /// `tcpi_bytes_retrans` (4.19): bytes retransmitted so far.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_retrans: Option<u64>,
    /// `tcpi_rcv_rtt`: the receiver's RTT estimate, microseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rcv_rtt_us: Option<u32>,
    /// `tcpi_rcv_space`: receive autotuning's per-RTT estimate, bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rcv_space_bytes: Option<u32>,
    /// `tcpi_rcv_wnd` (6.2): the window we advertise, bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rcv_wnd_bytes: Option<u32>,
    /// `tcpi_snd_wnd` (5.4): the window the peer advertises, bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snd_wnd_bytes: Option<u32>,
    /// `tcpi_notsent_bytes` (4.6): queued bytes not yet sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notsent_bytes: Option<u32>,
    /// `tcpi_ca_state`: 0 open, 1 disorder, 2 CWR, 3 recovery, 4 loss.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ca_state: Option<u8>,
    /// `tcpi_unacked`: segments sent and not yet acknowledged, the lost
    /// and the selectively acknowledged among them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unacked_segs: Option<u32>,
    /// `tcpi_sacked`: segments selectively acknowledged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sacked_segs: Option<u32>,
    /// `tcpi_lost`: segments presumed lost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost_segs: Option<u32>,
}

/// Makes [`Record`]s from readings, remembering the previous one for the
/// interval goodput. Pure: time is an argument.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recorder {
    /// Elapsed time and bytes at the previous record.
    previous: Option<(Duration, u64)>,
}

impl Recorder {
    /// A recorder whose first interval starts at time 0 with 0 bytes.
    pub fn new() -> Self {
        Recorder::default()
    }

    /// The record for a reading taken `elapsed` after the connection
    /// opened, when `bytes` had been moved. The goodput covers the time
    /// since the previous call (or since 0); a counter that went backwards
    /// counts as no progress.
    pub fn record(
        &mut self,
        kind: RecordKind,
        elapsed: Duration,
        bytes: u64,
        buffers: Option<BufferReading>,
        info: Option<&TcpInfoSample>,
    ) -> Record {
        let (prev_elapsed, prev_bytes) = self.previous.unwrap_or((Duration::ZERO, 0));
        let interval = elapsed.saturating_sub(prev_elapsed);
        let interval_goodput_bps = goodput_bps(bytes.saturating_sub(prev_bytes), interval);
        self.previous = Some((elapsed, bytes));
        Record {
            kind,
            t_s: seconds(elapsed),
            bytes,
            interval_goodput_bps,
            rcvbuf_bytes: buffers.map(|b| b.rcvbuf_bytes),
            sndbuf_bytes: buffers.map(|b| b.sndbuf_bytes),
            window_clamp_bytes: buffers.map(|b| b.window_clamp_bytes),
            rtt_us: info.map(|i| i.rtt_us),
            rttvar_us: info.map(|i| i.rttvar_us),
            min_rtt_us: info.and_then(|i| i.min_rtt_us),
            snd_cwnd_segs: info.map(|i| i.snd_cwnd_segs),
            snd_cwnd_bytes: info.map(TcpInfoSample::snd_cwnd_bytes),
            delivery_rate_bps: info.and_then(|i| i.delivery_rate_bps),
            busy_time_us: info.and_then(|i| i.busy_time_us),
            rwnd_limited_us: info.and_then(|i| i.rwnd_limited_us),
            sndbuf_limited_us: info.and_then(|i| i.sndbuf_limited_us),
            total_retrans_segs: info.map(|i| i.total_retrans_segs),
            bytes_retrans: info.and_then(|i| i.bytes_retrans),
            rcv_rtt_us: info.map(|i| i.rcv_rtt_us),
            rcv_space_bytes: info.map(|i| i.rcv_space_bytes),
            rcv_wnd_bytes: info.and_then(|i| i.rcv_wnd_bytes),
            snd_wnd_bytes: info.and_then(|i| i.snd_wnd_bytes),
            notsent_bytes: info.and_then(|i| i.notsent_bytes),
            ca_state: info.map(|i| i.ca_state),
            unacked_segs: info.map(|i| i.unacked_segs),
            sacked_segs: info.map(|i| i.sacked_segs),
            lost_segs: info.map(|i| i.lost_segs),
        }
    }
}

/// Peak and time-weighted mean of a socket's buffers over a connection,
/// from read-backs at known times: the memory a tuner cost. Reads no clock.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BufferStats {
    last: Option<(Duration, BufferReading)>,
    first_at: Option<Duration>,
    peak_rcvbuf: u64,
    peak_sndbuf: u64,
    /// Byte-seconds of each buffer since the first reading.
    rcv_area: f64,
    snd_area: f64,
}

/// What [`BufferStats`] found, bytes as read back (Linux reports about
/// twice a `setsockopt` request).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BufferSummary {
    /// Largest `SO_RCVBUF` read back.
    pub peak_rcvbuf_bytes: u64,
    /// Largest `SO_SNDBUF` read back.
    pub peak_sndbuf_bytes: u64,
    /// Time-weighted mean `SO_RCVBUF`.
    pub mean_rcvbuf_bytes: u64,
    /// Time-weighted mean `SO_SNDBUF`.
    pub mean_sndbuf_bytes: u64,
}

impl BufferStats {
    /// Takes a reading made `at` after the connection opened; each value
    /// holds until the next reading. Readings out of order count for their
    /// peak only.
    pub fn observe(&mut self, at: Duration, reading: BufferReading) {
        self.peak_rcvbuf = self.peak_rcvbuf.max(reading.rcvbuf_bytes);
        self.peak_sndbuf = self.peak_sndbuf.max(reading.sndbuf_bytes);
        match self.last {
            Some((last_at, last)) if at >= last_at => {
                let dt = (at - last_at).as_secs_f64();
                self.rcv_area += last.rcvbuf_bytes as f64 * dt;
                self.snd_area += last.sndbuf_bytes as f64 * dt;
                self.last = Some((at, reading));
            }
            Some(_) => {}
            None => {
                self.first_at = Some(at);
                self.last = Some((at, reading));
            }
        }
    }

    /// The peaks, and the means up to the last reading (the last value
    /// alone when all readings came at one instant).
    pub fn summary(&self) -> BufferSummary {
        let Some((last_at, last)) = self.last else {
            return BufferSummary::default();
        };
        let span = last_at
            .saturating_sub(self.first_at.unwrap_or(last_at))
            .as_secs_f64();
        let mean = |area: f64, last: u64| {
            if span > 0.0 {
                (area / span).round() as u64
            } else {
                last
            }
        };
        BufferSummary {
            peak_rcvbuf_bytes: self.peak_rcvbuf,
            peak_sndbuf_bytes: self.peak_sndbuf,
            mean_rcvbuf_bytes: mean(self.rcv_area, last.rcvbuf_bytes),
            mean_sndbuf_bytes: mean(self.snd_area, last.sndbuf_bytes),
        }
    }
}

/// `elapsed` in seconds to the microsecond, as the lines' `t_s` holds it
/// (exact in an f64 for 285 years).
pub fn seconds(elapsed: Duration) -> f64 {
    elapsed.as_micros() as f64 / 1e6
}

/// `bytes` over `interval` in bits per second, rounded down and saturating;
/// `None` for an empty interval.
pub fn goodput_bps(bytes: u64, interval: Duration) -> Option<u64> {
    let nanos = interval.as_nanos();
    if nanos == 0 {
        return None;
    }
    let bps = u128::from(bytes) * 8 * 1_000_000_000 / nanos;
    Some(u64::try_from(bps).unwrap_or(u64::MAX))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn json(record: &Record) -> serde_json::Value {
        serde_json::to_value(record).unwrap()
    }

    fn buffers() -> BufferReading {
        BufferReading {
            rcvbuf_bytes: 131_072,
            sndbuf_bytes: 2_626_560,
            window_clamp_bytes: 65_535,
        }
    }

    /// A 6.18 sender's sample: every field filled.
    fn sender_info() -> TcpInfoSample {
        TcpInfoSample {
            rtt_us: 20_000,
            rttvar_us: 1_000,
            min_rtt_us: Some(19_500),
            snd_cwnd_segs: 100,
            snd_mss_bytes: 1_448,
            delivery_rate_bps: Some(50_000_000),
            busy_time_us: Some(100_000),
            rwnd_limited_us: Some(85_000),
            sndbuf_limited_us: Some(0),
            total_retrans_segs: 3,
            bytes_retrans: Some(4_344),
            rcv_rtt_us: 0,
            rcv_space_bytes: 14_480,
            rcv_wnd_bytes: Some(65_483),
            snd_wnd_bytes: Some(131_072),
            notsent_bytes: Some(1_000_000),
            ca_state: 3,
            unacked_segs: 90,
            sacked_segs: 20,
            lost_segs: 5,
            ..TcpInfoSample::default()
        }
    }

    #[test]
    fn telemetry_goodput_is_per_interval_in_virtual_time() {
        let mut rec = Recorder::new();
        let kind = RecordKind::Sample;
        // 1.25 MB in the first 100 ms: 100 Mbit/s.
        let r = rec.record(kind, 100 * MS, 1_250_000, None, None);
        assert_eq!(r.interval_goodput_bps, Some(100_000_000));
        assert!((r.t_s - 0.1).abs() < 1e-12);
        // 2.5 MB more in 100 ms: 200 Mbit/s, not the 150 average.
        let r = rec.record(kind, 200 * MS, 3_750_000, None, None);
        assert_eq!(r.interval_goodput_bps, Some(200_000_000));
        // A stall: 0, not absent.
        let r = rec.record(kind, 300 * MS, 3_750_000, None, None);
        assert_eq!(r.interval_goodput_bps, Some(0));
        // The final record at the same instant has no interval to measure.
        let r = rec.record(RecordKind::Final, 300 * MS, 3_750_000, None, None);
        assert_eq!(r.interval_goodput_bps, None);
        assert!(
            !json(&r)
                .as_object()
                .unwrap()
                .contains_key("interval_goodput_bps")
        );
        // A counter that went backwards is no progress, not a huge number.
        let r = rec.record(kind, 400 * MS, 1, None, None);
        assert_eq!(r.interval_goodput_bps, Some(0));
        assert_eq!(
            goodput_bps(u64::MAX, Duration::from_nanos(1)),
            Some(u64::MAX)
        );
    }

    #[test]
    fn telemetry_time_has_microsecond_precision() {
        let r = Recorder::new().record(
            RecordKind::Sample,
            Duration::from_nanos(1_234_567_890),
            0,
            None,
            None,
        );
        assert_eq!(serde_json::to_string(&r.t_s).unwrap(), "1.234567");
    }

    #[test]
    fn telemetry_sample_carries_buffers_and_tcp_info() {
        let info = sender_info();
        let r = Recorder::new().record(
            RecordKind::Sample,
            100 * MS,
            1_000,
            Some(buffers()),
            Some(&info),
        );
        let v = json(&r);
        assert_eq!(v["kind"], "sample");
        assert_eq!(v["rcvbuf_bytes"], 131_072);
        assert_eq!(v["sndbuf_bytes"], 2_626_560);
        assert_eq!(v["window_clamp_bytes"], 65_535);
        assert_eq!(v["rtt_us"], 20_000);
        assert_eq!(v["min_rtt_us"], 19_500);
        assert_eq!(v["snd_cwnd_segs"], 100);
        assert_eq!(v["snd_cwnd_bytes"], 144_800);
        assert_eq!(v["delivery_rate_bps"], 50_000_000);
        assert_eq!(v["rwnd_limited_us"], 85_000);
        assert_eq!(v["sndbuf_limited_us"], 0);
        assert_eq!(v["total_retrans_segs"], 3);
        assert_eq!(v["bytes_retrans"], 4_344);
        assert_eq!(v["rcv_wnd_bytes"], 65_483);
        assert_eq!(v["snd_wnd_bytes"], 131_072);
        assert_eq!(v["notsent_bytes"], 1_000_000);
        assert_eq!(v["ca_state"], 3);
        assert_eq!(v["unacked_segs"], 90);
        assert_eq!(v["sacked_segs"], 20);
        assert_eq!(v["lost_segs"], 5);
        let back: Record = serde_json::from_value(v).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn telemetry_omits_what_the_kernel_did_not_fill() {
        // A 2.6-era struct: only the base fields, no Options.
        let old = TcpInfoSample {
            rtt_us: 5_000,
            ..TcpInfoSample::default()
        };
        let r = Recorder::new().record(RecordKind::Sample, MS, 10, None, Some(&old));
        let line = serde_json::to_string(&r).unwrap();
        assert!(!line.contains("null"), "{line}");
        let v = json(&r);
        assert_eq!(v["rtt_us"], 5_000);
        for absent in [
            "rcvbuf_bytes",
            "min_rtt_us",
            "delivery_rate_bps",
            "busy_time_us",
            "rwnd_limited_us",
            "bytes_retrans",
            "rcv_wnd_bytes",
            "snd_wnd_bytes",
            "notsent_bytes",
        ] {
            assert!(v.get(absent).is_none(), "{absent} in {line}");
        }
        // No TCP_INFO at all: no TCP fields, still time and bytes.
        let r = Recorder::new().record(RecordKind::Final, MS, 10, Some(buffers()), None);
        let v = json(&r);
        assert_eq!(v["kind"], "final");
        assert_eq!(v["bytes"], 10);
        assert!(v.get("rtt_us").is_none() && v.get("total_retrans_segs").is_none());
        assert_eq!(v["rcvbuf_bytes"], 131_072);
    }

    #[test]
    fn telemetry_header_is_tagged_and_round_trips() {
        let header = Header {
            version: "0.1.0".into(),
            kernel: None,
            argv: vec!["rightsize".into(), "get".into()],
            role: Role::Client,
            direction: Direction::Receive,
            local_addr: "127.0.0.1:40000".into(),
            peer_addr: "127.0.0.1:2121".into(),
            interval_us: Some(100_000),
            settings: BTreeMap::from([("rcvbuf".into(), "4MiB".into())]),
        };
        let line = serde_json::to_string(&header).unwrap();
        assert!(
            line.starts_with(r#"{"kind":"header","version":"0.1.0","argv""#),
            "{line}"
        );
        assert!(
            line.contains(r#""role":"client","direction":"receive""#),
            "{line}"
        );
        assert!(line.contains(r#""settings":{"rcvbuf":"4MiB"}"#), "{line}");
        assert_eq!(serde_json::from_str::<Header>(&line).unwrap(), header);
    }

    #[test]
    fn telemetry_interval_must_be_at_least_a_millisecond() {
        assert_eq!(check_interval(DEFAULT_INTERVAL), Ok(DEFAULT_INTERVAL));
        assert_eq!(check_interval(MS), Ok(MS));
        for bad in [Duration::ZERO, Duration::from_micros(999)] {
            let err = check_interval(bad).unwrap_err();
            assert_eq!(err.interval, bad);
            assert!(err.to_string().contains("minimum 1ms"), "{err}");
        }
    }

    #[test]
    fn buffer_stats_keep_the_peak_and_a_time_weighted_mean() {
        let reading = |rcv: u64, snd: u64| BufferReading {
            rcvbuf_bytes: rcv,
            sndbuf_bytes: snd,
            window_clamp_bytes: 0,
        };
        let mut stats = BufferStats::default();
        assert_eq!(stats.summary(), BufferSummary::default());
        stats.observe(Duration::from_secs(0), reading(100, 10));
        assert_eq!(stats.summary().mean_rcvbuf_bytes, 100);
        // 1 s at 100, 3 s at 500: mean 400; peak 500.
        stats.observe(Duration::from_secs(1), reading(500, 10));
        stats.observe(Duration::from_secs(4), reading(200, 40));
        // A reading from the past counts for its peak only.
        stats.observe(Duration::from_secs(2), reading(900, 10));
        let s = stats.summary();
        assert_eq!(s.peak_rcvbuf_bytes, 900);
        assert_eq!(s.peak_sndbuf_bytes, 40);
        assert_eq!(s.mean_rcvbuf_bytes, 400);
        assert_eq!(s.mean_sndbuf_bytes, 10);
    }
}
