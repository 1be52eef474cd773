//! A command run on a path: how it ended, the exit code that says so, and
//! the cross-traffic commands started beside it.
//!
//! `rightsize path run` and the lab read one definition of each exit code
//! from here: the command's own code when it failed, [`INVALID_RUN_EXIT`]
//! when it succeeded on a run a fidelity check rejects, [`INTERRUPTED_EXIT`]
//! when a signal stopped it.

use std::net::IpAddr;

use crate::{CrossSpec, PathSpec, Side};

/// Exit code of `rightsize path run` when the command succeeded but a
/// fidelity check failed: the run's numbers are not to be trusted.
pub const INVALID_RUN_EXIT: u8 = 3;

/// Exit code of `rightsize path run` when a signal stopped it (128 + SIGINT).
pub const INTERRUPTED_EXIT: u8 = 130;

/// The port the first cross-traffic entry's sink listens on; entry `i`
/// takes `CROSS_PORT_BASE + i`.
pub const CROSS_PORT_BASE: u16 = 47000;

/// How the command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// A signal to `path run` stopped it (the command was killed).
    Interrupted,
    /// It exited: success, and its code (`None` when a signal ended it).
    Exited {
        /// Exit status 0.
        success: bool,
        /// Its exit code, if it exited rather than being killed.
        code: Option<i32>,
    },
}

impl Ended {
    /// The exit code of `path run`: the command's failure first, then the
    /// fidelity verdict (`valid`), else 0.
    pub fn exit_code(self, valid: bool) -> u8 {
        match self {
            Ended::Interrupted => INTERRUPTED_EXIT,
            Ended::Exited {
                success: false,
                code,
            } => code.unwrap_or(1).clamp(1, 255) as u8,
            Ended::Exited { success: true, .. } if !valid => INVALID_RUN_EXIT,
            Ended::Exited { success: true, .. } => 0,
        }
    }
}

/// One cross-traffic entry as two commands: a sink on the receiving side,
/// started first, and the sender on `from`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrossCommands {
    /// Where the sink runs (the side the traffic goes to).
    pub sink_side: Side,
    /// `rightsize path cross sink ...`.
    pub sink: Vec<String>,
    /// Where the sender runs.
    pub sender_side: Side,
    /// `rightsize path cross send ...`.
    pub sender: Vec<String>,
}

impl PathSpec {
    /// The commands that make the spec's cross traffic, `exe` being the
    /// `rightsize` program and `addr` each side's address.
    pub fn cross_commands(&self, exe: &str, addr: impl Fn(Side) -> IpAddr) -> Vec<CrossCommands> {
        self.cross
            .iter()
            .enumerate()
            .map(|(i, cross)| {
                let from = match cross {
                    CrossSpec::Udp { from, .. } | CrossSpec::Tcp { from, .. } => *from,
                };
                let to = format!("{}:{}", addr(from.other()), CROSS_PORT_BASE + i as u16);
                let words = |w: &[&str]| w.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
                let sink = words(&[exe, "path", "cross", "sink", "--listen", &to]);
                let mut sender = words(&[exe, "path", "cross", "send", "--to", &to]);
                match cross {
                    CrossSpec::Udp { rate, on_off, .. } => {
                        sender.extend(["--udp".into(), format!("{}bit", rate.0)]);
                        if let Some((on, off)) = on_off {
                            sender.extend([
                                "--on".into(),
                                format!("{}ms", on.as_millis()),
                                "--off".into(),
                                format!("{}ms", off.as_millis()),
                            ]);
                        }
                    }
                    CrossSpec::Tcp {
                        flows,
                        window,
                        congestion,
                        ..
                    } => {
                        sender.extend(["--tcp".into(), flows.to_string()]);
                        if let Some(w) = window {
                            sender.extend(["--window".into(), format!("{}B", w.0)]);
                        }
                        if let Some(c) = congestion {
                            sender.extend(["--congestion".into(), c.clone()]);
                        }
                    }
                }
                CrossCommands {
                    sink_side: from.other(),
                    sink,
                    sender_side: from,
                    sender,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests;
