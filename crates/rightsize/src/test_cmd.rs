//! `rightsize test`: a memory-to-memory throughput test against a
//! rightsize server's benchmark source and sink, with iperf3-style interval
//! lines and a summary (text or `--json`). The transfer is
//! `rightsize_ftp::client::bench`; this module prints it and keeps the
//! sender's samples that `doctor` reads.
//!
//! Direction: by default the client sends (`STOR /.rightsize/null/...`),
//! as iperf3's client does; `--reverse` makes the server send
//! (`RETR /.rightsize/zero/SIZE`), as `iperf3 -R`.

use std::fmt::Write as _;
use std::io::Write as _;
use std::os::fd::AsFd;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;
use rightsize_ftp::client::{
    self, BenchDirection, BenchLimit, BenchPlan, BenchReport, ClientError, Observer, Options,
    Progress,
};
use rightsize_ftp_proto::url::FtpUrl;
use rightsize_sys::signals::StopSignals;
use rightsize_tune::TunerSpec;
pub use rightsize_tune::diagnose::doctor::SenderSample;
use rightsize_tune::diagnose::tcp::TcpSummary;
use rightsize_tune::units::{Bytes, human_duration, human_rate};
use serde::Serialize;
use serde_json::{Value, json};

use crate::ping::DEFAULT_REPLY_TIMEOUT;
use crate::target::parse_target;
use crate::transfer::{Limit, TlsArgs, parse_interval};

/// `--time` of `test` when neither `--time` nor `--bytes` is given.
pub const DEFAULT_TEST_TIME: Duration = Duration::from_secs(10);
/// How often the sender's `TCP_INFO` is sampled for the summary and
/// `doctor`, whatever `-i` says.
const SAMPLE_EVERY: Duration = Duration::from_millis(100);

pub const TEST_ABOUT: &str = "\
A memory-to-memory throughput test against `rightsize serve` through its benchmark source and \
sink (the analogue of perfSONAR's throughput test), over one data connection (or -P N streams in \
MODE E) sized by a tuner on both ends: interval lines like iperf3 (goodput, retransmits, cwnd, RTT, the buffers of both \
ends) and a summary.

  rightsize test 127.0.0.1:2121                       # the client sends for 10 s (iperf3's default)
  rightsize test right:2121 --reverse -i 1            # the server sends (iperf3 -R)
  rightsize test right:2121 --bytes 1G --tune kernel  # both ends leave the buffers to Linux
  rightsize test right:2121 --time 5s --json
  rightsize test right:2121 -P 4 -R                   # four streams (iperf3 -P 4 -R)
  rightsize test right:2121 -P auto -t 30s            # as many streams as pay, chosen while it runs

By default the client sends zeros to /.rightsize/null/ (STOR); with --reverse it reads \
/.rightsize/zero/SIZE (RETR). --tune sets the client's tuner and, with a rightsize server, the \
server's (SITE RIGHTSIZE TUNE). A test limited by --time ends cleanly when the time is up. The \
server's side of the interval lines (its RTT and retransmits) comes from its RIGHTSIZE INFO \
notices: n/a from a server that does not send them; its buffers come at the end, in its 226. \
Against an FTP server that is not rightsize there is no benchmark source or sink: the test says so \
and fails. Exit codes: 0 done, 1 failed or interrupted (Ctrl-C prints what was measured), 2 bad \
arguments.";

/// `rightsize test`.
#[derive(Debug, Args)]
pub struct TestArgs {
    /// The server: HOST, HOST:PORT, [IPv6]:PORT (port 21 by default) or
    /// ftp://[user[:password]@]host[:port]/.
    #[arg(value_name = "HOST[:PORT]", value_parser = parse_target)]
    pub server: FtpUrl,

    #[command(flatten)]
    pub run: RunArgs,

    /// The tuner of both ends: auto, kernel, stock, static:SIZE, drs, sobas, freebsd (the
    /// server's through SITE RIGHTSIZE TUNE, if it offers it).
    #[arg(long, value_name = "NAME", default_value = "auto")]
    pub tune: TunerSpec,

    /// Print a line every interval: seconds (1, 0.5) or a duration (500ms).
    #[arg(short = 'i', long, value_name = "SECONDS", value_parser = parse_interval)]
    pub interval: Option<Duration>,

