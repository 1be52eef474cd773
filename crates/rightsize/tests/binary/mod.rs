//! The `rightsize` binary for end-to-end tests that run it as a user
//! would (`diag_e2e`, `lab_e2e`, `path_e2e`), and what a failed run
//! printed, for their assertion messages.

#![allow(dead_code)]

use std::process::{Command, Output};

/// The binary under test.
pub fn rightsize() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rightsize"))
}

/// A run's exit status, stdout and stderr, for an assertion message.
pub fn text(output: &Output) -> String {
    format!(
        "status {}\nstdout: {}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}
