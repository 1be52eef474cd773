//! `rightsize path cross sink|send`: cross traffic for an emulated path, as two
//! processes, one on each side of the bottleneck. Each runs until SIGINT or
//! SIGTERM, `--duration`, or (send) until every flow has failed, then writes
//! one JSON line with its counters to stdout or `--report FILE`.
//! Progress and the listening address go to stderr.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::{ArgGroup, Args, Subcommand};
use rightsize_path::cross::{DEFAULT_UDP_PAYLOAD, OnOff, check_flows};
use rightsize_sys::cross::{
    self, Sink, SinkReport, TcpConfig, TcpReport, TcpSources, UdpConfig, UdpReport, UdpSource,
};
use rightsize_sys::signals::{self, StopSignals, Stopped};
use rightsize_tune::units::{self, BitRate, Bytes};
use serde::Serialize;

pub const CROSS_ABOUT: &str = "\
Cross traffic through the bottleneck of an emulated path: a sink on one side, a sender on the \
other. The sink takes TCP and UDP on one port and discards it; the sender sends unresponsive \
UDP at a constant rate (optionally on/off) or runs N bulk TCP flows (optionally each limited by \
a fixed send buffer, SOBAS Figs. 14-15). Both run until SIGINT/SIGTERM or --duration, then print \
one JSON line of counters.

  rightsize path cross sink --listen 10.2.0.1:5300
  rightsize path cross send --to 10.2.0.1:5300 --udp 100M --duration 30s
  rightsize path cross send --to 10.2.0.1:5300 --udp 100M --on 1s --off 1s --report udp.json
  rightsize path cross send --to 10.2.0.1:5300 --tcp 4 --window 256KiB --congestion cubic

UDP rates count IP packets (IP + UDP headers + payload; --size 1472 makes 1500-byte IPv4 \
packets), not Ethernet framing.";

#[derive(Debug, Args)]
pub struct CrossArgs {
    #[command(subcommand)]
    pub command: CrossCommand,
}

#[derive(Debug, Subcommand)]
pub enum CrossCommand {
    /// Take TCP and UDP on one port, discard it, count it.
    Sink(SinkArgs),
    /// Send UDP at a rate, or run TCP flows, to a sink.
    Send(SendArgs),
}

#[derive(Debug, Args)]
pub struct SinkArgs {
    /// Where to listen, TCP and UDP (port 0 picks one free for both; it is printed on stderr).
    #[arg(long, value_name = "ADDR:PORT")]
    pub listen: String,

    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("traffic").required(true).args(["udp", "tcp"])))]
pub struct SendArgs {
    /// The sink's address and port.
    #[arg(long, value_name = "ADDR:PORT")]
    pub to: String,

    /// Unresponsive UDP at this rate (of IP packets): 100M, 1.5G, 500k.
    #[arg(long, value_name = "RATE", value_parser = BitRate::parse_positive, conflicts_with = "tcp")]
    pub udp: Option<BitRate>,

    /// With --off: send at the rate for this long, then pause, repeating.
    #[arg(long, value_name = "DURATION", requires_all = ["off", "udp"], value_parser = units::parse_positive_duration)]
    pub on: Option<Duration>,

    /// With --on: the silent time of each period.
    #[arg(long, value_name = "DURATION", requires = "on", value_parser = units::parse_positive_duration)]
    pub off: Option<Duration>,

    /// UDP payload per datagram, bytes (1472 makes a 1500-byte IPv4 packet).
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_UDP_PAYLOAD, conflicts_with = "tcp", value_parser = Bytes::parse_positive)]
    pub size: Bytes,

    /// Run this many bulk TCP flows (1-256).
    #[arg(long, value_name = "N", value_parser = parse_flows)]
    pub tcp: Option<usize>,

    /// Each TCP flow's send buffer as the kernel keeps it (SO_SNDBUF is set to half; Linux
    /// doubles it): the flow keeps about this much in flight and runs at about WINDOW/RTT.
    #[arg(long, value_name = "SIZE", requires = "tcp", value_parser = Bytes::parse_positive)]
    pub window: Option<Bytes>,

    /// TCP congestion control for every flow: cubic, reno, bbr.
    #[arg(long, value_name = "NAME", requires = "tcp")]
    pub congestion: Option<String>,

    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Stop after this long (default: at SIGINT or SIGTERM).
    #[arg(long, value_name = "DURATION", value_parser = units::parse_positive_duration)]
    pub duration: Option<Duration>,

    /// Write the JSON line to FILE instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
}

fn parse_flows(input: &str) -> Result<usize, String> {
    let flows = input
        .trim()
        .parse::<usize>()
        .map_err(|_| format!("TCP flow count {input:?} is not a whole number; give 1 to 256"))?;
    check_flows(flows).map_err(|e| e.to_string())
}

