//! What `get` and `put` print: the progress bar, iperf3-style interval
//! lines, warnings, the protocol trace, and the summary as text or JSON.
//! Formatting only; the numbers come from the client's `Report` and
//! `Progress`.

use std::fmt::Write as _;
use std::io::{IsTerminal, Write};
use std::time::Duration;

use rightsize_ftp::client::{Direction, Observer, Progress, Report, TlsReport};
use rightsize_sys::socket::{Applied, BufferApplied};
use rightsize_tune::tcpinfo::TcpInfoSample;
use rightsize_tune::units::{Bytes, human_duration, human_rate};
use serde_json::{Value, json};

/// The streams of a transfer over several (`-P`), and `-P auto`'s
/// trials: lines for its summary.
pub fn streams_text(out: &mut String, report: &Report) {
    if report.streams > 1 {
        let _ = writeln!(
            out,
            "  over {} parallel streams (MODE E); buffers summed over the streams",
            report.streams
        );
    }
    if !report.stream_trials.is_empty() {
        let trials: Vec<String> = report
            .stream_trials
            .iter()
            .map(|t| format!("{} streams {}", t.streams, human_rate(t.goodput_bps)))
            .collect();
        let _ = writeln!(out, "  -P auto tried {}", trials.join(", "));
    }
}

/// How often the progress bar is redrawn.
const BAR_REDRAW: Duration = Duration::from_millis(200);

/// The interval of `--json`'s `intervals` without `-i` (iperf3's).
const JSON_INTERVAL: Duration = Duration::from_secs(1);

/// The terminal side of a transfer: an [`Observer`] that prints.
#[derive(Debug)]
pub struct Console {
    verbose: bool,
    /// Lines for people go to stderr (stdout carries data or JSON).
    human_to_stderr: bool,
    bar: bool,
    bar_drawn_at: Option<Duration>,
    interval: Option<Duration>,
    direction: Direction,
    next_line_at: Duration,
    last_at: Duration,
    last_bytes: u64,
    last_retrans: u32,
    header_printed: bool,
    /// Whether interval lines are printed (`-i`); with `--json` they are
    /// recorded either way.
    print_intervals: bool,
    /// `--json`'s `intervals`.
    intervals: Vec<Value>,
}

impl Console {
    /// `interval`: `-i`; `verbose`: `-v`; human text goes to standard error
    /// when the data (`data_on_stdout`) or the JSON summary (`json`) takes
    /// standard output.
    pub fn new(
        interval: Option<Duration>,
        verbose: bool,
        json: bool,
        direction: Direction,
        data_on_stdout: bool,
    ) -> Console {
        Console {
            verbose,
            human_to_stderr: data_on_stdout || json,
            bar: interval.is_none() && std::io::stderr().is_terminal(),
            bar_drawn_at: None,
            interval: interval.or(json.then_some(JSON_INTERVAL)),
            direction,
            next_line_at: interval
                .or(json.then_some(JSON_INTERVAL))
                .unwrap_or(Duration::MAX),
            last_at: Duration::ZERO,
            last_bytes: 0,
            last_retrans: 0,
            header_printed: false,
            print_intervals: interval.is_some(),
            intervals: Vec::new(),
        }
    }

    /// The intervals recorded, for `--json`: `start_s`, `end_s`, `bytes`,
    /// `bits_per_second`, `retransmits` and `rtt_us` (each `null` when not
    /// known).
    pub fn intervals(&self) -> &[Value] {
        &self.intervals
    }

    /// With `quiet`, no progress bar (warnings still print).
    pub fn quiet(mut self, quiet: bool) -> Console {
        if quiet {
            self.bar = false;
        }
        self
    }

    /// Prints a line for people where [`Console`] says they go.
    pub fn say(&mut self, text: &str) {
        self.clear_bar();
        // A closed pipe (`| head`) must not stop the transfer.
        if self.human_to_stderr {
            let _ = std::io::stderr().write_all(text.as_bytes());
        } else {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
        }
    }

    /// Erases the progress bar, if drawn.
    pub fn clear_bar(&mut self) {
        if self.bar_drawn_at.take().is_some() {
            eprint!("\r\x1b[K");
        }
    }

    /// The interval line for the time since the last one, at the end.
    pub fn final_interval(&mut self, report: &Report) {
        if self.interval.is_none() || report.elapsed <= self.last_at {
            return;
        }
        let line = self.interval_line(report.elapsed, report.bytes, report.tcp_info.as_ref());
        if self.print_intervals {
            self.say(&line);
        }
    }