    /// Move the bytes over N parallel streams (GridFTP's MODE E, as iperf3 -P N), 2 to 64; each
    /// end's tuner sizes them together (auto: as one flow). Interval lines count the bytes of all
    /// the streams and show the first one's TCP_INFO. -P auto starts with 8 and doubles them
    /// while doubling adds a quarter to the goodput, up to 16, as get -P auto and put -P auto do
    /// (a send takes back a doubling that made it slower).
    #[arg(short = 'P', long = "parallel", value_name = "N", value_parser = parse_test_streams)]
    pub parallel: Option<u32>,

    /// Print one JSON object at the end instead of text (schema in docs/telemetry.md).
    #[arg(long)]
    pub json: bool,
}

/// `test -P`: a number of streams, or `auto` (`client::AUTO_STREAMS`).
fn parse_test_streams(input: &str) -> Result<u32, String> {
    if input.trim().eq_ignore_ascii_case("auto") {
        return Ok(client::AUTO_STREAMS);
    }
    match input.trim().parse::<u32>() {
        Ok(n) if (1..=64).contains(&n) => Ok(n),
        _ => Err(format!(
            "streams \"{input}\" must be a number from 1 to 64, or auto"
        )),
    }
}

/// The flags `test` and `doctor` share.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// How long each test runs: seconds (10) or a duration (10s, 500ms).
    #[arg(short = 't', long, value_name = "DURATION", value_parser = parse_interval, conflicts_with = "bytes")]
    pub time: Option<Duration>,

    /// Move this many bytes instead of running for a time: 1G, 100MB, 1048576.
    #[arg(short = 'n', long, value_name = "SIZE", value_parser = Bytes::parse_positive)]
    pub bytes: Option<Bytes>,

    /// The server sends (RETR from its zero source) instead of the client (STOR to its sink).
    #[arg(short = 'R', long)]
    pub reverse: bool,

    /// Print the FTP commands and replies on standard error.
    #[arg(short, long)]
    pub verbose: bool,

    /// Limit for each connect.
    #[arg(long, value_name = "DURATION", default_value_t = Limit(client::DEFAULT_CONNECT_TIMEOUT))]
    pub connect_timeout: Limit,

    /// Limit for each reply, and for the data connection to move nothing.
    #[arg(long, value_name = "DURATION", default_value_t = Limit(DEFAULT_REPLY_TIMEOUT))]
    pub timeout: Limit,

    #[command(flatten)]
    pub tls: TlsArgs,
}

impl RunArgs {
    pub fn limit(&self, default_time: Duration) -> BenchLimit {
        match (self.bytes, self.time) {
            (Some(b), _) => BenchLimit::Bytes(b.get()),
            (None, Some(t)) => BenchLimit::Time(t),
            (None, None) => BenchLimit::Time(default_time),
        }
    }
}

/// One interval line, as printed.
#[derive(Debug, Clone, Serialize)]
pub struct IntervalLine {
    pub start_s: f64,
    pub end_s: f64,
    pub bytes: u64,
    pub goodput_bps: f64,
    pub retrans_segs: Option<u64>,
    pub cwnd_bytes: Option<u64>,
    pub rtt_us: Option<u64>,
    pub client_rcvbuf_bytes: Option<u64>,
    pub client_sndbuf_bytes: Option<u64>,
    pub server_rtt_us: Option<u64>,
    pub server_retrans_segs: Option<u64>,
}

/// The observer of a test: interval lines, the sender's samples, the
/// protocol trace and warnings.
#[derive(Debug)]
pub struct TestWatch {
    direction: BenchDirection,
    interval: Option<Duration>,
    print: bool,
    verbose: bool,
    next_line_at: Duration,
    last_line: (Duration, u64, Option<u64>),
    next_sample_at: Duration,
    pub lines: Vec<IntervalLine>,
    pub samples: Vec<SenderSample>,
    header_printed: bool,
}

impl TestWatch {
    pub fn new(
        direction: BenchDirection,
        interval: Option<Duration>,
        print: bool,
        verbose: bool,
    ) -> TestWatch {
        TestWatch {
            direction,
            interval,
            print,
            verbose,
            next_line_at: interval.unwrap_or(Duration::MAX),
            last_line: (Duration::ZERO, 0, None),
            next_sample_at: Duration::ZERO,
            lines: Vec::new(),
            samples: Vec::new(),
            header_printed: false,
        }
    }

