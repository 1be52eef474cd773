//! A thread that samples one data connection's socket into JSON lines.
//!
//! [`Sampler::start`] writes the [`Header`] line, then a thread reads
//! `TCP_INFO` and the buffers of the socket every interval and writes one
//! `"sample"` line (the format is `rightsize_core::telemetry`'s).
//! [`Sampler::finish`] stops the thread at once, writes the `"final"` line
//! and returns that record. The thread samples a clone of the socket's
//! descriptor, so the socket stays readable after the transfer closes it; a
//! reading that fails leaves its fields out of the line instead of ending
//! the thread. A failed write ends the thread, and `finish` reports it.
//! Every line is flushed as it is written, so a live plot can follow it.

use std::io::{self, Write};
use std::net::TcpStream;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rightsize_core::telemetry::{
    self, BufferReading, Header, IntervalError, Record, RecordKind, Recorder,
};

use crate::{socket, tcp_info};

/// Telemetry that could not be started or finished.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// The interval is too short.
    #[error(transparent)]
    Interval(#[from] IntervalError),
    /// The socket's descriptor could not be duplicated for the thread.
    #[error("dup of the data socket (fd {fd}) for telemetry")]
    Clone {
        /// The socket's descriptor.
        fd: RawFd,
        /// What the OS said.
        #[source]
        source: io::Error,
    },
    /// The thread could not be started.
    #[error("starting the telemetry thread")]
    Spawn {
        /// What the OS said.
        #[source]
        source: io::Error,
    },
    /// A line could not be written; sampling stopped there.
    #[error("writing the telemetry {line} line")]
    Write {
        /// `header`, `sample` or `final`.
        line: &'static str,
        /// What the writer said.
        #[source]
        source: io::Error,
    },
    /// The sampling thread panicked (a bug).
    #[error("the telemetry thread panicked")]
    Panicked,
}

/// A running sampler; dropping it without [`Sampler::finish`] stops the
/// thread and writes no final line.
#[derive(Debug)]
pub struct Sampler {
    /// Dropping it wakes the thread and tells it to stop.
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<Result<Worker, TelemetryError>>>,
    last: Arc<Mutex<Option<Record>>>,
}

/// What the thread owns, handed back when it stops.
struct Worker {
    socket: TcpStream,
    bytes: Arc<AtomicU64>,
    out: Box<dyn Write + Send>,
    recorder: Recorder,
    opened: Instant,
    last: Arc<Mutex<Option<Record>>>,
}

impl Sampler {
    /// Writes `header` (with `interval_us` filled in) to `out`, then samples
    /// `socket` every `interval` (at least `telemetry::MIN_INTERVAL`;
    /// `telemetry::DEFAULT_INTERVAL` is 100 ms). `bytes` is the payload
    /// counter the transfer loop advances. Record times count from this
    /// call: start it when the data connection opens.
    pub fn start(
        socket: &TcpStream,
        bytes: Arc<AtomicU64>,
        interval: Duration,
        mut out: Box<dyn Write + Send>,
        header: &Header,
    ) -> Result<Sampler, TelemetryError> {
        let interval = telemetry::check_interval(interval)?;
        let socket = socket.try_clone().map_err(|source| TelemetryError::Clone {
            fd: socket.as_raw_fd(),
            source,
        })?;
        let mut header = header.clone();
        header.interval_us = Some(u64::try_from(interval.as_micros()).unwrap_or(u64::MAX));
        write_line(&mut out, &header, "header")?;
        let last = Arc::new(Mutex::new(None));
        let worker = Worker {
            socket,
            bytes,
            out,
            recorder: Recorder::new(),
            opened: Instant::now(),
            last: Arc::clone(&last),
        };
        let (stop, stopped) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("rightsize-telemetry".into())
            .spawn(move || worker.run(interval, &stopped))
            .map_err(|source| TelemetryError::Spawn { source })?;
        Ok(Sampler {
            stop: Some(stop),
            thread: Some(thread),
            last,
        })
    }

    /// The latest sample, for a progress display.
    pub fn last(&self) -> Option<Record> {
        self.last.lock().ok().and_then(|last| last.clone())
    }

    /// Stops sampling, then writes and returns the final record, taken now.
    pub fn finish(mut self) -> Result<Record, TelemetryError> {
        let mut worker = self.stop_thread()?;
        let record = worker.take(RecordKind::Final);
        write_line(&mut worker.out, &record, "final")?;
        Ok(record)
    }

    fn stop_thread(&mut self) -> Result<Worker, TelemetryError> {
        drop(self.stop.take());
        match self.thread.take() {
            Some(thread) => thread.join().map_err(|_| TelemetryError::Panicked)?,
            // Only `finish` and `drop` call this, and each at most once.
            None => Err(TelemetryError::Panicked),
        }
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        if self.thread.is_some() {
            // Nothing to report to: the owner chose not to finish.
            let _ = self.stop_thread();
        }
    }
}

impl Worker {
    /// Samples on a fixed schedule until the sender is dropped. A late
    /// tick skips the ones it missed rather than sampling in a burst.
    fn run(
        mut self,
        interval: Duration,
        stopped: &mpsc::Receiver<()>,
    ) -> Result<Self, TelemetryError> {
        let mut next = self.opened + interval;
        loop {
            let wait = next.saturating_duration_since(Instant::now());
            match stopped.recv_timeout(wait) {
                Err(RecvTimeoutError::Timeout) => {}
                Ok(()) | Err(RecvTimeoutError::Disconnected) => return Ok(self),
            }
            let record = self.take(RecordKind::Sample);
            write_line(&mut self.out, &record, "sample")?;
            if let Ok(mut last) = self.last.lock() {
                *last = Some(record);
            }
            next += interval;
            let now = Instant::now();
            if next <= now {
                next = now + interval;
            }
        }
    }

    /// Reads the socket now; a failed reading becomes absent fields.
    fn take(&mut self, kind: RecordKind) -> Record {
        let elapsed = self.opened.elapsed();
        let bytes = self.bytes.load(Ordering::Relaxed);
        let buffers = socket::read_buffers(&self.socket)
            .ok()
            .map(|b| BufferReading {
                rcvbuf_bytes: b.rcvbuf_bytes,
                sndbuf_bytes: b.sndbuf_bytes,
                window_clamp_bytes: b.window_clamp_bytes,
            });
        let info = tcp_info::read(&self.socket).ok();
        self.recorder
            .record(kind, elapsed, bytes, buffers, info.as_ref())
    }
}

/// Writes `value` as one JSON line and flushes.
fn write_line(
    out: &mut dyn Write,
    value: &impl serde::Serialize,
    line: &'static str,
) -> Result<(), TelemetryError> {
    let write = |out: &mut dyn Write| -> io::Result<()> {
        let mut text = serde_json::to_vec(value).map_err(io::Error::from)?;
        text.push(b'\n');
        out.write_all(&text)?;
        out.flush()
    };
    write(out).map_err(|source| TelemetryError::Write { line, source })
}