    fn interval_line(&mut self, now: Duration, bytes: u64, info: Option<&TcpInfoSample>) -> String {
        let mut out = String::new();
        if !self.header_printed {
            self.header_printed = true;
            out.push_str("[ Interval       ]      Transfer          Bitrate  Retr  RTT\n");
        }
        let span = now.saturating_sub(self.last_at);
        let moved = bytes.saturating_sub(self.last_bytes);
        let rate = if span.is_zero() {
            0.0
        } else {
            moved as f64 * 8.0 / span.as_secs_f64()
        };
        let retrans = info.map(|i| i.total_retrans_segs);
        let retr = retrans.map_or_else(
            || "-".to_owned(),
            |r| r.saturating_sub(self.last_retrans).to_string(),
        );
        let rtt = info.map_or_else(|| "-".to_owned(), |i| rtt_text(i, self.direction));
        self.intervals.push(json!({
            "start_s": self.last_at.as_secs_f64(),
            "end_s": now.as_secs_f64(),
            "bytes": moved,
            "bits_per_second": rate,
            "retransmits": retrans.map(|r| r.saturating_sub(self.last_retrans)),
            "rtt_us": info.map(|i| match self.direction {
                Direction::Get if i.rcv_rtt_us > 0 => i.rcv_rtt_us,
                _ => i.rtt_us,
            }),
        }));
        let _ = writeln!(
            out,
            "[{:6.2}-{:<6} s]  {:>12}  {:>15}  {retr:>4}  {rtt}",
            self.last_at.as_secs_f64(),
            format!("{:.2}", now.as_secs_f64()),
            iperf_bytes(moved),
            iperf_rate(rate),
        );
        self.last_at = now;
        self.last_bytes = bytes;
        if let Some(r) = retrans {
            self.last_retrans = r;
        }
        out
    }

    fn draw_bar(&mut self, progress: &Progress<'_>) {
        if self
            .bar_drawn_at
            .is_some_and(|at| progress.elapsed < at + BAR_REDRAW)
        {
            return;
        }
        let seconds = progress.elapsed.as_secs_f64();
        let rate = if seconds > 0.0 {
            progress.bytes as f64 * 8.0 / seconds
        } else {
            0.0
        };
        let done = Bytes(progress.bytes).human_iec();
        let line = match progress.expected_bytes.filter(|&t| t > 0) {
            Some(total) => format!(
                "{done} / {}  {:3.0}%  {}",
                Bytes(total).human_iec(),
                progress.bytes as f64 * 100.0 / total as f64,
                human_rate(rate)
            ),
            None => format!("{done}  {}", human_rate(rate)),
        };
        eprint!("\r\x1b[K{line}");
        self.bar_drawn_at = Some(progress.elapsed);
    }
}

impl Observer for Console {
    fn progress(&mut self, progress: &Progress<'_>) {
        if self.interval.is_some() {
            if progress.elapsed >= self.next_line_at {
                let info = progress.tcp_info().ok();
                let line = self.interval_line(progress.elapsed, progress.bytes, info.as_ref());
                if self.print_intervals {
                    self.say(&line);
                }
                let step = self.interval.unwrap_or(Duration::MAX);
                while self.next_line_at <= progress.elapsed {
                    self.next_line_at = self.next_line_at.saturating_add(step);
                }
            }
        } else if self.bar {
            self.draw_bar(progress);
        }
    }

    fn protocol(&mut self, line: &str) {
        if self.verbose {
            self.clear_bar();
            eprintln!("{line}");
        }
    }

    fn warning(&mut self, message: &str) {
        self.clear_bar();
        eprintln!("rightsize: warning: {message}");
    }
}

/// The RTT the data socket knows: a sender measures `rtt` from its ACKs;
/// a pure receiver has only `rcv_rtt`.
fn rtt_text(info: &TcpInfoSample, direction: Direction) -> String {
    let ms = |us: u32| format!("{:.2} ms", f64::from(us) / 1000.0);
    match direction {
        Direction::Get if info.rcv_rtt_us > 0 => format!("rcv_rtt {}", ms(info.rcv_rtt_us)),
        _ => format!("rtt {}", ms(info.rtt_us)),
    }
}

/// iperf3's transfer column: binary prefixes, three significant digits.
pub(crate) fn iperf_bytes(bytes: u64) -> String {
    scaled(
        bytes as f64,
        1024.0,
        &["Bytes", "KBytes", "MBytes", "GBytes", "TBytes"],
    )
}

/// iperf3's bitrate column: decimal prefixes, three significant digits.
pub(crate) fn iperf_rate(bps: f64) -> String {
    scaled(
        bps,
        1000.0,
        &[
            "bits/sec",
            "Kbits/sec",
            "Mbits/sec",
            "Gbits/sec",
            "Tbits/sec",
        ],
    )
}

