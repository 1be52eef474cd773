//! `rightsize-bench ftp`: the data mover's performance targets, measured in
//! one run beside the tools they are compared with, over a veth pair between
//! two network namespaces (no emulation):
//!
//! 1. memory to memory: `rightsize get` of the benchmark source from
//!    `rightsize serve` vs a single-stream `iperf3 -R`, same direction, same
//!    namespaces, alternating runs; target ratio >= 0.95;
//! 2. a file from page cache to /dev/null: `rightsize get` from `rightsize
//!    serve` vs `curl` from vsftpd and vs `globus-url-copy` from
//!    globus-gridftp-server, wall time of each client process; target >= 1.0;
//! 3. the server's resident memory with N idle logged-in sessions, after
//!    checking every one of them still answers.
//!
//! `rightsize-bench tuners`: the tuner benchmark's goals for the buffer
//! tuners (goals 1a to 4b of docs/benchmarks.md), every tuner on the same
//! emulated paths (`rightsize path run`, Rattan), with medians of
//! repetitions and the ratios the goals ask for; see [`tuners`].
//!
//! `rightsize-bench peers`: `auto` against `kernel` and `static:16MiB`
//! with ends that are not rightsize (vsftpd, curl, globus-url-copy) on
//! emulated paths, and the goals P1 to P6; see [`peers`].
//!
//! `rightsize-bench datasets`: trees of small files and parallel streams
//! beside lftp and globus-url-copy on emulated paths; see [`datasets`].
//!
//! `rightsize-bench scale`: many clients at once from one `rightsize serve`
//! over one emulated path: aggregate goodput, fairness, both hosts' summed
//! buffers, and a server buffer budget; see [`scale`].
//!
//! `rightsize-bench gate`: the performance gate of `./scripts/test`,
//! `auto` against `kernel` on one emulated path with three peers, judged
//! with loose bounds that catch a halving; see [`gate`].
//!
//! Run them with `scripts/bench` (builds release binaries first), as root.

mod datasets;
mod emulated;
mod flags;
mod ftp;
mod ftp_tls;
mod gate;
mod goals;
mod peers;
mod procs;
mod scale;
mod tuners;

use std::process::ExitCode;

/// A benchmark: its name, its usage text and what runs it (`Ok(false)`:
/// it ran and something failed).
type Bench = (
    &'static str,
    &'static str,
    fn(&[String]) -> anyhow::Result<bool>,
);

const BENCHES: [Bench; 6] = [
    ("ftp", ftp::USAGE, ftp::run),
    ("tuners", tuners::USAGE, tuners::run),
    ("peers", peers::USAGE, peers::run),
    ("datasets", datasets::USAGE, datasets::run),
    ("scale", scale::USAGE, scale::run),
    ("gate", gate::USAGE, gate::run),
];

/// Prints a usage text; a closed pipe (`| head`) is not an error.
fn print_usage(text: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stdout(), "{text}");
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let all_usage = || BENCHES.map(|(_, usage, _)| usage).join("\n\n");
    let wants_help = |rest: &[String]| rest.iter().any(|a| a == "-h" || a == "--help");
    let result = match args.first().map(String::as_str) {
        Some("-h" | "--help") | None => {
            print_usage(&all_usage());
            return ExitCode::SUCCESS;
        }
        Some(name) => match BENCHES.iter().find(|(n, _, _)| *n == name) {
            Some((_, usage, _)) if wants_help(&args[1..]) => {
                print_usage(usage);
                return ExitCode::SUCCESS;
            }
            Some((_, _, run)) => run(&args[1..]),
            None => {
                let names = BENCHES.map(|(n, _, _)| n).join(", ");
                eprintln!(
                    "rightsize-bench: unknown benchmark {name:?}; accepted: {names}\n\n{}",
                    all_usage()
                );
                return ExitCode::from(2);
            }
        },
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("rightsize-bench: {e:#}");
            if e.downcast_ref::<flags::BadUsage>().is_some() {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}
