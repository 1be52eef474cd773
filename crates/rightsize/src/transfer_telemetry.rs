//! `get`/`put --telemetry FILE`: the client end's JSON-lines record of its
//! data connection, started on the first progress report (the data socket
//! is open by then) and finished after the transfer, failed or not.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rightsize_core::telemetry::{Direction, Role};
use rightsize_ftp::client::Progress;
use rightsize_ftp::telemetry::{self, Describe, StartError};
use rightsize_sys::telemetry::Sampler;

/// One telemetry file, before and while it is written.
#[derive(Debug)]
pub struct ClientTelemetry {
    path: PathBuf,
    interval: Duration,
    describe: Option<Describe>,
    bytes: Arc<AtomicU64>,
    sampler: Option<Sampler>,
    failed: Option<StartError>,
}

impl ClientTelemetry {
    pub fn new(
        path: PathBuf,
        interval: Duration,
        direction: Direction,
        settings: BTreeMap<String, String>,
    ) -> Self {
        ClientTelemetry {
            path,
            interval,
            describe: Some(Describe {
                role: Role::Client,
                direction,
                argv: std::env::args().collect(),
                settings,
            }),
            bytes: Arc::default(),
            sampler: None,
            failed: None,
        }
    }

    /// Called on every progress report of the transfer.
    pub fn on_progress(&mut self, progress: &Progress<'_>) {
        self.bytes.store(progress.bytes, Ordering::Relaxed);
        if let Some(describe) = self.describe.take() {
            match telemetry::start(
                &self.path,
                progress.socket(),
                Arc::clone(&self.bytes),
                self.interval,
                describe,
            ) {
                Ok(sampler) => self.sampler = Some(sampler),
                Err(e) => self.failed = Some(e),
            }
        }
    }

    /// Writes the final record; an error if the file could not be written.
    pub fn finish(self) -> anyhow::Result<()> {
        if let Some(e) = self.failed {
            return Err(e.into());
        }
        if let Some(sampler) = self.sampler {
            sampler.finish()?;
        }
        Ok(())
    }
}
