//! What the server records of each data connection: a log line at its end
//! and, with `--telemetry-dir`, a JSON-lines file sampled while it runs
//! (`<unix time>-<client ip>-<client port>-<n>-<verb>.jsonl`).

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;

use rightsize_core::session::TransferKind;
use rightsize_core::telemetry::{Direction, Role};
use rightsize_sys::telemetry::Sampler;

use super::data::{DataReport, Progress};
use super::{Shared, now_unix};
use crate::telemetry::{self, Describe};

/// The record of one data connection of one session.
#[derive(Debug)]
pub(super) struct TransferLog {
    shared: Arc<Shared>,
    peer: SocketAddr,
    number: u64,
    verb: &'static str,
    what: String,
    direction: Direction,
    sbuf: Option<u64>,
}

impl TransferLog {
    pub(super) fn new(
        shared: Arc<Shared>,
        peer: SocketAddr,
        number: u64,
        kind: &TransferKind,
        sbuf: Option<u64>,
    ) -> Self {
        let (verb, what, direction) = match kind {
            TransferKind::Retrieve { path, offset } => (
                "retr",
                format!("RETR {} from {offset}", path.as_bytes().escape_ascii()),
                Direction::Send,
            ),
            TransferKind::Listing(bytes) => (
                "list",
                format!("listing of {} bytes", bytes.len()),
                Direction::Send,
            ),
            TransferKind::Store {
                path,
                offset,
                append,
            } => (
                if *append { "appe" } else { "stor" },
                format!(
                    "{} {} at {offset}",
                    if *append { "APPE" } else { "STOR" },
                    path.as_bytes().escape_ascii()
                ),
                Direction::Receive,
            ),
        };
        TransferLog {
            shared,
            peer,
            number,
            verb,
            what,
            direction,
            sbuf,
        }
    }

    /// Called once the data connection is up: starts the telemetry file.
    pub(super) fn start(&self, socket: &TcpStream, progress: &Arc<Progress>) -> Option<Sampler> {
        let dir = self.shared.config.telemetry_dir.as_ref()?;
        let now = now_unix();
        let name = format!(
            "{now}-{}-{}-{}-{}.jsonl",
            self.peer.ip(),
            self.peer.port(),
            self.number,
            self.verb
        );
        let buffers = &self.shared.config.buffers;
        let mut settings = BTreeMap::new();
        settings.insert("transfer".to_owned(), self.what.clone());
        let setting = |v: Option<u64>| v.map_or_else(|| "default".to_owned(), |b| b.to_string());
        settings.insert("sbuf_bytes".into(), setting(self.sbuf));
        settings.insert("rcvbuf_bytes".into(), setting(self.sbuf.or(buffers.rcvbuf)));
        settings.insert("sndbuf_bytes".into(), setting(self.sbuf.or(buffers.sndbuf)));
        settings.insert(
            "congestion".into(),
            buffers
                .congestion
                .clone()
                .unwrap_or_else(|| "default".into()),
        );
        let describe = Describe {
            role: Role::Server,
            direction: self.direction,
            argv: self.shared.config.argv.clone(),
            settings,
        };
        match telemetry::start(
            &dir.join(name),
            socket,
            Arc::clone(&progress.bytes),
            self.shared.config.telemetry_interval,
            describe,
        ) {
            Ok(sampler) => Some(sampler),
            Err(e) => {
                self.shared.log(&format!("{}: telemetry: {e}", self.peer));
                None
            }
        }
    }

    /// Called after the last byte.
    pub(super) fn finish(self, sampler: Option<Sampler>, report: &DataReport) {
        if let Some(sampler) = sampler
            && let Err(e) = sampler.finish()
        {
            self.shared.log(&format!("{}: telemetry: {e}", self.peer));
        }
        let secs = report.elapsed.as_secs_f64();
        let applied = report.applied.as_ref().map_or_else(String::new, |a| {
            let show = |b: &Option<rightsize_sys::socket::BufferApplied>| {
                b.as_ref().map_or_else(
                    || "-".to_owned(),
                    |b| format!("{}->{}", b.requested_bytes, b.applied_bytes),
                )
            };
            format!(" rcvbuf {} sndbuf {}", show(&a.rcvbuf), show(&a.sndbuf))
        });
        let strangers = match report.strangers_refused {
            0 => String::new(),
            n => format!("; refused {n} data connection(s) from other addresses"),
        };
        self.shared.log(&format!(
            "{} #{}: {}: {:?} in {secs:.3} s{applied}{strangers}",
            self.peer, self.number, self.what, report.outcome
        ));
    }
}