fn scaled(mut value: f64, step: f64, units: &[&str]) -> String {
    let mut index = 0;
    while value >= step && index + 1 < units.len() {
        value /= step;
        index += 1;
    }
    let unit = units.get(index).copied().unwrap_or_default();
    if value >= 100.0 || index == 0 {
        format!("{value:.0} {unit}")
    } else if value >= 10.0 {
        format!("{value:.1} {unit}")
    } else {
        format!("{value:.2} {unit}")
    }
}

/// The text summary.
pub fn summary_text(report: &Report) -> String {
    let mut out = String::new();
    let (verb, arrow) = match report.direction {
        Direction::Get => ("get", "->"),
        Direction::Put => ("put", "<-"),
    };
    let local = report
        .local_path
        .as_ref()
        .map_or_else(|| "standard output".to_owned(), |p| p.display().to_string());
    let _ = writeln!(out, "{verb} {} {arrow} {local}", report.url);
    let _ = writeln!(
        out,
        "  {} bytes in {} = {} ({} to {})",
        Bytes(report.bytes).grouped(),
        human_duration(report.elapsed),
        human_rate(report.goodput_bps()),
        report.data_mode.verb(),
        report.data_peer
    );
    streams_text(&mut out, report);
    let _ = writeln!(out, "  {}", tls_text(report.tls.as_ref()));
    if report.resumed_bytes > 0 {
        let _ = writeln!(
            out,
            "  resumed after {} bytes already there (REST)",
            Bytes(report.resumed_bytes).grouped()
        );
    }
    let _ = writeln!(
        out,
        "  client buffers: {}",
        buffers_text(&report.buffers_applied)
    );
    if let Some(tuning) = &report.tuning {
        let tuner = tuning.tuner.as_ref().map_or_else(String::new, |t| {
            format!(
                "tune {} (ended {}, {} decisions, {}); ",
                t.name,
                t.state,
                t.decisions,
                t.case()
            )
        });
        let (peak, mean, name) = match report.direction {
            Direction::Get => (
                tuning.buffers.peak_rcvbuf_bytes,
                tuning.buffers.mean_rcvbuf_bytes,
                "SO_RCVBUF",
            ),
            Direction::Put => (
                tuning.buffers.peak_sndbuf_bytes,
                tuning.buffers.mean_sndbuf_bytes,
                "SO_SNDBUF",
            ),
        };
        let _ = writeln!(
            out,
            "  client memory: {tuner}{name} peak {}, mean {}",
            Bytes(peak).grouped(),
            Bytes(mean).grouped()
        );
    }
    if let Some(server) = &report.server_buffers
        && let (Some(rcv), Some(snd)) = (server.peak_rcvbuf_bytes, server.peak_sndbuf_bytes)
    {
        let tune = server
            .tune
            .as_ref()
            .map_or_else(String::new, |t| format!("tune {t}; "));
        let _ = writeln!(
            out,
            "  server memory: {tune}SO_RCVBUF peak {}, SO_SNDBUF peak {}",
            Bytes(rcv).grouped(),
            Bytes(snd).grouped()
        );
    }
    if let Some(sbuf) = &report.sbuf {
        let _ = writeln!(
            out,
            "  server buffer: SBUF {} {} ({})",
            sbuf.requested_bytes,
            if sbuf.accepted {
                "accepted"
            } else {
                "not applied"
            },
            sbuf.reply
        );
    }
    if let Some(info) = &report.tcp_info {
        let _ = writeln!(
            out,
            "  tcp: {} retransmits, {}{}",
            info.total_retrans_segs,
            rtt_text(info, report.direction),
            info.min_rtt_us
                .map(|us| format!(", min_rtt {:.2} ms", f64::from(us) / 1000.0))
                .unwrap_or_default()
        );
    }
    if let Some(c) = &report.checksum {
        let line = match (&c.algorithm, &c.local, c.verified) {
            (Some(alg), Some(local), true) => format!("{alg} verified ({local})"),
            _ => c.note.clone().unwrap_or_else(|| "not verified".to_owned()),
        };
        let _ = writeln!(out, "  checksum: {line}");
    }
    out
}

fn buffers_text(applied: &Applied) -> String {
    let buffer = |name: &str, b: &Option<BufferApplied>| {
        b.as_ref().map(|b| {
            let clamp = b
                .clamped_by
                .map(|c| format!(", capped by {c}"))
                .unwrap_or_default();
            format!(
                "{name} {} requested, {} applied{clamp}",
                Bytes(b.requested_bytes).grouped(),
                Bytes(b.applied_bytes).grouped()
            )
        })
    };
    let parts: Vec<String> = [
        buffer("SO_RCVBUF", &applied.rcvbuf),
        buffer("SO_SNDBUF", &applied.sndbuf),
        applied.window_clamp.map(|c| {
            format!(
                "TCP_WINDOW_CLAMP {} requested, {} applied",
                c.requested_bytes, c.applied_bytes
            )
        }),
        applied
            .congestion
            .as_ref()
            .map(|c| format!("congestion {}", c.applied)),
    ]
    .into_iter()
    .flatten()
    .collect();
    if parts.is_empty() {
        "kernel defaults (autotuning)".to_owned()
    } else {
        parts.join("; ")
    }
}

