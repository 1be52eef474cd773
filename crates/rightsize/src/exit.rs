//! The exit codes of `rightsize`, each defined once: 0 success, 1 a failure
//! while running, [`USAGE`] bad input; `path run` adds the codes of
//! `rightsize_path::run` (an invalid run, an interrupted one).

use std::process::ExitCode;

/// Bad input: a one-line message that quotes it and shows an accepted form.
pub const USAGE: u8 = 2;

/// The exit code for bad input.
pub fn usage() -> ExitCode {
    ExitCode::from(USAGE)
}