    fn line(&mut self, p: &Progress<'_>, info: Option<&TcpSummary>) {
        let (start, start_bytes, start_retrans) = self.last_line;
        let span = p.elapsed.saturating_sub(start).as_secs_f64();
        let moved = p.bytes.saturating_sub(start_bytes);
        let buffers = rightsize_sys::socket::read_buffers(p.socket().as_fd()).ok();
        let server = p.server_info.as_ref().map(TcpSummary::from_peer_info);
        // The sender's retransmits: ours when we send, the server's notice otherwise.
        let sender_retrans = match self.direction {
            BenchDirection::Send => info.and_then(|i| i.total_retrans_segs),
            BenchDirection::Receive => server.and_then(|s| s.total_retrans_segs),
        };
        let line = IntervalLine {
            start_s: start.as_secs_f64(),
            end_s: p.elapsed.as_secs_f64(),
            bytes: moved,
            goodput_bps: if span > 0.0 {
                moved as f64 * 8.0 / span
            } else {
                0.0
            },
            retrans_segs: sender_retrans.map(|r| r.saturating_sub(start_retrans.unwrap_or(0))),
            cwnd_bytes: match self.direction {
                BenchDirection::Send => {
                    info.and_then(|i| Some(i.snd_cwnd_segs? * i.snd_mss_bytes?))
                }
                BenchDirection::Receive => None,
            },
            rtt_us: match self.direction {
                BenchDirection::Send => info.and_then(|i| i.rtt_us),
                BenchDirection::Receive => server.and_then(|s| s.rtt_us),
            },
            client_rcvbuf_bytes: buffers.map(|b| b.rcvbuf_bytes),
            client_sndbuf_bytes: buffers.map(|b| b.sndbuf_bytes),
            server_rtt_us: server.and_then(|s| s.rtt_us),
            server_retrans_segs: server.and_then(|s| s.total_retrans_segs),
        };
        self.last_line = (p.elapsed, p.bytes, sender_retrans.or(start_retrans));
        if self.print {
            let mut out = String::new();
            if !self.header_printed {
                self.header_printed = true;
                out.push_str(INTERVAL_HEADER);
            }
            out.push_str(&interval_text(&line));
            print!("{out}");
        }
        self.lines.push(line);
    }
}

fn opt<T>(v: Option<T>, f: impl Fn(T) -> String) -> String {
    v.map_or_else(|| "n/a".to_owned(), f)
}

fn ms_us(us: u64) -> String {
    format!("{:.1} ms", us as f64 / 1000.0)
}

/// The interval lines' header: get's and put's columns (iperf3's), then
/// test's own.
const INTERVAL_HEADER: &str = "[ Interval       ]      Transfer          Bitrate  Retr          Cwnd        RTT      Buffers here (rcv/snd)  Server (rtt, retr)\n";

/// One interval, in get's and put's units (iperf3's: `MBytes`,
/// `Gbits/sec`), under [`INTERVAL_HEADER`].
fn interval_text(l: &IntervalLine) -> String {
    use crate::transfer_output::{iperf_bytes, iperf_rate};
    format!(
        "[{:6.2}-{:<6} s]  {:>12}  {:>15}  {:>4}  {:>12}  {:>9}  {:>26}  {}\n",
        l.start_s,
        format!("{:.2}", l.end_s),
        iperf_bytes(l.bytes),
        iperf_rate(l.goodput_bps),
        opt(l.retrans_segs, |r| r.to_string()),
        opt(l.cwnd_bytes, iperf_bytes),
        opt(l.rtt_us, ms_us),
        match (l.client_rcvbuf_bytes, l.client_sndbuf_bytes) {
            (Some(r), Some(s)) => format!("{}/{}", iperf_bytes(r), iperf_bytes(s)),
            _ => "n/a".to_owned(),
        },
        match (l.server_rtt_us, l.server_retrans_segs) {
            (None, None) => "n/a".to_owned(),
            (rtt, retr) => format!("{}, {}", opt(rtt, ms_us), opt(retr, |r| r.to_string())),
        }
    )
}

impl Observer for TestWatch {
    fn progress(&mut self, p: &Progress<'_>) {
        let sample_due = p.elapsed >= self.next_sample_at;
        let line_due = p.elapsed >= self.next_line_at;
        if !sample_due && !line_due {
            return;
        }
        let raw = p.tcp_info().ok();
        let info = raw.as_ref().map(TcpSummary::from_tcp_info);
        if sample_due {
            let delivered_bytes = match self.direction {
                BenchDirection::Send => raw
                    .as_ref()
                    .and_then(|i| i.bytes_acked)
                    .map_or(p.bytes, |acked| acked.min(p.bytes)),
                BenchDirection::Receive => p.bytes,
            };
            let sender = match self.direction {
                BenchDirection::Send => info,
                BenchDirection::Receive => p.server_info.as_ref().map(TcpSummary::from_peer_info),
            };
            self.samples.push(SenderSample {
                t_s: p.elapsed.as_secs_f64(),
                bytes: p.bytes,
                delivered_bytes,
                rtt_us: sender.and_then(|s| s.rtt_us),
                delivery_rate_bps: sender.and_then(|s| s.delivery_rate_bps),
                retrans_segs: sender.and_then(|s| s.total_retrans_segs),
            });
            while self.next_sample_at <= p.elapsed {
                self.next_sample_at += SAMPLE_EVERY;
            }
        }
        if line_due {
            self.line(p, info.as_ref());
            let step = self.interval.unwrap_or(Duration::MAX);
            while self.next_line_at <= p.elapsed {
                self.next_line_at = self.next_line_at.saturating_add(step);
            }
        }
    }

