//! `CKSM` and `HASH` computed beside the session, as a transfer is: a
//! checksum reads the whole file, which for a large one takes minutes, so
//! it must neither hold the session deaf to `ABOR`, `STAT` and `NOOP` nor
//! let many clients keep every core busy at once.
//!
//! Bounds: one checksum per session (the session waits for its end), at
//! most [`Gate::most`] running in the whole server (one per core: the
//! others wait their turn), and each stops within one chunk of `ABOR` or
//! of its session's end.

use std::fs::File;
use std::io::{self, Read};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::Duration;

use rightsize_ftp_proto::checksum::Checksum;
use rightsize_ftp_proto::session::{ChecksumJob, ChecksumOutcome, FsError};

use super::data::AbortHandle;

/// Bytes hashed between two looks at the abort flag (about a millisecond
/// of SHA-256).
const CHUNK_BYTES: usize = 1 << 20;

/// How often a checksum waiting for its turn looks at the abort flag.
const WAIT_TICK: Duration = Duration::from_millis(50);

/// How many checksums run at once in the whole server.
#[derive(Debug)]
pub(super) struct Gate {
    running: Mutex<usize>,
    freed: Condvar,
    most: usize,
}

impl Gate {
    /// A gate for `most` checksums at once (at least one).
    pub(super) fn new(most: usize) -> Self {
        Gate {
            running: Mutex::new(0),
            freed: Condvar::new(),
            most: most.max(1),
        }
    }

    /// One per core of this host.
    pub(super) fn per_core() -> Self {
        Gate::new(std::thread::available_parallelism().map_or(1, usize::from))
    }

    /// Waits for a turn; `None` if `abort` came first.
    fn enter(&self, abort: &AbortHandle) -> Option<Turn<'_>> {
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        while *running >= self.most {
            if abort.is_aborted() {
                return None;
            }
            running = self
                .freed
                .wait_timeout(running, WAIT_TICK)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        *running += 1;
        Some(Turn { gate: self })
    }
}

/// A running checksum's place under the [`Gate`], given back on drop.
struct Turn<'a> {
    gate: &'a Gate,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let mut running = self
            .gate
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        *running = running.saturating_sub(1);
        self.gate.freed.notify_one();
    }
}

/// Computes `job` over `file` (already at the job's offset), in turn
/// with the server's other checksums, stopping at `abort`.
pub(super) fn compute(
    file: File,
    job: &ChecksumJob,
    gate: &Gate,
    abort: &AbortHandle,
) -> ChecksumOutcome {
    let Some(_turn) = gate.enter(abort) else {
        return ChecksumOutcome::Aborted;
    };
    let mut hasher = Checksum::of(job.algorithm);
    let mut reader = file.take(job.length.unwrap_or(u64::MAX));
    let mut buf = vec![0u8; CHUNK_BYTES];
    loop {
        if abort.is_aborted() {
            return ChecksumOutcome::Aborted;
        }
        match reader.read(&mut buf) {
            Ok(0) => return ChecksumOutcome::Done(hasher.finish()),
            Ok(n) => hasher.update(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return ChecksumOutcome::Failed(FsError::Other(e.to_string())),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::io::{Seek, SeekFrom, Write};
    use std::sync::Arc;
    use std::thread;

    use rightsize_ftp_proto::VirtualPath;
    use rightsize_ftp_proto::checksum::Algorithm;

    use super::*;

    fn job(offset: u64, length: Option<u64>) -> ChecksumJob {
        ChecksumJob {
            path: VirtualPath::root(),
            algorithm: Algorithm::Md5,
            offset,
            length,
        }
    }

    fn file_of(bytes: &[u8], at: u64) -> File {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(bytes).unwrap();
        file.seek(SeekFrom::Start(at)).unwrap();
        file
    }

    #[test]
    fn sums_the_bytes_from_the_offset_for_the_length() {
        let gate = Gate::new(1);
        let abort = AbortHandle::default();
        let whole = compute(file_of(b"hello world", 0), &job(0, None), &gate, &abort);
        // md5("hello world"), md5("world").
        assert_eq!(
            whole,
            ChecksumOutcome::Done("5eb63bbbe01eeed093cb22bb8f5acdc3".into())
        );
        let part = compute(file_of(b"hello world", 6), &job(6, Some(5)), &gate, &abort);
        assert_eq!(
            part,
            ChecksumOutcome::Done("7d793037a0760186574b0282f2f435e7".into())
        );
    }

    #[test]
    fn an_aborted_checksum_stops_whether_running_or_waiting_its_turn() {
        let gate = Gate::new(1);
        let abort = AbortHandle::default();
        abort.abort();
        let out = compute(file_of(&[0; 10], 0), &job(0, None), &gate, &abort);
        assert_eq!(out, ChecksumOutcome::Aborted);
        // The gate is free again: the next one runs.
        let fresh = AbortHandle::default();
        let out = compute(file_of(&[], 0), &job(0, None), &gate, &fresh);
        assert!(matches!(out, ChecksumOutcome::Done(_)));
        // One waiting for a full gate leaves when aborted.
        let gate = Arc::new(Gate::new(1));
        let held = gate.enter(&fresh).unwrap();
        let waiter_abort = Arc::new(AbortHandle::default());
        let waiter = {
            let (gate, abort) = (Arc::clone(&gate), Arc::clone(&waiter_abort));
            thread::spawn(move || compute(file_of(&[], 0), &job(0, None), &gate, &abort))
        };
        waiter_abort.abort();
        assert_eq!(waiter.join().unwrap(), ChecksumOutcome::Aborted);
        drop(held);
    }

    #[test]
    fn a_full_gate_lets_the_next_in_when_one_ends() {
        let gate = Arc::new(Gate::new(1));
        let abort = AbortHandle::default();
        let held = gate.enter(&abort).unwrap();
        let waiter = {
            let gate = Arc::clone(&gate);
            thread::spawn(move || {
                let abort = AbortHandle::default();
                compute(file_of(b"x", 0), &job(0, None), &gate, &abort)
            })
        };
        drop(held);
        assert!(matches!(waiter.join().unwrap(), ChecksumOutcome::Done(_)));
        assert_eq!(*gate.running.lock().unwrap(), 0);
    }
}
