//! `rightsize get -r` and `put -r`: a directory tree. Glue: the target, the
//! console (progress of the whole tree, one line per failed file, the
//! protocol trace with each connection's number) and the summary as text
//! or JSON.

use std::io::{IsTerminal, Write as _};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use rightsize_ftp::client::{self, Direction, TreeObserver, TreeProgress, TreeReport};
use rightsize_sys::signals::{self, StopSignals};
use rightsize_tune::units::{Bytes, human_duration, human_rate};
use serde_json::json;

use crate::transfer::{GetArgs, PutArgs, TransferArgs};

/// `rightsize get -r URL [-o DIR]`.
pub fn run(args: &GetArgs) -> anyhow::Result<ExitCode> {
    let dir = match (&args.output, last_name(args.url.path())) {
        (Some(dir), _) if dir.as_os_str() == "-" => {
            eprintln!("error: -r writes a directory tree; -o - (standard output) cannot hold one");
            return Ok(crate::exit::usage());
        }
        (Some(dir), _) => dir.clone(),
        (None, Some(name)) => PathBuf::from(name),
        (None, None) => {
            eprintln!(
                "error: the URL {} names no directory to take the name of; give -o DIR",
                args.url
            );
            return Ok(crate::exit::usage());
        }
    };
    let options = args.common.options(&args.url);
    let resume = format!(
        "rightsize get -r -C{} {} -o {}",
        args.common.tls.flags(),
        args.url,
        dir.display()
    );
    finish(
        &args.common,
        (&args.url, Direction::Get),
        &resume,
        |console| client::get_tree(&args.url, &dir, &options, args.jobs, console),
    )
}

/// `rightsize put -r DIR URL`.
pub fn run_put(args: &PutArgs) -> anyhow::Result<ExitCode> {
    if let Some(why) = crate::transfer::stdin_refusal(args) {
        eprintln!("error: put - (standard input): {why}");
        return Ok(crate::exit::usage());
    }
    let options = args.common.options(&args.url);
    let resume = format!(
        "rightsize put -r -C{} {} {}",
        args.common.tls.flags(),
        args.file.display(),
        args.url
    );
    finish(
        &args.common,
        (&args.url, Direction::Put),
        &resume,
        |console| client::put_tree(&args.file, &args.url, &options, args.jobs, console),
    )
}