/// The summary's TLS line.
fn tls_text(tls: Option<&TlsReport>) -> String {
    match tls {
        None => "TLS: none (control and data in clear)".to_owned(),
        Some(t) => format!(
            "TLS: {}control, {} data{}",
            if t.implicit { "implicit FTPS, " } else { "" },
            if t.data { "private" } else { "clear" },
            if t.resumed { " (session resumed)" } else { "" }
        ),
    }
}

/// The `tls` object of `--json`: all false for a transfer in clear.
fn tls_json(tls: Option<&TlsReport>) -> Value {
    let t = tls.copied().unwrap_or(TlsReport {
        control: false,
        data: false,
        resumed: false,
        implicit: false,
    });
    json!(t)
}

/// The `--json` summary (docs/telemetry.md, "get --json and put --json").
/// `--json` when the transfer failed: the same header fields as the
/// summary, and an `error` object: `kind` (one word, see
/// `ClientError::kind`) and `message` (what is printed on standard error).
fn error_json(
    error: &rightsize_ftp::client::ClientError,
    url: &rightsize_ftp_proto::url::FtpUrl,
    direction: Direction,
) -> Value {
    let message = rightsize_ftp::client::chain(error);
    json!({
        "rightsize_version": env!("CARGO_PKG_VERSION"),
        "argv": argv_without_passwords(),
        "url": url.to_string(),
        "direction": direction,
        "error": {
            "kind": error.kind(),
            "message": message,
        },
    })
}

/// Prints [`error_json`] on standard output (a closed pipe is not an
/// error: the failure is said on standard error anyway).
pub fn print_error_json(
    error: &rightsize_ftp::client::ClientError,
    url: &rightsize_ftp_proto::url::FtpUrl,
    direction: Direction,
) -> anyhow::Result<()> {
    let json = serde_json::to_string_pretty(&error_json(error, url, direction))?;
    let _ = writeln!(std::io::stdout().lock(), "{json}");
    Ok(())
}

pub fn summary_json(report: &Report) -> Value {
    let info = report.tcp_info.as_ref();
    json!({
        "rightsize_version": env!("CARGO_PKG_VERSION"),
        "argv": argv_without_passwords(),
        "error": null,
        "url": report.url,
        "direction": report.direction,
        "local_path": report.local_path,
        "bytes": report.bytes,
        "resumed_bytes": report.resumed_bytes,
        "streams": report.streams,
        "stream_trials": report.stream_trials,
        "expected_bytes": report.expected_bytes,
        "seconds": report.elapsed.as_secs_f64(),
        "goodput_bps": report.goodput_bps(),
        "server": report.server,
        "data_mode": report.data_mode,
        "data_peer": report.data_peer,
        "client_buffers": {
            "requested": report.buffers_requested,
            "applied": report.buffers_applied,
        },
        "server_buffers": report.server_buffers,
        "tuning": report.tuning,
        "sbuf": report.sbuf,
        "write_size_bytes": report.write_size,
        "retransmits": info.map(|i| i.total_retrans_segs),
        "rtt_us": info.map(|i| i.rtt_us),
        "min_rtt_us": info.and_then(|i| i.min_rtt_us),
        "rcv_rtt_us": info.map(|i| i.rcv_rtt_us),
        "checksum": report.checksum,
        "tls": tls_json(report.tls.as_ref()),
        "tcp_info": info,
    })
}

/// The command line, with the password of any URL replaced by `****`.
pub fn argv_without_passwords() -> Vec<String> {
    std::env::args()
        .map(|arg| match rightsize_ftp_proto::url::FtpUrl::parse(&arg) {
            Ok(url) if !url.password().is_empty() && arg.contains('@') => url.to_string(),
            _ => arg,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iperf_columns() {
        assert_eq!(iperf_bytes(123_731_968), "118 MBytes");
        assert_eq!(iperf_bytes(1_181_116_006), "1.10 GBytes");
        assert_eq!(iperf_bytes(512), "512 Bytes");
        assert_eq!(iperf_rate(990_000_000.0), "990 Mbits/sec");
        assert_eq!(iperf_rate(12_500_000_000.0), "12.5 Gbits/sec");
    }
}
