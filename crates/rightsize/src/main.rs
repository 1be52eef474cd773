//! The `rightsize` binary: argument parsing and printing, nothing else.
//!
//! Every decision is made in the pure crates (`rightsize-tune`,
//! `rightsize-ftp-proto`, `rightsize-path`); every system call is made in
//! `rightsize-sys`. Exit codes: see [`exit`].

mod advise;
mod cli;
mod config;
mod cross;
mod doctor;
mod exit;
mod lab;
mod login;
mod passwd;
mod path;
mod ping;
mod serve;
mod target;
mod test_cmd;
mod transfer;
mod transfer_output;
mod tree;

use std::process::ExitCode;

use clap::Parser;
use clap::error::ErrorKind;

fn main() -> ExitCode {
    // `serve --config FILE`: the file's settings as flags, before the
    // command line's.
    let argv = match config::expand(std::env::args_os().collect(), serve_flags) {
        Ok(argv) => argv,
        Err(e) => {
            eprintln!("error: {e}");
            return crate::exit::usage();
        }
    };
    let cli = match cli::Cli::try_parse_from(argv) {
        Ok(cli) => cli,
        Err(err) => return usage_error(err),
    };
    if prints_only(&cli.command) {
        rightsize_sys::signals::die_quietly_when_stdout_closes();
    }
    let result = match cli.command {
        cli::Command::Advise(args) => advise::run(&args),
        cli::Command::Serve(args) => serve::run(args),
        cli::Command::Get(mut args) => match login::resolve(&args.url, &args.common.login) {
            Ok(url) => {
                args.url = url;
                if args.recursive {
                    tree::run(&args)
                } else {
                    transfer::run_get(&args)
                }
            }
            Err(e) => Err(e),
        },
        cli::Command::Put(mut args) => match login::resolve(&args.url, &args.common.login) {
            Ok(url) => {
                args.url = url;
                if args.recursive {
                    tree::run_put(&args)
                } else {
                    transfer::run_put(&args)
                }
            }
            Err(e) => Err(e),
        },
        cli::Command::Passwd(args) => passwd::run(&args),
        cli::Command::Path(args) => path::run(args),
        cli::Command::Ping(args) => ping::run(&args),
        cli::Command::Test(args) => test_cmd::run(&args),
        cli::Command::Doctor(args) => doctor::run(&args),
        cli::Command::Lab(args) => lab::run(args),
        cli::Command::Demo(args) => lab::demo(args),
        cli::Command::Completions(args) => cli::completions(args.shell),
        cli::Command::Man => cli::man(),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("rightsize: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// `serve`'s flags, for `--config`.
fn serve_flags() -> Vec<config::Flag> {
    use clap::CommandFactory as _;
    let command = cli::Cli::command();
    let Some(serve) = command.find_subcommand("serve") else {
        return Vec::new();
    };
    serve
        .get_arguments()
        .filter_map(|a| {
            Some(config::Flag {
                long: a.get_long()?.to_owned(),
                takes_value: a.get_action().takes_values(),
            })
        })
        .collect()
}

/// Commands that only compute, print and start other processes: piped
/// into `head`, they end quietly as `cat` would (a lab's current run is a
/// `path run` of its own, which still tears its path down). Every other
/// command keeps Rust's default (SIGPIPE ignored, a write error instead),
/// because a server or a path run must survive a peer that goes away and
/// still tear down what it made.
fn prints_only(command: &cli::Command) -> bool {
    use crate::path::PathCommand;
    match command {
        cli::Command::Advise(_)
        | cli::Command::Lab(_)
        | cli::Command::Demo(_)
        | cli::Command::Completions(_)
        | cli::Command::Man => true,
        cli::Command::Path(p) => matches!(p.command, PathCommand::Show(_) | PathCommand::List),
        _ => false,
    }
}

/// Help and version go to stdout with exit 0. A bad value gets exactly one
/// line (clap's first, which quotes the value and carries our parser's
/// accepted forms); other usage errors keep clap's usage hint. Exit code 2.
fn usage_error(err: clap::Error) -> ExitCode {
    match err.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = err.print();
            ExitCode::SUCCESS
        }
        // `rightsize` or `rightsize lab` alone: the help, on stderr, and
        // the usage error's status, as git and curl do.
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            eprint!("{}", err.render());
            crate::exit::usage()
        }
        ErrorKind::ValueValidation | ErrorKind::InvalidValue => {
            // A URL error already quotes the input, with its password hidden;
            // clap's line would repeat the input with the password.
            let url_error = std::error::Error::source(&err)
                .and_then(|e| e.downcast_ref::<rightsize_ftp_proto::url::UrlError>());
            if let Some(url_error) = url_error {
                eprintln!("error: {url_error}");
                return crate::exit::usage();
            }
            // One line: the error and what is accepted (clap's
            // "[possible values: ...]" line), not the "For more
            // information" line after them.
            let rendered = err.render().to_string();
            let said: Vec<&str> = rendered
                .lines()
                .take_while(|l| !l.is_empty())
                .map(|l| l.trim().trim_start_matches('[').trim_end_matches(']'))
                .collect();
            if said.is_empty() {
                eprintln!("error: invalid value");
            } else {
                eprintln!("{}", said.join("; "));
            }
            crate::exit::usage()
        }
        _ => {
            let _ = err.print();
            crate::exit::usage()
        }
    }
}