/// Runs a tree transfer with signals caught, prints the failures and the
/// summary; the exit code: 0, 1 when a file failed, 130/143 after a
/// signal (with `resume`, the command that finishes the job).
fn finish(
    common: &TransferArgs,
    (url, direction): (&rightsize_ftp_proto::url::FtpUrl, Direction),
    resume: &str,
    transfer: impl FnOnce(&mut TreeConsole) -> Result<TreeReport, client::ClientError>,
) -> anyhow::Result<ExitCode> {
    let mut console = TreeConsole {
        verbose: common.verbose,
        bar: std::io::stderr().is_terminal() && !common.json && !common.quiet,
        bar_drawn: false,
    };
    let signals = StopSignals::install()?;
    let result = transfer(&mut console);
    drop(signals);
    console.clear_bar();
    let report = match result {
        Ok(report) => report,
        Err(error) => {
            // --json: an object on failure too, as for one file.
            if common.json {
                crate::transfer_output::print_error_json(&error, url, direction)?;
            }
            return Err(error.into());
        }
    };
    for failure in &report.failures {
        eprintln!("rightsize: {}: {}", failure.path, failure.error);
    }
    if common.json {
        let json = serde_json::to_string_pretty(&summary_json(&report, direction))?;
        let mut out = std::io::stdout().lock();
        writeln!(out, "{json}").context("write the JSON summary to standard output")?;
    } else if !common.quiet {
        print!("{}", summary_text(&report, direction));
    }
    if let Some(signal) = signals::caught() {
        eprintln!("rightsize: stopped by {signal}; go on with: {resume}");
        return Ok(ExitCode::from(if signal == "SIGINT" { 130 } else { 143 }));
    }
    if !report.failures.is_empty() {
        eprintln!(
            "rightsize: {} of {} files failed; move what is missing with: {resume}",
            report.failures.len(),
            report.failures.len() as u64 + report.files,
        );
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// The last non-empty component of a remote path, as a local name.
fn last_name(path: &[u8]) -> Option<String> {
    let last = path.split(|b| *b == b'/').rfind(|c| !c.is_empty())?;
    match last {
        b"." | b".." => None,
        name => Some(String::from_utf8_lossy(name).into_owned()),
    }
}

struct TreeConsole {
    verbose: bool,
    bar: bool,
    bar_drawn: bool,
}

impl TreeConsole {
    fn clear_bar(&mut self) {
        if std::mem::take(&mut self.bar_drawn) {
            eprint!("\r\x1b[K");
        }
    }
}

impl TreeObserver for TreeConsole {
    fn progress(&mut self, p: &TreeProgress) {
        if !self.bar {
            return;
        }
        let seconds = p.elapsed.as_secs_f64();
        let rate = if seconds > 0.0 {
            p.bytes_done as f64 * 8.0 / seconds
        } else {
            0.0
        };
        let more = if p.listing > 0 { "+" } else { "" };
        eprint!(
            "\r\x1b[K{}/{}{more} files  {} / {}  {}",
            p.files_done,
            p.files_total,
            Bytes(p.bytes_done).human_iec(),
            Bytes(p.bytes_total).human_iec(),
            human_rate(rate)
        );
        self.bar_drawn = true;
    }

    fn protocol(&mut self, connection: u32, line: &str) {
        if self.verbose {
            self.clear_bar();
            eprintln!("[{connection}] {line}");
        }
    }

    fn warning(&mut self, message: &str) {
        self.clear_bar();
        eprintln!("rightsize: warning: {message}");
    }
}

fn summary_text(report: &TreeReport, direction: Direction) -> String {
    let (verb, arrow, what) = match direction {
        Direction::Get => ("get", "->", "listed"),
        Direction::Put => ("put", "<-", "made"),
    };
    let mut out = format!(
        "{verb} -r {} {arrow} {}\n  {} files, {} in {} ({}) over {} connection{}; {} director{} {what} in {}\n",
        report.url,
        report.local_dir.display(),
        report.files,
        Bytes(report.bytes).human_iec(),
        human_duration(report.elapsed),
        human_rate(report.goodput_bps()),
        report.jobs,
        if report.jobs == 1 { "" } else { "s" },
        report.directories,
        if report.directories == 1 { "y" } else { "ies" },
        human_duration(report.listing_elapsed),
    );
    if report.skipped_files > 0 {
        out.push_str(&format!(
            "  skipped {} files already there, whole ({})\n",
            report.skipped_files,
            Bytes(report.skipped_bytes).human_iec()
        ));
    }
    if report.resumed_bytes > 0 {
        out.push_str(&format!(
            "  resumed after {} already in part files (REST)\n",
            Bytes(report.resumed_bytes).human_iec()
        ));
    }
    if report.verified_files > 0 {
        out.push_str(&format!(
            "  checksums verified: {} files\n",
            report.verified_files
        ));
    }
    if !report.failures.is_empty() || report.not_started > 0 {
        out.push_str(&format!(
            "  failed: {} files; not started: {}\n",
            report.failures.len(),
            report.not_started
        ));
    }
    out
}

fn summary_json(report: &TreeReport, direction: Direction) -> serde_json::Value {
    json!({
        "rightsize_version": env!("CARGO_PKG_VERSION"),
        "error": null,
        "url": report.url,
        "direction": direction,
        "recursive": true,
        "local_dir": report.local_dir,
        "directories": report.directories,
        "files": report.files,
        "bytes": report.bytes,
        "resumed_bytes": report.resumed_bytes,
        "skipped_files": report.skipped_files,
        "skipped_bytes": report.skipped_bytes,
        "verified_files": report.verified_files,
        "failures": report.failures,
        "not_started": report.not_started,
        "connections": report.jobs,
        "listing_seconds": report.listing_elapsed.as_secs_f64(),
        "unlisted": report.unlisted,
        "elapsed_seconds": report.elapsed.as_secs_f64(),
        "goodput_bps": report.goodput_bps(),
        "argv": crate::transfer_output::argv_without_passwords(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_directory_is_the_last_name() {
        assert_eq!(last_name(b"pub/data/"), Some("data".to_owned()));
        assert_eq!(last_name(b"/abs/set"), Some("set".to_owned()));
        assert_eq!(last_name(b""), None);
        assert_eq!(last_name(b"/"), None);
        assert_eq!(last_name(b"a/.."), None);
    }
}
