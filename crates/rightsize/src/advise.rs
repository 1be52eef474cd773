//! `rightsize advise`: prints the advice of `rightsize_tune::advice` and,
//! with `--check`, the verdict of `rightsize_tune::check` on this host.

use std::fmt::Write as _;
use std::process::ExitCode;

use anyhow::Context as _;
use rightsize_tune::advice::{self, Advice, BufferAnswer, OsAdvice, PathSummary};
use rightsize_tune::bdp::{self, PathParams};
use rightsize_tune::check::{self, Buffering, HostCheck, Side};
use rightsize_tune::host::HostSettings;
use rightsize_tune::units::{BitRate, Bytes, human_duration, human_rate};
use serde::Serialize;

use crate::cli::AdviseArgs;

/// The JSON document `advise --json` prints (docs/telemetry.md, "advise --json").
#[derive(Debug, Serialize)]
struct Report {
    rightsize_version: &'static str,
    argv: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<PathSummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    buffer: Option<BufferAnswer>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    os: Vec<OsAdvice>,
    #[serde(skip_serializing_if = "Option::is_none")]
    check: Option<CheckReport>,
}

#[derive(Debug, Serialize)]
struct CheckReport {
    kernel: Option<String>,
    #[serde(flatten)]
    result: HostCheck,
}

pub fn run(args: &AdviseArgs) -> anyhow::Result<ExitCode> {
    if args.bandwidth.is_none() && args.buffer.is_none() {
        eprintln!(
            "error: advise needs --bandwidth (the path's rate, e.g. --bandwidth 10G --rtt 50ms) or --buffer (what a buffer allows, e.g. --buffer 64KiB --rtt 100ms)"
        );
        return Ok(crate::exit::usage());
    }
    let path = args.bandwidth.map(|rate| PathParams {
        rate,
        rtt: args.rtt,
    });
    let buffer = args
        .buffer
        .map(|buffer| BufferAnswer::new(buffer, args.rtt, args.bandwidth));

    let check = if args.check {
        let path = path.context("--check needs --bandwidth")?;
        let (settings, _errors) = rightsize_sys::sysctl::read_host_settings();
        Some(CheckReport {
            kernel: rightsize_sys::sysctl::kernel_release().ok(),
            result: check::check(&path, args.mss, &settings),
        })
    } else {
        None
    };
    // Advice starts from this host's values when it was read, so it never lowers them.
    let host = check
        .as_ref()
        .map_or_else(HostSettings::linux_defaults, |c| c.result.settings.clone());
    let advice = match (path, buffer.is_some()) {
        (Some(path), false) => Some(advice::advise(&path, args.mss, &args.oses(), &host)),
        _ => None,
    };

    let report = Report {
        rightsize_version: env!("CARGO_PKG_VERSION"),
        argv: std::env::args().collect(),
        path: path.map(|p| PathSummary::new(&p, args.mss)),
        buffer,
        os: advice.as_ref().map(|a| a.os.clone()).unwrap_or_default(),
        check,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", render(&report, advice.as_ref()));
    }
    Ok(ExitCode::SUCCESS)
}

fn render(report: &Report, advice: Option<&Advice>) -> String {
    let mut out = String::new();
    if let Some(path) = &report.path {
        render_path(&mut out, path);
    }
    if let Some(buffer) = &report.buffer {
        render_buffer(&mut out, buffer);
    }
    if let Some(check) = &report.check {
        render_check(&mut out, check);
    }
    if let Some(advice) = advice {
        for os in &advice.os {
            render_os(&mut out, os);
        }
    }
    out
}

fn rtt_text(rtt_ns: u64) -> String {
    human_duration(std::time::Duration::from_nanos(rtt_ns))
}

fn render_path(out: &mut String, path: &PathSummary) {
    let bdp = Bytes(path.bdp_bytes);
    let _ = writeln!(
        out,
        "Path: {} x {} RTT",
        BitRate(path.rate_bps).human(),
        rtt_text(path.rtt_ns)
    );
    let _ = writeln!(
        out,
        "BDP:  {} bytes ({}, {})",
        bdp.grouped(),
        bdp.human_si(),
        bdp.human_iec()
    );
    match path.window_scale_needed {
        Some(shift) => {
            let _ = writeln!(
                out,
                "      one TCP connection carries it if the handshake reaches window scale {shift} (windows up to {} bytes)",
                bdp::max_window_for_scale(shift).grouped()
            );
        }
        None => {
            let _ = writeln!(
                out,
                "      beyond what one TCP connection can carry (window scale 14 allows {} bytes): use {} parallel streams",
                bdp::MAX_WINDOW.grouped(),
                path.streams_needed
            );
        }
    }
    out.push('\n');
}

fn render_buffer(out: &mut String, answer: &BufferAnswer) {
    let _ = writeln!(
        out,
        "A window of {} bytes over {} carries at most {}.",
        Bytes(answer.buffer_bytes).grouped(),
        rtt_text(answer.rtt_ns),
        BitRate(answer.max_rate_bps).human()
    );
    if let (Some(share), Some(rate), Some(bdp)) =
        (answer.utilisation, answer.path_rate_bps, answer.bdp_bytes)
    {
        let _ = writeln!(
            out,
            "On a {} path that is {:.2}% of the rate (the BDP is {} bytes).",
            BitRate(rate).human(),
            share * 100.0,
            Bytes(bdp).grouped()
        );
    }
    let _ = writeln!(
        out,
        "(A Linux socket buffer is not all window: under the perfSONAR lab's convention half of it is; see `rightsize advise --help`.)"
    );
}

