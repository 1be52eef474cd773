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
//! Run them with `scripts/bench` (builds release binaries first), as root.

mod emulated;
mod flags;
mod ftp;
mod goals;
mod peers;
mod procs;
mod tuners;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("ftp") if args[1..].iter().any(|a| a == "-h" || a == "--help") => {
            println!("{}", ftp::USAGE);
            return ExitCode::SUCCESS;
        }
        Some("ftp") => ftp::run(&args[1..]),
        Some("tuners") if args[1..].iter().any(|a| a == "-h" || a == "--help") => {
            println!("{}", tuners::USAGE);
            return ExitCode::SUCCESS;
        }
        Some("tuners") => tuners::run(&args[1..]),
        Some("peers") if args[1..].iter().any(|a| a == "-h" || a == "--help") => {
            println!("{}", peers::USAGE);
            return ExitCode::SUCCESS;
        }
        Some("peers") => peers::run(&args[1..]),
        Some("-h" | "--help") | None => {
            println!("{}\n\n{}\n\n{}", ftp::USAGE, tuners::USAGE, peers::USAGE);
            return ExitCode::SUCCESS;
        }
        Some(other) => {
            eprintln!(
                "rightsize-bench: unknown benchmark {other:?}; accepted: ftp, tuners, peers\n\n{}\n\n{}\n\n{}",
                ftp::USAGE,
                tuners::USAGE,
                peers::USAGE
            );
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("rightsize-bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}