    fn protocol(&mut self, line: &str) {
        if self.verbose {
            eprintln!("{line}");
        }
    }

    fn warning(&mut self, message: &str) {
        eprintln!("rightsize: warning: {message}");
    }
}

/// A finished test with what its observer kept.
#[derive(Debug)]
pub struct TestRun {
    pub bench: BenchReport,
    pub samples: Vec<SenderSample>,
    pub lines: Vec<IntervalLine>,
    pub direction: BenchDirection,
    pub tune: TunerSpec,
}

impl TestRun {
    /// The sending end's final `TCP_INFO` summary.
    pub fn sender_tcp(&self) -> Option<TcpSummary> {
        match self.direction {
            BenchDirection::Send => self
                .bench
                .report
                .tcp_info
                .as_ref()
                .map(TcpSummary::from_tcp_info),
            BenchDirection::Receive => self.bench.report.server_tcp,
        }
    }

    /// The receiving end's final `TCP_INFO` summary.
    pub fn receiver_tcp(&self) -> Option<TcpSummary> {
        match self.direction {
            BenchDirection::Send => self.bench.report.server_tcp,
            BenchDirection::Receive => self
                .bench
                .report
                .tcp_info
                .as_ref()
                .map(TcpSummary::from_tcp_info),
        }
    }
}

/// Runs one test against `server` with `tune` on both ends.
pub fn run_one(
    server: &FtpUrl,
    run: &RunArgs,
    (tune, streams): (TunerSpec, u32),
    limit: BenchLimit,
    watch: TestWatch,
    stop: &(dyn Fn() -> bool + Sync),
    server_settings: bool,
) -> anyhow::Result<TestRun> {
    let direction = watch.direction;
    let mut watch = watch;
    let options = Options {
        connect_timeout: run.connect_timeout.0,
        idle_timeout: run.timeout.0,
        tune: Some(tune),
        tls: run.tls.options(),
        ..Options::default()
    };
    let plan = BenchPlan {
        direction,
        limit,
        server_tune: Some(tune),
        server_settings,
        streams,
    };
    let name = format!("{}:{}", server.host(), server.port());
    let bench = match client::bench(server, &plan, &options, &mut watch, stop) {
        Ok(bench) => bench,
        Err(e @ ClientError::RemoteFile { .. }) => {
            return Err(anyhow::Error::new(e).context(format!(
                "test against {name}: the server has no benchmark source or sink \
                 (/.rightsize/zero, /.rightsize/null); is it `rightsize serve`?"
            )));
        }
        Err(e) => return Err(anyhow::Error::new(e).context(format!("test against {name}"))),
    };
    Ok(TestRun {
        bench,
        samples: watch.samples,
        lines: watch.lines,
        direction,
        tune,
    })
}