fn render_os(out: &mut String, os: &OsAdvice) {
    let _ = writeln!(out, "== {} ==", os.title);
    let _ = writeln!(
        out,
        "Settings (for buffers of up to {} bytes):",
        Bytes(os.buffer_bytes).grouped()
    );
    for setting in &os.settings {
        let _ = writeln!(out, "  {} = {}", setting.name, setting.value);
        let _ = writeln!(out, "      {}", setting.why);
    }
    let _ = writeln!(out, "Apply now (as an administrator):");
    for command in &os.commands {
        let _ = writeln!(out, "  {command}");
    }
    if let Some(file) = &os.file {
        let _ = writeln!(out, "Keep across reboots, in {}:", file.path);
        for line in file.contents.lines() {
            let _ = writeln!(out, "  | {line}");
        }
    }
    if !os.notes.is_empty() {
        let _ = writeln!(out, "Notes:");
        for note in &os.notes {
            let _ = writeln!(out, "  - {note}");
        }
    }
    out.push('\n');
}

fn render_check(out: &mut String, report: &CheckReport) {
    let check = &report.result;
    let _ = writeln!(
        out,
        "== What on this host (kernel {}) caps one stream on this path ==",
        report.kernel.as_deref().unwrap_or("unknown")
    );
    let _ = writeln!(
        out,
        "{:<8} {:<10} {:<28} {:>14} {:>14}  one stream at most",
        "side", "buffers", "setting", "value", "window"
    );
    for limit in &check.limits {
        let upper = if limit.ceiling_upper_bps != limit.ceiling_bps {
            format!(" (up to {})", BitRate(limit.ceiling_upper_bps).human())
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "{:<8} {:<10} {:<28} {:>14} {:>14}  {}{}{}",
            side_name(limit.side),
            buffering_name(limit.buffering),
            limit.setting,
            Bytes(limit.value).grouped(),
            Bytes(limit.window_bytes).grouped(),
            BitRate(limit.ceiling_bps).human(),
            upper,
            if limit.caps { "  CAPS" } else { "" }
        );
    }
    let needed = Bytes(check.path.bdp_bytes);
    let _ = writeln!(
        out,
        "Verdict (the path needs a window of {} bytes):",
        needed.grouped()
    );
    for (side, label) in [(Side::Receive, "Receiving"), (Side::Send, "Sending")] {
        for buffering in [Buffering::Autotuned, Buffering::Fixed] {
            let who = match buffering {
                Buffering::Autotuned => "with kernel autotuning",
                Buffering::Fixed => {
                    "for applications that set their own buffer (iperf3 -w, --tune static:SIZE)"
                }
            };
            let Some(limit) = check.tightest(side, buffering) else {
                continue;
            };
            if limit.caps {
                let _ = writeln!(
                    out,
                    "  {label} {who}: CAPPED at {} (up to {}) by {} = {}; raise it to {} bytes.",
                    BitRate(limit.ceiling_bps).human(),
                    BitRate(limit.ceiling_upper_bps).human(),
                    limit.setting,
                    Bytes(limit.value).grouped(),
                    Bytes(match side {
                        Side::Receive => advice::linux_receive_buffer(&check.path),
                        Side::Send => advice::linux_buffer(&check.path),
                    })
                    .grouped()
                );
            } else {
                let _ = writeln!(
                    out,
                    "  {label} {who}: not capped by this host (up to {}).",
                    human_rate(limit.ceiling_bps as f64)
                );
            }
        }
    }
    if !check.unreadable.is_empty() {
        let _ = writeln!(
            out,
            "  Could not read: {} (not checked).",
            check.unreadable.join(", ")
        );
    }
    if check.fixes.is_empty() {
        let _ = writeln!(out, "Nothing on this host caps one stream on this path.");
    } else {
        let _ = writeln!(
            out,
            "Lift the caps (as root; the receiving settings matter on the receiver, the sending ones on the sender):"
        );
        for fix in &check.fixes {
            let _ = writeln!(out, "  {fix}");
        }
        if let Some(file) = &check.fix_file {
            let _ = writeln!(
                out,
                "Keep them across reboots: put the same settings in {} (the Linux advice shows the whole file) and run `sysctl --system`.",
                file.path
            );
        }
    }
    if !check.notes.is_empty() {
        let _ = writeln!(out, "Also on this host:");
        for note in &check.notes {
            let _ = writeln!(out, "  - {note}");
        }
    }
    out.push('\n');
}

fn side_name(side: Side) -> &'static str {
    match side {
        Side::Receive => "receive",
        Side::Send => "send",
    }
}

fn buffering_name(buffering: Buffering) -> &'static str {
    match buffering {
        Buffering::Autotuned => "autotuned",
        Buffering::Fixed => "fixed",
    }
}
