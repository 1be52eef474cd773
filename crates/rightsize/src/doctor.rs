//! `rightsize doctor`: pings the server, runs two short tests (the kernel's
//! autotuning on both ends, then rightsize's `auto`), reads both ends'
//! `TCP_INFO` and settings, and prints the verdict of
//! `rightsize_tune::diagnose::verdict` with its numbers and fixes.

use std::io::Write as _;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;
use rightsize_ftp::client::{self, BenchDirection, Options, PingOptions};
use rightsize_ftp_proto::url::FtpUrl;
use rightsize_sys::signals::StopSignals;
use rightsize_tune::TunerSpec;
use rightsize_tune::diagnose::doctor::{TestMeasured, verdict_text};
use rightsize_tune::diagnose::rtt::RttStats;
use rightsize_tune::diagnose::verdict::{self, DoctorFacts, End, RunFacts};
use rightsize_tune::units::{BitRate, human_rate};
use serde_json::json;

use crate::ping::{Talk, ping_json};
use crate::target::parse_target;
use crate::test_cmd::{RunArgs, TestRun, TestWatch, run_one, test_json};

/// Each of doctor's two tests runs this long unless `--time` or `--bytes`.
pub const DEFAULT_DOCTOR_TIME: Duration = Duration::from_secs(5);
/// NOOPs of the idle-RTT phase, and their spacing.
const PING_COUNT: u32 = 5;
const PING_INTERVAL: Duration = Duration::from_millis(200);

pub const DOCTOR_ABOUT: &str = "\
Say what limits one TCP stream to a rightsize server, and how to fix it: measures the idle RTT \
(NOOP on the control connection), runs two short tests (both ends on the kernel's autotuning, \
then both on rightsize's auto tuner), reads TCP_INFO and the TCP settings of both ends (the \
server's through SITE RIGHTSIZE HOST and its 226), and prints a verdict with its numbers: \
receive-window limited (tcp_rmem max, rmem_max, or a window scale fixed too low), send-buffer \
limited (tcp_wmem max, wmem_max), congestion limited (losses at a filling queue), loss on an idle \
path, application limited, or near the path's capacity; then the settings for each host and the \
rate to expect after them.

  rightsize doctor right:2121
  rightsize doctor 10.2.1.1:2121 --time 10s --reverse       # the server sends
  rightsize doctor right:2121 --bandwidth 100M --json      # size the fixes for a known rate

Without --bandwidth the path's capacity is estimated from the best rate either test measured; a \
fix sized from a rate that was itself limited may need a second round. Against an FTP server \
that is not rightsize only the round trips can be measured: doctor says so and exits 1. Exit \
codes: 0 a verdict, 1 no verdict (no answer, no test ran, interrupted), 2 bad arguments.";

