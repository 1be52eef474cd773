//! `rightsize ping`: round trips over the FTP control connection, printed
//! as ping(8) prints them, or as JSON. The numbers come from
//! `rightsize_ftp::client::ping` and `rightsize_tune::diagnose::rtt`.

use std::io::Write as _;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;
use rightsize_ftp::client::{self, Options, PingOptions, PingProbe, PingReport};
use rightsize_ftp_proto::url::FtpUrl;
use rightsize_sys::signals::StopSignals;
use rightsize_tune::diagnose::rtt::{RttStats, loss_percent};
use serde_json::json;

use crate::target::parse_target;
use crate::transfer::{INSECURE_WARNING, Limit, TlsArgs, parse_interval};

/// `--timeout` of `ping`, `test` and `doctor`: each wait for a reply.
pub const DEFAULT_REPLY_TIMEOUT: Duration = Duration::from_secs(10);

pub const PING_ABOUT: &str = "\
Round-trip times over the FTP control connection: the TCP connect time, then NOOP once per \
interval, each timed from its write to its reply, printed like ping(8) (the analogue of \
perfSONAR's rtt test, without ICMP). Works against any FTP server; a refused login is noted and \
the NOOPs go on.

  rightsize ping 127.0.0.1:2121
  rightsize ping right:2121 -c 10 -i 0.2
  rightsize ping ftp://alice:secret@host:2121/ --json

A NOOP that gets no reply within --timeout ends the run and counts as lost. Ctrl-C ends it early \
with the statistics so far. Exit codes: 0 at least one reply, 1 none (or no connection), 2 bad \
arguments.";

/// `rightsize ping`.
#[derive(Debug, Args)]
pub struct PingArgs {
    /// The server: HOST, HOST:PORT, [IPv6]:PORT (port 21 by default) or
    /// ftp://[user[:password]@]host[:port]/ for a login other than anonymous.
    #[arg(value_name = "HOST[:PORT]", value_parser = parse_target)]
    pub server: FtpUrl,

    /// NOOPs to send.
    #[arg(short = 'c', long, value_name = "N", default_value_t = 5,
          value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub count: u32,

    /// Time between NOOPs: seconds (1, 0.2) or a duration (200ms).
    #[arg(short = 'i', long, value_name = "SECONDS", default_value = "1", value_parser = parse_interval)]
    pub interval: Duration,

    /// Print one JSON object at the end instead of text (schema in docs/telemetry.md).
    #[arg(long)]
    pub json: bool,

    /// Print the FTP commands and replies on standard error.
    #[arg(short, long)]
    pub verbose: bool,

    /// Limit for the TCP connect.
    #[arg(long, value_name = "DURATION", default_value_t = Limit(client::DEFAULT_CONNECT_TIMEOUT))]
    pub connect_timeout: Limit,

    /// Limit for each reply (the greeting, the login, each NOOP).
    #[arg(long, value_name = "DURATION", default_value_t = Limit(DEFAULT_REPLY_TIMEOUT))]
    pub timeout: Limit,

    #[command(flatten)]
    pub tls: TlsArgs,
}

/// Prints the protocol (with `-v`) and warnings on standard error.
#[derive(Debug)]
pub struct Talk {
    pub verbose: bool,
}

impl client::Observer for Talk {
    fn protocol(&mut self, line: &str) {
        if self.verbose {
            eprintln!("{line}");
        }
    }
    fn warning(&mut self, message: &str) {
        eprintln!("rightsize: warning: {message}");
    }
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

pub fn run(args: &PingArgs) -> anyhow::Result<ExitCode> {
    let signals = StopSignals::install().context("catch Ctrl-C")?;
    let options = PingOptions {
        count: args.count,
        interval: args.interval,
        limits: Options {
            connect_timeout: args.connect_timeout.0,
            idle_timeout: args.timeout.0,
            tls: args.tls.options(),
            ..Options::default()
        },
    };
    if args.tls.insecure {
        eprintln!("rightsize: warning: {INSECURE_WARNING}");
    }
    let server = format!("{}:{}", args.server.host(), args.server.port());
    let text = !args.json;
    let mut on_probe = |p: &PingProbe| {
        if !text {
            return;
        }
        match (p.rtt, p.code) {
            (Some(rtt), Some(code)) => println!("seq={} time={} ({code})", p.seq, ms(rtt)),
            _ => println!("seq={} no reply", p.seq),
        }
    };
    let mut talk = Talk {
        verbose: args.verbose,
    };
    if text {
        println!("PING {server} (FTP NOOP on the control connection)");
    }
    let report = client::ping(&args.server, &options, &mut talk, &mut on_probe, &|| {
        signals.caught().is_some()
    })
    .with_context(|| format!("ping {server}"))?;
    let answered = report.probes.iter().filter(|p| p.rtt.is_some()).count();
    if args.json {
        let json = serde_json::to_string_pretty(&ping_json(&report))?;
        let mut out = std::io::stdout().lock();
        writeln!(out, "{json}").context("write the JSON to standard output")?;
    } else {
        print!("{}", ping_summary(&server, &report));
    }
    Ok(if answered > 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// ping(8)'s closing lines.
pub fn ping_summary(server: &str, report: &PingReport) -> String {
    let sent = u32::try_from(report.probes.len()).unwrap_or(u32::MAX);
    let rtts = report.rtts();
    let answered = u32::try_from(rtts.len()).unwrap_or(u32::MAX);
    let mut out = format!("--- {server} FTP ping statistics ---\n");
    out.push_str(&format!(
        "{sent} sent, {answered} answered, {:.0}% lost; connect time {}",
        loss_percent(sent, answered),
        ms(report.connect_time)
    ));
    match RttStats::of(&rtts) {
        Some(stats) => out.push_str(&format!(", rtt {}\n", stats.ping_line())),
        None => out.push_str(", no rtt\n"),
    }
    if report.tls {
        out.push_str("control connection over TLS: each round trip includes its records\n");
    }
    if !report.rightsize {
        out.push_str("server: not rightsize (no RIGHTSIZE in FEAT); NOOP round trips only\n");
    }
    if let Some(why) = &report.stopped {
        out.push_str(&format!("stopped early: {why}\n"));
    }
    out
}

pub fn ping_json(report: &PingReport) -> serde_json::Value {
    let sent = u32::try_from(report.probes.len()).unwrap_or(u32::MAX);
    let rtts = report.rtts();
    let answered = u32::try_from(rtts.len()).unwrap_or(u32::MAX);
    let micros = |d: Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
    json!({
        "rightsize_version": env!("CARGO_PKG_VERSION"),
        "argv": crate::transfer_output::argv_without_passwords(),
        "server": report.server.to_string(),
        "connect_time_us": micros(report.connect_time),
        "greeting": report.greeting,
        "logged_in": report.logged_in,
        "tls": report.tls,
        "rightsize": report.rightsize,
        "sent": sent,
        "answered": answered,
        "loss_percent": loss_percent(sent, answered),
        "rtt": RttStats::of(&rtts),
        "probes": report.probes.iter().map(|p| json!({
            "seq": p.seq,
            "rtt_us": p.rtt.map(micros),
            "code": p.code,
        })).collect::<Vec<_>>(),
        "stopped": report.stopped,
    })
}
