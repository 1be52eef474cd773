//! What the server records of each data connection: a log line at its end
//! and, with `--telemetry-dir`, a JSON-lines file sampled while it runs
//! (`<unix time>-<client ip>-<client port>-<n>-<verb>.jsonl`).

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;

use rightsize_ftp_proto::session::TransferKind;
use rightsize_sys::telemetry::{Finished, Monitor, TelemetryOut, Tuning};
use rightsize_tune::telemetry::{Direction, Role};

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
            TransferKind::Retrieve {
                path,
                offset,
                length,
                ..
            } => (
                "retr",
                match length {
                    Some(length) => format!(
                        "ERET P {offset} {length} {}",
                        path.as_bytes().escape_ascii()
                    ),
                    None => format!("RETR {} from {offset}", path.as_bytes().escape_ascii()),
                },
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
                adjust,
            } => (
                if *append { "appe" } else { "stor" },
                match adjust {
                    Some(adjust) => format!("ESTO A {adjust} {}", path.as_bytes().escape_ascii()),
                    None => format!(
                        "{} {} at {offset}",
                        if *append { "APPE" } else { "STOR" },
                        path.as_bytes().escape_ascii()
                    ),
                },
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

    /// Called once the data connection is up: starts watching it, with
    /// the telemetry file if there is a telemetry directory and the tuner
    /// if there is one. `None` (after a log line) if that fails; the
    /// transfer goes on untuned.
    pub(super) fn start(
        &self,
        socket: &TcpStream,
        progress: &Arc<Progress>,
        tuning: Option<Tuning>,
    ) -> Option<Monitor> {
        let tune = tuning.as_ref().map(|t| t.tuner.name());
        let out = match self.telemetry_out(socket, tune) {
            Ok(out) => out,
            Err(e) => {
                self.shared
                    .log_client(self.peer, &format!("telemetry: {e}"));
                None
            }
        };
        match Monitor::start(socket, Arc::clone(&progress.bytes), out, tuning) {
            Ok(monitor) => Some(monitor),
            Err(e) => {
                self.shared
                    .log_client(self.peer, &format!("telemetry: {e}"));
                None
            }
        }
    }

    fn telemetry_out(
        &self,
        socket: &TcpStream,
        tune: Option<&str>,
    ) -> Result<Option<TelemetryOut>, telemetry::StartError> {
        let Some(dir) = self.shared.config.telemetry_dir.as_ref() else {
            return Ok(None);
        };
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
        settings.insert("tune".into(), tune.unwrap_or("none").to_owned());
        if let Some(budget) = self.shared.config.buffer_budget {
            settings.insert("buffer_budget_bytes".into(), budget.get().to_string());
        }
        if self.direction == Direction::Send {
            telemetry::record_write_size(&mut settings, self.shared.config.write_size);
        }
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
        telemetry::open(
            &dir.join(name),
            socket,
            self.shared.config.telemetry_interval,
            describe,
        )
        .map(Some)
    }

    /// Called after the last byte: stops the monitor, logs the transfer
    /// and returns what the monitor found.
    pub(super) fn finish(self, monitor: Option<Monitor>, report: &DataReport) -> Option<Finished> {
        let finished = match monitor.map(Monitor::finish) {
            Some(Ok(finished)) => {
                if let Some(e) = &finished.telemetry_error {
                    self.shared
                        .log_client(self.peer, &format!("telemetry: {e}"));
                }
                Some(finished)
            }
            Some(Err(e)) => {
                self.shared
                    .log_client(self.peer, &format!("telemetry: {e}"));
                None
            }
            None => None,
        };
        // Several streams: their tuners' buffers, summed, and their tuner.
        let finished = finished.map(|mut f| {
            if let Some(streams) = &report.streams {
                f.buffers = streams.buffers;
                if streams.tuner.is_some() {
                    f.tuner.clone_from(&streams.tuner);
                }
            }
            f
        });
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
        let tuned = finished.as_ref().map_or_else(String::new, |f| {
            let tuner = f.tuner.as_ref().map_or_else(String::new, |t| {
                format!(
                    "; tune {} ended {} after {} decisions, {}",
                    t.name,
                    t.state,
                    t.decisions,
                    t.case()
                )
            });
            format!(
                "; peak rcvbuf {} sndbuf {}{tuner}",
                f.buffers.peak_rcvbuf_bytes, f.buffers.peak_sndbuf_bytes
            )
        });
        let budget = self.shared.budget_use().map_or_else(String::new, |u| {
            format!(
                "; buffer budget {} held of {} by {} connection(s)",
                u.held, u.limit, u.connections
            )
        });
        self.shared.log_transfer(
            self.peer,
            self.number,
            &format!(
                "{}: {} in {secs:.3} s{applied}{strangers}{tuned}{budget}",
                self.what, report.outcome
            ),
        );
        finished
    }
}