/// `rightsize doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// The server: HOST, HOST:PORT, [IPv6]:PORT (port 21 by default) or
    /// ftp://[user[:password]@]host[:port]/.
    #[arg(value_name = "HOST[:PORT]", value_parser = parse_target)]
    pub server: FtpUrl,

    #[command(flatten)]
    pub run: RunArgs,

    /// The path's bottleneck rate, if known (100M, 1G): sizes the fixes instead of the best
    /// rate measured.
    #[arg(long, short = 'b', value_name = "RATE", value_parser = BitRate::parse_positive)]
    pub bandwidth: Option<BitRate>,

    /// Print one JSON object instead of text (schema in docs/telemetry.md).
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &DoctorArgs) -> anyhow::Result<ExitCode> {
    if args.run.tls.insecure {
        eprintln!("rightsize: warning: {}", crate::transfer::INSECURE_WARNING);
    }
    let signals = StopSignals::install().context("catch Ctrl-C")?;
    let stop = || signals.caught().is_some();
    let name = format!("{}:{}", args.server.host(), args.server.port());
    let say = |text: &str| {
        if !args.json {
            print!("{text}");
            let _ = std::io::stdout().flush();
        }
    };
    let direction = if args.run.reverse {
        BenchDirection::Receive
    } else {
        BenchDirection::Send
    };
    let limit = args.run.limit(DEFAULT_DOCTOR_TIME);
    say(&format!(
        "doctor {name}: {}\n",
        match direction {
            BenchDirection::Send => "the client sends (STOR to /.rightsize/null/)",
            BenchDirection::Receive => "the server sends (RETR from /.rightsize/zero/)",
        }
    ));

    // 1. The idle round trip.
    let mut talk = Talk {
        verbose: args.run.verbose,
    };
    let ping_options = PingOptions {
        count: PING_COUNT,
        interval: PING_INTERVAL,
        limits: Options {
            connect_timeout: args.run.connect_timeout.0,
            idle_timeout: args.run.timeout.0,
            tls: args.run.tls.options(),
            ..Options::default()
        },
    };
    let ping = client::ping(&args.server, &ping_options, &mut talk, &mut |_| {}, &stop)
        .with_context(|| format!("doctor {name}: the server does not answer"))?;
    let idle = RttStats::of(&ping.rtts());
    say(&format!(
        "  idle RTT (NOOP x{}): {}; TCP connect {:.3} ms\n",
        ping.probes.len(),
        idle.map_or_else(|| "no answer".to_owned(), |s| s.ping_line()),
        ping.connect_time.as_secs_f64() * 1e3
    ));
    if !ping.rightsize {
        say(
            "  the server is not rightsize (no RIGHTSIZE in FEAT): it has no benchmark source or sink and does not report its side; only the round trips above could be measured\n",
        );
        if args.json {
            print_json(&json!({
                "rightsize_version": env!("CARGO_PKG_VERSION"),
                "argv": crate::transfer_output::argv_without_passwords(),
                "server": name,
                "ping": ping_json(&ping),
                "tests": {},
                "verdict": null,
                "error": "the server is not rightsize: no test could run",
            }))?;
        }
        return Ok(ExitCode::FAILURE);
    }

    // 2. The two tests.
    let mut tests: Vec<(TunerSpec, Result<TestRun, String>)> = Vec::new();
    for tune in [TunerSpec::Kernel, TunerSpec::Auto] {
        if stop() {
            break;
        }
        let watch = TestWatch::new(direction, None, false, args.run.verbose);
        let result = run_one(
            &args.server,
            &args.run,
            (tune, 1),
            limit,
            watch,
            &stop,
            true,
        )
        .map_err(|e| format!("{e:#}"));
        match &result {
            Ok(test) => say(&format!("  {}\n", test_line(test))),
            Err(e) => say(&format!("  {tune} test failed: {e}\n")),
        }
        tests.push((tune, result));
    }
    if stop() {
        eprintln!("rightsize: doctor interrupted; no verdict");
        return Ok(ExitCode::FAILURE);
    }

    // 3. The verdict.
    let local = rightsize_sys::sysctl::read_host_settings().0;
    let server_settings = tests
        .iter()
        .filter_map(|(_, t)| t.as_ref().ok()?.bench.server_settings.clone())
        .next();
    let sender = match direction {
        BenchDirection::Send => End::Client,
        BenchDirection::Receive => End::Server,
    };
    let facts_of = |tune: TunerSpec| {
        tests
            .iter()
            .find(|(t, _)| *t == tune)
            .and_then(|(_, r)| r.as_ref().ok())
            .map(run_facts)
    };
    let facts = DoctorFacts::assemble(
        sender,
        idle.map(|s| s.min),
        args.bandwidth,
        local,
        server_settings,
        facts_of(TunerSpec::Kernel),
        facts_of(TunerSpec::Auto),
    );
    if !facts.has_a_test() {
        let why: Vec<String> = tests
            .iter()
            .filter_map(|(t, r)| r.as_ref().err().map(|e| format!("{t}: {e}")))
            .collect();
        anyhow::bail!("doctor {name}: no test ran ({})", why.join("; "));
    }
    let verdict = verdict::diagnose(&facts);
    let unseen: Vec<String> = tests
        .iter()
        .filter_map(|(_, r)| r.as_ref().ok())
        .flat_map(|t| t.bench.unseen.clone())
        .collect();
    if args.json {
        let tests_json: serde_json::Map<String, serde_json::Value> = tests
            .iter()
            .map(|(t, r)| {
                (
                    t.to_string(),
                    match r {
                        Ok(test) => test_json(test),
                        Err(e) => json!({ "error": e }),
                    },
                )
            })
            .collect();
        print_json(&json!({
            "rightsize_version": env!("CARGO_PKG_VERSION"),
            "argv": crate::transfer_output::argv_without_passwords(),
            "server": name,
            "direction": match direction { BenchDirection::Send => "send", BenchDirection::Receive => "receive" },
            "ping": ping_json(&ping),
            "tests": tests_json,
            "facts": facts,
            "verdict": verdict,
            "unseen": unseen,
        }))?;
    } else {
        print!("{}", verdict_text(&verdict, &unseen));
    }
    Ok(ExitCode::SUCCESS)
}

fn print_json(value: &serde_json::Value) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(value)?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}").context("write the JSON to standard output")
}

/// What the verdict reads of one test.
fn run_facts(test: &TestRun) -> RunFacts {
    let report = &test.bench.report;
    RunFacts::of(&TestMeasured {
        tune: &test.tune.to_string(),
        fixed_buffers: test.tune != TunerSpec::Kernel,
        goodput_bps: report.goodput_bps(),
        elapsed: report.elapsed,
        bytes: report.bytes,
        samples: &test.samples,
        sender: test.sender_tcp(),
        sender_peak_sndbuf_bytes: match test.direction {
            BenchDirection::Send => report.tuning.as_ref().map(|t| t.buffers.peak_sndbuf_bytes),
            BenchDirection::Receive => report
                .server_buffers
                .as_ref()
                .and_then(|b| b.peak_sndbuf_bytes),
        },
    })
}

fn test_line(test: &TestRun) -> String {
    let r = &test.bench.report;
    let s = test.sender_tcp();
    let share = |l: Option<u64>| {
        s.and_then(|s| rightsize_tune::diagnose::tcp::TcpSummary::share(l, s.busy_time_us))
            .map_or_else(|| "n/a".to_owned(), |x| format!("{:.0}%", x * 100.0))
    };
    format!(
        "{:<7} test: {} over {:.1} s; sender retransmits {}, receive-window limited {}, send-buffer limited {}",
        test.tune.to_string(),
        human_rate(r.goodput_bps()),
        r.elapsed.as_secs_f64(),
        s.and_then(|s| s.total_retrans_segs)
            .map_or_else(|| "n/a".to_owned(), |v| v.to_string()),
        share(s.and_then(|s| s.rwnd_limited_us)),
        share(s.and_then(|s| s.sndbuf_limited_us)),
    )
}