pub fn run(args: &TestArgs) -> anyhow::Result<ExitCode> {
    if args.run.tls.insecure {
        eprintln!("rightsize: warning: {}", crate::transfer::INSECURE_WARNING);
    }
    let signals = StopSignals::install().context("catch Ctrl-C")?;
    let direction = if args.run.reverse {
        BenchDirection::Receive
    } else {
        BenchDirection::Send
    };
    let watch = TestWatch::new(direction, args.interval, !args.json, args.run.verbose);
    let limit = args.run.limit(DEFAULT_TEST_TIME);
    let test = run_one(
        &args.server,
        &args.run,
        (args.tune, args.parallel.unwrap_or(1)),
        limit,
        watch,
        &|| signals.caught().is_some(),
        false,
    )?;
    if args.json {
        let json = serde_json::to_string_pretty(&test_json(&test))?;
        let mut out = std::io::stdout().lock();
        writeln!(out, "{json}").context("write the JSON to standard output")?;
    } else {
        print!("{}", test_text(&test));
    }
    if test.bench.stopped.as_deref() == Some("interrupted") {
        eprintln!(
            "rightsize: test interrupted after {}",
            human_duration(test.bench.report.elapsed)
        );
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

fn direction_text(direction: BenchDirection) -> &'static str {
    match direction {
        BenchDirection::Send => "client -> server (STOR to /.rightsize/null/)",
        BenchDirection::Receive => "server -> client (RETR from /.rightsize/zero/)",
    }
}

/// The summary for people.
pub fn test_text(test: &TestRun) -> String {
    let r = &test.bench.report;
    let mut out = String::new();
    let _ = writeln!(out, "test {} {}", r.server, direction_text(test.direction));
    let _ = writeln!(
        out,
        "  {} bytes in {} = {}{}",
        Bytes(r.bytes).grouped(),
        human_duration(r.elapsed),
        human_rate(r.goodput_bps()),
        match test.bench.stopped.as_deref() {
            Some("time") => " (stopped at --time, cleanly)".to_owned(),
            Some(why) => format!(" (stopped: {why})"),
            None => String::new(),
        }
    );
    crate::transfer_output::streams_text(&mut out, r);
    let server_tune = test
        .bench
        .server_tune
        .clone()
        .unwrap_or_else(|| "its own (not chosen)".to_owned());
    let _ = writeln!(out, "  tuner: client {}, server {server_tune}", test.tune);
    let sender = test.sender_tcp();
    if let Some(s) = sender {
        let share = |l| {
            TcpSummary::share(l, s.busy_time_us)
                .map_or_else(|| "n/a".to_owned(), |x| format!("{:.0}%", x * 100.0))
        };
        let _ = writeln!(
            out,
            "  sender ({}): {} retransmits, rtt {}, min_rtt {}; of its busy time {} receive-window limited, {} send-buffer limited",
            match test.direction {
                BenchDirection::Send => "client",
                BenchDirection::Receive => "server",
            },
            opt(s.total_retrans_segs, |r| r.to_string()),
            opt(s.rtt_us, ms_us),
            opt(s.min_rtt_us, ms_us),
            share(s.rwnd_limited_us),
            share(s.sndbuf_limited_us),
        );
    } else {
        let _ = writeln!(out, "  sender: TCP_INFO n/a");
    }
    if let Some(t) = &r.tuning {
        let _ = writeln!(
            out,
            "  client buffers: SO_RCVBUF peak {}, SO_SNDBUF peak {}",
            Bytes(t.buffers.peak_rcvbuf_bytes).grouped(),
            Bytes(t.buffers.peak_sndbuf_bytes).grouped()
        );
    }
    match &r.server_buffers {
        Some(b) => {
            let _ = writeln!(
                out,
                "  server buffers: SO_RCVBUF peak {}, SO_SNDBUF peak {} (final {} / {})",
                opt(b.peak_rcvbuf_bytes, |v| Bytes(v).grouped()),
                opt(b.peak_sndbuf_bytes, |v| Bytes(v).grouped()),
                Bytes(b.rcvbuf_bytes).grouped(),
                Bytes(b.sndbuf_bytes).grouped()
            );
        }
        None => {
            let _ = writeln!(out, "  server buffers: n/a ({})", test.bench.completion);
        }
    }
    for note in &test.bench.unseen {
        let _ = writeln!(out, "  not seen: {note}");
    }
    out
}

/// `--json`.
pub fn test_json(test: &TestRun) -> Value {
    let r = &test.bench.report;
    json!({
        "rightsize_version": env!("CARGO_PKG_VERSION"),
        "argv": crate::transfer_output::argv_without_passwords(),
        "server": r.server.to_string(),
        "direction": match test.direction { BenchDirection::Send => "send", BenchDirection::Receive => "receive" },
        "tune": test.tune.to_string(),
        "server_tune": test.bench.server_tune,
        "rightsize_server": test.bench.rightsize,
        "bytes": r.bytes,
        "seconds": r.elapsed.as_secs_f64(),
        "goodput_bps": r.goodput_bps(),
        "stopped": test.bench.stopped,
        "completion": test.bench.completion,
        "sender_tcp": test.sender_tcp(),
        "receiver_tcp": test.receiver_tcp(),
        "client_buffers": r.tuning.as_ref().map(|t| t.buffers),
        "server_buffers": r.server_buffers,
        "intervals": test.lines,
        "unseen": test.bench.unseen,
        "transfer": crate::transfer_output::summary_json(r),
    })
}