/// The one JSON line a run writes.
#[derive(Debug, Serialize)]
struct ResultLine {
    kind: &'static str,
    argv: Vec<String>,
    version: &'static str,
    kernel: Option<String>,
    stopped_by: &'static str,
    #[serde(flatten)]
    traffic: Traffic,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "lowercase")]
enum Traffic {
    Sink(SinkReport),
    Udp(UdpReport),
    Tcp(TcpReport),
}

impl Traffic {
    /// The errors that make the run a failure.
    fn errors(&self) -> Vec<String> {
        match self {
            Traffic::Sink(_) => Vec::new(),
            Traffic::Udp(r) => r.error.iter().cloned().collect(),
            Traffic::Tcp(r) => r.flows.iter().filter_map(|f| f.error.clone()).collect(),
        }
    }
}

pub fn run(args: CrossArgs) -> anyhow::Result<()> {
    match args.command {
        CrossCommand::Sink(args) => sink(&args),
        CrossCommand::Send(args) => send(&args),
    }
}

fn sink(args: &SinkArgs) -> anyhow::Result<()> {
    let listen = cross::resolve(&args.listen)?;
    let signals = StopSignals::install()?;
    let sink = Sink::start(listen)?;
    eprintln!(
        "rightsize path cross sink: listening on {} (TCP and UDP)",
        sink.local_addr()
    );
    let rcvbuf = sink.snapshot().udp_rcvbuf;
    if let Some(command) = rcvbuf.lift_command() {
        eprintln!(
            "rightsize path cross sink: UDP receive buffer {} bytes, capped; `{command}` lifts the cap",
            rcvbuf.applied_bytes
        );
    }
    let stopped = signals::wait(&signals, args.run.duration, || false);
    finish(&args.run, stopped, Traffic::Sink(sink.stop()))
}

fn send(args: &SendArgs) -> anyhow::Result<()> {
    let to = cross::resolve(&args.to)?;
    let signals = StopSignals::install()?;
    let (stopped, traffic) = match (args.udp, args.tcp) {
        (Some(rate), _) => {
            let mut config = UdpConfig::new(to, rate);
            config.payload = args.size;
            config.on_off = match (args.on, args.off) {
                (Some(on), Some(off)) => Some(OnOff::new(on, off)?),
                _ => None,
            };
            let source = UdpSource::start(config)?;
            eprintln!(
                "rightsize path cross send: UDP {} to {to} from {}",
                rate.human(),
                source.snapshot().local
            );
            let stopped = signals::wait(&signals, args.run.duration, || source.is_finished());
            (stopped, Traffic::Udp(source.stop()))
        }
        (None, Some(flows)) => {
            let mut config = TcpConfig::new(to, flows);
            config.window = args.window;
            config.congestion.clone_from(&args.congestion);
            let sources = TcpSources::start(config)?;
            let sndbuf = match sources
                .snapshot()
                .flows
                .first()
                .and_then(|f| f.sndbuf.clone())
            {
                Some(b) => format!(", SO_SNDBUF {} bytes each", b.applied_bytes),
                None => String::new(),
            };
            eprintln!("rightsize path cross send: {flows} TCP flows to {to}{sndbuf}");
            let stopped = signals::wait(&signals, args.run.duration, || sources.all_finished());
            (stopped, Traffic::Tcp(sources.stop()))
        }
        (None, None) => anyhow::bail!("give --udp RATE or --tcp N"),
    };
    finish(&args.run, stopped, traffic)
}

/// Writes the result line, then fails if the traffic failed.
fn finish(run: &RunArgs, stopped: Stopped, traffic: Traffic) -> anyhow::Result<()> {
    let errors = traffic.errors();
    let kind = match traffic {
        Traffic::Sink(_) => "cross-sink",
        Traffic::Udp(_) | Traffic::Tcp(_) => "cross-send",
    };
    let line = ResultLine {
        kind,
        argv: std::env::args().collect(),
        version: env!("CARGO_PKG_VERSION"),
        kernel: rightsize_sys::sysctl::kernel_release().ok(),
        stopped_by: stopped.as_str(),
        traffic,
    };
    let mut text = serde_json::to_string(&line).context("encoding the result line")?;
    text.push('\n');
    match &run.report {
        Some(path) => std::fs::write(path, text)
            .with_context(|| format!("writing the report {}", path.display()))?,
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())
                .and_then(|()| out.flush())
                .context("writing the result line to stdout")?;
        }
    }
    match errors.as_slice() {
        [] => Ok(()),
        [one] => anyhow::bail!("{one}"),
        [first, ..] => anyhow::bail!("{} flows failed; the first: {first}", errors.len()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn flow_counts_are_checked_with_the_input_quoted() {
        assert_eq!(parse_flows("4"), Ok(4));
        assert!(parse_flows("0").unwrap_err().contains("0 TCP flows"));
        assert!(parse_flows("257").unwrap_err().contains("257 TCP flows"));
        assert!(parse_flows("x").unwrap_err().contains("\"x\""));
    }
}
